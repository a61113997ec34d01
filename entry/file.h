/* SPDX-License-Identifier: Apache-2.0 */
/* One way to read a file the configuration names (trust anchors, intermediates, an API key): whole, capped. */
#ifndef ENTRY_FILE_H
#define ENTRY_FILE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Read the whole of `path`, at most max_bytes, into malloc'd memory (the
 * caller frees) with one NUL byte after the *len bytes read. Returns NULL
 * with err set to "PATH: cannot open (REASON)", "PATH: larger than N
 * bytes", "PATH: read error" or "PATH: out of memory".
 */
uint8_t	*file_read(const char *path, size_t max_bytes, size_t *len,
	    char *err, size_t errlen);

#endif
