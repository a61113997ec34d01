/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration model: one table of keys with their types, ranges, services and defaults; the JSON reader; the setters. */
#ifndef ENTRY_CONF_H
#define ENTRY_CONF_H

#include <stddef.h>

#include "entry/kind.h"

/* Defaults the command lines also print; the key table uses these. */
#define CONFIG_DEFAULT_LISTEN		"127.0.0.1:8090"
#define CONFIG_DEFAULT_CACHE_DIR	"/var/lib/stapled"
/* The HTTP front's deadlines (docs/http.md, stapled.conf(5)). */
#define CONFIG_DEFAULT_HEADER_TIMEOUT_S		10
#define CONFIG_DEFAULT_BODY_TIMEOUT_S		10
#define CONFIG_DEFAULT_KEEPALIVE_TIMEOUT_S	60
#define CONFIG_MAX_TIMEOUT_S			3600
#define CONFIG_MAX_CONNECTIONS			1048576
/* Connections to the admin listeners, counted apart from max_connections. */
#define CONFIG_DEFAULT_ADMIN_MAX_CONNECTIONS	32
#define CONFIG_MAX_ADMIN_CONNECTIONS		4096
/* Each accepted socket's kernel send buffer (SO_SNDBUF); 0: the kernel's own. */
#define CONFIG_DEFAULT_SEND_BUFFER_KB		256
#define CONFIG_MAX_SEND_BUFFER_KB		65536
/* Addresses in `listen`, and in `admin_listen` (systemd's sockets are not counted). */
#define CONFIG_MAX_LISTEN			16
/* Concurrent upstream transfers per service (docs/refresh.md, "Bounded upstream work"). */
#define CONFIG_DEFAULT_UPSTREAM_INFLIGHT	32
#define CONFIG_MAX_UPSTREAM_INFLIGHT		4096
/* Misses per second per client address, with a burst of CONFIG_MISS_BURST_S seconds' worth. */
#define CONFIG_DEFAULT_CLIENT_MISS_RATE		100.0	/* a burst of 200: a boot storm of 8 GPUs and NVSwitches from one address passes */
#define CONFIG_MAX_CLIENT_MISS_RATE		1e6
#define CONFIG_MISS_BURST_S			2
/* A client of client_miss_rate_per_s is its address's first bits: one host's IPv6 /64. */
#define CONFIG_DEFAULT_CLIENT_IPV4_PREFIX	32
#define CONFIG_DEFAULT_CLIENT_IPV6_PREFIX	64
/* New entries stored per second per service, with a burst of CONFIG_MISS_BURST_S seconds' worth. */
#define CONFIG_DEFAULT_NEW_ENTRY_RATE		100.0
#define CONFIG_MAX_NEW_ENTRY_RATE		1e6
/*
 * Entries per service before eviction (docs/refresh.md, "Bounded upstream
 * work"). Not set (AUTO), it is what the map holds: config_max_entries.
 */
#define CONFIG_MAX_ENTRIES_AUTO			(-1L)
#define CONFIG_MAX_MAX_ENTRIES			1000000000L
/* Of the map, what the default caps fill together; the rest is the free list's and the B-tree's slack. */
#define CONFIG_MAP_FILL_PCT			80

/*
 * The services are the kinds (entry/kinds.h): struct config's svc[k] is
 * the section kind_section[k] names; its defaults that differ by kind
 * are kind_table[k]->conf's (the vendor's upstream among them).
 */

enum config_mode { CONFIG_MODE_CACHE_FIRST = 0, CONFIG_MODE_UPSTREAM_FIRST = 1 };
extern const char *const config_mode_str[2];
/* lookup_offload: when lookup_threads take the hits' lookups. */
enum config_offload {
	CONFIG_OFFLOAD_DISK = 0,	/* while lookups wait for the disk (cache/reader.h) */
	CONFIG_OFFLOAD_ALWAYS = 1,
	CONFIG_OFFLOAD_MAX
};
extern const char *const config_offload_str[CONFIG_OFFLOAD_MAX];

struct config_upstream {
	char	*url;
	char	*name;		/* default: host[:port] of url */
	int	 verify_nonce;	/* default 1 */
};

/*
 * How upstreams are reached over https: "upstream_tls" at the top level,
 * or in a service's section, which then replaces the top level's whole
 * (stapled.conf(5)). Used by stapled's fetches and staplectl's alike.
 */
struct config_upstream_tls {
	char	*ca_file;	/* PEM: the CAs that verify upstreams; NULL: the system's store */
	char	*cert_file;	/* PEM: a client certificate, then its chain; NULL: none */
	char	*key_file;	/* PEM: its private key; set with cert_file only */
	int	 given;		/* written in this section */
};

struct config_refresh {
	double	fraction;	/* 0.5: refresh at 50 % of thisUpdate..nextUpdate */
	double	jitter;		/* 0.1: +-10 % of the interval */
	long	min_interval_s;	/* 10 */
	long	max_interval_s;	/* 43200 */
};

/* One vendor service: every kind's section has this shape. */
struct config_service {
	struct config_upstream	*upstreams;
	size_t			 nupstreams;
	char			**anchors;	/* PEM files; none: built-in roots */
	size_t			 nanchors;
	char			**intermediates;/* PEM files added to the pool */
	size_t			 nintermediates;
	char			**paths;	/* extra POST paths besides / and /ocsp */
	size_t			 npaths;
	enum config_mode	 mode;
	long			 hedge_ms;		/* 500 */
	long			 connect_timeout_ms;	/* 2000 */
	long			 timeout_ms;		/* 10000 */
	long			 client_budget_ms;	/* 5000 */
	long			 skew_s;		/* 60 */
	struct config_refresh	 refresh;
	long			 idle_expire_s;		/* 30 days */
	double			 rate_limit_per_s;	/* 20 */
	int			 shuffle;	/* equal mirrors: spread the first try */
	long			 negative_ttl_s;	/* 404/410 remembered; 60 */
	long			 pacing_ms;	/* one identical request per endpoint per this; KDS 10000 */
	long			 retention_s;	/* RIM: how long a document is kept; 0: 30 days */
	char			*api_key_file;	/* pccs: Intel PCS API key, never logged */
	long			 max_upstream_inflight;	/* 32 */
	double			 client_miss_rate_per_s;	/* 100; 0 off */
	long			 client_ipv4_prefix;	/* its clients: 32 */
	long			 client_ipv6_prefix;	/* its clients: 64 */
	double			 new_entry_rate_per_s;	/* 100; 0 off */
	long			 max_entries;	/* CONFIG_MAX_ENTRIES_AUTO: config_max_entries; 0 no cap */
	struct config_upstream_tls upstream_tls; /* given: instead of the top level's */
};

/* A TLS listener's files: a "listen" object's "tls" (stapled.conf(5)). */
struct config_tls {
	char	*cert;		/* PEM: the certificate, then its chain; NULL: plain HTTP */
	char	*key;		/* PEM: its private key */
	char	*client_ca;	/* PEM: CAs whose client certificates are required, or NULL */
};

struct config {
	char			**listen;	/* "HOST:PORT", IPv6 as "[::1]:8090" */
	size_t			 nlisten;
	char			**admin_listen;	/* ops endpoints only there; none: everywhere */
	size_t			 nadmin_listen;
	/* NULL when every listen is plain, else one per listen (cert NULL: plain); set both with config_set_listen */
	struct config_tls	*listen_tls;
	char			*cache_dir;
	size_t			 map_size;	/* bytes; "map_size_mb" in JSON, default 1024 */
	size_t			 map_resident_max;	/* bytes; "map_resident_max_mb", 0: no cap */
	long			 lookup_threads;	/* hits looked up off the loop; 0: on it */
	int			 lookup_offload;	/* enum config_offload: when they are */
	int			 log_level;	/* 0 info, 1 debug (-d), 2 trace (-v) */
	long			 max_connections;	/* 0: from the fd limit and memory (http.c) */
	long			 admin_max_connections;	/* on admin listeners: 32 */
	long			 send_buffer_kb;	/* SO_SNDBUF of each client socket: 256; 0 the kernel's */
	long			 header_timeout_s;	/* request line and headers: 10 */
	long			 body_timeout_s;	/* the body, once headers are in: 10 */
	long			 keepalive_timeout_s;	/* idle between requests: 60 */
	char			**trusted_proxies;	/* "ADDR" or "ADDR/PREFIX" */
	size_t			 ntrusted_proxies;
	double			 access_log_sample;	/* share of answers logged: 0 (off) .. 1 */
	struct config_upstream_tls upstream_tls;	/* every service's, unless its own is given */
	/* Each kind's section, by its byte (svc[0] is unused): config_service. */
	struct config_service	 svc[CACHE_KIND_MAX];
};

/* Fill every field with the defaults of the key table (out of memory: config_validate says so). */
void	config_defaults(struct config *);
/*
 * Load a JSON file over the current values (defaults first). Unknown keys,
 * wrong types and out-of-range values are errors. On error returns -1 and
 * writes "file:line:column: message" into err ("file: why" when it cannot
 * be read); *cfg is then unspecified but config_free releases it. errno
 * tells the two apart: that of the failing open or read (EFBIG: over
 * CONFIG_MAX_FILE_BYTES; ESPIPE: not a regular file, such as a FIFO, which
 * is never opened for a blocking read) when the file could not be read,
 * EINVAL when its content was refused.
 */
#define CONFIG_MAX_FILE_BYTES	(1024 * 1024)
int	config_load_file(struct config *, const char *path, char *err, size_t errlen);
/* Same, from a buffer; `name` stands for the file in messages; errno EINVAL on error. */
int	config_load_buffer(struct config *, const char *name, const char *buf,
	    size_t len, char *err, size_t errlen);
/* Cross-field checks after flags were applied ("listen: bad port"); 0 or -1 with err. */
int	config_validate(const struct config *, char *err, size_t errlen);
/* Setters used by the command line (each replaces the value it sets); 0 or -1. */
int	config_set_upstreams(struct config_service *, char *const *urls, size_t n);
int	config_set_strlist(char ***list, size_t *n, char *const *vals, size_t nvals);
int	config_set_str(char **dst, const char *val);
/*
 * Replace listen: the nplain addresses plain, then the ntls addresses with
 * the files of tls (copied; NULL members stay NULL, config_validate says
 * what is missing). 0, or -1 out of memory (the old value then stays).
 */
int	config_set_listen(struct config *, char *const *plain, size_t nplain,
	    char *const *tls_addrs, size_t ntls, const struct config_tls *tls);
/* listen[i]'s TLS files, or NULL when it is plain HTTP. Borrowed from cfg. */
const struct config_tls *config_listen_tls(const struct config *, size_t i);
void	config_free(struct config *);	/* accepts NULL members, and NULL */
/*
 * Added for the command line: config_set_upstreams sets errno to EINVAL
 * (bad URL, or n == 0), EEXIST (two URLs give the same default name) or
 * ENOMEM. config_check_url writes why a URL is refused into err.
 */
int	config_check_url(const char *url, char *err, size_t errlen);
/* Split "HOST:PORT" or "[V6]:PORT" (host without brackets); 0 or -1. */
int	config_split_listen(const char *s, char *host, size_t hostlen, int *port);

/* An address range of trusted_proxies. */
struct config_cidr {
	int		family;		/* AF_INET or AF_INET6 */
	unsigned char	addr[16];	/* network order; 4 bytes for AF_INET */
	unsigned	prefix;		/* bits */
};
/* Parse "ADDRESS" or "ADDRESS/PREFIX" into out; 0, or -1 when it is neither. */
int	config_parse_cidr(const char *s, struct config_cidr *out);

/* The section of one service (borrowed from cfg); NULL for a bad id. */
const struct config_service *config_service(const struct config *,
	    enum cache_kind);
/*
 * The upstream TLS files of service svc: its section's upstream_tls when
 * given, else the top level's. Borrowed from cfg; NULL for a bad id.
 */
const struct config_upstream_tls *config_upstream_tls(const struct config *,
	    enum cache_kind svc);
/*
 * Every upstream_tls of cfg read from its files, as a transfer would use
 * them: each ca_file holds at least one PEM certificate, each cert_file
 * a PEM certificate, each key_file a PEM private key (not encrypted) that
 * is that certificate's. stapled's start, -n and reload and staplectl's
 * fetch and prefetch call it. 0, or -1 with err naming the section, the
 * key and the file ("ocsp.upstream_tls.key_file /etc/x.pem: No such file
 * or directory").
 */
int	config_upstream_tls_check(const struct config *, char *err,
	    size_t errlen);
/*
 * How long an entry of kind is kept: its section's retention_s, its 0
 * meaning the kind's default (its row's conf.retention_s).
 */
long	config_retention_s(const struct config_service *, enum cache_kind kind);
/*
 * A service's entry cap: max_entries when set (0: none), else what a map
 * of map_bytes holds of its kind: CONFIG_MAP_FILL_PCT of the map, the
 * kind's map_share_pct of that, in entry_bytes per entry (kind_table),
 * at least 1. With every service left at its default the caps together
 * fill CONFIG_MAP_FILL_PCT of the map: a 1 GiB map holds 195,734 OCSP
 * entries, 1,310 RIMs, 15,728 PCCS and 13,981 KDS objects.
 */
long	config_max_entries(const struct config_service *, enum cache_kind,
	    size_t map_bytes);

#endif
