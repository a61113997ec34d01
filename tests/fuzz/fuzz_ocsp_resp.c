/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: response verification against the built-in NVIDIA trust, as every upstream answer meets it. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attest/ocsp_verify.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* tests/vectors/nvidia/derived/ocsp_requests/dev_1_gsp_brom_sha1_no_nonce.der */
static const uint8_t	req_der[] = {
	0x30, 0x4a, 0x30, 0x48, 0x30, 0x46, 0x30, 0x44, 0x30, 0x42, 0x30, 0x09,
	0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00, 0x04, 0x14, 0x25,
	0xd9, 0x2e, 0x96, 0x43, 0x56, 0x71, 0x7a, 0x4f, 0x5b, 0xf8, 0x1f, 0x01,
	0xcf, 0xfd, 0xfc, 0x20, 0x10, 0x20, 0xdb, 0x04, 0x14, 0x29, 0x68, 0xcb,
	0x16, 0x2c, 0xd0, 0x77, 0x95, 0x72, 0xa2, 0x79, 0x10, 0x03, 0xe6, 0x9e,
	0xba, 0x0c, 0xcc, 0x0a, 0x94, 0x02, 0x09, 0x41, 0x29, 0x21, 0xce, 0x55,
	0x1e, 0x4e, 0xed, 0xa3,
};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ocsp_trust	*t;
	struct ocsp_verify_opts		 o;
	struct ocsp_result		 r;
	struct ocsp_req			 req;
	const char			*why;

	if (t == NULL) {
		if ((t = ocsp_trust_new()) == NULL ||
		    ocsp_trust_add_builtin_anchors(t) <= 0 ||
		    ocsp_trust_add_builtin_pool(t) < 0)
			return 0;
	}
	if (ocsp_req_parse(req_der, sizeof(req_der), &req, &why) == -1)
		return 0;
	memset(&o, 0, sizeof(o));
	o.now = 1800000000;
	o.skew_s = 60;
	(void)ocsp_resp_status(data, size);
	/* Nothing here is signed by NVIDIA: it must never come out OK. */
	if (ocsp_verify(t, data, size, &req, &o, &r) == 0)
		__builtin_trap();
	return 0;
}
