/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for attest/intel.c: real PCS/PCCS collateral, tampering, freshness, hostile input. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "attest/intel.h"
#include "attest/vendor_roots.h"
#include "tv.h"

#define VEC_DIR	"/tests/vectors/intel/"

/*
 * Clocks inside the vectors' windows (tests/vectors/intel/SOURCES.md):
 * the teepot PCS captures are valid 2025-05-27 .. 2025-06-26, the
 * dcap-qvl bundles 2025-06-19 .. 2025-07-19, the mobilecoin CRLs
 * 2023-04-21 .. 2023-05-21 (processor) and 2023-04-03 .. 2024-04-02 (root).
 */
#define T_TEEPOT	1748736000	/* 2025-06-01T00:00:00Z */
#define T_DCAP_QVL	1751328000	/* 2025-07-01T00:00:00Z */
#define T_2023		1682899200	/* 2023-05-01T00:00:00Z */

/* sgx_tcb_info_00906ED50000: issueDate and nextUpdate. */
#define SGX_TCB_ISSUE	1748374267	/* 2025-05-27T19:31:07Z */
#define SGX_TCB_NEXT	1750966267	/* 2025-06-26T19:31:07Z */

static struct tv_buf
cat(const char *a, const struct tv_buf *b, const char *c, const struct tv_buf *d,
    const char *e)
{
	struct tv_buf	 r;

	r.len = strlen(a) + b->len + strlen(c) + d->len + strlen(e);
	assert_non_null(r.p = malloc(r.len + 1));
	snprintf((char *)r.p, r.len + 1, "%s%.*s%s%.*s%s", a, (int)b->len,
	    (const char *)b->p, c, (int)d->len, (const char *)d->p, e);
	return r;
}

static enum intel_verdict
verify(enum intel_kind k, const struct tv_buf *body, const struct tv_buf *chain,
    time_t now, struct intel_result *r)
{
	int	 rv;

	rv = intel_verify(k, body->p, body->len,
	    chain ? (const char *)chain->p : NULL, chain ? chain->len : 0, now,
	    r);
	assert_int_equal(rv, r->verdict == INTEL_OK ? 0 : -1);
	assert_true((unsigned)r->verdict < INTEL_VERDICT_MAX);
	assert_non_null(intel_verdict_str[r->verdict]);
	return r->verdict;
}

#define assert_verdict(want, got, r) do {				\
	if ((got) != (want))						\
		fail_msg("verdict %s, want %s: %s",			\
		    intel_verdict_str[(got)], intel_verdict_str[(want)],	\
		    (r)->detail);					\
} while (0)

/* The compiled-in root is the vendor file, byte for byte. */
static void
test_root_pinned(void **state)
{
	struct tv_buf	 der = tv_load(VEC_DIR, "TrustedRootCA.der");
	X509		*x;
	uint8_t		*p = NULL;
	int		 n;

	(void)state;
	assert_non_null(x = vendor_root_x509(&intel_sgx_root_ca));
	n = i2d_X509(x, &p);
	assert_int_equal((size_t)n, der.len);
	assert_memory_equal(p, der.p, der.len);
	OPENSSL_free(p);
	X509_free(x);
	tv_free(&der);
}

/* Every real signed-JSON vector verifies, with the fields a cache needs. */
static void
test_json_vectors(void **state)
{
	static const struct {
		const char	*body, *chain;	/* derived body + encoded header */
		enum intel_kind	 kind;
		const char	*id;
		long		 eval;
	} v[] = {
		{ "derived/sgx_tcb_info_00906ED50000.body.json",
		  "derived/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt",
		  INTEL_TCB_INFO, "SGX", 17 },
		{ "derived/tdx_tcb_info.body.json",
		  "derived/tdx_tcb_info.TCB-Info-Issuer-Chain.txt",
		  INTEL_TCB_INFO, "TDX", 17 },
		{ "derived/sgx_qe_identity.body.json",
		  "derived/sgx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt",
		  INTEL_ENCLAVE_IDENTITY, "QE", 17 },
		{ "derived/tdx_qe_identity.body.json",
		  "derived/tdx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt",
		  INTEL_ENCLAVE_IDENTITY, "TD_QE", 17 },
	};
	/* teepot wrappers: raw body in one field, decoded chain in another. */
	static const struct {
		const char	*file, *key;
		enum intel_kind	 kind;
		const char	*id;
		long		 eval;
	} w[] = {
		{ "sgx_tcb_info_early.json", "tcb_info_json", INTEL_TCB_INFO,
		  "SGX", 19 },
		{ "sgx_qve_identity.json", "enclave_identity_json",
		  INTEL_ENCLAVE_IDENTITY, "QVE", 17 },
		{ "sgx_tcb_eval_nums.json", "tcb_evaluation_data_numbers_json",
		  INTEL_TCB_EVAL_NUMS, "SGX", 19 },
		{ "tdx_tcb_eval_nums.json", "tcb_evaluation_data_numbers_json",
		  INTEL_TCB_EVAL_NUMS, "TDX", 19 },
	};
	struct intel_result	 r;
	struct tv_buf		 body, chain, json;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		body = tv_load(VEC_DIR, v[i].body);
		chain = tv_load(VEC_DIR, v[i].chain);
		assert_verdict(INTEL_OK, verify(v[i].kind, &body, &chain,
		    T_TEEPOT, &r), &r);
		assert_string_equal(r.id, v[i].id);
		assert_int_equal(r.tcb_evaluation_data_number, v[i].eval);
		assert_true(r.this_update < T_TEEPOT &&
		    T_TEEPOT < r.next_update);
		/* PCS: 30-day windows. */
		assert_int_equal(r.next_update - r.this_update, 30 * 86400);
		tv_free(&body);
		tv_free(&chain);
	}
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		json = tv_load(VEC_DIR, w[i].file);
		body = tv_json_str(&json, w[i].key);
		chain = tv_json_str(&json, "issuer_chain");
		assert_verdict(INTEL_OK, verify(w[i].kind, &body, &chain,
		    T_TEEPOT, &r), &r);
		assert_string_equal(r.id, w[i].id);
		assert_int_equal(r.tcb_evaluation_data_number, w[i].eval);
		tv_free(&body);
		tv_free(&chain);
		tv_free(&json);
	}
}

/* The exact fields of one TCB info, and issueDate/nextUpdate as seconds. */
static void
test_tcb_info_fields(void **state)
{
	struct tv_buf		 body = tv_load(VEC_DIR,
	    "derived/sgx_tcb_info_00906ED50000.body.json");
	struct tv_buf		 chain = tv_load(VEC_DIR,
	    "derived/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt");
	struct intel_result	 r;

	(void)state;
	assert_verdict(INTEL_OK, verify(INTEL_TCB_INFO, &body, &chain,
	    T_TEEPOT, &r), &r);
	assert_int_equal(r.this_update, SGX_TCB_ISSUE);
	assert_int_equal(r.next_update, SGX_TCB_NEXT);
	assert_string_equal(r.fmspc, "00906ED50000");
	assert_int_equal(r.version, 3);
	assert_int_equal(r.crl_entries, -1);
	tv_free(&body);
	tv_free(&chain);
}

/*
 * dcap-qvl bundles carry the signed object and the signature apart; the
 * PCS body is rebuilt around them, and their PCK CRLs are PCCS's hex.
 */
static void
test_dcap_qvl_bundles(void **state)
{
	static const char *const files[] = {
		"sgx_quote_collateral.json", "tdx_quote_collateral.json"
	};
	static const char *const ca[] = { "processor", "platform" };
	struct intel_result	 r;
	struct tv_buf		 json, obj, sig, chain, body, crl;
	size_t			 i;

	(void)state;
	for (i = 0; i < 2; i++) {
		json = tv_load(VEC_DIR, files[i]);

		obj = tv_json_str(&json, "tcb_info");
		sig = tv_json_str(&json, "tcb_info_signature");
		chain = tv_json_str(&json, "tcb_info_issuer_chain");
		body = cat("{\"tcbInfo\":", &obj, ",\"signature\":\"", &sig,
		    "\"}");
		assert_verdict(INTEL_OK, verify(INTEL_TCB_INFO, &body, &chain,
		    T_DCAP_QVL, &r), &r);
		assert_string_equal(r.id, i == 0 ? "SGX" : "TDX");
		assert_string_equal(r.fmspc, i == 0 ? "00A067110000" :
		    "B0C06F000000");
		tv_free(&obj);
		tv_free(&sig);
		tv_free(&chain);
		tv_free(&body);

		obj = tv_json_str(&json, "qe_identity");
		sig = tv_json_str(&json, "qe_identity_signature");
		chain = tv_json_str(&json, "qe_identity_issuer_chain");
		body = cat("{\"enclaveIdentity\":", &obj, ",\"signature\":\"",
		    &sig, "\"}");
		assert_verdict(INTEL_OK, verify(INTEL_ENCLAVE_IDENTITY, &body,
		    &chain, T_DCAP_QVL, &r), &r);
		assert_string_equal(r.id, i == 0 ? "QE" : "TD_QE");
		tv_free(&obj);
		tv_free(&sig);
		tv_free(&chain);
		tv_free(&body);

		crl = tv_json_str(&json, "pck_crl");
		chain = tv_json_str(&json, "pck_crl_issuer_chain");
		assert_verdict(INTEL_OK, verify(INTEL_PCK_CRL, &crl, &chain,
		    T_DCAP_QVL, &r), &r);
		assert_int_equal(r.crl_form, INTEL_CRL_HEX);
		assert_string_equal(r.ca, ca[i]);
		tv_free(&crl);
		tv_free(&chain);

		crl = tv_json_str(&json, "root_ca_crl");
		assert_verdict(INTEL_OK, verify(INTEL_ROOT_CA_CRL, &crl, NULL,
		    T_DCAP_QVL, &r), &r);
		assert_string_equal(r.ca, "root");
		tv_free(&crl);
		tv_free(&json);
	}
}

/* PCK and root CA CRLs in every form PCS and PCCS serve. */
static void
test_crl_vectors(void **state)
{
	static const struct {
		const char		*crl, *chain;
		enum intel_kind		 kind;
		enum intel_crl_form	 form;
		const char		*ca;
		time_t			 now;
	} v[] = {
		{ "derived/pckcrl_processor.der",
		  "derived/pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt",
		  INTEL_PCK_CRL, INTEL_CRL_DER, "processor", T_TEEPOT },
		{ "derived/pckcrl_platform.der",
		  "derived/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt",
		  INTEL_PCK_CRL, INTEL_CRL_DER, "platform", T_TEEPOT },
		{ "derived/pckcrl_platform.pem",
		  "derived/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt",
		  INTEL_PCK_CRL, INTEL_CRL_PEM, "platform", T_TEEPOT },
		/* 2023 CRL, same Processor CA as the 2025 chain. */
		{ "processor_crl.pem",
		  "derived/pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt",
		  INTEL_PCK_CRL, INTEL_CRL_PEM, "processor", T_2023 },
		{ "derived/IntelSGXRootCA.crl.der", NULL, INTEL_ROOT_CA_CRL,
		  INTEL_CRL_DER, "root", T_DCAP_QVL },
		{ "derived/IntelSGXRootCA.crl.hex", NULL, INTEL_ROOT_CA_CRL,
		  INTEL_CRL_HEX, "root", T_DCAP_QVL },
		{ "root_crl.pem", NULL, INTEL_ROOT_CA_CRL, INTEL_CRL_PEM,
		  "root", T_2023 },
	};
	struct intel_result	 r;
	struct tv_buf		 crl, chain, json;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		crl = tv_load(VEC_DIR, v[i].crl);
		chain.p = NULL;
		chain.len = 0;
		if (v[i].chain != NULL)
			chain = tv_load(VEC_DIR, v[i].chain);
		assert_verdict(INTEL_OK, verify(v[i].kind, &crl,
		    v[i].chain ? &chain : NULL, v[i].now, &r), &r);
		assert_int_equal(r.crl_form, v[i].form);
		assert_string_equal(r.ca, v[i].ca);
		assert_true(r.crl_entries >= 0);
		tv_free(&crl);
		tv_free(&chain);
	}
	/* pckcrl?ca=platform lists 44 revoked PCK certificates. */
	crl = tv_load(VEC_DIR, "derived/pckcrl_platform.der");
	chain = tv_load(VEC_DIR,
	    "derived/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt");
	assert_verdict(INTEL_OK, verify(INTEL_PCK_CRL, &crl, &chain, T_TEEPOT,
	    &r), &r);
	assert_int_equal(r.crl_entries, 44);
	tv_free(&crl);
	tv_free(&chain);

	/* The PEM body PCS serves by default, with its decoded chain. */
	json = tv_load(VEC_DIR, "pck_crl_processor.json");
	crl = tv_json_str(&json, "crl_data");
	chain = tv_json_str(&json, "issuer_chain");
	assert_verdict(INTEL_OK, verify(INTEL_PCK_CRL, &crl, &chain, T_TEEPOT,
	    &r), &r);
	assert_int_equal(r.crl_form, INTEL_CRL_PEM);
	tv_free(&crl);
	tv_free(&chain);
	tv_free(&json);
}

/* Each form converts to the DER that PCS serves with encoding=der. */
static void
test_crl_to_der(void **state)
{
	struct tv_buf	 hex = tv_load(VEC_DIR,
	    "derived/IntelSGXRootCA.crl.hex");
	struct tv_buf	 der = tv_load(VEC_DIR,
	    "derived/IntelSGXRootCA.crl.der");
	struct tv_buf	 pem = tv_load(VEC_DIR, "derived/pckcrl_platform.pem");
	struct tv_buf	 pder = tv_load(VEC_DIR, "derived/pckcrl_platform.der");
	uint8_t		*out;
	size_t		 n = 0;

	(void)state;
	assert_non_null(out = intel_crl_to_der(hex.p, hex.len, &n));
	assert_int_equal(n, der.len);
	assert_memory_equal(out, der.p, n);
	free(out);
	assert_non_null(out = intel_crl_to_der(pem.p, pem.len, &n));
	assert_int_equal(n, pder.len);
	assert_memory_equal(out, pder.p, n);
	free(out);
	assert_non_null(out = intel_crl_to_der(der.p, der.len, &n));
	assert_memory_equal(out, der.p, n);
	free(out);
	assert_null(intel_crl_to_der((const uint8_t *)"zz", 2, &n));
	assert_null(intel_crl_to_der(hex.p, hex.len - 1, &n));
	tv_free(&hex);
	tv_free(&der);
	tv_free(&pem);
	tv_free(&pder);
}

/*
 * The PCK chain embedded in a real quote (cert type 5: leaf, PCK CA,
 * root), split at test time into the pckcert body and its header.
 */
static void
pck_from_quote(const char *file, struct tv_buf *leaf, struct tv_buf *chain)
{
	static const char	 end[] = "-----END CERTIFICATE-----";
	struct tv_buf		 q = tv_load(VEC_DIR, file);
	const char		*s, *e, *last = NULL, *p;

	assert_non_null(s = memmem(q.p, q.len, "-----BEGIN CERTIFICATE-----",
	    27));
	assert_non_null(e = memmem(s, q.len - (size_t)(s - (char *)q.p), end,
	    sizeof(end) - 1));
	e += sizeof(end) - 1;
	for (p = e; (p = memmem(p, q.len - (size_t)(p - (char *)q.p), end,
	    sizeof(end) - 1)) != NULL; p += sizeof(end) - 1)
		last = p + sizeof(end) - 1;
	assert_non_null(last);
	leaf->len = (size_t)(e - s);
	assert_non_null(leaf->p = malloc(leaf->len + 1));
	memcpy(leaf->p, s, leaf->len);
	leaf->p[leaf->len] = '\0';
	while (*e == '\n')
		e++;
	chain->len = (size_t)(last - e);
	assert_non_null(chain->p = malloc(chain->len + 1));
	memcpy(chain->p, e, chain->len);
	chain->p[chain->len] = '\0';
	tv_free(&q);
}

static void
test_pck_cert(void **state)
{
	struct intel_result	 r;
	struct tv_buf		 leaf, chain, other_leaf, other_chain;

	(void)state;
	pck_from_quote("sgx_quote", &leaf, &chain);
	assert_verdict(INTEL_OK, verify(INTEL_PCK_CERT, &leaf, &chain,
	    T_DCAP_QVL, &r), &r);
	assert_string_equal(r.ca, "processor");
	assert_true(r.next_update > T_DCAP_QVL);	/* notAfter 2030 */

	pck_from_quote("tdx_quote", &other_leaf, &other_chain);
	assert_verdict(INTEL_OK, verify(INTEL_PCK_CERT, &other_leaf,
	    &other_chain, T_DCAP_QVL, &r), &r);
	assert_string_equal(r.ca, "platform");

	/* A Processor-CA leaf with the Platform CA's chain does not chain. */
	assert_verdict(INTEL_ERR_CHAIN, verify(INTEL_PCK_CERT, &leaf,
	    &other_chain, T_DCAP_QVL, &r), &r);
	/* Without its header it cannot be judged. */
	assert_verdict(INTEL_ERR_ISSUER_CHAIN, verify(INTEL_PCK_CERT, &leaf,
	    NULL, T_DCAP_QVL, &r), &r);
	/* Before the leaf's notBefore (2023-09-20) the chain fails. */
	assert_verdict(INTEL_ERR_CHAIN, verify(INTEL_PCK_CERT, &leaf, &chain,
	    T_2023, &r), &r);
	tv_free(&leaf);
	tv_free(&chain);
	tv_free(&other_leaf);
	tv_free(&other_chain);
}

/* A byte flipped in the signed object, or in the signature: refused. */
static void
test_body_tamper(void **state)
{
	struct tv_buf		 body = tv_load(VEC_DIR,
	    "derived/sgx_tcb_info_00906ED50000.body.json");
	struct tv_buf		 chain = tv_load(VEC_DIR,
	    "derived/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt");
	struct intel_result	 r;
	char			*p;

	(void)state;
	/* "pceId":"0000" -> "0001": inside the signed tcbInfo. */
	assert_non_null(p = strstr((char *)body.p, "\"pceId\":\"0000\""));
	p[12] = '1';
	assert_verdict(INTEL_ERR_SIGNATURE, verify(INTEL_TCB_INFO, &body,
	    &chain, T_TEEPOT, &r), &r);
	p[12] = '0';
	/* One hex digit of s. */
	assert_non_null(p = strstr((char *)body.p, "\"signature\":\""));
	p += strlen("\"signature\":\"") + 100;
	*p = *p == '0' ? '1' : '0';
	assert_verdict(INTEL_ERR_SIGNATURE, verify(INTEL_TCB_INFO, &body,
	    &chain, T_TEEPOT, &r), &r);
	tv_free(&body);
	tv_free(&chain);
}

/* Every single-byte flip anywhere in a body is refused (and never crashes). */
static void
test_body_flips(void **state)
{
	struct tv_buf		 body = tv_load(VEC_DIR,
	    "derived/sgx_qe_identity.body.json");
	struct tv_buf		 chain = tv_load(VEC_DIR,
	    "derived/sgx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt");
	struct tv_buf		 crl = tv_load(VEC_DIR,
	    "derived/pckcrl_processor.der");
	struct tv_buf		 cchain = tv_load(VEC_DIR,
	    "derived/pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt");
	struct intel_result	 r;
	size_t			 i;

	(void)state;
	for (i = 0; i < body.len; i++) {
		body.p[i] ^= 0x01;
		if (verify(INTEL_ENCLAVE_IDENTITY, &body, &chain, T_TEEPOT,
		    &r) == INTEL_OK)
			fail_msg("flip at %zu accepted", i);
		body.p[i] ^= 0x01;
	}
	for (i = 0; i < crl.len; i++) {
		crl.p[i] ^= 0x01;
		if (verify(INTEL_PCK_CRL, &crl, &cchain, T_TEEPOT, &r) ==
		    INTEL_OK)
			fail_msg("CRL flip at %zu accepted", i);
		crl.p[i] ^= 0x01;
	}
	tv_free(&body);
	tv_free(&chain);
	tv_free(&crl);
	tv_free(&cchain);
}

/* PEM of a stack, for rebuilding a chain from tampered DER. */
static struct tv_buf
pem_of(STACK_OF(X509) *sk)
{
	BIO	*bio;
	int	 i;

	assert_non_null(bio = BIO_new(BIO_s_mem()));
	for (i = 0; i < sk_X509_num(sk); i++)
		assert_int_equal(PEM_write_bio_X509(bio, sk_X509_value(sk, i)),
		    1);
	return tv_bio_take(bio);
}

/*
 * A flipped byte in the chain: at the DER level every flip in the signer
 * and in the root copy is refused; at the header level every flip is
 * refused except those in a base64 digit's unused low bits (the digit
 * before '=' padding), which do not change the certificate.
 */
static void
test_chain_flips(void **state)
{
	struct tv_buf		 json = tv_load(VEC_DIR,
	    "sgx_qve_identity.json");
	struct tv_buf		 body = tv_json_str(&json, "enclave_identity_json");
	struct tv_buf		 pem = tv_json_str(&json, "issuer_chain");
	struct tv_buf		 hdr = tv_load(VEC_DIR,
	    "derived/sgx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt");
	struct tv_buf		 qe = tv_load(VEC_DIR,
	    "derived/sgx_qe_identity.body.json");
	struct tv_buf		 tampered;
	STACK_OF(X509)		*sk;
	const char		*why;
	struct intel_result	 r;
	uint8_t			*der;
	X509			*x;
	size_t			 i;
	int			 c, n, ok;

	(void)state;
	assert_non_null(sk = vendor_pem_certs(pem.p, pem.len, 4, &why));
	assert_int_equal(sk_X509_num(sk), 2);
	for (c = 0; c < 2; c++) {
		der = NULL;
		n = i2d_X509(sk_X509_value(sk, c), &der);
		assert_true(n > 0);
		for (i = 0; i < (size_t)n; i += (c == 0 ? 1 : 3)) {
			STACK_OF(X509)	*t;

			if ((x = tv_x509_flipped(der, (size_t)n, i)) == NULL)
				continue;	/* no longer a certificate */
			assert_non_null(t = sk_X509_dup(sk));
			(void)sk_X509_set(t, c, x);
			tampered = pem_of(t);
			sk_X509_free(t);
			X509_free(x);
			if (verify(INTEL_ENCLAVE_IDENTITY, &body, &tampered,
			    T_TEEPOT, &r) == INTEL_OK)
				fail_msg("cert %d flip at %zu accepted", c, i);
			assert_true(r.verdict == INTEL_ERR_CHAIN ||
			    r.verdict == INTEL_ERR_SIGNER ||
			    r.verdict == INTEL_ERR_ISSUER_CHAIN);
			tv_free(&tampered);
		}
		OPENSSL_free(der);
	}
	sk_X509_pop_free(sk, X509_free);

	/* The percent-encoded header, byte by byte. */
	ok = 0;
	for (i = 0; i < hdr.len; i++) {
		hdr.p[i] ^= 0x01;
		if (verify(INTEL_ENCLAVE_IDENTITY, &qe, &hdr, T_TEEPOT, &r) ==
		    INTEL_OK) {
			if (i + 3 >= hdr.len ||
			    memcmp(hdr.p + i + 1, "%3D", 3) != 0)
				fail_msg("header flip at %zu accepted", i);
			ok++;
		}
		hdr.p[i] ^= 0x01;
	}
	assert_true(ok <= 4);
	tv_free(&json);
	tv_free(&body);
	tv_free(&pem);
	tv_free(&hdr);
	tv_free(&qe);
}

/* A root copy in the header that is not the pinned root, and no chain. */
static void
test_chain_root_and_signer(void **state)
{
	struct tv_buf		 body = tv_load(VEC_DIR,
	    "derived/sgx_tcb_info_00906ED50000.body.json");
	struct tv_buf		 chain = tv_load(VEC_DIR,
	    "derived/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt");
	struct tv_buf		 crlchain = tv_load(VEC_DIR,
	    "derived/pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt");
	struct tv_buf		 rootpem = { (uint8_t *)(uintptr_t)
	    intel_sgx_root_ca.pem, strlen(intel_sgx_root_ca.pem) };
	struct tv_buf		 crl = tv_load(VEC_DIR,
	    "derived/pckcrl_processor.der");
	struct tv_buf		 rcrl = tv_load(VEC_DIR,
	    "derived/IntelSGXRootCA.crl.der");
	struct intel_result	 r;

	(void)state;
	assert_verdict(INTEL_ERR_ISSUER_CHAIN, verify(INTEL_TCB_INFO, &body,
	    NULL, T_TEEPOT, &r), &r);
	/* Signed by the TCB signing key only: a PCK CA chain is the wrong signer. */
	assert_verdict(INTEL_ERR_SIGNER, verify(INTEL_TCB_INFO, &body,
	    &crlchain, T_TEEPOT, &r), &r);
	/* The root alone is no TCB signer either. */
	assert_verdict(INTEL_ERR_SIGNER, verify(INTEL_TCB_INFO, &body,
	    &rootpem, T_TEEPOT, &r), &r);
	/* A PCK CRL with the TCB-signing chain: wrong signer. */
	assert_verdict(INTEL_ERR_SIGNER, verify(INTEL_PCK_CRL, &crl, &chain,
	    T_TEEPOT, &r), &r);
	/* The root CA CRL is not a PCK CRL, and vice versa. */
	assert_verdict(INTEL_ERR_SIGNER, verify(INTEL_PCK_CRL, &rcrl,
	    &rootpem, T_DCAP_QVL, &r), &r);
	assert_verdict(INTEL_ERR_SIGNER, verify(INTEL_ROOT_CA_CRL, &crl, NULL,
	    T_TEEPOT, &r), &r);
	tv_free(&body);
	tv_free(&chain);
	tv_free(&crlchain);
	tv_free(&crl);
	tv_free(&rcrl);
}

/* nextUpdate <= now is expired; issueDate beyond the skew is future. */
static void
test_freshness(void **state)
{
	struct tv_buf		 body = tv_load(VEC_DIR,
	    "derived/sgx_tcb_info_00906ED50000.body.json");
	struct tv_buf		 chain = tv_load(VEC_DIR,
	    "derived/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt");
	struct tv_buf		 crl = tv_load(VEC_DIR,
	    "derived/pckcrl_processor.der");
	struct tv_buf		 cchain = tv_load(VEC_DIR,
	    "derived/pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt");
	struct intel_result	 r;

	(void)state;
	assert_verdict(INTEL_OK, verify(INTEL_TCB_INFO, &body, &chain,
	    SGX_TCB_NEXT - 1, &r), &r);
	assert_verdict(INTEL_ERR_EXPIRED, verify(INTEL_TCB_INFO, &body,
	    &chain, SGX_TCB_NEXT, &r), &r);
	assert_verdict(INTEL_ERR_EXPIRED, verify(INTEL_TCB_INFO, &body,
	    &chain, SGX_TCB_NEXT + 86400, &r), &r);
	assert_verdict(INTEL_OK, verify(INTEL_TCB_INFO, &body, &chain,
	    SGX_TCB_ISSUE - INTEL_SKEW_S, &r), &r);
	assert_verdict(INTEL_ERR_FUTURE, verify(INTEL_TCB_INFO, &body,
	    &chain, SGX_TCB_ISSUE - INTEL_SKEW_S - 1, &r), &r);
	/* A CRL after its nextUpdate (2025-06-26). */
	assert_verdict(INTEL_ERR_EXPIRED, verify(INTEL_PCK_CRL, &crl, &cchain,
	    T_DCAP_QVL, &r), &r);
	tv_free(&body);
	tv_free(&chain);
	tv_free(&crl);
	tv_free(&cchain);
}

/* early (eval 19) is never replaced by standard (eval 17); newer replaces. */
static void
test_eval_number_order(void **state)
{
	struct tv_buf		 early_json = tv_load(VEC_DIR,
	    "sgx_tcb_info_early.json");
	struct tv_buf		 early = tv_json_str(&early_json, "tcb_info_json");
	struct tv_buf		 echain = tv_json_str(&early_json, "issuer_chain");
	struct tv_buf		 std = tv_load(VEC_DIR,
	    "derived/sgx_tcb_info_00906ED50000.body.json");
	struct tv_buf		 schain = tv_load(VEC_DIR,
	    "derived/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt");
	struct intel_result	 e, s, older, bad;

	(void)state;
	assert_verdict(INTEL_OK, verify(INTEL_TCB_INFO, &early, &echain,
	    T_TEEPOT, &e), &e);
	assert_verdict(INTEL_OK, verify(INTEL_TCB_INFO, &std, &schain,
	    T_TEEPOT, &s), &s);
	assert_int_equal(e.tcb_evaluation_data_number, 19);
	assert_int_equal(s.tcb_evaluation_data_number, 17);
	assert_string_equal(e.fmspc, s.fmspc);
	assert_int_equal(intel_may_replace(&e, &s), 0);
	assert_int_equal(intel_may_replace(&s, &e), 1);
	assert_int_equal(intel_may_replace(&s, &s), 1);
	/* Same number, earlier issueDate: older, refused. */
	older = s;
	older.this_update -= 86400;
	assert_int_equal(intel_may_replace(&s, &older), 0);
	assert_int_equal(intel_may_replace(&older, &s), 1);
	/* A failed verification never replaces; nothing stored: anything does. */
	assert_verdict(INTEL_ERR_EXPIRED, verify(INTEL_TCB_INFO, &std, &schain,
	    SGX_TCB_NEXT, &bad), &bad);
	assert_int_equal(intel_may_replace(&s, &bad), 0);
	assert_int_equal(intel_may_replace(NULL, &s), 1);
	tv_free(&early_json);
	tv_free(&early);
	tv_free(&echain);
	tv_free(&std);
	tv_free(&schain);
}

/* The signed span is found in the raw text: whitespace around it is fine. */
static void
test_json_shapes(void **state)
{
	struct tv_buf		 body = tv_load(VEC_DIR,
	    "derived/sgx_qe_identity.body.json");
	struct tv_buf		 chain = tv_load(VEC_DIR,
	    "derived/sgx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt");
	struct tv_buf		 obj, sig, b;
	struct intel_result	 r;
	char			*s, *e;

	(void)state;
	/* Split the real body into its object and signature. */
	s = (char *)body.p + strlen("{\"enclaveIdentity\":");
	assert_non_null(e = strstr(s, ",\"signature\":\""));
	obj.p = (uint8_t *)s;
	obj.len = (size_t)(e - s);
	sig.p = (uint8_t *)e + strlen(",\"signature\":\"");
	sig.len = body.len - (size_t)(sig.p - body.p) - 2;

	b = cat(" {\n \"enclaveIdentity\" :\t", &obj, " ,\r\n\"signature\" : \"",
	    &sig, "\" }\n");
	assert_verdict(INTEL_OK, verify(INTEL_ENCLAVE_IDENTITY, &b, &chain,
	    T_TEEPOT, &r), &r);
	tv_free(&b);
	/* Signature first is still one object with the same members. */
	b = cat("{\"signature\":\"", &sig, "\",\"enclaveIdentity\":", &obj,
	    "}");
	assert_verdict(INTEL_OK, verify(INTEL_ENCLAVE_IDENTITY, &b, &chain,
	    T_TEEPOT, &r), &r);
	tv_free(&b);
	/* A duplicate member could be read either way by a client: refused. */
	b = cat("{\"enclaveIdentity\":{},\"enclaveIdentity\":", &obj,
	    ",\"signature\":\"", &sig, "\"}");
	assert_verdict(INTEL_ERR_PARSE, verify(INTEL_ENCLAVE_IDENTITY, &b,
	    &chain, T_TEEPOT, &r), &r);
	tv_free(&b);
	/* Unsigned extra members would be served as-is: refused. */
	b = cat("{\"enclaveIdentity\":", &obj, ",\"signature\":\"", &sig,
	    "\",\"extra\":1}");
	assert_verdict(INTEL_ERR_PARSE, verify(INTEL_ENCLAVE_IDENTITY, &b,
	    &chain, T_TEEPOT, &r), &r);
	tv_free(&b);
	/* Trailing bytes after the object. */
	b = cat("{\"enclaveIdentity\":", &obj, ",\"signature\":\"", &sig,
	    "\"}x");
	assert_verdict(INTEL_ERR_PARSE, verify(INTEL_ENCLAVE_IDENTITY, &b,
	    &chain, T_TEEPOT, &r), &r);
	tv_free(&b);
	/* Asked for TCB info, got an identity. */
	assert_verdict(INTEL_ERR_PARSE, verify(INTEL_TCB_INFO, &body, &chain,
	    T_TEEPOT, &r), &r);
	assert_verdict(INTEL_ERR_PARSE, verify(INTEL_TCB_EVAL_NUMS, &body,
	    &chain, T_TEEPOT, &r), &r);
	/* A short signature. */
	sig.len -= 2;
	b = cat("{\"enclaveIdentity\":", &obj, ",\"signature\":\"", &sig,
	    "\"}");
	assert_verdict(INTEL_ERR_SIGNATURE, verify(INTEL_ENCLAVE_IDENTITY, &b,
	    &chain, T_TEEPOT, &r), &r);
	tv_free(&b);
	tv_free(&body);
	tv_free(&chain);
}

/* Is everything from `n` on a line break, raw or percent-encoded? */
static int
only_newlines(const struct tv_buf *b, size_t n)
{
	while (n < b->len) {
		if (b->p[n] == '\n' || b->p[n] == '\r')
			n++;
		else if (b->len - n >= 3 && (memcmp(b->p + n, "%0A", 3) == 0 ||
		    memcmp(b->p + n, "%0D", 3) == 0))
			n += 3;
		else
			return 0;
	}
	return 1;
}

/*
 * Prefixes of every input shape: refused unless only a final line break
 * was cut, and never a crash (run under ASAN).
 */
static void
test_truncations(void **state)
{
	static const struct {
		const char	*body, *chain;
		enum intel_kind	 kind;
	} v[] = {
		{ "derived/sgx_qe_identity.body.json",
		  "derived/sgx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt",
		  INTEL_ENCLAVE_IDENTITY },
		{ "derived/pckcrl_processor.der",
		  "derived/pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt",
		  INTEL_PCK_CRL },
		{ "derived/pckcrl_platform.pem",
		  "derived/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt",
		  INTEL_PCK_CRL },
		{ "derived/IntelSGXRootCA.crl.hex",
		  "derived/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt",
		  INTEL_ROOT_CA_CRL },
	};
	struct intel_result	 r;
	struct tv_buf		 body, chain, cut;
	size_t			 i, n;
	time_t			 now;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		body = tv_load(VEC_DIR, v[i].body);
		chain = tv_load(VEC_DIR, v[i].chain);
		now = v[i].kind == INTEL_ROOT_CA_CRL ? T_DCAP_QVL : T_TEEPOT;
		assert_verdict(INTEL_OK, verify(v[i].kind, &body, &chain, now,
		    &r), &r);
		for (n = 0; n < body.len; n++) {
			/* A copy of exactly n bytes, so ASAN sees overreads. */
			cut = tv_prefix(&body, n);
			if (verify(v[i].kind, &cut, &chain, now, &r) ==
			    INTEL_OK && !only_newlines(&body, n))
				fail_msg("%s cut to %zu accepted", v[i].body, n);
			tv_free(&cut);
		}
		for (n = 0; n < chain.len; n++) {
			cut = tv_prefix(&chain, n);
			/* The root CA CRL does not use the chain. */
			if (verify(v[i].kind, &body, &cut, now, &r) == INTEL_OK &&
			    v[i].kind != INTEL_ROOT_CA_CRL &&
			    !only_newlines(&chain, n))
				fail_msg("%s chain cut to %zu accepted",
				    v[i].body, n);
			tv_free(&cut);
		}
		tv_free(&body);
		tv_free(&chain);
	}
}

static void
test_hostile(void **state)
{
	static const char *const bodies[] = {
		"", "{", "}", "[]", "null", "\"tcbInfo\"", "{\"tcbInfo\"",
		"{\"tcbInfo\":}", "{\"tcbInfo\":{},\"signature\":\"\"}",
		"{\"tcbInfo\":{\"issueDate\":\"2025-02-30T00:00:00Z\"},"
		    "\"signature\":\"00\"}",
		"{\"tcbInfo\":{\"issueDate\":\"x\",\"nextUpdate\":1},"
		    "\"signature\":\"00\"}",
		"{\"tcbInfo\":\"\\u12\"}", "{\"tcbInfo\":\"\x01\"}",
		"{\"tcbInfo\":-,\"signature\":1e}", "-----BEGIN X509 CRL-----",
		"0", "00", "3082", "\x30\x82\xff\xff",
	};
	struct intel_result	 r;
	struct tv_buf		 b, chain = tv_load(VEC_DIR,
	    "derived/sgx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt");
	char			*deep;
	size_t			 i;
	int			 k;

	(void)state;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		b.p = (uint8_t *)(uintptr_t)bodies[i];
		b.len = strlen(bodies[i]);
		for (k = 0; k < INTEL_KIND_MAX; k++)
			assert_int_not_equal(verify((enum intel_kind)k, &b,
			    &chain, T_TEEPOT, &r), INTEL_OK);
	}
	/* Nesting beyond INTEL_MAX_JSON_DEPTH is refused without recursion blowup. */
	assert_non_null(deep = malloc(200001));
	deep[0] = '{';
	memcpy(deep + 1, "\"tcbInfo\":", 10);
	memset(deep + 11, '[', 199990);
	deep[200000] = '\0';
	b.p = (uint8_t *)deep;
	b.len = 200000;
	assert_verdict(INTEL_ERR_PARSE, verify(INTEL_TCB_INFO, &b, &chain,
	    T_TEEPOT, &r), &r);
	free(deep);
	/* Arguments. */
	assert_int_equal(intel_verify(INTEL_TCB_INFO, NULL, 5, NULL, 0, 0, &r),
	    -1);
	assert_int_equal(intel_verify(INTEL_KIND_MAX, (const uint8_t *)"{}", 2,
	    NULL, 0, 0, &r), -1);
	assert_int_equal(intel_verify(INTEL_TCB_INFO, (const uint8_t *)"{}",
	    INTEL_MAX_BODY_BYTES + 1, NULL, 0, 0, &r), -1);
	assert_int_equal(intel_verify(INTEL_TCB_INFO, (const uint8_t *)"{}", 2,
	    NULL, 0, 0, NULL), -1);
	/* Bad percent-encoding, non-PEM text, too many certificates. */
	b = tv_load(VEC_DIR, "derived/sgx_qe_identity.body.json");
	{
		struct tv_buf	 h;

		h.p = (uint8_t *)(uintptr_t)"%4";
		h.len = 2;
		assert_verdict(INTEL_ERR_ISSUER_CHAIN, verify(
		    INTEL_ENCLAVE_IDENTITY, &b, &h, T_TEEPOT, &r), &r);
		h.p = (uint8_t *)(uintptr_t)"hello";
		h.len = 5;
		assert_verdict(INTEL_ERR_ISSUER_CHAIN, verify(
		    INTEL_ENCLAVE_IDENTITY, &b, &h, T_TEEPOT, &r), &r);
		h = cat("", &chain, "", &chain, "");
		assert_true(h.len < INTEL_MAX_CHAIN_BYTES);
		{
			struct tv_buf	 h3 = cat("", &h, "", &chain, "");

			assert_verdict(INTEL_ERR_ISSUER_CHAIN, verify(
			    INTEL_ENCLAVE_IDENTITY, &b, &h3, T_TEEPOT, &r), &r);
			tv_free(&h3);
		}
		/* Four certificates (signer, root, signer, root): not the path. */
		assert_verdict(INTEL_ERR_CHAIN, verify(INTEL_ENCLAVE_IDENTITY, &b, &h,
		    T_TEEPOT, &r), &r);
		tv_free(&h);
	}
	tv_free(&b);
	tv_free(&chain);
}

/* ---- single-byte flips in the DER of certificates and CRLs ----------------- */

/* The bytes of the PEM blocks of `pem` (labels as given), as sent. */
static size_t
pem_ders(const struct tv_buf *pem, struct tv_buf *der, size_t max)
{
	BIO		*bio;
	char		*name, *header;
	uint8_t		*data;
	long		 n;
	size_t		 k = 0;

	assert_non_null(bio = BIO_new_mem_buf(pem->p, (int)pem->len));
	while (PEM_read_bio(bio, &name, &header, &data, &n) == 1) {
		assert_true(k < max);
		assert_non_null(der[k].p = malloc((size_t)n + 1));
		memcpy(der[k].p, data, (size_t)n);
		der[k++].len = (size_t)n;
		OPENSSL_free(name);
		OPENSSL_free(header);
		OPENSSL_free(data);
	}
	ERR_clear_error();
	BIO_free(bio);
	return k;
}

/* Raw bytes as PEM blocks labelled `label`: never a parsed re-encoding. */
static struct tv_buf
ders_pem(const struct tv_buf *der, size_t n, const char *label)
{
	BIO	*bio;
	size_t	 k;

	assert_non_null(bio = BIO_new(BIO_s_mem()));
	for (k = 0; k < n; k++)
		assert_true(PEM_write_bio(bio, label, "", der[k].p,
		    (long)der[k].len) > 0);
	return tv_bio_take(bio);
}

/* PCCS's form: the DER as upper-case hex. */
static struct tv_buf
hex_of(const struct tv_buf *der)
{
	struct tv_buf	 b;
	size_t		 i;

	b.len = der->len * 2;
	assert_non_null(b.p = malloc(b.len + 1));
	for (i = 0; i < der->len; i++)
		snprintf((char *)b.p + 2 * i, 3, "%02X", der->p[i]);
	return b;
}

enum form { AS_DER, AS_PEM, AS_HEX };

/* Is `der`, sent in `form`, accepted as `kind` with `chain` at `now`? */
static int
accepted_as(enum intel_kind k, const struct tv_buf *der, enum form form,
    const struct tv_buf *chain, time_t now)
{
	struct intel_result	 r;
	struct tv_buf		 body;
	int			 ok;

	if (form == AS_DER)
		return verify(k, der, chain, now, &r) == INTEL_OK;
	body = form == AS_HEX ? hex_of(der) : ders_pem(der, 1,
	    k == INTEL_PCK_CERT ? "CERTIFICATE" : "X509 CRL");
	ok = verify(k, &body, chain, now, &r) == INTEL_OK;
	tv_free(&body);
	return ok;
}

/*
 * The bytes of `der` tv_flip_marks picks (every header octet, a sample of
 * the rest), each flipped in turn: accepted unchanged, never flipped.
 */
static void
flips(const char *what, enum intel_kind k, struct tv_buf *der, enum form form,
    const struct tv_buf *chain, time_t now)
{
	uint8_t	*marks;
	size_t	 i;

	if (!accepted_as(k, der, form, chain, now))
		fail_msg("%s: refused unchanged", what);
	assert_non_null(marks = malloc(der->len));
	(void)tv_flip_marks(der->p, der->len, marks);
	for (i = 0; i < der->len; i++) {
		if (!marks[i])
			continue;
		der->p[i] ^= 0x01;
		if (accepted_as(k, der, form, chain, now))
			fail_msg("%s: flip at %zu accepted", what, i);
		der->p[i] ^= 0x01;
	}
	free(marks);
}

/*
 * A PCK certificate (as DER and as PEM) and CRLs in every form: one
 * flipped byte anywhere, the unsigned outer signatureAlgorithm included,
 * is never accepted.
 */
static void
test_der_flips(void **state)
{
	struct tv_buf	 leaf, chain, der[2], crl, pem;

	(void)state;
	pck_from_quote("sgx_quote", &leaf, &chain);
	assert_int_equal(pem_ders(&leaf, der, 1), 1);
	flips("PCK certificate DER", INTEL_PCK_CERT, &der[0], AS_DER, &chain,
	    T_DCAP_QVL);
	flips("PCK certificate PEM", INTEL_PCK_CERT, &der[0], AS_PEM, &chain,
	    T_DCAP_QVL);
	tv_free(&der[0]);
	tv_free(&leaf);
	tv_free(&chain);

	crl = tv_load(VEC_DIR, "derived/IntelSGXRootCA.crl.der");
	flips("root CA CRL DER", INTEL_ROOT_CA_CRL, &crl, AS_DER, NULL,
	    T_DCAP_QVL);
	flips("root CA CRL hex", INTEL_ROOT_CA_CRL, &crl, AS_HEX, NULL,
	    T_DCAP_QVL);
	tv_free(&crl);

	pem = tv_load(VEC_DIR, "root_crl.pem");
	assert_int_equal(pem_ders(&pem, der, 1), 1);
	flips("2023 root CA CRL PEM", INTEL_ROOT_CA_CRL, &der[0], AS_PEM, NULL,
	    T_2023);
	tv_free(&der[0]);
	tv_free(&pem);

	crl = tv_load(VEC_DIR, "derived/pckcrl_platform.der");
	chain = tv_load(VEC_DIR,
	    "derived/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt");
	flips("platform CRL PEM", INTEL_PCK_CRL, &crl, AS_PEM, &chain,
	    T_TEEPOT);
	tv_free(&crl);
	tv_free(&chain);
}

/*
 * The issuer chain rebuilt from its certificates' own bytes with one of
 * them flipped: never accepted (test_chain_flips goes through OpenSSL's
 * re-encoding; this does not).
 */
static void
test_chain_der_flips(void **state)
{
	struct tv_buf		 json = tv_load(VEC_DIR,
	    "pck_crl_processor.json");
	struct tv_buf		 body = tv_json_str(&json, "crl_data");
	struct tv_buf		 pem = tv_json_str(&json, "issuer_chain");
	struct tv_buf		 der[INTEL_MAX_CHAIN_CERTS], chain;
	struct intel_result	 r;
	size_t			 n, k, i;

	(void)state;
	n = pem_ders(&pem, der, INTEL_MAX_CHAIN_CERTS);
	assert_int_equal(n, 2);
	chain = ders_pem(der, n, "CERTIFICATE");
	assert_verdict(INTEL_OK, verify(INTEL_PCK_CRL, &body, &chain, T_TEEPOT,
	    &r), &r);
	tv_free(&chain);
	for (k = 0; k < n; k++)
		for (i = 0; i < der[k].len; i++) {
			der[k].p[i] ^= 0x01;
			chain = ders_pem(der, n, "CERTIFICATE");
			der[k].p[i] ^= 0x01;
			if (verify(INTEL_PCK_CRL, &body, &chain, T_TEEPOT, &r) ==
			    INTEL_OK)
				fail_msg("chain certificate %zu: flip at %zu "
				    "accepted", k + 1, i);
			tv_free(&chain);
		}
	for (k = 0; k < n; k++)
		tv_free(&der[k]);
	tv_free(&pem);
	tv_free(&body);
	tv_free(&json);
}

/* ecdsa-with-SHA256, the AlgorithmIdentifier Intel signs with. */
static const uint8_t	ecdsa_sha256[] = {
	0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02
};

/*
 * `der` with its last ecdsa-with-SHA256 (the outer, unsigned copy) made
 * ecdsa-with-SHA384: same length, another algorithm than the signed one.
 */
static void
outer_to_sha384(struct tv_buf *der)
{
	size_t	 i, at = der->len, n = sizeof(ecdsa_sha256);

	for (i = 0; i + n <= der->len; i++)
		if (memcmp(der->p + i, ecdsa_sha256, n) == 0)
			at = i;
	assert_true(at < der->len);
	der->p[at + n - 1] = 0x03;
}

/* The outer signatureAlgorithm differing from the signed one: which verdict. */
static void
test_outer_sigalg(void **state)
{
	struct tv_buf		 crl = tv_load(VEC_DIR,
	    "derived/IntelSGXRootCA.crl.der");
	struct tv_buf		 leaf, chain, der[1], body;
	struct intel_result	 r;

	(void)state;
	outer_to_sha384(&crl);
	assert_verdict(INTEL_ERR_PARSE, verify(INTEL_ROOT_CA_CRL, &crl, NULL,
	    T_DCAP_QVL, &r), &r);
	assert_non_null(strstr(r.detail, "outer signatureAlgorithm"));

	pck_from_quote("sgx_quote", &leaf, &chain);
	assert_int_equal(pem_ders(&leaf, der, 1), 1);
	outer_to_sha384(&der[0]);
	body = ders_pem(der, 1, "CERTIFICATE");
	assert_verdict(INTEL_ERR_PARSE, verify(INTEL_PCK_CERT, &body, &chain,
	    T_DCAP_QVL, &r), &r);
	assert_non_null(strstr(r.detail, "outer signatureAlgorithm"));
	tv_free(&body);
	tv_free(&der[0]);
	tv_free(&leaf);
	tv_free(&chain);
	tv_free(&crl);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_pinned),
		cmocka_unit_test(test_json_vectors),
		cmocka_unit_test(test_tcb_info_fields),
		cmocka_unit_test(test_dcap_qvl_bundles),
		cmocka_unit_test(test_crl_vectors),
		cmocka_unit_test(test_crl_to_der),
		cmocka_unit_test(test_pck_cert),
		cmocka_unit_test(test_body_tamper),
		cmocka_unit_test(test_body_flips),
		cmocka_unit_test(test_chain_flips),
		cmocka_unit_test(test_der_flips),
		cmocka_unit_test(test_chain_der_flips),
		cmocka_unit_test(test_outer_sigalg),
		cmocka_unit_test(test_chain_root_and_signer),
		cmocka_unit_test(test_freshness),
		cmocka_unit_test(test_eval_number_order),
		cmocka_unit_test(test_json_shapes),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
