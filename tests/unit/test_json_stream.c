/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for attest/json_stream.c: values handed out one at a time, over memory and over a reader that gives one byte a read; what JSON refuses, refused with its line. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "attest/json_stream.h"

/* A reader over a string that gives at most `step` bytes a read. */
struct src {
	const char	*p;
	size_t		 left, step;
};

static size_t
src_read(void *arg, uint8_t *buf, size_t len)
{
	struct src	*s = arg;
	size_t		 n = len < s->step ? len : s->step;

	if (n > s->left)
		n = s->left;
	memcpy(buf, s->p, n);
	s->p += n;
	s->left -= n;
	return n;
}

/* A stream over text: in memory (step 0), or through the reader. */
static struct jstream *
open_text(const char *text, struct src *s, size_t step)
{
	if (step == 0)
		return jstream_mem((const uint8_t *)text, strlen(text));
	s->p = text;
	s->left = strlen(text);
	s->step = step;
	return jstream_reader(src_read, s);
}

static void
expect_json(json_t *v, const char *want)
{
	char	*got;

	assert_non_null(v);
	assert_non_null(got = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY));
	assert_string_equal(got, want);
	free(got);
	json_decref(v);
}

static const char	 doc[] =
    "{\n"
    "  \"a\": [1, {\"b\": \"x,]}\\\"\"}, \"s\\\"q\", [[]], true],\n"
    "  \"skip\": {\"deep\": [[[\"]\"]]], \"n\": -1.5e3},\n"
    "  \"c\": null\n"
    "}\n";

/* The whole walk of doc: every element of "a", "skip" passed over, "c". */
static void
walk(size_t step)
{
	static const char *const want[] = { "1", "{\"b\":\"x,]}\\\"\"}",
	    "\"s\\\"q\"", "[[]]", "true" };
	struct jstream	*js;
	struct src	 s;
	char		 name[JSTREAM_NAME_BYTES];
	size_t		 i;
	int		 first = 1, efirst;

	assert_non_null(js = open_text(doc, &s, step));
	assert_int_equal(jstream_expect(js, '{'), 0);
	assert_int_equal(jstream_member(js, &first, name), 1);
	assert_string_equal(name, "a");
	assert_int_equal(jstream_expect(js, '['), 0);
	efirst = 1;
	for (i = 0; jstream_element(js, &efirst) == 1; i++) {
		assert_true(i < 5);
		expect_json(jstream_value(js, 1024, JSON_REJECT_DUPLICATES),
		    want[i]);
	}
	assert_int_equal(i, 5);
	assert_int_equal(jstream_member(js, &first, name), 1);
	assert_string_equal(name, "skip");
	assert_int_equal(jstream_skip(js), 0);
	assert_int_equal(jstream_member(js, &first, name), 1);
	assert_string_equal(name, "c");
	expect_json(jstream_value(js, 16, 0), "null");
	assert_int_equal(jstream_line(js), 4);
	assert_int_equal(jstream_member(js, &first, name), 0);
	assert_int_equal(jstream_end(js), 0);
	assert_string_equal(jstream_error(js), "");
	jstream_free(js);
}

static void
test_walk(void **state)
{
	(void)state;
	walk(0);		/* in memory */
	walk(1);		/* a byte a read: every value split */
	walk(7);
	walk(JSTREAM_CHUNK_BYTES);
}

/* text, read as one array of values, fails with an error that starts with want. */
static void
expect_array_error(const char *text, size_t max, const char *want)
{
	struct jstream	*js;
	struct src	 s;
	json_t		*v;
	size_t		 step;
	int		 first, r;

	for (step = 0; step <= 1; step++) {
		assert_non_null(js = open_text(text, &s, step));
		first = 1;
		r = jstream_expect(js, '[');
		while (r == 0 && (r = jstream_element(js, &first)) == 1) {
			if ((v = jstream_value(js, max, JSON_REJECT_DUPLICATES)) ==
			    NULL) {
				r = -1;
				break;
			}
			json_decref(v);
			r = 0;
		}
		if (r == 0)
			r = jstream_end(js);
		assert_int_equal(r, -1);
		if (strncmp(jstream_error(js), want, strlen(want)) != 0)
			fail_msg("%s: want \"%s...\", got \"%s\"", text, want,
			    jstream_error(js));
		/* the first error stays */
		assert_int_equal(jstream_peek(js), -1);
		assert_null(jstream_value(js, max, 0));
		jstream_free(js);
	}
}

static void
test_refused(void **state)
{
	(void)state;
	expect_array_error("[1,]", 64, "line 1: a value expected after ','");
	expect_array_error("[1 2]", 64, "line 1: ',' or ']' expected");
	expect_array_error("[1,\n2\n", 64, "line 3: the input ends inside an "
	    "array");
	expect_array_error("[\"abc", 64, "line 1: the input ends inside a "
	    "value");
	expect_array_error("[1] x", 64, "line 1: more after the end");
	expect_array_error("[\n{\"a\":1,\"a\":2}]", 64, "line 2: duplicate "
	    "object key");
	expect_array_error("[\n\n{\"a\":\n tru}]", 64, "line 4: ");
	expect_array_error("[\"0123456789\"]", 8, "line 1: a value larger "
	    "than 8 bytes");
	expect_array_error("[,1]", 64, "line 1: a value expected, ',' found");
	expect_array_error("", 64, "line 1: the input ends where '[' was "
	    "expected");
}

static void
test_names_and_scalars(void **state)
{
	struct jstream	*js;
	struct src	 s;
	char		 name[JSTREAM_NAME_BYTES], *text;
	size_t		 n = JSTREAM_NAME_BYTES + 10;
	int		 first = 1;

	(void)state;
	/* a number at the very end of the input, split by the reader */
	assert_non_null(js = open_text("  -12345 ", &s, 1));
	expect_json(jstream_value(js, 64, 0), "-12345");
	assert_int_equal(jstream_end(js), 0);
	jstream_free(js);
	assert_non_null(js = open_text("42", &s, 1));
	expect_json(jstream_value(js, 64, 0), "42");
	assert_int_equal(jstream_end(js), 0);
	jstream_free(js);
	/* a member name with escapes, and one too long */
	assert_non_null(js = open_text("{\"a\\u0062\\\"\": 1}", &s, 1));
	assert_int_equal(jstream_expect(js, '{'), 0);
	assert_int_equal(jstream_member(js, &first, name), 1);
	assert_string_equal(name, "ab\"");
	jstream_free(js);
	assert_non_null(text = malloc(n + 8));
	text[0] = '{';
	text[1] = '"';
	memset(text + 2, 'x', n);
	memcpy(text + 2 + n, "\":1}", 5);
	assert_non_null(js = open_text(text, &s, 0));
	first = 1;
	assert_int_equal(jstream_expect(js, '{'), 0);
	assert_int_equal(jstream_member(js, &first, name), -1);
	assert_non_null(strstr(jstream_error(js), "a member name longer than"));
	jstream_free(js);
	free(text);
}

/* A value passed over is never held: one far larger than the window is skipped by a reader. */
static void
test_skip_large(void **state)
{
	struct jstream	*js;
	struct src	 s;
	char		*text, name[JSTREAM_NAME_BYTES];
	size_t		 n = 8 * JSTREAM_CHUNK_BYTES, i;
	int		 first = 1;

	(void)state;
	assert_non_null(text = malloc(n + 64));
	strcpy(text, "{\"big\": [");
	for (i = strlen(text); i < n; i += 4)
		memcpy(text + i, "\"]\",", 4);
	strcpy(text + i, "0], \"z\": 7}");
	assert_non_null(js = open_text(text, &s, JSTREAM_CHUNK_BYTES));
	assert_int_equal(jstream_expect(js, '{'), 0);
	assert_int_equal(jstream_member(js, &first, name), 1);
	assert_int_equal(jstream_skip(js), 0);
	assert_int_equal(jstream_member(js, &first, name), 1);
	assert_string_equal(name, "z");
	expect_json(jstream_value(js, 8, 0), "7");
	assert_int_equal(jstream_member(js, &first, name), 0);
	assert_int_equal(jstream_end(js), 0);
	jstream_free(js);
	/* the same value asked for as a tree, with a cap under its size */
	assert_non_null(js = open_text(text + 8, &s, JSTREAM_CHUNK_BYTES));
	assert_null(jstream_value(js, 2 * JSTREAM_CHUNK_BYTES, 0));
	assert_non_null(strstr(jstream_error(js), "a value larger than"));
	jstream_free(js);
	free(text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_names_and_scalars),
		cmocka_unit_test(test_skip_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
