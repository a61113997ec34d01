/* SPDX-License-Identifier: Apache-2.0 */
/* The LMDB store: metas, bodies and aux records in one durable environment. */
#include "config.h"

#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lmdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/fault.h"
#include "cache/daemon.h"
#include "cache/store.h"

#define CACHE_MAXDBS		8	/* meta, body, aux, due, and room to grow */
#define CACHE_MAXREADERS	256	/* daemon, staplectl, exporters */
#define CACHE_LMDB_FREE_DBI	0	/* the free pages, by the transaction that freed them */
#define CACHE_LMDB_MAIN_DBI	1	/* the unnamed database naming the others */
#define CACHE_DIR_MODE		0750
/* Group-writable, less the umask: staplectl run by a member of the daemon's
 * group opens lock.mdb for writing even to read (stapled.service's
 * UMask=0007 keeps these bits; the usual 022 or 027 removes them). */
#define CACHE_FILE_MODE		0660
#define CACHE_LKEY_BYTES	(1 + CACHE_KEY_MAX_BYTES)
#define CACHE_DUE_AT_BYTES	8	/* big-endian next_refresh_at */
#define CACHE_DUE_KEY_BYTES	(1 + CACHE_DUE_AT_BYTES + CACHE_KEY_MAX_BYTES)
#define MIB			((size_t)1 << 20)
/*
 * Below this much free space on the store's file system, writes wait: a
 * commit that grows data.mdb would fail part-way (LMDB reports a short
 * write as EIO) and leave the file grown to fill the disk.
 */
#define CACHE_SPACE_MIN_BYTES	((long long)1 << 20)
#define CACHE_OPEN_TRIES	3	/* lock.mdb replaced while LMDB opened it */
/* LMDB's node and page headers, for estimating what a put needs */
#define CACHE_LMDB_NODE_BYTES	8
#define CACHE_LMDB_PAGEHDR_BYTES 16

struct cache {
	MDB_env		*env;
	MDB_dbi		 meta;
	MDB_dbi		 body;
	MDB_dbi		 aux;
	MDB_dbi		 due;		/* the due index; valid when have_due */
	int		 have_due;
	long		 due_built;	/* keys built at open, or -1 */
	size_t		 due_skipped;
	/*
	 * One read transaction, reset between calls and renewed for the
	 * next, so a hit allocates nothing. Live only from a cache_get until
	 * the next call on the handle: that is how long its pointers last.
	 */
	MDB_txn		*rtxn;
	int		 rtxn_live;
	int		 readonly;
	int		 in_walk;	/* inside a cache_walk callback */
	size_t		 walk_skipped;
	size_t		 map_bytes;	/* asked at open, for a reset */
	int		 map_full;	/* the last error was MDB_MAP_FULL */
	enum cache_cause cause;		/* of the last error */
	int		 trim_due;	/* a write failed for want of disk */
	size_t		 trimmed;	/* bytes the last trim gave back */
	/* an original's, read by its twins' threads too (atomic) */
	int		 no_space;	/* writes wait for free space */
	/* lock.mdb and data.mdb as this environment opened them */
	dev_t		 lock_dev, data_dev;
	ino_t		 lock_ino, data_ino;
	int		 lazy_meta;	/* MDB_NOMETASYNC: synced at close */
	unsigned long	 env_gen;	/* environments opened: a reset maps anew */
	/* cache_release_pages_step's map, as found at its first step */
	unsigned long	 rel_lo, rel_hi, rel_gen;
	struct cache	*of;		/* a twin: the handle whose environment it shares */
	struct cache	*twins;		/* an original: its twins, through twin_next */
	struct cache	*twin_next;
	char		*dir;
	char		 err[256];
	char		 damage[CACHE_DAMAGE_NOTE_BYTES];
	int		 txn_rc;	/* the current transaction's last LMDB error */
	/*
	 * An original's: damage found at run time by any of its handles, on
	 * any thread. 0 sound; 1 being noted; 2 noted, damaged_why written.
	 */
	atomic_int	 damaged;
	char		 damaged_why[CACHE_DAMAGE_NOTE_BYTES];
	int		 damage_efd;	/* cache_damage_fd's, or -1 */
};

static void	cache_seterr(struct cache *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

static void
cache_seterr(struct cache *c, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	c->cause = CACHE_CAUSE_NONE;
	n = snprintf(c->err, sizeof(c->err), "cache: %s: ", c->dir);
	if (n < 0 || (size_t)n >= sizeof(c->err))
		return;
	va_start(ap, fmt);
	vsnprintf(c->err + n, sizeof(c->err) - n, fmt, ap);
	va_end(ap);
}

/* The map's size and the bytes of it the store has used (its pages). 0, or LMDB's error. */
static int
env_bytes(MDB_env *env, size_t *map, size_t *used)
{
	MDB_envinfo	info;
	MDB_stat	st;
	int		rc;

	if ((rc = mdb_env_info(env, &info)) != 0 ||
	    (rc = mdb_env_stat(env, &st)) != 0)
		return rc;
	*map = info.me_mapsize;
	*used = (info.me_last_pgno + 1) * (size_t)st.ms_psize;
	return 0;
}

int
cache_damage_rc(int rc, int prior)
{
	switch (rc) {
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID:
		return 1;
	case MDB_BAD_TXN:
		/*
		 * The transaction failed before. A cursor's set-up (the first
		 * use of a named database in a transaction) drops the error
		 * of the page search it makes and keeps only the
		 * transaction's error flag: then MDB_BAD_TXN is the first
		 * error anyone sees. In a read transaction only a page that
		 * is missing or of the wrong type sets that flag.
		 */
		return prior == 0 || cache_damage_rc(prior, 0);
	default:
		return 0;
	}
}

/*
 * Free bytes on the store's file system for this process (root may use
 * the reserved blocks), or -1 when statvfs fails.
 */
static long long
cache_free_bytes(const struct cache *c)
{
	struct statvfs	sv;

	if (statvfs(c->dir, &sv) == -1)
		return -1;
	return (long long)(geteuid() == 0 ? sv.f_bfree : sv.f_bavail) *
	    (long long)sv.f_frsize;
}

static struct cache *
cache_origin(struct cache *c)
{
	return c->of != NULL ? c->of : c;
}

/* First finder notes the cause and wakes the owner; the rest find it noted. */
static void
cache_mark_damaged(struct cache *c, const char *op, const char *cause)
{
	struct cache	*o = cache_origin(c);
	uint64_t	 one = 1;
	int		 sound = 0;

	if (!atomic_compare_exchange_strong(&o->damaged, &sound, 1))
		return;
	snprintf(o->damaged_why, sizeof(o->damaged_why), "%s: %s", op, cause);
	atomic_store_explicit(&o->damaged, 2, memory_order_release);
	if (o->damage_efd != -1)
		(void)!write(o->damage_efd, &one, sizeof(one));
}

/* Whether the store is known damaged: then nothing of its map is read. */
static int
cache_refuse_damaged(struct cache *c)
{
	struct cache	*o = cache_origin(c);
	int		 st = atomic_load_explicit(&o->damaged,
			    memory_order_acquire);

	if (st == 0)
		return 0;
	cache_seterr(c, "the store is damaged (%s): not read until it is "
	    "moved aside", st == 2 ? o->damaged_why : "being noted");
	return 1;
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
static void
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

/* LMDB's error, or for a full map how full and what to change. */
static void
cache_setmdberr(struct cache *c, const char *op, int rc)
{
	size_t		used, map;
	int		prior = c->txn_rc;

	c->map_full = 0;
	c->txn_rc = rc;
	/* LMDB found a page that is not what its tree says. */
	if (cache_damage_rc(rc, prior)) {
		cache_seterr(c, "%s: %s: the store is damaged", op,
		    mdb_strerror(rc));
		cache_mark_damaged(c, op, rc != MDB_BAD_TXN ? mdb_strerror(rc) :
		    "MDB_BAD_TXN (a page LMDB looked for was missing or of the "
		    "wrong type)");
		return;
	}
	if (rc == ENOSPC || rc == EDQUOT || rc == EIO) {
		cache_set_write_err(c, op, rc);
		return;
	}
	if (rc != MDB_MAP_FULL) {
		cache_seterr(c, "%s: %s", op, mdb_strerror(rc));
		c->map_full = 0;
		/* The lock file busy: every reader slot taken, a lock not had. */
		if (rc == MDB_READERS_FULL || rc == EBUSY || rc == EAGAIN)
			c->cause = CACHE_CAUSE_LOCK;
		return;
	}
	c->map_full = 1;
	c->cause = CACHE_CAUSE_MAP_FULL;
	if (env_bytes(c->env, &map, &used) != 0) {
		snprintf(c->err, sizeof(c->err),
		    "cache: map full: raise map_size_mb");
		return;
	}
	snprintf(c->err, sizeof(c->err),
	    "cache: map full (%zu MiB used of %zu MiB): raise map_size_mb",
	    (used + MIB - 1) / MIB, (map + MIB - 1) / MIB);
}

/* The LMDB key: one kind byte, then the caller's key. */
static int
cache_lkey(struct cache *c, unsigned kind, const uint8_t *key, size_t klen,
    uint8_t buf[CACHE_LKEY_BYTES], MDB_val *k)
{
	if (kind == 0 || kind >= CACHE_KIND_MAX) {
		cache_seterr(c, "kind %u out of range", kind);
		return -1;
	}
	if (klen == 0 || klen > CACHE_KEY_MAX_BYTES || key == NULL) {
		cache_seterr(c, "key length %zu not in 1..%d", klen,
		    CACHE_KEY_MAX_BYTES);
		return -1;
	}
	buf[0] = kind;
	memcpy(buf + 1, key, klen);
	k->mv_data = buf;
	k->mv_size = klen + 1;
	return 0;
}

/* Before anything but a get: end the last get's snapshot. */
static void
cache_read_end(struct cache *c)
{
	if (c->rtxn != NULL && c->rtxn_live) {
		mdb_txn_reset(c->rtxn);
		c->rtxn_live = 0;
	}
}

/*
 * Where this process maps the file `st` is: the largest mapping of its
 * device and inode in /proc/self/maps (LMDB's me_mapaddr names only a
 * fixed map). 0, or -1 when there is none.
 */
static int
cache_map_find(const struct stat *st, uintptr_t *lo, uintptr_t *hi)
{
	unsigned long long	a, b, ino;
	unsigned		maj, mn;
	char			line[PATH_MAX + 128];
	FILE			*f;
	int			rv = -1;

	if ((f = fopen("/proc/self/maps", "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%llx-%llx %*s %*s %x:%x %llu", &a, &b, &maj,
		    &mn, &ino) != 5 || ino != (unsigned long long)st->st_ino ||
		    makedev(maj, mn) != st->st_dev)
			continue;
		if (rv == -1 || b - a > *hi - *lo) {
			*lo = (uintptr_t)a;
			*hi = (uintptr_t)b;
			rv = 0;
		}
	}
	fclose(f);
	return rv;
}

/*
 * Tell cache/fault.c where the map is now (after each open and resize),
 * so that a fault inside it is told from a bug.
 */
static void
cache_fault_register(struct cache *c)
{
	MDB_stat	st;
	struct stat	fst;
	uintptr_t	lo, hi;
	int		fd;

	if (mdb_env_stat(c->env, &st) != 0 ||
	    mdb_env_get_fd(c->env, &fd) != 0 || fstat(fd, &fst) == -1 ||
	    cache_map_find(&fst, &lo, &hi) == -1)
		return;
	cache_fault_map((const void *)lo, hi - lo, st.ms_psize,
	    (unsigned long long)fst.st_ino);
}

/* LMDB's assertion callback: a tree it cannot walk; the abort that follows is not survived. */
static void
cache_on_assert(MDB_env *env, const char *msg)
{
	(void)env;
	cache_fault_assert(msg);
}

/*
 * Another process may have grown the map past ours; LMDB then refuses new
 * transactions with MDB_MAP_RESIZED until we adopt the size it recorded.
 */
static int
cache_adopt_mapsize(struct cache *c, const char *op)
{
	int	rc;

	if ((rc = mdb_env_set_mapsize(c->env, 0)) != 0) {
		cache_setmdberr(c, op, rc);
		return -1;
	}
	cache_fault_register(c);
	return 0;
}

/* A read transaction for `op` ("lookup", "walk", ...), named for a fault's marker. */
static int
cache_read_begin(struct cache *c, const char *op)
{
	int	rc, tries;

	cache_read_end(c);
	c->txn_rc = 0;
	if (cache_refuse_damaged(c))
		return -1;
	cache_fault_doing(op);
	for (tries = 0; tries < 2; tries++) {
		if (c->rtxn == NULL)
			rc = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &c->rtxn);
		else
			rc = mdb_txn_renew(c->rtxn);
		if (rc == 0) {
			c->rtxn_live = 1;
			return 0;
		}
		if (rc != MDB_MAP_RESIZED)
			break;
		if (cache_adopt_mapsize(c, "read") == -1)
			return -1;
	}
	cache_setmdberr(c, "read", rc);
	return -1;
}

/* dev and inode of DIR/name. 0, or -1 (errno). */
static int
cache_file_id(const char *dir, const char *name, dev_t *dev, ino_t *ino)
{
	char		path[PATH_MAX];
	struct stat	st;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (stat(path, &st) == -1)
		return -1;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/*
 * Whether lock.mdb and data.mdb at their paths are still the files this
 * environment opened. A process that opens the store after lock.mdb was
 * removed or replaced gets another lock file: its writers and ours would
 * not exclude each other, nor see each other's readers. 0, or -1 (c->err).
 */
static int
cache_check_data_id(struct cache *c)
{
	dev_t	dev;
	ino_t	ino;

	if (cache_file_id(c->dir, "data.mdb", &dev, &ino) == -1 ||
	    dev != c->data_dev || ino != c->data_ino) {
		cache_seterr(c, "data.mdb was moved or replaced since this "
		    "process opened the store: writes refused");
		c->cause = CACHE_CAUSE_LOCK;
		return -1;
	}
	return 0;
}

static int
cache_check_ids(struct cache *c)
{
	dev_t	dev;
	ino_t	ino;

	if (cache_file_id(c->dir, "lock.mdb", &dev, &ino) == -1 ||
	    dev != c->lock_dev || ino != c->lock_ino) {
		cache_seterr(c, "lock.mdb was removed or replaced since this "
		    "process opened the store: writes refused (a process "
		    "opening it now would not share this one's lock)");
		c->cause = CACHE_CAUSE_LOCK;
		return -1;
	}
	return cache_check_data_id(c);
}

struct cache_peer {
	long	pid;
	int	seen;
};

/* mdb_reader_list's lines: "pid thread txnid", after a header line. */
static int
cache_peer_line(const char *msg, void *arg)
{
	struct cache_peer	*p = arg;
	long			 pid;

	if (sscanf(msg, "%ld", &pid) == 1 && pid == p->pid)
		p->seen = 1;
	return 0;
}

/*
 * The daemon holding DIR, when that is another process, keeps a reader
 * slot in its lock file for its life (cache_env_open). Not finding it in
 * ours means it opened another lock.mdb, one removed or replaced since:
 * a write now could reuse pages its lookups read. 0, or -1 (c->err).
 */
static int
cache_check_peer(struct cache *c)
{
	struct cache_peer	p = { 0, 0 };
	char			path[PATH_MAX], text[32];
	ssize_t			n;
	pid_t			pid;
	int			fd;

	/* The daemon itself, by the pid it wrote: no /proc/locks to read. */
	if (snprintf(path, sizeof(path), "%s/stapled.lock", c->dir) <
	    (int)sizeof(path) && (fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
		n = pread(fd, text, sizeof(text) - 1, 0);
		close(fd);
		text[n > 0 ? n : 0] = '\0';
		if (strtol(text, NULL, 10) == (long)getpid())
			return 0;
	}
	if ((pid = cache_lock_holder(c->dir)) <= 0 || pid == getpid())
		return 0;
	p.pid = pid;
	(void)mdb_reader_list(c->env, cache_peer_line, &p);
	if (p.seen)
		return 0;
	cache_seterr(c, "the running stapled (pid %ld) does not share this "
	    "lock.mdb (it was removed or replaced while stapled ran): writes "
	    "refused until stapled opens the store again", (long)pid);
	c->cause = CACHE_CAUSE_LOCK;
	return -1;
}

/* While the disk is full, a write waits unless there is room again. 0, or -1. */
static int
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
	if (c == NULL || c->env == NULL || c->readonly)
		return CACHE_CAUSE_NONE;
	if (cache_check_ids(c) == -1 || cache_space_wait(c) == -1)
		return c->cause;
	return CACHE_CAUSE_NONE;
}

static int
cache_write_begin(struct cache *c, MDB_txn **txn)
{
	int	rc, tries, dead;

	c->map_full = 0;
	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	cache_read_end(c);
	if (c->readonly) {
		cache_seterr(c, "opened read-only");
		return -1;
	}
	c->txn_rc = 0;
	c->trimmed = 0;
	if (cache_refuse_damaged(c))
		return -1;
	if (cache_check_ids(c) == -1 || cache_space_wait(c) == -1 ||
	    cache_check_peer(c) == -1)
		return -1;
	cache_fault_doing("write");
	/*
	 * A process that died inside a read transaction (staplectl killed
	 * during an export, a crashed reader) leaves its slot in the lock
	 * file, and the snapshot it names keeps every page freed since from
	 * reuse: each write then takes new pages until the map is full.
	 * LMDB frees such slots only when asked, so every write asks first:
	 * a pass over the slots under their lock, and a lock test per other
	 * process that holds one (design.md 5.2).
	 */
	(void)mdb_reader_check(c->env, &dead);
	for (tries = 0; tries < 2; tries++) {
		rc = mdb_txn_begin(c->env, NULL, 0, txn);
		if (rc == 0)
			return 0;
		if (rc != MDB_MAP_RESIZED)
			break;
		if (cache_adopt_mapsize(c, "write") == -1)
			return -1;
	}
	cache_setmdberr(c, "write", rc);
	return -1;
}

/*
 * Commit frees the transaction whatever it returns. A store moved aside
 * while the transaction ran took the commit with it: said, as a failure.
 */
static int
cache_commit(struct cache *c, MDB_txn *txn)
{
	int	rc;

	if ((rc = mdb_txn_commit(txn)) != 0) {
		cache_setmdberr(c, "commit", rc);
		return -1;
	}
	if (cache_check_data_id(c) == -1) {
		snprintf(c->err, sizeof(c->err), "cache: %s: data.mdb was "
		    "moved aside or replaced during the write: what it stored "
		    "went with the old file", c->dir);
		return -1;
	}
	return 0;
}

/*
 * Give back what a failed write left past the store's end: under the
 * writer lock (no process extends the file meanwhile), the file is cut
 * to the last page the newest commit names. No snapshot refers to a page
 * past it (the last page only grows), so no reader reads what is cut.
 */
static void
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

/* End a write transaction that failed (txn NULL: commit freed it). */
static void
cache_write_abort(struct cache *c, MDB_txn *txn)
{
	size_t	n;

	mdb_txn_abort(txn);
	if (!c->trim_due)
		return;
	c->trim_due = 0;
	cache_trim(c);
	if (c->trimmed > 0 && (n = strlen(c->err)) < sizeof(c->err))
		snprintf(c->err + n, sizeof(c->err) - n, "; gave back the "
		    "%zu KiB the write had added to data.mdb", c->trimmed >> 10);
}

/* ---- the due index: kind || big-endian next_refresh_at || key ---------- */

static int
cache_due_indexed(const struct cache_meta *m)
{
	return m != NULL && (m->flags & CACHE_F_NO_REFRESH) == 0;
}

/* The index key of the entry whose LMDB key (kind || key) is lk. */
static void
cache_due_key(const MDB_val *lk, int64_t at, uint8_t buf[CACHE_DUE_KEY_BYTES],
    MDB_val *dk)
{
	const uint8_t	*p = lk->mv_data;
	uint64_t	 u = at > 0 ? (uint64_t)at : 0;
	int		 i;

	buf[0] = p[0];
	for (i = 0; i < CACHE_DUE_AT_BYTES; i++)
		buf[1 + i] = (uint8_t)(u >> (8 * (CACHE_DUE_AT_BYTES - 1 - i)));
	memcpy(buf + 1 + CACHE_DUE_AT_BYTES, p + 1, lk->mv_size - 1);
	dk->mv_data = buf;
	dk->mv_size = lk->mv_size + CACHE_DUE_AT_BYTES;
}

/* The time in an index key of at least 1 + CACHE_DUE_AT_BYTES bytes. */
static int64_t
cache_due_at(const uint8_t *dk)
{
	uint64_t	u = 0;
	int		i;

	for (i = 0; i < CACHE_DUE_AT_BYTES; i++)
		u = (u << 8) | dk[1 + i];
	return u > INT64_MAX ? INT64_MAX : (int64_t)u;
}

/*
 * Inside a write transaction: move the index key of lk from where `old`
 * put it to where `m` puts it (NULL: not indexed). 0, or -1 (c->err).
 */
static int
cache_txn_due_move(struct cache *c, MDB_txn *txn, const MDB_val *lk,
    const struct cache_meta *old, const struct cache_meta *m)
{
	uint8_t	ob[CACHE_DUE_KEY_BYTES], nb[CACHE_DUE_KEY_BYTES];
	MDB_val	ok, nk, v = { 0, NULL };
	int	rc, hold = cache_due_indexed(old), hnew = cache_due_indexed(m);

	if (!c->have_due)
		return 0;
	if (hold)
		cache_due_key(lk, old->next_refresh_at, ob, &ok);
	if (hnew)
		cache_due_key(lk, m->next_refresh_at, nb, &nk);
	if (hold && hnew && memcmp(ob, nb, ok.mv_size) == 0)
		return 0;
	if (hold && (rc = mdb_del(txn, c->due, &ok, NULL)) != 0 &&
	    rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "del due", rc);
		return -1;
	}
	if (hnew && (rc = mdb_put(txn, c->due, &nk, &v, 0)) != 0) {
		cache_setmdberr(c, "put due", rc);
		return -1;
	}
	return 0;
}

/* Index every meta of a store that has no index yet. 0, or an LMDB error. */
static int
cache_due_build(struct cache *c, MDB_txn *txn)
{
	struct cache_meta	 m;
	MDB_cursor		*cur;
	MDB_val			 k, v;
	int			 rc;

	c->due_built = 0;
	if ((rc = mdb_cursor_open(txn, c->meta, &cur)) != 0)
		return rc;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < 2 || k.mv_size > CACHE_LKEY_BYTES ||
		    record_meta_decode(v.mv_data, v.mv_size, &m) == -1 ||
		    m.kind != ((const uint8_t *)k.mv_data)[0] ||
		    !cache_due_indexed(&m))
			continue;
		if (cache_txn_due_move(c, txn, &k, NULL, &m) == -1) {
			rc = EIO;
			break;
		}
		c->due_built++;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/*
 * Open the due index, creating and building it on a read-write handle
 * when the store has none. 0, or an LMDB error.
 */
static int
cache_open_due(struct cache *c, MDB_txn *txn)
{
	int	rc;

	c->have_due = 0;
	c->due_built = -1;
	if ((rc = mdb_dbi_open(txn, "due", 0, &c->due)) == 0) {
		c->have_due = 1;
		return 0;
	}
	if (rc != MDB_NOTFOUND || c->readonly)
		return rc == MDB_NOTFOUND ? 0 : rc;
	if ((rc = mdb_dbi_open(txn, "due", MDB_CREATE, &c->due)) != 0)
		return rc;
	c->have_due = 1;
	return cache_due_build(c, txn);
}

/* The meta, body and aux databases in txn, with mdb_dbi_open's flags. An LMDB code. */
static int
cache_open_main_dbis(struct cache *c, MDB_txn *txn, unsigned flags)
{
	int	rc;

	if ((rc = mdb_dbi_open(txn, "meta", flags, &c->meta)) != 0 ||
	    (rc = mdb_dbi_open(txn, "body", flags, &c->body)) != 0)
		return rc;
	return mdb_dbi_open(txn, "aux", flags, &c->aux);
}

/*
 * A store that has every database opens in a read transaction: a write
 * transaction would wait for the writer lock, which a staplectl import
 * may hold for as long as its commit takes, and the daemon's start with
 * it. 1 when done, 0 when a database is missing (the caller creates it in
 * a write transaction), -1 (c->err).
 */
static int
cache_open_dbis_read(struct cache *c)
{
	MDB_txn	*txn;
	int	 rc;

	if ((rc = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn)) != 0) {
		cache_setmdberr(c, "open", rc);
		return -1;
	}
	if ((rc = cache_open_main_dbis(c, txn, 0)) != 0 ||
	    (rc = mdb_dbi_open(txn, "due", 0, &c->due)) != 0) {
		mdb_txn_abort(txn);
		if (rc == MDB_NOTFOUND)
			return 0;
		cache_setmdberr(c, "open", rc);
		return -1;
	}
	/* Committing a read-only transaction keeps its handles for later ones. */
	if ((rc = mdb_txn_commit(txn)) != 0) {
		cache_setmdberr(c, "open", rc);
		return -1;
	}
	c->have_due = 1;
	c->due_built = -1;
	return 1;
}

static int
cache_open_dbis(struct cache *c)
{
	MDB_txn		*txn = NULL;
	unsigned	 flags = c->readonly ? 0 : MDB_CREATE;
	int		 rc, rv = -1;

	if (!c->readonly && (rc = cache_open_dbis_read(c)) != 0)
		return rc == 1 ? 0 : -1;
	rc = mdb_txn_begin(c->env, NULL, c->readonly ? MDB_RDONLY : 0, &txn);
	if (rc != 0) {
		cache_setmdberr(c, "open", rc);
		goto out;
	}
	if ((rc = cache_open_main_dbis(c, txn, flags)) != 0) {
		if (rc == MDB_NOTFOUND)
			cache_seterr(c, "not a stapled cache (no meta, body "
			    "or aux database)");
		else
			cache_setmdberr(c, "open", rc);
		goto out;
	}
	if ((rc = cache_open_due(c, txn)) != 0) {
		if (rc != EIO)
			cache_setmdberr(c, "building the due index", rc);
		goto out;
	}
	rc = mdb_txn_commit(txn);
	txn = NULL;
	if (rc != 0) {
		cache_setmdberr(c, "open", rc);
		goto out;
	}
	rv = 0;
 out:
	mdb_txn_abort(txn);
	return rv;
}

/*
 * mdb_env_open, and the lock file and data file it opened (cache_check_ids
 * compares them before each write). The data file is LMDB's descriptor;
 * the lock file is the one at its path before and after the open, which
 * is tried again should it have been replaced in between. An LMDB code.
 */
static int
cache_env_open_ids(struct cache *c, unsigned flags)
{
	struct stat	st;
	dev_t		dev;
	ino_t		ino;
	int		rc, fd, before, tries;

	for (tries = 0; tries < CACHE_OPEN_TRIES; tries++) {
		before = cache_file_id(c->dir, "lock.mdb", &dev, &ino) == 0;
		if ((rc = mdb_env_open(c->env, c->dir, flags,
		    CACHE_FILE_MODE)) != 0)
			return rc;
		if ((rc = mdb_env_get_fd(c->env, &fd)) != 0)
			return rc;
		if (fstat(fd, &st) == -1)
			return errno;
		c->data_dev = st.st_dev;
		c->data_ino = st.st_ino;
		/* None: a read-only open on a read-only medium (never writes). */
		if (cache_file_id(c->dir, "lock.mdb", &c->lock_dev,
		    &c->lock_ino) == -1) {
			c->lock_dev = 0;
			c->lock_ino = 0;
			return 0;
		}
		if (!before || (dev == c->lock_dev && ino == c->lock_ino))
			return 0;
		/* Replaced while LMDB opened it: LMDB's may be either. */
		mdb_env_close(c->env);
		if ((rc = mdb_env_create(&c->env)) != 0 ||
		    (rc = mdb_env_set_maxdbs(c->env, CACHE_MAXDBS)) != 0 ||
		    (rc = mdb_env_set_maxreaders(c->env, CACHE_MAXREADERS)) != 0 ||
		    (rc = mdb_env_set_mapsize(c->env, c->map_bytes)) != 0)
			return rc;
	}
	return EBUSY;
}

/* Create and open c->env for c->dir with c->map_bytes. 0, or -1 (c->err). */
static int
cache_env_open(struct cache *c)
{
	MDB_envinfo	 info;
	long long	 freeb;
	int		 rc, dead;

	c->env_gen++;
	if ((rc = mdb_env_create(&c->env)) != 0 ||
	    (rc = mdb_env_set_maxdbs(c->env, CACHE_MAXDBS)) != 0 ||
	    (rc = mdb_env_set_maxreaders(c->env, CACHE_MAXREADERS)) != 0 ||
	    (rc = mdb_env_set_mapsize(c->env, c->map_bytes)) != 0) {
		cache_seterr(c, "%s", mdb_strerror(rc));
		return -1;
	}
	/* Without NDEBUG in liblmdb only; an error here changes nothing. */
	(void)mdb_env_set_assert(c->env, cache_on_assert);
	/*
	 * Default sync: a commit is on disk when it returns. MDB_NOTLS lets
	 * the reusable read transaction outlive any one thread's use, and
	 * the lock file stays in use so staplectl may open alongside.
	 */
	rc = cache_env_open_ids(c,
	    MDB_NOTLS | MDB_NORDAHEAD | (c->readonly ? MDB_RDONLY : 0));
	if (rc != 0) {
		cache_seterr(c, "%s", mdb_strerror(rc));
		return -1;
	}
	/* Reader slots left by processes that died (kill -9, OOM). */
	if ((rc = mdb_reader_check(c->env, &dead)) != 0) {
		cache_seterr(c, "reader check: %s", mdb_strerror(rc));
		return -1;
	}
	/*
	 * An environment made with a bigger map keeps it: adopt the size
	 * recorded on disk, then grow to what was asked if that is more.
	 */
	if ((rc = mdb_env_set_mapsize(c->env, 0)) != 0 ||
	    (rc = mdb_env_info(c->env, &info)) != 0 ||
	    (info.me_mapsize < c->map_bytes &&
	    (rc = mdb_env_set_mapsize(c->env, c->map_bytes)) != 0)) {
		cache_seterr(c, "map size: %s", mdb_strerror(rc));
		return -1;
	}
	cache_fault_register(c);
	if (cache_open_dbis(c) == -1)
		return -1;
	if (c->readonly)
		return 0;
	/*
	 * A writer holds a reader slot for the handle's life (the reusable
	 * read transaction, reset): other processes find it there and know
	 * they share its lock file (cache_check_peer).
	 */
	if (cache_read_begin(c, "reader slot") == 0)
		cache_read_end(c);
	/* A full disk: serve what is stored, write once there is room. */
	if ((freeb = cache_free_bytes(c)) >= 0 && freeb < CACHE_SPACE_MIN_BYTES)
		__atomic_store_n(&c->no_space, 1, __ATOMIC_RELAXED);
	return 0;
}

struct cache *
cache_open(const char *dir, size_t map_bytes, int readonly, char *err,
    size_t errlen)
{
	struct cache	*c = NULL, *rv = NULL;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (map_bytes == 0)
		map_bytes = CACHE_DEFAULT_MAP_BYTES;
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->dir = strdup(dir)) == NULL) {
		if (err != NULL)
			snprintf(err, errlen, "cache: %s: %s", dir,
			    strerror(ENOMEM));
		goto out;
	}
	c->readonly = readonly != 0;
	c->map_bytes = map_bytes;
	c->damage_efd = -1;

	if (!c->readonly && mkdir(dir, CACHE_DIR_MODE) == -1 &&
	    errno != EEXIST) {
		cache_seterr(c, "%s", strerror(errno));
		goto fail;
	}
	if (cache_env_open(c) == -1)
		goto fail;
	rv = c;
	c = NULL;
	goto out;
 fail:
	if (err != NULL)
		snprintf(err, errlen, "%s", c->err);
 out:
	cache_close(c);
	return rv;
}

void
cache_close(struct cache *c)
{
	struct cache	**pp;

	if (c == NULL)
		return;
	mdb_txn_abort(c->rtxn);
	if (c->of != NULL) {
		/* a twin: the environment is its original's */
		for (pp = &c->of->twins; *pp != NULL; pp = &(*pp)->twin_next)
			if (*pp == c) {
				*pp = c->twin_next;
				break;
			}
		free(c->dir);
		free(c);
		return;
	}
	/* the last commit's meta page, left to a later sync */
	if (c->env != NULL && c->lazy_meta)
		(void)mdb_env_sync(c->env, 1);
	if (c->env != NULL) {
		cache_fault_map(NULL, 0, 0, 0);
		mdb_env_close(c->env);
	}
	if (c->damage_efd != -1)
		close(c->damage_efd);
	free(c->dir);
	free(c);
}

struct cache *
cache_twin(struct cache *of)
{
	struct cache	*c;

	if (of == NULL || of->of != NULL || (c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	if ((c->dir = strdup(of->dir)) == NULL) {
		free(c);
		return NULL;
	}
	c->damage_efd = -1;
	c->of = of;
	c->twin_next = of->twins;
	of->twins = c;
	cache_twin_follow(c);
	return c;
}

void
cache_twin_follow(struct cache *c)
{
	const struct cache	*of = c->of;

	/* Already on the original's environment: keep the read transaction. */
	if (of == NULL || (c->env == of->env && c->env_gen == of->env_gen))
		return;
	mdb_txn_abort(c->rtxn);
	c->rtxn = NULL;
	c->rtxn_live = 0;
	c->env = of->env;
	c->env_gen = of->env_gen;
	c->meta = of->meta;
	c->body = of->body;
	c->aux = of->aux;
	c->due = of->due;
	c->have_due = of->have_due;
	c->due_built = -1;
	c->readonly = of->readonly;
	c->map_bytes = of->map_bytes;
	c->lazy_meta = of->lazy_meta;
	c->map_full = 0;
	c->lock_dev = of->lock_dev;
	c->lock_ino = of->lock_ino;
	c->data_dev = of->data_dev;
	c->data_ino = of->data_ino;
}

int
cache_set_lazy_meta(struct cache *c, int on)
{
	int	rc;

	if (c == NULL || c->env == NULL || c->readonly || c->of != NULL)
		return -1;
	if ((rc = mdb_env_set_flags(c->env, MDB_NOMETASYNC, on ? 1 : 0)) != 0) {
		cache_setmdberr(c, "set flags", rc);
		return -1;
	}
	c->lazy_meta = on != 0;
	return 0;
}

const char *
cache_strerror(const struct cache *c)
{
	if (c == NULL)
		return "cache: no handle";
	return c->err;
}

/* Under a live read transaction: the decoded meta, and the body if asked. */
static int
cache_lookup(struct cache *c, unsigned kind, const uint8_t *key, size_t klen,
    struct cache_meta *meta, struct cache_body *body)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m;
	MDB_val			 k, v;
	int			 rc;

	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (cache_lkey(c, kind, key, klen, lk, &k) == -1)
		return -1;
	if (cache_read_begin(c, "lookup") == -1)
		return -1;
	if ((rc = mdb_get(c->rtxn, c->meta, &k, &v)) == MDB_NOTFOUND)
		return 0;
	if (rc != 0) {
		cache_setmdberr(c, "get meta", rc);
		return -1;
	}
	if (record_meta_decode(v.mv_data, v.mv_size, &m) == -1 ||
	    m.kind != kind) {
		cache_seterr(c, "%s entry: undecodable meta",
		    cache_kind_str[kind]);
		return -1;
	}
	if (body != NULL) {
		/*
		 * Every write of an entry puts its meta and its body in one
		 * transaction: a meta without a body is a tree that misleads.
		 */
		if ((rc = mdb_get(c->rtxn, c->body, &k, &v)) == MDB_NOTFOUND) {
			cache_seterr(c, "get body: a stored entry has no body: "
			    "the store is damaged");
			cache_mark_damaged(c, "get body", "a stored entry has no "
			    "body");
			return -1;
		}
		if (rc != 0) {
			cache_setmdberr(c, "get body", rc);
			return -1;
		}
		if (record_body_decode(v.mv_data, v.mv_size, body) == -1) {
			cache_seterr(c, "%s entry: undecodable body",
			    cache_kind_str[kind]);
			return -1;
		}
	}
	if (meta != NULL)
		*meta = m;
	return 1;
}

void
cache_get_done(struct cache *c)
{
	cache_read_end(c);
}

int
cache_get(struct cache *c, enum cache_kind kind, const uint8_t *key,
    size_t klen, struct cache_meta *meta, struct cache_body *body)
{
	return cache_lookup(c, kind, key, klen, meta, body);
}

int
cache_get_meta(struct cache *c, enum cache_kind kind, const uint8_t *key,
    size_t klen, struct cache_meta *meta)
{
	return cache_lookup(c, kind, key, klen, meta, NULL);
}

/* Inside a write transaction: 1 and the stored meta, 0 absent, -1 error. */
static int
cache_txn_meta(struct cache *c, MDB_txn *txn, MDB_val *k,
    struct cache_meta *m)
{
	MDB_val	v;
	int	rc;

	if ((rc = mdb_get(txn, c->meta, k, &v)) == MDB_NOTFOUND)
		return 0;
	if (rc != 0) {
		cache_setmdberr(c, "get meta", rc);
		return -1;
	}
	/* A record we cannot read is treated as absent and replaced. */
	if (record_meta_decode(v.mv_data, v.mv_size, m) == -1 ||
	    m->kind != ((const uint8_t *)k->mv_data)[0])
		return 0;
	return 1;
}

static void
cache_carry_counters(struct cache_meta *m, const struct cache_meta *old)
{
	if (old->served_count > m->served_count)
		m->served_count = old->served_count;
	if (old->last_served_at > m->last_served_at)
		m->last_served_at = old->last_served_at;
	/* Not asked since its import: a refresh does not change that. */
	m->flags |= old->flags & CACHE_F_IMPORTED;
}

/* Write m over `old` (NULL: none or unreadable), moving its index key. */
static int
cache_txn_put_meta(struct cache *c, MDB_txn *txn, MDB_val *k,
    const struct cache_meta *old, const struct cache_meta *m)
{
	uint8_t	enc[RECORD_META_BYTES];
	MDB_val	v;
	int	rc;

	record_meta_encode(m, enc);
	v.mv_data = enc;
	v.mv_size = sizeof(enc);
	if ((rc = mdb_put(txn, c->meta, k, &v, 0)) != 0) {
		cache_setmdberr(c, "put meta", rc);
		return -1;
	}
	return cache_txn_due_move(c, txn, k, old, m);
}

/*
 * One put inside the caller's write transaction: CACHE_PUT_STORED or
 * CACHE_PUT_KEPT, or -1 (the caller aborts).
 */
static int
cache_txn_put(struct cache *c, MDB_txn *txn, const uint8_t *key, size_t klen,
    const struct cache_meta *meta, const struct cache_body *body)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m, old;
	MDB_val			 k, v;
	uint8_t			*enc = NULL;
	size_t			 enclen;
	int			 rc, have, rv = -1;

	if (cache_lkey(c, meta->kind, key, klen, lk, &k) == -1)
		goto out;
	if (record_body_encode(body, &enc, &enclen) == -1) {
		cache_seterr(c, "%s entry: body too large (request %zu, "
		    "response %zu bytes, limit %u)", cache_kind_str[meta->kind],
		    body->request_len, body->response_len,
		    RECORD_MAX_BLOB_BYTES);
		goto out;
	}
	if ((have = cache_txn_meta(c, txn, &k, &old)) == -1)
		goto out;
	if (have && old.this_update > meta->this_update) {
		rv = CACHE_PUT_KEPT;
		goto out;
	}
	m = *meta;
	if (have)
		cache_carry_counters(&m, &old);
	if (cache_txn_put_meta(c, txn, &k, have ? &old : NULL, &m) == -1)
		goto out;
	v.mv_data = enc;
	v.mv_size = enclen;
	if ((rc = mdb_put(txn, c->body, &k, &v, 0)) != 0) {
		cache_setmdberr(c, "put body", rc);
		goto out;
	}
	rv = CACHE_PUT_STORED;
 out:
	free(enc);
	return rv;
}

int
cache_put(struct cache *c, const uint8_t *key, size_t klen,
    const struct cache_meta *meta, const struct cache_body *body)
{
	struct cache_put_item	it = { key, klen, meta, body };
	int			res;

	if (cache_put_many(c, &it, 1, &res) == -1)
		return -1;
	return res;
}

/* About what one put adds to the map: its meta, body and due key. */
static size_t
cache_put_bytes(const struct cache_put_item *it, size_t psize)
{
	size_t	key = 1 + it->klen + CACHE_LMDB_NODE_BYTES;
	size_t	body = it->body->request_len + it->body->response_len +
		    it->body->headers_len + RECORD_META_BYTES;
	size_t	n;

	/* Leaf pages are half full at worst: twice each small record. */
	n = 2 * (key + RECORD_META_BYTES) + 2 * (key + CACHE_DUE_AT_BYTES);
	if (key + body <= psize / 2)
		return n + 2 * (key + body);
	/* A big body takes overflow pages of its own. */
	return n + 2 * key + (body + CACHE_LMDB_PAGEHDR_BYTES + psize - 1) /
	    psize * psize;
}

/*
 * A full map, named with what the refused puts need: the pages in use
 * (less the free ones) and the estimate for the items, against the map.
 */
static void
cache_map_need(struct cache *c, const struct cache_put_item *it, size_t n)
{
	struct cache_room	room;
	MDB_stat		st;
	char			keep[sizeof(c->err)];
	size_t			need = 0, i;

	memcpy(keep, c->err, sizeof(keep));
	if (mdb_env_stat(c->env, &st) != 0 || cache_room(c, &room) == -1) {
		memcpy(c->err, keep, sizeof(keep));
		c->cause = CACHE_CAUSE_MAP_FULL;
		return;
	}
	for (i = 0; i < n; i++)
		need += cache_put_bytes(&it[i], st.ms_psize);
	need += room.used_bytes - room.free_bytes;
	/* It did not fit: whatever the estimate, more than the map. */
	if (need <= room.map_bytes)
		need = room.map_bytes + st.ms_psize;
	snprintf(c->err, sizeof(c->err), "cache: map full: needs about %zu "
	    "MiB, map_size_mb is %zu: raise map_size_mb", (need + MIB - 1) /
	    MIB, room.map_bytes / MIB);
	c->cause = CACHE_CAUSE_MAP_FULL;
	c->map_full = 1;
}

int
cache_put_many(struct cache *c, const struct cache_put_item *it, size_t n,
    int *results)
{
	MDB_txn	*txn = NULL;
	size_t	 i, stored = 0;
	int	 rc, rv = -1;

	if (n == 0)
		return 0;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	for (i = 0; i < n; i++) {
		if ((rc = cache_txn_put(c, txn, it[i].key, it[i].klen,
		    it[i].meta, it[i].body)) == -1)
			goto out;
		results[i] = rc;
		if (rc == CACHE_PUT_STORED)
			stored++;
	}
	/* Nothing changed: no commit, no sync. */
	if (stored == 0) {
		rv = 0;
		goto out;
	}
	rc = cache_commit(c, txn);
	txn = NULL;
	if (rc == -1)
		goto out;
	rv = 0;
 out:
	cache_write_abort(c, txn);
	if (rv == -1 && c->cause == CACHE_CAUSE_MAP_FULL)
		cache_map_need(c, it, n);
	return rv;
}

/*
 * The schedule fields (flags, failures, next refresh) come from `meta`.
 * If a newer body was stored since the caller read its copy, the facts
 * about the body stay as stored, so a stale meta never describes it.
 */
int
cache_put_meta(struct cache *c, const uint8_t *key, size_t klen,
    const struct cache_meta *meta)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m, old;
	MDB_txn			*txn = NULL;
	MDB_val			 k;
	int			 rc, have, rv = -1;

	if (cache_lkey(c, meta->kind, key, klen, lk, &k) == -1)
		goto out;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	if ((have = cache_txn_meta(c, txn, &k, &old)) == -1)
		goto out;
	if (!have) {
		cache_seterr(c, "%s entry: not found",
		    cache_kind_str[meta->kind]);
		goto out;
	}
	m = *meta;
	if (old.this_update > m.this_update) {
		m = old;
		m.flags = meta->flags;
		m.refresh_failures = meta->refresh_failures;
		m.next_refresh_at = meta->next_refresh_at;
	}
	/* Only a put sets CACHE_F_IMPORTED and only a touch clears it. */
	m.flags &= (uint16_t)~CACHE_F_IMPORTED;
	cache_carry_counters(&m, &old);
	if (cache_txn_put_meta(c, txn, &k, &old, &m) == -1)
		goto out;
	rc = cache_commit(c, txn);
	txn = NULL;
	if (rc == -1)
		goto out;
	rv = 0;
 out:
	cache_write_abort(c, txn);
	return rv;
}

int
cache_touch(struct cache *c, const struct cache_touch *t, size_t n)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m, old;
	MDB_txn			*txn = NULL;
	MDB_val			 k;
	size_t			 i;
	int			 rc, have, rv = -1;

	if (n == 0)
		return 0;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	for (i = 0; i < n; i++) {
		/* A bad or missing key skips that entry, not the batch. */
		if (t[i].kind == 0 || t[i].kind >= CACHE_KIND_MAX ||
		    t[i].klen == 0 || t[i].klen > CACHE_KEY_MAX_BYTES)
			continue;
		lk[0] = t[i].kind;
		memcpy(lk + 1, t[i].key, t[i].klen);
		k.mv_data = lk;
		k.mv_size = t[i].klen + 1;
		if ((have = cache_txn_meta(c, txn, &k, &m)) == -1)
			goto out;
		if (!have)
			continue;
		old = m;
		m.served_count += t[i].served;
		if (t[i].served > 0)
			m.flags &= (uint16_t)~CACHE_F_IMPORTED;
		if (t[i].last_served_at > m.last_served_at)
			m.last_served_at = t[i].last_served_at;
		/* The schedule is unchanged: the index key stays. */
		if (cache_txn_put_meta(c, txn, &k, &old, &m) == -1)
			goto out;
	}
	rc = cache_commit(c, txn);
	txn = NULL;
	if (rc == -1)
		goto out;
	rv = 0;
 out:
	cache_write_abort(c, txn);
	return rv;
}

/* Deleting an absent entry is not an error. */
int
cache_del(struct cache *c, enum cache_kind kind, const uint8_t *key,
    size_t klen)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 old;
	MDB_txn			*txn = NULL;
	MDB_val			 k;
	int			 rc, have, rv = -1;

	if (cache_lkey(c, kind, key, klen, lk, &k) == -1)
		goto out;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	if ((have = cache_txn_meta(c, txn, &k, &old)) == -1 ||
	    (have && cache_txn_due_move(c, txn, &k, &old, NULL) == -1))
		goto out;
	if ((rc = mdb_del(txn, c->meta, &k, NULL)) != 0 && rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "del meta", rc);
		goto out;
	}
	if ((rc = mdb_del(txn, c->body, &k, NULL)) != 0 && rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "del body", rc);
		goto out;
	}
	rc = cache_commit(c, txn);
	txn = NULL;
	if (rc == -1)
		goto out;
	rv = 0;
 out:
	cache_write_abort(c, txn);
	return rv;
}

/*
 * The callback runs inside the walk's read transaction and must not call
 * into the same handle; such calls fail. With kind 0, `after` is the kind
 * byte followed by the key, since keys of different kinds may be equal.
 */
/*
 * LMDB reports its map address only for MDB_FIXEDMAP, so find the mapping
 * of data.mdb in /proc/self/maps (Linux): [*lo, *hi) when it is one line,
 * as LMDB maps the file once. Should it show as more lines, they are
 * released whole here and 0 is returned, as when none is found
 * (elsewhere than Linux).
 */
static int
map_span(const struct cache *c, unsigned long *lo, unsigned long *hi)
{
	char		 path[PATH_MAX], line[PATH_MAX + 128], *p;
	unsigned long	 a, b;
	size_t		 n, nlines = 0;
	FILE		*f;

	if (realpath(c->dir, path) == NULL)
		return 0;
	n = strlen(path);
	if (n + sizeof("/data.mdb") > sizeof(path))
		return 0;
	memcpy(path + n, "/data.mdb", sizeof("/data.mdb"));
	if ((f = fopen("/proc/self/maps", "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((p = strchr(line, '/')) == NULL || strcmp(p, path) != 0 ||
		    sscanf(line, "%lx-%lx", &a, &b) != 2 || b <= a)
			continue;
		if (nlines++ == 0) {
			*lo = a;
			*hi = b;
		} else	/* not one mapping: all of it now */
			(void)madvise((void *)a, b - a, MADV_DONTNEED);
	}
	fclose(f);
	if (nlines > 1)
		(void)madvise((void *)*lo, *hi - *lo, MADV_DONTNEED);
	return nlines == 1;
}

/*
 * The mapping is found at a release's first step, and again when the
 * environment was opened anew since (cache_reset maps the file elsewhere).
 * Steps cover the pages the store has used, as they were at the first.
 */
size_t
cache_release_pages_step(struct cache *c, size_t from, size_t max)
{
	unsigned long	 lo, hi, gen;
	size_t		 len, map, used;

	if (c == NULL)
		return 0;
	gen = c->of != NULL ? c->of->env_gen : c->env_gen;
	if (from == 0 || c->rel_gen != gen || c->rel_hi == 0) {
		c->rel_hi = 0;
		if (!map_span(c, &lo, &hi))
			return 0;
		/* Nothing is mapped past the pages the store has used. */
		if (env_bytes(c->env, &map, &used) == 0 && used < hi - lo)
			hi = lo + used;
		c->rel_lo = lo;
		c->rel_hi = hi;
		c->rel_gen = gen;
		from = 0;
	}
	if (from >= c->rel_hi - c->rel_lo)
		return 0;
	len = c->rel_hi - c->rel_lo - from;
	if (len > max)
		len = max;
	/* A shared file mapping: the data stays in the page cache. */
	(void)madvise((void *)(c->rel_lo + from), len, MADV_DONTNEED);
	from += len;
	return from < c->rel_hi - c->rel_lo ? from : 0;
}

void
cache_release_pages(struct cache *c)
{
	(void)cache_release_pages_step(c, 0, SIZE_MAX);
}

long
cache_walk(struct cache *c, enum cache_kind kind, const uint8_t *after,
    size_t afterlen, size_t max, cache_walk_cb *cb, void *arg)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m;
	MDB_cursor		*cur = NULL;
	MDB_val			 k, v;
	const uint8_t		*kp;
	size_t			 startlen;
	long			 visited = 0, rv = -1;
	int			 rc, op, resume;

	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if ((unsigned)kind >= CACHE_KIND_MAX) {
		cache_seterr(c, "kind %u out of range", (unsigned)kind);
		return -1;
	}
	c->walk_skipped = 0;
	k.mv_data = lk;
	k.mv_size = 0;
	if (kind != 0) {
		lk[k.mv_size++] = kind;
		if (after != NULL && afterlen > CACHE_KEY_MAX_BYTES) {
			cache_seterr(c, "walk: key length %zu over %d",
			    afterlen, CACHE_KEY_MAX_BYTES);
			return -1;
		}
	} else if (after != NULL && afterlen > CACHE_LKEY_BYTES) {
		cache_seterr(c, "walk: key length %zu over %d", afterlen,
		    CACHE_LKEY_BYTES);
		return -1;
	}
	if (after != NULL && afterlen > 0) {
		memcpy(lk + k.mv_size, after, afterlen);
		k.mv_size += afterlen;
	}

	if (cache_read_begin(c, "walk") == -1)
		return -1;
	if ((rc = mdb_cursor_open(c->rtxn, c->meta, &cur)) != 0) {
		cache_setmdberr(c, "walk", rc);
		goto out;
	}
	resume = after != NULL && afterlen > 0;
	startlen = k.mv_size;
	op = startlen == 0 ? MDB_FIRST : MDB_SET_RANGE;
	rc = mdb_cursor_get(cur, &k, &v, op);
	/* Resuming: the named key itself was the previous chunk's last. */
	if (rc == 0 && resume && k.mv_size == startlen &&
	    memcmp(k.mv_data, lk, startlen) == 0)
		rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);

	c->in_walk = 1;
	for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		kp = k.mv_data;
		if (kind != 0 && kp[0] != kind)
			break;		/* past the last key of this kind */
		if (k.mv_size < 2 ||
		    record_meta_decode(v.mv_data, v.mv_size, &m) == -1 ||
		    m.kind != kp[0]) {
			c->walk_skipped++;
			continue;
		}
		visited++;
		if (cb(m.kind, kp + 1, k.mv_size - 1, &m, arg) != 0)
			break;
		if (max != 0 && (size_t)visited >= max)
			break;
	}
	c->in_walk = 0;
	if (rc != 0 && rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "walk", rc);
		goto out;
	}
	rv = visited;
 out:
	mdb_cursor_close(cur);
	cache_read_end(c);
	return rv;
}

size_t
cache_walk_skipped(const struct cache *c)
{
	return c->walk_skipped;
}

/* Index keys the due walk found stale, mended after it. */
struct cache_due_stale {
	size_t	n;
	size_t	len[CACHE_DUE_REPAIR_MAX];
	uint8_t	key[CACHE_DUE_REPAIR_MAX][CACHE_DUE_KEY_BYTES];
};

/*
 * Under the walk's read transaction: 1 and the meta when the index key dk
 * is the one its entry's meta gives, else 0 (stale). lk gets kind || key.
 */
static int
cache_due_entry(struct cache *c, const MDB_val *dk, uint8_t lk[CACHE_LKEY_BYTES],
    struct cache_meta *m)
{
	const uint8_t	*p = dk->mv_data;
	MDB_val		 k, v;

	if (dk->mv_size < 2 + CACHE_DUE_AT_BYTES ||
	    dk->mv_size > CACHE_DUE_KEY_BYTES)
		return 0;
	lk[0] = p[0];
	memcpy(lk + 1, p + 1 + CACHE_DUE_AT_BYTES,
	    dk->mv_size - 1 - CACHE_DUE_AT_BYTES);
	k.mv_data = lk;
	k.mv_size = dk->mv_size - CACHE_DUE_AT_BYTES;
	if (mdb_get(c->rtxn, c->meta, &k, &v) != 0 ||
	    record_meta_decode(v.mv_data, v.mv_size, m) == -1 ||
	    m->kind != p[0] || !cache_due_indexed(m))
		return 0;
	return cache_due_at(p) == (m->next_refresh_at > 0 ?
	    m->next_refresh_at : 0);
}

/*
 * Mend stale index keys: delete each (if still there) and put the key its
 * entry's meta gives now, if the entry is there and indexed. 0, or -1.
 */
static int
cache_due_repair(struct cache *c, const struct cache_due_stale *st)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m;
	MDB_txn			*txn = NULL;
	MDB_val			 dk, k;
	size_t			 i;
	int			 rc, have, rv = -1;

	if (st->n == 0 || c->readonly)
		return 0;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	for (i = 0; i < st->n; i++) {
		dk.mv_data = (void *)st->key[i];
		dk.mv_size = st->len[i];
		if ((rc = mdb_del(txn, c->due, &dk, NULL)) != 0 &&
		    rc != MDB_NOTFOUND) {
			cache_setmdberr(c, "repair due", rc);
			goto out;
		}
		if (dk.mv_size < 2 + CACHE_DUE_AT_BYTES)
			continue;
		lk[0] = st->key[i][0];
		memcpy(lk + 1, st->key[i] + 1 + CACHE_DUE_AT_BYTES,
		    dk.mv_size - 1 - CACHE_DUE_AT_BYTES);
		k.mv_data = lk;
		k.mv_size = dk.mv_size - CACHE_DUE_AT_BYTES;
		if ((have = cache_txn_meta(c, txn, &k, &m)) == -1 ||
		    (have && cache_txn_due_move(c, txn, &k, NULL, &m) == -1))
			goto out;
	}
	rc = cache_commit(c, txn);
	txn = NULL;
	rv = rc;
 out:
	cache_write_abort(c, txn);
	return rv;
}

/* Position a cursor on kind's first index key. */
static int
cache_due_first(struct cache *c, enum cache_kind kind, MDB_cursor **cur,
    MDB_val *k, MDB_val *v)
{
	uint8_t	start = (uint8_t)kind;
	int	rc;

	if ((rc = mdb_cursor_open(c->rtxn, c->due, cur)) != 0)
		return rc;
	k->mv_data = &start;
	k->mv_size = 1;
	return mdb_cursor_get(*cur, k, v, MDB_SET_RANGE);
}

long
cache_due_walk(struct cache *c, enum cache_kind kind, int64_t now, size_t max,
    cache_walk_cb *cb, void *arg)
{
	struct cache_due_stale		 st;	/* about 20 KiB */
	uint8_t				 lk[CACHE_LKEY_BYTES];
	struct cache_meta		 m;
	MDB_cursor			*cur = NULL;
	MDB_val				 k, v;
	long				 visited = 0, rv = -1;
	int				 rc;

	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (kind == 0 || (unsigned)kind >= CACHE_KIND_MAX || !c->have_due) {
		cache_seterr(c, kind == 0 || (unsigned)kind >= CACHE_KIND_MAX ?
		    "due walk: kind out of range" : "due walk: the store has "
		    "no due index (written by an older stapled; open it "
		    "read-write once)");
		return -1;
	}
	st.n = 0;
	c->due_skipped = 0;
	if (cache_read_begin(c, "due walk") == -1)
		return -1;
	rc = cache_due_first(c, kind, &cur, &k, &v);
	c->in_walk = 1;
	for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (((const uint8_t *)k.mv_data)[0] != kind ||
		    (k.mv_size > CACHE_DUE_AT_BYTES &&
		    cache_due_at(k.mv_data) > (now > 0 ? now : 0)))
			break;		/* past this kind, or not due yet */
		if (cache_due_entry(c, &k, lk, &m) != 1) {
			c->due_skipped++;
			if (st.n < CACHE_DUE_REPAIR_MAX &&
			    k.mv_size <= CACHE_DUE_KEY_BYTES) {
				memcpy(st.key[st.n], k.mv_data, k.mv_size);
				st.len[st.n++] = k.mv_size;
			}
			continue;
		}
		visited++;
		if (cb(kind, lk + 1, k.mv_size - 1 - CACHE_DUE_AT_BYTES, &m,
		    arg) != 0 || (max != 0 && (size_t)visited >= max))
			break;
	}
	c->in_walk = 0;
	if (rc != 0 && rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "due walk", rc);
		goto out;
	}
	rv = visited;
 out:
	mdb_cursor_close(cur);
	cache_read_end(c);
	if (rv != -1 && cache_due_repair(c, &st) == -1)
		rv = -1;
	return rv;
}

size_t
cache_due_skipped(const struct cache *c)
{
	return c->due_skipped;
}

long
cache_due_built(const struct cache *c)
{
	return c->due_built;
}

/* One schedule change inside a write transaction: 1 changed, 0 not, -1. */
static int
cache_txn_resched(struct cache *c, MDB_txn *txn, const struct cache_sched *s)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m, old;
	MDB_val			 k;
	int			 have;

	if (cache_lkey(c, s->kind, s->key, s->klen, lk, &k) == -1)
		return -1;
	if ((have = cache_txn_meta(c, txn, &k, &old)) != 1)
		return have;
	if (old.next_refresh_at != s->expect_at)
		return 0;	/* written since the caller read it */
	m = old;
	m.next_refresh_at = s->next_refresh_at;
	m.flags = (uint16_t)((m.flags | s->set_flags) & ~s->clear_flags);
	if (cache_txn_put_meta(c, txn, &k, &old, &m) == -1)
		return -1;
	return 1;
}

long
cache_reschedule(struct cache *c, const struct cache_sched *s, size_t n)
{
	MDB_txn	*txn = NULL;
	size_t	 i;
	long	 changed = 0, rv = -1;
	int	 rc;

	if (n == 0)
		return 0;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	for (i = 0; i < n; i++) {
		if ((rc = cache_txn_resched(c, txn, &s[i])) == -1)
			goto out;
		changed += rc;
	}
	if (changed == 0) {
		rv = 0;
		goto out;
	}
	rc = cache_commit(c, txn);
	txn = NULL;
	if (rc == -1)
		goto out;
	rv = changed;
 out:
	cache_write_abort(c, txn);
	return rv;
}

static int
cache_aux_key(struct cache *c, const char *name, MDB_val *k)
{
	size_t	n;

	if (name == NULL || (n = strlen(name)) == 0 ||
	    n > CACHE_KEY_MAX_BYTES) {
		cache_seterr(c, "aux name length not in 1..%d",
		    CACHE_KEY_MAX_BYTES);
		return -1;
	}
	k->mv_data = (void *)name;
	k->mv_size = n;
	return 0;
}

int
cache_aux_put(struct cache *c, const char *name, const uint8_t *val,
    size_t len)
{
	MDB_txn	*txn = NULL;
	MDB_val	 k, v;
	int	 rc, rv = -1;

	if (cache_aux_key(c, name, &k) == -1)
		goto out;
	if (len > RECORD_MAX_BLOB_BYTES || (val == NULL && len != 0)) {
		cache_seterr(c, "aux %s: %zu bytes, limit %u", name, len,
		    RECORD_MAX_BLOB_BYTES);
		goto out;
	}
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	v.mv_data = (void *)val;
	v.mv_size = len;
	if ((rc = mdb_put(txn, c->aux, &k, &v, 0)) != 0) {
		cache_setmdberr(c, "put aux", rc);
		goto out;
	}
	rc = cache_commit(c, txn);
	txn = NULL;
	if (rc == -1)
		goto out;
	rv = 0;
 out:
	cache_write_abort(c, txn);
	return rv;
}

int
cache_aux_get(struct cache *c, const char *name, uint8_t **val, size_t *len)
{
	MDB_val	 k, v;
	uint8_t	*p;
	int	 rc, rv = -1;

	*val = NULL;
	*len = 0;
	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (cache_aux_key(c, name, &k) == -1)
		return -1;
	if (cache_read_begin(c, "aux") == -1)
		return -1;
	if ((rc = mdb_get(c->rtxn, c->aux, &k, &v)) == MDB_NOTFOUND) {
		rv = 0;
		goto out;
	}
	if (rc != 0) {
		cache_setmdberr(c, "get aux", rc);
		goto out;
	}
	if ((p = malloc(v.mv_size != 0 ? v.mv_size : 1)) == NULL) {
		cache_seterr(c, "aux %s: %s", name, strerror(errno));
		goto out;
	}
	if (v.mv_size != 0)
		memcpy(p, v.mv_data, v.mv_size);
	*val = p;
	*len = v.mv_size;
	rv = 1;
 out:
	cache_read_end(c);
	return rv;
}

long
cache_aux_walk(struct cache *c, const char *prefix, cache_aux_cb *cb,
    void *arg)
{
	char		 name[CACHE_KEY_MAX_BYTES + 1];
	MDB_cursor	*cur = NULL;
	MDB_val		 k, v;
	size_t		 plen = prefix != NULL ? strlen(prefix) : 0;
	long		 visited = 0, rv = -1;
	int		 rc;

	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (plen > CACHE_KEY_MAX_BYTES) {
		cache_seterr(c, "aux walk: prefix longer than %d",
		    CACHE_KEY_MAX_BYTES);
		return -1;
	}
	if (cache_read_begin(c, "aux walk") == -1)
		return -1;
	if ((rc = mdb_cursor_open(c->rtxn, c->aux, &cur)) != 0) {
		cache_setmdberr(c, "aux walk", rc);
		goto out;
	}
	k.mv_data = (void *)prefix;
	k.mv_size = plen;
	rc = mdb_cursor_get(cur, &k, &v, plen == 0 ? MDB_FIRST : MDB_SET_RANGE);
	c->in_walk = 1;
	for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0)
			break;		/* past the names with this prefix */
		if (k.mv_size > CACHE_KEY_MAX_BYTES)
			continue;
		memcpy(name, k.mv_data, k.mv_size);
		name[k.mv_size] = '\0';
		visited++;
		if (cb(name, v.mv_data, v.mv_size, arg) != 0)
			break;
	}
	c->in_walk = 0;
	if (rc != 0 && rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "aux walk", rc);
		goto out;
	}
	rv = visited;
 out:
	mdb_cursor_close(cur);
	cache_read_end(c);
	return rv;
}

/* entries[0] counts meta records that do not decode. */
int
cache_stat(struct cache *c, struct cache_stat *st)
{
	struct cache_room	 room;
	struct cache_meta	 m;
	MDB_stat		 ms;
	MDB_cursor		*cur = NULL;
	MDB_val			 k, v;
	const uint8_t		*kp;
	int			 rc, rv = -1;

	memset(st, 0, sizeof(*st));
	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (cache_read_begin(c, "stat") == -1)
		return -1;
	if ((rc = mdb_cursor_open(c->rtxn, c->meta, &cur)) != 0) {
		cache_setmdberr(c, "stat", rc);
		goto out;
	}
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		kp = k.mv_data;
		if (k.mv_size < 2 ||
		    record_meta_decode(v.mv_data, v.mv_size, &m) == -1 ||
		    m.kind != kp[0])
			st->entries[0]++;
		else
			st->entries[m.kind]++;
	}
	if (rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "stat", rc);
		goto out;
	}
	if (c->have_due && (rc = mdb_stat(c->rtxn, c->due, &ms)) == 0)
		st->due_keys = ms.ms_entries;
	mdb_cursor_close(cur);
	cur = NULL;
	if (cache_room(c, &room) == -1)
		goto out;
	st->map_bytes = room.map_bytes;
	st->used_bytes = room.used_bytes;
	st->free_bytes = room.free_bytes;
	rv = 0;
 out:
	mdb_cursor_close(cur);
	cache_read_end(c);
	return rv;
}

/*
 * A free-list record: keyed by the transaction that freed the pages, a
 * count and then that many page numbers. 0 and the count, or -1.
 */
static int
free_record_count(const MDB_val *v, size_t *count)
{
	if (v->mv_size < sizeof(*count))
		return -1;
	memcpy(count, v->mv_data, sizeof(*count));
	return *count > v->mv_size / sizeof(*count) - 1 ? -1 : 0;
}

int
cache_room(struct cache *c, struct cache_room *room)
{
	MDB_cursor	*cur = NULL;
	MDB_stat	 st;
	MDB_val		 k, v;
	size_t		 count, pages = 0;
	int		 rc, rv = -1;

	memset(room, 0, sizeof(*room));
	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (cache_read_begin(c, "room") == -1)
		return -1;
	if ((rc = env_bytes(c->env, &room->map_bytes, &room->used_bytes)) != 0 ||
	    (rc = mdb_env_stat(c->env, &st)) != 0 ||
	    (rc = mdb_cursor_open(c->rtxn, CACHE_LMDB_FREE_DBI, &cur)) != 0) {
		cache_setmdberr(c, "room", rc);
		goto out;
	}
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (free_record_count(&v, &count) == -1) {
			cache_seterr(c, "room: a free-list record does not parse");
			goto out;
		}
		pages += count;
	}
	if (rc != MDB_NOTFOUND) {
		cache_setmdberr(c, "room", rc);
		goto out;
	}
	room->free_bytes = pages * st.ms_psize;
	rv = 0;
 out:
	mdb_cursor_close(cur);
	cache_read_end(c);
	return rv;
}

/* ---- damage: the cheap checks, the full walk, moving aside -------------- */

/*
 * LMDB's on-disk page header and meta page (lmdb.h documents neither; the
 * layout is that of a native build without MDB_VL32): natural alignment
 * makes these mirrors match the file byte for byte.
 */
struct cache_disk_page {
	size_t		pgno;
	uint16_t	pad;
	uint16_t	flags;
	uint16_t	lower;
	uint16_t	upper;
};
struct cache_disk_db {
	uint32_t	pad;		/* in the free DB's record: the page size */
	uint16_t	flags;
	uint16_t	depth;
	size_t		branch_pages, leaf_pages, overflow_pages, entries;
	size_t		root;
};
struct cache_disk_meta {
	struct cache_disk_page	hdr;
	uint32_t		magic;
	uint32_t		version;
	void			*address;
	size_t			mapsize;
	struct cache_disk_db	dbs[2];	/* free pages, main */
	size_t			last_pg;
	size_t			txnid;
};
#define CACHE_LMDB_MAGIC	0xBEEFC0DEu
#define CACHE_LMDB_VERSION	1
#define CACHE_LMDB_P_BRANCH	0x01
#define CACHE_LMDB_P_LEAF	0x02
#define CACHE_LMDB_P_META	0x08
#define CACHE_LMDB_P_INVALID	(~(size_t)0)
/*
 * The most pages past the file's end a sound store may name: pages a
 * transaction took from the end and freed again before its commit are
 * never written (LMDB's loose pages), so the file may stop short of the
 * last page the meta names. Those pages must be in the free list.
 */
#define CACHE_TAIL_FREE_MAX	65536
#define CACHE_LMDB_MIN_PSIZE	512
#define CACHE_LMDB_MAX_PSIZE	65536
#define CACHE_CHECK_EXIT_DAMAGED 3	/* the walking child's "damaged" exit */

static void	damage_why(char *, size_t, const char *, ...)
		    __attribute__((format(printf, 3, 4)));

static void
damage_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list	ap;

	if (why == NULL || whylen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

static int
cache_data_path(const char *dir, const char *suffix, char *path, size_t len)
{
	int	n = snprintf(path, len, "%s/%s%s", dir, "data.mdb", suffix);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* 1 when the page at `off` reads as an LMDB meta page, 0 when not, -1 on I/O. */
static int
cache_read_meta(int fd, size_t off, struct cache_disk_meta *m)
{
	ssize_t	n = pread(fd, m, sizeof(*m), (off_t)off);

	if (n == -1)
		return -1;
	if ((size_t)n < sizeof(*m))
		return 0;
	return m->magic == CACHE_LMDB_MAGIC &&
	    m->version == CACHE_LMDB_VERSION &&
	    (m->hdr.flags & CACHE_LMDB_P_META) != 0;
}

/* Whether the meta's main-tree root reads as a tree page. 1 yes, 0 no, -1 I/O. */
static int
cache_root_sound(int fd, const struct cache_disk_meta *m, size_t psize)
{
	struct cache_disk_page	p;
	size_t			root = m->dbs[1].root;
	ssize_t			n;

	if (root == CACHE_LMDB_P_INVALID)
		return 1;	/* an empty main tree */
	if (root < 2 || root > m->last_pg)
		return 0;
	if ((n = pread(fd, &p, sizeof(p), (off_t)(root * psize))) == -1)
		return -1;
	return (size_t)n == sizeof(p) && p.pgno == root &&
	    (p.flags & (CACHE_LMDB_P_BRANCH | CACHE_LMDB_P_LEAF)) != 0;
}

/*
 * The checks on an open data.mdb; see cache_check_file. *tail is set to
 * the number of pages the file holds when a meta names pages past them
 * (*tail_last the last), else 0: those must then be free pages.
 */
static int
cache_check_fd(int fd, off_t size, char *why, size_t whylen, size_t *tail,
    size_t *tail_last)
{
	struct cache_disk_meta	m[2];
	size_t			psize, pages, i, cur;
	int			ok[2];

	*tail = *tail_last = 0;

	if (size == 0) {
		damage_why(why, whylen, "data.mdb is empty (zero length)");
		return 1;
	}
	for (i = 0; i < 2; i++) {
		psize = i == 0 ? 0 : m[0].dbs[0].pad;
		if ((ok[i] = cache_read_meta(fd, psize, &m[i])) == -1) {
			damage_why(why, whylen, "data.mdb: %s", strerror(errno));
			return -1;
		}
		if (!ok[i]) {
			damage_why(why, whylen, "meta page %zu is not an LMDB "
			    "meta page", i);
			return 1;
		}
		if (i == 0 && (m[0].dbs[0].pad < CACHE_LMDB_MIN_PSIZE ||
		    m[0].dbs[0].pad > CACHE_LMDB_MAX_PSIZE ||
		    (m[0].dbs[0].pad & (m[0].dbs[0].pad - 1)) != 0)) {
			damage_why(why, whylen, "meta page 0 gives a page size "
			    "of %u bytes", m[0].dbs[0].pad);
			return 1;
		}
	}
	psize = m[0].dbs[0].pad;
	pages = (size_t)size / psize;
	cur = m[1].txnid > m[0].txnid;
	for (i = 0; i < 2; i++) {
		if (m[i].last_pg < pages)
			continue;
		if (m[i].last_pg - pages >= CACHE_TAIL_FREE_MAX) {
			damage_why(why, whylen, "meta page %zu names page %zu "
			    "as the last, but the file holds %zu pages", i,
			    m[i].last_pg, pages);
			return 1;
		}
		*tail = pages;
		if (m[i].last_pg > *tail_last)
			*tail_last = m[i].last_pg;
	}
	switch (cache_root_sound(fd, &m[cur], psize)) {
	case -1:
		damage_why(why, whylen, "data.mdb: %s", strerror(errno));
		return -1;
	case 0:
		damage_why(why, whylen, "the root page %zu is not a tree page",
		    m[cur].dbs[1].root);
		return 1;
	}
	return 0;
}

/* Whether the free list of the newest snapshot holds every page from..last. */
static int
cache_tail_free_walk(const char *dir, size_t from, size_t last)
{
	char		 why[CACHE_DAMAGE_NOTE_BYTES];
	struct cache	*c;
	MDB_txn		*txn = NULL;
	MDB_cursor	*cur = NULL;
	MDB_val		 k, v;
	uint8_t		*seen;
	size_t		 n = last - from + 1, left = n, count, pg, j;
	int		 rc, rv = 0;

	if ((seen = calloc(n, 1)) == NULL ||
	    (c = cache_open(dir, 0, 1, why, sizeof(why))) == NULL) {
		free(seen);
		return 0;
	}
	if (mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn) != 0 ||
	    mdb_cursor_open(txn, CACHE_LMDB_FREE_DBI, &cur) != 0)
		goto out;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && left > 0;
	    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		if (free_record_count(&v, &count) == -1)
			goto out;
		for (j = 1; j <= count; j++) {
			memcpy(&pg, (const uint8_t *)v.mv_data + j * sizeof(pg),
			    sizeof(pg));
			if (pg >= from && pg <= last && !seen[pg - from]) {
				seen[pg - from] = 1;
				left--;
			}
		}
	}
	rv = left == 0;
 out:
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	cache_close(c);
	free(seen);
	return rv;
}

/*
 * fork() for a check that damage may kill (a page past the end reads as
 * SIGBUS, a wild pointer as SIGSEGV): the child leaves no core file for
 * that, and none of the parent's handlers (libevent's, a test runner's)
 * catches its signals.
 */
static pid_t
check_fork(void)
{
	struct rlimit	nocore = { 0, 0 };
	pid_t		pid;

	if ((pid = fork()) == 0) {
		setrlimit(RLIMIT_CORE, &nocore);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGSEGV, SIG_DFL);
	}
	return pid;
}

/* The checking child's end: 0 and *status, or -1 (errno). */
static int
check_wait(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) == -1)
		if (errno != EINTR)
			return -1;
	return 0;
}

/*
 * The same in a child, which a damaged free list may kill: 1 all free,
 * 0 not (or killed), -1 when it could not be asked.
 */
static int
cache_tail_free(const char *dir, size_t from, size_t last)
{
	pid_t	pid;
	int	status;

	if ((pid = check_fork()) == -1)
		return -1;
	if (pid == 0)
		_exit(cache_tail_free_walk(dir, from, last) ? 0 :
		    CACHE_CHECK_EXIT_DAMAGED);
	if (check_wait(pid, &status) == -1)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int
cache_check_file(const char *dir, char *why, size_t whylen)
{
	char		path[PATH_MAX];
	struct stat	st;
	size_t		tail = 0, tail_last = 0;
	int		fd, rv;

	damage_why(why, whylen, "%s", "");
	if (cache_data_path(dir, "", path, sizeof(path)) == -1) {
		damage_why(why, whylen, "%s: path too long", dir);
		return -1;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return 0;
		damage_why(why, whylen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		damage_why(why, whylen, "%s: %s", path, strerror(errno));
		rv = -1;
	} else if (!S_ISREG(st.st_mode)) {
		damage_why(why, whylen, "%s: not a regular file", path);
		rv = -1;
	} else
		rv = cache_check_fd(fd, st.st_size, why, whylen, &tail,
		    &tail_last);
	close(fd);
	if (rv != 0 || tail == 0)
		return rv;
	switch (cache_tail_free(dir, tail, tail_last)) {
	case -1:
		damage_why(why, whylen, "checking the pages past the end: %s",
		    strerror(errno));
		return -1;
	case 0:
		damage_why(why, whylen, "a meta names page %zu as the last, but "
		    "the file holds %zu pages, and not every page past its end "
		    "is free", tail_last, tail);
		return 1;
	}
	return 0;
}

/* Read every byte of every record of one database. 0, or an LMDB error. */
static int
cache_walk_dbi(MDB_txn *txn, MDB_dbi dbi, unsigned long *sum)
{
	MDB_cursor	*cur;
	MDB_val		 k, v;
	size_t		 i;
	int		 rc;

	if ((rc = mdb_cursor_open(txn, dbi, &cur)) != 0)
		return rc;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		for (i = 0; i < k.mv_size; i++)
			*sum += ((const uint8_t *)k.mv_data)[i];
		for (i = 0; i < v.mv_size; i++)
			*sum += ((const uint8_t *)v.mv_data)[i];
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

int
cache_check_walk(const char *dir, char *why, size_t whylen)
{
	/* "due" is absent from a store an older stapled wrote. */
	static const char *const	 names[] = { "meta", "body", "aux", "due" };
	volatile unsigned long		 sum = 0;
	unsigned long			 s = 0;
	struct cache			*c;
	MDB_txn				*txn = NULL;
	MDB_dbi				 dbi;
	size_t				 i;
	int				 rc, rv = -1;
	char				 path[PATH_MAX];
	struct stat			 st;

	/* No store yet (a first import): nothing to walk. */
	if (cache_data_path(dir, "", path, sizeof(path)) == 0 &&
	    stat(path, &st) == -1 && errno == ENOENT)
		return 0;
	if ((c = cache_open(dir, 0, 1, why, whylen)) == NULL)
		return -1;
	if ((rc = mdb_txn_begin(c->env, NULL, MDB_RDONLY, &txn)) != 0 ||
	    (rc = cache_walk_dbi(txn, CACHE_LMDB_MAIN_DBI, &s)) != 0)
		goto lmdb;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		rc = mdb_dbi_open(txn, names[i], 0, &dbi);
		if (rc == MDB_NOTFOUND && strcmp(names[i], "due") == 0)
			continue;
		if (rc != 0 || (rc = cache_walk_dbi(txn, dbi, &s)) != 0)
			goto lmdb;
	}
	sum = s;
	rv = 0;
	goto out;
 lmdb:
	damage_why(why, whylen, "walking the store: %s", mdb_strerror(rc));
 out:
	mdb_txn_abort(txn);
	cache_close(c);
	(void)sum;
	return rv;
}

pid_t
cache_check_spawn(const char *dir, int *fd)
{
	char	why[CACHE_DAMAGE_NOTE_BYTES];
	int	p[2];
	pid_t	pid;
	size_t	n;

	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	if ((pid = check_fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		if (cache_check_walk(dir, why, sizeof(why)) == 0)
			_exit(0);
		n = strlen(why);
		if (write(p[1], why, n) != (ssize_t)n)
			_exit(CACHE_CHECK_EXIT_DAMAGED);
		_exit(CACHE_CHECK_EXIT_DAMAGED);
	}
	close(p[1]);
	*fd = p[0];
	return pid;
}

int
cache_check_result(int wstatus, int fd, char *why, size_t whylen)
{
	char	msg[CACHE_DAMAGE_NOTE_BYTES];
	ssize_t	n = -1;

	if (fd != -1) {
		n = read(fd, msg, sizeof(msg) - 1);
		close(fd);
	}
	msg[n > 0 ? n : 0] = '\0';
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
		return 0;
	if (WIFSIGNALED(wstatus))
		damage_why(why, whylen, "the check walk was killed by signal "
		    "%d (%s)", WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
	else
		damage_why(why, whylen, "the check walk failed: %s",
		    msg[0] ? msg : "no reason given");
	return 1;
}

int
cache_check_forked(const char *dir, char *why, size_t whylen)
{
	int	fd, status;
	pid_t	pid;

	if ((pid = cache_check_spawn(dir, &fd)) == -1) {
		damage_why(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	if (check_wait(pid, &status) == -1) {
		damage_why(why, whylen, "waitpid: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return cache_check_result(status, fd, why, whylen);
}

/*
 * The lock file's transaction ids belong to the moved file, so the new
 * store needs a new one. Every process with the environment open holds a
 * read lock on its first byte (LMDB's own test of whether it is alone):
 * when a write lock can be had, nobody does and the file is removed;
 * else it is renamed beside the moved file, ASIDE.lock, so a staplectl
 * holding it keeps the pair it opened, and finds at its next write that
 * neither is the store's any more. 0, or -1 (errno).
 */
static int
cache_lock_file_drop(const char *lock, const char *aside)
{
	struct flock	fl;
	char		to[PATH_MAX];
	int		fd, rv;

	if ((fd = open(lock, O_RDWR | O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : -1;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_len = 1;
	/* An open-file-description lock: closing it leaves others' alone. */
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		rv = unlink(lock);
	else if (snprintf(to, sizeof(to), "%s.lock", aside) >= (int)sizeof(to)) {
		errno = ENAMETOOLONG;
		rv = -1;
	} else
		rv = rename(lock, to);
	close(fd);
	return rv == -1 && errno == ENOENT ? 0 : rv;
}

int
cache_move_aside(const char *dir, char *aside, size_t asidelen)
{
	char		from[PATH_MAX], suffix[64], lock[PATH_MAX];
	struct tm	tm;
	time_t		now = time(NULL);

	gmtime_r(&now, &tm);
	strftime(suffix, sizeof(suffix), ".damaged-%Y%m%dT%H%M%SZ", &tm);
	if (cache_data_path(dir, "", from, sizeof(from)) == -1 ||
	    cache_data_path(dir, suffix, aside, asidelen) == -1 ||
	    snprintf(lock, sizeof(lock), "%s/lock.mdb", dir) >=
	    (int)sizeof(lock)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (rename(from, aside) == -1)
		return -1;
	return cache_lock_file_drop(lock, aside);
}

/* End the handle's and its twins' read transactions; close the environment. */
static void
cache_env_drop(struct cache *c)
{
	struct cache	*t;

	mdb_txn_abort(c->rtxn);
	c->rtxn = NULL;
	c->rtxn_live = 0;
	/*
	 * A twin's read transaction belongs to this environment and must end
	 * before it closes (no call on a twin is in progress, as cache_reset
	 * requires); its next cache_twin_follow takes up the new one.
	 */
	for (t = c->twins; t != NULL; t = t->twin_next) {
		mdb_txn_abort(t->rtxn);
		t->rtxn = NULL;
		t->rtxn_live = 0;
		t->env = NULL;
	}
	if (c->env != NULL) {
		cache_fault_map(NULL, 0, 0, 0);
		mdb_env_close(c->env);
	}
	c->env = NULL;
}

int
cache_reset(struct cache *c, const char *note, char *aside, size_t asidelen)
{
	if (c->of != NULL) {
		cache_seterr(c, "a twin cannot reset its original's store");
		return -1;
	}
	cache_env_drop(c);
	if (cache_move_aside(c->dir, aside, asidelen) == -1) {
		cache_seterr(c, "moving data.mdb aside: %s", strerror(errno));
		return -1;
	}
	cache_note_damage(c, note);
	/* The damage found was the old file's. */
	c->damaged_why[0] = '\0';
	atomic_store_explicit(&c->damaged, 0, memory_order_release);
	return cache_env_open(c);
}

int
cache_damage_found(struct cache *c, char *why, size_t whylen)
{
	struct cache	*o = cache_origin(c);

	if (atomic_load_explicit(&o->damaged, memory_order_acquire) != 2)
		return 0;
	snprintf(why, whylen, "%s", o->damaged_why);
	return 1;
}

int
cache_damage_fd(struct cache *c)
{
	if (c->of != NULL) {
		errno = EINVAL;
		return -1;
	}
	if (c->damage_efd == -1)
		c->damage_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return c->damage_efd;
}

/* The first pid other than ours among the reader slots, into *arg. */
static int
cache_other_reader(const char *msg, void *arg)
{
	long	*other = arg, pid;

	if (*other == 0 && sscanf(msg, "%ld", &pid) == 1 && pid > 0 &&
	    pid != (long)getpid())
		*other = pid;
	return 0;
}

/*
 * A process other than this one with this environment's lock file open:
 * a live one's reader slot (dead ones cleared first), or LMDB's record
 * locks on the file (/proc/locks, by inode; a match on another file
 * system only postpones a reopen). Its pid, or 0.
 */
static long
cache_lock_other(struct cache *c)
{
	char		line[256], type[16];
	unsigned long	ino;
	long		other = 0, pid;
	FILE		*f;
	int		dead;

	(void)mdb_reader_check(c->env, &dead);
	(void)mdb_reader_list(c->env, cache_other_reader, &other);
	if (other != 0 || (f = fopen("/proc/locks", "re")) == NULL)
		return other;
	while (other == 0 && fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, "->") == NULL && sscanf(line,
		    "%*d: %15s %*s %*s %ld %*x:%*x:%lu", type, &pid, &ino) == 3 &&
		    strcmp(type, "POSIX") == 0 && ino == (unsigned long)c->lock_ino &&
		    pid > 0 && pid != (long)getpid())
			other = pid;
	fclose(f);
	return other;
}

int
cache_reopen(struct cache *c)
{
	long	other;

	if (c->of != NULL || c->env == NULL || c->readonly) {
		cache_seterr(c, "only an original, read-write handle reopens");
		return 1;
	}
	/* A data.mdb moved away is not followed: whatever is there now is not ours. */
	if (cache_check_data_id(c) == -1)
		return 1;
	if ((other = cache_lock_other(c)) != 0) {
		cache_seterr(c, "lock.mdb was removed or replaced, and pid %ld "
		    "still has the old one open: reopening waits for it", other);
		c->cause = CACHE_CAUSE_LOCK;
		return 1;
	}
	cache_env_drop(c);
	return cache_env_open(c);
}

void
cache_note_damage(struct cache *c, const char *note)
{
	snprintf(c->damage, sizeof(c->damage), "%s", note);
}

const char *
cache_damage(const struct cache *c)
{
	return c->damage[0] != '\0' ? c->damage : NULL;
}

int
cache_map_full(const struct cache *c)
{
	return c->map_full;
}

const char *const cache_cause_str[CACHE_CAUSE_MAX] = {
	[CACHE_CAUSE_NONE] = "none",
	[CACHE_CAUSE_MAP_FULL] = "map full",
	[CACHE_CAUSE_NO_SPACE] = "no space left on device",
	[CACHE_CAUSE_IO] = "I/O error",
	[CACHE_CAUSE_LOCK] = "lock file not shared or busy",
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
	    cause == CACHE_CAUSE_IO || cause == CACHE_CAUSE_LOCK;
}

/*
 * DIR/stapled.lock gets the pid, for staplectl and for a second daemon's
 * message; /proc/locks names the holder too, so a file that cannot be
 * written (a full disk) costs only a warning in err.
 */
static void
cache_lock_pid_file(const char *dir, char *err, size_t errlen)
{
	struct stat	st;
	char		path[PATH_MAX], pid[32];
	int		fd, n;

	if (snprintf(path, sizeof(path), "%s/stapled.lock", dir) >=
	    (int)sizeof(path))
		return;
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, CACHE_FILE_MODE))
	    == -1) {
		snprintf(err, errlen, "%s: %s: the pid is not recorded", path,
		    strerror(errno));
		return;
	}
	/*
	 * Overwrite in place and cut only a longer leftover: truncating to
	 * zero first frees the block and allocates another, metadata work
	 * that waits behind a busy journal on the way to READY=1.
	 */
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (pwrite(fd, pid, n, 0) != n || fstat(fd, &st) == -1 ||
	    (st.st_size > n && ftruncate(fd, n) == -1))
		snprintf(err, errlen, "%s: %s: the pid is not recorded", path,
		    errno != 0 ? strerror(errno) : "short write");
	close(fd);
}

int
cache_lock_dir(const char *dir, char *err, size_t errlen)
{
	pid_t	pid;
	int	fd;

	err[0] = '\0';
	/* The directory itself: no file to remove from under the lock. */
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "cache_dir %s: %s", dir, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno != EWOULDBLOCK) {
			snprintf(err, errlen, "cache_dir %s: flock: %s", dir,
			    strerror(errno));
			close(fd);
			return -1;
		}
		close(fd);
		if ((pid = cache_lock_holder(dir)) > 0)
			snprintf(err, errlen, "cache_dir %s is in use by "
			    "another stapled (pid %ld): one daemon per cache "
			    "directory", dir, (long)pid);
		else
			snprintf(err, errlen, "cache_dir %s is in use by "
			    "another stapled (pid unknown): one daemon per "
			    "cache directory", dir);
		return -1;
	}
	cache_lock_pid_file(dir, err, errlen);
	return fd;
}

const char *
cache_lib_version(void)
{
	static char	v[32];
	int		major, minor, patch;

	(void)mdb_version(&major, &minor, &patch);
	snprintf(v, sizeof(v), "%d.%d.%d", major, minor, patch);
	return v;
}
