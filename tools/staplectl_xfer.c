/* staplectl export, verify and import: bundles out of one cache and, verified again, into another. */
#include "config.h"

#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "attest/der.h"
#include "cache/store.h"
#include "entry/pool.h"
#include "tools/bundle.h"
#include "tools/staplectl.h"

#define GENERATOR	"staplectl " PACKAGE_VERSION

/* ---- export -------------------------------------------------------------- */

/* CA certificates to ship, deduplicated by digest. */
struct certset {
	uint8_t	**der;
	size_t	 *len;
	uint8_t	(*md)[32];
	size_t	  n, cap;
};

static int
certset_add(struct certset *s, const uint8_t *der, size_t len)
{
	uint8_t	md[32];
	void	*p;
	size_t	 i;

	if (len == 0 || len > BUNDLE_MAX_CERT_BYTES ||
	    EVP_Digest(der, len, md, NULL, EVP_sha256(), NULL) != 1)
		return -1;
	for (i = 0; i < s->n; i++)
		if (memcmp(s->md[i], md, sizeof(md)) == 0)
			return 0;
	if (s->n == s->cap) {
		s->cap = s->cap == 0 ? 16 : s->cap * 2;
		if ((p = realloc(s->der, s->cap * sizeof(*s->der))) == NULL)
			return -1;
		s->der = p;
		if ((p = realloc(s->len, s->cap * sizeof(*s->len))) == NULL)
			return -1;
		s->len = p;
		if ((p = realloc(s->md, s->cap * sizeof(*s->md))) == NULL)
			return -1;
		s->md = p;
	}
	if ((s->der[s->n] = malloc(len)) == NULL)
		return -1;
	memcpy(s->der[s->n], der, len);
	s->len[s->n] = len;
	memcpy(s->md[s->n], md, sizeof(md));
	s->n++;
	return 0;
}

static void
certset_free(struct certset *s)
{
	size_t	i;

	for (i = 0; i < s->n; i++)
		free(s->der[i]);
	free(s->der);
	free(s->len);
	free(s->md);
	memset(s, 0, sizeof(*s));
}

static int
certset_add_x509(struct certset *s, X509 *x)
{
	unsigned char	*der = NULL;
	int		 len, rv;

	/* Roots stay home: an importer trusts only its own anchors. */
	if (X509_check_ca(x) <= 0 ||
	    X509_check_issued(x, x) == X509_V_OK)
		return 0;
	if ((len = i2d_X509(x, &der)) <= 0)
		return -1;
	rv = certset_add(s, der, (size_t)len);
	OPENSSL_free(der);
	return rv;
}

static int
pool_export_cb(const char *name, const uint8_t *val, size_t len, void *arg)
{
	(void)name;
	certset_add(arg, val, len);
	return 0;
}

static void
export_usage(FILE *f)
{
	fprintf(f, "usage: staplectl [-C dir] [-f config] export [--kind "
	    "ocsp|rim|pccs|kds] [--out FILE]\nwrites a bundle (docs/bundle.md) "
	    "of the entries still valid (nextUpdate > now),\nwith the "
	    "intermediates they need; to stdout without --out.\n");
}

int
cmd_export(struct ctl *ctl, int argc, char **argv)
{
	static const struct option	opts[] = {
		{ "kind", required_argument, NULL, 'k' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct ctl_trust	 t;
	struct certset		 cs;
	struct ctl_output	 out;
	struct bundle_writer	*w = NULL;
	struct bundle_entry	 be;
	struct ctl_ent		*e = NULL;
	struct cache_body	 b;
	STACK_OF(X509)		*chain;
	enum cache_kind		 kind = 0;
	const char		*outpath = NULL;
	char			 subj[256];
	size_t			 n, i;
	int			 ch, rv, j;

	memset(&t, 0, sizeof(t));
	memset(&cs, 0, sizeof(cs));
	memset(&out, 0, sizeof(out));
	while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (ch) {
		case 'k':
			if ((kind = ctl_kind(optarg)) == 0) {
				ctl_warnx("--kind %s: not ocsp, rim, pccs or kds",
				    optarg);
				return CTL_USAGE;
			}
			break;
		case 'o':
			outpath = optarg;
			break;
		case 'h':
			export_usage(stdout);
			return CTL_OK;
		default:
			export_usage(stderr);
			return CTL_USAGE;
		}
	}
	if (optind != argc) {
		export_usage(stderr);
		return CTL_USAGE;
	}
	if ((rv = ctl_open_cache(ctl, 1)) != CTL_OK ||
	    (rv = ctl_trust_load(ctl, &t, 1)) != CTL_OK ||
	    (rv = ctl_collect(ctl, kind, &e, &n)) != CTL_OK)
		goto out;
	rv = CTL_NOFILE;
	if (ctl_output_open(&out, outpath) == -1) {
		ctl_warnx("%s: cannot create", outpath);
		goto out;
	}
	rv = CTL_REJECTED;
	if ((w = bundle_writer_new(out.f, ctl->now, GENERATOR)) == NULL)
		goto write_failed;
	for (i = 0; i < n; i++) {
		if (e[i].meta.next_update <= ctl->now)
			continue;	/* never carry what nobody may serve */
		if (cache_get(ctl->cache, e[i].kind, e[i].key, e[i].klen, NULL,
		    &b) != 1) {
			ctl_warnx("%s", cache_strerror(ctl->cache));
			continue;
		}
		memset(&be, 0, sizeof(be));
		be.kind = e[i].kind;
		memcpy(be.key, e[i].key, e[i].klen);
		be.klen = e[i].klen;
		be.request = (uint8_t *)b.request;
		be.request_len = b.request_len;
		be.response = (uint8_t *)b.response;
		be.response_len = b.response_len;
		be.headers = (uint8_t *)b.headers;
		be.headers_len = b.headers_len;
		be.this_update = e[i].meta.this_update;
		be.next_update = e[i].meta.next_update;
		be.produced_at = e[i].meta.produced_at;
		be.status = e[i].meta.status;
		snprintf(be.source, sizeof(be.source), "%s", e[i].meta.source);
		if (bundle_write_entry(w, &be) == -1)
			goto write_failed;
		if (e[i].kind != CACHE_KIND_OCSP)
			continue;
		/* The CAs between the responder and the anchor. */
		chain = ctl_ocsp_der_chain(&t, b.response, b.response_len);
		for (j = 0; chain != NULL && j < sk_X509_num(chain); j++)
			certset_add_x509(&cs, sk_X509_value(chain, j));
		sk_X509_pop_free(chain, X509_free);
	}
	/* And everything the cache has learned, for answers still to come. */
	entry_pool_walk(ctl->cache, pool_export_cb, &cs);
	for (i = 0; i < cs.n; i++) {
		const char	*why;
		X509		*x = der_x509(cs.der[i], cs.len[i], &why);

		subj[0] = '\0';
		if (x != NULL)
			ctl_x509_subject(x, subj, sizeof(subj));
		X509_free(x);
		if (bundle_write_cert(w, cs.der[i], cs.len[i],
		    subj[0] != '\0' ? subj : NULL) == -1)
			goto write_failed;
	}
	if (bundle_writer_end(w) == -1)
		goto write_failed;
	n = bundle_writer_entries(w);
	if (ctl_output_commit(&out) == -1)
		goto out;
	fprintf(stderr, "staplectl: exported %zu entr%s and %zu "
	    "certificate(s)%s%s\n", n, n == 1 ? "y" : "ies", cs.n,
	    outpath != NULL ? " to " : "", outpath != NULL ? outpath : "");
	rv = CTL_OK;
	goto out;
 write_failed:
	ctl_warnx("%s: write failed", outpath != NULL ? outpath : "stdout");
	ctl_output_abort(&out);
 out:
	bundle_writer_free(w);
	certset_free(&cs);
	ctl_trust_free(&t);
	free(e);
	return rv;
}

/* ---- verify and import ----------------------------------------------------- */

enum outcome { OUT_IMPORTED, OUT_KEPT, OUT_REJECTED, OUT_HELD, OUT_OK };
static const char *const outcome_str[] = {
	[OUT_IMPORTED] = "imported",
	[OUT_KEPT] = "kept",
	[OUT_REJECTED] = "rejected",
	[OUT_HELD] = "not imported",
	[OUT_OK] = "ok",
};

static void
report(struct ctl *ctl, json_t *arr, const struct bundle_entry *e,
    enum outcome o, const struct ctl_check *c, const char *why)
{
	char		 key[2 * CACHE_KEY_MAX_BYTES + 1], nu[32];
	const char	*st = NULL;
	json_t		*j;

	bundle_hex(key, e->key, e->klen);
	if (c->ok) {
		bundle_time_str(nu, c->meta.next_update);
		st = bundle_status_name(e->kind, c->meta.status);
	}
	if (arr != NULL) {
		j = json_pack("{s:s, s:s, s:s, s:I}", "result", outcome_str[o],
		    "kind", e->kind_name, "key", key, "line", (json_int_t)e->line);
		if (c->ok) {
			json_object_set_new(j, "next_update", json_string(nu));
			if (st != NULL)
				json_object_set_new(j, "status", json_string(st));
		}
		if (why != NULL && why[0] != '\0')
			json_object_set_new(j, "reason", json_string(why));
		json_array_append_new(arr, j);
		return;
	}
	(void)ctl;
	if (o == OUT_REJECTED || o == OUT_HELD || o == OUT_KEPT)
		printf("%s %s %s (line %zu): %s\n", outcome_str[o],
		    e->kind_name, key, e->line, why);
	else
		printf("%s %s %s %s nextUpdate %s\n", outcome_str[o],
		    e->kind_name, key, st != NULL ? st : "-", nu);
}

static void
xfer_usage(FILE *f, int import)
{
	if (import)
		fprintf(f, "usage: staplectl [-C dir] [-f config] [--json] "
		    "import [--allow-partial] FILE\nverifies every entry of the "
		    "bundle FILE against the anchors and rules stapled uses,\n"
		    "then stores them in one transaction. Without "
		    "--allow-partial, one rejected entry\nmeans nothing is "
		    "stored; with it, the valid entries are stored and the "
		    "exit\nstatus is 0. A truncated, corrupt or unknown-version "
		    "file is never imported.\n");
	else
		fprintf(f, "usage: staplectl [-C dir] [-f config] [--json] "
		    "verify FILE\nchecks a bundle as import would, and stores "
		    "nothing; one line per entry.\n");
}

/* The import's own metadata: a fresh idle clock, scheduled by the daemon. */
static void
import_meta(struct ctl *ctl, struct cache_meta *m, const char *path)
{
	char	*copy, *base;

	m->fetched_at = ctl->now;
	m->last_served_at = ctl->now;
	m->next_refresh_at = 0;
	m->refresh_failures = 0;
	m->served_count = 0;
	if ((copy = strdup(path)) != NULL) {
		base = basename(copy);
		snprintf(m->source, sizeof(m->source), "import:%s", base);
		free(copy);
	} else
		snprintf(m->source, sizeof(m->source), "import");
}

static int
xfer(struct ctl *ctl, int argc, char **argv, int import)
{
	static const struct option	opts[] = {
		{ "allow-partial", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct bundle		 bd;
	struct ctl_trust	 t;
	struct ctl_check	*chk = NULL;
	struct cache_put_item	*items = NULL;
	struct cache_meta	 old;
	struct cache_body	*bodies = NULL;
	const uint8_t		**cder = NULL;
	size_t			*clen = NULL;
	int			*cok = NULL;
	enum outcome		*outc = NULL;
	json_t			*arr = NULL, *root;
	int			*res = NULL;
	uint8_t			*buf = NULL;
	const char		*path;
	char			 err[512], why[400];
	size_t			 len, i, nput = 0, nrej = 0, nimp = 0, nkept = 0;
	size_t			 npool = 0;
	int			 ch, rv, partial = 0, rc;

	memset(&bd, 0, sizeof(bd));
	memset(&t, 0, sizeof(t));
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			if (!import) {
				xfer_usage(stderr, import);
				return CTL_USAGE;
			}
			partial = 1;
			break;
		case 'h':
			xfer_usage(stdout, import);
			return CTL_OK;
		default:
			xfer_usage(stderr, import);
			return CTL_USAGE;
		}
	}
	if (optind + 1 != argc) {
		xfer_usage(stderr, import);
		return CTL_USAGE;
	}
	path = argv[optind];
	if (ctl_read_file(path, BUNDLE_MAX_FILE_BYTES, &buf, &len, err,
	    sizeof(err)) == -1) {
		ctl_warnx("%s", err);
		return CTL_NOFILE;
	}
	/* The whole file is checked before anything is looked at. */
	if (bundle_parse(buf, len, &bd, err, sizeof(err)) == -1) {
		ctl_warnx("%s: refused, nothing %s: %s", path, import ?
		    "imported" : "verified", err);
		rv = CTL_REJECTED;
		goto out;
	}
	if (import) {
		if ((rv = ctl_open_cache(ctl, 0)) != CTL_OK)
			goto out;
	} else if (ctl_open_cache(ctl, 1) != CTL_OK)
		ctl_warnx("verifying without the cache's learned "
		    "intermediates");
	if ((rv = ctl_trust_load(ctl, &t, 1)) != CTL_OK)
		goto out;
	rv = CTL_REJECTED;
	if ((cder = calloc(bd.ncerts + 1, sizeof(*cder))) == NULL ||
	    (clen = calloc(bd.ncerts + 1, sizeof(*clen))) == NULL ||
	    (cok = calloc(bd.ncerts + 1, sizeof(*cok))) == NULL)
		goto out;
	for (i = 0; i < bd.ncerts; i++) {
		/* Untrusted: for building chains only. */
		ctl_trust_add_pool_der(&t, bd.certs[i].der, bd.certs[i].len);
		cder[i] = bd.certs[i].der;
		clen[i] = bd.certs[i].len;
	}
	t.peers = bd.entries;	/* a bundle's KDS cert_chains check its VCEKs */
	t.npeers = bd.nentries;
	if ((chk = calloc(bd.nentries + 1, sizeof(*chk))) == NULL ||
	    (outc = calloc(bd.nentries + 1, sizeof(*outc))) == NULL ||
	    (items = calloc(bd.nentries + 1, sizeof(*items))) == NULL ||
	    (bodies = calloc(bd.nentries + 1, sizeof(*bodies))) == NULL ||
	    (res = calloc(bd.nentries + 1, sizeof(*res))) == NULL) {
		ctl_warnx("out of memory");
		goto out;
	}
	for (i = 0; i < bd.nentries; i++) {
		if (!ctl_check_entry(ctl, &t, &bd.entries[i], ctl->now,
		    &chk[i])) {
			outc[i] = OUT_REJECTED;
			nrej++;
			continue;
		}
		outc[i] = import ? OUT_IMPORTED : OUT_OK;
	}
	if (import && nrej > 0 && !partial) {
		for (i = 0; i < bd.nentries; i++)
			if (outc[i] != OUT_REJECTED)
				outc[i] = OUT_HELD;
	} else if (import) {
		for (i = 0; i < bd.nentries; i++) {
			struct bundle_entry	*e = &bd.entries[i];

			if (outc[i] != OUT_IMPORTED)
				continue;
			/* What the cache holds already stays: keeps its schedule. */
			if (chk[i].keep_stored || (cache_get_meta(ctl->cache,
			    e->kind, e->key, e->klen, &old) == 1 && old.this_update >=
			    chk[i].meta.this_update)) {
				outc[i] = OUT_KEPT;
				continue;
			}
			import_meta(ctl, &chk[i].meta, path);
			bodies[i].request = e->request;
			bodies[i].request_len = e->request_len;
			bodies[i].response = e->response;
			bodies[i].response_len = e->response_len;
			bodies[i].headers = e->headers;
			bodies[i].headers_len = e->headers_len;
			items[nput].key = e->key;
			items[nput].klen = e->klen;
			items[nput].meta = &chk[i].meta;
			items[nput].body = &bodies[i];
			nput++;
		}
		if (cache_put_many(ctl->cache, items, nput, res) == -1) {
			ctl_warnx("%s: nothing imported: %s", path,
			    cache_strerror(ctl->cache));
			goto out;
		}
		for (i = 0, nput = 0; i < bd.nentries; i++)
			if (outc[i] == OUT_IMPORTED &&
			    res[nput++] == CACHE_PUT_KEPT)
				outc[i] = OUT_KEPT;
		/* The bundle's CAs the pool's rule admits join the cache's. */
		if (ocsp_trust_chaining_cas(t.ocsp, cder, clen, bd.ncerts,
		    cok) == -1)
			ctl_warnx("pool: out of memory");
		for (i = 0; i < bd.ncerts; i++) {
			if (!cok[i])
				continue;
			if ((rc = ctl_pool_store(ctl, bd.certs[i].der,
			    bd.certs[i].len)) == 1)
				npool++;
			else if (rc == -1)
				ctl_warnx("pool: %s", cache_strerror(ctl->cache));
		}
	}
	if (ctl->json)
		arr = json_array();
	for (i = 0; i < bd.nentries; i++) {
		why[0] = '\0';
		if (outc[i] == OUT_REJECTED)
			snprintf(why, sizeof(why), "%s", chk[i].reason);
		else if (outc[i] == OUT_HELD)
			snprintf(why, sizeof(why), "valid, but another entry "
			    "was rejected (--allow-partial imports the rest)");
		else if (outc[i] == OUT_KEPT)
			snprintf(why, sizeof(why), "the cache already holds "
			    "this answer or a newer one");
		if (outc[i] == OUT_IMPORTED)
			nimp++;
		if (outc[i] == OUT_KEPT)
			nkept++;
		report(ctl, arr, &bd.entries[i], outc[i], &chk[i], why);
	}
	if (arr != NULL) {
		root = json_pack("{s:s, s:o, s:I, s:I, s:I, s:I}", "file", path,
		    "entries", arr, "imported", (json_int_t)nimp, "kept",
		    (json_int_t)nkept, "rejected", (json_int_t)nrej,
		    "pool_added", (json_int_t)npool);
		json_dumpf(root, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(root);
	}
	if (import)
		fprintf(stderr, "staplectl: %s: %zu imported, %zu kept, %zu "
		    "rejected%s; %zu intermediate(s) added to the pool\n", path,
		    nimp, nkept, nrej, nrej > 0 && !partial ?
		    ": nothing stored" : "", npool);
	else
		fprintf(stderr, "staplectl: %s: %zu ok, %zu rejected, %zu "
		    "certificate(s)\n", path, bd.nentries - nrej, nrej,
		    bd.ncerts);
	rv = nrej > 0 && !partial ? CTL_REJECTED : CTL_OK;
 out:
	free(cder);
	free(clen);
	free(cok);
	ctl_trust_free(&t);
	bundle_free(&bd);
	free(buf);
	free(chk);
	free(outc);
	free(items);
	free(bodies);
	free(res);
	return rv;
}

int
cmd_verify(struct ctl *ctl, int argc, char **argv)
{
	return xfer(ctl, argc, argv, 0);
}

int
cmd_import(struct ctl *ctl, int argc, char **argv)
{
	return xfer(ctl, argc, argv, 1);
}
