/* The OCSP endpoint: answer from the cache, fetch and verify on a miss, tryLater when nothing is valid. */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "attest/ocsp.h"
#include "cache/store.h"
#include "proxy/config.h"
#include "proxy/fetch.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/ocsp_route.h"
#include "proxy/refresh.h"

#define OCSP_NONCE_BYTES	16	/* what NVAT and openssl ocsp send */
#define UNVERIFIABLE_LOG_SLOTS	64	/* issuers reported once each */

struct ocsp_svc {
	int			 refs;
	struct config		*cfg;
	const struct config_service *conf;
	struct ocsp_trust	*trust;
	struct fetch_pool	*pool;
	struct cache		*cache;
	struct refresh		*refresh;
	struct event_base	*base;
};

/* What a fetch needs to verify and store its answer (the fetch job's arg). */
struct ocsp_job {
	struct ocsp_svc	*svc;
	uint8_t		*der;		/* the request sent upstream */
	size_t		 der_len;
	struct ocsp_req	 req;		/* borrows der */
	uint8_t		 key[OCSP_KEY_BYTES];
	int		 own_nonce;	/* we chose the nonce: it must echo */
	int		 stored;
};

/* A client waiting for a fetch. */
struct pending {
	struct ocsp_svc		*svc;
	struct evhttp_request	*req;	/* NULL once the client has gone */
	struct fetch_waiter	*w;
	struct event		*budget;
	enum metrics_route	 route;
	uint8_t			 key[OCSP_KEY_BYTES];
};

static size_t	npending;
static uint8_t	unverifiable_seen[UNVERIFIABLE_LOG_SLOTS][20];
static size_t	nunverifiable_seen;

size_t
ocsp_pending(void)
{
	return npending;
}

static void
svc_ref(struct ocsp_svc *s)
{
	s->refs++;
}

void
ocsp_svc_unref(struct ocsp_svc *s)
{
	if (s == NULL || --s->refs > 0)
		return;
	fetch_pool_free(s->pool);
	ocsp_trust_free(s->trust);
	config_free(s->cfg);
	free(s->cfg);
	free(s);
}

const struct config *
ocsp_svc_config(const struct ocsp_svc *s)
{
	return s->cfg;
}

struct fetch_pool *
ocsp_svc_pool(const struct ocsp_svc *s)
{
	return s->pool;
}

struct ocsp_svc *
ocsp_svc_new(struct config *cfg, struct fetch_ctx *fctx, struct cache *cache,
    struct refresh *refresh, char *err, size_t errlen)
{
	const struct config_service	*c = &cfg->ocsp;
	struct fetch_upstream_conf	*ups = NULL;
	struct fetch_pool_conf		 pc;
	struct ocsp_svc			*s;
	size_t				 i;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "out of memory");
		config_free(cfg);
		free(cfg);
		return NULL;
	}
	s->refs = 1;
	s->cfg = cfg;
	s->conf = c;
	s->cache = cache;
	s->refresh = refresh;
	if ((s->trust = ocsp_trust_new()) == NULL) {
		snprintf(err, errlen, "ocsp: cannot create trust store");
		goto fail;
	}
	/* --ocsp-anchor replaces the pinned roots; intermediates add to the pool. */
	if (c->nanchors == 0) {
		if (ocsp_trust_add_builtin_anchors(s->trust) <= 0) {
			snprintf(err, errlen, "ocsp: built-in anchors do not load");
			goto fail;
		}
	}
	for (i = 0; i < c->nanchors; i++)
		if (ocsp_trust_add_anchors_file(s->trust, c->anchors[i], err,
		    errlen) <= 0)
			goto fail;
	if (ocsp_trust_add_builtin_pool(s->trust) < 0) {
		snprintf(err, errlen, "ocsp: built-in intermediates do not load");
		goto fail;
	}
	for (i = 0; i < c->nintermediates; i++)
		if (ocsp_trust_add_pool_file(s->trust, c->intermediates[i], err,
		    errlen) < 0)
			goto fail;
	if ((ups = calloc(c->nupstreams, sizeof(*ups))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (i = 0; i < c->nupstreams; i++) {
		ups[i].name = c->upstreams[i].name;
		ups[i].url = c->upstreams[i].url;
		ups[i].verify_nonce = c->upstreams[i].verify_nonce;
	}
	memset(&pc, 0, sizeof(pc));
	pc.hedge_ms = (int)c->hedge_ms;
	pc.connect_timeout_ms = (int)c->connect_timeout_ms;
	pc.timeout_ms = (int)c->timeout_ms;
	s->pool = fetch_pool_new(fctx, "ocsp", ups, c->nupstreams, &pc);
	free(ups);
	if (s->pool == NULL) {
		snprintf(err, errlen, "ocsp: cannot create the upstream pool");
		goto fail;
	}
	return s;
fail:
	ocsp_svc_unref(s);
	return NULL;
}

int
ocsp_is_post_path(const struct ocsp_svc *s, const char *path)
{
	size_t	i;

	if (strcmp(path, "/") == 0 || strcmp(path, "/ocsp") == 0 ||
	    strcmp(path, "/ocsp/") == 0)
		return 1;
	for (i = 0; i < s->conf->npaths; i++)
		if (strcmp(path, s->conf->paths[i]) == 0)
			return 1;
	return 0;
}

/* ---- answers ------------------------------------------------------------ */

static void
reply_der(struct evhttp_request *req, int code, const uint8_t *der, size_t len,
    const char *cache_control)
{
	struct evkeyvalq	*h = evhttp_request_get_output_headers(req);
	struct evbuffer		*b = evhttp_request_get_output_buffer(req);

	evhttp_add_header(h, "Content-Type", "application/ocsp-response");
	if (cache_control != NULL)
		evhttp_add_header(h, "Cache-Control", cache_control);
	evbuffer_add(b, der, len);
	evhttp_send_reply(req, code, code == 200 ? "OK" : "Not Modified", NULL);
}

/* NVAT retries 5xx/408/429 for minutes and fails hard on a closed connection: tryLater instead. */
static void
reply_trylater(struct evhttp_request *req, enum metrics_route route)
{
	metrics.requests[route][RES_TRYLATER]++;
	reply_der(req, 200, OCSP_RESP_TRYLATER, sizeof(OCSP_RESP_TRYLATER), "no-store");
}

static void
reply_malformed(struct evhttp_request *req, enum metrics_route route)
{
	metrics.requests[route][RES_MALFORMED]++;
	reply_der(req, 200, OCSP_RESP_MALFORMED, sizeof(OCSP_RESP_MALFORMED), "no-store");
}

static void
http_date(char *buf, size_t len, time_t t)
{
	struct tm	tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/*
 * RFC 5019 / RFC 9919 caching headers for GET, so an HTTP cache or CDN can
 * front a mirror: max-age never reaches past nextUpdate.
 */
static int
add_cache_headers(struct evhttp_request *req, const struct cache_meta *m,
    const struct cache_body *b, time_t now)
{
	struct evkeyvalq	*h = evhttp_request_get_output_headers(req);
	const char		*inm;
	unsigned char		 md[32];
	char			 etag[2 * 32 + 3], hex[2 * 32 + 1], date[64], cc[128];
	long			 max_age;

	EVP_Digest(b->response, b->response_len, md, NULL, EVP_sha256(), NULL);
	log_hex(hex, sizeof(hex), md, sizeof(md));
	snprintf(etag, sizeof(etag), "\"%s\"", hex);
	max_age = (long)(m->next_update - now);
	if (max_age < 0)
		max_age = 0;
	snprintf(cc, sizeof(cc), "max-age=%ld, public, no-transform, must-revalidate",
	    max_age);
	evhttp_add_header(h, "ETag", etag);
	evhttp_add_header(h, "Cache-Control", cc);
	http_date(date, sizeof(date), (time_t)m->next_update);
	evhttp_add_header(h, "Expires", date);
	http_date(date, sizeof(date), (time_t)m->this_update);
	evhttp_add_header(h, "Last-Modified", date);
	inm = evhttp_find_header(evhttp_request_get_input_headers(req), "If-None-Match");
	return inm != NULL && (strstr(inm, etag) != NULL || strcmp(inm, "*") == 0);
}

/* Serve a valid cached entry. Returns 1 when answered, 0 when nothing valid is stored. */
static int
serve_cached(struct ocsp_svc *s, struct evhttp_request *req,
    const uint8_t key[OCSP_KEY_BYTES], enum metrics_route route,
    enum metrics_result result)
{
	struct cache_meta	m;
	struct cache_body	b;
	time_t			now = time(NULL);
	int			rc;

	rc = cache_get(s->cache, CACHE_KIND_OCSP, key, OCSP_KEY_BYTES, &m, &b);
	if (rc == -1)
		log_err("ocsp: cache: %s", cache_strerror(s->cache));
	if (rc != 1)
		return 0;
	/* Never serve what has expired or what is not yet valid. */
	if (m.next_update <= now || m.this_update > now + s->conf->skew_s)
		return 0;
	if (route == ROUTE_OCSP_GET) {
		if (add_cache_headers(req, &m, &b, now)) {
			metrics.requests[route][RES_NOT_MODIFIED]++;
			evhttp_send_reply(req, 304, "Not Modified", NULL);
			refresh_touch(s->refresh, CACHE_KIND_OCSP, key, OCSP_KEY_BYTES, now);
			return 1;
		}
		reply_der(req, 200, b.response, b.response_len, NULL);
	} else
		reply_der(req, 200, b.response, b.response_len, NULL);
	metrics.requests[route][result]++;
	refresh_touch(s->refresh, CACHE_KIND_OCSP, key, OCSP_KEY_BYTES, now);
	return 1;
}

/* ---- verify and store (runs once per upstream answer) -------------------- */

static void
job_free(void *arg)
{
	struct ocsp_job	*j = arg;

	if (j == NULL)
		return;
	ocsp_svc_unref(j->svc);
	free(j->der);
	free(j);
}

static struct ocsp_job *
job_new(struct ocsp_svc *s, const uint8_t *der, size_t len, int own_nonce)
{
	struct ocsp_job	*j;
	const char	*why;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		return NULL;
	if ((j->der = malloc(len)) == NULL) {
		free(j);
		return NULL;
	}
	memcpy(j->der, der, len);
	j->der_len = len;
	if (ocsp_req_parse(j->der, len, &j->req, &why) == -1) {
		free(j->der);
		free(j);
		return NULL;
	}
	ocsp_req_key(&j->req, j->key);
	j->own_nonce = own_nonce;
	j->svc = s;
	svc_ref(s);
	return j;
}

static void
log_unverifiable(const struct ocsp_result *r, const char *upstream)
{
	char	hex[41];
	size_t	i, n = r->issuer_key_hash_len < 20 ? r->issuer_key_hash_len : 20;

	for (i = 0; i < nunverifiable_seen; i++)
		if (memcmp(unverifiable_seen[i], r->issuer_key_hash, n) == 0)
			return;
	if (nunverifiable_seen < UNVERIFIABLE_LOG_SLOTS)
		memcpy(unverifiable_seen[nunverifiable_seen++], r->issuer_key_hash, n);
	log_warn("ocsp: %s: answer for issuer key %s is genuine-looking but its "
	    "chain cannot be completed (%s): passed to the client, not stored; add "
	    "the issuing CA with --ocsp-intermediates", upstream,
	    log_hex(hex, sizeof(hex), r->issuer_key_hash, n), r->detail);
}

static void
store(struct ocsp_job *j, const struct fetch_res *res, const struct ocsp_result *r,
    time_t now)
{
	struct ocsp_svc		*s = j->svc;
	const struct config_refresh *rc = &s->conf->refresh;
	struct schedule_conf	 sc = { rc->fraction, rc->jitter,
				    rc->min_interval_s, rc->max_interval_s };
	struct cache_meta	 m, old;
	struct cache_body	 b = { 0 };
	char			 hex[17];
	int			 put;

	memset(&m, 0, sizeof(m));
	m.kind = CACHE_KIND_OCSP;
	m.status = (uint8_t)r->cert_status;
	m.this_update = r->this_update;
	m.next_update = r->next_update;
	m.produced_at = r->produced_at;
	m.fetched_at = now;
	m.next_refresh_at = schedule_refresh_at(&sc, r->this_update,
	    r->next_update, now, refresh_rand());
	snprintf(m.source, sizeof(m.source), "%s", res->upstream);
	b.request = j->der;
	b.request_len = j->der_len;
	b.response = res->body;
	b.response_len = res->body_len;
	log_hex(hex, sizeof(hex), j->key, 8);
	put = cache_put(s->cache, j->key, sizeof(j->key), &m, &b);
	if (put == -1) {
		metrics.store_errors++;
		log_err("ocsp: %s: not stored: %s", hex, cache_strerror(s->cache));
		return;
	}
	if (put == CACHE_PUT_KEPT) {
		/* The stored answer is newer: keep it, but plan its next refresh. */
		if (cache_get_meta(s->cache, CACHE_KIND_OCSP, j->key,
		    sizeof(j->key), &old) == 1) {
			old.next_refresh_at = schedule_refresh_at(&sc,
			    old.this_update, old.next_update, now, refresh_rand());
			old.refresh_failures = 0;
			old.fetched_at = now;
			cache_put_meta(s->cache, j->key, sizeof(j->key), &old);
		}
	} else
		log_debug("ocsp: %s: stored from %s (%s, next update in %lds)",
		    hex, res->upstream, ocsp_cert_status_str[r->cert_status],
		    (long)(r->next_update - now));
	j->stored = 1;
}

static enum fetch_verdict
job_check(const struct fetch_res *res, void *arg, char *why, size_t whylen)
{
	struct ocsp_job		*j = arg;
	struct ocsp_verify_opts	 o;
	struct ocsp_result	 r;
	time_t			 now = time(NULL);

	memset(&o, 0, sizeof(o));
	o.now = now;
	o.skew_s = j->svc->conf->skew_s;
	/* Only a nonce we chose ourselves must come back, and not from a cache. */
	if (j->own_nonce && res->verify_nonce && j->req.nonce != NULL) {
		o.nonce = j->req.nonce;
		o.nonce_len = j->req.nonce_len;
	}
	if (ocsp_verify(j->svc->trust, res->body, res->body_len, &j->req, &o, &r) == 0) {
		store(j, res, &r, now);
		return FETCH_ACCEPT;
	}
	if (r.verdict == OCSP_UNVERIFIABLE) {
		metrics.verify_failures[OCSP_UNVERIFIABLE]++;
		log_unverifiable(&r, res->upstream);
		return FETCH_ACCEPT;
	}
	metrics.verify_failures[r.verdict < OCSP_VERDICT_MAX ? r.verdict : OCSP_ERR_PARSE]++;
	snprintf(why, whylen, "%s: %s", ocsp_verdict_str[r.verdict], r.detail);
	return FETCH_REJECT;
}

/* ---- clients waiting on a fetch ----------------------------------------- */

static void
pending_free(struct pending *p)
{
	if (p == NULL)
		return;
	if (p->req != NULL)
		evhttp_connection_set_closecb(evhttp_request_get_connection(p->req),
		    NULL, NULL);
	if (p->budget != NULL)
		event_free(p->budget);
	ocsp_svc_unref(p->svc);
	npending--;
	free(p);
}

/* Nothing from upstream: upstream_first may still have a cached answer. */
static void
pending_fail(struct pending *p)
{
	if (p->req == NULL)
		return;
	if (p->svc->conf->mode == MODE_UPSTREAM_FIRST &&
	    serve_cached(p->svc, p->req, p->key, p->route, RES_FALLBACK))
		return;
	reply_trylater(p->req, p->route);
}

static void
pending_done(const struct fetch_res *res, void *arg)
{
	struct pending	*p = arg;

	p->w = NULL;
	if (p->req != NULL) {
		if (res->err == FETCH_OK && res->http_status / 100 == 2) {
			/* Verified (or unverifiable): the upstream's bytes, unmodified. */
			metrics.requests[p->route][RES_MISS]++;
			reply_der(p->req, 200, res->body, res->body_len, "no-store");
		} else {
			if (res->err != FETCH_OK)
				log_info("ocsp: every upstream failed (%s): %s",
				    res->summary ? res->summary : fetch_err_str[res->err],
				    p->svc->conf->mode == MODE_UPSTREAM_FIRST ?
				    "falling back to the cache" : "answering tryLater");
			else
				log_info("ocsp: upstream %s answered HTTP %d: answering tryLater",
				    res->upstream ? res->upstream : "?", res->http_status);
			pending_fail(p);
		}
	}
	pending_free(p);
}

static void
pending_budget(evutil_socket_t fd, short what, void *arg)
{
	struct pending	*p = arg;

	(void)fd;
	(void)what;
	/* The fetch goes on in the background and may fill the cache. */
	if (p->w != NULL)
		fetch_leave(p->w);
	p->w = NULL;
	if (p->req != NULL) {
		log_info("ocsp: no upstream answer within %ld ms: answering the client "
		    "now, the fetch goes on", p->svc->conf->client_budget_ms);
		pending_fail(p);
	}
	pending_free(p);
}

static void
pending_gone(struct evhttp_connection *evcon, void *arg)
{
	struct pending	*p = arg;

	(void)evcon;
	p->req = NULL;
	if (p->w != NULL)
		fetch_leave(p->w);
	p->w = NULL;
	pending_free(p);
}

static const struct fetch_req *
fetch_req_for(struct fetch_req *fr, const struct ocsp_job *j)
{
	memset(fr, 0, sizeof(*fr));
	fr->method = "POST";
	fr->path = "";
	fr->content_type = "application/ocsp-request";
	fr->accept = "application/ocsp-response";
	fr->body = j->der;
	fr->body_len = j->der_len;
	fr->key = j->key;
	fr->klen = sizeof(j->key);
	return fr;
}

/* A miss (or upstream_first): forward the client's request verbatim, nonce and all. */
static void
fetch_for_client(struct ocsp_svc *s, struct evhttp_request *req,
    const uint8_t *der, size_t len, const uint8_t key[OCSP_KEY_BYTES],
    enum metrics_route route)
{
	struct ocsp_job	*j;
	struct pending	*p;
	struct fetch_req fr;
	struct timeval	 tv;

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		reply_trylater(req, route);
		return;
	}
	npending++;
	p->svc = s;
	svc_ref(s);
	p->req = req;
	p->route = route;
	memcpy(p->key, key, OCSP_KEY_BYTES);
	p->budget = evtimer_new(evhttp_connection_get_base(
	    evhttp_request_get_connection(req)), pending_budget, p);
	if (p->budget == NULL || (j = job_new(s, der, len, 0)) == NULL) {
		pending_fail(p);
		pending_free(p);
		return;
	}
	evhttp_connection_set_closecb(evhttp_request_get_connection(req),
	    pending_gone, p);
	tv.tv_sec = s->conf->client_budget_ms / 1000;
	tv.tv_usec = (s->conf->client_budget_ms % 1000) * 1000;
	evtimer_add(p->budget, &tv);
	/* fetch_join may finish at once and call pending_done before returning. */
	p->w = fetch_join(s->pool, fetch_req_for(&fr, j), job_check, j, job_free,
	    pending_done, p);
	if (p->w == NULL) {
		/* Nothing started: done will never come, and j is still ours. */
		job_free(j);
		pending_fail(p);
		pending_free(p);
	}
}

static void
handle_der(struct ocsp_svc *s, struct evhttp_request *req, const uint8_t *der,
    size_t len, enum metrics_route route)
{
	struct ocsp_req	r;
	uint8_t		key[OCSP_KEY_BYTES];
	const char	*why;

	if (ocsp_req_parse(der, len, &r, &why) == -1) {
		log_debug("ocsp: malformed request (%zu bytes): %s", len, why);
		reply_malformed(req, route);
		return;
	}
	ocsp_req_key(&r, key);
	if (s->conf->mode == MODE_CACHE_FIRST &&
	    serve_cached(s, req, key, route, RES_HIT))
		return;
	fetch_for_client(s, req, der, len, key, route);
}

static void
reply_http_error(struct evhttp_request *req, int code, const char *reason,
    enum metrics_route route)
{
	metrics.requests[route][RES_HTTP_ERROR]++;
	evhttp_send_error(req, code, reason);
}

void
ocsp_handle_post(struct ocsp_svc *s, struct evhttp_request *req)
{
	struct evbuffer	*in = evhttp_request_get_input_buffer(req);
	const char	*ct;
	size_t		 len = evbuffer_get_length(in);
	uint8_t		*der;

	ct = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
	if (ct == NULL || strncasecmp(ct, "application/ocsp-request", 24) != 0 ||
	    (ct[24] != '\0' && ct[24] != ';' && ct[24] != ' ')) {
		reply_http_error(req, 415, "Unsupported Media Type", ROUTE_OCSP_POST);
		return;
	}
	if (len > OCSP_MAX_REQUEST_BYTES) {
		reply_http_error(req, 413, "Payload Too Large", ROUTE_OCSP_POST);
		return;
	}
	if (len == 0) {
		reply_malformed(req, ROUTE_OCSP_POST);
		return;
	}
	der = evbuffer_pullup(in, -1);
	handle_der(s, req, der, len, ROUTE_OCSP_POST);
}

/* RFC 6960 A.1 GET, tolerant of '+' arriving as space and missing padding. */
void
ocsp_handle_get(struct ocsp_svc *s, struct evhttp_request *req, const char *b64)
{
	char		 buf[OCSP_MAX_REQUEST_BYTES * 4 / 3 + 8];
	unsigned char	 der[OCSP_MAX_REQUEST_BYTES + 3];
	size_t		 n = 0, i;
	int		 len;

	for (i = 0; b64[i] != '\0'; i++) {
		char c = b64[i];

		if (n + 4 >= sizeof(buf)) {
			reply_http_error(req, 414, "URI Too Long", ROUTE_OCSP_GET);
			return;
		}
		if (c == ' ')
			c = '+';
		else if (c == '-')
			c = '+';	/* base64url seen from some clients */
		else if (c == '_')
			c = '/';
		else if (c == '\r' || c == '\n')
			continue;
		buf[n++] = c;
	}
	while (n % 4 != 0)
		buf[n++] = '=';
	buf[n] = '\0';
	if (n == 0 || (len = EVP_DecodeBlock(der, (unsigned char *)buf, (int)n)) < 0) {
		reply_malformed(req, ROUTE_OCSP_GET);
		return;
	}
	/* EVP_DecodeBlock counts padding as zero bytes: drop them. */
	for (i = n; i > 0 && buf[i - 1] == '='; i--)
		len--;
	handle_der(s, req, der, (size_t)len, ROUTE_OCSP_GET);
}

/* ---- background refresh ---------------------------------------------------- */

struct refresh_wait {
	struct ocsp_svc		*svc;
	refresh_done_fn		*done;
	void			*done_arg;
	uint8_t			 key[OCSP_KEY_BYTES];
	time_t			 started;
};

static void
refresh_fetched(const struct fetch_res *res, void *arg)
{
	struct refresh_wait	*rw = arg;
	struct cache_meta	 m;
	char			 why[128];
	const char		*w = NULL;
	int			 ok;

	/*
	 * Success means an entry was stored (by this job or the one it
	 * joined); an unverifiable answer reaches clients but is no refresh.
	 */
	ok = cache_get_meta(rw->svc->cache, CACHE_KIND_OCSP, rw->key,
	    sizeof(rw->key), &m) == 1 && m.fetched_at >= rw->started &&
	    res->err == FETCH_OK && res->http_status / 100 == 2;
	if (!ok) {
		if (res->err != FETCH_OK)
			w = res->summary ? res->summary : fetch_err_str[res->err];
		else if (res->http_status / 100 != 2) {
			snprintf(why, sizeof(why), "HTTP %d from %s",
			    res->http_status, res->upstream ? res->upstream : "?");
			w = why;
		} else
			w = "the answer could not be verified (see above)";
	}
	rw->done(rw->svc->refresh, ok, w, rw->done_arg);
	ocsp_svc_unref(rw->svc);
	free(rw);
}

static int
ocsp_refresh_start(void *arg, enum cache_kind kind, const uint8_t *key,
    size_t klen, refresh_done_fn *done, void *done_arg)
{
	struct ocsp_svc		*s = arg;
	struct cache_meta	 m;
	struct cache_body	 b = { 0 };
	struct refresh_wait	*rw;
	struct ocsp_job		*j;
	struct fetch_req	 fr;
	uint8_t			 nonce[OCSP_NONCE_BYTES];
	uint8_t			*der;
	size_t			 len;

	(void)kind;
	if (klen != OCSP_KEY_BYTES ||
	    cache_get(s->cache, CACHE_KIND_OCSP, key, klen, &m, &b) != 1 ||
	    b.request == NULL || b.request_len == 0)
		return -1;
	if (RAND_bytes(nonce, sizeof(nonce)) != 1)
		return -1;
	/* A refresh carries our own nonce, so a fresh answer proves itself. */
	if ((der = ocsp_req_renonce(b.request, b.request_len, nonce, sizeof(nonce),
	    &len)) == NULL)
		return -1;
	j = job_new(s, der, len, 1);
	free(der);
	if (j == NULL)
		return -1;
	if ((rw = calloc(1, sizeof(*rw))) == NULL) {
		job_free(j);
		return -1;
	}
	rw->svc = s;
	svc_ref(s);
	rw->done = done;
	rw->done_arg = done_arg;
	rw->started = time(NULL);
	memcpy(rw->key, key, OCSP_KEY_BYTES);
	if (fetch_join(s->pool, fetch_req_for(&fr, j), job_check, j, job_free,
	    refresh_fetched, rw) == NULL) {
		job_free(j);
		ocsp_svc_unref(s);
		free(rw);
		return -1;
	}
	return 0;
}

void
ocsp_svc_install_refresh(struct ocsp_svc *s)
{
	const struct config_refresh	*rc = &s->conf->refresh;
	struct refresh_kind_conf	 kc;

	memset(&kc, 0, sizeof(kc));
	kc.sched.fraction = rc->fraction;
	kc.sched.jitter = rc->jitter;
	kc.sched.min_interval_s = rc->min_interval_s;
	kc.sched.max_interval_s = rc->max_interval_s;
	kc.idle_expire_s = s->conf->idle_expire_s;
	kc.rate_limit_per_s = s->conf->rate_limit_per_s;
	kc.start = ocsp_refresh_start;
	kc.arg = s;
	refresh_set_kind(s->refresh, CACHE_KIND_OCSP, &kc);
}
