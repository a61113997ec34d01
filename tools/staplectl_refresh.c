/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl refresh: make the stapled that holds the cache directory renew entries now (every one, a kind's, or keys), wait for each result, report them. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "attest/util.h"
#include "cache/ask.h"
#include "cache/clock.h"
#include "cache/daemon.h"
#include "tools/bundle.h"
#include "tools/staplectl.h"

#define REFRESH_START_WAIT_S	30	/* a daemon still starting: its start-up record within */
#define REFRESH_TAKE_S		10	/* the daemon takes the ask within, or it does not listen */
#define REFRESH_MAX_WAIT_S	(7 * 86400)	/* --timeout's bound */
#define REFRESH_POLL_MS		50
#define REFRESH_PROC_LINE_BYTES	256

/* One run: what was asked, where its results come, what they said. */
struct refresh_run {
	struct ctl		*ctl;
	pid_t			 pid;		/* the daemon's */
	char			 ask_path[PATH_MAX], out_path[PATH_MAX];
	int			 fd;		/* the results, once the daemon made them */
	char			 buf[2 * CACHE_ASK_LINE_BYTES];
	size_t			 len;		/* of a line not yet whole */
	int			 ended;		/* its last line read */
	int			 stopped;	/* ... and it was "stopped" */
	unsigned long		 renewed, unchanged, failed, skipped;
};

static volatile sig_atomic_t	interrupted;

static void
refresh_usage(FILE *f)
{
	fprintf(f, "usage: staplectl [-C DIR | -f FILE] refresh [--timeout SECONDS]\n"
	    "    (--all | --kind KIND | [--kind KIND] KEY...)\n"
	    "Make the stapled holding the cache directory renew entries now: "
	    "every entry\n(--all), every entry of a kind, or the KEYs (hex, as "
	    "'list' prints them), at its\nrefresh pace; wait for each and print "
	    "renewed, unchanged or failed with the\ncause. Exit 0 when every "
	    "entry asked was renewed, 1 when one was not, 5 when\nno daemon "
	    "runs, it exits first or --timeout passes.\n");
}

static void
on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void
nap(void)
{
	struct timespec	t = { 0, REFRESH_POLL_MS * 1000000L };

	nanosleep(&t, NULL);
}

/* --all, --kind, --timeout and the keys into ask. CTL_OK or CTL_USAGE. */
static int
refresh_args(int argc, char **argv, struct cache_ask *ask, long *wait_s)
{
	static const struct option	opts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "kind", required_argument, NULL, 'k' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	enum cache_kind	 kind = 0;
	char		*end;
	int		 ch, i;

	*wait_s = 0;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'a':
			ask->all = 1;
			break;
		case 'k':
			if (ctl_opt_kind(optarg, &kind) != CTL_OK)
				return CTL_USAGE;
			break;
		case 't':
			*wait_s = strtol(optarg, &end, 10);
			if (*end != '\0' || *wait_s < 1 ||
			    *wait_s > REFRESH_MAX_WAIT_S) {
				ctl_warnx("--timeout: between 1 and %d seconds",
				    REFRESH_MAX_WAIT_S);
				return CTL_USAGE;
			}
			break;
		case 'h':
			refresh_usage(stdout);
			exit(CTL_OK);
		default:
			refresh_usage(stderr);
			return CTL_USAGE;
		}
	}
	if (argc - optind > CACHE_ASK_MAX_KEYS) {
		ctl_warnx("at most %d keys at once", CACHE_ASK_MAX_KEYS);
		return CTL_USAGE;
	}
	if ((ask->all && (kind != 0 || optind < argc)) ||
	    (!ask->all && kind == 0 && optind == argc)) {
		refresh_usage(stderr);
		return CTL_USAGE;
	}
	if (optind == argc) {
		ask->kind = kind;
		return CTL_OK;
	}
	if ((ask->keys = calloc((size_t)(argc - optind),
	    sizeof(*ask->keys))) == NULL) {
		ctl_warnx("out of memory");
		return CTL_NOFILE;
	}
	for (i = optind; i < argc; i++, ask->nkeys++) {
		ask->keys[ask->nkeys].kind = kind;
		if (ctl_parse_key(argv[i], ask->keys[ask->nkeys].key,
		    &ask->keys[ask->nkeys].klen) == -1) {
			ctl_warnx("%s: not a hex key (as 'list' prints it)",
			    argv[i]);
			return CTL_USAGE;
		}
	}
	return CTL_OK;
}

/*
 * Whether pid catches SIGUSR1 (/proc/PID/status, SigCgt): a stapled older
 * than this staplectl would die of it. 1 yes, 0 no, -1 cannot be told.
 */
static int
catches_usr1(pid_t pid)
{
	char			 path[64], line[REFRESH_PROC_LINE_BYTES];
	unsigned long long	 mask;
	FILE			*f;
	int			 rv = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "SigCgt: %llx", &mask) == 1) {
			rv = (mask >> (SIGUSR1 - 1)) & 1;
			break;
		}
	fclose(f);
	return rv;
}

/* ---- the results ---------------------------------------------------------------- */

static void
print_json(const struct cache_ask_line *l, const char *hex)
{
	char	tu[32], was[32], nu[32];
	json_t	*o;

	if (l->what == CACHE_ASK_DONE)
		o = json_pack("{s:s, s:I, s:I, s:I, s:I}", "result", "done",
		    "renewed", (json_int_t)l->renewed, "unchanged",
		    (json_int_t)l->unchanged, "failed", (json_int_t)l->failed,
		    "skipped", (json_int_t)l->skipped);
	else if (l->what == CACHE_ASK_STOPPED)
		o = json_pack("{s:s, s:s}", "result", "stopped", "why", l->why);
	else if (l->what == CACHE_ASK_FAILED)
		o = json_pack("{s:s, s:s?, s:s, s:s}", "result", "failed", "kind",
		    l->kind != 0 ? cache_kind_str[l->kind] : NULL, "key", hex,
		    "why", l->why);
	else {
		bundle_time_str(tu, l->this_update);
		bundle_time_str(was, l->was);
		bundle_time_str(nu, l->next_update);
		o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "result",
		    cache_ask_result_str[l->what], "kind", cache_kind_str[l->kind],
		    "key", hex, "this_update", tu, "was", was, "next_update", nu,
		    "source", l->source);
	}
	if (o != NULL)
		json_dumpf(o, stdout, JSON_COMPACT);
	printf("\n");
	json_decref(o);
}

/* One result line as the daemon wrote it: counted and printed. */
static void
result_line(struct refresh_run *run, const char *text)
{
	struct cache_ask_line	 l;
	char			 hex[2 * CACHE_KEY_MAX_BYTES + 1], tu[32], was[32], nu[32];
	const char		*kind;

	if (cache_ask_line_parse(text, &l, kind_name) == -1) {
		ctl_warnx("%s: a line not in its format: %.80s", run->out_path, text);
		return;
	}
	util_hex(l.key, l.klen, hex);
	kind = l.kind != 0 ? cache_kind_str[l.kind] : "-";
	if (l.what == CACHE_ASK_RENEWED)
		run->renewed++;
	else if (l.what == CACHE_ASK_UNCHANGED)
		run->unchanged++;
	else if (l.what == CACHE_ASK_FAILED)
		run->failed++;
	else {
		run->ended = 1;
		run->stopped = l.what == CACHE_ASK_STOPPED;
		run->skipped = l.skipped;
	}
	if (run->ctl->json) {
		print_json(&l, hex);
		return;
	}
	bundle_time_str(tu, l.this_update);
	bundle_time_str(was, l.was);
	bundle_time_str(nu, l.next_update);
	if (l.what == CACHE_ASK_RENEWED)
		printf("renewed   %-4s %s thisUpdate %s (was %s), nextUpdate %s, "
		    "from %s\n", kind, hex, tu, was, nu, l.source);
	else if (l.what == CACHE_ASK_UNCHANGED)
		printf("unchanged %-4s %s thisUpdate %s, as stored, nextUpdate "
		    "%s, from %s\n", kind, hex, tu, nu, l.source);
	else if (l.what == CACHE_ASK_FAILED)
		printf("failed    %-4s %s %s\n", kind, hex, l.why);
	else if (l.what == CACHE_ASK_STOPPED)
		ctl_warnx("stapled (pid %ld) stopped the refresh: %s",
		    (long)run->pid, l.why);
}

/* What the daemon appended since: each whole line. 0, or -1 (said why). */
static int
read_results(struct refresh_run *run)
{
	ssize_t	 n;
	char	*nl, *p;

	for (;;) {
		n = read(run->fd, run->buf + run->len, sizeof(run->buf) - 1 -
		    run->len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			ctl_warnx("%s: %s", run->out_path, strerror(errno));
			return -1;
		}
		if (n == 0)
			return 0;
		run->len += (size_t)n;
		run->buf[run->len] = '\0';
		for (p = run->buf; !run->ended && (nl = strchr(p, '\n')) != NULL;
		    p = nl + 1) {
			*nl = '\0';
			result_line(run, p);
		}
		run->len -= (size_t)(p - run->buf);
		memmove(run->buf, p, run->len);
		if (run->len == sizeof(run->buf) - 1) {
			ctl_warnx("%s: a line over %zu bytes", run->out_path,
			    sizeof(run->buf) - 1);
			return -1;
		}
		if (run->ended)
			return 0;
	}
}

/*
 * Wait for the daemon's results and print them as they come, until the
 * last line. CTL_OK when it came; CTL_NODAEMON when the daemon did not
 * take the ask, exited, or the deadline passed (0: none); CTL_NOFILE.
 */
static int
follow(struct refresh_run *run, int64_t deadline)
{
	int64_t	take_by = mono_ms() + REFRESH_TAKE_S * 1000;

	while (!run->ended) {
		if (interrupted) {
			ctl_warnx("interrupted: the daemon cancels the rest");
			return CTL_REJECTED;
		}
		if (run->fd == -1 && (run->fd = open(run->out_path, O_RDONLY |
		    O_CLOEXEC)) == -1 && errno != ENOENT) {
			ctl_warnx("%s: %s", run->out_path, strerror(errno));
			return CTL_NOFILE;
		}
		if (run->fd == -1 && mono_ms() >= take_by) {
			ctl_warnx("stapled (pid %ld) did not take the ask within "
			    "%d s", (long)run->pid, REFRESH_TAKE_S);
			return CTL_NODAEMON;
		}
		if (run->fd != -1 && read_results(run) == -1)
			return CTL_NOFILE;
		if (run->ended)
			break;
		if (kill(run->pid, 0) == -1 && errno == ESRCH) {
			ctl_warnx("stapled (pid %ld) exited before every entry "
			    "was refreshed", (long)run->pid);
			return CTL_NODAEMON;
		}
		if (deadline != 0 && mono_ms() >= deadline) {
			ctl_warnx("--timeout: not every entry was refreshed in "
			    "time; the daemon cancels the rest");
			return CTL_NODAEMON;
		}
		nap();
	}
	return CTL_OK;
}

/* ---- the command ---------------------------------------------------------------- */

/* The daemon, ready and able to take an ask; CTL_OK with run->pid. */
static int
find_daemon(struct refresh_run *run)
{
	struct cache_reload	r;
	int			rv;

	if ((rv = ctl_daemon_ready(run->ctl, mono_ms() + REFRESH_START_WAIT_S *
	    1000, &run->pid, &r)) != CTL_OK)
		return rv;
	if (catches_usr1(run->pid) == 0) {
		ctl_warnx("stapled (pid %ld) takes no refresh asks (older than "
		    "this staplectl?); restart it first", (long)run->pid);
		return CTL_NODAEMON;
	}
	return CTL_OK;
}

/* Leave the ask, signal the daemon. */
static int
send_ask(struct refresh_run *run, const struct cache_ask *ask)
{
	if (cache_ask_path(run->ask_path, sizeof(run->ask_path),
	    run->ctl->cache_dir, getpid(), CACHE_ASK_SUFFIX) == -1 ||
	    cache_ask_path(run->out_path, sizeof(run->out_path),
	    run->ctl->cache_dir, getpid(), CACHE_ASK_OUT_SUFFIX) == -1 ||
	    cache_ask_put(run->ctl->cache_dir, getpid(), ask, kind_name) == -1) {
		ctl_warnx("%s: writing the ask: %s", run->ctl->cache_dir,
		    strerror(errno));
		return CTL_NOFILE;
	}
	if (kill(run->pid, SIGUSR1) == -1) {
		ctl_warnx("signalling stapled (pid %ld): %s", (long)run->pid,
		    strerror(errno));
		return errno == ESRCH ? CTL_NODAEMON : CTL_NOFILE;
	}
	return CTL_OK;
}

/* The last words and the exit status. */
static int
summary(const struct refresh_run *run, int rv)
{
	unsigned long	n = run->renewed + run->unchanged + run->failed;

	if (rv == CTL_OK && !run->ctl->json)
		printf("refresh: %lu entr%s: %lu renewed, %lu unchanged, %lu "
		    "failed; %lu never refreshed (VCEKs, PCK certificates ...), "
		    "skipped\n", n, n == 1 ? "y" : "ies", run->renewed,
		    run->unchanged, run->failed, run->skipped);
	if (rv != CTL_OK)
		return rv;
	if (run->stopped || run->unchanged > 0 || run->failed > 0)
		return CTL_REJECTED;
	return CTL_OK;
}

int
cmd_refresh(struct ctl *ctl, int argc, char **argv)
{
	struct cache_ask	 ask;
	struct refresh_run	 run;
	struct sigaction	 sa, old_int, old_term;
	long			 wait_s;
	int			 rv;

	memset(&ask, 0, sizeof(ask));
	memset(&run, 0, sizeof(run));
	run.ctl = ctl;
	run.fd = -1;
	if ((rv = refresh_args(argc, argv, &ask, &wait_s)) != CTL_OK ||
	    (rv = find_daemon(&run)) != CTL_OK)
		goto out;
	/* Interrupted, the files are removed; the daemon cancels the rest. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	if ((rv = send_ask(&run, &ask)) == CTL_OK)
		rv = follow(&run, wait_s > 0 ? mono_ms() + wait_s * 1000 : 0);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	rv = summary(&run, rv);
out:
	if (run.fd != -1)
		close(run.fd);
	if (run.ask_path[0] != '\0')
		(void)unlink(run.ask_path);
	if (run.out_path[0] != '\0')
		(void)unlink(run.out_path);
	cache_ask_free(&ask);
	return rv;
}
