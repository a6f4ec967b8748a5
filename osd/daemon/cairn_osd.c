/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cairn-osd: an OSD. Today: its object store's tools.
 *
 *   cairn-osd --mkfs  --osd-data DEV [--osd-db DIR] [--fsid F] [--id N]
 *   cairn-osd --fsck [--deep] --osd-data DEV [--osd-db DIR]
 *
 * Serving PGs (boot against the mons, replication, recovery) arrives with
 * the OSD issue; until then the daemon refuses to start without a tool flag.
 */
#include "osd/store.h"
#include "cm/daemon.h"
#include "cm/err.h"
#include "cm/log.h"

extern char **environ;

struct osd_conf {
	struct cm_daemon_conf d;
	char *id;
	char *fsid;
	char *osd_data;
	char *osd_db;
	uint64_t block_size;
	uint64_t deferred_max;
	bool mkfs, fsck, deep;
};

static const struct cm_opt g_osd_opts[] = {
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
	CM_OPT("mkfs", CM_OPT_BOOL, "false", 0, 0, 0, struct osd_conf, mkfs,
	       "make a new store on osd_data, then exit"),
	CM_OPT("fsck", CM_OPT_BOOL, "false", 0, 0, 0, struct osd_conf, fsck,
	       "check the store (extents, allocator, omap, collections), then exit"),
	CM_OPT("deep", CM_OPT_BOOL, "false", 0, 0, 0, struct osd_conf, deep,
	       "with --fsck: also read every block and verify its checksum"),
	{ 0 },
};

int
main(int argc, char **argv)
{
	struct osd_conf cfg = { 0 };
	struct cm_conf conf = {
		.table = g_osd_opts, .base = &cfg, .section = "osd", .env_prefix = "CAIRN_"
	};
	struct os_opts o;
	int rc, first, status = 2;

	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--id"))
			conf.id = argv[i + 1];
	rc = cm_conf_init(&conf, argc, argv, environ, getenv("CAIRN_CONF"), stdout, &first);
	if (rc == 1)
		return 0;
	if (rc) {
		fprintf(stderr, "cairn-osd: %s\n", conf.err);
		goto out;
	}
	if (first < argc) {
		fprintf(stderr, "cairn-osd: unexpected argument '%s'\n", argv[first]);
		goto out;
	}
	if (!cfg.d.entity[0]) {
		free(cfg.d.entity);
		cfg.d.entity = strdup("osd");
	}
	if (cm_daemon_setup_logging(&cfg.d))
		goto out;
	if (!cfg.osd_data[0]) {
		fprintf(stderr, "cairn-osd: osd_data is not set (the device or file)\n");
		goto out;
	}
	os_opts_init(&o, sizeof(o));
	o.path = cfg.osd_data;
	o.db_path = cfg.osd_db[0] ? cfg.osd_db : NULL;
	o.block_size = (uint32_t)cfg.block_size;
	o.deferred_max = cfg.deferred_max;
	o.fsid = cfg.fsid;
	o.osd_id = cfg.id[0] ? (int32_t)strtol(cfg.id, NULL, 10) : -1;
	if (cfg.mkfs) {
		rc = os_mkfs(&o);
		if (rc) {
			fprintf(stderr, "cairn-osd: mkfs %s: %s\n", cfg.osd_data,
				rc == -EEXIST ? "there is a store on it already" : cm_strerror(rc));
			status = 1;
			goto out;
		}
		printf("cairn-osd: made a store on %s\n", cfg.osd_data);
		status = 0;
	} else if (cfg.fsck) {
		struct cm_reactor *r;
		struct os_store *s;
		struct os_fsck_report rep;

		status = 1;
		if (cm_daemon_reactor_create(&cfg.d, "osd", &r))
			goto out;
		rc = os_mount(r, &o, &s);
		if (rc) {
			fprintf(stderr, "cairn-osd: cannot mount %s: %s (see the log)\n",
				cfg.osd_data, cm_strerror(rc));
			cm_reactor_destroy(r);
			goto out;
		}
		os_fsck(s, cfg.deep, &rep);
		os_umount(s);
		cm_reactor_destroy(r);
		printf("cairn-osd: fsck%s %s: %" PRIu64 " collections, %" PRIu64
		       " objects, %" PRIu64 " extents, %" PRIu64 " blocks, %" PRIu64
		       " omap keys: %" PRIu64 " errors%s%s\n",
		       cfg.deep ? " --deep" : "", cfg.osd_data, rep.collections, rep.objects,
		       rep.extents, rep.blocks_used, rep.omap_keys, rep.errors,
		       rep.errors ? "; first: " : "", rep.errors ? rep.first_error : "");
		status = rep.errors ? 1 : 0;
	} else {
		fprintf(stderr, "cairn-osd: only --mkfs and --fsck exist so far; serving PGs comes "
				"with the OSD issue\n");
	}
out:
	cm_conf_free(&conf);
	return status;
}
