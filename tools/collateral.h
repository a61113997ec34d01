/* Intel PCS and AMD KDS for staplectl: the daemon's canonical paths and keys, and what a TDX/SGX quote or an SEV-SNP report needs. */
#ifndef TOOLS_COLLATERAL_H
#define TOOLS_COLLATERAL_H

#include <stddef.h>
#include <stdint.h>

#include "attest/amd.h"
#include "attest/intel.h"
#include "cache/store.h"
#include "entry/kds.h"

/*
 * The canonical PCCS forms are proxy/pccs_route.c's (staplectl does not
 * link proxy/): the daemon rebuilds every request into one of them, keys
 * the entry by it and stores it as the request. KDS's are entry/kds.h's.
 */
#define COLL_PATH_MAX		1200	/* pckcert: 768 hex of encrypted PPID and more */
#define COLL_PCCS_INLINE_MAX	200	/* longer PCCS paths are keyed "h:" + SHA-256 */

enum coll_pccs_what {
	CP_TCB, CP_QE, CP_QVE, CP_QAE, CP_EVAL_NUMS, CP_PCK_CRL, CP_ROOT_CRL,
	CP_PCK_CERT, CP_MAX
};

struct coll_pccs {
	enum coll_pccs_what	 what;
	int			 tdx;		/* under /tdx/ */
	enum intel_kind		 kind;
	const char		*chain_header;	/* NULL: the root CA CRL */
	char			 fmspc[13];	/* TCB info, upper case */
	long			 eval_num;	/* tcbEvaluationDataNumber=N, else -1 */
	char			 ca[10];	/* PCK CRL: "processor" or "platform" */
};
extern const char *const coll_pccs_what_str[CP_MAX];

/*
 * Parse a PCCS path; 0 only when it is exactly the canonical form the
 * daemon stores (so a request cannot name one object and key another),
 * else -1 with *why.
 */
int	coll_pccs_parse(const char *path, struct coll_pccs *, const char **why);
/* The cache key of a canonical PCCS path: the path, or "h:" + SHA-256. */
int	coll_pccs_key(const char *path, uint8_t key[CACHE_KEY_MAX_BYTES],
	    size_t *klen);
/*
 * The body answers the question the path asks (the signature alone does
 * not say so): FMSPC, SGX or TDX, QE/QVE/QAE/TD_QE, evaluation number,
 * CA. 0 or -1 with why (written into buf).
 */
int	coll_pccs_binds(const struct coll_pccs *, const struct intel_result *,
	    char *buf, size_t len);

/* ---- what evidence needs ------------------------------------------------ */

/* A TDX (v4, v5) or SGX (v3, v4) DCAP quote, as far as collateral goes. */
struct coll_quote {
	int	version;
	int	tdx;
	char	fmspc[13];	/* from the PCK certificate, upper-case hex */
	char	ca[10];		/* "processor" or "platform", from its issuer CN */
	char	pck_subject[160];
};

/*
 * buf: the quote, binary or hex text (whitespace allowed). Walks the
 * signature data to the certification data of type 5 (the PCK chain, PEM,
 * leaf first), nested in type 6 for v4/v5. 0, or -1 with err.
 */
int	coll_quote_parse(const uint8_t *buf, size_t len, struct coll_quote *,
	    char *err, size_t errlen);
/* The canonical PCCS paths a verifier of that quote asks for; n paths written. */
size_t	coll_quote_paths(const struct coll_quote *, char paths[][COLL_PATH_MAX],
	    size_t max);

#define COLL_SNP_REPORT_BYTES	1184

/* An SEV-SNP attestation report (AMD SEV-SNP ABI, ATTESTATION_REPORT). */
struct coll_snp {
	int		 version;
	int		 have_cpuid;	/* v3+: family/model present */
	int		 family, model;
	int		 signing_key;	/* 0 VCEK, 1 VLEK, 7 none */
	enum amd_product product;
	uint8_t		 chip_id[64];
	struct amd_tcb	 tcb;		/* reported_tcb, decoded per product */
};

/*
 * buf: the report, binary or hex text. product: -1 to take it from the
 * report's CPUID fields (v3+), else the product to use (an error when the
 * report names another one). 0, or -1 with err.
 */
int	coll_snp_parse(const uint8_t *buf, size_t len, int product,
	    struct coll_snp *, char *err, size_t errlen);
/* The canonical KDS paths (entry/kds.h): the VCEK (when VCEK-signed), cert_chain and crl. */
size_t	coll_snp_paths(const struct coll_snp *, char paths[][COLL_PATH_MAX],
	    size_t max);

#endif
