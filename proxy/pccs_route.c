/* The Intel PCS/PCCS kind: typed requests, signatures checked against the pinned root, vendor bytes served as sent. */
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
#include <openssl/evp.h>

#include "attest/intel.h"
#include "cache/store.h"
#include "entry/config.h"
#include "proxy/http.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/pccs_route.h"
#include "proxy/service.h"

#define PCCS_PATH_MAX		1200	/* pckcert: 768 hex of encrypted PPID and more */
#define PCCS_KEY_INLINE_MAX	200	/* longer canonical paths are keyed by their hash */
#define PCCS_API_KEY_MAX	256
#define PCCS_EVAL_NUM_MAX	1000000

/* What a request asks for; rebuilt into one canonical upstream path. */
enum pccs_what {
	PW_TCB, PW_QE, PW_QVE, PW_QAE, PW_EVAL_NUMS, PW_PCK_CRL, PW_ROOT_CRL,
	PW_PCK_CERT, PW_FMSPCS, PW_MAX
};

static const struct {
	const char	*name;		/* path after /{sgx|tdx}/certification/v4/ */
	int		 tdx;		/* also under /tdx/ */
	enum intel_kind	 kind;
	const char	*chain_header;
} pw_table[PW_MAX] = {
	[PW_TCB] = { "tcb", 1, INTEL_TCB_INFO, "TCB-Info-Issuer-Chain" },
	[PW_QE] = { "qe/identity", 1, INTEL_ENCLAVE_IDENTITY,
	    "SGX-Enclave-Identity-Issuer-Chain" },
	[PW_QVE] = { "qve/identity", 0, INTEL_ENCLAVE_IDENTITY,
	    "SGX-Enclave-Identity-Issuer-Chain" },
	[PW_QAE] = { "qae/identity", 0, INTEL_ENCLAVE_IDENTITY,
	    "SGX-Enclave-Identity-Issuer-Chain" },
	[PW_EVAL_NUMS] = { "tcbevaluationdatanumbers", 1, INTEL_TCB_EVAL_NUMS,
	    "TCB-Evaluation-Data-Numbers-Issuer-Chain" },
	[PW_PCK_CRL] = { "pckcrl", 0, INTEL_PCK_CRL, "SGX-PCK-CRL-Issuer-Chain" },
	[PW_ROOT_CRL] = { "rootcacrl", 0, INTEL_ROOT_CA_CRL, NULL },
	[PW_PCK_CERT] = { "pckcert", 0, INTEL_PCK_CERT,
	    "SGX-PCK-Certificate-Issuer-Chain" },
	[PW_FMSPCS] = { "fmspcs", 0, INTEL_KIND_MAX, NULL },
};

/* Headers verifiers read, kept with the entry and served again as the vendor sent them. */
static const char *const pccs_keep_headers[] = {
	"Content-Type",
	"TCB-Info-Issuer-Chain",
	"SGX-TCB-Info-Issuer-Chain",
	"SGX-Enclave-Identity-Issuer-Chain",
	"TCB-Evaluation-Data-Numbers-Issuer-Chain",
	"SGX-PCK-CRL-Issuer-Chain",
	"SGX-PCK-Certificate-Issuer-Chain",
	"SGX-PCK-Certificate-CA-Type",
	"SGX-TCBm",
	"SGX-FMSPC",
	NULL
};

static const char *const pccs_suffixes[] = {
	"/sgx/certification/v4", "/tdx/certification/v4", NULL
};

/* The kind of a canonical path ("/sgx/certification/v4/tcb?..."), or PW_MAX. */
static enum pccs_what
what_of(const char *path)
{
	const char	*p;
	size_t		 i, n;

	if (strncmp(path, "/sgx/certification/v4/", 22) != 0 &&
	    strncmp(path, "/tdx/certification/v4/", 22) != 0)
		return PW_MAX;
	p = path + 22;
	for (i = 0; i < PW_MAX; i++) {
		n = strlen(pw_table[i].name);
		if (strncmp(p, pw_table[i].name, n) == 0 &&
		    (p[n] == '\0' || p[n] == '?'))
			return (enum pccs_what)i;
	}
	return PW_MAX;
}

/* ---- trust: the Intel SGX Root CA is compiled into attest/; the API key is ours ---- */

struct pccs_trust {
	char	header[sizeof("Ocp-Apim-Subscription-Key: ") + PCCS_API_KEY_MAX + 2];
	int	have_key;
};

static void *
pccs_trust_create(const struct config *cfg, char *err, size_t errlen)
{
	struct pccs_trust	*t;
	char			 key[PCCS_API_KEY_MAX + 2];
	FILE			*f;
	size_t			 n;

	if ((t = calloc(1, sizeof(*t))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (cfg->pccs.api_key_file == NULL)
		return t;
	if ((f = fopen(cfg->pccs.api_key_file, "r")) == NULL) {
		snprintf(err, errlen, "pccs.api_key_file: %s: %s",
		    cfg->pccs.api_key_file, strerror(errno));
		free(t);
		return NULL;
	}
	n = fread(key, 1, sizeof(key) - 1, f);
	fclose(f);
	key[n] = '\0';
	while (n > 0 && isspace((unsigned char)key[n - 1]))
		key[--n] = '\0';
	/* Never logged: only its length is checked. */
	if (n == 0 || n > PCCS_API_KEY_MAX || strspn(key,
	    "0123456789abcdefABCDEF") != n) {
		snprintf(err, errlen, "pccs.api_key_file: %s: expected one line "
		    "of hex (the Intel PCS subscription key)", cfg->pccs.api_key_file);
		free(t);
		return NULL;
	}
	snprintf(t->header, sizeof(t->header), "Ocp-Apim-Subscription-Key: %s", key);
	t->have_key = 1;
	return t;
}

static void
pccs_trust_destroy(void *t)
{
	if (t != NULL)
		OPENSSL_cleanse(t, sizeof(struct pccs_trust));
	free(t);
}

/* ---- verify --------------------------------------------------------------- */

static const char *
chain_of(enum pccs_what w, const struct fetch_res *res)
{
	const char	*v;

	if (pw_table[w].chain_header == NULL)
		return NULL;
	if ((v = fetch_res_header(res, pw_table[w].chain_header)) == NULL &&
	    w == PW_TCB)
		v = fetch_res_header(res, "SGX-TCB-Info-Issuer-Chain");	/* v3 name */
	return v;
}

/* The issuer chain of a stored entry, from its kept headers. */
static char *
stored_chain(enum pccs_what w, const struct cache_body *b)
{
	const char	*names[2] = { pw_table[w].chain_header,
			    w == PW_TCB ? "SGX-TCB-Info-Issuer-Chain" : NULL };
	const char	*p, *end, *eol;
	size_t		 i, n;

	for (i = 0; i < 2 && names[i] != NULL; i++) {
		n = strlen(names[i]);
		for (p = (const char *)b->headers, end = p + b->headers_len; p < end;
		    p = eol + 2) {
			if ((eol = memchr(p, '\r', (size_t)(end - p))) == NULL)
				break;
			if ((size_t)(eol - p) > n + 2 && strncasecmp(p, names[i], n) == 0 &&
			    p[n] == ':')
				return strndup(p + n + 2, (size_t)(eol - p) - n - 2);
		}
	}
	return NULL;
}

/* A stored answer with a newer tcbEvaluationDataNumber is never replaced by an older one. */
static int
older_than_stored(struct svc *s, const struct svc_call *c, enum pccs_what w,
    const struct intel_result *cand)
{
	struct cache		*cache = gen_cache(svc_gen(s));
	struct cache_meta	 m;
	struct cache_body	 b;
	struct intel_result	 cur;
	char			*chain;
	uint8_t			*body;
	size_t			 len;
	int			 older = 0;

	if (cache == NULL || cache_get(cache, CACHE_KIND_PCCS, c->key, c->klen, &m,
	    &b) != 1)
		return 0;
	/* Copies: the next cache call ends the borrowed pointers. */
	chain = stored_chain(w, &b);
	len = b.response_len;
	if ((body = malloc(len ? len : 1)) == NULL) {
		free(chain);
		return 0;
	}
	memcpy(body, b.response, len);
	/* Parsed as of its own issue date: an expired entry still has a number. */
	if (intel_verify(pw_table[w].kind, body, len, chain, chain ? strlen(chain) : 0,
	    (time_t)m.this_update + 1, &cur) == 0)
		older = !intel_may_replace(&cur, cand);
	free(body);
	free(chain);
	return older;
}

/*
 * A signed answer to another question is no answer: the TCB info must be
 * for the FMSPC asked and of the TEE asked (SGX or TDX), the identity of
 * the enclave asked.
 */
static int
answers_request(const char *path, enum pccs_what w, const struct intel_result *r,
    char *why, size_t whylen)
{
	const char	*f, *want_id = NULL;
	int		 tdx = strncmp(path, "/tdx/", 5) == 0;

	switch (w) {
	case PW_TCB:
		if ((f = strstr(path, "fmspc=")) == NULL ||
		    strncasecmp(f + 6, r->fmspc, 12) != 0 || strlen(r->fmspc) != 12) {
			snprintf(why, whylen, "answers for FMSPC %s, not the one asked",
			    r->fmspc);
			return 0;
		}
		want_id = tdx ? "TDX" : "SGX";
		/* TCB info v2 has no id: it is SGX's. */
		if (r->id[0] == '\0' && !tdx)
			return 1;
		break;
	case PW_QE:
		want_id = tdx ? "TD_QE" : "QE";
		break;
	case PW_QVE:
		want_id = "QVE";
		break;
	case PW_QAE:
		want_id = "QAE";
		break;
	default:
		return 1;
	}
	if (strcmp(r->id, want_id) != 0) {
		snprintf(why, whylen, "answers for %s, not %s", r->id[0] ? r->id : "?",
		    want_id);
		return 0;
	}
	return 1;
}

static enum svc_verdict
pccs_check(struct svc *s, const struct svc_call *c, const struct fetch_res *res,
    time_t now, struct svc_answer *a, char *why, size_t whylen)
{
	enum pccs_what		w = what_of(c->path);
	struct intel_result	r;
	const char		*chain;

	if (w == PW_MAX) {
		snprintf(why, whylen, "internal: unknown path");
		return SVC_REJECT;
	}
	if (w == PW_FMSPCS)
		return SVC_PASS;	/* unsigned by Intel: relayed, never stored */
	chain = chain_of(w, res);
	if (intel_verify(pw_table[w].kind, res->body, res->body_len, chain,
	    chain ? strlen(chain) : 0, now, &r) == -1) {
		snprintf(why, whylen, "%s: %s", intel_verdict_str[r.verdict], r.detail);
		return SVC_REJECT;
	}
	if (!answers_request(c->path, w, &r, why, whylen))
		return SVC_REJECT;
	if (older_than_stored(s, c, w, &r)) {
		snprintf(why, whylen, "stale: tcbEvaluationDataNumber %ld is older "
		    "than the stored one", r.tcb_evaluation_data_number);
		return SVC_REJECT;
	}
	a->meta.this_update = r.this_update;
	a->meta.next_update = r.next_update;
	a->meta.produced_at = r.this_update;
	a->meta.status = r.tcb_evaluation_data_number > 0 &&
	    r.tcb_evaluation_data_number < 256 ?
	    (uint8_t)r.tcb_evaluation_data_number : 0;
	/* A PCK certificate does not change for its TCB: kept until notAfter. */
	if (w == PW_PCK_CERT)
		a->meta.flags |= CACHE_F_NO_REFRESH;
	return SVC_STORE;
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
	enum pccs_what	w = what_of(c->path);
	int		crl = w == PW_PCK_CRL || w == PW_ROOT_CRL;

	(void)s;
	(void)m;
	(void)now;
	add_kept_headers(req, headers, headers_len, crl);
	if (crl && serve_crl(req, c->variant, body, len) == 0) {
		http_reply(req, 200, "OK");
		return result;
	}
	if (headers == NULL || crl)
		http_resp_header(req, "Content-Type", "application/octet-stream");
	evbuffer_add(http_resp_body(req), body, len);
	http_reply(req, 200, "OK");
	return result;
}

/* ---- requests --------------------------------------------------------------- */

/* Fill the call's key and upstream path from a canonical path. */
static void
call_for(struct svc *s, struct svc_call *c, const char *canon, const char *variant)
{
	const struct pccs_trust	*t = svc_trust(s);
	unsigned char		 md[32];
	size_t			 n = strlen(canon);

	memset(c, 0, sizeof(*c));
	if (n <= PCCS_KEY_INLINE_MAX) {
		memcpy(c->key, canon, n);
		c->klen = n;
	} else {
		EVP_Digest(canon, n, md, NULL, EVP_sha256(), NULL);
		memcpy(c->key, "h:", 2);
		memcpy(c->key + 2, md, sizeof(md));
		c->klen = 2 + sizeof(md);
	}
	c->method = "GET";
	c->path = canon;
	c->keep = (const uint8_t *)canon;
	c->keep_len = n;
	c->route = ROUTE_PCCS;
	snprintf(c->variant, sizeof(c->variant), "%s", variant ? variant : "");
	/* Intel wants the key for PCK certificates only; no one else sees it. */
	if (t != NULL && t->have_key && what_of(canon) == PW_PCK_CERT)
		c->extra_header = t->header;
}

static int
pccs_refresh_call(struct svc *s, const uint8_t *key, size_t klen,
    const struct cache_body *b, struct svc_call *c, void **scratch)
{
	char	*path;

	(void)key;
	(void)klen;
	if (b->request == NULL || b->request_len == 0 ||
	    b->request_len >= PCCS_PATH_MAX ||
	    (path = strndup((const char *)b->request, b->request_len)) == NULL)
		return -1;
	if (what_of(path) == PW_MAX) {
		free(path);
		return -1;
	}
	*scratch = path;
	call_for(s, c, path, NULL);
	return 0;
}

const struct svc_ops	pccs_ops = {
	.name = "pccs",
	.retry_after_s = "5",
	.kind = CACHE_KIND_PCCS,
	.keep_headers = pccs_keep_headers,
	.base_suffixes = pccs_suffixes,
	.trust_new = pccs_trust_create,
	.trust_free = pccs_trust_destroy,
	.verify = pccs_check,
	.serve = pccs_serve,
	.serve_final = svc_serve_final_as_sent,
	.serve_failed = svc_serve_failed_text,
	.refresh_call = pccs_refresh_call,
};

int
pccs_is_path(const char *path)
{
	return strncmp(path, "/sgx/certification/", 19) == 0 ||
	    strncmp(path, "/tdx/certification/", 19) == 0;
}

/* hex of exactly n digits (n 0: any length up to max), upper-cased into out. */
static int
hex_param(const char *v, size_t n, size_t max, char *out, size_t outlen)
{
	size_t	len, i;

	if (v == NULL)
		return -1;
	len = strlen(v);
	if ((n && len != n) || len == 0 || len > max || len % 2 || len + 1 > outlen)
		return -1;
	for (i = 0; i < len; i++) {
		if (!isxdigit((unsigned char)v[i]))
			return -1;
		out[i] = (char)toupper((unsigned char)v[i]);
	}
	out[len] = '\0';
	return 0;
}

static void
bad_request(struct http_req *req, const char *why)
{
	metrics.requests[ROUTE_PCCS][RES_HTTP_ERROR]++;
	http_resp_header(req, "Content-Type",
	    "text/plain; charset=utf-8");
	evbuffer_add_printf(http_resp_body(req), "%s\n", why);
	http_reply(req, 400, "Bad Request");
}

/* Only these parameter names, each at most once. */
static const char *
only_params(const struct evkeyvalq *q, const char *const *allowed)
{
	const struct evkeyval	*kv, *kv2;
	size_t			 i;

	TAILQ_FOREACH(kv, q, next) {
		for (i = 0; allowed[i] != NULL; i++)
			if (strcmp(kv->key, allowed[i]) == 0)
				break;
		if (allowed[i] == NULL)
			return kv->key;
		for (kv2 = TAILQ_NEXT(kv, next); kv2 != NULL; kv2 = TAILQ_NEXT(kv2, next))
			if (strcmp(kv->key, kv2->key) == 0)
				return kv->key;
	}
	return NULL;
}

/* update=early|standard or tcbEvaluationDataNumber=N (not both), into the canonical query. */
static int
update_param(const struct evkeyvalq *q, char *out, size_t outlen, const char **why)
{
	const char	*u = evhttp_find_header(q, "update");
	const char	*n = evhttp_find_header(q, "tcbEvaluationDataNumber");
	char		*end;
	long		 v;

	if (u != NULL && n != NULL) {
		*why = "update and tcbEvaluationDataNumber are mutually exclusive";
		return -1;
	}
	if (n != NULL) {
		errno = 0;
		v = strtol(n, &end, 10);
		if (*n == '\0' || *end != '\0' || errno || v < 0 || v > PCCS_EVAL_NUM_MAX) {
			*why = "tcbEvaluationDataNumber: expected a non-negative integer";
			return -1;
		}
		snprintf(out, outlen, "tcbEvaluationDataNumber=%ld", v);
		return 0;
	}
	if (u == NULL || strcasecmp(u, "standard") == 0)
		snprintf(out, outlen, "update=standard");	/* Intel's default */
	else if (strcasecmp(u, "early") == 0)
		snprintf(out, outlen, "update=early");
	else {
		*why = "update: expected early or standard";
		return -1;
	}
	return 0;
}

void
pccs_handle(struct svc *s, struct http_req *req, const char *path,
    const char *query)
{
	static const char *const p_tcb[] = { "fmspc", "update",
	    "tcbEvaluationDataNumber", NULL };
	static const char *const p_ident[] = { "update", "tcbEvaluationDataNumber", NULL };
	static const char *const p_none[] = { NULL };
	static const char *const p_crl[] = { "ca", "encoding", NULL };
	static const char *const p_pck[] = { "encrypted_ppid", "cpusvn", "pcesvn",
	    "pceid", "qeid", NULL };
	static const char *const p_fmspcs[] = { "platform", NULL };
	static const char *const p_uri[] = { "uri", NULL };
	struct evkeyvalq	 q;
	struct svc_call		 c;
	char			 canon[PCCS_PATH_MAX], upd[64], fmspc[13];
	char			 ppid[769], cpusvn[33], pcesvn[5], pceid[5], qeid[261];
	const char		*rest, *bad, *why = NULL, *v, *variant = NULL;
	const char		*tee;
	enum pccs_what		 w;
	size_t			 i;

	TAILQ_INIT(&q);
	if (strncmp(path + 4, "/certification/v4/", 18) != 0) {
		/* PCS v3 reached its end of life: say so, as PCCS does. */
		metrics.requests[ROUTE_PCCS][RES_FINAL]++;
		http_resp_header(req, "Content-Type", "text/plain; charset=utf-8");
		evbuffer_add_printf(http_resp_body(req),
		    "only the Intel PCS API version 4 is served\n");
		http_reply(req, 410, "Gone");
		return;
	}
	tee = strncmp(path, "/tdx/", 5) == 0 ? "tdx" : "sgx";
	rest = path + 22;
	for (w = 0; w < PW_MAX; w++)
		if (strcmp(rest, pw_table[w].name) == 0)
			break;
	if (w == PW_MAX && strcmp(rest, "crl") != 0) {
		metrics.requests[ROUTE_PCCS][RES_HTTP_ERROR]++;
		http_error(req, 404, "Not Found");
		return;
	}
	if (w != PW_MAX && strcmp(tee, "tdx") == 0 && !pw_table[w].tdx) {
		metrics.requests[ROUTE_PCCS][RES_HTTP_ERROR]++;
		http_error(req, 404, "Not Found");
		return;
	}
	if (query != NULL && evhttp_parse_query_str(query, &q) == -1) {
		bad_request(req, "the query string does not parse");
		return;
	}
	switch (w) {
	case PW_TCB:
		if ((bad = only_params(&q, p_tcb)) != NULL)
			goto unknown;
		if (hex_param(evhttp_find_header(&q, "fmspc"), 12, 12, fmspc,
		    sizeof(fmspc)) == -1) {
			why = "fmspc: expected 12 hex digits";
			goto bad;
		}
		if (update_param(&q, upd, sizeof(upd), &why) == -1)
			goto bad;
		snprintf(canon, sizeof(canon), "/%s/certification/v4/tcb?fmspc=%s&%s",
		    tee, fmspc, upd);
		break;
	case PW_QE:
	case PW_QVE:
	case PW_QAE:
		if ((bad = only_params(&q, p_ident)) != NULL)
			goto unknown;
		if (update_param(&q, upd, sizeof(upd), &why) == -1)
			goto bad;
		snprintf(canon, sizeof(canon), "/%s/certification/v4/%s?%s", tee,
		    pw_table[w].name, upd);
		break;
	case PW_EVAL_NUMS:
	case PW_ROOT_CRL:
		if ((bad = only_params(&q, p_none)) != NULL)
			goto unknown;
		snprintf(canon, sizeof(canon), "/%s/certification/v4/%s", tee,
		    pw_table[w].name);
		variant = "hex";
		break;
	case PW_PCK_CRL:
		if ((bad = only_params(&q, p_crl)) != NULL)
			goto unknown;
		v = evhttp_find_header(&q, "ca");
		if (v == NULL || (strcasecmp(v, "processor") != 0 &&
		    strcasecmp(v, "platform") != 0)) {
			why = "ca: expected processor or platform";
			goto bad;
		}
		variant = evhttp_find_header(&q, "encoding");
		if (variant == NULL)
			variant = "hex";
		else if (strcasecmp(variant, "der") == 0)
			variant = "der";
		else if (strcasecmp(variant, "pem") == 0)
			variant = "pem";
		else {
			why = "encoding: expected der or pem";
			goto bad;
		}
		/* One entry whatever the dialect: always DER from upstream. */
		snprintf(canon, sizeof(canon),
		    "/sgx/certification/v4/pckcrl?ca=%s&encoding=der",
		    strcasecmp(v, "processor") == 0 ? "processor" : "platform");
		break;
	case PW_PCK_CERT:
		if ((bad = only_params(&q, p_pck)) != NULL)
			goto unknown;
		if (hex_param(evhttp_find_header(&q, "encrypted_ppid"), 768, 768,
		    ppid, sizeof(ppid)) == -1 ||
		    hex_param(evhttp_find_header(&q, "cpusvn"), 32, 32, cpusvn,
		    sizeof(cpusvn)) == -1 ||
		    hex_param(evhttp_find_header(&q, "pcesvn"), 4, 4, pcesvn,
		    sizeof(pcesvn)) == -1 ||
		    hex_param(evhttp_find_header(&q, "pceid"), 4, 4, pceid,
		    sizeof(pceid)) == -1) {
			why = "pckcert: encrypted_ppid (768 hex), cpusvn (32), pcesvn (4) "
			    "and pceid (4) are required";
			goto bad;
		}
		qeid[0] = '\0';
		if (evhttp_find_header(&q, "qeid") != NULL &&
		    hex_param(evhttp_find_header(&q, "qeid"), 0, 260, qeid,
		    sizeof(qeid)) == -1) {
			why = "qeid: expected up to 260 hex digits";
			goto bad;
		}
		snprintf(canon, sizeof(canon), "/sgx/certification/v4/pckcert?"
		    "encrypted_ppid=%s&cpusvn=%s&pcesvn=%s&pceid=%s%s%s", ppid, cpusvn,
		    pcesvn, pceid, qeid[0] ? "&qeid=" : "", qeid);
		break;
	case PW_FMSPCS:
		if ((bad = only_params(&q, p_fmspcs)) != NULL)
			goto unknown;
		v = evhttp_find_header(&q, "platform");
		if (v != NULL && strcmp(v, "all") != 0 && strcmp(v, "client") != 0 &&
		    strcmp(v, "E3") != 0 && strcmp(v, "E5") != 0) {
			why = "platform: expected all, client, E3 or E5";
			goto bad;
		}
		snprintf(canon, sizeof(canon), "/sgx/certification/v4/fmspcs%s%s",
		    v ? "?platform=" : "", v ? v : "");
		break;
	default:
		/* PCCS's crl?uri=: only Intel's own CRL locations, mapped to our entries. */
		if ((bad = only_params(&q, p_uri)) != NULL)
			goto unknown;
		if ((v = evhttp_find_header(&q, "uri")) == NULL) {
			why = "uri: required";
			goto bad;
		}
		if (strstr(v, "certificates.trustedservices.intel.com/IntelSGXRootCA.") != NULL) {
			snprintf(canon, sizeof(canon), "/sgx/certification/v4/rootcacrl");
		} else if (strstr(v, "/sgx/certification/v4/pckcrl?ca=processor") != NULL ||
		    strstr(v, "/sgx/certification/v4/pckcrl?ca=platform") != NULL) {
			snprintf(canon, sizeof(canon),
			    "/sgx/certification/v4/pckcrl?ca=%s&encoding=der",
			    strstr(v, "ca=processor") ? "processor" : "platform");
		} else {
			why = "uri: not an Intel SGX CRL location";
			goto bad;
		}
		variant = "der";	/* PCCS 3.1 answers crl?uri= with raw DER */
		break;
	}
	for (i = 0; canon[i] != '\0'; i++)
		;
	call_for(s, &c, canon, variant);
	evhttp_clear_headers(&q);
	svc_handle(s, req, &c);
	return;
unknown:
	snprintf(canon, sizeof(canon), "unknown or repeated parameter \"%.64s\"", bad);
	evhttp_clear_headers(&q);
	bad_request(req, canon);
	return;
bad:
	evhttp_clear_headers(&q);
	bad_request(req, why);
}
