/* SPDX-License-Identifier: Apache-2.0 */
/* The paced full walk: figures, eviction candidates, purge, parked entries taken back, the store's room. */
#include <config.h>

#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "cache/writer.h"
#include "proxy/log.h"
#include "proxy/refresh/refresh_int.h"
#include "proxy/refresh/release.h"
#include "proxy/refresh/sched.h"
#include "proxy/refresh/usage.h"

/*
 * The full walk (figures, eviction candidates, purge, taking parked
 * entries back) pauses this long between chunks, so a pass over 1,000,000
 * entries is spread over about 20 s instead of one burst; it lets go of
 * the map pages it read while the load check finds hits few.
 */
#define REFRESH_WALK_GAP_MS	2

struct walk_arg {
	struct refresh	*r;
	time_t		 now;
};

static int
walk_one(enum cache_kind kind, const uint8_t *key, size_t klen,
    const struct cache_meta *m, void *arg)
{
	struct walk_arg	*wa = arg;
	struct refresh	*r = wa->r;
	struct cache_meta used;

	r->after[0] = (uint8_t)kind;
	memcpy(r->after + 1, key, klen);
	r->afterlen = 1 + klen;
	if (kind >= CACHE_KIND_MAX || klen > CACHE_KEY_MAX_BYTES)
		return 0;
	if (m->next_update < wa->now - REFRESH_PURGE_GRACE_S) {
		usage_walk_purged(r->usage, kind, key, klen);
		sched_purge_add(r->sched, kind, key, klen);
		return 0;	/* gone after this chunk: counted nowhere */
	}
	/* Asked since its recorded use: idle and eviction see that use. */
	if (usage_walk_use(r->usage, kind, key, klen, wa->now)) {
		used = *m;
		if (used.last_served_at < wa->now)
			used.last_served_at = wa->now;
		used.served_count++;	/* as the queued touch adds */
		m = &used;
	}
	switch (sched_walk_entry(r->sched, kind, key, klen, m, wa->now)) {
	case SCHED_SEEN_IDLE:
		r->cur.idle++;
		break;
	case SCHED_SEEN_BACKLOG:
		r->cur.backlog++;
		break;
	case SCHED_SEEN:
		break;
	}
	r->cur.entries[kind]++;
	if (record_source_imported(m) && m->fetched_at > r->cur.newest_import)
		r->cur.newest_import = m->fetched_at;
	if (m->next_update <= wa->now) {
		r->cur.expired++;
		/*
		 * An idle entry is left to expire (docs/refresh.md, "Imports
		 * and idle entries"): not missed.
		 */
		if (!sched_refreshes(r->sched, kind) ||
		    !usage_idle(r->usage, kind, m, wa->now))
			r->cur.expired_by_kind[kind]++;
	} else {
		r->cur.valid_by_kind[kind]++;
		if (r->cur.earliest_next_update == 0 ||
		    m->next_update < r->cur.earliest_next_update)
			r->cur.earliest_next_update = m->next_update;
		if (r->cur.earliest_by_kind[kind] == 0 ||
		    m->next_update < r->cur.earliest_by_kind[kind])
			r->cur.earliest_by_kind[kind] = m->next_update;
		if (m->next_update - wa->now <= REFRESH_EXPIRING_S)
			r->cur.expiring++;
	}
	usage_walk_offer(r->usage, kind, key, klen, m);
	return 0;
}

/*
 * The pause between passes: a second, or N / 20 ms for a store of N
 * entries (100,000 entries: 5 s; 1,000,000: 50 s).
 */
static long
refresh_pause_ms(const struct refresh *r)
{
	size_t	k, total = 0;

	for (k = 1; k < CACHE_KIND_MAX; k++)
		total += r->last.entries[k];
	return total / 20 > (size_t)REFRESH_PASS_MS ? (long)(total / 20) :
	    REFRESH_PASS_MS;
}

static void
room_landed(const struct cache_writer_res *res, void *arg)
{
	struct refresh	*r = arg;

	if (res->rc == -1)
		log_err("refresh: the store's room: %s", res->err);
	else if (r != NULL)
		r->room = res->room;
}

/*
 * The store's room for writes, once a pass: on the writer's thread, as
 * its free list may take many milliseconds to read (cache_writer_room).
 */
static void
room_measure(struct refresh *r)
{
	if (r->writer != NULL &&
	    cache_writer_room(r->writer, room_landed, r) == 0)
		return;
	if (cache_room(r->cache, &r->room) == -1)
		log_err("refresh: the store's room: %s", cache_strerror(r->cache));
}

/*
 * The full walk, one chunk a turn: figures, eviction candidates, purge,
 * parked entries taken back. It starts no refresh and never waits on one.
 */
void
refresh_walk_cb(evutil_socket_t fd, short what, void *arg)
{
	struct refresh	*r = arg;
	struct walk_arg	 wa = { r, time(NULL) };
	struct timeval	 tv = { 0, REFRESH_WALK_GAP_MS * 1000 };
	long		 n, pass_ms;

	(void)fd;
	(void)what;
	if (!r->walking) {
		memset(&r->cur, 0, sizeof(r->cur));
		r->afterlen = 0;
		r->walking = 1;
		usage_pass_begin(r->usage);
	}
	usage_walk_room(r->usage, REFRESH_WALK_CHUNK);
	/* The walk key is kind||key; cache_walk wants the same form. */
	n = cache_walk(r->cache, 0, r->afterlen ? r->after : NULL, r->afterlen,
	    REFRESH_WALK_CHUNK, walk_one, &wa);
	if (n == -1)
		log_err("refresh: walking the cache: %s", cache_strerror(r->cache));
	(void)sched_flush(r->sched);
	if (n == REFRESH_WALK_CHUNK) {
		/*
		 * What the chunks read goes while hits are few, at the latest
		 * when it reaches RELEASE_BURST_BYTES: a release once a
		 * second let fault-around keep far more, and one after every
		 * chunk was most of the walk's CPU (docs/performance.md,
		 * "The map's resident pages").
		 */
		release_soon(r->release);
		evtimer_add(r->walk_ev, &tv);	/* more, after a breath */
		return;
	}
	usage_walk_flush(r->usage);
	release_if_quiet(r->release);
	r->walking = 0;
	r->cur.complete = 1;
	r->last = r->cur;
	room_measure(r);
	usage_pass_end(r->usage, r->last.entries, wa.now);
	pass_ms = refresh_pause_ms(r);
	tv.tv_sec = pass_ms / 1000;
	tv.tv_usec = (pass_ms % 1000) * 1000;
	evtimer_add(r->walk_ev, &tv);
}
