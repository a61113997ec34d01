/* SPDX-License-Identifier: Apache-2.0 */
/* fetch's and prefetch's run: the entries it gathers, what came of each one asked, its summary by cause, and its bundle. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509.h>

#include "cache/store.h"
#include "tools/bundle.h"
#include "tools/progress.h"
#include "tools/staplectl.h"
#include "tools/staplectl_haul.h"

#define FETCH_MAX_CAUSES	4	/* per kind and outcome in the summary */
#define GENERATOR		"staplectl " PACKAGE_VERSION

const char *const fetch_outcome_str[FETCH_OUTCOME_MAX] = {
	[FETCH_STORED] = "stored",
	[FETCH_REFUSED] = "refused",
	[FETCH_NOT_FOUND] = "not found",
	[FETCH_UNREACHABLE] = "unreachable",
	[FETCH_NOT_ASKED] = "not asked",
	[FETCH_ERROR] = "failed",
};

struct bundle_entry *
haul_add(struct haul *h)
{
	return ctl_entries_add(&h->e, &h->chk, &h->n, &h->cap);
}

void
haul_free(struct haul *h)
{
	progress_end(&h->prog);
	ctl_entries_free(h->e, h->chk, h->n);
	free(h->asked);
	memset(h, 0, sizeof(*h));
}

/* Was this entry asked for already in this run (whatever came of it)? */
int
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
void
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
struct upstate *
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
int
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
void
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

int
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
