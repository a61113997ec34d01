/* SPDX-License-Identifier: Apache-2.0 */
/* Hits and uses batched into the store's writes: the touch table, and the uses that wait for the walk. */
#include <config.h>

#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "attest/util.h"
#include "proxy/refresh/evict.h"
#include "proxy/log.h"
#include "proxy/refresh/refresh_int.h"
#include "proxy/refresh/uses.h"

/*
 * Unwritten hits are written once TOUCH_BATCH distinct entries wait (or
 * every TOUCH_FLUSH_MS). Each is a meta record somewhere in the store, so
 * a write transaction copies about one leaf page per entry, and the event
 * loop waits for it: with hits spread over 1,000,000 entries, batches of
 * 3,072 (the table three quarters full) held every answer for hundreds of
 * milliseconds twice a second, the p99 of the million-entry benchmark.
 */
#define TOUCH_BATCH		256
#define TOUCH_HASH_BYTES	16	/* of a key, hashed for its touch slot */
/*
 * A hit on an entry whose last use the store already holds as this recent
 * is not written again (refresh_hit); shorter when idle_expire_s / 4 is.
 * Not near max_entries: from TOUCH_EXACT_PCT of it on, eviction picks by
 * the last use, and every hit is written. Nor on an entry on probation
 * (proxy/refresh/evict.h): its second ask protects it from eviction, written once
 * in its life, with its neighbours' by the walk.
 */
#define TOUCH_RESOLUTION_S	3600
#define TOUCH_RESOLUTION_DIV	4
#define TOUCH_EXACT_PCT		90

/*
 * A use waiting for the walk (refresh_hit): taken, and its touch queued
 * with the walk's time; 1 when there was one. The caller makes room for
 * a chunk's worth first (walk_touches_room).
 */
int
walk_use(struct refresh *r, enum cache_kind kind, const uint8_t *key,
    size_t klen, time_t now)
{
	struct cache_touch	*t;

	/* No use waits (a quiet store): not even the hash. */
	if (uses_count(r->uses) == 0 || r->nwt >= WALK_TOUCH_BATCH ||
	    !uses_take(r->uses, uses_fp(kind, key, klen)))
		return 0;
	t = &r->wt[r->nwt++];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->klen = klen;
	memcpy(t->key, key, klen);
	t->served = 1;
	t->last_served_at = now;
	return 1;
}

/* The slot of fp in the landing table, or the empty one where it would go. */
static size_t
landing_slot(const struct refresh *r, uint64_t fp)
{
	size_t	mask = LANDING_SLOTS - 1, i = (size_t)fp & mask;

	while (r->landing[i].fp != 0 && r->landing[i].fp != fp)
		i = (i + 1) & mask;
	return i;
}

int64_t
landing_at(const struct refresh *r, uint64_t fp)
{
	if (r->nlanding == 0)
		return 0;
	return r->landing[landing_slot(r, fp)].at;
}

/* A batch of n touches goes to the writer: remember their uses until it lands. */
static void
landing_add(struct refresh *r, const struct cache_touch *t, size_t n)
{
	struct landing	*l;
	size_t		 i;

	r->landing_batches++;
	for (i = 0; i < n; i++) {
		if (t[i].klen == 0)
			continue;
		if ((r->nlanding + 1) * 4 > LANDING_SLOTS * 3)
			return;
		l = &r->landing[landing_slot(r, uses_fp(t[i].kind, t[i].key,
		    t[i].klen))];
		if (l->fp == 0) {
			l->fp = uses_fp(t[i].kind, t[i].key, t[i].klen);
			r->nlanding++;
		}
		if (t[i].last_served_at > l->at)
			l->at = t[i].last_served_at;
	}
}

static void	touches_unstored(struct refresh *, const char *, int);

/* No state of the refresh: refresh_free's last batch lands after it. */
static void
touches_landed(const struct cache_writer_res *res, void *arg)
{
	struct refresh	*r = arg;	/* NULL: flushed stopped, perhaps freed since */

	if (res->rc == -1)
		touches_unstored(r, res->err, res->map_full);
	if (r == NULL)
		return;
	if (r->landing_batches > 0 && --r->landing_batches == 0 &&
	    r->nlanding > 0) {
		memset(r->landing, 0, sizeof(r->landing));
		r->nlanding = 0;
	}
	/* A batch's metas are random pages: few hits, let them go. */
	release_soon(r);
}

/* A batch of hits the store did not take (r NULL: the refresh is stopped). */
static void
touches_unstored(struct refresh *r, const char *err, int map_full)
{
	if (r != NULL && map_full)
		(void)refresh_map_full(r, 0, time(NULL), "refresh: recording "
		    "hits: %s", err);
	else
		log_err("refresh: recording hits: %s", err);
}

/*
 * Write n touches (empty slots skipped) through the writer, or here
 * without one. Until the writer's batch lands, its uses are in the
 * landing table: an eviction in between reads the store before them.
 */
static void
touches_write(struct refresh *r, const struct cache_touch *t, size_t n)
{
	/* A store opened read-only keeps no use: dropped. */
	if (cache_read_only(r->cache))
		return;
	if (r->writer != NULL && cache_writer_touch(r->writer, t, n,
	    touches_landed, r->stopped ? NULL : r) == 0) {
		if (!r->stopped)
			landing_add(r, t, n);
		return;
	}
	if (cache_touch(r->cache, t, n) == -1)
		touches_unstored(r->stopped ? NULL : r,
		    cache_strerror(r->cache), cache_map_full(r->cache));
}

void
refresh_flush_touches(struct refresh *r)
{
	if (r == NULL || r->ntouches == 0)
		return;
	/* The table is hashed: the used slots are anywhere in it (empty ones are skipped). */
	touches_write(r, r->touches, TOUCH_SLOTS);
	memset(r->touches, 0, sizeof(*r->touches) * TOUCH_SLOTS);
	r->ntouches = 0;
}

/* The uses the walk found, in key order: one transaction. */
void
walk_touches_flush(struct refresh *r)
{
	if (r->nwt == 0)
		return;
	touches_write(r, r->wt, r->nwt);
	r->nwt = 0;
}

/* Before a chunk of the walk: room for a use from each of its entries. */
void
walk_touches_room(struct refresh *r, size_t chunk)
{
	if (r->nwt + chunk > WALK_TOUCH_BATCH)
		walk_touches_flush(r);
}

/*
 * Every use still waiting, written now (refresh_free, once the loop has
 * answered its last clients): a walk of the whole store that only looks
 * for them, WALK_TOUCH_BATCH entries a transaction at most. About 3 s at
 * a million entries.
 */
struct uses_walk {
	struct refresh	*r;
	time_t		 now;
	uint8_t		 after[1 + CACHE_KEY_MAX_BYTES];
	size_t		 afterlen;
};

static int
uses_walk_one(enum cache_kind kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, void *arg)
{
	struct uses_walk	*uw = arg;

	(void)m;
	uw->after[0] = (uint8_t)kind;
	memcpy(uw->after + 1, key, klen);
	uw->afterlen = 1 + klen;
	if (kind < CACHE_KIND_MAX && klen <= CACHE_KEY_MAX_BYTES)
		(void)walk_use(uw->r, kind, key, klen, uw->now);
	return 0;
}

void
uses_write_all(struct refresh *r)
{
	struct uses_walk	uw;
	size_t			waiting = uses_count(r->uses);
	long			n;

	if (waiting == 0 || cache_read_only(r->cache)) {
		uses_clear(r->uses);
		return;
	}
	memset(&uw, 0, sizeof(uw));
	uw.r = r;
	uw.now = time(NULL);
	log_info("refresh: writing %zu recorded use(s) the walk had not reached",
	    waiting);
	do {
		walk_touches_flush(r);
		n = cache_walk(r->cache, 0, uw.afterlen ? uw.after : NULL,
		    uw.afterlen, WALK_TOUCH_BATCH, uses_walk_one, &uw);
		if (n == -1)
			log_err("refresh: writing recorded uses: %s",
			    cache_strerror(r->cache));
	} while (n == WALK_TOUCH_BATCH && uses_count(r->uses) > 0);
	walk_touches_flush(r);
	/* What no entry matched was deleted since: nothing to write. */
	uses_clear(r->uses);
}

void
touch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct refresh	*r = arg;
	struct timeval	 tv = { TOUCH_FLUSH_MS / 1000, 0 };

	(void)fd;
	(void)what;
	refresh_flush_touches(r);
	evtimer_add(r->touch_ev, &tv);
}

/* A touch table slot's hash: the key's first bytes suffice (keys are digests). */
static uint32_t
touch_hash(const uint8_t *key, size_t klen)
{
	return util_fnv1a32(key, klen < TOUCH_HASH_BYTES ? klen : TOUCH_HASH_BYTES);
}

/* uses more uses of kind+key, the last at now, into the table. */
static void
touch_add(struct refresh *r, enum cache_kind kind, const uint8_t *key,
    size_t klen, time_t now, uint64_t uses)
{
	struct cache_touch	*t;
	uint32_t		 h;
	size_t			 i, slot;

	if (klen > CACHE_KEY_MAX_BYTES)
		return;
	h = touch_hash(key, klen);
	for (i = 0; i < TOUCH_SLOTS; i++) {
		slot = (h + i) % TOUCH_SLOTS;
		t = &r->touches[slot];
		if (t->klen == 0) {
			t->kind = kind;
			t->klen = klen;
			memcpy(t->key, key, klen);
			r->ntouches++;
			break;
		}
		if (t->kind == kind && t->klen == klen && memcmp(t->key, key, klen) == 0)
			break;
	}
	if (i == TOUCH_SLOTS) {
		refresh_flush_touches(r);
		touch_add(r, kind, key, klen, now, uses);
		return;
	}
	t->served += uses;
	t->last_served_at = now;
	if (r->ntouches >= TOUCH_BATCH)
		refresh_flush_touches(r);
}

void
refresh_touch(struct refresh *r, enum cache_kind kind, const uint8_t *key,
    size_t klen, time_t now)
{
	touch_add(r, kind, key, klen, now, 1);
}

void
refresh_hit(struct refresh *r, enum cache_kind kind, const uint8_t *key,
    size_t klen, const struct cache_meta *m, time_t now)
{
	const struct refresh_kind_conf	*kc = &r->kinds[kind];
	time_t				 res = TOUCH_RESOLUTION_S, idle;
	int				 exact;

	r->hits++;
	idle = (time_t)kc->idle_expire_s / TOUCH_RESOLUTION_DIV;
	if (idle > 0 && idle < res)
		res = idle;
	exact = kc->max_entries > 0 &&
	    r->count[kind] >= kc->max_entries / 100 * TOUCH_EXACT_PCT;
	/*
	 * An import's first ask stands for two: the operator who imported it
	 * asked for it first (it is protected from eviction once asked).
	 */
	if ((m->flags & CACHE_F_IMPORTED) && m->served_count < EVICT_PROTECT_USES &&
	    touch_find(r, kind, key, klen) == NULL) {
		touch_add(r, kind, key, klen, now,
		    EVICT_PROTECT_USES - m->served_count);
		return;
	}
	if (exact || m->last_served_at == 0 || (m->flags & CACHE_F_IMPORTED) ||
	    touch_find(r, kind, key, klen) != NULL) {
		refresh_touch(r, kind, key, klen, now);
		return;
	}
	/* Recorded recently: nothing to write, unless it promotes the entry. */
	if (now - m->last_served_at < res && now >= m->last_served_at &&
	    evict_tier(m) == EVICT_PROTECTED)
		return;
	/* Written by the walk, with its neighbours'; as it comes when stopped or full. */
	if (r->stopped || uses_add(r->uses, uses_fp(kind, key, klen)) == -1)
		refresh_touch(r, kind, key, klen, now);
}

/*
 * The use the walk took for kind+key and has not yet written, or NULL: a
 * scan of at most WALK_TOUCH_BATCH, for an eviction's last check.
 */
const struct cache_touch *
walk_touch_find(const struct refresh *r, int kind, const uint8_t *key,
    size_t klen)
{
	size_t	i;

	for (i = 0; i < r->nwt; i++)
		if (r->wt[i].kind == kind && r->wt[i].klen == klen &&
		    memcmp(r->wt[i].key, key, klen) == 0)
			return &r->wt[i];
	return NULL;
}

/* The hit not yet written for kind+key, or NULL. */
const struct cache_touch *
touch_find(const struct refresh *r, int kind, const uint8_t *key, size_t klen)
{
	const struct cache_touch	*t;
	uint32_t			 h = touch_hash(key, klen);
	size_t				 i;

	for (i = 0; i < TOUCH_SLOTS; i++) {
		t = &r->touches[(h + i) % TOUCH_SLOTS];
		if (t->klen == 0)
			return NULL;
		if (t->kind == kind && t->klen == klen &&
		    memcmp(t->key, key, klen) == 0)
			return t;
	}
	return NULL;
}
