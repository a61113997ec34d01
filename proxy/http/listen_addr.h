/* SPDX-License-Identifier: Apache-2.0 */
/* A listener's address: HOST:PORT to a socket address, and which two addresses cannot both be listened on. */
#ifndef PROXY_LISTEN_ADDR_H
#define PROXY_LISTEN_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

/* A TCP listener's address; ss_family AF_UNSPEC for any other socket (Unix). */
struct listen_addr {
	struct sockaddr_storage	ss;
	int			sslen;
	int			v6only;	/* an IPv6 socket that takes no IPv4 */
};

/* Why two listeners cannot both listen (listen_addr_overlap); a string table beside. */
enum listen_overlap {
	LISTEN_APART,		/* both can listen */
	LISTEN_SAME,		/* one address and port */
	LISTEN_WILDCARD,	/* 0.0.0.0 or [::] takes every address of its family and port */
	LISTEN_DUAL_STACK,	/* [::] without IPV6_V6ONLY takes IPv4 as well */
	LISTEN_OVERLAP_MAX
};
extern const char *const listen_overlap_str[LISTEN_OVERLAP_MAX];

/*
 * "HOST:PORT" or "[V6]:PORT" into *a: a numeric address, or a host name
 * resolved to its first address (getaddrinfo, which may ask DNS). An
 * IPv6 address is v6only as the kernel makes a new socket
 * (net.ipv6.bindv6only; stapled leaves IPV6_V6ONLY alone). 0, or -1 with
 * err saying why ("not an address of this host"; the caller names s).
 */
int	listen_addr_parse(const char *s, struct listen_addr *a, char *err,
	    size_t errlen);
/* The address of the listening socket fd (a passed one): its IPV6_V6ONLY read. */
void	listen_addr_of_fd(int fd, struct listen_addr *a);
/* Whether a and b are one TCP address and port (a wildcard is not the same as an address). */
int	listen_addr_same(const struct listen_addr *a, const struct listen_addr *b);
/*
 * Whether a listener on a and one on b can both listen on Linux, where
 * SO_REUSEADDR lets no two listening sockets share a port with an
 * address in common: LISTEN_APART, or why not. An IPv4-mapped IPv6
 * address ([::ffff:127.0.0.1]) counts as its IPv4 address.
 */
enum listen_overlap listen_addr_overlap(const struct listen_addr *a,
	    const struct listen_addr *b);

#endif
