/* SPDX-License-Identifier: Apache-2.0 */
/* A progress line on stderr for staplectl's long commands, shown only on a terminal. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/progress.h"

/* The meter whose line is on the terminal, if any: one at a time. */
static struct progress	*progress_shown;

static uint64_t
ms_since(const struct timespec *t0)
{
	struct timespec	 now;
	int64_t		 ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (int64_t)(now.tv_sec - t0->tv_sec) * 1000 +
	    (now.tv_nsec - t0->tv_nsec) / 1000000;
	return ms > 0 ? (uint64_t)ms : 0;
}

/* "512 B", "12.3 KiB", "4.0 MiB", "1.2 GiB". */
static void
fmt_bytes(char *buf, size_t len, double v)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	size_t			 i = 0;

	while (v >= 1024 && i + 1 < sizeof(u) / sizeof(u[0])) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%.0f %s", v, u[i]);
	else
		snprintf(buf, len, "%.1f %s", v, u[i]);
}

/* "45s", "3m12s", "2h05m". */
static void
fmt_left(char *buf, size_t len, uint64_t s)
{
	if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
		    s / 60 % 60);
}

size_t
progress_format(char *buf, size_t len, const char *label, const char *noun,
    enum progress_unit unit, uint64_t done, uint64_t total,
    uint64_t elapsed_ms)
{
	char	 d[32], t[32], r[48], left[32];
	double	 rate = 0;
	size_t	 n;
	int	 w;

	if (len == 0)
		return 0;
	if (total != 0 && done > total)
		total = done;
	if (unit == PROGRESS_BYTES) {
		fmt_bytes(d, sizeof(d), (double)done);
		fmt_bytes(t, sizeof(t), (double)total);
	} else {
		snprintf(d, sizeof(d), "%" PRIu64, done);
		snprintf(t, sizeof(t), "%" PRIu64 " %s", total,
		    noun != NULL ? noun : "");
	}
	if (total != 0)
		w = snprintf(buf, len, "%s: %s/%s (%u%%)", label, d, t,
		    (unsigned)(done * 100 / total));
	else
		w = snprintf(buf, len, "%s: %s%s%s", label, d,
		    unit == PROGRESS_BYTES || noun == NULL ? "" : " ",
		    unit == PROGRESS_BYTES || noun == NULL ? "" : noun);
	n = w < 0 ? 0 : (size_t)w >= len ? len - 1 : (size_t)w;
	if (elapsed_ms == 0 || done == 0)
		return n;
	rate = (double)done * 1000 / (double)elapsed_ms;
	if (unit == PROGRESS_BYTES) {
		fmt_bytes(r, sizeof(r), rate);
		strncat(r, "/s", sizeof(r) - strlen(r) - 1);
	} else if (rate >= 10)
		snprintf(r, sizeof(r), "%.0f/s", rate);
	else
		snprintf(r, sizeof(r), "%.1f/s", rate);
	w = snprintf(buf + n, len - n, ", %s", r);
	n += w < 0 ? 0 : (size_t)w >= len - n ? len - n - 1 : (size_t)w;
	if (total == 0 || done >= total)
		return n;
	fmt_left(left, sizeof(left), (uint64_t)((double)(total - done) /
	    rate + 0.5));
	w = snprintf(buf + n, len - n, ", %s left", left);
	n += w < 0 ? 0 : (size_t)w >= len - n ? len - n - 1 : (size_t)w;
	return n;
}

static void
draw(struct progress *p)
{
	char	line[PROGRESS_LINE_BYTES];

	progress_format(line, sizeof(line), p->label, p->noun, p->unit,
	    p->done, p->total, ms_since(&p->t0));
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	clock_gettime(CLOCK_MONOTONIC, &p->drawn);
	p->shown = 1;
	progress_shown = p;
}

void
progress_start(struct progress *p, const char *label, const char *noun,
    enum progress_unit unit, uint64_t total, int quiet)
{
	memset(p, 0, sizeof(*p));
	if (quiet || !isatty(STDERR_FILENO))
		return;
	p->on = 1;
	p->label = label;
	p->noun = noun;
	p->unit = unit;
	p->total = total;
	clock_gettime(CLOCK_MONOTONIC, &p->t0);
	draw(p);
}

void
progress_step(struct progress *p, uint64_t n)
{
	if (p == NULL || !p->on)
		return;
	p->done += n;
	if (!p->shown || ms_since(&p->drawn) >= PROGRESS_INTERVAL_MS)
		draw(p);
}

void
progress_set(struct progress *p, uint64_t done)
{
	if (p == NULL || !p->on || done < p->done)
		return;
	progress_step(p, done - p->done);
}

void
progress_add_total(struct progress *p, uint64_t n)
{
	if (p != NULL && p->on)
		p->total += n;
}

void
progress_hide(void)
{
	struct progress	*p = progress_shown;

	if (p == NULL || !p->shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->shown = 0;
	progress_shown = NULL;
}

void
progress_end(struct progress *p)
{
	if (p == NULL || !p->on)
		return;
	if (progress_shown == p)
		progress_hide();
	p->on = 0;
}
