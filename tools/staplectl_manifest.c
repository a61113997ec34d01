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

/* A manifest file into the model: CertIDs come back as requests, and the whole of it in *rootp. */
int
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
void
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
