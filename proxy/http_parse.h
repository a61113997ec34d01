/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 request head parser (RFC 9112), pure: bytes in, a parsed head or a status out; no sockets. */
#ifndef PROXY_HTTP_PARSE_H
#define PROXY_HTTP_PARSE_H

#include <stddef.h>

#include "proxy/http.h"

#define HTTP_MAX_HEADERS	64

/*
 * A parsed head. Every pointer points into the `copy` buffer given to
 * http_parse_head, NUL-terminated there; valid while that buffer is.
 */
struct http_head {
	enum http_method method;
	int		 http10;	/* HTTP/1.0; else HTTP/1.1 */
	char		*target;	/* the raw request target */
	char		*hname[HTTP_MAX_HEADERS];
	char		*hvalue[HTTP_MAX_HEADERS];	/* OWS trimmed */
	size_t		 nheaders;
	size_t		 hdrlen;	/* bytes of the head in the input, blank line included */
	size_t		 clen;		/* the body's length (Content-Length, else 0) */
};

/*
 * Parse the request head at the start of in[0..len). A line ends in CRLF
 * or in a bare LF (both accepted everywhere); a CR anywhere else, NUL and
 * other control bytes (HTAB aside, in field values) are refused as soon
 * as they arrive, before the head is whole. The head is copied into copy
 * (at least HTTP_MAX_HEADER_BYTES + 1 bytes) and cut up there.
 * Returns 0 when more bytes are needed, 1 when h holds a whole head, or
 * the status to answer before closing: 400 (syntax, obs-fold, Host, a
 * bad or repeated Content-Length, Transfer-Encoding with
 * Content-Length), 413 (body over HTTP_MAX_BODY_BYTES), 431 (head over
 * HTTP_MAX_HEADER_BYTES or more than HTTP_MAX_HEADERS fields), 501
 * (any Transfer-Encoding: none is implemented), 505 (not HTTP/1.x).
 */
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

/* The header named name (case-insensitive) in h, or NULL. */
const char *http_head_field(const struct http_head *h, const char *name);

#endif
