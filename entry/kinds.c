/* SPDX-License-Identifier: Apache-2.0 */
/* The list's names and sections, made from entry/kinds.h, and lookups by them: no rule, so that anything may link it alone. */
#include <stdio.h>
#include <string.h>

#include "entry/kinds.h"

#define KIND_NAME_(id, byte, name, section, row)	[byte] = name,
const char *const cache_kind_str[CACHE_KIND_MAX] = {
	[0] = "unknown",
	KIND_LIST(KIND_NAME_)
};
#undef KIND_NAME_

#define KIND_SECTION_(id, byte, name, section, row)	[byte] = section,
const char *const kind_section[CACHE_KIND_MAX] = {
	KIND_LIST(KIND_SECTION_)
};
#undef KIND_SECTION_

const char *
kind_names(char *buf, size_t len)
{
	size_t	off = 0;
	int	k;

	buf[0] = '\0';
	for (k = KIND_FIRST; k < CACHE_KIND_MAX && off < len; k++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s",
		    k == KIND_FIRST ? "" : k + 1 == CACHE_KIND_MAX ? " or " :
		    ", ", cache_kind_str[k]);
	return buf;
}

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
		if (strcmp(s, kind_section[k]) == 0)
			return (enum cache_kind)k;
	return 0;
}

