/* SPDX-License-Identifier: Apache-2.0 */
/* Strict base64 decoding (RFC 4648 alphabet, '=' only as final padding). */
#ifndef ATTEST_B64_H
#define ATTEST_B64_H

#include <stddef.h>
#include <stdint.h>

/*
 * Decode `len` characters; ASCII whitespace anywhere is ignored, and
 * padding bits must be zero. Returns malloc'd bytes (caller frees) and
 * their count in *outlen, or NULL for anything that is not base64.
 */
uint8_t	*b64_decode(const char *s, size_t len, size_t *outlen);

#endif
