/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cairn-osd: an OSD. It serves its PGs (libcairn-osd, osd_serve;
 * docs/design/osd.md), or runs one of its store's tools:
 *
 *   cairn-osd [-c CONF] [--id N] --mon-host H --osd-data DEV   serve
 *   cairn-osd --mkfs  --osd-data DEV [--osd-db DIR] [--fsid F] [--id N]
 *   cairn-osd --fsck [--deep] [--repair] --osd-data DEV [--osd-db DIR]
 *
 * Serving makes the store on first start when the device has none.
 */
#include "osd/osd.h"
#include "os/store.h"
#include "mon/proto.h"
#include "cm/err.h"
#include "cm/log.h"

#include <inttypes.h>

extern char **environ;

int
main(int argc, char **argv)
{
	struct osd_conf cfg = { 0 };
	struct cm_conf conf = {
		.table = osd_conf_opts, .base = &cfg, .section = "osd", .env_prefix = "CAIRN_"
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
		/* Damaged reference counts are reported by the check, not refused
		 * (nor corrected) at mount; --repair rewrites them first. */
		o.fsck_mount = true;
		o.repair = cfg.repair;
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
		       " omap keys, %" PRIu64 " shared blocks: %" PRIu64 " errors%s%s\n",
		       cfg.deep ? " --deep" : "", cfg.osd_data, rep.collections, rep.objects,
		       rep.extents, rep.blocks_used, rep.omap_keys, rep.shared_blocks, rep.errors,
		       rep.errors ? "; first: " : "", rep.errors ? rep.first_error : "");
		status = rep.errors ? 1 : 0;
	} else {
		struct mon_addr *hosts = NULL;
		size_t nh = 0;
		char err[256];

		if (!cfg.mon_host[0])
			fprintf(stderr, "cairn-osd: mon_host is not set\n");
		else if (!cfg.d.cluster_key[0])
			fprintf(stderr, "cairn-osd: cluster_key is not set\n");
		else if (mon_parse_hosts(cfg.mon_host, &hosts, &nh, err, sizeof(err)))
			fprintf(stderr, "cairn-osd: mon_host: %s\n", err);
		else
			status = osd_serve(&cfg) ? 1 : 0;
		free(hosts);
	}
out:
	cm_conf_free(&conf);
	return status;
}
