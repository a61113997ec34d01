/* SPDX-License-Identifier: Apache-2.0 */
/* DER for attest/: one strict TLV walker, and the raw-byte checks every certificate and CRL passes before it is used. */
#ifndef ATTEST_DER_H
#define ATTEST_DER_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/bio.h>
#include <openssl/x509.h>

/* Universal and context tags the walkers in attest/ look for. */
#define DER_BOOLEAN	0x01
#define DER_INTEGER	0x02
#define DER_BITSTRING	0x03
#define DER_OCTETSTRING	0x04
#define DER_OID		0x06
#define DER_ENUMERATED	0x0a
#define DER_SEQUENCE	0x30
#define DER_CTX0	0xa0	/* [0] constructed */
#define DER_CTX1	0xa1
#define DER_CTX2	0xa2

#define DER_MAX_LEN_OCTETS	4	/* long-form lengths up to 4 GiB */

/* A window into a DER buffer; never points past its parent. */
struct der {
	const uint8_t	*p;
	size_t		 len;
};

/*
 * Take the next TLV off `d`: its tag into *tag, its content into *val
 * (borrowing d's buffer). Single-byte tags and definite, minimally
 * encoded lengths of at most DER_MAX_LEN_OCTETS octets only (X.690 10.1);
 * the indefinite form (0x80) is refused. Every length is checked against
 * what is left. Returns 0, or -1 with `d` unchanged.
 */
int	der_next(struct der *d, uint8_t *tag, struct der *val);

/* der_next, and the tag must be `want`. Returns 0 or -1. */
int	der_expect(struct der *d, uint8_t want, struct der *val);

/* der_expect, with *tlv the whole TLV (tag, length and content). */
int	der_expect_tlv(struct der *d, uint8_t want, struct der *val,
	    struct der *tlv);

/* Is the next TLV tagged `tag`? 1 or 0; does not consume. */
int	der_peek(const struct der *d, uint8_t tag);

/* An INTEGER's content: at least one octet, minimally encoded. 1 or 0. */
int	der_integer_ok(const struct der *v);

/*
 * The raw-DER rule for a Certificate (RFC 5280 4.1) and a CertificateList
 * (RFC 5280 5.1): SEQUENCE { tbs SEQUENCE, signatureAlgorithm SEQUENCE,
 * signature BIT STRING } and nothing after it, with strict DER lengths
 * at those levels; and the outer signatureAlgorithm, which the signature
 * does not cover, byte-identical to the signed one inside tbs
 * (tbsCertificate.signature after the optional [0] version and the
 * serialNumber; tbsCertList.signature after the optional version).
 * RFC 5280 4.1.1.2 and 5.1.1.2 require the two to be the same; OpenSSL
 * compares them for certificates but, in 3.0, not for CRLs, and then only
 * as parsed values. Checking the bytes means no unsigned byte of the
 * object can differ from what the vendor sent, whatever OpenSSL does.
 *
 * Pure: no allocation. Returns 0, or -1 with *why set to a static string
 * ("outer signatureAlgorithm differs from the signed one", ...).
 */
int	der_cert_check(const uint8_t *der, size_t len, const char **why);
int	der_crl_check(const uint8_t *der, size_t len, const char **why);

/*
 * OpenSSL objects from bytes that passed the checks above: every caller in
 * attest/ parses certificates and CRLs through these, never with d2i_X509
 * or PEM_read_bio_X509 directly, so the rule is written once. Each clears
 * OpenSSL's error queue before it returns.
 *
 * der_x509, der_x509_crl: der[0, len) is exactly one object that passes
 * der_cert_check / der_crl_check, then d2i. Returns a new object (caller
 * frees) or NULL with *why set to a static string.
 */
X509	*der_x509(const uint8_t *der, size_t len, const char **why);
X509_CRL *der_x509_crl(const uint8_t *der, size_t len, const char **why);

#define DER_PEM_CERT	"CERTIFICATE"	/* "X509 CERTIFICATE" is taken too */
#define DER_PEM_CRL	"X509 CRL"

/*
 * The bytes of the next PEM block of `bio` labelled `label` (DER_PEM_CERT
 * or DER_PEM_CRL), base64-decoded by OpenSSL's PEM_read_bio, unchecked.
 * Blocks with other labels are skipped, as PEM_read_bio_X509 skips them;
 * a block with PEM headers (Proc-Type, ...) is refused. Reads the caller's
 * BIO and nothing else. Returns 0 with *der (OPENSSL_free) and *len; 1
 * when no further block starts (end of input); -1 with *why set.
 */
int	der_pem_read(BIO *bio, const char *label, uint8_t **der, size_t *len,
	    const char **why);

/*
 * The next certificate / CRL of a PEM stream: der_pem_read, then der_x509
 * or der_x509_crl on the block's bytes. Returns a new object (caller
 * frees), or NULL: *why is NULL at the end of input, else a static string.
 */
X509	*der_pem_x509(BIO *bio, const char **why);
X509_CRL *der_pem_x509_crl(BIO *bio, const char **why);

#endif
