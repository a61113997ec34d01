/* SPDX-License-Identifier: Apache-2.0 */
/* The full map: each refused write counted, room made by evicting entries not in use, the state said once an interval. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/refresh/refresh_int.h"

/*
 * Each write the full map refuses evicts up to this many entries not in
 * use: a refused put of a new answer needs a few pages, and the pages a
 * delete frees are taken again by the second write transaction after it
 * (LMDB keeps the last commit's freed pages for its readers).
 */
#define REFRESH_FULL_EVICT	4

static void
full_said(struct refresh *r, time_t now)
{
	r->full.logged = now;
	r->full.refused_said = r->full.refused;
	r->full.evicted_said = r->full.evicted;
}

int
refresh_map_full(struct refresh *r, enum cache_kind kind, time_t now,
    const char *fmt, ...)
{
	char	msg[512];
	va_list	ap;
	int	n, first = r->full.since == 0;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	metrics.store_map_full_writes++;
	metrics.store_map_full_now = 1;
	if (first) {
		r->full.since = now;
		r->full.refused = r->full.evicted = 0;
		full_said(r, now);
	}
	r->full.last = now;
	r->full.refused++;
	for (n = 0; n < REFRESH_FULL_EVICT; n++)
		if (refresh_evict_idle(r, kind, now) == -1)
			break;
	r->full.evicted += (unsigned long)n;
	if (first)
		log_err("%s; entries not in use evicted to make room: %d (the "
		    "full map is said again at most every %d s)", msg, n,
		    REFRESH_FULL_LOG_S);
	else
		log_debug("%s; entries not in use evicted: %d", msg, n);
	return n;
}

/*
 * A pass's end: while the map is full, a line once an interval with what
 * it refused and evicted since the last; once no write was refused for an
 * interval, the map has room again.
 */
void
full_tick(struct refresh *r, time_t now)
{
	if (r->full.since == 0)
		return;
	if (now - r->full.last >= REFRESH_FULL_LOG_S) {
		log_info("store: the map has room again; full for %lld s, it "
		    "refused %lu write(s), and %lu entr%s not in use were "
		    "evicted", (long long)(r->full.last - r->full.since),
		    r->full.refused, r->full.evicted,
		    r->full.evicted == 1 ? "y" : "ies");
		r->full.since = 0;
		metrics.store_map_full_now = 0;
		return;
	}
	if (now - r->full.logged < REFRESH_FULL_LOG_S)
		return;
	log_warn("store: the map is still full: %lu write(s) refused and %lu "
	    "entr%s not in use evicted in the last %lld s; raise map_size_mb, "
	    "or lower max_entries", r->full.refused - r->full.refused_said,
	    r->full.evicted - r->full.evicted_said,
	    r->full.evicted - r->full.evicted_said == 1 ? "y" : "ies",
	    (long long)(now - r->full.logged));
	full_said(r, now);
}
