/* SPDX-License-Identifier: Apache-2.0 */
/* NVIDIA RIM service documents: envelope, digest and KeyInfo chain checks before a RIM is stored. */
#include "config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "attest/nvidia_certs.h"
#include "attest/b64.h"
#include "attest/der.h"
#include "attest/rim.h"
#include "attest/util.h"

/* SHA-256 of the NVIDIA CoRIM signing Root CA (nvat-ocsp.md section 5). */
#define RIM_ROOT_SHA256 \
	"12977B5115ACB0381179279FFFEB5A8C4D264971EBB32298023A465FA41DF5D1"

const char *const rim_verdict_str[RIM_VERDICT_MAX] = {
	[RIM_OK] = "ok",
	[RIM_ERR_BAD_ID] = "bad_id",
	[RIM_ERR_TOO_BIG] = "too_big",
	[RIM_ERR_JSON] = "json",
	[RIM_ERR_ID_MISMATCH] = "id_mismatch",
	[RIM_ERR_BASE64] = "base64",
	[RIM_ERR_SHA256] = "sha256_mismatch",
	[RIM_ERR_NO_CERTS] = "no_certs",
	[RIM_ERR_CERT] = "cert",
	[RIM_ERR_CHAIN] = "chain",
};

struct rim_trust {
	X509_STORE	*store;
	STACK_OF(X509)	*anchors;
	const char	*builtin_pem;	/* the compiled-in root, until parsed */
};

int
rim_id_valid(const char *id)
{
	size_t	 i;

	if (id == NULL || id[0] == '\0')
		return 0;
	for (i = 0; id[i] != '\0'; i++) {
		if (i >= RIM_ID_MAX_CHARS)
			return 0;
		if (!isascii((unsigned char)id[i]) ||
		    (!isalnum((unsigned char)id[i]) && id[i] != '_' &&
		    id[i] != '.' && id[i] != '-'))
			return 0;
	}
	/* The id names a file in a --rim-store dir. */
	if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
		return 0;
	return 1;
}

int
rim_id_validn(const char *id, size_t len)
{
	char	 buf[RIM_ID_MAX_CHARS + 1];

	if (id == NULL || len == 0 || len > RIM_ID_MAX_CHARS ||
	    memchr(id, '\0', len) != NULL)
		return 0;
	memcpy(buf, id, len);
	buf[len] = '\0';
	return rim_id_valid(buf);
}

/* ---- trust ------------------------------------------------------------- */

struct rim_trust *
rim_trust_new(void)
{
	struct rim_trust	*t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	if ((t->store = X509_STORE_new()) == NULL ||
	    (t->anchors = sk_X509_new_null()) == NULL) {
		rim_trust_free(t);
		return NULL;
	}
	return t;
}

void
rim_trust_free(struct rim_trust *t)
{
	if (t == NULL)
		return;
	sk_X509_pop_free(t->anchors, X509_free);
	X509_STORE_free(t->store);
	free(t);
}

/* Takes a new reference; a certificate already held is not added twice. */
static int
trust_add(struct rim_trust *t, X509 *x)
{
	int	 i;

	for (i = 0; i < sk_X509_num(t->anchors); i++)
		if (X509_cmp(sk_X509_value(t->anchors, i), x) == 0)
			return 0;
	if (X509_STORE_add_cert(t->store, x) != 1 || !X509_up_ref(x))
		return -1;
	if (sk_X509_push(t->anchors, x) == 0) {
		X509_free(x);
		return -1;
	}
	return 1;
}

int
rim_trust_add_anchors_pem(struct rim_trust *t, const char *pem, size_t len)
{
	STACK_OF(X509)	*got = NULL;
	BIO		*bio = NULL;
	X509		*x;
	const char	*why;
	int		 i, r, n = 0, rv = -1;

	if (t == NULL || pem == NULL || len > INT32_MAX)
		return -1;
	if ((got = sk_X509_new_null()) == NULL ||
	    (bio = BIO_new_mem_buf(pem, (int)len)) == NULL)
		goto out;
	/* Read them all first: a PEM with one bad block adds nothing. */
	for (;;) {
		/* raw bytes checked by der_cert_check, then parsed */
		if ((x = der_pem_x509(bio, &why)) == NULL) {
			if (why == NULL && sk_X509_num(got) > 0)
				break;
			goto out;
		}
		if (sk_X509_push(got, x) == 0) {
			X509_free(x);
			goto out;
		}
	}
	for (i = 0; i < sk_X509_num(got); i++) {
		if ((r = trust_add(t, sk_X509_value(got, i))) < 0)
			goto out;
		n += r;
	}
	rv = n;
 out:
	ERR_clear_error();
	BIO_free(bio);
	sk_X509_pop_free(got, X509_free);
	return rv;
}

int
rim_trust_add_builtin(struct rim_trust *t)
{
	size_t	 i;

	/*
	 * Parsed when a chain is first verified (trust_builtin): a start-up
	 * that only serves hits never pays OpenSSL's first-certificate setup.
	 */
	for (i = 0; t != NULL && i < nvidia_anchors_count; i++) {
		if (strcmp(nvidia_anchors[i].sha256, RIM_ROOT_SHA256) != 0)
			continue;
		t->builtin_pem = nvidia_anchors[i].pem;
		return 0;
	}
	return -1;
}

/* Parse the compiled-in root if it is pending. 0, or -1 (out of memory). */
static int
trust_builtin(struct rim_trust *t)
{
	if (t->builtin_pem == NULL)
		return 0;
	if (rim_trust_add_anchors_pem(t, t->builtin_pem,
	    strlen(t->builtin_pem)) < 0)
		return -1;
	t->builtin_pem = NULL;
	return 0;
}

void
rim_certs_free(struct rim_certs *c)
{
	size_t	 i;

	if (c == NULL)
		return;
	for (i = 0; i < c->n && i < RIM_MAX_CERTS; i++)
		free(c->der[i]);
	memset(c, 0, sizeof(*c));
}

static const char *
find(const char *p, const char *end, const char *needle)
{
	size_t	 n = strlen(needle);

	for (; (size_t)(end - p) >= n; p++)
		if (memcmp(p, needle, n) == 0)
			return p;
	return NULL;
}

/* The local part of an element name (after any "prefix:"). */
static int
local_is(const char *name, size_t len, const char *want)
{
	const char	*c;
	size_t		 wl = strlen(want);

	if ((c = memchr(name, ':', len)) != NULL) {
		len -= (size_t)(c + 1 - name);
		name = c + 1;
	}
	return len == wl && memcmp(name, want, wl) == 0;
}

/*
 * The base64 text of an X509Certificate element, with the character
 * references XML canonicalisation may leave in it (&#13; &#xD; &#10;
 * &#xA; &#9;) turned into whitespace. Any other markup is refused.
 */
static uint8_t *
cert_text_decode(const char *p, const char *end, size_t *derlen)
{
	static const char *const refs[] = {
		"&#13;", "&#xD;", "&#xd;", "&#10;", "&#xA;", "&#xa;", "&#9;"
	};
	char		*txt;
	uint8_t		*der = NULL;
	size_t		 i, n = 0, k;

	if ((txt = malloc((size_t)(end - p) + 1)) == NULL)
		return NULL;
	for (; p < end; p++) {
		if (*p == '&') {
			for (k = 0; k < sizeof(refs) / sizeof(refs[0]); k++) {
				i = strlen(refs[k]);
				if ((size_t)(end - p) >= i &&
				    memcmp(p, refs[k], i) == 0)
					break;
			}
			if (k == sizeof(refs) / sizeof(refs[0]))
				goto out;
			txt[n++] = ' ';
			p += i - 1;
			continue;
		}
		txt[n++] = *p;
	}
	der = b64_decode(txt, n, derlen);
	if (der != NULL && (*derlen == 0 || *derlen > RIM_MAX_CERT_BYTES)) {
		free(der);
		der = NULL;
	}
 out:
	free(txt);
	return der;
}

int
rim_xml_certs(const uint8_t *xml, size_t len, struct rim_certs *out,
    const char **why)
{
	const char	*p = (const char *)xml, *end = p + len;
	const char	*name, *close, *q, *text;
	size_t		 nlen, dlen;
	uint8_t		*der;
	char		 quote;
	int		 in_keyinfo = 0, closing;

	memset(out, 0, sizeof(*out));
	*why = "no X509Certificate in a KeyInfo";
	if (xml == NULL)
		return -1;
	while (p < end) {
		if (*p != '<') {
			p++;
			continue;
		}
		if (find(p, end, "<!--") == p) {
			if ((q = find(p + 4, end, "-->")) == NULL)
				goto trunc;
			p = q + 3;
			continue;
		}
		if (find(p, end, "<![CDATA[") == p) {
			if ((q = find(p + 9, end, "]]>")) == NULL)
				goto trunc;
			p = q + 3;
			continue;
		}
		if (find(p, end, "<?") == p) {
			if ((q = find(p + 2, end, "?>")) == NULL)
				goto trunc;
			p = q + 2;
			continue;
		}
		if (end - p >= 2 && p[1] == '!') {
			if ((q = memchr(p, '>', (size_t)(end - p))) == NULL)
				goto trunc;
			p = q + 1;
			continue;
		}
		closing = end - p >= 2 && p[1] == '/';
		name = p + 1 + closing;
		for (q = name; q < end && *q != '>' && *q != '/' &&
		    !isspace((unsigned char)*q); q++)
			;
		nlen = (size_t)(q - name);
		/* The end of the tag, skipping quoted attribute values. */
		for (quote = 0; q < end; q++) {
			if (quote != 0) {
				if (*q == quote)
					quote = 0;
			} else if (*q == '"' || *q == '\'')
				quote = *q;
			else if (*q == '>')
				break;
		}
		if (q >= end)
			goto trunc;
		p = q + 1;
		if (q[-1] == '/' && !closing)	/* <empty/> */
			continue;
		if (local_is(name, nlen, "KeyInfo")) {
			in_keyinfo += closing ? (in_keyinfo > 0 ? -1 : 0) : 1;
			continue;
		}
		if (closing || in_keyinfo == 0 ||
		    !local_is(name, nlen, "X509Certificate"))
			continue;
		/* Text up to the matching end tag, and nothing else. */
		text = p;
		if ((close = memchr(p, '<', (size_t)(end - p))) == NULL)
			goto trunc;
		if (end - close < 2 || close[1] != '/' ||
		    (size_t)(end - close - 2) < nlen ||
		    memcmp(close + 2, name, nlen) != 0) {
			*why = "X509Certificate holds markup, not base64";
			goto fail;
		}
		if (out->n == RIM_MAX_CERTS) {
			*why = "more KeyInfo certificates than RIM_MAX_CERTS";
			goto fail;
		}
		if ((der = cert_text_decode(text, close, &dlen)) == NULL) {
			*why = "X509Certificate is not base64";
			goto fail;
		}
		out->der[out->n] = der;
		out->len[out->n] = dlen;
		out->n++;
		p = close;
	}
	if (out->n == 0)
		return -1;
	return 0;
 trunc:
	*why = "XML ends inside markup";
 fail:
	rim_certs_free(out);
	return -1;
}

/* ---- verification ------------------------------------------------------- */

static int
set_verdict(struct rim_result *out, enum rim_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
set_verdict(struct rim_result *out, enum rim_verdict v, const char *fmt, ...)
{
	va_list	 ap;

	out->verdict = v;
	va_start(ap, fmt);
	vsnprintf(out->detail, sizeof(out->detail), fmt, ap);
	va_end(ap);
	return v == RIM_OK ? 0 : -1;
}

void
rim_result_free(struct rim_result *r)
{
	if (r == NULL)
		return;
	free(r->xml);
	r->xml = NULL;
	r->xml_len = 0;
	rim_certs_free(&r->chain);
}

/* The certificate that issues none of the others: the signer. */
static int
pick_leaf(STACK_OF(X509) *certs)
{
	int	 i, j, n = sk_X509_num(certs);

	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++)
			if (i != j && X509_check_issued(sk_X509_value(certs, i),
			    sk_X509_value(certs, j)) == X509_V_OK)
				break;
		if (j == n)
			return i;
	}
	return 0;
}

static void
describe_signer(X509 *leaf, time_t now, struct rim_result *out)
{
	BIGNUM		*bn;
	char		*hex;

	util_name_rfc2253(X509_get_subject_name(leaf), out->signer_subject,
	    sizeof(out->signer_subject));
	if ((bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(leaf), NULL)) !=
	    NULL && (hex = BN_bn2hex(bn)) != NULL) {
		snprintf(out->signer_serial, sizeof(out->signer_serial), "%s",
		    hex);
		OPENSSL_free(hex);
	}
	BN_free(bn);
	(void)util_asn1_time(X509_get0_notAfter(leaf), &out->signer_not_after);
	out->signer_expired = out->signer_not_after < now;
}

/*
 * The first of `certs` that is not on `path`, or -1. The path builder
 * takes the anchor from the store and skips a KeyInfo copy it does not
 * need (the root's, NVIDIA sends it): nothing would have checked that
 * copy's bytes, and the document is stored and served as sent. NVIDIA's
 * KeyInfo is exactly the path; a RIM with an extra certificate would be
 * refused here, which is the price of storing only checked bytes.
 */
static int
off_path(STACK_OF(X509) *certs, STACK_OF(X509) *path)
{
	int	 i, j;

	for (i = 0; i < sk_X509_num(certs); i++) {
		for (j = 0; j < sk_X509_num(path); j++)
			if (X509_cmp(sk_X509_value(certs, i),
			    sk_X509_value(path, j)) == 0)
				break;
		if (j == sk_X509_num(path))
			return i;
	}
	return -1;
}

/* Chain the KeyInfo certificates to an anchor, dates ignored. */
static int
verify_chain(struct rim_trust *t, const struct rim_certs *kc, time_t now,
    struct rim_result *out)
{
	STACK_OF(X509)	*certs = NULL, *chain = NULL;
	X509_STORE_CTX	*ctx = NULL;
	X509		*x, *leaf;
	const char	*why;
	unsigned char	*d;
	size_t		 i;
	int		 li, n, err, rv = -1;

	if (trust_builtin(t) == -1 || (certs = sk_X509_new_null()) == NULL ||
	    (ctx = X509_STORE_CTX_new()) == NULL) {
		set_verdict(out, RIM_ERR_CHAIN, "out of memory");
		goto out;
	}
	for (i = 0; i < kc->n; i++) {
		if ((x = der_x509(kc->der[i], kc->len[i], &why)) == NULL) {
			set_verdict(out, RIM_ERR_CERT,
			    "KeyInfo certificate %zu: %s", i + 1, why);
			goto out;
		}
		if (sk_X509_push(certs, x) == 0) {
			X509_free(x);
			set_verdict(out, RIM_ERR_CHAIN, "out of memory");
			goto out;
		}
	}
	li = pick_leaf(certs);
	leaf = sk_X509_value(certs, li);
	describe_signer(leaf, now, out);
	if (!X509_STORE_CTX_init(ctx, t->store, leaf, certs)) {
		set_verdict(out, RIM_ERR_CHAIN, "out of memory");
		goto out;
	}
	/* nvattest: X509_V_FLAG_NO_CHECK_TIME; expiry is a claim. */
	X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_NO_CHECK_TIME);
	if (X509_verify_cert(ctx) != 1) {
		err = X509_STORE_CTX_get_error(ctx);
		set_verdict(out, RIM_ERR_CHAIN, "signer %s: %s at depth %d",
		    out->signer_subject, X509_verify_cert_error_string(err),
		    X509_STORE_CTX_get_error_depth(ctx));
		goto out;
	}
	if ((chain = X509_STORE_CTX_get1_chain(ctx)) == NULL) {
		set_verdict(out, RIM_ERR_CHAIN, "out of memory");
		goto out;
	}
	if ((li = off_path(certs, chain)) >= 0) {
		set_verdict(out, RIM_ERR_CHAIN, "KeyInfo certificate %d is not "
		    "on the verified path", li + 1);
		goto out;
	}
	n = sk_X509_num(chain);
	for (i = 0; i < (size_t)n && i < RIM_MAX_CERTS; i++) {
		d = NULL;
		if ((err = i2d_X509(sk_X509_value(chain, (int)i), &d)) <= 0) {
			set_verdict(out, RIM_ERR_CHAIN, "out of memory");
			goto out;
		}
		out->chain.der[i] = d;
		out->chain.len[i] = (size_t)err;
		out->chain.n++;
	}
	rv = 0;
 out:
	if (rv != 0)
		rim_certs_free(&out->chain);
	sk_X509_pop_free(chain, X509_free);
	X509_STORE_CTX_free(ctx);
	sk_X509_pop_free(certs, X509_free);
	ERR_clear_error();
	return rv;
}

/* The XML's KeyInfo chain; out->xml is already set. */
static int
verify_doc(struct rim_trust *t, time_t now, struct rim_result *out)
{
	struct rim_certs	 kc;
	const char		*why;
	int			 rv;

	if (rim_xml_certs(out->xml, out->xml_len, &kc, &why) == -1)
		return set_verdict(out, strncmp(why, "no ", 3) == 0 ?
		    RIM_ERR_NO_CERTS : RIM_ERR_CERT, "%s", why);
	if (t == NULL) {
		rim_certs_free(&kc);
		return set_verdict(out, RIM_ERR_CHAIN, "no RIM anchors");
	}
	rv = verify_chain(t, &kc, now, out);
	rim_certs_free(&kc);
	if (rv == 0)
		return set_verdict(out, RIM_OK, "signed by %s%s",
		    out->signer_subject, out->signer_expired ?
		    " (signer expired: nvattest reports it)" : "");
	return -1;
}

static void
result_init(struct rim_result *out)
{
	memset(out, 0, sizeof(*out));
	out->verdict = RIM_ERR_JSON;
}

static int
finish(struct rim_result *out, int rv)
{
	if (rv != 0) {
		rim_result_free(out);
		out->signer_expired = 0;
	}
	return rv;
}

int
rim_verify_xml(struct rim_trust *t, const uint8_t *xml, size_t len,
    time_t now, struct rim_result *out)
{
	result_init(out);
	if (xml == NULL || len == 0)
		return set_verdict(out, RIM_ERR_NO_CERTS, "empty document");
	if (len > RIM_MAX_JSON_BYTES)
		return set_verdict(out, RIM_ERR_TOO_BIG,
		    "document of %zu bytes", len);
	if ((out->xml = malloc(len)) == NULL)
		return set_verdict(out, RIM_ERR_NO_CERTS, "out of memory");
	memcpy(out->xml, xml, len);
	out->xml_len = len;
	return finish(out, verify_doc(t, now, out));
}

static const char *
str_field(json_t *o, const char *key, int required, struct rim_result *out)
{
	json_t	*v = json_object_get(o, key);

	if (v == NULL) {
		if (required)
			set_verdict(out, RIM_ERR_JSON, "no \"%s\"", key);
		return NULL;
	}
	if (!json_is_string(v)) {
		set_verdict(out, RIM_ERR_JSON, "\"%s\" is not a string", key);
		return NULL;
	}
	return json_string_value(v);
}

int
rim_verify(struct rim_trust *t, const char *expected_id, const uint8_t *json,
    size_t len, time_t now, struct rim_result *out)
{
	json_t		*root = NULL;
	json_error_t	 jerr;
	const char	*id, *b64, *hex, *fmt;
	uint8_t		 md[32], want[32];
	int		 rv = -1;

	result_init(out);
	if (!rim_id_valid(expected_id)) {
		set_verdict(out, RIM_ERR_BAD_ID, "requested id is not a RIM ID");
		goto out;
	}
	if (len > RIM_MAX_JSON_BYTES) {
		set_verdict(out, RIM_ERR_TOO_BIG, "%zu bytes", len);
		goto out;
	}
	if (json == NULL || (root = json_loadb((const char *)json, len,
	    JSON_REJECT_DUPLICATES, &jerr)) == NULL) {
		set_verdict(out, RIM_ERR_JSON, "not JSON: %s (line %d)",
		    json == NULL ? "no body" : jerr.text,
		    json == NULL ? 0 : jerr.line);
		goto out;
	}
	if (!json_is_object(root)) {
		set_verdict(out, RIM_ERR_JSON, "not a JSON object");
		goto out;
	}
	if ((id = str_field(root, "id", 1, out)) == NULL ||
	    (b64 = str_field(root, "rim", 1, out)) == NULL ||
	    (hex = str_field(root, "sha256", 1, out)) == NULL)
		goto out;
	if ((fmt = str_field(root, "rim_format", 0, out)) == NULL &&
	    json_object_get(root, "rim_format") != NULL)
		goto out;
	if (json_object_get(root, "request_id") != NULL &&
	    str_field(root, "request_id", 0, out) == NULL)
		goto out;
	if (strcmp(id, expected_id) != 0) {
		set_verdict(out, RIM_ERR_ID_MISMATCH,
		    "asked for %s, got id \"%.100s\"", expected_id, id);
		goto out;
	}
	if (fmt != NULL)
		snprintf(out->rim_format, sizeof(out->rim_format), "%s", fmt);
	if ((out->xml = b64_decode(b64, strlen(b64), &out->xml_len)) ==
	    NULL) {
		set_verdict(out, RIM_ERR_BASE64, "\"rim\" is not base64");
		goto out;
	}
	if (strlen(hex) != 2 * sizeof(md)) {
		set_verdict(out, RIM_ERR_SHA256,
		    "\"sha256\" is not 64 hex digits");
		goto out;
	}
	if (EVP_Digest(out->xml, out->xml_len, md, NULL, EVP_sha256(),
	    NULL) != 1) {
		set_verdict(out, RIM_ERR_SHA256, "cannot hash");
		goto out;
	}
	if (util_unhex(hex, strlen(hex), want, sizeof(want)) == -1) {
		set_verdict(out, RIM_ERR_SHA256,
		    "\"sha256\" is not 64 hex digits");
		goto out;
	}
	if (memcmp(want, md, sizeof(md)) != 0) {
		set_verdict(out, RIM_ERR_SHA256,
		    "\"sha256\" does not match the decoded RIM");
		goto out;
	}
	rv = verify_doc(t, now, out);
 out:
	json_decref(root);
	return finish(out, rv);
}
