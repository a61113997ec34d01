/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for attest/ocsp_verify.c on responses `openssl ocsp` signs. */
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

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "attest/der.h"
#include "attest/nvidia_certs.h"
#include "attest/ocsp_memo.h"
#include "attest/ocsp_verify.h"
#include "attest/rim.h"
#include "tv.h"

/*
 * Fixtures: tests/pki/mkpki.sh makes the PKI in a fresh directory under
 * tests/tmp (of the build tree), each test asks `openssl ocsp` for the
 * requests and responses it needs, offline.
 */
static char		 dir[512];	/* this run's scratch directory */
static char		 pki[600];	/* mkpki.sh output */
static struct ocsp_trust *full;		/* anchors + intermediates */
static struct ocsp_trust *bare;		/* anchors only */

static uint8_t *
slurp(const char *name, size_t *len)
{
	char	path[TV_REL_BYTES];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return tv_file(path, len);
}

/* A request for `subject` (a cert file, or "-serial N") issued by `ca`. */
static void
mkreq(const char *out, const char *ca, const char *subject, const char *extra)
{
	char	 subj[700];

	if (strncmp(subject, "-serial", 7) == 0)
		snprintf(subj, sizeof(subj), "%s", subject);
	else
		snprintf(subj, sizeof(subj), "-cert %s/%s", pki, subject);
	/* a digest option applies to the -cert/-serial after it */
	if (tv_sh("openssl ocsp -issuer %s/%s/ca.pem %s %s -reqout %s/%s "
	    ">/dev/null 2>&1", pki, ca, extra, subj, dir, out) != 0)
		fail_msg("openssl ocsp: cannot make request %s", out);
}

/* A response to `req` from CA `ca`'s index, signed by `signer`{.pem,.key}. */
static void
mkresp(const char *out, const char *req, const char *ca, const char *signer,
    const char *extra)
{
	if (tv_sh("openssl ocsp -index %s/%s/index.txt -CA %s/%s/ca.pem "
	    "-rsigner %s/%s.pem -rkey %s/%s.key -reqin %s/%s -respout %s/%s "
	    "%s >/dev/null 2>&1", pki, ca, pki, ca, pki, signer, pki, signer,
	    dir, req, dir, out, extra) != 0)
		fail_msg("openssl ocsp: cannot make response %s", out);
}

struct run {
	struct ocsp_verify_opts	 opts;
	struct ocsp_result	 res;
	struct ocsp_req		 req;
	uint8_t			 key[OCSP_KEY_BYTES];
};

/* Verify response file `resp` for request file `req`; returns the verdict. */
static enum ocsp_verdict
check(struct ocsp_trust *t, const char *req, const char *resp, struct run *r)
{
	uint8_t		*rq, *rs;
	size_t		 rql, rsl;
	const char	*why;
	int		 rv;

	rq = slurp(req, &rql);
	rs = slurp(resp, &rsl);
	if (ocsp_req_parse(rq, rql, &r->req, &why) != 0)
		fail_msg("%s: %s", req, why);
	rv = ocsp_verify(t, rs, rsl, &r->req, &r->opts, &r->res);
	if (getenv("VERBOSE") != NULL)
		printf("%-14s %-12s %s\n", resp,
		    ocsp_verdict_str[r->res.verdict], r->res.detail);
	assert_int_equal(rv, r->res.verdict == OCSP_OK ? 0 : -1);
	assert_true(r->res.verdict < OCSP_VERDICT_MAX);
	assert_true(r->res.detail[0] != '\0');
	free(rs);
	/* r->req borrows rq: only its scalars are used after this */
	memset(r->req.certids, 0, sizeof(r->req.certids));
	r->req.nonce = NULL;
	free(rq);
	return r->res.verdict;
}

#define expect(t, req, resp, r, want) do {				\
	enum ocsp_verdict got_ = check((t), (req), (resp), (r));	\
	if (got_ != (want))						\
		fail_msg("%s: want %s, got %s (%s)", (resp),		\
		    ocsp_verdict_str[(want)], ocsp_verdict_str[got_],	\
		    (r)->res.detail);					\
} while (0)

static void
opts_now(struct run *r)
{
	memset(r, 0, sizeof(*r));
	r->opts.now = time(NULL);
	r->opts.skew_s = 300;
}

static int
setup(void **state)
{
	(void)state;
	return tv_ocsp_pki("ocsp_verify", dir, sizeof(dir), pki, sizeof(pki),
	    &full, &bare);
}

static int
teardown(void **state)
{
	(void)state;
	tv_ocsp_pki_free(dir, full, bare);
	return 0;
}

static void
test_good(void **state)
{
	struct run	 r;
	time_t		 now;

	(void)state;
	mkreq("good.req", "ica", "leaf1.pem", "");
	mkresp("good.resp", "good.req", "ica", "ica/responder", "-ndays 1");
	opts_now(&r);
	now = r.opts.now;
	expect(full, "good.req", "good.resp", &r, OCSP_OK);
	assert_int_equal(r.res.response_status, 0);
	assert_int_equal(r.res.cert_status, OCSP_CERT_GOOD);
	assert_int_equal(r.res.revocation_reason, -1);
	assert_true(r.res.this_update <= now && r.res.this_update > now - 60);
	assert_int_equal(r.res.next_update, r.res.this_update + 86400);
	assert_true(r.res.produced_at >= r.res.this_update - 1);
	assert_int_equal(r.res.issuer_key_hash_len, 20);
	assert_string_equal(ocsp_verdict_str[r.res.verdict], "ok");
}

/* Revoked and unknown are answers, stored and served as signed. */
static void
test_revoked_unknown(void **state)
{
	struct run	 r;

	(void)state;
	mkreq("rev.req", "ica", "leaf3.pem", "");
	mkresp("rev.resp", "rev.req", "ica", "ica/responder", "-ndays 1");
	opts_now(&r);
	expect(full, "rev.req", "rev.resp", &r, OCSP_OK);
	assert_int_equal(r.res.cert_status, OCSP_CERT_REVOKED);
	assert_int_equal(r.res.revocation_reason, 1);	/* keyCompromise */

	mkreq("unk.req", "ica", "-serial 0x3FFF", "");
	mkresp("unk.resp", "unk.req", "ica", "ica/responder", "-ndays 1");
	opts_now(&r);
	expect(full, "unk.req", "unk.resp", &r, OCSP_OK);
	assert_int_equal(r.res.cert_status, OCSP_CERT_UNKNOWN);
	assert_int_equal(r.res.revocation_reason, -1);
}

/* Each level of the chain has its own responder, as at NVIDIA. */
static void
test_each_level(void **state)
{
	struct run	 r;

	(void)state;
	mkreq("ica.req", "identity", "ica/ca.pem", "");
	mkresp("ica.resp", "ica.req", "identity", "identity/responder",
	    "-ndays 1");
	opts_now(&r);
	expect(full, "ica.req", "ica.resp", &r, OCSP_OK);
	mkreq("id.req", "root", "identity/ca.pem", "-sha384");
	mkresp("id.resp", "id.req", "root", "root/responder", "-ndays 1");
	opts_now(&r);
	expect(full, "id.req", "id.resp", &r, OCSP_OK);
	assert_int_equal(r.res.issuer_key_hash_len, 48);
	/* RFC 6960 4.2.2.2: the CA may sign itself */
	mkresp("ca.resp", "good.req", "ica", "ica/ca", "-ndays 1");
	opts_now(&r);
	expect(full, "good.req", "ca.resp", &r, OCSP_OK);
}

static void
test_bad_signature(void **state)
{
	struct run	 r;

	(void)state;
	mkresp("badsig.resp", "good.req", "ica", "ica/responder",
	    "-ndays 1 -badsig");
	opts_now(&r);
	expect(full, "good.req", "badsig.resp", &r, OCSP_ERR_SIGNATURE);
	expect(bare, "good.req", "badsig.resp", &r, OCSP_ERR_SIGNATURE);
}

/* An attacker PKI under a root with the real root's name. */
static void
test_lookalike_root(void **state)
{
	struct run	 r;
	char		 rother[700];

	(void)state;
	snprintf(rother, sizeof(rother), "-ndays 1 -rother %s/evil/chain.pem",
	    pki);
	mkreq("evil.req", "evil/ica", "evil/leaf1.pem", "");
	mkresp("evil.resp", "evil.req", "evil/ica", "evil/ica/responder",
	    rother);
	opts_now(&r);
	expect(full, "evil.req", "evil.resp", &r, OCSP_ERR_CHAIN);
	expect(bare, "evil.req", "evil.resp", &r, OCSP_ERR_CHAIN);

	/* without the attacker's root: its CAs are named like ours */
	mkresp("evil2.resp", "evil.req", "evil/ica", "evil/ica/responder",
	    "-ndays 1");
	opts_now(&r);
	expect(full, "evil.req", "evil2.resp", &r, OCSP_ERR_CHAIN);

	/* the attacker answering for one of our certificates */
	mkresp("evil3.resp", "good.req", "evil/ica", "evil/ica/responder",
	    rother);
	opts_now(&r);
	expect(full, "good.req", "evil3.resp", &r, OCSP_ERR_CHAIN);
	mkresp("evil4.resp", "good.req", "evil/ica", "evil/ica/responder",
	    "-ndays 1");
	opts_now(&r);
	expect(bare, "good.req", "evil4.resp", &r, OCSP_ERR_SIGNER);

	/*
	 * Known limit: with no pool and no CA names to compare, a
	 * self-consistent foreign chain with its top missing looks like a
	 * missing intermediate. It is never OK: passed on, never stored.
	 */
	expect(bare, "evil.req", "evil2.resp", &r, OCSP_UNVERIFIABLE);
}

/* A responder that chains to our root but is not the CertID issuer's. */
static void
test_wrong_responder(void **state)
{
	struct run	 r;

	(void)state;
	mkresp("rogue.resp", "good.req", "ica", "rogue/responder", "-ndays 1");
	opts_now(&r);
	expect(full, "good.req", "rogue.resp", &r, OCSP_ERR_SIGNER);
	mkresp("idr.resp", "good.req", "ica", "identity/responder",
	    "-ndays 1");
	opts_now(&r);
	expect(full, "good.req", "idr.resp", &r, OCSP_ERR_SIGNER);
	/* and without the pool it does not pass for unverifiable */
	opts_now(&r);
	expect(bare, "good.req", "rogue.resp", &r, OCSP_ERR_SIGNER);
}

static void
test_times(void **state)
{
	struct run	 r;
	time_t		 tu, nu;

	(void)state;
	opts_now(&r);
	expect(full, "good.req", "good.resp", &r, OCSP_OK);
	tu = r.res.this_update;
	nu = r.res.next_update;

	opts_now(&r);
	r.opts.now = nu + 1;
	expect(full, "good.req", "good.resp", &r, OCSP_ERR_EXPIRED);
	assert_int_equal(r.res.next_update, nu);	/* still filled */
	r.opts.now = nu;
	expect(full, "good.req", "good.resp", &r, OCSP_ERR_EXPIRED);
	r.opts.now = nu - 1;
	expect(full, "good.req", "good.resp", &r, OCSP_OK);

	r.opts.now = tu - 86400;
	expect(full, "good.req", "good.resp", &r, OCSP_ERR_FUTURE);
	r.opts.now = tu - 301;
	expect(full, "good.req", "good.resp", &r, OCSP_ERR_FUTURE);
	r.opts.now = tu - 299;
	expect(full, "good.req", "good.resp", &r, OCSP_OK);
	r.opts.skew_s = 0;
	r.opts.now = tu - 1;
	expect(full, "good.req", "good.resp", &r, OCSP_ERR_FUTURE);

	/* the chain is judged at opts->now too: certs valid 2020..2049 */
	r.opts.now = 1546300800;		/* 2019-01-01 */
	expect(full, "good.req", "good.resp", &r, OCSP_ERR_CHAIN);
	r.opts.now = 2556143999 + 86400;	/* 2051-01-01 */
	expect(full, "good.req", "good.resp", &r, OCSP_ERR_CHAIN);
}

/* No nextUpdate: NVAT's thisUpdate + 1 h. */
static void
test_no_next_update(void **state)
{
	struct run	 r;

	(void)state;
	mkresp("nonext.resp", "good.req", "ica", "ica/responder", "");
	opts_now(&r);
	expect(full, "good.req", "nonext.resp", &r, OCSP_OK);
	assert_int_equal(r.res.next_update,
	    r.res.this_update + OCSP_DEFAULT_VALIDITY_S);
	r.opts.now = r.res.this_update + OCSP_DEFAULT_VALIDITY_S;
	expect(full, "good.req", "nonext.resp", &r, OCSP_ERR_EXPIRED);
}

static void
test_wrong_certid(void **state)
{
	struct run	 r;

	(void)state;
	mkreq("leaf2.req", "ica", "leaf2.pem", "");
	mkresp("leaf2.resp", "leaf2.req", "ica", "ica/responder", "-ndays 1");
	opts_now(&r);
	expect(full, "leaf2.req", "leaf2.resp", &r, OCSP_OK);
	expect(full, "good.req", "leaf2.resp", &r, OCSP_ERR_CERTID);
	/* another issuer's answer, correctly signed, is still not ours */
	expect(full, "good.req", "ica.resp", &r, OCSP_ERR_CERTID);
	/* SHA-1 and SHA-384 CertIDs of one certificate are not the same */
	mkreq("good384.req", "ica", "leaf1.pem", "-sha384");
	expect(full, "good384.req", "good.resp", &r, OCSP_ERR_CERTID);
}

/* expect(), then the trust's count of reused responders. */
#define expect_reuses(t, req, resp, r, want, n) do {			\
	expect((t), (req), (resp), (r), (want));			\
	assert_int_equal(ocsp_trust_reuses(t), (n));			\
} while (0)

/*
 * A responder judged sound is remembered: its next answers have only
 * their own signature checked (ocsp_trust_reuses counts them). What the
 * reuse leaves out must still stop every answer that is not sound.
 */
static void
test_judged_reuse(void **state)
{
	struct ocsp_trust	*t;
	struct run		 r;
	char			 path[1024];

	(void)state;
	assert_non_null(t = ocsp_trust_new());
	snprintf(path, sizeof(path), "%s/anchors.pem", pki);
	assert_int_equal(tv_trust_add_pem(t, path, 1, NULL), 1);
	snprintf(path, sizeof(path), "%s/intermediates.pem", pki);
	assert_int_equal(tv_trust_add_pem(t, path, 0, NULL), 2);

	opts_now(&r);
	expect_reuses(t, "good.req", "good.resp", &r, OCSP_OK, 0);
	expect_reuses(t, "good.req", "good.resp", &r, OCSP_OK, 1);
	/* another answer of the same responder about the same issuer */
	expect_reuses(t, "leaf2.req", "leaf2.resp", &r, OCSP_OK, 2);
	/* its signature is still checked */
	expect_reuses(t, "good.req", "badsig.resp", &r, OCSP_ERR_SIGNATURE, 3);
	/* the same responder about another issuer's certificate: judged, refused */
	mkresp("other-issuer.resp", "ica.req", "identity", "ica/responder",
	    "-ndays 1");
	expect(t, "ica.req", "other-issuer.resp", &r, OCSP_ERR_SIGNER);
	expect_reuses(t, "ica.req", "other-issuer.resp", &r, OCSP_ERR_SIGNER, 3);
	/* outside the chain's dates (2020..2049): judged, refused */
	r.opts.now = 2556143999 + 86400;
	expect(t, "good.req", "good.resp", &r, OCSP_ERR_CHAIN);
	r.opts.now = 1546300800;
	expect_reuses(t, "good.req", "good.resp", &r, OCSP_ERR_CHAIN, 3);
	/* a certificate added to the trust: every responder judged afresh */
	snprintf(path, sizeof(path), "%s/rogue/responder.pem", pki);
	assert_int_equal(tv_trust_add_pem(t, path, 0, NULL), 1);
	opts_now(&r);
	expect_reuses(t, "good.req", "good.resp", &r, OCSP_OK, 3);
	expect_reuses(t, "good.req", "good.resp", &r, OCSP_OK, 4);
	ocsp_trust_free(t);
}

static void
test_nonce(void **state)
{
	struct run	 r;
	uint8_t		*rq, other[16];
	size_t		 rql;
	const char	*why;
	struct ocsp_req	 req;

	(void)state;
	rq = slurp("good.req", &rql);
	assert_int_equal(ocsp_req_parse(rq, rql, &req, &why), 0);
	assert_int_equal(req.nonce_len, 18);

	/* the stored extnValue, as ocsp_req_parse gives it */
	opts_now(&r);
	r.opts.nonce = req.nonce;
	r.opts.nonce_len = req.nonce_len;
	expect(full, "good.req", "good.resp", &r, OCSP_OK);
	/* the bare 16 bytes, as given to ocsp_req_renonce */
	r.opts.nonce = req.nonce + 2;
	r.opts.nonce_len = 16;
	expect(full, "good.req", "good.resp", &r, OCSP_OK);
	/* someone else's nonce */
	memcpy(other, req.nonce + 2, 16);
	other[7] ^= 1;
	r.opts.nonce = other;
	expect(full, "good.req", "good.resp", &r, OCSP_ERR_NONCE);
	r.opts.nonce_len = 15;
	r.opts.nonce = req.nonce + 2;
	expect(full, "good.req", "good.resp", &r, OCSP_ERR_NONCE);

	/* a response without a nonce, when we sent one */
	mkreq("nn.req", "ica", "leaf1.pem", "-no_nonce");
	mkresp("nn.resp", "nn.req", "ica", "ica/responder", "-ndays 1");
	opts_now(&r);
	expect(full, "good.req", "nn.resp", &r, OCSP_OK);	/* unchecked */
	r.opts.nonce = req.nonce;
	r.opts.nonce_len = req.nonce_len;
	expect(full, "good.req", "nn.resp", &r, OCSP_ERR_NONCE);
	free(rq);
}

/* Missing intermediate: genuine-looking, unproven. */
static void
test_unverifiable(void **state)
{
	struct run		 r;
	struct ocsp_trust	*t;
	char			 path[800];
	uint8_t			 bad[16] = { 0 };

	(void)state;
	opts_now(&r);
	expect(bare, "good.req", "good.resp", &r, OCSP_UNVERIFIABLE);
	assert_int_equal(r.res.cert_status, OCSP_CERT_GOOD);
	assert_true(r.res.next_update > r.res.this_update);
	/* the pool completes it */
	expect(full, "good.req", "good.resp", &r, OCSP_OK);
	/* SHA-384 CertID: the name hash alone ties responder and issuer */
	mkreq("good384.req", "ica", "leaf1.pem", "-sha384");
	mkresp("good384.resp", "good384.req", "ica", "ica/responder",
	    "-ndays 1");
	expect(bare, "good384.req", "good384.resp", &r, OCSP_UNVERIFIABLE);
	expect(full, "good384.req", "good384.resp", &r, OCSP_OK);
	/* so do the response's own certificates */
	snprintf(path, sizeof(path), "-ndays 1 -rother %s/intermediates.pem",
	    pki);
	mkresp("other.resp", "good.req", "ica", "ica/responder", path);
	expect(bare, "good.req", "other.resp", &r, OCSP_OK);
	/* a pool learned one DER certificate at a time */
	assert_int_equal(tv_sh("openssl x509 -in %s/ica/ca.pem -outform DER "
	    "-out %s/ica.der && openssl x509 -in %s/identity/ca.pem "
	    "-outform DER -out %s/id.der", pki, dir, pki, dir), 0);
	assert_non_null(t = ocsp_trust_new());
	snprintf(path, sizeof(path), "%s/anchors.pem", pki);
	assert_int_equal(tv_trust_add_pem(t, path, 1, NULL), 1);
	{
		uint8_t	*der;
		size_t	 len;

		der = slurp("ica.der", &len);
		assert_int_equal(ocsp_trust_add_pool_der(t, der, len), 0);
		assert_int_equal(ocsp_trust_add_pool_der(t, der, len - 1), -1);
		free(der);
		expect(t, "good.req", "good.resp", &r, OCSP_UNVERIFIABLE);
		der = slurp("id.der", &len);
		assert_int_equal(ocsp_trust_add_pool_der(t, der, len), 0);
		free(der);
	}
	assert_int_equal(ocsp_trust_pool_count(t), 2);
	expect(t, "good.req", "good.resp", &r, OCSP_OK);
	ocsp_trust_free(t);

	/* every other check still applies */
	r.opts.now = r.res.next_update;
	expect(bare, "good.req", "good.resp", &r, OCSP_ERR_EXPIRED);
	opts_now(&r);
	r.opts.nonce = bad;
	r.opts.nonce_len = sizeof(bad);
	expect(bare, "good.req", "good.resp", &r, OCSP_ERR_NONCE);
	opts_now(&r);
	expect(bare, "leaf2.req", "good.resp", &r, OCSP_ERR_CERTID);
	expect(bare, "good.req", "badsig.resp", &r, OCSP_ERR_SIGNATURE);
}

static void
test_not_responses(void **state)
{
	struct run	 r;
	uint8_t		*rq, *rs, *copy;
	size_t		 rql, rsl, n, i, ok;
	int		 rv;
	static const uint8_t	 junk[] = { 0x30, 0x03, 0x02, 0x01, 0x00 };

	(void)state;
	rq = slurp("good.req", &rql);
	opts_now(&r);
	assert_int_equal(ocsp_req_parse(rq, rql, &r.req, NULL), 0);

	assert_int_equal(ocsp_verify(full, OCSP_RESP_TRYLATER, 5, &r.req,
	    &r.opts, &r.res), -1);
	assert_int_equal(r.res.verdict, OCSP_ERR_STATUS);
	assert_int_equal(r.res.response_status, 3);
	assert_int_equal(ocsp_verify(full, OCSP_RESP_UNAUTHORIZED, 5, &r.req,
	    &r.opts, &r.res), -1);
	assert_int_equal(r.res.response_status, 6);
	assert_int_equal(ocsp_verify(full, junk, sizeof(junk), &r.req,
	    &r.opts, &r.res), -1);
	assert_int_equal(r.res.verdict, OCSP_ERR_PARSE);
	assert_int_equal(ocsp_verify(full, junk, 0, &r.req, &r.opts, &r.res),
	    -1);
	assert_int_equal(ocsp_verify(NULL, junk, 1, &r.req, &r.opts, &r.res),
	    -1);

	/* every prefix, and trailing garbage: rejected, no crash, no leak */
	rs = slurp("good.resp", &rsl);
	assert_int_equal(ocsp_resp_status(rs, rsl), 0);
	for (n = 0; n < rsl; n++) {
		copy = malloc(n ? n : 1);
		assert_non_null(copy);
		memcpy(copy, rs, n);
		rv = ocsp_verify(full, copy, n, &r.req, &r.opts, &r.res);
		assert_int_equal(rv, -1);
		assert_int_equal(r.res.verdict, OCSP_ERR_PARSE);
		free(copy);
	}
	copy = malloc(rsl + 1);
	assert_non_null(copy);
	memcpy(copy, rs, rsl);
	copy[rsl] = 0;
	assert_int_equal(ocsp_verify(full, copy, rsl + 1, &r.req, &r.opts,
	    &r.res), -1);
	assert_int_equal(r.res.verdict, OCSP_ERR_PARSE);
	free(copy);

	/* single-byte changes anywhere never give OK */
	copy = malloc(rsl);
	assert_non_null(copy);
	ok = 0;
	for (i = 0; i < rsl; i++) {
		static const uint8_t	 masks[] = { 0x01, 0x80, 0xff };
		size_t			 m;

		for (m = 0; m < sizeof(masks); m++) {
			memcpy(copy, rs, rsl);
			copy[i] ^= masks[m];
			if (ocsp_verify(full, copy, rsl, &r.req, &r.opts,
			    &r.res) == 0)
				ok++;
			assert_true(r.res.verdict < OCSP_VERDICT_MAX);
		}
	}
	assert_int_equal(ok, 0);
	free(copy);
	/* and the trust object is as good as new after all that */
	assert_int_equal(ocsp_verify(full, rs, rsl, &r.req, &r.opts, &r.res),
	    0);
	free(rs);
	free(rq);
}

/* The certs [0] SEQUENCE OF Certificate of a DER OCSPResponse: content span. */
static struct der
resp_certs(const uint8_t *resp, size_t len)
{
	struct der	 d = { resp, len }, v, rb, basic, x, certs, seq;

	assert_int_equal(der_expect(&d, DER_SEQUENCE, &v), 0);
	assert_int_equal(der_expect(&v, DER_ENUMERATED, &x), 0);
	assert_int_equal(der_expect(&v, DER_CTX0, &rb), 0);
	assert_int_equal(der_expect(&rb, DER_SEQUENCE, &v), 0);
	assert_int_equal(der_expect(&v, DER_OID, &x), 0);
	assert_int_equal(der_expect(&v, DER_OCTETSTRING, &basic), 0);
	assert_int_equal(der_expect(&basic, DER_SEQUENCE, &v), 0);
	assert_int_equal(der_expect(&v, DER_SEQUENCE, &x), 0);
	assert_int_equal(der_expect(&v, DER_SEQUENCE, &x), 0);
	assert_int_equal(der_expect(&v, DER_BITSTRING, &x), 0);
	assert_int_equal(der_expect(&v, DER_CTX0, &certs), 0);
	assert_int_equal(der_expect(&certs, DER_SEQUENCE, &seq), 0);
	return seq;
}

/* ecdsa-with-SHA384, as NVIDIA's (and the test PKI's) certificates carry it. */
static const uint8_t	ecdsa_sha384[] = {
	0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03
};

/* Offset of the last ecdsa-with-SHA384 in p[0, len): the outer copy. */
static size_t
last_sha384(const uint8_t *p, size_t len)
{
	size_t	 i, at = len;

	for (i = 0; i + sizeof(ecdsa_sha384) <= len; i++)
		if (memcmp(p + i, ecdsa_sha384, sizeof(ecdsa_sha384)) == 0)
			at = i;
	assert_true(at < len);
	return at;
}

/*
 * The certificates a response carries are outside what the responder
 * signs. One flipped byte in any of them (every header octet, a sample of
 * the rest: tv_flip_marks) is never accepted; an outer signatureAlgorithm
 * unlike the signed one is a parse error.
 */
static void
test_embedded_certs(void **state)
{
	struct run	 r;
	struct der	 certs, v, first;
	uint8_t		*rq, *rs, *marks;
	size_t		 rql, rsl, at, i;
	const char	*why;

	(void)state;
	/* other.resp: the responder, identity and ica CA certificates */
	rq = slurp("good.req", &rql);
	rs = slurp("other.resp", &rsl);
	opts_now(&r);
	assert_int_equal(ocsp_req_parse(rq, rql, &r.req, &why), 0);
	assert_int_equal(ocsp_verify(bare, rs, rsl, &r.req, &r.opts, &r.res),
	    0);
	certs = resp_certs(rs, rsl);
	assert_true(certs.len > 1000);
	at = (size_t)(certs.p - rs);
	assert_non_null(marks = malloc(certs.len));
	(void)tv_flip_marks(certs.p, certs.len, marks);
	for (i = at; i < at + certs.len; i++) {
		if (!marks[i - at])
			continue;
		rs[i] ^= 0x01;
		if (ocsp_verify(bare, rs, rsl, &r.req, &r.opts, &r.res) == 0)
			fail_msg("flip at %zu (certificates start at %zu) "
			    "accepted", i, at);
		rs[i] ^= 0x01;
	}
	free(marks);

	/* the first certificate's outer algorithm made ecdsa-with-SHA256 */
	assert_int_equal(der_expect_tlv(&certs, DER_SEQUENCE, &v, &first), 0);
	i = at + last_sha384(first.p, first.len);
	rs[i + sizeof(ecdsa_sha384) - 1] = 0x02;
	assert_int_equal(ocsp_verify(bare, rs, rsl, &r.req, &r.opts, &r.res),
	    -1);
	assert_int_equal(r.res.verdict, OCSP_ERR_PARSE);
	assert_non_null(strstr(r.res.detail, "response certificate 1: outer "
	    "signatureAlgorithm differs from the signed one"));
	free(rs);
	free(rq);
}

/* The BasicOCSPResponse as DER, from the memo (m) or from OpenSSL's own decode (m NULL). */
static int
basic_der(struct ocsp_memo *m, const uint8_t *rs, size_t rsl, uint8_t **enc,
    X509 **first)
{
	OCSP_RESPONSE	*r = NULL;
	OCSP_BASICRESP	*bs;
	const uint8_t	*p = rs;
	int		 n;

	if (m != NULL)
		bs = ocsp_memo_basic(m, rs, rsl);
	else {
		assert_non_null(r = d2i_OCSP_RESPONSE(NULL, &p, (long)rsl));
		bs = OCSP_response_get1_basic(r);
	}
	if (bs == NULL) {
		OCSP_RESPONSE_free(r);
		return -1;
	}
	*enc = NULL;
	assert_true((n = i2d_OCSP_BASICRESP(bs, enc)) > 0);
	if (first != NULL)
		*first = sk_X509_value(OCSP_resp_get0_certs(bs), 0);
	OCSP_BASICRESP_free(bs);
	OCSP_RESPONSE_free(r);
	return n;
}

/* The memo decodes as OpenSSL does, and gives a certificate back only for its very bytes. */
static void
test_memo(void **state)
{
	struct ocsp_memo	*m;
	struct der		 certs, v, tlv;
	uint8_t			*rs, *plain, *memo;
	size_t			 rsl;
	X509			*x1, *x2, *x3;
	int			 n;

	(void)state;
	assert_non_null(m = ocsp_memo_new());
	rs = slurp("other.resp", &rsl);		/* three certificates */
	n = basic_der(NULL, rs, rsl, &plain, NULL);
	assert_int_equal(basic_der(m, rs, rsl, &memo, &x1), n);
	assert_memory_equal(plain, memo, (size_t)n);
	OPENSSL_free(memo);
	/* again: the memo's objects, the same encoding */
	assert_int_equal(basic_der(m, rs, rsl, &memo, &x2), n);
	assert_ptr_equal(x1, x2);
	assert_memory_equal(plain, memo, (size_t)n);
	OPENSSL_free(memo);
	/* one byte of the first certificate's signature flipped: another object */
	certs = resp_certs(rs, rsl);
	assert_int_equal(der_expect_tlv(&certs, DER_SEQUENCE, &v, &tlv), 0);
	rs[tlv.p - rs + tlv.len - 1] ^= 0x01;
	assert_int_equal(basic_der(m, rs, rsl, &memo, &x3), n);
	assert_ptr_not_equal(x1, x3);
	assert_memory_not_equal(plain, memo, (size_t)n);
	OPENSSL_free(memo);
	free(rs);
	OPENSSL_free(plain);
	/* no certificate embedded: not the memo's shape, OpenSSL decodes it */
	mkresp("nocerts.resp", "good.req", "ica", "ica/responder",
	    "-ndays 1 -resp_no_certs");
	rs = slurp("nocerts.resp", &rsl);
	assert_int_equal(basic_der(m, rs, rsl, &memo, NULL), -1);
	assert_true(basic_der(NULL, rs, rsl, &plain, NULL) > 0);
	OPENSSL_free(plain);
	free(rs);
	ocsp_memo_free(m);
}

/* ---- only canonical bytes: the frame of an answer, rebuilt ----------- */

/* A TLV with `content`; `wide` writes the length in 4 octets (not DER). */
static size_t
put_tlv(uint8_t *out, uint8_t tag, const uint8_t *content, size_t len,
    int wide)
{
	size_t	 n = 0, w, i;

	out[n++] = tag;
	if (wide || len >= 0x80) {
		w = wide ? 4 : len < 0x100 ? 1 : len < 0x10000 ? 2 : 3;
		out[n++] = (uint8_t)(0x80 | w);
		for (i = w; i > 0; i--)
			out[n++] = (uint8_t)(len >> (8 * (i - 1)));
	} else
		out[n++] = (uint8_t)len;
	memcpy(out + n, content, len);
	return n + len;
}

/* What to change when an answer is rebuilt from its parts. */
struct alter {
	const uint8_t	*alg;		/* signatureAlgorithm TLV, or NULL */
	size_t		 alg_len;
	const uint8_t	*cert;		/* a certificate appended to certs */
	size_t		 cert_len;
	size_t		 junk_basic;	/* zero bytes after BasicOCSPResponse */
	size_t		 junk_resp;	/* zero bytes after the OCSPResponse */
	int		 wide;		/* 1 OCSPResponse, 2 ResponseBytes,
					   3 BasicOCSPResponse: 4-octet length */
};

/* Rebuild a DER answer with `a` applied; lengths fixed up. Caller frees. */
static uint8_t *
rebuild(const uint8_t *resp, size_t len, const struct alter *a, size_t *out)
{
	struct der	 d = { resp, len }, v, rb, os, x, certs, seq;
	struct der	 st, oid, tbs, alg, sig;
	uint8_t		*b1, *b2;
	size_t		 cap = len * 2 + a->cert_len + a->alg_len + 64, n, m;

	assert_int_equal(der_expect(&d, DER_SEQUENCE, &v), 0);
	assert_int_equal(der_expect_tlv(&v, DER_ENUMERATED, &x, &st), 0);
	assert_int_equal(der_expect(&v, DER_CTX0, &rb), 0);
	assert_int_equal(der_expect(&rb, DER_SEQUENCE, &v), 0);
	assert_int_equal(der_expect_tlv(&v, DER_OID, &x, &oid), 0);
	assert_int_equal(der_expect(&v, DER_OCTETSTRING, &os), 0);
	assert_int_equal(der_expect(&os, DER_SEQUENCE, &v), 0);
	assert_int_equal(der_expect_tlv(&v, DER_SEQUENCE, &x, &tbs), 0);
	assert_int_equal(der_expect_tlv(&v, DER_SEQUENCE, &x, &alg), 0);
	assert_int_equal(der_expect_tlv(&v, DER_BITSTRING, &x, &sig), 0);
	assert_int_equal(der_expect(&v, DER_CTX0, &certs), 0);
	assert_int_equal(der_expect(&certs, DER_SEQUENCE, &seq), 0);
	b1 = calloc(1, cap);
	b2 = calloc(1, cap);
	assert_true(b1 != NULL && b2 != NULL);
	/* certs: SEQUENCE OF, then [0] */
	memcpy(b1, seq.p, seq.len);
	if (a->cert != NULL)
		memcpy(b1 + seq.len, a->cert, a->cert_len);
	n = put_tlv(b2, DER_SEQUENCE, b1, seq.len + a->cert_len, 0);
	n = put_tlv(b1, DER_CTX0, b2, n, 0);
	/* BasicOCSPResponse */
	m = 0;
	memcpy(b2 + m, tbs.p, tbs.len), m += tbs.len;
	if (a->alg != NULL)
		memcpy(b2 + m, a->alg, a->alg_len), m += a->alg_len;
	else
		memcpy(b2 + m, alg.p, alg.len), m += alg.len;
	memcpy(b2 + m, sig.p, sig.len), m += sig.len;
	memcpy(b2 + m, b1, n), m += n;
	n = put_tlv(b1, DER_SEQUENCE, b2, m, a->wide == 3);
	n += a->junk_basic;		/* b1 is zeroed past n: the junk */
	/* ResponseBytes, [0], OCSPResponse */
	m = put_tlv(b2, DER_OCTETSTRING, b1, n, 0);
	memmove(b2 + oid.len, b2, m);
	memcpy(b2, oid.p, oid.len);
	n = put_tlv(b1, DER_SEQUENCE, b2, oid.len + m, a->wide == 2);
	m = put_tlv(b2, DER_CTX0, b1, n, 0);
	memmove(b2 + st.len, b2, m);
	memcpy(b2, st.p, st.len);
	memset(b1, 0, cap);
	n = put_tlv(b1, DER_SEQUENCE, b2, st.len + m, a->wide == 1);
	*out = n + a->junk_resp;
	free(b2);
	return b1;
}

/* The DER of the first certificate in pki-relative PEM `file`. Caller frees. */
static uint8_t *
pem_der(const char *file, size_t *len)
{
	char	 path[900];
	BIO	*bio;
	X509	*x;
	uint8_t	*der = NULL;
	int	 n;

	snprintf(path, sizeof(path), "%s/%s", pki, file);
	assert_non_null(bio = BIO_new_file(path, "r"));
	assert_non_null(x = PEM_read_bio_X509(bio, NULL, NULL, NULL));
	assert_true((n = i2d_X509(x, &der)) > 0);
	X509_free(x);
	BIO_free(bio);
	*len = (size_t)n;
	return der;
}

/* Verify a rebuilt answer; want OK, or `verdict` with `detail` in it. */
static void
expect_rebuilt(struct ocsp_trust *t, const uint8_t *rs, size_t rsl,
    const struct alter *a, struct run *r, enum ocsp_verdict verdict,
    const char *detail)
{
	uint8_t		*b;
	size_t		 n;
	int		 rv;

	b = rebuild(rs, rsl, a, &n);
	rv = ocsp_verify(t, b, n, &r->req, &r->opts, &r->res);
	free(b);
	if (r->res.verdict != verdict || (detail != NULL &&
	    strstr(r->res.detail, detail) == NULL))
		fail_msg("want %s (%s), got %s (%s)",
		    ocsp_verdict_str[verdict], detail ? detail : "",
		    ocsp_verdict_str[r->res.verdict], r->res.detail);
	assert_int_equal(rv, verdict == OCSP_OK ? 0 : -1);
}

/*
 * Strict-DER clients (python-cryptography, Go) refuse what OpenSSL lets
 * through, so an answer is stored only as the DER of what it says: every
 * alteration of its unsigned frame is refused, with what was wrong.
 */
static void
test_canonical(void **state)
{
	struct run	 r;
	struct alter	 a;
	uint8_t		*rq, *rs, *root, *leaf, *self;
	size_t		 rql, rsl, rootl, leafl, selfl;
	static const uint8_t	 alg_null[] = {
		0x30, 0x0c, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04,
		0x03, 0x03, 0x05, 0x00
	};

	(void)state;
	rq = slurp("good.req", &rql);
	rs = slurp("good.resp", &rsl);
	opts_now(&r);
	assert_int_equal(ocsp_req_parse(rq, rql, &r.req, NULL), 0);
	if (tv_sh("openssl req -x509 -newkey ec -pkeyopt "
	    "ec_paramgen_curve:P-384 -nodes -subj /CN=self -days 2 "
	    "-keyout %s/self.key -out %s/self.pem >/dev/null 2>&1",
	    pki, pki) != 0)
		fail_msg("openssl req: cannot make self.pem");
	root = pem_der("anchors.pem", &rootl);
	leaf = pem_der("leaf1.pem", &leafl);
	self = pem_der("self.pem", &selfl);

	/* rebuilt unchanged: the same bytes, admitted */
	memset(&a, 0, sizeof(a));
	expect_rebuilt(full, rs, rsl, &a, &r, OCSP_OK, NULL);
	/* a certificate on the responder's chain (the root) is fine */
	a.cert = root, a.cert_len = rootl;
	expect_rebuilt(full, rs, rsl, &a, &r, OCSP_OK, NULL);

	memset(&a, 0, sizeof(a));
	a.junk_basic = 2;
	expect_rebuilt(full, rs, rsl, &a, &r, OCSP_ERR_PARSE,
	    "not DER: bytes after the BasicOCSPResponse");
	memset(&a, 0, sizeof(a));
	a.junk_resp = 2;
	expect_rebuilt(full, rs, rsl, &a, &r, OCSP_ERR_PARSE,
	    "not DER: bytes after the OCSPResponse");
	memset(&a, 0, sizeof(a));
	a.alg = alg_null, a.alg_len = sizeof(alg_null);
	expect_rebuilt(full, rs, rsl, &a, &r, OCSP_ERR_PARSE,
	    "signatureAlgorithm carries parameters");
	memset(&a, 0, sizeof(a));
	a.cert = self, a.cert_len = selfl;
	expect_rebuilt(full, rs, rsl, &a, &r, OCSP_ERR_CHAIN,
	    "embedded certificate 2 is not on the responder's chain");
	a.cert = leaf, a.cert_len = leafl;
	expect_rebuilt(full, rs, rsl, &a, &r, OCSP_ERR_CHAIN,
	    "embedded certificate 2 is not on the responder's chain");
	/* an incomplete chain is no excuse: its built part counts */
	expect_rebuilt(bare, rs, rsl, &a, &r, OCSP_ERR_CHAIN,
	    "embedded certificate 2 is not on the responder's chain");
	for (a.wide = 1; a.wide <= 3; a.wide++) {
		a.cert = NULL, a.cert_len = 0;
		expect_rebuilt(full, rs, rsl, &a, &r, OCSP_ERR_PARSE,
		    "not DER: ");
	}
	free(self);
	free(leaf);
	free(root);
	free(rs);
	free(rq);
}

/*
 * Pool and anchor certificates from a genuine NVIDIA device chain: taken
 * as sent; with any byte of their unsigned frame or outer
 * signatureAlgorithm flipped, refused, and a PEM with one such
 * certificate adds nothing.
 */
static void
test_nvidia_pool(void **state)
{
	const char		*top = getenv("top_srcdir");
	struct ocsp_trust	*t;
	struct der		 d, top_seq, v, alg;
	BIO			*bio;
	char			 path[4096], *name, *header, *text;
	uint8_t			*der[8], *pem;
	long			 n[8], m;
	size_t			 k = 0, j, i, len;
	FILE			*f;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/vectors/nvidia/"
	    "attestation-sdk/testdata/hopperCertChain.txt", top ? top : ".");
	assert_non_null(f = fopen(path, "rb"));
	assert_non_null(bio = BIO_new_fp(f, BIO_CLOSE));
	while (k < 8 && PEM_read_bio(bio, &name, &header, &der[k], &n[k]) ==
	    1) {
		OPENSSL_free(name);
		OPENSSL_free(header);
		k++;
	}
	BIO_free(bio);
	ERR_clear_error();
	assert_int_equal(k, 5);

	assert_non_null(t = ocsp_trust_new());
	for (j = 0; j < k; j++) {
		assert_int_equal(ocsp_trust_add_pool_der(t, der[j],
		    (size_t)n[j]), 0);
		d.p = der[j];
		d.len = (size_t)n[j];
		assert_int_equal(der_expect(&d, DER_SEQUENCE, &top_seq), 0);
		assert_int_equal(der_expect(&top_seq, DER_SEQUENCE, &v), 0);
		assert_int_equal(der_expect_tlv(&top_seq, DER_SEQUENCE, &v,
		    &alg), 0);
		/* the outer header, then the outer AlgorithmIdentifier on */
		for (i = 0; i < (size_t)n[j]; i++) {
			if (i >= 4 && (i < (size_t)(alg.p - der[j]) ||
			    i >= (size_t)(alg.p - der[j]) + alg.len + 3))
				continue;
			der[j][i] ^= 0x01;
			if (ocsp_trust_add_pool_der(t, der[j], (size_t)n[j]) !=
			    -1)
				fail_msg("certificate %zu: flip at %zu "
				    "accepted", j + 1, i);
			der[j][i] ^= 0x01;
		}
	}
	assert_int_equal(ocsp_trust_pool_count(t), k);

	/* As anchors: the chain with its root's outer algorithm changed. */
	der[4][last_sha384(der[4], (size_t)n[4]) + sizeof(ecdsa_sha384) - 1] =
	    0x02;
	assert_non_null(bio = BIO_new(BIO_s_mem()));
	for (j = 0; j < k; j++)
		assert_true(PEM_write_bio(bio, "CERTIFICATE", "", der[j],
		    n[j]) > 0);
	m = BIO_get_mem_data(bio, &text);
	len = (size_t)m;
	assert_non_null(pem = malloc(len));
	memcpy(pem, text, len);
	BIO_free(bio);
	assert_int_equal(ocsp_trust_add_anchors_pem(t, (char *)pem, len), -1);
	assert_int_equal(ocsp_trust_anchor_count(t), 0);
	free(pem);
	ocsp_trust_free(t);
	for (j = 0; j < k; j++)
		OPENSSL_free(der[j]);
}

static void
test_builtin(void **state)
{
	struct ocsp_trust	*t;
	const char		*why;
	char			 path[800];

	(void)state;
	assert_non_null(t = ocsp_trust_new());
	assert_int_equal(ocsp_trust_add_builtin_anchors(t), 2);
	assert_int_equal(ocsp_trust_anchor_count(t), 2);
	assert_true(nvidia_pool_count >= 8);
	assert_int_equal(ocsp_trust_add_builtin_pool(t),
	    (int)nvidia_pool_count);
	assert_int_equal(ocsp_trust_pool_count(t), nvidia_pool_count);
	/* duplicates are not added twice */
	assert_int_equal(ocsp_trust_add_builtin_anchors(t), 2);
	assert_int_equal(ocsp_trust_anchor_count(t), 2);
	assert_int_equal(ocsp_trust_add_anchors_pem(t, nvidia_anchors[0].pem,
	    strlen(nvidia_anchors[0].pem)), 1);
	assert_int_equal(ocsp_trust_anchor_count(t), 2);
	assert_non_null(strstr(nvidia_anchors[0].subject,
	    "NVIDIA Device Identity CA"));
	assert_non_null(strstr(nvidia_anchors[1].subject,
	    "NVIDIA CoRIM signing Root CA"));
	assert_int_equal(strlen(nvidia_anchors[0].sha256), 64);

	/* bad input adds nothing */
	assert_int_equal(ocsp_trust_add_pool_pem(t, "junk", 4), -1);
	assert_int_equal(ocsp_trust_add_anchors_pem(t,
	    "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
	    58), -1);
	assert_int_equal(ocsp_trust_anchor_count(t), 2);
	/* a buffer that adds nothing says why */
	why = NULL;
	assert_int_equal(ocsp_trust_add_pem(t, 1, "junk", 4, &why), -1);
	assert_non_null(why);
	assert_non_null(strstr(why, "no certificates"));
	snprintf(path, sizeof(path), "%s/good.req", dir);
	why = NULL;
	assert_int_equal(tv_trust_add_pem(t, path, 0, &why), -1);
	assert_non_null(why);
	assert_non_null(strstr(why, "no certificates"));
	why = "unchanged";
	assert_int_equal(ocsp_trust_add_pem(t, 1, nvidia_anchors[0].pem,
	    strlen(nvidia_anchors[0].pem), &why), 1);
	assert_null(why);
	assert_int_equal(ocsp_trust_anchor_count(t), 2);
	ocsp_trust_free(t);
	ocsp_trust_free(NULL);

	/* NVIDIA's anchors do not vouch for the test PKI */
	assert_non_null(t = ocsp_trust_new());
	assert_int_equal(ocsp_trust_add_builtin_anchors(t), 2);
	assert_int_equal(ocsp_trust_add_builtin_pool(t),
	    (int)nvidia_pool_count);
	{
		struct run	 r;

		snprintf(path, sizeof(path),
		    "-ndays 1 -rother %s/ica/chain.pem", pki);
		mkresp("root.resp", "good.req", "ica", "ica/responder", path);
		opts_now(&r);
		expect(t, "good.req", "root.resp", &r, OCSP_ERR_CHAIN);
		/*
		 * Without its root the test chain just ends at an unknown
		 * issuer: indistinguishable from a missing intermediate.
		 */
		expect(t, "good.req", "other.resp", &r, OCSP_UNVERIFIABLE);
	}
	ocsp_trust_free(t);
}

/* ---- the pool's admission rule (ocsp_trust_chaining_cas) ---------------- */

#define MAX_SET	8

/* A set of DER certificates, from PEM files; each owned. */
struct certset {
	uint8_t	*der[MAX_SET];
	size_t	 len[MAX_SET];
	size_t	 n;
};

/* Every certificate of a PEM file (absolute, or relative to the PKI). */
static void
set_add_pem(struct certset *s, const char *file)
{
	char	 path[1024];
	FILE	*f;
	X509	*x;
	uint8_t	*d;
	int	 n;

	if (file[0] == '/')
		snprintf(path, sizeof(path), "%s", file);
	else
		snprintf(path, sizeof(path), "%s/%s", pki, file);
	if ((f = fopen(path, "r")) == NULL)
		fail_msg("%s: cannot open", path);
	while ((x = PEM_read_X509(f, NULL, NULL, NULL)) != NULL) {
		assert_true(s->n < MAX_SET);
		d = NULL;
		assert_true((n = i2d_X509(x, &d)) > 0);
		s->der[s->n] = malloc((size_t)n);
		assert_non_null(s->der[s->n]);
		memcpy(s->der[s->n], d, (size_t)n);
		s->len[s->n++] = (size_t)n;
		OPENSSL_free(d);
		X509_free(x);
	}
	fclose(f);
	assert_true(s->n > 0);
}

static void
set_free(struct certset *s)
{
	size_t	 i;

	for (i = 0; i < s->n; i++)
		free(s->der[i]);
	memset(s, 0, sizeof(*s));
}

/* The rule over the set; the admitted ones as a string of 0/1, in order. */
static int
admitted(struct ocsp_trust *t, const struct certset *s, char out[MAX_SET + 1])
{
	int	 ok[MAX_SET];
	size_t	 i;
	int	 n;

	n = ocsp_trust_chaining_cas(t, (const uint8_t *const *)s->der, s->len,
	    s->n, ok);
	for (i = 0; i < s->n; i++)
		out[i] = ok[i] ? '1' : '0';
	out[s->n] = '\0';
	return n;
}

/* The set learned from `files` (in that order), as file names admitted. */
static void
learned(struct ocsp_trust *t, const char *const files[], size_t n,
    char *names, size_t len)
{
	struct certset	 s;
	char		 ok[MAX_SET + 1];
	const char	*sorted[MAX_SET];
	size_t		 i, j, k = 0;

	memset(&s, 0, sizeof(s));
	for (i = 0; i < n; i++) {
		set_add_pem(&s, files[i]);
		assert_int_equal(s.n, i + 1);	/* one certificate each */
	}
	admitted(t, &s, ok);
	for (i = 0; i < n; i++)
		if (ok[i] == '1')
			sorted[k++] = files[i];
	/* a set: the same whatever order it was given in */
	for (i = 1; i < k; i++)
		for (j = i; j > 0 && strcmp(sorted[j - 1], sorted[j]) > 0; j--) {
			const char *tmp = sorted[j];

			sorted[j] = sorted[j - 1];
			sorted[j - 1] = tmp;
		}
	names[0] = '\0';
	for (i = 0; i < k; i++) {
		strncat(names, sorted[i], len - strlen(names) - 1);
		strncat(names, " ", len - strlen(names) - 1);
	}
	set_free(&s);
}

/*
 * A new hierarchy is learned whole in one pass, whatever the order of the
 * chain: leaf first, root first, shuffled. Leaves, responders and roots
 * never join; a look-alike of a CA never does.
 */
static void
test_chaining_order(void **state)
{
	static const char *const leaf_first[] = { "leaf1.pem", "ica/ca.pem",
	    "identity/ca.pem", "root/ca.pem" };
	static const char *const root_first[] = { "root/ca.pem",
	    "identity/ca.pem", "ica/ca.pem", "leaf1.pem" };
	static const char *const shuffled[] = { "identity/ca.pem",
	    "leaf1.pem", "root/ca.pem", "ica/ca.pem" };
	static const char *const lookalikes[] = { "evil/ica/ca.pem",
	    "ica/ca.pem", "evil/identity/ca.pem", "ica/responder.pem",
	    "identity/ca.pem" };
	static const char *const ica_alone[] = { "ica/ca.pem" };
	static const char *const evil_whole[] = { "evil/ica/ca.pem",
	    "evil/identity/ca.pem", "evil/root/ca.pem" };
	const char	*want = "ica/ca.pem identity/ca.pem ";
	char		 got[512];

	(void)state;
	learned(bare, leaf_first, 4, got, sizeof(got));
	assert_string_equal(got, want);
	learned(bare, root_first, 4, got, sizeof(got));
	assert_string_equal(got, want);
	learned(bare, shuffled, 4, got, sizeof(got));
	assert_string_equal(got, want);
	learned(bare, lookalikes, 5, got, sizeof(got));
	assert_string_equal(got, want);
	/* alone, the ICA does not reach the anchor: its issuer is unknown */
	learned(bare, ica_alone, 1, got, sizeof(got));
	assert_string_equal(got, "");
	/* with the pool holding its issuer it does */
	learned(full, ica_alone, 1, got, sizeof(got));
	assert_string_equal(got, "ica/ca.pem ");
	/* a whole hierarchy under another root: nothing */
	learned(bare, evil_whole, 3, got, sizeof(got));
	assert_string_equal(got, "");
	/* the rule only says: nothing joined the pool */
	assert_int_equal(ocsp_trust_pool_count(bare), 0);
}

/* Dates are not checked, even after ocsp_verify pinned the store's clock. */
static void
test_chaining_dates(void **state)
{
	static const char *const chain[] = { "ica/ca.pem", "identity/ca.pem" };
	struct run	 r;
	char		 got[512];

	(void)state;
	opts_now(&r);
	r.opts.now = (time_t)4102444800;	/* 2100: the test PKI ended 2049 */
	(void)check(full, "good.req", "good.resp", &r);
	assert_int_not_equal(r.res.verdict, OCSP_OK);
	learned(full, chain, 2, got, sizeof(got));
	assert_string_equal(got, "ica/ca.pem identity/ca.pem ");
}

static void
test_chaining_args(void **state)
{
	static const uint8_t	 junk[] = { 0x30, 0x03, 0x02, 0x01, 0x01 };
	const uint8_t		*der[2] = { junk, NULL };
	size_t			 len[2] = { sizeof(junk), 0 };
	int			 ok[2] = { 7, 7 };

	(void)state;
	assert_int_equal(ocsp_trust_chaining_cas(bare, der, len, 2, ok), 0);
	assert_int_equal(ok[0], 0);
	assert_int_equal(ok[1], 0);
	assert_int_equal(ocsp_trust_chaining_cas(bare, NULL, NULL, 0, NULL), 0);
	assert_int_equal(ocsp_trust_chaining_cas(NULL, der, len, 2, ok), -1);
	assert_int_equal(ocsp_trust_chaining_cas(bare, der, len, 2, NULL), -1);
}

/* A vector under tests/vectors/nvidia/captured. */
static void
captured(char *path, size_t len, const char *name)
{
	const char	*top = getenv("top_srcdir");

	snprintf(path, len, "%s/tests/vectors/nvidia/captured/%s",
	    top != NULL ? top : ".", name);
}

static struct ocsp_trust *
builtin(int with_pool)
{
	struct ocsp_trust	*t;

	assert_non_null(t = ocsp_trust_new());
	assert_int_equal(ocsp_trust_add_builtin_anchors(t), 2);
	if (with_pool)
		assert_int_equal(ocsp_trust_add_builtin_pool(t),
		    (int)nvidia_pool_count);
	return t;
}

/*
 * Genuine Blackwell and H100 NVL device chains captured from NVIDIA's
 * services: their per-device BROM certificate, alone, reaches the pinned
 * root through the compiled-in pool; with the roots alone, the whole
 * chain given at once is learned in one pass.
 */
static void
test_captured_chains(void **state)
{
	static const char *const files[] = { "gb100-device-chain.pem",
	    "h100-nvl-device-chain.pem" };
	struct ocsp_trust	*pool, *roots;
	struct certset		 s, brom;
	char			 path[1024], ok[MAX_SET + 1];
	size_t			 i;

	(void)state;
	pool = builtin(1);
	roots = builtin(0);
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		memset(&s, 0, sizeof(s));
		memset(&brom, 0, sizeof(brom));
		captured(path, sizeof(path), files[i]);
		set_add_pem(&s, path);
		assert_int_equal(s.n, 5);	/* FMC LF, BROM, ICA, Identity, root */
		brom.der[0] = s.der[1];
		brom.len[0] = s.len[1];
		brom.n = 1;
		assert_int_equal(admitted(pool, &brom, ok), 1);
		assert_int_equal(admitted(roots, &brom, ok), 0);
		assert_int_equal(admitted(roots, &s, ok), 3);
		assert_string_equal(ok, "01110");
		assert_int_equal(admitted(pool, &s, ok), 3);
		assert_string_equal(ok, "01110");
		set_free(&s);
	}
	ocsp_trust_free(pool);
	ocsp_trust_free(roots);
}

/* Upper-case hex SHA-256 of DER, as nvidia_certs.c names its entries. */
static void
fingerprint(const uint8_t *der, size_t len, char hex[65])
{
	uint8_t		 md[32];
	unsigned int	 n, i;

	assert_int_equal(EVP_Digest(der, len, md, &n, EVP_sha256(), NULL), 1);
	for (i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02X", md[i]);
}

/*
 * NVIDIA's 2026 RIMs (driver 595.71.05, VBIOS 96.00.9F.00.04) are signed
 * under NVIDIA Reference Value L3 GH100 003: it is compiled in, the very
 * certificate of their KeyInfo chains.
 */
static void
test_l3_003_builtin(void **state)
{
	static const struct {
		const char	*file, *id;
	} rims[] = {
		{ "rim-NV_GPU_DRIVER_GH100_595.71.05.json",
		  "NV_GPU_DRIVER_GH100_595.71.05" },
		{ "rim-NV_GPU_VBIOS_1010_0210_886_96009F0004.json",
		  "NV_GPU_VBIOS_1010_0210_886_96009F0004" },
	};
	struct rim_trust	*rt;
	struct rim_result	 r;
	struct ocsp_trust	*pool, *roots;
	struct certset		 s;
	const struct vendor_root *l3 = NULL;
	char			 path[1024], hex[65], ok[MAX_SET + 1];
	uint8_t			*buf;
	size_t			 i, len;
	FILE			*f;

	(void)state;
	for (i = 0; i < nvidia_pool_count; i++)
		if (strstr(nvidia_pool[i].subject,
		    "CN=NVIDIA Reference Value L3 GH100 003") != NULL)
			l3 = &nvidia_pool[i];
	assert_non_null(l3);
	assert_non_null(rt = rim_trust_new());
	assert_int_equal(rim_trust_add_builtin(rt), 0);
	pool = builtin(1);
	roots = builtin(0);
	for (i = 0; i < sizeof(rims) / sizeof(rims[0]); i++) {
		captured(path, sizeof(path), rims[i].file);
		assert_non_null(f = fopen(path, "rb"));
		assert_non_null(buf = malloc(RIM_MAX_JSON_BYTES));
		len = fread(buf, 1, RIM_MAX_JSON_BYTES, f);
		fclose(f);
		memset(&r, 0, sizeof(r));
		assert_int_equal(rim_verify(rt, rims[i].id, buf, len,
		    (time_t)1788000000, &r), 0);
		free(buf);
		/* L4 signer, L3 GH100 003, GH100 CA, CoRIM root */
		assert_int_equal(r.chain.n, 4);
		fingerprint(r.chain.der[1], r.chain.len[1], hex);
		assert_string_equal(hex, l3->sha256);
		/* the L3 alone is admitted with the compiled-in pool ... */
		memset(&s, 0, sizeof(s));
		s.der[0] = r.chain.der[1];
		s.len[0] = r.chain.len[1];
		s.n = 1;
		assert_int_equal(admitted(pool, &s, ok), 1);
		/* ... and with the roots alone, with its chain in one pass */
		assert_int_equal(admitted(roots, &s, ok), 0);
		memcpy(s.der, r.chain.der, sizeof(r.chain.der[0]) * 4);
		memcpy(s.len, r.chain.len, sizeof(r.chain.len[0]) * 4);
		s.n = 4;
		assert_int_equal(admitted(roots, &s, ok), 2);
		assert_string_equal(ok, "0110");
		rim_result_free(&r);
	}
	ocsp_trust_free(pool);
	ocsp_trust_free(roots);
	rim_trust_free(rt);
}

int
main(void)
{
	/* order matters: later tests reuse earlier fixtures */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_revoked_unknown),
		cmocka_unit_test(test_each_level),
		cmocka_unit_test(test_bad_signature),
		cmocka_unit_test(test_lookalike_root),
		cmocka_unit_test(test_wrong_responder),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_no_next_update),
		cmocka_unit_test(test_wrong_certid),
		cmocka_unit_test(test_judged_reuse),
		cmocka_unit_test(test_nonce),
		cmocka_unit_test(test_unverifiable),
		cmocka_unit_test(test_not_responses),
		cmocka_unit_test(test_embedded_certs),
		cmocka_unit_test(test_memo),
		cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_nvidia_pool),
		cmocka_unit_test(test_builtin),
		cmocka_unit_test(test_chaining_order),
		cmocka_unit_test(test_chaining_dates),
		cmocka_unit_test(test_chaining_args),
		cmocka_unit_test(test_captured_chains),
		cmocka_unit_test(test_l3_003_builtin),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
