/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for entry/pccs.c: client requests, canonical paths and keys, and admit on genuine Intel answers swapped between questions. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include <openssl/evp.h>

#include "entry/pccs.h"
#include "tv.h"

#define VEC_DIR		"/tests/vectors/intel/"
/* Inside the teepot captures' window, 2025-05-27 .. 2025-06-26 (SOURCES.md). */
#define T_TEEPOT	1748736000	/* 2025-06-01T00:00:00Z */
#define SGX_TCB_ISSUE	1748374267	/* sgx_tcb_info_00906ED50000: 2025-05-27T19:31:07Z */

/* A genuine answer: its body and the chain header it came with. */
struct answer {
	struct tv_buf	 body;
	struct tv_buf	 chain;
	const char	*chain_header;
};

static void
answer_derived(struct answer *a, const char *body, const char *chain,
    const char *header)
{
	a->body = tv_load(VEC_DIR, body);
	a->chain = tv_load(VEC_DIR, chain);
	a->chain_header = header;
}

static void
answer_teepot(struct answer *a, const char *file, const char *key,
    const char *header)
{
	struct tv_buf	json = tv_load(VEC_DIR, file);

	a->body = tv_json_str(&json, key);
	a->chain = tv_json_str(&json, "issuer_chain");
	a->chain_header = header;
	free(json.p);
}

static void
answer_free(struct answer *a)
{
	free(a->body.p);
	free(a->chain.p);
}

static const char *
answer_header(const void *arg, const char *name)
{
	const struct answer	*a = arg;

	return strcasecmp(name, a->chain_header) == 0 ?
	    (const char *)a->chain.p : NULL;
}

/* pccs_admit of answer `a` to the canonical path `path`. */
static enum entry_verdict
admit(const char *path, const struct answer *a, const struct entry_stored *st,
    struct pccs_admitted *out)
{
	struct pccs_req		 r;
	struct entry_answer	 ea = { (const uint8_t *)a->body.p, a->body.len,
				    answer_header, a, NULL, 0 };
	const char		*why;

	assert_int_equal(pccs_parse_canon(path, &r, &why), 0);
	return pccs_admit(&r, &ea, st, T_TEEPOT, out);
}

/* ---- client requests --------------------------------------------------------- */

static void
client_requests(void **state)
{
	static const struct {
		const char		*path, *query;
		enum pccs_parse_res	 res;
		const char		*canon_or_why, *variant;
	} t[] = {
		{ "/tdx/certification/v4/tcb", "fmspc=00806f050000",
		  PCCS_PARSE_OK, "/tdx/certification/v4/tcb?fmspc=00806F050000"
		  "&update=standard", "" },
		{ "/tdx/certification/v4/tcb", "update=STANDARD&fmspc=00806F050000",
		  PCCS_PARSE_OK, "/tdx/certification/v4/tcb?fmspc=00806F050000"
		  "&update=standard", "" },
		{ "/sgx/certification/v4/tcb", "fmspc=00906ED50000&update=Early",
		  PCCS_PARSE_OK, "/sgx/certification/v4/tcb?fmspc=00906ED50000"
		  "&update=early", "" },
		{ "/sgx/certification/v4/qe/identity", "tcbEvaluationDataNumber=17",
		  PCCS_PARSE_OK, "/sgx/certification/v4/qe/identity?"
		  "tcbEvaluationDataNumber=17", "" },
		{ "/sgx/certification/v4/qae/identity", NULL, PCCS_PARSE_OK,
		  "/sgx/certification/v4/qae/identity?update=standard", "" },
		{ "/tdx/certification/v4/tcbevaluationdatanumbers", NULL,
		  PCCS_PARSE_OK, "/tdx/certification/v4/tcbevaluationdatanumbers",
		  "hex" },
		{ "/sgx/certification/v4/pckcrl", "ca=Platform", PCCS_PARSE_OK,
		  "/sgx/certification/v4/pckcrl?ca=platform&encoding=der", "hex" },
		{ "/sgx/certification/v4/pckcrl", "ca=processor&encoding=PEM",
		  PCCS_PARSE_OK, "/sgx/certification/v4/pckcrl?ca=processor"
		  "&encoding=der", "pem" },
		{ "/sgx/certification/v4/rootcacrl", "", PCCS_PARSE_OK,
		  "/sgx/certification/v4/rootcacrl", "hex" },
		{ "/sgx/certification/v4/fmspcs", "platform=E5", PCCS_PARSE_OK,
		  "/sgx/certification/v4/fmspcs?platform=E5", "" },
		{ "/tdx/certification/v4/crl", "uri=https%3A%2F%2Fcertificates."
		  "trustedservices.intel.com%2FIntelSGXRootCA.der", PCCS_PARSE_OK,
		  "/sgx/certification/v4/rootcacrl", "der" },
		{ "/sgx/certification/v4/crl", "uri=https://api.trustedservices."
		  "intel.com/sgx/certification/v4/pckcrl?ca=processor",
		  PCCS_PARSE_OK, "/sgx/certification/v4/pckcrl?ca=processor"
		  "&encoding=der", "der" },
		{ "/sgx/certification/v3/tcb", "fmspc=00906ED50000",
		  PCCS_PARSE_GONE, "only the Intel PCS API version 4 is served", NULL },
		{ "/sgx/certification/v4/nope", NULL, PCCS_PARSE_NOT_FOUND, NULL, NULL },
		{ "/tdx/certification/v4/qve/identity", NULL, PCCS_PARSE_NOT_FOUND,
		  NULL, NULL },
		{ "/tdx/certification/v4/pckcrl", "ca=platform", PCCS_PARSE_NOT_FOUND,
		  NULL, NULL },
		{ "/tdx/certification/v4/tcb", "fmspc=00806F050000&foo=1",
		  PCCS_PARSE_BAD, "unknown or repeated parameter \"foo\"", NULL },
		{ "/tdx/certification/v4/tcb", "fmspc=00806F050000&fmspc=00806F050000",
		  PCCS_PARSE_BAD, "unknown or repeated parameter \"fmspc\"", NULL },
		{ "/tdx/certification/v4/tcb", "fmspc", PCCS_PARSE_BAD,
		  "the query string does not parse", NULL },
		{ "/tdx/certification/v4/tcb", "fmspc=00806F05000G", PCCS_PARSE_BAD,
		  "fmspc: expected 12 hex digits", NULL },
		{ "/tdx/certification/v4/tcb", "fmspc=00806F050000&update=late",
		  PCCS_PARSE_BAD, "update: expected early or standard", NULL },
		{ "/sgx/certification/v4/qe/identity", "update=early&"
		  "tcbEvaluationDataNumber=17", PCCS_PARSE_BAD, "update and "
		  "tcbEvaluationDataNumber are mutually exclusive", NULL },
		{ "/sgx/certification/v4/qe/identity", "tcbEvaluationDataNumber=-1",
		  PCCS_PARSE_BAD, "tcbEvaluationDataNumber: expected a non-negative "
		  "integer", NULL },
		{ "/sgx/certification/v4/pckcrl", "ca=other", PCCS_PARSE_BAD,
		  "ca: expected processor or platform", NULL },
		{ "/sgx/certification/v4/pckcrl", "ca=platform&encoding=hex",
		  PCCS_PARSE_BAD, "encoding: expected der or pem", NULL },
		{ "/sgx/certification/v4/rootcacrl", "ca=platform", PCCS_PARSE_BAD,
		  "unknown or repeated parameter \"ca\"", NULL },
		{ "/sgx/certification/v4/pckcert", "cpusvn=00", PCCS_PARSE_BAD,
		  "pckcert: encrypted_ppid (768 hex), cpusvn (32), pcesvn (4) and "
		  "pceid (4) are required", NULL },
		{ "/sgx/certification/v4/fmspcs", "platform=E7", PCCS_PARSE_BAD,
		  "platform: expected all, client, E3 or E5", NULL },
		{ "/sgx/certification/v4/crl", "uri=https://example.com/x.crl",
		  PCCS_PARSE_BAD, "uri: not an Intel SGX CRL location", NULL },
		{ "/sgx/certification/v4/crl", NULL, PCCS_PARSE_BAD, "uri: required",
		  NULL },
	};
	struct pccs_req	 r;
	char		 why[PCCS_WHY_MAX], canon[PCCS_PATH_MAX];
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		print_message("%s?%s\n", t[i].path, t[i].query ? t[i].query : "");
		assert_int_equal(pccs_parse(t[i].path, t[i].query, &r, why,
		    sizeof(why)), t[i].res);
		if (t[i].res != PCCS_PARSE_OK) {
			if (t[i].canon_or_why != NULL)
				assert_string_equal(why, t[i].canon_or_why);
			continue;
		}
		assert_int_equal(pccs_canon(&r, canon, sizeof(canon)), 0);
		assert_string_equal(canon, t[i].canon_or_why);
		assert_string_equal(r.variant, t[i].variant);
	}
}

static void
client_pckcert(void **state)
{
	struct pccs_req	 r;
	char		 q[1200], canon[PCCS_PATH_MAX], why[PCCS_WHY_MAX];
	char		 ppid[769];
	uint8_t		 key[CACHE_KEY_MAX_BYTES];
	const char	*perr;
	size_t		 klen;

	(void)state;
	memset(ppid, 'a', 768);
	ppid[768] = '\0';
	snprintf(q, sizeof(q), "encrypted_ppid=%s&cpusvn=%032d&pcesvn=0b00&"
	    "pceid=0000&qeid=ab", ppid, 0);
	assert_int_equal(pccs_parse("/sgx/certification/v4/pckcert", q, &r, why,
	    sizeof(why)), PCCS_PARSE_OK);
	assert_true(pccs_wants_api_key(&r));
	assert_int_equal(pccs_canon(&r, canon, sizeof(canon)), 0);
	/* Hex upper-cased, parameters in Intel's order. */
	assert_non_null(strstr(canon, "?encrypted_ppid=AAAA"));
	assert_non_null(strstr(canon, "&pcesvn=0B00&pceid=0000&qeid=AB"));
	assert_int_equal(pccs_parse_stored(canon, &r, &perr), 0);
	assert_int_equal(pccs_key(canon, key, &klen), 0);
	assert_int_equal(klen, 34);
	/* Odd-length qeid, too long a ppid. */
	snprintf(q, sizeof(q), "encrypted_ppid=%s&cpusvn=%032d&pcesvn=0000&"
	    "pceid=0000&qeid=abc", ppid, 0);
	assert_int_equal(pccs_parse("/sgx/certification/v4/pckcert", q, &r, why,
	    sizeof(why)), PCCS_PARSE_BAD);
	assert_string_equal(why, "qeid: expected up to 260 hex digits");
	assert_int_equal(pccs_parse("/sgx/certification/v4/tcb",
	    "fmspc=00906ED50000", &r, why, sizeof(why)), PCCS_PARSE_OK);
	assert_false(pccs_wants_api_key(&r));
}

/* ---- canonical paths and keys (staplectl, the refresh) ------------------------ */

static void
canonical_only(void **state)
{
	struct pccs_req		 r;
	const char		*why;
	static const char *const good[] = {
		"/tdx/certification/v4/tcb?fmspc=00806F050000&update=standard",
		"/sgx/certification/v4/tcb?fmspc=00906ED50000&update=early",
		"/sgx/certification/v4/tcb?fmspc=00906ED50000&tcbEvaluationDataNumber=17",
		"/tdx/certification/v4/qe/identity?update=standard",
		"/sgx/certification/v4/qve/identity?update=standard",
		"/sgx/certification/v4/pckcrl?ca=platform&encoding=der",
		"/sgx/certification/v4/rootcacrl",
		"/tdx/certification/v4/tcbevaluationdatanumbers",
		NULL
	};
	/* What a client may send, but the daemon never stores in this spelling. */
	static const char *const bad[] = {
		"/tdx/certification/v4/tcb?fmspc=00806f050000&update=standard",
		"/tdx/certification/v4/tcb?fmspc=00806F050000",
		"/tdx/certification/v4/tcb?update=standard&fmspc=00806F050000",
		"/tdx/certification/v4/tcb?fmspc=00806F050000&update=standard&x=1",
		"/tdx/certification/v4/tcb?fmspc=00806F050000&update=STANDARD",
		"/sgx/certification/v4/tcb?fmspc=00906ED50000&tcbEvaluationDataNumber=017",
		"/sgx/certification/v4/pckcrl?ca=platform",
		"/tdx/certification/v4/pckcrl?ca=platform&encoding=der",
		"/tdx/certification/v4/qve/identity?update=standard",
		"/sgx/certification/v4/rootcacrl?",
		"/sgx/certification/v4/crl?uri=x",
		"/sgx/certification/v4/fmspcs",
		"/sgx/certification/v3/tcb?fmspc=00906ED50000&update=standard",
		"/vcek/v1/Milan/cert_chain",
		NULL
	};
	size_t	i;

	(void)state;
	for (i = 0; good[i] != NULL; i++)
		assert_int_equal(pccs_parse_stored(good[i], &r, &why), 0);
	for (i = 0; bad[i] != NULL; i++) {
		print_message("%s\n", bad[i]);
		assert_int_equal(pccs_parse_stored(bad[i], &r, &why), -1);
		assert_non_null(why);
	}
	assert_int_equal(pccs_parse_stored(good[0], &r, &why), 0);
	assert_int_equal(r.what, PCCS_TCB);
	assert_true(r.tdx);
	assert_string_equal(r.fmspc, "00806F050000");
	assert_string_equal(r.chain_header, "TCB-Info-Issuer-Chain");
	assert_int_equal(pccs_parse_stored(good[2], &r, &why), 0);
	assert_int_equal(r.eval_num, 17);
	assert_int_equal(pccs_parse_stored(good[6], &r, &why), 0);
	assert_null(r.chain_header);
	/* fmspcs is canonical (the daemon relays it) but never an entry. */
	assert_int_equal(pccs_parse_canon("/sgx/certification/v4/fmspcs", &r, &why), 0);
	assert_int_equal(pccs_parse_stored("/sgx/certification/v4/fmspcs", &r, &why),
	    -1);
	assert_non_null(strstr(why, "never stored"));
	assert_int_equal(pccs_what_of(good[5]), PCCS_PCK_CRL);
	assert_int_equal(pccs_what_of(good[6]), PCCS_ROOT_CRL);
	assert_int_equal(pccs_what_of("/sgx/certification/v4/crl?uri=x"), PCCS_WHAT_MAX);
	assert_int_equal(pccs_what_of("/sgx/certification/v3/pckcrl"), PCCS_WHAT_MAX);
	assert_int_equal(pccs_parse_stored("/sgx/certification/v4/crl?uri=x", &r,
	    &why), -1);
	assert_string_equal(why, "not a kind of Intel collateral stapled stores");
}

static void
keys(void **state)
{
	uint8_t	key[CACHE_KEY_MAX_BYTES];
	char	path[PCCS_PATH_MAX];
	size_t	klen;
	uint8_t	md[32];

	(void)state;
	assert_int_equal(pccs_key("/sgx/certification/v4/rootcacrl", key, &klen), 0);
	assert_int_equal(klen, strlen("/sgx/certification/v4/rootcacrl"));
	assert_memory_equal(key, "/sgx/certification/v4/rootcacrl", klen);
	/* Exactly PCCS_KEY_INLINE_MAX bytes: still the path itself. */
	memset(path, 'a', PCCS_KEY_INLINE_MAX);
	path[PCCS_KEY_INLINE_MAX] = '\0';
	assert_int_equal(pccs_key(path, key, &klen), 0);
	assert_int_equal(klen, PCCS_KEY_INLINE_MAX);
	/* pckcert paths run past 200 bytes: "h:" and the SHA-256. */
	snprintf(path, sizeof(path), "/sgx/certification/v4/pckcert?"
	    "encrypted_ppid=%0768d&cpusvn=%032d&pcesvn=0000&pceid=0000", 0, 0);
	assert_int_equal(pccs_key(path, key, &klen), 0);
	assert_int_equal(klen, 34);
	assert_memory_equal(key, "h:", 2);
	assert_int_equal(EVP_Digest(path, strlen(path), md, NULL, EVP_sha256(),
	    NULL), 1);
	assert_memory_equal(key + 2, md, sizeof(md));
}

/* ---- what an answer must answer ---------------------------------------------- */

static void
binding(void **state)
{
	struct pccs_req		 r;
	struct intel_result	 v;
	const char		*why;
	char			 buf[200];

	(void)state;
	assert_int_equal(pccs_parse_canon("/tdx/certification/v4/tcb?fmspc="
	    "00806F050000&update=standard", &r, &why), 0);
	memset(&v, 0, sizeof(v));
	v.tcb_evaluation_data_number = 17;
	snprintf(v.fmspc, sizeof(v.fmspc), "00806f050000");
	snprintf(v.id, sizeof(v.id), "TDX");
	assert_int_equal(pccs_binds(&r, &v, buf, sizeof(buf)), 0);
	snprintf(v.id, sizeof(v.id), "SGX");
	assert_int_equal(pccs_binds(&r, &v, buf, sizeof(buf)), -1);
	/* TCB info v2 has no id: SGX's, never TDX's. */
	v.id[0] = '\0';
	assert_int_equal(pccs_binds(&r, &v, buf, sizeof(buf)), -1);
	snprintf(v.id, sizeof(v.id), "TDX");
	snprintf(v.fmspc, sizeof(v.fmspc), "00806F050001");
	assert_int_equal(pccs_binds(&r, &v, buf, sizeof(buf)), -1);
	assert_string_equal(buf, "TCB info for FMSPC 00806F050001 filed under FMSPC "
	    "00806F050000");
	assert_int_equal(pccs_parse_canon("/sgx/certification/v4/tcb?fmspc="
	    "00806F050001&update=standard", &r, &why), 0);
	v.id[0] = '\0';
	assert_int_equal(pccs_binds(&r, &v, buf, sizeof(buf)), 0);
	assert_int_equal(pccs_parse_canon("/tdx/certification/v4/qe/identity?"
	    "update=standard", &r, &why), 0);
	snprintf(v.id, sizeof(v.id), "QE");
	assert_int_equal(pccs_binds(&r, &v, buf, sizeof(buf)), -1);
	snprintf(v.id, sizeof(v.id), "TD_QE");
	assert_int_equal(pccs_binds(&r, &v, buf, sizeof(buf)), 0);
	/* An identity without an id answers no identity path. */
	v.id[0] = '\0';
	assert_int_equal(pccs_binds(&r, &v, buf, sizeof(buf)), -1);
	assert_int_equal(pccs_parse_canon("/sgx/certification/v4/qve/identity?"
	    "tcbEvaluationDataNumber=18", &r, &why), 0);
	snprintf(v.id, sizeof(v.id), "QVE");
	assert_int_equal(pccs_binds(&r, &v, buf, sizeof(buf)), -1);
	assert_string_equal(buf, "tcbEvaluationDataNumber 17 filed under 18");
	v.tcb_evaluation_data_number = 18;
	assert_int_equal(pccs_binds(&r, &v, buf, sizeof(buf)), 0);
	/* A CRL of no known CA answers no pckcrl question. */
	assert_int_equal(pccs_parse_canon("/sgx/certification/v4/pckcrl?ca="
	    "processor&encoding=der", &r, &why), 0);
	memset(&v, 0, sizeof(v));
	assert_int_equal(pccs_binds(&r, &v, buf, sizeof(buf)), -1);
	snprintf(v.ca, sizeof(v.ca), "processor");
	assert_int_equal(pccs_binds(&r, &v, buf, sizeof(buf)), 0);
}

/* Genuine answers, each to its own question: stored, with the entry's metadata. */
static void
admit_genuine(void **state)
{
	struct answer		 a;
	struct pccs_admitted	 out;

	(void)state;
	answer_derived(&a, "derived/sgx_tcb_info_00906ED50000.body.json",
	    "derived/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt",
	    "TCB-Info-Issuer-Chain");
	assert_int_equal(admit("/sgx/certification/v4/tcb?fmspc=00906ED50000&"
	    "update=standard", &a, NULL, &out), ENTRY_STORE);
	assert_int_equal(out.meta.this_update, SGX_TCB_ISSUE);
	assert_int_equal(out.meta.produced_at, SGX_TCB_ISSUE);
	assert_int_equal(out.meta.next_update, SGX_TCB_ISSUE + 30 * 86400);
	assert_int_equal(out.meta.status, 17);
	assert_int_equal(out.meta.flags, 0);
	assert_int_equal(admit("/sgx/certification/v4/tcb?fmspc=00906ED50000&"
	    "tcbEvaluationDataNumber=17", &a, NULL, &out), ENTRY_STORE);
	answer_free(&a);
	answer_derived(&a, "derived/tdx_qe_identity.body.json",
	    "derived/tdx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt",
	    "SGX-Enclave-Identity-Issuer-Chain");
	assert_int_equal(admit("/tdx/certification/v4/qe/identity?update=standard",
	    &a, NULL, &out), ENTRY_STORE);
	answer_free(&a);
	answer_derived(&a, "derived/pckcrl_platform.der",
	    "derived/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt",
	    "SGX-PCK-CRL-Issuer-Chain");
	assert_int_equal(admit("/sgx/certification/v4/pckcrl?ca=platform&"
	    "encoding=der", &a, NULL, &out), ENTRY_STORE);
	assert_int_equal(out.r.crl_entries, 44);
	answer_free(&a);
	answer_teepot(&a, "tdx_tcb_eval_nums.json", "tcb_evaluation_data_numbers_json",
	    "TCB-Evaluation-Data-Numbers-Issuer-Chain");
	assert_int_equal(admit("/tdx/certification/v4/tcbevaluationdatanumbers", &a,
	    NULL, &out), ENTRY_STORE);
	assert_int_equal(out.meta.status, 19);
	answer_free(&a);
	/* fmspcs is unsigned: relayed, never stored, whatever it says. */
	a.body.p = (uint8_t *)"[]";
	a.body.len = 2;
	a.chain.p = NULL;
	a.chain_header = "X";
	assert_int_equal(admit("/sgx/certification/v4/fmspcs", &a, NULL, &out),
	    ENTRY_PASS);
}

/* Genuine, correctly signed answers to another question: each refused with its reason. */
static void
admit_swapped(void **state)
{
	static const struct {
		const char	*path, *body, *chain, *header, *why;
	} t[] = {
		/* 1: the Processor-CA CRL (0 revoked) asked as the Platform CA's (44). */
		{ "/sgx/certification/v4/pckcrl?ca=platform&encoding=der",
		  "derived/pckcrl_processor.der",
		  "derived/pckcrl_processor.SGX-PCK-CRL-Issuer-Chain.txt",
		  "SGX-PCK-CRL-Issuer-Chain",
		  "answers another request: a processor CA CRL filed under platform" },
		{ "/sgx/certification/v4/pckcrl?ca=processor&encoding=der",
		  "derived/pckcrl_platform.der",
		  "derived/pckcrl_platform.SGX-PCK-CRL-Issuer-Chain.txt",
		  "SGX-PCK-CRL-Issuer-Chain",
		  "answers another request: a platform CA CRL filed under processor" },
		/* 3: number 17 asked as 19: a first-fill rollback. */
		{ "/sgx/certification/v4/tcb?fmspc=00906ED50000&tcbEvaluationDataNumber=19",
		  "derived/sgx_tcb_info_00906ED50000.body.json",
		  "derived/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt",
		  "TCB-Info-Issuer-Chain",
		  "answers another request: tcbEvaluationDataNumber 17 filed under 19" },
		/* SGX TCB info on the TDX path (refused before too). */
		{ "/tdx/certification/v4/tcb?fmspc=00906ED50000&update=standard",
		  "derived/sgx_tcb_info_00906ED50000.body.json",
		  "derived/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt",
		  "TCB-Info-Issuer-Chain",
		  "answers another request: id SGX filed under a path for TDX" },
		{ "/tdx/certification/v4/tcb?fmspc=00806F050001&update=standard",
		  "derived/tdx_tcb_info.body.json",
		  "derived/tdx_tcb_info.TCB-Info-Issuer-Chain.txt",
		  "TCB-Info-Issuer-Chain", "answers another request: TCB info for "
		  "FMSPC 00806F050000 filed under FMSPC 00806F050001" },
		{ "/sgx/certification/v4/qe/identity?update=standard",
		  "derived/tdx_qe_identity.body.json",
		  "derived/tdx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt",
		  "SGX-Enclave-Identity-Issuer-Chain",
		  "answers another request: id TD_QE filed under a path for QE" },
		{ "/sgx/certification/v4/qve/identity?update=standard",
		  "derived/sgx_qe_identity.body.json",
		  "derived/sgx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt",
		  "SGX-Enclave-Identity-Issuer-Chain",
		  "answers another request: id QE filed under a path for QVE" },
		{ "/sgx/certification/v4/qe/identity?tcbEvaluationDataNumber=18",
		  "derived/sgx_qe_identity.body.json",
		  "derived/sgx_qe_identity.SGX-Enclave-Identity-Issuer-Chain.txt",
		  "SGX-Enclave-Identity-Issuer-Chain",
		  "answers another request: tcbEvaluationDataNumber 17 filed under 18" },
	};
	struct answer		 a;
	struct pccs_admitted	 out;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		print_message("%s\n", t[i].path);
		answer_derived(&a, t[i].body, t[i].chain, t[i].header);
		assert_int_equal(admit(t[i].path, &a, NULL, &out), ENTRY_REFUSE);
		assert_string_equal(out.why, t[i].why);
		assert_false(out.stale);
		answer_free(&a);
	}
	/* 2: Intel's TDX evaluation numbers asked for SGX, and the other way round. */
	answer_teepot(&a, "tdx_tcb_eval_nums.json", "tcb_evaluation_data_numbers_json",
	    "TCB-Evaluation-Data-Numbers-Issuer-Chain");
	assert_int_equal(admit("/sgx/certification/v4/tcbevaluationdatanumbers", &a,
	    NULL, &out), ENTRY_REFUSE);
	assert_string_equal(out.why, "answers another request: id TDX filed under "
	    "a path for SGX");
	answer_free(&a);
	answer_teepot(&a, "sgx_tcb_eval_nums.json", "tcb_evaluation_data_numbers_json",
	    "TCB-Evaluation-Data-Numbers-Issuer-Chain");
	assert_int_equal(admit("/tdx/certification/v4/tcbevaluationdatanumbers", &a,
	    NULL, &out), ENTRY_REFUSE);
	assert_int_equal(admit("/sgx/certification/v4/tcbevaluationdatanumbers", &a,
	    NULL, &out), ENTRY_STORE);
	answer_free(&a);
}

/* Never older than the stored entry; the bundle path (kept headers) judges alike. */
static void
admit_stored(void **state)
{
	static const char	 path[] = "/sgx/certification/v4/tcb?fmspc=00906ED50000"
				    "&update=standard";
	struct answer		 old, early;
	struct entry_stored	 st;
	struct pccs_admitted	 out;
	struct pccs_req		 r;
	const char		*why;
	char			 hdrs[4096];
	int			 n;

	(void)state;
	answer_derived(&old, "derived/sgx_tcb_info_00906ED50000.body.json",
	    "derived/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt",
	    "TCB-Info-Issuer-Chain");
	/* Number 19 for the same FMSPC (update=early), as if stored under this key. */
	answer_teepot(&early, "sgx_tcb_info_early.json", "tcb_info_json",
	    "TCB-Info-Issuer-Chain");
	memset(&st, 0, sizeof(st));
	st.body = (const uint8_t *)early.body.p;
	st.body_len = early.body.len;
	/* The stored chain as a kept header: percent-encoded as PCS sends it. */
	free(early.chain.p);
	early.chain = tv_load(VEC_DIR,
	    "derived/sgx_tcb_info_00906ED50000.TCB-Info-Issuer-Chain.txt");
	n = snprintf(hdrs, sizeof(hdrs), "Content-Type: application/json\r\n"
	    "TCB-Info-Issuer-Chain: %s\r\n", (const char *)early.chain.p);
	assert_true(n > 0 && (size_t)n < sizeof(hdrs));
	st.headers = (const uint8_t *)hdrs;
	st.headers_len = (size_t)n;
	st.meta.this_update = SGX_TCB_ISSUE;
	assert_int_equal(admit(path, &old, &st, &out), ENTRY_REFUSE);
	assert_true(out.stale);
	assert_string_equal(out.why, "stale: tcbEvaluationDataNumber 17 is older "
	    "than the stored one");
	assert_int_equal(pccs_parse_canon(path, &r, &why), 0);
	assert_true(pccs_older_than_stored(&r, &out.r, &st));
	/* The newer may replace the older, on the bundle path too (kept headers). */
	st.body = (const uint8_t *)old.body.p;
	st.body_len = old.body.len;
	assert_int_equal(pccs_admit_kept(&r, (const uint8_t *)early.body.p,
	    early.body.len, (const uint8_t *)hdrs, (size_t)n, &st, T_TEEPOT, &out),
	    ENTRY_STORE);
	assert_int_equal(out.meta.status, 19);
	/* Kept headers without the chain: nothing verifies. */
	assert_int_equal(pccs_admit_kept(&r, (const uint8_t *)early.body.p,
	    early.body.len, (const uint8_t *)"Content-Type: application/json\r\n",
	    32, NULL, T_TEEPOT, &out), ENTRY_REFUSE);
	assert_int_equal(out.r.verdict, INTEL_ERR_ISSUER_CHAIN);
	answer_free(&old);
	answer_free(&early);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(client_requests),
		cmocka_unit_test(client_pckcert),
		cmocka_unit_test(canonical_only),
		cmocka_unit_test(keys),
		cmocka_unit_test(binding),
		cmocka_unit_test(admit_genuine),
		cmocka_unit_test(admit_swapped),
		cmocka_unit_test(admit_stored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
