/* SPDX-License-Identifier: Apache-2.0 */
/* Eviction candidates: a bounded max-heap of the least valuable entries of a service, probation before protected. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "proxy/refresh/evict.h"

struct evict_set {
	struct evict_cand	*c;
	size_t			 n;
	size_t			 max;
	size_t			 next;	/* after evict_seal: the next to return */
	size_t			 seen;	/* entries offered, eligible or not */
	size_t			 tiers[EVICT_TIERS];	/* eligible ones, by tier */
	size_t			 taken;	/* protected candidates returned */
};

const char *const evict_tier_str[EVICT_TIERS] = {
	[EVICT_PROBATION] = "probation",
	[EVICT_PROTECTED] = "protected",
};

int
evict_eligible(const struct cache_meta *m)
{
	return (m->flags & CACHE_F_IMPORTED) == 0;
}

int64_t
evict_asked(const struct cache_meta *m)
{
	return m->last_served_at != 0 ? m->last_served_at : m->fetched_at;
}

enum evict_tier
evict_tier(const struct cache_meta *m)
{
	return m->served_count >= EVICT_PROTECT_USES ? EVICT_PROTECTED :
	    EVICT_PROBATION;
}

/* Whether a is worth less than b: a lower tier, or asked longer ago. */
static int
evict_below(const struct evict_cand *a, const struct evict_cand *b)
{
	if (a->tier != b->tier)
		return a->tier < b->tier;
	return a->asked < b->asked;
}

struct evict_set *
evict_new(size_t max)
{
	struct evict_set	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->max = max != 0 ? max : EVICT_CANDIDATES;
	if ((s->c = calloc(s->max, sizeof(*s->c))) == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

void
evict_clear(struct evict_set *s)
{
	size_t	i;

	for (i = 0; i < s->n; i++)
		free(s->c[i].key);
	memset(s->c, 0, s->n * sizeof(*s->c));
	s->n = 0;
	s->next = 0;
	s->seen = 0;
	memset(s->tiers, 0, sizeof(s->tiers));
	s->taken = 0;
}

void
evict_free(struct evict_set *s)
{
	if (s == NULL)
		return;
	evict_clear(s);
	free(s->c);
	free(s);
}

static void
evict_swap(struct evict_set *s, size_t a, size_t b)
{
	struct evict_cand	t = s->c[a];

	s->c[a] = s->c[b];
	s->c[b] = t;
}

/* Max-heap on value (evict_below): the root is the most valuable candidate. */
static void
evict_sift_up(struct evict_set *s, size_t i)
{
	while (i > 0 && evict_below(&s->c[(i - 1) / 2], &s->c[i])) {
		evict_swap(s, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void
evict_sift_down(struct evict_set *s, size_t i)
{
	size_t	l, r, top;

	for (;;) {
		l = 2 * i + 1;
		r = l + 1;
		top = i;
		if (l < s->n && evict_below(&s->c[top], &s->c[l]))
			top = l;
		if (r < s->n && evict_below(&s->c[top], &s->c[r]))
			top = r;
		if (top == i)
			return;
		evict_swap(s, i, top);
		i = top;
	}
}

int
evict_offer(struct evict_set *s, const uint8_t *key, size_t klen,
    const struct cache_meta *m)
{
	struct evict_cand	 c;

	s->seen++;
	if (!evict_eligible(m) || klen == 0)
		return 0;
	c.asked = evict_asked(m);
	c.tier = (uint8_t)evict_tier(m);
	s->tiers[c.tier]++;
	if (s->n == s->max && !evict_below(&c, &s->c[0]))
		return 0;
	if ((c.key = malloc(klen)) == NULL)
		return -1;
	memcpy(c.key, key, klen);
	c.klen = klen;
	if (s->n == s->max) {
		free(s->c[0].key);
		s->c[0] = c;
		evict_sift_down(s, 0);
		return 1;
	}
	s->c[s->n] = c;
	evict_sift_up(s, s->n++);
	return 1;
}

static int
evict_cmp(const void *a, const void *b)
{
	const struct evict_cand	*x = a, *y = b;

	return evict_below(x, y) ? -1 : evict_below(y, x);
}

void
evict_seal(struct evict_set *s)
{
	qsort(s->c, s->n, sizeof(*s->c), evict_cmp);
	s->next = 0;
	s->taken = 0;
}

/*
 * A protected candidate may go while the protected entries left are more
 * than their share of what the pass saw. One returned counts as gone
 * whether or not the caller deletes it: one asked since stays protected,
 * and the share is then reached sooner, never later.
 */
const struct evict_cand *
evict_next(struct evict_set *s)
{
	const struct evict_cand	*c;
	size_t			 left;

	if (s->next >= s->n)
		return NULL;
	c = &s->c[s->next];
	if (c->tier == EVICT_PROTECTED) {
		left = s->tiers[EVICT_PROTECTED] - s->taken;
		if (left * 100 <= s->seen * EVICT_PROTECTED_PCT)
			return NULL;
		s->taken++;
	}
	s->next++;
	return c;
}

size_t
evict_count(const struct evict_set *s)
{
	return s->n;
}

size_t
evict_seen(const struct evict_set *s)
{
	return s->seen;
}

size_t
evict_seen_tier(const struct evict_set *s, enum evict_tier t)
{
	return t < EVICT_TIERS ? s->tiers[t] : 0;
}
