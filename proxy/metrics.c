/* Process-wide counters, and the Prometheus exposition of /metrics (counters, store gauges, upstream health). */
#include <config.h>

#include <event2/buffer.h>

#include "cache/record.h"
#include "proxy/fetch.h"
#include "proxy/metrics.h"
#include "proxy/refresh.h"

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
	[METRICS_RES_LIMITED] = "limited",
	[METRICS_RES_MALFORMED] = "malformed",
	[METRICS_RES_HTTP_ERROR] = "http_error",
};

const char *const metrics_route_str[METRICS_ROUTE_MAX] = {
	[METRICS_ROUTE_OCSP_POST] = "ocsp_post",
	[METRICS_ROUTE_OCSP_GET] = "ocsp_get",
	[METRICS_ROUTE_RIM] = "rim",
	[METRICS_ROUTE_PCCS] = "pccs",
	[METRICS_ROUTE_KDS] = "kds",
};

/* max_entries, per service (a service is a cache kind). */
static void
render_evictions(struct evbuffer *b)
{
	int	k;

	evbuffer_add_printf(b,
	    "# HELP stapled_evictions_total Entries deleted to stay within max_entries, least recently asked first.\n"
	    "# TYPE stapled_evictions_total counter\n");
	for (k = 1; k < CACHE_KIND_MAX; k++)
		evbuffer_add_printf(b, "stapled_evictions_total{service=\"%s\"} %lu\n",
		    cache_kind_str[k], metrics.evictions[k]);
	evbuffer_add_printf(b,
	    "# HELP stapled_store_capped_total Verified answers passed on but not stored: max_entries reached, nothing evictable.\n"
	    "# TYPE stapled_store_capped_total counter\n");
	for (k = 1; k < CACHE_KIND_MAX; k++)
		evbuffer_add_printf(b, "stapled_store_capped_total{service=\"%s\"} %lu\n",
		    cache_kind_str[k], metrics.store_capped[k]);
}

/* The counters of the metrics block. */
static void
render_counters(struct evbuffer *b)
{
	int	r, k;

	evbuffer_add_printf(b,
	    "# HELP stapled_requests_total Client requests by route and result.\n"
	    "# TYPE stapled_requests_total counter\n");
	for (r = 0; r < METRICS_ROUTE_MAX; r++)
		for (k = 0; k < METRICS_RES_MAX; k++)
			evbuffer_add_printf(b,
			    "stapled_requests_total{route=\"%s\",result=\"%s\"} %lu\n",
			    metrics_route_str[r], metrics_result_str[k],
			    metrics.requests[r][k]);
	evbuffer_add_printf(b,
	    "# HELP stapled_verify_failures_total Upstream answers refused by verification.\n"
	    "# TYPE stapled_verify_failures_total counter\n");
	for (k = 1; k < OCSP_VERDICT_MAX; k++)
		evbuffer_add_printf(b,
		    "stapled_verify_failures_total{kind=\"ocsp\",reason=\"%s\"} %lu\n",
		    ocsp_verdict_str[k], metrics.verify_failures[k]);
	evbuffer_add_printf(b,
	    "# HELP stapled_rejected_total Upstream answers refused before storing, by kind.\n"
	    "# TYPE stapled_rejected_total counter\n");
	for (k = 1; k < CACHE_KIND_MAX; k++)
		evbuffer_add_printf(b, "stapled_rejected_total{kind=\"%s\"} %lu\n",
		    cache_kind_str[k], metrics.rejected[k]);
	render_evictions(b);
	evbuffer_add_printf(b,
	    "# HELP stapled_http_refused_total Requests refused before routing (400, 411, 413, 431, 505).\n"
	    "# TYPE stapled_http_refused_total counter\n"
	    "stapled_http_refused_total %lu\n"
	    "# HELP stapled_store_errors_total Verified answers the cache could not store.\n"
	    "# TYPE stapled_store_errors_total counter\n"
	    "stapled_store_errors_total %lu\n"
	    "# HELP stapled_store_map_full_total Verified answers not stored because the map was full.\n"
	    "# TYPE stapled_store_map_full_total counter\n"
	    "stapled_store_map_full_total %lu\n"
	    "# HELP stapled_store_damaged_total Damaged stores found and moved aside.\n"
	    "# TYPE stapled_store_damaged_total counter\n"
	    "stapled_store_damaged_total %lu\n"
	    "# HELP stapled_entries_purged_total Entries deleted by the purge, past nextUpdate by more than the grace period.\n"
	    "# TYPE stapled_entries_purged_total counter\n"
	    "stapled_entries_purged_total %lu\n"
	    "# HELP stapled_refresh_total Background refreshes by outcome.\n"
	    "# TYPE stapled_refresh_total counter\n"
	    "stapled_refresh_total{result=\"ok\"} %lu\n"
	    "stapled_refresh_total{result=\"failed\"} %lu\n"
	    "stapled_refresh_total{result=\"rate_limited\"} %lu\n",
	    metrics.http_errors, metrics.store_errors, metrics.store_map_full,
	    metrics.store_damaged, metrics.entries_purged, metrics.refresh_ok,
	    metrics.refresh_failed, metrics.refresh_rate_limited);
}

/* The stored entries' gauges, from the refresher's last pass over the store. */
static void
render_store(struct evbuffer *b, const struct refresh_stats *rs, time_t now)
{
	int	k;

	evbuffer_add_printf(b,
	    "# HELP stapled_cache_entries Stored entries by kind (last pass over the store).\n"
	    "# TYPE stapled_cache_entries gauge\n");
	for (k = 1; k < CACHE_KIND_MAX; k++)
		evbuffer_add_printf(b, "stapled_cache_entries{kind=\"%s\"} %zu\n",
		    cache_kind_str[k], rs->entries[k]);
	evbuffer_add_printf(b,
	    "# HELP stapled_earliest_next_update_seconds Seconds until the earliest nextUpdate of a valid entry (-1: none).\n"
	    "# TYPE stapled_earliest_next_update_seconds gauge\n"
	    "stapled_earliest_next_update_seconds %lld\n"
	    "# HELP stapled_entries_expiring Valid entries whose nextUpdate is within 6 h.\n"
	    "# TYPE stapled_entries_expiring gauge\n"
	    "stapled_entries_expiring %zu\n"
	    "# HELP stapled_entries_expired Entries past nextUpdate, no longer served.\n"
	    "# TYPE stapled_entries_expired gauge\n"
	    "stapled_entries_expired %zu\n"
	    "# HELP stapled_refresh_backlog Entries due for refresh and not yet started.\n"
	    "# TYPE stapled_refresh_backlog gauge\n"
	    "stapled_refresh_backlog %zu\n"
	    "# HELP stapled_refresh_inflight Refreshes in progress.\n"
	    "# TYPE stapled_refresh_inflight gauge\n"
	    "stapled_refresh_inflight %zu\n",
	    rs->earliest_next_update ? (long long)(rs->earliest_next_update - now) : -1LL,
	    rs->expiring, rs->expired, rs->backlog, rs->inflight);
}

/* One pool's upstreams: up, exchanges, failures by reason. */
static void
render_pool(struct evbuffer *b, const struct fetch_pool *pool)
{
	struct fetch_health	 fh[METRICS_MAX_UPSTREAMS];
	const char		*svc = fetch_pool_service(pool);
	size_t			 n, i, k;

	n = fetch_pool_health(pool, fh, METRICS_MAX_UPSTREAMS);
	for (i = 0; i < n; i++) {
		evbuffer_add_printf(b,
		    "stapled_upstream_up{service=\"%s\",upstream=\"%s\"} %d\n"
		    "stapled_upstream_requests_total{service=\"%s\",upstream=\"%s\"} %lu\n",
		    svc, fh[i].name, fh[i].up, svc, fh[i].name, fh[i].requests);
		for (k = 1; k < FETCH_ERR_MAX; k++)
			evbuffer_add_printf(b,
			    "stapled_upstream_failures_total{service=\"%s\",upstream=\"%s\",reason=\"%s\"} %lu\n",
			    svc, fh[i].name, fetch_err_str[k], fh[i].failures[k]);
	}
}

void
metrics_render(struct evbuffer *b, const struct refresh_stats *rs,
    struct fetch_pool *const *pools, size_t npools, time_t now)
{
	size_t	i;

	render_counters(b);
	render_store(b, rs, now);
	if (pools == NULL)
		return;
	evbuffer_add_printf(b,
	    "# HELP stapled_upstream_up Whether an upstream is out of cooldown.\n"
	    "# TYPE stapled_upstream_up gauge\n"
	    "# HELP stapled_upstream_requests_total Upstream exchanges started.\n"
	    "# TYPE stapled_upstream_requests_total counter\n"
	    "# HELP stapled_upstream_failures_total Upstream failures by reason.\n"
	    "# TYPE stapled_upstream_failures_total counter\n");
	for (i = 0; i < npools; i++)
		render_pool(b, pools[i]);
	evbuffer_add_printf(b,
	    "# HELP stapled_upstream_queued Fetches waiting behind max_upstream_inflight.\n"
	    "# TYPE stapled_upstream_queued gauge\n");
	for (i = 0; i < npools; i++)
		evbuffer_add_printf(b, "stapled_upstream_queued{service=\"%s\"} %zu\n",
		    fetch_pool_service(pools[i]), fetch_pool_queued(pools[i]));
}
