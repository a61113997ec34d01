/* SPDX-License-Identifier: Apache-2.0 */
/* Verify AMD KDS collateral (ASK/ASVK chains, VCEK/VLEK, CRLs) against the pinned ARKs. */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "attest/amd.h"
#include "attest/der.h"
#include "attest/util.h"
#include "attest/vendor_roots.h"

/*
 * Every entry point clears OpenSSL's error queue before returning, so
 * one bad response leaves nothing behind for the next call.
 */

const char *const amd_product_str[AMD_PRODUCT_MAX] = {
	[AMD_MILAN] = "Milan",
	[AMD_GENOA] = "Genoa",
	[AMD_TURIN] = "Turin",
};

const char *const amd_signer_str[AMD_SIGNER_MAX] = {
	[AMD_VCEK] = "vcek",
	[AMD_VLEK] = "vlek",
};

const char *const amd_verdict_str[AMD_VERDICT_MAX] = {
	[AMD_OK] = "ok",
	[AMD_ERR_PARSE] = "parse",
	[AMD_ERR_PRODUCT] = "product",
	[AMD_ERR_ARK] = "ark",
	[AMD_ERR_SIGNER] = "signer",
	[AMD_ERR_ALGORITHM] = "algorithm",
	[AMD_ERR_SIGNATURE] = "signature",
	[AMD_ERR_FUTURE] = "future",
	[AMD_ERR_EXPIRED] = "expired",
	[AMD_ERR_MISMATCH] = "mismatch",
};

static const struct vendor_root *const pinned_ark[AMD_PRODUCT_MAX] = {
	[AMD_MILAN] = &amd_ark_milan,
	[AMD_GENOA] = &amd_ark_genoa,
	[AMD_TURIN] = &amd_ark_turin,
};

/* AMD's VCEK extensions, under 1.3.6.1.4.1.3704.1 (KDS spec, virtee/sev). */
#define OID_BL_SPL	"1.3.6.1.4.1.3704.1.3.1"
#define OID_TEE_SPL	"1.3.6.1.4.1.3704.1.3.2"
#define OID_SNP_SPL	"1.3.6.1.4.1.3704.1.3.3"
#define OID_UCODE_SPL	"1.3.6.1.4.1.3704.1.3.8"
#define OID_FMC_SPL	"1.3.6.1.4.1.3704.1.3.9"
#define OID_HWID	"1.3.6.1.4.1.3704.1.4"

#define PSS_SALT_BYTES	48	/* SHA-384 output length */

int
amd_product_parse(const char *name, size_t len, enum amd_product *out)
{
	int	 i;

	if (name == NULL || out == NULL)
		return -1;
	for (i = 0; i < AMD_PRODUCT_MAX; i++)
		if (strlen(amd_product_str[i]) == len &&
		    memcmp(amd_product_str[i], name, len) == 0) {
			*out = (enum amd_product)i;
			return 0;
		}
	return -1;
}

static int
fail(struct amd_result *out, enum amd_verdict v, const char *what)
{
	out->verdict = v;
	snprintf(out->detail, sizeof(out->detail), "%s", what);
	return -1;
}

static int
cn_is(const X509_NAME *name, const char *cn)
{
	char	 buf[64];
	int	 n;

	n = X509_NAME_get_text_by_NID((X509_NAME *)name, NID_commonName, buf,
	    sizeof(buf));
	return n > 0 && (size_t)n == strlen(cn) && strcmp(buf, cn) == 0;
}

/*
 * The product whose pinned ARK is `x` (DER-equal) or, with x NULL, has
 * subject `name`; or -1.
 */
static int
ark_product(X509 *x, const X509_NAME *name)
{
	X509	*ark;
	int	 i, eq;

	for (i = 0; i < AMD_PRODUCT_MAX; i++) {
		if ((ark = vendor_root_x509(pinned_ark[i])) == NULL)
			continue;
		eq = x != NULL ? X509_cmp(ark, x) == 0 :
		    X509_NAME_cmp(X509_get_subject_name(ark), name) == 0;
		X509_free(ark);
		if (eq)
			return i;
	}
	return -1;
}

/*
 * RSASSA-PSS with SHA-384, MGF1-SHA-384 and a 48-byte salt: what AMD
 * signs ARK, ASK, ASVK, VCEK and CRLs with (and what dstack requires).
 */
static int
is_pss_sha384(const X509_ALGOR *alg)
{
	const ASN1_OBJECT	*obj;
	const void		*pval;
	const ASN1_STRING	*seq;
	const uint8_t		*p;
	RSA_PSS_PARAMS		*pss = NULL;
	X509_ALGOR		*mgfmd = NULL;
	int64_t			 salt;
	int			 ptype, ok = 0;

	X509_ALGOR_get0(&obj, &ptype, &pval, alg);
	if (OBJ_obj2nid(obj) != NID_rsassaPss || ptype != V_ASN1_SEQUENCE)
		return 0;
	seq = pval;
	p = ASN1_STRING_get0_data(seq);
	if ((pss = d2i_RSA_PSS_PARAMS(NULL, &p, ASN1_STRING_length(seq))) ==
	    NULL)
		goto out;
	if (pss->hashAlgorithm == NULL ||
	    OBJ_obj2nid(pss->hashAlgorithm->algorithm) != NID_sha384)
		goto out;
	if (pss->maskGenAlgorithm == NULL ||
	    OBJ_obj2nid(pss->maskGenAlgorithm->algorithm) != NID_mgf1 ||
	    pss->maskGenAlgorithm->parameter == NULL ||
	    pss->maskGenAlgorithm->parameter->type != V_ASN1_SEQUENCE)
		goto out;
	seq = pss->maskGenAlgorithm->parameter->value.sequence;
	p = ASN1_STRING_get0_data(seq);
	if ((mgfmd = d2i_X509_ALGOR(NULL, &p, ASN1_STRING_length(seq))) ==
	    NULL || OBJ_obj2nid(mgfmd->algorithm) != NID_sha384)
		goto out;
	if (pss->saltLength == NULL ||
	    !ASN1_INTEGER_get_int64(&salt, pss->saltLength) ||
	    salt != PSS_SALT_BYTES)
		goto out;
	ok = 1;
 out:
	X509_ALGOR_free(mgfmd);
	RSA_PSS_PARAMS_free(pss);
	return ok;
}

/* Is `now` inside x's validity (notBefore with skew)? */
static int
check_validity(X509 *x, const char *what, time_t now, int leaf,
    struct amd_result *out)
{
	time_t	 nb, na;

	if (util_asn1_time(X509_get0_notBefore(x), &nb) == -1 ||
	    util_asn1_time(X509_get0_notAfter(x), &na) == -1) {
		out->verdict = AMD_ERR_PARSE;
		snprintf(out->detail, sizeof(out->detail), "%s: bad validity",
		    what);
		return -1;
	}
	if (leaf) {
		out->this_update = nb;
		out->not_after = na;
	}
	if (nb > now + AMD_SKEW_S) {
		out->verdict = AMD_ERR_FUTURE;
		snprintf(out->detail, sizeof(out->detail),
		    "%s: notBefore %lld is %lld s ahead of now", what,
		    (long long)nb, (long long)(nb - now));
		return -1;
	}
	if (na <= now) {
		out->verdict = AMD_ERR_EXPIRED;
		snprintf(out->detail, sizeof(out->detail),
		    "%s: notAfter %lld passed %lld s ago", what, (long long)na,
		    (long long)(now - na));
		return -1;
	}
	return 0;
}

/* `x` issued by `issuer`: names, algorithm and signature. */
static int
check_issued(X509 *x, X509 *issuer, const char *what, struct amd_result *out)
{
	const X509_ALGOR	*alg;

	if (X509_NAME_cmp(X509_get_issuer_name(x),
	    X509_get_subject_name(issuer)) != 0) {
		out->verdict = AMD_ERR_SIGNER;
		snprintf(out->detail, sizeof(out->detail),
		    "%s: issuer name is not its signer's subject", what);
		return -1;
	}
	X509_get0_signature(NULL, &alg, x);
	if (alg == NULL || !is_pss_sha384(alg)) {
		out->verdict = AMD_ERR_ALGORITHM;
		snprintf(out->detail, sizeof(out->detail),
		    "%s: not signed with RSASSA-PSS SHA-384", what);
		return -1;
	}
	if (X509_verify(x, X509_get0_pubkey(issuer)) != 1) {
		out->verdict = AMD_ERR_SIGNATURE;
		snprintf(out->detail, sizeof(out->detail),
		    "%s: signature does not verify", what);
		return -1;
	}
	return 0;
}

#define PEM_BEGIN_CERT	"-----BEGIN CERTIFICATE-----"
#define PEM_END_CERT	"-----END CERTIFICATE-----"

/*
 * The next line of pem[*at, len) into *line and *n, without its line end,
 * which must be `eol` (or, when *eol is NULL, sets it from this line).
 * Returns 1 when the line ends in a line end, 0 at the end of input
 * without one, -1 when its line end differs or is a lone CR.
 */
static int
next_line(const uint8_t *pem, size_t len, size_t *at, const char **eol,
    const uint8_t **line, size_t *n)
{
	const uint8_t	*nl;
	const char	*got;
	size_t		 end;

	*line = pem + *at;
	if ((nl = memchr(*line, '\n', len - *at)) == NULL) {
		*n = len - *at;
		*at = len;
		return memchr(*line, '\r', *n) == NULL ? 0 : -1;
	}
	end = (size_t)(nl - pem);
	got = end > *at && pem[end - 1] == '\r' ? "\r\n" : "\n";
	*n = end - *at - (got[0] == '\r');
	*at = end + 1;
	if (*eol == NULL)
		*eol = got;
	if (strcmp(*eol, got) != 0 || memchr(*line, '\r', *n) != NULL)
		return -1;
	return 1;
}

static int
line_is(const uint8_t *line, size_t n, const char *s)
{
	return n == strlen(s) && memcmp(line, s, n) == 0;
}

static int
line_base64(const uint8_t *line, size_t n)
{
	size_t	 i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		    "0123456789+/=", line[i]) == NULL || line[i] == '\0')
			return 0;
	return 1;
}

/*
 * A cert_chain's text is exactly what KDS serves: two CERTIFICATE blocks
 * (ASK or ASVK, then ARK), lines of base64 between their BEGIN and END
 * lines, one line end throughout, LF (Milan, Genoa) or CRLF (Turin), and
 * after the last END at most two line ends (the Turin VLEK chain ends with
 * an empty line). No text before, between or after: PEM decoding skips
 * it, strict clients may not, and it would be stored and served as sent.
 * Returns NULL when the layout is KDS's, else why not.
 */
static const char *
chain_layout(const uint8_t *pem, size_t len)
{
	const uint8_t	*line;
	const char	*eol = NULL;
	size_t		 at = 0, n, blank = 0;
	int		 blocks = 0, inside = 0, r = 1;

	while (at < len) {
		if ((r = next_line(pem, len, &at, &eol, &line, &n)) == -1)
			return "mixed or stray line ends";
		if (blocks == 2) {
			if (n != 0 || ++blank > 1 || r == 0)
				return "text after the ARK";
		} else if (!inside) {
			if (!line_is(line, n, PEM_BEGIN_CERT))
				return blocks == 0 ? "text before the ASK" :
				    "text between the certificates";
			inside = 1;
		} else if (line_is(line, n, PEM_END_CERT)) {
			inside = 0;
			blocks++;
		} else if (!line_base64(line, n))
			return "not base64 inside a certificate";
		if (r == 0 && blocks < 2)
			break;
	}
	return blocks == 2 ? NULL : "not two certificates";
}

/*
 * The cert_chain checks; on success *ask_out is the ASK/ASVK (caller
 * frees). `leaf` says whether the ASK is the object reported on.
 */
static int
chain_check(enum amd_product product, enum amd_signer signer,
    const uint8_t *pem, size_t len, time_t now, int leaf,
    struct amd_result *out, X509 **ask_out)
{
	STACK_OF(X509)	*sk = NULL;
	X509		*ark = NULL, *ask, *fetched;
	const char	*why;
	char		 cn[32];
	int		 other, rv = -1;

	if (pem == NULL || len == 0 || len > AMD_MAX_BODY_BYTES) {
		fail(out, AMD_ERR_PARSE, "cert_chain: empty or too large");
		goto out;
	}
	if ((why = chain_layout(pem, len)) != NULL ||
	    (sk = vendor_pem_certs(pem, len, 2, &why)) == NULL) {
		out->verdict = AMD_ERR_PARSE;
		snprintf(out->detail, sizeof(out->detail), "cert_chain: %s", why);
		goto out;
	}
	if (sk_X509_num(sk) != 2) {
		fail(out, AMD_ERR_PARSE, "cert_chain: not ASK then ARK");
		goto out;
	}
	ask = sk_X509_value(sk, 0);
	fetched = sk_X509_value(sk, 1);

	/* The fetched ARK is compared with the pinned one, never trusted. */
	if ((ark = vendor_root_x509(pinned_ark[product])) == NULL) {
		fail(out, AMD_ERR_ARK, "out of memory");
		goto out;
	}
	if (X509_cmp(ark, fetched) != 0) {
		if ((other = ark_product(fetched, NULL)) >= 0) {
			out->verdict = AMD_ERR_PRODUCT;
			snprintf(out->detail, sizeof(out->detail),
			    "cert_chain carries ARK-%s, not ARK-%s",
			    amd_product_str[other], amd_product_str[product]);
		} else
			fail(out, AMD_ERR_ARK,
			    "cert_chain's ARK is not the pinned ARK");
		goto out;
	}
	snprintf(cn, sizeof(cn), "%s%s", signer == AMD_VLEK ? "SEV-VLEK-" :
	    "SEV-", amd_product_str[product]);
	if (!cn_is(X509_get_subject_name(ask), cn)) {
		out->verdict = AMD_ERR_SIGNER;
		snprintf(out->detail, sizeof(out->detail),
		    "cert_chain: first certificate is not %s", cn);
		goto out;
	}
	if (check_issued(ask, ark, signer == AMD_VLEK ? "ASVK" : "ASK",
	    out) == -1)
		goto out;
	if (check_validity(ark, "ARK", now, 0, out) == -1 ||
	    check_validity(ask, signer == AMD_VLEK ? "ASVK" : "ASK", now, leaf,
	    out) == -1)
		goto out;
	if (ask_out != NULL) {
		if (!X509_up_ref(ask)) {
			fail(out, AMD_ERR_PARSE, "out of memory");
			goto out;
		}
		*ask_out = ask;
	}
	rv = 0;
 out:
	X509_free(ark);
	sk_X509_pop_free(sk, X509_free);
	return rv;
}

static void
result_init(struct amd_result *out)
{
	memset(out, 0, sizeof(*out));
	out->verdict = AMD_ERR_PARSE;
	out->crl_entries = -1;
	out->id.tcb.bl = out->id.tcb.tee = out->id.tcb.snp = -1;
	out->id.tcb.ucode = out->id.tcb.fmc = -1;
	ERR_clear_error();
}

/* result_init, then product and signer checked: -1 ("bad arguments") when out of range. */
static int
result_start(struct amd_result *out, enum amd_product product,
    enum amd_signer signer)
{
	result_init(out);
	if ((unsigned)product >= AMD_PRODUCT_MAX ||
	    (unsigned)signer >= AMD_SIGNER_MAX) {
		fail(out, AMD_ERR_PARSE, "bad arguments");
		return -1;
	}
	return 0;
}

int
amd_verify_cert_chain(enum amd_product product, enum amd_signer signer,
    const uint8_t *pem, size_t len, time_t now, struct amd_result *out)
{
	int	 rv = -1;

	if (out == NULL)
		return -1;
	if (result_start(out, product, signer) == -1)
		goto out;
	if (chain_check(product, signer, pem, len, now, 1, out, NULL) == -1)
		goto out;
	out->verdict = AMD_OK;
	snprintf(out->detail, sizeof(out->detail), "%s %s cert_chain",
	    amd_signer_str[signer], amd_product_str[product]);
	rv = 0;
 out:
	ERR_clear_error();
	return rv;
}

/* An SPL extension: extnValue holds a DER INTEGER 0..255. -1 absent, -2 bad. */
static int
ext_spl(X509 *x, const char *oid)
{
	ASN1_OBJECT		*obj;
	const ASN1_OCTET_STRING	*v;
	ASN1_INTEGER		*ai;
	const uint8_t		*p;
	X509_EXTENSION		*ext;
	long			 n;
	int			 idx, rv = -2;

	if ((obj = OBJ_txt2obj(oid, 1)) == NULL)
		return -2;
	idx = X509_get_ext_by_OBJ(x, obj, -1);
	ASN1_OBJECT_free(obj);
	if (idx < 0)
		return -1;
	if ((ext = X509_get_ext(x, idx)) == NULL ||
	    (v = X509_EXTENSION_get_data(ext)) == NULL)
		return -2;
	p = ASN1_STRING_get0_data(v);
	if ((ai = d2i_ASN1_INTEGER(NULL, &p, ASN1_STRING_length(v))) == NULL)
		return -2;
	if (p == ASN1_STRING_get0_data(v) + ASN1_STRING_length(v) &&
	    (n = ASN1_INTEGER_get(ai)) >= 0 && n <= 255)
		rv = (int)n;
	ASN1_INTEGER_free(ai);
	return rv;
}

/* The VCEK's HWID and SPLs into out->id. */
static int
vek_id(X509 *x, struct amd_result *out)
{
	static const char *const oids[] = {
		OID_BL_SPL, OID_TEE_SPL, OID_SNP_SPL, OID_UCODE_SPL, OID_FMC_SPL
	};
	int			*spl[] = {
		&out->id.tcb.bl, &out->id.tcb.tee, &out->id.tcb.snp,
		&out->id.tcb.ucode, &out->id.tcb.fmc
	};
	ASN1_OBJECT		*obj;
	X509_EXTENSION		*ext;
	const ASN1_OCTET_STRING	*v;
	size_t			 i;
	int			 idx, n;

	for (i = 0; i < sizeof(oids) / sizeof(oids[0]); i++) {
		if ((n = ext_spl(x, oids[i])) == -2)
			return fail(out, AMD_ERR_PARSE, "bad SPL extension");
		*spl[i] = n;
	}
	if ((obj = OBJ_txt2obj(OID_HWID, 1)) == NULL)
		return fail(out, AMD_ERR_PARSE, "out of memory");
	idx = X509_get_ext_by_OBJ(x, obj, -1);
	ASN1_OBJECT_free(obj);
	if (idx < 0)
		return 0;
	/* The HWID extension's extnValue is the raw chip ID, not re-wrapped. */
	if ((ext = X509_get_ext(x, idx)) == NULL ||
	    (v = X509_EXTENSION_get_data(ext)) == NULL ||
	    ASN1_STRING_length(v) <= 0 ||
	    ASN1_STRING_length(v) > AMD_HWID_MAX_BYTES)
		return fail(out, AMD_ERR_PARSE, "bad HWID extension");
	out->id.hwid_len = (size_t)ASN1_STRING_length(v);
	memcpy(out->id.hwid, ASN1_STRING_get0_data(v), out->id.hwid_len);
	return 0;
}

static int
id_matches(const struct amd_vek_id *got, const struct amd_vek_id *want,
    struct amd_result *out)
{
	const int	 w[] = { want->tcb.bl, want->tcb.tee, want->tcb.snp,
	    want->tcb.ucode, want->tcb.fmc };
	const int	 g[] = { got->tcb.bl, got->tcb.tee, got->tcb.snp,
	    got->tcb.ucode, got->tcb.fmc };
	static const char *const name[] = { "blSPL", "teeSPL", "snpSPL",
	    "ucodeSPL", "fmcSPL" };
	size_t		 i;

	if (want->hwid_len > 0 && (want->hwid_len != got->hwid_len ||
	    want->hwid_len > AMD_HWID_MAX_BYTES ||
	    memcmp(want->hwid, got->hwid, want->hwid_len) != 0))
		return fail(out, AMD_ERR_MISMATCH, "HWID is not the one asked for");
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (w[i] != -1 && w[i] != g[i]) {
			out->verdict = AMD_ERR_MISMATCH;
			snprintf(out->detail, sizeof(out->detail),
			    "%s is %d, asked for %d", name[i], g[i], w[i]);
			return -1;
		}
	return 0;
}

int
amd_verify_vek(enum amd_product product, enum amd_signer signer,
    const uint8_t *cert, size_t len, const uint8_t *chain, size_t chain_len,
    const struct amd_vek_id *want, time_t now, struct amd_result *out)
{
	X509		*vek = NULL, *ask = NULL;
	const char	*why = "not one certificate", *what;
	char		 cn[16];
	int		 rv = -1;

	if (out == NULL)
		return -1;
	if (result_start(out, product, signer) == -1)
		goto out;
	what = signer == AMD_VLEK ? "VLEK" : "VCEK";
	if (cert == NULL || len == 0 || len > AMD_MAX_BODY_BYTES ||
	    (vek = vendor_cert_parse(cert, len, &why)) == NULL) {
		out->verdict = AMD_ERR_PARSE;
		snprintf(out->detail, sizeof(out->detail), "%s: %s", what,
		    cert == NULL || len == 0 ? "empty" : len >
		    AMD_MAX_BODY_BYTES ? "too large" : why);
		goto out;
	}
	if (vek_id(vek, out) == -1)
		goto out;
	if (chain_check(product, signer, chain, chain_len, now, 0, out,
	    &ask) == -1)
		goto out;
	snprintf(cn, sizeof(cn), "SEV-%s", what);
	if (!cn_is(X509_get_subject_name(vek), cn)) {
		out->verdict = AMD_ERR_SIGNER;
		snprintf(out->detail, sizeof(out->detail),
		    "certificate is not a %s", cn);
		goto out;
	}
	if (check_issued(vek, ask, what, out) == -1)
		goto out;
	if (check_validity(vek, what, now, 1, out) == -1)
		goto out;
	if (want != NULL && id_matches(&out->id, want, out) == -1)
		goto out;
	out->verdict = AMD_OK;
	snprintf(out->detail, sizeof(out->detail),
	    "%s %s bl=%d tee=%d snp=%d ucode=%d fmc=%d", what,
	    amd_product_str[product], out->id.tcb.bl, out->id.tcb.tee,
	    out->id.tcb.snp, out->id.tcb.ucode, out->id.tcb.fmc);
	rv = 0;
 out:
	X509_free(ask);
	X509_free(vek);
	ERR_clear_error();
	return rv;
}

/*
 * A CRL body, DER or PEM (leading whitespace, then one X509 CRL block),
 * its bytes checked by der_crl_check (attest/der.h) before d2i.
 */
static X509_CRL *
crl_parse(const uint8_t *buf, size_t len, const char **why)
{
	static const char	 pem[] = "-----BEGIN X509 CRL-----";
	X509_CRL		*crl = NULL;
	BIO			*bio;
	size_t			 i = 0;

	if (buf[0] == 0x30)
		return der_x509_crl(buf, len, why);
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r' ||
	    buf[i] == '\n'))
		i++;
	*why = "not a DER or PEM CRL";
	if (len - i < sizeof(pem) - 1 || memcmp(buf + i, pem,
	    sizeof(pem) - 1) != 0)
		return NULL;
	*why = "out of memory";
	if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL)
		return NULL;
	if ((crl = der_pem_x509_crl(bio, why)) == NULL && *why == NULL)
		*why = "no PEM CRL";
	BIO_free(bio);
	return crl;
}

int
amd_verify_crl(enum amd_product product, const uint8_t *der, size_t len,
    time_t now, struct amd_result *out)
{
	X509_CRL		*crl = NULL;
	X509			*ark = NULL;
	const X509_ALGOR	*alg;
	const char		*why = "empty or too large";
	int			 other, rv = -1;

	if (out == NULL)
		return -1;
	result_init(out);
	if ((unsigned)product >= AMD_PRODUCT_MAX) {
		fail(out, AMD_ERR_PARSE, "bad arguments");
		goto out;
	}
	if (der == NULL || len == 0 || len > AMD_MAX_BODY_BYTES ||
	    (crl = crl_parse(der, len, &why)) == NULL) {
		out->verdict = AMD_ERR_PARSE;
		snprintf(out->detail, sizeof(out->detail), "CRL: %s", why);
		goto out;
	}
	if (util_asn1_time(X509_CRL_get0_lastUpdate(crl),
	    &out->this_update) == -1 ||
	    util_asn1_time(X509_CRL_get0_nextUpdate(crl),
	    &out->next_update) == -1) {
		fail(out, AMD_ERR_PARSE, "CRL lacks thisUpdate or nextUpdate");
		goto out;
	}
	out->crl_entries = sk_X509_REVOKED_num(X509_CRL_get_REVOKED(crl));
	if (out->crl_entries < 0)
		out->crl_entries = 0;
	if ((ark = vendor_root_x509(pinned_ark[product])) == NULL) {
		fail(out, AMD_ERR_ARK, "out of memory");
		goto out;
	}
	if (X509_NAME_cmp(X509_CRL_get_issuer(crl),
	    X509_get_subject_name(ark)) != 0) {
		if ((other = ark_product(NULL,
		    X509_CRL_get_issuer(crl))) >= 0) {
			out->verdict = AMD_ERR_PRODUCT;
			snprintf(out->detail, sizeof(out->detail),
			    "CRL issued by ARK-%s, not ARK-%s",
			    amd_product_str[other], amd_product_str[product]);
		} else
			fail(out, AMD_ERR_ARK, "CRL issuer is not the pinned ARK");
		goto out;
	}
	X509_CRL_get0_signature(crl, NULL, &alg);
	if (alg == NULL || !is_pss_sha384(alg)) {
		fail(out, AMD_ERR_ALGORITHM, "CRL not signed with RSASSA-PSS SHA-384");
		goto out;
	}
	if (X509_CRL_verify(crl, X509_get0_pubkey(ark)) != 1) {
		fail(out, AMD_ERR_SIGNATURE, "CRL signature does not verify");
		goto out;
	}
	if (out->this_update > now + AMD_SKEW_S) {
		out->verdict = AMD_ERR_FUTURE;
		snprintf(out->detail, sizeof(out->detail),
		    "thisUpdate %lld is %lld s ahead of now",
		    (long long)out->this_update,
		    (long long)(out->this_update - now));
		goto out;
	}
	if (out->next_update <= now) {
		out->verdict = AMD_ERR_EXPIRED;
		snprintf(out->detail, sizeof(out->detail),
		    "nextUpdate %lld passed %lld s ago",
		    (long long)out->next_update,
		    (long long)(now - out->next_update));
		goto out;
	}
	out->verdict = AMD_OK;
	snprintf(out->detail, sizeof(out->detail), "%s CRL, %ld revoked",
	    amd_product_str[product], out->crl_entries);
	rv = 0;
 out:
	X509_free(ark);
	X509_CRL_free(crl);
	ERR_clear_error();
	return rv;
}
