/* SPDX-License-Identifier: Apache-2.0 */
/* stapled's command line and its configuration: the flags, then defaults, the file and the flags merged and checked. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "entry/conf.h"
#include "proxy/daemon/cli.h"
#include "proxy/daemon/daemon.h"

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
	    kind_table[CACHE_KIND_OCSP]->conf.upstream,
	    kind_table[CACHE_KIND_RIM]->conf.upstream,
	    kind_table[CACHE_KIND_PCCS]->conf.upstream,
	    kind_table[CACHE_KIND_KDS]->conf.upstream);
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

int
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
void
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
struct config *
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
	if (set_upstreams(&cfg->svc[CACHE_KIND_OCSP], "--ocsp-upstream", c->upstreams,
	    c->nupstreams, err, errlen) == -1 ||
	    set_upstreams(&cfg->svc[CACHE_KIND_RIM], "--rim-upstream", c->rim_upstreams,
	    c->nrim_upstreams, err, errlen) == -1 ||
	    set_upstreams(&cfg->svc[CACHE_KIND_PCCS], "--pccs-upstream", c->pccs_upstreams,
	    c->npccs_upstreams, err, errlen) == -1 ||
	    set_upstreams(&cfg->svc[CACHE_KIND_KDS], "--kds-upstream", c->kds_upstreams,
	    c->nkds_upstreams, err, errlen) == -1)
		goto fail;
	if (c->nanchors > 0 && config_set_strlist(&cfg->svc[CACHE_KIND_OCSP].anchors,
	    &cfg->svc[CACHE_KIND_OCSP].nanchors, c->anchors, c->nanchors) == -1)
		goto oom;
	if (c->nintermediates > 0 && config_set_strlist(&cfg->svc[CACHE_KIND_OCSP].intermediates,
	    &cfg->svc[CACHE_KIND_OCSP].nintermediates, c->intermediates, c->nintermediates) == -1)
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
