/* SPDX-License-Identifier: Apache-2.0 */
/* Verifying one bundle entry by the entry rules (entry/) before it may be stored; signer chains for show. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "attest/amd.h"
#include "attest/intel.h"
#include "attest/ocsp_req.h"
#include "attest/rim.h"
#include "cache/record.h"
#include "cache/store.h"
#include "entry/entry.h"
#include "entry/kds.h"
#include "entry/ocsp.h"
#include "entry/rim.h"
#include "tools/bundle.h"
#include "tools/tee.h"
#include "tools/staplectl.h"

/* The entry the cache holds under e's key, for the newer-than-stored rule; NULL when none. */
static const struct entry_stored *
stored_of(struct ctl *ctl, const struct bundle_entry *e, struct entry_stored *st)
{
	memset(st, 0, sizeof(*st));
	if (ctl->cache == NULL || cache_get_meta(ctl->cache, e->kind, e->key,
	    e->klen, &st->meta) != 1)
		return NULL;
	return st;
}

/*
 * An OCSP entry by entry/ocsp.c's rule, as the daemon admits an answer,
 * without the nonce (a bundle is a cache by nature). Unverifiable and
 * definitive answers are rejections here: the daemon never stores them.
 */
static int
check_ocsp(struct ctl *ctl, struct ctl_trust *t, const struct bundle_entry *e,
    time_t now, struct ctl_check *c)
{
	struct entry_ocsp_question	 q = { e->key, e->klen, e->request,
					    e->request_len, 0, ctl->conf.ocsp.skew_s };
	struct entry_answer		 a = { e->response, e->response_len,
					    NULL, NULL };
	struct entry_stored		 st;
	struct entry_ocsp_admission	 ad;

	/* A bundle's request is input to this tool: capped as a client's is. */
	if (e->request_len > OCSP_MAX_REQUEST_BYTES)
		return ctl_reject(c, "request: too large");
	switch (entry_ocsp_admit(t->ocsp, &q, &a, stored_of(ctl, e, &st), now,
	    &ad)) {
	case ENTRY_STORE:
		break;
	case ENTRY_PASS:
		return ctl_reject(c, "unverifiable: %s (add the issuing CA with "
		    "ocsp.intermediates or a cert line)", ad.reason);
	case ENTRY_DEFINITIVE:
		return ctl_reject(c, "status: responseStatus %s: an unsigned answer "
		    "about the request, never stored", ad.reason);
	default:
		return ctl_reject(c, "%s", ad.reason);
	}
	c->ok = 1;
	c->meta = ad.meta;
	c->keep_stored = ad.keep_stored;
	return 1;
}

/*
 * A RIM entry by entry/rim.c's rule, valid for the retention from its
 * fetch on. The chain's CAs that the pool's rule admits join t's pool at
 * once, and the cache's when it is open for writing: so the OCSP answers
 * for the RIM's signing chain, checked after it, verify.
 */
static int
check_rim(struct ctl *ctl, struct ctl_trust *t, const struct bundle_entry *e,
    time_t now, struct ctl_check *c)
{
	struct entry_rim_question	 q = { e->key, e->klen,
					    config_retention_s(&ctl->conf.rim), e->this_update };
	struct entry_answer		 a = { e->response, e->response_len,
					    NULL, NULL };
	struct entry_stored		 st;
	struct entry_rim_admission	 ad;
	struct rim_trust		*rt;
	const struct rim_certs		*ch = &ad.result.chain;

	if ((rt = ctl_rim_trust(ctl)) == NULL)
		return ctl_reject(c, "rim: the trust store does not load");
	if (entry_rim_admit(rt, t->ocsp, &q, &a, stored_of(ctl, e, &st), now,
	    &ad) != ENTRY_STORE) {
		ctl_reject(c, "%s", ad.reason);
		goto out;
	}
	ctl_learn_admitted(ctl, t, (const uint8_t *const *)ch->der, ch->len,
	    ad.learn, ch->n, 1);
	c->ok = 1;
	c->meta = ad.meta;
	c->keep_stored = ad.keep_stored;
 out:
	entry_rim_admission_free(&ad);
	rim_trust_free(rt);
	return c->ok;
}

/* Each kind's check, by enum cache_kind: the entry's rules, as the daemon admits by them. */
static ctl_check_fn *const ctl_checks[CACHE_KIND_MAX] = {
	[CACHE_KIND_OCSP] = check_ocsp,
	[CACHE_KIND_RIM] = check_rim,
	[CACHE_KIND_PCCS] = ctl_check_pccs,
	[CACHE_KIND_KDS] = ctl_check_kds,
};

int
ctl_check_entry(struct ctl *ctl, struct ctl_trust *t,
    const struct bundle_entry *e, time_t now, struct ctl_check *c)
{
	memset(c, 0, sizeof(*c));
	if (kind_name(e->kind) == NULL || ctl_checks[e->kind] == NULL)
		return ctl_reject(c, "kind \"%s\" is not known to this staplectl",
		    e->kind_name);
	return ctl_checks[e->kind](ctl, t, e, now, c);
}

/* ---- chains ------------------------------------------------------------- */

STACK_OF(X509) *
ctl_ocsp_signer_chain(struct ctl_trust *t, OCSP_BASICRESP *bs)
{
	const STACK_OF(X509)	*rc = OCSP_resp_get0_certs(bs);
	STACK_OF(X509)		*untrusted = NULL, *chain = NULL;
	X509_STORE		*store = NULL;
	X509_STORE_CTX		*ctx = NULL;
	X509			*signer = NULL;
	int			 i;

	if ((untrusted = sk_X509_new_null()) == NULL ||
	    (store = X509_STORE_new()) == NULL ||
	    (ctx = X509_STORE_CTX_new()) == NULL)
		goto out;
	for (i = 0; rc != NULL && i < sk_X509_num(rc); i++)
		sk_X509_push(untrusted, sk_X509_value(rc, i));
	for (i = 0; i < sk_X509_num(t->pool); i++)
		sk_X509_push(untrusted, sk_X509_value(t->pool, i));
	for (i = 0; i < sk_X509_num(t->anchors); i++)
		X509_STORE_add_cert(store, sk_X509_value(t->anchors, i));
	if (OCSP_resp_get0_signer(bs, &signer, untrusted) != 1 ||
	    signer == NULL)
		goto out;
	if (!X509_STORE_CTX_init(ctx, store, signer, untrusted))
		goto out;
	X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_NO_CHECK_TIME);
	(void)X509_verify_cert(ctx);	/* a partial chain is returned too */
	chain = X509_STORE_CTX_get1_chain(ctx);
	if (chain == NULL || sk_X509_num(chain) == 0) {
		sk_X509_pop_free(chain, X509_free);
		if ((chain = sk_X509_new_null()) != NULL &&
		    X509_up_ref(signer) && !sk_X509_push(chain, signer))
			X509_free(signer);
	}
 out:
	ERR_clear_error();
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	sk_X509_free(untrusted);
	return chain;
}

STACK_OF(X509) *
ctl_ocsp_der_chain(struct ctl_trust *t, const uint8_t *der, size_t len)
{
	const unsigned char	*p = der;
	OCSP_RESPONSE		*resp;
	OCSP_BASICRESP		*bs = NULL;
	STACK_OF(X509)		*chain = NULL;

	if ((resp = d2i_OCSP_RESPONSE(NULL, &p, (long)len)) != NULL &&
	    (bs = OCSP_response_get1_basic(resp)) != NULL)
		chain = ctl_ocsp_signer_chain(t, bs);
	ERR_clear_error();
	OCSP_BASICRESP_free(bs);
	OCSP_RESPONSE_free(resp);
	return chain;
}

/* ---- PCCS: every rule is entry/pccs.c's ------------------------------------ */

int
ctl_pccs_verify(const struct bundle_entry *e, time_t now, struct ctl_check *c,
    struct pccs_req *r, struct pccs_admitted *ad)
{
	char	why[sizeof(c->reason)];

	memset(ad, 0, sizeof(*ad));
	memset(r, 0, sizeof(*r));
	r->kind = INTEL_KIND_MAX;
	if (pccs_parse_entry(e->request, e->request_len, e->key, e->klen, r,
	    why, sizeof(why)) == -1)
		return ctl_reject(c, "%s", why);
	/* No stored entry here: a newer stored one is kept, not a failure (below). */
	if (pccs_admit_kept(r, e->response, e->response_len, e->headers,
	    e->headers_len, NULL, now, ad) != ENTRY_STORE)
		return ctl_reject(c, "%s", ad->why);
	c->ok = 1;
	c->meta.kind = ad->meta.kind;
	c->meta.this_update = ad->meta.this_update;
	c->meta.next_update = ad->meta.next_update;
	c->meta.produced_at = ad->meta.produced_at;
	c->meta.status = ad->meta.status;
	c->meta.flags |= ad->meta.flags;
	return 1;
}

/* 1 when the cache holds this key with a newer answer (entry/pccs.c's rule). */
static int
pccs_stored_is_newer(struct ctl *ctl, const struct bundle_entry *e,
    const struct pccs_req *r, const struct intel_result *cand)
{
	struct entry_stored	 st;
	struct cache_body	 b;

	memset(&st, 0, sizeof(st));
	if (ctl->cache == NULL || cache_get(ctl->cache, CACHE_KIND_PCCS, e->key,
	    e->klen, &st.meta, &b) != 1)
		return 0;
	/* Borrowed until the next cache call; the rule makes none. */
	st.body = b.response;
	st.body_len = b.response_len;
	st.headers = b.headers;
	st.headers_len = b.headers_len;
	return pccs_older_than_stored(r, cand, &st);
}

int
ctl_check_pccs(struct ctl *ctl, struct ctl_trust *t,
    const struct bundle_entry *e, time_t now, struct ctl_check *c)
{
	struct pccs_req		r;
	struct pccs_admitted	ad;

	(void)t;	/* PCCS entries need no peers' chains */

	if (!ctl_pccs_verify(e, now, c, &r, &ad))
		return 0;
	if (pccs_stored_is_newer(ctl, e, &r, &ad.r))
		c->keep_stored = 1;
	return 1;
}

/* ---- KDS ---------------------------------------------------------------- */

/*
 * The product's cert_chain for a VCEK, as found here: the bundle's, else
 * the cache's (a copy in *pem, freed by the caller), else none (chain->pem
 * NULL: kds_admit takes the compiled-in one). *from names it for messages.
 */
static void
kds_chain_for(struct ctl *ctl, struct ctl_trust *t, const struct kds_req *r,
    struct kds_chain *chain, uint8_t **pem, const char **from)
{
	struct kds_req		 cr;
	struct cache_body	 b;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 i, n;

	memset(chain, 0, sizeof(*chain));
	*pem = NULL;
	*from = "the built-in";
	kds_chain_req(r, &cr);
	if (kds_key(&cr, key, &n) == -1)
		return;
	for (i = 0; t != NULL && i < t->npeers; i++)
		if (t->peers[i].kind == CACHE_KIND_KDS && t->peers[i].klen == n &&
		    memcmp(t->peers[i].key, key, n) == 0 &&
		    t->peers[i].response_len > 0) {
			chain->pem = t->peers[i].response;
			chain->len = t->peers[i].response_len;
			*from = "the bundle's";
			return;
		}
	/* A copy: the cache's bytes live only until its next read. */
	if (ctl->cache != NULL && cache_get(ctl->cache, CACHE_KIND_KDS, key, n,
	    NULL, &b) == 1 && b.response_len > 0 &&
	    (*pem = malloc(b.response_len)) != NULL) {
		memcpy(*pem, b.response, b.response_len);
		chain->pem = *pem;
		chain->len = b.response_len;
		*from = "the cache's";
	}
}

int
ctl_kds_verify(struct ctl *ctl, struct ctl_trust *t, const struct bundle_entry *e,
    time_t now, struct ctl_check *c, struct kds_req *r, struct kds_admit *ad)
{
	struct entry_answer	 ans;
	struct kds_chain	 chain;
	char			 why[sizeof(c->reason)];
	uint8_t			*pem = NULL;
	const char		*from = "";

	memset(ad, 0, sizeof(*ad));
	if (kds_parse_entry(e->request, e->request_len, e->key, e->klen, r,
	    why, sizeof(why)) == -1)
		return ctl_reject(c, "%s", why);
	memset(&ans, 0, sizeof(ans));
	ans.body = e->response;
	ans.body_len = e->response_len;
	if (r->what == KDS_VEK)
		kds_chain_for(ctl, t, r, &chain, &pem, &from);
	/* A bundle's entry replaces the store's, whatever it holds: no stored rule. */
	kds_admit(r, &ans, NULL, r->what == KDS_VEK ? &chain : NULL, now, ad);
	free(pem);
	if (ad->verdict != ENTRY_STORE)
		return ctl_reject(c, "%s%s%s%s", ad->reason, r->what == KDS_VEK ?
		    " (against " : "", r->what == KDS_VEK ? (ad->builtin_chain ?
		    "the built-in" : from) : "", r->what == KDS_VEK ?
		    " cert_chain)" : "");
	c->ok = 1;
	c->meta.kind = CACHE_KIND_KDS;
	c->meta.this_update = ad->meta.this_update;
	c->meta.produced_at = ad->meta.produced_at;
	c->meta.next_update = ad->meta.next_update;
	c->meta.flags |= ad->meta.flags;
	return 1;
}

int
ctl_check_kds(struct ctl *ctl, struct ctl_trust *t, const struct bundle_entry *e,
    time_t now, struct ctl_check *c)
{
	struct kds_req		r;
	struct kds_admit	ad;

	return ctl_kds_verify(ctl, t, e, now, c, &r, &ad);
}
