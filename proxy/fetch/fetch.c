/* SPDX-License-Identifier: Apache-2.0 */
/* Upstream fetch jobs: failover, hedging, pacing and the transfer slots, behind fetch.h. */
#include "config.h"

#include <sys/queue.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "proxy/fetch/fetch.h"
#include "proxy/fetch/fetch_int.h"
#include "proxy/log.h"
#include "proxy/loop.h"

static int	fetch_job_advance(struct fetch_job *);

/* job_advance: nothing started because the pool is at max_inflight */
#define JOB_WAIT_SLOT	1

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
		fetch_stats_unref(pool->ups[i].st);
	}
	free(pool->ups);
	free(pool->ca_file);
	free(pool->cert_file);
	free(pool->key_file);
	free(pool->paces);
	loop_event_free(pool->slot_ev);
	free(pool->service);
	free(pool);
}

void
fetch_summary_add(struct fetch_job *job, const char *name, const char *reason)
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

/* Frees a job, its running attempts cancelled; done() is not called. */
static void
fetch_job_free(struct fetch_job *job)
{
	struct fetch_attempt	*a;

	while ((a = TAILQ_FIRST(&job->attempts)) != NULL)
		fetch_attempt_cancel(a);
	evtimer_del(&job->hedge_ev);
	if (job->queued)
		TAILQ_REMOVE(&job->pool->queue, job, queue_entry);
	fetch_attempt_free(job->last);
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

/* An answer was accepted: the other attempts stop, and nothing more starts. */
void
fetch_job_settle(struct fetch_job *job, const struct fetch_attempt *a)
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
			fetch_up_failure(job->pool, &job->pool->ups[o->up],
			    FETCH_ERR_TIMEOUT, "no answer while another upstream "
			    "answered", -1);
		fetch_attempt_cancel(o);
	}
}

/*
 * The job ends: `a` (already out of curl) answered, or, when NULL, every
 * upstream failed. Its owner's done() is told, then the job is freed.
 */
void
fetch_job_finish(struct fetch_job *job, struct fetch_attempt *a)
{
	struct fetch_res	 res;

	fetch_job_settle(job, a);
	if (a != NULL) {
		fetch_res_from(&res, job, a);
		res.err = FETCH_OK;
	} else {
		fetch_res_from(&res, job, job->last);
		res.err = job->last_err;
		log_debug("fetch: %s: all upstreams failed: %s",
		    job->pool->service, job->summary);
	}
	job->done(&res, job->arg);
	fetch_attempt_free(a);
	fetch_job_free(job);
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
	if (fetch_job_advance(job) == -1 && TAILQ_EMPTY(&job->attempts))
		fetch_job_finish(job, NULL);
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
fetch_job_advance(struct fetch_job *job)
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
			fetch_summary_add(job, pool->ups[idx].name, why);
			pool->ups[idx].st->failures[FETCH_ERR_PACED]++;
			job->last_err = FETCH_ERR_PACED;
			continue;
		}
		if (fetch_attempt_start(job, idx) == 0) {
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
		fetch_summary_add(job, pool->ups[idx].name, "cannot start a transfer");
		job->last_err = FETCH_ERR_TRANSPORT;
	}
	return -1;
}

/* The job goes on: queued at max_inflight, finished when nothing is left. */
void
fetch_job_step(struct fetch_job *job)
{
	int	r;

	if ((r = fetch_job_advance(job)) == JOB_WAIT_SLOT) {
		if (TAILQ_EMPTY(&job->attempts) && !job->queued) {
			job->queued = 1;
			TAILQ_INSERT_TAIL(&job->pool->queue, job, queue_entry);
		}
	} else if (r == -1 && TAILQ_EMPTY(&job->attempts))
		fetch_job_finish(job, NULL);
}

/* A transfer ended: its slot goes to the queue, from the event loop. */
void
fetch_slot_release(struct fetch_attempt *a)
{
	struct fetch_pool	*pool = a->job->pool;

	if (!a->counted)
		return;
	a->counted = 0;
	pool->ntransfers--;
	if (!TAILQ_EMPTY(&pool->queue) && pool->slot_ev != NULL)
		event_active(pool->slot_ev, EV_TIMEOUT, 0);
}

/* Queued jobs take the free slots in order. */
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
		fetch_job_step(job);
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
fetch_job_order(struct fetch_job *job)
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
fetch_job_new(struct fetch_pool *pool, const struct fetch_req *req,
    fetch_check_cb *check, fetch_done_cb *done, void *arg)
{
	struct fetch_job	*job;
	int			 fail = 0;

	if ((job = calloc(1, sizeof(*job))) == NULL)
		return NULL;
	job->ctx = pool->ctx;
	job->pool = pool;
	pool->refs++;
	job->check = check;
	job->done = done;
	job->arg = arg;
	TAILQ_INIT(&job->attempts);
	evtimer_assign(&job->hedge_ev, pool->ctx->base, hedge_cb, job);
	TAILQ_INSERT_TAIL(&pool->ctx->jobs, job, ctx_entry);
	pool->ctx->njobs++;
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
	if (fail || fetch_job_order(job) == -1) {
		fetch_job_free(job);
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
	return fetch_attempt_header(res->priv, name);
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
	a->kept = NULL;
	a->kept_len = 0;
}

struct fetch_ctx *
fetch_ctx_new(struct event_base *base)
{
	struct fetch_ctx	*ctx;

	if ((ctx = calloc(1, sizeof(*ctx))) == NULL)
		return NULL;
	/* Counted by libcurl: fetch_ctx_free's curl_global_cleanup undoes it. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		log_err("fetch: curl_global_init failed");
		free(ctx);
		return NULL;
	}
	ctx->base = base;
	ctx->rng = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^
	    (uint64_t)(uintptr_t)ctx;
	if (ctx->rng == 0)
		ctx->rng = 1;
	TAILQ_INIT(&ctx->jobs);
	TAILQ_INIT(&ctx->pools);
	LIST_INIT(&ctx->socks);
	LIST_INIT(&ctx->stats);
	evtimer_assign(&ctx->timer_ev, base, fetch_timer_cb, ctx);
	if (fetch_multi_new(ctx) == -1) {
		fetch_ctx_free(ctx);
		return NULL;
	}
	return ctx;
}

/*
 * Ends every job: transfers stop, and each owner's done() is called with
 * a NULL result so that it can free its arg. Pools not yet freed stay
 * valid for fetch_pool_free() and fetch_pool_health(), and fetch_start()
 * on them returns NULL.
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
		job->done(NULL, job->arg);
		fetch_job_free(job);
	}
	while ((pool = TAILQ_FIRST(&ctx->pools)) != NULL) {
		TAILQ_REMOVE(&ctx->pools, pool, entry);
		pool->ctx = NULL;
	}
	evtimer_del(&ctx->timer_ev);
	if (ctx->multi != NULL)
		fetch_multi_check("curl_multi_cleanup",
		    curl_multi_cleanup(ctx->multi));
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
	curl_global_cleanup();
	free(ctx);
}

size_t
fetch_ctx_inflight(const struct fetch_ctx *ctx)
{
	return ctx != NULL ? ctx->njobs : 0;
}

/* The conf's upstream TLS files into pool's own copies; 0, or -1 out of memory. */
static int
pool_tls_copy(struct fetch_pool *pool, const struct fetch_pool_conf *conf)
{
	if ((conf->ca_file != NULL &&
	    (pool->ca_file = strdup(conf->ca_file)) == NULL) ||
	    (conf->cert_file != NULL &&
	    (pool->cert_file = strdup(conf->cert_file)) == NULL) ||
	    (conf->key_file != NULL &&
	    (pool->key_file = strdup(conf->key_file)) == NULL))
		return -1;
	return 0;
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
	TAILQ_INIT(&pool->queue);
	if ((pool->service = strdup(service)) == NULL ||
	    (pool->ups = calloc(n, sizeof(*pool->ups))) == NULL)
		goto fail;
	for (i = 0; i < n; i++) {
		pool->nups++;
		if ((pool->ups[i].name = strdup(ups[i].name)) == NULL ||
		    (pool->ups[i].url = strdup(ups[i].url)) == NULL ||
		    (pool->ups[i].st = fetch_stats_get(ctx, service,
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
		if (pool_tls_copy(pool, conf) == -1)
			goto fail;
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

struct fetch_job *
fetch_start(struct fetch_pool *pool, const struct fetch_req *req,
    fetch_check_cb *check, fetch_done_cb *done, void *arg)
{
	struct fetch_job	*job;
	struct timeval		 soon = { 0, 0 };
	int			 started;

	if (pool == NULL || pool->ctx == NULL || req == NULL || done == NULL)
		return NULL;
	if ((job = fetch_job_new(pool, req, check, done, arg)) == NULL)
		return NULL;
	started = fetch_job_advance(job);
	if (started == JOB_WAIT_SLOT) {
		/* At max_inflight: the job waits its turn. */
		job->queued = 1;
		TAILQ_INSERT_TAIL(&pool->queue, job, queue_entry);
	} else if (started == -1 && job->last_err == FETCH_ERR_PACED) {
		/* Each upstream had this very request just now: fail soon, saying so. */
		evtimer_add(&job->hedge_ev, &soon);
	} else if (started == -1) {
		/* nothing asked upstream: undo as if never called */
		fetch_job_free(job);
		return NULL;
	}
	return job;
}

int
fetch_job_queued(const struct fetch_job *job)
{
	return job->queued;
}

void
fetch_cancel(struct fetch_job *job)
{
	if (job != NULL)
		fetch_job_free(job);
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

const char *
fetch_curl_version(void)
{
	const curl_version_info_data	*v;

	v = curl_version_info(CURLVERSION_NOW);
	return v != NULL && v->version != NULL ? v->version : "unknown";
}
