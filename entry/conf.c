/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration: one key table (types, ranges, services, defaults), the JSON reader over it, the setters and checks. */
#include <config.h>	/* autoconf's; "config.h" here would be entry/conf.h */

#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "cache/reader.h"
#include "entry/conf.h"
#include "entry/conf_pos.h"

#define CONFIG_MAX_DEPTH	8
#define CONFIG_MAX_NAME_BYTES	255
/* Cap on the "at least" intervals, so that now + interval cannot overflow. */
#define CONFIG_MAX_INTERVAL_S	315360000L	/* ten years */
#define MIB			((size_t)1024 * 1024)
#define CONFIG_MAX_MAP_MB	(SIZE_MAX / MIB > LONG_MAX ? LONG_MAX : \
				    (long)(SIZE_MAX / MIB))
#define CONFIG_REASON_BYTES	160	/* why a value is refused */
#define CONFIG_QUOTE_BYTES	128	/* a value quoted in a message */

/* Where each service's section lives in struct config. */
static const size_t svc_off[CACHE_KIND_MAX] = {
	[CACHE_KIND_OCSP] = offsetof(struct config, ocsp),
	[CACHE_KIND_RIM] = offsetof(struct config, rim),
	[CACHE_KIND_PCCS] = offsetof(struct config, pccs),
	[CACHE_KIND_KDS] = offsetof(struct config, amd_kds),
};

const char *const config_mode_str[2] = {
	[CONFIG_MODE_CACHE_FIRST] = "cache_first",
	[CONFIG_MODE_UPSTREAM_FIRST] = "upstream_first",
};
const char *const config_offload_str[CONFIG_OFFLOAD_MAX] = {
	[CONFIG_OFFLOAD_DISK] = "disk",
	[CONFIG_OFFLOAD_ALWAYS] = "always",
};

static const char *const log_level_str[] = { "info", "debug", "trace" };

/* The enum keys are read and written as int. */
_Static_assert(sizeof(enum config_mode) == sizeof(int), "mode is an int");

const struct config_service *
config_service(const struct config *cfg, enum cache_kind svc)
{
	if (cfg == NULL || (int)svc < KIND_FIRST || svc >= CACHE_KIND_MAX)
		return NULL;
	return (const struct config_service *)((const char *)cfg +
	    svc_off[svc]);
}

static struct config_service *
section(struct config *cfg, int svc)
{
	return (struct config_service *)((char *)cfg + svc_off[svc]);
}

long
config_retention_s(const struct config_service *s)
{
	return s->retention_s > 0 ? s->retention_s :
	    CONFIG_DEFAULT_RIM_RETENTION_S;
}

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
listen_tls_free(struct config_tls *t, size_t n)
{
	size_t	i;

	if (t == NULL)
		return;
	for (i = 0; i < n; i++) {
		free(t[i].cert);
		free(t[i].key);
		free(t[i].client_ca);
	}
	free(t);
}

/*
 * Replace cfg's listen with l and t (both n long, taken over). t is
 * dropped when no element has TLS, so that a configuration without TLS
 * has listen_tls NULL.
 */
static void
listen_replace(struct config *cfg, char **l, struct config_tls *t, size_t n)
{
	size_t	i;

	for (i = 0; t != NULL && i < n && t[i].cert == NULL; i++)
		;
	if (t != NULL && i == n) {
		listen_tls_free(t, n);
		t = NULL;
	}
	strlist_free(cfg->listen, cfg->nlisten);
	listen_tls_free(cfg->listen_tls, cfg->nlisten);
	cfg->listen = l;
	cfg->listen_tls = t;
	cfg->nlisten = n;
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
	int	svc;

	if (cfg == NULL)
		return;
	strlist_free(cfg->admin_listen, cfg->nadmin_listen);
	listen_replace(cfg, NULL, NULL, 0);
	strlist_free(cfg->trusted_proxies, cfg->ntrusted_proxies);
	free(cfg->cache_dir);
	for (svc = CACHE_KIND_OCSP; svc < CACHE_KIND_MAX; svc++)
		service_free(section(cfg, svc));
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

/* Copy one TLS listener's files; 0 or -1 (out of memory, nothing left allocated). */
static int
tls_copy(struct config_tls *dst, const struct config_tls *src)
{
	memset(dst, 0, sizeof(*dst));
	if (config_set_str(&dst->cert, src->cert) == -1 ||
	    config_set_str(&dst->key, src->key) == -1 ||
	    config_set_str(&dst->client_ca, src->client_ca) == -1) {
		free(dst->cert);
		free(dst->key);
		free(dst->client_ca);
		memset(dst, 0, sizeof(*dst));
		return -1;
	}
	return 0;
}

int
config_set_listen(struct config *cfg, char *const *plain, size_t nplain,
    char *const *tls_addrs, size_t ntls, const struct config_tls *tls)
{
	char			**l = NULL;
	struct config_tls	 *t = NULL;
	size_t			  i, n = nplain + ntls, done = 0;

	if (n > 0 && ((l = calloc(n, sizeof(*l))) == NULL ||
	    (t = calloc(n, sizeof(*t))) == NULL))
		goto fail;
	for (i = 0; i < n; i++, done++) {
		if ((l[i] = strdup(i < nplain ? plain[i] :
		    tls_addrs[i - nplain])) == NULL)
			goto fail;
		if (i >= nplain && tls_copy(&t[i], tls) == -1) {
			free(l[i]);
			goto fail;
		}
	}
	listen_replace(cfg, l, t, n);
	return 0;
fail:
	strlist_free(l, done);
	listen_tls_free(t, done);
	return -1;
}

const struct config_tls *
config_listen_tls(const struct config *cfg, size_t i)
{
	if (cfg->listen_tls == NULL || i >= cfg->nlisten ||
	    cfg->listen_tls[i].cert == NULL)
		return NULL;
	return &cfg->listen_tls[i];
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

static int
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
static int
file_check(const char *s, char *r, size_t rlen)
{
	if (s[0] == '\0') {
		reason(r, rlen, "must name a file");
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

static int	upstream_default_nonce(void);

/* Replace *list (*n entries) with upstreams made from urls; errno as config_set_upstreams. */
static int
upstreams_replace(struct config_upstream **list, size_t *nlist,
    char *const *urls, size_t n)
{
	struct config_upstream	*u = NULL;
	size_t			 i, done = 0;
	int			 rv = -1, nonce = upstream_default_nonce();

	if (n == 0) {
		errno = EINVAL;
		goto out;
	}
	if ((u = calloc(n, sizeof(*u))) == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		if (upstream_set(&u[i], urls[i], NULL, nonce, NULL, 0) == -1)
			goto out;
		done++;
		if (upstream_dup(u, i) != -1) {
			errno = EEXIST;
			goto out;
		}
	}
	upstreams_free(*list, *nlist);
	*list = u;
	*nlist = n;
	u = NULL;
	rv = 0;
 out:
	upstreams_free(u, done);
	return rv;
}

int
config_set_upstreams(struct config_service *svc, char *const *urls, size_t n)
{
	return upstreams_replace(&svc->upstreams, &svc->nupstreams, urls, n);
}

/* ---- the key table --------------------------------------------------------- */

/*
 * Every key of the file, once: its JSON type and range, the sections that
 * accept it, where it lands, and its default. A key a section does not
 * accept is an unknown key there. Sections: the four services, the top
 * level (CFG_ROOT), and the objects nested in a service (refresh, an
 * upstream), which accept their keys wherever they appear.
 */
enum cfg_type {
	CFG_T_LONG,		/* long, lmin..lmax */
	CFG_T_MIB,		/* size_t bytes, written in MiB, lmin..lmax */
	CFG_T_DOUBLE,		/* double, dmin..dmax (dmin excluded: CFG_OPEN_MIN) */
	CFG_T_BOOL,		/* int, true or false */
	CFG_T_ENUM,		/* int, the index of one of names[] */
	CFG_T_STR,		/* char *, a non-empty string */
	CFG_T_TEXT,		/* const char *, any string, borrowed from the JSON */
	CFG_T_LIST,		/* char ** and size_t at noff: a string or a list */
	CFG_T_UPSTREAMS,	/* struct config_upstream * and size_t at noff */
	CFG_T_OBJECT,		/* the keys of sub, in a struct at off */
	CFG_T_LISTEN,		/* struct config's listen, nlisten and listen_tls */
};

#define CFG_ROOT	0		/* the top level's section: no kind's */
#define CFG_NSECTIONS	CACHE_KIND_MAX
#define CFG_IN(s)	(1u << (s))
#define CFG_SERVICES	(CFG_IN(CACHE_KIND_OCSP) | CFG_IN(CACHE_KIND_RIM) | \
			    CFG_IN(CACHE_KIND_PCCS) | CFG_IN(CACHE_KIND_KDS))
#define CFG_OPEN_MIN	0x1	/* DOUBLE: the lower bound is out of range */
#define CFG_LIST_ONLY	0x2	/* LIST: a lone string is refused */

/* The same default in every section that accepts the key. */
#define DEF_ALL(v)	{ v, v, v, v, v }
_Static_assert(CFG_NSECTIONS == 5, "DEF_ALL names one value per section");

typedef int cfg_check_fn(const char *, char *, size_t);

struct cfg_table;

struct cfg_key {
	const char		*name;
	enum cfg_type		 type;
	unsigned		 in;		/* CFG_IN() of the accepting sections */
	size_t			 off;		/* the value, in the section's struct */
	size_t			 noff;		/* LIST, UPSTREAMS: the count */
	long			 lmin, lmax;
	double			 dmin, dmax;
	int			 flags;
	cfg_check_fn		*check;		/* LIST elements, TEXT */
	const char *const	*names;		/* ENUM */
	size_t			 nnames;
	const char		*choices;	/* ENUM, for messages */
	const struct cfg_table	*sub;		/* OBJECT */
	long			 def_l[CFG_NSECTIONS];	/* LONG MIB BOOL ENUM */
	double			 def_d[CFG_NSECTIONS];	/* DOUBLE */
	const char		*def_s[CFG_NSECTIONS];	/* STR, LIST and UPSTREAMS of one */
};

struct ld;
/* Checks across the keys of one object once all are read. */
typedef int cfg_after_fn(struct ld *, json_t *obj, void *base);

struct cfg_table {
	const struct cfg_key	*keys;
	size_t			 nkeys;
	cfg_after_fn		*after;
};

/* An upstream object's keys, before upstream_set checks them together. */
struct up_fields {
	const char	*url;
	const char	*name;
	int		 verify_nonce;
};

/* A "listen" object's keys, borrowed from the document until ld_listen copies them. */
struct tls_fields {
	const char	*cert;
	const char	*key;
	const char	*client_ca;
};
struct listen_fields {
	const char		*addr;
	struct tls_fields	 tls;
};

static cfg_after_fn	refresh_after;
static cfg_after_fn	tls_after;
static int		listen_check(const char *, char *, size_t);
static int		file_check(const char *, char *, size_t);

#define KEYS(k)		(k), sizeof(k) / sizeof((k)[0])

static const struct cfg_key root_keys[] = {
	{ "listen", CFG_T_LISTEN, CFG_IN(CFG_ROOT), offsetof(struct config, listen),
	    .def_s = { [CFG_ROOT] = CONFIG_DEFAULT_LISTEN } },
	/* where /metrics, /healthz and /readyz are served, and only there */
	{ "admin_listen", CFG_T_LIST, CFG_IN(CFG_ROOT),
	    offsetof(struct config, admin_listen),
	    .noff = offsetof(struct config, nadmin_listen),
	    .check = listen_check },
	{ "cache_dir", CFG_T_STR, CFG_IN(CFG_ROOT),
	    offsetof(struct config, cache_dir),
	    .def_s = { [CFG_ROOT] = CONFIG_DEFAULT_CACHE_DIR } },
	{ "map_size_mb", CFG_T_MIB, CFG_IN(CFG_ROOT),
	    offsetof(struct config, map_size), .lmin = 1,
	    .lmax = CONFIG_MAX_MAP_MB, .def_l = { [CFG_ROOT] = 1024 } },
	/* resident map pages past which a walk pass releases them under hits; 0: none */
	{ "map_resident_max_mb", CFG_T_MIB, CFG_IN(CFG_ROOT),
	    offsetof(struct config, map_resident_max), .lmin = 0,
	    .lmax = CONFIG_MAX_MAP_MB },
	/* threads that look entries up, off the event loop; 0: the loop looks up */
	{ "lookup_threads", CFG_T_LONG, CFG_IN(CFG_ROOT),
	    offsetof(struct config, lookup_threads), .lmin = 0,
	    .lmax = CACHE_READER_MAX_THREADS },
	{ "lookup_offload", CFG_T_ENUM, CFG_IN(CFG_ROOT),
	    offsetof(struct config, lookup_offload), .names = config_offload_str,
	    .nnames = CONFIG_OFFLOAD_MAX, .choices = "\"disk\", \"always\"" },
	{ "log_level", CFG_T_ENUM, CFG_IN(CFG_ROOT),
	    offsetof(struct config, log_level), .names = log_level_str,
	    .nnames = 3, .choices = "\"info\", \"debug\", \"trace\"" },
	{ "max_connections", CFG_T_LONG, CFG_IN(CFG_ROOT),
	    offsetof(struct config, max_connections), .lmin = 0,
	    .lmax = CONFIG_MAX_CONNECTIONS },
	/* admin listeners' own budget: never shut out by the public one */
	{ "admin_max_connections", CFG_T_LONG, CFG_IN(CFG_ROOT),
	    offsetof(struct config, admin_max_connections), .lmin = 1,
	    .lmax = CONFIG_MAX_ADMIN_CONNECTIONS,
	    .def_l = { [CFG_ROOT] = CONFIG_DEFAULT_ADMIN_MAX_CONNECTIONS } },
	/* the kernel's send buffer of each client socket, in KiB; 0: its own */
	{ "send_buffer_kb", CFG_T_LONG, CFG_IN(CFG_ROOT),
	    offsetof(struct config, send_buffer_kb), .lmin = 0,
	    .lmax = CONFIG_MAX_SEND_BUFFER_KB,
	    .def_l = { [CFG_ROOT] = CONFIG_DEFAULT_SEND_BUFFER_KB } },
	{ "header_timeout_s", CFG_T_LONG, CFG_IN(CFG_ROOT),
	    offsetof(struct config, header_timeout_s), .lmin = 1,
	    .lmax = CONFIG_MAX_TIMEOUT_S,
	    .def_l = { [CFG_ROOT] = CONFIG_DEFAULT_HEADER_TIMEOUT_S } },
	{ "body_timeout_s", CFG_T_LONG, CFG_IN(CFG_ROOT),
	    offsetof(struct config, body_timeout_s), .lmin = 1,
	    .lmax = CONFIG_MAX_TIMEOUT_S,
	    .def_l = { [CFG_ROOT] = CONFIG_DEFAULT_BODY_TIMEOUT_S } },
	{ "keepalive_timeout_s", CFG_T_LONG, CFG_IN(CFG_ROOT),
	    offsetof(struct config, keepalive_timeout_s), .lmin = 1,
	    .lmax = CONFIG_MAX_TIMEOUT_S,
	    .def_l = { [CFG_ROOT] = CONFIG_DEFAULT_KEEPALIVE_TIMEOUT_S } },
	/* whose X-Forwarded-For names the client for client_miss_rate_per_s */
	{ "trusted_proxies", CFG_T_LIST, CFG_IN(CFG_ROOT),
	    offsetof(struct config, trusted_proxies),
	    .noff = offsetof(struct config, ntrusted_proxies),
	    .check = cidr_check },
	/* a sampled access log line per answer (proxy/access_log.c); 0: off */
	{ "access_log_sample", CFG_T_DOUBLE, CFG_IN(CFG_ROOT),
	    offsetof(struct config, access_log_sample), .dmin = 0, .dmax = 1 },
};

#define RF(f)	offsetof(struct config_refresh, f)
static const struct cfg_key refresh_keys[] = {
	{ "fraction", CFG_T_DOUBLE, CFG_SERVICES, RF(fraction), .dmin = 0.05,
	    .dmax = 0.95, .def_d = DEF_ALL(0.5) },
	{ "jitter", CFG_T_DOUBLE, CFG_SERVICES, RF(jitter), .dmin = 0,
	    .dmax = 0.5, .def_d = DEF_ALL(0.1) },
	{ "min_interval_s", CFG_T_LONG, CFG_SERVICES, RF(min_interval_s),
	    .lmin = 1, .lmax = CONFIG_MAX_INTERVAL_S, .def_l = DEF_ALL(10) },
	{ "max_interval_s", CFG_T_LONG, CFG_SERVICES, RF(max_interval_s),
	    .lmin = 1, .lmax = CONFIG_MAX_INTERVAL_S, .def_l = DEF_ALL(43200) },
};
static const struct cfg_table refresh_table = {
	KEYS(refresh_keys), refresh_after
};

#define UF(f)	offsetof(struct up_fields, f)
static const struct cfg_key upstream_keys[] = {
	{ "url", CFG_T_TEXT, CFG_SERVICES, .off = UF(url) },
	{ "name", CFG_T_TEXT, CFG_SERVICES, UF(name), .check = name_check },
	{ "verify_nonce", CFG_T_BOOL, CFG_SERVICES, UF(verify_nonce),
	    .def_l = DEF_ALL(1) },
};
static const struct cfg_table upstream_table = { KEYS(upstream_keys), NULL };

#define TF(f)	offsetof(struct tls_fields, f)
static const struct cfg_key tls_keys[] = {
	{ "cert", CFG_T_TEXT, CFG_IN(CFG_ROOT), TF(cert), .check = file_check },
	{ "key", CFG_T_TEXT, CFG_IN(CFG_ROOT), TF(key), .check = file_check },
	{ "client_ca", CFG_T_TEXT, CFG_IN(CFG_ROOT), TF(client_ca),
	    .check = file_check },
};
static const struct cfg_table tls_table = { KEYS(tls_keys), tls_after };

/* An element of "listen" given as an object. */
#define LF(f)	offsetof(struct listen_fields, f)
static const struct cfg_key listen_keys[] = {
	{ "addr", CFG_T_TEXT, CFG_IN(CFG_ROOT), LF(addr), .check = listen_check },
	{ "tls", CFG_T_OBJECT, CFG_IN(CFG_ROOT), LF(tls), .sub = &tls_table },
};
static const struct cfg_table listen_table = { KEYS(listen_keys), NULL };

#define SF(f)	offsetof(struct config_service, f)
#define OCSP	CFG_IN(CACHE_KIND_OCSP)
#define RIM	CFG_IN(CACHE_KIND_RIM)
#define PCCS	CFG_IN(CACHE_KIND_PCCS)
#define KDS	CFG_IN(CACHE_KIND_KDS)
static const struct cfg_key service_keys[] = {
	{ "upstreams", CFG_T_UPSTREAMS, CFG_SERVICES, SF(upstreams),
	    .noff = SF(nupstreams), .def_s = {
		[CACHE_KIND_OCSP] = CONFIG_DEFAULT_OCSP_UPSTREAM,
		[CACHE_KIND_RIM] = CONFIG_DEFAULT_RIM_UPSTREAM,
		[CACHE_KIND_PCCS] = CONFIG_DEFAULT_PCCS_UPSTREAM,
		[CACHE_KIND_KDS] = CONFIG_DEFAULT_KDS_UPSTREAM } },
	{ "anchors", CFG_T_LIST, OCSP | RIM, SF(anchors), .noff = SF(nanchors) },
	{ "intermediates", CFG_T_LIST, OCSP, SF(intermediates),
	    .noff = SF(nintermediates) },
	{ "paths", CFG_T_LIST, OCSP, SF(paths), .noff = SF(npaths),
	    .flags = CFG_LIST_ONLY, .check = path_check },
	{ "mode", CFG_T_ENUM, CFG_SERVICES, SF(mode), .names = config_mode_str,
	    .nnames = 2, .choices = "\"cache_first\", \"upstream_first\"",
	    .def_l = DEF_ALL(CONFIG_MODE_CACHE_FIRST) },
	{ "hedge_ms", CFG_T_LONG, CFG_SERVICES, SF(hedge_ms), .lmin = 0,
	    .lmax = 60000, .def_l = DEF_ALL(500) },
	{ "connect_timeout_ms", CFG_T_LONG, CFG_SERVICES, SF(connect_timeout_ms),
	    .lmin = 1, .lmax = 60000, .def_l = DEF_ALL(2000) },
	{ "timeout_ms", CFG_T_LONG, CFG_SERVICES, SF(timeout_ms), .lmin = 1,
	    .lmax = 300000, .def_l = DEF_ALL(10000) },
	/* NVAT gives up on OCSP after 30 s: answer well before. */
	{ "client_budget_ms", CFG_T_LONG, CFG_SERVICES, SF(client_budget_ms),
	    .lmin = 1, .lmax = 25000, .def_l = DEF_ALL(5000) },
	{ "skew_s", CFG_T_LONG, CFG_SERVICES, SF(skew_s), .lmin = 0,
	    .lmax = 3600, .def_l = DEF_ALL(60) },
	{ "refresh", CFG_T_OBJECT, CFG_SERVICES, SF(refresh),
	    .sub = &refresh_table },
	{ "idle_expire_s", CFG_T_LONG, CFG_SERVICES, SF(idle_expire_s),
	    .lmin = 60, .lmax = CONFIG_MAX_INTERVAL_S,
	    .def_l = DEF_ALL(30L * 24 * 3600) },
	{ "rate_limit_per_s", CFG_T_DOUBLE, CFG_SERVICES, SF(rate_limit_per_s),
	    .dmin = 0, .dmax = DBL_MAX, .flags = CFG_OPEN_MIN,
	    .def_d = DEF_ALL(20) },
	{ "shuffle", CFG_T_BOOL, CFG_SERVICES, .off = SF(shuffle) },
	{ "negative_ttl_s", CFG_T_LONG, CFG_SERVICES, SF(negative_ttl_s),
	    .lmin = 0, .lmax = 3600, .def_l = DEF_ALL(60) },
	/* AMD KDS throttles identical requests to about one per 10 s. */
	{ "pacing_ms", CFG_T_LONG, CFG_SERVICES, SF(pacing_ms), .lmin = 0,
	    .lmax = 600000, .def_l = { [CACHE_KIND_KDS] = 10000 } },
	{ "retention_s", CFG_T_LONG, RIM, SF(retention_s), .lmin = 0,
	    .lmax = CONFIG_MAX_INTERVAL_S,
	    .def_l = { [CACHE_KIND_RIM] = CONFIG_DEFAULT_RIM_RETENTION_S } },
	{ "api_key_file", CFG_T_STR, PCCS, .off = SF(api_key_file) },
	/* client misses and refreshes together; the rest queue */
	{ "max_upstream_inflight", CFG_T_LONG, CFG_SERVICES,
	    SF(max_upstream_inflight), .lmin = 1,
	    .lmax = CONFIG_MAX_UPSTREAM_INFLIGHT,
	    .def_l = DEF_ALL(CONFIG_DEFAULT_UPSTREAM_INFLIGHT) },
	/* per client address; 0: no limit */
	{ "client_miss_rate_per_s", CFG_T_DOUBLE, CFG_SERVICES,
	    SF(client_miss_rate_per_s), .dmin = 0,
	    .dmax = CONFIG_MAX_CLIENT_MISS_RATE,
	    .def_d = DEF_ALL(CONFIG_DEFAULT_CLIENT_MISS_RATE) },
	/* new entries past it evict the least recently asked; 0: no cap */
	{ "max_entries", CFG_T_LONG, CFG_SERVICES, SF(max_entries), .lmin = 0,
	    .lmax = CONFIG_MAX_MAX_ENTRIES,
	    .def_l = DEF_ALL(CONFIG_DEFAULT_MAX_ENTRIES) },
};
static const struct cfg_table service_table = { KEYS(service_keys), NULL };
static const struct cfg_table root_table = { KEYS(root_keys), NULL };

/* The key of t that section `sec` accepts under this name, or NULL. */
static const struct cfg_key *
key_find(const struct cfg_table *t, int sec, const char *name)
{
	size_t	i;

	for (i = 0; i < t->nkeys; i++)
		if ((t->keys[i].in & CFG_IN(sec)) &&
		    strcmp(t->keys[i].name, name) == 0)
			return &t->keys[i];
	return NULL;
}

/* The service a top-level key names, or -1. */
static int
svc_find(const char *name)
{
	enum cache_kind	svc = kind_by_section(name);

	return svc != 0 ? (int)svc : -1;
}

/* ---- defaults ------------------------------------------------------------ */

/* One key's default into the struct at base (zeroed before). */
static void
key_default(const struct cfg_key *k, void *base, int sec)
{
	char	*f = (char *)base + k->off;
	char	*one[1] = { (char *)k->def_s[sec] };

	/* Out of memory leaves a field empty; config_validate reports it. */
	switch (k->type) {
	case CFG_T_LONG:
		*(long *)f = k->def_l[sec];
		break;
	case CFG_T_MIB:
		*(size_t *)f = (size_t)k->def_l[sec] * MIB;
		break;
	case CFG_T_DOUBLE:
		*(double *)f = k->def_d[sec];
		break;
	case CFG_T_BOOL:
	case CFG_T_ENUM:
		*(int *)f = (int)k->def_l[sec];
		break;
	case CFG_T_STR:
		(void)config_set_str((char **)f, one[0]);
		break;
	case CFG_T_LIST:
		if (one[0] != NULL)
			(void)config_set_strlist((char ***)f,
			    (size_t *)((char *)base + k->noff), one, 1);
		break;
	case CFG_T_UPSTREAMS:
		(void)upstreams_replace((struct config_upstream **)f,
		    (size_t *)((char *)base + k->noff), one, one[0] != NULL);
		break;
	case CFG_T_LISTEN:
		(void)config_set_listen(base, one, 1, NULL, 0, NULL);
		break;
	case CFG_T_OBJECT:
	case CFG_T_TEXT:
		break;
	}
}

/* Every default of the keys of t that section `sec` accepts, nested objects too. */
static void
table_defaults(const struct cfg_table *t, void *base, int sec)
{
	size_t	i;

	for (i = 0; i < t->nkeys; i++) {
		if (!(t->keys[i].in & CFG_IN(sec)))
			continue;
		if (t->keys[i].type == CFG_T_OBJECT)
			table_defaults(t->keys[i].sub,
			    (char *)base + t->keys[i].off, sec);
		else
			key_default(&t->keys[i], base, sec);
	}
}

void
config_defaults(struct config *cfg)
{
	int	svc;

	memset(cfg, 0, sizeof(*cfg));
	table_defaults(&root_table, cfg, CFG_ROOT);
	for (svc = CACHE_KIND_OCSP; svc < CACHE_KIND_MAX; svc++)
		table_defaults(&service_table, section(cfg, svc), svc);
}

/* verify_nonce's default, for an upstream given as a URL (the same in every service). */
static int
upstream_default_nonce(void)
{
	struct up_fields	f;

	memset(&f, 0, sizeof(f));
	table_defaults(&upstream_table, &f, CACHE_KIND_OCSP);
	return f.verify_nonce;
}

/* ---- loading --------------------------------------------------------------- */

enum where { AT_KEY, AT_VALUE };

struct ld {
	const char		*name;
	const char		*buf;
	size_t			 len;
	char			*err;
	size_t			 errlen;
	struct jpos_step	 path[CONFIG_MAX_DEPTH];
	size_t			 depth;
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
	struct jpos	k, v;
	char		path[256], msg[512];
	va_list		ap;
	size_t		n;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = ld->depth < CONFIG_MAX_DEPTH ? ld->depth : CONFIG_MAX_DEPTH;
	(void)jpos_find(ld->buf, ld->len, ld->path, n, &k, &v);
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
	char	q[CONFIG_QUOTE_BYTES];

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
ld_enum(struct ld *ld, json_t *v, const struct cfg_key *k, int *out)
{
	size_t	i;

	if (json_is_string(v))
		for (i = 0; i < k->nnames; i++)
			if (strcmp(json_string_value(v), k->names[i]) == 0) {
				*out = (int)i;
				return 0;
			}
	return ld_error(ld, AT_VALUE, "must be one of %s", k->choices);
}

static int
ld_bool(struct ld *ld, json_t *v, int *out)
{
	if (!json_is_boolean(v))
		return ld_error(ld, AT_VALUE, "must be true or false");
	*out = json_is_true(v);
	return 0;
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

/* Any string, borrowed from the document; check, if any, says why not. */
static int
ld_text(struct ld *ld, json_t *v, cfg_check_fn *check, const char **out)
{
	char	r[CONFIG_REASON_BYTES], q[CONFIG_QUOTE_BYTES];

	if (!json_is_string(v))
		return ld_error(ld, AT_VALUE, "must be a string");
	if (check != NULL && check(json_string_value(v), r, sizeof(r)) == -1)
		return ld_error(ld, AT_VALUE, "\"%s\": %s",
		    quote(q, sizeof(q), json_string_value(v)), r);
	*out = json_string_value(v);
	return 0;
}

/* One element of a list of strings into *out (owned); 0 or -1 said. */
static int
ld_strelem(struct ld *ld, json_t *e, cfg_check_fn *check, char **out)
{
	char	r[CONFIG_REASON_BYTES], q[CONFIG_QUOTE_BYTES];

	if (!json_is_string(e) || json_string_length(e) == 0)
		return ld_error(ld, AT_VALUE, "must be a non-empty string");
	if (strlen(json_string_value(e)) != json_string_length(e))
		return ld_error(ld, AT_VALUE, "must not contain NUL");
	if (check != NULL && check(json_string_value(e), r, sizeof(r)) == -1)
		return ld_error(ld, AT_VALUE, "\"%s\": %s",
		    quote(q, sizeof(q), json_string_value(e)), r);
	if ((*out = strdup(json_string_value(e))) == NULL)
		return ld_error(ld, AT_VALUE, "out of memory");
	return 0;
}

/* A string or a list of strings (allow_string), replacing *list. */
static int
ld_strlist(struct ld *ld, json_t *v, int allow_string, cfg_check_fn *check,
    char ***list, size_t *n)
{
	char	**l = NULL;
	size_t	  i, cnt, done = 0;
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
		if (json_is_array(v))
			ld_push(ld, NULL, i);
		if (ld_strelem(ld, json_is_array(v) ? json_array_get(v, i) : v,
		    check, &l[i]) == -1)
			goto out;
		done++;
		if (json_is_array(v))
			ld_pop(ld);
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

static int	ld_object(struct ld *, json_t *, const struct cfg_table *,
		    void *, int);

/* One element of "upstreams": a URL, or an object of upstream_keys. */
static int
ld_upstream(struct ld *ld, json_t *e, struct config_upstream *u, int sec,
    int *named)
{
	struct up_fields	f;
	char			r[CONFIG_REASON_BYTES], q[CONFIG_QUOTE_BYTES];

	*named = 0;
	memset(&f, 0, sizeof(f));
	table_defaults(&upstream_table, &f, sec);
	if (json_is_string(e)) {
		if (upstream_set(u, json_string_value(e), NULL, f.verify_nonce,
		    r, sizeof(r)) == -1)
			return ld_error(ld, AT_VALUE, "\"%s\": %s",
			    quote(q, sizeof(q), json_string_value(e)), r);
		return 0;
	}
	if (!json_is_object(e))
		return ld_error(ld, AT_VALUE, "must be a URL string or an object");
	if (ld_object(ld, e, &upstream_table, &f, sec) == -1)
		return -1;
	if (f.url == NULL)
		return ld_error(ld, AT_VALUE, "missing key \"url\"");
	ld_push(ld, "url", 0);
	if (upstream_set(u, f.url, f.name, f.verify_nonce, r, sizeof(r)) == -1)
		return ld_error(ld, AT_VALUE, "\"%s\": %s",
		    quote(q, sizeof(q), f.url), r);
	ld_pop(ld);
	*named = f.name != NULL;
	return 0;
}

/* A name upstreams[i] shares with an earlier one: said at its name or URL. */
static int
ld_upstream_dup(struct ld *ld, json_t *e, const struct config_upstream *u,
    size_t i, int named)
{
	char	q[CONFIG_QUOTE_BYTES];
	long	d;

	if ((d = upstream_dup(u, i)) == -1)
		return 0;
	if (named)
		ld_push(ld, "name", 0);
	else if (json_is_object(e))
		ld_push(ld, "url", 0);
	return ld_error(ld, AT_VALUE, "duplicate upstream name \"%s\" "
	    "(also used by upstreams[%ld])", quote(q, sizeof(q), u[i].name), d);
}

/* "upstreams": a URL or a non-empty list of them, replacing *list. */
static int
ld_upstreams(struct ld *ld, json_t *v, struct config_upstream **list,
    size_t *n, int sec)
{
	struct config_upstream	*u = NULL;
	size_t			 i, cnt, done = 0;
	json_t			*e;
	int			 named, rv = -1;

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
		if (ld_upstream(ld, e, &u[i], sec, &named) == -1)
			goto out;
		done++;
		if (ld_upstream_dup(ld, e, u, i, named) == -1)
			goto out;
		if (json_is_array(v))
			ld_pop(ld);
	}
	upstreams_free(*list, *n);
	*list = u;
	*n = cnt;
	u = NULL;
	rv = 0;
 out:
	upstreams_free(u, done);
	return rv;
}

/* One element of "listen": "HOST:PORT", or an object of listen_keys. */
static int
ld_listen_elem(struct ld *ld, json_t *e, char **addr, struct config_tls *t)
{
	struct listen_fields	f;
	struct config_tls	files;

	if (!json_is_object(e))
		return ld_strelem(ld, e, listen_check, addr);
	memset(&f, 0, sizeof(f));
	if (ld_object(ld, e, &listen_table, &f, CFG_ROOT) == -1)
		return -1;
	if (f.addr == NULL)
		return ld_error(ld, AT_VALUE, "missing key \"addr\"");
	files.cert = (char *)f.tls.cert;
	files.key = (char *)f.tls.key;
	files.client_ca = (char *)f.tls.client_ca;
	if ((*addr = strdup(f.addr)) == NULL ||
	    (f.tls.cert != NULL && tls_copy(t, &files) == -1))
		return ld_error(ld, AT_VALUE, "out of memory");
	return 0;
}

/* "listen": an address or object, or a list of them, replacing cfg's. */
static int
ld_listen(struct ld *ld, json_t *v, struct config *cfg)
{
	char			**l = NULL;
	struct config_tls	 *t = NULL;
	size_t			  i, cnt, done = 0;
	int			  rv = -1;

	if (json_is_array(v))
		cnt = json_array_size(v);
	else if (json_is_string(v) || json_is_object(v))
		cnt = 1;
	else
		return ld_error(ld, AT_VALUE, "must be a string or a list of strings");
	if (cnt > 0 && ((l = calloc(cnt, sizeof(*l))) == NULL ||
	    (t = calloc(cnt, sizeof(*t))) == NULL)) {
		ld_error(ld, AT_VALUE, "out of memory");
		goto out;
	}
	for (i = 0; i < cnt; i++) {
		if (json_is_array(v))
			ld_push(ld, NULL, i);
		done++;		/* both freed below from here on */
		if (ld_listen_elem(ld, json_is_array(v) ? json_array_get(v, i) :
		    v, &l[i], &t[i]) == -1)
			goto out;
		if (json_is_array(v))
			ld_pop(ld);
	}
	listen_replace(cfg, l, t, cnt);
	l = NULL;
	t = NULL;
	rv = 0;
 out:
	strlist_free(l, done);
	listen_tls_free(t, done);
	return rv;
}

/* A TLS listener needs a certificate and its key. */
static int
tls_after(struct ld *ld, json_t *obj, void *base)
{
	const struct tls_fields	*f = base;

	(void)obj;
	if (f->cert == NULL)
		return ld_error(ld, AT_VALUE, "missing key \"cert\"");
	if (f->key == NULL)
		return ld_error(ld, AT_VALUE, "missing key \"key\"");
	return 0;
}

/* One value v of key k into the struct at base, in section sec. */
static int
ld_value(struct ld *ld, const struct cfg_key *k, json_t *v, void *base,
    int sec)
{
	char	*f = (char *)base + k->off;
	long	 mb;

	switch (k->type) {
	case CFG_T_LONG:
		return ld_long(ld, v, k->lmin, k->lmax, (long *)f);
	case CFG_T_MIB:
		if (ld_long(ld, v, k->lmin, k->lmax, &mb) == -1)
			return -1;
		*(size_t *)f = (size_t)mb * MIB;
		return 0;
	case CFG_T_DOUBLE:
		return ld_double(ld, v, k->dmin, k->flags & CFG_OPEN_MIN,
		    k->dmax, (double *)f);
	case CFG_T_BOOL:
		return ld_bool(ld, v, (int *)f);
	case CFG_T_ENUM:
		return ld_enum(ld, v, k, (int *)f);
	case CFG_T_STR:
		return ld_str(ld, v, (char **)f);
	case CFG_T_TEXT:
		return ld_text(ld, v, k->check, (const char **)f);
	case CFG_T_LIST:
		return ld_strlist(ld, v, !(k->flags & CFG_LIST_ONLY), k->check,
		    (char ***)f, (size_t *)((char *)base + k->noff));
	case CFG_T_UPSTREAMS:
		return ld_upstreams(ld, v, (struct config_upstream **)f,
		    (size_t *)((char *)base + k->noff), sec);
	case CFG_T_OBJECT:
		return ld_object(ld, v, k->sub, f, sec);
	case CFG_T_LISTEN:
		return ld_listen(ld, v, base);
	}
	return ld_error(ld, AT_VALUE, "unsupported key");
}

/*
 * The members of obj by t's keys for section sec (a service, or CFG_ROOT
 * whose members also name the services), into the struct at base; then
 * t's checks across keys.
 */
static int
ld_object(struct ld *ld, json_t *obj, const struct cfg_table *t, void *base,
    int sec)
{
	const struct cfg_key	*k;
	const char		*name;
	json_t			*v;
	int			 rv, svc;

	if (!json_is_object(obj))
		return ld_error(ld, AT_VALUE, t == &root_table ?
		    "the top level must be an object" : "must be an object");
	json_object_foreach(obj, name, v) {
		ld_push(ld, name, 0);
		if ((k = key_find(t, sec, name)) != NULL)
			rv = ld_value(ld, k, v, base, sec);
		else if (t == &root_table && (svc = svc_find(name)) != -1)
			rv = ld_object(ld, v, &service_table,
			    section(base, svc), svc);
		else {
			ld_pop(ld);
			return ld_unknown(ld, name);
		}
		if (rv == -1)
			return -1;
		ld_pop(ld);
	}
	return t->after != NULL ? t->after(ld, obj, base) : 0;
}

/* refresh: the interval bounds in order, said at the key that was written. */
static int
refresh_after(struct ld *ld, json_t *obj, void *base)
{
	const struct config_refresh	*r = base;

	if (r->max_interval_s >= r->min_interval_s)
		return 0;
	if (json_object_get(obj, "max_interval_s") != NULL) {
		ld_push(ld, "max_interval_s", 0);
		return ld_error(ld, AT_VALUE, "must not be less than "
		    "min_interval_s (%ld)", r->min_interval_s);
	}
	ld_push(ld, "min_interval_s", 0);
	return ld_error(ld, AT_VALUE, "must not exceed max_interval_s (%ld)",
	    r->max_interval_s);
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
	rv = ld_object(&ld, root, &root_table, cfg, CFG_ROOT);
 out:
	json_decref(root);
	if (rv == -1)
		errno = EINVAL;
	return rv;
}

/*
 * The file, opened without blocking (a FIFO or a device never stalls
 * -n or a reload): NULL with *e set, ESPIPE when it is not a regular file.
 */
static FILE *
config_open(const char *path, int *e)
{
	struct stat	 st;
	FILE		*f;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1) {
		*e = errno;
		return NULL;
	}
	if (fstat(fd, &st) == -1)
		*e = errno;
	else if (!S_ISREG(st.st_mode))
		*e = ESPIPE;
	else
		*e = 0;
	if (*e != 0) {
		close(fd);
		return NULL;
	}
	if ((f = fdopen(fd, "r")) == NULL) {
		*e = errno;
		close(fd);
	}
	return f;
}

int
config_load_file(struct config *cfg, const char *path, char *err,
    size_t errlen)
{
	FILE		*f = NULL;
	char		*buf = NULL;
	size_t		 len;
	int		 rv = -1, e = 0;

	if ((f = config_open(path, &e)) == NULL) {
		snprintf(err, errlen, "%s: %s", path, e == ESPIPE ?
		    "not a regular file" : strerror(e));
		goto out;
	}
	if ((buf = malloc(CONFIG_MAX_FILE_BYTES + 1)) == NULL) {
		e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		goto out;
	}
	len = fread(buf, 1, CONFIG_MAX_FILE_BYTES + 1, f);
	if (ferror(f)) {
		e = EIO;
		snprintf(err, errlen, "%s: read error", path);
		goto out;
	}
	if (len > CONFIG_MAX_FILE_BYTES) {
		e = EFBIG;
		snprintf(err, errlen, "%s: larger than %d bytes", path,
		    CONFIG_MAX_FILE_BYTES);
		goto out;
	}
	if ((rv = config_load_buffer(cfg, path, buf, len, err, errlen)) == -1)
		e = EINVAL;
 out:
	free(buf);
	if (f != NULL)
		fclose(f);
	if (rv == -1)
		errno = e;
	return rv;
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
	for (svc = CACHE_KIND_OCSP; svc < CACHE_KIND_MAX; svc++)
		if (service_validate(config_service(cfg, svc),
		    kind_table[svc].section, err, errlen) == -1)
			return -1;
	return 0;
}
