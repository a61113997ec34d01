/* SPDX-License-Identifier: Apache-2.0 */
/* What every kind's rules share: the verdict on an upstream answer, the entry it would replace, and the headers kept with an entry. */
#ifndef ENTRY_ENTRY_H
#define ENTRY_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "cache/record.h"
#include "entry/kinds.h"

/*
 * The entry room (entry/) says what a cache entry is, per kind (OCSP, RIM,
 * PCCS, KDS): a client's request parsed into typed fields, the canonical
 * upstream request and cache key, whether an upstream answer may be
 * admitted for that key, the headers kept with it and how long it is
 * retained. stapled (proxy/) and staplectl (tools/) both link it, so a rule
 * is written once. It includes attest/ and cache/ only: what admit needs
 * from the store or the running daemon comes in as arguments.
 */

/* What an upstream answer is worth, for the question it was asked. */
enum entry_verdict {
	ENTRY_STORE,		/* verified and answers the question: store, serve */
	ENTRY_PASS,		/* genuine but not storable: relay, never store */
	/*
	 * An unsigned answer about the request that every mirror would
	 * repeat (OCSP unauthorized): relayed, remembered briefly, never
	 * stored, not a fault of the upstream.
	 */
	ENTRY_DEFINITIVE,
	ENTRY_REFUSE,		/* a failure of that upstream: fail over, never store */
	ENTRY_VERDICT_MAX
};
extern const char *const entry_verdict_str[ENTRY_VERDICT_MAX];

/* A response header of the answer being judged, or NULL; name is case-insensitive. */
typedef const char *entry_header_fn(const void *arg, const char *name);

/*
 * An upstream's 2xx answer as it arrived (header its headers' accessor),
 * or an answer read back (header NULL; kept its kept headers, the
 * "Name: value\r\n" lines stored with it, or NULL).
 */
struct entry_answer {
	const uint8_t		*body;
	size_t			 body_len;
	entry_header_fn		*header;
	const void		*header_arg;
	const uint8_t		*kept;
	size_t			 kept_len;
};

/*
 * The entry an answer would replace, read by the caller (the daemon from
 * its cache, staplectl from the store or the bundle), or NULL when there
 * is none. Pointers borrowed for the duration of the call.
 */
struct entry_stored {
	struct cache_meta	 meta;
	const uint8_t		*body;
	size_t			 body_len;
	const uint8_t		*headers;	/* kept headers, "Name: value\r\n" lines */
	size_t			 headers_len;
};

/* The value of a response header of an answer (NULL when absent or no accessor). */
const char	*entry_answer_header(const struct entry_answer *, const char *name);

/*
 * The value of header `name` in a kept-headers block ("Name: value\r\n"
 * lines, as stored with an entry), as a new string; NULL when absent or
 * out of memory. Names compare case-insensitively.
 */
char		*entry_header_dup(const uint8_t *headers, size_t len, const char *name);

/*
 * The kept-headers block of an answer: each of `names` (NULL-terminated)
 * that the answer carries, as "Name: value\r\n", in the order of `names`.
 * Returns the length written, 0 when none, or -1 when it does not fit
 * (the entry must then not be stored: its verifiers need those headers).
 */
int		 entry_keep_headers(const char *const *names,
		    const struct entry_answer *, char *buf, size_t buflen);
/* The most kept-headers bytes an entry stores (entry_keep_headers' buflen). */
#define ENTRY_KEPT_HEADERS_MAX_BYTES	(64 * 1024)

/*
 * An upstream's base URL: `url` without trailing '/' and without the
 * first of `suffixes` (NULL-terminated, or NULL) it ends in, the API's
 * path that operators may write into it ("/vcek/v1"). A new string, or
 * NULL when out of memory.
 */
char		*entry_base_url(const char *url, const char *const *suffixes);

/*
 * A stored entry's request (a bundle's, the store's) as a string into
 * buf, when it is printable text (0x21..0x7e) shorter than buflen: the
 * canonical path of a PCCS, KDS or RIM entry. 0, or -1.
 */
int		 entry_request_text(const uint8_t *req, size_t len, char *buf,
		    size_t buflen);

/*
 * t as RFC 3339 in UTC ("2025-01-02T03:04:05Z") into buf, or "@SECONDS"
 * when it has no such date: how bundles and staplectl write times.
 */
void		 entry_time_str(char buf[32], int64_t t);

#endif
