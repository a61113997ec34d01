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
#include "entry/kind.h"
#include "proxy/daemon/cli.h"
#include "proxy/daemon/daemon.h"
#include "proxy/kinds/route.h"

/* The flags of one kind: which list a value goes to. */
enum cli_kind_flag { CLI_UPSTREAM, CLI_ANCHOR, CLI_INTERMEDIATES, CLI_KIND_FLAGS };
static const char *const cli_kind_flag_str[CLI_KIND_FLAGS] = {
	[CLI_UPSTREAM] = "upstream",
	[CLI_ANCHOR] = "anchor",
	[CLI_INTERMEDIATES] = "intermediates",
};
#define CLI_FLAG_BYTES		64	/* "--" and a kind's flag */
#define CLI_HELP_COLUMN		28	/* where a flag's help starts */
#define CLI_LINE_MAX		80

/* The help of a kind's flag, NULL when the kind has none. */
static const char *
kind_flag_help(const struct route *r, int flag)
{
	switch (flag) {
	case CLI_UPSTREAM:
		return r->upstream_help;
	case CLI_ANCHOR:
		return r->anchor_help;
	default:
		return r->intermediates_help;
	}
}

/* "[--ocsp-upstream URL]..." for every kind's flag, wrapped under "usage:". */
static void
usage_kinds(FILE *f)
{
	char	one[CLI_FLAG_BYTES + 16];
	size_t	k, col = 15;
	int	flag, n;

	fprintf(f, "               [--cache-dir DIR]");
	col += 17;
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		for (flag = 0; flag < CLI_KIND_FLAGS; flag++) {
			if (kind_flag_help(route_table[k], flag) == NULL)
				continue;
			n = snprintf(one, sizeof(one), " [--%s-%s %s]...",
			    kind_name(k), cli_kind_flag_str[flag],
			    flag == CLI_UPSTREAM ? "URL" : "PEMFILE");
			if (col + (size_t)n > CLI_LINE_MAX) {
				fprintf(f, "\n              ");
				col = 14;
			}
			fputs(one, f);
			col += (size_t)n;
		}
	fputc('\n', f);
}

/* "  --ocsp-upstream URL       OCSP responder ... (repeatable; default URL)" for every kind. */
static void
usage_kinds_help(FILE *f)
{
	const char	*help, *url;
	char		 flagtext[CLI_FLAG_BYTES];
	size_t		 k;
	int		 flag, n;

	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		for (flag = 0; flag < CLI_KIND_FLAGS; flag++) {
			if ((help = kind_flag_help(route_table[k], flag)) == NULL)
				continue;
			n = snprintf(flagtext, sizeof(flagtext), "  --%s-%s %s",
			    kind_name(k), cli_kind_flag_str[flag],
			    flag == CLI_UPSTREAM ? "URL" : "PEMFILE");
			fprintf(f, "%-*s%s", CLI_HELP_COLUMN - 1, flagtext,
			    n < CLI_HELP_COLUMN - 1 ? " " : "  ");
			if (flag != CLI_UPSTREAM) {
				fprintf(f, "%s\n", help);
				continue;
			}
			url = kind_table[k]->conf.upstream;
			/* The URL on a line of its own when "default" would pass the edge. */
			if (CLI_HELP_COLUMN + strlen(help) +
			    strlen(" (repeatable; default ") > CLI_LINE_MAX)
				fprintf(f, "%s (repeatable;\n%*sdefault %s)\n", help,
				    CLI_HELP_COLUMN, "", url);
			else
				fprintf(f, "%s (repeatable; default %s)\n", help, url);
		}
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: stapled [-f config.json] [-n] [-d] [-v] [--listen HOST:PORT]...\n"
	    "               [--admin-listen HOST:PORT]...\n");
	usage_kinds(f);
	fprintf(f,
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
	    "  --cache-dir DIR           LMDB cache directory (default %s)\n",
	    CONFIG_DEFAULT_LISTEN, CONFIG_DEFAULT_CACHE_DIR);
	usage_kinds_help(f);
	fprintf(f,
	    "  -h, --help                this text\n"
	    "  -V, --version             print the version\n");
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
enum { O_LISTEN = 256, O_CACHE, O_ADMIN, O_LISTEN_TLS, O_TLS_CERT, O_TLS_KEY,
    O_TLS_CA, O_KIND };	/* O_KIND + kind * CLI_KIND_FLAGS + flag: a kind's flag */
#define CLI_FIXED_OPTS		10	/* the options of opts_fixed, not the kinds' */
#define CLI_OPTS_MAX		(CLI_FIXED_OPTS + CACHE_KIND_MAX * CLI_KIND_FLAGS + 1)

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

/* A kind's flag value into its list. 0 or -1. */
static int
push_kind(struct cli *c, int opt, char *v)
{
	struct cli_kind	*ck = &c->kinds[(opt - O_KIND) / CLI_KIND_FLAGS];

	switch ((opt - O_KIND) % CLI_KIND_FLAGS) {
	case CLI_UPSTREAM:
		return push(ck->upstreams, &ck->nupstreams, v);
	case CLI_ANCHOR:
		return push(ck->anchors, &ck->nanchors, v);
	default:
		return push(ck->intermediates, &ck->nintermediates, v);
	}
}

/* The fixed options, then each kind's flags (names in `names`), then the end. */
static void
cli_options(struct option *opts, char names[][CLI_FLAG_BYTES])
{
	static const struct option	fixed[CLI_FIXED_OPTS] = {
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "admin-listen", required_argument, NULL, O_ADMIN },
		{ "cache-dir", required_argument, NULL, O_CACHE },
		{ "listen-tls", required_argument, NULL, O_LISTEN_TLS },
		{ "tls-cert", required_argument, NULL, O_TLS_CERT },
		{ "tls-key", required_argument, NULL, O_TLS_KEY },
		{ "tls-client-ca", required_argument, NULL, O_TLS_CA },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	size_t	n = 0, k;
	int	flag;

	while (fixed[n].name != NULL) {
		opts[n] = fixed[n];
		n++;
	}
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		for (flag = 0; flag < CLI_KIND_FLAGS; flag++) {
			if (kind_flag_help(route_table[k], flag) == NULL)
				continue;
			snprintf(names[n], CLI_FLAG_BYTES, "%s-%s", kind_name(k),
			    cli_kind_flag_str[flag]);
			opts[n].name = names[n];
			opts[n].has_arg = required_argument;
			opts[n].flag = NULL;
			opts[n].val = O_KIND + (int)k * CLI_KIND_FLAGS + flag;
			n++;
		}
	memset(&opts[n], 0, sizeof(opts[n]));
}

int
parse_cli(int argc, char **argv, struct cli *c)
{
	static struct option	opts[CLI_OPTS_MAX];
	static char		names[CLI_OPTS_MAX][CLI_FLAG_BYTES];
	int			ch, rv = 0;

	cli_options(opts, names);
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
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("stapled %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			if (ch >= O_KIND && ch < O_KIND + CACHE_KIND_MAX *
			    CLI_KIND_FLAGS) {
				rv |= push_kind(c, ch, optarg);
				break;
			}
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
 * One kind's flags over its section: 0, -1 with err, or -2 when out of
 * memory.
 */
static int
set_kind(struct config *cfg, size_t k, const struct cli_kind *ck, char *err,
    size_t errlen)
{
	struct config_service	*svc = &cfg->svc[k];
	char			 flag[CLI_FLAG_BYTES];

	snprintf(flag, sizeof(flag), "--%s-upstream", kind_name(k));
	if (set_upstreams(svc, flag, ck->upstreams, ck->nupstreams, err,
	    errlen) == -1)
		return -1;
	if (ck->nanchors > 0 && config_set_strlist(&svc->anchors,
	    &svc->nanchors, ck->anchors, ck->nanchors) == -1)
		return -2;
	if (ck->nintermediates > 0 && config_set_strlist(&svc->intermediates,
	    &svc->nintermediates, ck->intermediates, ck->nintermediates) == -1)
		return -2;
	return 0;
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
	size_t		  k;
	int		  rv = 0;

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
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++)
		if ((rv = set_kind(cfg, k, &c->kinds[k], err, errlen)) != 0)
			break;
	if (rv == -2)
		goto oom;
	if (rv == -1)
		goto fail;
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
