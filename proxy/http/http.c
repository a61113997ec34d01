/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 server's connection loop: keep-alive, Content-Length bodies, limits, deadlines, budgets and answers; listeners are http_listen.c's, routing router.c's. */
#include "config.h"

#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "attest/util.h"
#include "proxy/http/http.h"
#include "proxy/http/http_int.h"
#include "proxy/http/http_parse.h"
#include "proxy/log.h"
#include "proxy/loop.h"
#include "proxy/metrics.h"
#include "proxy/http/tls.h"

/*
 * Why not evhttp: on the hit path it re-arms epoll for every request and
 * builds header lists with strdup; this loop keeps one persistent read
 * event per connection, parses in place, and answers with one write.
 * Requests on a connection are answered in order (pipelining is read but
 * not processed ahead of an answer).
 *
 * What one client can hold is bounded: its input by HTTP_IN_BYTES, the
 * memory its unsent answers hold by HTTP_MAX_QUEUED_OUT_BYTES (past it,
 * nothing more is read or parsed until the client reads), the kernel's
 * send queue by send_buffer_kb, its time by one deadline per phase of a
 * request (set when the phase starts, never re-armed by a byte), and the
 * number of clients by max_connections; the admin listeners count theirs
 * apart (admin_max_connections) and keep spare descriptors, so a full
 * public port never shuts them out. A connection that closes after its
 * last answer lingers (conn_linger) for at most HTTP_LINGER_MS and
 * HTTP_LINGER_MAX_BYTES, still counted; one trickling a request in small
 * reads is read at most every HTTP_PACE_MS.
 *
 * TLS (tls.c) sits between the socket and `in`/`out` and changes none of
 * that: the handshake runs inside the first reads, under the header
 * deadline; the bytes of a record the socket has not taken yet stay in
 * `out` until tls_write says they left, so they count toward
 * HTTP_MAX_QUEUED_OUT_BYTES; and a read or write the TLS layer wants
 * retried on the other readiness is re-run from that event's callback.
 */
/* A response header line assembled on the stack (longer ones go in parts). */
#define HTTP_RESP_LINE_BYTES	512
/* An answer's status line, Date, Content-Length and Connection lines. */
#define HTTP_STATUS_HEAD_BYTES	256
/* The whole head of an answer whose header lines were kept beside the request. */
#define HTTP_REPLY_HEAD_BYTES	(HTTP_STATUS_HEAD_BYTES + HTTP_RESP_HDRS_BYTES + 2)
/* One writev of an answer: its head and up to this many less one body pieces. */
#define HTTP_REPLY_IOVS		8
/* The interim answer to Expect: 100-continue (RFC 9110 10.1.1). */
#define HTTP_CONTINUE		"HTTP/1.1 100 Continue\r\n\r\n"
/* A warning about refused clients (fd limit, max_connections) at most this often. */
#define HTTP_WARN_INTERVAL_S	60
/*
 * What one chain of `out` costs beyond its bytes: libevent's chain header,
 * and malloc's rounding of a chain to a power of two (its bytes are
 * copied in, so every chain is full but the first and the last).
 */
#define HTTP_CHAIN_OVERHEAD_BYTES	64
#define HTTP_CHAIN_BYTES		16384	/* the largest chain: a TLS record pulled up */
/* Plaintext per TLS write: a record, less a chain's header (conn_send_tls). */
#define HTTP_TLS_WRITE_BYTES	(TLS_RECORD_BYTES - 2 * HTTP_CHAIN_OVERHEAD_BYTES)
/* Connections closed since the heap was last given back; past this, trim. */
#define HTTP_TRIM_AFTER_CONNS	64
#define HTTP_TRIM_DELAY_MS	1000
/*
 * After the last answer of a connection that closes (conn_linger): what
 * the client still sends is read and dropped for at most this long and
 * this many bytes, then the socket closes.
 */
#define HTTP_LINGER_MS		2000
#define HTTP_LINGER_MAX_BYTES	(256 * 1024)
/* Bytes dropped per read while closing (a buffer on the stack). */
#define HTTP_DISCARD_BYTES	16384
/*
 * A request arriving in many small reads (a byte a segment: a slowloris,
 * or a broken client): past HTTP_PACE_READS reads of fewer than
 * HTTP_PACE_MIN_BYTES, its connection is read at most every HTTP_PACE_MS
 * (conn_pace), the kernel gathering the bytes in between, so its wakeups
 * are bounded by time, not by how finely it cuts its bytes. A client
 * sending whole segments is never paced.
 */
#define HTTP_PACE_MIN_BYTES	512
#define HTTP_PACE_READS		8
#define HTTP_PACE_MS		20

static void	conn_process(struct conn *);
static void	conn_update_read(struct conn *);
static ssize_t	conn_recv(struct conn *, char *buf, size_t len);

/* ---- the request API ------------------------------------------------------- */

enum http_method
http_req_method(const struct http_req *r)
{
	return r->head.method;
}

const char *
http_req_header(const struct http_req *r, const char *name)
{
	return http_head_field(&r->head, name);
}

const char *
http_req_path(const struct http_req *r)
{
	return r->path;
}

const char *
http_req_query(const struct http_req *r)
{
	return r->query;
}

const uint8_t *
http_req_body(const struct http_req *r, size_t *len)
{
	*len = r->body_len;
	return r->body;
}

unsigned
http_req_listener_flags(const struct http_req *r)
{
	return r->conn->lis != NULL ? r->conn->lis->flags : 0;
}

struct event_base *
http_req_base(const struct http_req *r)
{
	return r->conn->http->base;
}

int
http_req_peer(const struct http_req *r, struct sockaddr_storage *ss)
{
	socklen_t	len = sizeof(*ss);

	memset(ss, 0, sizeof(*ss));
	return getpeername(r->conn->fd, (struct sockaddr *)ss, &len);
}

/* "name: value\r\n" at dst: nlen + vlen + 4 bytes. */
static void
header_line(char *dst, const char *name, size_t nlen, const char *value,
    size_t vlen)
{
	memcpy(dst, name, nlen);
	memcpy(dst + nlen, ": ", 2);
	memcpy(dst + nlen + 2, value, vlen);
	memcpy(dst + nlen + 2 + vlen, "\r\n", 2);
}

/* One header line, its parts checked by the caller. */
static void
resp_header_line(struct http_req *r, const char *name, size_t nlen,
    const char *value, size_t vlen)
{
	char	line[HTTP_RESP_LINE_BYTES];
	size_t	n = nlen + vlen + 4;

	/* Beside the request's buffers while they hold every line so far. */
	if (!r->hdrs_spilled && r->conn->bufs != NULL &&
	    r->hdrs_len + n <= sizeof(r->conn->bufs->hdrs)) {
		header_line(r->conn->bufs->hdrs + r->hdrs_len, name, nlen, value, vlen);
		r->hdrs_len += n;
		return;
	}
	r->hdrs_spilled = 1;	/* this line and every later one, in order */
	/* One add for the line: four would cost four chain checks. */
	if (n <= sizeof(line)) {
		header_line(line, name, nlen, value, vlen);
		evbuffer_add(r->out_headers, line, n);
		return;
	}
	evbuffer_add(r->out_headers, name, nlen);
	evbuffer_add(r->out_headers, ": ", 2);
	evbuffer_add(r->out_headers, value, vlen);
	evbuffer_add(r->out_headers, "\r\n", 2);
}

void
http_resp_header(struct http_req *r, const char *name, const char *value)
{
	size_t	nlen = strcspn(name, "\r\n: "), vlen = strcspn(value, "\r\n");

	/* Values come from us or from a vendor's header: no line breaks pass. */
	if (name[nlen] != '\0' || value[vlen] != '\0')
		return;
	resp_header_line(r, name, nlen, value, vlen);
}

void
http_resp_header_n(struct http_req *r, const char *name, size_t nlen,
    const char *value, size_t vlen)
{
	resp_header_line(r, name, nlen, value, vlen);
}

struct evbuffer *
http_resp_body(struct http_req *r)
{
	return r->out_body;
}

void
http_resp_body_ref(struct http_req *r, const void *p, size_t len)
{
	r->body_ref = p;
	r->body_ref_len = len;
}

void
http_req_on_gone(struct http_req *r, http_gone_cb *cb, void *arg)
{
	r->gone = cb;
	r->gone_arg = arg;
}

const char *
http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 410: return "Gone";
	case 411: return "Length Required";
	case 413: return "Payload Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 431: return "Request Header Fields Too Large";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return status < 400 ? "OK" : status < 500 ? "Client Error" :
	    "Server Error";
	}
}

/* The Date header's value, formatted once a second. */
static const char *
http_date_now(struct http *h)
{
	time_t		now = time(NULL);

	if (now != h->date_at) {
		http_fmt_date(h->date, sizeof(h->date), (int64_t)now);
		h->date_at = now;
	}
	return h->date;
}

/* Free now, or when conn_process unwinds if it is on the stack. */
static void
conn_close(struct conn *c)
{
	if (c->in_process)
		c->dead = 1;
	else
		http_conn_free(c);
}

/*
 * The memory the unsent answers hold, which HTTP_MAX_QUEUED_OUT_BYTES
 * bounds: the bytes of `out`, each chain's overhead, the unused ends of
 * its first and last chains, and the buffers OpenSSL keeps for a record
 * it could not send yet or bytes it read ahead.
 */
static size_t
conn_out_held(const struct conn *c)
{
	size_t	len = evbuffer_get_length(c->out), held = 0;
	int	n;

	if (len > 0) {
		n = evbuffer_peek(c->out, -1, NULL, NULL, 0);
		held = len + (size_t)n * HTTP_CHAIN_OVERHEAD_BYTES +
		    (size_t)(n < 2 ? n : 2) * HTTP_CHAIN_BYTES;
	}
	if (c->tls != NULL)
		held += tls_held_bytes(c->tls);
	return held;
}

/* Below the bound: the next pipelined request may be read and answered. */
static int
conn_out_room(const struct conn *c)
{
	return conn_out_held(c) < HTTP_MAX_QUEUED_OUT_BYTES;
}

/* One TLS record from the head of `out`: as conn_send. */
static int
conn_send_tls(struct conn *c)
{
	size_t		 len = evbuffer_get_length(c->out), n;
	unsigned char	*p;

	/* Pulled up into one chain that malloc does not round up to 32 KiB. */
	if (len > HTTP_TLS_WRITE_BYTES)
		len = HTTP_TLS_WRITE_BYTES;
	if ((p = evbuffer_pullup(c->out, (ev_ssize_t)len)) == NULL)
		return -1;
	switch (tls_write(c->tls, p, len, &n)) {
	case TLS_IO_OK:
		evbuffer_drain(c->out, n);
		return 1;
	case TLS_IO_WANT_WRITE:
		event_add(c->wev, NULL);
		return 0;
	case TLS_IO_WANT_READ:
		c->tls_wr_want_rd = 1;	/* http_conn_read_cb re-runs the write */
		conn_update_read(c);
		return 0;
	default:
		return -1;
	}
}

/* Send from `out`: 1 some bytes left, 0 blocked (the event is armed), -1 failed. */
static int
conn_send(struct conn *c)
{
	if (c->tls != NULL)
		return conn_send_tls(c);
	if (evbuffer_write(c->out, c->fd) > 0)
		return 1;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
		event_add(c->wev, NULL);
		return 0;
	}
	return -1;
}

/*
 * Write what the socket takes. Then, unless it closes, parse on: below
 * HTTP_MAX_QUEUED_OUT_BYTES the next pipelined request may be answered.
 * Called within conn_process (which parses on itself) or from the loop
 * (http_conn_write_cb), never on the stack of a late answer (conn_write_later).
 */
static void
conn_write(struct conn *c)
{
	int	progress = 0, r;

	while (evbuffer_get_length(c->out) > 0) {
		if ((r = conn_send(c)) == 0)
			break;
		if (r == -1) {
			conn_close(c);
			return;
		}
		progress = 1;
	}
	if (progress && c->phase == HTTP_PH_SEND)
		c->phase = HTTP_PH_NONE;	/* a blocked answer moved: its deadline restarts */
	if (!c->in_process)
		conn_process(c);	/* which closes, if the last answer is out */
}

/*
 * An answer given outside conn_process (an upstream's completion, a lookup
 * thread's, a budget timer): the loop sends it and runs the next pipelined
 * request from http_conn_write_cb, not on the stack of whoever answered, which
 * may be iterating over its own waiters.
 */
static void
conn_write_later(struct conn *c)
{
	event_active(c->wev, EV_WRITE, 1);
}

/*
 * Append src's bytes to dst by copy, and empty src. Moving its chains
 * (evbuffer_add_buffer) would queue each answer's half-empty chains,
 * about twice its bytes, where a client that does not read piles answers.
 */
static void
buf_copy_out(struct evbuffer *dst, struct evbuffer *src)
{
	struct evbuffer_iovec	v[8];
	size_t			done;
	int			i, n;

	while (evbuffer_get_length(src) > 0) {
		n = evbuffer_peek(src, -1, NULL, v, 8);
		if (n > 8)
			n = 8;
		for (i = 0, done = 0; i < n; i++) {
			evbuffer_add(dst, v[i].iov_base, v[i].iov_len);
			done += v[i].iov_len;
		}
		evbuffer_drain(src, done);
	}
}

/* dst gets src's bytes but the NUL, cut to end; returns where it stopped. */
static char *
put_str(char *dst, const char *end, const char *src)
{
	size_t	n = strlen(src);

	if (n > (size_t)(end - dst))
		n = (size_t)(end - dst);
	memcpy(dst, src, n);
	return dst + n;
}

/* v in decimal at dst (up to 20 digits, no NUL), cut to end. */
static char *
put_uint(char *dst, const char *end, uint64_t v)
{
	char	digits[20];
	size_t	n = 0;

	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n > 0 && dst < end)
		*dst++ = digits[--n];
	return dst;
}

/*
 * The status line, Date, Content-Length and a Connection line into
 * buf[HTTP_STATUS_HEAD_BYTES]; returns the length. Assembled by hand: on a
 * hit, snprintf took as long as the rest of the reply.
 */
static size_t
status_head(char *buf, int status, const char *reason, const char *date,
    size_t clen, const char *connection)
{
	const char	*end = buf + HTTP_STATUS_HEAD_BYTES;
	char		*p = buf;

	p = put_str(p, end, "HTTP/1.1 ");
	p = put_uint(p, end, (uint64_t)status);
	p = put_str(p, end, " ");
	p = put_str(p, end, reason);
	p = put_str(p, end, "\r\nDate: ");
	p = put_str(p, end, date);
	p = put_str(p, end, "\r\nContent-Length: ");
	p = put_uint(p, end, (uint64_t)clen);
	p = put_str(p, end, "\r\n");
	p = put_str(p, end, connection);
	return (size_t)(p - buf);
}

/*
 * The head of an answer into head[HTTP_REPLY_HEAD_BYTES]: the status
 * line, Date, Content-Length, Connection, the header lines kept beside
 * the request's buffers and, unless later ones spilled into out_headers,
 * the blank line. Returns its length.
 */
static size_t
reply_head(struct http_req *r, char *head, int status, const char *reason,
    size_t clen)
{
	struct conn	*c = r->conn;
	size_t		 n;

	n = status_head(head, status, reason ? reason : http_reason(status),
	    http_date_now(c->http), status == 304 ? (size_t)0 : clen,
	    c->close_after ? "Connection: close\r\n" : r->head.http10 ?
	    "Connection: keep-alive\r\n" : "");
	if (r->hdrs_len > 0) {
		memcpy(head + n, c->bufs->hdrs, r->hdrs_len);
		n += r->hdrs_len;
	}
	if (!r->hdrs_spilled) {
		memcpy(head + n, "\r\n", 2);
		n += 2;
	}
	return n;
}

/*
 * The body's pieces (len bytes) into iov[0..max): 1 for borrowed bytes,
 * one a chain of out_body, none when empty. -1 when out_body has more
 * chains.
 */
static int
reply_body_iov(struct http_req *r, size_t len, struct iovec *iov, int max)
{
	struct evbuffer_iovec	v[HTTP_REPLY_IOVS];
	int			i, n;

	if (r->body_ref != NULL) {
		iov[0].iov_base = (void *)(uintptr_t)r->body_ref;
		iov[0].iov_len = r->body_ref_len;
		return 1;
	}
	/* Given a length, evbuffer_peek counts every chain it needs, beyond max too. */
	if ((n = evbuffer_peek(r->out_body, (ev_ssize_t)len, NULL, v, max)) > max)
		return -1;
	for (i = 0; i < n; i++) {
		iov[i].iov_base = v[i].iov_base;
		iov[i].iov_len = v[i].iov_len;
	}
	return n;
}

/*
 * Write the answer at once: a plain connection with nothing queued,
 * within conn_process (which goes on with the next request). What the
 * socket does not take is queued in `out`, where conn_write sends it on,
 * or meets the socket's error again and closes.
 */
static void
reply_send(struct conn *c, const struct iovec *iov, int n)
{
	ssize_t	sent = writev(c->fd, iov, n);
	size_t	skip = sent > 0 ? (size_t)sent : 0;
	int	i;

	for (i = 0; i < n; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		evbuffer_add(c->out, (const char *)iov[i].iov_base + skip,
		    iov[i].iov_len - skip);
		skip = 0;
	}
}

/* Queue the answer in `out`, after what is there: the head, the spilled lines, the body. */
static void
reply_queue(struct http_req *r, const char *head, size_t hlen, int body)
{
	struct conn	*c = r->conn;

	evbuffer_add(c->out, head, hlen);
	if (r->hdrs_spilled) {
		buf_copy_out(c->out, r->out_headers);
		evbuffer_add(c->out, "\r\n", 2);
	}
	if (!body)
		return;
	if (r->body_ref != NULL)
		evbuffer_add(c->out, r->body_ref, r->body_ref_len);
	else
		buf_copy_out(c->out, r->out_body);
}

/* The answer is out or queued: forget its headers and body. */
static void
reply_clear(struct http_req *r)
{
	size_t	n;

	if (r->hdrs_spilled)	/* out_headers holds lines only then */
		evbuffer_drain(r->out_headers, evbuffer_get_length(r->out_headers));
	if ((n = evbuffer_get_length(r->out_body)) > 0)
		evbuffer_drain(r->out_body, n);
	r->hdrs_len = 0;
	r->hdrs_spilled = 0;
	r->body_ref = NULL;
	r->body_ref_len = 0;
}

void
http_reply(struct http_req *r, int status, const char *reason)
{
	struct conn	*c = r->conn;
	char		 head[HTTP_REPLY_HEAD_BYTES];
	struct iovec	 iov[HTTP_REPLY_IOVS];
	/* HEAD and 304 carry no body (RFC 9110 9.3.2, 15.4.5). */
	int		 body = r->head.method != HTTP_HEAD && status != 304, n = -1;
	size_t		 blen = r->body_ref != NULL ? r->body_ref_len :
			    evbuffer_get_length(r->out_body);

	if (c->http->stopping || !r->keepalive)
		c->close_after = 1;
	iov[0].iov_base = head;
	iov[0].iov_len = reply_head(r, head, status, reason, blen);
	if (c->in_process && !c->dead && c->tls == NULL && !r->hdrs_spilled &&
	    evbuffer_get_length(c->out) == 0)
		n = body ? reply_body_iov(r, blen, iov + 1, HTTP_REPLY_IOVS - 1) : 0;
	if (c->http->reply_cb != NULL)
		c->http->reply_cb(r, status, body ? blen : 0, c->http->reply_arg);
	if (n >= 0)
		reply_send(c, iov, n + 1);
	else
		reply_queue(r, head, iov[0].iov_len, body);
	reply_clear(r);
	r->gone = NULL;
	c->pending = 0;
	c->nreq++;
	/* The request's bytes are consumed: what follows may be the next one. */
	if (c->reqlen > 0)
		memmove(c->in, c->in + c->reqlen, c->inlen - c->reqlen);
	c->inlen -= c->reqlen;
	c->reqlen = 0;
	c->continued = 0;
	c->small_reads = 0;
	http_head_reset(&r->head);	/* the next request's head starts */
	if (c->close_after)
		c->inlen = 0;	/* no request after this one is answered */
	if (c->in_process)
		conn_write(c);	/* and conn_process goes on with the next request */
	else
		conn_write_later(c);
}

/* The text answer of an error, after any header of its own. */
static void
error_reply(struct http_req *r, int status, const char *reason)
{
	http_resp_header(r, "Content-Type", "text/plain; charset=utf-8");
	http_resp_header(r, "Cache-Control", "no-store");	/* about this request only */
	evbuffer_add_printf(r->out_body, "%d %s\n", status, reason);
	http_reply(r, status, reason);
}

void
http_error(struct http_req *r, int status, const char *reason)
{
	reply_clear(r);
	error_reply(r, status, reason);
}

void
http_not_allowed(struct http_req *r, const char *allow)
{
	reply_clear(r);
	http_resp_header(r, "Allow", allow);
	error_reply(r, 405, "Method Not Allowed");
}

/* An answer before the request could be read to its end: then close. */
static void
conn_fail(struct conn *c, int status, const char *reason)
{
	metrics.http_errors++;
	c->req.parsed_us = 0;
	c->req.note = NULL;
	c->req.log_note_len = 0;
	c->close_after = 1;
	c->pending = 1;
	c->reqlen = c->inlen;
	http_error(&c->req, status, reason);
}

/* ---- parsing -------------------------------------------------------------- */

/* Percent-decode a path; '+' stays '+' (GET clients send base64 unencoded). */
static int
path_decode(const char *s, size_t n, char *out, size_t outlen)
{
	size_t	i, o = 0;
	int	hi, lo;

	for (i = 0; i < n; i++) {
		if (o + 1 >= outlen)
			return -1;
		if (s[i] == '%' && i + 2 < n && (hi = util_hexval((unsigned char)s[i + 1])) >= 0 &&
		    (lo = util_hexval((unsigned char)s[i + 2])) >= 0) {
			if (hi == 0 && lo == 0)
				return -1;	/* no NUL in a path */
			out[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else
			out[o++] = s[i];
	}
	out[o] = '\0';
	return 0;
}

/* The headers are in, the body is not yet: say 100 Continue if asked, once. */
static void
wait_body(struct conn *c)
{
	struct http_req	*r = &c->req;
	const char	*expect;

	/* curl waits a second for this before sending a body over 1 KiB. */
	expect = http_req_header(r, "Expect");
	if (expect != NULL && http_list_has(expect, "100-continue") &&
	    !c->continued && !r->head.http10) {
		c->continued = 1;
		/* Through `out`, after the answers queued before it; conn_write sends. */
		evbuffer_add(c->out, HTTP_CONTINUE, strlen(HTTP_CONTINUE));
		conn_write(c);	/* in conn_process: a failure marks it dead */
	}
	c->body_wait = 1;
}

/*
 * The path of a target (its query cut off): origin-form as it is, the
 * absolute-form a server must accept too (RFC 9112 3.2.2) without its
 * scheme and authority. NULL for the asterisk and authority forms.
 */
static const char *
origin_form(const char *t)
{
	const char	*p;

	if (t[0] == '/')
		return t;
	if (strncasecmp(t, "http://", 7) == 0)
		p = t + 7;
	else if (strncasecmp(t, "https://", 8) == 0)
		p = t + 8;
	else
		return NULL;
	if (*p == '\0' || *p == '/')
		return NULL;	/* no authority */
	p += strcspn(p, "/");
	return *p == '\0' ? "/" : p;
}

/*
 * The whole request is in: keep-alive, the query cut off the target and
 * the path decoded. 0, or -1 after answering and closing: 400 (not
 * origin-form, a NUL encoded, too long), or 405 for a method other than
 * GET, HEAD and POST with the asterisk or authority form (OPTIONS *,
 * CONNECT host:port; never a tunnel).
 */
static int
parse_target(struct conn *c)
{
	struct http_req	*r = &c->req;
	const char	*t;
	char		*q;

	r->keepalive = http_head_keepalive(&r->head);
	if ((q = strchr(r->head.target, '?')) != NULL) {
		*q = '\0';
		r->query = q + 1;
	}
	if ((t = origin_form(r->head.target)) == NULL ||
	    path_decode(t, strlen(t), r->path, sizeof(c->bufs->path)) == -1) {
		c->pending = 1;
		c->close_after = 1;
		if (t == NULL && r->head.method == HTTP_OTHER)
			http_not_allowed(r, HTTP_ALLOW);
		else
			http_error(r, 400, "Bad Request");
		return -1;
	}
	return 0;
}

/*
 * Parse one request from the start of c->in. Returns 1 when a whole
 * request is there (c->req filled, c->reqlen set), 0 when more bytes are
 * needed, -1 after answering an error (the connection then closes).
 */
static int
parse_request(struct conn *c)
{
	struct http_req	*r = &c->req;
	size_t		 hdrlen, clen;
	int		 rc;

	c->body_wait = 0;
	r->query = NULL;
	r->body = NULL;
	r->body_len = 0;
	/* From where the last read stopped; a whole head is not parsed again. */
	if ((rc = http_parse_more(&r->head, c->in, c->inlen, c->bufs->hdr)) == 0)
		return 0;
	if (rc != 1) {
		conn_fail(c, rc, http_reason(rc));
		return -1;
	}
	hdrlen = r->head.hdrlen;
	clen = r->head.clen;
	if (c->inlen < hdrlen + clen) {
		wait_body(c);
		return 0;	/* the head stays parsed until the body is in */
	}
	r->body = (const uint8_t *)c->in + hdrlen;
	r->body_len = clen;
	c->reqlen = hdrlen + clen;
	return parse_target(c) == -1 ? -1 : 1;
}

/* ---- connections ------------------------------------------------------------ */

/*
 * After many closes, or the last one, give the heap's free pages back
 * (malloc_trim), HTTP_TRIM_DELAY_MS later so that a burst trims once: a
 * client that did not read leaves hundreds of KiB of freed answers.
 */
static void
conn_trim_later(struct http *h)
{
	struct timeval	tv = { HTTP_TRIM_DELAY_MS / 1000,
			    (HTTP_TRIM_DELAY_MS % 1000) * 1000 };

	h->closed_untrimmed++;
	if (h->trim_ev == NULL || evtimer_pending(h->trim_ev, NULL) ||
	    (h->closed_untrimmed < HTTP_TRIM_AFTER_CONNS &&
	    h->nconns + h->nadmin > 0))
		return;
	evtimer_add(h->trim_ev, &tv);
}

void
http_conn_free(struct conn *c)
{
	if (c == NULL)
		return;
	if (c->pending && c->req.gone != NULL) {
		http_gone_cb	*cb = c->req.gone;

		c->req.gone = NULL;
		cb(&c->req, c->req.gone_arg);
	}
	TAILQ_REMOVE(&c->http->conns, c, entry);
	if (c->admin)
		c->http->nadmin--;
	else
		c->http->nconns--;
	loop_event_free(c->rev);
	loop_event_free(c->wev);
	loop_event_free(c->timer);
	loop_event_free(c->pace_ev);
	tls_conn_free(c->tls);	/* close_notify, before the socket closes */
	if (c->out != NULL)
		evbuffer_free(c->out);
	if (c->req.out_headers != NULL)
		evbuffer_free(c->req.out_headers);
	if (c->req.out_body != NULL)
		evbuffer_free(c->req.out_body);
	evutil_closesocket(c->fd);
	http_spares_refill(c->http);		/* before a listener takes the descriptor */
	http_listeners_update(c->http);	/* below the budget again */
	conn_trim_later(c->http);
	free(c->bufs);
	free(c);
}

/* The request buffers, from the first byte of a request on: 0, or -1 out of memory. */
static int
conn_bufs_get(struct conn *c)
{
	if (c->bufs != NULL)
		return 0;
	if ((c->bufs = c->http->spare_bufs) != NULL)
		c->http->spare_bufs = NULL;
	else if ((c->bufs = malloc(sizeof(*c->bufs))) == NULL)
		return -1;
	c->in = c->bufs->in;
	c->req.path = c->bufs->path;
	c->req.path[0] = '\0';
	return 0;
}

/*
 * Give them up when nothing is read or pending (the parsed head points
 * into them). One set is kept for the next request of any connection:
 * a hit then costs no malloc and free of 42 KiB, for 42 KiB held while
 * no request is in, until the next trim (conn_trim_later: after the last
 * connection closes, or many).
 */
static void
conn_bufs_put(struct conn *c)
{
	if (c->http->spare_bufs == NULL)
		c->http->spare_bufs = c->bufs;
	else
		free(c->bufs);
	c->bufs = NULL;
	c->in = NULL;
	c->req.path = NULL;
	c->req.body = NULL;
	c->req.query = NULL;
	http_head_reset(&c->req.head);
}

/*
 * Read while there is room for input and the unsent answers are under
 * HTTP_MAX_QUEUED_OUT_BYTES; a client that does not read its answers
 * stops being read (the kernel's buffers then push back on it).
 */
static void
conn_update_read(struct conn *c)
{
	int	want;

	if (c->close_after && !c->pending)
		want = !c->eof || c->tls_wr_want_rd;	/* dropped: conn_discard */
	else
		want = (!c->eof && !c->paced && c->inlen < HTTP_IN_BYTES &&
		    conn_out_room(c)) || c->tls_wr_want_rd;
	if (want && c->rd_paused) {
		event_add(c->rev, NULL);
		c->rd_paused = 0;
	} else if (!want && !c->rd_paused) {
		event_del(c->rev);
		c->rd_paused = 1;
	}
	/* Bytes the TLS layer already took from the socket: no event announces them. */
	if (want && c->tls != NULL && tls_pending(c->tls))
		event_active(c->rev, EV_READ, 1);
}

/*
 * The deadline of the phase the connection is in. It is set when a phase
 * starts (or a new request does), never moved by bytes that arrive within
 * it: a client trickling its headers is closed at header_timeout_s. Only
 * HTTP_PH_SEND restarts on progress (conn_write), as a blocked answer's bytes
 * leave.
 */
void
http_conn_arm(struct conn *c)
{
	struct http	*h = c->http;
	struct timeval	 tv = { 0, 0 };
	enum http_phase	 ph;

	if (c->pending)
		ph = HTTP_PH_PENDING;
	else if (evbuffer_get_length(c->out) > 0)
		ph = HTTP_PH_SEND;
	else if (c->inlen == 0 && c->nreq > 0)
		ph = HTTP_PH_IDLE;
	else if (c->body_wait)
		ph = HTTP_PH_BODY;
	else
		ph = HTTP_PH_HEADER;	/* from accept, or from the request's first byte */
	if (ph == c->phase && c->nreq == c->armed_nreq)
		return;
	c->phase = ph;
	c->armed_nreq = c->nreq;
	switch (ph) {
	case HTTP_PH_PENDING:
		evtimer_del(c->timer);	/* the upstream's budget bounds it */
		return;
	case HTTP_PH_SEND:
		tv.tv_sec = HTTP_SEND_TIMEOUT_S;
		break;
	case HTTP_PH_IDLE:
		tv.tv_sec = h->keepalive_s;
		break;
	case HTTP_PH_BODY:
		tv.tv_sec = h->body_s;
		break;
	default:
		tv.tv_sec = h->header_s;
		break;
	}
	evtimer_add(c->timer, &tv);
}

/*
 * RFC 9112 9.6: the last answer is out. A socket closed while the client
 * still sends is reset by the kernel, and the reset destroys the answers
 * the client has not read yet; so close in stages: close_notify over TLS,
 * shut our side (the client reads to the end, then EOF), then read and
 * drop what comes (conn_discard) until the client closes, at most
 * HTTP_LINGER_MS and HTTP_LINGER_MAX_BYTES. The connection still counts
 * toward max_connections meanwhile.
 */
static void
conn_linger(struct conn *c)
{
	struct timeval	tv = { HTTP_LINGER_MS / 1000, (HTTP_LINGER_MS % 1000) * 1000 };

	conn_bufs_put(c);
	if (c->eof) {
		http_conn_free(c);	/* nothing more can come */
		return;
	}
	tls_conn_free(c->tls);	/* close_notify; what follows is dropped unread */
	c->tls = NULL;
	c->tls_rd_want_wr = c->tls_wr_want_rd = 0;
	if (shutdown(c->fd, SHUT_WR) == -1) {
		http_conn_free(c);
		return;
	}
	c->lingering = 1;
	c->linger_bytes = 0;
	event_del(c->wev);
	conn_update_read(c);
	evtimer_add(c->timer, &tv);
}

/*
 * Closing (close_after, nothing pending): a read is dropped, while the
 * last answers go out and then while lingering; the client's EOF ends
 * a lingering connection, as do HTTP_LINGER_MAX_BYTES dropped.
 */
static void
conn_discard(struct conn *c)
{
	char	buf[HTTP_DISCARD_BYTES];
	ssize_t	n;

	if ((n = conn_recv(c, buf, sizeof(buf))) == -1)
		return;
	if (n == -2 || (n == 0 && c->lingering)) {
		http_conn_free(c);
		return;
	}
	if (n == 0) {
		c->eof = 1;	/* the answers still go out, then it closes */
		conn_update_read(c);
		return;
	}
	if (c->lingering && (c->linger_bytes += (size_t)n) >= HTTP_LINGER_MAX_BYTES)
		http_conn_free(c);
}

static void
pace_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn	*c = arg;

	(void)fd;
	(void)what;
	c->paced = 0;
	conn_update_read(c);	/* what came meanwhile is read at once */
}

/* A request still arriving in small reads: read again in HTTP_PACE_MS (HTTP_PACE_READS). */
static void
conn_pace(struct conn *c)
{
	struct timeval	tv = { 0, HTTP_PACE_MS * 1000 };

	if (c->paced)
		return;
	if (c->pace_ev == NULL &&
	    (c->pace_ev = evtimer_new(c->http->base, pace_cb, c)) == NULL)
		return;		/* out of memory: read as bytes come */
	c->paced = 1;
	evtimer_add(c->pace_ev, &tv);
}

/* Answer every complete request in the buffer, in order, until one waits. */
static void
conn_process(struct conn *c)
{
	int		rc;

	c->in_process = 1;
	while (!c->dead && !c->pending && !c->close_after && c->inlen > 0 &&
	    conn_out_room(c)) {
		if ((rc = parse_request(c)) == 0)
			break;
		if (rc == -1)
			break;		/* answered; closes after the write */
		c->pending = 1;
		reply_clear(&c->req);
		c->req.parsed_us = metrics_now_us();
		c->req.note = NULL;
		c->req.log_note_len = 0;
		c->http->handler(&c->req, c->http->handler_arg);
	}
	c->in_process = 0;
	if (c->dead) {
		http_conn_free(c);
		return;
	}
	/* Half-closed: every whole request it sent is answered; then close. */
	if (c->eof && !c->pending && conn_out_room(c))
		c->close_after = 1;
	if (c->close_after && !c->pending && evbuffer_get_length(c->out) == 0) {
		conn_linger(c);
		return;
	}
	if (!c->pending && c->inlen == 0)
		conn_bufs_put(c);	/* between requests: hold no buffers */
	else if (!c->pending && c->small_reads > HTTP_PACE_READS)
		conn_pace(c);
	conn_update_read(c);
	http_conn_arm(c);
}

/*
 * Through TLS, as conn_recv. Records OpenSSL has already read from the
 * socket are taken in the same call, so a client cutting its request
 * into tiny records costs no more wakeups than one cutting segments.
 */
static ssize_t
conn_recv_tls(struct conn *c, char *buf, size_t len)
{
	size_t		n, more;
	enum tls_io	r;

	switch (tls_read(c->tls, buf, len, &n)) {
	case TLS_IO_OK:
		while (n < len && tls_pending(c->tls)) {
			if ((r = tls_read(c->tls, buf + n, len - n, &more)) == TLS_IO_OK) {
				n += more;
				continue;
			}
			if (r != TLS_IO_WANT_READ)
				event_active(c->rev, EV_READ, 1);	/* said by the next read */
			break;
		}
		return (ssize_t)n;
	case TLS_IO_WANT_READ:
		return -1;
	case TLS_IO_WANT_WRITE:
		c->tls_rd_want_wr = 1;	/* http_conn_write_cb re-runs the read */
		event_add(c->wev, NULL);
		return -1;
	case TLS_IO_CLOSED:
		return 0;	/* close_notify: a half-close, as a plain EOF */
	default:
		return -2;
	}
}

/* Into buf: the bytes read, 0 the client shut its side, -1 none yet, -2 failed. */
static ssize_t
conn_recv(struct conn *c, char *buf, size_t len)
{
	ssize_t	n;

	if (c->tls != NULL)
		return conn_recv_tls(c, buf, len);
	n = read(c->fd, buf, len);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -1 : -2;
	return n;
}

void
http_conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn	*c = arg;
	ssize_t		 n;

	(void)fd;
	(void)what;
	if (c->tls_wr_want_rd) {
		c->tls_wr_want_rd = 0;
		event_active(c->wev, EV_WRITE, 1);	/* the TLS write's retry */
	}
	if (c->close_after && !c->pending) {
		conn_discard(c);
		return;
	}
	if (c->inlen >= HTTP_IN_BYTES) {
		conn_update_read(c);	/* full while an answer is pending */
		return;
	}
	if (conn_bufs_get(c) == -1) {
		log_err("http: out of memory for a request");
		http_conn_free(c);
		return;
	}
	if ((n = conn_recv(c, c->in + c->inlen, HTTP_IN_BYTES - c->inlen)) == -2) {
		http_conn_free(c);	/* tells a waiting answer that its client left */
		return;
	}
	if (n < 0) {
		if (c->inlen == 0 && !c->pending)
			conn_bufs_put(c);	/* nothing came (a TLS handshake record) */
		return;
	}
	if (n == 0) {
		/*
		 * shutdown(SHUT_WR) after a request is a way to send one: the
		 * answer is still wanted. A client that is gone altogether
		 * shows when the answer is written.
		 */
		c->eof = 1;
		conn_update_read(c);
	}
	c->inlen += (size_t)n;
	if (n > 0 && n < HTTP_PACE_MIN_BYTES)
		c->small_reads++;
	if (!c->pending)
		conn_process(c);
}

void
http_conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn	*c = arg;

	(void)fd;
	(void)what;
	if (c->tls_rd_want_wr) {
		c->tls_rd_want_wr = 0;
		event_active(c->rev, EV_READ, 1);	/* the TLS read's retry */
	}
	conn_write(c);
}

/* The phase's deadline passed (http_conn_arm). */
void
http_conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn	*c = arg;

	(void)fd;
	(void)what;
	if (c->lingering) {
		http_conn_free(c);	/* HTTP_LINGER_MS passed */
		return;
	}
	if (c->pending)
		return;
	if ((c->phase == HTTP_PH_HEADER || c->phase == HTTP_PH_BODY) && c->inlen > 0 &&
	    evbuffer_get_length(c->out) == 0) {
		/* RFC 9110 15.5.9: part of a request came, too slowly. */
		conn_fail(c, 408, "Request Timeout");
		return;
	}
	http_conn_free(c);
}

/*
 * Warn about refused clients at most once per HTTP_WARN_INTERVAL_S; the
 * pauses not reported in between are counted into *unreported.
 */
int
http_may_warn(struct http *h, unsigned long *unreported)
{
	time_t	now = time(NULL);

	if (h->warned_at != 0 && now - h->warned_at < HTTP_WARN_INTERVAL_S) {
		h->nrefusals++;
		return 0;
	}
	*unreported = h->nrefusals;
	h->nrefusals = 0;
	h->warned_at = now;
	return 1;
}

int
http_lis_admin(const struct listener *l)
{
	return (l->flags & HTTP_LISTEN_ADMIN) != 0;
}

/* The public listeners' state, for /readyz and /metrics (the metrics block). */
static void
http_publish(const struct http *h)
{
	metrics.http_conns = h->nconns;
	metrics.http_max_conns = h->max_conns;
	metrics.http_admin_conns = h->nadmin;
	metrics.http_saturated = h->backoff ? METRICS_SAT_FD_LIMIT :
	    h->nconns >= h->max_conns ? METRICS_SAT_MAX_CONNECTIONS :
	    METRICS_SAT_NONE;
}

/* Enable or disable the listeners of one kind (admin or public). */
static void
listeners_set(struct http *h, int admin, int want)
{
	size_t	i;

	for (i = 0; i < h->nlis; i++) {
		if (http_lis_admin(&h->lis[i]) != admin)
			continue;
		if (want)
			evconnlistener_enable(h->lis[i].lev);
		else
			evconnlistener_disable(h->lis[i].lev);
	}
}

/*
 * Listen while under the budget and not backing off from an accept()
 * error; a closed connection or a back-off timer calls this again. The
 * public listeners follow max_connections and the fd limit; the admin
 * listeners their own count (admin_max_connections) only, so a saturated
 * public port never shuts out /healthz, /readyz and /metrics.
 */
void
http_listeners_update(struct http *h)
{
	unsigned long	unreported;
	int		want, adm;

	http_publish(h);
	adm = !h->stopping && !h->adm_backoff && h->nadmin < h->max_admin;
	if (adm != h->adm_enabled) {
		listeners_set(h, 1, adm);
		h->adm_enabled = adm;
	}
	want = !h->stopping && !h->backoff && h->nconns < h->max_conns;
	if (want == h->lis_enabled)
		return;
	listeners_set(h, 0, want);
	h->lis_enabled = want;
	if (!want && !h->stopping && !h->backoff && http_may_warn(h, &unreported))
		log_warn("http: %zu connections (max_connections): not accepting "
		    "until one closes (%lu pause(s) unreported before this)",
		    h->nconns, unreported);
}

void
http_backoff_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http	*h = arg;

	(void)fd;
	(void)what;
	h->backoff = 0;
	http_listeners_update(h);
}

void
http_adm_backoff_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http	*h = arg;

	(void)fd;
	(void)what;
	h->adm_backoff = 0;
	http_listeners_update(h);
}

/* Hold HTTP_ADMIN_SPARE_FDS descriptors while an admin listener exists. */
void
http_spares_refill(struct http *h)
{
	int	fd;

	while (h->want_spare && h->nspare < HTTP_ADMIN_SPARE_FDS) {
		if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
			return;	/* out of descriptors too: a close calls again */
		h->spare[h->nspare++] = fd;
	}
}

/* ---- observing answers (metrics, access log) ----------------------------- */

int64_t
http_req_parsed_us(const struct http_req *r)
{
	return r->parsed_us;
}

void
http_req_set_note(struct http_req *r, const void *note)
{
	r->note = note;
}

const void *
http_req_note(const struct http_req *r)
{
	return r->note;
}

void
http_req_set_log_note(struct http_req *r, const char *text, size_t len)
{
	if (len >= sizeof(r->log_note))
		len = sizeof(r->log_note) - 1;
	memcpy(r->log_note, text, len);
	r->log_note[len] = '\0';
	r->log_note_len = len;
}

const char *
http_req_log_note(const struct http_req *r)
{
	return r->log_note_len > 0 ? r->log_note : NULL;
}

void
http_set_reply_cb(struct http *h, http_reply_cb *cb, void *arg)
{
	h->reply_cb = cb;
	h->reply_arg = arg;
}
