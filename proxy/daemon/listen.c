/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's listeners: the sockets a service manager passed, then listen and admin_listen; and the check that they can all listen. */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "entry/conf.h"
#include "proxy/daemon/activate.h"
#include "proxy/daemon/daemon.h"
#include "proxy/http/http.h"
#include "proxy/daemon/listen.h"
#include "proxy/http/listen_addr.h"
#include "proxy/log.h"
#include "proxy/kinds/router.h"
#include "proxy/http/tls.h"

/* What a configured address names a listener for (listen_vet). */
#define ROLE_PUBLIC	0x1
#define ROLE_ADMIN	0x2

/* Every listener a configuration asks for: the passed sockets, listen, admin_listen. */
#define PLAN_MAX	(ACTIVATE_MAX_FDS + 2 * CONFIG_MAX_LISTEN)

/* One listener of the plan, a passed socket or a configured address. */
struct plan_slot {
	struct listen_addr	addr;
	char			what[HTTP_LISTEN_NAME_BYTES + 32];	/* for messages */
	int			passed;
	int			passed_admin;	/* a passed socket named "admin" */
	unsigned		roles;	/* ROLE_*; of a passed socket, the entries it serves */
};

/*
 * Whether a listen entry at a is left out beside a public passed socket at
 * p: the entry shares the socket's port at another address (0.0.0.0:8090
 * beside the socket unit's 127.0.0.1:8090), so the two cannot both listen.
 * With sockets passed the socket unit chooses the addresses: the passed
 * socket serves, listen_bind says so, and the start goes on instead of
 * failing again under Restart=. An admin_listen entry is never left out
 * (the ops endpoints would have nowhere to go), nor one beside a passed
 * admin socket.
 */
static int
left_out(const struct listen_addr *p, int p_admin, const struct listen_addr *a)
{
	return !p_admin && !listen_addr_same(p, a) &&
	    listen_addr_overlap(p, a) != LISTEN_APART;
}

struct plan {
	struct plan_slot	s[PLAN_MAX];
	size_t			n;
};

/*
 * The configured address key[i] (s) into the plan, as listen_bind will
 * serve it: by the passed socket of that address, or bound beside the
 * others, which it must not overlap; the admin listener apart from the
 * public ones. 0, or -1 with err.
 */
static int
plan_add(struct plan *p, const char *key, size_t i, const char *s,
    unsigned role, char *err, size_t errlen)
{
	struct plan_slot	*n = &p->s[p->n], *o;
	enum listen_overlap	 ov;
	char			 r[64];
	size_t			 j;

	memset(n, 0, sizeof(*n));
	n->roles = role;
	snprintf(n->what, sizeof(n->what), "%s[%zu] \"%s\"", key, i, s);
	if (listen_addr_parse(s, &n->addr, r, sizeof(r)) == -1) {
		snprintf(err, errlen, "%s: %s", n->what, r);
		return -1;
	}
	for (j = 0; j < p->n; j++) {
		o = &p->s[j];
		if (o->passed && role == ROLE_PUBLIC &&
		    left_out(&o->addr, o->passed_admin, &n->addr))
			return 0;	/* not bound: listen_bind says why */
		if (o->passed && listen_addr_same(&o->addr, &n->addr)) {
			if ((o->roles | role) == (ROLE_PUBLIC | ROLE_ADMIN)) {
				snprintf(err, errlen, "%s: %s, which listen and "
				    "admin_listen both name: the admin listener "
				    "must be apart from the public ones", n->what,
				    o->what);
				return -1;
			}
			o->roles |= role;
			return 0;
		}
		if ((ov = listen_addr_overlap(&o->addr, &n->addr)) == LISTEN_APART)
			continue;
		snprintf(err, errlen, "%s and %s cannot both listen: %s; %s",
		    n->what, o->what, listen_overlap_str[ov],
		    (o->roles | role) == (ROLE_PUBLIC | ROLE_ADMIN) ?
		    "the admin listener must be apart from the public ones" :
		    "no two listeners may share an address");
		return -1;
	}
	p->n++;
	return 0;
}

int
listen_vet(const struct config *cfg, int listen_default,
    const struct activate_sock *passed, size_t npassed, char *err,
    size_t errlen)
{
	struct plan	p;
	size_t		i;

	p.n = 0;
	for (i = 0; i < npassed && p.n < PLAN_MAX; i++, p.n++) {
		memset(&p.s[p.n], 0, sizeof(p.s[p.n]));
		p.s[p.n].addr = passed[i].addr;
		p.s[p.n].passed = 1;
		p.s[p.n].passed_admin = (passed[i].flags & HTTP_LISTEN_ADMIN) != 0;
		snprintf(p.s[p.n].what, sizeof(p.s[p.n].what),
		    "the passed socket %s", passed[i].name);
	}
	for (i = 0; !(npassed > 0 && listen_default) && i < cfg->nlisten; i++)
		if (plan_add(&p, "listen", i, cfg->listen[i], ROLE_PUBLIC, err,
		    errlen) == -1)
			return -1;
	for (i = 0; i < cfg->nadmin_listen; i++)
		if (plan_add(&p, "admin_listen", i, cfg->admin_listen[i],
		    ROLE_ADMIN, err, errlen) == -1)
			return -1;
	return 0;
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
 * (NULL: plain), whose handshake failures count from here on. listen and
 * admin_listen alike. 0, or -1 with err.
 */
static int
listen_addrs(struct http *h, char *const *addrs, size_t n, unsigned flags,
    struct tls_server *const *tls, char *err, size_t errlen)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (tls != NULL && tls[i] != NULL)
			tls_server_count(tls[i]);
		if (listen_one(h, addrs[i], -1, NULL, flags,
		    tls != NULL ? tls[i] : NULL, err, errlen) == -1)
			return -1;
	}
	return 0;
}

int
listen_adopt(struct daemon *d, char *err, size_t errlen)
{
	size_t	i;

	if (activate_collect(d->passed, ACTIVATE_MAX_FDS, &d->npassed, err,
	    errlen) == -1)
		return -1;
	for (i = 0; i < d->npassed; i++)
		if (listen_one(d->http, NULL, d->passed[i].fd, d->passed[i].name,
		    d->passed[i].flags, NULL, err, errlen) == -1) {
			for (; i < d->npassed; i++)
				close(d->passed[i].fd);
			return -1;
		}
	return 0;
}

/*
 * The passed socket that leaves the listen entry s out (left_out), or
 * NULL: s is bound (or served by a passed socket of its address).
 */
static const struct activate_sock *
passed_over(const struct daemon *d, const char *s)
{
	struct listen_addr	a;
	char			r[64];
	size_t			i;

	if (listen_addr_parse(s, &a, r, sizeof(r)) == -1)
		return NULL;	/* http_add_listener says why */
	for (i = 0; i < d->npassed; i++)
		if (left_out(&d->passed[i].addr,
		    (d->passed[i].flags & HTTP_LISTEN_ADMIN) != 0, &a))
			return &d->passed[i];
	return NULL;
}

/*
 * listen, with d->tls: each entry bound, served by the passed socket of
 * its address, or left out beside a passed socket of its port, with a
 * warning that names both. 0, or -1 with err.
 */
static int
listen_public(struct daemon *d, const struct config *cfg, char *err,
    size_t errlen)
{
	const struct activate_sock	*ps;
	size_t				 i;

	for (i = 0; i < cfg->nlisten; i++) {
		if ((ps = passed_over(d, cfg->listen[i])) != NULL) {
			log_warn("listen %s: not bound: the socket passed by "
			    "the service manager holds %s, the same port; "
			    "serving on the passed sockets. With socket "
			    "activation the addresses are the socket unit's "
			    "(systemctl edit stapled.socket)", cfg->listen[i],
			    ps->name);
			continue;
		}
		if (listen_addrs(d->http, cfg->listen + i, 1, 0,
		    d->tls + i, err, errlen) == -1)
			return -1;
	}
	return 0;
}

int
listen_bind(struct daemon *d, const struct config *cfg, char *err,
    size_t errlen)
{
	size_t	i;
	int	admin = cfg->nadmin_listen > 0;

	if (d->npassed > 0 && d->listen_default)
		log_info("listen: not set; serving on the %zu passed socket(s) "
		    "only", d->npassed);
	else if (listen_public(d, cfg, err, errlen) == -1)
		return -1;
	if (listen_addrs(d->http, cfg->admin_listen, cfg->nadmin_listen,
	    HTTP_LISTEN_ADMIN, NULL, err, errlen) == -1)
		return -1;
	for (i = 0; i < d->npassed; i++)
		admin |= (d->passed[i].flags & HTTP_LISTEN_ADMIN) != 0;
	router_set_admin_only(d->router, admin);
	return 0;
}
