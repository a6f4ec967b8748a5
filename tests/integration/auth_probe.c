/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an OSD does with a session's identity (auth_test.sh): gets the
 * ticket of the entity the conf names (name, keyring) from a monitor, then
 * connects to one OSD (its address from the map) and
 *   peer      sends a PG_QUERY (a peer message) then a stat op; prints
 *             {"connected":1,"stat_rc":RC} (the query must be dropped unless
 *             the entity may act as an OSD)
 *   misname   goes by another entity's name with this entity's ticket
 *   forge     sends the ticket with one byte changed
 *   stale     sends the ticket with a generation the OSD has no secret of
 * and prints {"connected":0|1,"event":"...","rc":RC}.
 *
 *   auth_probe MODE -c CONF --osd-addr ADDR --pool ID
 */
#include "mon/auth.h"
#include "mon/client_sync.h"
#include "mon/osdmap.h"
#include "osd/proto.h"
#include "cm/auth.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/reactor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static struct {
	struct cm_cred cred;
	bool up, failed, got;
	int fail_rc, stat_rc;
	uint64_t want_tid;
} g;

struct probe_conf {
	struct cm_daemon_conf d;
	char *mon_host;
};

static const struct cm_opt g_popts[] = {
	CM_DAEMON_OPTS(struct probe_conf, d, "client"),
	CM_OPT("mon_host", CM_OPT_STR, "", 0, 0, 0, struct probe_conf, mon_host, "the monitors"),
	{ 0 },
};

static int
cred_fn(void *arg, struct cm_conn *c, unsigned kind, struct cm_cred *out)
{
	(void)arg;
	(void)c;
	(void)kind;
	*out = g.cred;
	return 0;
}

static void
on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	(void)arg;
	(void)c;
	if (m->type == OSD_MSG_OP_REPLY && m->tid == g.want_tid) {
		Cairn__Osd__OsdOpReply *r = (Cairn__Osd__OsdOpReply *)cm_msg_unpack_front(
			m, &cairn__osd__osd_op_reply__descriptor);

		g.stat_rc = r ? r->rc : -EBADMSG;
		if (r)
			cairn__osd__osd_op_reply__free_unpacked(r, NULL);
		g.got = true;
	}
	cm_msg_destroy(m);
}

static void
on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	(void)arg;
	(void)c;
	if (ev == CM_CONN_UP)
		g.up = true;
	else if (ev == CM_CONN_FAILED) {
		g.failed = true;
		g.fail_rc = rc;
	}
}

static bool
run_until(struct cm_reactor *r, const bool *a, const bool *b, unsigned ms)
{
	uint64_t end = cm_now_ms() + ms;

	while (!*a && !(b && *b) && cm_now_ms() < end)
		cm_reactor_run_once(r, 50);
	return *a;
}

int
main(int argc, char **argv)
{
	struct probe_conf pc = { 0 };
	struct cm_conf conf = { .table = g_popts, .base = &pc, .section = "client" };
	const char *mode = argc > 1 ? argv[1] : "", *addr = NULL, *conf_path = NULL;
	Cairn__Mon__AuthTicketRequest tq = CAIRN__MON__AUTH_TICKET_REQUEST__INIT;
	Cairn__Mon__AuthTicketReply *tr = NULL;
	struct cm_reactor_opts ro;
	struct cm_reactor *r;
	struct cm_msgr_opts mo;
	struct cm_msgr *m;
	struct cm_conn *c;
	struct mon_sync *s;
	char name[CM_HS_ENTITY_MAX], err[256], entity[CM_HS_ENTITY_MAX + 8];
	uint8_t key[CM_AUTH_KEY_LEN];
	int64_t pool = -1;
	int first;

	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-c"))
			conf_path = argv[i + 1];
		else if (!strcmp(argv[i], "--osd-addr"))
			addr = argv[i + 1];
		else if (!strcmp(argv[i], "--pool"))
			pool = strtoll(argv[i + 1], NULL, 10);
	}
	if (!conf_path || !addr || pool < 0) {
		fprintf(stderr, "usage: auth_probe peer|misname|forge|stale -c CONF --osd-addr "
				"ADDR --pool ID\n");
		return 2;
	}
	{
		char *cargv[] = { "auth_probe", NULL };

		if (cm_conf_init(&conf, 1, cargv, environ, conf_path, stderr, &first)) {
			fprintf(stderr, "auth_probe: %s\n", conf.err);
			return 2;
		}
	}
	cm_log_set_level(CM_LOG_ERR);
	if (cm_daemon_identity(&pc.d, CM_AUTH_ADMIN, name, key, err, sizeof(err)) ||
	    mon_sync_open(&pc.d, pc.mon_host, 10000, &s, err, sizeof(err))) {
		fprintf(stderr, "auth_probe: %s\n", err);
		cm_conf_free(&conf);
		return 1;
	}
	if (mon_sync_call(s, MON_MSG_AUTH_TICKET_REQUEST, &tq.base, false,
			  MON_MSG_AUTH_TICKET_REPLY, &cairn__mon__auth_ticket_reply__descriptor,
			  (ProtobufCMessage **)&tr) ||
	    tr->rc || tr->ticket.len > sizeof(g.cred.ticket) ||
	    mon_ticket_session_key(key, name, tr, g.cred.key)) {
		fprintf(stderr, "auth_probe: no ticket for %s\n", name);
		return 1;
	}
	mon_sync_close(s);
	snprintf(g.cred.auth_name, sizeof(g.cred.auth_name), "%s", name);
	memcpy(g.cred.ticket, tr->ticket.data, tr->ticket.len);
	g.cred.ticket_len = tr->ticket.len;
	g.cred.ticket_gen = tr->gen;
	cairn__mon__auth_ticket_reply__free_unpacked(tr, NULL);
	snprintf(entity, sizeof(entity), "%s.probe", name);
	if (!strcmp(mode, "misname")) /* this entity's ticket, another's name */
		snprintf(g.cred.auth_name, sizeof(g.cred.auth_name), "client.admin");
	if (!strcmp(mode, "misname"))
		snprintf(entity, sizeof(entity), "client.admin.probe");
	if (!strcmp(mode, "forge"))
		g.cred.ticket[g.cred.ticket_len / 2] ^= 1;
	if (!strcmp(mode, "stale"))
		g.cred.ticket_gen += 1000;

	cm_reactor_opts_init(&ro, sizeof(ro));
	if (cm_reactor_create(&ro, &r))
		return 1;
	cm_msgr_opts_init(&mo, sizeof(mo));
	mo.entity = entity;
	mo.auth.cred_fn = cred_fn;
	mo.ops = (struct cm_msgr_ops){ .on_msg = on_msg, .on_event = on_event };
	if (cm_msgr_create(r, &mo, &m) || cm_msgr_connect(m, addr, false, &c))
		return 1;
	if (!run_until(r, &g.up, &g.failed, 5000)) {
		printf("{\"connected\":0,\"event\":\"%s\",\"rc\":%d}\n",
		       g.failed ? "failed" : "timeout", g.fail_rc);
		goto out;
	}
	{
		Cairn__Osd__PgQuery pq = CAIRN__OSD__PG_QUERY__INIT;
		Cairn__Osd__OsdOp q = CAIRN__OSD__OSD_OP__INIT;
		Cairn__Osd__SubOp so = CAIRN__OSD__SUB_OP__INIT, *sp = &so;

		pq.pool = pool;
		pq.seed = 0;
		pq.epoch = 1;
		cm_conn_send_pb(c, OSD_MSG_PG_QUERY, 1, &pq.base, NULL);
		so.op = OSD_OP_STAT;
		q.pool = pool;
		q.oid = "probe-object";
		q.n_ops = 1;
		q.ops = &sp;
		g.want_tid = 2;
		cm_conn_send_pb(c, OSD_MSG_OP, g.want_tid, &q.base, NULL);
		run_until(r, &g.got, NULL, 5000);
	}
	printf("{\"connected\":1,\"stat_rc\":%d}\n", g.got ? g.stat_rc : 1);
out:
	cm_conn_close(c);
	cm_conn_put(c);
	cm_msgr_destroy(m);
	cm_reactor_destroy(r);
	cm_conf_free(&conf);
	return 0;
}
