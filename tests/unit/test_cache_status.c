/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/http/cache_status.c: the RFC 9211 value for each way an answer is served, its integers at their bounds, the header and the access log's note. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/http/cache_status.h"
#include "proxy/http/http.h"

/* ---- fakes of proxy/http/http.c: the header and the note recorded ------------- */

struct http_req {
	char	name[64];
	char	value[CACHE_STATUS_VALUE_BYTES];
	int	nheaders;
	char	note[HTTP_LOG_NOTE_BYTES];
};

void
http_resp_header_n(struct http_req *r, const char *name, size_t nlen,
    const char *value, size_t vlen)
{
	assert_true(nlen < sizeof(r->name) && vlen < sizeof(r->value));
	memcpy(r->name, name, nlen);
	r->name[nlen] = '\0';
	memcpy(r->value, value, vlen);
	r->value[vlen] = '\0';
	r->nheaders++;
}

void
http_req_set_log_note(struct http_req *r, const char *text, size_t len)
{
	assert_true(len < sizeof(r->note));
	memcpy(r->note, text, len);
	r->note[len] = '\0';
}

/* ---- the cases --------------------------------------------------------------- */

static void
want(const struct cache_status *cs, const char *value)
{
	char	buf[CACHE_STATUS_VALUE_BYTES];
	size_t	n;

	memset(buf, 'x', sizeof(buf));
	n = cache_status_value(cs, buf);
	assert_string_equal(buf, value);
	assert_int_equal(n, strlen(value));
}

/* RFC 9211's syntax: the member, then hit or fwd, fwd-status, stored, collapsed, ttl, detail. */
static void
test_values(void **state)
{
	struct cache_status	cs = { 0, 0, 0, NULL, NULL };

	(void)state;
	want(&cs, "stapled");
	cs.flags = CACHE_STATUS_HIT | CACHE_STATUS_TTL;
	cs.ttl_s = 3500;
	want(&cs, "stapled; hit; ttl=3500");
	cs.flags = CACHE_STATUS_FWD | CACHE_STATUS_STORED | CACHE_STATUS_TTL;
	cs.ttl_s = 86000;
	want(&cs, "stapled; fwd=miss; stored; ttl=86000");
	cs.flags |= CACHE_STATUS_COLLAPSED;
	want(&cs, "stapled; fwd=miss; stored; collapsed; ttl=86000");
	cs.flags = CACHE_STATUS_FWD | CACHE_STATUS_BYPASS | CACHE_STATUS_TTL;
	cs.detail = "fallback";
	cs.ttl_s = 60;
	want(&cs, "stapled; fwd=bypass; ttl=60; detail=fallback");
	cs.flags = CACHE_STATUS_FWD;
	cs.fwd_status = 404;
	cs.detail = NULL;
	want(&cs, "stapled; fwd=miss; fwd-status=404");
	/* fwd-status belongs to a forward: a hit says none */
	cs.flags = CACHE_STATUS_HIT;
	want(&cs, "stapled; hit");
	cs.flags = 0;
	cs.fwd_status = 0;
	cs.detail = "limited";
	want(&cs, "stapled; detail=limited");
	/* a detail too long for the value's room is left out, never cut */
	cs.detail = "a-detail-of-more-than-24-bytes";
	want(&cs, "stapled");
}

/* Integers at their bounds: every width, the sign, the extremes. */
static void
test_ttl_digits(void **state)
{
	static const struct {
		int64_t		 v;
		const char	*s;
	} t[] = {
		{ 0, "0" }, { 9, "9" }, { 10, "10" }, { 99, "99" }, { 100, "100" },
		{ 101, "101" }, { 999, "999" }, { 1000, "1000" }, { 86399, "86399" },
		{ 2592000, "2592000" }, { -1, "-1" }, { -10, "-10" },
		{ INT64_MAX, "9223372036854775807" },
		{ INT64_MIN, "-9223372036854775808" },
		{ 1000000000000000000LL, "1000000000000000000" },
	};
	struct cache_status	cs = { CACHE_STATUS_HIT | CACHE_STATUS_TTL, 0, 0,
				    NULL, NULL };
	char			w[64];
	size_t			i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cs.ttl_s = t[i].v;
		snprintf(w, sizeof(w), "stapled; hit; ttl=%s", t[i].s);
		want(&cs, w);
	}
}

/* The longest value fits CACHE_STATUS_VALUE_BYTES. */
static void
test_longest(void **state)
{
	struct cache_status	cs = { CACHE_STATUS_FWD | CACHE_STATUS_BYPASS |
				    CACHE_STATUS_STORED | CACHE_STATUS_COLLAPSED |
				    CACHE_STATUS_TTL, INT64_MIN, 999,
				    "twenty-three-bytes-long", NULL };
	char			buf[CACHE_STATUS_VALUE_BYTES + 16];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	assert_true(cache_status_value(&cs, buf) < CACHE_STATUS_VALUE_BYTES);
	assert_string_equal(buf, "stapled; fwd=bypass; fwd-status=999; stored; "
	    "collapsed; ttl=-9223372036854775808; detail=twenty-three-bytes-long");
}

/* The header on the answer; the same value in the log's note, with the upstream of a miss. */
static void
test_set(void **state)
{
	struct http_req		r;
	struct cache_status	hit = { CACHE_STATUS_HIT | CACHE_STATUS_TTL, 3500,
				    0, NULL, NULL };
	struct cache_status	miss = { CACHE_STATUS_FWD | CACHE_STATUS_STORED |
				    CACHE_STATUS_TTL, 86000, 0, NULL,
				    "nvidia-primary" };
	char			 longname[400];

	(void)state;
	memset(&r, 0, sizeof(r));
	cache_status_set(&r, &hit);
	assert_int_equal(r.nheaders, 1);
	assert_string_equal(r.name, "Cache-Status");
	assert_string_equal(r.value, "stapled; hit; ttl=3500");
	assert_string_equal(r.note, "cache-status=\"stapled; hit; ttl=3500\"");
	cache_status_set(&r, &miss);
	assert_string_equal(r.value, "stapled; fwd=miss; stored; ttl=86000");
	assert_string_equal(r.note, "cache-status=\"stapled; fwd=miss; stored; "
	    "ttl=86000\" upstream=nvidia-primary");
	/* An upstream name longer than the note's room is cut, not overrun. */
	memset(longname, 'u', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	miss.upstream = longname;
	cache_status_set(&r, &miss);
	assert_int_equal(strlen(r.note), HTTP_LOG_NOTE_BYTES - 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_ttl_digits),
		cmocka_unit_test(test_longest),
		cmocka_unit_test(test_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
