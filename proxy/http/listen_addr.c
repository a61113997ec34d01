/* SPDX-License-Identifier: Apache-2.0 */
/* A listener's address: HOST:PORT to a socket address (numeric, or a name resolved once), and which two addresses cannot both be listened on. */
#include "config.h"

#include <sys/socket.h>

#include <netinet/in.h>

#include <stdio.h>
#include <string.h>

#include <event2/util.h>

#include "entry/conf.h"
#include "proxy/http/listen_addr.h"

/* The kernel's default IPV6_V6ONLY for new sockets (ipv6(7)); absent: 0. */
#define BINDV6ONLY_PATH	"/proc/sys/net/ipv6/bindv6only"

const char *const listen_overlap_str[LISTEN_OVERLAP_MAX] = {
	[LISTEN_APART] = "apart",
	[LISTEN_SAME] = "the same address",
	[LISTEN_WILDCARD] = "a wildcard address takes every address of its "
	    "family on its port",
	[LISTEN_DUAL_STACK] = "[::] takes IPv4 as well (IPV6_V6ONLY is off: "
	    "net.ipv6.bindv6only is 0)",
};

/* net.ipv6.bindv6only: 1 when new IPv6 sockets take no IPv4. */
static int
bindv6only(void)
{
	FILE	*f;
	int	 c = '0';

	if ((f = fopen(BINDV6ONLY_PATH, "re")) != NULL) {
		c = fgetc(f);
		fclose(f);
	}
	return c == '1';
}

/* A host name in `listen` ("localhost:8090"): its first address. */
static int
resolve(const char *host, int port, struct sockaddr_storage *ss, int *sslen)
{
	struct evutil_addrinfo	 hints, *ai = NULL;
	char			 serv[8];

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = EVUTIL_AI_PASSIVE;
	snprintf(serv, sizeof(serv), "%d", port);
	if (evutil_getaddrinfo(host, serv, &hints, &ai) != 0 || ai == NULL)
		return -1;
	if (ai->ai_addrlen > sizeof(*ss)) {
		evutil_freeaddrinfo(ai);
		return -1;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*sslen = (int)ai->ai_addrlen;
	evutil_freeaddrinfo(ai);
	return 0;
}

int
listen_addr_parse(const char *s, struct listen_addr *a, char *err,
    size_t errlen)
{
	int	port;
	char	host[256], addr[300];

	memset(a, 0, sizeof(*a));
	if (config_split_listen(s, host, sizeof(host), &port) == -1) {
		snprintf(err, errlen, "expected HOST:PORT");
		return -1;
	}
	snprintf(addr, sizeof(addr), strchr(host, ':') ? "[%s]:%d" : "%s:%d",
	    host, port);
	a->sslen = sizeof(a->ss);
	if (evutil_parse_sockaddr_port(addr, (struct sockaddr *)&a->ss,
	    &a->sslen) == -1 && resolve(host, port, &a->ss, &a->sslen) == -1) {
		snprintf(err, errlen, "not an address of this host");
		return -1;
	}
	a->v6only = a->ss.ss_family == AF_INET6 && bindv6only();
	return 0;
}

void
listen_addr_of_fd(int fd, struct listen_addr *a)
{
	socklen_t	len = sizeof(a->ss), ol = sizeof(a->v6only);

	memset(a, 0, sizeof(*a));
	if (getsockname(fd, (struct sockaddr *)&a->ss, &len) == -1 ||
	    (a->ss.ss_family != AF_INET && a->ss.ss_family != AF_INET6)) {
		memset(a, 0, sizeof(*a));
		a->ss.ss_family = AF_UNSPEC;
		return;
	}
	a->sslen = (int)len;
	if (a->ss.ss_family == AF_INET6 && getsockopt(fd, IPPROTO_IPV6,
	    IPV6_V6ONLY, &a->v6only, &ol) == -1)
		a->v6only = 0;
}

int
listen_addr_same(const struct listen_addr *a, const struct listen_addr *b)
{
	const struct sockaddr_in	*a4 = (const void *)&a->ss;
	const struct sockaddr_in	*b4 = (const void *)&b->ss;
	const struct sockaddr_in6	*a6 = (const void *)&a->ss;
	const struct sockaddr_in6	*b6 = (const void *)&b->ss;

	if (a->ss.ss_family != b->ss.ss_family)
		return 0;
	if (a->ss.ss_family == AF_INET)
		return a4->sin_port == b4->sin_port &&
		    a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	if (a->ss.ss_family == AF_INET6)
		return a6->sin6_port == b6->sin6_port &&
		    a6->sin6_scope_id == b6->sin6_scope_id &&
		    memcmp(&a6->sin6_addr, &b6->sin6_addr,
		    sizeof(a6->sin6_addr)) == 0;
	return 0;
}

/* The parts the rule compares: family (an IPv4-mapped address as IPv4), address, port. */
struct bound {
	int		family;	/* AF_INET, AF_INET6, or 0: not TCP */
	unsigned char	addr[16];
	int		wildcard;
	unsigned short	port;	/* network order */
	int		v6only;
};

static void
bound_of(const struct listen_addr *a, struct bound *b)
{
	const struct sockaddr_in	*s4 = (const void *)&a->ss;
	const struct sockaddr_in6	*s6 = (const void *)&a->ss;
	static const unsigned char	 zero[16];

	memset(b, 0, sizeof(*b));
	if (a->ss.ss_family == AF_INET) {
		b->family = AF_INET;
		memcpy(b->addr, &s4->sin_addr, 4);
		b->port = s4->sin_port;
	} else if (a->ss.ss_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		b->family = AF_INET;	/* ::ffff:0.0.0.0 is IPv4's wildcard too */
		memcpy(b->addr, s6->sin6_addr.s6_addr + 12, 4);
		b->port = s6->sin6_port;
	} else if (a->ss.ss_family == AF_INET6) {
		b->family = AF_INET6;
		memcpy(b->addr, &s6->sin6_addr, 16);
		b->port = s6->sin6_port;
		b->v6only = a->v6only;
	}
	b->wildcard = b->family != 0 && memcmp(b->addr, zero,
	    b->family == AF_INET ? 4 : 16) == 0;
}

enum listen_overlap
listen_addr_overlap(const struct listen_addr *a, const struct listen_addr *b)
{
	struct bound	x, y;

	bound_of(a, &x);
	bound_of(b, &y);
	if (x.family == 0 || y.family == 0 || x.port != y.port)
		return LISTEN_APART;
	if (x.family == y.family) {
		if (memcmp(x.addr, y.addr, sizeof(x.addr)) == 0)
			return LISTEN_SAME;
		return x.wildcard || y.wildcard ? LISTEN_WILDCARD : LISTEN_APART;
	}
	/* One IPv4, one IPv6: only a dual-stack [::] takes the other's. */
	if ((x.family == AF_INET6 && x.wildcard && !x.v6only) ||
	    (y.family == AF_INET6 && y.wildcard && !y.v6only))
		return LISTEN_DUAL_STACK;
	return LISTEN_APART;
}
