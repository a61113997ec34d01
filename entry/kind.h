/* SPDX-License-Identifier: Apache-2.0 */
/* The kinds of entry, by the store's enum cache_kind: one row each with its name, its configuration section, and the rules every caller reads. */
#ifndef ENTRY_KIND_H
#define ENTRY_KIND_H

#include <stddef.h>
#include <time.h>

#include "cache/record.h"
#include "entry/judge.h"

/*
 * One row per kind, indexed by enum cache_kind (row 0 is no kind). The
 * name is cache_kind_str's (logs, metrics, bundles, --kind); the section
 * is the configuration's ("amd_kds" for KDS).
 */
struct kind_row {
	const char		*section;	/* the configuration's section */
	/*
	 * The least clock skew an entry is served with: the vendor's
	 * verifier admits an object up to this far ahead of now (0: only
	 * the configured skew_s).
	 */
	long			 min_skew_s;
	/* Response headers kept with an entry and served again (NULL-terminated, or NULL). */
	const char *const	*keep_headers;
	/* Suffixes an upstream URL may end in that mean its host (entry_base_url). */
	const char *const	*base_suffixes;
	/* A record read back judged again by the kind's rule (entry_judge). */
	entry_judge_fn		*judge;
	/*
	 * What one entry takes of the map, B-tree pages and the free list's
	 * share included, and the share of the map the kind's entries may
	 * take by default: config_max_entries.
	 */
	size_t			 entry_bytes;
	unsigned		 map_share_pct;
};
extern const struct kind_row	kind_table[CACHE_KIND_MAX];

/* Each kind in turn: for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++). */
#define KIND_FIRST	CACHE_KIND_OCSP

/* The kind's name ("kds"), or NULL for a value that names no kind. */
const char	*kind_name(int kind);

/* The kind a name or section names, or 0 when none does. */
enum cache_kind	 kind_by_name(const char *);
enum cache_kind	 kind_by_section(const char *);

/* The names for a message: "ocsp, rim, pccs or kds". */
#define KIND_NAMES	"ocsp, rim, pccs or kds"

/*
 * Whether a stored entry of `kind` may be served at now, with the
 * configured skew (skew_s, raised to the kind's min_skew_s): 1 when
 * next_update > now and this_update <= now + skew, else 0 (expired, or
 * not valid yet). The rule the daemon serves by and staplectl reports.
 */
int		 entry_servable(const struct cache_meta *, enum cache_kind kind,
		    long skew_s, time_t now);

#endif
