/* SPDX-License-Identifier: Apache-2.0 */
/* The run of one fetch or prefetch (tools/staplectl_haul.c): what it gathered and what came of each entry asked. */
#ifndef TOOLS_STAPLECTL_HAUL_H
#define TOOLS_STAPLECTL_HAUL_H

#include <stddef.h>
#include <stdint.h>

#include "cache/store.h"
#include "tools/bundle.h"
#include "tools/progress.h"
#include "tools/staplectl.h"

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
extern const char *const fetch_outcome_str[FETCH_OUTCOME_MAX];

#define FETCH_CAUSE_BYTES	320

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

/* A new zeroed entry at the haul's end, with room for its check in h->chk; NULL: out of memory. */
struct bundle_entry *haul_add(struct haul *h);
/* Free the haul's entries and bodies and its record of what was asked; end its progress line. */
void	haul_free(struct haul *h);
/* 1 if this entry was asked for already in this run, else 0. */
int	haul_asked(const struct haul *h, enum cache_kind kind,
	    const uint8_t *key, size_t klen);
/* Remember what came of an entry (cause NULL: none); a failure counts in h->failed. */
void	haul_note(struct haul *h, enum cache_kind kind, const uint8_t *key,
	    size_t klen, enum fetch_outcome o, const char *cause);
/* The run's state of the upstream at url (borrowed: url must outlive h); NULL when full. */
struct upstate *haul_up(struct haul *h, const char *url);
/* The collateral fetched joins the haul, bodies and failures: CTL_OK or CTL_REJECTED. */
int	haul_take(struct haul *h, struct ctl_fetched *cf);
/* One line per kind asked to stderr, outcomes with their causes grouped. */
void	haul_summary(const struct haul *h, const char *cmd);
/* The haul and the CAs its OCSP answers need as a bundle at outpath: a CTL_* code. */
int	write_haul(struct ctl *ctl, struct ctl_trust *t, struct haul *h,
	    const char *outpath);

#endif
