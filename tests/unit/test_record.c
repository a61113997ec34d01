/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for cache/record.c and cache/crc32c.c: the byte layout, the checksums, old records still read, and every rejection. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cache/crc32c.h"
#include "cache/record.h"
#include "entry/kinds.h"

static void
sample_meta(struct cache_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->kind = CACHE_KIND_OCSP;
	m->status = 2;
	m->flags = CACHE_F_NO_REFRESH | 0x8000;
	m->refresh_failures = 0xdeadbeef;
	m->this_update = 0x0102030405060708LL;
	m->next_update = -1;
	m->produced_at = 1700000000;
	m->fetched_at = 1700000005;
	m->last_served_at = INT64_MAX;
	m->next_refresh_at = INT64_MIN;
	m->served_count = UINT64_MAX - 1;
	strcpy(m->source, "nvidia-primary");
}

/* A meta as written before records had a check: byte 3 and bytes 6-7 zero. */
static void
meta_unchecked(uint8_t *buf)
{
	buf[3] = RECORD_META_CHECK_NONE;
	buf[6] = buf[7] = 0;
}

/* Seal a meta altered by hand again, as the writer would have. */
static void
meta_reseal(uint8_t *buf)
{
	static const uint8_t	zero[2];
	uint32_t		crc;

	buf[3] = RECORD_META_CHECK_CRC16;
	crc = crc32c(0, buf, 6);
	crc = crc32c(crc, zero, 2);
	crc = crc32c(crc, buf + 8, RECORD_META_BYTES - 8);
	buf[6] = crc & 0xff;
	buf[7] = (crc >> 8) & 0xff;
}

/* A checked body of len bytes made into the unchecked version 1: 4 bytes shorter. */
static size_t
body_unchecked(uint8_t *enc, size_t len)
{
	enc[0] = RECORD_VERSION;
	return len - 4;
}

/* Seal a checked body altered by hand again. */
static void
body_reseal(uint8_t *enc, size_t len)
{
	uint32_t	crc = crc32c(0, enc, len - 4);
	int		i;

	for (i = 0; i < 4; i++)
		enc[len - 4 + i] = (crc >> (8 * i)) & 0xff;
}

static void
test_crc32c(void **state)
{
	static const uint8_t	zeros[32], ones[32] = {
	    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t			buf[1000], copy[997];
	size_t			i, cut;
	uint32_t		whole;

	(void)state;
	/* RFC 3720 B.4 and the usual check value. */
	assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283);
	assert_int_equal(crc32c(0, zeros, sizeof(zeros)), 0x8a9136aa);
	assert_int_equal(crc32c(0, ones, sizeof(ones)), 0x62a8ab43);
	assert_int_equal(crc32c(0, NULL, 0), 0);
	/* In parts, cut anywhere (the 8-byte steps and the tail), as in one. */
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 31 + 7);
	whole = crc32c(0, buf, sizeof(buf));
	for (cut = 0; cut <= 17; cut++)
		assert_int_equal(crc32c(crc32c(0, buf, cut), buf + cut,
		    sizeof(buf) - cut), whole);
	/* Unaligned starts. */
	memcpy(copy, buf + 3, sizeof(copy));
	assert_int_equal(crc32c(0, buf + 3, sizeof(copy)),
	    crc32c(0, copy, sizeof(copy)));
}

static void
test_meta_round_trip(void **state)
{
	struct cache_meta	m, d;
	uint8_t			buf[RECORD_META_BYTES];

	(void)state;
	sample_meta(&m);
	record_meta_encode(&m, buf);
	assert_int_equal(record_meta_decode(buf, sizeof(buf), &d), 0);
	assert_memory_equal(&m, &d, sizeof(m));
}

/* The format is on disk: pin it, so a struct change cannot move it silently. */
static void
test_meta_layout(void **state)
{
	struct cache_meta	m;
	uint8_t			buf[RECORD_META_BYTES];
	static const uint8_t	tu[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };

	(void)state;
	assert_int_equal(RECORD_META_BYTES, 132);
	sample_meta(&m);
	record_meta_encode(&m, buf);
	assert_int_equal(buf[0], RECORD_VERSION);
	assert_int_equal(buf[1], CACHE_KIND_OCSP);
	assert_int_equal(buf[2], 2);
	assert_int_equal(buf[3], RECORD_META_CHECK_CRC16);
	assert_int_equal(buf[4], 0x01);
	assert_int_equal(buf[5], 0x80);
	assert_int_equal(buf[8], 0xef);
	assert_int_equal(buf[11], 0xde);
	assert_memory_equal(buf + 12, tu, 8);
	assert_int_equal(buf[20], 0xff);	/* next_update -1 */
	assert_int_equal(buf[60], 0xfe);	/* served_count low byte */
	assert_string_equal((const char *)buf + 68, "nvidia-primary");
	assert_int_equal(buf[RECORD_META_BYTES - 1], 0);
}

/* Structure rejections, in the checked form (sealed again) and in the unchecked one. */
static void
meta_rejects_as(const uint8_t *buf, void (*seal)(uint8_t *))
{
	struct cache_meta	d;
	uint8_t			bad[RECORD_META_BYTES];

	memcpy(bad, buf, sizeof(bad));
	bad[0] = RECORD_VERSION + 1;
	seal(bad);
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), -1);
	assert_string_equal(record_meta_fault(bad, sizeof(bad)),
	    "unknown version");
	bad[0] = 0;
	seal(bad);
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), -1);

	memcpy(bad, buf, sizeof(bad));
	bad[1] = 0;
	seal(bad);
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), -1);
	assert_string_equal(record_meta_fault(bad, sizeof(bad)),
	    "kind out of range");
	bad[1] = CACHE_KIND_SLOTS + 1;
	seal(bad);
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), -1);
	bad[1] = 0xff;
	seal(bad);
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), -1);
	bad[1] = CACHE_KIND_SLOTS;
	seal(bad);
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), 0);
	assert_null(record_meta_fault(bad, sizeof(bad)));

	memcpy(bad, buf, sizeof(bad));
	memset(bad + 68, 'a', RECORD_SOURCE_MAX);
	seal(bad);
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), -1);
	assert_string_equal(record_meta_fault(bad, sizeof(bad)),
	    "source not terminated");
	bad[RECORD_META_BYTES - 1] = '\0';
	seal(bad);
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), 0);
	assert_int_equal(strlen(d.source), RECORD_SOURCE_MAX - 1);
}

static void
test_meta_rejects(void **state)
{
	struct cache_meta	m, d;
	uint8_t			buf[RECORD_META_BYTES + 1];

	(void)state;
	sample_meta(&m);
	record_meta_encode(&m, buf);
	buf[RECORD_META_BYTES] = 0;

	assert_int_equal(record_meta_decode(NULL, RECORD_META_BYTES, &d), -1);
	assert_int_equal(record_meta_decode(buf, 0, &d), -1);
	assert_int_equal(record_meta_decode(buf, RECORD_META_BYTES - 1, &d),
	    -1);
	assert_int_equal(record_meta_decode(buf, RECORD_META_BYTES + 1, &d),
	    -1);
	assert_string_equal(record_meta_fault(buf, RECORD_META_BYTES + 1),
	    "wrong length");

	meta_rejects_as(buf, meta_reseal);
	meta_unchecked(buf);
	meta_rejects_as(buf, meta_unchecked);
}

/*
 * Any one byte altered in a checked meta, structure intact, is found by
 * its checksum: every byte of the record, each flipped every way.
 */
static void
test_meta_checksum(void **state)
{
	struct cache_meta	m, d;
	uint8_t			buf[RECORD_META_BYTES];
	size_t			i;
	unsigned		x;

	(void)state;
	sample_meta(&m);
	record_meta_encode(&m, buf);
	assert_null(record_meta_fault(buf, sizeof(buf)));
	for (i = 0; i < sizeof(buf); i++)
		for (x = 1; x < 256; x++) {
			buf[i] ^= x;
			assert_int_equal(record_meta_decode(buf, sizeof(buf),
			    &d), -1);
			buf[i] ^= x;
		}
	/* nextUpdate moved a year on: refused, never served longer. */
	buf[20 + 3] ^= 0x01;
	assert_string_equal(record_meta_fault(buf, sizeof(buf)),
	    "checksum mismatch");
	buf[20 + 3] ^= 0x01;
	/* A check byte nobody writes is damage, not an old record. */
	buf[3] = 2;
	assert_string_equal(record_meta_fault(buf, sizeof(buf)),
	    "unknown check");
}

/* A meta written before there were checks (byte 3 zero) is still read, to the same fields. */
static void
test_meta_old_still_read(void **state)
{
	struct cache_meta	m, d;
	uint8_t			buf[RECORD_META_BYTES];

	(void)state;
	sample_meta(&m);
	record_meta_encode(&m, buf);
	meta_unchecked(buf);
	assert_int_equal(record_meta_decode(buf, sizeof(buf), &d), 0);
	assert_memory_equal(&m, &d, sizeof(m));
	/* Unchecked: an altered time passes (the structure is all there is). */
	buf[20] ^= 1;
	assert_int_equal(record_meta_decode(buf, sizeof(buf), &d), 0);
	/* Unchecked records were written with bytes 6-7 zero: a value is damage. */
	buf[6] = 0x01;
	assert_int_equal(record_meta_decode(buf, sizeof(buf), &d), -1);
	assert_string_equal(record_meta_fault(buf, sizeof(buf)),
	    "unchecked, with a check value");
}

/* A caller's unterminated source is cut, never read past, and still decodes. */
static void
test_meta_long_source(void **state)
{
	struct cache_meta	m, d;
	uint8_t			buf[RECORD_META_BYTES];

	(void)state;
	sample_meta(&m);
	memset(m.source, 'x', sizeof(m.source));
	record_meta_encode(&m, buf);
	assert_int_equal(record_meta_decode(buf, sizeof(buf), &d), 0);
	assert_int_equal(strlen(d.source), RECORD_SOURCE_MAX - 1);
	assert_int_equal(d.source[0], 'x');
}

static void
test_body_round_trip(void **state)
{
	static const uint8_t	req[] = { 0x30, 0x03, 0x01, 0x02, 0x03 };
	uint8_t			resp[1000];
	struct cache_body	b = { req, sizeof(req), resp, sizeof(resp), NULL, 0 }, d;
	uint8_t			*enc;
	size_t			 len;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(resp); i++)
		resp[i] = i * 7;
	assert_int_equal(record_body_encode(&b, &enc, &len), 0);
	assert_int_equal(len, 9 + sizeof(req) + sizeof(resp) + 4);
	assert_int_equal(enc[0], RECORD_BODY_VERSION);
	assert_int_equal(enc[1], sizeof(req));
	assert_int_equal(enc[5], sizeof(resp) & 0xff);
	assert_int_equal(enc[6], sizeof(resp) >> 8);
	assert_int_equal(record_body_decode(enc, len, &d), 0);
	assert_int_equal(d.request_len, sizeof(req));
	assert_memory_equal(d.request, req, sizeof(req));
	assert_int_equal(d.response_len, sizeof(resp));
	assert_memory_equal(d.response, resp, sizeof(resp));
	/* Decoded pointers borrow the buffer. */
	assert_ptr_equal(d.request, enc + 9);
	free(enc);
}

static void
test_body_no_request(void **state)
{
	static const uint8_t	resp[] = "response";
	struct cache_body	b = { NULL, 0, resp, sizeof(resp), NULL, 0 }, d;
	uint8_t			*enc;
	size_t			 len;

	(void)state;
	assert_int_equal(record_body_encode(&b, &enc, &len), 0);
	assert_int_equal(record_body_decode(enc, len, &d), 0);
	assert_null(d.request);
	assert_int_equal(d.request_len, 0);
	assert_memory_equal(d.response, resp, sizeof(resp));
	free(enc);
}

/* Structure rejections of the body enc (len bytes), sealed again by seal (or not: NULL). */
static void
body_rejects_as(uint8_t *enc, size_t len, void (*seal)(uint8_t *, size_t))
{
	struct cache_body	d;
	uint8_t			save[9], *longer;

	memcpy(save, enc, sizeof(save));
	assert_int_equal(record_body_decode(NULL, len, &d), -1);
	assert_int_equal(record_body_decode(enc, 0, &d), -1);
	assert_int_equal(record_body_decode(enc, 8, &d), -1);
	assert_int_equal(record_body_decode(enc, len - 1, &d), -1);
	/* One byte more than the record, in a buffer that holds it. */
	longer = malloc(len + 1);
	assert_non_null(longer);
	memcpy(longer, enc, len);
	longer[len] = 0;
	assert_int_equal(record_body_decode(longer, len + 1, &d), -1);
	free(longer);

	enc[0] = RECORD_BODY_VERSION + 1;
	assert_int_equal(record_body_decode(enc, len, &d), -1);
	assert_string_equal(record_body_fault(enc, len), "unknown version");
	memcpy(enc, save, sizeof(save));

	/* Lengths that claim more than the cap, or wrap when summed. */
	enc[1] = enc[2] = enc[3] = enc[4] = 0xff;
	if (seal != NULL)
		seal(enc, len);
	assert_int_equal(record_body_decode(enc, len, &d), -1);
	assert_string_equal(record_body_fault(enc, len), "a length over the cap");
	memcpy(enc, save, sizeof(save));
	enc[5] = 0xf7; enc[6] = enc[7] = enc[8] = 0xff;
	if (seal != NULL)
		seal(enc, len);
	assert_int_equal(record_body_decode(enc, len, &d), -1);
	memcpy(enc, save, sizeof(save));
	/* One byte more response claimed than there is. */
	enc[5]++;
	if (seal != NULL)
		seal(enc, len);
	assert_string_equal(record_body_fault(enc, len),
	    "lengths do not add up");
	memcpy(enc, save, sizeof(save));
	if (seal != NULL)
		seal(enc, len);
	assert_int_equal(record_body_decode(enc, len, &d), 0);
}

static void
test_body_rejects(void **state)
{
	static const uint8_t	req[] = "rq", resp[] = "response";
	struct cache_body	b = { req, sizeof(req), resp, sizeof(resp), NULL, 0 }, d;
	uint8_t			*enc, *big;
	size_t			 len;

	(void)state;
	assert_int_equal(record_body_encode(&b, &enc, &len), 0);
	body_rejects_as(enc, len, body_reseal);
	len = body_unchecked(enc, len);
	body_rejects_as(enc, len, NULL);
	free(enc);

	/* Exactly at the cap is fine; one byte over is not, both ways. */
	big = calloc(1, RECORD_MAX_BLOB_BYTES + 1);
	assert_non_null(big);
	b.request = NULL;
	b.request_len = 0;
	b.response = big;
	b.response_len = RECORD_MAX_BLOB_BYTES;
	assert_int_equal(record_body_encode(&b, &enc, &len), 0);
	assert_int_equal(record_body_decode(enc, len, &d), 0);
	free(enc);
	b.response_len = RECORD_MAX_BLOB_BYTES + 1;
	assert_int_equal(record_body_encode(&b, &enc, &len), -1);
	assert_null(enc);
	b.request = big;
	b.request_len = RECORD_MAX_BLOB_BYTES + 1;
	b.response_len = 1;
	assert_int_equal(record_body_encode(&b, &enc, &len), -1);
	free(big);

	/* A length with no bytes behind it. */
	b.request = NULL;
	b.request_len = 4;
	assert_int_equal(record_body_encode(&b, &enc, &len), -1);
}

/*
 * The case a structure check cannot see: any one byte of a checked body
 * altered (the vendor's bytes, a length, the checksum itself), each
 * flipped every way, is refused; never served as stored.
 */
static void
test_body_checksum(void **state)
{
	static const uint8_t	req[] = { 0x30, 0x03, 0x01, 0x02, 0x03 };
	static const char	hdr[] = "Content-Type: x\r\n";
	uint8_t			resp[300];
	struct cache_body	b = { req, sizeof(req), resp, sizeof(resp),
				    (const uint8_t *)hdr, sizeof(hdr) - 1 }, d;
	uint8_t			*enc;
	size_t			 len, i;
	unsigned		 x;

	(void)state;
	for (i = 0; i < sizeof(resp); i++)
		resp[i] = (uint8_t)(i * 13);
	assert_int_equal(record_body_encode(&b, &enc, &len), 0);
	assert_null(record_body_fault(enc, len));
	for (i = 0; i < len; i++)
		for (x = 1; x < 256; x++) {
			enc[i] ^= x;
			assert_int_equal(record_body_decode(enc, len, &d), -1);
			enc[i] ^= x;
		}
	/* A byte of the response: structure intact, only the sum says so. */
	enc[9 + sizeof(req) + 100] ^= 0x40;
	assert_string_equal(record_body_fault(enc, len), "checksum mismatch");
	enc[9 + sizeof(req) + 100] ^= 0x40;
	/* Cut short, or taken for an old record: refused as well. */
	assert_int_equal(record_body_decode(enc, len - 4, &d), -1);
	enc[0] = RECORD_VERSION;
	assert_int_equal(record_body_decode(enc, len, &d), -1);
	free(enc);
}

/* A body written before the checksum (version 1) is still read, to the same bytes. */
static void
test_body_old_still_read(void **state)
{
	static const uint8_t	req[] = "rq";
	static const char	hdr[] = "Content-Type: x\r\n";
	uint8_t			resp[5000];
	struct cache_body	b = { req, sizeof(req), resp, sizeof(resp),
				    NULL, 0 }, d;
	uint8_t			*enc;
	size_t			 len, i;

	(void)state;
	for (i = 0; i < sizeof(resp); i++)
		resp[i] = (uint8_t)(i * 5);
	assert_int_equal(record_body_encode(&b, &enc, &len), 0);
	len = body_unchecked(enc, len);
	assert_int_equal(len, 9 + sizeof(req) + sizeof(resp));
	assert_int_equal(record_body_decode(enc, len, &d), 0);
	assert_memory_equal(d.request, req, sizeof(req));
	assert_memory_equal(d.response, resp, sizeof(resp));
	assert_null(d.headers);
	/* Unchecked: an altered byte of the response is not seen. */
	enc[100] ^= 1;
	assert_null(record_body_fault(enc, len));
	free(enc);

	b.headers = (const uint8_t *)hdr;
	b.headers_len = sizeof(hdr) - 1;
	assert_int_equal(record_body_encode(&b, &enc, &len), 0);
	len = body_unchecked(enc, len);
	assert_int_equal(record_body_decode(enc, len, &d), 0);
	assert_int_equal(d.headers_len, sizeof(hdr) - 1);
	assert_memory_equal(d.headers, hdr, sizeof(hdr) - 1);
	free(enc);
}

static void
test_body_headers(void **state)
{
	static const uint8_t	resp[] = { 1, 2, 3 };
	static const char	hdr[] = "TCB-Info-Issuer-Chain: x\r\n";
	struct cache_body	b = { NULL, 0, resp, sizeof(resp),
				    (const uint8_t *)hdr, sizeof(hdr) - 1 }, d;
	uint8_t			*enc;
	size_t			 len;

	(void)state;
	assert_int_equal(record_body_encode(&b, &enc, &len), 0);
	assert_int_equal(len, 9 + sizeof(resp) + 4 + sizeof(hdr) - 1 + 4);
	assert_int_equal(record_body_decode(enc, len, &d), 0);
	assert_int_equal(d.headers_len, sizeof(hdr) - 1);
	assert_memory_equal(d.headers, hdr, sizeof(hdr) - 1);
	assert_memory_equal(d.response, resp, sizeof(resp));
	/* A headers length that disagrees with the size is garbage. */
	assert_int_equal(record_body_decode(enc, len - 1, &d), -1);
	enc[9 + sizeof(resp)] ^= 1;
	body_reseal(enc, len);
	assert_int_equal(record_body_decode(enc, len, &d), -1);
	free(enc);
}

/* Hand-made header claiming more than the cap: rejected before any use. */
static void
test_body_over_cap_header(void **state)
{
	uint8_t			buf[9] = { RECORD_VERSION, 0, 0, 0, 0 };
	struct cache_body	d;
	uint32_t		n = RECORD_MAX_BLOB_BYTES + 1;

	(void)state;
	buf[5] = n & 0xff;
	buf[6] = (n >> 8) & 0xff;
	buf[7] = (n >> 16) & 0xff;
	buf[8] = n >> 24;
	assert_int_equal(record_body_decode(buf, sizeof(buf), &d), -1);
	assert_int_equal(buf[0], RECORD_VERSION);
	memset(buf + 1, 0, 8);
	assert_int_equal(record_body_decode(buf, sizeof(buf), &d), 0);
	assert_int_equal(d.response_len, 0);
}

/* An import's source: "import" or "import:NAME", nothing else. */
static void
test_source_imported(void **state)
{
	static const struct { const char *src; int imported; } c[] = {
		{ "import:stapled-20261201T0800Z.jsonl", 1 }, { "import", 1 },
		{ "import:", 1 }, { "imported", 0 }, { "importer:x", 0 },
		{ "nvidia-primary", 0 }, { "", 0 }, { "salvaged", 0 },
	};
	struct cache_meta	m;
	size_t			i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		memset(&m, 0, sizeof(m));
		strcpy(m.source, c[i].src);
		assert_int_equal(record_source_imported(&m), c[i].imported);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c),
		cmocka_unit_test(test_meta_round_trip),
		cmocka_unit_test(test_meta_layout),
		cmocka_unit_test(test_meta_rejects),
		cmocka_unit_test(test_meta_checksum),
		cmocka_unit_test(test_meta_old_still_read),
		cmocka_unit_test(test_meta_long_source),
		cmocka_unit_test(test_body_round_trip),
		cmocka_unit_test(test_body_no_request),
		cmocka_unit_test(test_body_rejects),
		cmocka_unit_test(test_body_checksum),
		cmocka_unit_test(test_body_old_still_read),
		cmocka_unit_test(test_body_over_cap_header),
		cmocka_unit_test(test_body_headers),
		cmocka_unit_test(test_source_imported),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
