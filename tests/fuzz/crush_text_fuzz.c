/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CRUSH text map parser on arbitrary text; whatever parses is printed,
 * reparsed (must succeed: round trip) and mapped a little.
 */
#include "crush/crush.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct crush_map *m = NULL, *m2 = NULL;
	char err[256], *text, *out = NULL;
	size_t outlen = 0;
	FILE *f;

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (crush_text_parse(text, &m, err, sizeof(err)) == 0) {
		uint32_t w[64];
		int res[3];
		char work[256];

		/* A little: with retry counts at their bounds (crush.h) a mapping
		 * of a map that cannot be satisfied still costs ~10^6 steps. */
		for (int i = 0; i < 64; i++)
			w[i] = CRUSH_WEIGHT_ONE;
		for (int r = 0; r < m->max_rules && r < 2; r++)
			for (int x = 0; x < 2; x++)
				crush_do_rule(m, r, x, res, 3, w,
					      m->max_devices < 64 ? m->max_devices : 64, work);
		f = open_memstream(&out, &outlen);
		if (f) {
			crush_text_print(m, f);
			fclose(f);
			if (crush_text_parse(out, &m2, err, sizeof(err)) != 0)
				__builtin_trap(); /* what we print, we must read back */
			crush_map_destroy(m2);
			free(out);
		}
		crush_map_destroy(m);
	}
	free(text);
	return 0;
}
