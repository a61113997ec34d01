/* SPDX-License-Identifier: Apache-2.0 */
/* A refresh's end: its result counted and logged, a failure's backoff written to the store and held in memory, its slot freed once that lands. */
#include <config.h>

#include <time.h>

#include <event2/event.h>

#include "proxy/refresh/backoff.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/refresh/release.h"
#include "proxy/refresh/schedule.h"
#include "proxy/refresh/sched.h"
#include "proxy/refresh/sched_int.h"
#include "proxy/refresh/usage.h"
#include "proxy/refresh/uses.h"

/* The refresh's writes have landed: its slot is free. */
static void
slot_free(struct sched *s, struct sched_slot *f)
{
	f->used = 0;
	release_soon(s->release);
	/* The due turn waits for this slot: its turn now. */
	if (s->slot_wait && !s->stopped) {
		struct timeval	tv = { 0, 0 };

		s->slot_wait = 0;
		evtimer_add(s->due_ev, &tv);
	}
}

static void	backoff_unstored(struct sched *, const struct sched_slot *,
		    const char *, int);

/* The failed refresh's backoff is in the store (or could not be): its slot is free. */
static void
backoff_landed(const struct cache_writer_res *res, void *arg)
{
	struct sched_slot	*f = arg;

	if (res->rc == -1)
		backoff_unstored(f->s, f, res->err, res->map_full);
	slot_free(f->s, f);
}

/* The store did not take a failed refresh's backoff: memory holds it. */
static void
backoff_unstored(struct sched *s, const struct sched_slot *f, const char *err,
    int map_full)
{
	char	hex[17];

	log_hex(hex, sizeof(hex), f->key, f->klen);
	if (map_full)
		(void)usage_map_full(s->usage, f->kind, time(NULL), "refresh: "
		    "%s %s: its backoff not stored, held in memory: %s",
		    cache_kind_str[f->kind], hex, err);
	else
		log_err("refresh: %s %s: its backoff not stored, held in "
		    "memory: %s", cache_kind_str[f->kind], hex, err);
}

/*
 * A refresh failed: its entry backs off on the schedule
 * (schedule_backoff_at), counted on from the failures the store or
 * memory holds, and the backoff is kept in memory as well as written to
 * the store, so that a store which cannot take the write does not leave
 * the entry due. The slot stays taken until the write has landed.
 */
static void
slot_failed(struct sched *s, struct sched_slot *f, int ok, const char *why,
    time_t now)
{
	const struct refresh_kind_conf	*kc = &s->kinds[f->kind];
	struct cache_meta		 m;
	uint64_t			 fp = uses_fp(f->kind, f->key, f->klen);
	unsigned			 failures;
	int64_t				 at;
	char				 hex[17];

	if (cache_get_meta(s->cache, f->kind, f->key, f->klen, &m) != 1) {
		backoff_drop(s->backoff, fp);
		slot_free(s, f);
		return;
	}
	metrics.refresh_failed++;
	/* Never refreshed on schedule, asked by name: no backoff to plan. */
	if (m.flags & CACHE_F_NO_REFRESH) {
		log_hex(hex, sizeof(hex), f->key, f->klen);
		log_info("refresh: %s %s: failed (%s)", cache_kind_str[f->kind],
		    hex, why ? why : "unknown");
		slot_free(s, f);
		return;
	}
	(void)sched_backoff_holds(s, f->kind, f->key, f->klen, &m, now, &failures,
	    &at);
	m.refresh_failures = failures + 1;
	m.next_refresh_at = schedule_backoff_at(&kc->sched, m.refresh_failures,
	    m.next_update, now, sched_rand());
	backoff_set(s->backoff, fp, m.fetched_at, m.refresh_failures,
	    m.next_refresh_at);
	log_hex(hex, sizeof(hex), f->key, f->klen);
	/* A state change is logged once, the retries are not; a full map is said on its own. */
	if (m.refresh_failures == 1 && ok != REFRESH_MAP_FULL)
		log_warn("refresh: %s %s: failing (%s); valid for %lds more, "
		    "retrying with backoff", cache_kind_str[f->kind], hex,
		    why ? why : "unknown", (long)(m.next_update - now));
	else
		log_debug("refresh: %s %s: failing (%u), next try in %llds: %s",
		    cache_kind_str[f->kind], hex, m.refresh_failures,
		    (long long)(m.next_refresh_at - now), why ? why : "unknown");
	if (s->writer != NULL && cache_writer_put_meta(s->writer, f->key,
	    f->klen, &m, backoff_landed, f) == 0)
		return;
	if (cache_put_meta(s->cache, f->key, f->klen, &m) == -1)
		backoff_unstored(s, f, cache_strerror(s->cache),
		    cache_map_full(s->cache));
	slot_free(s, f);
}

/*
 * refresh_done_fn: the refresher's word on slot arg's refresh. r is not
 * read (the slot knows its schedule).
 */
void
sched_refresh_done(struct refresh *r, int ok, const char *why, void *arg)
{
	struct sched_slot	*f = arg;
	struct sched		*s = f->s;
	char			 hex[17];

	(void)r;
	if (f->ask != NULL)
		sched_ask_done(s, f, ok == REFRESH_OK, why);
	if (ok != REFRESH_OK) {
		slot_failed(s, f, ok, why, time(NULL));
		return;
	}
	backoff_drop(s->backoff, uses_fp(f->kind, f->key, f->klen));
	metrics.refresh_ok++;
	log_hex(hex, sizeof(hex), f->key, f->klen);
	if (f->failures > 0)
		log_info("refresh: %s %s: refreshed again after %u failure(s)",
		    cache_kind_str[f->kind], hex, f->failures);
	else
		log_debug("refresh: %s %s: refreshed", cache_kind_str[f->kind],
		    hex);
	slot_free(s, f);
}

