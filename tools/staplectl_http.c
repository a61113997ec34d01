/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl's HTTP client: one GET or POST with curl, bounded in size and time. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "tools/staplectl.h"

#define FETCH_MAX_BYTES		(8u << 20)	/* RIM envelopes up to 8 MiB */
#define FETCH_MAX_HEADER_BYTES	65536
#define FETCH_CONNECT_MS	5000L
#define FETCH_TIMEOUT_MS	30000L
#define GENERATOR		"staplectl " PACKAGE_VERSION	/* User-Agent */

static size_t
body_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct ctl_http	*r = arg;
	size_t		 n = size * nmemb;
	uint8_t		*np;

	if (r->len + n > FETCH_MAX_BYTES) {
		r->over = 1;
		return 0;
	}
	if ((np = realloc(r->body, r->len + n + 1)) == NULL)
		return 0;
	r->body = np;
	memcpy(r->body + r->len, data, n);
	r->len += n;
	return n;
}

static size_t
header_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct ctl_http	*r = arg;
	size_t		 n = size * nmemb;
	char		*np;

	if (n >= 5 && strncmp(data, "HTTP/", 5) == 0)
		r->hlen = 0;	/* a new response (after 100 Continue) */
	if (r->hlen + n > FETCH_MAX_HEADER_BYTES) {
		r->over = 1;
		return 0;
	}
	if ((np = realloc(r->hdr, r->hlen + n + 1)) == NULL)
		return 0;
	r->hdr = np;
	memcpy(r->hdr + r->hlen, data, n);
	r->hlen += n;
	return n;
}

void
ctl_http_free(struct ctl_http *r)
{
	free(r->body);
	free(r->hdr);
	memset(r, 0, sizeof(*r));
}

/* A failure of the connection or of time, not of the answer: worth asking again. */
static int
curl_transient(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
		return 1;
	default:
		return 0;
	}
}

/*
 * The upstream TLS files (CURLOPT_CAINFO, CURLOPT_SSLCERT, CURLOPT_SSLKEY),
 * as stapled's transfers set them; NULL: curl's default store, no
 * client certificate.
 */
static void
http_tls(CURL *c, const struct config_upstream_tls *tls)
{
	if (tls == NULL)
		return;
	if (tls->ca_file != NULL) {
		curl_easy_setopt(c, CURLOPT_CAINFO, tls->ca_file);
		/* instead of the system's store, not beside it */
		curl_easy_setopt(c, CURLOPT_CAPATH, (char *)NULL);
	}
	if (tls->cert_file != NULL) {
		curl_easy_setopt(c, CURLOPT_SSLCERT, tls->cert_file);
		curl_easy_setopt(c, CURLOPT_SSLKEY, tls->key_file);
	}
}

int
ctl_http_do(const char *url, const struct config_upstream_tls *tls,
    const uint8_t *post, size_t postlen, const char *accept,
    struct ctl_http *r, char *err, size_t errlen)
{
	struct curl_slist	*h = NULL;
	char			 line[128];
	CURL			*c;
	long			 code = 0;
	CURLcode		 rc;
	int			 rv = -1;

	memset(r, 0, sizeof(*r));
	if ((c = curl_easy_init()) == NULL) {
		snprintf(err, errlen, "curl: cannot start");
		return -1;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, FETCH_CONNECT_MS);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, FETCH_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_USERAGENT, GENERATOR);
	http_tls(c, tls);
	if (post != NULL) {
		h = curl_slist_append(h, "Content-Type: application/ocsp-request");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)postlen);
	}
	if (accept != NULL) {
		snprintf(line, sizeof(line), "Accept: %s", accept);
		h = curl_slist_append(h, line);
	}
	if (h != NULL)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (rc != CURLE_OK)
		snprintf(err, errlen, "%s: %s", url, r->over ? "answer too large" :
		    curl_easy_strerror(rc));
	else if (code != 200)
		snprintf(err, errlen, "%s: HTTP %ld%s", url, code, code == 404 ?
		    " (not known to this upstream)" : "");
	else
		rv = 0;
	if (rv == -1) {
		ctl_http_free(r);
		r->transient = rc != CURLE_OK ? curl_transient(rc) :
		    code >= 500 || code == 408 || code == 429;
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return rv;
}

