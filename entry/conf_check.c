/* SPDX-License-Identifier: Apache-2.0 */
/* The syntax of configuration values (HOST:PORT, URLs, names, CIDRs, files, paths) and the reason a value is refused. */
#include <config.h>	/* autoconf's; "config.h" here would be entry/conf.h */

#include <sys/socket.h>

#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "entry/conf.h"
#include "entry/conf_int.h"

/* Copy s into buf for a message: printable ASCII kept, the rest as \xNN. */
const char *
quote(char *buf, size_t len, const char *s)
{
	size_t	o = 0;
	int	w;

	if (len == 0)
		return "";
	for (; *s != '\0' && o + 1 < len; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			buf[o++] = (char)c;
			continue;
		}
		if (o + 5 > len)
			break;
		if (c == '"' || c == '\\')
			w = snprintf(buf + o, len - o, "\\%c", c);
		else
			w = snprintf(buf + o, len - o, "\\x%02x", c);
		o += (size_t)w;
	}
	buf[o] = '\0';
	return buf;
}

void
reason(char *r, size_t rlen, const char *msg)
{
	if (rlen > 0)
		snprintf(r, rlen, "%s", msg);
}

/* ---- syntax of values ---------------------------------------------------- */

static int
parse_port(const char *p, size_t n)
{
	long	v = 0;
	size_t	i;

	if (n == 0 || n > 5)
		return -1;
	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)p[i]))
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v >= 1 && v <= 65535 ? (int)v : -1;
}

static int
host_char(int c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_';
}

static int
ip6_char(int c)
{
	return isxdigit(c) || c == ':' || c == '.';
}

/*
 * The host span of "HOST[:PORT]" or "[V6][:PORT]" in s..end: *h, *he (the
 * host without brackets), *p (the ':' before the port, or end), *v6.
 */
static int
hostport_span(const char *s, const char *end, const char **h,
    const char **he, const char **p, int *v6, char *r, size_t rlen)
{
	*v6 = end > s && s[0] == '[';
	*h = s + *v6;
	if (*v6) {
		for (*he = *h; *he < end && **he != ']'; (*he)++)
			;
		if (*he == end) {
			reason(r, rlen, "unterminated [ in IPv6 address");
			return -1;
		}
		*p = *he + 1;
		if (*p < end && **p != ':') {
			reason(r, rlen, "expected : after ]");
			return -1;
		}
		return 0;
	}
	for (*he = *h; *he < end && **he != ':'; (*he)++)
		;
	*p = *he;
	if (*p < end && memchr(*p + 1, ':', (size_t)(end - *p - 1)) != NULL) {
		reason(r, rlen, "IPv6 addresses need brackets, as in [::1]:8090");
		return -1;
	}
	return 0;
}

/*
 * Split "HOST:PORT" or "[V6]:PORT". Returns 0 and sets the host span
 * (without brackets) and port, or -1 with a reason.
 */
static int
hostport(const char *s, size_t len, const char **host, size_t *hostlen,
    int *port, int need_port, char *r, size_t rlen)
{
	const char	*end = s + len, *h, *he, *p;
	int		 v6;

	if (hostport_span(s, end, &h, &he, &p, &v6, r, rlen) == -1)
		return -1;
	if (he == h) {
		reason(r, rlen, "no host");
		return -1;
	}
	*host = h;
	*hostlen = (size_t)(he - h);
	for (; h < he; h++)
		if (!(v6 ? ip6_char((unsigned char)*h) :
		    host_char((unsigned char)*h))) {
			reason(r, rlen, "invalid character in host");
			return -1;
		}
	*port = 0;
	if (p == end) {
		if (need_port) {
			reason(r, rlen, "expected HOST:PORT");
			return -1;
		}
		return 0;
	}
	if ((*port = parse_port(p + 1, (size_t)(end - p - 1))) == -1) {
		reason(r, rlen, "port must be a number between 1 and 65535");
		return -1;
	}
	return 0;
}

int
listen_check(const char *s, char *r, size_t rlen)
{
	const char	*h;
	size_t		 hl;
	int		 port;

	if (strchr(s, ':') == NULL) {
		reason(r, rlen, "expected HOST:PORT");
		return -1;
	}
	return hostport(s, strlen(s), &h, &hl, &port, 1, r, rlen);
}

int
config_split_listen(const char *s, char *host, size_t hostlen, int *port)
{
	const char	*h;
	size_t		 hl;

	if (strchr(s, ':') == NULL ||
	    hostport(s, strlen(s), &h, &hl, port, 1, NULL, 0) == -1)
		return -1;
	if (hl >= hostlen)
		return -1;
	memcpy(host, h, hl);
	host[hl] = '\0';
	return 0;
}

/*
 * http:// or https://, then a host, an optional port, and anything from
 * the first / ? or #. The authority (host[:port] as written) goes to name.
 */
int
url_check(const char *url, char *name, size_t namelen, char *r, size_t rlen)
{
	const char	*a, *ae, *h, *c;
	size_t		 hl;
	int		 port;

	if (strncasecmp(url, "https://", 8) == 0)
		a = url + 8;
	else if (strncasecmp(url, "http://", 7) == 0)
		a = url + 7;
	else {
		reason(r, rlen, "URL must start with http:// or https://");
		return -1;
	}
	for (c = url; *c != '\0'; c++)
		if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f) {
			reason(r, rlen, "URL contains a space or a non-ASCII "
			    "or control character");
			return -1;
		}
	ae = a + strcspn(a, "/?#");
	if (ae == a) {
		reason(r, rlen, "URL has no host");
		return -1;
	}
	if (memchr(a, '@', (size_t)(ae - a)) != NULL) {
		reason(r, rlen, "URL must not contain user information");
		return -1;
	}
	if (hostport(a, (size_t)(ae - a), &h, &hl, &port, 0, r, rlen) == -1) {
		if (rlen > 0 && strcmp(r, "no host") == 0)
			reason(r, rlen, "URL has no host");
		return -1;
	}
	if (name != NULL) {
		if ((size_t)(ae - a) >= namelen) {
			reason(r, rlen, "URL host is too long");
			return -1;
		}
		memcpy(name, a, (size_t)(ae - a));
		name[ae - a] = '\0';
	}
	return 0;
}

int
config_check_url(const char *url, char *err, size_t errlen)
{
	char	name[CONFIG_MAX_NAME_BYTES + 1];

	return url_check(url, name, sizeof(name), err, errlen);
}

/* Names end up in logs and metric labels: keep them plain. */
int
name_check(const char *s, char *r, size_t rlen)
{
	const char	*p;

	if (*s == '\0' || strlen(s) > CONFIG_MAX_NAME_BYTES) {
		reason(r, rlen, "name must have 1 to 255 characters");
		return -1;
	}
	for (p = s; *p != '\0'; p++)
		if (!host_char((unsigned char)*p) && strchr(":[]", *p) == NULL) {
			reason(r, rlen, "name may contain only letters, digits "
			    "and . _ - : [ ]");
			return -1;
		}
	return 0;
}

/* "ADDRESS" or "ADDRESS/PREFIX", IPv4 or IPv6 (trusted_proxies). */
int
config_parse_cidr(const char *s, struct config_cidr *out)
{
	char		 a[INET6_ADDRSTRLEN];
	const char	*slash = strchr(s, '/');
	size_t		 n = slash != NULL ? (size_t)(slash - s) : strlen(s);
	char		*end;
	long		 p;

	memset(out, 0, sizeof(*out));
	if (n == 0 || n >= sizeof(a))
		return -1;
	memcpy(a, s, n);
	a[n] = '\0';
	if (inet_pton(AF_INET, a, out->addr) == 1) {
		out->family = AF_INET;
		out->prefix = 32;
	} else if (inet_pton(AF_INET6, a, out->addr) == 1) {
		out->family = AF_INET6;
		out->prefix = 128;
	} else
		return -1;
	if (slash == NULL)
		return 0;
	if (!isdigit((unsigned char)slash[1]))
		return -1;
	errno = 0;
	p = strtol(slash + 1, &end, 10);
	if (errno != 0 || *end != '\0' || p < 0 || p > (long)out->prefix)
		return -1;
	out->prefix = (unsigned)p;
	return 0;
}

int
cidr_check(const char *s, char *r, size_t rlen)
{
	struct config_cidr	c;

	if (config_parse_cidr(s, &c) == -1) {
		reason(r, rlen, "expected an IP address or ADDRESS/PREFIX");
		return -1;
	}
	return 0;
}

/* A file name (its content is read by stapled -n and at start). */
int
file_check(const char *s, char *r, size_t rlen)
{
	if (s[0] == '\0') {
		reason(r, rlen, "must name a file");
		return -1;
	}
	return 0;
}

int
path_check(const char *s, char *r, size_t rlen)
{
	const char	*p;

	if (s[0] != '/') {
		reason(r, rlen, "path must start with /");
		return -1;
	}
	for (p = s; *p != '\0'; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p == 0x7f ||
		    *p == '?' || *p == '#') {
			reason(r, rlen, "path must not contain spaces, control "
			    "characters, ? or #");
			return -1;
		}
	return 0;
}
