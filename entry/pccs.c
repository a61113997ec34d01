/* SPDX-License-Identifier: Apache-2.0 */
/* The Intel PCS/PCCS kind: one table of paths and parameter grammars, the canonical path and key, and the rules an answer must meet. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "attest/util.h"
#include "entry/entry.h"
#include "entry/judge.h"
#include "entry/kind.h"
#include "entry/pccs.h"
#include "entry/query.h"

/*
 * What an entry takes of the map: a PCK certificate with its issuer
 * chain (the most numerous PCCS entry; TCB info is 14 KB), in whole
 * 4 KiB overflow pages past 2 KiB. One per host: 15 % of the map.
 */
#define PCCS_ENTRY_BYTES	(8 * 1024)
#define PCCS_MAP_SHARE_PCT	15
/* Intel's PCS, asked when the section names no upstreams. */
#define PCCS_UPSTREAM		"https://api.trustedservices.intel.com"

/* PCS answers carry the issuer chains their verifiers read. */
const char *const pccs_keep_headers[] = {
	"Content-Type",
	"TCB-Info-Issuer-Chain",
	"SGX-TCB-Info-Issuer-Chain",
	"SGX-Enclave-Identity-Issuer-Chain",
	"TCB-Evaluation-Data-Numbers-Issuer-Chain",
	"SGX-PCK-CRL-Issuer-Chain",
	"SGX-PCK-Certificate-Issuer-Chain",
	"SGX-PCK-Certificate-CA-Type",
	"SGX-TCBm",
	"SGX-FMSPC",
	NULL
};

const char *const pccs_base_suffixes[] = {
	"/sgx/certification/v4", "/tdx/certification/v4", NULL
};

#define PCCS_V4_PREFIX_LEN	22	/* "/sgx/certification/v4/" */
#define PCCS_SHA256_BYTES	32
#define PCCS_FMSPC_HEX		12
#define PCCS_PPID_HEX		768
#define PCCS_CPUSVN_HEX		32
#define PCCS_SVN_HEX		4	/* pcesvn, pceid */
#define PCCS_QEID_HEX_MAX	260

const char *const pccs_what_str[PCCS_WHAT_MAX] = {
	[PCCS_TCB] = "tcb",
	[PCCS_QE] = "qe/identity",
	[PCCS_QVE] = "qve/identity",
	[PCCS_QAE] = "qae/identity",
	[PCCS_EVAL_NUMS] = "tcbevaluationdatanumbers",
	[PCCS_PCK_CRL] = "pckcrl",
	[PCCS_ROOT_CRL] = "rootcacrl",
	[PCCS_PCK_CERT] = "pckcert",
	[PCCS_FMSPCS] = "fmspcs",
};

/* TCB info's header before PCS v4 renamed it. */
#define PCCS_V3_TCB_CHAIN	"SGX-TCB-Info-Issuer-Chain"

/* ---- the grammar: one row per path, its parameters and their checks ------- */

/* Read the parameters it owns from q into r: 0, or -1 with *why. */
typedef int pccs_param_fn(const struct query *q, struct pccs_req *r,
    const char **why);

static pccs_param_fn p_fmspc, p_update, p_ca, p_encoding, p_pck, p_qeid,
    p_platform, p_uri;

static const char *const n_tcb[] = { "fmspc", "update", "tcbEvaluationDataNumber",
    NULL };
static const char *const n_ident[] = { "update", "tcbEvaluationDataNumber", NULL };
static const char *const n_none[] = { NULL };
static const char *const n_crl[] = { "ca", "encoding", NULL };
static const char *const n_pck[] = { "encrypted_ppid", "cpusvn", "pcesvn", "pceid",
    "qeid", NULL };
static const char *const n_fmspcs[] = { "platform", NULL };
static const char *const n_uri[] = { "uri", NULL };

static pccs_param_fn *const s_tcb[] = { p_fmspc, p_update, NULL };
static pccs_param_fn *const s_ident[] = { p_update, NULL };
static pccs_param_fn *const s_none[] = { NULL };
static pccs_param_fn *const s_crl[] = { p_ca, p_encoding, NULL };
static pccs_param_fn *const s_pck[] = { p_pck, p_qeid, NULL };
static pccs_param_fn *const s_fmspcs[] = { p_platform, NULL };
static pccs_param_fn *const s_uri[] = { p_uri, NULL };

static const struct pccs_path {
	const char		*name;		/* after /{sgx|tdx}/certification/v4/ */
	enum pccs_what		 what;		/* PCCS_WHAT_MAX: set by its grammar */
	int			 tdx;		/* also under /tdx/ */
	enum intel_kind		 kind;
	const char		*chain_header;
	const char		*variant;	/* how a CRL is served by default */
	const char *const	*names;		/* the parameters it accepts */
	pccs_param_fn *const	*steps;		/* their checks, in order */
} pccs_paths[] = {
	{ "tcb", PCCS_TCB, 1, INTEL_TCB_INFO, "TCB-Info-Issuer-Chain", "",
	    n_tcb, s_tcb },
	{ "qe/identity", PCCS_QE, 1, INTEL_ENCLAVE_IDENTITY,
	    "SGX-Enclave-Identity-Issuer-Chain", "", n_ident, s_ident },
	{ "qve/identity", PCCS_QVE, 0, INTEL_ENCLAVE_IDENTITY,
	    "SGX-Enclave-Identity-Issuer-Chain", "", n_ident, s_ident },
	{ "qae/identity", PCCS_QAE, 0, INTEL_ENCLAVE_IDENTITY,
	    "SGX-Enclave-Identity-Issuer-Chain", "", n_ident, s_ident },
	{ "tcbevaluationdatanumbers", PCCS_EVAL_NUMS, 1, INTEL_TCB_EVAL_NUMS,
	    "TCB-Evaluation-Data-Numbers-Issuer-Chain", "hex", n_none, s_none },
	{ "pckcrl", PCCS_PCK_CRL, 0, INTEL_PCK_CRL, "SGX-PCK-CRL-Issuer-Chain",
	    "hex", n_crl, s_crl },
	{ "rootcacrl", PCCS_ROOT_CRL, 0, INTEL_ROOT_CA_CRL, NULL, "hex", n_none,
	    s_none },
	{ "pckcert", PCCS_PCK_CERT, 0, INTEL_PCK_CERT,
	    "SGX-PCK-Certificate-Issuer-Chain", "", n_pck, s_pck },
	{ "fmspcs", PCCS_FMSPCS, 0, INTEL_KIND_MAX, NULL, "", n_fmspcs, s_fmspcs },
	/* PCCS's crl?uri=: only Intel's own CRL locations, mapped to our entries. */
	{ "crl", PCCS_WHAT_MAX, 1, INTEL_KIND_MAX, NULL, "der", n_uri, s_uri },
};
#define PCCS_NPATHS	(sizeof(pccs_paths) / sizeof(pccs_paths[0]))

/* The row of what (never the crl?uri= alias). */
static const struct pccs_path *
row_of(enum pccs_what what)
{
	size_t	i;

	for (i = 0; i < PCCS_NPATHS; i++)
		if (pccs_paths[i].what == what)
			return &pccs_paths[i];
	return NULL;
}

static void
set_what(struct pccs_req *r, enum pccs_what what)
{
	const struct pccs_path	*p = row_of(what);

	r->what = what;
	r->kind = p != NULL ? p->kind : INTEL_KIND_MAX;
	r->chain_header = p != NULL ? p->chain_header : NULL;
}

/* hex of exactly n digits (n 0: any even length up to max), upper-cased into out. */
static int
hex_param(const char *v, size_t n, size_t max, char *out, size_t outlen)
{
	size_t	len, i;

	if (v == NULL)
		return -1;
	len = strlen(v);
	if ((n && len != n) || len == 0 || len > max || len % 2 || len + 1 > outlen)
		return -1;
	for (i = 0; i < len; i++) {
		if (!isxdigit((unsigned char)v[i]))
			return -1;
		out[i] = (char)toupper((unsigned char)v[i]);
	}
	out[len] = '\0';
	return 0;
}

static int
p_fmspc(const struct query *q, struct pccs_req *r, const char **why)
{
	if (hex_param(query_get(q, "fmspc"), PCCS_FMSPC_HEX, PCCS_FMSPC_HEX,
	    r->fmspc, sizeof(r->fmspc)) == -1) {
		*why = "fmspc: expected 12 hex digits";
		return -1;
	}
	return 0;
}

/* update=early|standard or tcbEvaluationDataNumber=N, not both. */
static int
p_update(const struct query *q, struct pccs_req *r, const char **why)
{
	const char	*u = query_get(q, "update");
	const char	*n = query_get(q, "tcbEvaluationDataNumber");
	char		*end;
	long		 v;

	if (u != NULL && n != NULL) {
		*why = "update and tcbEvaluationDataNumber are mutually exclusive";
		return -1;
	}
	if (n != NULL) {
		errno = 0;
		v = strtol(n, &end, 10);
		if (*n == '\0' || *end != '\0' || errno || v < 0 ||
		    v > PCCS_EVAL_NUM_MAX) {
			*why = "tcbEvaluationDataNumber: expected a non-negative integer";
			return -1;
		}
		r->eval_num = v;
		return 0;
	}
	/* Intel's default is standard. */
	if (u != NULL && strcasecmp(u, "early") == 0)
		r->early = 1;
	else if (u != NULL && strcasecmp(u, "standard") != 0) {
		*why = "update: expected early or standard";
		return -1;
	}
	return 0;
}

static int
p_ca(const struct query *q, struct pccs_req *r, const char **why)
{
	const char	*v = query_get(q, "ca");

	if (v != NULL && strcasecmp(v, "processor") == 0)
		snprintf(r->ca, sizeof(r->ca), "processor");
	else if (v != NULL && strcasecmp(v, "platform") == 0)
		snprintf(r->ca, sizeof(r->ca), "platform");
	else {
		*why = "ca: expected processor or platform";
		return -1;
	}
	return 0;
}

/* One entry whatever the dialect (always DER from upstream): only how it is served. */
static int
p_encoding(const struct query *q, struct pccs_req *r, const char **why)
{
	const char	*v = query_get(q, "encoding");

	if (v == NULL)
		snprintf(r->variant, sizeof(r->variant), "hex");
	else if (strcasecmp(v, "der") == 0)
		snprintf(r->variant, sizeof(r->variant), "der");
	else if (strcasecmp(v, "pem") == 0)
		snprintf(r->variant, sizeof(r->variant), "pem");
	else {
		*why = "encoding: expected der or pem";
		return -1;
	}
	return 0;
}

static int
p_pck(const struct query *q, struct pccs_req *r, const char **why)
{
	if (hex_param(query_get(q, "encrypted_ppid"), PCCS_PPID_HEX, PCCS_PPID_HEX,
	    r->ppid, sizeof(r->ppid)) == -1 ||
	    hex_param(query_get(q, "cpusvn"), PCCS_CPUSVN_HEX, PCCS_CPUSVN_HEX,
	    r->cpusvn, sizeof(r->cpusvn)) == -1 ||
	    hex_param(query_get(q, "pcesvn"), PCCS_SVN_HEX, PCCS_SVN_HEX,
	    r->pcesvn, sizeof(r->pcesvn)) == -1 ||
	    hex_param(query_get(q, "pceid"), PCCS_SVN_HEX, PCCS_SVN_HEX,
	    r->pceid, sizeof(r->pceid)) == -1) {
		*why = "pckcert: encrypted_ppid (768 hex), cpusvn (32), pcesvn (4) "
		    "and pceid (4) are required";
		return -1;
	}
	return 0;
}

static int
p_qeid(const struct query *q, struct pccs_req *r, const char **why)
{
	const char	*v = query_get(q, "qeid");

	r->qeid[0] = '\0';
	if (v != NULL && hex_param(v, 0, PCCS_QEID_HEX_MAX, r->qeid,
	    sizeof(r->qeid)) == -1) {
		*why = "qeid: expected up to 260 hex digits";
		return -1;
	}
	return 0;
}

static int
p_platform(const struct query *q, struct pccs_req *r, const char **why)
{
	const char	*v = query_get(q, "platform");

	if (v != NULL && strcmp(v, "all") != 0 && strcmp(v, "client") != 0 &&
	    strcmp(v, "E3") != 0 && strcmp(v, "E5") != 0) {
		*why = "platform: expected all, client, E3 or E5";
		return -1;
	}
	snprintf(r->platform, sizeof(r->platform), "%s", v != NULL ? v : "");
	return 0;
}

/* PCCS 3.1 answers crl?uri= with raw DER; only Intel's CRL locations are ours. */
static int
p_uri(const struct query *q, struct pccs_req *r, const char **why)
{
	const char	*v = query_get(q, "uri");

	if (v == NULL) {
		*why = "uri: required";
		return -1;
	}
	r->tdx = 0;	/* both live under /sgx/ */
	if (strstr(v, "certificates.trustedservices.intel.com/IntelSGXRootCA.") != NULL) {
		set_what(r, PCCS_ROOT_CRL);
	} else if (strstr(v, "/sgx/certification/v4/pckcrl?ca=processor") != NULL ||
	    strstr(v, "/sgx/certification/v4/pckcrl?ca=platform") != NULL) {
		set_what(r, PCCS_PCK_CRL);
		snprintf(r->ca, sizeof(r->ca), "%s", strstr(v, "ca=processor") ?
		    "processor" : "platform");
	} else {
		*why = "uri: not an Intel SGX CRL location";
		return -1;
	}
	return 0;
}

/* ---- requests ----------------------------------------------------------------- */

/* The row for the path after v4/ (rest ends at '\0' or, when qm, at '?'). */
static const struct pccs_path *
path_named(const char *rest, int qm)
{
	size_t	i, n;

	for (i = 0; i < PCCS_NPATHS; i++) {
		n = strlen(pccs_paths[i].name);
		if (strncmp(rest, pccs_paths[i].name, n) == 0 &&
		    (rest[n] == '\0' || (qm && rest[n] == '?')))
			return &pccs_paths[i];
	}
	return NULL;
}

static void
req_init(struct pccs_req *r)
{
	memset(r, 0, sizeof(*r));
	r->what = PCCS_WHAT_MAX;
	r->kind = INTEL_KIND_MAX;
	r->eval_num = -1;
}

int
pccs_req_for(struct pccs_req *r, enum pccs_what what, int tdx)
{
	const struct pccs_path	*p = row_of(what);

	req_init(r);
	if (what >= PCCS_WHAT_MAX || p == NULL || (tdx && !p->tdx))
		return -1;
	set_what(r, what);
	r->tdx = tdx;
	snprintf(r->variant, sizeof(r->variant), "%s", p->variant);
	return 0;
}

/* Run p's grammar over the query: PCCS_PARSE_OK or PCCS_PARSE_BAD with why. */
static enum pccs_parse_res
parse_params(const struct pccs_path *p, const char *query, struct pccs_req *r,
    char *why, size_t whylen)
{
	struct query		 q;
	enum query_err		 qe;
	enum pccs_parse_res	 rv = PCCS_PARSE_BAD;
	const char		*bad, *msg = NULL;
	size_t			 i;

	if ((qe = query_parse(query, &q)) != QUERY_OK) {
		if (qe == QUERY_ERR_REPEATED)
			snprintf(why, whylen, "unknown or repeated parameter "
			    "\"%.64s\"", q.bad);
		else
			snprintf(why, whylen, "the query string does not parse");
		goto out;
	}
	if ((bad = query_unknown(&q, p->names)) != NULL) {
		snprintf(why, whylen, "unknown or repeated parameter \"%.64s\"", bad);
		goto out;
	}
	for (i = 0; p->steps[i] != NULL; i++)
		if (p->steps[i](&q, r, &msg) == -1) {
			snprintf(why, whylen, "%s", msg);
			goto out;
		}
	rv = PCCS_PARSE_OK;
 out:
	query_free(&q);
	return rv;
}

enum pccs_parse_res
pccs_parse(const char *path, const char *query, struct pccs_req *r, char *why,
    size_t whylen)
{
	const struct pccs_path	*p;
	int			 tdx;

	req_init(r);
	snprintf(why, whylen, "Not Found");
	if (strncmp(path, "/sgx/certification/", 19) != 0 &&
	    strncmp(path, "/tdx/certification/", 19) != 0)
		return PCCS_PARSE_NOT_FOUND;
	if (strncmp(path + 4, "/certification/v4/", 18) != 0) {
		/* PCS v3 reached its end of life: say so, as PCCS does. */
		snprintf(why, whylen, "only the Intel PCS API version 4 is served");
		return PCCS_PARSE_GONE;
	}
	tdx = strncmp(path, "/tdx/", 5) == 0;
	if ((p = path_named(path + PCCS_V4_PREFIX_LEN, 0)) == NULL ||
	    (tdx && !p->tdx))
		return PCCS_PARSE_NOT_FOUND;
	set_what(r, p->what);
	r->tdx = tdx;
	snprintf(r->variant, sizeof(r->variant), "%s", p->variant);
	return parse_params(p, query, r, why, whylen);
}

enum pccs_what
pccs_what_of(const char *canon)
{
	const struct pccs_path	*p;

	if (strncmp(canon, "/sgx/certification/v4/", PCCS_V4_PREFIX_LEN) != 0 &&
	    strncmp(canon, "/tdx/certification/v4/", PCCS_V4_PREFIX_LEN) != 0)
		return PCCS_WHAT_MAX;
	p = path_named(canon + PCCS_V4_PREFIX_LEN, 1);
	return p != NULL ? p->what : PCCS_WHAT_MAX;
}

int
pccs_canon(const struct pccs_req *r, char *buf, size_t len)
{
	const char	*tee = r->tdx ? "tdx" : "sgx";
	char		 upd[48];
	int		 w;

	if (r->eval_num >= 0)
		snprintf(upd, sizeof(upd), "tcbEvaluationDataNumber=%ld", r->eval_num);
	else
		snprintf(upd, sizeof(upd), "update=%s", r->early ? "early" : "standard");
	switch (r->what) {
	case PCCS_TCB:
		w = snprintf(buf, len, "/%s/certification/v4/tcb?fmspc=%s&%s", tee,
		    r->fmspc, upd);
		break;
	case PCCS_QE:
	case PCCS_QVE:
	case PCCS_QAE:
		w = snprintf(buf, len, "/%s/certification/v4/%s?%s", tee,
		    pccs_what_str[r->what], upd);
		break;
	case PCCS_EVAL_NUMS:
	case PCCS_ROOT_CRL:
		w = snprintf(buf, len, "/%s/certification/v4/%s", tee,
		    pccs_what_str[r->what]);
		break;
	case PCCS_PCK_CRL:
		w = snprintf(buf, len, "/sgx/certification/v4/pckcrl?ca=%s&encoding=der",
		    r->ca);
		break;
	case PCCS_PCK_CERT:
		w = snprintf(buf, len, "/sgx/certification/v4/pckcert?encrypted_ppid=%s"
		    "&cpusvn=%s&pcesvn=%s&pceid=%s%s%s", r->ppid, r->cpusvn, r->pcesvn,
		    r->pceid, r->qeid[0] ? "&qeid=" : "", r->qeid);
		break;
	case PCCS_FMSPCS:
		w = snprintf(buf, len, "/sgx/certification/v4/fmspcs%s%s",
		    r->platform[0] ? "?platform=" : "", r->platform);
		break;
	default:
		w = -1;
	}
	if (w < 0 || (size_t)w >= len) {
		if (len > 0)
			buf[0] = '\0';	/* matches no path */
		return -1;
	}
	return 0;
}

int
pccs_parse_canon(const char *path, struct pccs_req *r, const char **why)
{
	const struct pccs_path	*p;
	char			 head[PCCS_PATH_MAX], canon[PCCS_PATH_MAX], msg[80];
	const char		*qm;
	size_t			 n;

	req_init(r);
	*why = "not a canonical Intel PCS v4 path";
	if ((n = strlen(path)) >= sizeof(head) ||
	    (strncmp(path, "/sgx/certification/v4/", PCCS_V4_PREFIX_LEN) != 0 &&
	    strncmp(path, "/tdx/certification/v4/", PCCS_V4_PREFIX_LEN) != 0))
		return -1;
	if ((p = path_named(path + PCCS_V4_PREFIX_LEN, 1)) == NULL ||
	    p->what == PCCS_WHAT_MAX) {
		*why = "not a kind of Intel collateral stapled stores";
		return -1;
	}
	qm = strchr(path, '?');
	n = qm != NULL ? (size_t)(qm - path) : n;
	memcpy(head, path, n);
	head[n] = '\0';
	if (pccs_parse(head, qm != NULL ? qm + 1 : NULL, r, msg, sizeof(msg)) !=
	    PCCS_PARSE_OK)
		return -1;
	/* Rebuilt and compared: any other spelling is not what the daemon stores. */
	if (pccs_canon(r, canon, sizeof(canon)) == -1 || strcmp(canon, path) != 0)
		return -1;
	*why = NULL;
	return 0;
}

int
pccs_parse_stored(const char *path, struct pccs_req *r, const char **why)
{
	int	rv = pccs_parse_canon(path, r, why);

	if (r->what == PCCS_FMSPCS) {
		*why = "fmspcs is not signed by Intel: relayed by stapled, never stored";
		return -1;
	}
	return rv;
}

int
pccs_parse_entry(const uint8_t *req, size_t reqlen, const uint8_t *key,
    size_t klen, struct pccs_req *r, char *why, size_t whylen)
{
	uint8_t		 k[CACHE_KEY_MAX_BYTES];
	char		 path[PCCS_PATH_MAX];
	const char	*perr;
	size_t		 n;

	if (entry_request_text(req, reqlen, path, sizeof(path)) == -1) {
		snprintf(why, whylen, "request: not an Intel PCS path");
		return -1;
	}
	if (pccs_parse_stored(path, r, &perr) == -1) {
		snprintf(why, whylen, "request: %s: %.160s", perr, path);
		return -1;
	}
	if (pccs_key(path, k, &n) == -1 || n != klen || memcmp(k, key, n) != 0) {
		snprintf(why, whylen, "key: the entry's key is not its "
		    "request's (swapped or edited entry)");
		return -1;
	}
	return 0;
}

int
pccs_key(const char *path, uint8_t key[CACHE_KEY_MAX_BYTES], size_t *klen)
{
	size_t	n = strlen(path);

	if (n <= PCCS_KEY_INLINE_MAX) {
		memcpy(key, path, n);
		*klen = n;
		return 0;
	}
	memcpy(key, "h:", 2);
	if (EVP_Digest(path, n, key + 2, NULL, util_sha256(), NULL) != 1)
		return -1;
	*klen = 2 + PCCS_SHA256_BYTES;
	return 0;
}

int
pccs_wants_api_key(const struct pccs_req *r)
{
	return r->what == PCCS_PCK_CERT;
}

/* ---- answers ------------------------------------------------------------------ */

/* The id a path asks for (NULL: none), and whether an absent id will do. */
static const char *
want_id(const struct pccs_req *r, const struct intel_result *v)
{
	switch (r->what) {
	case PCCS_TCB:
		/* TCB info v2 has no id: it is SGX's. */
		if (v->id[0] == '\0' && !r->tdx)
			return NULL;
		return r->tdx ? "TDX" : "SGX";
	case PCCS_EVAL_NUMS:
		return r->tdx ? "TDX" : "SGX";
	case PCCS_QE:
		return r->tdx ? "TD_QE" : "QE";
	case PCCS_QVE:
		return "QVE";
	case PCCS_QAE:
		return "QAE";
	default:
		return NULL;
	}
}

int
pccs_binds(const struct pccs_req *r, const struct intel_result *v, char *why,
    size_t whylen)
{
	const char	*want;

	if (r->what == PCCS_TCB && (strlen(v->fmspc) != PCCS_FMSPC_HEX ||
	    strcasecmp(v->fmspc, r->fmspc) != 0)) {
		snprintf(why, whylen, "TCB info for FMSPC %s filed under FMSPC %s",
		    v->fmspc[0] ? v->fmspc : "(none)", r->fmspc);
		return -1;
	}
	if ((want = want_id(r, v)) != NULL && strcmp(v->id, want) != 0) {
		snprintf(why, whylen, "id %s filed under a path for %s",
		    v->id[0] ? v->id : "(none)", want);
		return -1;
	}
	/* The CRL's issuer is the CA asked for (both CAs' CRLs verify to the root). */
	if ((r->what == PCCS_PCK_CRL && strcmp(v->ca, r->ca) != 0) ||
	    (r->what == PCCS_ROOT_CRL && strcmp(v->ca, "root") != 0)) {
		snprintf(why, whylen, "a %s CA CRL filed under %s",
		    v->ca[0] ? v->ca : "(unknown)", r->what == PCCS_ROOT_CRL ?
		    "rootcacrl" : r->ca);
		return -1;
	}
	/* Asked for evaluation number N: N, not the latest (a first-fill rollback). */
	if (r->eval_num >= 0 && v->tcb_evaluation_data_number != r->eval_num) {
		snprintf(why, whylen, "tcbEvaluationDataNumber %ld filed under %ld",
		    v->tcb_evaluation_data_number, r->eval_num);
		return -1;
	}
	return 0;
}

/* The issuer chain in a kept-headers block, as a new string (NULL: none). */
static char *
kept_chain(const struct pccs_req *r, const uint8_t *h, size_t hlen)
{
	char	*v;

	if (r->chain_header == NULL || h == NULL)
		return NULL;
	if ((v = entry_header_dup(h, hlen, r->chain_header)) == NULL &&
	    r->what == PCCS_TCB)
		v = entry_header_dup(h, hlen, PCCS_V3_TCB_CHAIN);
	return v;
}

int
pccs_older_than_stored(const struct pccs_req *r, const struct intel_result *cand,
    const struct entry_stored *stored)
{
	struct intel_result	 cur;
	char			*chain;
	int			 older = 0;

	if (stored == NULL || stored->body == NULL || r->kind == INTEL_KIND_MAX)
		return 0;
	chain = kept_chain(r, stored->headers, stored->headers_len);
	/* Parsed as of its own issue date: an expired entry still has a number. */
	if (intel_verify(r->kind, stored->body, stored->body_len, chain,
	    chain ? strlen(chain) : 0, (time_t)stored->meta.this_update + 1,
	    &cur) == 0)
		older = !intel_may_replace(&cur, cand);
	free(chain);
	return older;
}

/* admit with the issuer chain in hand. */
static enum entry_verdict
admit_chain(const struct pccs_req *r, const uint8_t *body, size_t len,
    const char *chain, const struct entry_stored *stored, time_t now,
    struct pccs_admitted *out)
{
	struct intel_result	*v = &out->r;
	char			 why[PCCS_WHY_MAX - 32];

	if (r->what == PCCS_FMSPCS)
		return ENTRY_PASS;	/* unsigned by Intel: relayed, never stored */
	if (r->kind == INTEL_KIND_MAX) {
		snprintf(out->why, sizeof(out->why), "internal: unknown path");
		return ENTRY_REFUSE;
	}
	if (intel_verify(r->kind, body, len, chain, chain ? strlen(chain) : 0, now,
	    v) == -1) {
		snprintf(out->why, sizeof(out->why), "%s: %s",
		    v->verdict < INTEL_VERDICT_MAX ? intel_verdict_str[v->verdict] :
		    "parse", v->detail);
		return ENTRY_REFUSE;
	}
	if (pccs_binds(r, v, why, sizeof(why)) == -1) {
		snprintf(out->why, sizeof(out->why), "answers another request: %s", why);
		return ENTRY_REFUSE;
	}
	if (pccs_older_than_stored(r, v, stored)) {
		out->stale = 1;
		snprintf(out->why, sizeof(out->why), "stale: tcbEvaluationDataNumber "
		    "%ld is older than the stored one", v->tcb_evaluation_data_number);
		return ENTRY_REFUSE;
	}
	out->meta.kind = CACHE_KIND_PCCS;
	out->meta.this_update = v->this_update;
	out->meta.next_update = v->next_update;
	out->meta.produced_at = v->this_update;
	out->meta.status = v->tcb_evaluation_data_number > 0 &&
	    v->tcb_evaluation_data_number <= UINT8_MAX ?
	    (uint8_t)v->tcb_evaluation_data_number : 0;
	/* A PCK certificate does not change for its TCB: kept until notAfter. */
	if (r->what == PCCS_PCK_CERT)
		out->meta.flags |= CACHE_F_NO_REFRESH;
	return ENTRY_STORE;
}

enum entry_verdict
pccs_admit(const struct pccs_req *r, const struct entry_answer *a,
    const struct entry_stored *stored, time_t now, struct pccs_admitted *out)
{
	const char	*chain = NULL;

	memset(out, 0, sizeof(*out));
	out->r.verdict = INTEL_ERR_PARSE;
	if (r->chain_header != NULL &&
	    (chain = entry_answer_header(a, r->chain_header)) == NULL &&
	    r->what == PCCS_TCB)
		chain = entry_answer_header(a, PCCS_V3_TCB_CHAIN);
	return admit_chain(r, a->body, a->body_len, chain, stored, now, out);
}

enum entry_verdict
pccs_admit_kept(const struct pccs_req *r, const uint8_t *body, size_t len,
    const uint8_t *headers, size_t headers_len, const struct entry_stored *stored,
    time_t now, struct pccs_admitted *out)
{
	enum entry_verdict	 v;
	char			*chain;

	memset(out, 0, sizeof(*out));
	out->r.verdict = INTEL_ERR_PARSE;
	chain = kept_chain(r, headers, headers_len);
	v = admit_chain(r, body, len, chain, stored, now, out);
	free(chain);
	return v;
}

/* The PCCS kind's request_key: pccs_key of the path. */
static int
pccs_request_key(const uint8_t *req, size_t len,
    uint8_t key[CACHE_KEY_MAX_BYTES], size_t *klen)
{
	char	*path;
	int	 rv;

	if (len == 0 || memchr(req, '\0', len) != NULL ||
	    (path = strndup((const char *)req, len)) == NULL)
		return -1;
	rv = pccs_key(path, key, klen);
	free(path);
	return rv;
}

/*
 * The PCCS kind's admit: pccs_admit for an upstream's answer (an answer
 * older than `stored` refused), pccs_admit_kept for one read back with
 * its kept headers (a stored entry with a newer answer sets
 * keep_stored: that is no failure). The typed request is q->typed's, or
 * parsed from the record's request and key.
 */
static enum entry_verdict
pccs_kind_admit(const struct entry_rules *r, const struct entry_query *q,
    const struct entry_answer *a, const struct entry_stored *stored,
    time_t now, struct entry_judgement *out)
{
	struct pccs_req		*pr = &out->pccs.req;
	struct pccs_admitted	*ad = &out->pccs.ad;

	(void)r;
	if (q->typed != NULL)
		*pr = *(const struct pccs_req *)q->typed;
	else if (pccs_parse_entry(q->request, q->request_len, q->key, q->klen,
	    pr, out->reason, sizeof(out->reason)) == -1)
		return out->verdict = ENTRY_REFUSE;
	if (q->read_back) {
		out->verdict = pccs_admit_kept(pr, a->body, a->body_len,
		    a->kept, a->kept_len, NULL, now, ad);
		out->keep_stored = out->verdict == ENTRY_STORE &&
		    pccs_older_than_stored(pr, &ad->r, stored);
	} else
		out->verdict = pccs_admit(pr, a, stored, now, ad);
	if (out->verdict == ENTRY_STORE)
		out->meta = ad->meta;
	else if (out->verdict == ENTRY_REFUSE)
		entry_judged(out, ENTRY_REFUSE, "%s", ad->why);
	return out->verdict;
}

/* An RFC 3339 time into o under name; 0 (none) is left out. */
static void
pccs_put_time(json_t *o, const char *name, int64_t t)
{
	char	buf[32];

	if (t == 0)
		return;
	entry_time_str(buf, t);
	json_object_set_new(o, name, json_string(buf));
}

/* What Intel's answer says, once its signature checks (or it was admitted). */
static void
pccs_kind_describe(const struct entry_judgement *j, int ok, json_t *o)
{
	const struct pccs_req		*pr = &j->pccs.req;
	const struct intel_result	*ir = &j->pccs.ad.r;

	if ((ir->verdict != INTEL_OK && !ok) || pr->kind >= INTEL_KIND_MAX)
		return;
	json_object_set_new(o, "intel_kind",
	    json_string(intel_kind_str[pr->kind]));
	json_object_set_new(o, "tee", json_string(pr->tdx ? "tdx" : "sgx"));
	if (ir->id[0] != '\0')
		json_object_set_new(o, "id", json_string(ir->id));
	if (ir->fmspc[0] != '\0')
		json_object_set_new(o, "fmspc", json_string(ir->fmspc));
	if (ir->ca[0] != '\0')
		json_object_set_new(o, "ca", json_string(ir->ca));
	if (ir->tcb_evaluation_data_number >= 0)
		json_object_set_new(o, "tcb_evaluation_data_number",
		    json_integer(ir->tcb_evaluation_data_number));
	if (ir->crl_entries >= 0 && (pr->kind == INTEL_PCK_CRL ||
	    pr->kind == INTEL_ROOT_CA_CRL))
		json_object_set_new(o, "crl_entries",
		    json_integer(ir->crl_entries));
	pccs_put_time(o, "issued", ir->this_update);
	pccs_put_time(o, "next_update", ir->next_update);
}

_Static_assert(sizeof(struct pccs_req) <= KIND_TYPED_BYTES,
    "a PCCS request fits a call's typed request");
_Static_assert(PCCS_PATH_MAX <= KIND_CANON_BYTES,
    "a PCCS path fits a call's canonical path");

/* The call that GETs canon, a canonical path, keyed by pccs_key. */
static void
pccs_call(const char *canon, struct kind_call *out)
{
	/* Cannot fail for a path under PCCS_PATH_MAX; an empty key matches nothing. */
	if (pccs_key(canon, out->key, &out->klen) == -1)
		out->klen = 0;
	out->method = "GET";
	out->path = canon;
	out->content_type = NULL;
	out->accept = NULL;
	out->body = NULL;
	out->body_len = 0;
	out->keep = (const uint8_t *)canon;
	out->keep_len = strlen(canon);
	out->typed = 1;
}

/*
 * The PCCS kind's parse: pccs_parse (410 for what is not v4, 404 for
 * no such path, 400 with the reason), asked as its pccs_canon path.
 */
static int
pccs_kind_parse(const struct kind_ask *in, void *typed, char *canon,
    struct kind_call *out, int *status, char *why, size_t whylen)
{
	switch (pccs_parse(in->path, in->query, typed, why, whylen)) {
	case PCCS_PARSE_OK:
		break;
	case PCCS_PARSE_GONE:
		*status = 410;
		return -1;
	case PCCS_PARSE_NOT_FOUND:
		*status = 404;
		return -1;
	default:
		*status = 400;
		return -1;
	}
	if (pccs_canon(typed, canon, KIND_CANON_BYTES) == -1) {
		*status = 400;
		snprintf(why, whylen, "the request is too long");
		return -1;
	}
	pccs_call(canon, out);
	return 0;
}

/* The PCCS kind's restore: a canonical path (pccs_parse_canon), GET again. */
static int
pccs_restore(const uint8_t *req, size_t len, void *typed, char *canon,
    struct kind_call *out)
{
	const char	*why;

	if (len == 0 || len >= PCCS_PATH_MAX)
		return -1;
	memcpy(canon, req, len);
	canon[len] = '\0';
	if (pccs_parse_canon(canon, typed, &why) == -1)
		return -1;
	pccs_call(canon, out);
	return 0;
}

const struct kind kind_pccs = {
	.parse = pccs_kind_parse,
	.restore = pccs_restore,
	.admit = pccs_kind_admit,
	.describe = pccs_kind_describe,
	.request_key = pccs_request_key,
	.min_skew_s = INTEL_SKEW_S,
	.keep_headers = pccs_keep_headers,
	.base_suffixes = pccs_base_suffixes,
	.entry_bytes = PCCS_ENTRY_BYTES,
	.map_share_pct = PCCS_MAP_SHARE_PCT,
	.conf = {
		.upstream = PCCS_UPSTREAM,
		.keys = KIND_CONF_API_KEY,
	},
};
