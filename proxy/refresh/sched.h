/* SPDX-License-Identifier: Apache-2.0 */
/* The refresh schedule: the due index's turns, the in-flight slots and token buckets, operators' asks, and the backoff of failing entries. */
#ifndef PROXY_SCHED_H
#define PROXY_SCHED_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cache/store.h"
#include "proxy/refresh/refresh.h"

/*
 * The schedule starts what the store's due index says is due, soonest
 * first, each kind at most max_inflight at once and rate_limit_per_s
 * (a token bucket with a second's burst), through the kind's refresher
 * (refresh_kind_conf.start); then what operators asked for
 * (staplectl refresh), with the slots and tokens left. A refresh that
 * fails backs off (schedule_backoff_at), in the store and in memory too
 * (proxy/refresh/backoff.h), so that a store that cannot take the write does not
 * leave the entry due. Entries in the way of the index's order are set
 * aside (parked: expired, idle) and purged REFRESH_PURGE_GRACE_S past
 * their nextUpdate.
 *
 * It reads usage (proxy/refresh/usage.h) for whether an entry is idle and tells
 * it of a full map; it asks the page release (proxy/refresh/release.h) to let go
 * of what its turns read. Neither calls back into it. Every call is made
 * on the event loop's thread.
 */
struct event_base;
struct cache_writer;
struct usage;
struct release;
struct sched;

/*
 * A new schedule. writer (may be NULL: the loop writes) takes a failed
 * refresh's backoff; a refresh holds its slot until that write has
 * landed. base, cache, writer, usage and release are borrowed and must
 * outlive it. NULL when memory is short.
 */
struct sched	*sched_new(struct event_base *base, struct cache *cache,
		    struct cache_writer *writer, struct usage *usage,
		    struct release *release);
/* Free, with every ask (no line is said); refreshes in flight must have ended. Accepts NULL. */
void		 sched_free(struct sched *);
/* Install or replace the refresher of a kind (copied). NULL start disables. */
void		 sched_set_kind(struct sched *, enum cache_kind,
		    const struct refresh_kind_conf *);
/* Begin the due turns (now). */
void		 sched_start(struct sched *);
/*
 * Start no more refreshes (in-flight ones finish), and end every ask
 * with a STOPPED line saying why (borrowed for the call).
 */
void		 sched_stop(struct sched *, const char *why);
/* A uniform double in [0, 1) for jitter (refresh_rand). */
double		 sched_rand(void);
/* Whether kind has a refresher here (the entry itself aside). */
int		 sched_refreshes(const struct sched *, int kind);
/* Slots taken: refreshes started or claimed and not ended. */
size_t		 sched_inflight(const struct sched *);

/* What the walk counts of an entry (sched_walk_entry). */
enum sched_seen {
	SCHED_SEEN = 0,		/* nothing to count */
	SCHED_SEEN_IDLE,	/* not asked within idle_expire_s: left to expire */
	SCHED_SEEN_BACKLOG,	/* due, and neither started nor backing off */
};
/*
 * The walk reached the entry m (valid at now, of a refreshed kind or
 * not): a parked entry that may be refreshed again is put back in the
 * schedule, due now (written by sched_flush). Returns what to count.
 */
enum sched_seen	 sched_walk_entry(struct sched *, int kind, const uint8_t *key,
		    size_t klen, const struct cache_meta *m, time_t now);
/* Queue an entry long expired for deletion by the next sched_flush (at most REFRESH_WALK_CHUNK). */
void		 sched_purge_add(struct sched *, int kind, const uint8_t *key,
		    size_t klen);
/*
 * Delete the queued entries, then write the queued schedule changes
 * (after a walk's chunk: not from a cache_walk callback). 0, or -1 when
 * the changes were not written (logged; a full map is told to usage).
 */
int		 sched_flush(struct sched *);

/* Start an operator's ask (refresh_ask_start). */
struct refresh_ask *sched_ask_start(struct sched *, const struct cache_ask *,
		    refresh_ask_cb *cb, void *arg);
/* Cancel it (refresh_ask_cancel). Accepts NULL. */
void		 sched_ask_cancel(struct refresh_ask *);

#endif
