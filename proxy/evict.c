/* SPDX-License-Identifier: Apache-2.0 */
/* Eviction candidates: a bounded max-heap of the least-recently-asked entries of a service. */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "proxy/evict.h"

struct evict_set {
	struct evict_cand	*c;
	size_t			 n;
	size_t			 max;
	size_t			 next;	/* after evict_seal: the next to return */
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

/* Max-heap on `asked`: the root is the most recently asked candidate. */
static void
evict_sift_up(struct evict_set *s, size_t i)
{
	while (i > 0 && s->c[(i - 1) / 2].asked < s->c[i].asked) {
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
		if (l < s->n && s->c[l].asked > s->c[top].asked)
			top = l;
		if (r < s->n && s->c[r].asked > s->c[top].asked)
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
	int64_t	 asked = evict_asked(m);
	uint8_t	*copy;

	if (!evict_eligible(m) || klen == 0)
		return 0;
	if (s->n == s->max && asked >= s->c[0].asked)
		return 0;
	if ((copy = malloc(klen)) == NULL)
		return -1;
	memcpy(copy, key, klen);
	if (s->n == s->max) {
		free(s->c[0].key);
		s->c[0].key = copy;
		s->c[0].klen = klen;
		s->c[0].asked = asked;
		evict_sift_down(s, 0);
		return 1;
	}
	s->c[s->n].key = copy;
	s->c[s->n].klen = klen;
	s->c[s->n].asked = asked;
	evict_sift_up(s, s->n++);
	return 1;
}

static int
evict_cmp(const void *a, const void *b)
{
	const struct evict_cand	*x = a, *y = b;

	return x->asked < y->asked ? -1 : x->asked > y->asked;
}

void
evict_seal(struct evict_set *s)
{
	qsort(s->c, s->n, sizeof(*s->c), evict_cmp);
	s->next = 0;
}

const struct evict_cand *
evict_next(struct evict_set *s)
{
	if (s->next >= s->n)
		return NULL;
	return &s->c[s->next++];
}

size_t
evict_count(const struct evict_set *s)
{
	return s->n;
}
