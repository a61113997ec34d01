/* SPDX-License-Identifier: Apache-2.0 */
/* The CertIDs nvattest OCSP-checks: the hash algorithms, a chain's CertIDs and their OCSP requests. */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/ocsp.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "attest/evidence.h"
#include "attest/evidence_int.h"
#include "attest/ocsp_req.h"
#include "attest/util.h"

/* ---- CertID hash algorithms -------------------------------------------- */

const char *const evidence_hash_str[EVIDENCE_HASH_MAX] = {
	[EVIDENCE_HASH_SHA1] = "sha1",
	[EVIDENCE_HASH_SHA256] = "sha256",
	[EVIDENCE_HASH_SHA384] = "sha384",
};

#define HASH_OID_MAX_BYTES	9
#define HASH_NAME_MAX_CHARS	16	/* longer is no name we know */

/* The content octets of each algorithm's OID (RFC 3279 2.2.1, RFC 5754 2). */
static const struct {
	uint8_t	 oid[HASH_OID_MAX_BYTES];
	size_t	 len;
} hash_oid[EVIDENCE_HASH_MAX] = {
	[EVIDENCE_HASH_SHA1] = { { 0x2b, 0x0e, 0x03, 0x02, 0x1a }, 5 },
	[EVIDENCE_HASH_SHA256] = { { 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04,
	    0x02, 0x01 }, 9 },
	[EVIDENCE_HASH_SHA384] = { { 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04,
	    0x02, 0x02 }, 9 },
};

static const EVP_MD *
hash_md(enum evidence_hash h)
{
	switch (h) {
	case EVIDENCE_HASH_SHA1:
		return EVP_sha1();
	case EVIDENCE_HASH_SHA256:
		return EVP_sha256();
	case EVIDENCE_HASH_SHA384:
		return EVP_sha384();
	default:
		return NULL;
	}
}

int
evidence_hashes_parse(const char *list, unsigned *set, char *err,
    size_t errlen)
{
	char		 name[HASH_NAME_MAX_CHARS];
	const char	*p, *e;
	size_t		 n, i;
	unsigned	 s = 0, h;

	if (list == NULL || *list == '\0') {
		seterr(err, errlen, "no hash algorithm given (sha1, sha256, "
		    "sha384)");
		return -1;
	}
	for (p = list;; p = e + 1) {
		if ((e = strchr(p, ',')) == NULL)
			e = p + strlen(p);
		if ((n = (size_t)(e - p)) == 0) {
			seterr(err, errlen, "\"%s\": an empty item", list);
			return -1;
		}
		/* nvattest spells them "sha-256"; either case */
		for (i = 0; i < n && i + 1 < sizeof(name); i++)
			name[i] = (char)tolower((unsigned char)p[i]);
		name[i] = '\0';
		if (strncmp(name, "sha-", 4) == 0)
			memmove(name + 3, name + 4, strlen(name + 4) + 1);
		for (h = 0; h < EVIDENCE_HASH_MAX; h++)
			if (n < sizeof(name) &&
			    strcmp(name, evidence_hash_str[h]) == 0)
				break;
		if (h == EVIDENCE_HASH_MAX) {
			seterr(err, errlen, "\"%.*s\": not a CertID hash "
			    "algorithm (sha1, sha256, sha384)", (int)n, p);
			return -1;
		}
		s |= EVIDENCE_HASH_BIT(h);
		if (*e == '\0')
			break;
	}
	*set = s;
	return 0;
}

int
evidence_certid_hash(const struct ocsp_certid *id)
{
	unsigned	 h;

	for (h = 0; h < EVIDENCE_HASH_MAX; h++)
		if (id->alg_oid_len == hash_oid[h].len &&
		    memcmp(id->alg_oid, hash_oid[h].oid, hash_oid[h].len) == 0)
			return (int)h;
	return -1;
}

/* Another algorithm's name: OpenSSL's short name in lower case, or the OID. */
static void
oid_name(const struct ocsp_certid *id, char *buf, size_t len)
{
	ASN1_OBJECT	*obj;
	uint8_t		 der[2 + 127];
	const uint8_t	*p = der;
	const char	*sn;
	size_t		 i;
	int		 nid;

	snprintf(buf, len, "?");
	if (id->alg_oid_len == 0 || id->alg_oid_len > 127)
		return;
	der[0] = V_ASN1_OBJECT;
	der[1] = (uint8_t)id->alg_oid_len;
	memcpy(der + 2, id->alg_oid, id->alg_oid_len);
	if ((obj = d2i_ASN1_OBJECT(NULL, &p, 2 + (long)id->alg_oid_len)) ==
	    NULL) {
		ERR_clear_error();
		return;
	}
	if ((nid = OBJ_obj2nid(obj)) != NID_undef &&
	    (sn = OBJ_nid2sn(nid)) != NULL) {
		snprintf(buf, len, "%s", sn);
		for (i = 0; buf[i] != '\0'; i++)
			buf[i] = (char)tolower((unsigned char)buf[i]);
	} else
		OBJ_obj2txt(buf, (int)len, obj, 1);
	ASN1_OBJECT_free(obj);
	ERR_clear_error();
}

void
evidence_req_hash_name(const struct ocsp_req *req, char *buf, size_t len)
{
	const struct ocsp_certid	*a;
	size_t				 i;
	int				 h;

	snprintf(buf, len, "?");
	if (req == NULL || req->ncertids == 0)
		return;
	a = &req->certids[0];
	for (i = 1; i < req->ncertids; i++)
		if (req->certids[i].alg_oid_len != a->alg_oid_len ||
		    memcmp(req->certids[i].alg_oid, a->alg_oid,
		    a->alg_oid_len) != 0) {
			snprintf(buf, len, "mixed");
			return;
		}
	if ((h = evidence_certid_hash(a)) >= 0)
		snprintf(buf, len, "%s", evidence_hash_str[h]);
	else
		oid_name(a, buf, len);
}

/* ---- certificates and CertIDs ------------------------------------------ */

int
is_self_signed(X509 *x)
{
	EVP_PKEY	*k = X509_get0_pubkey(x);

	return X509_check_issued(x, x) == X509_V_OK && k != NULL &&
	    X509_verify(x, k) == 1;
}

void
evidence_certids_free(struct evidence_certid *c, size_t n)
{
	size_t	 i;

	if (c == NULL)
		return;
	for (i = 0; i < n; i++)
		free(c[i].req);
	free(c);
}

/*
 * The CertID of the certificate numbered `serial` under `issuer`, as
 * RFC 6960 4.1.1 and `openssl ocsp -sha1|-sha256|-sha384 -issuer -cert`
 * make it: the hash of the issuer's DER subject name, the hash of its
 * subjectPublicKey BIT STRING content, the serial. The request is then
 * built by OpenSSL (OCSP_cert_id_new, what OCSP_cert_to_id calls) and
 * parsed back, and must carry the same algorithm and values. c->subject
 * and c->chain are the caller's.
 */
static int
certid_build(X509 *issuer, const ASN1_INTEGER *serial, enum evidence_hash h,
    struct evidence_certid *c, char *err, size_t errlen)
{
	OCSP_REQUEST	*req = NULL;
	OCSP_CERTID	*id = NULL;
	const EVP_MD	*md = hash_md(h);
	struct ocsp_req	 parsed;
	const struct ocsp_certid *pc = &parsed.certids[0];
	const char	*why, *what = c->subject[0] != '\0' ? c->subject :
			    "CertID";
	uint8_t		 nonce[EVIDENCE_NONCE_BYTES], *der = NULL, *q;
	unsigned char	*ser = NULL, *nm = NULL;
	unsigned int	 nl = 0, kl = 0;
	int		 n, sl, rv = -1;

	c->hash = h;
	if (md == NULL ||
	    (n = i2d_X509_NAME(X509_get_subject_name(issuer), &nm)) <= 0 ||
	    EVP_Digest(nm, (size_t)n, c->name_hash, &nl, md, NULL) != 1 ||
	    X509_pubkey_digest(issuer, md, c->key_hash, &kl) != 1 ||
	    nl != kl) {
		seterr(err, errlen, "%s: cannot hash its issuer", what);
		goto out;
	}
	c->hash_len = nl;
	/* The serial's INTEGER content octets: DER minus tag and length. */
	if ((sl = i2d_ASN1_INTEGER(serial, &ser)) < 3 ||
	    ser[1] >= 0x80 || (size_t)ser[1] != (size_t)sl - 2 ||
	    (size_t)ser[1] > sizeof(c->serial)) {
		seterr(err, errlen, "%s: serial number too long", what);
		goto out;
	}
	memcpy(c->serial, ser + 2, ser[1]);
	c->serial_len = ser[1];

	if ((req = OCSP_REQUEST_new()) == NULL ||
	    (id = OCSP_cert_id_new(md, X509_get_subject_name(issuer),
	    X509_get0_pubkey_bitstr(issuer), serial)) == NULL ||
	    OCSP_request_add0_id(req, id) == NULL)
		goto nomem;
	id = NULL;
	if (RAND_bytes(nonce, sizeof(nonce)) != 1 ||
	    OCSP_request_add1_nonce(req, nonce, sizeof(nonce)) != 1)
		goto nomem;
	if ((n = i2d_OCSP_REQUEST(req, NULL)) <= 0 ||
	    (der = malloc(n)) == NULL)
		goto nomem;
	q = der;
	if (i2d_OCSP_REQUEST(req, &q) != n)
		goto nomem;
	if (ocsp_req_parse(der, (size_t)n, &parsed, &why) == -1 ||
	    parsed.ncertids != 1 || evidence_certid_hash(pc) != (int)h ||
	    pc->name_hash_len != c->hash_len ||
	    pc->key_hash_len != c->hash_len ||
	    memcmp(pc->name_hash, c->name_hash, c->hash_len) != 0 ||
	    memcmp(pc->key_hash, c->key_hash, c->hash_len) != 0 ||
	    pc->serial_len != c->serial_len ||
	    memcmp(pc->serial, c->serial, c->serial_len) != 0) {
		seterr(err, errlen, "%s: OpenSSL built a different CertID",
		    what);
		goto out;
	}
	ocsp_req_key(&parsed, c->key);
	c->req = der;
	c->req_len = (size_t)n;
	der = NULL;
	rv = 0;
	goto out;
 nomem:
	seterr(err, errlen, "%s: cannot build its %s OCSP request", what,
	    evidence_hash_str[h]);
 out:
	free(der);
	OPENSSL_free(ser);
	OPENSSL_free(nm);
	OCSP_CERTID_free(id);
	OCSP_REQUEST_free(req);
	ERR_clear_error();
	return rv;
}

/* The CertID of `subject` under `issuer` in hash h. */
static int
certid_make(X509 *subject, X509 *issuer, enum evidence_chain_type type,
    enum evidence_hash h, struct evidence_certid *c, char *err,
    size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->chain = type;
	util_name_rfc2253(X509_get_subject_name(subject), c->subject,
	    sizeof(c->subject));
	return certid_build(issuer, X509_get0_serialNumber(subject), h, c, err,
	    errlen);
}

/* Is x the issuer a CertID in hash h names? */
static int
names_issuer(X509 *x, const struct ocsp_certid *id, enum evidence_hash h)
{
	uint8_t		 md[EVP_MAX_MD_SIZE];
	unsigned int	 n;

	if (X509_NAME_digest(X509_get_subject_name(x), hash_md(h), md,
	    &n) != 1 || n != id->name_hash_len ||
	    memcmp(md, id->name_hash, n) != 0)
		return 0;
	if (X509_pubkey_digest(x, hash_md(h), md, &n) != 1 ||
	    n != id->key_hash_len || memcmp(md, id->key_hash, n) != 0)
		return 0;
	return 1;
}

int
evidence_certid_rehash(const struct ocsp_certid *id,
    STACK_OF(X509) *const cands[], size_t ncands, enum evidence_hash h,
    struct evidence_certid *out, char *err, size_t errlen)
{
	ASN1_INTEGER	*serial;
	X509		*issuer = NULL, *x;
	uint8_t		 ider[2 + EVIDENCE_MAX_SERIAL_BYTES];
	const uint8_t	*p = ider;
	size_t		 i;
	int		 from, j, rv;

	memset(out, 0, sizeof(*out));
	out->chain = EVIDENCE_CHAIN_DEVICE;
	if (id == NULL || (from = evidence_certid_hash(id)) < 0 ||
	    (unsigned)h >= EVIDENCE_HASH_MAX || id->serial_len == 0 ||
	    id->serial_len > EVIDENCE_MAX_SERIAL_BYTES)
		return 1;
	for (i = 0; i < ncands && issuer == NULL; i++)
		for (j = 0; j < sk_X509_num(cands[i]) && issuer == NULL; j++)
			if (names_issuer((x = sk_X509_value(cands[i], j)), id,
			    (enum evidence_hash)from))
				issuer = x;
	ERR_clear_error();
	if (issuer == NULL)
		return 1;
	ider[0] = V_ASN1_INTEGER;
	ider[1] = (uint8_t)id->serial_len;
	memcpy(ider + 2, id->serial, id->serial_len);
	if ((serial = d2i_ASN1_INTEGER(NULL, &p, 2 + (long)id->serial_len)) ==
	    NULL) {
		seterr(err, errlen, "a CertID serial that is not an INTEGER");
		ERR_clear_error();
		return -1;
	}
	rv = certid_build(issuer, serial, h, out, err, errlen);
	ASN1_INTEGER_free(serial);
	return rv;
}

/* Check each link of a leaf-first chain and that it ends at a root. */
static int
chain_check(STACK_OF(X509) *sk, char *err, size_t errlen)
{
	char		 a[128], b[128];
	X509		*x, *up;
	EVP_PKEY	*k;
	int		 i, n = sk_X509_num(sk);

	if (n < 2) {
		seterr(err, errlen, "a chain of %d certificate%s: need the "
		    "leaf to the root", n, n == 1 ? "" : "s");
		return -1;
	}
	if (n > EVIDENCE_MAX_CHAIN_CERTS) {
		seterr(err, errlen, "a chain of %d certificates (at most %d)",
		    n, EVIDENCE_MAX_CHAIN_CERTS);
		return -1;
	}
	for (i = 0; i + 1 < n; i++) {
		x = sk_X509_value(sk, i);
		up = sk_X509_value(sk, i + 1);
		k = X509_get0_pubkey(up);
		if (X509_check_issued(up, x) != X509_V_OK || k == NULL ||
		    X509_verify(x, k) != 1) {
			util_name_rfc2253(X509_get_subject_name(x), a, sizeof(a));
			util_name_rfc2253(X509_get_subject_name(up), b, sizeof(b));
			seterr(err, errlen, "certificate %d (%s) is not issued "
			    "by certificate %d (%s)", i + 1, a, i + 2, b);
			ERR_clear_error();
			return -1;
		}
	}
	if (!is_self_signed(sk_X509_value(sk, n - 1))) {
		util_name_rfc2253(X509_get_subject_name(sk_X509_value(sk, n - 1)),
		    a, sizeof(a));
		seterr(err, errlen, "the last certificate (%s) is not a "
		    "self-signed root", a);
		ERR_clear_error();
		return -1;
	}
	return 0;
}

int
sk_certids(enum evidence_chain_type type, unsigned hashes, STACK_OF(X509) *sk,
    struct evidence_certid **out, size_t *nout, char *err, size_t errlen)
{
	struct evidence_certid	*c = NULL;
	int			 i, n, first;
	size_t			 k = 0, nh = 0;
	unsigned		 h;

	*out = NULL;
	*nout = 0;
	if ((unsigned)type >= EVIDENCE_CHAIN_TYPE_MAX) {
		seterr(err, errlen, "unknown chain type");
		return -1;
	}
	if (hashes == 0 || (hashes & ~EVIDENCE_HASHES_ALL) != 0) {
		seterr(err, errlen, "no CertID hash algorithm chosen");
		return -1;
	}
	for (h = 0; h < EVIDENCE_HASH_MAX; h++)
		if (hashes & EVIDENCE_HASH_BIT(h))
			nh++;
	if (chain_check(sk, err, errlen) == -1)
		return -1;
	n = sk_X509_num(sk);
	/* nv_x509.cpp: the root is never asked about; nor a device leaf. */
	first = type == EVIDENCE_CHAIN_DEVICE ? 1 : 0;
	if (n - 1 > first && (c = calloc((size_t)(n - 1 - first) * nh,
	    sizeof(*c))) == NULL) {
		seterr(err, errlen, "out of memory");
		return -1;
	}
	/* From the root down, the order nvattest asks in; each in every hash. */
	for (i = n - 2; i >= first; i--) {
		for (h = 0; h < EVIDENCE_HASH_MAX; h++) {
			if (!(hashes & EVIDENCE_HASH_BIT(h)))
				continue;
			if (certid_make(sk_X509_value(sk, i),
			    sk_X509_value(sk, i + 1), type,
			    (enum evidence_hash)h, &c[k], err, errlen) == -1) {
				evidence_certids_free(c, k);
				return -1;
			}
			k++;
		}
	}
	*out = c;
	*nout = k;
	return 0;
}

int
evidence_chain_certids(enum evidence_chain_type type, unsigned hashes,
    const uint8_t *const der[], const size_t len[], size_t n,
    struct evidence_certid **out, size_t *nout, char *err, size_t errlen)
{
	STACK_OF(X509)	*sk;
	int		 rv;

	*out = NULL;
	*nout = 0;
	if (n > EVIDENCE_MAX_CHAIN_CERTS) {
		seterr(err, errlen, "a chain of %zu certificates (at most %d)",
		    n, EVIDENCE_MAX_CHAIN_CERTS);
		return -1;
	}
	if ((sk = der_stack(der, len, n, err, errlen)) == NULL)
		return -1;
	rv = sk_certids(type, hashes, sk, out, nout, err, errlen);
	sk_X509_pop_free(sk, X509_free);
	return rv;
}

uint8_t *
evidence_ocsp_request(const struct evidence_certid *c, const uint8_t *nonce,
    size_t nonce_len, size_t *outlen)
{
	uint8_t	 rnd[EVIDENCE_NONCE_BYTES];

	if (c == NULL || c->req == NULL || outlen == NULL)
		return NULL;
	if (nonce == NULL) {
		if (RAND_bytes(rnd, sizeof(rnd)) != 1)
			return NULL;
		nonce = rnd;
		nonce_len = sizeof(rnd);
	}
	return ocsp_req_renonce(c->req, c->req_len, nonce, nonce_len, outlen);
}
