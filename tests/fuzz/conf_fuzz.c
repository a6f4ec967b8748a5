/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration parser on arbitrary INI text. */
#include "cm/conf.h"

struct cfg {
	bool b;
	int64_t i;
	uint64_t u, sz, dur;
	char *s;
};

static const struct cm_opt g_table[] = {
	CM_OPT("flag", CM_OPT_BOOL, "false", 0, 0, 0, struct cfg, b, ""),
	CM_OPT("level", CM_OPT_INT, "0", -10, 10, 0, struct cfg, i, ""),
	CM_OPT("threads", CM_OPT_UINT, "1", 1, 64, 0, struct cfg, u, ""),
	CM_OPT("cache_size", CM_OPT_SIZE, "1M", 0, 0, 0, struct cfg, sz, ""),
	CM_OPT("grace", CM_OPT_DURATION, "1s", 0, 0, 0, struct cfg, dur, ""),
	CM_OPT("name", CM_OPT_STR, "x", 0, 0, 0, struct cfg, s, ""),
	{ 0 },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfg v = { 0 };
	struct cm_conf c = { .table = g_table, .base = &v, .section = "osd", .id = "1" };
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (cm_conf_defaults(&c) == 0)
		cm_conf_load_string(&c, text, "fuzz.conf");
	cm_conf_free(&c);
	free(text);
	return 0;
}
