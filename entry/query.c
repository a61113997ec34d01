/* SPDX-License-Identifier: Apache-2.0 */
/* A client's query string as name/value pairs (the grammar libevent's evhttp_parse_query_str used, plus repeats refused). */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "attest/util.h"
#include "entry/query.h"

const char *const query_err_str[QUERY_ERR_MAX] = {
	[QUERY_OK] = "ok",
	[QUERY_ERR_SYNTAX] = "the query string does not parse",
	[QUERY_ERR_REPEATED] = "a parameter is given twice",
	[QUERY_ERR_TOO_MANY] = "too many parameters",
	[QUERY_ERR_TOO_LONG] = "the query string is too long",
	[QUERY_ERR_NOMEM] = "out of memory",
};

/* Decode in place: %XX (two hex digits) and '+' as a space (HTML forms). */
static void
decode(char *s)
{
	char	*w = s;

	for (; *s != '\0'; s++) {
		if (*s == '%' && isxdigit((unsigned char)s[1]) &&
		    isxdigit((unsigned char)s[2])) {
			*w++ = (char)(util_hexval((unsigned char)s[1]) << 4 |
			    util_hexval((unsigned char)s[2]));
			s += 2;
		} else if (*s == '+')
			*w++ = ' ';
		else
			*w++ = *s;
	}
	*w = '\0';
}

enum query_err
query_parse(const char *s, struct query *q)
{
	char	*p, *amp, *eq;
	size_t	 i;

	memset(q, 0, sizeof(*q));
	if (s == NULL || *s == '\0')
		return QUERY_OK;
	if (strlen(s) > QUERY_MAX_BYTES)
		return QUERY_ERR_TOO_LONG;
	if ((q->buf = strdup(s)) == NULL)
		return QUERY_ERR_NOMEM;
	/* "a=1&" ends the query; "&a=1", "a&b=1" and "=1" do not parse. */
	for (p = q->buf; p != NULL && *p != '\0'; p = amp) {
		if ((amp = strchr(p, '&')) != NULL)
			*amp++ = '\0';
		if ((eq = strchr(p, '=')) == NULL || eq == p)
			return QUERY_ERR_SYNTAX;
		*eq = '\0';
		decode(eq + 1);
		for (i = 0; i < q->n; i++)
			if (strcmp(q->p[i].name, p) == 0) {
				q->bad = q->p[i].name;
				return QUERY_ERR_REPEATED;
			}
		if (q->n == QUERY_MAX_PARAMS)
			return QUERY_ERR_TOO_MANY;
		q->p[q->n].name = p;
		q->p[q->n].value = eq + 1;
		q->n++;
	}
	return QUERY_OK;
}

const char *
query_get(const struct query *q, const char *name)
{
	size_t	i;

	for (i = 0; i < q->n; i++)
		if (strcmp(q->p[i].name, name) == 0)
			return q->p[i].value;
	return NULL;
}

const char *
query_unknown(const struct query *q, const char *const *allowed)
{
	size_t	i, j;

	for (i = 0; i < q->n; i++) {
		for (j = 0; allowed[j] != NULL; j++)
			if (strcmp(q->p[i].name, allowed[j]) == 0)
				break;
		if (allowed[j] == NULL)
			return q->p[i].name;
	}
	return NULL;
}

void
query_free(struct query *q)
{
	if (q == NULL)
		return;
	free(q->buf);
	memset(q, 0, sizeof(*q));
}
