/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/negcache.c: remembered answers, their time, repeats, bodies kept or not, and forgetting. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/negcache.h"

#define K(s)	(const uint8_t *)(s), strlen(s)
#define B(s)	(const uint8_t *)(s), strlen(s)

/* A 404 is live until its time, then gone; the slot still knows it as a repeat. */
static void
test_live_until(void **state)
{
	struct negcache			*nc;
	const struct negcache_entry	*n;

	(void)state;
	assert_non_null(nc = negcache_new());
	assert_null(negcache_live(nc, K("k1"), 100));
	assert_int_equal(negcache_put(nc, K("k1"), 404, 0, B("no such"), 160), 0);
	assert_non_null(n = negcache_live(nc, K("k1"), 159));
	assert_int_equal(n->status, 404);
	assert_false(n->definitive);
	assert_memory_equal(n->body, "no such", 7);
	assert_null(negcache_live(nc, K("k1"), 160));
	assert_null(negcache_live(nc, K("k2"), 100));
	/* the same answer again, even after its time: a repeat */
	assert_int_equal(negcache_put(nc, K("k1"), 404, 0, B("no such"), 220), 1);
	/* another status or body: a new state */
	assert_int_equal(negcache_put(nc, K("k1"), 410, 0, B("no such"), 220), 0);
	assert_int_equal(negcache_put(nc, K("k1"), 410, 0, B("gone"), 220), 0);
	negcache_free(nc);
}

/*
 * A definitive answer needs its bytes: an empty or oversized one is not
 * remembered; an oversized 404 is, without its body.
 */
static void
test_bodies(void **state)
{
	static uint8_t			 big[NEGCACHE_MAX_BODY_BYTES + 1];
	struct negcache			*nc;
	const struct negcache_entry	*n;

	(void)state;
	assert_non_null(nc = negcache_new());
	assert_int_equal(negcache_put(nc, K("d"), 200, 1, NULL, 0, 160), -1);
	assert_int_equal(negcache_put(nc, K("d"), 200, 1, big, sizeof(big), 160),
	    -1);
	assert_null(negcache_live(nc, K("d"), 100));
	assert_int_equal(negcache_put(nc, K("d"), 200, 1, B("unauthorized"), 160),
	    0);
	assert_non_null(n = negcache_live(nc, K("d"), 100));
	assert_true(n->definitive);
	assert_int_equal(n->body_len, 12);
	assert_int_equal(negcache_put(nc, K("n"), 404, 0, big, sizeof(big), 160),
	    0);
	assert_non_null(n = negcache_live(nc, K("n"), 100));
	assert_null(n->body);
	assert_int_equal(n->body_len, 0);
	negcache_free(nc);
}

/* A stored answer forgets the key; another key in the slot is left alone. NULL is no cache. */
static void
test_forget_and_null(void **state)
{
	struct negcache	*nc;
	uint8_t		 key[CACHE_KEY_MAX_BYTES + 1] = { 0 };

	(void)state;
	assert_non_null(nc = negcache_new());
	assert_int_equal(negcache_put(nc, K("k1"), 404, 0, NULL, 0, 160), 0);
	negcache_forget(nc, K("k2"));
	assert_non_null(negcache_live(nc, K("k1"), 100));
	negcache_forget(nc, K("k1"));
	assert_null(negcache_live(nc, K("k1"), 100));
	assert_int_equal(negcache_put(nc, key, sizeof(key), 404, 0, NULL, 0,
	    160), -1);
	negcache_free(nc);
	assert_int_equal(negcache_put(NULL, K("k1"), 404, 0, NULL, 0, 160), -1);
	assert_null(negcache_live(NULL, K("k1"), 100));
	negcache_forget(NULL, K("k1"));
	negcache_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_until),
		cmocka_unit_test(test_bodies),
		cmocka_unit_test(test_forget_and_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
