/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for entry/file.c: the capped whole-file reader and the messages it gives for a bad file. */
#include "config.h"

#include <sys/stat.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "entry/file.h"

#define BIG_BYTES	20000	/* over the reader's first buffer */

static char	dir[64];

static void
put(const char *path, size_t n)
{
	FILE	*f;
	size_t	 i;

	assert_non_null(f = fopen(path, "wb"));
	for (i = 0; i < n; i++)
		fputc('a' + (int)(i % 26), f);
	assert_int_equal(fclose(f), 0);
}

static void
test_read(void **state)
{
	char	 path[128], err[256];
	uint8_t	*buf;
	size_t	 len = 99;

	(void)state;
	snprintf(path, sizeof(path), "%s/big", dir);
	put(path, BIG_BYTES);
	assert_non_null(buf = file_read(path, BIG_BYTES, &len, err, sizeof(err)));
	assert_int_equal(len, BIG_BYTES);
	assert_int_equal(buf[0], 'a');
	assert_int_equal(buf[BIG_BYTES - 1], 'a' + (BIG_BYTES - 1) % 26);
	assert_int_equal(buf[BIG_BYTES], '\0');
	free(buf);

	/* One byte over the cap: refused, naming the file and the cap. */
	err[0] = '\0';
	assert_null(file_read(path, BIG_BYTES - 1, &len, err, sizeof(err)));
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "larger than 19999 bytes"));
	assert_int_equal(len, 0);

	/* Empty is a file too: the caller says what it needed. */
	snprintf(path, sizeof(path), "%s/empty", dir);
	put(path, 0);
	assert_non_null(buf = file_read(path, 10, &len, err, sizeof(err)));
	assert_int_equal(len, 0);
	assert_int_equal(buf[0], '\0');
	free(buf);
}

static void
test_missing(void **state)
{
	char	 path[128], err[256];
	size_t	 len;

	(void)state;
	snprintf(path, sizeof(path), "%s/no-such-file.pem", dir);
	err[0] = '\0';
	assert_null(file_read(path, 10, &len, err, sizeof(err)));
	assert_non_null(strstr(err, "no-such-file.pem: cannot open ("));
	/* A directory opens but does not read. */
	assert_null(file_read(dir, 10, &len, err, sizeof(err)));
	assert_non_null(strstr(err, dir));
}

static int
setup(void **state)
{
	(void)state;
	mkdir("tests", 0755);
	mkdir("tests/tmp", 0755);
	snprintf(dir, sizeof(dir), "tests/tmp/file.XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char	cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_missing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
