/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cairn-rgw: the S3 gateway daemon. Reads its options ([rgw] in
 * cairn.conf, CAIRN_* variables, --options), connects to the cluster as a
 * libcairn client, makes the pools if asked (--create-pools), then serves
 * (rgw/rgw.h) until SIGTERM/SIGINT.
 */
#include "rgw/rgw.h"
#include "cm/daemon.h"
#include "cm/err.h"
#include "cm/log.h"

#include <signal.h>

CM_LOG_SUBSYS(rgw);

extern char **environ;

struct rgw_dconf {
	struct cm_daemon_conf d;
	char *mon_host;
	char *listen;
	uint64_t threads;
	uint64_t io_threads;
	char *meta_pool;
	char *data_pool;
	char *dns_name;
	char *region;
	char *id;
	char *access_log;
	char *tls_listen, *tls_cert, *tls_key;
	uint64_t gc_delay_ms;
	uint64_t pending_grace_ms;
	uint64_t sweep_first_ms;
	uint64_t sweep_every_ms;
	uint64_t shard_retire_ms;
	uint64_t lc_day_ms;
	uint64_t index_shard_max;
	uint64_t split_pause_ms;
	bool test_resend_commits;
	uint64_t cache_ttl_ms;
	bool create_pools;
};

static const struct cm_opt g_opts[] = {
	CM_DAEMON_OPTS(struct rgw_dconf, d, ""),
	CM_OPT("mon_host", CM_OPT_STR, "", 0, 0, 0, struct rgw_dconf, mon_host,
	       "the monitors: NAME=IP:PORT,..."),
	CM_OPT("id", CM_OPT_STR, "a", 0, 0, 0, struct rgw_dconf, id,
	       "this gateway's name in the service map ([A-Za-z0-9._-])"),
	CM_OPT("rgw_listen", CM_OPT_STR, "127.0.0.1:7480", 0, 0, 0, struct rgw_dconf, listen,
	       "HTTP address (port 0: a free one, printed at start)"),
	CM_OPT("rgw_tls_listen", CM_OPT_STR, "", 0, 0, 0, struct rgw_dconf, tls_listen,
	       "HTTPS address besides rgw_listen (empty: none; port 0: a free one, printed)"),
	CM_OPT("rgw_tls_cert", CM_OPT_STR, "", 0, 0, 0, struct rgw_dconf, tls_cert,
	       "the HTTPS listener's certificate chain (PEM)"),
	CM_OPT("rgw_tls_key", CM_OPT_STR, "", 0, 0, 0, struct rgw_dconf, tls_key,
	       "the HTTPS listener's private key (PEM)"),
	CM_OPT("rgw_threads", CM_OPT_UINT, "2", 1, 64, 0, struct rgw_dconf, threads,
	       "HTTP reactors (threads)"),
	CM_OPT("rgw_io_threads", CM_OPT_UINT, "1", 1, 64, 0, struct rgw_dconf, io_threads,
	       "libcairn io threads"),
	CM_OPT("rgw_meta_pool", CM_OPT_STR, RGW_DEFAULT_META_POOL, 0, 0, 0, struct rgw_dconf,
	       meta_pool, "replicated pool of users, buckets and the bucket index"),
	CM_OPT("rgw_data_pool", CM_OPT_STR, RGW_DEFAULT_DATA_POOL, 0, 0, 0, struct rgw_dconf,
	       data_pool, "pool of the objects' bytes (may be erasure-coded)"),
	CM_OPT("rgw_dns_name", CM_OPT_STR, "", 0, 0, 0, struct rgw_dconf, dns_name,
	       "serve virtual-hosted buckets at BUCKET.<this> (empty: path style only)"),
	CM_OPT("rgw_region", CM_OPT_STR, "us-east-1", 0, 0, 0, struct rgw_dconf, region,
	       "the region new buckets are in"),
	CM_OPT("rgw_access_log", CM_OPT_STR, "", 0, 0, 0, struct rgw_dconf, access_log,
	       "append a line per request to this file (empty: none)"),
	CM_OPT("rgw_gc_delay", CM_OPT_DURATION, "60s", 1000, 86400000, 0, struct rgw_dconf,
	       gc_delay_ms, "an overwritten or deleted object's data is removed after this"),
	CM_OPT("rgw_pending_grace", CM_OPT_DURATION, "1h", 1000, 604800000, 0, struct rgw_dconf,
	       pending_grace_ms,
	       "a PUT pending this long lost its gateway: the sweep removes its data"),
	CM_OPT("rgw_sweep_first", CM_OPT_DURATION, "30s", 1000, 86400000, 0, struct rgw_dconf,
	       sweep_first_ms, "the first sweep of leftovers runs this long after start"),
	CM_OPT("rgw_sweep_every", CM_OPT_DURATION, "5min", 1000, 86400000, 0, struct rgw_dconf,
	       sweep_every_ms, "then a sweep (leftovers, lifecycle rules) runs this often"),
	CM_OPT("rgw_shard_retire_grace", CM_OPT_DURATION, "1h", 1000, 604800000, 0,
	       struct rgw_dconf, shard_retire_ms,
	       "an index shard merged away (or left by a split undone) is removed by the "
	       "sweep this long after"),
	CM_OPT("rgw_lc_day", CM_OPT_DURATION, "24h", 1000, 86400000, 0, struct rgw_dconf, lc_day_ms,
	       "how long a lifecycle rule's day is (shorter only to test rules)"),
	CM_OPT("rgw_index_shard_max", CM_OPT_UINT, "100000", 0, 100000000, 0, struct rgw_dconf,
	       index_shard_max,
	       "an index shard holding more objects splits in two, online (0: never)"),
	CM_OPT("rgw_split_pause", CM_OPT_DURATION, "0", 0, 10000, 0, struct rgw_dconf,
	       split_pause_ms,
	       "tests only: a split waits this long after its map change and after its trim "
	       "(widens the windows readers must cope with)"),
	CM_OPT("rgw_test_resend_commits", CM_OPT_BOOL, "false", 0, 0, 0, struct rgw_dconf,
	       test_resend_commits,
	       "tests only: a multipart completion sends its commit again once it applied and "
	       "takes the second answer (what a resend the OSD did not recognise gets)"),
	CM_OPT("rgw_cache_ttl", CM_OPT_DURATION, "2s", 1, 600000, 0, struct rgw_dconf, cache_ttl_ms,
	       "keys and bucket records are cached this long"),
	CM_OPT("create_pools", CM_OPT_BOOL, "false", 0, 0, 0, struct rgw_dconf, create_pools,
	       "make the metadata and data pools if they are missing"),
	{ 0 },
};

int
main(int argc, char **argv)
{
	struct rgw_dconf c = { 0 };
	struct cm_conf conf = {
		.table = g_opts, .base = &c, .section = "rgw", .env_prefix = "CAIRN_"
	};
	struct rgw_conf rc_ = { 0 };
	struct cairn_opts o;
	cairn_cluster_t *cl = NULL;
	struct rgw *g = NULL;
	sigset_t mask;
	char err[512];
	int rc, sig;

	rc = cm_conf_init(&conf, argc, argv, environ, NULL, stdout, NULL);
	if (rc == 1)
		return 0;
	if (rc) {
		fprintf(stderr, "cairn-rgw: %s\n", conf.err);
		return 2;
	}
	if (cm_daemon_setup_logging(&c.d)) {
		cm_conf_free(&conf);
		return 2;
	}
	cm_log_set_ident("rgw");
	cm_daemon_block_signals(&mask);
	cairn_opts_init(&o, sizeof(o));
	o.conf_file = conf.conf_path[0] ? conf.conf_path : NULL;
	o.mon_host = c.mon_host[0] ? c.mon_host : NULL;
	o.cluster_key = c.d.cluster_key[0] ? c.d.cluster_key : NULL;
	o.name = c.d.name[0] ? c.d.name : NULL;
	o.keyring = c.d.keyring[0] ? c.d.keyring : NULL;
	o.key = c.d.key[0] ? c.d.key : NULL;
	o.log_level = c.d.log_level;
	o.io_threads = c.io_threads;
	if ((rc = cairn_connect(&o, &cl, err, sizeof(err)))) {
		fprintf(stderr, "cairn-rgw: connect: %s\n", err);
		cm_conf_free(&conf);
		return 1;
	}
	if (c.create_pools &&
	    (rc = rgw_pools_ensure(cl, c.meta_pool, c.data_pool, err, sizeof(err)))) {
		fprintf(stderr, "cairn-rgw: %s\n", err);
		cairn_shutdown(cl);
		cm_conf_free(&conf);
		return 1;
	}
	rc_.listen = c.listen;
	rc_.tls_listen = c.tls_listen;
	rc_.tls_cert = c.tls_cert;
	rc_.tls_key = c.tls_key;
	rc_.threads = (unsigned)c.threads;
	rc_.meta_pool = c.meta_pool;
	rc_.data_pool = c.data_pool;
	rc_.dns_name = c.dns_name;
	rc_.region = c.region;
	rc_.name = c.id;
	rc_.access_log = c.access_log;
	rc_.gc_delay_s = (unsigned)((c.gc_delay_ms + 999) / 1000);
	rc_.pending_grace_s = (unsigned)((c.pending_grace_ms + 999) / 1000);
	rc_.sweep_first_s = (unsigned)((c.sweep_first_ms + 999) / 1000);
	rc_.sweep_every_s = (unsigned)((c.sweep_every_ms + 999) / 1000);
	rc_.lc_day_s = (unsigned)((c.lc_day_ms + 999) / 1000);
	rc_.shard_retire_s = (unsigned)((c.shard_retire_ms + 999) / 1000);
	rc_.cache_ttl_ms = (unsigned)c.cache_ttl_ms;
	rc_.index_shard_max = (unsigned)c.index_shard_max;
	rc_.split_pause_ms = (unsigned)c.split_pause_ms;
	rc_.test_resend_commits = c.test_resend_commits;
	if (cm_reactor_backend_parse(c.d.reactor, &rc_.backend))
		rc_.backend = CM_REACTOR_AUTO;
	if ((rc = rgw_start(cl, &rc_, &g, err, sizeof(err)))) {
		fprintf(stderr, "cairn-rgw: %s\n", err);
		cairn_shutdown(cl);
		cm_conf_free(&conf);
		return 1;
	}
	if (cm_daemon_write_pid(c.d.pid_file))
		CM_WARN("cannot write the pid file %s", c.d.pid_file);
	CM_NOTICE("serving S3 on port %u (gateway %s, pools %s and %s)", rgw_port(g), c.id,
		  c.meta_pool, c.data_pool);
	printf("cairn-rgw: serving S3 on port %u\n", rgw_port(g));
	if (rgw_tls_port(g)) {
		CM_NOTICE("serving S3 over TLS on port %u", rgw_tls_port(g));
		printf("cairn-rgw: serving S3 over TLS on port %u\n", rgw_tls_port(g));
	}
	fflush(stdout);
	do {
		sig = sigwaitinfo(&mask, NULL);
	} while (sig != SIGTERM && sig != SIGINT);
	CM_NOTICE("stopping (signal %d)", sig);
	rgw_stop(g);
	cairn_shutdown(cl);
	cm_conf_free(&conf);
	return 0;
}
