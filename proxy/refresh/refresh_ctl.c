/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl refresh's channel: the asks taken from the cache directory on SIGUSR1, each result appended to the asker's file, askers that left cancelled. */
#include "config.h"

#include <sys/queue.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cache/ask.h"
#include "entry/kind.h"
#include "proxy/log.h"
#include "proxy/loop.h"
#include "proxy/refresh/refresh.h"
#include "proxy/refresh/refresh_ctl.h"

#define ASK_OUT_MODE	0640	/* staplectl reads it, as root or in the group */

/* One staplectl waiting for its results. */
struct asker {
	TAILQ_ENTRY(asker)	 entry;
	struct refresh_ctl	*rc;
	pid_t			 pid;
	int			 fd;		/* its .out, append only */
	int			 write_failed;	/* said once */
	char			 path[PATH_MAX];
	struct refresh_ask	*ask;
};

struct refresh_ctl {
	struct event_base	*base;
	struct refresh		*refresh;
	const char		*dir;
	struct event		*check_ev;
	TAILQ_HEAD(, asker)	 askers;
};

static void
asker_free(struct asker *k, int remove_file)
{
	TAILQ_REMOVE(&k->rc->askers, k, entry);
	if (k->fd != -1)
		close(k->fd);
	if (remove_file)
		(void)unlink(k->path);
	free(k);
}

/* One line to the asker's file; a file that cannot be written is said once. */
static void
asker_write(struct asker *k, const struct cache_ask_line *l)
{
	char	buf[CACHE_ASK_LINE_BYTES];
	size_t	n = cache_ask_line_fmt(l, buf, kind_name), off = 0;
	ssize_t	w;

	while (off < n) {
		if ((w = write(k->fd, buf + off, n - off)) == -1 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!k->write_failed)
				log_err("refresh: %s: %s", k->path, w == -1 ?
				    strerror(errno) : "short write");
			k->write_failed = 1;
			return;
		}
		off += (size_t)w;
	}
}

/* refresh_ask's callback: each result, then the last line; then the asker is done. */
static void
asker_result(const struct cache_ask_line *l, void *arg)
{
	struct asker	*k = arg;

	asker_write(k, l);
	if (l->what == CACHE_ASK_DONE)
		log_info("refresh: staplectl (pid %ld) asked: %lu renewed, %lu "
		    "unchanged, %lu failed, %lu never refreshed (skipped)",
		    (long)k->pid, l->renewed, l->unchanged, l->failed,
		    l->skipped);
	else if (l->what == CACHE_ASK_STOPPED)
		log_info("refresh: staplectl (pid %ld)'s ask stopped: %s",
		    (long)k->pid, l->why);
	else
		return;
	k->ask = NULL;		/* it ends with this call */
	asker_free(k, 0);	/* the file is staplectl's to remove */
}

/* Every REFRESH_CTL_CHECK_MS while there are askers: one that left is cancelled. */
static void
check_cb(evutil_socket_t fd, short what, void *arg)
{
	struct refresh_ctl	*rc = arg;
	struct asker		*k, *tmp;
	struct timeval		 tv = { REFRESH_CTL_CHECK_MS / 1000,
				    (REFRESH_CTL_CHECK_MS % 1000) * 1000 };

	(void)fd;
	(void)what;
	for (k = TAILQ_FIRST(&rc->askers); k != NULL; k = tmp) {
		tmp = TAILQ_NEXT(k, entry);
		/* EPERM: it runs as another user, and runs. */
		if (kill(k->pid, 0) == 0 || errno != ESRCH)
			continue;
		log_info("refresh: staplectl (pid %ld) left: its ask is "
		    "cancelled", (long)k->pid);
		refresh_ask_cancel(k->ask);
		asker_free(k, 1);
	}
	if (!TAILQ_EMPTY(&rc->askers))
		evtimer_add(rc->check_ev, &tv);
}

/* The one line of an ask that does not start. */
static void
asker_refuse(struct asker *k, const char *why)
{
	struct cache_ask_line	l;

	memset(&l, 0, sizeof(l));
	l.what = CACHE_ASK_STOPPED;
	snprintf(l.why, sizeof(l.why), "%s", why);
	asker_result(&l, k);
}

static const char *
ask_words(const struct cache_ask *ask, char *buf, size_t len)
{
	if (ask->all)
		snprintf(buf, len, "every entry");
	else if (ask->kind != 0)
		snprintf(buf, len, "every %s entry", cache_kind_str[ask->kind]);
	else
		snprintf(buf, len, "%zu entr%s by key", ask->nkeys,
		    ask->nkeys == 1 ? "y" : "ies");
	return buf;
}

/* The ask of pid: its file read, its results' file made, the ask started. */
static void
take_one(struct refresh_ctl *rc, pid_t pid, const char *name)
{
	struct cache_ask	 ask;
	struct asker		*k;
	char			 path[PATH_MAX], words[64];
	char			 why[CACHE_ASK_WHY_BYTES];
	struct timeval		 tv = { REFRESH_CTL_CHECK_MS / 1000,
				    (REFRESH_CTL_CHECK_MS % 1000) * 1000 };

	TAILQ_FOREACH(k, &rc->askers, entry)
		if (k->pid == pid)
			return;		/* taken before; a new one waits for its end */
	if (snprintf(path, sizeof(path), "%s/%s", rc->dir, name) >=
	    (int)sizeof(path) || (k = calloc(1, sizeof(*k))) == NULL)
		return;
	k->rc = rc;
	k->pid = pid;
	TAILQ_INSERT_TAIL(&rc->askers, k, entry);
	if (cache_ask_path(k->path, sizeof(k->path), rc->dir, pid,
	    CACHE_ASK_OUT_SUFFIX) == -1 || (k->fd = open(k->path, O_WRONLY |
	    O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
	    ASK_OUT_MODE)) == -1) {
		log_err("refresh: %s: %s", k->path, strerror(errno));
		k->fd = -1;
		(void)unlink(path);
		asker_free(k, 0);
		return;
	}
	if (cache_ask_take(path, &ask, kind_name) == -1) {
		snprintf(why, sizeof(why), "the ask %.256s cannot be read: %s",
		    name, errno == EINVAL ? "not in its format" : strerror(errno));
		asker_refuse(k, why);
		return;
	}
	log_info("refresh: staplectl (pid %ld) asks to renew %s", (long)pid,
	    ask_words(&ask, words, sizeof(words)));
	if ((k->ask = refresh_ask_start(rc->refresh, &ask, asker_result, k)) ==
	    NULL)
		asker_refuse(k, "out of memory");
	else
		evtimer_add(rc->check_ev, &tv);
	cache_ask_free(&ask);
}

void
refresh_ctl_take(struct refresh_ctl *rc)
{
	DIR		*d;
	struct dirent	*de;
	pid_t		 pid;

	if ((d = opendir(rc->dir)) == NULL) {
		log_err("refresh: %s: %s", rc->dir, strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL)
		if ((pid = cache_ask_pid(de->d_name)) > 0)
			take_one(rc, pid, de->d_name);
	closedir(d);
}

struct refresh_ctl *
refresh_ctl_new(struct event_base *base, struct refresh *refresh,
    const char *dir)
{
	struct refresh_ctl	*rc;

	if ((rc = calloc(1, sizeof(*rc))) == NULL)
		return NULL;
	rc->base = base;
	rc->refresh = refresh;
	rc->dir = dir;
	TAILQ_INIT(&rc->askers);
	if ((rc->check_ev = evtimer_new(base, check_cb, rc)) == NULL) {
		free(rc);
		return NULL;
	}
	return rc;
}

void
refresh_ctl_free(struct refresh_ctl *rc)
{
	struct asker	*k;

	if (rc == NULL)
		return;
	while ((k = TAILQ_FIRST(&rc->askers)) != NULL) {
		refresh_ask_cancel(k->ask);
		asker_free(k, 0);
	}
	loop_event_free(rc->check_ev);
	free(rc);
}
