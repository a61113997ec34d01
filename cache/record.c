/* SPDX-License-Identifier: Apache-2.0 */
/* The on-disk record format: little-endian, versioned, checked on read. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cache/crc32c.h"
#include "cache/record.h"

/*
 * Meta layout, RECORD_META_BYTES (132) bytes, all integers little-endian:
 *
 *	  0  u8   version (RECORD_VERSION)
 *	  1  u8   kind
 *	  2  u8   status
 *	  3  u8   check (RECORD_META_CHECK_*)
 *	  4  u16  flags
 *	  6  u16  check value: CRC-32C's low 16 bits, or zero
 *	  8  u32  refresh_failures
 *	 12  i64  this_update
 *	 20  i64  next_update
 *	 28  i64  produced_at
 *	 36  i64  fetched_at
 *	 44  i64  last_served_at
 *	 52  i64  next_refresh_at
 *	 60  u64  served_count
 *	 68  char source[RECORD_SOURCE_MAX], NUL-terminated, zero-filled
 *
 * Bytes 3, 6 and 7 were reserved (written as zero, ignored on read): the
 * check lives there so that a version-1 reader that predates it reads
 * checked records as before, and records it wrote are read unchecked. The check value covers 16 bits, not 32:
 * with the version, kind and source checks beside it, a record of noise
 * passes once in far more than 2^16.
 */
#define META_OFF_VERSION	0
#define META_OFF_KIND		1
#define META_OFF_STATUS		2
#define META_OFF_CHECK		3
#define META_OFF_FLAGS		4
#define META_OFF_CHECKVAL	6
#define META_OFF_FAILURES	8
#define META_OFF_TIMES		12	/* six i64, in struct order */
#define META_OFF_SERVED		60
#define META_OFF_SOURCE		68

/*
 * Body: u8 version, u32 request_len, u32 response_len, request, response,
 * [u32 headers_len, headers], and in RECORD_BODY_VERSION u32 CRC-32C.
 */
#define BODY_HDR_BYTES		9
#define BODY_CRC_BYTES		4

_Static_assert(META_OFF_SOURCE + RECORD_SOURCE_MAX == RECORD_META_BYTES,
    "RECORD_META_BYTES does not match the meta layout");

const char *const cache_found_str[CACHE_FOUND_MAX] = {
	[CACHE_FOUND_STORE] = "store",
	[CACHE_FOUND_LOOKUP] = "lookup",
	[CACHE_FOUND_WALK] = "walk",
	[CACHE_FOUND_WRITE] = "write",
};

static void
put_u16(uint8_t *p, uint16_t v)
{
	p[0] = v & 0xff;
	p[1] = v >> 8;
}

static void
put_u32(uint8_t *p, uint32_t v)
{
	int	i;

	for (i = 0; i < 4; i++)
		p[i] = (v >> (8 * i)) & 0xff;
}

static void
put_u64(uint8_t *p, uint64_t v)
{
	int	i;

	for (i = 0; i < 8; i++)
		p[i] = (v >> (8 * i)) & 0xff;
}

static uint16_t
get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t
get_u32(const uint8_t *p)
{
	uint32_t	v = 0;
	int		i;

	for (i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t
get_u64(const uint8_t *p)
{
	uint64_t	v = 0;
	int		i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* The meta's check value: bytes 6 and 7, which hold it, taken as zero. */
static uint16_t
meta_crc16(const uint8_t *buf)
{
	static const uint8_t	zero[2];
	uint32_t		crc;

	crc = crc32c(0, buf, META_OFF_CHECKVAL);
	crc = crc32c(crc, zero, sizeof(zero));
	crc = crc32c(crc, buf + META_OFF_CHECKVAL + 2,
	    RECORD_META_BYTES - META_OFF_CHECKVAL - 2);
	return (uint16_t)(crc & 0xffff);
}

void
record_meta_encode(const struct cache_meta *m, uint8_t out[RECORD_META_BYTES])
{
	const int64_t	times[6] = { m->this_update, m->next_update,
	    m->produced_at, m->fetched_at, m->last_served_at,
	    m->next_refresh_at };
	size_t		n;
	int		i;

	memset(out, 0, RECORD_META_BYTES);
	out[META_OFF_VERSION] = RECORD_VERSION;
	out[META_OFF_KIND] = m->kind;
	out[META_OFF_STATUS] = m->status;
	put_u16(out + META_OFF_FLAGS, m->flags);
	put_u32(out + META_OFF_FAILURES, m->refresh_failures);
	for (i = 0; i < 6; i++)
		put_u64(out + META_OFF_TIMES + 8 * i, (uint64_t)times[i]);
	put_u64(out + META_OFF_SERVED, m->served_count);
	/* An unterminated source is cut to fit: the record always decodes. */
	n = strnlen(m->source, RECORD_SOURCE_MAX - 1);
	memcpy(out + META_OFF_SOURCE, m->source, n);
	out[META_OFF_CHECK] = RECORD_META_CHECK_CRC16;
	put_u16(out + META_OFF_CHECKVAL, meta_crc16(out));
}

const char *
record_meta_fault(const uint8_t *buf, size_t len)
{
	if (buf == NULL || len != RECORD_META_BYTES)
		return "wrong length";
	if (buf[META_OFF_VERSION] != RECORD_VERSION)
		return "unknown version";
	switch (buf[META_OFF_CHECK]) {
	case RECORD_META_CHECK_NONE:
		/* Written as zero before the check was: a value is damage. */
		if (get_u16(buf + META_OFF_CHECKVAL) != 0)
			return "unchecked, with a check value";
		break;
	case RECORD_META_CHECK_CRC16:
		if (get_u16(buf + META_OFF_CHECKVAL) != meta_crc16(buf))
			return "checksum mismatch";
		break;
	default:
		return "unknown check";
	}
	if (buf[META_OFF_KIND] == 0 || buf[META_OFF_KIND] > CACHE_KIND_SLOTS)
		return "kind out of range";
	if (memchr(buf + META_OFF_SOURCE, '\0', RECORD_SOURCE_MAX) == NULL)
		return "source not terminated";
	return NULL;
}

int
record_meta_decode(const uint8_t *buf, size_t len, struct cache_meta *m)
{
	if (record_meta_fault(buf, len) != NULL)
		return -1;
	memset(m, 0, sizeof(*m));
	m->kind = buf[META_OFF_KIND];
	m->status = buf[META_OFF_STATUS];
	m->flags = get_u16(buf + META_OFF_FLAGS);
	m->refresh_failures = get_u32(buf + META_OFF_FAILURES);
	m->this_update = (int64_t)get_u64(buf + META_OFF_TIMES);
	m->next_update = (int64_t)get_u64(buf + META_OFF_TIMES + 8);
	m->produced_at = (int64_t)get_u64(buf + META_OFF_TIMES + 16);
	m->fetched_at = (int64_t)get_u64(buf + META_OFF_TIMES + 24);
	m->last_served_at = (int64_t)get_u64(buf + META_OFF_TIMES + 32);
	m->next_refresh_at = (int64_t)get_u64(buf + META_OFF_TIMES + 40);
	m->served_count = get_u64(buf + META_OFF_SERVED);
	/* Bytes after the NUL are ignored: strcpy, not memcpy. */
	strcpy(m->source, (const char *)(buf + META_OFF_SOURCE));
	return 0;
}

int
record_source_imported(const struct cache_meta *m)
{
	const size_t	n = sizeof(RECORD_SOURCE_IMPORT) - 1;

	return strncmp(m->source, RECORD_SOURCE_IMPORT, n) == 0 &&
	    (m->source[n] == '\0' || m->source[n] == ':');
}

int
record_body_encode(const struct cache_body *b, uint8_t **out, size_t *outlen)
{
	uint8_t	*p, *at;
	size_t	 n;

	*out = NULL;
	*outlen = 0;
	if (b->request_len > RECORD_MAX_BLOB_BYTES ||
	    b->response_len > RECORD_MAX_BLOB_BYTES ||
	    b->headers_len > RECORD_MAX_BLOB_BYTES)
		return -1;
	if ((b->request == NULL && b->request_len != 0) ||
	    (b->response == NULL && b->response_len != 0) ||
	    (b->headers == NULL && b->headers_len != 0))
		return -1;

	n = BODY_HDR_BYTES + b->request_len + b->response_len + BODY_CRC_BYTES;
	if (b->headers_len != 0)
		n += 4 + b->headers_len;
	if ((p = malloc(n)) == NULL)
		return -1;
	p[0] = RECORD_BODY_VERSION;
	put_u32(p + 1, (uint32_t)b->request_len);
	put_u32(p + 5, (uint32_t)b->response_len);
	at = p + BODY_HDR_BYTES;
	if (b->request_len != 0)
		memcpy(at, b->request, b->request_len);
	at += b->request_len;
	if (b->response_len != 0)
		memcpy(at, b->response, b->response_len);
	at += b->response_len;
	if (b->headers_len != 0) {
		put_u32(at, (uint32_t)b->headers_len);
		memcpy(at + 4, b->headers, b->headers_len);
		at += 4 + b->headers_len;
	}
	put_u32(at, crc32c(0, p, n - BODY_CRC_BYTES));
	*out = p;
	*outlen = n;
	return 0;
}

/*
 * The body's layout in its first len bytes (the checksum, if any, cut
 * off): NULL and b filled, or why it is not one.
 */
static const char *
body_parse(const uint8_t *buf, size_t len, struct cache_body *b)
{
	uint32_t	reqlen, resplen, hdrlen;
	size_t		base;

	if (len < BODY_HDR_BYTES)
		return "shorter than its header";
	reqlen = get_u32(buf + 1);
	resplen = get_u32(buf + 5);
	/* Capped first, so the sum below cannot wrap. */
	if (reqlen > RECORD_MAX_BLOB_BYTES || resplen > RECORD_MAX_BLOB_BYTES)
		return "a length over the cap";
	base = BODY_HDR_BYTES + (size_t)reqlen + resplen;
	b->headers = NULL;
	b->headers_len = 0;
	if (len != base) {
		if (len < base + 4)
			return "lengths do not add up";
		hdrlen = get_u32(buf + base);
		if (hdrlen == 0 || hdrlen > RECORD_MAX_BLOB_BYTES ||
		    len != base + 4 + (size_t)hdrlen)
			return "lengths do not add up";
		b->headers = buf + base + 4;
		b->headers_len = hdrlen;
	}

	b->request_len = reqlen;
	b->request = reqlen != 0 ? buf + BODY_HDR_BYTES : NULL;
	b->response_len = resplen;
	b->response = resplen != 0 ? buf + BODY_HDR_BYTES + reqlen : NULL;
	return NULL;
}

/* NULL and b filled, or why the record fails its check. */
static const char *
body_check(const uint8_t *buf, size_t len, struct cache_body *b)
{
	if (buf == NULL || len == 0)
		return "empty";
	switch (buf[0]) {
	case RECORD_VERSION:
		return body_parse(buf, len, b);
	case RECORD_BODY_VERSION:
		if (len < BODY_HDR_BYTES + BODY_CRC_BYTES)
			return "shorter than its header";
		len -= BODY_CRC_BYTES;
		if (crc32c(0, buf, len) != get_u32(buf + len))
			return "checksum mismatch";
		return body_parse(buf, len, b);
	default:
		return "unknown version";
	}
}

int
record_body_decode(const uint8_t *buf, size_t len, struct cache_body *b)
{
	struct cache_body	d;

	if (body_check(buf, len, &d) != NULL)
		return -1;
	*b = d;
	return 0;
}

const char *
record_body_fault(const uint8_t *buf, size_t len)
{
	struct cache_body	d;

	return body_check(buf, len, &d);
}
