/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for entry/ocsp.c: an OCSP answer admitted for the CertIDs asked, definitive statuses, the nonce, on the daemon's and the bundle's path. */
#include "config.h"

#include <sys/stat.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "attest/ocsp_verify.h"
#include "entry/entry.h"
#include "entry/ocsp.h"
#include "tv.h"

#define SKEW_S		300

/*
 * Fixtures: tests/pki/mkpki.sh makes the PKI in a fresh directory under
 * tests/tmp (of the build tree); `openssl ocsp` makes the requests (with
 * a nonce unless told) and the responses (echoing it), offline.
 */
static char		 dir[512];
static char		 pki[600];
static struct ocsp_trust *full;		/* anchors + intermediates */
static struct ocsp_trust *bare;		/* anchors only: ica's answers are unverifiable */

/* A file of this run's directory (or an absolute path), whole. */
static uint8_t *
slurp(const char *name, size_t *len)
{
	char	path[TV_REL_BYTES];

	snprintf(path, sizeof(path), "%s%s%s", name[0] == '/' ? "" : dir,
	    name[0] == '/' ? "" : "/", name);
	return tv_file(path, len);
}

static void
mkreq(const char *out, const char *subject, const char *extra)
{
	if (tv_sh("openssl ocsp -issuer %s/ica/ca.pem %s -cert %s/%s -reqout %s/%s "
	    ">/dev/null 2>&1", pki, extra, pki, subject, dir, out) != 0)
		fail_msg("openssl ocsp: cannot make request %s", out);
}

static void
mkresp(const char *out, const char *req)
{
	if (tv_sh("openssl ocsp -index %s/ica/index.txt -CA %s/ica/ca.pem "
	    "-rsigner %s/ica/responder.pem -rkey %s/ica/responder.key "
	    "-reqin %s/%s -respout %s/%s -ndays 1 >/dev/null 2>&1", pki, pki,
	    pki, pki, dir, req, dir, out) != 0)
		fail_msg("openssl ocsp: cannot make response %s", out);
}

static int
setup(void **state)
{
	(void)state;
	if (tv_ocsp_pki("entry_ocsp", dir, sizeof(dir), pki, sizeof(pki),
	    &full, &bare) == -1)
		return -1;
	mkreq("leaf1.req", "leaf1.pem", "");
	mkresp("leaf1.resp", "leaf1.req");
	mkreq("leaf2.req", "leaf2.pem", "");
	mkresp("leaf2.resp", "leaf2.req");
	mkreq("nn.req", "leaf1.pem", "-no_nonce");
	mkresp("nn.resp", "nn.req");
	mkreq("rev.req", "leaf3.pem", "");
	mkresp("rev.resp", "rev.req");
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	tv_ocsp_pki_free(dir, full, bare);
	return 0;
}

/* One admission: question from request file `req` (its own key unless key_req), answer file `resp`. */
struct fx {
	uint8_t				*req, *resp;
	size_t				 req_len, resp_len;
	uint8_t				 key[OCSP_KEY_BYTES];
	struct entry_ocsp_question	 q;
	struct entry_answer		 a;
	struct entry_ocsp_admission	 ad;
};

static void
fx_load(struct fx *f, const char *req, const char *resp, const char *key_req)
{
	struct ocsp_req	 r;
	const char	*why;
	uint8_t		*kr;
	size_t		 krl;

	memset(f, 0, sizeof(*f));
	f->req = slurp(req, &f->req_len);
	f->resp = slurp(resp, &f->resp_len);
	kr = slurp(key_req != NULL ? key_req : req, &krl);
	assert_int_equal(ocsp_req_parse(kr, krl, &r, &why), 0);
	ocsp_req_key(&r, f->key);
	free(kr);
	f->q.key = f->key;
	f->q.klen = sizeof(f->key);
	f->q.request = f->req;
	f->q.request_len = f->req_len;
	f->q.skew_s = SKEW_S;
	f->a.body = f->resp;
	f->a.body_len = f->resp_len;
}

static void
fx_free(struct fx *f)
{
	free(f->req);
	free(f->resp);
}

/* The daemon's path: a refresh's own nonce must come back; the answer is stored with its times. */
static void
test_client_store(void **state)
{
	struct fx	 f;
	time_t		 now = time(NULL);

	(void)state;
	fx_load(&f, "leaf1.req", "leaf1.resp", NULL);
	f.q.check_nonce = 1;
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_STORE);
	assert_int_equal(f.ad.verdict, ENTRY_STORE);
	assert_string_equal(f.ad.reason, "");
	assert_int_equal(f.ad.verified, 1);
	assert_int_equal(f.ad.meta.kind, CACHE_KIND_OCSP);
	assert_int_equal(f.ad.meta.status, OCSP_CERT_GOOD);
	assert_true(f.ad.meta.this_update <= now &&
	    f.ad.meta.this_update > now - 60);
	assert_int_equal(f.ad.meta.next_update, f.ad.meta.this_update + 86400);
	assert_true(f.ad.meta.produced_at > 0);
	assert_int_equal(f.ad.keep_stored, 0);
	fx_free(&f);

	/* Revoked is an answer: stored as signed. */
	fx_load(&f, "rev.req", "rev.resp", NULL);
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_STORE);
	assert_int_equal(f.ad.meta.status, OCSP_CERT_REVOKED);
	fx_free(&f);
}

/* Our nonce not echoed: refused when stapled chose it, accepted from a cache (a bundle, a client's nonce). */
static void
test_nonce(void **state)
{
	struct fx	 f;
	time_t		 now = time(NULL);

	(void)state;
	fx_load(&f, "leaf1.req", "nn.resp", NULL);
	f.q.check_nonce = 1;
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_REFUSE);
	assert_string_equal(f.ad.reason, "nonce: response carries no nonce");
	assert_int_equal(f.ad.result.verdict, OCSP_ERR_NONCE);
	f.q.check_nonce = 0;
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_STORE);
	fx_free(&f);

	/* A request without a nonce: nothing to check even when asked. */
	fx_load(&f, "nn.req", "nn.resp", NULL);
	f.q.check_nonce = 1;
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_STORE);
	fx_free(&f);
}

/* The bundle's path: the same rule without the nonce; a stored newer entry is kept. */
static void
test_bundle_stored(void **state)
{
	struct fx		 f;
	struct entry_stored	 st;
	time_t			 now = time(NULL);

	(void)state;
	fx_load(&f, "leaf1.req", "leaf1.resp", NULL);
	memset(&st, 0, sizeof(st));
	st.meta.kind = CACHE_KIND_OCSP;
	st.meta.this_update = now + 120;	/* fetched later by the daemon */
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, &st, now, &f.ad),
	    ENTRY_STORE);
	assert_int_equal(f.ad.keep_stored, 1);
	st.meta.this_update = now - 3600;	/* older: replaced */
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, &st, now, &f.ad),
	    ENTRY_STORE);
	assert_int_equal(f.ad.keep_stored, 0);
	fx_free(&f);
}

/* The answer must answer the question: another CertID's answer, or one filed under another key, is refused. */
static void
test_other_certid(void **state)
{
	struct fx	 f;
	time_t		 now = time(NULL);

	(void)state;
	/* Genuine and valid, but for leaf2: an upstream's swap. */
	fx_load(&f, "leaf1.req", "leaf2.resp", NULL);
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_REFUSE);
	assert_string_equal(f.ad.reason,
	    "certid: requested CertID 0 not in response");
	assert_int_equal(f.ad.verified, 1);
	fx_free(&f);

	/* A bundle entry whose key is another request's: a swapped entry. */
	fx_load(&f, "leaf1.req", "leaf1.resp", "leaf2.req");
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_REFUSE);
	assert_string_equal(f.ad.reason, "key: the entry's key is not its "
	    "request's CertID key (swapped or edited entry)");
	assert_int_equal(f.ad.verified, 0);
	f.q.klen = OCSP_KEY_BYTES - 1;
	f.q.key = f.key;
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_REFUSE);
	assert_true(strncmp(f.ad.reason, "key: ", 5) == 0);

	/* No request, or one that does not parse: nothing to bind to. */
	f.q.request_len = 0;
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_REFUSE);
	assert_string_equal(f.ad.reason, "no request: cannot check the CertID");
	f.q.request = f.resp;
	f.q.request_len = f.resp_len;
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_REFUSE);
	assert_true(strncmp(f.ad.reason, "request: ", 9) == 0);
	fx_free(&f);
}

/* Genuine-looking but the chain cannot be completed: relayed, never stored; expired: refused. */
static void
test_unverifiable_expired(void **state)
{
	struct fx	 f;
	time_t		 now = time(NULL);

	(void)state;
	fx_load(&f, "leaf1.req", "leaf1.resp", NULL);
	assert_int_equal(entry_ocsp_admit(bare, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_PASS);
	assert_int_equal(f.ad.result.verdict, OCSP_UNVERIFIABLE);
	assert_non_null(strstr(f.ad.reason, "names the CertID's issuer"));
	assert_int_equal(f.ad.result.issuer_key_hash_len, 20);
	assert_int_equal(f.ad.meta.kind, 0);	/* nothing to store */

	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now + 2 * 86400,
	    &f.ad), ENTRY_REFUSE);
	assert_true(strncmp(f.ad.reason, "expired: nextUpdate ", 20) == 0);
	assert_int_equal(f.ad.result.verdict, OCSP_ERR_EXPIRED);
	fx_free(&f);
}

/* The unsigned 5-byte forms: three are definitive, the others are the responder's failures. */
static void
test_definitive(void **state)
{
	static const uint8_t	 malformed[5] = { 0x30, 0x03, 0x0a, 0x01, 0x01 };
	static const uint8_t	 sigreq[5] = { 0x30, 0x03, 0x0a, 0x01, 0x05 };
	static const uint8_t	 unauth6[6] = { 0x30, 0x03, 0x0a, 0x01, 0x06, 0 };
	struct fx		 f;
	time_t			 now = time(NULL);

	(void)state;
	assert_string_equal(entry_ocsp_definitive(OCSP_RESP_UNAUTHORIZED, 5),
	    "unauthorized");
	assert_string_equal(entry_ocsp_definitive(malformed, 5),
	    "malformedRequest");
	assert_string_equal(entry_ocsp_definitive(sigreq, 5), "sigRequired");
	assert_null(entry_ocsp_definitive(OCSP_RESP_TRYLATER, 5));
	assert_null(entry_ocsp_definitive(OCSP_RESP_INTERNAL, 5));
	assert_null(entry_ocsp_definitive(unauth6, 6));	/* not the DER form */
	assert_null(entry_ocsp_definitive(unauth6, 4));
	assert_null(entry_ocsp_definitive(NULL, 0));

	fx_load(&f, "leaf1.req", "leaf1.resp", NULL);
	f.a.body = OCSP_RESP_UNAUTHORIZED;
	f.a.body_len = sizeof(OCSP_RESP_UNAUTHORIZED);
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_DEFINITIVE);
	assert_string_equal(f.ad.reason, "unauthorized");
	assert_int_equal(f.ad.verified, 0);
	f.a.body = malformed;
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_DEFINITIVE);
	assert_string_equal(f.ad.reason, "malformedRequest");
	f.a.body = sigreq;
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_DEFINITIVE);
	assert_string_equal(f.ad.reason, "sigRequired");
	/* tryLater is about the responder: that upstream failed */
	f.a.body = OCSP_RESP_TRYLATER;
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_REFUSE);
	assert_string_equal(f.ad.reason, "status: responseStatus trylater");
	f.a.body = unauth6;
	f.a.body_len = sizeof(unauth6);
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_REFUSE);
	/* a definitive answer still needs a question it can be about */
	f.a.body = OCSP_RESP_UNAUTHORIZED;
	f.a.body_len = sizeof(OCSP_RESP_UNAUTHORIZED);
	f.q.klen = 0;
	assert_int_equal(entry_ocsp_admit(full, &f.q, &f.a, NULL, now, &f.ad),
	    ENTRY_REFUSE);
	fx_free(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_store),
		cmocka_unit_test(test_nonce),
		cmocka_unit_test(test_bundle_stored),
		cmocka_unit_test(test_other_certid),
		cmocka_unit_test(test_unverifiable_expired),
		cmocka_unit_test(test_definitive),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
