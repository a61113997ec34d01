/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl manifest, fetch, prefetch and export-rim-store: what hosts need, fetched on a connected machine. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>
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

#define MANIFEST_FORMAT		"stapled-manifest"
#define MANIFEST_VERSION	1
#define FETCH_NONCE_BYTES	16
#define GENERATOR		"staplectl " PACKAGE_VERSION

/* ---- manifest ------------------------------------------------------------ */

static int
b64_put(json_t *o, const char *name, const uint8_t *p, size_t n)
{
	char	*s;
	int	 rv;

	if ((s = malloc((n + 2) / 3 * 4 + 1)) == NULL)
		return -1;
	EVP_EncodeBlock((unsigned char *)s, p, (int)n);
	rv = json_object_set_new(o, name, json_string(s));
	free(s);
	return rv;
}

static int
b64_get(json_t *v, uint8_t **out, size_t *outlen)
{
	const char	*s = json_string_value(v);
	size_t		 n, pad = 0;
	int		 len;

	*out = NULL;
	if (s == NULL || (n = strlen(s)) == 0 || n % 4 != 0)
		return -1;
	if ((*out = malloc(n / 4 * 3 + 1)) == NULL)
		return -1;
	if ((len = EVP_DecodeBlock(*out, (const unsigned char *)s, (int)n)) < 0) {
		free(*out);
		*out = NULL;
		return -1;
	}
	pad = s[n - 1] == '=' ? (s[n - 2] == '=' ? 2 : 1) : 0;
	*outlen = (size_t)len - pad;
	return 0;
}

/* Inputs of manifest and prefetch: every --evidence/--chain file. */
static int
load_inputs(struct evidence_manifest *m, char **files, size_t n)
{
	uint8_t	*buf;
	size_t	 len, i;
	char	 err[512];

	for (i = 0; i < n; i++) {
		if (ctl_read_file(files[i], EVIDENCE_MAX_FILE_BYTES, &buf, &len,
		    err, sizeof(err)) == -1) {
			ctl_warnx("%s", err);
			return CTL_NOFILE;
		}
		if (evidence_manifest_add(m, buf, len, err, sizeof(err)) == -1) {
			ctl_warnx("%s: %s", files[i], err);
			free(buf);
			return CTL_REJECTED;
		}
		free(buf);
	}
	return CTL_OK;
}

/*
 * manifest's TDX/SGX quotes and SEV-SNP reports (tools/staplectl_collateral.c),
 * and the RIM IDs named with --rim-id.
 */
struct tee_inputs {
	char		*quotes[CTL_MAX_LIST];
	size_t		 nquotes;
	char		*reports[CTL_MAX_LIST];
	size_t		 nreports;
	const char	*product;
	char		*rim_ids[CTL_MAX_LIST];
	size_t		 nrim_ids;
};

/* --rim-id: each must be a RIM ID (entry/rim.h's charset and length). */
static int
add_rim_ids(struct evidence_manifest *m, const struct tee_inputs *tee)
{
	size_t	i;

	for (i = 0; i < tee->nrim_ids; i++)
		if (evidence_manifest_add_rim_id(m, tee->rim_ids[i]) == -1) {
			ctl_warnx("--rim-id %s: not a RIM ID (at most %d of "
			    "A-Z a-z 0-9 _ . -)", tee->rim_ids[i],
			    RIM_ID_MAX_CHARS);
			return CTL_USAGE;
		}
	return CTL_OK;
}

/* --hash LIST: the CertID hash algorithms asked for; a usage error if unknown. */
static int
hash_opt(const char *arg, unsigned *hashes)
{
	char	err[256];

	if (evidence_hashes_parse(arg, hashes, err, sizeof(err)) == -1) {
		ctl_warnx("--hash %s", err);
		return CTL_USAGE;
	}
	return CTL_OK;
}

static int
input_opts(int argc, char **argv, const char *usage, char **files,
    size_t *nfiles, const char **outpath, struct tee_inputs *tee,
    unsigned *hashes)
{
	static const struct option	opts[] = {
		{ "evidence", required_argument, NULL, 'e' },
		{ "chain", required_argument, NULL, 'c' },
		{ "out", required_argument, NULL, 'o' },
		{ "quote", required_argument, NULL, 'q' },
		{ "snp-report", required_argument, NULL, 's' },
		{ "product", required_argument, NULL, 'p' },
		{ "hash", required_argument, NULL, 'H' },
		{ "rim-id", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int	ch;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'r':
			if (tee == NULL || tee->nrim_ids >= CTL_MAX_LIST)
				goto bad;
			tee->rim_ids[tee->nrim_ids++] = optarg;
			break;
		case 'e':
		case 'c':
			if (*nfiles >= CTL_MAX_LIST) {
				ctl_warnx("more than %d inputs", CTL_MAX_LIST);
				return CTL_USAGE;
			}
			files[(*nfiles)++] = optarg;
			break;
		case 'o':
			if (outpath == NULL)
				goto bad;
			*outpath = optarg;
			break;
		case 'q':
		case 's':
			if (tee == NULL || (ch == 'q' ? tee->nquotes :
			    tee->nreports) >= CTL_MAX_LIST)
				goto bad;
			if (ch == 'q')
				tee->quotes[tee->nquotes++] = optarg;
			else
				tee->reports[tee->nreports++] = optarg;
			break;
		case 'p':
			if (tee == NULL)
				goto bad;
			tee->product = optarg;
			break;
		case 'H':
			if (hash_opt(optarg, hashes) != CTL_OK)
				return CTL_USAGE;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		default:
			goto bad;
		}
	}
	if (optind == argc && (*nfiles > 0 || (tee != NULL &&
	    tee->nquotes + tee->nreports + tee->nrim_ids > 0)))
		return CTL_OK;
 bad:
	fputs(usage, stderr);
	return CTL_USAGE;
}

/*
 * The evidence's CAs join the cache's pool, when it opens: all of them
 * that chain to an anchor through the pool and each other, in this one
 * pass (a new family's whole hierarchy, not one level per run).
 */
static void
learn_cas(struct ctl *ctl, const struct evidence_manifest *m)
{
	struct ctl_trust	 t;
	struct stat		 st;

	/* Never create a cache just to remember certificates. */
	if (stat(ctl->cache_dir, &st) == -1 || ctl_open_cache(ctl, 0) != CTL_OK)
		return;
	if (ctl_trust_load(ctl, &t, 1) == CTL_OK)
		ctl_learn_cas(ctl, &t, (const uint8_t *const *)m->ca_der,
		    m->ca_len, m->ncas, 1);
	ctl_trust_free(&t);
}

/* One OCSP record of a manifest; "hash" names its CertIDs' algorithm. */
static json_t *
certid_json(const uint8_t *key, const uint8_t *req, size_t reqlen,
    const char *subject, const char *chain)
{
	struct ocsp_req	 parsed;
	const char	*why;
	char		 hex[2 * OCSP_KEY_BYTES + 1], hash[32];
	json_t		*o;

	util_hex(key, OCSP_KEY_BYTES, hex);
	o = json_pack("{s:s}", "key", hex);
	if (ocsp_req_parse(req, reqlen, &parsed, &why) == 0) {
		evidence_req_hash_name(&parsed, hash, sizeof(hash));
		json_object_set_new(o, "hash", json_string(hash));
	}
	b64_put(o, "request", req, reqlen);
	if (subject != NULL && subject[0] != '\0')
		json_object_set_new(o, "subject", json_string(subject));
	if (chain != NULL)
		json_object_set_new(o, "chain", json_string(chain));
	return o;
}

/* One cached entry the evidence did not name already: into ocsp or rims. */
static void
manifest_cached_entry(const struct evidence_manifest *m,
    const struct ctl_ent *e, const struct cache_body *b, json_t *ocsp,
    json_t *rims)
{
	char	id[RIM_ID_MAX_CHARS + 1];
	size_t	k;

	if (e->kind == CACHE_KIND_OCSP && b->request_len > 0 &&
	    e->klen == OCSP_KEY_BYTES) {
		for (k = 0; k < m->ncertids; k++)
			if (memcmp(m->certids[k].key, e->key,
			    OCSP_KEY_BYTES) == 0)
				break;
		if (k == m->ncertids)
			json_array_append_new(ocsp, certid_json(e->key,
			    b->request, b->request_len, NULL, "cache"));
	} else if (e->kind == CACHE_KIND_RIM && e->klen <= RIM_ID_MAX_CHARS) {
		memcpy(id, e->key, e->klen);
		id[e->klen] = '\0';
		for (k = 0; k < m->nrim_ids; k++)
			if (strcmp(m->rim_ids[k], id) == 0)
				break;
		if (k == m->nrim_ids && rim_id_valid(id))
			json_array_append_new(rims, json_string(id));
	}
}

/* What the site already relies on: the cache's own entries, when it opens. */
static void
manifest_cached(struct ctl *ctl, const struct evidence_manifest *m,
    json_t *ocsp, json_t *rims)
{
	struct ctl_ent		*e = NULL;
	struct cache_body	 b;
	size_t			 i, n = 0;

	if (ctl->cache == NULL && ctl_open_cache(ctl, 1) != CTL_OK)
		return;
	if (ctl_collect(ctl, 0, &e, &n) != CTL_OK)
		n = 0;
	for (i = 0; i < n; i++) {
		if (cache_get(ctl->cache, e[i].kind, e[i].key, e[i].klen,
		    NULL, &b) != 1)
			continue;
		manifest_cached_entry(m, &e[i], &b, ocsp, rims);
	}
	free(e);
}

/* The evidence's CertIDs, RIM IDs and CAs into the manifest's arrays. */
static void
manifest_evidence(const struct evidence_manifest *m, json_t *ocsp,
    json_t *rims, json_t *cas)
{
	json_t	*c;
	size_t	 i;

	for (i = 0; i < m->ncertids; i++)
		json_array_append_new(ocsp, certid_json(m->certids[i].key,
		    m->certids[i].req, m->certids[i].req_len,
		    m->certids[i].subject,
		    evidence_chain_type_str[m->certids[i].chain]));
	for (i = 0; i < m->nrim_ids; i++)
		json_array_append_new(rims, json_string(m->rim_ids[i]));
	for (i = 0; i < m->ncas; i++) {
		c = json_object();
		b64_put(c, "der", m->ca_der[i], m->ca_len[i]);
		json_array_append_new(cas, json_object_get(c, "der"));
		json_incref(json_object_get(c, "der"));
		json_decref(c);
	}
}

/*
 * root to outpath (stdout without it); *rv the exit code. -1 when nothing
 * was written (cannot create, cannot write), 0 once the output was
 * committed or failed to be.
 */
static int
manifest_write(json_t *root, const char *outpath, int *rv)
{
	struct ctl_output	out;

	memset(&out, 0, sizeof(out));
	if (ctl_output_open(&out, outpath) == -1) {
		*rv = CTL_NOFILE;
		return -1;
	}
	if (json_dumpf(root, out.f, JSON_INDENT(2)) == -1 ||
	    fputc('\n', out.f) == EOF) {
		ctl_output_abort(&out);
		*rv = CTL_REJECTED;
		return -1;
	}
	*rv = ctl_output_commit(&out) == 0 ? CTL_OK : CTL_REJECTED;
	return 0;
}

int
cmd_manifest(struct ctl *ctl, int argc, char **argv)
{
	static const char	 usage[] = "usage: staplectl [-C dir] manifest "
	    "(--evidence FILE | --chain CHAINFILE | --rim-id ID |\n    --quote "
	    "QUOTE | --snp-report REPORT [--product Milan|Genoa|Turin])...\n"
	    "    [--out FILE] [--hash sha1,sha256,sha384]"
	    "\nthe CertIDs nvattest checks (in each --hash algorithm, all three "
	    "by default) and\nthe RIM IDs it fetches, for the evidence of "
	    "every host given (collect-evidence\noutput, an array of evidence "
	    "objects or one; a chain as PEM, DER or base64),\nand each --rim-id; "
	    "the Intel\ncollateral a TDX or SGX "
	    "quote needs (by its PCK certificate's FMSPC and CA)\nand the AMD "
	    "KDS objects an SEV-SNP report needs (VCEK by chip ID and reported "
	    "TCB,\ncert_chain, crl); plus the entries the cache already "
	    "holds.\n";
	struct evidence_manifest *m = NULL;
	struct tee_inputs	 tee;
	json_t			*root = NULL, *ocsp, *rims, *cas;
	const char		*outpath = NULL;
	char			*files[CTL_MAX_LIST];
	char			 tb[32];
	size_t			 nfiles = 0;
	unsigned		 hashes = EVIDENCE_HASHES_DEFAULT;
	int			 rv;

	memset(&tee, 0, sizeof(tee));
	if ((rv = input_opts(argc, argv, usage, files, &nfiles, &outpath,
	    &tee, &hashes)) != 0)
		return rv == -1 ? CTL_OK : rv;
	if ((m = evidence_manifest_new()) == NULL)
		return CTL_REJECTED;
	m->hashes = hashes;
	if ((rv = load_inputs(m, files, nfiles)) != CTL_OK ||
	    (rv = add_rim_ids(m, &tee)) != CTL_OK)
		goto out;
	learn_cas(ctl, m);
	bundle_time_str(tb, ctl->now);
	ocsp = json_array();
	rims = json_array();
	cas = json_array();
	root = json_pack("{s:s, s:i, s:s, s:s, s:o, s:o, s:o}", "format",
	    MANIFEST_FORMAT, "version", MANIFEST_VERSION, "created", tb,
	    "generator", GENERATOR, "ocsp", ocsp, "rim", rims, "certs", cas);
	if ((rv = ctl_manifest_collateral(ctl, root, tee.quotes, tee.nquotes,
	    tee.reports, tee.nreports, tee.product, 1)) != CTL_OK)
		goto out;
	manifest_evidence(m, ocsp, rims, cas);
	manifest_cached(ctl, m, ocsp, rims);
	if (manifest_write(root, outpath, &rv) == -1)
		goto out;
	fprintf(stderr, "staplectl: manifest: %zu device(s), %zu CertID(s), "
	    "%zu RIM ID(s), %zu PCCS and %zu KDS path(s)\n", m->ndevices,
	    json_array_size(ocsp), json_array_size(rims),
	    json_array_size(json_object_get(root, "pccs")),
	    json_array_size(json_object_get(root, "kds")));
 out:
	json_decref(root);
	evidence_manifest_free(m);
	return rv;
}

/* ---- fetching ---------------------------------------------------------------- */

/*
 * What came of one entry asked for in a run, in the order of the summary.
 * An entry is asked at most once per run, whatever came of it; within
 * that, each upstream once, unless its failure is transient.
 */
enum fetch_outcome {
	FETCH_STORED = 0,	/* an answer verified */
	FETCH_REFUSED,		/* answers came; none verified */
	FETCH_NOT_FOUND,	/* a definitive no: HTTP 404, another 4xx, too large */
	FETCH_UNREACHABLE,	/* transient failures outlasted the retries */
	FETCH_NOT_ASKED,	/* every upstream was down in this run */
	FETCH_ERROR,		/* here: a request that cannot be built */
	FETCH_OUTCOME_MAX
};
static const char *const fetch_outcome_str[FETCH_OUTCOME_MAX] = {
	[FETCH_STORED] = "stored",
	[FETCH_REFUSED] = "refused",
	[FETCH_NOT_FOUND] = "not found",
	[FETCH_UNREACHABLE] = "unreachable",
	[FETCH_NOT_ASKED] = "not asked",
	[FETCH_ERROR] = "failed",
};

/*
 * A transient failure (no connection, a timeout, HTTP 5xx, 408, 429) is
 * asked again FETCH_RETRIES times, after FETCH_BACKOFF_MS, then twice
 * that; an upstream whose retries ran out for FETCH_DOWN_AFTER entries in
 * a row is down for the rest of the run and not asked again.
 */
#define FETCH_RETRIES		2
#define FETCH_BACKOFF_MS	500
#define FETCH_DOWN_AFTER	3
#define FETCH_CAUSE_BYTES	320
#define FETCH_MAX_CAUSES	4	/* per kind and outcome in the summary */

/* One entry asked for in this run, and what came of it. */
struct asked {
	enum cache_kind		 kind;
	uint8_t			 key[CACHE_KEY_MAX_BYTES];
	size_t			 klen;
	enum fetch_outcome	 outcome;
	char			 cause[FETCH_CAUSE_BYTES];
};

/* An upstream's run of entries that ran out of retries. */
struct upstate {
	const char	*url;
	int		 streak;
};

/* What fetch found: bundle entries with owned bodies. */
struct haul {
	struct bundle_entry	*e;
	struct ctl_check	*chk;
	size_t			 n, cap;
	size_t			 failed;	/* entries, not attempts */
	struct asked		*asked;
	size_t			 nasked, capasked;
	struct upstate		 up[4 * CTL_MAX_LIST];
	size_t			 nup;
	struct progress		 prog;
};

static struct bundle_entry *
haul_add(struct haul *h)
{
	void	*p;

	if (h->n == h->cap) {
		h->cap = h->cap == 0 ? 64 : h->cap * 2;
		if ((p = realloc(h->e, h->cap * sizeof(*h->e))) == NULL)
			return NULL;
		h->e = p;
		if ((p = realloc(h->chk, h->cap * sizeof(*h->chk))) == NULL)
			return NULL;
		h->chk = p;
	}
	memset(&h->e[h->n], 0, sizeof(h->e[h->n]));
	return &h->e[h->n++];
}

static void
haul_free(struct haul *h)
{
	size_t	i;

	progress_end(&h->prog);
	for (i = 0; i < h->n; i++) {
		free(h->e[i].request);
		free(h->e[i].response);
		free(h->e[i].headers);
	}
	free(h->e);
	free(h->chk);
	free(h->asked);
	memset(h, 0, sizeof(*h));
}

/* Was this entry asked for already in this run (whatever came of it)? */
static int
haul_asked(const struct haul *h, enum cache_kind kind, const uint8_t *key,
    size_t klen)
{
	size_t	i;

	for (i = 0; i < h->nasked; i++)
		if (h->asked[i].kind == kind && h->asked[i].klen == klen &&
		    memcmp(h->asked[i].key, key, klen) == 0)
			return 1;
	return 0;
}

/* Remember what came of an entry; a failure counts in h->failed. */
static void
haul_note(struct haul *h, enum cache_kind kind, const uint8_t *key,
    size_t klen, enum fetch_outcome o, const char *cause)
{
	struct asked	*a;
	void		*p;

	if (o != FETCH_STORED)
		h->failed++;
	if (h->nasked == h->capasked) {
		h->capasked = h->capasked == 0 ? 64 : h->capasked * 2;
		if ((p = realloc(h->asked, h->capasked * sizeof(*h->asked))) ==
		    NULL) {
			h->capasked = h->nasked;
			return;
		}
		h->asked = p;
	}
	a = &h->asked[h->nasked++];
	memset(a, 0, sizeof(*a));
	a->kind = kind;
	memcpy(a->key, key, klen);
	a->klen = klen;
	a->outcome = o;
	snprintf(a->cause, sizeof(a->cause), "%.*s", (int)sizeof(a->cause) - 1,
	    cause != NULL ? cause : "");
}

/* The run's state of an upstream, by URL. */
static struct upstate *
haul_up(struct haul *h, const char *url)
{
	size_t	i;

	for (i = 0; i < h->nup; i++)
		if (strcmp(h->up[i].url, url) == 0)
			return &h->up[i];
	if (h->nup == sizeof(h->up) / sizeof(h->up[0]))
		return NULL;
	h->up[h->nup].url = url;
	h->up[h->nup].streak = 0;
	return &h->up[h->nup++];
}

/* The collateral fetched joins the haul; its bodies change hands. */
static int
haul_take(struct haul *h, struct ctl_fetched *cf)
{
	struct bundle_entry	*e;
	size_t			 i;

	h->failed += cf->failed;
	cf->failed = 0;
	for (i = 0; i < cf->n; i++) {
		if ((e = haul_add(h)) == NULL)
			return CTL_REJECTED;
		*e = cf->e[i];
		h->chk[h->n - 1] = cf->chk[i];
		memset(&cf->e[i], 0, sizeof(cf->e[i]));
	}
	return CTL_OK;
}

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
		ctl_warnx("%s.upstreams: more than %d", kind_table[svc].section,
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
fetch_try(const char *url, const uint8_t *post, size_t postlen,
    const char *accept, struct ctl_http *b, char *err, size_t errlen)
{
	long	delay = FETCH_BACKOFF_MS;
	int	attempt;

	for (attempt = 0;; attempt++) {
		if (ctl_http_do(url, post, postlen, accept, b, err, errlen) == 0)
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

/* The URL to ask upstream `up` for this entry. */
static void
fetch_url(char *url, size_t len, const char *up, enum cache_kind kind,
    const uint8_t *key, size_t klen)
{
	if (kind == CACHE_KIND_RIM)
		snprintf(url, len, "%s%s%.*s", up, up[strlen(up) - 1] == '/' ?
		    "v1/rim/" : "/v1/rim/", (int)klen, (const char *)key);
	else
		snprintf(url, len, "%s", up);
}

/*
 * An upstream's failure (r of fetch_try) into the entry's outcome and
 * cause, unless an earlier upstream's says more: a refusal over a
 * definitive no over a transient failure. The cause leaves out the URL,
 * so that the summary groups one cause from many entries.
 */
static void
fetch_failed(enum fetch_outcome *o, char cause[FETCH_CAUSE_BYTES],
    const char *url, const char *err, int r)
{
	size_t	ul = strlen(url);

	if (*o == FETCH_REFUSED || (*o == FETCH_NOT_FOUND && r == -1))
		return;
	*o = r == -1 ? FETCH_UNREACHABLE : FETCH_NOT_FOUND;
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
    const uint8_t *req, size_t reqlen, char **ups, size_t nups)
{
	struct bundle_entry	*e;
	struct ctl_check	*c;
	struct ctl_http		 b;
	struct upstate		*us;
	enum fetch_outcome	 o = FETCH_NOT_ASKED;
	char			 url[2048], err[2600], cause[FETCH_CAUSE_BYTES];
	char			 hex[2 * CACHE_KEY_MAX_BYTES + 1];
	size_t			 i;
	int			 r;

	progress_step(&h->prog, 1);
	if (haul_asked(h, kind, key, klen))
		return;
	snprintf(cause, sizeof(cause), "every upstream is down in this run");
	if ((e = haul_add(h)) == NULL || (e->request = malloc(reqlen + 1)) ==
	    NULL) {
		if (e != NULL)
			h->n--;
		haul_note(h, kind, key, klen, FETCH_ERROR, "out of memory");
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
		fetch_url(url, sizeof(url), ups[i], kind, key, klen);
		r = fetch_try(url, kind == CACHE_KIND_OCSP ? req : NULL, reqlen,
		    kind == CACHE_KIND_OCSP ? "application/ocsp-response" :
		    "application/json", &b, err, sizeof(err));
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
			snprintf(e->source, sizeof(e->source), "%s", ups[i]);
			e->this_update = c->meta.this_update;
			e->next_update = c->meta.next_update;
			e->produced_at = c->meta.produced_at;
			e->status = c->meta.status;
			haul_note(h, kind, key, klen, FETCH_STORED, NULL);
			return;
		}
		ctl_warnx("fetch: %s: rejected: %s", url, c->reason);
		o = FETCH_REFUSED;
		snprintf(cause, sizeof(cause), "%.*s", (int)sizeof(cause) - 1,
		    c->reason);
	}
	/* Not asked: said once, when the last upstream went down. */
	util_hex(key, klen, hex);
	if (o != FETCH_NOT_ASKED)
		ctl_warnx("fetch: %s %s: no upstream gave a valid answer (%s)",
		    cache_kind_str[kind], hex, fetch_outcome_str[o]);
	free(e->response);
	free(e->request);
	h->n--;
	haul_note(h, kind, key, klen, o, cause);
}

/* " (5: CAUSE; 4: CAUSE)": the causes of one kind's outcome o, grouped. */
static void
summary_causes(const struct haul *h, enum cache_kind kind,
    enum fetch_outcome o)
{
	const char	*cs[FETCH_MAX_CAUSES];
	size_t		 cn[FETCH_MAX_CAUSES], i, j, nc = 0, other = 0;

	for (i = 0; i < h->nasked; i++) {
		if (h->asked[i].kind != kind || h->asked[i].outcome != o)
			continue;
		for (j = 0; j < nc; j++)
			if (strcmp(cs[j], h->asked[i].cause) == 0)
				break;
		if (j < nc)
			cn[j]++;
		else if (nc < FETCH_MAX_CAUSES) {
			cs[nc] = h->asked[i].cause;
			cn[nc++] = 1;
		} else
			other++;
	}
	fputs(" (", stderr);
	for (j = 0; j < nc; j++)
		fprintf(stderr, "%s%zu: %s", j > 0 ? "; " : "", cn[j], cs[j]);
	if (other > 0)
		fprintf(stderr, "; %zu: other causes", other);
	fputc(')', stderr);
}

/* "9 CertIDs: 0 stored, 9 refused (9: CAUSE)": one line per kind asked. */
static void
haul_summary(const struct haul *h, const char *cmd)
{
	static const enum cache_kind	 kinds[] = { CACHE_KIND_RIM,
					    CACHE_KIND_OCSP };
	size_t				 n[FETCH_OUTCOME_MAX], i, k, total;
	unsigned			 o;

	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		memset(n, 0, sizeof(n));
		for (i = 0, total = 0; i < h->nasked; i++)
			if (h->asked[i].kind == kinds[k]) {
				n[h->asked[i].outcome]++;
				total++;
			}
		if (total == 0)
			continue;
		fprintf(stderr, "staplectl: %s: %zu %s: %zu stored", cmd, total,
		    kinds[k] == CACHE_KIND_RIM ? "RIMs" : "CertIDs",
		    n[FETCH_STORED]);
		for (o = FETCH_STORED + 1; o < FETCH_OUTCOME_MAX; o++) {
			if (n[o] == 0)
				continue;
			fprintf(stderr, ", %zu %s", n[o], fetch_outcome_str[o]);
			summary_causes(h, kinds[k], (enum fetch_outcome)o);
		}
		fputc('\n', stderr);
	}
}

/* One OCSP record of a manifest, parsed. */
struct listed {
	uint8_t		*raw;		/* its request, DER (owned) */
	size_t		 rawlen;
	struct ocsp_req	 req;		/* borrows raw */
	int		 hash;		/* of all its CertIDs, or -1 */
};

static int
listed_parse(json_t *v, size_t i, struct listed *l)
{
	const char	*why, *named;
	char		 have[32];
	size_t		 k;

	l->hash = -1;
	if (b64_get(json_object_get(v, "request"), &l->raw, &l->rawlen) == -1 ||
	    ocsp_req_parse(l->raw, l->rawlen, &l->req, &why) == -1) {
		ctl_warnx("manifest: ocsp[%zu]: request does not parse", i);
		goto bad;
	}
	/* Absent in manifests of older staplectl: the request says. */
	evidence_req_hash_name(&l->req, have, sizeof(have));
	if ((named = json_string_value(json_object_get(v, "hash"))) != NULL &&
	    strcmp(named, have) != 0) {
		ctl_warnx("manifest: ocsp[%zu]: \"hash\" is %s but its request "
		    "asks with %s", i, named, have);
		goto bad;
	}
	l->hash = evidence_certid_hash(&l->req.certids[0]);
	for (k = 1; k < l->req.ncertids; k++)
		if (evidence_certid_hash(&l->req.certids[k]) != l->hash)
			l->hash = -1;
	return 0;
 bad:
	free(l->raw);
	l->raw = NULL;
	return -1;
}

/* Does the manifest hold a record for this serial in hash hh? Then no warning. */
static int
listed_as(const struct listed *l, size_t n, const struct ocsp_certid *id,
    unsigned hh)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (l[i].raw != NULL && l[i].hash == (int)hh &&
		    l[i].req.certids[0].serial_len == id->serial_len &&
		    memcmp(l[i].req.certids[0].serial, id->serial,
		    id->serial_len) == 0)
			return 1;
	return 0;
}

/* A record as it is, with a fresh nonce. */
static void
fetch_renonced(struct ctl *ctl, struct ctl_trust *t, struct haul *h,
    const struct listed *l, char **ups, size_t nups)
{
	uint8_t	 nonce[FETCH_NONCE_BYTES], key[OCSP_KEY_BYTES], *der;
	size_t	 len;

	if (RAND_bytes(nonce, sizeof(nonce)) != 1 ||
	    (der = ocsp_req_renonce(l->raw, l->rawlen, nonce, sizeof(nonce),
	    &len)) == NULL) {
		h->failed++;
		return;
	}
	ocsp_req_key(&l->req, key);
	fetch_one(ctl, t, h, CACHE_KIND_OCSP, key, sizeof(key), der, len, ups,
	    nups);
	free(der);
}

/* Record i's certificate in the other hashes chosen, from its issuer. */
static void
fetch_restated(struct ctl *ctl, struct ctl_trust *t, struct haul *h,
    const struct listed *l, size_t n, size_t i, unsigned hashes, char **ups,
    size_t nups)
{
	STACK_OF(X509)		*cands[2] = { t->anchors, t->pool };
	struct evidence_certid	 c;
	char			 err[512], serial[2 * EVIDENCE_MAX_SERIAL_BYTES + 1];
	unsigned		 hh;
	int			 r;

	for (hh = 0; hh < EVIDENCE_HASH_MAX; hh++) {
		if ((int)hh == l[i].hash || !(hashes & EVIDENCE_HASH_BIT(hh)))
			continue;
		r = evidence_certid_rehash(&l[i].req.certids[0], cands, 2,
		    (enum evidence_hash)hh, &c, err, sizeof(err));
		if (r == 0)
			progress_add_total(&h->prog, 1);
		if (r == 0)
			fetch_one(ctl, t, h, CACHE_KIND_OCSP, c.key,
			    OCSP_KEY_BYTES, c.req, c.req_len, ups, nups);
		else if (r == -1) {
			ctl_warnx("manifest: ocsp[%zu]: %s", i, err);
			h->failed++;
		} else if (!listed_as(l, n, &l[i].req.certids[0], hh)) {
			util_hex(l[i].req.certids[0].serial,
			    l[i].req.certids[0].serial_len, serial);
			ctl_warnx("manifest: ocsp[%zu] (serial=%s): its issuer's "
			    "certificate is not known here (anchors, pool), so "
			    "it is not asked with %s", i, serial,
			    evidence_hash_str[hh]);
		}
		free(c.req);
	}
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
    json_t *list, unsigned hashes, char **ups, size_t nups)
{
	struct listed	*l;
	size_t		 n = json_array_size(list), i;

	if (n == 0)
		return;
	if ((l = calloc(n, sizeof(*l))) == NULL) {
		h->failed += n;
		return;
	}
	for (i = 0; i < n; i++)
		if (listed_parse(json_array_get(list, i), i, &l[i]) == -1)
			h->failed++;
	for (i = 0; i < n; i++)
		if (l[i].raw != NULL && (l[i].hash < 0 ||
		    (hashes & EVIDENCE_HASH_BIT(l[i].hash))))
			fetch_renonced(ctl, t, h, &l[i], ups, nups);
	for (i = 0; i < n; i++)
		if (l[i].raw != NULL && l[i].hash >= 0 &&
		    l[i].req.ncertids == 1)
			fetch_restated(ctl, t, h, l, n, i, hashes, ups, nups);
	for (i = 0; i < n; i++)
		free(l[i].raw);
	free(l);
}

/*
 * RIMs first: their KeyInfo chains name more CertIDs to ask about, in
 * each of `hashes`. OCSP requests are sent with a fresh nonce.
 */
static int
fetch_all(struct ctl *ctl, struct ctl_trust *t, struct evidence_manifest *m,
    json_t *more_ocsp, unsigned hashes, char **ocsp_ups, size_t nocsp,
    char **rim_ups, size_t nrim, struct haul *h, const char *cmd)
{
	struct rim_trust	*rt;
	struct rim_result	 r;
	struct evidence_certid	*ids = NULL;
	const uint8_t		*cder[EVIDENCE_MAX_CHAIN_CERTS];
	char			 err[512];
	size_t			 i, j, nids, first_rim = h->n, end_rim;

	/* The total grows as RIM chains and restated records add CertIDs. */
	progress_start(&h->prog, cmd, "entries", PROGRESS_ITEMS, m->nrim_ids +
	    m->ncertids + json_array_size(more_ocsp), ctl->quiet);
	for (i = 0; i < m->nrim_ids; i++)
		fetch_one(ctl, t, h, CACHE_KIND_RIM, (const uint8_t *)m->rim_ids[i],
		    strlen(m->rim_ids[i]), (const uint8_t *)"", 0, rim_ups, nrim);
	if ((rt = ctl_rim_trust(ctl)) == NULL)
		return CTL_REJECTED;
	/* Only the RIMs: the loop appends their chains' OCSP answers. */
	end_rim = h->n;
	for (i = first_rim; i < end_rim; i++) {
		char	id[RIM_ID_MAX_CHARS + 1];

		memcpy(id, h->e[i].key, h->e[i].klen);
		id[h->e[i].klen] = '\0';
		if (entry_rim_path(id, h->e[i].klen, err) == -1)
			continue;	/* a manifest's ids were checked: not reached */
		free(h->e[i].request);
		h->e[i].request = (uint8_t *)strdup(err);
		h->e[i].request_len = strlen(err);
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
	rim_trust_free(rt);
	for (i = 0; i < m->ncertids; i++)
		fetch_one(ctl, t, h, CACHE_KIND_OCSP, m->certids[i].key,
		    OCSP_KEY_BYTES, m->certids[i].req, m->certids[i].req_len,
		    ocsp_ups, nocsp);
	fetch_listed(ctl, t, h, more_ocsp, hashes, ocsp_ups, nocsp);
	return CTL_OK;
}

/* A manifest file into the model: CertIDs come back as requests, and the whole of it in *rootp. */
static int
read_manifest(const char *path, struct evidence_manifest *m, json_t **ocsp,
    json_t **rootp)
{
	json_error_t	 je;
	json_t		*root, *v, *rims;
	size_t		 i;

	if ((root = json_load_file(path, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		ctl_warnx("%s:%d: %s", path, je.line, je.text);
		return je.line <= 0 ? CTL_NOFILE : CTL_REJECTED;
	}
	v = json_object_get(root, "format");
	if (!json_is_string(v) || strcmp(json_string_value(v),
	    MANIFEST_FORMAT) != 0 || json_integer_value(json_object_get(root,
	    "version")) != MANIFEST_VERSION) {
		ctl_warnx("%s: not a version-%d stapled manifest", path,
		    MANIFEST_VERSION);
		json_decref(root);
		return CTL_REJECTED;
	}
	rims = json_object_get(root, "rim");
	json_array_foreach(rims, i, v)
		if (!json_is_string(v) ||
		    evidence_manifest_add_rim_id(m, json_string_value(v)) == -1)
			ctl_warnx("%s: rim[%zu]: not a RIM ID", path, i);
	*ocsp = json_incref(json_object_get(root, "ocsp"));
	*rootp = root;
	return CTL_OK;
}

/*
 * The manifest's "certs" (the CAs in the evidence it was made from) join
 * fetch's pool by the pool's rule, so the answers for a family whose
 * CAs are not compiled in verify here too. Untrusted: one that does not
 * decode or chain is left out, and said.
 */
static void
manifest_cas(struct ctl *ctl, struct ctl_trust *t, json_t *root,
    const char *path)
{
	json_t		*certs = json_object_get(root, "certs"), *v;
	uint8_t		**der;
	size_t		*len, i, n = json_array_size(certs), k = 0;
	int		 got;

	if (n == 0)
		return;
	der = calloc(n, sizeof(*der));
	len = calloc(n, sizeof(*len));
	if (der == NULL || len == NULL) {
		free(der);
		free(len);
		return;
	}
	json_array_foreach(certs, i, v) {
		if (b64_get(v, &der[k], &len[k]) == -1 || len[k] == 0 ||
		    len[k] > BUNDLE_MAX_CERT_BYTES) {
			ctl_warnx("%s: certs[%zu]: not a base64 certificate",
			    path, i);
			free(der[k]);
			continue;
		}
		k++;
	}
	if ((got = ctl_learn_cas(ctl, t, (const uint8_t *const *)der, len, k,
	    0)) >= 0 && (size_t)got < k)
		ctl_warnx("%s: %zu of %zu certs do not chain to an anchor: not "
		    "used", path, k - (size_t)got, k);
	for (i = 0; i < k; i++)
		free(der[i]);
	free(der);
	free(len);
}

static void
fetch_usage(FILE *f)
{
	fprintf(f, "usage: staplectl [-f config] fetch --manifest FILE --out "
	    "BUNDLE\n    [--ocsp-upstream URL]... [--rim-upstream URL]...\n"
	    "    [--pccs-upstream URL]... [--kds-upstream URL]...\n"
	    "    [--hash sha1,sha256,sha384]\n"
	    "fetches everything a manifest lists (RIMs first, then the OCSP "
	    "answers for\ntheir signing chains and the manifest's CertIDs, "
	    "then its Intel and AMD\ncollateral), verifies it, writes a bundle."
	    "\nCertIDs are asked in each --hash algorithm (all three by "
	    "default). Each entry is\nasked once per run; a transient failure "
	    "(connect, timeout, 5xx) is asked again\ntwice with backoff. Exit "
	    "1 when any entry was not stored."
	    "\nFlags win over the -f file's ocsp, rim, pccs and amd_kds "
	    "upstreams; defaults:\n" CONFIG_DEFAULT_OCSP_UPSTREAM ", "
	    CONFIG_DEFAULT_RIM_UPSTREAM ",\n" CONFIG_DEFAULT_PCCS_UPSTREAM ", "
	    CONFIG_DEFAULT_KDS_UPSTREAM ".\n");
}

/*
 * The CAs the bundle's OCSP answers need: those between each answer's
 * responder and its anchor, as this trust (with the manifest's certs and
 * the RIMs' chains) builds them, each once, roots left out. Owned stack.
 */
static STACK_OF(X509) *
haul_cas(struct ctl_trust *t, const struct haul *h)
{
	STACK_OF(X509)	*cas, *chain;
	X509		*x;
	size_t		 i;
	int		 j, k;

	if ((cas = sk_X509_new_null()) == NULL)
		return NULL;
	for (i = 0; i < h->n; i++) {
		if (h->e[i].kind != CACHE_KIND_OCSP)
			continue;
		chain = ctl_ocsp_der_chain(t, h->e[i].response,
		    h->e[i].response_len);
		for (j = 0; chain != NULL && j < sk_X509_num(chain); j++) {
			x = sk_X509_value(chain, j);
			if (X509_check_ca(x) <= 0 ||
			    X509_check_issued(x, x) == X509_V_OK)
				continue;
			for (k = 0; k < sk_X509_num(cas); k++)
				if (X509_cmp(sk_X509_value(cas, k), x) == 0)
					break;
			if (k < sk_X509_num(cas) || !X509_up_ref(x))
				continue;
			if (!sk_X509_push(cas, x))
				X509_free(x);
		}
		sk_X509_pop_free(chain, X509_free);
	}
	return cas;
}

static int
write_haul(struct ctl *ctl, struct ctl_trust *t, struct haul *h,
    const char *outpath)
{
	struct ctl_output	 out;
	struct bundle_writer	*w = NULL;
	STACK_OF(X509)		*cas = NULL;
	unsigned char		*der;
	char			 subj[256];
	size_t			 i;
	int			 j, len;

	if ((cas = haul_cas(t, h)) == NULL) {
		ctl_warnx("out of memory");
		return CTL_REJECTED;
	}
	if (ctl_output_open(&out, outpath) == -1) {
		sk_X509_pop_free(cas, X509_free);
		return CTL_NOFILE;
	}
	if ((w = bundle_writer_new(out.f, ctl->now, GENERATOR)) == NULL)
		goto fail;
	for (i = 0; i < h->n; i++)
		if (bundle_write_entry(w, &h->e[i]) == -1)
			goto fail;
	for (j = 0; j < sk_X509_num(cas); j++) {
		der = NULL;
		if ((len = i2d_X509(sk_X509_value(cas, j), &der)) <= 0)
			goto fail;
		ctl_x509_subject(sk_X509_value(cas, j), subj, sizeof(subj));
		len = bundle_write_cert(w, der, (size_t)len,
		    subj[0] != '\0' ? subj : NULL);
		OPENSSL_free(der);
		if (len == -1)
			goto fail;
	}
	if (bundle_writer_end(w) == -1)
		goto fail;
	bundle_writer_free(w);
	sk_X509_pop_free(cas, X509_free);
	return ctl_output_commit(&out) == 0 ? CTL_OK : CTL_REJECTED;
 fail:
	bundle_writer_free(w);
	sk_X509_pop_free(cas, X509_free);
	ctl_output_abort(&out);
	ctl_warnx("%s: write failed", outpath);
	return CTL_REJECTED;
}

/* The upstreams fetch and prefetch ask, per service, in order. */
struct fetch_ups {
	char	*ocsp[CTL_MAX_LIST], *rim[CTL_MAX_LIST];
	char	*pccs[CTL_MAX_LIST], *kds[CTL_MAX_LIST];
	size_t	 nocsp, nrim, npccs, nkds;
};

/* One --*-upstream flag (ch 'O', 'R', 'P' or 'K'): CTL_OK or CTL_USAGE (said). */
static int
fetch_ups_add(struct fetch_ups *u, int ch, char *url)
{
	char	**list;
	size_t	 *n;

	list = ch == 'O' ? u->ocsp : ch == 'R' ? u->rim : ch == 'P' ? u->pccs :
	    u->kds;
	n = ch == 'O' ? &u->nocsp : ch == 'R' ? &u->nrim : ch == 'P' ?
	    &u->npccs : &u->nkds;
	if (*n >= CTL_MAX_LIST) {
		ctl_warnx("too many upstreams");
		return CTL_USAGE;
	}
	if (strncmp(url, "http://", 7) != 0 &&
	    strncmp(url, "https://", 8) != 0) {
		ctl_warnx("%s: not an http or https URL", url);
		return CTL_USAGE;
	}
	list[(*n)++] = url;
	return CTL_OK;
}

/* Each service without a flag: the configuration's upstreams; CTL_OK or CTL_USAGE (said why). */
static int
fetch_ups_defaults(struct ctl *ctl, struct fetch_ups *u)
{
	if (ups_default(u->ocsp, &u->nocsp, &ctl->conf, CACHE_KIND_OCSP) !=
	    CTL_OK ||
	    ups_default(u->rim, &u->nrim, &ctl->conf, CACHE_KIND_RIM) != CTL_OK ||
	    ups_default(u->pccs, &u->npccs, &ctl->conf, CACHE_KIND_PCCS) !=
	    CTL_OK ||
	    ups_default(u->kds, &u->nkds, &ctl->conf, CACHE_KIND_KDS) != CTL_OK)
		return CTL_USAGE;
	return CTL_OK;
}

/* fetch's command line. -1 to go on, else the exit code (usage said). */
static int
fetch_opts(int argc, char **argv, const char **mpath, const char **outpath,
    struct fetch_ups *u, unsigned *hashes)
{
	static const struct option	opts[] = {
		{ "manifest", required_argument, NULL, 'm' },
		{ "out", required_argument, NULL, 'o' },
		{ "ocsp-upstream", required_argument, NULL, 'O' },
		{ "rim-upstream", required_argument, NULL, 'R' },
		{ "pccs-upstream", required_argument, NULL, 'P' },
		{ "kds-upstream", required_argument, NULL, 'K' },
		{ "hash", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int	ch;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'm':
			*mpath = optarg;
			break;
		case 'o':
			*outpath = optarg;
			break;
		case 'O':
		case 'R':
		case 'P':
		case 'K':
			if (fetch_ups_add(u, ch, optarg) != CTL_OK)
				return CTL_USAGE;
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

int
cmd_fetch(struct ctl *ctl, int argc, char **argv)
{
	struct evidence_manifest *m = NULL;
	struct ctl_trust	 t;
	struct ctl_fetched	 cf;
	struct haul		 h;
	struct fetch_ups	 u;
	json_t			*ocsp = NULL, *root = NULL;
	const char		*mpath = NULL, *outpath = NULL;
	unsigned		 hashes = EVIDENCE_HASHES_DEFAULT;
	int			 rv;

	memset(&t, 0, sizeof(t));
	memset(&h, 0, sizeof(h));
	memset(&cf, 0, sizeof(cf));
	memset(&u, 0, sizeof(u));
	if ((rv = fetch_opts(argc, argv, &mpath, &outpath, &u, &hashes)) != -1)
		return rv;
	if ((rv = fetch_ups_defaults(ctl, &u)) != CTL_OK)
		return rv;
	if ((m = evidence_manifest_new()) == NULL)
		return CTL_REJECTED;
	if ((rv = read_manifest(mpath, m, &ocsp, &root)) != CTL_OK)
		goto out;
	/* No cache here by design; use it for its pool only if one is there. */
	if (ctl_open_cache(ctl, 1) != CTL_OK)
		ctl->cache = NULL;
	if ((rv = ctl_trust_load(ctl, &t, 1)) != CTL_OK)
		goto out;
	manifest_cas(ctl, &t, root, mpath);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if ((rv = fetch_all(ctl, &t, m, ocsp, hashes, u.ocsp, u.nocsp, u.rim,
	    u.nrim, &h, "fetch")) == CTL_OK)
		rv = ctl_fetch_collateral(ctl, &t, root, mpath, u.pccs, u.npccs,
		    u.kds, u.nkds, &cf);
	if (rv == CTL_OK)
		rv = haul_take(&h, &cf);
	if (rv == CTL_OK)
		rv = write_haul(ctl, &t, &h, outpath);
	curl_global_cleanup();
	progress_end(&h.prog);
	haul_summary(&h, "fetch");
	fprintf(stderr, "staplectl: fetch: %zu entr%s in %s, %zu failed\n", h.n,
	    h.n == 1 ? "y" : "ies", outpath, h.failed);
	if (rv == CTL_OK && h.failed > 0)
		rv = CTL_REJECTED;
 out:
	json_decref(ocsp);
	json_decref(root);
	ctl_fetched_free(&cf);
	haul_free(&h);
	ctl_trust_free(&t);
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

int
cmd_prefetch(struct ctl *ctl, int argc, char **argv)
{
	static const char	 usage[] = "usage: staplectl [-C dir] [-f config] "
	    "prefetch (--evidence FILE | --chain CHAINFILE | --rim-id ID |\n"
	    "    --quote QUOTE | --snp-report REPORT [--product Milan|Genoa|Turin])"
	    "...\n"
	    "    [--hash sha1,sha256,sha384]\nfetches "
	    "what the evidence, quotes and SNP reports need from the "
	    "configured\nupstreams (ocsp.upstreams, rim.upstreams, "
	    "pccs.upstreams, amd_kds.upstreams,\nelse the vendors') into the "
	    "cache directly.\n";
	struct evidence_manifest *m = NULL;
	struct tee_inputs	 tee;
	struct ctl_trust	 t;
	struct ctl_fetched	 cf;
	struct haul		 h;
	struct fetch_ups	 u;
	json_t			*coll = NULL;
	char			*files[CTL_MAX_LIST];
	size_t			 nfiles = 0;
	unsigned		 hashes = EVIDENCE_HASHES_DEFAULT;
	int			 rv;

	memset(&t, 0, sizeof(t));
	memset(&h, 0, sizeof(h));
	memset(&cf, 0, sizeof(cf));
	memset(&tee, 0, sizeof(tee));
	memset(&u, 0, sizeof(u));
	if ((rv = input_opts(argc, argv, usage, files, &nfiles, NULL,
	    &tee, &hashes)) != 0)
		return rv == -1 ? CTL_OK : rv;
	if ((rv = fetch_ups_defaults(ctl, &u)) != CTL_OK)
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
	if ((rv = ctl_trust_load(ctl, &t, 1)) != CTL_OK)
		goto out;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rv = fetch_all(ctl, &t, m, NULL, hashes, u.ocsp, u.nocsp, u.rim, u.nrim,
	    &h, "prefetch");
	if (rv == CTL_OK)
		rv = ctl_fetch_collateral(ctl, &t, coll, "prefetch", u.pccs,
		    u.npccs, u.kds, u.nkds, &cf);
	if (rv == CTL_OK)
		rv = haul_take(&h, &cf);
	curl_global_cleanup();
	progress_end(&h.prog);
	if (rv == CTL_OK) {
		haul_summary(&h, "prefetch");
		rv = prefetch_store(ctl, &h);
	}
 out:
	json_decref(coll);
	ctl_fetched_free(&cf);
	haul_free(&h);
	ctl_trust_free(&t);
	evidence_manifest_free(m);
	return rv;
}

/* ---- export-rim-store ----------------------------------------------------- */

int
cmd_export_rim_store(struct ctl *ctl, int argc, char **argv)
{
	struct rim_trust	*rt = NULL;
	struct rim_result	 r;
	struct ctl_ent		*e = NULL;
	struct cache_body	 b;
	char			 id[RIM_ID_MAX_CHARS + 1], path[4096];
	FILE			*f;
	size_t			 n, i, written = 0, bad = 0;
	int			 rv;

	if (argc != 2 || argv[1][0] == '-') {
		int	help = argc == 2 && (strcmp(argv[1], "--help") == 0 ||
		    strcmp(argv[1], "-h") == 0);

		fprintf(help ? stdout : stderr, "usage: staplectl [-C dir] "
		    "export-rim-store DIR\nwrites every cached RIM as DIR/{id}.xml "
		    "(the decoded document), for\nnvattest --rim-store DIR.\n");
		return help ? CTL_OK : CTL_USAGE;
	}
	if (mkdir(argv[1], 0755) == -1 && errno != EEXIST) {
		ctl_warnx("%s: %s", argv[1], strerror(errno));
		return CTL_NOFILE;
	}
	if ((rv = ctl_open_cache(ctl, 1)) != CTL_OK ||
	    (rv = ctl_collect(ctl, CACHE_KIND_RIM, &e, &n)) != CTL_OK)
		return rv;
	if ((rt = ctl_rim_trust(ctl)) == NULL) {
		free(e);
		return CTL_REJECTED;
	}
	for (i = 0; i < n; i++) {
		if (e[i].klen > RIM_ID_MAX_CHARS)
			continue;
		memcpy(id, e[i].key, e[i].klen);
		id[e[i].klen] = '\0';
		memset(&r, 0, sizeof(r));
		if (!rim_id_valid(id) || cache_get(ctl->cache, CACHE_KIND_RIM,
		    e[i].key, e[i].klen, NULL, &b) != 1 ||
		    rim_verify(rt, id, b.response, b.response_len, ctl->now,
		    &r) == -1) {
			ctl_warnx("%s: not exported: %s", id, r.detail[0] != '\0' ?
			    r.detail : "cannot read or not a RIM ID");
			rim_result_free(&r);
			bad++;
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s.xml", argv[1], id);
		if ((f = fopen(path, "wb")) != NULL &&
		    fwrite(r.xml, 1, r.xml_len, f) != r.xml_len) {
			fclose(f);
			f = NULL;
		}
		if (f == NULL || fclose(f) == EOF) {
			ctl_warnx("%s: %s", path, strerror(errno));
			bad++;
		} else
			written++;
		rim_result_free(&r);
	}
	rim_trust_free(rt);
	free(e);
	printf("wrote %zu RIM(s) to %s\n", written, argv[1]);
	return bad > 0 ? CTL_REJECTED : CTL_OK;
}
