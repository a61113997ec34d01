/* SPDX-License-Identifier: Apache-2.0 */
/* OCSP responses as NVIDIA signs them: the pinned trust, its pool, verification. */
#ifndef ATTEST_OCSP_VERIFY_H
#define ATTEST_OCSP_VERIFY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/x509.h>

#include "attest/ocsp_req.h"

/* Trust: pinned anchors plus an untrusted pool used only to build chains. */
struct ocsp_trust;

struct ocsp_trust *ocsp_trust_new(void);
void	ocsp_trust_free(struct ocsp_trust *);
/* Add every certificate in a PEM buffer. Return the count added, or -1. */
int	ocsp_trust_add_anchors_pem(struct ocsp_trust *, const char *pem, size_t len);
int	ocsp_trust_add_pool_pem(struct ocsp_trust *, const char *pem, size_t len);
/*
 * The same into the anchors (anchors 1) or the pool (0), saying on -1
 * why the buffer adds nothing: *why is a static string ("no
 * certificates", der_cert_check's reason for a block, "out of memory").
 * A PEM with one bad block adds nothing. The caller reads the file and
 * names it in its message: attest/ never opens one.
 */
int	ocsp_trust_add_pem(struct ocsp_trust *, int anchors, const char *pem,
	    size_t len, const char **why);
/*
 * The compiled-in NVIDIA roots and public intermediates (attest/nvidia_certs.c).
 * Both return how many; the certificates are parsed when first needed.
 */
int	ocsp_trust_add_builtin_anchors(struct ocsp_trust *);
int	ocsp_trust_add_builtin_pool(struct ocsp_trust *);
/*
 * Add one DER certificate to the pool (learned from evidence or bundles).
 * Every certificate added, here or from PEM, passes der_cert_check.
 */
int	ocsp_trust_add_pool_der(struct ocsp_trust *, const uint8_t *der, size_t len);
size_t	ocsp_trust_anchor_count(struct ocsp_trust *);
size_t	ocsp_trust_pool_count(struct ocsp_trust *);
/*
 * The anchors and the pool themselves, the compiled-in ones parsed
 * first: borrowed, valid and growing (the pool appends only) while t
 * lives, for a caller that builds or names chains itself. NULL when out
 * of memory.
 */
STACK_OF(X509)	*ocsp_trust_anchors(struct ocsp_trust *);
STACK_OF(X509)	*ocsp_trust_pool(struct ocsp_trust *);
/*
 * How many verifications found their responder judged sound before and
 * checked only the answer's own signature (see ocsp_verify).
 */
size_t	ocsp_trust_reuses(const struct ocsp_trust *);

/*
 * The pool's admission rule, for every path that learns intermediates
 * (evidence, PEM and RIM KeyInfo chains, manifests, bundles): of the n
 * DER certificates given, which are CA certificates (basicConstraints
 * cA, not self-signed) that chain to an anchor through the pool and the
 * other certificates given. Each one is tried with all the others at
 * hand, so the order does not matter and a whole new hierarchy (CA1
 * under an anchor, CA2 under CA1, ...) qualifies in one pass. Dates are
 * not checked: an old intermediate still names its issuer, and answers
 * are judged at their own time by ocsp_verify. Nothing is added: the
 * caller adds the admitted ones (ocsp_trust_add_pool_der) wherever it
 * keeps them. Sets ok[i] to 1 or 0 (0 also for one that is not one DER
 * certificate); returns how many are 1, or -1 (bad arguments, out of
 * memory; ok[] is then all 0).
 */
int	ocsp_trust_chaining_cas(struct ocsp_trust *, const uint8_t *const der[],
	    const size_t len[], size_t n, int ok[]);

enum ocsp_verdict {
	OCSP_OK = 0,		/* store and serve */
	OCSP_UNVERIFIABLE,	/* genuine-looking, chain incomplete: pass on, never store */
	OCSP_ERR_PARSE,		/* not a DER OCSPResponse; or a certificate
				   in it fails der_cert_check (attest/der.h) */
	OCSP_ERR_STATUS,	/* responseStatus is not successful */
	OCSP_ERR_NOT_BASIC,	/* not a BasicOCSPResponse */
	OCSP_ERR_SIGNATURE,	/* signature does not verify */
	OCSP_ERR_SIGNER,	/* signer not authorised for the CertID's issuer */
	OCSP_ERR_CHAIN,		/* signer does not chain to an anchor */
	OCSP_ERR_CERTID,	/* a requested CertID is missing */
	OCSP_ERR_FUTURE,	/* thisUpdate > now + skew */
	OCSP_ERR_EXPIRED,	/* nextUpdate <= now */
	OCSP_ERR_NONCE,		/* our own nonce was not echoed */
	OCSP_VERDICT_MAX
};
extern const char *const ocsp_verdict_str[OCSP_VERDICT_MAX];

enum ocsp_cert_status {
	OCSP_CERT_GOOD = 0,
	OCSP_CERT_REVOKED = 1,
	OCSP_CERT_UNKNOWN = 2,
};
extern const char *const ocsp_cert_status_str[3];

struct ocsp_verify_opts {
	time_t		 now;
	long		 skew_s;	/* tolerance for thisUpdate in the future */
	const uint8_t	*nonce;		/* the nonce we sent, or NULL: not checked */
	size_t		 nonce_len;
};

/* What a verification found; filled as far as parsing got. */
struct ocsp_result {
	enum ocsp_verdict	verdict;
	int			response_status;
	time_t			this_update;	/* latest over the requested CertIDs */
	time_t			next_update;	/* earliest; thisUpdate + 1 h if absent */
	time_t			produced_at;
	int			cert_status;	/* worst: revoked > unknown > good */
	int			revocation_reason; /* -1 when none */
	uint8_t			issuer_key_hash[64]; /* of the first CertID, for logs */
	size_t			issuer_key_hash_len;
	char			detail[256];	/* human-readable reason */
};

/*
 * Verify a DER OCSPResponse against the request it answers (RFC 6960 and
 * OCSP_basic_verify semantics; the anchors are the only trust store).
 * The clock is opts->now. The verdict depends on the arguments alone:
 * the trust remembers the responders it judged sound (up to 16, each
 * with the span in which its chain is within its dates, all forgotten
 * when a certificate is added), so that a later answer from one of them
 * has only its own signature checked. Returns 0 when verdict is OCSP_OK,
 * otherwise -1 with out->verdict and out->detail set.
 */
int	ocsp_verify(struct ocsp_trust *, const uint8_t *resp, size_t len,
	    const struct ocsp_req *req, const struct ocsp_verify_opts *opts,
	    struct ocsp_result *out);

#endif
