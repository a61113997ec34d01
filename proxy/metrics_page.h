/* SPDX-License-Identifier: Apache-2.0 */
/* What reads the other modules' state for the metrics (metrics.h holds the counters): each request's note (http.c) and the /metrics page. */
#ifndef PROXY_METRICS_PAGE_H
#define PROXY_METRICS_PAGE_H

#include <stddef.h>
#include <time.h>

#include "proxy/metrics.h"

struct evbuffer;
struct fetch_pool;
struct http_req;
struct refresh_stats;

/*
 * Note on req how it is being answered, before the answer is queued (the
 * request may be gone after): the access log prints the result, and a
 * hit's latency goes into hit_latency when the answer is queued.
 */
struct metrics_note {
	unsigned		route;	/* METRICS_ROUTE(kind, i) */
	enum metrics_result	result;
};
void	metrics_note(struct http_req *, unsigned route, enum metrics_result);
/* req's note, or NULL when none was made (refused before routing, /metrics). */
const struct metrics_note *metrics_note_get(const struct http_req *);
/* For http_reply's callback: a noted hit's latency since it was parsed. */
void	metrics_on_reply(const struct http_req *);

/*
 * Append the whole /metrics page in exposition format (version 0.0.4):
 * stapled_build_info, the process_* metrics (from /proc/self, left out
 * where it cannot be read; the start time from metrics_mark_start), the
 * counters and histograms of the metrics block, the store's gauges from
 * rs (the refresher's last pass, borrowed; deadlines relative to now),
 * and the health of each of the npools upstream pools (borrowed; a NULL
 * entry is skipped; none and no upstream section when pools is NULL).
 * Cannot fail short of evbuffer's allocation failures, which leave the
 * page cut short.
 */
void	metrics_render(struct evbuffer *, const struct refresh_stats *rs,
	    struct fetch_pool *const *pools, size_t npools, time_t now);

#endif
