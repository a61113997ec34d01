/* SPDX-License-Identifier: Apache-2.0 */
/* Verifying one bundle entry by the entry rules (entry/) before it may be stored; signer chains for show. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "attest/ocsp_req.h"
#include "cache/record.h"
#include "entry/kinds.h"
#include "cache/store.h"
#include "entry/entry.h"
#include "entry/judge.h"
#include "entry/kind.h"
#include "tools/bundle.h"
#include "tools/tee.h"
#include "tools/staplectl.h"

/*
 * The entry the cache holds under e's key (meta, body and kept headers),
 * for the newer-than-stored rules; NULL when none. Borrowed until the
 * next cache call.
 */
static const struct entry_stored *
stored_of(struct ctl *ctl, const struct bundle_entry *e, struct entry_stored *st)
{
	struct cache_body	b;

	memset(st, 0, sizeof(*st));
	if (ctl->cache == NULL || cache_get(ctl->cache, e->kind, e->key,
	    e->klen, &st->meta, &b) != 1)
		return NULL;
	st->body = b.response;
	st->body_len = b.response_len;
	st->headers = b.headers;
	st->headers_len = b.headers_len;
	return st;
}

/* Where a VCEK's cert_chain is looked for: the bundle's lines, then the cache. */
struct ctl_find {
	struct ctl		*ctl;
	struct ctl_trust	*t;	/* NULL: the cache only */
};

/* entry_find_fn: the bundle's record of (kind, key), else the cache's; a copy. */
static uint8_t *
ctl_find(void *arg, enum cache_kind kind, const uint8_t *key, size_t klen,
    size_t *len, const char **from)
{
	struct ctl_find		*f = arg;
	struct ctl_trust	*t = f->t;
	struct cache_body	 b;
	const uint8_t		*src = NULL;
	uint8_t			*copy;
	size_t			 i;

	for (i = 0; t != NULL && i < t->npeers && src == NULL; i++)
		if (t->peers[i].kind == kind && t->peers[i].klen == klen &&
		    memcmp(t->peers[i].key, key, klen) == 0 &&
		    t->peers[i].response_len > 0) {
			src = t->peers[i].response;
			*len = t->peers[i].response_len;
			*from = "the bundle's";
		}
	if (src == NULL && f->ctl->cache != NULL && cache_get(f->ctl->cache,
	    kind, key, klen, NULL, &b) == 1 && b.response_len > 0) {
		src = b.response;
		*len = b.response_len;
		*from = "the cache's";
	}
	if (src == NULL || (copy = malloc(*len)) == NULL)
		return NULL;
	memcpy(copy, src, *len);
	return copy;
}

/* ctl_judge against the stored entry given (NULL: none), which the caller looked up. */
static int
judge_against(struct ctl *ctl, struct ctl_trust *t,
    const struct bundle_entry *e, time_t now,
    const struct entry_stored *stored, struct entry_judgement *j)
{
	struct ctl_find		 f = { ctl, t };
	struct entry_rules	 r;
	struct entry_record	 x = { e->key, e->klen, e->request,
				    e->request_len, e->response,
				    e->response_len, e->headers,
				    e->headers_len, e->this_update };

	entry_rules_init(&r, &ctl->conf);
	ctl_trust_rules(&r, t);
	r.find = ctl_find;
	r.find_arg = &f;
	return entry_judge(e->kind, &r, &x, stored, now, j);
}

int
ctl_judge(struct ctl *ctl, struct ctl_trust *t, const struct bundle_entry *e,
    time_t now, int with_stored, struct entry_judgement *j)
{
	struct entry_stored	 st;

	return judge_against(ctl, t, e, now, with_stored ? stored_of(ctl, e,
	    &st) : NULL, j);
}

int
ctl_check_alone(struct ctl *ctl, struct ctl_trust *t,
    const struct bundle_entry *e, time_t now,
    const struct cache_meta *stored, struct ctl_check *c)
{
	struct entry_judgement	 j;
	struct entry_stored	 st;

	memset(c, 0, sizeof(*c));
	if (kind_name(e->kind) == NULL || !kind_table[e->kind]->judged_alone)
		return ctl_reject(c, "not an entry judged alone");
	memset(&st, 0, sizeof(st));
	if (stored != NULL)
		st.meta = *stored;
	if (judge_against(ctl, t, e, now, stored != NULL ? &st : NULL, &j)) {
		c->ok = 1;
		c->meta = j.meta;
		c->keep_stored = j.keep_stored;
	} else
		ctl_reject(c, "%s", j.reason);
	entry_judgement_free(&j);
	return c->ok;
}

/*
 * A RIM's chain CAs that the pool's rule admits join t's pool at once,
 * and the cache's when it is open for writing: so the OCSP answers for
 * the RIM's signing chain, checked after it, verify.
 */
int
ctl_check_entry(struct ctl *ctl, struct ctl_trust *t,
    const struct bundle_entry *e, time_t now, struct ctl_check *c)
{
	struct entry_judgement	 j;

	memset(c, 0, sizeof(*c));
	if (kind_name(e->kind) == NULL)
		return ctl_reject(c, "kind \"%s\" is not known to this staplectl",
		    e->kind_name);
	if (ctl_judge(ctl, t, e, now, 1, &j)) {
		ctl_learn_taught(ctl, t, e->kind, &j);
		c->ok = 1;
		c->meta = j.meta;
		c->keep_stored = j.keep_stored;
	} else
		ctl_reject(c, "%s", j.reason);
	entry_judgement_free(&j);
	return c->ok;
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
