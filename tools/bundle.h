/* SPDX-License-Identifier: Apache-2.0 */
/* The stapled bundle: a versioned JSON Lines file of vendor-signed cache entries, sealed by a SHA-256 trailer. */
#ifndef TOOLS_BUNDLE_H
#define TOOLS_BUNDLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "cache/record.h"
#include "entry/kinds.h"
#include "cache/store.h"

/*
 * The format is specified in docs/bundle.md. In short, one JSON object a
 * line, '\n' after every line, the last one included:
 *
 *	{"type":"header","format":"stapled-bundle","version":1,
 *	    "created":"2025-01-02T03:04:05Z","generator":"staplectl 0.1"}
 *	{"type":"entry","kind":"ocsp","key":HEX,"request":B64,
 *	    "response":B64,"this_update":RFC3339,...}
 *	{"type":"cert","der":B64,"subject":"CN=..."}
 *	{"type":"end","entries":N,"sha256":HEX}
 *
 * The trailer's sha256 covers every byte before the trailer line. A file
 * that does not end in a matching trailer, whose header is not version
 * BUNDLE_VERSION, or any of whose lines does not decode, is refused as a
 * whole: bundle_parse hands back nothing from it, and a reader's caller
 * uses nothing of it. Unknown members are
 * ignored, and so are lines of an unknown type (counted in nunknown), so
 * that later version-1 writers may add to the format without breaking
 * this reader. Nothing in a bundle is trusted: the importer verifies
 * every entry against its own anchors.
 */

#define BUNDLE_FORMAT		"stapled-bundle"
#define BUNDLE_VERSION		1
/*
 * One line, its '\n' left out: a RIM envelope of RECORD_MAX_BLOB_BYTES
 * (8 MiB) is 10.7 MiB of base64, next to a request and headers of a few
 * KiB. The reader holds one line at a time, so this bounds its memory;
 * a file has no size limit.
 */
#define BUNDLE_MAX_LINE_BYTES	((size_t)12 << 20)
#define BUNDLE_MAX_CERT_BYTES	16384
#define BUNDLE_KIND_NAME_BYTES	16

struct bundle_entry {
	enum cache_kind	 kind;		/* 0 when kind_name is not known here */
	char		 kind_name[BUNDLE_KIND_NAME_BYTES];
	uint8_t		 key[CACHE_KEY_MAX_BYTES];
	size_t		 klen;
	uint8_t		*request;	/* what refreshes it; may be NULL/0 */
	size_t		 request_len;
	uint8_t		*response;	/* the vendor's bytes, unmodified */
	size_t		 response_len;
	uint8_t		*headers;	/* kept response header lines; NULL/0 */
	size_t		 headers_len;
	int64_t		 this_update;	/* as the exporter recorded them: */
	int64_t		 next_update;	/* informational, the importer */
	int64_t		 produced_at;	/* derives its own from the response */
	int		 status;	/* kind-specific, -1 when absent */
	char		 source[RECORD_SOURCE_MAX];
	size_t		 line;		/* 1-based line number, for reports */
};

struct bundle_cert {
	uint8_t		*der;
	size_t		 len;
	size_t		 line;
};

/* A parsed bundle; every member is owned by it (bundle_free). */
struct bundle {
	int			 version;
	int64_t			 created;
	char			 generator[128];
	struct bundle_entry	*entries;
	size_t			 nentries;
	struct bundle_cert	*certs;
	size_t			 ncerts;
	size_t			 nunknown;	/* lines of unknown type, ignored */
	uint8_t			 sha256[32];	/* the trailer's, as checked */
};

/*
 * Streaming reader. bundle_reader_new reads and checks the header line
 * from `in` (which it borrows until freed); each bundle_reader_next then
 * reads the lines up to the next entry or certificate, skipping lines of
 * unknown type, and returns:
 *	BUNDLE_ENTRY	*e filled, its bytes owned by the caller
 *			(bundle_entry_clear);
 *	BUNDLE_CERT	*c filled, likewise (bundle_cert_clear);
 *	BUNDLE_END	the trailer was read, its digest and count match, and
 *			nothing follows it: only now is the bundle whole;
 *	-1		err names the line and what is wrong ("line 7: not a
 *			JSON object (...)"), *e and *c empty. A NUL byte, an
 *			over-long line or a line that does not decode fails at
 *			that line, before anything after it is read.
 * A caller that must not act on a bundle that fails later (import) holds
 * what it read until BUNDLE_END. With copy set, every byte read from `in`
 * is written to it as well (to read a pipe twice). Memory: one line
 * (at most BUNDLE_MAX_LINE_BYTES) and a read buffer.
 */
#define BUNDLE_ENTRY	1
#define BUNDLE_CERT	2
#define BUNDLE_END	0

struct bundle_reader;

struct bundle_reader *bundle_reader_new(FILE *in, FILE *copy, char *err,
	    size_t errlen);
int	bundle_reader_next(struct bundle_reader *, struct bundle_entry *e,
	    struct bundle_cert *c, char *err, size_t errlen);
/*
 * The header's members, and the counts of what has been read so far
 * (nentries, ncerts, nunknown); sha256 once BUNDLE_END was returned.
 * entries and certs are NULL. Valid until the reader is freed.
 */
const struct bundle *bundle_reader_info(const struct bundle_reader *);
void	bundle_reader_free(struct bundle_reader *);	/* NULL ok */
void	bundle_entry_clear(struct bundle_entry *);	/* bytes only; NULL ok */
/* The entry's source, times and status: source, and m's (an admitted answer's). */
void	bundle_entry_set_meta(struct bundle_entry *, const struct cache_meta *m,
	    const char *source);
void	bundle_cert_clear(struct bundle_cert *);	/* NULL ok */

/*
 * Parse and check a whole bundle in memory, with the reader above.
 * Returns 0, or -1 with err naming the line and what is wrong ("line 7:
 * truncated: ...") and *out empty (safe to bundle_free).
 */
int	bundle_parse(const uint8_t *buf, size_t len, struct bundle *out,
	    char *err, size_t errlen);
void	bundle_free(struct bundle *);	/* members only; NULL ok */

/*
 * One line (without its '\n') as a JSON object: the object
 * json_loadb(JSON_REJECT_DUPLICATES) makes of it, or NULL with je set as
 * json_loadb sets it. A line as bundle_writer writes them (a flat object
 * of strings and integers, printable ASCII, no escapes) is parsed without
 * jansson's lexer; any other goes to json_loadb.
 */
struct json_t;
struct json_error_t;
struct json_t *bundle_line_json(const char *line, size_t len,
	    struct json_error_t *je);

/* A status name for the kind (its row's status_names, kind_status_name: OCSP "good"...), or NULL: written as a number. */
const char *bundle_status_name(enum cache_kind, int status);

/*
 * Streaming writer: the header at bundle_writer_new, the trailer at
 * bundle_writer_end, which flushes but does not close `out`. The writer
 * borrows `out` until it is freed.
 */
struct bundle_writer;

struct bundle_writer *bundle_writer_new(FILE *out, time_t created,
	    const char *generator);
int	bundle_write_entry(struct bundle_writer *, const struct bundle_entry *);
/* subject is informational and may be NULL. */
int	bundle_write_cert(struct bundle_writer *, const uint8_t *der,
	    size_t len, const char *subject);
int	bundle_writer_end(struct bundle_writer *);
size_t	bundle_writer_entries(const struct bundle_writer *);
void	bundle_writer_free(struct bundle_writer *);	/* NULL ok */

/* Helpers the tools share: RFC 3339 UTC ("2025-01-02T03:04:05Z"), a key's hex. */
void	bundle_time_str(char buf[32], int64_t t);
int	bundle_time_parse(const char *s, int64_t *t);
/* Decode a key's hex (either case, util_unhex's digits): the byte count, or -1. Encode with util_hex. */
long	bundle_unhex(const char *s, uint8_t *out, size_t outlen);

#endif
