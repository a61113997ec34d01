/* SPDX-License-Identifier: Apache-2.0 */
/* The cache/ unit tests' store fixture (store_fixture.h). */
#include "config.h"

#include <sys/stat.h>

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <string.h>

#include <cmocka.h>

#include "cache/store.h"
#include "store_fixture.h"

static int
rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int
store_setup(void **state)
{
	struct store_fixture	*f;
	const char		*t;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return -1;
	if ((t = getenv("TMPDIR")) == NULL || *t == '\0')
		t = "/tmp";
	snprintf(f->tmp, sizeof(f->tmp), "%s/test_store.XXXXXX", t);
	if (mkdtemp(f->tmp) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->dir, sizeof(f->dir), "%s/db", f->tmp);
	*state = f;
	return 0;
}

int
store_setup_open(void **state)
{
	struct store_fixture	*f;
	char			 err[256];

	if (store_setup(state) == -1)
		return -1;
	f = *state;
	if ((f->c = cache_open(f->dir, 0, 0, err, sizeof(err))) == NULL) {
		fprintf(stderr, "cache_open %s: %s\n", f->dir, err);
		store_teardown(state);
		return -1;
	}
	return 0;
}

int
store_teardown(void **state)
{
	struct store_fixture	*f = *state;

	cache_close(f->c);
	nftw(f->tmp, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

struct cache *
store_open_ok(const char *dir, size_t map, int ro)
{
	struct cache	*c;
	char		 err[256];

	if ((c = cache_open(dir, map, ro, err, sizeof(err))) == NULL)
		fail_msg("cache_open: %s", err);
	return c;
}

const char *
store_kind_name(int kind)
{
	static const char *const names[] = { NULL, "ocsp", "rim", "pccs",
					     "kds" };

	return kind > 0 && kind < (int)(sizeof(names) / sizeof(names[0])) ?
	    names[kind] : NULL;
}

size_t
store_key(uint8_t *key, unsigned i)
{
	return (size_t)snprintf((char *)key, CACHE_KEY_MAX_BYTES, "key-%06u",
	    i);
}

void
store_meta(struct cache_meta *m, uint8_t kind, int64_t this_update)
{
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->this_update = this_update;
	m->next_update = this_update + 3600;
	m->produced_at = this_update;
	m->fetched_at = this_update + 1;
	snprintf(m->source, sizeof(m->source), "test-upstream");
}

void
store_zero_tree(const char *dir)
{
	static const uint8_t	zero[4096];
	char			path[512];
	struct stat		st;
	off_t			off;
	int			fd;

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	assert_true((fd = open(path, O_WRONLY)) != -1);
	assert_int_equal(fstat(fd, &st), 0);
	for (off = 2 * sizeof(zero); off < st.st_size; off += sizeof(zero))
		assert_int_equal(pwrite(fd, zero, sizeof(zero), off),
		    (ssize_t)sizeof(zero));
	close(fd);
}
