/* SPDX-License-Identifier: Apache-2.0 */
/* stapled: serve vendor-signed attestation objects from a verified cache. Forks only the store's check walk. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "cache/clock.h"
#include "cache/reader.h"
#include "cache/store.h"
#include "cache/writer.h"
#include "entry/conf.h"
#include "entry/kind.h"
#include "proxy/access_log.h"
#include "proxy/daemon/cli.h"
#include "proxy/daemon/conf_vet.h"
#include "proxy/daemon/daemon.h"
#include "proxy/fetch/fetch.h"
#include "proxy/daemon/health.h"
#include "proxy/http/http.h"
#include "proxy/daemon/listen.h"
#include "proxy/log.h"
#include "proxy/loop.h"
#include "proxy/metrics.h"
#include "proxy/metrics_page.h"
#include "proxy/daemon/notify.h"
#include "proxy/refresh/refresh.h"
#include "proxy/refresh/refresh_ctl.h"
#include "proxy/daemon/reload.h"
#include "proxy/kinds/router.h"
#include "proxy/service.h"
#include "proxy/daemon/store_ops.h"
#include "proxy/daemon/store_salvage.h"
#include "proxy/http/tls.h"

#define SHUTDOWN_POLL_MS	50

/* http_reply's callback: the hit histogram and the sampled access log. */
static void
on_reply(const struct http_req *req, int status, size_t bytes, void *arg)
{
	struct daemon	*d = arg;

	metrics_on_reply(req);
	access_log_reply(&d->alog, req, status, bytes);
}

static void
shutdown_poll(evutil_socket_t fd, short what, void *arg)
{
	struct daemon	*d = arg;
	struct timeval	 tv = { 0, SHUTDOWN_POLL_MS * 1000 };

	(void)fd;
	(void)what;
	if ((svc_pending() > 0 || fetch_ctx_inflight(d->fetch) > 0) &&
	    mono_ms() < d->shutdown_deadline_ms) {
		evtimer_add(d->shutdown_ev, &tv);
		return;
	}
	if (svc_pending() > 0 || fetch_ctx_inflight(d->fetch) > 0)
		log_warn("shutdown: giving up on %zu client(s) and %zu fetch(es) still "
		    "in flight", svc_pending(), fetch_ctx_inflight(d->fetch));
	event_base_loopexit(d->base, NULL);
}

static void
on_term(evutil_socket_t sig, short what, void *arg)
{
	struct daemon			*d = arg;
	const struct config_service	*c;
	long				 grace = 0;
	size_t				 k;

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
	for (k = KIND_FIRST; k < CACHE_KIND_MAX; k++) {
		c = svc_conf(gen_svc(d->gen, k));
		if (c->client_budget_ms > grace)
			grace = c->client_budget_ms;
		if (c->timeout_ms > grace)
			grace = c->timeout_ms;
	}
	d->shutdown_deadline_ms = mono_ms() + grace + 1000;
	shutdown_poll(-1, 0, d);
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

/* stapled -n: the configuration through the checks of a start (conf_vet). The exit status. */
static int
check_only(struct daemon *d, struct config *cfg)
{
	struct gen	*probe;
	char		 err[1024];

	if ((probe = conf_vet(d, cfg, d->listen_default, d->tls, err,
	    sizeof(err))) == NULL) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	tls_servers_free(d->tls);
	check_disk(gen_config(probe));
	printf("configuration OK\n");
	gen_unref(probe);
	return 0;
}

/* SIGUSR1: staplectl refresh left an ask in the cache directory. */
static void
on_usr1(evutil_socket_t sig, short what, void *arg)
{
	struct daemon	*d = arg;

	(void)sig;
	(void)what;
	if (!d->stopping)
		refresh_ctl_take(d->rctl);
}

/* The signals and timers of the daemon's life; exits when they cannot be made. */
static void
install_events(struct daemon *d)
{
	d->sig_term = evsignal_new(d->base, SIGTERM, on_term, d);
	d->sig_int = evsignal_new(d->base, SIGINT, on_term, d);
	d->sig_hup = evsignal_new(d->base, SIGHUP, on_hup, d);
	d->sig_usr1 = evsignal_new(d->base, SIGUSR1, on_usr1, d);
	d->shutdown_ev = evtimer_new(d->base, shutdown_poll, d);
	d->health_ev = evtimer_new(d->base, record_health, d);
	if (d->sig_term == NULL || d->sig_int == NULL || d->sig_hup == NULL ||
	    d->sig_usr1 == NULL ||
	    d->shutdown_ev == NULL || d->health_ev == NULL ||
	    evsignal_add(d->sig_term, NULL) == -1 ||
	    evsignal_add(d->sig_int, NULL) == -1 ||
	    evsignal_add(d->sig_hup, NULL) == -1 ||
	    evsignal_add(d->sig_usr1, NULL) == -1)
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
	loop_event_free(d->sig_term);
	loop_event_free(d->sig_int);
	loop_event_free(d->sig_hup);
	loop_event_free(d->sig_usr1);
	loop_event_free(d->shutdown_ev);
	loop_event_free(d->health_ev);
	http_free(d->http);
	tls_servers_free(d->tls);	/* after the connections that use them */
	router_free(d->router);
	refresh_ctl_free(d->rctl);	/* before the asks it holds */
	refresh_free(d->refresh);
	gen_unref(d->gen);
	fetch_ctx_free(d->fetch);
	store_salvage_free(d->salvage);
	store_check_stop(d);
	/* The last touches refresh_free wrote. */
	cache_reader_stop(d->reader);
	loop_event_free(d->reader_ev);
	cache_writer_stop(d->writer);
	loop_event_free(d->writer_ev);
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
	    (d.rctl = refresh_ctl_new(d.base, d.refresh, d.cache_dir)) == NULL ||
	    (d.router = router_new(d.refresh, d.cache)) == NULL ||
	    (d.salvage = store_salvage_new(d.base, &d.gen)) == NULL)
		fatal("out of memory");
	if ((d.http = http_new(d.base, router_dispatch, d.router)) == NULL)
		fatal("out of memory");
	if (listen_adopt(&d, err, sizeof(err)) == -1) {
		log_err("%s", err);
		config_free(cfg);
		free(cfg);
		goto out;
	}
	/* conf_vet owns cfg from here, on failure too. */
	if ((d.gen = conf_vet(&d, cfg, d.listen_default, d.tls, err,
	    sizeof(err))) == NULL ||
	    listen_bind(&d, gen_config(d.gen), err, sizeof(err)) == -1) {
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
	event_base_dispatch(d.base);
	record_health(-1, 0, &d);
	log_info("stopped");
	rv = 0;
out:
	daemon_free(&d);
	return rv;
}
