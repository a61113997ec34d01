/* Configuration: built-in defaults, the JSON file with key positions, setters. */
#include <config.h>	/* autoconf; "config.h" here would be proxy/config.h */

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "proxy/config.h"

#define CONFIG_MAX_FILE_BYTES	(1024 * 1024)
#define CONFIG_MAX_DEPTH	8
#define CONFIG_MAX_NAME_BYTES	255
/* Cap on the "at least" intervals, so that now + interval cannot overflow. */
#define CONFIG_MAX_INTERVAL_S	315360000L	/* ten years */
#define MIB			((size_t)1024 * 1024)

const char *const config_mode_str[2] = {
	[MODE_CACHE_FIRST] = "cache_first",
	[MODE_UPSTREAM_FIRST] = "upstream_first",
};

static const char *const log_level_str[] = { "info", "debug", "trace" };

/* ---- lists and strings ------------------------------------------------- */

static void
strlist_free(char **list, size_t n)
{
	size_t	i;

	if (list == NULL)
		return;
	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

static void
upstreams_free(struct config_upstream *u, size_t n)
{
	size_t	i;

	if (u == NULL)
		return;
	for (i = 0; i < n; i++) {
		free(u[i].url);
		free(u[i].name);
	}
	free(u);
}

static void
service_free(struct config_service *s)
{
	upstreams_free(s->upstreams, s->nupstreams);
	strlist_free(s->anchors, s->nanchors);
	strlist_free(s->intermediates, s->nintermediates);
	strlist_free(s->paths, s->npaths);
	free(s->api_key_file);
	memset(s, 0, sizeof(*s));
}

void
config_free(struct config *cfg)
{
	if (cfg == NULL)
		return;
	strlist_free(cfg->listen, cfg->nlisten);
	free(cfg->cache_dir);
	service_free(&cfg->ocsp);
	service_free(&cfg->rim);
	service_free(&cfg->pccs);
	service_free(&cfg->amd_kds);
	memset(cfg, 0, sizeof(*cfg));
}

int
config_set_str(char **dst, const char *val)
{
	char	*s = NULL;

	if (val != NULL && (s = strdup(val)) == NULL)
		return -1;
	free(*dst);
	*dst = s;
	return 0;
}

int
config_set_strlist(char ***list, size_t *n, char *const *vals, size_t nvals)
{
	char	**l = NULL;
	size_t	  i;

	if (nvals > 0) {
		if ((l = calloc(nvals, sizeof(*l))) == NULL)
			return -1;
		for (i = 0; i < nvals; i++) {
			if ((l[i] = strdup(vals[i])) == NULL) {
				strlist_free(l, i);
				return -1;
			}
		}
	}
	strlist_free(*list, *n);
	*list = l;
	*n = nvals;
	return 0;
}

/* Copy s into buf for a message: printable ASCII kept, the rest as \xNN. */
static const char *
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

static void
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
 * Split "HOST:PORT" or "[V6]:PORT". Returns 0 and sets the host span
 * (without brackets) and port, or -1 with a reason.
 */
static int
hostport(const char *s, size_t len, const char **host, size_t *hostlen,
    int *port, int need_port, char *r, size_t rlen)
{
	const char	*end = s + len, *h, *he, *p;
	int		 v6 = 0;

	if (len > 0 && s[0] == '[') {
		v6 = 1;
		h = s + 1;
		for (he = h; he < end && *he != ']'; he++)
			;
		if (he == end) {
			reason(r, rlen, "unterminated [ in IPv6 address");
			return -1;
		}
		p = he + 1;
		if (p < end && *p != ':') {
			reason(r, rlen, "expected : after ]");
			return -1;
		}
	} else {
		h = s;
		for (he = h; he < end && *he != ':'; he++)
			;
		p = he;
		if (p < end &&
		    memchr(p + 1, ':', (size_t)(end - p - 1)) != NULL) {
			reason(r, rlen,
			    "IPv6 addresses need brackets, as in [::1]:8090");
			return -1;
		}
	}
	if (he == h) {
		reason(r, rlen, "no host");
		return -1;
	}
	for (; h < he; h++)
		if (!(v6 ? ip6_char((unsigned char)*h) :
		    host_char((unsigned char)*h))) {
			reason(r, rlen, "invalid character in host");
			return -1;
		}
	*host = v6 ? s + 1 : s;
	*hostlen = (size_t)(he - *host);
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

static int
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
static int
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
static int
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

static int
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

/* Fill one upstream; on error nothing is left allocated in *u. */
static int
upstream_set(struct config_upstream *u, const char *url, const char *name,
    int verify_nonce, char *r, size_t rlen)
{
	char	def[CONFIG_MAX_NAME_BYTES + 1];

	memset(u, 0, sizeof(*u));
	if (url_check(url, def, sizeof(def), r, rlen) == -1 ||
	    (name != NULL && name_check(name, r, rlen) == -1)) {
		errno = EINVAL;
		return -1;
	}
	if ((u->url = strdup(url)) == NULL ||
	    (u->name = strdup(name != NULL ? name : def)) == NULL) {
		free(u->url);
		u->url = NULL;
		reason(r, rlen, "out of memory");
		return -1;
	}
	u->verify_nonce = verify_nonce;
	return 0;
}

/* Index of the first earlier upstream with the same name as u[i], or -1. */
static long
upstream_dup(const struct config_upstream *u, size_t i)
{
	size_t	j;

	for (j = 0; j < i; j++)
		if (strcmp(u[j].name, u[i].name) == 0)
			return (long)j;
	return -1;
}

int
config_set_upstreams(struct config_service *svc, char *const *urls, size_t n)
{
	struct config_upstream	*u = NULL;
	size_t			 i, done = 0;
	int			 rv = -1;

	if (n == 0) {
		errno = EINVAL;
		goto out;
	}
	if ((u = calloc(n, sizeof(*u))) == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		if (upstream_set(&u[i], urls[i], NULL, 1, NULL, 0) == -1)
			goto out;
		done++;
		if (upstream_dup(u, i) != -1) {
			errno = EEXIST;
			goto out;
		}
	}
	upstreams_free(svc->upstreams, svc->nupstreams);
	svc->upstreams = u;
	svc->nupstreams = n;
	u = NULL;
	rv = 0;
 out:
	upstreams_free(u, done);
	return rv;
}

/* ---- defaults ------------------------------------------------------------ */

static void
service_defaults(struct config_service *s, const char *upstream)
{
	char	*u[1];

	memset(s, 0, sizeof(*s));
	u[0] = (char *)upstream;
	/* Out of memory leaves no upstream; config_validate reports it. */
	(void)config_set_upstreams(s, u, 1);
	s->mode = MODE_CACHE_FIRST;
	s->hedge_ms = 500;
	s->connect_timeout_ms = 2000;
	s->timeout_ms = 10000;
	s->client_budget_ms = 5000;
	s->skew_s = 60;
	s->refresh.fraction = 0.5;
	s->refresh.jitter = 0.1;
	s->refresh.min_interval_s = 10;
	s->refresh.max_interval_s = 43200;
	s->idle_expire_s = 30L * 24 * 3600;
	s->rate_limit_per_s = 20;
	s->negative_ttl_s = 60;
}

void
config_defaults(struct config *cfg)
{
	char	*l[1] = { (char *)CONFIG_DEFAULT_LISTEN };

	memset(cfg, 0, sizeof(*cfg));
	/* Out of memory leaves fields empty; config_validate reports them. */
	(void)config_set_strlist(&cfg->listen, &cfg->nlisten, l, 1);
	(void)config_set_str(&cfg->cache_dir, CONFIG_DEFAULT_CACHE_DIR);
	cfg->map_size = 1024 * MIB;
	cfg->log_level = 0;
	cfg->max_connections = 0;
	cfg->header_timeout_s = CONFIG_DEFAULT_HEADER_TIMEOUT_S;
	cfg->body_timeout_s = CONFIG_DEFAULT_BODY_TIMEOUT_S;
	cfg->keepalive_timeout_s = CONFIG_DEFAULT_KEEPALIVE_TIMEOUT_S;
	service_defaults(&cfg->ocsp, CONFIG_DEFAULT_OCSP_UPSTREAM);
	service_defaults(&cfg->rim, CONFIG_DEFAULT_RIM_UPSTREAM);
	/* RIMs are version-addressed: kept a month, served stale while upstreams fail. */
	cfg->rim.retention_s = 30L * 24 * 3600;
	service_defaults(&cfg->pccs, CONFIG_DEFAULT_PCCS_UPSTREAM);
	service_defaults(&cfg->amd_kds, CONFIG_DEFAULT_KDS_UPSTREAM);
	/* AMD KDS throttles identical requests to about one per 10 s. */
	cfg->amd_kds.pacing_ms = 10000;
}

/* ---- key positions in the raw text ------------------------------------- */

/*
 * jansson reports positions for syntax errors only. To point at a key or
 * value after parsing, walk the raw text again along a path of keys and
 * array indexes. The text was accepted by jansson, but every step still
 * checks the end of the buffer.
 */
struct pathel {
	const char	*key;	/* NULL: array element */
	size_t		 idx;
};

struct scan {
	const unsigned char	*p;
	const unsigned char	*end;
	int			 line;
	int			 col;
};

struct pos {
	int	line;
	int	col;
};

static void
sc_adv(struct scan *s)
{
	if (s->p >= s->end)
		return;
	if (*s->p == '\n') {
		s->line++;
		s->col = 1;
	} else if ((*s->p & 0xc0) != 0x80)	/* count UTF-8 characters */
		s->col++;
	s->p++;
}

static int
sc_peek(const struct scan *s)
{
	return s->p < s->end ? *s->p : -1;
}

static void
sc_ws(struct scan *s)
{
	int	c;

	while ((c = sc_peek(s)) == ' ' || c == '\t' || c == '\r' || c == '\n')
		sc_adv(s);
}

static long
sc_hex4(struct scan *s)
{
	long	v = 0;
	int	i, c;

	for (i = 0; i < 4; i++) {
		c = sc_peek(s);
		if (c == -1 || !isxdigit(c))
			return -1;
		v = v * 16 + (isdigit(c) ? c - '0' : tolower(c) - 'a' + 10);
		sc_adv(s);
	}
	return v;
}

static size_t
utf8_put(unsigned char *o, long cp)
{
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | (cp >> 18));
	o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Consume a string token; if key is not NULL, set *match when its decoded
 * bytes equal key.
 */
static int
sc_string(struct scan *s, const char *key, int *match)
{
	const unsigned char	*k = (const unsigned char *)key;
	unsigned char		 o[4];
	size_t			 n, i;
	long			 cp, lo;
	int			 c, ok = key != NULL;

	if (sc_peek(s) != '"')
		return -1;
	sc_adv(s);
	for (;;) {
		if ((c = sc_peek(s)) == -1)
			return -1;
		sc_adv(s);
		if (c == '"')
			break;
		n = 1;
		o[0] = (unsigned char)c;
		if (c == '\\') {
			if ((c = sc_peek(s)) == -1)
				return -1;
			sc_adv(s);
			switch (c) {
			case 'b': o[0] = '\b'; break;
			case 'f': o[0] = '\f'; break;
			case 'n': o[0] = '\n'; break;
			case 'r': o[0] = '\r'; break;
			case 't': o[0] = '\t'; break;
			case 'u':
				if ((cp = sc_hex4(s)) == -1)
					return -1;
				if (cp >= 0xd800 && cp <= 0xdbff &&
				    s->end - s->p >= 6 && s->p[0] == '\\' &&
				    s->p[1] == 'u') {
					sc_adv(s);
					sc_adv(s);
					if ((lo = sc_hex4(s)) == -1)
						return -1;
					if (lo >= 0xdc00 && lo <= 0xdfff)
						cp = 0x10000 + ((cp - 0xd800) << 10) +
						    (lo - 0xdc00);
				}
				n = utf8_put(o, cp);
				break;
			default:
				o[0] = (unsigned char)c;	/* " \ / */
				break;
			}
		}
		for (i = 0; ok && i < n; i++) {
			if (*k != '\0' && *k == o[i])
				k++;
			else
				ok = 0;
		}
	}
	if (match != NULL)
		*match = ok && *k == '\0';
	return 0;
}

static int
sc_value(struct scan *s)
{
	int	c, depth = 0;

	sc_ws(s);
	for (;;) {
		if ((c = sc_peek(s)) == -1)
			return depth == 0 ? 0 : -1;
		if (c == '"') {
			if (sc_string(s, NULL, NULL) == -1)
				return -1;
			if (depth == 0)
				return 0;
			continue;
		}
		if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']') {
			if (depth == 0)
				return 0;	/* the container of a scalar ends */
			if (--depth == 0) {
				sc_adv(s);
				return 0;
			}
		} else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' ||
		    c == '\r' || c == '\n'))
			return 0;
		sc_adv(s);
	}
}

/*
 * Find the last element of path: *key is where its key (or, for an array
 * element, the element) starts, *val where its value starts. When a step
 * fails, both hold the deepest position found. Returns 0 or -1.
 */
static int
pos_find(const char *buf, size_t len, const struct pathel *path, size_t n,
    struct pos *key, struct pos *val)
{
	struct scan	s;
	size_t		i, j;
	int		match;

	s.p = (const unsigned char *)buf;
	s.end = s.p + len;
	s.line = s.col = 1;
	sc_ws(&s);
	key->line = val->line = s.line;
	key->col = val->col = s.col;
	for (i = 0; i < n; i++) {
		if (path[i].key != NULL) {
			if (sc_peek(&s) != '{')
				return -1;
			sc_adv(&s);
			for (;;) {
				sc_ws(&s);
				if (sc_peek(&s) != '"')
					return -1;
				key->line = s.line;
				key->col = s.col;
				if (sc_string(&s, path[i].key, &match) == -1)
					return -1;
				sc_ws(&s);
				if (sc_peek(&s) != ':')
					return -1;
				sc_adv(&s);
				sc_ws(&s);
				if (match)
					break;
				if (sc_value(&s) == -1)
					return -1;
				sc_ws(&s);
				if (sc_peek(&s) != ',')
					return -1;
				sc_adv(&s);
			}
		} else {
			if (sc_peek(&s) != '[')
				return -1;
			sc_adv(&s);
			for (j = 0;; j++) {
				sc_ws(&s);
				if (sc_peek(&s) == ']' || sc_peek(&s) == -1)
					return -1;
				if (j == path[i].idx)
					break;
				if (sc_value(&s) == -1)
					return -1;
				sc_ws(&s);
				if (sc_peek(&s) != ',')
					return -1;
				sc_adv(&s);
			}
			key->line = s.line;
			key->col = s.col;
		}
		val->line = s.line;
		val->col = s.col;
	}
	return 0;
}

/* ---- loading ------------------------------------------------------------- */

enum where { AT_KEY, AT_VALUE };

struct ld {
	const char	*name;
	const char	*buf;
	size_t		 len;
	char		*err;
	size_t		 errlen;
	struct pathel	 path[CONFIG_MAX_DEPTH];
	size_t		 depth;
};

static void
ld_push(struct ld *ld, const char *key, size_t idx)
{
	/* The schema is CONFIG_MAX_DEPTH deep at most; deeper keys are unknown. */
	if (ld->depth < CONFIG_MAX_DEPTH) {
		ld->path[ld->depth].key = key;
		ld->path[ld->depth].idx = idx;
	}
	ld->depth++;
}

static void
ld_pop(struct ld *ld)
{
	ld->depth--;
}

/* "a.b[2].c" for the first n elements of the path. */
static void
ld_pathstr(const struct ld *ld, size_t n, char *buf, size_t len)
{
	size_t	i, o = 0;
	int	w;

	buf[0] = '\0';
	for (i = 0; i < n && i < CONFIG_MAX_DEPTH && o < len; i++) {
		if (ld->path[i].key != NULL)
			w = snprintf(buf + o, len - o, "%s%s", i > 0 ? "." : "",
			    ld->path[i].key);
		else
			w = snprintf(buf + o, len - o, "[%zu]", ld->path[i].idx);
		if (w < 0)
			break;
		o += (size_t)w;
	}
}

/*
 * "name:line:col: path: message" at the current path; `shown` elements
 * of the path name the field in the message.
 */
static int __attribute__((format(printf, 4, 5)))
ld_errorp(struct ld *ld, enum where w, size_t shown, const char *fmt, ...)
{
	struct pos	k, v;
	char		path[256], msg[512];
	va_list		ap;
	size_t		n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = ld->depth < CONFIG_MAX_DEPTH ? ld->depth : CONFIG_MAX_DEPTH;
	(void)pos_find(ld->buf, ld->len, ld->path, n, &k, &v);
	if (w == AT_VALUE)
		k = v;
	ld_pathstr(ld, shown, path, sizeof(path));
	if (ld->errlen > 0)
		snprintf(ld->err, ld->errlen, "%s:%d:%d: %s%s%s", ld->name,
		    k.line, k.col, path, path[0] != '\0' ? ": " : "", msg);
	return -1;
}

#define ld_error(ld, w, ...)	ld_errorp((ld), (w), (ld)->depth, __VA_ARGS__)

static int
ld_unknown(struct ld *ld, const char *key)
{
	char	q[128];

	ld_push(ld, key, 0);
	ld_errorp(ld, AT_KEY, ld->depth - 1, "unknown key \"%s\"",
	    quote(q, sizeof(q), key));
	ld_pop(ld);
	return -1;
}

static int
ld_long(struct ld *ld, json_t *v, long min, long max, long *out)
{
	json_int_t	i;

	if (!json_is_integer(v) || (i = json_integer_value(v)) < min || i > max) {
		if (max == LONG_MAX)
			return ld_error(ld, AT_VALUE,
			    "must be an integer of at least %ld", min);
		return ld_error(ld, AT_VALUE,
		    "must be an integer between %ld and %ld", min, max);
	}
	*out = (long)i;
	return 0;
}

/* min_open: the lower bound itself is out of range. */
static int
ld_double(struct ld *ld, json_t *v, double min, int min_open, double max,
    double *out)
{
	double	d;

	if (!json_is_number(v))
		goto bad;
	d = json_number_value(v);
	if (d != d || (min_open ? d <= min : d < min) || d > max)
		goto bad;
	*out = d;
	return 0;
 bad:
	if (min_open)
		return ld_error(ld, AT_VALUE, "must be a number greater than %g",
		    min);
	return ld_error(ld, AT_VALUE, "must be a number between %g and %g",
	    min, max);
}

static int
ld_enum(struct ld *ld, json_t *v, const char *const *names, size_t n,
    const char *choices, int *out)
{
	size_t	i;

	if (json_is_string(v))
		for (i = 0; i < n; i++)
			if (strcmp(json_string_value(v), names[i]) == 0) {
				*out = (int)i;
				return 0;
			}
	return ld_error(ld, AT_VALUE, "must be one of %s", choices);
}

static int
ld_str(struct ld *ld, json_t *v, char **out)
{
	if (!json_is_string(v) || json_string_length(v) == 0)
		return ld_error(ld, AT_VALUE, "must be a non-empty string");
	if (config_set_str(out, json_string_value(v)) == -1)
		return ld_error(ld, AT_VALUE, "out of memory");
	return 0;
}

typedef int str_check_fn(const char *, char *, size_t);

/* A string or a list of strings (allow_string), replacing *list. */
static int
ld_strlist(struct ld *ld, json_t *v, int allow_string, str_check_fn *check,
    char ***list, size_t *n)
{
	char	**l = NULL, r[160], q[128];
	size_t	  i, cnt, done = 0;
	json_t	 *e;
	int	  rv = -1;

	if (json_is_string(v) && allow_string)
		cnt = 1;
	else if (json_is_array(v))
		cnt = json_array_size(v);
	else {
		ld_error(ld, AT_VALUE, allow_string ?
		    "must be a string or a list of strings" :
		    "must be a list of strings");
		goto out;
	}
	if (cnt > 0 && (l = calloc(cnt, sizeof(*l))) == NULL) {
		ld_error(ld, AT_VALUE, "out of memory");
		goto out;
	}
	for (i = 0; i < cnt; i++) {
		e = json_is_array(v) ? json_array_get(v, i) : v;
		if (json_is_array(v))
			ld_push(ld, NULL, i);
		if (!json_is_string(e) || json_string_length(e) == 0)
			ld_error(ld, AT_VALUE, "must be a non-empty string");
		else if (strlen(json_string_value(e)) != json_string_length(e))
			ld_error(ld, AT_VALUE, "must not contain NUL");
		else if (check != NULL &&
		    check(json_string_value(e), r, sizeof(r)) == -1)
			ld_error(ld, AT_VALUE, "\"%s\": %s",
			    quote(q, sizeof(q), json_string_value(e)), r);
		else if ((l[i] = strdup(json_string_value(e))) == NULL)
			ld_error(ld, AT_VALUE, "out of memory");
		else
			done++;
		if (json_is_array(v))
			ld_pop(ld);
		if (done != i + 1)
			goto out;
	}
	strlist_free(*list, *n);
	*list = l;
	*n = cnt;
	l = NULL;
	rv = 0;
 out:
	strlist_free(l, done);
	return rv;
}

/* One element of "upstreams": a URL, or {"url", "name", "verify_nonce"}. */
static int
ld_upstream(struct ld *ld, json_t *e, struct config_upstream *u, int *named)
{
	const char	*k, *url = NULL, *name = NULL;
	json_t		*v;
	char		 r[160], q[128];
	int		 vn = 1;

	*named = 0;
	if (json_is_string(e)) {
		if (upstream_set(u, json_string_value(e), NULL, 1, r,
		    sizeof(r)) == -1)
			return ld_error(ld, AT_VALUE, "\"%s\": %s",
			    quote(q, sizeof(q), json_string_value(e)), r);
		return 0;
	}
	if (!json_is_object(e))
		return ld_error(ld, AT_VALUE, "must be a URL string or an object");
	json_object_foreach(e, k, v) {
		ld_push(ld, k, 0);
		if (strcmp(k, "url") == 0) {
			if (!json_is_string(v))
				return ld_error(ld, AT_VALUE, "must be a string");
			url = json_string_value(v);
		} else if (strcmp(k, "name") == 0) {
			if (!json_is_string(v))
				return ld_error(ld, AT_VALUE, "must be a string");
			name = json_string_value(v);
			if (name_check(name, r, sizeof(r)) == -1)
				return ld_error(ld, AT_VALUE, "\"%s\": %s",
				    quote(q, sizeof(q), name), r);
		} else if (strcmp(k, "verify_nonce") == 0) {
			if (!json_is_boolean(v))
				return ld_error(ld, AT_VALUE,
				    "must be true or false");
			vn = json_is_true(v);
		} else {
			ld_pop(ld);
			return ld_unknown(ld, k);
		}
		ld_pop(ld);
	}
	if (url == NULL)
		return ld_error(ld, AT_VALUE, "missing key \"url\"");
	ld_push(ld, "url", 0);
	if (upstream_set(u, url, name, vn, r, sizeof(r)) == -1) {
		ld_error(ld, AT_VALUE, "\"%s\": %s", quote(q, sizeof(q), url),
		    r);
		ld_pop(ld);
		return -1;
	}
	ld_pop(ld);
	*named = name != NULL;
	return 0;
}

static int
ld_upstreams(struct ld *ld, json_t *v, struct config_service *svc)
{
	struct config_upstream	*u = NULL;
	size_t			 i, cnt, done = 0;
	json_t			*e;
	long			 d;
	int			 named, rv = -1;
	char			 q[128];

	if (json_is_string(v))
		cnt = 1;
	else if (json_is_array(v))
		cnt = json_array_size(v);
	else {
		ld_error(ld, AT_VALUE, "must be a URL string or a list");
		goto out;
	}
	if (cnt == 0) {
		ld_error(ld, AT_VALUE, "at least one upstream is required");
		goto out;
	}
	if ((u = calloc(cnt, sizeof(*u))) == NULL) {
		ld_error(ld, AT_VALUE, "out of memory");
		goto out;
	}
	for (i = 0; i < cnt; i++) {
		e = json_is_array(v) ? json_array_get(v, i) : v;
		if (json_is_array(v))
			ld_push(ld, NULL, i);
		/* On error the path is left as it was at the failing key. */
		if (ld_upstream(ld, e, &u[i], &named) == -1)
			goto out;
		done++;
		if ((d = upstream_dup(u, i)) != -1) {
			if (named)
				ld_push(ld, "name", 0);
			else if (json_is_object(e))
				ld_push(ld, "url", 0);
			ld_error(ld, AT_VALUE, "duplicate upstream name \"%s\" "
			    "(also used by upstreams[%ld])",
			    quote(q, sizeof(q), u[i].name), d);
			goto out;
		}
		if (json_is_array(v))
			ld_pop(ld);
	}
	upstreams_free(svc->upstreams, svc->nupstreams);
	svc->upstreams = u;
	svc->nupstreams = cnt;
	u = NULL;
	rv = 0;
 out:
	upstreams_free(u, done);
	return rv;
}

static int
ld_refresh(struct ld *ld, json_t *obj, struct config_refresh *r)
{
	const char	*k;
	json_t		*v;
	int		 rv;

	if (!json_is_object(obj))
		return ld_error(ld, AT_VALUE, "must be an object");
	json_object_foreach(obj, k, v) {
		ld_push(ld, k, 0);
		if (strcmp(k, "fraction") == 0)
			rv = ld_double(ld, v, 0.05, 0, 0.95, &r->fraction);
		else if (strcmp(k, "jitter") == 0)
			rv = ld_double(ld, v, 0, 0, 0.5, &r->jitter);
		else if (strcmp(k, "min_interval_s") == 0)
			rv = ld_long(ld, v, 1, CONFIG_MAX_INTERVAL_S,
			    &r->min_interval_s);
		else if (strcmp(k, "max_interval_s") == 0)
			rv = ld_long(ld, v, 1, CONFIG_MAX_INTERVAL_S,
			    &r->max_interval_s);
		else {
			ld_pop(ld);
			return ld_unknown(ld, k);
		}
		if (rv == -1)
			return -1;
		ld_pop(ld);
	}
	if (r->max_interval_s < r->min_interval_s) {
		if (json_object_get(obj, "max_interval_s") != NULL) {
			ld_push(ld, "max_interval_s", 0);
			return ld_error(ld, AT_VALUE, "must not be less than "
			    "min_interval_s (%ld)", r->min_interval_s);
		}
		ld_push(ld, "min_interval_s", 0);
		return ld_error(ld, AT_VALUE, "must not exceed max_interval_s "
		    "(%ld)", r->max_interval_s);
	}
	return 0;
}

/* Which service an object configures: some keys belong to one only. */
enum cfg_svc { CFG_OCSP, CFG_RIM, CFG_PCCS, CFG_KDS };

static int
ld_service(struct ld *ld, json_t *obj, struct config_service *s, enum cfg_svc which)
{
	const char	*k;
	json_t		*v;
	int		 mode = 0, rv;

	if (!json_is_object(obj))
		return ld_error(ld, AT_VALUE, "must be an object");
	json_object_foreach(obj, k, v) {
		ld_push(ld, k, 0);
		if (strcmp(k, "upstreams") == 0)
			rv = ld_upstreams(ld, v, s);
		else if (strcmp(k, "anchors") == 0 &&
		    (which == CFG_OCSP || which == CFG_RIM))
			rv = ld_strlist(ld, v, 1, NULL, &s->anchors, &s->nanchors);
		else if (strcmp(k, "intermediates") == 0 && which == CFG_OCSP)
			rv = ld_strlist(ld, v, 1, NULL, &s->intermediates,
			    &s->nintermediates);
		else if (strcmp(k, "paths") == 0 && which == CFG_OCSP)
			rv = ld_strlist(ld, v, 0, path_check, &s->paths,
			    &s->npaths);
		else if (strcmp(k, "mode") == 0) {
			rv = ld_enum(ld, v, config_mode_str, 2,
			    "\"cache_first\", \"upstream_first\"", &mode);
			if (rv == 0)
				s->mode = (enum config_mode)mode;
		} else if (strcmp(k, "hedge_ms") == 0)
			rv = ld_long(ld, v, 0, 60000, &s->hedge_ms);
		else if (strcmp(k, "connect_timeout_ms") == 0)
			rv = ld_long(ld, v, 1, 60000, &s->connect_timeout_ms);
		else if (strcmp(k, "timeout_ms") == 0)
			rv = ld_long(ld, v, 1, 300000, &s->timeout_ms);
		else if (strcmp(k, "client_budget_ms") == 0)
			/* NVAT gives up on OCSP after 30 s: answer well before. */
			rv = ld_long(ld, v, 1, 25000, &s->client_budget_ms);
		else if (strcmp(k, "skew_s") == 0)
			rv = ld_long(ld, v, 0, 3600, &s->skew_s);
		else if (strcmp(k, "refresh") == 0)
			rv = ld_refresh(ld, v, &s->refresh);
		else if (strcmp(k, "idle_expire_s") == 0)
			rv = ld_long(ld, v, 60, CONFIG_MAX_INTERVAL_S,
			    &s->idle_expire_s);
		else if (strcmp(k, "rate_limit_per_s") == 0)
			rv = ld_double(ld, v, 0, 1, DBL_MAX,
			    &s->rate_limit_per_s);
		else if (strcmp(k, "shuffle") == 0) {
			if (!json_is_boolean(v))
				rv = ld_error(ld, AT_VALUE, "must be true or false");
			else {
				s->shuffle = json_is_true(v);
				rv = 0;
			}
		} else if (strcmp(k, "negative_ttl_s") == 0)
			rv = ld_long(ld, v, 0, 3600, &s->negative_ttl_s);
		else if (strcmp(k, "pacing_ms") == 0)
			rv = ld_long(ld, v, 0, 600000, &s->pacing_ms);
		else if (strcmp(k, "retention_s") == 0 && which == CFG_RIM)
			rv = ld_long(ld, v, 0, CONFIG_MAX_INTERVAL_S, &s->retention_s);
		else if (which == CFG_PCCS && strcmp(k, "api_key_file") == 0)
			rv = ld_str(ld, v, &s->api_key_file);
		else {
			ld_pop(ld);
			return ld_unknown(ld, k);
		}
		if (rv == -1)
			return -1;
		ld_pop(ld);
	}
	return 0;
}

static int
ld_root(struct ld *ld, json_t *root, struct config *cfg)
{
	const char	*k;
	json_t		*v;
	long		 mb = 0;
	int		 lvl = 0, rv;

	if (!json_is_object(root))
		return ld_error(ld, AT_VALUE, "the top level must be an object");
	json_object_foreach(root, k, v) {
		ld_push(ld, k, 0);
		if (strcmp(k, "listen") == 0)
			rv = ld_strlist(ld, v, 1, listen_check, &cfg->listen,
			    &cfg->nlisten);
		else if (strcmp(k, "cache_dir") == 0)
			rv = ld_str(ld, v, &cfg->cache_dir);
		else if (strcmp(k, "map_size_mb") == 0) {
			rv = ld_long(ld, v, 1,
			    SIZE_MAX / MIB > LONG_MAX ? LONG_MAX :
			    (long)(SIZE_MAX / MIB), &mb);
			if (rv == 0)
				cfg->map_size = (size_t)mb * MIB;
		} else if (strcmp(k, "log_level") == 0) {
			rv = ld_enum(ld, v, log_level_str, 3,
			    "\"info\", \"debug\", \"trace\"", &lvl);
			if (rv == 0)
				cfg->log_level = lvl;
		} else if (strcmp(k, "max_connections") == 0)
			rv = ld_long(ld, v, 0, CONFIG_MAX_CONNECTIONS,
			    &cfg->max_connections);
		else if (strcmp(k, "header_timeout_s") == 0)
			rv = ld_long(ld, v, 1, CONFIG_MAX_TIMEOUT_S,
			    &cfg->header_timeout_s);
		else if (strcmp(k, "body_timeout_s") == 0)
			rv = ld_long(ld, v, 1, CONFIG_MAX_TIMEOUT_S,
			    &cfg->body_timeout_s);
		else if (strcmp(k, "keepalive_timeout_s") == 0)
			rv = ld_long(ld, v, 1, CONFIG_MAX_TIMEOUT_S,
			    &cfg->keepalive_timeout_s);
		else if (strcmp(k, "ocsp") == 0)
			rv = ld_service(ld, v, &cfg->ocsp, CFG_OCSP);
		else if (strcmp(k, "rim") == 0)
			rv = ld_service(ld, v, &cfg->rim, CFG_RIM);
		else if (strcmp(k, "pccs") == 0)
			rv = ld_service(ld, v, &cfg->pccs, CFG_PCCS);
		else if (strcmp(k, "amd_kds") == 0)
			rv = ld_service(ld, v, &cfg->amd_kds, CFG_KDS);
		else {
			ld_pop(ld);
			return ld_unknown(ld, k);
		}
		if (rv == -1)
			return -1;
		ld_pop(ld);
	}
	return 0;
}

int
config_load_buffer(struct config *cfg, const char *name, const char *buf,
    size_t len, char *err, size_t errlen)
{
	struct ld	 ld;
	json_error_t	 je;
	json_t		*root;
	int		 rv = -1;

	memset(&ld, 0, sizeof(ld));
	ld.name = name;
	ld.buf = buf;
	ld.len = len;
	ld.err = err;
	ld.errlen = errlen;
	if (errlen > 0)
		err[0] = '\0';
	if ((root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		if (errlen > 0)
			snprintf(err, errlen, "%s:%d:%d: %s%s", name,
			    je.line > 0 ? je.line : 1,
			    je.column > 0 ? je.column : 1,
			    json_error_code(&je) == json_error_duplicate_key ?
			    "" : "syntax error: ", je.text);
		goto out;
	}
	rv = ld_root(&ld, root, cfg);
 out:
	json_decref(root);
	return rv;
}

int
config_load_file(struct config *cfg, const char *path, char *err,
    size_t errlen)
{
	FILE	*f = NULL;
	char	*buf = NULL;
	size_t	 len;
	int	 rv = -1;

	if ((f = fopen(path, "r")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	if ((buf = malloc(CONFIG_MAX_FILE_BYTES + 1)) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	len = fread(buf, 1, CONFIG_MAX_FILE_BYTES + 1, f);
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		goto out;
	}
	if (len > CONFIG_MAX_FILE_BYTES) {
		snprintf(err, errlen, "%s: larger than %d bytes", path,
		    CONFIG_MAX_FILE_BYTES);
		goto out;
	}
	rv = config_load_buffer(cfg, path, buf, len, err, errlen);
 out:
	free(buf);
	if (f != NULL)
		fclose(f);
	return rv;
}

/* ---- checks after the command line ------------------------------------- */

static int
service_validate(const struct config_service *s, const char *name, char *err,
    size_t errlen)
{
	char	r[160], q[128];
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

int
config_validate(const struct config *cfg, char *err, size_t errlen)
{
	char	r[160], q[128];
	size_t	i;

	if (cfg->nlisten == 0) {
		snprintf(err, errlen, "listen: at least one address is required");
		return -1;
	}
	for (i = 0; i < cfg->nlisten; i++)
		if (listen_check(cfg->listen[i], r, sizeof(r)) == -1) {
			snprintf(err, errlen, "listen[%zu]: \"%s\": %s", i,
			    quote(q, sizeof(q), cfg->listen[i]), r);
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
	if (timeout_check(cfg->header_timeout_s, "header_timeout_s", err, errlen) == -1 ||
	    timeout_check(cfg->body_timeout_s, "body_timeout_s", err, errlen) == -1 ||
	    timeout_check(cfg->keepalive_timeout_s, "keepalive_timeout_s", err,
	    errlen) == -1)
		return -1;
	if (service_validate(&cfg->ocsp, "ocsp", err, errlen) == -1 ||
	    service_validate(&cfg->rim, "rim", err, errlen) == -1 ||
	    service_validate(&cfg->pccs, "pccs", err, errlen) == -1 ||
	    service_validate(&cfg->amd_kds, "amd_kds", err, errlen) == -1)
		return -1;
	return 0;
}
