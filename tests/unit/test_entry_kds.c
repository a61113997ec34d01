/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for entry/kds.c: client requests and canonical paths, keys as they have always been, answers admitted only for the question asked (real AMD vectors). */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "entry/kds.h"
#include "tv.h"

/* 2025-06-01T00:00:00Z: inside every vector's window, Milan's and Genoa's CRLs included. */
#define T_2025_06_01	1748736000

#define MILAN_HWID	"d49554ec717f4e5b0fe6b143bcf0405bd7ae304727edf46603f2a7" \
	"6aef6a3abc15d7af38db757039029f0efacfd08e244324884738c72b082e2f87a44d541eb6"
#define MILAN_VCEK	"/vcek/v1/Milan/" MILAN_HWID \
	"?blSPL=3&teeSPL=0&snpSPL=8&ucodeSPL=115"
#define TESTCER_VCEK	"/vcek/v1/Milan/3ac3fe21e13fb0990eb28a802e3fb6a29483a6" \
	"b0753590c951bdd3b8e53786184ca39e359669a2b76a1936776b564ea464cdce40c05f63" \
	"c9b610c5068b006b5d?blSPL=2&teeSPL=0&snpSPL=5&ucodeSPL=68"
#define TURIN_VCEK	"/vcek/v1/Turin/1e550a8ee5cf9f4d?fmcSPL=0&blSPL=0&" \
	"teeSPL=0&snpSPL=0&ucodeSPL=9"

/* Parse a client's URL ("path?query"); returns the status, 0 when it parses. */
static int
client(const char *url, struct kds_req *r, const char **why)
{
	char	 path[1024];
	char	*qm;
	int	 status;

	snprintf(path, sizeof(path), "%s", url);
	if ((qm = strchr(path, '?')) != NULL)
		*qm++ = '\0';
	if (kds_parse_request(path, qm, r, why, &status) == 0)
		return 0;
	return status;
}

/* The canonical path a client URL is rebuilt into. */
static void
assert_canon(const char *url, const char *want)
{
	struct kds_req	 r;
	const char	*why = NULL;
	char		 canon[KDS_PATH_MAX];

	if (client(url, &r, &why) != 0)
		fail_msg("%s: %s", url, why);
	assert_int_equal(kds_canon(&r, canon, sizeof(canon)), 0);
	assert_string_equal(canon, want);
}

static void
assert_refused(const char *url, int status, const char *why)
{
	struct kds_req	 r;
	const char	*got = NULL;

	assert_int_equal(client(url, &r, &got), status);
	assert_string_equal(got, why);
}

/* Every spelling clients use is one entry: lower-case hex, decimal SPLs, KDS's order. */
static void
request_spellings(void **state)
{
	char	up[sizeof(MILAN_HWID)], url[512];
	size_t	i;

	(void)state;
	assert_canon(MILAN_VCEK, MILAN_VCEK);
	assert_canon("/vcek/v1/Milan/" MILAN_HWID
	    "?blSPL=03&teeSPL=00&snpSPL=08&ucodeSPL=115", MILAN_VCEK);
	assert_canon("/vcek/v1/Milan/" MILAN_HWID
	    "?ucodeSPL=115&snpSPL=8&teeSPL=0&blSPL=3", MILAN_VCEK);
	/* Values are percent-decoded, as libevent's parser did. */
	assert_canon("/vcek/v1/Milan/" MILAN_HWID
	    "?blSPL=%33&teeSPL=0&snpSPL=8&ucodeSPL=115", MILAN_VCEK);
	for (i = 0; i < sizeof(up); i++)
		up[i] = (char)(MILAN_HWID[i] >= 'a' && MILAN_HWID[i] <= 'f' ?
		    MILAN_HWID[i] - 32 : MILAN_HWID[i]);
	snprintf(url, sizeof(url), "/vcek/v1/Milan/%s?blSPL=3&teeSPL=0&"
	    "snpSPL=8&ucodeSPL=115", up);
	assert_canon(url, MILAN_VCEK);
	assert_canon("/vcek/v1/Turin/1E550A8EE5CF9F4D?ucodeSPL=9&snpSPL=0&"
	    "teeSPL=0&blSPL=000&fmcSPL=0", TURIN_VCEK);
	assert_canon("/vcek/v1/Genoa/cert_chain", "/vcek/v1/Genoa/cert_chain");
	assert_canon("/vlek/v1/Turin/crl", "/vlek/v1/Turin/crl");
	/* "?" with nothing after it is no parameter. */
	assert_canon("/vcek/v1/Milan/cert_chain?", "/vcek/v1/Milan/cert_chain");
}

/* Today's refusals, their statuses and their words. */
static void
request_refusals(void **state)
{
	static const char ok_q[] = "?blSPL=3&teeSPL=0&snpSPL=8&ucodeSPL=115";
	char	url[512];

	(void)state;
	assert_refused("/vcek/v2/Milan/cert_chain", 404, "not a KDS path");
	assert_refused("/vcek/v1/milan/cert_chain", 404,
	    "unknown product: expected Milan, Genoa or Turin");
	assert_refused("/vcek/v1/Rome/cert_chain", 404,
	    "unknown product: expected Milan, Genoa or Turin");
	assert_refused("/vcek/v1/Milan", 404,
	    "unknown product: expected Milan, Genoa or Turin");
	assert_refused("/vcek/v1/Milan/cert_chain?x=1", 400,
	    "cert_chain and crl take no parameters");
	assert_refused("/vlek/v1/Milan/" MILAN_HWID, 404,
	    "VLEKs are not served by hardware ID");
	snprintf(url, sizeof(url), "/vcek/v1/Milan/%s%s", MILAN_HWID + 1, ok_q);
	assert_refused(url, 400, "hwid: expected 128 hex digits (the 64-byte CHIP_ID)");
	snprintf(url, sizeof(url), "/vcek/v1/Milan/zz%s%s", MILAN_HWID + 2, ok_q);
	assert_refused(url, 400, "hwid: expected 128 hex digits (the 64-byte CHIP_ID)");
	assert_refused("/vcek/v1/Turin/1e550a8ee5cf9f?fmcSPL=0&blSPL=0&teeSPL=0&"
	    "snpSPL=0&ucodeSPL=9", 400,
	    "hwid: Turin takes 16 hex digits (8 bytes of CHIP_ID)");
	assert_refused("/vcek/v1/Milan/" MILAN_HWID, 400,
	    "blSPL, teeSPL, snpSPL and ucodeSPL are required");
	assert_refused("/vcek/v1/Milan/" MILAN_HWID "?blSPL", 400,
	    "blSPL, teeSPL, snpSPL and ucodeSPL are required");
	assert_refused("/vcek/v1/Milan/" MILAN_HWID "?&blSPL=3", 400,
	    "blSPL, teeSPL, snpSPL and ucodeSPL are required");
	assert_refused("/vcek/v1/Milan/" MILAN_HWID "?", 400,
	    "blSPL, teeSPL, snpSPL and ucodeSPL: each 0..255");
	assert_refused("/vcek/v1/Milan/" MILAN_HWID "?blSPL=256&teeSPL=0&snpSPL=8&"
	    "ucodeSPL=115", 400, "blSPL, teeSPL, snpSPL and ucodeSPL: each 0..255");
	assert_refused("/vcek/v1/Milan/" MILAN_HWID "?blSPL=-1&teeSPL=0&snpSPL=8&"
	    "ucodeSPL=115", 400, "blSPL, teeSPL, snpSPL and ucodeSPL: each 0..255");
	assert_refused("/vcek/v1/Milan/" MILAN_HWID "?blSPL=+3&teeSPL=0&snpSPL=8&"
	    "ucodeSPL=115", 400, "blSPL, teeSPL, snpSPL and ucodeSPL: each 0..255");
	assert_refused("/vcek/v1/Milan/" MILAN_HWID "?blSPL=3&teeSPL=0&snpSPL=8",
	    400, "blSPL, teeSPL, snpSPL and ucodeSPL: each 0..255");
	snprintf(url, sizeof(url), "/vcek/v1/Milan/%s%s&foo=1", MILAN_HWID, ok_q);
	assert_refused(url, 400,
	    "unknown parameter (blSPL, teeSPL, snpSPL, ucodeSPL, fmcSPL)");
	snprintf(url, sizeof(url), "/vcek/v1/Milan/%s%s&blSPL=3", MILAN_HWID, ok_q);
	assert_refused(url, 400, "a parameter is given twice");
	/* The first parameter, in order, that is unknown or repeated decides. */
	snprintf(url, sizeof(url), "/vcek/v1/Milan/%s?foo=1&blSPL=3&blSPL=3",
	    MILAN_HWID);
	assert_refused(url, 400,
	    "unknown parameter (blSPL, teeSPL, snpSPL, ucodeSPL, fmcSPL)");
	snprintf(url, sizeof(url), "/vcek/v1/Milan/%s?blSPL=3&foo=1&blSPL=3",
	    MILAN_HWID);
	assert_refused(url, 400, "a parameter is given twice");
	snprintf(url, sizeof(url), "/vcek/v1/Milan/%s?foo=1&foo=2", MILAN_HWID);
	assert_refused(url, 400,
	    "unknown parameter (blSPL, teeSPL, snpSPL, ucodeSPL, fmcSPL)");
	/* More names than entry/query.c takes: some are unknown. */
	snprintf(url, sizeof(url), "/vcek/v1/Milan/%s%s&a=1&b=1&c=1&d=1&e=1&f=1&"
	    "g=1&h=1&i=1&j=1&k=1&l=1&m=1", MILAN_HWID, ok_q);
	assert_refused(url, 400,
	    "unknown parameter (blSPL, teeSPL, snpSPL, ucodeSPL, fmcSPL)");
	snprintf(url, sizeof(url), "/vcek/v1/Milan/%s%s&fmcSPL=0", MILAN_HWID, ok_q);
	assert_refused(url, 400, "fmcSPL: only Turin has it");
	assert_refused("/vcek/v1/Turin/1e550a8ee5cf9f4d?blSPL=0&teeSPL=0&snpSPL=0&"
	    "ucodeSPL=9", 400, "fmcSPL: Turin requires it, 0..255");
}

/* Canonical paths, for staplectl and refresh: only the exact form. */
static void
canonical_only(void **state)
{
	struct kds_req	 r;
	const char	*why;
	char		 canon[KDS_PATH_MAX], path[KDS_PATH_MAX];
	char		 hw[129];

	(void)state;
	memset(hw, 'a', 128);
	hw[128] = '\0';
	assert_int_equal(kds_parse_canon("/vcek/v1/Milan/cert_chain", &r, &why), 0);
	assert_int_equal(r.what, KDS_CHAIN);
	assert_int_equal(kds_parse_canon("/vlek/v1/Genoa/crl", &r, &why), 0);
	assert_int_equal(r.signer, AMD_VLEK);
	assert_int_equal(r.what, KDS_CRL);
	assert_int_equal(kds_parse_canon("/vcek/v1/milan/cert_chain", &r, &why), -1);
	assert_string_equal(why, "unknown product: expected Milan, Genoa or Turin");
	assert_int_equal(kds_parse_canon("/vcek/v1/Milan/cert_chain?", &r, &why), -1);
	assert_string_equal(why, "not a canonical AMD KDS path");
	snprintf(path, sizeof(path), "/vcek/v1/Milan/%s?blSPL=3&teeSPL=0&"
	    "snpSPL=8&ucodeSPL=115", hw);
	assert_int_equal(kds_parse_canon(path, &r, &why), 0);
	assert_int_equal(r.id.hwid_len, 64);
	assert_int_equal(r.id.tcb.ucode, 115);
	assert_int_equal(r.id.tcb.fmc, -1);
	assert_int_equal(kds_canon(&r, canon, sizeof(canon)), 0);
	assert_string_equal(canon, path);
	/* Zero-padded SPLs (snpguest's), upper-case hex, another order: not canonical. */
	snprintf(path, sizeof(path), "/vcek/v1/Milan/%s?blSPL=03&teeSPL=0&"
	    "snpSPL=8&ucodeSPL=115", hw);
	assert_int_equal(kds_parse_canon(path, &r, &why), -1);
	snprintf(path, sizeof(path), "/vcek/v1/Milan/%s?teeSPL=0&blSPL=3&"
	    "snpSPL=8&ucodeSPL=115", hw);
	assert_int_equal(kds_parse_canon(path, &r, &why), -1);
	snprintf(path, sizeof(path), "/vcek/v1/Milan/%s?blSPL=%%33&teeSPL=0&"
	    "snpSPL=8&ucodeSPL=115", hw);
	assert_int_equal(kds_parse_canon(path, &r, &why), -1);
	hw[0] = 'A';
	snprintf(path, sizeof(path), "/vcek/v1/Milan/%s?blSPL=3&teeSPL=0&"
	    "snpSPL=8&ucodeSPL=115", hw);
	assert_int_equal(kds_parse_canon(path, &r, &why), -1);
	assert_int_equal(kds_parse_canon(TURIN_VCEK, &r, &why), 0);
	assert_int_equal(r.id.hwid_len, 8);
	assert_int_equal(r.id.tcb.fmc, 0);
	assert_int_equal(kds_parse_canon("/vcek/v1/Turin/1e550a8ee5cf9f4d?"
	    "blSPL=0&teeSPL=0&snpSPL=0&ucodeSPL=9", &r, &why), -1);
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(kds_parse_canon(path, &r, &why), -1);
}

/* The keys of caches and bundles written before entry/ existed: the canonical path, byte for byte. */
static void
keys_unchanged(void **state)
{
	static const char *const paths[] = { MILAN_VCEK, TURIN_VCEK,
	    "/vcek/v1/Milan/cert_chain", "/vlek/v1/Genoa/cert_chain",
	    "/vcek/v1/Turin/crl", "/vlek/v1/Milan/crl", NULL };
	struct kds_req	 r, c;
	const char	*why;
	uint8_t		 key[CACHE_KEY_MAX_BYTES];
	size_t		 klen, i;

	(void)state;
	for (i = 0; paths[i] != NULL; i++) {
		assert_int_equal(kds_parse_canon(paths[i], &r, &why), 0);
		assert_int_equal(kds_key(&r, key, &klen), 0);
		assert_int_equal(klen, strlen(paths[i]));
		assert_memory_equal(key, paths[i], klen);
	}
	/* A VCEK's chain: same product and signer. */
	assert_int_equal(kds_parse_canon(TURIN_VCEK, &r, &why), 0);
	kds_chain_req(&r, &c);
	assert_int_equal(kds_key(&c, key, &klen), 0);
	assert_int_equal(klen, strlen("/vcek/v1/Turin/cert_chain"));
	assert_memory_equal(key, "/vcek/v1/Turin/cert_chain", klen);
	assert_string_equal(kds_keep_headers[0], "Content-Type");
	assert_null(kds_keep_headers[1]);
	assert_string_equal(kds_base_suffixes[0], "/vcek/v1");
	assert_string_equal(kds_base_suffixes[1], "/vlek/v1");
	assert_null(kds_base_suffixes[2]);
}

/* Admit `file` for canonical `path`; the verdict. */
static enum entry_verdict
admit(const char *path, const char *file, const struct kds_chain *chain,
    struct kds_admit *out)
{
	struct kds_req		 r;
	struct entry_answer	 a;
	struct tv_buf		 b = tv_load("/tests/vectors/amd/", file);
	const char		*why;
	enum entry_verdict	 v;

	assert_int_equal(kds_parse_canon(path, &r, &why), 0);
	memset(&a, 0, sizeof(a));
	a.body = b.p;
	a.body_len = b.len;
	v = kds_admit(&r, &a, NULL, chain, T_2025_06_01, out);
	free(b.p);
	assert_int_equal(v, out->verdict);
	return v;
}

static void
assert_refuses(const char *path, const char *file,
    const struct kds_chain *chain, const char *reason)
{
	struct kds_admit	ad;

	assert_int_equal(admit(path, file, chain, &ad), ENTRY_REFUSE);
	if (strstr(ad.reason, reason) == NULL)
		fail_msg("%s from %s: \"%s\", expected \"%s\"", path, file,
		    ad.reason, reason);
}

/* Genuine answers to the questions asked: stored, with their times. */
static void
admit_genuine(void **state)
{
	struct kds_admit	 ad;
	struct kds_chain	 chain;
	struct tv_buf		 b = tv_load("/tests/vectors/amd/",
	    "cert_chain_milan");

	(void)state;
	assert_int_equal(admit("/vcek/v1/Milan/cert_chain", "cert_chain_milan",
	    NULL, &ad), ENTRY_STORE);
	assert_int_equal(ad.meta.kind, CACHE_KIND_KDS);
	assert_true(ad.meta.flags & CACHE_F_NO_REFRESH);
	assert_true(ad.meta.next_update > T_2025_06_01);
	assert_int_equal(admit("/vlek/v1/Genoa/cert_chain",
	    "ask_ark_genoa_vlek.pem", NULL, &ad), ENTRY_STORE);
	assert_int_equal(admit("/vcek/v1/Milan/crl", "derived/Milan.crl.der",
	    NULL, &ad), ENTRY_STORE);
	assert_false(ad.meta.flags & CACHE_F_NO_REFRESH);
	/* nextUpdate 2026-05-12T00:00:00Z: the refresh deadline. */
	assert_int_equal(ad.meta.next_update, 1778544000);
	assert_int_equal(admit("/vcek/v1/Genoa/crl", "derived/Genoa.crl.der",
	    NULL, &ad), ENTRY_STORE);
	assert_int_equal(ad.amd.crl_entries, 1);
	/* A VCEK against the compiled-in chain, and against a stored one. */
	assert_int_equal(admit(MILAN_VCEK, "vcek_milan.der", NULL, &ad),
	    ENTRY_STORE);
	assert_true(ad.builtin_chain);
	assert_true(ad.meta.flags & CACHE_F_NO_REFRESH);
	chain.pem = b.p;
	chain.len = b.len;
	assert_int_equal(admit(MILAN_VCEK, "vcek_milan.der", &chain, &ad),
	    ENTRY_STORE);
	assert_false(ad.builtin_chain);
	assert_int_equal(admit(TESTCER_VCEK, "vcek.testcer", &chain, &ad),
	    ENTRY_STORE);
	assert_int_equal(admit(TURIN_VCEK, "vcek_turin.der", NULL, &ad),
	    ENTRY_STORE);
	free(b.p);
}

/*
 * Genuine, correctly signed answers to another question, and what KDS
 * never sends: the path asked, the file answered, the reason refused.
 */
static const struct {
	const char	*path, *file, *reason;
} swaps[] = {
	/* Another product's cert_chain and CRL. */
	{ "/vcek/v1/Milan/cert_chain", "ask_ark_genoa.pem",
	    "product: cert_chain carries ARK-Genoa, not ARK-Milan" },
	{ "/vcek/v1/Genoa/cert_chain", "cert_chain_milan",
	    "product: cert_chain carries ARK-Milan, not ARK-Genoa" },
	{ "/vcek/v1/Turin/cert_chain", "cert_chain_milan", "product: " },
	{ "/vcek/v1/Milan/crl", "derived/Genoa.crl.der",
	    "product: CRL issued by ARK-Genoa, not ARK-Milan" },
	{ "/vlek/v1/Genoa/crl", "derived/Milan.crl.der", "product: " },
	/* The other signer's chain of the same product. */
	{ "/vcek/v1/Milan/cert_chain", "ask_ark_milan_vlek.pem",
	    "signer: cert_chain: first certificate is not SEV-Milan" },
	{ "/vlek/v1/Milan/cert_chain", "cert_chain_milan",
	    "signer: cert_chain: first certificate is not SEV-VLEK-Milan" },
	/* Another chip's VCEK; the same chip's at another TCB. */
	{ MILAN_VCEK, "vcek.testcer", "mismatch: HWID is not the one asked for" },
	{ "/vcek/v1/Milan/" MILAN_HWID "?blSPL=4&teeSPL=0&snpSPL=8&ucodeSPL=115",
	    "vcek_milan.der", "mismatch: blSPL is 3, asked for 4" },
	{ "/vcek/v1/Milan/" MILAN_HWID "?blSPL=3&teeSPL=0&snpSPL=8&ucodeSPL=116",
	    "vcek_milan.der", "mismatch: ucodeSPL is 115, asked for 116" },
	/* A Milan VCEK for Turin. */
	{ "/vcek/v1/Turin/1e550a8ee5cf9f4d?fmcSPL=0&blSPL=3&"
	    "teeSPL=0&snpSPL=8&ucodeSPL=115", "vcek_milan.der", "" },
	/* Not what KDS sends at all. */
	{ "/vcek/v1/Milan/crl", "cert_chain_milan", "parse: " },
	{ MILAN_VCEK, "derived/Milan.crl.der", "parse: " },
};

/* Each of swaps refused with its reason; a VCEK checked against another product's chain too. */
static void
admit_swapped(void **state)
{
	struct kds_chain	 chain;
	struct tv_buf		 b = tv_load("/tests/vectors/amd/",
	    "ask_ark_genoa.pem");
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(swaps) / sizeof(swaps[0]); i++)
		assert_refuses(swaps[i].path, swaps[i].file, NULL,
		    swaps[i].reason);
	chain.pem = b.p;
	chain.len = b.len;
	assert_refuses(MILAN_VCEK, "vcek_milan.der", &chain,
	    "product: cert_chain carries ARK-Genoa, not ARK-Milan");
	free(b.p);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(request_spellings),
		cmocka_unit_test(request_refusals),
		cmocka_unit_test(canonical_only),
		cmocka_unit_test(keys_unchanged),
		cmocka_unit_test(admit_genuine),
		cmocka_unit_test(admit_swapped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
