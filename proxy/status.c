/* SPDX-License-Identifier: Apache-2.0 */
/* The figures STATUS= and /readyz give: entries, expired entries, the earliest expiry, upstreams up per service. */
#include <config.h>	/* autoconf; "config.h" here would be proxy/config.h */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "cache/store.h"
#include "proxy/fetch/fetch.h"
#include "proxy/metrics.h"
#include "proxy/refresh/refresh.h"
#include "proxy/status.h"

void
status_summarize(struct status_summary *s, const struct refresh_stats *rs,
    struct fetch_pool *const *pools, size_t npools, time_t now)
{
	struct fetch_health	fh[METRICS_MAX_UPSTREAMS];
	size_t			i, k, n;

	memset(s, 0, sizeof(*s));
	s->walked = rs->complete;
	for (k = 1; k < CACHE_KIND_MAX; k++)
		s->entries += rs->entries[k];
	s->expired = rs->expired;
	s->valid_left_s = rs->earliest_next_update != 0 ?
	    rs->earliest_next_update - (int64_t)now : -1;
	for (i = 0; i < npools && i < CACHE_KIND_MAX; i++) {
		if (pools[i] == NULL)
			continue;
		n = fetch_pool_health(pools[i], fh, METRICS_MAX_UPSTREAMS);
		s->svc[s->nsvc].service = fetch_pool_service(pools[i]);
		s->svc[s->nsvc].total = n;
		for (k = 0; k < n; k++) {
			s->svc[s->nsvc].up += fh[k].up != 0;
			s->svc[s->nsvc].unasked += fh[k].asked == 0;
		}
		s->nsvc++;
	}
	s->saturated = metrics.http_saturated;
	s->conns = metrics.http_conns;
	s->max_conns = metrics.http_max_conns;
	s->admin_conns = metrics.http_admin_conns;
	s->store_held = metrics.store_read_only;
	s->full_s = rs->full_since != 0 ? (int64_t)now - rs->full_since : -1;
	s->full_last_s = (int64_t)now - rs->full_last;
	s->full_refused = rs->full_refused;
	s->full_evicted = rs->full_evicted;
}

/* "5h03m", "42s", "none" (no valid entry). */
static void
span(char *buf, size_t len, int64_t s)
{
	if (s < 0)
		snprintf(buf, len, "none");
	else if (s < 60)
		snprintf(buf, len, "%" PRId64 "s", s);
	else if (s < 86400)
		snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m", s / 3600,
		    s % 3600 / 60);
	else
		snprintf(buf, len, "%" PRId64 "d%02" PRId64 "h", s / 86400,
		    s % 86400 / 3600);
}

void
status_line(const struct status_summary *s, char *buf, size_t len)
{
	char	left[32];
	size_t	i, o;
	int	n;

	span(left, sizeof(left), s->valid_left_s);
	if (s->walked)
		n = snprintf(buf, len, "%zu entries (%zu expired), earliest "
		    "expiry in %s; upstreams up:", s->entries, s->expired, left);
	else
		n = snprintf(buf, len, "store not yet walked; upstreams up:");
	for (i = 0, o = n > 0 ? (size_t)n : 0; i < s->nsvc && o < len; i++) {
		n = snprintf(buf + o, len - o, " %s %zu/%zu", s->svc[i].service,
		    s->svc[i].up, s->svc[i].total);
		if (n >= 0 && s->svc[i].unasked > 0 && (size_t)n < len - o)
			n += snprintf(buf + o + n, len - o - n, " (%zu not asked "
			    "yet)", s->svc[i].unasked);
		if (n < 0)
			break;
		o += (size_t)n;
	}
}

/*
 * "service ocsp: 0/1 upstreams up (1 not asked yet)": an upstream never
 * asked is not down (an air-gapped site asks none); "all in cooldown"
 * only when every one was asked and none is up.
 */
static void
svc_detail(const struct status_svc *v, struct evbuffer *b)
{
	evbuffer_add_printf(b, "service %s: %zu/%zu upstreams up", v->service,
	    v->up, v->total);
	if (v->unasked > 0)
		evbuffer_add_printf(b, " (%zu not asked yet)\n", v->unasked);
	else if (v->total > 0 && v->up == 0)
		evbuffer_add_printf(b, " (all in cooldown: only cached entries "
		    "are served)\n");
	else
		evbuffer_add_printf(b, "\n");
}

void
status_detail(const struct status_summary *s, struct evbuffer *b)
{
	size_t	i;

	if (s->walked)
		evbuffer_add_printf(b, "entries: %zu\nexpired: %zu\n"
		    "earliest_expiry_s: %" PRId64 "\n", s->entries, s->expired,
		    s->valid_left_s);
	else
		evbuffer_add_printf(b, "entries: unknown (store not yet walked)\n");
	if (s->full_s >= 0)
		evbuffer_add_printf(b, "store: map full for %" PRId64 " s (the "
		    "last write refused %" PRId64 " s ago): %lu write(s) refused, "
		    "%lu entr%s not in use evicted to make room; stored entries "
		    "are served, new answers may not be stored\n", s->full_s,
		    s->full_last_s, s->full_refused, s->full_evicted,
		    s->full_evicted == 1 ? "y" : "ies");
	for (i = 0; i < s->nsvc; i++)
		svc_detail(&s->svc[i], b);
	/*
	 * Saturation stays ready: every client the listeners took is served,
	 * and a probe failing here would let a few hundred idle connections
	 * take each mirror out of its pool in turn.
	 */
	evbuffer_add_printf(b, "public_listeners: %s (%lu/%lu connections)%s\n"
	    "admin_connections: %lu\n", s->saturated == METRICS_SAT_FD_LIMIT ?
	    "saturated, out of file descriptors" :
	    s->saturated == METRICS_SAT_MAX_CONNECTIONS ?
	    "saturated, at max_connections" : "accepting", s->conns,
	    s->max_conns, s->saturated != METRICS_SAT_NONE ?
	    "; ready all the same" : "", s->admin_conns);
	/* Read-only stays ready: what the store holds is served. */
	if (s->store_held > 0 && s->store_held < CACHE_CAUSE_MAX)
		evbuffer_add_printf(b, "store: read-only (%s): serving what it "
		    "holds, storing nothing\n", cache_cause_str[s->store_held]);
	else
		evbuffer_add_printf(b, "store: writing\n");
}
