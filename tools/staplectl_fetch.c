/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl fetch and prefetch: each entry a manifest or the evidence names, asked of the upstreams once per run, into a bundle or the cache. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/rand.h>

#include "attest/evidence.h"
#include "attest/ocsp_req.h"
#include "attest/rim.h"
#include "attest/util.h"
#include "cache/store.h"
#include "entry/rim.h"
#include "tools/bundle.h"
#include "tools/progress.h"
#include "tools/staplectl.h"
#include "tools/staplectl_haul.h"
#include "tools/staplectl_manifest.h"

#define FETCH_NONCE_BYTES	16

/*
 * A transient failure (no connection, a timeout, HTTP 5xx, 408, 429) is
 * asked again FETCH_RETRIES times, after FETCH_BACKOFF_MS, then twice
 * that; an upstream whose retries ran out for FETCH_DOWN_AFTER entries in
 * a row is down for the rest of the run and not asked again.
 */
#define FETCH_RETRIES		2
#define FETCH_BACKOFF_MS	500
#define FETCH_DOWN_AFTER	3

/* Flags win over the configuration's upstreams (the file's, else the vendor's own endpoint). */
static int
ups_default(char **ups, size_t *n, const struct config *conf,
    enum cache_kind svc)
{
	const struct config_service	*s = config_service(conf, svc);
	size_t				 i;

	if (*n > 0)
		return CTL_OK;
	if (s->nupstreams > CTL_MAX_LIST) {
		ctl_warnx("%s.upstreams: more than %d", kind_section[svc],
		    CTL_MAX_LIST);
		return CTL_USAGE;
	}
	for (i = 0; i < s->nupstreams; i++)
		ups[i] = s->upstreams[i].url;
	*n = s->nupstreams;
	return CTL_OK;
}

static void
sleep_ms(long ms)
{
	struct timespec	ts = { ms / 1000, ms % 1000 * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/*
 * One upstream, asked again while its failure is transient, at most
 * FETCH_RETRIES times. 0: an answer in *b; 1: a definitive failure;
 * -1: transient failures outlasted the retries. err says why.
 */
static int
fetch_try(const char *url, const struct config_upstream_tls *tls,
    const uint8_t *post, size_t postlen, const char *accept,
    struct ctl_http *b, char *err, size_t errlen)
{
	long	delay = FETCH_BACKOFF_MS;
	int	attempt;

	for (attempt = 0;; attempt++) {
		if (ctl_http_do(url, tls, post, postlen, accept, b, err,
		    errlen) == 0)
			return 0;
		if (!b->transient)
			return 1;
		if (attempt == FETCH_RETRIES)
			return -1;
		ctl_warnx("fetch: %s; asking again in %ld ms", err, delay);
		sleep_ms(delay);
		delay *= 2;
	}
}

/*
 * The URL to ask upstream `up` for an entry of kind with this canonical
 * request: up itself when the kind POSTs it, else up and the request's
 * path, one '/' between.
 */
static void
fetch_url(char *url, size_t len, const char *up, enum cache_kind kind,
    const uint8_t *req, size_t reqlen)
{
	size_t	n = strlen(up);

	if (kind_table[kind]->post_type != NULL) {
		snprintf(url, len, "%s", up);
		return;
	}
	if (n > 0 && up[n - 1] == '/' && reqlen > 0 && req[0] == '/')
		n--;
	snprintf(url, len, "%.*s%.*s", (int)n, up, (int)reqlen,
	    (const char *)req);
}

/*
 * An upstream's failure (r of fetch_try) into the entry's outcome and
 * cause, unless an earlier upstream's says more: a refusal over a
 * definitive no over a transient failure. The cause leaves out the URL,
 * so that the summary groups one cause from many entries.
 */
static void
fetch_failed(enum haul_outcome *o, char cause[FETCH_CAUSE_BYTES],
    const char *url, const char *err, int r)
{
	size_t	ul = strlen(url);

	if (*o == HAUL_REFUSED || (*o == HAUL_NOT_FOUND && r == -1))
		return;
	*o = r == -1 ? HAUL_UNREACHABLE : HAUL_NOT_FOUND;
	if (strncmp(err, url, ul) == 0 && err[ul] == ':' && err[ul + 1] == ' ')
		err += ul + 2;
	snprintf(cause, FETCH_CAUSE_BYTES, "%.*s", FETCH_CAUSE_BYTES - 1, err);
}

/*
 * Ask each upstream in order until one answer verifies; an entry asked
 * already in this run is not asked again. Its outcome is the most telling
 * of the upstreams': refused over not found over unreachable.
 */
static void
fetch_one(struct ctl *ctl, struct ctl_trust *t, struct haul *h,
    enum cache_kind kind, const uint8_t *key, size_t klen,
    const uint8_t *req, size_t reqlen, char *const *ups, size_t nups)
{
	struct bundle_entry	*e;
	struct ctl_check	*c;
	struct ctl_http		 b;
	struct upstate		*us;
	enum haul_outcome	 o = HAUL_NOT_ASKED;
	char			 url[2048], err[2600], cause[FETCH_CAUSE_BYTES];
	char			 hex[CTL_KEY_NAME_BYTES];
	size_t			 i;
	int			 r, post = kind_table[kind]->post_type != NULL;

	progress_step(&h->prog, 1);
	if (haul_asked(h, kind, key, klen))
		return;
	snprintf(cause, sizeof(cause), "every upstream is down in this run");
	if ((e = haul_add(h)) == NULL || (e->request = malloc(reqlen + 1)) ==
	    NULL) {
		if (e != NULL)
			h->n--;
		haul_note(h, kind, key, klen, HAUL_ERROR, "out of memory");
		return;
	}
	c = &h->chk[h->n - 1];
	e->kind = kind;
	snprintf(e->kind_name, sizeof(e->kind_name), "%s", cache_kind_str[kind]);
	memcpy(e->key, key, klen);
	e->klen = klen;
	e->status = -1;
	memcpy(e->request, req, reqlen);
	e->request_len = reqlen;
	for (i = 0; i < nups; i++) {
		if ((us = haul_up(h, ups[i])) != NULL &&
		    us->streak >= FETCH_DOWN_AFTER)
			continue;
		fetch_url(url, sizeof(url), ups[i], kind, req, reqlen);
		r = fetch_try(url, config_upstream_tls(&ctl->conf, kind), post ?
		    req : NULL, post ? reqlen : 0, kind_table[kind]->accept, &b,
		    err, sizeof(err));
		if (us != NULL)
			us->streak = r == -1 ? us->streak + 1 : 0;
		if (r != 0) {
			ctl_warnx("fetch: %s", err);
			if (us != NULL && us->streak == FETCH_DOWN_AFTER)
				ctl_warnx("fetch: %s: down (%d entries in a row "
				    "outlasted %d retries): not asked again in "
				    "this run", ups[i], FETCH_DOWN_AFTER,
				    FETCH_RETRIES);
			fetch_failed(&o, cause, url, err, r);
			continue;
		}
		free(e->response);
		free(b.hdr);
		e->response = b.body;
		e->response_len = b.len;
		if (ctl_check_entry(ctl, t, e, ctl->now, c)) {
			bundle_entry_set_meta(e, &c->meta, ups[i]);
			haul_note(h, kind, key, klen, HAUL_STORED, NULL);
			haul_keep(h, t);
			return;
		}
		ctl_warnx("fetch: %s: rejected: %s", url, c->reason);
		o = HAUL_REFUSED;
		snprintf(cause, sizeof(cause), "%.*s", (int)sizeof(cause) - 1,
		    c->reason);
	}
	/* Not asked: said once, when the last upstream went down. */
	ctl_key_name(kind, key, klen, hex);
	if (o != HAUL_NOT_ASKED)
		ctl_warnx("fetch: %s %s: no upstream gave a valid answer (%s)",
		    cache_kind_str[kind], hex, haul_outcome_str[o]);
	free(e->response);
	free(e->request);
	h->n--;
	haul_note(h, kind, key, klen, o, cause);
}

/* Said one by one up to here, then counted: a manifest may hold a million. */
#define FETCH_SAY_UNKNOWN_ISSUER	10

/* A record as it is, with a fresh nonce. */
static void
fetch_renonced(struct ctl *ctl, struct ctl_trust *t, struct haul *h,
    const struct listed *l, char *const *ups, size_t nups)
{
	struct ocsp_req	 req;
	const char	*why;
	uint8_t		 nonce[FETCH_NONCE_BYTES], key[OCSP_KEY_BYTES], *der;
	size_t		 len;

	if (ocsp_req_parse(l->raw, l->rawlen, &req, &why) == -1 ||
	    RAND_bytes(nonce, sizeof(nonce)) != 1 ||
	    (der = ocsp_req_renonce(l->raw, l->rawlen, nonce, sizeof(nonce),
	    &len)) == NULL) {
		h->failed++;
		return;
	}
	ocsp_req_key(&req, key);
	fetch_one(ctl, t, h, CACHE_KIND_OCSP, key, sizeof(key), der, len, ups,
	    nups);
	free(der);
}

/*
 * Record i's certificate in the other hashes chosen, from its issuer;
 * *unknown counts the records whose issuer is not known here, the first
 * FETCH_SAY_UNKNOWN_ISSUER of them said.
 */
static void
fetch_restated(struct ctl *ctl, struct ctl_trust *t, struct haul *h,
    const struct manifest_in *in, size_t i, unsigned hashes,
    size_t *unknown, char *const *ups, size_t nups)
{
	STACK_OF(X509)		*cands[2] = { t->anchors, t->pool };
	const struct listed	*l = &in->ocsp[i];
	struct evidence_certid	 c;
	struct ocsp_req		 req;
	const struct ocsp_certid *id;
	const char		*why;
	char			 err[512], serial[2 * EVIDENCE_MAX_SERIAL_BYTES + 1];
	char			 notasked[64] = "";
	unsigned		 hh;
	int			 r;

	if (ocsp_req_parse(l->raw, l->rawlen, &req, &why) == -1)
		return;		/* parsed as it was read */
	id = &req.certids[0];
	for (hh = 0; hh < EVIDENCE_HASH_MAX; hh++) {
		if ((int)hh == l->hash || !(hashes & EVIDENCE_HASH_BIT(hh)))
			continue;
		r = evidence_certid_rehash(id, cands, 2, (enum evidence_hash)hh,
		    &c, err, sizeof(err));
		if (r == 0) {
			progress_add_total(&h->prog, 1);
			fetch_one(ctl, t, h, CACHE_KIND_OCSP, c.key,
			    OCSP_KEY_BYTES, c.req, c.req_len, ups, nups);
		} else if (r == -1) {
			ctl_warnx("manifest: ocsp[%zu]: %s", i, err);
			h->failed++;
		} else if (!manifest_listed_as(in, id->serial, id->serial_len,
		    hh))
			snprintf(notasked + strlen(notasked), sizeof(notasked) -
			    strlen(notasked), "%s%s", notasked[0] != '\0' ?
			    ", " : "", evidence_hash_str[hh]);
		free(c.req);
	}
	if (notasked[0] == '\0' || (*unknown)++ >= FETCH_SAY_UNKNOWN_ISSUER)
		return;
	util_hex(id->serial, id->serial_len, serial);
	ctl_warnx("manifest: ocsp[%zu] (serial=%s): its issuer's certificate is "
	    "not known here (anchors, pool), so it is not asked with %s", i,
	    serial, notasked);
}

/*
 * The manifest's own records, in every hash of `hashes`: a record in one
 * of them is asked as it is (as is one of several CertIDs or of another
 * algorithm, a client's request the cache held); in each other one, a
 * record of one CertID is restated from its issuer's certificate when the
 * anchors or the pool hold it, so that a manifest of an older staplectl
 * (SHA-1 only) still gives a bundle for every client.
 */
static void
fetch_listed(struct ctl *ctl, struct ctl_trust *t, struct haul *h,
    const struct manifest_in *in, unsigned hashes, char *const *ups, size_t nups)
{
	const struct listed	*l;
	size_t			 i, unknown = 0;

	if (in == NULL)
		return;
	for (i = 0; i < in->nocsp; i++)
		if (in->ocsp[i].raw == NULL)
			h->failed++;
	for (i = 0; i < in->nocsp; i++) {
		l = &in->ocsp[i];
		if (l->raw != NULL && (l->hash < 0 ||
		    (hashes & EVIDENCE_HASH_BIT(l->hash))))
			fetch_renonced(ctl, t, h, l, ups, nups);
	}
	for (i = 0; i < in->nocsp; i++) {
		l = &in->ocsp[i];
		if (l->raw != NULL && l->hash >= 0 && l->single)
			fetch_restated(ctl, t, h, in, i, hashes, &unknown, ups,
			    nups);
	}
	if (unknown > FETCH_SAY_UNKNOWN_ISSUER)
		ctl_warnx("manifest: %zu more records whose issuer's "
		    "certificate is not known here were not asked in the "
		    "other hashes", unknown - FETCH_SAY_UNKNOWN_ISSUER);
}

/*
 * RIMs first: their KeyInfo chains name more CertIDs to ask about, in
 * each of `hashes`. OCSP requests are sent with a fresh nonce.
 */
static int
fetch_all(struct ctl *ctl, struct ctl_trust *t, struct evidence_manifest *m,
    const struct manifest_in *more, unsigned hashes, const struct ctl_ups *u,
    struct haul *h, const char *cmd)
{
	char *const		*ocsp_ups = u->url[CACHE_KIND_OCSP];
	char *const		*rim_ups = u->url[CACHE_KIND_RIM];
	size_t			 nocsp = u->n[CACHE_KIND_OCSP];
	size_t			 nrim = u->n[CACHE_KIND_RIM];
	struct rim_trust	*rt;
	struct rim_result	 r;
	struct evidence_certid	*ids = NULL;
	const uint8_t		*cder[EVIDENCE_MAX_CHAIN_CERTS];
	char			 err[512], path[ENTRY_RIM_PATH_BYTES];
	size_t			 i, j, nids, first_rim = h->n, end_rim;

	/* The total grows as RIM chains and restated records add CertIDs. */
	progress_start(&h->prog, cmd, "entries", PROGRESS_ITEMS, m->nrim_ids +
	    m->ncertids + (more != NULL ? more->nocsp : 0), ctl->quiet);
	for (i = 0; i < m->nrim_ids; i++) {
		/* A manifest's ids were checked: a failure is not reached. */
		if (entry_rim_path(m->rim_ids[i], strlen(m->rim_ids[i]),
		    path) == -1)
			continue;
		fetch_one(ctl, t, h, CACHE_KIND_RIM, (const uint8_t *)m->rim_ids[i],
		    strlen(m->rim_ids[i]), (const uint8_t *)path, strlen(path),
		    rim_ups, nrim);
	}
	rt = t->trust[CACHE_KIND_RIM];
	/* Only the RIMs: the loop appends their chains' OCSP answers. */
	end_rim = h->n;
	for (i = first_rim; i < end_rim; i++) {
		char	id[RIM_ID_MAX_CHARS + 1];

		memcpy(id, h->e[i].key, h->e[i].klen);
		id[h->e[i].klen] = '\0';
		memset(&r, 0, sizeof(r));
		if (rim_verify(rt, id, h->e[i].response, h->e[i].response_len,
		    ctl->now, &r) == 0 && r.chain.n <= EVIDENCE_MAX_CHAIN_CERTS) {
			for (j = 0; j < r.chain.n; j++)
				cder[j] = r.chain.der[j];
			/* Its CAs before its answers, or those cannot verify. */
			ctl_learn_cas(ctl, t, cder + 1, r.chain.len + 1,
			    r.chain.n - 1, 1);
			if (evidence_chain_certids(EVIDENCE_CHAIN_RIM, hashes,
			    cder, r.chain.len, r.chain.n, &ids, &nids, err,
			    sizeof(err)) == 0) {
				progress_add_total(&h->prog, nids);
				for (j = 0; j < nids; j++)
					fetch_one(ctl, t, h, CACHE_KIND_OCSP,
					    ids[j].key, OCSP_KEY_BYTES, ids[j].req,
					    ids[j].req_len, ocsp_ups, nocsp);
				evidence_certids_free(ids, nids);
			}
		}
		rim_result_free(&r);
	}
	/* The RIMs read: from here on fetch writes each answer as it verifies. */
	haul_flush(h, t);
	for (i = 0; i < m->ncertids; i++)
		fetch_one(ctl, t, h, CACHE_KIND_OCSP, m->certids[i].key,
		    OCSP_KEY_BYTES, m->certids[i].req, m->certids[i].req_len,
		    ocsp_ups, nocsp);
	fetch_listed(ctl, t, h, more, hashes, ocsp_ups, nocsp);
	return CTL_OK;
}

/* Each kind's section, as a sentence lists them: "ocsp, rim, pccs and amd_kds". */
static void
put_sections(FILE *f)
{
	int	k;

	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		fprintf(f, "%s%s", k == KIND_FIRST ? "" : k + 1 ==
		    CACHE_KIND_MAX ? " and " : ", ", kind_section[k]);
}

static void
fetch_usage(FILE *f)
{
	int	k;

	fprintf(f, "usage: staplectl [-f config] fetch --manifest FILE --out "
	    "BUNDLE");
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		fprintf(f, "%s[--%s-upstream URL]...", k % 2 == 1 ? "\n    " :
		    " ", kind_name(k));
	fprintf(f, "\n"
	    "    [--hash sha1,sha256,sha384]\n"
	    "fetches everything a manifest lists (RIMs first, then the OCSP "
	    "answers for\ntheir signing chains and the manifest's CertIDs, "
	    "then its Intel and AMD\ncollateral), verifies it, writes a bundle."
	    "\nCertIDs are asked in each --hash algorithm (all three by "
	    "default). Each entry is\nasked once per run; a transient failure "
	    "(connect, timeout, 5xx) is asked again\ntwice with backoff. Exit "
	    "1 when any entry was not stored."
	    "\nFlags win over the -f file's ");
	put_sections(f);
	fprintf(f, " upstreams; defaults:\n");
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		fprintf(f, "%s%s", kind_table[k]->conf.upstream, k + 1 ==
		    CACHE_KIND_MAX ? ".\n" : k % 2 == 0 ? ",\n" : ", ");
}

/* getopt_long's value for --NAME-upstream: FETCH_OPT_UPSTREAM plus the kind. */
#define FETCH_OPT_UPSTREAM	0x100

/* One --NAME-upstream flag of kind: CTL_OK or CTL_USAGE (said). */
static int
fetch_ups_add(struct ctl_ups *u, enum cache_kind kind, char *url)
{
	if (u->n[kind] >= CTL_MAX_LIST) {
		ctl_warnx("too many upstreams");
		return CTL_USAGE;
	}
	if (strncmp(url, "http://", 7) != 0 &&
	    strncmp(url, "https://", 8) != 0) {
		ctl_warnx("%s: not an http or https URL", url);
		return CTL_USAGE;
	}
	u->url[kind][u->n[kind]++] = url;
	return CTL_OK;
}

/* Each kind without a flag: the configuration's upstreams; CTL_OK or CTL_USAGE (said why). */
static int
fetch_ups_defaults(struct ctl *ctl, struct ctl_ups *u)
{
	int	k;

	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		if (ups_default(u->url[k], &u->n[k], &ctl->conf, k) != CTL_OK)
			return CTL_USAGE;
	return CTL_OK;
}

/* fetch's command line. -1 to go on, else the exit code (usage said). */
static int
fetch_opts(int argc, char **argv, const char **mpath, const char **outpath,
    struct ctl_ups *u, unsigned *hashes)
{
#define UPSTREAM_OPT_(id, byte, name, section, row)			\
		{ name "-upstream", required_argument, NULL,		\
		    FETCH_OPT_UPSTREAM + byte },
	static const struct option	opts[] = {
		{ "manifest", required_argument, NULL, 'm' },
		{ "out", required_argument, NULL, 'o' },
		KIND_LIST(UPSTREAM_OPT_)
		{ "hash", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
#undef UPSTREAM_OPT_
	int	ch;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (ch > FETCH_OPT_UPSTREAM &&
		    ch < FETCH_OPT_UPSTREAM + CACHE_KIND_MAX) {
			if (fetch_ups_add(u, ch - FETCH_OPT_UPSTREAM, optarg) !=
			    CTL_OK)
				return CTL_USAGE;
			continue;
		}
		switch (ch) {
		case 'm':
			*mpath = optarg;
			break;
		case 'o':
			*outpath = optarg;
			break;
		case 'H':
			if (hash_opt(optarg, hashes) != CTL_OK)
				return CTL_USAGE;
			break;
		case 'h':
			fetch_usage(stdout);
			return CTL_OK;
		default:
			fetch_usage(stderr);
			return CTL_USAGE;
		}
	}
	if (optind != argc || *mpath == NULL || *outpath == NULL) {
		fetch_usage(stderr);
		return CTL_USAGE;
	}
	return -1;
}

/* What a fetch or prefetch run gathers, and from where; zeroed before use. */
struct fetch_run {
	struct ctl_trust	 t;
	struct ctl_fetched	 cf;
	struct haul		 h;
	struct ctl_ups		 u;
};

/* Frees what the run gathered and its trust; r itself is the caller's. */
static void
fetch_run_free(struct fetch_run *r)
{
	ctl_fetched_free(&r->cf);
	haul_free(&r->h);
	ctl_trust_free(&r->t);
}

/*
 * The run's fetches between curl's global init and cleanup: m's OCSP and
 * RIM entries (fetch_all; ocsp, the manifest's OCSP part or NULL), then the
 * collateral coll names (cname in messages), all gathered into r->h. CTL_OK
 * or the first failure's code (CTL_USAGE, said, when the configuration's
 * upstream TLS files do not load); the progress line is left to the caller.
 */
static int
fetch_run(struct ctl *ctl, struct fetch_run *r, struct evidence_manifest *m,
    const struct manifest_in *more, unsigned hashes, json_t *coll,
    const char *cname, const char *what)
{
	char	err[1024];
	int	rv;

	/* As stapled -n checks them: before anything is asked. */
	if (config_upstream_tls_check(&ctl->conf, err, sizeof(err)) == -1) {
		ctl_warnx("%s", err);
		return CTL_USAGE;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rv = fetch_all(ctl, &r->t, m, more, hashes, &r->u, &r->h, what);
	if (rv == CTL_OK)
		rv = ctl_fetch_collateral(ctl, &r->t, coll, cname, &r->u,
		    &r->cf);
	if (rv == CTL_OK)
		rv = haul_take(&r->h, &r->cf);
	curl_global_cleanup();
	return rv;
}

int
cmd_fetch(struct ctl *ctl, int argc, char **argv)
{
	struct evidence_manifest *m = NULL;
	struct manifest_in	 in;
	struct fetch_run	 r;
	const char		*mpath = NULL, *outpath = NULL;
	unsigned		 hashes = EVIDENCE_HASHES_DEFAULT;
	size_t			 n;
	int			 rv;

	memset(&r, 0, sizeof(r));
	memset(&in, 0, sizeof(in));
	if ((rv = fetch_opts(argc, argv, &mpath, &outpath, &r.u, &hashes)) != -1)
		return rv;
	if ((rv = fetch_ups_defaults(ctl, &r.u)) != CTL_OK)
		return rv;
	if ((m = evidence_manifest_new()) == NULL)
		return CTL_REJECTED;
	if ((rv = read_manifest(mpath, m, &in)) != CTL_OK)
		goto out;
	/* No cache here by design; use it for its pool only if one is there. */
	if (ctl_open_cache(ctl, 1) != CTL_OK)
		ctl->cache = NULL;
	if ((rv = ctl_trust_load(ctl, &r.t, 1)) != CTL_OK ||
	    (rv = haul_open(ctl, &r.h, outpath)) != CTL_OK)
		goto out;
	manifest_cas(ctl, &r.t, &in, mpath);
	rv = fetch_run(ctl, &r, m, &in, hashes, in.coll, mpath, "fetch");
	if (rv == CTL_OK)
		rv = write_haul(ctl, &r.t, &r.h, outpath);
	progress_end(&r.h.prog);
	haul_summary(&r.h, "fetch");
	n = haul_count(&r.h);
	fprintf(stderr, "staplectl: fetch: %zu entr%s in %s, %zu failed\n", n,
	    n == 1 ? "y" : "ies", outpath, r.h.failed);
	if (rv == CTL_OK && r.h.failed > 0)
		rv = CTL_REJECTED;
 out:
	manifest_in_free(&in);
	fetch_run_free(&r);
	evidence_manifest_free(m);
	return rv;
}

/*
 * prefetch: the haul's entries to store into items and bodies (h->n + 1
 * each); collateral the cache holds as new or newer is counted in *nkept
 * instead. Returns how many to store.
 */
static size_t
prefetch_plan(struct ctl *ctl, struct haul *h, struct cache_put_item *items,
    struct cache_body *bodies, size_t *nkept)
{
	struct cache_meta	*mt, old;
	struct bundle_entry	*e;
	size_t			 i, nput = 0;

	for (i = 0; i < h->n; i++) {
		mt = &h->chk[i].meta;
		e = &h->e[i];
		/* As import: collateral the cache holds as new or newer stays. */
		if ((e->kind == CACHE_KIND_PCCS || e->kind == CACHE_KIND_KDS) &&
		    (h->chk[i].keep_stored || (cache_get_meta(ctl->cache,
		    e->kind, e->key, e->klen, &old) == 1 &&
		    old.this_update >= mt->this_update))) {
			(*nkept)++;
			continue;
		}
		mt->fetched_at = ctl->now;
		mt->last_served_at = ctl->now;
		mt->flags |= CACHE_F_IMPORTED;	/* as import: kept until asked */
		snprintf(mt->source, sizeof(mt->source), "%s", e->source);
		bodies[nput].request = e->request;
		bodies[nput].request_len = e->request_len;
		bodies[nput].response = e->response;
		bodies[nput].response_len = e->response_len;
		bodies[nput].headers = e->headers;
		bodies[nput].headers_len = e->headers_len;
		items[nput].key = e->key;
		items[nput].klen = e->klen;
		items[nput].meta = mt;
		items[nput].body = &bodies[nput];
		nput++;
	}
	return nput;
}

/* prefetch: store the haul in one transaction and say so. The exit code. */
static int
prefetch_store(struct ctl *ctl, struct haul *h)
{
	struct cache_put_item	*items = NULL;
	struct cache_body	*bodies = NULL;
	int			*res = NULL;
	size_t			 i, nput, nkept = 0;
	int			 rv = CTL_REJECTED;

	if ((items = calloc(h->n + 1, sizeof(*items))) == NULL ||
	    (bodies = calloc(h->n + 1, sizeof(*bodies))) == NULL ||
	    (res = calloc(h->n + 1, sizeof(*res))) == NULL)
		goto out;
	nput = prefetch_plan(ctl, h, items, bodies, &nkept);
	if (cache_put_many(ctl->cache, items, nput, res) == -1) {
		ctl_warnx("%s", cache_strerror(ctl->cache));
		goto out;
	}
	for (i = 0; i < nput; i++)
		if (res[i] == CACHE_PUT_KEPT)
			nkept++;
	fprintf(stderr, "staplectl: prefetch: %zu entr%s stored, %zu kept, "
	    "%zu failed\n", h->n - nkept, h->n - nkept == 1 ? "y" : "ies",
	    nkept, h->failed);
	rv = h->failed > 0 ? CTL_REJECTED : CTL_OK;
 out:
	free(items);
	free(bodies);
	free(res);
	return rv;
}

/* prefetch's usage into buf, each kind's section named. */
#define PREFETCH_USAGE_BYTES	1024
static void
prefetch_usage(char *buf, size_t len)
{
	size_t	off;
	int	k;

	off = (size_t)snprintf(buf, len, "usage: staplectl [-C dir] "
	    "[-f config] prefetch (--evidence FILE | --chain CHAINFILE | "
	    "--rim-id ID |\n    --quote QUOTE | --snp-report REPORT "
	    "[--product Milan|Genoa|Turin])...\n"
	    "    [--hash sha1,sha256,sha384]\nfetches "
	    "what the evidence, quotes and SNP reports need from the "
	    "configured\nupstreams (");
	for (k = KIND_FIRST; k < CACHE_KIND_MAX && off < len; k++)
		off += (size_t)snprintf(buf + off, len - off, "%s.upstreams,%s",
		    kind_section[k], k + 1 == CACHE_KIND_MAX ? "\n" : " ");
	if (off < len)
		snprintf(buf + off, len - off, "else the vendors') into the "
		    "cache directly.\n");
}

int
cmd_prefetch(struct ctl *ctl, int argc, char **argv)
{
	char			 usage[PREFETCH_USAGE_BYTES];
	struct evidence_manifest *m = NULL;
	struct tee_inputs	 tee;
	struct fetch_run	 r;
	json_t			*coll = NULL;
	char			*files[CTL_MAX_LIST];
	size_t			 nfiles = 0;
	unsigned		 hashes = EVIDENCE_HASHES_DEFAULT;
	int			 rv;

	memset(&r, 0, sizeof(r));
	memset(&tee, 0, sizeof(tee));
	prefetch_usage(usage, sizeof(usage));
	if ((rv = input_opts(argc, argv, usage, files, &nfiles, NULL,
	    &tee, &hashes)) != 0)
		return rv == -1 ? CTL_OK : rv;
	if ((rv = fetch_ups_defaults(ctl, &r.u)) != CTL_OK)
		return rv;
	if ((m = evidence_manifest_new()) == NULL ||
	    (coll = json_object()) == NULL) {
		rv = CTL_REJECTED;
		goto out;
	}
	m->hashes = hashes;
	/* Every input is read before anything is fetched; the cache's own entries are not asked again. */
	if ((rv = load_inputs(m, files, nfiles)) != CTL_OK ||
	    (rv = add_rim_ids(m, &tee)) != CTL_OK ||
	    (rv = ctl_manifest_collateral(ctl, coll, tee.quotes, tee.nquotes,
	    tee.reports, tee.nreports, tee.product, 0)) != CTL_OK ||
	    (rv = ctl_open_cache(ctl, 0)) != CTL_OK)
		goto out;
	learn_cas(ctl, m);
	if ((rv = ctl_trust_load(ctl, &r.t, 1)) != CTL_OK)
		goto out;
	rv = fetch_run(ctl, &r, m, NULL, hashes, coll, "prefetch",
	    "prefetch");
	progress_end(&r.h.prog);
	if (rv == CTL_OK) {
		haul_summary(&r.h, "prefetch");
		rv = prefetch_store(ctl, &r.h);
	}
 out:
	json_decref(coll);
	fetch_run_free(&r);
	evidence_manifest_free(m);
	return rv;
}
