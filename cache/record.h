/* SPDX-License-Identifier: Apache-2.0 */
/* The versioned on-disk record: what one cached vendor object looks like in LMDB. */
#ifndef CACHE_RECORD_H
#define CACHE_RECORD_H

#include <stddef.h>
#include <stdint.h>

/* The meta's version, and a body's written without a checksum (read still). */
#define RECORD_VERSION		1
/* A body ending in the CRC-32C of the bytes before it: written now. */
#define RECORD_BODY_VERSION	2
/*
 * A meta's byte 3, its check: NONE in records written before there was
 * one (read still: their bytes 6 and 7 are zero, and every version-1
 * reader ignores all three); CRC16 when bytes 6 and 7 hold the low 16
 * bits of the CRC-32C of the record with those two bytes as zero.
 * Written now; any other value is damage. CRC16 is four bits away from
 * NONE, so no one flipped bit turns the check off.
 */
#define RECORD_META_CHECK_NONE	0
#define RECORD_META_CHECK_CRC16	0x5a
#define RECORD_SOURCE_MAX	64	/* upstream name, NUL included */
/* the largest stored answer is a RIM envelope (attest/rim.h, RIM_MAX_JSON_BYTES) */
#define RECORD_MAX_BLOB_BYTES	(8u << 20)

/*
 * What kind of vendor object an entry holds: a byte 1..CACHE_KIND_SLOTS,
 * the first of every LMDB key. The store knows kinds by number only;
 * which ones there are, and their names, is the caller's (entry/kinds.h,
 * which asserts that it lists this many). A record of any other kind
 * byte is damage, so that whoever reads a kind from the store may index
 * its per-kind arrays by it. 0 stands for no kind (a walk of every kind,
 * a damaged key).
 */
#define CACHE_KIND_SLOTS	4
/*
 * The name of a kind for a message ("ocsp"), or NULL for a number that
 * names none: the caller's list, lent to the store (cache_set_kind_name)
 * and to the ask file's reader and writer (cache/ask.h).
 */
typedef const char *cache_kind_name_fn(int kind);

/*
 * Where damage was found (store.h, "Damaged records"), for logs and the
 * label of stapled_store_damaged_total: the store as a whole, or one
 * record that failed its own check, by the read that met it.
 */
enum cache_found {
	CACHE_FOUND_STORE = 0,	/* the store's checks, LMDB: moved aside */
	CACHE_FOUND_LOOKUP,	/* cache_get, cache_get_meta */
	CACHE_FOUND_WALK,	/* cache_walk, cache_due_walk */
	CACHE_FOUND_WRITE,	/* a write, reading the record it updates */
	CACHE_FOUND_MAX
};
extern const char *const cache_found_str[CACHE_FOUND_MAX];

/*
 * Small, fixed-size metadata, kept apart from the bodies so that scanning
 * 100,000 entries to rebuild the refresh schedule touches a few MB only.
 * Times are seconds since the epoch (UTC).
 */
struct cache_meta {
	uint8_t		kind;		/* 1..CACHE_KIND_SLOTS */
	uint8_t		status;		/* kind-specific (OCSP cert status) */
	uint16_t	flags;		/* CACHE_F_* */
	uint32_t	refresh_failures; /* consecutive, reset on success */
	int64_t		this_update;
	int64_t		next_update;	/* never served at or after this */
	int64_t		produced_at;
	int64_t		fetched_at;
	int64_t		last_served_at;
	int64_t		next_refresh_at; /* 0: none scheduled */
	uint64_t	served_count;
	char		source[RECORD_SOURCE_MAX]; /* upstream name or "import:..." */
};

#define CACHE_F_NO_REFRESH	0x0001	/* immutable object: never refreshed */
/*
 * Stored by staplectl (import, prefetch) and not asked since: never
 * evicted (docs/decisions/0004-segmented-lru.md). A hit clears it
 * (cache_touch); a put over the entry keeps it. Records of 0.1.0 have it
 * clear: "not imported".
 */
#define CACHE_F_IMPORTED	0x0002
/*
 * Set aside by the refresh scheduler (docs/refresh.md, "The scheduler"):
 * idle, expired, or of a kind nobody refreshes when it came due. Its next_refresh_at was moved
 * to when it next matters (its nextUpdate, or when it is purged) so that
 * it no longer heads the due index; the full walk takes it back when it
 * may be refreshed again. A put clears it (the caller's flags win).
 */
#define CACHE_F_PARKED		0x0004

/*
 * The source of an entry staplectl import stored: "import:" and the
 * bundle's file name ("import" alone when the name is not known). It
 * stays until the entry is replaced, by a refresh or a later import.
 */
#define RECORD_SOURCE_IMPORT	"import"
/* 1 when m was stored by staplectl import (its source says so), else 0. */
int	record_source_imported(const struct cache_meta *m);

/* The bodies: the request that refreshes the entry and the vendor's bytes. */
struct cache_body {
	const uint8_t	*request;	/* may be NULL/0 */
	size_t		 request_len;
	const uint8_t	*response;
	size_t		 response_len;
	const uint8_t	*headers;	/* "Name: value\r\n" lines served again; may be NULL/0 */
	size_t		 headers_len;
};

#define RECORD_META_BYTES	(8 + 4 + 8 * 6 + 8 + RECORD_SOURCE_MAX)

/*
 * Encode/decode, little-endian, versioned, checked (docs/design.md, "5.
 * The store and its records").
 * Decode returns -1 when the bytes fail the record's own check: length,
 * version, structure, or its checksum when it carries one.
 */
void	record_meta_encode(const struct cache_meta *, uint8_t out[RECORD_META_BYTES]);
int	record_meta_decode(const uint8_t *buf, size_t len, struct cache_meta *);
/*
 * Body blob: version byte, u32 request length, u32 response length, the
 * request, the response, then (only when there are headers) u32 headers
 * length and the headers, then (RECORD_BODY_VERSION) u32 CRC-32C of all
 * the bytes before it. *out is malloc'd.
 */
int	record_body_encode(const struct cache_body *, uint8_t **out, size_t *outlen);
/* Decoded pointers borrow buf. */
int	record_body_decode(const uint8_t *buf, size_t len, struct cache_body *);
/*
 * Why the bytes fail the record's check, as a static phrase for a log
 * line ("checksum mismatch"), or NULL when they decode.
 */
const char	*record_meta_fault(const uint8_t *buf, size_t len);
const char	*record_body_fault(const uint8_t *buf, size_t len);

#endif
