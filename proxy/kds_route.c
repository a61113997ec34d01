/* The AMD KDS kind: typed requests, chains to the pinned ARK, immutable VCEKs kept without refresh traffic. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "attest/amd.h"
#include "attest/amd_chains.h"
#include "cache/store.h"
#include "entry/config.h"
#include "proxy/http.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/kds_route.h"
#include "proxy/service.h"

#define KDS_PATH_MAX	256
#define KDS_SPL_MAX	255
#define KDS_PACED_RETRY_S "10"	/* KDS allows about one identical request per 10 s */

enum kds_what { KW_CHAIN, KW_CRL, KW_VEK };

/* What a canonical path names: "/vcek/v1/Milan/cert_chain", "/vlek/v1/Genoa/crl", "/vcek/v1/Turin/<hwid>?...". */
struct kds_req {
	enum kds_what		what;
	enum amd_signer		signer;
	enum amd_product	product;
	struct amd_vek_id	id;
};

static const char *const kds_keep_headers[] = { "Content-Type", NULL };
static const char *const kds_suffixes[] = { "/vcek/v1", "/vlek/v1", NULL };

static int
hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

/* One SPL parameter: a decimal 0..255 ("03" and "3" are the same value). */
static int
spl_param(const struct evkeyvalq *q, const char *name, int *out)
{
	const char	*v = evhttp_find_header(q, name);
	char		*end;
	long		 n;

	if (v == NULL || *v == '\0' || !isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	n = strtol(v, &end, 10);
	if (*end != '\0' || errno || n < 0 || n > KDS_SPL_MAX)
		return -1;
	*out = (int)n;
	return 0;
}

/*
 * Parse a path (and query) into typed fields. Used on client requests and
 * on the canonical paths stored for refresh alike. Returns 0 or -1 with
 * *why; *status is the HTTP status to answer with.
 */
static int
kds_parse(const char *path, const char *query, struct kds_req *r,
    const char **why, int *status)
{
	static const char *const vek_params[] = { "blSPL", "teeSPL", "snpSPL",
	    "ucodeSPL", "fmcSPL", NULL };
	struct evkeyvalq	 q;
	const struct evkeyval	*kv, *dup;
	const char		*p, *slash, *leaf;
	size_t			 n, i;
	int			 rv = -1;

	TAILQ_INIT(&q);
	memset(r, 0, sizeof(*r));
	*status = 404;
	if (strncmp(path, "/vcek/v1/", 9) == 0)
		r->signer = AMD_VCEK;
	else if (strncmp(path, "/vlek/v1/", 9) == 0)
		r->signer = AMD_VLEK;
	else {
		*why = "not a KDS path";
		return -1;
	}
	p = path + 9;
	if ((slash = strchr(p, '/')) == NULL ||
	    amd_product_parse(p, (size_t)(slash - p), &r->product) == -1) {
		*why = "unknown product: expected Milan, Genoa or Turin";
		return -1;
	}
	leaf = slash + 1;
	*status = 400;
	if (strcmp(leaf, "cert_chain") == 0 || strcmp(leaf, "crl") == 0) {
		r->what = leaf[0] == 'c' && leaf[1] == 'e' ? KW_CHAIN : KW_CRL;
		if (query != NULL && *query != '\0') {
			*why = "cert_chain and crl take no parameters";
			return -1;
		}
		return 0;
	}
	if (r->signer != AMD_VCEK) {
		*status = 404;
		*why = "VLEKs are not served by hardware ID";
		return -1;
	}
	/* The hardware ID: 64 bytes (Milan, Genoa), 8 for Turin; hex either case. */
	r->what = KW_VEK;
	n = strlen(leaf);
	if (n != (r->product == AMD_TURIN ? 16 : 128) || strspn(leaf,
	    "0123456789abcdefABCDEF") != n) {
		*why = r->product == AMD_TURIN ?
		    "hwid: Turin takes 16 hex digits (8 bytes of CHIP_ID)" :
		    "hwid: expected 128 hex digits (the 64-byte CHIP_ID)";
		return -1;
	}
	for (i = 0; i < n / 2; i++)
		r->id.hwid[i] = (uint8_t)(hexval(leaf[2 * i]) << 4 | hexval(leaf[2 * i + 1]));
	r->id.hwid_len = n / 2;
	if (query == NULL || evhttp_parse_query_str(query, &q) == -1) {
		*why = "blSPL, teeSPL, snpSPL and ucodeSPL are required";
		goto out;
	}
	TAILQ_FOREACH(kv, &q, next) {
		for (i = 0; vek_params[i] != NULL; i++)
			if (strcmp(kv->key, vek_params[i]) == 0)
				break;
		if (vek_params[i] == NULL) {
			*why = "unknown parameter (blSPL, teeSPL, snpSPL, ucodeSPL, fmcSPL)";
			goto out;
		}
		for (dup = TAILQ_NEXT(kv, next); dup != NULL; dup = TAILQ_NEXT(dup, next))
			if (strcmp(kv->key, dup->key) == 0) {
				*why = "a parameter is given twice";
				goto out;
			}
	}
	r->id.tcb.fmc = -1;
	if (spl_param(&q, "blSPL", &r->id.tcb.bl) == -1 ||
	    spl_param(&q, "teeSPL", &r->id.tcb.tee) == -1 ||
	    spl_param(&q, "snpSPL", &r->id.tcb.snp) == -1 ||
	    spl_param(&q, "ucodeSPL", &r->id.tcb.ucode) == -1) {
		*why = "blSPL, teeSPL, snpSPL and ucodeSPL: each 0..255";
		goto out;
	}
	if (r->product == AMD_TURIN) {
		if (spl_param(&q, "fmcSPL", &r->id.tcb.fmc) == -1) {
			*why = "fmcSPL: Turin requires it, 0..255";
			goto out;
		}
	} else if (evhttp_find_header(&q, "fmcSPL") != NULL) {
		*why = "fmcSPL: only Turin has it";
		goto out;
	}
	rv = 0;
out:
	evhttp_clear_headers(&q);
	return rv;
}

/* The one upstream path a request is rebuilt into (lower-case hex, decimal SPLs, fixed order). */
static void
kds_canon(const struct kds_req *r, char *buf, size_t len)
{
	char	hex[2 * AMD_HWID_MAX_BYTES + 1];
	size_t	i;

	if (r->what != KW_VEK) {
		snprintf(buf, len, "/%s/v1/%s/%s", amd_signer_str[r->signer],
		    amd_product_str[r->product], r->what == KW_CHAIN ? "cert_chain" : "crl");
		return;
	}
	for (i = 0; i < r->id.hwid_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", r->id.hwid[i]);
	if (r->product == AMD_TURIN)
		snprintf(buf, len, "/vcek/v1/%s/%s?fmcSPL=%d&blSPL=%d&teeSPL=%d&"
		    "snpSPL=%d&ucodeSPL=%d", amd_product_str[r->product], hex,
		    r->id.tcb.fmc, r->id.tcb.bl, r->id.tcb.tee, r->id.tcb.snp,
		    r->id.tcb.ucode);
	else
		snprintf(buf, len, "/vcek/v1/%s/%s?blSPL=%d&teeSPL=%d&snpSPL=%d&"
		    "ucodeSPL=%d", amd_product_str[r->product], hex, r->id.tcb.bl,
		    r->id.tcb.tee, r->id.tcb.snp, r->id.tcb.ucode);
}

static int
split(const char *canon, char *path, size_t len, const char **query)
{
	const char	*qm = strchr(canon, '?');
	size_t		 n = qm ? (size_t)(qm - canon) : strlen(canon);

	if (n + 1 > len)
		return -1;
	memcpy(path, canon, n);
	path[n] = '\0';
	*query = qm ? qm + 1 : NULL;
	return 0;
}

/* The product's cert_chain for checking a VCEK: the stored one, else the compiled-in one. */
static int
vek_chain(struct svc *s, const struct kds_req *r, uint8_t **pem, size_t *len)
{
	struct cache		*cache = gen_cache(svc_gen(s));
	struct cache_meta	 m;
	struct cache_body	 b;
	struct kds_req		 cr = *r;
	char			 key[KDS_PATH_MAX];
	const char		*builtin;

	cr.what = KW_CHAIN;
	kds_canon(&cr, key, sizeof(key));
	if (cache != NULL && cache_get(cache, CACHE_KIND_KDS, (const uint8_t *)key,
	    strlen(key), &m, &b) == 1 && b.response_len > 0 &&
	    (*pem = malloc(b.response_len)) != NULL) {
		memcpy(*pem, b.response, b.response_len);
		*len = b.response_len;
		return 0;
	}
	if ((builtin = amd_builtin_chain(r->product, r->signer)) == NULL)
		return -1;
	*len = strlen(builtin);
	if ((*pem = malloc(*len)) == NULL)
		return -1;
	memcpy(*pem, builtin, *len);
	return 0;
}

static enum svc_verdict
kds_check(struct svc *s, const struct svc_call *c, const struct fetch_res *res,
    time_t now, struct svc_answer *a, char *why, size_t whylen)
{
	struct kds_req		 r;
	struct amd_result	 ar;
	char			 path[KDS_PATH_MAX];
	const char		*query, *perr;
	uint8_t			*chain = NULL;
	size_t			 chain_len = 0;
	int			 status, rc;

	if (split(c->path, path, sizeof(path), &query) == -1 ||
	    kds_parse(path, query, &r, &perr, &status) == -1) {
		snprintf(why, whylen, "internal: own path does not parse");
		return SVC_REJECT;
	}
	switch (r.what) {
	case KW_CHAIN:
		rc = amd_verify_cert_chain(r.product, r.signer, res->body,
		    res->body_len, now, &ar);
		break;
	case KW_CRL:
		rc = amd_verify_crl(r.product, res->body, res->body_len, now, &ar);
		break;
	default:
		if (vek_chain(s, &r, &chain, &chain_len) == -1) {
			snprintf(why, whylen, "no %s cert_chain to check it against",
			    amd_product_str[r.product]);
			return SVC_REJECT;
		}
		rc = amd_verify_vek(r.product, r.signer, res->body, res->body_len,
		    chain, chain_len, &r.id, now, &ar);
		free(chain);
		break;
	}
	if (rc == -1) {
		snprintf(why, whylen, "%s: %s", amd_verdict_str[ar.verdict], ar.detail);
		return SVC_REJECT;
	}
	a->meta.this_update = ar.this_update;
	a->meta.produced_at = ar.this_update;
	if (r.what == KW_CRL)
		a->meta.next_update = ar.next_update;
	else {
		/* A VCEK for a (chip, TCB) never changes; ARK/ASK last 25 years. */
		a->meta.next_update = ar.not_after;
		a->meta.flags |= CACHE_F_NO_REFRESH;
	}
	return SVC_STORE;
}

static enum metrics_result
kds_serve(struct svc *s, struct http_req *req, const struct svc_call *c,
    const struct cache_meta *m, const uint8_t *body, size_t len,
    const uint8_t *headers, size_t headers_len, time_t now,
    enum metrics_result result)
{
	const char		*ct = "application/octet-stream";

	(void)s;
	(void)m;
	(void)now;
	/* KDS sends PEM chains and DER certificates and CRLs. */
	if (strstr(c->path, "/cert_chain") != NULL)
		ct = "application/x-pem-file";
	else if (strstr(c->path, "/crl") != NULL)
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
	http_reply(req, 200, "OK");
	return result;
}

static void
call_for(struct svc_call *c, const char *canon)
{
	size_t	n = strlen(canon);

	memset(c, 0, sizeof(*c));
	memcpy(c->key, canon, n);
	c->klen = n;
	c->method = "GET";
	c->path = canon;
	c->keep = (const uint8_t *)canon;
	c->keep_len = n;
	c->route = ROUTE_KDS;
}

static int
kds_refresh_call(struct svc *s, const uint8_t *key, size_t klen,
    const struct cache_body *b, struct svc_call *c, void **scratch)
{
	char	*canon;

	(void)s;
	(void)key;
	(void)klen;
	if (b->request == NULL || b->request_len == 0 ||
	    b->request_len >= KDS_PATH_MAX ||
	    (canon = strndup((const char *)b->request, b->request_len)) == NULL)
		return -1;
	*scratch = canon;
	call_for(c, canon);
	return 0;
}

const struct svc_ops	kds_ops = {
	.name = "kds",
	.retry_after_s = KDS_PACED_RETRY_S,
	.kind = CACHE_KIND_KDS,
	.keep_headers = kds_keep_headers,
	.base_suffixes = kds_suffixes,
	.verify = kds_check,
	.serve = kds_serve,
	.serve_final = svc_serve_final_as_sent,
	.serve_failed = svc_serve_failed_text,
	.refresh_call = kds_refresh_call,
};

int
kds_is_path(const char *path)
{
	return strncmp(path, "/vcek/", 6) == 0 || strncmp(path, "/vlek/", 6) == 0;
}

void
kds_handle(struct svc *s, struct http_req *req, const char *path,
    const char *query)
{
	struct kds_req	r;
	struct svc_call	c;
	char		canon[KDS_PATH_MAX];
	const char	*why;
	int		status;

	if (kds_parse(path, query, &r, &why, &status) == -1) {
		metrics.requests[ROUTE_KDS][RES_HTTP_ERROR]++;
		http_resp_header(req, "Content-Type", "text/plain; charset=utf-8");
		evbuffer_add_printf(http_resp_body(req), "%s\n", why);
		http_reply(req, status, status == 404 ? "Not Found" :
		    "Bad Request");
		return;
	}
	kds_canon(&r, canon, sizeof(canon));
	call_for(&c, canon);
	svc_handle(s, req, &c);
}
