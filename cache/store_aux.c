/* SPDX-License-Identifier: Apache-2.0 */
/* Aux records: named values kept beside the entries. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/store.h"
#include "cache/store_int.h"

static int
cache_aux_key(struct cache *c, const char *name, MDB_val *k)
{
	size_t	n;

	if (name == NULL || (n = strlen(name)) == 0 ||
	    n > CACHE_KEY_MAX_BYTES) {
		cache_seterr(c, "aux name length not in 1..%d",
		    CACHE_KEY_MAX_BYTES);
		return -1;
	}
	k->mv_data = (void *)name;
	k->mv_size = n;
	return 0;
}

int
cache_aux_put(struct cache *c, const char *name, const uint8_t *val,
    size_t len)
{
	MDB_txn	*txn = NULL;
	MDB_val	 k, v;
	int	 rc, rv = -1;

	if (cache_aux_key(c, name, &k) == -1)
		goto out;
	if (len > RECORD_MAX_BLOB_BYTES || (val == NULL && len != 0)) {
		cache_seterr(c, "aux %s: %zu bytes, limit %u", name, len,
		    RECORD_MAX_BLOB_BYTES);
		goto out;
	}
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	v.mv_data = (void *)val;
	v.mv_size = len;
	if ((rc = mdb_put(txn, c->aux, &k, &v, 0)) != 0) {
		cache_setmdberr(c, "put aux", rc);
		goto out;
	}
	rv = cache_write_commit(c, &txn);
 out:
	cache_write_abort(c, txn);
	return rv;
}

int
cache_aux_get(struct cache *c, const char *name, uint8_t **val, size_t *len)
{
	MDB_val	 k, v;
	uint8_t	*p;
	int	 rc, rv = -1;

	*val = NULL;
	*len = 0;
	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (cache_aux_key(c, name, &k) == -1)
		return -1;
	if (cache_read_begin(c, "aux") == -1)
		return -1;
	if ((rc = mdb_get(c->rtxn, c->aux, &k, &v)) == MDB_NOTFOUND) {
		rv = 0;
		goto out;
	}
	if (rc != 0) {
		cache_setmdberr(c, "get aux", rc);
		goto out;
	}
	if ((p = malloc(v.mv_size != 0 ? v.mv_size : 1)) == NULL) {
		cache_seterr(c, "aux %s: %s", name, strerror(errno));
		goto out;
	}
	if (v.mv_size != 0)
		memcpy(p, v.mv_data, v.mv_size);
	*val = p;
	*len = v.mv_size;
	rv = 1;
 out:
	cache_read_end(c);
	return rv;
}

long
cache_aux_walk(struct cache *c, const char *prefix, cache_aux_cb *cb,
    void *arg)
{
	char		 name[CACHE_KEY_MAX_BYTES + 1];
	MDB_cursor	*cur = NULL;
	MDB_val		 k, v;
	size_t		 plen = prefix != NULL ? strlen(prefix) : 0;
	long		 visited = 0;
	int		 rc;

	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (plen > CACHE_KEY_MAX_BYTES) {
		cache_seterr(c, "aux walk: prefix longer than %d",
		    CACHE_KEY_MAX_BYTES);
		return -1;
	}
	if (cache_read_begin(c, "aux walk") == -1)
		return -1;
	if ((rc = mdb_cursor_open(c->rtxn, c->aux, &cur)) != 0)
		return cache_walk_end(c, NULL, rc, 0, "aux walk");
	k.mv_data = (void *)prefix;
	k.mv_size = plen;
	rc = mdb_cursor_get(cur, &k, &v, plen == 0 ? MDB_FIRST : MDB_SET_RANGE);
	c->in_walk = 1;
	for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
			break;		/* past the names with this prefix */
		if (k.mv_size > CACHE_KEY_MAX_BYTES)
			continue;
		memcpy(name, k.mv_data, k.mv_size);
		name[k.mv_size] = '\0';
		visited++;
		if (cb(name, v.mv_data, v.mv_size, arg) != 0)
			break;
	}
	return cache_walk_end(c, cur, rc, visited, "aux walk");
}
