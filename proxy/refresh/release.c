/* SPDX-License-Identifier: Apache-2.0 */
/* Page release: letting go of the store map's resident pages while hits are few (docs/refresh.md, "Memory"), read from /proc/self/statm. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "cache/store.h"
#include "proxy/loop.h"
#include "proxy/refresh/release.h"
#include "proxy/refresh/usage.h"

/*
 * Between passes the due turns and the refreshes read the store (every
 * due turn reads the metas at the head of the due index, each a random
 * page, and each page fault maps its neighbours too): at 1,000,000
 * entries and 35 refreshes a second that mapped 60 MiB a second. What
 * they read is let go this soon after, by the last check's verdict.
 */
#define RELEASE_SOON_MS			100
/*
 * ...and at once when the process's file pages have grown by this much
 * since the last release: each due turn maps about 1.3 MiB of the store
 * and each put 1 to 3 MiB (fault-around), so a burst of them in those
 * 100 ms (a refresh round's start, slots freed together) would otherwise
 * be mapped all at once.
 */
#define RELEASE_BURST_BYTES		(4u << 20)
/*
 * A release of more than this much mapped unmaps this much of the map's
 * address range a loop turn: unmapping a million-entry store that hits
 * had mapped whole took the loop 225 ms in one call; a step of 64 MiB
 * takes a few milliseconds at most.
 */
#define RELEASE_STEP_BYTES		((size_t)64 << 20)

struct release {
	struct cache		*cache;
	const struct usage	*usage;		/* its hits: the load */
	struct event		*release_ev;	/* the load check, RELEASE_CHECK_MS */
	struct event		*soon_ev;	/* a release RELEASE_SOON_MS after store reads */
	struct event		*step_ev;	/* the next step of a release */
	size_t			 release_at;	/* where it starts; 0: no release under way */
	int			 stopped;
	unsigned long		 hits_at_check;	/* usage_hits at the last check */
	int64_t			 check_ms;	/* that check, monotonic */
	int			 busy;		/* it found more hits than RELEASE_QUIET_HITS_PER_S */
	size_t			 map_cap;	/* map_resident_max_mb in bytes; 0: none */
	size_t			 file_base;	/* file pages resident after the last release */
};

/* The process's resident file-backed pages (RssFile + RssShmem), in bytes; 0 unknown. */
static size_t
rss_file_bytes(void)
{
	unsigned long	size, resident, shared;
	long		page = sysconf(_SC_PAGESIZE);
	FILE		*f;
	int		 n;

	if (page <= 0 || (f = fopen("/proc/self/statm", "r")) == NULL)
		return 0;
	n = fscanf(f, "%lu %lu %lu", &size, &resident, &shared);
	fclose(f);
	return n == 3 ? (size_t)shared * (size_t)page : 0;
}

/*
 * The load check: whether to let go of the map's pages now
 * (docs/refresh.md, "Memory"). 1 while hits are few, so that what the walk
 * and the refreshes read does not stay resident, or when the file pages
 * resident exceed map_resident_max_mb; 0 under hit load, where dropping the
 * pages costs each following hit its page faults again. Measured over the
 * time since the last check; one less than RELEASE_MIN_MS after it keeps
 * that check's verdict (too short to measure a rate over).
 */
static int
release_check(struct release *r)
{
	struct timespec	ts;
	int64_t		now_ms, el;
	unsigned long	hits = usage_hits(r->usage), n = hits - r->hits_at_check;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if ((el = now_ms - r->check_ms) < RELEASE_MIN_MS)
		return !r->busy;
	r->busy = (double)n > RELEASE_QUIET_HITS_PER_S * (double)el / 1000;
	r->check_ms = now_ms;
	r->hits_at_check = hits;
	return !r->busy || (r->map_cap > 0 && rss_file_bytes() > r->map_cap);
}

/*
 * Let go of the map's pages; what stays resident of files is the
 * libraries. At once when less than RELEASE_STEP_BYTES was mapped since
 * the last release (the quiet daemon's case: a few MiB), else in steps of
 * RELEASE_STEP_BYTES of the map, one a loop turn (after hit load: the
 * whole store may be mapped). Asked again while steps are under way,
 * those go on (what was mapped behind them goes at the next release).
 * Hits arriving stop them: what they map, they use.
 */
static void
release_step(struct release *r)
{
	struct timeval	tv = { 0, 0 };

	r->release_at = cache_release_pages_step(r->cache, r->release_at,
	    RELEASE_STEP_BYTES);
	if (r->release_at != 0)
		evtimer_add(r->step_ev, &tv);
	else
		r->file_base = rss_file_bytes();
}

static void
release_now(struct release *r)
{
	if (r->release_at != 0)
		return;
	if (rss_file_bytes() <= r->file_base + RELEASE_STEP_BYTES) {
		cache_release_pages(r->cache);
		r->file_base = rss_file_bytes();
	} else
		release_step(r);
}

static void
step_cb(evutil_socket_t fd, short what, void *arg)
{
	struct release	*r = arg;

	(void)fd;
	(void)what;
	if (r->stopped || !release_check(r)) {
		r->release_at = 0;
		r->file_base = rss_file_bytes();
		return;
	}
	release_step(r);
}

/*
 * The load check's timer: between the full walk's passes (50 s at
 * 1,000,000 entries) the refreshes' reads and writes and the due turns
 * bring pages in too, and a quiet daemon lets them go within a second.
 */
static void
release_cb(evutil_socket_t fd, short what, void *arg)
{
	struct release	*r = arg;
	struct timeval	 tv = { RELEASE_CHECK_MS / 1000,
			    (RELEASE_CHECK_MS % 1000) * 1000 };

	(void)fd;
	(void)what;
	if (r->stopped)
		return;
	if (release_check(r))
		release_now(r);
	evtimer_add(r->release_ev, &tv);
}

static void
soon_cb(evutil_socket_t fd, short what, void *arg)
{
	struct release	*r = arg;

	(void)fd;
	(void)what;
	if (!r->stopped && release_check(r))
		release_now(r);
}

/*
 * The due turn, a refresh or the walk read the store: release soon while
 * hits are few, or now when what was read since the last release is
 * already RELEASE_BURST_BYTES (one read of /proc/self/statm). The hit
 * rate is measured again here when the last check is RELEASE_MIN_MS old,
 * so that hits arriving do not wait for the next timed check (up to a
 * second) to stop the releases.
 */
void
release_soon(struct release *r)
{
	struct timeval	tv = { 0, RELEASE_SOON_MS * 1000 };

	if (r->stopped || !release_check(r))
		return;
	if (rss_file_bytes() > r->file_base + RELEASE_BURST_BYTES) {
		evtimer_del(r->soon_ev);
		release_now(r);
	} else if (!evtimer_pending(r->soon_ev, NULL))
		evtimer_add(r->soon_ev, &tv);
}

void
release_if_quiet(struct release *r)
{
	if (release_check(r))
		release_now(r);
}

void
release_set_cap(struct release *r, size_t bytes)
{
	r->map_cap = bytes;
}

struct release *
release_new(struct event_base *base, struct cache *cache,
    const struct usage *usage)
{
	struct release	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->cache = cache;
	r->usage = usage;
	r->release_ev = evtimer_new(base, release_cb, r);
	r->soon_ev = evtimer_new(base, soon_cb, r);
	r->step_ev = evtimer_new(base, step_cb, r);
	if (r->release_ev == NULL || r->soon_ev == NULL || r->step_ev == NULL) {
		release_free(r);
		return NULL;
	}
	return r;
}

void
release_free(struct release *r)
{
	if (r == NULL)
		return;
	loop_event_free(r->release_ev);
	loop_event_free(r->soon_ev);
	loop_event_free(r->step_ev);
	free(r);
}

void
release_start(struct release *r)
{
	struct timeval	tv = { RELEASE_CHECK_MS / 1000,
			    (RELEASE_CHECK_MS % 1000) * 1000 };

	r->stopped = 0;
	release_now(r);	/* what start-up read; and the baseline of release_soon */
	evtimer_add(r->release_ev, &tv);
}

void
release_stop(struct release *r)
{
	r->stopped = 1;
	evtimer_del(r->release_ev);
	evtimer_del(r->soon_ev);
	evtimer_del(r->step_ev);
	r->release_at = 0;
}
