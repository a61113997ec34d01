/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the HTTP/1.1 head parser over whole pipelined byte streams, as one connection's input, whole and in pieces. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/http/http_parse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a parsed head promises the rest of the server; abort() when it breaks. */
static void
check_head(const struct http_head *h, size_t avail)
{
	size_t	i;

	if (h->hdrlen == 0 || h->hdrlen > avail || h->hdrlen > HTTP_MAX_HEADER_BYTES ||
	    h->clen > HTTP_MAX_BODY_BYTES || h->target == NULL || h->target[0] == '\0' ||
	    h->nheaders > HTTP_MAX_HEADERS)
		abort();
	if (strpbrk(h->target, " \t\r\n") != NULL)
		abort();
	if (!h->http10 && http_head_field(h, "Host") == NULL)
		abort();
	for (i = 0; i < h->nheaders; i++)
		if (h->hname[i][0] == '\0' || strpbrk(h->hname[i], " \t\r\n:") != NULL ||
		    strpbrk(h->hvalue[i], "\r\n") != NULL)
			abort();
	if (http_head_field(h, "Transfer-Encoding") != NULL)
		abort();
}

/* A whole head is never refused early: every shorter prefix needs more bytes. */
static void
check_prefix(const char *in, size_t hdrlen, char *copy)
{
	struct http_head	h;

	if (http_parse_head(in, hdrlen - 1, copy, &h) != 0 ||
	    http_parse_head(in, hdrlen / 2, copy, &h) != 0)
		abort();
}

/*
 * The same bytes fed in pieces of `step` (as reads deliver them) give the
 * same status, and for a whole head the same head; abort() when not.
 */
static void
check_pieces(const char *in, size_t avail, size_t step, int want,
    const struct http_head *whole)
{
	static char		 copy[HTTP_MAX_HEADER_BYTES + 1];
	struct http_head	 h;
	size_t			 got = 0, i;
	int			 rc = 0;

	http_head_reset(&h);
	while (rc == 0 && got < avail) {
		got = got + step < avail ? got + step : avail;
		rc = http_parse_more(&h, in, got, copy);
	}
	if (rc != want)
		abort();
	if (rc != 1)
		return;
	if (h.hdrlen != whole->hdrlen || h.clen != whole->clen ||
	    h.method != whole->method || h.http10 != whole->http10 ||
	    h.nheaders != whole->nheaders || strcmp(h.target, whole->target) != 0)
		abort();
	for (i = 0; i < h.nheaders; i++)
		if (strcmp(h.hname[i], whole->hname[i]) != 0 ||
		    strcmp(h.hvalue[i], whole->hvalue[i]) != 0)
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char		 copy[HTTP_MAX_HEADER_BYTES + 1];
	const char		*in = (const char *)data;
	struct http_head	 h;
	size_t			 off = 0, avail, hdrlen;
	int			 rc;

	while (off < size) {
		avail = size - off;
		rc = http_parse_head(in + off, avail, copy, &h);
		check_pieces(in + off, avail, 1 + (size_t)data[off] % 97, rc, &h);
		if (rc == 0)
			break;		/* waits for more: the connection's deadline decides */
		if (rc != 1) {
			if (rc != 400 && rc != 411 && rc != 413 && rc != 414 &&
			    rc != 431 && rc != 501 && rc != 505)
				abort();
			break;		/* answered and closed: nothing after it is read */
		}
		check_head(&h, avail);
		hdrlen = h.hdrlen;
		if (h.clen > avail - hdrlen)
			break;		/* the body is still arriving */
		off += hdrlen + h.clen;
		check_prefix(in + off - hdrlen - h.clen, hdrlen, copy);
	}
	return 0;
}
