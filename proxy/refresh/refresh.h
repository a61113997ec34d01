/* SPDX-License-Identifier: Apache-2.0 */
/* Background refresh: the owner of the schedule, usage and page release, and the paced walk that keeps the store's figures. */
#ifndef PROXY_REFRESH_H
#define PROXY_REFRESH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cache/store.h"
#include "entry/kinds.h"
#include "proxy/refresh/schedule.h"

/*
 * The refresh wing (proxy/refresh/, librefresh.a): keeping entries fresh
 * and the store within its map, on the loop's thread, beside the clients.
 *
 *   refresh.h        this manual: the owner, its walk and its figures
 *   sched.h          the schedule (sched*.c)
 *   usage.h          usage (usage*.c), uses.h (uses waiting for the walk)
 *                    and evict.h (the candidates, segmented LRU)
 *   release.h        page release
 *   schedule.h       refresh-time arithmetic, pure: when, backoff, give up
 *   backoff.h        failing entries' backoff held in memory
 *   refresh_ctl.h    staplectl refresh's channel (SIGUSR1)
 *
 * It includes only proxy/log.h, proxy/loop.h and proxy/metrics.h beside
 * its own headers and the store's; what a refresh asks of an upstream is
 * the service's (refresh_ask_cb), so no kind is named here.
 *
 * struct refresh wires three parts together and runs the walk:
 *   the schedule (proxy/refresh/sched.h): the due index's turns, the in-flight
 *     slots and token buckets, operators' asks, the backoff;
 *   usage (proxy/refresh/usage.h): touches and uses, what the hit path records,
 *     and the eviction candidates;
 *   page release (proxy/refresh/release.h): the map's resident pages let go
 *     while hits are few.
 * The schedule reads usage and asks the page release to let go; the page
 * release reads usage's hit count; usage calls neither (a batch of uses
 * landed is told through a callback). The walk (a pass over the store,
 * REFRESH_WALK_CHUNK entries a loop turn, every REFRESH_PASS_MS or more)
 * keeps the figures of refresh_stats, hands usage the uses and eviction
 * candidates it finds, and the schedule the parked and the long-expired
 * entries. Every call is made on the event loop's thread.
 */
struct event_base;
struct refresh;

#define REFRESH_MAX_INFLIGHT	8	/* parallel refreshes (mod_md uses 6) */
#define REFRESH_WALK_CHUNK	128	/* entries examined per loop turn */
#define REFRESH_PASS_MS		1000	/* a pass over the store at most this often (more for big stores) */
#define REFRESH_EXPIRING_S	(6 * 3600)
/* An entry past its nextUpdate by more than this is deleted by the walk. */
#define REFRESH_PURGE_GRACE_S	(7 * 86400)

/* How a refresh ended, for refresh_done_fn. */
enum refresh_result {
	REFRESH_FAILED = 0,
	REFRESH_OK = 1,		/* a new entry was stored */
	REFRESH_MAP_FULL = 2,	/* verified, but the full map took no room for it */
};
/* Called by the kind's refresher when its refresh ends; ok: enum refresh_result. */
typedef void refresh_done_fn(struct refresh *, int ok, const char *why, void *done_arg);
/*
 * Start refreshing one entry; the refresher must call done exactly once
 * (possibly before returning). Returns 0, or -1 if it could not start.
 */
typedef int refresh_start_fn(void *arg, enum cache_kind, const uint8_t *key, size_t klen,
    refresh_done_fn *done, void *done_arg);

struct refresh_kind_conf {
	struct schedule_conf	 sched;
	long			 idle_expire_s;
	double			 rate_limit_per_s;
	size_t			 max_inflight;	/* of this kind at once; 0 or more: REFRESH_MAX_INFLIGHT */
	size_t			 max_entries;	/* the kind's entry cap; 0: none */
	refresh_start_fn	*start;
	void			*arg;
};

struct refresh_stats {
	size_t	entries[CACHE_KIND_MAX];
	size_t	expiring;		/* valid, nextUpdate within REFRESH_EXPIRING_S */
	size_t	expired;		/* past nextUpdate: no longer served */
	size_t	backlog;		/* due but not yet started */
	size_t	idle;			/* not asked for within idle_expire */
	size_t	inflight;
	int64_t	earliest_next_update;	/* over valid entries; 0 none */
	int64_t	earliest_by_kind[CACHE_KIND_MAX];	/* the same, per kind */
	size_t	valid_by_kind[CACHE_KIND_MAX];	/* before nextUpdate: served */
	/* past nextUpdate and asked for within idle_expire_s: wanted, not served */
	size_t	expired_by_kind[CACHE_KIND_MAX];
	int64_t	newest_import;		/* the latest fetched_at of an entry staplectl import stored; 0 none */
	int	complete;		/* at least one full pass done */
	struct cache_room room;		/* measured after the last pass */
	/* A spell of full map (usage_map_full): since 0 when none. */
	int64_t	full_since;		/* its first refused write */
	int64_t	full_last;		/* its latest */
	unsigned long full_refused;	/* writes refused in it */
	unsigned long full_evicted;	/* entries not in use evicted in it */
};

struct cache_writer;
/*
 * writer (may be NULL: the loop writes): the store's writer thread, for
 * the hit counters and a failed refresh's new schedule. A refresh holds
 * its slot until its writes have landed. base, cache and writer are
 * borrowed and must outlive it. NULL when memory is short.
 */
struct refresh	*refresh_new(struct event_base *, struct cache *,
		    struct cache_writer *);
/* Write what usage holds unwritten, then free. Accepts NULL. */
void		 refresh_free(struct refresh *);
/* Install or replace the refresher of a kind (SIGHUP swaps it). NULL start disables. */
void		 refresh_set_kind(struct refresh *, enum cache_kind,
		    const struct refresh_kind_conf *);
/* Begin walking (after the listener is up, so startup stays fast). */
void		 refresh_start(struct refresh *);
/* Stop starting refreshes (shutdown); in-flight ones finish. */
void		 refresh_stop(struct refresh *);
/* Stats of the last complete pass. */
void		 refresh_stats(const struct refresh *, struct refresh_stats *);

/*
 * The usage table (proxy/refresh/usage.h): the hit path records its uses there,
 * and stores make room through it (usage_make_room, usage_map_full).
 * Borrowed: valid until refresh_free.
 */
struct usage	*refresh_usage(struct refresh *);
/*
 * map_resident_max_mb: above this many bytes of resident file pages, a
 * pass's end releases the map even while hits are served; 0: never then.
 */
void		 refresh_set_map_cap(struct refresh *, size_t bytes);

/* A uniform double in [0, 1) for jitter. */
double		 refresh_rand(void);

/*
 * An operator's ask (staplectl refresh): every entry, a kind's, or the
 * keys listed, renewed now. Each goes through the scheduler's slots and
 * token buckets (max_inflight, rate_limit_per_s), after the due entries
 * of each turn, so an ask over a million entries starts them at the
 * schedule's pace and never at once; and each is started as a scheduled
 * refresh is (refresh_kind_conf.start: single flight, failover,
 * admission, storage). An ask over a kind or every entry walks the store
 * in key order and leaves out entries never refreshed (VCEKs, PCK
 * certificates: counted as skipped); a key asked by name is renewed
 * whatever its kind, and one the store does not hold fails.
 */
struct cache_ask;
struct cache_ask_line;
struct refresh_ask;
/*
 * Called once per entry (CACHE_ASK_RENEWED, UNCHANGED, FAILED), then once
 * more with the last line (DONE with the counts, or STOPPED with why: the
 * daemon stops, or the store is read-only). The line is borrowed for the
 * call, which must not call refresh_ask_cancel.
 */
typedef void	 refresh_ask_cb(const struct cache_ask_line *, void *arg);
/*
 * Start ask (copied; its keys are looked up now); the first entries start
 * in the next due turn. NULL when memory is short.
 */
struct refresh_ask *refresh_ask_start(struct refresh *, const struct cache_ask *,
		    refresh_ask_cb *cb, void *arg);
/*
 * Stop asking: no more entries start, and cb is never called again (the
 * refreshes running finish as scheduled ones). Not from cb. Accepts NULL.
 */
void		 refresh_ask_cancel(struct refresh_ask *);

#endif
