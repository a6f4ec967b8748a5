/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What pg.c (PGs, client ops, replication, peering) and recovery.c
 * (recovery and backfill) share. Reactor thread only.
 */
#ifndef OSD_PG_INT_H
#define OSD_PG_INT_H

#include "osd.h"

#define PGMETA     "\x01pgmeta"
#define LOGKEY_LEN 17 /* 'l' + epoch be64 + seq be64 */
#define TRIM_SLACK 64 /* trim in batches */

struct pg_lent {
	struct osd_ver ver, prior;
	char *oid;
	char *client;
	uint64_t tid;
	int rc;
	uint8_t op;
};

static inline void
put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t
get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static inline void
ver_pack(const struct osd_ver *v, uint8_t b[16])
{
	put_be64(b, v->epoch);
	put_be64(b + 8, v->seq);
}

static inline void
log_key(const struct osd_ver *v, uint8_t k[LOGKEY_LEN])
{
	k[0] = 'l';
	ver_pack(v, k + 1);
}

static inline void
ver_from_pb(const Cairn__Osd__Version *pv, struct osd_ver *v)
{
	v->epoch = pv ? pv->epoch : 0;
	v->seq = pv ? pv->seq : 0;
}

static inline void
ver_to_pb(const struct osd_ver *v, Cairn__Osd__Version *pv)
{
	cairn__osd__version__init(pv);
	pv->epoch = v->epoch;
	pv->seq = v->seq;
}

/* Free what a single os_kv holds (not the struct). */
static inline void
kv_clear(struct os_kv *kv)
{
	free(kv->key);
	free(kv->val);
	memset(kv, 0, sizeof(*kv));
}

/* pg.c */
struct pg_lent *pg_log_at(struct pg *pg, size_t i);
int pg_log_append(struct pg *pg, const Cairn__Osd__LogEntry *le);
void pg_log_clear(struct pg *pg);
/* Fill pi (and its versions) with pg's durable info. */
void pg_info_fill(struct pg *pg, Cairn__Osd__PgInfo *pi, Cairn__Osd__Version *lu,
		  Cairn__Osd__Version *tail);
/* The log as protobuf entries (for notifies and PG_LOG); free with pg_log_pb_free. */
int pg_log_pb(struct pg *pg, Cairn__Osd__LogEntry ***out, size_t *n);
void pg_log_pb_free(Cairn__Osd__LogEntry **les, size_t n);
void pg_activate(struct pg *pg);
/* Recovery finished on a PG that was active during it. */
void pg_recovered(struct pg *pg);
void pg_start_peering(struct pg *pg);
/* Is a client op on oid executing (not merely queued) on this primary? */
bool pg_object_busy(struct pg *pg, const char *oid);
/* Recovery let go of oid (pushed, or no longer missing): run its ops. */
void pg_object_ready(struct pg *pg, const char *oid);

/* recovery.c */
/* Peering collected every acting OSD's info and log: plan and start recovery, or activate. */
void rec_plan(struct pg *pg);
/* Forget the primary's recovery state of this PG (a new interval). */
void rec_reset(struct pg *pg);
void rec_peer_reset(struct osd *o, int32_t peer);
void rec_tick(struct osd *o, uint64_t now_ms);
void rec_free_all(struct osd *o);
void rec_remove_strays(struct pg *pg);
/*
 * May a client op on oid run now? Not while an acting OSD lacks it (we, for
 * a read; then its recovery is asked for first) nor, for a write, while it
 * is being pushed.
 */
bool rec_op_blocked(struct pg *pg, const char *oid, bool writes);
/* No client op on oid executes any more: pushes waiting for it go on. */
void rec_object_idle(struct pg *pg, const char *oid);
/* The 'm' key of oid in PGMETA's omap (missing objects); \return its length. */
size_t missing_key(const char *oid, uint8_t *k);

#endif
