/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers every room shares: UTC dates without libc time zones, ASN.1 times, RFC 2253 names, hex, FNV-1a. */
#include "config.h"

#include <pthread.h>

#include <openssl/bio.h>
#include <openssl/err.h>

#include "attest/util.h"

/* FNV-1a, 32 bits: the offset basis and the prime of the published parameters. */
#define UTIL_FNV32_BASIS	2166136261u
#define UTIL_FNV32_PRIME	16777619u
#define UTIL_FNV64_PRIME	1099511628211ULL

long long
util_days_from_civil(long long y, unsigned m, unsigned d)
{
	long long	 era;
	unsigned	 yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long long)doe - 719468;
}

int
util_asn1_time(const ASN1_TIME *a, time_t *out)
{
	struct tm	 tm;

	if (a == NULL || !ASN1_TIME_to_tm(a, &tm)) {
		ERR_clear_error();
		return -1;
	}
	*out = (time_t)(util_days_from_civil(tm.tm_year + 1900LL,
	    (unsigned)tm.tm_mon + 1, (unsigned)tm.tm_mday) * 86400 +
	    tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec);
	return 0;
}

void
util_name_rfc2253(const X509_NAME *name, char *buf, size_t len)
{
	BIO	*bio;
	int	 n;

	if (len == 0)
		return;
	buf[0] = '\0';
	if ((bio = BIO_new(BIO_s_mem())) == NULL)
		return;
	if (X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253) >= 0 &&
	    (n = BIO_read(bio, buf, (int)len - 1)) > 0)
		buf[n] = '\0';
	BIO_free(bio);
}

int
util_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
util_unhex(const char *s, size_t n, uint8_t *out, size_t outlen)
{
	size_t	i;
	int	hi, lo;

	if (n != 2 * outlen)
		return -1;
	for (i = 0; i < outlen; i++) {
		if ((hi = util_hexval((unsigned char)s[2 * i])) < 0 ||
		    (lo = util_hexval((unsigned char)s[2 * i + 1])) < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static const EVP_MD	*sha256_md;
static pthread_once_t	 sha256_once = PTHREAD_ONCE_INIT;

static void
sha256_fetch(void)
{
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
#endif
	if (sha256_md == NULL)
		sha256_md = EVP_sha256();
}

const EVP_MD *
util_sha256(void)
{
	pthread_once(&sha256_once, sha256_fetch);
	return sha256_md;
}

void
util_hex(const uint8_t *buf, size_t len, char *out)
{
	static const char	digits[] = "0123456789abcdef";
	size_t			i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[buf[i] >> 4];
		out[2 * i + 1] = digits[buf[i] & 0xf];
	}
	out[2 * len] = '\0';
}

uint32_t
util_fnv1a32(const void *buf, size_t len)
{
	const uint8_t	*p = buf;
	uint32_t	 h = UTIL_FNV32_BASIS;
	size_t		 i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * UTIL_FNV32_PRIME;
	return h;
}

uint64_t
util_fnv1a64(uint64_t h, const void *buf, size_t len)
{
	const uint8_t	*p = buf;
	size_t		 i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * UTIL_FNV64_PRIME;
	return h;
}
