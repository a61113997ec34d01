/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 server's listeners: binding or adopting sockets, accept, new connections, the server's life (http_new to http_free), heap trim. */
#include "config.h"

#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#if defined(__GLIBC__)
#include <malloc.h>	/* malloc_trim */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "entry/conf.h"
#include "proxy/http/http.h"
#include "proxy/http/http_int.h"
#include "proxy/log.h"
#include "proxy/loop.h"
#include "proxy/http/tls.h"

/* An admin accept() that failed even so: the admin listeners pause this long. */
#define HTTP_ADMIN_BACKOFF_MS	20

static void	conn_new(struct http *, const struct listener *, evutil_socket_t,
		    const struct sockaddr *);

/*
 * An admin accept() found no descriptor: give up a spare for it. 0 when
 * the connection was taken (or there was none after all), -1 when no
 * spare is left or accept() fails again.
 */
static int
accept_spare(struct http *h, struct listener *l)
{
	struct sockaddr_storage	ss;
	socklen_t		len = sizeof(ss);
	evutil_socket_t		fd;

	if (h->nspare == 0)
		return -1;
	close(h->spare[--h->nspare]);
	fd = accept4(evconnlistener_get_fd(l->lev), (struct sockaddr *)&ss, &len,
	    SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd == -1) {
		http_spares_refill(h);
		return errno == EAGAIN || errno == EWOULDBLOCK ||
		    errno == ECONNABORTED || errno == EINTR ? 0 : -1;
	}
	conn_new(h, l, fd, (struct sockaddr *)&ss);
	return 0;
}

/*
 * evconnlistener_set_error_cb: accept() failed with other than EAGAIN,
 * EINTR or ECONNABORTED. At the fd limit (EMFILE, ENFILE) the pending
 * connection stays in the backlog and the listener stays readable: without
 * a pause that is a busy loop. An admin listener takes a spare descriptor
 * instead (accept_spare), and pauses HTTP_ADMIN_BACKOFF_MS only when none
 * is left. The public listeners pause HTTP_ACCEPT_BACKOFF_MS; the warning
 * comes once per HTTP_WARN_INTERVAL_S.
 */
static void
accept_error_cb(struct evconnlistener *lev, void *arg)
{
	struct http	*h = arg;
	struct timeval	 tv = { HTTP_ACCEPT_BACKOFF_MS / 1000,
			    (HTTP_ACCEPT_BACKOFF_MS % 1000) * 1000 };
	struct timeval	 atv = { 0, HTTP_ADMIN_BACKOFF_MS * 1000 };
	int		 err = EVUTIL_SOCKET_ERROR();
	unsigned long	 unreported;
	size_t		 i;

	for (i = 0; i < h->nlis; i++)
		if (h->lis[i].lev == lev && http_lis_admin(&h->lis[i])) {
			if ((err == EMFILE || err == ENFILE) &&
			    accept_spare(h, &h->lis[i]) == 0)
				return;
			if (!h->adm_backoff) {
				h->adm_backoff = 1;
				evtimer_add(h->adm_backoff_ev, &atv);
				http_listeners_update(h);
			}
			return;
		}
	if (h->backoff)
		return;
	h->backoff = 1;
	evtimer_add(h->backoff_ev, &tv);
	http_listeners_update(h);
	if (http_may_warn(h, &unreported))
		log_warn("http: accept: %s (%zu connections open): not accepting "
		    "for %d ms (%lu pause(s) unreported before this)",
		    evutil_socket_error_to_string(err), h->nconns,
		    HTTP_ACCEPT_BACKOFF_MS, unreported);
}

/* A new connection on l: counted in its listener's budget. */
static void
conn_new(struct http *h, const struct listener *l, evutil_socket_t fd,
    const struct sockaddr *sa)
{
	struct conn	*c;
	int		 one = 1, half = h->sndbuf / 2;

	if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* socket(7): the kernel doubles the value; its cap (ss's tb) is then h->sndbuf. */
	if (half > 0 && sa->sa_family != AF_UNIX)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &half, sizeof(half));
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		evutil_closesocket(fd);
		return;
	}
	c->http = h;
	c->lis = l;
	c->admin = http_lis_admin(l);
	c->fd = fd;
	c->req.conn = c;
	TAILQ_INSERT_TAIL(&h->conns, c, entry);
	if (c->admin)
		h->nadmin++;
	else
		h->nconns++;
	if ((c->out = evbuffer_new()) == NULL ||
	    (c->req.out_headers = evbuffer_new()) == NULL ||
	    (c->req.out_body = evbuffer_new()) == NULL ||
	    (c->rev = event_new(h->base, fd, EV_READ | EV_PERSIST,
	    http_conn_read_cb, c)) == NULL ||
	    (c->wev = event_new(h->base, fd, EV_WRITE, http_conn_write_cb,
	    c)) == NULL ||
	    (c->timer = evtimer_new(h->base, http_conn_timer_cb, c)) == NULL ||
	    (l->tls != NULL && (c->tls = tls_conn_new(l->tls, fd)) == NULL)) {
		log_err("http: out of memory for a connection");
		http_conn_free(c);
		return;
	}
	event_add(c->rev, NULL);
	http_conn_arm(c);			/* the first request's header deadline */
	http_listeners_update(h);		/* at the budget: pause */
}

static void
accept_cb(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct http	*h = arg;
	size_t		 i;

	(void)salen;
	for (i = 0; i < h->nlis; i++)
		if (h->lis[i].lev == lev) {
			conn_new(h, &h->lis[i], fd, sa);
			return;
		}
	evutil_closesocket(fd);
}

/* Give freed memory back to the system, a while after connections closed. */
static void
trim_cb(evutil_socket_t fd, short what, void *arg)
{
	struct http	*h = arg;

	(void)fd;
	(void)what;
	h->closed_untrimmed = 0;
	free(h->spare_bufs);
	h->spare_bufs = NULL;
#if defined(__GLIBC__)
	(void)malloc_trim(0);
#endif
}

/*
 * max_connections 0: the soft fd limit less HTTP_FD_RESERVE, and no more
 * than HTTP_MEMORY_SHARE of physical memory at HTTP_CONN_MEMORY_BYTES a
 * connection; at least HTTP_MIN_CONNECTIONS.
 */
static size_t
max_conns_auto(void)
{
	struct rlimit	rl;
	long		pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	size_t		n = CONFIG_MAX_CONNECTIONS, mem;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)n + HTTP_FD_RESERVE)
		n = rl.rlim_cur > HTTP_FD_RESERVE ?
		    (size_t)(rl.rlim_cur - HTTP_FD_RESERVE) : 0;
	if (pages > 0 && psz > 0) {
		mem = (size_t)pages / HTTP_MEMORY_SHARE * (size_t)psz /
		    HTTP_CONN_MEMORY_BYTES;
		if (mem < n)
			n = mem;
	}
	return n < HTTP_MIN_CONNECTIONS ? HTTP_MIN_CONNECTIONS : n;
}

/* The listen backlog asked of the kernel (capped by net.core.somaxconn). */
#define HTTP_LISTEN_BACKLOG	511

/*
 * A configured address that a passed socket already listens on is served
 * by that socket (binding it again would fail with EADDRINUSE); the
 * entry's flags are added to it. 1 when so.
 */
static int
served_by_adopted(struct http *h, const struct http_listen *spec,
    const struct listen_addr *a)
{
	size_t	i;

	for (i = 0; i < h->nlis; i++) {
		if (!h->lis[i].adopted || !listen_addr_same(&h->lis[i].addr, a))
			continue;
		h->lis[i].flags |= spec->flags;
		if (spec->flags & HTTP_LISTEN_ADMIN) {
			h->want_spare = 1;
			http_spares_refill(h);
		}
		log_info("listen %s: served by the passed socket %s%s", spec->addr,
		    h->lis[i].name, (spec->flags & HTTP_LISTEN_ADMIN) ?
		    ", now an admin listener" : "");
		return 1;
	}
	return 0;
}

int
http_add_listener(struct http *h, const struct http_listen *spec, char *err,
    size_t errlen)
{
	struct listener		*l;
	struct listen_addr	 a;
	char			 r[64];
	const unsigned		 opts = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC;

	if (h->nlis == HTTP_MAX_LISTENERS) {
		snprintf(err, errlen, "listen: at most %d listeners",
		    HTTP_MAX_LISTENERS);
		return -1;
	}
	l = &h->lis[h->nlis];
	memset(l, 0, sizeof(*l));
	l->flags = spec->flags;
	l->tls = spec->tls;
	if (spec->fd >= 0) {
		snprintf(l->name, sizeof(l->name), "%s", spec->name != NULL ?
		    spec->name : "passed socket");
		evutil_make_socket_nonblocking(spec->fd);
		l->adopted = 1;
		listen_addr_of_fd(spec->fd, &l->addr);
		l->lev = evconnlistener_new(h->base, accept_cb, h, opts, -1,
		    spec->fd);
	} else {
		snprintf(l->name, sizeof(l->name), "%s", spec->addr);
		if (listen_addr_parse(spec->addr, &a, r, sizeof(r)) == -1) {
			snprintf(err, errlen, "listen: \"%s\": %s", spec->addr, r);
			return -1;
		}
		if (served_by_adopted(h, spec, &a))
			return 0;
		l->lev = evconnlistener_new_bind(h->base, accept_cb, h,
		    opts | LEV_OPT_REUSEABLE, HTTP_LISTEN_BACKLOG,
		    (struct sockaddr *)&a.ss, a.sslen);
	}
	if (l->lev == NULL) {
		snprintf(err, errlen, "listen: cannot %s %s: %s", spec->fd >= 0 ?
		    "adopt" : "bind", l->name, strerror(errno));
		return -1;
	}
	evconnlistener_set_error_cb(l->lev, accept_error_cb);
	if (!(http_lis_admin(l) ? h->adm_enabled : h->lis_enabled))
		evconnlistener_disable(l->lev);
	if (http_lis_admin(l)) {
		h->want_spare = 1;
		http_spares_refill(h);
	}
	h->nlis++;
	log_info("listening on %s%s%s%s", l->name, l->adopted ?
	    " (passed socket)" : "", l->tls != NULL ? " (TLS)" : "",
	    (l->flags & HTTP_LISTEN_ADMIN) ? " (admin)" : "");
	return 0;
}

struct http *
http_new(struct event_base *base, http_handler_cb *handler, void *arg)
{
	struct http	*h;

	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->base = base;
	h->handler = handler;
	h->handler_arg = arg;
	TAILQ_INIT(&h->conns);
	h->max_conns = max_conns_auto();
	h->max_admin = CONFIG_DEFAULT_ADMIN_MAX_CONNECTIONS;
	h->sndbuf = CONFIG_DEFAULT_SEND_BUFFER_KB * 1024;
	h->adm_enabled = 1;
	h->header_s = CONFIG_DEFAULT_HEADER_TIMEOUT_S;
	h->body_s = CONFIG_DEFAULT_BODY_TIMEOUT_S;
	h->keepalive_s = CONFIG_DEFAULT_KEEPALIVE_TIMEOUT_S;
	h->lis_enabled = 1;
	if ((h->backoff_ev = evtimer_new(base, http_backoff_cb, h)) == NULL ||
	    (h->adm_backoff_ev = evtimer_new(base, http_adm_backoff_cb,
	    h)) == NULL ||
	    (h->trim_ev = evtimer_new(base, trim_cb, h)) == NULL) {
		http_free(h);
		return NULL;
	}
	return h;
}

void
http_set_config(struct http *h, const struct config *cfg)
{
	h->max_conns = cfg->max_connections > 0 ?
	    (size_t)cfg->max_connections : max_conns_auto();
	h->max_admin = (size_t)cfg->admin_max_connections;
	h->sndbuf = (int)cfg->send_buffer_kb * 1024;
	h->header_s = cfg->header_timeout_s;
	h->body_s = cfg->body_timeout_s;
	h->keepalive_s = cfg->keepalive_timeout_s;
	http_listeners_update(h);
}

/* No more accepts: the spare descriptors closed, every listener freed. */
static void
accepting_end(struct http *h)
{
	size_t	i;

	h->stopping = 1;
	h->want_spare = 0;
	while (h->nspare > 0)
		close(h->spare[--h->nspare]);
	for (i = 0; i < h->nlis; i++)
		evconnlistener_free(h->lis[i].lev);
	h->nlis = 0;
}

void
http_stop_accepting(struct http *h)
{
	struct conn	*c, *t;

	accepting_end(h);
	/* Idle keep-alive connections go now; busy ones after their answer. */
	for (c = TAILQ_FIRST(&h->conns); c != NULL; c = t) {
		t = TAILQ_NEXT(c, entry);
		if (c->lingering)
			continue;	/* ends at its bound, or at http_free */
		if (!c->pending && evbuffer_get_length(c->out) == 0)
			http_conn_free(c);
		else
			c->close_after = 1;
	}
}

void
http_free(struct http *h)
{
	struct conn	*c;

	if (h == NULL)
		return;
	accepting_end(h);
	while ((c = TAILQ_FIRST(&h->conns)) != NULL)
		http_conn_free(c);
	loop_event_free(h->backoff_ev);
	loop_event_free(h->adm_backoff_ev);
	loop_event_free(h->trim_ev);
	free(h->spare_bufs);
	free(h);
}
