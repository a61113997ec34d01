/* SPDX-License-Identifier: Apache-2.0 */
/* OCSP response verification against pinned anchors, classified verdicts. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "attest/der.h"
#include "attest/nvidia_certs.h"
#include "attest/ocsp_memo.h"
#include "attest/ocsp_verify.h"
#include "attest/util.h"

/*
 * Every entry point clears OpenSSL's error queue before returning, so
 * one bad response leaves nothing behind for the next call.
 */

const char *const ocsp_verdict_str[OCSP_VERDICT_MAX] = {
	[OCSP_OK] = "ok",
	[OCSP_UNVERIFIABLE] = "unverifiable",
	[OCSP_ERR_PARSE] = "parse",
	[OCSP_ERR_STATUS] = "status",
	[OCSP_ERR_NOT_BASIC] = "not_basic",
	[OCSP_ERR_SIGNATURE] = "signature",
	[OCSP_ERR_SIGNER] = "signer",
	[OCSP_ERR_CHAIN] = "chain",
	[OCSP_ERR_CERTID] = "certid",
	[OCSP_ERR_FUTURE] = "future",
	[OCSP_ERR_EXPIRED] = "expired",
	[OCSP_ERR_NONCE] = "nonce",
};

const char *const ocsp_cert_status_str[3] = {
	[OCSP_CERT_GOOD] = "good",
	[OCSP_CERT_REVOKED] = "revoked",
	[OCSP_CERT_UNKNOWN] = "unknown",
};

/*
 * Responders judged sound (docs/verification.md, "OCSP"). A response's own
 * signature is checked every time; the rest of judging its responder (the
 * chain to an anchor, the authority for the CertIDs' issuer, every embedded
 * certificate on that chain) depends only on the responder certificate, the
 * certificates the response embeds, the issuer ids of its SingleResponses,
 * the trust and the time. A responder judged sound is remembered by a
 * digest of the first three, with the span in which every certificate on
 * its chain is within its dates; any change to the trust forgets them all.
 * At NVIDIA's P-384 chains that saves four of the five signature checks of
 * each answer.
 */
#define TRUST_JUDGED_MAX	16

struct judged {
	uint8_t		id[SHA256_DIGEST_LENGTH];
	time_t		from;		/* the latest notBefore on the chain */
	time_t		until;		/* the earliest notAfter: not valid at it */
	int		used;
};

struct ocsp_trust {
	X509_STORE	*store;		/* the anchors: the only trust */
	STACK_OF(X509)	*anchors;	/* the same certs, to count and name */
	STACK_OF(X509)	*pool;		/* untrusted, only to build chains */
	int		 pending;	/* TRUST_PENDING_*: compiled-in certificates not parsed yet */
	struct judged	 judged[TRUST_JUDGED_MAX];
	size_t		 judged_next;	/* the slot the next one takes */
	size_t		 reuses;	/* responders found judged */
	struct ocsp_memo *memo;		/* embedded certificates, decoded once */
};

#define TRUST_PENDING_ANCHORS	0x1
#define TRUST_PENDING_POOL	0x2

struct ocsp_trust *
ocsp_trust_new(void)
{
	struct ocsp_trust	*t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	if ((t->store = X509_STORE_new()) == NULL ||
	    (t->anchors = sk_X509_new_null()) == NULL ||
	    (t->pool = sk_X509_new_null()) == NULL ||
	    (t->memo = ocsp_memo_new()) == NULL) {
		ocsp_trust_free(t);
		return NULL;
	}
	return t;
}

void
ocsp_trust_free(struct ocsp_trust *t)
{
	if (t == NULL)
		return;
	sk_X509_pop_free(t->pool, X509_free);
	sk_X509_pop_free(t->anchors, X509_free);
	X509_STORE_free(t->store);
	ocsp_memo_free(t->memo);
	free(t);
}

static int
sk_has(STACK_OF(X509) *sk, X509 *x)
{
	int	 i;

	for (i = 0; i < sk_X509_num(sk); i++)
		if (X509_cmp(sk_X509_value(sk, i), x) == 0)
			return 1;
	return 0;
}

/* Add one certificate (a new reference is taken); duplicates are ignored. */
static int
trust_add(struct ocsp_trust *t, X509 *x, int anchor)
{
	STACK_OF(X509)	*sk = anchor ? t->anchors : t->pool;

	if (sk_has(sk, x))
		return 0;
	/* Another path may now be built: judge every responder afresh. */
	memset(t->judged, 0, sizeof(t->judged));
	if (anchor && X509_STORE_add_cert(t->store, x) != 1)
		return -1;
	if (!X509_up_ref(x))
		return -1;
	if (sk_X509_push(sk, x) == 0) {
		X509_free(x);
		return -1;
	}
	return 0;
}

/*
 * Read every certificate from `bio` first, then add them all, so a PEM
 * with one bad block adds nothing. Returns the number read, or -1.
 */
static int
trust_add_bio(struct ocsp_trust *t, BIO *bio, int anchor, const char **why)
{
	STACK_OF(X509)	*got;
	X509		*x;
	const char	*bad;
	int		 i, rv = -1;

	*why = "out of memory";
	if ((got = sk_X509_new_null()) == NULL)
		return -1;
	for (;;) {
		/* raw bytes checked by der_cert_check, then parsed */
		if ((x = der_pem_x509(bio, &bad)) == NULL) {
			if (bad == NULL)
				break;		/* no further block */
			*why = bad;
			goto out;
		}
		*why = "out of memory";
		if (sk_X509_push(got, x) == 0) {
			X509_free(x);
			goto out;
		}
	}
	if (sk_X509_num(got) == 0) {
		*why = "no certificates";
		goto out;
	}
	for (i = 0; i < sk_X509_num(got); i++)
		if (trust_add(t, sk_X509_value(got, i), anchor) == -1)
			goto out;
	rv = sk_X509_num(got);
 out:
	sk_X509_pop_free(got, X509_free);
	ERR_clear_error();
	return rv;
}

/* A PEM buffer into the anchors or the pool; *why (if asked) says why on -1. */
static int
trust_add_pem(struct ocsp_trust *t, const char *pem, size_t len, int anchor,
    const char **why)
{
	BIO		*bio;
	const char	*bad = "bad arguments";
	int		 rv = -1;

	if (t == NULL || pem == NULL || len > INT_MAX)
		goto out;
	bad = "out of memory";
	if ((bio = BIO_new_mem_buf(pem, (int)len)) == NULL)
		goto out;
	rv = trust_add_bio(t, bio, anchor, &bad);
	BIO_free(bio);
 out:
	if (why != NULL)
		*why = rv == -1 ? bad : NULL;
	return rv;
}

int
ocsp_trust_add_anchors_pem(struct ocsp_trust *t, const char *pem, size_t len)
{
	return trust_add_pem(t, pem, len, 1, NULL);
}

int
ocsp_trust_add_pool_pem(struct ocsp_trust *t, const char *pem, size_t len)
{
	return trust_add_pem(t, pem, len, 0, NULL);
}

int
ocsp_trust_add_pem(struct ocsp_trust *t, int anchors, const char *pem,
    size_t len, const char **why)
{
	return trust_add_pem(t, pem, len, anchors, why);
}

static int
trust_add_builtin(struct ocsp_trust *t, const struct vendor_root *certs,
    size_t n, int anchor)
{
	size_t	 i;
	int	 total = 0;

	for (i = 0; i < n; i++) {
		if (trust_add_pem(t, certs[i].pem, strlen(certs[i].pem),
		    anchor, NULL) != 1)
			return -1;
		total++;
	}
	return total;
}

/*
 * The compiled-in roots and intermediates are parsed when a chain is
 * first built or they are counted, not when added: parsing them was
 * two thirds of stapled's start-up CPU (OpenSSL 3.0 decodes each public
 * key through a new decoder context), and a hit never needs them. They
 * are the generator's checked output, so only memory can fail them;
 * trust_builtin says so then.
 */
static int
builtin_pending(struct ocsp_trust *t, int flag, size_t count)
{
	if (t == NULL)
		return -1;
	t->pending |= flag;
	return (int)count;
}

int
ocsp_trust_add_builtin_anchors(struct ocsp_trust *t)
{
	return builtin_pending(t, TRUST_PENDING_ANCHORS, nvidia_anchors_count);
}

int
ocsp_trust_add_builtin_pool(struct ocsp_trust *t)
{
	return builtin_pending(t, TRUST_PENDING_POOL, nvidia_pool_count);
}

/* Parse the pending compiled-in certificates. 0, or -1 (out of memory). */
static int
trust_builtin(struct ocsp_trust *t)
{
	if ((t->pending & TRUST_PENDING_ANCHORS) &&
	    trust_add_builtin(t, nvidia_anchors, nvidia_anchors_count, 1) == -1)
		return -1;
	t->pending &= ~TRUST_PENDING_ANCHORS;
	if ((t->pending & TRUST_PENDING_POOL) &&
	    trust_add_builtin(t, nvidia_pool, nvidia_pool_count, 0) == -1)
		return -1;
	t->pending = 0;
	return 0;
}

int
ocsp_trust_add_pool_der(struct ocsp_trust *t, const uint8_t *der, size_t len)
{
	X509		*x;
	const char	*why;
	int		 rv = -1;

	if (t == NULL || der == NULL || len == 0 || len > LONG_MAX)
		return -1;
	if ((x = der_x509(der, len, &why)) == NULL)
		goto out;
	rv = trust_add(t, x, 0);
 out:
	X509_free(x);
	ERR_clear_error();
	return rv;
}

size_t
ocsp_trust_anchor_count(struct ocsp_trust *t)
{
	if (t == NULL || trust_builtin(t) == -1)
		return 0;
	return (size_t)sk_X509_num(t->anchors);
}

size_t
ocsp_trust_pool_count(struct ocsp_trust *t)
{
	if (t == NULL || trust_builtin(t) == -1)
		return 0;
	return (size_t)sk_X509_num(t->pool);
}

STACK_OF(X509) *
ocsp_trust_anchors(struct ocsp_trust *t)
{
	if (t == NULL || trust_builtin(t) == -1)
		return NULL;
	return t->anchors;
}

STACK_OF(X509) *
ocsp_trust_pool(struct ocsp_trust *t)
{
	if (t == NULL || trust_builtin(t) == -1)
		return NULL;
	return t->pool;
}

/* Does x chain to an anchor with `untrusted` at hand, dates not checked? */
static int
ca_chains(struct ocsp_trust *t, X509_STORE_CTX *ctx, X509 *x,
    STACK_OF(X509) *untrusted)
{
	X509_VERIFY_PARAM	*vp;
	int			 ok = 0;

	if (X509_check_ca(x) <= 0 || X509_check_issued(x, x) == X509_V_OK)
		return 0;
	if (!X509_STORE_CTX_init(ctx, t->store, x, untrusted))
		return 0;
	/*
	 * ocsp_verify pins the store's time to its `now`, which would win
	 * over NO_CHECK_TIME: this context drops it.
	 */
	vp = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_clear_flags(vp, X509_V_FLAG_USE_CHECK_TIME);
	X509_VERIFY_PARAM_set_flags(vp, X509_V_FLAG_NO_CHECK_TIME);
	ok = X509_verify_cert(ctx) == 1;
	X509_STORE_CTX_cleanup(ctx);
	return ok;
}

int
ocsp_trust_chaining_cas(struct ocsp_trust *t, const uint8_t *const der[],
    const size_t len[], size_t n, int ok[])
{
	STACK_OF(X509)	*untrusted = NULL;
	X509_STORE_CTX	*ctx = NULL;
	X509		**xs = NULL;
	const char	*why;
	size_t		 i;
	int		 count = 0, rv = -1;

	if (t == NULL || (n > 0 && (der == NULL || len == NULL || ok == NULL)) ||
	    trust_builtin(t) == -1)
		return -1;
	for (i = 0; i < n; i++)
		ok[i] = 0;
	if (n == 0)
		return 0;
	if ((xs = calloc(n, sizeof(*xs))) == NULL ||
	    (untrusted = sk_X509_new_null()) == NULL ||
	    (ctx = X509_STORE_CTX_new()) == NULL)
		goto out;
	/* Every certificate given is chain material for every other one. */
	for (i = 0; i < (size_t)sk_X509_num(t->pool); i++)
		if (!sk_X509_push(untrusted, sk_X509_value(t->pool, (int)i)))
			goto out;
	for (i = 0; i < n; i++) {
		/* as ocsp_trust_add_pool_der will take it: strict DER, one object */
		if (der[i] == NULL || len[i] == 0 || len[i] > LONG_MAX ||
		    (xs[i] = der_x509(der[i], len[i], &why)) == NULL)
			continue;
		if (!sk_X509_push(untrusted, xs[i]))
			goto out;
	}
	for (i = 0; i < n; i++)
		if (xs[i] != NULL && ca_chains(t, ctx, xs[i], untrusted))
			ok[i] = 1;
	for (i = 0; i < n; i++)
		count += ok[i];
	rv = count;
 out:
	if (rv == -1)
		for (i = 0; i < n; i++)
			ok[i] = 0;
	for (i = 0; xs != NULL && i < n; i++)
		X509_free(xs[i]);
	free(xs);
	sk_X509_free(untrusted);	/* borrowed: the pool's and xs[] */
	X509_STORE_CTX_free(ctx);
	ERR_clear_error();
	return rv;
}

/* ---- verification ------------------------------------------------------ */

static size_t
der_hdr_len(size_t len)
{
	if (len < 0x80)
		return 2;
	if (len < 0x100)
		return 3;
	if (len < 0x10000)
		return 4;
	return 5;
}

static uint8_t *
der_put(uint8_t *p, uint8_t tag, const uint8_t *content, size_t len)
{
	size_t	 n, i;

	*p++ = tag;
	if (len < 0x80)
		*p++ = (uint8_t)len;
	else {
		n = der_hdr_len(len) - 2;
		*p++ = (uint8_t)(0x80 | n);
		for (i = n; i > 0; i--)
			*p++ = (uint8_t)(len >> (8 * (i - 1)));
	}
	if (content != NULL) {
		memcpy(p, content, len);
		p += len;
	}
	return p;
}

/*
 * An OCSP_CERTID for one parsed CertID, re-encoded with NULL hash
 * parameters: OCSP_id_cmp compares the hash OID only, so NULL and absent
 * parameters match alike.
 */
static OCSP_CERTID *
certid_new(const struct ocsp_certid *id)
{
	OCSP_CERTID	*cid = NULL;
	uint8_t		*buf, *p;
	const uint8_t	*q;
	size_t		 alen, clen, tlen;
	static const uint8_t	 null[2] = { 0x05, 0x00 };

	if (id->alg_oid_len > OCSP_MAX_REQUEST_BYTES ||
	    id->name_hash_len > OCSP_MAX_REQUEST_BYTES ||
	    id->key_hash_len > OCSP_MAX_REQUEST_BYTES ||
	    id->serial_len > OCSP_MAX_REQUEST_BYTES)
		return NULL;
	alen = der_hdr_len(id->alg_oid_len) + id->alg_oid_len + sizeof(null);
	clen = der_hdr_len(alen) + alen +
	    der_hdr_len(id->name_hash_len) + id->name_hash_len +
	    der_hdr_len(id->key_hash_len) + id->key_hash_len +
	    der_hdr_len(id->serial_len) + id->serial_len;
	tlen = der_hdr_len(clen) + clen;
	if ((buf = malloc(tlen)) == NULL)
		return NULL;
	p = der_put(buf, 0x30, NULL, clen);
	p = der_put(p, 0x30, NULL, alen);
	p = der_put(p, 0x06, id->alg_oid, id->alg_oid_len);
	memcpy(p, null, sizeof(null));
	p += sizeof(null);
	p = der_put(p, 0x04, id->name_hash, id->name_hash_len);
	p = der_put(p, 0x04, id->key_hash, id->key_hash_len);
	p = der_put(p, 0x02, id->serial, id->serial_len);
	q = buf;
	if ((size_t)(p - buf) == tlen)
		cid = d2i_OCSP_CERTID(NULL, &q, (long)tlen);
	free(buf);
	return cid;
}

/* The digest a CertID names, or NULL for one we do not know. */
static const EVP_MD *
certid_md(const struct ocsp_certid *id, int *nid)
{
	ASN1_OBJECT	*obj;
	uint8_t		 buf[2 + 127];
	const uint8_t	*p = buf;
	const EVP_MD	*md = NULL;

	*nid = NID_undef;
	if (id->alg_oid_len > 127)
		return NULL;
	buf[0] = 0x06;
	buf[1] = (uint8_t)id->alg_oid_len;
	memcpy(buf + 2, id->alg_oid, id->alg_oid_len);
	if ((obj = d2i_ASN1_OBJECT(NULL, &p, 2 + (long)id->alg_oid_len)) ==
	    NULL)
		return NULL;
	*nid = OBJ_obj2nid(obj);
	ASN1_OBJECT_free(obj);
	if (*nid != NID_undef)
		md = EVP_get_digestbynid(*nid);
	return md;
}

/* RFC 6960 4.2.2.3: a ResponderID names the signer by name or key hash. */
static X509 *
find_in(const STACK_OF(X509) *sk, const ASN1_OCTET_STRING *keyid,
    const X509_NAME *name)
{
	X509		*x;
	uint8_t		 md[EVP_MAX_MD_SIZE];
	unsigned int	 n;
	int		 i;

	if (sk == NULL)
		return NULL;
	if (name != NULL)
		return X509_find_by_subject((STACK_OF(X509) *)sk,
		    (X509_NAME *)name);
	if (keyid == NULL || keyid->length != 20)
		return NULL;
	for (i = 0; i < sk_X509_num(sk); i++) {
		x = sk_X509_value(sk, i);
		if (X509_pubkey_digest(x, EVP_sha1(), md, &n) == 1 &&
		    n == 20 && memcmp(md, keyid->data, 20) == 0)
			return x;
	}
	return NULL;
}

/* The signer, searched in the order OCSP_basic_verify uses: pool, response. */
static X509 *
find_signer(OCSP_BASICRESP *bs, STACK_OF(X509) *pool)
{
	const ASN1_OCTET_STRING	*keyid = NULL;
	const X509_NAME		*name = NULL;
	X509			*x;

	if (!OCSP_resp_get0_id(bs, &keyid, &name))
		return NULL;
	if ((x = find_in(pool, keyid, name)) != NULL)
		return x;
	return find_in(OCSP_resp_get0_certs(bs), keyid, name);
}

static int
has_ocsp_signing(X509 *x)
{
	return (X509_get_extension_flags(x) & EXFLAG_XKUSAGE) != 0 &&
	    (X509_get_extended_key_usage(x) & XKU_OCSP_SIGN) != 0;
}

/* Is `name` the subject of any certificate in `sk`? */
static int
names_subject_in(const X509_NAME *name, const STACK_OF(X509) *sk)
{
	int	 i;

	for (i = 0; i < sk_X509_num(sk); i++)
		if (X509_NAME_cmp(name,
		    X509_get_subject_name(sk_X509_value(sk, i))) == 0)
			return 1;
	return 0;
}

/*
 * The chain cannot be completed, but does the responder at least claim to
 * be a delegated responder of the CertID's issuer? EKU id-kp-OCSPSigning,
 * hash(its issuer name) == issuerNameHash, and for SHA-1 CertIDs its
 * authorityKeyIdentifier == issuerKeyHash (RFC 5280 4.2.1.2 method 1,
 * which NVIDIA's and OpenSSL's CAs use). For SHA-256/384 CertIDs only the
 * name hash can be compared: the AKID is a SHA-1 and the issuer's key is
 * not at hand. Returns NULL when it does, else why not.
 */
static const char *
claims_issuer(X509 *signer, const struct ocsp_req *req)
{
	const struct ocsp_certid	*id;
	const ASN1_OCTET_STRING		*akid;
	const EVP_MD			*md;
	uint8_t				 h[EVP_MAX_MD_SIZE];
	unsigned int			 n;
	size_t				 i;
	int				 nid;

	if (!has_ocsp_signing(signer))
		return "responder lacks EKU OCSPSigning";
	for (i = 0; i < req->ncertids; i++) {
		id = &req->certids[i];
		if ((md = certid_md(id, &nid)) == NULL)
			return "unknown CertID hash algorithm";
		if (X509_NAME_digest(X509_get_issuer_name(signer), md, h,
		    &n) != 1 || n != id->name_hash_len ||
		    memcmp(h, id->name_hash, n) != 0)
			return "responder's issuer is not the CertID's issuer";
		if (nid != NID_sha1)
			continue;
		akid = X509_get0_authority_key_id(signer);
		if (akid == NULL || (size_t)akid->length != id->key_hash_len ||
		    memcmp(akid->data, id->key_hash, id->key_hash_len) != 0)
			return "responder's issuer key is not the CertID's "
			    "issuer key";
	}
	return NULL;
}

static void
set_detail(struct ocsp_result *out, const char *what)
{
	snprintf(out->detail, sizeof(out->detail), "%s", what);
}

/* The last OpenSSL error as text, for details. */
static const char *
ossl_reason(char *buf, size_t len)
{
	const char	*data = NULL;
	unsigned long	 e;
	int		 flags = 0;

	if ((e = ERR_peek_last_error_data(&data, &flags)) == 0)
		return "no OpenSSL error";
	ERR_error_string_n(e, buf, len);
	if (data != NULL && (flags & ERR_TXT_STRING) != 0 && *data != '\0') {
		strncat(buf, ": ", len - strlen(buf) - 1);
		strncat(buf, data, len - strlen(buf) - 1);
	}
	return buf;
}

/* Severity order for the worst status: revoked > unknown > good. */
static int
status_rank(int st)
{
	switch (st) {
	case V_OCSP_CERTSTATUS_REVOKED:
		return 2;
	case V_OCSP_CERTSTATUS_UNKNOWN:
		return 1;
	default:
		return 0;
	}
}

/*
 * A verify context for signer over t's anchors, the response's certificates
 * (rcerts, may be NULL) and t's pool as the untrusted ones, for the OCSP
 * helper purpose. *untrusted is the caller's to free (sk_X509_pop_free with
 * X509_free), also when NULL is returned: out of memory, said in out.
 */
static X509_STORE_CTX *
signer_ctx(struct ocsp_trust *t, const STACK_OF(X509) *rcerts, X509 *signer,
    STACK_OF(X509) **untrusted, struct ocsp_result *out)
{
	X509_STORE_CTX	*ctx;

	if ((ctx = X509_STORE_CTX_new()) == NULL ||
	    (*untrusted = sk_X509_new_null()) == NULL ||
	    (rcerts != NULL && !X509_add_certs(*untrusted,
	    (STACK_OF(X509) *)rcerts, X509_ADD_FLAG_UP_REF)) ||
	    !X509_add_certs(*untrusted, t->pool, X509_ADD_FLAG_UP_REF) ||
	    !X509_STORE_CTX_init(ctx, t->store, signer, *untrusted)) {
		set_detail(out, "out of memory");
		X509_STORE_CTX_free(ctx);
		return NULL;
	}
	X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_OCSP_HELPER);
	return ctx;
}

/*
 * Build the responder's chain to an anchor. Returns 1 when it chains,
 * 0 when only an intermediate is missing (the issuer of the top cert is
 * unknown to anchors, pool and response alike), -1 for any other failure
 * (look-alike issuer, bad chain signature, expired CA, ...).
 */
static int
chain_signer(struct ocsp_trust *t, OCSP_BASICRESP *bs, X509 *signer,
    struct ocsp_result *out)
{
	X509_STORE_CTX		*ctx = NULL;
	STACK_OF(X509)		*untrusted = NULL;
	const STACK_OF(X509)	*rcerts = OCSP_resp_get0_certs(bs);
	X509			*top;
	const X509_NAME		*iss;
	int			 err, rv = -1;

	if ((ctx = signer_ctx(t, rcerts, signer, &untrusted, out)) == NULL)
		goto out;
	if (X509_verify_cert(ctx) == 1) {
		rv = 1;
		goto out;
	}
	err = X509_STORE_CTX_get_error(ctx);
	top = X509_STORE_CTX_get_current_cert(ctx);
	snprintf(out->detail, sizeof(out->detail),
	    "responder chain: %s at depth %d",
	    X509_verify_cert_error_string(err),
	    X509_STORE_CTX_get_error_depth(ctx));
	if ((err != X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY &&
	    err != X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT) || top == NULL)
		goto out;
	/*
	 * An issuer with the name of a certificate we hold that did not
	 * verify as the issuer is a look-alike, not a missing intermediate.
	 */
	iss = X509_get_issuer_name(top);
	if (names_subject_in(iss, t->anchors) ||
	    names_subject_in(iss, t->pool) ||
	    (rcerts != NULL && names_subject_in(iss, rcerts))) {
		strncat(out->detail, " (issuer named like a known CA)",
		    sizeof(out->detail) - strlen(out->detail) - 1);
		goto out;
	}
	rv = 0;
 out:
	sk_X509_pop_free(untrusted, X509_free);
	X509_STORE_CTX_free(ctx);
	return rv;
}

/*
 * RFC 5758 3.2 and RFC 8410 3: ecdsa-with-SHA* and Ed25519/Ed448 "MUST
 * omit the parameters field"; RFC 8017 A.2.4: the PKCS#1 v1.5 signature
 * algorithms take NULL. `alg` is the AlgorithmIdentifier's content.
 * Other algorithms (RSASSA-PSS) are left to the re-encoding comparison.
 * Returns NULL when the parameters are as the standard says, else why.
 */
static const char *
sigalg_params_check(struct der alg)
{
	/* 1.2.840.10045.4.3.{1-4}, ecdsa-with-SHA224 .. SHA512 */
	static const uint8_t	 ecdsa[] = { 0x2a, 0x86, 0x48, 0xce, 0x3d,
	    0x04, 0x03 };
	static const uint8_t	 pkcs1[] = { 0x2a, 0x86, 0x48, 0x86, 0xf7,
	    0x0d, 0x01, 0x01 };
	static const uint8_t	 edwards[] = { 0x2b, 0x65 };
	struct der		 oid;

	if (der_expect(&alg, DER_OID, &oid) == -1)
		return "signatureAlgorithm is not DER";
	if ((oid.len == sizeof(ecdsa) + 1 &&
	    memcmp(oid.p, ecdsa, sizeof(ecdsa)) == 0) ||
	    (oid.len == 3 && memcmp(oid.p, edwards, sizeof(edwards)) == 0 &&
	    (oid.p[2] == 0x70 || oid.p[2] == 0x71)))
		return alg.len == 0 ? NULL :
		    "signatureAlgorithm carries parameters";
	if (oid.len == sizeof(pkcs1) + 1 &&
	    memcmp(oid.p, pkcs1, sizeof(pkcs1)) == 0 &&
	    oid.p[sizeof(pkcs1)] != 0x0a)	/* 10 is RSASSA-PSS */
		return alg.len == 2 && alg.p[0] == 0x05 && alg.p[1] == 0x00 ?
		    NULL : "signatureAlgorithm parameters are not NULL";
	return NULL;
}

/*
 * RFC 6960 4.2.1, the frame of an answer:
 *   OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED,
 *       responseBytes [0] EXPLICIT ResponseBytes OPTIONAL }
 *   ResponseBytes ::= SEQUENCE { responseType OID, response OCTET STRING }
 *   BasicOCSPResponse ::= SEQUENCE { tbsResponseData ResponseData,
 *       signatureAlgorithm AlgorithmIdentifier, signature BIT STRING,
 *       certs [0] EXPLICIT SEQUENCE OF Certificate OPTIONAL }
 * Only tbsResponseData is signed. The walk over the raw DER says where a
 * frame is not DER (der_next refuses indefinite and non-minimal lengths)
 * or has bytes after it; the signatureAlgorithm's parameters are checked;
 * each certificate's own bytes must pass der_cert_check (attest/der.h).
 * *basic is the BasicOCSPResponse TLV. Called once OpenSSL has parsed the
 * response as a BasicOCSPResponse.
 */
static int
resp_frame_check(const uint8_t *resp, size_t len, struct der *basic,
    struct ocsp_result *out)
{
	struct der	 d, v, rb, os, alg, certs, seq, c, tlv;
	const char	*why = NULL;
	int		 i;

	out->verdict = OCSP_ERR_PARSE;
	d.p = resp;
	d.len = len;
	if (der_expect(&d, DER_SEQUENCE, &v) == -1)
		why = "not DER: OCSPResponse";
	else if (d.len != 0)
		why = "not DER: bytes after the OCSPResponse";
	else if (der_expect(&v, DER_ENUMERATED, &rb) == -1 ||
	    der_expect(&v, DER_CTX0, &rb) == -1 || v.len != 0)
		why = "not DER: responseBytes";
	else if (der_expect(&rb, DER_SEQUENCE, &v) == -1 || rb.len != 0 ||
	    der_expect(&v, DER_OID, &c) == -1 ||
	    der_expect(&v, DER_OCTETSTRING, &os) == -1 || v.len != 0)
		why = "not DER: ResponseBytes";
	else if (der_expect_tlv(&os, DER_SEQUENCE, &v, basic) == -1)
		why = "not DER: BasicOCSPResponse";
	else if (os.len != 0)
		why = "not DER: bytes after the BasicOCSPResponse";
	else if (der_expect(&v, DER_SEQUENCE, &c) == -1 ||
	    der_expect(&v, DER_SEQUENCE, &alg) == -1 ||
	    der_expect(&v, DER_BITSTRING, &c) == -1)
		why = "not DER: BasicOCSPResponse";
	else
		why = sigalg_params_check(alg);
	if (why != NULL) {
		set_detail(out, why);
		return -1;
	}
	if (v.len == 0)
		return 0;		/* no certs */
	if (der_expect(&v, DER_CTX0, &certs) == -1 || v.len != 0 ||
	    der_expect(&certs, DER_SEQUENCE, &seq) == -1 || certs.len != 0) {
		set_detail(out, "not DER: BasicOCSPResponse certs");
		return -1;
	}
	for (i = 1; seq.len > 0; i++) {
		why = "not a DER SEQUENCE";
		if (der_expect_tlv(&seq, DER_SEQUENCE, &c, &tlv) == -1 ||
		    der_cert_check(tlv.p, tlv.len, &why) == -1) {
			snprintf(out->detail, sizeof(out->detail),
			    "response certificate %d: %s", i, why);
			return -1;
		}
	}
	return 0;
}

/* Are buf[0, len) exactly what i2d made of the object? 1, 0, or -1. */
static int
same_der(const uint8_t *buf, size_t len, int n, uint8_t *enc)
{
	int	 same;

	if (n <= 0 || enc == NULL)
		return -1;
	same = (size_t)n == len && memcmp(enc, buf, len) == 0;
	OPENSSL_free(enc);
	return same;
}

/*
 * Only canonical vendor bytes are stored: an answer is admitted only if it
 * is exactly the DER encoding of what OpenSSL parsed, the OCSPResponse and
 * (since responseBytes is an opaque OCTET STRING to the outer parse) the
 * BasicOCSPResponse inside it. OpenSSL 3 caches no encoding for
 * OCSPResponse, BasicOCSPResponse or ResponseData, so every byte outside
 * the embedded certificates is re-encoded; those keep their cached
 * tbsCertificate, which their signatures cover (certs_on_chain), and their
 * frames pass der_cert_check. The frame walk comes first only to name
 * what is wrong; this catches what it does not look at (inside
 * ResponseData, BOOLEAN and INTEGER forms, ...).
 */
static int
resp_canonical(const uint8_t *resp, size_t len, OCSP_RESPONSE *r,
    OCSP_BASICRESP *bs, struct ocsp_result *out)
{
	struct der	 basic;
	uint8_t		*enc;
	int		 n, same;

	if (resp_frame_check(resp, len, &basic, out) == -1)
		return -1;
	enc = NULL;
	n = i2d_OCSP_RESPONSE(r, &enc);
	if ((same = same_der(resp, len, n, enc)) == 1) {
		enc = NULL;
		n = i2d_OCSP_BASICRESP(bs, &enc);
		same = same_der(basic.p, basic.len, n, enc);
	}
	if (same == 1)
		return 0;
	set_detail(out, same == -1 ? "out of memory" :
	    "not DER: the answer is not the DER encoding of what it says");
	return -1;
}

/*
 * Every certificate the answer embeds must be on the responder's chain
 * (the responder itself and the CAs above it, as built from the
 * response's certificates, the pool and the anchors): OpenSSL never reads
 * a certificate that is not, so nothing would have checked its bytes.
 * NVIDIA embeds only the delegated responder; `openssl ocsp -rother`
 * adds the chain, which is on it. When the chain is incomplete
 * (unverifiable), the part that was built counts. With `span` the chain
 * is built even when nothing is embedded, and when it verifies, span
 * gets the time in which every certificate on it is within its dates
 * (else span->used stays 0). Returns 0, or -1 with OCSP_ERR_CHAIN and
 * the detail set.
 */
static int
certs_on_chain(struct ocsp_trust *t, OCSP_BASICRESP *bs, X509 *signer,
    struct judged *span, struct ocsp_result *out)
{
	const STACK_OF(X509)	*rcerts = OCSP_resp_get0_certs(bs);
	STACK_OF(X509)		*untrusted = NULL, *chain = NULL;
	X509_STORE_CTX		*ctx = NULL;
	X509			*x;
	time_t			 nb, na;
	int			 i, sound, nembedded, rv = -1;

	nembedded = rcerts != NULL ? sk_X509_num(rcerts) : 0;
	if (nembedded == 0 && span == NULL)
		return 0;
	if ((ctx = signer_ctx(t, rcerts, signer, &untrusted, out)) == NULL)
		goto out;
	sound = X509_verify_cert(ctx) == 1;	/* judged before; the path counts */
	if ((chain = X509_STORE_CTX_get1_chain(ctx)) == NULL) {
		set_detail(out, "out of memory");
		goto out;
	}
	for (i = 0; i < nembedded; i++)
		if (!sk_has(chain, sk_X509_value(rcerts, i))) {
			snprintf(out->detail, sizeof(out->detail),
			    "embedded certificate %d is not on the "
			    "responder's chain", i + 1);
			goto out;
		}
	rv = 0;
	for (i = 0; sound && span != NULL && i < sk_X509_num(chain); i++) {
		x = sk_X509_value(chain, i);
		if (util_asn1_time(X509_get0_notBefore(x), &nb) == -1 ||
		    util_asn1_time(X509_get0_notAfter(x), &na) == -1)
			sound = 0;
		else {
			if (i == 0 || nb > span->from)
				span->from = nb;
			if (i == 0 || na < span->until)
				span->until = na;
		}
	}
	if (span != NULL)
		span->used = sound && sk_X509_num(chain) > 0;
 out:
	if (rv == -1)
		out->verdict = OCSP_ERR_CHAIN;
	sk_X509_pop_free(chain, X509_free);
	sk_X509_pop_free(untrusted, X509_free);
	X509_STORE_CTX_free(ctx);
	ERR_clear_error();
	return rv;
}

/* Length-prefixed bytes into a digest. 1, or 0 (OpenSSL failed). */
static int
judged_update(EVP_MD_CTX *md, const void *p, size_t len)
{
	uint8_t	n[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16),
		    (uint8_t)(len >> 8), (uint8_t)len };

	return EVP_DigestUpdate(md, n, sizeof(n)) == 1 &&
	    (len == 0 || EVP_DigestUpdate(md, p, len) == 1);
}

/*
 * What judging the responder depends on, as one digest: the responder
 * certificate, every certificate the response embeds, and each
 * SingleResponse's issuer id (hash algorithm, issuerNameHash,
 * issuerKeyHash), all in order. 0, or -1 (then nothing is remembered).
 */
static int
judged_id(OCSP_BASICRESP *bs, X509 *signer, uint8_t id[SHA256_DIGEST_LENGTH])
{
	const STACK_OF(X509)	*rcerts = OCSP_resp_get0_certs(bs);
	const OCSP_CERTID	*cid;
	ASN1_OCTET_STRING	*name_hash, *key_hash;
	ASN1_OBJECT		*alg;
	EVP_MD_CTX		*md;
	unsigned char		 fp[EVP_MAX_MD_SIZE];
	unsigned int		 n;
	int			 i, ok;

	if ((md = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1 &&
	    X509_digest(signer, EVP_sha256(), fp, &n) == 1 &&
	    judged_update(md, fp, n);
	for (i = 0; ok && rcerts != NULL && i < sk_X509_num(rcerts); i++)
		ok = X509_digest(sk_X509_value(rcerts, i), EVP_sha256(), fp,
		    &n) == 1 && judged_update(md, fp, n);
	/* a separator: the certificates end here */
	ok = ok && judged_update(md, NULL, 0);
	for (i = 0; ok && i < OCSP_resp_count(bs); i++) {
		name_hash = key_hash = NULL;
		alg = NULL;
		ok = (cid = OCSP_SINGLERESP_get0_id(OCSP_resp_get0(bs, i))) !=
		    NULL && OCSP_id_get0_info(&name_hash, &alg, &key_hash, NULL,
		    (OCSP_CERTID *)cid) == 1 && name_hash != NULL &&
		    alg != NULL && key_hash != NULL &&
		    judged_update(md, OBJ_get0_data(alg), OBJ_length(alg)) &&
		    judged_update(md, name_hash->data, (size_t)name_hash->length) &&
		    judged_update(md, key_hash->data, (size_t)key_hash->length);
	}
	ok = ok && EVP_DigestFinal_ex(md, id, NULL) == 1;
	EVP_MD_CTX_free(md);
	return ok ? 0 : -1;
}

/* The responder judged sound with this id, its chain within its dates at now. */
static int
judged_find(const struct ocsp_trust *t, const uint8_t *id, time_t now)
{
	size_t	i;

	for (i = 0; i < TRUST_JUDGED_MAX; i++)
		if (t->judged[i].used &&
		    memcmp(t->judged[i].id, id, SHA256_DIGEST_LENGTH) == 0)
			return t->judged[i].from <= now &&
			    now < t->judged[i].until;
	return 0;
}

/* Remember a responder judged sound, in place of the oldest remembered. */
static void
judged_add(struct ocsp_trust *t, const uint8_t *id, const struct judged *span)
{
	struct judged	*j;
	size_t		 i;

	for (i = 0; i < TRUST_JUDGED_MAX; i++)
		if (t->judged[i].used &&
		    memcmp(t->judged[i].id, id, SHA256_DIGEST_LENGTH) == 0)
			break;
	if (i == TRUST_JUDGED_MAX) {
		i = t->judged_next;
		t->judged_next = (t->judged_next + 1) % TRUST_JUDGED_MAX;
	}
	j = &t->judged[i];
	*j = *span;
	memcpy(j->id, id, SHA256_DIGEST_LENGTH);
	j->used = 1;
}

size_t
ocsp_trust_reuses(const struct ocsp_trust *t)
{
	return t != NULL ? t->reuses : 0;
}

/* Does the response's nonce carry `nonce`? 1 yes, 0 no, -1 no nonce. */
static int
nonce_matches(OCSP_BASICRESP *bs, const uint8_t *nonce, size_t len)
{
	X509_EXTENSION		*ext;
	ASN1_OCTET_STRING	*v;
	const uint8_t		*p;
	long			 ilen;
	int			 idx, tag, cls;

	if ((idx = OCSP_BASICRESP_get_ext_by_NID(bs, NID_id_pkix_OCSP_Nonce,
	    -1)) < 0)
		return -1;
	if ((ext = OCSP_BASICRESP_get_ext(bs, idx)) == NULL ||
	    (v = X509_EXTENSION_get_data(ext)) == NULL)
		return 0;
	/* The whole extnValue, as ocsp_req_parse stores it ... */
	if ((size_t)v->length == len && memcmp(v->data, nonce, len) == 0)
		return 1;
	/* ... or the nonce inside that OCTET STRING (ocsp_req_renonce's). */
	p = v->data;
	if (ASN1_get_object(&p, &ilen, &tag, &cls, v->length) != 0 ||
	    tag != V_ASN1_OCTET_STRING || cls != V_ASN1_UNIVERSAL ||
	    p + ilen != v->data + v->length)
		return 0;
	return (size_t)ilen == len && memcmp(p, nonce, len) == 0;
}

/* The result before anything is known, with the first CertID's issuer key hash for logs. */
static void
result_init(const struct ocsp_req *req, struct ocsp_result *out)
{
	memset(out, 0, sizeof(*out));
	out->verdict = OCSP_ERR_PARSE;
	out->response_status = -1;
	out->cert_status = -1;
	out->revocation_reason = -1;
	if (req != NULL && req->ncertids > 0 &&
	    req->certids[0].key_hash_len <= sizeof(out->issuer_key_hash)) {
		memcpy(out->issuer_key_hash, req->certids[0].key_hash,
		    req->certids[0].key_hash_len);
		out->issuer_key_hash_len = req->certids[0].key_hash_len;
	}
}

/*
 * RFC 6960 4.2.1: one canonical DER OCSPResponse, nothing after it,
 * successful, basic. Returns the BasicOCSPResponse (caller frees) with
 * producedAt set, or NULL with the verdict set. Its embedded
 * certificates come from the trust's memo when the frame has the common
 * shape (attest/ocsp_memo.h), else OpenSSL decodes the whole.
 */
static OCSP_BASICRESP *
resp_basic(struct ocsp_trust *t, const uint8_t *resp, size_t len,
    struct ocsp_result *out)
{
	OCSP_RESPONSE		*r = NULL;
	OCSP_BASICRESP		*bs = NULL;
	const uint8_t		*p = resp;

	if (len == 0 || len > LONG_MAX ||
	    (r = d2i_OCSP_RESPONSE(NULL, &p, (long)len)) == NULL ||
	    p != resp + len) {
		set_detail(out, r != NULL ? "not DER: bytes after the "
		    "OCSPResponse" : "not a DER OCSPResponse");
		goto out;
	}
	out->response_status = OCSP_response_status(r);
	if (out->response_status != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
		out->verdict = OCSP_ERR_STATUS;
		snprintf(out->detail, sizeof(out->detail), "responseStatus %s",
		    OCSP_response_status_str(out->response_status));
		goto out;
	}
	if ((bs = ocsp_memo_basic(t->memo, resp, len)) == NULL &&
	    (bs = OCSP_response_get1_basic(r)) == NULL) {
		out->verdict = OCSP_ERR_NOT_BASIC;
		set_detail(out, "not a BasicOCSPResponse");
		goto out;
	}
	if (resp_canonical(resp, len, r, bs, out) == -1) {
		OCSP_BASICRESP_free(bs);
		bs = NULL;
		goto out;
	}
	(void)util_asn1_time(OCSP_resp_get0_produced_at(bs), &out->produced_at);
 out:
	OCSP_RESPONSE_free(r);
	return bs;
}

/* One SingleResponse into the result: latest thisUpdate, earliest nextUpdate, worst status. 0 or -1. */
static int
collect_single(OCSP_SINGLERESP *single, int *rank, struct ocsp_result *out)
{
	ASN1_GENERALIZEDTIME	*thisupd, *nextupd, *revtime;
	time_t			 tu, nu;
	int			 st, reason;

	st = OCSP_single_get0_status(single, &reason, &revtime, &thisupd,
	    &nextupd);
	if (st < 0 || util_asn1_time(thisupd, &tu) == -1) {
		set_detail(out, "bad SingleResponse");
		return -1;
	}
	if (nextupd == NULL)	/* NVAT's default, thisUpdate + 1 h */
		nu = tu + OCSP_DEFAULT_VALIDITY_S;
	else if (util_asn1_time(nextupd, &nu) == -1) {
		set_detail(out, "bad nextUpdate");
		return -1;
	}
	if (*rank == -1 || tu > out->this_update)
		out->this_update = tu;
	if (*rank == -1 || nu < out->next_update)
		out->next_update = nu;
	if (status_rank(st) > *rank) {
		*rank = status_rank(st);
		out->cert_status = st;
		out->revocation_reason =
		    st == V_OCSP_CERTSTATUS_REVOKED ? reason : -1;
	}
	return 0;
}

/*
 * Gather what the response says about the requested CertIDs; judged
 * later. *missing is the first one it does not answer, or SIZE_MAX.
 * 0, or -1 for a SingleResponse that does not parse.
 */
static int
collect(OCSP_BASICRESP *bs, const struct ocsp_req *req, size_t *missing,
    struct ocsp_result *out)
{
	OCSP_CERTID	*cid = NULL;
	OCSP_SINGLERESP	*single;
	size_t		 i;
	int		 idx, rank = -1, rv = -1;

	*missing = SIZE_MAX;
	for (i = 0; i < req->ncertids; i++) {
		OCSP_CERTID_free(cid);
		/* a CertID OpenSSL cannot decode cannot be in the response */
		if ((cid = certid_new(&req->certids[i])) == NULL ||
		    (idx = OCSP_resp_find(bs, cid, -1)) < 0 ||
		    (single = OCSP_resp_get0(bs, idx)) == NULL) {
			if (*missing == SIZE_MAX)
				*missing = i;
			continue;
		}
		if (collect_single(single, &rank, out) == -1)
			goto out;
	}
	rv = 0;
 out:
	OCSP_CERTID_free(cid);
	return rv;
}

/*
 * When OCSP_basic_verify fails: redo its steps one by one to say which.
 * Returns 0 (chain incomplete, but the responder names the CertIDs'
 * issuer: unproven), or -1 with the verdict set.
 */
static int
judge_signer_steps(struct ocsp_trust *t, OCSP_BASICRESP *bs, X509 *signer,
    const struct ocsp_req *req, struct ocsp_result *out)
{
	const char	*why;
	char		 ebuf[200];

	ERR_clear_error();
	if (OCSP_basic_verify(bs, t->pool, t->store, OCSP_NOVERIFY) != 1) {
		out->verdict = OCSP_ERR_SIGNATURE;
		snprintf(out->detail, sizeof(out->detail), "signature: %s",
		    ossl_reason(ebuf, sizeof(ebuf)));
		return -1;
	}
	ERR_clear_error();
	switch (chain_signer(t, bs, signer, out)) {
	case -1:
		out->verdict = OCSP_ERR_CHAIN;
		return -1;
	case 1:
		/* signature and chain are fine: authorisation is not */
		out->verdict = OCSP_ERR_SIGNER;
		set_detail(out, "responder is neither the CertIDs' issuer nor "
		    "a delegate it issued with EKU OCSPSigning");
		return -1;
	default:
		if ((why = claims_issuer(signer, req)) != NULL) {
			out->verdict = OCSP_ERR_SIGNER;
			snprintf(out->detail, sizeof(out->detail),
			    "chain incomplete and %s", why);
			return -1;
		}
		return 0;
	}
}

/*
 * The responder: found, signature, chain to an anchor at `now`,
 * authorised, and every certificate of the response on its chain.
 * Returns 1 (chained), 0 (unproven: an intermediate is missing), or -1
 * with the verdict set.
 */
static int
judge_signer(struct ocsp_trust *t, OCSP_BASICRESP *bs,
    const struct ocsp_req *req, time_t now, struct ocsp_result *out)
{
	STACK_OF(X509)	*only = NULL;
	X509		*signer;
	struct judged	 span;
	uint8_t		 id[SHA256_DIGEST_LENGTH];
	char		 ebuf[200];
	int		 chained = 1, have_id, ok;

	if ((signer = find_signer(bs, t->pool)) == NULL) {
		out->verdict = OCSP_ERR_SIGNER;
		set_detail(out, "responder certificate not in response or "
		    "pool");
		return -1;
	}
	/* Chains are judged at `now`: never the wall clock. */
	X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(t->store), now);

	/*
	 * A responder judged sound before: only this answer's signature,
	 * by that very certificate (searched for nowhere else).
	 */
	have_id = judged_id(bs, signer, id) == 0;
	if (have_id && judged_find(t, id, now)) {
		t->reuses++;
		ERR_clear_error();
		if ((only = sk_X509_new_null()) == NULL ||
		    !sk_X509_push(only, signer)) {
			sk_X509_free(only);
			out->verdict = OCSP_ERR_SIGNATURE;
			set_detail(out, "out of memory");
			return -1;
		}
		ok = OCSP_basic_verify(bs, only, t->store,
		    OCSP_NOINTERN | OCSP_NOVERIFY) == 1;
		sk_X509_free(only);
		if (ok)
			return 1;
		out->verdict = OCSP_ERR_SIGNATURE;
		snprintf(out->detail, sizeof(out->detail), "signature: %s",
		    ossl_reason(ebuf, sizeof(ebuf)));
		return -1;
	}

	/*
	 * The whole of OCSP_basic_verify as OpenSSL's clients (NVAT) run it:
	 * signature, responder chain to an anchor (untrusted: response certs
	 * and pool), and RFC 6960 4.2.2.2 authorisation (the CA itself, or
	 * a delegate with EKU OCSPSigning it issued) for every
	 * SingleResponse. Aux trust never authorises a responder: anchors
	 * are plain certificates, and OCSP_NOEXPLICIT says so again. Only
	 * when it fails are the steps redone one by one, to say which.
	 */
	if (OCSP_basic_verify(bs, t->pool, t->store, OCSP_NOEXPLICIT) != 1 &&
	    (chained = judge_signer_steps(t, bs, signer, req, out)) == -1)
		return -1;
	ERR_clear_error();
	memset(&span, 0, sizeof(span));
	if (certs_on_chain(t, bs, signer, have_id && chained == 1 ? &span :
	    NULL, out) == -1)
		return -1;
	if (span.used)
		judged_add(t, id, &span);
	return chained;
}

/*
 * What the answer says, judged at opts->now: every CertID answered,
 * thisUpdate not ahead (beyond the skew), nextUpdate not passed, our
 * nonce echoed. 0, or -1 with the verdict set.
 */
static int
judge_times(OCSP_BASICRESP *bs, size_t missing,
    const struct ocsp_verify_opts *opts, struct ocsp_result *out)
{
	long	skew = opts->skew_s > 0 ? opts->skew_s : 0;
	int	st;

	if (missing != SIZE_MAX) {
		out->verdict = OCSP_ERR_CERTID;
		snprintf(out->detail, sizeof(out->detail),
		    "requested CertID %zu not in response", missing);
		return -1;
	}
	if (out->this_update > opts->now + skew) {
		out->verdict = OCSP_ERR_FUTURE;
		snprintf(out->detail, sizeof(out->detail),
		    "thisUpdate %lld is %lld s ahead of now",
		    (long long)out->this_update,
		    (long long)(out->this_update - opts->now));
		return -1;
	}
	if (out->next_update <= opts->now) {
		out->verdict = OCSP_ERR_EXPIRED;
		snprintf(out->detail, sizeof(out->detail),
		    "nextUpdate %lld passed %lld s ago",
		    (long long)out->next_update,
		    (long long)(opts->now - out->next_update));
		return -1;
	}
	if (opts->nonce != NULL &&
	    (st = nonce_matches(bs, opts->nonce, opts->nonce_len)) != 1) {
		out->verdict = OCSP_ERR_NONCE;
		set_detail(out, st == -1 ? "response carries no nonce" :
		    "response nonce is not ours");
		return -1;
	}
	return 0;
}

int
ocsp_verify(struct ocsp_trust *t, const uint8_t *resp, size_t len,
    const struct ocsp_req *req, const struct ocsp_verify_opts *opts,
    struct ocsp_result *out)
{
	OCSP_BASICRESP	*bs = NULL;
	size_t		 missing;
	int		 chained, rv = -1;

	if (out == NULL)
		return -1;
	result_init(req, out);
	ERR_clear_error();
	if (t == NULL || resp == NULL || req == NULL || opts == NULL ||
	    req->ncertids == 0 || req->ncertids > OCSP_MAX_CERTIDS) {
		set_detail(out, "bad arguments");
		goto out;
	}
	if (trust_builtin(t) == -1) {
		set_detail(out, "out of memory parsing the built-in certificates");
		goto out;
	}
	if ((bs = resp_basic(t, resp, len, out)) == NULL ||
	    collect(bs, req, &missing, out) == -1 ||
	    (chained = judge_signer(t, bs, req, opts->now, out)) == -1 ||
	    judge_times(bs, missing, opts, out) == -1)
		goto out;
	if (chained == 0) {
		/* Genuine-looking but unproven: the caller passes it on. */
		out->verdict = OCSP_UNVERIFIABLE;
		strncat(out->detail, "; responder names the CertID's issuer",
		    sizeof(out->detail) - strlen(out->detail) - 1);
		goto out;
	}
	out->verdict = OCSP_OK;
	snprintf(out->detail, sizeof(out->detail), "%s",
	    ocsp_cert_status_str[out->cert_status]);
	rv = 0;
 out:
	OCSP_BASICRESP_free(bs);
	ERR_clear_error();
	return rv;
}
