/* SPDX-License-Identifier: Apache-2.0 */
/* For staplectl: what a TDX/SGX quote or an SEV-SNP report needs (the canonical paths of both kinds are entry/pccs.h's and entry/kds.h's). */
#ifndef TOOLS_TEE_H
#define TOOLS_TEE_H

#include <stddef.h>
#include <stdint.h>

#include "attest/amd.h"
#include "attest/intel.h"
#include "cache/store.h"
#include "entry/kds.h"
#include "entry/pccs.h"

/*
 * The canonical forms, keys and rules of both kinds are entry/pccs.h's and
 * entry/kds.h's: the daemon rebuilds every request into one of them, keys
 * the entry by it and stores it as the request.
 */
#define TEE_PATH_MAX		PCCS_PATH_MAX

/* ---- what evidence needs ------------------------------------------------ */

/* A TDX (v4, v5) or SGX (v3, v4) DCAP quote, as far as collateral goes. */
struct tee_quote {
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
int	tee_quote_parse(const uint8_t *buf, size_t len, struct tee_quote *,
	    char *err, size_t errlen);
/* The canonical PCCS paths a verifier of that quote asks for; n paths written. */
size_t	tee_quote_paths(const struct tee_quote *, char paths[][TEE_PATH_MAX],
	    size_t max);

#define TEE_SNP_REPORT_BYTES	1184

/* An SEV-SNP attestation report (AMD SEV-SNP ABI, ATTESTATION_REPORT). */
struct tee_snp {
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
int	tee_snp_parse(const uint8_t *buf, size_t len, int product,
	    struct tee_snp *, char *err, size_t errlen);
/* The canonical KDS paths (entry/kds.h): the VCEK (when VCEK-signed), cert_chain and crl. */
size_t	tee_snp_paths(const struct tee_snp *, char paths[][TEE_PATH_MAX],
	    size_t max);

#endif
