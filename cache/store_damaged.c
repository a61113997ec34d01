/* SPDX-License-Identifier: Apache-2.0 */
/* Damaged records: those whose bytes fail their own check, noted once by whichever read meets them, taken by the owner, dropped by a write. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/store.h"
#include "cache/store_int.h"

struct cache_damaged_note {
	struct cache_damaged	d;
	int			taken;	/* by cache_damaged_take */
};

void
cache_damaged_init(struct cache *c)
{
	pthread_mutex_init(&c->damaged_mu, NULL);
}

void
cache_damaged_fini(struct cache *c)
{
	pthread_mutex_destroy(&c->damaged_mu);
	free(c->notes);
	c->notes = NULL;
}

/* The notes were about a file no longer open (cache_reset). */
void
cache_damaged_forget_all(struct cache *c)
{
	pthread_mutex_lock(&c->damaged_mu);
	c->nnotes = 0;
	pthread_mutex_unlock(&c->damaged_mu);
}

/* The note about kind || key in o (under its lock), or NULL. */
static struct cache_damaged_note *
note_find(struct cache *o, const uint8_t *lk, size_t lklen)
{
	size_t	i;

	for (i = 0; i < o->nnotes; i++)
		if (o->notes[i].d.kind == lk[0] &&
		    o->notes[i].d.klen == lklen - 1 &&
		    memcmp(o->notes[i].d.key, lk + 1, lklen - 1) == 0)
			return &o->notes[i];
	return NULL;
}

/*
 * Note the entry under the LMDB key lk as damaged, once, and wake the
 * owner; the handle's error says so. A key that names no kind cannot be looked up or dropped: left
 * to the walk's count of records skipped.
 */
static void
cache_note_damaged(struct cache *c, enum cache_found found,
    const MDB_val *lk, const char *part, const char *why)
{
	struct cache			*o = cache_origin(c);
	struct cache_damaged_note	*n;
	const uint8_t			*p = lk->mv_data;
	uint64_t			 one = 1;
	char				 kl[CACHE_KIND_LABEL_BYTES];

	/* For a caller that says why it found nothing (staplectl show). */
	cache_seterr(c, "%s entry: its %s record fails its check (%s): "
	    "damaged", cache_kind_label(c, lk->mv_size >= 1 ? p[0] : 0, kl),
	    part, why);
	if (lk->mv_size < 2 || lk->mv_size > CACHE_LKEY_BYTES || p[0] == 0 ||
	    p[0] > CACHE_KIND_SLOTS)
		return;
	pthread_mutex_lock(&o->damaged_mu);
	if (o->notes == NULL)
		o->notes = calloc(CACHE_DAMAGED_MAX, sizeof(*o->notes));
	if (o->notes == NULL || o->nnotes == CACHE_DAMAGED_MAX ||
	    note_find(o, p, lk->mv_size) != NULL) {
		pthread_mutex_unlock(&o->damaged_mu);
		return;
	}
	n = &o->notes[o->nnotes++];
	memset(n, 0, sizeof(*n));
	n->d.kind = p[0];
	n->d.klen = lk->mv_size - 1;
	memcpy(n->d.key, p + 1, n->d.klen);
	n->d.found = found;
	n->d.part = part;
	n->d.why = why;
	pthread_mutex_unlock(&o->damaged_mu);
	if (o->damage_efd != -1)
		(void)!write(o->damage_efd, &one, sizeof(one));
}

int
cache_meta_read(struct cache *c, enum cache_found found, const MDB_val *lk,
    const MDB_val *v, struct cache_meta *m)
{
	const char	*why;

	if ((why = record_meta_fault(v->mv_data, v->mv_size)) == NULL) {
		(void)record_meta_decode(v->mv_data, v->mv_size, m);
		if (m->kind == ((const uint8_t *)lk->mv_data)[0])
			return 0;
		why = "kind differs from its key's";
	}
	cache_note_damaged(c, found, lk, "meta", why);
	return -1;
}

int
cache_body_read(struct cache *c, enum cache_found found, const MDB_val *lk,
    const MDB_val *v, struct cache_body *b)
{
	const char	*why;

	if (record_body_decode(v->mv_data, v->mv_size, b) == 0)
		return 0;
	why = record_body_fault(v->mv_data, v->mv_size);
	cache_note_damaged(c, found, lk, "body", why != NULL ? why : "?");
	return -1;
}

size_t
cache_damaged_take(struct cache *c, struct cache_damaged *out, size_t max)
{
	size_t	i, n = 0;

	if (c->of != NULL)
		return 0;
	pthread_mutex_lock(&c->damaged_mu);
	for (i = 0; i < c->nnotes && n < max; i++)
		if (!c->notes[i].taken) {
			c->notes[i].taken = 1;
			out[n++] = c->notes[i].d;
		}
	pthread_mutex_unlock(&c->damaged_mu);
	return n;
}

/* Forget the note about lk: the record was dropped, or is sound again. */
static void
cache_damaged_forget(struct cache *c, const MDB_val *lk)
{
	struct cache			*o = cache_origin(c);
	struct cache_damaged_note	*n;

	pthread_mutex_lock(&o->damaged_mu);
	if ((n = note_find(o, lk->mv_data, lk->mv_size)) != NULL)
		*n = o->notes[--o->nnotes];
	pthread_mutex_unlock(&o->damaged_mu);
}

/*
 * In txn: whether the entry under lk is sound (1: meta and body pass
 * their checks), absent (0: neither is there), or damaged (-1: any
 * other case, *have_meta set when its meta decodes, into *m). An LMDB
 * error other than not found sets *rcp.
 */
static int
cache_entry_judge(struct cache *c, MDB_txn *txn, const MDB_val *lk,
    struct cache_meta *m, int *have_meta, int *rcp)
{
	struct cache_body	b;
	MDB_val			k = *lk, mv, bv;
	int			rm, rb;

	*have_meta = 0;
	*rcp = 0;
	rm = mdb_get(txn, c->meta, &k, &mv);
	rb = mdb_get(txn, c->body, &k, &bv);
	if ((rm != 0 && rm != MDB_NOTFOUND) || (rb != 0 && rb != MDB_NOTFOUND)) {
		*rcp = rm != 0 && rm != MDB_NOTFOUND ? rm : rb;
		return -1;
	}
	if (rm == MDB_NOTFOUND && rb == MDB_NOTFOUND)
		return 0;
	*have_meta = rm == 0 && record_meta_decode(mv.mv_data, mv.mv_size,
	    m) == 0 && m->kind == ((const uint8_t *)lk->mv_data)[0];
	if (*have_meta && rb == 0 &&
	    record_body_decode(bv.mv_data, bv.mv_size, &b) == 0)
		return 1;
	return -1;
}

int
cache_drop_damaged(struct cache *c, unsigned kind, const uint8_t *key,
    size_t klen)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m;
	MDB_txn			*txn = NULL;
	MDB_val			 k;
	int			 have_meta, judged, rc, rv = -1;

	if (cache_lkey(c, kind, key, klen, lk, &k) == -1)
		goto out;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	judged = cache_entry_judge(c, txn, &k, &m, &have_meta, &rc);
	if (rc != 0) {
		cache_setmdberr(c, "drop damaged", rc);
		goto out;
	}
	if (judged >= 0) {
		rv = 0;
		goto forget;
	}
	/* An unreadable meta's due key is the due walk's to mend. */
	if (cache_txn_del(c, txn, &k, have_meta ? &m : NULL,
	    "drop damaged") == -1)
		goto out;
	if (cache_write_commit(c, &txn) == -1)
		goto out;
	rv = 1;
 forget:
	cache_damaged_forget(c, &k);
 out:
	cache_write_abort(c, txn);
	return rv;
}
