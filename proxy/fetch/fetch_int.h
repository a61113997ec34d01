/* SPDX-License-Identifier: Apache-2.0 */
/* Upstream fetch, private to fetch*.c: the structs, the test clock, and the functions the files share. */
#ifndef PROXY_FETCH_INT_H
#define PROXY_FETCH_INT_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <curl/curl.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include "cache/clock.h"
#include "proxy/fetch/fetch.h"

/*
 * How it runs (the shape of curl's hiperfifo example): curl tells us which
 * sockets to watch (socket_fn) and when to call it back (timer_fn); libevent
 * tells curl what happened (sock_cb, fetch_timer_cb); after each call into
 * curl, process_done() reads finished transfers and moves their jobs on.
 * Nothing here blocks and nothing is called back from inside curl except
 * the small write/header/socket/timer functions, so a check or done()
 * callback may call fetch_start() and fetch_cancel() (of another job)
 * freely. It must not call fetch_ctx_free().
 *
 * A job is one logical fetch for one owner (proxy/flight.c keeps the
 * waiters); an attempt is one transfer to one upstream. A job tries each
 * upstream of its order at most once.
 *
 * The files: fetch.c holds the jobs (failover order, hedging, pacing,
 * the transfer slots and their queue) and the API;
 * fetch_transfer.c one attempt over curl and its result;
 * fetch_loop.c the curl multi <-> libevent glue; fetch_health.c each
 * upstream's health, cooldown and counters. Only these files include
 * curl.
 */

#define FETCH_MAX_HEADER_BYTES	(64 * 1024)	/* response headers kept */
#define FETCH_MAX_HEADERS	100
#define FETCH_SUMMARY_BYTES	2048
#define FETCH_PACE_SLOTS	1024	/* recent (request, upstream) pairs remembered */

/* When an identical request last went to an upstream (AMD KDS throttles repeats). */
struct fetch_pace {
	uint64_t	h;		/* hash of the request's key */
	size_t		up;
	int64_t		at_ms;
};
#define FETCH_USER_AGENT	"stapled/" PACKAGE_VERSION

struct fetch_sock {
	struct event		 ev;
	LIST_ENTRY(fetch_sock)	 entry;
};

struct fetch_attempt {
	struct fetch_job	*job;
	size_t			 up;		/* index into pool->ups */
	CURL			*easy;
	struct curl_slist	*reqhdrs;
	char			*url;
	int64_t			 started_ms;
	uint8_t			*buf;
	size_t			 len, cap;
	int			 too_big;
	int			 counted;	/* holds one of the pool's transfer slots */
	char			**hdr;		/* "Name: value", no CRLF */
	size_t			 nhdr, hdrbytes;
	char			 errbuf[CURL_ERROR_SIZE];
	TAILQ_ENTRY(fetch_attempt) entry;
};

struct fetch_job {
	struct fetch_ctx	*ctx;
	struct fetch_pool	*pool;
	uint8_t			*key;
	size_t			 klen;
	char			*method, *path, *content_type, *accept;
	char			*extra_header;
	uint8_t			*body;
	size_t			 body_len;
	fetch_check_cb		*check;
	fetch_done_cb		*done;
	void			*arg;		/* the owner's, for check and done */
	size_t			*order;		/* upstream indices to try */
	size_t			 norder, next;
	TAILQ_HEAD(fetch_attempts, fetch_attempt) attempts;	/* running */
	struct fetch_attempt	*last;		/* last failed, for the result */
	enum fetch_err		 last_err;
	struct event		 hedge_ev;
	char			 summary[FETCH_SUMMARY_BYTES];
	size_t			 slen;
	int			 queued;	/* on pool->queue, waiting for a slot */
	TAILQ_ENTRY(fetch_job)	 ctx_entry;
	TAILQ_ENTRY(fetch_job)	 queue_entry;
};

/*
 * What outlives a pool (fetch.h, struct fetch_health): one per service and
 * upstream name in the ctx, shared by the pools that name it, freed with
 * the last of them.
 */
struct fetch_stats {
	char		*service, *name;
	unsigned	 refs;
	int		 listed;		/* on ctx->stats */
	int		 last_ok;		/* the last exchange succeeded */
	int64_t		 last_success_unix;
	unsigned long	 requests;
	unsigned long	 failures[FETCH_ERR_MAX];
	struct metrics_hist latency;
	LIST_ENTRY(fetch_stats) entry;
};

struct fetch_upstream {
	char		*name, *url;
	int		 verify_nonce;
	int		 down;			/* as last logged */
	unsigned	 consecutive;
	int64_t		 cooldown_until_ms;
	int64_t		 last_failure_ms;
	int64_t		 last_failure_unix;
	struct fetch_stats *st;
};

struct fetch_pool {
	struct fetch_ctx	*ctx;		/* NULL once the ctx is gone */
	char			*service;
	struct fetch_upstream	*ups;
	size_t			 nups;
	struct fetch_pool_conf	 conf;		/* its TLS files NULL: see below */
	char			*ca_file;	/* owned copies of the conf's, or NULL */
	char			*cert_file, *key_file;
	unsigned		 refs;		/* the owner's, plus one per job */
	unsigned		 rotor;
	struct fetch_pace	*paces;		/* FETCH_PACE_SLOTS when pacing */
	TAILQ_HEAD(, fetch_job)	 queue;		/* waiting for a transfer slot, FIFO */
	size_t			 ntransfers;	/* attempts running now */
	struct event		*slot_ev;	/* moves the queue on, outside callbacks */
	TAILQ_ENTRY(fetch_pool)	 entry;
};

struct fetch_ctx {
	struct event_base	*base;
	CURLM			*multi;
	struct event		 timer_ev;
	TAILQ_HEAD(, fetch_job)	 jobs;
	size_t			 njobs;
	TAILQ_HEAD(, fetch_pool) pools;
	LIST_HEAD(, fetch_sock)	 socks;
	LIST_HEAD(, fetch_stats) stats;
	uint64_t		 rng;
};

/*
 * Monotonic ms. tests/unit/test_fetch.c builds the fetch files with
 * FETCH_TEST_CLOCK defined and a clock of its own, to move cooldowns on.
 */
#ifdef FETCH_TEST_CLOCK
int64_t	fetch_test_now_ms(void);
#define now_ms	fetch_test_now_ms
#else
#define now_ms	mono_ms
#endif

static inline void
ms_to_tv(int64_t ms, struct timeval *tv)
{
	tv->tv_sec = ms / 1000;
	tv->tv_usec = (ms % 1000) * 1000;
}

/* fetch.c */
void	fetch_summary_add(struct fetch_job *job, const char *name, const char *reason);
void	fetch_job_settle(struct fetch_job *job, const struct fetch_attempt *a);
void	fetch_job_finish(struct fetch_job *job, struct fetch_attempt *a);
void	fetch_job_step(struct fetch_job *job);
void	fetch_slot_release(struct fetch_attempt *a);

/* fetch_transfer.c */
const char *fetch_attempt_header(const struct fetch_attempt *a, const char *name);
void	fetch_attempt_free(struct fetch_attempt *a);
void	fetch_attempt_cancel(struct fetch_attempt *a);
int	fetch_attempt_start(struct fetch_job *job, size_t idx);
void	fetch_res_from(struct fetch_res *res, const struct fetch_job *job,
	    const struct fetch_attempt *a);
void	fetch_attempt_done(struct fetch_attempt *a, CURLcode code);

/* fetch_loop.c */
int	fetch_multi_check(const char *call, CURLMcode mc);
int	fetch_multi_new(struct fetch_ctx *ctx);
void	fetch_timer_cb(evutil_socket_t fd, short what, void *arg);

/* fetch_health.c */
void	fetch_up_success(struct fetch_pool *pool, struct fetch_upstream *up);
void	fetch_up_failure(struct fetch_pool *pool, struct fetch_upstream *up,
	    enum fetch_err err, const char *reason, int64_t retry_after_ms);
struct fetch_stats *fetch_stats_get(struct fetch_ctx *ctx, const char *service,
	    const char *name);
void	fetch_stats_unref(struct fetch_stats *st);

#endif
