/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the monitors read from outside: maps and incrementals from etcd or
 * the wire (validated, then used for health and placement), mon_host
 * values, and command arguments (pool names, EC profiles, settings, OSD
 * boot fields). The first byte picks the parser.
 */
#include "mon/health.h"
#include "mon/incremental.h"
#include "mon/osdmap.h"
#include "mon/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Health maps every PG through CRUSH: fine for a monitor, too slow for a
 * fuzzer's per-input budget with pg_num in the tens of thousands on a map
 * whose rule cannot be satisfied. Bound the PG count the harness feeds it.
 */
static bool
small_enough(const Cairn__Map__OsdMap *m)
{
	uint64_t pgs = 0;

	for (size_t i = 0; i < m->n_pools; i++)
		pgs += m->pools[i]->pg_num;
	return pgs <= 2048;
}

static void
fuzz_map(const uint8_t *data, size_t size)
{
	Cairn__Map__OsdMap *m = cairn__map__osd_map__unpack(NULL, size, data);
	struct mon_health h;
	char err[MON_ERRLEN];

	if (!m)
		return;
	if (mon_map_validate(m, err) == 0 && small_enough(m) &&
	    mon_health_compute(m, NULL, 0, NULL, 0, &h) == 0)
		mon_health_free(&h);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

static void
fuzz_inc(const uint8_t *data, size_t size)
{
	Cairn__Map__Incremental *inc = cairn__map__incremental__unpack(NULL, size, data);
	Cairn__Map__OsdMap *m, *next = NULL;
	char err[MON_ERRLEN];

	if (!inc)
		return;
	if (mon_map_initial("fsid", &m) == 0) {
		m->epoch = 1;
		if (mon_map_apply(m, inc, &next) == 0) {
			mon_map_validate(next, err);
			cairn__map__osd_map__free_unpacked(next, NULL);
		}
		cairn__map__osd_map__free_unpacked(m, NULL);
	}
	cairn__map__incremental__free_unpacked(inc, NULL);
}

/* Split text at '\n' into up to 6 fields and use them as command arguments. */
static void
fuzz_args(const char *text)
{
	char buf[4096], *f[6] = { "", "", "", "", "", "" }, *save = NULL, err[MON_ERRLEN];
	Cairn__Map__OsdMap *m;
	struct mon_addr *hosts;
	size_t nh;
	unsigned k, mm;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", text);
	for (char *t = strtok_r(buf, "\n", &save); t && n < 6; t = strtok_r(NULL, "\n", &save))
		f[n++] = t;
	if (mon_parse_hosts(f[0], &hosts, &nh, err, sizeof(err)) == 0)
		free(hosts);
	mon_parse_ec_profile(f[1], &k, &mm, err);
	mon_flag_parse(f[2]);
	if (mon_map_initial("fsid", &m))
		return;
	{
		struct mon_osd_boot b = {
			.id = -1, .uuid = f[0], .addr = f[1], .host = f[2], .device_class = f[3]
		};
		struct mon_pool_spec s = { .name = f[0], .pg_num = 8 };
		int32_t id;
		int64_t pid;

		mon_osd_boot(m, &b, &id, err);
		if (mon_parse_ec_profile(f[1], &s.ec_k, &s.ec_m, err) == 0)
			s.erasure = true;
		mon_pool_create(m, &s, &pid, err);
		mon_pool_set(m, f[0], f[4], f[5], err);
		if (mon_map_validate(m, err) == 0 && small_enough(m)) {
			struct mon_health h;

			if (mon_health_compute(m, NULL, 0, NULL, 0, &h) == 0)
				mon_health_free(&h);
		}
		mon_pool_rm(m, f[0], err);
	}
	cairn__map__osd_map__free_unpacked(m, NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1 || size > 65536)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fuzz_map(data + 1, size - 1);
		break;
	case 1:
		fuzz_inc(data + 1, size - 1);
		break;
	default:
		text = malloc(size);
		if (!text)
			return 0;
		memcpy(text, data + 1, size - 1);
		text[size - 1] = 0;
		fuzz_args(text);
		free(text);
		break;
	}
	return 0;
}
