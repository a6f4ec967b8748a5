/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OSD's options: one table (name, type, default, bounds, help) that the
 * daemon parses its file, environment and command line with, and that
 * anything else running osd_serve (the handler fuzz target) uses for the
 * same defaults.
 */
#include "osd/osd.h"

const struct cm_opt osd_conf_opts[] = {
	CM_DAEMON_OPTS(struct osd_conf, d, ""),
	CM_OPT("id", CM_OPT_STR, "", 0, 0, 0, struct osd_conf, id, "this OSD's id ([osd.ID])"),
	CM_OPT("fsid", CM_OPT_STR, "", 0, 0, 0, struct osd_conf, fsid, "the cluster's id"),
	CM_OPT("osd_data", CM_OPT_STR, "", 0, 0, 0, struct osd_conf, osd_data,
	       "the data device, or a preallocated file"),
	CM_OPT("osd_db", CM_OPT_STR, "", 0, 0, 0, struct osd_conf, osd_db,
	       "the metadata (RocksDB) directory; default: <osd_data>.db"),
	CM_OPT("block_size", CM_OPT_SIZE, "4K", 4096, 1048576, 0, struct osd_conf, block_size,
	       "allocation and checksum unit (mkfs)"),
	CM_OPT("deferred_max", CM_OPT_SIZE, "64K", 0, 16777216, 0, struct osd_conf, deferred_max,
	       "overwrites up to this go through the KV store (one device write + one commit)"),
	CM_OPT("osd_data_cache", CM_OPT_SIZE, "64M", 0, 1ull << 40, 0, struct osd_conf, data_cache,
	       "device blocks kept in memory for reads (0: none)"),
	CM_OPT("mon_host", CM_OPT_STR, "", 0, 0, 0, struct osd_conf, mon_host,
	       "the monitors: name=ip:port,..."),
	CM_OPT("public_addr", CM_OPT_STR, "127.0.0.1:0", 0, 0, 0, struct osd_conf, public_addr,
	       "listen here (port 0: any free port)"),
	CM_OPT("host", CM_OPT_STR, "localhost", 0, 0, 0, struct osd_conf, host,
	       "the CRUSH host bucket this OSD joins"),
	CM_OPT("device_class", CM_OPT_STR, "ssd", 0, 0, 0, struct osd_conf, device_class,
	       "CRUSH device class (ssd, nvme, hdd, ...)"),
	CM_OPT("metrics_addr", CM_OPT_STR, "", 0, 0, 0, struct osd_conf, metrics_addr,
	       "where /metrics is served (Prometheus text); empty: off"),
	CM_OPT("osd_beacon_interval", CM_OPT_DURATION, "1s", 100, 60000, 0, struct osd_conf,
	       beacon_ms, "how often to tell the leader we are alive"),
	CM_OPT("osd_pg_log_max", CM_OPT_UINT, "3000", 10, 1000000, 0, struct osd_conf, pg_log_max,
	       "PG log entries kept (duplicate detection and log-based recovery)"),
	CM_OPT("osd_pg_log_max_bytes", CM_OPT_SIZE, "4M", 1u << 20, 1ull << 40, 0, struct osd_conf,
	       pg_log_max_bytes,
	       "the most memory one PG's log holds (names up to 4 KiB make entries large): "
	       "past it the oldest entries are trimmed even below osd_pg_log_max"),
	CM_OPT("osd_op_threads", CM_OPT_UINT, "2", 1, 64, 0, struct osd_conf, op_threads,
	       "worker threads for metadata reads"),
	CM_OPT("osd_heartbeat_interval", CM_OPT_DURATION, "1s", 100, 60000, 0, struct osd_conf,
	       hb_interval_ms, "how often to ping the other up OSDs"),
	CM_OPT("osd_heartbeat_grace", CM_OPT_DURATION, "6s", 500, 600000, 0, struct osd_conf,
	       hb_grace_ms, "a peer silent this long is reported failed to the mons"),
	CM_OPT("osd_read_lease", CM_OPT_DURATION, "4s", 0, 600000, 0, struct osd_conf,
	       read_lease_ms,
	       "a primary of a replicated pool serves reads while every replica answered a "
	       "ping of the last this long (0: always; a cut-off primary may then serve "
	       "stale reads); keep it below osd_heartbeat_grace"),
	CM_OPT("osd_recovery_max_active", CM_OPT_UINT, "4", 1, 256, 0, struct osd_conf,
	       recovery_max_active,
	       "recovery/backfill pushes this OSD sends at once (client ops are not limited)"),
	CM_OPT("osd_recovery_share", CM_OPT_UINT, "30", 1, 100, 0, struct osd_conf, recovery_share,
	       "percent of this OSD's work recovery/backfill may take while clients are active "
	       "(by cost: 4 KiB + bytes per op or push; 100: no limit)"),
	CM_OPT("osd_client_message_cap", CM_OPT_SIZE, "256M", 65536, 68719476736ull, 0,
	       struct osd_conf, client_bytes_max,
	       "client op bytes (data written, data asked for) this OSD holds at once; a new op "
	       "beyond it is answered 'busy' and the client resends it shortly"),
	CM_OPT("osd_op_shards", CM_OPT_UINT, "0", 0, 32, 0, struct osd_conf, op_shards,
	       "PG shards: reactor threads, each serving the PGs whose seed % n is its index "
	       "with its own messenger and address (0: one per core the OSD may use, its "
	       "affinity mask's cores divided by osd_host_osds, 1 to 8)"),
	CM_OPT("osd_keyring", CM_OPT_STR, "", 0, 0, 0, struct osd_conf, keyring_path,
	       "this OSD's key (osd.<store uuid>), made at first start with client.bootstrap-osd "
	       "when missing; empty: <osd_data>.keyring"),
	CM_OPT("osd_bootstrap_keyring", CM_OPT_STR, "", 0, 0, 0, struct osd_conf, bootstrap_keyring,
	       "client.bootstrap-osd's keyring, for a first start (empty: its key comes from "
	       "cluster_key when set)"),
	CM_OPT("osd_host_osds", CM_OPT_UINT, "1", 1, 1024, 0, struct osd_conf, host_osds,
	       "how many OSDs share this host's cores (for osd_op_shards = 0; clusterctl up "
	       "sets it to the OSDs it starts)"),
	CM_OPT("osd_debug_split_write", CM_OPT_UINT, "0", 0, 32, 0, struct osd_conf, debug_split,
	       "testing only: an EC write to an object named split-* reaches only the shards "
	       "below this number, then this OSD exits (a crash mid-write)"),
	CM_OPT("mkfs", CM_OPT_BOOL, "false", 0, 0, 0, struct osd_conf, mkfs,
	       "make a new store on osd_data, then exit"),
	CM_OPT("fsck", CM_OPT_BOOL, "false", 0, 0, 0, struct osd_conf, fsck,
	       "check the store (extents, allocator, omap, collections), then exit"),
	CM_OPT("deep", CM_OPT_BOOL, "false", 0, 0, 0, struct osd_conf, deep,
	       "with --fsck: also read every block and verify its checksum"),
	CM_OPT("repair", CM_OPT_BOOL, "false", 0, 0, 0, struct osd_conf, repair,
	       "with --fsck: first rewrite the block reference counts from the objects' extents "
	       "(and drop undecodable ones), then check"),
	{ 0 },
};
