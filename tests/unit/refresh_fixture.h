/* SPDX-License-Identifier: Apache-2.0 */
/* A store, an event base and a refresh over them: the ground of the tests of proxy/refresh*.c and proxy/service.c. */
#ifndef TESTS_UNIT_REFRESH_FIXTURE_H
#define TESTS_UNIT_REFRESH_FIXTURE_H

#include <event2/event.h>

#include "proxy/refresh/refresh.h"
#include "store_fixture.h"

/*
 * store_setup_open's store into *sf, a new event base into *base and
 * refresh_new over both into *r. 0, or -1 when any cannot be made.
 */
int	refresh_fixture_open(struct store_fixture **sf, struct event_base **base,
	    struct refresh **r);
/* Frees r and base, then store_teardown's sf; store_teardown's result. */
int	refresh_fixture_close(struct store_fixture *sf, struct event_base *base,
	    struct refresh *r);

#endif
