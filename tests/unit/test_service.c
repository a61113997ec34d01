/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/service.c and its single flight (flight.c) over a real store: a fake fetch and a fake HTTP side, real routes, real vendor vectors. */
#include "config.h"

#include <sys/socket.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "attest/ocsp_req.h"
#include "cache/store.h"
#include "cache/writer.h"
#include "entry/conf.h"
#include "proxy/fetch/fetch.h"
#include "proxy/http/http.h"
#include "proxy/metrics.h"
#include "proxy/metrics_page.h"
#include "proxy/refresh/refresh.h"
#include "proxy/kinds/route.h"
#include "proxy/service.h"

#include "refresh_fixture.h"
#include "store_fixture.h"
#include "tv.h"

#define CHAIN_PATH	"/vcek/v1/Milan/cert_chain"
#define GENOA_PATH	"/vcek/v1/Genoa/cert_chain"
#define OCSP_REQ	"/tests/vectors/nvidia/captured/requests/h100-a-0-leaf-fmc.nonce.sha384.req.der"
#define T_2019_01_01	1546300800	/* before the Milan chain's notBefore */
#define JOBS_MAX	16
#define HDRS_BYTES	4096
#define SPIN_MAX_MS	10000	/* a bound for a slow machine, never a timing */

/* ---- the fake HTTP side: what a client was answered ---------------------- */

struct http_req {
	struct event_base	*base;
	const char		*content_type;	/* the request's */
	const uint8_t		*body;
	size_t			 body_len;
	int			 status;
	int			 replies;
	char			 hdrs[HDRS_BYTES];	/* "Name: value\n" ... */
	struct evbuffer		*out;
	http_gone_cb		*gone;
	void			*gone_arg;
	int			 noted;
	enum metrics_result	 result;
	char			 log_note[HTTP_LOG_NOTE_BYTES];
};

struct event_base *
http_req_base(const struct http_req *req)
{
	return req->base;
}

const char *
http_req_header(const struct http_req *req, const char *name)
{
	if (strcasecmp(name, "Content-Type") == 0)
		return req->content_type;
	return NULL;
}

/* A request with a body is a POST. */
enum http_method
http_req_method(const struct http_req *req)
{
	return req->body != NULL ? HTTP_POST : HTTP_GET;
}

const uint8_t *
http_req_body(const struct http_req *req, size_t *len)
{
	*len = req->body_len;
	return req->body;
}

void
http_req_on_gone(struct http_req *req, http_gone_cb *cb, void *arg)
{
	req->gone = cb;
	req->gone_arg = arg;
}

/* Not a socket: exempt from client_miss_rate_per_s, as a Unix socket is. */
int
http_req_peer(const struct http_req *req, struct sockaddr_storage *ss)
{
	(void)req;
	(void)ss;
	return -1;
}

void
http_resp_header(struct http_req *req, const char *name, const char *value)
{
	size_t	n = strlen(req->hdrs);

	snprintf(req->hdrs + n, sizeof(req->hdrs) - n, "%s: %s\n", name, value);
}

void
http_req_set_log_note(struct http_req *req, const char *text, size_t len)
{
	snprintf(req->log_note, sizeof(req->log_note), "%.*s", (int)len, text);
}

void
http_resp_header_n(struct http_req *req, const char *name, size_t nlen,
    const char *value, size_t vlen)
{
	size_t	n = strlen(req->hdrs);

	snprintf(req->hdrs + n, sizeof(req->hdrs) - n, "%.*s: %.*s\n",
	    (int)nlen, name, (int)vlen, value);
}

struct evbuffer *
http_resp_body(struct http_req *req)
{
	return req->out;
}

/* Borrowed bytes: copied at once, where the tests read every body. */
void
http_resp_body_ref(struct http_req *req, const void *p, size_t len)
{
	evbuffer_add(req->out, p, len);
}

void
http_reply(struct http_req *req, int status, const char *reason)
{
	(void)reason;
	req->status = status;
	req->replies++;
	req->gone = NULL;
}

const char *
http_reason(int status)
{
	return status == 404 ? "Not Found" : "Other";
}

void
http_error(struct http_req *req, int status, const char *reason)
{
	http_reply(req, status, reason);
}

void
metrics_note(struct http_req *req, unsigned route,
    enum metrics_result result)
{
	(void)route;
	req->noted++;
	req->result = result;
}

/*
 * ---- the fake fetch: requests recorded, answered when the test says -------
 * Below proxy/flight.c, which is the real one: single flight, the hold
 * while storing and the outcome are the service's own.
 */

struct fetch_job {
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen;
	char			 method[8];
	char			 path[256];
	size_t			 body_len;
	fetch_check_cb		*check;
	fetch_done_cb		*done;
	void			*arg;
	int			 ended;
	const char		*headers;	/* of the answer: "Name: value\n" */
};

static struct fetch_job	jobs[JOBS_MAX];
static size_t		njobs;
static int		fake_pool;	/* what fetch_pool_new returns */

struct fetch_pool *
fetch_pool_new(struct fetch_ctx *ctx, const char *service,
    const struct fetch_upstream_conf *ups, size_t n,
    const struct fetch_pool_conf *pc)
{
	(void)ctx;
	(void)service;
	(void)ups;
	(void)n;
	(void)pc;
	return (struct fetch_pool *)&fake_pool;
}

void
fetch_pool_free(struct fetch_pool *pool)
{
	(void)pool;
}

struct fetch_job *
fetch_start(struct fetch_pool *pool, const struct fetch_req *req,
    fetch_check_cb *check, fetch_done_cb *done, void *arg)
{
	struct fetch_job	*job;

	assert_ptr_equal(pool, &fake_pool);
	assert_true(njobs < JOBS_MAX);
	job = &jobs[njobs++];
	memset(job, 0, sizeof(*job));
	memcpy(job->key, req->key, req->klen);
	job->klen = req->klen;
	snprintf(job->method, sizeof(job->method), "%s", req->method);
	snprintf(job->path, sizeof(job->path), "%s", req->path);
	job->body_len = req->body_len;
	job->check = check;
	job->done = done;
	job->arg = arg;
	return job;
}

/* No max_inflight here: a job is never queued. */
int
fetch_job_queued(const struct fetch_job *job)
{
	(void)job;
	return 0;
}

void
fetch_cancel(struct fetch_job *job)
{
	job->ended = 1;
}

static const char *
answer_header(const void *arg, const char *name)
{
	const struct fetch_res	*res = arg;
	const struct fetch_job	*job = res->priv;
	static char		 v[256];
	const char		*p;
	size_t			 n = strlen(name), k;

	for (p = job->headers; p != NULL && *p != '\0'; p = strchr(p, '\n') + 1) {
		if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
			p += n + 1;
			while (*p == ' ')
				p++;
			k = strcspn(p, "\n");
			snprintf(v, sizeof(v), "%.*s", (int)k, p);
			return v;
		}
		if (strchr(p, '\n') == NULL)
			break;
	}
	return NULL;
}

void
fetch_res_answer(const struct fetch_res *res, struct entry_answer *a)
{
	a->body = res->body;
	a->body_len = res->body_len;
	a->header = answer_header;
	a->header_arg = res;
}

/*
 * The upstream answers job with status and body; the check's verdict, or
 * -1 for non-2xx. The bytes live in a buffer of the fake's, overwritten
 * once the fetch is done with them: a waiter told later (the hold) must
 * have been given a copy.
 */
static int
answer(struct fetch_job *job, int status, const uint8_t *body, size_t len,
    const char *headers)
{
	struct fetch_res	 res;
	enum fetch_verdict	 v = FETCH_ACCEPT;
	char			 why[256] = "";
	uint8_t			*buf;

	assert_false(job->ended);
	assert_non_null(buf = malloc(len ? len : 1));
	memcpy(buf, body, len);
	memset(&res, 0, sizeof(res));
	res.err = FETCH_OK;
	res.http_status = status;
	res.body = buf;
	res.body_len = len;
	res.upstream = "fake-upstream";
	res.verify_nonce = 1;
	res.priv = job;
	job->headers = headers;
	if (status / 100 == 2)
		v = job->check(&res, job->arg, why, sizeof(why));
	if (v == FETCH_ACCEPT) {
		job->ended = 1;
		job->done(&res, job->arg);
	}
	memset(buf, 0xa5, len);
	free(buf);
	if (status / 100 != 2)
		return -1;
	return (int)v;
}

/* Every upstream failed. */
static void
upstream_fail(struct fetch_job *job, enum fetch_err err, const char *summary)
{
	struct fetch_res	res;

	assert_false(job->ended);
	memset(&res, 0, sizeof(res));
	res.err = err;
	res.summary = summary;
	job->ended = 1;
	job->done(&res, job->arg);
}

/* ---- the fixture ----------------------------------------------------------- */

struct fx {
	struct store_fixture	*sf;
	struct event_base	*base;
	struct refresh		*refresh;
	struct cache_writer	*writer;
	struct gen		*gen;
	uint8_t			*chain;	/* Milan's cert_chain, as AMD serves it */
	size_t			 chain_len;
	struct http_req		 reqs[8];
	size_t			 nreqs;
};

static int	fake_ctx;	/* a fetch context that is never looked into */

/* A generation over the store; edit tunes the configuration first. */
static void
gen_up(struct fx *f, int with_writer, void (*edit)(struct config *))
{
	const struct svc_ops	*ops[CACHE_KIND_MAX];
	struct config		*cfg;
	char			 err[256];

	assert_non_null(cfg = calloc(1, sizeof(*cfg)));
	config_defaults(cfg);
	cfg->svc[CACHE_KIND_KDS].pacing_ms = 0;
	cfg->svc[CACHE_KIND_KDS].client_miss_rate_per_s = 0;
	cfg->svc[CACHE_KIND_OCSP].client_miss_rate_per_s = 0;
	if (edit != NULL)
		edit(cfg);
	if (with_writer)
		assert_non_null(f->writer = cache_writer_start(f->sf->c, err,
		    sizeof(err)));
	route_ops(ops);
	f->gen = gen_new(cfg, ops, (struct fetch_ctx *)&fake_ctx, f->sf->c, f->writer,
	    NULL, f->refresh, err, sizeof(err));
	if (f->gen == NULL)
		fail_msg("gen_new: %s", err);
	gen_install_refresh(f->gen);
}

static int
setup(void **state)
{
	struct fx	*f;

	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    refresh_fixture_open(&f->sf, &f->base, &f->refresh) == -1)
		return -1;
	f->chain = tv_src("/tests/vectors/amd/cert_chain_milan", &f->chain_len);
	njobs = 0;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx	*f = *state;
	size_t		 i;
	int		 rv;

	for (i = 0; i < njobs; i++)
		if (!jobs[i].ended)
			upstream_fail(&jobs[i], FETCH_ERR_TRANSPORT, "teardown");
	for (i = 0; i < f->nreqs; i++)
		evbuffer_free(f->reqs[i].out);
	gen_unref(f->gen);
	cache_writer_stop(f->writer);
	rv = refresh_fixture_close(f->sf, f->base, f->refresh);
	free(f->chain);
	free(f);
	return rv;
}

static struct http_req *
new_req(struct fx *f)
{
	struct http_req	*req;

	assert_true(f->nreqs < sizeof(f->reqs) / sizeof(f->reqs[0]));
	req = &f->reqs[f->nreqs++];
	memset(req, 0, sizeof(*req));
	req->base = f->base;
	assert_non_null(req->out = evbuffer_new());
	return req;
}

/* A KDS client asks for path. */
static struct http_req *
ask_kds(struct fx *f, const char *path)
{
	struct http_req	*req = new_req(f);

	(void)route_table[CACHE_KIND_KDS]->handle(gen_svc(f->gen, CACHE_KIND_KDS),
	    req, path, NULL);
	return req;
}

static void
assert_body(struct http_req *req, const uint8_t *want, size_t len)
{
	assert_int_equal(evbuffer_get_length(req->out), len);
	assert_memory_equal(evbuffer_pullup(req->out, -1), want, len);
}

static void
assert_header(const struct http_req *req, const char *line)
{
	if (strstr(req->hdrs, line) == NULL)
		fail_msg("no \"%s\" in:\n%s", line, req->hdrs);
}

/*
 * The answer's Cache-Status is want, its ttl (when want ends in "ttl=")
 * within a few seconds of ttl_s, and the access log's note says the same.
 */
static void
assert_cache_status(const struct http_req *req, const char *want, long ttl_s)
{
	char		 line[256], note[256];
	const char	*p, *rest;
	long		 ttl;

	snprintf(line, sizeof(line), "Cache-Status: %s", want);
	if ((p = strstr(req->hdrs, line)) == NULL)
		fail_msg("no \"%s\" in:\n%s", line, req->hdrs);
	rest = p + strlen(line);
	if (ttl_s >= 0) {
		ttl = strtol(rest, NULL, 10);
		if (ttl > ttl_s || ttl < ttl_s - 5)
			fail_msg("ttl %ld, want about %ld: %s", ttl, ttl_s, p);
	} else if (*rest != '\n')
		fail_msg("more than \"%s\": %s", want, p);
	snprintf(note, sizeof(note), "cache-status=\"%s", want);
	if (strncmp(req->log_note, note, strlen(note)) != 0)
		fail_msg("log note \"%s\", want \"%s...\"", req->log_note, note);
}

/* Store path's entry with body bytes, valid from tu to nu. */
static void
store_kds(struct fx *f, const char *path, const char *body, int64_t tu,
    int64_t nu)
{
	struct cache_meta	m;
	struct cache_body	b = { 0 };

	store_meta(&m, CACHE_KIND_KDS, tu);
	m.next_update = nu;
	m.flags = CACHE_F_NO_REFRESH;
	b.response = (const uint8_t *)body;
	b.response_len = strlen(body);
	b.request = (const uint8_t *)path;
	b.request_len = strlen(path);
	assert_int_equal(cache_put(f->sf->c, (const uint8_t *)path, strlen(path),
	    &m, &b), 0);
}

/* ---- the cases --------------------------------------------------------------- */

/* A valid stored entry is served as stored, with no upstream asked. */
static void
test_hit(void **state)
{
	struct fx	*f = *state;
	time_t		 now = time(NULL);
	struct http_req	*req;

	gen_up(f, 0, NULL);
	store_kds(f, CHAIN_PATH, "stored chain bytes", now - 60, now + 3600);
	req = ask_kds(f, CHAIN_PATH);
	assert_int_equal(njobs, 0);
	assert_int_equal(req->replies, 1);
	assert_int_equal(req->status, 200);
	assert_int_equal(req->result, METRICS_RES_HIT);
	assert_body(req, (const uint8_t *)"stored chain bytes", 18);
	assert_header(req, "Content-Type: application/x-pem-file\n");
	assert_cache_status(req, "stapled; hit; ttl=", 3600);
	assert_null(strstr(req->log_note, "upstream="));
}

/* A miss: fetched with the canonical request, verified, stored, the upstream's bytes served. */
static void
test_miss_stored(void **state)
{
	struct fx		*f = *state;
	struct http_req		*req, *again;
	struct cache_meta	 m;
	struct cache_body	 b;

	gen_up(f, 0, NULL);
	req = ask_kds(f, CHAIN_PATH);
	assert_int_equal(njobs, 1);
	assert_string_equal(jobs[0].method, "GET");
	assert_string_equal(jobs[0].path, CHAIN_PATH);
	assert_int_equal(req->replies, 0);
	assert_int_equal(answer(&jobs[0], 200, f->chain, f->chain_len,
	    "Content-Type: application/x-pem-file\n"), FETCH_ACCEPT);
	assert_int_equal(req->replies, 1);
	assert_int_equal(req->status, 200);
	assert_int_equal(req->result, METRICS_RES_MISS);
	assert_body(req, f->chain, f->chain_len);
	assert_int_equal(cache_get(f->sf->c, CACHE_KIND_KDS,
	    (const uint8_t *)CHAIN_PATH, strlen(CHAIN_PATH), &m, &b), 1);
	assert_int_equal(b.response_len, f->chain_len);
	assert_memory_equal(b.response, f->chain, f->chain_len);
	assert_string_equal(m.source, "fake-upstream");
	assert_true(m.next_update > time(NULL));
	/* KDS keeps the upstream's Content-Type with the entry. */
	assert_int_equal(b.headers_len, strlen("Content-Type: "
	    "application/x-pem-file\r\n"));
	assert_memory_equal(b.headers, "Content-Type: application/x-pem-file\r\n",
	    b.headers_len);
	/* Went upstream and stored, valid to nextUpdate; the log names the upstream. */
	assert_cache_status(req, "stapled; fwd=miss; stored; ttl=",
	    (long)(m.next_update - time(NULL)));
	assert_non_null(strstr(req->log_note, "\" upstream=fake-upstream"));
	/* The next client is a hit. */
	again = ask_kds(f, CHAIN_PATH);
	assert_int_equal(njobs, 1);
	assert_int_equal(again->result, METRICS_RES_HIT);
	assert_body(again, f->chain, f->chain_len);
	assert_cache_status(again, "stapled; hit; ttl=",
	    (long)(m.next_update - time(NULL)));
	assert_null(strstr(again->log_note, "upstream="));
}

/* An answer that does not verify is not stored; the client gets the kind's 503. */
static void
test_refused_not_stored(void **state)
{
	struct fx	*f = *state;
	struct http_req	*req;
	struct cache_meta m;
	static const uint8_t junk[] = "-----BEGIN CERTIFICATE-----\nnot one\n";

	gen_up(f, 0, NULL);
	req = ask_kds(f, CHAIN_PATH);
	/* Not a certificate chain: refused, the next upstream (none) tried. */
	assert_int_equal(answer(&jobs[0], 200, junk, sizeof(junk) - 1, NULL),
	    FETCH_REJECT);
	assert_int_equal(req->replies, 0);
	upstream_fail(&jobs[0], FETCH_ERR_REJECTED, "fake-upstream: rejected: parse");
	assert_int_equal(req->replies, 1);
	assert_int_equal(req->status, 503);
	assert_int_equal(cache_get_meta(f->sf->c, CACHE_KIND_KDS,
	    (const uint8_t *)CHAIN_PATH, strlen(CHAIN_PATH), &m), 0);
}

/* A second client for the same key joins the first's fetch: one upstream request. */
static void
test_join(void **state)
{
	struct fx		*f = *state;
	struct http_req		*a, *b, *c;
	struct cache_meta	 m;

	gen_up(f, 0, NULL);
	a = ask_kds(f, CHAIN_PATH);
	b = ask_kds(f, CHAIN_PATH);
	c = ask_kds(f, GENOA_PATH);	/* another key: its own fetch */
	assert_int_equal(njobs, 2);	/* b joined a's flight */
	assert_int_equal(answer(&jobs[0], 200, f->chain, f->chain_len, NULL),
	    FETCH_ACCEPT);
	assert_int_equal(a->replies, 1);
	assert_int_equal(b->replies, 1);
	assert_int_equal(c->replies, 0);
	assert_body(a, f->chain, f->chain_len);
	assert_body(b, f->chain, f->chain_len);
	assert_int_equal(b->result, METRICS_RES_MISS);
	/* The second joined the first's fetch: collapsed (RFC 9211 2.6). */
	assert_int_equal(cache_get_meta(f->sf->c, CACHE_KIND_KDS,
	    (const uint8_t *)CHAIN_PATH, strlen(CHAIN_PATH), &m), 1);
	assert_null(strstr(a->hdrs, "collapsed"));
	assert_cache_status(a, "stapled; fwd=miss; stored; ttl=",
	    (long)(m.next_update - time(NULL)));
	assert_cache_status(b, "stapled; fwd=miss; stored; collapsed; ttl=",
	    (long)(m.next_update - time(NULL)));
}

/* A 404 is passed on as sent and remembered: the next ask reaches no upstream. */
static void
test_negative(void **state)
{
	struct fx	*f = *state;
	struct http_req	*req, *again;
	static const uint8_t nf[] = "no such chip";

	gen_up(f, 0, NULL);
	req = ask_kds(f, GENOA_PATH);
	assert_int_equal(answer(&jobs[0], 404, nf, sizeof(nf) - 1, NULL), -1);
	assert_int_equal(req->status, 404);
	assert_int_equal(req->result, METRICS_RES_FINAL);
	assert_body(req, nf, sizeof(nf) - 1);
	assert_cache_status(req, "stapled; fwd=miss; fwd-status=404", -1);
	again = ask_kds(f, GENOA_PATH);
	assert_int_equal(njobs, 1);
	assert_int_equal(again->replies, 1);
	assert_int_equal(again->status, 404);
	assert_int_equal(again->result, METRICS_RES_FINAL);
	assert_body(again, nf, sizeof(nf) - 1);
	assert_cache_status(again, "stapled; hit", -1);	/* remembered */
}

static void
neg_off(struct config *cfg)
{
	cfg->svc[CACHE_KIND_KDS].negative_ttl_s = 0;
}

/* negative_ttl_s 0: a 404 is asked again every time. */
static void
test_negative_off(void **state)
{
	struct fx	*f = *state;
	static const uint8_t nf[] = "no such chip";

	gen_up(f, 0, neg_off);
	(void)ask_kds(f, GENOA_PATH);
	assert_int_equal(answer(&jobs[0], 404, nf, sizeof(nf) - 1, NULL), -1);
	(void)ask_kds(f, GENOA_PATH);
	assert_int_equal(njobs, 2);
}

static void
neg_short(struct config *cfg)
{
	cfg->svc[CACHE_KIND_KDS].negative_ttl_s = 1;
}

/* A remembered 404 lasts negative_ttl_s; then the upstream is asked again. */
static void
test_negative_expires(void **state)
{
	struct fx	*f = *state;
	struct timespec	 ms = { 0, 10000000 };
	time_t		 until;
	int		 i;
	static const uint8_t nf[] = "no such chip";

	gen_up(f, 0, neg_short);
	(void)ask_kds(f, GENOA_PATH);
	until = time(NULL) + 1;
	assert_int_equal(answer(&jobs[0], 404, nf, sizeof(nf) - 1, NULL), -1);
	(void)ask_kds(f, GENOA_PATH);
	if (time(NULL) < until)		/* remembered for the rest of the second */
		assert_int_equal(njobs, 1);
	for (i = 0; i < SPIN_MAX_MS / 10 && time(NULL) <= until; i++)
		nanosleep(&ms, NULL);
	(void)ask_kds(f, GENOA_PATH);
	assert_int_equal(njobs, 2);
}

/* Every upstream failed: KDS clients get a 503 naming what was tried, with Retry-After. */
static void
test_failed_kds(void **state)
{
	struct fx	*f = *state;
	struct http_req	*req;
	char		*text;

	gen_up(f, 0, NULL);
	req = ask_kds(f, CHAIN_PATH);
	upstream_fail(&jobs[0], FETCH_ERR_CONNECT, "kds-a: connect: Connection refused");
	assert_int_equal(req->replies, 1);
	assert_int_equal(req->status, 503);
	assert_int_equal(req->result, METRICS_RES_UNAVAILABLE);
	assert_header(req, "Retry-After: 10\n");
	assert_cache_status(req, "stapled; fwd=miss", -1);
	evbuffer_add(req->out, "", 1);
	text = (char *)evbuffer_pullup(req->out, -1);
	assert_non_null(strstr(text, "kds-a: connect: Connection refused"));
}

/* Every upstream failed for OCSP: HTTP 200 tryLater, never cached by anyone. */
static void
test_failed_ocsp(void **state)
{
	struct fx	*f = *state;
	struct http_req	*req;
	uint8_t		*der;
	size_t		 len;

	gen_up(f, 0, NULL);
	der = tv_src(OCSP_REQ, &len);
	req = new_req(f);
	req->content_type = "application/ocsp-request";
	req->body = der;
	req->body_len = len;
	assert_int_equal(route_table[CACHE_KIND_OCSP]->handle(gen_svc(f->gen,
	    CACHE_KIND_OCSP), req, "/", NULL), 0);
	assert_int_equal(njobs, 1);
	assert_string_equal(jobs[0].method, "POST");
	assert_int_equal(jobs[0].body_len, len);
	upstream_fail(&jobs[0], FETCH_ERR_TIMEOUT, "ocsp-a: timeout");
	assert_int_equal(req->status, 200);
	assert_int_equal(req->result, METRICS_RES_TRYLATER);
	assert_body(req, OCSP_RESP_TRYLATER, sizeof(OCSP_RESP_TRYLATER));
	assert_header(req, "Content-Type: application/ocsp-response\n");
	assert_header(req, "Cache-Control: no-store\n");
	free(der);
}

/* An unsigned OCSP "unauthorized" is relayed and remembered: asked again, no upstream. */
static void
test_definitive_ocsp(void **state)
{
	struct fx	*f = *state;
	struct http_req	*req, *again;
	uint8_t		*der;
	size_t		 len;

	gen_up(f, 0, NULL);
	der = tv_src(OCSP_REQ, &len);
	req = new_req(f);
	req->content_type = "application/ocsp-request";
	req->body = der;
	req->body_len = len;
	assert_int_equal(route_table[CACHE_KIND_OCSP]->handle(gen_svc(f->gen,
	    CACHE_KIND_OCSP), req, "/", NULL), 0);
	assert_int_equal(answer(&jobs[0], 200, OCSP_RESP_UNAUTHORIZED,
	    sizeof(OCSP_RESP_UNAUTHORIZED), NULL), FETCH_ACCEPT);
	assert_int_equal(req->result, METRICS_RES_DEFINITIVE);
	assert_body(req, OCSP_RESP_UNAUTHORIZED, sizeof(OCSP_RESP_UNAUTHORIZED));
	again = new_req(f);
	again->content_type = "application/ocsp-request";
	again->body = der;
	again->body_len = len;
	assert_int_equal(route_table[CACHE_KIND_OCSP]->handle(gen_svc(f->gen,
	    CACHE_KIND_OCSP), again, "/", NULL), 0);
	assert_int_equal(njobs, 1);
	assert_int_equal(again->result, METRICS_RES_DEFINITIVE);
	assert_body(again, OCSP_RESP_UNAUTHORIZED, sizeof(OCSP_RESP_UNAUTHORIZED));
	free(der);
}

/* Past nextUpdate, or not valid yet beyond the skew: never served, fetched instead. */
static void
test_expired_not_served(void **state)
{
	struct fx	*f = *state;
	time_t		 now = time(NULL);
	struct http_req	*req;

	gen_up(f, 0, NULL);
	store_kds(f, CHAIN_PATH, "expired bytes", now - 7200, now - 1);
	store_kds(f, GENOA_PATH, "future bytes", now + 3600, now + 7200);
	req = ask_kds(f, CHAIN_PATH);
	assert_int_equal(njobs, 1);
	assert_int_equal(req->replies, 0);
	upstream_fail(&jobs[0], FETCH_ERR_CONNECT, "kds-a: connect");
	assert_int_equal(req->status, 503);
	assert_int_equal(evbuffer_search(req->out, "expired", 7, NULL).pos, -1);
	req = ask_kds(f, GENOA_PATH);
	assert_int_equal(njobs, 2);
	assert_int_equal(req->replies, 0);
}

static void
upstream_first(struct config *cfg)
{
	cfg->svc[CACHE_KIND_KDS].mode = CONFIG_MODE_UPSTREAM_FIRST;
}

/* upstream_first: asks upstream although stored; the stored entry stands in when it fails. */
static void
test_upstream_first(void **state)
{
	struct fx	*f = *state;
	time_t		 now = time(NULL);
	struct http_req	*req;

	gen_up(f, 0, upstream_first);
	store_kds(f, CHAIN_PATH, "stored chain bytes", now - 60, now + 3600);
	req = ask_kds(f, CHAIN_PATH);
	assert_int_equal(njobs, 1);
	assert_int_equal(req->replies, 0);
	upstream_fail(&jobs[0], FETCH_ERR_HTTP, "kds-a: HTTP 503");
	assert_int_equal(req->replies, 1);
	assert_int_equal(req->status, 200);
	assert_int_equal(req->result, METRICS_RES_FALLBACK);
	assert_body(req, (const uint8_t *)"stored chain bytes", 18);
	/* Asked first by configuration; the stored entry stood in. */
	assert_cache_status(req, "stapled; fwd=bypass; ttl=", 3600);
	assert_header(req, "; detail=fallback\n");
	/* Nothing stored: the kind's failure answer, as in cache_first. */
	req = ask_kds(f, GENOA_PATH);
	upstream_fail(&jobs[1], FETCH_ERR_HTTP, "kds-a: HTTP 503");
	assert_int_equal(req->status, 503);
}

/* With the writer: waiters are answered once the put landed; one asking meanwhile joins. */
static void
test_landed(void **state)
{
	struct fx		*f = *state;
	struct http_req		*a, *b;
	struct cache_meta	 m;

	gen_up(f, 1, NULL);
	a = ask_kds(f, CHAIN_PATH);
	assert_int_equal(answer(&jobs[0], 200, f->chain, f->chain_len, NULL),
	    FETCH_ACCEPT);
	assert_int_equal(a->replies, 0);	/* held until the put lands */
	assert_true(jobs[0].ended);
	b = ask_kds(f, CHAIN_PATH);
	assert_int_equal(njobs, 1);
	assert_int_equal(b->replies, 0);
	cache_writer_wait(f->writer);
	assert_int_equal(a->replies, 1);
	assert_int_equal(b->replies, 1);
	assert_int_equal(a->result, METRICS_RES_MISS);
	assert_int_equal(b->result, METRICS_RES_MISS);
	assert_body(b, f->chain, f->chain_len);
	assert_int_equal(cache_get_meta(f->sf->c, CACHE_KIND_KDS,
	    (const uint8_t *)CHAIN_PATH, strlen(CHAIN_PATH), &m), 1);
}

static void
short_budget(struct config *cfg)
{
	cfg->svc[CACHE_KIND_KDS].client_budget_ms = 50;
}

/* The client's budget ends its wait; the fetch goes on and fills the store. */
static void
test_budget(void **state)
{
	struct fx	*f = *state;
	struct http_req	*req, *again;
	struct timespec	 ms = { 0, 1000000 };
	int		 i;

	gen_up(f, 0, short_budget);
	req = ask_kds(f, CHAIN_PATH);
	for (i = 0; i < SPIN_MAX_MS && req->replies == 0; i++) {
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		nanosleep(&ms, NULL);
	}
	assert_int_equal(req->replies, 1);
	assert_int_equal(req->status, 503);
	assert_false(jobs[0].ended);
	assert_int_equal(answer(&jobs[0], 200, f->chain, f->chain_len, NULL),
	    FETCH_ACCEPT);
	assert_int_equal(req->replies, 1);	/* answered once */
	again = ask_kds(f, CHAIN_PATH);
	assert_int_equal(njobs, 1);
	assert_int_equal(again->result, METRICS_RES_HIT);
}

/* A due entry from thisUpdate tu, as a refresh finds it: its request kept, due now. */
static void
store_due(struct fx *f, const char *path, int64_t tu)
{
	struct cache_meta	m;
	struct cache_body	b = { 0 };
	time_t			now = time(NULL);

	store_meta(&m, CACHE_KIND_KDS, tu);
	m.next_update = now + 3600;
	m.fetched_at = now - 60;
	m.last_served_at = now - 60;
	m.next_refresh_at = now - 1;
	b.response = (const uint8_t *)"old chain";
	b.response_len = 9;
	b.request = (const uint8_t *)path;
	b.request_len = strlen(path);
	assert_int_equal(cache_put(f->sf->c, (const uint8_t *)path, strlen(path),
	    &m, &b), 0);
}

/* Turn the loop until the refresh has asked upstream (or the bound passes). */
static void
spin_jobs(struct fx *f, size_t n)
{
	struct timespec	ms = { 0, 1000000 };
	int		i;

	for (i = 0; i < SPIN_MAX_MS && njobs < n; i++) {
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		nanosleep(&ms, NULL);
	}
}

/* A background refresh asks with the kept request; a verified answer replaces the entry. */
static void
test_refresh_ok(void **state)
{
	struct fx		*f = *state;
	struct cache_meta	 m;
	struct cache_body	 b;
	unsigned long		 ok = metrics.refresh_ok;

	gen_up(f, 0, NULL);
	store_due(f, CHAIN_PATH, T_2019_01_01);
	refresh_start(f->refresh);
	spin_jobs(f, 1);
	assert_int_equal(njobs, 1);
	assert_string_equal(jobs[0].method, "GET");
	assert_string_equal(jobs[0].path, CHAIN_PATH);
	assert_int_equal(answer(&jobs[0], 200, f->chain, f->chain_len, NULL),
	    FETCH_ACCEPT);
	assert_int_equal(metrics.refresh_ok, ok + 1);
	assert_int_equal(cache_get(f->sf->c, CACHE_KIND_KDS,
	    (const uint8_t *)CHAIN_PATH, strlen(CHAIN_PATH), &m, &b), 1);
	assert_int_equal(b.response_len, f->chain_len);
	assert_int_equal(m.refresh_failures, 0);
	refresh_stop(f->refresh);
}

/* A refresh whose answer does not verify fails: the stored entry stays, backed off. */
static void
test_refresh_refused(void **state)
{
	struct fx		*f = *state;
	struct cache_meta	 m;
	struct cache_body	 b;
	unsigned long		 failed = metrics.refresh_failed;
	static const uint8_t	 junk[] = "not a chain";

	gen_up(f, 0, NULL);
	store_due(f, CHAIN_PATH, T_2019_01_01);
	refresh_start(f->refresh);
	spin_jobs(f, 1);
	assert_int_equal(njobs, 1);
	assert_int_equal(answer(&jobs[0], 200, junk, sizeof(junk) - 1, NULL),
	    FETCH_REJECT);
	upstream_fail(&jobs[0], FETCH_ERR_REJECTED, "fake-upstream: rejected");
	assert_int_equal(metrics.refresh_failed, failed + 1);
	assert_int_equal(cache_get(f->sf->c, CACHE_KIND_KDS,
	    (const uint8_t *)CHAIN_PATH, strlen(CHAIN_PATH), &m, &b), 1);
	assert_memory_equal(b.response, "old chain", 9);
	assert_int_equal(m.refresh_failures, 1);
	assert_true(m.next_refresh_at > time(NULL));
	refresh_stop(f->refresh);
}

/*
 * The stored entry is newer than the refreshed answer (a lagging mirror):
 * kept, its schedule renewed on the writer, and the refresh ends when that lands.
 */
static void
test_refresh_kept(void **state)
{
	struct fx		*f = *state;
	struct cache_meta	 m;
	struct cache_body	 b;
	struct refresh_stats	 st;
	unsigned long		 ok = metrics.refresh_ok;
	time_t			 start = time(NULL);
	int			 i;

	gen_up(f, 1, NULL);
	store_due(f, CHAIN_PATH, start - 60);
	refresh_start(f->refresh);
	spin_jobs(f, 1);
	assert_int_equal(njobs, 1);
	assert_int_equal(answer(&jobs[0], 200, f->chain, f->chain_len, NULL),
	    FETCH_ACCEPT);
	assert_int_equal(metrics.refresh_ok, ok);	/* not before it lands */
	for (i = 0; i < 100 && cache_writer_pending(f->writer) > 0; i++)
		cache_writer_wait(f->writer);
	assert_true(jobs[0].ended);
	assert_int_equal(metrics.refresh_ok, ok + 1);
	assert_int_equal(cache_get(f->sf->c, CACHE_KIND_KDS,
	    (const uint8_t *)CHAIN_PATH, strlen(CHAIN_PATH), &m, &b), 1);
	assert_memory_equal(b.response, "old chain", 9);
	assert_true(m.fetched_at >= start);
	assert_true(m.next_refresh_at > start);
	refresh_stats(f->refresh, &st);
	assert_int_equal(st.inflight, 0);
	refresh_stop(f->refresh);
}

/*
 * Each kind's services describe its routes to the metrics: the labels the
 * page and the access log print, and what a route answers on failure.
 */
static void
test_route_labels(void **state)
{
	struct fx	*f = *state;

	gen_up(f, 0, NULL);
	assert_string_equal(metrics_route_str(METRICS_ROUTE(CACHE_KIND_OCSP, 0)),
	    "ocsp_post");
	assert_string_equal(metrics_route_str(METRICS_ROUTE(CACHE_KIND_OCSP, 1)),
	    "ocsp_get");
	assert_string_equal(metrics_route_str(METRICS_ROUTE(CACHE_KIND_RIM, 0)),
	    "rim");
	assert_string_equal(metrics_route_str(METRICS_ROUTE(CACHE_KIND_PCCS, 0)),
	    "pccs");
	assert_string_equal(metrics_route_str(METRICS_ROUTE(CACHE_KIND_KDS, 0)),
	    "kds");
	assert_null(metrics_route_str(METRICS_ROUTE(CACHE_KIND_KDS, 1)));
	assert_int_equal(metrics_failed_result(METRICS_ROUTE(CACHE_KIND_OCSP, 1)),
	    METRICS_RES_TRYLATER);
	assert_int_equal(metrics_failed_result(METRICS_ROUTE(CACHE_KIND_RIM, 0)),
	    METRICS_RES_UNAVAILABLE);
	assert_int_equal(metrics_failed_result(METRICS_ROUTE(CACHE_KIND_PCCS, 0)),
	    METRICS_RES_UNAVAILABLE);
	assert_int_equal(metrics_failed_result(METRICS_ROUTE(CACHE_KIND_KDS, 0)),
	    METRICS_RES_UNAVAILABLE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_route_labels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_miss_stored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_not_stored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_join, setup, teardown),
		cmocka_unit_test_setup_teardown(test_negative, setup, teardown),
		cmocka_unit_test_setup_teardown(test_negative_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_negative_expires, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_kds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_ocsp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_definitive_ocsp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expired_not_served, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upstream_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_landed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refresh_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refresh_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refresh_kept, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
