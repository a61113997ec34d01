/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for tools/bundle.c: round trip, every truncation, flipped byte and unknown version refused, and the streaming reader's bounds. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "attest/util.h"
#include "tools/bundle.h"

#define T0	1700000000

struct fixture {
	uint8_t	*cert;		/* a throwaway self-signed CA, DER */
	size_t	 cert_len;
	char	*buf;		/* a bundle of three entries and the cert */
	size_t	 len;
};

static uint8_t	req1[] = { 0x30, 0x03, 0x02, 0x01, 0x01 };
static uint8_t	resp1[] = { 0x30, 0x05, 0x0a, 0x01, 0x00, 0xff, 0x00 };
static uint8_t	resp2[300];
static uint8_t	hdrs[] = "X-Issuer-Chain: abc\r\n";

static int
make_cert(uint8_t **der, size_t *len)
{
	EVP_PKEY	*k = NULL;
	X509		*x = NULL;
	unsigned char	*p = NULL;
	int		 n, rv = -1;

	if ((k = EVP_EC_gen("P-256")) == NULL || (x = X509_new()) == NULL)
		goto out;
	ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
	    (const unsigned char *)"bundle test CA", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	X509_set_pubkey(x, k);
	if (X509_sign(x, k, EVP_sha256()) <= 0 || (n = i2d_X509(x, &p)) <= 0)
		goto out;
	*der = malloc((size_t)n);
	memcpy(*der, p, (size_t)n);
	*len = (size_t)n;
	rv = 0;
 out:
	OPENSSL_free(p);
	X509_free(x);
	EVP_PKEY_free(k);
	return rv;
}

static void
fill_entry(struct bundle_entry *e, enum cache_kind kind, uint8_t keybyte,
    size_t klen)
{
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	memset(e->key, keybyte, klen);
	e->klen = klen;
	e->status = -1;
}

/* Write a bundle with the real writer into memory. */
static char *
write_bundle(struct fixture *f, size_t *len)
{
	struct bundle_writer	*w;
	struct bundle_entry	 e;
	char			*buf = NULL;
	size_t			 i;
	FILE			*mf;

	mf = open_memstream(&buf, len);
	assert_non_null(mf);
	w = bundle_writer_new(mf, T0, "staplectl test");
	assert_non_null(w);

	fill_entry(&e, CACHE_KIND_OCSP, 0xab, 32);
	e.request = req1;
	e.request_len = sizeof(req1);
	e.response = resp1;
	e.response_len = sizeof(resp1);
	e.this_update = T0 - 60;
	e.next_update = T0 + 86400;
	e.produced_at = T0 - 30;
	e.status = 1;
	snprintf(e.source, sizeof(e.source), "nvidia");
	assert_int_equal(bundle_write_entry(w, &e), 0);

	for (i = 0; i < sizeof(resp2); i++)
		resp2[i] = (uint8_t)(i * 7);
	fill_entry(&e, CACHE_KIND_RIM, 'A', 20);
	e.response = resp2;
	e.response_len = sizeof(resp2);
	e.headers = hdrs;
	e.headers_len = sizeof(hdrs) - 1;
	e.this_update = T0;
	e.next_update = T0 + 30 * 86400;
	e.status = 0;
	assert_int_equal(bundle_write_entry(w, &e), 0);

	fill_entry(&e, CACHE_KIND_KDS, 0x01, 1);
	e.response = resp1;
	e.response_len = 1;
	assert_int_equal(bundle_write_entry(w, &e), 0);

	assert_int_equal(bundle_write_cert(w, f->cert, f->cert_len,
	    "CN=bundle test CA"), 0);
	assert_int_equal(bundle_writer_end(w), 0);
	assert_int_equal(bundle_writer_entries(w), 3);
	bundle_writer_free(w);
	fclose(mf);
	return buf;
}

static int
setup(void **state)
{
	struct fixture	*f = calloc(1, sizeof(*f));

	if (f == NULL || make_cert(&f->cert, &f->cert_len) == -1)
		return -1;
	f->buf = write_bundle(f, &f->len);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture	*f = *state;

	free(f->cert);
	free(f->buf);
	free(f);
	return 0;
}

/* Seal arbitrary lines with a correct trailer, to test what the seal does not. */
static char *
seal(const char *body, size_t entries, size_t *len)
{
	uint8_t	 md[32];
	char	 hex[65], *out;
	size_t	 n = strlen(body);

	EVP_Digest(body, n, md, NULL, EVP_sha256(), NULL);
	util_hex(md, sizeof(md), hex);
	out = malloc(n + 160);
	*len = (size_t)snprintf(out, n + 160,
	    "%s{\"type\":\"end\",\"entries\":%zu,\"sha256\":\"%s\"}\n", body,
	    entries, hex);
	return out;
}

static void
refused(const char *buf, size_t len, const char *why)
{
	struct bundle	b;
	char		err[256];

	if (bundle_parse((const uint8_t *)buf, len, &b, err, sizeof(err)) == 0)
		fail_msg("accepted a bundle that should be refused (%zu bytes)",
		    len);
	assert_int_equal(b.nentries, 0);
	assert_null(b.entries);
	if (why != NULL && strstr(err, why) == NULL)
		fail_msg("error \"%s\" does not say \"%s\"", err, why);
}

static void
test_round_trip(void **state)
{
	struct fixture		*f = *state;
	struct bundle		 b;
	struct bundle_entry	*e;
	char			 err[256];

	assert_int_equal(bundle_parse((uint8_t *)f->buf, f->len, &b, err,
	    sizeof(err)), 0);
	assert_int_equal(b.version, BUNDLE_VERSION);
	assert_int_equal(b.created, T0);
	assert_string_equal(b.generator, "staplectl test");
	assert_int_equal(b.nentries, 3);
	assert_int_equal(b.ncerts, 1);
	assert_int_equal(b.nunknown, 0);

	e = &b.entries[0];
	assert_int_equal(e->kind, CACHE_KIND_OCSP);
	assert_string_equal(e->kind_name, "ocsp");
	assert_int_equal(e->klen, 32);
	assert_int_equal(e->key[31], 0xab);
	assert_int_equal(e->request_len, sizeof(req1));
	assert_memory_equal(e->request, req1, sizeof(req1));
	assert_int_equal(e->response_len, sizeof(resp1));
	assert_memory_equal(e->response, resp1, sizeof(resp1));
	assert_null(e->headers);
	assert_int_equal(e->this_update, T0 - 60);
	assert_int_equal(e->next_update, T0 + 86400);
	assert_int_equal(e->produced_at, T0 - 30);
	assert_int_equal(e->status, 1);
	assert_string_equal(e->source, "nvidia");
	assert_int_equal(e->line, 2);

	e = &b.entries[1];
	assert_int_equal(e->kind, CACHE_KIND_RIM);
	assert_int_equal(e->klen, 20);
	assert_int_equal(e->request_len, 0);
	assert_int_equal(e->response_len, sizeof(resp2));
	assert_memory_equal(e->response, resp2, sizeof(resp2));
	assert_int_equal(e->headers_len, sizeof(hdrs) - 1);
	assert_memory_equal(e->headers, hdrs, sizeof(hdrs) - 1);
	assert_int_equal(e->status, 0);
	assert_int_equal(e->produced_at, 0);

	e = &b.entries[2];
	assert_int_equal(e->kind, CACHE_KIND_KDS);
	assert_int_equal(e->klen, 1);
	assert_int_equal(e->response_len, 1);

	assert_int_equal(b.certs[0].len, f->cert_len);
	assert_memory_equal(b.certs[0].der, f->cert, f->cert_len);
	bundle_free(&b);
	bundle_free(&b);	/* idempotent */
}

/* Every strict prefix: at each line boundary and inside every line. */
static void
test_truncated(void **state)
{
	struct fixture	*f = *state;
	size_t		 n, boundaries = 0;

	for (n = 0; n < f->len; n++) {
		if (n > 0 && f->buf[n - 1] == '\n')
			boundaries++;
		refused(f->buf, n, NULL);
	}
	assert_int_equal(boundaries, 5);	/* header, 3 entries, cert */
	refused(f->buf, f->len - 1, "newline");
	/* At the boundary before the trailer: the cert line is taken as one. */
	refused(f->buf, (size_t)(strrchr(f->buf, '{') - f->buf), "trailer");
}

static void
test_flipped(void **state)
{
	struct fixture	*f = *state;
	char		*c = malloc(f->len);
	size_t		 i;

	for (i = 0; i < f->len; i++) {
		memcpy(c, f->buf, f->len);
		c[i] ^= 0x01;
		refused(c, f->len, NULL);
		memcpy(c, f->buf, f->len);
		c[i] ^= 0x20;		/* case flips too */
		refused(c, f->len, NULL);
	}
	/* One byte inside a response's base64 names the seal. */
	memcpy(c, f->buf, f->len);
	i = (size_t)(strstr(c, "\"response\":\"") - c) + 14;
	c[i] = c[i] == 'A' ? 'B' : 'A';
	refused(c, f->len, "SHA-256");
	free(c);
}

static void
test_unknown_version(void **state)
{
	char	*b;
	size_t	 len;

	(void)state;
	b = seal("{\"type\":\"header\",\"format\":\"stapled-bundle\","
	    "\"version\":2,\"created\":\"2025-01-01T00:00:00Z\"}\n", 0, &len);
	refused(b, len, "unsupported bundle version 2");
	free(b);
	/* Checked before the seal: a version-2 file is named as one. */
	refused("{\"format\":\"stapled-bundle\",\"version\":3}\nrubbish",
	    strlen("{\"format\":\"stapled-bundle\",\"version\":3}\nrubbish"),
	    "unsupported bundle version 3");
	b = seal("{\"type\":\"header\",\"format\":\"stapled-bundle\","
	    "\"version\":\"1\"}\n", 0, &len);
	refused(b, len, "version");
	free(b);
}

#define BUNDLE_HEADER	"{\"type\":\"header\",\"format\":" \
	"\"stapled-bundle\",\"version\":1}\n"

/* Lines after the header (sealed counting `entries`), and the refusal. */
static const struct {
	const char	*lines;
	size_t		 entries;
	const char	*why;
} wrong[] = {
	{ "{\"type\":\"entry\",\"kind\":\"ocsp\",\"key\":\"00\","
	    "\"response\":\"MAM*\"}\n", 1, "line 2: response: not base64" },
	{ "{\"type\":\"entry\",\"kind\":\"ocsp\",\"key\":\"0g\","
	    "\"response\":\"MAM=\"}\n", 1, "key" },
	{ "{\"type\":\"entry\",\"kind\":\"ocsp\",\"key\":\"00\"}\n", 1,
	    "response: missing" },
	{ BUNDLE_HEADER, 0, "second" },
};

static void
test_sealed_but_wrong(void **state)
{
	static const char	hdr[] = BUNDLE_HEADER;
	struct bundle		 b;
	char			 body[1024], err[256], *s;
	size_t			 len, i;

	(void)state;
	refused("", 0, "empty");
	s = seal("{\"format\":\"something-else\",\"version\":1}\n", 0, &len);
	refused(s, len, "not a stapled bundle");
	free(s);
	/* The trailer's count must match. */
	s = seal(hdr, 1, &len);
	refused(s, len, "counts 1 entries");
	free(s);
	/* Bad base64, a bad key, a missing response, a second header: refused whole. */
	for (i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		snprintf(body, sizeof(body), "%s%s", hdr, wrong[i].lines);
		s = seal(body, wrong[i].entries, &len);
		refused(s, len, wrong[i].why);
		free(s);
	}
	/* Unknown line types and members are ignored; unknown kinds kept as 0. */
	snprintf(body, sizeof(body), "%s{\"type\":\"future\",\"x\":1}\n"
	    "{\"type\":\"entry\",\"kind\":\"tpm\",\"key\":\"0A\","
	    "\"response\":\"MAM=\",\"new\":[1]}\n", hdr);
	s = seal(body, 1, &len);
	assert_int_equal(bundle_parse((uint8_t *)s, len, &b, err, sizeof(err)),
	    0);
	assert_int_equal(b.nunknown, 1);
	assert_int_equal(b.nentries, 1);
	assert_int_equal(b.entries[0].kind, 0);
	assert_string_equal(b.entries[0].kind_name, "tpm");
	assert_int_equal(b.entries[0].key[0], 0x0a);
	assert_int_equal(b.entries[0].response_len, 2);
	bundle_free(&b);
	free(s);
}

/* Lines the fast path takes, and lines it leaves to jansson: the same object, or the same refusal. */
static void
test_line_json(void **state)
{
	static const char *const lines[] = {
		"{\"type\":\"entry\",\"kind\":\"ocsp\",\"key\":\"00\",\"status\":0}",
		"{}", " { } ", "{ \"a\" : \"b\" , \"c\" : -12 }",
		"{\"n\":0,\"m\":-0,\"big\":123456789012345678}",
		"{\"big\":1234567890123456789}", "{\"huge\":99999999999999999999}",
		"{\"r\":1.5}", "{\"e\":1e3}", "{\"z\":01}", "{\"t\":true}",
		"{\"n\":null}", "{\"o\":{\"x\":1}}", "{\"a\":[1,2]}",
		"{\"s\":\"a\\u0062\\\"c\"}", "{\"u\":\"caf\xc3\xa9\"}",
		"{\"a\":1,\"a\":2}", "{\"a\":1,}", "{,\"a\":1}", "{\"a\" 1}",
		"{\"a\":1} x", "{\"a\":1}}", "{\"a\":\"b}", "{\"a\":", "[1]", "\"s\"",
		"{\"a\":1 2}", "{\"a\":-}", "{\"a\":\t1}", "{\"a\":1}\r",
		"{\"k123456789012345678901234567890123456789012345678901234567890abcdef\":1}",
		"{\"x\":\"\"}", "{\"\":1}",
	};
	json_error_t	 je;
	json_t		*a, *b;
	char		*sa, *sb;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		a = bundle_line_json(lines[i], strlen(lines[i]), &je);
		b = json_loadb(lines[i], strlen(lines[i]),
		    JSON_REJECT_DUPLICATES, &je);
		if ((a == NULL) != (b == NULL))
			fail_msg("%s: %s here, %s by json_loadb", lines[i],
			    a != NULL ? "taken" : "refused",
			    b != NULL ? "taken" : "refused");
		if (a != NULL) {
			sa = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
			sb = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
			assert_non_null(sa);
			assert_non_null(sb);
			assert_string_equal(sa, sb);
			free(sa);
			free(sb);
		}
		json_decref(a);
		json_decref(b);
	}
}

static void
test_codecs(void **state)
{
	int64_t	t;
	char	buf[32];
	uint8_t	k[4];

	(void)state;
	bundle_time_str(buf, T0);
	assert_string_equal(buf, "2023-11-14T22:13:20Z");
	assert_int_equal(bundle_time_parse(buf, &t), 0);
	assert_int_equal(t, T0);
	assert_int_equal(bundle_time_parse("2023-11-14T22:13:20", &t), -1);
	assert_int_equal(bundle_time_parse("2023-11-14 22:13:20Z", &t), -1);
	assert_int_equal(bundle_unhex("DEADbeef", k, sizeof(k)), 4);
	assert_int_equal(k[0], 0xde);
	assert_int_equal(bundle_unhex("abc", k, sizeof(k)), -1);
	assert_int_equal(bundle_unhex("0011223344", k, sizeof(k)), -1);
}

/*
 * An endless input: `head` first, then `fill` bytes for ever, counting
 * what the reader took, to show it stops at the first bad line.
 */
struct endless {
	const char	*head;
	size_t		 hlen, pos;
	char		 fill;
	size_t		 taken;
};

static ssize_t
endless_read(void *cookie, char *buf, size_t n)
{
	struct endless	*s = cookie;
	size_t		 i;

	for (i = 0; i < n; i++, s->pos++)
		buf[i] = s->pos < s->hlen ? s->head[s->pos] : s->fill;
	s->taken += n;
	return (ssize_t)n;
}

/* Read an endless input; the error, and how much was taken. */
static size_t
read_endless(const char *head, char fill, char *err, size_t errlen)
{
	static const cookie_io_functions_t	io = { .read = endless_read };
	struct endless				 s = { head, strlen(head), 0, fill, 0 };
	struct bundle_reader			*br;
	struct bundle_entry			 e;
	struct bundle_cert			 c;
	FILE					*f;
	int					 rc = 1;

	f = fopencookie(&s, "r", io);
	assert_non_null(f);
	if ((br = bundle_reader_new(f, NULL, err, errlen)) != NULL) {
		while ((rc = bundle_reader_next(br, &e, &c, err, errlen)) > 0) {
			bundle_entry_clear(&e);
			bundle_cert_clear(&c);
		}
		assert_int_equal(rc, -1);
	}
	bundle_reader_free(br);
	fclose(f);
	return s.taken;
}

static void
test_first_bad_line(void **state)
{
	static const char	hdr[] = "{\"type\":\"header\",\"format\":"
	    "\"stapled-bundle\",\"version\":1}\n";
	char			head[256], err[256];
	size_t			taken;

	(void)state;
	/* NUL bytes for ever: refused in the first read. */
	taken = read_endless("", '\0', err, sizeof(err));
	assert_non_null(strstr(err, "line 1: not a text file (NUL byte)"));
	assert_true(taken <= 65536);
	taken = read_endless(hdr, '\0', err, sizeof(err));
	assert_non_null(strstr(err, "line 2: not a text file (NUL byte)"));
	assert_true(taken <= 65536);
	/* Newlines for ever after a line that is not JSON: refused at it. */
	snprintf(head, sizeof(head), "%snot json\n", hdr);
	taken = read_endless(head, '\n', err, sizeof(err));
	assert_non_null(strstr(err, "line 2: not a JSON object"));
	assert_true(taken <= 65536);
	/* A first line that is not a bundle's header: refused at line 1. */
	taken = read_endless("{\"type\":\"entry\"}\n", '\n', err, sizeof(err));
	assert_non_null(strstr(err, "line 1: not a stapled bundle"));
	assert_true(taken <= 65536);
}

static void
test_line_cap(void **state)
{
	static const char	hdr[] = "{\"type\":\"header\",\"format\":"
	    "\"stapled-bundle\",\"version\":1}\n";
	char			err[256];
	size_t			taken;

	(void)state;
	/* One endless line: refused at the cap, having read about that much. */
	taken = read_endless(hdr, 'A', err, sizeof(err));
	assert_non_null(strstr(err, "line 2: over the 12582912-byte line limit"));
	assert_true(taken >= BUNDLE_MAX_LINE_BYTES);
	assert_true(taken <= BUNDLE_MAX_LINE_BYTES + 2 * 65536 + sizeof(hdr));
	taken = read_endless("", ' ', err, sizeof(err));
	assert_non_null(strstr(err, "line 1: over the"));
}

static void
test_stream(void **state)
{
	struct fixture		*f = *state;
	struct bundle_reader	*br;
	struct bundle_entry	 e;
	struct bundle_cert	 c;
	char			 err[256], *crlf, *after;
	size_t			 i, j, len;
	int			 want[] = { BUNDLE_ENTRY, BUNDLE_ENTRY, BUNDLE_ENTRY,
				    BUNDLE_CERT, BUNDLE_END, BUNDLE_END };
	FILE			*mf;

	mf = fmemopen(f->buf, f->len, "r");
	assert_non_null(mf);
	br = bundle_reader_new(mf, NULL, err, sizeof(err));
	assert_non_null(br);
	assert_int_equal(bundle_reader_info(br)->created, T0);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(bundle_reader_next(br, &e, &c, err,
		    sizeof(err)), want[i]);
		if (want[i] == BUNDLE_ENTRY)
			assert_int_equal(e.line, i + 2);
		if (want[i] == BUNDLE_CERT)
			assert_memory_equal(c.der, f->cert, f->cert_len);
		bundle_entry_clear(&e);
		bundle_cert_clear(&c);
	}
	assert_int_equal(bundle_reader_info(br)->nentries, 3);
	assert_int_equal(bundle_reader_info(br)->ncerts, 1);
	bundle_reader_free(br);
	fclose(mf);

	/* Converted to CRLF in transit: the seal fails, and says why. */
	crlf = malloc(2 * f->len);
	for (i = 0, j = 0; i < f->len; i++) {
		if (f->buf[i] == '\n')
			crlf[j++] = '\r';
		crlf[j++] = f->buf[i];
	}
	refused(crlf, j, "CRLF");
	free(crlf);

	/* Anything after the trailer is refused. */
	len = f->len + 3;
	after = malloc(len);
	memcpy(after, f->buf, f->len);
	memcpy(after + f->len, "{}\n", 3);
	refused(after, len, "after the \"end\" trailer");
	free(after);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flipped, setup, teardown),
		cmocka_unit_test(test_unknown_version),
		cmocka_unit_test(test_sealed_but_wrong),
		cmocka_unit_test(test_codecs),
		cmocka_unit_test(test_line_json),
		cmocka_unit_test(test_first_bad_line),
		cmocka_unit_test(test_line_cap),
		cmocka_unit_test_setup_teardown(test_stream, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
