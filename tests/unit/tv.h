/* SPDX-License-Identifier: Apache-2.0 */
/* Whole files for the unit tests: vectors and fixtures read into memory. */
#ifndef TESTS_UNIT_TV_H
#define TESTS_UNIT_TV_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/bio.h>
#include <openssl/x509.h>

struct ocsp_trust;

/* Room for a path the tests build before calling these. */
#define TV_REL_BYTES	4096

/*
 * The file at path, NUL-terminated (the NUL is not counted in *len); the
 * caller frees it. A file that cannot be read fails the test.
 */
uint8_t	*tv_file(const char *path, size_t *len);
/* The same for "$top_srcdir" (or ".") followed by rel, which starts with '/'. */
uint8_t	*tv_src(const char *rel, size_t *len);
/* As tv_src, but NULL when the file cannot be opened (an optional vector). */
uint8_t	*tv_src_try(const char *rel, size_t *len);

/* A whole vector in memory: p is NUL-terminated past len; the caller frees it. */
struct tv_buf {
	uint8_t	*p;
	size_t	 len;
};

/* tv_src of dir (under top_srcdir, ending in '/') followed by name. */
struct tv_buf	tv_load(const char *dir, const char *name);
/* Frees b->p and sets it to NULL. */
void		tv_free(struct tv_buf *b);
/*
 * The first n bytes of b in a block of exactly n (1 when n is 0), not
 * NUL-terminated, so ASAN sees a read past them; the caller frees it.
 */
struct tv_buf	tv_prefix(const struct tv_buf *b, size_t n);
/*
 * The string value of key in a wrapper JSON file (teepot, dcap-qvl),
 * unescaped (\n, \", \\, \/): a fixture made at test time from the real
 * file. A missing key or another escape fails the test.
 */
struct tv_buf	tv_json_str(const struct tv_buf *json, const char *key);
/* A memory BIO's content, copied and NUL-terminated; frees the BIO. */
struct tv_buf	tv_bio_take(BIO *bio);
/*
 * The certificate der[0..len) with byte i flipped (der is left as it
 * was), or NULL when that is no longer exactly one certificate.
 */
X509		*tv_x509_flipped(uint8_t *der, size_t len, size_t i);
/*
 * Which bytes of der[0..len) (one DER element or several in a row) a
 * flip test flips: every identifier and length octet of every element,
 * nested ones included (what a parser decides by), and every
 * TV_FLIP_STRIDE-th byte of the rest (contents, each covered by the
 * signature's hash as a whole). marks[i] is set to 1 for each (for every
 * byte when they do not parse as DER); the count is returned. A flip test over a signed object costs a verification a
 * byte, and most of its bytes are keys, signatures and names.
 */
#define TV_FLIP_STRIDE	4
size_t		tv_flip_marks(const uint8_t *der, size_t len, uint8_t *marks);
/* system() of the formatted command (at most 8 KiB); its status. */
int		tv_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * The RIM service's JSON answer for the document at rel (tv_src), built
 * as NVIDIA builds it: id, the base64 document, its SHA-256; caller frees.
 */
char		*tv_rim_envelope(const char *id, const char *rel);

/*
 * A fresh directory tests/tmp/<name>.XXXXXX (of the build tree) into dir,
 * and tests/pki/mkpki.sh's test PKI made in dir/pki, that path into pki.
 * -1 when either cannot be made.
 */
int		tv_pki_dir(const char *name, char *dir, size_t dirlen, char *pki,
		    size_t pkilen);
/* Removes tv_pki_dir's dir (a no-op when it is "") unless KEEP_FIXTURES is set. */
void		tv_pki_dir_free(const char *dir);
/*
 * A PEM file of at most 64 KiB into t's anchors (anchors 1) or pool, as
 * stapled and staplectl read them (attest/ takes bytes only): what
 * ocsp_trust_add_pem returns, or -1 when the file cannot be read or is larger.
 */
int		tv_trust_add_pem(struct ocsp_trust *t, const char *path,
		    int anchors, const char **why);
/*
 * tv_pki_dir for name, then two trusts of its PKI: *full with anchors.pem
 * and intermediates.pem, *bare with anchors.pem only. -1 on any failure.
 */
int		tv_ocsp_pki(const char *name, char *dir, size_t dirlen,
		    char *pki, size_t pkilen, struct ocsp_trust **full,
		    struct ocsp_trust **bare);
/* Frees both trusts and tv_pki_dir_free's dir. */
void		tv_ocsp_pki_free(const char *dir, struct ocsp_trust *full,
		    struct ocsp_trust *bare);

/* The NVIDIA RIM vectors (tests/vectors/nvidia/SOURCES.md), for tv_src. */
#define TV_NV_TESTDATA		"/tests/vectors/nvidia/attestation-sdk/testdata/"
#define TV_RIM_DRIVER_XML	TV_NV_TESTDATA "NV_GPU_DRIVER_GH100_550.144.03.xml"
#define TV_RIM_DRIVER_ID	"NV_GPU_DRIVER_GH100_550.144.03"
#define TV_RIM_SWITCH_XML	TV_NV_TESTDATA \
	"switchVBIOSRim_NV_SWITCH_BIOS_5612_0002_890_9610550001.xml"
#define TV_RIM_SWITCH_ID	"NV_SWITCH_BIOS_5612_0002_890_9610550001"
#define TV_RIM_BADCHAIN_XML	TV_NV_TESTDATA "incorrect_cert_chain_driver_rim.xml"

#endif
