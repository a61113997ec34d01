/* SPDX-License-Identifier: Apache-2.0 */
/* A JSON text read one value at a time: the outer structure walked here, each inner value parsed by jansson on its own. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "attest/json_stream.h"

/* What the scanner of one value's extent is inside. */
enum scan_kind {
	SCAN_NONE = 0,		/* no value begun */
	SCAN_NEST,		/* an object or an array: brackets counted */
	SCAN_STRING,		/* a string at the outer level */
	SCAN_SCALAR,		/* a number, true, false or null */
};

struct jstream {
	const uint8_t	*data;		/* buf, or the caller's bytes */
	uint8_t		*buf;		/* a reader's window (owned) */
	size_t		 cap;
	size_t		 len;		/* bytes valid in data */
	size_t		 off;		/* the first byte not consumed */
	size_t		 pos;		/* the scanner's next byte */
	size_t		 line;		/* of data[pos] */
	int		 eof;		/* nothing more to read */
	jstream_read_fn	*read;
	void		*arg;
	enum scan_kind	 kind;		/* the scan in progress */
	size_t		 depth;
	int		 in_str, esc;
	int		 failed;
	int		 oversize;	/* the error: a value over its max */
	char		 err[256];
};

static void
fail(struct jstream *s, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	if (s->failed)
		return;
	s->failed = 1;
	n = snprintf(s->err, sizeof(s->err), "line %zu: ", s->line);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(s->err))
		vsnprintf(s->err + n, sizeof(s->err) - (size_t)n, fmt, ap);
	va_end(ap);
}

struct jstream *
jstream_mem(const uint8_t *buf, size_t len)
{
	struct jstream	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->data = buf;
	s->len = len;
	s->eof = 1;
	s->line = 1;
	return s;
}

struct jstream *
jstream_reader(jstream_read_fn *fn, void *arg)
{
	struct jstream	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	if ((s->buf = malloc(JSTREAM_CHUNK_BYTES)) == NULL) {
		free(s);
		return NULL;
	}
	s->cap = JSTREAM_CHUNK_BYTES;
	s->data = s->buf;
	s->read = fn;
	s->arg = arg;
	s->line = 1;
	return s;
}

void
jstream_free(struct jstream *s)
{
	if (s == NULL)
		return;
	free(s->buf);
	free(s);
}

/*
 * Read more, keeping the bytes from `keep` on (a value being scanned)
 * and letting go of those before it; the window grows only to hold a
 * value of up to limit bytes. 1: more bytes; 0: the end of the input;
 * -1: the value would be larger than limit, or out of memory (said).
 */
static int
more(struct jstream *s, size_t keep, size_t limit)
{
	uint8_t	*nb;
	size_t	 ncap, got;

	if (s->eof)
		return 0;
	if (keep > 0) {
		memmove(s->buf, s->buf + keep, s->len - keep);
		s->len -= keep;
		s->off -= keep < s->off ? keep : s->off;
		s->pos -= keep;
	}
	if (s->cap - s->len < JSTREAM_CHUNK_BYTES) {
		if (s->len > limit) {
			fail(s, "a value larger than %zu bytes", limit);
			s->oversize = 1;
			return -1;
		}
		ncap = s->cap * 2;
		if (ncap < s->len + JSTREAM_CHUNK_BYTES)
			ncap = s->len + JSTREAM_CHUNK_BYTES;
		if ((nb = realloc(s->buf, ncap)) == NULL) {
			fail(s, "out of memory");
			return -1;
		}
		s->buf = nb;
		s->data = nb;
		s->cap = ncap;
	}
	if ((got = s->read(s->arg, s->buf + s->len, s->cap - s->len)) == 0) {
		s->eof = 1;
		return 0;
	}
	s->len += got;
	return 1;
}

static int
is_ws(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int
jstream_peek(struct jstream *s)
{
	int	r;

	if (s->failed)
		return -1;
	for (;;) {
		while (s->pos < s->len && is_ws(s->data[s->pos])) {
			if (s->data[s->pos] == '\n')
				s->line++;
			s->pos++;
		}
		s->off = s->pos;
		if (s->pos < s->len)
			return s->data[s->pos];
		if ((r = more(s, s->pos, 0)) <= 0)
			return -1;
	}
}

int
jstream_expect(struct jstream *s, int c)
{
	int	got;

	if ((got = jstream_peek(s)) == c) {
		s->off = ++s->pos;
		return 0;
	}
	if (got == -1)
		fail(s, "the input ends where '%c' was expected", c);
	else
		fail(s, "'%c' expected", c);
	return -1;
}

/* One byte of a nested value or an outer string. 1 when the value ended with it. */
static int
scan_byte(struct jstream *s, int c)
{
	if (s->in_str) {
		if (s->esc)
			s->esc = 0;
		else if (c == '\\')
			s->esc = 1;
		else if (c == '"') {
			s->in_str = 0;
			return s->depth == 0;
		}
		return 0;
	}
	if (c == '"')
		s->in_str = 1;
	else if (c == '{' || c == '[')
		s->depth++;
	else if ((c == '}' || c == ']') && --s->depth == 0)
		return 1;
	return 0;
}

/* Begin scanning the value at pos. 0, or -1 when none begins there (said). */
static int
scan_begin(struct jstream *s)
{
	int	c = s->data[s->pos];

	s->depth = 0;
	s->in_str = s->esc = 0;
	if (c == '{' || c == '[') {
		s->kind = SCAN_NEST;
		s->depth = 1;
	} else if (c == '"') {
		s->kind = SCAN_STRING;
		s->in_str = 1;
	} else if (c == ',' || c == ':' || c == '}' || c == ']') {
		fail(s, "a value expected, '%c' found", c);
		return -1;
	} else {
		s->kind = SCAN_SCALAR;
		return 0;
	}
	s->pos++;
	return 0;
}

/*
 * Scan to the end of the value that starts at s->off. keep: hold its
 * bytes (at most max), else let them go as they are read. 0 with pos just
 * past the value, or -1 (said).
 */
static int
scan(struct jstream *s, int keep, size_t max)
{
	int	c, r;

	if (jstream_peek(s) == -1) {
		if (!s->failed)
			fail(s, "the input ends where a value was expected");
		return -1;
	}
	if (scan_begin(s) == -1)
		return -1;
	for (;;) {
		while (s->pos < s->len) {
			c = s->data[s->pos];
			if (s->kind == SCAN_SCALAR) {
				if (is_ws(c) || c == ',' || c == ']' ||
				    c == '}' || c == ':')
					return 0;
				s->pos++;
				continue;
			}
			if (c == '\n')
				s->line++;
			s->pos++;
			if (scan_byte(s, c))
				return 0;
		}
		if (keep && s->pos - s->off > max) {
			fail(s, "a value larger than %zu bytes", max);
			s->oversize = 1;
			return -1;
		}
		if ((r = more(s, keep ? s->off : s->pos, max)) == -1)
			return -1;
		if (r == 0) {
			if (s->kind == SCAN_SCALAR)
				return 0;
			fail(s, "the input ends inside a value");
			return -1;
		}
	}
}

json_t *
jstream_value(struct jstream *s, size_t max, size_t flags)
{
	json_error_t	 je;
	json_t		*v;
	size_t		 vline;

	if (s->failed)
		return NULL;
	(void)jstream_peek(s);
	vline = s->line;	/* where the value starts */
	if (scan(s, 1, max) == -1)
		return NULL;
	if (s->pos - s->off > max) {
		fail(s, "a value larger than %zu bytes", max);
		s->oversize = 1;
		return NULL;
	}
	v = json_loadb((const char *)s->data + s->off, s->pos - s->off,
	    flags | JSON_DECODE_ANY, &je);
	if (v == NULL) {
		s->line = vline + (je.line > 0 ? (size_t)je.line - 1 : 0);
		fail(s, "%s", je.text);
		return NULL;
	}
	s->off = s->pos;
	return v;
}

int
jstream_skip(struct jstream *s)
{
	if (s->failed || scan(s, 0, 0) == -1)
		return -1;
	s->off = s->pos;
	return 0;
}

/* After a value: ',' then another, or the closing bracket. */
static int
next_in(struct jstream *s, int *first, int close)
{
	int	c = jstream_peek(s);

	if (*first) {
		*first = 0;
		if (c == close) {
			s->off = ++s->pos;
			return 0;
		}
		if (c == -1 && !s->failed)
			fail(s, "the input ends inside %s", close == ']' ?
			    "an array" : "an object");
		return c == -1 ? -1 : 1;
	}
	if (c == close) {
		s->off = ++s->pos;
		return 0;
	}
	if (c != ',') {
		if (c == -1 && !s->failed)
			fail(s, "the input ends inside %s", close == ']' ?
			    "an array" : "an object");
		else if (c != -1)
			fail(s, "',' or '%c' expected", close);
		return -1;
	}
	s->off = ++s->pos;
	if ((c = jstream_peek(s)) == close || c == -1) {
		fail(s, c == -1 ? "the input ends after ','" :
		    "a value expected after ','");
		return -1;
	}
	return 1;
}

int
jstream_element(struct jstream *s, int *first)
{
	return next_in(s, first, ']');
}

int
jstream_member(struct jstream *s, int *first, char name[JSTREAM_NAME_BYTES])
{
	json_t	*k;
	int	 r;

	if ((r = next_in(s, first, '}')) != 1)
		return r;
	if (jstream_peek(s) != '"') {
		fail(s, "a member name expected");
		return -1;
	}
	/* Escapes make a name's text up to six times its bytes. */
	if ((k = jstream_value(s, 6 * JSTREAM_NAME_BYTES, 0)) == NULL)
		return -1;
	if (json_string_length(k) >= JSTREAM_NAME_BYTES) {
		json_decref(k);
		fail(s, "a member name longer than %d bytes",
		    JSTREAM_NAME_BYTES - 1);
		return -1;
	}
	memcpy(name, json_string_value(k), json_string_length(k) + 1);
	json_decref(k);
	return jstream_expect(s, ':') == -1 ? -1 : 1;
}

int
jstream_end(struct jstream *s)
{
	if (jstream_peek(s) != -1) {
		fail(s, "more after the end of the document");
		return -1;
	}
	return s->failed ? -1 : 0;
}

const char *
jstream_error(const struct jstream *s)
{
	return s->failed ? s->err : "";
}

int
jstream_oversize(const struct jstream *s)
{
	return s->failed && s->oversize;
}

size_t
jstream_line(const struct jstream *s)
{
	return s->line;
}
