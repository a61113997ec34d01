/* SPDX-License-Identifier: Apache-2.0 */
/* The event loop's small helpers: libevent's destructors made to accept NULL, as every destructor of ours does. */
#ifndef PROXY_LOOP_H
#define PROXY_LOOP_H

#include <event2/event.h>

/* event_free(ev) unless ev is NULL (libevent's asserts it is not). */
static inline void
loop_event_free(struct event *ev)
{
	if (ev != NULL)
		event_free(ev);
}

#endif
