/* SPDX-License-Identifier: Apache-2.0 */
/* Refresh-time arithmetic: share of validity, jitter, floor, ceiling, expiry, backoff, idleness. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "proxy/refresh/schedule.h"

static const struct schedule_conf	dflt = { 0.5, 0.1, 10, 43200 };

#define T0	1800000000	/* an arbitrary thisUpdate */
#define DAY	86400

/* NVIDIA-like 24 h window, asked at thisUpdate: 12 h +- 1.2 h, but max is 12 h. */
static void
test_half_life(void **state)
{
	struct schedule_conf	c = dflt;
	time_t			at;

	(void)state;
	c.max_interval_s = 2 * DAY;
	assert_int_equal(schedule_refresh_at(&c, T0, T0 + DAY, T0, 0.5), T0 + DAY / 2);
	at = schedule_refresh_at(&c, T0, T0 + DAY, T0, 0.0);
	assert_int_equal(at, T0 + DAY / 2 - DAY / 20);
	at = schedule_refresh_at(&c, T0, T0 + DAY, T0, 0.999999);
	assert_true(at >= T0 + DAY / 2 + DAY / 20 - 1 && at <= T0 + DAY / 2 + DAY / 20);
}

static void
test_jitter_bounds(void **state)
{
	time_t	at;
	int	i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		at = schedule_refresh_at(&dflt, T0, T0 + 3600, T0, i / 1000.0);
		assert_true(at >= T0 + 1620 && at <= T0 + 1980);
	}
}

static void
test_ceiling_and_floor(void **state)
{
	(void)state;
	/* 24 h window, default ceiling 12 h from now. */
	assert_int_equal(schedule_refresh_at(&dflt, T0, T0 + 3 * DAY, T0, 0.5),
	    T0 + 43200);
	/* Half-life already past (an import, a restart): floor of 10 s. */
	assert_int_equal(schedule_refresh_at(&dflt, T0, T0 + DAY, T0 + DAY - 3600, 0.5),
	    T0 + DAY - 3600 + 10);
}

/* Entries at the 12 h ceiling still spread over [10.8 h, 12 h]. */
static void
test_jitter_at_ceiling(void **state)
{
	time_t	at, lo = 0, hi = 0;
	int	i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		at = schedule_refresh_at(&dflt, T0, T0 + DAY, T0, i / 1000.0) - T0;
		assert_true(at >= 43200 - 4320 && at <= 43200);
		lo += at < 43200 - 2160;
		hi += at > 43200 - 2160;
	}
	assert_true(lo > 300 && hi > 300);
}

static void
test_before_expiry(void **state)
{
	(void)state;
	/* 5 s left: the 10 s floor would overshoot, so refresh before nextUpdate. */
	assert_int_equal(schedule_refresh_at(&dflt, T0, T0 + 60, T0 + 55, 0.5), T0 + 59);
	/* Expired: nothing to refresh. */
	assert_int_equal(schedule_refresh_at(&dflt, T0, T0 + 60, T0 + 60, 0.5), 0);
	assert_int_equal(schedule_backoff_at(&dflt, 3, T0 + 60, T0 + 61, 0.5), 0);
}

static void
test_backoff(void **state)
{
	time_t	prev = 0, at;
	unsigned f;

	(void)state;
	/* 10, 20, 40 ... s, drawn from [d/2, d), capped at 1 h. */
	for (f = 1; f <= 12; f++) {
		at = schedule_backoff_at(&dflt, f, T0 + 10 * DAY, T0, 0.0);
		assert_true(at - T0 >= 5);
		assert_true(at - T0 <= SCHEDULE_BACKOFF_CAP_S);
		assert_true(at >= prev);
		prev = at;
	}
	assert_int_equal(schedule_backoff_at(&dflt, 1, T0 + DAY, T0, 0.0), T0 + 5);
	assert_int_equal(schedule_backoff_at(&dflt, 2, T0 + DAY, T0, 0.0), T0 + 10);
	assert_int_equal(schedule_backoff_at(&dflt, 40, T0 + DAY, T0, 0.0),
	    T0 + SCHEDULE_BACKOFF_CAP_S / 2);
	/* Still before nextUpdate. */
	assert_int_equal(schedule_backoff_at(&dflt, 10, T0 + 100, T0, 0.9), T0 + 99);
}

static void
test_idle(void **state)
{
	(void)state;
	assert_false(schedule_is_idle(T0, 30 * DAY, T0 + 30 * DAY));
	assert_true(schedule_is_idle(T0, 30 * DAY, T0 + 30 * DAY + 1));
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_half_life),
		cmocka_unit_test(test_jitter_bounds),
		cmocka_unit_test(test_ceiling_and_floor),
		cmocka_unit_test(test_jitter_at_ceiling),
		cmocka_unit_test(test_before_expiry),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_idle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
