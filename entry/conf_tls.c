/* SPDX-License-Identifier: Apache-2.0 */
/* The upstream TLS files of a configuration read as a transfer would read them: CAs, a client certificate, and its key. */
#include <config.h>	/* autoconf's; "config.h" here would be entry/conf.h */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "entry/conf.h"
#include "entry/kind.h"

/* An encrypted key would ask for a passphrase on the terminal: none is given. */
static int
no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

/* The file opened for reading, or NULL with err "WHERE.KEY FILE: why". */
static FILE *
tls_open(const char *where, const char *key, const char *path, char *err,
    size_t errlen)
{
	FILE	*f;

	if ((f = fopen(path, "re")) == NULL)
		snprintf(err, errlen, "%s.%s %s: %s", where, key, path,
		    strerror(errno));
	return f;
}

/* ca_file: at least one PEM certificate. 0, or -1 with err. */
static int
tls_check_ca(const char *where, const char *path, char *err, size_t errlen)
{
	STACK_OF(X509_INFO)	*infos = NULL;
	FILE			*f;
	int			 i, n = 0;

	if ((f = tls_open(where, "ca_file", path, err, errlen)) == NULL)
		return -1;
	if ((infos = PEM_X509_INFO_read(f, NULL, no_passphrase, NULL)) != NULL)
		for (i = 0; i < sk_X509_INFO_num(infos); i++)
			n += sk_X509_INFO_value(infos, i)->x509 != NULL;
	fclose(f);
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	ERR_clear_error();
	if (n == 0) {
		snprintf(err, errlen, "%s.ca_file %s: %s", where, path,
		    infos == NULL ? "not PEM certificates" :
		    "holds no certificate");
		return -1;
	}
	return 0;
}

/* cert_file's first certificate and key_file's key, and they match. 0, or -1 with err. */
static int
tls_check_client(const char *where, const struct config_upstream_tls *t,
    char *err, size_t errlen)
{
	X509		*x = NULL;
	EVP_PKEY	*k = NULL;
	FILE		*f;
	int		 rv = -1;

	if ((f = tls_open(where, "cert_file", t->cert_file, err, errlen)) == NULL)
		goto out;
	x = PEM_read_X509(f, NULL, no_passphrase, NULL);
	fclose(f);
	if (x == NULL) {
		snprintf(err, errlen, "%s.cert_file %s: not a PEM certificate",
		    where, t->cert_file);
		goto out;
	}
	if ((f = tls_open(where, "key_file", t->key_file, err, errlen)) == NULL)
		goto out;
	k = PEM_read_PrivateKey(f, NULL, no_passphrase, NULL);
	fclose(f);
	if (k == NULL) {
		snprintf(err, errlen, "%s.key_file %s: not a PEM private key "
		    "(or one with a passphrase)", where, t->key_file);
		goto out;
	}
	if (X509_check_private_key(x, k) != 1) {
		snprintf(err, errlen, "%s.key_file %s does not match the "
		    "certificate in %s", where, t->key_file, t->cert_file);
		goto out;
	}
	rv = 0;
 out:
	ERR_clear_error();
	EVP_PKEY_free(k);
	X509_free(x);
	return rv;
}

static int
tls_check_one(const char *where, const struct config_upstream_tls *t,
    char *err, size_t errlen)
{
	if (t->ca_file != NULL &&
	    tls_check_ca(where, t->ca_file, err, errlen) == -1)
		return -1;
	if (t->cert_file != NULL &&
	    tls_check_client(where, t, err, errlen) == -1)
		return -1;
	return 0;
}

int
config_upstream_tls_check(const struct config *cfg, char *err, size_t errlen)
{
	const struct config_service	*s;
	char				 where[64];
	int				 svc;

	if (tls_check_one("upstream_tls", &cfg->upstream_tls, err,
	    errlen) == -1)
		return -1;
	for (svc = KIND_FIRST; svc < CACHE_KIND_MAX; svc++) {
		s = config_service(cfg, svc);
		if (!s->upstream_tls.given)
			continue;
		snprintf(where, sizeof(where), "%s.upstream_tls",
		    kind_section[svc]);
		if (tls_check_one(where, &s->upstream_tls, err, errlen) == -1)
			return -1;
	}
	return 0;
}
