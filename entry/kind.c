/* SPDX-License-Identifier: Apache-2.0 */
/* The kind table, made from the list: each kind's row (its own entry file's), by enum cache_kind; and the serving rule every kind shares. */
#include "entry/kind.h"

#define KIND_ROW_(id, byte, name, section, row)	[byte] = &kind_##row,
const struct kind *const kind_table[CACHE_KIND_MAX] = {
	KIND_LIST(KIND_ROW_)
};
#undef KIND_ROW_

int
entry_servable(const struct cache_meta *m, enum cache_kind kind, long skew_s,
    time_t now)
{
	if ((int)kind >= KIND_FIRST && kind < CACHE_KIND_MAX &&
	    skew_s < kind_table[kind]->min_skew_s)
		skew_s = kind_table[kind]->min_skew_s;
	return m->next_update > now && m->this_update <= now + skew_s;
}
