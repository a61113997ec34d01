/* SPDX-License-Identifier: Apache-2.0 */
/* Whole files for the unit tests: vectors and fixtures read into memory. */
#include "config.h"

#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <openssl/evp.h>

#include "attest/ocsp_verify.h"
#include "tv.h"

/* f's whole content, NUL-terminated; closes f. */
static uint8_t *
tv_slurp(FILE *f, const char *path, size_t *len)
{
	uint8_t	*buf;
	long	 n = -1;

	if (fseek(f, 0, SEEK_END) == 0)
		n = ftell(f);
	if (n < 0)
		fail_msg("%s: cannot size", path);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n)
		fail_msg("%s: short read", path);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

uint8_t *
tv_file(const char *path, size_t *len)
{
	FILE	*f;

	if ((f = fopen(path, "rb")) == NULL)
		fail_msg("%s: cannot open (is top_srcdir set?)", path);
	return tv_slurp(f, path, len);
}

/* "$top_srcdir" + rel into path. */
static void
tv_path(const char *rel, char *path, size_t pathlen)
{
	const char	*top = getenv("top_srcdir");

	if ((size_t)snprintf(path, pathlen, "%s%s", top ? top : ".", rel) >= pathlen)
		fail_msg("%s: path too long", rel);
}

uint8_t *
tv_src(const char *rel, size_t *len)
{
	char	path[TV_REL_BYTES];

	tv_path(rel, path, sizeof(path));
	return tv_file(path, len);
}

uint8_t *
tv_src_try(const char *rel, size_t *len)
{
	char	 path[TV_REL_BYTES];
	FILE	*f;

	tv_path(rel, path, sizeof(path));
	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	return tv_slurp(f, path, len);
}

struct tv_buf
tv_load(const char *dir, const char *name)
{
	char		rel[TV_REL_BYTES];
	struct tv_buf	b;

	if ((size_t)snprintf(rel, sizeof(rel), "%s%s", dir, name) >= sizeof(rel))
		fail_msg("%s%s: path too long", dir, name);
	b.p = tv_src(rel, &b.len);
	return b;
}

void
tv_free(struct tv_buf *b)
{
	free(b->p);
	b->p = NULL;
}

struct tv_buf
tv_prefix(const struct tv_buf *b, size_t n)
{
	struct tv_buf	cut;

	cut.len = n;
	assert_non_null(cut.p = malloc(n > 0 ? n : 1));
	memcpy(cut.p, b->p, n);
	return cut;
}

struct tv_buf
tv_json_str(const struct tv_buf *json, const char *key)
{
	char		 pat[128];
	const char	*s, *p;
	struct tv_buf	 b;
	size_t		 n = 0;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	if ((s = strstr((const char *)json->p, pat)) == NULL)
		fail_msg("no field %s", key);
	s += strlen(pat);
	while (*s == ' ' || *s == ':')
		s++;
	assert_int_equal(*s, '"');
	assert_non_null(b.p = malloc(strlen(s) + 1));
	for (p = s + 1; *p != '"'; p++) {
		assert_int_not_equal(*p, '\0');
		if (*p != '\\') {
			b.p[n++] = (uint8_t)*p;
			continue;
		}
		switch (*++p) {
		case 'n':
			b.p[n++] = '\n';
			break;
		case '"':
		case '\\':
		case '/':
			b.p[n++] = (uint8_t)*p;
			break;
		default:
			fail_msg("escape \\%c not expected in %s", *p, key);
		}
	}
	b.p[n] = '\0';
	b.len = n;
	return b;
}

int
tv_sh(const char *fmt, ...)
{
	char	 cmd[8192];
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(cmd));
	return system(cmd);
}

char *
tv_rim_envelope(const char *id, const char *rel)
{
	unsigned char	 md[32];
	char		 hex[65], *b64, *json;
	uint8_t		*xml;
	size_t		 i, len, jlen;
	int		 n;

	xml = tv_src(rel, &len);
	assert_int_equal(EVP_Digest(xml, len, md, NULL, EVP_sha256(), NULL), 1);
	for (i = 0; i < sizeof(md); i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	assert_non_null(b64 = malloc(len / 3 * 4 + 8));
	assert_true((n = EVP_EncodeBlock((unsigned char *)b64, xml, (int)len)) > 0);
	jlen = (size_t)n + strlen(id) + 256;
	assert_non_null(json = malloc(jlen));
	snprintf(json, jlen, "{\"id\": \"%s\", \"rim\": \"%s\", \"sha256\": "
	    "\"%s\", \"rim_format\": \"SWID\", \"request_id\": \"r-1\"}", id,
	    b64, hex);
	free(b64);
	free(xml);
	return json;
}

int
tv_pki_dir(const char *name, char *dir, size_t dirlen, char *pki, size_t pkilen)
{
	const char	*top = getenv("top_srcdir");

	mkdir("tests", 0755);
	mkdir("tests/tmp", 0755);
	snprintf(dir, dirlen, "tests/tmp/%s.XXXXXX", name);
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(pki, pkilen, "%s/pki", dir);
	return tv_sh("%s/tests/pki/mkpki.sh %s", top ? top : ".", pki) == 0 ? 0 : -1;
}

void
tv_pki_dir_free(const char *dir)
{
	if (getenv("KEEP_FIXTURES") == NULL && dir[0] != '\0')
		tv_sh("rm -rf %s", dir);
}

int
tv_trust_add_pem(struct ocsp_trust *t, const char *path, int anchors,
    const char **why)
{
	FILE	*f;
	char	 buf[1 << 16];
	size_t	 n;

	if ((f = fopen(path, "rb")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if (n == sizeof(buf))
		return -1;
	return ocsp_trust_add_pem(t, anchors, buf, n, why);
}

int
tv_ocsp_pki(const char *name, char *dir, size_t dirlen, char *pki,
    size_t pkilen, struct ocsp_trust **full, struct ocsp_trust **bare)
{
	char	path[TV_REL_BYTES];

	if (tv_pki_dir(name, dir, dirlen, pki, pkilen) == -1)
		return -1;
	if ((*full = ocsp_trust_new()) == NULL ||
	    (*bare = ocsp_trust_new()) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/anchors.pem", pki);
	if (tv_trust_add_pem(*full, path, 1, NULL) != 1 ||
	    tv_trust_add_pem(*bare, path, 1, NULL) != 1)
		return -1;
	snprintf(path, sizeof(path), "%s/intermediates.pem", pki);
	return tv_trust_add_pem(*full, path, 0, NULL) == 2 ? 0 : -1;
}

void
tv_ocsp_pki_free(const char *dir, struct ocsp_trust *full,
    struct ocsp_trust *bare)
{
	ocsp_trust_free(full);
	ocsp_trust_free(bare);
	tv_pki_dir_free(dir);
}

struct tv_buf
tv_bio_take(BIO *bio)
{
	struct tv_buf	 b;
	char		*data;
	long		 n;

	assert_true((n = BIO_get_mem_data(bio, &data)) >= 0);
	b.len = (size_t)n;
	assert_non_null(b.p = malloc(b.len + 1));
	memcpy(b.p, data, b.len);
	b.p[b.len] = '\0';
	BIO_free(bio);
	return b;
}

/* Mark the identifier and length octets of the elements in [at, end); 0, or -1 where they stop parsing. */
static int
flip_marks_tlv(const uint8_t *der, size_t at, size_t end, uint8_t *marks)
{
	size_t	n, clen, k;
	uint8_t	tag;

	while (at < end) {
		tag = der[at];
		marks[at++] = 1;
		if ((tag & 0x1f) == 0x1f)	/* high tag number form */
			do {
				if (at >= end)
					return -1;
				marks[at] = 1;
			} while (der[at++] & 0x80);
		if (at >= end)
			return -1;
		marks[at] = 1;
		if (der[at] < 0x80)
			clen = der[at++];
		else {
			n = der[at++] & 0x7f;
			if (n == 0 || n > sizeof(size_t) || end - at < n)
				return -1;
			for (clen = 0, k = 0; k < n; k++) {
				marks[at] = 1;
				clen = clen << 8 | der[at++];
			}
		}
		if (clen > end - at)
			return -1;
		if ((tag & 0x20) &&
		    flip_marks_tlv(der, at, at + clen, marks) == -1)
			return -1;
		at += clen;
	}
	return 0;
}

size_t
tv_flip_marks(const uint8_t *der, size_t len, uint8_t *marks)
{
	size_t	i, n = 0;

	memset(marks, 0, len);
	if (flip_marks_tlv(der, 0, len, marks) == -1)
		memset(marks, 1, len);	/* not DER: every byte */
	for (i = 0; i < len; i++) {
		if (i % TV_FLIP_STRIDE == 0)
			marks[i] = 1;
		n += marks[i];
	}
	return n;
}

X509 *
tv_x509_flipped(uint8_t *der, size_t len, size_t i)
{
	const uint8_t	*p = der;
	X509		*x;

	der[i] ^= 0x01;
	x = d2i_X509(NULL, &p, (long)len);
	der[i] ^= 0x01;
	if (x != NULL && p != der + len) {
		X509_free(x);
		x = NULL;
	}
	return x;
}
