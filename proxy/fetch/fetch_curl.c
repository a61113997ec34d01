/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl opened with dlopen at the first transfer, so that start-up does not load its ~28 libraries. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "proxy/fetch/fetch_curl.h"

/*
 * Why not link it: Debian's libcurl4 brings 26 libraries of its own
 * (nghttp2, idn2, rtmp and through it GnuTLS, ssh2, psl, Kerberos, LDAP,
 * SASL, zstd, brotli, ...): linked, they were 27 of the 36 shared objects
 * mapped and relocated at exec, about 8 ms before main on a 2-core VM
 * (docs/performance.md, "Ready"), and none is needed to answer from the
 * store.
 */

/* One place: the table, filled once, read by fetch.c through the pointer load returns. */
static struct fetch_curl	curl_fns;
static int			curl_loaded;

#define FETCH_CURL_FN(field)	{ "curl_" #field, offsetof(struct fetch_curl, field) }

static const struct {
	const char	*name;
	size_t		 off;
} curl_names[] = {
	FETCH_CURL_FN(global_init),
	FETCH_CURL_FN(multi_init),
	FETCH_CURL_FN(multi_setopt),
	FETCH_CURL_FN(multi_cleanup),
	FETCH_CURL_FN(multi_socket_action),
	FETCH_CURL_FN(multi_assign),
	FETCH_CURL_FN(multi_add_handle),
	FETCH_CURL_FN(multi_remove_handle),
	FETCH_CURL_FN(multi_info_read),
	FETCH_CURL_FN(easy_init),
	FETCH_CURL_FN(easy_setopt),
	FETCH_CURL_FN(easy_getinfo),
	FETCH_CURL_FN(easy_cleanup),
	FETCH_CURL_FN(easy_strerror),
	FETCH_CURL_FN(multi_strerror),
	FETCH_CURL_FN(slist_append),
	FETCH_CURL_FN(slist_free_all),
	FETCH_CURL_FN(version_info),
};

const struct fetch_curl *
fetch_curl_load(char *why, size_t whylen)
{
	struct fetch_curl	 t;
	void			*h, *fn;
	const char		*e;
	size_t			 i;

	if (curl_loaded)
		return &curl_fns;
	/* RTLD_NOW: a missing symbol fails here, not at the first call. */
	if ((h = dlopen(FETCH_CURL_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		e = dlerror();
		snprintf(why, whylen, "%s", e != NULL ? e : FETCH_CURL_SONAME
		    ": cannot be opened");
		return NULL;
	}
	memset(&t, 0, sizeof(t));
	for (i = 0; i < sizeof(curl_names) / sizeof(curl_names[0]); i++) {
		if ((fn = dlsym(h, curl_names[i].name)) == NULL) {
			snprintf(why, whylen, "%s: no %s", FETCH_CURL_SONAME,
			    curl_names[i].name);
			dlclose(h);
			return NULL;
		}
		/* POSIX (dlsym): a data pointer converts to a function pointer. */
		memcpy((char *)&t + curl_names[i].off, &fn, sizeof(fn));
	}
	if (t.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(why, whylen, "%s: curl_global_init failed",
		    FETCH_CURL_SONAME);
		dlclose(h);
		return NULL;
	}
	/* Kept open for the life of the process: curl has global state now. */
	curl_fns = t;
	curl_loaded = 1;
	return &curl_fns;
}
