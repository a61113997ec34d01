/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/http/httpcache.c: max-age per kind and refresh class (less the clock margin), the ETag, If-None-Match, no-store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "cache/record.h"
#include "entry/kinds.h"
#include "proxy/http/http.h"
#include "proxy/http/httpcache.h"
#include "proxy/log.h"

#define NOW		1750000000	/* any fixed time */
#define HOUR_S		3600
#define FAKE_HEADERS	8
/* The horizon each kind's route serves with: OCSP's RFC 5019 one, the others' to the refresh. */
#define HORIZON(kind)	((kind) == CACHE_KIND_OCSP ? HTTPCACHE_TO_NEXT_UPDATE : \
			    HTTPCACHE_TO_REFRESH)

/* ---- fakes of proxy/http/http.c and proxy/log.c: one request, its answer recorded ---- */

struct http_req {
	struct evbuffer	*body;
	const char	*inm;		/* the request's If-None-Match, or NULL */
	char		 name[FAKE_HEADERS][32];
	char		 value[FAKE_HEADERS][128];
	int		 nheaders;
	int		 status;
};

void
http_resp_header(struct http_req *r, const char *name, const char *value)
{
	assert_true(r->nheaders < FAKE_HEADERS);
	snprintf(r->name[r->nheaders], sizeof(r->name[0]), "%s", name);
	snprintf(r->value[r->nheaders], sizeof(r->value[0]), "%s", value);
	r->nheaders++;
}

struct evbuffer *
http_resp_body(struct http_req *r)
{
	return r->body;
}

void
http_reply(struct http_req *r, int status, const char *reason)
{
	(void)reason;
	assert_int_equal(r->status, 0);		/* answered exactly once */
	r->status = status;
}

const char *
http_req_header(const struct http_req *r, const char *name)
{
	return strcasecmp(name, "If-None-Match") == 0 ? r->inm : NULL;
}

char *
log_hex(char *buf, size_t buflen, const void *p, size_t len)
{
	const unsigned char	*b = p;
	size_t			 i;

	for (i = 0; i < len && 2 * i + 2 < buflen; i++)
		snprintf(buf + 2 * i, 3, "%02x", b[i]);
	buf[2 * i] = '\0';
	return buf;
}

static const char *
got(const struct http_req *r, const char *name)
{
	int	i;

	for (i = 0; i < r->nheaders; i++)
		if (strcasecmp(r->name[i], name) == 0)
			return r->value[i];
	return NULL;
}

/* Answer a request for "abc" from m; returns the status. */
static int
answer(struct http_req *r, const struct cache_meta *m, const char *inm)
{
	int	status;

	memset(r, 0, sizeof(*r));
	r->body = evbuffer_new();
	assert_non_null(r->body);
	evbuffer_add(r->body, "abc", 3);
	r->inm = inm;
	status = httpcache_answer(r, m, HORIZON(m->kind), NOW);
	assert_int_equal(status, r->status);	/* returns what it sent */
	evbuffer_free(r->body);
	return status;
}

/* ---- tests ---------------------------------------------------------------------- */

static void
test_max_age(void **state)
{
	struct cache_meta	m;

	(void)state;
	memset(&m, 0, sizeof(m));
	/* OCSP: to nextUpdate, whatever the refresh plan (RFC 5019). */
	m.kind = CACHE_KIND_OCSP;
	m.next_update = NOW + 20 * HOUR_S;
	m.next_refresh_at = NOW + HOUR_S;
	assert_int_equal(httpcache_max_age(&m, HORIZON(m.kind), NOW), 20 * HOUR_S - 1);
	/* Refreshed collateral: to the next planned refresh. */
	m.kind = CACHE_KIND_PCCS;
	assert_int_equal(httpcache_max_age(&m, HORIZON(m.kind), NOW), HOUR_S - 1);
	m.next_refresh_at = NOW + 30 * HOUR_S;		/* after nextUpdate */
	assert_int_equal(httpcache_max_age(&m, HORIZON(m.kind), NOW), 20 * HOUR_S - 1);
	m.next_refresh_at = NOW - 5;			/* overdue */
	assert_int_equal(httpcache_max_age(&m, HORIZON(m.kind), NOW), HTTPCACHE_OVERDUE_MAX_AGE_S - 1);
	/* Parked (idle): its next_refresh_at is its nextUpdate, no plan. */
	m.next_refresh_at = m.next_update;
	m.flags = CACHE_F_PARKED;
	assert_int_equal(httpcache_max_age(&m, HORIZON(m.kind), NOW), HTTPCACHE_OVERDUE_MAX_AGE_S - 1);
	m.flags = 0;
	m.next_refresh_at = NOW - 5;
	m.next_update = NOW + 10;
	assert_int_equal(httpcache_max_age(&m, HORIZON(m.kind), NOW), 9);
	m.next_update = NOW + 1;			/* the margin */
	assert_int_equal(httpcache_max_age(&m, HORIZON(m.kind), NOW), 0);
	/* Never refreshed (a VCEK valid for years): 24 h. */
	m.kind = CACHE_KIND_KDS;
	m.flags = CACHE_F_NO_REFRESH;
	m.next_refresh_at = 0;
	m.next_update = NOW + 7LL * 365 * 24 * HOUR_S;
	assert_int_equal(httpcache_max_age(&m, HORIZON(m.kind), NOW), HTTPCACHE_NO_REFRESH_MAX_AGE_S - 1);
	/* Expired, for any kind: 0. */
	m.next_update = NOW;
	assert_int_equal(httpcache_max_age(&m, HORIZON(m.kind), NOW), 0);
	m.kind = CACHE_KIND_OCSP;
	m.next_update = NOW - 1;
	assert_int_equal(httpcache_max_age(&m, HORIZON(m.kind), NOW), 0);
}

/*
 * Every kind, every refresh class, expiries and plans around now: max-age
 * ends at least the clock margin before the object's own expiry (its
 * nextUpdate, or a VCEK's notAfter), and a never-refreshed entry's
 * within 24 h.
 */
static void
test_never_past_expiry(void **state)
{
	static const int64_t	 offs[] = { -HOUR_S, -1, 0, 1, 2, 59, 60, 61,
					    HOUR_S, 30 * 24 * HOUR_S };
	static const uint16_t	 flags[] = { 0, CACHE_F_PARKED, CACHE_F_NO_REFRESH };
	struct cache_meta	 m;
	size_t			 nu, nr, f;
	int			 kind;
	long			 ma;

	(void)state;
	for (kind = CACHE_KIND_OCSP; kind < CACHE_KIND_MAX; kind++)
	for (nu = 0; nu < sizeof(offs) / sizeof(offs[0]); nu++)
	for (nr = 0; nr < sizeof(offs) / sizeof(offs[0]); nr++)
	for (f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
		memset(&m, 0, sizeof(m));
		m.kind = kind;
		m.flags = flags[f];
		m.next_update = NOW + offs[nu];
		m.next_refresh_at = NOW + offs[nr];
		ma = httpcache_max_age(&m, HORIZON(m.kind), NOW);
		assert_true(ma >= 0);
		assert_true(NOW + ma <= m.next_update - HTTPCACHE_CLOCK_MARGIN_S ||
		    ma == 0);
		if (kind != CACHE_KIND_OCSP && (m.flags & CACHE_F_NO_REFRESH))
			assert_true(ma < HTTPCACHE_NO_REFRESH_MAX_AGE_S);
	}
}

static void
test_headers(void **state)
{
	struct http_req		r;
	struct cache_meta	m;
	/* SHA-256("abc") */
	const char		*etag = "\"ba7816bf8f01cfea414140de5dae2223"
				    "b00361a396177a9cb410ff61f20015ad\"";

	(void)state;
	memset(&m, 0, sizeof(m));
	m.kind = CACHE_KIND_RIM;
	m.this_update = NOW - HOUR_S;
	m.next_update = NOW + 100 * HOUR_S;
	m.next_refresh_at = NOW + 2 * HOUR_S;
	assert_int_equal(answer(&r, &m, NULL), 200);
	assert_string_equal(got(&r, "Cache-Control"),
	    "public, max-age=7199, no-transform, must-revalidate, "
	    "stale-while-revalidate=0, stale-if-error=0");
	assert_string_equal(got(&r, "ETag"), etag);
	assert_string_equal(got(&r, "Expires"), "Sun, 15 Jun 2025 17:06:39 GMT");
	assert_string_equal(got(&r, "Last-Modified"), "Sun, 15 Jun 2025 14:06:40 GMT");
	/* Cache-Control comes before Expires (nginx takes the first). */
	assert_string_equal(r.name[0], "Cache-Control");
	/* An issue time ahead of the clock (within skew) is not sent as such. */
	m.this_update = NOW + 30;
	answer(&r, &m, NULL);
	assert_string_equal(got(&r, "Last-Modified"), "Sun, 15 Jun 2025 15:06:40 GMT");
}

static void
test_if_none_match(void **state)
{
	struct http_req		r;
	struct cache_meta	m;
	const char		*e = "\"ba7816bf8f01cfea414140de5dae2223"
				    "b00361a396177a9cb410ff61f20015ad\"";
	char			 list[256];

	(void)state;
	memset(&m, 0, sizeof(m));
	m.kind = CACHE_KIND_OCSP;
	m.next_update = NOW + HOUR_S;
	assert_int_equal(answer(&r, &m, e), 304);
	assert_non_null(got(&r, "ETag"));
	assert_non_null(got(&r, "Cache-Control"));
	assert_non_null(got(&r, "Expires"));
	assert_int_equal(answer(&r, &m, "*"), 304);
	snprintf(list, sizeof(list), "\"x\", W/%s", e);	/* weak comparison */
	assert_int_equal(answer(&r, &m, list), 304);
	snprintf(list, sizeof(list), "\"x\",%s", e);
	assert_int_equal(answer(&r, &m, list), 304);
	assert_int_equal(answer(&r, &m, "\"x\""), 200);
	/* A prefix of the ETag, or the ETag inside another one, is no match. */
	snprintf(list, sizeof(list), "%.20s\"", e);
	assert_int_equal(answer(&r, &m, list), 200);
	snprintf(list, sizeof(list), "%.*s00\"", (int)strlen(e) - 1, e);
	assert_int_equal(answer(&r, &m, list), 200);
	assert_int_equal(answer(&r, &m, ""), 200);
}

static void
test_no_store(void **state)
{
	struct http_req		r;
	struct cache_meta	m;

	(void)state;
	/* Not a stored entry (zeroed meta: passed on, or definitive). */
	memset(&m, 0, sizeof(m));
	assert_int_equal(answer(&r, &m, "*"), 200);
	assert_string_equal(got(&r, "Cache-Control"), "no-store");
	assert_null(got(&r, "ETag"));
	assert_null(got(&r, "Expires"));
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_max_age),
		cmocka_unit_test(test_never_past_expiry),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_if_none_match),
		cmocka_unit_test(test_no_store),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
