/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an OSD reads back from its store when it loads its PGs at start
 * (osd/src/pg/table.c pg_load, intervals.c): a PG's records in its
 * OSD_PGMETA omap -- the info, the prior set and past intervals, the log
 * entries, EC stash keys, missing objects -- then the past intervals the
 * OSD keeps of PGs it does not hold. The loaded PG's log is then read back
 * as peering sends it.
 *
 * Input: byte 0 the PG log's length limit (pg_log_max, 0-31); then records
 * (u8 where: bit 0 the OSD's meta object, else the PG's OSD_PGMETA; u8 key
 * length, key, le16 value length, value), fed in the order pg_load reads
 * them (info, prior, log, stashes, missing; then the OSD's).
 */
#include "../../osd/src/pg/load_int.h"
#include "cm/log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RECORDS 2048

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	cm_log_set_file("/dev/null");
	return 0;
}

/* pg_load's order of a PGMETA record (0-4), or -1 where it reads none. */
static int
pass_of(const struct os_kv *kv)
{
	if (kv->klen == 4 && memcmp(kv->key, "info", 4) == 0)
		return 0;
	if (kv->klen == sizeof(OSD_PRIOR_KEY) - 1 &&
	    memcmp(kv->key, OSD_PRIOR_KEY, sizeof(OSD_PRIOR_KEY) - 1) == 0)
		return 1;
	if (kv->klen && kv->key[0] == 'l')
		return 2;
	if (kv->klen && kv->key[0] == 's')
		return 3;
	if (kv->klen && kv->key[0] == 'm')
		return 4;
	return -1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct os_kv kvs[MAX_RECORDS];
	static bool meta[MAX_RECORDS];
	struct osd_conf cfg = { 0 };
	Cairn__Osd__LogEntry **les;
	Cairn__Osd__PgInfo pi;
	Cairn__Osd__Version lu, tail;
	struct osd_pg *pg;
	struct osd *o;
	size_t n = 0, pos = 1, nles;
	int rc = 0;

	if (size < 1 || size > 65536)
		return 0;
	while (n < MAX_RECORDS && pos + 2 <= size) {
		size_t kl = data[pos + 1], vl;

		meta[n] = data[pos] & 1;
		pos += 2;
		if (kl + 2 > size - pos)
			break;
		vl = (size_t)data[pos + kl] | (size_t)data[pos + kl + 1] << 8;
		if (vl > size - pos - kl - 2)
			break;
		/* Store iterators hand out copies; so do we, to catch reads past them. */
		kvs[n].key = malloc(kl ? kl : 1);
		kvs[n].val = malloc(vl ? vl : 1);
		if (!kvs[n].key || !kvs[n].val) {
			free(kvs[n].key);
			free(kvs[n].val);
			break;
		}
		memcpy(kvs[n].key, data + pos, kl);
		kvs[n].klen = kl;
		memcpy(kvs[n].val, data + pos + kl + 2, vl);
		kvs[n].vlen = vl;
		pos += kl + 2 + vl;
		n++;
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		goto out;
	cfg.pg_log_max = data[0] % 32;
	o->cfg = &cfg;
	o->nshards = 1;
	TAILQ_INIT(&o->wait_map);
	TAILQ_INIT(&o->rjobs);
	TAILQ_INIT(&o->rjobs_ready);
	TAILQ_INIT(&o->ecrs);
	pg = osd__pg_new(o, 1, 0);
	for (int pass = 0; pg && pass < 5 && !rc; pass++)
		for (size_t i = 0; i < n && !rc; i++)
			if (!meta[i] && pass_of(&kvs[i]) == pass)
				rc = osd__pg_load_record(pg, &kvs[i]);
	/* The OSD goes on to the others' intervals only when its PGs loaded. */
	for (size_t i = 0; i < n && !rc; i++)
		if (meta[i])
			osd__pivs_load_record(o, &kvs[i]);
	if (pg && !rc) {
		if (osd__pg_log_pb(pg, &les, &nles) == 0)
			osd__pg_log_pb_free(les, nles);
		(void)osd__log_find_req(pg, "client.1", 1);
		osd__pg_info_fill(pg, &pi, &lu, &tail);
	}
	osd__pg_free_all(o);
	free(o);
out:
	for (size_t i = 0; i < n; i++) {
		free(kvs[i].key);
		free(kvs[i].val);
	}
	return 0;
}
