/* SPDX-License-Identifier: Apache-2.0 */
/* The Intel PCS/PCCS wire: requests parsed and answers judged by entry/pccs.c, vendor bytes served as sent, the API key kept here. */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "attest/intel.h"
#include "cache/store.h"
#include "entry/conf.h"
#include "entry/judge.h"
#include "entry/kind.h"
#include "entry/pccs.h"
#include "entry/file.h"
#include "proxy/http/http.h"
#include "proxy/http/httpcache.h"
#include "proxy/kinds/route.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/service.h"

#define PCCS_ROUTE	METRICS_ROUTE(CACHE_KIND_PCCS, 0)	/* as the metrics count it */

#define PCCS_API_KEY_FILE_MAX	4096	/* a key file is one line */
#define PCCS_API_KEY_MAX	256
_Static_assert(sizeof(struct pccs_req) <= SVC_QUERY_BYTES,
    "a PCCS request travels in struct svc_call");

/* The typed request the call carries (call_for put it there). */
static void
call_req(const struct svc_call *c, struct pccs_req *r)
{
	memcpy(r, c->query.bytes, sizeof(*r));
}

/* ---- key: the Intel SGX Root CA is compiled into attest/; the API key is the wire's ---- */

struct pccs_trust {
	char	header[sizeof("Ocp-Apim-Subscription-Key: ") + PCCS_API_KEY_MAX + 2];
	int	have_key;
};

static void *
pccs_key_create(const struct config *cfg, char *err, size_t errlen)
{
	struct pccs_trust	*t;
	uint8_t			*key = NULL;
	char			 ferr[512];
	size_t			 n;

	if ((t = calloc(1, sizeof(*t))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (cfg->svc[CACHE_KIND_PCCS].api_key_file == NULL)
		return t;
	if ((key = file_read(cfg->svc[CACHE_KIND_PCCS].api_key_file, PCCS_API_KEY_FILE_MAX, &n,
	    ferr, sizeof(ferr))) == NULL) {
		snprintf(err, errlen, "pccs.api_key_file: %s", ferr);
		goto fail;
	}
	while (n > 0 && isspace(key[n - 1]))
		key[--n] = '\0';
	/* Never logged: only its length is checked. */
	if (n == 0 || n > PCCS_API_KEY_MAX || strspn((char *)key,
	    "0123456789abcdefABCDEF") != n) {
		snprintf(err, errlen, "pccs.api_key_file: %s: expected one line "
		    "of hex (the Intel PCS subscription key)", cfg->svc[CACHE_KIND_PCCS].api_key_file);
		goto fail;
	}
	snprintf(t->header, sizeof(t->header), "Ocp-Apim-Subscription-Key: %s",
	    (char *)key);
	t->have_key = 1;
	OPENSSL_cleanse(key, n);
	free(key);
	return t;
fail:
	if (key != NULL)
		OPENSSL_cleanse(key, n);
	free(key);
	free(t);
	return NULL;
}

static void
pccs_key_destroy(void *t)
{
	if (t != NULL)
		OPENSSL_cleanse(t, sizeof(struct pccs_trust));
	free(t);
}

/* ---- verify: the rules are entry/pccs.c's; the stored entry comes from the cache ---- */

static enum entry_verdict
pccs_check(struct svc *s, const struct svc_call *c, const struct fetch_res *res,
    time_t now, struct svc_answer *a, char *why, size_t whylen)
{
	struct cache		*cache = gen_cache(svc_gen(s));
	struct entry_stored	 st, *stored = NULL;
	struct entry_judgement	 j;
	struct cache_body	 b;
	struct pccs_req		 r;
	enum entry_verdict	 v;

	call_req(c, &r);
	/* Borrowed until the next cache call; the admit makes none. */
	memset(&st, 0, sizeof(st));
	if (cache != NULL && r.what != PCCS_FMSPCS && cache_get(cache,
	    CACHE_KIND_PCCS, c->key, c->klen, &st.meta, &b) == 1) {
		st.body = b.response;
		st.body_len = b.response_len;
		st.headers = b.headers;
		st.headers_len = b.headers_len;
		stored = &st;
	}
	switch ((v = svc_admit(s, c, res, stored, now, &j))) {
	case ENTRY_PASS:
		break;
	case ENTRY_STORE:
		a->meta.this_update = j.meta.this_update;
		a->meta.next_update = j.meta.next_update;
		a->meta.produced_at = j.meta.produced_at;
		a->meta.status = j.meta.status;
		a->meta.flags |= j.meta.flags;
		break;
	default:
		snprintf(why, whylen, "%s", j.reason);
		v = ENTRY_REFUSE;
		break;
	}
	entry_judgement_free(&j);
	return v;
}

/* ---- answers ------------------------------------------------------------- */

static void
add_kept_headers(struct http_req *req, const uint8_t *h, size_t len,
    int skip_content_type)
{
	const char		*p = (const char *)h, *end = p + len, *eol, *colon;
	char			 name[64], *value;

	for (; h != NULL && p < end; p = eol + 2) {
		if ((eol = memchr(p, '\r', (size_t)(end - p))) == NULL)
			break;
		if ((colon = memchr(p, ':', (size_t)(eol - p))) == NULL ||
		    (size_t)(colon - p) >= sizeof(name) || colon + 2 > eol)
			continue;
		memcpy(name, p, (size_t)(colon - p));
		name[colon - p] = '\0';
		if (skip_content_type && strcasecmp(name, "Content-Type") == 0)
			continue;
		if ((value = strndup(colon + 2, (size_t)(eol - colon - 2))) == NULL)
			continue;
		http_resp_header(req, name, value);
		free(value);
	}
}

/* CRLs in the dialect the client asked for: DER, PEM, or PCCS's hex of the DER. */
static int
serve_crl(struct http_req *req, const char *variant, const uint8_t *body,
    size_t len)
{
	struct evbuffer		*b = http_resp_body(req);
	uint8_t			*der;
	size_t			 dlen, i;
	unsigned char		 line[65];
	int			 n;

	if ((der = intel_crl_to_der(body, len, &dlen)) == NULL)
		return -1;
	if (strcmp(variant, "der") == 0) {
		http_resp_header(req, "Content-Type", "application/pkix-crl");
		evbuffer_add(b, der, dlen);
	} else if (strcmp(variant, "pem") == 0) {
		http_resp_header(req, "Content-Type", "application/x-pem-file");
		evbuffer_add_printf(b, "-----BEGIN X509 CRL-----\n");
		for (i = 0; i < dlen; i += 48) {
			n = EVP_EncodeBlock(line, der + i, (int)(dlen - i < 48 ? dlen - i : 48));
			evbuffer_add(b, line, (size_t)n);
			evbuffer_add(b, "\n", 1);
		}
		evbuffer_add_printf(b, "-----END X509 CRL-----\n");
	} else {
		/* PCCS compatibility: QPL's default API version reads hex text. */
		http_resp_header(req, "Content-Type", "application/pkix-crl");
		for (i = 0; i < dlen; i++)
			evbuffer_add_printf(b, "%02x", der[i]);
	}
	free(der);
	return 0;
}

static enum metrics_result
pccs_serve(struct svc *s, struct http_req *req, const struct svc_call *c,
    const struct cache_meta *m, const uint8_t *body, size_t len,
    const uint8_t *headers, size_t headers_len, time_t now,
    enum metrics_result result)
{
	struct pccs_req	r;
	int		crl;

	(void)s;
	call_req(c, &r);
	crl = r.what == PCCS_PCK_CRL || r.what == PCCS_ROOT_CRL;
	add_kept_headers(req, headers, headers_len, crl);
	if (!crl || serve_crl(req, c->variant, body, len) == -1) {
		if (headers == NULL || crl)
			http_resp_header(req, "Content-Type", "application/octet-stream");
		evbuffer_add(http_resp_body(req), body, len);
	}
	return httpcache_answer(req, m, HTTPCACHE_TO_REFRESH, now) == 304 ?
	    METRICS_RES_NOT_MODIFIED : result;
}

/* ---- requests --------------------------------------------------------------- */

/* Intel wants the API key for PCK certificates only; no one else sees it. */
static void
call_api_key(struct svc *s, struct svc_call *c, const struct pccs_req *r)
{
	const struct pccs_trust	*t = svc_key(s);

	if (t != NULL && t->have_key && pccs_wants_api_key(r))
		c->extra_header = t->header;
}

/* A refresh's call (restored by the service) gains the API key. */
static int
pccs_refresh_call(struct svc *s, const struct cache_body *b,
    struct svc_call *c, void **scratch)
{
	struct pccs_req	 r;

	(void)b;
	(void)scratch;
	call_req(c, &r);
	call_api_key(s, c, &r);
	return 0;
}

static const struct svc_ops	pccs_ops = {
	.name = "pccs",
	.retry_after_s = "5",
	.kind = CACHE_KIND_PCCS,
	.metrics = { .routes = { "pccs" }, .failed = METRICS_RES_UNAVAILABLE },
	.key_new = pccs_key_create,
	.key_free = pccs_key_destroy,
	.verify = pccs_check,
	.serve = pccs_serve,
	.serve_final = svc_serve_final_as_sent,
	.serve_failed = svc_serve_failed_text,
	.refresh_call = pccs_refresh_call,
};

/* Whether the path belongs to this route (any version: v3 gets 410). */
static int
pccs_is_path(const char *path)
{
	return strncmp(path, "/sgx/certification/", 19) == 0 ||
	    strncmp(path, "/tdx/certification/", 19) == 0;
}

static void
answer_text(struct http_req *req, int status, const char *reason,
    const char *text)
{
	http_resp_header(req, "Content-Type", "text/plain; charset=utf-8");
	httpcache_no_store(req);
	evbuffer_add_printf(http_resp_body(req), "%s\n", text);
	http_reply(req, status, reason);
}

/* GET: `path` percent-decoded, `query` raw (may be NULL), parsed by the PCCS kind. */
static void
pccs_get(struct svc *s, struct http_req *req, const char *path,
    const char *query)
{
	struct kind_ask	 in;
	struct svc_call	 c;
	struct pccs_req	 r;
	char		 canon[KIND_CANON_BYTES], why[PCCS_WHY_MAX];
	int		 status;

	memset(&in, 0, sizeof(in));
	in.method = KIND_GET;
	in.path = path;
	in.query = query;
	if (svc_call_parse(&c, CACHE_KIND_PCCS, &in, canon, &status, why,
	    sizeof(why)) == 0) {
		call_req(&c, &r);
		/* How the client wants a CRL: the wire's, read when serving. */
		snprintf(c.variant, sizeof(c.variant), "%s", r.variant);
		c.route = PCCS_ROUTE;
		call_api_key(s, &c, &r);
		svc_handle(s, req, &c);
	} else if (status == 410) {
		metrics.requests[PCCS_ROUTE][METRICS_RES_FINAL]++;
		answer_text(req, 410, "Gone", why);
	} else if (status == 404) {
		metrics.requests[PCCS_ROUTE][METRICS_RES_HTTP_ERROR]++;
		http_error(req, 404, "Not Found");
	} else {
		metrics.requests[PCCS_ROUTE][METRICS_RES_HTTP_ERROR]++;
		answer_text(req, 400, "Bad Request", why);
	}
}

/* route_handle_fn: GET and HEAD under /sgx/certification/ and /tdx/certification/. */
static int
pccs_handle(struct svc *s, struct http_req *req, const char *path,
    const char *query)
{
	if ((http_req_method(req) != HTTP_GET &&
	    http_req_method(req) != HTTP_HEAD) || !pccs_is_path(path))
		return -1;
	pccs_get(s, req, path, query);
	return 0;
}

const struct route	pccs_route = {
	.ops = &pccs_ops,
	.handle = pccs_handle,
	.methods = ROUTE_GET_HEAD,
	.upstream_help = "Intel PCS or a PCCS",
};
