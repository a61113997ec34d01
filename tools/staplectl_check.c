/* Verifying one bundle entry by the daemon's rules before it may be stored. */
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
#include "tools/bundle.h"
#include "tools/staplectl.h"

static int	reject(struct ctl_check *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

static int
reject(struct ctl_check *c, const char *fmt, ...)
{
	va_list	ap;

	c->ok = 0;
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
	return 0;
}

/*
 * As proxy/ocsp_route.c before cache_put: the request must key to the
 * entry's key (so a response cannot be filed under another CertID), and
 * the response must verify against that request with OCSP_OK. The nonce
 * is not checked: a bundle is a cache by nature. Unverifiable is a
 * rejection here, as it is never stored by the daemon either.
 */
static int
check_ocsp(struct ctl *ctl, struct ctl_trust *t, const struct bundle_entry *e,
    time_t now, struct ctl_check *c)
{
	struct ocsp_verify_opts	o;
	struct ocsp_result	r;
	struct ocsp_req		req;
	uint8_t			key[OCSP_KEY_BYTES];
	const char		*why;

	if (e->request_len == 0)
		return reject(c, "no request: cannot check the CertID");
	if (e->request_len > OCSP_MAX_REQUEST_BYTES ||
	    ocsp_req_parse(e->request, e->request_len, &req, &why) == -1)
		return reject(c, "request: %s", e->request_len >
		    OCSP_MAX_REQUEST_BYTES ? "too large" : why);
	ocsp_req_key(&req, key);
	if (e->klen != OCSP_KEY_BYTES || memcmp(key, e->key, sizeof(key)) != 0)
		return reject(c, "key: the entry's key is not its request's "
		    "CertID key (swapped or edited entry)");
	memset(&o, 0, sizeof(o));
	o.now = now;
	o.skew_s = ctl->conf.ocsp.skew_s;
	if (ocsp_verify(t->ocsp, e->response, e->response_len, &req, &o,
	    &r) != 0) {
		if (r.verdict == OCSP_UNVERIFIABLE)
			return reject(c, "unverifiable: %s (add the issuing CA "
			    "with ocsp.intermediates or a cert line)", r.detail);
		return reject(c, "%s: %s", r.verdict < OCSP_VERDICT_MAX ?
		    ocsp_verdict_str[r.verdict] : "parse", r.detail);
	}
	c->ok = 1;
	c->meta.kind = CACHE_KIND_OCSP;
	c->meta.status = (uint8_t)r.cert_status;
	c->meta.this_update = r.this_update;
	c->meta.next_update = r.next_update;
	c->meta.produced_at = r.produced_at;
	return 1;
}

/*
 * As proxy/rim_route.c: the envelope's id is the key, its sha256 matches
 * the document, the KeyInfo chain reaches the CoRIM root. RIMs are
 * version-addressed: valid for the retention from the import on. The
 * chain's CAs join t's pool at once, and the cache's when it is open for
 * writing, by the pool's one rule (ctl_learn_cas): so the OCSP answers
 * for the RIM's signing chain, checked after it, verify.
 */
static int
check_rim(struct ctl *ctl, struct ctl_trust *t, const struct bundle_entry *e,
    time_t now, struct ctl_check *c)
{
	struct rim_trust	*rt;
	struct rim_result	 r;
	char			 id[RIM_ID_MAX_CHARS + 1];

	if (e->klen > RIM_ID_MAX_CHARS)
		return reject(c, "key: longer than a RIM ID");
	memcpy(id, e->key, e->klen);
	id[e->klen] = '\0';
	if (!rim_id_valid(id))
		return reject(c, "key: not a valid RIM ID");
	if ((rt = ctl_rim_trust(ctl)) == NULL)
		return reject(c, "rim: the trust store does not load");
	memset(&r, 0, sizeof(r));
	if (rim_verify(rt, id, e->response, e->response_len, now, &r) == -1) {
		reject(c, "%s: %s", rim_verdict_str[r.verdict], r.detail);
		rim_result_free(&r);
		rim_trust_free(rt);
		return 0;
	}
	if (r.chain.n > 1)
		ctl_learn_cas(ctl, t, (const uint8_t *const *)r.chain.der + 1,
		    r.chain.len + 1, r.chain.n - 1, 1);
	rim_result_free(&r);
	rim_trust_free(rt);
	c->ok = 1;
	c->meta.kind = CACHE_KIND_RIM;
	c->meta.this_update = e->this_update > 0 && e->this_update <= now ?
	    e->this_update : now;
	c->meta.next_update = now + config_retention_s(&ctl->conf.rim);
	c->meta.produced_at = c->meta.this_update;
	return 1;
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
		return reject(c, "kind \"%s\" is not known to this staplectl",
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
