/* SPDX-License-Identifier: Apache-2.0 */
/* The run of one fetch or prefetch (tools/staplectl_haul.c): what it gathered and what came of each entry asked. */
#ifndef TOOLS_STAPLECTL_HAUL_H
#define TOOLS_STAPLECTL_HAUL_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/x509.h>

#include "attest/keyset.h"
#include "cache/store.h"
#include "tools/bundle.h"
#include "tools/progress.h"
#include "tools/staplectl.h"

/*
 * What came of one entry asked for in a run, in the order of the summary.
 * An entry is asked at most once per run, whatever came of it; within
 * that, each upstream once, unless its failure is transient.
 */
enum haul_outcome {
	HAUL_STORED = 0,	/* an answer verified */
	HAUL_REFUSED,		/* answers came; none verified */
	HAUL_NOT_FOUND,	/* a definitive no: HTTP 404, another 4xx, too large */
	HAUL_UNREACHABLE,	/* transient failures outlasted the retries */
	HAUL_NOT_ASKED,	/* every upstream was down in this run */
	HAUL_ERROR,		/* here: a request that cannot be built */
	HAUL_OUTCOME_MAX
};
extern const char *const haul_outcome_str[HAUL_OUTCOME_MAX];

#define FETCH_CAUSE_BYTES	320

/* One entry asked for in this run: what came of it (its key is in haul.asked_set). */
struct asked {
	uint8_t		 kind;		/* enum cache_kind */
	uint8_t		 outcome;	/* enum haul_outcome */
	uint32_t	 cause;		/* into haul.causes */
};

/* An upstream's run of entries that ran out of retries. */
struct upstate {
	const char	*url;
	int		 streak;
};

/*
 * What fetch found: bundle entries with owned bodies, held (prefetch
 * stores them in one transaction; fetch holds the RIMs it reads chains
 * from) or, once haul_open was called, written to the bundle as each
 * one verifies. What was asked is kept as a digest of its kind and key
 * (haul_asked in constant time) and its outcome, with each distinct
 * cause kept once: memory grows with the entries asked by about 60
 * bytes each.
 */
struct haul {
	struct bundle_entry	*e;
	struct ctl_check	*chk;
	size_t			 n, cap;
	size_t			 failed;	/* entries, not attempts */
	struct asked		*asked;
	size_t			 nasked, capasked;
	struct keyset		 asked_set;	/* (kind, key): index into asked */
	char			**causes;
	size_t			 ncauses, capcauses;
	struct keyset		 cause_set;	/* a cause's text: index into causes */
	struct upstate		 up[4 * CTL_MAX_LIST];
	size_t			 nup;
	struct progress		 prog;
	/* fetch: the bundle, once open */
	struct ctl_output	 out;
	struct bundle_writer	*w;
	size_t			 nout;		/* entries written */
	int			 stream;	/* haul_flush was called: write as they come */
	int			 wfailed;
	STACK_OF(X509)		*cas;		/* the CAs the answers written need */
	struct keyset		 cas_seen;	/* their digests */
	struct keyset		 signers;	/* responders whose CAs are in cas */
};

/* A new zeroed entry at the haul's end, with room for its check in h->chk; NULL: out of memory. */
struct bundle_entry *haul_add(struct haul *h);
/* Free the haul's entries and bodies and its record of what was asked; end its progress line. */
void	haul_free(struct haul *h);
/* 1 if this entry was asked for already in this run, else 0. */
int	haul_asked(const struct haul *h, enum cache_kind kind,
	    const uint8_t *key, size_t klen);
/* Remember what came of an entry (cause NULL: none); a failure counts in h->failed. */
void	haul_note(struct haul *h, enum cache_kind kind, const uint8_t *key,
	    size_t klen, enum haul_outcome o, const char *cause);
/* The run's state of the upstream at url (borrowed: url must outlive h); NULL when full. */
struct upstate *haul_up(struct haul *h, const char *url);
/* The collateral fetched joins the haul, bodies and failures: CTL_OK or CTL_REJECTED. */
int	haul_take(struct haul *h, struct ctl_fetched *cf);
/* One line per kind asked to stderr, outcomes with their causes grouped. */
void	haul_summary(const struct haul *h, const char *cmd);
/*
 * Open the bundle at outpath (a temporary file until write_haul commits
 * it): CTL_OK, or CTL_NOFILE (said). Entries are held until haul_flush
 * writes them (fetch reads the RIMs' chains first); from then on
 * haul_keep writes each entry as it verifies.
 */
int	haul_open(struct ctl *ctl, struct haul *h, const char *outpath);
/*
 * The entry just added (the haul's last) verified: written and let go
 * once haul_flush was called, with the CAs its answer needs noted (t's
 * chain for its responder, built once per responder); else held.
 */
void	haul_keep(struct haul *h, struct ctl_trust *t);
/* Every entry held so far written and let go, when the bundle is open. */
void	haul_flush(struct haul *h, struct ctl_trust *t);
/* Entries in the bundle or held for it. */
size_t	haul_count(const struct haul *h);
/*
 * What is held, the CAs the answers need and the trailer, then the
 * bundle committed at outpath: a CTL_* code. Without a bundle open, none
 * is written and it fails (CTL_REJECTED).
 */
int	write_haul(struct ctl *ctl, struct ctl_trust *t, struct haul *h,
	    const char *outpath);

#endif
