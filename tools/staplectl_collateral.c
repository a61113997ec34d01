/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl and Intel PCS/PCCS and AMD KDS entries: shown, named from quotes and SNP reports, fetched. */
#include "config.h"

#include <sys/stat.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "attest/amd.h"
#include "attest/intel.h"
#include "attest/util.h"
#include "cache/store.h"
#include "entry/entry.h"
#include "entry/kds.h"
#include "tools/bundle.h"
#include "tools/tee.h"
#include "tools/staplectl.h"

#define COLL_MAX_INPUT_BYTES	(1024 * 1024)
#define COLL_MAX_PATHS		8
/* Intel PCS has no rootcacrl (a PCCS route): the root CA's CRL distribution point. */
#define INTEL_PCS_HOST		"api.trustedservices.intel.com"
#define INTEL_ROOT_CRL_URL	\
	"https://certificates.trustedservices.intel.com/IntelSGXRootCA.der"
#define GENERATOR		"staplectl " PACKAGE_VERSION


/* A header's value from "Name: value\r\n" lines: malloc'd, or NULL. */
static char *
header_value(const uint8_t *h, size_t len, const char *name)
{
	const char	*p = (const char *)h, *end = p + len, *eol, *v;
	size_t		 n = strlen(name);

	for (; h != NULL && p < end; p = eol + 2) {
		if ((eol = memchr(p, '\r', (size_t)(end - p))) == NULL)
			break;
		if ((size_t)(eol - p) <= n || strncasecmp(p, name, n) != 0 ||
		    p[n] != ':')
			continue;
		for (v = p + n + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		return strndup(v, (size_t)(eol - v));
	}
	return NULL;
}

/* ---- manifest -------------------------------------------------------------- */

static int
add_path(json_t *arr, const char *path)
{
	size_t	 i;
	json_t	*v;

	json_array_foreach(arr, i, v)
		if (strcmp(json_string_value(v), path) == 0)
			return 0;
	return json_array_append_new(arr, json_string(path));
}

static int
read_input(const char *path, uint8_t **buf, size_t *len)
{
	char	err[512];

	if (ctl_read_file(path, COLL_MAX_INPUT_BYTES, buf, len, err,
	    sizeof(err)) == -1) {
		ctl_warnx("%s", err);
		return CTL_NOFILE;
	}
	return CTL_OK;
}

int
ctl_manifest_collateral(struct ctl *ctl, struct json_t *root, char **quotes,
    size_t nq, char **reports, size_t nr, const char *product, int with_cache)
{
	struct tee_quote	 q;
	struct tee_snp		 s;
	struct ctl_ent		*e = NULL;
	struct cache_body	 b;
	struct stat		 st;
	enum amd_product	 prod;
	json_t			*pccs, *kds, *tee, *o;
	char			 paths[COLL_MAX_PATHS][TEE_PATH_MAX], err[512];
	char			 hex[2 * 64 + 1], path[TEE_PATH_MAX];
	uint8_t			*buf;
	size_t			 len, i, j, n, ne = 0;
	int			 rv, pi = -1;

	if (product != NULL) {
		if (amd_product_parse(product, strlen(product), &prod) == -1) {
			ctl_warnx("--product %s: expected Milan, Genoa or Turin",
			    product);
			return CTL_USAGE;
		}
		pi = (int)prod;
	}
	pccs = json_array();
	kds = json_array();
	tee = json_array();
	json_object_set_new(root, "pccs", pccs);
	json_object_set_new(root, "kds", kds);
	json_object_set_new(root, "tee", tee);
	for (i = 0; i < nq; i++) {
		if ((rv = read_input(quotes[i], &buf, &len)) != CTL_OK)
			return rv;
		rv = tee_quote_parse(buf, len, &q, err, sizeof(err));
		free(buf);
		if (rv == -1) {
			ctl_warnx("%s: %s", quotes[i], err);
			return CTL_REJECTED;
		}
		n = tee_quote_paths(&q, paths, COLL_MAX_PATHS);
		for (j = 0; j < n; j++)
			add_path(pccs, paths[j]);
		json_array_append_new(tee, json_pack("{s:s, s:s, s:i, s:s, s:s, "
		    "s:s}", "quote", quotes[i], "type", q.tdx ? "tdx" : "sgx",
		    "version", q.version, "fmspc", q.fmspc, "pck_ca", q.ca,
		    "pck_subject", q.pck_subject));
	}
	for (i = 0; i < nr; i++) {
		if ((rv = read_input(reports[i], &buf, &len)) != CTL_OK)
			return rv;
		rv = tee_snp_parse(buf, len, pi, &s, err, sizeof(err));
		free(buf);
		if (rv == -1) {
			ctl_warnx("%s: %s", reports[i], err);
			return pi < 0 && strstr(err, "--product") ? CTL_USAGE :
			    CTL_REJECTED;
		}
		if (s.signing_key == 1)
			ctl_warnx("%s: signed by a VLEK: KDS hands VLEKs to the "
			    "cloud provider only; the chain and CRL are listed",
			    reports[i]);
		n = tee_snp_paths(&s, paths, COLL_MAX_PATHS);
		for (j = 0; j < n; j++)
			add_path(kds, paths[j]);
		util_hex(s.chip_id, sizeof(s.chip_id), hex);
		o = json_pack("{s:s, s:i, s:s, s:s, s:o}", "snp_report", reports[i],
		    "version", s.version, "product", amd_product_str[s.product],
		    "chip_id", hex, "reported_tcb", kds_tcb_json(&s.tcb));
		if (s.have_cpuid) {
			json_object_set_new(o, "cpuid_family", json_integer(s.family));
			json_object_set_new(o, "cpuid_model", json_integer(s.model));
		}
		json_array_append_new(tee, o);
	}
	/* What the site already relies on: the cache's own collateral. */
	if (!with_cache)
		return CTL_OK;
	if (ctl->cache == NULL && (stat(ctl->cache_dir, &st) == -1 ||
	    ctl_open_cache(ctl, 1) != CTL_OK))
		return CTL_OK;	/* no cache here: nothing to add */
	for (i = 0; i < 2; i++) {
		if (ctl_collect(ctl, i == 0 ? CACHE_KIND_PCCS : CACHE_KIND_KDS, &e,
		    &ne) != CTL_OK)
			continue;
		for (j = 0; j < ne; j++) {
			if (cache_get(ctl->cache, e[j].kind, e[j].key, e[j].klen,
			    NULL, &b) != 1 || b.request_len == 0 ||
			    b.request_len >= sizeof(path))
				continue;
			memcpy(path, b.request, b.request_len);
			path[b.request_len] = '\0';
			add_path(i == 0 ? pccs : kds, path);
		}
		free(e);
		e = NULL;
	}
	return CTL_OK;
}

/* ---- fetch ---------------------------------------------------------------- */
/* A header of a fetched answer, for entry_keep_headers; each value lives until the next call. */
struct fetched_headers {
	const struct ctl_http	*r;
	char			*last;
};

static const char *
fetched_header(const void *arg, const char *name)
{
	struct fetched_headers	*h = (struct fetched_headers *)arg;

	free(h->last);
	/* The raw lines end in CRLF already: the same reader serves. */
	h->last = header_value((const uint8_t *)h->r->hdr, h->r->hlen, name);
	return h->last;
}

/*
 * The kept headers of kind, as the daemon stores them: NULL with *why
 * when they do not fit (the daemon does not store such an answer).
 */
static uint8_t *
kept_of(const struct ctl_http *r, enum cache_kind kind, size_t *outlen,
    const char **why)
{
	struct fetched_headers	 h = { r, NULL };
	struct entry_answer	 a = { NULL, 0, fetched_header, &h, NULL, 0 };
	char			*out;
	int			 n;

	*why = "out of memory";
	if ((out = malloc(ENTRY_KEPT_HEADERS_MAX_BYTES)) == NULL)
		return NULL;
	n = entry_keep_headers(kind_table[kind]->keep_headers, &a, out,
	    ENTRY_KEPT_HEADERS_MAX_BYTES);
	free(h.last);
	if (n < 0) {
		*why = "kept headers over the limit: not stored";
		free(out);
		return NULL;
	}
	*outlen = (size_t)n;
	return (uint8_t *)out;
}

/* Ask each upstream in order until one answer verifies; it joins f. */
static void
fetch_path(struct ctl *ctl, struct ctl_trust *t, struct ctl_fetched *f,
    enum cache_kind kind, const char *path, char *const *ups, size_t nups)
{
	struct bundle_entry	*e;
	struct ctl_http		 r;
	struct ctl_check	*c;
	char			 url[TEE_PATH_MAX + 512], *base;
	char			 err[TEE_PATH_MAX + 700];
	const char		*why;
	size_t			 i;

	if ((e = ctl_entries_add(&f->e, &f->chk, &f->n, &f->cap)) == NULL) {
		f->failed++;
		return;
	}
	e->kind = kind;
	snprintf(e->kind_name, sizeof(e->kind_name), "%s", cache_kind_str[kind]);
	e->status = -1;
	if (kind_table[kind]->request_key((const uint8_t *)path, strlen(path),
	    e->key, &e->klen) == -1 ||
	    (e->request = (uint8_t *)strdup(path)) == NULL)
		goto failed;
	e->request_len = strlen(path);
	for (i = 0; i < nups; i++) {
		if ((base = entry_base_url(ups[i],
		    kind_table[kind]->base_suffixes)) == NULL)
			goto failed;
		if (kind == CACHE_KIND_PCCS && strstr(base, INTEL_PCS_HOST) &&
		    strcmp(path, "/sgx/certification/v4/rootcacrl") == 0)
			snprintf(url, sizeof(url), "%s", INTEL_ROOT_CRL_URL);
		else
			snprintf(url, sizeof(url), "%s%s", base, path);
		free(base);
		if (ctl_http_do(url, config_upstream_tls(&ctl->conf, kind),
		    NULL, 0, NULL, &r, err, sizeof(err)) == -1) {
			ctl_warnx("fetch: %s", err);
			continue;
		}
		free(e->response);
		free(e->headers);
		e->headers_len = 0;
		e->response = NULL;
		if ((e->headers = kept_of(&r, kind, &e->headers_len,
		    &why)) == NULL) {
			ctl_warnx("fetch: %s: rejected: %s", url, why);
			free(r.body);
			free(r.hdr);
			continue;
		}
		e->response = r.body;
		e->response_len = r.len;
		free(r.hdr);
		/* The VCEKs are checked against the chains fetched before them. */
		t->peers = f->e;
		t->npeers = f->n - 1;
		c = &f->chk[f->n - 1];
		if (ctl_check_entry(ctl, t, e, ctl->now, c)) {
			bundle_entry_set_meta(e, &c->meta, ups[i]);
			t->peers = NULL;
			t->npeers = 0;
			return;
		}
		ctl_warnx("fetch: %s: rejected: %s", url, c->reason);
	}
	ctl_warnx("fetch: %s %s: no upstream gave a valid answer",
	    cache_kind_str[kind], path);
 failed:
	t->peers = NULL;
	t->npeers = 0;
	free(e->request);
	free(e->response);
	free(e->headers);
	f->n--;
	f->failed++;
}

int
ctl_fetch_collateral(struct ctl *ctl, struct ctl_trust *t, json_t *root,
    const char *mname, const struct ctl_ups *ups, struct ctl_fetched *f)
{
	char *const		*pups = ups->url[CACHE_KIND_PCCS];
	char *const		*kups = ups->url[CACHE_KIND_KDS];
	size_t			 np = ups->n[CACHE_KIND_PCCS];
	size_t			 nk = ups->n[CACHE_KIND_KDS];
	struct pccs_req		 pr;
	struct kds_req		 kr;
	json_t			*arr, *v;
	const char		*s, *why;
	size_t			 i;
	int			 pass;

	memset(f, 0, sizeof(*f));
	arr = json_object_get(root, "pccs");
	json_array_foreach(arr, i, v) {
		if ((s = json_string_value(v)) == NULL ||
		    pccs_parse_stored(s, &pr, &why) == -1) {
			ctl_warnx("%s: pccs[%zu]: %s", mname, i, s ? why :
			    "not a string");
			f->failed++;
			continue;
		}
		fetch_path(ctl, t, f, CACHE_KIND_PCCS, s, pups, np);
	}
	/* Chains and CRLs first: each VCEK is checked against its product's chain. */
	arr = json_object_get(root, "kds");
	for (pass = 0; pass < 2; pass++)
		json_array_foreach(arr, i, v) {
			if ((s = json_string_value(v)) == NULL ||
			    kds_parse_canon(s, &kr, &why) == -1) {
				if (pass == 0) {
					ctl_warnx("%s: kds[%zu]: %s", mname, i, s ?
					    why : "not a string");
					f->failed++;
				}
				continue;
			}
			if ((kr.what == KDS_VEK) == (pass == 1))
				fetch_path(ctl, t, f, CACHE_KIND_KDS, s, kups, nk);
		}
	return CTL_OK;
}

void
ctl_fetched_free(struct ctl_fetched *f)
{
	ctl_entries_free(f->e, f->chk, f->n);
	memset(f, 0, sizeof(*f));
}
