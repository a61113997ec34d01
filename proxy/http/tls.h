/* SPDX-License-Identifier: Apache-2.0 */
/* TLS for the listeners: a reloadable server context per listener, and nonblocking per-connection I/O. */
#ifndef PROXY_TLS_H
#define PROXY_TLS_H

#include <stddef.h>
#include <sys/types.h>

/* Plaintext per tls_write: one TLS record's worth (RFC 8446 5.1). */
#define TLS_RECORD_BYTES	16384
/*
 * One of OpenSSL's record buffers (a record, its header, MAC and padding,
 * the allocator's share): a connection holds one for reading while bytes
 * it read ahead wait, one for writing while a record waits for the
 * socket, and neither otherwise (SSL_MODE_RELEASE_BUFFERS).
 */
#define TLS_BUFFER_BYTES	(18 * 1024)

struct config;
struct config_tls;
struct tls_server;
struct tls_conn;

/*
 * A listener's TLS settings: TLS 1.2 or later, OpenSSL's default ciphers,
 * ALPN "http/1.1" or none, no renegotiation; client certificates required
 * when files->client_ca is set. `name` (the listener's address) is used in
 * messages. Returns the server (free with tls_server_free), or NULL with
 * err naming the file that does not load, or a key that does not match
 * its certificate.
 */
struct tls_server	*tls_server_new(const struct config_tls *files,
			    const char *name, char *err, size_t errlen);
/*
 * Count each connection's handshake failures under the server's name, the
 * listener label in the metrics block (metrics_tls_listener): once it
 * listens, so a configuration only checked adds no label.
 */
void		 tls_server_count(struct tls_server *);
/* The name tls_server_new was given; as long as the server. */
const char	*tls_server_name(const struct tls_server *);
/*
 * s takes from's context, and from the one s had (SIGHUP: from was made
 * from the new configuration's files; free it next). New connections on
 * s use the new context; open ones keep the one they started with until
 * they close.
 */
void		 tls_server_take(struct tls_server *s, struct tls_server *from);
/* Frees the server; connections still open keep their context. Accepts NULL. */
void		 tls_server_free(struct tls_server *);
/*
 * A server for each TLS listener of cfg into tls[CONFIG_MAX_LISTEN], by
 * its index in cfg->listen (NULL for plain ones). 0, or -1 with err as
 * tls_server_new's; tls[] is then all NULL.
 */
int		 tls_servers_new(struct tls_server **tls,
		    const struct config *cfg, char *err, size_t errlen);
/* Free each of tls[CONFIG_MAX_LISTEN] and set it NULL. */
void		 tls_servers_free(struct tls_server **tls);

/* What one nonblocking read or write did. */
enum tls_io {
	TLS_IO_OK,		/* *done bytes moved (at least 1) */
	TLS_IO_WANT_READ,	/* retry when the socket is readable */
	TLS_IO_WANT_WRITE,	/* retry when the socket is writable */
	TLS_IO_CLOSED,		/* after the handshake, the peer sent close_notify or closed TCP */
	TLS_IO_ERROR,		/* handshake (counted) or record failure, or a reset */
};

/*
 * Server side of one accepted socket (the handshake runs inside the first
 * reads). The connection holds a reference to the server's context of the
 * moment. Returns NULL when out of memory. The fd stays the caller's.
 */
struct tls_conn	*tls_conn_new(struct tls_server *, int fd);
/*
 * Decrypt up to len bytes into buf. After TLS_IO_WANT_WRITE, call again
 * when the socket is writable.
 */
enum tls_io	 tls_read(struct tls_conn *, void *buf, size_t len, size_t *done);
/*
 * Encrypt and send from buf (at most TLS_RECORD_BYTES each call). After a WANT,
 * call again with at least the same len and the same leading bytes (the
 * buffer may move). The bytes stay the caller's until TLS_IO_OK says how
 * many left, so the caller's queue still counts what the record holds.
 */
enum tls_io	 tls_write(struct tls_conn *, const void *buf, size_t len,
		    size_t *done);
/*
 * 1 when bytes are held inside (decrypted, or read ahead from the socket),
 * which no readable-socket event will announce; then tls_read may give
 * data, or TLS_IO_WANT_READ when what is held is part of a record.
 */
int		 tls_pending(const struct tls_conn *);
/* The bytes of record buffers it holds now: 0, 1 or 2 TLS_BUFFER_BYTES. */
size_t		 tls_held_bytes(const struct tls_conn *);
/*
 * Send close_notify once, without waiting for the peer's (a connection that
 * failed sends nothing), and free. Accepts NULL. The fd stays open.
 */
void		 tls_conn_free(struct tls_conn *);

#endif
