/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for attest/ocsp_req.c: NVAT requests, keys, renonce, hostile input. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attest/ocsp_req.h"
#include "tv.h"

#define VEC_DIR	"/tests/vectors/nvidia/derived/ocsp_requests/"

static const uint8_t	oid_sha1[] = { 0x2b, 0x0e, 0x03, 0x02, 0x1a };
static const uint8_t	oid_sha384[] = {
	0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02
};

/* The table in tests/vectors/nvidia/SOURCES.md. */
static const struct vector {
	const char	*file;
	int		 sha384;
	int		 nonce;
	const char	*name_hash;
	const char	*key_hash;
	const char	*serial;
} vectors[] = {
	{ "dev_1_gsp_brom_sha1_no_nonce.der", 0, 0,
	    "25D92E964356717A4F5BF81F01CFFDFC201020DB",
	    "2968CB162CD0779572A2791003E69EBA0CCC0A94", "412921CE551E4EEDA3" },
	{ "dev_1_gsp_brom_sha1_nonce.der", 0, 1,
	    "25D92E964356717A4F5BF81F01CFFDFC201020DB",
	    "2968CB162CD0779572A2791003E69EBA0CCC0A94", "412921CE551E4EEDA3" },
	{ "dev_1_gsp_brom_sha1_nonce_b.der", 0, 1,
	    "25D92E964356717A4F5BF81F01CFFDFC201020DB",
	    "2968CB162CD0779572A2791003E69EBA0CCC0A94", "412921CE551E4EEDA3" },
	{ "dev_1_gsp_brom_sha384_nonce.der", 1, 1,
	    "DE9E7FC5A7794EB338F829CBB0D72901A429EAC54D7A8F8280D616B4F24A77C7"
	    "746F9678C7914DD26E1C85DF428CF16D",
	    "9666BCF53CD46C03999203AFECD7FCD315CE8369AA5DE92BF6F7F143497A6EBF"
	    "A904365A55D336A96F7A923F0C28E763", "412921CE551E4EEDA3" },
	{ "dev_2_provisioner_ica1_sha1_nonce.der", 0, 1,
	    "A6297A5536F25D6B2C1BEBC55BD2CC1D11867BD3",
	    "0742A0EB039C80607BA14161994DAE25F7C29B1E",
	    "6AFE7184F92232C8DF7B242261776E56" },
	{ "dev_3_gh100_identity_sha1_nonce.der", 0, 1,
	    "B5FBF0D6CBBB46CEE7AE74CF946B0F9E8B258FE5",
	    "5785FF83F263CC657D68B73A5BF48D4ACBFB495F",
	    "4C255EDE3BD001BF3F4A3B605FCA898A" },
	{ "rim_0_hcc_rim_l4_signer_sha1_nonce.der", 0, 1,
	    "27C00D8DAB68F465BD71258DADD158A30B5C99F0",
	    "2D3E1FE02672EE00BFA96C52AE5E6314C1A1FE1C",
	    "5E9E59C857378C98E1B4F5BAED9BA3A7BDFB5DFF" },
	{ "rim_1_ref_value_l3_gh100_002_sha1_nonce.der", 0, 1,
	    "64448374AF986A56B2370917B9D3C23A96AC7B21",
	    "4802B25616DA553BE2512D952C847411BD21491E",
	    "B4EBF6542022FDEC4512F24BA503A3CB" },
	{ "rim_2_ref_value_gh100_ca_sha1_nonce.der", 0, 1,
	    "0F63F0E5EF066195AA6AC63853F6B6BA4CAE168F",
	    "A5A5EB38F2B8643024D3C0C1B249F9F78CDE6630",
	    "C6DBF0754093FDEB4333F34BA205B4DC" },
};

static uint8_t *
load(const char *name, size_t *len)
{
	char	rel[TV_REL_BYTES];

	snprintf(rel, sizeof(rel), VEC_DIR "%s", name);
	return tv_src(rel, len);
}

static void
assert_hex(const uint8_t *p, size_t len, const char *hex)
{
	char	 got[512];
	size_t	 i;

	assert_true(len * 2 < sizeof(got));
	for (i = 0; i < len; i++)
		snprintf(got + 2 * i, 3, "%02X", p[i]);
	got[2 * len] = '\0';
	assert_string_equal(got, hex);
}

static void
key_of(const char *file, uint8_t key[OCSP_KEY_BYTES])
{
	struct ocsp_req	 req;
	const char	*why;
	uint8_t		*der;
	size_t		 len;

	der = load(file, &len);
	assert_int_equal(ocsp_req_parse(der, len, &req, &why), 0);
	ocsp_req_key(&req, key);
	free(der);
}

/* Every real request parses to exactly the fields in SOURCES.md. */
static void
test_vectors_fields(void **state)
{
	struct ocsp_req			 req;
	const struct ocsp_certid	*id;
	const char			*why;
	uint8_t				*der;
	size_t				 i, len;

	(void)state;
	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		der = load(vectors[i].file, &len);
		why = NULL;
		if (ocsp_req_parse(der, len, &req, &why) != 0)
			fail_msg("%s: %s", vectors[i].file, why);
		assert_int_equal(req.ncertids, 1);
		id = &req.certids[0];
		if (vectors[i].sha384) {
			assert_int_equal(id->alg_oid_len, sizeof(oid_sha384));
			assert_memory_equal(id->alg_oid, oid_sha384,
			    sizeof(oid_sha384));
		} else {
			assert_int_equal(id->alg_oid_len, sizeof(oid_sha1));
			assert_memory_equal(id->alg_oid, oid_sha1,
			    sizeof(oid_sha1));
		}
		assert_hex(id->name_hash, id->name_hash_len,
		    vectors[i].name_hash);
		assert_hex(id->key_hash, id->key_hash_len, vectors[i].key_hash);
		/* INTEGER content: a leading 00 keeps it positive */
		if (id->serial_len > 1 && id->serial[0] == 0x00)
			assert_hex(id->serial + 1, id->serial_len - 1,
			    vectors[i].serial);
		else
			assert_hex(id->serial, id->serial_len,
			    vectors[i].serial);
		if (vectors[i].nonce) {
			/* extnValue = OCTET STRING(16 random bytes) */
			assert_non_null(req.nonce);
			assert_int_equal(req.nonce_len, 2 + 16);
			assert_int_equal(req.nonce[0], 0x04);
			assert_int_equal(req.nonce[1], 16);
			assert_int_equal(req.nonce_critical, 0);
		} else {
			assert_null(req.nonce);
			assert_int_equal(req.nonce_len, 0);
		}
		/* every pointer borrows the input */
		assert_true(id->serial > der && id->serial < der + len);
		free(der);
	}
}

/* One cache entry per certificate and hash algorithm, whatever the nonce. */
static void
test_keys(void **state)
{
	uint8_t	 a[OCSP_KEY_BYTES], b[OCSP_KEY_BYTES], c[OCSP_KEY_BYTES];
	uint8_t	 d[OCSP_KEY_BYTES], e[OCSP_KEY_BYTES];

	(void)state;
	key_of("dev_1_gsp_brom_sha1_nonce.der", a);
	key_of("dev_1_gsp_brom_sha1_nonce_b.der", b);
	key_of("dev_1_gsp_brom_sha1_no_nonce.der", c);
	key_of("dev_1_gsp_brom_sha384_nonce.der", d);
	key_of("dev_2_provisioner_ica1_sha1_nonce.der", e);
	assert_memory_equal(a, b, OCSP_KEY_BYTES);
	assert_memory_equal(a, c, OCSP_KEY_BYTES);
	assert_memory_not_equal(a, d, OCSP_KEY_BYTES);
	assert_memory_not_equal(a, e, OCSP_KEY_BYTES);
}

/* The two real nonce requests really do carry different nonces. */
static void
test_nonces_differ(void **state)
{
	struct ocsp_req	 r1, r2;
	uint8_t		*d1, *d2;
	size_t		 l1, l2;

	(void)state;
	d1 = load("dev_1_gsp_brom_sha1_nonce.der", &l1);
	d2 = load("dev_1_gsp_brom_sha1_nonce_b.der", &l2);
	assert_int_equal(ocsp_req_parse(d1, l1, &r1, NULL), 0);
	assert_int_equal(ocsp_req_parse(d2, l2, &r2, NULL), 0);
	assert_int_equal(r1.nonce_len, r2.nonce_len);
	assert_memory_not_equal(r1.nonce, r2.nonce, r1.nonce_len);
	free(d1);
	free(d2);
}

static void
test_renonce(void **state)
{
	static const uint8_t	 nonce[16] = "stapled-refresh";
	struct ocsp_req		 orig, re;
	uint8_t			 k1[OCSP_KEY_BYTES], k2[OCSP_KEY_BYTES];
	uint8_t			*der, *out, *out2;
	size_t			 len, olen, olen2;
	const char		*why;

	(void)state;
	der = load("dev_1_gsp_brom_sha1_nonce.der", &len);
	assert_int_equal(ocsp_req_parse(der, len, &orig, &why), 0);
	ocsp_req_key(&orig, k1);

	out = ocsp_req_renonce(der, len, nonce, sizeof(nonce), &olen);
	assert_non_null(out);
	assert_int_equal(ocsp_req_parse(out, olen, &re, &why), 0);
	ocsp_req_key(&re, k2);
	assert_memory_equal(k1, k2, OCSP_KEY_BYTES);
	assert_non_null(re.nonce);
	assert_int_equal(re.nonce_len, 2 + sizeof(nonce));
	assert_int_equal(re.nonce[0], 0x04);
	assert_int_equal(re.nonce[1], sizeof(nonce));
	assert_memory_equal(re.nonce + 2, nonce, sizeof(nonce));
	assert_memory_not_equal(re.nonce, orig.nonce, re.nonce_len);
	/* the only difference is the nonce: same length, same shape */
	assert_int_equal(olen, len);

	/* a request without a nonce gains one, and the key holds */
	free(der);
	der = load("dev_1_gsp_brom_sha1_no_nonce.der", &len);
	out2 = ocsp_req_renonce(der, len, nonce, sizeof(nonce), &olen2);
	assert_non_null(out2);
	assert_int_equal(ocsp_req_parse(out2, olen2, &re, &why), 0);
	assert_non_null(re.nonce);
	ocsp_req_key(&re, k2);
	assert_memory_equal(k1, k2, OCSP_KEY_BYTES);
	/* renoncing the result again gives the same bytes */
	free(out);
	out = ocsp_req_renonce(out2, olen2, nonce, sizeof(nonce), &olen);
	assert_non_null(out);
	assert_int_equal(olen, olen2);
	assert_memory_equal(out, out2, olen);

	/* refusals */
	assert_null(ocsp_req_renonce(der, len, NULL, 16, &olen));
	assert_int_equal(olen, 0);
	assert_null(ocsp_req_renonce(der, len, nonce, 0, &olen));
	assert_null(ocsp_req_renonce(der, len - 1, nonce, 16, &olen));
	assert_null(ocsp_req_renonce((const uint8_t *)"\x30\x00", 2, nonce,
	    16, &olen));
	free(out);
	free(out2);
	free(der);
}

/* ---- a small DER writer for hand-made requests ------------------------- */

struct buf {
	uint8_t	 b[OCSP_MAX_REQUEST_BYTES + 64];
	size_t	 n;
};

static void
put(struct buf *o, const void *p, size_t len)
{
	assert_true(o->n + len <= sizeof(o->b));
	memcpy(o->b + o->n, p, len);
	o->n += len;
}

/* Append tag, length, and `c` as content. */
static void
tlv(struct buf *o, uint8_t tag, const struct buf *c)
{
	uint8_t	 h[6];
	size_t	 n = 0;

	h[n++] = tag;
	if (c->n < 0x80)
		h[n++] = (uint8_t)c->n;
	else if (c->n < 0x100) {
		h[n++] = 0x81;
		h[n++] = (uint8_t)c->n;
	} else {
		h[n++] = 0x82;
		h[n++] = (uint8_t)(c->n >> 8);
		h[n++] = (uint8_t)c->n;
	}
	put(o, h, n);
	put(o, c->b, c->n);
}

static void
tlv_raw(struct buf *o, uint8_t tag, const void *p, size_t len)
{
	static struct buf	 c;

	c.n = 0;
	put(&c, p, len);
	tlv(o, tag, &c);
}

enum params { P_NULL, P_ABSENT };

/* One Request for serial `serial`. */
static void
request(struct buf *o, enum params params, uint8_t serial)
{
	static const uint8_t	 nh[20] = { 1 }, kh[20] = { 2 };
	static struct buf	 alg, cid, req;
	uint8_t			 s[2] = { 0x01, serial };

	alg.n = cid.n = req.n = 0;
	tlv_raw(&alg, 0x06, oid_sha1, sizeof(oid_sha1));
	if (params == P_NULL)
		put(&alg, "\x05\x00", 2);
	tlv(&cid, 0x30, &alg);
	tlv_raw(&cid, 0x04, nh, sizeof(nh));
	tlv_raw(&cid, 0x04, kh, sizeof(kh));
	tlv_raw(&cid, 0x02, s, sizeof(s));
	tlv(&req, 0x30, &cid);
	tlv(o, 0x30, &req);
}

/* A whole OCSPRequest with `n` Requests and an optional nonce extension. */
static void
make_req(struct buf *o, enum params params, size_t n, size_t nonce_len,
    int critical)
{
	static struct buf	 list, tbs, exts, ext, extn, v, nonce;
	static const uint8_t	 oid_nonce[] = {
		0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x02
	};
	size_t			 i;

	list.n = tbs.n = exts.n = ext.n = extn.n = v.n = nonce.n = 0;
	for (i = 0; i < n; i++)
		request(&list, params, (uint8_t)i);
	tlv(&tbs, 0x30, &list);
	if (nonce_len > 0) {
		memset(nonce.b, 0xa5, nonce_len);
		nonce.n = nonce_len;
		tlv(&v, 0x04, &nonce);		/* Nonce ::= OCTET STRING */
		tlv_raw(&ext, 0x06, oid_nonce, sizeof(oid_nonce));
		if (critical)
			put(&ext, "\x01\x01\xff", 3);
		tlv(&ext, 0x04, &v);		/* extnValue */
		tlv(&extn, 0x30, &ext);
		tlv(&exts, 0x30, &extn);
		tlv(&tbs, 0xa2, &exts);
	}
	o->n = 0;
	{
		static struct buf	 outer;

		outer.n = 0;
		tlv(&outer, 0x30, &tbs);
		tlv(o, 0x30, &outer);
	}
}

static void
test_null_vs_absent_params(void **state)
{
	static struct buf	 a, b;
	struct ocsp_req		 ra, rb;
	uint8_t			 ka[OCSP_KEY_BYTES], kb[OCSP_KEY_BYTES];
	const char		*why;

	(void)state;
	make_req(&a, P_NULL, 1, 0, 0);
	make_req(&b, P_ABSENT, 1, 0, 0);
	assert_int_not_equal(a.n, b.n);
	assert_int_equal(ocsp_req_parse(a.b, a.n, &ra, &why), 0);
	assert_int_equal(ocsp_req_parse(b.b, b.n, &rb, &why), 0);
	ocsp_req_key(&ra, ka);
	ocsp_req_key(&rb, kb);
	assert_memory_equal(ka, kb, OCSP_KEY_BYTES);
}

static void
test_certid_count(void **state)
{
	static struct buf	 o;
	struct ocsp_req		 r;
	uint8_t			 k1[OCSP_KEY_BYTES], k2[OCSP_KEY_BYTES];
	const char		*why;

	(void)state;
	make_req(&o, P_NULL, OCSP_MAX_CERTIDS, 0, 0);
	assert_int_equal(ocsp_req_parse(o.b, o.n, &r, &why), 0);
	assert_int_equal(r.ncertids, OCSP_MAX_CERTIDS);
	assert_int_equal(r.certids[15].serial[1], 15);
	ocsp_req_key(&r, k1);
	make_req(&o, P_NULL, 2, 0, 0);
	assert_int_equal(ocsp_req_parse(o.b, o.n, &r, &why), 0);
	ocsp_req_key(&r, k2);
	assert_memory_not_equal(k1, k2, OCSP_KEY_BYTES);

	make_req(&o, P_NULL, OCSP_MAX_CERTIDS + 1, 0, 0);
	assert_int_equal(ocsp_req_parse(o.b, o.n, &r, &why), -1);
	assert_non_null(why);
	make_req(&o, P_NULL, 0, 0, 0);
	assert_int_equal(ocsp_req_parse(o.b, o.n, &r, &why), -1);
}

static void
test_nonce_limits(void **state)
{
	static struct buf	 o;
	struct ocsp_req		 r;
	const char		*why;

	(void)state;
	/* nvtrust: 32-byte nonce, critical */
	make_req(&o, P_NULL, 1, 32, 1);
	assert_int_equal(ocsp_req_parse(o.b, o.n, &r, &why), 0);
	assert_int_equal(r.nonce_len, 34);
	assert_int_equal(r.nonce_critical, 1);
	/* the stored extnValue may be OCSP_MAX_NONCE_BYTES, no more */
	make_req(&o, P_NULL, 1, OCSP_MAX_NONCE_BYTES - 2, 0);
	assert_int_equal(ocsp_req_parse(o.b, o.n, &r, &why), 0);
	assert_int_equal(r.nonce_len, OCSP_MAX_NONCE_BYTES);
	make_req(&o, P_NULL, 1, OCSP_MAX_NONCE_BYTES - 1, 0);
	assert_int_equal(ocsp_req_parse(o.b, o.n, &r, &why), -1);
	assert_null(r.nonce);
}

static void
test_hostile_shapes(void **state)
{
	static struct buf	 o;
	struct ocsp_req		 r;
	const char		*why;
	uint8_t			*der, *big;
	size_t			 len;
	static const uint8_t	 indefinite[] = { 0x30, 0x80, 0x00, 0x00 };
	static const uint8_t	 longlen[] = {
		0x30, 0x85, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00
	};
	static const uint8_t	 overrun[] = { 0x30, 0x82, 0xff, 0xff, 0x30 };
	static const uint8_t	 nonminimal[] = {
		0x30, 0x81, 0x02, 0x30, 0x00
	};

	(void)state;
	assert_int_equal(ocsp_req_parse(NULL, 0, &r, &why), -1);
	assert_int_equal(ocsp_req_parse((const uint8_t *)"", 0, &r, &why), -1);
	assert_int_equal(ocsp_req_parse(indefinite, sizeof(indefinite), &r,
	    &why), -1);
	assert_int_equal(ocsp_req_parse(longlen, sizeof(longlen), &r, &why),
	    -1);
	assert_int_equal(ocsp_req_parse(overrun, sizeof(overrun), &r, &why),
	    -1);
	assert_int_equal(ocsp_req_parse(nonminimal, sizeof(nonminimal), &r,
	    &why), -1);

	/* trailing garbage after a real request */
	der = load("dev_1_gsp_brom_sha1_nonce.der", &len);
	o.n = 0;
	put(&o, der, len);
	put(&o, "\x00", 1);
	assert_int_equal(ocsp_req_parse(o.b, o.n, &r, &why), -1);
	assert_null(r.nonce);
	assert_int_equal(r.ncertids, 0);

	/* larger than any request we accept, even if well-formed */
	big = calloc(1, OCSP_MAX_REQUEST_BYTES + 1);
	assert_non_null(big);
	memcpy(big, der, len);
	assert_int_equal(ocsp_req_parse(big, OCSP_MAX_REQUEST_BYTES + 1, &r,
	    &why), -1);
	free(big);
	free(der);
}

/* Every prefix of a real request is rejected, none crashes. */
static void
test_truncations(void **state)
{
	struct ocsp_req	 r;
	const char	*why;
	uint8_t		*der, *copy;
	size_t		 len, n, f;
	static const char *const files[] = {
		"dev_1_gsp_brom_sha1_nonce.der",
		"dev_1_gsp_brom_sha384_nonce.der",
		"rim_1_ref_value_l3_gh100_002_sha1_nonce.der",
	};

	(void)state;
	for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		der = load(files[f], &len);
		for (n = 0; n < len; n++) {
			/* exactly n bytes: ASAN sees any overread */
			copy = malloc(n ? n : 1);
			assert_non_null(copy);
			memcpy(copy, der, n);
			if (ocsp_req_parse(copy, n, &r, &why) != -1)
				fail_msg("%s: prefix %zu accepted", files[f],
				    n);
			assert_non_null(why);
			free(copy);
		}
		free(der);
	}
}

/* Every value of every byte: never a crash, and what parses is sane. */
static void
test_byte_flips(void **state)
{
	struct ocsp_req	 r;
	const char	*why;
	uint8_t		*der, *copy, key[OCSP_KEY_BYTES];
	size_t		 len, i, k;
	unsigned	 v, accepted = 0;

	(void)state;
	der = load("dev_1_gsp_brom_sha1_nonce.der", &len);
	copy = malloc(len);
	assert_non_null(copy);
	for (i = 0; i < len; i++) {
		for (v = 1; v < 256; v++) {
			memcpy(copy, der, len);
			copy[i] ^= (uint8_t)v;
			if (ocsp_req_parse(copy, len, &r, &why) == -1) {
				assert_non_null(why);
				continue;
			}
			accepted++;
			assert_true(r.ncertids >= 1 &&
			    r.ncertids <= OCSP_MAX_CERTIDS);
			for (k = 0; k < r.ncertids; k++) {
				assert_true(r.certids[k].serial >= copy);
				assert_true(r.certids[k].serial +
				    r.certids[k].serial_len <= copy + len);
			}
			if (r.nonce != NULL)
				assert_true(r.nonce + r.nonce_len <=
				    copy + len);
			ocsp_req_key(&r, key);
		}
	}
	/* flips inside hash and nonce octets still parse: the test has teeth */
	assert_true(accepted > 0);
	free(copy);
	free(der);
}

static void
test_resp_status(void **state)
{
	static const uint8_t	 ok_shape[] = {
		0x30, 0x07, 0x0a, 0x01, 0x00, 0xa0, 0x02, 0x30, 0x00
	};
	static const uint8_t	 bare_ok[] = { 0x30, 0x03, 0x0a, 0x01, 0x00 };
	static const uint8_t	 four[] = { 0x30, 0x03, 0x0a, 0x01, 0x04 };
	static const uint8_t	 trailing[] = {
		0x30, 0x03, 0x0a, 0x01, 0x03, 0x00
	};
	static const uint8_t	 integer[] = { 0x30, 0x03, 0x02, 0x01, 0x03 };

	(void)state;
	assert_int_equal(ocsp_resp_status(OCSP_RESP_MALFORMED, 5), 1);
	assert_int_equal(ocsp_resp_status(OCSP_RESP_INTERNAL, 5), 2);
	assert_int_equal(ocsp_resp_status(OCSP_RESP_TRYLATER, 5), 3);
	assert_int_equal(ocsp_resp_status(OCSP_RESP_UNAUTHORIZED, 5), 6);
	assert_int_equal(ocsp_resp_status(ok_shape, sizeof(ok_shape)), 0);
	assert_int_equal(ocsp_resp_status(bare_ok, sizeof(bare_ok)), -1);
	assert_int_equal(ocsp_resp_status(four, sizeof(four)), -1);
	assert_int_equal(ocsp_resp_status(trailing, sizeof(trailing)), -1);
	assert_int_equal(ocsp_resp_status(integer, sizeof(integer)), -1);
	assert_int_equal(ocsp_resp_status(OCSP_RESP_TRYLATER, 4), -1);
	assert_int_equal(ocsp_resp_status(NULL, 0), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors_fields),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_nonces_differ),
		cmocka_unit_test(test_renonce),
		cmocka_unit_test(test_null_vs_absent_params),
		cmocka_unit_test(test_certid_count),
		cmocka_unit_test(test_nonce_limits),
		cmocka_unit_test(test_hostile_shapes),
		cmocka_unit_test(test_truncations),
		cmocka_unit_test(test_byte_flips),
		cmocka_unit_test(test_resp_status),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
