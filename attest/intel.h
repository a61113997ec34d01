/* SPDX-License-Identifier: Apache-2.0 */
/* Intel PCS/PCCS collateral verification: signed JSON, CRLs and PCK certificates. */
#ifndef ATTEST_INTEL_H
#define ATTEST_INTEL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define INTEL_SKEW_S		300		/* issueDate/thisUpdate may be this far ahead */
#define INTEL_MAX_BODY_BYTES	(1024 * 1024)	/* TCB info is ~10 KiB, PCK CRLs a few */
#define INTEL_MAX_CHAIN_BYTES	32768		/* an issuer-chain header, encoded */
#define INTEL_MAX_CHAIN_CERTS	4		/* signer, intermediate, root, spare */
#define INTEL_MAX_JSON_DEPTH	16

/* What a body claims to be; the caller says which one it asked for. */
enum intel_kind {
	INTEL_TCB_INFO = 0,	/* {"tcbInfo":{..},"signature":".."}, SGX or TDX */
	INTEL_ENCLAVE_IDENTITY,	/* {"enclaveIdentity":..}: QE, QVE, QAE, TD_QE */
	INTEL_TCB_EVAL_NUMS,	/* {"tcbEvaluationDataNumbers":..} */
	INTEL_PCK_CRL,		/* pckcrl?ca=processor|platform */
	INTEL_ROOT_CA_CRL,	/* IntelSGXRootCA.der, PCCS rootcacrl */
	INTEL_PCK_CERT,		/* pckcert: one PEM leaf */
	INTEL_KIND_MAX
};
extern const char *const intel_kind_str[INTEL_KIND_MAX];

enum intel_verdict {
	INTEL_OK = 0,		/* store and serve */
	INTEL_ERR_PARSE,	/* body is not the asked-for kind, or a field is bad */
	INTEL_ERR_ISSUER_CHAIN,	/* issuer chain missing, not URL-encoded PEM */
	INTEL_ERR_CHAIN,	/* chain does not verify to the pinned root at now */
	INTEL_ERR_SIGNER,	/* chains, but is not the signer this kind needs */
	INTEL_ERR_SIGNATURE,	/* signature does not verify */
	INTEL_ERR_FUTURE,	/* issueDate/thisUpdate > now + INTEL_SKEW_S */
	INTEL_ERR_EXPIRED,	/* nextUpdate <= now */
	INTEL_VERDICT_MAX
};
extern const char *const intel_verdict_str[INTEL_VERDICT_MAX];

/* How a CRL body was encoded (PCS serves PEM or DER, PCCS hex of DER). */
enum intel_crl_form {
	INTEL_CRL_NONE = 0,	/* not a CRL */
	INTEL_CRL_DER,
	INTEL_CRL_PEM,
	INTEL_CRL_HEX,
	INTEL_CRL_FORM_MAX
};
extern const char *const intel_crl_form_str[INTEL_CRL_FORM_MAX];

/* What a verification found; filled as far as parsing got. */
struct intel_result {
	enum intel_verdict	verdict;
	enum intel_kind		kind;
	/*
	 * JSON: issueDate and nextUpdate. CRLs: thisUpdate and nextUpdate.
	 * PCK certificate: notBefore and notAfter (PCCS refreshes PCK
	 * certificates only on request; notAfter is years away).
	 */
	time_t			this_update;
	time_t			next_update;
	/*
	 * tcbEvaluationDataNumber of TCB info and identities; the highest
	 * listed in tcbEvaluationDataNumbers; -1 when absent (CRLs, certs).
	 */
	long			tcb_evaluation_data_number;
	int			version;	/* JSON "version", else -1 */
	char			id[8];		/* "SGX" "TDX" "QE" "QVE" "QAE" "TD_QE" */
	char			fmspc[13];	/* TCB info only, as sent */
	char			ca[12];		/* CRL/PCK issuer: "processor" "platform" "root" */
	enum intel_crl_form	crl_form;
	long			crl_entries;	/* revoked entries; -1 if not a CRL */
	char			detail[256];	/* human-readable reason */
};

/*
 * Verify one PCS/PCCS response before it is stored.
 *
 * body/len: the response body exactly as received. issuer_chain/chain_len:
 * the issuer-chain header value as received (TCB-Info-Issuer-Chain or
 * SGX-TCB-Info-Issuer-Chain, SGX-Enclave-Identity-Issuer-Chain,
 * TCB-Evaluation-Data-Numbers-Issuer-Chain, SGX-PCK-CRL-Issuer-Chain,
 * SGX-PCK-Certificate-Issuer-Chain): percent-encoded PEM, signer first,
 * root last; an already-decoded PEM is accepted too ('+' is never a
 * space). For INTEL_ROOT_CA_CRL the chain is not used and may be NULL:
 * the pinned root signs that CRL.
 *
 * Signed JSON: ECDSA P-256/SHA-256 over the exact bytes of the value of
 * the kind's member (found in the raw text, never re-serialised), by the
 * chain's first certificate, which must be "Intel SGX TCB Signing". The
 * top-level object must hold exactly that member and "signature".
 * CRLs: signed by the chain's first certificate (PCK Processor/Platform
 * CA) or the root, issuer name equal to the signer's subject.
 * PCK certificates: the body's certificate, issued by a PCK CA.
 *
 * now: the chain is verified at now (X509_VERIFY_PARAM_set_time, the
 * pinned root is the only trust anchor); the object is refused when its
 * nextUpdate <= now or its issueDate/thisUpdate > now + INTEL_SKEW_S.
 * For a PCK certificate the window is its own validity, checked with the
 * chain. Pure: no clock, no I/O. Returns 0 when out->verdict is INTEL_OK,
 * else -1 with out->verdict and out->detail set.
 */
int	intel_verify(enum intel_kind kind, const uint8_t *body, size_t len,
	    const char *issuer_chain, size_t chain_len, time_t now,
	    struct intel_result *out);

/*
 * May `cand` (just verified) replace `cur` (stored) for the same cache key
 * (same kind, FMSPC, update=early|standard flavour, CA)? 0 when cand is
 * older: a lower tcbEvaluationDataNumber, or the same number (or none) and
 * an earlier issueDate/thisUpdate. 1 otherwise. A newer evaluation number
 * is never replaced by an older one (docs/verification.md, "Intel PCS/PCCS
 * collateral").
 */
int	intel_may_replace(const struct intel_result *cur,
	    const struct intel_result *cand);

/*
 * A CRL body in any of the forms above as DER: a new buffer the caller
 * frees, or NULL. For serving one dialect from another (PCCS's hex).
 */
uint8_t	*intel_crl_to_der(const uint8_t *body, size_t len, size_t *outlen);

#endif
