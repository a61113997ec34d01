/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the refresh scheduler (proxy/refresh*.c) on a real store and event loop, with a fake refresher. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "cache/ask.h"
#include "cache/clock.h"
#include "cache/store.h"
#include "proxy/metrics.h"
#include "proxy/refresh/refresh.h"
#include "proxy/refresh/usage.h"
#include "proxy/refresh/usage_int.h"	/* usage_full_tick, REFRESH_FULL_LOG_S */

#include "refresh_fixture.h"
#include "store_fixture.h"

#define STARTS_MAX	64
#define SPIN_MAX_MS	10000	/* a bound for a slow machine, never a timing */
#define MIN_INTERVAL_S	10
#define IDLE_S		(30L * 86400)

/* What the fake refresher does with a start. */
enum fake_mode {
	FAKE_HOLD,		/* keep it in flight until the test ends it */
	FAKE_OK,		/* store a new schedule, then done(ok) at once */
	FAKE_FAIL,		/* done(failed) at once */
	FAKE_REFUSE,		/* return -1: could not start */
};

struct start {
	int			 kind;
	int			 id;	/* the key's number */
	void			*arg;
	refresh_done_fn		*done;
	void			*done_arg;
	int			 ended;
	struct timespec		 at;
};

struct fx {
	struct store_fixture	*sf;
	struct event_base	*base;
	struct refresh		*r;
	enum fake_mode		 mode;
	size_t			 nstarts;
	struct start		 starts[STARTS_MAX];
	/* an operator's ask: the lines its callback got */
	struct cache_ask_line	 lines[STARTS_MAX];
	size_t			 nlines;
};

static int
key_id(const uint8_t *key, size_t klen)
{
	char	buf[32];

	assert_true(klen > 4 && klen < sizeof(buf));
	memcpy(buf, key, klen);
	buf[klen] = '\0';
	return atoi(buf + 4);
}

/*
 * Entry i of kind: thisUpdate tu (valid an hour), fetched now, due at
 * `at`, asked `uses` times, with flags.
 */
static void
put_used(struct fx *f, uint8_t kind, int i, int64_t tu, int64_t at,
    int64_t served_at, unsigned failures, uint64_t uses, uint16_t flags)
{
	static const uint8_t	 resp[] = "response";
	struct cache_meta	 m;
	struct cache_body	 b = { 0 };
	uint8_t			 key[CACHE_KEY_MAX_BYTES];

	store_meta(&m, kind, tu);
	m.fetched_at = time(NULL);
	m.next_refresh_at = at;
	m.last_served_at = served_at;
	m.refresh_failures = failures;
	m.served_count = uses;
	m.flags |= flags;
	b.response = resp;
	b.response_len = sizeof(resp);
	b.request = resp;
	b.request_len = sizeof(resp);
	assert_int_equal(cache_put(f->sf->c, key, store_key(key, (unsigned)i),
	    &m, &b), 0);
}

/* The same, never asked, no flags. */
static void
put(struct fx *f, uint8_t kind, int i, int64_t tu, int64_t at,
    int64_t served_at, unsigned failures)
{
	put_used(f, kind, i, tu, at, served_at, failures, 0, 0);
}

static int
stored(struct fx *f, uint8_t kind, int i)
{
	struct cache_meta	m;
	uint8_t			key[CACHE_KEY_MAX_BYTES];

	return cache_get_meta(f->sf->c, kind, key, store_key(key, (unsigned)i),
	    &m) == 1;
}

static struct cache_meta
meta(struct fx *f, uint8_t kind, int i)
{
	struct cache_meta	m;
	uint8_t			key[CACHE_KEY_MAX_BYTES];

	assert_int_equal(cache_get_meta(f->sf->c, kind, key,
	    store_key(key, (unsigned)i), &m), 1);
	return m;
}

/* The refresher's start: recorded, then as f->mode says. */
static int
fake_start(void *arg, enum cache_kind kind, const uint8_t *key, size_t klen,
    refresh_done_fn *done, void *done_arg)
{
	struct fx		*f = arg;
	struct start		*s;
	struct cache_meta	 m;

	assert_true(f->nstarts < STARTS_MAX);
	s = &f->starts[f->nstarts++];
	s->kind = kind;
	s->id = key_id(key, klen);
	s->arg = arg;
	s->done = done;
	s->done_arg = done_arg;
	clock_gettime(CLOCK_MONOTONIC, &s->at);
	switch (f->mode) {
	case FAKE_HOLD:
		return 0;
	case FAKE_OK:
		/* What a stored refresh leaves: a new schedule. */
		assert_int_equal(cache_get_meta(f->sf->c, kind, key, klen, &m), 1);
		m.next_refresh_at = time(NULL) + 600;
		m.refresh_failures = 0;
		assert_int_equal(cache_put_meta(f->sf->c, key, klen, &m), 0);
		s->ended = 1;
		done(f->r, 1, NULL, done_arg);
		return 0;
	case FAKE_FAIL:
		s->ended = 1;
		done(f->r, 0, "fake upstream failed", done_arg);
		return 0;
	case FAKE_REFUSE:
		s->ended = 1;
		return -1;
	}
	return -1;
}

/* End held start n: ok stores a new schedule first, as a refresh does. */
static void
finish(struct fx *f, size_t n, int ok)
{
	struct start		*s = &f->starts[n];
	struct cache_meta	 m;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen = store_key(key, (unsigned)s->id);

	assert_false(s->ended);
	if (ok) {
		assert_int_equal(cache_get_meta(f->sf->c, s->kind, key, klen,
		    &m), 1);
		m.next_refresh_at = time(NULL) + 600;
		assert_int_equal(cache_put_meta(f->sf->c, key, klen, &m), 0);
	}
	s->ended = 1;
	s->done(f->r, ok, ok ? NULL : "fake upstream failed", s->done_arg);
}

static void
set_kind(struct fx *f, uint8_t kind, double rate, size_t max_inflight,
    long idle_s)
{
	struct refresh_kind_conf	kc;

	memset(&kc, 0, sizeof(kc));
	kc.sched.fraction = 0.5;
	kc.sched.jitter = 0.1;
	kc.sched.min_interval_s = MIN_INTERVAL_S;
	kc.sched.max_interval_s = 43200;
	kc.idle_expire_s = idle_s;
	kc.rate_limit_per_s = rate;
	kc.max_inflight = max_inflight;
	kc.start = fake_start;
	kc.arg = f;
	refresh_set_kind(f->r, kind, &kc);
}

/* One turn of the loop: whatever timers are due run once. */
static void
turn(struct fx *f)
{
	assert_int_not_equal(event_base_loop(f->base,
	    EVLOOP_ONCE | EVLOOP_NONBLOCK), -1);
}

/* Turn the loop until n refreshes have started (or the bound passes). */
static void
spin_starts(struct fx *f, size_t n)
{
	int64_t	end = mono_ms() + SPIN_MAX_MS;
	struct timespec	ms = { 0, 1000000 };

	while (f->nstarts < n && mono_ms() < end) {
		turn(f);
		nanosleep(&ms, NULL);
	}
}

/* Turn the loop for about ms milliseconds. */
static void
spin_for(struct fx *f, int64_t ms)
{
	int64_t		end = mono_ms() + ms;
	struct timespec	one = { 0, 1000000 };

	while (mono_ms() < end) {
		turn(f);
		nanosleep(&one, NULL);
	}
}

static int
setup(void **state)
{
	struct fx	*f;

	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    refresh_fixture_open(&f->sf, &f->base, &f->r) == -1)
		return -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx	*f = *state;
	int		 rv;

	rv = refresh_fixture_close(f->sf, f->base, f->r);
	free(f);
	return rv;
}

/* Due entries start soonest first, from the due index; one not due yet waits. */
static void
test_due_order(void **state)
{
	struct fx	*f = *state;
	time_t		 now = time(NULL);

	put(f, CACHE_KIND_OCSP, 1, now - 60, now - 50, 0, 0);
	put(f, CACHE_KIND_OCSP, 2, now - 60, now - 10, 0, 0);
	put(f, CACHE_KIND_OCSP, 3, now - 60, now - 300, 0, 0);
	put(f, CACHE_KIND_OCSP, 4, now - 60, now - 100, 0, 0);
	put(f, CACHE_KIND_OCSP, 5, now - 60, now + 3000, 0, 0);
	set_kind(f, CACHE_KIND_OCSP, 100, 0, IDLE_S);
	f->mode = FAKE_HOLD;
	refresh_start(f->r);
	turn(f);
	assert_int_equal(f->nstarts, 4);
	assert_int_equal(f->starts[0].id, 3);
	assert_int_equal(f->starts[1].id, 4);
	assert_int_equal(f->starts[2].id, 1);
	assert_int_equal(f->starts[3].id, 2);
}

/* The start callback gets the kind's arg, kind and key; other kinds are not its. */
static void
test_start_args(void **state)
{
	struct fx	*f = *state;
	time_t		 now = time(NULL);
	size_t		 i;

	put(f, CACHE_KIND_KDS, 7, now - 60, now - 5, 0, 0);
	put(f, CACHE_KIND_RIM, 8, now - 60, now - 5, 0, 0);	/* no refresher */
	put(f, CACHE_KIND_PCCS, 9, now - 60, now - 5, 0, 0);
	set_kind(f, CACHE_KIND_KDS, 100, 0, IDLE_S);
	set_kind(f, CACHE_KIND_PCCS, 100, 0, IDLE_S);
	{
		/* A kind disabled by a NULL start (a reload) refreshes nothing. */
		struct refresh_kind_conf	kc;

		memset(&kc, 0, sizeof(kc));
		refresh_set_kind(f->r, CACHE_KIND_PCCS, &kc);
	}
	f->mode = FAKE_HOLD;
	refresh_start(f->r);
	turn(f);
	assert_int_equal(f->nstarts, 1);
	assert_int_equal(f->starts[0].kind, CACHE_KIND_KDS);
	assert_int_equal(f->starts[0].id, 7);
	assert_ptr_equal(f->starts[0].arg, f);
	assert_non_null(f->starts[0].done);
	for (i = 0; i < f->nstarts; i++)
		assert_int_not_equal(f->starts[i].kind, CACHE_KIND_RIM);
	/* A stats read sees it in flight until it ends. */
	{
		struct refresh_stats	st;

		refresh_stats(f->r, &st);
		assert_int_equal(st.inflight, 1);
		finish(f, 0, 1);
		refresh_stats(f->r, &st);
		assert_int_equal(st.inflight, 0);
	}
}

/* max_inflight per kind: no more at once; a slot freed starts the next, none twice. */
static void
test_max_inflight(void **state)
{
	struct fx	*f = *state;
	time_t		 now = time(NULL);
	size_t		 i, j;
	int		 k;

	for (k = 1; k <= 5; k++)
		put(f, CACHE_KIND_OCSP, k, now - 60, now - 100 + k, 0, 0);
	set_kind(f, CACHE_KIND_OCSP, 100, 2, IDLE_S);
	f->mode = FAKE_HOLD;
	refresh_start(f->r);
	turn(f);
	assert_int_equal(f->nstarts, 2);
	assert_int_equal(f->starts[0].id, 1);
	assert_int_equal(f->starts[1].id, 2);
	finish(f, 0, 1);
	spin_starts(f, 3);
	assert_int_equal(f->nstarts, 3);
	assert_int_equal(f->starts[2].id, 3);
	/* The one still held is not started again while in flight. */
	spin_for(f, 50);
	assert_int_equal(f->nstarts, 3);
	finish(f, 1, 1);
	finish(f, 2, 1);
	spin_starts(f, 5);
	assert_int_equal(f->nstarts, 5);
	for (i = 0; i < f->nstarts; i++)
		for (j = i + 1; j < f->nstarts; j++)
			assert_int_not_equal(f->starts[i].id, f->starts[j].id);
}

/* REFRESH_MAX_INFLIGHT across kinds, whatever max_inflight says. */
static void
test_global_slots(void **state)
{
	struct fx	*f = *state;
	time_t		 now = time(NULL);
	int		 k;

	for (k = 1; k <= REFRESH_MAX_INFLIGHT + 4; k++)
		put(f, k % 2 ? CACHE_KIND_OCSP : CACHE_KIND_KDS, k, now - 60,
		    now - 50, 0, 0);
	set_kind(f, CACHE_KIND_OCSP, 100, 0, IDLE_S);
	set_kind(f, CACHE_KIND_KDS, 100, 0, IDLE_S);
	f->mode = FAKE_HOLD;
	refresh_start(f->r);
	turn(f);
	spin_for(f, 50);
	assert_int_equal(f->nstarts, REFRESH_MAX_INFLIGHT);
}

/* The token bucket: a second's worth at once, then one per 1/rate s. */
static void
test_rate(void **state)
{
	struct fx	*f = *state;
	time_t		 now = time(NULL);
	unsigned long	 limited = metrics.refresh_rate_limited;
	int64_t		 first, third;
	int		 k;

	for (k = 1; k <= 6; k++)
		put(f, CACHE_KIND_OCSP, k, now - 60, now - 100 + k, 0, 0);
	set_kind(f, CACHE_KIND_OCSP, 2, 0, IDLE_S);
	f->mode = FAKE_OK;
	refresh_start(f->r);
	turn(f);
	assert_int_equal(f->nstarts, 2);
	/* The entry that found no token is counted once, however long it waits. */
	assert_int_equal(metrics.refresh_rate_limited, limited + 1);
	spin_starts(f, 3);
	assert_int_equal(f->nstarts, 3);
	assert_int_equal(f->starts[2].id, 3);
	first = (int64_t)f->starts[0].at.tv_sec * 1000 +
	    f->starts[0].at.tv_nsec / 1000000;
	third = (int64_t)f->starts[2].at.tv_sec * 1000 +
	    f->starts[2].at.tv_nsec / 1000000;
	/* A token every 500 ms: never sooner (a slow machine is only later). */
	assert_true(third - first >= 450);
	assert_int_equal(metrics.refresh_rate_limited, limited + 2);
}

/* A failed refresh backs off: min_interval * 2^(n-1), equal jitter, counted in the store. */
static void
test_backoff(void **state)
{
	struct fx		*f = *state;
	time_t			 now = time(NULL);
	struct cache_meta	 m;
	unsigned long		 failed = metrics.refresh_failed;

	put(f, CACHE_KIND_OCSP, 1, now - 60, now - 5, 0, 0);
	put(f, CACHE_KIND_OCSP, 2, now - 60, now - 5, 0, 3);
	set_kind(f, CACHE_KIND_OCSP, 100, 0, IDLE_S);
	f->mode = FAKE_FAIL;
	refresh_start(f->r);
	turn(f);
	assert_int_equal(f->nstarts, 2);
	assert_int_equal(metrics.refresh_failed, failed + 2);
	m = meta(f, CACHE_KIND_OCSP, 1);
	assert_int_equal(m.refresh_failures, 1);
	assert_true(m.next_refresh_at >= now + MIN_INTERVAL_S / 2);
	assert_true(m.next_refresh_at <= time(NULL) + MIN_INTERVAL_S);
	/* The fourth failure: 80 s, drawn from [40, 80). */
	m = meta(f, CACHE_KIND_OCSP, 2);
	assert_int_equal(m.refresh_failures, 4);
	assert_true(m.next_refresh_at >= now + 4 * MIN_INTERVAL_S);
	assert_true(m.next_refresh_at <= time(NULL) + 8 * MIN_INTERVAL_S);
	/* The stored answer itself is untouched: still served until nextUpdate. */
	assert_int_equal(m.next_update, now - 60 + 3600);
}

/*
 * A store that takes no write (here its lock.mdb replaced: every write is
 * refused before it begins): the failed refresh's backoff is held in
 * memory, and the entry, still due in the store, is not asked again.
 */
static void
test_backoff_unstored(void **state)
{
	struct fx		*f = *state;
	time_t			 now = time(NULL);
	struct cache_meta	 m;
	struct refresh_stats	 st;
	char			 lock[sizeof(f->sf->dir) + 16];
	unsigned long		 failed = metrics.refresh_failed;

	put(f, CACHE_KIND_OCSP, 1, now - 60, now - 5, 0, 2);
	set_kind(f, CACHE_KIND_OCSP, 100, 0, IDLE_S);
	f->mode = FAKE_FAIL;
	snprintf(lock, sizeof(lock), "%s/lock.mdb", f->sf->dir);
	assert_int_equal(unlink(lock), 0);
	refresh_start(f->r);
	/* Without it the entry started again at every turn. */
	spin_for(f, 300);
	assert_int_equal(f->nstarts, 1);
	assert_int_equal(metrics.refresh_failed, failed + 1);
	m = meta(f, CACHE_KIND_OCSP, 1);
	assert_int_equal(m.refresh_failures, 2);	/* not written */
	assert_int_equal(m.next_refresh_at, now - 5);
	/* Held back, it is not in the backlog either. */
	refresh_stats(f->r, &st);
	assert_true(st.complete);
	assert_int_equal(st.backlog, 0);
	assert_int_equal(st.inflight, 0);
}

/*
 * A full map makes room: usage_map_full evicts entries not in use (not
 * asked within idle_expire_s, or past nextUpdate), never one in use or
 * one imported and not asked since; the spell is counted and shown, and
 * ends once no write was refused for an interval.
 */
static void
test_full_evicts_idle(void **state)
{
	struct fx		*f = *state;
	struct usage		*u = refresh_usage(f->r);
	time_t			 now = time(NULL);
	struct refresh_stats	 st;
	unsigned long		 ev = metrics.full_evictions[CACHE_KIND_OCSP];
	unsigned long		 writes = metrics.store_map_full_writes;
	int			 k, n, total = 0;

	for (k = 1; k <= 6; k++)	/* idle: asked two hours ago */
		put(f, CACHE_KIND_OCSP, k, now - 60, now + 600, now - 7200, 0);
	put(f, CACHE_KIND_OCSP, 7, now - 7200, now + 600, now - 60, 0);	/* expired */
	put(f, CACHE_KIND_OCSP, 8, now - 60, now + 600, now - 60, 0);	/* in use */
	put(f, CACHE_KIND_OCSP, 9, now - 60, now + 600, now - 30, 0);	/* in use */
	put_used(f, CACHE_KIND_OCSP, 10, now - 60, now + 600, 0, 0, 0, CACHE_F_IMPORTED);	/* imported, not asked */
	set_kind(f, CACHE_KIND_OCSP, 100, 0, 3600);
	f->mode = FAKE_HOLD;
	refresh_start(f->r);
	turn(f);	/* a pass: the candidates */
	refresh_stats(f->r, &st);
	assert_true(st.complete);
	assert_int_equal(st.full_since, 0);
	while ((n = usage_map_full(u, CACHE_KIND_OCSP, now, "test: %s",
	    "map full")) > 0) {
		assert_true(n <= 4);
		total += n;
	}
	assert_int_equal(total, 7);
	for (k = 1; k <= 7; k++)
		assert_false(stored(f, CACHE_KIND_OCSP, k));
	for (k = 8; k <= 10; k++)
		assert_true(stored(f, CACHE_KIND_OCSP, k));
	assert_int_equal(metrics.full_evictions[CACHE_KIND_OCSP], ev + 7);
	assert_int_equal(metrics.store_map_full_writes, writes + 3);
	assert_int_equal(metrics.store_map_full_now, 1);
	refresh_stats(f->r, &st);
	assert_int_equal(st.full_since, now);
	assert_int_equal(st.full_refused, 3);
	assert_int_equal(st.full_evicted, 7);
	/* Within the interval the spell goes on; after it, it is over. */
	usage_full_tick(u, now + REFRESH_FULL_LOG_S - 1);
	assert_int_equal(metrics.store_map_full_now, 1);
	usage_full_tick(u, now + REFRESH_FULL_LOG_S);
	assert_int_equal(metrics.store_map_full_now, 0);
	refresh_stats(f->r, &st);
	assert_int_equal(st.full_since, 0);
}

/* A refresh that cannot start backs off like one that failed, and frees its slot. */
static void
test_refused_start(void **state)
{
	struct fx		*f = *state;
	time_t			 now = time(NULL);
	struct cache_meta	 m;
	struct refresh_stats	 st;

	put(f, CACHE_KIND_OCSP, 1, now - 60, now - 5, 0, 0);
	set_kind(f, CACHE_KIND_OCSP, 100, 1, IDLE_S);
	f->mode = FAKE_REFUSE;
	refresh_start(f->r);
	turn(f);
	assert_int_equal(f->nstarts, 1);
	m = meta(f, CACHE_KIND_OCSP, 1);
	assert_int_equal(m.refresh_failures, 1);
	assert_true(m.next_refresh_at > now);
	refresh_stats(f->r, &st);
	assert_int_equal(st.inflight, 0);
}

/* Imports (no schedule) get one, jittered within its bounds, and are not started. */
static void
test_import_jitter(void **state)
{
	struct fx		*f = *state;
	time_t			 now = time(NULL), t1;
	struct cache_meta	 m;
	int64_t			 lo = INT64_MAX, hi = 0;
	int			 k;

	/* Valid now .. now + 1 h: half of it is 1800 s, +-10 %. */
	for (k = 1; k <= 20; k++)
		put(f, CACHE_KIND_OCSP, k, now, 0, 0, 0);
	set_kind(f, CACHE_KIND_OCSP, 100, 0, IDLE_S);
	f->mode = FAKE_HOLD;
	refresh_start(f->r);
	turn(f);
	t1 = time(NULL);
	assert_int_equal(f->nstarts, 0);
	for (k = 1; k <= 20; k++) {
		m = meta(f, CACHE_KIND_OCSP, k);
		assert_true(m.next_refresh_at >= now + 1620);
		assert_true(m.next_refresh_at <= t1 + 1980);
		if (m.next_refresh_at < lo)
			lo = m.next_refresh_at;
		if (m.next_refresh_at > hi)
			hi = m.next_refresh_at;
	}
	/* Spread, not one burst: 20 draws over 360 s are not all within 30 s. */
	assert_true(hi - lo > 30);
}

/* Expired and idle entries are parked, not refreshed; long expired ones purged. */
static void
test_parked(void **state)
{
	struct fx		*f = *state;
	time_t			 now = time(NULL);
	struct cache_meta	 m;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];

	put(f, CACHE_KIND_OCSP, 1, now - 7200, now - 100, 0, 0);	/* expired an hour ago */
	put(f, CACHE_KIND_OCSP, 2, now - 60, now - 100, now - 7200, 0);	/* idle: asked 2 h ago */
	put(f, CACHE_KIND_OCSP, 3, now - 9 * 86400, now - 100, 0, 0);	/* past the purge grace */
	put(f, CACHE_KIND_OCSP, 4, now - 60, now - 100, now - 60, 0);	/* due */
	set_kind(f, CACHE_KIND_OCSP, 100, 0, 3600);
	f->mode = FAKE_HOLD;
	refresh_start(f->r);
	turn(f);
	assert_int_equal(f->nstarts, 1);
	assert_int_equal(f->starts[0].id, 4);
	m = meta(f, CACHE_KIND_OCSP, 1);
	assert_true(m.flags & CACHE_F_PARKED);
	assert_int_equal(m.next_refresh_at, m.next_update + REFRESH_PURGE_GRACE_S);
	m = meta(f, CACHE_KIND_OCSP, 2);
	assert_true(m.flags & CACHE_F_PARKED);
	assert_int_equal(m.next_refresh_at, m.next_update);
	assert_int_equal(cache_get_meta(f->sf->c, CACHE_KIND_OCSP, key,
	    store_key(key, 3), &m), 0);
}

/*
 * A pass's figures per kind: valid, expired and still wanted, expired and
 * idle (left to expire); and the newest entry an import stored.
 */
static void
test_walk_counts(void **state)
{
	struct fx		*f = *state;
	time_t			 now = time(NULL);
	int64_t			 end = mono_ms() + SPIN_MAX_MS;
	struct cache_meta	 m;
	struct cache_body	 b = { 0 };
	struct refresh_stats	 st;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	static const uint8_t	 resp[] = "response";
	int			 k;

	put(f, CACHE_KIND_OCSP, 1, now - 60, now + 600, now - 60, 0);	/* valid */
	put(f, CACHE_KIND_OCSP, 2, now - 7200, now + 600, now - 4000, 0); /* expired, asked */
	put(f, CACHE_KIND_OCSP, 3, now - 9000, now + 600, now - 8000, 0); /* expired, idle */
	put(f, CACHE_KIND_PCCS, 1, now - 7200, now + 600, now - 4000, 0);
	/* Two imports (an older one, a newer one), and a fetch newer than both. */
	for (k = 4; k <= 6; k++) {
		store_meta(&m, CACHE_KIND_OCSP, now - 60);
		m.fetched_at = now - 300 + 100 * (k - 4);
		m.next_refresh_at = now + 600;
		snprintf(m.source, sizeof(m.source), k == 6 ? "upstream" :
		    k == 5 ? RECORD_SOURCE_IMPORT ":b.jsonl" : RECORD_SOURCE_IMPORT);
		b.response = b.request = resp;
		b.response_len = b.request_len = sizeof(resp);
		assert_int_equal(cache_put(f->sf->c, key,
		    store_key(key, (unsigned)k), &m, &b), 0);
	}
	set_kind(f, CACHE_KIND_OCSP, 100, 0, 5000);
	set_kind(f, CACHE_KIND_PCCS, 100, 0, 5000);
	f->mode = FAKE_HOLD;
	refresh_start(f->r);
	do {
		turn(f);
		refresh_stats(f->r, &st);
	} while (!st.complete && mono_ms() < end);
	assert_true(st.complete);
	assert_int_equal(st.entries[CACHE_KIND_OCSP], 6);
	assert_int_equal(st.valid_by_kind[CACHE_KIND_OCSP], 4);
	assert_int_equal(st.expired_by_kind[CACHE_KIND_OCSP], 1);
	assert_int_equal(st.valid_by_kind[CACHE_KIND_PCCS], 0);
	assert_int_equal(st.expired_by_kind[CACHE_KIND_PCCS], 1);
	assert_int_equal(st.expired, 3);
	assert_int_equal(st.newest_import, now - 200);
}

/*
 * Hits: a recent recorded use of a protected entry is not written again;
 * an old one waits for the walk; so does the second ask of an entry on
 * probation, however recent its use (it protects the entry); an import's
 * first ask counts as two.
 */
static void
test_hits(void **state)
{
	struct fx		*f = *state;
	struct usage		*u = refresh_usage(f->r);
	time_t			 now = time(NULL);
	struct cache_meta	 m;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	int			 i;

	put(f, CACHE_KIND_OCSP, 1, now - 60, now + 600, 0, 0);	/* never served */
	/* recent, asked twice: protected */
	put_used(f, CACHE_KIND_OCSP, 2, now - 60, now + 600, now - 60, 0, 2, 0);
	/* two hours, protected */
	put_used(f, CACHE_KIND_OCSP, 3, now - 60, now + 600, now - 7200, 0, 5, 0);
	/* recent, asked once: probation */
	put_used(f, CACHE_KIND_OCSP, 4, now - 60, now + 600, now - 60, 0, 1, 0);
	/* imported, never asked */
	put_used(f, CACHE_KIND_OCSP, 5, now - 60, now + 600, 0, 0, 0,
	    CACHE_F_IMPORTED);
	set_kind(f, CACHE_KIND_OCSP, 100, 0, IDLE_S);
	for (i = 1; i <= 5; i++) {
		m = meta(f, CACHE_KIND_OCSP, i);
		usage_hit(u, CACHE_KIND_OCSP, key,
		    store_key(key, (unsigned)i), &m, now);
	}
	usage_flush(u);
	assert_int_equal(meta(f, CACHE_KIND_OCSP, 1).last_served_at, now);
	assert_int_equal(meta(f, CACHE_KIND_OCSP, 2).last_served_at, now - 60);
	/* Not in the table: the walk writes it, stamped with its own time. */
	assert_int_equal(meta(f, CACHE_KIND_OCSP, 3).last_served_at, now - 7200);
	assert_int_equal(meta(f, CACHE_KIND_OCSP, 4).last_served_at, now - 60);
	m = meta(f, CACHE_KIND_OCSP, 5);
	assert_int_equal(m.served_count, 2);
	assert_int_equal(m.flags & CACHE_F_IMPORTED, 0);
	refresh_start(f->r);
	turn(f);
	m = meta(f, CACHE_KIND_OCSP, 3);
	assert_true(m.last_served_at >= now);
	assert_int_equal(m.served_count, 6);
	assert_int_equal(meta(f, CACHE_KIND_OCSP, 2).last_served_at, now - 60);
	m = meta(f, CACHE_KIND_OCSP, 4);
	assert_true(m.last_served_at >= now);
	assert_int_equal(m.served_count, 2);
	/* Protected now: its next hit is not written. */
	usage_hit(u, CACHE_KIND_OCSP, key, store_key(key, 4), &m, now + 1);
	usage_flush(u);
	turn(f);
	assert_int_equal(meta(f, CACHE_KIND_OCSP, 4).served_count, 2);
}

/*
 * max_entries: room is made from the last pass's candidates, entries on
 * probation first, least recently asked first, skipping one asked since;
 * protected entries within their share (80%) stay, and then no room is
 * made.
 */
static void
test_make_room(void **state)
{
	struct fx			*f = *state;
	struct usage			*u = refresh_usage(f->r);
	struct refresh_kind_conf	 kc;
	time_t				 now = time(NULL);
	struct cache_meta		 m;
	struct cache_body		 b;
	uint8_t				 key[CACHE_KEY_MAX_BYTES];
	unsigned long			 ev0 = metrics.evictions[CACHE_KIND_OCSP];
	int				 i;

	/* 0..2 asked often, long ago; 3..9 asked once, since */
	for (i = 0; i < 3; i++)
		put_used(f, CACHE_KIND_OCSP, i, now - 60, now + 600,
		    now - 1000 + i, 0, 5, 0);
	for (i = 3; i < 10; i++)
		put_used(f, CACHE_KIND_OCSP, i, now - 60, now + 600,
		    now - 100 + i, 0, 1, 0);
	set_kind(f, CACHE_KIND_OCSP, 100, 0, IDLE_S);
	memset(&kc, 0, sizeof(kc));
	kc.sched.fraction = 0.5;
	kc.sched.min_interval_s = MIN_INTERVAL_S;
	kc.sched.max_interval_s = 43200;
	kc.idle_expire_s = IDLE_S;
	kc.rate_limit_per_s = 100;
	kc.max_entries = 10;
	kc.start = fake_start;
	kc.arg = f;
	refresh_set_kind(f->r, CACHE_KIND_OCSP, &kc);
	refresh_start(f->r);
	spin_for(f, 50);	/* a pass over ten entries */
	/* entry 3, the oldest on probation, is asked now: it stays */
	m = meta(f, CACHE_KIND_OCSP, 3);
	usage_hit(u, CACHE_KIND_OCSP, key, store_key(key, 3), &m, now);
	for (i = 0; i < 6; i++)
		assert_int_equal(usage_make_room(u, CACHE_KIND_OCSP), 0);
	assert_int_equal(usage_make_room(u, CACHE_KIND_OCSP), -1);
	assert_int_equal(metrics.evictions[CACHE_KIND_OCSP] - ev0, 6);
	for (i = 0; i < 10; i++)
		assert_int_equal(cache_get(f->sf->c, CACHE_KIND_OCSP, key,
		    store_key(key, (unsigned)i), &m, &b), i < 4 ? 1 : 0);
}

/* Stopped: in flight ones finish, no new one starts. */
static void
test_stop(void **state)
{
	struct fx	*f = *state;
	time_t		 now = time(NULL);

	put(f, CACHE_KIND_OCSP, 1, now - 60, now - 50, 0, 0);
	put(f, CACHE_KIND_OCSP, 2, now - 60, now - 40, 0, 0);
	set_kind(f, CACHE_KIND_OCSP, 100, 1, IDLE_S);
	f->mode = FAKE_HOLD;
	refresh_start(f->r);
	turn(f);
	assert_int_equal(f->nstarts, 1);
	refresh_stop(f->r);
	finish(f, 0, 1);
	spin_for(f, 50);
	assert_int_equal(f->nstarts, 1);
}

/* ---- operators' asks (sched_ask.c) ---------------------------------------- */

static void
ask_cb(const struct cache_ask_line *l, void *arg)
{
	struct fx	*f = arg;

	assert_true(f->nlines < STARTS_MAX);
	f->lines[f->nlines++] = *l;
}

/* End held start n as a renewal: a later thisUpdate, a new schedule. */
static void
finish_renewed(struct fx *f, size_t n)
{
	struct start		*s = &f->starts[n];
	struct cache_meta	 m;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen = store_key(key, (unsigned)s->id);

	assert_int_equal(cache_get_meta(f->sf->c, s->kind, key, klen, &m), 1);
	m.this_update += 60;
	m.next_update += 60;
	m.next_refresh_at = time(NULL) + 600;
	assert_int_equal(cache_put_meta(f->sf->c, key, klen, &m), 0);
	s->ended = 1;
	s->done(f->r, 1, NULL, s->done_arg);
}

/* The lines the ask got of what: how many. */
static size_t
lines_of(const struct fx *f, enum cache_ask_result what)
{
	size_t	i, n = 0;

	for (i = 0; i < f->nlines; i++)
		n += f->lines[i].what == what;
	return n;
}

/*
 * --all over entries none of which is due: every one renewed, in key
 * order, never more at once than the kind's max_inflight; the last line
 * counts them.
 */
static void
test_ask_all_bounded(void **state)
{
	struct fx		*f = *state;
	struct cache_ask	 ask = { 1, 0, NULL, 0 };
	time_t			 now = time(NULL);
	size_t			 i, j, running, ocsp, rounds = 0;
	int			 k;

	for (k = 1; k <= 7; k++)
		put(f, k % 2 ? CACHE_KIND_OCSP : CACHE_KIND_KDS, k, now - 60,
		    now + 3000, 0, 0);
	set_kind(f, CACHE_KIND_OCSP, 100, 2, IDLE_S);
	set_kind(f, CACHE_KIND_KDS, 100, 1, IDLE_S);
	f->mode = FAKE_HOLD;
	refresh_start(f->r);
	turn(f);
	assert_int_equal(f->nstarts, 0);	/* nothing due */
	assert_non_null(refresh_ask_start(f->r, &ask, ask_cb, f));
	while (f->nlines < 8 && rounds++ < 20) {
		spin_for(f, 30);
		for (running = ocsp = 0, i = 0; i < f->nstarts; i++) {
			running += !f->starts[i].ended;
			ocsp += !f->starts[i].ended &&
			    f->starts[i].kind == CACHE_KIND_OCSP;
		}
		/* each kind's max_inflight: OCSP 2, KDS 1 */
		assert_true(running >= 1 && ocsp <= 2 && running - ocsp <= 1);
		for (i = 0; i < f->nstarts; i++)
			if (!f->starts[i].ended)
				finish_renewed(f, i);
		spin_for(f, 10);
	}
	assert_int_equal(f->nstarts, 7);
	for (i = 0; i < f->nstarts; i++)
		for (j = i + 1; j < f->nstarts; j++)
			assert_false(f->starts[i].id == f->starts[j].id &&
			    f->starts[i].kind == f->starts[j].kind);
	/* the kinds in order: OCSP's entries, then KDS's */
	assert_int_equal(f->starts[0].kind, CACHE_KIND_OCSP);
	assert_int_equal(f->starts[6].kind, CACHE_KIND_KDS);
	assert_int_equal(f->nlines, 8);
	assert_int_equal(lines_of(f, CACHE_ASK_RENEWED), 7);
	assert_int_equal(f->lines[7].what, CACHE_ASK_DONE);
	assert_int_equal(f->lines[7].renewed, 7);
	assert_int_equal(f->lines[0].this_update, f->lines[0].was + 60);
}

/* An ask goes at the kind's rate_limit_per_s, as the schedule does; no newer answer is unchanged. */
static void
test_ask_rate(void **state)
{
	struct fx		*f = *state;
	struct cache_ask	 ask = { 0, CACHE_KIND_OCSP, NULL, 0 };
	time_t			 now = time(NULL);
	int64_t			 first, third;
	int			 k;

	for (k = 1; k <= 3; k++)
		put(f, CACHE_KIND_OCSP, k, now - 60, now + 3000, 0, 0);
	put(f, CACHE_KIND_KDS, 4, now - 60, now + 3000, 0, 0);	/* not asked */
	set_kind(f, CACHE_KIND_OCSP, 2, 0, IDLE_S);
	set_kind(f, CACHE_KIND_KDS, 100, 0, IDLE_S);
	f->mode = FAKE_OK;	/* stored, thisUpdate as before */
	refresh_start(f->r);
	turn(f);
	assert_non_null(refresh_ask_start(f->r, &ask, ask_cb, f));
	spin_starts(f, 3);
	assert_int_equal(f->nstarts, 3);
	first = (int64_t)f->starts[0].at.tv_sec * 1000 +
	    f->starts[0].at.tv_nsec / 1000000;
	third = (int64_t)f->starts[2].at.tv_sec * 1000 +
	    f->starts[2].at.tv_nsec / 1000000;
	assert_true(third - first >= 450);	/* a token every 500 ms */
	spin_for(f, 10);
	assert_int_equal(lines_of(f, CACHE_ASK_UNCHANGED), 3);
	assert_int_equal(f->lines[f->nlines - 1].what, CACHE_ASK_DONE);
	assert_int_equal(f->lines[f->nlines - 1].unchanged, 3);
	for (k = 0; k < 3; k++)
		assert_int_equal(f->starts[k].kind, CACHE_KIND_OCSP);
}

/*
 * Keys by name: one the store lacks fails at once; a failure says why;
 * one never refreshed (a VCEK) is asked anyway, and no backoff is
 * planned for it. A kind's walk skips such entries and counts them.
 */
static void
test_ask_keys(void **state)
{
	struct fx		*f = *state;
	struct cache_ask_key	 keys[3];
	struct cache_ask	 ask = { 0, 0, keys, 3 };
	struct cache_ask	 kds = { 0, CACHE_KIND_KDS, NULL, 0 };
	struct cache_meta	 m;
	time_t			 now = time(NULL);
	int			 k;

	put(f, CACHE_KIND_OCSP, 1, now - 60, now + 3000, 0, 0);
	put(f, CACHE_KIND_KDS, 2, now - 60, now + 3000, 0, 0);
	m = meta(f, CACHE_KIND_KDS, 2);
	m.flags |= CACHE_F_NO_REFRESH;
	m.next_refresh_at = 0;
	{
		uint8_t	key[CACHE_KEY_MAX_BYTES];
		size_t	klen = store_key(key, 2);

		assert_int_equal(cache_put_meta(f->sf->c, key, klen, &m), 0);
	}
	memset(keys, 0, sizeof(keys));
	keys[0].klen = store_key(keys[0].key, 1);
	keys[1].klen = store_key(keys[1].key, 2);
	keys[2].klen = store_key(keys[2].key, 99);	/* none */
	set_kind(f, CACHE_KIND_OCSP, 100, 0, IDLE_S);
	set_kind(f, CACHE_KIND_KDS, 100, 0, IDLE_S);
	f->mode = FAKE_FAIL;
	refresh_start(f->r);
	turn(f);
	assert_non_null(refresh_ask_start(f->r, &ask, ask_cb, f));
	spin_starts(f, 2);
	spin_for(f, 10);
	assert_int_equal(f->nstarts, 2);
	assert_int_equal(f->nlines, 4);
	assert_int_equal(lines_of(f, CACHE_ASK_FAILED), 3);
	assert_int_equal(f->lines[3].what, CACHE_ASK_DONE);
	assert_int_equal(f->lines[3].failed, 3);
	for (k = 0; k < 3; k++)
		if (f->lines[k].kind == 0)
			assert_string_equal(f->lines[k].why, "no such entry");
		else
			assert_string_equal(f->lines[k].why,
			    "fake upstream failed");
	assert_int_equal(lines_of(f, CACHE_ASK_FAILED), 3);
	/* the VCEK: no schedule was made for it */
	assert_int_equal(meta(f, CACHE_KIND_KDS, 2).next_refresh_at, 0);
	assert_int_equal(meta(f, CACHE_KIND_KDS, 2).refresh_failures, 0);
	/* --kind kds: the VCEK is skipped, counted */
	f->nlines = 0;
	assert_non_null(refresh_ask_start(f->r, &kds, ask_cb, f));
	spin_for(f, 20);
	assert_int_equal(f->nstarts, 2);
	assert_int_equal(f->nlines, 1);
	assert_int_equal(f->lines[0].what, CACHE_ASK_DONE);
	assert_int_equal(f->lines[0].skipped, 1);
}

/* Stopping ends an ask with a stopped line; its refresh in flight ends unreported. */
static void
test_ask_stop(void **state)
{
	struct fx		*f = *state;
	struct cache_ask	 ask = { 1, 0, NULL, 0 };
	struct refresh_ask	*a;
	time_t			 now = time(NULL);

	put(f, CACHE_KIND_OCSP, 1, now - 60, now + 3000, 0, 0);
	put(f, CACHE_KIND_OCSP, 2, now - 60, now + 3000, 0, 0);
	set_kind(f, CACHE_KIND_OCSP, 100, 1, IDLE_S);
	f->mode = FAKE_HOLD;
	refresh_start(f->r);
	assert_non_null(a = refresh_ask_start(f->r, &ask, ask_cb, f));
	spin_starts(f, 1);
	refresh_stop(f->r);
	assert_int_equal(f->nlines, 1);
	assert_int_equal(f->lines[0].what, CACHE_ASK_STOPPED);
	finish_renewed(f, 0);
	spin_for(f, 20);
	assert_int_equal(f->nlines, 1);
	assert_int_equal(f->nstarts, 1);
	/* Cancelled before its first turn: nothing starts, nothing is said. */
	f->nlines = 0;
	refresh_start(f->r);
	a = refresh_ask_start(f->r, &ask, ask_cb, f);
	refresh_ask_cancel(a);
	spin_for(f, 20);
	assert_int_equal(f->nlines, 0);
	assert_int_equal(f->nstarts, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_due_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_args, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_inflight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_global_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_start, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backoff_unstored, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_full_evicts_idle, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_import_jitter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_walk_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_make_room, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ask_all_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ask_rate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ask_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ask_stop, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
