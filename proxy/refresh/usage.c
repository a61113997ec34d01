/* SPDX-License-Identifier: Apache-2.0 */
/* Usage: the object, the hit path (usage_hit), the touch table of unwritten hits, and the batches in flight to the writer. */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "attest/util.h"
#include "proxy/refresh/evict.h"
#include "proxy/log.h"
#include "proxy/loop.h"
#include "proxy/refresh/schedule.h"
#include "proxy/refresh/usage.h"
#include "proxy/refresh/usage_int.h"
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
 * is not written again (usage_hit); shorter when idle_expire_s / 4 is.
 * Not near max_entries: from TOUCH_EXACT_PCT of it on, eviction picks by
 * the last use, and every hit is written. Nor on an entry on probation
 * (proxy/refresh/evict.h): its second ask protects it from eviction, written once
 * in its life, with its neighbours' by the walk.
 */
#define TOUCH_RESOLUTION_S	3600
#define TOUCH_RESOLUTION_DIV	4
#define TOUCH_EXACT_PCT		90

/* The slot of fp in the landing table, or the empty one where it would go. */
static size_t
landing_slot(const struct usage *u, uint64_t fp)
{
	size_t	mask = LANDING_SLOTS - 1, i = (size_t)fp & mask;

	while (u->landing[i].fp != 0 && u->landing[i].fp != fp)
		i = (i + 1) & mask;
	return i;
}

int64_t
usage_landing_at(const struct usage *u, uint64_t fp)
{
	if (u->nlanding == 0)
		return 0;
	return u->landing[landing_slot(u, fp)].at;
}

/* A batch of n touches goes to the writer: remember their uses until it lands. */
static void
landing_add(struct usage *u, const struct cache_touch *t, size_t n)
{
	struct landing	*l;
	size_t		 i;

	u->landing_batches++;
	for (i = 0; i < n; i++) {
		if (t[i].klen == 0)
			continue;
		if ((u->nlanding + 1) * 4 > LANDING_SLOTS * 3)
			return;
		l = &u->landing[landing_slot(u, uses_fp(t[i].kind, t[i].key,
		    t[i].klen))];
		if (l->fp == 0) {
			l->fp = uses_fp(t[i].kind, t[i].key, t[i].klen);
			u->nlanding++;
		}
		if (t[i].last_served_at > l->at)
			l->at = t[i].last_served_at;
	}
}

static void	touches_unstored(struct usage *, const char *, int);

/* No state of the usage table: usage_free's last batch lands after it. */
static void
touches_landed(const struct cache_writer_res *res, void *arg)
{
	struct usage	*u = arg;	/* NULL: flushed stopped, perhaps freed since */

	if (res->rc == -1)
		touches_unstored(u, res->err, res->map_full);
	if (u == NULL)
		return;
	if (u->landing_batches > 0 && --u->landing_batches == 0 &&
	    u->nlanding > 0) {
		memset(u->landing, 0, sizeof(u->landing));
		u->nlanding = 0;
	}
	/* A batch's metas are random pages: few hits, let them go. */
	if (u->landed != NULL)
		u->landed(u->landed_arg);
}

/* A batch of hits the store did not take (u NULL: usage is stopped). */
static void
touches_unstored(struct usage *u, const char *err, int map_full)
{
	if (u != NULL && map_full)
		(void)usage_map_full(u, 0, time(NULL), "refresh: recording "
		    "hits: %s", err);
	else
		log_err("refresh: recording hits: %s", err);
}

/*
 * Write n touches (empty slots skipped) through the writer, or here
 * without one. Until the writer's batch lands, its uses are in the
 * landing table: an eviction in between reads the store before them.
 */
void
usage_touches_write(struct usage *u, const struct cache_touch *t, size_t n)
{
	/* A store opened read-only keeps no use: dropped. */
	if (cache_read_only(u->cache))
		return;
	if (u->writer != NULL && cache_writer_touch(u->writer, t, n,
	    touches_landed, u->stopped ? NULL : u) == 0) {
		if (!u->stopped)
			landing_add(u, t, n);
		return;
	}
	if (cache_touch(u->cache, t, n) == -1)
		touches_unstored(u->stopped ? NULL : u,
		    cache_strerror(u->cache), cache_map_full(u->cache));
}

void
usage_flush(struct usage *u)
{
	if (u == NULL || u->ntouches == 0)
		return;
	/* The table is hashed: the used slots are anywhere in it (empty ones are skipped). */
	usage_touches_write(u, u->touches, TOUCH_SLOTS);
	memset(u->touches, 0, sizeof(*u->touches) * TOUCH_SLOTS);
	u->ntouches = 0;
}

static void
touch_cb(evutil_socket_t fd, short what, void *arg)
{
	struct usage	*u = arg;
	struct timeval	 tv = { TOUCH_FLUSH_MS / 1000, 0 };

	(void)fd;
	(void)what;
	usage_flush(u);
	evtimer_add(u->touch_ev, &tv);
}

/* A touch table slot's hash: the key's first bytes suffice (keys are digests). */
static uint32_t
touch_hash(const uint8_t *key, size_t klen)
{
	return util_fnv1a32(key, klen < TOUCH_HASH_BYTES ? klen : TOUCH_HASH_BYTES);
}

/* uses more uses of kind+key, the last at now, into the table. */
static void
touch_add(struct usage *u, enum cache_kind kind, const uint8_t *key,
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
		t = &u->touches[slot];
		if (t->klen == 0) {
			t->kind = kind;
			t->klen = klen;
			memcpy(t->key, key, klen);
			u->ntouches++;
			break;
		}
		if (t->kind == kind && t->klen == klen && memcmp(t->key, key, klen) == 0)
			break;
	}
	if (i == TOUCH_SLOTS) {
		usage_flush(u);
		touch_add(u, kind, key, klen, now, uses);
		return;
	}
	t->served += uses;
	t->last_served_at = now;
	if (u->ntouches >= TOUCH_BATCH)
		usage_flush(u);
}

void
usage_touch(struct usage *u, enum cache_kind kind, const uint8_t *key,
    size_t klen, time_t now)
{
	touch_add(u, kind, key, klen, now, 1);
}

void
usage_hit(struct usage *u, enum cache_kind kind, const uint8_t *key,
    size_t klen, const struct cache_meta *m, time_t now)
{
	const struct usage_kind		*kc = &u->kinds[kind];
	time_t				 res = TOUCH_RESOLUTION_S, idle;
	int				 exact;

	u->hits++;
	idle = (time_t)kc->idle_expire_s / TOUCH_RESOLUTION_DIV;
	if (idle > 0 && idle < res)
		res = idle;
	exact = kc->max_entries > 0 &&
	    u->count[kind] >= kc->max_entries / 100 * TOUCH_EXACT_PCT;
	/*
	 * An import's first ask stands for two: the operator who imported it
	 * asked for it first (it is protected from eviction once asked).
	 */
	if ((m->flags & CACHE_F_IMPORTED) && m->served_count < EVICT_PROTECT_USES &&
	    usage_touch_find(u, kind, key, klen) == NULL) {
		touch_add(u, kind, key, klen, now,
		    EVICT_PROTECT_USES - m->served_count);
		return;
	}
	if (exact || m->last_served_at == 0 || (m->flags & CACHE_F_IMPORTED) ||
	    usage_touch_find(u, kind, key, klen) != NULL) {
		usage_touch(u, kind, key, klen, now);
		return;
	}
	/* Recorded recently: nothing to write, unless it promotes the entry. */
	if (now - m->last_served_at < res && now >= m->last_served_at &&
	    evict_tier(m) == EVICT_PROTECTED)
		return;
	/* Written by the walk, with its neighbours'; as it comes when stopped or full. */
	if (u->stopped || uses_add(u->uses, uses_fp(kind, key, klen)) == -1)
		usage_touch(u, kind, key, klen, now);
}

/* The hit not yet written for kind+key, or NULL. */
const struct cache_touch *
usage_touch_find(const struct usage *u, int kind, const uint8_t *key, size_t klen)
{
	const struct cache_touch	*t;
	uint32_t			 h = touch_hash(key, klen);
	size_t				 i;

	for (i = 0; i < TOUCH_SLOTS; i++) {
		t = &u->touches[(h + i) % TOUCH_SLOTS];
		if (t->klen == 0)
			return NULL;
		if (t->kind == kind && t->klen == klen &&
		    memcmp(t->key, key, klen) == 0)
			return t;
	}
	return NULL;
}

unsigned long
usage_hits(const struct usage *u)
{
	return u->hits;
}

int
usage_idle(const struct usage *u, int kind, const struct cache_meta *m,
    time_t now)
{
	/* Entries stored by a client miss are touched then; imports set it. */
	time_t	last_used = m->last_served_at ? m->last_served_at : m->fetched_at;

	return schedule_is_idle(last_used, u->kinds[kind].idle_expire_s, now);
}

/* ---- the object ---------------------------------------------------------------- */

struct usage *
usage_new(struct event_base *base, struct cache *cache,
    struct cache_writer *writer, usage_landed_fn *landed, void *arg)
{
	struct usage	*u;

	if ((u = calloc(1, sizeof(*u))) == NULL)
		return NULL;
	u->base = base;
	u->cache = cache;
	u->writer = writer;
	u->landed = landed;
	u->landed_arg = arg;
	u->touches = calloc(TOUCH_SLOTS, sizeof(*u->touches));
	u->uses = uses_new(USES_MAX_SLOTS);
	u->wt = calloc(WALK_TOUCH_BATCH, sizeof(*u->wt));
	u->touch_ev = evtimer_new(base, touch_cb, u);
	if (u->touches == NULL || u->uses == NULL || u->wt == NULL ||
	    u->touch_ev == NULL) {
		usage_free(u);
		return NULL;
	}
	return u;
}

void
usage_free(struct usage *u)
{
	size_t	k;

	if (u == NULL)
		return;
	u->stopped = 1;
	if (u->touches != NULL)
		usage_flush(u);
	if (u->uses != NULL && u->wt != NULL) {
		usage_walk_flush(u);
		usage_write_all(u);
	}
	loop_event_free(u->touch_ev);
	free(u->touches);
	uses_free(u->uses);
	free(u->wt);
	for (k = 0; k < CACHE_KIND_MAX; k++) {
		evict_free(u->building[k]);
		evict_free(u->ready[k]);
	}
	free(u);
}

void
usage_set_kind(struct usage *u, enum cache_kind kind, int refreshed,
    long idle_expire_s, size_t max_entries)
{
	u->kinds[kind].refreshed = refreshed;
	u->kinds[kind].idle_expire_s = idle_expire_s;
	u->kinds[kind].max_entries = max_entries;
}

void
usage_start(struct usage *u)
{
	struct timeval	tv = { TOUCH_FLUSH_MS / 1000, 0 };

	u->stopped = 0;
	evtimer_add(u->touch_ev, &tv);
}

void
usage_stop(struct usage *u)
{
	u->stopped = 1;
	evtimer_del(u->touch_ev);
	usage_flush(u);
	usage_walk_flush(u);
}
