/* SPDX-License-Identifier: Apache-2.0 */
/* Eviction candidates: the least valuable entries of one service (probation, then protected, each least recently asked first), found by the refresh walk. */
#ifndef PROXY_EVICT_H
#define PROXY_EVICT_H

#include <stddef.h>
#include <stdint.h>

#include "cache/record.h"
#include "entry/kinds.h"

/* Candidates a walk pass keeps per capped service (the least valuable). */
#define EVICT_CANDIDATES	2048
/*
 * A segmented LRU over what the record already holds
 * (docs/decisions/0004-segmented-lru.md): an entry asked fewer than
 * EVICT_PROTECT_USES times (the miss that stored it) is on probation, one
 * asked again is protected. Probation goes first; a protected entry goes
 * only while the protected ones are more than EVICT_PROTECTED_PCT of the
 * entries the pass saw.
 */
#define EVICT_PROTECT_USES	2
#define EVICT_PROTECTED_PCT	80

enum evict_tier {
	EVICT_PROBATION = 0,
	EVICT_PROTECTED = 1,
	EVICT_TIERS
};
extern const char *const evict_tier_str[EVICT_TIERS];

/* One candidate; key is owned by the set. */
struct evict_cand {
	int64_t		 asked;		/* evict_asked() when the walk saw it */
	uint8_t		 tier;		/* enum evict_tier when the walk saw it */
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
/* Its segment: protected once asked EVICT_PROTECT_USES times. */
enum evict_tier	evict_tier(const struct cache_meta *);

/* A set of at most max candidates (0: EVICT_CANDIDATES); NULL out of memory. */
struct evict_set	*evict_new(size_t max);
void			 evict_free(struct evict_set *);	/* accepts NULL */
/* Forget every candidate (a new walk pass begins). */
void			 evict_clear(struct evict_set *);
/*
 * Offer an entry seen by the walk (key copied; every entry of the kind is
 * offered, for the counts). Eligible entries are kept while the set has
 * room, then only when less valuable than the most valuable one held
 * (probation before protected, then asked longer ago), which they
 * replace. Offers go to a set cleared since its last evict_seal. Returns
 * 1 kept, 0 not, -1 out of memory (the set is unchanged but for its
 * counts).
 */
int	evict_offer(struct evict_set *, const uint8_t *key, size_t klen,
	    const struct cache_meta *);
/* The pass is over: order the candidates, least valuable first, for evict_next. */
void	evict_seal(struct evict_set *);
/*
 * The least valuable candidate not yet returned since evict_seal, or NULL
 * when none is left: every probation candidate, then protected ones while
 * the protected entries the pass saw, less the protected candidates
 * returned since, are more than EVICT_PROTECTED_PCT of the entries it saw.
 * Borrowed: valid until the next evict_clear or evict_free.
 */
const struct evict_cand	*evict_next(struct evict_set *);
/* Candidates held. */
size_t	evict_count(const struct evict_set *);
/* Entries offered since the last evict_clear: all, or of one tier (eligible only). */
size_t	evict_seen(const struct evict_set *);
size_t	evict_seen_tier(const struct evict_set *, enum evict_tier);

#endif
