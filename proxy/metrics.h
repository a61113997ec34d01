/* The process-wide counters for /metrics and the rendering of the whole page (Prometheus text format); labels come from the enums' string tables. */
#ifndef PROXY_METRICS_H
#define PROXY_METRICS_H

#include <time.h>

#include "attest/ocsp.h"

struct evbuffer;
struct fetch_pool;
struct refresh_stats;

enum metrics_result {
	METRICS_RES_HIT,		/* served from the cache */
	METRICS_RES_MISS,		/* fetched, verified, stored and served */
	METRICS_RES_UNVERIFIABLE,	/* fetched, passed on unmodified, not stored */
	METRICS_RES_FALLBACK,		/* upstream_first: every upstream failed, cache served */
	METRICS_RES_NOT_MODIFIED,	/* GET with a matching If-None-Match */
	METRICS_RES_FINAL,		/* an upstream's 404/410 about the object, passed on */
	METRICS_RES_DEFINITIVE,		/* an upstream's unsigned answer about the request, relayed */
	METRICS_RES_TRYLATER,		/* nothing valid to serve */
	METRICS_RES_LIMITED,		/* a miss over client_miss_rate_per_s, failure answer */
	METRICS_RES_MALFORMED,		/* not an OCSP request */
	METRICS_RES_HTTP_ERROR,		/* 400/405/413/415 */
	METRICS_RES_MAX
};
extern const char *const metrics_result_str[METRICS_RES_MAX];

enum metrics_route {
	METRICS_ROUTE_OCSP_POST, METRICS_ROUTE_OCSP_GET, METRICS_ROUTE_RIM, METRICS_ROUTE_PCCS, METRICS_ROUTE_KDS, METRICS_ROUTE_MAX
};
extern const char *const metrics_route_str[METRICS_ROUTE_MAX];

struct metrics {
	unsigned long	requests[METRICS_ROUTE_MAX][METRICS_RES_MAX];
	unsigned long	verify_failures[OCSP_VERDICT_MAX];
	unsigned long	rejected[8];	/* upstream answers refused, by cache kind */
	unsigned long	store_errors;
	unsigned long	store_map_full;	/* of store_errors: the map was full */
	unsigned long	store_damaged;	/* damaged stores moved aside */
	unsigned long	entries_purged;	/* expired entries deleted by the purge */
	unsigned long	evictions[8];	/* by cache kind: deleted for max_entries */
	unsigned long	store_capped[8];	/* by cache kind: not stored, nothing evictable */
	unsigned long	http_errors;	/* requests refused before routing (400, 411, 413, 431, 505) */
	unsigned long	refresh_ok;
	unsigned long	refresh_failed;
	unsigned long	refresh_rate_limited;
};

extern struct metrics	metrics;

/* Upstreams listed per service by metrics_render; more are left out. */
#define METRICS_MAX_UPSTREAMS	64

/*
 * Append the whole /metrics page in exposition format (version 0.0.4):
 * the counters above, the store's gauges from rs (the refresher's last
 * pass, borrowed; deadlines relative to now), and the health of each of
 * the npools upstream pools (borrowed; none and no upstream section when
 * pools is NULL). Cannot fail short of evbuffer's allocation failures,
 * which leave the page cut short.
 */
void	metrics_render(struct evbuffer *, const struct refresh_stats *rs,
	    struct fetch_pool *const *pools, size_t npools, time_t now);

#endif
