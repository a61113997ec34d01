/* SPDX-License-Identifier: Apache-2.0 */
/* The RIM kind's entry rules: the answer bound to the id asked, retention from the fetch, the chain CAs the OCSP pool learns. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/ocsp_verify.h"
#include "attest/rim.h"
#include "entry/conf.h"
#include "entry/entry.h"
#include "entry/file.h"
#include "entry/judge.h"
#include "entry/kind.h"
#include "entry/rim.h"

_Static_assert(RIM_MAX_CERTS <= KIND_TEACH_MAX,
    "a RIM's chain teaches more than KIND_TEACH_MAX certificates");

/* RIMs are served with the vendors' skew, as Intel's and AMD's objects are. */
#define RIM_MIN_SKEW_S		300
/*
 * What a RIM takes of the map: a document of 28 KB in whole 4 KiB
 * overflow pages. A few per driver and VBIOS: 5 % of the map.
 */
#define RIM_ENTRY_BYTES		(32 * 1024)
#define RIM_MAP_SHARE_PCT	5
/* NVIDIA's RIM service, asked when the section names no upstreams. */
#define RIM_UPSTREAM		"https://rim.attestation.nvidia.com"

static enum entry_verdict	 refused(struct entry_rim_admission *,
				    const char *, ...)
				    __attribute__((format(printf, 2, 3)));

static enum entry_verdict
refused(struct entry_rim_admission *out, const char *fmt, ...)
{
	va_list	ap;

	out->verdict = ENTRY_REFUSE;
	va_start(ap, fmt);
	vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
	va_end(ap);
	return ENTRY_REFUSE;
}

/*
 * The pool's one rule (ocsp_trust_chaining_cas) says which of the chain's
 * CAs (all but the leaf) may join the OCSP pool: those that reach an OCSP
 * anchor.
 */
static void
pool_candidates(struct ocsp_trust *ot, struct entry_rim_admission *out)
{
	const struct rim_certs	*chain = &out->result.chain;
	int			 ok[RIM_MAX_CERTS];
	size_t			 i;

	if (ot == NULL || chain->n < 2 || ocsp_trust_chaining_cas(ot,
	    (const uint8_t *const *)chain->der + 1, chain->len + 1,
	    chain->n - 1, ok) <= 0)
		return;
	for (i = 1; i < chain->n; i++)
		if ((out->learn[i] = ok[i - 1]) != 0)
			out->nlearn++;
}

int
entry_rim_path(const char *id, size_t len, char path[ENTRY_RIM_PATH_BYTES])
{
	if (id == NULL || !rim_id_validn(id, len))
		return -1;
	memcpy(path, ENTRY_RIM_PATH_PREFIX, sizeof(ENTRY_RIM_PATH_PREFIX) - 1);
	memcpy(path + sizeof(ENTRY_RIM_PATH_PREFIX) - 1, id, len);
	path[sizeof(ENTRY_RIM_PATH_PREFIX) - 1 + len] = '\0';
	return 0;
}

enum entry_verdict
entry_rim_admit(struct rim_trust *rt, struct ocsp_trust *ot,
    const struct entry_rim_question *q, const struct entry_answer *a,
    const struct entry_stored *stored, time_t now,
    struct entry_rim_admission *out)
{
	long	keep = q->retention_s > 0 ? q->retention_s : RIM_RETENTION_S;

	memset(out, 0, sizeof(*out));
	if (q->klen > RIM_ID_MAX_CHARS)
		return refused(out, "key: longer than a RIM ID");
	memcpy(out->id, q->key, q->klen);
	out->id[q->klen] = '\0';
	if (!rim_id_valid(out->id))
		return refused(out, "key: not a valid RIM ID");
	if (rim_verify(rt, out->id, a->body, a->body_len, now,
	    &out->result) == -1)
		return refused(out, "%s: %s", rim_verdict_str[out->result.verdict],
		    out->result.detail);
	pool_candidates(ot, out);
	out->verdict = ENTRY_STORE;
	out->meta.kind = CACHE_KIND_RIM;
	out->meta.this_update = q->fetched_at > 0 && q->fetched_at <= now ?
	    q->fetched_at : now;
	out->meta.next_update = now + keep;
	out->meta.produced_at = out->meta.this_update;
	/* cache_put's rule: never replace an entry with a newer thisUpdate. */
	out->keep_stored = stored != NULL &&
	    stored->meta.this_update > out->meta.this_update;
	return ENTRY_STORE;
}

void
entry_rim_admission_free(struct entry_rim_admission *out)
{
	if (out == NULL)
		return;
	rim_result_free(&out->result);
}

/* The RIM kind's request_key: the id of ENTRY_RIM_PATH_PREFIX + id, a valid RIM id. */
static int
rim_request_key(const uint8_t *req, size_t len,
    uint8_t key[CACHE_KEY_MAX_BYTES], size_t *klen)
{
	size_t	plen = sizeof(ENTRY_RIM_PATH_PREFIX) - 1;

	if (len <= plen || memcmp(req, ENTRY_RIM_PATH_PREFIX, plen) != 0 ||
	    !rim_id_validn((const char *)req + plen, len - plen) ||
	    len - plen > CACHE_KEY_MAX_BYTES)
		return -1;
	memcpy(key, req + plen, len - plen);
	*klen = len - plen;
	return 0;
}

/*
 * The RIM kind's admit: entry_rim_admit, valid for the section's
 * retention from its fetch. The chain's CAs the OCSP pool's rule admits
 * are marked in out->rim.learn; the caller learns them.
 */
static enum entry_verdict
rim_kind_admit(const struct entry_rules *r, const struct entry_query *q,
    const struct entry_answer *a, const struct entry_stored *stored,
    time_t now, struct entry_judgement *out)
{
	struct entry_rim_question	 rq = { q->key, q->klen,
	    config_retention_s(entry_rules_section(r, CACHE_KIND_RIM),
	    CACHE_KIND_RIM), q->fetched_at };

	if (r->trust[CACHE_KIND_RIM] == NULL)
		return entry_judged(out, ENTRY_REFUSE, "rim: no trust store");
	out->verdict = entry_rim_admit(r->trust[CACHE_KIND_RIM],
	    r->trust[CACHE_KIND_OCSP], &rq, a, stored, now, &out->rim);
	if (out->verdict != ENTRY_STORE)
		return entry_judged(out, out->verdict, "%s", out->rim.reason);
	out->meta = out->rim.meta;
	out->keep_stored = out->rim.keep_stored;
	return out->verdict;
}

/* The RIM kind's teaches: the chain's CAs marked in j->rim.learn. */
static size_t
rim_kind_teaches(const struct entry_judgement *j, const uint8_t **der,
    size_t *len)
{
	const struct rim_certs	*ch = &j->rim.result.chain;
	size_t			 i, n = 0;

	for (i = 0; i < ch->n && i < RIM_MAX_CERTS; i++)
		if (j->rim.learn[i]) {
			der[n] = ch->der[i];
			len[n++] = ch->len[i];
		}
	return n;
}

/* ---- trust: the CoRIM signing root, or the section's anchors ------------ */

#define RIM_ANCHOR_MAX_BYTES	(1 << 20)	/* a PEM of anchors */

static int
rim_kind_trust_new(const struct config_service *c, void **trust, char *err,
    size_t errlen)
{
	struct rim_trust	*t;
	uint8_t			*pem;
	size_t			 i, len;
	char			 ferr[512];
	int			 rc = KIND_TRUST_EFAIL;

	if ((t = rim_trust_new()) == NULL) {
		snprintf(err, errlen, "rim: cannot create the trust store");
		return rc;
	}
	/* Like OCSP: configured anchors replace the pinned CoRIM signing root. */
	if (c->nanchors == 0 && rim_trust_add_builtin(t) == -1) {
		snprintf(err, errlen, "rim: the built-in CoRIM signing root does not load");
		goto fail;
	}
	for (i = 0; i < c->nanchors; i++) {
		if ((pem = file_read(c->anchors[i], RIM_ANCHOR_MAX_BYTES, &len,
		    ferr, sizeof(ferr))) == NULL) {
			snprintf(err, errlen, "rim.anchors: %s", ferr);
			rc = KIND_TRUST_ENOFILE;
			goto fail;
		}
		if (rim_trust_add_anchors_pem(t, (const char *)pem, len) <= 0) {
			snprintf(err, errlen, "rim.anchors: %s: not a PEM file of "
			    "certificates", c->anchors[i]);
			free(pem);
			rc = KIND_TRUST_EBAD;
			goto fail;
		}
		free(pem);
	}
	*trust = t;
	return 0;
fail:
	rim_trust_free(t);
	return rc;
}

static void
rim_kind_trust_free(void *t)
{
	rim_trust_free(t);
}

/* A RIM's key is its ID: text, when it is a valid one. */
static int
rim_kind_key_is_text(const uint8_t *key, size_t klen)
{
	return rim_id_validn((const char *)key, klen);
}

_Static_assert(ENTRY_RIM_PATH_BYTES <= KIND_CANON_BYTES,
    "a RIM path fits a call's canonical path");

/* The call that GETs canon, a RIM path of len bytes. */
static void
rim_call(const char *canon, size_t len, struct kind_call *out)
{
	out->method = "GET";
	out->path = canon;
	out->content_type = NULL;
	out->accept = kind_rim.accept;
	out->body = NULL;
	out->body_len = 0;
	out->keep = (const uint8_t *)canon;
	out->keep_len = len;
	out->typed = 0;
}

/*
 * The RIM kind's parse: GET ENTRY_RIM_PATH_PREFIX + id, keyed by the id,
 * asked as entry_rim_path's path; 400 (why "") for anything that is not
 * a valid RIM id. It has no typed request.
 */
static int
rim_parse(const struct kind_ask *in, void *typed, char *canon,
    struct kind_call *out, int *status, char *why, size_t whylen)
{
	size_t		 plen = sizeof(ENTRY_RIM_PATH_PREFIX) - 1, n;
	const char	*id;

	(void)typed;
	(void)whylen;
	*status = 400;
	why[0] = '\0';
	if (strncmp(in->path, ENTRY_RIM_PATH_PREFIX, plen) != 0)
		return -1;
	id = in->path + plen;
	if (entry_rim_path(id, (n = strlen(id)), canon) == -1)
		return -1;
	memcpy(out->key, id, n);
	out->klen = n;
	rim_call(canon, plen + n, out);
	return 0;
}

/* The RIM kind's restore: the stored path, GET again, keyed by its id. */
static int
rim_restore(const uint8_t *req, size_t len, void *typed, char *canon,
    struct kind_call *out)
{
	(void)typed;
	if (len >= ENTRY_RIM_PATH_BYTES ||
	    rim_request_key(req, len, out->key, &out->klen) == -1)
		return -1;
	memcpy(canon, req, len);
	canon[len] = '\0';
	rim_call(canon, len, out);
	return 0;
}

const struct kind kind_rim = {
	.parse = rim_parse,
	.restore = rim_restore,
	.admit = rim_kind_admit,
	.trust_new = rim_kind_trust_new,
	.trust_free = rim_kind_trust_free,
	.teaches = rim_kind_teaches,
	.dated_by_fetch = 1,
	.key_is_text = rim_kind_key_is_text,
	.request_key = rim_request_key,
	.min_skew_s = RIM_MIN_SKEW_S,
	.accept = "application/json",
	.entry_bytes = RIM_ENTRY_BYTES,
	.map_share_pct = RIM_MAP_SHARE_PCT,
	.conf = {
		.upstream = RIM_UPSTREAM,
		.keys = KIND_CONF_ANCHORS | KIND_CONF_RETENTION,
		.retention_s = RIM_RETENTION_S,
	},
};
