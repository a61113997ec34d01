/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's state in a few figures (entries, upstreams up, the earliest expiry) for STATUS= and /readyz, from what /metrics shows. */
#ifndef PROXY_STATUS_H
#define PROXY_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "entry/conf.h"

struct evbuffer;
struct fetch_pool;
struct refresh_stats;

/* One service's upstreams. */
struct status_svc {
	const char	*service;	/* borrowed from the pool */
	size_t		 up, total;	/* upstreams out of cooldown, configured */
	size_t		 unasked;	/* of total: no exchange ended yet */
};

struct status_summary {
	int		walked;		/* the refresher finished a pass: counts are known */
	size_t		entries;	/* stored, every kind */
	size_t		expired;	/* past nextUpdate, not served */
	int64_t		valid_left_s;	/* until the earliest nextUpdate of a valid entry; -1 none */
	struct status_svc svc[CACHE_KIND_MAX];
	size_t		nsvc;
	int		saturated;	/* enum metrics_saturation of the public listeners */
	unsigned long	conns, max_conns;	/* open on them, and their budget */
	unsigned long	admin_conns;	/* open on the admin listeners */
	int		store_held;	/* why the store takes no writes (enum cache_cause); 0 none */
	/* A spell of full map: for how long, writes refused, entries evicted; full_s -1 none. */
	int64_t		full_s;
	int64_t		full_last_s;	/* since its latest refused write */
	unsigned long	full_refused, full_evicted;
};

/*
 * Sum up rs (the refresher's last pass, borrowed) and the npools upstream
 * pools (borrowed; at most CACHE_KIND_MAX are used) at now. Scans nothing:
 * the figures are those metrics_render prints. Cannot fail.
 */
void	status_summarize(struct status_summary *, const struct refresh_stats *rs,
	    struct fetch_pool *const *pools, size_t npools, time_t now);
/*
 * One line for STATUS= ("12 entries, earliest expiry in 5h03m; upstreams
 * up: ocsp 2/2 rim 0/1 (1 not asked yet) ...").
 */
void	status_line(const struct status_summary *, char *buf, size_t len);
/*
 * The /readyz detail: one "name: value" line per figure, appended to b.
 * Upstreams no exchange has ended with yet are said to be not asked yet,
 * not down. Saturated public listeners are named, and do not make it not
 * ready; nor does a store that takes no writes (named, with why), nor a
 * full map (every stored entry is still served).
 */
void	status_detail(const struct status_summary *, struct evbuffer *b);

#endif
