/* SPDX-License-Identifier: Apache-2.0 */
/* The uses that wait for the refresh walk: taken as it reaches their entries, written in key order, and all of them at the end. */
#include <config.h>

#include <string.h>
#include <time.h>

#include "proxy/refresh/evict.h"
#include "proxy/log.h"
#include "proxy/refresh/usage.h"
#include "proxy/refresh/usage_int.h"
#include "proxy/refresh/uses.h"

/*
 * A use waiting for the walk (usage_hit): taken, and its touch queued
 * with the walk's time; 1 when there was one. The caller makes room for
 * a chunk's worth first (usage_walk_room).
 */
int
usage_walk_use(struct usage *u, enum cache_kind kind, const uint8_t *key,
    size_t klen, time_t now)
{
	struct cache_touch	*t;

	/* No use waits (a quiet store): not even the hash. */
	if (uses_count(u->uses) == 0 || u->nwt >= WALK_TOUCH_BATCH ||
	    !uses_take(u->uses, uses_fp(kind, key, klen)))
		return 0;
	t = &u->wt[u->nwt++];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->klen = klen;
	memcpy(t->key, key, klen);
	t->served = 1;
	t->last_served_at = now;
	return 1;
}

/* The uses the walk found, in key order: one transaction. */
void
usage_walk_flush(struct usage *u)
{
	if (u->nwt == 0)
		return;
	usage_touches_write(u, u->wt, u->nwt);
	u->nwt = 0;
}

/* Before a chunk of the walk: room for a use from each of its entries. */
void
usage_walk_room(struct usage *u, size_t chunk)
{
	if (u->nwt + chunk > WALK_TOUCH_BATCH)
		usage_walk_flush(u);
}

/*
 * Every use still waiting, written now (usage_free, once the loop has
 * answered its last clients): a walk of the whole store that only looks
 * for them, WALK_TOUCH_BATCH entries a transaction at most. About 3 s at
 * a million entries.
 */
struct uses_walk {
	struct usage	*u;
	time_t		 now;
	uint8_t		 after[1 + CACHE_KEY_MAX_BYTES];
	size_t		 afterlen;
};

static int
uses_walk_one(enum cache_kind kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, void *arg)
{
	struct uses_walk	*uw = arg;

	(void)m;
	uw->after[0] = (uint8_t)kind;
	memcpy(uw->after + 1, key, klen);
	uw->afterlen = 1 + klen;
	if (kind < CACHE_KIND_MAX && klen <= CACHE_KEY_MAX_BYTES)
		(void)usage_walk_use(uw->u, kind, key, klen, uw->now);
	return 0;
}

void
usage_write_all(struct usage *u)
{
	struct uses_walk	uw;
	size_t			waiting = uses_count(u->uses);
	long			n;

	if (waiting == 0 || cache_read_only(u->cache)) {
		uses_clear(u->uses);
		return;
	}
	memset(&uw, 0, sizeof(uw));
	uw.u = u;
	uw.now = time(NULL);
	log_info("refresh: writing %zu recorded use(s) the walk had not reached",
	    waiting);
	do {
		usage_walk_flush(u);
		n = cache_walk(u->cache, 0, uw.afterlen ? uw.after : NULL,
		    uw.afterlen, WALK_TOUCH_BATCH, uses_walk_one, &uw);
		if (n == -1)
			log_err("refresh: writing recorded uses: %s",
			    cache_strerror(u->cache));
	} while (n == WALK_TOUCH_BATCH && uses_count(u->uses) > 0);
	usage_walk_flush(u);
	/* What no entry matched was deleted since: nothing to write. */
	uses_clear(u->uses);
}

/*
 * The use the walk took for kind+key and has not yet written, or NULL: a
 * scan of at most WALK_TOUCH_BATCH, for an eviction's last check.
 */
const struct cache_touch *
usage_walk_touch_find(const struct usage *u, int kind, const uint8_t *key,
    size_t klen)
{
	size_t	i;

	for (i = 0; i < u->nwt; i++)
		if (u->wt[i].kind == kind && u->wt[i].klen == klen &&
		    memcmp(u->wt[i].key, key, klen) == 0)
			return &u->wt[i];
	return NULL;
}

void
usage_walk_purged(struct usage *u, enum cache_kind kind, const uint8_t *key,
    size_t klen)
{
	if (uses_count(u->uses) > 0)
		(void)uses_take(u->uses, uses_fp(kind, key, klen));
}

void
usage_walk_offer(struct usage *u, enum cache_kind kind, const uint8_t *key,
    size_t klen, const struct cache_meta *m)
{
	if (u->building[kind] != NULL &&
	    evict_offer(u->building[kind], key, klen, m) == -1)
		log_debug("refresh: no memory for an eviction candidate");
}
