/* SPDX-License-Identifier: Apache-2.0 */
/* RFC 9211 Cache-Status: the header's value, assembled without snprintf (it is on every hit), and the access log's note. */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "proxy/http/cache_status.h"
#include "proxy/http/http.h"

#define LOG_PREFIX	"cache-status=\""
#define LOG_UPSTREAM	"\" upstream="

/* Append the literal s (a string constant) at *o. */
#define PUT(buf, o, s)	do {						\
	memcpy((buf) + (o), (s), sizeof(s) - 1);			\
	(o) += sizeof(s) - 1;						\
} while (0)

/* "00" to "99": two digits a division. */
static const char	pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/*
 * v in decimal at buf + o; returns the new offset (at most 20 digits and
 * a sign). Counted first, then written back to front two digits at a
 * time: a ttl costs a few dozen instructions.
 */
static size_t
put_int(char *buf, size_t o, int64_t v)
{
	uint64_t	u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, p;
	size_t		n = 1, end, i;

	if (v < 0)
		buf[o++] = '-';
	for (p = 10; n < 20 && u >= p; p *= 10)
		n++;
	end = o + n;
	while (u >= 100) {
		i = (size_t)(u % 100) * 2;
		u /= 100;
		buf[--end] = pairs[i + 1];
		buf[--end] = pairs[i];
	}
	if (u >= 10) {
		buf[--end] = pairs[u * 2 + 1];
		buf[--end] = pairs[u * 2];
	} else
		buf[--end] = (char)('0' + u);
	return o + n;
}

/*
 * RFC 9211 2: the member's name, then its parameters. The longest:
 * "stapled; fwd=bypass; fwd-status=NNN; stored; collapsed;
 * ttl=-9223372036854775808; detail=" and a detail of at most
 * CACHE_STATUS_DETAIL_BYTES: under CACHE_STATUS_VALUE_BYTES.
 */
#define CACHE_STATUS_DETAIL_BYTES	24

size_t
cache_status_value(const struct cache_status *cs, char *buf)
{
	size_t	o = 0, n;

	PUT(buf, o, CACHE_STATUS_NAME);
	if (cs->flags & CACHE_STATUS_HIT)
		PUT(buf, o, "; hit");
	else if (cs->flags & CACHE_STATUS_BYPASS)
		PUT(buf, o, "; fwd=bypass");
	else if (cs->flags & CACHE_STATUS_FWD)
		PUT(buf, o, "; fwd=miss");
	if ((cs->flags & CACHE_STATUS_FWD) && cs->fwd_status > 0 &&
	    cs->fwd_status < 1000) {
		PUT(buf, o, "; fwd-status=");
		o = put_int(buf, o, cs->fwd_status);
	}
	if (cs->flags & CACHE_STATUS_STORED)
		PUT(buf, o, "; stored");
	if (cs->flags & CACHE_STATUS_COLLAPSED)
		PUT(buf, o, "; collapsed");
	if (cs->flags & CACHE_STATUS_TTL) {
		PUT(buf, o, "; ttl=");
		o = put_int(buf, o, cs->ttl_s);
	}
	if (cs->detail != NULL &&
	    (n = strlen(cs->detail)) < CACHE_STATUS_DETAIL_BYTES) {
		PUT(buf, o, "; detail=");
		memcpy(buf + o, cs->detail, n);
		o += n;
	}
	buf[o] = '\0';
	return o;
}

void
cache_status_set(struct http_req *req, const struct cache_status *cs)
{
	char	note[HTTP_LOG_NOTE_BYTES];
	char	*v = note + sizeof(LOG_PREFIX) - 1;
	size_t	o = sizeof(LOG_PREFIX) - 1, n, room;

	/* The value is assembled in place, inside the note's quotes. */
	memcpy(note, LOG_PREFIX, o);
	n = cache_status_value(cs, v);
	o += n;
	/* Tokens and digits of ours: no line break to look for. */
	http_resp_header_n(req, "Cache-Status", sizeof("Cache-Status") - 1, v, n);
	if (cs->upstream == NULL) {
		note[o++] = '"';
		http_req_set_log_note(req, note, o);
		return;
	}
	PUT(note, o, LOG_UPSTREAM);
	room = sizeof(note) - 1 - o;	/* the note's NUL, http.h */
	n = strnlen(cs->upstream, room);
	memcpy(note + o, cs->upstream, n);
	http_req_set_log_note(req, note, o + n);
}
