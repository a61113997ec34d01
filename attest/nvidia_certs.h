/* NVIDIA's pinned OCSP trust anchors and public intermediates, compiled in. */
#ifndef ATTEST_NVIDIA_CERTS_H
#define ATTEST_NVIDIA_CERTS_H

#include <stddef.h>

/* One compiled-in certificate; all strings are static. */
struct nvidia_cert {
	const char	*subject;	/* RFC 2253, for logs */
	const char	*sha256;	/* fingerprint, upper-case hex */
	const char	*pem;
};

/*
 * The roots NVIDIA signs OCSP responses under: NVIDIA Device Identity CA
 * (device certificate chains) and NVIDIA CoRIM signing Root CA (RIMs).
 */
extern const struct nvidia_cert	nvidia_anchors[];
extern const size_t		nvidia_anchors_count;

/*
 * NVIDIA's public intermediates (Identity, Provisioner ICA, Reference Value
 * CA and L3 signer certificates): untrusted, used only to build chains.
 */
extern const struct nvidia_cert	nvidia_pool[];
extern const size_t		nvidia_pool_count;

#endif
