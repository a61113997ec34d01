/* SPDX-License-Identifier: Apache-2.0 */
/* A store that cannot be written: opened read-only instead, said why, opened for writing again. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cache/store.h"
#include "cache/store_int.h"

/* The files a write opens for writing; lock.mdb first, as LMDB opens them. */
static const char *const cache_rw_files[] = { "lock.mdb", "data.mdb" };

/* Whether an open's error says the store cannot be written, rather than read. */
static int
cache_unwritable_rc(int rc)
{
	return rc == EROFS || rc == EACCES || rc == EPERM;
}

/*
 * Whether this process may write the store's files, by faccessat (no
 * file is opened: closing a descriptor of lock.mdb would drop LMDB's
 * record locks on it). A lock.mdb that is absent is made in the
 * directory. 0, or the errno with the file that refused into `what`.
 */
static int
cache_write_probe(const char *dir, char *what, size_t whatlen)
{
	char	path[PATH_MAX];
	size_t	i;

	for (i = 0; i < sizeof(cache_rw_files) / sizeof(cache_rw_files[0]); i++) {
		if (snprintf(path, sizeof(path), "%s/%s", dir,
		    cache_rw_files[i]) >= (int)sizeof(path))
			return ENAMETOOLONG;
		if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0)
			continue;
		if (errno == ENOENT && i == 0) {
			if (faccessat(AT_FDCWD, dir, W_OK, AT_EACCESS) == 0)
				continue;
			snprintf(what, whatlen, "%s", "the directory");
			return errno;
		}
		snprintf(what, whatlen, "%s", cache_rw_files[i]);
		return errno;
	}
	return 0;
}

void
cache_set_read_only(struct cache *c)
{
	const struct cache	*o = cache_origin(c);

	if (o->ro_errno == EROFS)
		cache_seterr(c, "the file system is read-only: opened for "
		    "reading only, without lock.mdb");
	else
		cache_seterr(c, "%s cannot be written (%s): opened for reading "
		    "only", o->ro_what, strerror(o->ro_errno));
	c->cause = CACHE_CAUSE_READ_ONLY;
}

/* c->err less its "cache: DIR: " (cache_seterr), for a message that adds to it. */
static const char *
cache_err_tail(const struct cache *c)
{
	size_t	n = strlen(c->dir);

	if (strncmp(c->err, "cache: ", 7) == 0 &&
	    strncmp(c->err + 7, c->dir, n) == 0 &&
	    strncmp(c->err + 7 + n, ": ", 2) == 0)
		return c->err + 9 + n;
	return c->err;
}

/*
 * cache_env_open for writing; when the store cannot be written, for
 * reading. On a read-only mount LMDB cannot take its locks in lock.mdb
 * (lmdb.h: a read-only environment omits them there); MDB_NOLOCK says so
 * here, and the handle then has no reader slot: a process that would
 * write through another, writable, path finds the daemon holding the
 * directory among no readers of lock.mdb and refuses (cache_check_peer).
 * Otherwise (data.mdb's mode, chattr +i) lock.mdb is used as for a
 * writer, reader slot included. 0, or -1 (c->err).
 */
int
cache_env_open_or_read(struct cache *c)
{
	char	tail[sizeof(c->err)];
	int	rc;

	if (cache_env_open(c) == 0)
		return 0;
	if (!cache_unwritable_rc(c->open_rc))
		return -1;
	rc = c->open_rc;
	cache_env_drop(c);
	c->readonly = 1;
	c->ro_errno = rc;
	c->nolock = rc == EROFS;
	snprintf(c->ro_what, sizeof(c->ro_what), "%s", "the store");
	(void)cache_write_probe(c->dir, c->ro_what, sizeof(c->ro_what));
	if (cache_env_open(c) == 0)
		return 0;
	snprintf(tail, sizeof(tail), "%s", cache_err_tail(c));
	cache_seterr(c, "%s cannot be written (%s), nor read: %s", c->ro_what,
	    strerror(rc), tail);
	return -1;
}

int
cache_reopen_writable(struct cache *c)
{
	char	what[sizeof(c->ro_what)];
	int	rc;

	if ((rc = cache_write_probe(c->dir, what, sizeof(what))) != 0) {
		c->ro_errno = rc;
		snprintf(c->ro_what, sizeof(c->ro_what), "%s", what);
		cache_set_read_only(c);
		return 1;
	}
	cache_env_drop(c);
	c->readonly = 0;
	c->ro_errno = 0;
	c->nolock = 0;
	if (cache_env_open_or_read(c) == -1)
		return -1;
	if (c->readonly) {
		cache_set_read_only(c);
		return 1;
	}
	return 0;
}

int
cache_read_only(const struct cache *c)
{
	return c != NULL && c->readonly;
}
