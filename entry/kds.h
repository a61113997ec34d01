/* SPDX-License-Identifier: Apache-2.0 */
/* The AMD KDS kind: a request's typed fields, its canonical path (the cache key), and whether an answer may be admitted for it. */
#ifndef ENTRY_KDS_H
#define ENTRY_KDS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "attest/amd.h"
#include "cache/record.h"
#include "entry/kinds.h"
#include "cache/store.h"
#include "entry/entry.h"

#define KDS_PATH_MAX	256	/* a canonical path and its NUL; the longest is 188 */
#define KDS_SPL_MAX	255	/* an SPL is one byte of the reported TCB */

/* What a KDS path names. */
enum kds_what {
	KDS_CHAIN,	/* /{vcek|vlek}/v1/{P}/cert_chain: ASK or ASVK, then ARK */
	KDS_CRL,	/* /{vcek|vlek}/v1/{P}/crl: the ARK's CRL */
	KDS_VEK,	/* /vcek/v1/{P}/{hwid}?...: one chip's VCEK at one TCB */
	KDS_WHAT_MAX
};
extern const char *const kds_what_str[KDS_WHAT_MAX];	/* "cert_chain", "crl", "vcek" */

/* A request in typed fields: "/vcek/v1/Milan/cert_chain", "/vlek/v1/Genoa/crl", "/vcek/v1/Turin/<hwid>?...". */
struct kds_req {
	enum kds_what		what;
	enum amd_signer		signer;
	enum amd_product	product;
	struct amd_vek_id	id;	/* KDS_VEK: HWID and SPLs (fmc -1 but on Turin) */
};

/* The headers kept with an entry, and the API suffixes an upstream base may end in (NULL-terminated). */
extern const char *const kds_keep_headers[];
extern const char *const kds_base_suffixes[];

/*
 * A client's request: `path` percent-decoded, `query` raw (NULL when the
 * URL has no '?'). Hex either case, SPLs decimal 0..255 with leading
 * zeros, any order, each at most once. Returns 0, or -1 with *why (a
 * static string for the client) and *status: 404 for what KDS does not
 * serve (not a KDS path, an unknown product, a VLEK by hardware ID), else
 * 400.
 */
int	kds_parse_request(const char *path, const char *query, struct kds_req *,
	    const char **why, int *status);
/*
 * A canonical path (as stored with an entry, listed in a manifest or
 * a bundle): 0 only when `path` is exactly kds_canon of what it names,
 * so a path cannot name one object and key another; else -1 with *why.
 */
int	kds_parse_canon(const char *path, struct kds_req *, const char **why);
/*
 * A stored entry (a bundle's, the store's): its request is a canonical
 * path (kds_parse_canon) and its key that path's kds_key, so an answer
 * cannot be filed under another question. 0 with r, or -1 with the
 * reason in why ("request: ...", "key: ...").
 */
int	kds_parse_entry(const uint8_t *req, size_t reqlen, const uint8_t *key,
	    size_t klen, struct kds_req *r, char *why, size_t whylen);
/*
 * The one upstream path a request is rebuilt into, which is also its
 * cache key and its stored request: lower-case hex, decimal SPLs, KDS's
 * parameter order. 0, or -1 when it does not fit in len (buf then holds
 * a truncated string).
 */
int	kds_canon(const struct kds_req *, char *buf, size_t len);
/* The cache key of r: its canonical path (no NUL). 0, or -1 when it does not fit. */
int	kds_key(const struct kds_req *, uint8_t key[CACHE_KEY_MAX_BYTES],
	    size_t *klen);
/* The request for the cert_chain that signs r's VCEK (same product and signer). */
void	kds_chain_req(const struct kds_req *r, struct kds_req *chain);

/* The product's cert_chain a VCEK is checked against, as the caller found it. */
struct kds_chain {
	const uint8_t	*pem;	/* NULL: none found; admit takes the compiled-in one */
	size_t		 len;
};

/* What admit found. */
struct kds_admit {
	enum entry_verdict	verdict;	/* ENTRY_STORE or ENTRY_REFUSE */
	struct cache_meta	meta;		/* ENTRY_STORE: times and flags */
	struct amd_result	amd;		/* what attest/amd.c reported */
	int			builtin_chain;	/* the VCEK was checked against the compiled-in chain */
	char			reason[320];	/* ENTRY_REFUSE: why, for the log */
};

/*
 * Whether `answer` (a 2xx body) may be stored under r, at `now`: it
 * verifies to the pinned ARK of r's product AND answers the question r
 * asks (docs/collateral.md, "What a KDS answer must answer"):
 *   cert_chain: the ARK is r's product's pinned ARK, the first certificate
 *     is that product's ASK (/vcek) or ASVK (/vlek);
 *   crl: issued and signed by r's product's pinned ARK (a VCEK and a VLEK
 *     CRL are both the ARK's: attest cannot tell them apart);
 *   VCEK: signed by the ASK of `chain` (or the compiled-in chain of r's
 *     product when chain is NULL or chain->pem is NULL), which is checked
 *     as a cert_chain of r's product; its HWID and every SPL are r's.
 * `stored`, the entry the answer would replace, may be NULL: KDS has no
 * newer-than-stored rule (a VCEK never changes; a CRL is replaced by the
 * upstream's current one). Pure. Returns out->verdict; ENTRY_REFUSE with
 * out->reason ("<amd verdict>: <detail>") is a failure of that upstream.
 */
enum entry_verdict kds_admit(const struct kds_req *r,
	    const struct entry_answer *answer, const struct entry_stored *stored,
	    const struct kds_chain *chain, time_t now, struct kds_admit *out);

/*
 * A TCB as staplectl prints it: a new JSON object {"bl", "tee", "snp",
 * "ucode"[, "fmc"]}, or NULL when out of memory.
 */
struct json_t;
struct json_t	*kds_tcb_json(const struct amd_tcb *);

#endif
