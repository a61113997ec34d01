/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The evidence reader's insides, internal to attest/evidence*.c: the
 * helpers those files call in one another. Nothing else includes it.
 */
#ifndef ATTEST_EVIDENCE_INT_H
#define ATTEST_EVIDENCE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/x509.h>

#include "attest/evidence.h"

/* evidence.c: format into err (errlen bytes); a NULL err is ignored. */
void	seterr(char *err, size_t errlen, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/* evidence_report.c: the architectures nvattest knows. */
int	is_gpu_arch(const char *);
int	is_switch_arch(const char *);

/* evidence_certid.c */
int	is_self_signed(X509 *);
int	sk_certids(enum evidence_chain_type, unsigned hashes,
	    STACK_OF(X509) *, struct evidence_certid **out, size_t *nout,
	    char *err, size_t errlen);

/*
 * evidence_chain.c: each returns an owned stack (sk_X509_pop_free) or
 * NULL with err set.
 */
STACK_OF(X509) *der_stack(const uint8_t *const der[], const size_t len[],
	    size_t n, char *err, size_t errlen);
STACK_OF(X509) *pem_stack(const char *pem, size_t len, char *err,
	    size_t errlen);
int	pem_only(const char *pem, size_t len, char *err, size_t errlen);
enum evidence_chain_type classify(STACK_OF(X509) *);
STACK_OF(X509) *der_chain_stack(const uint8_t *buf, size_t len, char *err,
	    size_t errlen);

#endif
