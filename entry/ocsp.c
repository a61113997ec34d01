/* SPDX-License-Identifier: Apache-2.0 */
/* The OCSP kind's entry rules: the answer bound to the CertIDs asked, definitive statuses, the nonce, the newer stored entry. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attest/evidence.h"
#include "attest/ocsp_req.h"
#include "attest/ocsp_verify.h"
#include "attest/util.h"
#include "entry/conf.h"
#include "entry/entry.h"
#include "entry/file.h"
#include "entry/judge.h"
#include "entry/kind.h"
#include "entry/ocsp.h"

/*
 * What an answer takes of the map, measured: a 1 GiB map holds about
 * 350,000 NVIDIA answers (a million take some 3 GiB). OCSP answers are
 * the many (one per GPU and NVSwitch certificate chain element): 70 %
 * of the map by default.
 */
#define OCSP_ENTRY_BYTES	3072
#define OCSP_MAP_SHARE_PCT	70
/* NVIDIA's responder, asked when the section names no upstreams. */
#define OCSP_UPSTREAM		"https://ocsp.ndis.nvidia.com"

/*
 * RFC 6960 4.2.1 statuses that are about the request, not the responder,
 * and that every mirror would repeat: relayed to the client, not failed
 * over. NVIDIA's responder answers unauthorized for every per-device FMC
 * leaf. internalError and tryLater describe the responder and stay
 * failures; successful goes to verification.
 */
static const char *const definitive_status_str[7] = {
	[1] = "malformedRequest",
	[5] = "sigRequired",
	[6] = "unauthorized",
};

static enum entry_verdict	 judged(struct entry_ocsp_admission *,
				    enum entry_verdict, const char *, ...)
				    __attribute__((format(printf, 3, 4)));

static enum entry_verdict
judged(struct entry_ocsp_admission *out, enum entry_verdict v,
    const char *fmt, ...)
{
	va_list	ap;

	out->verdict = v;
	va_start(ap, fmt);
	vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
	va_end(ap);
	return v;
}

const char *
entry_ocsp_definitive(const uint8_t *der, size_t len)
{
	int	st;

	/* Without responseBytes (4.2.1) the only DER form is these 5 bytes. */
	if (der == NULL || len != sizeof(OCSP_RESP_UNAUTHORIZED) ||
	    (st = ocsp_resp_status(der, len)) < 0 ||
	    (size_t)st >= sizeof(definitive_status_str) /
	    sizeof(definitive_status_str[0]))
		return NULL;
	return definitive_status_str[st];
}

int
entry_ocsp_request(const uint8_t *der, size_t len, struct ocsp_req *req,
    uint8_t key[OCSP_KEY_BYTES], const char **why)
{
	if (ocsp_req_parse(der, len, req, why) == -1)
		return -1;
	ocsp_req_key(req, key);
	return 0;
}

/* The request parses and keys to the question's key: 0, or -1 with the reason. */
static int
bind_request(const struct entry_ocsp_question *q, struct ocsp_req *req,
    struct entry_ocsp_admission *out)
{
	uint8_t		 key[OCSP_KEY_BYTES];
	const char	*why;

	if (q->request == NULL || q->request_len == 0) {
		judged(out, ENTRY_REFUSE, "no request: cannot check the CertID");
		return -1;
	}
	if (entry_ocsp_request(q->request, q->request_len, req, key,
	    &why) == -1) {
		judged(out, ENTRY_REFUSE, "request: %s", why);
		return -1;
	}
	if (q->klen != OCSP_KEY_BYTES || memcmp(key, q->key, sizeof(key)) != 0) {
		judged(out, ENTRY_REFUSE, "key: the entry's key is not its "
		    "request's CertID key (swapped or edited entry)");
		return -1;
	}
	return 0;
}

static void
fill_meta(const struct ocsp_result *r, const struct entry_stored *stored,
    struct entry_ocsp_admission *out)
{
	out->meta.kind = CACHE_KIND_OCSP;
	out->meta.status = (uint8_t)r->cert_status;
	out->meta.this_update = r->this_update;
	out->meta.next_update = r->next_update;
	out->meta.produced_at = r->produced_at;
	/* cache_put's rule: never replace an entry with a newer thisUpdate. */
	out->keep_stored = stored != NULL &&
	    stored->meta.this_update > r->this_update;
}

enum entry_verdict
entry_ocsp_admit(struct ocsp_trust *t, const struct entry_ocsp_question *q,
    const struct entry_answer *a, const struct entry_stored *stored,
    time_t now, struct entry_ocsp_admission *out)
{
	struct ocsp_verify_opts	 o;
	struct ocsp_req		 req;
	struct ocsp_result	*r = &out->result;
	const char		*st;

	memset(out, 0, sizeof(*out));
	if (bind_request(q, &req, out) == -1)
		return out->verdict;
	/* Unsigned, so nothing to verify; never stored. */
	if ((st = entry_ocsp_definitive(a->body, a->body_len)) != NULL)
		return judged(out, ENTRY_DEFINITIVE, "%s", st);
	memset(&o, 0, sizeof(o));
	o.now = now;
	o.skew_s = q->skew_s;
	/* Only a nonce stapled chose must come back, and not from a cache. */
	if (q->check_nonce && req.nonce != NULL) {
		o.nonce = req.nonce;
		o.nonce_len = req.nonce_len;
	}
	out->verified = 1;
	if (ocsp_verify(t, a->body, a->body_len, &req, &o, r) == 0) {
		fill_meta(r, stored, out);
		return judged(out, ENTRY_STORE, "%s", "");
	}
	if (r->verdict == OCSP_UNVERIFIABLE)
		return judged(out, ENTRY_PASS, "%s", r->detail);
	return judged(out, ENTRY_REFUSE, "%s: %s", r->verdict < OCSP_VERDICT_MAX ?
	    ocsp_verdict_str[r->verdict] : "parse", r->detail);
}

/* The OCSP kind's request_key: the key of the CertIDs an OCSPRequest asks about. */
static int
ocsp_request_key(const uint8_t *req, size_t len,
    uint8_t key[CACHE_KEY_MAX_BYTES], size_t *klen)
{
	struct ocsp_req	 r;
	const char	*why;

	if (entry_ocsp_request(req, len, &r, key, &why) == -1)
		return -1;
	*klen = OCSP_KEY_BYTES;
	return 0;
}

/*
 * The OCSP kind's admit: entry_ocsp_admit with the section's skew and
 * the OCSP trust store. A record read back has no nonce checked and its
 * request capped as a client's is; its unverifiable and definitive
 * answers are refusals worded for the operator (the daemon relays them,
 * never stores them).
 */
static enum entry_verdict
ocsp_kind_admit(const struct entry_rules *r, const struct entry_query *q,
    const struct entry_answer *a, const struct entry_stored *stored,
    time_t now, struct entry_judgement *out)
{
	struct entry_ocsp_question	 oq = { q->key, q->klen, q->request,
					    q->request_len, q->check_nonce,
					    entry_rules_section(r, CACHE_KIND_OCSP)->skew_s };
	struct entry_ocsp_admission	*ad = &out->ocsp;

	if (q->read_back && q->request_len > OCSP_MAX_REQUEST_BYTES)
		return entry_judged(out, ENTRY_REFUSE, "request: too large");
	if (r->trust[CACHE_KIND_OCSP] == NULL)
		return entry_judged(out, ENTRY_REFUSE, "ocsp: no trust store");
	out->verdict = entry_ocsp_admit(r->trust[CACHE_KIND_OCSP], &oq, a,
	    stored, now, ad);
	if (out->verdict == ENTRY_STORE) {
		out->meta = ad->meta;
		out->keep_stored = ad->keep_stored;
		return out->verdict;
	}
	if (q->read_back && out->verdict == ENTRY_PASS)
		return entry_judged(out, ENTRY_PASS, "unverifiable: %s (add the "
		    "issuing CA with ocsp.intermediates or a cert line)",
		    ad->reason);
	if (q->read_back && out->verdict == ENTRY_DEFINITIVE)
		return entry_judged(out, ENTRY_DEFINITIVE, "status: "
		    "responseStatus %s: an unsigned answer about the request, "
		    "never stored", ad->reason);
	return entry_judged(out, out->verdict, "%s", ad->reason);
}

/* ---- trust: the NVIDIA roots and pool, or the section's files ---------- */

#define OCSP_TRUST_FILE_MAX_BYTES (16 << 20)	/* a PEM of anchors or intermediates */

/*
 * One configured PEM file into the anchors or the pool: 0, or a
 * KIND_TRUST_E* with err naming it and saying what is wrong. An anchors
 * file must hold a certificate; an intermediates file may hold none.
 */
static int
ocsp_trust_file(struct ocsp_trust *t, const char *path, int anchors,
    char *err, size_t errlen)
{
	uint8_t		*pem;
	size_t		 len;
	const char	*why;
	int		 n;

	if ((pem = file_read(path, OCSP_TRUST_FILE_MAX_BYTES, &len, err,
	    errlen)) == NULL)
		return KIND_TRUST_ENOFILE;
	if ((n = ocsp_trust_add_pem(t, anchors, (const char *)pem, len,
	    &why)) == -1)
		snprintf(err, errlen, "%s: %s", path, why);
	free(pem);
	return n == -1 || (anchors && n == 0) ? KIND_TRUST_EBAD : 0;
}

static int
ocsp_kind_trust_new(const struct config_service *c, void **trust, char *err,
    size_t errlen)
{
	struct ocsp_trust	*t;
	size_t			 i;
	int			 rc = KIND_TRUST_EFAIL;

	if ((t = ocsp_trust_new()) == NULL) {
		snprintf(err, errlen, "ocsp: cannot create the trust store");
		return rc;
	}
	/* --ocsp-anchor replaces the pinned roots; intermediates add to the pool. */
	if (c->nanchors == 0 && ocsp_trust_add_builtin_anchors(t) <= 0) {
		snprintf(err, errlen, "ocsp: the built-in anchors do not load");
		goto fail;
	}
	for (i = 0; i < c->nanchors; i++)
		if ((rc = ocsp_trust_file(t, c->anchors[i], 1, err,
		    errlen)) != 0)
			goto fail;
	if (ocsp_trust_add_builtin_pool(t) < 0) {
		rc = KIND_TRUST_EFAIL;
		snprintf(err, errlen, "ocsp: the built-in intermediates do not load");
		goto fail;
	}
	for (i = 0; i < c->nintermediates; i++)
		if ((rc = ocsp_trust_file(t, c->intermediates[i], 0, err,
		    errlen)) != 0)
			goto fail;
	*trust = t;
	return 0;
fail:
	ocsp_trust_free(t);
	return rc;
}

static void
ocsp_kind_trust_free(void *t)
{
	ocsp_trust_free(t);
}

/* ---- names: what staplectl shows of an entry ----------------------------- */

/* The stored status (struct cache_meta's), as RFC 6960 names it. */
static const char *const ocsp_status_names[] = { "good", "revoked",
    "unknown", NULL };

/* "serial=HEX" of the request's first CertID; "-" when it does not parse or fit. */
static void
ocsp_kind_subject(const uint8_t *key, size_t klen, const uint8_t *req,
    size_t reqlen, char *buf, size_t len)
{
	struct ocsp_req	 r;
	const char	*why;

	(void)key;
	(void)klen;
	snprintf(buf, len, "-");
	if (req == NULL || reqlen == 0 ||
	    ocsp_req_parse(req, reqlen, &r, &why) == -1)
		return;
	if (r.certids[0].serial_len * 2 + 8 > len)
		return;
	memcpy(buf, "serial=", 7);
	util_hex(r.certids[0].serial, r.certids[0].serial_len, buf + 7);
}

/* The CertIDs' hash algorithm (evidence_req_hash_name); "-" when the request does not parse. */
static void
ocsp_kind_label(const uint8_t *req, size_t reqlen, char *buf, size_t len)
{
	struct ocsp_req	 r;
	const char	*why;

	if (ocsp_req_parse(req, reqlen, &r, &why) == 0)
		evidence_req_hash_name(&r, buf, len);
}

static int
ocsp_kind_pool_add(void *t, const uint8_t *der, size_t len)
{
	return ocsp_trust_add_pool_der(t, der, len) == -1 ? -1 : 0;
}

static int
ocsp_kind_pool_admits(void *t, const uint8_t *const der[], const size_t len[],
    size_t n, int ok[])
{
	return ocsp_trust_chaining_cas(t, der, len, n, ok);
}

_Static_assert(sizeof(struct ocsp_req) <= KIND_TYPED_BYTES,
    "an OCSPRequest fits a call's typed request");

/* The call that asks an upstream for the answer to `der`, a parsed OCSPRequest keyed in out->key. */
static void
ocsp_call(const uint8_t *der, size_t len, struct kind_call *out)
{
	out->klen = OCSP_KEY_BYTES;
	out->method = "POST";
	out->path = "";
	out->content_type = kind_ocsp.post_type;
	out->accept = kind_ocsp.accept;
	out->body = der;
	out->body_len = len;
	out->keep = der;
	out->keep_len = len;
	out->typed = 0;
}

/*
 * The OCSP kind's parse: the request is the ask's body (a POST's, or a
 * GET's decoded from its URL), sent upstream as it came, nonce included.
 * A POST must say it is an OCSPRequest (RFC 6960 A.1: 415) and fit
 * OCSP_MAX_REQUEST_BYTES (413); anything that is no request is 400, the
 * wire's malformedRequest, with why empty for an empty body.
 */
static int
ocsp_parse(const struct kind_ask *in, void *typed, char *canon,
    struct kind_call *out, int *status, char *why, size_t whylen)
{
	const char	*ct = in->content_type, *w;

	if (in->method == KIND_POST) {
		if (ct == NULL || strncasecmp(ct, "application/ocsp-request",
		    24) != 0 || (ct[24] != '\0' && ct[24] != ';' &&
		    ct[24] != ' ')) {
			*status = 415;
			snprintf(why, whylen, "not an OCSP request");
			return -1;
		}
		if (in->body_len > OCSP_MAX_REQUEST_BYTES) {
			*status = 413;
			snprintf(why, whylen, "request too large");
			return -1;
		}
		if (in->body_len == 0) {
			*status = 400;
			why[0] = '\0';
			return -1;
		}
	}
	if (entry_ocsp_request(in->body, in->body_len, typed, out->key,
	    &w) == -1) {
		*status = 400;
		snprintf(why, whylen, "%s", w);
		return -1;
	}
	(void)canon;
	ocsp_call(in->body, in->body_len, out);
	return 0;
}

/* The OCSP kind's restore: the stored OCSPRequest, asked again as it was. */
static int
ocsp_restore(const uint8_t *req, size_t len, void *typed, char *canon,
    struct kind_call *out)
{
	const char	*why;

	if (len == 0 || entry_ocsp_request(req, len, typed, out->key,
	    &why) == -1)
		return -1;
	(void)canon;
	ocsp_call(req, len, out);
	return 0;
}

const struct kind kind_ocsp = {
	.parse = ocsp_parse,
	.restore = ocsp_restore,
	.admit = ocsp_kind_admit,
	.trust_new = ocsp_kind_trust_new,
	.trust_free = ocsp_kind_trust_free,
	.pool_add = ocsp_kind_pool_add,
	.pool_admits = ocsp_kind_pool_admits,
	.judged_alone = 1,
	.request_key = ocsp_request_key,
	.min_skew_s = 0,
	/* RFC 6960 A.1: a POSTed OCSPRequest */
	.post_type = "application/ocsp-request",
	.accept = "application/ocsp-response",
	.entry_bytes = OCSP_ENTRY_BYTES,
	.map_share_pct = OCSP_MAP_SHARE_PCT,
	.conf = {
		.upstream = OCSP_UPSTREAM,
		.keys = KIND_CONF_ANCHORS | KIND_CONF_INTERMEDIATES |
		    KIND_CONF_PATHS,
	},
	.subject = ocsp_kind_subject,
	.label_field = "certid_hash",
	.label = ocsp_kind_label,
	.status_names = ocsp_status_names,
};
