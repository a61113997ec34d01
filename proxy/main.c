/* SPDX-License-Identifier: Apache-2.0 */
/* stapled: serve vendor-signed attestation objects from a verified cache. Forks only the store's check walk. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "cache/daemon.h"
#include "cache/reader.h"
#include "cache/store.h"
#include "cache/writer.h"
#include "entry/conf.h"
#include "proxy/activate.h"
#include "proxy/access_log.h"
#include "proxy/fetch.h"
#include "proxy/http.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/metrics_page.h"
#include "proxy/notify.h"
#include "proxy/refresh.h"
#include "proxy/router.h"
#include "proxy/service.h"
#include "proxy/status.h"
#include "proxy/store_salvage.h"
#include "proxy/tls.h"

#define SHUTDOWN_POLL_MS	50
#define HEALTH_RECORD_S		10	/* upstream health written for staplectl */
#define HEALTH_MAX_UPSTREAMS	64
#define MAX_FLAG_VALUES		64
#define STORE_CHECK_POLL_MS	100	/* how often the check walk's child is polled */

/* Command-line values, kept to re-apply over the file on SIGHUP: flags win. */
struct cli {
	const char	*config_path;
	int		 check_only;
	int		 log_level;
	char		*listen[MAX_FLAG_VALUES];
	size_t		 nlisten;
	char		*admin_listen[MAX_FLAG_VALUES];
	size_t		 nadmin_listen;
	char		*listen_tls[MAX_FLAG_VALUES];
	size_t		 nlisten_tls;
	struct config_tls tls;		/* --tls-cert, --tls-key, --tls-client-ca */
	const char	*cache_dir;
	char		*upstreams[MAX_FLAG_VALUES];
	size_t		 nupstreams;
	char		*anchors[MAX_FLAG_VALUES];
	size_t		 nanchors;
	char		*intermediates[MAX_FLAG_VALUES];
	size_t		 nintermediates;
	char		*rim_upstreams[MAX_FLAG_VALUES];
	size_t		 nrim_upstreams;
	char		*pccs_upstreams[MAX_FLAG_VALUES];
	size_t		 npccs_upstreams;
	char		*kds_upstreams[MAX_FLAG_VALUES];
	size_t		 nkds_upstreams;
};

struct daemon {
	struct event_base	*base;
	struct cli		 cli;
	struct cache		*cache;
	struct cache_writer	*writer;	/* NULL: the loop writes */
	struct event		*writer_ev;	/* its results, on the loop */
	struct cache_reader	*reader;	/* lookup_threads; NULL: the loop looks up */
	struct event		*reader_ev;	/* its results, on the loop */
	struct fetch_ctx	*fetch;
	struct refresh		*refresh;
	struct http		*http;
	struct tls_server	*tls[CONFIG_MAX_LISTEN];	/* per listen; NULL: plain */
	struct router		*router;
	struct gen		*gen;
	struct event		*sig_term, *sig_int, *sig_hup, *shutdown_ev;
	struct event		*health_ev;
	struct event		*check_ev;	/* polls the check walk's child */
	pid_t			 check_pid;	/* 0: none running */
	int			 check_fd;	/* its reason pipe */
	struct store_salvage	*salvage;	/* what a moved-aside store still holds */
	char			 salvage_from[PATH_MAX];	/* moved aside at start */
	int			 lock_fd;	/* cache_lock_dir's, held for life */
	time_t			 started;
	int64_t			 shutdown_deadline_ms;
	int			 stopping;
	int			 listen_default;	/* neither file nor flag set listen */
	unsigned long		 reload_gen;	/* SIGHUPs handled */
	char			*cache_dir;	/* in use until a restart */
	struct access_log	 alog;
};

static void	send_status(struct daemon *, const char *head);

/* Bytes of the line naming every service's upstreams. */
#define UPSTREAMS_LINE_BYTES	2048

/* "ocsp: primary (URL), mirror (URL); pccs: ..." for the ready and reload lines. */
static char *
upstreams_line(struct gen *gen, char *buf, size_t len)
{
	char	one[UPSTREAMS_LINE_BYTES];
	size_t	id, off = 0;
	int	n;

	buf[0] = '\0';
	for (id = CACHE_KIND_OCSP; id < CACHE_KIND_MAX && off < len; id++) {
		struct fetch_pool	*pool = svc_pool(gen_svc(gen, id));

		if (pool == NULL)
			continue;
		n = snprintf(buf + off, len - off, "%s%s: %s", off ? "; " : "",
		    fetch_pool_service(pool),
		    fetch_pool_describe(pool, one, sizeof(one)));
		if (n < 0)
			break;
		off += (size_t)n;
	}
	if (off == 0)
		snprintf(buf, len, "no upstreams");
	return buf;
}

/* http_reply's callback: the hit histogram and the sampled access log. */
static void
on_reply(const struct http_req *req, int status, size_t bytes, void *arg)
{
	struct daemon	*d = arg;

	metrics_on_reply(req);
	access_log_reply(&d->alog, req, status, bytes);
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: stapled [-f config.json] [-n] [-d] [-v] [--listen HOST:PORT]...\n"
	    "               [--admin-listen HOST:PORT]...\n"
	    "               [--cache-dir DIR] [--ocsp-upstream URL]...\n"
	    "               [--ocsp-anchor PEMFILE]... [--ocsp-intermediates PEMFILE]...\n"
	    "               [--rim-upstream URL]... [--pccs-upstream URL]...\n"
	    "               [--kds-upstream URL]...\n"
	    "               [--listen-tls HOST:PORT --tls-cert PEMFILE --tls-key PEMFILE\n"
	    "                [--tls-client-ca PEMFILE]]\n"
	    "\n"
	    "  -f FILE                   configuration file (JSON, see stapled.conf(5))\n"
	    "  -n                        check the configuration and exit\n"
	    "  -d                        debug logging; -v more detail still\n"
	    "  --listen HOST:PORT        address to serve on (repeatable; default %s)\n"
	    "  --admin-listen HOST:PORT  serve /metrics, /healthz, /readyz there only\n"
	    "                            (repeatable; default: on every listener)\n"
	    "  --listen-tls HOST:PORT    address to serve HTTPS on (repeatable), with:\n"
	    "  --tls-cert PEMFILE        its certificate (then the chain)\n"
	    "  --tls-key PEMFILE         its private key\n"
	    "  --tls-client-ca PEMFILE   require client certificates issued by these CAs\n"
	    "  --cache-dir DIR           LMDB cache directory (default %s)\n"
	    "  --ocsp-upstream URL       OCSP responder, in failover order (repeatable;\n"
	    "                            default %s)\n"
	    "  --ocsp-anchor PEMFILE     trust anchors, replacing the built-in NVIDIA roots\n"
	    "  --ocsp-intermediates PEMFILE  untrusted CA certificates for chain building\n"
	    "  --rim-upstream URL        NVIDIA RIM service (repeatable; default %s)\n"
	    "  --pccs-upstream URL       Intel PCS or a PCCS (repeatable; default %s)\n"
	    "  --kds-upstream URL        AMD KDS or a mirror (repeatable; default %s)\n"
	    "  -h, --help                this text\n"
	    "  -V, --version             print the version\n",
	    CONFIG_DEFAULT_LISTEN, CONFIG_DEFAULT_CACHE_DIR,
	    CONFIG_DEFAULT_OCSP_UPSTREAM, CONFIG_DEFAULT_RIM_UPSTREAM,
	    CONFIG_DEFAULT_PCCS_UPSTREAM, CONFIG_DEFAULT_KDS_UPSTREAM);
}

static int
push(char **list, size_t *n, char *v)
{
	if (*n >= MAX_FLAG_VALUES) {
		fprintf(stderr, "stapled: too many values for one flag (max %d)\n",
		    MAX_FLAG_VALUES);
		return -1;
	}
	list[(*n)++] = v;
	return 0;
}

/* The long options' values for getopt_long. */
enum { O_LISTEN = 256, O_CACHE, O_UP, O_ANCHOR, O_INTER, O_RIM, O_PCCS,
    O_KDS, O_ADMIN, O_LISTEN_TLS, O_TLS_CERT, O_TLS_KEY, O_TLS_CA };

/* --listen-tls, --tls-cert, --tls-key, --tls-client-ca. 0 or -1. */
static int
parse_cli_tls(struct cli *c, int ch, char *v)
{
	switch (ch) {
	case O_LISTEN_TLS:
		return push(c->listen_tls, &c->nlisten_tls, v);
	case O_TLS_CERT:
		c->tls.cert = v;
		return 0;
	case O_TLS_KEY:
		c->tls.key = v;
		return 0;
	default:
		c->tls.client_ca = v;
		return 0;
	}
}

/* The TLS flags go together. 0, or -1 said on stderr. */
static int
cli_tls_check(const struct cli *c)
{
	if ((c->nlisten_tls > 0) == (c->tls.cert != NULL && c->tls.key != NULL) &&
	    (c->tls.client_ca == NULL || c->nlisten_tls > 0))
		return 0;
	fprintf(stderr, "stapled: --listen-tls needs --tls-cert and --tls-key, "
	    "and they (and --tls-client-ca) need --listen-tls\n");
	return -1;
}

static int
parse_cli(int argc, char **argv, struct cli *c)
{
	static const struct option	opts[] = {
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "admin-listen", required_argument, NULL, O_ADMIN },
		{ "cache-dir", required_argument, NULL, O_CACHE },
		{ "ocsp-upstream", required_argument, NULL, O_UP },
		{ "ocsp-anchor", required_argument, NULL, O_ANCHOR },
		{ "ocsp-intermediates", required_argument, NULL, O_INTER },
		{ "rim-upstream", required_argument, NULL, O_RIM },
		{ "pccs-upstream", required_argument, NULL, O_PCCS },
		{ "kds-upstream", required_argument, NULL, O_KDS },
		{ "listen-tls", required_argument, NULL, O_LISTEN_TLS },
		{ "tls-cert", required_argument, NULL, O_TLS_CERT },
		{ "tls-key", required_argument, NULL, O_TLS_KEY },
		{ "tls-client-ca", required_argument, NULL, O_TLS_CA },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	int	ch, rv = 0;

	c->log_level = -1;
	while ((ch = getopt_long(argc, argv, "f:ndvhV", opts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			c->config_path = optarg;
			break;
		case 'n':
			c->check_only = 1;
			break;
		case 'd':
			if (c->log_level < 1)
				c->log_level = 1;
			break;
		case 'v':
			c->log_level = 2;
			break;
		case O_LISTEN:
			rv |= push(c->listen, &c->nlisten, optarg);
			break;
		case O_ADMIN:
			rv |= push(c->admin_listen, &c->nadmin_listen, optarg);
			break;
		case O_LISTEN_TLS:
		case O_TLS_CERT:
		case O_TLS_KEY:
		case O_TLS_CA:
			rv |= parse_cli_tls(c, ch, optarg);
			break;
		case O_CACHE:
			c->cache_dir = optarg;
			break;
		case O_UP:
			rv |= push(c->upstreams, &c->nupstreams, optarg);
			break;
		case O_ANCHOR:
			rv |= push(c->anchors, &c->nanchors, optarg);
			break;
		case O_INTER:
			rv |= push(c->intermediates, &c->nintermediates, optarg);
			break;
		case O_RIM:
			rv |= push(c->rim_upstreams, &c->nrim_upstreams, optarg);
			break;
		case O_PCCS:
			rv |= push(c->pccs_upstreams, &c->npccs_upstreams, optarg);
			break;
		case O_KDS:
			rv |= push(c->kds_upstreams, &c->nkds_upstreams, optarg);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("stapled %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (cli_tls_check(c) == -1)
		return -1;
	if (optind != argc) {
		fprintf(stderr, "stapled: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return -1;
	}
	return rv;
}

/* Replace a service's upstreams from repeated flags; say which value is wrong, and how. */
static int
set_upstreams(struct config_service *svc, const char *flag, char *const *urls,
    size_t n, char *err, size_t errlen)
{
	char	why[256];
	size_t	i;

	if (n == 0 || config_set_upstreams(svc, urls, n) == 0)
		return 0;
	if (errno == EEXIST) {
		snprintf(err, errlen, "%s: two URLs on one host get the same name; "
		    "name them in the config file instead", flag);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (config_check_url(urls[i], why, sizeof(why)) == -1) {
			snprintf(err, errlen, "%s \"%s\": %s", flag, urls[i], why);
			return -1;
		}
	snprintf(err, errlen, "%s: %s", flag, strerror(errno));
	return -1;
}

/*
 * -n: a map_size_mb over the free space of the cache directory (or of its
 * nearest existing parent) is worth a warning, not an error: the map is a
 * ceiling that grows as entries come.
 */
static void
check_disk(const struct config *cfg)
{
	struct statvfs	 sv;
	char		 dir[PATH_MAX], *slash;
	unsigned long long free_b;

	if (snprintf(dir, sizeof(dir), "%s", cfg->cache_dir) >= (int)sizeof(dir))
		return;
	while (statvfs(dir, &sv) == -1) {
		if (errno != ENOENT || strcmp(dir, ".") == 0)
			return;
		if ((slash = strrchr(dir, '/')) == NULL)
			snprintf(dir, sizeof(dir), ".");
		else if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	free_b = (unsigned long long)sv.f_bavail * sv.f_frsize;
	if (cfg->map_size > free_b)
		fprintf(stderr, "warning: map_size_mb %zu is more than the %llu MiB "
		    "free under %s; the map is a ceiling, so writes fail as "
		    "\"map full\" when the disk fills first\n",
		    cfg->map_size >> 20, free_b >> 20, dir);
}

/*
 * Defaults, then the file, then the flags. Returns a complete config or
 * NULL with err. *listen_default (when not NULL): whether `listen` is
 * still the default list, set by neither the file nor a flag (both
 * replace the list, so its pointer tells).
 */
static struct config *
load_config(const struct cli *c, int *listen_default, char *err,
    size_t errlen)
{
	struct config	*cfg;
	char		**deflist;

	if ((cfg = calloc(1, sizeof(*cfg))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	config_defaults(cfg);
	deflist = cfg->listen;
	if (c->config_path != NULL &&
	    config_load_file(cfg, c->config_path, err, errlen) == -1)
		goto fail;
	if (c->log_level >= 0)
		cfg->log_level = c->log_level;
	if (c->nlisten + c->nlisten_tls > 0 && config_set_listen(cfg, c->listen,
	    c->nlisten, c->listen_tls, c->nlisten_tls, &c->tls) == -1)
		goto oom;
	if (c->nadmin_listen > 0 && config_set_strlist(&cfg->admin_listen,
	    &cfg->nadmin_listen, c->admin_listen, c->nadmin_listen) == -1)
		goto oom;
	if (listen_default != NULL)
		*listen_default = cfg->listen == deflist;
	if (c->cache_dir != NULL && config_set_str(&cfg->cache_dir, c->cache_dir) == -1)
		goto oom;
	if (set_upstreams(&cfg->ocsp, "--ocsp-upstream", c->upstreams,
	    c->nupstreams, err, errlen) == -1 ||
	    set_upstreams(&cfg->rim, "--rim-upstream", c->rim_upstreams,
	    c->nrim_upstreams, err, errlen) == -1 ||
	    set_upstreams(&cfg->pccs, "--pccs-upstream", c->pccs_upstreams,
	    c->npccs_upstreams, err, errlen) == -1 ||
	    set_upstreams(&cfg->amd_kds, "--kds-upstream", c->kds_upstreams,
	    c->nkds_upstreams, err, errlen) == -1)
		goto fail;
	if (c->nanchors > 0 && config_set_strlist(&cfg->ocsp.anchors,
	    &cfg->ocsp.nanchors, c->anchors, c->nanchors) == -1)
		goto oom;
	if (c->nintermediates > 0 && config_set_strlist(&cfg->ocsp.intermediates,
	    &cfg->ocsp.nintermediates, c->intermediates, c->nintermediates) == -1)
		goto oom;
	if (config_validate(cfg, err, errlen) == -1)
		goto fail;
	return cfg;
oom:
	snprintf(err, errlen, "out of memory");
fail:
	config_free(cfg);
	free(cfg);
	return NULL;
}

/*
 * A TLS context for each TLS listener of cfg into tls[] (NULL for plain
 * ones; free with tls_free_all). 0, or -1 with err naming the file that
 * does not load or the key that does not match.
 */
static int
tls_open_all(struct tls_server **tls, const struct config *cfg, char *err,
    size_t errlen)
{
	const struct config_tls	*f;
	size_t			 i;

	for (i = 0; i < cfg->nlisten && i < CONFIG_MAX_LISTEN; i++)
		if ((f = config_listen_tls(cfg, i)) != NULL &&
		    (tls[i] = tls_server_new(f, cfg->listen[i], err,
		    errlen)) == NULL)
			return -1;
	return 0;
}

static void
tls_free_all(struct tls_server **tls)
{
	size_t	i;

	for (i = 0; i < CONFIG_MAX_LISTEN; i++) {
		tls_server_free(tls[i]);
		tls[i] = NULL;
	}
}

/*
 * SIGHUP: each TLS listener's files again, from the new configuration
 * when it names the same address there (listen itself changes only at a
 * restart), else from the old one. One that fails keeps its context and
 * is logged as an error. 0, or -1 when any failed.
 */
static int
tls_reload_all(struct tls_server **tls, const struct config *old,
    const struct config *cfg)
{
	const struct config_tls	*f;
	char			 err[512];
	size_t			 i;
	int			 rv = 0;

	for (i = 0; i < old->nlisten && i < CONFIG_MAX_LISTEN; i++) {
		if (tls[i] == NULL)
			continue;
		f = config_listen_tls(old, i);
		if (i < cfg->nlisten && strcmp(cfg->listen[i], old->listen[i]) == 0 &&
		    config_listen_tls(cfg, i) != NULL)
			f = config_listen_tls(cfg, i);
		if (tls_server_reload(tls[i], f, err, sizeof(err)) == -1) {
			log_err("SIGHUP: %s; new connections keep the old "
			    "certificate", err);
			rv = -1;
		}
	}
	return rv;
}

static int64_t
now_ms(void)
{
	struct timespec	t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void
shutdown_poll(evutil_socket_t fd, short what, void *arg)
{
	struct daemon	*d = arg;
	struct timeval	 tv = { 0, SHUTDOWN_POLL_MS * 1000 };

	(void)fd;
	(void)what;
	if ((svc_pending() > 0 || fetch_ctx_inflight(d->fetch) > 0) &&
	    now_ms() < d->shutdown_deadline_ms) {
		evtimer_add(d->shutdown_ev, &tv);
		return;
	}
	if (svc_pending() > 0 || fetch_ctx_inflight(d->fetch) > 0)
		log_warn("shutdown: giving up on %zu client(s) and %zu fetch(es) still "
		    "in flight", svc_pending(), fetch_ctx_inflight(d->fetch));
	event_base_loopexit(d->base, NULL);
}

/*
 * Record what only the daemon knows (upstream health, refresh backlog) in
 * the cache's aux table, as JSON, so `staplectl status` can show it.
 */
static void
health_landed(const struct cache_writer_res *res, void *arg)
{
	(void)arg;
	if (res->rc == -1)
		log_warn("recording upstream health: %s", res->err);
}

static void
record_health(evutil_socket_t fd, short what, void *arg)
{
	struct daemon		*d = arg;
	struct fetch_health	 fh[HEALTH_MAX_UPSTREAMS];
	struct refresh_stats	 rs;
	struct timeval		 tv = { HEALTH_RECORD_S, 0 };
	struct fetch_pool	*pool;
	json_t			*root, *svcs, *ups, *u;
	char			*text;
	size_t			 id, i, n, k;
	unsigned long		 fails;

	(void)fd;
	(void)what;
	/* staplectl may have imported intermediates since: pick them up. */
	gen_learn_pool(d->gen);
	refresh_stats(d->refresh, &rs);
	root = json_pack("{s:i, s:s, s:I, s:I, s:I, s:I}", "pid", (int)getpid(),
	    "version", PACKAGE_VERSION, "started", (json_int_t)d->started,
	    "recorded", (json_int_t)time(NULL), "refresh_backlog",
	    (json_int_t)rs.backlog, "refresh_inflight", (json_int_t)rs.inflight);
	svcs = json_object();
	for (id = CACHE_KIND_OCSP; root != NULL && svcs != NULL && id < CACHE_KIND_MAX; id++) {
		pool = svc_pool(gen_svc(d->gen, id));
		n = fetch_pool_health(pool, fh, HEALTH_MAX_UPSTREAMS);
		ups = json_array();
		for (i = 0; ups != NULL && i < n; i++) {
			for (fails = 0, k = 1; k < FETCH_ERR_MAX; k++)
				fails += fh[i].failures[k];
			u = json_pack("{s:s, s:s, s:b, s:i, s:I, s:I, s:I}",
			    "name", fh[i].name, "url", fh[i].url, "up", fh[i].up,
			    "consecutive_failures", (int)fh[i].consecutive_failures,
			    "last_failure", (json_int_t)fh[i].last_failure_unix,
			    "requests", (json_int_t)fh[i].requests,
			    "failures", (json_int_t)fails);
			json_array_append_new(ups, u);
		}
		json_object_set_new(svcs, fetch_pool_service(pool), ups);
	}
	if (root != NULL && svcs != NULL)
		json_object_set_new(root, "upstreams", svcs);
	else
		json_decref(svcs);
	if (root != NULL && (text = json_dumps(root, JSON_COMPACT)) != NULL) {
		if (d->writer == NULL || cache_writer_aux_put(d->writer, "daemon",
		    (const uint8_t *)text, strlen(text), health_landed, NULL) == -1) {
			if (cache_aux_put(d->cache, "daemon", (const uint8_t *)text,
			    strlen(text)) == -1)
				log_warn("recording upstream health: %s",
				    cache_strerror(d->cache));
		}
		free(text);
	}
	json_decref(root);
	if (!d->stopping) {
		send_status(d, "");
		evtimer_add(d->health_ev, &tv);
	}
}

static void
on_term(evutil_socket_t sig, short what, void *arg)
{
	struct daemon			*d = arg;
	const struct config		*cfg = gen_config(d->gen);
	const struct config_service	*svcs[] = { &cfg->ocsp, &cfg->rim,
					    &cfg->pccs, &cfg->amd_kds };
	long				 grace = 0;
	size_t				 i;

	(void)what;
	if (d->stopping) {
		/* The second one: the operator will not wait for the grace. */
		log_warn("%s again: exiting now, leaving %zu client(s) and %zu "
		    "fetch(es) unfinished", sig == SIGTERM ? "SIGTERM" : "SIGINT",
		    svc_pending(), fetch_ctx_inflight(d->fetch));
		event_base_loopbreak(d->base);
		return;
	}
	d->stopping = 1;
	log_info("%s: no longer accepting; finishing %zu request(s) in flight",
	    sig == SIGTERM ? "SIGTERM" : "SIGINT", svc_pending());
	notify_send("STOPPING=1");
	router_stop(d->router);
	http_stop_accepting(d->http);
	refresh_stop(d->refresh);
	evtimer_del(d->health_ev);
	/* Clients are answered within their budget; fetches within their timeouts. */
	for (i = 0; i < sizeof(svcs) / sizeof(svcs[0]); i++) {
		if (svcs[i]->client_budget_ms > grace)
			grace = svcs[i]->client_budget_ms;
		if (svcs[i]->timeout_ms > grace)
			grace = svcs[i]->timeout_ms;
	}
	d->shutdown_deadline_ms = now_ms() + grace + 1000;
	shutdown_poll(-1, 0, d);
}

/* One STATUS= line (with `head`, e.g. "READY=1\n", in the same datagram). */
static void
send_status(struct daemon *d, const char *head)
{
	struct fetch_pool	*pools[CACHE_KIND_MAX] = { NULL };
	struct refresh_stats	 rs;
	struct status_summary	 sum;
	char			 line[NOTIFY_MAX_BYTES - 32];
	size_t			 id;

	if (!notify_enabled())
		return;
	refresh_stats(d->refresh, &rs);
	for (id = CACHE_KIND_OCSP; id < CACHE_KIND_MAX; id++)
		pools[id] = svc_pool(gen_svc(d->gen, id));
	status_summarize(&sum, &rs, pools, CACHE_KIND_MAX, time(NULL));
	status_line(&sum, line, sizeof(line));
	notify_send("%sSTATUS=%s", head, line);
}

/* The verdict on a reload (or on start-up, generation 0), for staplectl reload. */
static void
reload_record(struct daemon *d, int ok, const char *msg)
{
	struct cache_reload	r;

	memset(&r, 0, sizeof(r));
	r.pid = getpid();
	r.generation = d->reload_gen;
	r.ok = ok;
	r.at = (int64_t)time(NULL);
	snprintf(r.message, sizeof(r.message), "%s", msg);
	if (cache_reload_put(d->cache_dir, &r) == -1)
		log_warn("cache_dir %s: recording the reload's verdict: %s",
		    d->cache_dir, strerror(errno));
}

/* Whether what takes effect only at a restart differs between two configurations. */
static int
restart_only_changed(const struct config *a, const struct config *b)
{
	size_t	i;

	if (a->nlisten != b->nlisten || a->nadmin_listen != b->nadmin_listen ||
	    strcmp(a->cache_dir, b->cache_dir) != 0 || a->map_size != b->map_size ||
	    a->lookup_threads != b->lookup_threads)
		return 1;
	for (i = 0; i < a->nlisten; i++)
		if (strcmp(a->listen[i], b->listen[i]) != 0 ||
		    (config_listen_tls(a, i) == NULL) !=
		    (config_listen_tls(b, i) == NULL))
			return 1;
	for (i = 0; i < a->nadmin_listen; i++)
		if (strcmp(a->admin_listen[i], b->admin_listen[i]) != 0)
			return 1;
	return 0;
}

/*
 * Load the configuration again and swap it in. 0; 1 when it is in but a
 * TLS listener's files did not load (that listener keeps its old
 * certificate; logged); or -1 with err (the old configuration stays).
 */
static int
reload_apply(struct daemon *d, char *err, size_t errlen)
{
	const struct config	*old = gen_config(d->gen);
	struct config		*cfg;
	struct gen		*gen;
	int			 tls_failed;

	if ((cfg = load_config(&d->cli, NULL, err, errlen)) == NULL)
		return -1;
	/* The listeners and the cache stay as they are until a restart. */
	if (restart_only_changed(cfg, old))
		log_warn("SIGHUP: listen (and whether each uses TLS), admin_listen, "
		    "cache_dir, map_size_mb and lookup_threads take effect at the "
		    "next restart");
	/* gen_new owns cfg from here, on failure too. */
	if ((gen = gen_new(cfg, d->fetch, d->cache, d->writer, d->reader,
	    d->refresh, err, errlen)) == NULL)
		return -1;
	log_set_level(LOG_LVL_INFO + gen_config(gen)->log_level);
	tls_failed = tls_reload_all(d->tls, old, gen_config(gen)) == -1;
	gen_install_refresh(gen);
	router_set_gen(d->router, gen);
	http_set_config(d->http, gen_config(gen));
	access_log_set_sample(&d->alog, gen_config(gen)->access_log_sample);
	gen_unref(d->gen);
	d->gen = gen;
	return tls_failed;
}

/* SIGHUP: reload, telling the service manager (RELOADING=1 ... READY=1) and staplectl. */
static void
on_hup(evutil_socket_t sig, short what, void *arg)
{
	struct daemon	*d = arg;
	char		 err[CACHE_RELOAD_MSG_BYTES - 64], msg[CACHE_RELOAD_MSG_BYTES];
	char		 line[UPSTREAMS_LINE_BYTES];
	int		 rv;

	(void)sig;
	(void)what;
	if (d->stopping)
		return;
	d->reload_gen++;
	notify_send("RELOADING=1\nEXTEND_TIMEOUT_USEC=%lld%s",
	    (long long)NOTIFY_EXTEND_TIMEOUT_US,
	    notify_watchdog_usec() > 0 ? "\nWATCHDOG=1" : "");
	if ((rv = reload_apply(d, err, sizeof(err))) == -1) {
		log_err("SIGHUP: configuration not reloaded, keeping the old one: %s",
		    err);
		snprintf(msg, sizeof(msg), "configuration refused, the old one "
		    "stays: %s", err);
		reload_record(d, 0, msg);
		send_status(d, "READY=1\n");
		return;
	}
	if (rv == 1)
		snprintf(msg, sizeof(msg), "configuration reloaded, but a TLS "
		    "certificate or key did not load: that listener keeps its old "
		    "one (see the log)");
	else
		snprintf(msg, sizeof(msg), "configuration reloaded (%zu OCSP "
		    "upstream(s))", gen_config(d->gen)->ocsp.nupstreams);
	log_info("SIGHUP: configuration reloaded; upstreams: %s",
	    upstreams_line(d->gen, line, sizeof(line)));
	reload_record(d, rv == 0, msg);
	send_status(d, "READY=1\n");
}

static int
make_dir(const char *dir, char *err, size_t errlen)
{
	struct stat	st;

	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "cache_dir: %s: not a directory", dir);
			return -1;
		}
		return 0;
	}
	if (mkdir(dir, 0750) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "cache_dir: %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* The note /readyz and the log give for a damaged store moved aside. */
static void
damage_note(char *note, size_t len, const char *why, const char *aside)
{
	char		when[32];
	struct tm	tm;
	time_t		now = time(NULL);

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	/* A note cut short still names the damage. */
	if (snprintf(note, len, "store damaged (%s): moved aside to %s at %s; "
	    "serving from a new store", why, aside, when) >= (int)len)
		log_debug("cache: the damage note was cut short");
}

/*
 * One listener: the address addr to bind (fd -1), or the passed socket fd
 * named name; tls (borrowed, may be NULL) as struct http_listen says. 0,
 * or -1 with err (http_add_listener's).
 */
static int
listen_one(struct http *h, const char *addr, int fd, const char *name,
    unsigned flags, struct tls_server *tls, char *err, size_t errlen)
{
	const struct http_listen	spec = { .addr = addr, .fd = fd,
	    .name = name, .flags = flags, .tls = tls };

	return http_add_listener(h, &spec, err, errlen);
}

/*
 * Bind the n addresses addrs with flags; tls NULL, or one per address
 * (NULL: plain). listen and admin_listen alike. 0, or -1 with err.
 */
static int
listen_addrs(struct http *h, char *const *addrs, size_t n, unsigned flags,
    struct tls_server *const *tls, char *err, size_t errlen)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (listen_one(h, addrs[i], -1, NULL, flags,
		    tls != NULL ? tls[i] : NULL, err, errlen) == -1)
			return -1;
	return 0;
}

/*
 * Serve on the sockets a service manager passed, before the configured
 * addresses, so a configured address equal to a passed one is served by
 * it (http_add_listener) instead of failing with EADDRINUSE. 0, or -1
 * with err; the sockets not yet taken are closed then.
 */
static int
listen_passed(struct http *h, struct activate_sock *socks, size_t n,
    char *err, size_t errlen)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (listen_one(h, NULL, socks[i].fd, socks[i].name,
		    socks[i].flags, NULL, err, errlen) == -1) {
			for (; i < n; i++)
				close(socks[i].fd);
			return -1;
		}
	return 0;
}

/*
 * Every listener: the passed sockets, then listen (unless it is the
 * default and sockets were passed: the socket unit chose the addresses),
 * then admin_listen. With an admin listener, the ops endpoints are served
 * there only. 0, or -1 with err.
 */
static int
listen_every(struct daemon *d, const struct config *cfg, char *err,
    size_t errlen)
{
	struct activate_sock	socks[ACTIVATE_MAX_FDS];
	size_t			n, i;
	int			admin = cfg->nadmin_listen > 0;

	if (activate_collect(socks, ACTIVATE_MAX_FDS, &n, err, errlen) == -1 ||
	    listen_passed(d->http, socks, n, err, errlen) == -1)
		return -1;
	if (n > 0 && d->listen_default)
		log_info("listen: not set; serving on the %zu passed socket(s) "
		    "only", n);
	else if (listen_addrs(d->http, cfg->listen, cfg->nlisten, 0, d->tls,
	    err, errlen) == -1)
		return -1;
	if (listen_addrs(d->http, cfg->admin_listen, cfg->nadmin_listen,
	    HTTP_LISTEN_ADMIN, NULL, err, errlen) == -1)
		return -1;
	for (i = 0; i < n; i++)
		admin |= (socks[i].flags & HTTP_LISTEN_ADMIN) != 0;
	router_set_admin_only(d->router, admin);
	return 0;
}

/*
 * Claim the cache directory, run the cheap checks, move a damaged file
 * aside and open the store. 0, or -1 with a message in err.
 */
static int
store_open(struct daemon *d, const struct config *cfg, char *err,
    size_t errlen)
{
	char	why[CACHE_DAMAGE_NOTE_BYTES], aside[PATH_MAX];
	char	note[CACHE_DAMAGE_NOTE_BYTES * 2];
	int	r;

	note[0] = '\0';
	if (make_dir(cfg->cache_dir, err, errlen) == -1 ||
	    (d->lock_fd = cache_lock_dir(cfg->cache_dir, err, errlen)) == -1)
		return -1;
	if ((r = cache_check_file(cfg->cache_dir, why, sizeof(why))) == -1) {
		snprintf(err, errlen, "cache: %s", why);
		return -1;
	}
	if (r == 1) {
		if (cache_move_aside(cfg->cache_dir, aside, sizeof(aside)) == -1) {
			snprintf(err, errlen, "cache %s damaged (%s), and moving "
			    "it aside failed: %s", cfg->cache_dir, why,
			    strerror(errno));
			return -1;
		}
		damage_note(note, sizeof(note), why, aside);
		metrics.store_damaged++;
		log_err("cache %s: %s", cfg->cache_dir, note);
		snprintf(d->salvage_from, sizeof(d->salvage_from), "%s", aside);
	}
	if ((d->cache = cache_open(cfg->cache_dir, cfg->map_size, 0, err,
	    errlen)) == NULL)
		return -1;
	/* Every write of the daemon can be made again: one sync a commit. */
	if (cache_set_lazy_meta(d->cache, 1) == -1)
		log_warn("cache %s: %s; every commit syncs twice",
		    cfg->cache_dir, cache_strerror(d->cache));
	/* A store an older stapled wrote: its due index was built just now. */
	if (cache_due_built(d->cache) > 0)
		log_info("cache %s: built the refresh due index: %ld entries",
		    cfg->cache_dir, cache_due_built(d->cache));
	if (note[0] != '\0')
		cache_note_damage(d->cache, note);
	return 0;
}

/* The check walk's child: until it ends, poll; then judge, and refresh. */
static void
store_check_poll(evutil_socket_t fd, short what, void *arg)
{
	struct daemon	*d = arg;
	struct timeval	 tv = { 0, STORE_CHECK_POLL_MS * 1000 };
	char		 why[CACHE_DAMAGE_NOTE_BYTES], aside[PATH_MAX];
	char		 note[CACHE_DAMAGE_NOTE_BYTES * 2];
	int		 status;
	pid_t		 r;

	(void)fd;
	(void)what;
	if ((r = waitpid(d->check_pid, &status, WNOHANG)) == 0) {
		evtimer_add(d->check_ev, &tv);
		return;
	}
	d->check_pid = 0;
	if (r == -1) {
		log_warn("cache check: waitpid: %s", strerror(errno));
		close(d->check_fd);
	} else if (cache_check_result(status, d->check_fd, why,
	    sizeof(why)) == 1) {
		/*
		 * What the writer has in hand lands first (it writes the old
		 * file), and no lookup reads it while it closes.
		 */
		cache_reader_wait(d->reader);
		cache_writer_wait(d->writer);
		if (cache_reset(d->cache, "", aside, sizeof(aside)) == -1)
			fatal("cache %s damaged (%s); %s", gen_config(d->gen)->cache_dir,
			    why, cache_strerror(d->cache));
		damage_note(note, sizeof(note), why, aside);
		cache_note_damage(d->cache, note);
		metrics.store_damaged++;
		log_err("cache %s: %s", gen_config(d->gen)->cache_dir, note);
		store_salvage_start(d->salvage, aside);
	} else
		log_debug("cache check: every record read");
	d->check_fd = -1;
	if (!d->stopping)
		refresh_start(d->refresh);
}

/*
 * After ready: walk the whole store in a child, which damage may kill;
 * the refresh walk waits for its verdict. Without a child, refresh now.
 */
static void
store_check_start(struct daemon *d)
{
	struct timeval	tv = { 0, STORE_CHECK_POLL_MS * 1000 };

	/* A file moved aside at start: salvaged beside the check. */
	if (d->salvage_from[0] != '\0')
		store_salvage_start(d->salvage, d->salvage_from);
	if ((d->check_ev = evtimer_new(d->base, store_check_poll, d)) == NULL ||
	    (d->check_pid = cache_check_spawn(gen_config(d->gen)->cache_dir,
	    &d->check_fd)) == -1) {
		log_warn("cache check: cannot start the walk: %s",
		    strerror(errno));
		d->check_pid = 0;
		refresh_start(d->refresh);
		return;
	}
	evtimer_add(d->check_ev, &tv);
}

static void
store_check_stop(struct daemon *d)
{
	if (d->check_pid > 0) {
		kill(d->check_pid, SIGKILL);
		waitpid(d->check_pid, NULL, 0);
		close(d->check_fd);
	}
	if (d->check_ev != NULL)
		event_free(d->check_ev);
}

/*
 * Ready: READY=1, the watchdog, then the start-up verdict for staplectl
 * reload, which waits for it (the SIGHUP handler is in place before
 * either): a file write and a rename, which a busy disk can hold up, need
 * not stand before READY=1.
 */
static void
announce_ready(struct daemon *d)
{
	send_status(d, "READY=1\n");
	if (notify_watchdog_start(d->base) == -1)
		fatal("cannot start the watchdog timer");
	reload_record(d, 1, "started");
}

/*
 * The loop's first turn after READY=1: libcurl and its libraries (about
 * 8 ms here), which no answer from the store needs, so that the first
 * refresh or miss does not wait for them; a missing library is logged now.
 */
static void
load_curl(evutil_socket_t fd, short what, void *arg)
{
	struct daemon	*d = arg;

	(void)fd;
	(void)what;
	(void)fetch_ctx_load(d->fetch);
}

/* stapled -n: the configuration with its trust and TLS files loaded. The exit status. */
static int
check_only(struct daemon *d, struct config *cfg)
{
	struct gen	*probe;
	char		 err[1024];

	probe = gen_new(cfg, NULL, NULL, NULL, NULL, NULL, err, sizeof(err));
	if (probe != NULL && tls_open_all(d->tls, cfg, err, sizeof(err)) == -1) {
		gen_unref(probe);
		probe = NULL;
	}
	tls_free_all(d->tls);
	if (probe == NULL) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	check_disk(cfg);
	printf("configuration OK\n");
	gen_unref(probe);
	return 0;
}

/* The signals and timers of the daemon's life; exits when they cannot be made. */
static void
install_events(struct daemon *d)
{
	d->sig_term = evsignal_new(d->base, SIGTERM, on_term, d);
	d->sig_int = evsignal_new(d->base, SIGINT, on_term, d);
	d->sig_hup = evsignal_new(d->base, SIGHUP, on_hup, d);
	d->shutdown_ev = evtimer_new(d->base, shutdown_poll, d);
	d->health_ev = evtimer_new(d->base, record_health, d);
	if (d->sig_term == NULL || d->sig_int == NULL || d->sig_hup == NULL ||
	    d->shutdown_ev == NULL || d->health_ev == NULL ||
	    evsignal_add(d->sig_term, NULL) == -1 ||
	    evsignal_add(d->sig_int, NULL) == -1 ||
	    evsignal_add(d->sig_hup, NULL) == -1)
		fatal("cannot install signal handlers");
}

static void
writer_collect(evutil_socket_t fd, short what, void *arg)
{
	struct daemon	*d = arg;

	(void)fd;
	(void)what;
	cache_writer_collect(d->writer);
}

/*
 * The store's writes (and their syncs) go to a thread of their own, so
 * no client waits for a commit; without it, the loop writes.
 */
static void
writer_start(struct daemon *d)
{
	char	err[256];

	if ((d->writer = cache_writer_start(d->cache, err, sizeof(err))) == NULL) {
		log_warn("%s: the event loop writes the store itself", err);
		return;
	}
	d->writer_ev = event_new(d->base, cache_writer_fd(d->writer),
	    EV_READ | EV_PERSIST, writer_collect, d);
	if (d->writer_ev == NULL || event_add(d->writer_ev, NULL) == -1)
		fatal("cannot watch the store's writer thread");
}

static void
reader_collect(evutil_socket_t fd, short what, void *arg)
{
	struct daemon	*d = arg;

	(void)fd;
	(void)what;
	cache_reader_collect(d->reader);
}

/*
 * lookup_threads: the hits' lookups go to threads of their own, so a
 * store page read from disk holds one client, not the loop; without
 * them, or when they cannot start, the loop looks up.
 */
static void
reader_start(struct daemon *d, const struct config *cfg)
{
	char	err[256];

	if (cfg->lookup_threads == 0)
		return;
	if ((d->reader = cache_reader_start(d->cache,
	    (unsigned)cfg->lookup_threads, err, sizeof(err))) == NULL) {
		log_warn("%s: the event loop looks entries up itself", err);
		return;
	}
	d->reader_ev = event_new(d->base, cache_reader_fd(d->reader),
	    EV_READ | EV_PERSIST, reader_collect, d);
	if (d->reader_ev == NULL || event_add(d->reader_ev, NULL) == -1)
		fatal("cannot watch the store's lookup threads");
}

/* Everything main made, in the order that keeps each user before what it uses. */
static void
daemon_free(struct daemon *d)
{
	/* Lookups in hand finish and their clients are answered (or fetched for). */
	cache_reader_wait(d->reader);
	/* Writes in hand land, and the jobs and clients waiting for them are answered. */
	cache_writer_wait(d->writer);
	if (d->sig_term != NULL)
		event_free(d->sig_term);
	if (d->sig_int != NULL)
		event_free(d->sig_int);
	if (d->sig_hup != NULL)
		event_free(d->sig_hup);
	if (d->shutdown_ev != NULL)
		event_free(d->shutdown_ev);
	if (d->health_ev != NULL)
		event_free(d->health_ev);
	http_free(d->http);
	tls_free_all(d->tls);	/* after the connections that use them */
	router_free(d->router);
	refresh_free(d->refresh);
	gen_unref(d->gen);
	fetch_ctx_free(d->fetch);
	store_salvage_free(d->salvage);
	store_check_stop(d);
	/* The last touches refresh_free wrote. */
	cache_reader_stop(d->reader);
	if (d->reader_ev != NULL)
		event_free(d->reader_ev);
	cache_writer_stop(d->writer);
	if (d->writer_ev != NULL)
		event_free(d->writer_ev);
	cache_close(d->cache);
	if (d->lock_fd != -1)
		close(d->lock_fd);
	notify_close();
	free(d->cache_dir);
	if (d->base != NULL)
		event_base_free(d->base);
}

int
main(int argc, char **argv)
{
	struct daemon	 d;
	struct config	*cfg;
	char		 err[1024], line[UPSTREAMS_LINE_BYTES];
	int		 rv = 1;

	metrics_mark_start();	/* process_start_time_seconds, before anything slow */
	memset(&d, 0, sizeof(d));
	d.lock_fd = d.check_fd = -1;
	signal(SIGPIPE, SIG_IGN);
	if (parse_cli(argc, argv, &d.cli) == -1)
		return 2;
	if ((cfg = load_config(&d.cli, &d.listen_default, err,
	    sizeof(err))) == NULL) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	log_set_level(LOG_LVL_INFO + cfg->log_level);
	if (d.cli.check_only)
		return check_only(&d, cfg);
	if ((d.base = event_base_new()) == NULL)
		fatal("cannot create the event loop");
	if ((d.cache_dir = strdup(cfg->cache_dir)) == NULL)
		fatal("out of memory");
	notify_init();
	/*
	 * Checking and opening a large store, loading the trust files: more
	 * time to start, and a ping, since the watchdog already runs.
	 */
	notify_send("EXTEND_TIMEOUT_USEC=%lld%s", (long long)NOTIFY_EXTEND_TIMEOUT_US,
	    notify_watchdog_usec() > 0 ? "\nWATCHDOG=1" : "");
	if (store_open(&d, cfg, err, sizeof(err)) == -1) {
		log_err("%s", err);
		config_free(cfg);
		free(cfg);
		goto out;
	}
	writer_start(&d);
	reader_start(&d, cfg);
	if ((d.fetch = fetch_ctx_new(d.base)) == NULL ||
	    (d.refresh = refresh_new(d.base, d.cache, d.writer)) == NULL ||
	    (d.router = router_new(d.refresh, d.cache)) == NULL ||
	    (d.salvage = store_salvage_new(d.base, &d.gen)) == NULL)
		fatal("out of memory");
	if ((d.http = http_new(d.base, router_dispatch, d.router)) == NULL)
		fatal("out of memory");
	if (tls_open_all(d.tls, cfg, err, sizeof(err)) == -1 ||
	    listen_every(&d, cfg, err, sizeof(err)) == -1) {
		log_err("%s", err);
		config_free(cfg);
		free(cfg);
		goto out;
	}
	if ((d.gen = gen_new(cfg, d.fetch, d.cache, d.writer, d.reader,
	    d.refresh, err, sizeof(err))) == NULL) {
		log_err("%s", err);
		goto out;
	}
	gen_install_refresh(d.gen);
	router_set_gen(d.router, d.gen);
	http_set_config(d.http, gen_config(d.gen));
	access_log_set_sample(&d.alog, gen_config(d.gen)->access_log_sample);
	http_set_reply_cb(d.http, on_reply, &d);
	install_events(&d);
	/*
	 * Ready as soon as the cache is open: the refresh walk runs behind,
	 * after the store's check, which a forked child starts only now so
	 * its fork is not on the way to READY=1.
	 */
	d.started = time(NULL);
	{
		struct timeval	tv = { HEALTH_RECORD_S, 0 };

		evtimer_add(d.health_ev, &tv);
	}
	log_info("ready: cache %s; upstreams: %s", gen_config(d.gen)->cache_dir,
	    upstreams_line(d.gen, line, sizeof(line)));
	announce_ready(&d);
	store_check_start(&d);
	{
		struct timeval	now = { 0, 0 };

		if (event_base_once(d.base, -1, EV_TIMEOUT, load_curl, &d,
		    &now) == -1)
			fatal("out of memory");
	}
	event_base_dispatch(d.base);
	record_health(-1, 0, &d);
	log_info("stopped");
	rv = 0;
out:
	daemon_free(&d);
	return rv;
}
