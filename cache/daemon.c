/* SPDX-License-Identifier: Apache-2.0 */
/* stapled.reload (the daemon's reload verdicts, one small text file) and the probe of the cache directory's holder (stapled.lock names it). */
#include "config.h"

#include <sys/file.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/daemon.h"

#define RELOAD_FILE_MODE	0640	/* the group (staplectl under the unit's group) reads it */
#define RELOAD_MAX_BYTES	1024	/* the whole file */
#define LOCK_FILE		"stapled.lock"

static int
path_in(char *buf, size_t len, const char *dir, const char *name)
{
	if (snprintf(buf, len, "%s/%s", dir, name) >= (int)len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int
cache_reload_put(const char *dir, const struct cache_reload *r)
{
	char	path[PATH_MAX], tmp[PATH_MAX], text[RELOAD_MAX_BYTES], *p;
	int	fd = -1, n, rv = -1;

	if (path_in(path, sizeof(path), dir, CACHE_RELOAD_FILE) == -1 ||
	    path_in(tmp, sizeof(tmp), dir, CACHE_RELOAD_FILE ".tmp") == -1)
		return -1;
	n = snprintf(text, sizeof(text), "pid %ld\ngeneration %lu\nresult %s\n"
	    "at %" PRId64 "\nmessage %s\n", (long)r->pid, r->generation,
	    r->ok ? "ok" : "refused", r->at, r->message);
	if (n < 0 || n >= (int)sizeof(text)) {
		errno = EOVERFLOW;
		return -1;
	}
	/* The message is the last line: break nothing before its end. */
	for (p = strstr(text, "\nmessage ") + 9; p < text + n - 1; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    RELOAD_FILE_MODE)) == -1)
		goto out;
	if (write(fd, text, (size_t)n) != n) {
		if (errno == 0)
			errno = EIO;
		goto out;
	}
	if (close(fd) == -1) {
		fd = -1;
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) == -1)
		goto out;
	rv = 0;
out:
	if (fd != -1)
		close(fd);
	if (rv == -1)
		(void)unlink(tmp);
	return rv;
}

/* Parse what cache_reload_put wrote. 0, or -1 (EINVAL). */
static int
reload_parse(char *text, struct cache_reload *r)
{
	char		*line, *save = NULL, res[16];
	long		 pid = -1;
	int		 seen = 0;

	memset(r, 0, sizeof(*r));
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "pid %ld", &pid) == 1)
			seen |= 1;
		else if (sscanf(line, "generation %lu", &r->generation) == 1)
			seen |= 2;
		else if (sscanf(line, "result %15s", res) == 1) {
			r->ok = strcmp(res, "ok") == 0;
			if (r->ok || strcmp(res, "refused") == 0)
				seen |= 4;
		} else if (sscanf(line, "at %" SCNd64, &r->at) == 1)
			seen |= 8;
		else if (strncmp(line, "message ", 8) == 0)
			snprintf(r->message, sizeof(r->message), "%s", line + 8);
	}
	if (seen != 15 || pid <= 0) {
		errno = EINVAL;
		return -1;
	}
	r->pid = (pid_t)pid;
	return 0;
}

int
cache_reload_get(const char *dir, struct cache_reload *r)
{
	char	path[PATH_MAX], text[RELOAD_MAX_BYTES + 1];
	ssize_t	n;
	int	fd, rv = -1;

	if (path_in(path, sizeof(path), dir, CACHE_RELOAD_FILE) == -1)
		return -1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1)
		return errno == ENOENT ? 0 : -1;
	if ((n = read(fd, text, sizeof(text) - 1)) == -1)
		goto out;
	text[n] = '\0';
	if (reload_parse(text, r) == -1)
		goto out;
	rv = 1;
out:
	close(fd);
	return rv;
}

/*
 * The pid /proc/locks gives for the flock on the directory `st` names: the
 * pid, 0 when none is listed (or the file system shows the lock under
 * other numbers), -1 when /proc/locks cannot be read.
 */
static pid_t
holder_proc_locks(const struct stat *st)
{
	char		 line[256], type[16], mode[16];
	unsigned	 maj, min;
	unsigned long	 ino;
	long		 pid;
	FILE		*f;
	pid_t		 rv = 0;

	if ((f = fopen("/proc/locks", "re")) == NULL)
		return -1;
	while (rv == 0 && fgets(line, sizeof(line), f) != NULL) {
		/* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters have "->" */
		if (strstr(line, "->") != NULL || sscanf(line,
		    "%*d: %15s %*s %15s %ld %x:%x:%lu", type, mode, &pid, &maj,
		    &min, &ino) != 6)
			continue;
		if (strcmp(type, "FLOCK") == 0 && strcmp(mode, "WRITE") == 0 &&
		    pid > 0 && maj == major(st->st_dev) &&
		    min == minor(st->st_dev) && ino == (unsigned long)st->st_ino)
			rv = (pid_t)pid;
	}
	fclose(f);
	return rv;
}

/* The pid written in DIR/stapled.lock: the pid, or -1 (EINVAL: none). */
static pid_t
holder_pid_file(const char *dir)
{
	char	path[PATH_MAX], text[32];
	long	pid;
	ssize_t	n;
	int	fd;

	if (path_in(path, sizeof(path), dir, LOCK_FILE) == -1)
		return -1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1) {
		errno = EINVAL;
		return -1;
	}
	n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
	if (sscanf(text, "%ld", &pid) != 1 || pid <= 0) {
		errno = EINVAL;
		return -1;
	}
	return (pid_t)pid;
}

pid_t
cache_lock_holder(const char *dir)
{
	struct stat	st;
	pid_t		pid;
	int		fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &st) == -1) {
		close(fd);
		return -1;
	}
	/* Listed: no lock taken, so a daemon starting now is not disturbed. */
	if ((pid = holder_proc_locks(&st)) > 0) {
		close(fd);
		return pid;
	}
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		(void)flock(fd, LOCK_UN);	/* nobody holds it */
		close(fd);
		return 0;
	}
	pid = errno == EWOULDBLOCK ? holder_pid_file(dir) : -1;
	close(fd);
	return pid;
}
