/* SPDX-License-Identifier: Apache-2.0 */
/* The refresh owner's private state, shared by proxy/refresh/refresh.c and refresh_walk.c: the three parts it wires together, and the walk's place and figures. */
#ifndef PROXY_REFRESH_INT_H
#define PROXY_REFRESH_INT_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "cache/store.h"
#include "proxy/refresh/refresh.h"

struct refresh {
	struct event_base	*base;
	struct cache		*cache;
	struct cache_writer	*writer;	/* NULL: the loop writes */
	struct usage		*usage;		/* touches, uses, eviction */
	struct release		*release;	/* the map's pages let go */
	struct sched		*sched;		/* due turns, slots, asks, backoff */
	struct event		*walk_ev;
	int			 walking;
	uint8_t			 after[1 + CACHE_KEY_MAX_BYTES];
	size_t			 afterlen;
	struct refresh_stats	 cur;	/* the pass in progress */
	struct refresh_stats	 last;	/* the last complete pass */
	struct cache_room	 room;	/* measured after it */
};

/* refresh_walk.c: the paced walk (walk_ev). */
void	refresh_walk_cb(evutil_socket_t fd, short what, void *arg);

#endif
