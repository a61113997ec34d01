/* SPDX-License-Identifier: Apache-2.0 */
/* A record read back (a bundle's line, a store's entry, a damaged store's page) judged again by its kind's admit: the question, the rules and the judgement every kind's admit shares. */
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
#include "entry/ocsp.h"
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
 * What answers are judged against: the configuration and each kind's
 * trust, which the daemon (per generation) and staplectl build once.
 * Borrowed for the call.
 */
struct config;
struct entry_rules {
	const struct config	*cfg;		/* entry_rules_section; NULL: zeros */
	/*
	 * Each kind's trust store, by its byte, of the kind's own type (the
	 * OCSP kind's struct ocsp_trust, the RIM kind's struct rim_trust),
	 * or NULL: a kind whose rule needs one refuses every answer then.
	 */
	void			*trust[CACHE_KIND_MAX];
	/*
	 * Where CAs a record's rule finds for the OCSP pool are kept
	 * (entry_pool_put), as the daemon keeps them. NULL: none. Used by
	 * the salvage (entry_salvage sets it to its store); a kind's admit
	 * itself learns nothing.
	 */
	struct cache		*pool;
	/* Another record a rule needs (a VCEK's cert_chain); NULL: none (the compiled-in chain then). */
	entry_find_fn		*find;
	void			*find_arg;
};

/*
 * The rules of a configuration: r zeroed, then cfg (borrowed), and no
 * trust: the caller sets r->trust[k] of the kinds it judges. The daemon
 * and staplectl both start from it.
 */
void	entry_rules_init(struct entry_rules *r, const struct config *cfg);
/*
 * The section of kind k that r's rules read (skew_s, retention_s): the
 * configuration's, or, when r has none (cfg NULL), one of zeros (no
 * skew, the default retention). Borrowed from r->cfg.
 */
struct config_service;
const struct config_service *entry_rules_section(const struct entry_rules *r,
	    enum cache_kind k);

/*
 * The question an answer must answer, for a kind's admit: the key it
 * would be stored under and the canonical upstream request it answers
 * (an OCSPRequest, a path), as fetched or as a record read back.
 * Pointers borrowed for the call.
 */
struct entry_query {
	const uint8_t	*key;
	size_t		 klen;
	const uint8_t	*request;
	size_t		 request_len;
	/*
	 * The kind's typed request the caller already holds (a struct
	 * pccs_req, a struct kds_req), or NULL: admit parses request (and
	 * checks that it keys to key).
	 */
	const void	*typed;
	/* OCSP: the request's nonce is stapled's: the answer must echo it. */
	int		 check_nonce;
	/* RIM: when the answer was fetched; 0 or later than now: now. */
	time_t		 fetched_at;
	/*
	 * 1: a record read back (a bundle's line, a store's entry), judged as
	 * if just fetched: no nonce, the request capped as a client's is,
	 * the answer's headers its kept ones, and refusals worded for the
	 * operator who brought it. 0: an upstream's answer.
	 */
	int		 read_back;
};

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

/*
 * What a kind's admit (and entry_judge) found; release with
 * entry_judgement_free.
 */
struct entry_judgement {
	enum entry_verdict	 verdict;
	int			 ok;		/* 1: verified at now and answers its key */
	/* ok: kind, status, times and flags from the body; the caller sets the rest. */
	struct cache_meta	 meta;
	int			 keep_stored;	/* ok, but `stored` holds a newer answer */
	char			 reason[320];	/* !ok: why */
	/*
	 * What each kind's rule read, for callers that show or learn from
	 * it (pccs.req.kind is INTEL_KIND_MAX until a request parsed).
	 */
	struct entry_ocsp_admission ocsp; /* OCSP: ocsp_verify's result */
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
 * A kind's rule for an answer (struct kind's admit): whether `a`, asked
 * by `q`, may be stored under q->key at `now`, against the rules r;
 * `stored` is the entry it would replace, or NULL. out is zeroed by the
 * caller (entry_judge, or the daemon's verify) with out->pccs.req.kind
 * INTEL_KIND_MAX. Fills out->verdict, and on ENTRY_STORE out->meta
 * (kind, status, times, flags: the caller sets the rest) and
 * out->keep_stored; otherwise out->reason. Returns out->verdict; call
 * entry_judgement_free(out) in every case.
 */
typedef enum entry_verdict entry_admit_fn(const struct entry_rules *r,
    const struct entry_query *q, const struct entry_answer *a,
    const struct entry_stored *stored, time_t now,
    struct entry_judgement *out);

/*
 * Judge a record of `kind` again, as if it had just arrived from an
 * upstream, by the kind's admit (kind_table[kind]->admit), the rule the
 * daemon admits answers with, with a read_back question (no nonce: a
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
/*
 * For a kind's admit: out->reason from fmt, out->verdict v. Returns v.
 */
enum entry_verdict entry_judged(struct entry_judgement *out,
	    enum entry_verdict v, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* Release what a judgement owns; accepts NULL. */
void	entry_judgement_free(struct entry_judgement *);

#endif
