/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl export, verify and import: bundles out of one cache and, verified again, into another. */
#include "config.h"

#include <getopt.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "attest/der.h"
#include "attest/keyset.h"
#include "attest/ocsp_memo.h"
#include "attest/util.h"
#include "cache/store.h"
#include "entry/kind.h"
#include "entry/pool.h"
#include "tools/bundle.h"
#include "tools/progress.h"
#include "tools/staplectl.h"
#include "tools/staplectl_cover.h"
#include "tools/verifiers.h"

#define GENERATOR	"staplectl " PACKAGE_VERSION

/* ---- export -------------------------------------------------------------- */

/* CA certificates to ship, deduplicated by digest. */
struct certset {
	uint8_t		**der;
	size_t		 *len;
	size_t		  n, cap;
	struct keyset	  seen;
};

static int
certset_add(struct certset *s, const uint8_t *der, size_t len)
{
	const void	*part[] = { der };
	uint8_t		 md[KEYSET_MD_BYTES];
	void		*p;
	int		 r;

	if (len == 0 || len > BUNDLE_MAX_CERT_BYTES ||
	    keyset_md(md, part, &len, 1) == -1)
		return -1;
	if (s->n == s->cap) {
		s->cap = s->cap == 0 ? 16 : s->cap * 2;
		if ((p = realloc(s->der, s->cap * sizeof(*s->der))) == NULL)
			return -1;
		s->der = p;
		if ((p = realloc(s->len, s->cap * sizeof(*s->len))) == NULL)
			return -1;
		s->len = p;
	}
	if ((s->der[s->n] = malloc(len)) == NULL)
		return -1;
	if ((r = keyset_put(&s->seen, md, s->n, NULL)) != 1) {
		free(s->der[s->n]);
		return r;
	}
	memcpy(s->der[s->n], der, len);
	s->len[s->n] = len;
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
	keyset_free(&s->seen);
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
			if (ctl_opt_kind(optarg, kind) != CTL_OK)
				return CTL_USAGE;
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
	bundle_entry_set_meta(&be, &e->meta, e->meta.source);
	return bundle_write_entry(w, &be);
}

/* An export under way: where it writes, the CAs it ships, the responders whose CAs are in. */
struct exporting {
	struct ctl_trust	*t;
	struct bundle_writer	*w;
	struct certset		 cs;
	struct keyset		 signers;	/* ocsp_memo_signer_id of answers done */
};

/*
 * The CAs between an answer's responder and its anchor, into the set:
 * built once per responder (its id, attest/ocsp_memo.h: the same
 * responderID and embedded certificates build the same chain against
 * one trust), not once per answer.
 */
static void
export_cas(struct exporting *x, const struct cache_body *b)
{
	STACK_OF(X509)	*chain;
	uint8_t		 id[KEYSET_MD_BYTES];
	int		 j;

	if (ocsp_memo_signer_id(b->response, b->response_len, id) == 0 &&
	    keyset_put(&x->signers, id, 0, NULL) == 0)
		return;
	chain = ctl_ocsp_der_chain(x->t, b->response, b->response_len);
	for (j = 0; chain != NULL && j < sk_X509_num(chain); j++)
		certset_add_x509(&x->cs, sk_X509_value(chain, j));
	sk_X509_pop_free(chain, X509_free);
}

/*
 * A chunk of the cache's entries: those still valid written, the CAs of
 * the OCSP ones' responders gathered (ctl_chunk_fn). CTL_OK, or
 * CTL_REJECTED when writing failed.
 */
static int
export_entries(struct ctl *ctl, const struct ctl_ent *e, size_t n, void *arg)
{
	struct exporting	*x = arg;
	struct cache_body	 b;
	size_t			 i;

	for (i = 0; i < n; i++) {
		if (e[i].meta.next_update <= ctl->now)
			continue;	/* never carry what nobody may serve */
		if (cache_get(ctl->cache, e[i].kind, e[i].key, e[i].klen, NULL,
		    &b) != 1) {
			ctl_warnx("%s", cache_strerror(ctl->cache));
			continue;
		}
		if (export_entry(x->w, &e[i], &b) == -1)
			return CTL_REJECTED;
		if (e[i].kind == CACHE_KIND_OCSP)
			export_cas(x, &b);
	}
	return CTL_OK;
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
	struct exporting	 x;
	struct ctl_output	 out;
	enum cache_kind		 kind = 0;
	const char		*outpath = NULL;
	size_t			 n;
	int			 rv;

	memset(&t, 0, sizeof(t));
	memset(&x, 0, sizeof(x));
	memset(&out, 0, sizeof(out));
	x.t = &t;
	if ((rv = export_opts(argc, argv, &kind, &outpath)) != -1)
		return rv;
	if ((rv = ctl_open_cache(ctl, 1)) != CTL_OK ||
	    (rv = ctl_trust_load(ctl, &t, 1)) != CTL_OK)
		goto out;
	rv = CTL_NOFILE;
	if (ctl_output_open(&out, outpath) == -1) {
		ctl_warnx("%s: cannot create", outpath);
		goto out;
	}
	if ((x.w = bundle_writer_new(out.f, ctl->now, GENERATOR)) == NULL)
		goto write_failed;
	/* The cache a chunk at a time: its size costs no memory here. */
	if ((rv = ctl_walk_chunks(ctl, kind, export_entries, &x)) ==
	    CTL_REJECTED)
		goto write_failed;
	if (rv != CTL_OK) {
		ctl_output_abort(&out);
		goto out;
	}
	/* And everything the cache has learned, for answers still to come. */
	entry_pool_walk(ctl->cache, pool_export_cb, &x.cs);
	if (export_certs(x.w, &x.cs) == -1 || bundle_writer_end(x.w) == -1)
		goto write_failed;
	n = bundle_writer_entries(x.w);
	rv = CTL_REJECTED;
	if (ctl_output_commit(&out) == -1)
		goto out;
	fprintf(stderr, "staplectl: exported %zu entr%s and %zu "
	    "certificate(s)%s%s\n", n, n == 1 ? "y" : "ies", x.cs.n,
	    outpath != NULL ? " to " : "", outpath != NULL ? outpath : "");
	rv = CTL_OK;
	goto out;
 write_failed:
	rv = CTL_REJECTED;
	ctl_warnx("%s: write failed", outpath != NULL ? outpath : "stdout");
	ctl_output_abort(&out);
 out:
	bundle_writer_free(x.w);
	certset_free(&x.cs);
	keyset_free(&x.signers);
	ctl_trust_free(&t);
	return rv;
}

/* ---- verify and import ----------------------------------------------------- */

enum outcome { OUT_IMPORTED, OUT_KEPT, OUT_REJECTED, OUT_HELD, OUT_OK,
    OUT_DUP };
static const char *const outcome_str[] = {
	[OUT_IMPORTED] = "imported",
	[OUT_KEPT] = "kept",
	[OUT_REJECTED] = "rejected",
	[OUT_HELD] = "not imported",
	[OUT_OK] = "ok",
	[OUT_DUP] = "duplicate",
};

/* The tags of verdicts made here rather than by tools/verifiers.c. */
#define XFER_JUDGED	(VERIFIERS_CHECKED + 1)	/* another kind, judged in order */
#define XFER_DUP	(VERIFIERS_CHECKED + 2)	/* c.reason names the first */

/* One entry's verdict: a line, or with --json one element of "entries". */
static void
report(struct ctl *ctl, int *njson, const struct bundle_entry *e,
    enum outcome o, const struct ctl_check *c, const char *why)
{
	char		 key[2 * CACHE_KEY_MAX_BYTES + 1], nu[32], *s;
	char		 name[CTL_KEY_NAME_BYTES];
	const char	*st = NULL;
	json_t		*j;

	util_hex(e->key, e->klen, key);
	ctl_key_name(e->kind, e->key, e->klen, name);
	if (c->ok) {
		bundle_time_str(nu, c->meta.next_update);
		st = bundle_status_name(e->kind, c->meta.status);
	}
	if (ctl->json) {
		j = json_pack("{s:s, s:s, s:s, s:I}", "result", outcome_str[o],
		    "kind", e->kind_name, "key", key, "line", (json_int_t)e->line);
		if (c->ok) {
			json_object_set_new(j, "next_update", json_string(nu));
			if (st != NULL)
				json_object_set_new(j, "status", json_string(st));
		}
		if (why != NULL && why[0] != '\0')
			json_object_set_new(j, "reason", json_string(why));
		if (strcmp(name, key) != 0)	/* a RIM: its ID */
			json_object_set_new(j, "id", json_string(name));
		if ((s = json_dumps(j, JSON_COMPACT)) != NULL)
			printf("%s\n    %s", (*njson)++ > 0 ? "," : "", s);
		free(s);
		json_decref(j);
		return;
	}
	if (o == OUT_REJECTED || o == OUT_HELD || o == OUT_KEPT || o == OUT_DUP)
		printf("%s %s %s (line %zu): %s\n", outcome_str[o],
		    e->kind_name, name, e->line, why);
	else
		printf("%s %s %s %s nextUpdate %s\n", outcome_str[o],
		    e->kind_name, name, st != NULL ? st : "-", nu);
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
		    "verify [--manifest MANIFEST [-v]] FILE\nchecks a bundle "
		    "as import would, and stores nothing; one line per entry.\n"
		    "A bundle with no entries fails. With --manifest, says how "
		    "many of the manifest's\nentries the bundle lacks (-v: "
		    "which), and fails when it lacks any.\n");
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
	/*
	 * Kept from eviction until a client asks for it
	 * (docs/decisions/0004-segmented-lru.md).
	 */
	m->flags |= CACHE_F_IMPORTED;
	if ((copy = strdup(path)) != NULL) {
		base = basename(copy);
		snprintf(m->source, sizeof(m->source), "%s:%s",
		    RECORD_SOURCE_IMPORT, base);
		free(copy);
	} else
		snprintf(m->source, sizeof(m->source), "%s",
		    RECORD_SOURCE_IMPORT);
}

/* An import's entry waiting for the transaction: its verdict, and its bytes when stored. */
struct pend {
	struct bundle_entry	 e;
	struct ctl_check	 chk;
	enum outcome		 o;
};

/*
 * One verify or import. The bundle is read twice, one line at a time:
 * once for its format, its seal and the chain material the entries need
 * (the certificate lines, the KDS cert_chains), then to verify each
 * entry. verify holds nothing else. import holds, until its one
 * transaction, each valid entry it will store (its bytes) and a verdict
 * for each entry; once an entry is rejected without --allow-partial it
 * holds nothing more and reports each entry as it is read.
 */
struct xfer {
	struct ctl		*ctl;
	int			 import;
	int			 partial;	/* --allow-partial */
	const char		*path;
	FILE			*in;
	FILE			*copy;		/* a pipe's bytes, for the second read */
	uint8_t			 sha256[32];	/* the seal, from the first read */
	struct ctl_trust	 t;
	struct cover		 cover;		/* verify --manifest */
	int			 verbose;	/* verify -v: name what it lacks */
	struct bundle		 bd;		/* the bundle's certificates only */
	size_t			 ccap;
	struct keyset		 certs_seen;	/* their digests */
	struct bundle_entry	*peers;		/* its KDS cert_chains */
	size_t			 npeers, pcap;
	struct keyset		 peers_seen;	/* their keys' digests */
	struct keyset		 seen;		/* each entry's digest: its line */
	struct verifiers	*v;		/* the second read's checks */
	const uint8_t		**cder;
	size_t			*clen;
	int			*cok;		/* ... that the pool's rule admits */
	struct pend		*pend;		/* import: until the transaction */
	size_t			 npend, ecap;
	int			 holding;	/* import: something may be stored */
	struct cache_put_item	*items;		/* what import stores */
	struct cache_body	*bodies;
	int			*res;
	int			 njson;		/* --json: elements written */
	int			 json_open, json_closed;
	size_t			 nentries, nput, nrej, nimp, nkept, ndup, npool;
};

/* The command line into x. -1 to go on, else the exit code (usage said). */
static int
xfer_opts(struct xfer *x, int argc, char **argv)
{
	static const struct option	opts[] = {
		{ "allow-partial", no_argument, NULL, 'p' },
		{ "manifest", required_argument, NULL, 'm' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*mpath = NULL;
	int		 ch, rv;

	while ((ch = getopt_long(argc, argv, "hv", opts, NULL)) != -1) {
		switch (ch) {
		case 'm':
		case 'v':
			if (x->import) {
				xfer_usage(stderr, x->import);
				return CTL_USAGE;
			}
			if (ch == 'm')
				mpath = optarg;
			else
				x->verbose = 1;
			break;
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
	if (mpath != NULL && strcmp(mpath, "-") == 0 &&
	    strcmp(x->path, "-") == 0) {
		ctl_warnx("verify: the manifest and the bundle cannot both be "
		    "standard input");
		return CTL_USAGE;
	}
	/* Read first: memory grows with its records, never with the bundle. */
	if (mpath != NULL && (rv = cover_load(&x->cover, mpath)) != CTL_OK)
		return rv;
	return -1;
}

/* Grow an array of n elements of size to hold one more. 0, or -1. */
static int
xfer_grow(void **arr, size_t *cap, size_t n, size_t size)
{
	size_t	 nc;
	void	*p;

	if (n < *cap)
		return 0;
	nc = *cap == 0 ? 16 : *cap * 2;
	if ((p = realloc(*arr, nc * size)) == NULL)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

/* An entry other entries are checked against (a KDS cert_chain, for the bundle's VCEKs): its kind's read_by_others. */
static int
xfer_is_chain(const struct bundle_entry *e)
{
	return kind_name(e->kind) != NULL &&
	    kind_table[e->kind]->read_by_others != NULL &&
	    kind_table[e->kind]->read_by_others(e->key, e->klen);
}

/* The first read's entry: only one others are checked against (xfer_is_chain), the first of its key, is kept. */
static int
xfer_keep_peer(struct xfer *x, struct bundle_entry *e)
{
	const void	*part[] = { e->key };
	size_t		 len[] = { e->klen };
	uint8_t		 md[KEYSET_MD_BYTES];
	int		 r;

	if (!xfer_is_chain(e))
		return 0;
	if (keyset_md(md, part, len, 1) == -1 ||
	    (r = keyset_put(&x->peers_seen, md, x->npeers, NULL)) == -1)
		return -1;
	if (r == 0)
		return 0;
	if (xfer_grow((void **)&x->peers, &x->pcap, x->npeers,
	    sizeof(*x->peers)) == -1)
		return -1;
	x->peers[x->npeers++] = *e;
	memset(e, 0, sizeof(*e));
	return 0;
}

/*
 * The first read's certificate, unless the same bytes are held already
 * (a bundle made of others repeats them).
 */
static int
xfer_keep_cert(struct xfer *x, struct bundle_cert *c)
{
	const void	*part[] = { c->der };
	size_t		 len[] = { c->len };
	uint8_t		 md[KEYSET_MD_BYTES];
	int		 r;

	if (keyset_md(md, part, len, 1) == -1 ||
	    (r = keyset_put(&x->certs_seen, md, x->bd.ncerts, NULL)) == -1)
		return -1;
	if (r == 0) {
		bundle_cert_clear(c);
		return 0;
	}
	if (xfer_grow((void **)&x->bd.certs, &x->ccap, x->bd.ncerts,
	    sizeof(*x->bd.certs)) == -1)
		return -1;
	x->bd.certs[x->bd.ncerts++] = *c;
	memset(c, 0, sizeof(*c));
	return 0;
}

/*
 * The first read: the format, the seal and the chain material, with
 * nothing used before the trailer matched. A pipe is copied aside to be
 * read again. CTL_OK, or the exit code with the reason said.
 */
static int
xfer_scan(struct xfer *x)
{
	struct bundle_reader	*br = NULL;
	struct bundle_entry	 e;
	struct bundle_cert	 c;
	struct stat		 st;
	char			 err[512];
	int			 rc, rv = CTL_REJECTED;

	if ((x->in = ctl_open_input(x->path, err, sizeof(err))) == NULL) {
		ctl_warnx("%s", err);
		return CTL_NOFILE;
	}
	/* Standard input may be a pipe: its bytes are kept for the second read. */
	if ((fstat(fileno(x->in), &st) == -1 || !S_ISREG(st.st_mode)) &&
	    (x->copy = tmpfile()) == NULL) {
		ctl_warnx("%s: not a regular file, and no temporary file to "
		    "copy it to: %s", x->path, strerror(errno));
		return CTL_NOFILE;
	}
	if ((br = bundle_reader_new(x->in, x->copy, err, sizeof(err))) == NULL)
		goto refused;
	while ((rc = bundle_reader_next(br, &e, &c, err, sizeof(err))) !=
	    BUNDLE_END) {
		if (rc == -1)
			goto refused;
		if (rc == BUNDLE_CERT) {
			if (xfer_keep_cert(x, &c) == -1)
				goto oom;
		} else if (xfer_keep_peer(x, &e) == -1)
			goto oom;
		bundle_entry_clear(&e);
	}
	x->nentries = bundle_reader_info(br)->nentries;
	memcpy(x->sha256, bundle_reader_info(br)->sha256, sizeof(x->sha256));
	rv = CTL_OK;
	goto out;
 oom:
	bundle_entry_clear(&e);
	bundle_cert_clear(&c);
	snprintf(err, sizeof(err), "out of memory");
 refused:
	ctl_warnx("%s: refused, nothing %s: %s", x->path, x->import ?
	    "imported" : "verified", err);
 out:
	bundle_reader_free(br);
	return rv;
}

/*
 * Open the cache (read-only to verify, where failing only costs the
 * learned intermediates), load the anchors, and add the bundle's
 * certificates to the trust as untrusted chain material. CTL_OK, or the
 * exit code with the reason said.
 */
static int
xfer_trust(struct xfer *x)
{
	size_t	nc = x->bd.ncerts + 1, i;
	int	rv;

	if (x->import) {
		if ((rv = ctl_open_cache(x->ctl, 0)) != CTL_OK)
			return rv;
	} else if (ctl_open_cache(x->ctl, 1) != CTL_OK)
		ctl_warnx("verifying without the cache's learned "
		    "intermediates");
	if ((rv = ctl_trust_load(x->ctl, &x->t, 1)) != CTL_OK)
		return rv;
	if ((x->cder = calloc(nc, sizeof(*x->cder))) == NULL ||
	    (x->clen = calloc(nc, sizeof(*x->clen))) == NULL ||
	    (x->cok = calloc(nc, sizeof(*x->cok))) == NULL) {
		ctl_warnx("out of memory");
		return CTL_REJECTED;
	}
	for (i = 0; i < x->bd.ncerts; i++) {
		/* Untrusted: for building chains only. */
		ctl_trust_add_pool_der(&x->t, x->bd.certs[i].der, x->bd.certs[i].len);
		x->cder[i] = x->bd.certs[i].der;
		x->clen[i] = x->bd.certs[i].len;
	}
	x->t.peers = x->peers;	/* a bundle's KDS cert_chains check its VCEKs */
	x->t.npeers = x->npeers;
	if ((x->v = verifiers_new(x->ctl, &x->t, verifiers_threads())) ==
	    NULL)
		return CTL_REJECTED;
	return CTL_OK;
}

/* --json: the document's head, before the first entry. */
static void
xfer_json_begin(struct xfer *x)
{
	json_t	*j;
	char	*s;

	if (!x->ctl->json || x->json_open)
		return;
	x->json_open = 1;
	j = json_string(x->path);
	s = j != NULL ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	printf("{\n  \"file\": %s,\n  \"entries\": [", s != NULL ? s : "null");
	free(s);
	json_decref(j);
}

/* --json: the document's tail, once; the head first when no entry was reported. */
static void
xfer_json_end(struct xfer *x)
{
	json_t	*j;
	char	*s = NULL;

	if (!x->ctl->json || x->json_closed)
		return;
	xfer_json_begin(x);
	x->json_closed = 1;
	if (x->cover.path != NULL && (j = cover_json(&x->cover)) != NULL) {
		if ((s = json_dumps(j, JSON_COMPACT)) != NULL)
			printf("%s],\n  \"lacking\": %s", x->njson > 0 ?
			    "\n  " : "", s);
		x->njson = -1;	/* the entries' bracket is closed */
		free(s);
		json_decref(j);
	}
	printf("%s,\n  \"imported\": %zu,\n  \"kept\": %zu,\n  "
	    "\"rejected\": %zu,\n  \"duplicates\": %zu,\n  "
	    "\"pool_added\": %zu\n}\n", x->njson < 0 ? "" : x->njson > 0 ?
	    "\n  ]" : "]", x->nimp,
	    x->nkept, x->nrej, x->ndup, x->npool);
}

/* Why an entry came to o, for its verdict line. */
static void
xfer_why(enum outcome o, const struct ctl_check *c, char *why, size_t len)
{
	why[0] = '\0';
	if (o == OUT_REJECTED || o == OUT_DUP)
		snprintf(why, len, "%s", c->reason);
	else if (o == OUT_HELD)
		snprintf(why, len, "valid, but another entry was rejected "
		    "(--allow-partial imports the rest)");
	else if (o == OUT_KEPT)
		snprintf(why, len, "the cache already holds this answer or a "
		    "newer one");
}

/* Report one entry now, counting what came of it. */
static void
xfer_say(struct xfer *x, const struct bundle_entry *e, enum outcome o,
    const struct ctl_check *c)
{
	char	why[400];

	if (o == OUT_IMPORTED)
		x->nimp++;
	if (o == OUT_KEPT)
		x->nkept++;
	xfer_why(o, c, why, sizeof(why));
	xfer_json_begin(x);
	progress_hide();	/* a verdict on the terminal, not over the meter */
	report(x->ctl, &x->njson, e, o, c, why);
}

/* Import: what is held is reported, as held or as o, and let go. */
static void
xfer_flush(struct xfer *x, int held)
{
	struct pend	*p;
	size_t		 i;

	for (i = 0; i < x->npend; i++) {
		p = &x->pend[i];
		xfer_say(x, &p->e, held && p->o != OUT_REJECTED &&
		    p->o != OUT_DUP ? OUT_HELD : p->o, &p->chk);
		bundle_entry_clear(&p->e);
	}
	x->npend = 0;
}

/* Import: hold a verdict, with the entry's bytes only when it is to be stored. */
static int
xfer_hold(struct xfer *x, struct bundle_entry *e, const struct ctl_check *c,
    enum outcome o)
{
	struct pend	*p;

	if (xfer_grow((void **)&x->pend, &x->ecap, x->npend,
	    sizeof(*x->pend)) == -1) {
		ctl_warnx("out of memory");
		return -1;
	}
	p = &x->pend[x->npend++];
	p->e = *e;
	p->chk = *c;
	p->o = o;
	if (o == OUT_IMPORTED) {
		import_meta(x->ctl, &p->chk.meta, x->path);
		x->nput++;
	} else
		bundle_entry_clear(&p->e);
	memset(e, 0, sizeof(*e));
	return 0;
}

/*
 * Import: one verified entry. What the cache holds already stays and
 * keeps its schedule; one rejection without --allow-partial lets go of
 * everything held. 0, or -1 when out of memory (said).
 */
static int
xfer_import_one(struct xfer *x, struct bundle_entry *e, struct ctl_check *c,
    int ok)
{
	struct cache_meta	old;

	if (!ok) {
		x->nrej++;
		if (!x->partial && x->holding) {
			xfer_flush(x, 1);
			x->holding = 0;
		}
		if (!x->holding) {
			xfer_say(x, e, OUT_REJECTED, c);
			return 0;
		}
		return xfer_hold(x, e, c, OUT_REJECTED);
	}
	if (!x->holding) {
		xfer_say(x, e, OUT_HELD, c);
		return 0;
	}
	if (c->keep_stored || (cache_get_meta(x->ctl->cache, e->kind, e->key,
	    e->klen, &old) == 1 && old.this_update >= c->meta.this_update))
		return xfer_hold(x, e, c, OUT_KEPT);
	return xfer_hold(x, e, c, OUT_IMPORTED);
}

/* What makes an entry the same as another: its kind, key and bytes (the times and source lines are the exporter's notes). */
static int
xfer_entry_md(const struct bundle_entry *e, uint8_t md[KEYSET_MD_BYTES])
{
	const void	*part[] = { e->kind_name, e->key, e->request,
			    e->response, e->headers };
	size_t		 len[] = { strlen(e->kind_name), e->klen,
			    e->request_len, e->response_len, e->headers_len };

	return keyset_md(md, part, len, 5);
}

/* A verdict off the ring, in the bundle's order: reported (verify) or held (import). 0, or -1 (said). */
static int
xfer_apply(struct xfer *x, struct bundle_entry *e, struct ctl_check *c,
    int tag)
{
	if (tag == XFER_DUP) {
		x->ndup++;
		if (x->import && x->holding)
			return xfer_hold(x, e, c, OUT_DUP);
		xfer_say(x, e, OUT_DUP, c);
		return 0;
	}
	if (x->import)
		return xfer_import_one(x, e, c, c->ok);
	x->nrej += !c->ok;
	if (c->ok)
		cover_mark(&x->cover, e->kind, e->key, e->klen);
	xfer_say(x, e, c->ok ? OUT_OK : OUT_REJECTED, c);
	return 0;
}

/* Verdicts off the ring: every one (all), else until a slot is free. 0, or -1 (said). */
static int
xfer_drain(struct xfer *x, int all)
{
	struct bundle_entry	e;
	struct ctl_check	c;
	int			tag, rv = 0;

	while ((all || verifiers_full(x->v)) &&
	    verifiers_take(x->v, &e, &c, &tag) == 1) {
		if (rv == 0 && xfer_apply(x, &e, &c, tag) == -1)
			rv = -1;
		bundle_entry_clear(&e);
	}
	return rv;
}

/*
 * One entry of the second read onto the ring, its bytes with it: a
 * duplicate of an earlier one, with that verdict; an OCSP entry, to be
 * checked with the stored entry's times; an entry of another kind,
 * judged here once every verdict before it is in (a RIM's chain joins
 * the trust the answers after it are checked with). 0, or -1 (said).
 */
static int
xfer_put(struct xfer *x, struct bundle_entry *e)
{
	struct ctl_check	c;
	struct cache_meta	old;
	uint8_t			md[KEYSET_MD_BYTES];
	size_t			first;
	int			r;

	memset(&c, 0, sizeof(c));
	if (xfer_drain(x, 0) == -1)
		return -1;
	if (xfer_entry_md(e, md) == -1 ||
	    (r = keyset_put(&x->seen, md, e->line, &first)) == -1) {
		ctl_warnx("out of memory");
		return -1;
	}
	if (r == 0) {
		snprintf(c.reason, sizeof(c.reason), "the same entry as line "
		    "%zu", first);
		return verifiers_put_given(x->v, e, &c, XFER_DUP);
	}
	if (kind_name(e->kind) != NULL && kind_table[e->kind]->judged_alone)
		return verifiers_put(x->v, e, x->ctl->cache != NULL &&
		    cache_get_meta(x->ctl->cache, e->kind, e->key, e->klen,
		    &old) == 1 ? &old : NULL);
	if (xfer_drain(x, 1) == -1)
		return -1;
	(void)ctl_check_entry(x->ctl, &x->t, e, x->ctl->now, &c);
	/* What the kind taught (a RIM's CAs) reaches the workers' pools. */
	if (kind_name(e->kind) != NULL && kind_table[e->kind]->teaches != NULL &&
	    verifiers_sync(x->v) == -1)
		ctl_warnx("pool: out of memory");
	return verifiers_put_given(x->v, e, &c, XFER_JUDGED);
}

/*
 * The second read: every entry verified (verify: reported in order;
 * import: held or reported), duplicates named, and the bytes must be
 * those the first read sealed. 0, or -1 (said) when the file changed
 * between the reads or memory ran out.
 */
static int
xfer_check(struct xfer *x)
{
	struct bundle_reader	*br = NULL;
	struct bundle_entry	 e;
	struct bundle_cert	 c;
	struct progress		 p;
	FILE			*f = x->copy != NULL ? x->copy : x->in;
	char			 err[512];
	int			 rc, rv = -1;

	memset(&e, 0, sizeof(e));
	x->holding = x->import;
	progress_start(&p, x->import ? "import" : "verify", "entries",
	    PROGRESS_ITEMS, x->nentries, x->ctl->quiet);
	if (fflush(f) == EOF || fseeko(f, 0, SEEK_SET) == -1) {
		snprintf(err, sizeof(err), "cannot read it again: %s",
		    strerror(errno));
		goto refused;
	}
	if ((br = bundle_reader_new(f, NULL, err, sizeof(err))) == NULL)
		goto changed;
	while ((rc = bundle_reader_next(br, &e, &c, err, sizeof(err))) !=
	    BUNDLE_END) {
		if (rc == -1)
			goto changed;
		bundle_cert_clear(&c);
		if (rc != BUNDLE_ENTRY)
			continue;
		progress_step(&p, 1);
		if (xfer_put(x, &e) == -1)
			goto out;
		bundle_entry_clear(&e);
	}
	if (xfer_drain(x, 1) == -1)
		goto out;
	if (memcmp(bundle_reader_info(br)->sha256, x->sha256,
	    sizeof(x->sha256)) == 0) {
		rv = 0;
		goto out;
	}
	snprintf(err, sizeof(err), "another seal");
 changed:
	(void)xfer_drain(x, 1);
	ctl_warnx("%s: refused, nothing %s: the file changed while it was "
	    "read (%s)", x->path, x->import ? "imported" : "verified", err);
	goto out;
 refused:
	ctl_warnx("%s: refused, nothing %s: %s", x->path, x->import ?
	    "imported" : "verified", err);
 out:
	progress_end(&p);
	bundle_entry_clear(&e);
	bundle_reader_free(br);
	return rv;
}

/* Import: what is held to be stored, as the items of one transaction. 0, or -1 (said). */
static int
xfer_plan(struct xfer *x)
{
	struct pend	*p;
	size_t		 i, k, n = x->nput + 1;

	if ((x->items = calloc(n, sizeof(*x->items))) == NULL ||
	    (x->bodies = calloc(n, sizeof(*x->bodies))) == NULL ||
	    (x->res = calloc(n, sizeof(*x->res))) == NULL) {
		ctl_warnx("%s: nothing imported: out of memory", x->path);
		return -1;
	}
	for (i = 0, k = 0; i < x->npend; i++) {
		p = &x->pend[i];
		if (p->o != OUT_IMPORTED)
			continue;
		x->bodies[k].request = p->e.request;
		x->bodies[k].request_len = p->e.request_len;
		x->bodies[k].response = p->e.response;
		x->bodies[k].response_len = p->e.response_len;
		x->bodies[k].headers = p->e.headers;
		x->bodies[k].headers_len = p->e.headers_len;
		x->items[k].key = p->e.key;
		x->items[k].klen = p->e.klen;
		x->items[k].meta = &p->chk.meta;
		x->items[k].body = &x->bodies[k];
		k++;
	}
	return 0;
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
	for (i = 0, k = 0; i < x->npend; i++)
		if (x->pend[i].o == OUT_IMPORTED && x->res[k++] == CACHE_PUT_KEPT)
			x->pend[i].o = OUT_KEPT;
	/* The bundle's CAs the pool's rule admits join the cache's. */
	if (kind_pool_admits(x->t.trust, x->cder, x->clen, x->bd.ncerts,
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

/* Every verdict still held, the JSON document's tail, the summary; the exit code. */
static int
xfer_report(struct xfer *x)
{
	size_t	lacking;

	xfer_flush(x, 0);
	xfer_json_end(x);
	if (x->import)
		fprintf(stderr, "staplectl: %s: %zu imported, %zu kept, %zu "
		    "duplicate(s), %zu rejected%s; %zu intermediate(s) added "
		    "to the pool\n", x->path, x->nimp, x->nkept, x->ndup,
		    x->nrej, x->nrej > 0 && !x->partial ? ": nothing stored" :
		    "", x->npool);
	else
		fprintf(stderr, "staplectl: %s: %zu ok, %zu rejected, %zu "
		    "duplicate(s), %zu certificate(s)\n", x->path,
		    x->nentries - x->nrej - x->ndup, x->nrej, x->ndup,
		    x->bd.ncerts);
	if (x->import)
		return x->nrej > 0 && !x->partial ? CTL_REJECTED : CTL_OK;
	/* What a fetch with no network writes: nothing to carry across. */
	if (x->nentries == 0)
		ctl_warnx("%s: no entries: nothing to import", x->path);
	lacking = x->cover.path != NULL ?
	    cover_report(&x->cover, x->path, x->ctl->json ? COVER_JSON :
	    x->verbose ? COVER_NAME : COVER_COUNT) : 0;
	return x->nrej > 0 || x->nentries == 0 || lacking > 0 ? CTL_REJECTED :
	    CTL_OK;
}

static void
xfer_free(struct xfer *x)
{
	size_t	i;

	for (i = 0; i < x->bd.ncerts; i++)
		bundle_cert_clear(&x->bd.certs[i]);
	for (i = 0; i < x->npeers; i++)
		bundle_entry_clear(&x->peers[i]);
	for (i = 0; i < x->npend; i++)
		bundle_entry_clear(&x->pend[i].e);
	free(x->bd.certs);
	free(x->peers);
	free(x->pend);
	free(x->items);
	free(x->bodies);
	free(x->res);
	free(x->cder);
	free(x->clen);
	free(x->cok);
	verifiers_free(x->v);
	keyset_free(&x->seen);
	keyset_free(&x->certs_seen);
	keyset_free(&x->peers_seen);
	ctl_trust_free(&x->t);
	cover_free(&x->cover);
	if (x->copy != NULL)
		fclose(x->copy);
	if (x->in != NULL && x->in != stdin)
		fclose(x->in);
}

/*
 * Read: the format, the seal and the chain material (a first pass over
 * the file), then the cache and the anchors. CTL_OK, or the exit code
 * with the reason said.
 */
static int
xfer_read(struct xfer *x)
{
	int	rv;

	if ((rv = xfer_scan(x)) != CTL_OK)
		return rv;
	return xfer_trust(x);
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
	if (xfer_check(&x) == -1)
		goto out;
	if (import && x.holding && (x.nrej == 0 || x.partial)) {
		if (xfer_plan(&x) == -1)
			goto out;
		if ((rv = xfer_store(&x)) != 0)
			goto out;
	}
	rv = xfer_report(&x);
 out:
	if (x.json_open)
		xfer_json_end(&x);	/* a document begun is ended */
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
