/* SPDX-License-Identifier: Apache-2.0 */
/* What the daemon tells of itself: upstream health and the refresh backlog for staplectl status, STATUS= lines for the service manager. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "cache/store.h"
#include "cache/writer.h"
#include "entry/conf.h"
#include "entry/kind.h"
#include "proxy/daemon/daemon.h"
#include "proxy/fetch/fetch.h"
#include "proxy/daemon/health.h"
#include "proxy/log.h"
#include "proxy/daemon/notify.h"
#include "proxy/refresh/refresh.h"
#include "proxy/service.h"
#include "proxy/status.h"
#include "proxy/daemon/store_ops.h"
#include "proxy/refresh/usage.h"

#define HEALTH_MAX_UPSTREAMS	64

/* "ocsp: primary (URL), mirror (URL); pccs: ..." for the ready and reload lines. */
char *
upstreams_line(struct gen *gen, char *buf, size_t len)
{
	char	one[UPSTREAMS_LINE_BYTES];
	size_t	id, off = 0;
	int	n;

	buf[0] = '\0';
	for (id = KIND_FIRST; id < CACHE_KIND_MAX && off < len; id++) {
		struct fetch_pool	*pool = svc_pool(gen_svc(gen, id));

		if (pool == NULL)
			continue;
		n = snprintf(buf + off, len - off, "%s%s: %s", off ? "; " : "",
		    fetch_pool_service(pool),
		    fetch_pool_describe(pool, one, sizeof(one)));
		if (n < 0)
			break;
		off += (size_t)n;
	}
	if (off == 0)
		snprintf(buf, len, "no upstreams");
	return buf;
}

/* The record was not written: a full map is said and makes room (usage_map_full). */
static void
health_unstored(struct daemon *d, const char *err, int map_full)
{
	if (map_full)
		(void)usage_map_full(refresh_usage(d->refresh), 0, time(NULL),
		    "recording upstream health: %s", err);
	else
		log_warn("recording upstream health: %s", err);
}

static void
health_landed(const struct cache_writer_res *res, void *arg)
{
	if (res->rc == -1)
		health_unstored(arg, res->err, res->map_full);
}

/* A spell of full map (usage_map_full), for `staplectl status`: null when none. */
static json_t *
health_map_full(const struct refresh_stats *rs)
{
	if (rs->full_since == 0)
		return json_null();
	return json_pack("{s:I, s:I, s:I, s:I}", "since",
	    (json_int_t)rs->full_since, "last_refused",
	    (json_int_t)rs->full_last, "refused", (json_int_t)rs->full_refused,
	    "evicted", (json_int_t)rs->full_evicted);
}

/*
 * Record what only the daemon knows (upstream health, refresh backlog, a
 * full map) in the cache's aux table, as JSON, so `staplectl status` can
 * show it.
 */
void
record_health(evutil_socket_t fd, short what, void *arg)
{
	struct daemon		*d = arg;
	struct fetch_health	 fh[HEALTH_MAX_UPSTREAMS];
	struct refresh_stats	 rs;
	struct timeval		 tv = { HEALTH_RECORD_S, 0 };
	struct fetch_pool	*pool;
	json_t			*root, *svcs, *ups, *u;
	char			*text;
	size_t			 id, i, n, k;
	unsigned long		 fails;

	(void)fd;
	(void)what;
	/* staplectl may have imported intermediates since: pick them up. */
	gen_learn_pool(d->gen);
	store_held(d);
	refresh_stats(d->refresh, &rs);
	root = json_pack("{s:i, s:s, s:I, s:I, s:I, s:I}", "pid", (int)getpid(),
	    "version", PACKAGE_VERSION, "started", (json_int_t)d->started,
	    "recorded", (json_int_t)time(NULL), "refresh_backlog",
	    (json_int_t)rs.backlog, "refresh_inflight", (json_int_t)rs.inflight);
	svcs = json_object();
	for (id = KIND_FIRST; root != NULL && svcs != NULL && id < CACHE_KIND_MAX; id++) {
		pool = svc_pool(gen_svc(d->gen, id));
		n = fetch_pool_health(pool, fh, HEALTH_MAX_UPSTREAMS);
		ups = json_array();
		for (i = 0; ups != NULL && i < n; i++) {
			for (fails = 0, k = 1; k < FETCH_ERR_MAX; k++)
				fails += fh[i].failures[k];
			u = json_pack("{s:s, s:s, s:b, s:b, s:i, s:I, s:I, s:I}",
			    "name", fh[i].name, "url", fh[i].url, "up", fh[i].up,
			    "asked", fh[i].asked,
			    "consecutive_failures", (int)fh[i].consecutive_failures,
			    "last_failure", (json_int_t)fh[i].last_failure_unix,
			    "requests", (json_int_t)fh[i].requests,
			    "failures", (json_int_t)fails);
			json_array_append_new(ups, u);
		}
		json_object_set_new(svcs, fetch_pool_service(pool), ups);
	}
	if (root != NULL && svcs != NULL)
		json_object_set_new(root, "upstreams", svcs);
	else
		json_decref(svcs);
	if (root != NULL)
		json_object_set_new(root, "map_full", health_map_full(&rs));
	/* While writes are held the record waits too (said once, above). */
	if (root != NULL && d->held == CACHE_CAUSE_NONE &&
	    (text = json_dumps(root, JSON_COMPACT)) != NULL) {
		if (d->writer == NULL || cache_writer_aux_put(d->writer, "daemon",
		    (const uint8_t *)text, strlen(text), health_landed,
		    d) == -1) {
			if (cache_aux_put(d->cache, "daemon", (const uint8_t *)text,
			    strlen(text)) == -1)
				health_unstored(d, cache_strerror(d->cache),
				    cache_map_full(d->cache));
		}
		free(text);
	}
	json_decref(root);
	if (!d->stopping) {
		send_status(d, "");
		evtimer_add(d->health_ev, &tv);
	}
}

/* One STATUS= line (with `head`, e.g. "READY=1\n", in the same datagram). */
void
send_status(struct daemon *d, const char *head)
{
	struct fetch_pool	*pools[CACHE_KIND_MAX] = { NULL };
	struct refresh_stats	 rs;
	struct status_summary	 sum;
	char			 line[NOTIFY_MAX_BYTES - 32];
	size_t			 id;

	if (!notify_enabled())
		return;
	refresh_stats(d->refresh, &rs);
	for (id = KIND_FIRST; id < CACHE_KIND_MAX; id++)
		pools[id] = svc_pool(gen_svc(d->gen, id));
	status_summarize(&sum, &rs, pools, CACHE_KIND_MAX, time(NULL));
	status_line(&sum, line, sizeof(line));
	notify_send("%sSTATUS=%s", head, line);
}
