/* SPDX-License-Identifier: Apache-2.0 */
/* Upstream fetch: ordered failover, hedging, pacing and health over curl multi; one owner per job. */
#ifndef PROXY_FETCH_H
#define PROXY_FETCH_H

/*
 * The fetch wing (proxy/fetch/, libfetch.a): the wire towards the
 * vendors, and the only code that includes curl.
 *
 *   fetch.h           this manual: a context (one curl multi handle on the
 *                     loop), pools of upstreams, and jobs
 *   fetch.c           jobs: the upstream order, hedging, the inflight cap
 *                     and its FIFO queue (fetch_int.h: what the files share)
 *   fetch_transfer.c  one attempt: a curl easy handle, its headers and body
 *   fetch_loop.c      curl multi's socket and timer callbacks on libevent
 *   fetch_health.c    per-upstream health, cooldown and counters
 *   fetch_policy.h    what an answer's status and Retry-After mean (pure)
 *
 * A job is one request asked of a pool: fetch_start(pool, req, check,
 * done, arg). Each 2xx answer goes to check, which accepts it or rejects
 * it (the next upstream is then tried); done gets the result once. The
 * wing knows no keys, waiters or store: one job per request asked, and
 * the service (proxy/flight.h) decides which requests share one. It
 * includes only proxy/log.h, proxy/loop.h and proxy/metrics.h beside its
 * own headers, and entry/entry.h for the answer's shape. Everything runs
 * on the loop's thread.
 */

#include <stddef.h>
#include <stdint.h>

#include "entry/entry.h"

#include "proxy/fetch/fetch_policy.h"
#include "proxy/metrics.h"

#define FETCH_MAX_RESPONSE_BYTES	(1u << 20)	/* default per pool; RIM sets 8 MiB */
#define FETCH_CONNECT_TIMEOUT_MS	2000
#define FETCH_TIMEOUT_MS		10000
#define FETCH_HEDGE_MS			500

struct event_base;
struct fetch_ctx;
struct fetch_job;
struct fetch_pool;

struct fetch_upstream_conf {
	const char	*name;		/* for logs and metric labels */
	const char	*url;		/* http:// or https:// */
	int		 verify_nonce;	/* 0 for upstreams that are caches */
};

struct fetch_pool_conf {
	int		 hedge_ms;	/* 0: no hedging */
	int		 connect_timeout_ms;
	int		 timeout_ms;	/* total, per upstream attempt */
	int		 shuffle;	/* equal mirrors: rotate the start */
	int		 pacing_ms;	/* one identical request per upstream per this; 0 off */
	size_t		 max_inflight;	/* concurrent transfers; beyond it jobs queue; 0: no cap */
	size_t		 max_response_bytes; /* 0: FETCH_MAX_RESPONSE_BYTES */
	/* https upstreams (config_upstream_tls); copied by fetch_pool_new */
	const char	*ca_file;	/* PEM CAs instead of the system's store; NULL: curl's default */
	const char	*cert_file;	/* PEM client certificate, or NULL */
	const char	*key_file;	/* its key (with cert_file) */
};

/* What one exchange produced; every pointer is borrowed for the callback. */
struct fetch_res {
	enum fetch_err	 err;		/* FETCH_OK: an answer (any status) */
	int		 http_status;	/* 0 without one */
	const uint8_t	*body;
	size_t		 body_len;
	const char	*upstream;	/* name of the upstream that answered */
	int		 verify_nonce;	/* that upstream's setting */
	const char	*summary;	/* failures: every endpoint tried and why */
	const void	*priv;		/* for fetch_res_header */
};

/* A response header ("Retry-After"), case-insensitive, or NULL. */
const char	*fetch_res_header(const struct fetch_res *, const char *name);
/* res's body and response headers as the answer entry/'s admit rules judge (borrowed from res). */
void		 fetch_res_answer(const struct fetch_res *, struct entry_answer *);

struct fetch_req {
	const char	*method;	/* "GET" or "POST" */
	const char	*path;		/* appended to each upstream URL; "" for OCSP */
	const char	*content_type;	/* POST only */
	const char	*accept;
	const uint8_t	*body;		/* copied */
	size_t		 body_len;
	const uint8_t	*key;		/* the request's identity, for pacing; NULL: never paced */
	size_t		 klen;
	const char	*extra_header;	/* "Name: value" (an API key), or NULL; never logged */
};

/*
 * Called for each 2xx answer: FETCH_ACCEPT ends the job with it;
 * FETCH_REJECT counts as that upstream failing (`why` says how) and the
 * next is tried.
 */
enum fetch_verdict { FETCH_ACCEPT, FETCH_REJECT };
typedef enum fetch_verdict fetch_check_cb(const struct fetch_res *, void *arg,
    char *why, size_t whylen);
/*
 * Called once with the job's result, from the event loop (never from
 * inside fetch_start); the job is freed when it returns. NULL when
 * fetch_ctx_free ends the job: only arg is to be freed then, and the
 * callback must not call into fetch.
 */
typedef void fetch_done_cb(const struct fetch_res *, void *arg);

/*
 * curl_global_init (counted: each ctx's free undoes its own) and the multi
 * handle on base. NULL, after logging, when either fails or memory is
 * short. Call from the event loop's thread only (curl_global_init is not
 * thread-safe in every libcurl stapled supports).
 */
struct fetch_ctx	*fetch_ctx_new(struct event_base *);
void			 fetch_ctx_free(struct fetch_ctx *);	/* ends every job (done with NULL); accepts NULL */
size_t			 fetch_ctx_inflight(const struct fetch_ctx *);

/* Upstream order is failover order. Strings are copied. */
struct fetch_pool	*fetch_pool_new(struct fetch_ctx *, const char *service,
			    const struct fetch_upstream_conf *, size_t n,
			    const struct fetch_pool_conf *);
/* Jobs still running keep the pool alive until they finish. Accepts NULL. */
void			 fetch_pool_free(struct fetch_pool *);

/*
 * Fetch req through the pool: check judges each 2xx answer, done gets
 * the result; arg is the caller's, passed to both. The request's strings
 * and body are copied. With conf.max_inflight transfers running, the job
 * queues (FIFO) and starts when one ends. Returns the job, valid until
 * done() returns or fetch_cancel; NULL when nothing could be started
 * (every upstream refused a transfer, the ctx is gone, or memory is
 * short): done() is then never called. Every upstream paced for this
 * request is a job whose done() comes soon with FETCH_ERR_PACED.
 */
struct fetch_job	*fetch_start(struct fetch_pool *, const struct fetch_req *,
			    fetch_check_cb *check, fetch_done_cb *done, void *arg);
/* 1 while the job waits behind max_inflight, no upstream asked yet. */
int			 fetch_job_queued(const struct fetch_job *);
/*
 * Stop the job: its transfers end, and done() is never called. Not from
 * the job's own check or done. Accepts NULL.
 */
void			 fetch_cancel(struct fetch_job *);

/*
 * Per-upstream health and counters, for /metrics and the log. The
 * counters, the histogram and the last outcome live in the ctx, keyed by
 * service and upstream name, for as long as a pool names that upstream:
 * a pool that replaces another (SIGHUP) carries them on, so they never
 * reset while the process lives; one that no pool names any more is gone.
 */
struct fetch_health {
	const char	*name;		/* borrowed from the pool */
	const char	*url;
	int		 up;		/* last exchange succeeded, not in cooldown */
	int		 asked;		/* an exchange with it has ended; 0: not asked yet */
	unsigned	 consecutive_failures;
	int64_t		 cooldown_until_ms;	/* monotonic ms; 0 none */
	int64_t		 last_failure_unix;
	int64_t		 last_success_unix;	/* 0: never */
	unsigned long	 requests;
	unsigned long	 failures[FETCH_ERR_MAX];
	const struct metrics_hist *latency;	/* answered exchanges; borrowed from the pool */
};
size_t	fetch_pool_health(const struct fetch_pool *, struct fetch_health *, size_t max);
const char *fetch_pool_service(const struct fetch_pool *);
/* Jobs waiting behind max_inflight for a transfer slot now (0 for NULL). */
size_t	fetch_pool_queued(const struct fetch_pool *);
/* "upstream1 (URL), upstream2 (URL)" into buf (truncated to fit); returns buf. */
char	*fetch_pool_describe(const struct fetch_pool *, char *buf, size_t len);
/* The libcurl version string ("7.88.1"), for stapled_build_info. */
const char *fetch_curl_version(void);

#endif
