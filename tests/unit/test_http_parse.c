/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/http/http_parse.c: a head in pieces parses as in one, repeated fields are one list or refused, Connection's tokens decide keep-alive. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/http/http.h"
#include "proxy/http/http_parse.h"

/* Parse a whole head and return http_head_keepalive, or -1 if it did not parse. */
static int
keepalive_of(const char *head)
{
	static char		copy[HTTP_MAX_HEADER_BYTES + 1];
	struct http_head	h;

	memset(&h, 0, sizeof(h));
	if (http_parse_head(head, strlen(head), copy, &h) != 1)
		return -1;
	return http_head_keepalive(&h);
}

/* Heads whole (with a body or the next request after them), cut, and wrong. */
static const char *const pieces_cases[] = {
	"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n",
	"POST /ocsp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
	    "Content-Type: application/ocsp-request\r\n\r\nhello",
	"GET /x?q=1 HTTP/1.0\nX-Forwarded-For: 192.0.2.1\nAccept: */*\n"
	    "X-Forwarded-For:  198.51.100.2 \r\nAccept: text/plain\n\n"
	    "GET /next HTTP/1.1\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\nY: 2\r\nx: 3\r\nCache-Control: a\r\n"
	    "cache-control: b\r\nX: 4\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n",		/* 400: lone CR */
	"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",		/* 400: two Hosts */
	"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",		/* 400: obs-fold */
	"GET / HTTP/2.0\r\nHost: a\r\n\r\n",				/* 505 */
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",	/* 501 */
	"GET / HTTP/1.1\r\nHost: a\r\nX: a\x01\r\n\r\n",		/* 400: control byte */
	"GET / HTTP/1.1\r\nHost: a\r\nX: never ends",			/* 0 */
};

/* Two parses agree: status, and for a whole head every field of it. */
static void
assert_same_head(const struct http_head *a, const struct http_head *b, int rc)
{
	size_t	i;

	if (rc != 1)
		return;
	assert_int_equal(a->method, b->method);
	assert_int_equal(a->http10, b->http10);
	assert_string_equal(a->target, b->target);
	assert_int_equal(a->hdrlen, b->hdrlen);
	assert_int_equal(a->clen, b->clen);
	assert_int_equal(a->nheaders, b->nheaders);
	for (i = 0; i < a->nheaders; i++) {
		assert_string_equal(a->hname[i], b->hname[i]);
		assert_string_equal(a->hvalue[i], b->hvalue[i]);
	}
}

/*
 * Every case, fed in pieces of every size from 1 byte to its whole length
 * (the input growing in one buffer, as a connection's does), gives what
 * one piece gives; once whole, more bytes change nothing.
 */
static void
test_pieces(void **state)
{
	static char		whole_copy[HTTP_MAX_HEADER_BYTES + 1], copy[HTTP_MAX_HEADER_BYTES + 1];
	struct http_head	whole, h;
	size_t			i, k, len, got;
	int			rc, want;

	(void)state;
	for (i = 0; i < sizeof(pieces_cases) / sizeof(pieces_cases[0]); i++) {
		len = strlen(pieces_cases[i]);
		want = http_parse_head(pieces_cases[i], len, whole_copy, &whole);
		for (k = 1; k <= len; k++) {
			http_head_reset(&h);
			rc = 0;
			for (got = 0; got < len && rc == 0; ) {
				got = got + k < len ? got + k : len;
				rc = http_parse_more(&h, pieces_cases[i], got, copy);
			}
			if (rc != want)
				fail_msg("case %zu in pieces of %zu: %d, whole %d", i, k, rc, want);
			assert_same_head(&whole, &h, rc);
			if (rc == 1)
				assert_int_equal(http_parse_more(&h, pieces_cases[i], len, copy), 1);
		}
	}
}

/* A whole head's own bytes: at 8 KiB, in pieces of one byte, the last byte completes it. */
static void
test_pieces_big(void **state)
{
	static char		in[HTTP_MAX_HEADER_BYTES + 1], copy[HTTP_MAX_HEADER_BYTES + 1];
	struct http_head	h;
	size_t			len, i;
	int			rc = 0;

	(void)state;
	len = (size_t)snprintf(in, sizeof(in), "POST /ocsp HTTP/1.1\r\nHost: a\r\n"
	    "Content-Length: 16384\r\nX-Pad: ");
	memset(in + len, 'p', HTTP_MAX_HEADER_BYTES - len - 4);
	memcpy(in + HTTP_MAX_HEADER_BYTES - 4, "\r\n\r\n", 4);
	http_head_reset(&h);
	for (i = 1; i <= HTTP_MAX_HEADER_BYTES && rc == 0; i++)
		rc = http_parse_more(&h, in, i, copy);
	assert_int_equal(rc, 1);
	assert_int_equal(i - 1, HTTP_MAX_HEADER_BYTES);
	assert_int_equal(h.hdrlen, HTTP_MAX_HEADER_BYTES);
	assert_int_equal(h.clen, 16384);
	assert_int_equal(strlen(http_head_field(&h, "X-Pad")),
	    HTTP_MAX_HEADER_BYTES - len - 4);
	/* One byte more and it is over the limit. */
	in[HTTP_MAX_HEADER_BYTES - 4] = 'p';
	memcpy(in + HTTP_MAX_HEADER_BYTES - 3, "\r\n\r\n", 4);
	http_head_reset(&h);
	for (i = 1, rc = 0; i <= HTTP_MAX_HEADER_BYTES + 1 && rc == 0; i++)
		rc = http_parse_more(&h, in, i, copy);
	assert_int_equal(rc, 431);
	/* Over the limit before the request line ends: the target is too long (414). */
	memcpy(in, "GET /", 5);
	memset(in + 5, 'A', sizeof(in) - 5);
	http_head_reset(&h);
	for (i = 1, rc = 0; i <= HTTP_MAX_HEADER_BYTES + 1 && rc == 0; i++)
		rc = http_parse_more(&h, in, i, copy);
	assert_int_equal(rc, 414);
	assert_int_equal(i - 1, HTTP_MAX_HEADER_BYTES + 1);
}

/* Parse a whole head: its status, h filled. */
static int
parse(const char *head, struct http_head *h)
{
	static char	copy[HTTP_MAX_HEADER_BYTES + 1];

	return http_parse_head(head, strlen(head), copy, h);
}

/* RFC 9110 5.3: the lines of a list field are one value, joined with ", " in order. */
static void
test_repeats_joined(void **state)
{
	struct http_head	h;

	(void)state;
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\n"
	    "X-Forwarded-For: 203.0.113.5\r\nAccept: a/b\r\n"
	    "x-forwarded-for: 192.0.2.1, 192.0.2.2\r\nAccept: c/d\r\n"
	    "Cache-Control: no-cache\r\nX-Forwarded-For:\t192.0.2.3 \r\n"
	    "Cache-Control: max-age=0\r\nUser-Agent: t\r\n\r\n", &h), 1);
	assert_string_equal(http_head_field(&h, "X-Forwarded-For"),
	    "203.0.113.5, 192.0.2.1, 192.0.2.2, 192.0.2.3");
	assert_string_equal(http_head_field(&h, "accept"), "a/b, c/d");
	assert_string_equal(http_head_field(&h, "Cache-Control"), "no-cache, max-age=0");
	assert_string_equal(http_head_field(&h, "Host"), "a");
	assert_string_equal(http_head_field(&h, "User-Agent"), "t");
	assert_int_equal(h.nheaders, 5);	/* each name once, in first-seen order */
	assert_string_equal(h.hname[0], "Host");
	assert_string_equal(h.hname[1], "X-Forwarded-For");
	assert_string_equal(h.hname[2], "Accept");
	assert_string_equal(h.hname[4], "User-Agent");
	assert_string_equal(h.target, "/");
	/* An empty line of a list is an empty element. */
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\nIf-None-Match:\r\n"
	    "If-None-Match: \"e\"\r\n\r\n", &h), 1);
	assert_string_equal(http_head_field(&h, "If-None-Match"), ", \"e\"");
	/* Every line as long as it may be: the joined value still fits. */
	{
		static char	big[HTTP_MAX_HEADER_BYTES + 1];
		size_t		o, n = 0;

		o = (size_t)snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: a\r\n");
		while (o + 6 + 2 <= HTTP_MAX_HEADER_BYTES - 2) {
			memcpy(big + o, "A:xx\r\n", 6);
			o += 6;
			n++;
			if (n == HTTP_MAX_HEADERS - 1)
				break;
		}
		memcpy(big + o, "\r\n", 3);
		assert_int_equal(parse(big, &h), 1);
		assert_int_equal(strlen(http_head_field(&h, "A")), 2 * n + 2 * (n - 1));
	}
}

/* A field that may not be a list, in two lines: 400, whatever its values. */
static void
test_repeats_refused(void **state)
{
	struct http_head	h;

	(void)state;
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", &h), 400);
	assert_int_equal(parse("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", &h), 400);
	assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
	    "Content-Length: 1\r\n\r\nx", &h), 400);
	assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n"
	    "Content-Type: application/ocsp-request\r\n"
	    "Content-Type: text/plain\r\n\r\n", &h), 400);
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: a\r\n"
	    "X: y\r\nauthorization: a\r\n\r\n", &h), 400);
	/* Once each is fine. */
	assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n"
	    "Content-Type: text/plain\r\nAuthorization: a\r\n\r\n", &h), 1);
}

/* RFC 9110 5.6.2: a name and a method are tokens; every other byte is a 400. */
static void
test_tchar(void **state)
{
	static const char	punct[] = "!#$%&'*+-.^_`|~";
	struct http_head	h;
	char			head[64];
	int			ch, want;

	(void)state;
	for (ch = 1; ch < 256; ch++) {
		want = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr(punct, ch) != NULL;
		snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: a\r\nX%cY: 1\r\n\r\n", ch);
		/* a colon ends the name "X" */
		if (ch != ':' && (parse(head, &h) == 1) != want)
			fail_msg("byte 0x%02x in a name: want %s", ch, want ? "1" : "400");
		snprintf(head, sizeof(head), "G%cT / HTTP/1.1\r\nHost: a\r\n\r\n", ch);
		if ((parse(head, &h) == 1) != want)
			fail_msg("byte 0x%02x in a method: want %s", ch, want ? "1" : "400");
	}
}

/* The fields the server reads are known in any case, and only by their whole name. */
static void
test_known_fields(void **state)
{
	struct http_head	h;

	(void)state;
	assert_int_equal(parse("POST / HTTP/1.1\r\nhOsT: a\r\ncontent-LENGTH: 2\r\n"
	    "CONTENT-TYPE: t\r\nConnection: close\r\n\r\nxy", &h), 1);
	assert_int_equal(h.clen, 2);
	assert_int_equal(http_head_keepalive(&h), 0);
	assert_string_equal(http_head_field(&h, "Content-Type"), "t");
	assert_string_equal(http_head_field(&h, "host"), "a");
	assert_null(http_head_field(&h, "Expect"));
	/* Names as long as a known one, and a known one's prefix, are others. */
	assert_int_equal(parse("GET / HTTP/1.1\r\nHxst: a\r\n\r\n", &h), 400);
	assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\nAccept-Charset: 5\r\n"
	    "Hosts: b\r\nContent-Lengt: 3\r\n\r\n", &h), 1);
	assert_int_equal(h.clen, 0);
	assert_string_equal(http_head_field(&h, "accept-charset"), "5");
	assert_string_equal(http_head_field(&h, "Hosts"), "b");
	assert_string_equal(http_head_field(&h, "Host"), "a");
	assert_null(http_head_field(&h, "Content-Length"));
	/* ... so a POST with only that is a POST without Content-Length: 411. */
	assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Lengt: 3\r\n\r\n",
	    &h), 411);
	assert_int_equal(parse("POST / HTTP/1.0\r\n\r\n", &h), 411);
	assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
	    &h), 1);
	/* Transfer-Encoding in any case is still refused. */
	assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\n"
	    "transfer-encoding: chunked\r\n\r\n", &h), 501);
}

/* A comma-separated header list, a token, and whether the list has it. */
static const struct {
	const char	*list, *token;
	int		 want;
} lists[] = {
	{ "close", "close", 1 },
	{ "Close", "close", 1 },
	{ "keep-alive, close", "close", 1 },
	{ "keep-alive,close", "close", 1 },
	{ " ,\tclose\t, ", "close", 1 },
	{ "TE, CLOSE", "close", 1 },
	{ "closed", "close", 0 },
	{ "enclose", "close", 0 },
	{ "close-ish, x", "close", 0 },
	{ "", "close", 0 },
	{ ",,", "close", 0 },
	{ "Keep-Alive", "keep-alive", 1 },
};

static void
test_list_has(void **state)
{
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		if (http_list_has(lists[i].list, lists[i].token) != lists[i].want)
			fail_msg("\"%s\" has \"%s\": want %d", lists[i].list,
			    lists[i].token, lists[i].want);
}

static void
test_keepalive(void **state)
{
	(void)state;
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"), 1);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.1\r\nHost: a\r\n"
	    "Connection: keep-alive, close\r\n\r\n"), 0);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.1\r\nHost: a\r\n"
	    "Connection: Close\r\n\r\n"), 0);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.1\r\nHost: a\r\n"
	    "Connection: TE\r\nConnection: close\r\n\r\n"), 0);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.1\r\nHost: a\r\n"
	    "Connection: upgrade\r\n\r\n"), 1);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.0\r\n\r\n"), 0);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.0\r\n"
	    "Connection: keep-alive\r\n\r\n"), 1);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.0\r\n"
	    "Connection: foo, Keep-Alive\r\n\r\n"), 1);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.0\r\n"
	    "Connection: keep-alive, close\r\n\r\n"), 0);
	assert_int_equal(keepalive_of("GET /healthz HTTP/1.0\r\n"
	    "Connection: keep-alives\r\n\r\n"), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_pieces_big),
		cmocka_unit_test(test_repeats_joined),
		cmocka_unit_test(test_repeats_refused),
		cmocka_unit_test(test_tchar),
		cmocka_unit_test(test_known_fields),
		cmocka_unit_test(test_list_has),
		cmocka_unit_test(test_keepalive),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
