/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/refresh/uses.c: the fingerprints of uses waiting for the walk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/refresh/uses.h"

static void
test_new(void **state)
{
	struct uses	*u;

	(void)state;
	assert_null(uses_new(512));
	assert_null(uses_new(1000));
	assert_null(uses_new(3000));
	assert_non_null(u = uses_new(1024));
	assert_int_equal(uses_count(u), 0);
	uses_free(u);
	uses_free(NULL);
}

/* The kind is part of the fingerprint; 0 never is one. */
static void
test_fp(void **state)
{
	const uint8_t	key[4] = { 1, 2, 3, 4 };

	(void)state;
	assert_int_not_equal(uses_fp(1, key, sizeof(key)),
	    uses_fp(2, key, sizeof(key)));
	assert_int_not_equal(uses_fp(1, key, sizeof(key)),
	    uses_fp(1, key, sizeof(key) - 1));
	assert_int_equal(uses_fp(1, key, sizeof(key)),
	    uses_fp(1, key, sizeof(key)));
	assert_int_not_equal(uses_fp(0, NULL, 0), 0);
}

static void
test_add_take(void **state)
{
	struct uses	*u = uses_new(1024);
	const uint8_t	 a[] = "entry a", b[] = "entry b";
	uint64_t	 fa = uses_fp(1, a, sizeof(a)), fb = uses_fp(1, b, sizeof(b));

	(void)state;
	assert_false(uses_has(u, fa));
	assert_int_equal(uses_take(u, fa), 0);
	assert_int_equal(uses_add(u, fa), 0);
	assert_int_equal(uses_add(u, fa), 0);	/* once */
	assert_int_equal(uses_count(u), 1);
	assert_true(uses_has(u, fa));
	assert_false(uses_has(u, fb));
	assert_int_equal(uses_take(u, fa), 1);
	assert_int_equal(uses_take(u, fa), 0);
	assert_false(uses_has(u, fa));
	assert_int_equal(uses_count(u), 0);
	uses_free(u);
}

/*
 * Fingerprints crowded on a few home slots, the last one at the table's
 * end so that runs wrap: after every removal, exactly the ones not taken
 * are found (a removal that broke a run would lose those after it).
 */
static void
test_crowded_runs(void **state)
{
	enum { N = 600 };
	struct uses	*u = uses_new(1024);
	uint64_t	 fp[N];
	int		 in[N];
	size_t		 i, j, k, left = N;

	(void)state;
	srandom(7);
	for (i = 0; i < N; i++) {
		/* Homes 5, 6, 1022 and 1023 of the first 1024 slots. */
		fp[i] = ((uint64_t)(i + 1) << 20) |
		    (uint64_t)((const int[]){ 5, 6, 1022, 1023 })[i % 4];
		assert_int_equal(uses_add(u, fp[i]), 0);
		in[i] = 1;
	}
	assert_int_equal(uses_count(u), N);
	for (k = 0; k < N; k++) {
		j = (size_t)random() % N;
		while (!in[j])
			j = (j + 1) % N;
		assert_int_equal(uses_take(u, fp[j]), 1);
		in[j] = 0;
		left--;
		if (k % 50 == 0 || left < 10)
			for (i = 0; i < N; i++)
				assert_int_equal(uses_has(u, fp[i]), in[i]);
		assert_int_equal(uses_count(u), left);
	}
	uses_free(u);
}

/* Growth keeps what waits; beyond max_slots / 4 * 3, an add is refused. */
static void
test_full(void **state)
{
	struct uses	*u = uses_new(2048);
	uint64_t	 i;

	(void)state;
	for (i = 1; i <= 1536; i++)
		assert_int_equal(uses_add(u, i * 0x9e3779b97f4a7c15ULL), 0);
	assert_int_equal(uses_add(u, 1537 * 0x9e3779b97f4a7c15ULL), -1);
	for (i = 1; i <= 1536; i++)
		assert_true(uses_has(u, i * 0x9e3779b97f4a7c15ULL));
	/* A pass begins: the new generation takes hits again. */
	assert_int_equal(uses_turn(u), 0);
	assert_int_equal(uses_add(u, 1537 * 0x9e3779b97f4a7c15ULL), 0);
	assert_int_equal(uses_count(u), 1537);
	uses_free(u);
}

/*
 * A use added in one pass is found in the next; what a whole pass did not
 * take (its entry deleted) is dropped when the one after begins.
 */
static void
test_generations(void **state)
{
	struct uses	*u = uses_new(1024);

	(void)state;
	assert_int_equal(uses_add(u, 11), 0);
	assert_int_equal(uses_turn(u), 0);	/* pass 1 begins */
	assert_true(uses_has(u, 11));
	assert_int_equal(uses_add(u, 11), 0);	/* still waiting: not added twice */
	assert_int_equal(uses_add(u, 22), 0);
	assert_int_equal(uses_count(u), 2);
	assert_int_equal(uses_turn(u), 1);	/* pass 2: 11 was not found */
	assert_false(uses_has(u, 11));
	assert_true(uses_has(u, 22));
	assert_int_equal(uses_take(u, 22), 1);
	assert_int_equal(uses_turn(u), 0);
	assert_int_equal(uses_count(u), 0);
	/* uses_clear forgets both generations. */
	assert_int_equal(uses_add(u, 33), 0);
	assert_int_equal(uses_turn(u), 0);
	assert_int_equal(uses_add(u, 44), 0);
	uses_clear(u);
	assert_int_equal(uses_count(u), 0);
	assert_false(uses_has(u, 33) || uses_has(u, 44));
	assert_int_equal(uses_add(u, 33), 0);
	assert_true(uses_has(u, 33));
	uses_free(u);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new),
		cmocka_unit_test(test_fp),
		cmocka_unit_test(test_add_take),
		cmocka_unit_test(test_crowded_runs),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_generations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
