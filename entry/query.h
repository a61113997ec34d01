/* SPDX-License-Identifier: Apache-2.0 */
/* A client's query string ("a=1&b=2") as name/value pairs: values percent-decoded, names exact, none repeated. */
#ifndef ENTRY_QUERY_H
#define ENTRY_QUERY_H

#include <stddef.h>

#define QUERY_MAX_PARAMS	16	/* more than any kind accepts */
#define QUERY_MAX_BYTES		4096	/* the longest request line is shorter */

enum query_err {
	QUERY_OK,
	QUERY_ERR_SYNTAX,	/* a pair without '=' or with an empty name */
	QUERY_ERR_REPEATED,	/* a name given twice: q->bad */
	QUERY_ERR_TOO_MANY,	/* over QUERY_MAX_PARAMS pairs */
	QUERY_ERR_TOO_LONG,	/* over QUERY_MAX_BYTES */
	QUERY_ERR_NOMEM,
	QUERY_ERR_MAX
};
extern const char *const query_err_str[QUERY_ERR_MAX];

struct query_param {
	const char	*name;		/* as sent: names are not decoded */
	const char	*value;		/* %XX decoded, '+' a space */
};

struct query {
	char			*buf;		/* owns the strings below */
	struct query_param	 p[QUERY_MAX_PARAMS];
	size_t			 n;
	const char		*bad;		/* QUERY_ERR_REPEATED: the name */
};

/*
 * Parse s (NULL or "" is an empty query) into q, in order. Names compare
 * exactly (case matters); a '%' not followed by two hex digits is kept as
 * it is. Returns QUERY_OK, or an error with q holding nothing to use but
 * q->bad. Call query_free either way.
 */
enum query_err	 query_parse(const char *s, struct query *q);
/* The value of `name`, or NULL; valid until query_free. */
const char	*query_get(const struct query *, const char *name);
/* The first name not in `allowed` (NULL-terminated), or NULL when all are. */
const char	*query_unknown(const struct query *, const char *const *allowed);
void		 query_free(struct query *);	/* accepts NULL */

#endif
