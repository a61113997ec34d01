/* SPDX-License-Identifier: Apache-2.0 */
/* The AMD KDS kind: requests parsed into typed fields, the canonical path that keys them, and the rule admitting an answer. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "attest/amd.h"
#include "attest/amd_chains.h"
#include "attest/util.h"
#include "entry/entry.h"
#include "entry/judge.h"
#include "entry/kds.h"
#include "entry/kind.h"
#include "entry/query.h"

/*
 * What an entry takes of the map: a VCEK of 1.4 KB (the chain, 4.6 KB,
 * is one per product). One per chip: 10 % of the map.
 */
#define KDS_ENTRY_BYTES		(6 * 1024)
#define KDS_MAP_SHARE_PCT	10
/* AMD's KDS, asked when the section names no upstreams. */
#define KDS_UPSTREAM		"https://kdsintf.amd.com"
/* AMD KDS throttles identical requests to about one per 10 s. */
#define KDS_PACING_MS		10000

/* KDS sends Content-Type only; verifiers need nothing else from it. */
const char *const kds_keep_headers[] = { "Content-Type", NULL };
/* dstack and others configure "https://kdsintf.amd.com/vcek/v1": its host is meant. */
const char *const kds_base_suffixes[] = { "/vcek/v1", "/vlek/v1", NULL };

#define KDS_PREFIX_LEN		9	/* "/vcek/v1/", "/vlek/v1/" */
#define KDS_HWID_HEX		(2 * AMD_HWID_MAX_BYTES)	/* Milan, Genoa: CHIP_ID */
#define KDS_TURIN_HWID_HEX	16	/* Turin: the first 8 bytes of CHIP_ID */

#define WHY_PRODUCT	"unknown product: expected Milan, Genoa or Turin"
#define WHY_REQUIRED	"blSPL, teeSPL, snpSPL and ucodeSPL are required"
#define WHY_UNKNOWN	"unknown parameter (blSPL, teeSPL, snpSPL, ucodeSPL, fmcSPL)"
#define WHY_TWICE	"a parameter is given twice"
#define WHY_SPL		"blSPL, teeSPL, snpSPL and ucodeSPL: each 0..255"

const char *const kds_what_str[KDS_WHAT_MAX] = {
	[KDS_CHAIN] = "cert_chain",
	[KDS_CRL] = "crl",
	[KDS_VEK] = "vcek",
};

static const char *const kds_vek_params[] = { "blSPL", "teeSPL", "snpSPL",
	"ucodeSPL", "fmcSPL", NULL };

/* ---- parsing --------------------------------------------------------------- */

/* "/vcek/v1/{P}/" or "/vlek/v1/{P}/": signer and product; *leaf is what follows. */
static int
parse_head(const char *path, struct kds_req *r, const char **leaf,
    const char **why)
{
	const char	*p, *slash;

	if (strncmp(path, "/vcek/v1/", KDS_PREFIX_LEN) == 0)
		r->signer = AMD_VCEK;
	else if (strncmp(path, "/vlek/v1/", KDS_PREFIX_LEN) == 0)
		r->signer = AMD_VLEK;
	else {
		*why = "not a KDS path";
		return -1;
	}
	p = path + KDS_PREFIX_LEN;
	if ((slash = strchr(p, '/')) == NULL ||
	    amd_product_parse(p, (size_t)(slash - p), &r->product) == -1) {
		*why = WHY_PRODUCT;
		return -1;
	}
	*leaf = slash + 1;
	return 0;
}

/* The hardware ID: 64 bytes (Milan, Genoa), 8 for Turin; hex either case. */
static int
parse_hwid(const char *leaf, struct kds_req *r, const char **why)
{
	size_t	n = strlen(leaf);
	size_t	want = r->product == AMD_TURIN ? KDS_TURIN_HWID_HEX : KDS_HWID_HEX;

	if (n != want || util_unhex(leaf, n, r->id.hwid, n / 2) == -1) {
		*why = r->product == AMD_TURIN ?
		    "hwid: Turin takes 16 hex digits (8 bytes of CHIP_ID)" :
		    "hwid: expected 128 hex digits (the 64-byte CHIP_ID)";
		return -1;
	}
	r->id.hwid_len = n / 2;
	return 0;
}

/* One SPL parameter: a decimal 0..255 ("03" and "3" are the same value). */
static int
spl_param(const struct query *q, const char *name, int *out)
{
	const char	*v = query_get(q, name);
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
 * Which of "unknown parameter" and "given twice" a client is told first:
 * the first parameter, in the order sent, that is unknown or repeated
 * later decides. query_parse stopped at the second occurrence of q->bad,
 * so an unknown name up to its first occurrence comes first.
 */
static const char *
repeated_why(const struct query *q)
{
	struct query	head = *q;
	size_t		i;

	for (i = 0; i < q->n && q->p[i].name != q->bad; i++)
		;
	head.n = i < q->n ? i + 1 : q->n;
	return query_unknown(&head, kds_vek_params) != NULL ? WHY_UNKNOWN :
	    WHY_TWICE;
}

/* What a client is told when its query string does not parse, as before entry/ (libevent's parser). */
static const char *
query_why(enum query_err e, const struct query *q)
{
	switch (e) {
	case QUERY_ERR_REPEATED:
		return repeated_why(q);
	case QUERY_ERR_TOO_MANY:	/* over 16 names, 5 known: an unknown one comes first */
		return WHY_UNKNOWN;
	case QUERY_ERR_TOO_LONG:	/* over 4 KiB: SPLs padded with zeros beyond reason */
		return WHY_SPL;
	default:			/* libevent refused the same syntax */
		return WHY_REQUIRED;
	}
}

/* The parameters of a VCEK request into r->id.tcb. */
static int
parse_spls(const char *query, struct kds_req *r, const char **why)
{
	struct query	q;
	enum query_err	e;
	int		rv = -1;

	if (query == NULL) {
		*why = WHY_REQUIRED;
		return -1;
	}
	if ((e = query_parse(query, &q)) != QUERY_OK) {
		*why = query_why(e, &q);
		goto out;
	}
	if (query_unknown(&q, kds_vek_params) != NULL) {
		*why = WHY_UNKNOWN;
		goto out;
	}
	r->id.tcb.fmc = -1;
	if (spl_param(&q, "blSPL", &r->id.tcb.bl) == -1 ||
	    spl_param(&q, "teeSPL", &r->id.tcb.tee) == -1 ||
	    spl_param(&q, "snpSPL", &r->id.tcb.snp) == -1 ||
	    spl_param(&q, "ucodeSPL", &r->id.tcb.ucode) == -1) {
		*why = WHY_SPL;
		goto out;
	}
	if (r->product == AMD_TURIN) {
		if (spl_param(&q, "fmcSPL", &r->id.tcb.fmc) == -1) {
			*why = "fmcSPL: Turin requires it, 0..255";
			goto out;
		}
	} else if (query_get(&q, "fmcSPL") != NULL) {
		*why = "fmcSPL: only Turin has it";
		goto out;
	}
	rv = 0;
 out:
	query_free(&q);
	return rv;
}

int
kds_parse_request(const char *path, const char *query, struct kds_req *r,
    const char **why, int *status)
{
	const char	*leaf;

	memset(r, 0, sizeof(*r));
	*status = 404;
	if (parse_head(path, r, &leaf, why) == -1)
		return -1;
	*status = 400;
	if (strcmp(leaf, "cert_chain") == 0 || strcmp(leaf, "crl") == 0) {
		r->what = strcmp(leaf, "crl") == 0 ? KDS_CRL : KDS_CHAIN;
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
	r->what = KDS_VEK;
	if (parse_hwid(leaf, r, why) == -1 || parse_spls(query, r, why) == -1)
		return -1;
	return 0;
}

int
kds_parse_entry(const uint8_t *req, size_t reqlen, const uint8_t *key,
    size_t klen, struct kds_req *r, char *why, size_t whylen)
{
	uint8_t		 k[CACHE_KEY_MAX_BYTES];
	char		 path[KDS_PATH_MAX];
	const char	*perr;
	size_t		 n;

	if (entry_request_text(req, reqlen, path, sizeof(path)) == -1) {
		snprintf(why, whylen, "request: not an AMD KDS path");
		return -1;
	}
	if (kds_parse_canon(path, r, &perr) == -1) {
		snprintf(why, whylen, "request: %s: %.160s", perr, path);
		return -1;
	}
	if (kds_key(r, k, &n) == -1 || n != klen || memcmp(k, key, n) != 0) {
		snprintf(why, whylen, "key: the entry's key is not its "
		    "request's (swapped or edited entry)");
		return -1;
	}
	return 0;
}

int
kds_parse_canon(const char *path, struct kds_req *r, const char **why)
{
	char		 buf[KDS_PATH_MAX], canon[KDS_PATH_MAX];
	const char	*qm, *query = NULL, *perr;
	size_t		 n = strlen(path);
	int		 status;

	memset(r, 0, sizeof(*r));
	*why = "not a canonical AMD KDS path";
	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, path, n + 1);
	if ((qm = strchr(path, '?')) != NULL) {
		buf[qm - path] = '\0';
		query = qm + 1;
	}
	/* Whatever parses and rebuilds into the same bytes is canonical. */
	if (kds_parse_request(buf, query, r, &perr, &status) == -1) {
		if (strcmp(perr, WHY_PRODUCT) == 0)
			*why = WHY_PRODUCT;
		return -1;
	}
	if (kds_canon(r, canon, sizeof(canon)) == -1 || strcmp(canon, path) != 0)
		return -1;
	*why = NULL;
	return 0;
}

/* ---- the canonical path ---------------------------------------------------- */

int
kds_canon(const struct kds_req *r, char *buf, size_t len)
{
	char	hex[KDS_HWID_HEX + 1];
	int	w;

	if (r->what != KDS_VEK) {
		w = snprintf(buf, len, "/%s/v1/%s/%s", amd_signer_str[r->signer],
		    amd_product_str[r->product], r->what == KDS_CHAIN ?
		    "cert_chain" : "crl");
		return w < 0 || (size_t)w >= len ? -1 : 0;
	}
	util_hex(r->id.hwid, r->id.hwid_len <= AMD_HWID_MAX_BYTES ?
	    r->id.hwid_len : AMD_HWID_MAX_BYTES, hex);
	if (r->product == AMD_TURIN)
		w = snprintf(buf, len, "/vcek/v1/%s/%s?fmcSPL=%d&blSPL=%d&teeSPL=%d&"
		    "snpSPL=%d&ucodeSPL=%d", amd_product_str[r->product], hex,
		    r->id.tcb.fmc, r->id.tcb.bl, r->id.tcb.tee, r->id.tcb.snp,
		    r->id.tcb.ucode);
	else
		w = snprintf(buf, len, "/vcek/v1/%s/%s?blSPL=%d&teeSPL=%d&snpSPL=%d&"
		    "ucodeSPL=%d", amd_product_str[r->product], hex, r->id.tcb.bl,
		    r->id.tcb.tee, r->id.tcb.snp, r->id.tcb.ucode);
	return w < 0 || (size_t)w >= len ? -1 : 0;
}

int
kds_key(const struct kds_req *r, uint8_t key[CACHE_KEY_MAX_BYTES], size_t *klen)
{
	char	canon[KDS_PATH_MAX];

	if (kds_canon(r, canon, sizeof(canon)) == -1 ||
	    strlen(canon) > CACHE_KEY_MAX_BYTES)
		return -1;
	*klen = strlen(canon);
	memcpy(key, canon, *klen);
	return 0;
}

void
kds_chain_req(const struct kds_req *r, struct kds_req *chain)
{
	memset(chain, 0, sizeof(*chain));
	chain->what = KDS_CHAIN;
	chain->signer = r->signer;
	chain->product = r->product;
}

/* ---- admit ----------------------------------------------------------------- */

/* A VCEK against the caller's cert_chain of its product, else the compiled-in one. */
static int
admit_vek(const struct kds_req *r, const struct entry_answer *a,
    const struct kds_chain *chain, time_t now, struct kds_admit *out)
{
	const uint8_t	*pem = chain != NULL ? chain->pem : NULL;
	size_t		 len = chain != NULL ? chain->len : 0;
	const char	*builtin;

	if (pem == NULL) {
		if ((builtin = amd_builtin_chain(r->product, r->signer)) == NULL) {
			snprintf(out->reason, sizeof(out->reason),
			    "no %s cert_chain to check it against",
			    amd_product_str[r->product]);
			return -1;
		}
		pem = (const uint8_t *)builtin;
		len = strlen(builtin);
		out->builtin_chain = 1;
	}
	/* The HWID and every SPL asked for must be the certificate's. */
	return amd_verify_vek(r->product, r->signer, a->body, a->body_len, pem,
	    len, &r->id, now, &out->amd);
}

enum entry_verdict
kds_admit(const struct kds_req *r, const struct entry_answer *a,
    const struct entry_stored *stored, const struct kds_chain *chain,
    time_t now, struct kds_admit *out)
{
	int	rc;

	(void)stored;	/* no newer-than-stored rule for KDS: see kds.h */
	memset(out, 0, sizeof(*out));
	out->verdict = ENTRY_REFUSE;
	switch (r->what) {
	case KDS_CHAIN:
		rc = amd_verify_cert_chain(r->product, r->signer, a->body,
		    a->body_len, now, &out->amd);
		break;
	case KDS_CRL:
		rc = amd_verify_crl(r->product, a->body, a->body_len, now,
		    &out->amd);
		break;
	default:
		rc = admit_vek(r, a, chain, now, out);
		break;
	}
	if (rc == -1) {
		if (out->reason[0] == '\0')
			snprintf(out->reason, sizeof(out->reason), "%s: %s",
			    out->amd.verdict < AMD_VERDICT_MAX ?
			    amd_verdict_str[out->amd.verdict] : "parse",
			    out->amd.detail);
		return out->verdict;
	}
	out->meta.kind = CACHE_KIND_KDS;
	out->meta.this_update = out->amd.this_update;
	out->meta.produced_at = out->amd.this_update;
	if (r->what == KDS_CRL)
		out->meta.next_update = out->amd.next_update;
	else {
		/* A VCEK for a (chip, TCB) never changes; ARK/ASK last 25 years. */
		out->meta.next_update = out->amd.not_after;
		out->meta.flags |= CACHE_F_NO_REFRESH;
	}
	out->verdict = ENTRY_STORE;
	return out->verdict;
}

/* The KDS kind's request_key: the key of a canonical path (kds_parse_canon, kds_key). */
static int
kds_request_key(const uint8_t *req, size_t len,
    uint8_t key[CACHE_KEY_MAX_BYTES], size_t *klen)
{
	struct kds_req	 r;
	char		 path[KDS_PATH_MAX];
	const char	*why;

	if (len == 0 || len >= sizeof(path) || memchr(req, '\0', len) != NULL)
		return -1;
	memcpy(path, req, len);
	path[len] = '\0';
	if (kds_parse_canon(path, &r, &why) == -1)
		return -1;
	return kds_key(&r, key, klen);
}

/*
 * The KDS kind's admit: kds_admit, a VCEK against its product's
 * cert_chain as r->find finds it, else the compiled-in one. No
 * newer-than-stored rule. The typed request is q->typed's, or parsed
 * from the record's request and key.
 */
static enum entry_verdict
kds_kind_admit(const struct entry_rules *r, const struct entry_query *q,
    const struct entry_answer *a, const struct entry_stored *stored,
    time_t now, struct entry_judgement *out)
{
	struct kds_req		*kr = &out->kds.req;
	struct kds_admit	*ad = &out->kds.ad;
	struct kds_req		 cr;
	struct kds_chain	 chain = { NULL, 0 };
	uint8_t			 key[CACHE_KEY_MAX_BYTES], *pem = NULL;
	size_t			 klen;
	const char		*from = "the built-in";

	if (q->typed != NULL)
		*kr = *(const struct kds_req *)q->typed;
	else if (kds_parse_entry(q->request, q->request_len, q->key, q->klen,
	    kr, out->reason, sizeof(out->reason)) == -1)
		return out->verdict = ENTRY_REFUSE;
	if (kr->what == KDS_VEK && r->find != NULL) {
		kds_chain_req(kr, &cr);
		if (kds_key(&cr, key, &klen) == 0 &&
		    (pem = r->find(r->find_arg, CACHE_KIND_KDS, key, klen,
		    &chain.len, &from)) != NULL)
			chain.pem = pem;
	}
	out->verdict = kds_admit(kr, a, stored, kr->what == KDS_VEK ? &chain :
	    NULL, now, ad);
	free(pem);
	if (out->verdict == ENTRY_STORE)
		out->meta = ad->meta;
	else if (kr->what != KDS_VEK || !q->read_back)
		entry_judged(out, out->verdict, "%s", ad->reason);
	else
		entry_judged(out, out->verdict, "%s (against %s cert_chain)",
		    ad->reason, ad->builtin_chain ? "the built-in" : from);
	return out->verdict;
}

struct json_t *
kds_tcb_json(const struct amd_tcb *t)
{
	json_t	*o = json_pack("{s:i, s:i, s:i, s:i}", "bl", t->bl, "tee", t->tee,
	    "snp", t->snp, "ucode", t->ucode);

	if (o != NULL && t->fmc >= 0)
		json_object_set_new(o, "fmc", json_integer(t->fmc));
	return o;
}

/* What the path asks for and the answer says, once admitted. */
static void
kds_kind_describe(const struct entry_judgement *j, int ok, json_t *o)
{
	const struct kds_req	*kr = &j->kds.req;
	char			 hex[2 * AMD_HWID_MAX_BYTES + 1], t[32];

	if (!ok)
		return;
	json_object_set_new(o, "product",
	    json_string(amd_product_str[kr->product]));
	json_object_set_new(o, "signer",
	    json_string(amd_signer_str[kr->signer]));
	json_object_set_new(o, "object", json_string(kds_what_str[kr->what]));
	if (kr->what == KDS_VEK) {
		util_hex(kr->id.hwid, kr->id.hwid_len, hex);
		json_object_set_new(o, "hwid", json_string(hex));
		json_object_set_new(o, "tcb", kds_tcb_json(&kr->id.tcb));
	}
	if (kr->what == KDS_CRL)
		json_object_set_new(o, "crl_entries",
		    json_integer(j->kds.ad.amd.crl_entries));
	if (j->kds.ad.amd.not_after != 0) {
		entry_time_str(t, j->kds.ad.amd.not_after);
		json_object_set_new(o, "not_after", json_string(t));
	}
}

/* A cert_chain: the VCEKs of its product are checked against it. */
static int
kds_kind_read_by_others(const uint8_t *key, size_t klen)
{
	struct kds_req	 r;
	const char	*why;
	char		 path[CACHE_KEY_MAX_BYTES + 1];

	if (klen >= sizeof(path) || memchr(key, '\0', klen) != NULL)
		return 0;
	memcpy(path, key, klen);
	path[klen] = '\0';
	return kds_parse_canon(path, &r, &why) == 0 && r.what == KDS_CHAIN;
}

_Static_assert(sizeof(struct kds_req) <= KIND_TYPED_BYTES,
    "a KDS request fits a call's typed request");
_Static_assert(KDS_PATH_MAX <= KIND_CANON_BYTES,
    "a KDS path fits a call's canonical path");

/* The call that GETs canon, the canonical path, which is also the key. */
static void
kds_call(const char *canon, struct kind_call *out)
{
	size_t	n = strlen(canon);

	memcpy(out->key, canon, n);
	out->klen = n;
	out->method = "GET";
	out->path = canon;
	out->content_type = NULL;
	out->accept = NULL;
	out->body = NULL;
	out->body_len = 0;
	out->keep = (const uint8_t *)canon;
	out->keep_len = n;
	out->typed = 1;
}

/* The KDS kind's parse: kds_parse_request, asked as its kds_canon path. */
static int
kds_parse(const struct kind_ask *in, void *typed, char *canon,
    struct kind_call *out, int *status, char *why, size_t whylen)
{
	const char	*w;

	if (kds_parse_request(in->path, in->query, typed, &w, status) == -1) {
		snprintf(why, whylen, "%s", w);
		return -1;
	}
	if (kds_canon(typed, canon, KIND_CANON_BYTES) == -1) {
		*status = 400;	/* a parsed request always fits */
		snprintf(why, whylen, "request too long");
		return -1;
	}
	kds_call(canon, out);
	return 0;
}

/* The KDS kind's restore: a canonical path (kds_parse_canon), GET again. */
static int
kds_restore(const uint8_t *req, size_t len, void *typed, char *canon,
    struct kind_call *out)
{
	const char	*why;

	if (len == 0 || len >= KDS_PATH_MAX)
		return -1;
	memcpy(canon, req, len);
	canon[len] = '\0';
	if (kds_parse_canon(canon, typed, &why) == -1)
		return -1;
	kds_call(canon, out);
	return 0;
}

const struct kind kind_kds = {
	.parse = kds_parse,
	.restore = kds_restore,
	.admit = kds_kind_admit,
	.read_by_others = kds_kind_read_by_others,
	.describe = kds_kind_describe,
	.request_key = kds_request_key,
	.min_skew_s = AMD_SKEW_S,
	.keep_headers = kds_keep_headers,
	.base_suffixes = kds_base_suffixes,
	.entry_bytes = KDS_ENTRY_BYTES,
	.map_share_pct = KDS_MAP_SHARE_PCT,
	.conf = {
		.upstream = KDS_UPSTREAM,
		.pacing_ms = KDS_PACING_MS,
	},
};
