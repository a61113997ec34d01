/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the configuration loader and its error positions, on any bytes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "entry/conf.h"

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config	cfg;
	char		err[512];

	config_defaults(&cfg);
	if (config_load_buffer(&cfg, "fuzz.json", (const char *)data, size, err,
	    sizeof(err)) == 0)
		(void)config_validate(&cfg, err, sizeof(err));
	config_free(&cfg);
	return 0;
}
