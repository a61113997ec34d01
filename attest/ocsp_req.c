/* SPDX-License-Identifier: Apache-2.0 */
/* OCSP requests: a non-allocating DER parser, cache keys, re-noncing. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>

#include "attest/der.h"
#include "attest/ocsp_req.h"
#include "attest/util.h"

/* The key input of one CertID of common sizes fits on the stack. */
#define OCSP_KEY_INLINE_BYTES	512

/* RFC 6960 4.2.1: OCSPResponse ::= SEQUENCE { responseStatus ENUMERATED } */
const uint8_t	OCSP_RESP_MALFORMED[5] = { 0x30, 0x03, 0x0a, 0x01, 0x01 };
const uint8_t	OCSP_RESP_INTERNAL[5] = { 0x30, 0x03, 0x0a, 0x01, 0x02 };
const uint8_t	OCSP_RESP_TRYLATER[5] = { 0x30, 0x03, 0x0a, 0x01, 0x03 };
const uint8_t	OCSP_RESP_UNAUTHORIZED[5] = { 0x30, 0x03, 0x0a, 0x01, 0x06 };

/* id-pkix-ocsp-nonce, 1.3.6.1.5.5.7.48.1.2 (RFC 6960 4.4.1) */
static const uint8_t	oid_nonce[] = {
	0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x02
};

/*
 * CertID ::= SEQUENCE { hashAlgorithm AlgorithmIdentifier,
 *     issuerNameHash OCTET STRING, issuerKeyHash OCTET STRING,
 *     serialNumber CertificateSerialNumber }
 */
static int
parse_certid(struct der d, struct ocsp_certid *id, const char **why)
{
	struct der	 alg, oid, v;
	uint8_t		 tag;

	if (der_expect(&d, DER_SEQUENCE, &alg) == -1) {
		*why = "CertID: bad hashAlgorithm";
		return -1;
	}
	if (der_expect(&alg, DER_OID, &oid) == -1 || oid.len == 0) {
		*why = "CertID: bad hash OID";
		return -1;
	}
	/* parameters ANY OPTIONAL: NULL or absent, one TLV at most */
	if (alg.len > 0 && (der_next(&alg, &tag, &v) == -1 || alg.len != 0)) {
		*why = "CertID: bad hash parameters";
		return -1;
	}
	id->alg_oid = oid.p;
	id->alg_oid_len = oid.len;

	if (der_expect(&d, DER_OCTETSTRING, &v) == -1) {
		*why = "CertID: bad issuerNameHash";
		return -1;
	}
	id->name_hash = v.p;
	id->name_hash_len = v.len;
	if (der_expect(&d, DER_OCTETSTRING, &v) == -1) {
		*why = "CertID: bad issuerKeyHash";
		return -1;
	}
	id->key_hash = v.p;
	id->key_hash_len = v.len;
	if (der_expect(&d, DER_INTEGER, &v) == -1 || !der_integer_ok(&v)) {
		*why = "CertID: bad serialNumber";
		return -1;
	}
	id->serial = v.p;
	id->serial_len = v.len;
	if (d.len != 0) {
		*why = "CertID: trailing data";
		return -1;
	}
	return 0;
}

/*
 * Extensions ::= SEQUENCE SIZE (1..MAX) OF Extension
 * Extension ::= SEQUENCE { extnID OID, critical BOOLEAN DEFAULT FALSE,
 *     extnValue OCTET STRING }
 * Only the nonce is kept; RFC 5280 4.2: no extension twice.
 */
static int
parse_extensions(struct der d, struct ocsp_req *out, const char **why)
{
	struct der	 exts, ext, oid, v;
	int		 critical;

	if (der_expect(&d, DER_SEQUENCE, &exts) == -1 || d.len != 0 ||
	    exts.len == 0) {
		*why = "requestExtensions: bad SEQUENCE";
		return -1;
	}
	while (exts.len > 0) {
		if (der_expect(&exts, DER_SEQUENCE, &ext) == -1 ||
		    der_expect(&ext, DER_OID, &oid) == -1) {
			*why = "requestExtensions: bad Extension";
			return -1;
		}
		critical = 0;
		if (der_peek(&ext, DER_BOOLEAN)) {
			if (der_expect(&ext, DER_BOOLEAN, &v) == -1 ||
			    v.len != 1 || (v.p[0] != 0x00 && v.p[0] != 0xff)) {
				*why = "requestExtensions: bad critical flag";
				return -1;
			}
			critical = v.p[0] == 0xff;
		}
		if (der_expect(&ext, DER_OCTETSTRING, &v) == -1 ||
		    ext.len != 0) {
			*why = "requestExtensions: bad extnValue";
			return -1;
		}
		if (oid.len != sizeof(oid_nonce) ||
		    memcmp(oid.p, oid_nonce, sizeof(oid_nonce)) != 0)
			continue;
		if (out->nonce != NULL) {
			*why = "requestExtensions: two nonces";
			return -1;
		}
		/*
		 * RFC 8954: extnValue holds OCTET STRING(nonce); some clients
		 * put raw bytes there. Keep the whole extnValue content, the
		 * bytes OpenSSL's OCSP_check_nonce compares.
		 */
		if (v.len == 0 || v.len > OCSP_MAX_NONCE_BYTES) {
			*why = "nonce: empty or too long";
			return -1;
		}
		out->nonce = v.p;
		out->nonce_len = v.len;
		out->nonce_critical = critical;
	}
	return 0;
}

/*
 * TBSRequest ::= SEQUENCE { version [0] EXPLICIT Version DEFAULT v1,
 *     requestorName [1] EXPLICIT GeneralName OPTIONAL,
 *     requestList SEQUENCE OF Request,
 *     requestExtensions [2] EXPLICIT Extensions OPTIONAL }
 */
static int
parse_tbs(struct der d, struct ocsp_req *out, const char **why)
{
	struct der	 v, inner, list, req, certid;
	uint8_t		 tag;

	if (der_peek(&d, DER_CTX0)) {
		if (der_expect(&d, DER_CTX0, &v) == -1 ||
		    der_expect(&v, DER_INTEGER, &inner) == -1 || v.len != 0 ||
		    inner.len != 1 || inner.p[0] != 0) {
			*why = "version: not v1";
			return -1;
		}
	}
	if (der_peek(&d, DER_CTX1)) {
		if (der_expect(&d, DER_CTX1, &v) == -1 ||
		    der_next(&v, &tag, &inner) == -1 || v.len != 0) {
			*why = "requestorName: bad GeneralName";
			return -1;
		}
	}
	if (der_expect(&d, DER_SEQUENCE, &list) == -1) {
		*why = "requestList: bad SEQUENCE";
		return -1;
	}
	while (list.len > 0) {
		if (out->ncertids == OCSP_MAX_CERTIDS) {
			*why = "requestList: too many CertIDs";
			return -1;
		}
		/*
		 * Request ::= SEQUENCE { reqCert CertID,
		 *     singleRequestExtensions [0] EXPLICIT Extensions
		 *     OPTIONAL }
		 */
		if (der_expect(&list, DER_SEQUENCE, &req) == -1 ||
		    der_expect(&req, DER_SEQUENCE, &certid) == -1) {
			*why = "Request: bad SEQUENCE";
			return -1;
		}
		if (parse_certid(certid, &out->certids[out->ncertids],
		    why) == -1)
			return -1;
		out->ncertids++;
		if (req.len > 0 && (der_expect(&req, DER_CTX0, &v) == -1 ||
		    der_expect(&v, DER_SEQUENCE, &inner) == -1 ||
		    v.len != 0 || req.len != 0)) {
			*why = "Request: bad singleRequestExtensions";
			return -1;
		}
	}
	if (out->ncertids == 0) {
		*why = "requestList: empty";
		return -1;
	}
	if (der_peek(&d, DER_CTX2)) {
		if (der_expect(&d, DER_CTX2, &v) == -1 ||
		    parse_extensions(v, out, why) == -1) {
			if (*why == NULL)
				*why = "requestExtensions: bad [2]";
			return -1;
		}
	}
	if (d.len != 0) {
		*why = "tbsRequest: trailing data";
		return -1;
	}
	return 0;
}

int
ocsp_req_parse(const uint8_t *der, size_t len, struct ocsp_req *out,
    const char **why)
{
	struct der	 d, top, tbs, sig, inner;
	const char	*dummy;

	if (why == NULL)
		why = &dummy;
	*why = NULL;
	if (out == NULL || (der == NULL && len > 0)) {
		*why = "no request";
		return -1;
	}
	memset(out, 0, sizeof(*out));
	if (len > OCSP_MAX_REQUEST_BYTES) {
		*why = "request too large";
		return -1;
	}
	d.p = der;
	d.len = len;
	/* OCSPRequest ::= SEQUENCE { tbsRequest TBSRequest,
	 *     optionalSignature [0] EXPLICIT Signature OPTIONAL } */
	if (der_expect(&d, DER_SEQUENCE, &top) == -1) {
		*why = "not a DER SEQUENCE";
		goto fail;
	}
	if (d.len != 0) {
		*why = "trailing data after OCSPRequest";
		goto fail;
	}
	if (der_expect(&top, DER_SEQUENCE, &tbs) == -1) {
		*why = "bad tbsRequest";
		goto fail;
	}
	if (parse_tbs(tbs, out, why) == -1)
		goto fail;
	if (top.len > 0 && (der_expect(&top, DER_CTX0, &sig) == -1 ||
	    der_expect(&sig, DER_SEQUENCE, &inner) == -1 || sig.len != 0 ||
	    top.len != 0)) {
		*why = "bad optionalSignature";
		goto fail;
	}
	return 0;
 fail:
	memset(out, 0, sizeof(*out));
	return -1;
}

/* `len` as four big-endian octets, then the bytes, at out; returns what it wrote. */
static size_t
key_field(uint8_t *out, const uint8_t *p, size_t len)
{
	out[0] = (uint8_t)(len >> 24);
	out[1] = (uint8_t)(len >> 16);
	out[2] = (uint8_t)(len >> 8);
	out[3] = (uint8_t)len;
	memcpy(out + 4, p, len);
	return 4 + len;
}

void
ocsp_req_key(const struct ocsp_req *req, uint8_t key[OCSP_KEY_BYTES])
{
	uint8_t				 inline_buf[OCSP_KEY_INLINE_BYTES];
	uint8_t				*buf = inline_buf;
	const struct ocsp_certid	*id;
	size_t				 i, n = 0, need = 0, ncertids;

	memset(key, 0, OCSP_KEY_BYTES);
	ncertids = req->ncertids < OCSP_MAX_CERTIDS ? req->ncertids :
	    OCSP_MAX_CERTIDS;
	for (i = 0; i < ncertids; i++) {
		id = &req->certids[i];
		need += 16 + id->alg_oid_len + id->name_hash_len +
		    id->key_hash_len + id->serial_len;
	}
	/* One hash over one buffer: a hit's key is one EVP_Digest call. */
	if (need > sizeof(inline_buf) && (buf = malloc(need)) == NULL)
		return;
	/* The hash parameters (NULL or absent) are deliberately left out. */
	for (i = 0; i < ncertids; i++) {
		id = &req->certids[i];
		n += key_field(buf + n, id->alg_oid, id->alg_oid_len);
		n += key_field(buf + n, id->name_hash, id->name_hash_len);
		n += key_field(buf + n, id->key_hash, id->key_hash_len);
		n += key_field(buf + n, id->serial, id->serial_len);
	}
	if (EVP_Digest(buf, n, key, NULL, util_sha256(), NULL) != 1)
		memset(key, 0, OCSP_KEY_BYTES);
	if (buf != inline_buf)
		free(buf);
}

uint8_t *
ocsp_req_renonce(const uint8_t *der, size_t len, const uint8_t *nonce,
    size_t nonce_len, size_t *outlen)
{
	OCSP_REQUEST	*req = NULL;
	const uint8_t	*p = der;
	uint8_t		*buf = NULL, *q;
	int		 i, n;

	if (outlen != NULL)
		*outlen = 0;
	if (der == NULL || len == 0 || len > OCSP_MAX_REQUEST_BYTES ||
	    nonce == NULL || nonce_len == 0 ||
	    nonce_len > OCSP_MAX_NONCE_BYTES || outlen == NULL)
		return NULL;
	if ((req = d2i_OCSP_REQUEST(NULL, &p, (long)len)) == NULL ||
	    p != der + len)
		goto out;
	/* A new tbsRequest would void a signature; NVAT never signs. */
	if (OCSP_request_is_signed(req))
		goto out;
	while ((i = OCSP_REQUEST_get_ext_by_NID(req, NID_id_pkix_OCSP_Nonce,
	    -1)) >= 0)
		X509_EXTENSION_free(OCSP_REQUEST_delete_ext(req, i));
	/* Wraps the bytes in an OCTET STRING, as OpenSSL clients do. */
	if (OCSP_request_add1_nonce(req, (unsigned char *)nonce,
	    (int)nonce_len) != 1)
		goto out;
	if ((n = i2d_OCSP_REQUEST(req, NULL)) <= 0)
		goto out;
	if ((buf = malloc(n)) == NULL)
		goto out;
	q = buf;
	if (i2d_OCSP_REQUEST(req, &q) != n) {
		free(buf);
		buf = NULL;
		goto out;
	}
	*outlen = (size_t)n;
 out:
	if (buf == NULL)
		ERR_clear_error();	/* leave no state for the next caller */
	OCSP_REQUEST_free(req);
	return buf;
}

int
ocsp_resp_status(const uint8_t *der, size_t len)
{
	struct der	 d, top, st;

	if (der == NULL)
		return -1;
	d.p = der;
	d.len = len;
	if (der_expect(&d, DER_SEQUENCE, &top) == -1 || d.len != 0)
		return -1;
	if (der_expect(&top, DER_ENUMERATED, &st) == -1 || st.len != 1)
		return -1;
	/* RFC 6960 4.2.1: 0..3, 5, 6; 4 is not used */
	if (st.p[0] > 6 || st.p[0] == 4)
		return -1;
	/* A successful response must carry responseBytes [0]. */
	if (st.p[0] == 0 && !der_peek(&top, DER_CTX0))
		return -1;
	return st.p[0];
}
