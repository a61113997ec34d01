/* Process-wide counters and their Prometheus exposition. */
#include <config.h>

#include <event2/buffer.h>

#include "cache/record.h"
#include "proxy/metrics.h"

struct metrics	metrics;

const char *const metrics_result_str[RES_MAX] = {
	[RES_HIT] = "hit",
	[RES_MISS] = "miss",
	[RES_UNVERIFIABLE] = "unverifiable",
	[RES_FALLBACK] = "fallback",
	[RES_NOT_MODIFIED] = "not_modified",
	[RES_FINAL] = "final",
	[RES_DEFINITIVE] = "definitive",
	[RES_TRYLATER] = "trylater",
	[RES_MALFORMED] = "malformed",
	[RES_HTTP_ERROR] = "http_error",
};

const char *const metrics_route_str[ROUTE_MAX] = {
	[ROUTE_OCSP_POST] = "ocsp_post",
	[ROUTE_OCSP_GET] = "ocsp_get",
	[ROUTE_RIM] = "rim",
	[ROUTE_PCCS] = "pccs",
	[ROUTE_KDS] = "kds",
};

void
metrics_render_counters(struct evbuffer *b)
{
	int	r, k;

	evbuffer_add_printf(b,
	    "# HELP stapled_requests_total Client requests by route and result.\n"
	    "# TYPE stapled_requests_total counter\n");
	for (r = 0; r < ROUTE_MAX; r++)
		for (k = 0; k < RES_MAX; k++)
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
	evbuffer_add_printf(b,
	    "# HELP stapled_http_refused_total Requests refused before routing (400, 411, 413, 431, 505).\n"
	    "# TYPE stapled_http_refused_total counter\n"
	    "stapled_http_refused_total %lu\n"
	    "# HELP stapled_store_errors_total Verified answers the cache could not store.\n"
	    "# TYPE stapled_store_errors_total counter\n"
	    "stapled_store_errors_total %lu\n"
	    "# HELP stapled_refresh_total Background refreshes by outcome.\n"
	    "# TYPE stapled_refresh_total counter\n"
	    "stapled_refresh_total{result=\"ok\"} %lu\n"
	    "stapled_refresh_total{result=\"failed\"} %lu\n"
	    "stapled_refresh_total{result=\"rate_limited\"} %lu\n",
	    metrics.http_errors, metrics.store_errors, metrics.refresh_ok,
	    metrics.refresh_failed, metrics.refresh_rate_limited);
}
