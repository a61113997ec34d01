/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's small files beside the store: who holds the cache directory (its flock; stapled.lock names the pid) and how its last reload went (stapled.reload). */
#ifndef CACHE_DAEMON_H
#define CACHE_DAEMON_H

#include <stdint.h>
#include <sys/types.h>

#define CACHE_RELOAD_FILE	"stapled.reload"
#define CACHE_RELOAD_MSG_BYTES	512	/* a longer message is cut short */

/* One reload's verdict, as the daemon recorded it. */
struct cache_reload {
	pid_t		pid;		/* the daemon that wrote it */
	unsigned long	generation;	/* 0 at start-up, +1 per SIGHUP */
	int		ok;		/* 1 applied, 0 refused (old one kept) */
	int64_t		at;		/* unix time of the verdict */
	char		message[CACHE_RELOAD_MSG_BYTES];	/* one line */
};

/*
 * Replace DIR/stapled.reload with r, atomically (a temporary file renamed
 * over it), so a reader sees the old verdict or the new one, never part of
 * one. Line breaks in the message become spaces. 0, or -1 (errno).
 */
int	cache_reload_put(const char *dir, const struct cache_reload *r);
/*
 * Read DIR/stapled.reload into r. Returns 1 when read, 0 when there is no
 * such file, -1 on an error (errno; EINVAL: not in the format put writes).
 */
int	cache_reload_get(const char *dir, struct cache_reload *r);
/*
 * The pid of the daemon holding DIR (cache_lock_dir's flock on the
 * directory itself), without taking the lock from it: the holder as
 * /proc/locks lists it, else the pid written in DIR/stapled.lock. Returns
 * the pid, 0 when no daemon holds the directory (or it does not exist),
 * -1 on an error (errno; EINVAL: the lock is held but names no pid). When
 * /proc/locks does not list it, probing takes a shared lock for an
 * instant: a daemon starting in that instant fails as it would beside a
 * running one.
 */
pid_t	cache_lock_holder(const char *dir);

#endif
