/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cairn-osd's internals: the daemon (osd.c: boot, maps, peers) and its PGs
 * (pg.c: client ops, replication, peering, recovery). docs/design/osd.md.
 *
 * Threading: an OSD runs osd_op_shards PG shards, each a struct osd with
 * its own reactor thread, messenger (and address) and PG table: PG seed s
 * belongs to shard s % n (osd_pg_mine). Everything of a shard runs on its
 * reactor except the functions named *_fn, which run on the shared worker
 * pool (blocking store reads). The store is shared (its pipeline runs on
 * shard 0's reactor; os_queue/os_read post there and back). Shard 0 also
 * runs the monitor client, boot, beacons and heartbeats, and hands every
 * map to the other shards (each keeps its own copy).
 */
#ifndef OSD_DAEMON_H
#define OSD_DAEMON_H

#include "osd/proto.h"
#include "os/store.h"
#include "osd/ec.h"
#include "mon/monc.h"
#include "mon/osdmap.h"
#include "cm/daemon.h"
#include "cm/worker.h"
#include "oset.h"

struct osd_conf {
	struct cm_daemon_conf d;
	char *id;
	char *fsid;
	char *mon_host;
	char *public_addr;
	char *host;
	char *device_class;
	char *osd_data;
	char *osd_db;
	uint64_t block_size;
	uint64_t deferred_max;
	uint64_t data_cache;
	uint64_t beacon_ms;
	uint64_t pg_log_max;
	uint64_t op_threads;
	uint64_t recovery_max_active;
	uint64_t recovery_share; /* percent */
	uint64_t hb_interval_ms, hb_grace_ms;
	uint64_t debug_split;
	uint64_t op_shards;
	bool mkfs, fsck, deep;
};

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

#define OSD_MAX_ACTING 16
#define PG_MAX_SLOTS   (2 * OSD_MAX_ACTING) /* acting + prior OSDs peering asks */

enum pg_state {
	PG_NONE = 0,    /* not ours in this map (stray) */
	PG_CREATING,    /* collection being made */
	PG_PEERING,     /* primary: collecting infos */
	PG_ACTIVE,      /* primary: serving */
	PG_REPLICA,     /* replica in this interval */
	PG_DOWN,        /* primary with fewer than min_size up: waiting */
	PG_INCOMPLETE,  /* primary: no complete copy among the acting OSDs: waiting */
	PG_RECOVERING,  /* primary: bringing acting copies up to date from the log */
	PG_BACKFILLING, /* primary: copying whole PGs to OSDs the log cannot catch up */
};

/* A primary's view of one acting OSD while peering and recovering. */
enum rec_step {
	REC_NONE = 0, /* in sync (or not looked at yet) */
	REC_WIPE,     /* backfill: waiting for the target to empty its copy */
	REC_ADOPT,    /* log-based: waiting for the target to adopt the log and its missing set */
	REC_WAIT,     /* norecover/nobackfill holds the pushes */
	REC_PUSH,     /* waiting for the source to push objects */
	REC_LOG,      /* backfill: waiting for the target to adopt the log at the end */
	REC_DONE,
};

struct pg_peer {
	bool have;       /* its notify arrived */
	bool exists;     /* it holds the PG */
	bool incomplete; /* its copy is being backfilled */
	bool partial;    /* its copy lacks some objects (it reported them missing) */
	struct osd_ver lu, tail;
	uint64_t les;            /* its last_epoch_started */
	Cairn__Osd__PgNotify *n; /* its info and log (remote OSDs) */
	uint8_t step;            /* enum rec_step */
	bool backfill;
	char **oids; /* log-based recovery: the objects to push */
	size_t noids;
	bool rollback; /* EC: it undoes its entries newer than rollback_to first */
	struct osd_ver rollback_to;
};

struct pg_lent; /* a log entry in memory */
struct rjob;    /* a recovery job on a source OSD */
struct pga;     /* a PG's last acting set (any PG, ours or not) */
struct op;
struct repop;

struct pg {
	struct osd *osd;
	int64_t pool;
	uint32_t seed;
	char cid[48];
	struct pg *hnext;
	enum pg_state state;
	bool in_store;
	bool creating;
	/* this interval */
	int32_t acting[OSD_MAX_ACTING];
	int nacting;
	uint8_t shard[OSD_MAX_ACTING]; /* EC: acting[i] holds shard shard[i] (its place in
					* the up set); replicated: i */
	const struct osd_ec *ec;       /* EC pools: the profile; NULL: replicated */
	int my_shard;                  /* EC: our shard in this interval (-1: none) */
	uint32_t info_shard;           /* EC: the shard our copy holds, plus one (durable) */
	int32_t primary;
	unsigned size, min_size;
	uint64_t interval_epoch;
	/* durable state (mirrored in memory) */
	struct osd_ver last_update, log_tail;
	uint64_t last_epoch_started;
	struct pg_lent *log; /* ring */
	size_t log_cap, log_head, log_n;
	bool log_gap;                  /* the store may hold entries the ring lost: trim by range */
	bool incomplete;               /* our copy is being backfilled */
	struct oset missing;           /* objects our copy lacks (durable as 'm' keys in PGMETA) */
	uint64_t push_epoch, push_gen; /* the plan whose pushes we take (its PG_LOG came) */
	/* peering and recovery (primary) */
	unsigned notifies_wanted;
	/* the acting set(s) before this interval, minus today's (since the PG was
	 * last active): their copies may hold what the acting set lacks */
	int32_t prior[OSD_MAX_ACTING];
	int nprior;
	bool prior_overlap;           /* an OSD of the previous interval is acting now */
	bool prior_loaded;            /* prior came from the store (PGMETA "prior") at start */
	int32_t strays[PG_MAX_SLOTS]; /* prior OSDs with a copy, to drop once clean */
	int nstrays;
	/* peering slots: the acting set, then the prior OSDs that are up */
	int32_t slot_osd[PG_MAX_SLOTS];
	int nslots;
	struct pg_peer peer[PG_MAX_SLOTS];
	uint64_t peer_up_since[PG_MAX_SLOTS]; /* incarnations peering talked to */
	int auth;                             /* acting slot of the authoritative copy */
	unsigned rec_pending;                 /* slots not yet REC_DONE/REC_NONE */
	uint64_t retry_ms;                    /* re-peer at this time after a failed recovery */
	uint64_t rec_gen;                     /* recovery attempt: stale acks are ignored */
	uint64_t plan_epoch;                  /* our map epoch when recovery was planned */
	uint64_t rec_objects, rec_bytes;
	struct oset rmiss; /* object -> acting slots lacking it (bits), REC_PRIO once asked for */
	bool rec_early;    /* active while the plan runs */
	bool rec_backfill; /* the plan backfills someone */
	unsigned rec_init; /* initial PG_LOG / wipe acks outstanding */
	uint64_t
		rec_seen_ms; /* the plan's last sign of progress (an ack from a target or source) */
	/* ops */
	TAILQ_HEAD(op_q, op) waiting; /* until active */
	struct op_q running;          /* being executed (for per-object order) */
	TAILQ_HEAD(repop_q, repop) repops;
	/* EC: entries up to roll_ok committed on every shard (their stashes may
	 * go); roll_stuck: a change of this interval failed somewhere, so hold */
	struct osd_ver roll_ok, roll_sent; /* roll_sent: the last roll_to the shards got */
	bool roll_stuck;
	/* EC: the entries whose stash objects our copy holds, oldest first
	 * (durable as keys 's' + version in PGMETA's omap) */
	struct osd_ver *stashes;
	size_t nstash, capstash;
	uint64_t ops_done;
};

/* An EC pool's profile (pools keep theirs for life). */
struct osd_pool_ec {
	int64_t pool;
	struct osd_ec ec;
};

struct ecr; /* an EC read in flight (ec_pg.c) */

struct osd_peer {
	/* sessions, one per PG shard of the peer we talk to (its shard_addrs) */
	struct osd_plink {
		struct cm_conn *c;
		char addr[128];
		uint64_t up_since;
	} * links;

	unsigned nlinks;
	/* heartbeats (shard 0) */
	uint64_t hb_since_ms;  /* we started pinging this incarnation */
	uint64_t hb_rx_ms;     /* its last answer */
	uint64_t hb_report_ms; /* we last reported it failed (0: not reported) */
	uint64_t hb_up_since;  /* the incarnation the above are about */
};

struct osd_node; /* the shards of one OSD (osd.c) */

/* The OSD's own records in its store: the kept map, past intervals. */
#define META_CID "meta"
#define META_OID "osd"

struct osd {
	struct osd_conf *cfg;
	struct osd_node *node;
	unsigned shard, nshards;     /* this PG shard, of nshards */
	Cairn__Map__OsdMap *own_map; /* shards > 0: our copy of the map (map points at it) */
	bool meta_ok;                /* shard 0: the store's meta object exists (map_save) */
	uint64_t pg_maps;            /* maps pg_on_map handled */
	uint64_t snap_ms;            /* shards > 0: last stats handed to shard 0 */
	struct cm_reactor *r;
	struct cm_msgr *msgr;
	struct os_store *store;
	struct cm_worker_pool *wp;
	struct mon_client *monc;
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
	struct pg **pgs;
	size_t npg_b, npgs;
	struct op_q wait_map;
	/* every PG's acting set in the previous map (for prior sets) */
	struct pga **pga;
	size_t npga_b;
	/* recovery jobs this OSD runs as a source (recovery.c) */
	TAILQ_HEAD(rjob_q, rjob) rjobs, rjobs_ready;
	unsigned rec_active; /* pushes in flight */
	uint64_t rec_objects, rec_bytes;
	/* client/recovery share (recovery.c): costs in the current 1 s window */
	uint64_t sch_win_ms, sch_client, sch_rec, sch_client_ms, sch_throttled;
	/* EC (ec_pg.c) */
	struct osd_pool_ec **ecp;
	size_t necp;
	TAILQ_HEAD(ecr_q, ecr) ecrs; /* reads waiting for shards of other OSDs */
	uint64_t ec_reads, ec_decodes;
	/* counters */
	uint64_t ops, op_bytes_in, op_bytes_out, repops, dups;
	/* Shutdown (osd.c): stopping drops what arrives and starts nothing new;
	 * pending counts the store calls and worker jobs this shard started
	 * whose callback has not run yet — they use its PGs, ops and jobs, so
	 * those are freed only once it is 0. */
	bool stopping;
	uint64_t pending;
};

/* ec_pg.c */
/* The EC profile of pool p, made on first use. NULL: replicated, or out of memory. */
const struct osd_ec *ec_pool_profile(struct osd *o, const Cairn__Map__Pool *p);
void ec_free_all(struct osd *o);
/* Shutdown: end the EC reads in flight (before the PGs and jobs are freed). */
void ec_abort_all(struct osd *o);
void pg_handle_ec_read(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_ec_read_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m);
/* A peer's session was reset: its shard reads failed. */
void ec_peer_reset(struct osd *o, int32_t peer);

/* recovery.c: a listing an EC backfill asked a shard for. */
void rec_handle_list_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m);
/* recovery.c: a client op of this cost (4 KiB + bytes) arrived. */
void rec_client_cost(struct osd *o, uint64_t cost);

/* osd.c */
/* Is PG seed served by this shard? */
static inline bool
osd_pg_mine(const struct osd *o, uint32_t seed)
{
	return o->nshards <= 1 || seed % o->nshards == o->shard;
}
/* The session with the shard of OSD id that serves PG seed (seed 0: its first). */
struct cm_conn *osd_peer_conn(struct osd *o, int32_t id, uint32_t seed);
/* The OSD id of a session we opened with osd_peer_conn, else -1. */
int32_t osd_conn_peer(struct cm_conn *c);
/* Ask the mons for maps after epoch (from any shard). */
void osd_want_map(struct osd *o, uint64_t epoch);
/*
 * The store and worker calls of the PG code, through the shard so that
 * shutdown can wait for their callbacks (struct osd's pending): the same
 * contracts as os_queue, os_read, os_read_meta and cm_worker_submit (w's
 * done runs on o's reactor).
 */
void osd_queue(struct osd *o, struct os_txn *t, os_commit_cb cb, void *arg);
void osd_read(struct osd *o, const char *cid, const char *oid, uint64_t off, uint64_t len,
	      os_read_cb cb, void *arg);
void osd_read_meta(struct osd *o, const char *cid, const char *oid, uint64_t off, uint64_t len,
		   const char *attr, os_read_meta_cb cb, void *arg);
int osd_work(struct osd *o, struct cm_work *w);
/* The store's meta object exists (writes to it may be queued). */
bool osd_meta_ok(const struct osd *o);
int osd_send_pb(struct cm_conn *c, uint16_t type, uint64_t tid, const ProtobufCMessage *pb,
		const struct cm_sgl *data);
const Cairn__Map__Pool *osd_pool(struct osd *o, int64_t id);

/* pg.c */
struct pg *pg_find(struct osd *o, int64_t pool, uint32_t seed);
int pg_load_all(struct osd *o);
void pg_free_all(struct osd *o);
/* The map changed: (re)compute every PG's acting set, start intervals and peering. */
void pg_on_map(struct osd *o);
/* Messages for PGs; each takes ownership of m. */
void pg_handle_op(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_list(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_repop(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_repop_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_query(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_notify(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_push(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_push_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_recover(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_recover_done(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_pg_log(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_pg_log_ack(struct osd *o, struct cm_conn *c, struct cm_msg *m);
void pg_handle_pg_remove(struct osd *o, struct cm_conn *c, struct cm_msg *m);
/* The PGs we are primary of, for beacons (a[i].state points at constants). */
int pg_stats(struct osd *o, Cairn__Mon__PgStat **a, size_t *n);
/* Once per tick: retries of failed recoveries. */
void pg_tick(struct osd *o);
/* A peer session was reset: replication to it is lost for this interval. */
void pg_peer_reset(struct osd *o, int32_t peer);
/* Ops waiting for a newer map: retry them. */
void pg_retry_wait_map(struct osd *o);
const char *pg_state_name(enum pg_state s);

#endif
