/* SPDX-License-Identifier: Apache-2.0 */
/* NVIDIA's pinned OCSP trust anchors and public intermediates, compiled in. */
#ifndef ATTEST_NVIDIA_CERTS_H
#define ATTEST_NVIDIA_CERTS_H

#include <stddef.h>

#include "attest/vendor_roots.h"	/* struct vendor_root: one compiled-in certificate */

/*
 * The roots NVIDIA signs OCSP responses under: NVIDIA Device Identity CA
 * (device certificate chains) and NVIDIA CoRIM signing Root CA (RIMs).
 */
extern const struct vendor_root	nvidia_anchors[];
extern const size_t		nvidia_anchors_count;

/*
 * NVIDIA's public intermediates (Identity, Provisioner ICA, Reference Value
 * CA and L3 signer certificates): untrusted, used only to build chains.
 */
extern const struct vendor_root	nvidia_pool[];
extern const size_t		nvidia_pool_count;

#endif
