/* SPDX-License-Identifier: Apache-2.0 */
/* The negative cache: answers every mirror would repeat (404/410, definitive), remembered briefly per service. */
#ifndef PROXY_NEGCACHE_H
#define PROXY_NEGCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cache/store.h"

/*
 * A 404/410 about an object, or an unsigned answer about the request
 * (ENTRY_DEFINITIVE), is the same from every mirror: a service remembers
 * it for negative_ttl_s and gives it again without asking upstream. The
 * cache is NEGCACHE_SLOTS slots indexed by a hash of the key, one answer
 * each: a newer key takes the slot of an older one that hashes alike
 * (O(1), no eviction order; a collision costs one upstream ask). A slot
 * keeps its key after its time, so a repeated answer is known as one
 * (negcache_put returns 1), which keeps a log line per state, not per ask.
 *
 * Everything runs on the event loop's thread; nothing here reads the
 * clock (`now` comes in).
 */

#define NEGCACHE_SLOTS		1024	/* remembered answers per service */
#define NEGCACHE_MAX_BODY_BYTES	4096	/* a longer body is not kept */

/* One remembered answer; borrowed from the cache until the next put or forget. */
struct negcache_entry {
	uint8_t		 key[CACHE_KEY_MAX_BYTES];
	size_t		 klen;
	int		 status;	/* the upstream's HTTP status */
	int		 definitive;	/* an ENTRY_DEFINITIVE answer: served as the kind serves, bytes as sent */
	time_t		 until;		/* live while now < until */
	uint8_t		*body;		/* as sent, or NULL (not kept) */
	size_t		 body_len;
};

struct negcache;

/* NEGCACHE_SLOTS empty slots, or NULL when memory is short. */
struct negcache	*negcache_new(void);
/* Accepts NULL. */
void		 negcache_free(struct negcache *);

/*
 * Remember an answer about key until `until`. A body over
 * NEGCACHE_MAX_BODY_BYTES (or one that cannot be copied) is not kept: a
 * 404/410 is remembered without it, a definitive answer, whose bytes are
 * what is served, is not remembered at all. Returns 1 when the slot
 * already held the same answer for the key (live or not: the state has
 * not changed), 0 when it is new, -1 when nothing is remembered (nc NULL,
 * a key over CACHE_KEY_MAX_BYTES, or a definitive answer without bytes
 * that can be kept).
 */
int		 negcache_put(struct negcache *, const uint8_t *key, size_t klen,
		    int status, int definitive, const uint8_t *body, size_t len,
		    time_t until);
/* The answer remembered for key and live at now, or NULL (nc NULL too). */
const struct negcache_entry *negcache_live(const struct negcache *,
		    const uint8_t *key, size_t klen, time_t now);
/* A verified answer was stored: what was remembered about key no longer holds. */
void		 negcache_forget(struct negcache *, const uint8_t *key, size_t klen);

#endif
