/* SPDX-License-Identifier: Apache-2.0 */
/* Upstream fetch: ordered failover, hedging, health and single flight over curl multi. */
#ifndef PROXY_FETCH_H
#define PROXY_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "entry/entry.h"

#include "proxy/fetch/fetch_policy.h"
#include "proxy/metrics.h"

#define FETCH_MAX_RESPONSE_BYTES	(1u << 20)	/* default per pool; RIM sets 8 MiB */
#define FETCH_CONNECT_TIMEOUT_MS	2000
#define FETCH_TIMEOUT_MS		10000
#define FETCH_HEDGE_MS			500

struct cache_meta;
struct event_base;
struct fetch_ctx;
struct fetch_pool;
struct fetch_waiter;

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

/*
 * What the job's owner made of the answer the job ends with: its check's
 * verdict and what the store did with it. The check sets it for an answer
 * it accepts (fetch_set_outcome) and may change it until the job ends;
 * every waiter then finds it in fetch_res.outcome. fetch/ only carries it.
 */
struct fetch_outcome {
	enum entry_verdict	 verdict;
	int			 stored;	/* the store holds an entry from this answer */
	int			 map_full;	/* its put failed for want of map */
	const struct cache_meta	*meta;		/* stored: the entry's meta */
	const uint8_t		*headers;	/* stored: its kept headers, or NULL */
	size_t			 headers_len;
	const char		*note;		/* ENTRY_DEFINITIVE: what the answer said */
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
	const void	*job_arg;	/* the job's job_arg, as its check saw it */
	struct fetch_job *job;		/* for fetch_release after FETCH_HOLD */
	const struct fetch_outcome *outcome; /* the accepted answer's, or NULL */
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
	const uint8_t	*key;		/* single-flight key; NULL: never coalesced */
	size_t		 klen;
	const char	*extra_header;	/* "Name: value" (an API key), or NULL; never logged */
};

/*
 * Called for each 2xx answer: FETCH_ACCEPT ends the job with it; FETCH_REJECT
 * counts as that upstream failing (`why` says how) and the next is tried.
 * FETCH_HOLD accepts it but keeps the job, still joinable, until
 * fetch_release(res->job): the answer is being stored, and no waiter
 * (nor anyone asking meanwhile) should look for it in the store before.
 */
enum fetch_verdict { FETCH_ACCEPT, FETCH_REJECT, FETCH_HOLD };
typedef enum fetch_verdict fetch_check_cb(const struct fetch_res *, void *job_arg,
    char *why, size_t whylen);
/* Called once per waiter with the final result. */
typedef void fetch_done_cb(const struct fetch_res *, void *waiter_arg);
typedef void fetch_free_cb(void *job_arg);

/*
 * curl_global_init (counted: each ctx's free undoes its own) and the multi
 * handle on base. NULL, after logging, when either fails or memory is
 * short. Call from the event loop's thread only (curl_global_init is not
 * thread-safe in every libcurl stapled supports).
 */
struct fetch_ctx	*fetch_ctx_new(struct event_base *);
void			 fetch_ctx_free(struct fetch_ctx *);	/* cancels all jobs; accepts NULL */
size_t			 fetch_ctx_inflight(const struct fetch_ctx *);

/* Upstream order is failover order. Strings are copied. */
struct fetch_pool	*fetch_pool_new(struct fetch_ctx *, const char *service,
			    const struct fetch_upstream_conf *, size_t n,
			    const struct fetch_pool_conf *);
/* Jobs still running keep the pool alive until they finish. Accepts NULL. */
void			 fetch_pool_free(struct fetch_pool *);

/*
 * Fetch through the pool, or join the job already fetching req->key.
 * With conf.max_inflight transfers running, a new job queues (FIFO) and
 * starts when one ends; a queued job whose waiters all left is dropped.
 * job_arg belongs to the job (freed with free_cb when it ends, or at once
 * when an existing job is joined). Returns a waiter handle, or NULL if
 * nothing could be started (done_cb is then never called, and job_arg
 * stays the caller's). The handle is gone once done_cb returns.
 */
struct fetch_waiter	*fetch_join(struct fetch_pool *, const struct fetch_req *,
			    fetch_check_cb *check, void *job_arg, fetch_free_cb *free_cb,
			    fetch_done_cb *done, void *waiter_arg);
/*
 * 1 when fetch_join found the job already in flight (asked by another
 * client or a refresh: RFC 9211's collapsed), 0 when it started it.
 */
int			 fetch_waiter_joined(const struct fetch_waiter *);
/* Stop waiting; the job goes on and may still fill the cache. */
void			 fetch_leave(struct fetch_waiter *);
/* End a job held by its check (FETCH_HOLD): every waiter gets done(). */
void			 fetch_release(struct fetch_job *);
/*
 * From the check, for the answer it accepts (FETCH_ACCEPT or FETCH_HOLD):
 * the outcome every waiter's done() sees in res->outcome. It is borrowed
 * and must live until the job's free_cb (job_arg is the place for it).
 */
void			 fetch_set_outcome(struct fetch_job *,
			    const struct fetch_outcome *);

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
