/* SPDX-License-Identifier: Apache-2.0 */
/* The kind table: each kind's configuration section and rules, by enum cache_kind. */
#include <string.h>

#include "entry/kind.h"

const struct kind_row kind_table[CACHE_KIND_MAX] = {
	[CACHE_KIND_OCSP] = { .section = "ocsp" },
	[CACHE_KIND_RIM] = { .section = "rim" },
	[CACHE_KIND_PCCS] = { .section = "pccs" },
	[CACHE_KIND_KDS] = { .section = "amd_kds" },
};

const char *
kind_name(int kind)
{
	if (kind < KIND_FIRST || kind >= CACHE_KIND_MAX)
		return NULL;
	return cache_kind_str[kind];
}

enum cache_kind
kind_by_name(const char *s)
{
	int	k;

	for (k = KIND_FIRST; s != NULL && k < CACHE_KIND_MAX; k++)
		if (strcmp(s, cache_kind_str[k]) == 0)
			return (enum cache_kind)k;
	return 0;
}

enum cache_kind
kind_by_section(const char *s)
{
	int	k;

	for (k = KIND_FIRST; s != NULL && k < CACHE_KIND_MAX; k++)
		if (strcmp(s, kind_table[k].section) == 0)
			return (enum cache_kind)k;
	return 0;
}
