/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl show: one entry, decoded (CertIDs, status, times, responder and its chain, where it came from). */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/ocsp.h>
#include <openssl/x509.h>

#include "attest/ocsp_req.h"
#include "attest/util.h"
#include "cache/store.h"
#include "entry/entry.h"
#include "entry/kind.h"
#include "entry/ocsp.h"
#include "tools/bundle.h"
#include "tools/staplectl.h"

#define SHOW_MIN_PREFIX_CHARS	8

static void
show_usage(FILE *f)
{
	fprintf(f, "usage: staplectl [-C dir] [-f config] [--json] show KEY\n"
	    "KEY as 'list' prints it, or a unique prefix of at least %d hex "
	    "digits.\n", SHOW_MIN_PREFIX_CHARS);
}

static int64_t
asn1_unix(const ASN1_TIME *t)
{
	time_t	tt;

	return util_asn1_time(t, &tt) == 0 ? (int64_t)tt : 0;
}

static void
put_hex(json_t *o, const char *name, const uint8_t *p, size_t n)
{
	char	*h;

	if ((h = malloc(2 * n + 1)) == NULL)
		return;
	util_hex(p, n, h);
	json_object_set_new(o, name, json_string(h));
	free(h);
}

static void
put_asn1_hex(json_t *o, const char *name, const ASN1_STRING *s)
{
	if (s != NULL)
		put_hex(o, name, ASN1_STRING_get0_data(s),
		    (size_t)ASN1_STRING_length(s));
}

static json_t *
cert_json(X509 *x, const char *origin)
{
	char	 subj[256], iss[256];
	json_t	*o;
	BIO	*bio;
	int	 n;

	ctl_x509_subject(x, subj, sizeof(subj));
	iss[0] = '\0';
	if ((bio = BIO_new(BIO_s_mem())) != NULL) {
		if (X509_NAME_print_ex(bio, X509_get_issuer_name(x), 0,
		    XN_FLAG_RFC2253) >= 0 &&
		    (n = BIO_read(bio, iss, sizeof(iss) - 1)) > 0)
			iss[n] = '\0';
		BIO_free(bio);
	}
	o = json_pack("{s:s, s:s, s:s}", "subject", subj, "issuer", iss,
	    "from", origin);
	ctl_put_time(o, "not_after", asn1_unix(X509_get0_notAfter(x)));
	return o;
}

static int
in_stack(STACK_OF(X509) *sk, X509 *x)
{
	int	i;

	for (i = 0; sk != NULL && i < sk_X509_num(sk); i++)
		if (X509_cmp(sk_X509_value(sk, i), x) == 0)
			return 1;
	return 0;
}

/* The responder and the chain the trust store builds for it. */
static json_t *
signer_chain(struct ctl_trust *t, OCSP_BASICRESP *bs)
{
	const STACK_OF(X509)	*rc = OCSP_resp_get0_certs(bs);
	STACK_OF(X509)		*chain;
	X509			*x;
	json_t			*arr = json_array();
	const char		*from;
	int			 i;

	chain = ctl_ocsp_signer_chain(t, bs);
	for (i = 0; chain != NULL && i < sk_X509_num(chain); i++) {
		x = sk_X509_value(chain, i);
		from = in_stack(t->anchors, x) ? "anchor" :
		    in_stack((STACK_OF(X509) *)rc, x) ? "response" :
		    in_stack(t->pool, x) ? "pool" : "?";
		json_array_append_new(arr, cert_json(x, from));
	}
	sk_X509_pop_free(chain, X509_free);
	return arr;
}

static json_t *
decode_ocsp(struct ctl_trust *t, const uint8_t *der, size_t len)
{
	const unsigned char	*p = der;
	OCSP_RESPONSE		*resp = NULL;
	OCSP_BASICRESP		*bs = NULL;
	OCSP_SINGLERESP		*sr;
	OCSP_CERTID		*cid;
	ASN1_OBJECT		*alg;
	ASN1_OCTET_STRING	*nh, *kh;
	ASN1_INTEGER		*serial;
	ASN1_GENERALIZEDTIME	*rev, *tu, *nu;
	const ASN1_OCTET_STRING	*rid_key;
	const X509_NAME		*rid_name;
	json_t			*o, *arr, *s;
	char			 name[256];
	int			 i, st, reason;

	o = json_object();
	if ((resp = d2i_OCSP_RESPONSE(NULL, &p, (long)len)) == NULL) {
		json_object_set_new(o, "error", json_string("not a DER "
		    "OCSPResponse"));
		goto out;
	}
	st = OCSP_response_status(resp);
	json_object_set_new(o, "response_status",
	    json_string(OCSP_response_status_str(st)));
	if ((bs = OCSP_response_get1_basic(resp)) == NULL)
		goto out;
	ctl_put_time(o, "produced_at", asn1_unix(OCSP_resp_get0_produced_at(bs)));
	if (OCSP_resp_get0_id(bs, &rid_key, &rid_name) == 1) {
		if (rid_name != NULL) {
			X509_NAME_oneline(rid_name, name, sizeof(name));
			json_object_set_new(o, "responder_name",
			    json_string(name));
		} else
			put_asn1_hex(o, "responder_key_hash", rid_key);
	}
	arr = json_array();
	for (i = 0; i < OCSP_resp_count(bs); i++) {
		sr = OCSP_resp_get0(bs, i);
		cid = (OCSP_CERTID *)OCSP_SINGLERESP_get0_id(sr);
		s = json_object();
		if (OCSP_id_get0_info(&nh, &alg, &kh, &serial, cid) == 1) {
			json_object_set_new(s, "hash_algorithm",
			    json_string(OBJ_nid2sn(OBJ_obj2nid(alg))));
			put_asn1_hex(s, "issuer_name_hash", nh);
			put_asn1_hex(s, "issuer_key_hash", kh);
			put_asn1_hex(s, "serial", serial);
		}
		st = OCSP_single_get0_status(sr, &reason, &rev, &tu, &nu);
		json_object_set_new(s, "cert_status",
		    json_string(OCSP_cert_status_str(st)));
		if (st == V_OCSP_CERTSTATUS_REVOKED) {
			ctl_put_time(s, "revoked_at", asn1_unix(rev));
			if (reason >= 0)
				json_object_set_new(s, "reason",
				    json_string(OCSP_crl_reason_str(reason)));
		}
		ctl_put_time(s, "this_update", asn1_unix(tu));
		ctl_put_time(s, "next_update", asn1_unix(nu));
		json_array_append_new(arr, s);
	}
	json_object_set_new(o, "responses", arr);
	json_object_set_new(o, "signer_chain", signer_chain(t, bs));
 out:
	ERR_clear_error();
	OCSP_BASICRESP_free(bs);
	OCSP_RESPONSE_free(resp);
	return o;
}

static void
print_text(json_t *o, int depth)
{
	const char	*k;
	json_t		*v, *e;
	size_t		 i;

	json_object_foreach(o, k, v) {
		if (json_is_object(v)) {
			printf("%*s%s:\n", depth * 2, "", k);
			print_text(v, depth + 1);
		} else if (json_is_array(v)) {
			json_array_foreach(v, i, e) {
				printf("%*s%s[%zu]:%s", depth * 2, "", k, i,
				    json_is_object(e) ? "\n" : " ");
				if (json_is_object(e))
					print_text(e, depth + 1);
				else
					printf("%s\n", json_string_value(e));
			}
		} else if (json_is_string(v))
			printf("%*s%-18s %s\n", depth * 2, "", k,
			    json_string_value(v));
		else if (json_is_integer(v))
			printf("%*s%-18s %lld\n", depth * 2, "", k,
			    (long long)json_integer_value(v));
		else if (json_is_boolean(v))
			printf("%*s%-18s %s\n", depth * 2, "", k,
			    json_is_true(v) ? "yes" : "no");
	}
}

/* Full key in any kind, or a unique prefix of one. */
static int
find_entry(struct ctl *ctl, const char *arg, struct ctl_ent *out)
{
	struct ctl_ent	*e = NULL;
	char		 hex[2 * CACHE_KEY_MAX_BYTES + 1];
	size_t		 n, i, alen = strlen(arg), hits = 0;
	int		 rv;

	if (alen < SHOW_MIN_PREFIX_CHARS) {
		ctl_warnx("%s: give at least %d hex digits of the key", arg,
		    SHOW_MIN_PREFIX_CHARS);
		return CTL_USAGE;
	}
	if ((rv = ctl_collect(ctl, 0, &e, &n)) != CTL_OK)
		return rv;
	for (i = 0; i < n; i++) {
		util_hex(e[i].key, e[i].klen, hex);
		if (strncasecmp(hex, arg, alen) != 0)
			continue;
		if (strlen(hex) == alen) {	/* exact: wins */
			*out = e[i];
			hits = 1;
			break;
		}
		if (hits++ == 0)
			*out = e[i];
	}
	free(e);
	if (hits == 0) {
		ctl_warnx("%s: no such entry", arg);
		return CTL_REJECTED;
	}
	if (hits > 1) {
		ctl_warnx("%s: ambiguous (%zu entries)", arg, hits);
		return CTL_USAGE;
	}
	return CTL_OK;
}

/* "ok", or why the daemon would not store this OCSP entry now (borrows ad). */
static const char *
ocsp_verifies_now(struct ctl *ctl, struct ctl_trust *t, const struct ctl_ent *ent,
    const uint8_t *req, size_t reqlen, const uint8_t *resp, size_t resplen,
    struct entry_ocsp_admission *ad)
{
	struct entry_ocsp_question	 q = { ent->key, ent->klen, req, reqlen,
					    0, ctl->conf.svc[ent->kind].skew_s };
	struct entry_answer		 a = { resp, resplen, NULL, NULL,
					    NULL, 0 };

	if (entry_ocsp_admit(t->ocsp, &q, &a, NULL, ctl->now, ad) ==
	    ENTRY_STORE)
		return "ok";
	return ad->reason;
}

/* The entry's metadata: status, times, where it came from, its refresh plan. */
static void
show_meta(json_t *o, enum cache_kind kind, const struct cache_meta *m,
    long skew_s, time_t now)
{
	const char	*st;

	if ((st = bundle_status_name(kind, m->status)) != NULL)
		json_object_set_new(o, "status", json_string(st));
	else
		json_object_set_new(o, "status", json_integer(m->status));
	ctl_put_time(o, "this_update", m->this_update);
	ctl_put_time(o, "next_update", m->next_update);
	json_object_set_new(o, "valid", json_boolean(entry_servable(m, kind,
	    skew_s, now)));
	json_object_set_new(o, "seconds_left",
	    json_integer(m->next_update - now));
	ctl_put_time(o, "produced_at", m->produced_at);
	json_object_set_new(o, "source", json_string(m->source));
	ctl_put_time(o, "fetched_at", m->fetched_at);
	json_object_set_new(o, "served_count", json_integer((json_int_t)
	    m->served_count));
	ctl_put_time(o, "last_served_at", m->last_served_at);
	if (m->next_refresh_at != 0)
		ctl_put_time(o, "next_refresh_at", m->next_refresh_at);
	else
		json_object_set_new(o, "next_refresh_at", json_string(
		    m->flags & CACHE_F_NO_REFRESH ? "never" : "unplanned"));
	json_object_set_new(o, "refresh_failures",
	    json_integer(m->refresh_failures));
}

/* The stored bytes: sizes, the response's digest, the kept headers. */
static void
show_bodies(json_t *o, const struct cache_body *b)
{
	uint8_t	md[32];

	EVP_Digest(b->response, b->response_len, md, NULL, EVP_sha256(), NULL);
	json_object_set_new(o, "response_bytes", json_integer((json_int_t)
	    b->response_len));
	put_hex(o, "response_sha256", md, sizeof(md));
	json_object_set_new(o, "request_bytes", json_integer((json_int_t)
	    b->request_len));
	if (b->headers_len > 0)
		json_object_set_new(o, "headers", json_stringn((const char *)
		    b->headers, b->headers_len));
}

/* An OCSP entry: the decoded answer and whether it verifies now. */
static void
show_ocsp(struct ctl *ctl, struct ctl_trust *t, const struct ctl_ent *ent,
    json_t *o, const struct cache_body *b)
{
	struct entry_ocsp_admission	 ad;

	json_object_set_new(o, "ocsp", decode_ocsp(t, b->response,
	    b->response_len));
	/* Would the daemon store it now? entry/ocsp.c's rule, as import. */
	if (b->request_len > 0)
		json_object_set_new(o, "verifies_now", json_string(
		    ocsp_verifies_now(ctl, t, ent, b->request, b->request_len,
		    b->response, b->response_len, &ad)));
}

/*
 * What the entry's kind says of it (struct kind's describe), judged as
 * the cache's own, with its request and whether it verifies now (a new
 * JSON object).
 */
static json_t *
show_described(struct ctl *ctl, const struct ctl_ent *ent)
{
	struct bundle_entry	 e;
	struct cache_body	 b;
	struct entry_judgement	 j;
	json_t			*o = json_object();
	int			 ok;

	memset(&e, 0, sizeof(e));
	memset(&j, 0, sizeof(j));
	if (cache_get(ctl->cache, ent->kind, ent->key, ent->klen, NULL, &b) != 1)
		return o;
	e.kind = ent->kind;
	memcpy(e.key, ent->key, ent->klen);
	e.klen = ent->klen;
	/* Copies: the checks below read the cache again. */
	if ((e.request = malloc(b.request_len + 1)) == NULL ||
	    (e.response = malloc(b.response_len + 1)) == NULL ||
	    (e.headers = malloc(b.headers_len + 1)) == NULL)
		goto out;
	memcpy(e.request, b.request, b.request_len);
	e.request_len = b.request_len;
	memcpy(e.response, b.response, b.response_len);
	e.response_len = b.response_len;
	if (b.headers_len > 0)
		memcpy(e.headers, b.headers, b.headers_len);
	e.headers_len = b.headers_len;
	if (e.request_len > 0)
		json_object_set_new(o, "request", json_stringn((const char *)
		    e.request, e.request_len));
	/* The entry is the cache's own: no stored entry to weigh it against. */
	ok = ctl_judge(ctl, NULL, &e, ctl->now, 0, &j);
	kind_table[ent->kind]->describe(&j, ok, o);
	json_object_set_new(o, "verifies_now", json_string(ok ? "ok" : j.reason));
 out:
	entry_judgement_free(&j);
	free(e.request);
	free(e.response);
	free(e.headers);
	return o;
}

/* The whole description of one entry (a new JSON object). */
static json_t *
show_entry(struct ctl *ctl, struct ctl_trust *t, const struct ctl_ent *ent,
    const struct cache_meta *m, const struct cache_body *b)
{
	char	hex[2 * CACHE_KEY_MAX_BYTES + 1], subj[160], hash[32];
	json_t	*o;

	util_hex(ent->key, ent->klen, hex);
	ctl_entry_subject(ent, b, subj, sizeof(subj));
	o = json_pack("{s:s, s:s, s:s}", "key", hex, "kind",
	    cache_kind_str[ent->kind], "subject", subj);
	if (kind_table[ent->kind]->label_field != NULL) {
		ctl_entry_hash(ent, b, hash, sizeof(hash));
		json_object_set_new(o, kind_table[ent->kind]->label_field,
		    json_string(hash));
	}
	show_meta(o, ent->kind, m, ctl_skew_s(ctl, ent->kind), ctl->now);
	show_bodies(o, b);
	if (ent->kind == CACHE_KIND_OCSP)
		show_ocsp(ctl, t, ent, o, b);
	if (kind_table[ent->kind]->describe != NULL)
		json_object_set_new(o, cache_kind_str[ent->kind],
		    show_described(ctl, ent));
	return o;
}

int
cmd_show(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_trust	 t;
	struct ctl_ent		 ent;
	struct cache_meta	 m;
	struct cache_body	 b;
	uint8_t			*resp = NULL, *reqd = NULL;
	json_t			*o = NULL;
	int			 rv;

	memset(&t, 0, sizeof(t));
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0)) {
		show_usage(stdout);
		return CTL_OK;
	}
	if (argc != 2) {
		show_usage(stderr);
		return CTL_USAGE;
	}
	if ((rv = ctl_open_cache(ctl, 1)) != CTL_OK ||
	    (rv = find_entry(ctl, argv[1], &ent)) != CTL_OK)
		return rv;
	if (cache_get(ctl->cache, ent.kind, ent.key, ent.klen, &m, &b) != 1) {
		ctl_warnx("%s: %s", argv[1], cache_strerror(ctl->cache));
		return CTL_REJECTED;
	}
	/* Copy the bodies out: the trust load below reuses the handle. */
	if ((resp = malloc(b.response_len + 1)) == NULL ||
	    (reqd = malloc(b.request_len + 1)) == NULL) {
		rv = CTL_REJECTED;
		goto out;
	}
	memcpy(resp, b.response, b.response_len);
	if (b.request_len > 0)
		memcpy(reqd, b.request, b.request_len);
	b.response = resp;
	b.request = reqd;
	if ((rv = ctl_trust_load(ctl, &t, 1)) != CTL_OK)
		goto out;
	o = show_entry(ctl, &t, &ent, &m, &b);
	if (ctl->json) {
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
	} else
		print_text(o, 0);
	rv = CTL_OK;
 out:
	json_decref(o);
	ctl_trust_free(&t);
	free(resp);
	free(reqd);
	return rv;
}
