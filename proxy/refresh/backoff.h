/* SPDX-License-Identifier: Apache-2.0 */
/* Refresh backoff held in memory beside the store's copy: failures and the next try of each failing entry, by fingerprint. */
#ifndef PROXY_BACKOFF_H
#define PROXY_BACKOFF_H

#include <stddef.h>
#include <stdint.h>

/*
 * A failed refresh writes its backoff (refresh_failures, next_refresh_at)
 * into the entry's meta; a store that cannot take the write (a full map,
 * a full disk) would leave the entry due, and the due turn would ask the
 * upstream again at once. So the scheduler keeps each failing entry's
 * backoff here too and asks the store's due index only for what this
 * table does not hold back.
 *
 * A bounded table of slots (32 bytes each), looked up by the entry's
 * fingerprint (uses_fp) in BACKOFF_PROBE slots from its home. When all
 * of them are taken, the record with the earliest retry goes (its entry
 * is due soonest anyway): the entry's next failure then counts on from
 * what the store holds. A record made for one answer of the entry is
 * dropped once the entry holds another (fetched_at differs): a client's
 * miss stored a new answer since.
 */
#define BACKOFF_PROBE	8

struct backoff;

struct backoff_rec {
	uint64_t	fp;		/* uses_fp(kind, key); 0: an empty slot */
	int64_t		fetched_at;	/* the entry's, when the refresh failed */
	int64_t		retry_at;	/* not asked again before */
	uint32_t	failures;	/* consecutive */
};

/* slots: a power of two, at least BACKOFF_PROBE; NULL when not or out of memory. */
struct backoff	*backoff_new(size_t slots);
void		 backoff_free(struct backoff *);	/* accepts NULL */
/*
 * The record of fp for the answer fetched at fetched_at, or NULL: none,
 * or one for another answer (then dropped). Borrowed: valid until the
 * next backoff_set or backoff_drop.
 */
const struct backoff_rec *backoff_get(struct backoff *, uint64_t fp,
	    int64_t fetched_at);
/* Record (or replace) fp's backoff; takes another's slot when the probe is full. */
void	backoff_set(struct backoff *, uint64_t fp, int64_t fetched_at,
	    uint32_t failures, int64_t retry_at);
/* Forget fp (its refresh succeeded, or the entry is gone). */
void	backoff_drop(struct backoff *, uint64_t fp);
/* Records held. */
size_t	backoff_count(const struct backoff *);

#endif
