/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cairn-osd's internals: the daemon (osd.c: boot, maps, peers) and its PGs
 * (pg.c: client ops, replication, peering, recovery). docs/design/osd.md.
 *
 * Threading: everything runs on the OSD's reactor thread except the
 * functions named *_fn, which run on the worker pool (blocking store reads).
 */
#ifndef OSD_DAEMON_H
#define OSD_DAEMON_H

#include "osd/proto.h"
#include "osd/store.h"
#include "mon/monc.h"
#include "mon/osdmap.h"
#include "cm/daemon.h"
#include "cm/worker.h"

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
	uint64_t beacon_ms;
	uint64_t pg_log_max;
	uint64_t op_threads;
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

enum pg_state {
	PG_NONE = 0,   /* not ours in this map (stray) */
	PG_CREATING,   /* collection being made */
	PG_PEERING,    /* primary: collecting infos */
	PG_ACTIVE,     /* primary: serving */
	PG_REPLICA,    /* replica in this interval */
	PG_DOWN,       /* primary with fewer than min_size up: waiting */
	PG_INCOMPLETE, /* primary: peers diverge and recovery cannot proceed */
};

struct pg_lent; /* a log entry in memory */
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
	int32_t primary;
	unsigned size, min_size;
	uint64_t interval_epoch;
	/* durable state (mirrored in memory) */
	struct osd_ver last_update, log_tail;
	uint64_t last_epoch_started;
	struct pg_lent *log; /* ring */
	size_t log_cap, log_head, log_n;
	/* peering */
	unsigned notifies_wanted;
	struct osd_ver peer_lu[OSD_MAX_ACTING];
	bool peer_have[OSD_MAX_ACTING];
	/* missing objects on peers to recover (primary) */
	unsigned recovering;
	/* ops */
	TAILQ_HEAD(op_q, op) waiting; /* until active */
	struct op_q running;          /* being executed (for per-object order) */
	TAILQ_HEAD(repop_q, repop) repops;
	uint64_t ops_done;
};

struct osd_peer {
	struct cm_conn *c;
	char addr[128];
	uint64_t up_since;
};

struct osd {
	struct osd_conf *cfg;
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
	uint64_t last_boot_ms, last_beacon_ms;
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
	/* counters */
	uint64_t ops, op_bytes_in, op_bytes_out, repops, dups;
};

/* osd.c */
struct cm_conn *osd_peer_conn(struct osd *o, int32_t id);
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
/* A peer session was reset: replication to it is lost for this interval. */
void pg_peer_reset(struct osd *o, int32_t peer);
/* Ops waiting for a newer map: retry them. */
void pg_retry_wait_map(struct osd *o);
const char *pg_state_name(enum pg_state s);

#endif
