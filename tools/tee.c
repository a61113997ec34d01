/* SPDX-License-Identifier: Apache-2.0 */
/* For staplectl: the collateral a TDX/SGX quote or an SEV-SNP report needs, as entry/pccs.c's and entry/kds.c's canonical paths. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "attest/der.h"
#include "attest/util.h"
#include "tools/tee.h"

#define TEE_QUOTE_MAX_BYTES	(1024 * 1024)
#define OID_SGX_EXTENSIONS	"1.2.840.113741.1.13.1"
#define OID_SGX_FMSPC		"1.2.840.113741.1.13.1.4"

/* ---- binary or hex input -------------------------------------------------- */

/* Hex text (whitespace ignored) into a new buffer; NULL when buf is not hex text. */
static uint8_t *
unhex_text(const uint8_t *buf, size_t len, size_t *outlen)
{
	uint8_t	*out;
	size_t	 i, n = 0;
	int	 hi = -1;

	for (i = 0; i < len; i++)
		if (!isxdigit(buf[i]) && !isspace(buf[i]))
			return NULL;
	if ((out = malloc(len / 2 + 1)) == NULL)
		return NULL;
	for (i = 0; i < len; i++) {
		if (isspace(buf[i]))
			continue;
		if (hi < 0)
			hi = util_hexval(buf[i]);
		else {
			out[n++] = (uint8_t)(hi << 4 | util_hexval(buf[i]));
			hi = -1;
		}
	}
	if (hi >= 0 || n == 0) {
		free(out);
		return NULL;
	}
	*outlen = n;
	return out;
}

static uint32_t
le16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t
le32(const uint8_t *p)
{
	return le16(p) | le16(p + 2) << 16;
}

/* ---- quotes ------------------------------------------------------------- */

#define QUOTE_HEADER_BYTES	48
#define SGX_REPORT_BYTES	384
#define TD10_REPORT_BYTES	584
#define TD15_REPORT_BYTES	648
#define ECDSA256_SIG_BYTES	64
#define ECDSA256_KEY_BYTES	64
#define TEE_TYPE_SGX		0x00000000u
#define TEE_TYPE_TDX		0x00000081u
#define ATT_KEY_ECDSA_P256	2
#define CERT_TYPE_PCK_CHAIN	5	/* PCK leaf, PCK CA, root: PEM */
#define CERT_TYPE_QE_REPORT	6	/* QE report, its signature, auth data, certification data */

static int	qfail(char *, size_t, const char *, ...)
		    __attribute__((format(printf, 3, 4)));

static int
qfail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* FMSPC from the PCK certificate's SGX extension (a SEQUENCE of {OID, value}). */
static int
pck_fmspc(X509 *x, char fmspc[13])
{
	ASN1_OBJECT			*ext_oid = NULL, *fm_oid = NULL;
	STACK_OF(ASN1_TYPE)		*outer = NULL, *inner;
	const ASN1_OCTET_STRING		*os;
	const unsigned char		*p;
	ASN1_TYPE			*t, *o, *val;
	int				 i, idx, rv = -1;

	if ((ext_oid = OBJ_txt2obj(OID_SGX_EXTENSIONS, 1)) == NULL ||
	    (fm_oid = OBJ_txt2obj(OID_SGX_FMSPC, 1)) == NULL ||
	    (idx = X509_get_ext_by_OBJ(x, ext_oid, -1)) < 0 ||
	    (os = X509_EXTENSION_get_data(X509_get_ext(x, idx))) == NULL)
		goto out;
	p = ASN1_STRING_get0_data(os);
	if ((outer = d2i_ASN1_SEQUENCE_ANY(NULL, &p,
	    ASN1_STRING_length(os))) == NULL)
		goto out;
	for (i = 0; i < sk_ASN1_TYPE_num(outer) && rv == -1; i++) {
		t = sk_ASN1_TYPE_value(outer, i);
		if (t->type != V_ASN1_SEQUENCE)
			continue;
		p = ASN1_STRING_get0_data(t->value.sequence);
		if ((inner = d2i_ASN1_SEQUENCE_ANY(NULL, &p,
		    ASN1_STRING_length(t->value.sequence))) == NULL)
			continue;
		if (sk_ASN1_TYPE_num(inner) == 2 &&
		    (o = sk_ASN1_TYPE_value(inner, 0))->type == V_ASN1_OBJECT &&
		    OBJ_cmp(o->value.object, fm_oid) == 0 &&
		    (val = sk_ASN1_TYPE_value(inner, 1))->type == V_ASN1_OCTET_STRING &&
		    ASN1_STRING_length(val->value.octet_string) == 6) {
			p = ASN1_STRING_get0_data(val->value.octet_string);
			for (idx = 0; idx < 6; idx++)
				snprintf(fmspc + 2 * idx, 3, "%02X", p[idx]);
			rv = 0;
		}
		sk_ASN1_TYPE_pop_free(inner, ASN1_TYPE_free);
	}
 out:
	sk_ASN1_TYPE_pop_free(outer, ASN1_TYPE_free);
	ASN1_OBJECT_free(ext_oid);
	ASN1_OBJECT_free(fm_oid);
	ERR_clear_error();
	return rv;
}

/* The PCK chain (PEM, leaf first) into FMSPC, CA type and subject. */
static int
pck_chain(const uint8_t *pem, size_t len, struct tee_quote *q, char *err,
    size_t errlen)
{
	BIO		*bio;
	X509		*x;
	const char	*why;
	char		 cn[128];
	int		 rv = -1;

	if ((bio = BIO_new_mem_buf(pem, (int)len)) == NULL)
		return qfail(err, errlen, "out of memory");
	x = der_pem_x509(bio, &why);
	BIO_free(bio);
	if (x == NULL)
		return qfail(err, errlen, "certification data: no PEM PCK "
		    "certificate%s%s", why != NULL ? ": " : "", why != NULL ?
		    why : "");
	X509_NAME_oneline(X509_get_subject_name(x), q->pck_subject,
	    sizeof(q->pck_subject));
	cn[0] = '\0';
	X509_NAME_get_text_by_NID(X509_get_issuer_name(x), NID_commonName, cn,
	    sizeof(cn));
	if (strcmp(cn, "Intel SGX PCK Processor CA") == 0)
		snprintf(q->ca, sizeof(q->ca), "processor");
	else if (strcmp(cn, "Intel SGX PCK Platform CA") == 0)
		snprintf(q->ca, sizeof(q->ca), "platform");
	else {
		qfail(err, errlen, "PCK certificate issuer \"%s\" is neither Intel "
		    "SGX PCK Processor CA nor Platform CA", cn);
		goto out;
	}
	if (pck_fmspc(x, q->fmspc) == -1) {
		qfail(err, errlen, "PCK certificate: no FMSPC (%s)", OID_SGX_FMSPC);
		goto out;
	}
	rv = 0;
 out:
	X509_free(x);
	return rv;
}

/*
 * Intel DCAP quote layouts (Intel SGX ECDSA Quote Library API, appendix A;
 * TDX DCAP Quoting Library API, Quote Format): a 48-byte header (version,
 * attestation key type, TEE type), the report body, a u32 signature data
 * length, then the ECDSA signature and attestation key; v3 continues with
 * the QE report, its signature, auth data and certification data, v4/v5
 * wrap the same in certification data of type 6.
 */
int
tee_quote_parse(const uint8_t *in, size_t inlen, struct tee_quote *q,
    char *err, size_t errlen)
{
	uint8_t		*hex = NULL;
	const uint8_t	*buf = in, *p, *end;
	size_t		 len = inlen, body, hexlen;
	uint32_t	 tee, siglen, type, size;
	int		 rv = -1;

	memset(q, 0, sizeof(*q));
	if ((hex = unhex_text(in, inlen, &hexlen)) != NULL) {
		buf = hex;
		len = hexlen;
	}
	if (len > TEE_QUOTE_MAX_BYTES || len < QUOTE_HEADER_BYTES + 4) {
		qfail(err, errlen, "too short or too long for a quote (%zu bytes)",
		    len);
		goto out;
	}
	q->version = (int)le16(buf);
	tee = le32(buf + 4);
	if (le16(buf + 2) != ATT_KEY_ECDSA_P256) {
		qfail(err, errlen, "attestation key type %u: only ECDSA P-256 "
		    "quotes carry a PCK chain this way", le16(buf + 2));
		goto out;
	}
	p = buf + QUOTE_HEADER_BYTES;
	end = buf + len;
	switch (q->version) {
	case 3:
		body = SGX_REPORT_BYTES;
		break;
	case 4:
		if (tee != TEE_TYPE_SGX && tee != TEE_TYPE_TDX) {
			qfail(err, errlen, "TEE type 0x%x: neither SGX nor TDX", tee);
			goto out;
		}
		q->tdx = tee == TEE_TYPE_TDX;
		body = q->tdx ? TD10_REPORT_BYTES : SGX_REPORT_BYTES;
		break;
	case 5:
		/* v5: a body descriptor (u16 type 1 SGX, 2 TD 1.0, 3 TD 1.5; u32 size). */
		if (end - p < 6) {
			qfail(err, errlen, "v5: truncated body descriptor");
			goto out;
		}
		type = le16(p);
		body = le32(p + 2);
		q->tdx = type == 2 || type == 3;
		if ((type == 1 && body != SGX_REPORT_BYTES) ||
		    (type == 2 && body != TD10_REPORT_BYTES) ||
		    (type == 3 && body != TD15_REPORT_BYTES) || type < 1 || type > 3) {
			qfail(err, errlen, "v5: body type %u of %zu bytes", type, body);
			goto out;
		}
		p += 6;
		break;
	default:
		qfail(err, errlen, "quote version %d: expected 3 (SGX), 4 or 5",
		    q->version);
		goto out;
	}
	if ((size_t)(end - p) < body + 4) {
		qfail(err, errlen, "truncated report body");
		goto out;
	}
	p += body;
	siglen = le32(p);
	p += 4;
	if (siglen > (size_t)(end - p)) {
		qfail(err, errlen, "signature data length %u runs past the quote "
		    "(%zu bytes left)", siglen, (size_t)(end - p));
		goto out;
	}
	end = p + siglen;
	if ((size_t)(end - p) < ECDSA256_SIG_BYTES + ECDSA256_KEY_BYTES)
		goto truncated;
	p += ECDSA256_SIG_BYTES + ECDSA256_KEY_BYTES;
	if (q->version >= 4) {
		if (end - p < 6)
			goto truncated;
		type = le16(p);
		size = le32(p + 2);
		p += 6;
		if (type != CERT_TYPE_QE_REPORT || size > (size_t)(end - p)) {
			qfail(err, errlen, "certification data type %u (%u bytes): "
			    "expected type 6, the QE report", type, size);
			goto out;
		}
		end = p + size;
	}
	/* QE report, its signature, QE auth data (u16 length). */
	if ((size_t)(end - p) < SGX_REPORT_BYTES + ECDSA256_SIG_BYTES + 2)
		goto truncated;
	p += SGX_REPORT_BYTES + ECDSA256_SIG_BYTES;
	size = le16(p);
	p += 2;
	if (size > (size_t)(end - p) || (size_t)(end - p) - size < 6)
		goto truncated;
	p += size;
	type = le16(p);
	size = le32(p + 2);
	p += 6;
	if (type != CERT_TYPE_PCK_CHAIN) {
		qfail(err, errlen, "certification data type %u: only type 5 (the "
		    "PCK certificate chain) names the FMSPC; types 1-3 need the "
		    "PCK certificate fetched first", type);
		goto out;
	}
	if (size > (size_t)(end - p))
		goto truncated;
	rv = pck_chain(p, size, q, err, errlen);
	goto out;
 truncated:
	qfail(err, errlen, "truncated signature data");
 out:
	free(hex);
	return rv;
}

size_t
tee_quote_paths(const struct tee_quote *q, char paths[][TEE_PATH_MAX],
    size_t max)
{
	/* What a verifier of the quote asks for, in entry/pccs.c's canonical form. */
	static const enum pccs_what	 needs[] = { PCCS_TCB, PCCS_QE,
					    PCCS_PCK_CRL, PCCS_ROOT_CRL,
					    PCCS_EVAL_NUMS };
	struct pccs_req			 r;
	size_t				 i, n = 0;

	if (max < sizeof(needs) / sizeof(needs[0]))
		return 0;
	for (i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
		if (pccs_req_for(&r, needs[i], needs[i] != PCCS_PCK_CRL &&
		    needs[i] != PCCS_ROOT_CRL && q->tdx) == -1)
			continue;
		snprintf(r.fmspc, sizeof(r.fmspc), "%s", q->fmspc);
		snprintf(r.ca, sizeof(r.ca), "%s", q->ca);
		if (pccs_canon(&r, paths[n], TEE_PATH_MAX) == 0)
			n++;
	}
	return n;
}

/* ---- SEV-SNP reports ------------------------------------------------------ */

/* Offsets in ATTESTATION_REPORT (AMD SEV-SNP Firmware ABI, table 22). */
#define SNP_VERSION		0x000
#define SNP_FLAGS		0x048	/* bits 4:2 SIGNING_KEY */
#define SNP_REPORTED_TCB	0x180
#define SNP_CPUID_FAM_ID	0x188	/* v3+ */
#define SNP_CPUID_MOD_ID	0x189
#define SNP_CHIP_ID		0x1A0
#define SNP_TURIN_HWID_BYTES	8

/* KDS's product for a CPUID family/model (AMD's processor families). */
static int
snp_product(int family, int model)
{
	if (family == 0x19 && model <= 0x0F)
		return AMD_MILAN;
	if (family == 0x19 && ((model >= 0x10 && model <= 0x1F) ||
	    (model >= 0xA0 && model <= 0xAF)))
		return AMD_GENOA;	/* Genoa, Bergamo, Siena */
	if (family == 0x1A && model <= 0x11)
		return AMD_TURIN;
	return -1;
}

int
tee_snp_parse(const uint8_t *in, size_t inlen, int product,
    struct tee_snp *s, char *err, size_t errlen)
{
	uint8_t		*hex = NULL;
	const uint8_t	*buf = in, *t;
	size_t		 len = inlen, hexlen, i;
	int		 rv = -1, from_cpuid = -1, zero = 1;

	memset(s, 0, sizeof(*s));
	if ((hex = unhex_text(in, inlen, &hexlen)) != NULL) {
		buf = hex;
		len = hexlen;
	}
	if (len != TEE_SNP_REPORT_BYTES) {
		qfail(err, errlen, "%zu bytes: an SEV-SNP attestation report is %d",
		    len, TEE_SNP_REPORT_BYTES);
		goto out;
	}
	s->version = (int)le32(buf + SNP_VERSION);
	if (s->version < 2) {
		qfail(err, errlen, "report version %d: expected 2 or later",
		    s->version);
		goto out;
	}
	s->signing_key = (int)(le32(buf + SNP_FLAGS) >> 2 & 7);
	if (s->version >= 3) {
		s->have_cpuid = 1;
		s->family = buf[SNP_CPUID_FAM_ID];
		s->model = buf[SNP_CPUID_MOD_ID];
		from_cpuid = snp_product(s->family, s->model);
	}
	if (product < 0 && from_cpuid < 0) {
		qfail(err, errlen, s->have_cpuid ? "CPUID family 0x%x model 0x%x "
		    "is not a product KDS serves" : "report version %d carries no "
		    "CPUID: give --product Milan, Genoa or Turin", s->have_cpuid ?
		    s->family : s->version, s->model);
		goto out;
	}
	if (product >= 0 && from_cpuid >= 0 && product != from_cpuid) {
		qfail(err, errlen, "--product %s, but the report's CPUID says %s",
		    amd_product_str[product], amd_product_str[from_cpuid]);
		goto out;
	}
	s->product = (enum amd_product)(product >= 0 ? product : from_cpuid);
	memcpy(s->chip_id, buf + SNP_CHIP_ID, sizeof(s->chip_id));
	for (i = 0; i < sizeof(s->chip_id); i++)
		zero &= s->chip_id[i] == 0;
	if (zero) {
		qfail(err, errlen, "CHIP_ID is zero (MASK_CHIP_ID set): no VCEK "
		    "can be named for this report");
		goto out;
	}
	/*
	 * TCB_VERSION: Milan and Genoa bl, tee, 4 reserved, snp, microcode;
	 * Turin fmc, bl, tee, snp, 3 reserved, microcode.
	 */
	t = buf + SNP_REPORTED_TCB;
	if (s->product == AMD_TURIN) {
		s->tcb.fmc = t[0];
		s->tcb.bl = t[1];
		s->tcb.tee = t[2];
		s->tcb.snp = t[3];
	} else {
		s->tcb.fmc = -1;
		s->tcb.bl = t[0];
		s->tcb.tee = t[1];
		s->tcb.snp = t[6];
	}
	s->tcb.ucode = t[7];
	rv = 0;
 out:
	free(hex);
	return rv;
}

size_t
tee_snp_paths(const struct tee_snp *s, char paths[][TEE_PATH_MAX], size_t max)
{
	struct kds_req	r;
	size_t		n = 0;

	if (max < 3)
		return 0;
	memset(&r, 0, sizeof(r));
	r.product = s->product;
	/* A VLEK-signed report: KDS gives its VLEK to the CSP only. */
	r.signer = s->signing_key == 1 ? AMD_VLEK : AMD_VCEK;
	if (r.signer == AMD_VCEK) {
		r.what = KDS_VEK;
		r.id.hwid_len = s->product == AMD_TURIN ? SNP_TURIN_HWID_BYTES :
		    sizeof(s->chip_id);
		memcpy(r.id.hwid, s->chip_id, r.id.hwid_len);
		r.id.tcb = s->tcb;
		if (kds_canon(&r, paths[n], TEE_PATH_MAX) == 0)
			n++;
	}
	r.what = KDS_CHAIN;
	if (kds_canon(&r, paths[n], TEE_PATH_MAX) == 0)
		n++;
	r.what = KDS_CRL;
	if (kds_canon(&r, paths[n], TEE_PATH_MAX) == 0)
		n++;
	return n;
}
