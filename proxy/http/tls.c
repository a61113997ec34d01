/* SPDX-License-Identifier: Apache-2.0 */
/* TLS for the listeners: OpenSSL contexts from the configured files, reloaded on SIGHUP, and nonblocking reads and writes for http.c. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "entry/conf.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/http/tls.h"

/* Session-cache context: required once client certificates are verified. */
#define TLS_SESSION_ID_CTX	"stapled"
/* ALPN (RFC 7301): the only protocol spoken, in wire form. */
static const unsigned char tls_alpn_http11[] = "\x08http/1.1";

/*
 * The current context. Each SSL holds its own reference to the SSL_CTX it
 * was made from (SSL_new takes one, SSL_free drops it), so a reload only
 * drops the server's reference: open connections keep the old context
 * alive until the last of them closes.
 */
struct tls_server {
	SSL_CTX		*ctx;
	char		*name;
	unsigned long	*fails;	/* the listener's handshake failures; NULL: not counted */
};

struct tls_conn {
	SSL		*ssl;
	int		 failed;	/* a fatal error: no close_notify */
	int		 established;	/* the handshake completed once */
	int		 wr_blocked;	/* a record waits in OpenSSL's write buffer */
	unsigned long	*fails;		/* the server's, in the metrics block */
};

/*
 * The most recent OpenSSL error as text, and the queue cleared. A file
 * that does not open leaves the system's error beneath OpenSSL's ("system
 * lib"): that one is said ("No such file or directory").
 */
static const char *
tls_errstr(char *buf, size_t len)
{
	unsigned long	e, last = 0, sys = 0;

	while ((e = ERR_get_error()) != 0) {
		last = e;
		if (ERR_SYSTEM_ERROR(e))
			sys = e;
	}
	if (sys != 0)
		snprintf(buf, len, "%s", strerror(ERR_GET_REASON(sys)));
	else if (last == 0)
		snprintf(buf, len, "%s", errno != 0 ? strerror(errno) : "unknown error");
	else
		ERR_error_string_n(last, buf, len);
	return buf;
}

/*
 * SSL_CTX_set_alpn_select_cb: http/1.1 if the client offers it; otherwise
 * the handshake goes on without ALPN (RFC 7301 3.2 allows a server to
 * ignore protocols it does not speak) and the client learns from HTTP/1.1
 * answers what it is talking to.
 */
static int
tls_alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned char	*sel;

	(void)ssl;
	(void)arg;
	if (SSL_select_next_proto(&sel, outlen, tls_alpn_http11,
	    sizeof(tls_alpn_http11) - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

/* Client certificates issued under the PEM file ca: required. 0, or -1 with err. */
static int
tls_client_auth(SSL_CTX *ctx, const char *ca, const char *name, char *err,
    size_t errlen)
{
	STACK_OF(X509_NAME)	*names;
	char			 e[256];

	if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1 ||
	    (names = SSL_load_client_CA_file(ca)) == NULL) {
		snprintf(err, errlen, "listen %s: tls client_ca %s: %s", name,
		    ca, tls_errstr(e, sizeof(e)));
		return -1;
	}
	SSL_CTX_set_client_CA_list(ctx, names);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
	    SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	return 0;
}

/* Our protocol settings on a new context. */
static void
tls_ctx_settings(SSL_CTX *ctx)
{
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
	/*
	 * A TCP close without close_notify (curl, a killed s_client, load
	 * balancers) reads as close_notify: an end of input like a plain EOF,
	 * not a fatal error. HTTP/1.1 frames every request itself, so a cut
	 * one is never taken for whole (the truncation RFC 8446 6.1 guards
	 * against), and a half-closed client still gets its answer.
	 */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
	/* A record blocked on a full socket may be retried from a moved buffer. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	/*
	 * Read what the socket has, not a record header and then its body:
	 * one read() per request instead of two. What is read ahead shows in
	 * tls_pending (SSL_has_pending), which http.c checks.
	 */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_alpn_select_cb(ctx, tls_alpn_cb, NULL);
	SSL_CTX_set_session_id_context(ctx,
	    (const unsigned char *)TLS_SESSION_ID_CTX,
	    sizeof(TLS_SESSION_ID_CTX) - 1);
}

/* A context with our protocol settings, and the files loaded. NULL with err. */
static SSL_CTX *
tls_ctx_load(const struct config_tls *f, const char *name, char *err,
    size_t errlen)
{
	SSL_CTX		*ctx;
	char		 e[256];

	ERR_clear_error();
	errno = 0;
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		snprintf(err, errlen, "listen %s: tls: %s", name,
		    tls_errstr(e, sizeof(e)));
		return NULL;
	}
	tls_ctx_settings(ctx);
	if (SSL_CTX_use_certificate_chain_file(ctx, f->cert) != 1) {
		snprintf(err, errlen, "listen %s: tls cert %s: %s", name,
		    f->cert, tls_errstr(e, sizeof(e)));
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, f->key, SSL_FILETYPE_PEM) != 1 &&
	    ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
		snprintf(err, errlen, "listen %s: tls key %s: %s", name,
		    f->key, tls_errstr(e, sizeof(e)));
		goto fail;
	}
	if (ERR_peek_last_error() != 0 || SSL_CTX_check_private_key(ctx) != 1) {
		snprintf(err, errlen, "listen %s: tls key %s does not match the "
		    "certificate in %s", name, f->key, f->cert);
		ERR_clear_error();
		goto fail;
	}
	if (f->client_ca != NULL &&
	    tls_client_auth(ctx, f->client_ca, name, err, errlen) == -1)
		goto fail;
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

struct tls_server *
tls_server_new(const struct config_tls *files, const char *name, char *err,
    size_t errlen)
{
	struct tls_server	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->name = strdup(name)) == NULL) {
		snprintf(err, errlen, "listen %s: out of memory", name);
		goto fail;
	}
	if ((s->ctx = tls_ctx_load(files, name, err, errlen)) == NULL)
		goto fail;
	return s;
fail:
	tls_server_free(s);
	return NULL;
}

void
tls_server_count(struct tls_server *s)
{
	s->fails = metrics_tls_listener(s->name);
}

const char *
tls_server_name(const struct tls_server *s)
{
	return s->name;
}

void
tls_server_take(struct tls_server *s, struct tls_server *from)
{
	SSL_CTX	*ctx = s->ctx;

	s->ctx = from->ctx;	/* open connections hold their own reference */
	from->ctx = ctx;
}

int
tls_servers_new(struct tls_server **tls, const struct config *cfg, char *err,
    size_t errlen)
{
	const struct config_tls	*f;
	size_t			 i;

	for (i = 0; i < cfg->nlisten && i < CONFIG_MAX_LISTEN; i++)
		if ((f = config_listen_tls(cfg, i)) != NULL &&
		    (tls[i] = tls_server_new(f, cfg->listen[i], err,
		    errlen)) == NULL) {
			tls_servers_free(tls);
			return -1;
		}
	return 0;
}

void
tls_servers_free(struct tls_server **tls)
{
	size_t	i;

	for (i = 0; i < CONFIG_MAX_LISTEN; i++) {
		tls_server_free(tls[i]);
		tls[i] = NULL;
	}
}

void
tls_server_free(struct tls_server *s)
{
	if (s == NULL)
		return;
	SSL_CTX_free(s->ctx);
	free(s->name);
	free(s);
}

struct tls_conn *
tls_conn_new(struct tls_server *s, int fd)
{
	struct tls_conn	*t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	if ((t->ssl = SSL_new(s->ctx)) == NULL || SSL_set_fd(t->ssl, fd) != 1) {
		ERR_clear_error();
		SSL_free(t->ssl);
		free(t);
		return NULL;
	}
	SSL_set_accept_state(t->ssl);
	t->fails = s->fails;
	return t;
}

/*
 * Why the handshake failed, from SSL_get_error's se and the queue's last
 * error e (OpenSSL's reason codes; an alert the client sent is its reason
 * plus SSL_AD_REASON_OFFSET).
 */
static enum metrics_tls_fail
tls_fail_reason(int se, unsigned long e)
{
	int	r = ERR_GET_REASON(e);

	if (se == SSL_ERROR_ZERO_RETURN || (se == SSL_ERROR_SYSCALL && e == 0))
		return METRICS_TLS_CLOSED;
	if (ERR_GET_LIB(e) != ERR_LIB_SSL)
		return METRICS_TLS_OTHER;
	switch (r) {
	case SSL_R_HTTP_REQUEST:
	case SSL_R_HTTPS_PROXY_REQUEST:
		return METRICS_TLS_PLAIN_HTTP;
	case SSL_R_WRONG_VERSION_NUMBER:
	case SSL_R_UNKNOWN_PROTOCOL:
	case SSL_R_PACKET_LENGTH_TOO_LONG:
	case SSL_R_BAD_PACKET_LENGTH:
	case SSL_R_RECORD_LENGTH_MISMATCH:
		return METRICS_TLS_NOT_TLS;
	case SSL_R_UNSUPPORTED_PROTOCOL:
	case SSL_R_VERSION_TOO_LOW:
	case SSL_R_NO_PROTOCOLS_AVAILABLE:
	case SSL_R_WRONG_SSL_VERSION:
	case SSL_R_INAPPROPRIATE_FALLBACK:
	case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
		return METRICS_TLS_PROTOCOL_VERSION;
	case SSL_R_NO_SHARED_CIPHER:
	case SSL_R_NO_SHARED_GROUPS:
	case SSL_R_NO_SHARED_SIGNATURE_ALGORITHMS:
	case SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM:
		return METRICS_TLS_NO_SHARED_CIPHER;
	case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
		return METRICS_TLS_NO_CLIENT_CERT;
	case SSL_R_CERTIFICATE_VERIFY_FAILED:
		return METRICS_TLS_BAD_CLIENT_CERT;
	case SSL_R_UNEXPECTED_EOF_WHILE_READING:
		return METRICS_TLS_CLOSED;
	default:
		break;
	}
	if (r > SSL_AD_REASON_OFFSET && r < SSL_AD_REASON_OFFSET + 256)
		return METRICS_TLS_CLIENT_ALERT;
	return METRICS_TLS_OTHER;
}

/*
 * Count a failed handshake under its reason. A connection that closes
 * before sending a byte is not one: port probes and TCP health checks do
 * that.
 */
static void
tls_count_failure(struct tls_conn *t, enum metrics_tls_fail reason)
{
	if (t->fails == NULL || (reason == METRICS_TLS_CLOSED &&
	    BIO_number_read(SSL_get_rbio(t->ssl)) == 0))
		return;
	t->fails[reason]++;
}

/*
 * 1 once the handshake has completed. Remembered: post-handshake messages
 * (TLS 1.3 session tickets) put OpenSSL back "in init" for a while, and a
 * client that leaves then has not failed a handshake.
 */
static int
tls_established(struct tls_conn *t)
{
	if (!t->established && SSL_is_init_finished(t->ssl))
		t->established = 1;
	return t->established;
}

/* What SSL_get_error says of a call that returned r <= 0. */
static enum tls_io
tls_result(struct tls_conn *t, int r, const char *op)
{
	char			 e[256];
	int			 se = SSL_get_error(t->ssl, r);
	int			 hs = !tls_established(t);
	unsigned long		 last = ERR_peek_last_error();
	enum metrics_tls_fail	 reason = tls_fail_reason(se, last);

	switch (se) {
	case SSL_ERROR_WANT_READ:
		return TLS_IO_WANT_READ;
	case SSL_ERROR_WANT_WRITE:
		return TLS_IO_WANT_WRITE;
	case SSL_ERROR_ZERO_RETURN:
		/* close_notify, or a TCP close without it: an end of input */
		if (!hs)
			return TLS_IO_CLOSED;
		break;
	default:
		break;
	}
	if (hs)
		tls_count_failure(t, reason);
	/* A client's failed handshake is its business: debug, not a warning. */
	log_debug("tls: %s%s%s: %s", op, hs ? " failed, " : "",
	    hs ? metrics_tls_fail_str[reason] : "", last == 0 ?
	    "connection closed" : tls_errstr(e, sizeof(e)));
	ERR_clear_error();
	t->failed = 1;
	return TLS_IO_ERROR;
}

enum tls_io
tls_read(struct tls_conn *t, void *buf, size_t len, size_t *done)
{
	size_t	n = 0;
	int	r;

	*done = 0;
	ERR_clear_error();
	if ((r = SSL_read_ex(t->ssl, buf, len, &n)) <= 0)
		return tls_result(t, r, tls_established(t) ? "read" :
		    "handshake");
	t->established = 1;	/* application data: the handshake is done */
	*done = n;
	return TLS_IO_OK;
}

enum tls_io
tls_write(struct tls_conn *t, const void *buf, size_t len, size_t *done)
{
	size_t	n = 0;
	int	r;

	*done = 0;
	if (len > TLS_RECORD_BYTES)
		len = TLS_RECORD_BYTES;
	ERR_clear_error();
	if ((r = SSL_write_ex(t->ssl, buf, len, &n)) <= 0) {
		t->wr_blocked = 1;
		return tls_result(t, r, "write");
	}
	t->wr_blocked = 0;
	*done = n;
	return TLS_IO_OK;
}

int
tls_pending(const struct tls_conn *t)
{
	return SSL_has_pending(t->ssl) ? 1 : 0;
}

size_t
tls_held_bytes(const struct tls_conn *t)
{
	return (t->wr_blocked ? TLS_BUFFER_BYTES : 0) +
	    (SSL_has_pending(t->ssl) ? TLS_BUFFER_BYTES : 0);
}

void
tls_conn_free(struct tls_conn *t)
{
	if (t == NULL)
		return;
	/* RFC 8446 6.1: close_notify before closing; the peer's is not awaited. */
	if (!t->failed && SSL_is_init_finished(t->ssl)) {
		(void)SSL_shutdown(t->ssl);
		ERR_clear_error();
	}
	SSL_free(t->ssl);
	free(t);
}
