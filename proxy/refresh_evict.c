/* SPDX-License-Identifier: Apache-2.0 */
/* max_entries: each walk pass's eviction candidates, and room made by evicting the least valuable (probation first). */
#include <config.h>

#include <time.h>

#include "proxy/evict.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/refresh_int.h"
#include "proxy/uses.h"

/* A pass begins: capped kinds collect their eviction candidates afresh. */
void
evict_pass_begin(struct refresh *r)
{
	size_t	k;

	for (k = 1; k < CACHE_KIND_MAX; k++) {
		if (!r->have[k] || r->kinds[k].max_entries == 0) {
			evict_free(r->building[k]);
			r->building[k] = NULL;
			continue;
		}
		if (r->building[k] == NULL &&
		    (r->building[k] = evict_new(EVICT_CANDIDATES)) == NULL)
			log_err("refresh: %s: no memory for eviction candidates",
			    cache_kind_str[k]);
		else
			evict_clear(r->building[k]);
	}
}

/* The pass is complete: its candidates and its count are the ones to use. */
void
evict_pass_end(struct refresh *r)
{
	struct evict_set	*t;
	size_t			 k;

	for (k = 1; k < CACHE_KIND_MAX; k++) {
		r->count[k] = r->last.entries[k];
		t = r->ready[k];
		r->ready[k] = r->building[k];
		r->building[k] = t;
		if (r->ready[k] != NULL)
			evict_seal(r->ready[k]);
		if (r->building[k] != NULL)
			evict_clear(r->building[k]);
	}
}

/* Delete one candidate unless it was asked since the walk saw it. 0 deleted, -1 not. */
static int
evict_one(struct refresh *r, int kind, const struct evict_cand *c)
{
	const struct cache_touch	*t;
	struct cache_meta		 m;
	uint64_t			 fp;
	char				 hex[17];

	if (c->klen > CACHE_KEY_MAX_BYTES ||
	    cache_get_meta(r->cache, kind, c->key, c->klen, &m) != 1 ||
	    !evict_eligible(&m) || evict_asked(&m) > c->asked)
		return -1;
	/* A hit not yet written (or landed); a miss's own touch has its fetch's second. */
	if ((t = touch_find(r, kind, c->key, c->klen)) != NULL &&
	    t->last_served_at > c->asked)
		return -1;
	/* A use waiting for the walk, or taken by it and not yet landed. */
	fp = uses_fp(kind, c->key, c->klen);
	if (uses_has(r->uses, fp) || landing_at(r, fp) > c->asked ||
	    walk_touch_find(r, kind, c->key, c->klen) != NULL)
		return -1;
	if (cache_del(r->cache, kind, c->key, c->klen) == -1) {
		log_err("refresh: evicting a %s entry: %s", cache_kind_str[kind],
		    cache_strerror(r->cache));
		return -1;
	}
	log_hex(hex, sizeof(hex), c->key, c->klen < 8 ? c->klen : 8);
	log_debug("refresh: %s %s: evicted (%s, last asked %llds ago)",
	    cache_kind_str[kind], hex, evict_tier_str[c->tier],
	    (long long)(time(NULL) - c->asked));
	return 0;
}

int
refresh_make_room(struct refresh *r, enum cache_kind kind)
{
	const struct evict_cand	*c;
	size_t			 cap;

	if (kind <= 0 || kind >= CACHE_KIND_MAX || !r->have[kind] ||
	    (cap = r->kinds[kind].max_entries) == 0) {
		if (kind > 0 && kind < CACHE_KIND_MAX)
			r->count[kind]++;
		return 0;
	}
	while (r->count[kind] >= cap) {
		if (r->ready[kind] == NULL ||
		    (c = evict_next(r->ready[kind])) == NULL)
			return -1;
		if (evict_one(r, kind, c) == 0) {
			r->count[kind]--;
			metrics.evictions[kind]++;
		}
	}
	r->count[kind]++;
	return 0;
}
