/* SPDX-License-Identifier: Apache-2.0 */
/* A record read back (a bundle's line, a store's entry, a damaged store's page) judged again by its kind's rule: one entry point, one function per kind in the kind table. */
#ifndef ENTRY_JUDGE_H
#define ENTRY_JUDGE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "attest/ocsp_verify.h"
#include "attest/rim.h"
#include "cache/record.h"
#include "entry/kinds.h"
#include "entry/entry.h"
#include "entry/kds.h"
#include "entry/pccs.h"
#include "entry/rim.h"

struct cache;

/*
 * Another record that a rule needs beside the one judged (a VCEK's
 * cert_chain), looked up by kind and key where the caller keeps records
 * (a bundle, a store, a damaged file's scan). Returns the record's
 * response as a copy the judge frees (*len its length), or NULL when
 * there is none; *from names where it was found ("the bundle's"), for
 * messages.
 */
typedef uint8_t *entry_find_fn(void *arg, enum cache_kind kind,
    const uint8_t *key, size_t klen, size_t *len, const char **from);

/*
 * What records are judged against: the trust the daemon (or staplectl)
 * admits upstream answers with. Borrowed for the call.
 */
struct entry_rules {
	struct ocsp_trust	*ocsp;		/* OCSP answers, the pool's rule */
	struct rim_trust	*rim;		/* NULL: RIM records are refused */
	long			 ocsp_skew_s;	/* ocsp.skew_s */
	long			 rim_retention_s; /* config_retention_s(&cfg->svc[CACHE_KIND_RIM]) */
	/*
	 * Where a RIM's KeyInfo CAs that the pool's rule admits are kept
	 * (entry_pool_put), as the RIM route keeps them; they join ocsp
	 * too. NULL: ocsp only. Used by the salvage (entry_salvage sets it
	 * to its store); entry_judge itself learns nothing.
	 */
	struct cache		*pool;
	/* A VCEK's cert_chain; NULL: the compiled-in chain of its product. */
	entry_find_fn		*find;
	void			*find_arg;
};

/*
 * The rules of a configuration: r zeroed, then its OCSP skew and RIM
 * retention from cfg, and the two trust stores given (borrowed; rim may
 * be NULL). The daemon and staplectl both start from it.
 */
struct config;
void	entry_rules_init(struct entry_rules *r, const struct config *cfg,
	    struct ocsp_trust *ocsp, struct rim_trust *rim);

/* A record as it was stored: what was asked and what the vendor answered. Borrowed. */
struct entry_record {
	const uint8_t	*key;
	size_t		 klen;
	const uint8_t	*request;
	size_t		 request_len;
	const uint8_t	*response;
	size_t		 response_len;
	const uint8_t	*headers;	/* kept headers, "Name: value\r\n" lines */
	size_t		 headers_len;
	/* RIM: when it was fetched (its validity runs from then); 0 or later than now: now. */
	time_t		 fetched_at;
};

/* What entry_judge found; release with entry_judgement_free. */
struct entry_judgement {
	int			 ok;		/* 1: verified at now and answers its key */
	/* ok: kind, status, times and flags from the body; the caller sets the rest. */
	struct cache_meta	 meta;
	int			 keep_stored;	/* ok, but `stored` holds a newer answer */
	char			 reason[320];	/* !ok: why */
	/*
	 * What each kind's rule read, for callers that show or learn from
	 * it (pccs.req.kind is INTEL_KIND_MAX until a request parsed).
	 */
	struct entry_rim_admission rim;	/* RIM: the chain, and which CAs to learn */
	struct {
		struct pccs_req		 req;
		struct pccs_admitted	 ad;
	}			 pccs;
	struct {
		struct kds_req		 req;
		struct kds_admit	 ad;
	}			 kds;
};

/*
 * One kind's rule for a record read back, the shape of entry_judge (a
 * column of the kind table, kind_table[kind].judge).
 */
typedef int entry_judge_fn(const struct entry_rules *,
    const struct entry_record *, const struct entry_stored *stored,
    time_t now, struct entry_judgement *out);

/*
 * Judge a record of `kind` again, as if it had just arrived from an
 * upstream, by the rule the daemon admits answers with (no nonce: a
 * stored answer is a cache by nature): the body verifies against the
 * rules at `now` and answers the question its key asks (an answer filed
 * under another key is refused). `stored` is the entry it would replace
 * (meta, and for PCCS its body and kept headers), or NULL: an OCSP, RIM
 * or PCCS record older than it sets out->keep_stored. Past nextUpdate is
 * not judged here (the caller decides: the salvage drops it, a bundle's
 * import reports it). Returns out->ok: 1, or 0 with out->reason. Call
 * entry_judgement_free(out) in both cases.
 */
int	entry_judge(enum cache_kind kind, const struct entry_rules *,
	    const struct entry_record *, const struct entry_stored *stored,
	    time_t now, struct entry_judgement *out);
/* Release what a judgement owns; accepts NULL. */
void	entry_judgement_free(struct entry_judgement *);

/* The rows of the kind table. */
entry_judge_fn	entry_judge_ocsp, entry_judge_rim, entry_judge_pccs,
		entry_judge_kds;

#endif
