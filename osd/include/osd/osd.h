/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcairn-osd: an OSD -- its PGs (peering, the PG log, client ops,
 * replication and erasure coding, recovery and backfill, the QoS share of
 * recovery) over one object store (libcairn-os). The daemon cairn-osd
 * (osd/daemon/main.c) parses options and calls osd_serve. The wire protocol
 * is osd/proto.h (shared with clients). docs/design/layout.md maps the
 * library's source folders; docs/design/osd.md says how it works.
 *
 * Three parts are public beyond the daemon:
 *  - osd_serve, the service (threading below);
 *  - the erasure coder (osd_ec_*), also used by benchmarks and tests;
 *  - the checks of messages from the wire (osd_check_*), which the
 *    libFuzzer target tests/fuzz/osd_msg_fuzz.c drives.
 *
 * Threading: osd_serve runs osd_op_shards PG shards, each a reactor thread
 * with its own messenger and PG table (PG seed s belongs to shard s % n);
 * the store's pipeline runs on shard 0's reactor; blocking store reads run
 * on a shared worker pool. The coder and the checks are pure functions.
 */
#ifndef OSD_OSD_H
#define OSD_OSD_H

#include "osd/proto.h"
#include "cm/daemon.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------- the service ---------- */

/* What the daemon hands osd_serve (its option table, osd/daemon/main.c). */
struct osd_conf {
	struct cm_daemon_conf d;
	char *id;
	char *fsid;
	char *mon_host;
	char *public_addr;
	char *host;
	char *device_class;
	char *metrics_addr; /* "" or NULL: no /metrics */
	char *osd_data;
	char *osd_db;
	uint64_t block_size;
	uint64_t deferred_max;
	uint64_t data_cache;
	uint64_t beacon_ms;
	uint64_t pg_log_max;
	uint64_t pg_log_max_bytes; /* the in-memory log's size per PG (long names) */
	uint64_t op_threads;
	uint64_t recovery_max_active;
	uint64_t recovery_share;   /* percent */
	uint64_t client_bytes_max; /* client op bytes in flight, over all PG shards */
	uint64_t hb_interval_ms, hb_grace_ms;
	uint64_t read_lease_ms; /* 0: primaries serve reads without a lease */
	uint64_t debug_split;
	uint64_t op_shards;      /* 0: osd_shards_auto(host_osds) */
	uint64_t host_osds;      /* OSDs that share this host's cores (for the auto count) */
	char *keyring_path;      /* osd_keyring: our key ("": <osd_data>.keyring) */
	char *bootstrap_keyring; /* client.bootstrap-osd's, for a first start */
	bool mkfs, fsck, deep, repair;
};

/* The options of struct osd_conf (for cm_conf_init), ending with { 0 }. */
extern const struct cm_opt osd_conf_opts[];

/*
 * The PG shard count osd_op_shards = 0 picks: the cores this process may
 * run on (its affinity mask) divided among the host_osds OSDs that share
 * them, at least 1 and at most 8. One shard per core the OSD may use is
 * where sharding helps (docs/design/osd.md, "PG shards": 2 shards cost 3
 * OSDs on 2 cores 20% of their 4 KiB reads, and gave 1 OSD on them +8-10%).
 */
unsigned osd_shards_auto(unsigned host_osds);

/*
 * Serve: open (making it on first start) and mount the store on
 * cfg->osd_data, boot with the mons of cfg->mon_host and serve until
 * SIGTERM/SIGINT, then stop in order (every store call and worker job in
 * flight called back, the store unmounted). Blocks the calling thread.
 * \return 0 after an orderly stop; -EINVAL (mon_host or cluster_key not
 * set), or the error that stopped the start (logged).
 */
int osd_serve(struct osd_conf *cfg);

/* ---------- erasure coding (ISA-L Reed-Solomon, Cauchy matrix; docs/design/ec.md) ---------- */

/*
 * An object of an EC k+m pool is cut into stripes of k * su bytes; stripe s
 * puts its bytes [i*su, (i+1)*su) at offset s*su of data shard i (0 <= i < k)
 * and the m parity chunks of the stripe at offset s*su of shards k..k+m-1.
 * Every shard of an object has the same size: ceil(size / (k*su)) * su.
 *
 * A struct osd_ec is immutable after osd_ec_init: share it between threads.
 */
#define OSD_EC_MAX_SHARDS 32
#define OSD_EC_SU_MIN     4096u
#define OSD_EC_SU_MAX     (1u << 20)

struct osd_ec {
	unsigned k, m, su;
	uint8_t *matrix; /* (k+m) x k encode matrix, identity on top */
	uint8_t *tables; /* ISA-L tables of the m parity rows */
};

/* \return 0, -EINVAL (k, m, su out of range: 2..32, 1..16, k+m <= 32, su a
 * multiple of 4096 up to 1 MiB), -ENOMEM. */
int osd_ec_init(struct osd_ec *ec, unsigned k, unsigned m, unsigned su);
void osd_ec_fini(struct osd_ec *ec);

static inline uint64_t
osd_ec_stripe_width(const struct osd_ec *ec)
{
	return (uint64_t)ec->k * ec->su;
}

/* Bytes each shard holds for an object of this size. */
static inline uint64_t
osd_ec_shard_size(const struct osd_ec *ec, uint64_t size)
{
	uint64_t w = osd_ec_stripe_width(ec);

	return (size + w - 1) / w * ec->su;
}

/* data[0..k-1] (len bytes each) -> parity[0..m-1] (len bytes each). */
void osd_ec_encode(const struct osd_ec *ec, size_t len, uint8_t *const *data, uint8_t **parity);

/*
 * Rebuild shards from others. shards[0..k+m-1] point at len-byte buffers
 * (NULL allowed for shards neither present nor wanted); have: the shards
 * whose buffers hold data (bit i = shard i); want: those to compute (their
 * buffers are overwritten). \return 0, -EIO (fewer than k shards in have),
 * -EINVAL, -ENOMEM.
 */
int osd_ec_decode(const struct osd_ec *ec, size_t len, uint8_t **shards, uint32_t have,
		  uint32_t want);

/*
 * Logical stripes <-> data shards. buf holds n whole stripes (n * k * su
 * bytes); data[i] holds n * su bytes of shard i.
 */
void osd_ec_split(const struct osd_ec *ec, const uint8_t *buf, uint64_t n, uint8_t **data);

/*
 * The m parity shards of n whole stripes straight from their logical bytes
 * (no copy of the data shards: a sender can gather those from buf):
 * parity[j] gets n * su bytes.
 */
void osd_ec_encode_stripes(const struct osd_ec *ec, const uint8_t *buf, uint64_t n,
			   uint8_t **parity);
void osd_ec_join(const struct osd_ec *ec, uint8_t *const *data, uint64_t n, uint8_t *buf);

/* ---------- checks of messages from the wire ---------- */

/*
 * Checks of OSD messages from the wire before they are used (clients' ops,
 * replication and recovery messages from peers). Pure functions.
 */
#define OSD_MAX_LOG_MSG   1000000 /* log entries in one notify / PG_LOG */
#define OSD_MAX_PAST      64      /* past intervals in one notify */
#define OSD_MAX_PAST_OSDS 16      /* OSDs of one (OSD_MAX_ACTING) */

/*
 * The PG seed of a packed OsdOp or PgList (field 2, a varint; the last one
 * wins, absent is 0), read without unpacking, to pick the PG shard that
 * serves it. \return 0, -EBADMSG (not a well-formed message: let the
 * handler refuse it).
 */
int osd_peek_seed(const uint8_t *p, size_t n, uint32_t *seed);

/* A client's compound op with data_len bytes of data. \return 0 or -errno. */
int osd_check_op(const Cairn__Osd__OsdOp *q, size_t data_len);
/* A recovery push. \return 0 or -EINVAL. */
int osd_check_push(const Cairn__Osd__Push *p);
/* A replication op with data_len bytes of data. \return 0 or -EINVAL. */
int osd_check_repop(const Cairn__Osd__RepOp *ro, size_t data_len);
/* A notify or PG_LOG. \return 0 or -EINVAL. */
int osd_check_log_entry(const Cairn__Osd__LogEntry *le);
int osd_check_notify(const Cairn__Osd__PgNotify *n);
/* A recovery request. \return 0 or -EINVAL. */
int osd_check_recover(const Cairn__Osd__RecoverReq *q);
/* A recovery or log ack. \return 0 or -EINVAL. */
int osd_check_ack(const Cairn__Osd__PgAck *a);
/* A shard read of an EC object. \return 0 or -EINVAL. */
int osd_check_ec_read(const Cairn__Osd__EcRead *q);
/* A shard's answer to it. \return 0 or -EINVAL. */
int osd_check_ec_read_reply(const Cairn__Osd__EcReadReply *r);
/* A client's listing of a PG. \return 0, -EINVAL, -ENAMETOOLONG. */
int osd_check_list(const Cairn__Osd__PgList *q);

#endif
