/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for attest/util.c: FNV-1a 32-bit against the published test vectors, and hex both ways. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "attest/util.h"

struct fnv_vec {
	const char	*in;
	uint32_t	 hash;
};

/* The FNV-1a 32-bit values from the algorithm's published test suite. */
static const struct fnv_vec fnv_vecs[] = {
	{ "", 0x811c9dc5u },
	{ "a", 0xe40c292cu },
	{ "b", 0xe70c2de5u },
	{ "c", 0xe60c2c52u },
	{ "foobar", 0xbf9cf968u },
};

static void
test_fnv1a32_vectors(void **state)
{
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(fnv_vecs) / sizeof(fnv_vecs[0]); i++)
		assert_int_equal(util_fnv1a32(fnv_vecs[i].in,
		    strlen(fnv_vecs[i].in)), fnv_vecs[i].hash);
}

/*
 * Bytes above 0x7f and NULs count as themselves: no sign extension, no C
 * string ((0x811c9dc5 ^ b) * 16777619 mod 2^32, worked by hand).
 */
static void
test_fnv1a32_binary(void **state)
{
	static const uint8_t	zero[1] = { 0x00 }, high[1] = { 0xff };

	(void)state;
	assert_int_equal(util_fnv1a32(zero, 1), 0x050c5d1fu);
	assert_int_equal(util_fnv1a32(high, 1), 0x7a0b824eu);
}

static void
test_hex_roundtrip(void **state)
{
	static const uint8_t	in[4] = { 0x00, 0x7f, 0xab, 0xff };
	uint8_t			out[4];
	char			hex[9];

	(void)state;
	util_hex(in, sizeof(in), hex);
	assert_string_equal(hex, "007fabff");
	assert_int_equal(util_unhex("007FABFF", 8, out, sizeof(out)), 0);
	assert_memory_equal(out, in, sizeof(in));
	assert_int_equal(util_unhex("007fabf", 7, out, sizeof(out)), -1);
	assert_int_equal(util_unhex("007fabfg", 8, out, sizeof(out)), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fnv1a32_vectors),
		cmocka_unit_test(test_fnv1a32_binary),
		cmocka_unit_test(test_hex_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
