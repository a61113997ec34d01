/* SPDX-License-Identifier: Apache-2.0 */
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

/* The command line: *kind (0: all) and *outpath. -1 to go on, else the exit code. */
static int
export_opts(int argc, char **argv, enum cache_kind *kind, const char **outpath)
{
	static const struct option	opts[] = {
		{ "kind", required_argument, NULL, 'k' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int	ch;

	while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (ch) {
		case 'k':
			if ((*kind = ctl_kind(optarg)) == 0) {
				ctl_warnx("--kind %s: not ocsp, rim, pccs or kds",
				    optarg);
				return CTL_USAGE;
			}
			break;
		case 'o':
			*outpath = optarg;
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
	return -1;
}

/* One stored entry as a bundle entry (borrowing b's bytes). */
static int
export_entry(struct bundle_writer *w, const struct ctl_ent *e,
    const struct cache_body *b)
{
	struct bundle_entry	be;

	memset(&be, 0, sizeof(be));
	be.kind = e->kind;
	memcpy(be.key, e->key, e->klen);
	be.klen = e->klen;
	be.request = (uint8_t *)b->request;
	be.request_len = b->request_len;
	be.response = (uint8_t *)b->response;
	be.response_len = b->response_len;
	be.headers = (uint8_t *)b->headers;
	be.headers_len = b->headers_len;
	be.this_update = e->meta.this_update;
	be.next_update = e->meta.next_update;
	be.produced_at = e->meta.produced_at;
	be.status = e->meta.status;
	snprintf(be.source, sizeof(be.source), "%s", e->meta.source);
	return bundle_write_entry(w, &be);
}

/*
 * The n entries still valid, and into cs the CAs between each OCSP
 * responder and its anchor. 0, or -1 when writing failed.
 */
static int
export_entries(struct ctl *ctl, struct ctl_trust *t, struct bundle_writer *w,
    const struct ctl_ent *e, size_t n, struct certset *cs)
{
	struct cache_body	 b;
	STACK_OF(X509)		*chain;
	size_t			 i;
	int			 j;

	for (i = 0; i < n; i++) {
		if (e[i].meta.next_update <= ctl->now)
			continue;	/* never carry what nobody may serve */
		if (cache_get(ctl->cache, e[i].kind, e[i].key, e[i].klen, NULL,
		    &b) != 1) {
			ctl_warnx("%s", cache_strerror(ctl->cache));
			continue;
		}
		if (export_entry(w, &e[i], &b) == -1)
			return -1;
		if (e[i].kind != CACHE_KIND_OCSP)
			continue;
		/* The CAs between the responder and the anchor. */
		chain = ctl_ocsp_der_chain(t, b.response, b.response_len);
		for (j = 0; chain != NULL && j < sk_X509_num(chain); j++)
			certset_add_x509(cs, sk_X509_value(chain, j));
		sk_X509_pop_free(chain, X509_free);
	}
	return 0;
}

/* The certificates of cs, each with its subject. 0, or -1 when writing failed. */
static int
export_certs(struct bundle_writer *w, const struct certset *cs)
{
	const char	*why;
	X509		*x;
	char		 subj[256];
	size_t		 i;

	for (i = 0; i < cs->n; i++) {
		x = der_x509(cs->der[i], cs->len[i], &why);
		subj[0] = '\0';
		if (x != NULL)
			ctl_x509_subject(x, subj, sizeof(subj));
		X509_free(x);
		if (bundle_write_cert(w, cs->der[i], cs->len[i],
		    subj[0] != '\0' ? subj : NULL) == -1)
			return -1;
	}
	return 0;
}

int
cmd_export(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_trust	 t;
	struct certset		 cs;
	struct ctl_output	 out;
	struct bundle_writer	*w = NULL;
	struct ctl_ent		*e = NULL;
	enum cache_kind		 kind = 0;
	const char		*outpath = NULL;
	size_t			 n;
	int			 rv;

	memset(&t, 0, sizeof(t));
	memset(&cs, 0, sizeof(cs));
	memset(&out, 0, sizeof(out));
	if ((rv = export_opts(argc, argv, &kind, &outpath)) != -1)
		return rv;
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
	if ((w = bundle_writer_new(out.f, ctl->now, GENERATOR)) == NULL ||
	    export_entries(ctl, &t, w, e, n, &cs) == -1)
		goto write_failed;
	/* And everything the cache has learned, for answers still to come. */
	entry_pool_walk(ctl->cache, pool_export_cb, &cs);
	if (export_certs(w, &cs) == -1 || bundle_writer_end(w) == -1)
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
	/* Kept from eviction until a client asks for it (design.md 8.9). */
	m->flags |= CACHE_F_IMPORTED;
	if ((copy = strdup(path)) != NULL) {
		base = basename(copy);
		snprintf(m->source, sizeof(m->source), "import:%s", base);
		free(copy);
	} else
		snprintf(m->source, sizeof(m->source), "import");
}

/* One verify or import: the bundle, what each entry came to, and the counts. */
struct xfer {
	struct ctl		*ctl;
	int			 import;
	int			 partial;	/* --allow-partial */
	const char		*path;
	uint8_t			*buf;
	struct bundle		 bd;
	struct ctl_trust	 t;
	const uint8_t		**cder;		/* the bundle's certificates */
	size_t			*clen;
	int			*cok;		/* ... that the pool's rule admits */
	struct ctl_check	*chk;		/* per entry */
	enum outcome		*outc;
	struct cache_put_item	*items;		/* what import stores */
	struct cache_body	*bodies;
	int			*res;
	size_t			 nput, nrej, nimp, nkept, npool;
};

/* The command line into x. -1 to go on, else the exit code (usage said). */
static int
xfer_opts(struct xfer *x, int argc, char **argv)
{
	static const struct option	opts[] = {
		{ "allow-partial", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int	ch;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			if (!x->import) {
				xfer_usage(stderr, x->import);
				return CTL_USAGE;
			}
			x->partial = 1;
			break;
		case 'h':
			xfer_usage(stdout, x->import);
			return CTL_OK;
		default:
			xfer_usage(stderr, x->import);
			return CTL_USAGE;
		}
	}
	if (optind + 1 != argc) {
		xfer_usage(stderr, x->import);
		return CTL_USAGE;
	}
	x->path = argv[optind];
	return -1;
}

/*
 * Read and parse the bundle, open the cache (read-only to verify, where
 * failing only costs the learned intermediates) and load the anchors.
 * CTL_OK, or the exit code with the reason said.
 */
static int
xfer_read(struct xfer *x)
{
	char	err[512];
	size_t	len;
	int	rv;

	if (ctl_read_file(x->path, BUNDLE_MAX_FILE_BYTES, &x->buf, &len, err,
	    sizeof(err)) == -1) {
		ctl_warnx("%s", err);
		return CTL_NOFILE;
	}
	/* The whole file is checked before anything is looked at. */
	if (bundle_parse(x->buf, len, &x->bd, err, sizeof(err)) == -1) {
		ctl_warnx("%s: refused, nothing %s: %s", x->path, x->import ?
		    "imported" : "verified", err);
		return CTL_REJECTED;
	}
	if (x->import) {
		if ((rv = ctl_open_cache(x->ctl, 0)) != CTL_OK)
			return rv;
	} else if (ctl_open_cache(x->ctl, 1) != CTL_OK)
		ctl_warnx("verifying without the cache's learned "
		    "intermediates");
	return ctl_trust_load(x->ctl, &x->t, 1);
}

/*
 * The per-certificate and per-entry arrays; the bundle's certificates
 * join the trust as untrusted chain material. 0, or -1 when out of memory
 * (said only for the per-entry arrays, as before).
 */
static int
xfer_alloc(struct xfer *x)
{
	size_t	nc = x->bd.ncerts + 1, ne = x->bd.nentries + 1, i;

	if ((x->cder = calloc(nc, sizeof(*x->cder))) == NULL ||
	    (x->clen = calloc(nc, sizeof(*x->clen))) == NULL ||
	    (x->cok = calloc(nc, sizeof(*x->cok))) == NULL)
		return -1;
	for (i = 0; i < x->bd.ncerts; i++) {
		/* Untrusted: for building chains only. */
		ctl_trust_add_pool_der(&x->t, x->bd.certs[i].der,
		    x->bd.certs[i].len);
		x->cder[i] = x->bd.certs[i].der;
		x->clen[i] = x->bd.certs[i].len;
	}
	x->t.peers = x->bd.entries;	/* a bundle's KDS cert_chains check its VCEKs */
	x->t.npeers = x->bd.nentries;
	if ((x->chk = calloc(ne, sizeof(*x->chk))) == NULL ||
	    (x->outc = calloc(ne, sizeof(*x->outc))) == NULL ||
	    (x->items = calloc(ne, sizeof(*x->items))) == NULL ||
	    (x->bodies = calloc(ne, sizeof(*x->bodies))) == NULL ||
	    (x->res = calloc(ne, sizeof(*x->res))) == NULL) {
		ctl_warnx("out of memory");
		return -1;
	}
	return 0;
}

/* Verify every entry; without --allow-partial one rejection holds the rest. */
static void
xfer_check(struct xfer *x)
{
	size_t	i;

	for (i = 0; i < x->bd.nentries; i++) {
		if (!ctl_check_entry(x->ctl, &x->t, &x->bd.entries[i],
		    x->ctl->now, &x->chk[i])) {
			x->outc[i] = OUT_REJECTED;
			x->nrej++;
			continue;
		}
		x->outc[i] = x->import ? OUT_IMPORTED : OUT_OK;
	}
	if (x->import && x->nrej > 0 && !x->partial)
		for (i = 0; i < x->bd.nentries; i++)
			if (x->outc[i] != OUT_REJECTED)
				x->outc[i] = OUT_HELD;
}

/* Import: the entries to store (x->items), those the cache has newer are kept. */
static void
xfer_plan(struct xfer *x)
{
	struct bundle_entry	*e;
	struct cache_meta	 old;
	size_t			 i;

	for (i = 0; i < x->bd.nentries; i++) {
		e = &x->bd.entries[i];
		if (x->outc[i] != OUT_IMPORTED)
			continue;
		/* What the cache holds already stays: keeps its schedule. */
		if (x->chk[i].keep_stored || (cache_get_meta(x->ctl->cache,
		    e->kind, e->key, e->klen, &old) == 1 && old.this_update >=
		    x->chk[i].meta.this_update)) {
			x->outc[i] = OUT_KEPT;
			continue;
		}
		import_meta(x->ctl, &x->chk[i].meta, x->path);
		x->bodies[i].request = e->request;
		x->bodies[i].request_len = e->request_len;
		x->bodies[i].response = e->response;
		x->bodies[i].response_len = e->response_len;
		x->bodies[i].headers = e->headers;
		x->bodies[i].headers_len = e->headers_len;
		x->items[x->nput].key = e->key;
		x->items[x->nput].klen = e->klen;
		x->items[x->nput].meta = &x->chk[i].meta;
		x->items[x->nput].body = &x->bodies[i];
		x->nput++;
	}
}

/*
 * Import: store the planned entries in one transaction, then the
 * bundle's CAs the pool's rule admits. 0, or the exit code when nothing
 * could be stored (said): CTL_LATER when the cache cannot take the bundle
 * now (a full map or disk, an I/O error, a lock file not shared), so the
 * bundle is kept for a later run; else CTL_REJECTED.
 */
static int
xfer_store(struct xfer *x)
{
	struct ctl	*ctl = x->ctl;
	size_t		 i, k;
	int		 rc;

	if (cache_put_many(ctl->cache, x->items, x->nput, x->res) == -1) {
		ctl_warnx("%s: nothing imported: %s", x->path,
		    cache_strerror(ctl->cache));
		return cache_cause_later(cache_cause(ctl->cache)) ? CTL_LATER :
		    CTL_REJECTED;
	}
	for (i = 0, k = 0; i < x->bd.nentries; i++)
		if (x->outc[i] == OUT_IMPORTED && x->res[k++] == CACHE_PUT_KEPT)
			x->outc[i] = OUT_KEPT;
	/* The bundle's CAs the pool's rule admits join the cache's. */
	if (ocsp_trust_chaining_cas(x->t.ocsp, x->cder, x->clen, x->bd.ncerts,
	    x->cok) == -1)
		ctl_warnx("pool: out of memory");
	for (i = 0; i < x->bd.ncerts; i++) {
		if (!x->cok[i])
			continue;
		if ((rc = ctl_pool_store(ctl, x->bd.certs[i].der,
		    x->bd.certs[i].len)) == 1)
			x->npool++;
		else if (rc == -1)
			ctl_warnx("pool: %s", cache_strerror(ctl->cache));
	}
	return 0;
}

/* One line (or JSON object, into arr) per entry, counting what came of each. */
static void
xfer_report_entries(struct xfer *x, json_t *arr)
{
	char	why[400];
	size_t	i;

	for (i = 0; i < x->bd.nentries; i++) {
		why[0] = '\0';
		if (x->outc[i] == OUT_REJECTED)
			snprintf(why, sizeof(why), "%s", x->chk[i].reason);
		else if (x->outc[i] == OUT_HELD)
			snprintf(why, sizeof(why), "valid, but another entry "
			    "was rejected (--allow-partial imports the rest)");
		else if (x->outc[i] == OUT_KEPT)
			snprintf(why, sizeof(why), "the cache already holds "
			    "this answer or a newer one");
		if (x->outc[i] == OUT_IMPORTED)
			x->nimp++;
		if (x->outc[i] == OUT_KEPT)
			x->nkept++;
		report(x->ctl, arr, &x->bd.entries[i], x->outc[i], &x->chk[i],
		    why);
	}
}

/* The entries, the JSON document with --json, the summary; the exit code. */
static int
xfer_report(struct xfer *x)
{
	json_t	*arr = NULL, *root;

	if (x->ctl->json)
		arr = json_array();
	xfer_report_entries(x, arr);
	if (arr != NULL) {
		root = json_pack("{s:s, s:o, s:I, s:I, s:I, s:I}", "file",
		    x->path, "entries", arr, "imported", (json_int_t)x->nimp,
		    "kept", (json_int_t)x->nkept, "rejected",
		    (json_int_t)x->nrej, "pool_added", (json_int_t)x->npool);
		json_dumpf(root, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(root);
	}
	if (x->import)
		fprintf(stderr, "staplectl: %s: %zu imported, %zu kept, %zu "
		    "rejected%s; %zu intermediate(s) added to the pool\n",
		    x->path, x->nimp, x->nkept, x->nrej, x->nrej > 0 &&
		    !x->partial ? ": nothing stored" : "", x->npool);
	else
		fprintf(stderr, "staplectl: %s: %zu ok, %zu rejected, %zu "
		    "certificate(s)\n", x->path, x->bd.nentries - x->nrej,
		    x->nrej, x->bd.ncerts);
	return x->nrej > 0 && !x->partial ? CTL_REJECTED : CTL_OK;
}

static void
xfer_free(struct xfer *x)
{
	free(x->cder);
	free(x->clen);
	free(x->cok);
	ctl_trust_free(&x->t);
	bundle_free(&x->bd);
	free(x->buf);
	free(x->chk);
	free(x->outc);
	free(x->items);
	free(x->bodies);
	free(x->res);
}

/* verify and import: read, check, (import: plan, store), report. */
static int
xfer(struct ctl *ctl, int argc, char **argv, int import)
{
	struct xfer	x;
	int		rv;

	memset(&x, 0, sizeof(x));
	x.ctl = ctl;
	x.import = import;
	if ((rv = xfer_opts(&x, argc, argv)) != -1)
		return rv;
	if ((rv = xfer_read(&x)) != CTL_OK)
		goto out;
	rv = CTL_REJECTED;
	if (xfer_alloc(&x) == -1)
		goto out;
	xfer_check(&x);
	if (import && (x.nrej == 0 || x.partial)) {
		xfer_plan(&x);
		if ((rv = xfer_store(&x)) != 0)
			goto out;
	}
	rv = xfer_report(&x);
 out:
	xfer_free(&x);
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
