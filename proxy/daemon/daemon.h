/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's state (struct daemon, struct cli), shared by main.c and the rooms of its start and life, and who owns which part. */
#ifndef PROXY_DAEMON_H
#define PROXY_DAEMON_H

/*
 * The daemon wing (proxy/daemon/, libdaemon.a; main.c is stapled's own):
 * the process around the service. Each file owns its part of struct
 * daemon below and says so in its header.
 *
 *   main.c           start (read the configuration, open the store, make
 *                    the first generation, listen), the loop, shutdown
 *   cli.h            the command line (stapled(8)), re-applied on reload
 *   conf_vet.h       the one check a configuration passes before it is
 *                    used: at start, with -n, and on SIGHUP
 *   reload.h         SIGHUP: a new generation swapped in, or the old kept
 *   listen.h         the listeners of a configuration, passed sockets
 *   activate.h       systemd socket activation (LISTEN_FDS)
 *   notify.h         sd_notify READY, RELOADING, STOPPING, STATUS
 *   health.h         upstream health written for staplectl, /readyz
 *   store_ops.h      opening, locking, checking and salvaging the store
 *   store_damaged.h  damage found at run time, moved aside or counted
 *   store_salvage.h  answers still served from a moved-aside store
 *
 * Above every other wing: it includes the service, the kinds' router and
 * the wings below; nothing includes it but its own files. Everything runs
 * on the loop's thread; the store's check walk runs in a child process.
 */

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "cache/store.h"
#include "entry/conf.h"
#include "proxy/access_log.h"
#include "proxy/daemon/activate.h"

#define HEALTH_RECORD_S		10	/* upstream health written for staplectl */
#define MAX_FLAG_VALUES		64

/* Bytes of the line naming every service's upstreams. */
#define UPSTREAMS_LINE_BYTES	2048

struct event_base;
struct event;
struct cache_writer;
struct cache_reader;
struct fetch_ctx;
struct refresh;
struct refresh_ctl;
struct http;
struct tls_server;
struct router;
struct gen;
struct store_salvage;

/* One kind's flags: --<name>-upstream, and where its row has them --<name>-anchor, --<name>-intermediates. */
struct cli_kind {
	char		*upstreams[MAX_FLAG_VALUES];
	size_t		 nupstreams;
	char		*anchors[MAX_FLAG_VALUES];
	size_t		 nanchors;
	char		*intermediates[MAX_FLAG_VALUES];
	size_t		 nintermediates;
};

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
	struct cli_kind	 kinds[CACHE_KIND_MAX];	/* by enum cache_kind */
};

/*
 * One, on main()'s stack. main.c makes everything it points to and frees
 * it (daemon_free); each room changes only its own fields: cli.c fills
 * cli; store_ops.c cache, lock_fd, held, damage_ev, check_ev, check_pid,
 * check_fd and salvage_from; reload.c gen (the swap) and reload_gen, and
 * swaps new contexts into tls[] in place; listen.c passed and npassed;
 * health.c and conf_vet.c only read.
 */
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
	struct refresh_ctl	*rctl;		/* staplectl refresh's channel (SIGUSR1) */
	struct http		*http;
	struct tls_server	*tls[CONFIG_MAX_LISTEN];	/* per listen; NULL: plain */
	struct activate_sock	 passed[ACTIVATE_MAX_FDS];	/* socket activation; the fds are http's */
	size_t			 npassed;
	struct router		*router;
	struct gen		*gen;
	struct event		*sig_term, *sig_int, *sig_hup, *sig_usr1, *shutdown_ev;
	struct event		*health_ev;
	struct event		*check_ev;	/* polls the check walk's child */
	struct event		*damage_ev;	/* cache_damage_fd: damage found at run time */
	pid_t			 check_pid;	/* 0: none running */
	int			 check_fd;	/* its reason pipe */
	struct store_salvage	*salvage;	/* what a moved-aside store still holds */
	char			 salvage_from[PATH_MAX];	/* moved aside at start */
	int			 lock_fd;	/* cache_lock_dir's, held for life */
	enum cache_cause	 held;		/* why writes are held (store_held) */
	time_t			 started;
	int64_t			 shutdown_deadline_ms;
	int			 stopping;
	int			 listen_default;	/* neither file nor flag set listen */
	unsigned long		 reload_gen;	/* SIGHUPs handled */
	char			*cache_dir;	/* in use until a restart */
	struct access_log	 alog;
};

#endif
