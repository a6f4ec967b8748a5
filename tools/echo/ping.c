/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cairn-ping: send requests to cairn-echod and report round-trip latency and
 * throughput, checking every reply's bytes. Reads the same cairn.conf.
 */
#include "echo_common.h"
#include "cm/crc32c.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/metrics.h"

CM_LOG_SUBSYS(ping);

extern char **environ;

struct ping {
	struct cm_conn *c;
	struct cm_buf *payload;
	uint32_t crc;
	uint64_t count, sent, done, bad;
	uint64_t *t_sent;
	unsigned inflight;
	struct cm_histogram lat;
	bool up, failed;
	int fail_rc;
};

static void
send_one(struct ping *p)
{
	struct cm_msg *m;

	if (p->sent >= p->count || cm_msg_create(ECHO_T_REQ, p->sent, &m))
		return;
	cm_sgl_append(&m->data, p->payload, 0, p->payload->len);
	p->t_sent[p->sent % 4096] = cm_now_ns();
	if (cm_conn_send(p->c, m)) {
		cm_msg_destroy(m);
		return;
	}
	p->sent++;
}

static void
on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct ping *p = arg;

	(void)c;
	cm_histogram_observe_ns(&p->lat, cm_now_ns() - p->t_sent[m->tid % 4096]);
	if (m->type != ECHO_T_REP || m->data.len != p->payload->len ||
	    cm_sgl_crc32c(&m->data, 0) != p->crc)
		p->bad++;
	p->done++;
	cm_msg_destroy(m);
	send_one(p);
}

static void
on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct ping *p = arg;

	(void)c;
	if (ev == CM_CONN_UP) {
		p->up = true;
		for (unsigned i = 0; i < p->inflight; i++)
			send_one(p);
	} else if (ev == CM_CONN_FAILED) {
		p->failed = true;
		p->fail_rc = rc;
	}
}

int
main(int argc, char **argv)
{
	struct echo_conf cfg = { 0 };
	struct cm_conf conf = {
		.table = g_echo_opts, .base = &cfg, .section = "ping", .env_prefix = "CAIRN_"
	};
	struct ping p = { 0 };
	struct cm_reactor *r = NULL;
	struct cm_msgr *m = NULL;
	struct cm_msgr_opts mo;
	struct cm_msgr_ops ops = { .on_msg = on_msg, .on_event = on_event };
	uint64_t t0, deadline;
	double secs;
	int rc, status = 2;

	rc = cm_conf_init(&conf, argc, argv, environ, getenv("CAIRN_CONF"), stdout, NULL);
	if (rc == 1) {
		status = 0;
		goto out;
	}
	if (rc) {
		fprintf(stderr, "cairn-ping: %s\n", conf.err);
		goto out;
	}
	if (!cfg.d.cluster_key[0]) {
		fprintf(stderr, "cairn-ping: cluster_key is not set (-c run/cairn.conf?)\n");
		goto out;
	}
	free(cfg.d.entity);
	cfg.d.entity = strdup("client.ping");
	if (!cfg.d.entity || cm_daemon_setup_logging(&cfg.d) ||
	    cm_daemon_client_reactor_create(&cfg.d, "ping", &r))
		goto out;
	status = 1;
	p.count = cfg.count;
	p.inflight = (unsigned)cfg.inflight;
	p.t_sent = calloc(4096, sizeof(*p.t_sent));
	if (!p.t_sent || cm_buf_alloc(cfg.size, &p.payload))
		goto out;
	for (size_t i = 0; i < cfg.size; i++)
		p.payload->data[i] = (uint8_t)(i * 131 + 7);
	p.crc = cm_crc32c(0, p.payload->data, cfg.size);
	cm_daemon_msgr_opts(&cfg.d, &mo);
	mo.ops = ops;
	mo.ops_arg = &p;
	if (cm_msgr_create(r, &mo, &m) || cm_msgr_connect(m, cfg.listen, true, &p.c)) {
		fprintf(stderr, "cairn-ping: cannot connect to %s\n", cfg.listen);
		goto out;
	}
	deadline = cm_now_ms() + CM_MIN(cfg.d.timeout_ms, (uint64_t)10000);
	while (!p.up && !p.failed && cm_now_ms() < deadline)
		cm_reactor_run_once(r, 50);
	if (!p.up) {
		fprintf(stderr, "cairn-ping: no session with %s: %s\n", cfg.listen,
			p.failed ? cm_strerror(p.fail_rc) : "timed out (is cairn-echod running?)");
		goto out;
	}
	t0 = cm_now_ns();
	while (p.done < p.count && !p.failed)
		cm_reactor_run_once(r, 100);
	secs = (double)(cm_now_ns() - t0) / 1e9;
	printf("cairn-ping: %" PRIu64 " requests of %" PRIu64 " bytes to %s, %u in flight\n",
	       p.done, cfg.size, cfg.listen, p.inflight);
	printf("  %.0f requests/s, %.1f MiB/s each way, rtt p50 %.1f us, p99 %.1f us, %" PRIu64
	       " bad replies\n",
	       (double)p.done / secs, (double)p.done * (double)cfg.size / secs / 1048576.0,
	       (double)cm_histogram_quantile_ns(&p.lat, 0.5) / 1000.0,
	       (double)cm_histogram_quantile_ns(&p.lat, 0.99) / 1000.0, p.bad);
	status = p.bad ? 1 : 0;
out:
	if (p.c) {
		cm_conn_close(p.c);
		cm_conn_put(p.c);
	}
	cm_msgr_destroy(m);
	cm_reactor_destroy(r);
	cm_buf_put(p.payload);
	free(p.t_sent);
	cm_conf_free(&conf);
	return status;
}
