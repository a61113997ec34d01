/* SPDX-License-Identifier: Apache-2.0 */
/* The list of kinds: one line each, from which every per-kind list (the enum, the names, the sections, the table of rules) is made. */
#ifndef ENTRY_KINDS_H
#define ENTRY_KINDS_H

#include <stddef.h>

#include "cache/record.h"

/*
 * X(ID, BYTE, NAME, SECTION, ROW), one line per kind, in the order of
 * BYTE:
 *   ID       the enum's member, CACHE_KIND_ID
 *   BYTE     the store's kind byte (cache/record.h), the first of every
 *            LMDB key and a bundle's line: never renumbered or reused
 *   NAME     logs, metric labels, bundles, --kind, staplectl's
 *            --NAME-upstream, the ask file
 *   SECTION  the configuration file's section
 *   ROW      the kind's struct kind, kind_ROW, in its own entry file
 *            (entry/kind.h)
 * Adding a kind: its entry file with its row, its route file, a line
 * here, CACHE_KIND_SLOTS one higher, Makefile.am and the docs.
 */
#define KIND_LIST(X)						\
	X(OCSP,	1,	"ocsp",	"ocsp",		ocsp)		\
	X(RIM,	2,	"rim",	"rim",		rim)		\
	X(PCCS,	3,	"pccs",	"pccs",		pccs)		\
	X(KDS,	4,	"kds",	"amd_kds",	kds)

/* The kinds by their byte; CACHE_KIND_MAX is one past the last. */
enum cache_kind {
#define KIND_ENUM_(id, byte, name, section, row)	CACHE_KIND_##id = byte,
	KIND_LIST(KIND_ENUM_)
#undef KIND_ENUM_
	CACHE_KIND_MAX
};

/* The bytes run 1..n without a gap: every loop over the kinds counts on it. */
#define KIND_ONE_(id, byte, name, section, row)	+ 1
_Static_assert(CACHE_KIND_MAX - 1 == 0 KIND_LIST(KIND_ONE_),
    "the list's bytes are not 1..n in order");
#undef KIND_ONE_
/* The store takes exactly the kinds listed: adding one raises CACHE_KIND_SLOTS. */
_Static_assert(CACHE_KIND_MAX - 1 == CACHE_KIND_SLOTS,
    "the list and the store's CACHE_KIND_SLOTS (cache/record.h) differ");

/* Each kind in turn: for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++). */
#define KIND_FIRST	1

/*
 * Each kind's name, by its byte ([0] "unknown"): cache_kind_str[k] is
 * the NAME column of the list.
 */
extern const char *const cache_kind_str[CACHE_KIND_MAX];
/* Each kind's configuration section, by its byte ([0] NULL): the list's SECTION column. */
extern const char *const kind_section[CACHE_KIND_MAX];

/*
 * The kind's name ("kds"), or NULL for a value that names no kind: a
 * cache_kind_name_fn, lent to the store for its messages and to the ask
 * file (cache/ask.h).
 */
const char	*kind_name(int kind);

/* The kind a name or section names, or 0 when none does. */
enum cache_kind	 kind_by_name(const char *);
enum cache_kind	 kind_by_section(const char *);

/*
 * The names for a message, "ocsp, rim, pccs or kds", into buf (at least
 * KIND_NAMES_BYTES); returns buf.
 */
#define KIND_NAMES_BYTES	128
const char	*kind_names(char *buf, size_t len);

#endif
