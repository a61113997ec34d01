/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 request head parser (RFC 9112): request line, field syntax, Host and message framing, refused at the first doubt. */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "proxy/http.h"
#include "proxy/http_parse.h"

/*
 * Deliberately strict, since a proxy in front of stapled (or stapled in
 * front of another server) must never see one request where we see two:
 * every doubt about where a request ends is a 400 and a close. See
 * docs/design.md "The HTTP front" for the rules and what h11 tolerates.
 */

/* tchar (RFC 9110 5.6.2): the bytes of a token. */
static int
is_tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/*
 * The head's length through its blank line into *hdrlen. Checks bytes as
 * they come: NUL, control bytes other than HTAB, and a CR not before an LF
 * are refused at once. 1, 0 for more bytes, or 400 / 431.
 */
static int
head_scan(const unsigned char *in, size_t len, size_t *hdrlen)
{
	size_t	i, line = 0, n;

	for (i = 0; i < len && i < HTTP_MAX_HEADER_BYTES; i++) {
		if (in[i] == '\n') {
			n = i - line;
			if (n > 0 && in[i - 1] == '\r')
				n--;
			if (n == 0) {
				if (line == 0)
					return 400;	/* no request line */
				*hdrlen = i + 1;
				return 1;
			}
			line = i + 1;
		} else if (in[i] == '\r') {
			if (i + 1 < len && in[i + 1] != '\n')
				return 400;
		} else if ((in[i] < 0x20 && in[i] != '\t') || in[i] == 0x7f)
			return 400;
	}
	return i >= HTTP_MAX_HEADER_BYTES ? 431 : 0;
}

/* Cut the line at *p (ending in LF or CRLF): returns it, *p moves past it. */
static char *
next_line(char **p)
{
	char	*line = *p, *lf = strchr(line, '\n');

	*lf = '\0';
	if (lf > line && lf[-1] == '\r')
		lf[-1] = '\0';
	*p = lf + 1;
	return line;
}

/* method SP request-target SP HTTP-version: 0, 400 or 505. */
static int
parse_request_line(char *line, struct http_head *h)
{
	char	*p = line, *t, *v;

	while (is_tchar((unsigned char)*p))
		p++;
	if (p == line || *p != ' ')
		return 400;
	*p++ = '\0';
	for (t = p; *p > 0x20 && *p < 0x7f; p++)
		;
	if (p == t || *p != ' ')
		return 400;
	*p++ = '\0';
	v = p;
	if (strcmp(v, "HTTP/1.1") == 0)
		h->http10 = 0;
	else if (strcmp(v, "HTTP/1.0") == 0)
		h->http10 = 1;
	else if (strncmp(v, "HTTP/", 5) == 0 && v[5] >= '0' && v[5] <= '9' &&
	    v[6] == '.' && v[7] >= '0' && v[7] <= '9' && v[8] == '\0')
		return 505;
	else
		return 400;
	h->method = strcmp(line, "GET") == 0 ? HTTP_GET : strcmp(line, "POST") == 0 ?
	    HTTP_POST : strcmp(line, "HEAD") == 0 ? HTTP_HEAD : HTTP_OTHER;
	h->target = t;
	return 0;
}

/*
 * field-name ":" OWS field-value OWS. A name is a token, so whitespace
 * before the colon and obs-fold (a line starting with SP or HTAB) are
 * 400; the control bytes are head_scan's. 0, 400 or 431.
 */
static int
parse_field(char *line, struct http_head *h)
{
	char	*p = line, *v, *cut;

	while (is_tchar((unsigned char)*p))
		p++;
	if (p == line || *p != ':')
		return 400;
	if (h->nheaders == HTTP_MAX_HEADERS)
		return 431;
	*p = '\0';
	for (v = p + 1; *v == ' ' || *v == '\t'; v++)
		;
	for (cut = v + strlen(v); cut > v && (cut[-1] == ' ' || cut[-1] == '\t'); )
		*--cut = '\0';
	h->hname[h->nheaders] = line;
	h->hvalue[h->nheaders++] = v;
	return 0;
}

/* The number of fields named name. */
static size_t
field_count(const struct http_head *h, const char *name)
{
	size_t	i, n = 0;

	for (i = 0; i < h->nheaders; i++)
		if (strcasecmp(h->hname[i], name) == 0)
			n++;
	return n;
}

/*
 * Host and framing (RFC 9112 3.2, 6.1, 6.3): HTTP/1.1 needs exactly one
 * Host, HTTP/1.0 at most one; the body is by one Content-Length of
 * digits only, or none; any Transfer-Encoding is 501 (none is
 * implemented), 400 with a Content-Length beside it. 0, 400, 413 or 501.
 */
static int
parse_framing(struct http_head *h)
{
	const char	*cl, *p;
	size_t		 nhost = field_count(h, "Host");

	if (nhost > 1 || (nhost == 0 && !h->http10))
		return 400;
	if (field_count(h, "Transfer-Encoding") > 0)
		return field_count(h, "Content-Length") > 0 ? 400 : 501;
	if (field_count(h, "Content-Length") > 1)
		return 400;
	h->clen = 0;
	if ((cl = http_head_field(h, "Content-Length")) == NULL)
		return 0;
	if (*cl == '\0')
		return 400;
	for (p = cl; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return 400;
		h->clen = h->clen * 10 + (size_t)(*p - '0');
		if (h->clen > HTTP_MAX_BODY_BYTES)
			return 413;
	}
	return 0;
}

int
http_parse_head(const char *in, size_t len, char *copy, struct http_head *h)
{
	char	*p, *end, *line;
	int	 rc;

	memset(h, 0, sizeof(*h));
	if ((rc = head_scan((const unsigned char *)in, len, &h->hdrlen)) != 1)
		return rc;
	memcpy(copy, in, h->hdrlen);
	copy[h->hdrlen] = '\0';
	p = copy;
	end = copy + h->hdrlen;
	if ((rc = parse_request_line(next_line(&p), h)) != 0)
		return rc;
	while (p < end) {
		line = next_line(&p);
		if (*line == '\0')
			break;		/* the blank line */
		if ((rc = parse_field(line, h)) != 0)
			return rc;
	}
	if ((rc = parse_framing(h)) != 0)
		return rc;
	return 1;
}

const char *
http_head_field(const struct http_head *h, const char *name)
{
	size_t	i;

	for (i = 0; i < h->nheaders; i++)
		if (strcasecmp(h->hname[i], name) == 0)
			return h->hvalue[i];
	return NULL;
}

int
http_list_has(const char *value, const char *token)
{
	size_t		 n = strlen(token), len;
	const char	*p = value, *e;

	while (*p != '\0') {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		e = p;
		while (*e != '\0' && *e != ',')
			e++;
		len = (size_t)(e - p);
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == n && n > 0 && strncasecmp(p, token, n) == 0)
			return 1;
		p = e;
	}
	return 0;
}

int
http_head_keepalive(const struct http_head *h)
{
	size_t	i;
	int	keep = !h->http10;

	for (i = 0; i < h->nheaders; i++) {
		if (strcasecmp(h->hname[i], "Connection") != 0)
			continue;
		if (http_list_has(h->hvalue[i], "close"))
			return 0;
		if (http_list_has(h->hvalue[i], "keep-alive"))
			keep = 1;
	}
	return keep;
}
