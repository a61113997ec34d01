/* SPDX-License-Identifier: Apache-2.0 */
/* A store, an event base and a refresh over them, opened and closed for a cmocka setup and teardown. */
#include "config.h"

#include <stddef.h>

#include "refresh_fixture.h"

int
refresh_fixture_open(struct store_fixture **sf, struct event_base **base,
    struct refresh **r)
{
	void	*p;

	if (store_setup_open(&p) == -1)
		return -1;
	*sf = p;
	if ((*base = event_base_new()) == NULL ||
	    (*r = refresh_new(*base, (*sf)->c, NULL)) == NULL)
		return -1;
	return 0;
}

int
refresh_fixture_close(struct store_fixture *sf, struct event_base *base,
    struct refresh *r)
{
	void	*p = sf;

	refresh_free(r);
	event_base_free(base);
	return store_teardown(&p);
}
