/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl opened at run time: the functions fetch.c calls, resolved from the library after start-up. */
#ifndef PROXY_FETCH_CURL_H
#define PROXY_FETCH_CURL_H

#include <stddef.h>

#include <curl/curl.h>

/*
 * The soname stapled is built against: libcurl's ABI, 4 since 2006.
 * Opened by this name, so the dynamic loader searches as it would for a
 * linked library (ld.so.cache, then the default paths).
 */
#define FETCH_CURL_SONAME	"libcurl.so.4"

/* Each is the libcurl function of the same name with the curl_ prefix. */
struct fetch_curl {
	CURLcode	 (*global_init)(long);
	CURLM		*(*multi_init)(void);
	CURLMcode	 (*multi_setopt)(CURLM *, CURLMoption, ...);
	CURLMcode	 (*multi_cleanup)(CURLM *);
	CURLMcode	 (*multi_socket_action)(CURLM *, curl_socket_t, int, int *);
	CURLMcode	 (*multi_assign)(CURLM *, curl_socket_t, void *);
	CURLMcode	 (*multi_add_handle)(CURLM *, CURL *);
	CURLMcode	 (*multi_remove_handle)(CURLM *, CURL *);
	CURLMsg		*(*multi_info_read)(CURLM *, int *);
	CURL		*(*easy_init)(void);
	CURLcode	 (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode	 (*easy_getinfo)(CURL *, CURLINFO, ...);
	void		 (*easy_cleanup)(CURL *);
	const char	*(*easy_strerror)(CURLcode);
	const char	*(*multi_strerror)(CURLMcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void		 (*slist_free_all)(struct curl_slist *);
	curl_version_info_data *(*version_info)(CURLversion);
};

/*
 * libcurl opened (dlopen of FETCH_CURL_SONAME), every function above
 * resolved and curl_global_init run: once per process, the first call
 * that succeeds. NULL with why ("libcurl.so.4: cannot open shared object
 * file: ...") when the library, one of its functions or its global init
 * is missing; nothing is kept then, and the next call tries again (so
 * installing the library needs no restart). The table lives until exit.
 * Call from the event loop's thread only (curl_global_init is not
 * thread-safe in every libcurl stapled supports).
 */
const struct fetch_curl	*fetch_curl_load(char *why, size_t whylen);

#endif
