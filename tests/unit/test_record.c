/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for cache/record.c: the byte layout and every rejection. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cache/record.h"

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
	assert_int_equal(buf[3], 0);
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

static void
test_meta_rejects(void **state)
{
	struct cache_meta	m, d;
	uint8_t			buf[RECORD_META_BYTES + 1];
	uint8_t			bad[RECORD_META_BYTES];

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

	memcpy(bad, buf, sizeof(bad));
	bad[0] = RECORD_VERSION + 1;
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), -1);
	bad[0] = 0;
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), -1);

	memcpy(bad, buf, sizeof(bad));
	bad[1] = 0;
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), -1);
	bad[1] = CACHE_KIND_MAX;
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), -1);
	bad[1] = 0xff;
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), -1);
	bad[1] = CACHE_KIND_MAX - 1;
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), 0);

	memcpy(bad, buf, sizeof(bad));
	memset(bad + 68, 'a', RECORD_SOURCE_MAX);
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), -1);
	bad[RECORD_META_BYTES - 1] = '\0';
	assert_int_equal(record_meta_decode(bad, sizeof(bad), &d), 0);
	assert_int_equal(strlen(d.source), RECORD_SOURCE_MAX - 1);
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
	assert_int_equal(len, 9 + sizeof(req) + sizeof(resp));
	assert_int_equal(enc[0], RECORD_VERSION);
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

static void
test_body_rejects(void **state)
{
	static const uint8_t	req[] = "rq", resp[] = "response";
	struct cache_body	b = { req, sizeof(req), resp, sizeof(resp), NULL, 0 }, d;
	uint8_t			*enc, *big;
	size_t			 len;

	(void)state;
	assert_int_equal(record_body_encode(&b, &enc, &len), 0);

	assert_int_equal(record_body_decode(NULL, len, &d), -1);
	assert_int_equal(record_body_decode(enc, 0, &d), -1);
	assert_int_equal(record_body_decode(enc, 8, &d), -1);
	assert_int_equal(record_body_decode(enc, len - 1, &d), -1);
	assert_int_equal(record_body_decode(enc, len + 1, &d), -1);

	enc[0] = RECORD_VERSION + 1;
	assert_int_equal(record_body_decode(enc, len, &d), -1);
	enc[0] = RECORD_VERSION;

	/* Lengths that claim more than the cap, or wrap when summed. */
	enc[1] = enc[2] = enc[3] = enc[4] = 0xff;
	assert_int_equal(record_body_decode(enc, len, &d), -1);
	enc[1] = sizeof(req);
	enc[2] = enc[3] = enc[4] = 0;
	enc[5] = 0xf7; enc[6] = enc[7] = enc[8] = 0xff;
	assert_int_equal(record_body_decode(enc, len, &d), -1);
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
	assert_int_equal(len, 9 + sizeof(resp) + 4 + sizeof(hdr) - 1);
	assert_int_equal(record_body_decode(enc, len, &d), 0);
	assert_int_equal(d.headers_len, sizeof(hdr) - 1);
	assert_memory_equal(d.headers, hdr, sizeof(hdr) - 1);
	assert_memory_equal(d.response, resp, sizeof(resp));
	/* A headers length that disagrees with the size is garbage. */
	assert_int_equal(record_body_decode(enc, len - 1, &d), -1);
	enc[9 + sizeof(resp)] ^= 1;
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

static void
test_kind_names(void **state)
{
	int	k;

	(void)state;
	for (k = 0; k < CACHE_KIND_MAX; k++)
		assert_non_null(cache_kind_str[k]);
	assert_string_equal(cache_kind_str[CACHE_KIND_OCSP], "ocsp");
	assert_string_equal(cache_kind_str[CACHE_KIND_KDS], "kds");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meta_round_trip),
		cmocka_unit_test(test_meta_layout),
		cmocka_unit_test(test_meta_rejects),
		cmocka_unit_test(test_meta_long_source),
		cmocka_unit_test(test_body_round_trip),
		cmocka_unit_test(test_body_no_request),
		cmocka_unit_test(test_body_rejects),
		cmocka_unit_test(test_body_over_cap_header),
		cmocka_unit_test(test_body_headers),
		cmocka_unit_test(test_kind_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
