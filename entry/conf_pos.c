/* SPDX-License-Identifier: Apache-2.0 */
/* The position scanner: line and column of a key or value in JSON text jansson already accepted. */
#include <config.h>	/* autoconf's; "config.h" here would be entry/conf.h */

#include <ctype.h>
#include <stddef.h>

#include "entry/conf_pos.h"

#define JPOS_UTF8_MAX_BYTES	4

struct scan {
	const unsigned char	*p;
	const unsigned char	*end;
	int			 line;
	int			 col;
};

static void
sc_adv(struct scan *s)
{
	if (s->p >= s->end)
		return;
	if (*s->p == '\n') {
		s->line++;
		s->col = 1;
	} else if ((*s->p & 0xc0) != 0x80)	/* count UTF-8 characters */
		s->col++;
	s->p++;
}

static int
sc_peek(const struct scan *s)
{
	return s->p < s->end ? *s->p : -1;
}

static void
sc_ws(struct scan *s)
{
	int	c;

	while ((c = sc_peek(s)) == ' ' || c == '\t' || c == '\r' || c == '\n')
		sc_adv(s);
}

static void
sc_here(const struct scan *s, struct jpos *at)
{
	at->line = s->line;
	at->col = s->col;
}

static long
sc_hex4(struct scan *s)
{
	long	v = 0;
	int	i, c;

	for (i = 0; i < 4; i++) {
		c = sc_peek(s);
		if (c == -1 || !isxdigit(c))
			return -1;
		v = v * 16 + (isdigit(c) ? c - '0' : tolower(c) - 'a' + 10);
		sc_adv(s);
	}
	return v;
}

static size_t
utf8_put(unsigned char *o, long cp)
{
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | (cp >> 18));
	o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* "\uXXXX", with a following low surrogate joined (RFC 8259 7), as UTF-8. */
static int
sc_unicode(struct scan *s, unsigned char *o, size_t *n)
{
	long	cp, lo;

	if ((cp = sc_hex4(s)) == -1)
		return -1;
	if (cp >= 0xd800 && cp <= 0xdbff && s->end - s->p >= 6 &&
	    s->p[0] == '\\' && s->p[1] == 'u') {
		sc_adv(s);
		sc_adv(s);
		if ((lo = sc_hex4(s)) == -1)
			return -1;
		if (lo >= 0xdc00 && lo <= 0xdfff)
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	*n = utf8_put(o, cp);
	return 0;
}

/* After a backslash: the decoded bytes of one escape into o (*n of them). */
static int
sc_escape(struct scan *s, unsigned char *o, size_t *n)
{
	int	c;

	if ((c = sc_peek(s)) == -1)
		return -1;
	sc_adv(s);
	*n = 1;
	switch (c) {
	case 'b': o[0] = '\b'; break;
	case 'f': o[0] = '\f'; break;
	case 'n': o[0] = '\n'; break;
	case 'r': o[0] = '\r'; break;
	case 't': o[0] = '\t'; break;
	case 'u': return sc_unicode(s, o, n);
	default: o[0] = (unsigned char)c; break;	/* " \ / */
	}
	return 0;
}

/*
 * Consume a string token; if key is not NULL, set *match when its decoded
 * bytes equal key.
 */
static int
sc_string(struct scan *s, const char *key, int *match)
{
	const unsigned char	*k = (const unsigned char *)key;
	unsigned char		 o[JPOS_UTF8_MAX_BYTES];
	size_t			 n, i;
	int			 c, ok = key != NULL;

	if (sc_peek(s) != '"')
		return -1;
	sc_adv(s);
	for (;;) {
		if ((c = sc_peek(s)) == -1)
			return -1;
		sc_adv(s);
		if (c == '"')
			break;
		n = 1;
		o[0] = (unsigned char)c;
		if (c == '\\' && sc_escape(s, o, &n) == -1)
			return -1;
		for (i = 0; ok && i < n; i++) {
			if (*k != '\0' && *k == o[i])
				k++;
			else
				ok = 0;
		}
	}
	if (match != NULL)
		*match = ok && *k == '\0';
	return 0;
}

/* Skip one value: a scalar, or a whole object or array. */
static int
sc_value(struct scan *s)
{
	int	c, depth = 0;

	sc_ws(s);
	for (;;) {
		if ((c = sc_peek(s)) == -1)
			return depth == 0 ? 0 : -1;
		if (c == '"') {
			if (sc_string(s, NULL, NULL) == -1)
				return -1;
			if (depth == 0)
				return 0;
			continue;
		}
		if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']') {
			if (depth == 0)
				return 0;	/* the container of a scalar ends */
			if (--depth == 0) {
				sc_adv(s);
				return 0;
			}
		} else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' ||
		    c == '\r' || c == '\n'))
			return 0;
		sc_adv(s);
	}
}

/* Past a value and the ',' after it, to the next member or element: 0, or -1. */
static int
sc_next(struct scan *s)
{
	if (sc_value(s) == -1)
		return -1;
	sc_ws(s);
	if (sc_peek(s) != ',')
		return -1;
	sc_adv(s);
	return 0;
}

/* At '{': move to the value of member `key`, its key's start in *at. */
static int
sc_member(struct scan *s, const char *key, struct jpos *at)
{
	int	match;

	if (sc_peek(s) != '{')
		return -1;
	sc_adv(s);
	for (;;) {
		sc_ws(s);
		if (sc_peek(s) != '"')
			return -1;
		sc_here(s, at);
		if (sc_string(s, key, &match) == -1)
			return -1;
		sc_ws(s);
		if (sc_peek(s) != ':')
			return -1;
		sc_adv(s);
		sc_ws(s);
		if (match)
			return 0;
		if (sc_next(s) == -1)
			return -1;
	}
}

/* At '[': move to element idx, its start in *at. */
static int
sc_element(struct scan *s, size_t idx, struct jpos *at)
{
	size_t	j;

	if (sc_peek(s) != '[')
		return -1;
	sc_adv(s);
	for (j = 0;; j++) {
		sc_ws(s);
		if (sc_peek(s) == ']' || sc_peek(s) == -1)
			return -1;
		if (j == idx)
			break;
		if (sc_next(s) == -1)
			return -1;
	}
	sc_here(s, at);
	return 0;
}

int
jpos_find(const char *buf, size_t len, const struct jpos_step *path,
    size_t n, struct jpos *key, struct jpos *val)
{
	struct scan	s;
	size_t		i;

	s.p = (const unsigned char *)buf;
	s.end = s.p + len;
	s.line = s.col = 1;
	sc_ws(&s);
	sc_here(&s, key);
	sc_here(&s, val);
	for (i = 0; i < n; i++) {
		if (path[i].key != NULL ? sc_member(&s, path[i].key, key) == -1 :
		    sc_element(&s, path[i].idx, key) == -1)
			return -1;
		sc_here(&s, val);
	}
	return 0;
}
