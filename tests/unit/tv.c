/* SPDX-License-Identifier: Apache-2.0 */
/* Whole files for the unit tests: vectors and fixtures read into memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tv.h"

/* f's whole content, NUL-terminated; closes f. */
static uint8_t *
tv_slurp(FILE *f, const char *path, size_t *len)
{
	uint8_t	*buf;
	long	 n = -1;

	if (fseek(f, 0, SEEK_END) == 0)
		n = ftell(f);
	if (n < 0)
		fail_msg("%s: cannot size", path);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n)
		fail_msg("%s: short read", path);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

uint8_t *
tv_file(const char *path, size_t *len)
{
	FILE	*f;

	if ((f = fopen(path, "rb")) == NULL)
		fail_msg("%s: cannot open (is top_srcdir set?)", path);
	return tv_slurp(f, path, len);
}

/* "$top_srcdir" + rel into path. */
static void
tv_path(const char *rel, char *path, size_t pathlen)
{
	const char	*top = getenv("top_srcdir");

	if ((size_t)snprintf(path, pathlen, "%s%s", top ? top : ".", rel) >= pathlen)
		fail_msg("%s: path too long", rel);
}

uint8_t *
tv_src(const char *rel, size_t *len)
{
	char	path[TV_REL_BYTES];

	tv_path(rel, path, sizeof(path));
	return tv_file(path, len);
}

uint8_t *
tv_src_try(const char *rel, size_t *len)
{
	char	 path[TV_REL_BYTES];
	FILE	*f;

	tv_path(rel, path, sizeof(path));
	if ((f = fopen(path, "rb")) == NULL)
		return NULL;
	return tv_slurp(f, path, len);
}
