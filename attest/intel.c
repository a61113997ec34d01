/* SPDX-License-Identifier: Apache-2.0 */
/* Verify Intel PCS/PCCS collateral against the pinned Intel SGX Root CA. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "attest/der.h"
#include "attest/intel.h"
#include "attest/util.h"
#include "attest/vendor_roots.h"

/*
 * Every entry point clears OpenSSL's error queue before returning, so
 * one bad response leaves nothing behind for the next call.
 */

const char *const intel_kind_str[INTEL_KIND_MAX] = {
	[INTEL_TCB_INFO] = "tcb_info",
	[INTEL_ENCLAVE_IDENTITY] = "enclave_identity",
	[INTEL_TCB_EVAL_NUMS] = "tcb_eval_nums",
	[INTEL_PCK_CRL] = "pck_crl",
	[INTEL_ROOT_CA_CRL] = "root_ca_crl",
	[INTEL_PCK_CERT] = "pck_cert",
};

const char *const intel_verdict_str[INTEL_VERDICT_MAX] = {
	[INTEL_OK] = "ok",
	[INTEL_ERR_PARSE] = "parse",
	[INTEL_ERR_ISSUER_CHAIN] = "issuer_chain",
	[INTEL_ERR_CHAIN] = "chain",
	[INTEL_ERR_SIGNER] = "signer",
	[INTEL_ERR_SIGNATURE] = "signature",
	[INTEL_ERR_FUTURE] = "future",
	[INTEL_ERR_EXPIRED] = "expired",
};

const char *const intel_crl_form_str[INTEL_CRL_FORM_MAX] = {
	[INTEL_CRL_NONE] = "none",
	[INTEL_CRL_DER] = "der",
	[INTEL_CRL_PEM] = "pem",
	[INTEL_CRL_HEX] = "hex",
};

/* The member each signed JSON kind carries (PCS v4 API). */
static const char *const json_member[] = {
	[INTEL_TCB_INFO] = "tcbInfo",
	[INTEL_ENCLAVE_IDENTITY] = "enclaveIdentity",
	[INTEL_TCB_EVAL_NUMS] = "tcbEvaluationDataNumbers",
};

#define CN_TCB_SIGNING	"Intel SGX TCB Signing"
#define CN_PROCESSOR	"Intel SGX PCK Processor CA"
#define CN_PLATFORM	"Intel SGX PCK Platform CA"
#define SIG_HEX_LEN	128	/* r || s, 32 bytes each, as hex */

static void
set_detail(struct intel_result *out, const char *what)
{
	snprintf(out->detail, sizeof(out->detail), "%s", what);
}

static int
fail(struct intel_result *out, enum intel_verdict v, const char *what)
{
	out->verdict = v;
	set_detail(out, what);
	return -1;
}

static int
is_ws(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* ---- a JSON scanner that reports byte spans ----------------------------- */

/*
 * Only as much JSON as PCS bodies need: it validates structure, finds
 * members of one object by their raw key bytes and reports where each
 * value starts and ends in the original text. Keys with escapes never
 * match a name we look for, which is safe: we then find nothing.
 */
struct span {
	const uint8_t	*p;
	size_t		 len;
};

struct jscan {
	const uint8_t	*p;
	const uint8_t	*end;
};

static void
j_ws(struct jscan *j)
{
	while (j->p < j->end && is_ws(*j->p))
		j->p++;
}

/* A string at j->p; *s is its content between the quotes, unescaped not. */
static int
j_string(struct jscan *j, struct span *s)
{
	const uint8_t	*start;
	int		 i;

	if (j->p >= j->end || *j->p != '"')
		return -1;
	start = ++j->p;
	while (j->p < j->end && *j->p != '"') {
		if (*j->p < 0x20)
			return -1;
		if (*j->p == '\\') {
			if (++j->p >= j->end)
				return -1;
			if (*j->p == 'u') {
				for (i = 0; i < 4; i++)
					if (++j->p >= j->end || util_hexval(*j->p) < 0)
						return -1;
			} else if (strchr("\"\\/bfnrt", *j->p) == NULL ||
			    *j->p == '\0')
				return -1;
		}
		j->p++;
	}
	if (j->p >= j->end)
		return -1;
	s->p = start;
	s->len = (size_t)(j->p - start);
	j->p++;
	return 0;
}

static int
j_number(struct jscan *j)
{
	const uint8_t	*start;

	if (j->p < j->end && *j->p == '-')
		j->p++;
	start = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	if (j->p == start)
		return -1;
	if (j->p < j->end && *j->p == '.') {
		start = ++j->p;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
		if (j->p == start)
			return -1;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		start = j->p;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
		if (j->p == start)
			return -1;
	}
	return 0;
}

static int
j_word(struct jscan *j, const char *w)
{
	size_t	 n = strlen(w);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
		return -1;
	j->p += n;
	return 0;
}

/* Skip one value; *v is its exact span. */
static int
j_value(struct jscan *j, int depth, struct span *v)
{
	struct span	 s;
	const uint8_t	*start;
	int		 first;

	j_ws(j);
	if (j->p >= j->end || depth > INTEL_MAX_JSON_DEPTH)
		return -1;
	start = j->p;
	switch (*j->p) {
	case '{':
	case '[':
		first = 1;
		if (*j->p++ == '{') {
			for (;;) {
				j_ws(j);
				if (first && j->p < j->end && *j->p == '}')
					break;
				if (j_string(j, &s) == -1)
					return -1;
				j_ws(j);
				if (j->p >= j->end || *j->p++ != ':')
					return -1;
				if (j_value(j, depth + 1, &s) == -1)
					return -1;
				j_ws(j);
				if (j->p < j->end && *j->p == ',') {
					j->p++;
					first = 0;
					continue;
				}
				if (j->p < j->end && *j->p == '}')
					break;
				return -1;
			}
		} else {
			for (;;) {
				j_ws(j);
				if (first && j->p < j->end && *j->p == ']')
					break;
				if (j_value(j, depth + 1, &s) == -1)
					return -1;
				j_ws(j);
				if (j->p < j->end && *j->p == ',') {
					j->p++;
					first = 0;
					continue;
				}
				if (j->p < j->end && *j->p == ']')
					break;
				return -1;
			}
		}
		j->p++;
		break;
	case '"':
		if (j_string(j, &s) == -1)
			return -1;
		break;
	case 't':
		if (j_word(j, "true") == -1)
			return -1;
		break;
	case 'f':
		if (j_word(j, "false") == -1)
			return -1;
		break;
	case 'n':
		if (j_word(j, "null") == -1)
			return -1;
		break;
	default:
		if (j_number(j) == -1)
			return -1;
		break;
	}
	v->p = start;
	v->len = (size_t)(j->p - start);
	return 0;
}

/* A member of one object, by raw key. */
struct jmember {
	const char	*key;
	struct span	 val;
	int		 seen;
};

/*
 * Walk the object `obj` (a span that j_value accepted) and record the
 * members named in m[]. A name seen twice is an error (two parsers could
 * disagree on which one counts); unknown names fail only when strict.
 */
static int
j_members(struct span obj, struct jmember *m, size_t n, int strict,
    const char **why)
{
	struct jscan	 j = { obj.p, obj.p + obj.len };
	struct span	 k, v;
	size_t		 i;

	*why = "not a JSON object";
	if (j.p >= j.end || *j.p != '{')
		return -1;
	j.p++;
	j_ws(&j);
	if (j.p < j.end && *j.p == '}')
		return 0;
	for (;;) {
		j_ws(&j);
		if (j_string(&j, &k) == -1)
			return -1;
		j_ws(&j);
		if (j.p >= j.end || *j.p++ != ':')
			return -1;
		if (j_value(&j, 1, &v) == -1)
			return -1;
		for (i = 0; i < n; i++)
			if (strlen(m[i].key) == k.len &&
			    memcmp(m[i].key, k.p, k.len) == 0)
				break;
		if (i < n) {
			if (m[i].seen) {
				*why = "duplicate member";
				return -1;
			}
			m[i].seen = 1;
			m[i].val = v;
		} else if (strict) {
			*why = "unexpected member";
			return -1;
		}
		j_ws(&j);
		if (j.p < j.end && *j.p == ',') {
			j.p++;
			continue;
		}
		if (j.p < j.end && *j.p == '}')
			return 0;
		return -1;
	}
}

/* A JSON string value without escapes into buf (NUL-terminated). */
static int
j_plain_string(struct span v, char *buf, size_t buflen)
{
	if (v.len < 2 || v.p[0] != '"' || v.p[v.len - 1] != '"' ||
	    v.len - 2 >= buflen || memchr(v.p, '\\', v.len) != NULL)
		return -1;
	memcpy(buf, v.p + 1, v.len - 2);
	buf[v.len - 2] = '\0';
	return 0;
}

/* A non-negative JSON integer up to 999999999. */
static int
j_uint(struct span v, long *out)
{
	size_t	 i;
	long	 n = 0;

	if (v.len == 0 || v.len > 9)
		return -1;
	for (i = 0; i < v.len; i++) {
		if (v.p[i] < '0' || v.p[i] > '9')
			return -1;
		n = n * 10 + (v.p[i] - '0');
	}
	*out = n;
	return 0;
}

/* ---- time -------------------------------------------------------------- */

static int
digits(const char *s, int n, int *out)
{
	int	 i, v = 0;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/*
 * ISO 8601 as PCS writes it, "2025-05-27T19:31:07Z"; fractional seconds
 * are accepted and dropped. UTC only.
 */
static int
iso8601(const char *s, time_t *out)
{
	static const int	 mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31,
	    30, 31, 30, 31 };
	int			 y, mo, d, h, mi, se;
	size_t			 n = strlen(s), i = 19;

	if (n < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
	    s[13] != ':' || s[16] != ':' ||
	    digits(s, 4, &y) == -1 || digits(s + 5, 2, &mo) == -1 ||
	    digits(s + 8, 2, &d) == -1 || digits(s + 11, 2, &h) == -1 ||
	    digits(s + 14, 2, &mi) == -1 || digits(s + 17, 2, &se) == -1)
		return -1;
	if (s[i] == '.') {
		for (i++; s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == 20)
			return -1;
	}
	if (s[i] != 'Z' || s[i + 1] != '\0')
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
	    mi > 59 || se > 60)
		return -1;
	*out = (time_t)(util_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	    h * 3600 + mi * 60 + se);
	return 0;
}

static int
check_window(struct intel_result *out, time_t now)
{
	if (out->this_update > now + INTEL_SKEW_S) {
		out->verdict = INTEL_ERR_FUTURE;
		snprintf(out->detail, sizeof(out->detail),
		    "%s %lld is %lld s ahead of now", out->kind <= INTEL_TCB_EVAL_NUMS ?
		    "issueDate" : "thisUpdate", (long long)out->this_update,
		    (long long)(out->this_update - now));
		return -1;
	}
	if (out->next_update <= now) {
		out->verdict = INTEL_ERR_EXPIRED;
		snprintf(out->detail, sizeof(out->detail),
		    "nextUpdate %lld passed %lld s ago",
		    (long long)out->next_update,
		    (long long)(now - out->next_update));
		return -1;
	}
	return 0;
}

/* ---- chains -------------------------------------------------------------- */

/*
 * Percent-decode an issuer-chain header (RFC 3986 2.1; '+' stays '+', as
 * in base64) and parse its certificates, signer first.
 */
static STACK_OF(X509) *
chain_parse(const char *hdr, size_t len, struct intel_result *out)
{
	STACK_OF(X509)	*sk = NULL;
	uint8_t		*buf;
	const char	*why;
	size_t		 i, n = 0;
	int		 hi, lo;

	if (hdr == NULL || len == 0) {
		fail(out, INTEL_ERR_ISSUER_CHAIN, "issuer chain missing");
		return NULL;
	}
	if (len > INTEL_MAX_CHAIN_BYTES) {
		fail(out, INTEL_ERR_ISSUER_CHAIN, "issuer chain too long");
		return NULL;
	}
	if ((buf = malloc(len)) == NULL) {
		fail(out, INTEL_ERR_ISSUER_CHAIN, "out of memory");
		return NULL;
	}
	for (i = 0; i < len; i++) {
		if (hdr[i] != '%') {
			buf[n++] = (uint8_t)hdr[i];
			continue;
		}
		if (i + 2 >= len || (hi = util_hexval((uint8_t)hdr[i + 1])) < 0 ||
		    (lo = util_hexval((uint8_t)hdr[i + 2])) < 0) {
			fail(out, INTEL_ERR_ISSUER_CHAIN,
			    "issuer chain: bad percent-encoding");
			goto out;
		}
		buf[n++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	if ((sk = vendor_pem_certs(buf, n, INTEL_MAX_CHAIN_CERTS, &why)) ==
	    NULL)
		snprintf(out->detail, sizeof(out->detail), "issuer chain: %s",
		    why);
 out:
	if (sk == NULL)
		out->verdict = INTEL_ERR_ISSUER_CHAIN;
	free(buf);
	return sk;
}

/*
 * Verify `leaf` up to the pinned root at `now`, with `untrusted` (the
 * header's certificates) only to build the path. The root is the only
 * trust anchor.
 */
static int
chain_verify(X509 *leaf, STACK_OF(X509) *untrusted, int offset, time_t now,
    struct intel_result *out)
{
	X509_STORE	*store = NULL;
	X509_STORE_CTX	*ctx = NULL;
	STACK_OF(X509)	*path;
	X509		*root = NULL;
	int		 i, rv = -1;

	out->verdict = INTEL_ERR_CHAIN;
	if ((root = vendor_root_x509(&intel_sgx_root_ca)) == NULL ||
	    (store = X509_STORE_new()) == NULL ||
	    X509_STORE_add_cert(store, root) != 1 ||
	    (ctx = X509_STORE_CTX_new()) == NULL ||
	    X509_STORE_CTX_init(ctx, store, leaf, untrusted) != 1) {
		set_detail(out, "out of memory");
		goto out;
	}
	X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), now);
	if (X509_verify_cert(ctx) != 1) {
		snprintf(out->detail, sizeof(out->detail),
		    "issuer chain: %s at depth %d",
		    X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)),
		    X509_STORE_CTX_get_error_depth(ctx));
		goto out;
	}
	/*
	 * The header is served to clients as received, so it must be the
	 * whole path and nothing else: `offset` certificates (the PCK leaf,
	 * sent as the body) then exactly the header, ending in the root.
	 */
	path = X509_STORE_CTX_get0_chain(ctx);
	if (path == NULL || sk_X509_num(untrusted) + offset !=
	    sk_X509_num(path)) {
		set_detail(out, "issuer chain is not exactly the path to the "
		    "pinned Intel SGX Root CA");
		goto out;
	}
	for (i = 0; i < sk_X509_num(untrusted); i++)
		if (X509_cmp(sk_X509_value(untrusted, i),
		    sk_X509_value(path, i + offset)) != 0) {
			set_detail(out, "issuer chain is not exactly the path "
			    "to the pinned Intel SGX Root CA");
			goto out;
		}
	rv = 0;
 out:
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	X509_free(root);
	return rv;
}

/* Does the subject's (or issuer's) CN equal `cn`? */
static int
name_cn_is(const X509_NAME *name, const char *cn)
{
	char	 buf[128];
	int	 n;

	n = X509_NAME_get_text_by_NID((X509_NAME *)name, NID_commonName, buf,
	    sizeof(buf));
	return n > 0 && (size_t)n == strlen(cn) && strcmp(buf, cn) == 0;
}

/* "processor", "platform" or "root" for a PCK CA / root name, else NULL. */
static const char *
ca_name(const X509_NAME *name)
{
	if (name_cn_is(name, CN_PROCESSOR))
		return "processor";
	if (name_cn_is(name, CN_PLATFORM))
		return "platform";
	if (name_cn_is(name, "Intel SGX Root CA"))
		return "root";
	return NULL;
}

/* ---- signed JSON ----------------------------------------------------------- */

/* The hex r || s of PCS as a DER ECDSA-Sig-Value (SEC 1 C.5). */
static uint8_t *
sig_to_der(struct span hex, size_t *outlen)
{
	ECDSA_SIG	*sig = NULL;
	BIGNUM		*r = NULL, *s = NULL;
	uint8_t		 raw[SIG_HEX_LEN / 2], *der = NULL, *p;
	size_t		 i;
	int		 n, hi, lo;

	if (hex.len != SIG_HEX_LEN)
		return NULL;
	for (i = 0; i < sizeof(raw); i++) {
		if ((hi = util_hexval(hex.p[2 * i])) < 0 ||
		    (lo = util_hexval(hex.p[2 * i + 1])) < 0)
			return NULL;
		raw[i] = (uint8_t)(hi << 4 | lo);
	}
	if ((sig = ECDSA_SIG_new()) == NULL ||
	    (r = BN_bin2bn(raw, 32, NULL)) == NULL ||
	    (s = BN_bin2bn(raw + 32, 32, NULL)) == NULL ||
	    ECDSA_SIG_set0(sig, r, s) != 1)
		goto out;
	r = s = NULL;
	if ((n = i2d_ECDSA_SIG(sig, NULL)) <= 0 ||
	    (der = malloc((size_t)n)) == NULL)
		goto out;
	p = der;
	if (i2d_ECDSA_SIG(sig, &p) != n) {
		free(der);
		der = NULL;
		goto out;
	}
	*outlen = (size_t)n;
 out:
	BN_free(r);
	BN_free(s);
	ECDSA_SIG_free(sig);
	return der;
}

static int
is_p256(EVP_PKEY *pk)
{
	char	 group[32];
	size_t	 glen;

	if (pk == NULL || EVP_PKEY_get_base_id(pk) != EVP_PKEY_EC)
		return 0;
	if (EVP_PKEY_get_utf8_string_param(pk, "group", group, sizeof(group),
	    &glen) != 1)
		return 0;
	return strcmp(group, "prime256v1") == 0 ||
	    strcmp(group, "P-256") == 0;
}

/* The fields of the signed object that freshness and caching need. */
static int
json_fields(enum intel_kind kind, struct span obj, struct intel_result *out)
{
	struct jmember	 m[] = {
		{ "id", { NULL, 0 }, 0 },
		{ "version", { NULL, 0 }, 0 },
		{ "issueDate", { NULL, 0 }, 0 },
		{ "nextUpdate", { NULL, 0 }, 0 },
		{ "tcbEvaluationDataNumber", { NULL, 0 }, 0 },
		{ "fmspc", { NULL, 0 }, 0 },
		{ "tcbEvalNumbers", { NULL, 0 }, 0 },
	};
	struct jmember	 e[] = { { "tcbEvaluationDataNumber", { NULL, 0 }, 0 } };
	struct jscan	 j;
	struct span	 v;
	char		 buf[40];
	const char	*why;
	long		 n;

	if (j_members(obj, m, sizeof(m) / sizeof(m[0]), 0, &why) == -1)
		return fail(out, INTEL_ERR_PARSE, why);
	if (m[0].seen && j_plain_string(m[0].val, out->id, sizeof(out->id)) ==
	    -1)
		return fail(out, INTEL_ERR_PARSE, "bad id");
	if (m[1].seen) {
		if (j_uint(m[1].val, &n) == -1 || n > INT_MAX)
			return fail(out, INTEL_ERR_PARSE, "bad version");
		out->version = (int)n;
	}
	if (!m[2].seen || j_plain_string(m[2].val, buf, sizeof(buf)) == -1 ||
	    iso8601(buf, &out->this_update) == -1)
		return fail(out, INTEL_ERR_PARSE, "missing or bad issueDate");
	if (!m[3].seen || j_plain_string(m[3].val, buf, sizeof(buf)) == -1 ||
	    iso8601(buf, &out->next_update) == -1)
		return fail(out, INTEL_ERR_PARSE, "missing or bad nextUpdate");
	if (m[4].seen && j_uint(m[4].val, &out->tcb_evaluation_data_number) ==
	    -1)
		return fail(out, INTEL_ERR_PARSE,
		    "bad tcbEvaluationDataNumber");
	if (kind == INTEL_TCB_INFO && m[5].seen &&
	    j_plain_string(m[5].val, out->fmspc, sizeof(out->fmspc)) == -1)
		return fail(out, INTEL_ERR_PARSE, "bad fmspc");
	if (kind != INTEL_TCB_EVAL_NUMS)
		return 0;

	/* The highest number listed is the one this body vouches for. */
	if (!m[6].seen || m[6].val.p[0] != '[')
		return fail(out, INTEL_ERR_PARSE, "missing tcbEvalNumbers");
	j.p = m[6].val.p + 1;
	j.end = m[6].val.p + m[6].val.len;
	for (;;) {
		j_ws(&j);
		if (j.p >= j.end || *j.p == ']')
			break;
		if (j_value(&j, 1, &v) == -1)
			return fail(out, INTEL_ERR_PARSE, "bad tcbEvalNumbers");
		e[0].seen = 0;
		if (j_members(v, e, 1, 0, &why) == -1 || !e[0].seen ||
		    j_uint(e[0].val, &n) == -1)
			return fail(out, INTEL_ERR_PARSE,
			    "bad tcbEvalNumbers entry");
		if (n > out->tcb_evaluation_data_number)
			out->tcb_evaluation_data_number = n;
		j_ws(&j);
		if (j.p < j.end && *j.p == ',')
			j.p++;
	}
	return 0;
}

static int
verify_json(enum intel_kind kind, const uint8_t *body, size_t len,
    const char *hdr, size_t hdr_len, time_t now, struct intel_result *out)
{
	struct jmember	 top[] = {
		{ json_member[kind], { NULL, 0 }, 0 },
		{ "signature", { NULL, 0 }, 0 },
	};
	struct jscan	 j = { body, body + len };
	struct span	 whole, sighex;
	STACK_OF(X509)	*chain = NULL;
	EVP_MD_CTX	*md = NULL;
	X509		*signer;
	uint8_t		*sig = NULL;
	size_t		 siglen = 0;
	const char	*why;
	char		 ebuf[64];
	int		 rv = -1;

	if (j_value(&j, 0, &whole) == -1 || (j_ws(&j), j.p != j.end) ||
	    whole.p[0] != '{') {
		fail(out, INTEL_ERR_PARSE, "body is not one JSON object");
		goto out;
	}
	if (j_members(whole, top, 2, 1, &why) == -1) {
		snprintf(ebuf, sizeof(ebuf), "%s", why);
		snprintf(out->detail, sizeof(out->detail),
		    "body: %s (want \"%s\" and \"signature\")", ebuf,
		    json_member[kind]);
		out->verdict = INTEL_ERR_PARSE;
		goto out;
	}
	if (!top[0].seen || top[0].val.p[0] != '{') {
		snprintf(out->detail, sizeof(out->detail),
		    "body has no \"%s\" object", json_member[kind]);
		out->verdict = INTEL_ERR_PARSE;
		goto out;
	}
	if (!top[1].seen || top[1].val.p[0] != '"') {
		fail(out, INTEL_ERR_PARSE, "body has no \"signature\" string");
		goto out;
	}
	sighex.p = top[1].val.p + 1;
	sighex.len = top[1].val.len - 2;
	if (json_fields(kind, top[0].val, out) == -1)
		goto out;
	if ((sig = sig_to_der(sighex, &siglen)) == NULL) {
		fail(out, INTEL_ERR_SIGNATURE,
		    "signature is not 64 bytes of hex r || s");
		goto out;
	}

	if ((chain = chain_parse(hdr, hdr_len, out)) == NULL)
		goto out;
	signer = sk_X509_value(chain, 0);
	if (chain_verify(signer, chain, 0, now, out) == -1)
		goto out;
	if (!name_cn_is(X509_get_subject_name(signer), CN_TCB_SIGNING) ||
	    !is_p256(X509_get0_pubkey(signer))) {
		fail(out, INTEL_ERR_SIGNER,
		    "chain's first certificate is not an "
		    CN_TCB_SIGNING " P-256 key");
		goto out;
	}

	/* PCS: ECDSA P-256 SHA-256 over the raw bytes of the member's value. */
	if ((md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL,
	    X509_get0_pubkey(signer)) != 1) {
		fail(out, INTEL_ERR_SIGNATURE, "out of memory");
		goto out;
	}
	if (EVP_DigestVerify(md, sig, siglen, top[0].val.p, top[0].val.len) !=
	    1) {
		fail(out, INTEL_ERR_SIGNATURE, "signature does not verify");
		goto out;
	}
	if (check_window(out, now) == -1)
		goto out;
	out->verdict = INTEL_OK;
	snprintf(out->detail, sizeof(out->detail), "%s %s v%d eval %ld",
	    intel_kind_str[kind], out->id, out->version,
	    out->tcb_evaluation_data_number);
	rv = 0;
 out:
	EVP_MD_CTX_free(md);
	free(sig);
	sk_X509_pop_free(chain, X509_free);
	return rv;
}

/* ---- CRLs -------------------------------------------------------------- */

/* One PEM X509 CRL block p[0, n), nothing but whitespace after it: its bytes. */
static uint8_t *
crl_pem_der(const uint8_t *p, size_t n, size_t *outlen, const char **why)
{
	BIO		*bio;
	uint8_t		*der = NULL, *copy = NULL;
	char		*rest;
	long		 i, rl;

	*why = "out of memory";
	if (n > INT_MAX || (bio = BIO_new_mem_buf(p, (int)n)) == NULL)
		return NULL;
	if (der_pem_read(bio, DER_PEM_CRL, &der, outlen, why) != 0) {
		if (*why == NULL)
			*why = "no PEM CRL block";
		goto out;
	}
	rl = BIO_get_mem_data(bio, &rest);
	for (i = 0; i < rl; i++)
		if (!is_ws((uint8_t)rest[i])) {
			*why = "more than one PEM CRL block";
			goto out;
		}
	*why = "out of memory";
	if ((copy = malloc(*outlen)) != NULL)
		memcpy(copy, der, *outlen);
 out:
	OPENSSL_free(der);
	BIO_free(bio);
	return copy;
}

/*
 * The DER bytes of a CRL body in any of its forms (a new buffer, caller
 * frees): the body itself, the PEM block's content, or PCCS's hex
 * decoded. Not yet checked; NULL with *why set.
 */
static uint8_t *
crl_der(const uint8_t *body, size_t len, enum intel_crl_form *form,
    size_t *outlen, const char **why)
{
	static const char	 pem[] = "-----BEGIN X509 CRL-----";
	uint8_t			*der = NULL;
	const uint8_t		*p;
	size_t			 i, n, lead = 0, trail = len;
	int			 hi, lo;

	*form = INTEL_CRL_NONE;
	*why = "not a DER, PEM or hex X.509 CRL";
	while (lead < len && is_ws(body[lead]))
		lead++;
	while (trail > lead && is_ws(body[trail - 1]))
		trail--;
	if (lead == trail)
		return NULL;
	p = body + lead;
	n = trail - lead;
	if (lead == 0 && body[0] == 0x30) {
		*form = INTEL_CRL_DER;
		if ((der = malloc(len)) != NULL) {
			memcpy(der, body, len);
			*outlen = len;
		}
		return der;
	}
	if (n >= sizeof(pem) - 1 && memcmp(p, pem, sizeof(pem) - 1) == 0) {
		*form = INTEL_CRL_PEM;
		return crl_pem_der(p, n, outlen, why);
	}
	/* PCCS: the DER as hex text. */
	if (n % 2 != 0 || (der = malloc(n / 2)) == NULL)
		return NULL;
	for (i = 0; i < n / 2; i++) {
		if ((hi = util_hexval(p[2 * i])) < 0 ||
		    (lo = util_hexval(p[2 * i + 1])) < 0) {
			free(der);
			return NULL;
		}
		der[i] = (uint8_t)(hi << 4 | lo);
	}
	*form = INTEL_CRL_HEX;
	*outlen = n / 2;
	return der;
}

/* A CRL body in any form, its DER checked by der_crl_check before d2i. */
static X509_CRL *
crl_parse(const uint8_t *body, size_t len, enum intel_crl_form *form,
    const char **why)
{
	X509_CRL	*crl;
	uint8_t		*der;
	size_t		 n = 0;

	if ((der = crl_der(body, len, form, &n, why)) == NULL)
		return NULL;
	crl = der_x509_crl(der, n, why);
	free(der);
	return crl;
}

uint8_t *
intel_crl_to_der(const uint8_t *body, size_t len, size_t *outlen)
{
	X509_CRL		*crl;
	enum intel_crl_form	 form;
	uint8_t			*der;
	const char		*why;
	size_t			 n = 0;

	if (body == NULL || outlen == NULL || len > INTEL_MAX_BODY_BYTES)
		return NULL;
	/* The vendor's own bytes, never a re-encoding of the parsed CRL. */
	if ((der = crl_der(body, len, &form, &n, &why)) == NULL)
		return NULL;
	if ((crl = der_x509_crl(der, n, &why)) == NULL) {
		free(der);
		return NULL;
	}
	X509_CRL_free(crl);
	*outlen = n;
	return der;
}

static int
verify_crl(enum intel_kind kind, const uint8_t *body, size_t len,
    const char *hdr, size_t hdr_len, time_t now, struct intel_result *out)
{
	X509_CRL	*crl = NULL;
	STACK_OF(X509)	*chain = NULL;
	X509		*root = NULL, *signer;
	const char	*ca, *why;
	uint32_t	 ku;
	int		 rv = -1;

	if ((crl = crl_parse(body, len, &out->crl_form, &why)) == NULL) {
		out->verdict = INTEL_ERR_PARSE;
		if (out->crl_form == INTEL_CRL_NONE)
			set_detail(out, why);
		else
			snprintf(out->detail, sizeof(out->detail),
			    "%s CRL: %s", intel_crl_form_str[out->crl_form],
			    why);
		goto out;
	}
	if (util_asn1_time(X509_CRL_get0_lastUpdate(crl),
	    &out->this_update) == -1 ||
	    util_asn1_time(X509_CRL_get0_nextUpdate(crl),
	    &out->next_update) == -1) {
		fail(out, INTEL_ERR_PARSE, "CRL lacks thisUpdate or nextUpdate");
		goto out;
	}
	out->crl_entries = sk_X509_REVOKED_num(X509_CRL_get_REVOKED(crl));
	if (out->crl_entries < 0)
		out->crl_entries = 0;

	if (kind == INTEL_ROOT_CA_CRL) {
		if ((root = vendor_root_x509(&intel_sgx_root_ca)) == NULL) {
			fail(out, INTEL_ERR_CHAIN, "out of memory");
			goto out;
		}
		signer = root;
	} else {
		if ((chain = chain_parse(hdr, hdr_len, out)) == NULL)
			goto out;
		signer = sk_X509_value(chain, 0);
		if (chain_verify(signer, chain, 0, now, out) == -1)
			goto out;
		if ((ca = ca_name(X509_get_subject_name(signer))) == NULL ||
		    strcmp(ca, "root") == 0) {
			fail(out, INTEL_ERR_SIGNER,
			    "chain's first certificate is not a PCK CA");
			goto out;
		}
	}
	if ((ca = ca_name(X509_get_subject_name(signer))) != NULL)
		snprintf(out->ca, sizeof(out->ca), "%s", ca);
	if (X509_NAME_cmp(X509_CRL_get_issuer(crl),
	    X509_get_subject_name(signer)) != 0) {
		fail(out, INTEL_ERR_SIGNER, "CRL issuer is not the chain's signer");
		goto out;
	}
	ku = X509_get_key_usage(signer);
	if ((ku & KU_CRL_SIGN) == 0) {
		fail(out, INTEL_ERR_SIGNER, "signer lacks keyUsage cRLSign");
		goto out;
	}
	if (X509_CRL_verify(crl, X509_get0_pubkey(signer)) != 1) {
		fail(out, INTEL_ERR_SIGNATURE, "CRL signature does not verify");
		goto out;
	}
	if (check_window(out, now) == -1)
		goto out;
	out->verdict = INTEL_OK;
	snprintf(out->detail, sizeof(out->detail), "%s %s, %s, %ld revoked",
	    intel_kind_str[kind], out->ca, intel_crl_form_str[out->crl_form],
	    out->crl_entries);
	rv = 0;
 out:
	sk_X509_pop_free(chain, X509_free);
	X509_free(root);
	X509_CRL_free(crl);
	return rv;
}

/* ---- PCK certificates ---------------------------------------------------- */

static int
verify_pck(const uint8_t *body, size_t len, const char *hdr, size_t hdr_len,
    time_t now, struct intel_result *out)
{
	STACK_OF(X509)	*chain = NULL;
	X509		*leaf;
	const char	*why, *ca;
	int		 rv = -1;

	if ((leaf = vendor_cert_parse(body, len, &why)) == NULL) {
		snprintf(out->detail, sizeof(out->detail), "PCK certificate: %s",
		    why);
		out->verdict = INTEL_ERR_PARSE;
		goto out;
	}
	if (util_asn1_time(X509_get0_notBefore(leaf), &out->this_update) ==
	    -1 || util_asn1_time(X509_get0_notAfter(leaf),
	    &out->next_update) == -1) {
		fail(out, INTEL_ERR_PARSE, "PCK certificate: bad validity");
		goto out;
	}
	if ((chain = chain_parse(hdr, hdr_len, out)) == NULL)
		goto out;
	if (chain_verify(leaf, chain, 1, now, out) == -1)
		goto out;
	ca = ca_name(X509_get_issuer_name(leaf));
	if (ca == NULL || strcmp(ca, "root") == 0) {
		fail(out, INTEL_ERR_SIGNER, "PCK certificate not issued by a PCK CA");
		goto out;
	}
	snprintf(out->ca, sizeof(out->ca), "%s", ca);
	out->verdict = INTEL_OK;
	snprintf(out->detail, sizeof(out->detail), "pck_cert %s", ca);
	rv = 0;
 out:
	sk_X509_pop_free(chain, X509_free);
	X509_free(leaf);
	return rv;
}

int
intel_verify(enum intel_kind kind, const uint8_t *body, size_t len,
    const char *issuer_chain, size_t chain_len, time_t now,
    struct intel_result *out)
{
	int	 rv = -1;

	if (out == NULL)
		return -1;
	memset(out, 0, sizeof(*out));
	out->verdict = INTEL_ERR_PARSE;
	out->kind = kind;
	out->tcb_evaluation_data_number = -1;
	out->version = -1;
	out->crl_entries = -1;
	ERR_clear_error();
	if ((unsigned)kind >= INTEL_KIND_MAX || body == NULL || len == 0) {
		set_detail(out, "bad arguments");
		goto out;
	}
	if (len > INTEL_MAX_BODY_BYTES) {
		set_detail(out, "body too large");
		goto out;
	}
	switch (kind) {
	case INTEL_TCB_INFO:
	case INTEL_ENCLAVE_IDENTITY:
	case INTEL_TCB_EVAL_NUMS:
		rv = verify_json(kind, body, len, issuer_chain, chain_len, now,
		    out);
		break;
	case INTEL_PCK_CRL:
	case INTEL_ROOT_CA_CRL:
		rv = verify_crl(kind, body, len, issuer_chain, chain_len, now,
		    out);
		break;
	case INTEL_PCK_CERT:
		rv = verify_pck(body, len, issuer_chain, chain_len, now, out);
		break;
	default:
		break;
	}
 out:
	ERR_clear_error();
	return rv;
}

int
intel_may_replace(const struct intel_result *cur,
    const struct intel_result *cand)
{
	if (cur == NULL || cur->verdict != INTEL_OK)
		return 1;
	if (cand == NULL || cand->verdict != INTEL_OK)
		return 0;
	if (cand->tcb_evaluation_data_number <
	    cur->tcb_evaluation_data_number)
		return 0;
	if (cand->tcb_evaluation_data_number ==
	    cur->tcb_evaluation_data_number &&
	    cand->this_update < cur->this_update)
		return 0;
	return 1;
}
