/* SPDX-License-Identifier: Apache-2.0 */
/* Refresh backoff in memory: a fixed table of fingerprints, each looked up in a short probe from its home slot. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "proxy/refresh/backoff.h"

struct backoff {
	struct backoff_rec	*slot;
	size_t			 mask;	/* slots - 1 */
	size_t			 n;
};

struct backoff *
backoff_new(size_t slots)
{
	struct backoff	*b;

	if (slots < BACKOFF_PROBE || (slots & (slots - 1)) != 0)
		return NULL;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	if ((b->slot = calloc(slots, sizeof(*b->slot))) == NULL) {
		free(b);
		return NULL;
	}
	b->mask = slots - 1;
	return b;
}

void
backoff_free(struct backoff *b)
{
	if (b == NULL)
		return;
	free(b->slot);
	free(b);
}

/* The slot holding fp, or NULL. */
static struct backoff_rec *
find(struct backoff *b, uint64_t fp)
{
	size_t	i, at;

	for (i = 0; i < BACKOFF_PROBE; i++) {
		at = ((size_t)fp + i) & b->mask;
		if (b->slot[at].fp == fp)
			return &b->slot[at];
	}
	return NULL;
}

static void
clear(struct backoff *b, struct backoff_rec *s)
{
	memset(s, 0, sizeof(*s));
	b->n--;
}

const struct backoff_rec *
backoff_get(struct backoff *b, uint64_t fp, int64_t fetched_at)
{
	struct backoff_rec	*s;

	if (b == NULL || fp == 0 || b->n == 0 || (s = find(b, fp)) == NULL)
		return NULL;
	if (s->fetched_at != fetched_at) {
		clear(b, s);
		return NULL;
	}
	return s;
}

void
backoff_set(struct backoff *b, uint64_t fp, int64_t fetched_at,
    uint32_t failures, int64_t retry_at)
{
	struct backoff_rec	*s, *c;
	size_t			 i;

	if (b == NULL || fp == 0)
		return;
	if ((s = find(b, fp)) == NULL) {
		/* An empty slot of the probe, else the earliest retry's. */
		for (i = 0; i < BACKOFF_PROBE; i++) {
			c = &b->slot[((size_t)fp + i) & b->mask];
			if (c->fp == 0) {
				s = c;
				break;
			}
			if (s == NULL || c->retry_at < s->retry_at)
				s = c;
		}
		if (s->fp == 0)
			b->n++;
	}
	s->fp = fp;
	s->fetched_at = fetched_at;
	s->failures = failures;
	s->retry_at = retry_at;
}

void
backoff_drop(struct backoff *b, uint64_t fp)
{
	struct backoff_rec	*s;

	if (b != NULL && fp != 0 && b->n > 0 && (s = find(b, fp)) != NULL)
		clear(b, s);
}

size_t
backoff_count(const struct backoff *b)
{
	return b != NULL ? b->n : 0;
}
