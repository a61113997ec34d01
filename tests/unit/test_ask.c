/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for cache/ask.c: staplectl refresh's ask written and taken back, files that are not asks refused, result lines formatted and parsed. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/ask.h"
#include "entry/kinds.h"

#include "store_fixture.h"

#define PID	4242

static void
write_file(const char *path, const char *text)
{
	FILE	*f;

	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* Every entry, a kind, and keys of any or one kind: back as written; the file is gone. */
static void
test_ask_roundtrip(void **state)
{
	struct store_fixture	*sf = *state;
	struct cache_ask_key	 keys[2];
	struct cache_ask	 ask = { 0, 0, keys, 2 }, got;
	struct cache_ask	 all = { 1, 0, NULL, 0 }, kind = { 0, CACHE_KIND_PCCS,
				    NULL, 0 };
	char			 path[512];

	memset(keys, 0, sizeof(keys));
	keys[0].klen = store_key(keys[0].key, 1);
	keys[1].kind = CACHE_KIND_RIM;
	keys[1].klen = CACHE_KEY_MAX_BYTES;
	memset(keys[1].key, 0xa5, CACHE_KEY_MAX_BYTES);
	assert_int_equal(cache_ask_path(path, sizeof(path), sf->tmp, PID,
	    CACHE_ASK_SUFFIX), 0);
	assert_int_equal(cache_ask_put(sf->tmp, PID, &ask, store_kind_name), 0);
	assert_int_equal(cache_ask_take(path, &got, store_kind_name), 0);
	assert_int_equal(access(path, F_OK), -1);
	assert_false(got.all);
	assert_int_equal(got.kind, 0);
	assert_int_equal(got.nkeys, 2);
	assert_int_equal(got.keys[0].kind, 0);
	assert_int_equal(got.keys[0].klen, keys[0].klen);
	assert_memory_equal(got.keys[0].key, keys[0].key, keys[0].klen);
	assert_int_equal(got.keys[1].kind, CACHE_KIND_RIM);
	assert_int_equal(got.keys[1].klen, CACHE_KEY_MAX_BYTES);
	assert_memory_equal(got.keys[1].key, keys[1].key, CACHE_KEY_MAX_BYTES);
	cache_ask_free(&got);
	assert_int_equal(cache_ask_put(sf->tmp, PID, &all, store_kind_name), 0);
	assert_int_equal(cache_ask_take(path, &got, store_kind_name), 0);
	assert_true(got.all);
	cache_ask_free(&got);
	assert_int_equal(cache_ask_put(sf->tmp, PID, &kind, store_kind_name), 0);
	assert_int_equal(cache_ask_take(path, &got, store_kind_name), 0);
	assert_int_equal(got.kind, CACHE_KIND_PCCS);
	cache_ask_free(&got);
}

/* Not an ask: refused (EINVAL) and removed; none there: ENOENT. */
static void
test_ask_refused(void **state)
{
	static const char *const bad[] = {
		"",				/* asks for nothing */
		"all\nsomething else\n",
		"kind nosuchkind\n",
		"kind -\n",
		"key ocsp 0g\n",
		"key ocsp abc\n",		/* odd digits */
		"key ocsp\n",
		"key bogus 00\n",
	};
	struct store_fixture	*sf = *state;
	struct cache_ask	 got;
	char			 path[512];
	size_t			 i;

	assert_int_equal(cache_ask_path(path, sizeof(path), sf->tmp, PID,
	    CACHE_ASK_SUFFIX), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(path, bad[i]);
		errno = 0;
		if (cache_ask_take(path, &got, store_kind_name) != -1 || errno != EINVAL)
			fail_msg("taken: \"%s\"", bad[i]);
		assert_int_equal(access(path, F_OK), -1);
	}
	assert_int_equal(cache_ask_take(path, &got, store_kind_name), -1);
	assert_int_equal(errno, ENOENT);
}

/* The names the daemon takes, and only those. */
static void
test_ask_pid(void **state)
{
	(void)state;
	assert_int_equal(cache_ask_pid("stapled.refresh-4242.ask"), 4242);
	assert_int_equal(cache_ask_pid("stapled.refresh-4242.out"), 0);
	assert_int_equal(cache_ask_pid("stapled.refresh-4242.tmp"), 0);
	assert_int_equal(cache_ask_pid("stapled.refresh-0.ask"), 0);
	assert_int_equal(cache_ask_pid("stapled.refresh--1.ask"), 0);
	assert_int_equal(cache_ask_pid("stapled.refresh-.ask"), 0);
	assert_int_equal(cache_ask_pid("stapled.reload"), 0);
	assert_int_equal(cache_ask_pid("stapled.refresh-99999999999.ask"), 0);
}

static void
roundtrip(const struct cache_ask_line *l, struct cache_ask_line *got)
{
	char	buf[CACHE_ASK_LINE_BYTES];
	size_t	n = cache_ask_line_fmt(l, buf, store_kind_name);

	assert_true(n > 0 && n < CACHE_ASK_LINE_BYTES);
	assert_int_equal(buf[n - 1], '\n');
	assert_null(memchr(buf, '\n', n - 1));	/* one line */
	buf[n - 1] = '\0';
	if (cache_ask_line_parse(buf, got, store_kind_name) == -1)
		fail_msg("not parsed back: %s", buf);
}

/* Each result line parses back to what was formatted; line breaks never split one. */
static void
test_lines(void **state)
{
	struct cache_ask_line	l, got;

	(void)state;
	memset(&l, 0, sizeof(l));
	l.what = CACHE_ASK_RENEWED;
	l.kind = CACHE_KIND_OCSP;
	l.klen = store_key(l.key, 7);
	l.was = 1700000000;
	l.this_update = 1700003600;
	l.next_update = 1700090000;
	snprintf(l.source, sizeof(l.source), "nvidia primary");
	roundtrip(&l, &got);
	assert_int_equal(got.what, CACHE_ASK_RENEWED);
	assert_int_equal(got.kind, CACHE_KIND_OCSP);
	assert_int_equal(got.klen, l.klen);
	assert_memory_equal(got.key, l.key, l.klen);
	assert_int_equal(got.was, l.was);
	assert_int_equal(got.this_update, l.this_update);
	assert_int_equal(got.next_update, l.next_update);
	assert_string_equal(got.source, "nvidia primary");
	l.what = CACHE_ASK_FAILED;
	l.kind = 0;
	snprintf(l.why, sizeof(l.why), "every upstream failed:\ngood: connect");
	roundtrip(&l, &got);
	assert_int_equal(got.what, CACHE_ASK_FAILED);
	assert_int_equal(got.kind, 0);
	assert_string_equal(got.why, "every upstream failed: good: connect");
	/* the longest: a key of CACHE_KEY_MAX_BYTES, a cause at its bound */
	memset(l.why, 'w', sizeof(l.why) - 1);
	l.why[sizeof(l.why) - 1] = '\0';
	memset(l.key, 0xff, CACHE_KEY_MAX_BYTES);
	l.klen = CACHE_KEY_MAX_BYTES;
	roundtrip(&l, &got);
	assert_int_equal(got.klen, CACHE_KEY_MAX_BYTES);
	assert_int_equal(strlen(got.why), sizeof(l.why) - 1);
	memset(&l, 0, sizeof(l));
	l.what = CACHE_ASK_DONE;
	l.renewed = 1000000;
	l.unchanged = 2;
	l.failed = 3;
	l.skipped = 4;
	roundtrip(&l, &got);
	assert_int_equal(got.what, CACHE_ASK_DONE);
	assert_int_equal(got.renewed, 1000000);
	assert_int_equal(got.skipped, 4);
	l.what = CACHE_ASK_STOPPED;
	snprintf(l.why, sizeof(l.why), "stapled is stopping");
	roundtrip(&l, &got);
	assert_int_equal(got.what, CACHE_ASK_STOPPED);
	assert_string_equal(got.why, "stapled is stopping");
	assert_int_equal(cache_ask_line_parse("renewed ocsp 00", &got, store_kind_name), -1);
	assert_int_equal(cache_ask_line_parse("bogus", &got, store_kind_name), -1);
	assert_int_equal(cache_ask_line_parse("done 1 2", &got, store_kind_name), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ask_roundtrip, store_setup,
		    store_teardown),
		cmocka_unit_test_setup_teardown(test_ask_refused, store_setup,
		    store_teardown),
		cmocka_unit_test(test_ask_pid),
		cmocka_unit_test(test_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
