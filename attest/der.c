/* SPDX-License-Identifier: Apache-2.0 */
/* A strict DER walker, and the raw-byte checks every certificate and CRL in attest/ passes. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "attest/der.h"

/* ---- the walker (pure) -------------------------------------------------- */

int
der_next(struct der *d, uint8_t *tag, struct der *val)
{
	size_t	 i, n, hdr, clen;

	if (d->len < 2)
		return -1;
	if ((d->p[0] & 0x1f) == 0x1f)
		return -1;		/* high tag numbers: never in X.509 */
	if (d->p[1] < 0x80) {
		clen = d->p[1];
		hdr = 2;
	} else {
		n = d->p[1] & 0x7f;
		if (n == 0 || n > DER_MAX_LEN_OCTETS)	/* 0x80: indefinite */
			return -1;
		if (d->len - 2 < n)
			return -1;
		if (d->p[2] == 0)
			return -1;	/* not minimal */
		clen = 0;
		for (i = 0; i < n; i++)
			clen = (clen << 8) | d->p[2 + i];
		if (clen < 0x80)
			return -1;	/* short form was required */
		hdr = 2 + n;
	}
	if (clen > d->len - hdr)
		return -1;
	*tag = d->p[0];
	val->p = d->p + hdr;
	val->len = clen;
	d->p += hdr + clen;
	d->len -= hdr + clen;
	return 0;
}

int
der_expect(struct der *d, uint8_t want, struct der *val)
{
	struct der	 save = *d;
	uint8_t		 tag;

	if (der_next(d, &tag, val) == -1)
		return -1;
	if (tag != want) {
		*d = save;
		return -1;
	}
	return 0;
}

int
der_expect_tlv(struct der *d, uint8_t want, struct der *val, struct der *tlv)
{
	const uint8_t	*start = d->p;

	if (der_expect(d, want, val) == -1)
		return -1;
	tlv->p = start;
	tlv->len = (size_t)(d->p - start);
	return 0;
}

int
der_peek(const struct der *d, uint8_t tag)
{
	return d->len > 0 && d->p[0] == tag;
}

int
der_integer_ok(const struct der *v)
{
	if (v->len == 0)
		return 0;
	if (v->len > 1 && ((v->p[0] == 0x00 && !(v->p[1] & 0x80)) ||
	    (v->p[0] == 0xff && (v->p[1] & 0x80))))
		return 0;
	return 1;
}

/* ---- the signatureAlgorithm rule (pure) --------------------------------- */

/*
 * RFC 5280 4.1 / 5.1: SEQUENCE { tbs, signatureAlgorithm, signature BIT
 * STRING }, nothing after it. *tbs is the tbs content, *alg the whole
 * outer AlgorithmIdentifier TLV.
 */
static int
signed_frame(const uint8_t *buf, size_t len, struct der *tbs,
    struct der *alg, const char **why)
{
	struct der	 d, top, v, bits;
	uint8_t		 tag;

	if (buf == NULL || len == 0) {
		*why = "empty";
		return -1;
	}
	d.p = buf;
	d.len = len;
	if (der_next(&d, &tag, &top) == -1 || tag != DER_SEQUENCE) {
		*why = "not a DER SEQUENCE (definite, minimal lengths)";
		return -1;
	}
	if (d.len != 0) {
		*why = "bytes after the outer SEQUENCE";
		return -1;
	}
	if (der_expect(&top, DER_SEQUENCE, tbs) == -1) {
		*why = "no DER tbs SEQUENCE";
		return -1;
	}
	if (der_expect_tlv(&top, DER_SEQUENCE, &v, alg) == -1) {
		*why = "no DER outer signatureAlgorithm";
		return -1;
	}
	/* Signatures are whole octets: the unused-bits octet is 0. */
	if (der_expect(&top, DER_BITSTRING, &bits) == -1 || bits.len < 2 ||
	    bits.p[0] != 0) {
		*why = "no DER signature BIT STRING";
		return -1;
	}
	if (top.len != 0) {
		*why = "bytes after the signature";
		return -1;
	}
	return 0;
}

static int
same_alg(const struct der *signed_alg, const struct der *outer,
    const char **why)
{
	if (signed_alg->len != outer->len ||
	    memcmp(signed_alg->p, outer->p, outer->len) != 0) {
		*why = "outer signatureAlgorithm differs from the signed one";
		return -1;
	}
	return 0;
}

/* The head of a tbsCertificate or tbsCertList, up to its signature AlgorithmIdentifier. */
struct tbs_shape {
	uint8_t		 version_tag;	/* an optional version first */
	const char	*version_why;
	const char	*serial_why;	/* a serialNumber next, unless NULL */
	const char	*alg_why;
};

/* version [0] EXPLICIT DEFAULT v1, serialNumber, signature */
static const struct tbs_shape cert_tbs = {
	DER_CTX0, "bad tbsCertificate version",
	"bad tbsCertificate serialNumber", "bad tbsCertificate signature"
};
/* version Version OPTIONAL (v2), then signature */
static const struct tbs_shape crl_tbs = {
	DER_INTEGER, "bad tbsCertList version", NULL,
	"bad tbsCertList signature"
};

/* der_cert_check and der_crl_check for the shape s. */
static int
signed_check(const struct tbs_shape *s, const uint8_t *der, size_t len,
    const char **why)
{
	struct der	 tbs, outer, inner, v;
	const char	*dummy;

	if (why == NULL)
		why = &dummy;
	*why = NULL;
	if (signed_frame(der, len, &tbs, &outer, why) == -1)
		return -1;
	if (der_peek(&tbs, s->version_tag) &&
	    der_expect(&tbs, s->version_tag, &v) == -1) {
		*why = s->version_why;
		return -1;
	}
	if (s->serial_why != NULL && der_expect(&tbs, DER_INTEGER, &v) == -1) {
		*why = s->serial_why;
		return -1;
	}
	if (der_expect_tlv(&tbs, DER_SEQUENCE, &v, &inner) == -1) {
		*why = s->alg_why;
		return -1;
	}
	return same_alg(&inner, &outer, why);
}

int
der_cert_check(const uint8_t *der, size_t len, const char **why)
{
	return signed_check(&cert_tbs, der, len, why);
}

int
der_crl_check(const uint8_t *der, size_t len, const char **why)
{
	return signed_check(&crl_tbs, der, len, why);
}

/* ---- OpenSSL objects from checked bytes --------------------------------- */

/* One kind of object that der_object and der_pem_object make. */
struct der_kind {
	const char	*label;		/* its PEM label */
	int		(*check)(const uint8_t *, size_t, const char **);
	const char	*what;		/* why, when OpenSSL cannot parse it */
	const ASN1_ITEM	*(*item)(void);	/* its ASN.1 template (d2i, free) */
};

static const struct der_kind der_cert = {
	DER_PEM_CERT, der_cert_check, "not an X.509 certificate", X509_it
};
static const struct der_kind der_crl = {
	DER_PEM_CRL, der_crl_check, "not an X.509 CRL", X509_CRL_it
};

/* der_x509 and der_x509_crl for kind k. */
static void *
der_object(const struct der_kind *k, const uint8_t *der, size_t len,
    const char **why)
{
	void		*obj = NULL;
	const uint8_t	*p = der;
	const char	*dummy;

	if (why == NULL)
		why = &dummy;
	if (k->check(der, len, why) == -1)
		goto out;
	*why = k->what;
	if (len > LONG_MAX ||
	    (obj = ASN1_item_d2i(NULL, &p, (long)len, k->item())) == NULL)
		goto out;
	if (p != der + len) {	/* the check saw to it; say so again */
		ASN1_item_free(obj, k->item());
		obj = NULL;
		goto out;
	}
	*why = NULL;
 out:
	ERR_clear_error();
	return obj;
}

X509 *
der_x509(const uint8_t *der, size_t len, const char **why)
{
	return der_object(&der_cert, der, len, why);
}

X509_CRL *
der_x509_crl(const uint8_t *der, size_t len, const char **why)
{
	return der_object(&der_crl, der, len, why);
}

/* Does a PEM label name what `label` asks for? */
static int
label_is(const char *name, const char *label)
{
	if (strcmp(name, label) == 0)
		return 1;
	/* PEM_read_bio_X509 takes the pre-RFC 7468 label as well. */
	return strcmp(label, DER_PEM_CERT) == 0 &&
	    strcmp(name, "X509 CERTIFICATE") == 0;
}

int
der_pem_read(BIO *bio, const char *label, uint8_t **der, size_t *len,
    const char **why)
{
	char		*name = NULL, *header = NULL;
	uint8_t		*data = NULL;
	unsigned long	 e;
	long		 n = 0;
	int		 rv = -1;

	*der = NULL;
	*len = 0;
	*why = "bad PEM framing or base64";
	for (;;) {
		if (PEM_read_bio(bio, &name, &header, &data, &n) != 1) {
			e = ERR_peek_last_error();
			if (ERR_GET_LIB(e) == ERR_LIB_PEM &&
			    ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
				*why = NULL;
				rv = 1;
			}
			goto out;
		}
		if (label_is(name, label))
			break;
		OPENSSL_free(name);
		OPENSSL_free(header);
		OPENSSL_free(data);
		name = header = NULL;
		data = NULL;
	}
	if (header[0] != '\0') {
		*why = "PEM block with headers";
		goto out;
	}
	if (n <= 0) {
		*why = "empty PEM block";
		goto out;
	}
	*der = data;
	*len = (size_t)n;
	data = NULL;
	*why = NULL;
	rv = 0;
 out:
	OPENSSL_free(name);
	OPENSSL_free(header);
	OPENSSL_free(data);
	ERR_clear_error();
	return rv;
}

/* der_pem_x509 and der_pem_x509_crl for kind k. */
static void *
der_pem_object(const struct der_kind *k, BIO *bio, const char **why)
{
	uint8_t	*der;
	size_t	 len;
	void	*obj;

	if (der_pem_read(bio, k->label, &der, &len, why) != 0)
		return NULL;
	obj = der_object(k, der, len, why);
	OPENSSL_free(der);
	return obj;
}

X509 *
der_pem_x509(BIO *bio, const char **why)
{
	return der_pem_object(&der_cert, bio, why);
}

X509_CRL *
der_pem_x509_crl(BIO *bio, const char **why)
{
	return der_pem_object(&der_crl, bio, why);
}
