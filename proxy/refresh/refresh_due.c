/* SPDX-License-Identifier: Apache-2.0 */
/* The due turn: the store's due index, soonest first, starts refreshes while slots and tokens allow. */
#include <config.h>

#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "attest/util.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/refresh/refresh_int.h"

/*
 * The due turn: per kind, the due index from its soonest entry on, at most
 * REFRESH_DUE_CHUNK entries a loop turn. It stops at the first entry that
 * finds no token (back when the bucket has one: 1000 / rate_limit_per_s
 * ms) or no slot (back when a refresh ends); with nothing more due it
 * looks again after REFRESH_DUE_IDLE_MS (next_refresh_at has seconds).
 */
#define REFRESH_DUE_CHUNK	256
#define REFRESH_DUE_IDLE_MS	1000

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
	size_t		 held;	/* held back by the backoff in memory */
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
	unsigned	 failures;
	int64_t		 at;

	if (r->stopped) {
		da->stop = DUE_STOPPED;
		return 1;
	}
	/* In flight: its refresh ends by writing a new schedule. */
	if (klen > CACHE_KEY_MAX_BYTES || inflight_find(r, kind, key, klen) != NULL)
		return 0;
	if (due_set_aside(da, kind, key, klen, m))
		return da->stop != DUE_GO;
	/*
	 * Backing off, by memory: the store did not take its schedule (a
	 * full map). Written again, so that it leaves the index's head once
	 * the store takes it.
	 */
	if (backoff_holds(r, kind, key, klen, m, da->now, &failures, &at)) {
		da->held++;
		if (m->next_refresh_at < at)
			(void)sched_add(r, kind, key, klen, m, at, 0, 0);
		return 0;
	}
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
	inflight_claim(r, f, kind, key, klen, failures, m->this_update);
	return 0;
}

/* How long until kind's bucket holds a token, in ms (at least 1). */
long
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
	struct due_arg	da = { r, time(NULL), DUE_GO, 0 };
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
	/*
	 * A chunk that held some back waits: while the store refuses their
	 * schedules they stay at the index's head, and more than a chunk of
	 * them would otherwise be read again and again. What waits behind
	 * them could not be stored either.
	 */
	return n == REFRESH_DUE_CHUNK && da.held == 0 ? 0 : REFRESH_DUE_IDLE_MS;
}

/* The due turn: every refreshed kind's due entries, then wait (see above). */
void
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
	/* A store opened read-only could keep no answer: none is asked. */
	for (k = 1; k < CACHE_KIND_MAX && !cache_read_only(r->cache); k++) {
		if (!kind_refreshed(r, k))
			continue;
		if ((w = due_kind(r, k)) < wait_ms)
			wait_ms = w;
	}
	/* Then what operators asked for, with the slots and tokens left. */
	if (!TAILQ_EMPTY(&r->asks) && (w = ask_turn(r)) < wait_ms)
		wait_ms = w;
	tv.tv_sec = wait_ms / 1000;
	tv.tv_usec = (wait_ms % 1000) * 1000;
	evtimer_add(r->due_ev, &tv);
	release_soon(r);
}
