/* SPDX-License-Identifier: Apache-2.0 */
/* The store's locks: lock files, their peers, the directory lock, a reopen. */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/daemon.h"
#include "cache/store.h"
#include "cache/store_int.h"

/* dev and inode of DIR/name. 0, or -1 (errno). */
int
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
int
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

int
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
int
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

	if (c->of != NULL || c->env == NULL ||
	    (c->readonly && c->ro_errno == 0)) {
		cache_seterr(c, "only an original, read-write handle reopens");
		return 1;
	}
	/* Fallen back to reading: for writing, once the store can be written. */
	if (c->readonly)
		return cache_reopen_writable(c);
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
