/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 server on the event loop: connections, parsing, limits, deadlines, answers. */
#ifndef PROXY_HTTP_H
#define PROXY_HTTP_H

/*
 * The http wing (proxy/http/, libhttp.a): the wire towards clients.
 *
 *   http.h          this manual: the server, its listeners and one request
 *   http.c          connections, their limits and deadlines, answers queued
 *                   in order (http_int.h: the structures the files share)
 *   http_listen.c   binding, adopting and pausing listeners
 *   http_parse.h    the request head parser (pure), the HTTP date format
 *   tls.h           TLS on a listener (OpenSSL), reloaded in place
 *   listen_addr.h   when two listen addresses are the same socket
 *   httpcache.h     Cache-Control, ETag, Expires and 304 for a stored entry
 *   cache_status.h  RFC 9211's Cache-Status header of an answer
 *
 * The wing knows nothing of kinds, the store's contents or upstreams: a
 * whole request goes to the handler given to http_new (the router), and
 * the handler answers it through http_resp_* and http_reply, at once or
 * later. It includes only proxy/log.h, proxy/loop.h and proxy/metrics.h
 * beside its own headers. Everything runs on the loop's thread.
 *
 * Errors: functions returning int return 0 or -1 (with a message in err
 * where they take one); pointers are NULL on failure. Nothing a client
 * sends ends the process: a malformed request gets its 4xx and, where
 * RFC 9112 requires, the connection closes.
 */

#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_HEADER_BYTES	8192	/* request line and headers */
#define HTTP_MAX_BODY_BYTES	16384	/* OCSP_MAX_REQUEST_BYTES: larger gets 413 */
/*
 * Memory held by answers queued and unsent (their bytes, buffer overhead,
 * TLS buffers) above this: stop reading and parsing until it drains.
 */
#define HTTP_MAX_QUEUED_OUT_BYTES	(256 * 1024)
/* A blocked answer with no write progress for this long: the connection closes. */
#define HTTP_SEND_TIMEOUT_S	60
/* accept() failed (EMFILE, ENFILE, ENOBUFS): listeners pause this long. */
#define HTTP_ACCEPT_BACKOFF_MS	500
/* max_connections 0: the soft RLIMIT_NOFILE less this (upstreams, store, logs)... */
#define HTTP_FD_RESERVE		64
/* ... and no more than this share (1/N) of physical memory ... */
#define HTTP_MEMORY_SHARE	4
/*
 * ... at this much a connection: its worst case, the output bound, one
 * answer, the request buffers, TLS and the kernel's send buffer at their
 * defaults (docs/http.md, "A server of our own", gives the sum) ...
 */
#define HTTP_CONN_MEMORY_BYTES	(1024 * 1024)
/* ... but never fewer than this. */
#define HTTP_MIN_CONNECTIONS	16

struct config;
struct evbuffer;
struct sockaddr_storage;
struct event_base;
struct http;
struct http_req;
struct tls_server;

enum http_method { HTTP_GET, HTTP_HEAD, HTTP_POST, HTTP_OTHER };

/*
 * Each whole request, in order per connection: the handler answers it
 * (http_reply or http_error), now or later. arg is http_new's.
 */
typedef void http_handler_cb(struct http_req *, void *arg);

/*
 * A server with no listeners yet; requests go to handler(req, arg). Until
 * http_set_config the built-in limits and deadlines apply. Returns the
 * server (free with http_free), or NULL when out of memory.
 */
struct http	*http_new(struct event_base *, http_handler_cb *handler, void *arg);

/* What a listener serves. */
#define HTTP_LISTEN_ADMIN	0x1	/* the ops endpoints (/metrics, /healthz, /readyz) */
#define HTTP_LISTEN_NAME_BYTES	128	/* a listener's name in logs */

/* One listener: an address to bind, or a listening socket to adopt. */
struct http_listen {
	const char	*addr;	/* "HOST:PORT" to bind; unused when fd >= 0 */
	int		 fd;	/* a listening socket (systemd), or -1 */
	const char	*name;	/* for logs when fd >= 0, or NULL */
	unsigned	 flags;	/* HTTP_LISTEN_* */
	struct tls_server *tls;	/* TLS on this listener (borrowed: it must outlive
				   the server, tls.h), or NULL for plain HTTP */
};

/*
 * Add a listener (every one shares max_connections and the deadlines).
 * An adopted fd belongs to the server once this returns 0 (http_free
 * closes it); on -1 it stays the caller's. An address equal to that of a
 * socket adopted before (same family, address and port) is not bound
 * again: that socket serves it and gains spec's flags (0 is returned).
 * Returns 0, or -1 with err naming the address (not HOST:PORT, not of
 * this host, cannot bind or adopt) or the limit of listeners.
 */
int		 http_add_listener(struct http *, const struct http_listen *,
		    char *err, size_t errlen);
/*
 * Borrowed for the call only. Its max_connections and *_timeout_s apply
 * from here on: the limit at once, the deadlines from each connection's
 * next phase.
 */
void		 http_set_config(struct http *, const struct config *);
/* Close the listeners and idle connections; busy ones close after their answer. */
void		 http_stop_accepting(struct http *);
void		 http_free(struct http *);	/* accepts NULL */

/*
 * One request. Everything it returns is valid until it is answered, or
 * until its gone callback runs (the client left first).
 */
enum http_method http_req_method(const struct http_req *);
/* The HTTP_LISTEN_* flags of the listener the request came in on. */
unsigned	 http_req_listener_flags(const struct http_req *);
/* A request header (case-insensitive name), its lines joined with ", " (http_parse.h), or NULL. */
const char	*http_req_header(const struct http_req *, const char *name);
/* The target's path, percent-decoded (never NUL inside), always starting with '/'. */
const char	*http_req_path(const struct http_req *);
/* The target's query, raw (after '?'), or NULL when there is none. */
const char	*http_req_query(const struct http_req *);
const uint8_t	*http_req_body(const struct http_req *, size_t *len);
struct event_base *http_req_base(const struct http_req *);
/* The peer's address (AF_INET, AF_INET6 or AF_UNIX) into ss; 0, or -1 (errno from getpeername). */
int		 http_req_peer(const struct http_req *, struct sockaddr_storage *ss);

/*
 * The answer: headers, then body bytes, then http_reply (exactly once).
 * Given within the handler, it is written at once; given later (after an
 * upstream fetch), it is queued and the loop writes it and then reads the
 * connection's next request, so the caller's stack never runs a handler.
 */
void		 http_resp_header(struct http_req *, const char *name, const char *value);
/*
 * The same for a name of nlen bytes and a value of vlen bytes that the
 * caller built itself and that hold no CR, LF or (in the name) ':' or
 * space: not scanned again. For a header on every hit (Cache-Status).
 */
void		 http_resp_header_n(struct http_req *, const char *name,
		    size_t nlen, const char *value, size_t vlen);
struct evbuffer	*http_resp_body(struct http_req *);
/*
 * The body is len bytes at p, borrowed: they must stay valid until the
 * http_reply that follows returns (a stored entry in its read
 * transaction, a static answer), and http_resp_body's buffer must stay
 * empty. Spares the copy into that buffer: a plain connection with
 * nothing queued gets status line, headers and these bytes in one writev.
 */
void		 http_resp_body_ref(struct http_req *, const void *p, size_t len);
void		 http_reply(struct http_req *, int status, const char *reason);
/* The reason phrase of a status ("Not Found"). */
const char	*http_reason(int status);
/* A short text answer for HTTP-level errors (400, 404, 413, ...). */
void		 http_error(struct http_req *, int status, const char *reason);
/* The methods served, and 405 with them in Allow (RFC 9110 15.5.6): allow lists the target's. */
#define HTTP_ALLOW	"GET, HEAD, POST"
void		 http_not_allowed(struct http_req *, const char *allow);

/*
 * For answers that come later (an upstream fetch): `cb` runs if the client
 * goes away first; the request must not be touched after it. Cleared by
 * passing NULL, and by answering.
 */
typedef void http_gone_cb(struct http_req *, void *arg);
void		 http_req_on_gone(struct http_req *, http_gone_cb *, void *arg);

/*
 * When the request was handed to the handler (metrics_now_us()); 0 for an
 * answer given before a whole request was read (400, 413, 431 ...).
 */
int64_t		 http_req_parsed_us(const struct http_req *);
/*
 * An opaque, static tag saying how it is answered (metrics.c's notes),
 * for the reply callback; cleared for each request. NULL: none noted.
 */
void		 http_req_set_note(struct http_req *, const void *note);
const void	*http_req_note(const struct http_req *);
/*
 * Words the access log appends to the request's line (how it was
 * answered: its Cache-Status, the upstream), copied and cut at
 * HTTP_LOG_NOTE_BYTES - 1 bytes; cleared for each request. The note, or
 * NULL when none was set.
 */
#define HTTP_LOG_NOTE_BYTES	256
void		 http_req_set_log_note(struct http_req *, const char *text,
		    size_t len);
const char	*http_req_log_note(const struct http_req *);
/*
 * Called by http_reply for every answer, after it is queued and before
 * the request is gone: its status and the body bytes sent. NULL: none.
 */
typedef void http_reply_cb(const struct http_req *, int status, size_t bytes,
    void *arg);
void		 http_set_reply_cb(struct http *, http_reply_cb *, void *arg);

#endif
