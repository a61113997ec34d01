/* SPDX-License-Identifier: Apache-2.0 */
/* What every kind's rules share: verdict names and the kept-headers block. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "entry/entry.h"

const char *const entry_verdict_str[ENTRY_VERDICT_MAX] = {
	[ENTRY_STORE] = "store",
	[ENTRY_PASS] = "pass",
	[ENTRY_DEFINITIVE] = "definitive",
	[ENTRY_REFUSE] = "refuse",
};

const char *
entry_answer_header(const struct entry_answer *a, const char *name)
{
	if (a == NULL || a->header == NULL)
		return NULL;
	return a->header(a->header_arg, name);
}

char *
entry_header_dup(const uint8_t *headers, size_t len, const char *name)
{
	const char	*p = (const char *)headers, *end, *eol;
	size_t		 n = strlen(name);

	if (headers == NULL)
		return NULL;
	for (end = p + len; p < end; p = eol + 2) {
		if ((eol = memchr(p, '\r', (size_t)(end - p))) == NULL)
			break;
		if ((size_t)(eol - p) >= n + 2 && strncasecmp(p, name, n) == 0 &&
		    p[n] == ':' && p[n + 1] == ' ')
			return strndup(p + n + 2, (size_t)(eol - p) - n - 2);
	}
	return NULL;
}

int
entry_keep_headers(const char *const *names, const struct entry_answer *a,
    char *buf, size_t buflen)
{
	const char	*v;
	size_t		 n = 0, i;
	int		 w;

	for (i = 0; names != NULL && names[i] != NULL; i++) {
		if ((v = entry_answer_header(a, names[i])) == NULL)
			continue;
		w = snprintf(buf + n, buflen - n, "%s: %s\r\n", names[i], v);
		if (w < 0 || (size_t)w >= buflen - n)
			return -1;
		n += (size_t)w;
	}
	return (int)n;
}

char *
entry_base_url(const char *url, const char *const *suffixes)
{
	size_t	n = strlen(url), k, i;
	char	*u;

	while (n > 0 && url[n - 1] == '/')
		n--;
	for (i = 0; suffixes != NULL && suffixes[i] != NULL; i++) {
		k = strlen(suffixes[i]);
		if (n > k && strncmp(url + n - k, suffixes[i], k) == 0) {
			n -= k;
			break;
		}
	}
	if ((u = malloc(n + 1)) != NULL) {
		memcpy(u, url, n);
		u[n] = '\0';
	}
	return u;
}

int
entry_request_text(const uint8_t *req, size_t len, char *buf, size_t buflen)
{
	size_t	i;

	if (req == NULL || len == 0 || len >= buflen)
		return -1;
	for (i = 0; i < len; i++)
		if (req[i] < 0x21 || req[i] > 0x7e)
			return -1;
	memcpy(buf, req, len);
	buf[len] = '\0';
	return 0;
}

void
entry_time_str(char buf[32], int64_t t)
{
	struct tm	tm;
	time_t		tt = (time_t)t;

	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, 32, "@%lld", (long long)t);
}
