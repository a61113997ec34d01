/* SPDX-License-Identifier: Apache-2.0 */
/* Upstream fetch: curl multi inside the libevent loop (the shape of curl's hiperfifo example). */
#include "config.h"

#include <sys/queue.h>

#include <stdlib.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "proxy/fetch/fetch.h"
#include "proxy/fetch/fetch_int.h"
#include "proxy/log.h"

static void	process_done(struct fetch_ctx *);

/* ---- curl <-> libevent ------------------------------------------------ */

/*
 * Every CURLMcode is checked: one that is not CURLM_OK is logged with its
 * name and the call. A failed socket action leaves the transfers it
 * concerned to their own timeouts; 0 or -1 as the call succeeded.
 */
int
fetch_multi_check(const char *call, CURLMcode mc)
{
	if (mc == CURLM_OK)
		return 0;
	log_err("fetch: %s: %s", call, curl_multi_strerror(mc));
	return -1;
}

static void
sock_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fetch_ctx	*ctx = arg;
	int			 action = 0, running = 0;

	if (what & EV_READ)
		action |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		action |= CURL_CSELECT_OUT;
	fetch_multi_check("curl_multi_socket_action",
	    curl_multi_socket_action(ctx->multi, fd, action, &running));
	/*
	 * No timer cleanup here: process_done may start the next upstream,
	 * and curl arms the timer that transfer needs through timer_fn.
	 */
	process_done(ctx);
}

void
fetch_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct fetch_ctx	*ctx = arg;
	int			 running = 0;

	(void)fd;
	(void)what;
	fetch_multi_check("curl_multi_socket_action",
	    curl_multi_socket_action(ctx->multi, CURL_SOCKET_TIMEOUT, 0,
	    &running));
	process_done(ctx);
}

/* CURLMOPT_TIMERFUNCTION: -1 deletes the timer, 0 means "soon", not "now". */
static int
timer_fn(CURLM *multi, long timeout_ms, void *arg)
{
	struct fetch_ctx	*ctx = arg;
	struct timeval		 tv;

	(void)multi;
	if (timeout_ms < 0) {
		evtimer_del(&ctx->timer_ev);
		return 0;
	}
	ms_to_tv(timeout_ms, &tv);
	evtimer_add(&ctx->timer_ev, &tv);
	return 0;
}

/* CURLMOPT_SOCKETFUNCTION */
static int
socket_fn(CURL *easy, curl_socket_t s, int what, void *arg, void *sockp)
{
	struct fetch_ctx	*ctx = arg;
	struct fetch_sock	*fs = sockp;
	short			 kind = EV_PERSIST;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (fs != NULL) {
			event_del(&fs->ev);
			LIST_REMOVE(fs, entry);
			free(fs);
		}
		return 0;
	}
	if (fs == NULL) {
		if ((fs = calloc(1, sizeof(*fs))) == NULL)
			return -1;
		LIST_INSERT_HEAD(&ctx->socks, fs, entry);
		/* CURLMOPT_SOCKETFUNCTION: -1 fails this socket's transfer. */
		if (fetch_multi_check("curl_multi_assign",
		    curl_multi_assign(ctx->multi, s, fs)) == -1) {
			LIST_REMOVE(fs, entry);
			free(fs);
			return -1;
		}
	} else
		event_del(&fs->ev);
	if (what & CURL_POLL_IN)
		kind |= EV_READ;
	if (what & CURL_POLL_OUT)
		kind |= EV_WRITE;
	event_assign(&fs->ev, ctx->base, s, kind, sock_cb, ctx);
	event_add(&fs->ev, NULL);
	return 0;
}

static void
process_done(struct fetch_ctx *ctx)
{
	CURLMsg			*msg;
	struct fetch_attempt	*a;
	CURLcode		 code;
	char			*priv;
	int			 left;

	while ((msg = curl_multi_info_read(ctx->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		priv = NULL;
		code = msg->data.result;
		if (curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
		    &priv) != CURLE_OK) {
			log_err("fetch: a finished transfer without its "
			    "attempt (CURLINFO_PRIVATE)");
			continue;
		}
		if ((a = (struct fetch_attempt *)(void *)priv) != NULL)
			fetch_attempt_done(a, code);
	}
}

/*
 * The multi handle, with the socket and timer functions above: 0, or -1
 * after logging (ctx->multi stays NULL).
 */
int
fetch_multi_new(struct fetch_ctx *ctx)
{
	if ((ctx->multi = curl_multi_init()) == NULL) {
		log_err("fetch: curl_multi_init failed");
		return -1;
	}
	if (fetch_multi_check("curl_multi_setopt(CURLMOPT_SOCKETFUNCTION)",
	    curl_multi_setopt(ctx->multi, CURLMOPT_SOCKETFUNCTION, socket_fn)) ||
	    fetch_multi_check("curl_multi_setopt(CURLMOPT_SOCKETDATA)",
	    curl_multi_setopt(ctx->multi, CURLMOPT_SOCKETDATA, ctx)) ||
	    fetch_multi_check("curl_multi_setopt(CURLMOPT_TIMERFUNCTION)",
	    curl_multi_setopt(ctx->multi, CURLMOPT_TIMERFUNCTION, timer_fn)) ||
	    fetch_multi_check("curl_multi_setopt(CURLMOPT_TIMERDATA)",
	    curl_multi_setopt(ctx->multi, CURLMOPT_TIMERDATA, ctx))) {
		curl_multi_cleanup(ctx->multi);
		ctx->multi = NULL;
		return -1;
	}
	return 0;
}
