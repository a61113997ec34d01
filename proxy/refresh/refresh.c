/* SPDX-License-Identifier: Apache-2.0 */
/* The refresh owner: wires the schedule, usage and page release together (the walk is refresh_walk.c's). */
#include <config.h>

#include <stdlib.h>

#include <event2/event.h>

#include "proxy/loop.h"
#include "proxy/refresh/refresh.h"
#include "proxy/refresh/refresh_int.h"
#include "proxy/refresh/release.h"
#include "proxy/refresh/sched.h"
#include "proxy/refresh/usage.h"

double
refresh_rand(void)
{
	return sched_rand();
}

void
refresh_set_map_cap(struct refresh *r, size_t bytes)
{
	release_set_cap(r->release, bytes);
}

static void
refresh_landed(void *arg)
{
	struct refresh	*r = arg;

	release_soon(r->release);
}

struct refresh *
refresh_new(struct event_base *base, struct cache *cache,
    struct cache_writer *writer)
{
	struct refresh	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->base = base;
	r->cache = cache;
	r->writer = writer;
	r->usage = usage_new(base, cache, writer, refresh_landed, r);
	if (r->usage != NULL)
		r->release = release_new(base, cache, r->usage);
	if (r->release != NULL)
		r->sched = sched_new(base, cache, writer, r->usage, r->release);
	r->walk_ev = evtimer_new(base, refresh_walk_cb, r);
	if (r->usage == NULL || r->release == NULL || r->sched == NULL ||
	    r->walk_ev == NULL) {
		refresh_free(r);
		return NULL;
	}
	return r;
}

/*
 * The schedule first (its asks go, unsaid), then what usage has not
 * written (the last batch lands after the free: no state of it is kept),
 * then the pages.
 */
void
refresh_free(struct refresh *r)
{
	if (r == NULL)
		return;
	sched_free(r->sched);
	usage_free(r->usage);
	release_free(r->release);
	loop_event_free(r->walk_ev);
	free(r);
}

void
refresh_set_kind(struct refresh *r, enum cache_kind kind,
    const struct refresh_kind_conf *kc)
{
	sched_set_kind(r->sched, kind, kc);
	usage_set_kind(r->usage, kind, kc->start != NULL, kc->idle_expire_s,
	    kc->max_entries);
}

void
refresh_start(struct refresh *r)
{
	struct timeval	tv = { 0, 0 };

	release_start(r->release);
	sched_start(r->sched);
	evtimer_add(r->walk_ev, &tv);
	usage_start(r->usage);
}

void
refresh_stop(struct refresh *r)
{
	evtimer_del(r->walk_ev);
	release_stop(r->release);
	usage_stop(r->usage);
	sched_stop(r->sched, "stapled is stopping");
}

void
refresh_stats(const struct refresh *r, struct refresh_stats *s)
{
	struct usage_full	f;

	*s = r->last;
	s->room = r->room;
	usage_full_get(r->usage, &f);
	s->full_since = f.since;
	s->full_last = f.last;
	s->full_refused = f.refused;
	s->full_evicted = f.evicted;
	s->inflight = sched_inflight(r->sched);
}

struct usage *
refresh_usage(struct refresh *r)
{
	return r->usage;
}

struct refresh_ask *
refresh_ask_start(struct refresh *r, const struct cache_ask *ask,
    refresh_ask_cb *cb, void *arg)
{
	return sched_ask_start(r->sched, ask, cb, arg);
}

void
refresh_ask_cancel(struct refresh_ask *a)
{
	sched_ask_cancel(a);
}
