/* SPDX-License-Identifier: Apache-2.0 */
/* staplectl export-rim-store: the cache's RIMs, verified, as a directory for nvattest --rim-store. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attest/rim.h"
#include "cache/store.h"
#include "entry/rim.h"
#include "tools/staplectl.h"

int
cmd_export_rim_store(struct ctl *ctl, int argc, char **argv)
{
	struct rim_trust	*rt = NULL;
	struct rim_result	 r;
	struct ctl_ent		*e = NULL;
	struct cache_body	 b;
	char			 id[RIM_ID_MAX_CHARS + 1], path[4096];
	FILE			*f;
	size_t			 n, i, written = 0, bad = 0;
	int			 rv;

	if (argc != 2 || argv[1][0] == '-') {
		int	help = argc == 2 && (strcmp(argv[1], "--help") == 0 ||
		    strcmp(argv[1], "-h") == 0);

		fprintf(help ? stdout : stderr, "usage: staplectl [-C dir] "
		    "export-rim-store DIR\nwrites every cached RIM as DIR/{id}.xml "
		    "(the decoded document), for\nnvattest --rim-store DIR.\n");
		return help ? CTL_OK : CTL_USAGE;
	}
	if (mkdir(argv[1], 0755) == -1 && errno != EEXIST) {
		ctl_warnx("%s: %s", argv[1], strerror(errno));
		return CTL_NOFILE;
	}
	if ((rv = ctl_open_cache(ctl, 1)) != CTL_OK ||
	    (rv = ctl_collect(ctl, CACHE_KIND_RIM, &e, &n)) != CTL_OK)
		return rv;
	if ((rt = ctl_kind_trust(ctl, CACHE_KIND_RIM)) == NULL) {
		free(e);
		return CTL_REJECTED;
	}
	for (i = 0; i < n; i++) {
		if (e[i].klen > RIM_ID_MAX_CHARS)
			continue;
		memcpy(id, e[i].key, e[i].klen);
		id[e[i].klen] = '\0';
		memset(&r, 0, sizeof(r));
		if (!rim_id_valid(id) || cache_get(ctl->cache, CACHE_KIND_RIM,
		    e[i].key, e[i].klen, NULL, &b) != 1 ||
		    rim_verify(rt, id, b.response, b.response_len, ctl->now,
		    &r) == -1) {
			ctl_warnx("%s: not exported: %s", id, r.detail[0] != '\0' ?
			    r.detail : "cannot read or not a RIM ID");
			rim_result_free(&r);
			bad++;
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s.xml", argv[1], id);
		if ((f = fopen(path, "wb")) != NULL &&
		    fwrite(r.xml, 1, r.xml_len, f) != r.xml_len) {
			fclose(f);
			f = NULL;
		}
		if (f == NULL || fclose(f) == EOF) {
			ctl_warnx("%s: %s", path, strerror(errno));
			bad++;
		} else
			written++;
		rim_result_free(&r);
	}
	rim_trust_free(rt);
	free(e);
	printf("wrote %zu RIM(s) to %s\n", written, argv[1]);
	return bad > 0 ? CTL_REJECTED : CTL_OK;
}
