/* SPDX-License-Identifier: Apache-2.0 */
/* Upstream fetch: curl multi inside the libevent loop, with failover, hedging, health and single flight. */
#include "config.h"

#include <sys/queue.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include "proxy/fetch.h"
#include "proxy/fetch_curl.h"
#include "proxy/log.h"

/*
 * How it runs (the shape of curl's hiperfifo example): curl tells us which
 * sockets to watch (socket_fn) and when to call it back (timer_fn); libevent
 * tells curl what happened (sock_cb, timer_cb); after each call into curl,
 * process_done() reads finished transfers and moves their jobs on.
 * Nothing here blocks and nothing is called back from inside curl except
 * the small write/header/socket/timer functions, so a done() callback may
 * call fetch_join() and fetch_leave() freely. It must not call
 * fetch_ctx_free().
 *
 * A job is one logical fetch with its waiters; an attempt is one transfer
 * to one upstream. A job tries each upstream of its order at most once.
 */

#define FETCH_MAX_HEADER_BYTES	(64 * 1024)	/* response headers kept */
#define FETCH_MAX_HEADERS	100
#define FETCH_SUMMARY_BYTES	2048
#define FETCH_PACE_SLOTS	1024	/* recent (request, upstream) pairs remembered */

/* When an identical request last went to an upstream (AMD KDS throttles repeats). */
struct fetch_pace {
	uint64_t	h;		/* hash of the single-flight key */
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

struct fetch_waiter {
	struct fetch_job	*job;
	fetch_done_cb		*done;
	void			*arg;
	TAILQ_ENTRY(fetch_waiter) entry;
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
	void			*job_arg;
	fetch_free_cb		*free_cb;
	size_t			*order;		/* upstream indices to try */
	size_t			 norder, next;
	TAILQ_HEAD(fetch_attempts, fetch_attempt) attempts;	/* running */
	struct fetch_attempt	*last;		/* last failed, for the result */
	enum fetch_err		 last_err;
	TAILQ_HEAD(, fetch_waiter) waiters;
	struct event		 hedge_ev;
	char			 summary[FETCH_SUMMARY_BYTES];
	size_t			 slen;
	int			 queued;	/* on pool->queue, waiting for a slot */
	struct fetch_attempt	*held;		/* FETCH_HOLD: the accepted answer */
	const struct fetch_outcome *outcome;	/* fetch_set_outcome; NULL: none */
	TAILQ_ENTRY(fetch_job)	 ctx_entry;
	TAILQ_ENTRY(fetch_job)	 pool_entry;
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
	struct fetch_pool_conf	 conf;
	unsigned		 refs;		/* the owner's, plus one per job */
	unsigned		 rotor;
	struct fetch_pace	*paces;		/* FETCH_PACE_SLOTS when pacing */
	TAILQ_HEAD(, fetch_job)	 jobs;		/* running or queued, joinable */
	TAILQ_HEAD(, fetch_job)	 queue;		/* waiting for a transfer slot, FIFO */
	size_t			 ntransfers;	/* attempts running now */
	struct event		*slot_ev;	/* moves the queue on, outside callbacks */
	TAILQ_ENTRY(fetch_pool)	 entry;
};

struct fetch_ctx {
	struct event_base	*base;
	const struct fetch_curl	*cu;		/* NULL until libcurl is loaded */
	CURLM			*multi;		/* made with it */
	int			 load_logged;	/* a failed load was logged */
	struct event		 timer_ev;
	TAILQ_HEAD(, fetch_job)	 jobs;
	size_t			 njobs;
	TAILQ_HEAD(, fetch_pool) pools;
	LIST_HEAD(, fetch_sock)	 socks;
	LIST_HEAD(, fetch_stats) stats;
	uint64_t		 rng;
};

static void	process_done(struct fetch_ctx *);
static int	job_advance(struct fetch_job *);
static void	slot_release(struct fetch_attempt *);
static void	job_step(struct fetch_job *);

/* job_advance: nothing started because the pool is at max_inflight */
#define JOB_WAIT_SLOT	1

static int64_t
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* xorshift64*: jitter only, nothing secret. */
static uint64_t
ctx_random(struct fetch_ctx *ctx)
{
	ctx->rng ^= ctx->rng >> 12;
	ctx->rng ^= ctx->rng << 25;
	ctx->rng ^= ctx->rng >> 27;
	return ctx->rng * 2685821657736338717ULL;
}

static void
ms_to_tv(int64_t ms, struct timeval *tv)
{
	tv->tv_sec = ms / 1000;
	tv->tv_usec = (ms % 1000) * 1000;
}

/* ---- curl <-> libevent ------------------------------------------------ */

/*
 * Every CURLMcode is checked: one that is not CURLM_OK is logged with its
 * name and the call. A failed socket action leaves the transfers it
 * concerned to their own timeouts; 0 or -1 as the call succeeded.
 */
static int
multi_check(const struct fetch_ctx *ctx, const char *call, CURLMcode mc)
{
	if (mc == CURLM_OK)
		return 0;
	log_err("fetch: %s: %s", call, ctx->cu->multi_strerror(mc));
	return -1;
}

static void
sock_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fetch_ctx	*ctx = arg;
	int			 action = 0, running = 0;

	if (what & EV_READ)
		action |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		action |= CURL_CSELECT_OUT;
	multi_check(ctx, "curl_multi_socket_action",
	    ctx->cu->multi_socket_action(ctx->multi, fd, action, &running));
	/*
	 * No timer cleanup here: process_done may start the next upstream,
	 * and curl arms the timer that transfer needs through timer_fn.
	 */
	process_done(ctx);
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fetch_ctx	*ctx = arg;
	int			 running = 0;

	(void)fd;
	(void)what;
	multi_check(ctx, "curl_multi_socket_action",
	    ctx->cu->multi_socket_action(ctx->multi, CURL_SOCKET_TIMEOUT, 0,
	    &running));
	process_done(ctx);
}

/* CURLMOPT_TIMERFUNCTION: -1 deletes the timer, 0 means "soon", not "now". */
static int
timer_fn(CURLM *multi, long timeout_ms, void *arg)
{
	struct fetch_ctx	*ctx = arg;
	struct timeval		 tv;

	(void)multi;
	if (timeout_ms < 0) {
		evtimer_del(&ctx->timer_ev);
		return 0;
	}
	ms_to_tv(timeout_ms, &tv);
	evtimer_add(&ctx->timer_ev, &tv);
	return 0;
}

/* CURLMOPT_SOCKETFUNCTION */
static int
socket_fn(CURL *easy, curl_socket_t s, int what, void *arg, void *sockp)
{
	struct fetch_ctx	*ctx = arg;
	struct fetch_sock	*fs = sockp;
	short			 kind = EV_PERSIST;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (fs != NULL) {
			event_del(&fs->ev);
			LIST_REMOVE(fs, entry);
			free(fs);
		}
		return 0;
	}
	if (fs == NULL) {
		if ((fs = calloc(1, sizeof(*fs))) == NULL)
			return -1;
		LIST_INSERT_HEAD(&ctx->socks, fs, entry);
		/* CURLMOPT_SOCKETFUNCTION: -1 fails this socket's transfer. */
		if (multi_check(ctx, "curl_multi_assign",
		    ctx->cu->multi_assign(ctx->multi, s, fs)) == -1) {
			LIST_REMOVE(fs, entry);
			free(fs);
			return -1;
		}
	} else
		event_del(&fs->ev);
	if (what & CURL_POLL_IN)
		kind |= EV_READ;
	if (what & CURL_POLL_OUT)
		kind |= EV_WRITE;
	event_assign(&fs->ev, ctx->base, s, kind, sock_cb, ctx);
	event_add(&fs->ev, NULL);
	return 0;
}

/* ---- one transfer ------------------------------------------------------- */

static size_t
write_fn(char *p, size_t size, size_t n, void *arg)
{
	struct fetch_attempt	*a = arg;
	size_t			 len = size * n, ncap;
	uint8_t			*nbuf;

	if (len > a->job->pool->conf.max_response_bytes - a->len) {
		a->too_big = 1;
		return 0;		/* CURLE_WRITE_ERROR */
	}
	if (a->len + len > a->cap) {
		ncap = a->cap ? a->cap : 4096;
		while (ncap < a->len + len)
			ncap *= 2;
		if ((nbuf = realloc(a->buf, ncap)) == NULL)
			return 0;
		a->buf = nbuf;
		a->cap = ncap;
	}
	memcpy(a->buf + a->len, p, len);
	a->len += len;
	return len;
}

static void
hdrs_clear(struct fetch_attempt *a)
{
	size_t	i;

	for (i = 0; i < a->nhdr; i++)
		free(a->hdr[i]);
	free(a->hdr);
	a->hdr = NULL;
	a->nhdr = a->hdrbytes = 0;
}

/* Keeps the header lines of the last response (after any 1xx), within bounds. */
static size_t
header_fn(char *p, size_t size, size_t n, void *arg)
{
	struct fetch_attempt	*a = arg;
	size_t			 len = size * n, l = len;
	char			**nh, *line;

	if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		hdrs_clear(a);
		return len;
	}
	while (l > 0 && (p[l - 1] == '\r' || p[l - 1] == '\n'))
		l--;
	if (l == 0 || a->nhdr >= FETCH_MAX_HEADERS ||
	    a->hdrbytes + l > FETCH_MAX_HEADER_BYTES)
		return len;
	if ((line = strndup(p, l)) == NULL)
		return len;
	if ((nh = reallocarray(a->hdr, a->nhdr + 1, sizeof(*nh))) == NULL) {
		free(line);
		return len;
	}
	a->hdr = nh;
	a->hdr[a->nhdr++] = line;
	a->hdrbytes += l;
	return len;
}

static const char *
attempt_header(const struct fetch_attempt *a, const char *name)
{
	size_t		 i, nl = strlen(name);
	const char	*v;

	for (i = 0; i < a->nhdr; i++) {
		if (strncasecmp(a->hdr[i], name, nl) != 0 ||
		    a->hdr[i][nl] != ':')
			continue;
		v = a->hdr[i] + nl + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		return v;
	}
	return NULL;
}

static void
attempt_free(struct fetch_attempt *a)
{
	if (a == NULL)
		return;
	if (a->easy != NULL)
		a->job->ctx->cu->easy_cleanup(a->easy);
	if (a->reqhdrs != NULL)
		a->job->ctx->cu->slist_free_all(a->reqhdrs);
	hdrs_clear(a);
	free(a->buf);
	free(a->url);
	free(a);
}

/* Takes a running attempt out of curl and frees it; no health effect. */
static void
attempt_cancel(struct fetch_attempt *a)
{
	struct fetch_job	*job = a->job;

	TAILQ_REMOVE(&job->attempts, a, entry);
	multi_check(job->ctx, "curl_multi_remove_handle",
	    job->ctx->cu->multi_remove_handle(job->ctx->multi, a->easy));
	slot_release(a);
	attempt_free(a);
}

static int
add_header(const struct fetch_curl *cu, struct curl_slist **list,
    const char *name, const char *value)
{
	struct curl_slist	*n;
	char			*h;

	if (asprintf(&h, "%s%s", name, value) == -1)
		return -1;
	n = cu->slist_append(*list, h);
	free(h);
	if (n == NULL)
		return -1;
	*list = n;
	return 0;
}

/*
 * curl_easy_setopt with its CURLcode checked: an option this libcurl
 * refuses fails the attempt, logged with the option's name.
 */
#define EASY_SET(opt, val) do {						\
	CURLcode ec_ = cu->easy_setopt(e, (opt), (val));		\
	if (ec_ != CURLE_OK) {						\
		log_err("fetch: %s: curl_easy_setopt(%s): %s",		\
		    pool->service, #opt, cu->easy_strerror(ec_));	\
		goto out;						\
	}								\
} while (0)

static int
attempt_start(struct fetch_job *job, size_t idx)
{
	struct fetch_pool	*pool = job->pool;
	struct fetch_upstream	*up = &pool->ups[idx];
	const struct fetch_curl	*cu = job->ctx->cu;
	struct fetch_attempt	*a;
	size_t			 ulen = strlen(up->url);
	CURL			*e;
	int			 rv = -1;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return -1;
	a->job = job;
	a->up = idx;
	/* "https://host/" + "/path": one slash */
	if (ulen > 0 && up->url[ulen - 1] == '/' && job->path[0] == '/')
		ulen--;
	if (asprintf(&a->url, "%.*s%s", (int)ulen, up->url, job->path) == -1) {
		a->url = NULL;
		goto out;
	}
	if ((a->easy = e = cu->easy_init()) == NULL)
		goto out;

	/* An empty Expect: keeps curl from waiting for 100-continue. */
	if (add_header(cu, &a->reqhdrs, "Expect:", "") == -1)
		goto out;
	if (job->content_type != NULL && strcmp(job->method, "POST") == 0 &&
	    add_header(cu, &a->reqhdrs, "Content-Type: ", job->content_type) == -1)
		goto out;
	if (job->accept != NULL &&
	    add_header(cu, &a->reqhdrs, "Accept: ", job->accept) == -1)
		goto out;
	if (job->extra_header != NULL &&
	    add_header(cu, &a->reqhdrs, job->extra_header, "") == -1)
		goto out;

	EASY_SET(CURLOPT_URL, a->url);
	EASY_SET(CURLOPT_PRIVATE, a);
	EASY_SET(CURLOPT_ERRORBUFFER, a->errbuf);
	EASY_SET(CURLOPT_NOSIGNAL, 1L);
	EASY_SET(CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	EASY_SET(CURLOPT_PROTOCOLS_STR, "http,https");
	EASY_SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
	EASY_SET(CURLOPT_PROTOCOLS,
	    (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
	EASY_SET(CURLOPT_REDIR_PROTOCOLS,
	    (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	EASY_SET(CURLOPT_CONNECTTIMEOUT_MS,
	    (long)pool->conf.connect_timeout_ms);
	EASY_SET(CURLOPT_TIMEOUT_MS, (long)pool->conf.timeout_ms);
	EASY_SET(CURLOPT_USERAGENT, FETCH_USER_AGENT);
	EASY_SET(CURLOPT_HTTPHEADER, a->reqhdrs);
	/* Refused early when Content-Length says so; write_fn catches the rest. */
	EASY_SET(CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)pool->conf.max_response_bytes);
	EASY_SET(CURLOPT_WRITEFUNCTION, write_fn);
	EASY_SET(CURLOPT_WRITEDATA, a);
	EASY_SET(CURLOPT_HEADERFUNCTION, header_fn);
	EASY_SET(CURLOPT_HEADERDATA, a);
	if (strcmp(job->method, "POST") == 0) {
		EASY_SET(CURLOPT_POST, 1L);
		/* job->body outlives every attempt of the job */
		EASY_SET(CURLOPT_POSTFIELDS,
		    job->body != NULL ? (const char *)job->body : "");
		EASY_SET(CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)job->body_len);
	} else if (strcmp(job->method, "GET") == 0)
		EASY_SET(CURLOPT_HTTPGET, 1L);
	else
		EASY_SET(CURLOPT_CUSTOMREQUEST, job->method);

	if (multi_check(job->ctx, "curl_multi_add_handle",
	    cu->multi_add_handle(job->ctx->multi, e)) == -1)
		goto out;
	a->started_ms = now_ms();
	TAILQ_INSERT_TAIL(&job->attempts, a, entry);
	a->counted = 1;
	pool->ntransfers++;
	up->st->requests++;
	log_debug("fetch: %s: %s: %s %s", pool->service, up->name,
	    job->method, a->url);
	a = NULL;
	rv = 0;
 out:
	attempt_free(a);
	return rv;
}

/* ---- health ------------------------------------------------------------- */

static void
up_success(struct fetch_pool *pool, struct fetch_upstream *up)
{
	up->consecutive = 0;
	up->cooldown_until_ms = 0;
	up->st->last_ok = 1;
	up->st->last_success_unix = time(NULL);
	if (up->down) {
		up->down = 0;
		log_info("fetch: %s: %s: up again", pool->service, up->name);
	}
}

static void
up_failure(struct fetch_pool *pool, struct fetch_upstream *up,
    enum fetch_err err, const char *reason, int64_t retry_after_ms)
{
	struct fetch_ctx	*ctx = pool->ctx;
	int64_t			 ms, now = now_ms();

	up->st->failures[err]++;
	up->st->last_ok = 0;
	up->consecutive++;
	up->last_failure_ms = now;
	up->last_failure_unix = time(NULL);
	if ((ms = fetch_cooldown_ms(up->consecutive, retry_after_ms)) <= 0)
		return;
	/* up to 20 % more, so that mirrors that failed together drift apart */
	ms = fetch_cooldown_jitter_ms(ms, ctx_random(ctx));
	up->cooldown_until_ms = now + ms;
	if (!up->down) {
		up->down = 1;
		log_info("fetch: %s: %s: down (%s), cooling down %lld ms",
		    pool->service, up->name, reason, (long long)ms);
	} else
		log_debug("fetch: %s: %s: still down (%s), cooling down %lld ms",
		    pool->service, up->name, reason, (long long)ms);
}

/* The ctx's stats of (service, name), shared or new; NULL out of memory. */
static struct fetch_stats *
stats_get(struct fetch_ctx *ctx, const char *service, const char *name)
{
	struct fetch_stats	*st;

	LIST_FOREACH(st, &ctx->stats, entry)
		if (strcmp(st->service, service) == 0 &&
		    strcmp(st->name, name) == 0) {
			st->refs++;
			return st;
		}
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return NULL;
	if ((st->service = strdup(service)) == NULL ||
	    (st->name = strdup(name)) == NULL) {
		free(st->service);
		free(st);
		return NULL;
	}
	st->refs = 1;
	st->listed = 1;
	LIST_INSERT_HEAD(&ctx->stats, st, entry);
	return st;
}

static void
stats_unref(struct fetch_stats *st)
{
	if (st == NULL || --st->refs > 0)
		return;
	if (st->listed)
		LIST_REMOVE(st, entry);
	free(st->service);
	free(st->name);
	free(st);
}

/* ---- jobs ----------------------------------------------------------------- */

static void
pool_unref(struct fetch_pool *pool)
{
	size_t	i;

	if (pool == NULL || --pool->refs > 0)
		return;
	if (pool->ctx != NULL)
		TAILQ_REMOVE(&pool->ctx->pools, pool, entry);
	for (i = 0; i < pool->nups; i++) {
		free(pool->ups[i].name);
		free(pool->ups[i].url);
		stats_unref(pool->ups[i].st);
	}
	free(pool->ups);
	free(pool->paces);
	if (pool->slot_ev != NULL)
		event_free(pool->slot_ev);
	free(pool->service);
	free(pool);
}

static void
summary_add(struct fetch_job *job, const char *name, const char *reason)
{
	int	n;

	if (job->slen >= sizeof(job->summary) - 1)
		return;
	n = snprintf(job->summary + job->slen, sizeof(job->summary) - job->slen,
	    "%s%s: %s", job->slen ? "; " : "", name, reason);
	if (n > 0)
		job->slen += (size_t)n;
	if (job->slen > sizeof(job->summary) - 1)
		job->slen = sizeof(job->summary) - 1;
}

/* Frees a job that has no attempts left; waiters are dropped silently. */
static void
job_free(struct fetch_job *job)
{
	struct fetch_waiter	*w;
	struct fetch_attempt	*a;

	while ((a = TAILQ_FIRST(&job->attempts)) != NULL)
		attempt_cancel(a);
	while ((w = TAILQ_FIRST(&job->waiters)) != NULL) {
		TAILQ_REMOVE(&job->waiters, w, entry);
		free(w);
	}
	evtimer_del(&job->hedge_ev);
	if (job->queued)
		TAILQ_REMOVE(&job->pool->queue, job, queue_entry);
	if (job->free_cb != NULL)
		job->free_cb(job->job_arg);
	attempt_free(job->held);
	attempt_free(job->last);
	TAILQ_REMOVE(&job->ctx->jobs, job, ctx_entry);
	job->ctx->njobs--;
	pool_unref(job->pool);
	free(job->order);
	free(job->key);
	free(job->method);
	free(job->path);
	free(job->content_type);
	free(job->extra_header);
	free(job->accept);
	free(job->body);
	free(job);
}

static void
res_from(struct fetch_res *res, const struct fetch_job *job,
    const struct fetch_attempt *a)
{
	const struct fetch_upstream	*up;
	long				 status = 0;

	memset(res, 0, sizeof(*res));
	res->summary = job->summary;
	res->job_arg = job->job_arg;
	res->job = (struct fetch_job *)job;
	if (a == NULL)
		return;
	up = &job->pool->ups[a->up];
	/* No status known is 0, as curl reports for no response. */
	if (job->ctx->cu->easy_getinfo(a->easy, CURLINFO_RESPONSE_CODE,
	    &status) != CURLE_OK)
		status = 0;
	res->http_status = (int)status;
	res->body = a->buf;
	res->body_len = a->len;
	res->upstream = up->name;
	res->verify_nonce = up->verify_nonce;
	res->priv = a;
}

/* An answer was accepted: the other attempts stop, and nothing more starts. */
static void
job_settle(struct fetch_job *job, const struct fetch_attempt *a)
{
	struct fetch_attempt	*o;

	evtimer_del(&job->hedge_ev);
	while ((o = TAILQ_FIRST(&job->attempts)) != NULL) {
		/*
		 * Hedged over: it was asked first and a later one answered.
		 * That counts against it, so a blackholed upstream goes into
		 * cooldown instead of costing hedge_ms on every miss.
		 */
		if (a != NULL && o->started_ms < a->started_ms)
			up_failure(job->pool, &job->pool->ups[o->up],
			    FETCH_ERR_TIMEOUT, "no answer while another upstream "
			    "answered", -1);
		attempt_cancel(o);
	}
}

/*
 * The job ends: `a` (already out of curl) answered, or, when NULL, every
 * upstream failed. No one can join from here on; every waiter gets done().
 */
static void
job_finish(struct fetch_job *job, struct fetch_attempt *a)
{
	struct fetch_waiter	*w;
	struct fetch_res	 res;

	TAILQ_REMOVE(&job->pool->jobs, job, pool_entry);
	job_settle(job, a);
	if (a != NULL) {
		res_from(&res, job, a);
		res.err = FETCH_OK;
		res.outcome = job->outcome;
	} else {
		res_from(&res, job, job->last);
		res.err = job->last_err;
		log_debug("fetch: %s: all upstreams failed: %s",
		    job->pool->service, job->summary);
	}
	while ((w = TAILQ_FIRST(&job->waiters)) != NULL) {
		TAILQ_REMOVE(&job->waiters, w, entry);
		w->done(&res, w->arg);
		free(w);
	}
	attempt_free(a);
	job_free(job);
}

static enum fetch_err
curl_err(CURLcode code, const struct fetch_attempt *a)
{
	switch (code) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return FETCH_ERR_DNS;
	case CURLE_COULDNT_CONNECT:
		return FETCH_ERR_CONNECT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_USE_SSL_FAILED:
		return FETCH_ERR_TLS;
	case CURLE_OPERATION_TIMEDOUT:
		return FETCH_ERR_TIMEOUT;
	case CURLE_FILESIZE_EXCEEDED:
		return FETCH_ERR_TOO_BIG;
	case CURLE_WRITE_ERROR:
		return a->too_big ? FETCH_ERR_TOO_BIG : FETCH_ERR_TRANSPORT;
	default:
		return FETCH_ERR_TRANSPORT;
	}
}

/* "connect: Connection refused", "timeout after 10000 ms", ... */
static void
curl_reason(char *buf, size_t len, CURLcode code, enum fetch_err err,
    const struct fetch_attempt *a)
{
	const struct fetch_pool_conf	*conf = &a->job->pool->conf;
	const struct fetch_curl		*cu = a->job->ctx->cu;
	const char			*msg;
	curl_off_t			 connected = 0;
	long				 oserr = 0;

	msg = a->errbuf[0] != '\0' ? a->errbuf : cu->easy_strerror(code);
	switch (err) {
	case FETCH_ERR_DNS:
		snprintf(buf, len, "dns: %s", msg);
		break;
	case FETCH_ERR_TLS:
		snprintf(buf, len, "tls: %s", msg);
		break;
	case FETCH_ERR_CONNECT:
		if (cu->easy_getinfo(a->easy, CURLINFO_OS_ERRNO,
		    &oserr) != CURLE_OK)
			oserr = 0;
		if (code == CURLE_COULDNT_CONNECT && oserr != 0)
			msg = strerror((int)oserr);
		snprintf(buf, len, "connect: %s", msg);
		break;
	case FETCH_ERR_TIMEOUT:
		if (cu->easy_getinfo(a->easy, CURLINFO_CONNECT_TIME_T,
		    &connected) != CURLE_OK)
			connected = 0;
		if (connected == 0)
			snprintf(buf, len, "connect timeout after %d ms",
			    conf->connect_timeout_ms);
		else
			snprintf(buf, len, "timeout after %d ms",
			    conf->timeout_ms);
		break;
	case FETCH_ERR_TOO_BIG:
		snprintf(buf, len, "response over %zu bytes",
		    conf->max_response_bytes);
		break;
	default:
		snprintf(buf, len, "%s", msg);
		break;
	}
}

/* A transfer ended; it is out of the running list but still in curl. */
static void
attempt_done(struct fetch_attempt *a, CURLcode code)
{
	struct fetch_job	*job = a->job;
	struct fetch_pool	*pool = job->pool;
	struct fetch_upstream	*up = &pool->ups[a->up];
	struct fetch_res	 res;
	enum fetch_err		 err;
	enum fetch_verdict	 v = FETCH_ACCEPT;
	const char		*next;
	char			 reason[CURL_ERROR_SIZE + 64], why[256];
	int64_t			 retry_after = -1;
	int			 status;

	TAILQ_REMOVE(&job->attempts, a, entry);
	multi_check(job->ctx, "curl_multi_remove_handle",
	    job->ctx->cu->multi_remove_handle(job->ctx->multi, a->easy));
	slot_release(a);
	res_from(&res, job, a);
	status = res.http_status;
	if (code == CURLE_OK)
		metrics_hist_observe(&up->st->latency, METRICS_HIST_UPSTREAM,
		    (double)(now_ms() - a->started_ms) / 1000.0);

	if (code == CURLE_OK) {
		switch (fetch_classify(status)) {
		case FETCH_CLASS_ANSWER:
			why[0] = '\0';
			if (job->check != NULL)
				v = job->check(&res, job->job_arg, why,
				    sizeof(why));
			if (v != FETCH_REJECT)
				goto answer;
			job->outcome = NULL;	/* set for accepted answers only */
			err = FETCH_ERR_REJECTED;
			why[sizeof(why) - 1] = '\0';
			snprintf(reason, sizeof(reason), "rejected: %s",
			    why[0] ? why : "no reason given");
			break;
		case FETCH_CLASS_FINAL:
			goto answer;
		case FETCH_CLASS_FAILOVER:
		default:
			err = FETCH_ERR_HTTP;
			snprintf(reason, sizeof(reason), "HTTP %d", status);
			/* RFC 9110 10.2.3 */
			if (status == 429 || status == 503)
				retry_after = fetch_retry_after_ms(
				    attempt_header(a, "Retry-After"),
				    time(NULL));
			break;
		}
	} else {
		err = curl_err(code, a);
		curl_reason(reason, sizeof(reason), code, err, a);
	}

	up_failure(pool, up, err, reason, retry_after);
	summary_add(job, up->name, reason);
	attempt_free(job->last);
	job->last = a;
	job->last_err = err;
	if (!TAILQ_EMPTY(&job->attempts))
		next = NULL;
	else if (job->next < job->norder)
		next = pool->ups[job->order[job->next]].name;
	else
		next = NULL;
	log_debug("fetch: %s: %s: %s %s: %s, %s%s", pool->service, up->name,
	    job->method, a->url, reason,
	    next ? "trying " : (TAILQ_EMPTY(&job->attempts) ? "giving up" :
	    "waiting for the others"), next ? next : "");
	if (TAILQ_EMPTY(&job->attempts))
		job_step(job);
	return;

 answer:
	log_debug("fetch: %s: %s: %s %s: HTTP %d in %lld ms", pool->service,
	    up->name, job->method, a->url, status,
	    (long long)(now_ms() - a->started_ms));
	up_success(pool, up);
	if (v == FETCH_HOLD) {
		/* Joinable still; fetch_release ends it with this answer. */
		job_settle(job, a);
		job->held = a;
		return;
	}
	job_finish(job, a);
}

static void
process_done(struct fetch_ctx *ctx)
{
	CURLMsg			*msg;
	struct fetch_attempt	*a;
	CURLcode		 code;
	char			*priv;
	int			 left;

	while ((msg = ctx->cu->multi_info_read(ctx->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		priv = NULL;
		code = msg->data.result;
		if (ctx->cu->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
		    &priv) != CURLE_OK) {
			log_err("fetch: a finished transfer without its "
			    "attempt (CURLINFO_PRIVATE)");
			continue;
		}
		if ((a = (struct fetch_attempt *)(void *)priv) != NULL)
			attempt_done(a, code);
	}
}

static void
hedge_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fetch_job	*job = arg;
	struct fetch_attempt	*a;

	(void)fd;
	(void)what;
	if ((a = TAILQ_LAST(&job->attempts, fetch_attempts)) != NULL)
		log_debug("fetch: %s: %s: no answer in %d ms, hedging",
		    job->pool->service, job->pool->ups[a->up].name,
		    job->pool->conf.hedge_ms);
	/*
	 * Nothing started is fine: the running attempts may still answer.
	 * At max_inflight the hedge is skipped; failover still queues.
	 */
	if (job_advance(job) == -1 && TAILQ_EMPTY(&job->attempts))
		job_finish(job, NULL);
}

static uint64_t
key_hash(const struct fetch_job *job)
{
	uint64_t	h = 1469598103934665603ULL;
	size_t		i;

	for (i = 0; i < job->klen; i++)
		h = (h ^ job->key[i]) * 1099511628211ULL;
	return h;
}

/* The pacing slot of this job's request at upstream idx, or NULL when not paced. */
static struct fetch_pace *
pace_slot(const struct fetch_job *job, size_t idx)
{
	if (job->pool->paces == NULL || job->key == NULL)
		return NULL;
	return &job->pool->paces[(key_hash(job) ^ (idx * 0x9e3779b97f4a7c15ULL)) %
	    FETCH_PACE_SLOTS];
}

/*
 * Starts the next upstream of the job's order that can be started, and
 * arms the hedge timer if another one is left; -1 when none could start,
 * JOB_WAIT_SLOT when the pool's transfers are at max_inflight.
 */
static int
job_advance(struct fetch_job *job)
{
	struct fetch_pool	*pool = job->pool;
	struct fetch_pace	*pc;
	struct timeval		 tv;
	size_t			 idx;
	char			 why[96];

	while (job->next < job->norder) {
		if (pool->conf.max_inflight > 0 &&
		    pool->ntransfers >= pool->conf.max_inflight)
			return JOB_WAIT_SLOT;
		idx = job->order[job->next++];
		if ((pc = pace_slot(job, idx)) != NULL && pc->h == key_hash(job) &&
		    pc->up == idx && now_ms() - pc->at_ms < pool->conf.pacing_ms) {
			snprintf(why, sizeof(why), "paced: the same request went "
			    "there %lld ms ago", (long long)(now_ms() - pc->at_ms));
			summary_add(job, pool->ups[idx].name, why);
			pool->ups[idx].st->failures[FETCH_ERR_PACED]++;
			job->last_err = FETCH_ERR_PACED;
			continue;
		}
		if (fetch_ctx_load(job->ctx) == -1) {
			summary_add(job, pool->ups[idx].name,
			    "libcurl is not loaded");
			job->last_err = FETCH_ERR_TRANSPORT;
			continue;
		}
		if (attempt_start(job, idx) == 0) {
			if (pc != NULL) {
				pc->h = key_hash(job);
				pc->up = idx;
				pc->at_ms = now_ms();
			}
			if (pool->conf.hedge_ms > 0 && job->next < job->norder) {
				ms_to_tv(pool->conf.hedge_ms, &tv);
				evtimer_add(&job->hedge_ev, &tv);
			}
			return 0;
		}
		log_warn("fetch: %s: %s: cannot start a transfer",
		    pool->service, pool->ups[idx].name);
		summary_add(job, pool->ups[idx].name, "cannot start a transfer");
		job->last_err = FETCH_ERR_TRANSPORT;
	}
	return -1;
}

/* The job goes on: queued at max_inflight, finished when nothing is left. */
static void
job_step(struct fetch_job *job)
{
	int	r;

	if ((r = job_advance(job)) == JOB_WAIT_SLOT) {
		if (TAILQ_EMPTY(&job->attempts) && !job->queued) {
			job->queued = 1;
			TAILQ_INSERT_TAIL(&job->pool->queue, job, queue_entry);
		}
	} else if (r == -1 && TAILQ_EMPTY(&job->attempts))
		job_finish(job, NULL);
}

/* A transfer ended: its slot goes to the queue, from the event loop. */
static void
slot_release(struct fetch_attempt *a)
{
	struct fetch_pool	*pool = a->job->pool;

	if (!a->counted)
		return;
	a->counted = 0;
	pool->ntransfers--;
	if (!TAILQ_EMPTY(&pool->queue) && pool->slot_ev != NULL)
		event_active(pool->slot_ev, EV_TIMEOUT, 0);
}

/*
 * Queued jobs take the free slots in order. A queued job nobody waits for
 * any more (every client's budget ran out) is dropped unasked.
 */
static void
slot_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fetch_pool	*pool = arg;
	struct fetch_job	*job;

	(void)fd;
	(void)what;
	pool->refs++;		/* a job_free below may drop the last other one */
	while ((job = TAILQ_FIRST(&pool->queue)) != NULL &&
	    pool->ctx != NULL && (pool->conf.max_inflight == 0 ||
	    pool->ntransfers < pool->conf.max_inflight)) {
		TAILQ_REMOVE(&pool->queue, job, queue_entry);
		job->queued = 0;
		if (TAILQ_EMPTY(&job->waiters)) {
			TAILQ_REMOVE(&pool->jobs, job, pool_entry);
			job_free(job);
			continue;
		}
		job_step(job);
	}
	pool_unref(pool);
}

/*
 * Failover order: configured order, rotated when conf.shuffle. Upstreams in
 * cooldown are left out. When every upstream is in cooldown, all of them
 * are tried, the one whose last failure is oldest first: a job never fails
 * without asking anyone, and the upstream that rested longest goes first.
 */
static int
job_order(struct fetch_job *job)
{
	struct fetch_pool	*pool = job->pool;
	int64_t			 now = now_ms();
	size_t			 i, j, k, start = 0, idx;

	if ((job->order = calloc(pool->nups, sizeof(*job->order))) == NULL)
		return -1;
	if (pool->conf.shuffle)
		start = pool->rotor++ % pool->nups;
	for (i = 0; i < pool->nups; i++) {
		idx = (start + i) % pool->nups;
		if (pool->ups[idx].cooldown_until_ms <= now)
			job->order[job->norder++] = idx;
	}
	if (job->norder > 0)
		return 0;
	/* all resting: insertion sort by last failure, stable */
	for (i = 0; i < pool->nups; i++) {
		idx = (start + i) % pool->nups;
		for (j = job->norder; j > 0; j--) {
			k = job->order[j - 1];
			if (pool->ups[k].last_failure_ms <=
			    pool->ups[idx].last_failure_ms)
				break;
			job->order[j] = k;
		}
		job->order[j] = idx;
		job->norder++;
	}
	return 0;
}

static struct fetch_job *
job_find(struct fetch_pool *pool, const uint8_t *key, size_t klen)
{
	struct fetch_job	*job;

	TAILQ_FOREACH(job, &pool->jobs, pool_entry)
		if (job->key != NULL && job->klen == klen &&
		    memcmp(job->key, key, klen) == 0)
			return job;
	return NULL;
}

static char *
strdup_or_null(const char *s, int *fail)
{
	char	*d;

	if (s == NULL)
		return NULL;
	if ((d = strdup(s)) == NULL)
		*fail = 1;
	return d;
}

static struct fetch_job *
job_new(struct fetch_pool *pool, const struct fetch_req *req)
{
	struct fetch_job	*job;
	int			 fail = 0;

	if ((job = calloc(1, sizeof(*job))) == NULL)
		return NULL;
	job->ctx = pool->ctx;
	job->pool = pool;
	pool->refs++;
	TAILQ_INIT(&job->attempts);
	TAILQ_INIT(&job->waiters);
	evtimer_assign(&job->hedge_ev, pool->ctx->base, hedge_cb, job);
	TAILQ_INSERT_TAIL(&pool->ctx->jobs, job, ctx_entry);
	pool->ctx->njobs++;
	TAILQ_INSERT_TAIL(&pool->jobs, job, pool_entry);
	job->last_err = FETCH_ERR_TRANSPORT;

	job->method = strdup_or_null(req->method ? req->method : "GET", &fail);
	job->path = strdup_or_null(req->path ? req->path : "", &fail);
	job->content_type = strdup_or_null(req->content_type, &fail);
	job->extra_header = strdup_or_null(req->extra_header, &fail);
	job->accept = strdup_or_null(req->accept, &fail);
	if (req->body_len > 0) {
		if ((job->body = malloc(req->body_len)) == NULL)
			fail = 1;
		else
			memcpy(job->body, req->body, req->body_len);
		job->body_len = req->body_len;
	}
	if (req->key != NULL) {
		if ((job->key = malloc(req->klen ? req->klen : 1)) == NULL)
			fail = 1;
		else
			memcpy(job->key, req->key, req->klen);
		job->klen = req->klen;
	}
	if (fail || job_order(job) == -1) {
		TAILQ_REMOVE(&pool->jobs, job, pool_entry);
		job_free(job);
		return NULL;
	}
	return job;
}

/* ---- API ------------------------------------------------------------------ */

const char *
fetch_res_header(const struct fetch_res *res, const char *name)
{
	if (res == NULL || res->priv == NULL || name == NULL)
		return NULL;
	return attempt_header(res->priv, name);
}

static const char *
answer_header(const void *res, const char *name)
{
	return fetch_res_header(res, name);
}

void
fetch_res_answer(const struct fetch_res *res, struct entry_answer *a)
{
	a->body = res->body;
	a->body_len = res->body_len;
	a->header = answer_header;
	a->header_arg = res;
}

int
fetch_ctx_load(struct fetch_ctx *ctx)
{
	const struct fetch_curl	*cu;
	char			 why[512];

	if (ctx->multi != NULL)
		return 0;
	if ((cu = fetch_curl_load(why, sizeof(why))) == NULL) {
		if (!ctx->load_logged)
			log_err("fetch: cannot load libcurl (%s): every upstream "
			    "transfer fails until it is installed", why);
		ctx->load_logged = 1;
		return -1;
	}
	if ((ctx->multi = cu->multi_init()) == NULL) {
		log_err("fetch: curl_multi_init failed");
		return -1;
	}
	ctx->cu = cu;
	if (multi_check(ctx, "curl_multi_setopt(CURLMOPT_SOCKETFUNCTION)",
	    cu->multi_setopt(ctx->multi, CURLMOPT_SOCKETFUNCTION, socket_fn)) ||
	    multi_check(ctx, "curl_multi_setopt(CURLMOPT_SOCKETDATA)",
	    cu->multi_setopt(ctx->multi, CURLMOPT_SOCKETDATA, ctx)) ||
	    multi_check(ctx, "curl_multi_setopt(CURLMOPT_TIMERFUNCTION)",
	    cu->multi_setopt(ctx->multi, CURLMOPT_TIMERFUNCTION, timer_fn)) ||
	    multi_check(ctx, "curl_multi_setopt(CURLMOPT_TIMERDATA)",
	    cu->multi_setopt(ctx->multi, CURLMOPT_TIMERDATA, ctx))) {
		cu->multi_cleanup(ctx->multi);
		ctx->multi = NULL;
		ctx->cu = NULL;
		return -1;
	}
	if (ctx->load_logged)
		log_info("fetch: libcurl loaded");
	ctx->load_logged = 0;
	return 0;
}

struct fetch_ctx *
fetch_ctx_new(struct event_base *base)
{
	struct fetch_ctx	*ctx;

	if ((ctx = calloc(1, sizeof(*ctx))) == NULL)
		return NULL;
	ctx->base = base;
	ctx->rng = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^
	    (uint64_t)(uintptr_t)ctx;
	if (ctx->rng == 0)
		ctx->rng = 1;
	TAILQ_INIT(&ctx->jobs);
	TAILQ_INIT(&ctx->pools);
	LIST_INIT(&ctx->socks);
	LIST_INIT(&ctx->stats);
	evtimer_assign(&ctx->timer_ev, base, timer_cb, ctx);
	return ctx;
}

/*
 * Cancels every job: transfers stop, free_cb runs, and waiters are dropped
 * without done() (their owners are being torn down too). Pools not yet
 * freed stay valid for fetch_pool_free() and fetch_pool_health(), and
 * fetch_join() on them returns NULL.
 */
void
fetch_ctx_free(struct fetch_ctx *ctx)
{
	struct fetch_job	*job;
	struct fetch_pool	*pool;
	struct fetch_sock	*fs;
	struct fetch_stats	*st;

	if (ctx == NULL)
		return;
	while ((job = TAILQ_FIRST(&ctx->jobs)) != NULL) {
		TAILQ_REMOVE(&job->pool->jobs, job, pool_entry);
		job_free(job);
	}
	while ((pool = TAILQ_FIRST(&ctx->pools)) != NULL) {
		TAILQ_REMOVE(&ctx->pools, pool, entry);
		pool->ctx = NULL;
	}
	evtimer_del(&ctx->timer_ev);
	if (ctx->multi != NULL)
		multi_check(ctx, "curl_multi_cleanup",
		    ctx->cu->multi_cleanup(ctx->multi));
	while ((fs = LIST_FIRST(&ctx->socks)) != NULL) {
		event_del(&fs->ev);
		LIST_REMOVE(fs, entry);
		free(fs);
	}
	/* Pools still held keep theirs, off the list. */
	while ((st = LIST_FIRST(&ctx->stats)) != NULL) {
		LIST_REMOVE(st, entry);
		st->listed = 0;
	}
	free(ctx);
}

size_t
fetch_ctx_inflight(const struct fetch_ctx *ctx)
{
	return ctx != NULL ? ctx->njobs : 0;
}

struct fetch_pool *
fetch_pool_new(struct fetch_ctx *ctx, const char *service,
    const struct fetch_upstream_conf *ups, size_t n,
    const struct fetch_pool_conf *conf)
{
	struct fetch_pool	*pool;
	size_t			 i;

	if (ctx == NULL || service == NULL || ups == NULL || n == 0)
		return NULL;
	for (i = 0; i < n; i++)
		if (ups[i].name == NULL || ups[i].url == NULL)
			return NULL;
	if ((pool = calloc(1, sizeof(*pool))) == NULL)
		return NULL;
	pool->refs = 1;
	TAILQ_INIT(&pool->jobs);
	TAILQ_INIT(&pool->queue);
	if ((pool->service = strdup(service)) == NULL ||
	    (pool->ups = calloc(n, sizeof(*pool->ups))) == NULL)
		goto fail;
	for (i = 0; i < n; i++) {
		pool->nups++;
		if ((pool->ups[i].name = strdup(ups[i].name)) == NULL ||
		    (pool->ups[i].url = strdup(ups[i].url)) == NULL ||
		    (pool->ups[i].st = stats_get(ctx, service,
		    ups[i].name)) == NULL)
			goto fail;
		pool->ups[i].verify_nonce = ups[i].verify_nonce;
	}
	pool->conf.hedge_ms = FETCH_HEDGE_MS;
	pool->conf.connect_timeout_ms = FETCH_CONNECT_TIMEOUT_MS;
	pool->conf.timeout_ms = FETCH_TIMEOUT_MS;
	if (conf != NULL) {
		pool->conf.hedge_ms = conf->hedge_ms > 0 ? conf->hedge_ms : 0;
		if (conf->connect_timeout_ms > 0)
			pool->conf.connect_timeout_ms = conf->connect_timeout_ms;
		if (conf->timeout_ms > 0)
			pool->conf.timeout_ms = conf->timeout_ms;
		pool->conf.shuffle = conf->shuffle;
		pool->conf.pacing_ms = conf->pacing_ms > 0 ? conf->pacing_ms : 0;
		pool->conf.max_inflight = conf->max_inflight;
		pool->conf.max_response_bytes = conf->max_response_bytes;
	}
	if (pool->conf.max_response_bytes == 0)
		pool->conf.max_response_bytes = FETCH_MAX_RESPONSE_BYTES;
	if ((pool->slot_ev = event_new(ctx->base, -1, 0, slot_cb, pool)) == NULL)
		goto fail;
	if (pool->conf.pacing_ms > 0 &&
	    (pool->paces = calloc(FETCH_PACE_SLOTS, sizeof(*pool->paces))) == NULL)
		goto fail;
	pool->ctx = ctx;
	TAILQ_INSERT_TAIL(&ctx->pools, pool, entry);
	return pool;
 fail:
	pool_unref(pool);
	return NULL;
}

void
fetch_pool_free(struct fetch_pool *pool)
{
	pool_unref(pool);
}

struct fetch_waiter *
fetch_join(struct fetch_pool *pool, const struct fetch_req *req,
    fetch_check_cb *check, void *job_arg, fetch_free_cb *free_cb,
    fetch_done_cb *done, void *waiter_arg)
{
	struct fetch_job	*job = NULL;
	struct fetch_waiter	*w;
	int			 joined = 0, started;

	if (pool == NULL || pool->ctx == NULL || req == NULL || done == NULL)
		return NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->done = done;
	w->arg = waiter_arg;

	if (req->key != NULL &&
	    (job = job_find(pool, req->key, req->klen)) != NULL)
		joined = 1;
	else if ((job = job_new(pool, req)) == NULL) {
		free(w);
		return NULL;
	}
	w->job = job;
	TAILQ_INSERT_TAIL(&job->waiters, w, entry);
	if (joined) {
		if (free_cb != NULL)
			free_cb(job_arg);
		return w;
	}
	started = job_advance(job);
	if (started == JOB_WAIT_SLOT) {
		/* At max_inflight: the job waits its turn, joinable meanwhile. */
		job->check = check;
		job->job_arg = job_arg;
		job->free_cb = free_cb;
		job->queued = 1;
		TAILQ_INSERT_TAIL(&pool->queue, job, queue_entry);
		return w;
	}
	if (started == -1 && (job->last_err == FETCH_ERR_PACED ||
	    pool->ctx->multi == NULL)) {
		/*
		 * Each upstream had this very request just now, or libcurl
		 * is not loaded: fail soon, saying so.
		 */
		struct timeval	soon = { 0, 0 };

		job->check = check;
		job->job_arg = job_arg;
		job->free_cb = free_cb;
		evtimer_add(&job->hedge_ev, &soon);
		return w;
	}
	if (started == -1) {
		/* nothing asked upstream: undo as if never called */
		TAILQ_REMOVE(&pool->jobs, job, pool_entry);
		job_free(job);		/* frees w with the waiters */
		return NULL;
	}
	job->check = check;
	job->job_arg = job_arg;
	job->free_cb = free_cb;
	return w;
}

void
fetch_leave(struct fetch_waiter *w)
{
	struct fetch_job	*job;

	if (w == NULL)
		return;
	job = w->job;
	TAILQ_REMOVE(&job->waiters, w, entry);
	free(w);
	/* Queued and wanted by no one: never asked, so nothing is lost. */
	if (job->queued && TAILQ_EMPTY(&job->waiters)) {
		TAILQ_REMOVE(&job->pool->jobs, job, pool_entry);
		job_free(job);
	}
}

void
fetch_release(struct fetch_job *job)
{
	struct fetch_attempt	*a;

	if (job == NULL || job->held == NULL)
		return;
	a = job->held;
	job->held = NULL;
	job_finish(job, a);
}

void
fetch_set_outcome(struct fetch_job *job, const struct fetch_outcome *o)
{
	job->outcome = o;
}

size_t
fetch_pool_health(const struct fetch_pool *pool, struct fetch_health *h,
    size_t max)
{
	const struct fetch_upstream	*up;
	int64_t				 now = now_ms();
	size_t				 i;

	if (pool == NULL || h == NULL)
		return 0;
	for (i = 0; i < pool->nups && i < max; i++) {
		up = &pool->ups[i];
		memset(&h[i], 0, sizeof(h[i]));
		h[i].name = up->name;
		h[i].url = up->url;
		h[i].up = up->st->last_ok && up->cooldown_until_ms <= now;
		h[i].consecutive_failures = up->consecutive;
		h[i].cooldown_until_ms = up->cooldown_until_ms;
		h[i].last_failure_unix = up->last_failure_unix;
		h[i].last_success_unix = up->st->last_success_unix;
		h[i].requests = up->st->requests;
		memcpy(h[i].failures, up->st->failures, sizeof(h[i].failures));
		h[i].latency = &up->st->latency;
	}
	return i;
}

const char *
fetch_pool_service(const struct fetch_pool *pool)
{
	return pool != NULL ? pool->service : NULL;
}

/* O(queue): walked for /metrics only, so the queue keeps no counter to drift. */
size_t
fetch_pool_queued(const struct fetch_pool *pool)
{
	const struct fetch_job	*job;
	size_t			 n = 0;

	if (pool == NULL)
		return 0;
	TAILQ_FOREACH(job, &pool->queue, queue_entry)
		n++;
	return n;
}

char *
fetch_pool_describe(const struct fetch_pool *pool, char *buf, size_t len)
{
	size_t	i, off = 0;
	int	n;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (i = 0; pool != NULL && i < pool->nups && off < len; i++) {
		n = snprintf(buf + off, len - off, "%s%s (%s)", i ? ", " : "",
		    pool->ups[i].name, pool->ups[i].url);
		if (n < 0)
			break;
		off += (size_t)n;
	}
	return buf;
}

const char *
fetch_curl_version(void)
{
	const struct fetch_curl		*cu;
	const curl_version_info_data	*v;
	char				 why[512];

	/* Loads it when no transfer has yet: the version this process runs with. */
	if ((cu = fetch_curl_load(why, sizeof(why))) == NULL)
		return "unavailable";
	v = cu->version_info(CURLVERSION_NOW);
	return v != NULL && v->version != NULL ? v->version : "unknown";
}
