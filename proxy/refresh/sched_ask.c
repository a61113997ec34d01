/* SPDX-License-Identifier: Apache-2.0 */
/* Operators' asks (staplectl refresh): entries renewed now, in the due turn after the schedule's, through the same slots and token buckets. */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "cache/ask.h"
#include "proxy/log.h"
#include "proxy/refresh/sched.h"
#include "proxy/refresh/sched_int.h"

/* Entries an ask over a kind (or every entry) examines per turn. */
#define ASK_WALK_CHUNK		REFRESH_WALK_CHUNK
/* The turn's wait when an ask waits for a refresh of the same entry to end. */
#define ASK_BUSY_MS		100

struct refresh_ask {
	TAILQ_ENTRY(refresh_ask) entry;
	struct sched		*s;
	/* by name: the entries found at the start (kind 0: none held it) */
	struct cache_ask_key	*items;
	size_t			 nitems, next;
	/* over a kind (walk_kind), or every entry (0): the store in key order */
	int			 walk;
	enum cache_kind		 walk_kind;
	uint8_t			 after[1 + CACHE_KEY_MAX_BYTES];
	size_t			 afterlen;
	int			 walked;	/* the walk reached the end */
	size_t			 running;	/* refreshes started and not ended */
	struct cache_ask_line	 counts;	/* the DONE line, counting */
	refresh_ask_cb		*cb;		/* NULL once cancelled */
	void			*arg;
};

/* Why an ask stopped this turn, and when it wants the next. */
enum ask_stop {
	ASK_GO = 0,
	ASK_NO_TOKEN,		/* back when the kind's bucket has one */
	ASK_NO_SLOT,		/* back when a refresh ends */
	ASK_BUSY,		/* the entry is being refreshed: back soon */
};

struct ask_walk {
	struct refresh_ask	*a;
	enum ask_stop		 stop;
	enum cache_kind		 kind;	/* of the entry that stopped it */
};

/* ---- results ------------------------------------------------------------------ */

static void
ask_free(struct refresh_ask *a)
{
	TAILQ_REMOVE(&a->s->asks, a, entry);
	free(a->items);
	free(a);
}

/* A result to the asker (none once cancelled), counted. */
static void
ask_report(struct refresh_ask *a, struct cache_ask_line *l)
{
	if (l->what == CACHE_ASK_RENEWED)
		a->counts.renewed++;
	else if (l->what == CACHE_ASK_UNCHANGED)
		a->counts.unchanged++;
	else if (l->what == CACHE_ASK_FAILED)
		a->counts.failed++;
	if (a->cb != NULL)
		a->cb(l, a->arg);
}

static void
ask_failed(struct refresh_ask *a, enum cache_kind kind, const uint8_t *key,
    size_t klen, const char *why)
{
	struct cache_ask_line	l;

	memset(&l, 0, sizeof(l));
	l.what = CACHE_ASK_FAILED;
	l.kind = kind;
	memcpy(l.key, key, klen);
	l.klen = klen;
	snprintf(l.why, sizeof(l.why), "%s", why);
	ask_report(a, &l);
}

/* Nothing left to start and nothing running: the last line, and it is gone. */
static int
ask_end_if_done(struct refresh_ask *a)
{
	if (a->running > 0 || a->next < a->nitems || (a->walk && !a->walked))
		return 0;
	a->counts.what = CACHE_ASK_DONE;
	if (a->cb != NULL)
		a->cb(&a->counts, a->arg);
	ask_free(a);
	return 1;
}

/* sched_refresh_done's word on an asked entry: renewed (a later thisUpdate), unchanged, or failed. */
void
sched_ask_done(struct sched *s, struct sched_slot *f, int ok, const char *why)
{
	struct refresh_ask	*a = f->ask;
	struct cache_ask_line	 l;
	struct cache_meta	 m;

	f->ask = NULL;
	a->running--;
	memset(&l, 0, sizeof(l));
	if (ok && cache_get_meta(s->cache, f->kind, f->key, f->klen, &m) == 1) {
		l.what = m.this_update > f->was ? CACHE_ASK_RENEWED :
		    CACHE_ASK_UNCHANGED;
		l.kind = f->kind;
		memcpy(l.key, f->key, f->klen);
		l.klen = f->klen;
		l.was = f->was;
		l.this_update = m.this_update;
		l.next_update = m.next_update;
		snprintf(l.source, sizeof(l.source), "%s", m.source);
		ask_report(a, &l);
	} else
		ask_failed(a, f->kind, f->key, f->klen, ok ? "stored, then "
		    "gone from the store" : why != NULL ? why : "unknown");
	(void)ask_end_if_done(a);
}

/* ---- starting entries ---------------------------------------------------------- */

/* Whether an entry of kind may start now; else why not in *stop. */
static int
ask_may_start(struct sched *s, int kind, const uint8_t *key, size_t klen,
    enum ask_stop *stop)
{
	if (sched_slot_find(s, kind, key, klen) != NULL)
		*stop = ASK_BUSY;	/* asked again once it ends */
	else if (sched_slot_get(s, kind) == NULL)
		*stop = ASK_NO_SLOT;
	else if (!sched_bucket_take(s, kind))
		*stop = ASK_NO_TOKEN;
	else
		return 1;
	return 0;
}

/*
 * Claim a slot for the entry on the ask's behalf (started by
 * start_claimed), backing off or not: the operator asks now.
 */
static void
ask_claim(struct refresh_ask *a, int kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m)
{
	struct sched_slot	*f = sched_slot_get(a->s, kind);
	unsigned	 failures;
	int64_t		 at;

	(void)sched_backoff_holds(a->s, kind, key, klen, m, time(NULL), &failures, &at);
	sched_slot_claim(a->s, f, kind, key, klen, failures, m->this_update);
	f->ask = a;
	a->running++;
}

/* The next of the keys asked by name. */
static enum ask_stop
ask_next_key(struct refresh_ask *a, enum cache_kind *stop_kind)
{
	struct cache_ask_key	*k = &a->items[a->next];
	struct cache_meta	 m;
	enum ask_stop		 stop = ASK_GO;

	*stop_kind = k->kind;
	if (k->kind == 0)
		ask_failed(a, 0, k->key, k->klen, "no such entry");
	else if (!sched_refreshes(a->s, k->kind))
		ask_failed(a, k->kind, k->key, k->klen, "its kind has no "
		    "refresher here");
	else if (cache_get_meta(a->s->cache, k->kind, k->key, k->klen, &m) != 1)
		ask_failed(a, k->kind, k->key, k->klen, "no such entry (gone "
		    "from the store)");
	else if (!ask_may_start(a->s, k->kind, k->key, k->klen, &stop))
		return stop;
	else
		ask_claim(a, k->kind, k->key, k->klen, &m);
	a->next++;
	return ASK_GO;
}

/* One entry of the walk: start it, skip it, or stop before it. */
static int
ask_walk_one(enum cache_kind kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, void *arg)
{
	struct ask_walk		*w = arg;
	struct refresh_ask	*a = w->a;
	int			 never;

	if (kind <= 0 || kind >= CACHE_KIND_MAX || klen > CACHE_KEY_MAX_BYTES)
		return 0;
	never = (m->flags & CACHE_F_NO_REFRESH) || !sched_refreshes(a->s, kind);
	if (!never && !ask_may_start(a->s, kind, key, klen, &w->stop)) {
		w->kind = kind;
		return 1;	/* this entry again, next turn */
	}
	if (never)
		a->counts.skipped++;
	else
		ask_claim(a, kind, key, klen, m);
	/* every kind's walk (kind 0) is keyed by the kind byte first */
	a->afterlen = 0;
	if (a->walk_kind == 0)
		a->after[a->afterlen++] = (uint8_t)kind;
	memcpy(a->after + a->afterlen, key, klen);
	a->afterlen += klen;
	return 0;
}

/* One turn of an ask. Returns the ms it wants to wait before its next. */
static long
ask_step(struct refresh_ask *a)
{
	struct ask_walk	w = { a, ASK_GO, 0 };
	long		n;

	if (!a->walk) {
		while (a->next < a->nitems && w.stop == ASK_GO)
			w.stop = ask_next_key(a, &w.kind);
	} else if (!a->walked) {
		n = cache_walk(a->s->cache, a->walk_kind, a->afterlen ? a->after :
		    NULL, a->afterlen, ASK_WALK_CHUNK, ask_walk_one, &w);
		if (n == -1) {
			log_err("refresh: an operator's ask: walking the store: %s",
			    cache_strerror(a->s->cache));
			return REFRESH_PASS_MS;
		}
		if (w.stop == ASK_GO && n < ASK_WALK_CHUNK)
			a->walked = 1;
	}
	switch (w.stop) {
	case ASK_NO_TOKEN:
		return sched_bucket_wait_ms(a->s, w.kind);
	case ASK_NO_SLOT:
		a->s->slot_wait = 1;	/* slot_free turns the due turn */
		return REFRESH_PASS_MS;
	case ASK_BUSY:
		return ASK_BUSY_MS;
	case ASK_GO:
		break;
	}
	return a->walk && !a->walked ? 0 : REFRESH_PASS_MS;
}

long
sched_ask_turn(struct sched *s)
{
	struct refresh_ask	*a, *tmp;
	long			 wait_ms = REFRESH_PASS_MS, w;

	if (cache_read_only(s->cache)) {
		sched_asks_stop(s, "the store is read-only: nothing can be renewed");
		return wait_ms;
	}
	/* A start that fails at once ends its refresh here: a may be freed. */
	for (a = TAILQ_FIRST(&s->asks); a != NULL; a = tmp) {
		tmp = TAILQ_NEXT(a, entry);
		if (a->cb == NULL)
			continue;	/* cancelled: its refreshes are ending */
		if ((w = ask_step(a)) < wait_ms)
			wait_ms = w;
		sched_start_claimed(s);
	}
	/* Every entry reported, and none running (or nothing was asked). */
	for (a = TAILQ_FIRST(&s->asks); a != NULL; a = tmp) {
		tmp = TAILQ_NEXT(a, entry);
		if (a->cb != NULL)
			(void)ask_end_if_done(a);
	}
	return wait_ms;
}

/* ---- the ask's life ------------------------------------------------------------- */

/* The keys asked by name, each looked up in its kind or in every kind. */
static int
ask_items(struct refresh_ask *a, const struct cache_ask *ask)
{
	struct cache_meta	m;
	size_t			i;
	int			k, found;

	if (ask->nkeys == 0)
		return 0;
	/* a key may be held by every kind */
	if ((a->items = calloc(ask->nkeys * (CACHE_KIND_MAX - 1),
	    sizeof(*a->items))) == NULL)
		return -1;
	for (i = 0; i < ask->nkeys; i++) {
		/* each kind in turn (0 is none) */
		for (found = 0, k = 1; k < CACHE_KIND_MAX; k++) {
			if ((ask->keys[i].kind != 0 && (int)ask->keys[i].kind != k) ||
			    cache_get_meta(a->s->cache, k, ask->keys[i].key,
			    ask->keys[i].klen, &m) != 1)
				continue;
			a->items[a->nitems] = ask->keys[i];
			a->items[a->nitems++].kind = (enum cache_kind)k;
			found = 1;
		}
		if (!found) {
			a->items[a->nitems] = ask->keys[i];
			a->items[a->nitems++].kind = 0;	/* fails in its turn */
		}
	}
	return 0;
}

struct refresh_ask *
sched_ask_start(struct sched *s, const struct cache_ask *ask,
    refresh_ask_cb *cb, void *arg)
{
	struct refresh_ask	*a;
	struct timeval		 now = { 0, 0 };

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	a->s = s;
	a->cb = cb;
	a->arg = arg;
	a->walk = ask->all || ask->kind != 0;
	a->walk_kind = ask->all ? 0 : ask->kind;
	if (!a->walk && ask_items(a, ask) == -1) {
		free(a);
		return NULL;
	}
	TAILQ_INSERT_TAIL(&s->asks, a, entry);
	/* Before sched_start (the store's check walk runs), it waits for it. */
	if (s->started)
		evtimer_add(s->due_ev, &now);
	return a;
}

void
sched_ask_cancel(struct refresh_ask *a)
{
	if (a == NULL)
		return;
	a->cb = NULL;
	a->next = a->nitems;
	a->walked = 1;
	if (a->running == 0)
		ask_free(a);
}

/* Every ask ends now with a STOPPED line saying why; their refreshes run on. */
void
sched_asks_stop(struct sched *s, const char *why)
{
	struct refresh_ask	*a, *tmp;
	struct cache_ask_line	 l;

	memset(&l, 0, sizeof(l));
	l.what = CACHE_ASK_STOPPED;
	snprintf(l.why, sizeof(l.why), "%s", why);
	for (a = TAILQ_FIRST(&s->asks); a != NULL; a = tmp) {
		tmp = TAILQ_NEXT(a, entry);
		if (a->cb != NULL)
			a->cb(&l, a->arg);
		sched_ask_cancel(a);
	}
}

void
sched_asks_free(struct sched *s)
{
	struct refresh_ask	*a;
	size_t			 i;

	for (i = 0; i < REFRESH_MAX_INFLIGHT; i++)
		s->slots[i].ask = NULL;
	while ((a = TAILQ_FIRST(&s->asks)) != NULL)
		ask_free(a);
}
