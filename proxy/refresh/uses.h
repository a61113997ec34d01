/* SPDX-License-Identifier: Apache-2.0 */
/* Uses waiting for the walk: fingerprints of entries asked since their last recorded use. */
#ifndef PROXY_USES_H
#define PROXY_USES_H

#include <stddef.h>
#include <stdint.h>

/*
 * A hit on an entry whose recorded use is old is not written at once: its
 * fingerprint waits here until the refresh walk reaches the entry in key
 * order, and the walk writes the uses of neighbouring entries together
 * (docs/decisions/0008-uses-written-by-the-walk.md). Two generations: hits
 * add to the current one; when a walk pass begins, what the previous one
 * still holds (entries the whole pass did not find: deleted since) is
 * dropped and the current one becomes the previous. Each generation holds
 * at most max_slots / 4 * 3 fingerprints (8 bytes a slot).
 */
struct uses;

/* max_slots: a power of two, at least 1024; NULL out of memory. */
struct uses	*uses_new(size_t max_slots);
void		 uses_free(struct uses *);	/* accepts NULL */
/* The fingerprint of kind+key (never 0). */
uint64_t	 uses_fp(int kind, const uint8_t *key, size_t klen);
/* 0 when it waits now (or already did), -1 when full or out of memory. */
int		 uses_add(struct uses *, uint64_t fp);
int		 uses_has(const struct uses *, uint64_t fp);
/* 1 when it waited (and no longer does), 0 when it did not. */
int		 uses_take(struct uses *, uint64_t fp);
/* A walk pass begins. Returns how many the previous generation dropped. */
size_t		 uses_turn(struct uses *);
/* Forget every waiting use. */
void		 uses_clear(struct uses *);
size_t		 uses_count(const struct uses *);

#endif
