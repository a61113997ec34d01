/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for attest/der.c: the walker's DER rules, the signatureAlgorithm rule on crafted variants, and every vendor certificate and CRL under tests/vectors. */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
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
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "attest/der.h"
#include "attest/util.h"
#include "tv.h"

#define VEC_DIR		"/tests/vectors/"
#define MAX_SEEN	1024	/* distinct objects the vector scan remembers */
#define MIN_B64_RUN	256	/* shorter base64/hex runs hold no certificate */

#define DIFFERS	"outer signatureAlgorithm differs from the signed one"

/* A DER header for `len` content octets into hdr; its size. */
static size_t
hdr_put(uint8_t hdr[6], uint8_t tag, size_t len)
{
	size_t	 n = 0, i;

	hdr[0] = tag;
	if (len < 0x80) {
		hdr[1] = (uint8_t)len;
		return 2;
	}
	for (i = len; i > 0; i >>= 8)
		n++;
	hdr[1] = (uint8_t)(0x80 | n);
	for (i = 0; i < n; i++)
		hdr[2 + i] = (uint8_t)(len >> (8 * (n - 1 - i)));
	return 2 + n;
}

/*
 * A signed object rebuilt as SEQUENCE { tbs, alg, signature } from the
 * original's tbs and signature TLVs and `alg` (NULL: the original's),
 * with the outer length encoded minimally.
 */
static struct tv_buf
rewrap(const struct tv_buf *orig, const uint8_t *alg, size_t alglen)
{
	struct der	 d, top, v, tbs, oalg, sig;
	uint8_t		 hdr[6];
	struct tv_buf	 b;
	size_t		 clen, h;

	d.p = orig->p;
	d.len = orig->len;
	assert_int_equal(der_expect(&d, DER_SEQUENCE, &top), 0);
	assert_int_equal(der_expect_tlv(&top, DER_SEQUENCE, &v, &tbs), 0);
	assert_int_equal(der_expect_tlv(&top, DER_SEQUENCE, &v, &oalg), 0);
	assert_int_equal(der_expect_tlv(&top, DER_BITSTRING, &v, &sig), 0);
	if (alg == NULL) {
		alg = oalg.p;
		alglen = oalg.len;
	}
	clen = tbs.len + alglen + sig.len;
	h = hdr_put(hdr, DER_SEQUENCE, clen);
	b.len = h + clen;
	assert_non_null(b.p = malloc(b.len));
	memcpy(b.p, hdr, h);
	memcpy(b.p + h, tbs.p, tbs.len);
	memcpy(b.p + h + tbs.len, alg, alglen);
	memcpy(b.p + h + tbs.len + alglen, sig.p, sig.len);
	return b;
}

/* `b` with `n` bytes `ins` inserted at `at`, or `del` bytes removed there. */
static struct tv_buf
splice(const struct tv_buf *b, size_t at, size_t del, const uint8_t *ins,
    size_t n)
{
	struct tv_buf	 r;

	assert_true(at + del <= b->len);
	r.len = b->len - del + n;
	assert_non_null(r.p = malloc(r.len + 1));
	memcpy(r.p, b->p, at);
	memcpy(r.p + at, ins, n);
	memcpy(r.p + at + n, b->p + at + del, b->len - at - del);
	return r;
}

static void
refused(int (*check)(const uint8_t *, size_t, const char **),
    const struct tv_buf *b, const char *want)
{
	const char	*why = NULL;

	assert_int_equal(check(b->p, b->len, &why), -1);
	assert_non_null(why);
	if (want != NULL && strcmp(why, want) != 0)
		fail_msg("refused for \"%s\", want \"%s\"", why, want);
}

static void
accepted(int (*check)(const uint8_t *, size_t, const char **),
    const struct tv_buf *b)
{
	const char	*why = NULL;

	if (check(b->p, b->len, &why) != 0)
		fail_msg("refused: %s", why);
	assert_null(why);
}

/* ---- the walker ---------------------------------------------------------- */

static int
next1(const uint8_t *p, size_t len, uint8_t *tag, struct der *val)
{
	struct der	 d = { p, len };

	return der_next(&d, tag, val);
}

static void
test_walker(void **state)
{
	static const uint8_t	 short_ok[] = { 0x04, 0x02, 0xaa, 0xbb };
	static const uint8_t	 long_ok[] = { 0x04, 0x81, 0x80 };
	static const uint8_t	 nonmin_short[] = { 0x04, 0x81, 0x02, 0xaa, 0xbb };
	static const uint8_t	 nonmin_zero[] = { 0x04, 0x82, 0x00, 0x80 };
	static const uint8_t	 indefinite[] = { 0x30, 0x80, 0x05, 0x00, 0x00,
	    0x00 };
	static const uint8_t	 overrun[] = { 0x04, 0x03, 0xaa, 0xbb };
	static const uint8_t	 five[] = { 0x04, 0x85, 0x01, 0x00, 0x00, 0x00,
	    0x00 };
	static const uint8_t	 high[] = { 0x1f, 0x01, 0x00 };
	static const uint8_t	 two[] = { 0x02, 0x01, 0x05, 0x05, 0x00 };
	uint8_t			 big[3 + 0x80];
	struct der		 d, v, tlv;
	uint8_t			 tag;

	(void)state;
	assert_int_equal(next1(short_ok, sizeof(short_ok), &tag, &v), 0);
	assert_int_equal(tag, DER_OCTETSTRING);
	assert_int_equal(v.len, 2);
	assert_ptr_equal(v.p, short_ok + 2);
	memset(big, 0, sizeof(big));
	memcpy(big, long_ok, sizeof(long_ok));
	assert_int_equal(next1(big, sizeof(big), &tag, &v), 0);
	assert_int_equal(v.len, 0x80);
	assert_int_equal(next1(big, sizeof(big) - 1, &tag, &v), -1);
	assert_int_equal(next1(nonmin_short, sizeof(nonmin_short), &tag, &v),
	    -1);
	memset(big, 0, sizeof(big));
	memcpy(big, nonmin_zero, sizeof(nonmin_zero));
	assert_int_equal(next1(big, sizeof(big), &tag, &v), -1);
	assert_int_equal(next1(indefinite, sizeof(indefinite), &tag, &v), -1);
	assert_int_equal(next1(overrun, sizeof(overrun), &tag, &v), -1);
	assert_int_equal(next1(five, sizeof(five), &tag, &v), -1);
	assert_int_equal(next1(high, sizeof(high), &tag, &v), -1);
	assert_int_equal(next1(short_ok, 1, &tag, &v), -1);

	/* A wrong tag leaves the window where it was; the TLV span is whole. */
	d.p = two;
	d.len = sizeof(two);
	assert_int_equal(der_expect(&d, DER_SEQUENCE, &v), -1);
	assert_ptr_equal(d.p, two);
	assert_int_equal(der_peek(&d, DER_INTEGER), 1);
	assert_int_equal(der_expect_tlv(&d, DER_INTEGER, &v, &tlv), 0);
	assert_ptr_equal(tlv.p, two);
	assert_int_equal(tlv.len, 3);
	assert_int_equal(d.len, 2);
	assert_int_equal(der_peek(&d, 0x05), 1);
}

/* ---- the signatureAlgorithm rule ----------------------------------------- */

/* ecdsa-with-SHA256, no parameters (RFC 5758 3.2): Intel's algorithm. */
static const uint8_t	ecdsa_sha256[] = {
	0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02
};
/* The same with a NULL parameter added. */
static const uint8_t	ecdsa_sha256_null[] = {
	0x30, 0x0c, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02,
	0x05, 0x00
};
/* Offset of the SHA-384 NULL in AMD's RSASSA-PSS AlgorithmIdentifier. */
#define PSS_HASH_NULL_AT	30

/* The outer AlgorithmIdentifier TLV of a certificate or CRL. */
static struct der
outer_alg(const struct tv_buf *b)
{
	struct der	 d, top, v, alg;

	d.p = b->p;
	d.len = b->len;
	assert_int_equal(der_expect(&d, DER_SEQUENCE, &top), 0);
	assert_int_equal(der_expect(&top, DER_SEQUENCE, &v), 0);
	assert_int_equal(der_expect_tlv(&top, DER_SEQUENCE, &v, &alg), 0);
	return alg;
}

/*
 * AMD's RSASSA-PSS AlgorithmIdentifier (RFC 4055: SEQUENCE { OID, params
 * SEQUENCE { [0] { SEQUENCE { sha384, NULL } }, [1] mgf1 .., [2] salt
 * [, [3] trailer] } }) with the hashAlgorithm's NULL left out and the
 * four enclosing lengths shortened: as valid an encoding, another value.
 */
static struct tv_buf
pss_drop_null(struct der alg)
{
	static const uint8_t	 sha384[] = { 0x06, 0x09, 0x60, 0x86, 0x48,
	    0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0x05, 0x00 };
	struct tv_buf		 b;

	assert_true(alg.len > PSS_HASH_NULL_AT + 2 && alg.len < 0x80);
	assert_int_equal(alg.p[13], 0x30);
	assert_int_equal(alg.p[15], 0xa0);
	assert_int_equal(alg.p[17], 0x30);
	assert_memory_equal(alg.p + 19, sha384, sizeof(sha384));
	b.len = alg.len - 2;
	assert_non_null(b.p = malloc(alg.len));
	memcpy(b.p, alg.p, PSS_HASH_NULL_AT);
	memcpy(b.p + PSS_HASH_NULL_AT, alg.p + PSS_HASH_NULL_AT + 2,
	    alg.len - PSS_HASH_NULL_AT - 2);
	b.p[1] -= 2;
	b.p[14] -= 2;
	b.p[16] -= 2;
	b.p[18] -= 2;
	return b;
}

/* An outer NULL parameter added, removed or changed: refused. */
static void
test_null_param(void **state)
{
	struct tv_buf	 root = tv_load(VEC_DIR, "intel/TrustedRootCA.der");
	struct tv_buf	 icrl = tv_load(VEC_DIR,
	    "intel/derived/IntelSGXRootCA.crl.der");
	struct tv_buf	 vcek = tv_load(VEC_DIR, "amd/vcek_milan.der");
	struct tv_buf	 acrl = tv_load(VEC_DIR, "amd/derived/Milan.crl.der");
	struct tv_buf	 b, alg;
	struct der	 a;
	const uint8_t	*p;
	X509		*x;

	(void)state;
	accepted(der_cert_check, &root);
	accepted(der_crl_check, &icrl);
	accepted(der_cert_check, &vcek);
	accepted(der_crl_check, &acrl);

	/* ECDSA: a NULL parameter added to the outer copy only. */
	a = outer_alg(&root);
	assert_int_equal(a.len, sizeof(ecdsa_sha256));
	assert_memory_equal(a.p, ecdsa_sha256, a.len);
	b = rewrap(&root, ecdsa_sha256_null, sizeof(ecdsa_sha256_null));
	refused(der_cert_check, &b, DIFFERS);
	/* OpenSSL's parser takes it: only the byte rule refuses it here. */
	p = b.p;
	assert_non_null(x = d2i_X509(NULL, &p, (long)b.len));
	X509_free(x);
	tv_free(&b);
	a = outer_alg(&icrl);
	assert_int_equal(a.len, sizeof(ecdsa_sha256));
	assert_memory_equal(a.p, ecdsa_sha256, a.len);
	b = rewrap(&icrl, ecdsa_sha256_null, sizeof(ecdsa_sha256_null));
	refused(der_crl_check, &b, DIFFERS);
	tv_free(&b);

	/* PSS: the hash's NULL parameter removed from the outer copy. */
	alg = pss_drop_null(outer_alg(&vcek));
	b = rewrap(&vcek, alg.p, alg.len);
	refused(der_cert_check, &b, DIFFERS);
	tv_free(&b);
	tv_free(&alg);
	alg = pss_drop_null(outer_alg(&acrl));
	b = rewrap(&acrl, alg.p, alg.len);
	refused(der_crl_check, &b, DIFFERS);
	tv_free(&b);
	tv_free(&alg);

	/* Byte 312 of the Milan CRL, the outer hash NULL, flipped. */
	a = outer_alg(&acrl);
	assert_int_equal((size_t)(a.p - acrl.p) + PSS_HASH_NULL_AT, 312);
	assert_int_equal(acrl.p[312], 0x05);
	acrl.p[312] ^= 0x01;
	refused(der_crl_check, &acrl, DIFFERS);
	acrl.p[312] ^= 0x01;

	/* Rebuilt with its own outer copy: the same bytes, accepted. */
	b = rewrap(&acrl, NULL, 0);
	assert_int_equal(b.len, acrl.len);
	assert_memory_equal(b.p, acrl.p, b.len);
	accepted(der_crl_check, &b);
	tv_free(&b);
	tv_free(&root);
	tv_free(&icrl);
	tv_free(&vcek);
	tv_free(&acrl);
}

/* Non-minimal and indefinite lengths, trailing bytes, truncation. */
static void
test_framing(void **state)
{
	static const uint8_t	 zero = 0x00, junk[] = { 0x00, 0x00 };
	static const uint8_t	 long3[] = { 0x83, 0x00 };
	struct tv_buf		 root = tv_load(VEC_DIR,
	    "intel/TrustedRootCA.der");
	struct tv_buf		 crl = tv_load(VEC_DIR,
	    "intel/derived/IntelSGXRootCA.crl.der");
	struct tv_buf		 b, c;
	uint8_t			 alg81[sizeof(ecdsa_sha256) + 1];
	const char		*why;
	struct der		 d, top, v;
	size_t			 n;

	(void)state;
	/* Outer length 82 xx xx written as 83 00 xx xx. */
	assert_int_equal(root.p[1], 0x82);
	b = splice(&root, 1, 1, long3, sizeof(long3));
	refused(der_cert_check, &b, NULL);
	assert_null(der_x509(b.p, b.len, &why));
	tv_free(&b);
	/* The same in the tbs header (and the outer length one more). */
	assert_int_equal(root.p[5], 0x82);
	b = splice(&root, 5, 1, long3, sizeof(long3));
	n = (size_t)root.p[2] << 8 | root.p[3];
	b.p[2] = (uint8_t)((n + 1) >> 8);
	b.p[3] = (uint8_t)(n + 1);
	refused(der_cert_check, &b, NULL);
	tv_free(&b);
	/* The outer AlgorithmIdentifier's short length in long form. */
	alg81[0] = 0x30;
	alg81[1] = 0x81;
	memcpy(alg81 + 2, ecdsa_sha256 + 1, sizeof(ecdsa_sha256) - 1);
	b = rewrap(&root, alg81, sizeof(alg81));
	refused(der_cert_check, &b, NULL);
	tv_free(&b);

	/* Indefinite outer length, with its end-of-contents octets. */
	b = splice(&root, 1, 3, &zero, 0);
	c = splice(&b, 1, 0, (const uint8_t *)"\x80", 1);
	tv_free(&b);
	b = splice(&c, c.len, 0, junk, sizeof(junk));
	tv_free(&c);
	refused(der_cert_check, &b, NULL);
	tv_free(&b);

	/* Anything after the outer SEQUENCE. */
	b = splice(&root, root.len, 0, &zero, 1);
	refused(der_cert_check, &b, "bytes after the outer SEQUENCE");
	assert_null(der_x509(b.p, b.len, &why));
	tv_free(&b);
	b = splice(&crl, crl.len, 0, junk, sizeof(junk));
	refused(der_crl_check, &b, "bytes after the outer SEQUENCE");
	assert_null(der_x509_crl(b.p, b.len, &why));
	tv_free(&b);

	/* Every proper prefix. */
	for (n = 0; n < root.len; n++)
		assert_int_equal(der_cert_check(root.p, n, &why), -1);
	for (n = 0; n < crl.len; n++)
		assert_int_equal(der_crl_check(crl.p, n, &why), -1);

	/* A signature BIT STRING with unused bits. */
	d.p = root.p;
	d.len = root.len;
	assert_int_equal(der_expect(&d, DER_SEQUENCE, &top), 0);
	assert_int_equal(der_expect(&top, DER_SEQUENCE, &v), 0);
	assert_int_equal(der_expect(&top, DER_SEQUENCE, &v), 0);
	assert_int_equal(der_expect(&top, DER_BITSTRING, &v), 0);
	assert_int_equal(v.p[0], 0x00);
	root.p[v.p - root.p] = 0x01;
	refused(der_cert_check, &root, "no DER signature BIT STRING");
	tv_free(&root);
	tv_free(&crl);
}

/* The OpenSSL wrappers: PEM labels, headers, skipped blocks, end of input. */
static void
test_pem(void **state)
{
	struct tv_buf	 root = tv_load(VEC_DIR, "intel/TrustedRootCA.der");
	struct tv_buf	 crl = tv_load(VEC_DIR,
	    "intel/derived/IntelSGXRootCA.crl.der");
	struct tv_buf	 bad;
	BIO		*bio;
	X509		*x;
	X509_CRL	*c;
	const char	*why;
	char		*text;
	long		 n;

	(void)state;
	bad = rewrap(&root, ecdsa_sha256_null, sizeof(ecdsa_sha256_null));

	/* cert, a key-like block (skipped), the old label, then the end */
	assert_non_null(bio = BIO_new(BIO_s_mem()));
	assert_true(PEM_write_bio(bio, "CERTIFICATE", "", root.p,
	    (long)root.len) > 0);
	assert_true(PEM_write_bio(bio, "PUBLIC KEY", "", root.p, 16) > 0);
	assert_true(PEM_write_bio(bio, "X509 CERTIFICATE", "", root.p,
	    (long)root.len) > 0);
	assert_non_null(x = der_pem_x509(bio, &why));
	X509_free(x);
	assert_non_null(x = der_pem_x509(bio, &why));
	X509_free(x);
	assert_null(der_pem_x509(bio, &why));
	assert_null(why);
	assert_int_equal(ERR_peek_error(), 0);
	BIO_free(bio);

	/* The outer NULL variant, raw bytes into PEM: refused, saying why. */
	assert_non_null(bio = BIO_new(BIO_s_mem()));
	assert_true(PEM_write_bio(bio, "CERTIFICATE", "", bad.p,
	    (long)bad.len) > 0);
	assert_null(der_pem_x509(bio, &why));
	assert_non_null(why);
	assert_string_equal(why, DIFFERS);
	BIO_free(bio);

	/* PEM headers are refused. */
	assert_non_null(bio = BIO_new(BIO_s_mem()));
	assert_true(PEM_write_bio(bio, "CERTIFICATE", "Comment: x\n",
	    root.p, (long)root.len) > 0);
	n = BIO_get_mem_data(bio, &text);
	assert_non_null(memmem(text, (size_t)n, "Comment: x", 10));
	assert_null(der_pem_x509(bio, &why));
	assert_non_null(why);
	BIO_free(bio);

	/* CRLs: a certificate block is not one. */
	assert_non_null(bio = BIO_new(BIO_s_mem()));
	assert_true(PEM_write_bio(bio, "CERTIFICATE", "", root.p,
	    (long)root.len) > 0);
	assert_true(PEM_write_bio(bio, "X509 CRL", "", crl.p,
	    (long)crl.len) > 0);
	assert_non_null(c = der_pem_x509_crl(bio, &why));
	X509_CRL_free(c);
	assert_null(der_pem_x509_crl(bio, &why));
	assert_null(why);
	BIO_free(bio);

	/* der_x509 and der_x509_crl do not take each other's objects. */
	assert_null(der_x509_crl(root.p, root.len, &why));
	assert_null(der_x509(crl.p, crl.len, &why));
	assert_null(der_x509(NULL, 0, &why));
	tv_free(&bad);
	tv_free(&root);
	tv_free(&crl);
}

/* ---- every vendor object under tests/vectors ------------------------------ */

struct scan {
	uint8_t	 seen[MAX_SEEN][32];
	size_t	 nseen;
	size_t	 certs;
	size_t	 crls;
	char	 file[4096];
};

/* A lenient TLV length at p (what a BER reader would take), or 0. */
static size_t
tlv_len(const uint8_t *p, size_t len)
{
	size_t	 n, i, v = 0;

	if (len < 2)
		return 0;
	if (p[1] < 0x80)
		return 2 + (size_t)p[1];
	n = p[1] & 0x7f;
	if (n == 0 || n > 4 || len < 2 + n)
		return 0;
	for (i = 0; i < n; i++)
		v = (v << 8) | p[2 + i];
	return 2 + n + v;
}

/* Remember an object by its SHA-256; 1 if it is new. */
static int
remember(struct scan *s, const uint8_t *p, size_t len)
{
	uint8_t	 md[32];
	size_t	 i;

	assert_int_equal(EVP_Digest(p, len, md, NULL, EVP_sha256(), NULL), 1);
	for (i = 0; i < s->nseen; i++)
		if (memcmp(s->seen[i], md, 32) == 0)
			return 0;
	assert_true(s->nseen < MAX_SEEN);
	memcpy(s->seen[s->nseen++], md, 32);
	return 1;
}

/* Is p[0, len) exactly one certificate (1), CRL (2), or neither (0)? */
static int
kind_of(const uint8_t *p, size_t len)
{
	const uint8_t	*q = p;
	X509		*x;
	X509_CRL	*c;
	int		 k = 0;

	if ((x = d2i_X509(NULL, &q, (long)len)) != NULL) {
		k = q == p + len ? 1 : 0;
		X509_free(x);
	}
	q = p;
	if (k == 0 && (c = d2i_X509_CRL(NULL, &q, (long)len)) != NULL) {
		k = q == p + len ? 2 : 0;
		X509_CRL_free(c);
	}
	ERR_clear_error();
	return k;
}

/* Every certificate and CRL that OpenSSL finds anywhere in p[0, len). */
static void
scan_der(struct scan *s, const uint8_t *p, size_t len)
{
	const char	*why;
	size_t		 i, n;
	int		 k;

	for (i = 0; i + 4 < len; i++) {
		if (p[i] != 0x30 || (n = tlv_len(p + i, len - i)) < 64 ||
		    n > len - i || (k = kind_of(p + i, n)) == 0)
			continue;
		if (remember(s, p + i, n)) {
			if ((k == 1 ? der_cert_check : der_crl_check)(p + i, n,
			    &why) != 0)
				fail_msg("%s: genuine %s at %zu refused: %s",
				    s->file, k == 1 ? "certificate" : "CRL", i,
				    why);
			if (k == 1)
				s->certs++;
			else
				s->crls++;
		}
		i += n - 1;
	}
}

/* The decoded content of every PEM block in p[0, len), whatever its label. */
static void
scan_pem(struct scan *s, const uint8_t *p, size_t len)
{
	BIO		*bio;
	char		*name, *header;
	uint8_t		*data;
	long		 n;

	if (len > INT32_MAX || memmem(p, len, "-----BEGIN ", 11) == NULL)
		return;
	assert_non_null(bio = BIO_new_mem_buf(p, (int)len));
	while (PEM_read_bio(bio, &name, &header, &data, &n) == 1) {
		scan_der(s, data, (size_t)n);
		OPENSSL_free(name);
		OPENSSL_free(header);
		OPENSSL_free(data);
	}
	ERR_clear_error();
	BIO_free(bio);
}

static int
is_b64(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=';
}

/*
 * Runs of base64 (whitespace, "\n" escapes and XML &#13;/&#10; inside
 * them are dropped) and of hex, decoded: KeyInfo certificates, evidence
 * "certificate" fields (base64 of PEM), PCCS hex CRLs.
 */
static void
scan_runs(struct scan *s, const uint8_t *p, size_t len)
{
	uint8_t	*txt, *bin;
	size_t	 i = 0, j, n;
	int	 m, hi, lo;

	assert_non_null(txt = malloc(len + 4));
	assert_non_null(bin = malloc(len + 4));
	while (i < len) {
		for (n = 0, j = i; j < len; j++) {
			if (is_b64(p[j]))
				txt[n++] = p[j];
			else if (p[j] == '\n' || p[j] == '\r' || p[j] == ' ')
				continue;
			else if (p[j] == '\\' && j + 1 < len && p[j + 1] == 'n')
				j++;
			else if (j + 5 <= len && (memcmp(p + j, "&#13;", 5) == 0 ||
			    memcmp(p + j, "&#10;", 5) == 0))
				j += 4;
			else
				break;
		}
		if (n >= MIN_B64_RUN) {
			while (n % 4 != 0)
				txt[n++] = '=';
			if ((m = EVP_DecodeBlock(bin, txt, (int)n)) > 0) {
				scan_der(s, bin, (size_t)m);
				scan_pem(s, bin, (size_t)m);
			}
			for (m = 0; (size_t)m + 1 < n &&
			    (hi = util_hexval(txt[m])) >= 0 &&
			    (lo = util_hexval(txt[m + 1])) >= 0; m += 2)
				bin[m / 2] = (uint8_t)(hi << 4 | lo);
			if ((size_t)m >= MIN_B64_RUN)
				scan_der(s, bin, (size_t)m / 2);
		}
		i = j > i ? j : i + 1;
	}
	free(txt);
	free(bin);
}

/* Percent-decoded (issuer-chain headers) and \n-unescaped (JSON) text. */
static void
scan_text(struct scan *s, const uint8_t *p, size_t len)
{
	uint8_t	*a, *b;
	size_t	 i, na = 0, nb = 0;
	int	 hi, lo;

	assert_non_null(a = malloc(len + 1));
	assert_non_null(b = malloc(len + 1));
	for (i = 0; i < len; i++) {
		if (p[i] == '%' && i + 2 < len && (hi = util_hexval(p[i + 1])) >= 0 &&
		    (lo = util_hexval(p[i + 2])) >= 0) {
			a[na++] = (uint8_t)(hi << 4 | lo);
			i += 2;
		} else
			a[na++] = p[i];
	}
	for (i = 0; i < len; i++) {
		if (p[i] == '\\' && i + 1 < len && p[i + 1] == 'n') {
			b[nb++] = '\n';
			i++;
		} else if (p[i] == '\\' && i + 1 < len && p[i + 1] == '/') {
			b[nb++] = '/';
			i++;
		} else
			b[nb++] = p[i];
	}
	scan_pem(s, p, len);
	scan_pem(s, a, na);
	scan_pem(s, b, nb);
	free(a);
	free(b);
}

static void
scan_dir(struct scan *s, const char *dir)
{
	DIR		*d;
	struct dirent	*e;
	struct stat	 st;
	struct tv_buf	 b;
	char		 path[4096];

	if ((d = opendir(dir)) == NULL)
		fail_msg("%s: cannot open (set top_srcdir)", dir);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		assert_int_equal(stat(path, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			scan_dir(s, path);
			continue;
		}
		snprintf(s->file, sizeof(s->file), "%s", path);
		b.p = tv_file(path, &b.len);
		scan_der(s, b.p, b.len);
		scan_text(s, b.p, b.len);
		scan_runs(s, b.p, b.len);
		tv_free(&b);
	}
	closedir(d);
}

/*
 * Every certificate and CRL in the vendor vectors, in whatever wrapping
 * they come (DER, PEM, percent-encoded headers, JSON, XML KeyInfo, hex),
 * passes. DER_VECTORS=<dir> scans another tree the same way.
 */
/* tv_flip_marks, which the flip tests sample by: headers, nested ones, the stride. */
static void
test_flip_marks(void **state)
{
	/* SEQUENCE { INTEGER 5, OCTET STRING aa bb cc dd ee } */
	static const uint8_t	seq[] = { 0x30, 0x0a, 0x02, 0x01, 0x05, 0x04,
				    0x05, 0xaa, 0xbb, 0xcc, 0xdd, 0xee };
	static const uint8_t	want[] = { 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 0 };
	/* [31] (high tag number) with a long-form length of 2 */
	static const uint8_t	high[] = { 0x9f, 0x1f, 0x81, 0x02, 0x01, 0x02 };
	static const uint8_t	bad[] = { 0x30, 0x05, 0x02, 0x01 };
	uint8_t			m[sizeof(seq)];

	(void)state;
	assert_int_equal(tv_flip_marks(seq, sizeof(seq), m), 8);
	assert_memory_equal(m, want, sizeof(want));
	assert_int_equal(tv_flip_marks(high, sizeof(high), m), 5);
	assert_true(m[0] && m[1] && m[2] && m[3] && m[4] && !m[5]);
	/* Not DER: every byte. */
	assert_int_equal(tv_flip_marks(bad, sizeof(bad), m), sizeof(bad));
}

static void
test_vendor_vectors(void **state)
{
	const char	*top = getenv("top_srcdir"), *other;
	struct scan	*s;
	char		 dir[4096];

	(void)state;
	assert_non_null(s = calloc(1, sizeof(*s)));
	if ((other = getenv("DER_VECTORS")) != NULL)
		snprintf(dir, sizeof(dir), "%s", other);
	else
		snprintf(dir, sizeof(dir), "%s/tests/vectors",
		    top ? top : ".");
	scan_dir(s, dir);
	if (getenv("VERBOSE") != NULL)
		printf("%s: %zu certificates, %zu CRLs\n", dir, s->certs,
		    s->crls);
	/* The NVIDIA, Intel and AMD trees hold dozens of each kind. */
	assert_true(s->certs >= 40);
	assert_true(s->crls >= 5);
	free(s);
}

int
main(void)
{
	const struct CMUnitTest	 tests[] = {
		cmocka_unit_test(test_walker),
		cmocka_unit_test(test_null_param),
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_pem),
		cmocka_unit_test(test_flip_marks),
		cmocka_unit_test(test_vendor_vectors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
