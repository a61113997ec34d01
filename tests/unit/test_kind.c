/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for entry/kind.c: the one table of kinds, its names and sections, and each row's operations. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "attest/amd.h"
#include "attest/intel.h"
#include "attest/ocsp_req.h"
#include "entry/entry.h"
#include "entry/judge.h"
#include "entry/kind.h"
#include "entry/pccs.h"

#define NOW	1700000000

/* Every kind has a name and a section, each found again by its lookup. */
static void
test_every_kind_named(void **state)
{
	char	names[KIND_NAMES_BYTES];
	int	k;

	(void)state;
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++) {
		assert_non_null(kind_name(k));
		assert_non_null(kind_section[k]);
		assert_int_equal(kind_by_name(kind_name(k)), k);
		assert_int_equal(kind_by_section(kind_section[k]), k);
		/* The message's list names each kind. */
		assert_non_null(strstr(kind_names(names, sizeof(names)),
		    kind_name(k)));
	}
	assert_string_equal(kind_names(names, sizeof(names)),
	    "ocsp, rim, pccs or kds");
	assert_null(kind_name(0));
	assert_null(kind_name(CACHE_KIND_MAX));
	assert_null(kind_name(-1));
}

/* The configuration's section names are the file's, the store's names its own. */
static void
test_sections_and_names(void **state)
{
	(void)state;
	assert_string_equal(kind_section[CACHE_KIND_OCSP], "ocsp");
	assert_string_equal(kind_section[CACHE_KIND_RIM], "rim");
	assert_string_equal(kind_section[CACHE_KIND_PCCS], "pccs");
	assert_string_equal(kind_section[CACHE_KIND_KDS], "amd_kds");
	assert_string_equal(kind_name(CACHE_KIND_KDS), "kds");
	assert_int_equal(kind_by_section("amd_kds"), CACHE_KIND_KDS);
	assert_int_equal(kind_by_section("kds"), 0);
	assert_int_equal(kind_by_name("amd_kds"), 0);
	assert_int_equal(kind_by_name("unknown"), 0);
	assert_int_equal(kind_by_name(""), 0);
	assert_int_equal(kind_by_name(NULL), 0);
	/* Only the collateral kinds keep headers and name API suffixes. */
	assert_null(kind_table[CACHE_KIND_OCSP]->keep_headers);
	assert_null(kind_table[CACHE_KIND_RIM]->base_suffixes);
	assert_string_equal(kind_table[CACHE_KIND_PCCS]->keep_headers[1],
	    "TCB-Info-Issuer-Chain");
	assert_string_equal(kind_table[CACHE_KIND_KDS]->base_suffixes[0],
	    "/vcek/v1");
}

static int
servable(enum cache_kind kind, long skew, time_t this_update,
    time_t next_update)
{
	struct cache_meta	m;

	memset(&m, 0, sizeof(m));
	m.kind = kind;
	m.this_update = this_update;
	m.next_update = next_update;
	return entry_servable(&m, kind, skew, NOW);
}

/* Expired is never servable, whatever the kind or the skew. */
static void
test_servable_expiry(void **state)
{
	int	k;

	(void)state;
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++) {
		assert_true(servable(k, 60, NOW - 10, NOW + 1));
		assert_false(servable(k, 60, NOW - 10, NOW));
		assert_false(servable(k, 3600, NOW - 10, NOW - 1));
		assert_true(servable(k, 0, NOW, NOW + 1));
	}
}

/* Every kind's row is whole: an admit, an upstream, an entry size; the map shares make 100. */
static void
test_rows_whole(void **state)
{
	unsigned	pct = 0;
	int		k;

	(void)state;
	assert_null(kind_table[0]);
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++) {
		assert_non_null(kind_table[k]);
		assert_non_null(kind_table[k]->admit);
		assert_non_null(kind_table[k]->request_key);
		assert_non_null(kind_table[k]->parse);
		assert_non_null(kind_table[k]->restore);
		assert_non_null(kind_table[k]->conf.upstream);
		assert_true(strncmp(kind_table[k]->conf.upstream, "https://",
		    8) == 0);
		assert_true(kind_table[k]->entry_bytes > 0);
		pct += kind_table[k]->map_share_pct;
	}
	assert_int_equal(pct, 100);
}

/* Room for any kind's typed request, as a call has it. */
union typed_room {
	max_align_t	 a;
	unsigned char	 b[KIND_TYPED_BYTES];
};

/* A client's GET parsed by kind k: 0 or -1, with *status and why. */
static int
parse_get(enum cache_kind k, const char *path, const char *query,
    union typed_room *typed, char *canon, struct kind_call *out, int *status,
    char *why, size_t wl)
{
	struct kind_ask	in = { KIND_GET, path, query, NULL, NULL, 0 };

	return kind_table[k]->parse(&in, typed->b, canon, out, status, why, wl);
}

/*
 * Each kind's parse: a client's request into the call it makes upstream,
 * its key the request_key of what it keeps; restore makes the same call
 * from what was kept; refusals carry their HTTP status.
 */
static void
test_parse_restore(void **state)
{
	static const struct {
		enum cache_kind	 kind;
		const char	*path, *query, *canon;
	} ok[] = {
		{ CACHE_KIND_RIM, "/v1/rim/NV_GPU_DRIVER_GH100_550.144.03", NULL,
		  "/v1/rim/NV_GPU_DRIVER_GH100_550.144.03" },
		{ CACHE_KIND_PCCS, "/sgx/certification/v4/tcb",
		  "fmspc=00906ED50000&update=Early",
		  "/sgx/certification/v4/tcb?fmspc=00906ED50000&update=early" },
		{ CACHE_KIND_KDS, "/vcek/v1/Milan/cert_chain", NULL,
		  "/vcek/v1/Milan/cert_chain" },
	};
	union typed_room	 typed;
	struct kind_call	 c, r;
	char			 canon[KIND_CANON_BYTES], rcanon[KIND_CANON_BYTES];
	char			 why[PCCS_WHY_MAX];
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 i, klen;
	int			 status;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(parse_get(ok[i].kind, ok[i].path, ok[i].query,
		    &typed, canon, &c, &status, why, sizeof(why)), 0);
		assert_string_equal(c.method, "GET");
		assert_string_equal(c.path, ok[i].canon);
		assert_int_equal(c.keep_len, strlen(ok[i].canon));
		assert_memory_equal(c.keep, ok[i].canon, c.keep_len);
		assert_int_equal(kind_table[ok[i].kind]->request_key(c.keep,
		    c.keep_len, key, &klen), 0);
		assert_int_equal(c.klen, klen);
		assert_memory_equal(c.key, key, klen);
		assert_int_equal(kind_table[ok[i].kind]->restore(c.keep,
		    c.keep_len, typed.b, rcanon, &r), 0);
		assert_string_equal(r.path, c.path);
		assert_int_equal(r.klen, c.klen);
		assert_memory_equal(r.key, c.key, c.klen);
		assert_int_equal(r.typed, c.typed);
	}
	assert_int_equal(parse_get(CACHE_KIND_RIM, "/v1/rim/../etc", NULL,
	    &typed, canon, &c, &status, why, sizeof(why)), -1);
	assert_int_equal(status, 400);
	assert_int_equal(parse_get(CACHE_KIND_PCCS, "/sgx/certification/v3/tcb",
	    "fmspc=00906ED50000", &typed, canon, &c, &status, why,
	    sizeof(why)), -1);
	assert_int_equal(status, 410);
	assert_int_equal(parse_get(CACHE_KIND_KDS, "/vcek/v1/Milan/cert_chain",
	    "x=1", &typed, canon, &c, &status, why, sizeof(why)), -1);
	assert_int_equal(status, 400);
	assert_true(why[0] != '\0');
	/* KDS's canonical form only: what a client may write, a store may not. */
	assert_int_equal(kind_table[CACHE_KIND_KDS]->restore(
	    (const uint8_t *)"/vcek/v1/Milan/cert_chain?", 26, typed.b, rcanon,
	    &r), -1);
}

/* The OCSP kind's parse: a POST says what it is and fits, or is refused with its HTTP status; a path is no request. */
static void
test_parse_ocsp(void **state)
{
	static const uint8_t	 junk[] = { 0x30, 0x03, 0x02, 0x01, 0x00 };
	union typed_room	 typed;
	struct kind_ask		 in = { KIND_POST, "/ocsp", NULL,
				    "application/ocsp-request", junk,
				    sizeof(junk) };
	struct kind_call	 c;
	char			 canon[KIND_CANON_BYTES], why[128];
	int			 status;

	(void)state;
	in.content_type = "text/plain";
	assert_int_equal(kind_table[CACHE_KIND_OCSP]->parse(&in, typed.b,
	    canon, &c, &status, why, sizeof(why)), -1);
	assert_int_equal(status, 415);
	in.content_type = "application/ocsp-request; x=y";
	in.body_len = OCSP_MAX_REQUEST_BYTES + 1;
	assert_int_equal(kind_table[CACHE_KIND_OCSP]->parse(&in, typed.b,
	    canon, &c, &status, why, sizeof(why)), -1);
	assert_int_equal(status, 413);
	in.body_len = 0;
	assert_int_equal(kind_table[CACHE_KIND_OCSP]->parse(&in, typed.b,
	    canon, &c, &status, why, sizeof(why)), -1);
	assert_int_equal(status, 400);
	assert_string_equal(why, "");
	in.body_len = sizeof(junk);
	assert_int_equal(kind_table[CACHE_KIND_OCSP]->parse(&in, typed.b,
	    canon, &c, &status, why, sizeof(why)), -1);
	assert_int_equal(status, 400);
	assert_true(why[0] != '\0');
	/* A GET's request has no media type to check. */
	in.method = KIND_GET;
	in.content_type = NULL;
	assert_int_equal(kind_table[CACHE_KIND_OCSP]->parse(&in, typed.b,
	    canon, &c, &status, why, sizeof(why)), -1);
	assert_int_equal(status, 400);
}

/* The key of a canonical request: a RIM's id, a PCCS path, a KDS canonical path; anything else of the kind's refused. */
static void
test_request_key(void **state)
{
	static const char	 rim[] = "/v1/rim/NV_GPU_DRIVER_GH100_550.144.03";
	static const char	 pccs[] = "/sgx/certification/v4/rootcacrl";
	static const char	 kds[] = "/vcek/v1/Milan/cert_chain";
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen;

	(void)state;
	assert_int_equal(kind_table[CACHE_KIND_RIM]->request_key(
	    (const uint8_t *)rim, strlen(rim), key, &klen), 0);
	assert_int_equal(klen, strlen(rim) - strlen("/v1/rim/"));
	assert_memory_equal(key, rim + strlen("/v1/rim/"), klen);
	assert_int_equal(kind_table[CACHE_KIND_RIM]->request_key(
	    (const uint8_t *)"/v1/rim/../etc", 14, key, &klen), -1);
	assert_int_equal(kind_table[CACHE_KIND_RIM]->request_key(
	    (const uint8_t *)pccs, strlen(pccs), key, &klen), -1);
	assert_int_equal(kind_table[CACHE_KIND_PCCS]->request_key(
	    (const uint8_t *)pccs, strlen(pccs), key, &klen), 0);
	assert_int_equal(klen, strlen(pccs));
	assert_memory_equal(key, pccs, klen);
	assert_int_equal(kind_table[CACHE_KIND_KDS]->request_key(
	    (const uint8_t *)kds, strlen(kds), key, &klen), 0);
	assert_int_equal(klen, strlen(kds));
	assert_memory_equal(key, kds, klen);
	assert_int_equal(kind_table[CACHE_KIND_KDS]->request_key(
	    (const uint8_t *)"/vcek/v1/Milan/cert_chain?", 26, key, &klen), -1);
	/* An OCSP request is DER: a path is none. */
	assert_int_equal(kind_table[CACHE_KIND_OCSP]->request_key(
	    (const uint8_t *)kds, strlen(kds), key, &klen), -1);
}

/* OCSP takes the configured skew as it is; the others at least the vendors'. */
static void
test_servable_skew(void **state)
{
	(void)state;
	assert_false(servable(CACHE_KIND_OCSP, 0, NOW + 1, NOW + 100));
	assert_true(servable(CACHE_KIND_OCSP, 60, NOW + 60, NOW + 100));
	assert_false(servable(CACHE_KIND_OCSP, 60, NOW + 61, NOW + 100));
	assert_int_equal(kind_table[CACHE_KIND_PCCS]->min_skew_s, INTEL_SKEW_S);
	assert_int_equal(kind_table[CACHE_KIND_KDS]->min_skew_s, AMD_SKEW_S);
	assert_int_equal(kind_table[CACHE_KIND_OCSP]->min_skew_s, 0);
	assert_true(servable(CACHE_KIND_PCCS, 0, NOW + INTEL_SKEW_S, NOW + 9999));
	assert_false(servable(CACHE_KIND_PCCS, 0, NOW + INTEL_SKEW_S + 1,
	    NOW + 9999));
	assert_true(servable(CACHE_KIND_KDS, 60, NOW + AMD_SKEW_S, NOW + 9999));
	assert_false(servable(CACHE_KIND_KDS, 60, NOW + AMD_SKEW_S + 1,
	    NOW + 9999));
	assert_true(servable(CACHE_KIND_RIM, 0, NOW + 300, NOW + 9999));
	assert_false(servable(CACHE_KIND_RIM, 0, NOW + 301, NOW + 9999));
	/* A larger configured skew wins over the vendor's. */
	assert_true(servable(CACHE_KIND_PCCS, 600, NOW + 600, NOW + 9999));
	assert_false(servable(CACHE_KIND_PCCS, 600, NOW + 601, NOW + 9999));
	/* No kind: the configured skew only. */
	assert_false(servable(0, 0, NOW + 1, NOW + 9999));
}

/* An upstream's base: trailing slashes and one API suffix go. */
static void
test_base_url(void **state)
{
	static const char *const suf[] = { "/vcek/v1", "/vlek/v1", NULL };
	static const struct {
		const char	*url, *want;
	} c[] = {
		{ "https://kds.example", "https://kds.example" },
		{ "https://kds.example/", "https://kds.example" },
		{ "https://kds.example//", "https://kds.example" },
		{ "https://kds.example/vcek/v1", "https://kds.example" },
		{ "https://kds.example/vlek/v1/", "https://kds.example" },
		{ "https://kds.example/vcek/v1/vlek/v1", "https://kds.example/vcek/v1" },
		{ "/vcek/v1", "/vcek/v1" },
		{ "https://kds.example/x/vcek/v2", "https://kds.example/x/vcek/v2" },
	};
	size_t	i;
	char	*u;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		assert_non_null(u = entry_base_url(c[i].url, suf));
		assert_string_equal(u, c[i].want);
		free(u);
	}
	assert_non_null(u = entry_base_url("https://o.example/", NULL));
	assert_string_equal(u, "https://o.example");
	free(u);
}

/* Every kind is judged through its row; a value that names no kind, or a key out of range, is refused before any rule runs. */
static void
test_judge_rows(void **state)
{
	static const uint8_t	 key[1] = { 0 };
	struct entry_rules	 r;
	struct entry_record	 x;
	struct entry_judgement	 j;
	int			 k;

	(void)state;
	memset(&r, 0, sizeof(r));
	memset(&x, 0, sizeof(x));
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		assert_non_null(kind_table[k]->admit);
	x.key = key;
	x.klen = sizeof(key);
	assert_int_equal(entry_judge(0, &r, &x, NULL, 0, &j), 0);
	assert_non_null(strstr(j.reason, "not known"));
	entry_judgement_free(&j);
	assert_int_equal(entry_judge(CACHE_KIND_MAX, &r, &x, NULL, 0, &j), 0);
	assert_non_null(strstr(j.reason, "not known"));
	entry_judgement_free(&j);
	x.klen = 0;
	assert_int_equal(entry_judge(CACHE_KIND_KDS, &r, &x, NULL, 0, &j), 0);
	assert_non_null(strstr(j.reason, "key length"));
	entry_judgement_free(&j);
	/* A RIM without a trust store, and a request that is no KDS path. */
	x.klen = sizeof(key);
	assert_int_equal(entry_judge(CACHE_KIND_RIM, &r, &x, NULL, 0, &j), 0);
	assert_non_null(strstr(j.reason, "no trust store"));
	entry_judgement_free(&j);
	x.request = (const uint8_t *)"/nothing";
	x.request_len = 8;
	assert_int_equal(entry_judge(CACHE_KIND_KDS, &r, &x, NULL, 0, &j), 0);
	assert_int_equal(j.ok, 0);
	assert_true(j.reason[0] != '\0');
	entry_judgement_free(&j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_kind_named),
		cmocka_unit_test(test_sections_and_names),
		cmocka_unit_test(test_rows_whole),
		cmocka_unit_test(test_request_key),
		cmocka_unit_test(test_parse_restore),
		cmocka_unit_test(test_parse_ocsp),
		cmocka_unit_test(test_servable_expiry),
		cmocka_unit_test(test_servable_skew),
		cmocka_unit_test(test_base_url),
		cmocka_unit_test(test_judge_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
