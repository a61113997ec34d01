/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers every room shares: UTC dates without libc time zones, ASN.1 times, RFC 2253 names, hex, FNV-1a. */
#ifndef ATTEST_UTIL_H
#define ATTEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/asn1.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1-12); no time zone, no libc. */
long long	util_days_from_civil(long long y, unsigned m, unsigned d);
/* An ASN.1 UTCTime/GeneralizedTime as seconds since the epoch; 0, or -1 (OpenSSL's error queue cleared). */
int		util_asn1_time(const ASN1_TIME *, time_t *out);
/* A name in RFC 2253 form, cut to len; "" when it cannot be printed. */
void		util_name_rfc2253(const X509_NAME *, char *buf, size_t len);
/* The value of one hex digit (either case), or -1. */
int		util_hexval(int c);
/*
 * Exactly 2 * outlen hex digits of s[0..n) (either case) into out. 0, or
 * -1 when n is not 2 * outlen or a character is not a hex digit.
 */
int		util_unhex(const char *s, size_t n, uint8_t *out, size_t outlen);
/* len bytes as lower-case hex into out (2 * len + 1 bytes, NUL-terminated). */
void		util_hex(const uint8_t *buf, size_t len, char *out);
/*
 * SHA-256, fetched from the default provider once per process: with
 * OpenSSL 3 an EVP_sha256() given to an init is fetched again at every
 * init, which on a cache hit costs more than hashing the key. Never NULL
 * (EVP_sha256() when the fetch fails); lives until exit. Thread-safe.
 */
const EVP_MD	*util_sha256(void);
/*
 * The 32-bit FNV-1a hash of buf[0..len) (len 0: the offset basis). For
 * spreading keys over hash slots, never for anything a peer could attack
 * for more than a slower slot; cannot fail.
 */
uint32_t	util_fnv1a32(const void *buf, size_t len);
/*
 * The 64-bit FNV-1a hash, continued over buf[0..len) from h: start with
 * UTIL_FNV64_BASIS, and pass the result on to hash pieces in turn. The
 * same caveat; cannot fail.
 */
#define UTIL_FNV64_BASIS	14695981039346656037ULL
uint64_t	util_fnv1a64(uint64_t h, const void *buf, size_t len);

#endif
