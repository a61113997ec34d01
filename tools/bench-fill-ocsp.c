/* SPDX-License-Identifier: Apache-2.0 */
/* bench-fill's signed mode: OCSP answers to distinct CertIDs, signed in-process under a test CA, stored as stapled stores them. */
#include <config.h>

#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "attest/ocsp_verify.h"
#include "attest/util.h"
#include "cache/store.h"
#include "entry/entry.h"
#include "entry/ocsp.h"
#include "tools/bench-fill.h"

#define SIGNED_SERIAL_BASE	0x10000000UL	/* 4-byte positive serials */
#define SIGNED_NONCE_BYTES	16		/* as NVAT sends */
#define SIGNED_BATCH		2048		/* entries per write transaction */
#define SIGNED_VERIFY_EVERY	997		/* entries judged by entry_ocsp_admit */
#define SIGNED_SKEW_S		60		/* stapled's default skew_s */
#define SIGNED_DER_MAX_BYTES	8192
#define SIGNED_PATH_MAX_BYTES	4096
#define SIGNED_CERT_DAYS	30		/* the bench PKI's certificates */

/* The test CA's responder and what it signs for; all owned. */
struct signer {
	X509			*issuer;	/* DIR/ica.pem: the CertIDs' issuer */
	X509			*rcert;		/* DIR/resp.pem: delegated responder */
	EVP_PKEY		*rkey;		/* DIR/resp.key */
	STACK_OF(X509)		*other;		/* ica.pem again, as openssl ocsp -rother */
	struct ocsp_trust	*trust;		/* root.pem pinned, ica.pem pooled */
};

/* One entry being made; the DER buffers are malloc'd and owned. */
struct made {
	uint8_t			 key[OCSP_KEY_BYTES];
	struct cache_meta	 meta;
	struct cache_body	 body;
	uint8_t			*req;		/* with a nonce: what a refresh re-sends */
	uint8_t			*resp;
	uint8_t			*get;		/* without a nonce: the GET clients' request */
	size_t			 get_len;
};

/* Where the GET paths, the responder's index and nginx's files go (NULL: nowhere). */
struct outputs {
	FILE	*paths;		/* OUTDIR/paths: one "/ocsp/<base64, %-encoded>" a line */
	FILE	*index;		/* OUTDIR/index.txt: openssl ocsp's index, all good */
	char	 www[SIGNED_PATH_MAX_BYTES];	/* OUTDIR/www: the same bytes, as files */
};

static void *
pem_read(const char *dir, const char *name, int key)
{
	char	 path[SIGNED_PATH_MAX_BYTES];
	FILE	*f;
	void	*v;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "bench-fill: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	v = key ? (void *)PEM_read_PrivateKey(f, NULL, NULL, NULL) :
	    (void *)PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (v == NULL)
		fprintf(stderr, "bench-fill: %s: not PEM\n", path);
	return v;
}

/* Add a PEM file to the trust store (anchor 1) or its pool (0). 0, or -1. */
static int
trust_add(struct ocsp_trust *t, const char *dir, const char *name, int anchor)
{
	char		 path[SIGNED_PATH_MAX_BYTES], buf[SIGNED_DER_MAX_BYTES];
	const char	*why = "unreadable";
	FILE		*f;
	size_t		 n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "r")) != NULL) {
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
	}
	if (n > 0 && n < sizeof(buf) &&
	    ocsp_trust_add_pem(t, anchor, buf, n, &why) > 0)
		return 0;
	fprintf(stderr, "bench-fill: %s: %s\n", path, why);
	return -1;
}

static void
signer_free(struct signer *s)
{
	X509_free(s->issuer);
	X509_free(s->rcert);
	EVP_PKEY_free(s->rkey);
	sk_X509_pop_free(s->other, X509_free);
	ocsp_trust_free(s->trust);
}

/* Load DIR's root.pem, ica.pem, resp.pem and resp.key. 0, or -1 (printed). */
static int
signer_load(struct signer *s, const char *dir)
{
	X509	*dup;

	memset(s, 0, sizeof(*s));
	if ((s->issuer = pem_read(dir, "ica.pem", 0)) == NULL ||
	    (s->rcert = pem_read(dir, "resp.pem", 0)) == NULL ||
	    (s->rkey = pem_read(dir, "resp.key", 1)) == NULL ||
	    (s->trust = ocsp_trust_new()) == NULL ||
	    trust_add(s->trust, dir, "root.pem", 1) == -1 ||
	    trust_add(s->trust, dir, "ica.pem", 0) == -1)
		return -1;
	if ((s->other = sk_X509_new_null()) == NULL ||
	    (dup = X509_dup(s->issuer)) == NULL)
		return -1;
	if (!sk_X509_push(s->other, dup)) {
		X509_free(dup);
		return -1;
	}
	return 0;
}

/* i2d into a new buffer; NULL on failure. */
static uint8_t *
der_of_req(OCSP_REQUEST *q, size_t *len)
{
	uint8_t	*buf = NULL;
	int	 n;

	if ((n = i2d_OCSP_REQUEST(q, &buf)) <= 0)
		return NULL;
	*len = (size_t)n;
	return buf;
}

/*
 * The two requests for serial number `serial`: without a nonce (as an
 * RFC 5019 GET client asks) and with 16 random bytes (as NVAT POSTs; the
 * one stored, whose nonce a refresh replaces). *id gets the CertID.
 */
static int
make_requests(const struct signer *s, unsigned long serial, struct made *m,
    OCSP_CERTID **id)
{
	OCSP_REQUEST	*q = NULL;
	ASN1_INTEGER	*sn = NULL;
	OCSP_CERTID	*cid = NULL;
	unsigned char	 nonce[SIGNED_NONCE_BYTES];
	int		 rv = -1;

	if ((sn = ASN1_INTEGER_new()) == NULL || !ASN1_INTEGER_set_uint64(sn, serial) ||
	    (*id = OCSP_cert_id_new(EVP_sha1(), X509_get_subject_name(s->issuer),
	    X509_get0_pubkey_bitstr(s->issuer), sn)) == NULL ||
	    (q = OCSP_REQUEST_new()) == NULL || (cid = OCSP_CERTID_dup(*id)) == NULL)
		goto out;
	if (OCSP_request_add0_id(q, cid) == NULL) {
		OCSP_CERTID_free(cid);
		goto out;
	}
	if ((m->get = der_of_req(q, &m->get_len)) == NULL ||
	    RAND_bytes(nonce, sizeof(nonce)) != 1 ||
	    !OCSP_request_add1_nonce(q, nonce, sizeof(nonce)) ||
	    (m->req = der_of_req(q, &m->body.request_len)) == NULL)
		goto out;
	m->body.request = m->req;
	rv = 0;
out:
	OCSP_REQUEST_free(q);
	ASN1_INTEGER_free(sn);
	return rv;
}

/* A signed "good" answer for id, valid [this_update, next_update). 0, or -1. */
static int
make_response(const struct signer *s, OCSP_CERTID *id, time_t this_update,
    time_t next_update, struct made *m)
{
	OCSP_BASICRESP	*bs = NULL;
	OCSP_RESPONSE	*r = NULL;
	ASN1_TIME	*tu = NULL, *nu = NULL;
	time_t		 produced;
	int		 n, rv = -1;

	if ((bs = OCSP_BASICRESP_new()) == NULL ||
	    (tu = ASN1_GENERALIZEDTIME_set(NULL, this_update)) == NULL ||
	    (nu = ASN1_GENERALIZEDTIME_set(NULL, next_update)) == NULL ||
	    OCSP_basic_add1_status(bs, id, V_OCSP_CERTSTATUS_GOOD, 0, NULL, tu,
	    nu) == NULL ||
	    !OCSP_basic_sign(bs, s->rcert, s->rkey, EVP_sha256(), s->other, 0) ||
	    util_asn1_time(OCSP_resp_get0_produced_at(bs), &produced) == -1 ||
	    (r = OCSP_response_create(OCSP_RESPONSE_STATUS_SUCCESSFUL, bs)) == NULL ||
	    (n = i2d_OCSP_RESPONSE(r, &m->resp)) <= 0)
		goto out;
	m->body.response = m->resp;
	m->body.response_len = (size_t)n;
	m->meta.produced_at = produced;
	rv = 0;
out:
	OCSP_RESPONSE_free(r);
	OCSP_BASICRESP_free(bs);
	ASN1_TIME_free(tu);
	ASN1_TIME_free(nu);
	return rv;
}

/*
 * Where entry i stands in its refresh cycle: a share in [0, 1) of the
 * refresh interval already gone, spread evenly over the entries (the
 * golden-ratio sequence), as in a cache that has been running a while.
 */
static double
cycle_share(unsigned long i)
{
	return (double)(uint32_t)(i * 2654435769UL) / 4294967296.0;
}

static void
made_free(struct made *m)
{
	OPENSSL_free(m->req);
	OPENSSL_free(m->resp);
	OPENSSL_free(m->get);
	memset(m, 0, sizeof(*m));
}

/* Entry i: its requests, answer, key and metadata. 0, or -1 (printed). */
static int
make_entry(const struct signer *s, const struct fill_plan *p, unsigned long i,
    struct made *m)
{
	OCSP_CERTID	*id = NULL;
	struct ocsp_req	 req;
	const char	*why = "";
	double		 interval = p->validity_s * p->fraction;
	time_t		 tu = p->now - (time_t)(cycle_share(i) * interval);
	int		 rv = -1;

	memset(m, 0, sizeof(*m));
	if (make_requests(s, SIGNED_SERIAL_BASE + i, m, &id) == -1 ||
	    make_response(s, id, tu, tu + p->validity_s, m) == -1 ||
	    entry_ocsp_request(m->req, m->body.request_len, &req, m->key,
	    &why) == -1) {
		fprintf(stderr, "bench-fill: entry %lu: cannot make it%s%s\n", i,
		    *why ? ": " : "", why);
		goto out;
	}
	m->meta.kind = CACHE_KIND_OCSP;
	m->meta.status = OCSP_CERT_GOOD;
	m->meta.this_update = tu;
	m->meta.next_update = tu + p->validity_s;
	m->meta.fetched_at = tu;
	/*
	 * Asked in the last ten minutes, as each entry is under the uniform
	 * hit load tools/bench-scale measures (a million entries at 10,000
	 * hits a second: each every 100 s), so the hits find the steady state:
	 * stapled records a use at most hourly (usage_hit).
	 */
	m->meta.last_served_at = p->now - (time_t)(i % FILL_SERVED_SPREAD_S);
	/* The refresh stapled planned when it fetched this answer (no jitter). */
	m->meta.next_refresh_at = tu + (time_t)interval;
	if (m->meta.next_refresh_at <= p->now)
		m->meta.next_refresh_at = p->now + 1;
	snprintf(m->meta.source, sizeof(m->meta.source), "bench-fill");
	rv = 0;
out:
	OCSP_CERTID_free(id);
	return rv;
}

/* What stapled's own rule says of a made entry: it must store it, with our times. */
static int
judge_entry(const struct signer *s, const struct fill_plan *p, unsigned long i,
    const struct made *m)
{
	struct entry_ocsp_question	 q = { 0 };
	struct entry_answer		 a = { 0 };
	struct entry_ocsp_admission	 ad;

	q.key = m->key;
	q.klen = sizeof(m->key);
	q.request = m->req;
	q.request_len = m->body.request_len;
	q.skew_s = SIGNED_SKEW_S;
	a.body = m->resp;
	a.body_len = m->body.response_len;
	if (entry_ocsp_admit(s->trust, &q, &a, NULL, p->now, &ad) != ENTRY_STORE) {
		fprintf(stderr, "bench-fill: entry %lu: stapled would not store it: "
		    "%s\n", i, ad.reason);
		return -1;
	}
	if (ad.meta.this_update != m->meta.this_update ||
	    ad.meta.next_update != m->meta.next_update ||
	    ad.meta.produced_at != m->meta.produced_at ||
	    ad.meta.status != m->meta.status) {
		fprintf(stderr, "bench-fill: entry %lu: stapled reads other times "
		    "or status than were signed\n", i);
		return -1;
	}
	return 0;
}

/* mkdir -p of the directories in path (not its last component). 0, or -1. */
static int
mkdir_parents(char *path)
{
	char	*p;

	for (p = path + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) == -1 && errno != EEXIST) {
			fprintf(stderr, "bench-fill: %s: %s\n", path, strerror(errno));
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return 0;
}

/*
 * The GET path (base64 with '/', '+' and '=' %-encoded, RFC 6960 A.1),
 * nginx's file at WWW/ocsp/<base64> (so '/' makes directories, as nginx
 * decodes the path) and the responder's index line.
 */
static int
write_outputs(struct outputs *o, const struct fill_plan *p, unsigned long i,
    const struct made *m)
{
	char		 b64[SIGNED_DER_MAX_BYTES], file[SIGNED_PATH_MAX_BYTES];
	unsigned char	*c;
	FILE		*f;
	char		 exp[32];
	time_t		 expires = p->now + SIGNED_CERT_DAYS * 86400L;

	if (o->paths == NULL)
		return 0;
	EVP_EncodeBlock((unsigned char *)b64, m->get, (int)m->get_len);
	fputs("/ocsp/", o->paths);
	for (c = (unsigned char *)b64; *c != '\0'; c++)
		if (*c == '/' || *c == '+' || *c == '=')
			fprintf(o->paths, "%%%02X", *c);
		else
			fputc(*c, o->paths);
	fputc('\n', o->paths);
	/* UTCTime: the four-digit year's last two */
	strftime(exp, sizeof(exp), "%Y%m%d%H%M%SZ", gmtime(&expires));
	fprintf(o->index, "V\t%s\t\t%lX\tunknown\t/O=bench/CN=device %lu\n",
	    exp + 2, SIGNED_SERIAL_BASE + i, i);
	if (snprintf(file, sizeof(file), "%s/ocsp/%s", o->www, b64) >=
	    (int)sizeof(file)) {
		fprintf(stderr, "bench-fill: %s: path too long\n", o->www);
		return -1;
	}
	/* Most files land in a directory made before: mkdir only on ENOENT. */
	if ((f = fopen(file, "wb")) == NULL && (errno != ENOENT ||
	    mkdir_parents(file) == -1 || (f = fopen(file, "wb")) == NULL)) {
		fprintf(stderr, "bench-fill: %s: %s\n", file, strerror(errno));
		return -1;
	}
	fwrite(m->resp, 1, m->body.response_len, f);
	return fclose(f) == 0 ? 0 : -1;
}

/* Store made[0..n) in one write transaction and free them. 0, or -1. */
static int
flush_batch(struct cache *c, struct made *made, struct cache_put_item *items,
    int *results, size_t n)
{
	size_t	i;
	int	rv = 0;

	for (i = 0; i < n; i++) {
		items[i].key = made[i].key;
		items[i].klen = sizeof(made[i].key);
		items[i].meta = &made[i].meta;
		items[i].body = &made[i].body;
	}
	if (n > 0 && cache_put_many(c, items, n, results) == -1) {
		fprintf(stderr, "bench-fill: %s\n", cache_strerror(c));
		rv = -1;
	}
	for (i = 0; i < n; i++)
		made_free(&made[i]);
	return rv;
}

static int
outputs_open(struct outputs *o, const char *outdir)
{
	char	path[SIGNED_PATH_MAX_BYTES];

	memset(o, 0, sizeof(*o));
	if (outdir == NULL)
		return 0;
	snprintf(o->www, sizeof(o->www), "%s/www", outdir);
	snprintf(path, sizeof(path), "%s/paths", outdir);
	if ((o->paths = fopen(path, "w")) == NULL)
		goto fail;
	snprintf(path, sizeof(path), "%s/index.txt", outdir);
	if ((o->index = fopen(path, "w")) == NULL)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "bench-fill: %s: %s\n", path, strerror(errno));
	return -1;
}

static int
outputs_close(struct outputs *o)
{
	int	rv = 0;

	if (o->paths != NULL && fclose(o->paths) != 0)
		rv = -1;
	if (o->index != NULL && fclose(o->index) != 0)
		rv = -1;
	return rv;
}

int
fill_signed(struct cache *c, const struct fill_plan *p)
{
	struct signer		 s;
	struct outputs		 o;
	struct made		*made = NULL;
	struct cache_put_item	*items = NULL;
	int			*results = NULL;
	size_t			 n = 0;
	unsigned long		 i;
	int			 rv = -1;

	memset(&o, 0, sizeof(o));
	/* The clock the entries' times start from, for the storm's outage. */
	printf("now %lld\n", (long long)p->now);
	fflush(stdout);
	if (signer_load(&s, p->pkidir) == -1 || outputs_open(&o, p->outdir) == -1)
		goto out;
	made = calloc(SIGNED_BATCH, sizeof(*made));
	items = calloc(SIGNED_BATCH, sizeof(*items));
	results = calloc(SIGNED_BATCH, sizeof(*results));
	if (made == NULL || items == NULL || results == NULL)
		goto out;
	for (i = 0; i < p->count; i++) {
		if (make_entry(&s, p, i, &made[n]) == -1 ||
		    (i % SIGNED_VERIFY_EVERY == 0 &&
		    judge_entry(&s, p, i, &made[n]) == -1) ||
		    write_outputs(&o, p, i, &made[n]) == -1) {
			n++;
			goto out;
		}
		if (++n == SIGNED_BATCH) {
			if (flush_batch(c, made, items, results, n) == -1)
				goto out;
			n = 0;
		}
	}
	rv = flush_batch(c, made, items, results, n);
	n = 0;
out:
	while (n > 0)
		made_free(&made[--n]);
	if (outputs_close(&o) == -1)
		rv = -1;
	signer_free(&s);
	free(made);
	free(items);
	free(results);
	return rv;
}
