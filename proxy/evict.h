/* SPDX-License-Identifier: Apache-2.0 */
/* Eviction candidates: the least-recently-asked entries of one service, found by the refresh walk. */
#ifndef PROXY_EVICT_H
#define PROXY_EVICT_H

#include <stddef.h>
#include <stdint.h>

#include "cache/record.h"

/* Candidates a walk pass keeps per capped service (the oldest asked). */
#define EVICT_CANDIDATES	2048

/* One candidate; key is owned by the set. */
struct evict_cand {
	int64_t		 asked;		/* evict_asked() when the walk saw it */
	uint8_t		*key;
	size_t		 klen;
};

struct evict_set;

/*
 * Whether an entry may be evicted at all: 0 for an entry imported (or
 * prefetched) by staplectl and not asked since (CACHE_F_IMPORTED), which
 * an air-gapped site asks for only at its next boot; 1 otherwise.
 */
int	evict_eligible(const struct cache_meta *);
/* When the entry was last asked: last_served_at, or fetched_at if never. */
int64_t	evict_asked(const struct cache_meta *);

/* A set of at most max candidates (0: EVICT_CANDIDATES); NULL out of memory. */
struct evict_set	*evict_new(size_t max);
void			 evict_free(struct evict_set *);	/* accepts NULL */
/* Forget every candidate (a new walk pass begins). */
void			 evict_clear(struct evict_set *);
/*
 * Offer an entry seen by the walk (key copied). Eligible entries are kept
 * while the set has room, then only when asked longer ago than the most
 * recently asked one held, which they replace. Offers go to a set
 * cleared since its last evict_seal. Returns 1 kept, 0 not, -1 out of
 * memory (the set is unchanged).
 */
int	evict_offer(struct evict_set *, const uint8_t *key, size_t klen,
	    const struct cache_meta *);
/* The pass is over: order the candidates oldest first for evict_next. */
void	evict_seal(struct evict_set *);
/*
 * The oldest candidate not yet returned since evict_seal, or NULL when
 * none is left. Borrowed: valid until the next evict_clear or evict_free.
 */
const struct evict_cand	*evict_next(struct evict_set *);
/* Candidates held. */
size_t	evict_count(const struct evict_set *);

#endif
