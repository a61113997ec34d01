/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.1 server's private state, shared by proxy/http/http.c and proxy/http/http_listen.c: struct http, struct conn, and the calls between the two. */
#ifndef PROXY_HTTP_INT_H
#define PROXY_HTTP_INT_H

#include <sys/queue.h>
#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <event2/util.h>

#include "entry/conf.h"
#include "proxy/http/http.h"
#include "proxy/http/http_parse.h"
#include "proxy/http/listen_addr.h"

/* listen, admin_listen and the sockets systemd passes, each up to CONFIG_MAX_LISTEN. */
#define HTTP_MAX_LISTENERS	(3 * CONFIG_MAX_LISTEN)
#define HTTP_IN_BYTES		(HTTP_MAX_HEADER_BYTES + HTTP_MAX_BODY_BYTES + 512)
/*
 * Descriptors held open (on /dev/null) for the admin listeners: at the fd
 * limit one is closed so that an admin accept() gets its number, and it is
 * opened again when a connection closes.
 */
#define HTTP_ADMIN_SPARE_FDS	4

/* Where a connection is; each phase has its own deadline (http_conn_arm). */
enum http_phase {
	HTTP_PH_NONE,	/* not armed yet, or re-arm at the next http_conn_arm */
	HTTP_PH_HEADER,	/* the request line and headers: header_timeout_s */
	HTTP_PH_BODY,	/* the body, after the headers: body_timeout_s */
	HTTP_PH_PENDING,	/* being answered: no deadline of ours */
	HTTP_PH_SEND,	/* answers blocked in `out`: HTTP_SEND_TIMEOUT_S without progress */
	HTTP_PH_IDLE,	/* between requests: keepalive_timeout_s */
};

struct http_req {
	struct conn	*conn;
	struct http_head head;		/* its pointers into conn's hdr */
	int		 keepalive;
	const char	*query;		/* raw, after '?', or NULL */
	char		*path;		/* percent-decoded, in conn's bufs */
	const uint8_t	*body;
	size_t		 body_len;
	size_t		 hdrs_len;	/* header lines in conn's bufs->hdrs */
	int		 hdrs_spilled;	/* later ones in out_headers (http_resp_header) */
	struct evbuffer	*out_headers;
	const uint8_t	*body_ref;	/* http_resp_body_ref: borrowed, else out_body */
	size_t		 body_ref_len;
	struct evbuffer	*out_body;
	http_gone_cb	*gone;
	void		*gone_arg;
	int64_t		 parsed_us;	/* metrics_now_us() at hand-over; 0: never parsed */
	const void	*note;		/* http_req_set_note */
	size_t		 log_note_len;	/* http_req_set_log_note; 0: none */
	char		 log_note[HTTP_LOG_NOTE_BYTES];
};

struct conn {
	struct http		*http;
	const struct listener	*lis;		/* accepted on */
	int			 admin;		/* on an admin listener: counted in nadmin */
	evutil_socket_t		 fd;
	struct event		*rev, *wev, *timer;
	struct conn_bufs	*bufs;		/* while a request is in: conn_bufs_get */
	char			*in;		/* bufs->in, or NULL */
	size_t			 inlen;		/* bytes in `in` */
	size_t			 reqlen;	/* bytes of the request in progress, once parsed */
	struct evbuffer		*out;
	struct http_req		 req;
	int			 pending;	/* a request is being answered */
	int			 continued;	/* 100 Continue sent for this request */
	int			 close_after;
	int			 in_process;	/* conn_process is on the stack */
	int			 dead;		/* to be freed when conn_process unwinds */
	int			 rd_paused;	/* read event removed (conn_update_read) */
	int			 eof;		/* the client shut its side (or half of it) */
	int			 body_wait;	/* headers parsed, body still arriving */
	int			 lingering;	/* answered, our side shut: conn_linger */
	size_t			 linger_bytes;	/* dropped since */
	unsigned		 small_reads;	/* of this request, under HTTP_PACE_MIN_BYTES */
	int			 paced;		/* reading waits for pace_ev */
	struct event		*pace_ev;	/* made at the first pause */
	struct tls_conn		*tls;		/* NULL: plain HTTP */
	int			 tls_rd_want_wr;	/* a TLS read waits for writability */
	int			 tls_wr_want_rd;	/* a TLS write waits for readability */
	enum http_phase		 phase;
	unsigned long		 nreq;		/* requests answered */
	unsigned long		 armed_nreq;	/* nreq when the deadline was set */
	TAILQ_ENTRY(conn)	 entry;
};

/*
 * The answer's header lines kept beside the request's buffers; longer
 * sets go on in the request's out_headers (http_resp_header). An OCSP or
 * error answer's lines take under 300 bytes; PCCS's kept issuer chains
 * are kilobytes and spill.
 */
#define HTTP_RESP_HDRS_BYTES	1024

/*
 * What a connection needs only while a request is in: its input, the
 * parsed copy of the head, the decoded path, the answer's header lines.
 * Allocated at the first byte of a request and freed once the connection
 * has nothing read and nothing pending (conn_process), so an idle
 * keep-alive client holds none of it.
 */
struct conn_bufs {
	char	in[HTTP_IN_BYTES + 1];
	char	hdr[HTTP_MAX_HEADER_BYTES + 1];
	char	path[HTTP_MAX_HEADER_BYTES];
	char	hdrs[HTTP_RESP_HDRS_BYTES];
};

/* One listening socket: bound from an address, or adopted (systemd). */
struct listener {
	struct evconnlistener	*lev;
	unsigned		 flags;		/* HTTP_LISTEN_* */
	struct tls_server	*tls;		/* borrowed; NULL: plain */
	char			 name[HTTP_LISTEN_NAME_BYTES];	/* for logs */
	int			 adopted;	/* passed, not bound here */
	struct listen_addr	 addr;		/* adopted: its address */
};

struct http {
	struct event_base	*base;
	http_handler_cb		*handler;
	void			*handler_arg;
	struct listener		 lis[HTTP_MAX_LISTENERS];
	size_t			 nlis;
	int			 stopping;
	int			 lis_enabled;	/* the public listeners */
	int			 adm_enabled;	/* the admin listeners */
	int			 backoff;	/* accept() failed: paused (backoff_ev) */
	int			 adm_backoff;	/* an admin accept() failed (adm_backoff_ev) */
	struct event		*backoff_ev, *adm_backoff_ev;
	time_t			 warned_at;	/* last refused-clients warning */
	unsigned long		 nrefusals;	/* pauses since, not reported */
	size_t			 nconns;	/* on the public listeners */
	size_t			 max_conns;	/* max_connections, resolved */
	size_t			 nadmin;	/* on the admin listeners */
	size_t			 max_admin;	/* admin_max_connections */
	int			 spare[HTTP_ADMIN_SPARE_FDS];	/* on /dev/null, for admin accepts */
	size_t			 nspare;
	int			 want_spare;	/* an admin listener exists */
	int			 sndbuf;	/* SO_SNDBUF to set; 0: none */
	struct event		*trim_ev;	/* gives the heap back (http_conn_free) */
	struct conn_bufs	*spare_bufs;	/* the last request's buffers, for the next (conn_bufs_put) */
	size_t			 closed_untrimmed;	/* connections closed since */
	long			 header_s, body_s, keepalive_s;
	TAILQ_HEAD(, conn)	 conns;
	time_t			 date_at;
	char			 date[40];
	http_reply_cb		*reply_cb;	/* http_set_reply_cb */
	void			*reply_arg;
};

/* Connections (http.c). */
void	http_conn_free(struct conn *);
void	http_conn_arm(struct conn *);
void	http_conn_read_cb(evutil_socket_t, short, void *);
void	http_conn_write_cb(evutil_socket_t, short, void *);
void	http_conn_timer_cb(evutil_socket_t, short, void *);

/* The listeners' budgets (http.c). */
int	http_may_warn(struct http *, unsigned long *unreported);
int	http_lis_admin(const struct listener *);
void	http_listeners_update(struct http *);
void	http_backoff_cb(evutil_socket_t, short, void *);
void	http_adm_backoff_cb(evutil_socket_t, short, void *);
void	http_spares_refill(struct http *);

#endif
