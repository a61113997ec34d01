/* SPDX-License-Identifier: Apache-2.0 */
/* Test upstream for the integration tests: answers, hangs, resets, fails, routes OCSP POSTs to responders or canned answers, or serves canned answers by path; or holds ports that refuse every connection. */
#include "config.h"

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#define MAX_FILE_BYTES		(16 * 1024 * 1024)
#define MAX_HUNG		4096
#define BACKEND_TIMEOUT_S	30

enum mode { M_FILE, M_HANG, M_RESET, M_STATUS, M_429, M_GARBAGE, M_SLOW, M_ROUTE,
    M_DIR };

struct route {
	char				*keyhash;	/* lowercase hex */
	char				*host;		/* NULL for a file rule */
	int				 port;
	struct evhttp_connection	*evcon;		/* requests queue here */
	char				*file;		/* answer with its bytes */
};

static struct event_base	*base;
static enum mode		 mode;
static const char		*file_path;
static int			 status_code, retry_secs, slow_ms, delay_ms;
static const char		*count_file;
static unsigned long		 nrequests;
static struct route		*routes;
static size_t			 nroutes;
static struct evhttp_request	*hung[MAX_HUNG];
static size_t			 nhung;
static const char		*dir_path;	/* dir mode: holds "index" */
static int			 nrefuse;	/* refuse mode: ports to hold */

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: upstream --listen HOST:PORT --mode MODE "
	    "[--delay-ms N] [--count-file PATH]\n"
	    "modes: file:PATH hang reset status:CODE 429:SECS garbage "
	    "slow:MS:PATH\n"
	    "       route:KEYHASHHEX=HOST:PORT|file:PATH[,...] (first rule for\n"
	    "       the key wins; a file rule is skipped while PATH is absent;\n"
	    "       no rule: unauthorized)\n"
	    "       dir:DIR (DIR/index: PATH?QUERY<TAB>STATUS<TAB>BODY<TAB>HEADERS;\n"
	    "       each request's path is appended to DIR/requests)\n"
	    "       refuse:N (N ports bound on HOST and never listened on,\n"
	    "       printed as PORTS=...: every connection is refused, and\n"
	    "       no other socket can take them while this runs)\n");
	exit(2);
}

static const char *
reason_phrase(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 410: return "Gone";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Status";
	}
}

static void
send_text(struct evhttp_request *req, int code, const char *text)
{
	struct evbuffer	*b = evbuffer_new();

	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain");
	if (b != NULL)
		evbuffer_add_printf(b, "%s\n", text);
	evhttp_send_reply(req, code, reason_phrase(code), b);
	evbuffer_free(b);
}

/*
 * HTTP 200 with the bytes of `path`, as an OCSP answer. The file is read
 * per request, so a test may replace it between requests. Returns -1
 * without answering when it cannot be opened (errno set).
 */
static int
send_path(struct evhttp_request *req, const char *path)
{
	struct evbuffer	*b;
	char		 chunk[8192];
	ssize_t		 n;
	size_t		 total = 0;
	int		 fd;

	if ((fd = open(path, O_RDONLY)) == -1)
		return -1;
	if ((b = evbuffer_new()) == NULL) {
		close(fd);
		send_text(req, 500, "out of memory");
		return 0;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) > 0 &&
	    total < MAX_FILE_BYTES) {
		evbuffer_add(b, chunk, (size_t)n);
		total += (size_t)n;
	}
	close(fd);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/ocsp-response");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
	return 0;
}

static void
send_file(struct evhttp_request *req)
{
	if (send_path(req, file_path) == -1)
		send_text(req, 500, strerror(errno));
}

static void
send_garbage(struct evhttp_request *req)
{
	struct evbuffer	*b = evbuffer_new();
	size_t		 i, n = 64 + (size_t)(rand() % 960);

	for (i = 0; b != NULL && i < n; i++) {
		uint8_t	c = (uint8_t)rand();
		evbuffer_add(b, &c, 1);
	}
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/ocsp-response");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

/*
 * Runs from the loop, not the request callback, which must not free its
 * connection. A client that went away first left the request detached.
 */
static void
reset_cb(evutil_socket_t fd_, short what, void *arg)
{
	struct evhttp_request		*req = arg;
	struct evhttp_connection	*evcon;
	struct linger			 lg = { 1, 0 };
	int				 fd;

	(void)fd_;
	(void)what;
	if ((evcon = evhttp_request_get_connection(req)) == NULL) {
		evhttp_request_free(req);
		return;
	}
	fd = bufferevent_getfd(evhttp_connection_get_bufferevent(evcon));
	if (fd != -1)	/* RST instead of FIN */
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	evhttp_connection_free(evcon);
}

/* ---- route mode ---------------------------------------------------------- */

/* One DER TLV at *p: returns the tag and moves *p past it; -1 if malformed. */
static int
der_tlv(const uint8_t **p, const uint8_t *end, const uint8_t **val, size_t *len)
{
	const uint8_t	*q = *p;
	size_t		 l, n;
	int		 tag;

	if (end - q < 2)
		return -1;
	tag = *q++;
	if ((tag & 0x1f) == 0x1f)
		return -1;
	l = *q++;
	if (l & 0x80) {
		n = l & 0x7f;
		if (n == 0 || n > 4 || (size_t)(end - q) < n)
			return -1;
		for (l = 0; n > 0; n--)
			l = (l << 8) | *q++;
	}
	if (l > (size_t)(end - q))
		return -1;
	*val = q;
	*len = l;
	*p = q + l;
	return tag;
}

/*
 * RFC 6960 4.1.1: OCSPRequest { TBSRequest { [0] version, [1] requestorName,
 * requestList { Request { CertID { hashAlgorithm, issuerNameHash,
 * issuerKeyHash, serialNumber } ... } ... } } }. Finds the first issuerKeyHash.
 */
static int
first_key_hash(const uint8_t *der, size_t dlen, char *hex, size_t hexlen)
{
	const uint8_t	*p = der, *end = der + dlen, *v;
	size_t		 l, i;
	int		 tag, depth;

	/* OCSPRequest, TBSRequest */
	for (depth = 0; depth < 2; depth++) {
		if (der_tlv(&p, end, &v, &l) != 0x30)
			return -1;
		p = v;
		end = v + l;
	}
	do
		tag = der_tlv(&p, end, &v, &l);
	while (tag == 0xa0 || tag == 0xa1);
	/* requestList, Request, CertID */
	for (depth = 0; depth < 3; depth++) {
		if (depth > 0 && der_tlv(&p, end, &v, &l) != 0x30)
			return -1;
		if (depth == 0 && tag != 0x30)
			return -1;
		p = v;
		end = v + l;
	}
	if (der_tlv(&p, end, &v, &l) != 0x30 ||
	    der_tlv(&p, end, &v, &l) != 0x04 ||
	    der_tlv(&p, end, &v, &l) != 0x04)
		return -1;
	if (l * 2 + 1 > hexlen)
		return -1;
	for (i = 0; i < l; i++)
		snprintf(hex + i * 2, 3, "%02x", v[i]);
	return 0;
}

/* An OCSPResponse with only a responseStatus (RFC 6960 4.2.1). */
static void
send_ocsp_status(struct evhttp_request *req, uint8_t status)
{
	struct evbuffer	*b = evbuffer_new();
	uint8_t		 der[] = { 0x30, 0x03, 0x0a, 0x01, status };

	if (b != NULL)
		evbuffer_add(b, der, sizeof(der));
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/ocsp-response");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static int
hop_by_hop(const char *h)
{
	return strcasecmp(h, "Connection") == 0 ||
	    strcasecmp(h, "Keep-Alive") == 0 ||
	    strcasecmp(h, "Content-Length") == 0 ||
	    strcasecmp(h, "Transfer-Encoding") == 0;
}

static void
backend_done(struct evhttp_request *breq, void *arg)
{
	struct evhttp_request	*req = arg;
	struct evkeyvalq	*in, *out;
	struct evkeyval		*kv;
	int			 code;

	if (breq == NULL || (code = evhttp_request_get_response_code(breq)) == 0) {
		send_text(req, 502, "backend failed");
		return;
	}
	in = evhttp_request_get_input_headers(breq);
	out = evhttp_request_get_output_headers(req);
	TAILQ_FOREACH(kv, in, next)
		if (!hop_by_hop(kv->key))
			evhttp_add_header(out, kv->key, kv->value);
	evhttp_send_reply(req, code, evhttp_request_get_response_code_line(breq),
	    evhttp_request_get_input_buffer(breq));
}

/*
 * `openssl ocsp` serves one connection at a time and can wedge on one that
 * closes without a request: each backend has one evhttp_connection, which
 * sends one request at a time and connects only to send one, and
 * "Connection: close" keeps no idle connection that could later close empty.
 */
static void
route(struct evhttp_request *req)
{
	struct evbuffer		*in = evhttp_request_get_input_buffer(req);
	struct evhttp_request	*breq;
	struct evkeyvalq	*h;
	const char		*ct;
	const uint8_t		*der;
	char			 hex[2 * 64 + 1], host[300];
	size_t			 len, i;

	if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
		send_text(req, 405, "POST only");
		return;
	}
	len = evbuffer_get_length(in);
	der = evbuffer_pullup(in, -1);
	if (der == NULL || first_key_hash(der, len, hex, sizeof(hex)) == -1) {
		fprintf(stderr, "upstream: route: malformed OCSP request\n");
		send_ocsp_status(req, 1);		/* malformedRequest */
		return;
	}
	/*
	 * A file rule answers as NVIDIA's responder does for a per-device
	 * FMC leaf (HTTP 200, an unsigned unauthorized); while its file is
	 * absent the next rule for the key applies.
	 */
	for (i = 0; i < nroutes; i++) {
		if (strcasecmp(routes[i].keyhash, hex) != 0)
			continue;
		if (routes[i].file == NULL)
			break;
		if (send_path(req, routes[i].file) == 0)
			return;
		if (errno != ENOENT) {
			send_text(req, 500, strerror(errno));
			return;
		}
	}
	if (i == nroutes) {
		fprintf(stderr, "upstream: route: no backend for %s\n", hex);
		send_ocsp_status(req, 6);		/* unauthorized */
		return;
	}
	if ((breq = evhttp_request_new(backend_done, req)) == NULL) {
		send_text(req, 500, "out of memory");
		return;
	}
	h = evhttp_request_get_output_headers(breq);
	snprintf(host, sizeof(host), "%s:%d", routes[i].host, routes[i].port);
	evhttp_add_header(h, "Host", host);
	evhttp_add_header(h, "Connection", "close");
	ct = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Content-Type");
	evhttp_add_header(h, "Content-Type",
	    ct != NULL ? ct : "application/ocsp-request");
	evbuffer_add(evhttp_request_get_output_buffer(breq), der, len);
	if (evhttp_make_request(routes[i].evcon, breq, EVHTTP_REQ_POST,
	    evhttp_request_get_uri(req)) == -1)	/* breq is freed on failure */
		send_text(req, 502, "cannot send to backend");
}

/* "HASH=HOST:PORT,HASH=file:PATH,..." */
static int
parse_routes(const char *spec)
{
	struct route	*r;
	char		*copy, *item, *save = NULL, *eq, *colon;
	size_t		 i;
	int		 rv = -1;

	if ((copy = strdup(spec)) == NULL)
		return -1;
	for (item = strtok_r(copy, ",", &save); item != NULL;
	    item = strtok_r(NULL, ",", &save)) {
		if ((eq = strchr(item, '=')) == NULL)
			goto out;
		*eq++ = '\0';
		for (i = 0; item[i] != '\0'; i++)
			if (!isxdigit((unsigned char)item[i]))
				goto out;
		if (i == 0)
			goto out;
		routes = reallocarray(routes, nroutes + 1, sizeof(*routes));
		if (routes == NULL)
			goto out;
		r = &routes[nroutes];
		memset(r, 0, sizeof(*r));
		if (strncmp(eq, "file:", 5) == 0 && eq[5] != '\0') {
			r->file = strdup(eq + 5);
		} else {
			if ((colon = strrchr(eq, ':')) == NULL ||
			    atoi(colon + 1) <= 0)
				goto out;
			*colon = '\0';
			r->host = strdup(eq);
			r->port = atoi(colon + 1);
		}
		r->keyhash = strdup(item);
		nroutes++;
	}
	rv = nroutes > 0 ? 0 : -1;
 out:
	free(copy);
	return rv;
}

/* ---- dir mode: canned answers by request path -------------------------------- */

/* DIR/NAME, or NAME when it is absolute. */
static void
dir_file(char *buf, size_t len, const char *name)
{
	if (name[0] == '/')
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%s/%s", dir_path, name);
}

/* "Name: value" lines of a headers file onto the reply ("-": none). */
static int
dir_add_headers(struct evhttp_request *req, const char *name)
{
	struct evkeyvalq	*out = evhttp_request_get_output_headers(req);
	char			 path[4096], *line = NULL, *colon, *v;
	size_t			 cap = 0;
	ssize_t			 n;
	FILE			*f;

	if (strcmp(name, "-") == 0)
		return 0;
	dir_file(path, sizeof(path), name);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while ((n = getline(&line, &cap, f)) > 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if ((colon = strchr(line, ':')) == NULL)
			continue;
		*colon = '\0';
		for (v = colon + 1; *v == ' '; v++)
			;
		evhttp_add_header(out, line, v);
	}
	free(line);
	fclose(f);
	return 0;
}

/* A body file into a buffer ("-": empty), capped at MAX_FILE_BYTES. */
static int
dir_add_body(struct evbuffer *b, const char *name)
{
	char	path[4096], chunk[8192];
	ssize_t	n;
	size_t	total = 0;
	int	fd;

	if (strcmp(name, "-") == 0)
		return 0;
	dir_file(path, sizeof(path), name);
	if ((fd = open(path, O_RDONLY)) == -1)
		return -1;
	while (total < MAX_FILE_BYTES && (n = read(fd, chunk, sizeof(chunk))) > 0) {
		evbuffer_add(b, chunk, (size_t)n);
		total += (size_t)n;
	}
	close(fd);
	return 0;
}

/*
 * The index is read per request, so a test may change the answers between
 * requests. The path is matched as sent, query included: it shows what the
 * client put on the wire. No entry: 404, as KDS and PCS answer.
 */
static void
dir_answer(struct evhttp_request *req)
{
	const char	*uri = evhttp_request_get_uri(req);
	char		 path[4096], *line = NULL, *f[4], *save;
	size_t		 cap = 0, i;
	ssize_t		 n;
	struct evbuffer	*b;
	FILE		*idx, *log;
	int		 code;

	dir_file(path, sizeof(path), "requests");
	if ((log = fopen(path, "a")) != NULL) {
		fprintf(log, "%s\n", uri);
		fclose(log);
	}
	dir_file(path, sizeof(path), "index");
	if ((idx = fopen(path, "r")) == NULL) {
		send_text(req, 500, "no index");
		return;
	}
	while ((n = getline(&line, &cap, idx)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		for (i = 0, save = line; i < 4; i++)
			f[i] = strsep(&save, "\t");
		if (f[3] == NULL || strcmp(f[0], uri) != 0)
			continue;
		code = atoi(f[1]);
		if ((b = evbuffer_new()) == NULL || code < 100 || code > 599 ||
		    dir_add_body(b, f[2]) == -1 || dir_add_headers(req, f[3]) == -1)
			send_text(req, 500, "bad index entry");
		else
			evhttp_send_reply(req, code, reason_phrase(code), b);
		if (b != NULL)
			evbuffer_free(b);
		break;
	}
	if (n <= 0)
		send_text(req, 404, "no index entry");
	free(line);
	fclose(idx);
}

/* ---- dispatch -------------------------------------------------------------- */

static void
count_request(void)
{
	char	 tmp[4096];
	FILE	*f;

	nrequests++;
	if (count_file == NULL)
		return;
	/* write and rename, so a reader never sees a half-written number */
	snprintf(tmp, sizeof(tmp), "%s.tmp", count_file);
	if ((f = fopen(tmp, "w")) == NULL)
		return;
	fprintf(f, "%lu\n", nrequests);
	if (fclose(f) == 0)
		rename(tmp, count_file);
}

static void
act(struct evhttp_request *req)
{
	struct timeval	now = { 0, 0 };

	switch (mode) {
	case M_FILE:
	case M_SLOW:
		send_file(req);
		break;
	case M_HANG:
		if (nhung < MAX_HUNG)
			hung[nhung++] = req;
		break;
	case M_RESET:
		event_base_once(base, -1, EV_TIMEOUT, reset_cb, req, &now);
		break;
	case M_STATUS:
		send_text(req, status_code, "test upstream");
		break;
	case M_429: {
		char	secs[32];

		snprintf(secs, sizeof(secs), "%d", retry_secs);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Retry-After", secs);
		send_text(req, 429, "slow down");
		break;
	}
	case M_GARBAGE:
		send_garbage(req);
		break;
	case M_ROUTE:
		route(req);
		break;
	case M_DIR:
		dir_answer(req);
		break;
	}
}

static void
delayed_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	act(arg);
}

static void
request_cb(struct evhttp_request *req, void *arg)
{
	struct timeval	tv;
	int		ms = delay_ms + (mode == M_SLOW ? slow_ms : 0);

	(void)arg;
	count_request();
	if (ms <= 0) {
		act(req);
		return;
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	event_base_once(base, -1, EV_TIMEOUT, delayed_cb, req, &tv);
}

static void
signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	event_base_loopexit(base, NULL);
}

static int
parse_mode(const char *m)
{
	const char	*colon;

	if (strncmp(m, "file:", 5) == 0 && m[5] != '\0') {
		mode = M_FILE;
		file_path = m + 5;
	} else if (strcmp(m, "hang") == 0)
		mode = M_HANG;
	else if (strcmp(m, "reset") == 0)
		mode = M_RESET;
	else if (strncmp(m, "status:", 7) == 0) {
		mode = M_STATUS;
		if ((status_code = atoi(m + 7)) < 100 || status_code > 599)
			return -1;
	} else if (strncmp(m, "429:", 4) == 0) {
		mode = M_429;
		if ((retry_secs = atoi(m + 4)) < 0)
			return -1;
	} else if (strcmp(m, "garbage") == 0)
		mode = M_GARBAGE;
	else if (strncmp(m, "slow:", 5) == 0) {
		mode = M_SLOW;
		slow_ms = atoi(m + 5);
		if ((colon = strchr(m + 5, ':')) == NULL || colon[1] == '\0')
			return -1;
		file_path = colon + 1;
	} else if (strncmp(m, "route:", 6) == 0) {
		mode = M_ROUTE;
		return parse_routes(m + 6);
	} else if (strncmp(m, "refuse:", 7) == 0) {
		nrefuse = atoi(m + 7);
		return nrefuse >= 1 && nrefuse <= 64 ? 0 : -1;
	} else if (strncmp(m, "dir:", 4) == 0 && m[4] != '\0') {
		mode = M_DIR;
		dir_path = m + 4;
	} else
		return -1;
	return 0;
}

/*
 * Refuse mode: ports that are dead for as long as this runs. A socket bound
 * without SO_REUSEADDR and never listened on answers every SYN with a reset,
 * and neither another bind nor the kernel's choice of an ephemeral port can
 * take its port; a port that was merely free when asked can be given to
 * any server started later on port 0.
 */
static int
refuse(const char *host)
{
	struct sockaddr_in	sin;
	socklen_t		len;
	sigset_t		set;
	int			i, fd, sig, ports[64];

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
		fprintf(stderr, "upstream: refuse mode takes an IPv4 host, "
		    "not %s\n", host);
		return 1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (i = 0; i < nrefuse; i++) {
		sin.sin_port = 0;
		len = sizeof(sin);
		if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
		    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
		    getsockname(fd, (struct sockaddr *)&sin, &len) == -1) {
			fprintf(stderr, "upstream: refuse: %s\n",
			    strerror(errno));
			return 1;
		}
		ports[i] = ntohs(sin.sin_port);
	}
	printf("PORTS=");
	for (i = 0; i < nrefuse; i++)
		printf("%s%d", i ? " " : "", ports[i]);
	printf("\n");
	fflush(stdout);
	sigwait(&set, &sig);
	return 0;
}

int
main(int argc, char *argv[])
{
	static const struct option	 opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "mode", required_argument, NULL, 'm' },
		{ "delay-ms", required_argument, NULL, 'd' },
		{ "count-file", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct evhttp			*http;
	struct evhttp_bound_socket	*bound;
	struct event			*sigterm, *sigint;
	struct sockaddr_storage		 ss;
	socklen_t			 sslen = sizeof(ss);
	char				*listen = NULL, *host, *port;
	int				 ch, have_mode = 0, bound_port = 0;
	size_t				 i;

	while ((ch = getopt_long(argc, argv, "l:m:d:c:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			listen = optarg;
			break;
		case 'm':
			if (parse_mode(optarg) == -1) {
				fprintf(stderr, "upstream: bad mode %s\n", optarg);
				usage();
			}
			have_mode = 1;
			break;
		case 'd':
			delay_ms = atoi(optarg);
			break;
		case 'c':
			count_file = optarg;
			break;
		default:
			usage();
		}
	}
	if (listen == NULL || !have_mode || (port = strrchr(listen, ':')) == NULL)
		usage();
	*port++ = '\0';
	host = listen;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		host[strlen(host) - 1] = '\0';
		host++;
	}

	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	if (nrefuse > 0)
		return refuse(host);
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	if ((base = event_base_new()) == NULL || (http = evhttp_new(base)) == NULL) {
		fprintf(stderr, "upstream: libevent setup failed\n");
		return 1;
	}
	evhttp_set_max_body_size(http, 1 << 20);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_HEAD);
	evhttp_set_gencb(http, request_cb, NULL);
	if ((bound = evhttp_bind_socket_with_handle(http, host,
	    (uint16_t)atoi(port))) == NULL) {
		fprintf(stderr, "upstream: cannot listen on %s:%s\n", host, port);
		return 1;
	}
	if (getsockname(evhttp_bound_socket_get_fd(bound),
	    (struct sockaddr *)&ss, &sslen) == 0) {
		if (ss.ss_family == AF_INET)
			bound_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			bound_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	if (atoi(port) == 0) {
		printf("PORT=%d\n", bound_port);
		fflush(stdout);
	}
	for (i = 0; i < nroutes; i++) {
		if (routes[i].host == NULL)
			continue;	/* a file rule */
		routes[i].evcon = evhttp_connection_base_new(base, NULL,
		    routes[i].host, (uint16_t)routes[i].port);
		if (routes[i].evcon == NULL) {
			fprintf(stderr, "upstream: backend %s:%d\n",
			    routes[i].host, routes[i].port);
			return 1;
		}
		evhttp_connection_set_timeout(routes[i].evcon, BACKEND_TIMEOUT_S);
		evhttp_connection_set_retries(routes[i].evcon, 0);
	}
	sigterm = evsignal_new(base, SIGTERM, signal_cb, NULL);
	sigint = evsignal_new(base, SIGINT, signal_cb, NULL);
	if (sigterm == NULL || sigint == NULL || event_add(sigterm, NULL) == -1 ||
	    event_add(sigint, NULL) == -1)
		return 1;

	event_base_dispatch(base);

	/* hung requests whose client left are ours; the rest go with evhttp */
	for (i = 0; i < nhung; i++)
		if (evhttp_request_get_connection(hung[i]) == NULL)
			evhttp_request_free(hung[i]);
	for (i = 0; i < nroutes; i++) {
		if (routes[i].evcon != NULL)
			evhttp_connection_free(routes[i].evcon);
		free(routes[i].keyhash);
		free(routes[i].host);
		free(routes[i].file);
	}
	free(routes);
	event_free(sigterm);
	event_free(sigint);
	evhttp_free(http);
	event_base_free(base);
	return 0;
}
