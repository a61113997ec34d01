/* SPDX-License-Identifier: Apache-2.0 */
/* The due index: entries by next refresh, built at open, walked, moved. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "cache/store.h"
#include "cache/store_int.h"

/* ---- the due index: kind || big-endian next_refresh_at || key ---------- */

static int
cache_due_indexed(const struct cache_meta *m)
{
	return m != NULL && (m->flags & CACHE_F_NO_REFRESH) == 0;
}

/* The index key of the entry whose LMDB key (kind || key) is lk. */
static void
cache_due_key(const MDB_val *lk, int64_t at, uint8_t buf[CACHE_DUE_KEY_BYTES],
    MDB_val *dk)
{
	const uint8_t	*p = lk->mv_data;
	uint64_t	 u = at > 0 ? (uint64_t)at : 0;
	int		 i;

	buf[0] = p[0];
	for (i = 0; i < CACHE_DUE_AT_BYTES; i++)
		buf[1 + i] = (uint8_t)(u >> (8 * (CACHE_DUE_AT_BYTES - 1 - i)));
	memcpy(buf + 1 + CACHE_DUE_AT_BYTES, p + 1, lk->mv_size - 1);
	dk->mv_data = buf;
	dk->mv_size = lk->mv_size + CACHE_DUE_AT_BYTES;
}

/* The time in an index key of at least 1 + CACHE_DUE_AT_BYTES bytes. */
static int64_t
cache_due_at(const uint8_t *dk)
{
	uint64_t	u = 0;
	int		i;

	for (i = 0; i < CACHE_DUE_AT_BYTES; i++)
		u = (u << 8) | dk[1 + i];
	return u > INT64_MAX ? INT64_MAX : (int64_t)u;
}

/*
 * Inside a write transaction: move the index key of lk from where `old`
 * put it to where `m` puts it (NULL: not indexed). 0, or -1 (c->err).
 */
int
cache_txn_due_move(struct cache *c, MDB_txn *txn, const MDB_val *lk,
    const struct cache_meta *old, const struct cache_meta *m)
{
	uint8_t	ob[CACHE_DUE_KEY_BYTES], nb[CACHE_DUE_KEY_BYTES];
	MDB_val	ok, nk, v = { 0, NULL };
	int	rc, hold = cache_due_indexed(old), hnew = cache_due_indexed(m);

	if (!c->have_due)
		return 0;
	if (hold)
		cache_due_key(lk, old->next_refresh_at, ob, &ok);
	if (hnew)
		cache_due_key(lk, m->next_refresh_at, nb, &nk);
	if (hold && hnew && memcmp(ob, nb, ok.mv_size) == 0)
		return 0;
	if (hold && (rc = mdb_del(txn, c->due, &ok, NULL)) != 0 &&
	    rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "del due", rc);
		return -1;
	}
	if (hnew && (rc = mdb_put(txn, c->due, &nk, &v, 0)) != 0) {
		cache_setmdberr(c, "put due", rc);
		return -1;
	}
	return 0;
}

/* Index every meta of a store that has no index yet. 0, or an LMDB error. */
static int
cache_due_build(struct cache *c, MDB_txn *txn)
{
	struct cache_meta	 m;
	MDB_cursor		*cur;
	MDB_val			 k, v;
	int			 rc;

	c->due_built = 0;
	if ((rc = mdb_cursor_open(txn, c->meta, &cur)) != 0)
		return rc;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < 2 || k.mv_size > CACHE_LKEY_BYTES ||
		    record_meta_decode(v.mv_data, v.mv_size, &m) == -1 ||
		    m.kind != ((const uint8_t *)k.mv_data)[0] ||
		    !cache_due_indexed(&m))
			continue;
		if (cache_txn_due_move(c, txn, &k, NULL, &m) == -1) {
			rc = EIO;
			break;
		}
		c->due_built++;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/*
 * Open the due index, creating and building it on a read-write handle
 * when the store has none. 0, or an LMDB error.
 */
int
cache_open_due(struct cache *c, MDB_txn *txn)
{
	int	rc;

	c->have_due = 0;
	c->due_built = -1;
	if ((rc = mdb_dbi_open(txn, "due", 0, &c->due)) == 0) {
		c->have_due = 1;
		return 0;
	}
	if (rc != MDB_NOTFOUND || c->readonly)
		return rc == MDB_NOTFOUND ? 0 : rc;
	if ((rc = mdb_dbi_open(txn, "due", MDB_CREATE, &c->due)) != 0)
		return rc;
	c->have_due = 1;
	return cache_due_build(c, txn);
}

/* Index keys the due walk found stale, mended after it. */
struct cache_due_stale {
	size_t	n;
	size_t	len[CACHE_DUE_REPAIR_MAX];
	uint8_t	key[CACHE_DUE_REPAIR_MAX][CACHE_DUE_KEY_BYTES];
};

/*
 * Under the walk's read transaction: 1 and the meta when the index key dk
 * is the one its entry's meta gives, else 0 (stale). lk gets kind || key.
 */
static int
cache_due_entry(struct cache *c, const MDB_val *dk, uint8_t lk[CACHE_LKEY_BYTES],
    struct cache_meta *m)
{
	const uint8_t	*p = dk->mv_data;
	MDB_val		 k, v;

	if (dk->mv_size < 2 + CACHE_DUE_AT_BYTES ||
	    dk->mv_size > CACHE_DUE_KEY_BYTES)
		return 0;
	lk[0] = p[0];
	memcpy(lk + 1, p + 1 + CACHE_DUE_AT_BYTES,
	    dk->mv_size - 1 - CACHE_DUE_AT_BYTES);
	k.mv_data = lk;
	k.mv_size = dk->mv_size - CACHE_DUE_AT_BYTES;
	if (mdb_get(c->rtxn, c->meta, &k, &v) != 0 ||
	    cache_meta_read(c, CACHE_FOUND_WALK, &k, &v, m) == -1 ||
	    !cache_due_indexed(m))
		return 0;
	return cache_due_at(p) == (m->next_refresh_at > 0 ?
	    m->next_refresh_at : 0);
}

/*
 * Mend stale index keys: delete each (if still there) and put the key its
 * entry's meta gives now, if the entry is there and indexed. 0, or -1.
 */
static int
cache_due_repair(struct cache *c, const struct cache_due_stale *st)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m;
	MDB_txn			*txn = NULL;
	MDB_val			 dk, k;
	size_t			 i;
	int			 rc, have, rv = -1;

	if (st->n == 0 || c->readonly)
		return 0;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	for (i = 0; i < st->n; i++) {
		dk.mv_data = (void *)st->key[i];
		dk.mv_size = st->len[i];
		if ((rc = mdb_del(txn, c->due, &dk, NULL)) != 0 &&
		    rc != MDB_NOTFOUND) {
			cache_setmdberr(c, "repair due", rc);
			goto out;
		}
		if (dk.mv_size < 2 + CACHE_DUE_AT_BYTES)
			continue;
		lk[0] = st->key[i][0];
		memcpy(lk + 1, st->key[i] + 1 + CACHE_DUE_AT_BYTES,
		    dk.mv_size - 1 - CACHE_DUE_AT_BYTES);
		k.mv_data = lk;
		k.mv_size = dk.mv_size - CACHE_DUE_AT_BYTES;
		if ((have = cache_txn_meta(c, txn, &k, &m)) == -1 ||
		    (have && cache_txn_due_move(c, txn, &k, NULL, &m) == -1))
			goto out;
	}
	rv = cache_write_commit(c, &txn);
 out:
	cache_write_abort(c, txn);
	return rv;
}

/* Position a cursor on kind's first index key. */
static int
cache_due_first(struct cache *c, unsigned kind, MDB_cursor **cur,
    MDB_val *k, MDB_val *v)
{
	uint8_t	start = (uint8_t)kind;
	int	rc;

	if ((rc = mdb_cursor_open(c->rtxn, c->due, cur)) != 0)
		return rc;
	k->mv_data = &start;
	k->mv_size = 1;
	return mdb_cursor_get(*cur, k, v, MDB_SET_RANGE);
}

long
cache_due_walk(struct cache *c, unsigned kind, int64_t now, size_t max,
    cache_walk_cb *cb, void *arg)
{
	struct cache_due_stale		 st;	/* about 20 KiB */
	uint8_t				 lk[CACHE_LKEY_BYTES];
	struct cache_meta		 m;
	MDB_cursor			*cur = NULL;
	MDB_val				 k, v;
	long				 visited = 0, rv = -1;
	int				 rc;

	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (kind == 0 || kind > CACHE_KIND_SLOTS || !c->have_due) {
		cache_seterr(c, kind == 0 || kind > CACHE_KIND_SLOTS ?
		    "due walk: kind out of range" : "due walk: the store has "
		    "no due index (written by an older stapled; open it "
		    "read-write once)");
		return -1;
	}
	st.n = 0;
	c->due_skipped = 0;
	if (cache_read_begin(c, "due walk") == -1)
		return -1;
	rc = cache_due_first(c, kind, &cur, &k, &v);
	c->in_walk = 1;
	for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (((const uint8_t *)k.mv_data)[0] != kind ||
		    (k.mv_size > CACHE_DUE_AT_BYTES &&
		    cache_due_at(k.mv_data) > (now > 0 ? now : 0)))
			break;		/* past this kind, or not due yet */
		if (cache_due_entry(c, &k, lk, &m) != 1) {
			c->due_skipped++;
			if (st.n < CACHE_DUE_REPAIR_MAX &&
			    k.mv_size <= CACHE_DUE_KEY_BYTES) {
				memcpy(st.key[st.n], k.mv_data, k.mv_size);
				st.len[st.n++] = k.mv_size;
			}
			continue;
		}
		visited++;
		if (cb(kind, lk + 1, k.mv_size - 1 - CACHE_DUE_AT_BYTES, &m,
		    arg) != 0 || (max != 0 && (size_t)visited >= max))
			break;
	}
	rv = cache_walk_end(c, cur, rc, visited, "due walk");
	if (rv != -1 && cache_due_repair(c, &st) == -1)
		rv = -1;
	return rv;
}

size_t
cache_due_skipped(const struct cache *c)
{
	return c->due_skipped;
}

long
cache_due_built(const struct cache *c)
{
	return c->due_built;
}

/* One schedule change inside a write transaction: 1 changed, 0 not, -1. */
static int
cache_txn_resched(struct cache *c, MDB_txn *txn, const struct cache_sched *s)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m, old;
	MDB_val			 k;
	int			 have;

	if (cache_lkey(c, s->kind, s->key, s->klen, lk, &k) == -1)
		return -1;
	if ((have = cache_txn_meta(c, txn, &k, &old)) != 1)
		return have;
	if (old.next_refresh_at != s->expect_at)
		return 0;	/* written since the caller read it */
	m = old;
	m.next_refresh_at = s->next_refresh_at;
	m.flags = (uint16_t)((m.flags | s->set_flags) & ~s->clear_flags);
	if (cache_txn_put_meta(c, txn, &k, &old, &m) == -1)
		return -1;
	return 1;
}

long
cache_reschedule(struct cache *c, const struct cache_sched *s, size_t n)
{
	MDB_txn	*txn = NULL;
	size_t	 i;
	long	 changed = 0, rv = -1;
	int	 rc;

	if (n == 0)
		return 0;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	for (i = 0; i < n; i++) {
		if ((rc = cache_txn_resched(c, txn, &s[i])) == -1)
			goto out;
		changed += rc;
	}
	rc = cache_write_end(c, &txn, (size_t)changed);
	if (rc == -1)
		goto out;
	rv = changed;
 out:
	cache_write_abort(c, txn);
	return rv;
}
