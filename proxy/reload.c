/* SPDX-License-Identifier: Apache-2.0 */
/* SIGHUP: the configuration loaded again into a new generation, TLS files reloaded, the verdict recorded for staplectl reload. */
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
#include "proxy/cli.h"
#include "proxy/daemon.h"
#include "proxy/health.h"
#include "proxy/http.h"
#include "proxy/log.h"
#include "proxy/notify.h"
#include "proxy/reload.h"
#include "proxy/router.h"
#include "proxy/service.h"
#include "proxy/tls.h"

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

/* The verdict on a reload (or on start-up, generation 0), for staplectl reload. */
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
void
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
