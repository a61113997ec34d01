/* SPDX-License-Identifier: Apache-2.0 */
/* From GPU/NVSwitch evidence or a PEM chain to a manifest: the CertIDs nvattest OCSP-checks and the RIM IDs it fetches. */
#include "config.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "attest/evidence.h"
#include "attest/nvidia_certs.h"
#include "attest/b64.h"
#include "attest/der.h"
#include "attest/ocsp_req.h"
#include "attest/rim.h"
#include "attest/util.h"

/* SHA-256 of the NVIDIA CoRIM signing Root CA: a chain under it is a RIM chain. */
#define CORIM_ROOT_SHA256 \
	"12977B5115ACB0381179279FFFEB5A8C4D264971EBB32298023A465FA41DF5D1"

/* SPDM 1.1 (DSP0274) GET_MEASUREMENTS with a signature requested. */
#define SPDM_REQ_BYTES		37	/* 4 header + 32 nonce + slot id */
#define SPDM_GET_MEASUREMENTS	0xe0
#define SPDM_MEASUREMENTS	0x60
#define SPDM_NONCE_BYTES	32
#define SPDM_SIG_BYTES		96	/* ECDSA P-384 r||s, Hopper/Blackwell/LS10 */

/* NVIDIA opaque data (gpu_opaque_data_parser.hpp GpuOpaqueDataType). */
#define OD_DRIVER_VERSION	3
#define OD_VBIOS_VERSION	6
#define OD_CHIP_SKU		15
#define OD_PROJECT		17
#define OD_PROJECT_SKU		18
#define OD_CHIP_INFO		35
#define OD_MAX_TYPE		64	/* types we keep; others are skipped */
#define OD_MAGIC		"NVDAOD" /* optional header of newer firmware */
#define OD_HEADER_BYTES		12

const char *const evidence_chain_type_str[EVIDENCE_CHAIN_TYPE_MAX] = {
	[EVIDENCE_CHAIN_DEVICE] = "device",
	[EVIDENCE_CHAIN_RIM] = "rim",
};

const char *const evidence_kind_str[EVIDENCE_KIND_MAX] = {
	[EVIDENCE_GPU] = "gpu",
	[EVIDENCE_SWITCH] = "nvswitch",
	[EVIDENCE_CHAIN] = "chain",
};

static void
seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list	 ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- CertID hash algorithms -------------------------------------------- */

const char *const evidence_hash_str[EVIDENCE_HASH_MAX] = {
	[EVIDENCE_HASH_SHA1] = "sha1",
	[EVIDENCE_HASH_SHA256] = "sha256",
	[EVIDENCE_HASH_SHA384] = "sha384",
};

#define HASH_OID_MAX_BYTES	9
#define HASH_NAME_MAX_CHARS	16	/* longer is no name we know */

/* The content octets of each algorithm's OID (RFC 3279 2.2.1, RFC 5754 2). */
static const struct {
	uint8_t	 oid[HASH_OID_MAX_BYTES];
	size_t	 len;
} hash_oid[EVIDENCE_HASH_MAX] = {
	[EVIDENCE_HASH_SHA1] = { { 0x2b, 0x0e, 0x03, 0x02, 0x1a }, 5 },
	[EVIDENCE_HASH_SHA256] = { { 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04,
	    0x02, 0x01 }, 9 },
	[EVIDENCE_HASH_SHA384] = { { 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04,
	    0x02, 0x02 }, 9 },
};

static const EVP_MD *
hash_md(enum evidence_hash h)
{
	switch (h) {
	case EVIDENCE_HASH_SHA1:
		return EVP_sha1();
	case EVIDENCE_HASH_SHA256:
		return EVP_sha256();
	case EVIDENCE_HASH_SHA384:
		return EVP_sha384();
	default:
		return NULL;
	}
}

int
evidence_hashes_parse(const char *list, unsigned *set, char *err,
    size_t errlen)
{
	char		 name[HASH_NAME_MAX_CHARS];
	const char	*p, *e;
	size_t		 n, i;
	unsigned	 s = 0, h;

	if (list == NULL || *list == '\0') {
		seterr(err, errlen, "no hash algorithm given (sha1, sha256, "
		    "sha384)");
		return -1;
	}
	for (p = list;; p = e + 1) {
		if ((e = strchr(p, ',')) == NULL)
			e = p + strlen(p);
		if ((n = (size_t)(e - p)) == 0) {
			seterr(err, errlen, "\"%s\": an empty item", list);
			return -1;
		}
		/* nvattest spells them "sha-256"; either case */
		for (i = 0; i < n && i + 1 < sizeof(name); i++)
			name[i] = (char)tolower((unsigned char)p[i]);
		name[i] = '\0';
		if (strncmp(name, "sha-", 4) == 0)
			memmove(name + 3, name + 4, strlen(name + 4) + 1);
		for (h = 0; h < EVIDENCE_HASH_MAX; h++)
			if (n < sizeof(name) &&
			    strcmp(name, evidence_hash_str[h]) == 0)
				break;
		if (h == EVIDENCE_HASH_MAX) {
			seterr(err, errlen, "\"%.*s\": not a CertID hash "
			    "algorithm (sha1, sha256, sha384)", (int)n, p);
			return -1;
		}
		s |= EVIDENCE_HASH_BIT(h);
		if (*e == '\0')
			break;
	}
	*set = s;
	return 0;
}

int
evidence_certid_hash(const struct ocsp_certid *id)
{
	unsigned	 h;

	for (h = 0; h < EVIDENCE_HASH_MAX; h++)
		if (id->alg_oid_len == hash_oid[h].len &&
		    memcmp(id->alg_oid, hash_oid[h].oid, hash_oid[h].len) == 0)
			return (int)h;
	return -1;
}

/* Another algorithm's name: OpenSSL's short name in lower case, or the OID. */
static void
oid_name(const struct ocsp_certid *id, char *buf, size_t len)
{
	ASN1_OBJECT	*obj;
	uint8_t		 der[2 + 127];
	const uint8_t	*p = der;
	const char	*sn;
	size_t		 i;
	int		 nid;

	snprintf(buf, len, "?");
	if (id->alg_oid_len == 0 || id->alg_oid_len > 127)
		return;
	der[0] = V_ASN1_OBJECT;
	der[1] = (uint8_t)id->alg_oid_len;
	memcpy(der + 2, id->alg_oid, id->alg_oid_len);
	if ((obj = d2i_ASN1_OBJECT(NULL, &p, 2 + (long)id->alg_oid_len)) ==
	    NULL) {
		ERR_clear_error();
		return;
	}
	if ((nid = OBJ_obj2nid(obj)) != NID_undef &&
	    (sn = OBJ_nid2sn(nid)) != NULL) {
		snprintf(buf, len, "%s", sn);
		for (i = 0; buf[i] != '\0'; i++)
			buf[i] = (char)tolower((unsigned char)buf[i]);
	} else
		OBJ_obj2txt(buf, (int)len, obj, 1);
	ASN1_OBJECT_free(obj);
	ERR_clear_error();
}

void
evidence_req_hash_name(const struct ocsp_req *req, char *buf, size_t len)
{
	const struct ocsp_certid	*a;
	size_t				 i;
	int				 h;

	snprintf(buf, len, "?");
	if (req == NULL || req->ncertids == 0)
		return;
	a = &req->certids[0];
	for (i = 1; i < req->ncertids; i++)
		if (req->certids[i].alg_oid_len != a->alg_oid_len ||
		    memcmp(req->certids[i].alg_oid, a->alg_oid,
		    a->alg_oid_len) != 0) {
			snprintf(buf, len, "mixed");
			return;
		}
	if ((h = evidence_certid_hash(a)) >= 0)
		snprintf(buf, len, "%s", evidence_hash_str[h]);
	else
		oid_name(a, buf, len);
}

/* ---- the SPDM report and its opaque data ------------------------------- */

struct od_field {
	const uint8_t	*p;
	size_t		 len;
	int		 present;
};

static uint32_t
le(const uint8_t *p, size_t n)
{
	uint32_t	 v = 0;

	while (n-- > 0)
		v = v << 8 | p[n];
	return v;
}

/*
 * Split the report into its opaque data fields. Layout (DSP0274 1.1,
 * MEASUREMENTS): version, code, param1, param2, number of blocks,
 * record length (3, LE), record, nonce (32), opaque length (2, LE),
 * opaque data, signature. The opaque data is a list of (type u16,
 * [value type u16 after an NVDAOD header,] size u16, bytes), all LE.
 */
static int
report_fields(const uint8_t *rep, size_t len, struct od_field f[OD_MAX_TYPE],
    char *err, size_t errlen)
{
	const uint8_t	*r, *od;
	size_t		 rlen, off, olen, p, hdr = 0, tl, sz;
	unsigned	 type;

	memset(f, 0, sizeof(*f) * OD_MAX_TYPE);
	if (len > EVIDENCE_MAX_REPORT_BYTES) {
		seterr(err, errlen, "report of %zu bytes is too large", len);
		return -1;
	}
	if (len < SPDM_REQ_BYTES + 8 || rep[1] != SPDM_GET_MEASUREMENTS ||
	    (rep[0] & 0xf0) != 0x10) {
		seterr(err, errlen,
		    "not an SPDM GET_MEASUREMENTS request and response");
		return -1;
	}
	r = rep + SPDM_REQ_BYTES;
	rlen = len - SPDM_REQ_BYTES;
	if (r[1] != SPDM_MEASUREMENTS) {
		seterr(err, errlen, "not an SPDM MEASUREMENTS response "
		    "(code 0x%02x)", r[1]);
		return -1;
	}
	off = 8 + le(r + 5, 3);
	if (off + SPDM_NONCE_BYTES + 2 > rlen) {
		seterr(err, errlen, "report truncated (%zu bytes): the "
		    "measurement record runs past the end", len);
		return -1;
	}
	off += SPDM_NONCE_BYTES;
	olen = le(r + off, 2);
	off += 2;
	if (off + olen > rlen) {
		seterr(err, errlen, "report truncated (%zu bytes): the "
		    "opaque data runs past the end", len);
		return -1;
	}
	if (rlen - off - olen != SPDM_SIG_BYTES) {
		seterr(err, errlen, "report has %zu bytes after the opaque "
		    "data, expected a %d-byte signature", rlen - off - olen,
		    SPDM_SIG_BYTES);
		return -1;
	}
	od = r + off;
	p = 0;
	if (olen >= OD_HEADER_BYTES && memcmp(od, OD_MAGIC, 6) == 0) {
		if (le(od + 6, 2) != 0) {
			seterr(err, errlen, "opaque data profile %u is not "
			    "supported", (unsigned)le(od + 6, 2));
			return -1;
		}
		p = OD_HEADER_BYTES;
		hdr = 2;
	}
	tl = 4 + hdr;
	while (p < olen) {
		if (olen - p < tl) {
			seterr(err, errlen, "opaque data ends inside a field "
			    "header");
			return -1;
		}
		type = le(od + p, 2);
		sz = le(od + p + 2 + hdr, 2);
		p += tl;
		if (olen - p < sz) {
			seterr(err, errlen, "opaque field %u runs past the end "
			    "of the opaque data", type);
			return -1;
		}
		if (type < OD_MAX_TYPE) {
			if (f[type].present) {
				seterr(err, errlen, "opaque field %u appears "
				    "twice", type);
				return -1;
			}
			f[type].p = od + p;
			f[type].len = sz;
			f[type].present = 1;
		}
		p += sz;
	}
	return 0;
}

static const char *
od_name(unsigned type)
{
	switch (type) {
	case OD_DRIVER_VERSION:
		return "DRIVER_VERSION";
	case OD_VBIOS_VERSION:
		return "VBIOS_VERSION";
	case OD_CHIP_SKU:
		return "CHIP_SKU";
	case OD_PROJECT:
		return "PROJECT";
	case OD_PROJECT_SKU:
		return "PROJECT_SKU";
	case OD_CHIP_INFO:
		return "CHIP_INFO";
	}
	return "?";
}

/*
 * A string field: printable ASCII up to the first NUL, NULs only after
 * it (the SDK strips the terminators).
 */
static int
od_string(const struct od_field *f, unsigned type, char *buf, size_t buflen,
    char *err, size_t errlen)
{
	size_t	 i, n;

	if (!f[type].present) {
		seterr(err, errlen, "no %s (%u) in the opaque data",
		    od_name(type), type);
		return -1;
	}
	for (n = 0; n < f[type].len && f[type].p[n] != '\0'; n++)
		if (!isprint(f[type].p[n]) || f[type].p[n] > 0x7e)
			goto bad;
	for (i = n; i < f[type].len; i++)
		if (f[type].p[i] != '\0')
			goto bad;
	if (n == 0 || n >= buflen)
		goto bad;
	memcpy(buf, f[type].p, n);
	buf[n] = '\0';
	return 0;
 bad:
	seterr(err, errlen, "%s (%u) is not a short text field",
	    od_name(type), type);
	return -1;
}

/*
 * The GPU VBIOS version as nvattest prints it (gpu/evidence.cpp
 * get_vbios_version): the bytes reversed and hex-encoded; then the
 * second half of that string followed by the two digits just before
 * its middle, in dotted pairs, upper case. 00 a5 00 96 01 00 00 00
 * gives "96.00.A5.00.01".
 */
static int
gpu_vbios_version(const struct od_field *f, char *buf, size_t buflen,
    char *err, size_t errlen)
{
	char		 hex[2 * 16 + 1], tmp[sizeof(hex)];
	const uint8_t	*v = f[OD_VBIOS_VERSION].p;
	size_t		 n = f[OD_VBIOS_VERSION].len, i, half, t, o = 0;

	if (!f[OD_VBIOS_VERSION].present) {
		seterr(err, errlen, "no VBIOS_VERSION (6) in the opaque data");
		return -1;
	}
	if (n < 2 || n > 16) {
		seterr(err, errlen, "VBIOS_VERSION (6) has %zu bytes", n);
		return -1;
	}
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", v[n - 1 - i]);
	half = n;	/* hex has 2n digits */
	t = 0;
	memcpy(tmp, hex + half, 2 * n - half);
	t = 2 * n - half;
	memcpy(tmp + t, hex + half - 2, 2);
	t += 2;
	for (i = 0; i < t; i += 2) {
		if (o + 4 > buflen) {
			seterr(err, errlen, "VBIOS_VERSION (6) too long");
			return -1;
		}
		if (o > 0)
			buf[o++] = '.';
		buf[o++] = toupper((unsigned char)tmp[i]);
		if (i + 1 < t)
			buf[o++] = toupper((unsigned char)tmp[i + 1]);
	}
	buf[o] = '\0';
	return 0;
}

/* Copy src without dots (and upper-cased when `upper`). */
static void
undot(char *dst, size_t dstlen, const char *src, int upper)
{
	size_t	 o = 0;

	for (; *src != '\0' && o + 1 < dstlen; src++)
		if (*src != '.')
			dst[o++] = upper ? toupper((unsigned char)*src) : *src;
	dst[o] = '\0';
}

static int
is_gpu_arch(const char *a)
{
	return strcmp(a, "HOPPER") == 0 || strcmp(a, "BLACKWELL") == 0;
}

static int
is_switch_arch(const char *a)
{
	return strcmp(a, "LS10") == 0;
}

int
evidence_report_ids(const char *arch, const uint8_t *report, size_t len,
    struct evidence_device *d, char *err, size_t errlen)
{
	struct od_field	 f[OD_MAX_TYPE];
	char		 project[32], psku[32], csku[32], chip[32], v[64];
	int		 n;

	if (arch == NULL || report == NULL) {
		seterr(err, errlen, "no report");
		return -1;
	}
	if (!is_gpu_arch(arch) && !is_switch_arch(arch)) {
		seterr(err, errlen, "unsupported architecture \"%.20s\"", arch);
		return -1;
	}
	if (report_fields(report, len, f, err, errlen) == -1)
		return -1;
	if (is_switch_arch(arch)) {
		/* switch/evidence.cpp: a text field, e.g. "96.10.55.00.01". */
		if (od_string(f, OD_VBIOS_VERSION, d->vbios_version,
		    sizeof(d->vbios_version), err, errlen) == -1)
			return -1;
		undot(v, sizeof(v), d->vbios_version, 1);
		/* LS10: SwitchArchitectureData fixes project 5612, SKU 0002, chip 890. */
		n = snprintf(d->vbios_rim_id, sizeof(d->vbios_rim_id),
		    "NV_SWITCH_BIOS_5612_0002_890_%s", v);
		d->driver_version[0] = '\0';
		d->driver_rim_id[0] = '\0';
	} else {
		if (od_string(f, OD_DRIVER_VERSION, d->driver_version,
		    sizeof(d->driver_version), err, errlen) == -1 ||
		    gpu_vbios_version(f, d->vbios_version,
		    sizeof(d->vbios_version), err, errlen) == -1 ||
		    od_string(f, OD_PROJECT, project, sizeof(project), err,
		    errlen) == -1 ||
		    od_string(f, OD_PROJECT_SKU, psku, sizeof(psku), err,
		    errlen) == -1 ||
		    od_string(f, OD_CHIP_SKU, csku, sizeof(csku), err,
		    errlen) == -1)
			return -1;
		if (strcmp(arch, "HOPPER") == 0)
			snprintf(d->driver_rim_id, sizeof(d->driver_rim_id),
			    "NV_GPU_DRIVER_GH100_%s", d->driver_version);
		else {
			/* Blackwell: the chip from CHIP_INFO, GB100 without it. */
			if (!f[OD_CHIP_INFO].present)
				snprintf(chip, sizeof(chip), "GB100");
			else if (od_string(f, OD_CHIP_INFO, chip,
			    sizeof(chip), err, errlen) == -1)
				return -1;
			snprintf(d->driver_rim_id, sizeof(d->driver_rim_id),
			    "NV_GPU_CC_DRIVER_%s_%s", chip, d->driver_version);
		}
		/* The vbios digits keep their case; only dots go. */
		undot(v, sizeof(v), d->vbios_version, 0);
		n = snprintf(d->vbios_rim_id, sizeof(d->vbios_rim_id),
		    "NV_GPU_VBIOS_%s_%s_%s_%s", project, psku, csku, v);
		if (!rim_id_valid(d->driver_rim_id)) {
			seterr(err, errlen, "driver RIM ID \"%.80s\" is not a "
			    "valid RIM ID", d->driver_rim_id);
			return -1;
		}
	}
	if (n < 0 || (size_t)n >= sizeof(d->vbios_rim_id) ||
	    !rim_id_valid(d->vbios_rim_id)) {
		seterr(err, errlen, "VBIOS RIM ID \"%.80s\" is not a valid "
		    "RIM ID", d->vbios_rim_id);
		return -1;
	}
	return 0;
}

/* ---- certificates and CertIDs ------------------------------------------ */

static int
is_self_signed(X509 *x)
{
	EVP_PKEY	*k = X509_get0_pubkey(x);

	return X509_check_issued(x, x) == X509_V_OK && k != NULL &&
	    X509_verify(x, k) == 1;
}

void
evidence_certids_free(struct evidence_certid *c, size_t n)
{
	size_t	 i;

	if (c == NULL)
		return;
	for (i = 0; i < n; i++)
		free(c[i].req);
	free(c);
}

/*
 * The CertID of the certificate numbered `serial` under `issuer`, as
 * RFC 6960 4.1.1 and `openssl ocsp -sha1|-sha256|-sha384 -issuer -cert`
 * make it: the hash of the issuer's DER subject name, the hash of its
 * subjectPublicKey BIT STRING content, the serial. The request is then
 * built by OpenSSL (OCSP_cert_id_new, what OCSP_cert_to_id calls) and
 * parsed back, and must carry the same algorithm and values. c->subject
 * and c->chain are the caller's.
 */
static int
certid_build(X509 *issuer, const ASN1_INTEGER *serial, enum evidence_hash h,
    struct evidence_certid *c, char *err, size_t errlen)
{
	OCSP_REQUEST	*req = NULL;
	OCSP_CERTID	*id = NULL;
	const EVP_MD	*md = hash_md(h);
	struct ocsp_req	 parsed;
	const struct ocsp_certid *pc = &parsed.certids[0];
	const char	*why, *what = c->subject[0] != '\0' ? c->subject :
			    "CertID";
	uint8_t		 nonce[EVIDENCE_NONCE_BYTES], *der = NULL, *q;
	unsigned char	*ser = NULL, *nm = NULL;
	unsigned int	 nl = 0, kl = 0;
	int		 n, sl, rv = -1;

	c->hash = h;
	if (md == NULL ||
	    (n = i2d_X509_NAME(X509_get_subject_name(issuer), &nm)) <= 0 ||
	    EVP_Digest(nm, (size_t)n, c->name_hash, &nl, md, NULL) != 1 ||
	    X509_pubkey_digest(issuer, md, c->key_hash, &kl) != 1 ||
	    nl != kl) {
		seterr(err, errlen, "%s: cannot hash its issuer", what);
		goto out;
	}
	c->hash_len = nl;
	/* The serial's INTEGER content octets: DER minus tag and length. */
	if ((sl = i2d_ASN1_INTEGER(serial, &ser)) < 3 ||
	    ser[1] >= 0x80 || (size_t)ser[1] != (size_t)sl - 2 ||
	    (size_t)ser[1] > sizeof(c->serial)) {
		seterr(err, errlen, "%s: serial number too long", what);
		goto out;
	}
	memcpy(c->serial, ser + 2, ser[1]);
	c->serial_len = ser[1];

	if ((req = OCSP_REQUEST_new()) == NULL ||
	    (id = OCSP_cert_id_new(md, X509_get_subject_name(issuer),
	    X509_get0_pubkey_bitstr(issuer), serial)) == NULL ||
	    OCSP_request_add0_id(req, id) == NULL)
		goto nomem;
	id = NULL;
	if (RAND_bytes(nonce, sizeof(nonce)) != 1 ||
	    OCSP_request_add1_nonce(req, nonce, sizeof(nonce)) != 1)
		goto nomem;
	if ((n = i2d_OCSP_REQUEST(req, NULL)) <= 0 ||
	    (der = malloc(n)) == NULL)
		goto nomem;
	q = der;
	if (i2d_OCSP_REQUEST(req, &q) != n)
		goto nomem;
	if (ocsp_req_parse(der, (size_t)n, &parsed, &why) == -1 ||
	    parsed.ncertids != 1 || evidence_certid_hash(pc) != (int)h ||
	    pc->name_hash_len != c->hash_len ||
	    pc->key_hash_len != c->hash_len ||
	    memcmp(pc->name_hash, c->name_hash, c->hash_len) != 0 ||
	    memcmp(pc->key_hash, c->key_hash, c->hash_len) != 0 ||
	    pc->serial_len != c->serial_len ||
	    memcmp(pc->serial, c->serial, c->serial_len) != 0) {
		seterr(err, errlen, "%s: OpenSSL built a different CertID",
		    what);
		goto out;
	}
	ocsp_req_key(&parsed, c->key);
	c->req = der;
	c->req_len = (size_t)n;
	der = NULL;
	rv = 0;
	goto out;
 nomem:
	seterr(err, errlen, "%s: cannot build its %s OCSP request", what,
	    evidence_hash_str[h]);
 out:
	free(der);
	OPENSSL_free(ser);
	OPENSSL_free(nm);
	OCSP_CERTID_free(id);
	OCSP_REQUEST_free(req);
	ERR_clear_error();
	return rv;
}

/* The CertID of `subject` under `issuer` in hash h. */
static int
certid_make(X509 *subject, X509 *issuer, enum evidence_chain_type type,
    enum evidence_hash h, struct evidence_certid *c, char *err,
    size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->chain = type;
	util_name_rfc2253(X509_get_subject_name(subject), c->subject,
	    sizeof(c->subject));
	return certid_build(issuer, X509_get0_serialNumber(subject), h, c, err,
	    errlen);
}

/* Is x the issuer a CertID in hash h names? */
static int
names_issuer(X509 *x, const struct ocsp_certid *id, enum evidence_hash h)
{
	uint8_t		 md[EVP_MAX_MD_SIZE];
	unsigned int	 n;

	if (X509_NAME_digest(X509_get_subject_name(x), hash_md(h), md,
	    &n) != 1 || n != id->name_hash_len ||
	    memcmp(md, id->name_hash, n) != 0)
		return 0;
	if (X509_pubkey_digest(x, hash_md(h), md, &n) != 1 ||
	    n != id->key_hash_len || memcmp(md, id->key_hash, n) != 0)
		return 0;
	return 1;
}

int
evidence_certid_rehash(const struct ocsp_certid *id,
    STACK_OF(X509) *const cands[], size_t ncands, enum evidence_hash h,
    struct evidence_certid *out, char *err, size_t errlen)
{
	ASN1_INTEGER	*serial;
	X509		*issuer = NULL, *x;
	uint8_t		 ider[2 + EVIDENCE_MAX_SERIAL_BYTES];
	const uint8_t	*p = ider;
	size_t		 i;
	int		 from, j, rv;

	memset(out, 0, sizeof(*out));
	out->chain = EVIDENCE_CHAIN_DEVICE;
	if (id == NULL || (from = evidence_certid_hash(id)) < 0 ||
	    (unsigned)h >= EVIDENCE_HASH_MAX || id->serial_len == 0 ||
	    id->serial_len > EVIDENCE_MAX_SERIAL_BYTES)
		return 1;
	for (i = 0; i < ncands && issuer == NULL; i++)
		for (j = 0; j < sk_X509_num(cands[i]) && issuer == NULL; j++)
			if (names_issuer((x = sk_X509_value(cands[i], j)), id,
			    (enum evidence_hash)from))
				issuer = x;
	ERR_clear_error();
	if (issuer == NULL)
		return 1;
	ider[0] = V_ASN1_INTEGER;
	ider[1] = (uint8_t)id->serial_len;
	memcpy(ider + 2, id->serial, id->serial_len);
	if ((serial = d2i_ASN1_INTEGER(NULL, &p, 2 + (long)id->serial_len)) ==
	    NULL) {
		seterr(err, errlen, "a CertID serial that is not an INTEGER");
		ERR_clear_error();
		return -1;
	}
	rv = certid_build(issuer, serial, h, out, err, errlen);
	ASN1_INTEGER_free(serial);
	return rv;
}

/* Check each link of a leaf-first chain and that it ends at a root. */
static int
chain_check(STACK_OF(X509) *sk, char *err, size_t errlen)
{
	char		 a[128], b[128];
	X509		*x, *up;
	EVP_PKEY	*k;
	int		 i, n = sk_X509_num(sk);

	if (n < 2) {
		seterr(err, errlen, "a chain of %d certificate%s: need the "
		    "leaf to the root", n, n == 1 ? "" : "s");
		return -1;
	}
	if (n > EVIDENCE_MAX_CHAIN_CERTS) {
		seterr(err, errlen, "a chain of %d certificates (at most %d)",
		    n, EVIDENCE_MAX_CHAIN_CERTS);
		return -1;
	}
	for (i = 0; i + 1 < n; i++) {
		x = sk_X509_value(sk, i);
		up = sk_X509_value(sk, i + 1);
		k = X509_get0_pubkey(up);
		if (X509_check_issued(up, x) != X509_V_OK || k == NULL ||
		    X509_verify(x, k) != 1) {
			util_name_rfc2253(X509_get_subject_name(x), a, sizeof(a));
			util_name_rfc2253(X509_get_subject_name(up), b, sizeof(b));
			seterr(err, errlen, "certificate %d (%s) is not issued "
			    "by certificate %d (%s)", i + 1, a, i + 2, b);
			ERR_clear_error();
			return -1;
		}
	}
	if (!is_self_signed(sk_X509_value(sk, n - 1))) {
		util_name_rfc2253(X509_get_subject_name(sk_X509_value(sk, n - 1)),
		    a, sizeof(a));
		seterr(err, errlen, "the last certificate (%s) is not a "
		    "self-signed root", a);
		ERR_clear_error();
		return -1;
	}
	return 0;
}

static int
sk_certids(enum evidence_chain_type type, unsigned hashes, STACK_OF(X509) *sk,
    struct evidence_certid **out, size_t *nout, char *err, size_t errlen)
{
	struct evidence_certid	*c = NULL;
	int			 i, n, first;
	size_t			 k = 0, nh = 0;
	unsigned		 h;

	*out = NULL;
	*nout = 0;
	if ((unsigned)type >= EVIDENCE_CHAIN_TYPE_MAX) {
		seterr(err, errlen, "unknown chain type");
		return -1;
	}
	if (hashes == 0 || (hashes & ~EVIDENCE_HASHES_ALL) != 0) {
		seterr(err, errlen, "no CertID hash algorithm chosen");
		return -1;
	}
	for (h = 0; h < EVIDENCE_HASH_MAX; h++)
		if (hashes & EVIDENCE_HASH_BIT(h))
			nh++;
	if (chain_check(sk, err, errlen) == -1)
		return -1;
	n = sk_X509_num(sk);
	/* nv_x509.cpp: the root is never asked about; nor a device leaf. */
	first = type == EVIDENCE_CHAIN_DEVICE ? 1 : 0;
	if (n - 1 > first && (c = calloc((size_t)(n - 1 - first) * nh,
	    sizeof(*c))) == NULL) {
		seterr(err, errlen, "out of memory");
		return -1;
	}
	/* From the root down, the order nvattest asks in; each in every hash. */
	for (i = n - 2; i >= first; i--) {
		for (h = 0; h < EVIDENCE_HASH_MAX; h++) {
			if (!(hashes & EVIDENCE_HASH_BIT(h)))
				continue;
			if (certid_make(sk_X509_value(sk, i),
			    sk_X509_value(sk, i + 1), type,
			    (enum evidence_hash)h, &c[k], err, errlen) == -1) {
				evidence_certids_free(c, k);
				return -1;
			}
			k++;
		}
	}
	*out = c;
	*nout = k;
	return 0;
}

static STACK_OF(X509) *
der_stack(const uint8_t *const der[], const size_t len[], size_t n, char *err,
    size_t errlen)
{
	STACK_OF(X509)	*sk;
	const char	*why;
	X509		*x;
	size_t		 i;

	if ((sk = sk_X509_new_null()) == NULL) {
		seterr(err, errlen, "out of memory");
		return NULL;
	}
	for (i = 0; i < n; i++) {
		/* raw bytes checked by der_cert_check, then parsed */
		why = "out of memory";
		if ((x = der_x509(der[i], len[i], &why)) == NULL ||
		    sk_X509_push(sk, x) == 0) {
			X509_free(x);
			seterr(err, errlen, "certificate %zu: %s", i + 1, why);
			sk_X509_pop_free(sk, X509_free);
			ERR_clear_error();
			return NULL;
		}
	}
	return sk;
}

int
evidence_chain_certids(enum evidence_chain_type type, unsigned hashes,
    const uint8_t *const der[], const size_t len[], size_t n,
    struct evidence_certid **out, size_t *nout, char *err, size_t errlen)
{
	STACK_OF(X509)	*sk;
	int		 rv;

	*out = NULL;
	*nout = 0;
	if (n > EVIDENCE_MAX_CHAIN_CERTS) {
		seterr(err, errlen, "a chain of %zu certificates (at most %d)",
		    n, EVIDENCE_MAX_CHAIN_CERTS);
		return -1;
	}
	if ((sk = der_stack(der, len, n, err, errlen)) == NULL)
		return -1;
	rv = sk_certids(type, hashes, sk, out, nout, err, errlen);
	sk_X509_pop_free(sk, X509_free);
	return rv;
}

uint8_t *
evidence_ocsp_request(const struct evidence_certid *c, const uint8_t *nonce,
    size_t nonce_len, size_t *outlen)
{
	uint8_t	 rnd[EVIDENCE_NONCE_BYTES];

	if (c == NULL || c->req == NULL || outlen == NULL)
		return NULL;
	if (nonce == NULL) {
		if (RAND_bytes(rnd, sizeof(rnd)) != 1)
			return NULL;
		nonce = rnd;
		nonce_len = sizeof(rnd);
	}
	return ocsp_req_renonce(c->req, c->req_len, nonce, nonce_len, outlen);
}

/* Read every certificate of a PEM text; none, or a broken one, is an error. */
static STACK_OF(X509) *
pem_stack(const char *pem, size_t len, char *err, size_t errlen)
{
	STACK_OF(X509)	*sk = NULL;
	BIO		*bio = NULL;
	X509		*x;
	const char	*why;

	if (len > INT32_MAX || (sk = sk_X509_new_null()) == NULL ||
	    (bio = BIO_new_mem_buf(pem, (int)len)) == NULL) {
		seterr(err, errlen, "out of memory");
		goto fail;
	}
	for (;;) {
		/* raw bytes checked by der_cert_check, then parsed */
		if ((x = der_pem_x509(bio, &why)) == NULL) {
			if (why == NULL && sk_X509_num(sk) > 0)
				break;
			if (why == NULL)
				seterr(err, errlen, "no PEM certificate in it");
			else
				seterr(err, errlen, "PEM certificate %d is "
				    "malformed: %s", sk_X509_num(sk) + 1, why);
			goto fail;
		}
		if (sk_X509_num(sk) == EVIDENCE_MAX_CHAIN_CERTS ||
		    sk_X509_push(sk, x) == 0) {
			X509_free(x);
			seterr(err, errlen, "more than %d certificates",
			    EVIDENCE_MAX_CHAIN_CERTS);
			goto fail;
		}
	}
	ERR_clear_error();
	BIO_free(bio);
	return sk;
 fail:
	ERR_clear_error();
	BIO_free(bio);
	sk_X509_pop_free(sk, X509_free);
	return NULL;
}

/*
 * The "certificate" field must be PEM blocks and whitespace only: a PEM
 * reader skips text it does not recognise, so a damaged BEGIN line would
 * otherwise drop a certificate silently and shift the chain.
 */
static int
pem_only(const char *pem, size_t len, char *err, size_t errlen)
{
	static const char	 b[] = "-----BEGIN CERTIFICATE-----";
	static const char	 e[] = "-----END CERTIFICATE-----";
	const char		*p = pem, *end = pem + len, *q;

	while (p < end) {
		if (isspace((unsigned char)*p)) {
			p++;
			continue;
		}
		if ((size_t)(end - p) < sizeof(b) - 1 ||
		    memcmp(p, b, sizeof(b) - 1) != 0 ||
		    (q = memmem(p, (size_t)(end - p), e, sizeof(e) - 1)) ==
		    NULL) {
			seterr(err, errlen, "not only PEM certificates (at "
			    "byte %zu)", (size_t)(p - pem));
			return -1;
		}
		p = q + sizeof(e) - 1;
	}
	return 0;
}

/* A chain under the pinned CoRIM root is a RIM chain; anything else a device chain. */
static enum evidence_chain_type
classify(STACK_OF(X509) *sk)
{
	X509		*root = sk_X509_value(sk, sk_X509_num(sk) - 1);
	unsigned char	 md[32];
	char		 hex[65];
	unsigned int	 n, i;

	if (root == NULL || X509_digest(root, EVP_sha256(), md, &n) != 1 ||
	    n != sizeof(md))
		return EVIDENCE_CHAIN_DEVICE;
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02X", md[i]);
	return strcmp(hex, CORIM_ROOT_SHA256) == 0 ? EVIDENCE_CHAIN_RIM :
	    EVIDENCE_CHAIN_DEVICE;
}

/* ---- the manifest ------------------------------------------------------- */

/* One parsed device, not yet in the manifest. */
struct pending {
	struct evidence_device	 dev;
	struct evidence_certid	*ids;
	size_t			 nids;
	STACK_OF(X509)		*chain;
};

static void
pending_free(struct pending *p, size_t n)
{
	size_t	 i;

	if (p == NULL)
		return;
	for (i = 0; i < n; i++) {
		evidence_certids_free(p[i].ids, p[i].nids);
		sk_X509_pop_free(p[i].chain, X509_free);
	}
	free(p);
}

struct evidence_manifest *
evidence_manifest_new(void)
{
	struct evidence_manifest	*m;

	if ((m = calloc(1, sizeof(*m))) != NULL)
		m->hashes = EVIDENCE_HASHES_DEFAULT;
	return m;
}

void
evidence_manifest_free(struct evidence_manifest *m)
{
	size_t	 i;

	if (m == NULL)
		return;
	for (i = 0; i < m->ncertids; i++)
		free(m->certids[i].req);
	for (i = 0; i < m->ncas; i++)
		free(m->ca_der[i]);
	free(m->devices);
	free(m->certids);
	free(m->ca_der);
	free(m->ca_len);
	free(m->rim_ids);
	free(m);
}

static int
grow(void **p, size_t have, size_t more, size_t size)
{
	void	*n;

	if (more == 0)
		return 0;
	if (have + more < have || have + more > SIZE_MAX / size)
		return -1;
	if ((n = realloc(*p, (have + more) * size)) == NULL)
		return -1;
	*p = n;
	return 0;
}

static int
has_rim_id(const struct evidence_manifest *m, const char *id)
{
	size_t	 i;

	for (i = 0; i < m->nrim_ids; i++)
		if (strcmp(m->rim_ids[i], id) == 0)
			return 1;
	return 0;
}

static size_t
find_certid(const struct evidence_manifest *m, const struct evidence_certid *c)
{
	size_t	 i;

	for (i = 0; i < m->ncertids; i++)
		if (m->certids[i].hash == c->hash &&
		    m->certids[i].hash_len == c->hash_len &&
		    memcmp(m->certids[i].name_hash, c->name_hash,
		    c->hash_len) == 0 &&
		    memcmp(m->certids[i].key_hash, c->key_hash,
		    c->hash_len) == 0 &&
		    m->certids[i].serial_len == c->serial_len &&
		    memcmp(m->certids[i].serial, c->serial, c->serial_len) == 0)
			return i;
	return SIZE_MAX;
}

static int
has_ca(const struct evidence_manifest *m, const uint8_t *der, size_t len)
{
	size_t	 i;

	for (i = 0; i < m->ncas; i++)
		if (m->ca_len[i] == len && memcmp(m->ca_der[i], der, len) == 0)
			return 1;
	return 0;
}

/*
 * Move parsed devices into the manifest. Space is reserved first, so
 * once that succeeds nothing can fail and the manifest is never half
 * updated.
 */
static int
commit(struct evidence_manifest *m, struct pending *p, size_t np, char *err,
    size_t errlen)
{
	uint8_t		**ders = NULL, *d;
	size_t		*dlens = NULL, i, j, k, nc = 0, nca = 0, idx;
	int		 l, dl, rv = -1;

	for (i = 0; i < np; i++) {
		nc += p[i].nids;
		nca += (size_t)sk_X509_num(p[i].chain);
	}
	if (nca > 0 && ((ders = calloc(nca, sizeof(*ders))) == NULL ||
	    (dlens = calloc(nca, sizeof(*dlens))) == NULL))
		goto nomem;
	/* DER of the CA certificates: not leaves, not self-signed roots. */
	for (i = 0, k = 0; i < np; i++) {
		for (l = 1; l < sk_X509_num(p[i].chain); l++) {
			X509	*x = sk_X509_value(p[i].chain, l);

			if (X509_check_ca(x) <= 0 || is_self_signed(x))
				continue;
			d = NULL;
			if ((dl = i2d_X509(x, &d)) <= 0)
				goto nomem;
			ders[k] = d;
			dlens[k++] = (size_t)dl;
		}
	}
	nca = k;
	if (grow((void **)&m->devices, m->ndevices, np,
	    sizeof(*m->devices)) == -1 ||
	    grow((void **)&m->certids, m->ncertids, nc,
	    sizeof(*m->certids)) == -1 ||
	    grow((void **)&m->ca_der, m->ncas, nca, sizeof(*m->ca_der)) == -1 ||
	    grow((void **)&m->ca_len, m->ncas, nca, sizeof(*m->ca_len)) == -1 ||
	    grow((void **)&m->rim_ids, m->nrim_ids, 2 * np,
	    sizeof(*m->rim_ids)) == -1)
		goto nomem;

	/* From here on nothing fails. */
	for (i = 0; i < np; i++) {
		struct evidence_device	*dev = &p[i].dev;

		dev->ncertids = 0;
		for (j = 0; j < p[i].nids; j++) {
			if ((idx = find_certid(m, &p[i].ids[j])) == SIZE_MAX) {
				idx = m->ncertids++;
				m->certids[idx] = p[i].ids[j];
				p[i].ids[j].req = NULL;	/* moved */
			}
			dev->certid[dev->ncertids++] = idx;
		}
		if (dev->driver_rim_id[0] != '\0' &&
		    !has_rim_id(m, dev->driver_rim_id))
			memcpy(m->rim_ids[m->nrim_ids++], dev->driver_rim_id,
			    EVIDENCE_ID_BYTES);
		if (dev->vbios_rim_id[0] != '\0' &&
		    !has_rim_id(m, dev->vbios_rim_id))
			memcpy(m->rim_ids[m->nrim_ids++], dev->vbios_rim_id,
			    EVIDENCE_ID_BYTES);
		m->devices[m->ndevices++] = *dev;
	}
	for (k = 0; k < nca; k++) {
		if (has_ca(m, ders[k], dlens[k])) {
			free(ders[k]);
			ders[k] = NULL;
			continue;
		}
		m->ca_der[m->ncas] = ders[k];
		m->ca_len[m->ncas] = dlens[k];
		m->ncas++;
		ders[k] = NULL;
	}
	rv = 0;
	goto out;
 nomem:
	seterr(err, errlen, "out of memory");
 out:
	if (ders != NULL)
		for (k = 0; k < nca; k++)
			free(ders[k]);
	free(ders);
	free(dlens);
	ERR_clear_error();
	return rv;
}

/* Fill p from its chain: CertIDs of the chain type, in the manifest's hashes. */
static int
pending_certids(const struct evidence_manifest *m, struct pending *p,
    enum evidence_chain_type type, char *err, size_t errlen)
{
	return sk_certids(type, m->hashes, p->chain, &p->ids, &p->nids, err,
	    errlen);
}

static int
json_str(json_t *o, const char *key, size_t i, const char **out, char *err,
    size_t errlen)
{
	json_t	*v = json_object_get(o, key);

	if (v == NULL) {
		seterr(err, errlen, "evidence[%zu]: no \"%s\"", i, key);
		return -1;
	}
	if (!json_is_string(v)) {
		seterr(err, errlen, "evidence[%zu].%s: not a string", i, key);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}

/* One evidence object of a JSON array into p. */
static int
parse_object(const struct evidence_manifest *m, json_t *o, size_t i,
    struct pending *p, char *err, size_t errlen)
{
	const char	*arch, *cert, *ev;
	uint8_t		*pem = NULL, *rep = NULL;
	size_t		 pemlen, replen;
	char		 why[200];
	int		 rv = -1;

	if (!json_is_object(o)) {
		seterr(err, errlen, "evidence[%zu]: not an object", i);
		return -1;
	}
	if (json_str(o, "arch", i, &arch, err, errlen) == -1 ||
	    json_str(o, "certificate", i, &cert, err, errlen) == -1 ||
	    json_str(o, "evidence", i, &ev, err, errlen) == -1)
		return -1;
	if (is_gpu_arch(arch))
		p->dev.kind = EVIDENCE_GPU;
	else if (is_switch_arch(arch))
		p->dev.kind = EVIDENCE_SWITCH;
	else {
		seterr(err, errlen, "evidence[%zu].arch: unsupported "
		    "architecture \"%.20s\" (HOPPER, BLACKWELL or LS10)", i,
		    arch);
		return -1;
	}
	snprintf(p->dev.arch, sizeof(p->dev.arch), "%s", arch);
	snprintf(p->dev.source, sizeof(p->dev.source), "evidence[%zu]", i);
	if ((pem = b64_decode(cert, strlen(cert), &pemlen)) == NULL) {
		seterr(err, errlen, "evidence[%zu].certificate: not base64", i);
		goto out;
	}
	if (pem_only((const char *)pem, pemlen, why, sizeof(why)) == -1 ||
	    (p->chain = pem_stack((const char *)pem, pemlen, why,
	    sizeof(why))) == NULL) {
		seterr(err, errlen, "evidence[%zu].certificate: %s", i, why);
		goto out;
	}
	if (pending_certids(m, p, EVIDENCE_CHAIN_DEVICE, why,
	    sizeof(why)) == -1) {
		seterr(err, errlen, "evidence[%zu].certificate: %s", i, why);
		goto out;
	}
	if ((rep = b64_decode(ev, strlen(ev), &replen)) == NULL) {
		seterr(err, errlen, "evidence[%zu].evidence: not base64", i);
		goto out;
	}
	if (evidence_report_ids(arch, rep, replen, &p->dev, why,
	    sizeof(why)) == -1) {
		seterr(err, errlen, "evidence[%zu].evidence: %s", i, why);
		goto out;
	}
	rv = 0;
 out:
	free(pem);
	free(rep);
	return rv;
}

static int	add_b64_chain(struct evidence_manifest *, const char *, size_t,
		    char *, size_t);

static int
add_json(struct evidence_manifest *m, const uint8_t *buf, size_t len,
    char *err, size_t errlen)
{
	json_t		*root, *arr, *rc;
	json_error_t	 jerr;
	struct pending	*p = NULL;
	size_t		 i, n = 0;
	int		 rv = -1;

	if ((root = json_loadb((const char *)buf, len, JSON_DECODE_ANY,
	    &jerr)) == NULL) {
		seterr(err, errlen, "not valid JSON, truncated or corrupt: %s "
		    "(line %d, column %d)", jerr.text, jerr.line, jerr.column);
		return -1;
	}
	arr = root;
	if (json_is_string(root)) {
		/* an evidence's "certificate" on its own, as jq prints it */
		rv = add_b64_chain(m, json_string_value(root),
		    json_string_length(root), err, errlen);
		json_decref(root);
		return rv;
	}
	if (json_is_object(root) && json_object_get(root, "evidences") == NULL &&
	    json_object_get(root, "claims") != NULL) {
		seterr(err, errlen, "nvattest attest output: it holds claims "
		    "(what nvattest concluded) and no certificates; give the "
		    "output of `nvattest collect-evidence --format json`, or "
		    "the device's certificate chain (PEM, DER, or the "
		    "evidence's base64 \"certificate\")");
		goto out;
	}
	if (json_is_object(root) && json_object_get(root, "evidences") == NULL &&
	    json_object_get(root, "result_code") == NULL &&
	    json_object_get(root, "certificate") != NULL) {
		/* one evidence object, as one element of the array */
		if ((arr = json_array()) == NULL ||
		    json_array_append(arr, root) == -1) {
			json_decref(arr);
			seterr(err, errlen, "out of memory");
			goto out;
		}
		json_decref(root);
		root = arr;
	} else if (json_is_object(root)) {
		/* nvattest collect-evidence --format json */
		arr = json_object_get(root, "evidences");
		rc = json_object_get(root, "result_code");
		if (arr == NULL && rc == NULL) {
			seterr(err, errlen, "a JSON object that is neither an "
			    "evidence object (no \"certificate\") nor nvattest "
			    "collect-evidence output (no \"evidences\")");
			goto out;
		}
		if ((rc != NULL && (!json_is_integer(rc) ||
		    json_integer_value(rc) != 0)) || json_is_null(arr) ||
		    arr == NULL) {
			seterr(err, errlen, "nvattest collect-evidence output "
			    "without evidence (result_code %lld)",
			    rc != NULL && json_is_integer(rc) ?
			    (long long)json_integer_value(rc) : -1LL);
			goto out;
		}
	}
	if (!json_is_array(arr)) {
		seterr(err, errlen, "not evidence JSON (an array of evidence "
		    "objects, one evidence object, or collect-evidence output)");
		goto out;
	}
	n = json_array_size(arr);
	if (n == 0) {
		seterr(err, errlen, "an empty array: no evidence");
		goto out;
	}
	if (n > EVIDENCE_MAX_DEVICES) {
		seterr(err, errlen, "%zu evidence objects (at most %d)", n,
		    EVIDENCE_MAX_DEVICES);
		goto out;
	}
	if ((p = calloc(n, sizeof(*p))) == NULL) {
		seterr(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++)
		if (parse_object(m, json_array_get(arr, i), i, &p[i], err,
		    errlen) == -1)
			goto out;
	if (commit(m, p, n, err, errlen) == -1)
		goto out;
	rv = (int)n;
 out:
	pending_free(p, n);
	json_decref(root);
	return rv;
}

/*
 * Concatenated DER certificates, leaf first: each a SEQUENCE whose
 * length its header gives, checked by der_x509, nothing between or after.
 */
static STACK_OF(X509) *
der_chain_stack(const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	STACK_OF(X509)	*sk;
	struct der	 d = { buf, len }, v, tlv;
	const char	*why = "out of memory";
	X509		*x = NULL;

	if ((sk = sk_X509_new_null()) == NULL)
		goto fail;
	while (d.len > 0) {
		if (sk_X509_num(sk) == EVIDENCE_MAX_CHAIN_CERTS) {
			why = "more than " EVIDENCE_MAX_CHAIN_CERTS_STR
			    " certificates";
			goto fail;
		}
		why = "not a DER SEQUENCE (truncated, or something else "
		    "after the certificates)";
		if (der_expect_tlv(&d, DER_SEQUENCE, &v, &tlv) == -1 ||
		    (x = der_x509(tlv.p, tlv.len, &why)) == NULL)
			goto fail;
		if (sk_X509_push(sk, x) == 0) {
			why = "out of memory";
			goto fail;
		}
		x = NULL;
	}
	return sk;
 fail:
	seterr(err, errlen, "DER certificate %d: %s", sk != NULL ?
	    sk_X509_num(sk) + 1 : 1, why);
	X509_free(x);
	sk_X509_pop_free(sk, X509_free);
	ERR_clear_error();
	return NULL;
}

enum chain_form { FORM_PEM, FORM_DER };

/* A bare chain (PEM or concatenated DER) as one device of kind "chain". */
static int
add_chain(struct evidence_manifest *m, enum chain_form form, const char *what,
    const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	struct pending	*p;
	char		 why[200];
	int		 rv = -1;

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		seterr(err, errlen, "out of memory");
		return -1;
	}
	p->dev.kind = EVIDENCE_CHAIN;
	snprintf(p->dev.source, sizeof(p->dev.source), "chain");
	if ((p->chain = form == FORM_PEM ? pem_stack((const char *)buf, len,
	    why, sizeof(why)) : der_chain_stack(buf, len, why, sizeof(why))) ==
	    NULL) {
		seterr(err, errlen, "%s: %s", what, why);
		goto out;
	}
	if (pending_certids(m, p, classify(p->chain), why,
	    sizeof(why)) == -1) {
		seterr(err, errlen, "%s: %s", what, why);
		goto out;
	}
	if (commit(m, p, 1, err, errlen) == -1)
		goto out;
	rv = 1;
 out:
	pending_free(p, 1);
	return rv;
}

static const char	 pem_begin[] = "-----BEGIN CERTIFICATE-----";
static const char	 not_input[] = "neither evidence JSON (an array of "
			    "evidence objects, one evidence object, or nvattest "
			    "collect-evidence output) nor a certificate chain (PEM, "
			    "DER, or base64 of either)";

/* Is this text base64 and whitespace only (what a "certificate" field holds)? */
static int
is_b64_text(const uint8_t *buf, size_t len)
{
	size_t	i, n = 0;

	for (i = 0; i < len; i++) {
		if (isspace(buf[i]))
			continue;
		if (!isalnum(buf[i]) && buf[i] != '+' && buf[i] != '/' &&
		    buf[i] != '=')
			return 0;
		n++;
	}
	return n > 0;
}

/*
 * The base64 of a chain: of its PEM (an evidence's "certificate" field
 * on its own) or of its DER certificates.
 */
static int
add_b64_chain(struct evidence_manifest *m, const char *s, size_t len,
    char *err, size_t errlen)
{
	uint8_t	*raw;
	size_t	 rawlen;
	int	 rv;

	if ((raw = b64_decode(s, len, &rawlen)) == NULL || rawlen == 0) {
		free(raw);
		seterr(err, errlen, "%s", not_input);
		return -1;
	}
	if (memmem(raw, rawlen, pem_begin, sizeof(pem_begin) - 1) != NULL)
		rv = add_chain(m, FORM_PEM, "base64 PEM chain", raw, rawlen, err,
		    errlen);
	else if (raw[0] == DER_SEQUENCE)
		rv = add_chain(m, FORM_DER, "base64 DER chain", raw, rawlen, err,
		    errlen);
	else {
		seterr(err, errlen, "base64 chain: decodes to neither PEM nor "
		    "DER certificates");
		rv = -1;
	}
	free(raw);
	return rv;
}

int
evidence_manifest_add(struct evidence_manifest *m, const uint8_t *buf,
    size_t len, char *err, size_t errlen)
{
	size_t			 i = 0;

	if (m == NULL || buf == NULL || len == 0) {
		seterr(err, errlen, "empty input");
		return -1;
	}
	if (len > EVIDENCE_MAX_FILE_BYTES) {
		seterr(err, errlen, "%zu bytes is more than %d", len,
		    EVIDENCE_MAX_FILE_BYTES);
		return -1;
	}
	/* A DER certificate starts with SEQUENCE and a long-form length. */
	if (len >= 2 && buf[0] == DER_SEQUENCE && (buf[1] & 0x80) != 0)
		return add_chain(m, FORM_DER, "DER chain", buf, len, err,
		    errlen);
	if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)	/* UTF-8 BOM */
		i = 3;
	while (i < len && isspace(buf[i]))
		i++;
	if (i < len && (buf[i] == '[' || buf[i] == '{' || buf[i] == '"'))
		return add_json(m, buf + i, len - i, err, errlen);
	if (memmem(buf, len, pem_begin, sizeof(pem_begin) - 1) != NULL)
		return add_chain(m, FORM_PEM, "PEM chain", buf, len, err,
		    errlen);
	if (is_b64_text(buf + i, len - i))
		return add_b64_chain(m, (const char *)buf + i, len - i, err,
		    errlen);
	seterr(err, errlen, "%s", not_input);
	return -1;
}

int
evidence_manifest_add_chain(struct evidence_manifest *m,
    enum evidence_chain_type type, const uint8_t *const der[],
    const size_t len[], size_t n, char *err, size_t errlen)
{
	struct pending	*p;
	int		 rv = -1;

	if (m == NULL || n > EVIDENCE_MAX_CHAIN_CERTS) {
		seterr(err, errlen, "a chain of %zu certificates (at most %d)",
		    n, EVIDENCE_MAX_CHAIN_CERTS);
		return -1;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		seterr(err, errlen, "out of memory");
		return -1;
	}
	p->dev.kind = EVIDENCE_CHAIN;
	snprintf(p->dev.source, sizeof(p->dev.source), "%s chain",
	    (unsigned)type < EVIDENCE_CHAIN_TYPE_MAX ?
	    evidence_chain_type_str[type] : "?");
	if ((p->chain = der_stack(der, len, n, err, errlen)) == NULL ||
	    pending_certids(m, p, type, err, errlen) == -1 ||
	    commit(m, p, 1, err, errlen) == -1)
		goto out;
	rv = 0;
 out:
	pending_free(p, 1);
	return rv;
}

int
evidence_manifest_add_rim_id(struct evidence_manifest *m, const char *id)
{
	if (m == NULL || !rim_id_valid(id))
		return -1;
	if (has_rim_id(m, id))
		return 0;
	if (grow((void **)&m->rim_ids, m->nrim_ids, 1,
	    sizeof(*m->rim_ids)) == -1)
		return -1;
	memset(m->rim_ids[m->nrim_ids], 0, EVIDENCE_ID_BYTES);
	memcpy(m->rim_ids[m->nrim_ids], id, strlen(id));
	m->nrim_ids++;
	return 0;
}
