/* SPDX-License-Identifier: Apache-2.0 */
/* AMD's published cert_chain bodies per product, for a cold cache. */
#ifndef ATTEST_AMD_CHAINS_H
#define ATTEST_AMD_CHAINS_H

#include "attest/amd.h"

/*
 * The PEM (ASK or ASVK, then ARK) KDS serves for product and signer.
 * Built on first use and kept; NULL for bad arguments or out of memory.
 */
const char	*amd_builtin_chain(enum amd_product, enum amd_signer);

#endif
