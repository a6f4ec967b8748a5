/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What pg.c (PGs, client ops, replication, peering) and recovery.c
 * (recovery and backfill) share. Reactor thread only.
 */
#ifndef OSD_PG_INT_H
#define OSD_PG_INT_H

#include <inttypes.h>
#include <stdio.h>

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
	uint8_t undo; /* enum osd_undo */
	uint8_t nsent;
	uint32_t *sent_to; /* EC: the OSD each shard was sent to, plus one (LogEntry.sent_to) */
	uint64_t undo_off, undo_len;
};

/* The stash object of the entry at version v (EC rollback). */
#define STASH_NAME_MAX 48

static inline void
stash_name(const struct osd_ver *v, char out[STASH_NAME_MAX])
{
	snprintf(out, STASH_NAME_MAX, "\x01r%" PRIx64 ".%" PRIx64, v->epoch, v->seq);
}

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

/* A client op on the primary. */
struct op {
	struct osd *osd;
	struct pg *pg;
	TAILQ_ENTRY(op) link;
	struct cm_conn *c;
	struct cm_msg *m;
	Cairn__Osd__OsdOp *req;
	char client[64];
	bool blocked; /* behind an earlier op on the same object */
	bool queued;  /* on pg->running, pg->waiting or osd->wait_map */
	bool busy;    /* a worker or a data read will call back */
	bool dropped; /* its interval ended while busy: free it when it calls back */
	bool writes;  /* some sub-op changes the object */
	/* the read phase */
	bool exists;
	uint64_t size;
	struct osd_ver ver;
	unsigned reads_pending;
	struct cm_work w;
	/* results */
	int rc;
	unsigned failed;
	size_t nres;
	Cairn__Osd__SubOpResult *res;
	Cairn__Osd__SubOpResult **resp;
	Cairn__Osd__Version *rver;
	struct cm_sgl rdata;
	struct cm_buf **rbufs; /* read results, in sub-op order */
	size_t *roff, *rlen;   /* EC: the result is rbufs[i][roff, roff + rlen) (rlen 0: all) */
	/* the write phase */
	Cairn__Osd__TxOp *tx;
	Cairn__Osd__TxOp **txp;
	size_t ntx, txcap;
	char **owned; /* strings the TxOps point at */
	size_t nowned;
	uint8_t verbuf[16];
	struct osd_ver new_ver;
	/* EC pools (ec_pg.c) */
	uint8_t sizebuf[8];
	struct ecw *ecw;
	uint8_t undo; /* enum osd_undo, for the log entry */
	uint64_t undo_off, undo_len;
};

/* One replicated change in flight (primary). */
struct repop {
	TAILQ_ENTRY(repop) link;
	struct pg *pg;
	struct op *op;
	struct osd_ver ver;
	unsigned waiting; /* local commit + replicas */
	bool local_pending;
	bool split; /* osd_debug_split_write: exit once the chosen shards committed */
	int rc;
};

/* pg.c: EC rollback stashes */
/* Entries up to `upto` are final: remove their stash objects (in t). \return 0 or -errno. */
int pg_stash_drop(struct pg *pg, struct os_txn *t, const struct osd_ver *upto);
/* Drop every stash object of entries newer than `after` that `keep(arg, ver)` refuses. */
int pg_stash_prune(struct pg *pg, struct os_txn *t, bool (*keep)(void *, const struct osd_ver *),
		   void *arg);
/* Forget every stash (the PG is emptied): their keys go in t, the objects elsewhere. */
int pg_stash_forget(struct pg *pg, struct os_txn *t);
/*
 * Undo entry e on our copy, in t (entries newer than e must be undone
 * first). \return 0, -ENOENT (our copy holds no stash of it: the object
 * cannot be put back) or -errno.
 */
int pg_undo_entry(struct pg *pg, struct os_txn *t, const struct pg_lent *e);

/* pg.c: client ops */
void op_fail(struct op *op, unsigned i, int rc);
/* Reply to the client and finish op (it leaves pg->running). */
void op_reply(struct op *op, const struct osd_ver *ver);
/* A callback of op's (op->busy was set) came: false if op was dropped (and is freed). */
bool op_resume(struct op *op);
/* The read phase ended (op->busy was set): go on to the write phase. */
void op_reads_done(struct op *op);
Cairn__Osd__TxOp *op_tx_add(struct op *op, uint32_t type);
/* Keep s until op is freed. \return s, or NULL (s freed) when out of memory. */
char *op_own(struct op *op, char *s);
/* "_" + name: a client's xattr as stored. */
char *op_xattr_name(const char *name);
bool op_subop_writes(uint32_t t);
/* Write sub-op so's effect on the object's existence: a remove (\return 1),
 * or a touch first when it is missing (\return 0); -ENOMEM. */
int op_tx_life(struct op *op, const Cairn__Osd__SubOp *so, bool *exists);
/* A SETXATTR or RMXATTR sub-op as its TxOp. \return 0 or -ENOMEM. */
int op_tx_xattr(struct op *op, const Cairn__Osd__SubOp *so);
/* The TxOps are in: the version attribute (if the object exists at the
 * end) and op->txp. \return 0 or -ENOMEM. */
int op_tx_finish(struct op *op, bool exists);
/* Log, store and replicate op's TxOps (op->tx, op->txp ready); data(op, shard)
 * gives each shard's data segment. */
void op_commit(struct op *op, const struct cm_sgl *(*data)(struct op *op, int shard));

/* ec_pg.c: client ops of EC pools on the primary */
/* Every READ sub-op not done yet; then op_reads_done. */
void ec_op_write(struct op *op);
void ec_op_read(struct op *op);
void ec_op_free(struct op *op);

/* ec_pg.c: recovery of EC PGs (the primary rebuilds shards) */
struct ec_fetch {
	int rc;
	struct osd_ver ver;
	uint64_t lsize;      /* the object's size */
	struct os_kv *attrs; /* the callee may take them (then set NULL) */
	size_t nattrs;
	struct cm_buf *data; /* the shard's bytes (NULL when none); take a reference to keep */
};

typedef void (*ec_fetch_cb)(void *arg, struct ec_fetch *f);
/*
 * Rebuild bytes [off, off + len) (multiples of the stripe unit) of shard
 * `shard` of oid from k other shards (not those lacking oid, nor backfill
 * targets) holding version ver (NULL: any, as long as they agree); attrs:
 * also the object's attributes. cb on the reactor. \return 0 or -errno.
 */
/*
 * Peering of an EC PG collected the acting OSDs' infos: a copy labelled with
 * another shard than its place counts as none; pg->auth = a copy at the
 * k-th newest last_update of the complete ones (newer entries exist on
 * fewer than k shards: never acknowledged, they are undone), or -1.
 */
void ec_plan_auth(struct pg *pg);
int ec_fetch_shard(struct pg *pg, const char *oid, const struct osd_ver *ver, unsigned shard,
		   uint64_t off, uint64_t len, bool attrs, ec_fetch_cb cb, void *arg);

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
/* EC: the shard label (shard + 1) our copy gets when written in this interval; 0 otherwise. */
uint32_t pg_shard_label(struct pg *pg);
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
/* 1: every past interval that may have taken writes was heard from; 0: wait;
 * -1: a peer told of one whose up OSDs were not asked: peer again. */
int pg_past_heard(struct pg *pg);
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
