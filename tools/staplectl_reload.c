/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl reload: SIGHUP the daemon that holds the cache directory, wait for its verdict on that reload, report it. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cache/clock.h"
#include "cache/daemon.h"
#include "tools/staplectl.h"

#define RELOAD_WAIT_S		30	/* default --timeout: the daemon's verdict within */
#define RELOAD_MAX_WAIT_S	3600
#define RELOAD_POLL_MS		50

static void
reload_usage(FILE *f)
{
	fprintf(f, "usage: staplectl [-C DIR | -f FILE] reload [--timeout SECONDS]\n"
	    "Send SIGHUP to the stapled holding the cache directory and wait "
	    "(default %d s)\nfor its verdict: exit 0 when it applied the "
	    "configuration, 1 when it refused\nit (the old one stays), 5 when no "
	    "daemon runs or none answered in time.\n", RELOAD_WAIT_S);
}

static void
nap(void)
{
	struct timespec	t = { 0, RELOAD_POLL_MS * 1000000L };

	nanosleep(&t, NULL);
}

/*
 * Wait until pid's verdict has a generation above `after` (after -1: any
 * of pid's verdicts, i.e. it finished starting). CTL_OK with r filled,
 * CTL_NOFILE when the file cannot be read, CTL_NODAEMON when pid died or
 * the deadline passed.
 */
static int
wait_verdict(const struct ctl *ctl, pid_t pid, long after, int64_t deadline,
    struct cache_reload *r)
{
	int	got;

	for (;;) {
		if ((got = cache_reload_get(ctl->cache_dir, r)) == -1) {
			ctl_warnx("%s/%s: %s", ctl->cache_dir, CACHE_RELOAD_FILE,
			    strerror(errno));
			return CTL_NOFILE;
		}
		if (got == 1 && r->pid == pid && (long)r->generation > after)
			return CTL_OK;
		if (kill(pid, 0) == -1 && errno == ESRCH) {
			ctl_warnx("stapled (pid %ld) exited before answering",
			    (long)pid);
			return CTL_NODAEMON;
		}
		if (mono_ms() >= deadline) {
			ctl_warnx("stapled (pid %ld) gave no verdict in time%s",
			    (long)pid, after < 0 ? " (still starting)" : "");
			return CTL_NODAEMON;
		}
		nap();
	}
}

static void
print_verdict(const struct ctl *ctl, const struct cache_reload *r)
{
	json_t	*o;

	if (!ctl->json) {
		printf("reload %lu of stapled (pid %ld): %s: %s\n", r->generation,
		    (long)r->pid, r->ok ? "ok" : "refused", r->message);
		return;
	}
	o = json_pack("{s:I, s:I, s:b, s:I, s:s}", "pid", (json_int_t)r->pid,
	    "generation", (json_int_t)r->generation, "ok", r->ok, "at",
	    (json_int_t)r->at, "message", r->message);
	if (o != NULL)
		json_dumpf(o, stdout, JSON_COMPACT);
	printf("\n");
	json_decref(o);
}

/* --timeout into *wait_s; CTL_OK or CTL_USAGE (said why). */
static int
reload_args(int argc, char **argv, long *wait_s)
{
	static const struct option	opts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char	*end;
	int	 ch;

	*wait_s = RELOAD_WAIT_S;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 't':
			*wait_s = strtol(optarg, &end, 10);
			if (*end != '\0' || *wait_s < 1 ||
			    *wait_s > RELOAD_MAX_WAIT_S) {
				ctl_warnx("--timeout: between 1 and %d seconds",
				    RELOAD_MAX_WAIT_S);
				return CTL_USAGE;
			}
			break;
		case 'h':
			reload_usage(stdout);
			exit(CTL_OK);
		default:
			reload_usage(stderr);
			return CTL_USAGE;
		}
	}
	if (optind != argc) {
		reload_usage(stderr);
		return CTL_USAGE;
	}
	return CTL_OK;
}

int
ctl_daemon_ready(const struct ctl *ctl, int64_t deadline, pid_t *pid,
    struct cache_reload *r)
{
	if ((*pid = cache_lock_holder(ctl->cache_dir)) == -1) {
		ctl_warnx("%s: %s", ctl->cache_dir, strerror(errno));
		return CTL_NOFILE;
	}
	if (*pid == 0) {
		ctl_warnx("no stapled runs on %s", ctl->cache_dir);
		return CTL_NODAEMON;
	}
	/* Its start-up verdict: only then are its signal handlers in place. */
	return wait_verdict(ctl, *pid, -1, deadline, r);
}

int
cmd_reload(struct ctl *ctl, int argc, char **argv)
{
	struct cache_reload	r;
	int64_t			deadline;
	long			wait_s;
	pid_t			pid;
	int			rv;

	if ((rv = reload_args(argc, argv, &wait_s)) != CTL_OK)
		return rv;
	deadline = mono_ms() + wait_s * 1000;
	/* Only then is SIGHUP a reload, not its death. */
	if ((rv = ctl_daemon_ready(ctl, deadline, &pid, &r)) != CTL_OK)
		return rv;
	if (kill(pid, SIGHUP) == -1) {
		ctl_warnx("signalling stapled (pid %ld): %s", (long)pid,
		    strerror(errno));
		return errno == ESRCH ? CTL_NODAEMON : CTL_NOFILE;
	}
	if ((rv = wait_verdict(ctl, pid, (long)r.generation, deadline,
	    &r)) != CTL_OK)
		return rv;
	print_verdict(ctl, &r);
	return r.ok ? CTL_OK : CTL_REJECTED;
}
