/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON readers of the configuration's value types and ranges, each refusal said at its file:line:column. */
#include <config.h>	/* autoconf's; "config.h" here would be entry/conf.h */

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "entry/conf.h"
#include "entry/conf_int.h"
#include "entry/conf_pos.h"

void
ld_push(struct ld *ld, const char *key, size_t idx)
{
	/* The schema is CONFIG_MAX_DEPTH deep at most; deeper keys are unknown. */
	if (ld->depth < CONFIG_MAX_DEPTH) {
		ld->path[ld->depth].key = key;
		ld->path[ld->depth].idx = idx;
	}
	ld->depth++;
}

void
ld_pop(struct ld *ld)
{
	ld->depth--;
}

/* "a.b[2].c" for the first n elements of the path. */
static void
ld_pathstr(const struct ld *ld, size_t n, char *buf, size_t len)
{
	size_t	i, o = 0;
	int	w;

	buf[0] = '\0';
	for (i = 0; i < n && i < CONFIG_MAX_DEPTH && o < len; i++) {
		if (ld->path[i].key != NULL)
			w = snprintf(buf + o, len - o, "%s%s", i > 0 ? "." : "",
			    ld->path[i].key);
		else
			w = snprintf(buf + o, len - o, "[%zu]", ld->path[i].idx);
		if (w < 0)
			break;
		o += (size_t)w;
	}
}

/*
 * "name:line:col: path: message" at the current path; `shown` elements
 * of the path name the field in the message.
 */
int __attribute__((format(printf, 4, 5)))
ld_errorp(struct ld *ld, enum where w, size_t shown, const char *fmt, ...)
{
	struct jpos	k, v;
	char		path[256], msg[512];
	va_list		ap;
	size_t		n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = ld->depth < CONFIG_MAX_DEPTH ? ld->depth : CONFIG_MAX_DEPTH;
	(void)jpos_find(ld->buf, ld->len, ld->path, n, &k, &v);
	if (w == AT_VALUE)
		k = v;
	ld_pathstr(ld, shown, path, sizeof(path));
	if (ld->errlen > 0)
		snprintf(ld->err, ld->errlen, "%s:%d:%d: %s%s%s", ld->name,
		    k.line, k.col, path, path[0] != '\0' ? ": " : "", msg);
	return -1;
}

int
ld_unknown(struct ld *ld, const char *key)
{
	char	q[CONFIG_QUOTE_BYTES];

	ld_push(ld, key, 0);
	ld_errorp(ld, AT_KEY, ld->depth - 1, "unknown key \"%s\"",
	    quote(q, sizeof(q), key));
	ld_pop(ld);
	return -1;
}

int
ld_long(struct ld *ld, json_t *v, long min, long max, long *out)
{
	json_int_t	i;

	if (!json_is_integer(v) || (i = json_integer_value(v)) < min || i > max) {
		if (max == LONG_MAX)
			return ld_error(ld, AT_VALUE,
			    "must be an integer of at least %ld", min);
		return ld_error(ld, AT_VALUE,
		    "must be an integer between %ld and %ld", min, max);
	}
	*out = (long)i;
	return 0;
}

/* min_open: the lower bound itself is out of range. */
int
ld_double(struct ld *ld, json_t *v, double min, int min_open, double max,
    double *out)
{
	double	d;

	if (!json_is_number(v))
		goto bad;
	d = json_number_value(v);
	if (d != d || (min_open ? d <= min : d < min) || d > max)
		goto bad;
	*out = d;
	return 0;
 bad:
	if (min_open)
		return ld_error(ld, AT_VALUE, "must be a number greater than %g",
		    min);
	return ld_error(ld, AT_VALUE, "must be a number between %g and %g",
	    min, max);
}

int
ld_enum(struct ld *ld, json_t *v, const struct cfg_key *k, int *out)
{
	size_t	i;

	if (json_is_string(v))
		for (i = 0; i < k->nnames; i++)
			if (strcmp(json_string_value(v), k->names[i]) == 0) {
				*out = (int)i;
				return 0;
			}
	return ld_error(ld, AT_VALUE, "must be one of %s", k->choices);
}

int
ld_bool(struct ld *ld, json_t *v, int *out)
{
	if (!json_is_boolean(v))
		return ld_error(ld, AT_VALUE, "must be true or false");
	*out = json_is_true(v);
	return 0;
}

int
ld_str(struct ld *ld, json_t *v, char **out)
{
	if (!json_is_string(v) || json_string_length(v) == 0)
		return ld_error(ld, AT_VALUE, "must be a non-empty string");
	if (config_set_str(out, json_string_value(v)) == -1)
		return ld_error(ld, AT_VALUE, "out of memory");
	return 0;
}

/* Any string, borrowed from the document; check, if any, says why not. */
int
ld_text(struct ld *ld, json_t *v, cfg_check_fn *check, const char **out)
{
	char	r[CONFIG_REASON_BYTES], q[CONFIG_QUOTE_BYTES];

	if (!json_is_string(v))
		return ld_error(ld, AT_VALUE, "must be a string");
	if (check != NULL && check(json_string_value(v), r, sizeof(r)) == -1)
		return ld_error(ld, AT_VALUE, "\"%s\": %s",
		    quote(q, sizeof(q), json_string_value(v)), r);
	*out = json_string_value(v);
	return 0;
}

/* One element of a list of strings into *out (owned); 0 or -1 said. */
int
ld_strelem(struct ld *ld, json_t *e, cfg_check_fn *check, char **out)
{
	char	r[CONFIG_REASON_BYTES], q[CONFIG_QUOTE_BYTES];

	if (!json_is_string(e) || json_string_length(e) == 0)
		return ld_error(ld, AT_VALUE, "must be a non-empty string");
	if (strlen(json_string_value(e)) != json_string_length(e))
		return ld_error(ld, AT_VALUE, "must not contain NUL");
	if (check != NULL && check(json_string_value(e), r, sizeof(r)) == -1)
		return ld_error(ld, AT_VALUE, "\"%s\": %s",
		    quote(q, sizeof(q), json_string_value(e)), r);
	if ((*out = strdup(json_string_value(e))) == NULL)
		return ld_error(ld, AT_VALUE, "out of memory");
	return 0;
}

/* A string or a list of strings (allow_string), replacing *list. */
int
ld_strlist(struct ld *ld, json_t *v, int allow_string, cfg_check_fn *check,
    char ***list, size_t *n)
{
	char	**l = NULL;
	size_t	  i, cnt, done = 0;
	int	  rv = -1;

	if (json_is_string(v) && allow_string)
		cnt = 1;
	else if (json_is_array(v))
		cnt = json_array_size(v);
	else {
		ld_error(ld, AT_VALUE, allow_string ?
		    "must be a string or a list of strings" :
		    "must be a list of strings");
		goto out;
	}
	if (cnt > 0 && (l = calloc(cnt, sizeof(*l))) == NULL) {
		ld_error(ld, AT_VALUE, "out of memory");
		goto out;
	}
	for (i = 0; i < cnt; i++) {
		if (json_is_array(v))
			ld_push(ld, NULL, i);
		if (ld_strelem(ld, json_is_array(v) ? json_array_get(v, i) : v,
		    check, &l[i]) == -1)
			goto out;
		done++;
		if (json_is_array(v))
			ld_pop(ld);
	}
	strlist_free(*list, *n);
	*list = l;
	*n = cnt;
	l = NULL;
	rv = 0;
 out:
	strlist_free(l, done);
	return rv;
}
