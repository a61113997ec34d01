/* SPDX-License-Identifier: Apache-2.0 */
/* A progress line on stderr for staplectl's long commands, shown only on a terminal. */
#ifndef TOOLS_PROGRESS_H
#define TOOLS_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/*
 * A meter reads CLOCK_MONOTONIC for its rate and redraw interval only;
 * nothing that decides freshness reads it. It draws "\r<line>\033[K" on
 * stderr at most once per PROGRESS_INTERVAL_MS and erases its line when
 * it ends, so the verdict lines that follow start on a clean line. It is
 * off (every call does nothing) unless stderr is a terminal and the
 * command was not given --quiet: scripts, pipes and the journal see only
 * the verdict lines.
 */
#define PROGRESS_INTERVAL_MS	250
#define PROGRESS_LINE_BYTES	160

enum progress_unit {
	PROGRESS_ITEMS = 0,	/* counted things: "entries" or the label's noun */
	PROGRESS_BYTES,		/* shown in KiB, MiB, GiB */
};

struct progress {
	int			 on;
	const char		*label;	/* borrowed: lives until progress_end */
	const char		*noun;	/* "entries", "CertIDs"; NULL for bytes */
	enum progress_unit	 unit;
	uint64_t		 done, total;	/* total 0: not known */
	struct timespec		 t0, drawn;
	int			 shown;	/* a line is on the terminal now */
};

/*
 * Start a meter for `total` things (0 when not known yet) of `noun`
 * (PROGRESS_ITEMS) or bytes. quiet: --quiet was given. p is the caller's;
 * label and noun are borrowed until progress_end.
 */
void	progress_start(struct progress *p, const char *label,
	    const char *noun, enum progress_unit, uint64_t total, int quiet);
/* n more done; redraws when PROGRESS_INTERVAL_MS has passed. */
void	progress_step(struct progress *p, uint64_t n);
/* So much done in all (a count read from elsewhere); redraws as step does. */
void	progress_set(struct progress *p, uint64_t done);
/* The total grew (more work found along the way). */
void	progress_add_total(struct progress *p, uint64_t n);
/* Erase the line and stop. p may be one never started (zeroed). */
void	progress_end(struct progress *p);
/*
 * Erase the meter's line, if one is shown, before another line is
 * written to stderr (ctl_warnx calls it); the next step redraws it.
 */
void	progress_hide(void);

/*
 * The line a meter shows, without the "\r": "verify: 1200/5000 entries
 * (24%), 310/s, 12s left"; without a total "fetch: 1200 entries, 310/s";
 * the rate and time left only once elapsed_ms > 0 and done > 0. Pure.
 * Returns the length written (truncated to len - 1).
 */
size_t	progress_format(char *buf, size_t len, const char *label,
	    const char *noun, enum progress_unit, uint64_t done,
	    uint64_t total, uint64_t elapsed_ms);

#endif
