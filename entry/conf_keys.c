/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration's key table (types, ranges, sections, defaults), the defaults it gives, and the upstream lists. */
#include <config.h>	/* autoconf's; "config.h" here would be entry/conf.h */

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cache/reader.h"
#include "entry/conf.h"
#include "entry/conf_int.h"

/* Cap on the "at least" intervals, so that now + interval cannot overflow. */
#define CONFIG_MAX_INTERVAL_S	315360000L	/* ten years */
#define CONFIG_MAX_MAP_MB	(SIZE_MAX / MIB > LONG_MAX ? LONG_MAX : \
				    (long)(SIZE_MAX / MIB))

static const char *const log_level_str[] = { "info", "debug", "trace" };

/* The enum keys are read and written as int. */
_Static_assert(sizeof(enum config_mode) == sizeof(int), "mode is an int");

/* Fill one upstream; on error nothing is left allocated in *u. */
int
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
long
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

static cfg_after_fn	refresh_after;
static cfg_after_fn	tls_after;
static cfg_after_fn	upstream_tls_after;

#define KEYS(k)		(k), sizeof(k) / sizeof((k)[0])

/* "upstream_tls", at the top level and in a service alike. */
#define UT(f)	offsetof(struct config_upstream_tls, f)
static const struct cfg_key upstream_tls_keys[] = {
	{ "ca_file", CFG_T_STR, CFG_IN(CFG_ROOT) | CFG_SERVICES,
	    .off = UT(ca_file) },
	{ "cert_file", CFG_T_STR, CFG_IN(CFG_ROOT) | CFG_SERVICES,
	    .off = UT(cert_file) },
	{ "key_file", CFG_T_STR, CFG_IN(CFG_ROOT) | CFG_SERVICES,
	    .off = UT(key_file) },
};
static const struct cfg_table upstream_tls_table = {
	KEYS(upstream_tls_keys), upstream_tls_after
};

static const struct cfg_key root_keys[] = {
	{ "listen", CFG_T_LISTEN, CFG_IN(CFG_ROOT), offsetof(struct config, listen),
	    .def_s = CONFIG_DEFAULT_LISTEN },
	/* where /metrics, /healthz and /readyz are served, and only there */
	{ "admin_listen", CFG_T_LIST, CFG_IN(CFG_ROOT),
	    offsetof(struct config, admin_listen),
	    .noff = offsetof(struct config, nadmin_listen),
	    .check = listen_check },
	{ "cache_dir", CFG_T_STR, CFG_IN(CFG_ROOT),
	    offsetof(struct config, cache_dir),
	    .def_s = CONFIG_DEFAULT_CACHE_DIR },
	{ "map_size_mb", CFG_T_MIB, CFG_IN(CFG_ROOT),
	    offsetof(struct config, map_size), .lmin = 1,
	    .lmax = CONFIG_MAX_MAP_MB, .def_l = 1024 },
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
	    .def_l = CONFIG_DEFAULT_ADMIN_MAX_CONNECTIONS },
	/* the kernel's send buffer of each client socket, in KiB; 0: its own */
	{ "send_buffer_kb", CFG_T_LONG, CFG_IN(CFG_ROOT),
	    offsetof(struct config, send_buffer_kb), .lmin = 0,
	    .lmax = CONFIG_MAX_SEND_BUFFER_KB,
	    .def_l = CONFIG_DEFAULT_SEND_BUFFER_KB },
	{ "header_timeout_s", CFG_T_LONG, CFG_IN(CFG_ROOT),
	    offsetof(struct config, header_timeout_s), .lmin = 1,
	    .lmax = CONFIG_MAX_TIMEOUT_S,
	    .def_l = CONFIG_DEFAULT_HEADER_TIMEOUT_S },
	{ "body_timeout_s", CFG_T_LONG, CFG_IN(CFG_ROOT),
	    offsetof(struct config, body_timeout_s), .lmin = 1,
	    .lmax = CONFIG_MAX_TIMEOUT_S,
	    .def_l = CONFIG_DEFAULT_BODY_TIMEOUT_S },
	{ "keepalive_timeout_s", CFG_T_LONG, CFG_IN(CFG_ROOT),
	    offsetof(struct config, keepalive_timeout_s), .lmin = 1,
	    .lmax = CONFIG_MAX_TIMEOUT_S,
	    .def_l = CONFIG_DEFAULT_KEEPALIVE_TIMEOUT_S },
	/* whose X-Forwarded-For names the client for client_miss_rate_per_s */
	{ "trusted_proxies", CFG_T_LIST, CFG_IN(CFG_ROOT),
	    offsetof(struct config, trusted_proxies),
	    .noff = offsetof(struct config, ntrusted_proxies),
	    .check = cidr_check },
	/* a sampled access log line per answer (proxy/access_log.c); 0: off */
	{ "access_log_sample", CFG_T_DOUBLE, CFG_IN(CFG_ROOT),
	    offsetof(struct config, access_log_sample), .dmin = 0, .dmax = 1 },
	/* every service's, unless its section has its own */
	{ "upstream_tls", CFG_T_OBJECT, CFG_IN(CFG_ROOT),
	    offsetof(struct config, upstream_tls), .sub = &upstream_tls_table },
};

#define RF(f)	offsetof(struct config_refresh, f)
static const struct cfg_key refresh_keys[] = {
	{ "fraction", CFG_T_DOUBLE, CFG_SERVICES, RF(fraction), .dmin = 0.05,
	    .dmax = 0.95, .def_d = 0.5 },
	{ "jitter", CFG_T_DOUBLE, CFG_SERVICES, RF(jitter), .dmin = 0,
	    .dmax = 0.5, .def_d = 0.1 },
	{ "min_interval_s", CFG_T_LONG, CFG_SERVICES, RF(min_interval_s),
	    .lmin = 1, .lmax = CONFIG_MAX_INTERVAL_S, .def_l = 10 },
	{ "max_interval_s", CFG_T_LONG, CFG_SERVICES, RF(max_interval_s),
	    .lmin = 1, .lmax = CONFIG_MAX_INTERVAL_S, .def_l = 43200 },
};
static const struct cfg_table refresh_table = {
	KEYS(refresh_keys), refresh_after
};

#define UF(f)	offsetof(struct up_fields, f)
static const struct cfg_key upstream_keys[] = {
	{ "url", CFG_T_TEXT, CFG_SERVICES, .off = UF(url) },
	{ "name", CFG_T_TEXT, CFG_SERVICES, UF(name), .check = name_check },
	{ "verify_nonce", CFG_T_BOOL, CFG_SERVICES, UF(verify_nonce),
	    .def_l = 1 },
};
const struct cfg_table upstream_table = { KEYS(upstream_keys), NULL };

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
const struct cfg_table listen_table = { KEYS(listen_keys), NULL };

#define SF(f)	offsetof(struct config_service, f)
#define KF(f)	offsetof(struct kind_conf, f)
static const struct cfg_key service_keys[] = {
	{ "upstreams", CFG_T_UPSTREAMS, CFG_SERVICES, SF(upstreams),
	    .noff = SF(nupstreams), .flags = CFG_KIND_DEF,
	    .kdef = KF(upstream) },
	{ "anchors", CFG_T_LIST, CFG_SERVICES, SF(anchors),
	    .noff = SF(nanchors), .kinds = KIND_CONF_ANCHORS },
	{ "intermediates", CFG_T_LIST, CFG_SERVICES, SF(intermediates),
	    .noff = SF(nintermediates), .kinds = KIND_CONF_INTERMEDIATES },
	{ "paths", CFG_T_LIST, CFG_SERVICES, SF(paths), .noff = SF(npaths),
	    .flags = CFG_LIST_ONLY, .check = path_check,
	    .kinds = KIND_CONF_PATHS },
	{ "mode", CFG_T_ENUM, CFG_SERVICES, SF(mode), .names = config_mode_str,
	    .nnames = 2, .choices = "\"cache_first\", \"upstream_first\"",
	    .def_l = CONFIG_MODE_CACHE_FIRST },
	{ "hedge_ms", CFG_T_LONG, CFG_SERVICES, SF(hedge_ms), .lmin = 0,
	    .lmax = 60000, .def_l = 500 },
	{ "connect_timeout_ms", CFG_T_LONG, CFG_SERVICES, SF(connect_timeout_ms),
	    .lmin = 1, .lmax = 60000, .def_l = 2000 },
	{ "timeout_ms", CFG_T_LONG, CFG_SERVICES, SF(timeout_ms), .lmin = 1,
	    .lmax = 300000, .def_l = 10000 },
	/* NVAT gives up on OCSP after 30 s: answer well before. */
	{ "client_budget_ms", CFG_T_LONG, CFG_SERVICES, SF(client_budget_ms),
	    .lmin = 1, .lmax = 25000, .def_l = 5000 },
	{ "skew_s", CFG_T_LONG, CFG_SERVICES, SF(skew_s), .lmin = 0,
	    .lmax = 3600, .def_l = 60 },
	{ "refresh", CFG_T_OBJECT, CFG_SERVICES, SF(refresh),
	    .sub = &refresh_table },
	{ "idle_expire_s", CFG_T_LONG, CFG_SERVICES, SF(idle_expire_s),
	    .lmin = 60, .lmax = CONFIG_MAX_INTERVAL_S,
	    .def_l = 30L * 24 * 3600 },
	{ "rate_limit_per_s", CFG_T_DOUBLE, CFG_SERVICES, SF(rate_limit_per_s),
	    .dmin = 0, .dmax = DBL_MAX, .flags = CFG_OPEN_MIN,
	    .def_d = 20 },
	{ "shuffle", CFG_T_BOOL, CFG_SERVICES, .off = SF(shuffle) },
	{ "negative_ttl_s", CFG_T_LONG, CFG_SERVICES, SF(negative_ttl_s),
	    .lmin = 0, .lmax = 3600, .def_l = 60 },
	/* the kind's default: KDS throttles identical requests (entry/kds.c) */
	{ "pacing_ms", CFG_T_LONG, CFG_SERVICES, SF(pacing_ms), .lmin = 0,
	    .lmax = 600000, .flags = CFG_KIND_DEF, .kdef = KF(pacing_ms) },
	{ "retention_s", CFG_T_LONG, CFG_SERVICES, SF(retention_s), .lmin = 0,
	    .lmax = CONFIG_MAX_INTERVAL_S, .flags = CFG_KIND_DEF,
	    .kdef = KF(retention_s), .kinds = KIND_CONF_RETENTION },
	{ "api_key_file", CFG_T_STR, CFG_SERVICES, .off = SF(api_key_file),
	    .kinds = KIND_CONF_API_KEY },
	/* client misses and refreshes together; the rest queue */
	{ "max_upstream_inflight", CFG_T_LONG, CFG_SERVICES,
	    SF(max_upstream_inflight), .lmin = 1,
	    .lmax = CONFIG_MAX_UPSTREAM_INFLIGHT,
	    .def_l = CONFIG_DEFAULT_UPSTREAM_INFLIGHT },
	/* per client address; 0: no limit */
	{ "client_miss_rate_per_s", CFG_T_DOUBLE, CFG_SERVICES,
	    SF(client_miss_rate_per_s), .dmin = 0,
	    .dmax = CONFIG_MAX_CLIENT_MISS_RATE,
	    .def_d = CONFIG_DEFAULT_CLIENT_MISS_RATE },
	/* the address bits that name one client of client_miss_rate_per_s */
	{ "client_ipv4_prefix", CFG_T_LONG, CFG_SERVICES,
	    SF(client_ipv4_prefix), .lmin = 0, .lmax = 32,
	    .def_l = CONFIG_DEFAULT_CLIENT_IPV4_PREFIX },
	{ "client_ipv6_prefix", CFG_T_LONG, CFG_SERVICES,
	    SF(client_ipv6_prefix), .lmin = 0, .lmax = 128,
	    .def_l = CONFIG_DEFAULT_CLIENT_IPV6_PREFIX },
	/* new entries stored per second, all clients together; 0: no cap */
	{ "new_entry_rate_per_s", CFG_T_DOUBLE, CFG_SERVICES,
	    SF(new_entry_rate_per_s), .dmin = 0,
	    .dmax = CONFIG_MAX_NEW_ENTRY_RATE,
	    .def_d = CONFIG_DEFAULT_NEW_ENTRY_RATE },
	/*
	 * new entries past it evict the least valuable
	 * (docs/decisions/0004-segmented-lru.md); 0: no cap; not set: from
	 * map_size_mb
	 */
	{ "max_entries", CFG_T_LONG, CFG_SERVICES, SF(max_entries), .lmin = 0,
	    .lmax = CONFIG_MAX_MAX_ENTRIES,
	    .def_l = CONFIG_MAX_ENTRIES_AUTO },
	/* replaces the top level's whole: {} is the system's store, no client certificate */
	{ "upstream_tls", CFG_T_OBJECT, CFG_SERVICES, SF(upstream_tls),
	    .sub = &upstream_tls_table },
};
const struct cfg_table service_table = { KEYS(service_keys), NULL };
const struct cfg_table root_table = { KEYS(root_keys), NULL };

/* Whether section `sec` accepts key k: one of its sections, and in a service the kind takes it. */
static int
key_in(const struct cfg_key *k, int sec)
{
	if (!(k->in & CFG_IN(sec)))
		return 0;
	return sec == CFG_ROOT || k->kinds == 0 ||
	    (kind_table[sec]->conf.keys & k->kinds) == k->kinds;
}

/* The key of t that section `sec` accepts under this name, or NULL. */
const struct cfg_key *
key_find(const struct cfg_table *t, int sec, const char *name)
{
	size_t	i;

	for (i = 0; i < t->nkeys; i++)
		if (key_in(&t->keys[i], sec) &&
		    strcmp(t->keys[i].name, name) == 0)
			return &t->keys[i];
	return NULL;
}

/* The service a top-level key names, or -1. */
int
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
	const char	*kd;
	char		*f = (char *)base + k->off;
	char		*one[1] = { (char *)k->def_s };
	long		 def_l = k->def_l;

	/* A service's own default, from its kind's row. */
	if ((k->flags & CFG_KIND_DEF) && sec != CFG_ROOT) {
		kd = (const char *)&kind_table[sec]->conf + k->kdef;
		if (k->type == CFG_T_LONG)
			memcpy(&def_l, kd, sizeof(def_l));
		else
			memcpy(&one[0], kd, sizeof(one[0]));
	}
	/* Out of memory leaves a field empty; config_validate reports it. */
	switch (k->type) {
	case CFG_T_LONG:
		*(long *)f = def_l;
		break;
	case CFG_T_MIB:
		*(size_t *)f = (size_t)def_l * MIB;
		break;
	case CFG_T_DOUBLE:
		*(double *)f = k->def_d;
		break;
	case CFG_T_BOOL:
	case CFG_T_ENUM:
		*(int *)f = (int)def_l;
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
void
table_defaults(const struct cfg_table *t, void *base, int sec)
{
	size_t	i;

	for (i = 0; i < t->nkeys; i++) {
		if (!key_in(&t->keys[i], sec))
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
	for (svc = KIND_FIRST; svc < CACHE_KIND_MAX; svc++)
		table_defaults(&service_table, section(cfg, svc), svc);
}

/* verify_nonce's default, for an upstream given as a URL (the same in every service). */
static int
upstream_default_nonce(void)
{
	struct up_fields	f;

	memset(&f, 0, sizeof(f));
	table_defaults(&upstream_table, &f, KIND_FIRST);
	return f.verify_nonce;
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

/*
 * upstream_tls: a client certificate comes with its key, and the object
 * is noted as given, so that a service's replaces the top level's.
 */
static int
upstream_tls_after(struct ld *ld, json_t *obj, void *base)
{
	struct config_upstream_tls	*t = base;

	(void)obj;
	if (t->cert_file != NULL && t->key_file == NULL)
		return ld_error(ld, AT_VALUE, "missing key \"key_file\" "
		    "(cert_file's private key)");
	if (t->key_file != NULL && t->cert_file == NULL)
		return ld_error(ld, AT_VALUE, "missing key \"cert_file\" "
		    "(key_file's certificate)");
	t->given = 1;
	return 0;
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
