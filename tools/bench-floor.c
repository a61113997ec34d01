/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-floor: the benchmark's floor, the least an HTTP/1.1 server can do per
 * request: find where each request ends and write back one fixed answer.
 *
 *   bench-floor PORT ANSWERFILE
 *
 * One thread, one epoll set, non-blocking sockets on 127.0.0.1:PORT (0: a
 * port of the kernel's choosing, printed as "PORT n" on stdout). A request
 * ends at its head's blank line plus the Content-Length that the head
 * gives; nothing else of it is read. ANSWERFILE holds the whole answer, status
 * line, headers and body, as stapled sends it, and is written once per
 * request. No routing, no lookup, no validation: not a server, a yardstick
 * (tools/bench reports stapled's hit rate as a share of this one's).
 */

#include <config.h>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define FLOOR_MAX_EVENTS	256
#define FLOOR_BUF_BYTES		(64 * 1024)	/* one connection's input */
#define FLOOR_MAX_ANSWER_BYTES	(1024 * 1024)

struct floor_conn {
	int	fd;
	size_t	len;			/* bytes in buf */
	char	buf[FLOOR_BUF_BYTES];
};

static char	*answer;
static size_t	 answer_len;

/* The Content-Length of head[0..n), 0 when it has none; -1 when unreadable. */
static long
content_length(const char *head, size_t n)
{
	static const char	name[] = "\ncontent-length:";
	size_t			i, k = sizeof(name) - 1;
	long			v = 0;

	for (i = 0; i + k <= n; i++) {
		if (strncasecmp(head + i, name, k) != 0)
			continue;
		for (i += k; i < n && (head[i] == ' ' || head[i] == '\t'); i++)
			;
		if (i >= n || !isdigit((unsigned char)head[i]))
			return -1;
		for (; i < n && isdigit((unsigned char)head[i]); i++)
			if ((v = v * 10 + (head[i] - '0')) > FLOOR_BUF_BYTES)
				return -1;
		return v;
	}
	return 0;
}

/* Answer every whole request in c->buf; -1 when the connection must close. */
static int
drain(struct floor_conn *c)
{
	char	*end;
	size_t	 head, total, off = 0;
	long	 body;
	ssize_t	 w;

	for (;;) {
		end = memmem(c->buf + off, c->len - off, "\r\n\r\n", 4);
		if (end == NULL)
			break;
		head = (size_t)(end - (c->buf + off)) + 4;
		if ((body = content_length(c->buf + off, head)) < 0)
			return -1;
		total = head + (size_t)body;
		if (c->len - off < total)
			break;
		/* Blocking for the rest is fine for a yardstick with small answers. */
		w = write(c->fd, answer, answer_len);
		if (w != (ssize_t)answer_len)
			return -1;
		off += total;
	}
	if (off == 0 && c->len == sizeof(c->buf))
		return -1;
	memmove(c->buf, c->buf + off, c->len - off);
	c->len -= off;
	return 0;
}

static int
load_answer(const char *path)
{
	struct stat	st;
	int		fd, rv = -1;

	if ((fd = open(path, O_RDONLY)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || st.st_size <= 0 ||
	    st.st_size > FLOOR_MAX_ANSWER_BYTES)
		goto out;
	if ((answer = malloc((size_t)st.st_size)) == NULL)
		goto out;
	if (read(fd, answer, (size_t)st.st_size) != st.st_size)
		goto out;
	answer_len = (size_t)st.st_size;
	rv = 0;
 out:
	close(fd);
	return rv;
}

static int
listen_on(int port)
{
	struct sockaddr_in	sin;
	socklen_t		slen = sizeof(sin);
	int			fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 1024) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &slen) == -1) {
		close(fd);
		return -1;
	}
	printf("PORT %d\n", ntohs(sin.sin_port));
	fflush(stdout);
	return fd;
}

static void
accept_all(int ep, int lfd)
{
	struct epoll_event	 ev;
	struct floor_conn	*c;
	int			 fd, one = 1;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) != -1) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if ((c = malloc(sizeof(*c))) == NULL) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->len = 0;
		ev.events = EPOLLIN;
		ev.data.ptr = c;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1) {
			close(fd);
			free(c);
		}
	}
}

/* One read a wakeup, as level-triggered epoll allows: no read to EAGAIN. */
static void
conn_read(struct floor_conn *c)
{
	ssize_t	n;

	n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
	if (n > 0) {
		c->len += (size_t)n;
		if (drain(c) == 0)
			return;
	} else if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	close(c->fd);	/* also leaves the epoll set */
	free(c);
}

int
main(int argc, char **argv)
{
	struct epoll_event	evs[FLOOR_MAX_EVENTS], ev;
	int			ep, lfd, n, i;

	if (argc != 3) {
		fprintf(stderr, "usage: bench-floor PORT ANSWERFILE\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (load_answer(argv[2]) == -1) {
		fprintf(stderr, "bench-floor: %s: cannot read the answer\n",
		    argv[2]);
		return 1;
	}
	if ((lfd = listen_on(atoi(argv[1]))) == -1 ||
	    (ep = epoll_create1(0)) == -1) {
		perror("bench-floor: listen");
		return 1;
	}
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) == -1) {
		perror("bench-floor: epoll_ctl");
		return 1;
	}
	for (;;) {
		if ((n = epoll_wait(ep, evs, FLOOR_MAX_EVENTS, -1)) == -1) {
			if (errno == EINTR)
				continue;
			perror("bench-floor: epoll_wait");
			return 1;
		}
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == NULL)
				accept_all(ep, lfd);
			else
				conn_read(evs[i].data.ptr);
		}
	}
}
