/* SPDX-License-Identifier: Apache-2.0 */
/* max_entries and the full map: each walk pass's eviction candidates, and room made by evicting the least valuable (probation first). */
#include <config.h>

#include <time.h>

#include "proxy/refresh/evict.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/refresh/usage.h"
#include "proxy/refresh/usage_int.h"
#include "proxy/refresh/uses.h"

/*
 * Evictions a new entry makes at most: a store over its cap by more (a
 * lowered max_entries, or the default derived from map_size_mb on a
 * store that holds more) comes down EVICT_PER_NEW - 1 entries a new one,
 * and no one miss holds the loop for thousands of deletes.
 */
#define EVICT_PER_NEW	4

void
usage_pass_begin(struct usage *u)
{
	size_t	k, n;

	if ((n = uses_turn(u->uses)) > 0)
		log_debug("refresh: %zu recorded use(s) of entries deleted since",
		    n);
	/* Candidates for max_entries and for a full map (usage_evict_idle). */
	for (k = 1; k < CACHE_KIND_MAX; k++) {
		if (!u->kinds[k].refreshed) {
			evict_free(u->building[k]);
			u->building[k] = NULL;
			continue;
		}
		if (u->building[k] == NULL &&
		    (u->building[k] = evict_new(EVICT_CANDIDATES)) == NULL)
			log_err("refresh: %s: no memory for eviction candidates",
			    cache_kind_str[k]);
		else
			evict_clear(u->building[k]);
	}
}

/* The pass is complete: its candidates and its count are the ones to use. */
void
usage_pass_end(struct usage *u, const size_t *entries, time_t now)
{
	struct evict_set	*t;
	size_t			 k;

	for (k = 1; k < CACHE_KIND_MAX; k++) {
		u->count[k] = entries[k];
		t = u->ready[k];
		u->ready[k] = u->building[k];
		u->building[k] = t;
		if (u->ready[k] != NULL)
			evict_seal(u->ready[k]);
		if (u->building[k] != NULL)
			evict_clear(u->building[k]);
	}
	usage_full_tick(u, now);
}

/*
 * Delete one candidate unless it was asked since the walk saw it, or,
 * with idle_only, unless it is in use: asked within idle_expire_s and
 * not past its nextUpdate. 0 deleted, -1 not.
 */
static int
evict_one(struct usage *u, int kind, const struct evict_cand *c,
    int idle_only, time_t now)
{
	const struct cache_touch	*t;
	struct cache_meta		 m;
	uint64_t			 fp;
	char				 hex[17];

	if (c->klen > CACHE_KEY_MAX_BYTES ||
	    cache_get_meta(u->cache, kind, c->key, c->klen, &m) != 1 ||
	    !evict_eligible(&m) || evict_asked(&m) > c->asked)
		return -1;
	if (idle_only && m.next_update > now && !usage_idle(u, kind, &m, now))
		return -1;
	/* A hit not yet written (or landed); a miss's own touch has its fetch's second. */
	if ((t = usage_touch_find(u, kind, c->key, c->klen)) != NULL &&
	    t->last_served_at > c->asked)
		return -1;
	/* A use waiting for the walk, or taken by it and not yet landed. */
	fp = uses_fp(kind, c->key, c->klen);
	if (uses_has(u->uses, fp) || usage_landing_at(u, fp) > c->asked ||
	    usage_walk_touch_find(u, kind, c->key, c->klen) != NULL)
		return -1;
	if (cache_del(u->cache, kind, c->key, c->klen) == -1) {
		/* A full map that takes no delete either is said on its own. */
		if (cache_map_full(u->cache))
			log_debug("refresh: evicting a %s entry: %s",
			    cache_kind_str[kind], cache_strerror(u->cache));
		else
			log_err("refresh: evicting a %s entry: %s",
			    cache_kind_str[kind], cache_strerror(u->cache));
		return -1;
	}
	log_hex(hex, sizeof(hex), c->key, c->klen < 8 ? c->klen : 8);
	log_debug("refresh: %s %s: evicted (%s, last asked %llds ago)",
	    cache_kind_str[kind], hex, evict_tier_str[c->tier],
	    (long long)(now - c->asked));
	return 0;
}

int
usage_make_room(struct usage *u, enum cache_kind kind)
{
	const struct evict_cand	*c;
	size_t			 cap, n = 0;
	time_t			 now = time(NULL);

	if (kind <= 0 || kind >= CACHE_KIND_MAX || !u->kinds[kind].refreshed ||
	    (cap = u->kinds[kind].max_entries) == 0) {
		if (kind > 0 && kind < CACHE_KIND_MAX)
			u->count[kind]++;
		return 0;
	}
	/* A store over its cap by more comes down a few entries a new one. */
	while (u->count[kind] >= cap && n < EVICT_PER_NEW) {
		if (u->ready[kind] == NULL ||
		    (c = evict_next(u->ready[kind])) == NULL)
			return n > 0 ? 0 : -1;
		if (evict_one(u, kind, c, 0, now) == 0) {
			u->count[kind]--;
			metrics.evictions[kind]++;
			n++;
		}
	}
	u->count[kind]++;
	return 0;
}

/* One candidate of kind not in use, deleted. 0, or -1 when none is left. */
static int
evict_idle_of(struct usage *u, int kind, time_t now)
{
	const struct evict_cand	*c;

	if (!u->kinds[kind].refreshed || u->ready[kind] == NULL)
		return -1;
	/* A candidate in use is passed over: the next pass offers it again. */
	while ((c = evict_next(u->ready[kind])) != NULL) {
		if (evict_one(u, kind, c, 1, now) == 0) {
			if (u->count[kind] > 0)
				u->count[kind]--;
			metrics.full_evictions[kind]++;
			return 0;
		}
	}
	return -1;
}

int
usage_evict_idle(struct usage *u, enum cache_kind kind, time_t now)
{
	int	k;

	if (kind > 0 && kind < CACHE_KIND_MAX && evict_idle_of(u, kind, now) == 0)
		return 0;
	for (k = 1; k < CACHE_KIND_MAX; k++)
		if (k != (int)kind && evict_idle_of(u, k, now) == 0)
			return 0;
	return -1;
}
