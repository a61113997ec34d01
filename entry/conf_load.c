/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration's reader: a JSON document, in memory or in a file, walked by the key table into struct config. */
#include <config.h>	/* autoconf's; "config.h" here would be entry/conf.h */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "entry/conf.h"
#include "entry/conf_int.h"

static int	ld_object(struct ld *, json_t *, const struct cfg_table *,
		    void *, int);

/* One element of "upstreams": a URL, or an object of upstream_keys. */
static int
ld_upstream(struct ld *ld, json_t *e, struct config_upstream *u, int sec,
    int *named)
{
	struct up_fields	f;
	char			r[CONFIG_REASON_BYTES], q[CONFIG_QUOTE_BYTES];

	*named = 0;
	memset(&f, 0, sizeof(f));
	table_defaults(&upstream_table, &f, sec);
	if (json_is_string(e)) {
		if (upstream_set(u, json_string_value(e), NULL, f.verify_nonce,
		    r, sizeof(r)) == -1)
			return ld_error(ld, AT_VALUE, "\"%s\": %s",
			    quote(q, sizeof(q), json_string_value(e)), r);
		return 0;
	}
	if (!json_is_object(e))
		return ld_error(ld, AT_VALUE, "must be a URL string or an object");
	if (ld_object(ld, e, &upstream_table, &f, sec) == -1)
		return -1;
	if (f.url == NULL)
		return ld_error(ld, AT_VALUE, "missing key \"url\"");
	ld_push(ld, "url", 0);
	if (upstream_set(u, f.url, f.name, f.verify_nonce, r, sizeof(r)) == -1)
		return ld_error(ld, AT_VALUE, "\"%s\": %s",
		    quote(q, sizeof(q), f.url), r);
	ld_pop(ld);
	*named = f.name != NULL;
	return 0;
}

/* A name upstreams[i] shares with an earlier one: said at its name or URL. */
static int
ld_upstream_dup(struct ld *ld, json_t *e, const struct config_upstream *u,
    size_t i, int named)
{
	char	q[CONFIG_QUOTE_BYTES];
	long	d;

	if ((d = upstream_dup(u, i)) == -1)
		return 0;
	if (named)
		ld_push(ld, "name", 0);
	else if (json_is_object(e))
		ld_push(ld, "url", 0);
	return ld_error(ld, AT_VALUE, "duplicate upstream name \"%s\" "
	    "(also used by upstreams[%ld])", quote(q, sizeof(q), u[i].name), d);
}

/* "upstreams": a URL or a non-empty list of them, replacing *list. */
static int
ld_upstreams(struct ld *ld, json_t *v, struct config_upstream **list,
    size_t *n, int sec)
{
	struct config_upstream	*u = NULL;
	size_t			 i, cnt, done = 0;
	json_t			*e;
	int			 named, rv = -1;

	if (json_is_string(v))
		cnt = 1;
	else if (json_is_array(v))
		cnt = json_array_size(v);
	else {
		ld_error(ld, AT_VALUE, "must be a URL string or a list");
		goto out;
	}
	if (cnt == 0) {
		ld_error(ld, AT_VALUE, "at least one upstream is required");
		goto out;
	}
	if ((u = calloc(cnt, sizeof(*u))) == NULL) {
		ld_error(ld, AT_VALUE, "out of memory");
		goto out;
	}
	for (i = 0; i < cnt; i++) {
		e = json_is_array(v) ? json_array_get(v, i) : v;
		if (json_is_array(v))
			ld_push(ld, NULL, i);
		/* On error the path is left as it was at the failing key. */
		if (ld_upstream(ld, e, &u[i], sec, &named) == -1)
			goto out;
		done++;
		if (ld_upstream_dup(ld, e, u, i, named) == -1)
			goto out;
		if (json_is_array(v))
			ld_pop(ld);
	}
	upstreams_free(*list, *n);
	*list = u;
	*n = cnt;
	u = NULL;
	rv = 0;
 out:
	upstreams_free(u, done);
	return rv;
}

/* One element of "listen": "HOST:PORT", or an object of listen_keys. */
static int
ld_listen_elem(struct ld *ld, json_t *e, char **addr, struct config_tls *t)
{
	struct listen_fields	f;
	struct config_tls	files;

	if (!json_is_object(e))
		return ld_strelem(ld, e, listen_check, addr);
	memset(&f, 0, sizeof(f));
	if (ld_object(ld, e, &listen_table, &f, CFG_ROOT) == -1)
		return -1;
	if (f.addr == NULL)
		return ld_error(ld, AT_VALUE, "missing key \"addr\"");
	files.cert = (char *)f.tls.cert;
	files.key = (char *)f.tls.key;
	files.client_ca = (char *)f.tls.client_ca;
	if ((*addr = strdup(f.addr)) == NULL ||
	    (f.tls.cert != NULL && tls_copy(t, &files) == -1))
		return ld_error(ld, AT_VALUE, "out of memory");
	return 0;
}

/* "listen": an address or object, or a list of them, replacing cfg's. */
static int
ld_listen(struct ld *ld, json_t *v, struct config *cfg)
{
	char			**l = NULL;
	struct config_tls	 *t = NULL;
	size_t			  i, cnt, done = 0;
	int			  rv = -1;

	if (json_is_array(v))
		cnt = json_array_size(v);
	else if (json_is_string(v) || json_is_object(v))
		cnt = 1;
	else
		return ld_error(ld, AT_VALUE, "must be a string or a list of strings");
	if (cnt > 0 && ((l = calloc(cnt, sizeof(*l))) == NULL ||
	    (t = calloc(cnt, sizeof(*t))) == NULL)) {
		ld_error(ld, AT_VALUE, "out of memory");
		goto out;
	}
	for (i = 0; i < cnt; i++) {
		if (json_is_array(v))
			ld_push(ld, NULL, i);
		done++;		/* both freed below from here on */
		if (ld_listen_elem(ld, json_is_array(v) ? json_array_get(v, i) :
		    v, &l[i], &t[i]) == -1)
			goto out;
		if (json_is_array(v))
			ld_pop(ld);
	}
	listen_replace(cfg, l, t, cnt);
	l = NULL;
	t = NULL;
	rv = 0;
 out:
	strlist_free(l, done);
	listen_tls_free(t, done);
	return rv;
}

/* One value v of key k into the struct at base, in section sec. */
static int
ld_value(struct ld *ld, const struct cfg_key *k, json_t *v, void *base,
    int sec)
{
	char	*f = (char *)base + k->off;
	long	 mb;

	switch (k->type) {
	case CFG_T_LONG:
		return ld_long(ld, v, k->lmin, k->lmax, (long *)f);
	case CFG_T_MIB:
		if (ld_long(ld, v, k->lmin, k->lmax, &mb) == -1)
			return -1;
		*(size_t *)f = (size_t)mb * MIB;
		return 0;
	case CFG_T_DOUBLE:
		return ld_double(ld, v, k->dmin, k->flags & CFG_OPEN_MIN,
		    k->dmax, (double *)f);
	case CFG_T_BOOL:
		return ld_bool(ld, v, (int *)f);
	case CFG_T_ENUM:
		return ld_enum(ld, v, k, (int *)f);
	case CFG_T_STR:
		return ld_str(ld, v, (char **)f);
	case CFG_T_TEXT:
		return ld_text(ld, v, k->check, (const char **)f);
	case CFG_T_LIST:
		return ld_strlist(ld, v, !(k->flags & CFG_LIST_ONLY), k->check,
		    (char ***)f, (size_t *)((char *)base + k->noff));
	case CFG_T_UPSTREAMS:
		return ld_upstreams(ld, v, (struct config_upstream **)f,
		    (size_t *)((char *)base + k->noff), sec);
	case CFG_T_OBJECT:
		return ld_object(ld, v, k->sub, f, sec);
	case CFG_T_LISTEN:
		return ld_listen(ld, v, base);
	}
	return ld_error(ld, AT_VALUE, "unsupported key");
}

/*
 * The members of obj by t's keys for section sec (a service, or CFG_ROOT
 * whose members also name the services), into the struct at base; then
 * t's checks across keys.
 */
static int
ld_object(struct ld *ld, json_t *obj, const struct cfg_table *t, void *base,
    int sec)
{
	const struct cfg_key	*k;
	const char		*name;
	json_t			*v;
	int			 rv, svc;

	if (!json_is_object(obj))
		return ld_error(ld, AT_VALUE, t == &root_table ?
		    "the top level must be an object" : "must be an object");
	json_object_foreach(obj, name, v) {
		ld_push(ld, name, 0);
		if ((k = key_find(t, sec, name)) != NULL)
			rv = ld_value(ld, k, v, base, sec);
		else if (t == &root_table && (svc = svc_find(name)) != -1)
			rv = ld_object(ld, v, &service_table,
			    section(base, svc), svc);
		else {
			ld_pop(ld);
			return ld_unknown(ld, name);
		}
		if (rv == -1)
			return -1;
		ld_pop(ld);
	}
	return t->after != NULL ? t->after(ld, obj, base) : 0;
}

int
config_load_buffer(struct config *cfg, const char *name, const char *buf,
    size_t len, char *err, size_t errlen)
{
	struct ld	 ld;
	json_error_t	 je;
	json_t		*root;
	int		 rv = -1;

	memset(&ld, 0, sizeof(ld));
	ld.name = name;
	ld.buf = buf;
	ld.len = len;
	ld.err = err;
	ld.errlen = errlen;
	if (errlen > 0)
		err[0] = '\0';
	if ((root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		if (errlen > 0)
			snprintf(err, errlen, "%s:%d:%d: %s%s", name,
			    je.line > 0 ? je.line : 1,
			    je.column > 0 ? je.column : 1,
			    json_error_code(&je) == json_error_duplicate_key ?
			    "" : "syntax error: ", je.text);
		goto out;
	}
	rv = ld_object(&ld, root, &root_table, cfg, CFG_ROOT);
 out:
	json_decref(root);
	if (rv == -1)
		errno = EINVAL;
	return rv;
}

/*
 * The file, opened without blocking (a FIFO or a device never stalls
 * -n or a reload): NULL with *e set, ESPIPE when it is not a regular file.
 */
static FILE *
config_open(const char *path, int *e)
{
	struct stat	 st;
	FILE		*f;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1) {
		*e = errno;
		return NULL;
	}
	if (fstat(fd, &st) == -1)
		*e = errno;
	else if (!S_ISREG(st.st_mode))
		*e = ESPIPE;
	else
		*e = 0;
	if (*e != 0) {
		close(fd);
		return NULL;
	}
	if ((f = fdopen(fd, "r")) == NULL) {
		*e = errno;
		close(fd);
	}
	return f;
}

int
config_load_file(struct config *cfg, const char *path, char *err,
    size_t errlen)
{
	FILE		*f = NULL;
	char		*buf = NULL;
	size_t		 len;
	int		 rv = -1, e = 0;

	if ((f = config_open(path, &e)) == NULL) {
		snprintf(err, errlen, "%s: %s", path, e == ESPIPE ?
		    "not a regular file" : strerror(e));
		goto out;
	}
	if ((buf = malloc(CONFIG_MAX_FILE_BYTES + 1)) == NULL) {
		e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		goto out;
	}
	len = fread(buf, 1, CONFIG_MAX_FILE_BYTES + 1, f);
	if (ferror(f)) {
		e = EIO;
		snprintf(err, errlen, "%s: read error", path);
		goto out;
	}
	if (len > CONFIG_MAX_FILE_BYTES) {
		e = EFBIG;
		snprintf(err, errlen, "%s: larger than %d bytes", path,
		    CONFIG_MAX_FILE_BYTES);
		goto out;
	}
	if ((rv = config_load_buffer(cfg, path, buf, len, err, errlen)) == -1)
		e = EINVAL;
 out:
	free(buf);
	if (f != NULL)
		fclose(f);
	if (rv == -1)
		errno = e;
	return rv;
}
