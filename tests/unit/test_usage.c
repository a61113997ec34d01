/* SPDX-License-Identifier: Apache-2.0 */
/* Usage on a real store with no schedule linked: hits and misses recorded, batched, and written as the walk or the end finds them. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <event2/event.h>

#include "cache/store.h"
#include "proxy/refresh/evict.h"
#include "proxy/refresh/usage.h"

#include "store_fixture.h"

#define IDLE_S		(30L * 86400)

struct fx {
	struct store_fixture	*sf;
	struct event_base	*base;
	struct usage		*u;
};

static int
setup(void **state)
{
	struct fx	*f;
	void		*p;

	if ((f = calloc(1, sizeof(*f))) == NULL || store_setup_open(&p) == -1)
		return -1;
	f->sf = p;
	if ((f->base = event_base_new()) == NULL ||
	    (f->u = usage_new(f->base, f->sf->c, NULL, NULL, NULL)) == NULL)
		return -1;
	usage_set_kind(f->u, CACHE_KIND_OCSP, 1, IDLE_S, 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx	*f = *state;
	void		*p = f->sf;
	int		 rv;

	usage_free(f->u);
	event_base_free(f->base);
	rv = store_teardown(&p);
	free(f);
	return rv;
}

/* Entry i of kind OCSP, valid, last asked at served_at, asked uses times. */
static void
put_used(struct fx *f, int i, int64_t served_at, uint64_t uses)
{
	static const uint8_t	 resp[] = "response";
	struct cache_meta	 m;
	struct cache_body	 b = { 0 };
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	time_t			 now = time(NULL);

	store_meta(&m, CACHE_KIND_OCSP, now - 60);
	m.fetched_at = now;
	m.next_update = now + 600;
	m.next_refresh_at = now + 300;
	m.last_served_at = served_at;
	m.served_count = uses;
	b.response = resp;
	b.response_len = sizeof(resp);
	b.request = resp;
	b.request_len = sizeof(resp);
	assert_int_equal(cache_put(f->sf->c, key, store_key(key, (unsigned)i),
	    &m, &b), 0);
}

static struct cache_meta
meta(struct fx *f, int i)
{
	struct cache_meta	m;
	uint8_t			key[CACHE_KEY_MAX_BYTES];

	assert_int_equal(cache_get_meta(f->sf->c, CACHE_KIND_OCSP, key,
	    store_key(key, (unsigned)i), &m), 1);
	return m;
}

/* Touches: counted in memory, written at TOUCH_BATCH distinct entries or a flush. */
static void
test_touch_batch(void **state)
{
	struct fx		*f = *state;
	time_t			 now = time(NULL);
	struct cache_meta	 m;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	int			 k;

	for (k = 0; k < 256; k++)
		put_used(f, k, 0, 0);
	for (k = 0; k < 3; k++)
		usage_touch(f->u, CACHE_KIND_OCSP, key, store_key(key, 0),
		    now - 5);
	for (k = 1; k < 255; k++)
		usage_touch(f->u, CACHE_KIND_OCSP, key,
		    store_key(key, (unsigned)k), now - 5);
	/* 255 distinct entries wait: nothing written yet. */
	m = meta(f, 0);
	assert_int_equal(m.served_count, 0);
	assert_int_equal(m.last_served_at, 0);
	/* The 256th writes the batch. */
	usage_touch(f->u, CACHE_KIND_OCSP, key, store_key(key, 255), now - 5);
	m = meta(f, 0);
	assert_int_equal(m.served_count, 3);
	assert_int_equal(m.last_served_at, now - 5);
	assert_int_equal(meta(f, 255).served_count, 1);
	/* One more waits until a flush. */
	usage_touch(f->u, CACHE_KIND_OCSP, key, store_key(key, 7), now - 1);
	assert_int_equal(meta(f, 7).served_count, 1);
	usage_flush(f->u);
	m = meta(f, 7);
	assert_int_equal(m.served_count, 2);
	assert_int_equal(m.last_served_at, now - 1);
}

/*
 * The hit path alone: a hit is counted; an entry never served is written
 * through the table; a protected one asked within the hour is not
 * written; one asked hours ago waits for the walk, which takes it once
 * and writes it with the walk's time.
 */
static void
test_hits_walk(void **state)
{
	struct fx		*f = *state;
	time_t			 now = time(NULL);
	struct cache_meta	 m;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen;
	int			 i;

	put_used(f, 1, 0, 0);			/* never served */
	put_used(f, 2, now - 60, EVICT_PROTECT_USES);	/* recent, protected */
	put_used(f, 3, now - 7200, 5);		/* two hours, protected */
	for (i = 1; i <= 3; i++) {
		m = meta(f, i);
		usage_hit(f->u, CACHE_KIND_OCSP, key,
		    store_key(key, (unsigned)i), &m, now);
	}
	assert_int_equal(usage_hits(f->u), 3);
	usage_flush(f->u);
	assert_int_equal(meta(f, 1).last_served_at, now);
	assert_int_equal(meta(f, 2).last_served_at, now - 60);
	assert_int_equal(meta(f, 3).last_served_at, now - 7200);
	/* The walk reaches entry 3: its use is taken once, and written. */
	usage_pass_begin(f->u);
	usage_walk_room(f->u, 4);
	klen = store_key(key, 2);
	assert_int_equal(usage_walk_use(f->u, CACHE_KIND_OCSP, key, klen,
	    now + 1), 0);
	klen = store_key(key, 3);
	assert_int_equal(usage_walk_use(f->u, CACHE_KIND_OCSP, key, klen,
	    now + 1), 1);
	assert_int_equal(usage_walk_use(f->u, CACHE_KIND_OCSP, key, klen,
	    now + 1), 0);
	usage_walk_flush(f->u);
	m = meta(f, 3);
	assert_int_equal(m.last_served_at, now + 1);
	assert_int_equal(m.served_count, 6);
}

/* A use the walk never reached is written when usage is freed. */
static void
test_free_writes_waiting(void **state)
{
	struct fx		*f = *state;
	time_t			 now = time(NULL);
	struct cache_meta	 m;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];

	put_used(f, 4, now - 7200, 5);
	m = meta(f, 4);
	usage_hit(f->u, CACHE_KIND_OCSP, key, store_key(key, 4), &m, now);
	usage_flush(f->u);
	assert_int_equal(meta(f, 4).served_count, 5);
	usage_free(f->u);
	f->u = NULL;
	m = meta(f, 4);
	assert_int_equal(m.served_count, 6);
	assert_true(m.last_served_at >= now);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_touch_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hits_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_writes_waiting, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
