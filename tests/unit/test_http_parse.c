/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/http_parse.c: the Connection field's tokens decide keep-alive. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/http.h"
#include "proxy/http_parse.h"

/* Parse a whole head and return http_head_keepalive, or -1 if it did not parse. */
static int
keepalive_of(const char *head)
{
	static char		copy[HTTP_MAX_HEADER_BYTES + 1];
	struct http_head	h;

	memset(&h, 0, sizeof(h));
	if (http_parse_head(head, strlen(head), copy, &h) != 1)
		return -1;
	return http_head_keepalive(&h);
}

static void
test_list_has(void **state)
{
	(void)state;
	assert_int_equal(http_list_has("close", "close"), 1);
	assert_int_equal(http_list_has("Close", "close"), 1);
	assert_int_equal(http_list_has("keep-alive, close", "close"), 1);
	assert_int_equal(http_list_has("keep-alive,close", "close"), 1);
	assert_int_equal(http_list_has(" ,\tclose\t, ", "close"), 1);
	assert_int_equal(http_list_has("TE, CLOSE", "close"), 1);
	assert_int_equal(http_list_has("closed", "close"), 0);
	assert_int_equal(http_list_has("enclose", "close"), 0);
	assert_int_equal(http_list_has("close-ish, x", "close"), 0);
	assert_int_equal(http_list_has("", "close"), 0);
	assert_int_equal(http_list_has(",,", "close"), 0);
	assert_int_equal(http_list_has("Keep-Alive", "keep-alive"), 1);
}

static void
test_keepalive(void **state)
{
	(void)state;
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"), 1);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.1\r\nHost: a\r\n"
	    "Connection: keep-alive, close\r\n\r\n"), 0);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.1\r\nHost: a\r\n"
	    "Connection: Close\r\n\r\n"), 0);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.1\r\nHost: a\r\n"
	    "Connection: TE\r\nConnection: close\r\n\r\n"), 0);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.1\r\nHost: a\r\n"
	    "Connection: upgrade\r\n\r\n"), 1);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.0\r\n\r\n"), 0);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.0\r\n"
	    "Connection: keep-alive\r\n\r\n"), 1);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.0\r\n"
	    "Connection: foo, Keep-Alive\r\n\r\n"), 1);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.0\r\n"
	    "Connection: keep-alive, close\r\n\r\n"), 0);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.0\r\n"
	    "Connection: keep-alives\r\n\r\n"), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_has),
		cmocka_unit_test(test_keepalive),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
