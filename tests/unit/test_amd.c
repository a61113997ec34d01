/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for attest/amd.c: real KDS chains, VCEKs and CRLs; pinned ARKs; tampering; hostile input. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include "attest/amd.h"
#include "attest/amd_chains.h"
#include "attest/util.h"
#include "attest/vendor_roots.h"
#include "tv.h"

#define VEC_DIR	"/tests/vectors/amd/"

/*
 * Clocks (tests/vectors/amd/SOURCES.md): every ARK/ASK and VCEK here is
 * valid on 2026-07-01 (the newest VCEK starts 2026-06-17, the oldest ends
 * 2029-09-24); the Milan CRL is valid 2025-05-06 .. 2026-05-12 and the
 * Genoa CRL 2024-10-23 .. 2025-11-03.
 */
#define T_CERTS		1782864000	/* 2026-07-01T00:00:00Z */
#define T_MILAN_CRL	1764547200	/* 2025-12-01T00:00:00Z */
#define T_GENOA_CRL	1748736000	/* 2025-06-01T00:00:00Z */
#define MILAN_CRL_THIS	1746535146	/* 2025-05-06T12:39:06Z */
#define MILAN_CRL_NEXT	1778544000	/* 2026-05-12T00:00:00Z */
#define VCEK_MILAN_NB	1680549823	/* 2023-04-03T19:23:43Z */
#define VCEK_MILAN_NA	1901474623	/* 2030-04-03T19:23:43Z */

#define assert_verdict(want, got, r) do {				\
	enum amd_verdict v_ = (got);					\
	if (v_ != (want))						\
		fail_msg("verdict %s, want %s: %s", amd_verdict_str[v_],	\
		    amd_verdict_str[(want)], (r)->detail);		\
} while (0)

static enum amd_verdict
chain_v(enum amd_product p, enum amd_signer s, const struct tv_buf *b, time_t now,
    struct amd_result *r)
{
	int	 rv = amd_verify_cert_chain(p, s, b->p, b->len, now, r);

	assert_int_equal(rv, r->verdict == AMD_OK ? 0 : -1);
	assert_true((unsigned)r->verdict < AMD_VERDICT_MAX);
	return r->verdict;
}

static enum amd_verdict
vek_v(enum amd_product p, enum amd_signer s, const struct tv_buf *c,
    const struct tv_buf *chain, const struct amd_vek_id *want, time_t now,
    struct amd_result *r)
{
	int	 rv = amd_verify_vek(p, s, c->p, c->len, chain->p, chain->len,
	    want, now, r);

	assert_int_equal(rv, r->verdict == AMD_OK ? 0 : -1);
	assert_true((unsigned)r->verdict < AMD_VERDICT_MAX);
	return r->verdict;
}

static enum amd_verdict
crl_v(enum amd_product p, const struct tv_buf *b, time_t now,
    struct amd_result *r)
{
	int	 rv = amd_verify_crl(p, b->p, b->len, now, r);

	assert_int_equal(rv, r->verdict == AMD_OK ? 0 : -1);
	assert_true((unsigned)r->verdict < AMD_VERDICT_MAX);
	return r->verdict;
}

static const struct {
	const char		*dir;
	enum amd_product	 product;
	const struct vendor_root *root;
} arks[] = {
	{ "milan/ark.pem", AMD_MILAN, &amd_ark_milan },
	{ "genoa/ark.pem", AMD_GENOA, &amd_ark_genoa },
	{ "turin/ark.pem", AMD_TURIN, &amd_ark_turin },
};

static const struct {
	const char		*file;
	enum amd_product	 product;
	enum amd_signer		 signer;
} chains[] = {
	{ "cert_chain_milan", AMD_MILAN, AMD_VCEK },
	{ "ask_ark_genoa.pem", AMD_GENOA, AMD_VCEK },
	{ "cert_chain_turin", AMD_TURIN, AMD_VCEK },
	{ "ask_ark_milan_vlek.pem", AMD_MILAN, AMD_VLEK },
	{ "ask_ark_genoa_vlek.pem", AMD_GENOA, AMD_VLEK },
	{ "ask_ark_turin_vlek.pem", AMD_TURIN, AMD_VLEK },
};

/* The compiled-in ARKs are virtee/sev's builtin ones, byte for byte. */
static void
test_arks_pinned(void **state)
{
	struct tv_buf	 pem;
	X509		*a, *b;
	BIO		*bio;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(arks) / sizeof(arks[0]); i++) {
		pem = tv_load(VEC_DIR, arks[i].dir);
		assert_non_null(bio = BIO_new_mem_buf(pem.p, (int)pem.len));
		assert_non_null(a = PEM_read_bio_X509(bio, NULL, NULL, NULL));
		assert_non_null(b = vendor_root_x509(arks[i].root));
		assert_int_equal(X509_cmp(a, b), 0);
		X509_free(a);
		X509_free(b);
		BIO_free(bio);
		tv_free(&pem);
	}
}

static void
test_product_names(void **state)
{
	enum amd_product	 p;

	(void)state;
	assert_int_equal(amd_product_parse("Milan", 5, &p), 0);
	assert_int_equal(p, AMD_MILAN);
	assert_int_equal(amd_product_parse("Genoa", 5, &p), 0);
	assert_int_equal(p, AMD_GENOA);
	assert_int_equal(amd_product_parse("Turin", 5, &p), 0);
	assert_int_equal(p, AMD_TURIN);
	assert_int_equal(amd_product_parse("milan", 5, &p), -1);
	assert_int_equal(amd_product_parse("Mila", 4, &p), -1);
	assert_int_equal(amd_product_parse("Milan/", 6, &p), -1);
	assert_int_equal(amd_product_parse(NULL, 0, &p), -1);
	assert_string_equal(amd_product_str[AMD_GENOA], "Genoa");
	assert_string_equal(amd_signer_str[AMD_VLEK], "vlek");
}

/* Every real cert_chain verifies for its product and signer family. */
static void
test_cert_chains(void **state)
{
	struct amd_result	 r;
	struct tv_buf		 b;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(chains) / sizeof(chains[0]); i++) {
		b = tv_load(VEC_DIR, chains[i].file);
		assert_verdict(AMD_OK, chain_v(chains[i].product,
		    chains[i].signer, &b, T_CERTS, &r), &r);
		/* 25-year certificates; nothing to refresh. */
		assert_true(r.not_after > T_CERTS + 15 * 365 * 86400L);
		assert_int_equal(r.next_update, 0);
		assert_int_equal(r.crl_entries, -1);
		tv_free(&b);
	}
}

/* A chain for another product or the other family is refused. */
static void
test_wrong_product(void **state)
{
	struct amd_result	 r;
	struct tv_buf		 milan = tv_load(VEC_DIR, "cert_chain_milan");
	struct tv_buf		 vlek = tv_load(VEC_DIR,
	    "ask_ark_milan_vlek.pem");

	(void)state;
	assert_verdict(AMD_ERR_PRODUCT, chain_v(AMD_GENOA, AMD_VCEK, &milan,
	    T_CERTS, &r), &r);
	assert_verdict(AMD_ERR_PRODUCT, chain_v(AMD_TURIN, AMD_VCEK, &milan,
	    T_CERTS, &r), &r);
	assert_verdict(AMD_ERR_SIGNER, chain_v(AMD_MILAN, AMD_VLEK, &milan,
	    T_CERTS, &r), &r);
	assert_verdict(AMD_ERR_SIGNER, chain_v(AMD_MILAN, AMD_VCEK, &vlek,
	    T_CERTS, &r), &r);
	tv_free(&milan);
	tv_free(&vlek);
}

/* PEM of certificates, in order. */
static struct tv_buf
pem_of(X509 *const *x, int n)
{
	BIO	*bio;
	int	 i;

	assert_non_null(bio = BIO_new(BIO_s_mem()));
	for (i = 0; i < n; i++)
		assert_int_equal(PEM_write_bio_X509(bio, x[i]), 1);
	return tv_bio_take(bio);
}

static STACK_OF(X509) *
certs_of(const char *file)
{
	struct tv_buf	 b = tv_load(VEC_DIR, file);
	STACK_OF(X509)	*sk;
	const char	*why;

	assert_non_null(sk = vendor_pem_certs(b.p, b.len, 4, &why));
	tv_free(&b);
	return sk;
}

/*
 * A self-signed look-alike of ARK-Milan (same subject, our key), made at
 * test time and PSS-SHA-384-signed like AMD's.
 */
static X509 *
fake_ark(X509 *real, EVP_PKEY **keyp)
{
	EVP_PKEY	*key;
	EVP_PKEY_CTX	*pctx;
	EVP_MD_CTX	*md;
	X509		*x;

	assert_non_null(key = EVP_RSA_gen(2048));
	assert_non_null(x = X509_new());
	assert_int_equal(X509_set_version(x, 2), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(x), 0x10000), 1);
	assert_int_equal(X509_set_subject_name(x, X509_get_subject_name(real)),
	    1);
	assert_int_equal(X509_set_issuer_name(x, X509_get_subject_name(real)),
	    1);
	assert_int_equal(X509_set1_notBefore(x, X509_get0_notBefore(real)), 1);
	assert_int_equal(X509_set1_notAfter(x, X509_get0_notAfter(real)), 1);
	assert_int_equal(X509_set_pubkey(x, key), 1);
	assert_non_null(md = EVP_MD_CTX_new());
	assert_int_equal(EVP_DigestSignInit(md, &pctx, EVP_sha384(), NULL, key),
	    1);
	assert_int_equal(EVP_PKEY_CTX_set_rsa_padding(pctx,
	    RSA_PKCS1_PSS_PADDING), 1);
	assert_int_equal(EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 48), 1);
	assert_int_equal(EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha384()), 1);
	assert_true(X509_sign_ctx(x, md) > 0);
	EVP_MD_CTX_free(md);
	*keyp = key;
	return x;
}

/* A fetched ARK is never trusted by itself: anything but the pinned one fails. */
static void
test_fetched_ark(void **state)
{
	STACK_OF(X509)		*milan = certs_of("cert_chain_milan");
	STACK_OF(X509)		*genoa = certs_of("ask_ark_genoa.pem");
	struct amd_result	 r;
	struct tv_buf		 b, vcek = tv_load(VEC_DIR, "vcek_milan.der");
	EVP_PKEY		*key;
	X509			*v[3], *fake;

	(void)state;
	fake = fake_ark(sk_X509_value(milan, 1), &key);
	/* ASK-Milan with a look-alike ARK-Milan. */
	v[0] = sk_X509_value(milan, 0);
	v[1] = fake;
	b = pem_of(v, 2);
	assert_verdict(AMD_ERR_ARK, chain_v(AMD_MILAN, AMD_VCEK, &b, T_CERTS,
	    &r), &r);
	/* ... and a VCEK presented with it. */
	assert_verdict(AMD_ERR_ARK, vek_v(AMD_MILAN, AMD_VCEK, &vcek, &b, NULL,
	    T_CERTS, &r), &r);
	tv_free(&b);
	/* ASK-Milan with the genuine ARK of another product. */
	v[1] = sk_X509_value(genoa, 1);
	b = pem_of(v, 2);
	assert_verdict(AMD_ERR_PRODUCT, chain_v(AMD_MILAN, AMD_VCEK, &b,
	    T_CERTS, &r), &r);
	tv_free(&b);
	/* ASK-Genoa under the pinned ARK-Milan: not issued by it. */
	v[0] = sk_X509_value(genoa, 0);
	v[1] = sk_X509_value(milan, 1);
	b = pem_of(v, 2);
	assert_verdict(AMD_ERR_SIGNER, chain_v(AMD_MILAN, AMD_VCEK, &b,
	    T_CERTS, &r), &r);
	tv_free(&b);
	/* Order is ASK then ARK; three certificates; the ARK alone. */
	v[0] = sk_X509_value(milan, 1);
	v[1] = sk_X509_value(milan, 0);
	b = pem_of(v, 2);
	assert_int_not_equal(chain_v(AMD_MILAN, AMD_VCEK, &b, T_CERTS, &r),
	    AMD_OK);
	tv_free(&b);
	v[0] = sk_X509_value(milan, 0);
	v[1] = sk_X509_value(milan, 1);
	v[2] = sk_X509_value(milan, 1);
	b = pem_of(v, 3);
	assert_verdict(AMD_ERR_PARSE, chain_v(AMD_MILAN, AMD_VCEK, &b, T_CERTS,
	    &r), &r);
	tv_free(&b);
	b = pem_of(v + 1, 1);
	assert_verdict(AMD_ERR_PARSE, chain_v(AMD_MILAN, AMD_VCEK, &b, T_CERTS,
	    &r), &r);
	tv_free(&b);
	X509_free(fake);
	EVP_PKEY_free(key);
	sk_X509_pop_free(milan, X509_free);
	sk_X509_pop_free(genoa, X509_free);
	tv_free(&vcek);
}

/* The KDS request each VCEK answers (derived/vcek_kds_urls.tsv). */
static const struct {
	const char		*file, *chain;
	enum amd_product	 product;
	const char		*hwid;
	struct amd_tcb		 tcb;
} veks[] = {
	{ "vcek_milan.der", "cert_chain_milan", AMD_MILAN,
	  "d49554ec717f4e5b0fe6b143bcf0405bd7ae304727edf46603f2a76aef6a3abc"
	  "15d7af38db757039029f0efacfd08e244324884738c72b082e2f87a44d541eb6",
	  { 3, 0, 8, 115, -1 } },
	{ "vcek_turin.der", "cert_chain_turin", AMD_TURIN, "1e550a8ee5cf9f4d",
	  { 0, 0, 0, 9, 0 } },
	{ "vcek.testcer", "cert_chain_milan", AMD_MILAN,
	  "3ac3fe21e13fb0990eb28a802e3fb6a29483a6b0753590c951bdd3b8e5378618"
	  "4ca39e359669a2b76a1936776b564ea464cdce40c05f63c9b610c5068b006b5d",
	  { 2, 0, 5, 68, -1 } },
	{ "sev_snp_vcek.pem", "cert_chain_milan", AMD_MILAN,
	  "38d174589d2dff97a6d40cb9f9d90b9507c027491219083cef3ce73ed18f7289"
	  "142d941ad61eabecd27d25f268c1095d665f6001358e98a4769c82734a6bb877",
	  { 4, 0, 23, 213, -1 } },
};

/* Every real VCEK verifies under its ASK and says which chip and TCB it is for. */
static void
test_vceks(void **state)
{
	struct amd_result	 r;
	struct amd_vek_id	 want;
	struct tv_buf		 c, chain;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(veks) / sizeof(veks[0]); i++) {
		c = tv_load(VEC_DIR, veks[i].file);
		chain = tv_load(VEC_DIR, veks[i].chain);
		memset(&want, 0, sizeof(want));
		want.hwid_len = strlen(veks[i].hwid) / 2;
		assert_true(want.hwid_len <= sizeof(want.hwid));
		assert_int_equal(util_unhex(veks[i].hwid, 2 * want.hwid_len,
		    want.hwid, want.hwid_len), 0);
		want.tcb = veks[i].tcb;
		assert_verdict(AMD_OK, vek_v(veks[i].product, AMD_VCEK, &c,
		    &chain, NULL, T_CERTS, &r), &r);
		assert_int_equal(r.id.hwid_len, want.hwid_len);
		assert_memory_equal(r.id.hwid, want.hwid, want.hwid_len);
		assert_int_equal(r.id.tcb.bl, want.tcb.bl);
		assert_int_equal(r.id.tcb.tee, want.tcb.tee);
		assert_int_equal(r.id.tcb.snp, want.tcb.snp);
		assert_int_equal(r.id.tcb.ucode, want.tcb.ucode);
		assert_int_equal(r.id.tcb.fmc, want.tcb.fmc);
		assert_int_equal(r.next_update, 0);	/* never refreshed */
		assert_true(r.not_after > T_CERTS);
		/* The request it answers. */
		assert_verdict(AMD_OK, vek_v(veks[i].product, AMD_VCEK, &c,
		    &chain, &want, T_CERTS, &r), &r);
		/* Another TCB, another chip. */
		want.tcb.ucode++;
		assert_verdict(AMD_ERR_MISMATCH, vek_v(veks[i].product,
		    AMD_VCEK, &c, &chain, &want, T_CERTS, &r), &r);
		want.tcb.ucode--;
		want.hwid[0] ^= 0x01;
		assert_verdict(AMD_ERR_MISMATCH, vek_v(veks[i].product,
		    AMD_VCEK, &c, &chain, &want, T_CERTS, &r), &r);
		tv_free(&c);
		tv_free(&chain);
	}
}

/* A VCEK under the wrong product's chain, or presented as a VLEK. */
static void
test_vcek_wrong_signer(void **state)
{
	struct amd_result	 r;
	struct tv_buf		 c = tv_load(VEC_DIR, "vcek_milan.der");
	struct tv_buf		 turin = tv_load(VEC_DIR, "cert_chain_turin");
	struct tv_buf		 milan = tv_load(VEC_DIR, "cert_chain_milan");
	struct tv_buf		 vlek = tv_load(VEC_DIR,
	    "ask_ark_milan_vlek.pem");
	struct tv_buf		 tc = tv_load(VEC_DIR, "vcek_turin.der");

	(void)state;
	assert_verdict(AMD_ERR_SIGNER, vek_v(AMD_TURIN, AMD_VCEK, &c, &turin,
	    NULL, T_CERTS, &r), &r);
	assert_verdict(AMD_ERR_PRODUCT, vek_v(AMD_TURIN, AMD_VCEK, &c, &milan,
	    NULL, T_CERTS, &r), &r);
	assert_verdict(AMD_ERR_SIGNER, vek_v(AMD_MILAN, AMD_VLEK, &c, &vlek,
	    NULL, T_CERTS, &r), &r);
	assert_verdict(AMD_ERR_SIGNER, vek_v(AMD_MILAN, AMD_VCEK, &tc, &milan,
	    NULL, T_CERTS, &r), &r);
	tv_free(&c);
	tv_free(&turin);
	tv_free(&milan);
	tv_free(&vlek);
	tv_free(&tc);
}

/*
 * `now` for a VCEK is only its validity window at store time: inside it
 * is fine however old, outside it is refused.
 */
static void
test_vcek_window(void **state)
{
	struct amd_result	 r;
	struct tv_buf		 c = tv_load(VEC_DIR, "vcek_milan.der");
	struct tv_buf		 chain = tv_load(VEC_DIR, "cert_chain_milan");

	(void)state;
	assert_verdict(AMD_OK, vek_v(AMD_MILAN, AMD_VCEK, &c, &chain, NULL,
	    VCEK_MILAN_NA - 1, &r), &r);
	assert_int_equal(r.this_update, VCEK_MILAN_NB);
	assert_int_equal(r.not_after, VCEK_MILAN_NA);
	assert_verdict(AMD_ERR_EXPIRED, vek_v(AMD_MILAN, AMD_VCEK, &c, &chain,
	    NULL, VCEK_MILAN_NA, &r), &r);
	assert_verdict(AMD_OK, vek_v(AMD_MILAN, AMD_VCEK, &c, &chain, NULL,
	    VCEK_MILAN_NB - AMD_SKEW_S, &r), &r);
	assert_verdict(AMD_ERR_FUTURE, vek_v(AMD_MILAN, AMD_VCEK, &c, &chain,
	    NULL, VCEK_MILAN_NB - AMD_SKEW_S - 1, &r), &r);
	tv_free(&c);
	tv_free(&chain);
}

/* CRLs: signed by the pinned ARK, inside their window. */
static void
test_crls(void **state)
{
	struct amd_result	 r;
	struct tv_buf		 milan = tv_load(VEC_DIR,
	    "derived/Milan.crl.der");
	struct tv_buf		 genoa = tv_load(VEC_DIR,
	    "derived/Genoa.crl.der");
	struct tv_buf		 pem;
	X509_CRL		*crl;
	const uint8_t		*p;
	BIO			*bio;
	char			*data;

	(void)state;
	assert_verdict(AMD_OK, crl_v(AMD_MILAN, &milan, T_MILAN_CRL, &r), &r);
	assert_int_equal(r.this_update, MILAN_CRL_THIS);
	assert_int_equal(r.next_update, MILAN_CRL_NEXT);
	assert_int_equal(r.crl_entries, 0);
	assert_verdict(AMD_OK, crl_v(AMD_GENOA, &genoa, T_GENOA_CRL, &r), &r);
	assert_int_equal(r.crl_entries, 1);
	/* Another product's CRL. */
	assert_verdict(AMD_ERR_PRODUCT, crl_v(AMD_GENOA, &milan, T_MILAN_CRL,
	    &r), &r);
	assert_verdict(AMD_ERR_PRODUCT, crl_v(AMD_TURIN, &genoa, T_GENOA_CRL,
	    &r), &r);
	/* Window edges. */
	assert_verdict(AMD_OK, crl_v(AMD_MILAN, &milan, MILAN_CRL_NEXT - 1,
	    &r), &r);
	assert_verdict(AMD_ERR_EXPIRED, crl_v(AMD_MILAN, &milan,
	    MILAN_CRL_NEXT, &r), &r);
	assert_verdict(AMD_ERR_FUTURE, crl_v(AMD_MILAN, &milan,
	    MILAN_CRL_THIS - AMD_SKEW_S - 1, &r), &r);
	/* The same CRL as PEM. */
	p = milan.p;
	assert_non_null(crl = d2i_X509_CRL(NULL, &p, (long)milan.len));
	assert_non_null(bio = BIO_new(BIO_s_mem()));
	assert_int_equal(PEM_write_bio_X509_CRL(bio, crl), 1);
	pem.len = (size_t)BIO_get_mem_data(bio, &data);
	pem.p = (uint8_t *)data;
	assert_verdict(AMD_OK, crl_v(AMD_MILAN, &pem, T_MILAN_CRL, &r), &r);
	BIO_free(bio);
	X509_CRL_free(crl);
	/* A flipped signature byte. */
	milan.p[milan.len - 10] ^= 0x01;
	assert_verdict(AMD_ERR_SIGNATURE, crl_v(AMD_MILAN, &milan,
	    T_MILAN_CRL, &r), &r);
	tv_free(&milan);
	tv_free(&genoa);
}

/* One flipped byte in a DER certificate or CRL: never accepted. */
static void
test_der_flips(void **state)
{
	struct amd_result	 r;
	struct tv_buf		 c = tv_load(VEC_DIR, "vcek_milan.der");
	struct tv_buf		 tc = tv_load(VEC_DIR, "vcek_turin.der");
	struct tv_buf		 chain = tv_load(VEC_DIR, "cert_chain_milan");
	struct tv_buf		 tchain = tv_load(VEC_DIR, "cert_chain_turin");
	struct tv_buf		 crl = tv_load(VEC_DIR,
	    "derived/Milan.crl.der");
	size_t			 i;

	(void)state;
	/* Signature and body flips: their verdicts first. */
	c.p[c.len - 5] ^= 0x01;
	assert_verdict(AMD_ERR_SIGNATURE, vek_v(AMD_MILAN, AMD_VCEK, &c,
	    &chain, NULL, T_CERTS, &r), &r);
	c.p[c.len - 5] ^= 0x01;
	c.p[300] ^= 0x01;	/* inside the subject public key */
	assert_int_not_equal(vek_v(AMD_MILAN, AMD_VCEK, &c, &chain, NULL,
	    T_CERTS, &r), AMD_OK);
	c.p[300] ^= 0x01;
	for (i = 0; i < c.len; i++) {
		c.p[i] ^= 0x01;
		if (vek_v(AMD_MILAN, AMD_VCEK, &c, &chain, NULL, T_CERTS, &r) ==
		    AMD_OK)
			fail_msg("VCEK flip at %zu accepted", i);
		c.p[i] ^= 0x01;
	}
	for (i = 0; i < tc.len; i += 3) {
		tc.p[i] ^= 0x80;
		if (vek_v(AMD_TURIN, AMD_VCEK, &tc, &tchain, NULL, T_CERTS,
		    &r) == AMD_OK)
			fail_msg("Turin VCEK flip at %zu accepted", i);
		tc.p[i] ^= 0x80;
	}
	for (i = 0; i < crl.len; i++) {
		crl.p[i] ^= 0x01;
		if (crl_v(AMD_MILAN, &crl, T_MILAN_CRL, &r) == AMD_OK)
			fail_msg("CRL flip at %zu accepted", i);
		crl.p[i] ^= 0x01;
	}
	tv_free(&c);
	tv_free(&tc);
	tv_free(&chain);
	tv_free(&tchain);
	tv_free(&crl);
}

/*
 * The ASK inside a cert_chain, tampered at the DER level: every flip is
 * refused. Then the PEM text itself, byte by byte: refused except a flip
 * in the unused low bits of the base64 digit before '=' padding, which
 * leaves the certificate as it was.
 */
static void
test_chain_flips(void **state)
{
	STACK_OF(X509)		*sk = certs_of("cert_chain_milan");
	struct tv_buf		 pem = tv_load(VEC_DIR, "cert_chain_milan");
	struct amd_result	 r;
	struct tv_buf		 b;
	uint8_t			*der = NULL;
	const uint8_t		*p;
	X509			*v[2], *x;
	size_t			 i;
	int			 n;

	(void)state;
	n = i2d_X509(sk_X509_value(sk, 0), &der);
	assert_true(n > 0);
	v[1] = sk_X509_value(sk, 1);
	for (i = 0; i < (size_t)n; i += 5) {
		if ((x = tv_x509_flipped(der, (size_t)n, i)) == NULL)
			continue;
		v[0] = x;
		b = pem_of(v, 2);
		if (chain_v(AMD_MILAN, AMD_VCEK, &b, T_CERTS, &r) == AMD_OK)
			fail_msg("ASK flip at %zu accepted", i);
		tv_free(&b);
		X509_free(x);
	}
	OPENSSL_free(der);
	der = NULL;
	/* A flipped byte of the ARK is a different ARK. */
	n = i2d_X509(sk_X509_value(sk, 1), &der);
	der[n - 20] ^= 0x01;
	p = der;
	assert_non_null(x = d2i_X509(NULL, &p, n));
	v[0] = sk_X509_value(sk, 0);
	v[1] = x;
	b = pem_of(v, 2);
	assert_verdict(AMD_ERR_ARK, chain_v(AMD_MILAN, AMD_VCEK, &b, T_CERTS,
	    &r), &r);
	tv_free(&b);
	X509_free(x);
	OPENSSL_free(der);

	for (i = 0; i < pem.len; i += 2) {
		pem.p[i] ^= 0x01;
		if (chain_v(AMD_MILAN, AMD_VCEK, &pem, T_CERTS, &r) == AMD_OK &&
		    (i + 1 >= pem.len || pem.p[i + 1] != '='))
			fail_msg("PEM flip at %zu accepted", i);
		pem.p[i] ^= 0x01;
	}
	sk_X509_pop_free(sk, X509_free);
	tv_free(&pem);
}

/* Offset of the n-th (0-based) "-----BEGIN" in b; b->len if none. */
static size_t
begin_at(const struct tv_buf *b, int n)
{
	size_t	 i;

	for (i = 0; i + 10 <= b->len; i++)
		if (memcmp(b->p + i, "-----BEGIN", 10) == 0 && n-- == 0)
			return i;
	return b->len;
}

/* pre, then b[from, to), then b2[from2, to2), then post. */
static struct tv_buf
splice(const char *pre, const struct tv_buf *b, size_t from, size_t to,
    const struct tv_buf *b2, size_t from2, size_t to2, const char *post)
{
	struct tv_buf	 o;
	size_t		 n = 0;

	o.len = strlen(pre) + (to - from) + (to2 - from2) + strlen(post);
	assert_non_null(o.p = malloc(o.len + 1));
	memcpy(o.p, pre, strlen(pre)), n += strlen(pre);
	memcpy(o.p + n, b->p + from, to - from), n += to - from;
	if (b2 != NULL)
		memcpy(o.p + n, b2->p + from2, to2 - from2), n += to2 - from2;
	memcpy(o.p + n, post, strlen(post)), n += strlen(post);
	assert_int_equal(n, o.len);
	return o;
}

/* b with every LF made CRLF (crlf) or every CRLF made LF. */
static struct tv_buf
eols(const struct tv_buf *b, int crlf)
{
	struct tv_buf	 o;
	size_t		 i;

	assert_non_null(o.p = malloc(b->len * 2 + 1));
	o.len = 0;
	for (i = 0; i < b->len; i++) {
		if (b->p[i] == '\r' && !crlf)
			continue;
		if (b->p[i] == '\n' && crlf)
			o.p[o.len++] = '\r';
		o.p[o.len++] = b->p[i];
	}
	return o;
}

/* Refused as a parse error naming `why`. */
static void
assert_layout(enum amd_product p, const struct tv_buf *b, const char *why)
{
	struct amd_result	 r;

	assert_verdict(AMD_ERR_PARSE, chain_v(p, AMD_VCEK, b, T_CERTS, &r),
	    &r);
	if (strstr(r.detail, why) == NULL)
		fail_msg("want \"%s\", got \"%s\"", why, r.detail);
}

/*
 * A cert_chain is stored and served as sent, so its text must be what KDS
 * sends: two blocks, ASK then ARK, LF (Milan) or CRLF (Turin) throughout,
 * nothing before, between or after them.
 */
static void
test_chain_layout(void **state)
{
	struct amd_result	 r;
	struct tv_buf		 m = tv_load(VEC_DIR, "cert_chain_milan");
	struct tv_buf		 t = tv_load(VEC_DIR, "cert_chain_turin");
	struct tv_buf		 b;
	size_t			 ark = begin_at(&m, 1);

	(void)state;
	assert_true(ark < m.len && m.p[m.len - 1] == '\n');
	/* both genuine forms, the other line end, the final newlines */
	b = eols(&m, 1);
	assert_verdict(AMD_OK, chain_v(AMD_MILAN, AMD_VCEK, &b, T_CERTS, &r),
	    &r);
	tv_free(&b);
	b = eols(&t, 0);
	assert_verdict(AMD_OK, chain_v(AMD_TURIN, AMD_VCEK, &b, T_CERTS, &r),
	    &r);
	tv_free(&b);
	b = splice("", &m, 0, m.len - 1, NULL, 0, 0, "");
	assert_verdict(AMD_OK, chain_v(AMD_MILAN, AMD_VCEK, &b, T_CERTS, &r),
	    &r);
	tv_free(&b);
	b = splice("", &t, 0, t.len, NULL, 0, 0, "\r\n");
	assert_verdict(AMD_OK, chain_v(AMD_TURIN, AMD_VCEK, &b, T_CERTS, &r),
	    &r);
	tv_free(&b);

	b = splice("AMD KDS\n", &m, 0, m.len, NULL, 0, 0, "");
	assert_layout(AMD_MILAN, &b, "text before the ASK");
	tv_free(&b);
	b = splice("\n", &m, 0, m.len, NULL, 0, 0, "");
	assert_layout(AMD_MILAN, &b, "text before the ASK");
	tv_free(&b);
	b = splice("", &m, 0, m.len, NULL, 0, 0, "junk\n");
	assert_layout(AMD_MILAN, &b, "text after the ARK");
	tv_free(&b);
	b = splice("", &m, 0, m.len, NULL, 0, 0, "\n\n");
	assert_layout(AMD_MILAN, &b, "text after the ARK");
	tv_free(&b);
	b = splice("", &m, 0, ark, &m, ark, m.len, "");
	assert_verdict(AMD_OK, chain_v(AMD_MILAN, AMD_VCEK, &b, T_CERTS, &r),
	    &r);
	tv_free(&b);
	b = splice("", &m, 0, ark, &m, ark - 1, m.len, "");	/* blank line */
	assert_layout(AMD_MILAN, &b, "text between the certificates");
	tv_free(&b);
	/* three blocks: the ASK again after the ARK */
	b = splice("", &m, 0, m.len, &m, 0, ark, "");
	assert_layout(AMD_MILAN, &b, "text after the ARK");
	tv_free(&b);
	/* ARK first: the layout is right, the order is not */
	b = splice("", &m, ark, m.len, &m, 0, ark, "");
	assert_int_not_equal(chain_v(AMD_MILAN, AMD_VCEK, &b, T_CERTS, &r),
	    AMD_OK);
	tv_free(&b);
	/* one ARK line ending CRLF in an LF chain; a stray CR */
	b = eols(&m, 0);
	memmove(b.p + ark + 28, b.p + ark + 27, b.len - ark - 27);
	b.p[ark + 27] = '\r';
	b.len++;
	assert_layout(AMD_MILAN, &b, "mixed or stray line ends");
	tv_free(&b);
	b = splice("", &m, 0, m.len, NULL, 0, 0, "\r");
	assert_layout(AMD_MILAN, &b, "mixed or stray line ends");
	tv_free(&b);
	tv_free(&m);
	tv_free(&t);
}

/* Is everything from `n` on whitespace? */
static int
only_ws(const struct tv_buf *b, size_t n)
{
	for (; n < b->len; n++)
		if (b->p[n] != '\n' && b->p[n] != '\r' && b->p[n] != ' ')
			return 0;
	return 1;
}

/* Every prefix of every input is refused (final whitespace aside); ASAN clean. */
static void
test_truncations(void **state)
{
	struct amd_result	 r;
	struct tv_buf		 chain = tv_load(VEC_DIR, "cert_chain_turin");
	struct tv_buf		 c = tv_load(VEC_DIR, "vcek_turin.der");
	struct tv_buf		 crl = tv_load(VEC_DIR,
	    "derived/Genoa.crl.der");
	struct tv_buf		 cut;
	size_t			 n;

	(void)state;
	for (n = 0; n < chain.len; n++) {
		cut = tv_prefix(&chain, n);
		if (chain_v(AMD_TURIN, AMD_VCEK, &cut, T_CERTS, &r) == AMD_OK &&
		    !only_ws(&chain, n))
			fail_msg("chain cut to %zu accepted", n);
		if (vek_v(AMD_TURIN, AMD_VCEK, &c, &cut, NULL, T_CERTS, &r) ==
		    AMD_OK && !only_ws(&chain, n))
			fail_msg("chain for VCEK cut to %zu accepted", n);
		tv_free(&cut);
	}
	for (n = 0; n < c.len; n++) {
		cut = tv_prefix(&c, n);
		assert_int_not_equal(vek_v(AMD_TURIN, AMD_VCEK, &cut, &chain,
		    NULL, T_CERTS, &r), AMD_OK);
		tv_free(&cut);
	}
	for (n = 0; n < crl.len; n++) {
		cut = tv_prefix(&crl, n);
		assert_int_not_equal(crl_v(AMD_GENOA, &cut, T_GENOA_CRL, &r),
		    AMD_OK);
		tv_free(&cut);
	}
	tv_free(&chain);
	tv_free(&c);
	tv_free(&crl);
}

static void
test_hostile(void **state)
{
	static const char *const junk[] = {
		"", "0", "\x30", "\x30\x80", "\x30\x82\xff\xff",
		"-----BEGIN CERTIFICATE-----",
		"-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n",
		"-----BEGIN X509 CRL-----\n", "hello",
	};
	struct amd_result	 r;
	struct tv_buf		 chain = tv_load(VEC_DIR, "cert_chain_milan");
	struct tv_buf		 c = tv_load(VEC_DIR, "vcek_milan.der");
	struct tv_buf		 b;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		b.p = (uint8_t *)(uintptr_t)junk[i];
		b.len = strlen(junk[i]) + (i == 1 ? 1 : 0);
		assert_verdict(AMD_ERR_PARSE, chain_v(AMD_MILAN, AMD_VCEK, &b,
		    T_CERTS, &r), &r);
		assert_verdict(AMD_ERR_PARSE, vek_v(AMD_MILAN, AMD_VCEK, &b,
		    &chain, NULL, T_CERTS, &r), &r);
		assert_int_not_equal(vek_v(AMD_MILAN, AMD_VCEK, &c, &b, NULL,
		    T_CERTS, &r), AMD_OK);
		assert_verdict(AMD_ERR_PARSE, crl_v(AMD_MILAN, &b, T_MILAN_CRL,
		    &r), &r);
	}
	/* Text after the ARK. */
	b.len = chain.len + 5;
	assert_non_null(b.p = malloc(b.len));
	memcpy(b.p, chain.p, chain.len);
	memcpy(b.p + chain.len, "junk\n", 5);
	assert_verdict(AMD_ERR_PARSE, chain_v(AMD_MILAN, AMD_VCEK, &b, T_CERTS,
	    &r), &r);
	tv_free(&b);
	/* Arguments. */
	assert_int_equal(amd_verify_cert_chain(AMD_PRODUCT_MAX, AMD_VCEK,
	    chain.p, chain.len, T_CERTS, &r), -1);
	assert_int_equal(amd_verify_cert_chain(AMD_MILAN, AMD_SIGNER_MAX,
	    chain.p, chain.len, T_CERTS, &r), -1);
	assert_int_equal(amd_verify_cert_chain(AMD_MILAN, AMD_VCEK, NULL, 10,
	    T_CERTS, &r), -1);
	assert_int_equal(amd_verify_cert_chain(AMD_MILAN, AMD_VCEK, chain.p,
	    AMD_MAX_BODY_BYTES + 1, T_CERTS, &r), -1);
	assert_int_equal(amd_verify_cert_chain(AMD_MILAN, AMD_VCEK, chain.p,
	    chain.len, T_CERTS, NULL), -1);
	assert_int_equal(amd_verify_vek(AMD_MILAN, AMD_VCEK, c.p, c.len, NULL,
	    0, NULL, T_CERTS, &r), -1);
	assert_int_equal(amd_verify_vek(AMD_MILAN, AMD_VCEK, NULL, 0, chain.p,
	    chain.len, NULL, T_CERTS, &r), -1);
	assert_int_equal(amd_verify_crl(AMD_PRODUCT_MAX, c.p, c.len, T_CERTS,
	    &r), -1);
	assert_int_equal(amd_verify_crl(AMD_MILAN, NULL, 0, T_CERTS, &r), -1);
	/* A certificate where a CRL belongs, and the other way round. */
	assert_verdict(AMD_ERR_PARSE, crl_v(AMD_MILAN, &c, T_CERTS, &r), &r);
	tv_free(&chain);
	tv_free(&c);
}

/* The compiled-in cert_chains verify as KDS's own do, and are AMD's bytes. */
static void
test_builtin_chains(void **state)
{
	struct amd_result	r;
	const char		*pem;
	int			p, sg;

	(void)state;
	for (p = 0; p < AMD_PRODUCT_MAX; p++)
		for (sg = 0; sg < AMD_SIGNER_MAX; sg++) {
			pem = amd_builtin_chain(p, sg);
			assert_non_null(pem);
			assert_int_equal(amd_verify_cert_chain(p, sg,
			    (const uint8_t *)pem, strlen(pem), T_CERTS, &r), 0);
			/* Another product's chain is not this one's. */
			assert_int_equal(amd_verify_cert_chain((p + 1) % AMD_PRODUCT_MAX,
			    sg, (const uint8_t *)pem, strlen(pem), T_CERTS, &r), -1);
		}
	assert_null(amd_builtin_chain(AMD_PRODUCT_MAX, AMD_VCEK));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arks_pinned),
		cmocka_unit_test(test_product_names),
		cmocka_unit_test(test_cert_chains),
		cmocka_unit_test(test_builtin_chains),
		cmocka_unit_test(test_wrong_product),
		cmocka_unit_test(test_fetched_ark),
		cmocka_unit_test(test_vceks),
		cmocka_unit_test(test_vcek_wrong_signer),
		cmocka_unit_test(test_vcek_window),
		cmocka_unit_test(test_crls),
		cmocka_unit_test(test_der_flips),
		cmocka_unit_test(test_chain_flips),
		cmocka_unit_test(test_chain_layout),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
