/* SPDX-License-Identifier: Apache-2.0 */
/* The refresh schedule: the object, the in-flight slots, the token buckets, the queues of schedule changes and purges, the backoff held in memory. */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <openssl/rand.h>

#include "proxy/refresh/backoff.h"
#include "proxy/log.h"
#include "proxy/loop.h"
#include "proxy/metrics.h"
#include "proxy/refresh/sched.h"
#include "proxy/refresh/sched_int.h"
#include "proxy/refresh/usage.h"
#include "proxy/refresh/uses.h"

double
sched_rand(void)
{
	uint32_t	v;

	if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
		v = (uint32_t)random();
	return v / 4294967296.0;
}

/* A CLOCK_MONOTONIC reading in milliseconds. */
static int64_t
mono_ms(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

/* Token bucket per kind, burst of one second's worth: no stampede after a restart. */
int
sched_bucket_take(struct sched *s, int kind)
{
	struct bucket	*b = &s->buckets[kind];
	double		 rate = s->kinds[kind].rate_limit_per_s;
	double		 burst = rate < 1 ? 1 : rate;
	struct timespec	 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (b->last.tv_sec == 0 && b->last.tv_nsec == 0)
		b->tokens = burst;
	else
		b->tokens += rate * (mono_ms(&now) -
		    mono_ms(&b->last)) / 1000.0;
	if (b->tokens > burst)
		b->tokens = burst;
	b->last = now;
	if (b->tokens < 1)
		return 0;
	b->tokens -= 1;
	return 1;
}

struct sched_slot *
sched_slot_find(struct sched *s, int kind, const uint8_t *key, size_t klen)
{
	size_t	i;

	for (i = 0; i < REFRESH_MAX_INFLIGHT; i++)
		if (s->slots[i].used && s->slots[i].kind == kind &&
		    s->slots[i].klen == klen &&
		    memcmp(s->slots[i].key, key, klen) == 0)
			return &s->slots[i];
	return NULL;
}

static struct sched_slot *
slot_free_any(struct sched *s)
{
	size_t	i;

	for (i = 0; i < REFRESH_MAX_INFLIGHT; i++)
		if (!s->slots[i].used)
			return &s->slots[i];
	return NULL;
}

/* Claim slot f for the entry's refresh, started by sched_start_claimed. */
void
sched_slot_claim(struct sched *s, struct sched_slot *f, int kind,
    const uint8_t *key, size_t klen, unsigned failures, int64_t was)
{
	f->used = 1;
	f->started = 0;
	f->failures = failures;
	f->kind = (uint8_t)kind;
	f->klen = klen;
	f->s = s;
	f->ask = NULL;
	f->was = was;
	memcpy(f->key, key, klen);
}

/* A free slot, unless the kind already runs its max_inflight refreshes. */
struct sched_slot *
sched_slot_get(struct sched *s, int kind)
{
	size_t	i, n = 0, max = s->kinds[kind].max_inflight;

	for (i = 0; i < REFRESH_MAX_INFLIGHT; i++)
		if (s->slots[i].used && s->slots[i].kind == kind)
			n++;
	if (max > 0 && n >= max)
		return NULL;
	return slot_free_any(s);
}

/* kind may be refreshed by this daemon (the entry itself aside). */
int
sched_refreshes(const struct sched *s, int kind)
{
	return kind > 0 && kind < CACHE_KIND_MAX && s->have[kind] &&
	    s->kinds[kind].start != NULL;
}

/* Queue a schedule change for after the walk. 0, or -1 when the queue is full. */
int
sched_change_add(struct sched *s, int kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, int64_t at, uint16_t set, uint16_t clear)
{
	struct cache_sched	*c;

	if (s->nchanges >= SCHED_CHANGES_MAX || klen > sizeof(c->key))
		return -1;
	c = &s->changes[s->nchanges++];
	c->kind = (uint8_t)kind;
	c->klen = klen;
	memcpy(c->key, key, klen);
	c->expect_at = m->next_refresh_at;
	c->next_refresh_at = at;
	c->set_flags = set;
	c->clear_flags = clear;
	return 0;
}

/* Write the queued schedule changes. 0, or -1 (logged). */
static int
changes_apply(struct sched *s)
{
	long	n = 0;

	if (s->nchanges > 0 && !cache_read_only(s->cache))
		n = cache_reschedule(s->cache, s->changes, s->nchanges);
	if (n == -1 && cache_map_full(s->cache))
		(void)usage_map_full(s->usage, 0, time(NULL), "refresh: rescheduling "
		    "%zu entries: %s", s->nchanges, cache_strerror(s->cache));
	else if (n == -1)
		log_err("refresh: rescheduling entries: %s",
		    cache_strerror(s->cache));
	s->nchanges = 0;
	return n == -1 ? -1 : 0;
}

/* Queue a long-expired entry for deletion after the walk. */
void
sched_purge_add(struct sched *s, int kind, const uint8_t *key, size_t klen)
{
	struct purge_key	*p;

	if (s->npurge >= REFRESH_WALK_CHUNK || klen > sizeof(p->key))
		return;
	p = &s->purge[s->npurge++];
	p->kind = (uint8_t)kind;
	p->klen = klen;
	memcpy(p->key, key, klen);
}

/* Delete the long-expired entries the last walk found. */
static void
purge_claimed(struct sched *s)
{
	size_t	i, done = 0;

	/* Read-only: kept, and not served (past nextUpdate). */
	if (cache_read_only(s->cache))
		s->npurge = 0;
	for (i = 0; i < s->npurge; i++) {
		if (cache_del(s->cache, s->purge[i].kind, s->purge[i].key,
		    s->purge[i].klen) == -1) {
			log_err("refresh: purging an expired entry: %s",
			    cache_strerror(s->cache));
			continue;
		}
		done++;
	}
	metrics.entries_purged += done;
	if (done > 0)
		log_info("refresh: purged %zu entr%s past nextUpdate by more "
		    "than %d days", done, done == 1 ? "y" : "ies",
		    REFRESH_PURGE_GRACE_S / 86400);
	s->npurge = 0;
}

/* Start the refreshes claimed during the last walk. */
void
sched_start_claimed(struct sched *s)
{
	struct sched_slot	*f;
	size_t			 i;

	for (i = 0; i < REFRESH_MAX_INFLIGHT; i++) {
		f = &s->slots[i];
		if (!f->used || f->started)
			continue;
		f->started = 1;
		/* A refresh that cannot start backs off like one that failed. */
		if (s->kinds[f->kind].start(s->kinds[f->kind].arg, f->kind, f->key,
		    f->klen, sched_refresh_done, f) == -1)
			sched_refresh_done(NULL, REFRESH_FAILED, "could not build "
			    "its upstream request", f);
	}
}

/*
 * Whether the backoff held in memory keeps the entry m from being asked
 * now: 1 until *retry_at, else 0. *failures gets its failures so far,
 * the store's or memory's, whichever is more.
 */
int
sched_backoff_holds(struct sched *s, int kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, time_t now, unsigned *failures,
    int64_t *retry_at)
{
	const struct backoff_rec	*b;

	*failures = m->refresh_failures;
	*retry_at = 0;
	if (backoff_count(s->backoff) == 0 || (b = backoff_get(s->backoff,
	    uses_fp(kind, key, klen), m->fetched_at)) == NULL)
		return 0;
	if (b->failures > *failures)
		*failures = b->failures;
	*retry_at = b->retry_at;
	return b->retry_at > now;
}


/*
 * The walk's figures of the due-index side: due and waiting (backlog),
 * idle; a parked entry that may be refreshed again is put back in the
 * schedule, due now (it was due when it was parked).
 */
enum sched_seen
sched_walk_entry(struct sched *s, int kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, time_t now)
{
	unsigned	failures;
	int64_t		at;

	if (!sched_refreshes(s, kind) || (m->flags & CACHE_F_NO_REFRESH) ||
	    m->next_update <= now)
		return SCHED_SEEN;
	if (usage_idle(s->usage, kind, m, now))
		return SCHED_SEEN_IDLE;
	if (m->flags & CACHE_F_PARKED) {
		(void)sched_change_add(s, kind, key, klen, m, now, 0,
		    CACHE_F_PARKED);
		return SCHED_SEEN;
	}
	if (m->next_refresh_at != 0 && m->next_refresh_at <= now &&
	    sched_slot_find(s, kind, key, klen) == NULL &&
	    !sched_backoff_holds(s, kind, key, klen, m, now, &failures, &at))
		return SCHED_SEEN_BACKLOG;
	return SCHED_SEEN;
}

int
sched_flush(struct sched *s)
{
	purge_claimed(s);
	return changes_apply(s);
}

size_t
sched_inflight(const struct sched *s)
{
	size_t	i, n = 0;

	for (i = 0; i < REFRESH_MAX_INFLIGHT; i++)
		n += s->slots[i].used;
	return n;
}

/* ---- the object ---------------------------------------------------------------- */

struct sched *
sched_new(struct event_base *base, struct cache *cache,
    struct cache_writer *writer, struct usage *usage, struct release *release)
{
	struct sched	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->base = base;
	s->cache = cache;
	s->writer = writer;
	s->usage = usage;
	s->release = release;
	s->changes = calloc(SCHED_CHANGES_MAX, sizeof(*s->changes));
	s->purge = calloc(REFRESH_WALK_CHUNK, sizeof(*s->purge));
	s->backoff = backoff_new(BACKOFF_SLOTS);
	TAILQ_INIT(&s->asks);
	s->due_ev = evtimer_new(base, sched_due_cb, s);
	if (s->changes == NULL || s->purge == NULL || s->backoff == NULL ||
	    s->due_ev == NULL) {
		sched_free(s);
		return NULL;
	}
	return s;
}

void
sched_free(struct sched *s)
{
	if (s == NULL)
		return;
	s->stopped = 1;
	sched_asks_free(s);
	loop_event_free(s->due_ev);
	free(s->changes);
	free(s->purge);
	backoff_free(s->backoff);
	free(s);
}

void
sched_set_kind(struct sched *s, enum cache_kind kind,
    const struct refresh_kind_conf *kc)
{
	s->kinds[kind] = *kc;
	s->have[kind] = kc->start != NULL;
}

void
sched_start(struct sched *s)
{
	struct timeval	tv = { 0, 0 };

	s->stopped = 0;
	s->started = 1;
	evtimer_add(s->due_ev, &tv);
}

void
sched_stop(struct sched *s, const char *why)
{
	s->stopped = 1;
	s->started = 0;
	evtimer_del(s->due_ev);
	sched_asks_stop(s, why);
}
