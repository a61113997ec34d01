/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the OCSP request parser every client request meets first, then key and re-nonce. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "attest/ocsp_req.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t	nonce[16] = { 1, 2, 3 };
	struct ocsp_req		r;
	uint8_t			key[OCSP_KEY_BYTES], *der;
	const char		*why;
	size_t			len;

	if (ocsp_req_parse(data, size, &r, &why) == -1)
		return 0;
	ocsp_req_key(&r, key);
	if ((der = ocsp_req_renonce(data, size, nonce, sizeof(nonce), &len)) != NULL) {
		/* A re-nonced request must parse and keep its key. */
		struct ocsp_req	r2;
		uint8_t		key2[OCSP_KEY_BYTES];

		if (ocsp_req_parse(der, len, &r2, &why) == 0) {
			ocsp_req_key(&r2, key2);
			for (len = 0; len < OCSP_KEY_BYTES; len++)
				if (key[len] != key2[len])
					abort();
		}
		free(der);
	}
	return 0;
}
