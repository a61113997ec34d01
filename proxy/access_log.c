/* SPDX-License-Identifier: Apache-2.0 */
/* The sampled access log: chooses which answers to log and formats their line (the request's log note last). */
#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proxy/access_log.h"
#include "proxy/http/http.h"
#include "proxy/log.h"
#include "proxy/metrics.h"
#include "proxy/metrics_page.h"

void
access_log_set_sample(struct access_log *al, double sample)
{
	if (sample < 0)
		sample = 0;
	if (sample > 1)
		sample = 1;
	al->sample = sample;
	if (al->rng == 0)
		al->rng = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^ 1;
}

/* xorshift64: sampling needs spread, not secrecy. */
static double
next_unit(struct access_log *al)
{
	al->rng ^= al->rng << 13;
	al->rng ^= al->rng >> 7;
	al->rng ^= al->rng << 17;
	return (double)(al->rng >> 11) / (double)(UINT64_C(1) << 53);
}

/* "127.0.0.1:4711", "[::1]:4711", "unix" or "-". */
static void
peer_str(const struct http_req *req, char *buf, size_t len)
{
	struct sockaddr_storage	 ss;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
	char			 a[INET6_ADDRSTRLEN];

	snprintf(buf, len, "-");
	if (http_req_peer(req, &ss) == -1)
		return;
	if (ss.ss_family == AF_INET &&
	    inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a)) != NULL)
		snprintf(buf, len, "%s:%u", a, ntohs(s4->sin_port));
	else if (ss.ss_family == AF_INET6 &&
	    inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a)) != NULL)
		snprintf(buf, len, "[%s]:%u", a, ntohs(s6->sin6_port));
	else if (ss.ss_family == AF_UNIX)
		snprintf(buf, len, "unix");
}

/* The path, printable bytes only (a decoded path may hold any byte), truncated. */
static void
path_str(const char *path, char *buf, size_t len)
{
	size_t	i, o = 0;

	for (i = 0; path[i] != '\0' && o + 4 < len; i++) {
		if (i == ACCESS_LOG_PATH_MAX_BYTES) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		buf[o++] = path[i] > 0x20 && path[i] < 0x7f ? path[i] : '?';
	}
	buf[o] = '\0';
}

void
access_log_reply(struct access_log *al, const struct http_req *req,
    int status, size_t bytes)
{
	static const char *const method_str[] = {
		[HTTP_GET] = "GET", [HTTP_HEAD] = "HEAD", [HTTP_POST] = "POST",
		[HTTP_OTHER] = "OTHER",
	};
	const struct metrics_note	*n;
	const char			*note;
	char				 peer[INET6_ADDRSTRLEN + 16];
	char				 path[ACCESS_LOG_PATH_MAX_BYTES + 8];
	int64_t				 parsed = http_req_parsed_us(req);
	enum http_method		 m;

	if (al->sample <= 0 || (al->sample < 1 && next_unit(al) >= al->sample))
		return;
	peer_str(req, peer, sizeof(peer));
	n = metrics_note_get(req);
	if (parsed <= 0) {
		/* refused before a whole request was read: no method or path */
		log_info("access: %s - - %d %zu - 0.000 ms", peer, status, bytes);
		return;
	}
	m = http_req_method(req);
	path_str(http_req_path(req), path, sizeof(path));
	note = http_req_log_note(req);
	log_info("access: %s %s %s %d %zu %s%s%s %.3f ms%s%s", peer,
	    m <= HTTP_OTHER ? method_str[m] : "OTHER", path, status, bytes,
	    n != NULL && metrics_route_str(n->route) != NULL ?
	    metrics_route_str(n->route) : "-", n != NULL ? "/" : "",
	    n != NULL ? metrics_result_str[n->result] : "",
	    (double)(metrics_now_us() - parsed) / 1000.0,
	    note != NULL ? " " : "", note != NULL ? note : "");
}
