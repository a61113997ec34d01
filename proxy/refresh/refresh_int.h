/* SPDX-License-Identifier: Apache-2.0 */
/* The refresh scheduler's private state, shared by proxy/refresh*.c: struct refresh and the calls between its files. */
#ifndef PROXY_REFRESH_INT_H
#define PROXY_REFRESH_INT_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <event2/event.h>

#include "cache/writer.h"
#include "proxy/refresh/backoff.h"
#include "proxy/refresh/evict.h"
#include "proxy/refresh/refresh.h"
#include "proxy/refresh/uses.h"

#define TOUCH_SLOTS		4096	/* the unwritten hits' table (open addressing) */
#define TOUCH_FLUSH_MS		5000
/*
 * Uses sent to the writer and not yet landed, by fingerprint, with the
 * time of the last (eviction's check: asked since the walk saw it).
 * Emptied when no batch is in flight; beyond three quarters full, uses
 * are not remembered.
 */
#define LANDING_SLOTS		(2 * TOUCH_SLOTS)	/* a power of two */

struct landing {
	uint64_t	fp;	/* uses_fp(); 0: empty */
	int64_t		at;
};
/*
 * A hit on an entry whose recorded use is older than the touch resolution
 * (refresh_hit in refresh_touch.c) waits as a fingerprint (proxy/refresh/uses.h)
 * until the walk reaches the entry, and the walk writes the waiting uses
 * in key order, WALK_TOUCH_BATCH to a transaction: neighbours share their
 * leaf pages. Written one by one, as hits come, a first hit in an hour on
 * each of a million entries cost a leaf page written per hit. At most
 * USES_MAX_SLOTS / 4 * 3 wait in each of the two generations (8 bytes a
 * slot); beyond, hits are written as they come.
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
/*
 * Failing entries whose backoff is held in memory too (proxy/refresh/backoff.h):
 * 32 bytes a slot, 2 MiB at most, touched only as entries fail.
 */
#define BACKOFF_SLOTS		((size_t)1 << 16)
/*
 * A full map is said at most once an interval (refresh_map_full), and is
 * over once no write was refused for as long.
 */
#define REFRESH_FULL_LOG_S	60
#define RELEASE_QUIET_HITS_PER_S	1000
#define RELEASE_CHECK_MS		1000
#define RELEASE_MIN_MS			100

struct inflight {
	int		used;
	int		started;
	unsigned	failures;	/* before this refresh */
	uint8_t		kind;
	uint8_t		key[CACHE_KEY_MAX_BYTES];
	size_t		klen;
	struct refresh	*r;
	struct refresh_ask *ask;	/* an operator asked for it (refresh_ask.c), or NULL */
	int64_t		was;		/* its thisUpdate before */
};

/* An entry long expired, deleted after the chunk that found it. */
struct purge_key {
	uint8_t		kind;
	uint8_t		key[CACHE_KEY_MAX_BYTES];
	size_t		klen;
};

/* A spell of full map: since 0 when the map is not known to be full. */
struct full_state {
	int64_t		since;		/* the spell's first refused write */
	int64_t		last;		/* its latest */
	int64_t		logged;		/* when it was last said */
	unsigned long	refused;	/* writes refused in the spell */
	unsigned long	evicted;	/* entries not in use evicted in it */
	unsigned long	refused_said;	/* `refused` when last said */
	unsigned long	evicted_said;
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
	int			 started;	/* refresh_start ran, refresh_stop not since */
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
	struct landing		 landing[LANDING_SLOTS];	/* written, not yet landed */
	size_t			 nlanding;
	unsigned		 landing_batches;	/* in flight */
	struct uses		*uses;		/* hits waiting for the walk */
	struct cache_touch	*wt;		/* their uses, found by the walk */
	size_t			 nwt;
	struct cache_sched	*sched;		/* REFRESH_SCHED_MAX changes to write */
	size_t			 nsched;
	struct purge_key	*purge;		/* REFRESH_WALK_CHUNK of them */
	size_t			 npurge;
	TAILQ_HEAD(, refresh_ask) asks;	/* staplectl refresh's, in order */
	/* max_entries: candidates of the pass in progress, and of the last one */
	struct evict_set	*building[CACHE_KIND_MAX];
	struct evict_set	*ready[CACHE_KIND_MAX];
	size_t			 count[CACHE_KIND_MAX];	/* entries, as far as we know */
	struct backoff		*backoff;	/* failing entries' backoff, in memory too */
	struct full_state	 full;
};

/* A CLOCK_MONOTONIC reading in milliseconds. */
static inline int64_t
refresh_mono_ms(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

/* refresh.c: the slots, the token bucket, the schedule and purge queues, the backoff held in memory. */
int	bucket_take(struct refresh *r, int kind);
struct inflight *inflight_find(struct refresh *r, int kind, const uint8_t *key,
	    size_t klen);
struct inflight *inflight_slot(struct refresh *r, int kind);
void	inflight_claim(struct refresh *r, struct inflight *f, int kind,
	    const uint8_t *key, size_t klen, unsigned failures, int64_t was);
int	kind_refreshed(const struct refresh *r, int kind);
int	entry_idle(const struct refresh *r, int kind, const struct cache_meta *m,
    time_t now);
int	sched_add(struct refresh *r, int kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, int64_t at, uint16_t set, uint16_t clear);
int	sched_apply(struct refresh *r);
void	purge_add(struct refresh *r, int kind, const uint8_t *key, size_t klen);
void	purge_claimed(struct refresh *r);
void	start_claimed(struct refresh *r);
int	backoff_holds(struct refresh *r, int kind, const uint8_t *key,
    size_t klen, const struct cache_meta *m, time_t now, unsigned *failures,
    int64_t *retry_at);

/* refresh_due.c: the due turn (due_ev). */
void	due_cb(evutil_socket_t fd, short what, void *arg);
long	bucket_wait_ms(const struct refresh *r, int kind);

/* refresh_ask.c: operators' asks, in the due turn after the schedule's. */
long	ask_turn(struct refresh *r);
void	ask_done(struct refresh *r, struct inflight *f, int ok, const char *why);
void	asks_stop(struct refresh *r, const char *why);
void	asks_free(struct refresh *r);

/* refresh_walk.c: the paced walk (walk_ev). */
void	walk_cb(evutil_socket_t fd, short what, void *arg);

/* refresh_release.c: letting go of the map's resident pages. */
int	release_check(struct refresh *r);
void	release(struct refresh *r);
void	step_cb(evutil_socket_t fd, short what, void *arg);
void	release_cb(evutil_socket_t fd, short what, void *arg);
void	soon_cb(evutil_socket_t fd, short what, void *arg);
void	release_soon(struct refresh *r);

/* refresh_touch.c: hits and uses, batched into writes. */
int	walk_use(struct refresh *r, enum cache_kind kind, const uint8_t *key,
    size_t klen, time_t now);
void	walk_touches_flush(struct refresh *r);
void	walk_touches_room(struct refresh *r, size_t chunk);
void	uses_write_all(struct refresh *r);
void	touch_cb(evutil_socket_t fd, short what, void *arg);
const struct cache_touch *touch_find(const struct refresh *r, int kind,
	    const uint8_t *key, size_t klen);
const struct cache_touch *walk_touch_find(const struct refresh *r, int kind,
	    const uint8_t *key, size_t klen);
int64_t	landing_at(const struct refresh *r, uint64_t fp);

/* refresh_evict.c: a walk pass's eviction candidates. */
void	evict_pass_begin(struct refresh *r);
void	evict_pass_end(struct refresh *r);
/* For a full map: one entry not in use evicted, of kind first. 0, or -1 when none is left. */
int	refresh_evict_idle(struct refresh *r, enum cache_kind kind, time_t now);

/* refresh_full.c: the full map's spell, said once an interval (at a pass's end). */
void	full_tick(struct refresh *r, time_t now);

#endif
