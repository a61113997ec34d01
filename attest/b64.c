/* SPDX-License-Identifier: Apache-2.0 */
/* Strict base64 decoding, shared by the RIM and evidence parsers. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "attest/b64.h"


/* Each byte's value in the RFC 4648 alphabet, -1 for any other; whitespace -2. */
static const int8_t	b64_table[256] = {
	['\t'] = -2, ['\n'] = -2, ['\r'] = -2, [' '] = -2,
	['A'] = 1, ['B'] = 2, ['C'] = 3, ['D'] = 4, ['E'] = 5, ['F'] = 6,
	['G'] = 7, ['H'] = 8, ['I'] = 9, ['J'] = 10, ['K'] = 11, ['L'] = 12,
	['M'] = 13, ['N'] = 14, ['O'] = 15, ['P'] = 16, ['Q'] = 17, ['R'] = 18,
	['S'] = 19, ['T'] = 20, ['U'] = 21, ['V'] = 22, ['W'] = 23, ['X'] = 24,
	['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28, ['c'] = 29, ['d'] = 30,
	['e'] = 31, ['f'] = 32, ['g'] = 33, ['h'] = 34, ['i'] = 35, ['j'] = 36,
	['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40, ['o'] = 41, ['p'] = 42,
	['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48,
	['w'] = 49, ['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54,
	['2'] = 55, ['3'] = 56, ['4'] = 57, ['5'] = 58, ['6'] = 59, ['7'] = 60,
	['8'] = 61, ['9'] = 62, ['+'] = 63, ['/'] = 64,
};

/* A base64 digit's value (0..63), -2 for whitespace, -1 for anything else ('=' too). */
static int
b64_val(unsigned char c)
{
	return b64_table[c] > 0 ? b64_table[c] - 1 : b64_table[c] == 0 ? -1 :
	    b64_table[c];
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
		if ((v = b64_val((unsigned char)s[i])) == -2)
			continue;
		if (s[i] == '=') {
			if (++pad > 2)
				goto bad;
			n++;
			continue;
		}
		if (pad > 0 || v < 0)
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
