/* SPDX-License-Identifier: Apache-2.0 */
/* The due turn: the store's due index, soonest first, starts refreshes while slots and tokens allow. */
#include <config.h>

#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "attest/util.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/refresh/release.h"
#include "proxy/refresh/sched.h"
#include "proxy/refresh/sched_int.h"
#include "proxy/refresh/usage.h"

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
	struct sched	*s;
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
	struct sched			*s = da->s;
	const struct refresh_kind_conf	*kc = &s->kinds[kind];
	int64_t				 at;
	int				 rc = 0;

	if (m->next_update <= da->now - REFRESH_PURGE_GRACE_S) {
		sched_purge_add(s, kind, key, klen);
		return 1;
	}
	if (m->next_update <= da->now)	/* expired: a client miss refetches */
		rc = sched_change_add(s, kind, key, klen, m,
		    m->next_update + REFRESH_PURGE_GRACE_S, CACHE_F_PARKED, 0);
	else if (usage_idle(s->usage, kind, m, da->now))
		rc = sched_change_add(s, kind, key, klen, m, m->next_update,
		    CACHE_F_PARKED, 0);
	else if (m->next_refresh_at == 0) {
		/* Imported by staplectl: it joins the schedule here. */
		at = schedule_refresh_at(&kc->sched, m->this_update,
		    m->next_update, da->now, sched_rand());
		rc = sched_change_add(s, kind, key, klen, m, at != 0 ? at : 1, 0, 0);
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
	struct sched	*s = da->s;
	struct sched_slot	*f;
	uint32_t	 h;
	unsigned	 failures;
	int64_t		 at;

	if (s->stopped) {
		da->stop = DUE_STOPPED;
		return 1;
	}
	/* In flight: its refresh ends by writing a new schedule. */
	if (klen > CACHE_KEY_MAX_BYTES || sched_slot_find(s, kind, key, klen) != NULL)
		return 0;
	if (due_set_aside(da, kind, key, klen, m))
		return da->stop != DUE_GO;
	/*
	 * Backing off, by memory: the store did not take its schedule (a
	 * full map). Written again, so that it leaves the index's head once
	 * the store takes it.
	 */
	if (sched_backoff_holds(s, kind, key, klen, m, da->now, &failures, &at)) {
		da->held++;
		if (m->next_refresh_at < at)
			(void)sched_change_add(s, kind, key, klen, m, at, 0, 0);
		return 0;
	}
	if ((f = sched_slot_get(s, kind)) == NULL) {
		da->stop = DUE_NO_SLOT;
		return 1;
	}
	if (!sched_bucket_take(s, kind)) {
		/* Counted once per entry, however long it waits. */
		if ((h = util_fnv1a32(key, klen)) != s->deferred[kind])
			metrics.refresh_rate_limited++;
		s->deferred[kind] = h;
		da->stop = DUE_NO_TOKEN;
		return 1;
	}
	sched_slot_claim(s, f, kind, key, klen, failures, m->this_update);
	return 0;
}

/* How long until kind's bucket holds a token, in ms (at least 1). */
long
sched_bucket_wait_ms(const struct sched *s, int kind)
{
	const struct bucket	*b = &s->buckets[kind];
	double			 rate = s->kinds[kind].rate_limit_per_s;
	double			 ms;

	if (rate <= 0)
		return REFRESH_DUE_IDLE_MS;
	ms = (1 - b->tokens) * 1000.0 / rate;
	return ms < 1 ? 1 : ms > REFRESH_DUE_IDLE_MS ? REFRESH_DUE_IDLE_MS :
	    (long)ms + 1;
}

/* One chunk of kind's due entries. Returns ms until this kind wants a turn again. */
static long
due_kind(struct sched *s, int kind)
{
	struct due_arg	da = { s, time(NULL), DUE_GO, 0 };
	long		n;

	n = cache_due_walk(s->cache, kind, da.now, REFRESH_DUE_CHUNK, due_one,
	    &da);
	if (n == -1)
		log_err("refresh: walking the due %s entries: %s",
		    cache_kind_str[kind], cache_strerror(s->cache));
	if (sched_flush(s) == -1 || n == -1)
		return REFRESH_DUE_IDLE_MS;
	sched_start_claimed(s);
	switch (da.stop) {
	case DUE_NO_TOKEN:
		return sched_bucket_wait_ms(s, kind);
	case DUE_NO_SLOT:
		if (sched_slot_get(s, kind) != NULL)
			return 0;	/* a start failed at once and freed it */
		s->slot_wait = 1;
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
sched_due_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sched	*s = arg;
	struct timeval	 tv;
	long		 wait_ms = REFRESH_DUE_IDLE_MS, w;
	int		 k;

	(void)fd;
	(void)what;
	if (s->stopped)
		return;
	s->slot_wait = 0;
	/* A store opened read-only could keep no answer: none is asked. */
	for (k = 1; k < CACHE_KIND_MAX && !cache_read_only(s->cache); k++) {
		if (!sched_refreshes(s, k))
			continue;
		if ((w = due_kind(s, k)) < wait_ms)
			wait_ms = w;
	}
	/* Then what operators asked for, with the slots and tokens left. */
	if (!TAILQ_EMPTY(&s->asks) && (w = sched_ask_turn(s)) < wait_ms)
		wait_ms = w;
	tv.tv_sec = wait_ms / 1000;
	tv.tv_usec = (wait_ms % 1000) * 1000;
	evtimer_add(s->due_ev, &tv);
	release_soon(s->release);
}
