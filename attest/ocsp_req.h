/* SPDX-License-Identifier: Apache-2.0 */
/* OCSP requests as nvattest sends them: a non-allocating parser, cache keys, re-noncing, fixed answers. */
#ifndef ATTEST_OCSP_REQ_H
#define ATTEST_OCSP_REQ_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define OCSP_KEY_BYTES		32	/* SHA-256 over the CertID list */
#define OCSP_MAX_REQUEST_BYTES	16384	/* larger POST bodies get 413 */
#define OCSP_MAX_CERTIDS	16
#define OCSP_MAX_NONCE_BYTES	128	/* RFC 9654 */
#define OCSP_DEFAULT_VALIDITY_S	3600	/* NVAT: missing nextUpdate = thisUpdate + 1 h */

/* One CertID inside a request; every pointer borrows the request buffer. */
struct ocsp_certid {
	const uint8_t	*alg_oid;	/* content octets of the hash OID */
	size_t		 alg_oid_len;
	const uint8_t	*name_hash;
	size_t		 name_hash_len;
	const uint8_t	*key_hash;
	size_t		 key_hash_len;
	const uint8_t	*serial;	/* INTEGER content octets */
	size_t		 serial_len;
};

/* A parsed OCSPRequest; valid as long as the DER it was parsed from. */
struct ocsp_req {
	size_t			 ncertids;
	struct ocsp_certid	 certids[OCSP_MAX_CERTIDS];
	const uint8_t		*nonce;		/* nonce extension value, or NULL */
	size_t			 nonce_len;
	int			 nonce_critical;
};

/*
 * Parse a DER OCSPRequest (RFC 6960 4.1.1) without allocating.
 * Returns 0, or -1 for anything that is not a well-formed request with
 * 1..OCSP_MAX_CERTIDS CertIDs (and sets *why to a static string).
 */
int	ocsp_req_parse(const uint8_t *der, size_t len, struct ocsp_req *out,
	    const char **why);

/*
 * The cache key: SHA-256 over (hash OID, issuerNameHash, issuerKeyHash,
 * serial) of every CertID, each length-prefixed. Extensions (the nonce) are
 * not part of it; SHA-1 and SHA-384 CertIDs give different keys.
 */
void	ocsp_req_key(const struct ocsp_req *req, uint8_t key[OCSP_KEY_BYTES]);

/*
 * A new request with the same CertIDs and `nonce` as its only nonce, for a
 * refresh that stapled makes itself. Returns malloc'd DER (caller frees) or
 * NULL.
 */
uint8_t	*ocsp_req_renonce(const uint8_t *der, size_t len, const uint8_t *nonce,
	    size_t nonce_len, size_t *outlen);

/* Unsigned error responses (RFC 6960 4.2.1), 5 bytes each. */
extern const uint8_t	OCSP_RESP_MALFORMED[5];	/* 30 03 0a 01 01 */
extern const uint8_t	OCSP_RESP_INTERNAL[5];	/* 30 03 0a 01 02 */
extern const uint8_t	OCSP_RESP_TRYLATER[5];	/* 30 03 0a 01 03 */
extern const uint8_t	OCSP_RESP_UNAUTHORIZED[5]; /* 30 03 0a 01 06 */

/* The responseStatus of a DER OCSPResponse, or -1 if it is not one. */
int	ocsp_resp_status(const uint8_t *der, size_t len);

#endif
