/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's salvage of a damaged store (proxy/daemon/store_salvage.h): a forked child, its end polled from the loop, the outcome logged and counted. */
#include "config.h"

#include <sys/wait.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "cache/store.h"
#include "entry/conf.h"
#include "entry/salvage.h"
#include "proxy/log.h"
#include "proxy/loop.h"
#include "proxy/metrics.h"
#include "proxy/service.h"
#include "proxy/daemon/store_salvage.h"

struct store_salvage {
	struct event_base	*base;
	struct event		*poll_ev;
	struct gen *const	*genp;		/* the daemon's current generation */
	struct gen		*gen;		/* the child's, referenced while it runs */
	pid_t			 pid;		/* 0: none running */
	int			 fd;		/* its result pipe */
	char			 aside[PATH_MAX];	/* the file it reads */
	char			 next[PATH_MAX];	/* one waiting ("": none) */
	struct timespec		 t0;
};

static void	salvage_poll(evutil_socket_t, short, void *);

struct store_salvage *
store_salvage_new(struct event_base *base, struct gen *const *genp)
{
	struct store_salvage	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->base = base;
	s->genp = genp;
	s->fd = -1;
	if ((s->poll_ev = evtimer_new(base, salvage_poll, s)) == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

static void
salvage_arm(struct store_salvage *s)
{
	struct timeval	tv = { 0, STORE_SALVAGE_POLL_MS * 1000 };

	evtimer_add(s->poll_ev, &tv);
}

/* "salvaged N of M entries" into the damage note /readyz shows. */
static void
salvage_note(struct cache *c, const char *line)
{
	char		 note[CACHE_DAMAGE_NOTE_BYTES];
	const char	*old = cache_damage(c);

	/* A note cut short keeps its start: the damage and where the file went. */
	if (snprintf(note, sizeof(note), "%s%s%s", old != NULL ? old : "",
	    old != NULL ? "; " : "", line) >= (int)sizeof(note))
		log_debug("cache: the salvage note was cut short");
	cache_note_damage(c, note);
}

/* The child's end: its counts logged, counted and noted; the pool learned. */
static void
salvage_done(struct store_salvage *s, int status)
{
	struct entry_salvage_count	 cnt;
	struct timespec			 t1;
	struct cache			*c = gen_cache(s->gen);
	char				 why[CACHE_DAMAGE_NOTE_BYTES];
	char				 line[PATH_MAX + CACHE_DAMAGE_NOTE_BYTES + 64];
	double				 secs;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - s->t0.tv_sec) +
	    (double)(t1.tv_nsec - s->t0.tv_nsec) / 1e9;
	if (entry_salvage_result(status, s->fd, &cnt, why, sizeof(why)) == -1) {
		log_err("cache %s: salvage of %s failed: %s; %zu entries "
		    "carried before", gen_config(s->gen)->cache_dir, s->aside,
		    why, cnt.carried);
		snprintf(line, sizeof(line), "salvage failed: %s", why);
	} else {
		snprintf(line, sizeof(line), "salvaged %zu of %zu entries from "
		    "%s", cnt.carried + cnt.kept, cnt.found, s->aside);
		log_warn("cache %s: %s in %.1f s (%zu refused, %zu without a "
		    "body, %zu expired, %zu pool certificates; %zu leaf pages "
		    "read)", gen_config(s->gen)->cache_dir, line, secs,
		    cnt.refused, cnt.lost, cnt.expired, cnt.pool,
		    cnt.leaf_pages);
		if (cnt.refusal[0] != '\0')
			log_info("cache %s: salvage: the first refused: %s",
			    gen_config(s->gen)->cache_dir, cnt.refusal);
	}
	s->fd = -1;
	metrics.store_salvaged += cnt.carried;
	if (c != NULL)
		salvage_note(c, line);
	if (cnt.pool > 0 && *s->genp != NULL)
		gen_learn_pool(*s->genp);
	gen_unref(s->gen);
	s->gen = NULL;
}

static int
salvage_spawn(struct store_salvage *s, struct gen *gen, const char *aside)
{
	const struct config		*cfg = gen_config(gen);
	struct entry_rules		 rules;
	int				 k;

	entry_rules_init(&rules, cfg);
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		rules.trust[k] = svc_trust(gen_svc(gen, k));
	snprintf(s->aside, sizeof(s->aside), "%s", aside);
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	if ((s->pid = entry_salvage_spawn(aside, cfg->cache_dir, cfg->map_size,
	    &rules, time(NULL), &s->fd)) == -1) {
		log_err("cache %s: cannot salvage %s: %s", cfg->cache_dir,
		    aside, strerror(errno));
		s->pid = 0;
		return -1;
	}
	log_info("cache %s: salvaging %s (pid %ld)", cfg->cache_dir, aside,
	    (long)s->pid);
	gen_ref(gen);
	s->gen = gen;
	salvage_arm(s);
	return 0;
}

static void
salvage_poll(evutil_socket_t fd, short what, void *arg)
{
	struct store_salvage	*s = arg;
	int			 status;
	pid_t			 r;

	(void)fd;
	(void)what;
	if ((r = waitpid(s->pid, &status, WNOHANG)) == 0) {
		salvage_arm(s);
		return;
	}
	s->pid = 0;
	if (r == -1) {
		log_warn("cache salvage: waitpid: %s", strerror(errno));
		status = 0;
		/* No result comes: the pipe says "without a verdict". */
	}
	salvage_done(s, status);
	if (s->next[0] != '\0' && *s->genp != NULL) {
		char	aside[PATH_MAX];

		snprintf(aside, sizeof(aside), "%s", s->next);
		s->next[0] = '\0';
		(void)salvage_spawn(s, *s->genp, aside);
	}
}

int
store_salvage_start(struct store_salvage *s, const char *aside)
{
	if (s->pid > 0) {
		/* A store moved aside while the last was salvaged: next. */
		snprintf(s->next, sizeof(s->next), "%s", aside);
		return 0;
	}
	return salvage_spawn(s, *s->genp, aside);
}

void
store_salvage_free(struct store_salvage *s)
{
	if (s == NULL)
		return;
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		while (waitpid(s->pid, NULL, 0) == -1 && errno == EINTR)
			;
		close(s->fd);
	}
	gen_unref(s->gen);
	loop_event_free(s->poll_ev);
	free(s);
}
