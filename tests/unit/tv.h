/* SPDX-License-Identifier: Apache-2.0 */
/* Whole files for the unit tests: vectors and fixtures read into memory. */
#ifndef TESTS_UNIT_TV_H
#define TESTS_UNIT_TV_H

#include <stddef.h>
#include <stdint.h>

/* Room for a path the tests build before calling these. */
#define TV_REL_BYTES	4096

/*
 * The file at path, NUL-terminated (the NUL is not counted in *len); the
 * caller frees it. A file that cannot be read fails the test.
 */
uint8_t	*tv_file(const char *path, size_t *len);
/* The same for "$top_srcdir" (or ".") followed by rel, which starts with '/'. */
uint8_t	*tv_src(const char *rel, size_t *len);
/* As tv_src, but NULL when the file cannot be opened (an optional vector). */
uint8_t	*tv_src_try(const char *rel, size_t *len);

#endif
