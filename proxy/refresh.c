/* SPDX-License-Identifier: Apache-2.0 */
/* Refresh scheduler: the store's due index starts refreshes soonest first, rate-limited; a paced walk keeps the figures. */
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
#include "proxy/evict.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/refresh.h"
#include "proxy/uses.h"

#define TOUCH_SLOTS		4096	/* the unwritten hits' table (open addressing) */
#define TOUCH_FLUSH_MS		5000
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
 * the last use, and every hit is written.
 */
#define TOUCH_RESOLUTION_S	3600
#define TOUCH_RESOLUTION_DIV	4
#define TOUCH_EXACT_PCT		90
/*
 * Such a hit on an entry whose recorded use is older than that waits as
 * a fingerprint (proxy/uses.h) until the walk reaches the entry, and the
 * walk writes the waiting uses in key order, WALK_TOUCH_BATCH to a
 * transaction: neighbours share their leaf pages. Written one by one,
 * as hits come, a first hit in an hour on each of a million entries cost
 * a leaf page written per hit. At most USES_MAX_SLOTS / 4 * 3 wait in
 * each of the two generations (8 bytes a slot); beyond, hits are written
 * as they come.
 */
#define WALK_TOUCH_BATCH	1024
#define USES_MAX_SLOTS		((size_t)1 << 20)
/*
 * The map's pages are released (design.md 7.6) while hits come at most
 * this fast: re-reading what so few hits need costs little (each release
 * costs a read of /proc/self/maps and the unmapping of what was read).
 * The hit rate is measured by a timer of its own every RELEASE_CHECK_MS,
 * which releases when it finds hits few or the cap exceeded, and at a
 * pass's end when the last check is RELEASE_MIN_MS old; the walk's chunks
 * ask for a release as the due turns do (release_soon).
 */
#define RELEASE_QUIET_HITS_PER_S	1000
#define RELEASE_CHECK_MS		1000
#define RELEASE_MIN_MS			100
/*
 * Between passes the due turns and the refreshes read the store (every
 * due turn reads the metas at the head of the due index, each a random
 * page, and each page fault maps its neighbours too): at 1,000,000
 * entries and 35 refreshes a second that mapped 60 MiB a second. What
 * they read is let go this soon after, by the last check's verdict.
 */
#define RELEASE_SOON_MS			100
/*
 * ...and at once when the process's file pages have grown by this much
 * since the last release: each due turn maps about 1.3 MiB of the store
 * and each put 1 to 3 MiB (fault-around), so a burst of them in those
 * 100 ms (a refresh round's start, slots freed together) would otherwise
 * be mapped all at once.
 */
#define RELEASE_BURST_BYTES		(4u << 20)
/*
 * A release of more than this much mapped unmaps this much of the map's
 * address range a loop turn: unmapping a million-entry store that hits
 * had mapped whole took the loop 225 ms in one call; a step of 64 MiB
 * takes a few milliseconds at most.
 */
#define RELEASE_STEP_BYTES		((size_t)64 << 20)
/*
 * The due turn: per kind, the due index from its soonest entry on, at most
 * REFRESH_DUE_CHUNK entries a loop turn. It stops at the first entry that
 * finds no token (back when the bucket has one: 1000 / rate_limit_per_s
 * ms) or no slot (back when a refresh ends); with nothing more due it
 * looks again after REFRESH_DUE_IDLE_MS (next_refresh_at has seconds).
 */
#define REFRESH_DUE_CHUNK	256
#define REFRESH_DUE_IDLE_MS	1000
#define REFRESH_SCHED_MAX	256	/* schedule changes written per turn */
/*
 * The full walk (figures, eviction candidates, purge, taking parked
 * entries back) pauses this long between chunks, so a pass over 1,000,000
 * entries is spread over about 20 s instead of one burst; it lets go of
 * the map pages it read while the load check finds hits few.
 */
#define REFRESH_WALK_GAP_MS	2

struct inflight {
	int		used;
	int		started;
	unsigned	failures;	/* before this refresh */
	uint8_t		kind;
	uint8_t		key[CACHE_KEY_MAX_BYTES];
	size_t		klen;
	struct refresh	*r;
};

/* An entry long expired, deleted after the chunk that found it. */
struct purge_key {
	uint8_t		kind;
	uint8_t		key[CACHE_KEY_MAX_BYTES];
	size_t		klen;
};

struct bucket {
	double		tokens;
	struct timespec	last;
};

struct refresh {
	struct event_base	*base;
	struct cache		*cache;
	struct cache_writer	*writer;	/* NULL: the loop writes */
	struct refresh_kind_conf kinds[CACHE_KIND_MAX];
	int			 have[CACHE_KIND_MAX];
	struct bucket		 buckets[CACHE_KIND_MAX];
	struct event		*walk_ev;
	struct event		*due_ev;
	struct event		*touch_ev;
	struct event		*release_ev;	/* the load check, RELEASE_CHECK_MS */
	struct event		*soon_ev;	/* a release RELEASE_SOON_MS after store reads */
	struct event		*step_ev;	/* the next step of a release */
	size_t			 release_at;	/* where it starts; 0: no release under way */
	int			 stopped;
	int			 walking;
	int			 slot_wait;	/* the due turn waits for a free slot */
	uint32_t		 deferred[CACHE_KIND_MAX];	/* hash of the entry last rate-limited */
	unsigned long		 hits;		/* refresh_hit calls, ever */
	unsigned long		 hits_at_check;	/* `hits` at the last release check */
	int64_t			 check_ms;	/* that check, monotonic */
	int			 busy;		/* it found more hits than RELEASE_QUIET_HITS_PER_S */
	size_t			 map_cap;	/* map_resident_max_mb in bytes; 0: none */
	size_t			 file_base;	/* file pages resident after the last release */
	uint8_t			 after[1 + CACHE_KEY_MAX_BYTES];
	size_t			 afterlen;
	struct refresh_stats	 cur;	/* the pass in progress */
	struct refresh_stats	 last;	/* the last complete pass */
	struct cache_room	 room;	/* measured after it */
	struct inflight		 inflight[REFRESH_MAX_INFLIGHT];
	struct cache_touch	*touches;
	size_t			 ntouches;
	struct uses		*uses;		/* hits waiting for the walk */
	struct cache_touch	*wt;		/* their uses, found by the walk */
	size_t			 nwt;
	struct cache_sched	*sched;		/* REFRESH_SCHED_MAX changes to write */
	size_t			 nsched;
	struct purge_key	*purge;		/* REFRESH_WALK_CHUNK of them */
	size_t			 npurge;
	/* max_entries: candidates of the pass in progress, and of the last one */
	struct evict_set	*building[CACHE_KIND_MAX];
	struct evict_set	*ready[CACHE_KIND_MAX];
	size_t			 count[CACHE_KIND_MAX];	/* entries, as far as we know */
};

static void	release_soon(struct refresh *);
static void	walk_touches_flush(struct refresh *);
static void	walk_touches_room(struct refresh *, size_t);

double
refresh_rand(void)
{
	uint32_t	v;

	if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
		v = (uint32_t)random();
	return v / 4294967296.0;
}

static int64_t
mono_ms(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

/* Token bucket per kind, burst of one second's worth: no stampede after a restart. */
static int
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
		b->tokens += rate * (mono_ms(&now) - mono_ms(&b->last)) / 1000.0;
	if (b->tokens > burst)
		b->tokens = burst;
	b->last = now;
	if (b->tokens < 1)
		return 0;
	b->tokens -= 1;
	return 1;
}

static struct inflight *
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

/* A free slot, unless the kind already runs its max_inflight refreshes. */
static struct inflight *
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

static void
backoff_landed(const struct cache_writer_res *res, void *arg)
{
	struct inflight	*f = arg;
	char		 hex[17];

	if (res->rc == -1) {
		log_hex(hex, sizeof(hex), f->key, f->klen);
		log_err("refresh: %s %s: %s", cache_kind_str[f->kind], hex,
		    res->err);
	}
	slot_free(f->r, f);
}

static void
refresh_done(struct refresh *r, int ok, const char *why, void *arg)
{
	struct inflight		*f = arg;
	struct cache_meta	 m;
	char			 hex[17];
	time_t			 now = time(NULL);
	const struct refresh_kind_conf *kc = &r->kinds[f->kind];

	log_hex(hex, sizeof(hex), f->key, f->klen);
	if (ok) {
		metrics.refresh_ok++;
		if (f->failures > 0)
			log_info("refresh: %s %s: refreshed again after %u failure(s)",
			    cache_kind_str[f->kind], hex, f->failures);
		else
			log_debug("refresh: %s %s: refreshed", cache_kind_str[f->kind],
			    hex);
	} else if (cache_get_meta(r->cache, f->kind, f->key, f->klen, &m) == 1) {
		metrics.refresh_failed++;
		m.refresh_failures++;
		m.next_refresh_at = schedule_backoff_at(&kc->sched,
		    m.refresh_failures, m.next_update, now, refresh_rand());
		/* A state change is logged once; the retries are not. */
		if (m.refresh_failures == 1)
			log_warn("refresh: %s %s: failing (%s); valid for %lds more, "
			    "retrying with backoff", cache_kind_str[f->kind], hex,
			    why ? why : "unknown", (long)(m.next_update - now));
		else
			log_debug("refresh: %s %s: still failing (%u): %s",
			    cache_kind_str[f->kind], hex, m.refresh_failures,
			    why ? why : "unknown");
		/* The slot stays taken until the new schedule is in the store. */
		if (r->writer != NULL && cache_writer_put_meta(r->writer, f->key,
		    f->klen, &m, backoff_landed, f) == 0)
			return;
		if (cache_put_meta(r->cache, f->key, f->klen, &m) == -1)
			log_err("refresh: %s %s: %s", cache_kind_str[f->kind], hex,
			    cache_strerror(r->cache));
	}
	slot_free(r, f);
}

/* kind may be refreshed by this daemon (the entry itself aside). */
static int
kind_refreshed(const struct refresh *r, int kind)
{
	return kind > 0 && kind < CACHE_KIND_MAX && r->have[kind] &&
	    r->kinds[kind].start != NULL;
}

/* Not asked for within idle_expire_s: left to expire (design.md 7.4). */
static int
entry_idle(const struct refresh *r, int kind, const struct cache_meta *m,
    time_t now)
{
	/* Entries stored by a client miss are touched then; imports set it. */
	time_t	last_used = m->last_served_at ? m->last_served_at : m->fetched_at;

	return schedule_is_idle(last_used, r->kinds[kind].idle_expire_s, now);
}

/* Queue a schedule change for after the walk. 0, or -1 when the queue is full. */
static int
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
static int
sched_apply(struct refresh *r)
{
	long	n = 0;

	if (r->nsched > 0)
		n = cache_reschedule(r->cache, r->sched, r->nsched);
	r->nsched = 0;
	if (n == -1) {
		log_err("refresh: rescheduling entries: %s",
		    cache_strerror(r->cache));
		return -1;
	}
	return 0;
}

/* Queue a long-expired entry for deletion after the walk. */
static void
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
static void
purge_claimed(struct refresh *r)
{
	size_t	i, done = 0;

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

/* Claim a slot for the entry's refresh, started after the walk. */
static void
claim(struct refresh *r, struct inflight *f, int kind, const uint8_t *key,
    size_t klen, const struct cache_meta *m)
{
	f->used = 1;
	f->started = 0;
	f->failures = m->refresh_failures;
	f->kind = (uint8_t)kind;
	f->klen = klen;
	f->r = r;
	memcpy(f->key, key, klen);
}

/* Start the refreshes claimed during the last walk. */
static void
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

enum due_stop {
	DUE_GO = 0,
	DUE_NO_TOKEN,		/* back when the bucket has one */
	DUE_NO_SLOT,		/* back when a refresh ends */
	DUE_FULL,		/* the schedule queue is full: back at once */
	DUE_STOPPED,
};

struct due_arg {
	struct refresh	*r;
	time_t		 now;
	enum due_stop	 stop;
};

/*
 * Entries in the way of the due index's order, moved out of it (parked):
 * an expired one until it is purged, an idle one until its nextUpdate.
 * Imports without a schedule are given one. Returns 1 when handled here.
 */
static int
due_set_aside(struct due_arg *da, int kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m)
{
	struct refresh			*r = da->r;
	const struct refresh_kind_conf	*kc = &r->kinds[kind];
	int64_t				 at;
	int				 rc = 0;

	if (m->next_update <= da->now - REFRESH_PURGE_GRACE_S) {
		purge_add(r, kind, key, klen);
		return 1;
	}
	if (m->next_update <= da->now)	/* expired: a client miss refetches */
		rc = sched_add(r, kind, key, klen, m,
		    m->next_update + REFRESH_PURGE_GRACE_S, CACHE_F_PARKED, 0);
	else if (entry_idle(r, kind, m, da->now))
		rc = sched_add(r, kind, key, klen, m, m->next_update,
		    CACHE_F_PARKED, 0);
	else if (m->next_refresh_at == 0) {
		/* Imported by staplectl: it joins the schedule here. */
		at = schedule_refresh_at(&kc->sched, m->this_update,
		    m->next_update, da->now, refresh_rand());
		rc = sched_add(r, kind, key, klen, m, at != 0 ? at : 1, 0, 0);
	} else
		return 0;
	if (rc == -1)
		da->stop = DUE_FULL;
	return 1;
}

/* One due entry, soonest first: start it, or stop the turn. */
static int
due_one(enum cache_kind kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, void *arg)
{
	struct due_arg	*da = arg;
	struct refresh	*r = da->r;
	struct inflight	*f;
	uint32_t	 h;

	if (r->stopped) {
		da->stop = DUE_STOPPED;
		return 1;
	}
	/* In flight: its refresh ends by writing a new schedule. */
	if (klen > CACHE_KEY_MAX_BYTES || inflight_find(r, kind, key, klen) != NULL)
		return 0;
	if (due_set_aside(da, kind, key, klen, m))
		return da->stop != DUE_GO;
	if ((f = inflight_slot(r, kind)) == NULL) {
		da->stop = DUE_NO_SLOT;
		return 1;
	}
	if (!bucket_take(r, kind)) {
		/* Counted once per entry, however long it waits. */
		if ((h = util_fnv1a32(key, klen)) != r->deferred[kind])
			metrics.refresh_rate_limited++;
		r->deferred[kind] = h;
		da->stop = DUE_NO_TOKEN;
		return 1;
	}
	claim(r, f, kind, key, klen, m);
	return 0;
}

/* How long until kind's bucket holds a token, in ms (at least 1). */
static long
bucket_wait_ms(const struct refresh *r, int kind)
{
	const struct bucket	*b = &r->buckets[kind];
	double			 rate = r->kinds[kind].rate_limit_per_s;
	double			 ms;

	if (rate <= 0)
		return REFRESH_DUE_IDLE_MS;
	ms = (1 - b->tokens) * 1000.0 / rate;
	return ms < 1 ? 1 : ms > REFRESH_DUE_IDLE_MS ? REFRESH_DUE_IDLE_MS :
	    (long)ms + 1;
}

/* One chunk of kind's due entries. Returns ms until this kind wants a turn again. */
static long
due_kind(struct refresh *r, int kind)
{
	struct due_arg	da = { r, time(NULL), DUE_GO };
	long		n;

	n = cache_due_walk(r->cache, kind, da.now, REFRESH_DUE_CHUNK, due_one,
	    &da);
	if (n == -1)
		log_err("refresh: walking the due %s entries: %s",
		    cache_kind_str[kind], cache_strerror(r->cache));
	purge_claimed(r);
	if (sched_apply(r) == -1 || n == -1)
		return REFRESH_DUE_IDLE_MS;
	start_claimed(r);
	switch (da.stop) {
	case DUE_NO_TOKEN:
		return bucket_wait_ms(r, kind);
	case DUE_NO_SLOT:
		if (inflight_slot(r, kind) != NULL)
			return 0;	/* a start failed at once and freed it */
		r->slot_wait = 1;
		return REFRESH_DUE_IDLE_MS;
	case DUE_FULL:
		return 0;
	case DUE_STOPPED:
		return REFRESH_DUE_IDLE_MS;
	case DUE_GO:
		break;
	}
	return n == REFRESH_DUE_CHUNK ? 0 : REFRESH_DUE_IDLE_MS;
}

/* The due turn: every refreshed kind's due entries, then wait (see above). */
static void
due_cb(evutil_socket_t fd, short what, void *arg)
{
	struct refresh	*r = arg;
	struct timeval	 tv;
	long		 wait_ms = REFRESH_DUE_IDLE_MS, w;
	int		 k;

	(void)fd;
	(void)what;
	if (r->stopped)
		return;
	r->slot_wait = 0;
	for (k = 1; k < CACHE_KIND_MAX; k++) {
		if (!kind_refreshed(r, k))
			continue;
		if ((w = due_kind(r, k)) < wait_ms)
			wait_ms = w;
	}
	tv.tv_sec = wait_ms / 1000;
	tv.tv_usec = (wait_ms % 1000) * 1000;
	evtimer_add(r->due_ev, &tv);
	release_soon(r);
}

struct walk_arg {
	struct refresh	*r;
	time_t		 now;
};

/*
 * The figures of the due-index side: due and waiting (backlog), idle; a
 * parked entry that may be refreshed again is put back in the schedule,
 * due now (it was due when it was parked).
 */
static void
walk_schedule(struct refresh *r, int kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, time_t now)
{
	if (!kind_refreshed(r, kind) || (m->flags & CACHE_F_NO_REFRESH) ||
	    m->next_update <= now)
		return;
	if (entry_idle(r, kind, m, now)) {
		r->cur.idle++;
		return;
	}
	if (m->flags & CACHE_F_PARKED) {
		(void)sched_add(r, kind, key, klen, m, now, 0, CACHE_F_PARKED);
		return;
	}
	if (m->next_refresh_at != 0 && m->next_refresh_at <= now &&
	    inflight_find(r, kind, key, klen) == NULL)
		r->cur.backlog++;
}

/*
 * A use waiting for the walk (refresh_hit): taken, and its touch queued
 * with the walk's time; 1 when there was one. The caller makes room for
 * a chunk's worth first (walk_touches_room).
 */
static int
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

static int
walk_one(enum cache_kind kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, void *arg)
{
	struct walk_arg	*wa = arg;
	struct refresh	*r = wa->r;
	struct cache_meta used;

	r->after[0] = (uint8_t)kind;
	memcpy(r->after + 1, key, klen);
	r->afterlen = 1 + klen;
	if (kind >= CACHE_KIND_MAX || klen > CACHE_KEY_MAX_BYTES)
		return 0;
	if (m->next_update < wa->now - REFRESH_PURGE_GRACE_S) {
		if (uses_count(r->uses) > 0)
			(void)uses_take(r->uses, uses_fp(kind, key, klen));
		purge_add(r, kind, key, klen);
		return 0;	/* gone after this chunk: counted nowhere */
	}
	/* Asked since its recorded use: idle and eviction see that use. */
	if (walk_use(r, kind, key, klen, wa->now)) {
		used = *m;
		if (used.last_served_at < wa->now)
			used.last_served_at = wa->now;
		m = &used;
	}
	walk_schedule(r, kind, key, klen, m, wa->now);
	r->cur.entries[kind]++;
	if (m->next_update <= wa->now)
		r->cur.expired++;
	else {
		if (r->cur.earliest_next_update == 0 ||
		    m->next_update < r->cur.earliest_next_update)
			r->cur.earliest_next_update = m->next_update;
		if (r->cur.earliest_by_kind[kind] == 0 ||
		    m->next_update < r->cur.earliest_by_kind[kind])
			r->cur.earliest_by_kind[kind] = m->next_update;
		if (m->next_update - wa->now <= REFRESH_EXPIRING_S)
			r->cur.expiring++;
	}
	if (r->building[kind] != NULL &&
	    evict_offer(r->building[kind], key, klen, m) == -1)
		log_debug("refresh: no memory for an eviction candidate");
	return 0;
}

/* A pass begins: capped kinds collect their eviction candidates afresh. */
static void
evict_pass_begin(struct refresh *r)
{
	size_t	k;

	for (k = 1; k < CACHE_KIND_MAX; k++) {
		if (!r->have[k] || r->kinds[k].max_entries == 0) {
			evict_free(r->building[k]);
			r->building[k] = NULL;
			continue;
		}
		if (r->building[k] == NULL &&
		    (r->building[k] = evict_new(EVICT_CANDIDATES)) == NULL)
			log_err("refresh: %s: no memory for eviction candidates",
			    cache_kind_str[k]);
		else
			evict_clear(r->building[k]);
	}
}

/* The pass is complete: its candidates and its count are the ones to use. */
static void
evict_pass_end(struct refresh *r)
{
	struct evict_set	*t;
	size_t			 k;

	for (k = 1; k < CACHE_KIND_MAX; k++) {
		r->count[k] = r->last.entries[k];
		t = r->ready[k];
		r->ready[k] = r->building[k];
		r->building[k] = t;
		if (r->ready[k] != NULL)
			evict_seal(r->ready[k]);
		if (r->building[k] != NULL)
			evict_clear(r->building[k]);
	}
}

/*
 * The pause between passes: a second, or N / 20 ms for a store of N
 * entries (100,000 entries: 5 s; 1,000,000: 50 s).
 */
static long
refresh_pause_ms(const struct refresh *r)
{
	size_t	k, total = 0;

	for (k = 1; k < CACHE_KIND_MAX; k++)
		total += r->last.entries[k];
	return total / 20 > (size_t)REFRESH_PASS_MS ? (long)(total / 20) :
	    REFRESH_PASS_MS;
}

/* The process's resident file-backed pages (RssFile + RssShmem), in bytes; 0 unknown. */
static size_t
rss_file_bytes(void)
{
	unsigned long	size, resident, shared;
	long		page = sysconf(_SC_PAGESIZE);
	FILE		*f;
	int		 n;

	if (page <= 0 || (f = fopen("/proc/self/statm", "r")) == NULL)
		return 0;
	n = fscanf(f, "%lu %lu %lu", &size, &resident, &shared);
	fclose(f);
	return n == 3 ? (size_t)shared * (size_t)page : 0;
}

/*
 * The load check: whether to let go of the map's pages now (design.md
 * 7.6). 1 while hits are few, so that what the walk and the refreshes
 * read does not stay resident, or when the file pages resident exceed
 * map_resident_max_mb; 0 under hit load, where dropping the pages costs
 * each following hit its page faults again. Measured over the time since
 * the last check; one less than RELEASE_MIN_MS after it keeps that
 * check's verdict (too short to measure a rate over).
 */
static int
release_check(struct refresh *r)
{
	struct timespec	ts;
	int64_t		now_ms, el;
	unsigned long	n = r->hits - r->hits_at_check;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now_ms = mono_ms(&ts);
	if ((el = now_ms - r->check_ms) < RELEASE_MIN_MS)
		return !r->busy;
	r->busy = (double)n > RELEASE_QUIET_HITS_PER_S * (double)el / 1000;
	r->check_ms = now_ms;
	r->hits_at_check = r->hits;
	return !r->busy || (r->map_cap > 0 && rss_file_bytes() > r->map_cap);
}

/*
 * Let go of the map's pages; what stays resident of files is the
 * libraries. At once when less than RELEASE_STEP_BYTES was mapped since
 * the last release (the quiet daemon's case: a few MiB), else in steps of
 * RELEASE_STEP_BYTES of the map, one a loop turn (after hit load: the
 * whole store may be mapped). Asked again while steps are under way,
 * those go on (what was mapped behind them goes at the next release).
 * Hits arriving stop them: what they map, they use.
 */
static void
release_step(struct refresh *r)
{
	struct timeval	tv = { 0, 0 };

	r->release_at = cache_release_pages_step(r->cache, r->release_at,
	    RELEASE_STEP_BYTES);
	if (r->release_at != 0)
		evtimer_add(r->step_ev, &tv);
	else
		r->file_base = rss_file_bytes();
}

static void
release(struct refresh *r)
{
	if (r->release_at != 0)
		return;
	if (rss_file_bytes() <= r->file_base + RELEASE_STEP_BYTES) {
		cache_release_pages(r->cache);
		r->file_base = rss_file_bytes();
	} else
		release_step(r);
}

static void
step_cb(evutil_socket_t fd, short what, void *arg)
{
	struct refresh	*r = arg;

	(void)fd;
	(void)what;
	if (r->stopped || !release_check(r)) {
		r->release_at = 0;
		r->file_base = rss_file_bytes();
		return;
	}
	release_step(r);
}

/*
 * The load check's timer: between the full walk's passes (50 s at
 * 1,000,000 entries) the refreshes' reads and writes and the due turns
 * bring pages in too, and a quiet daemon lets them go within a second.
 */
static void
release_cb(evutil_socket_t fd, short what, void *arg)
{
	struct refresh	*r = arg;
	struct timeval	 tv = { RELEASE_CHECK_MS / 1000,
			    (RELEASE_CHECK_MS % 1000) * 1000 };

	(void)fd;
	(void)what;
	if (r->stopped)
		return;
	if (release_check(r))
		release(r);
	evtimer_add(r->release_ev, &tv);
}

static void
soon_cb(evutil_socket_t fd, short what, void *arg)
{
	struct refresh	*r = arg;

	(void)fd;
	(void)what;
	if (!r->stopped && release_check(r))
		release(r);
}

/*
 * The due turn, a refresh or the walk read the store: release soon while
 * hits are few, or now when what was read since the last release is
 * already RELEASE_BURST_BYTES (one read of /proc/self/statm). The hit
 * rate is measured again here when the last check is RELEASE_MIN_MS old,
 * so that hits arriving do not wait for the next timed check (up to a
 * second) to stop the releases.
 */
static void
release_soon(struct refresh *r)
{
	struct timeval	tv = { 0, RELEASE_SOON_MS * 1000 };

	if (r->stopped || !release_check(r))
		return;
	if (rss_file_bytes() > r->file_base + RELEASE_BURST_BYTES) {
		evtimer_del(r->soon_ev);
		release(r);
	} else if (!evtimer_pending(r->soon_ev, NULL))
		evtimer_add(r->soon_ev, &tv);
}

static void
room_landed(const struct cache_writer_res *res, void *arg)
{
	struct refresh	*r = arg;

	if (res->rc == -1)
		log_err("refresh: the store's room: %s", res->err);
	else if (r != NULL)
		r->room = res->room;
}

/*
 * The store's room for writes, once a pass: on the writer's thread, as
 * its free list may take many milliseconds to read (cache_writer_room).
 */
static void
room_measure(struct refresh *r)
{
	if (r->writer != NULL &&
	    cache_writer_room(r->writer, room_landed, r) == 0)
		return;
	if (cache_room(r->cache, &r->room) == -1)
		log_err("refresh: the store's room: %s", cache_strerror(r->cache));
}

/*
 * The full walk, one chunk a turn: figures, eviction candidates, purge,
 * parked entries taken back. It starts no refresh and never waits on one.
 */
static void
walk_cb(evutil_socket_t fd, short what, void *arg)
{
	struct refresh	*r = arg;
	struct walk_arg	 wa = { r, time(NULL) };
	struct timeval	 tv = { 0, REFRESH_WALK_GAP_MS * 1000 };
	long		 n, pass_ms;

	(void)fd;
	(void)what;
	if (!r->walking) {
		memset(&r->cur, 0, sizeof(r->cur));
		r->afterlen = 0;
		r->walking = 1;
		evict_pass_begin(r);
		if ((n = (long)uses_turn(r->uses)) > 0)
			log_debug("refresh: %ld recorded use(s) of entries "
			    "deleted since", n);
	}
	walk_touches_room(r, REFRESH_WALK_CHUNK);
	/* The walk key is kind||key; cache_walk wants the same form. */
	n = cache_walk(r->cache, 0, r->afterlen ? r->after : NULL, r->afterlen,
	    REFRESH_WALK_CHUNK, walk_one, &wa);
	if (n == -1)
		log_err("refresh: walking the cache: %s", cache_strerror(r->cache));
	purge_claimed(r);
	(void)sched_apply(r);
	if (n == REFRESH_WALK_CHUNK) {
		/*
		 * What the chunks read goes while hits are few, at the latest
		 * when it reaches RELEASE_BURST_BYTES: a release once a
		 * second let fault-around keep far more, and one after every
		 * chunk was most of the walk's CPU (design.md 7.6).
		 */
		release_soon(r);
		evtimer_add(r->walk_ev, &tv);	/* more, after a breath */
		return;
	}
	walk_touches_flush(r);
	if (release_check(r))
		release(r);
	r->walking = 0;
	r->cur.complete = 1;
	r->last = r->cur;
	room_measure(r);
	evict_pass_end(r);
	pass_ms = refresh_pause_ms(r);
	tv.tv_sec = pass_ms / 1000;
	tv.tv_usec = (pass_ms % 1000) * 1000;
	evtimer_add(r->walk_ev, &tv);
}

/* No state of the refresh: refresh_free's last batch lands after it. */
static void
touches_landed(const struct cache_writer_res *res, void *arg)
{
	struct refresh	*r = arg;	/* NULL: flushed stopped, perhaps freed since */

	if (res->rc == -1)
		log_err("refresh: recording hits: %s", res->err);
	/* A batch's metas are random pages: few hits, let them go. */
	if (r != NULL)
		release_soon(r);
}

/* Write n touches (empty slots skipped) through the writer, or here without one. */
static void
touches_write(struct refresh *r, const struct cache_touch *t, size_t n)
{
	if (r->writer == NULL || cache_writer_touch(r->writer, t, n,
	    touches_landed, r->stopped ? NULL : r) == -1) {
		if (cache_touch(r->cache, t, n) == -1)
			log_err("refresh: recording hits: %s",
			    cache_strerror(r->cache));
	}
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
static void
walk_touches_flush(struct refresh *r)
{
	if (r->nwt == 0)
		return;
	touches_write(r, r->wt, r->nwt);
	r->nwt = 0;
}

/* Before a chunk of the walk: room for a use from each of its entries. */
static void
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

static void
uses_write_all(struct refresh *r)
{
	struct uses_walk	uw;
	size_t			waiting = uses_count(r->uses);
	long			n;

	if (waiting == 0)
		return;
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

static void
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

void
refresh_touch(struct refresh *r, enum cache_kind kind, const uint8_t *key,
    size_t klen, time_t now)
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
		refresh_touch(r, kind, key, klen, now);
		return;
	}
	t->served++;
	t->last_served_at = now;
	if (r->ntouches >= TOUCH_BATCH)
		refresh_flush_touches(r);
}

static const struct cache_touch *touch_find(const struct refresh *, int,
		    const uint8_t *, size_t);

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
	if (exact || m->last_served_at == 0 || (m->flags & CACHE_F_IMPORTED) ||
	    touch_find(r, kind, key, klen) != NULL) {
		refresh_touch(r, kind, key, klen, now);
		return;
	}
	/* Recorded recently: nothing to write. */
	if (now - m->last_served_at < res && now >= m->last_served_at)
		return;
	/* Written by the walk, with its neighbours'; as it comes when stopped or full. */
	if (r->stopped || uses_add(r->uses, uses_fp(kind, key, klen)) == -1)
		refresh_touch(r, kind, key, klen, now);
}

void
refresh_set_map_cap(struct refresh *r, size_t bytes)
{
	r->map_cap = bytes;
}

/* The hit not yet written for kind+key, or NULL. */
static const struct cache_touch *
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

/* Delete one candidate unless it was asked since the walk saw it. 0 deleted, -1 not. */
static int
evict_one(struct refresh *r, int kind, const struct evict_cand *c)
{
	const struct cache_touch	*t;
	struct cache_meta		 m;
	char				 hex[17];

	if (c->klen > CACHE_KEY_MAX_BYTES ||
	    cache_get_meta(r->cache, kind, c->key, c->klen, &m) != 1 ||
	    !evict_eligible(&m) || evict_asked(&m) > c->asked)
		return -1;
	/* A hit not yet written; a miss's own touch has its fetch's second. */
	if ((t = touch_find(r, kind, c->key, c->klen)) != NULL &&
	    t->last_served_at > c->asked)
		return -1;
	/* A use waiting for the walk: asked since the walk saw it. */
	if (uses_has(r->uses, uses_fp(kind, c->key, c->klen)))
		return -1;
	if (cache_del(r->cache, kind, c->key, c->klen) == -1) {
		log_err("refresh: evicting a %s entry: %s", cache_kind_str[kind],
		    cache_strerror(r->cache));
		return -1;
	}
	log_hex(hex, sizeof(hex), c->key, c->klen < 8 ? c->klen : 8);
	log_debug("refresh: %s %s: evicted (last asked %llds ago)",
	    cache_kind_str[kind], hex, (long long)(time(NULL) - c->asked));
	return 0;
}

int
refresh_make_room(struct refresh *r, enum cache_kind kind)
{
	const struct evict_cand	*c;
	size_t			 cap;

	if (kind <= 0 || kind >= CACHE_KIND_MAX || !r->have[kind] ||
	    (cap = r->kinds[kind].max_entries) == 0) {
		if (kind > 0 && kind < CACHE_KIND_MAX)
			r->count[kind]++;
		return 0;
	}
	while (r->count[kind] >= cap) {
		if (r->ready[kind] == NULL ||
		    (c = evict_next(r->ready[kind])) == NULL)
			return -1;
		if (evict_one(r, kind, c) == 0) {
			r->count[kind]--;
			metrics.evictions[kind]++;
		}
	}
	r->count[kind]++;
	return 0;
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
	r->walk_ev = evtimer_new(base, walk_cb, r);
	r->due_ev = evtimer_new(base, due_cb, r);
	r->touch_ev = evtimer_new(base, touch_cb, r);
	r->release_ev = evtimer_new(base, release_cb, r);
	r->soon_ev = evtimer_new(base, soon_cb, r);
	r->step_ev = evtimer_new(base, step_cb, r);
	if (r->touches == NULL || r->uses == NULL || r->wt == NULL ||
	    r->sched == NULL || r->purge == NULL ||
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
	if (r->touches != NULL)
		refresh_flush_touches(r);
	if (r->uses != NULL && r->wt != NULL) {
		walk_touches_flush(r);
		uses_write_all(r);
	}
	if (r->walk_ev != NULL)
		event_free(r->walk_ev);
	if (r->due_ev != NULL)
		event_free(r->due_ev);
	if (r->touch_ev != NULL)
		event_free(r->touch_ev);
	if (r->release_ev != NULL)
		event_free(r->release_ev);
	if (r->soon_ev != NULL)
		event_free(r->soon_ev);
	if (r->step_ev != NULL)
		event_free(r->step_ev);
	free(r->touches);
	uses_free(r->uses);
	free(r->wt);
	free(r->sched);
	free(r->purge);
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
	evtimer_del(r->walk_ev);
	evtimer_del(r->due_ev);
	evtimer_del(r->touch_ev);
	evtimer_del(r->release_ev);
	evtimer_del(r->soon_ev);
	evtimer_del(r->step_ev);
	r->release_at = 0;
	refresh_flush_touches(r);
	walk_touches_flush(r);
}

void
refresh_stats(const struct refresh *r, struct refresh_stats *s)
{
	size_t	i;

	*s = r->last;
	s->room = r->room;
	s->inflight = 0;
	for (i = 0; i < REFRESH_MAX_INFLIGHT; i++)
		s->inflight += r->inflight[i].used;
}
