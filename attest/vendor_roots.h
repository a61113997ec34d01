/* SPDX-License-Identifier: Apache-2.0 */
/* Pinned roots for vendor collateral: the Intel SGX Root CA and AMD's ARKs. */
#ifndef ATTEST_VENDOR_ROOTS_H
#define ATTEST_VENDOR_ROOTS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/x509.h>

/* One compiled-in certificate; all strings are static. */
struct vendor_root {
	const char	*subject;	/* RFC 2253, for logs */
	const char	*sha256;	/* DER fingerprint, upper-case hex */
	const char	*pem;
};

/*
 * Intel SGX Root CA (P-256, 2018-05-21 .. 2049-12-31): every PCS/PCCS
 * issuer chain ends in it; the root CA CRL is signed by it.
 */
extern const struct vendor_root	intel_sgx_root_ca;

/*
 * AMD Root Keys (RSA-4096, RSASSA-PSS SHA-384, self-signed, 25 years),
 * one per KDS product name. A KDS cert_chain carries a copy of the ARK;
 * only these are trusted.
 */
extern const struct vendor_root	amd_ark_milan;
extern const struct vendor_root	amd_ark_genoa;
extern const struct vendor_root	amd_ark_turin;

/*
 * Helpers shared by attest/intel.c and attest/amd.c; internal to attest/.
 */

/* A new X509 for a pinned root (caller frees), or NULL. */
X509	*vendor_root_x509(const struct vendor_root *);

/*
 * Parse a buffer of PEM certificates: whitespace, then one or more
 * BEGIN/END CERTIFICATE blocks separated by whitespace, nothing else.
 * At most `max` certificates, each passing der_cert_check (attest/der.h).
 * Returns a new stack (caller frees with sk_X509_pop_free) or NULL, with
 * *why set to a static string.
 */
STACK_OF(X509) *vendor_pem_certs(const uint8_t *buf, size_t len, int max,
	    const char **why);

/*
 * One certificate, DER (nothing after it) or a single PEM block, passing
 * der_cert_check. NULL with *why set to a static string.
 */
X509	*vendor_cert_parse(const uint8_t *buf, size_t len, const char **why);

#endif
