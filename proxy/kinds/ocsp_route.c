/* SPDX-License-Identifier: Apache-2.0 */
/* The OCSP wire: POST and GET requests keyed, answers judged by entry/ocsp.c, DER replies, tryLater when nothing is valid. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "attest/ocsp_verify.h"
#include "cache/store.h"
#include "entry/conf.h"
#include "entry/entry.h"
#include "entry/judge.h"
#include "entry/kind.h"
#include "entry/ocsp.h"
#include "proxy/http/http.h"
#include "proxy/http/httpcache.h"
#include "proxy/kinds/route.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/service.h"

#define OCSP_NONCE_BYTES	16	/* what NVAT and openssl ocsp send */
#define UNVERIFIABLE_LOG_SLOTS	64	/* issuers reported once each */
/* RFC 6960 A.1: the OCSP GET prefix, besides the root and configured paths. */
#define OCSP_GET_PREFIX		"/ocsp/"
#define OCSP_DER_SEQUENCE	0x30	/* the tag an OCSPRequest starts with */
/* The two routes, as the metrics count them. */
#define OCSP_ROUTE_POST		METRICS_ROUTE(CACHE_KIND_OCSP, 0)
#define OCSP_ROUTE_GET		METRICS_ROUTE(CACHE_KIND_OCSP, 1)
_Static_assert(OCSP_VERDICT_MAX <= METRICS_VERIFY_REASONS,
    "metrics.verify_failures holds every verdict");

static uint8_t	unverifiable_seen[UNVERIFIABLE_LOG_SLOTS][20];
static size_t	nunverifiable_seen;

/* ---- verify ------------------------------------------------------------ */

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
	log_warn("ocsp: %s: unverifiable answer for issuer key %s: it looks "
	    "genuine but its chain cannot be completed (%s); passed to the client, "
	    "not stored; add the issuing CA with --ocsp-intermediates", upstream,
	    log_hex(hex, sizeof(hex), r->issuer_key_hash, n), r->detail);
}

/* The OCSP kind's admit (svc_admit), with what only the wire adds: metrics and logs. */
static enum entry_verdict
ocsp_check(struct svc *s, const struct svc_call *c, const struct fetch_res *res,
    time_t now, struct svc_answer *a, char *why, size_t whylen)
{
	struct entry_judgement		 j;
	const struct ocsp_result	*r = &j.ocsp.result;
	enum entry_verdict		 v;

	/* cache_put keeps a newer stored entry itself, in its write transaction. */
	switch ((v = svc_admit(s, c, res, NULL, now, &j))) {
	case ENTRY_STORE:
		a->meta = j.meta;
		if (r->cert_status != OCSP_CERT_GOOD)
			log_info("ocsp: %s: signed answer says %s: stored and served as "
			    "signed", res->upstream, ocsp_cert_status_str[r->cert_status]);
		break;
	case ENTRY_PASS:
		metrics.verify_failures[CACHE_KIND_OCSP][OCSP_UNVERIFIABLE]++;
		log_unverifiable(r, res->upstream);
		break;
	case ENTRY_DEFINITIVE:
		snprintf(why, whylen, "%s", j.reason);
		break;
	default:
		if (j.ocsp.verified)
			metrics.verify_failures[CACHE_KIND_OCSP][r->verdict <
			    OCSP_VERDICT_MAX ? r->verdict : OCSP_ERR_PARSE]++;
		snprintf(why, whylen, "%s", j.reason);
		v = ENTRY_REFUSE;
		break;
	}
	entry_judgement_free(&j);
	return v;
}

/* ---- answers -------------------------------------------------------------- */

static void
reply_der(struct http_req *req, int code, const uint8_t *der, size_t len,
    const char *cache_control)
{
	http_resp_header(req, "Content-Type", "application/ocsp-response");
	if (cache_control != NULL)
		http_resp_header(req, "Cache-Control", cache_control);
	http_resp_body_ref(req, der, len);	/* valid until http_reply returns */
	http_reply(req, code, "OK");
}

static enum metrics_result
ocsp_serve(struct svc *s, struct http_req *req, const struct svc_call *c,
    const struct cache_meta *m, const uint8_t *der, size_t len,
    const uint8_t *headers, size_t headers_len, time_t now,
    enum metrics_result result)
{
	(void)s;
	(void)headers;
	(void)headers_len;
	/* GET: RFC 5019 caching headers (or no-store); POST is never cacheable. */
	if (c->route == OCSP_ROUTE_GET) {
		http_resp_header(req, "Content-Type", "application/ocsp-response");
		evbuffer_add(http_resp_body(req), der, len);
		return httpcache_answer(req, m, HTTPCACHE_TO_NEXT_UPDATE,
		    now) == 304 ? METRICS_RES_NOT_MODIFIED : result;
	}
	reply_der(req, 200, der, len, result == METRICS_RES_UNVERIFIABLE ||
	    result == METRICS_RES_DEFINITIVE ? "no-store" : NULL);
	return result;
}

/* NVAT retries 5xx/408/429 for minutes and fails hard on a closed connection: tryLater instead. */
static void
ocsp_serve_failed(struct svc *s, struct http_req *req,
    const struct svc_call *c, const char *why)
{
	(void)s;
	(void)c;
	(void)why;
	reply_der(req, 200, OCSP_RESP_TRYLATER, sizeof(OCSP_RESP_TRYLATER), "no-store");
}

/* An upstream 404 for OCSP is no answer a client can use: tryLater, at once. */
static void
ocsp_serve_final(struct svc *s, struct http_req *req,
    const struct svc_call *c, int http_status, const uint8_t *body, size_t len)
{
	(void)http_status;
	(void)body;
	(void)len;
	ocsp_serve_failed(s, req, c, NULL);
}

/*
 * A refresh asks the stored request again (kind_ocsp's restore) with
 * stapled's own nonce, so a fresh answer proves itself.
 */
static int
ocsp_refresh_call(struct svc *s, const struct cache_body *b,
    struct svc_call *c, void **scratch)
{
	uint8_t	 nonce[OCSP_NONCE_BYTES];
	uint8_t	*der;
	size_t	 len;

	(void)s;
	if (RAND_bytes(nonce, sizeof(nonce)) != 1)
		return -1;
	if ((der = ocsp_req_renonce(b->request, b->request_len, nonce,
	    sizeof(nonce), &len)) == NULL)
		return -1;
	*scratch = der;
	c->body = der;
	c->body_len = len;
	c->own_nonce = 1;
	c->route = OCSP_ROUTE_POST;
	return 0;
}

static const struct svc_ops	ocsp_ops = {
	.name = "ocsp",
	.kind = CACHE_KIND_OCSP,
	/* RFC 6960 2.3: OCSP clients read a response status, tryLater. */
	.metrics = { .routes = { "ocsp_post", "ocsp_get" },
	    .failed = METRICS_RES_TRYLATER, .malformed = 1,
	    .verify_reasons = ocsp_verdict_str,
	    .nverify_reasons = OCSP_VERDICT_MAX },
	.verify = ocsp_check,
	.serve = ocsp_serve,
	.serve_final = ocsp_serve_final,
	.serve_failed = ocsp_serve_failed,
	.refresh_call = ocsp_refresh_call,
};

/* ---- the routes ---------------------------------------------------------- */

/* Whether `path` is one of the POST paths ("/", "/ocsp", configured ones). */
static int
ocsp_is_post_path(const struct svc *s, const char *path)
{
	const struct config_service	*c = svc_conf(s);
	size_t				 i;

	if (strcmp(path, "/") == 0 || strcmp(path, "/ocsp") == 0 ||
	    strcmp(path, "/ocsp/") == 0)
		return 1;
	for (i = 0; i < c->npaths; i++)
		if (strcmp(path, c->paths[i]) == 0)
			return 1;
	return 0;
}

static void
reply_malformed(struct http_req *req, unsigned route)
{
	metrics.requests[route][METRICS_RES_MALFORMED]++;
	reply_der(req, 200, OCSP_RESP_MALFORMED, sizeof(OCSP_RESP_MALFORMED), "no-store");
}

static void
reply_http_error(struct http_req *req, int code, const char *reason,
    unsigned route)
{
	metrics.requests[route][METRICS_RES_HTTP_ERROR]++;
	http_error(req, code, reason);
}

/*
 * The client's request, parsed by the OCSP kind (kind_ocsp's parse),
 * goes upstream verbatim, nonce included: the first caller gets a nonce
 * match. What the kind refuses as no request at all is malformedRequest
 * (an empty body, unlogged, is none either); a POST's wrong media type
 * or size is an HTTP error.
 */
static void
handle_ask(struct svc *s, struct http_req *req, const struct kind_ask *in,
    unsigned route)
{
	struct svc_call	c;
	char		canon[KIND_CANON_BYTES], why[128];
	int		status;

	if (svc_call_parse(&c, CACHE_KIND_OCSP, in, canon, &status, why,
	    sizeof(why)) == -1) {
		if (status == 415)
			reply_http_error(req, 415, "Unsupported Media Type", route);
		else if (status == 413)
			reply_http_error(req, 413, "Payload Too Large", route);
		else {
			if (in->body_len > 0)
				log_debug("ocsp: malformed request (%zu bytes): %s",
				    in->body_len, why);
			reply_malformed(req, route);
		}
		return;
	}
	c.route = route;
	svc_handle(s, req, &c);
}

/* POST with a DER body. */
static void
ocsp_handle_post(struct svc *s, struct http_req *req, const char *path)
{
	struct kind_ask	in;

	in.method = KIND_POST;
	in.path = path;
	in.query = NULL;
	in.body = http_req_body(req, &in.body_len);
	in.content_type = http_req_header(req, "Content-Type");
	handle_ask(s, req, &in, OCSP_ROUTE_POST);
}

/*
 * RFC 6960 A.1 base64, tolerant of '+' arriving as space, base64url,
 * line breaks and missing padding, into der. The length, or -1 when it is
 * not base64 or too long for a request (the head's HTTP_MAX_HEADER_BYTES,
 * whose request line gets 414, keeps a path far below that).
 */
static int
get_decode(const char *b64, unsigned char der[OCSP_MAX_REQUEST_BYTES + 3])
{
	char	 buf[OCSP_MAX_REQUEST_BYTES * 4 / 3 + 8];
	size_t	 n = 0, i;
	int	 len;

	for (i = 0; b64[i] != '\0'; i++) {
		char	ch = b64[i];

		if (n + 4 >= sizeof(buf))
			return -1;
		if (ch == ' ' || ch == '-')
			ch = '+';
		else if (ch == '_')
			ch = '/';
		else if (ch == '\r' || ch == '\n')
			continue;
		buf[n++] = ch;
	}
	while (n % 4 != 0)
		buf[n++] = '=';
	buf[n] = '\0';
	if (n == 0 || (len = EVP_DecodeBlock(der, (unsigned char *)buf, (int)n)) < 0)
		return -1;
	/* EVP_DecodeBlock counts padding as zero bytes: drop them. */
	for (i = n; i > 0 && buf[i - 1] == '='; i--)
		len--;
	return len;
}

/*
 * The base64 part of an OCSP GET path: after "/ocsp/" or a configured
 * path and '/' (*prefixed set), else after the root's '/'. Slashes right
 * after the prefix are skipped; those inside are base64's own. NULL for
 * the bare OCSP paths ("/", "/ocsp", configured ones): no request there.
 */
static const char *
get_rest(const struct svc *s, const char *path, int *prefixed)
{
	const struct config_service	*c = svc_conf(s);
	const char			*p = NULL;
	size_t				 i, n;

	*prefixed = 1;
	if (strncmp(path, OCSP_GET_PREFIX, strlen(OCSP_GET_PREFIX)) == 0)
		p = path + strlen(OCSP_GET_PREFIX);
	for (i = 0; p == NULL && i < c->npaths; i++) {
		n = strlen(c->paths[i]);
		if (n > 1 && strncmp(path, c->paths[i], n) == 0 && path[n] == '/')
			p = path + n + 1;
	}
	if (p == NULL) {
		if (ocsp_is_post_path(s, path))
			return NULL;
		*prefixed = 0;
		p = path + 1;
	}
	while (*p == '/')
		p++;
	return *p == '\0' ? NULL : p;
}

/*
 * GET on `path`. Under an OCSP GET prefix ("/ocsp/", or a configured path
 * and '/') the rest must be the base64 of a DER request: malformedRequest
 * when it is not, 400 when it is empty. At the root, "/" and base64 of a
 * DER SEQUENCE is an OCSP request too. Returns 0 when answered, -1 when
 * path is not an OCSP GET at all.
 */
static int
ocsp_handle_get(struct svc *s, struct http_req *req, const char *path)
{
	unsigned char	 der[OCSP_MAX_REQUEST_BYTES + 3];
	struct kind_ask	 in;
	const char	*b64;
	int		 prefixed, len;

	if ((b64 = get_rest(s, path, &prefixed)) == NULL) {
		reply_http_error(req, 400, "Bad Request", OCSP_ROUTE_GET);
		return 0;
	}
	len = get_decode(b64, der);
	/* At the root only a DER SEQUENCE is a request: /health is no OCSP GET. */
	if (!prefixed && (len < 1 || der[0] != OCSP_DER_SEQUENCE))
		return -1;
	if (len < 0) {
		reply_malformed(req, OCSP_ROUTE_GET);
		return 0;
	}
	in.method = KIND_GET;
	in.path = path;
	in.query = NULL;
	in.content_type = NULL;
	in.body = der;
	in.body_len = (size_t)len;
	handle_ask(s, req, &in, OCSP_ROUTE_GET);
	return 0;
}

/* route_handle_fn: POST on the POST paths, GET and HEAD by RFC 6960 A.1. */
static int
ocsp_handle(struct svc *s, struct http_req *req, const char *path,
    const char *query)
{
	(void)query;
	switch (http_req_method(req)) {
	case HTTP_POST:
		if (!ocsp_is_post_path(s, path))
			return -1;
		ocsp_handle_post(s, req, path);
		return 0;
	case HTTP_GET:
	case HTTP_HEAD:
		return ocsp_handle_get(s, req, path);
	default:
		return -1;
	}
}

const struct route	ocsp_route = {
	.ops = &ocsp_ops,
	.handle = ocsp_handle,
	.methods = ROUTE_GET_HEAD | ROUTE_METHOD(HTTP_POST),
	.last = 1,
	.upstream_help = "OCSP responder, in failover order",
	.anchor_help = "trust anchors, replacing the built-in NVIDIA roots",
	.intermediates_help = "untrusted CA certificates for chain building",
};
