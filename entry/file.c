/* SPDX-License-Identifier: Apache-2.0 */
/* The capped whole-file reader for files the configuration names (attest/ takes bytes only). */
#include <config.h>	/* autoconf */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entry/file.h"

#define FILE_FIRST_BYTES	8192	/* the first buffer; doubled as needed */

/* Grow *buf so that at least one more byte fits below cap (max + 1 + NUL). 0 or -1. */
static int
file_grow(uint8_t **buf, size_t *cap, size_t max)
{
	uint8_t	*nb;
	size_t	 ncap = *cap == 0 ? FILE_FIRST_BYTES : 2 * *cap;

	if (ncap > max + 2)
		ncap = max + 2;	/* one byte more than allowed shows "larger" */
	if ((nb = realloc(*buf, ncap)) == NULL)
		return -1;
	*buf = nb;
	*cap = ncap;
	return 0;
}

uint8_t *
file_read(const char *path, size_t max_bytes, size_t *len, char *err,
    size_t errlen)
{
	FILE	*f;
	uint8_t	*buf = NULL;
	size_t	 cap = 0, n = 0, got;

	*len = 0;
	if ((f = fopen(path, "rb")) == NULL) {
		snprintf(err, errlen, "%s: cannot open (%s)", path,
		    strerror(errno));
		return NULL;
	}
	do {
		if (n + 1 >= cap && file_grow(&buf, &cap, max_bytes) == -1) {
			snprintf(err, errlen, "%s: out of memory", path);
			goto fail;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (n > max_bytes) {
			snprintf(err, errlen, "%s: larger than %zu bytes", path,
			    max_bytes);
			goto fail;
		}
	} while (got > 0);
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		goto fail;
	}
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	fclose(f);
	free(buf);
	return NULL;
}
