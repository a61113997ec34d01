/* SPDX-License-Identifier: Apache-2.0 */
/* A BasicOCSPResponse decoded with its embedded certificates taken from a memo of their bytes (attest/ocsp_memo.h). */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/x509.h>

#include "attest/der.h"
#include "attest/ocsp_memo.h"
#include "attest/util.h"

/* id-pkix-ocsp-basic, 1.3.6.1.5.5.7.48.1.1 (RFC 6960 4.2.1), content octets */
static const uint8_t	basic_oid[] = { 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07,
			    0x30, 0x01, 0x01 };

struct memo_cert {
	uint8_t	*der;
	size_t	 len;
	X509	*x;
};

struct ocsp_memo {
	struct memo_cert	c[OCSP_MEMO_CERTS];
	size_t			next;	/* the slot the next new one takes */
};

struct ocsp_memo *
ocsp_memo_new(void)
{
	return calloc(1, sizeof(struct ocsp_memo));
}

void
ocsp_memo_free(struct ocsp_memo *m)
{
	size_t	i;

	if (m == NULL)
		return;
	for (i = 0; i < OCSP_MEMO_CERTS; i++) {
		free(m->c[i].der);
		X509_free(m->c[i].x);
	}
	free(m);
}

/* The memo's certificate for these bytes, decoded now if new; borrowed. NULL: not one certificate. */
static X509 *
memo_x509(struct ocsp_memo *m, const uint8_t *der, size_t len)
{
	struct memo_cert	*c;
	const char		*why;
	uint8_t			*copy;
	X509			*x;
	size_t			 i;

	for (i = 0; i < OCSP_MEMO_CERTS; i++)
		if (m->c[i].x != NULL && m->c[i].len == len &&
		    memcmp(m->c[i].der, der, len) == 0)
			return m->c[i].x;
	if ((x = der_x509(der, len, &why)) == NULL)
		return NULL;
	if ((copy = malloc(len)) == NULL) {
		X509_free(x);
		return NULL;
	}
	memcpy(copy, der, len);
	c = &m->c[m->next];
	m->next = (m->next + 1) % OCSP_MEMO_CERTS;
	free(c->der);
	X509_free(c->x);
	c->der = copy;
	c->len = len;
	c->x = x;
	return x;
}

/*
 * The frame down to the BasicOCSPResponse's parts: *sig_part from the
 * ResponseData's tag to the signature's end (its three TLVs, adjacent),
 * *tbs the ResponseData's content, *certs the content of the SEQUENCE OF
 * Certificate (len 0 when there is none). 0, or -1 for any other shape.
 */
static int
memo_frame(const uint8_t *resp, size_t len, struct der *sig_part,
    struct der *tbs, struct der *certs)
{
	struct der	d, v, rb, os, oid, basic, tlv0, tlv2, c, seq;

	d.p = resp;
	d.len = len;
	if (der_expect(&d, DER_SEQUENCE, &v) == -1 || d.len != 0 ||
	    der_expect(&v, DER_ENUMERATED, &c) == -1 ||
	    der_expect(&v, DER_CTX0, &rb) == -1 || v.len != 0 ||
	    der_expect(&rb, DER_SEQUENCE, &v) == -1 || rb.len != 0 ||
	    der_expect(&v, DER_OID, &oid) == -1 ||
	    oid.len != sizeof(basic_oid) ||
	    memcmp(oid.p, basic_oid, sizeof(basic_oid)) != 0 ||
	    der_expect(&v, DER_OCTETSTRING, &os) == -1 || v.len != 0 ||
	    der_expect(&os, DER_SEQUENCE, &basic) == -1 || os.len != 0 ||
	    der_expect_tlv(&basic, DER_SEQUENCE, tbs, &tlv0) == -1 ||
	    der_expect(&basic, DER_SEQUENCE, &c) == -1 ||
	    der_expect_tlv(&basic, DER_BITSTRING, &c, &tlv2) == -1)
		return -1;
	sig_part->p = tlv0.p;
	sig_part->len = (size_t)(tlv2.p + tlv2.len - tlv0.p);
	certs->p = NULL;
	certs->len = 0;
	if (basic.len == 0)
		return 0;
	if (der_expect(&basic, DER_CTX0, &c) == -1 || basic.len != 0 ||
	    der_expect(&c, DER_SEQUENCE, &seq) == -1 || c.len != 0)
		return -1;
	*certs = seq;
	return 0;
}

/* SEQUENCE { part } as new DER into *out (caller frees). Its length, or 0. */
static size_t
memo_wrap(const struct der *part, uint8_t **out)
{
	uint8_t	*b;
	size_t	 n = part->len, h = 1, k;

	if (n > 0xffffffffu)
		return 0;
	if (n >= 0x80)
		for (k = n; k > 0; k >>= 8)
			h++;
	if ((b = malloc(1 + h + n)) == NULL)
		return 0;
	b[0] = DER_SEQUENCE;
	if (h == 1)
		b[1] = (uint8_t)n;
	else {
		b[1] = (uint8_t)(0x80 | (h - 1));
		for (k = 0; k < h - 1; k++)
			b[2 + k] = (uint8_t)(n >> (8 * (h - 2 - k)));
	}
	memcpy(b + 1 + h, part->p, n);
	*out = b;
	return 1 + h + n;
}

OCSP_BASICRESP *
ocsp_memo_basic(struct ocsp_memo *m, const uint8_t *resp, size_t len)
{
	OCSP_BASICRESP	*bs = NULL;
	struct der	 sig_part, tbs, certs, c, tlv;
	const uint8_t	*p;
	uint8_t		*wrapped = NULL;
	size_t		 n;
	X509		*x;

	if (m == NULL ||
	    memo_frame(resp, len, &sig_part, &tbs, &certs) == -1 ||
	    certs.len == 0 ||
	    (n = memo_wrap(&sig_part, &wrapped)) == 0 || n > LONG_MAX)
		goto fail;
	p = wrapped;
	if ((bs = d2i_OCSP_BASICRESP(NULL, &p, (long)n)) == NULL ||
	    p != wrapped + n)
		goto fail;
	while (certs.len > 0)
		if (der_expect_tlv(&certs, DER_SEQUENCE, &c, &tlv) == -1 ||
		    (x = memo_x509(m, tlv.p, tlv.len)) == NULL ||
		    OCSP_basic_add1_cert(bs, x) != 1)
			goto fail;
	free(wrapped);
	return bs;
 fail:
	OCSP_BASICRESP_free(bs);
	free(wrapped);
	ERR_clear_error();
	return NULL;
}

int
ocsp_memo_signer_id(const uint8_t *resp, size_t len,
    uint8_t id[OCSP_MEMO_ID_BYTES])
{
	struct der	 sig_part, tbs, certs, rid, c;
	EVP_MD_CTX	*md;
	uint8_t		 n[8], tag;
	size_t		 k;
	int		 ok;

	if (memo_frame(resp, len, &sig_part, &tbs, &certs) == -1)
		return -1;
	/* ResponseData: version [0] EXPLICIT DEFAULT v1, then responderID. */
	if (der_peek(&tbs, DER_CTX0) && der_next(&tbs, &tag, &c) == -1)
		return -1;
	tag = der_peek(&tbs, DER_CTX1) ? DER_CTX1 : DER_CTX2;
	if (der_expect_tlv(&tbs, tag, &c, &rid) == -1 ||
	    (md = EVP_MD_CTX_new()) == NULL)
		return -1;
	for (k = 0; k < sizeof(n); k++)
		n[k] = (uint8_t)((uint64_t)rid.len >> (56 - 8 * k));
	ok = EVP_DigestInit_ex(md, util_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(md, n, sizeof(n)) == 1 &&
	    EVP_DigestUpdate(md, rid.p, rid.len) == 1 &&
	    (certs.len == 0 ||
	    EVP_DigestUpdate(md, certs.p, certs.len) == 1) &&
	    EVP_DigestFinal_ex(md, id, NULL) == 1;
	EVP_MD_CTX_free(md);
	return ok ? 0 : -1;
}
