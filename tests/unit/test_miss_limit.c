/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/miss_limit.c: the token bucket, clients by prefix, the bounded table, X-Forwarded-For hops and trusted ranges. */
#include <sys/socket.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/miss_limit.h"

static struct miss_addr
v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	struct miss_addr	m;
	uint8_t			ip[4] = { a, b, c, d };

	miss_addr_set(&m, AF_INET, ip, sizeof(ip));
	return m;
}

/* 2/s: a burst of 4, then one every 500 ms. */
static void
test_bucket(void **state)
{
	struct miss_limit	*m;
	struct miss_addr	 a = v4(192, 0, 2, 1), b = v4(192, 0, 2, 2);
	int			 i;

	(void)state;
	assert_null(miss_limit_new(0, 32, 128));
	assert_int_equal(miss_limit_take(NULL, &a, 0), 1);
	assert_non_null(m = miss_limit_new(2, 32, 128));
	for (i = 0; i < 2 * CONFIG_MISS_BURST_S; i++)
		assert_int_equal(miss_limit_take(m, &a, 1000), 1);
	assert_int_equal(miss_limit_take(m, &a, 1000), 0);
	assert_int_equal(miss_limit_take(m, &a, 1499), 0);
	/* another client is not affected */
	assert_int_equal(miss_limit_take(m, &b, 1499), 1);
	assert_int_equal(miss_limit_take(m, &a, 1500), 1);
	assert_int_equal(miss_limit_take(m, &a, 1500), 0);
	/* a long pause refills to the burst, no more */
	for (i = 0; i < 2 * CONFIG_MISS_BURST_S; i++)
		assert_int_equal(miss_limit_take(m, &a, 100000), 1);
	assert_int_equal(miss_limit_take(m, &a, 100000), 0);
	/* a clock that goes back gives nothing */
	assert_int_equal(miss_limit_take(m, &a, 50000), 0);
	miss_limit_free(m);

	/* below 1/s the burst is still one miss */
	assert_non_null(m = miss_limit_new(0.1, 32, 128));
	assert_int_equal(miss_limit_take(m, &a, 0), 1);
	assert_int_equal(miss_limit_take(m, &a, 9999), 0);
	assert_int_equal(miss_limit_take(m, &a, 10000), 1);
	miss_limit_free(m);
}

/* The table is bounded: many addresses, the memory stays the same, none is refused at first. */
static void
test_table_bounded(void **state)
{
	struct miss_limit	*m;
	struct miss_addr	 a;
	unsigned		 i;

	(void)state;
	assert_non_null(m = miss_limit_new(1, 32, 128));
	for (i = 0; i < 4 * MISS_LIMIT_SLOTS; i++) {
		a = v4(10, (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i);
		assert_int_equal(miss_limit_take(m, &a, (int64_t)i), 1);
	}
	/* the last one is remembered: its burst of 2 is used up after one more */
	assert_int_equal(miss_limit_take(m, &a, (int64_t)i), 1);
	assert_int_equal(miss_limit_take(m, &a, (int64_t)i), 0);
	miss_limit_free(m);
}

static struct miss_addr
v6(uint16_t w0, uint16_t w3, uint16_t w4, uint16_t w7)
{
	struct miss_addr	m;
	uint8_t			ip[16] = { 0 };

	ip[0] = (uint8_t)(w0 >> 8);
	ip[1] = (uint8_t)w0;
	ip[6] = (uint8_t)(w3 >> 8);
	ip[7] = (uint8_t)w3;
	ip[8] = (uint8_t)(w4 >> 8);
	ip[9] = (uint8_t)w4;
	ip[14] = (uint8_t)(w7 >> 8);
	ip[15] = (uint8_t)w7;
	miss_addr_set(&m, AF_INET6, ip, sizeof(ip));
	return m;
}

/*
 * One client is a prefix: every address of an IPv6 /64 takes from one
 * bucket (one host's addresses), another /64 has its own; IPv4 by its
 * prefix too, and a dual-stack listener's IPv4-mapped peer as IPv4.
 */
static void
test_prefix(void **state)
{
	struct miss_limit	*m;
	struct miss_addr	 a, c;
	uint8_t			 mapped[16] = { [10] = 0xff, [11] = 0xff,
				    [12] = 192, [13] = 0, [14] = 2, [15] = 77 };
	unsigned		 i;

	(void)state;
	/* 1/s, a burst of 2, per /64: 1000 addresses of one /64 get 2 */
	assert_non_null(m = miss_limit_new(1, 24, 64));
	for (i = 0; i < 1000; i++) {
		a = v6(0x2001, 0x0001, (uint16_t)i, (uint16_t)(i * 7));
		assert_int_equal(miss_limit_take(m, &a, 0), i < 2);
	}
	/* the next /64 is another client */
	a = v6(0x2001, 0x0002, 0, 1);
	assert_int_equal(miss_limit_take(m, &a, 0), 1);
	/* IPv4 by /24: 192.0.2.1 and 192.0.2.200 share, 192.0.3.1 does not */
	a = v4(192, 0, 2, 1);
	assert_int_equal(miss_limit_take(m, &a, 0), 1);
	a = v4(192, 0, 2, 200);
	assert_int_equal(miss_limit_take(m, &a, 0), 1);
	assert_int_equal(miss_limit_take(m, &a, 0), 0);
	a = v4(192, 0, 3, 1);
	assert_int_equal(miss_limit_take(m, &a, 0), 1);
	/* ::ffff:192.0.2.77 is 192.0.2.77: in the /24 already spent */
	miss_addr_set(&a, AF_INET6, mapped, sizeof(mapped));
	assert_int_equal(miss_limit_take(m, &a, 0), 0);
	miss_limit_free(m);

	/* the client's identity: the bits past the prefix zeroed */
	a = v4(198, 51, 100, 255);
	miss_addr_client(&c, &a, 23, 64);
	assert_int_equal(c.len, 5);
	assert_int_equal(c.b[1], 198);
	assert_int_equal(c.b[2], 51);
	assert_int_equal(c.b[3], 100);
	assert_int_equal(c.b[4], 0);
	miss_addr_client(&c, &a, 22, 64);
	assert_int_equal(c.b[3], 100 & 0xfc);
	miss_addr_client(&c, &a, 0, 64);
	assert_int_equal(c.b[1], 0);
	miss_addr_client(&c, &a, 32, 64);
	assert_memory_equal(&c, &a, sizeof(a));
	a = v6(0x2001, 0x00ff, 0xabcd, 1);
	miss_addr_client(&c, &a, 32, 56);
	assert_int_equal(c.b[1 + 6], 0);
	assert_int_equal(c.b[1 + 7], 0);
	miss_addr_client(&c, &a, 32, 128);
	assert_memory_equal(&c, &a, sizeof(a));
	miss_addr_set(&a, AF_INET6, mapped, sizeof(mapped));
	miss_addr_client(&c, &a, 32, 64);
	a = v4(192, 0, 2, 77);
	assert_memory_equal(&c, &a, sizeof(a));
}

/* The bucket on its own: a service's cap on new entries. */
static void
test_rate(void **state)
{
	struct miss_rate	r;
	int			i;

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_true(miss_rate_burst(100) == 100 * CONFIG_MISS_BURST_S);
	assert_true(miss_rate_burst(0.1) == 1);
	/* a new bucket is full: 200, then 100 a second */
	for (i = 0; i < 200; i++)
		assert_int_equal(miss_rate_take(&r, 100, 200, 5000), 1);
	assert_int_equal(miss_rate_take(&r, 100, 200, 5000), 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(miss_rate_take(&r, 100, 200, 5100), 1);
	assert_int_equal(miss_rate_take(&r, 100, 200, 5100), 0);
}

/* The client behind trusted proxies: xff walked from the right past trusted[]. */
static int
client_of(const char *xff, const struct config_cidr *trusted, size_t n,
    struct miss_addr *a)
{
	*a = v4(127, 0, 0, 1);		/* the peer, a trusted proxy */
	return miss_xff_client(xff, trusted, n, a);
}

static void
test_xff(void **state)
{
	struct miss_addr	a, want, peer = v4(127, 0, 0, 1);
	uint8_t			ip6[16] = { 0x20, 0x01, 0x0d, 0xb8 };

	(void)state;
	/* No trusted hop: the last one is the client. */
	want = v4(192, 0, 2, 9);
	assert_int_equal(client_of("192.0.2.9", NULL, 0, &a), 0);
	assert_memory_equal(&a, &want, sizeof(a));
	assert_int_equal(client_of("203.0.113.5, 198.51.100.1 ,  192.0.2.9 ", NULL, 0,
	    &a), 0);
	assert_memory_equal(&a, &want, sizeof(a));
	/* Two lines joined (http_parse.h), and empty elements. */
	assert_int_equal(client_of("203.0.113.5, 192.0.2.9", NULL, 0, &a), 0);
	assert_memory_equal(&a, &want, sizeof(a));
	assert_int_equal(client_of("192.0.2.9, ", NULL, 0, &a), 0);
	assert_memory_equal(&a, &want, sizeof(a));
	assert_int_equal(client_of(",, 192.0.2.9,,", NULL, 0, &a), 0);
	assert_memory_equal(&a, &want, sizeof(a));
	ip6[15] = 1;
	miss_addr_set(&want, AF_INET6, ip6, sizeof(ip6));
	assert_int_equal(client_of("192.0.2.1,2001:db8::1", NULL, 0, &a), 0);
	assert_memory_equal(&a, &want, sizeof(a));
	/* No usable last hop: the peer stays the client. */
	assert_int_equal(client_of(NULL, NULL, 0, &a), -1);
	assert_memory_equal(&a, &peer, sizeof(a));
	assert_int_equal(client_of("", NULL, 0, &a), -1);
	assert_int_equal(client_of(" , ", NULL, 0, &a), -1);
	assert_int_equal(client_of("unknown", NULL, 0, &a), -1);
	assert_int_equal(client_of("192.0.2.1, 192.0.2.1:8080", NULL, 0, &a), -1);
	assert_int_equal(client_of("[2001:db8::1]", NULL, 0, &a), -1);
	assert_memory_equal(&a, &peer, sizeof(a));
}

/*
 * With several trusted proxies, the walk goes back past every trusted hop:
 * the header, whether the two ranges are trusted, the client found.
 */
static const struct {
	const char	*xff;
	int		 trusted;
	uint8_t		 want[4];
} hops[] = {
	{ "203.0.113.5, 192.0.2.9, 10.1.2.3, 2001:db8:1::7, 10.9.9.9", 1,
	    { 192, 0, 2, 9 } },
	/* Without the ranges, the last hop (a proxy) would be the client. */
	{ "192.0.2.9, 10.9.9.9", 0, { 10, 9, 9, 9 } },
	/* Every hop trusted: the leftmost. */
	{ "10.0.0.1, 10.0.0.2", 1, { 10, 0, 0, 1 } },
	/* A hop that is no address ends the walk at the last trusted address. */
	{ "192.0.2.9, unknown, 10.0.0.2", 1, { 10, 0, 0, 2 } },
	/* What is left of the first untrusted hop is the client's to forge: ignored. */
	{ "10.0.0.5, 192.0.2.9, 10.0.0.2", 1, { 192, 0, 2, 9 } },
};

static void
test_xff_trusted(void **state)
{
	struct config_cidr	t[2];
	struct miss_addr	a, want;
	size_t			i;

	(void)state;
	assert_int_equal(config_parse_cidr("10.0.0.0/8", &t[0]), 0);
	assert_int_equal(config_parse_cidr("2001:db8:1::/48", &t[1]), 0);
	for (i = 0; i < sizeof(hops) / sizeof(hops[0]); i++) {
		want = v4(hops[i].want[0], hops[i].want[1], hops[i].want[2],
		    hops[i].want[3]);
		assert_int_equal(client_of(hops[i].xff,
		    hops[i].trusted ? t : NULL, hops[i].trusted ? 2 : 0, &a), 0);
		assert_memory_equal(&a, &want, sizeof(a));
	}
}

static void
test_cidr(void **state)
{
	struct config_cidr	c;
	struct miss_addr	a;
	uint8_t			ip6[16] = { 0xfd, 0x12 };

	(void)state;
	assert_int_equal(config_parse_cidr("10.1.0.0/15", &c), 0);
	a = v4(10, 1, 255, 255);
	assert_int_equal(miss_cidr_has(&c, &a), 1);
	a = v4(10, 0, 0, 1);
	assert_int_equal(miss_cidr_has(&c, &a), 1);
	a = v4(10, 2, 0, 1);
	assert_int_equal(miss_cidr_has(&c, &a), 0);
	assert_int_equal(config_parse_cidr("127.0.0.1", &c), 0);
	a = v4(127, 0, 0, 1);
	assert_int_equal(miss_cidr_has(&c, &a), 1);
	a = v4(127, 0, 0, 2);
	assert_int_equal(miss_cidr_has(&c, &a), 0);
	assert_int_equal(config_parse_cidr("0.0.0.0/0", &c), 0);
	assert_int_equal(miss_cidr_has(&c, &a), 1);
	assert_int_equal(config_parse_cidr("fd00::/8", &c), 0);
	assert_int_equal(miss_cidr_has(&c, &a), 0);	/* other family */
	miss_addr_set(&a, AF_INET6, ip6, sizeof(ip6));
	assert_int_equal(miss_cidr_has(&c, &a), 1);
	ip6[0] = 0xfe;
	miss_addr_set(&a, AF_INET6, ip6, sizeof(ip6));
	assert_int_equal(miss_cidr_has(&c, &a), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket),
		cmocka_unit_test(test_table_bounded),
		cmocka_unit_test(test_prefix),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_xff),
		cmocka_unit_test(test_xff_trusted),
		cmocka_unit_test(test_cidr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
