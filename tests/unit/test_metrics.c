/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/metrics.c and proxy/metrics_page.c: histogram buckets, the exposition page, failure results by route, notes and hit latency. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <openssl/crypto.h>

#include "cache/record.h"
#include "entry/kinds.h"
#include "cache/store.h"
#include "proxy/fetch/fetch.h"
#include "proxy/http/http.h"
#include "proxy/metrics.h"
#include "proxy/metrics_page.h"
#include "proxy/refresh/refresh.h"

/* ---- fakes of what metrics_page.c reads from http.c, fetch.c, cache/ ----------- */

struct http_req {
	int64_t		 parsed_us;
	const void	*note;
};

int64_t
http_req_parsed_us(const struct http_req *r)
{
	return r->parsed_us;
}

void
http_req_set_note(struct http_req *r, const void *note)
{
	r->note = note;
}

const void *
http_req_note(const struct http_req *r)
{
	return r->note;
}

/* One pool of one upstream, "primary", up, with a latency histogram. */
struct fetch_pool {
	struct metrics_hist	latency;
};

size_t
fetch_pool_health(const struct fetch_pool *pool, struct fetch_health *h,
    size_t max)
{
	if (pool == NULL || max == 0)
		return 0;
	memset(h, 0, sizeof(*h));
	h->name = "primary";
	h->url = "http://192.0.2.1";
	h->up = 1;
	h->last_success_unix = 1700000000;
	h->requests = 7;
	h->failures[FETCH_ERR_DNS] = 2;
	h->latency = &pool->latency;
	return 1;
}

const char *
fetch_pool_service(const struct fetch_pool *pool)
{
	return pool != NULL ? "pccs" : NULL;
}

size_t
fetch_pool_queued(const struct fetch_pool *pool)
{
	return pool != NULL ? 3 : 0;
}

const char *
fetch_curl_version(void)
{
	return "7.88.1";
}

const char *
cache_lib_version(void)
{
	return "0.9.24";
}

/* ---- helpers ---------------------------------------------------------------------- */

/* The page as a NUL-terminated string (freed by the caller). */
static char *
page(const struct refresh_stats *rs, struct fetch_pool *pool, time_t now)
{
	struct evbuffer		*b = evbuffer_new();
	struct fetch_pool	*pools[2] = { pool, NULL };
	size_t			 n;
	char			*s;

	assert_non_null(b);
	metrics_render(b, rs, pools, 2, now);
	n = evbuffer_get_length(b);
	assert_non_null(s = malloc(n + 1));
	evbuffer_remove(b, s, n);
	s[n] = '\0';
	evbuffer_free(b);
	return s;
}

static int
has_line(const char *s, const char *line)
{
	size_t	n = strlen(line);
	const char *p;

	for (p = s; (p = strstr(p, line)) != NULL; p += n)
		if ((p == s || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return 1;
	return 0;
}

static int
count_of(const char *s, const char *needle)
{
	int	n = 0;

	for (; (s = strstr(s, needle)) != NULL; s += strlen(needle))
		n++;
	return n;
}

/* ---- tests -------------------------------------------------------------------------- */

/* A bound is "less or equal" (Prometheus' le); below 0 counts as 0; past the last, +Inf. */
static void
test_hist(void **state)
{
	struct metrics_hist	 h;
	struct evbuffer		*b = evbuffer_new();
	char			 s[4096];
	size_t			 n;

	(void)state;
	memset(&h, 0, sizeof(h));
	metrics_hist_observe(&h, METRICS_HIST_HIT, 0.00005);
	metrics_hist_observe(&h, METRICS_HIST_HIT, -1);
	metrics_hist_observe(&h, METRICS_HIST_HIT, 0.0003);
	metrics_hist_observe(&h, METRICS_HIST_HIT, 5);
	assert_int_equal(h.count, 4);
	metrics_hist_render(b, "x_seconds", "service=\"ocsp\"", &h,
	    METRICS_HIST_HIT);
	n = evbuffer_remove(b, s, sizeof(s) - 1);
	s[n] = '\0';
	evbuffer_free(b);
	assert_true(has_line(s, "x_seconds_bucket{service=\"ocsp\",le=\"5e-05\"} 2"));
	assert_true(has_line(s, "x_seconds_bucket{service=\"ocsp\",le=\"0.00025\"} 2"));
	assert_true(has_line(s, "x_seconds_bucket{service=\"ocsp\",le=\"0.0005\"} 3"));
	assert_true(has_line(s, "x_seconds_bucket{service=\"ocsp\",le=\"0.1\"} 3"));
	assert_true(has_line(s, "x_seconds_bucket{service=\"ocsp\",le=\"+Inf\"} 4"));
	assert_true(has_line(s, "x_seconds_sum{service=\"ocsp\"} 5.000350"));
	assert_true(has_line(s, "x_seconds_count{service=\"ocsp\"} 4"));
	/* the upstream set reaches the 10 s timeout */
	memset(&h, 0, sizeof(h));
	metrics_hist_observe(&h, METRICS_HIST_UPSTREAM, 10);
	assert_int_equal(h.bucket[10], 1);
}

/*
 * The kinds described as their routes describe them (test_service checks
 * the routes' own descriptions): two routes with tryLater and malformed
 * for OCSP, one with a 503 for the others.
 */
static const char *const reasons[] = { "ok", "bad_signature", "expired" };
static const struct metrics_kind mk_ocsp = { { "ocsp_post", "ocsp_get" },
    METRICS_RES_TRYLATER, 1, reasons, 3 };
static const struct metrics_kind mk_rim = { { "rim", NULL },
    METRICS_RES_UNAVAILABLE, 0, NULL, 0 };
static const struct metrics_kind mk_pccs = { { "pccs", NULL },
    METRICS_RES_UNAVAILABLE, 0, NULL, 0 };
static const struct metrics_kind mk_kds = { { "kds", NULL },
    METRICS_RES_UNAVAILABLE, 0, NULL, 0 };
#define ROUTE_OCSP_GET	METRICS_ROUTE(CACHE_KIND_OCSP, 1)
#define ROUTE_PCCS	METRICS_ROUTE(CACHE_KIND_PCCS, 0)

static int
describe(void **state)
{
	(void)state;
	metrics_describe(CACHE_KIND_OCSP, &mk_ocsp);
	metrics_describe(CACHE_KIND_RIM, &mk_rim);
	metrics_describe(CACHE_KIND_PCCS, &mk_pccs);
	metrics_describe(CACHE_KIND_KDS, &mk_kds);
	return 0;
}

/* A route's kind, label and failure answer come from its kind's description. */
static void
test_failed_result(void **state)
{
	(void)state;
	assert_int_equal(metrics_failed_result(METRICS_ROUTE(CACHE_KIND_OCSP, 0)),
	    METRICS_RES_TRYLATER);
	assert_int_equal(metrics_failed_result(ROUTE_OCSP_GET), METRICS_RES_TRYLATER);
	assert_int_equal(metrics_failed_result(ROUTE_PCCS), METRICS_RES_UNAVAILABLE);
	assert_int_equal(metrics_route_kind(METRICS_ROUTE(CACHE_KIND_KDS, 0)),
	    CACHE_KIND_KDS);
	assert_string_equal(metrics_route_str(ROUTE_OCSP_GET), "ocsp_get");
	assert_null(metrics_route_str(METRICS_ROUTE(CACHE_KIND_RIM, 1)));
	assert_null(metrics_route_str(METRICS_ROUTE_MAX));
}

/* A noted hit's latency is observed when the answer is queued; a miss's is not. */
static void
test_note(void **state)
{
	struct http_req	r = { 0, NULL };

	(void)state;
	memset(&metrics.hit_latency, 0, sizeof(metrics.hit_latency));
	assert_null(metrics_note_get(&r));
	r.parsed_us = metrics_now_us() - 1000;
	metrics_note(&r, ROUTE_OCSP_GET, METRICS_RES_HIT);
	assert_int_equal(metrics_note_get(&r)->route, ROUTE_OCSP_GET);
	assert_int_equal(metrics_note_get(&r)->result, METRICS_RES_HIT);
	metrics_on_reply(&r);
	assert_int_equal(metrics.hit_latency[CACHE_KIND_OCSP].count, 1);
	assert_true(metrics.hit_latency[CACHE_KIND_OCSP].sum >= 0.001);
	metrics_note(&r, ROUTE_PCCS, METRICS_RES_MISS);
	metrics_on_reply(&r);
	assert_int_equal(metrics.hit_latency[CACHE_KIND_PCCS].count, 0);
	/* never parsed (a refusal while reading): nothing observed */
	r.parsed_us = 0;
	metrics_note(&r, ROUTE_PCCS, METRICS_RES_HIT);
	metrics_on_reply(&r);
	assert_int_equal(metrics.hit_latency[CACHE_KIND_PCCS].count, 0);
}

/* The start time comes from the clock main read, not from /proc: there only once marked. */
static void
test_start_time(void **state)
{
	struct refresh_stats	 rs;
	char			*s, *p;
	double			 t;

	(void)state;
	memset(&rs, 0, sizeof(rs));
	metrics.start_time = 0;
	s = page(&rs, NULL, 1750000000);
	assert_null(strstr(s, "\nprocess_start_time_seconds "));
	free(s);
	metrics_mark_start();
	s = page(&rs, NULL, 1750000000);
	assert_non_null(p = strstr(s, "\nprocess_start_time_seconds "));
	t = strtod(p + strlen("\nprocess_start_time_seconds "), NULL);
	assert_true(t > (double)time(NULL) - 5 && t <= (double)time(NULL) + 1);
	free(s);
}

/* A TLS listener's counters: one set per name, every reason shown. */
static void
test_tls_listener(void **state)
{
	struct refresh_stats	 rs;
	unsigned long		*a, *b;
	char			*s;

	(void)state;
	memset(&rs, 0, sizeof(rs));
	assert_non_null(a = metrics_tls_listener("127.0.0.1:8443"));
	assert_non_null(b = metrics_tls_listener("[::1]:8443"));
	assert_ptr_equal(metrics_tls_listener("127.0.0.1:8443"), a);
	assert_ptr_not_equal(a, b);
	a[METRICS_TLS_PLAIN_HTTP] += 2;
	s = page(&rs, NULL, 1750000000);
	assert_true(has_line(s, "stapled_tls_handshake_failures_total"
	    "{listener=\"127.0.0.1:8443\",reason=\"plain_http\"} 2"));
	assert_true(has_line(s, "stapled_tls_handshake_failures_total"
	    "{listener=\"[::1]:8443\",reason=\"no_client_cert\"} 0"));
	free(s);
}

static void
test_page(void **state)
{
	struct refresh_stats	 rs;
	struct fetch_pool	 pool;
	time_t			 now = 1750000000;
	char			*s, build[256];

	(void)state;
	memset(&rs, 0, sizeof(rs));
	memset(&pool, 0, sizeof(pool));
	rs.earliest_by_kind[CACHE_KIND_OCSP] = now + 100;
	rs.entries[CACHE_KIND_OCSP] = 3;
	rs.valid_by_kind[CACHE_KIND_OCSP] = 1;
	rs.entries[CACHE_KIND_PCCS] = 2;
	rs.expired_by_kind[CACHE_KIND_PCCS] = 2;
	metrics_hist_observe(&pool.latency, METRICS_HIST_UPSTREAM, 0.02);
	metrics.requests[ROUTE_PCCS][METRICS_RES_UNAVAILABLE] = 3;
	metrics_mark_start();
	s = page(&rs, &pool, now);
	snprintf(build, sizeof(build), "stapled_build_info{version=\"%s\","
	    "openssl=\"%s\",libcurl=\"7.88.1\",lmdb=\"0.9.24\"} 1",
	    PACKAGE_VERSION, OpenSSL_version(OPENSSL_VERSION_STRING));
	assert_true(has_line(s, build));
	assert_true(strstr(s, "\nprocess_open_fds ") != NULL);
	assert_true(strstr(s, "\nprocess_resident_memory_bytes ") != NULL);
	assert_true(strstr(s, "\nprocess_start_time_seconds ") != NULL);
	/* results by their real names, per route */
	assert_true(has_line(s, "stapled_requests_total{route=\"pccs\",result=\"unavailable\"} 3"));
	assert_null(strstr(s, "route=\"pccs\",result=\"trylater\""));
	assert_null(strstr(s, "route=\"kds\",result=\"malformed\""));
	assert_null(strstr(s, "route=\"ocsp_post\",result=\"unavailable\""));
	assert_true(has_line(s, "stapled_requests_total{route=\"ocsp_get\",result=\"trylater\"} 0"));
	assert_null(strstr(s, "route=\"rim\",result=\"trylater\""));
	/* a kind's refusals by its reasons, reason 0 ("ok") left out */
	metrics.verify_failures[CACHE_KIND_OCSP][2] = 4;
	free(s);
	s = page(&rs, &pool, now);
	assert_true(has_line(s, "stapled_verify_failures_total{kind=\"ocsp\",reason=\"expired\"} 4"));
	assert_null(strstr(s, "reason=\"ok\""));
	assert_null(strstr(s, "stapled_verify_failures_total{kind=\"rim\""));
	/* the oldest entry, only for services that have one */
	assert_true(has_line(s, "stapled_oldest_entry_remaining_seconds{service=\"ocsp\"} 100"));
	assert_null(strstr(s, "stapled_oldest_entry_remaining_seconds{service=\"pccs\"}"));
	/* every service's entries by state, the empty and the all-expired too */
	assert_true(has_line(s, "stapled_service_entries{service=\"ocsp\",state=\"valid\"} 1"));
	assert_true(has_line(s, "stapled_service_entries{service=\"ocsp\",state=\"expired\"} 0"));
	assert_true(has_line(s, "stapled_service_entries{service=\"ocsp\",state=\"expired_idle\"} 2"));
	assert_true(has_line(s, "stapled_service_entries{service=\"pccs\",state=\"valid\"} 0"));
	assert_true(has_line(s, "stapled_service_entries{service=\"pccs\",state=\"expired\"} 2"));
	assert_true(has_line(s, "stapled_service_entries{service=\"kds\",state=\"valid\"} 0"));
	/* no import held: the family without a sample */
	assert_int_equal(count_of(s, "# TYPE stapled_last_import_timestamp_seconds gauge\n"), 1);
	assert_null(strstr(s, "\nstapled_last_import_timestamp_seconds "));
	/* upstreams: up, last success, counters, latency; one TYPE line per family */
	assert_true(has_line(s, "stapled_upstream_up{service=\"pccs\",upstream=\"primary\"} 1"));
	assert_true(has_line(s, "stapled_upstream_last_success_timestamp_seconds{service=\"pccs\",upstream=\"primary\"} 1700000000"));
	assert_true(has_line(s, "stapled_upstream_failures_total{service=\"pccs\",upstream=\"primary\",reason=\"dns\"} 2"));
	assert_true(has_line(s, "stapled_upstream_latency_seconds_bucket{service=\"pccs\",upstream=\"primary\",le=\"0.025\"} 1"));
	assert_int_equal(count_of(s, "# TYPE stapled_upstream_latency_seconds histogram\n"), 1);
	assert_true(has_line(s, "stapled_upstream_queued{service=\"pccs\"} 3"));
	assert_int_equal(count_of(s, "# TYPE stapled_hit_latency_seconds histogram\n"), 1);
	assert_int_equal(count_of(s, "stapled_hit_latency_seconds_count{"), CACHE_KIND_MAX - 1);
	free(s);
	rs.newest_import = now - 3600;
	s = page(&rs, &pool, now);
	assert_true(has_line(s, "stapled_last_import_timestamp_seconds 1749996400"));
	free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hist),
		cmocka_unit_test(test_failed_result),
		cmocka_unit_test(test_note),
		cmocka_unit_test(test_page),
		cmocka_unit_test(test_start_time),
		cmocka_unit_test(test_tls_listener),
	};

	return cmocka_run_group_tests(tests, describe, NULL);
}
