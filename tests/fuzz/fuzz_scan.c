/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the raw scan of a damaged data.mdb (cache/scan.c), on any pages. */
#include "config.h"

#include <sys/mman.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/record.h"
#include "entry/kinds.h"
#include "cache/scan.h"

#define FUZZ_PSIZE	512	/* LMDB's smallest page: more pages an input */
#define FUZZ_MAGIC	0xBEEFC0DEu

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Two meta pages naming FUZZ_PSIZE (mdb.c's MDB_meta), then the input as pages. */
static int
fuzz_file(const uint8_t *data, size_t size)
{
	uint8_t		meta[FUZZ_PSIZE];
	uint32_t	v;
	uint16_t	flags = 0x08;	/* P_META */
	int		fd, i;

	if ((fd = memfd_create("fuzz_scan", 0)) == -1)
		return -1;
	for (i = 0; i < 2; i++) {
		memset(meta, 0, sizeof(meta));
		memcpy(meta + 10, &flags, sizeof(flags));
		v = FUZZ_MAGIC;
		memcpy(meta + 16, &v, sizeof(v));
		v = FUZZ_PSIZE;
		memcpy(meta + 40, &v, sizeof(v));
		if (write(fd, meta, sizeof(meta)) != (ssize_t)sizeof(meta))
			goto fail;
	}
	if (size > 0 && write(fd, data, size) != (ssize_t)size)
		goto fail;
	return fd;
 fail:
	close(fd);
	return -1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cache_scan	 s;
	struct cache_meta	 m;
	struct cache_body	 b;
	uint8_t			*v;
	char			 path[64], why[256];
	size_t			 i;
	int			 fd;

	if ((fd = fuzz_file(data, size)) == -1)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (cache_scan(&s, path, why, sizeof(why)) == 0)
		for (i = 0; i < s.n; i++) {
			if (cache_scan_value(&s, &s.rec[i], &v) == -1)
				continue;
			if (s.rec[i].what == CACHE_SCAN_META)
				(void)record_meta_decode(v, s.rec[i].len, &m);
			else
				(void)record_body_decode(v, s.rec[i].len, &b);
			free(v);
		}
	cache_scan_free(&s);
	close(fd);
	return 0;
}
