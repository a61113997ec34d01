/* SPDX-License-Identifier: Apache-2.0 */
/* The store's file checks: cheap checks, the check walk, move aside, reset. */
#include "config.h"

#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/fault.h"
#include "cache/lmdb_disk.h"
#include "cache/store.h"
#include "cache/store_int.h"

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
#define CACHE_LMDB_P_INVALID	(~(size_t)0)
/*
 * The most pages past the file's end a sound store may name: pages a
 * transaction took from the end and freed again before its commit are
 * never written (LMDB's loose pages), so the file may stop short of the
 * last page the meta names. Those pages must be in the free list.
 */
#define CACHE_TAIL_FREE_MAX	65536
#define CACHE_CHECK_EXIT_DAMAGED 3	/* the walking child's "damaged" exit */

/* A note for a caller's why buffer, which may be NULL or empty. */
void
cache_why(char *why, size_t whylen, const char *fmt, ...)
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
	return m->magic == LMDB_DISK_MAGIC &&
	    m->version == LMDB_DISK_VERSION &&
	    (m->hdr.flags & LMDB_DISK_P_META) != 0;
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
	    (p.flags & (LMDB_DISK_P_BRANCH | LMDB_DISK_P_LEAF)) != 0;
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
		cache_why(why, whylen, "data.mdb is empty (zero length)");
		return 1;
	}
	for (i = 0; i < 2; i++) {
		psize = i == 0 ? 0 : m[0].dbs[0].pad;
		if ((ok[i] = cache_read_meta(fd, psize, &m[i])) == -1) {
			cache_why(why, whylen, "data.mdb: %s", strerror(errno));
			return -1;
		}
		if (!ok[i]) {
			cache_why(why, whylen, "meta page %zu is not an LMDB "
			    "meta page", i);
			return 1;
		}
		if (i == 0 && (m[0].dbs[0].pad < LMDB_DISK_MIN_PSIZE ||
		    m[0].dbs[0].pad > LMDB_DISK_MAX_PSIZE ||
		    (m[0].dbs[0].pad & (m[0].dbs[0].pad - 1)) != 0)) {
			cache_why(why, whylen, "meta page 0 gives a page size "
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
			cache_why(why, whylen, "meta page %zu names page %zu "
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
		cache_why(why, whylen, "data.mdb: %s", strerror(errno));
		return -1;
	case 0:
		cache_why(why, whylen, "the root page %zu is not a tree page",
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

	cache_why(why, whylen, "%s", "");
	if (cache_data_path(dir, "", path, sizeof(path)) == -1) {
		cache_why(why, whylen, "%s: path too long", dir);
		return -1;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return 0;
		cache_why(why, whylen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		cache_why(why, whylen, "%s: %s", path, strerror(errno));
		rv = -1;
	} else if (!S_ISREG(st.st_mode)) {
		cache_why(why, whylen, "%s: not a regular file", path);
		rv = -1;
	} else
		rv = cache_check_fd(fd, st.st_size, why, whylen, &tail,
		    &tail_last);
	close(fd);
	if (rv != 0 || tail == 0)
		return rv;
	switch (cache_tail_free(dir, tail, tail_last)) {
	case -1:
		cache_why(why, whylen, "checking the pages past the end: %s",
		    strerror(errno));
		return -1;
	case 0:
		cache_why(why, whylen, "a meta names page %zu as the last, but "
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
	cache_why(why, whylen, "walking the store: %s", mdb_strerror(rc));
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
		cache_why(why, whylen, "the check walk was killed by signal "
		    "%d (%s)", WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
	else
		cache_why(why, whylen, "the check walk failed: %s",
		    msg[0] ? msg : "no reason given");
	return 1;
}

int
cache_check_forked(const char *dir, char *why, size_t whylen)
{
	int	fd, status;
	pid_t	pid;

	if ((pid = cache_check_spawn(dir, &fd)) == -1) {
		cache_why(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	if (check_wait(pid, &status) == -1) {
		cache_why(why, whylen, "waitpid: %s", strerror(errno));
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
void
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
	/* The damage found was the old file's, its records' too. */
	cache_damaged_forget_all(c);
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
