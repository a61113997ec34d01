/* The HTTP front: listeners, routing by method and path, and the operations endpoints. */
#ifndef PROXY_HTTP_H
#define PROXY_HTTP_H

#include <stddef.h>

struct event_base;
struct gen;
struct refresh;
struct cache;
struct http;

/* Bind every "HOST:PORT" in listen. On failure NULL and err names the address. */
struct http	*http_new(struct event_base *, char *const *listen, size_t n,
		    struct refresh *, struct cache *, char *err, size_t errlen);
/* The current generation (borrowed; the caller keeps its reference). */
void		 http_set_gen(struct http *, struct gen *);
/* Close the listening sockets; open connections finish their requests. */
void		 http_stop_accepting(struct http *);
void		 http_free(struct http *);	/* accepts NULL */

#endif
