/* SPDX-License-Identifier: Apache-2.0 */
/* Failover policy without I/O: status classes, cooldown lengths and Retry-After. */
#include "config.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attest/util.h"
#include "proxy/fetch/fetch_policy.h"

/* Retry-After further out than this is treated as this (a day). */
#define RETRY_AFTER_MAX_S	(24 * 60 * 60)

const char *const fetch_err_str[FETCH_ERR_MAX] = {
	[FETCH_OK] = "ok",
	[FETCH_ERR_CONNECT] = "connect",
	[FETCH_ERR_TIMEOUT] = "timeout",
	[FETCH_ERR_HTTP] = "http",
	[FETCH_ERR_TOO_BIG] = "too_big",
	[FETCH_ERR_REJECTED] = "rejected",
	[FETCH_ERR_TRANSPORT] = "transport",
	[FETCH_ERR_PACED] = "paced",
	[FETCH_ERR_DNS] = "dns",
	[FETCH_ERR_TLS] = "tls",
};

/*
 * 2xx goes to the check callback. 408, 429 and 5xx say the endpoint is busy
 * or broken (RFC 9110 15.5.9, RFC 6585 4, RFC 9110 15.6). Any other 4xx is
 * the server's answer about the object and another mirror would say the same.
 * Redirects are not followed and name another endpoint, so they fail over,
 * as do interim and out-of-range codes and no response at all.
 */
enum fetch_class
fetch_classify(int http_status)
{
	if (http_status >= 200 && http_status <= 299)
		return FETCH_CLASS_ANSWER;
	if (http_status == 408 || http_status == 429)
		return FETCH_CLASS_FAILOVER;
	if (http_status >= 400 && http_status <= 499)
		return FETCH_CLASS_FINAL;
	return FETCH_CLASS_FAILOVER;
}

/*
 * BASE at the threshold, doubling per further failure, capped at MAX.
 * A Retry-After wins when longer, but never beyond MAX: nothing a peer
 * sends may take an upstream out of rotation for longer than that.
 */
int64_t
fetch_cooldown_ms(unsigned consecutive, int64_t retry_after_ms)
{
	int64_t		ms = 0;
	unsigned	shift;

	if (consecutive >= FETCH_FAILS_BEFORE_COOLDOWN) {
		shift = consecutive - FETCH_FAILS_BEFORE_COOLDOWN;
		if (shift >= 30)
			ms = FETCH_COOLDOWN_MAX_MS;
		else
			ms = (int64_t)FETCH_COOLDOWN_BASE_MS << shift;
	}
	if (retry_after_ms > ms)
		ms = retry_after_ms;
	if (ms > FETCH_COOLDOWN_MAX_MS)
		ms = FETCH_COOLDOWN_MAX_MS;
	return ms;
}

/*
 * Up to 20 % more than ms (FETCH_COOLDOWN_JITTER_DIV), from the random r,
 * then the ceiling again: the jitter never takes a rest past MAX.
 */
int64_t
fetch_cooldown_jitter_ms(int64_t ms, uint64_t r)
{
	if (ms <= 0)
		return ms;
	ms += (int64_t)(r % (uint64_t)(ms / FETCH_COOLDOWN_JITTER_DIV + 1));
	if (ms > FETCH_COOLDOWN_MAX_MS)
		ms = FETCH_COOLDOWN_MAX_MS;
	return ms;
}

static int
month_from_name(const char *s)
{
	static const char	*const names[12] = { "Jan", "Feb", "Mar", "Apr",
	    "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	int			 i;

	for (i = 0; i < 12; i++)
		if (strncmp(s, names[i], 3) == 0)
			return i + 1;
	return 0;
}

/* Reads exactly n digits; -1 if they are not there. */
static int
digits(const char **pp, int n)
{
	const char	*p = *pp;
	int		 v = 0, i;

	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)p[i]))
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	*pp = p + n;
	return v;
}

static int
expect(const char **pp, const char *lit)
{
	size_t	n = strlen(lit);

	if (strncmp(*pp, lit, n) != 0)
		return -1;
	*pp += n;
	return 0;
}

/* "08:49:37" */
static int
parse_hms(const char **pp, int *h, int *mi, int *s)
{
	if ((*h = digits(pp, 2)) < 0 || expect(pp, ":") == -1 ||
	    (*mi = digits(pp, 2)) < 0 || expect(pp, ":") == -1 ||
	    (*s = digits(pp, 2)) < 0)
		return -1;
	return 0;
}

/*
 * RFC 9110 5.6.7: IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", and the
 * obsolete RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT" and asctime
 * "Sun Nov  6 08:49:37 1994" forms that recipients must also accept.
 */
static int
parse_http_date(const char *p, time_t *out)
{
	int	y, mon, d, h, mi, s;

	while (isalpha((unsigned char)*p))
		p++;
	if (*p == ',') {
		p++;
		if (expect(&p, " ") == -1)
			return -1;
		if ((d = digits(&p, 2)) < 0)
			return -1;
		if (*p == ' ') {			/* IMF-fixdate */
			p++;
			if ((mon = month_from_name(p)) == 0)
				return -1;
			p += 3;
			if (expect(&p, " ") == -1 || (y = digits(&p, 4)) < 0)
				return -1;
		} else if (*p == '-') {			/* RFC 850 */
			p++;
			if ((mon = month_from_name(p)) == 0)
				return -1;
			p += 3;
			if (expect(&p, "-") == -1 || (y = digits(&p, 2)) < 0)
				return -1;
			/* RFC 9110 5.6.7: more than 50 years ahead is the past */
			y += y < 70 ? 2000 : 1900;
		} else
			return -1;
		if (expect(&p, " ") == -1 || parse_hms(&p, &h, &mi, &s) == -1 ||
		    expect(&p, " GMT") == -1)
			return -1;
	} else {					/* asctime */
		if (expect(&p, " ") == -1 || (mon = month_from_name(p)) == 0)
			return -1;
		p += 3;
		if (expect(&p, " ") == -1)
			return -1;
		if (*p == ' ') {
			p++;
			if ((d = digits(&p, 1)) < 0)
				return -1;
		} else if ((d = digits(&p, 2)) < 0)
			return -1;
		if (expect(&p, " ") == -1 || parse_hms(&p, &h, &mi, &s) == -1 ||
		    expect(&p, " ") == -1 || (y = digits(&p, 4)) < 0)
			return -1;
	}
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '\0')
		return -1;
	if (d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
		return -1;
	*out = (time_t)(util_days_from_civil(y, (unsigned)mon, (unsigned)d) * 86400 +
	    h * 3600 + mi * 60 + s);
	return 0;
}

int64_t
fetch_retry_after_ms(const char *value, time_t now)
{
	const char	*p;
	int64_t		 secs = 0;
	time_t		 when;

	if (value == NULL)
		return -1;
	while (*value == ' ' || *value == '\t')
		value++;
	if (*value == '\0')
		return -1;
	if (isdigit((unsigned char)*value)) {
		/* delay-seconds = 1*DIGIT */
		for (p = value; isdigit((unsigned char)*p); p++)
			if (secs < RETRY_AFTER_MAX_S)
				secs = secs * 10 + (*p - '0');
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != '\0')
			return -1;
	} else {
		if (parse_http_date(value, &when) == -1)
			return -1;
		secs = when > now ? (int64_t)(when - now) : 0;
	}
	if (secs > RETRY_AFTER_MAX_S)
		secs = RETRY_AFTER_MAX_S;
	return secs * 1000;
}
