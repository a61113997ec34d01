/* SPDX-License-Identifier: Apache-2.0 */
/* fetch's and prefetch's run: the entries it gathers, what came of each one asked, its summary by cause, and its bundle. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509.h>

#include "attest/keyset.h"
#include "attest/ocsp_memo.h"
#include "cache/store.h"
#include "tools/bundle.h"
#include "tools/progress.h"
#include "tools/staplectl.h"
#include "tools/staplectl_haul.h"

#define FETCH_MAX_CAUSES	4	/* per kind and outcome in the summary */
#define GENERATOR		"staplectl " PACKAGE_VERSION

const char *const haul_outcome_str[HAUL_OUTCOME_MAX] = {
	[HAUL_STORED] = "stored",
	[HAUL_REFUSED] = "refused",
	[HAUL_NOT_FOUND] = "not found",
	[HAUL_UNREACHABLE] = "unreachable",
	[HAUL_NOT_ASKED] = "not asked",
	[HAUL_ERROR] = "failed",
};

struct bundle_entry *
haul_add(struct haul *h)
{
	return ctl_entries_add(&h->e, &h->chk, &h->n, &h->cap);
}

void
haul_free(struct haul *h)
{
	size_t	i;

	progress_end(&h->prog);
	ctl_entries_free(h->e, h->chk, h->n);
	if (h->w != NULL || h->out.f != NULL) {
		bundle_writer_free(h->w);
		ctl_output_abort(&h->out);
	}
	sk_X509_pop_free(h->cas, X509_free);
	for (i = 0; i < h->ncauses; i++)
		free(h->causes[i]);
	free(h->causes);
	free(h->asked);
	keyset_free(&h->asked_set);
	keyset_free(&h->cause_set);
	keyset_free(&h->cas_seen);
	keyset_free(&h->signers);
	memset(h, 0, sizeof(*h));
}

/* The digest an entry asked is known by: its kind and key. */
static int
asked_md(enum cache_kind kind, const uint8_t *key, size_t klen,
    uint8_t md[KEYSET_MD_BYTES])
{
	uint8_t		 k = (uint8_t)kind;
	const void	*part[] = { &k, key };
	size_t		 len[] = { 1, klen };

	return keyset_md(md, part, len, 2);
}

/* Was this entry asked for already in this run (whatever came of it)? */
int
haul_asked(const struct haul *h, enum cache_kind kind, const uint8_t *key,
    size_t klen)
{
	uint8_t	md[KEYSET_MD_BYTES];

	return asked_md(kind, key, klen, md) == 0 &&
	    keyset_get(&h->asked_set, md, NULL);
}

/* A cause's index, its text kept once. 0, or -1 (out of memory). */
static int
haul_cause(struct haul *h, const char *cause, uint32_t *idx)
{
	const void	*part[] = { cause };
	size_t		 len[] = { strlen(cause) }, had;
	uint8_t		 md[KEYSET_MD_BYTES];
	void		*p;
	int		 r;

	if (keyset_md(md, part, len, 1) == -1)
		return -1;
	if (keyset_get(&h->cause_set, md, &had)) {
		*idx = (uint32_t)had;
		return 0;
	}
	if (h->ncauses == UINT32_MAX)
		return -1;
	if (h->ncauses == h->capcauses) {
		h->capcauses = h->capcauses == 0 ? 16 : h->capcauses * 2;
		if ((p = realloc(h->causes, h->capcauses *
		    sizeof(*h->causes))) == NULL) {
			h->capcauses = h->ncauses;
			return -1;
		}
		h->causes = p;
	}
	if ((h->causes[h->ncauses] = strdup(cause)) == NULL)
		return -1;
	if ((r = keyset_put(&h->cause_set, md, h->ncauses, NULL)) != 1) {
		free(h->causes[h->ncauses]);
		return -1;
	}
	*idx = (uint32_t)h->ncauses++;
	return 0;
}

/* Remember what came of an entry; a failure counts in h->failed. */
void
haul_note(struct haul *h, enum cache_kind kind, const uint8_t *key,
    size_t klen, enum haul_outcome o, const char *cause)
{
	struct asked	*a;
	uint8_t		 md[KEYSET_MD_BYTES];
	uint32_t	 ci;
	void		*p;

	if (o != HAUL_STORED)
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
	if (haul_cause(h, cause != NULL ? cause : "", &ci) == -1 ||
	    asked_md(kind, key, klen, md) == -1 ||
	    keyset_put(&h->asked_set, md, h->nasked, NULL) == -1)
		return;
	a = &h->asked[h->nasked++];
	a->kind = (uint8_t)kind;
	a->outcome = (uint8_t)o;
	a->cause = ci;
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
    enum haul_outcome o)
{
	uint32_t	cs[FETCH_MAX_CAUSES];
	size_t		cn[FETCH_MAX_CAUSES], i, j, nc = 0, other = 0;

	for (i = 0; i < h->nasked; i++) {
		if (h->asked[i].kind != kind || h->asked[i].outcome != o)
			continue;
		for (j = 0; j < nc; j++)
			if (cs[j] == h->asked[i].cause)
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
		fprintf(stderr, "%s%zu: %s", j > 0 ? "; " : "", cn[j],
		    h->causes[cs[j]]);
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
	size_t				 n[HAUL_OUTCOME_MAX], i, k, total;
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
		    n[HAUL_STORED]);
		for (o = HAUL_STORED + 1; o < HAUL_OUTCOME_MAX; o++) {
			if (n[o] == 0)
				continue;
			fprintf(stderr, ", %zu %s", n[o], haul_outcome_str[o]);
			summary_causes(h, kinds[k], (enum haul_outcome)o);
		}
		fputc('\n', stderr);
	}
}

int
haul_open(struct ctl *ctl, struct haul *h, const char *outpath)
{
	if ((h->cas = sk_X509_new_null()) == NULL) {
		ctl_warnx("out of memory");
		return CTL_REJECTED;
	}
	if (ctl_output_open(&h->out, outpath) == -1)
		return CTL_NOFILE;
	if ((h->w = bundle_writer_new(h->out.f, ctl->now, GENERATOR)) ==
	    NULL) {
		ctl_warnx("%s: write failed", outpath);
		ctl_output_abort(&h->out);
		return CTL_REJECTED;
	}
	return CTL_OK;
}

/*
 * The CAs between an answer's responder and its anchor, as t builds them
 * (with the manifest's certs and the RIMs' chains), each once, roots left
 * out; built once per responder and pool (ocsp_memo_signer_id).
 */
static void
haul_cas(struct haul *h, struct ctl_trust *t, const struct bundle_entry *e)
{
	STACK_OF(X509)	*chain;
	unsigned char	*der;
	uint8_t		 id[KEYSET_MD_BYTES], md[KEYSET_MD_BYTES];
	const void	*part[2];
	size_t		 len[2];
	X509		*x;
	int		 j, npool = sk_X509_num(t->pool), n;

	part[0] = id;
	len[0] = sizeof(id);
	part[1] = &npool;
	len[1] = sizeof(npool);
	if (ocsp_memo_signer_id(e->response, e->response_len, id) == 0 &&
	    keyset_md(md, part, len, 2) == 0 &&
	    keyset_put(&h->signers, md, 0, NULL) == 0)
		return;		/* this responder's CAs are in */
	chain = ctl_ocsp_der_chain(t, e->response, e->response_len);
	for (j = 0; chain != NULL && j < sk_X509_num(chain); j++) {
		x = sk_X509_value(chain, j);
		if (X509_check_ca(x) <= 0 ||
		    X509_check_issued(x, x) == X509_V_OK)
			continue;
		der = NULL;
		if ((n = i2d_X509(x, &der)) <= 0)
			continue;
		part[0] = der;
		len[0] = (size_t)n;
		if (keyset_md(md, part, len, 1) == 0 &&
		    keyset_put(&h->cas_seen, md, 0, NULL) == 1 &&
		    X509_up_ref(x) && !sk_X509_push(h->cas, x))
			X509_free(x);
		OPENSSL_free(der);
	}
	sk_X509_pop_free(chain, X509_free);
}

/* Entry i written (its CAs noted) and let go; a write that fails is remembered. */
static void
haul_write(struct haul *h, struct ctl_trust *t, size_t i)
{
	struct bundle_entry	*e = &h->e[i];

	if (!h->wfailed && bundle_write_entry(h->w, e) == -1)
		h->wfailed = 1;
	if (e->kind == CACHE_KIND_OCSP)
		haul_cas(h, t, e);
	h->nout++;
	bundle_entry_clear(e);
}

void
haul_keep(struct haul *h, struct ctl_trust *t)
{
	if (!h->stream || h->n == 0)
		return;
	haul_write(h, t, h->n - 1);
	h->n--;
}

void
haul_flush(struct haul *h, struct ctl_trust *t)
{
	size_t	i;

	if (h->w == NULL)
		return;
	for (i = 0; i < h->n; i++)
		haul_write(h, t, i);
	h->n = 0;
	h->stream = 1;
}

size_t
haul_count(const struct haul *h)
{
	return h->nout + h->n;
}

int
write_haul(struct ctl *ctl, struct ctl_trust *t, struct haul *h,
    const char *outpath)
{
	unsigned char	*der;
	char		 subj[256];
	int		 j, len;

	(void)ctl;
	if (h->w == NULL)
		return CTL_REJECTED;
	haul_flush(h, t);
	for (j = 0; !h->wfailed && j < sk_X509_num(h->cas); j++) {
		der = NULL;
		if ((len = i2d_X509(sk_X509_value(h->cas, j), &der)) <= 0) {
			h->wfailed = 1;
			break;
		}
		ctl_x509_subject(sk_X509_value(h->cas, j), subj, sizeof(subj));
		if (bundle_write_cert(h->w, der, (size_t)len,
		    subj[0] != '\0' ? subj : NULL) == -1)
			h->wfailed = 1;
		OPENSSL_free(der);
	}
	if (h->wfailed || bundle_writer_end(h->w) == -1) {
		ctl_warnx("%s: write failed", outpath);
		return CTL_REJECTED;
	}
	bundle_writer_free(h->w);
	h->w = NULL;
	return ctl_output_commit(&h->out) == 0 ? CTL_OK : CTL_REJECTED;
}
