/* SPDX-License-Identifier: Apache-2.0 */
/* The kind table, made from the list: each kind's row (its own entry file's), by enum cache_kind; every kind's trust in one loop; and the serving rule every kind shares. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entry/conf.h"
#include "entry/kind.h"

#define KIND_ROW_(id, byte, name, section, row)	[byte] = &kind_##row,
const struct kind *const kind_table[CACHE_KIND_MAX] = {
	KIND_LIST(KIND_ROW_)
};
#undef KIND_ROW_

int
entry_servable(const struct cache_meta *m, enum cache_kind kind, long skew_s,
    time_t now)
{
	if ((int)kind >= KIND_FIRST && kind < CACHE_KIND_MAX &&
	    skew_s < kind_table[kind]->min_skew_s)
		skew_s = kind_table[kind]->min_skew_s;
	return m->next_update > now && m->this_update <= now + skew_s;
}

int
kind_trust_new(const struct config *cfg, void *trust[CACHE_KIND_MAX],
    char *err, size_t errlen)
{
	int	k, rc;

	for (k = 0; k < CACHE_KIND_MAX; k++)
		trust[k] = NULL;
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++) {
		if (kind_table[k]->trust_new == NULL)
			continue;
		if ((rc = kind_table[k]->trust_new(&cfg->svc[k], &trust[k],
		    err, errlen)) != 0) {
			kind_trust_free(trust);
			return rc;
		}
	}
	return 0;
}

void
kind_trust_free(void *trust[CACHE_KIND_MAX])
{
	int	k;

	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++) {
		if (trust[k] != NULL && kind_table[k]->trust_free != NULL)
			kind_table[k]->trust_free(trust[k]);
		trust[k] = NULL;
	}
}

/* A kind's byte, or 0 for a value that names no kind. */
static int
kind_known(enum cache_kind kind)
{
	return (int)kind >= KIND_FIRST && kind < CACHE_KIND_MAX;
}

void
kind_subject(enum cache_kind kind, const uint8_t *key, size_t klen,
    const uint8_t *req, size_t reqlen, char *buf, size_t len)
{
	size_t	i;

	snprintf(buf, len, "-");
	if (!kind_known(kind))
		return;
	if (kind_table[kind]->subject != NULL) {
		kind_table[kind]->subject(key, klen, req, reqlen, buf, len);
		return;
	}
	for (i = 0; i < klen; i++)
		if (!isprint(key[i]))
			return;
	snprintf(buf, len, "%.*s", (int)klen, (const char *)key);
}

void
kind_label(enum cache_kind kind, const uint8_t *req, size_t reqlen,
    char *buf, size_t len)
{
	snprintf(buf, len, "-");
	if (kind_known(kind) && kind_table[kind]->label != NULL &&
	    req != NULL && reqlen > 0)
		kind_table[kind]->label(req, reqlen, buf, len);
}

const char *
kind_status_name(enum cache_kind kind, int status)
{
	const char *const	*n;
	int			 i;

	if (!kind_known(kind) || (n = kind_table[kind]->status_names) == NULL ||
	    status < 0)
		return NULL;
	for (i = 0; n[i] != NULL; i++)
		if (i == status)
			return n[i];
	return NULL;
}

int
kind_status_by_name(enum cache_kind kind, const char *name)
{
	const char *const	*n;
	int			 i;

	if (!kind_known(kind) || (n = kind_table[kind]->status_names) == NULL)
		return -1;
	for (i = 0; n[i] != NULL; i++)
		if (strcmp(n[i], name) == 0)
			return i;
	return -1;
}

int
kind_pool_add(void *const trust[CACHE_KIND_MAX], const uint8_t *der,
    size_t len)
{
	int	k, rv = -1;

	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		if (kind_table[k]->pool_add != NULL && trust[k] != NULL &&
		    kind_table[k]->pool_add(trust[k], der, len) == 0)
			rv = 0;
	return rv;
}

int
kind_pool_admits(void *const trust[CACHE_KIND_MAX],
    const uint8_t *const der[], const size_t len[], size_t n, int ok[])
{
	int	*one, k, rv = 0;
	size_t	 i;

	for (i = 0; i < n; i++)
		ok[i] = 0;
	if (n == 0)
		return 0;
	if ((one = calloc(n, sizeof(*one))) == NULL)
		return -1;
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++) {
		if (kind_table[k]->pool_admits == NULL || trust[k] == NULL)
			continue;
		if (kind_table[k]->pool_admits(trust[k], der, len, n, one) ==
		    -1) {
			rv = -1;
			break;
		}
		for (i = 0; i < n; i++)
			ok[i] |= one[i];
	}
	free(one);
	if (rv == -1) {
		for (i = 0; i < n; i++)
			ok[i] = 0;
		return -1;
	}
	for (i = 0; i < n; i++)
		rv += ok[i];
	return rv;
}
