/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/fetch/fetch_policy.c: status classes, cooldowns, Retry-After. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "proxy/fetch/fetch_policy.h"

static void
test_classify(void **state)
{
	static const struct {
		int			status;
		enum fetch_class	class;
	} t[] = {
		{ 200, FETCH_CLASS_ANSWER },
		{ 204, FETCH_CLASS_ANSWER },	/* the check callback rejects it */
		{ 299, FETCH_CLASS_ANSWER },
		{ 100, FETCH_CLASS_FAILOVER },
		{ 301, FETCH_CLASS_FAILOVER },	/* redirects are not followed */
		{ 304, FETCH_CLASS_FAILOVER },	/* we never ask conditionally */
		{ 400, FETCH_CLASS_FINAL },
		{ 403, FETCH_CLASS_FINAL },
		{ 404, FETCH_CLASS_FINAL },
		{ 408, FETCH_CLASS_FAILOVER },
		{ 410, FETCH_CLASS_FINAL },
		{ 429, FETCH_CLASS_FAILOVER },
		{ 499, FETCH_CLASS_FINAL },
		{ 500, FETCH_CLASS_FAILOVER },
		{ 502, FETCH_CLASS_FAILOVER },
		{ 503, FETCH_CLASS_FAILOVER },
		{ 504, FETCH_CLASS_FAILOVER },
		{ 599, FETCH_CLASS_FAILOVER },
		{ 0, FETCH_CLASS_FAILOVER },
		{ -1, FETCH_CLASS_FAILOVER },
		{ 999, FETCH_CLASS_FAILOVER },
	};
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (fetch_classify(t[i].status) != t[i].class)
			fail_msg("status %d: class %d, want %d", t[i].status,
			    fetch_classify(t[i].status), t[i].class);
	}
}

static void
test_err_str(void **state)
{
	int	i;

	(void)state;
	for (i = 0; i < FETCH_ERR_MAX; i++) {
		assert_non_null(fetch_err_str[i]);
		assert_true(strlen(fetch_err_str[i]) > 0);
	}
	assert_string_equal(fetch_err_str[FETCH_ERR_TIMEOUT], "timeout");
}

static void
test_cooldown_threshold(void **state)
{
	unsigned	i;

	(void)state;
	for (i = 0; i < FETCH_FAILS_BEFORE_COOLDOWN; i++)
		assert_int_equal(fetch_cooldown_ms(i, -1), 0);
	assert_int_equal(fetch_cooldown_ms(FETCH_FAILS_BEFORE_COOLDOWN, -1),
	    FETCH_COOLDOWN_BASE_MS);
}

static void
test_cooldown_growth_and_cap(void **state)
{
	int64_t		prev, ms;
	unsigned	i;

	(void)state;
	prev = fetch_cooldown_ms(FETCH_FAILS_BEFORE_COOLDOWN, -1);
	for (i = FETCH_FAILS_BEFORE_COOLDOWN + 1; i < 64; i++) {
		ms = fetch_cooldown_ms(i, -1);
		if (prev < FETCH_COOLDOWN_MAX_MS / 2)
			assert_int_equal(ms, prev * 2);
		else
			assert_int_equal(ms, FETCH_COOLDOWN_MAX_MS);
		prev = ms;
	}
	assert_int_equal(fetch_cooldown_ms(1000, -1), FETCH_COOLDOWN_MAX_MS);
	assert_int_equal(fetch_cooldown_ms(~0u, -1), FETCH_COOLDOWN_MAX_MS);
}

static void
test_cooldown_retry_after(void **state)
{
	(void)state;
	/* a server's Retry-After counts from the first failure */
	assert_int_equal(fetch_cooldown_ms(1, 30000), 30000);
	/* it only lengthens the cooldown */
	assert_int_equal(fetch_cooldown_ms(FETCH_FAILS_BEFORE_COOLDOWN, 10),
	    FETCH_COOLDOWN_BASE_MS);
	assert_int_equal(fetch_cooldown_ms(FETCH_FAILS_BEFORE_COOLDOWN, 0),
	    FETCH_COOLDOWN_BASE_MS);
	/* and cannot exceed the cap */
	assert_int_equal(fetch_cooldown_ms(1, 3600 * 1000LL),
	    FETCH_COOLDOWN_MAX_MS);
}

/* The ceiling holds after the jitter: a day's Retry-After rests 5 minutes, no more. */
static void
test_cooldown_jitter_ceiling(void **state)
{
	static const uint64_t	rs[] = { 0, 1, 12345, 59999, 60000, ~0ULL,
	    0x9e3779b97f4a7c15ULL };
	int64_t			ms;
	size_t			i;

	(void)state;
	for (i = 0; i < sizeof(rs) / sizeof(rs[0]); i++) {
		ms = fetch_cooldown_ms(1, 24 * 3600 * 1000LL);
		assert_int_equal(fetch_cooldown_jitter_ms(ms, rs[i]),
		    FETCH_COOLDOWN_MAX_MS);
		ms = fetch_cooldown_jitter_ms(FETCH_COOLDOWN_MAX_MS - 1000, rs[i]);
		assert_true(ms >= FETCH_COOLDOWN_MAX_MS - 1000);
		assert_true(ms <= FETCH_COOLDOWN_MAX_MS);
	}
	/* below the ceiling: up to 20 % more */
	assert_int_equal(fetch_cooldown_jitter_ms(1000, 0), 1000);
	assert_int_equal(fetch_cooldown_jitter_ms(1000, 200), 1200);
	assert_int_equal(fetch_cooldown_jitter_ms(1000, 201), 1000);
	assert_int_equal(fetch_cooldown_jitter_ms(0, 77), 0);
	assert_int_equal(fetch_cooldown_jitter_ms(-1, 77), -1);
}

static void
test_retry_after_delta(void **state)
{
	time_t	now = 1700000000;

	(void)state;
	assert_int_equal(fetch_retry_after_ms("0", now), 0);
	assert_int_equal(fetch_retry_after_ms("120", now), 120000);
	assert_int_equal(fetch_retry_after_ms(" 5 ", now), 5000);
	/* huge values are clamped, not overflowed */
	assert_int_equal(fetch_retry_after_ms("99999999999999999999999", now),
	    86400 * 1000LL);
}

static void
test_retry_after_date(void **state)
{
	time_t	t = 784111777;		/* Sun, 06 Nov 1994 08:49:37 GMT */

	(void)state;
	assert_int_equal(fetch_retry_after_ms(
	    "Sun, 06 Nov 1994 08:49:37 GMT", t - 30), 30000);
	assert_int_equal(fetch_retry_after_ms(
	    "Sunday, 06-Nov-94 08:49:37 GMT", t - 30), 30000);
	assert_int_equal(fetch_retry_after_ms(
	    "Sun Nov  6 08:49:37 1994", t - 30), 30000);
	/* a date in the past means now */
	assert_int_equal(fetch_retry_after_ms(
	    "Sun, 06 Nov 1994 08:49:37 GMT", t + 3600), 0);
	/* leap year, end of February */
	assert_int_equal(fetch_retry_after_ms(
	    "Thu, 29 Feb 2024 00:00:10 GMT", 1709164800), 10000);
}

static void
test_retry_after_garbage(void **state)
{
	static const char *const bad[] = {
		"", " ", "soon", "-5", "1.5", "12abc", "0x10",
		"Sun, 06 Nov 1994 08:49:37",		/* no GMT */
		"Sun, 06 Foo 1994 08:49:37 GMT",
		"Sun, 6 Nov 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 25:49:37 GMT",
		"Sun, 06 Nov 1994 08:49:37 GMT trailing",
		"Sun Nov  6 08:49:37",
	};
	size_t	i;

	(void)state;
	assert_int_equal(fetch_retry_after_ms(NULL, 0), -1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (fetch_retry_after_ms(bad[i], 784111777) != -1)
			fail_msg("\"%s\" accepted", bad[i]);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_err_str),
		cmocka_unit_test(test_cooldown_threshold),
		cmocka_unit_test(test_cooldown_growth_and_cap),
		cmocka_unit_test(test_cooldown_retry_after),
		cmocka_unit_test(test_cooldown_jitter_ceiling),
		cmocka_unit_test(test_retry_after_delta),
		cmocka_unit_test(test_retry_after_date),
		cmocka_unit_test(test_retry_after_garbage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
