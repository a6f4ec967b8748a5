/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The serving OSD: store, messenger, monitor client, boot and beacons, the
 * map, sessions with peer OSDs, and message dispatch to the PGs (pg.c).
 */
#include "osd.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(osd);

#define TICK_MS       250
#define BOOT_EVERY_MS 2000

int osd_serve(struct osd_conf *cfg);

int
osd_send_pb(struct cm_conn *c, uint16_t type, uint64_t tid, const ProtobufCMessage *pb,
	    const struct cm_sgl *data)
{
	int rc;

	if (!c)
		return -ENOTCONN;
	rc = cm_conn_send_pb(c, type, tid, pb, data);
	if (rc)
		CM_LOG_RL(CM_LOG_WARN, "send type=%u to %s: %s", type, cm_conn_peer(c),
			  cm_strerror(rc));
	return rc;
}

const Cairn__Map__Pool *
osd_pool(struct osd *o, int64_t id)
{
	return o->map ? mon_pool_find_id(o->map, id) : NULL;
}

static void
peer_drop(struct osd_peer *p)
{
	if (!p->c)
		return;
	cm_conn_close(p->c);
	cm_conn_put(p->c);
	p->c = NULL;
	p->addr[0] = 0;
}

struct cm_conn *
osd_peer_conn(struct osd *o, int32_t id)
{
	const Cairn__Map__Osd *mo;
	struct osd_peer *p;

	if (id < 0 || id >= o->npeers || !o->map)
		return NULL;
	p = &o->peers[id];
	mo = mon_osd_find(o->map, id);
	if (!mo || !mo->addr[0])
		return NULL;
	if (p->c && (strcmp(p->addr, mo->addr) != 0 || p->up_since != mo->up_since))
		peer_drop(p);
	if (!p->c) {
		if (cm_msgr_connect(o->msgr, mo->addr, true, &p->c)) {
			p->c = NULL;
			return NULL;
		}
		cm_conn_set_user(p->c, (void *)(intptr_t)(id + 1));
		snprintf(p->addr, sizeof(p->addr), "%s", mo->addr);
		p->up_since = mo->up_since;
	}
	return p->c;
}

static void
update_peers(struct osd *o)
{
	int max = 0;

	for (size_t i = 0; i < o->map->n_osds; i++)
		max = CM_MAX(max, o->map->osds[i]->id + 1);
	if (max > o->npeers) {
		struct osd_peer *np = realloc(o->peers, sizeof(*np) * (size_t)max);

		if (!np)
			return;
		memset(np + o->npeers, 0, sizeof(*np) * (size_t)(max - o->npeers));
		o->peers = np;
		o->npeers = max;
	}
	for (int i = 0; i < o->npeers; i++) {
		const Cairn__Map__Osd *mo = mon_osd_find(o->map, i);

		if (o->peers[i].c && (!mo || !mo->up || strcmp(mo->addr, o->peers[i].addr) != 0 ||
				      mo->up_since != o->peers[i].up_since)) {
			/* Whatever was in flight on the session is lost with it: the
			 * PGs and recovery jobs waiting on this peer must hear of it
			 * (the session's own close event no longer names a peer). A
			 * plan whose source restarted otherwise waited for pushes that
			 * never came (until the recovery watchdog, 30 s). */
			peer_drop(&o->peers[i]);
			pg_peer_reset(o, i);
		}
	}
}

static void
on_map(void *arg, const Cairn__Map__OsdMap *m)
{
	struct osd *o = arg;
	const Cairn__Map__Osd *me;
	char err[MON_ERRLEN];

	o->map = m;
	o->epoch = m->epoch;
	if (o->pl_ok)
		mon_placement_free(&o->pl);
	o->pl_ok = mon_placement_build(m, &o->pl, err) == 0;
	if (!o->pl_ok)
		CM_ERR("map epoch %" PRIu64 ": cannot place PGs: %s", m->epoch, err);
	update_peers(o);
	me = o->id >= 0 ? mon_osd_find(m, o->id) : NULL;
	if (o->booted && me && !me->up && m->epoch > o->up_epoch) {
		CM_NOTICE("map epoch %" PRIu64 " marks us down: booting again", m->epoch);
		o->booted = false;
		o->last_boot_ms = 0;
	}
	CM_DEBUG("map epoch %" PRIu64, m->epoch);
	if (o->pl_ok)
		pg_on_map(o);
	pg_retry_wait_map(o);
	o->last_beacon_ms = 0; /* tell the mons our PGs' states soon */
}

static void
send_boot(struct osd *o)
{
	Cairn__Mon__OsdBoot b = CAIRN__MON__OSD_BOOT__INIT;

	b.osd_id = o->id;
	b.uuid = (char *)os_uuid(o->store);
	b.addr = o->addr;
	b.host = o->cfg->host;
	b.device_class = o->cfg->device_class;
	o->last_boot_ms = cm_now_ms();
	mon_client_send(o->monc, MON_MSG_OSD_BOOT, ++o->tid, &b.base, true);
}

static void
on_reply(void *arg, struct cm_msg *m)
{
	struct osd *o = arg;

	if (m->type == MON_MSG_OSD_BOOT_REPLY) {
		Cairn__Mon__OsdBootReply *r = (Cairn__Mon__OsdBootReply *)cm_msg_unpack_front(
			m, &cairn__mon__osd_boot_reply__descriptor);

		if (r && r->rc == 0 && !o->booted) {
			if (o->id >= 0 && o->id != r->osd_id)
				CM_WARN("the mons gave us osd.%d, we were osd.%d", r->osd_id,
					o->id);
			o->id = r->osd_id;
			o->booted = true;
			o->up_epoch = r->epoch;
			CM_NOTICE("booted as osd.%d (epoch %" PRIu64 ") at %s", o->id, r->epoch,
				  o->addr);
			mon_client_want_map(o->monc, r->epoch);
			/* The map that marks us up may have come before this reply. */
			if (o->map && o->pl_ok && o->epoch >= r->epoch)
				pg_on_map(o);
		} else if (r && r->rc) {
			CM_LOG_RL(CM_LOG_WARN, "boot refused: %s (%s)", cm_strerror(r->rc),
				  r->error);
		}
		if (r)
			cairn__mon__osd_boot_reply__free_unpacked(r, NULL);
	}
	cm_msg_destroy(m);
}

/*
 * Heartbeats: ping every other up OSD each osd_heartbeat_interval; one that
 * has not answered for osd_heartbeat_grace is reported failed to the mons
 * (they mark it down once mon_osd_min_down_reporters agree), and reported
 * alive again if it answers after all.
 */
static void
send_failure(struct osd *o, int32_t target, uint64_t silent_ms, bool alive)
{
	Cairn__Mon__OsdFailure f = CAIRN__MON__OSD_FAILURE__INIT;

	f.reporter = o->id;
	f.target = target;
	f.failed_for_ms = (uint32_t)CM_MIN(silent_ms, UINT32_MAX);
	f.alive = alive;
	mon_client_send(o->monc, MON_MSG_OSD_FAILURE, 0, &f.base, true);
}

static void
heartbeat(struct osd *o, uint64_t now)
{
	Cairn__Osd__Ping p = CAIRN__OSD__PING__INIT;

	p.from = o->id;
	p.epoch = o->epoch;
	p.stamp_ns = cm_now_ns();
	for (int i = 0; i < o->npeers; i++) {
		const Cairn__Map__Osd *mo = mon_osd_find(o->map, i);
		struct osd_peer *pe = &o->peers[i];

		if (i == o->id || !mo || !mo->up)
			continue;
		if (pe->hb_up_since != mo->up_since || !pe->hb_since_ms) {
			pe->hb_up_since = mo->up_since;
			pe->hb_since_ms = now;
			pe->hb_rx_ms = 0;
			pe->hb_report_ms = 0;
		}
		osd_send_pb(osd_peer_conn(o, i), OSD_MSG_PING, 0, &p.base, NULL);
		{
			uint64_t last = CM_MAX(pe->hb_rx_ms, pe->hb_since_ms);

			if (now - last >= o->cfg->hb_grace_ms &&
			    (!pe->hb_report_ms || now - pe->hb_report_ms >= o->cfg->hb_grace_ms)) {
				CM_LOG_RL(CM_LOG_WARN,
					  "osd.%d silent for %" PRIu64 " ms: reporting it", i,
					  now - last);
				send_failure(o, i, now - last, false);
				pe->hb_report_ms = now;
			}
		}
	}
}

static void
handle_ping(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__Ping *p =
		(Cairn__Osd__Ping *)cm_msg_unpack_front(m, &cairn__osd__ping__descriptor);

	cm_msg_destroy(m);
	if (!p)
		return;
	if (!p->reply) {
		Cairn__Osd__Ping r = *p;

		r.from = o->id;
		r.reply = true;
		osd_send_pb(c, OSD_MSG_PING, 0, &r.base, NULL);
	} else if (p->from >= 0 && p->from < o->npeers && p->from != o->id) {
		struct osd_peer *pe = &o->peers[p->from];

		pe->hb_rx_ms = cm_now_ms();
		if (pe->hb_report_ms) {
			send_failure(o, p->from, 0, true);
			pe->hb_report_ms = 0;
		}
	}
	cairn__osd__ping__free_unpacked(p, NULL);
}

static void
on_tick(struct cm_timer *t)
{
	struct osd *o = t->arg;
	uint64_t now = cm_now_ms();

	if (!o->booted && now - o->last_boot_ms >= BOOT_EVERY_MS)
		send_boot(o);
	if (o->booted && now - o->last_beacon_ms >= o->cfg->beacon_ms) {
		Cairn__Mon__OsdBeacon b = CAIRN__MON__OSD_BEACON__INIT;
		Cairn__Mon__PgStat *st = NULL, **stp = NULL;
		struct os_usage u;
		size_t n = 0;

		os_get_usage(o->store, &u);
		b.osd_id = o->id;
		b.epoch = o->epoch;
		b.total_bytes = u.total_bytes;
		b.free_bytes = u.free_bytes;
		b.ops = o->ops;
		b.bytes_in = o->op_bytes_in;
		b.bytes_out = o->op_bytes_out;
		b.rec_objects = o->rec_objects;
		b.rec_bytes = o->rec_bytes;
		b.ec_reads = o->ec_reads;
		b.ec_decodes = o->ec_decodes;
		b.csum_errors = u.csum_errors;
		if (pg_stats(o, &st, &n) == 0 && (stp = calloc(n + 1, sizeof(*stp)))) {
			for (size_t i = 0; i < n; i++)
				stp[i] = &st[i];
			b.pgs = stp;
			b.n_pgs = n;
		}
		if (mon_client_send(o->monc, MON_MSG_OSD_BEACON, 0, &b.base, true) == 0)
			o->last_beacon_ms = now;
		free(stp);
		free(st);
	}
	if (o->booted && o->epoch < o->up_epoch && now - o->last_map_ask_ms >= 1000) {
		/* Booted but the map that says so has not come: ask again. */
		o->last_map_ask_ms = now;
		mon_client_want_map(o->monc, o->up_epoch);
	}
	if (o->booted && o->map && now - o->last_hb_ms >= o->cfg->hb_interval_ms) {
		if (o->last_hb_ms && now - o->last_hb_ms > o->cfg->hb_grace_ms / 2) {
			/* We were not running (stopped, starved): our peers' silence says
			 * nothing about them. Start their clocks again. */
			for (int i = 0; i < o->npeers; i++)
				o->peers[i].hb_since_ms = 0;
		}
		o->last_hb_ms = now;
		heartbeat(o, now);
	}
	if (o->booted)
		pg_tick(o);
	cm_timer_arm(o->r, &o->tick, TICK_MS);
}

static void
on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct osd *o = arg;

	if (o->monc && mon_client_handle_msg(o->monc, c, m))
		return;
	switch (m->type) {
	case OSD_MSG_OP:
		pg_handle_op(o, c, m);
		break;
	case OSD_MSG_PG_LIST:
		pg_handle_list(o, c, m);
		break;
	case OSD_MSG_REP_OP:
		pg_handle_repop(o, c, m);
		break;
	case OSD_MSG_REP_OP_REPLY:
		pg_handle_repop_reply(o, c, m);
		break;
	case OSD_MSG_PG_QUERY:
		pg_handle_query(o, c, m);
		break;
	case OSD_MSG_PG_NOTIFY:
		pg_handle_notify(o, c, m);
		break;
	case OSD_MSG_PUSH:
		pg_handle_push(o, c, m);
		break;
	case OSD_MSG_PUSH_REPLY:
		pg_handle_push_reply(o, c, m);
		break;
	case OSD_MSG_PING:
		handle_ping(o, c, m);
		break;
	case OSD_MSG_RECOVER:
		pg_handle_recover(o, c, m);
		break;
	case OSD_MSG_RECOVER_DONE:
		pg_handle_recover_done(o, c, m);
		break;
	case OSD_MSG_PG_LOG:
		pg_handle_pg_log(o, c, m);
		break;
	case OSD_MSG_PG_LOG_ACK:
		pg_handle_pg_log_ack(o, c, m);
		break;
	case OSD_MSG_PG_REMOVE:
		pg_handle_pg_remove(o, c, m);
		break;
	case OSD_MSG_PG_LIST_REPLY: /* a shard's listing for an EC backfill */
		rec_handle_list_reply(o, c, m);
		break;
	case OSD_MSG_EC_READ:
		pg_handle_ec_read(o, c, m);
		break;
	case OSD_MSG_EC_READ_REPLY:
		pg_handle_ec_read_reply(o, c, m);
		break;
	default:
		CM_LOG_RL(CM_LOG_WARN, "unexpected message type=%u from %s", m->type,
			  cm_conn_peer(c));
		cm_msg_destroy(m);
		break;
	}
}

static void
on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct osd *o = arg;
	intptr_t peer;

	if (o->monc && mon_client_handle_event(o->monc, c, ev, rc))
		return;
	peer = (intptr_t)cm_conn_user(c);
	if (peer > 0 && (ev == CM_CONN_RESET || ev == CM_CONN_FAILED || ev == CM_CONN_CLOSED)) {
		int32_t id = (int32_t)(peer - 1);

		CM_INFO("session with osd.%d: %s", id, cm_conn_event_name(ev));
		if (id < o->npeers && o->peers[id].c == c) {
			peer_drop(&o->peers[id]);
			pg_peer_reset(o, id);
		}
	}
}

static int
open_store(struct osd *o, struct os_store **sp)
{
	struct os_opts so;
	int rc;

	os_opts_init(&so, sizeof(so));
	so.path = o->cfg->osd_data;
	so.db_path = o->cfg->osd_db[0] ? o->cfg->osd_db : NULL;
	so.block_size = (uint32_t)o->cfg->block_size;
	so.deferred_max = o->cfg->deferred_max;
	so.fsid = o->cfg->fsid[0] ? o->cfg->fsid : NULL;
	so.osd_id = -1;
	rc = os_mkfs(&so);
	if (rc == 0)
		CM_NOTICE("made a new store on %s", so.path);
	else if (rc != -EEXIST) {
		CM_ERR("cannot make a store on %s: %s", so.path, cm_strerror(rc));
		return rc;
	}
	rc = os_mount(o->r, &so, sp);
	if (rc)
		CM_ERR("cannot mount %s: %s", so.path, cm_strerror(rc));
	return rc;
}

int
osd_serve(struct osd_conf *cfg)
{
	struct osd o = { .cfg = cfg, .id = -1 };
	struct cm_daemon_signals *sig = NULL;
	struct mon_client_opts mco = { 0 };
	struct cm_msgr_opts mo;
	char err[256];
	sigset_t mask;
	uint16_t port = 0;
	int rc;

	TAILQ_INIT(&o.wait_map);
	TAILQ_INIT(&o.rjobs);
	TAILQ_INIT(&o.rjobs_ready);
	TAILQ_INIT(&o.ecrs);
	if (!cfg->mon_host[0]) {
		fprintf(stderr, "cairn-osd: mon_host is not set\n");
		return 2;
	}
	if (!cfg->d.cluster_key[0]) {
		fprintf(stderr, "cairn-osd: cluster_key is not set\n");
		return 2;
	}
	cm_daemon_block_signals(&mask);
	rc = cm_daemon_reactor_create(&cfg->d, "osd", &o.r);
	if (rc)
		return 1;
	rc = open_store(&o, &o.store);
	if (rc)
		goto out;
	rc = cm_worker_pool_create((unsigned)cfg->op_threads, "osd-op", &o.wp);
	if (rc)
		goto out;
	cm_daemon_msgr_opts(&cfg->d, &mo);
	/* Unique on the wire from the first boot on (sessions are per entity). */
	snprintf(o.entity, sizeof(o.entity), "osd.%s", os_uuid(o.store));
	mo.entity = o.entity;
	mo.ops = (struct cm_msgr_ops){ .on_msg = on_msg, .on_event = on_event };
	mo.ops_arg = &o;
	mo.backoff_min_ms = 20;
	mo.backoff_max_ms = 500;
	rc = cm_msgr_create(o.r, &mo, &o.msgr);
	if (rc)
		goto out;
	rc = cm_msgr_listen(o.msgr, cfg->public_addr, &port);
	if (rc) {
		CM_ERR("cannot listen on %s: %s", cfg->public_addr, cm_strerror(rc));
		goto out;
	}
	{
		char host[96];
		const char *colon = strrchr(cfg->public_addr, ':');
		size_t hl = colon ? (size_t)(colon - cfg->public_addr) : strlen(cfg->public_addr);

		snprintf(host, sizeof(host), "%.*s", (int)hl, cfg->public_addr);
		snprintf(o.addr, sizeof(o.addr), "%s:%u", host, port);
	}
	rc = pg_load_all(&o);
	if (rc)
		goto out;
	mco.mon_host = cfg->mon_host;
	mco.subscribe = true;
	mco.ops = (struct mon_client_ops){ .on_map = on_map, .on_reply = on_reply };
	mco.arg = &o;
	rc = mon_client_create(o.r, o.msgr, &mco, &o.monc, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "cairn-osd: mon_host: %s\n", err);
		goto out;
	}
	rc = cm_daemon_write_pid(cfg->d.pid_file);
	if (rc)
		goto out;
	rc = cm_daemon_signals_watch(o.r, &mask, &sig);
	if (rc)
		goto out;
	cm_timer_init(&o.tick, on_tick, &o);
	cm_timer_arm(o.r, &o.tick, 1);
	CM_NOTICE("serving at %s, store uuid %s, %zu PGs on disk", o.addr, os_uuid(o.store),
		  o.npgs);
	rc = cm_reactor_run(o.r);
	CM_NOTICE("stopping");
	cm_timer_cancel(o.r, &o.tick);
out:
	cm_daemon_signals_stop(sig);
	mon_client_destroy(o.monc);
	o.monc = NULL;
	for (int i = 0; i < o.npeers; i++)
		peer_drop(&o.peers[i]);
	pg_free_all(&o);
	ec_free_all(&o);
	if (o.msgr)
		cm_msgr_destroy(o.msgr);
	cm_worker_pool_destroy(o.wp);
	if (o.store)
		os_umount(o.store);
	if (o.pl_ok)
		mon_placement_free(&o.pl);
	free(o.peers);
	cm_reactor_destroy(o.r);
	return rc ? 1 : 0;
}
