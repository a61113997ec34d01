/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/http/http.c: an answer given after the handler returned, and the pipelined requests behind it. */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "proxy/http/http.h"

#define WAIT_S		20	/* a bound on each case, never reached when it passes */
#define MAX_SEEN	8
#define MAX_IN		8192

/*
 * The server's handler answers "/miss" later, from a timer (as an upstream's
 * completion does), and every other path at once. `answering` is set while
 * that late answer is given: a handler run then is on its stack.
 */
struct fixture {
	struct event_base	*base;
	struct http		*http;
	int			 client;
	struct event		*rd, *late, *bound;
	struct http_req		*deferred;
	int			 answering;
	int			 nested;	/* requests handled while answering */
	char			 seen[MAX_SEEN][16];
	int			 nseen;
	char			 in[MAX_IN];
	size_t			 inlen;
	int			 eof;
	int			 gone;
	int			 want;		/* answers to wait for */
};

static int
count(const char *hay, const char *needle)
{
	int	n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay++;
	}
	return n;
}

static void
late_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fixture	*f = arg;

	(void)fd;
	(void)what;
	if (f->deferred == NULL)
		return;
	f->answering = 1;
	evbuffer_add_printf(http_resp_body(f->deferred), "body:/miss\n");
	http_reply(f->deferred, 200, "OK");
	f->deferred = NULL;
	f->answering = 0;
}

static void
gone_cb(struct http_req *req, void *arg)
{
	struct fixture	*f = arg;

	(void)req;
	f->gone = 1;
	f->deferred = NULL;
	event_base_loopbreak(f->base);
}

static void
handler(struct http_req *req, void *arg)
{
	struct fixture	*f = arg;
	struct timeval	 soon = { 0, 20 * 1000 };
	const char	*path = http_req_path(req);

	if (f->nseen < MAX_SEEN)
		snprintf(f->seen[f->nseen++], sizeof(f->seen[0]), "%s", path);
	if (f->answering)
		f->nested++;
	if (strcmp(path, "/miss") == 0) {
		f->deferred = req;
		http_req_on_gone(req, gone_cb, f);
		evtimer_add(f->late, &soon);
		return;
	}
	evbuffer_add_printf(http_resp_body(req), "body:%s\n", path);
	http_reply(req, 200, "OK");
}

static void
client_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fixture	*f = arg;
	ssize_t		 n;

	(void)what;
	n = read(fd, f->in + f->inlen, sizeof(f->in) - 1 - f->inlen);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		f->eof = 1;
		event_del(f->rd);
		event_base_loopbreak(f->base);
		return;
	}
	f->inlen += (size_t)n;
	f->in[f->inlen] = '\0';
	if (f->want > 0 && count(f->in, "HTTP/1.1 200") >= f->want)
		event_base_loopbreak(f->base);
}

static void
bound_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fixture	*f = arg;

	(void)fd;
	(void)what;
	event_base_loopbreak(f->base);
}

static int
setup(void **state)
{
	static struct fixture	 f;
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	struct http_listen	 l;
	char			 err[256];
	int			 lfd;

	memset(&f, 0, sizeof(f));
	assert_non_null(f.base = event_base_new());
	assert_non_null(f.http = http_new(f.base, handler, &f));
	assert_true((lfd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(lfd, 8), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &len), 0);
	memset(&l, 0, sizeof(l));
	l.fd = lfd;
	l.name = "test";
	assert_int_equal(http_add_listener(f.http, &l, err, sizeof(err)), 0);
	assert_true((f.client = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	assert_int_equal(connect(f.client, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(fcntl(f.client, F_SETFL, O_NONBLOCK), 0);
	assert_non_null(f.rd = event_new(f.base, f.client, EV_READ | EV_PERSIST,
	    client_cb, &f));
	assert_non_null(f.late = evtimer_new(f.base, late_cb, &f));
	assert_non_null(f.bound = evtimer_new(f.base, bound_cb, &f));
	event_add(f.rd, NULL);
	*state = &f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture	*f = *state;

	event_free(f->rd);
	event_free(f->late);
	event_free(f->bound);
	close(f->client);
	http_free(f->http);
	event_base_free(f->base);
	return 0;
}

static void
send_all(struct fixture *f, const char *s)
{
	assert_int_equal(write(f->client, s, strlen(s)), (ssize_t)strlen(s));
}

/* Run the loop until client_cb or a callback breaks it, within WAIT_S. */
static void
run(struct fixture *f)
{
	struct timeval	tv = { WAIT_S, 0 };

	evtimer_add(f->bound, &tv);
	event_base_dispatch(f->base);
	evtimer_del(f->bound);
}

#define REQ(p, extra)	"GET " p " HTTP/1.1\r\nHost: x\r\n" extra "\r\n"

/* A miss, then two hits in one write: answered in order, the hits from the loop. */
static void
test_pipelined_after_late_answer(void **state)
{
	struct fixture	*f = *state;
	const char	*a, *b, *m;

	f->want = 3;
	send_all(f, REQ("/miss", "") REQ("/a", "") REQ("/b", ""));
	run(f);
	assert_int_equal(count(f->in, "HTTP/1.1 200"), 3);
	m = strstr(f->in, "body:/miss");
	a = strstr(f->in, "body:/a");
	b = strstr(f->in, "body:/b");
	assert_non_null(m);
	assert_non_null(a);
	assert_non_null(b);
	assert_true(m < a && a < b);
	assert_int_equal(f->nseen, 3);
	assert_string_equal(f->seen[0], "/miss");
	assert_string_equal(f->seen[1], "/a");
	assert_string_equal(f->seen[2], "/b");
	/* Not one of them was parsed and handled on the late answer's stack. */
	assert_int_equal(f->nested, 0);
}

/* Two misses in a row with a hit between: each waits its turn. */
static void
test_two_late_answers(void **state)
{
	struct fixture	*f = *state;
	const char	*m1, *a, *m2;

	f->want = 3;
	send_all(f, REQ("/miss", "") REQ("/a", "") REQ("/miss", ""));
	run(f);
	assert_int_equal(count(f->in, "HTTP/1.1 200"), 3);
	m1 = strstr(f->in, "body:/miss");
	a = strstr(f->in, "body:/a");
	assert_non_null(m1);
	assert_non_null(a);
	assert_non_null(m2 = strstr(a, "body:/miss"));
	assert_true(m1 < a && a < m2);
	assert_int_equal(f->nseen, 3);
	assert_int_equal(f->nested, 0);
}

/* Connection: close on the miss: nothing after it is handled, and it closes. */
static void
test_close_after_late_answer(void **state)
{
	struct fixture	*f = *state;

	f->want = 0;
	send_all(f, REQ("/miss", "Connection: close\r\n") REQ("/a", ""));
	run(f);
	assert_true(f->eof);
	assert_int_equal(count(f->in, "HTTP/1.1 200"), 1);
	assert_non_null(strstr(f->in, "Connection: close"));
	assert_null(strstr(f->in, "body:/a"));
	assert_int_equal(f->nseen, 1);
}

/* Half-closed after its requests: every answer, the hits after the miss, then EOF. */
static void
test_half_close_after_late_answer(void **state)
{
	struct fixture	*f = *state;

	f->want = 0;
	send_all(f, REQ("/miss", "") REQ("/a", ""));
	assert_int_equal(shutdown(f->client, SHUT_WR), 0);
	run(f);
	assert_true(f->eof);
	assert_int_equal(count(f->in, "HTTP/1.1 200"), 2);
	assert_true(strstr(f->in, "body:/miss") < strstr(f->in, "body:/a"));
	assert_int_equal(f->nested, 0);
}

/* The client leaves while its answer is pending: the gone callback runs, nothing is answered. */
static void
test_gone_while_pending(void **state)
{
	struct fixture	*f = *state;
	struct linger	 lg = { 1, 0 };

	f->want = 0;
	send_all(f, REQ("/miss", ""));
	while (f->deferred == NULL)
		assert_int_equal(event_base_loop(f->base, EVLOOP_ONCE), 0);
	evtimer_del(f->late);
	/* A reset, so the server's next read fails at once. */
	assert_int_equal(setsockopt(f->client, SOL_SOCKET, SO_LINGER, &lg,
	    sizeof(lg)), 0);
	event_del(f->rd);
	close(f->client);
	assert_true((f->client = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	run(f);
	assert_true(f->gone);
	assert_null(f->deferred);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pipelined_after_late_answer,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_late_answers, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_close_after_late_answer,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_half_close_after_late_answer,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_gone_while_pending, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
