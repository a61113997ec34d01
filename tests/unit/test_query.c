/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for entry/query.c: the query grammar the PCCS and KDS routes read (evhttp's, with repeats refused). */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "entry/query.h"

static void
test_pairs_in_order(void **state)
{
	struct query	q;

	(void)state;
	assert_int_equal(query_parse("fmspc=00906ED50000&update=early", &q),
	    QUERY_OK);
	assert_int_equal(q.n, 2);
	assert_string_equal(q.p[0].name, "fmspc");
	assert_string_equal(q.p[1].value, "early");
	assert_string_equal(query_get(&q, "update"), "early");
	assert_null(query_get(&q, "Update"));	/* names are exact */
	query_free(&q);
}

static void
test_empty(void **state)
{
	struct query	q;

	(void)state;
	assert_int_equal(query_parse(NULL, &q), QUERY_OK);
	assert_int_equal(q.n, 0);
	query_free(&q);
	assert_int_equal(query_parse("", &q), QUERY_OK);
	assert_int_equal(q.n, 0);
	query_free(&q);
	/* A trailing '&' ends the query, as evhttp read it. */
	assert_int_equal(query_parse("ca=platform&", &q), QUERY_OK);
	assert_int_equal(q.n, 1);
	query_free(&q);
	/* An empty value is a value. */
	assert_int_equal(query_parse("qeid=", &q), QUERY_OK);
	assert_string_equal(query_get(&q, "qeid"), "");
	query_free(&q);
}

static void
test_percent_decoding(void **state)
{
	struct query	q;

	(void)state;
	assert_int_equal(query_parse("uri=https%3A%2F%2Fx%2Fa%3Fca%3Dplatform&"
	    "p=a+b&bad=%zz%4&lone=%", &q), QUERY_OK);
	assert_string_equal(query_get(&q, "uri"), "https://x/a?ca=platform");
	assert_string_equal(query_get(&q, "p"), "a b");
	/* Not an escape: kept as sent. */
	assert_string_equal(query_get(&q, "bad"), "%zz%4");
	assert_string_equal(query_get(&q, "lone"), "%");
	query_free(&q);
	/* Names are not decoded: "fm%73pc" is not fmspc. */
	assert_int_equal(query_parse("fm%73pc=1", &q), QUERY_OK);
	assert_null(query_get(&q, "fmspc"));
	query_free(&q);
}

static void
test_syntax_errors(void **state)
{
	static const char *const bad[] = { "a", "a=1&b", "=1", "&a=1", "a=1&&b=2",
	    "a=1&=2", NULL };
	struct query	q;
	size_t		i;

	(void)state;
	for (i = 0; bad[i] != NULL; i++) {
		assert_int_equal(query_parse(bad[i], &q), QUERY_ERR_SYNTAX);
		query_free(&q);
	}
}

static void
test_repeats_refused(void **state)
{
	struct query	q;

	(void)state;
	assert_int_equal(query_parse("ca=processor&ca=platform", &q),
	    QUERY_ERR_REPEATED);
	assert_string_equal(q.bad, "ca");
	query_free(&q);
	/* Case differs: two names (and the unknown one is refused by the kind). */
	assert_int_equal(query_parse("ca=processor&CA=platform", &q), QUERY_OK);
	query_free(&q);
}

static void
test_limits(void **state)
{
	static const char *const allowed[] = { "a", "b", NULL };
	struct query	q;
	char		s[QUERY_MAX_BYTES + 2];
	size_t		i, n = 0;

	(void)state;
	for (i = 0; i <= QUERY_MAX_PARAMS; i++)
		n += (size_t)snprintf(s + n, sizeof(s) - n, "%sp%zu=1", i ? "&" : "", i);
	assert_int_equal(query_parse(s, &q), QUERY_ERR_TOO_MANY);
	query_free(&q);
	memset(s, 'a', sizeof(s) - 1);
	s[sizeof(s) - 1] = '\0';
	s[1] = '=';
	assert_int_equal(query_parse(s, &q), QUERY_ERR_TOO_LONG);
	query_free(&q);
	assert_int_equal(query_parse("a=1&c=2&b=3", &q), QUERY_OK);
	assert_string_equal(query_unknown(&q, allowed), "c");
	query_free(&q);
	assert_int_equal(query_parse("b=1&a=2", &q), QUERY_OK);
	assert_null(query_unknown(&q, allowed));
	query_free(&q);
	query_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pairs_in_order),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_percent_decoding),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_repeats_refused),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
