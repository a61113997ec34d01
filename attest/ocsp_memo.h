/* SPDX-License-Identifier: Apache-2.0 */
/* The certificates that answers embed, decoded once: a BasicOCSPResponse decoded with them taken from a memo of their bytes. */
#ifndef ATTEST_OCSP_MEMO_H
#define ATTEST_OCSP_MEMO_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/ocsp.h>

/*
 * One responder signs many answers and embeds the same certificates in
 * each (NVIDIA: the delegated responder; `openssl ocsp -rother`: its CA
 * too). OpenSSL 3 decodes an embedded certificate's public key through
 * its provider decoders at every answer, which costs a third of a P-384
 * signature check. A memo keeps the last OCSP_MEMO_CERTS certificates it
 * decoded, each with its exact bytes, and gives back the same object for
 * the same bytes: nothing is trusted by being in it, and an answer
 * decoded through it is the one OpenSSL would have decoded. Not shared
 * between threads.
 */
#define OCSP_MEMO_CERTS	8

struct ocsp_memo;

struct ocsp_memo *ocsp_memo_new(void);		/* NULL: out of memory */
void	ocsp_memo_free(struct ocsp_memo *);	/* NULL ok */

/*
 * The BasicOCSPResponse inside the DER OCSPResponse resp[0, len), for a
 * frame of the common shape: definite lengths, responseType
 * id-pkix-ocsp-basic, and one or more embedded certificates, each of
 * which passes der_x509 (attest/der.h). The ResponseData, the signature
 * and its algorithm are decoded by d2i_OCSP_BASICRESP as they are; the
 * certificates are the memo's objects for their bytes (decoded on first
 * sight), added in their order. Returns a new object (caller frees), or
 * NULL whenever the frame is of any other shape or anything fails: the
 * caller then decodes the answer as OpenSSL does, so that what an answer
 * of any other shape is judged by does not change. The caller still
 * checks the result is the DER encoding of resp (the memo decodes, it
 * does not judge).
 */
OCSP_BASICRESP *ocsp_memo_basic(struct ocsp_memo *, const uint8_t *resp,
	    size_t len);

/*
 * What the responder's chain of an answer is built from, as one SHA-256:
 * its responderID and the certificates it embeds, by their bytes (the
 * BasicOCSPResponse's frame walked, nothing decoded). Two answers with
 * the same id find the same signer and build the same chain against one
 * trust, so a caller that gathers chains (staplectl's export) builds one
 * per id. 0, or -1 when resp is not a DER OCSPResponse with a
 * BasicOCSPResponse of definite lengths.
 */
#define OCSP_MEMO_ID_BYTES	32
int	ocsp_memo_signer_id(const uint8_t *resp, size_t len,
	    uint8_t id[OCSP_MEMO_ID_BYTES]);

#endif
