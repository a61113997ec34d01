/* SPDX-License-Identifier: Apache-2.0 */
/* The usage table's private state, shared by proxy/refresh/usage*.c: struct usage and the calls between its files. */
#ifndef PROXY_USAGE_INT_H
#define PROXY_USAGE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <event2/event.h>

#include "cache/writer.h"
#include "proxy/refresh/evict.h"
#include "proxy/refresh/usage.h"
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
/*
 * A hit on an entry whose recorded use is older than the touch resolution
 * (usage_hit) waits as a fingerprint (proxy/refresh/uses.h) until the walk
 * reaches the entry, and the walk writes the waiting uses in key order,
 * WALK_TOUCH_BATCH to a transaction: neighbours share their leaf pages.
 * Written one by one, as hits come, a first hit in an hour on each of a
 * million entries cost a leaf page written per hit. At most
 * USES_MAX_SLOTS / 4 * 3 wait in each of the two generations (8 bytes a
 * slot); beyond, hits are written as they come.
 */
#define WALK_TOUCH_BATCH	1024
#define USES_MAX_SLOTS		((size_t)1 << 20)
/*
 * A full map is said at most once an interval (usage_map_full), and is
 * over once no write was refused for as long.
 */
#define REFRESH_FULL_LOG_S	60

struct landing {
	uint64_t	fp;	/* uses_fp(); 0: empty */
	int64_t		at;
};

/* A kind's rules (usage_set_kind). */
struct usage_kind {
	int		refreshed;
	long		idle_expire_s;
	size_t		max_entries;	/* 0: none */
};

struct usage {
	struct event_base	*base;
	struct cache		*cache;
	struct cache_writer	*writer;	/* NULL: the loop writes */
	usage_landed_fn		*landed;
	void			*landed_arg;
	struct event		*touch_ev;
	int			 stopped;
	struct usage_kind	 kinds[CACHE_KIND_MAX];
	unsigned long		 hits;		/* usage_hit calls, ever */
	struct cache_touch	*touches;
	size_t			 ntouches;
	struct landing		 landing[LANDING_SLOTS];	/* written, not yet landed */
	size_t			 nlanding;
	unsigned		 landing_batches;	/* in flight */
	struct uses		*uses;		/* hits waiting for the walk */
	struct cache_touch	*wt;		/* their uses, found by the walk */
	size_t			 nwt;
	/* max_entries: candidates of the pass in progress, and of the last one */
	struct evict_set	*building[CACHE_KIND_MAX];
	struct evict_set	*ready[CACHE_KIND_MAX];
	size_t			 count[CACHE_KIND_MAX];	/* entries, as far as we know */
	struct usage_full	 full;
	int64_t			 full_logged;	/* when the spell was last said */
	unsigned long		 full_refused_said;	/* `refused` then */
	unsigned long		 full_evicted_said;
};

/* usage.c: the touch table, and the batches in flight to the writer. */
void	usage_touches_write(struct usage *u, const struct cache_touch *t,
	    size_t n);
const struct cache_touch *usage_touch_find(const struct usage *u, int kind,
	    const uint8_t *key, size_t klen);
int64_t	usage_landing_at(const struct usage *u, uint64_t fp);

/* usage_walk.c: the uses the walk takes, and all of them at the end. */
const struct cache_touch *usage_walk_touch_find(const struct usage *u,
	    int kind, const uint8_t *key, size_t klen);
void	usage_write_all(struct usage *u);

/* usage_evict.c: one entry not in use evicted, of kind first. 0, or -1 when none is left. */
int	usage_evict_idle(struct usage *u, enum cache_kind kind, time_t now);

/* usage_full.c: the full map's spell, said once an interval (at a pass's end). */
void	usage_full_tick(struct usage *u, time_t now);

#endif
