/* SPDX-License-Identifier: Apache-2.0 */
/* Strict base64 decoding, shared by the RIM and evidence parsers. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "attest/b64.h"


static int
b64_val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}


/*
 * Strict base64 (RFC 4648 alphabet, '=' only as final padding); ASCII
 * whitespace anywhere is ignored. Returns malloc'd bytes or NULL.
 */
uint8_t *
b64_decode(const char *s, size_t len, size_t *outlen)
{
	uint8_t		*out;
	uint32_t	 acc = 0;
	size_t		 i, o = 0, n = 0, pad = 0;
	int		 v;

	if ((out = malloc(len / 4 * 3 + 3)) == NULL)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' ||
		    s[i] == '\n')
			continue;
		if (s[i] == '=') {
			if (++pad > 2)
				goto bad;
			n++;
			continue;
		}
		if (pad > 0 || (v = b64_val((unsigned char)s[i])) < 0)
			goto bad;
		acc = acc << 6 | (uint32_t)v;
		if (++n % 4 == 0) {
			out[o++] = acc >> 16;
			out[o++] = acc >> 8;
			out[o++] = acc;
			acc = 0;
		}
	}
	if (n == 0 || n % 4 != 0)
		goto bad;
	if (pad == 1) {
		acc <<= 6;
		out[o++] = acc >> 16;
		out[o++] = acc >> 8;
		if (acc & 0xff)
			goto bad;
	} else if (pad == 2) {
		acc <<= 12;
		out[o++] = acc >> 16;
		if (acc & 0xffff)
			goto bad;
	}
	*outlen = o;
	return out;
 bad:
	free(out);
	return NULL;
}
