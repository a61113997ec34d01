/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/refresh/backoff.c: the refresh backoff held in memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/refresh/backoff.h"

#define SLOTS	64

static void
test_new(void **state)
{
	struct backoff	*b;

	(void)state;
	assert_null(backoff_new(4));
	assert_null(backoff_new(100));
	assert_non_null(b = backoff_new(SLOTS));
	assert_int_equal(backoff_count(b), 0);
	assert_null(backoff_get(b, 1, 0));
	backoff_free(b);
	backoff_free(NULL);
}

/* Set, read back, replace, drop. */
static void
test_set_get(void **state)
{
	struct backoff			*b = backoff_new(SLOTS);
	const struct backoff_rec	*r;

	(void)state;
	backoff_set(b, 7, 1000, 1, 1010);
	assert_non_null(r = backoff_get(b, 7, 1000));
	assert_int_equal(r->failures, 1);
	assert_int_equal(r->retry_at, 1010);
	assert_null(backoff_get(b, 8, 1000));
	/* The next failure replaces the record: still one. */
	backoff_set(b, 7, 1000, 2, 1030);
	assert_int_equal(backoff_count(b), 1);
	assert_non_null(r = backoff_get(b, 7, 1000));
	assert_int_equal(r->failures, 2);
	assert_int_equal(r->retry_at, 1030);
	backoff_drop(b, 7);
	assert_int_equal(backoff_count(b), 0);
	assert_null(backoff_get(b, 7, 1000));
	backoff_drop(b, 7);	/* not there: nothing */
	assert_int_equal(backoff_count(b), 0);
	backoff_free(b);
}

/* A record made for another answer of the entry is dropped when read. */
static void
test_other_answer(void **state)
{
	struct backoff	*b = backoff_new(SLOTS);

	(void)state;
	backoff_set(b, 9, 1000, 3, 1100);
	assert_null(backoff_get(b, 9, 1200));	/* a client's miss stored a new one */
	assert_int_equal(backoff_count(b), 0);
	assert_null(backoff_get(b, 9, 1000));
	backoff_free(b);
}

/*
 * Fingerprints with one home slot: the probe holds BACKOFF_PROBE of them;
 * the next takes the slot of the earliest retry, and the others stay.
 */
static void
test_full_probe(void **state)
{
	struct backoff			*b = backoff_new(SLOTS);
	const struct backoff_rec	*r;
	uint64_t			 fp;
	int				 i;

	(void)state;
	for (i = 0; i < BACKOFF_PROBE; i++) {
		fp = (uint64_t)(i + 1) * SLOTS + 5;	/* home slot 5 */
		backoff_set(b, fp, 1000, 1, 2000 - i);
	}
	assert_int_equal(backoff_count(b), BACKOFF_PROBE);
	fp = (uint64_t)(BACKOFF_PROBE + 1) * SLOTS + 5;
	backoff_set(b, fp, 1000, 4, 3000);
	assert_int_equal(backoff_count(b), BACKOFF_PROBE);
	assert_non_null(r = backoff_get(b, fp, 1000));
	assert_int_equal(r->failures, 4);
	/* The earliest retry (2000 - 7) went; the others are there. */
	assert_null(backoff_get(b, (uint64_t)BACKOFF_PROBE * SLOTS + 5, 1000));
	for (i = 0; i < BACKOFF_PROBE - 1; i++)
		assert_non_null(backoff_get(b, (uint64_t)(i + 1) * SLOTS + 5,
		    1000));
	/* A slot freed in the probe is found again. */
	backoff_drop(b, (uint64_t)1 * SLOTS + 5);
	backoff_set(b, (uint64_t)100 * SLOTS + 5, 1000, 1, 1500);
	assert_int_equal(backoff_count(b), BACKOFF_PROBE);
	assert_non_null(backoff_get(b, (uint64_t)2 * SLOTS + 5, 1000));
	backoff_free(b);
}

/* Probes wrap around the table's end. */
static void
test_wrap(void **state)
{
	struct backoff	*b = backoff_new(SLOTS);
	int		 i;

	(void)state;
	for (i = 0; i < 4; i++)
		backoff_set(b, (uint64_t)(i + 1) * SLOTS + SLOTS - 2, 1, 1, 5);
	assert_int_equal(backoff_count(b), 4);
	for (i = 0; i < 4; i++)
		assert_non_null(backoff_get(b, (uint64_t)(i + 1) * SLOTS +
		    SLOTS - 2, 1));
	backoff_free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new),
		cmocka_unit_test(test_set_get),
		cmocka_unit_test(test_other_answer),
		cmocka_unit_test(test_full_probe),
		cmocka_unit_test(test_wrap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
