/* Verifying one bundle entry by the entry rules (entry/) before it may be stored; signer chains for show. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "attest/ocsp.h"
#include "attest/rim.h"
#include "cache/record.h"
#include "cache/store.h"
#include "entry/entry.h"
#include "entry/ocsp.h"
#include "entry/rim.h"
#include "tools/bundle.h"
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

int
ctl_check_entry(struct ctl *ctl, struct ctl_trust *t,
    const struct bundle_entry *e, time_t now, struct ctl_check *c)
{
	memset(c, 0, sizeof(*c));
	switch (e->kind) {
	case CACHE_KIND_OCSP:
		return check_ocsp(ctl, t, e, now, c);
	case CACHE_KIND_RIM:
		return check_rim(ctl, t, e, now, c);
	case CACHE_KIND_PCCS:
		return ctl_check_pccs(ctl, e, now, c);
	case CACHE_KIND_KDS:
		return ctl_check_kds(ctl, t, e, now, c);
	default:
		return ctl_reject(c, "kind \"%s\" is not known to this staplectl",
		    e->kind_name);
	}
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
