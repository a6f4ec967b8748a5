/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cairn-echod: answers every request on the messenger with a reply carrying
 * the same data, and serves /metrics. It is the foundation's daemon: option
 * table, reactor, authenticated messenger, metrics, signals, pid file — the
 * shape every Cairn daemon takes.
 */
#include "echo_common.h"
#include "cm/err.h"
#include "cm/http.h"
#include "cm/log.h"
#include "cm/metrics.h"

CM_LOG_SUBSYS(echod);

extern char **environ;

struct echod {
	struct cm_reactor *r;
	struct cm_msgr *m;
	struct cm_metrics *metrics;
	struct cm_counter *requests, *bytes;
	struct cm_gauge *sessions;
	struct cm_daemon_signals *sigs;
};

static void
on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct echod *d = arg;
	struct cm_msg *rep;

	cm_counter_add(d->requests, 1);
	cm_counter_add(d->bytes, m->data.len);
	if (cm_msg_create(ECHO_T_REP, m->tid, &rep) == 0) {
		/* The reply shares the request's buffers: no copy. */
		if (cm_sgl_move(&rep->data, &m->data) || cm_conn_send(c, rep))
			cm_msg_destroy(rep);
	}
	cm_msg_destroy(m);
}

static void
on_accept(void *arg, struct cm_conn *c)
{
	struct echod *d = arg;

	cm_gauge_add(d->sessions, 1);
	CM_INFO("session opened peer=%s", cm_conn_peer(c));
}

static void
on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct echod *d = arg;

	CM_INFO("session event=%s peer=%s rc=%d", cm_conn_event_name(ev), cm_conn_peer(c), rc);
	if (ev == CM_CONN_CLOSED || ev == CM_CONN_RESET)
		cm_gauge_add(d->sessions, -1);
}

static int
register_metrics(struct echod *d)
{
	if (cm_metrics_create(&d->metrics))
		return -ENOMEM;
	d->requests = cm_metrics_counter(d->metrics, "cairn_echo_requests_total", NULL,
					 "Requests answered.");
	d->bytes = cm_metrics_counter(d->metrics, "cairn_echo_bytes_total", NULL,
				      "Payload bytes echoed.");
	d->sessions = cm_metrics_gauge(d->metrics, "cairn_echo_sessions", NULL, "Open sessions.");
	if (cm_msgr_metrics_register(d->metrics, NULL, d->m, d->r))
		return -ENOMEM;
	return d->requests && d->bytes && d->sessions ? 0 : -ENOMEM;
}

int
main(int argc, char **argv)
{
	struct echo_conf cfg = { 0 };
	struct cm_conf conf = {
		.table = g_echo_opts, .base = &cfg, .section = "echo", .env_prefix = "CAIRN_"
	};
	struct echod d = { 0 };
	struct cm_http_metrics *http = NULL;
	struct cm_msgr_opts mo;
	struct cm_msgr_ops ops = { .on_msg = on_msg, .on_accept = on_accept, .on_event = on_event };
	sigset_t mask;
	uint16_t port = 0, mport = 0;
	int rc, first, status = 1;

	/* Before any thread exists, so that every thread inherits the mask. */
	cm_daemon_block_signals(&mask);
	rc = cm_conf_init(&conf, argc, argv, environ, getenv("CAIRN_CONF"), stdout, &first);
	if (rc == 1) {
		status = 0;
		goto out;
	}
	status = 2; /* configuration errors */
	if (rc) {
		fprintf(stderr, "cairn-echod: %s\n", conf.err);
		goto out;
	}
	if (first < argc) {
		fprintf(stderr, "cairn-echod: unexpected argument '%s'\n", argv[first]);
		goto out;
	}
	if (!cfg.d.cluster_key[0]) {
		fprintf(stderr, "cairn-echod: cluster_key is not set (in the config file's "
				"[global] section, CAIRN_CLUSTER_KEY, or --cluster-key)\n");
		goto out;
	}
	if (cm_daemon_setup_logging(&cfg.d))
		goto out;
	status = 1; /* run-time errors */
	if (conf.unknown_global)
		CM_INFO("%s (and %u more)", conf.warning, conf.unknown_global - 1);
	rc = cm_daemon_reactor_create(&cfg.d, "echod", &d.r);
	if (rc) {
		fprintf(stderr, "cairn-echod: reactor: %s\n", cm_strerror(rc));
		goto out;
	}
	cm_daemon_msgr_opts(&cfg.d, &mo);
	mo.ops = ops;
	mo.ops_arg = &d;
	rc = cm_msgr_create(d.r, &mo, &d.m);
	if (!rc)
		rc = cm_msgr_listen(d.m, cfg.listen, &port);
	if (rc) {
		fprintf(stderr, "cairn-echod: listen %s: %s\n", cfg.listen, cm_strerror(rc));
		goto out;
	}
	if (register_metrics(&d))
		goto out;
	if (cfg.metrics_addr[0]) {
		rc = cm_http_metrics_start(d.r, d.metrics, cfg.metrics_addr, &mport, &http);
		if (rc) {
			fprintf(stderr, "cairn-echod: metrics on %s: %s\n", cfg.metrics_addr,
				cm_strerror(rc));
			goto out;
		}
	}
	if (cm_daemon_signals_watch(d.r, &mask, &d.sigs)) {
		fprintf(stderr, "cairn-echod: signalfd failed\n");
		goto out;
	}
	rc = cm_daemon_write_pid(cfg.d.pid_file);
	if (rc) {
		fprintf(stderr, "cairn-echod: pid_file %s: %s\n", cfg.d.pid_file, cm_strerror(rc));
		goto out;
	}
	CM_NOTICE("listening msgr=%s port=%u metrics=%s metrics_port=%u reactor=%s", cfg.listen,
		  port, cfg.metrics_addr[0] ? cfg.metrics_addr : "off", mport,
		  cm_reactor_backend_name(d.r));
	status = cm_reactor_run(d.r) ? 1 : 0;
	if (cfg.d.pid_file[0])
		unlink(cfg.d.pid_file);
out:
	cm_daemon_signals_stop(d.sigs);
	cm_http_metrics_stop(http);
	cm_msgr_destroy(d.m);
	cm_reactor_destroy(d.r);
	cm_metrics_destroy(d.metrics);
	cm_conf_free(&conf);
	return status;
}
