/* SPDX-License-Identifier: Apache-2.0 */
/* Uses waiting for the walk: two generations of open-addressed 64-bit fingerprints. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "attest/util.h"
#include "proxy/refresh/uses.h"

#define USES_MIN_SLOTS	1024

struct uses_gen {
	uint64_t	*slot;		/* 0: empty */
	size_t		 cap;		/* a power of two, or 0 */
	size_t		 n;
};

struct uses {
	struct uses_gen	 g[2];
	int		 cur;
	size_t		 max_slots;
};

struct uses *
uses_new(size_t max_slots)
{
	struct uses	*u;

	if (max_slots < USES_MIN_SLOTS || (max_slots & (max_slots - 1)) != 0)
		return NULL;
	if ((u = calloc(1, sizeof(*u))) == NULL)
		return NULL;
	u->max_slots = max_slots;
	return u;
}

static void
gen_free(struct uses_gen *g)
{
	free(g->slot);
	memset(g, 0, sizeof(*g));
}

void
uses_free(struct uses *u)
{
	if (u == NULL)
		return;
	uses_clear(u);
	free(u);
}

/* FNV-1a, 64 bits, over the kind and the key. */
uint64_t
uses_fp(int kind, const uint8_t *key, size_t klen)
{
	uint8_t		k = (uint8_t)kind;
	uint64_t	h;

	h = util_fnv1a64(util_fnv1a64(UTIL_FNV64_BASIS, &k, 1), key, klen);
	return h != 0 ? h : 1;
}

/* The slot holding fp, or the empty one where it would go. */
static size_t
gen_find(const struct uses_gen *g, uint64_t fp)
{
	size_t	mask = g->cap - 1, i = (size_t)fp & mask;

	while (g->slot[i] != 0 && g->slot[i] != fp)
		i = (i + 1) & mask;
	return i;
}

static int
gen_grow(struct uses_gen *g, size_t cap)
{
	struct uses_gen	ng = { NULL, cap, 0 };
	size_t		i;

	if ((ng.slot = calloc(cap, sizeof(*ng.slot))) == NULL)
		return -1;
	for (i = 0; i < g->cap; i++)
		if (g->slot[i] != 0) {
			ng.slot[gen_find(&ng, g->slot[i])] = g->slot[i];
			ng.n++;
		}
	free(g->slot);
	*g = ng;
	return 0;
}

static int
gen_has(const struct uses_gen *g, uint64_t fp)
{
	return g->n > 0 && g->slot[gen_find(g, fp)] == fp;
}

int
uses_has(const struct uses *u, uint64_t fp)
{
	return gen_has(&u->g[0], fp) || gen_has(&u->g[1], fp);
}

int
uses_add(struct uses *u, uint64_t fp)
{
	struct uses_gen	*g = &u->g[u->cur];
	size_t		 i;

	if (uses_has(u, fp))
		return 0;
	/* At most three quarters full. */
	if ((g->n + 1) * 4 > g->cap * 3) {
		if (g->cap >= u->max_slots ||
		    gen_grow(g, g->cap ? g->cap * 2 : USES_MIN_SLOTS) == -1)
			return -1;
	}
	i = gen_find(g, fp);
	g->slot[i] = fp;
	g->n++;
	return 0;
}

/* Empty slot i, moving back the entries of its run that may go there. */
static void
gen_del(struct uses_gen *g, size_t i)
{
	size_t	mask = g->cap - 1, j = i, home;

	for (;;) {
		j = (j + 1) & mask;
		if (g->slot[j] == 0)
			break;
		home = (size_t)g->slot[j] & mask;
		/* It stays when its home lies cyclically in (i, j]. */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		g->slot[i] = g->slot[j];
		i = j;
	}
	g->slot[i] = 0;
	g->n--;
}

int
uses_take(struct uses *u, uint64_t fp)
{
	struct uses_gen	*g;
	size_t		 i, k;
	int		 found = 0;

	for (k = 0; k < 2; k++) {
		g = &u->g[k];
		if (g->n == 0)
			continue;
		if (g->slot[i = gen_find(g, fp)] == fp) {
			gen_del(g, i);
			found = 1;
		}
	}
	return found;
}

size_t
uses_turn(struct uses *u)
{
	int	prev = !u->cur;
	size_t	dropped = u->g[prev].n;

	gen_free(&u->g[prev]);
	u->cur = prev;		/* the emptied one takes the new hits */
	return dropped;
}

void
uses_clear(struct uses *u)
{
	gen_free(&u->g[0]);
	gen_free(&u->g[1]);
}

size_t
uses_count(const struct uses *u)
{
	return u->g[0].n + u->g[1].n;
}
