/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP caching headers for every GET answer, from the entry's own validity (RFC 9111, RFC 5019). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <openssl/evp.h>

#include "attest/util.h"
#include "cache/record.h"
#include "entry/kinds.h"
#include "proxy/http/http.h"
#include "proxy/http/http_parse.h"
#include "proxy/http/httpcache.h"
#include "proxy/log.h"

#define HTTPCACHE_DIGEST_BYTES	32			/* SHA-256 */
#define HTTPCACHE_ETAG_BYTES	(2 * HTTPCACHE_DIGEST_BYTES + 3)	/* quotes, NUL */
#define HTTPCACHE_DATE_BYTES	64

long
httpcache_max_age(const struct cache_meta *m, enum httpcache_horizon horizon,
    time_t now)
{
	int64_t	end = m->next_update;

	if (horizon == HTTPCACHE_TO_REFRESH) {
		if (m->flags & CACHE_F_NO_REFRESH) {
			if (end > (int64_t)now + HTTPCACHE_NO_REFRESH_MAX_AGE_S)
				end = (int64_t)now + HTTPCACHE_NO_REFRESH_MAX_AGE_S;
		} else if (m->next_refresh_at > (int64_t)now &&
		    !(m->flags & CACHE_F_PARKED)) {
			if (end > m->next_refresh_at)
				end = m->next_refresh_at;
		/* overdue, or parked (docs/refresh.md): no refresh planned */
		} else if (end > (int64_t)now + HTTPCACHE_OVERDUE_MAX_AGE_S)
			end = (int64_t)now + HTTPCACHE_OVERDUE_MAX_AGE_S;
	}
	end -= HTTPCACHE_CLOCK_MARGIN_S;
	return end > (int64_t)now ? (long)(end - (int64_t)now) : 0;
}

/* The strong ETag of the served body: "<hex SHA-256>". 0, or -1 (no digest). */
static int
etag_of(struct http_req *req, char *etag, size_t len)
{
	struct evbuffer	*b = http_resp_body(req);
	size_t		 n = evbuffer_get_length(b);
	unsigned char	 md[HTTPCACHE_DIGEST_BYTES], *p;
	char		 hex[2 * HTTPCACHE_DIGEST_BYTES + 1];

	/*
	 * A SHA-256 of the answer on every GET, as OCSP always had: tens of
	 * microseconds for a RIM, the largest. Storing the digest with the
	 * entry would save it, at a record format change; worth it only if
	 * it shows in tools/bench. The pullup copies only multi-chunk
	 * bodies (PCCS's hex and PEM CRLs).
	 */
	if ((p = evbuffer_pullup(b, -1)) == NULL && n > 0)
		return -1;
	if (EVP_Digest(n > 0 ? p : (unsigned char *)"", n, md, NULL,
	    util_sha256(), NULL) != 1)
		return -1;
	log_hex(hex, sizeof(hex), md, sizeof(md));
	snprintf(etag, len, "\"%s\"", hex);
	return 0;
}

/* RFC 9110 13.1.2: "*", or a list of entity tags, weak ones compared weakly. */
static int
if_none_match(const char *inm, const char *etag)
{
	size_t		 elen = strlen(etag);
	const char	*p = inm;

	while (*p != '\0') {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '*')
			return 1;
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		if (strncmp(p, etag, elen) == 0 && (p[elen] == '\0' ||
		    p[elen] == ',' || p[elen] == ' ' || p[elen] == '\t'))
			return 1;
		while (*p != '\0' && *p != ',')
			p++;
	}
	return 0;
}

int
httpcache_answer(struct http_req *req, const struct cache_meta *m,
    enum httpcache_horizon horizon, time_t now)
{
	char		 etag[HTTPCACHE_ETAG_BYTES], cc[128], date[HTTPCACHE_DATE_BYTES];
	const char	*inm;
	long		 max_age = httpcache_max_age(m, horizon, now);
	int64_t		 modified = m->this_update > 0 ? m->this_update : m->fetched_at;

	if (m->next_update <= (int64_t)now || etag_of(req, etag, sizeof(etag)) == -1) {
		httpcache_no_store(req);
		http_reply(req, 200, "OK");
		return 200;
	}
	/*
	 * Cache-Control first: nginx 1.22 takes the first of it and Expires.
	 * RFC 5861's two zeros: Varnish takes its grace from
	 * stale-while-revalidate (10 s when absent, must-revalidate or not),
	 * and would otherwise serve a copy past nextUpdate while stapled is
	 * unreachable.
	 */
	snprintf(cc, sizeof(cc), "public, max-age=%ld, no-transform, must-revalidate, "
	    "stale-while-revalidate=0, stale-if-error=0", max_age);
	http_resp_header(req, "Cache-Control", cc);
	http_resp_header(req, "ETag", etag);
	http_fmt_date(date, sizeof(date), (int64_t)now + max_age);
	http_resp_header(req, "Expires", date);
	/* RFC 9110 8.8.2.1: never a time after the answer's Date. */
	http_fmt_date(date, sizeof(date), modified < (int64_t)now ? modified : (int64_t)now);
	http_resp_header(req, "Last-Modified", date);
	inm = http_req_header(req, "If-None-Match");
	if (inm != NULL && if_none_match(inm, etag)) {
		http_reply(req, 304, "Not Modified");
		return 304;
	}
	http_reply(req, 200, "OK");
	return 200;
}

void
httpcache_no_store(struct http_req *req)
{
	http_resp_header(req, "Cache-Control", "no-store");
}
