/* SPDX-License-Identifier: Apache-2.0 */
/* The LMDB store: the environment, its twins, reads and writes of entries. */
#include "config.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/fault.h"
#include "cache/store.h"
#include "cache/store_int.h"

void
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
int
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

struct cache *
cache_origin(struct cache *c)
{
	return c->of != NULL ? c->of : c;
}

void
cache_set_kind_name(struct cache *c, cache_kind_name_fn *name)
{
	cache_origin(c)->kind_name = name;
}

const char *
cache_kind_label(struct cache *c, unsigned kind,
    char buf[CACHE_KIND_LABEL_BYTES])
{
	cache_kind_name_fn	*name = cache_origin(c)->kind_name;
	const char		*s;

	if (name != NULL && kind <= CACHE_KIND_SLOTS &&
	    (s = name((int)kind)) != NULL)
		return s;
	if (kind == 0)
		return "unknown";
	snprintf(buf, CACHE_KIND_LABEL_BYTES, "kind %u", kind);
	return buf;
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

/* LMDB's error, or for a full map how full and what to change. */
void
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
int
cache_lkey(struct cache *c, unsigned kind, const uint8_t *key, size_t klen,
    uint8_t buf[CACHE_LKEY_BYTES], MDB_val *k)
{
	if (kind == 0 || kind > CACHE_KIND_SLOTS) {
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
void
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

/*
 * Begin a transaction with `flags` in *txn, or renew *txn when it is not
 * NULL (a read transaction that was reset). A map another process grew
 * (MDB_MAP_RESIZED) is adopted and the begin tried once more. 0, or -1
 * with c->err naming `op`; *txn is then as it was.
 */
static int
cache_txn_begin(struct cache *c, unsigned flags, MDB_txn **txn,
    const char *op)
{
	int	rc, tries;

	for (tries = 0; tries < 2; tries++) {
		if (*txn == NULL)
			rc = mdb_txn_begin(c->env, NULL, flags, txn);
		else
			rc = mdb_txn_renew(*txn);
		if (rc == 0)
			return 0;
		if (rc != MDB_MAP_RESIZED)
			break;
		if (cache_adopt_mapsize(c, op) == -1)
			return -1;
	}
	cache_setmdberr(c, op, rc);
	return -1;
}

/* A read transaction for `op` ("lookup", "walk", ...), named for a fault's marker. */
int
cache_read_begin(struct cache *c, const char *op)
{
	cache_read_end(c);
	c->txn_rc = 0;
	if (cache_refuse_damaged(c))
		return -1;
	cache_fault_doing(op);
	if (cache_txn_begin(c, MDB_RDONLY, &c->rtxn, "read") == -1)
		return -1;
	c->rtxn_live = 1;
	return 0;
}

int
cache_write_begin(struct cache *c, MDB_txn **txn)
{
	int	dead;

	*txn = NULL;
	c->map_full = 0;
	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	cache_read_end(c);
	if (c->readonly) {
		if (cache_origin(c)->ro_errno != 0)
			cache_set_read_only(c);
		else
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
	 * process that holds one (docs/store.md, "Durability and sharing").
	 */
	(void)mdb_reader_check(c->env, &dead);
	return cache_txn_begin(c, 0, txn, "write");
}

/*
 * LMDB frees a transaction whatever its commit returns: *txn is NULL
 * after it. A store moved aside while the transaction ran took the commit
 * with it: said, as a failure.
 */
int
cache_write_commit(struct cache *c, MDB_txn **txn)
{
	MDB_txn	*t = *txn;
	int	 rc;

	*txn = NULL;
	if ((rc = mdb_txn_commit(t)) != 0) {
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

int
cache_write_end(struct cache *c, MDB_txn **txn, size_t changed)
{
	MDB_txn	*t = *txn;

	if (changed > 0)
		return cache_write_commit(c, txn);
	*txn = NULL;
	cache_write_abort(c, t);
	return 0;
}

/* End a write transaction that failed (txn NULL: commit freed it). */
void
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
	MDB_txn	*txn = NULL;
	int	 rc;

	if (cache_txn_begin(c, MDB_RDONLY, &txn, "open") == -1)
		return -1;
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
	if (cache_txn_begin(c, c->readonly ? MDB_RDONLY : 0, &txn, "open") == -1)
		goto out;
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
int
cache_env_open(struct cache *c)
{
	MDB_envinfo	 info;
	long long	 freeb;
	int		 rc, dead;

	c->env_gen++;
	c->open_rc = 0;
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
	rc = cache_env_open_ids(c, MDB_NOTLS | MDB_NORDAHEAD |
	    (c->readonly ? MDB_RDONLY : 0) | (c->nolock ? MDB_NOLOCK : 0));
	if (rc != 0) {
		c->open_rc = rc;
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
	/*
	 * A writer holds a reader slot for the handle's life (the reusable
	 * read transaction, reset): other processes find it there and know
	 * they share its lock file (cache_check_peer). So does a handle that
	 * fell back to reading (cache_open_or_read) with a lock file: a
	 * staplectl that may write data.mdb writes beside it.
	 */
	if (c->readonly && (c->ro_errno == 0 || c->nolock))
		return 0;
	if (cache_read_begin(c, "reader slot") == 0)
		cache_read_end(c);
	if (c->readonly)
		return 0;
	/* A full disk: serve what is stored, write once there is room. */
	if ((freeb = cache_free_bytes(c)) >= 0 && freeb < CACHE_SPACE_MIN_BYTES)
		__atomic_store_n(&c->no_space, 1, __ATOMIC_RELAXED);
	/* A new environment (cache_reopen) keeps the handle's sync choice. */
	if (c->lazy_meta &&
	    (rc = mdb_env_set_flags(c->env, MDB_NOMETASYNC, 1)) != 0)
		c->lazy_meta = 0;
	return 0;
}

/* cache_open, and cache_open_or_read when or_read. */
static struct cache *
cache_open_env(const char *dir, size_t map_bytes, int readonly, int or_read,
    char *err, size_t errlen)
{
	struct cache	*c = NULL, *rv = NULL;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (map_bytes == 0)
		map_bytes = CACHE_DEFAULT_MAP_BYTES;
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		if (err != NULL)
			snprintf(err, errlen, "cache: %s: %s", dir,
			    strerror(ENOMEM));
		goto out;
	}
	cache_damaged_init(c);
	if ((c->dir = strdup(dir)) == NULL) {
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
	if ((or_read ? cache_env_open_or_read(c) : cache_env_open(c)) == -1)
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

struct cache *
cache_open(const char *dir, size_t map_bytes, int readonly, char *err,
    size_t errlen)
{
	return cache_open_env(dir, map_bytes, readonly, 0, err, errlen);
}

struct cache *
cache_open_or_read(const char *dir, size_t map_bytes, char *err, size_t errlen)
{
	return cache_open_env(dir, map_bytes, 0, 1, err, errlen);
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
	if (c->env != NULL && c->lazy_meta && !c->readonly)
		(void)mdb_env_sync(c->env, 1);
	if (c->env != NULL) {
		cache_fault_map(NULL, 0, 0, 0);
		mdb_env_close(c->env);
	}
	if (c->damage_efd != -1)
		close(c->damage_efd);
	cache_damaged_fini(c);
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
	c->ro_errno = of->ro_errno;
	c->nolock = of->nolock;
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

	if (c == NULL || c->env == NULL || c->of != NULL ||
	    (c->readonly && c->ro_errno == 0))
		return -1;
	/* Fallen back to reading: kept for when it writes (cache_env_open). */
	if (c->readonly) {
		c->lazy_meta = on != 0;
		return 0;
	}
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
	/* Its records fail their check: noted, and absent to the caller. */
	if (cache_meta_read(c, CACHE_FOUND_LOOKUP, &k, &v, &m) == -1)
		return 0;
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
		if (cache_body_read(c, CACHE_FOUND_LOOKUP, &k, &v,
		    body) == -1)
			return 0;
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
cache_get(struct cache *c, unsigned kind, const uint8_t *key,
    size_t klen, struct cache_meta *meta, struct cache_body *body)
{
	return cache_lookup(c, kind, key, klen, meta, body);
}

int
cache_get_meta(struct cache *c, unsigned kind, const uint8_t *key,
    size_t klen, struct cache_meta *meta)
{
	return cache_lookup(c, kind, key, klen, meta, NULL);
}

/* Inside a write transaction: 1 and the stored meta, 0 absent, -1 error. */
int
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
	/* A record that fails its check: noted, treated as absent, replaced. */
	if (cache_meta_read(c, CACHE_FOUND_WRITE, k, &v, m) == -1)
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
int
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
 * In txn: 1 when the entry's body passes its check, 0 when it is missing
 * or fails it (noted as damage found by a write), -1 on LMDB's error.
 */
static int
cache_txn_body_sound(struct cache *c, MDB_txn *txn, MDB_val *k)
{
	struct cache_body	b;
	MDB_val			v;
	int			rc;

	if ((rc = mdb_get(txn, c->body, k, &v)) == MDB_NOTFOUND)
		return 0;
	if (rc != 0) {
		cache_setmdberr(c, "get body", rc);
		return -1;
	}
	return cache_body_read(c, CACHE_FOUND_WRITE, k, &v, &b) == 0;
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
	char			 kl[CACHE_KIND_LABEL_BYTES];
	int			 rc, have, sound, rv = -1;

	if (cache_lkey(c, meta->kind, key, klen, lk, &k) == -1)
		goto out;
	if (record_body_encode(body, &enc, &enclen) == -1) {
		cache_seterr(c, "%s entry: body too large (request %zu, "
		    "response %zu bytes, limit %u)",
		    cache_kind_label(c, meta->kind, kl),
		    body->request_len, body->response_len,
		    RECORD_MAX_BLOB_BYTES);
		goto out;
	}
	if ((have = cache_txn_meta(c, txn, &k, &old)) == -1)
		goto out;
	/* A newer entry is kept, unless its body is damaged. */
	if (have && old.this_update > meta->this_update &&
	    (sound = cache_txn_body_sound(c, txn, &k)) != 0) {
		if (sound == 1)
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
	rv = cache_write_end(c, &txn, stored);
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
	char			 kl[CACHE_KIND_LABEL_BYTES];
	int			 have, rv = -1;

	if (cache_lkey(c, meta->kind, key, klen, lk, &k) == -1)
		goto out;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	if ((have = cache_txn_meta(c, txn, &k, &old)) == -1)
		goto out;
	if (!have) {
		cache_seterr(c, "%s entry: not found",
		    cache_kind_label(c, meta->kind, kl));
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
	rv = cache_write_commit(c, &txn);
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
	int			 have, rv = -1;

	if (n == 0)
		return 0;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	for (i = 0; i < n; i++) {
		/* A bad or missing key skips that entry, not the batch. */
		if (t[i].kind == 0 || t[i].kind > CACHE_KIND_SLOTS ||
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
	rv = cache_write_commit(c, &txn);
 out:
	cache_write_abort(c, txn);
	return rv;
}

int
cache_txn_del(struct cache *c, MDB_txn *txn, const MDB_val *k,
    const struct cache_meta *old, const char *op)
{
	MDB_val	 key = *k;
	char	 what[64];
	int	 rc;

	if (old != NULL && cache_txn_due_move(c, txn, k, old, NULL) == -1)
		return -1;
	if ((rc = mdb_del(txn, c->meta, &key, NULL)) != 0 &&
	    rc != MDB_NOTFOUND) {
		snprintf(what, sizeof(what), "%s meta", op);
		cache_setmdberr(c, what, rc);
		return -1;
	}
	if ((rc = mdb_del(txn, c->body, &key, NULL)) != 0 &&
	    rc != MDB_NOTFOUND) {
		snprintf(what, sizeof(what), "%s body", op);
		cache_setmdberr(c, what, rc);
		return -1;
	}
	return 0;
}

/* Deleting an absent entry is not an error. */
static int
cache_del_once(struct cache *c, unsigned kind, const uint8_t *key,
    size_t klen)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 old;
	MDB_txn			*txn = NULL;
	MDB_val			 k;
	int			 have, rv = -1;

	if (cache_lkey(c, kind, key, klen, lk, &k) == -1)
		goto out;
	if (cache_write_begin(c, &txn) == -1)
		goto out;
	if ((have = cache_txn_meta(c, txn, &k, &old)) == -1 ||
	    cache_txn_del(c, txn, &k, have ? &old : NULL, "del") == -1)
		goto out;
	rv = cache_write_commit(c, &txn);
 out:
	cache_write_abort(c, txn);
	return rv;
}

/*
 * A delete copies a path in three trees (meta, body, due): some ten
 * pages, which in a full map only the free list has, and LMDB gives a
 * write transaction only the pages freed two commits before it (the last
 * commit's are kept for the readers of the snapshot before it). A delete
 * the full map refuses is therefore tried once more after a commit that
 * rewrites only a small aux record (CACHE_AUX_TURN, a few pages): it
 * brings the pages the last commit freed within reach. Without that, a
 * full map could refuse every delete while the pages to make room were
 * on the free list all along.
 */
int
cache_del(struct cache *c, unsigned kind, const uint8_t *key,
    size_t klen)
{
	char	err[sizeof(c->err)];
	int64_t	now = (int64_t)time(NULL);

	if (cache_del_once(c, kind, key, klen) == 0)
		return 0;
	if (!c->map_full)
		return -1;
	memcpy(err, c->err, sizeof(err));
	if (cache_aux_put(c, CACHE_AUX_TURN, (const uint8_t *)&now,
	    sizeof(now)) == 0 && cache_del_once(c, kind, key, klen) == 0)
		return 0;
	memcpy(c->err, err, sizeof(err));
	c->map_full = 1;
	c->cause = CACHE_CAUSE_MAP_FULL;
	return -1;
}

/*
 * The callback runs inside the walk's read transaction and must not call
 * into the same handle; such calls fail. With kind 0, `after` is the kind
 * byte followed by the key, since keys of different kinds may be equal.
 */
long
cache_walk(struct cache *c, unsigned kind, const uint8_t *after,
    size_t afterlen, size_t max, cache_walk_cb *cb, void *arg)
{
	uint8_t			 lk[CACHE_LKEY_BYTES];
	struct cache_meta	 m;
	MDB_cursor		*cur = NULL;
	MDB_val			 k, v;
	const uint8_t		*kp;
	size_t			 startlen;
	long			 visited = 0;
	int			 rc, op, resume;

	if (c->in_walk) {
		cache_seterr(c, "called from a walk callback");
		return -1;
	}
	if (kind > CACHE_KIND_SLOTS) {
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
	if ((rc = mdb_cursor_open(c->rtxn, c->meta, &cur)) != 0)
		return cache_walk_end(c, NULL, rc, 0, "walk");
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
		    cache_meta_read(c, CACHE_FOUND_WALK, &k, &v, &m) == -1) {
			c->walk_skipped++;
			continue;
		}
		visited++;
		if (cb(m.kind, kp + 1, k.mv_size - 1, &m, arg) != 0)
			break;
		if (max != 0 && (size_t)visited >= max)
			break;
	}
	return cache_walk_end(c, cur, rc, visited, "walk");
}

long
cache_walk_end(struct cache *c, MDB_cursor *cur, int rc, long visited,
    const char *op)
{
	long	rv = visited;

	c->in_walk = 0;
	if (rc != 0 && rc != MDB_NOTFOUND) {
		cache_setmdberr(c, op, rc);
		rv = -1;
	}
	mdb_cursor_close(cur);
	cache_read_end(c);
	return rv;
}

size_t
cache_walk_skipped(const struct cache *c)
{
	return c->walk_skipped;
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

size_t
cache_map_bytes(struct cache *c)
{
	size_t	map, used;

	return env_bytes(c->env, &map, &used) == 0 ? map : 0;
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
