/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitors' own keys in etcd, beside the map (under /cairn/<fsid>/):
 *   mons/<name>    the monmap: every mon that ever joined -> its address
 *   alive/<name>   the same, under the mon's lease: gone when it dies
 *   leader         "<name> <addr>", under the leader's lease
 *   key_check      HMAC-SHA256(cluster key, fsid), hex: a mon started with
 *                  another key refuses to run
 *
 * And the commands every mon answers (clusterctl sends them over the
 * messenger; tests call mon_command directly).
 *
 * Threading: blocking (etcd); worker threads.
 */
#ifndef MON_CLUSTER_H
#define MON_CLUSTER_H

#include "mon/health.h"
#include "mon/map_store.h"
#include "mon/proto.h"

int mon_key_path(const char *fsid, const char *what, const char *name, char *out, size_t len);

/* The key check value for (key, fsid) as 64 hex chars + NUL. */
void mon_key_check(const char *key, const char *fsid, char out[65]);

/*
 * Create the cluster: key check and first map, unless they exist.
 * \return 0 (created), 1 (existed and the key matches), -EACCES (another
 * key), or an etcd error.
 */
int mon_cluster_create(struct cm_etcd *e, const char *fsid, const char *key);

/* Verify the key. \return 0, -ENOENT (no cluster: run mkfs), -EACCES, or an etcd error. */
int mon_cluster_verify(struct cm_etcd *e, const char *fsid, const char *key);

struct mon_cluster_view {
	struct mon_info *mons;
	size_t nmons;
	char leader[64];
	char leader_addr[128];
};

/* The monmap with who is alive, and the leader. Free with mon_cluster_view_free. */
int mon_cluster_view_read(struct cm_etcd *e, const char *fsid, struct mon_cluster_view *v);
void mon_cluster_view_free(struct mon_cluster_view *v);

/* What the OSDs' beacons say, summed by the leader (for `status`). */
struct mon_pg_state_count {
	char state[48];
	uint64_t n;
};

struct mon_pg_state {
	int64_t pool;
	uint32_t seed;
	char state[48];
	uint64_t objects, bytes, degraded; /* as its primary last reported */
};

struct mon_stats {
	bool valid;              /* collected by the leader (false elsewhere) */
	struct mon_pg_state *pg; /* each reported PG, by (pool, seed) */
	size_t npg;
	uint64_t pgs; /* PGs some primary reported */
	struct mon_pg_state_count *states;
	size_t nstates;
	uint64_t osds; /* OSDs reporting */
	uint64_t total_bytes, free_bytes;
	double op_rate, wr_bps, rd_bps, rec_objps, rec_bps;
	uint64_t rec_objects, rec_bytes;  /* since the OSDs started */
	uint64_t degraded;                /* objects being recovered, over all PGs */
	uint64_t ec_decodes, csum_errors; /* since the OSDs started */
	uint64_t rec_watchdog;            /* recovery plans restarted by the watchdog */
};

void mon_stats_free(struct mon_stats *s);

struct mon_cmd_env {
	struct cm_etcd *etcd;
	struct mon_map_store *store;
	const char *fsid;
	const struct mon_stats *stats; /* may be NULL */
	const uint8_t *kek;            /* the KEK (32 bytes) for auth commands; NULL: refused */
};

/*
 * Run one command (argv as the user typed it after "clusterctl"):
 *   status | health [detail] | mon ls | crush show | pg ls [POOL]
 *   osd ls | osd down|out|in|rm ID... | osd reweight ID W | osd set|unset FLAG
 *   pool ls | pool create NAME [--size N] [--min-size N] [--ec K+M] [--stripe-unit B] [--pg-num N]
 *   pool rm NAME --yes-i-really-mean-it | pool set NAME KEY VALUE
 *   service ls [TYPE] | service beacon TYPE NAME INSTANCE ADDR TTL [META]
 *   service rm TYPE NAME INSTANCE   (the service map: registrations under etcd leases)
 *   mds ls [FS] | mds set FS max_mds N | mds beacon FS NAME INSTANCE ADDR TTL
 *   auth ls | auth add|get-or-create NAME [CAPS] | auth get|rm NAME | auth caps NAME CAPS
 *                                   (mon/auth.h: entities, their keys and caps)
 * *out (text, or JSON with json) and *err (a sentence when rc != 0) are
 * malloc'd, either may be NULL. \return 0 or a negative errno
 * (-EINVAL for usage errors).
 */
int mon_command(struct mon_cmd_env *env, int argc, char **argv, bool json, char **out, char **err);

/* What running a command needs of its caller's caps (cm/caps.h). */
enum mon_cmd_need {
	MON_NEED_R,         /* mon r: status, health, every ls and show */
	MON_NEED_W,         /* mon w: what changes the map or the service and MDS maps */
	MON_NEED_ADMIN,     /* admin: the auth commands */
	MON_NEED_BOOTSTRAP, /* auth get-or-create osd.X profile osd: admin or profile bootstrap-osd
			     */
};

enum mon_cmd_need mon_command_need(int argc, char **argv);

/*
 * The cluster's usage into r: devices' total and free bytes, and per pool
 * of m its objects, stored and raw bytes (as the leader's stats have them;
 * zeros and stats_valid false without), quota and an estimate of the
 * logical bytes that still fit (free bytes / copies, or x k/(k+m), and not
 * past the quota). r's arrays are malloc'd: mon_df_reply_fini.
 * \return 0 or -ENOMEM.
 */
int mon_df_fill(const Cairn__Map__OsdMap *m, const struct mon_stats *st, Cairn__Mon__DfReply *r);
void mon_df_reply_fini(Cairn__Mon__DfReply *r);

/*
 * The health `clusterctl health` shows (map and monmap read from etcd,
 * usage from env->stats). Blocking (a worker's job). \return 0, or an
 * error with err saying what failed; *h then needs mon_health_free.
 */
struct mon_health;
int mon_health_read(const struct mon_cmd_env *env, struct mon_health *h, char *err, size_t errlen);

#endif
