/* SPDX-License-Identifier: Apache-2.0 */
/* RIM IDs from an SPDM attestation report: its opaque data's driver and VBIOS versions, named as nvattest names them. */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attest/evidence.h"
#include "attest/evidence_int.h"
#include "attest/rim.h"

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

int
is_gpu_arch(const char *a)
{
	return strcmp(a, "HOPPER") == 0 || strcmp(a, "BLACKWELL") == 0;
}

int
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
