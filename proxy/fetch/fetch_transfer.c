/* SPDX-License-Identifier: Apache-2.0 */
/* Upstream fetch: one attempt at one upstream over curl, and its outcome classified and told. */
#include "config.h"

#include <sys/queue.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "proxy/fetch/fetch.h"
#include "proxy/fetch/fetch_int.h"
#include "proxy/log.h"

/* ---- one transfer ------------------------------------------------------- */

static size_t
write_fn(char *p, size_t size, size_t n, void *arg)
{
	struct fetch_attempt	*a = arg;
	size_t			 len = size * n, ncap;
	uint8_t			*nbuf;

	if (len > a->job->pool->conf.max_response_bytes - a->len) {
		a->too_big = 1;
		return 0;		/* CURLE_WRITE_ERROR */
	}
	if (a->len + len > a->cap) {
		ncap = a->cap ? a->cap : 4096;
		while (ncap < a->len + len)
			ncap *= 2;
		if ((nbuf = realloc(a->buf, ncap)) == NULL)
			return 0;
		a->buf = nbuf;
		a->cap = ncap;
	}
	memcpy(a->buf + a->len, p, len);
	a->len += len;
	return len;
}

static void
hdrs_clear(struct fetch_attempt *a)
{
	size_t	i;

	for (i = 0; i < a->nhdr; i++)
		free(a->hdr[i]);
	free(a->hdr);
	a->hdr = NULL;
	a->nhdr = a->hdrbytes = 0;
}

/* Keeps the header lines of the last response (after any 1xx), within bounds. */
static size_t
header_fn(char *p, size_t size, size_t n, void *arg)
{
	struct fetch_attempt	*a = arg;
	size_t			 len = size * n, l = len;
	char			**nh, *line;

	if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		hdrs_clear(a);
		return len;
	}
	while (l > 0 && (p[l - 1] == '\r' || p[l - 1] == '\n'))
		l--;
	if (l == 0 || a->nhdr >= FETCH_MAX_HEADERS ||
	    a->hdrbytes + l > FETCH_MAX_HEADER_BYTES)
		return len;
	if ((line = strndup(p, l)) == NULL)
		return len;
	if ((nh = reallocarray(a->hdr, a->nhdr + 1, sizeof(*nh))) == NULL) {
		free(line);
		return len;
	}
	a->hdr = nh;
	a->hdr[a->nhdr++] = line;
	a->hdrbytes += l;
	return len;
}

const char *
fetch_attempt_header(const struct fetch_attempt *a, const char *name)
{
	size_t		 i, nl = strlen(name);
	const char	*v;

	for (i = 0; i < a->nhdr; i++) {
		if (strncasecmp(a->hdr[i], name, nl) != 0 ||
		    a->hdr[i][nl] != ':')
			continue;
		v = a->hdr[i] + nl + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		return v;
	}
	return NULL;
}

void
fetch_attempt_free(struct fetch_attempt *a)
{
	if (a == NULL)
		return;
	if (a->easy != NULL)
		curl_easy_cleanup(a->easy);
	if (a->reqhdrs != NULL)
		curl_slist_free_all(a->reqhdrs);
	hdrs_clear(a);
	free(a->buf);
	free(a->url);
	free(a);
}

/* Takes a running attempt out of curl and frees it; no health effect. */
void
fetch_attempt_cancel(struct fetch_attempt *a)
{
	struct fetch_job	*job = a->job;

	TAILQ_REMOVE(&job->attempts, a, entry);
	fetch_multi_check("curl_multi_remove_handle",
	    curl_multi_remove_handle(job->ctx->multi, a->easy));
	fetch_slot_release(a);
	fetch_attempt_free(a);
}

static int
add_header(struct curl_slist **list,
    const char *name, const char *value)
{
	struct curl_slist	*n;
	char			*h;

	if (asprintf(&h, "%s%s", name, value) == -1)
		return -1;
	n = curl_slist_append(*list, h);
	free(h);
	if (n == NULL)
		return -1;
	*list = n;
	return 0;
}

/*
 * curl_easy_setopt with its CURLcode checked: an option this libcurl
 * refuses fails the attempt, logged with the option's name.
 */
#define EASY_SET(opt, val) do {						\
	CURLcode ec_ = curl_easy_setopt(e, (opt), (val));		\
	if (ec_ != CURLE_OK) {						\
		log_err("fetch: %s: curl_easy_setopt(%s): %s",		\
		    pool->service, #opt, curl_easy_strerror(ec_));	\
		goto out;						\
	}								\
} while (0)

/*
 * The pool's upstream TLS files on an easy handle (CURLOPT_CAINFO,
 * CURLOPT_SSLCERT, CURLOPT_SSLKEY); nothing when it has none, and curl
 * verifies against its default store. 0, or -1 after logging.
 */
static int
attempt_tls(const struct fetch_pool *pool, CURL *e)
{
	int	rv = -1;

	if (pool->ca_file != NULL) {
		EASY_SET(CURLOPT_CAINFO, pool->ca_file);
		/* Instead of the system's store, not beside it: a libcurl built with a CA directory (Debian's) reads that too. */
		EASY_SET(CURLOPT_CAPATH, (char *)NULL);
#if LIBCURL_VERSION_NUM >= 0x075700
		/*
		 * curl keeps a CA file's store for 24 h, known by the file's
		 * name: read it at each new connection instead, so that a CA
		 * file replaced in place counts from the next one.
		 */
		EASY_SET(CURLOPT_CA_CACHE_TIMEOUT, 0L);
#endif
	}
	if (pool->cert_file != NULL) {
		EASY_SET(CURLOPT_SSLCERT, pool->cert_file);
		EASY_SET(CURLOPT_SSLKEY, pool->key_file);
	}
	rv = 0;
 out:
	return rv;
}

int
fetch_attempt_start(struct fetch_job *job, size_t idx)
{
	struct fetch_pool	*pool = job->pool;
	struct fetch_upstream	*up = &pool->ups[idx];
	struct fetch_attempt	*a;
	size_t			 ulen = strlen(up->url);
	CURL			*e;
	int			 rv = -1;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return -1;
	a->job = job;
	a->up = idx;
	/* "https://host/" + "/path": one slash */
	if (ulen > 0 && up->url[ulen - 1] == '/' && job->path[0] == '/')
		ulen--;
	if (asprintf(&a->url, "%.*s%s", (int)ulen, up->url, job->path) == -1) {
		a->url = NULL;
		goto out;
	}
	if ((a->easy = e = curl_easy_init()) == NULL)
		goto out;

	/* An empty Expect: keeps curl from waiting for 100-continue. */
	if (add_header(&a->reqhdrs, "Expect:", "") == -1)
		goto out;
	if (job->content_type != NULL && strcmp(job->method, "POST") == 0 &&
	    add_header(&a->reqhdrs, "Content-Type: ", job->content_type) == -1)
		goto out;
	if (job->accept != NULL &&
	    add_header(&a->reqhdrs, "Accept: ", job->accept) == -1)
		goto out;
	if (job->extra_header != NULL &&
	    add_header(&a->reqhdrs, job->extra_header, "") == -1)
		goto out;

	EASY_SET(CURLOPT_URL, a->url);
	EASY_SET(CURLOPT_PRIVATE, a);
	EASY_SET(CURLOPT_ERRORBUFFER, a->errbuf);
	EASY_SET(CURLOPT_NOSIGNAL, 1L);
	EASY_SET(CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	EASY_SET(CURLOPT_PROTOCOLS_STR, "http,https");
	EASY_SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
	EASY_SET(CURLOPT_PROTOCOLS,
	    (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
	EASY_SET(CURLOPT_REDIR_PROTOCOLS,
	    (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	if (attempt_tls(pool, e) == -1)
		goto out;
	EASY_SET(CURLOPT_CONNECTTIMEOUT_MS,
	    (long)pool->conf.connect_timeout_ms);
	EASY_SET(CURLOPT_TIMEOUT_MS, (long)pool->conf.timeout_ms);
	EASY_SET(CURLOPT_USERAGENT, FETCH_USER_AGENT);
	EASY_SET(CURLOPT_HTTPHEADER, a->reqhdrs);
	/* Refused early when Content-Length says so; write_fn catches the rest. */
	EASY_SET(CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)pool->conf.max_response_bytes);
	EASY_SET(CURLOPT_WRITEFUNCTION, write_fn);
	EASY_SET(CURLOPT_WRITEDATA, a);
	EASY_SET(CURLOPT_HEADERFUNCTION, header_fn);
	EASY_SET(CURLOPT_HEADERDATA, a);
	if (strcmp(job->method, "POST") == 0) {
		EASY_SET(CURLOPT_POST, 1L);
		/* job->body outlives every attempt of the job */
		EASY_SET(CURLOPT_POSTFIELDS,
		    job->body != NULL ? (const char *)job->body : "");
		EASY_SET(CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)job->body_len);
	} else if (strcmp(job->method, "GET") == 0)
		EASY_SET(CURLOPT_HTTPGET, 1L);
	else
		EASY_SET(CURLOPT_CUSTOMREQUEST, job->method);

	if (fetch_multi_check("curl_multi_add_handle",
	    curl_multi_add_handle(job->ctx->multi, e)) == -1)
		goto out;
	a->started_ms = now_ms();
	TAILQ_INSERT_TAIL(&job->attempts, a, entry);
	a->counted = 1;
	pool->ntransfers++;
	up->st->requests++;
	log_debug("fetch: %s: %s: %s %s", pool->service, up->name,
	    job->method, a->url);
	a = NULL;
	rv = 0;
 out:
	fetch_attempt_free(a);
	return rv;
}

void
fetch_res_from(struct fetch_res *res, const struct fetch_job *job,
    const struct fetch_attempt *a)
{
	const struct fetch_upstream	*up;
	long				 status = 0;

	memset(res, 0, sizeof(*res));
	res->summary = job->summary;
	if (a == NULL)
		return;
	up = &job->pool->ups[a->up];
	/* No status known is 0, as curl reports for no response. */
	if (curl_easy_getinfo(a->easy, CURLINFO_RESPONSE_CODE,
	    &status) != CURLE_OK)
		status = 0;
	res->http_status = (int)status;
	res->body = a->buf;
	res->body_len = a->len;
	res->upstream = up->name;
	res->verify_nonce = up->verify_nonce;
	res->priv = a;
}

static enum fetch_err
fetch_curl_err(CURLcode code, const struct fetch_attempt *a)
{
	switch (code) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return FETCH_ERR_DNS;
	case CURLE_COULDNT_CONNECT:
		return FETCH_ERR_CONNECT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_USE_SSL_FAILED:
#if LIBCURL_VERSION_NUM >= 0x074d00
	case CURLE_SSL_CLIENTCERT:	/* TLS 1.3: the upstream wants a client certificate */
#endif
		return FETCH_ERR_TLS;
	case CURLE_OPERATION_TIMEDOUT:
		return FETCH_ERR_TIMEOUT;
	case CURLE_FILESIZE_EXCEEDED:
		return FETCH_ERR_TOO_BIG;
	case CURLE_WRITE_ERROR:
		return a->too_big ? FETCH_ERR_TOO_BIG : FETCH_ERR_TRANSPORT;
	default:
		return FETCH_ERR_TRANSPORT;
	}
}

/* "connect: Connection refused", "timeout after 10000 ms", ... */
static void
fetch_curl_reason(char *buf, size_t len, CURLcode code, enum fetch_err err,
    const struct fetch_attempt *a)
{
	const struct fetch_pool_conf	*conf = &a->job->pool->conf;
	const char			*msg;
	curl_off_t			 connected = 0;
	long				 oserr = 0;

	msg = a->errbuf[0] != '\0' ? a->errbuf : curl_easy_strerror(code);
	switch (err) {
	case FETCH_ERR_DNS:
		snprintf(buf, len, "dns: %s", msg);
		break;
	case FETCH_ERR_TLS:
		snprintf(buf, len, "tls: %s", msg);
		break;
	case FETCH_ERR_CONNECT:
		if (curl_easy_getinfo(a->easy, CURLINFO_OS_ERRNO,
		    &oserr) != CURLE_OK)
			oserr = 0;
		if (code == CURLE_COULDNT_CONNECT && oserr != 0)
			msg = strerror((int)oserr);
		snprintf(buf, len, "connect: %s", msg);
		break;
	case FETCH_ERR_TIMEOUT:
		if (curl_easy_getinfo(a->easy, CURLINFO_CONNECT_TIME_T,
		    &connected) != CURLE_OK)
			connected = 0;
		if (connected == 0)
			snprintf(buf, len, "connect timeout after %d ms",
			    conf->connect_timeout_ms);
		else
			snprintf(buf, len, "timeout after %d ms",
			    conf->timeout_ms);
		break;
	case FETCH_ERR_TOO_BIG:
		snprintf(buf, len, "response over %zu bytes",
		    conf->max_response_bytes);
		break;
	default:
		snprintf(buf, len, "%s", msg);
		break;
	}
}

/* A transfer ended; it is out of the running list but still in curl. */
void
fetch_attempt_done(struct fetch_attempt *a, CURLcode code)
{
	struct fetch_job	*job = a->job;
	struct fetch_pool	*pool = job->pool;
	struct fetch_upstream	*up = &pool->ups[a->up];
	struct fetch_res	 res;
	enum fetch_err		 err;
	enum fetch_verdict	 v = FETCH_ACCEPT;
	const char		*next;
	char			 reason[CURL_ERROR_SIZE + 64], why[256];
	int64_t			 retry_after = -1;
	int			 status;

	TAILQ_REMOVE(&job->attempts, a, entry);
	fetch_multi_check("curl_multi_remove_handle",
	    curl_multi_remove_handle(job->ctx->multi, a->easy));
	fetch_slot_release(a);
	fetch_res_from(&res, job, a);
	status = res.http_status;
	if (code == CURLE_OK)
		metrics_hist_observe(&up->st->latency, METRICS_HIST_UPSTREAM,
		    (double)(now_ms() - a->started_ms) / 1000.0);

	if (code == CURLE_OK) {
		switch (fetch_classify(status)) {
		case FETCH_CLASS_ANSWER:
			why[0] = '\0';
			if (job->check != NULL)
				v = job->check(&res, job->arg, why,
				    sizeof(why));
			if (v != FETCH_REJECT)
				goto answer;
			err = FETCH_ERR_REJECTED;
			why[sizeof(why) - 1] = '\0';
			snprintf(reason, sizeof(reason), "rejected: %s",
			    why[0] ? why : "no reason given");
			break;
		case FETCH_CLASS_FINAL:
			goto answer;
		case FETCH_CLASS_FAILOVER:
		default:
			err = FETCH_ERR_HTTP;
			snprintf(reason, sizeof(reason), "HTTP %d", status);
			/* RFC 9110 10.2.3 */
			if (status == 429 || status == 503)
				retry_after = fetch_retry_after_ms(
				    fetch_attempt_header(a, "Retry-After"),
				    time(NULL));
			break;
		}
	} else {
		err = fetch_curl_err(code, a);
		fetch_curl_reason(reason, sizeof(reason), code, err, a);
	}

	fetch_up_failure(pool, up, err, reason, retry_after);
	fetch_summary_add(job, up->name, reason);
	fetch_attempt_free(job->last);
	job->last = a;
	job->last_err = err;
	if (!TAILQ_EMPTY(&job->attempts))
		next = NULL;
	else if (job->next < job->norder)
		next = pool->ups[job->order[job->next]].name;
	else
		next = NULL;
	log_debug("fetch: %s: %s: %s %s: %s, %s%s", pool->service, up->name,
	    job->method, a->url, reason,
	    next ? "trying " : (TAILQ_EMPTY(&job->attempts) ? "giving up" :
	    "waiting for the others"), next ? next : "");
	if (TAILQ_EMPTY(&job->attempts))
		fetch_job_step(job);
	return;

 answer:
	log_debug("fetch: %s: %s: %s %s: HTTP %d in %lld ms", pool->service,
	    up->name, job->method, a->url, status,
	    (long long)(now_ms() - a->started_ms));
	fetch_up_success(pool, up);
	fetch_job_finish(job, a);
}
