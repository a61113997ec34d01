/* SPDX-License-Identifier: Apache-2.0 */
/* AMD KDS on the wire: client requests to entry/kds.c's canonical paths, answers judged by the KDS kind's admit, entries served. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>

#include "cache/store.h"
#include "entry/conf.h"
#include "entry/entry.h"
#include "entry/judge.h"
#include "entry/kds.h"
#include "entry/kind.h"
#include "proxy/http/http.h"
#include "proxy/http/httpcache.h"
#include "proxy/kinds/route.h"
#include "proxy/metrics.h"
#include "proxy/service.h"

#define KDS_ROUTE	METRICS_ROUTE(CACHE_KIND_KDS, 0)	/* as the metrics count it */

#define KDS_PACED_RETRY_S "10"	/* KDS allows about one identical request per 10 s */
_Static_assert(sizeof(struct kds_req) <= SVC_QUERY_BYTES,
    "a KDS request travels in struct svc_call");

/* The typed request the call carries (call_for put it there). */
static void
call_req(const struct svc_call *c, struct kds_req *r)
{
	memcpy(r, c->query.bytes, sizeof(*r));
}

/* The KDS kind's admit (svc_admit): a VCEK against its product's cert_chain in the store (gen_rules), else the compiled-in one. */
static enum entry_verdict
kds_check(struct svc *s, const struct svc_call *c, const struct fetch_res *res,
    time_t now, struct svc_answer *a, char *why, size_t whylen)
{
	struct entry_judgement	 j;
	enum entry_verdict	 v = ENTRY_REFUSE;

	/* KDS has no newer-than-stored rule: no stored entry to pass. */
	if (svc_admit(s, c, res, NULL, now, &j) != ENTRY_STORE) {
		snprintf(why, whylen, "%s", j.reason);
		goto out;
	}
	a->meta.this_update = j.meta.this_update;
	a->meta.produced_at = j.meta.produced_at;
	a->meta.next_update = j.meta.next_update;
	a->meta.flags |= j.meta.flags;
	v = ENTRY_STORE;
 out:
	entry_judgement_free(&j);
	return v;
}

static enum metrics_result
kds_serve(struct svc *s, struct http_req *req, const struct svc_call *c,
    const struct cache_meta *m, const uint8_t *body, size_t len,
    const uint8_t *headers, size_t headers_len, time_t now,
    enum metrics_result result)
{
	const char		*ct = "application/octet-stream";
	struct kds_req		 r;

	(void)s;
	call_req(c, &r);
	/* KDS sends PEM chains and DER certificates and CRLs. */
	if (r.what == KDS_CHAIN)
		ct = "application/x-pem-file";
	else if (r.what == KDS_CRL)
		ct = "application/pkix-crl";
	else if (headers_len == 0 || headers == NULL)
		ct = "application/pkix-cert";
	if (headers != NULL && headers_len > 14 &&
	    strncasecmp((const char *)headers, "Content-Type: ", 14) == 0) {
		const char *eol = memchr(headers, '\r', headers_len);
		char	    v[128];

		if (eol != NULL && (size_t)(eol - (const char *)headers) - 14 < sizeof(v)) {
			memcpy(v, headers + 14, (size_t)(eol - (const char *)headers) - 14);
			v[eol - (const char *)headers - 14] = '\0';
			http_resp_header(req, "Content-Type", v);
			ct = NULL;
		}
	}
	if (ct != NULL)
		http_resp_header(req, "Content-Type", ct);
	evbuffer_add(http_resp_body(req), body, len);
	return httpcache_answer(req, m, HTTPCACHE_TO_REFRESH, now) == 304 ?
	    METRICS_RES_NOT_MODIFIED : result;
}

static const struct svc_ops	kds_ops = {
	.name = "kds",
	.retry_after_s = KDS_PACED_RETRY_S,
	.kind = CACHE_KIND_KDS,
	.metrics = { .routes = { "kds" }, .failed = METRICS_RES_UNAVAILABLE },
	.verify = kds_check,
	.serve = kds_serve,
	.serve_final = svc_serve_final_as_sent,
	.serve_failed = svc_serve_failed_text,
};

static int
kds_is_path(const char *path)
{
	return strncmp(path, "/vcek/", 6) == 0 || strncmp(path, "/vlek/", 6) == 0;
}

/* A request that never reaches an upstream: 400 or 404, and why. */
static void
refuse(struct http_req *req, int status, const char *why)
{
	metrics.requests[KDS_ROUTE][METRICS_RES_HTTP_ERROR]++;
	http_resp_header(req, "Content-Type", "text/plain; charset=utf-8");
	httpcache_no_store(req);
	evbuffer_add_printf(http_resp_body(req), "%s\n", why);
	http_reply(req, status, status == 404 ? "Not Found" : "Bad Request");
}

/* GET: `path` percent-decoded, `query` raw (may be NULL), parsed by the KDS kind. */
static void
kds_get(struct svc *s, struct http_req *req, const char *path,
    const char *query)
{
	struct kind_ask	in;
	struct svc_call	c;
	char		canon[KIND_CANON_BYTES], why[128];
	int		status;

	memset(&in, 0, sizeof(in));
	in.method = KIND_GET;
	in.path = path;
	in.query = query;
	if (svc_call_parse(&c, CACHE_KIND_KDS, &in, canon, &status, why,
	    sizeof(why)) == -1) {
		refuse(req, status, why);
		return;
	}
	c.route = KDS_ROUTE;
	svc_handle(s, req, &c);
}

/* route_handle_fn: GET and HEAD under /vcek/ and /vlek/. */
static int
kds_handle(struct svc *s, struct http_req *req, const char *path,
    const char *query)
{
	if ((http_req_method(req) != HTTP_GET &&
	    http_req_method(req) != HTTP_HEAD) || !kds_is_path(path))
		return -1;
	kds_get(s, req, path, query);
	return 0;
}

const struct route	kds_route = {
	.ops = &kds_ops,
	.handle = kds_handle,
	.methods = ROUTE_GET_HEAD,
	.upstream_help = "AMD KDS or a mirror",
};
