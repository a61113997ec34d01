/* SPDX-License-Identifier: Apache-2.0 */
/* What clients asked for: hits and uses batched into the store's writes, eviction candidates, room made for new entries and in a full map. */
#ifndef PROXY_USAGE_H
#define PROXY_USAGE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cache/store.h"
#include "entry/kinds.h"

/*
 * The usage of the store's entries, as the hit path records it and as
 * eviction reads it. Every call is made on the event loop's thread, and
 * none of them enters the refresh scheduler: a hit costs a look at the
 * entry's stored use and, at most, a slot in a table of unwritten hits
 * (usage_hit).
 *
 * A use reaches the store one of three ways: a hit on an entry whose
 * recorded use is stale waits as a fingerprint (proxy/refresh/uses.h) until the
 * refresh walk reaches the entry, and the walk writes the waiting uses in
 * key order, WALK_TOUCH_BATCH to a transaction (neighbours share their
 * leaf pages); a hit that must be exact (near max_entries, an import's
 * first ask, an entry on probation) goes to the touch table, written when
 * TOUCH_BATCH entries wait or every TOUCH_FLUSH_MS; a miss is recorded
 * there too (usage_touch). Writes go to the store's writer thread when
 * there is one: until a batch lands its uses are remembered here, so an
 * eviction in between sees them.
 *
 * Eviction (max_entries, docs/refresh.md, "Bounded upstream work"; the
 * full map) deletes the least valuable candidates the last walk pass
 * offered (proxy/refresh/evict.h: the segmented LRU), each checked again
 * first against the uses recorded here since.
 */
struct event_base;
struct cache_writer;
struct usage;

/*
 * Called on the loop when a batch of uses the writer took has landed (its
 * pages were read and written: the owner may let them go), with the arg
 * given to usage_new. Not called for batches written while stopped.
 */
typedef void	 usage_landed_fn(void *arg);

/*
 * A new usage table over cache. writer (may be NULL: the loop writes)
 * takes the batches of uses; landed (may be NULL) hears when one lands.
 * base, cache and writer are borrowed and must outlive it. Returns NULL
 * when memory is short (about 600 KiB now, 16 MiB at most for the uses
 * waiting for the walk).
 */
struct usage	*usage_new(struct event_base *base, struct cache *cache,
		    struct cache_writer *writer, usage_landed_fn *landed,
		    void *arg);
/*
 * Write what is recorded and not written (every use still waiting for the
 * walk too: a walk of the whole store, about 3 s at a million entries),
 * then free. Accepts NULL.
 */
void		 usage_free(struct usage *);
/*
 * A kind's rules: refreshed (0: the kind has no refresher, and neither
 * candidates nor a cap apply to it), idle_expire_s (an entry not asked
 * for within it is idle: usage_idle), max_entries (0: no cap). Replaces
 * the kind's earlier rules (a reload).
 */
void		 usage_set_kind(struct usage *, enum cache_kind, int refreshed,
		    long idle_expire_s, size_t max_entries);
/* Start the touch table's timer (every TOUCH_FLUSH_MS). */
void		 usage_start(struct usage *);
/*
 * Write the unwritten hits and the uses the walk took, and stop the timer;
 * from here on hits are recorded in the touch table (none waits for a
 * walk), and landed is no longer called.
 */
void		 usage_stop(struct usage *);

/* ---- the hit path ---------------------------------------------------------- */

/*
 * A hit served from the stored entry m (borrowed for the call): counted
 * (usage_hits), and recorded unless the store already holds a use of it
 * within the last hour (or idle_expire_s / 4 if shorter), so that hits
 * spread over many entries do not each cost a write. An import not asked
 * since is always recorded (as two uses: it is protected from eviction
 * once asked), and so is every hit of a kind at 90% of its max_entries
 * or more (eviction goes by the last use), and a hit on an entry on
 * probation (proxy/refresh/evict.h: the ask that protects it).
 */
void		 usage_hit(struct usage *, enum cache_kind, const uint8_t *key,
		    size_t klen, const struct cache_meta *m, time_t now);
/* A use of kind+key at now (a miss that stored it), into the touch table. */
void		 usage_touch(struct usage *, enum cache_kind, const uint8_t *key,
		    size_t klen, time_t now);
/* Write the touch table now. Accepts NULL. */
void		 usage_flush(struct usage *);
/* usage_hit's calls, ever (the page release's measure of load). */
unsigned long	 usage_hits(const struct usage *);
/*
 * Whether the entry m of kind was not asked for within its idle_expire_s
 * (docs/refresh.md, "Imports and idle entries"): it is left to expire,
 * not refreshed.
 */
int		 usage_idle(const struct usage *, int kind,
		    const struct cache_meta *m, time_t now);

/* ---- the refresh walk's side ------------------------------------------------ */

/*
 * A walk pass begins: the uses the previous pass did not reach are
 * dropped (their entries were deleted), and every refreshed kind
 * collects its eviction candidates afresh.
 */
void		 usage_pass_begin(struct usage *);
/* Before a chunk of chunk entries: room for a use from each of them. */
void		 usage_walk_room(struct usage *, size_t chunk);
/*
 * The walk reached kind+key: the use waiting for it is taken and queued
 * with the walk's time now. 1 when one waited (the entry was asked since
 * its recorded use), else 0.
 */
int		 usage_walk_use(struct usage *, enum cache_kind,
		    const uint8_t *key, size_t klen, time_t now);
/* The walk purges kind+key: a use waiting for it is forgotten. */
void		 usage_walk_purged(struct usage *, enum cache_kind,
		    const uint8_t *key, size_t klen);
/* Offer the entry m (as the walk sees it) as an eviction candidate. */
void		 usage_walk_offer(struct usage *, enum cache_kind,
		    const uint8_t *key, size_t klen, const struct cache_meta *m);
/* Write the uses the walk took, in key order: one transaction. */
void		 usage_walk_flush(struct usage *);
/*
 * The pass is complete: entries (CACHE_KIND_MAX counts, by kind) is what
 * it saw, its candidates become the ones eviction uses, and a spell of
 * full map is said, or ended (usage_map_full).
 */
void		 usage_pass_end(struct usage *, const size_t *entries,
		    time_t now);

/* ---- eviction ------------------------------------------------------------------ */

/*
 * Before storing a NEW entry of a kind with max_entries: make room by
 * deleting the least valuable candidates the last walk pass found
 * (docs/decisions/0004-segmented-lru.md, proxy/refresh/evict.h: probation
 * first, least recently asked first; protected ones only beyond their
 * share), each checked again first: one asked since (in the store or among
 * the uses not yet written) or imported and not asked is skipped. At most a
 * few are deleted for one new entry, so a store over its cap comes down
 * over the following ones. Returns 0 when the entry may be stored (and
 * counts it), -1 when nothing could be evicted: the caller then passes the
 * answer on without storing. Evictions are counted in metrics.evictions.
 * Not from a cache_walk callback (it deletes).
 */
int		 usage_make_room(struct usage *, enum cache_kind);

/* A spell of full map: since 0 when the map is not known to be full. */
struct usage_full {
	int64_t		since;		/* the spell's first refused write */
	int64_t		last;		/* its latest */
	unsigned long	refused;	/* writes refused in the spell */
	unsigned long	evicted;	/* entries not in use evicted in it */
};

/*
 * A write the store refused because its map is full (cache_map_full),
 * for an entry of kind (0: no entry's, such as the status record). The
 * refusal is counted (metrics.store_map_full_writes) and starts or
 * continues a spell of full map, shown in /readyz, the daemon's record
 * for `staplectl status` and stapled_store_map_full; the first refusal
 * of a spell is logged at error with the caller's message (printf's fmt),
 * the others at debug, and while the spell lasts a line once every
 * REFRESH_FULL_LOG_S gives their count (at a walk pass's end). Then room
 * is made: a few entries that are not in use (not asked within
 * idle_expire_s, or past their nextUpdate; never one imported and not
 * asked since) are evicted, the least valuable first by the eviction
 * order of the last walk pass, of kind first, then of the other kinds
 * (metrics.full_evictions). Entries in use are never evicted to make
 * room. Returns how many were evicted: the caller may try its write
 * again when that is more than 0. Not from a cache_walk callback.
 */
int		 usage_map_full(struct usage *, enum cache_kind kind,
		    time_t now, const char *fmt, ...)
		    __attribute__((format(printf, 4, 5)));
/* The spell of full map into *f (all 0: none). */
void		 usage_full_get(const struct usage *, struct usage_full *f);

#endif
