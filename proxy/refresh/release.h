/* SPDX-License-Identifier: Apache-2.0 */
/* Page release: letting go of the store map's resident pages while hits are few (docs/refresh.md, "Memory"). */
#ifndef PROXY_RELEASE_H
#define PROXY_RELEASE_H

#include <stddef.h>

/*
 * What the walk, the due turns and the refreshes read of the store stays
 * mapped in the process (LMDB maps the file); a quiet daemon lets it go
 * (cache_release_pages), so that its resident memory stays small. Under
 * hit load it keeps the pages: dropping them would cost each following
 * hit its page faults again. The load is the hit rate, read from usage
 * (usage_hits) by a check every RELEASE_CHECK_MS, and again when a
 * release is asked for (release_soon) and the last check is
 * RELEASE_MIN_MS old: while hits come at most RELEASE_QUIET_HITS_PER_S,
 * pages go. Every call is made on the event loop's thread.
 */
#define RELEASE_QUIET_HITS_PER_S	1000
#define RELEASE_CHECK_MS		1000
#define RELEASE_MIN_MS			100

struct event_base;
struct cache;
struct usage;
struct release;

/*
 * A new page release for cache's map, measuring load by usage's hits.
 * base, cache and usage are borrowed and must outlive it. NULL when
 * memory is short.
 */
struct release	*release_new(struct event_base *base, struct cache *cache,
		    const struct usage *usage);
void		 release_free(struct release *);	/* accepts NULL */
/*
 * map_resident_max_mb in bytes: above this many bytes of resident file
 * pages, a check lets go of the map even while hits are served; 0: never
 * then.
 */
void		 release_set_cap(struct release *, size_t bytes);
/*
 * Let go of what start-up read (the baseline of release_soon) and start
 * the load check's timer.
 */
void		 release_start(struct release *);
/* Stop the timers and any release under way; release_soon does nothing until release_start. */
void		 release_stop(struct release *);
/* The load check, and a release when it finds hits few or the cap exceeded. */
void		 release_if_quiet(struct release *);
/*
 * The store was read (a due turn, a refresh's end, a walk's chunk, a
 * batch of uses landed): release within RELEASE_SOON_MS while hits are
 * few, or at once when the resident file pages have grown by
 * RELEASE_BURST_BYTES since the last release (one read of
 * /proc/self/statm).
 */
void		 release_soon(struct release *);

#endif
