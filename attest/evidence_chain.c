/* SPDX-License-Identifier: Apache-2.0 */
/* Certificate chains read into a stack (DER certificates, PEM text, concatenated DER) and told apart: RIM or device. */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "attest/evidence.h"
#include "attest/evidence_int.h"
#include "attest/der.h"

/* SHA-256 of the NVIDIA CoRIM signing Root CA: a chain under it is a RIM chain. */
#define CORIM_ROOT_SHA256 \
	"12977B5115ACB0381179279FFFEB5A8C4D264971EBB32298023A465FA41DF5D1"

STACK_OF(X509) *
der_stack(const uint8_t *const der[], const size_t len[], size_t n, char *err,
    size_t errlen)
{
	STACK_OF(X509)	*sk;
	const char	*why;
	X509		*x;
	size_t		 i;

	if ((sk = sk_X509_new_null()) == NULL) {
		seterr(err, errlen, "out of memory");
		return NULL;
	}
	for (i = 0; i < n; i++) {
		/* raw bytes checked by der_cert_check, then parsed */
		why = "out of memory";
		if ((x = der_x509(der[i], len[i], &why)) == NULL ||
		    sk_X509_push(sk, x) == 0) {
			X509_free(x);
			seterr(err, errlen, "certificate %zu: %s", i + 1, why);
			sk_X509_pop_free(sk, X509_free);
			ERR_clear_error();
			return NULL;
		}
	}
	return sk;
}

/* Read every certificate of a PEM text; none, or a broken one, is an error. */
STACK_OF(X509) *
pem_stack(const char *pem, size_t len, char *err, size_t errlen)
{
	STACK_OF(X509)	*sk = NULL;
	BIO		*bio = NULL;
	X509		*x;
	const char	*why;

	if (len > INT32_MAX || (sk = sk_X509_new_null()) == NULL ||
	    (bio = BIO_new_mem_buf(pem, (int)len)) == NULL) {
		seterr(err, errlen, "out of memory");
		goto fail;
	}
	for (;;) {
		/* raw bytes checked by der_cert_check, then parsed */
		if ((x = der_pem_x509(bio, &why)) == NULL) {
			if (why == NULL && sk_X509_num(sk) > 0)
				break;
			if (why == NULL)
				seterr(err, errlen, "no PEM certificate in it");
			else
				seterr(err, errlen, "PEM certificate %d is "
				    "malformed: %s", sk_X509_num(sk) + 1, why);
			goto fail;
		}
		if (sk_X509_num(sk) == EVIDENCE_MAX_CHAIN_CERTS ||
		    sk_X509_push(sk, x) == 0) {
			X509_free(x);
			seterr(err, errlen, "more than %d certificates",
			    EVIDENCE_MAX_CHAIN_CERTS);
			goto fail;
		}
	}
	ERR_clear_error();
	BIO_free(bio);
	return sk;
 fail:
	ERR_clear_error();
	BIO_free(bio);
	sk_X509_pop_free(sk, X509_free);
	return NULL;
}

/*
 * The "certificate" field must be PEM blocks and whitespace only: a PEM
 * reader skips text it does not recognise, so a damaged BEGIN line would
 * otherwise drop a certificate silently and shift the chain.
 */
int
pem_only(const char *pem, size_t len, char *err, size_t errlen)
{
	static const char	 b[] = "-----BEGIN CERTIFICATE-----";
	static const char	 e[] = "-----END CERTIFICATE-----";
	const char		*p = pem, *end = pem + len, *q;

	while (p < end) {
		if (isspace((unsigned char)*p)) {
			p++;
			continue;
		}
		if ((size_t)(end - p) < sizeof(b) - 1 ||
		    memcmp(p, b, sizeof(b) - 1) != 0 ||
		    (q = memmem(p, (size_t)(end - p), e, sizeof(e) - 1)) ==
		    NULL) {
			seterr(err, errlen, "not only PEM certificates (at "
			    "byte %zu)", (size_t)(p - pem));
			return -1;
		}
		p = q + sizeof(e) - 1;
	}
	return 0;
}

/* A chain under the pinned CoRIM root is a RIM chain; anything else a device chain. */
enum evidence_chain_type
classify(STACK_OF(X509) *sk)
{
	X509		*root = sk_X509_value(sk, sk_X509_num(sk) - 1);
	unsigned char	 md[32];
	char		 hex[65];
	unsigned int	 n, i;

	if (root == NULL || X509_digest(root, EVP_sha256(), md, &n) != 1 ||
	    n != sizeof(md))
		return EVIDENCE_CHAIN_DEVICE;
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02X", md[i]);
	return strcmp(hex, CORIM_ROOT_SHA256) == 0 ? EVIDENCE_CHAIN_RIM :
	    EVIDENCE_CHAIN_DEVICE;
}

/*
 * Concatenated DER certificates, leaf first: each a SEQUENCE whose
 * length its header gives, checked by der_x509, nothing between or after.
 */
STACK_OF(X509) *
der_chain_stack(const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	STACK_OF(X509)	*sk;
	struct der	 d = { buf, len }, v, tlv;
	const char	*why = "out of memory";
	X509		*x = NULL;

	if ((sk = sk_X509_new_null()) == NULL)
		goto fail;
	while (d.len > 0) {
		if (sk_X509_num(sk) == EVIDENCE_MAX_CHAIN_CERTS) {
			why = "more than " EVIDENCE_MAX_CHAIN_CERTS_STR
			    " certificates";
			goto fail;
		}
		why = "not a DER SEQUENCE (truncated, or something else "
		    "after the certificates)";
		if (der_expect_tlv(&d, DER_SEQUENCE, &v, &tlv) == -1 ||
		    (x = der_x509(tlv.p, tlv.len, &why)) == NULL)
			goto fail;
		if (sk_X509_push(sk, x) == 0) {
			why = "out of memory";
			goto fail;
		}
		x = NULL;
	}
	return sk;
 fail:
	seterr(err, errlen, "DER certificate %d: %s", sk != NULL ?
	    sk_X509_num(sk) + 1 : 1, why);
	X509_free(x);
	sk_X509_pop_free(sk, X509_free);
	ERR_clear_error();
	return NULL;
}
