/* SPDX-License-Identifier: Apache-2.0 */
/* The Intel PCS/PCCS kind: a request's typed fields, its canonical path and key, and whether a signed answer answers it. */
#ifndef ENTRY_PCCS_H
#define ENTRY_PCCS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "attest/intel.h"
#include "cache/record.h"
#include "entry/kinds.h"
#include "cache/store.h"
#include "entry/entry.h"

#define PCCS_PATH_MAX		1200	/* pckcert: 768 hex of encrypted PPID and more */
#define PCCS_KEY_INLINE_MAX	200	/* longer canonical paths are keyed "h:" + SHA-256 */
#define PCCS_EVAL_NUM_MAX	1000000
#define PCCS_WHY_MAX		320

/* What a request asks for (the path after /{sgx|tdx}/certification/v4/). */
enum pccs_what {
	PCCS_TCB, PCCS_QE, PCCS_QVE, PCCS_QAE, PCCS_EVAL_NUMS, PCCS_PCK_CRL,
	PCCS_ROOT_CRL, PCCS_PCK_CERT, PCCS_FMSPCS, PCCS_WHAT_MAX
};
extern const char *const pccs_what_str[PCCS_WHAT_MAX];	/* "tcb", "qe/identity" ... */

/* A request, typed: everything its canonical path is rebuilt from. */
struct pccs_req {
	enum pccs_what	 what;
	int		 tdx;		/* under /tdx/ */
	enum intel_kind	 kind;		/* INTEL_KIND_MAX for fmspcs (unsigned) */
	const char	*chain_header;	/* NULL: the root CA CRL, fmspcs */
	char		 fmspc[13];	/* TCB info: 12 hex digits, upper case */
	int		 early;		/* update=early (else standard) */
	long		 eval_num;	/* tcbEvaluationDataNumber=N, else -1 */
	char		 ca[10];	/* PCK CRL: "processor" or "platform" */
	char		 ppid[769];	/* PCK certificate: upper-case hex */
	char		 cpusvn[33];
	char		 pcesvn[5];
	char		 pceid[5];
	char		 qeid[261];	/* "" when not given */
	char		 platform[8];	/* fmspcs: "all" "client" "E3" "E5", or "" */
	char		 variant[8];	/* how the client wants a CRL: "hex" "der" "pem" */
};

/* The outcome of parsing a client's request, as an HTTP answer. */
enum pccs_parse_res {
	PCCS_PARSE_OK,
	PCCS_PARSE_GONE,	/* not v4: 410 (PCS v3 reached its end of life) */
	PCCS_PARSE_NOT_FOUND,	/* no such path, or an SGX-only path under /tdx/: 404 */
	PCCS_PARSE_BAD,		/* 400, with the reason */
};

/*
 * A client's request: `path` percent-decoded, starting /sgx/certification/
 * or /tdx/certification/; `query` raw (NULL for none), read with
 * entry/query.h. Fills r (r->variant included). The reason of
 * PCCS_PARSE_BAD (and of the others) is written into why.
 */
enum pccs_parse_res	pccs_parse(const char *path, const char *query,
			    struct pccs_req *r, char *why, size_t whylen);

/*
 * A canonical path (what the daemon asks upstream and stores as the
 * request): 0 only when path is exactly pccs_canon's form of what it
 * names, so a path cannot name one object and key another; else -1 with
 * *why (a constant string). pccs_parse_canon accepts fmspcs (relayed,
 * never stored); pccs_parse_stored refuses it, for entries.
 */
int	pccs_parse_canon(const char *path, struct pccs_req *, const char **why);
int	pccs_parse_stored(const char *path, struct pccs_req *, const char **why);
/*
 * A stored entry (a bundle's, the store's): its request is a canonical,
 * storable path (pccs_parse_stored) and its key is that path's pccs_key,
 * so an answer cannot be filed under another question. 0 with r, or -1
 * with the reason in why ("request: ...", "key: ...").
 */
int	pccs_parse_entry(const uint8_t *req, size_t reqlen, const uint8_t *key,
	    size_t klen, struct pccs_req *r, char *why, size_t whylen);

/*
 * Start a request for `what` (SGX, or TDX when tdx and the path exists
 * there) with no parameters set: update=standard, no evaluation number.
 * 0, or -1 when there is no such path.
 */
int	pccs_req_for(struct pccs_req *, enum pccs_what what, int tdx);

/* What a canonical path asks for, by its path alone (cheap; no checks of the query), or PCCS_WHAT_MAX. */
enum pccs_what	pccs_what_of(const char *canon);

/* The canonical path of r into buf; -1 when it does not fit. */
int	pccs_canon(const struct pccs_req *r, char *buf, size_t len);

/* The cache key of a canonical path: the path itself, or "h:" + SHA-256 when longer than PCCS_KEY_INLINE_MAX. 0 or -1. */
int	pccs_key(const char *path, uint8_t key[CACHE_KEY_MAX_BYTES], size_t *klen);

/* Whether Intel wants the API key for this request (PCK certificates only). */
int	pccs_wants_api_key(const struct pccs_req *);

/* The judgement of an answer. */
struct pccs_admitted {
	struct cache_meta	 meta;	/* times, status, flags; the caller sets the rest */
	struct intel_result	 r;	/* what attest reported (r.verdict INTEL_OK if it verified) */
	int			 stale;	/* refused only for being older than the stored entry */
	char			 why[PCCS_WHY_MAX];	/* ENTRY_REFUSE: the reason */
};

/*
 * Whether an upstream answer may be stored for r. ENTRY_PASS for fmspcs
 * (unsigned: relayed, never stored); ENTRY_STORE when Intel's signature
 * verifies at `now`, the answer answers the question (pccs_binds) and it
 * is not older than `stored` (the entry it would replace, or NULL);
 * ENTRY_REFUSE with out->why otherwise. On ENTRY_STORE out->meta has
 * this_update, next_update, produced_at, status (the
 * tcbEvaluationDataNumber when it fits) and CACHE_F_NO_REFRESH for PCK
 * certificates.
 */
enum entry_verdict	pccs_admit(const struct pccs_req *r,
			    const struct entry_answer *, const struct entry_stored *stored,
			    time_t now, struct pccs_admitted *out);
/* The same for an entry read back (a bundle's, the store's): body and its kept headers. */
enum entry_verdict	pccs_admit_kept(const struct pccs_req *r, const uint8_t *body,
			    size_t len, const uint8_t *headers, size_t headers_len,
			    const struct entry_stored *stored, time_t now,
			    struct pccs_admitted *out);

/*
 * A verified answer answers the question r asks (the signature alone
 * does not say so; docs/collateral.md, "What an Intel answer must
 * answer"). 0, or -1 with the reason in why.
 */
int	pccs_binds(const struct pccs_req *r, const struct intel_result *v,
	    char *why, size_t whylen);

/*
 * 1 when `stored` (or NULL) holds a newer answer than cand (a higher
 * tcbEvaluationDataNumber, or the same and a later issue date): a newer
 * answer is never replaced by an older one. The stored entry is read as
 * of its own issue date, so an expired one still counts.
 */
int	pccs_older_than_stored(const struct pccs_req *r,
	    const struct intel_result *cand, const struct entry_stored *stored);

/* Response headers kept with an entry and served again, in this order. */
extern const char *const pccs_keep_headers[];
/* What an upstream URL may end with (the API root is appended per request). */
extern const char *const pccs_base_suffixes[];

#endif
