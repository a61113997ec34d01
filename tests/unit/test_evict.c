/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/refresh/evict.c: which entries are eviction candidates, and in what order (probation, then protected beyond its share). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/refresh/evict.h"

static struct cache_meta
meta(int64_t fetched, int64_t asked, uint16_t flags)
{
	struct cache_meta	m;

	memset(&m, 0, sizeof(m));
	m.kind = CACHE_KIND_OCSP;
	m.fetched_at = fetched;
	m.last_served_at = asked;
	m.flags = flags;
	return m;
}

/* An entry asked `uses` times, the last at `asked`. */
static struct cache_meta
used(int64_t asked, uint64_t uses)
{
	struct cache_meta	m = meta(1, asked, 0);

	m.served_count = uses;
	return m;
}

static void
offer(struct evict_set *s, uint8_t id, struct cache_meta m, int want)
{
	uint8_t	key[3] = { 'k', id, 0 };

	assert_int_equal(evict_offer(s, key, sizeof(key), &m), want);
}

/* An import not asked since is never a candidate; once asked it is. */
static void
test_eligible(void **state)
{
	struct cache_meta	m;

	(void)state;
	m = meta(100, 100, CACHE_F_IMPORTED);
	assert_int_equal(evict_eligible(&m), 0);
	m.flags = CACHE_F_NO_REFRESH;
	assert_int_equal(evict_eligible(&m), 1);
	/* never asked: the fetch time stands in (a 0.1.0 record, say) */
	m = meta(50, 0, 0);
	assert_int_equal(evict_asked(&m), 50);
	m = meta(50, 70, 0);
	assert_int_equal(evict_asked(&m), 70);
}

/* A set of 3 keeps the 3 asked longest ago, whatever the offer order. */
static void
test_oldest_kept(void **state)
{
	struct evict_set		*s;
	const struct evict_cand		*c;
	const int64_t			 want[] = { 10, 20, 30 };
	size_t				 i;

	(void)state;
	assert_non_null(s = evict_new(3));
	offer(s, 1, meta(1, 50, 0), 1);
	offer(s, 2, meta(1, 30, 0), 1);
	offer(s, 3, meta(1, 40, 0), 1);
	offer(s, 4, meta(1, 60, 0), 0);		/* full, and newer than all */
	offer(s, 5, meta(1, 10, 0), 1);		/* replaces 50 */
	offer(s, 6, meta(1, 5, CACHE_F_IMPORTED), 0);
	offer(s, 7, meta(20, 0, 0), 1);		/* replaces 40 */
	assert_int_equal(evict_count(s), 3);
	evict_seal(s);
	for (i = 0; i < 3; i++) {
		assert_non_null(c = evict_next(s));
		assert_int_equal(c->asked, want[i]);
		assert_int_equal(c->klen, 3);
	}
	assert_null(evict_next(s));
	evict_clear(s);
	assert_int_equal(evict_count(s), 0);
	evict_seal(s);
	assert_null(evict_next(s));
	evict_free(s);
	evict_free(NULL);
}

/* Many offers in random order: the result is the smallest, sorted. */
static void
test_many(void **state)
{
	struct evict_set	*s;
	const struct evict_cand	*c;
	uint32_t		 x = 12345;
	int64_t			 prev = -1;
	size_t			 i, n = 0;
	uint8_t			 key[4];
	struct cache_meta	 m;

	(void)state;
	assert_non_null(s = evict_new(16));
	for (i = 0; i < 1000; i++) {
		x = x * 1103515245u + 12345u;
		/* 0..999 each once, by a permutation: i * 7 mod 1000 */
		m = meta(1, (int64_t)((i * 7) % 1000) + 1, 0);
		memcpy(key, &x, sizeof(key));
		assert_true(evict_offer(s, key, sizeof(key), &m) >= 0);
	}
	evict_seal(s);
	while ((c = evict_next(s)) != NULL) {
		assert_true(c->asked > prev);
		prev = c->asked;
		n++;
	}
	assert_int_equal(n, 16);
	assert_int_equal(prev, 16);
	evict_free(s);
}

/* Asked once (or never): probation; asked again: protected. */
static void
test_tier(void **state)
{
	struct cache_meta	m;

	(void)state;
	m = used(10, 0);
	assert_int_equal(evict_tier(&m), EVICT_PROBATION);
	m = used(10, 1);
	assert_int_equal(evict_tier(&m), EVICT_PROBATION);
	m = used(10, EVICT_PROTECT_USES);
	assert_int_equal(evict_tier(&m), EVICT_PROTECTED);
	m = used(10, 1000);
	assert_int_equal(evict_tier(&m), EVICT_PROTECTED);
	assert_string_equal(evict_tier_str[EVICT_PROBATION], "probation");
	assert_string_equal(evict_tier_str[EVICT_PROTECTED], "protected");
}

/*
 * A flood of entries asked once, each newer than every entry asked
 * repeatedly: the set keeps the flood's (probation), oldest first, and
 * never hands out a protected entry while protected ones are within
 * their share. Recency alone would have taken the repeated ones first.
 */
static void
test_flood_first(void **state)
{
	struct evict_set	*s;
	const struct evict_cand	*c;
	uint8_t			 key[4];
	uint32_t		 i, n = 0;
	int64_t			 prev = -1;
	struct cache_meta	 m;

	(void)state;
	assert_non_null(s = evict_new(64));
	/* 18 real entries, asked 10 times each, long ago (t 1..18) */
	for (i = 0; i < 18; i++) {
		m = used(1 + i, 10);
		memcpy(key, &i, sizeof(key));
		assert_int_equal(evict_offer(s, key, sizeof(key), &m), 1);
	}
	/* 182 flood entries, asked once each, all since (t 1000..) */
	for (i = 100; i < 282; i++) {
		m = used(1000 + i, 1);
		memcpy(key, &i, sizeof(key));
		assert_true(evict_offer(s, key, sizeof(key), &m) >= 0);
	}
	assert_int_equal(evict_seen(s), 200);
	assert_int_equal(evict_seen_tier(s, EVICT_PROTECTED), 18);
	assert_int_equal(evict_seen_tier(s, EVICT_PROBATION), 182);
	assert_int_equal(evict_count(s), 64);
	evict_seal(s);
	while ((c = evict_next(s)) != NULL) {
		assert_int_equal(c->tier, EVICT_PROBATION);
		assert_true(c->asked > prev);
		prev = c->asked;
		n++;
	}
	/* the 64 oldest of the flood; no real entry among the candidates */
	assert_int_equal(n, 64);
	assert_int_equal(prev, 1000 + 100 + 63);
	evict_free(s);
}

/*
 * Protected entries go only beyond their share (EVICT_PROTECTED_PCT of
 * what the pass saw), least recently asked first, after every probation
 * candidate; the share counts those handed out.
 */
static void
test_protected_share(void **state)
{
	struct evict_set	*s;
	const struct evict_cand	*c;
	uint8_t			 key[4];
	uint32_t		 i;
	struct cache_meta	 m;

	(void)state;
	assert_non_null(s = evict_new(0));
	/* 10 entries: 9 protected (90%, 1 over the 80% share), 1 on probation */
	for (i = 0; i < 9; i++) {
		m = used(100 - i, 5);
		memcpy(key, &i, sizeof(key));
		assert_int_equal(evict_offer(s, key, sizeof(key), &m), 1);
	}
	m = used(500, 1);
	memcpy(key, &i, sizeof(key));
	assert_int_equal(evict_offer(s, key, sizeof(key), &m), 1);
	evict_seal(s);
	assert_non_null(c = evict_next(s));
	assert_int_equal(c->tier, EVICT_PROBATION);	/* newer, but first */
	assert_int_equal(c->asked, 500);
	assert_non_null(c = evict_next(s));
	assert_int_equal(c->tier, EVICT_PROTECTED);	/* the one over the share */
	assert_int_equal(c->asked, 92);
	assert_null(evict_next(s));			/* 8 of 10: the share */
	assert_null(evict_next(s));
	/* sealed again: the same order, the share counted afresh */
	evict_seal(s);
	assert_non_null(evict_next(s));
	assert_non_null(evict_next(s));
	assert_null(evict_next(s));

	/* imported entries count in what the pass saw, never as candidates */
	evict_clear(s);
	assert_int_equal(evict_seen(s), 0);
	for (i = 0; i < 4; i++) {
		m = used(10 + i, 5);
		memcpy(key, &i, sizeof(key));
		assert_int_equal(evict_offer(s, key, sizeof(key), &m), 1);
	}
	m = meta(1, 0, CACHE_F_IMPORTED);
	assert_int_equal(evict_offer(s, key, sizeof(key), &m), 0);
	assert_int_equal(evict_seen(s), 5);
	evict_seal(s);
	/* 4 protected of 5 is the share: none goes */
	assert_null(evict_next(s));
	evict_free(s);

	/* the one entry of a cap of 1, protected: 100% is over the share */
	assert_non_null(s = evict_new(1));
	m = used(7, 2);
	assert_int_equal(evict_offer(s, key, sizeof(key), &m), 1);
	evict_seal(s);
	assert_non_null(c = evict_next(s));
	assert_int_equal(c->asked, 7);
	evict_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_eligible),
		cmocka_unit_test(test_oldest_kept),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_tier),
		cmocka_unit_test(test_flood_first),
		cmocka_unit_test(test_protected_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
