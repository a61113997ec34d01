/* SPDX-License-Identifier: Apache-2.0 */
/* stapled's command line (parse_cli) and its configuration (load_config); check_disk for -n. */
#ifndef PROXY_CLI_H
#define PROXY_CLI_H

#include <stddef.h>

struct cli;
struct config;

/* The flags into c (pointers into argv). 0, or -1 said on stderr; exits after -h and -V. */
int		 parse_cli(int argc, char **argv, struct cli *c);
/* -n: warn when map_size_mb is over the cache directory's free space. */
void		 check_disk(const struct config *cfg);
/* Defaults, then the file, then the flags: an owned config, or NULL with err. */
struct config	*load_config(const struct cli *c, int *listen_default, char *err,
		    size_t errlen);

#endif
