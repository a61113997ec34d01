/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration model: each service's section by its kind, who owns what, and the setters. */
#include <config.h>	/* autoconf's; "config.h" here would be entry/conf.h */

#include <stdlib.h>
#include <string.h>

#include "entry/conf.h"
#include "entry/conf_int.h"
#include "entry/kind.h"

const char *const config_mode_str[2] = {
	[CONFIG_MODE_CACHE_FIRST] = "cache_first",
	[CONFIG_MODE_UPSTREAM_FIRST] = "upstream_first",
};
const char *const config_offload_str[CONFIG_OFFLOAD_MAX] = {
	[CONFIG_OFFLOAD_DISK] = "disk",
	[CONFIG_OFFLOAD_ALWAYS] = "always",
};

const struct config_service *
config_service(const struct config *cfg, enum cache_kind svc)
{
	if (cfg == NULL || (int)svc < KIND_FIRST || svc >= CACHE_KIND_MAX)
		return NULL;
	return &cfg->svc[svc];
}

struct config_service *
section(struct config *cfg, int svc)
{
	return &cfg->svc[svc];
}

const struct config_upstream_tls *
config_upstream_tls(const struct config *cfg, enum cache_kind svc)
{
	const struct config_service	*s;

	if ((s = config_service(cfg, svc)) == NULL)
		return NULL;
	return s->upstream_tls.given ? &s->upstream_tls : &cfg->upstream_tls;
}

long
config_retention_s(const struct config_service *s, enum cache_kind kind)
{
	return s->retention_s > 0 ? s->retention_s :
	    kind_table[kind]->conf.retention_s;
}

long
config_max_entries(const struct config_service *s, enum cache_kind kind,
    size_t map_bytes)
{
	const struct kind	*k;
	double			 n;

	if (s->max_entries != CONFIG_MAX_ENTRIES_AUTO)
		return s->max_entries;
	if ((int)kind < KIND_FIRST || kind >= CACHE_KIND_MAX)
		return 0;
	k = kind_table[kind];
	n = (double)map_bytes * CONFIG_MAP_FILL_PCT / 100 * k->map_share_pct /
	    100 / (double)k->entry_bytes;
	return n < 1 ? 1 : n > CONFIG_MAX_MAX_ENTRIES ? CONFIG_MAX_MAX_ENTRIES :
	    (long)n;
}

/* ---- lists and strings ------------------------------------------------- */

void
strlist_free(char **list, size_t n)
{
	size_t	i;

	if (list == NULL)
		return;
	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

void
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
void
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

void
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
upstream_tls_free(struct config_upstream_tls *t)
{
	free(t->ca_file);
	free(t->cert_file);
	free(t->key_file);
	memset(t, 0, sizeof(*t));
}

static void
service_free(struct config_service *s)
{
	upstreams_free(s->upstreams, s->nupstreams);
	strlist_free(s->anchors, s->nanchors);
	strlist_free(s->intermediates, s->nintermediates);
	strlist_free(s->paths, s->npaths);
	free(s->api_key_file);
	upstream_tls_free(&s->upstream_tls);
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
	upstream_tls_free(&cfg->upstream_tls);
	for (svc = KIND_FIRST; svc < CACHE_KIND_MAX; svc++)
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
int
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
