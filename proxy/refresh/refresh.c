/* SPDX-License-Identifier: Apache-2.0 */
/* Refresh scheduler: the object and its API, the in-flight slots, the token bucket, a refresh's end and its backoff. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/rand.h>

#include "attest/util.h"
#include "cache/writer.h"
#include "proxy/refresh/backoff.h"
#include "proxy/refresh/evict.h"
#include "proxy/log.h"
#include "proxy/loop.h"
#include "proxy/metrics.h"
#include "proxy/refresh/refresh.h"
#include "proxy/refresh/refresh_int.h"
#include "proxy/refresh/uses.h"

#define REFRESH_SCHED_MAX	256	/* schedule changes written per turn */

double
refresh_rand(void)
{
	uint32_t	v;

	if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
		v = (uint32_t)random();
	return v / 4294967296.0;
}

/* Token bucket per kind, burst of one second's worth: no stampede after a restart. */
int
bucket_take(struct refresh *r, int kind)
{
	struct bucket	*b = &r->buckets[kind];
	double		 rate = r->kinds[kind].rate_limit_per_s;
	double		 burst = rate < 1 ? 1 : rate;
	struct timespec	 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (b->last.tv_sec == 0 && b->last.tv_nsec == 0)
		b->tokens = burst;
	else
		b->tokens += rate * (refresh_mono_ms(&now) -
		    refresh_mono_ms(&b->last)) / 1000.0;
	if (b->tokens > burst)
		b->tokens = burst;
	b->last = now;
	if (b->tokens < 1)
		return 0;
	b->tokens -= 1;
	return 1;
}

struct inflight *
inflight_find(struct refresh *r, int kind, const uint8_t *key, size_t klen)
{
	size_t	i;

	for (i = 0; i < REFRESH_MAX_INFLIGHT; i++)
		if (r->inflight[i].used && r->inflight[i].kind == kind &&
		    r->inflight[i].klen == klen &&
		    memcmp(r->inflight[i].key, key, klen) == 0)
			return &r->inflight[i];
	return NULL;
}

static struct inflight *
inflight_slot_free(struct refresh *r)
{
	size_t	i;

	for (i = 0; i < REFRESH_MAX_INFLIGHT; i++)
		if (!r->inflight[i].used)
			return &r->inflight[i];
	return NULL;
}

/* Claim slot f for the entry's refresh, started after the walk (start_claimed). */
void
inflight_claim(struct refresh *r, struct inflight *f, int kind,
    const uint8_t *key, size_t klen, unsigned failures, int64_t was)
{
	f->used = 1;
	f->started = 0;
	f->failures = failures;
	f->kind = (uint8_t)kind;
	f->klen = klen;
	f->r = r;
	f->ask = NULL;
	f->was = was;
	memcpy(f->key, key, klen);
}

/* A free slot, unless the kind already runs its max_inflight refreshes. */
struct inflight *
inflight_slot(struct refresh *r, int kind)
{
	size_t	i, n = 0, max = r->kinds[kind].max_inflight;

	for (i = 0; i < REFRESH_MAX_INFLIGHT; i++)
		if (r->inflight[i].used && r->inflight[i].kind == kind)
			n++;
	if (max > 0 && n >= max)
		return NULL;
	return inflight_slot_free(r);
}

/* The refresh's writes have landed: its slot is free. */
static void
slot_free(struct refresh *r, struct inflight *f)
{
	f->used = 0;
	release_soon(r);
	/* The due turn waits for this slot: its turn now. */
	if (r->slot_wait && !r->stopped) {
		struct timeval	tv = { 0, 0 };

		r->slot_wait = 0;
		evtimer_add(r->due_ev, &tv);
	}
}

static void	backoff_unstored(struct refresh *, const struct inflight *,
		    const char *, int);

/* The failed refresh's backoff is in the store (or could not be): its slot is free. */
static void
backoff_landed(const struct cache_writer_res *res, void *arg)
{
	struct inflight	*f = arg;

	if (res->rc == -1)
		backoff_unstored(f->r, f, res->err, res->map_full);
	slot_free(f->r, f);
}

/* The store did not take a failed refresh's backoff: memory holds it. */
static void
backoff_unstored(struct refresh *r, const struct inflight *f, const char *err,
    int map_full)
{
	char	hex[17];

	log_hex(hex, sizeof(hex), f->key, f->klen);
	if (map_full)
		(void)refresh_map_full(r, f->kind, time(NULL), "refresh: %s %s: "
		    "its backoff not stored, held in memory: %s",
		    cache_kind_str[f->kind], hex, err);
	else
		log_err("refresh: %s %s: its backoff not stored, held in "
		    "memory: %s", cache_kind_str[f->kind], hex, err);
}

/*
 * Whether the backoff held in memory keeps the entry m from being asked
 * now: 1 until *retry_at, else 0. *failures gets its failures so far,
 * the store's or memory's, whichever is more.
 */
int
backoff_holds(struct refresh *r, int kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, time_t now, unsigned *failures,
    int64_t *retry_at)
{
	const struct backoff_rec	*b;

	*failures = m->refresh_failures;
	*retry_at = 0;
	if (backoff_count(r->backoff) == 0 || (b = backoff_get(r->backoff,
	    uses_fp(kind, key, klen), m->fetched_at)) == NULL)
		return 0;
	if (b->failures > *failures)
		*failures = b->failures;
	*retry_at = b->retry_at;
	return b->retry_at > now;
}

/*
 * A refresh failed: its entry backs off on the schedule
 * (schedule_backoff_at), counted on from the failures the store or
 * memory holds, and the backoff is kept in memory as well as written to
 * the store, so that a store which cannot take the write does not leave
 * the entry due. The slot stays taken until the write has landed.
 */
static void
refresh_failed(struct refresh *r, struct inflight *f, int ok, const char *why,
    time_t now)
{
	const struct refresh_kind_conf	*kc = &r->kinds[f->kind];
	struct cache_meta		 m;
	uint64_t			 fp = uses_fp(f->kind, f->key, f->klen);
	unsigned			 failures;
	int64_t				 at;
	char				 hex[17];

	if (cache_get_meta(r->cache, f->kind, f->key, f->klen, &m) != 1) {
		backoff_drop(r->backoff, fp);
		slot_free(r, f);
		return;
	}
	metrics.refresh_failed++;
	/* Never refreshed on schedule, asked by name: no backoff to plan. */
	if (m.flags & CACHE_F_NO_REFRESH) {
		log_hex(hex, sizeof(hex), f->key, f->klen);
		log_info("refresh: %s %s: failed (%s)", cache_kind_str[f->kind],
		    hex, why ? why : "unknown");
		slot_free(r, f);
		return;
	}
	(void)backoff_holds(r, f->kind, f->key, f->klen, &m, now, &failures, &at);
	m.refresh_failures = failures + 1;
	m.next_refresh_at = schedule_backoff_at(&kc->sched, m.refresh_failures,
	    m.next_update, now, refresh_rand());
	backoff_set(r->backoff, fp, m.fetched_at, m.refresh_failures,
	    m.next_refresh_at);
	log_hex(hex, sizeof(hex), f->key, f->klen);
	/* A state change is logged once, the retries are not; a full map is said on its own. */
	if (m.refresh_failures == 1 && ok != REFRESH_MAP_FULL)
		log_warn("refresh: %s %s: failing (%s); valid for %lds more, "
		    "retrying with backoff", cache_kind_str[f->kind], hex,
		    why ? why : "unknown", (long)(m.next_update - now));
	else
		log_debug("refresh: %s %s: failing (%u), next try in %llds: %s",
		    cache_kind_str[f->kind], hex, m.refresh_failures,
		    (long long)(m.next_refresh_at - now), why ? why : "unknown");
	if (r->writer != NULL && cache_writer_put_meta(r->writer, f->key,
	    f->klen, &m, backoff_landed, f) == 0)
		return;
	if (cache_put_meta(r->cache, f->key, f->klen, &m) == -1)
		backoff_unstored(r, f, cache_strerror(r->cache),
		    cache_map_full(r->cache));
	slot_free(r, f);
}

static void
refresh_done(struct refresh *r, int ok, const char *why, void *arg)
{
	struct inflight	*f = arg;
	char		 hex[17];

	if (f->ask != NULL)
		ask_done(r, f, ok == REFRESH_OK, why);
	if (ok != REFRESH_OK) {
		refresh_failed(r, f, ok, why, time(NULL));
		return;
	}
	backoff_drop(r->backoff, uses_fp(f->kind, f->key, f->klen));
	metrics.refresh_ok++;
	log_hex(hex, sizeof(hex), f->key, f->klen);
	if (f->failures > 0)
		log_info("refresh: %s %s: refreshed again after %u failure(s)",
		    cache_kind_str[f->kind], hex, f->failures);
	else
		log_debug("refresh: %s %s: refreshed", cache_kind_str[f->kind],
		    hex);
	slot_free(r, f);
}

/* kind may be refreshed by this daemon (the entry itself aside). */
int
kind_refreshed(const struct refresh *r, int kind)
{
	return kind > 0 && kind < CACHE_KIND_MAX && r->have[kind] &&
	    r->kinds[kind].start != NULL;
}

/* Not asked for within idle_expire_s: left to expire (design.md 7.4). */
int
entry_idle(const struct refresh *r, int kind, const struct cache_meta *m,
    time_t now)
{
	/* Entries stored by a client miss are touched then; imports set it. */
	time_t	last_used = m->last_served_at ? m->last_served_at : m->fetched_at;

	return schedule_is_idle(last_used, r->kinds[kind].idle_expire_s, now);
}

/* Queue a schedule change for after the walk. 0, or -1 when the queue is full. */
int
sched_add(struct refresh *r, int kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, int64_t at, uint16_t set, uint16_t clear)
{
	struct cache_sched	*s;

	if (r->nsched >= REFRESH_SCHED_MAX || klen > sizeof(s->key))
		return -1;
	s = &r->sched[r->nsched++];
	s->kind = (uint8_t)kind;
	s->klen = klen;
	memcpy(s->key, key, klen);
	s->expect_at = m->next_refresh_at;
	s->next_refresh_at = at;
	s->set_flags = set;
	s->clear_flags = clear;
	return 0;
}

/* Write the queued schedule changes. 0, or -1 (logged). */
int
sched_apply(struct refresh *r)
{
	long	n = 0;

	if (r->nsched > 0 && !cache_read_only(r->cache))
		n = cache_reschedule(r->cache, r->sched, r->nsched);
	if (n == -1 && cache_map_full(r->cache))
		(void)refresh_map_full(r, 0, time(NULL), "refresh: rescheduling "
		    "%zu entries: %s", r->nsched, cache_strerror(r->cache));
	else if (n == -1)
		log_err("refresh: rescheduling entries: %s",
		    cache_strerror(r->cache));
	r->nsched = 0;
	return n == -1 ? -1 : 0;
}

/* Queue a long-expired entry for deletion after the walk. */
void
purge_add(struct refresh *r, int kind, const uint8_t *key, size_t klen)
{
	struct purge_key	*p;

	if (r->npurge >= REFRESH_WALK_CHUNK || klen > sizeof(p->key))
		return;
	p = &r->purge[r->npurge++];
	p->kind = (uint8_t)kind;
	p->klen = klen;
	memcpy(p->key, key, klen);
}

/* Delete the long-expired entries the last walk found. */
void
purge_claimed(struct refresh *r)
{
	size_t	i, done = 0;

	/* Read-only: kept, and not served (past nextUpdate). */
	if (cache_read_only(r->cache))
		r->npurge = 0;
	for (i = 0; i < r->npurge; i++) {
		if (cache_del(r->cache, r->purge[i].kind, r->purge[i].key,
		    r->purge[i].klen) == -1) {
			log_err("refresh: purging an expired entry: %s",
			    cache_strerror(r->cache));
			continue;
		}
		done++;
	}
	metrics.entries_purged += done;
	if (done > 0)
		log_info("refresh: purged %zu entr%s past nextUpdate by more "
		    "than %d days", done, done == 1 ? "y" : "ies",
		    REFRESH_PURGE_GRACE_S / 86400);
	r->npurge = 0;
}

/* Start the refreshes claimed during the last walk. */
void
start_claimed(struct refresh *r)
{
	struct inflight	*f;
	size_t		 i;

	for (i = 0; i < REFRESH_MAX_INFLIGHT; i++) {
		f = &r->inflight[i];
		if (!f->used || f->started)
			continue;
		f->started = 1;
		/* A refresh that cannot start backs off like one that failed. */
		if (r->kinds[f->kind].start(r->kinds[f->kind].arg, f->kind, f->key,
		    f->klen, refresh_done, f) == -1)
			refresh_done(r, 0, "could not build its upstream request", f);
	}
}

void
refresh_set_map_cap(struct refresh *r, size_t bytes)
{
	r->map_cap = bytes;
}

struct refresh *
refresh_new(struct event_base *base, struct cache *cache,
    struct cache_writer *writer)
{
	struct refresh	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->base = base;
	r->cache = cache;
	r->writer = writer;
	r->touches = calloc(TOUCH_SLOTS, sizeof(*r->touches));
	r->uses = uses_new(USES_MAX_SLOTS);
	r->wt = calloc(WALK_TOUCH_BATCH, sizeof(*r->wt));
	r->sched = calloc(REFRESH_SCHED_MAX, sizeof(*r->sched));
	r->purge = calloc(REFRESH_WALK_CHUNK, sizeof(*r->purge));
	r->backoff = backoff_new(BACKOFF_SLOTS);
	TAILQ_INIT(&r->asks);
	r->walk_ev = evtimer_new(base, walk_cb, r);
	r->due_ev = evtimer_new(base, due_cb, r);
	r->touch_ev = evtimer_new(base, touch_cb, r);
	r->release_ev = evtimer_new(base, release_cb, r);
	r->soon_ev = evtimer_new(base, soon_cb, r);
	r->step_ev = evtimer_new(base, step_cb, r);
	if (r->touches == NULL || r->uses == NULL || r->wt == NULL ||
	    r->sched == NULL || r->purge == NULL || r->backoff == NULL ||
	    r->walk_ev == NULL || r->due_ev == NULL || r->touch_ev == NULL ||
	    r->release_ev == NULL || r->soon_ev == NULL || r->step_ev == NULL) {
		refresh_free(r);
		return NULL;
	}
	return r;
}

void
refresh_free(struct refresh *r)
{
	size_t	k;

	if (r == NULL)
		return;
	r->stopped = 1;
	asks_free(r);
	if (r->touches != NULL)
		refresh_flush_touches(r);
	if (r->uses != NULL && r->wt != NULL) {
		walk_touches_flush(r);
		uses_write_all(r);
	}
	loop_event_free(r->walk_ev);
	loop_event_free(r->due_ev);
	loop_event_free(r->touch_ev);
	loop_event_free(r->release_ev);
	loop_event_free(r->soon_ev);
	loop_event_free(r->step_ev);
	free(r->touches);
	uses_free(r->uses);
	free(r->wt);
	free(r->sched);
	free(r->purge);
	backoff_free(r->backoff);
	for (k = 0; k < CACHE_KIND_MAX; k++) {
		evict_free(r->building[k]);
		evict_free(r->ready[k]);
	}
	free(r);
}

void
refresh_set_kind(struct refresh *r, enum cache_kind kind,
    const struct refresh_kind_conf *kc)
{
	r->kinds[kind] = *kc;
	r->have[kind] = kc->start != NULL;
}

void
refresh_start(struct refresh *r)
{
	struct timeval	tv = { 0, 0 };
	struct timeval	tt = { TOUCH_FLUSH_MS / 1000, 0 };
	struct timeval	tr = { RELEASE_CHECK_MS / 1000,
			    (RELEASE_CHECK_MS % 1000) * 1000 };

	r->stopped = 0;
	r->started = 1;
	release(r);	/* what start-up read; and the baseline of release_soon */
	evtimer_add(r->due_ev, &tv);
	evtimer_add(r->walk_ev, &tv);
	evtimer_add(r->touch_ev, &tt);
	evtimer_add(r->release_ev, &tr);
}

void
refresh_stop(struct refresh *r)
{
	r->stopped = 1;
	r->started = 0;
	evtimer_del(r->walk_ev);
	evtimer_del(r->due_ev);
	evtimer_del(r->touch_ev);
	evtimer_del(r->release_ev);
	evtimer_del(r->soon_ev);
	evtimer_del(r->step_ev);
	r->release_at = 0;
	refresh_flush_touches(r);
	walk_touches_flush(r);
	asks_stop(r, "stapled is stopping");
}

void
refresh_stats(const struct refresh *r, struct refresh_stats *s)
{
	size_t	i;

	*s = r->last;
	s->room = r->room;
	s->full_since = r->full.since;
	s->full_last = r->full.last;
	s->full_refused = r->full.refused;
	s->full_evicted = r->full.evicted;
	s->inflight = 0;
	for (i = 0; i < REFRESH_MAX_INFLIGHT; i++)
		s->inflight += r->inflight[i].used;
}
