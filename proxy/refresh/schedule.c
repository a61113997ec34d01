/* SPDX-License-Identifier: Apache-2.0 */
/* Refresh-time arithmetic: refresh by validity share with jitter, floor and ceiling; back off on failure. */
#include <config.h>

#include <math.h>

#include "proxy/refresh/schedule.h"

/* Latest moment a refresh may be planned: one second before expiry. */
static time_t
before_expiry(time_t at, time_t next_update, time_t now)
{
	if (at >= next_update)
		at = next_update - 1;
	if (at < now)
		at = now;
	return at;
}

time_t
schedule_refresh_at(const struct schedule_conf *c, time_t this_update,
    time_t next_update, time_t now, double rnd)
{
	double	validity, delay;

	if (next_update <= now)
		return 0;
	validity = (double)next_update - (double)this_update;
	if (validity < 0)
		validity = 0;
	delay = (double)this_update + c->fraction * validity - (double)now;
	if (delay < c->min_interval_s)
		delay = c->min_interval_s;
	if (delay > c->max_interval_s)
		delay = c->max_interval_s;
	/*
	 * Jitter after the clamps, so that entries held at the ceiling (a
	 * 24 h NVIDIA window against a 12 h maximum) still spread out: what
	 * would pass the ceiling is reflected below it.
	 */
	delay *= 1.0 + c->jitter * (2.0 * rnd - 1.0);
	if (delay > c->max_interval_s)
		delay = 2.0 * c->max_interval_s - delay;
	if (delay < c->min_interval_s)
		delay = c->min_interval_s;
	return before_expiry(now + (time_t)floor(delay), next_update, now);
}

time_t
schedule_backoff_at(const struct schedule_conf *c, unsigned failures,
    time_t next_update, time_t now, double rnd)
{
	double	delay, cap;

	if (next_update <= now)
		return 0;
	if (failures == 0)
		failures = 1;
	cap = c->max_interval_s < SCHEDULE_BACKOFF_CAP_S ?
	    c->max_interval_s : SCHEDULE_BACKOFF_CAP_S;
	delay = c->min_interval_s * ldexp(1.0, failures > 30 ? 30 : (int)failures - 1);
	if (delay > cap)
		delay = cap;
	delay = delay / 2 + delay / 2 * rnd;
	if (delay < 1)
		delay = 1;
	return before_expiry(now + (time_t)delay, next_update, now);
}

int
schedule_is_idle(time_t last_used, long idle_expire_s, time_t now)
{
	return last_used + idle_expire_s < now;
}
