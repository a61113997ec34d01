/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's store: claimed and judged at start, opened or recovered, watched for damage, held read-only, and walked by a forked check. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "cache/daemon.h"
#include "cache/fault.h"
#include "cache/reader.h"
#include "cache/store.h"
#include "cache/writer.h"
#include "entry/conf.h"
#include "proxy/daemon/daemon.h"
#include "proxy/log.h"
#include "proxy/loop.h"
#include "proxy/metrics.h"
#include "proxy/refresh/refresh.h"
#include "proxy/service.h"
#include "proxy/daemon/store_damaged.h"
#include "proxy/daemon/store_ops.h"
#include "proxy/daemon/store_salvage.h"

#define STORE_CHECK_POLL_MS	100	/* how often the check walk's child is polled */

static int
make_dir(const char *dir, char *err, size_t errlen)
{
	struct stat	st;

	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "cache_dir: %s: not a directory", dir);
			return -1;
		}
		return 0;
	}
	if (mkdir(dir, 0750) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "cache_dir: %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* The note /readyz and the log give for a damaged store moved aside. */
static void
damage_note(char *note, size_t len, const char *why, const char *aside)
{
	char		when[32];
	struct tm	tm;
	time_t		now = time(NULL);

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	/* A note cut short still names the damage. */
	if (snprintf(note, len, "store damaged (%s): moved aside to %s at %s; "
	    "serving from a new store", why, aside, when) >= (int)len)
		log_debug("cache: the damage note was cut short");
}

static void	store_check_cancel(struct daemon *);

/*
 * Whether the store takes writes (a full disk, a lock file not shared, a
 * store opened read-only): said when that changes, and shown in
 * stapled_store_read_only and /readyz. Refused writes are counted where
 * they fail. A full disk's clear on their own once there is room; a lock
 * file's once the store is opened again, tried at each later call (every
 * HEALTH_RECORD_S); a read-only store's at a reload (store_write_again).
 */
void
store_held(struct daemon *d)
{
	enum cache_cause	held = cache_writes_held(d->cache);

	/*
	 * lock.mdb removed or replaced: once nobody else holds the old one,
	 * open the store again with the one at the path. Lookups and writes
	 * in hand finish first, as for a reset.
	 */
	if (held == CACHE_CAUSE_LOCK && d->held == CACHE_CAUSE_LOCK &&
	    d->writer != NULL) {
		cache_reader_wait(d->reader);
		cache_writer_wait(d->writer);
		switch (cache_reopen(d->cache)) {
		case 0:
			log_warn("cache %s: opened the store again, with the "
			    "lock.mdb now at its path", d->cache_dir);
			held = cache_writes_held(d->cache);
			break;
		case 1:
			log_debug("%s", cache_strerror(d->cache));
			break;
		default:
			fatal("%s", cache_strerror(d->cache));
		}
	}
	if (held == d->held)
		return;
	if (held == CACHE_CAUSE_NONE)
		log_info("cache %s: writing again", d->cache_dir);
	else if (held == CACHE_CAUSE_LOCK)
		log_err("%s; serving read-only", cache_strerror(d->cache));
	else if (held == CACHE_CAUSE_READ_ONLY)
		log_warn("%s; serving read-only, refreshing and storing nothing, "
		    "until a reload or restart finds it writable",
		    cache_strerror(d->cache));
	else
		log_warn("%s; serving read-only", cache_strerror(d->cache));
	d->held = held;
	metrics.store_read_only = held;
}

static void	store_check_again(struct daemon *);

/*
 * SIGHUP: a store opened read-only is opened for writing once it can be
 * written (the file system remounted read-write, data.mdb's mode or
 * attributes mended). Lookups and writes in hand finish first; the check
 * walk, whose child read the store without a reader slot when its mount
 * was read-only, is begun again on the new environment.
 */
void
store_write_again(struct daemon *d)
{
	if (d->held != CACHE_CAUSE_READ_ONLY)
		return;
	cache_reader_wait(d->reader);
	cache_writer_wait(d->writer);
	switch (cache_reopen(d->cache)) {
	case 0:
		log_info("cache %s: opened the store for writing", d->cache_dir);
		if (d->check_pid > 0)
			store_check_again(d);
		break;
	case 1:
		log_warn("%s; still serving read-only", cache_strerror(d->cache));
		break;
	default:
		fatal("%s", cache_strerror(d->cache));
	}
	store_held(d);
}

/* Open the store in cfg->cache_dir with the daemon's settings. 0, or -1 with err. */
static int
store_open_env(struct daemon *d, const struct config *cfg, char *err,
    size_t errlen)
{
	if ((d->cache = cache_open_or_read(cfg->cache_dir, cfg->map_size, err,
	    errlen)) == NULL)
		return -1;
	cache_set_kind_name(d->cache, kind_name);
	/* Every write of the daemon can be made again: one sync a commit. */
	if (cache_set_lazy_meta(d->cache, 1) == -1)
		log_warn("cache %s: %s; every commit syncs twice",
		    cfg->cache_dir, cache_strerror(d->cache));
	/* A store an older stapled wrote: its due index was built just now. */
	if (cache_due_built(d->cache) > 0)
		log_info("cache %s: built the refresh due index: %ld entries",
		    cfg->cache_dir, cache_due_built(d->cache));
	store_held(d);
	return 0;
}

/*
 * The step after a damaged store is moved aside to `aside` and a fresh
 * one opened in its place: the note for /readyz and the log, the counter,
 * the fault marker (it named the file now aside) removed, and the salvage.
 */
static void
store_after_aside(struct daemon *d, const char *dir, const char *why,
    const char *aside)
{
	char	note[CACHE_DAMAGE_NOTE_BYTES * 2];

	damage_note(note, sizeof(note), why, aside);
	cache_note_damage(d->cache, note);
	metrics.store_damaged[CACHE_FOUND_STORE]++;
	log_err("cache %s: %s", dir, note);
	if (cache_fault_marker_clear(dir) == -1)
		log_warn("cache %s: removing %s: %s", dir, CACHE_FAULT_MARKER,
		    strerror(errno));
	/*
	 * What of it still reads and verifies is carried into the new store:
	 * now when running, or at start once the daemon is ready
	 * (store_check_start), so that start-up does not wait for it.
	 */
	if (d->salvage != NULL)
		store_salvage_start(d->salvage, aside);
	else
		snprintf(d->salvage_from, sizeof(d->salvage_from), "%s", aside);
}

/*
 * The recovery from a damaged store, one sequence for damage found at
 * start (the cheap checks, a fault's marker) and at run time (the check
 * walk, an LMDB result on any path): the store's use stops (at run time:
 * the check walk ends, the lookups and writes in hand finish, failing at
 * once on the marked store), data.mdb is moved aside, a fresh store is
 * opened in its place, then store_after_aside. 0, or -1 with err.
 */
static int
store_recover(struct daemon *d, const struct config *cfg, const char *why,
    char *err, size_t errlen)
{
	char	aside[PATH_MAX];
	int	walk_stopped = 0;

	if (d->cache == NULL) {
		if (cache_move_aside(cfg->cache_dir, aside, sizeof(aside)) == -1) {
			snprintf(err, errlen, "cache %s damaged (%s), and moving "
			    "it aside failed: %s", cfg->cache_dir, why,
			    strerror(errno));
			return -1;
		}
		if (store_open_env(d, cfg, err, errlen) == -1)
			return -1;
	} else {
		walk_stopped = d->check_pid > 0;
		store_check_cancel(d);
		cache_reader_wait(d->reader);
		cache_writer_wait(d->writer);
		if (cache_reset(d->cache, "", aside, sizeof(aside)) == -1) {
			snprintf(err, errlen, "cache %s damaged (%s); %s",
			    cfg->cache_dir, why, cache_strerror(d->cache));
			return -1;
		}
	}
	store_after_aside(d, cfg->cache_dir, why, aside);
	/* The refresh walk waited for the check walk's verdict. */
	if (walk_stopped && !d->stopping)
		refresh_start(d->refresh);
	return 0;
}

/*
 * At run time: recover, or when even that fails, leave the fault marker
 * and exit, so that the next start moves the store aside first.
 */
static void
store_recover_or_exit(struct daemon *d, const char *why)
{
	char	err[1024];

	if (store_recover(d, gen_config(d->gen), why, err, sizeof(err)) == 0)
		return;
	log_err("%s", err);
	cache_fault_exit(why);
	exit(CACHE_FAULT_EXIT);
}

/*
 * cache_damage_fd: a handle found the store damaged, and the loop
 * recovers; or found records that fail their check, taken here.
 */
static void
store_damage_found(evutil_socket_t fd, short what, void *arg)
{
	struct daemon	*d = arg;
	char		 why[CACHE_DAMAGE_NOTE_BYTES];
	uint64_t	 n;

	(void)what;
	(void)!read(fd, &n, sizeof(n));
	if (!cache_damage_found(d->cache, why, sizeof(why))) {
		store_damaged_take(d);
		return;
	}
	log_warn("cache %s: damaged, found at run time: %s; no longer read, "
	    "moving it aside", d->cache_dir, why);
	store_recover_or_exit(d, why);
}

/*
 * Whether the store in dir is damaged before anything reads it: the
 * marker a fault left, then the cheap checks. 0, 1 (why), or -1 (why).
 */
static int
store_judge(const char *dir, char *why, size_t whylen)
{
	int	r;

	if ((r = cache_fault_marker(dir, why, whylen)) != 0)
		return r;
	return cache_check_file(dir, why, whylen);
}

/*
 * Claim the cache directory, arm for faults in the map, judge the store,
 * recover a damaged one or open it, and watch it for damage found later.
 * 0, or -1 with a message in err.
 */
int
store_open(struct daemon *d, const struct config *cfg, char *err,
    size_t errlen)
{
	char	why[CACHE_DAMAGE_NOTE_BYTES], head[32];
	int	r, fd;

	err[0] = '\0';
	if (make_dir(cfg->cache_dir, err, errlen) == -1 ||
	    (d->lock_fd = cache_lock_dir(cfg->cache_dir, err, errlen)) == -1)
		return -1;
	/* Claimed, with a warning (the pid not written: a full disk). */
	if (err[0] != '\0')
		log_warn("%s", err);
	if (cache_fault_arm(cfg->cache_dir, log_head(LOG_LVL_ERR, head,
	    sizeof(head))) == -1)
		log_warn("cache %s: faults in the map are not caught: %s",
		    cfg->cache_dir, strerror(errno));
	if ((r = store_judge(cfg->cache_dir, why, sizeof(why))) == -1) {
		snprintf(err, errlen, "cache: %s", why);
		return -1;
	}
	if ((r == 1 ? store_recover(d, cfg, why, err, errlen) :
	    store_open_env(d, cfg, err, errlen)) == -1)
		return -1;
	/* Before the lookup and writer threads start: they may mark it. */
	if ((fd = cache_damage_fd(d->cache)) == -1 ||
	    (d->damage_ev = event_new(d->base, fd, EV_READ | EV_PERSIST,
	    store_damage_found, d)) == NULL ||
	    event_add(d->damage_ev, NULL) == -1)
		fatal("cannot watch the store for damage");
	return 0;
}

/* The check walk's child: until it ends, poll; then judge, and refresh. */
static void
store_check_poll(evutil_socket_t fd, short what, void *arg)
{
	struct daemon	*d = arg;
	struct timeval	 tv = { 0, STORE_CHECK_POLL_MS * 1000 };
	char		 why[CACHE_DAMAGE_NOTE_BYTES];
	int		 status;
	pid_t		 r;

	(void)fd;
	(void)what;
	if ((r = waitpid(d->check_pid, &status, WNOHANG)) == 0) {
		evtimer_add(d->check_ev, &tv);
		return;
	}
	d->check_pid = 0;
	if (r == -1) {
		log_warn("cache check: waitpid: %s", strerror(errno));
		close(d->check_fd);
	} else if (cache_check_result(status, d->check_fd, why,
	    sizeof(why)) == 1)
		store_recover_or_exit(d, why);
	else
		log_debug("cache check: every record read");
	d->check_fd = -1;
	if (!d->stopping)
		refresh_start(d->refresh);
}

/*
 * The check walk's child, polled every STORE_CHECK_POLL_MS on check_ev.
 * Without a child (again says which start failed), refresh now.
 */
static void
store_check_spawn(struct daemon *d, const char *again)
{
	struct timeval	tv = { 0, STORE_CHECK_POLL_MS * 1000 };

	if (d->check_ev == NULL ||
	    (d->check_pid = cache_check_spawn(gen_config(d->gen)->cache_dir,
	    &d->check_fd)) == -1) {
		log_warn("cache check: cannot start the walk%s: %s", again,
		    strerror(errno));
		d->check_pid = 0;
		refresh_start(d->refresh);
		return;
	}
	evtimer_add(d->check_ev, &tv);
}

/*
 * After ready: walk the whole store in a child, which damage may kill;
 * the refresh walk waits for its verdict. Without a child, refresh now.
 */
void
store_check_start(struct daemon *d)
{
	/* A file moved aside at start: salvaged beside the check. */
	if (d->salvage_from[0] != '\0')
		store_salvage_start(d->salvage, d->salvage_from);
	d->check_ev = evtimer_new(d->base, store_check_poll, d);
	store_check_spawn(d, "");
}

/* The check walk begun again (store_write_again), its first child ended. */
static void
store_check_again(struct daemon *d)
{
	store_check_cancel(d);
	store_check_spawn(d, " again");
}

/* End a check walk still running (its verdict no longer matters). */
static void
store_check_cancel(struct daemon *d)
{
	if (d->check_pid > 0) {
		kill(d->check_pid, SIGKILL);
		waitpid(d->check_pid, NULL, 0);
		close(d->check_fd);
		d->check_pid = 0;
		d->check_fd = -1;
	}
	if (d->check_ev != NULL)
		evtimer_del(d->check_ev);
}

void
store_check_stop(struct daemon *d)
{
	store_check_cancel(d);
	loop_event_free(d->check_ev);
	loop_event_free(d->damage_ev);
}
