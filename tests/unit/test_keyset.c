/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for attest/keyset.c: digests of length-prefixed pieces, members found again with their numbers across growth, room reserved. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "attest/keyset.h"

/* The digest of "key N". */
static void
md_of(size_t n, uint8_t md[KEYSET_MD_BYTES])
{
	char		 buf[32];
	const void	*part[] = { "key", buf };
	size_t		 len[] = { 3, 0 };

	len[1] = (size_t)snprintf(buf, sizeof(buf), "%zu", n);
	assert_int_equal(keyset_md(md, part, len, 2), 0);
}

static void
test_pieces(void **state)
{
	uint8_t		 a[KEYSET_MD_BYTES], b[KEYSET_MD_BYTES];
	const void	*pa[] = { "ab", "c" }, *pb[] = { "a", "bc" };
	size_t		 la[] = { 2, 1 }, lb[] = { 1, 2 };

	(void)state;
	assert_int_equal(keyset_md(a, pa, la, 2), 0);
	assert_int_equal(keyset_md(b, pb, lb, 2), 0);
	assert_memory_not_equal(a, b, sizeof(a));	/* the lengths count */
	assert_int_equal(keyset_md(b, pa, la, 2), 0);
	assert_memory_equal(a, b, sizeof(a));
}

static void
test_members(void **state)
{
	struct keyset	s;
	uint8_t		md[KEYSET_MD_BYTES];
	size_t		i, n = 5 * KEYSET_FIRST_SLOTS, v;

	(void)state;
	memset(&s, 0, sizeof(s));
	md_of(0, md);
	assert_int_equal(keyset_get(&s, md, &v), 0);	/* empty */
	for (i = 0; i < n; i++) {
		md_of(i, md);
		assert_int_equal(keyset_put(&s, md, 3 * i, NULL), 1);
	}
	assert_int_equal(keyset_count(&s), n);
	for (i = 0; i < n; i++) {
		md_of(i, md);
		assert_int_equal(keyset_get(&s, md, &v), 1);
		assert_int_equal(v, 3 * i);
		/* again: there, with the number it came with; unchanged */
		v = 0;
		assert_int_equal(keyset_put(&s, md, 7, &v), 0);
		assert_int_equal(v, 3 * i);
	}
	md_of(n, md);
	assert_int_equal(keyset_get(&s, md, NULL), 0);
	assert_int_equal(keyset_count(&s), n);
	keyset_free(&s);
	assert_int_equal(keyset_count(&s), 0);
	keyset_free(&s);
}

static void
test_reserve(void **state)
{
	struct keyset	 s;
	uint8_t		 md[KEYSET_MD_BYTES];
	size_t		 i, slots;

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(keyset_reserve(&s, 10000), 0);
	slots = s.nslots;
	assert_true(slots * 3 / 4 >= 10000);
	for (i = 0; i < 10000; i++) {
		md_of(i, md);
		assert_int_equal(keyset_put(&s, md, i, NULL), 1);
	}
	assert_int_equal(s.nslots, slots);	/* no growth after reserve */
	assert_int_equal(keyset_reserve(&s, 0), 0);
	keyset_free(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_members),
		cmocka_unit_test(test_reserve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
