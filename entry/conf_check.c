/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration's checks: the syntax of each value (HOST:PORT, URLs, names, CIDRs, files, paths), and the whole after the command line. */
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

/* ---- checks after the command line ------------------------------------- */

static int
service_validate(const struct config_service *s, const char *name, char *err,
    size_t errlen)
{
	char	r[CONFIG_REASON_BYTES], q[CONFIG_QUOTE_BYTES];
	size_t	i;

	if (s->nupstreams == 0) {
		snprintf(err, errlen, "%s.upstreams: at least one upstream is "
		    "required", name);
		return -1;
	}
	for (i = 0; i < s->nupstreams; i++)
		if (url_check(s->upstreams[i].url, NULL, 0, r, sizeof(r)) == -1) {
			snprintf(err, errlen, "%s.upstreams[%zu]: \"%s\": %s", name,
			    i, quote(q, sizeof(q), s->upstreams[i].url), r);
			return -1;
		}
	if (s->refresh.max_interval_s < s->refresh.min_interval_s) {
		snprintf(err, errlen, "%s.refresh.max_interval_s: must not be less "
		    "than min_interval_s", name);
		return -1;
	}
	return 0;
}

static int
timeout_check(long v, const char *name, char *err, size_t errlen)
{
	if (v >= 1 && v <= CONFIG_MAX_TIMEOUT_S)
		return 0;
	snprintf(err, errlen, "%s: must be between 1 and %d", name,
	    CONFIG_MAX_TIMEOUT_S);
	return -1;
}

/* listen or admin_listen: at most CONFIG_MAX_LISTEN HOST:PORT entries. */
static int
addr_list_validate(const char *key, char *const *list, size_t n, char *err,
    size_t errlen)
{
	char	r[CONFIG_REASON_BYTES], q[CONFIG_QUOTE_BYTES];
	size_t	i;

	if (n > CONFIG_MAX_LISTEN) {
		snprintf(err, errlen, "%s: %zu addresses, at most %d", key, n,
		    CONFIG_MAX_LISTEN);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (listen_check(list[i], r, sizeof(r)) == -1) {
			snprintf(err, errlen, "%s[%zu]: \"%s\": %s", key, i,
			    quote(q, sizeof(q), list[i]), r);
			return -1;
		}
	return 0;
}

/* The top level's values, as the flags may have changed them. */
static int
root_validate(const struct config *cfg, char *err, size_t errlen)
{
	char	q[CONFIG_QUOTE_BYTES];
	size_t	i;

	if (cfg->nlisten == 0) {
		snprintf(err, errlen, "listen: at least one address is required");
		return -1;
	}
	if (addr_list_validate("listen", cfg->listen, cfg->nlisten, err,
	    errlen) == -1 || addr_list_validate("admin_listen",
	    cfg->admin_listen, cfg->nadmin_listen, err, errlen) == -1)
		return -1;
	for (i = 0; cfg->listen_tls != NULL && i < cfg->nlisten; i++)
		if ((cfg->listen_tls[i].cert == NULL) !=
		    (cfg->listen_tls[i].key == NULL)) {
			snprintf(err, errlen, "listen[%zu]: \"%s\": TLS needs both "
			    "a certificate and a key file", i,
			    quote(q, sizeof(q), cfg->listen[i]));
			return -1;
		}
	if (cfg->cache_dir == NULL || cfg->cache_dir[0] == '\0') {
		snprintf(err, errlen, "cache_dir: must not be empty");
		return -1;
	}
	if (cfg->map_size == 0) {
		snprintf(err, errlen, "map_size_mb: must be at least 1");
		return -1;
	}
	if (cfg->log_level < 0 || cfg->log_level > 2) {
		snprintf(err, errlen, "log_level: must be 0, 1 or 2");
		return -1;
	}
	if (cfg->max_connections < 0 || cfg->max_connections > CONFIG_MAX_CONNECTIONS) {
		snprintf(err, errlen, "max_connections: must be between 0 and %d",
		    CONFIG_MAX_CONNECTIONS);
		return -1;
	}
	return 0;
}

int
config_validate(const struct config *cfg, char *err, size_t errlen)
{
	int	svc;

	if (root_validate(cfg, err, errlen) == -1 ||
	    timeout_check(cfg->header_timeout_s, "header_timeout_s", err,
	    errlen) == -1 ||
	    timeout_check(cfg->body_timeout_s, "body_timeout_s", err,
	    errlen) == -1 ||
	    timeout_check(cfg->keepalive_timeout_s, "keepalive_timeout_s", err,
	    errlen) == -1)
		return -1;
	for (svc = KIND_FIRST; svc < CACHE_KIND_MAX; svc++)
		if (service_validate(config_service(cfg, svc),
		    kind_section[svc], err, errlen) == -1)
			return -1;
	return 0;
}
