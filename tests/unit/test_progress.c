/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for tools/progress.c: the line a meter shows, and a meter that is off. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tools/progress.h"

static const char *
fmt(const char *noun, enum progress_unit u, uint64_t done, uint64_t total,
    uint64_t ms)
{
	static char	 buf[PROGRESS_LINE_BYTES];

	progress_format(buf, sizeof(buf), "verify", noun, u, done, total, ms);
	return buf;
}

/* Counted items: the noun, done, total, ms elapsed, and the line they make. */
static const struct {
	const char	*noun;
	uint64_t	 done, total, ms;
	const char	*want;
} items[] = {
	/* nothing done yet: no rate, no time left */
	{ "entries", 0, 5000, 0, "verify: 0/5000 entries (0%)" },
	/* 1200 in 4 s: 300/s; 3800 left at that rate: 12.7 s */
	{ "entries", 1200, 5000, 4000,
	    "verify: 1200/5000 entries (24%), 300/s, 13s left" },
	/* slow: one decimal; minutes and hours */
	{ "CertIDs", 3, 27000, 2000,
	    "verify: 3/27000 CertIDs (0%), 1.5/s, 4h59m left" },
	{ "CertIDs", 100, 1000, 10000,
	    "verify: 100/1000 CertIDs (10%), 10/s, 1m30s left" },
	/* done: no time left */
	{ "entries", 10, 10, 1000, "verify: 10/10 entries (100%), 10/s" },
	/* more done than the total said: the total follows */
	{ "entries", 12, 10, 1000, "verify: 12/12 entries (100%), 12/s" },
};

static void
test_items(void **state)
{
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(items) / sizeof(items[0]); i++)
		assert_string_equal(fmt(items[i].noun, PROGRESS_ITEMS,
		    items[i].done, items[i].total, items[i].ms), items[i].want);
}

static void
test_unknown_total(void **state)
{
	(void)state;
	assert_string_equal(fmt("entries", PROGRESS_ITEMS, 40, 0, 2000),
	    "verify: 40 entries, 20/s");
	assert_string_equal(fmt(NULL, PROGRESS_BYTES, 3 << 20, 0, 1000),
	    "verify: 3.0 MiB, 3.0 MiB/s");
}

static void
test_bytes(void **state)
{
	(void)state;
	assert_string_equal(fmt(NULL, PROGRESS_BYTES, 512, 1 << 20, 0),
	    "verify: 512 B/1.0 MiB (0%)");
	assert_string_equal(fmt(NULL, PROGRESS_BYTES, 256u << 20, 1u << 30,
	    2000), "verify: 256.0 MiB/1.0 GiB (25%), 128.0 MiB/s, 6s left");
}

static void
test_truncated(void **state)
{
	char	buf[12];
	size_t	n;

	(void)state;
	n = progress_format(buf, sizeof(buf), "verify", "entries",
	    PROGRESS_ITEMS, 1200, 5000, 4000);
	assert_int_equal(n, sizeof(buf) - 1);
	assert_string_equal(buf, "verify: 120");
}

/* A meter started quiet (or off a terminal) is off: its calls do nothing. */
static void
test_off(void **state)
{
	struct progress	p;

	(void)state;
	progress_start(&p, "fetch", "CertIDs", PROGRESS_ITEMS, 9, 1);
	assert_int_equal(p.on, 0);
	progress_step(&p, 3);
	assert_int_equal(p.done, 0);
	assert_int_equal(p.shown, 0);
	progress_end(&p);
	progress_hide();
	memset(&p, 0, sizeof(p));
	progress_end(&p);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_items),
		cmocka_unit_test(test_unknown_total),
		cmocka_unit_test(test_bytes),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_off),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
