/* SPDX-License-Identifier: Apache-2.0 */
/* SIGHUP: the configuration loaded again, through the checks of a start, into a new generation and new TLS contexts; the verdict recorded for staplectl reload and /metrics. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "cache/daemon.h"
#include "entry/conf.h"
#include "proxy/access_log.h"
#include "proxy/daemon/cli.h"
#include "proxy/daemon/conf_vet.h"
#include "proxy/daemon/daemon.h"
#include "proxy/daemon/health.h"
#include "proxy/http/http.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/daemon/notify.h"
#include "proxy/daemon/reload.h"
#include "proxy/kinds/router.h"
#include "proxy/service.h"
#include "proxy/daemon/store_ops.h"
#include "proxy/http/tls.h"

/*
 * The running TLS listeners take the contexts in fresh (conf_vet's, made
 * from the new configuration's files) of the same address; one that the
 * new configuration no longer names with TLS keeps its context until the
 * restart that drops it. fresh is freed.
 */
static void
tls_take_all(struct tls_server **tls, struct tls_server **fresh)
{
	size_t	i, j;

	for (i = 0; i < CONFIG_MAX_LISTEN; i++)
		for (j = 0; tls[i] != NULL && j < CONFIG_MAX_LISTEN; j++)
			if (fresh[j] != NULL && strcmp(tls_server_name(tls[i]),
			    tls_server_name(fresh[j])) == 0) {
				tls_server_take(tls[i], fresh[j]);
				break;
			}
	tls_servers_free(fresh);
}

/* The verdict on a reload (or on start-up, generation 0), for staplectl reload and /metrics. */
void
reload_record(struct daemon *d, int ok, const char *msg)
{
	struct cache_reload	r;

	memset(&r, 0, sizeof(r));
	r.pid = getpid();
	r.generation = d->reload_gen;
	r.ok = ok;
	r.at = (int64_t)time(NULL);
	snprintf(r.message, sizeof(r.message), "%s", msg);
	metrics.config_reload_ok = ok != 0;
	if (ok)
		metrics.config_reload_ok_at = r.at;
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
 * Load the configuration again, put it through the checks of a start
 * (conf_vet) and swap it in: the TLS listeners take their new contexts.
 * 0, or -1 with err (nothing changed: the old configuration, and each TLS
 * listener its context, stay).
 */
static int
reload_apply(struct daemon *d, char *err, size_t errlen)
{
	const struct config	*old = gen_config(d->gen);
	struct config		*cfg;
	struct tls_server	*fresh[CONFIG_MAX_LISTEN] = { NULL };
	struct gen		*gen;
	int			 listen_default;

	if ((cfg = load_config(&d->cli, &listen_default, err, errlen)) == NULL)
		return -1;
	/* conf_vet owns cfg from here, on failure too. */
	if ((gen = conf_vet(d, cfg, listen_default, fresh, err, errlen)) == NULL)
		return -1;
	/* The listeners and the cache stay as they are until a restart. */
	if (restart_only_changed(gen_config(gen), old))
		log_warn("SIGHUP: listen (and whether each uses TLS), admin_listen, "
		    "cache_dir, map_size_mb and lookup_threads take effect at the "
		    "next restart");
	log_set_level(LOG_LVL_INFO + gen_config(gen)->log_level);
	tls_take_all(d->tls, fresh);
	gen_install_refresh(gen);
	router_set_gen(d->router, gen);
	http_set_config(d->http, gen_config(gen));
	access_log_set_sample(&d->alog, gen_config(gen)->access_log_sample);
	gen_unref(d->gen);
	d->gen = gen;
	return 0;
}

/* What staplectl reload prints: "configuration reloaded (upstreams: ocsp 2, rim 1, ...)", each kind's count. */
static void
reloaded_msg(const struct config *cfg, char *msg, size_t len)
{
	size_t	off;
	int	k, n;

	n = snprintf(msg, len, "configuration reloaded (upstreams:");
	off = n > 0 && (size_t)n < len ? (size_t)n : 0;
	for (k = KIND_FIRST; k < CACHE_KIND_MAX && off < len; k++) {
		n = snprintf(msg + off, len - off, "%s %s %zu",
		    k == KIND_FIRST ? "" : ",", cache_kind_str[k],
		    cfg->svc[k].nupstreams);
		if (n < 0)
			return;
		off += (size_t)n;
	}
	if (off < len)
		snprintf(msg + off, len - off, ")");
}

/* SIGHUP: reload, telling the service manager (RELOADING=1 ... READY=1) and staplectl. */
void
on_hup(evutil_socket_t sig, short what, void *arg)
{
	struct daemon	*d = arg;
	char		 err[CACHE_RELOAD_MSG_BYTES - 64], msg[CACHE_RELOAD_MSG_BYTES];
	char		 line[UPSTREAMS_LINE_BYTES];

	(void)sig;
	(void)what;
	if (d->stopping)
		return;
	d->reload_gen++;
	notify_send("RELOADING=1\nEXTEND_TIMEOUT_USEC=%lld%s",
	    (long long)NOTIFY_EXTEND_TIMEOUT_US,
	    notify_watchdog_usec() > 0 ? "\nWATCHDOG=1" : "");
	store_write_again(d);
	if (reload_apply(d, err, sizeof(err)) == -1) {
		log_err("SIGHUP: configuration not reloaded, keeping the old one "
		    "(and each TLS listener its certificate): %s", err);
		snprintf(msg, sizeof(msg), "configuration refused, the old one "
		    "stays: %s", err);
		reload_record(d, 0, msg);
		send_status(d, "READY=1\n");
		return;
	}
	reloaded_msg(gen_config(d->gen), msg, sizeof(msg));
	log_info("SIGHUP: configuration reloaded; upstreams: %s",
	    upstreams_line(d->gen, line, sizeof(line)));
	reload_record(d, 1, msg);
	send_status(d, "READY=1\n");
}
