/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 request head parser (RFC 9112) and the HTTP date format, pure: bytes in, a parsed head or a status out; no sockets. */
#ifndef PROXY_HTTP_PARSE_H
#define PROXY_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/http/http.h"

#define HTTP_MAX_HEADERS	64

/*
 * The fields the server itself reads, known by number once parsed:
 * framing, keep-alive, the singletons (RFC 9110 5.3) and what the
 * routes ask for on every request. Every other name is HTTP_F_OTHER.
 */
enum http_field {
	HTTP_F_OTHER,
	HTTP_F_HOST,
	HTTP_F_CONTENT_LENGTH,
	HTTP_F_CONTENT_TYPE,
	HTTP_F_TRANSFER_ENCODING,
	HTTP_F_CONNECTION,
	HTTP_F_AUTHORIZATION,
	HTTP_F_EXPECT,
};

/*
 * A parsed head, and the parser's place in it while the head arrives.
 * Every pointer points into the `copy` buffer given to http_parse_more,
 * NUL-terminated there; valid while that buffer is. A field sent in
 * several lines is one entry, its values joined (http_parse_more).
 */
struct http_head {
	enum http_method method;
	int		 http10;	/* HTTP/1.0; else HTTP/1.1 */
	char		*target;	/* the raw request target */
	char		*hname[HTTP_MAX_HEADERS];
	char		*hvalue[HTTP_MAX_HEADERS];	/* OWS trimmed */
	unsigned char	 hfield[HTTP_MAX_HEADERS];	/* enum http_field of hname */
	size_t		 nheaders;
	size_t		 hdrlen;	/* bytes of the head in the input, blank line included */
	size_t		 clen;		/* the body's length (Content-Length, else 0) */
	/* the parser's state: */
	size_t		 scanned;	/* input bytes looked at */
	size_t		 line;		/* where the line being read starts */
	int		 whole;		/* the head is parsed: h is final */
};

/* Forget h: the next http_parse_more starts a new head. All zero bytes is the same state. */
void	http_head_reset(struct http_head *h);

/*
 * Parse on, from where the last call stopped, the request head at the
 * start of in[0..len): in is the input of the last call with bytes added
 * at its end (its first h->scanned bytes unchanged), copy the same buffer
 * each time (at least HTTP_MAX_HEADER_BYTES + 1 bytes), and h as the last
 * call left it (http_head_reset before a new head). Each byte is looked
 * at once, so a head arriving in pieces costs what it costs whole.
 *
 * A line ends in CRLF or in a bare LF (both accepted everywhere); a CR
 * anywhere else, NUL and other control bytes (HTAB aside, in field
 * values) are refused as soon as they arrive, and so is a line as soon
 * as it is whole and wrong. Each whole line is copied into copy, at its
 * offset in the input, and cut up there. When the head is whole, a field
 * sent in several lines is a list joined with ", " in order (RFC 9110
 * 5.3), except the fields that may not be a list: Host, Content-Length,
 * Content-Type and Authorization, refused when repeated.
 *
 * Returns 0 when more bytes are needed, 1 when h holds a whole head (and
 * 1 again at once when called after that), or the status to answer
 * before closing: 400 (syntax, obs-fold, Host, a bad or repeated
 * Content-Length, Transfer-Encoding with Content-Length, a repeated
 * field that is no list), 411 (a POST without Content-Length), 413 (body
 * over HTTP_MAX_BODY_BYTES), 414 (a request line over
 * HTTP_MAX_HEADER_BYTES), 431 (head over HTTP_MAX_HEADER_BYTES or more
 * than HTTP_MAX_HEADERS fields), 501 (any Transfer-Encoding: none is
 * implemented), 505 (not HTTP/1.x).
 */
int	http_parse_more(struct http_head *h, const char *in, size_t len, char *copy);

/* The head in in[0..len) in one piece: http_head_reset, then http_parse_more. */
int	http_parse_head(const char *in, size_t len, char *copy, struct http_head *h);

/*
 * Whether the connection stays open after this request (RFC 9112 9.3,
 * RFC 9110 7.6.1): every Connection field of h is a comma-separated list
 * of tokens, matched case-insensitively, optional whitespace around
 * them. A "close" token closes; otherwise HTTP/1.1 stays open and
 * HTTP/1.0 stays open only with a "keep-alive" token. Returns 1 or 0.
 */
int	http_head_keepalive(const struct http_head *h);

/* Whether the list value holds token (case-insensitive, OWS and empty elements skipped). 1 or 0. */
int	http_list_has(const char *value, const char *token);

/* The field named name (case-insensitive) in h, its lines joined, or NULL. */
const char *http_head_field(const struct http_head *h, const char *name);

/* Which known field a name of len bytes is (case-insensitive), or HTTP_F_OTHER. */
enum http_field http_field_of(const char *name, size_t len);

/*
 * t as an HTTP date (RFC 9110 5.6.7's IMF-fixdate, "Sun, 06 Nov 1994
 * 08:49:37 GMT") in buf, NUL-terminated; a len of 30 or more holds it
 * whole. The Date, Expires and Last-Modified headers all use it.
 */
void	http_fmt_date(char *buf, size_t len, int64_t t);

#endif
