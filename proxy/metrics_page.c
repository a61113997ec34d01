/* SPDX-License-Identifier: Apache-2.0 */
/* What reads the other modules' state for the metrics: the note each request carries (http.c) for the hit histogram and the access log, and the /metrics page in Prometheus' exposition format (build, process, counters, store gauges, upstream health). */
#include <config.h>

#include <sys/resource.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <openssl/crypto.h>

#include "cache/record.h"
#include "entry/kinds.h"
#include "cache/store.h"
#include "proxy/fetch/fetch.h"
#include "proxy/http/http.h"
#include "proxy/metrics.h"
#include "proxy/metrics_page.h"
#include "proxy/refresh/refresh.h"

/*
 * One note per (route, result), so a note is a pointer that outlives any
 * request; each is filled when first used (always with the same values).
 */
static struct metrics_note notes[METRICS_ROUTE_MAX][METRICS_RES_MAX];

void
metrics_note(struct http_req *req, unsigned route,
    enum metrics_result result)
{
	struct metrics_note	*n;

	if (route >= METRICS_ROUTE_MAX || result >= METRICS_RES_MAX)
		return;
	n = &notes[route][result];
	n->route = route;
	n->result = result;
	http_req_set_note(req, n);
}

const struct metrics_note *
metrics_note_get(const struct http_req *req)
{
	return http_req_note(req);
}

void
metrics_on_reply(const struct http_req *req)
{
	const struct metrics_note	*n = http_req_note(req);
	int64_t				 parsed = http_req_parsed_us(req);

	if (n == NULL || n->result != METRICS_RES_HIT || parsed <= 0)
		return;
	metrics_hist_observe(&metrics.hit_latency[metrics_route_kind(n->route)],
	    METRICS_HIST_HIT, (double)(metrics_now_us() - parsed) / 1e6);
}

/* Whether route can answer with result: only the names a route's clients see. */
static int
route_has(unsigned route, enum metrics_result result)
{
	const struct metrics_kind	*mk = metrics_kind(metrics_route_kind(route));

	if (metrics_route_str(route) == NULL)
		return 0;
	if (result == METRICS_RES_TRYLATER || result == METRICS_RES_UNAVAILABLE)
		return result == mk->failed;
	if (result == METRICS_RES_MALFORMED)
		return mk->malformed;
	return 1;
}

/* stapled_build_info: the versions this process runs with. */
static void
render_build(struct evbuffer *b)
{
	evbuffer_add_printf(b,
	    "# HELP stapled_build_info The versions of stapled and of the libraries it runs with.\n"
	    "# TYPE stapled_build_info gauge\n"
	    "stapled_build_info{version=\"%s\",openssl=\"%s\",libcurl=\"%s\",lmdb=\"%s\"} 1\n",
	    PACKAGE_VERSION, OpenSSL_version(OPENSSL_VERSION_STRING),
	    fetch_curl_version(), cache_lib_version());
}

/* open fds, by listing /proc/self/fd (the listing's own fd included); -1 unknown. */
static long
count_fds(void)
{
	DIR		*d;
	struct dirent	*e;
	long		 n = 0;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* utime and stime (clock ticks) and rss (pages) from /proc/self/stat; 0 or -1. */
static int
read_stat(unsigned long long *ticks, long *rss_pages)
{
	FILE			*f;
	char			 buf[1024], *p;
	size_t			 n;
	unsigned long long	 ut, st;

	if ((f = fopen("/proc/self/stat", "re")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after the command name, which may hold spaces and parentheses: field 3 on */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
	    "%*d %*d %*d %*d %*d %*d %*u %*u %ld", &ut, &st, rss_pages) != 3)
		return -1;
	*ticks = ut + st;
	return 0;
}

/* Prometheus' standard process metrics, from /proc/self; each left out when unknown. */
static void
render_process(struct evbuffer *b)
{
	unsigned long long	 ticks;
	long			 rss, tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	long			 fds = count_fds();
	struct rlimit		 rl;

	if (tck > 0 && page > 0 && read_stat(&ticks, &rss) == 0)
		evbuffer_add_printf(b,
		    "# HELP process_cpu_seconds_total User and system CPU time spent in seconds.\n"
		    "# TYPE process_cpu_seconds_total counter\n"
		    "process_cpu_seconds_total %.2f\n"
		    "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
		    "# TYPE process_resident_memory_bytes gauge\n"
		    "process_resident_memory_bytes %lld\n",
		    (double)ticks / (double)tck, (long long)rss * page);
	if (metrics.start_time > 0)
		evbuffer_add_printf(b,
		    "# HELP process_start_time_seconds Start time of the process since the Unix epoch in seconds.\n"
		    "# TYPE process_start_time_seconds gauge\n"
		    "process_start_time_seconds %.2f\n", metrics.start_time);
	if (fds >= 0)
		evbuffer_add_printf(b,
		    "# HELP process_open_fds Number of open file descriptors.\n"
		    "# TYPE process_open_fds gauge\n"
		    "process_open_fds %ld\n", fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		evbuffer_add_printf(b,
		    "# HELP process_max_fds Maximum number of open file descriptors.\n"
		    "# TYPE process_max_fds gauge\n"
		    "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
}

/* The verdict on the last reload, as Prometheus names its own (prometheus_config_last_reload_*). */
static void
render_reload(struct evbuffer *b)
{
	evbuffer_add_printf(b,
	    "# HELP stapled_config_last_reload_successful Whether the last configuration reload (SIGHUP) succeeded; 1 after start.\n"
	    "# TYPE stapled_config_last_reload_successful gauge\n"
	    "stapled_config_last_reload_successful %d\n"
	    "# HELP stapled_config_last_reload_success_timestamp_seconds When the configuration was last loaded (start or reload), Unix seconds.\n"
	    "# TYPE stapled_config_last_reload_success_timestamp_seconds gauge\n"
	    "stapled_config_last_reload_success_timestamp_seconds %lld\n",
	    metrics.config_reload_ok, (long long)metrics.config_reload_ok_at);
}

/* One counter per service (a service is a cache kind), from v[kind]. */
static void
render_per_kind(struct evbuffer *b, const char *name, const char *help,
    const unsigned long *v)
{
	int	k;

	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s counter\n", name, help,
	    name);
	for (k = 1; k < CACHE_KIND_MAX; k++)
		evbuffer_add_printf(b, "%s{service=\"%s\"} %lu\n", name,
		    cache_kind_str[k], v[k]);
}

/* max_entries, new_entry_rate_per_s and the full map, per service. */
static void
render_evictions(struct evbuffer *b)
{
	render_per_kind(b, "stapled_evictions_total",
	    "Entries deleted to stay within max_entries, probation (asked once) first, least recently asked first.",
	    metrics.evictions);
	render_per_kind(b, "stapled_store_capped_total",
	    "Verified answers passed on but not stored: max_entries reached, nothing evictable.",
	    metrics.store_capped);
	render_per_kind(b, "stapled_store_limited_total",
	    "Verified answers passed on but not stored: new entries over new_entry_rate_per_s.",
	    metrics.store_limited);
	render_per_kind(b, "stapled_store_full_evictions_total",
	    "Entries not in use deleted to make room in a full map.",
	    metrics.full_evictions);
}

/*
 * Damage by where it was found: a store moved aside (where="store"), or
 * one record that failed its own check, by the read that met it.
 */
static void
render_damaged(struct evbuffer *b)
{
	int	w;

	evbuffer_add_printf(b,
	    "# HELP stapled_store_damaged_total Damage found: stores moved aside (where=\"store\"), and records that failed their own check, removed, by the read that found them.\n"
	    "# TYPE stapled_store_damaged_total counter\n");
	for (w = 0; w < CACHE_FOUND_MAX; w++)
		evbuffer_add_printf(b, "stapled_store_damaged_total{where=\"%s\"} %lu\n",
		    cache_found_str[w], metrics.store_damaged[w]);
}

/* One histogram per service (cache kind) from the metrics block. */
static void
render_kind_hists(struct evbuffer *b, const char *name, const char *help,
    const struct metrics_hist *h, enum metrics_hist_kind kind)
{
	char	labels[64];
	int	k;

	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name,
	    help, name);
	for (k = 1; k < CACHE_KIND_MAX; k++) {
		snprintf(labels, sizeof(labels), "service=\"%s\"", cache_kind_str[k]);
		metrics_hist_render(b, name, labels, &h[k], kind);
	}
}

/* The counters of the metrics block. */
static void
render_counters(struct evbuffer *b)
{
	const struct metrics_kind	*mk;
	unsigned			 r;
	size_t				 i;
	int				 k;

	evbuffer_add_printf(b,
	    "# HELP stapled_requests_total Client requests by route and result.\n"
	    "# TYPE stapled_requests_total counter\n");
	for (r = 0; r < METRICS_ROUTE_MAX; r++)
		for (k = 0; k < METRICS_RES_MAX; k++)
			if (route_has(r, k))
				evbuffer_add_printf(b,
			    "stapled_requests_total{route=\"%s\",result=\"%s\"} %lu\n",
			    metrics_route_str(r), metrics_result_str[k],
			    metrics.requests[r][k]);
	evbuffer_add_printf(b,
	    "# HELP stapled_verify_failures_total Upstream answers refused by verification.\n"
	    "# TYPE stapled_verify_failures_total counter\n");
	for (k = 1; k < CACHE_KIND_MAX; k++)
		for (mk = metrics_kind(k), i = 1; mk != NULL &&
		    i < mk->nverify_reasons && i < METRICS_VERIFY_REASONS; i++)
			evbuffer_add_printf(b,
			    "stapled_verify_failures_total{kind=\"%s\",reason=\"%s\"} %lu\n",
			    cache_kind_str[k], mk->verify_reasons[i],
			    metrics.verify_failures[k][i]);
	evbuffer_add_printf(b,
	    "# HELP stapled_rejected_total Upstream answers refused before storing, by kind.\n"
	    "# TYPE stapled_rejected_total counter\n");
	for (k = 1; k < CACHE_KIND_MAX; k++)
		evbuffer_add_printf(b, "stapled_rejected_total{kind=\"%s\"} %lu\n",
		    cache_kind_str[k], metrics.rejected[k]);
	render_evictions(b);
	evbuffer_add_printf(b,
	    "# HELP stapled_http_connections Client connections open, by listener kind.\n"
	    "# TYPE stapled_http_connections gauge\n"
	    "stapled_http_connections{listener=\"public\"} %lu\n"
	    "stapled_http_connections{listener=\"admin\"} %lu\n"
	    "# HELP stapled_http_saturated 1 while the public listeners pause (max_connections or the fd limit).\n"
	    "# TYPE stapled_http_saturated gauge\n"
	    "stapled_http_saturated %d\n", metrics.http_conns,
	    metrics.http_admin_conns, metrics.http_saturated != METRICS_SAT_NONE);
	evbuffer_add_printf(b,
	    "# HELP stapled_http_refused_total Requests refused before routing (400, 411, 413, 414, 431, 501, 505).\n"
	    "# TYPE stapled_http_refused_total counter\n"
	    "stapled_http_refused_total %lu\n"
	    "# HELP stapled_store_errors_total Verified answers the cache could not store.\n"
	    "# TYPE stapled_store_errors_total counter\n"
	    "stapled_store_errors_total %lu\n"
	    "# HELP stapled_store_map_full_total Verified answers not stored because the map was full.\n"
	    "# TYPE stapled_store_map_full_total counter\n"
	    "stapled_store_map_full_total %lu\n"
	    "# HELP stapled_store_map_full_writes_total Writes of any kind (answers, refresh schedules, hits, the status record) the full map refused.\n"
	    "# TYPE stapled_store_map_full_writes_total counter\n"
	    "stapled_store_map_full_writes_total %lu\n"
	    "# HELP stapled_store_map_full 1 while the map is full: a write was refused for it within the last minute.\n"
	    "# TYPE stapled_store_map_full gauge\n"
	    "stapled_store_map_full %d\n"
	    "# HELP stapled_lookups_total Lookups of client requests with lookup_threads set, by where they ran: threads while lookups wait for the disk.\n"
	    "# TYPE stapled_lookups_total counter\n"
	    "stapled_lookups_total{where=\"loop\"} %lu\n"
	    "stapled_lookups_total{where=\"thread\"} %lu\n"
	    "# HELP stapled_entries_purged_total Entries deleted by the purge, past nextUpdate by more than the grace period.\n"
	    "# TYPE stapled_entries_purged_total counter\n"
	    "stapled_entries_purged_total %lu\n"
	    "# HELP stapled_refresh_total Background refreshes by outcome.\n"
	    "# TYPE stapled_refresh_total counter\n"
	    "stapled_refresh_total{result=\"ok\"} %lu\n"
	    "stapled_refresh_total{result=\"failed\"} %lu\n"
	    "stapled_refresh_total{result=\"rate_limited\"} %lu\n",
	    metrics.http_errors, metrics.store_errors, metrics.store_map_full,
	    metrics.store_map_full_writes, metrics.store_map_full_now,
	    metrics.lookups_loop, metrics.lookups_thread,
	    metrics.entries_purged, metrics.refresh_ok,
	    metrics.refresh_failed, metrics.refresh_rate_limited);
	render_damaged(b);
	evbuffer_add_printf(b,
	    "# HELP stapled_store_salvaged_total Entries verified again and carried from damaged stores moved aside.\n"
	    "# TYPE stapled_store_salvaged_total counter\n"
	    "stapled_store_salvaged_total %lu\n", metrics.store_salvaged);
	evbuffer_add_printf(b,
	    "# HELP stapled_store_read_only 1 while the store takes no writes (opened read-only: a read-only file system or data.mdb not writable; no space left on device; or lock.mdb not shared), serving what it holds.\n"
	    "# TYPE stapled_store_read_only gauge\n"
	    "stapled_store_read_only %d\n", metrics.store_read_only != 0);
	render_kind_hists(b, "stapled_hit_latency_seconds", "Cache hits, from "
	    "the request parsed to the answer queued.", metrics.hit_latency,
	    METRICS_HIST_HIT);
	render_kind_hists(b, "stapled_verify_seconds", "Verification of one "
	    "upstream answer, by service.", metrics.verify_time,
	    METRICS_HIST_VERIFY);
}

/* stapled_tls_handshake_failures_total, every reason of every TLS listener. */
static void
render_tls(struct evbuffer *b)
{
	size_t	i;
	int	r;

	if (metrics.ntls == 0)
		return;
	evbuffer_add_printf(b,
	    "# HELP stapled_tls_handshake_failures_total TLS handshakes that failed, by listener and reason.\n"
	    "# TYPE stapled_tls_handshake_failures_total counter\n");
	for (i = 0; i < metrics.ntls; i++)
		for (r = 0; r < METRICS_TLS_FAIL_MAX; r++)
			evbuffer_add_printf(b, "stapled_tls_handshake_failures_total"
			    "{listener=\"%s\",reason=\"%s\"} %lu\n",
			    metrics.tls[i].name, metrics_tls_fail_str[r],
			    metrics.tls[i].handshake_failures[r]);
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
	    "# HELP stapled_refresh_backlog Entries the last pass found due and not yet started (waiting for a token or a slot).\n"
	    "# TYPE stapled_refresh_backlog gauge\n"
	    "stapled_refresh_backlog %zu\n"
	    "# HELP stapled_refresh_inflight Refreshes in progress.\n"
	    "# TYPE stapled_refresh_inflight gauge\n"
	    "stapled_refresh_inflight %zu\n",
	    rs->earliest_next_update ? (long long)(rs->earliest_next_update - now) : -1LL,
	    rs->expiring, rs->expired, rs->backlog, rs->inflight);
	evbuffer_add_printf(b,
	    "# HELP stapled_store_map_bytes The store's map size (map_size_mb; last pass over the store).\n"
	    "# TYPE stapled_store_map_bytes gauge\n"
	    "stapled_store_map_bytes %zu\n"
	    "# HELP stapled_store_used_bytes Pages data.mdb holds up to its high-water mark (last pass).\n"
	    "# TYPE stapled_store_used_bytes gauge\n"
	    "stapled_store_used_bytes %zu\n"
	    "# HELP stapled_store_free_bytes Of those, pages on LMDB's free list, for later writes (last pass). Writes have map - used + free.\n"
	    "# TYPE stapled_store_free_bytes gauge\n"
	    "stapled_store_free_bytes %zu\n",
	    rs->room.map_bytes, rs->room.used_bytes, rs->room.free_bytes);
	evbuffer_add_printf(b,
	    "# HELP stapled_oldest_entry_remaining_seconds Seconds until the earliest nextUpdate of a valid entry, per service (none: no valid entry).\n"
	    "# TYPE stapled_oldest_entry_remaining_seconds gauge\n");
	for (k = 1; k < CACHE_KIND_MAX; k++)
		if (rs->earliest_by_kind[k] != 0)
			evbuffer_add_printf(b,
			    "stapled_oldest_entry_remaining_seconds{service=\"%s\"} %lld\n",
			    cache_kind_str[k],
			    (long long)(rs->earliest_by_kind[k] - now));
}

/*
 * Each service's entries by state, a sample for every service (0 too), so
 * that a service whose every wanted entry has expired shows as such; and
 * the newest import, at a store that holds one.
 */
static void
render_service_entries(struct evbuffer *b, const struct refresh_stats *rs)
{
	int	k;

	evbuffer_add_printf(b,
	    "# HELP stapled_service_entries A service's entries by state (last pass over the store): valid (served), expired (past nextUpdate, asked for within idle_expire_s), expired_idle (past nextUpdate, not asked for: left to expire).\n"
	    "# TYPE stapled_service_entries gauge\n");
	for (k = 1; k < CACHE_KIND_MAX; k++)
		evbuffer_add_printf(b,
		    "stapled_service_entries{service=\"%s\",state=\"valid\"} %zu\n"
		    "stapled_service_entries{service=\"%s\",state=\"expired\"} %zu\n"
		    "stapled_service_entries{service=\"%s\",state=\"expired_idle\"} %zu\n",
		    cache_kind_str[k], rs->valid_by_kind[k],
		    cache_kind_str[k], rs->expired_by_kind[k],
		    cache_kind_str[k], rs->entries[k] - rs->valid_by_kind[k] -
		    rs->expired_by_kind[k]);
	evbuffer_add_printf(b,
	    "# HELP stapled_last_import_timestamp_seconds When staplectl import stored the newest entry the store holds from an import, Unix seconds (none: no such entry).\n"
	    "# TYPE stapled_last_import_timestamp_seconds gauge\n");
	if (rs->newest_import != 0)
		evbuffer_add_printf(b,
		    "stapled_last_import_timestamp_seconds %lld\n",
		    (long long)rs->newest_import);
}

/* One pool's upstreams: up, last success, exchanges, failures by reason. */
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
		    "stapled_upstream_last_success_timestamp_seconds{service=\"%s\",upstream=\"%s\"} %lld\n"
		    "stapled_upstream_requests_total{service=\"%s\",upstream=\"%s\"} %lu\n",
		    svc, fh[i].name, fh[i].up, svc, fh[i].name,
		    (long long)fh[i].last_success_unix, svc, fh[i].name,
		    fh[i].requests);
		for (k = 1; k < FETCH_ERR_MAX; k++)
			evbuffer_add_printf(b,
			    "stapled_upstream_failures_total{service=\"%s\",upstream=\"%s\",reason=\"%s\"} %lu\n",
			    svc, fh[i].name, fetch_err_str[k], fh[i].failures[k]);
	}
}

/* The upstream latency histograms; after the counters, as one family must be contiguous. */
static void
render_pool_latency(struct evbuffer *b, const struct fetch_pool *pool)
{
	struct fetch_health	 fh[METRICS_MAX_UPSTREAMS];
	char			 labels[256];
	size_t			 n, i;

	n = fetch_pool_health(pool, fh, METRICS_MAX_UPSTREAMS);
	for (i = 0; i < n; i++) {
		snprintf(labels, sizeof(labels),
		    "service=\"%s\",upstream=\"%s\"", fetch_pool_service(pool),
		    fh[i].name);
		metrics_hist_render(b, "stapled_upstream_latency_seconds", labels,
		    fh[i].latency, METRICS_HIST_UPSTREAM);
	}
}

void
metrics_render(struct evbuffer *b, const struct refresh_stats *rs,
    struct fetch_pool *const *pools, size_t npools, time_t now)
{
	size_t	i;

	render_build(b);
	render_process(b);
	render_reload(b);
	render_counters(b);
	render_tls(b);
	render_store(b, rs, now);
	render_service_entries(b, rs);
	if (pools == NULL)
		return;
	evbuffer_add_printf(b,
	    "# HELP stapled_upstream_up Whether an upstream's last exchange succeeded and it is out of cooldown (0 before any success).\n"
	    "# TYPE stapled_upstream_up gauge\n"
	    "# HELP stapled_upstream_last_success_timestamp_seconds When an upstream last answered well, Unix seconds (0: never).\n"
	    "# TYPE stapled_upstream_last_success_timestamp_seconds gauge\n"
	    "# HELP stapled_upstream_requests_total Upstream exchanges started.\n"
	    "# TYPE stapled_upstream_requests_total counter\n"
	    "# HELP stapled_upstream_failures_total Upstream failures by reason.\n"
	    "# TYPE stapled_upstream_failures_total counter\n");
	for (i = 0; i < npools; i++)
		if (pools[i] != NULL)
			render_pool(b, pools[i]);
	evbuffer_add_printf(b,
	    "# HELP stapled_upstream_latency_seconds Upstream exchanges that got an HTTP answer, any status.\n"
	    "# TYPE stapled_upstream_latency_seconds histogram\n");
	for (i = 0; i < npools; i++)
		if (pools[i] != NULL)
			render_pool_latency(b, pools[i]);
	evbuffer_add_printf(b,
	    "# HELP stapled_upstream_queued Fetches waiting behind max_upstream_inflight.\n"
	    "# TYPE stapled_upstream_queued gauge\n");
	for (i = 0; i < npools; i++)
		if (pools[i] != NULL)
			evbuffer_add_printf(b, "stapled_upstream_queued{service=\"%s\"} %zu\n",
			    fetch_pool_service(pools[i]), fetch_pool_queued(pools[i]));
}
