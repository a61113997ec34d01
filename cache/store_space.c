/* SPDX-License-Identifier: Apache-2.0 */
/* A full disk: free space, the wait for room, the trim, a write's cause. */
#include "config.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <unistd.h>

#include "cache/store.h"
#include "cache/store_int.h"

/*
 * Free bytes on the store's file system for this process (root may use
 * the reserved blocks), or -1 when statvfs fails.
 */
long long
cache_free_bytes(const struct cache *c)
{
	struct statvfs	sv;

	if (statvfs(c->dir, &sv) == -1)
		return -1;
	return (long long)(geteuid() == 0 ? sv.f_bfree : sv.f_bavail) *
	    (long long)sv.f_frsize;
}

/* A write failed for want of disk: later writes wait until there is room. */
static void
cache_set_no_space(struct cache *c, const char *op, long long freeb)
{
	cache_seterr(c, "%s: no space left on device (%lld KiB free)", op,
	    freeb > 0 ? freeb >> 10 : 0);
	c->cause = CACHE_CAUSE_NO_SPACE;
	__atomic_store_n(&cache_origin(c)->no_space, 1, __ATOMIC_RELAXED);
}

/*
 * A write that failed for want of disk (ENOSPC, EDQUOT, or EIO, which is
 * how LMDB reports a short write, with the disk found full) or for an I/O
 * error: the failed transaction's pages past the store's end are given
 * back when it ends (cache_write_abort).
 */
void
cache_set_write_err(struct cache *c, const char *op, int rc)
{
	long long	freeb = cache_free_bytes(c);

	c->trim_due = 1;
	if (rc != EIO || (freeb >= 0 && freeb < CACHE_SPACE_MIN_BYTES)) {
		cache_set_no_space(c, op, freeb);
		return;
	}
	cache_seterr(c, "%s: %s", op, mdb_strerror(rc));
	c->cause = CACHE_CAUSE_IO;
}

/* While the disk is full, a write waits unless there is room again. 0, or -1. */
int
cache_space_wait(struct cache *c)
{
	struct cache	*o = cache_origin(c);
	long long	 freeb;

	if (!__atomic_load_n(&o->no_space, __ATOMIC_RELAXED))
		return 0;
	if ((freeb = cache_free_bytes(c)) < 0 ||
	    freeb >= CACHE_SPACE_MIN_BYTES) {
		__atomic_store_n(&o->no_space, 0, __ATOMIC_RELAXED);
		return 0;
	}
	cache_set_no_space(c, "write", freeb);
	return -1;
}

enum cache_cause
cache_writes_held(struct cache *c)
{
	if (c == NULL || c->env == NULL)
		return CACHE_CAUSE_NONE;
	if (c->readonly) {
		if (c->ro_errno == 0)
			return CACHE_CAUSE_NONE;
		cache_set_read_only(c);
		return c->cause;
	}
	if (cache_check_ids(c) == -1 || cache_space_wait(c) == -1)
		return c->cause;
	return CACHE_CAUSE_NONE;
}

/*
 * Give back what a failed write left past the store's end: under the
 * writer lock (no process extends the file meanwhile), the file is cut
 * to the last page the newest commit names. No snapshot refers to a page
 * past it (the last page only grows), so no reader reads what is cut.
 */
void
cache_trim(struct cache *c)
{
	struct stat	 st;
	MDB_txn		*txn;
	size_t		 map, used;
	int		 fd;

	if (mdb_txn_begin(c->env, NULL, 0, &txn) != 0)
		return;
	if (env_bytes(c->env, &map, &used) == 0 &&
	    mdb_env_get_fd(c->env, &fd) == 0 && fstat(fd, &st) == 0 &&
	    st.st_size > 0 && (size_t)st.st_size > used &&
	    ftruncate(fd, (off_t)used) == 0)
		c->trimmed = (size_t)st.st_size - used;
	mdb_txn_abort(txn);
}

const char *const cache_cause_str[CACHE_CAUSE_MAX] = {
	[CACHE_CAUSE_NONE] = "none",
	[CACHE_CAUSE_MAP_FULL] = "map full",
	[CACHE_CAUSE_NO_SPACE] = "no space left on device",
	[CACHE_CAUSE_IO] = "I/O error",
	[CACHE_CAUSE_LOCK] = "lock file not shared or busy",
	[CACHE_CAUSE_READ_ONLY] = "cannot be opened for writing",
};

enum cache_cause
cache_cause(const struct cache *c)
{
	return c->cause;
}

int
cache_cause_later(enum cache_cause cause)
{
	return cause == CACHE_CAUSE_MAP_FULL || cause == CACHE_CAUSE_NO_SPACE ||
	    cause == CACHE_CAUSE_IO || cause == CACHE_CAUSE_LOCK ||
	    cause == CACHE_CAUSE_READ_ONLY;
}
