/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for attest/evidence*.c: CertIDs and RIM IDs from real NVIDIA evidence, checked against the openssl command line. */
#include "config.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "attest/b64.h"
#include "attest/evidence.h"
#include "attest/ocsp_req.h"
#include "attest/rim.h"
#include "tv.h"

#define VEC		"/tests/vectors/nvidia/"
#define SDK_EV		VEC "attestation-sdk/serialized_test_evidence/"
#define SDK_TD		VEC "attestation-sdk/testdata/"
#define PPCIE		VEC "nvtrust/ppcie-verifier-sdk-cpp/"
#define REQS		VEC "derived/ocsp_requests/"
#define CAPTURED	VEC "captured/"
#define DSTACK		VEC "dstack/"

/* Each certificate's CertIDs are in sha1, sha256, sha384 order (enum). */
#define NH		EVIDENCE_HASH_MAX
#define AT(cert, h)	((cert) * NH + (h))
#define SHA1		EVIDENCE_HASH_SHA1
#define SHA256		EVIDENCE_HASH_SHA256
#define SHA384		EVIDENCE_HASH_SHA384

#define HOPPER_DRIVER	"NV_GPU_DRIVER_GH100_590.12"
#define HOPPER_VBIOS	"NV_GPU_VBIOS_G520_0200_885_9600A50001"

static char	 tmpdir[512];

/* tests/vectors/nvidia/SOURCES.md, derived/ocsp_requests. */
static const struct want {
	const char	*req;	/* the derived request for it */
	const char	*name_hash;
	const char	*key_hash;
	const char	*serial;
} want_dev[] = {	/* hopper_evidence.json, from the root down */
	{ "dev_3_gh100_identity_sha1_nonce.der",
	    "B5FBF0D6CBBB46CEE7AE74CF946B0F9E8B258FE5",
	    "5785FF83F263CC657D68B73A5BF48D4ACBFB495F",
	    "4C255EDE3BD001BF3F4A3B605FCA898A" },
	{ "dev_2_provisioner_ica1_sha1_nonce.der",
	    "A6297A5536F25D6B2C1BEBC55BD2CC1D11867BD3",
	    "0742A0EB039C80607BA14161994DAE25F7C29B1E",
	    "6AFE7184F92232C8DF7B242261776E56" },
	{ "dev_1_gsp_brom_sha1_nonce.der",
	    "25D92E964356717A4F5BF81F01CFFDFC201020DB",
	    "2968CB162CD0779572A2791003E69EBA0CCC0A94", "412921CE551E4EEDA3" },
}, want_rim[] = {	/* NV_GPU_DRIVER_GH100_550.144.03.xml KeyInfo */
	{ "rim_2_ref_value_gh100_ca_sha1_nonce.der",
	    "0F63F0E5EF066195AA6AC63853F6B6BA4CAE168F",
	    "A5A5EB38F2B8643024D3C0C1B249F9F78CDE6630",
	    "C6DBF0754093FDEB4333F34BA205B4DC" },
	{ "rim_1_ref_value_l3_gh100_002_sha1_nonce.der",
	    "64448374AF986A56B2370917B9D3C23A96AC7B21",
	    "4802B25616DA553BE2512D952C847411BD21491E",
	    "B4EBF6542022FDEC4512F24BA503A3CB" },
	{ "rim_0_hcc_rim_l4_signer_sha1_nonce.der",
	    "27C00D8DAB68F465BD71258DADD158A30B5C99F0",
	    "2D3E1FE02672EE00BFA96C52AE5E6314C1A1FE1C",
	    "5E9E59C857378C98E1B4F5BAED9BA3A7BDFB5DFF" },
};

static uint8_t *
load_abs(const char *path, size_t *len)
{
	return tv_file(path, len);
}

static uint8_t *
load(const char *rel, size_t *len)
{
	return tv_src(rel, len);
}

static void
save(const char *path, const void *buf, size_t len)
{
	FILE	*f;

	if ((f = fopen(path, "wb")) == NULL)
		fail_msg("%s: cannot create", path);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void
hex(const uint8_t *p, size_t n, char *out)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02X", p[i]);
}

static void
assert_certid(const struct evidence_certid *c, const struct want *w)
{
	char	 h[2 * EVIDENCE_MAX_SERIAL_BYTES + 1];

	/* The tables are SHA-1 CertIDs. */
	assert_int_equal(c->hash, SHA1);
	assert_int_equal(c->hash_len, EVIDENCE_SHA1_BYTES);
	hex(c->name_hash, EVIDENCE_SHA1_BYTES, h);
	assert_string_equal(h, w->name_hash);
	hex(c->key_hash, EVIDENCE_SHA1_BYTES, h);
	assert_string_equal(h, w->key_hash);
	/* Content octets; the table prints the value (no sign octet). */
	if (c->serial_len > 1 && c->serial[0] == 0x00)
		hex(c->serial + 1, c->serial_len - 1, h);
	else
		hex(c->serial, c->serial_len, h);
	assert_string_equal(h, w->serial);
}

static size_t
find(const struct evidence_manifest *m, const struct ocsp_certid *id)
{
	size_t	 i;

	for (i = 0; i < m->ncertids; i++)
		if (evidence_certid_hash(id) == (int)m->certids[i].hash &&
		    id->name_hash_len == m->certids[i].hash_len &&
		    id->key_hash_len == m->certids[i].hash_len &&
		    memcmp(m->certids[i].name_hash, id->name_hash,
		    id->name_hash_len) == 0 &&
		    memcmp(m->certids[i].key_hash, id->key_hash,
		    id->key_hash_len) == 0 &&
		    m->certids[i].serial_len == id->serial_len &&
		    memcmp(m->certids[i].serial, id->serial, id->serial_len) == 0)
			return i;
	return SIZE_MAX;
}

static void
run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
run(const char *fmt, ...)
{
	char	 cmd[8192];
	va_list	 ap;
	int	 rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if ((rc = system(cmd)) != 0)
		fail_msg("exit %d: %s", rc, cmd);
}

/* Split a PEM text into tmpdir/c<i>.pem files; returns the count. */
static int
split_pem(const char *pem)
{
	static const char	 end[] = "-----END CERTIFICATE-----";
	const char		*p = pem, *b, *e;
	char			 path[600];
	int			 n = 0;

	while ((b = strstr(p, "-----BEGIN CERTIFICATE-----")) != NULL) {
		e = strstr(b, end);
		assert_non_null(e);
		e += sizeof(end) - 1;
		snprintf(path, sizeof(path), "%s/c%d.pem", tmpdir, n++);
		save(path, b, (size_t)(e - b));
		p = e;
	}
	return n;
}

/*
 * The independent check: for certificates c<first>..c<n-2> in tmpdir and
 * each hash of the manifest, `openssl ocsp -sha1|-sha256|-sha384 -issuer
 * c<i+1> -cert c<i> -reqout` must give a CertID the manifest holds, and
 * the one in device `dev`, with the same cache key. Returns how many.
 */
static int
openssl_certids(const struct evidence_manifest *m, const struct evidence_device
    *dev, int n, int first)
{
	struct ocsp_req	 req;
	const char	*why;
	char		 path[600];
	uint8_t		*der, key[OCSP_KEY_BYTES];
	size_t		 len, idx, k;
	unsigned	 h;
	int		 i, found = 0;

	for (i = first; i + 1 < n; i++) {
		for (h = 0; h < NH; h++) {
			if (!(m->hashes & EVIDENCE_HASH_BIT(h)))
				continue;
			run("openssl ocsp -%s -issuer '%s/c%d.pem' -cert "
			    "'%s/c%d.pem' -no_nonce -reqout '%s/req.der' "
			    ">/dev/null 2>&1", evidence_hash_str[h], tmpdir,
			    i + 1, tmpdir, i, tmpdir);
			snprintf(path, sizeof(path), "%s/req.der", tmpdir);
			der = load_abs(path, &len);
			assert_int_equal(ocsp_req_parse(der, len, &req, &why),
			    0);
			assert_int_equal(req.ncertids, 1);
			assert_int_equal(evidence_certid_hash(&req.certids[0]),
			    (int)h);
			idx = find(m, &req.certids[0]);
			if (idx == SIZE_MAX)
				fail_msg("openssl's %s CertID for c%d.pem is "
				    "not in the manifest",
				    evidence_hash_str[h], i);
			ocsp_req_key(&req, key);
			assert_memory_equal(key, m->certids[idx].key,
			    sizeof(key));
			if (dev != NULL) {
				for (k = 0; k < dev->ncertids; k++)
					if (dev->certid[k] == idx)
						break;
				assert_true(k < dev->ncertids);
			}
			free(der);
			found++;
		}
	}
	return found;
}

/* Run the openssl check over every evidence object of a JSON file. */
static void
openssl_check_evidence(const char *rel, const struct evidence_manifest *m,
    size_t dev0)
{
	json_t		*root, *o;
	json_error_t	 jerr;
	char		 path[600], *pem;
	uint8_t		*buf;
	size_t		 len, i, plen;
	int		 n;

	buf = load(rel, &len);
	root = json_loadb((char *)buf, len, 0, &jerr);
	assert_non_null(root);
	assert_true(json_is_array(root));
	json_array_foreach(root, i, o) {
		snprintf(path, sizeof(path), "%s/chain.b64", tmpdir);
		save(path, json_string_value(json_object_get(o, "certificate")),
		    strlen(json_string_value(json_object_get(o,
		    "certificate"))));
		run("openssl base64 -d -A -in '%s/chain.b64' -out "
		    "'%s/chain.pem'", tmpdir, tmpdir);
		snprintf(path, sizeof(path), "%s/chain.pem", tmpdir);
		pem = (char *)load_abs(path, &plen);
		n = split_pem(pem);
		assert_int_equal(n, 5);
		/* Device chains: neither the leaf (0) nor the root (4). */
		assert_int_equal(openssl_certids(m, &m->devices[dev0 + i], n,
		    1), 3 * NH);
		assert_int_equal(m->devices[dev0 + i].ncertids, 3 * NH);
		free(pem);
	}
	json_decref(root);
	free(buf);
}

static struct evidence_manifest *
manifest_of(const char *rel)
{
	struct evidence_manifest	*m;
	char				 err[256];
	uint8_t				*buf;
	size_t				 len;

	buf = load(rel, &len);
	assert_non_null(m = evidence_manifest_new());
	if (evidence_manifest_add(m, buf, len, err, sizeof(err)) < 0)
		fail_msg("%s: %s", rel, err);
	free(buf);
	return m;
}

static int
setup(void **state)
{
	const char	*t = getenv("TMPDIR");

	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "%s/test_evidence.XXXXXX",
	    t != NULL && *t != '\0' ? t : "/tmp");
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char	 cmd[700];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void
test_hopper(void **state)
{
	struct evidence_manifest	*m;
	struct ocsp_req			 req, ref;
	const char			*why;
	uint8_t				*der, *fresh, nonce[16];
	char				 rel[256];
	size_t				 i, len, flen;

	(void)state;
	m = manifest_of(SDK_EV "hopper_evidence.json");
	assert_int_equal(m->ndevices, 1);
	assert_int_equal(m->devices[0].kind, EVIDENCE_GPU);
	assert_string_equal(m->devices[0].arch, "HOPPER");
	assert_string_equal(m->devices[0].source, "evidence[0]");
	/* Three certificates, each in SHA-1, SHA-256 and SHA-384. */
	assert_int_equal(m->ncertids, 3 * NH);
	for (i = 0; i < 3 * NH; i++) {
		const struct evidence_certid	*c = &m->certids[i];

		assert_int_equal(c->hash, i % NH);
		assert_int_equal(c->chain, EVIDENCE_CHAIN_DEVICE);
		/* The request is NVAT's shape, in its own hash. */
		assert_int_equal(ocsp_req_parse(c->req, c->req_len, &req,
		    &why), 0);
		assert_int_equal(req.ncertids, 1);
		assert_int_equal(evidence_certid_hash(&req.certids[0]),
		    (int)c->hash);
		assert_int_equal(req.nonce_len, 2 + EVIDENCE_NONCE_BYTES);
		assert_int_equal(strcmp(c->subject,
		    m->certids[i - i % NH].subject), 0);
		/* A fresh request with our nonce. */
		memset(nonce, 0xa5, sizeof(nonce));
		fresh = evidence_ocsp_request(c, nonce, sizeof(nonce), &flen);
		assert_non_null(fresh);
		assert_int_equal(flen, c->req_len);
		assert_memory_equal(fresh + flen - 16, nonce, 16);
		free(fresh);
	}
	/* The derived requests: the same cache key, the same bytes up to the nonce. */
	for (i = 0; i < 4; i++) {
		const struct evidence_certid	*c;
		uint8_t				 k[OCSP_KEY_BYTES];

		c = i < 3 ? &m->certids[AT(i, SHA1)] :
		    &m->certids[AT(2, SHA384)];
		if (i < 3)
			assert_certid(c, &want_dev[i]);
		snprintf(rel, sizeof(rel), REQS "%s", i < 3 ? want_dev[i].req :
		    "dev_1_gsp_brom_sha384_nonce.der");
		der = load(rel, &len);
		assert_int_equal(ocsp_req_parse(der, len, &ref, &why), 0);
		assert_int_equal(c->req_len, len);
		ocsp_req_key(&ref, k);
		assert_memory_equal(k, c->key, sizeof(k));
		assert_memory_equal(c->req, der, len - 16);
		free(der);
	}
	assert_non_null(strstr(m->certids[AT(2, SHA1)].subject,
	    "GH100 A01 GSP BROM"));
	assert_string_equal(m->devices[0].driver_version, "590.12");
	assert_string_equal(m->devices[0].vbios_version, "96.00.A5.00.01");
	assert_string_equal(m->devices[0].driver_rim_id, HOPPER_DRIVER);
	assert_string_equal(m->devices[0].vbios_rim_id, HOPPER_VBIOS);
	assert_int_equal(m->nrim_ids, 2);
	assert_string_equal(m->rim_ids[0], HOPPER_DRIVER);
	assert_string_equal(m->rim_ids[1], HOPPER_VBIOS);
	/* BROM, Provisioner ICA 1 and GH100 Identity: not the leaf, not the root. */
	assert_int_equal(m->ncas, 3);
	openssl_check_evidence(SDK_EV "hopper_evidence.json", m, 0);
	evidence_manifest_free(m);

	m = manifest_of(SDK_EV "hopper_evidence_cert_hold.json");
	assert_string_equal(m->devices[0].driver_rim_id,
	    "NV_GPU_DRIVER_GH100_570.86.10");
	assert_string_equal(m->devices[0].vbios_rim_id,
	    "NV_GPU_VBIOS_1010_0200_882_9600AF0001");
	openssl_check_evidence(SDK_EV "hopper_evidence_cert_hold.json", m, 0);
	evidence_manifest_free(m);
}

static void
test_multi_gpu(void **state)
{
	struct evidence_manifest	*m;
	size_t				 i;

	(void)state;
	/* 4 GPUs: 4 BROMs under one ICA 1 and one Identity. */
	m = manifest_of(SDK_EV "multi_gpu_hopper.json");
	assert_int_equal(m->ndevices, 4);
	assert_int_equal(m->ncertids, 6 * NH);
	for (i = 1; i < 4; i++) {
		size_t	 h;

		assert_int_equal(m->devices[i].ncertids, 3 * NH);
		for (h = 0; h < NH; h++) {
			assert_int_equal(m->devices[i].certid[AT(0, h)],
			    m->devices[0].certid[AT(0, h)]);
			assert_int_equal(m->devices[i].certid[AT(1, h)],
			    m->devices[0].certid[AT(1, h)]);
			assert_int_not_equal(m->devices[i].certid[AT(2, h)],
			    m->devices[0].certid[AT(2, h)]);
		}
	}
	assert_int_equal(m->nrim_ids, 2);
	openssl_check_evidence(SDK_EV "multi_gpu_hopper.json", m, 0);
	evidence_manifest_free(m);
}

static void
test_eight_gpu(void **state)
{
	struct evidence_manifest	*m;
	json_t				*root, *o;
	json_error_t			 jerr;
	uint8_t				*buf;
	size_t				 i, len;

	(void)state;
	m = manifest_of(PPCIE "gpu_evidence.json");
	assert_int_equal(m->ndevices, 8);
	/* 8 BROM + the shared Provisioner ICA 1 and GH100 Identity. */
	assert_int_equal(m->ncertids, 10 * NH);
	assert_int_equal(m->nrim_ids, 2);
	assert_string_equal(m->rim_ids[0], HOPPER_DRIVER);
	assert_string_equal(m->rim_ids[1], HOPPER_VBIOS);
	/* The report's signed values agree with the file's own fields. */
	buf = load(PPCIE "gpu_evidence.json", &len);
	assert_non_null(root = json_loadb((char *)buf, len, 0, &jerr));
	json_array_foreach(root, i, o) {
		assert_string_equal(m->devices[i].driver_version,
		    json_string_value(json_object_get(o, "driver_version")));
		assert_string_equal(m->devices[i].vbios_version,
		    json_string_value(json_object_get(o, "vbios_version")));
	}
	json_decref(root);
	free(buf);
	openssl_check_evidence(PPCIE "gpu_evidence.json", m, 0);
	evidence_manifest_free(m);
}

static void
test_switches(void **state)
{
	struct evidence_manifest	*m;

	(void)state;
	m = manifest_of(SDK_EV "switch_evidence_ls10.json");
	assert_int_equal(m->ndevices, 1);
	assert_int_equal(m->devices[0].kind, EVIDENCE_SWITCH);
	assert_int_equal(m->ncertids, 3 * NH);
	assert_non_null(strstr(m->certids[AT(2, SHA256)].subject, "LS_10"));
	assert_string_equal(m->devices[0].driver_rim_id, "");
	assert_string_equal(m->devices[0].vbios_version, "96.10.55.00.01");
	/* The id of the switch BIOS RIM vector. */
	assert_string_equal(m->devices[0].vbios_rim_id,
	    "NV_SWITCH_BIOS_5612_0002_890_9610550001");
	assert_int_equal(m->nrim_ids, 1);
	openssl_check_evidence(SDK_EV "switch_evidence_ls10.json", m, 0);
	evidence_manifest_free(m);

	/* Four switches with one and the same chain. */
	m = manifest_of(SDK_EV "multi_switch_ls10.json");
	assert_int_equal(m->ndevices, 4);
	assert_int_equal(m->ncertids, 3 * NH);
	openssl_check_evidence(SDK_EV "multi_switch_ls10.json", m, 0);
	evidence_manifest_free(m);

	/* The 4 NVSwitches of the 8-GPU box: 4 distinct BROMs. */
	m = manifest_of(PPCIE "switch_evidence.json");
	assert_int_equal(m->ndevices, 4);
	assert_int_equal(m->ncertids, 6 * NH);
	assert_int_equal(m->nrim_ids, 1);
	assert_string_equal(m->rim_ids[0],
	    "NV_SWITCH_BIOS_5612_0002_890_9610730001");
	openssl_check_evidence(PPCIE "switch_evidence.json", m, 0);
	evidence_manifest_free(m);
}

/* Several files into one manifest: everything deduplicated. */
static void
test_merge(void **state)
{
	struct evidence_manifest	*m;
	char				 err[256];
	uint8_t				*buf;
	size_t				 len;

	(void)state;
	m = manifest_of(SDK_EV "hopper_evidence.json");
	buf = load(SDK_EV "multi_gpu_hopper.json", &len);
	assert_int_equal(evidence_manifest_add(m, buf, len, err,
	    sizeof(err)), 4);
	free(buf);
	buf = load(PPCIE "gpu_evidence.json", &len);
	assert_int_equal(evidence_manifest_add(m, buf, len, err,
	    sizeof(err)), 8);
	free(buf);
	assert_int_equal(m->ndevices, 13);
	assert_true(m->ncertids >= 10 * NH && m->ncertids <= 16 * NH);
	assert_int_equal(m->ncertids % NH, 0);
	assert_int_equal(m->nrim_ids, 2);
	assert_int_equal(evidence_manifest_add_rim_id(m, HOPPER_DRIVER), 0);
	assert_int_equal(m->nrim_ids, 2);
	assert_int_equal(evidence_manifest_add_rim_id(m, "a/b"), -1);
	assert_int_equal(evidence_manifest_add_rim_id(m,
	    "NV_GPU_DRIVER_GH100_550.144.03"), 0);
	assert_int_equal(m->nrim_ids, 3);
	evidence_manifest_free(m);
}

static void
test_pem_chains(void **state)
{
	struct evidence_manifest	*m;
	char				*pem;
	size_t				 len;
	int				 n;

	(void)state;
	m = manifest_of(SDK_TD "hopperCertChain.txt");
	assert_int_equal(m->ndevices, 1);
	assert_int_equal(m->devices[0].kind, EVIDENCE_CHAIN);
	assert_int_equal(m->ncertids, 3 * NH);
	assert_string_equal(m->devices[0].driver_rim_id, "");
	pem = (char *)load(SDK_TD "hopperCertChain.txt", &len);
	n = split_pem(pem);
	assert_int_equal(n, 5);
	assert_int_equal(openssl_certids(m, &m->devices[0], n, 1), 3 * NH);
	free(pem);
	evidence_manifest_free(m);

	m = manifest_of(SDK_TD "sample_attestation_data/gpu/blackwellCertChain.txt");
	assert_int_equal(m->ncertids, 3 * NH);
	assert_non_null(strstr(m->certids[AT(2, SHA384)].subject,
	    "GB100 A01 GSP BROM"));
	pem = (char *)load(SDK_TD "sample_attestation_data/gpu/"
	    "blackwellCertChain.txt", &len);
	assert_int_equal(openssl_certids(m, &m->devices[0], split_pem(pem),
	    1), 3 * NH);
	free(pem);
	evidence_manifest_free(m);

	m = manifest_of(SDK_TD "switchCertChain.txt");
	assert_int_equal(m->ncertids, 3 * NH);
	evidence_manifest_free(m);
}

/* RIM KeyInfo chains: the L4 signer is checked too. */
static void
test_rim_chain(void **state)
{
	struct evidence_manifest	*m;
	struct evidence_certid		*c;
	struct rim_certs		 rc;
	const char			*why;
	char				 err[256], path[600];
	uint8_t				*xml, *pem;
	size_t				 len, n, i, plen;

	(void)state;
	xml = load(SDK_TD "NV_GPU_DRIVER_GH100_550.144.03.xml", &len);
	assert_int_equal(rim_xml_certs(xml, len, &rc, &why), 0);
	assert_int_equal(rc.n, 4);
	assert_int_equal(evidence_chain_certids(EVIDENCE_CHAIN_RIM,
	    EVIDENCE_HASH_BIT(SHA1), (const uint8_t *const *)rc.der, rc.len,
	    rc.n, &c, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 3);
	for (i = 0; i < n; i++) {
		assert_certid(&c[i], &want_rim[i]);
		assert_int_equal(c[i].chain, EVIDENCE_CHAIN_RIM);
	}
	assert_non_null(strstr(c[2].subject, "HCC RIM L4 Signer"));
	evidence_certids_free(c, n);

	/* In all three hashes, the SHA-1 ones as before. */
	assert_int_equal(evidence_chain_certids(EVIDENCE_CHAIN_RIM,
	    EVIDENCE_HASHES_ALL, (const uint8_t *const *)rc.der, rc.len,
	    rc.n, &c, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 3 * NH);
	for (i = 0; i < 3; i++) {
		assert_certid(&c[AT(i, SHA1)], &want_rim[i]);
		assert_int_equal(c[AT(i, SHA256)].hash_len, 32);
		assert_int_equal(c[AT(i, SHA384)].hash_len, 48);
	}
	evidence_certids_free(c, n);

	/* As a device chain the leaf would be skipped: 2. */
	assert_int_equal(evidence_chain_certids(EVIDENCE_CHAIN_DEVICE,
	    EVIDENCE_HASH_BIT(SHA256), (const uint8_t *const *)rc.der, rc.len,
	    rc.n, &c, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_int_equal(c[0].hash, SHA256);
	evidence_certids_free(c, n);

	/* No hash, or one we do not know: refused. */
	assert_int_equal(evidence_chain_certids(EVIDENCE_CHAIN_RIM, 0,
	    (const uint8_t *const *)rc.der, rc.len, rc.n, &c, &n, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "no CertID hash algorithm"));
	assert_int_equal(evidence_chain_certids(EVIDENCE_CHAIN_RIM,
	    EVIDENCE_HASH_BIT(NH), (const uint8_t *const *)rc.der, rc.len,
	    rc.n, &c, &n, err, sizeof(err)), -1);

	m = evidence_manifest_new();
	assert_int_equal(evidence_manifest_add_chain(m, EVIDENCE_CHAIN_RIM,
	    (const uint8_t *const *)rc.der, rc.len, rc.n, err,
	    sizeof(err)), 0);
	assert_int_equal(evidence_manifest_add_chain(m, EVIDENCE_CHAIN_RIM,
	    (const uint8_t *const *)rc.der, rc.len, rc.n, err,
	    sizeof(err)), 0);
	assert_int_equal(m->ndevices, 2);
	assert_int_equal(m->ncertids, 3 * NH);
	assert_int_equal(m->ncas, 2);	/* L3 and the GH100 CA */

	/* openssl on the same certificates, leaf included. */
	for (i = 0; i < rc.n; i++) {
		snprintf(path, sizeof(path), "%s/d%zu.der", tmpdir, i);
		save(path, rc.der[i], rc.len[i]);
		run("openssl x509 -inform DER -in '%s/d%zu.der' -out "
		    "'%s/c%zu.pem'", tmpdir, i, tmpdir, i);
	}
	assert_int_equal(openssl_certids(m, &m->devices[0], (int)rc.n, 0),
	    3 * NH);

	/* The same chain as a PEM file is recognised by its CoRIM root. */
	run("cat '%s/c0.pem' '%s/c1.pem' '%s/c2.pem' '%s/c3.pem' > "
	    "'%s/rim.pem'", tmpdir, tmpdir, tmpdir, tmpdir, tmpdir);
	snprintf(path, sizeof(path), "%s/rim.pem", tmpdir);
	pem = load_abs(path, &plen);
	evidence_manifest_free(m);
	m = evidence_manifest_new();
	assert_int_equal(evidence_manifest_add(m, pem, plen, err,
	    sizeof(err)), 1);
	assert_int_equal(m->ncertids, 3 * NH);
	assert_int_equal(m->certids[AT(2, SHA1)].chain, EVIDENCE_CHAIN_RIM);
	assert_certid(&m->certids[AT(2, SHA1)], &want_rim[2]);
	free(pem);
	evidence_manifest_free(m);
	rim_certs_free(&rc);
	free(xml);
}

/* A PEM chain of the vectors into tmpdir/c<i>.pem; the count. */
static int
split_file(const char *rel)
{
	char	*pem;
	size_t	 len;
	int	 n;

	pem = (char *)load(rel, &len);
	n = split_pem(pem);
	free(pem);
	return n;
}

/*
 * A captured request file for one certificate: its CertID is in the
 * manifest, with the same cache key (or, for the leaf, is not). Returns
 * the manifest's CertID, or NULL.
 */
static const struct evidence_certid *
captured_req(const struct evidence_manifest *m, const char *file, int in)
{
	struct ocsp_req	 req;
	const char	*why;
	char		 rel[256];
	uint8_t		*der, key[OCSP_KEY_BYTES];
	size_t		 len, idx;

	snprintf(rel, sizeof(rel), CAPTURED "requests/%s", file);
	der = load(rel, &len);
	assert_int_equal(ocsp_req_parse(der, len, &req, &why), 0);
	assert_int_equal(req.ncertids, 1);
	idx = find(m, &req.certids[0]);
	ocsp_req_key(&req, key);	/* req borrows der */
	free(der);
	if (!in) {
		if (idx != SIZE_MAX)
			fail_msg("%s: the leaf is in the manifest", file);
		return NULL;
	}
	if (idx == SIZE_MAX)
		fail_msg("%s: its CertID is not in the manifest", file);
	assert_memory_equal(key, m->certids[idx].key, sizeof(key));
	return &m->certids[idx];
}

/*
 * Genuine device chains from production GPUs: every CertID openssl makes
 * in each hash, and the SHA-384 (nvtrust) and SHA-256 (nvattest 2.0)
 * requests captured with them.
 */
static void
test_captured(void **state)
{
	static const char *const chains[] = { "h100-a", "gb100", "h100-nvl" };
	static const char *const a[] = { "1-brom", "2-provisioner-ica",
	    "3-identity" };
	static const char *const nvl[] = { "a01-gsp-brom", "provisioner-ica1",
	    "identity" };
	static const uint8_t	 nonce[16] = { 0x01, 0x23, 0x45, 0x67, 0x89,
	    0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };
	struct evidence_manifest	*m;
	const struct evidence_certid	*c;
	char				 rel[256], file[128], err[256];
	uint8_t				*der, *buf, *fresh;
	size_t				 i, len, flen;

	(void)state;
	for (i = 0; i < 3; i++) {
		snprintf(rel, sizeof(rel), CAPTURED "%s-device-chain.pem",
		    chains[i]);
		m = manifest_of(rel);
		assert_int_equal(m->ndevices, 1);
		assert_int_equal(m->ncertids, 3 * NH);
		assert_int_equal(m->ncas, 3);
		assert_int_equal(openssl_certids(m, &m->devices[0],
		    split_file(rel), 1), 3 * NH);
		evidence_manifest_free(m);
	}

	m = manifest_of(CAPTURED "h100-a-device-chain.pem");
	for (i = 0; i < 3; i++) {
		snprintf(file, sizeof(file), "h100-a-%s.nononce.sha384.req.der",
		    a[i]);
		c = captured_req(m, file, 1);
		assert_int_equal(c->hash, SHA384);
		/* With the captured nonce: byte for byte openssl's request. */
		snprintf(rel, sizeof(rel), CAPTURED "requests/h100-a-%s.nonce."
		    "sha384.req.der", a[i]);
		der = load(rel, &len);
		fresh = evidence_ocsp_request(c, nonce, sizeof(nonce), &flen);
		assert_non_null(fresh);
		assert_int_equal(flen, len);
		assert_memory_equal(fresh, der, len);
		free(fresh);
		free(der);
	}
	captured_req(m, "h100-a-0-leaf-fmc.nononce.sha384.req.der", 0);
	captured_req(m, "h100-a-0-leaf-fmc.nonce.sha384.req.der", 0);

	/* One manifest for both H100s: the CAs' CertIDs once, two BROMs. */
	buf = load(CAPTURED "h100-nvl-device-chain.pem", &len);
	assert_int_equal(evidence_manifest_add(m, buf, len, err,
	    sizeof(err)), 1);
	free(buf);
	assert_int_equal(m->ncertids, 4 * NH);
	for (i = 0; i < 3; i++) {
		snprintf(file, sizeof(file), "h100-nvl-gh100-%s.sha256.nononce."
		    "req.der", nvl[i]);
		c = captured_req(m, file, 1);
		assert_int_equal(c->hash, SHA256);
	}
	captured_req(m, "h100-nvl-gh100-a01-gsp-fmc-lf.sha256.nononce.req.der",
	    0);
	evidence_manifest_free(m);
}

static void
test_hashes_parse(void **state)
{
	static const char *const bad[] = { "", ",", "sha1,", ",sha1",
	    "sha1,,sha256", "md5", "sha512", "sha256x", "sha 256", "sha--256",
	    "sha1;sha256", "a-name-far-too-long-to-be-any-hash" };
	unsigned	 set;
	char		 err[256];
	size_t		 i;

	(void)state;
	assert_int_equal(evidence_hashes_parse("sha1,sha256,sha384", &set, err,
	    sizeof(err)), 0);
	assert_int_equal(set, EVIDENCE_HASHES_ALL);
	assert_int_equal(EVIDENCE_HASHES_DEFAULT, EVIDENCE_HASHES_ALL);
	assert_int_equal(evidence_hashes_parse("sha256", &set, err,
	    sizeof(err)), 0);
	assert_int_equal(set, EVIDENCE_HASH_BIT(SHA256));
	/* nvattest's spelling, either case, any order, repeats. */
	assert_int_equal(evidence_hashes_parse("SHA-384,sha-1,sha1", &set, err,
	    sizeof(err)), 0);
	assert_int_equal(set, EVIDENCE_HASH_BIT(SHA384) |
	    EVIDENCE_HASH_BIT(SHA1));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		set = 12345;
		err[0] = '\0';
		if (evidence_hashes_parse(bad[i], &set, err, sizeof(err)) != -1)
			fail_msg("\"%s\" was taken", bad[i]);
		assert_int_equal(set, 12345);
		assert_true(err[0] != '\0');
	}
	assert_int_equal(evidence_hashes_parse("sha1,md5", &set, err,
	    sizeof(err)), -1);
	assert_string_equal(err, "\"md5\": not a CertID hash algorithm (sha1, "
	    "sha256, sha384)");
	assert_int_equal(evidence_hashes_parse(NULL, &set, err, sizeof(err)),
	    -1);
}

/* A manifest in some hashes only; dedup by (hash, CertID). */
static void
test_hash_subset(void **state)
{
	struct evidence_manifest	*m;
	char				 err[256];
	uint8_t				*buf;
	size_t				 len, i;

	(void)state;
	buf = load(SDK_TD "hopperCertChain.txt", &len);
	assert_non_null(m = evidence_manifest_new());
	m->hashes = EVIDENCE_HASH_BIT(SHA256) | EVIDENCE_HASH_BIT(SHA384);
	assert_int_equal(evidence_manifest_add(m, buf, len, err,
	    sizeof(err)), 1);
	assert_int_equal(evidence_manifest_add(m, buf, len, err,
	    sizeof(err)), 1);
	assert_int_equal(m->ndevices, 2);
	assert_int_equal(m->ncertids, 3 * 2);
	for (i = 0; i < m->ncertids; i++)
		assert_int_equal(m->certids[i].hash, i % 2 == 0 ? SHA256 :
		    SHA384);
	assert_int_equal(openssl_certids(m, &m->devices[1],
	    split_file(SDK_TD "hopperCertChain.txt"), 1), 3 * 2);
	/* Adding SHA-1 later adds only the SHA-1 CertIDs. */
	m->hashes = EVIDENCE_HASHES_ALL;
	assert_int_equal(evidence_manifest_add(m, buf, len, err,
	    sizeof(err)), 1);
	assert_int_equal(m->ncertids, 3 * NH);
	evidence_manifest_free(m);

	assert_non_null(m = evidence_manifest_new());
	m->hashes = 0;
	assert_int_equal(evidence_manifest_add(m, buf, len, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "no CertID hash algorithm"));
	assert_int_equal(m->ncertids, 0);
	evidence_manifest_free(m);
	free(buf);
}

/* tmpdir/c<i>.pem as an X509, through the openssl command line. */
static X509 *
x509_of(int i)
{
	char		 path[600];
	uint8_t		*der;
	const uint8_t	*p;
	size_t		 len;
	X509		*x;

	run("openssl x509 -in '%s/c%d.pem' -outform DER -out '%s/x.der'",
	    tmpdir, i, tmpdir);
	snprintf(path, sizeof(path), "%s/x.der", tmpdir);
	der = load_abs(path, &len);
	p = der;
	assert_non_null(x = d2i_X509(NULL, &p, (long)len));
	free(der);
	return x;
}

/* A CertID restated in another hash from its issuer's certificate. */
static void
test_rehash(void **state)
{
	struct evidence_manifest	*m;
	const struct evidence_certid	*c;
	struct evidence_certid		 out;
	struct ocsp_req			 req;
	STACK_OF(X509)			*sk, *leaf, *none;
	STACK_OF(X509)			*cands[2];
	const char			*why;
	char				 err[256], path[600];
	uint8_t				*der;
	size_t				 cert, f, t, len;
	int				 i, n;

	(void)state;
	m = manifest_of(CAPTURED "gb100-device-chain.pem");
	n = split_file(CAPTURED "gb100-device-chain.pem");
	assert_int_equal(n, 5);
	assert_non_null(sk = sk_X509_new_null());
	assert_non_null(leaf = sk_X509_new_null());
	assert_non_null(none = sk_X509_new_null());
	assert_true(sk_X509_push(leaf, x509_of(0)) > 0);
	for (i = n - 1; i >= 0; i--)	/* the issuers in any order */
		assert_true(sk_X509_push(sk, x509_of(i)) > 0);
	cands[0] = leaf;
	cands[1] = sk;
	for (cert = 0; cert < 3; cert++)
		for (f = 0; f < NH; f++)
			for (t = 0; t < NH; t++) {
				c = &m->certids[AT(cert, f)];
				assert_int_equal(ocsp_req_parse(c->req,
				    c->req_len, &req, &why), 0);
				assert_int_equal(evidence_certid_rehash(
				    &req.certids[0], cands, 2,
				    (enum evidence_hash)t, &out, err,
				    sizeof(err)), 0);
				assert_int_equal(out.hash, t);
				assert_string_equal(out.subject, "");
				assert_memory_equal(out.key,
				    m->certids[AT(cert, t)].key, OCSP_KEY_BYTES);
				free(out.req);
			}
	/* No candidate is the issuer: 1, nothing made. */
	c = &m->certids[AT(0, SHA256)];
	assert_int_equal(ocsp_req_parse(c->req, c->req_len, &req, &why), 0);
	cands[1] = none;
	assert_int_equal(evidence_certid_rehash(&req.certids[0], cands, 2,
	    EVIDENCE_HASH_SHA1, &out, err, sizeof(err)), 1);
	assert_null(out.req);
	/* A CertID in a hash we do not know: 1. */
	run("openssl ocsp -sha512 -issuer '%s/c2.pem' -cert '%s/c1.pem' "
	    "-no_nonce -reqout '%s/r512.der' >/dev/null 2>&1", tmpdir, tmpdir,
	    tmpdir);
	snprintf(path, sizeof(path), "%s/r512.der", tmpdir);
	der = load_abs(path, &len);
	assert_int_equal(ocsp_req_parse(der, len, &req, &why), 0);
	assert_int_equal(evidence_certid_hash(&req.certids[0]), -1);
	cands[1] = sk;
	assert_int_equal(evidence_certid_rehash(&req.certids[0], cands, 2,
	    EVIDENCE_HASH_SHA1, &out, err, sizeof(err)), 1);
	free(der);
	sk_X509_pop_free(sk, X509_free);
	sk_X509_pop_free(leaf, X509_free);
	sk_X509_free(none);
	evidence_manifest_free(m);
}

/* The names list, show and the manifest give a request's CertID hash. */
static void
test_req_hash_name(void **state)
{
	static const struct {
		const char	*first, *second;	/* CertIDs' hashes */
		const char	*name;
	} cases[] = {
		{ "sha1", NULL, "sha1" },
		{ "sha256", NULL, "sha256" },
		{ "sha384", NULL, "sha384" },
		{ "sha512", NULL, "sha512" },
		{ "sha384", "sha384", "sha384" },
		{ "sha1", "sha256", "mixed" },
	};
	struct ocsp_req	 req;
	const char	*why;
	char		 opts[1400], path[600], name[32];
	uint8_t		*der;
	size_t		 i, len;

	(void)state;
	assert_int_equal(split_file(SDK_TD "hopperCertChain.txt"), 5);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* -sha* applies to the -cert after it. */
		snprintf(opts, sizeof(opts), "-%s -cert '%s/c1.pem'",
		    cases[i].first, tmpdir);
		if (cases[i].second != NULL)
			snprintf(opts + strlen(opts), sizeof(opts) -
			    strlen(opts), " -%s -cert '%s/c1.pem'",
			    cases[i].second, tmpdir);
		run("openssl ocsp -issuer '%s/c2.pem' %s -no_nonce -reqout "
		    "'%s/rn.der' >/dev/null 2>&1", tmpdir, opts, tmpdir);
		snprintf(path, sizeof(path), "%s/rn.der", tmpdir);
		der = load_abs(path, &len);
		assert_int_equal(ocsp_req_parse(der, len, &req, &why), 0);
		evidence_req_hash_name(&req, name, sizeof(name));
		assert_string_equal(name, cases[i].name);
		free(der);
	}
}

static void
test_report_ids(void **state)
{
	struct evidence_device	 d;
	char			 err[256], *txt;
	uint8_t			*rep;
	size_t			 len, i, n;

	(void)state;
	txt = (char *)load(SDK_TD "sample_attestation_data/gpu/"
	    "blackwellAttestationReport.txt", &len);
	while (len > 0 && (txt[len - 1] == '\n' || txt[len - 1] == '\r'))
		len--;
	n = len / 2;
	rep = malloc(n);
	assert_non_null(rep);
	for (i = 0; i < n; i++) {
		unsigned int	 b;

		assert_int_equal(sscanf(txt + 2 * i, "%2x", &b), 1);
		rep[i] = (uint8_t)b;
	}
	memset(&d, 0, sizeof(d));
	assert_int_equal(evidence_report_ids("BLACKWELL", rep, n, &d, err,
	    sizeof(err)), 0);
	/* No CHIP_INFO field in this report: the SDK falls back to GB100. */
	assert_string_equal(d.driver_rim_id, "NV_GPU_CC_DRIVER_GB100_575.32");
	assert_string_equal(d.vbios_version, "97.00.88.00.0F");
	assert_string_equal(d.vbios_rim_id,
	    "NV_GPU_VBIOS_G525_0220_886_970088000F");
	assert_int_equal(evidence_report_ids("HOPPER", rep, n, &d, err,
	    sizeof(err)), 0);
	assert_string_equal(d.driver_rim_id, "NV_GPU_DRIVER_GH100_575.32");

	assert_int_equal(evidence_report_ids("VOLTA", rep, n, &d, err,
	    sizeof(err)), -1);
	assert_int_equal(evidence_report_ids("BLACKWELL", rep, n - 1, &d, err,
	    sizeof(err)), -1);
	assert_int_equal(evidence_report_ids("BLACKWELL", rep, n / 2, &d, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "truncated"));
	assert_int_equal(evidence_report_ids("BLACKWELL", rep, 20, &d, err,
	    sizeof(err)), -1);
	free(rep);
	free(txt);
}

static void
expect_error(const char *text, size_t len, const char *want)
{
	struct evidence_manifest	*m;
	char				 err[256];

	assert_non_null(m = evidence_manifest_new());
	err[0] = '\0';
	assert_int_equal(evidence_manifest_add(m, (const uint8_t *)text, len,
	    err, sizeof(err)), -1);
	if (strstr(err, want) == NULL)
		fail_msg("error \"%s\", want \"%s\"", err, want);
	/* All or nothing. */
	assert_int_equal(m->ndevices, 0);
	assert_int_equal(m->ncertids, 0);
	assert_int_equal(m->ncas, 0);
	assert_int_equal(m->nrim_ids, 0);
	evidence_manifest_free(m);
}

/* The n-th occurrence of needle, or fail. */
static char *
nth(char *s, const char *needle, int n)
{
	char	*p = s;

	for (; n >= 0; n--) {
		assert_non_null(p = strstr(p, needle));
		if (n > 0)
			p++;
	}
	return p + strlen(needle);
}

/* The manifest's CertID keys and RIM IDs, one string, to compare inputs. */
static char *
summary_of(const uint8_t *buf, size_t len)
{
	struct evidence_manifest	*m;
	char				 err[512], *s, h[2 * OCSP_KEY_BYTES + 1];
	size_t				 i, n = 0, cap;

	assert_non_null(m = evidence_manifest_new());
	if (evidence_manifest_add(m, buf, len, err, sizeof(err)) != 1)
		fail_msg("evidence_manifest_add: %s", err);
	cap = (m->ncertids + 1) * (sizeof(h) + 1) + (m->nrim_ids + 1) *
	    (EVIDENCE_ID_BYTES + 1);
	assert_non_null(s = calloc(1, cap));
	for (i = 0; i < m->ncertids; i++) {
		hex(m->certids[i].key, OCSP_KEY_BYTES, h);
		n += (size_t)snprintf(s + n, cap - n, "%s ", h);
	}
	for (i = 0; i < m->nrim_ids; i++)
		n += (size_t)snprintf(s + n, cap - n, "%s ", m->rim_ids[i]);
	evidence_manifest_free(m);
	return s;
}

/* The PEM chain's certificates as concatenated DER (malloc'd). */
static uint8_t *
pem_to_der(const char *pem, size_t len, size_t *outlen)
{
	BIO	*bio;
	X509	*x;
	uint8_t	*out = NULL, *p;
	int	 n;

	*outlen = 0;
	assert_non_null(bio = BIO_new_mem_buf(pem, (int)len));
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		assert_true((n = i2d_X509(x, NULL)) > 0);
		assert_non_null(out = realloc(out, *outlen + (size_t)n));
		p = out + *outlen;
		assert_int_equal(i2d_X509(x, &p), n);
		*outlen += (size_t)n;
		X509_free(x);
	}
	ERR_clear_error();
	BIO_free(bio);
	return out;
}

static char *
b64_of(const uint8_t *p, size_t n, int wrap)
{
	BIO	*b64, *mem;
	char	*data, *s;
	long	 l;

	assert_non_null(b64 = BIO_new(BIO_f_base64()));
	assert_non_null(mem = BIO_new(BIO_s_mem()));
	if (!wrap)
		BIO_set_flags(b64, BIO_FLAGS_BASE64_NO_NL);
	b64 = BIO_push(b64, mem);
	assert_int_equal(BIO_write(b64, p, (int)n), (int)n);
	assert_int_equal(BIO_flush(b64), 1);
	l = BIO_get_mem_data(mem, &data);
	assert_non_null(s = calloc(1, (size_t)l + 1));
	memcpy(s, data, (size_t)l);
	BIO_free_all(b64);
	return s;
}

/*
 * The shapes evidence comes in, all from hopper_evidence.json: one
 * evidence object on its own gives the array's CertIDs and RIM IDs; its
 * "certificate" field on its own (base64 text, or a JSON string), the
 * chain it decodes to as PEM with CRLF, as concatenated DER and as base64
 * of that DER give the same CertIDs, no RIM IDs.
 */
static void
test_shapes(void **state)
{
	json_t		*root, *obj;
	json_error_t	 je;
	const char	*cert;
	char		*arr_sum, *sum, *one, *chain_sum, *crlf, *b64, *q;
	uint8_t		*buf, *pem, *der;
	size_t		 len, pemlen, derlen, i, k;

	(void)state;
	buf = load(SDK_EV "hopper_evidence.json", &len);
	arr_sum = summary_of(buf, len);
	assert_non_null(strstr(arr_sum, HOPPER_DRIVER));
	assert_non_null(root = json_loadb((const char *)buf, len, 0, &je));
	obj = json_array_get(root, 0);

	/* One object, not in an array. */
	assert_non_null(one = json_dumps(obj, JSON_INDENT(2)));
	sum = summary_of((const uint8_t *)one, strlen(one));
	assert_string_equal(sum, arr_sum);
	free(sum);
	free(one);

	/* The "certificate" field on its own: base64 of the PEM chain. */
	cert = json_string_value(json_object_get(obj, "certificate"));
	chain_sum = summary_of((const uint8_t *)cert, strlen(cert));
	/* the same CertIDs, in the same order; no RIM IDs */
	assert_int_equal(strncmp(chain_sum, arr_sum, strlen(chain_sum)), 0);
	assert_int_equal(strlen(chain_sum), 9 * (2 * OCSP_KEY_BYTES + 1));
	/* ... as jq prints it (a JSON string), with a newline after it */
	assert_non_null(q = json_dumps(json_object_get(obj, "certificate"),
	    JSON_ENCODE_ANY));
	assert_non_null(q = realloc(q, strlen(q) + 2));
	strcat(q, "\n");
	sum = summary_of((const uint8_t *)q, strlen(q));
	assert_string_equal(sum, chain_sum);
	free(sum);
	free(q);

	/* The PEM it decodes to, with CRLF line ends. */
	assert_non_null(pem = b64_decode(cert, strlen(cert), &pemlen));
	assert_non_null(crlf = calloc(1, 2 * pemlen + 1));
	for (i = 0, k = 0; i < pemlen; i++) {
		if (pem[i] == '\n')
			crlf[k++] = '\r';
		crlf[k++] = (char)pem[i];
	}
	sum = summary_of((const uint8_t *)crlf, k);
	assert_string_equal(sum, chain_sum);
	free(sum);

	/* Concatenated DER, and base64 of it (wrapped and not). */
	der = pem_to_der((const char *)pem, pemlen, &derlen);
	assert_true(derlen > 1000);
	sum = summary_of(der, derlen);
	assert_string_equal(sum, chain_sum);
	free(sum);
	b64 = b64_of(der, derlen, 1);
	sum = summary_of((const uint8_t *)b64, strlen(b64));
	assert_string_equal(sum, chain_sum);
	free(sum);
	free(b64);
	b64 = b64_of(der, derlen, 0);
	sum = summary_of((const uint8_t *)b64, strlen(b64));
	assert_string_equal(sum, chain_sum);
	free(sum);
	free(b64);

	/* A DER chain cut short, or with bytes after it, is refused whole. */
	expect_error((const char *)der, derlen - 1, "DER certificate 5");
	assert_non_null(der = realloc(der, derlen + 2));
	der[derlen] = 0x05;
	der[derlen + 1] = 0x00;
	expect_error((const char *)der, derlen + 2, "DER certificate 6: not a "
	    "DER SEQUENCE");
	/* Bytes that do not start at a certificate are no input at all. */
	expect_error((const char *)der + 1, derlen - 1, "neither evidence JSON");
	/* base64 of something that is no chain */
	expect_error("aGVsbG8gd29ybGQ=", 16, "decodes to neither PEM nor DER");
	expect_error("\"aGVsbG8=\"", 10, "decodes to neither PEM nor DER");
	expect_error("\"not base64!\"", 13, "neither evidence JSON");

	free(der);
	free(crlf);
	free(pem);
	free(chain_sum);
	free(arr_sum);
	json_decref(root);
	free(buf);
}

/* nvattest attest's output holds claims, no certificates: said, and what to give. */
static void
test_claims_refused(void **state)
{
	uint8_t	*buf;
	size_t	 len;

	(void)state;
	buf = load(DSTACK "gpu_attestation_h100.json", &len);
	expect_error((const char *)buf, len, "nvattest attest output: it holds "
	    "claims");
	expect_error((const char *)buf, len, "no certificates");
	expect_error((const char *)buf, len, "nvattest collect-evidence");
	expect_error((const char *)buf, len, "certificate chain");
	free(buf);
}

static void
test_errors(void **state)
{
	char	*buf, *p, *w;
	size_t	 len, wl;

	(void)state;
	expect_error("hello", 5, "neither evidence JSON");
	expect_error("hello world!", 12, "nor a certificate chain (PEM, DER, "
	    "or base64 of either)");
	expect_error("", 0, "empty");
	expect_error("{\"claims\": []}", 14, "holds claims");
	expect_error("{\"arch\": \"HOPPER\"}", 18, "no \"certificate\"");
	expect_error("[]", 2, "no evidence");
	expect_error("[1]", 3, "evidence[0]: not an object");
	expect_error("{\"result_code\": 2, \"result_message\": \"x\", "
	    "\"evidences\": null}", 60, "result_code 2");

	buf = (char *)load(SDK_EV "multi_gpu_hopper.json", &len);
	/* Truncated files. */
	expect_error(buf, len / 2, "not valid JSON");
	expect_error(buf, 1, "not valid JSON");
	/* The third object's certificate is not base64. */
	p = nth(buf, "\"certificate\": \"", 2);
	p[10] = '*';
	expect_error(buf, len, "evidence[2].certificate: not base64");
	p[10] = 'A';
	expect_error(buf, len, "evidence[2].certificate");
	free(buf);

	buf = (char *)load(SDK_EV "hopper_evidence.json", &len);
	/* A report cut short, still base64. */
	p = nth(buf, "\"evidence\": \"", 0);
	w = strchr(p, '"');
	memmove(p + 2000, w, strlen(w) + 1);
	expect_error(buf, strlen(buf), "evidence[0].evidence: report truncated");
	free(buf);

	buf = (char *)load(SDK_EV "hopper_evidence.json", &len);
	p = nth(buf, "\"arch\": \"", 0);
	memcpy(p, "VOLTA\"", 6);
	memmove(p + 6, p + 7, strlen(p + 7) + 1);
	expect_error(buf, strlen(buf), "evidence[0].arch: unsupported");
	p = nth(buf, "\"arch\"", 0);
	p[-2] = 'X';
	expect_error(buf, strlen(buf), "evidence[0]: no \"arch\"");
	free(buf);

	/* The collect-evidence wrapper is accepted. */
	buf = (char *)load(SDK_EV "hopper_evidence.json", &len);
	wl = len + 100;
	w = malloc(wl);
	assert_non_null(w);
	snprintf(w, wl, "{\"result_code\": 0, \"result_message\": \"Ok\", "
	    "\"evidences\": %s}", buf);
	{
		struct evidence_manifest	*m = evidence_manifest_new();
		char				 err[256];

		assert_int_equal(evidence_manifest_add(m, (uint8_t *)w,
		    strlen(w), err, sizeof(err)), 1);
		assert_int_equal(m->ncertids, 3 * NH);
		evidence_manifest_free(m);
	}
	free(w);
	free(buf);

	/* PEM chains: shuffled, rootless, broken. */
	buf = (char *)load(SDK_TD "hopperCertChain.txt", &len);
	p = nth(buf, "-----END CERTIFICATE-----", 0);
	while (*p == '\n' || *p == '\r')
		p++;
	{
		size_t	 first = (size_t)(p - buf);
		char	*sh = malloc(len + 1);

		assert_non_null(sh);
		memcpy(sh, p, len - first);
		memcpy(sh + len - first, buf, first);
		expect_error(sh, len, "is not issued by");
		free(sh);
	}
	p = nth(buf, "-----END CERTIFICATE-----", 3);
	expect_error(buf, (size_t)(p - buf), "not a self-signed root");
	p = nth(buf, "-----BEGIN CERTIFICATE-----", 2);
	p[20] = '*';
	expect_error(buf, len, "PEM chain: PEM certificate 3 is malformed");
	free(buf);
}

/* The bytes of each PEM certificate block of `pem`, as sent; the count. */
static size_t
pem_ders(const uint8_t *pem, size_t len, uint8_t *der[], size_t dlen[],
    size_t max)
{
	BIO		*bio;
	char		*name, *header;
	uint8_t		*data;
	long		 n;
	size_t		 k = 0;

	assert_non_null(bio = BIO_new_mem_buf(pem, (int)len));
	while (PEM_read_bio(bio, &name, &header, &data, &n) == 1) {
		assert_true(k < max);
		assert_string_equal(name, "CERTIFICATE");
		der[k] = data;
		dlen[k++] = (size_t)n;
		OPENSSL_free(name);
		OPENSSL_free(header);
	}
	ERR_clear_error();
	BIO_free(bio);
	return k;
}

/* Those bytes as PEM again (no re-encoding of a parsed certificate). */
static uint8_t *
ders_pem(uint8_t *const der[], const size_t dlen[], size_t n, size_t *len)
{
	struct tv_buf	 b;
	BIO		*bio;
	size_t		 k;

	assert_non_null(bio = BIO_new(BIO_s_mem()));
	for (k = 0; k < n; k++)
		assert_true(PEM_write_bio(bio, "CERTIFICATE", "", der[k],
		    (long)dlen[k]) > 0);
	b = tv_bio_take(bio);
	*len = b.len;
	return b.p;
}

/* Is a chain accepted, as DER (add_chain) or as a PEM file (add)? */
static int
chain_accepted(uint8_t *const der[], const size_t dlen[], size_t n, int pem)
{
	struct evidence_manifest	*m;
	uint8_t				*txt;
	char				 err[256];
	size_t				 len;
	int				 ok;

	assert_non_null(m = evidence_manifest_new());
	if (pem) {
		txt = ders_pem(der, dlen, n, &len);
		ok = evidence_manifest_add(m, txt, len, err, sizeof(err)) == 1;
		free(txt);
	} else
		ok = evidence_manifest_add_chain(m, EVIDENCE_CHAIN_DEVICE,
		    (const uint8_t *const *)der, dlen, n, err,
		    sizeof(err)) == 0;
	if (!ok)
		assert_int_equal(m->ncertids, 0);
	evidence_manifest_free(m);
	return ok;
}

/*
 * One flipped byte in any certificate of a genuine NVIDIA device chain,
 * given as DER or as PEM: no variant is accepted. As DER every byte of the
 * frame and the unsigned outer signatureAlgorithm is flipped, and the
 * bytes tv_flip_marks picks of the rest; as PEM only the frame and that
 * algorithm (the signed part takes the same path once decoded).
 */
static void
test_chain_flips(void **state)
{
	uint8_t	*pem, *der[EVIDENCE_MAX_CHAIN_CERTS], *marks;
	size_t	 len, dlen[EVIDENCE_MAX_CHAIN_CERTS], n, k, i, tbs_end;

	(void)state;
	pem = load(SDK_TD "hopperCertChain.txt", &len);
	n = pem_ders(pem, len, der, dlen, EVIDENCE_MAX_CHAIN_CERTS);
	assert_int_equal(n, 5);
	assert_true(chain_accepted(der, dlen, n, 0));
	assert_true(chain_accepted(der, dlen, n, 1));
	for (k = 0; k < n; k++) {
		/* 30 82 LL LL 30 82 TT TT: the tbs ends 8 + TT TT in. */
		assert_true(der[k][1] == 0x82 && der[k][5] == 0x82);
		tbs_end = 8 + ((size_t)der[k][6] << 8 | der[k][7]);
		assert_non_null(marks = malloc(dlen[k]));
		(void)tv_flip_marks(der[k], dlen[k], marks);
		for (i = 0; i < dlen[k]; i++) {
			if (!marks[i] && i >= 8 &&
			    (i < tbs_end || i >= tbs_end + 16))
				continue;
			der[k][i] ^= 0x01;
			if (chain_accepted(der, dlen, n, 0))
				fail_msg("DER certificate %zu: flip at %zu "
				    "accepted", k + 1, i);
			if ((i < 8 || (i >= tbs_end && i < tbs_end + 16)) &&
			    chain_accepted(der, dlen, n, 1))
				fail_msg("PEM certificate %zu: flip at %zu "
				    "accepted", k + 1, i);
			der[k][i] ^= 0x01;
		}
		free(marks);
	}
	for (k = 0; k < n; k++)
		OPENSSL_free(der[k]);
	free(pem);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hopper),
		cmocka_unit_test(test_multi_gpu),
		cmocka_unit_test(test_eight_gpu),
		cmocka_unit_test(test_switches),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_pem_chains),
		cmocka_unit_test(test_rim_chain),
		cmocka_unit_test(test_captured),
		cmocka_unit_test(test_hashes_parse),
		cmocka_unit_test(test_hash_subset),
		cmocka_unit_test(test_rehash),
		cmocka_unit_test(test_req_hash_name),
		cmocka_unit_test(test_report_ids),
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_claims_refused),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_chain_flips),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
