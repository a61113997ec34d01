/* SPDX-License-Identifier: Apache-2.0 */
/* AMD KDS collateral verification: ASK/ASVK chains, VCEK/VLEK and CRLs against pinned ARKs. */
#ifndef ATTEST_AMD_H
#define ATTEST_AMD_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define AMD_SKEW_S		300	/* thisUpdate/notBefore may be this far ahead */
#define AMD_MAX_BODY_BYTES	65536	/* a cert_chain is ~4.6 KiB, a CRL < 1 KiB */
#define AMD_HWID_MAX_BYTES	64	/* Milan/Genoa chip_id; Turin uses 8 */

/* KDS product names, as in /vcek/v1/{Milan|Genoa|Turin}/. */
enum amd_product {
	AMD_MILAN = 0,
	AMD_GENOA,		/* also Bergamo and Siena */
	AMD_TURIN,
	AMD_PRODUCT_MAX
};
extern const char *const amd_product_str[AMD_PRODUCT_MAX];	/* "Milan" .. */

/* Exact KDS spelling ("Milan", "Genoa", "Turin"). Returns 0 or -1. */
int	amd_product_parse(const char *name, size_t len, enum amd_product *out);

/* Which endorsement key family: /vcek/v1 (ASK) or /vlek/v1 (ASVK). */
enum amd_signer {
	AMD_VCEK = 0,
	AMD_VLEK,
	AMD_SIGNER_MAX
};
extern const char *const amd_signer_str[AMD_SIGNER_MAX];	/* "vcek", "vlek" */

enum amd_verdict {
	AMD_OK = 0,		/* store and serve */
	AMD_ERR_PARSE,		/* not the PEM/DER shape asked for */
	AMD_ERR_PRODUCT,	/* belongs to another product (its pinned ARK or names) */
	AMD_ERR_ARK,		/* the ARK it carries or names is not the pinned one */
	AMD_ERR_SIGNER,		/* names are not ASK/ASVK/VCEK/VLEK as expected */
	AMD_ERR_ALGORITHM,	/* not RSASSA-PSS, SHA-384, MGF1-SHA-384, salt 48 */
	AMD_ERR_SIGNATURE,	/* signature does not verify */
	AMD_ERR_FUTURE,		/* thisUpdate/notBefore > now + AMD_SKEW_S */
	AMD_ERR_EXPIRED,	/* CRL nextUpdate <= now; certificate notAfter <= now */
	AMD_ERR_MISMATCH,	/* VCEK/VLEK is not for the HWID/TCB asked for */
	AMD_VERDICT_MAX
};
extern const char *const amd_verdict_str[AMD_VERDICT_MAX];

/* SPLs from the VCEK/VLEK extensions (1.3.6.1.4.1.3704.1.3.x); -1 absent. */
struct amd_tcb {
	int	bl;	/* .1 blSPL */
	int	tee;	/* .2 teeSPL */
	int	snp;	/* .3 snpSPL */
	int	ucode;	/* .8 ucodeSPL */
	int	fmc;	/* .9 fmcSPL (Turin) */
};

/* What a VCEK/VLEK is for: HWID (1.3.6.1.4.1.3704.1.4) and TCB. */
struct amd_vek_id {
	uint8_t		hwid[AMD_HWID_MAX_BYTES];
	size_t		hwid_len;	/* 0: none (VLEK) or not to be checked */
	struct amd_tcb	tcb;
};

/* What a verification found; filled as far as parsing got. */
struct amd_result {
	enum amd_verdict	verdict;
	/* CRL: thisUpdate. Certificates: notBefore of the leaf checked. */
	time_t			this_update;
	/*
	 * CRL: nextUpdate, the refresh deadline. Certificates: 0. A VCEK for
	 * a (chip, TCB) never changes and ARK/ASK last 25 years, so nothing
	 * here is a freshness date for caching.
	 */
	time_t			next_update;
	/* Certificates: notAfter of the leaf (ASK/ASVK, VCEK/VLEK); reported only. */
	time_t			not_after;
	long			crl_entries;	/* revoked entries; -1 if not a CRL */
	struct amd_vek_id	id;		/* VCEK/VLEK: from its extensions */
	char			detail[256];	/* human-readable reason */
};

/*
 * A /vcek/v1/{P}/cert_chain or /vlek/v1/{P}/cert_chain body: PEM, the
 * ASK (VCEK; CN SEV-<P>) or ASVK (VLEK; CN SEV-VLEK-<P>) then the ARK,
 * nothing else. The ARK must be byte-identical to the pinned ARK of
 * `product` (never trusted by itself); the ASK/ASVK must be issued and
 * PSS-SHA-384-signed by the pinned ARK.
 *
 * now: the ARK's and ASK's validity windows must contain it (a sanity
 * check at store time, not a freshness date). Pure. Returns 0 when
 * out->verdict is AMD_OK, else -1 with out->verdict and out->detail set.
 */
int	amd_verify_cert_chain(enum amd_product product, enum amd_signer signer,
	    const uint8_t *pem, size_t len, time_t now, struct amd_result *out);

/*
 * A VCEK (signer AMD_VCEK, /vcek/v1/{P}/{hwid}?...) or VLEK: DER as KDS
 * serves it (a single PEM block is accepted too), signed with PSS
 * SHA-384 by the ASK (VCEK) or ASVK (VLEK) of `chain`, the product's
 * cert_chain body, which is verified as amd_verify_cert_chain does.
 * When `want` is not NULL, the certificate's HWID (if want->hwid_len > 0)
 * and every SPL of want->tcb that is not -1 must match: AMD_ERR_MISMATCH.
 * Serial number 0, which every real VCEK has, is accepted.
 *
 * now: the VCEK's, ASK's and ARK's validity windows must contain it (a
 * check at store time); out->not_after is reported, out->next_update is 0:
 * a stored VCEK needs no refresh.
 */
int	amd_verify_vek(enum amd_product product, enum amd_signer signer,
	    const uint8_t *cert, size_t len, const uint8_t *chain,
	    size_t chain_len, const struct amd_vek_id *want, time_t now,
	    struct amd_result *out);

/*
 * A /vcek/v1/{P}/crl or /vlek/v1/{P}/crl body: a DER CRL (PEM accepted)
 * issued and PSS-SHA-384-signed by the pinned ARK of `product`.
 *
 * now: refused when thisUpdate > now + AMD_SKEW_S or nextUpdate <= now;
 * out->next_update is the refresh deadline.
 */
int	amd_verify_crl(enum amd_product product, const uint8_t *crl,
	    size_t len, time_t now, struct amd_result *out);

#endif
