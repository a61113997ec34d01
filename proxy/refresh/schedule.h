/* SPDX-License-Identifier: Apache-2.0 */
/* Refresh-time arithmetic without I/O: when to refresh, how to back off, when to give up. */
#ifndef PROXY_SCHEDULE_H
#define PROXY_SCHEDULE_H

#include <time.h>

struct schedule_conf {
	double	fraction;	/* of thisUpdate..nextUpdate, e.g. 0.5 */
	double	jitter;		/* +- share of the delay, e.g. 0.1 */
	long	min_interval_s;	/* never sooner than this from now */
	long	max_interval_s;	/* never later than this from now */
};

#define SCHEDULE_BACKOFF_CAP_S	3600	/* a failing entry is retried at least hourly */

/*
 * When to refresh an entry valid from this_update to next_update, decided
 * at `now`; rnd is uniform in [0, 1). The delay from now to this_update +
 * fraction * validity is clamped to [min, max], then jittered by +-jitter
 * of itself (reflected below max), and the moment is pulled in before
 * next_update. Returns 0 when next_update has passed (nothing to refresh:
 * the entry is no longer served).
 */
time_t	schedule_refresh_at(const struct schedule_conf *, time_t this_update,
	    time_t next_update, time_t now, double rnd);

/*
 * After `failures` consecutive failed refreshes: min_interval * 2^(failures-1),
 * capped at min(max_interval, SCHEDULE_BACKOFF_CAP_S), with the delay drawn
 * from [delay/2, delay) ("equal jitter"), and still before next_update.
 * Returns 0 once next_update has passed.
 */
time_t	schedule_backoff_at(const struct schedule_conf *, unsigned failures,
	    time_t next_update, time_t now, double rnd);

/* Whether an entry last asked for at `last_used` is still worth refreshing. */
int	schedule_is_idle(time_t last_used, long idle_expire_s, time_t now);

#endif
