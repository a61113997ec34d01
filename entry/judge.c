/* SPDX-License-Identifier: Apache-2.0 */
/* A record read back judged again by its kind's rule, for staplectl's verify and import and for the salvage alike. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/ocsp_req.h"
#include "entry/conf.h"
#include "entry/judge.h"
#include "entry/kind.h"
#include "entry/ocsp.h"

static int	refuse(struct entry_judgement *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

/* out->reason from fmt; returns 0. */
static int
refuse(struct entry_judgement *out, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
	va_end(ap);
	out->ok = 0;
	return 0;
}

/*
 * OCSP: entry/ocsp.c's rule without the nonce. Unverifiable and
 * definitive answers are refusals here: the daemon relays them, never
 * stores them.
 */
int
entry_judge_ocsp(const struct entry_rules *r, const struct entry_record *x,
    const struct entry_stored *stored, time_t now, struct entry_judgement *out)
{
	struct entry_ocsp_question	 q = { x->key, x->klen, x->request,
					    x->request_len, 0, r->ocsp_skew_s };
	struct entry_answer		 a = { x->response, x->response_len,
					    NULL, NULL };
	struct entry_ocsp_admission	 ad;

	/* A record's request is input: capped as a client's is. */
	if (x->request_len > OCSP_MAX_REQUEST_BYTES)
		return refuse(out, "request: too large");
	switch (entry_ocsp_admit(r->ocsp, &q, &a, stored, now, &ad)) {
	case ENTRY_STORE:
		break;
	case ENTRY_PASS:
		return refuse(out, "unverifiable: %s (add the issuing CA with "
		    "ocsp.intermediates or a cert line)", ad.reason);
	case ENTRY_DEFINITIVE:
		return refuse(out, "status: responseStatus %s: an unsigned "
		    "answer about the request, never stored", ad.reason);
	default:
		return refuse(out, "%s", ad.reason);
	}
	out->meta = ad.meta;
	out->keep_stored = ad.keep_stored;
	return out->ok = 1;
}

/*
 * RIM: entry/rim.c's rule, valid for the retention from its fetch. The
 * chain's CAs the pool's rule admits are marked in out->rim.learn; the
 * caller learns them, as the RIM route does.
 */
int
entry_judge_rim(const struct entry_rules *r, const struct entry_record *x,
    const struct entry_stored *stored, time_t now, struct entry_judgement *out)
{
	struct entry_rim_question	 q = { x->key, x->klen,
					    r->rim_retention_s, x->fetched_at };
	struct entry_answer		 a = { x->response, x->response_len,
					    NULL, NULL };

	if (r->rim == NULL)
		return refuse(out, "rim: no trust store");
	if (entry_rim_admit(r->rim, r->ocsp, &q, &a, stored, now, &out->rim) !=
	    ENTRY_STORE)
		return refuse(out, "%s", out->rim.reason);
	out->meta = out->rim.meta;
	out->keep_stored = out->rim.keep_stored;
	return out->ok = 1;
}

/*
 * PCCS: entry/pccs.c's rule for a body and its kept headers. A stored
 * entry with a newer answer keeps its place; that is no failure.
 */
int
entry_judge_pccs(const struct entry_rules *r, const struct entry_record *x,
    const struct entry_stored *stored, time_t now, struct entry_judgement *out)
{
	struct pccs_req		*pr = &out->pccs.req;
	struct pccs_admitted	*ad = &out->pccs.ad;

	(void)r;
	if (pccs_parse_entry(x->request, x->request_len, x->key, x->klen, pr,
	    out->reason, sizeof(out->reason)) == -1)
		return 0;
	if (pccs_admit_kept(pr, x->response, x->response_len, x->headers,
	    x->headers_len, NULL, now, ad) != ENTRY_STORE)
		return refuse(out, "%s", ad->why);
	out->meta = ad->meta;
	out->keep_stored = pccs_older_than_stored(pr, &ad->r, stored);
	return out->ok = 1;
}

/*
 * KDS: entry/kds.c's rule; a VCEK against its product's cert_chain as
 * r->find finds it, else the compiled-in one. No newer-than-stored rule.
 */
int
entry_judge_kds(const struct entry_rules *r, const struct entry_record *x,
    const struct entry_stored *stored, time_t now, struct entry_judgement *out)
{
	struct kds_req		*kr = &out->kds.req;
	struct kds_admit	*ad = &out->kds.ad;
	struct kds_req		 cr;
	struct kds_chain	 chain = { NULL, 0 };
	struct entry_answer	 a = { x->response, x->response_len, NULL, NULL };
	uint8_t			 key[CACHE_KEY_MAX_BYTES], *pem = NULL;
	size_t			 klen;
	const char		*from = "the built-in";

	if (kds_parse_entry(x->request, x->request_len, x->key, x->klen, kr,
	    out->reason, sizeof(out->reason)) == -1)
		return 0;
	if (kr->what == KDS_VEK && r->find != NULL) {
		kds_chain_req(kr, &cr);
		if (kds_key(&cr, key, &klen) == 0 &&
		    (pem = r->find(r->find_arg, CACHE_KIND_KDS, key, klen,
		    &chain.len, &from)) != NULL)
			chain.pem = pem;
	}
	kds_admit(kr, &a, stored, kr->what == KDS_VEK ? &chain : NULL, now, ad);
	free(pem);
	if (ad->verdict != ENTRY_STORE) {
		if (kr->what != KDS_VEK)
			return refuse(out, "%s", ad->reason);
		return refuse(out, "%s (against %s cert_chain)", ad->reason,
		    ad->builtin_chain ? "the built-in" : from);
	}
	out->meta = ad->meta;
	return out->ok = 1;
}

void
entry_rules_init(struct entry_rules *r, const struct config *cfg,
    struct ocsp_trust *ocsp, struct rim_trust *rim)
{
	memset(r, 0, sizeof(*r));
	r->ocsp = ocsp;
	r->rim = rim;
	r->ocsp_skew_s = cfg->svc[CACHE_KIND_OCSP].skew_s;
	r->rim_retention_s = config_retention_s(&cfg->svc[CACHE_KIND_RIM]);
}

int
entry_judge(enum cache_kind kind, const struct entry_rules *r,
    const struct entry_record *x, const struct entry_stored *stored,
    time_t now, struct entry_judgement *out)
{
	memset(out, 0, sizeof(*out));
	out->pccs.req.kind = INTEL_KIND_MAX;	/* nothing parsed */
	if (kind_name(kind) == NULL || kind_table[kind].judge == NULL)
		return refuse(out, "kind %u is not known", kind);
	if (x->klen == 0 || x->klen > CACHE_KEY_MAX_BYTES)
		return refuse(out, "key length %zu out of range", x->klen);
	if (!kind_table[kind].judge(r, x, stored, now, out))
		return 0;
	out->meta.kind = kind;
	return 1;
}

void
entry_judgement_free(struct entry_judgement *out)
{
	if (out == NULL)
		return;
	entry_rim_admission_free(&out->rim);
}
