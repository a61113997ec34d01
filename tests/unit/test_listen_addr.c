/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/http/listen_addr.c: HOST:PORT parsed, and which two listeners cannot both listen (the rule checked against Linux's bind). */
#include <sys/socket.h>

#include <netinet/in.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/http/listen_addr.h"

/* s parsed; v6only as given (the host's sysctl left out). */
static struct listen_addr
la(const char *s, int v6only)
{
	struct listen_addr	a;
	char			err[128];

	assert_int_equal(listen_addr_parse(s, &a, err, sizeof(err)), 0);
	a.v6only = v6only;
	return a;
}

static enum listen_overlap
ov(const char *s1, const char *s2)
{
	struct listen_addr	a = la(s1, 0), b = la(s2, 0);

	/* The rule is symmetric: the order of binding does not matter. */
	assert_int_equal(listen_addr_overlap(&a, &b), listen_addr_overlap(&b, &a));
	return listen_addr_overlap(&a, &b);
}

static void
test_parse(void **state)
{
	struct listen_addr	a;
	char			err[128];

	(void)state;
	assert_int_equal(listen_addr_parse("127.0.0.1:8090", &a, err,
	    sizeof(err)), 0);
	assert_int_equal(a.ss.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&a.ss)->sin_port), 8090);
	assert_int_equal(a.v6only, 0);
	assert_int_equal(listen_addr_parse("[::1]:8090", &a, err, sizeof(err)), 0);
	assert_int_equal(a.ss.ss_family, AF_INET6);
	assert_int_equal(listen_addr_parse("127.0.0.1", &a, err, sizeof(err)), -1);
	assert_string_equal(err, "expected HOST:PORT");
}

/* Each pair below as Linux's bind(2) with SO_REUSEADDR answered it. */
static void
test_overlap(void **state)
{
	(void)state;
	assert_int_equal(ov("127.0.0.1:80", "127.0.0.1:80"), LISTEN_SAME);
	assert_int_equal(ov("[::1]:80", "[::1]:80"), LISTEN_SAME);
	assert_int_equal(ov("127.0.0.1:80", "127.0.0.1:81"), LISTEN_APART);
	assert_int_equal(ov("127.0.0.1:80", "127.0.0.2:80"), LISTEN_APART);
	assert_int_equal(ov("0.0.0.0:80", "127.0.0.1:80"), LISTEN_WILDCARD);
	assert_int_equal(ov("0.0.0.0:80", "0.0.0.0:81"), LISTEN_APART);
	assert_int_equal(ov("[::]:80", "[::1]:80"), LISTEN_WILDCARD);
	assert_int_equal(ov("[::1]:80", "127.0.0.1:80"), LISTEN_APART);
	assert_int_equal(ov("[::1]:80", "0.0.0.0:80"), LISTEN_APART);
	/* IPv4-mapped addresses are IPv4's, ::ffff:0.0.0.0 its wildcard. */
	assert_int_equal(ov("[::ffff:127.0.0.1]:80", "127.0.0.1:80"), LISTEN_SAME);
	assert_int_equal(ov("[::ffff:127.0.0.1]:80", "0.0.0.0:80"),
	    LISTEN_WILDCARD);
	assert_int_equal(ov("[::ffff:0.0.0.0]:80", "127.0.0.1:80"),
	    LISTEN_WILDCARD);
	/* A dual-stack [::] takes IPv4 too. */
	assert_int_equal(ov("[::]:80", "0.0.0.0:80"), LISTEN_DUAL_STACK);
	assert_int_equal(ov("[::]:80", "127.0.0.1:80"), LISTEN_DUAL_STACK);
	assert_int_equal(ov("[::]:80", "[::ffff:127.0.0.1]:80"),
	    LISTEN_DUAL_STACK);
	assert_int_equal(ov("[::]:80", "0.0.0.0:81"), LISTEN_APART);
}

/* IPV6_V6ONLY: [::] beside IPv4 is fine, beside IPv6 not. */
static void
test_v6only(void **state)
{
	struct listen_addr	any6 = la("[::]:80", 1), any4 = la("0.0.0.0:80", 0);
	struct listen_addr	lo6 = la("[::1]:80", 1);

	(void)state;
	assert_int_equal(listen_addr_overlap(&any6, &any4), LISTEN_APART);
	assert_int_equal(listen_addr_overlap(&any4, &any6), LISTEN_APART);
	assert_int_equal(listen_addr_overlap(&any6, &lo6), LISTEN_WILDCARD);
}

/* A Unix socket (a passed one) overlaps nothing; one address is the same as itself only. */
static void
test_other(void **state)
{
	struct listen_addr	u, a = la("0.0.0.0:80", 0), b = la("127.0.0.1:80", 0);

	(void)state;
	memset(&u, 0, sizeof(u));
	u.ss.ss_family = AF_UNSPEC;
	assert_int_equal(listen_addr_overlap(&u, &a), LISTEN_APART);
	assert_int_equal(listen_addr_overlap(&u, &u), LISTEN_APART);
	assert_int_equal(listen_addr_same(&a, &a), 1);
	assert_int_equal(listen_addr_same(&a, &b), 0);
	assert_int_equal(listen_addr_same(&u, &u), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_v6only),
		cmocka_unit_test(test_other),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
