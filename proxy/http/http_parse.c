/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 request head parser (RFC 9112): request line, field syntax, Host and message framing, refused at the first doubt. */
#include "config.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "proxy/http/http.h"
#include "proxy/http/http_parse.h"

/*
 * Deliberately strict, since a proxy in front of stapled (or stapled in
 * front of another server) must never see one request where we see two:
 * every doubt about where a request ends is a 400 and a close. See
 * docs/http.md for the rules and what h11 tolerates.
 */

/* tchar (RFC 9110 5.6.2): the bytes of a token (test_http_parse checks each). */
static int
is_tchar(unsigned char ch)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9'))
		return 1;
	switch (ch) {
	case '!': case '#': case '$': case '%': case '&': case '\'': case '*':
	case '+': case '-': case '.': case '^': case '_': case '`': case '|':
	case '~':
		return 1;
	default:
		return 0;
	}
}

/* Each name the server reads has its own length: one comparison tells it. */
enum http_field
http_field_of(const char *name, size_t len)
{
	enum http_field	 f;
	const char	*n;

	switch (len) {
	case 4: f = HTTP_F_HOST; n = "Host"; break;
	case 6: f = HTTP_F_EXPECT; n = "Expect"; break;
	case 10: f = HTTP_F_CONNECTION; n = "Connection"; break;
	case 12: f = HTTP_F_CONTENT_TYPE; n = "Content-Type"; break;
	case 13: f = HTTP_F_AUTHORIZATION; n = "Authorization"; break;
	case 14: f = HTTP_F_CONTENT_LENGTH; n = "Content-Length"; break;
	case 17: f = HTTP_F_TRANSFER_ENCODING; n = "Transfer-Encoding"; break;
	default: return HTTP_F_OTHER;
	}
	return strncasecmp(name, n, len) == 0 ? f : HTTP_F_OTHER;
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
 * 400; the control bytes are http_parse_more's. 0, 400 or 431.
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
	h->hfield[h->nheaders] = (unsigned char)http_field_of(line, (size_t)(p - line));
	h->hname[h->nheaders] = line;
	h->hvalue[h->nheaders++] = v;
	return 0;
}

/* The number of fields that are f. */
static size_t
field_count(const struct http_head *h, enum http_field f)
{
	size_t	i, n = 0;

	for (i = 0; i < h->nheaders; i++)
		if (h->hfield[i] == f)
			n++;
	return n;
}

/* The value of the field f (its lines joined), or NULL. */
static const char *
field_value(const struct http_head *h, enum http_field f)
{
	size_t	i;

	for (i = 0; i < h->nheaders; i++)
		if (h->hfield[i] == f)
			return h->hvalue[i];
	return NULL;
}

/*
 * Host and framing (RFC 9112 3.2, 6.1, 6.3): HTTP/1.1 needs exactly one
 * Host, HTTP/1.0 at most one; the body is by one Content-Length of
 * digits only, or none; any Transfer-Encoding is 501 (none is
 * implemented), 400 with a Content-Length beside it. A POST without a
 * Content-Length is 411 (RFC 9110 15.5.12): its body would be empty
 * (RFC 9112 6.3), and no client means that. 0, 400, 411, 413 or 501.
 */
static int
parse_framing(struct http_head *h)
{
	const char	*cl, *p;
	size_t		 nhost = field_count(h, HTTP_F_HOST);

	if (nhost > 1 || (nhost == 0 && !h->http10))
		return 400;
	if (field_count(h, HTTP_F_TRANSFER_ENCODING) > 0)
		return field_count(h, HTTP_F_CONTENT_LENGTH) > 0 ? 400 : 501;
	if (field_count(h, HTTP_F_CONTENT_LENGTH) > 1)
		return 400;
	h->clen = 0;
	if ((cl = field_value(h, HTTP_F_CONTENT_LENGTH)) == NULL)
		return h->method == HTTP_POST ? 411 : 0;
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

/* The fields that may not be a list (RFC 9110 5.3): a repeat is a 400. */
static int
is_singleton(enum http_field f)
{
	return f == HTTP_F_HOST || f == HTTP_F_CONTENT_LENGTH ||
	    f == HTTP_F_CONTENT_TYPE || f == HTTP_F_AUTHORIZATION;
}

/* Whether fields i and j of h have one name (case-insensitive); nlen their lengths. */
static int
same_name(const struct http_head *h, const size_t *nlen, size_t i, size_t j)
{
	if (h->hfield[i] != h->hfield[j])
		return 0;
	if (h->hfield[i] != HTTP_F_OTHER)
		return 1;
	return nlen[i] == nlen[j] && strcasecmp(h->hname[i], h->hname[j]) == 0;
}

/*
 * Rewrite the fields from base on, where their lines were (room bytes, up
 * to the blank line), each name once, its values joined with ", " in
 * order. It fits: a line takes at least its name, ':' and LF beside its
 * value, a repeat's value adds only ", ".
 */
static int
join_repeats(struct http_head *h, char *base, size_t room)
{
	char		 out[HTTP_MAX_HEADER_BYTES];
	size_t		 nlen[HTTP_MAX_HEADERS], noff[HTTP_MAX_HEADERS];
	size_t		 voff[HTTP_MAX_HEADERS], i, j, n = 0, o = 0, vl;
	unsigned char	 taken[HTTP_MAX_HEADERS], field[HTTP_MAX_HEADERS];

	for (i = 0; i < h->nheaders; i++)
		nlen[i] = strlen(h->hname[i]);
	memset(taken, 0, sizeof(taken));
	for (i = 0; i < h->nheaders; i++) {
		if (taken[i])
			continue;
		noff[n] = o;
		field[n] = h->hfield[i];
		memcpy(out + o, h->hname[i], nlen[i] + 1);
		o += nlen[i] + 1;
		voff[n] = o;
		for (j = i; j < h->nheaders; j++) {
			if (j > i && (taken[j] || !same_name(h, nlen, i, j)))
				continue;
			vl = strlen(h->hvalue[j]);
			if (o + vl + 3 > sizeof(out) || o + vl + 3 > room)
				return 431;	/* cannot happen: see above */
			if (j > i) {
				memcpy(out + o, ", ", 2);
				o += 2;
			}
			memcpy(out + o, h->hvalue[j], vl);
			o += vl;
			taken[j] = 1;
		}
		out[o++] = '\0';
		n++;
	}
	memcpy(base, out, o);
	for (i = 0; i < n; i++) {
		h->hname[i] = base + noff[i];
		h->hvalue[i] = base + voff[i];
		h->hfield[i] = field[i];
	}
	h->nheaders = n;
	return 0;
}

/*
 * The fields named more than once: 400 when one may not be a list, else
 * joined (join_repeats); 0 when none is repeated. base and room as there.
 */
static int
parse_repeats(struct http_head *h, char *base, size_t room)
{
	size_t	nlen[HTTP_MAX_HEADERS], i, j, repeats = 0;

	for (i = 0; i < h->nheaders; i++)
		nlen[i] = strlen(h->hname[i]);
	for (i = 0; i < h->nheaders; i++)
		for (j = i + 1; j < h->nheaders; j++) {
			if (!same_name(h, nlen, i, j))
				continue;
			if (is_singleton(h->hfield[i]))
				return 400;
			repeats++;
		}
	return repeats == 0 ? 0 : join_repeats(h, base, room);
}

/*
 * One whole line, in[h->line..lf] with its LF, into copy at the same
 * offset: the request line, a field, or the blank line that ends the
 * head. 0 for more lines, 1 at the end of a whole head, or a status.
 */
static int
parse_line(struct http_head *h, const char *in, size_t lf, char *copy)
{
	size_t	 start = h->line, n = lf - start;
	char	*line = copy + start;
	int	 rc;

	memcpy(line, in + start, n + 1);
	h->line = lf + 1;
	if (n > 0 && line[n - 1] == '\r')
		n--;
	line[n] = '\0';
	if (start == 0)
		return n == 0 ? 400 : parse_request_line(line, h);	/* no request line */
	if (n > 0)
		return parse_field(line, h);
	h->hdrlen = lf + 1;
	if ((rc = parse_framing(h)) != 0)
		return rc;
	/* The fields' lines: from the first field's name to the blank line. */
	if (h->nheaders > 0 && (rc = parse_repeats(h, h->hname[0],
	    (size_t)(line - h->hname[0]))) != 0)
		return rc;
	h->whole = 1;
	return 1;
}

void
http_head_reset(struct http_head *h)
{
	/* hname and hvalue are read only below nheaders: not cleared. */
	h->method = 0;
	h->http10 = 0;
	h->target = NULL;
	h->nheaders = 0;
	h->hdrlen = 0;
	h->clen = 0;
	h->scanned = 0;
	h->line = 0;
	h->whole = 0;
}

/*
 * Whether any of the 8 bytes at p is below 0x20 or is 0x7f (a control, a
 * CR or a tab among them): a word at a time, as the head's bytes almost
 * never are.
 */
static int
word_has_ctl(const unsigned char *p)
{
	const uint64_t	ones = 0x0101010101010101ULL;
	const uint64_t	highs = 0x8080808080808080ULL;
	uint64_t	w, del;

	memcpy(&w, p, sizeof(w));
	del = w ^ (0x7f * ones);
	return (((w - 0x20 * ones) & ~w) | ((del - ones) & ~del)) & highs ?
	    1 : 0;
}

/*
 * Whether u[i..lf) is plainly fine: no byte below 0x20 and no DEL in it,
 * but for a CR that ends the line (at lf - 1). A word at a time, the last
 * one overlapping bytes this call has looked at already; a short span a
 * byte at a time. 0 means "look closer" (span_check), not "wrong".
 */
static int
span_plain(const unsigned char *u, size_t i, size_t lf)
{
	size_t	from = i, e = lf > i && u[lf - 1] == '\r' ? lf - 1 : lf;

	for (; i + 8 <= e; i += 8)
		if (word_has_ctl(u + i))
			return 0;
	if (i == e)
		return 1;
	if (e - from >= 8)
		return !word_has_ctl(u + e - 8);
	for (; i < e; i++)
		if (u[i] < 0x20 || u[i] == 0x7f)
			return 0;
	return 1;
}

/* u[i..lf) a byte at a time: 400 for a control but HTAB, or a CR not ending a line; else 0. */
static int
span_check(const unsigned char *u, size_t i, size_t lf, size_t end)
{
	for (; i < lf; i++) {
		if ((u[i] >= 0x20 && u[i] != 0x7f) || u[i] == '\t')
			continue;
		if (u[i] != '\r' || (i + 1 < end && u[i + 1] != '\n'))
			return 400;	/* a control, or a CR not ending a line */
	}
	return 0;
}

int
http_parse_more(struct http_head *h, const char *in, size_t len, char *copy)
{
	const unsigned char	*u = (const unsigned char *)in, *nl;
	size_t			 i = h->scanned, lf, end;
	int			 rc;

	if (h->whole)
		return 1;
	/* A CR that ended the last read must be followed by its LF. */
	if (i > 0 && i < len && u[i - 1] == '\r' && u[i] != '\n')
		return 400;
	end = len < HTTP_MAX_HEADER_BYTES ? len : HTTP_MAX_HEADER_BYTES;
	while (i < end) {
		/* memchr finds the line's end; each byte before it is checked once. */
		nl = memchr(u + i, '\n', end - i);
		lf = nl != NULL ? (size_t)(nl - u) : end;
		if (!span_plain(u, i, lf) && span_check(u, i, lf, end) != 0)
			return 400;
		if (nl == NULL)
			break;
		h->scanned = lf + 1;
		if ((rc = parse_line(h, in, lf, copy)) != 0)
			return rc;
		i = lf + 1;
	}
	/* Over the limit in the request line (no line ended yet): the target is too long. */
	if (len > HTTP_MAX_HEADER_BYTES)
		return h->line == 0 ? 414 : 431;
	h->scanned = len;
	return 0;
}

int
http_parse_head(const char *in, size_t len, char *copy, struct http_head *h)
{
	http_head_reset(h);
	return http_parse_more(h, in, len, copy);
}

const char *
http_head_field(const struct http_head *h, const char *name)
{
	enum http_field	f = http_field_of(name, strlen(name));
	size_t		i;

	if (f != HTTP_F_OTHER)
		return field_value(h, f);
	for (i = 0; i < h->nheaders; i++)
		if (h->hfield[i] == HTTP_F_OTHER && strcasecmp(h->hname[i], name) == 0)
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
		if (h->hfield[i] != HTTP_F_CONNECTION)
			continue;
		if (http_list_has(h->hvalue[i], "close"))
			return 0;
		if (http_list_has(h->hvalue[i], "keep-alive"))
			keep = 1;
	}
	return keep;
}

void
http_fmt_date(char *buf, size_t len, int64_t t)
{
	struct tm	tm;
	time_t		tt = (time_t)t;

	gmtime_r(&tt, &tm);
	strftime(buf, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}
