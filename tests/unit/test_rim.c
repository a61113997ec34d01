/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for attest/rim.c: RIM IDs, the service envelope, KeyInfo extraction and the chain to the pinned CoRIM root. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "attest/rim.h"
#include "tv.h"

#define VEC		"/tests/vectors/nvidia/"
#define EXPIRED_XML	VEC "attestation-sdk/testdata/sample_rims/" \
	"NV_GPU_DRIVER_GH100_570.124.03_expired.xml"
#define SWIDTAG		VEC "nvtrust/local_gpu_verifier/samples/" \
	"1010_0200_882_96005E0001_PROD.swidtag"

/* 2026-07-01T00:00:00Z: the 550.144.03 signer is valid until 2026-12-30. */
#define NOW_2026	((time_t)1782864000)
#define NOW_2030	((time_t)1893456000)

static struct rim_trust	*trust;

static uint8_t *
load(const char *rel, size_t *len)
{
	return tv_src(rel, len);
}

/* The RIM service's JSON around a document, built here as NVIDIA builds it. */
static char *
envelope(const char *id, const uint8_t *xml, size_t len, int upper_hex)
{
	unsigned char	 md[32];
	char		 hex[65], *b64, *json;
	size_t		 i, jlen;
	int		 n;

	assert_int_equal(EVP_Digest(xml, len, md, NULL, EVP_sha256(), NULL), 1);
	for (i = 0; i < sizeof(md); i++)
		snprintf(hex + 2 * i, 3, upper_hex ? "%02X" : "%02x", md[i]);
	b64 = malloc(len / 3 * 4 + 8);
	assert_non_null(b64);
	n = EVP_EncodeBlock((unsigned char *)b64, xml, (int)len);
	assert_true(n > 0);
	jlen = (size_t)n + strlen(id) + 256;
	json = malloc(jlen);
	assert_non_null(json);
	snprintf(json, jlen, "{\"id\": \"%s\", \"rim\": \"%s\", \"sha256\": "
	    "\"%s\", \"rim_format\": \"SWID\", \"request_id\": \"r-1\"}", id,
	    b64, hex);
	free(b64);
	return json;
}

static int
setup(void **state)
{
	(void)state;
	if ((trust = rim_trust_new()) == NULL || rim_trust_add_builtin(trust))
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	rim_trust_free(trust);
	return 0;
}

static void
test_id_valid(void **state)
{
	char	 id[300];

	(void)state;
	assert_true(rim_id_valid(TV_RIM_DRIVER_ID));
	assert_true(rim_id_valid(TV_RIM_SWITCH_ID));
	assert_true(rim_id_valid("NV_GPU_VBIOS_G520_0200_885_9600A50001"));
	assert_true(rim_id_valid("a..b"));
	memset(id, 'A', 256);
	id[256] = '\0';
	assert_true(rim_id_valid(id));
	id[256] = 'A';
	id[257] = '\0';
	assert_false(rim_id_valid(id));		/* 257 characters */
	assert_false(rim_id_valid(""));
	assert_false(rim_id_valid(NULL));
	assert_false(rim_id_valid(".."));
	assert_false(rim_id_valid("."));
	assert_false(rim_id_valid("a/b"));
	assert_false(rim_id_valid("../NV_GPU_DRIVER_GH100_550.144.03"));
	assert_false(rim_id_valid("NV GPU"));
	assert_false(rim_id_valid("NV%2FGPU"));
	assert_false(rim_id_valid("NV_GPU\\x"));
	assert_false(rim_id_valid("caf\xc3\xa9"));
	/* A NUL inside a path segment must not cut the id short. */
	assert_true(rim_id_validn("abc", 3));
	assert_false(rim_id_validn("abc\0/../x", 9));
	assert_false(rim_id_validn("abc\0", 4));
	assert_false(rim_id_validn("", 0));
	assert_false(rim_id_validn(id, 257));
}

static void
test_xml_certs(void **state)
{
	struct rim_certs	 c;
	const char		*why;
	uint8_t			*xml;
	size_t			 len;

	(void)state;
	xml = load(TV_RIM_DRIVER_XML, &len);
	assert_int_equal(rim_xml_certs(xml, len, &c, &why), 0);
	assert_int_equal(c.n, 4);
	/* DER certificates: SEQUENCE with a two-byte length. */
	assert_int_equal(c.der[0][0], 0x30);
	assert_int_equal(c.der[0][1], 0x82);
	rim_certs_free(&c);
	assert_int_equal(c.n, 0);

	/* Cut inside the third certificate: an error, nothing returned. */
	assert_int_equal(rim_xml_certs(xml, (size_t)((uint8_t *)strstr(
	    strstr(strstr((char *)xml, "X509Certificate>") + 1,
	    "X509Certificate>") + 1, "X509Certificate>") - xml) + 40, &c,
	    &why), -1);
	assert_int_equal(c.n, 0);
	free(xml);
}

/* Every occurrence of `from` replaced by `to`; malloc'd, NUL-terminated. */
static char *
subst(const char *s, size_t len, const char *from, const char *to,
    size_t *olen)
{
	size_t	 fl = strlen(from), tl = strlen(to), i, o = 0;
	char	*out;

	out = malloc(len * (tl > fl ? tl : 1) + 1);
	assert_non_null(out);
	for (i = 0; i < len; ) {
		if (len - i >= fl && memcmp(s + i, from, fl) == 0) {
			memcpy(out + o, to, tl);
			o += tl;
			i += fl;
		} else
			out[o++] = s[i++];
	}
	out[o] = '\0';
	*olen = o;
	return out;
}

static void
same_certs(const char *doc, size_t len, const struct rim_certs *ref)
{
	struct rim_certs	 c;
	const char		*why;
	size_t			 i;

	if (rim_xml_certs((const uint8_t *)doc, len, &c, &why) != 0)
		fail_msg("rim_xml_certs: %s", why);
	assert_int_equal(c.n, ref->n);
	for (i = 0; i < c.n; i++) {
		assert_int_equal(c.len[i], ref->len[i]);
		assert_memory_equal(c.der[i], ref->der[i], ref->len[i]);
	}
	rim_certs_free(&c);
}

/* Other prefixes, attributes, character references: the scanner must not care. */
static void
test_xml_certs_spelling(void **state)
{
	static const char	*const docs[] = {
		"<a><!-- <ds:KeyInfo><ds:X509Certificate>AAAA"
		"</ds:X509Certificate></ds:KeyInfo> -->"
		"<X509Certificate>AAAA</X509Certificate></a>",
		"<a><![CDATA[<KeyInfo><X509Certificate>AAAA</X509Certificate>"
		"</KeyInfo>]]></a>",
		"<a><KeyInfo/><X509Certificate>AAAA</X509Certificate></a>",
	};
	struct rim_certs	 c, ref;
	const char		*why;
	char			*a, *b, *q;
	uint8_t			*raw;
	size_t			 len, alen, blen, i;

	(void)state;
	raw = load(TV_RIM_DRIVER_XML, &len);
	assert_int_equal(rim_xml_certs(raw, len, &ref, &why), 0);

	/* No prefix; every line end inside the base64 as "&#13;\n". */
	a = subst((char *)raw, len, "ds:", "", &alen);
	b = subst(a, alen, "\n", "&#13;\n", &blen);
	same_certs(b, blen, &ref);
	free(a);
	free(b);

	/* Another prefix and an attribute holding '>'. */
	a = subst((char *)raw, len, "ds:", "dsig:", &alen);
	b = subst(a, alen, "<dsig:X509Certificate>",
	    "<dsig:X509Certificate Id='x>y'>", &blen);
	same_certs(b, blen, &ref);
	free(a);
	free(b);

	/* Markup inside the certificate text is refused. */
	a = subst((char *)raw, len, "\x01", "\x01", &alen);	/* a copy */
	q = strstr(a, "<ds:X509Certificate>") + 20;
	q[10] = '<';
	assert_int_equal(rim_xml_certs((uint8_t *)a, alen, &c, &why), -1);
	/* Not base64. */
	q[10] = '*';
	assert_int_equal(rim_xml_certs((uint8_t *)a, alen, &c, &why), -1);
	assert_non_null(strstr(why, "base64"));
	free(a);

	/* Certificates in comments, CDATA, or outside KeyInfo do not count. */
	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		assert_int_equal(rim_xml_certs((const uint8_t *)docs[i],
		    strlen(docs[i]), &c, &why), -1);
		assert_int_equal(c.n, 0);
	}
	rim_certs_free(&ref);
	free(raw);
}

static void
test_driver_rim_ok(void **state)
{
	struct rim_result	 r;
	uint8_t			*xml;
	char			*json;
	size_t			 len, i;

	(void)state;
	xml = load(TV_RIM_DRIVER_XML, &len);
	json = envelope(TV_RIM_DRIVER_ID, xml, len, 0);
	assert_int_equal(rim_verify(trust, TV_RIM_DRIVER_ID, (uint8_t *)json,
	    strlen(json), NOW_2026, &r), 0);
	assert_int_equal(r.verdict, RIM_OK);
	assert_string_equal(rim_verdict_str[r.verdict], "ok");
	assert_int_equal(r.xml_len, len);
	assert_memory_equal(r.xml, xml, len);
	assert_string_equal(r.rim_format, "SWID");
	/* Leaf to root: L4 signer, L3 GH100 002, GH100 CA, CoRIM root. */
	assert_int_equal(r.chain.n, 4);
	assert_string_equal(r.signer_serial,
	    "5E9E59C857378C98E1B4F5BAED9BA3A7BDFB5DFF");
	assert_non_null(strstr(r.signer_subject, "CN=HCC RIM L4 Signer"));
	assert_false(r.signer_expired);
	for (i = 0; i < r.chain.n; i++)
		assert_true(r.chain.len[i] > 100);
	rim_result_free(&r);
	assert_null(r.xml);

	/* Dates are ignored: four years on it still verifies, flagged. */
	assert_int_equal(rim_verify(trust, TV_RIM_DRIVER_ID, (uint8_t *)json,
	    strlen(json), NOW_2030, &r), 0);
	assert_true(r.signer_expired);
	assert_non_null(strstr(r.detail, "expired"));
	rim_result_free(&r);
	free(json);

	/* The sha256 may be upper-case hex. */
	json = envelope(TV_RIM_DRIVER_ID, xml, len, 1);
	assert_int_equal(rim_verify(trust, TV_RIM_DRIVER_ID, (uint8_t *)json,
	    strlen(json), NOW_2026, &r), 0);
	rim_result_free(&r);
	free(json);
	free(xml);
}

static void
test_switch_and_expired_ok(void **state)
{
	struct rim_result	 r;
	uint8_t			*xml;
	char			*json;
	size_t			 len;

	(void)state;
	xml = load(TV_RIM_SWITCH_XML, &len);
	json = envelope(TV_RIM_SWITCH_ID, xml, len, 0);
	assert_int_equal(rim_verify(trust, TV_RIM_SWITCH_ID, (uint8_t *)json,
	    strlen(json), NOW_2026, &r), 0);
	assert_int_equal(r.chain.n, 4);
	assert_non_null(strstr(r.signer_subject, "LS10"));
	rim_result_free(&r);
	free(json);
	free(xml);

	/* An L4 signer that expired in 2025 still chains: a claim, not a refusal. */
	xml = load(EXPIRED_XML, &len);
	json = envelope("NV_GPU_DRIVER_GH100_570.124.03", xml, len, 0);
	assert_int_equal(rim_verify(trust, "NV_GPU_DRIVER_GH100_570.124.03",
	    (uint8_t *)json, strlen(json), NOW_2026, &r), 0);
	assert_true(r.signer_expired);
	assert_true(r.signer_not_after < NOW_2026);
	rim_result_free(&r);
	free(json);
	free(xml);

	/* A bare .swidtag of the nvtrust verifier, no envelope. */
	xml = load(SWIDTAG, &len);
	assert_int_equal(rim_verify_xml(trust, xml, len, NOW_2026, &r), 0);
	assert_int_equal(r.chain.n, 4);
	assert_true(r.signer_expired);
	assert_memory_equal(r.xml, xml, len);
	rim_result_free(&r);
	free(xml);
}

static void
expect(const char *id, const char *json, enum rim_verdict v)
{
	struct rim_result	 r;

	assert_int_equal(rim_verify(trust, id, (const uint8_t *)json,
	    json ? strlen(json) : 0, NOW_2026, &r), -1);
	if (r.verdict != v)
		fail_msg("verdict %s, want %s (%s)", rim_verdict_str[r.verdict],
		    rim_verdict_str[v], r.detail);
	assert_null(r.xml);
	assert_int_equal(r.chain.n, 0);
	assert_true(r.detail[0] != '\0');
	rim_result_free(&r);
}

static void
test_refused(void **state)
{
	struct rim_result	 r;
	struct rim_trust	*none;
	uint8_t			*xml;
	char			*json, *p, *big;
	size_t			 len;

	(void)state;
	xml = load(TV_RIM_DRIVER_XML, &len);
	json = envelope(TV_RIM_DRIVER_ID, xml, len, 0);

	/* A mismatched id: the document is a real one, for another id. */
	expect("NV_GPU_DRIVER_GH100_550.144.04", json, RIM_ERR_ID_MISMATCH);
	/* An invalid requested id is refused before anything is parsed. */
	expect("../etc/passwd", json, RIM_ERR_BAD_ID);
	expect("", json, RIM_ERR_BAD_ID);

	/* Tampered sha256: one digit changed. */
	p = strstr(json, "\"sha256\": \"") + 11;
	*p = *p == '0' ? '1' : '0';
	expect(TV_RIM_DRIVER_ID, json, RIM_ERR_SHA256);
	*p = 'g';
	expect(TV_RIM_DRIVER_ID, json, RIM_ERR_SHA256);
	free(json);

	/* The document changed under its digest. */
	json = envelope(TV_RIM_DRIVER_ID, xml, len, 0);
	p = strstr(json, "\"rim\": \"") + 8 + 100;
	*p = *p == 'A' ? 'B' : 'A';
	expect(TV_RIM_DRIVER_ID, json, RIM_ERR_SHA256);
	*p = '!';
	expect(TV_RIM_DRIVER_ID, json, RIM_ERR_BASE64);
	free(json);

	/* No anchors at all: nothing chains. */
	json = envelope(TV_RIM_DRIVER_ID, xml, len, 0);
	none = rim_trust_new();
	assert_int_equal(rim_verify(none, TV_RIM_DRIVER_ID, (uint8_t *)json,
	    strlen(json), NOW_2026, &r), -1);
	assert_int_equal(r.verdict, RIM_ERR_CHAIN);
	rim_result_free(&r);
	rim_trust_free(none);
	free(json);
	free(xml);

	/* A debug-only chain that does not reach the production root. */
	xml = load(TV_RIM_BADCHAIN_XML, &len);
	json = envelope(TV_RIM_DRIVER_ID, xml, len, 0);
	expect(TV_RIM_DRIVER_ID, json, RIM_ERR_CHAIN);
	free(json);
	free(xml);

	/* A valid envelope around a document without KeyInfo certificates. */
	json = envelope(TV_RIM_DRIVER_ID, (const uint8_t *)"<SoftwareIdentity/>", 19, 0);
	expect(TV_RIM_DRIVER_ID, json, RIM_ERR_NO_CERTS);
	free(json);
	json = envelope(TV_RIM_DRIVER_ID, (const uint8_t *)"<a><KeyInfo>"
	    "<X509Certificate>AAAA</X509Certificate></KeyInfo></a>", 65, 0);
	expect(TV_RIM_DRIVER_ID, json, RIM_ERR_CERT);
	free(json);

	/* The envelope itself. */
	expect(TV_RIM_DRIVER_ID, NULL, RIM_ERR_JSON);
	expect(TV_RIM_DRIVER_ID, "", RIM_ERR_JSON);
	expect(TV_RIM_DRIVER_ID, "<html>", RIM_ERR_JSON);
	expect(TV_RIM_DRIVER_ID, "[1]", RIM_ERR_JSON);
	expect(TV_RIM_DRIVER_ID, "{\"id\": \"" TV_RIM_DRIVER_ID "\", \"rim\": \"AAAA\"}",
	    RIM_ERR_JSON);
	expect(TV_RIM_DRIVER_ID, "{\"id\": 7, \"rim\": \"AAAA\", \"sha256\": \"00\"}",
	    RIM_ERR_JSON);
	expect(TV_RIM_DRIVER_ID, "{\"id\": \"" TV_RIM_DRIVER_ID "\", \"rim\": \"AAAA\", "
	    "\"sha256\": \"00\", \"rim_format\": 3}", RIM_ERR_JSON);
	expect(TV_RIM_DRIVER_ID, "{\"id\": \"" TV_RIM_DRIVER_ID "\", \"id\": \"" TV_RIM_DRIVER_ID
	    "\", \"rim\": \"AAAA\", \"sha256\": \"00\"}", RIM_ERR_JSON);
	expect(TV_RIM_DRIVER_ID, "{\"id\": \"" TV_RIM_DRIVER_ID "\", \"rim\": \"AAAA\", "
	    "\"sha256\": \"00\"}", RIM_ERR_SHA256);
	expect(TV_RIM_DRIVER_ID, "{\"id\": \"" TV_RIM_DRIVER_ID "\", \"rim\": \"AAA\", "
	    "\"sha256\": \"00\"}", RIM_ERR_BASE64);

	big = malloc(RIM_MAX_JSON_BYTES + 2);
	assert_non_null(big);
	memset(big, ' ', RIM_MAX_JSON_BYTES + 1);
	big[RIM_MAX_JSON_BYTES + 1] = '\0';
	expect(TV_RIM_DRIVER_ID, big, RIM_ERR_TOO_BIG);
	free(big);
}

/*
 * `xml` with the text of its k-th X509Certificate element replaced by the
 * base64 of der[0, len): malloc'd, *olen set.
 */
static uint8_t *
with_cert(const uint8_t *xml, size_t xlen, size_t k, const uint8_t *der,
    size_t len, size_t *olen)
{
	const char	*s = (const char *)xml, *open, *close, *lt;
	uint8_t		*out;
	size_t		 i, head, tail;
	int		 n;

	/* the k-th start tag, whatever its prefix; end tags do not count */
	for (open = s, i = 0;;) {
		assert_non_null(open = strstr(open, "X509Certificate>"));
		open += strlen("X509Certificate>");
		lt = memrchr(s, '<', (size_t)(open - s));
		if (lt != NULL && lt[1] != '/' && i++ == k)
			break;
	}
	assert_non_null(close = strstr(open, "</"));
	head = (size_t)(open - s);
	tail = xlen - (size_t)(close - s);
	assert_non_null(out = malloc(head + len / 3 * 4 + 8 + tail));
	memcpy(out, xml, head);
	n = EVP_EncodeBlock(out + head, der, (int)len);
	assert_true(n > 0);
	memcpy(out + head + n, close, tail);
	*olen = head + (size_t)n + tail;
	return out;
}

/*
 * One flipped byte in any KeyInfo certificate, the root's copy included:
 * no variant is accepted, so what is stored is what NVIDIA signed. The
 * bytes flipped are tv_flip_marks's: every header octet, a sample of the
 * rest (each flip costs a whole document's verification).
 */
static void
test_keyinfo_flips(void **state)
{
	struct rim_result	 r;
	struct rim_certs	 c;
	const char		*why;
	uint8_t			*xml, *doc, *marks;
	size_t			 len, dlen, k, i;

	(void)state;
	xml = load(TV_RIM_DRIVER_XML, &len);
	assert_int_equal(rim_xml_certs(xml, len, &c, &why), 0);
	assert_int_equal(c.n, 4);
	for (k = 0; k < c.n; k++) {
		/* Re-encoded unchanged, the document still verifies. */
		doc = with_cert(xml, len, k, c.der[k], c.len[k], &dlen);
		assert_int_equal(rim_verify_xml(trust, doc, dlen, NOW_2026,
		    &r), 0);
		rim_result_free(&r);
		free(doc);
		assert_non_null(marks = malloc(c.len[k]));
		(void)tv_flip_marks(c.der[k], c.len[k], marks);
		for (i = 0; i < c.len[k]; i++) {
			if (!marks[i])
				continue;
			c.der[k][i] ^= 0x01;
			doc = with_cert(xml, len, k, c.der[k], c.len[k], &dlen);
			c.der[k][i] ^= 0x01;
			if (rim_verify_xml(trust, doc, dlen, NOW_2026, &r) == 0)
				fail_msg("KeyInfo certificate %zu: flip at %zu "
				    "accepted", k + 1, i);
			rim_result_free(&r);
			free(doc);
		}
		free(marks);
	}
	rim_certs_free(&c);
	free(xml);
}

static void
test_trust(void **state)
{
	struct rim_trust	*t;
	uint8_t			*pem;
	size_t			 len;

	(void)state;
	assert_non_null(t = rim_trust_new());
	assert_int_equal(rim_trust_add_builtin(t), 0);
	assert_int_equal(rim_trust_add_builtin(t), 0);	/* once is enough */
	assert_int_equal(rim_trust_add_anchors_pem(t, "junk", 4), -1);
	pem = load(VEC "attestation-sdk/testdata/hopperCertChain.txt", &len);
	assert_int_equal(rim_trust_add_anchors_pem(t, (char *)pem, len), 5);
	free(pem);
	rim_trust_free(t);
	rim_trust_free(NULL);
	rim_result_free(NULL);
	rim_certs_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_id_valid),
		cmocka_unit_test(test_xml_certs),
		cmocka_unit_test(test_xml_certs_spelling),
		cmocka_unit_test(test_driver_rim_ok),
		cmocka_unit_test(test_switch_and_expired_ok),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_keyinfo_flips),
		cmocka_unit_test(test_trust),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
