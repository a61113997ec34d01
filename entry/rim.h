/* SPDX-License-Identifier: Apache-2.0 */
/* The RIM kind's entry rules: the answer bound to the id asked, retention, the chain CAs the OCSP pool learns. */
#ifndef ENTRY_RIM_H
#define ENTRY_RIM_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "attest/ocsp_verify.h"
#include "attest/rim.h"
#include "cache/record.h"
#include "entry/kinds.h"
#include "entry/entry.h"

/* RIMs are version-addressed: kept a month, served stale while upstreams fail. */
#define RIM_RETENTION_S		(30L * 24 * 3600)

/* RIMs are version-addressed: valid this long from the fetch on, refreshed meanwhile. */

/* NVIDIA's RIM service path, GET {base}/v1/rim/{id}; the id is the cache key. */
#define ENTRY_RIM_PATH_PREFIX	"/v1/rim/"
#define ENTRY_RIM_PATH_BYTES	(sizeof(ENTRY_RIM_PATH_PREFIX) + RIM_ID_MAX_CHARS)	/* with the NUL */

/*
 * The canonical upstream request of a RIM id (len bytes, not
 * NUL-terminated): ENTRY_RIM_PATH_PREFIX + id into path, the request the
 * entry is stored with and refreshed by. Returns 0, or -1 when the id is
 * not a valid RIM id (rim_id_validn): it names a file elsewhere, so it is
 * checked before anything else.
 */
int	entry_rim_path(const char *id, size_t len,
	    char path[ENTRY_RIM_PATH_BYTES]);

/* The question a RIM answer must answer. Pointers borrowed for the call. */
struct entry_rim_question {
	const uint8_t	*key;		/* the RIM id asked: the cache key */
	size_t		 klen;
	long		 retention_s;	/* config_retention_s(): rim.retention_s or its default */
	/* When the answer was fetched (a bundle's thisUpdate); 0 or later than now: now. */
	time_t		 fetched_at;
};

/* What entry_rim_admit found; release with entry_rim_admission_free. */
struct entry_rim_admission {
	enum entry_verdict	 verdict;	/* ENTRY_STORE or ENTRY_REFUSE */
	/* ENTRY_STORE: kind and times (valid for the retention); the caller sets the rest. */
	struct cache_meta	 meta;
	/* ENTRY_STORE, but the stored entry has a newer thisUpdate: keep that one. */
	int			 keep_stored;
	char			 id[RIM_ID_MAX_CHARS + 1];
	/* ENTRY_STORE: the RIM and its KeyInfo chain, leaf first (owned). */
	struct rim_result	 result;
	/*
	 * ENTRY_STORE: learn[i] is 1 when result.chain.der[i] is a CA the
	 * OCSP pool's rule admits (ocsp_trust_chaining_cas against the trust
	 * store given): the caller adds those to its OCSP pool, in memory
	 * (ocsp_trust_add_pool_der) and in the cache (entry_pool_put),
	 * before the RIM is answered, so the OCSP answers for its signing
	 * chain, which a client asks next, verify. nlearn counts them.
	 */
	int			 learn[RIM_MAX_CERTS];
	size_t			 nlearn;
	char			 reason[320];	/* ENTRY_REFUSE: why */
};

/*
 * Judge an upstream's answer `a` to question `q`: the key is a valid RIM
 * id, the envelope's id is that id, its sha256 matches the document and
 * the KeyInfo chain reaches an anchor of rt (rim_verify). ot is the OCSP
 * trust store whose pool the chain's CAs may join (NULL: none learned).
 * `stored` is the entry it would replace, or NULL. Returns out->verdict:
 * ENTRY_STORE (out->meta filled) or ENTRY_REFUSE (out->reason). Call
 * entry_rim_admission_free(out) in both cases.
 */
enum entry_verdict entry_rim_admit(struct rim_trust *rt, struct ocsp_trust *ot,
		    const struct entry_rim_question *q,
		    const struct entry_answer *a, const struct entry_stored *stored,
		    time_t now, struct entry_rim_admission *out);
/* Release what an admission owns; accepts NULL. */
void		 entry_rim_admission_free(struct entry_rim_admission *);

#endif
