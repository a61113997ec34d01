/* SPDX-License-Identifier: Apache-2.0 */
/* Process-wide counters, gauges and histograms (the metrics block), their label tables and bucket bounds: a leaf that the modules it counts for call, and that calls none of them. */
#include <config.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "cache/clock.h"
#include "cache/record.h"
#include "entry/kinds.h"
#include "proxy/metrics.h"

struct metrics	metrics;

const char *const metrics_result_str[METRICS_RES_MAX] = {
	[METRICS_RES_HIT] = "hit",
	[METRICS_RES_MISS] = "miss",
	[METRICS_RES_UNVERIFIABLE] = "unverifiable",
	[METRICS_RES_FALLBACK] = "fallback",
	[METRICS_RES_NOT_MODIFIED] = "not_modified",
	[METRICS_RES_FINAL] = "final",
	[METRICS_RES_DEFINITIVE] = "definitive",
	[METRICS_RES_TRYLATER] = "trylater",
	[METRICS_RES_UNAVAILABLE] = "unavailable",
	[METRICS_RES_LIMITED] = "limited",
	[METRICS_RES_MALFORMED] = "malformed",
	[METRICS_RES_HTTP_ERROR] = "http_error",
};

/* The kinds' descriptions: labels only, set once per kind, never counted in. */
static const struct metrics_kind	*kinds[CACHE_KIND_MAX];

const char *const metrics_tls_fail_str[METRICS_TLS_FAIL_MAX] = {
	[METRICS_TLS_PLAIN_HTTP] = "plain_http",
	[METRICS_TLS_NOT_TLS] = "not_tls",
	[METRICS_TLS_PROTOCOL_VERSION] = "protocol_version",
	[METRICS_TLS_NO_SHARED_CIPHER] = "no_shared_cipher",
	[METRICS_TLS_NO_CLIENT_CERT] = "no_client_cert",
	[METRICS_TLS_BAD_CLIENT_CERT] = "bad_client_cert",
	[METRICS_TLS_CLIENT_ALERT] = "client_alert",
	[METRICS_TLS_CLOSED] = "closed",
	[METRICS_TLS_OTHER] = "other",
};

unsigned long *
metrics_tls_listener(const char *name)
{
	struct metrics_tls_listener	*l;
	size_t				 i;

	for (i = 0; i < metrics.ntls; i++)
		if (strcmp(metrics.tls[i].name, name) == 0)
			return metrics.tls[i].handshake_failures;
	if (metrics.ntls == METRICS_MAX_TLS_LISTENERS ||
	    strlen(name) >= sizeof(l->name))
		return NULL;
	l = &metrics.tls[metrics.ntls++];
	snprintf(l->name, sizeof(l->name), "%s", name);
	return l->handshake_failures;
}

/*
 * Bucket upper bounds in seconds, ascending; +Inf follows. Hits are
 * served from memory-mapped pages in tens of microseconds, so their
 * buckets start at 50 us and a hit over 100 ms means the loop was blocked;
 * upstream exchanges run from a LAN mirror's milliseconds to the 10 s
 * timeout; one verification (signature, chain, CRL) takes 50 us to a few
 * ms, and RIM's XML signatures longer.
 */
static const double hit_bounds[] = {
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.1,
};
static const double upstream_bounds[] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};
static const double verify_bounds[] = {
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
	0.1, 1,
};
#define NBOUNDS(a)	(sizeof(a) / sizeof((a)[0]))
_Static_assert(NBOUNDS(hit_bounds) <= METRICS_HIST_MAX_BUCKETS &&
    NBOUNDS(upstream_bounds) <= METRICS_HIST_MAX_BUCKETS &&
    NBOUNDS(verify_bounds) <= METRICS_HIST_MAX_BUCKETS,
    "struct metrics_hist holds every bucket");
static const struct {
	const double	*b;
	size_t		 n;
} hist_bounds[METRICS_HIST_KIND_MAX] = {
	[METRICS_HIST_HIT] = { hit_bounds, NBOUNDS(hit_bounds) },
	[METRICS_HIST_UPSTREAM] = { upstream_bounds, NBOUNDS(upstream_bounds) },
	[METRICS_HIST_VERIFY] = { verify_bounds, NBOUNDS(verify_bounds) },
};

void
metrics_describe(enum cache_kind kind, const struct metrics_kind *mk)
{
	if ((unsigned)kind < CACHE_KIND_MAX)
		kinds[kind] = mk;
}

const struct metrics_kind *
metrics_kind(enum cache_kind kind)
{
	return (unsigned)kind < CACHE_KIND_MAX ? kinds[kind] : NULL;
}

enum cache_kind
metrics_route_kind(unsigned route)
{
	return route < METRICS_ROUTE_MAX ? route / METRICS_KIND_ROUTES : 0;
}

const char *
metrics_route_str(unsigned route)
{
	const struct metrics_kind	*mk = metrics_kind(metrics_route_kind(route));

	return mk != NULL ? mk->routes[route % METRICS_KIND_ROUTES] : NULL;
}

/* A kind that says nothing is answered a 503, as HTTP clients read it. */
enum metrics_result
metrics_failed_result(unsigned route)
{
	const struct metrics_kind	*mk = metrics_kind(metrics_route_kind(route));

	return mk != NULL ? mk->failed : METRICS_RES_UNAVAILABLE;
}

int64_t
metrics_now_us(void)
{
	return mono_us();
}

void
metrics_hist_observe(struct metrics_hist *h, enum metrics_hist_kind kind,
    double seconds)
{
	size_t	i, n = hist_bounds[kind].n;

	if (seconds < 0)
		seconds = 0;
	for (i = 0; i < n && seconds > hist_bounds[kind].b[i]; i++)
		;
	h->bucket[i]++;
	h->count++;
	h->sum += seconds;
}

void
metrics_hist_render(struct evbuffer *b, const char *name, const char *labels,
    const struct metrics_hist *h, enum metrics_hist_kind kind)
{
	unsigned long	cum = 0;
	size_t		i, n = hist_bounds[kind].n;

	for (i = 0; i < n; i++) {
		cum += h->bucket[i];
		evbuffer_add_printf(b, "%s_bucket{%s,le=\"%g\"} %lu\n", name,
		    labels, hist_bounds[kind].b[i], cum);
	}
	evbuffer_add_printf(b, "%s_bucket{%s,le=\"+Inf\"} %lu\n"
	    "%s_sum{%s} %.6f\n%s_count{%s} %lu\n", name, labels, h->count,
	    name, labels, h->sum, name, labels, h->count);
}

void
metrics_mark_start(void)
{
	struct timespec	ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
		metrics.start_time = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
