/* SPDX-License-Identifier: Apache-2.0 */
/* The RIM wire: GET /v1/rim/{id}, answers judged by entry/rim.c, the chain's CAs learned, served stale when upstreams fail. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "attest/ocsp_verify.h"
#include "attest/rim.h"
#include "cache/store.h"
#include "entry/conf.h"
#include "entry/entry.h"
#include "entry/judge.h"
#include "entry/kind.h"
#include "entry/rim.h"
#include "proxy/http/http.h"
#include "proxy/http/httpcache.h"
#include "proxy/kinds/route.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/service.h"

#define RIM_ROUTE	METRICS_ROUTE(CACHE_KIND_RIM, 0)	/* as the metrics count it */

/* The RIM kind's admit (svc_admit, which learns the chain's CAs), with what only the wire adds: logs. */
static enum entry_verdict
rim_check(struct svc *s, const struct svc_call *c, const struct fetch_res *res,
    time_t now, struct svc_answer *a, char *why, size_t whylen)
{
	struct entry_judgement	 j;
	enum entry_verdict	 v = ENTRY_REFUSE;

	/* cache_put keeps a newer stored entry itself, in its write transaction. */
	if (svc_admit(s, c, res, NULL, now, &j) != ENTRY_STORE) {
		snprintf(why, whylen, "%s", j.reason);
		goto out;
	}
	if (j.rim.result.signer_expired)
		log_info("rim: %s: signer %s expired; stored (nvattest reports it "
		    "as a claim)", j.rim.id, j.rim.result.signer_serial);
	a->meta = j.meta;
	v = ENTRY_STORE;
 out:
	entry_judgement_free(&j);
	return v;
}

static void
reply(struct http_req *req, int code, const char *reason,
    const char *ctype, const uint8_t *body, size_t len)
{
	/* Only 200s from a stored entry are cacheable: those go through httpcache_answer. */
	http_resp_header(req, "Content-Type", ctype);
	httpcache_no_store(req);
	evbuffer_add(http_resp_body(req), body, len);
	http_reply(req, code, reason);
}

static enum metrics_result
rim_serve(struct svc *s, struct http_req *req, const struct svc_call *c,
    const struct cache_meta *m, const uint8_t *body, size_t len,
    const uint8_t *headers, size_t headers_len, time_t now,
    enum metrics_result result)
{
	(void)s;
	(void)c;
	(void)headers;
	(void)headers_len;
	http_resp_header(req, "Content-Type", "application/json");
	evbuffer_add(http_resp_body(req), body, len);
	return httpcache_answer(req, m, HTTPCACHE_TO_REFRESH, now) == 304 ?
	    METRICS_RES_NOT_MODIFIED : result;
}

/* NVIDIA's 404 (no such RIM) is an answer about the id: passed on as sent. */
static void
rim_serve_final(struct svc *s, struct http_req *req,
    const struct svc_call *c, int http_status, const uint8_t *body, size_t len)
{
	(void)s;
	(void)c;
	reply(req, http_status, http_reason(http_status), "application/json",
	    body, len);
}

/* Nothing stored and no upstream: a quick 503 (nvattest retries it a few times). */
static void
rim_serve_failed(struct svc *s, struct http_req *req,
    const struct svc_call *c, const char *why)
{
	char	msg[1024];
	int	n;

	(void)s;
	(void)c;
	n = snprintf(msg, sizeof(msg), "{\"error\":\"RIM not cached and no "
	    "upstream answered\",\"detail\":\"");
	for (; why != NULL && *why != '\0' && n < (int)sizeof(msg) - 4; why++)
		if (*why != '"' && *why != '\\' && (unsigned char)*why >= 0x20)
			msg[n++] = *why;
	n += snprintf(msg + n, sizeof(msg) - n, "\"}");
	http_resp_header(req, "Retry-After", "1");
	reply(req, 503, "Service Unavailable", "application/json",
	    (const uint8_t *)msg, (size_t)n);
}

static const struct svc_ops	rim_ops = {
	.name = "rim",
	.kind = CACHE_KIND_RIM,
	.metrics = { .routes = { "rim" }, .failed = METRICS_RES_UNAVAILABLE },
	.max_response_bytes = RIM_MAX_JSON_BYTES,	/* a RIM's JSON envelope */
	.verify = rim_check,
	.serve = rim_serve,
	.serve_final = rim_serve_final,
	.serve_failed = rim_serve_failed,
};

/* route_handle_fn: GET and HEAD on the RIM service's own path (entry/rim.h), parsed by the RIM kind. */
static int
rim_handle(struct svc *s, struct http_req *req, const char *path,
    const char *query)
{
	struct kind_ask	in;
	struct svc_call	c;
	char		canon[KIND_CANON_BYTES], why[128];
	int		status;

	if ((http_req_method(req) != HTTP_GET &&
	    http_req_method(req) != HTTP_HEAD) ||
	    strncmp(path, ENTRY_RIM_PATH_PREFIX,
	    strlen(ENTRY_RIM_PATH_PREFIX)) != 0)
		return -1;
	memset(&in, 0, sizeof(in));
	in.method = KIND_GET;
	in.path = path;
	in.query = query;
	if (svc_call_parse(&c, CACHE_KIND_RIM, &in, canon, &status, why,
	    sizeof(why)) == -1) {
		metrics.requests[RIM_ROUTE][METRICS_RES_HTTP_ERROR]++;
		http_error(req, 400, "Bad Request");
		return 0;
	}
	c.route = RIM_ROUTE;
	svc_handle(s, req, &c);
	return 0;
}

const struct route	rim_route = {
	.ops = &rim_ops,
	.handle = rim_handle,
	.methods = ROUTE_GET_HEAD,
	.upstream_help = "NVIDIA RIM service",
};
