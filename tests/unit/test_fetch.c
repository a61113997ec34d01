/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for proxy/fetch/fetch.c over a fake libcurl: failover order, hedging, cooldown, Retry-After, final answers, pacing, the transfer cap, cancelling and the checked curl calls. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
/* The fakes below are the functions themselves, not gcc's type-checking macros. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <event2/event.h>

#include "cache/clock.h"
#include "proxy/fetch/fetch.h"
#include "proxy/log.h"

/*
 * The fake libcurl: this program defines the curl_* functions fetch*.c
 * call and is not linked with libcurl, so the fakes below stand in for
 * the library at the link level. Easy handles record the options
 * fetch.c sets; the test ends a transfer as curl would (status line,
 * headers and body through the registered callbacks, then a CURLMSG_DONE
 * for curl_multi_info_read) and calls the registered timer function with
 * 0, so that fetch.c's timer runs curl_multi_socket_action on the next
 * turn of the real event loop and reads the message.
 */

#define FK_MAX_EASY	64
#define FK_MAX_MSGS	16

struct fk_easy {
	char		 url[256];
	void		*priv;
	curl_write_callback writefn, headerfn;
	void		*writedata, *headerdata;
	char		*errbuf;
	const char	*postfields;
	curl_off_t	 postsize;
	long		 post, httpget;
	char		 reqhdrs[512];	/* CURLOPT_HTTPHEADER, one per line */
	long		 status;	/* CURLINFO_RESPONSE_CODE */
	long		 os_errno;	/* CURLINFO_OS_ERRNO */
	int		 added, remove_tried, removed, cleaned;
};

static struct {
	int			 multi_obj;	/* &multi_obj is the CURLM */
	int			 multi_live;
	int			 multi_cleanups;
	curl_socket_callback	 sockfn;
	void			*sockdata;
	curl_multi_timer_callback timerfn;
	void			*timerdata;
	struct fk_easy		*easy[FK_MAX_EASY];	/* in creation order */
	size_t			 neasy;
	struct fk_easy		*added[FK_MAX_EASY];	/* in curl_multi_add_handle order */
	size_t			 nadded;
	CURLMsg			 msgs[FK_MAX_MSGS];
	size_t			 msg_head, msg_tail;
	CURLMsg			 msg_out;
	long			 slist_nodes;		/* allocated, not yet freed */
	void			*assigned;		/* last curl_multi_assign pointer */
	curl_socket_t		 action_sock;		/* last curl_multi_socket_action */
	int			 action_ev;
	unsigned		 actions;
	unsigned		 removes;
	/* failure injection: how many of the next calls fail */
	int			 global_inits;		/* curl_global_init less curl_global_cleanup */
	int			 msetopt_fail;
	CURLMoption		 msetopt_fail_opt;
	int			 esetopt_fail;
	CURLoption		 esetopt_fail_opt;
	int			 add_fail;
	int			 remove_fail;
	int			 action_fail;
	int			 assign_fail;
	int			 private_fail;
} fk;

static struct fk_easy *
fk_get(CURL *h)
{
	struct fk_easy	*e = (struct fk_easy *)(void *)h;
	size_t		 i;

	for (i = 0; i < fk.neasy; i++)
		if (fk.easy[i] == e) {
			if (e->cleaned)
				fail_msg("easy handle %zu used after cleanup", i);
			return e;
		}
	fail_msg("unknown easy handle");
	return NULL;
}

static CURLM *
fk_multi(void)
{
	return (CURLM *)(void *)&fk.multi_obj;
}

static void
fk_check_multi(CURLM *m)
{
	if (m != fk_multi() || !fk.multi_live)
		fail_msg("call on a multi handle that is not live");
}

CURLcode
curl_global_init(long flags)
{
	(void)flags;
	fk.global_inits++;
	return CURLE_OK;
}

void
curl_global_cleanup(void)
{
	assert_true(fk.global_inits > 0);
	fk.global_inits--;
}

CURLM *
curl_multi_init(void)
{
	fk.multi_live = 1;
	return fk_multi();
}

CURLMcode
curl_multi_setopt(CURLM *m, CURLMoption opt, ...)
{
	va_list	ap;

	fk_check_multi(m);
	if (fk.msetopt_fail > 0 && opt == fk.msetopt_fail_opt) {
		fk.msetopt_fail--;
		return CURLM_UNKNOWN_OPTION;
	}
	va_start(ap, opt);
	switch (opt) {
	case CURLMOPT_SOCKETFUNCTION:
		fk.sockfn = va_arg(ap, curl_socket_callback);
		break;
	case CURLMOPT_SOCKETDATA:
		fk.sockdata = va_arg(ap, void *);
		break;
	case CURLMOPT_TIMERFUNCTION:
		fk.timerfn = va_arg(ap, curl_multi_timer_callback);
		break;
	case CURLMOPT_TIMERDATA:
		fk.timerdata = va_arg(ap, void *);
		break;
	default:
		va_end(ap);
		fail_msg("unexpected multi option %d", (int)opt);
	}
	va_end(ap);
	return CURLM_OK;
}

CURLMcode
curl_multi_cleanup(CURLM *m)
{
	fk_check_multi(m);
	fk.multi_live = 0;
	fk.multi_cleanups++;
	return CURLM_OK;
}

static size_t
fk_running(void)
{
	size_t	i, n = 0;

	for (i = 0; i < fk.nadded; i++)
		if (!fk.added[i]->removed)
			n++;
	return n;
}

CURLMcode
curl_multi_socket_action(CURLM *m, curl_socket_t s, int ev, int *running)
{
	fk_check_multi(m);
	fk.actions++;
	fk.action_sock = s;
	fk.action_ev = ev;
	*running = (int)fk_running();
	if (fk.action_fail > 0) {
		fk.action_fail--;
		return CURLM_INTERNAL_ERROR;
	}
	return CURLM_OK;
}

CURLMcode
curl_multi_assign(CURLM *m, curl_socket_t s, void *p)
{
	(void)s;
	fk_check_multi(m);
	if (fk.assign_fail > 0) {
		fk.assign_fail--;
		return CURLM_BAD_SOCKET;
	}
	fk.assigned = p;
	return CURLM_OK;
}

CURLMcode
curl_multi_add_handle(CURLM *m, CURL *h)
{
	struct fk_easy	*e = fk_get(h);

	fk_check_multi(m);
	if (fk.add_fail > 0) {
		fk.add_fail--;
		return CURLM_OUT_OF_MEMORY;
	}
	assert_false(e->added);
	e->added = 1;
	fk.added[fk.nadded++] = e;
	/* as curl does: a new transfer asks to be driven soon */
	fk.timerfn(m, 0, fk.timerdata);
	return CURLM_OK;
}

CURLMcode
curl_multi_remove_handle(CURLM *m, CURL *h)
{
	struct fk_easy	*e = fk_get(h);

	fk_check_multi(m);
	fk.removes++;
	e->remove_tried = 1;
	if (fk.remove_fail > 0) {
		fk.remove_fail--;
		return CURLM_BAD_EASY_HANDLE;
	}
	assert_true(e->added);
	e->removed = 1;
	return CURLM_OK;
}

CURLMsg *
curl_multi_info_read(CURLM *m, int *left)
{
	fk_check_multi(m);
	if (fk.msg_head == fk.msg_tail) {
		*left = 0;
		return NULL;
	}
	fk.msg_out = fk.msgs[fk.msg_head++ % FK_MAX_MSGS];
	*left = (int)(fk.msg_tail - fk.msg_head);
	return &fk.msg_out;
}

CURL *
curl_easy_init(void)
{
	struct fk_easy	*e;

	assert_true(fk.neasy < FK_MAX_EASY);
	e = calloc(1, sizeof(*e));
	assert_non_null(e);
	fk.easy[fk.neasy++] = e;
	return (CURL *)(void *)e;
}

static void
fk_copy_headers(struct fk_easy *e, const struct curl_slist *l)
{
	size_t	off = 0;

	e->reqhdrs[0] = '\0';
	for (; l != NULL; l = l->next) {
		int n = snprintf(e->reqhdrs + off, sizeof(e->reqhdrs) - off,
		    "%s\n", l->data);

		assert_true(n > 0 && (size_t)n < sizeof(e->reqhdrs) - off);
		off += (size_t)n;
	}
}

CURLcode
curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
	struct fk_easy	*e = fk_get(h);
	va_list		 ap;
	void		*p = NULL;
	long		 l = 0;
	curl_write_callback fn = NULL;
	curl_off_t	 off = 0;

	if (fk.esetopt_fail > 0 && opt == fk.esetopt_fail_opt) {
		fk.esetopt_fail--;
		return CURLE_UNKNOWN_OPTION;
	}
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		l = va_arg(ap, long);
	else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
		p = va_arg(ap, void *);
	else if (opt < CURLOPTTYPE_OFF_T)
		fn = va_arg(ap, curl_write_callback);	/* the only two fetch.c sets */
	else
		off = va_arg(ap, curl_off_t);
	va_end(ap);
	switch (opt) {
	case CURLOPT_URL:
		assert_true(strlen(p) < sizeof(e->url));
		strcpy(e->url, p);
		break;
	case CURLOPT_PRIVATE:
		e->priv = p;
		break;
	case CURLOPT_ERRORBUFFER:
		e->errbuf = p;
		break;
	case CURLOPT_WRITEFUNCTION:
		e->writefn = fn;
		break;
	case CURLOPT_WRITEDATA:
		e->writedata = p;
		break;
	case CURLOPT_HEADERFUNCTION:
		e->headerfn = fn;
		break;
	case CURLOPT_HEADERDATA:
		e->headerdata = p;
		break;
	case CURLOPT_HTTPHEADER:
		fk_copy_headers(e, p);
		break;
	case CURLOPT_POST:
		e->post = l;
		break;
	case CURLOPT_POSTFIELDS:
		e->postfields = p;
		break;
	case CURLOPT_POSTFIELDSIZE_LARGE:
		e->postsize = off;
		break;
	case CURLOPT_HTTPGET:
		e->httpget = l;
		break;
	default:
		break;
	}
	return CURLE_OK;
}

CURLcode
curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
	struct fk_easy	*e = fk_get(h);
	va_list		 ap;
	CURLcode	 rc = CURLE_OK;

	va_start(ap, info);
	switch (info) {
	case CURLINFO_RESPONSE_CODE:
		*va_arg(ap, long *) = e->status;
		break;
	case CURLINFO_PRIVATE:
		if (fk.private_fail > 0) {
			fk.private_fail--;
			rc = CURLE_BAD_FUNCTION_ARGUMENT;
			break;
		}
		*va_arg(ap, char **) = e->priv;
		break;
	case CURLINFO_OS_ERRNO:
		*va_arg(ap, long *) = e->os_errno;
		break;
	case CURLINFO_CONNECT_TIME_T:
		*va_arg(ap, curl_off_t *) = 0;
		break;
	default:
		rc = CURLE_UNKNOWN_OPTION;
		break;
	}
	va_end(ap);
	return rc;
}

void
curl_easy_cleanup(CURL *h)
{
	struct fk_easy	*e = fk_get(h);

	/* curl would refuse to free a handle still in the multi handle */
	if (e->added && !e->remove_tried)
		fail_msg("easy handle cleaned up while in the multi handle");
	e->cleaned = 1;
}

const char *
curl_easy_strerror(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_RESOLVE_HOST:
		return "Could not resolve host name";
	case CURLE_UNKNOWN_OPTION:
		return "An unknown option was passed in to libcurl";
	default:
		return "fake curl error";
	}
}

const char *
curl_multi_strerror(CURLMcode c)
{
	switch (c) {
	case CURLM_OUT_OF_MEMORY:
		return "Out of memory";
	case CURLM_BAD_EASY_HANDLE:
		return "Invalid easy handle";
	case CURLM_INTERNAL_ERROR:
		return "Internal error";
	case CURLM_BAD_SOCKET:
		return "Invalid socket argument";
	case CURLM_UNKNOWN_OPTION:
		return "Unknown option";
	default:
		return "fake multi error";
	}
}

struct curl_slist *
curl_slist_append(struct curl_slist *l, const char *s)
{
	struct curl_slist	*n, *t;

	n = calloc(1, sizeof(*n));
	assert_non_null(n);
	n->data = strdup(s);
	assert_non_null(n->data);
	fk.slist_nodes++;
	if (l == NULL)
		return n;
	for (t = l; t->next != NULL; t = t->next)
		;
	t->next = n;
	return l;
}

void
curl_slist_free_all(struct curl_slist *l)
{
	struct curl_slist	*n;

	for (; l != NULL; l = n) {
		n = l->next;
		free(l->data);
		free(l);
		fk.slist_nodes--;
	}
}

curl_version_info_data *
curl_version_info(CURLversion v)
{
	static curl_version_info_data	d;

	(void)v;
	d.version = "0.0-fake";
	return &d;
}

/* ---- the test's clock (fetch.c built with FETCH_TEST_CLOCK) and log ----- */

static int64_t	clock_ms;

/*
 * fetch.c's clock: a millisecond per reading, and moved on by the test.
 * Cooldowns and pacing then end when the test says, however slow the
 * machine, and every reading is later than the one before (a hedge's
 * transfer starts after the one it hedges).
 */
int64_t	fetch_test_now_ms(void);

int64_t
fetch_test_now_ms(void)
{
	return ++clock_ms;
}

static char	logbuf[32768];
static size_t	loglen;

static void __attribute__((format(printf, 2, 0)))
log_add(const char *level, const char *fmt, va_list ap)
{
	char	line[1024];
	int	n;

	vsnprintf(line, sizeof(line), fmt, ap);
	if (getenv("TEST_FETCH_LOG") != NULL)
		fprintf(stderr, "%s%s\n", level, line);
	n = snprintf(logbuf + loglen, sizeof(logbuf) - loglen, "%s%s\n",
	    level, line);
	if (n > 0 && (size_t)n < sizeof(logbuf) - loglen)
		loglen += (size_t)n;
}

#define LOG_FAKE(fn, level)						\
void									\
fn(const char *fmt, ...)						\
{									\
	va_list	ap;							\
									\
	va_start(ap, fmt);						\
	log_add(level, fmt, ap);					\
	va_end(ap);							\
}
LOG_FAKE(log_err, "error: ")
LOG_FAKE(log_warn, "warning: ")
LOG_FAKE(log_info, "")
LOG_FAKE(log_debug, "debug: ")

static int
log_has(const char *s)
{
	return strstr(logbuf, s) != NULL;
}

static int
log_count(const char *s)
{
	const char	*p;
	int		 n = 0;

	for (p = logbuf; (p = strstr(p, s)) != NULL; p += strlen(s))
		n++;
	return n;
}

/* ---- the fixture ------------------------------------------------------- */

static struct event_base	*base;
static struct fetch_ctx		*ctx;
static struct fetch_pool	*pool;
static int			 fk_no_kick;	/* fk_answer: leave the timer alone */

static int
setup(void **state)
{
	(void)state;
	memset(&fk, 0, sizeof(fk));
	clock_ms = 1000 * 1000;
	fk_no_kick = 0;
	loglen = 0;
	logbuf[0] = '\0';
	if ((base = event_base_new()) == NULL ||
	    (ctx = fetch_ctx_new(base)) == NULL)
		return -1;
	pool = NULL;
	return 0;
}

/*
 * A case ends with no job left (their job_args are on its stack), and
 * every handle and header list fetch.c made is gone with the ctx.
 */
static int
teardown(void **state)
{
	size_t	i;

	(void)state;
	assert_int_equal(fetch_ctx_inflight(ctx), 0);
	fetch_pool_free(pool);
	fetch_ctx_free(ctx);
	event_base_free(base);
	for (i = 0; i < fk.neasy; i++) {
		if (!fk.easy[i]->cleaned)
			fail_msg("easy handle %zu never cleaned up", i);
		free(fk.easy[i]);
	}
	assert_int_equal(fk.slist_nodes, 0);
	assert_false(fk.multi_live);
	assert_int_equal(fk.global_inits, 0);
	return 0;
}

static const struct fetch_upstream_conf	ups3[] = {
	{ "a", "http://a.test/base/", 1 },
	{ "b", "http://b.test/base", 0 },
	{ "c", "http://c.test", 0 },
};

static void
pool_make(size_t n, int hedge_ms, size_t max_inflight)
{
	struct fetch_pool_conf	conf = {
		.hedge_ms = hedge_ms,
		.max_inflight = max_inflight,
	};

	pool = fetch_pool_new(ctx, "svc", ups3, n, &conf);
	assert_non_null(pool);
}

/* What a job's check and done saw; the job's arg. */
struct job_rec {
	int		 checks;
	int		 freed;		/* done() called: the arg is the owner's again */
	const char	*reject;	/* FETCH_REJECT answers from this upstream */
	char		 ctype[64];	/* the answer's Content-Type */
	struct done_rec	*dr;		/* where done() records the result */
};

/* What a waiter's done() saw. */
struct done_rec {
	int		 calls;
	enum fetch_err	 err;
	int		 status;
	char		 body[256];
	char		 upstream[16];
	char		 summary[1024];
	int		 verify_nonce;
};

static enum fetch_verdict
check_cb(const struct fetch_res *res, void *arg, char *why, size_t whylen)
{
	struct job_rec	*jr = arg;
	const char	*ct;

	jr->checks++;
	if (jr->reject != NULL && strcmp(res->upstream, jr->reject) == 0) {
		snprintf(why, whylen, "bad signature");
		return FETCH_REJECT;
	}
	if ((ct = fetch_res_header(res, "content-type")) != NULL)
		snprintf(jr->ctype, sizeof(jr->ctype), "%s", ct);
	return FETCH_ACCEPT;
}

/* The result into the job's done_rec; NULL (fetch_ctx_free) only frees the arg. */
static void
done_cb(const struct fetch_res *res, void *arg)
{
	struct job_rec	*jr = arg;
	struct done_rec	*d = jr->dr;

	jr->freed++;
	if (res == NULL)
		return;
	d->calls++;
	d->err = res->err;
	d->status = res->http_status;
	assert_true(res->body_len < sizeof(d->body));
	if (res->body_len > 0)
		memcpy(d->body, res->body, res->body_len);
	d->body[res->body_len] = '\0';
	snprintf(d->upstream, sizeof(d->upstream), "%s",
	    res->upstream != NULL ? res->upstream : "");
	snprintf(d->summary, sizeof(d->summary), "%s",
	    res->summary != NULL ? res->summary : "");
	d->verify_nonce = res->verify_nonce;
}

/* GET /obj/<key>, paced by key (NULL: never paced); jr is the job's arg. */
static struct fetch_job *
join(const char *key, struct job_rec *jr, struct done_rec *dr)
{
	char			 path[64];
	struct fetch_req	 req = { .method = "GET", .path = path };

	snprintf(path, sizeof(path), "/obj/%s", key != NULL ? key : "none");
	if (key != NULL) {
		req.key = (const uint8_t *)key;
		req.klen = strlen(key);
	}
	jr->dr = dr;
	return fetch_start(pool, &req, check_cb, done_cb, jr);
}

/* A few turns of the loop: timers due now, and events made active. */
static void
pump(void)
{
	int	i;

	for (i = 0; i < 4; i++)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

/* Turns the loop until n transfers were added, for at most max_ms. */
static int
wait_added(size_t n, int max_ms)
{
	int64_t	end = mono_ms() + max_ms;

	while (fk.nadded < n) {
		if (mono_ms() > end)
			return 0;
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(1000);
	}
	return 1;
}

static void
fk_header(struct fk_easy *e, const char *line)
{
	char	buf[256];
	size_t	n = strlen(line);

	assert_true(n < sizeof(buf));
	memcpy(buf, line, n);
	assert_int_equal(e->headerfn(buf, 1, n, e->headerdata), n);
}

static void
fk_done_msg(struct fk_easy *e, CURLcode code)
{
	CURLMsg	*m;

	assert_true(fk.msg_tail - fk.msg_head < FK_MAX_MSGS);
	m = &fk.msgs[fk.msg_tail++ % FK_MAX_MSGS];
	memset(m, 0, sizeof(*m));
	m->msg = CURLMSG_DONE;
	m->easy_handle = (CURL *)(void *)e;
	m->data.result = code;
}

/*
 * The transfer answers HTTP status with header lines ("Name: value\n"
 * each, or NULL) and body, through the callbacks fetch.c registered, and
 * is done; a body the write callback refuses ends it CURLE_WRITE_ERROR.
 */
static void
fk_answer(struct fk_easy *e, long status, const char *hdrs, const char *body)
{
	char		 line[256], buf[512];
	const char	*p, *nl;
	CURLcode	 code = CURLE_OK;
	size_t		 n;

	assert_true(e->added && !e->removed);
	snprintf(line, sizeof(line), "HTTP/1.1 %ld Whatever\r\n", status);
	fk_header(e, line);
	for (p = hdrs; p != NULL && *p != '\0'; p = nl + 1) {
		nl = strchr(p, '\n');
		assert_non_null(nl);
		snprintf(line, sizeof(line), "%.*s\r\n", (int)(nl - p), p);
		fk_header(e, line);
	}
	fk_header(e, "\r\n");
	e->status = status;
	if (body != NULL && (n = strlen(body)) > 0) {
		assert_true(n < sizeof(buf));
		memcpy(buf, body, n);
		if (e->writefn(buf, 1, n, e->writedata) != n)
			code = CURLE_WRITE_ERROR;
	}
	fk_done_msg(e, code);
	if (!fk_no_kick)
		fk.timerfn(fk_multi(), 0, fk.timerdata);
}

/* The transfer fails with code (and curl's error buffer text, or NULL). */
static void
fk_fail(struct fk_easy *e, CURLcode code, const char *errmsg, long os_errno)
{
	assert_true(e->added && !e->removed);
	if (errmsg != NULL)
		snprintf(e->errbuf, CURL_ERROR_SIZE, "%s", errmsg);
	e->os_errno = os_errno;
	fk_done_msg(e, code);
	fk.timerfn(fk_multi(), 0, fk.timerdata);
}

static struct fetch_health	hh[3];

static void
health(void)
{
	assert_true(fetch_pool_health(pool, hh, 3) > 0);
}

static int
has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* One job over a and b: a answers status (with hdrs), b answers 200. */
static void
a_fails_b_answers(const char *key, long status, const char *hdrs)
{
	struct job_rec	jr = { 0 };
	struct done_rec	dr = { 0 };
	size_t		n = fk.nadded;

	assert_non_null(join(key, &jr, &dr));
	assert_int_equal(fk.nadded, n + 1);
	assert_true(has_prefix(fk.added[n]->url, "http://a.test/"));
	fk_answer(fk.added[n], status, hdrs, "busy");
	pump();
	assert_int_equal(fk.nadded, n + 2);
	assert_true(has_prefix(fk.added[n + 1]->url, "http://b.test/"));
	fk_answer(fk.added[n + 1], 200, NULL, "ok");
	pump();
	assert_int_equal(dr.calls, 1);
	assert_int_equal(dr.err, FETCH_OK);
	assert_string_equal(dr.upstream, "b");
}

/* One job whose first upstream tried answers 200 at once. */
static void
first_answers(const char *key, const char *want_upstream)
{
	struct job_rec	jr = { 0 };
	struct done_rec	dr = { 0 };
	size_t		n = fk.nadded;
	char		prefix[32];

	assert_non_null(join(key, &jr, &dr));
	assert_int_equal(fk.nadded, n + 1);
	snprintf(prefix, sizeof(prefix), "http://%s.test/", want_upstream);
	if (!has_prefix(fk.added[n]->url, prefix))
		fail_msg("first asked %s, not %s", fk.added[n]->url, prefix);
	fk_answer(fk.added[n], 200, NULL, "ok");
	pump();
	assert_int_equal(dr.calls, 1);
	assert_string_equal(dr.upstream, want_upstream);
}

/* Cancels the jobs still running, while their records are in scope. */
static void
ctx_end(void)
{
	fetch_ctx_free(ctx);
	ctx = NULL;
}

/* ---- cases --------------------------------------------------------------- */

/* Connect errors fail over in the configured order; the summary names each. */
static void
test_failover_in_order(void **state)
{
	struct job_rec	jr = { 0 };
	struct done_rec	dr = { 0 };

	(void)state;
	pool_make(3, 0, 0);
	assert_non_null(join("k1", &jr, &dr));
	assert_int_equal(fk.nadded, 1);
	assert_string_equal(fk.added[0]->url, "http://a.test/base/obj/k1");
	assert_int_equal(fk.added[0]->httpget, 1);
	fk_fail(fk.added[0], CURLE_COULDNT_CONNECT, "Failed to connect",
	    ECONNREFUSED);
	pump();
	assert_true(fk.added[0]->removed);
	assert_int_equal(dr.calls, 0);
	assert_int_equal(fk.nadded, 2);
	assert_string_equal(fk.added[1]->url, "http://b.test/base/obj/k1");
	fk_fail(fk.added[1], CURLE_COULDNT_RESOLVE_HOST,
	    "Could not resolve host: b.test", 0);
	pump();
	assert_int_equal(fk.nadded, 3);
	assert_string_equal(fk.added[2]->url, "http://c.test/obj/k1");
	fk_fail(fk.added[2], CURLE_OPERATION_TIMEDOUT, NULL, 0);
	pump();
	assert_int_equal(fk.nadded, 3);
	assert_int_equal(dr.calls, 1);
	assert_int_equal(dr.err, FETCH_ERR_TIMEOUT);
	assert_string_equal(dr.summary, "a: connect: Connection refused; "
	    "b: dns: Could not resolve host: b.test; "
	    "c: connect timeout after 2000 ms");
	assert_int_equal(jr.checks, 0);
	assert_int_equal(jr.freed, 1);
	assert_int_equal(fetch_ctx_inflight(ctx), 0);
	health();
	assert_int_equal(hh[0].failures[FETCH_ERR_CONNECT], 1);
	assert_int_equal(hh[1].failures[FETCH_ERR_DNS], 1);
	assert_int_equal(hh[2].failures[FETCH_ERR_TIMEOUT], 1);
}

/* A 503 fails over; the next upstream's 200 is checked and answers. */
static void
test_5xx_then_answer(void **state)
{
	struct job_rec	jr = { 0 };
	struct done_rec	dr = { 0 };

	(void)state;
	pool_make(2, 0, 0);
	assert_non_null(join("k1", &jr, &dr));
	fk_answer(fk.added[0], 503, NULL, "busy");
	pump();
	assert_int_equal(dr.calls, 0);
	assert_int_equal(jr.checks, 0);
	assert_int_equal(fk.nadded, 2);
	assert_string_equal(fk.added[1]->url, "http://b.test/base/obj/k1");
	fk_answer(fk.added[1], 200, "Content-Type: application/x-test\n",
	    "the answer");
	pump();
	assert_int_equal(dr.calls, 1);
	assert_int_equal(dr.err, FETCH_OK);
	assert_int_equal(dr.status, 200);
	assert_string_equal(dr.body, "the answer");
	assert_string_equal(dr.upstream, "b");
	assert_int_equal(dr.verify_nonce, 0);
	assert_string_equal(dr.summary, "a: HTTP 503");
	assert_int_equal(jr.checks, 1);
	assert_string_equal(jr.ctype, "application/x-test");
	health();
	assert_int_equal(hh[0].failures[FETCH_ERR_HTTP], 1);
	assert_int_equal(hh[0].consecutive_failures, 1);
	assert_false(hh[0].up);
	assert_true(hh[1].up);
	assert_int_equal(hh[1].requests, 1);
	assert_int_equal(hh[1].latency->count, 1);
}

/*
 * An answer the check rejects counts against its upstream; the next is
 * tried.
 */
static void
test_reject_fails_over(void **state)
{
	struct job_rec	jr = { .reject = "a" };
	struct done_rec	dr = { 0 };

	(void)state;
	pool_make(2, 0, 0);
	assert_non_null(join("k1", &jr, &dr));
	fk_answer(fk.added[0], 200, NULL, "forged");
	pump();
	assert_int_equal(dr.calls, 0);
	assert_int_equal(fk.nadded, 2);
	assert_true(has_prefix(fk.added[1]->url, "http://b.test/"));
	fk_answer(fk.added[1], 200, NULL, "genuine");
	pump();
	assert_int_equal(dr.calls, 1);
	assert_int_equal(dr.err, FETCH_OK);
	assert_string_equal(dr.body, "genuine");
	assert_string_equal(dr.upstream, "b");
	assert_string_equal(dr.summary, "a: rejected: bad signature");
	assert_int_equal(jr.checks, 2);
	health();
	assert_int_equal(hh[0].failures[FETCH_ERR_REJECTED], 1);
	assert_int_equal(hh[1].consecutive_failures, 0);
}

/*
 * The second upstream starts after hedge_ms; its answer wins, the first
 * transfer is taken out of curl and counts against its upstream.
 */
static void
test_hedge_second_wins(void **state)
{
	struct job_rec	jr = { 0 };
	struct done_rec	dr = { 0 };
	int64_t		t0;

	(void)state;
	pool_make(2, 50, 0);
	t0 = mono_ms();
	assert_non_null(join("k1", &jr, &dr));
	assert_int_equal(fk.nadded, 1);
	assert_true(wait_added(2, 5000));
	/* libevent's coarse clock may read a few ms short */
	assert_true(mono_ms() - t0 >= 40);
	assert_true(has_prefix(fk.added[1]->url, "http://b.test/"));
	assert_false(fk.added[0]->removed);
	fk_answer(fk.added[1], 200, NULL, "fast");
	pump();
	assert_int_equal(dr.calls, 1);
	assert_string_equal(dr.upstream, "b");
	assert_string_equal(dr.body, "fast");
	assert_true(fk.added[0]->removed);
	assert_true(fk.added[0]->cleaned);
	health();
	assert_int_equal(hh[0].failures[FETCH_ERR_TIMEOUT], 1);
	assert_int_equal(hh[0].consecutive_failures, 1);
	assert_int_equal(hh[1].consecutive_failures, 0);
	assert_int_equal(fetch_ctx_inflight(ctx), 0);
}

/*
 * The first upstream answers after the hedge started: it wins, the later
 * one is cancelled unblamed.
 */
static void
test_hedge_first_wins(void **state)
{
	struct job_rec	jr = { 0 };
	struct done_rec	dr = { 0 };
	size_t		i;

	(void)state;
	pool_make(2, 20, 0);
	assert_non_null(join("k1", &jr, &dr));
	assert_true(wait_added(2, 5000));
	fk_answer(fk.added[0], 200, NULL, "slow");
	pump();
	assert_int_equal(dr.calls, 1);
	assert_string_equal(dr.upstream, "a");
	assert_true(fk.added[1]->removed);
	assert_true(fk.added[1]->cleaned);
	health();
	assert_int_equal(hh[1].requests, 1);
	assert_int_equal(hh[1].consecutive_failures, 0);
	for (i = 0; i < FETCH_ERR_MAX; i++)
		assert_int_equal(hh[1].failures[i], 0);
	assert_int_equal(hh[0].consecutive_failures, 0);
}

/* Two failures in a row rest an upstream: jobs skip it until the rest ends. */
static void
test_cooldown_skips(void **state)
{
	int64_t	rest;

	(void)state;
	pool_make(2, 0, 0);
	a_fails_b_answers("k1", 500, NULL);
	health();
	assert_int_equal(hh[0].consecutive_failures, 1);
	assert_int_equal(hh[0].cooldown_until_ms, 0);	/* one failure: no rest */
	a_fails_b_answers("k2", 500, NULL);
	health();
	assert_int_equal(hh[0].consecutive_failures, 2);
	assert_false(hh[0].up);
	rest = hh[0].cooldown_until_ms - fetch_test_now_ms();
	assert_true(rest > FETCH_COOLDOWN_BASE_MS - 100);
	assert_true(rest <= FETCH_COOLDOWN_BASE_MS * 6 / 5);
	first_answers("k3", "b");
	/* the rest (1 s plus at most 20 %) is over */
	clock_ms += 1300;
	first_answers("k4", "a");
	health();
	assert_int_equal(hh[0].consecutive_failures, 0);
	assert_int_equal(hh[0].cooldown_until_ms, 0);
	assert_true(hh[0].up);
}

/*
 * Every upstream resting: all are tried, the one whose failure is oldest
 * first.
 */
static void
test_all_resting_oldest_first(void **state)
{
	struct job_rec	jr[3] = { { 0 } };
	struct done_rec	dr[3] = { { 0 } };
	size_t		n;
	int		r;

	(void)state;
	pool_make(2, 20, 0);
	for (r = 0; r < 2; r++) {
		char key[16];

		snprintf(key, sizeof(key), "k%d", r);
		n = fk.nadded;
		assert_non_null(join(key, &jr[r], &dr[r]));
		assert_true(wait_added(n + 2, 5000));
		fk_answer(fk.added[n + 1], 500, NULL, "b down");
		pump();
		clock_ms += 10;
		fk_answer(fk.added[n], 500, NULL, "a down");
		pump();
		clock_ms += 10;
		assert_int_equal(dr[r].calls, 1);
		assert_int_equal(dr[r].err, FETCH_ERR_HTTP);
	}
	health();
	assert_true(hh[0].cooldown_until_ms > fetch_test_now_ms());
	assert_true(hh[1].cooldown_until_ms > fetch_test_now_ms());
	n = fk.nadded;
	assert_non_null(join("k2", &jr[2], &dr[2]));
	assert_int_equal(fk.nadded, n + 1);
	assert_true(has_prefix(fk.added[n]->url, "http://b.test/"));
	fk_answer(fk.added[n], 200, NULL, "ok");
	pump();
	assert_int_equal(dr[2].calls, 1);
	assert_string_equal(dr[2].upstream, "b");
}

/* A 429's Retry-After rests the upstream at once, for as long as it says. */
static void
test_retry_after_429(void **state)
{
	int64_t	rest;

	(void)state;
	pool_make(2, 0, 0);
	a_fails_b_answers("k1", 429, "retry-after: 120\n");
	health();
	assert_int_equal(hh[0].consecutive_failures, 1);
	rest = hh[0].cooldown_until_ms - fetch_test_now_ms();
	assert_true(rest > 119 * 1000);
	assert_true(rest <= 144 * 1000);	/* plus at most 20 % */
	first_answers("k2", "b");
	clock_ms += 100 * 1000;
	first_answers("k3", "b");
	clock_ms += 50 * 1000;
	first_answers("k4", "a");
	/* without the header, a first 429 does not rest the upstream */
	a_fails_b_answers("k5", 429, NULL);
	health();
	assert_int_equal(hh[0].cooldown_until_ms, 0);
	first_answers("k6", "a");
}

/*
 * A 404 or 410 is the answer about the object: not failed over, upstream
 * healthy.
 */
static void
test_final_answer_not_failed_over(void **state)
{
	static const long	status[] = { 404, 410 };
	struct job_rec		jr = { 0 };
	struct done_rec		dr = { 0 };
	size_t			i, n;

	(void)state;
	pool_make(2, 0, 0);
	for (i = 0; i < 2; i++) {
		a_fails_b_answers(i == 0 ? "k1" : "k2", 500, NULL);
		memset(&dr, 0, sizeof(dr));
		memset(&jr, 0, sizeof(jr));
		n = fk.nadded;
		assert_non_null(join(i == 0 ? "k3" : "k4", &jr, &dr));
		fk_answer(fk.added[n], status[i], NULL, "no such object");
		pump();
		assert_int_equal(dr.calls, 1);
		assert_int_equal(dr.err, FETCH_OK);
		assert_int_equal(dr.status, status[i]);
		assert_string_equal(dr.body, "no such object");
		assert_string_equal(dr.upstream, "a");
		assert_int_equal(fk.nadded, n + 1);	/* b never asked */
		assert_int_equal(jr.checks, 0);
		health();
		assert_int_equal(hh[0].consecutive_failures, 0);
		assert_true(hh[0].up);
	}
}

/*
 * At max_inflight a job queues and starts when a slot frees; a queued job
 * cancelled is dropped unsent, its done() never called.
 */
static void
test_max_inflight_queues(void **state)
{
	struct job_rec	 jr[3] = { { 0 } };
	struct done_rec	 dr[3] = { { 0 } };
	struct fetch_job *j3;

	(void)state;
	pool_make(2, 0, 1);
	assert_non_null(join("k1", &jr[0], &dr[0]));
	assert_non_null(join("k2", &jr[1], &dr[1]));
	assert_int_equal(fk.nadded, 1);
	assert_int_equal(fetch_pool_queued(pool), 1);
	assert_non_null(j3 = join("k3", &jr[2], &dr[2]));
	assert_int_equal(fetch_pool_queued(pool), 2);
	assert_true(fetch_job_queued(j3));
	fetch_cancel(j3);
	assert_int_equal(fetch_pool_queued(pool), 1);
	assert_int_equal(fetch_ctx_inflight(ctx), 2);
	assert_int_equal(fk.nadded, 1);
	fk_answer(fk.added[0], 200, NULL, "one");
	pump();
	assert_int_equal(dr[0].calls, 1);
	assert_int_equal(fk.nadded, 2);
	assert_string_equal(fk.added[1]->url, "http://a.test/base/obj/k2");
	assert_int_equal(fetch_pool_queued(pool), 0);
	fk_answer(fk.added[1], 200, NULL, "two");
	pump();
	assert_int_equal(dr[1].calls, 1);
	assert_string_equal(dr[1].body, "two");
	assert_int_equal(fk.nadded, 2);		/* k3 was never sent */
	assert_int_equal(dr[2].calls, 0);
	assert_int_equal(jr[2].freed, 0);
	assert_int_equal(fetch_ctx_inflight(ctx), 0);
}

/*
 * What goes on the wire for a POST: the body (copied), headers, the URL as
 * configured.
 */
static void
test_post_request(void **state)
{
	uint8_t			 body[5] = { 0x30, 0x03, 0x02, 0x01, 0x00 };
	struct fetch_req	 req = {
		.method = "POST", .path = "",
		.content_type = "application/ocsp-request",
		.accept = "application/ocsp-response",
		.body = body, .body_len = sizeof(body),
		.key = (const uint8_t *)"k1", .klen = 2,
		.extra_header = "X-Api-Key: s3cret",
	};
	struct job_rec		 jr = { 0 };
	struct done_rec		 dr = { 0 };
	struct fk_easy		*e;

	(void)state;
	pool_make(1, 0, 0);
	jr.dr = &dr;
	assert_non_null(fetch_start(pool, &req, check_cb, done_cb, &jr));
	memset(body, 0xff, sizeof(body));
	e = fk.added[0];
	assert_string_equal(e->url, "http://a.test/base/");
	assert_int_equal(e->post, 1);
	assert_int_equal(e->postsize, 5);
	assert_memory_equal(e->postfields, "\x30\x03\x02\x01\x00", 5);
	assert_string_equal(e->reqhdrs, "Expect:\n"
	    "Content-Type: application/ocsp-request\n"
	    "Accept: application/ocsp-response\n"
	    "X-Api-Key: s3cret\n");
	fk_answer(e, 200, NULL, "resp");
	pump();
	assert_int_equal(dr.calls, 1);
	assert_int_equal(dr.verify_nonce, 1);
	assert_false(log_has("s3cret"));
}

/* A body over max_response_bytes fails over as too_big. */
static void
test_too_big(void **state)
{
	struct fetch_pool_conf	conf = { .max_response_bytes = 8 };
	struct job_rec		jr = { 0 };
	struct done_rec		dr = { 0 };

	(void)state;
	assert_non_null(pool = fetch_pool_new(ctx, "svc", ups3, 2, &conf));
	assert_non_null(join("k1", &jr, &dr));
	fk_answer(fk.added[0], 200, NULL, "0123456789abcdef");
	pump();
	assert_int_equal(fk.nadded, 2);
	fk_answer(fk.added[1], 200, NULL, "small");
	pump();
	assert_int_equal(dr.calls, 1);
	assert_string_equal(dr.body, "small");
	assert_string_equal(dr.summary, "a: response over 8 bytes");
	assert_int_equal(jr.checks, 1);
	health();
	assert_int_equal(hh[0].failures[FETCH_ERR_TOO_BIG], 1);
}

/*
 * An option libcurl refuses fails that attempt (logged by name); the next
 * upstream is tried.
 */
static void
test_easy_setopt_refused(void **state)
{
	struct job_rec	jr[2] = { { 0 } };
	struct done_rec	dr[2] = { { 0 } };

	(void)state;
	pool_make(2, 0, 0);
	fk.esetopt_fail_opt = CURLOPT_HTTPGET;
	fk.esetopt_fail = 1;
	assert_non_null(join("k1", &jr[0], &dr[0]));
	assert_true(log_has("error: fetch: svc: curl_easy_setopt(CURLOPT_HTTPGET): "
	    "An unknown option was passed in to libcurl"));
	assert_int_equal(fk.neasy, 2);
	assert_true(fk.easy[0]->cleaned);
	assert_false(fk.easy[0]->added);
	assert_int_equal(fk.nadded, 1);
	assert_true(has_prefix(fk.added[0]->url, "http://b.test/"));
	fk_answer(fk.added[0], 200, NULL, "ok");
	pump();
	assert_int_equal(dr[0].calls, 1);
	assert_string_equal(dr[0].summary, "a: cannot start a transfer");
	/* refused everywhere: nothing asked, job_arg stays the caller's */
	fk.esetopt_fail = 100;
	assert_null(join("k2", &jr[1], &dr[1]));
	assert_int_equal(jr[1].freed, 0);
	assert_int_equal(fetch_ctx_inflight(ctx), 0);
	pump();
	assert_int_equal(dr[1].calls, 0);
}

/*
 * A refused curl_multi_add_handle fails the attempt; a refused remove is
 * logged and the job goes on.
 */
static void
test_multi_add_remove_refused(void **state)
{
	struct job_rec	jr[2] = { { 0 } };
	struct done_rec	dr[2] = { { 0 } };

	(void)state;
	pool_make(2, 0, 0);
	fk.add_fail = 1;
	assert_non_null(join("k1", &jr[0], &dr[0]));
	assert_true(log_has("error: fetch: curl_multi_add_handle: Out of memory"));
	assert_int_equal(fk.nadded, 1);
	assert_true(has_prefix(fk.added[0]->url, "http://b.test/"));
	fk.remove_fail = 1;
	fk_answer(fk.added[0], 200, NULL, "ok");
	pump();
	assert_int_equal(log_count("error: fetch: curl_multi_remove_handle: "
	    "Invalid easy handle"), 1);
	assert_int_equal(dr[0].calls, 1);
	assert_string_equal(dr[0].upstream, "b");
	assert_string_equal(dr[0].summary, "a: cannot start a transfer");
	/* fetch_ctx_free ends a running job: remove checked, done(NULL) */
	assert_non_null(join("k2", &jr[1], &dr[1]));
	fk.remove_fail = 1;
	fetch_ctx_free(ctx);
	ctx = NULL;
	assert_int_equal(log_count("error: fetch: curl_multi_remove_handle: "
	    "Invalid easy handle"), 2);
	assert_int_equal(jr[1].freed, 1);
	assert_int_equal(dr[1].calls, 0);
	assert_int_equal(fk.multi_cleanups, 1);
}

/*
 * Sockets curl hands over are watched; failed assign and socket actions
 * are logged.
 */
static void
test_sockets_and_actions(void **state)
{
	struct job_rec	 jr[2] = { { 0 } };
	struct done_rec	 dr[2] = { { 0 } };
	struct fk_easy	*e;
	void		*sockp;
	char		 c;
	int		 p[2];

	(void)state;
	pool_make(1, 0, 0);
	assert_non_null(join("k1", &jr[0], &dr[0]));
	e = fk.added[0];
	assert_int_equal(pipe(p), 0);
	fk.assign_fail = 1;
	assert_int_equal(fk.sockfn((CURL *)(void *)e, p[0], CURL_POLL_IN,
	    fk.sockdata, NULL), -1);
	assert_true(log_has("error: fetch: curl_multi_assign: "
	    "Invalid socket argument"));
	assert_int_equal(fk.sockfn((CURL *)(void *)e, p[0], CURL_POLL_IN,
	    fk.sockdata, NULL), 0);
	assert_non_null(sockp = fk.assigned);
	pump();
	fk.action_sock = CURL_SOCKET_TIMEOUT;
	assert_int_equal(write(p[1], "x", 1), 1);
	pump();
	assert_int_equal(fk.action_sock, p[0]);
	assert_true(fk.action_ev & CURL_CSELECT_IN);
	/* the transfer ends on that socket, and the action reports an error */
	fk_no_kick = 1;
	fk.action_fail = 1;
	fk_answer(e, 200, NULL, "via socket");
	pump();
	assert_true(log_has("error: fetch: curl_multi_socket_action: "
	    "Internal error"));
	assert_int_equal(dr[0].calls, 1);
	assert_string_equal(dr[0].body, "via socket");
	assert_int_equal(fk.sockfn(NULL, p[0], CURL_POLL_REMOVE, fk.sockdata,
	    sockp), 0);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	close(p[1]);
	/* the same from the timer */
	fk_no_kick = 0;
	assert_non_null(join("k2", &jr[1], &dr[1]));
	pump();
	fk.action_fail = 1;
	fk_answer(fk.added[1], 200, NULL, "via timer");
	pump();
	assert_int_equal(log_count("error: fetch: curl_multi_socket_action: "
	    "Internal error"), 2);
	assert_int_equal(dr[1].calls, 1);
}

/*
 * A multi handle that refuses its socket or timer function fails the
 * ctx, logged with the option's name, and leaves nothing behind: the
 * handle cleaned up and curl_global_init undone.
 */
static void
test_multi_setopt_refused(void **state)
{
	struct job_rec	jr = { 0 };
	struct done_rec	dr = { 0 };

	(void)state;
	ctx_end();
	assert_int_equal(fk.global_inits, 0);
	fk.msetopt_fail_opt = CURLMOPT_TIMERFUNCTION;
	fk.msetopt_fail = 1;
	assert_null(fetch_ctx_new(base));
	assert_true(log_has("error: fetch: curl_multi_setopt(CURLMOPT_TIMERFUNCTION): "
	    "Unknown option"));
	assert_int_equal(fk.multi_cleanups, 2);	/* the fixture's, and this one */
	assert_false(fk.multi_live);
	assert_int_equal(fk.global_inits, 0);
	assert_non_null(ctx = fetch_ctx_new(base));
	assert_int_equal(fk.global_inits, 1);
	pool_make(2, 0, 0);
	assert_non_null(join("k1", &jr, &dr));
	assert_int_equal(fk.nadded, 1);
	fk_answer(fk.added[0], 200, NULL, "ok");
	pump();
	assert_int_equal(dr.calls, 1);
	assert_int_equal(dr.err, FETCH_OK);
}

/*
 * At max_inflight a hedge is skipped; failover still goes on once the slot
 * frees.
 */
static void
test_hedge_skipped_at_cap(void **state)
{
	struct job_rec	jr = { 0 };
	struct done_rec	dr = { 0 };
	int64_t		end;

	(void)state;
	pool_make(2, 20, 1);
	assert_non_null(join("k1", &jr, &dr));
	/* five hedge periods pass with no second transfer */
	for (end = mono_ms() + 100; mono_ms() < end; usleep(2000))
		pump();
	assert_int_equal(fk.nadded, 1);
	fk_answer(fk.added[0], 503, NULL, "busy");
	pump();
	assert_int_equal(fk.nadded, 2);
	assert_true(has_prefix(fk.added[1]->url, "http://b.test/"));
	fk_answer(fk.added[1], 200, NULL, "ok");
	pump();
	assert_int_equal(dr.calls, 1);
	assert_string_equal(dr.upstream, "b");
}

/*
 * With pacing_ms, a request that went to an upstream is not sent there
 * again within it: skipped as paced (no health effect); all paced, the
 * job fails soon as paced.
 */
static void
test_pacing(void **state)
{
	struct fetch_pool_conf	conf = { .pacing_ms = 10000 };
	struct job_rec		jr = { 0 };
	struct done_rec		dr = { 0 };

	(void)state;
	assert_non_null(pool = fetch_pool_new(ctx, "svc", ups3, 2, &conf));
	first_answers("k1", "a");
	first_answers("k1", "b");
	first_answers("k2", "a");		/* another request is not paced */
	assert_non_null(join("k1", &jr, &dr));
	assert_int_equal(dr.calls, 0);
	pump();
	assert_int_equal(dr.calls, 1);
	assert_int_equal(dr.err, FETCH_ERR_PACED);
	assert_true(has_prefix(dr.summary, "a: paced: the same request went "
	    "there "));
	assert_non_null(strstr(dr.summary, "; b: paced: "));
	health();
	assert_int_equal(hh[0].failures[FETCH_ERR_PACED], 2);	/* k1's 2nd and 3rd */
	assert_int_equal(hh[0].consecutive_failures, 0);
	assert_true(hh[0].up);
	clock_ms += 10001;
	first_answers("k1", "a");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f)	cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_failover_in_order),
		T(test_5xx_then_answer),
		T(test_reject_fails_over),
		T(test_hedge_second_wins),
		T(test_hedge_first_wins),
		T(test_hedge_skipped_at_cap),
		T(test_cooldown_skips),
		T(test_all_resting_oldest_first),
		T(test_retry_after_429),
		T(test_final_answer_not_failed_over),
		T(test_max_inflight_queues),
		T(test_pacing),
		T(test_post_request),
		T(test_too_big),
		T(test_easy_setopt_refused),
		T(test_multi_add_remove_refused),
		T(test_sockets_and_actions),
		T(test_multi_setopt_refused),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
