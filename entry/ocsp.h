/* SPDX-License-Identifier: Apache-2.0 */
/* The OCSP kind's entry rules: an answer is admitted for the CertIDs asked, the definitive unsigned statuses, the nonce. */
#ifndef ENTRY_OCSP_H
#define ENTRY_OCSP_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "attest/ocsp_verify.h"
#include "cache/record.h"
#include "entry/kinds.h"
#include "entry/entry.h"

/*
 * The question an OCSP answer must answer: the key it would be stored
 * under and the OCSPRequest it answers. The key is ocsp_req_key of the
 * request (so an answer cannot be filed under another CertID), and the
 * answer must cover every CertID of the request. Pointers borrowed for
 * the duration of the call.
 */
struct entry_ocsp_question {
	const uint8_t	*key;
	size_t		 klen;
	const uint8_t	*request;	/* DER OCSPRequest sent upstream */
	size_t		 request_len;
	/*
	 * 1: the request's nonce is one stapled chose (a refresh, with the
	 * upstream's verify_nonce): the answer must echo it. 0: not checked
	 * (a client's own nonce, or a bundle, which is a cache by nature).
	 */
	int		 check_nonce;
	long		 skew_s;	/* tolerance for thisUpdate ahead of now */
};

/* What entry_ocsp_admit found. */
struct entry_ocsp_admission {
	enum entry_verdict	 verdict;
	/* ENTRY_STORE: kind, status and the answer's times; the caller sets the rest. */
	struct cache_meta	 meta;
	/* ENTRY_STORE, but the stored entry has a newer thisUpdate: keep that one. */
	int			 keep_stored;
	/* ocsp_verify ran: `result` holds its verdict and the issuer key hash. */
	int			 verified;
	struct ocsp_result	 result;
	/*
	 * ENTRY_REFUSE: why ("certid: requested CertID 0 not in response");
	 * ENTRY_DEFINITIVE: the status ("unauthorized"); ENTRY_PASS: why
	 * the chain cannot be completed; ENTRY_STORE: "".
	 */
	char			 reason[320];
};

/*
 * An OCSPRequest as a client, a manifest or a bundle has it: parsed into
 * req (which borrows der) and the key an answer to it is stored under
 * (ocsp_req_key: its CertIDs, not its nonce). The OCSP kind's "parse a
 * request and key it", as entry/pccs.c and entry/kds.c have theirs.
 * 0, or -1 with *why (a static string) for anything that is not a
 * well-formed request of 1..OCSP_MAX_CERTIDS CertIDs.
 */
int		 entry_ocsp_request(const uint8_t *der, size_t len,
		    struct ocsp_req *req, uint8_t key[OCSP_KEY_BYTES],
		    const char **why);

/*
 * The status name of a definitive answer (RFC 6960 4.2.1 malformedRequest,
 * sigRequired, unauthorized in the only DER form without responseBytes:
 * exactly 5 bytes), or NULL. Such answers are about the request, not the
 * responder, and every mirror would repeat them.
 */
const char	*entry_ocsp_definitive(const uint8_t *der, size_t len);

/*
 * Judge an upstream's answer `a` to question `q`, with the OCSP trust
 * store t at `now`; `stored` is the entry it would replace, or NULL.
 *   ENTRY_STORE       verified for q's CertIDs (and nonce): out->meta
 *   ENTRY_PASS        genuine-looking but its chain cannot be completed
 *                     (OCSP_UNVERIFIABLE): relay to the client, never store
 *   ENTRY_DEFINITIVE  an unsigned definitive status (entry_ocsp_definitive)
 *   ENTRY_REFUSE      anything else: the request does not parse or does not
 *                     key to q->key, or the answer fails verification
 * Returns out->verdict. Nothing is allocated.
 */
enum entry_verdict entry_ocsp_admit(struct ocsp_trust *t,
		    const struct entry_ocsp_question *q,
		    const struct entry_answer *a, const struct entry_stored *stored,
		    time_t now, struct entry_ocsp_admission *out);

#endif
