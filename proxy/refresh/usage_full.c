/* SPDX-License-Identifier: Apache-2.0 */
/* The full map: each refused write counted, room made by evicting entries not in use, the state said once an interval. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/refresh/usage.h"
#include "proxy/refresh/usage_int.h"

/*
 * Each write the full map refuses evicts up to this many entries not in
 * use: a refused put of a new answer needs a few pages, and the pages a
 * delete frees are taken again by the second write transaction after it
 * (LMDB keeps the last commit's freed pages for its readers).
 */
#define REFRESH_FULL_EVICT	4

static void
full_said(struct usage *u, time_t now)
{
	u->full_logged = now;
	u->full_refused_said = u->full.refused;
	u->full_evicted_said = u->full.evicted;
}

int
usage_map_full(struct usage *u, enum cache_kind kind, time_t now,
    const char *fmt, ...)
{
	char	msg[512];
	va_list	ap;
	int	n, first = u->full.since == 0;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	metrics.store_map_full_writes++;
	metrics.store_map_full_now = 1;
	if (first) {
		u->full.since = now;
		u->full.refused = u->full.evicted = 0;
		full_said(u, now);
	}
	u->full.last = now;
	u->full.refused++;
	for (n = 0; n < REFRESH_FULL_EVICT; n++)
		if (usage_evict_idle(u, kind, now) == -1)
			break;
	u->full.evicted += (unsigned long)n;
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
usage_full_tick(struct usage *u, time_t now)
{
	if (u->full.since == 0)
		return;
	if (now - u->full.last >= REFRESH_FULL_LOG_S) {
		log_info("store: the map has room again; full for %lld s, it "
		    "refused %lu write(s), and %lu entr%s not in use were "
		    "evicted", (long long)(u->full.last - u->full.since),
		    u->full.refused, u->full.evicted,
		    u->full.evicted == 1 ? "y" : "ies");
		u->full.since = 0;
		metrics.store_map_full_now = 0;
		return;
	}
	if (now - u->full_logged < REFRESH_FULL_LOG_S)
		return;
	log_warn("store: the map is still full: %lu write(s) refused and %lu "
	    "entr%s not in use evicted in the last %lld s; raise map_size_mb, "
	    "or lower max_entries", u->full.refused - u->full_refused_said,
	    u->full.evicted - u->full_evicted_said,
	    u->full.evicted - u->full_evicted_said == 1 ? "y" : "ies",
	    (long long)(now - u->full_logged));
	full_said(u, now);
}

void
usage_full_get(const struct usage *u, struct usage_full *f)
{
	*f = u->full;
}
