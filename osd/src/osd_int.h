/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcairn-osd's internals: the types every part shares and, per source
 * file, the functions other files call (prefix osd__). Reactor thread only,
 * except the functions named *_fn (they run on the worker pool: blocking
 * store reads). docs/design/layout.md has the map of the folders:
 *
 *   service/   the daemon's core: shards, calls into the store, maps, peer
 *              sessions, boot/beacons, heartbeats, message dispatch
 *   pg/        the PG table, the PG log, past intervals, EC rollback stashes
 *   peering/   new intervals, peering messages, activation; decide.c: the
 *              peering decisions (pure functions)
 *   ops/       client ops on the primary: order, read phase, write phase,
 *              replicas, TxOps as store transactions, listing
 *   backend/   the pool kinds (replicated, erasure-coded) and the EC coder
 *   recovery/  the plan (primary), pushes (source), applying (target), the
 *              QoS share of recovery
 *   util/      object-name sets, checks of wire messages
 *
 * Threading: an OSD runs osd_op_shards PG shards, each a struct osd with
 * its own reactor thread, messenger (and address) and PG table: PG seed s
 * belongs to shard s % n (osd_pg_mine). The store is shared (its pipeline
 * runs on shard 0's reactor; os_queue/os_read post there and back). Shard 0
 * also runs the monitor client, boot, beacons and heartbeats, and hands
 * every map to the other shards (each keeps its own copy).
 */
#ifndef OSD_INT_H
#define OSD_INT_H

#include "osd/osd.h"
#include "os/store.h"
#include "mon/client_async.h"
#include "mon/auth.h"
#include "mon/creds.h"
#include "mon/osd_sessions.h"
#include "mon/osdmap.h"
#include "cm/daemon.h"
#include "cm/worker.h"
#include "util/oset.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

struct osd_lent; /* a log entry in memory */
struct osd_rjob; /* a recovery job on a source OSD (recovery/push.c) */
struct osd_pga;  /* a PG's past intervals (any PG, ours or not) */
struct osd_op;
struct osd_repop;
struct osd_ecr;  /* an EC read in flight (backend/ec_read.c) */
struct osd_node; /* the shards of one OSD */
struct osd_backend;

struct osd_ver {
	uint64_t epoch, seq;
};

static inline int
osd_ver_cmp(const struct osd_ver *a, const struct osd_ver *b)
{
	if (a->epoch != b->epoch)
		return a->epoch < b->epoch ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return 0;
}

#define OSD_MAX_ACTING   16
#define OSD_PG_MAX_SLOTS (2 * OSD_MAX_ACTING) /* acting + prior OSDs peering asks */

enum osd_pg_state {
	OSD_PG_NONE = 0,    /* not ours in this map (stray) */
	OSD_PG_CREATING,    /* collection being made */
	OSD_PG_PEERING,     /* primary: collecting infos */
	OSD_PG_ACTIVE,      /* primary: serving */
	OSD_PG_REPLICA,     /* replica in this interval */
	OSD_PG_DOWN,        /* primary with fewer than min_size up: waiting */
	OSD_PG_INCOMPLETE,  /* primary: no complete copy among the acting OSDs: waiting */
	OSD_PG_RECOVERING,  /* primary: bringing acting copies up to date from the log */
	OSD_PG_BACKFILLING, /* primary: copying whole PGs to OSDs the log cannot catch up */
};

/* A primary's view of one acting OSD while peering and recovering. */
enum osd_rec_step {
	OSD_REC_NONE = 0, /* in sync (or not looked at yet) */
	OSD_REC_WIPE,     /* backfill: waiting for the target to empty its copy */
	OSD_REC_ADOPT, /* log-based: waiting for the target to adopt the log and its missing set */
	OSD_REC_WAIT,  /* norecover/nobackfill holds the pushes */
	OSD_REC_PUSH,  /* waiting for the source to push objects */
	OSD_REC_LOG,   /* backfill: waiting for the target to adopt the log at the end */
	OSD_REC_DONE,
};

struct osd_pg_peer {
	bool have;       /* its notify arrived */
	bool exists;     /* it holds the PG */
	bool incomplete; /* its copy is being backfilled */
	bool partial;    /* its copy lacks some objects (it reported them missing) */
	struct osd_ver lu, tail;
	uint64_t les;            /* its last_epoch_started */
	Cairn__Osd__PgNotify *n; /* its info and log (remote OSDs) */
	uint8_t step;            /* enum osd_rec_step */
	bool backfill;
	char **oids; /* log-based recovery: the objects to push */
	size_t noids;
	bool rollback; /* EC: it undoes its entries newer than rollback_to first */
	struct osd_ver rollback_to;
};

#define OSD_PGA_MAX_IV 12 /* past intervals kept per PG */
#define OSD_PGA_RECENT 4  /* intervals closed recently, kept for read leases */
/* Past primaries a lease wait names at most (each interval has one). */
#define OSD_LEASE_WAITS (OSD_PGA_MAX_IV + OSD_PGA_RECENT)

/* A past primary (osd) may serve reads until until_ns (ours, CLOCK_MONOTONIC). */
struct osd_lease_wait {
	int32_t osd;
	uint64_t until_ns;
};

/* watch.c: a watcher's session on the primary (memory only; cleared at each new interval). */
struct osd_watch {
	struct osd_watch *next;
	char *oid;
	char entity[64];
	uint64_t cookie;
	struct cm_conn *c;   /* its session (a reference) */
	uint64_t seen_ms;    /* its last WATCH or PING */
	uint32_t timeout_ms; /* silent longer: the binding goes (osd__watch_tick) */
};

struct osd_pg {
	struct osd *osd;
	int64_t pool;
	uint32_t seed;
	char cid[48];
	struct osd_pg *hnext;
	enum osd_pg_state state;
	bool in_store;
	bool creating;
	/* this interval */
	int32_t acting[OSD_MAX_ACTING];
	int nacting;
	uint8_t shard[OSD_MAX_ACTING]; /* EC: acting[i] holds shard shard[i] (its place in
					* the up set); replicated: i */
	const struct osd_backend *be;  /* the pool's kind (replicated, erasure-coded) */
	const struct osd_ec *ec;       /* EC pools: the profile (NULL: unusable) */
	int my_shard;                  /* EC: our shard in this interval (-1: none) */
	uint32_t info_shard;           /* EC: the shard our copy holds, plus one (durable) */
	int32_t primary;
	unsigned size, min_size;
	uint64_t interval_epoch;
	/* Primary of a replicated pool: no read before this (CLOCK_MONOTONIC
	 * ns): a past interval's primary may still hold a lease (lease.c).
	 * lw gathers the peers' notifies while peering. */
	uint64_t reads_after_ns;
	struct osd_lease_wait lw[OSD_LEASE_WAITS];
	int nlw;
	uint64_t lw_other_ns;               /* lw was full: the latest of those that did not fit */
	int32_t answered[OSD_PG_MAX_SLOTS]; /* OSDs whose notify came (our map or newer) */
	int nanswered;
	/* durable state (mirrored in memory) */
	struct osd_ver last_update, log_tail;
	/* The highest version this primary handed out (memory only): a write
	 * gets one above both it and last_update, so no two changes share a
	 * version even when peering in the same epoch undid some. */
	struct osd_ver ver_issued;
	uint64_t last_epoch_started;
	struct osd_lent *log; /* ring */
	size_t log_cap, log_head, log_n;
	size_t log_bytes; /* the entries' memory (osd__lent_bytes): bounded by pg_log_max_bytes */
	bool log_gap;     /* the store may hold entries the ring lost: trim by range */
	bool incomplete;  /* our copy is being backfilled */
	struct osd_oset missing; /* objects our copy lacks (durable as 'm' keys in OSD_PGMETA) */
	uint64_t push_epoch, push_gen; /* the plan whose pushes we take (its PG_LOG came) */
	/* peering and recovery (primary) */
	unsigned notifies_wanted;
	/* the acting set(s) before this interval, minus today's (since the PG was
	 * last active): their copies may hold what the acting set lacks */
	int32_t prior[OSD_MAX_ACTING];
	int nprior;
	bool prior_overlap; /* an OSD of the previous interval is acting now */
	bool prior_loaded;  /* prior came from the store (OSD_PGMETA "prior") at start */
	int32_t strays[OSD_PG_MAX_SLOTS]; /* prior OSDs with a copy, to drop once clean */
	int nstrays;
	/* peering slots: the acting set, then the prior OSDs that are up */
	int32_t slot_osd[OSD_PG_MAX_SLOTS];
	int nslots;
	struct osd_pg_peer peer[OSD_PG_MAX_SLOTS];
	uint64_t peer_up_since[OSD_PG_MAX_SLOTS]; /* incarnations peering talked to */
	int auth;                                 /* acting slot of the authoritative copy */
	unsigned rec_pending;                     /* slots not yet OSD_REC_DONE/OSD_REC_NONE */
	uint64_t retry_ms;                        /* re-peer at this time after a failed recovery */
	uint64_t rec_gen;                         /* recovery attempt: stale acks are ignored */
	uint64_t plan_epoch;                      /* our map epoch when recovery was planned */
	uint64_t rec_objects, rec_bytes;
	struct osd_oset
		rmiss;  /* object -> acting slots lacking it (bits), OSD_REC_PRIO once asked for */
	bool rec_early; /* active while the plan runs */
	bool rec_backfill; /* the plan backfills someone */
	unsigned rec_init; /* initial PG_LOG / wipe acks outstanding */
	uint64_t
		rec_seen_ms; /* the plan's last sign of progress (an ack from a target or source) */
	/* ops */
	TAILQ_HEAD(osd_op_q, osd_op) waiting; /* until active */
	struct osd_op_q running;              /* being executed (for per-object order) */
	/* watch/notify (watch.c, primary): bindings, notifies waiting for acks */
	struct osd_watch *watches;
	TAILQ_HEAD(osd_notify_q, osd_notify) notifies;
	/* ops run here since (activation): unbound watchers are live until + timeout */
	uint64_t watch_since_ms;
	TAILQ_HEAD(osd_repop_q, osd_repop) repops;
	/* EC: entries up to roll_ok committed on every shard (their stashes may
	 * go); roll_stuck: a change of this interval failed somewhere, so hold */
	struct osd_ver roll_ok, roll_sent; /* roll_sent: the last roll_to the shards got */
	bool roll_stuck;
	/*
	 * A change of this interval failed on a replica or shard (-EAGAIN: it
	 * refused it, or its session was gone) after we applied it here: our
	 * copy may hold what was never acknowledged, so no op starts until the
	 * PG has peered again (at the next tick, or with the new interval).
	 */
	bool repop_failed;
	/* EC: the entries whose stash objects our copy holds, oldest first
	 * (durable as keys 's' + version in OSD_PGMETA's omap) */
	struct osd_ver *stashes;
	size_t nstash, capstash;
	uint64_t ops_done;
	/* PG split (pg/split.c) */
	uint32_t split_for;      /* the pool's pg_num our copy is split for (durable as
				  * OSD_SPLIT_KEY; 0: not known yet, a copy made before splits) */
	bool splitting;          /* our copy is being split: hidden from every message */
	bool split_wait;         /* a child PG that an ancestor's split on this OSD makes */
	uint32_t split_gen;      /* splits of this copy since start (stale wipes/removals see it) */
	uint64_t split_retry_ms; /* a failed split is tried again then (still hidden) */
	/* PG merge (pg/merge.c) */
	bool merging;         /* a source or target being merged: hidden from every message */
	bool merged_away;     /* a source whose copy went into its target (collection gone) */
	bool merge_told;      /* ready for a merge step, and a beacon was asked to say so */
	struct osd_merge *mg; /* a target: its merge under way */
	uint32_t *mq;         /* a target: sources whose shards quiesced them for it */
	size_t nmq, capmq;
	uint64_t merge_retry_ms; /* a failed merge is tried again then (still hidden) */
};

/* An EC pool's profile (pools keep theirs for life). */
struct osd_pool_ec {
	int64_t pool;
	struct osd_ec ec;
};

/* What shard 0's heartbeats know of a peer OSD. */
struct osd_peer {
	uint64_t hb_since_ms;      /* we started pinging this incarnation */
	uint64_t hb_rx_ms;         /* its last answer */
	uint64_t hb_report_ms;     /* we last reported it failed (0: not reported) */
	uint64_t hb_up_since;      /* the incarnation the above are about */
	uint64_t refused_up_since; /* the incarnation reported gone (connection refused) */
};

/* The OSD's own records in its store: the kept map, past intervals. */
#define OSD_META_CID "meta"
#define OSD_META_OID "osd"

struct osd {
	struct osd_conf *cfg;
	struct osd_node *node;
	unsigned shard, nshards;           /* this PG shard, of nshards */
	Cairn__Map__OsdMap *own_map;       /* shards > 0: our copy of the map (map points at it) */
	bool meta_ok;                      /* shard 0: the store's meta object exists (map_save) */
	uint64_t pg_maps;                  /* maps osd__pg_on_map handled */
	bool pg_map_running, pg_map_again; /* osd__pg_on_map: one at a time */
	uint64_t snap_ms;                  /* shards > 0: last stats handed to shard 0 */
	struct cm_reactor *r;
	struct cm_msgr *msgr;
	struct os_store *store;
	struct cm_worker_pool *wp;
	struct mon_async *monc;
	int32_t id;
	char addr[128];
	char entity[48];
	bool booted;
	uint64_t tid;
	struct cm_timer tick;
	uint64_t last_boot_ms, last_beacon_ms, last_map_ask_ms, last_hb_ms;
	const Cairn__Map__OsdMap *map;
	uint64_t epoch;
	uint64_t up_epoch; /* the epoch that marked us up */
	struct mon_placement pl;
	bool pl_ok;
	struct osd_peer *peers;
	int npeers;
	/* sessions with the peers, one per PG shard of each (shared with libcairn) */
	struct mon_osd_sessions sess;
	struct osd_pg **pgs;
	size_t npg_b, npgs;
	struct osd_op_q wait_map;
	/* every PG's acting set in the previous map (for prior sets) */
	struct osd_pga **pga;
	size_t npga_b;
	/* recovery jobs this OSD runs as a source (recovery.c) */
	TAILQ_HEAD(osd_rjob_q, osd_rjob) rjobs, rjobs_ready;
	unsigned rec_active; /* pushes in flight */
	uint64_t rec_objects, rec_bytes;
	/* client/recovery share (recovery.c): costs in the current 1 s window */
	uint64_t sch_win_ms, sch_client, sch_rec, sch_client_ms, sch_throttled;
	/* EC (ec_pg.c) */
	struct osd_pool_ec **ecp;
	size_t necp;
	TAILQ_HEAD(osd_ecr_q, osd_ecr) ecrs; /* reads waiting for shards of other OSDs */
	uint64_t ec_reads, ec_decodes;
	uint64_t rec_watchdog;   /* recovery plans the stall watchdog restarted */
	uint64_t pg_splits;      /* copies of PGs this shard split */
	uint64_t pg_merges;      /* merges of copies into a target this shard made */
	uint64_t reads_unleased; /* reads told to resend: no read lease (lease.c) */
	/* counters */
	uint64_t ops, op_bytes_in, op_bytes_out, repops, dups;
	uint64_t ops_blocklisted; /* client ops and listings refused: the client is blocklisted */
	uint64_t auth_refused;    /* requests refused for the sender's caps (service/auth.c) */
	/* client data throttle (ops/op.c): bytes of the ops held now, the
	 * shard's share of osd_client_message_cap, ops answered busy */
	uint64_t client_bytes, client_bytes_max, client_busy;
	/* Shutdown (osd.c): stopping drops what arrives and starts nothing new;
	 * pending counts the store calls and worker jobs this shard started
	 * whose callback has not run yet — they use its PGs, ops and jobs, so
	 * those are freed only once it is 0. */
	bool stopping;
	uint64_t pending;
};

/* osd.c */
/* Is PG seed served by this shard? */
static inline bool
osd_pg_mine(const struct osd *o, uint32_t seed)
{
	return o->nshards <= 1 || seed % o->nshards == o->shard;
}

#define OSD_PGMETA     "\x01pgmeta"
#define OSD_LOGKEY_LEN 17 /* 'l' + epoch be64 + seq be64 */
/*
 * The PG's interval, durable (OSD_PGMETA "prior"): its acting set, its prior
 * set, and whether it became active since. A restarted OSD starts from them
 * as if it had seen the maps: the acting set is the "before" of its first
 * interval, and a prior set the PG never got past is kept, so peering asks
 * the OSDs that held the data before (e.g. a new primary without a copy
 * whose backfill had not run). Layout: version 1, active, n acting, n prior,
 * then the ids (int32, little-endian).
 */
#define OSD_PRIOR_KEY "prior"
/* OSD_PGMETA key: the pool's pg_num the copy is split for (4 bytes, little
 * endian). Not starting with 'l', 'm' or 's': those prefixes are iterated. */
#define OSD_SPLIT_KEY "pg_num"
/* A peer answered a query "busy": peer again after this long. */
#define OSD_PEER_BUSY_MS 100

#define OSD_TRIM_SLACK 64 /* trim in batches */

struct osd_lent {
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
	uint8_t *outs; /* what a resend is answered with (LogEntry.outs) */
	uint8_t nouts;
};

/* The stash object of the entry at version v (EC rollback). */
#define OSD_STASH_NAME_MAX 48

static inline void
osd_stash_name(const struct osd_ver *v, char out[OSD_STASH_NAME_MAX])
{
	snprintf(out, OSD_STASH_NAME_MAX, "\x01r%" PRIx64 ".%" PRIx64, v->epoch, v->seq);
}

/* The split record's value (OSD_SPLIT_KEY): 0, or -EIO if it is not 4 bytes. */
static inline int
osd_split_rec_get(const uint8_t *v, size_t n, uint32_t *pg_num)
{
	if (n != 4)
		return -EIO;
	*pg_num =
		(uint32_t)v[0] | (uint32_t)v[1] << 8 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 24;
	return 0;
}

static inline void
osd_put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static inline uint64_t
osd_get_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static inline void
osd_ver_pack(const struct osd_ver *v, uint8_t b[16])
{
	osd_put_be64(b, v->epoch);
	osd_put_be64(b + 8, v->seq);
}

static inline void
osd_log_key(const struct osd_ver *v, uint8_t k[OSD_LOGKEY_LEN])
{
	k[0] = 'l';
	osd_ver_pack(v, k + 1);
}

static inline void
osd_ver_from_pb(const Cairn__Osd__Version *pv, struct osd_ver *v)
{
	v->epoch = pv ? pv->epoch : 0;
	v->seq = pv ? pv->seq : 0;
}

static inline void
osd_ver_to_pb(const struct osd_ver *v, Cairn__Osd__Version *pv)
{
	cairn__osd__version__init(pv);
	pv->epoch = v->epoch;
	pv->seq = v->seq;
}

/* Free what a single os_kv holds (not the struct). */
static inline void
osd_kv_clear(struct os_kv *kv)
{
	free(kv->key);
	free(kv->val);
	memset(kv, 0, sizeof(*kv));
}

/* A client op on the primary. */
struct osd_op {
	struct osd *osd;
	struct osd_pg *pg;
	TAILQ_ENTRY(osd_op) link;
	struct cm_conn *c;
	struct cm_msg *m;
	Cairn__Osd__OsdOp *req;
	char client[64];
	bool blocked;     /* behind an earlier op on the same object */
	bool queued;      /* on pg->running, pg->waiting or osd->wait_map */
	bool busy;        /* a worker or a data read will call back */
	bool dropped;     /* its interval ended while busy: free it when it calls back */
	bool writes;      /* some sub-op changes the object */
	uint64_t charged; /* bytes counted in osd->client_bytes until it is freed */
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

	struct osd_rd_arg {
		struct osd_op *op;
		unsigned i;
	} * rargs; /* replicated reads: which sub-op each read in flight is for */

	size_t *roff, *rlen; /* EC: the result is rbufs[i][roff, roff + rlen) (rlen 0: all) */
	/* the write phase */
	Cairn__Osd__TxOp *tx;
	Cairn__Osd__TxOp **txp;
	size_t ntx, txcap;
	char **owned; /* strings the TxOps point at */
	size_t nowned;
	uint8_t verbuf[16];
	uint8_t outs[OSD_LOG_OUTS_MAX]; /* the log entry's outputs (fill_entry) */
	struct osd_ver new_ver;
	/* EC pools (ec_pg.c) */
	uint8_t sizebuf[8];
	struct osd_ecw *ecw;
	uint8_t undo; /* enum osd_undo, for the log entry */
	bool split;   /* osd_debug_split_write: reach only the shards below it, then exit */
	uint64_t undo_off, undo_len;
};

/* One replicated change in flight (primary). */
struct osd_repop {
	TAILQ_ENTRY(osd_repop) link;
	struct osd_pg *pg;
	struct osd_op *op;
	struct osd_ver ver;
	unsigned waiting; /* local commit + replicas */
	bool local_pending;
	bool split; /* osd_debug_split_write: exit once the chosen shards committed */
	int rc;
	uint64_t start_ms; /* sent (the repop watchdog, osd__pg_tick) */
};

/* ec_pg.c: recovery of EC PGs (the primary rebuilds shards) */
struct osd_ec_fetch {
	int rc;
	struct osd_ver ver;
	uint64_t lsize;      /* the object's size */
	struct os_kv *attrs; /* the callee may take them (then set NULL) */
	size_t nattrs;
	struct cm_buf *data; /* the shard's bytes (NULL when none); take a reference to keep */
};

typedef void (*osd_ec_fetch_cb)(void *arg, struct osd_ec_fetch *f);

/*
 * A past interval of a PG: maps [first, last] with one acting set. `rw`:
 * it had min_size OSDs, so it may have activated and taken writes (we have
 * no up_thru to tell whether it did).
 */
#define OSD_PIV_OPEN UINT64_MAX /* `last` of the current interval */

struct osd_piv {
	uint64_t first, last;
	bool rw;
	uint8_t n;
	int32_t a[OSD_MAX_ACTING];
};

/* Every PG's acting set as of the previous map, ours or not. */
struct osd_pga {
	struct osd_pga *next;
	int64_t pool;
	uint32_t seed;
	int n;
	int32_t a[OSD_MAX_ACTING]; /* the last non-empty acting set */
	/* The "before" of map `epoch`: a map handled twice (the boot reply
	 * after the map that marks us up) sees the same one. */
	uint64_t epoch;
	int nb;
	int32_t b[OSD_MAX_ACTING];
	/* The intervals since the PG last started (as far as we know: trimmed
	 * by the newest last_epoch_started we hear of), oldest first; the last
	 * one is the current interval. */
	int niv;
	struct osd_piv iv[OSD_PGA_MAX_IV];
	/* Intervals closed in the last few seconds as we saw them (memory
	 * only; never trimmed by activation): their primaries may still hold
	 * read leases we granted (service/lease.c). */
	struct osd_piv recent[OSD_PGA_RECENT];
	uint64_t recent_ns[OSD_PGA_RECENT]; /* when each closed (lease clock) */
	int nrecent;
	/* We know its intervals since it last started: kept in our store,
	 * seen since the PG was made, or it started since. If not (a new OSD,
	 * or a PG first seen in our first map), peering asks every up OSD. */
	bool known;
};

/* A shard's PG states and counters, as it last handed them to shard 0. */
struct osd_counters {
	uint64_t ops, bytes_in, bytes_out, rec_objects, rec_bytes, ec_reads, ec_decodes;
	uint64_t rec_watchdog;
	uint64_t client_busy;
	uint64_t pg_splits;
	uint64_t pg_merges;
	uint64_t reads_unleased;
	uint64_t dups;
	uint64_t ops_blocklisted;
	uint64_t auth_refused;
	uint64_t pg_log_bytes;     /* the PG logs' memory (a gauge) */
	uint64_t pg_log_bytes_max; /* the largest one PG's (a gauge) */
};

struct osd_snap {
	Cairn__Mon__PgStat *pgs;
	size_t npgs;
	struct osd_counters c;
	struct cm_msgr_stats msgr; /* the shard's messenger, as of the snapshot */
};

/* The OSD's identity and what it opens tickets with (service/auth.c). */
struct osd_auth {
	bool inited;
	pthread_mutex_t mu;
	struct mon_creds creds;     /* under mu: our key and our ticket for the peers */
	struct mon_secrets secrets; /* under mu: the service secrets */
	atomic_bool want_secrets;   /* a handshake met a generation we lack */
	uint64_t secrets_ms;        /* shard 0: when the secrets came (0: not yet) */
	uint64_t rot_tid, rot_sent_ms;
};

struct osd_node {
	unsigned n;
	struct osd_auth auth;
	struct osd **sh; /* sh[0] is the main thread's, with the monitor client */
	pthread_t *th;
	bool *th_started;
	pthread_mutex_t mu;
	struct osd_snap *snap; /* [n], under mu; [0] unused */
	atomic_bool beacon_soon;
	char **addrs;         /* [n]: each shard's address (for boot) */
	atomic_uint draining; /* shutdown: shard threads not yet drained (shard_drain) */
	atomic_bool stuck;    /* shutdown: a shard's calls did not call back in DRAIN_MS */
	/* Read leases (service/lease.c), by OSD id (< OSD_LEASE_IDS). */
	struct osd_lease *lease;
	_Atomic uint64_t max_epoch;    /* the newest map any shard applied */
	_Atomic uint64_t *shard_epoch; /* [n]: the map each shard applied */
	uint64_t start_ns;             /* this process started (lease clock) */
	atomic_bool ping_soon;         /* a read waits for a lease: shard 0 pings now */
};

/*
 * Read leases, per peer OSD id (the lease clock: osd__lease_now). As
 * primary: we may serve reads until `until_ns` as far as that peer is
 * concerned (a ping it answered with renew). As the peer: the last lease we
 * granted it runs until renew_until_ns, granted when its map was
 * renew_epoch. Written by shard 0, read by every shard. Every OSD id the
 * mons hand out (MON_MAX_OSD_ID) has one: 24 MiB of address space, touched
 * only for the ids in use.
 */
#define OSD_LEASE_IDS MON_MAX_OSD_ID

struct osd_lease {
	_Atomic uint64_t until_ns;
	_Atomic uint64_t renew_until_ns;
	_Atomic uint64_t renew_epoch;
};

#define OSD_PUSH_CHUNK     (4u << 20) /* data per push */
#define OSD_PUSH_OMAP_KEYS 512u       /* omap entries per push */
#define OSD_LIST_PAGE      256u       /* backfill listing page */
#define OSD_RETRY_MS       2000u      /* after a failed recovery */
#define OSD_PUSH_TIMEOUT   60000u
#define OSD_IDLE_KEEP_MS   30000u     /* a finished log-based job answers late requests */
#define OSD_REC_PRIO       (1u << 31) /* rmiss: the object's push was asked for first */
#define OSD_REC_STALL_MS   30000u     /* a plan without any ack this long is started over */
#define OSD_REPOP_STALL_MS 30000u     /* a write missing a replica's reply this long: re-peer */

/* A log as seen by the primary: its own ring or a peer's notify. */
struct osd_lview {
	struct osd_pg *pg;
	const Cairn__Osd__PgNotify *n;
};

/*
 * A pool kind. Replicated and erasure-coded PGs differ only in what this
 * table does (as SPDK's bdev modules plug into one function table): every
 * other file runs the same code for both. pg->be is set from the pool in
 * osd__pg_on_map. backend/replicated.c and backend/ec.c are the two.
 */
struct osd_backend {
	const char *name;
	/* The PG joins a pool of this kind (EC: its profile into pg->ec). */
	void (*attach)(struct osd *o, struct osd_pg *pg, const Cairn__Map__Pool *pool);
	/* ---- placement ---- */
	/* The shard held by the OSD at place up_pos of the up set, the
	 * acting_pos-th present one (EC: its place; replicated: its rank). */
	uint8_t (*shard_of)(int up_pos, int acting_pos);
	/* The shard label (shard + 1; 0: none) our copy gets when written in
	 * this interval, and the one acting slot t's copy must carry. */
	uint32_t (*shard_label)(const struct osd_pg *pg);
	uint32_t (*slot_label)(const struct osd_pg *pg, int t);
	/* The fewest acting OSDs with which the PG peers (fewer: down). */
	unsigned (*peer_min)(const struct osd_pg *pg);
	/* May changes run with this acting set? (Reads may, once peered.) */
	bool (*writable)(const struct osd_pg *pg);
	/* ---- client ops ---- */
	/* Refuse ops this kind cannot serve. \return 0 or -errno for the reply. */
	int (*check_op)(const struct osd_pg *pg, const Cairn__Osd__OsdOp *q);
	/* Run op a shorter way if there is one (op->busy set): \return true. */
	bool (*fast_path)(struct osd_op *op);
	/* Does op need the object's state read (on a worker) before it runs? */
	bool (*reads_state)(const struct osd_op *op);
	/* On the worker, after the generic state: what this kind adds (EC: the
	 * logical size). */
	void (*state_fn)(struct osd_op *op);
	/* Read op->reads_pending READ sub-ops' data (op->busy is set); then
	 * osd__op_reads_done. */
	void (*read)(struct osd_op *op);
	/* Build op's change (osd__op_tx_finish gives it its version) and hand it
	 * to osd__op_commit in the same call, or reply with the error. */
	void (*write)(struct osd_op *op);
	/* Fill this kind's part of op's log entry (sent: room for the shards'
	 * OSDs) and the version the shards may roll forward to ({0,0}: none). */
	void (*log_entry)(struct osd_op *op, Cairn__Osd__LogEntry *le, uint32_t *sent,
			  struct osd_ver *roll);
	/* May a primary list its own copy for a shard listing (EC backfill)? */
	bool (*lists_own_copy)(const struct osd_pg *pg);
	/* ---- states ---- */
	/* The PG became active: tell the other acting OSDs (or leave it to tick). */
	void (*activated)(struct osd_pg *pg);
	/* Once per tick on every PG (NULL: nothing). */
	void (*tick)(struct osd_pg *pg);
	/* The data bytes a copy of `bytes` stands for (EC: k times its shard). */
	uint64_t (*stat_bytes)(const struct osd_pg *pg, uint64_t bytes);
	/* ---- peering (peering/decide.c calls these) ---- */
	/* The acting slot of the authoritative copy among those that answered, or -1. */
	int (*choose_auth)(struct osd_pg *pg);
	/* Does a copy that answered speak for a past interval it was in? */
	bool (*copy_heard)(const struct osd_pg *pg, const struct osd_pg_peer *p);
	/* Slot t holds entries newer than `common` the authoritative history
	 * lacks: undo them there (peer[t].rollback) instead of pushing their
	 * objects. NULL: push them. \return 0, -EAGAIN (wait for more copies). */
	int (*plan_divergent)(struct osd_pg *pg, int t, const struct osd_lview *tv,
			      const struct osd_ver *common);
	/* May the PG serve while recovering (auth, self: slots; backfill: someone is)? */
	bool (*serve_recovering)(const struct osd_pg *pg, int auth, int self, bool backfill);
	/* Say why no authoritative copy was found (the PG waits). */
	void (*no_auth)(const struct osd_pg *pg);
	/* ---- recovery ---- */
	/* The OSD that pushes the objects (replicated: the authoritative copy;
	 * EC: the primary, which rebuilds shards). */
	int32_t (*rec_source)(const struct osd_pg *pg);
	/* Is the PG short of copies (else a backfill only moves data, and
	 * norebalance holds it)? */
	bool (*degraded)(const struct osd_pg *pg);
	/* May our copy be a recovery source? */
	bool (*source_ok)(const struct osd_pg *pg);
	/* A backfill source lists another OSD's copy instead of its own (EC). */
	bool (*list_remote)(const struct osd_pg *pg);
	/* Read the current object of a push job (recovery/push.c). */
	void (*push_step)(struct osd_rjob *j, struct osd_pg *pg);
	/* ---- the whole shard (NULL: nothing) ---- */
	void (*peer_reset)(struct osd *o, int32_t peer); /* a peer session was reset */
	void (*abort_all)(struct osd *o);                /* shutdown: end reads in flight */
	void (*free_all)(struct osd *o);                 /* shutdown: free what it keeps */
};

extern const struct osd_backend osd__backend_replicated;
extern const struct osd_backend osd__backend_ec;

/* backend/replicated.c: the newest complete copy's slot, or -1. */
int osd__rep_choose_auth(struct osd_pg *pg);

/* recovery/push.c: each kind's way of reading the current object of a push job. */
void osd__push_step_replicated(struct osd_rjob *j, struct osd_pg *pg);
void osd__push_step_ec(struct osd_rjob *j, struct osd_pg *pg);

/* backend/backend.c: every kind's whole-shard hook. */
void osd__backends_peer_reset(struct osd *o, int32_t peer);
void osd__backends_abort_all(struct osd *o);
void osd__backends_free_all(struct osd *o);

/* The kind of a pool. */
static inline const struct osd_backend *
osd_backend_of(const Cairn__Map__Pool *pool)
{
	return pool->erasure ? &osd__backend_ec : &osd__backend_replicated;
}

/*
 * ====================== functions, by the file that defines them ======================
 * The message handlers (osd__pg_handle_*, osd__handle_ping,
 * osd__rec_handle_list_reply) take ownership of the message.
 */
/* ---------- service/calls.c ---------- */

/*
 * The store and worker calls of the PG code, through the shard so that
 * shutdown can wait for their callbacks (struct osd's pending): the same
 * contracts as os_queue, os_read, os_read_meta and cm_worker_submit (w's
 * done runs on o's reactor).
 */
void osd__queue(struct osd *o, struct os_txn *t, os_commit_cb cb, void *arg);

void osd__read(struct osd *o, const char *cid, const char *oid, uint64_t off, uint64_t len,
	       os_read_cb cb, void *arg);

void osd__read_meta(struct osd *o, const char *cid, const char *oid, uint64_t off, uint64_t len,
		    const char *attr, os_read_meta_cb cb, void *arg);

int osd__work(struct osd *o, struct cm_work *w);

int osd__send_pb(struct cm_conn *c, uint16_t type, uint64_t tid, const ProtobufCMessage *pb,
		 const struct cm_sgl *data);

const Cairn__Map__Pool *osd__pool(struct osd *o, int64_t id);

/* ---------- service/peers.c ---------- */

/* The OSD id of a session we opened with osd__peer_conn, else -1. */
int32_t osd__conn_peer(struct cm_conn *c);

/* The session with the shard of OSD id that serves PG seed (seed 0: its first). */
struct cm_conn *osd__peer_conn(struct osd *o, int32_t id, uint32_t seed);

void osd__update_peers(struct osd *o);

/* ---------- service/map.c ---------- */

/* Shard 0: tell the other shards our id, boot state and (when buf) the packed map. */
void osd__shards_publish(struct osd *o, const uint8_t *buf, size_t len);

/* Ask the mons for maps after epoch (from any shard). */
void osd__want_map(struct osd *o, uint64_t epoch);

/* The store's meta object exists (writes to it may be queued). */
bool osd__meta_ok(const struct osd *o);

/* Before the reactor runs: make the meta object if needed, start monc from the kept map. */
void osd__map_seed(struct osd *o);

void osd__on_map(void *arg, const Cairn__Map__OsdMap *m);

/* ---------- service/beacon.c ---------- */

/* Shard > 0: hand our PG states and counters to shard 0's next beacon. */
void osd__shard_snapshot(struct osd *o);

/* Shard 0: every shard's counters (ours now, the others' last snapshot). */
void osd__counters_total(const struct osd *o, struct osd_counters *t);

/* ---------- service/metrics.c ---------- */

struct osd_metrics;

/* Serve /metrics on addr from shard 0's reactor. \return 0 (*mp) or -errno (logged). */
int osd__metrics_start(struct osd *o, const char *addr, struct osd_metrics **mp);
void osd__metrics_stop(struct osd_metrics *m);

void osd__send_boot(struct osd *o);

void osd__on_reply(void *arg, struct cm_msg *m);

void osd__send_beacon(struct osd *o, uint64_t now);

/* ---------- service/heartbeat.c ---------- */

void osd__heartbeat(struct osd *o, uint64_t now);

/* ---- read leases (service/lease.c) ---- */
/* The lease clock (CLOCK_BOOTTIME: it runs on while a host is suspended). */
uint64_t osd__lease_now(void);
/* A shard applied map `epoch`. */
void osd__lease_note_epoch(struct osd *o, uint64_t epoch);
/* The oldest map every shard has applied (what our pings claim). */
uint64_t osd__lease_epoch(struct osd *o);
/* Shard 0: a ping from `from` at map `epoch` asking a lease of ms; \return
 * whether we grant it. */
bool osd__lease_grant(struct osd *o, int32_t from, uint64_t epoch, uint64_t ms);
/* Shard 0: `from` granted our ping sent at stamp (lease clock) a lease of ms. */
void osd__lease_renewed(struct osd *o, int32_t from, uint64_t stamp, uint64_t ms);
/* An interval of x closed (its acting set iv): remember it for a lease's length. */
void osd__lease_closed(struct osd_pga *x, const struct osd_piv *iv);
/*
 * Until when the primaries of the PG's past intervals that this OSD was in
 * (other than us and `except`) may still serve reads under a lease we
 * granted: merged into w[*n] (at most OSD_LEASE_WAITS, one per OSD, the
 * later time kept). Pools that need leases.
 */
bool osd__lease_waits(struct osd *o, int64_t pool, uint32_t seed, int32_t except,
		      struct osd_lease_wait *w, int *n);
/* Add (osd, until_ns) to w[*n] (the later time kept per OSD). \return false
 * when w is full (OSD_LEASE_WAITS) and osd not in it. */
bool osd__lease_wait_add(struct osd_lease_wait *w, int *n, int32_t osd, uint64_t until_ns);
/* May this primary serve a read of pg now? (Not: the client resends.) */
bool osd__pg_readable(struct osd_pg *pg);

void osd__handle_ping(struct osd *o, struct cm_conn *c, struct cm_msg *m);

/* Shard 0's session with peer id was refused: report its process gone, at once. */
void osd__peer_refused(struct osd *o, int32_t id);

/* ---------- service/dispatch.c ---------- */

void osd__on_msg(void *arg, struct cm_conn *c, struct cm_msg *m);

/* service/auth.c: the OSD's identity, tickets and caps (docs/design/auth.md). */
int osd__auth_init(struct osd_node *nd, const struct osd_conf *cfg, const char *uuid);
void osd__auth_fini(struct osd_node *nd);
int osd__cred_fn(void *arg, struct cm_conn *c, unsigned kind, struct cm_cred *out);
int osd__auth_fn(void *arg, const struct cm_hs_hello_auth *h, uint8_t key[CM_HS_KEY_LEN],
		 struct cm_hs_auth *ha, char *reason, size_t rlen);
/* Shard 0: ticket and secrets in hand (boot waits for both); renew them; their replies. */
bool osd__auth_ready(struct osd *o);
void osd__auth_tick(struct osd *o, uint64_t now);
bool osd__auth_reply(struct osd *o, struct cm_msg *m);
/* A peer message from c: may it be handled (an OSD's, not revoked)? */
bool osd__auth_peer_ok(struct osd *o, struct cm_conn *c, uint16_t type);
/* May c do `need` (CM_CAP_R/W) in pool's namespace? \return 0, -EPERM, -EKEYEXPIRED (revoked). */
int osd__auth_check(struct osd *o, struct cm_conn *c, int64_t pool, const char *nspace,
		    unsigned need, bool all_ns);

void osd__on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc);

/* ---------- pg/table.c ---------- */

const char *osd__pg_state_name(enum osd_pg_state s);

size_t osd__pg_hash(int64_t pool, uint32_t seed, size_t nb);

/* The PG, or NULL also while it is being split or waits for its split (no message sees it). */
struct osd_pg *osd__pg_find(struct osd *o, int64_t pool, uint32_t seed);

/* The PG whatever its state (the map and the split code). */
struct osd_pg *osd__pg_find_any(struct osd *o, int64_t pool, uint32_t seed);

/*
 * Call fn on every record of cid's OSD_PGMETA omap whose key starts with
 * prefix (NULL, 0: all), in key order, a page at a time, until fn returns
 * non-zero. Blocking (a worker, or start-up). \return 0, fn's value, or
 * the store's error.
 */
int osd__pgmeta_walk(struct os_store *s, const char *cid, const char *prefix, size_t plen,
		     int (*fn)(void *arg, const struct os_kv *kv), void *arg);

/* Read the copy's records (info, prior, log, stashes, missing, split) from the store again. */
int osd__pg_reload(struct osd_pg *pg);

struct osd_pg *osd__pg_new(struct osd *o, int64_t pool, uint32_t seed);

void osd__pg_free_all(struct osd *o);

int osd__pg_load_all(struct osd *o);

void osd__pg_create_in_store(struct osd_pg *pg);

/* The PGs we are primary of, for beacons (a[i].state points at constants). */
int osd__pg_stats(struct osd *o, Cairn__Mon__PgStat **a, size_t *n);

/* ---------- pg/log.c ---------- */

struct osd_lent *osd__pg_log_at(struct osd_pg *pg, size_t i);
/* The memory an in-memory log entry holds (what pg->log_bytes sums). */
size_t osd__lent_bytes(const struct osd_lent *e);

int osd__pg_log_append(struct osd_pg *pg, const Cairn__Osd__LogEntry *le);

/* Drop entries <= v from memory. */
void osd__log_trim_mem(struct osd_pg *pg, const struct osd_ver *v);

const struct osd_lent *osd__log_find_req(struct osd_pg *pg, const char *client, uint64_t tid);

void osd__pg_log_clear(struct osd_pg *pg);

/* Fill pi (and its versions) with pg's durable info. */
void osd__pg_info_fill(struct osd_pg *pg, Cairn__Osd__PgInfo *pi, Cairn__Osd__Version *lu,
		       Cairn__Osd__Version *tail);

/* EC: the shard label (shard + 1) our copy gets when written in this interval; 0 otherwise. */
uint32_t osd__pg_shard_label(struct osd_pg *pg);

void osd__pg_log_pb_free(Cairn__Osd__LogEntry **les, size_t n);

/* The log as protobuf entries (for notifies and PG_LOG); free with osd__pg_log_pb_free. */
int osd__pg_log_pb(struct osd_pg *pg, Cairn__Osd__LogEntry ***out, size_t *n);

/* The log entry, the new info and a trim, into t. */
int osd__txn_add_log(struct osd_pg *pg, struct os_txn *t, const Cairn__Osd__LogEntry *le,
		     const struct osd_ver *trim_to);

/* The 'm' key of oid in OSD_PGMETA's omap (missing objects); \return its length. */
size_t osd__missing_key(const char *oid, uint8_t *k);

/* The log keys, the missing set (keys 'm' + name), the info: in t. */
int osd__log_txn(struct osd_pg *pg, struct os_txn *t, const Cairn__Osd__PgInfo *info,
		 Cairn__Osd__LogEntry *const *les, size_t n, char *const *missing, size_t nmissing);

/* ---------- pg/intervals.c ---------- */

bool osd__has_osd(const int32_t *a, int n, int32_t id);

/* Map `epoch` shows acting set a[k]: open a new interval if it changed (true). */
bool osd__pga_note(struct osd_pga *x, uint64_t epoch, const int32_t *a, int k, bool rw);

/*
 * A past interval a peer knows of (it may be one we missed, restarted):
 * kept in order of its last map, before the current interval; the oldest
 * goes when the list is full.
 */
bool osd__pga_merge(struct osd_pga *x, const Cairn__Osd__PastInterval *p);

/* The PG started (went active) at map `les`: intervals that ended before are done with. */
void osd__pga_trim(struct osd_pga *x, uint64_t les);

/* pg's entry (NULL only without memory). */
struct osd_pga *osd__pg_pga(struct osd_pg *pg);

void osd__pivs_save(struct osd *o, struct os_txn **t, const struct osd_pga *x);

/* At start, after the PGs we hold: the kept lists of the others. */
void osd__pivs_load_all(struct osd *o);

int osd__prior_txn(struct osd_pg *pg, struct os_txn *t, bool active);

/* Write the record now (own transaction, ordered after the PG's others). */
void osd__prior_save(struct osd_pg *pg, bool active);

void osd__prior_load(struct osd_pg *pg, const uint8_t *v, size_t n);

struct osd_pga *osd__pga_get(struct osd *o, int64_t pool, uint32_t seed, bool *fresh);

void osd__pga_free_all(struct osd *o);

/* ---------- pg/rollback.c ---------- */

/* Our copy keeps a stash for the entry at v (t makes it). */
int osd__stash_add(struct osd_pg *pg, struct os_txn *t, const struct osd_ver *v);

/* Entries up to `upto` are final: remove their stash objects (in t). \return 0 or -errno. */
int osd__pg_stash_drop(struct osd_pg *pg, struct os_txn *t, const struct osd_ver *upto);

/* Drop every stash object of entries newer than `after` that `keep(arg, ver)` refuses. */
int osd__pg_stash_prune(struct osd_pg *pg, struct os_txn *t,
			bool (*keep)(void *, const struct osd_ver *), void *arg);

/* Forget every stash (the PG is emptied): their keys go in t, the objects elsewhere. */
int osd__pg_stash_forget(struct osd_pg *pg, struct os_txn *t);

/*
 * Undo entry e on our copy, in t (entries newer than e must be undone
 * first). \return 0, -ENOENT (our copy holds no stash of it: the object
 * cannot be put back) or -errno.
 */
int osd__pg_undo_entry(struct osd_pg *pg, struct os_txn *t, const struct osd_lent *e);

/* Did the TxOps keep a stash (EC)? */
bool osd__txops_stash(Cairn__Osd__TxOp *const *ops, size_t n);

/* Drop our stashes of entries up to v (a transaction of its own). */
void osd__roll_local(struct osd_pg *pg, const struct osd_ver *v);

/* ---------- pg/split.c ---------- */

/* Record in t that pg's copy is split for pg_num (nothing for 0). */
int osd__split_txn(struct osd_pg *pg, struct os_txn *t, uint32_t pg_num);

/* Is c a child that splitting parent from pg_num `from` to `to` makes? */
bool osd__split_is_child(uint32_t parent, uint32_t from, uint32_t to, uint32_t c);

/* Will a split of a copy this OSD holds make child c (create it empty meanwhile: no)? */
bool osd__split_child_waits(struct osd *o, int64_t pool, uint32_t c);

/*
 * A copy the store holds though pg does not know it (a split on another PG
 * shard made it and its hand-over has not come yet): load it and return
 * true; false if the store has no such collection. Clears split_wait.
 */
bool osd__split_adopt(struct osd_pg *pg);

/* A failed split's retry, from the tick. */
void osd__split_tick(struct osd_pg *pg, uint64_t now_ms);

/* Split pg's copy for pool's pg_num (the caller reset its interval; hidden until done). */
void osd__split_start(struct osd_pg *pg, const Cairn__Map__Pool *pool);

/* A PG's intervals as the maps recorded them (kept across a reload). */
struct osd_pga_copy {
	struct osd_pga x; /* a copy; its next, pool and seed are not used */
	bool have;
};

void osd__pga_take(struct osd *o, int64_t pool, uint32_t seed, struct osd_pga_copy *s);
void osd__pga_give(struct osd *o, int64_t pool, uint32_t seed, const struct osd_pga_copy *s);

/* ---------- pg/merge.c ---------- */

/* Does a pending merge step of pool pause PG seed (a source or a target)? */
bool osd__merge_paused(const Cairn__Map__Pool *pool, uint32_t seed);

/* A paused PG we lead, clean with nothing in flight: ready for its merge step. */
bool osd__merge_ready(struct osd_pg *pg);

/*
 * A copy of a PG below pg_num split for more PGs than the pool has: must it
 * merge (hide it and start, true), or did nothing merge into it (its split
 * record is brought to pg_num in mt, false)?
 */
bool osd__merge_target_on_map(struct osd_pg *pg, const Cairn__Map__Pool *pool, struct os_txn **mt);

/*
 * A map for pg (below the pool's pg_num): sources it noted that are PGs
 * again are let go; a round that has not started building for another
 * pg_num stops. \return whether pg is (still) merging: hidden, skip it.
 */
bool osd__merge_on_map_pg(struct osd_pg *pg, const Cairn__Map__Pool *pool);

/* The copies of pool's PGs at or above pg_num on this shard: merge them away. */
void osd__merge_sources_on_map(struct osd *o, const Cairn__Map__Pool *pool);

/* A failed merge's retry, from the tick. */
void osd__merge_tick(struct osd_pg *pg, uint64_t now_ms);

/* Free a PG's merge state (the PG goes). */
void osd__merge_free(struct osd_pg *pg);

/* ---------- peering/interval.c ---------- */

/* Drop pg's interval (its ops, recovery) and hide it from peering: state NONE. */
void osd__pg_hide(struct osd_pg *pg);

/* ---------- peering/interval.c ---------- */

/* A peer session was reset: replication to it is lost for this interval. */
void osd__pg_peer_reset(struct osd *o, int32_t peer);

/* The map changed: (re)compute every PG's acting set, start intervals and peering. */
void osd__pg_on_map(struct osd *o);

/* ---------- peering/peering.c ---------- */

void osd__pg_activate(struct osd_pg *pg);

/* Recovery finished on a PG that was active during it. */
void osd__pg_recovered(struct osd_pg *pg);

void osd__pg_start_peering(struct osd_pg *pg);
/* Drop the PG's ops and writes in flight (clients resend; the log answers
 * those applied) and peer again, as a new interval would. */
void osd__pg_restart(struct osd_pg *pg);

void osd__pg_handle_query(struct osd *o, struct cm_conn *c, struct cm_msg *m);

void osd__pg_handle_notify(struct osd *o, struct cm_conn *c, struct cm_msg *m);

/* Once per tick: retries of failed recoveries. */
void osd__pg_tick(struct osd *o);

/* ---------- peering/decide.c ---------- */

/* What peering concluded once every notify it waited for came. */
enum osd_peering_verdict {
	OSD_PEERING_GO,         /* plan recovery from *auth (or activate) */
	OSD_PEERING_WAIT_PRIOR, /* none of the prior set answered, and some are in the map */
	OSD_PEERING_WAIT_PAST,  /* a past interval that may have taken writes was not heard */
	OSD_PEERING_AGAIN,      /* a peer told of an interval whose up OSDs were not asked */
	OSD_PEERING_NO_AUTH,    /* no authoritative copy among those that answered */
};

/*
 * Peering heard from every slot it asked: decide (pure: reads pg, its
 * peers' answers and the map; logs why it waits). *self: our slot; *auth:
 * the authoritative slot (the backend's choice; -1: none).
 */
enum osd_peering_verdict osd__peering_decide(struct osd_pg *pg, int *auth, int *self);

/*
 * A new interval of pg: the OSDs that held it before (the previous acting
 * set, plus the older prior set while the PG never became active since)
 * that are not in the new acting set. Peering asks them too.
 */
void osd__set_prior(struct osd_pg *pg, const int32_t *before, int nbefore, const int32_t *acting,
		    int k);

/* 1: every past interval that may have taken writes was heard from; 0: wait;
 * -1: a peer told of one whose up OSDs were not asked: peer again. */
int osd__pg_past_heard(struct osd_pg *pg);

size_t osd__lv_n(const struct osd_lview *lv);

void osd__lv_get(const struct osd_lview *lv, size_t i, struct osd_ver *v, const char **oid);

/* Entry i's undo kind (enum osd_undo) and the OSDs its shards were sent to. */
void osd__lv_undo(const struct osd_lview *lv, size_t i, uint32_t *undo, const uint32_t **sent,
		  size_t *nsent);

void osd__lv_of(struct osd_pg *pg, int slot, struct osd_lview *lv);

/* Is v a point of the authoritative history (its tail or one of its entries)? */
bool osd__lv_has(const struct osd_lview *a, const struct osd_ver *tail, const struct osd_ver *v);

void osd__peer_oids_free(struct osd_pg_peer *p);

int osd__oids_add(struct osd_pg_peer *p, const char *oid);

/*
 * Plan slot t against the authoritative slot a: nothing, log-based (the
 * objects to push in peer[t].oids) or backfill. \return 0, -ENOMEM, or
 * -EAGAIN (EC: t's newer entries can be neither kept nor undone yet).
 */
int osd__plan_slot(struct osd_pg *pg, int t, int a);

/* ---------- ops/op.c ---------- */

void osd__op_free(struct osd_op *op);

/* Tell op's client to send it again shortly (-EAGAIN at our epoch): it was dropped. */
void osd__op_push_back(struct osd_op *op);
/* op (on pg->running) leaves it: the next op on its object may start. */
void osd__op_detach(struct osd_op *op);
/* watch.c */
bool osd__subop_watch(uint32_t t);
int osd__watch_meta(struct osd_op *op);
bool osd__watch_run(struct osd_op *op);
int osd__op_tx_watch(struct osd_op *op, size_t i);
void osd__watch_tick(struct osd_pg *pg, uint64_t now);
/* A new interval (tell: pending notifiers resend at once) or the PG's end. */
void osd__watch_reset(struct osd_pg *pg, bool tell);

/* Reply to the client and finish op (it leaves pg->running). */
void osd__op_reply(struct osd_op *op, const struct osd_ver *ver);

void osd__op_fail(struct osd_op *op, unsigned i, int rc);

/* A callback of op's (op->busy was set) came: false if op was dropped (and is freed). */
bool osd__op_resume(struct osd_op *op);

/* The read phase ended (op->busy was set): go on to the write phase. */
void osd__op_reads_done(struct osd_op *op);

void osd__op_start(struct osd_pg *pg, struct osd_op *op);

/* Is a client op on oid executing (not merely queued) on this primary? */
bool osd__pg_object_busy(struct osd_pg *pg, const char *oid);

/* Recovery let go of oid (pushed, or no longer missing): run its ops. */
void osd__pg_object_ready(struct osd_pg *pg, const char *oid);

void osd__pg_handle_op(struct osd *o, struct cm_conn *c, struct cm_msg *m);

/* Ops waiting for a newer map: retry them. */
void osd__pg_retry_wait_map(struct osd *o);
/*
 * Was a message that carries map epoch `epoch` sent by the incarnation of
 * osd `id` that our map shows up now (it booted at or before that epoch)?
 */
bool osd__sent_by_current(const struct osd *o, int32_t id, uint64_t epoch);

/* ---------- ops/list.c ---------- */

void osd__pg_handle_list(struct osd *o, struct cm_conn *c, struct cm_msg *m);

/* ---------- ops/read.c ---------- */

/* Sub-ops that read the object's data: READ, and CMPEXT (its operand's
 * length); len 0 of a READ is "to the end". */
static inline bool
osd__subop_reads_data(uint32_t t)
{
	return t == OSD_OP_READ || t == OSD_OP_CMPEXT;
}

bool osd__subop_reads_meta(uint32_t t);

/* "_" + name: a client's xattr as stored. */
char *osd__op_xattr_name(const char *name);
/* The internal xattr holding lock name's state (malloc'd). */
char *osd__op_lock_attr(const char *name);

/* On a worker: object state and every metadata result. */
void osd__op_meta_fn(void *arg);

void osd__op_meta_done(void *arg);

void osd__op_after_reads(struct osd_op *op);

/* ---------- ops/write.c ---------- */

bool osd__op_subop_writes(uint32_t t);

Cairn__Osd__TxOp *osd__op_tx_add(struct osd_op *op, uint32_t type);

/* Write sub-op so's effect on the object's existence: a remove (\return 1),
 * or a touch first when it is missing (\return 0); -ENOMEM. */
int osd__op_tx_life(struct osd_op *op, const Cairn__Osd__SubOp *so, bool *exists);

/* A SETXATTR or RMXATTR sub-op as its TxOp. \return 0 or -ENOMEM. */
int osd__op_tx_xattr(struct osd_op *op, const Cairn__Osd__SubOp *so);
int osd__op_tx_num(struct osd_op *op, size_t i);
int osd__op_tx_lock(struct osd_op *op, size_t i);

/* The TxOps are in: the version attribute (if the object exists at the
 * end) and op->txp. \return 0 or -ENOMEM. */
int osd__op_tx_finish(struct osd_op *op, bool exists);

void osd__op_write(struct osd_op *op);

/* Log, store and replicate op's TxOps (op->tx, op->txp ready); data(op, shard)
 * gives each shard's data segment. */
void osd__op_commit(struct osd_op *op, const struct cm_sgl *(*data)(struct osd_op *op, int shard));

void osd__pg_handle_repop_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m);

/* ---------- ops/replica.c ---------- */

void osd__pg_handle_repop(struct osd *o, struct cm_conn *c, struct cm_msg *m);

/* ---------- ops/txops.c ---------- */

/*
 * touch: our copy is being backfilled and may not have the object yet (the
 * backfill replaces it later): create it so that ops needing it apply.
 * ver: the entry's version (its stash object's name).
 */
int osd__txn_add_ops(struct os_txn *t, const char *cid, Cairn__Osd__TxOp *const *ops, size_t n,
		     const struct cm_sgl *data, bool touch, const struct osd_ver *ver);

/* ---------- backend/ec.c ---------- */

/* The EC profile of pool p, made on first use. NULL: replicated, or out of memory. */
const struct osd_ec *osd__ec_pool_profile(struct osd *o, const Cairn__Map__Pool *p);

void osd__ec_free_all(struct osd *o);

/* ---------- backend/ec_peering.c ---------- */

/*
 * Peering of an EC PG collected the acting OSDs' infos: a copy labelled with
 * another shard than its place counts as none; pg->auth = a copy at the
 * k-th newest last_update of the complete ones (newer entries exist on
 * fewer than k shards: never acknowledged, they are undone), or -1.
 */
void osd__ec_plan_auth(struct osd_pg *pg);

/*
 * EC: slot t holds entries newer than `common` that the authoritative
 * history lacks. Undo them on t (peer[t].rollback) when every one can be
 * undone and provably was never acknowledged. \return 0 (then
 * peer[t].rollback says whether), or -EAGAIN: one may have been
 * acknowledged, so the PG must wait for more of its shards.
 */
int osd__ec_plan_rollback(struct osd_pg *pg, int t, const struct osd_lview *tv,
			  const struct osd_ver *common);

/* ---------- backend/ec_read.c ---------- */

void osd__pg_handle_ec_read_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m);

/* A peer's session was reset: its shard reads failed. */
void osd__ec_peer_reset(struct osd *o, int32_t peer);

/*
 * Rebuild bytes [off, off + len) (multiples of the stripe unit) of shard
 * `shard` of oid from k other shards (not those lacking oid, nor backfill
 * targets) holding version ver (NULL: any, as long as they agree); attrs:
 * also the object's attributes. cb on the reactor. \return 0 or -errno.
 */
int osd__ec_fetch_shard(struct osd_pg *pg, const char *oid, const struct osd_ver *ver,
			unsigned shard, uint64_t off, uint64_t len, bool attrs, osd_ec_fetch_cb cb,
			void *arg);

/* The EC backend's read: every READ sub-op not done yet; then osd__op_reads_done. */
void osd__ec_op_read(struct osd_op *op);

void osd__pg_handle_ec_read(struct osd *o, struct cm_conn *c, struct cm_msg *m);

/* Shutdown: end the EC reads in flight (before the PGs and jobs are freed). */
void osd__ec_abort_all(struct osd *o);

/* ---------- backend/ec_write.c ---------- */

void osd__ec_op_free(struct osd_op *op);

/* The EC backend's write: rebuild the touched stripes, encode, commit. */
void osd__ec_op_write(struct osd_op *op);

/* ---------- recovery/plan.c ---------- */

/* Forget the primary's recovery state of this PG (a new interval). */
void osd__rec_reset(struct osd_pg *pg);

/* Send a recovery request for peer[t] to the source (maybe us). \return 0 or -errno. */
int osd__send_req(struct osd_pg *pg, int t, char **oids, size_t n, bool all, bool prio);

/* Peering collected every acting OSD's info and log: plan and start recovery, or activate. */
void osd__rec_plan(struct osd_pg *pg);

void osd__on_recover_done(struct osd *o, const Cairn__Osd__PgAck *a);

void osd__on_log_ack(struct osd *o, const Cairn__Osd__PgAck *a);

/* The operator let recovery or backfill go on: start held pushes. */
void osd__rec_release(struct osd_pg *pg);

void osd__pg_handle_recover_done(struct osd *o, struct cm_conn *c, struct cm_msg *m);

void osd__pg_handle_pg_log_ack(struct osd *o, struct cm_conn *c, struct cm_msg *m);

/*
 * A plan that heard nothing from its targets and sources for OSD_REC_STALL_MS
 * (an answer lost with a session, or a state no ack will move) starts over:
 * peering again costs a little, waiting forever costs the PG. Slots the
 * operator holds (norecover, nobackfill) do not count; a plan with a
 * backfill pushing is not watched (its source reports only at the end).
 */
void osd__rec_stalled(struct osd_pg *pg, uint64_t now_ms);

void osd__rec_remove_strays(struct osd_pg *pg);

/* ---------- recovery/push.c ---------- */

/* End the source jobs of PG (pool, seed) (-ESTALE to their primaries): its copy splits. */
void osd__rec_jobs_stale(struct osd *o, int64_t pool, uint32_t seed);

/*
 * May a client op on oid run now? Not while an acting OSD lacks it (we, for
 * a read; then its recovery is asked for first) nor, for a write, while it
 * is being pushed.
 */
bool osd__rec_op_blocked(struct osd_pg *pg, const char *oid, bool writes);

/* No client op on oid executes any more: pushes waiting for it go on. */
void osd__rec_object_idle(struct osd_pg *pg, const char *oid);

/* A listing an EC backfill asked a shard for. */
void osd__rec_handle_list_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m);

void osd__job_start(struct osd *o, const Cairn__Osd__RecoverReq *q, int32_t primary);

void osd__pg_handle_recover(struct osd *o, struct cm_conn *c, struct cm_msg *m);

void osd__pg_handle_push_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m);

/* The target (peer; maybe us) applied a push, or failed to. */
void osd__push_replied(struct osd *o, int32_t peer, const Cairn__Osd__PushReply *r);

void osd__rec_peer_reset(struct osd *o, int32_t peer);

void osd__rec_tick(struct osd *o, uint64_t now_ms);

void osd__rec_free_all(struct osd *o);

/* ---------- recovery/sched.c ---------- */

/* A client op of this cost (4 KiB + bytes) arrived. */
void osd__rec_client_cost(struct osd *o, uint64_t cost);

/*
 * May a push start? Always while no client op came for a window; else while
 * recovery's cost in this window stays within its share of the whole
 * (share / (100 - share) of the clients' cost), and at least SCH_FLOOR per
 * window so that recovery never stops. Held pushes start at the next tick.
 */
bool osd__sch_may_push(struct osd *o);

/* ---------- recovery/apply.c ---------- */

void osd__pg_handle_push(struct osd *o, struct cm_conn *c, struct cm_msg *m);

/* Apply a push from c (NULL: from ourselves); answer when it is durable. */
void osd__push_apply(struct osd *o, struct cm_conn *c, const Cairn__Osd__Push *p,
		     const struct cm_sgl *data);

void osd__log_apply(struct osd *o, struct cm_conn *c, const Cairn__Osd__PgNotify *n);

void osd__pg_handle_pg_log(struct osd *o, struct cm_conn *c, struct cm_msg *m);

void osd__pg_handle_pg_remove(struct osd *o, struct cm_conn *c, struct cm_msg *m);

#endif
