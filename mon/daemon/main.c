/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cairn-mon: a monitor. The options, config checks, --mkfs and the cluster
 * key check, then the service (mon/server.h; the leader's logic is
 * mon/leader.h) on one reactor until SIGTERM/SIGINT. See
 * docs/design/0003-monitors.md.
 */
#include "mon/server.h"
#include "mon/auth.h"
#include "cm/daemon.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(mon);

extern char **environ;

struct mon_conf {
	struct cm_daemon_conf d;
	char *id;
	char *fsid;
	char *mon_host;
	char *listen;
	struct cm_etcd_conf etcd;
	char *metrics_addr;
	bool mkfs;
	uint64_t osd_grace_ms;
	uint64_t report_grace_ms;
	uint64_t down_out_ms;
	uint64_t min_reporters;
	uint64_t lease_ttl_ms;
	uint64_t tick_ms;
};

static const struct cm_opt g_mon_opts[] = {
	CM_DAEMON_OPTS(struct mon_conf, d, ""),
	CM_OPT("id", CM_OPT_STR, "", 0, 0, 0, struct mon_conf, id,
	       "this mon's name (its mon_host entry and [mon.ID] section)"),
	CM_OPT("fsid", CM_OPT_STR, "", 0, 0, 0, struct mon_conf, fsid,
	       "the cluster's id (its keys in etcd are under /cairn/FSID/)"),
	CM_OPT("mon_host", CM_OPT_STR, "", 0, 0, 0, struct mon_conf, mon_host,
	       "every mon: NAME=IP:PORT,..."),
	CM_OPT("listen", CM_OPT_STR, "", 0, 0, 0, struct mon_conf, listen,
	       "messenger address (default: this mon's mon_host entry)"),
	CM_ETCD_CONF_OPTS(struct mon_conf, etcd, "http://127.0.0.1:2379"),
	CM_OPT("metrics_addr", CM_OPT_STR, "", 0, 0, 0, struct mon_conf, metrics_addr,
	       "where /metrics is served (Prometheus text); empty: off"),
	CM_OPT("mkfs", CM_OPT_BOOL, "false", 0, 0, 0, struct mon_conf, mkfs,
	       "create the cluster (key check and first map) in etcd if absent, then exit"),
	CM_OPT("osd_grace", CM_OPT_DURATION, "20s", 100, 3600000, 0, struct mon_conf, osd_grace_ms,
	       "an OSD silent (no beacon) or reported failed this long is down"),
	CM_OPT("osd_report_grace", CM_OPT_DURATION, "0", 0, 3600000, 0, struct mon_conf,
	       report_grace_ms,
	       "a failure peers report (after their own heartbeat grace) counts once it is this "
	       "old; 0: at once (the reporter waited its own heartbeat grace)"),
	CM_OPT("mon_osd_down_out_interval", CM_OPT_DURATION, "600s", 100, 604800000, 0,
	       struct mon_conf, down_out_ms, "a down OSD is marked out after this long"),
	CM_OPT("mon_osd_min_down_reporters", CM_OPT_UINT, "2", 1, 100, 0, struct mon_conf,
	       min_reporters,
	       "OSDs on distinct hosts that must report a peer failed to mark it down (at most the other hosts with an up OSD)"),
	CM_OPT("mon_lease_ttl", CM_OPT_DURATION, "10s", 2000, 600000, 0, struct mon_conf,
	       lease_ttl_ms, "etcd lease of a mon: leadership moves this long after it dies"),
	CM_OPT("mon_tick", CM_OPT_DURATION, "1s", 50, 60000, 0, struct mon_conf, tick_ms,
	       "how often a mon renews its lease and the leader checks OSDs"),
	{ 0 },
};

/* ---------- start-up ---------- */

static int
pre_scan_id(int argc, char **argv, const char **id)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--id") == 0 && i + 1 < argc)
			*id = argv[i + 1];
		else if (strncmp(argv[i], "--id=", 5) == 0)
			*id = argv[i] + 5;
	}
	if (!*id)
		*id = getenv("CAIRN_ID");
	return 0;
}

/* Refuse what would go wrong later; the address to listen on into addr. */
static int
check_conf(struct mon_conf *c, char *addr, size_t addrlen)
{
	struct mon_addr *hosts = NULL;
	size_t n = 0;
	char err[256];
	const char *mine = NULL;

	if (!c->d.cluster_key[0]) {
		fprintf(stderr, "cairn-mon: cluster_key is not set\n");
		return -CM_ECONF;
	}
	if (!c->fsid[0] || strchr(c->fsid, '/') || strlen(c->fsid) > 64) {
		fprintf(stderr, "cairn-mon: fsid is %s\n", c->fsid[0] ? "malformed" : "not set");
		return -CM_ECONF;
	}
	if (!c->id[0] || strchr(c->id, '/') || strchr(c->id, ' ') || strlen(c->id) > 63) {
		fprintf(stderr, "cairn-mon: --id NAME is %s\n", c->id[0] ? "malformed" : "missing");
		return -CM_ECONF;
	}
	if (c->mon_host[0]) {
		if (mon_parse_hosts(c->mon_host, &hosts, &n, err, sizeof(err))) {
			fprintf(stderr, "cairn-mon: %s\n", err);
			return -CM_ECONF;
		}
		for (size_t i = 0; i < n; i++)
			if (strcmp(hosts[i].name, c->id) == 0)
				mine = hosts[i].addr;
	}
	if (c->listen[0])
		mine = c->listen;
	if (!mine && !c->mkfs) {
		fprintf(stderr,
			"cairn-mon: no address for mon.%s: add it to mon_host or set listen\n",
			c->id);
		free(hosts);
		return -CM_ECONF;
	}
	snprintf(addr, addrlen, "%s", mine ? mine : "");
	free(hosts);
	return 0;
}

/*
 * etcd did not answer at startup: a mon waits for it (logging why) rather
 * than exit, as etcd may be restarting or still coming up. \return true to
 * try again after a second, false when SIGTERM/SIGINT came meanwhile (the
 * signals are blocked: they wait for us here).
 */
static bool g_stopped; /* a signal came while waiting for etcd */

static bool
etcd_wait(const sigset_t *mask, const char *what, unsigned *tries)
{
	struct timespec ts = { 1, 0 };
	int sig;

	if (++*tries == 1 || *tries % 30 == 0)
		fprintf(stderr, "cairn-mon: %s: etcd does not answer; waiting for it (try %u)\n",
			what, *tries);
	sig = sigtimedwait(mask, NULL, &ts);
	g_stopped = sig == SIGTERM || sig == SIGINT;
	return !g_stopped;
}

/* Create the cluster in etcd (--mkfs), or check it exists with our key. \return the exit status. */
static int
mkfs_or_verify(struct mon_conf *c, struct cm_etcd *e, const sigset_t *mask)
{
	unsigned tries = 0;
	int rc;

	if (c->mkfs) {
		rc = mon_cluster_create(e, c->fsid, c->d.cluster_key);
		if (rc < 0) {
			fprintf(stderr, "cairn-mon: mkfs: %s\n",
				rc == -EACCES ? "the cluster exists with another cluster_key"
					      : cm_strerror(rc));
			return 1;
		}
		printf("cairn-mon: cluster %s %s in etcd %s\n", c->fsid,
		       rc == 0 ? "created" : "already exists", c->etcd.endpoints);
		return 0;
	}
	while ((rc = mon_cluster_verify(e, c->fsid, c->d.cluster_key)) == -CM_EETCD)
		if (!etcd_wait(mask, "checking the cluster", &tries))
			return 0;
	if (rc) {
		fprintf(stderr, "cairn-mon: cluster %s: %s\n", c->fsid,
			rc == -ENOENT   ? "does not exist in etcd (run cairn-mon --mkfs first)"
			: rc == -EACCES ? "cluster_key does not match the cluster's"
					: cm_strerror(rc));
		return 1;
	}
	/* A cluster made before identities gains its built-in entities. */
	while ((rc = mon_auth_builtin(e, c->fsid, c->d.cluster_key)) == -CM_EETCD)
		if (!etcd_wait(mask, "making the built-in entities", &tries))
			return 0;
	if (rc) {
		fprintf(stderr, "cairn-mon: the built-in entities: %s\n", cm_strerror(rc));
		return 1;
	}
	return 0;
}

static void
server_opts(const struct mon_conf *c, const char *addr, struct cm_etcd *e,
	    struct mon_server_opts *so)
{
	mon_server_opts_init(so, sizeof(*so));
	so->id = c->id;
	so->fsid = c->fsid;
	so->addr = addr;
	so->etcd = e;
	cm_daemon_msgr_opts(&c->d, &so->msgr);
	so->metrics_addr = c->metrics_addr;
	so->leader.osd_grace_ms = c->osd_grace_ms;
	so->leader.report_grace_ms = c->report_grace_ms;
	so->leader.down_out_ms = c->down_out_ms;
	so->leader.min_reporters = (unsigned)c->min_reporters;
	so->leader.lease_ttl_ms = c->lease_ttl_ms;
	so->tick_ms = c->tick_ms;
	so->cluster_key = c->d.cluster_key;
}

int
main(int argc, char **argv)
{
	struct mon_conf cfg = { 0 };
	const char *id = NULL;
	struct cm_conf conf = {
		.table = g_mon_opts, .base = &cfg, .section = "mon", .env_prefix = "CAIRN_"
	};
	struct cm_etcd *e = NULL;
	struct cm_etcd_opts eo;
	struct cm_reactor *r = NULL;
	struct cm_daemon_signals *sigs = NULL;
	struct mon_server *srv = NULL;
	struct mon_server_opts so;
	char addr[128];
	sigset_t mask;
	int rc, first, status = 2;
	unsigned tries = 0;

	cm_daemon_block_signals(&mask);
	pre_scan_id(argc, argv, &id);
	conf.id = id;
	rc = cm_conf_init(&conf, argc, argv, environ, getenv("CAIRN_CONF"), stdout, &first);
	if (rc == 1)
		return 0;
	if (rc) {
		fprintf(stderr, "cairn-mon: %s\n", conf.err);
		goto out;
	}
	if (first < argc) {
		fprintf(stderr, "cairn-mon: unexpected argument '%s'\n", argv[first]);
		goto out;
	}
	if (check_conf(&cfg, addr, sizeof(addr)))
		goto out;
	if (!cfg.d.entity[0]) {
		size_t elen = strlen(cfg.id) + 5;
		char *entity = malloc(elen);

		if (!entity)
			goto out;
		snprintf(entity, elen, "mon.%s", cfg.id);
		free(cfg.d.entity);
		cfg.d.entity = entity;
	}
	if (cm_daemon_setup_logging(&cfg.d))
		goto out;
	status = 1;
	cm_etcd_opts_init(&eo, sizeof(eo));
	cm_etcd_opts_from_conf(&eo, &cfg.etcd);
	eo.timeout_ms = (unsigned)CM_MAX(cfg.lease_ttl_ms / 2, (uint64_t)2000);
	rc = cm_etcd_create(&eo, &e);
	if (rc) {
		fprintf(stderr, "cairn-mon: etcd client: %s\n", cm_strerror(rc));
		goto out;
	}
	status = mkfs_or_verify(&cfg, e, &mask);
	if (status || cfg.mkfs || g_stopped)
		goto out;
	status = 1;
	rc = cm_daemon_reactor_create(&cfg.d, "mon", &r);
	if (rc) {
		fprintf(stderr, "cairn-mon: %s\n", cm_strerror(rc));
		goto out;
	}
	server_opts(&cfg, addr, e, &so);
	while ((rc = mon_server_create(r, &so, &srv)) == -CM_EETCD)
		if (!etcd_wait(&mask, "reading the map", &tries)) {
			status = 0;
			goto out;
		}
	if (rc) {
		fprintf(stderr, "cairn-mon: starting mon.%s on %s: %s\n", cfg.id, addr,
			cm_strerror(rc));
		goto out;
	}
	if (cm_daemon_signals_watch(r, &mask, &sigs)) {
		fprintf(stderr, "cairn-mon: signalfd failed\n");
		goto out;
	}
	rc = cm_daemon_write_pid(cfg.d.pid_file);
	if (rc) {
		fprintf(stderr, "cairn-mon: pid_file %s: %s\n", cfg.d.pid_file, cm_strerror(rc));
		goto out;
	}
	CM_NOTICE("mon.%s listening on %s port=%u fsid=%s epoch=%" PRIu64 " etcd=%s", cfg.id, addr,
		  mon_server_port(srv), cfg.fsid, mon_server_epoch(srv), cfg.etcd.endpoints);
	status = cm_reactor_run(r) ? 1 : 0;
	if (cfg.d.pid_file[0])
		unlink(cfg.d.pid_file);
out:
	mon_server_destroy(srv);
	cm_daemon_signals_stop(sigs);
	cm_reactor_destroy(r);
	cm_etcd_destroy(e);
	cm_conf_free(&conf);
	return status;
}
