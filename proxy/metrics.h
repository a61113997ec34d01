/* SPDX-License-Identifier: Apache-2.0 */
/* The process-wide counters, gauges and histograms (the metrics block) and their label tables; a leaf: the page that shows them is metrics_page.h. */
#ifndef PROXY_METRICS_H
#define PROXY_METRICS_H

#include <stdint.h>
#include <time.h>

#include "cache/record.h"
#include "entry/kinds.h"

struct evbuffer;

enum metrics_result {
	METRICS_RES_HIT,		/* served from the cache */
	METRICS_RES_MISS,		/* fetched, verified, stored and served */
	METRICS_RES_UNVERIFIABLE,	/* fetched, passed on unmodified, not stored */
	METRICS_RES_FALLBACK,		/* upstream_first: every upstream failed, cache served */
	METRICS_RES_NOT_MODIFIED,	/* GET with a matching If-None-Match */
	METRICS_RES_FINAL,		/* an upstream's 404/410 about the object, passed on */
	METRICS_RES_DEFINITIVE,		/* an upstream's unsigned answer about the request, relayed */
	METRICS_RES_TRYLATER,		/* OCSP: nothing valid to serve, tryLater */
	METRICS_RES_UNAVAILABLE,	/* RIM, PCCS, KDS: nothing valid to serve, 503 */
	METRICS_RES_LIMITED,		/* a miss over client_miss_rate_per_s, failure answer */
	METRICS_RES_MALFORMED,		/* not an OCSP request */
	METRICS_RES_HTTP_ERROR,		/* 400/405/413/415 */
	METRICS_RES_MAX
};
extern const char *const metrics_result_str[METRICS_RES_MAX];

/*
 * A route is a way clients ask for one kind (OCSP's POST and GET): the
 * index of requests[] and of access log lines is METRICS_ROUTE(kind, i),
 * i below METRICS_KIND_ROUTES; its label is the kind's description's
 * (metrics_describe).
 */
#define METRICS_KIND_ROUTES	2
#define METRICS_ROUTE(kind, i)	((unsigned)(kind) * METRICS_KIND_ROUTES + (unsigned)(i))
#define METRICS_ROUTE_MAX	(CACHE_KIND_MAX * METRICS_KIND_ROUTES)
/* Reasons a kind counts its refused answers by (verify_failures), reason 0 unused. */
#define METRICS_VERIFY_REASONS	32

/* What the metrics show of one kind; static, read-only, set by metrics_describe. */
struct metrics_kind {
	const char		*routes[METRICS_KIND_ROUTES];	/* labels ("ocsp_post"), NULL past the last */
	enum metrics_result	 failed;	/* nothing valid to serve: TRYLATER or UNAVAILABLE */
	int			 malformed;	/* its routes answer METRICS_RES_MALFORMED */
	/*
	 * Labels of verify_failures[kind][1 .. nverify_reasons - 1], or
	 * NULL when the kind counts none.
	 */
	const char *const	*verify_reasons;
	size_t			 nverify_reasons;
};

/*
 * A histogram in seconds over one of the bucket sets below; counts per
 * bucket (not cumulative; the renderer adds them up), the last one +Inf.
 */
#define METRICS_HIST_MAX_BUCKETS	16
enum metrics_hist_kind {
	METRICS_HIST_HIT,	/* request parsed to answer queued: 50 us .. 100 ms */
	METRICS_HIST_UPSTREAM,	/* one upstream exchange: 5 ms .. 10 s */
	METRICS_HIST_VERIFY,	/* one answer's verification: 50 us .. 1 s */
	METRICS_HIST_KIND_MAX
};
struct metrics_hist {
	unsigned long	bucket[METRICS_HIST_MAX_BUCKETS + 1];
	unsigned long	count;
	double		sum;
};
/* Count one observation of `seconds` (negative counts as 0). */
void	metrics_hist_observe(struct metrics_hist *, enum metrics_hist_kind,
	    double seconds);
/*
 * Append the _bucket, _sum and _count lines of `name` with the labels
 * `labels` ("service=\"ocsp\"", never empty); no HELP or TYPE line.
 */
void	metrics_hist_render(struct evbuffer *, const char *name,
	    const char *labels, const struct metrics_hist *,
	    enum metrics_hist_kind);

/* Why a TLS handshake failed: the reason label of stapled_tls_handshake_failures_total. */
enum metrics_tls_fail {
	METRICS_TLS_PLAIN_HTTP,		/* an HTTP request on the TLS port */
	METRICS_TLS_NOT_TLS,		/* other bytes that are not a TLS record */
	METRICS_TLS_PROTOCOL_VERSION,	/* no TLS version both sides speak (TLS 1.2 is the floor) */
	METRICS_TLS_NO_SHARED_CIPHER,	/* no cipher suite, group or signature algorithm in common */
	METRICS_TLS_NO_CLIENT_CERT,	/* client_ca set and no certificate sent */
	METRICS_TLS_BAD_CLIENT_CERT,	/* a client certificate that does not verify against client_ca */
	METRICS_TLS_CLIENT_ALERT,	/* the client gave up with an alert (it does not trust ours, say) */
	METRICS_TLS_CLOSED,		/* the client closed the connection mid-handshake */
	METRICS_TLS_OTHER,
	METRICS_TLS_FAIL_MAX
};
extern const char *const metrics_tls_fail_str[METRICS_TLS_FAIL_MAX];

/* TLS listeners with handshake counters; more are not counted. */
#define METRICS_MAX_TLS_LISTENERS	32
/* A listener's address as a label, NUL included; a longer one is not counted. */
#define METRICS_LISTENER_NAME_BYTES	128

struct metrics_tls_listener {
	char		name[METRICS_LISTENER_NAME_BYTES];
	unsigned long	handshake_failures[METRICS_TLS_FAIL_MAX];
};

/* Whether the public listeners take new clients (http.c; /readyz says). */
enum metrics_saturation {
	METRICS_SAT_NONE,		/* accepting */
	METRICS_SAT_MAX_CONNECTIONS,	/* max_connections are open: paused */
	METRICS_SAT_FD_LIMIT,		/* accept() ran out of descriptors: paused */
};

struct metrics {
	unsigned long	requests[METRICS_ROUTE_MAX][METRICS_RES_MAX];
	/* by cache kind and its reason (struct metrics_kind) */
	unsigned long	verify_failures[CACHE_KIND_MAX][METRICS_VERIFY_REASONS];
	unsigned long	rejected[CACHE_KIND_MAX];	/* upstream answers refused, by cache kind */
	unsigned long	store_errors;
	unsigned long	store_map_full;	/* of store_errors: the map was full */
	/* by where found: STORE a damaged store moved aside; else a record */
	unsigned long	store_damaged[CACHE_FOUND_MAX];
	unsigned long	store_map_full_writes;	/* every write the full map refused */
	int		store_map_full_now;	/* 1 during a spell of full map (usage_map_full) */
	unsigned long	store_salvaged;	/* entries carried from stores moved aside */
	int		store_read_only;	/* why writes are held (enum cache_cause of cache_writes_held); 0 none */
	unsigned long	lookups_loop;	/* hits' lookups on the event loop, with lookup_threads */
	unsigned long	lookups_thread;	/* ... and on the lookup threads */
	unsigned long	entries_purged;	/* expired entries deleted by the purge */
	unsigned long	evictions[CACHE_KIND_MAX];	/* by cache kind: deleted for max_entries */
	unsigned long	store_capped[CACHE_KIND_MAX];	/* by cache kind: not stored, nothing evictable */
	unsigned long	store_limited[CACHE_KIND_MAX];	/* by cache kind: not stored, over new_entry_rate_per_s */
	unsigned long	full_evictions[CACHE_KIND_MAX];	/* by cache kind: not in use, deleted for a full map */
	unsigned long	http_errors;	/* requests refused before routing (400, 411, 413, 431, 505) */
	unsigned long	http_conns;	/* open on the public listeners (http.c) */
	unsigned long	http_max_conns;	/* their budget: max_connections, resolved */
	unsigned long	http_admin_conns;	/* open on the admin listeners */
	int		http_saturated;	/* enum metrics_saturation */
	unsigned long	refresh_ok;
	unsigned long	refresh_failed;
	unsigned long	refresh_rate_limited;
	struct metrics_hist hit_latency[CACHE_KIND_MAX];	/* by the route's kind */
	struct metrics_hist verify_time[CACHE_KIND_MAX];
	double		start_time;	/* process start, Unix seconds (metrics_mark_start); 0: unknown */
	int		config_reload_ok;	/* the last reload (or the start) took: 1, else 0 */
	int64_t		config_reload_ok_at;	/* when one last took, Unix seconds */
	struct metrics_tls_listener tls[METRICS_MAX_TLS_LISTENERS];
	size_t		ntls;	/* of tls[], in use */
};

extern struct metrics	metrics;

/*
 * The handshake-failure counters of the TLS listener `name` (its address):
 * METRICS_TLS_FAIL_MAX of them, indexed by enum metrics_tls_fail, in the
 * metrics block (they live as long as the process; the same name gets the
 * same counters, so a reload keeps counting). NULL when
 * METRICS_MAX_TLS_LISTENERS names are taken or the name is too long.
 */
unsigned long	*metrics_tls_listener(const char *name);

/*
 * Record the realtime clock as the process's start (process_start_time_seconds).
 * Call first thing in main: the clock needs no /proc, which the shipped
 * unit's ProcSubset=pid hides in part. Cannot fail.
 */
void	metrics_mark_start(void);

/*
 * Describe `kind` (its service's svc_init does): mk is static and stays
 * borrowed. Until then the kind's routes have no label and are not shown.
 */
void	metrics_describe(enum cache_kind kind, const struct metrics_kind *mk);
/* The description of kind, or NULL when none was given. */
const struct metrics_kind *metrics_kind(enum cache_kind kind);
/* The label of a route ("ocsp_get"), or NULL when no kind described it. */
const char	*metrics_route_str(unsigned route);
/* The cache kind (service) a route serves. */
enum cache_kind	metrics_route_kind(unsigned route);
/* What a route answers when nothing valid can be served: TRYLATER or UNAVAILABLE. */
enum metrics_result metrics_failed_result(unsigned route);
/* Monotonic microseconds, the clock of the histograms. */
int64_t	metrics_now_us(void);

/* Upstreams listed per service by metrics_render and /healthz; more are left out. */
#define METRICS_MAX_UPSTREAMS	64

#endif
