/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl manifest: what hosts need, from their evidence, quotes, reports and RIM IDs; and a manifest read back for fetch. */
#include "config.h"

#include <sys/stat.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "attest/evidence.h"
#include "attest/json_stream.h"
#include "attest/keyset.h"
#include "attest/ocsp_req.h"
#include "attest/rim.h"
#include "attest/util.h"
#include "cache/store.h"
#include "entry/rim.h"
#include "tools/bundle.h"
#include "tools/staplectl.h"
#include "tools/staplectl_manifest.h"

#define MANIFEST_FORMAT		"stapled-manifest"
#define MANIFEST_VERSION	1
#define GENERATOR		"staplectl " PACKAGE_VERSION


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

int
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
int
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

/* --rim-id: each must be a RIM ID (entry/rim.h's charset and length). */
int
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
int
hash_opt(const char *arg, unsigned *hashes)
{
	char	err[256];

	if (evidence_hashes_parse(arg, hashes, err, sizeof(err)) == -1) {
		ctl_warnx("--hash %s", err);
		return CTL_USAGE;
	}
	return CTL_OK;
}

int
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
void
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

/*
 * A manifest written as it is made, a record at a time, laid out as
 * jansson's JSON_INDENT(2) lays out the whole: what it holds is never a
 * tree in memory, so a cache of any size makes one. The evidence's
 * CertID keys and RIM IDs are a digest set, so that the cache's entries
 * it names already are left out in constant time each.
 */
struct mwriter {
	FILE		*f;
	size_t		 n;		/* elements of the open list */
	int		 failed;
	struct keyset	 named;		/* the evidence's CertID keys, RIM IDs */
	size_t		 nocsp, nrim;
};

/* v's JSON, its lines after the first indented by `indent` more spaces. */
static void
mw_value(struct mwriter *w, const json_t *v, const char *indent)
{
	char	*s, *p;

	if ((s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY)) == NULL) {
		w->failed = 1;
		return;
	}
	for (p = s; *p != '\0'; p++)
		if (*p == '\n')
			fprintf(w->f, "\n%s", indent);
		else
			fputc(*p, w->f);
	free(s);
}

/* A member's name, its ':' and v. */
static void
mw_member(struct mwriter *w, const char *name, const json_t *v, int first)
{
	json_t	*k = json_string(name);

	fputs(first ? "{\n  " : ",\n  ", w->f);
	mw_value(w, k, "");
	fputs(": ", w->f);
	mw_value(w, v, "  ");
	json_decref(k);
}

static void
mw_open(struct mwriter *w, const char *name)
{
	json_t	*k = json_string(name);

	fputs(",\n  ", w->f);
	mw_value(w, k, "");
	fputs(": [", w->f);
	json_decref(k);
	w->n = 0;
}

/* One element of the open list; v's reference is taken. */
static void
mw_element(struct mwriter *w, json_t *v)
{
	if (v == NULL) {
		w->failed = 1;
		return;
	}
	fputs(w->n++ > 0 ? ",\n    " : "\n    ", w->f);
	mw_value(w, v, "    ");
	json_decref(v);
}

static void
mw_close(struct mwriter *w)
{
	fputs(w->n > 0 ? "\n  ]" : "]", w->f);
}

/* A CertID key or a RIM ID into the set of those the evidence named. 1 named already, 0 not, -1. */
static int
mw_name(struct mwriter *w, const void *p, size_t len, int add)
{
	const void	*part[] = { p };
	size_t		 lens[] = { len };
	uint8_t		 md[KEYSET_MD_BYTES];

	if (keyset_md(md, part, lens, 1) == -1)
		return -1;
	if (!add)
		return keyset_get(&w->named, md, NULL);
	return keyset_put(&w->named, md, 0, NULL) == -1 ? -1 : 0;
}

/* A chunk of the cache's OCSP entries the evidence did not name (ctl_chunk_fn). */
static int
mw_cached_ocsp(struct ctl *ctl, const struct ctl_ent *e, size_t n, void *arg)
{
	struct mwriter		*w = arg;
	struct cache_body	 b;
	size_t			 i;

	for (i = 0; i < n; i++) {
		if (e[i].klen != OCSP_KEY_BYTES ||
		    mw_name(w, e[i].key, e[i].klen, 0) != 0 ||
		    cache_get(ctl->cache, e[i].kind, e[i].key, e[i].klen, NULL,
		    &b) != 1 || b.request_len == 0)
			continue;
		mw_element(w, certid_json(e[i].key, b.request, b.request_len,
		    NULL, "cache"));
		w->nocsp++;
	}
	return CTL_OK;
}

/* A chunk of the cache's RIM entries the evidence did not name (ctl_chunk_fn). */
static int
mw_cached_rim(struct ctl *ctl, const struct ctl_ent *e, size_t n, void *arg)
{
	struct mwriter	*w = arg;
	char		 id[RIM_ID_MAX_CHARS + 1];
	size_t		 i;

	(void)ctl;
	for (i = 0; i < n; i++) {
		if (e[i].klen > RIM_ID_MAX_CHARS)
			continue;
		memcpy(id, e[i].key, e[i].klen);
		id[e[i].klen] = '\0';
		if (!rim_id_valid(id) || mw_name(w, id, e[i].klen, 0) != 0)
			continue;
		mw_element(w, json_string(id));
		w->nrim++;
	}
	return CTL_OK;
}

/*
 * The lists: the evidence's CertIDs, RIM IDs and CAs, each followed by
 * what the site already relies on (the cache's own entries, when it
 * opens), then the collateral members of coll.
 */
static void
mw_lists(struct ctl *ctl, struct mwriter *w, const struct evidence_manifest *m,
    json_t *coll)
{
	const char	*name;
	json_t		*c, *v;
	size_t		 i;
	int		 cached;

	cached = ctl->cache != NULL || ctl_open_cache(ctl, 1) == CTL_OK;
	mw_open(w, "ocsp");
	for (i = 0; i < m->ncertids; i++, w->nocsp++) {
		mw_element(w, certid_json(m->certids[i].key, m->certids[i].req,
		    m->certids[i].req_len, m->certids[i].subject,
		    evidence_chain_type_str[m->certids[i].chain]));
		if (mw_name(w, m->certids[i].key, OCSP_KEY_BYTES, 1) == -1)
			w->failed = 1;
	}
	if (cached)
		(void)ctl_walk_chunks(ctl, CACHE_KIND_OCSP, mw_cached_ocsp, w);
	mw_close(w);
	mw_open(w, "rim");
	for (i = 0; i < m->nrim_ids; i++, w->nrim++) {
		mw_element(w, json_string(m->rim_ids[i]));
		if (mw_name(w, m->rim_ids[i], strlen(m->rim_ids[i]), 1) == -1)
			w->failed = 1;
	}
	if (cached)
		(void)ctl_walk_chunks(ctl, CACHE_KIND_RIM, mw_cached_rim, w);
	mw_close(w);
	mw_open(w, "certs");
	for (i = 0; i < m->ncas; i++) {
		c = json_object();
		b64_put(c, "der", m->ca_der[i], m->ca_len[i]);
		mw_element(w, json_incref(json_object_get(c, "der")));
		json_decref(c);
	}
	mw_close(w);
	json_object_foreach(coll, name, v)
		mw_member(w, name, v, 0);
}

/*
 * The manifest to outpath (stdout without it): a CTL_* code. Nothing is
 * left at outpath unless all of it was written.
 */
static int
manifest_write(struct ctl *ctl, const struct evidence_manifest *m,
    json_t *coll, const char *outpath, size_t *nocsp, size_t *nrim)
{
	struct ctl_output	 out;
	struct mwriter		 w;
	json_t			*v;
	char			 tb[32];

	memset(&out, 0, sizeof(out));
	memset(&w, 0, sizeof(w));
	if (ctl_output_open(&out, outpath) == -1)
		return CTL_NOFILE;
	w.f = out.f;
	bundle_time_str(tb, ctl->now);
	mw_member(&w, "format", v = json_string(MANIFEST_FORMAT), 1);
	json_decref(v);
	mw_member(&w, "version", v = json_integer(MANIFEST_VERSION), 0);
	json_decref(v);
	mw_member(&w, "created", v = json_string(tb), 0);
	json_decref(v);
	mw_member(&w, "generator", v = json_string(GENERATOR), 0);
	json_decref(v);
	mw_lists(ctl, &w, m, coll);
	fputs("\n}\n", w.f);
	keyset_free(&w.named);
	*nocsp = w.nocsp;
	*nrim = w.nrim;
	if (w.failed || ferror(w.f)) {
		ctl_warnx("%s: write failed", outpath != NULL ? outpath :
		    "stdout");
		ctl_output_abort(&out);
		return CTL_REJECTED;
	}
	return ctl_output_commit(&out) == 0 ? CTL_OK : CTL_REJECTED;
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
	json_t			*coll = NULL;
	const char		*outpath = NULL;
	char			*files[CTL_MAX_LIST];
	size_t			 nfiles = 0, nocsp = 0, nrim = 0;
	unsigned		 hashes = EVIDENCE_HASHES_DEFAULT;
	int			 rv;

	memset(&tee, 0, sizeof(tee));
	if ((rv = input_opts(argc, argv, usage, files, &nfiles, &outpath,
	    &tee, &hashes)) != 0)
		return rv == -1 ? CTL_OK : rv;
	if ((m = evidence_manifest_new()) == NULL ||
	    (coll = json_object()) == NULL) {
		rv = CTL_REJECTED;
		goto out;
	}
	m->hashes = hashes;
	if ((rv = load_inputs(m, files, nfiles)) != CTL_OK ||
	    (rv = add_rim_ids(m, &tee)) != CTL_OK)
		goto out;
	learn_cas(ctl, m);
	if ((rv = ctl_manifest_collateral(ctl, coll, tee.quotes, tee.nquotes,
	    tee.reports, tee.nreports, tee.product, 1)) != CTL_OK ||
	    (rv = manifest_write(ctl, m, coll, outpath, &nocsp, &nrim)) !=
	    CTL_OK)
		goto out;
	fprintf(stderr, "staplectl: manifest: %zu device(s), %zu CertID(s), "
	    "%zu RIM ID(s), %zu PCCS and %zu KDS path(s)\n", m->ndevices,
	    nocsp, nrim, json_array_size(json_object_get(coll, "pccs")),
	    json_array_size(json_object_get(coll, "kds")));
 out:
	json_decref(coll);
	evidence_manifest_free(m);
	return rv;
}

/* ---- a manifest read back, a record at a time ----------------------------- */

/* jstream_read_fn over a FILE. */
static size_t
manifest_fread(void *arg, uint8_t *buf, size_t len)
{
	return fread(buf, 1, len, arg);
}

/* One "ocsp" record into in->ocsp, parsed; one that does not parse is kept as refused (said). */
static int
manifest_record(struct manifest_in *in, json_t *v, size_t i)
{
	struct listed	*l;
	struct ocsp_req	 req;
	const char	*why, *named;
	char		 have[32];
	uint8_t		 md[KEYSET_MD_BYTES], hh;
	const void	*part[2];
	size_t		 len[2], k;
	void		*p;

	if (in->nocsp == in->capocsp) {
		in->capocsp = in->capocsp == 0 ? 1024 : in->capocsp * 2;
		if ((p = realloc(in->ocsp, in->capocsp * sizeof(*in->ocsp))) ==
		    NULL)
			return -1;
		in->ocsp = p;
	}
	l = &in->ocsp[in->nocsp++];
	memset(l, 0, sizeof(*l));
	l->hash = -1;
	if (b64_get(json_object_get(v, "request"), &l->raw, &l->rawlen) == -1 ||
	    ocsp_req_parse(l->raw, l->rawlen, &req, &why) == -1) {
		ctl_warnx("manifest: ocsp[%zu]: request does not parse", i);
		goto bad;
	}
	/* Absent in manifests of older staplectl: the request says. */
	evidence_req_hash_name(&req, have, sizeof(have));
	if ((named = json_string_value(json_object_get(v, "hash"))) != NULL &&
	    strcmp(named, have) != 0) {
		ctl_warnx("manifest: ocsp[%zu]: \"hash\" is %s but its request "
		    "asks with %s", i, named, have);
		goto bad;
	}
	l->hash = evidence_certid_hash(&req.certids[0]);
	for (k = 1; k < req.ncertids; k++)
		if (evidence_certid_hash(&req.certids[k]) != l->hash)
			l->hash = -1;
	l->single = req.ncertids == 1;
	if (l->hash < 0)
		return 0;
	/* What listed_as asks: is this serial listed in this hash? */
	hh = (uint8_t)l->hash;
	part[0] = &hh;
	len[0] = 1;
	part[1] = req.certids[0].serial;
	len[1] = req.certids[0].serial_len;
	if (keyset_md(md, part, len, 2) == -1 ||
	    keyset_put(&in->serials, md, in->nocsp - 1, NULL) == -1)
		return -1;
	return 0;
 bad:
	free(l->raw);
	l->raw = NULL;
	return 0;
}

int
manifest_listed_as(const struct manifest_in *in, const uint8_t *serial,
    size_t serial_len, unsigned hh)
{
	uint8_t		 md[KEYSET_MD_BYTES], h = (uint8_t)hh;
	const void	*part[] = { &h, serial };
	size_t		 len[] = { 1, serial_len };

	return keyset_md(md, part, len, 2) == 0 &&
	    keyset_get(&in->serials, md, NULL);
}

/* One "certs" element into in->cert, decoded; one that is no base64 certificate is said. */
static int
manifest_cert(struct manifest_in *in, json_t *v, size_t i, const char *path)
{
	uint8_t	*der;
	size_t	 len;
	void	*p;

	if (b64_get(v, &der, &len) == -1 || len == 0 ||
	    len > BUNDLE_MAX_CERT_BYTES) {
		ctl_warnx("%s: certs[%zu]: not a base64 certificate", path, i);
		free(der);
		return 0;
	}
	if (in->ncerts == in->capcerts) {
		in->capcerts = in->capcerts == 0 ? 16 : in->capcerts * 2;
		if ((p = realloc(in->cert, in->capcerts * sizeof(*in->cert))) ==
		    NULL) {
			free(der);
			return -1;
		}
		in->cert = p;
		if ((p = realloc(in->certlen, in->capcerts *
		    sizeof(*in->certlen))) == NULL) {
			free(der);
			return -1;
		}
		in->certlen = p;
	}
	in->cert[in->ncerts] = der;
	in->certlen[in->ncerts++] = len;
	return 0;
}

/* What to do with one element of a member's array. */
enum manifest_list { LIST_OCSP, LIST_RIM, LIST_CERTS, LIST_COLL };

/* One element of the array `what` (name) into in and m. 0, or -1 (out of memory). */
static int
manifest_element(struct manifest_in *in, struct evidence_manifest *m,
    enum manifest_list what, const char *name, json_t *v, size_t i,
    const char *path)
{
	switch (what) {
	case LIST_OCSP:
		return manifest_record(in, v, i);
	case LIST_RIM:
		if (!json_is_string(v) ||
		    evidence_manifest_add_rim_id(m, json_string_value(v)) == -1)
			ctl_warnx("%s: rim[%zu]: not a RIM ID", path, i);
		return 0;
	case LIST_CERTS:
		return manifest_cert(in, v, i, path);
	case LIST_COLL:
		return json_array_append(json_object_get(in->coll, name), v);
	}
	return 0;
}

/*
 * A member's array, an element at a time; a value that is not an array
 * is passed over (as a reader of the whole tree found no elements in
 * it). 0, or -1 (said).
 */
static int
manifest_list(struct jstream *js, struct manifest_in *in,
    struct evidence_manifest *m, enum manifest_list what, const char *name,
    const char *path)
{
	json_t	*v;
	size_t	 i;
	int	 first = 1, r;

	if (what == LIST_COLL && json_object_set_new(in->coll, name,
	    json_array()) == -1)
		goto oom;
	if (jstream_peek(js) != '[') {
		if (jstream_skip(js) == -1)
			goto bad;
		return 0;
	}
	if (jstream_expect(js, '[') == -1)
		goto bad;
	for (i = 0; (r = jstream_element(js, &first)) == 1; i++) {
		if ((v = jstream_value(js, MANIFEST_MAX_ELEMENT_BYTES,
		    JSON_REJECT_DUPLICATES)) == NULL)
			goto bad;
		r = manifest_element(in, m, what, name, v, i, path);
		json_decref(v);
		if (r == -1)
			goto oom;
	}
	if (r == 0)
		return 0;
 bad:
	ctl_warnx("%s: %s", path, jstream_error(js));
	return -1;
 oom:
	ctl_warnx("%s: out of memory", path);
	return -1;
}

/* A member of the manifest's object: its format, version and lists read, any other passed over. 0, or -1 (said). */
static int
manifest_member(struct jstream *js, struct manifest_in *in,
    struct evidence_manifest *m, const char *name, int *format_ok,
    int *version_ok, const char *path)
{
	json_t	*v;

	if (strcmp(name, "format") == 0 || strcmp(name, "version") == 0) {
		if ((v = jstream_value(js, MANIFEST_MAX_ELEMENT_BYTES, 0)) ==
		    NULL) {
			ctl_warnx("%s: %s", path, jstream_error(js));
			return -1;
		}
		if (name[0] == 'f')
			*format_ok = json_is_string(v) &&
			    strcmp(json_string_value(v), MANIFEST_FORMAT) == 0;
		else
			*version_ok = json_is_integer(v) &&
			    json_integer_value(v) == MANIFEST_VERSION;
		json_decref(v);
		return 0;
	}
	if (strcmp(name, "ocsp") == 0)
		return manifest_list(js, in, m, LIST_OCSP, name, path);
	if (strcmp(name, "rim") == 0)
		return manifest_list(js, in, m, LIST_RIM, name, path);
	if (strcmp(name, "certs") == 0)
		return manifest_list(js, in, m, LIST_CERTS, name, path);
	if (strcmp(name, "pccs") == 0 || strcmp(name, "kds") == 0)
		return manifest_list(js, in, m, LIST_COLL, name, path);
	if (jstream_skip(js) == -1) {
		ctl_warnx("%s: %s", path, jstream_error(js));
		return -1;
	}
	return 0;
}

/* The manifest's object, member by member; a name given twice is refused. 0, or -1 (said). */
static int
manifest_object(struct jstream *js, struct manifest_in *in,
    struct evidence_manifest *m, int *format_ok, int *version_ok,
    const char *path)
{
	struct keyset	 names;
	char		 name[JSTREAM_NAME_BYTES];
	const void	*part[1];
	size_t		 len[1];
	uint8_t		 md[KEYSET_MD_BYTES];
	int		 first = 1, r, rv = -1;

	memset(&names, 0, sizeof(names));
	if (jstream_expect(js, '{') == -1)
		goto bad;
	while ((r = jstream_member(js, &first, name)) == 1) {
		part[0] = name;
		len[0] = strlen(name);
		if (keyset_md(md, part, len, 1) == -1 ||
		    (r = keyset_put(&names, md, 0, NULL)) == -1) {
			ctl_warnx("%s: out of memory", path);
			goto out;
		}
		if (r == 0) {
			ctl_warnx("%s:%zu: duplicate object key \"%s\"", path,
			    jstream_line(js), name);
			goto out;
		}
		if (manifest_member(js, in, m, name, format_ok, version_ok,
		    path) == -1)
			goto out;
	}
	if (r == 0 && jstream_end(js) == 0) {
		rv = 0;
		goto out;
	}
 bad:
	ctl_warnx("%s: %s", path, jstream_error(js));
 out:
	keyset_free(&names);
	return rv;
}

int
read_manifest(const char *path, struct evidence_manifest *m,
    struct manifest_in *in)
{
	struct jstream	*js = NULL;
	FILE		*f;
	char		 err[512];
	int		 format_ok = 0, version_ok = 0, rv = CTL_REJECTED;

	memset(in, 0, sizeof(*in));
	if ((f = ctl_open_input(path, err, sizeof(err))) == NULL) {
		ctl_warnx("%s", err);
		return CTL_NOFILE;
	}
	if ((in->coll = json_object()) == NULL ||
	    (js = jstream_reader(manifest_fread, f)) == NULL) {
		ctl_warnx("%s: out of memory", path);
		goto out;
	}
	if (manifest_object(js, in, m, &format_ok, &version_ok, path) == -1)
		goto out;
	if (ferror(f)) {
		ctl_warnx("%s: read error", path);
		rv = CTL_NOFILE;
		goto out;
	}
	if (!format_ok || !version_ok) {
		ctl_warnx("%s: not a version-%d stapled manifest", path,
		    MANIFEST_VERSION);
		goto out;
	}
	rv = CTL_OK;
 out:
	jstream_free(js);
	if (f != stdin)
		fclose(f);
	return rv;
}

void
manifest_in_free(struct manifest_in *in)
{
	size_t	i;

	for (i = 0; i < in->nocsp; i++)
		free(in->ocsp[i].raw);
	for (i = 0; i < in->ncerts; i++)
		free(in->cert[i]);
	free(in->ocsp);
	free(in->cert);
	free(in->certlen);
	keyset_free(&in->serials);
	json_decref(in->coll);
	memset(in, 0, sizeof(*in));
}

/*
 * The manifest's "certs" (the CAs in the evidence it was made from) join
 * fetch's pool by the pool's rule, so the answers for a family whose
 * CAs are not compiled in verify here too. Untrusted: one that does not
 * decode (said as it was read) or chain is left out, and said.
 */
void
manifest_cas(struct ctl *ctl, struct ctl_trust *t,
    const struct manifest_in *in, const char *path)
{
	int	got;

	if (in->ncerts == 0)
		return;
	if ((got = ctl_learn_cas(ctl, t, (const uint8_t *const *)in->cert,
	    in->certlen, in->ncerts, 0)) >= 0 && (size_t)got < in->ncerts)
		ctl_warnx("%s: %zu of %zu certs do not chain to an anchor: not "
		    "used", path, in->ncerts - (size_t)got, in->ncerts);
}
