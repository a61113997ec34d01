/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for entry/kind.c: the one table of kinds, its names and sections. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "entry/kind.h"

/* Every kind has a name and a section, each found again by its lookup. */
static void
test_every_kind_named(void **state)
{
	int	k;

	(void)state;
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++) {
		assert_non_null(kind_name(k));
		assert_non_null(kind_table[k].section);
		assert_int_equal(kind_by_name(kind_name(k)), k);
		assert_int_equal(kind_by_section(kind_table[k].section), k);
		/* The message's list names each kind. */
		assert_non_null(strstr(KIND_NAMES, kind_name(k)));
	}
	assert_null(kind_name(0));
	assert_null(kind_name(CACHE_KIND_MAX));
	assert_null(kind_name(-1));
}

/* The configuration's section names are the file's, the store's names its own. */
static void
test_sections_and_names(void **state)
{
	(void)state;
	assert_string_equal(kind_table[CACHE_KIND_OCSP].section, "ocsp");
	assert_string_equal(kind_table[CACHE_KIND_RIM].section, "rim");
	assert_string_equal(kind_table[CACHE_KIND_PCCS].section, "pccs");
	assert_string_equal(kind_table[CACHE_KIND_KDS].section, "amd_kds");
	assert_string_equal(kind_name(CACHE_KIND_KDS), "kds");
	assert_int_equal(kind_by_section("amd_kds"), CACHE_KIND_KDS);
	assert_int_equal(kind_by_section("kds"), 0);
	assert_int_equal(kind_by_name("amd_kds"), 0);
	assert_int_equal(kind_by_name("unknown"), 0);
	assert_int_equal(kind_by_name(""), 0);
	assert_int_equal(kind_by_name(NULL), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_kind_named),
		cmocka_unit_test(test_sections_and_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
