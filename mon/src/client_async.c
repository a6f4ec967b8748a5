/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Asynchronous monitor client; see mon/client_async.h.
 */
#include "mon/client_async.h"
#include "mon/incremental.h"
#include "cm/daemon.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(monc);

#define TICK_MS 250

struct mon_async {
	struct cm_reactor *r;
	struct cm_msgr *msgr;
	struct mon_async_opts o;
	struct mon_addr *mons;
	size_t nmons, next;
	/* the session with one mon (maps, commands, and leader messages until a leader is known) */
	struct cm_conn *c;
	bool up;
	uint64_t hunt_since_ms; /* connected (or asked for a map) at; 0 when settled */
	/* the leader, once a NOT_LEADER named it */
	struct cm_conn *lc;
	char leader_addr[128];
	/* the last leader message, resent once when it comes back NOT_LEADER */
	uint16_t last_type;
	uint64_t last_tid;
	uint8_t *last_front;
	size_t last_len;
	Cairn__Map__OsdMap *map;
	struct cm_timer tick;
	bool want_full;
};

static void
conn_drop(struct cm_conn **cp)
{
	if (!*cp)
		return;
	cm_conn_close(*cp);
	cm_conn_put(*cp);
	*cp = NULL;
}

static void
request_map(struct mon_async *mc)
{
	Cairn__Mon__MapRequest req = CAIRN__MON__MAP_REQUEST__INIT;

	if (!mc->c || !mc->up)
		return;
	req.have_epoch = mc->map && !mc->want_full ? mc->map->epoch : 0;
	req.subscribe = mc->o.subscribe;
	if (cm_conn_send_pb(mc->c, MON_MSG_MAP_REQUEST, 0, &req.base, NULL) == 0 && !mc->map)
		mc->hunt_since_ms = cm_now_ms();
}

static void
hunt(struct mon_async *mc)
{
	const char *addr = mc->mons[mc->next].addr;

	conn_drop(&mc->c);
	mc->up = false;
	mc->next = (mc->next + 1) % mc->nmons;
	mc->hunt_since_ms = cm_now_ms();
	if (cm_msgr_connect_kind(mc->msgr, addr, false, CM_CRED_MON, &mc->c))
		mc->c = NULL;
	CM_DEBUG("hunting: trying mon at %s", addr);
}

static void
on_tick(struct cm_timer *t)
{
	struct mon_async *mc = t->arg;
	uint64_t now = cm_now_ms();

	if (!mc->c || (mc->hunt_since_ms && now - mc->hunt_since_ms > mc->o.hunt_ms))
		hunt(mc);
	cm_timer_arm(mc->r, &mc->tick, TICK_MS);
}

int
mon_async_create(struct cm_reactor *r, struct cm_msgr *msgr, const struct mon_async_opts *o,
		 struct mon_async **mcp, char *err, size_t errlen)
{
	struct mon_async *mc = calloc(1, sizeof(*mc));
	int rc;

	if (!mc)
		return -ENOMEM;
	rc = mon_parse_hosts(o->mon_host, &mc->mons, &mc->nmons, err, errlen);
	if (rc) {
		free(mc);
		return rc;
	}
	mc->r = r;
	mc->msgr = msgr;
	mc->o = *o;
	mc->o.mon_host = NULL;
	if (!mc->o.hunt_ms)
		mc->o.hunt_ms = 3000;
	mc->next = (size_t)(cm_now_ns() / 1000) % mc->nmons;
	cm_timer_init(&mc->tick, on_tick, mc);
	hunt(mc);
	cm_timer_arm(r, &mc->tick, TICK_MS);
	*mcp = mc;
	return 0;
}

static void set_map(struct mon_async *mc, Cairn__Map__OsdMap *m);

int
mon_async_seed_map(struct mon_async *mc, const uint8_t *buf, size_t len)
{
	Cairn__Map__OsdMap *m = cairn__map__osd_map__unpack(NULL, len, buf);

	if (!m)
		return -EINVAL;
	if (mc->map && mc->map->epoch >= m->epoch) {
		cairn__map__osd_map__free_unpacked(m, NULL);
		return 0;
	}
	set_map(mc, m);
	return 0;
}

void
mon_async_destroy(struct mon_async *mc)
{
	if (!mc)
		return;
	cm_timer_cancel(mc->r, &mc->tick);
	conn_drop(&mc->c);
	conn_drop(&mc->lc);
	if (mc->map)
		cairn__map__osd_map__free_unpacked(mc->map, NULL);
	free(mc->last_front);
	free(mc->mons);
	free(mc);
}

const Cairn__Map__OsdMap *
mon_async_map(const struct mon_async *mc)
{
	return mc->map;
}

const char *
mon_async_peer(const struct mon_async *mc)
{
	return mc->c && mc->up ? cm_conn_peer(mc->c) : "";
}

void
mon_async_want_map(struct mon_async *mc, uint64_t have)
{
	if (!mc->map || have >= mc->map->epoch)
		request_map(mc);
}

static void
set_map(struct mon_async *mc, Cairn__Map__OsdMap *m)
{
	if (mc->map)
		cairn__map__osd_map__free_unpacked(mc->map, NULL);
	mc->map = m;
	mc->want_full = false;
	mc->hunt_since_ms = 0;
	if (mc->o.ops.on_map)
		mc->o.ops.on_map(mc->o.arg, m);
}

static void
on_map_update(struct mon_async *mc, struct cm_msg *m)
{
	Cairn__Mon__MapUpdate *up = (Cairn__Mon__MapUpdate *)cm_msg_unpack_front(
		m, &cairn__mon__map_update__descriptor);

	if (!up) {
		CM_LOG_RL(CM_LOG_WARN, "undecodable map update from a mon");
		return;
	}
	if (up->full) {
		if (!mc->map || up->full->epoch > mc->map->epoch || mc->want_full) {
			Cairn__Map__OsdMap *full = up->full;

			up->full = NULL;
			set_map(mc, full);
		} else {
			mc->hunt_since_ms = 0;
		}
	}
	for (size_t i = 0; i < up->n_incs && mc->map; i++) {
		Cairn__Map__OsdMap *nm;
		int rc;

		if (up->incs[i]->epoch <= mc->map->epoch)
			continue;
		rc = mon_map_apply(mc->map, up->incs[i], &nm);
		if (rc) {
			CM_NOTICE("map epoch %" PRIu64 " does not follow %" PRIu64
				  " (%s): asking for "
				  "the full map",
				  up->incs[i]->epoch, mc->map->epoch, cm_strerror(rc));
			mc->want_full = true;
			request_map(mc);
			break;
		}
		set_map(mc, nm);
	}
	if (!up->full && !up->n_incs)
		mc->hunt_since_ms = 0;
	cairn__mon__map_update__free_unpacked(up, NULL);
}

static int
resend_last(struct mon_async *mc)
{
	struct cm_conn *c = mc->lc && cm_conn_is_up(mc->lc) ? mc->lc : mc->c;
	struct cm_msg *m;
	struct cm_buf *b;
	int rc;

	if (!c || !mc->last_front)
		return -ENOTCONN;
	rc = cm_msg_create(mc->last_type, mc->last_tid, &m);
	if (rc)
		return rc;
	rc = cm_buf_alloc(mc->last_len, &b);
	if (!rc) {
		memcpy(b->data, mc->last_front, mc->last_len);
		rc = cm_sgl_append(&m->front, b, 0, mc->last_len);
		cm_buf_put(b);
	}
	if (!rc)
		rc = cm_conn_send(c, m);
	if (rc)
		cm_msg_destroy(m);
	return rc;
}

static void
on_not_leader(struct mon_async *mc, struct cm_msg *m)
{
	Cairn__Mon__NotLeader *nl = (Cairn__Mon__NotLeader *)cm_msg_unpack_front(
		m, &cairn__mon__not_leader__descriptor);
	bool resend = m->tid && m->tid == mc->last_tid;

	if (!nl)
		return;
	if (nl->addr[0] && strcmp(nl->addr, mc->leader_addr) != 0) {
		conn_drop(&mc->lc);
		snprintf(mc->leader_addr, sizeof(mc->leader_addr), "%s", nl->addr);
		if (cm_msgr_connect_kind(mc->msgr, mc->leader_addr, false, CM_CRED_MON, &mc->lc))
			mc->lc = NULL;
		CM_DEBUG("leader is %s at %s", nl->leader, nl->addr);
	} else if (!nl->addr[0]) {
		resend = false; /* no leader yet: the caller retries */
	}
	cairn__mon__not_leader__free_unpacked(nl, NULL);
	/* Once, at the new leader's session when it is up (else the caller's retry). */
	if (resend && mc->lc && cm_conn_is_up(mc->lc)) {
		resend_last(mc);
		free(mc->last_front);
		mc->last_front = NULL;
	}
}

bool
mon_async_handle_msg(struct mon_async *mc, struct cm_conn *c, struct cm_msg *m)
{
	if (c != mc->c && c != mc->lc)
		return false;
	switch (m->type) {
	case MON_MSG_MAP_UPDATE:
		on_map_update(mc, m);
		break;
	case MON_MSG_NOT_LEADER:
		on_not_leader(mc, m);
		break;
	default:
		if (mc->o.ops.on_reply) {
			mc->o.ops.on_reply(mc->o.arg, m);
			return true;
		}
		break;
	}
	cm_msg_destroy(m);
	return true;
}

bool
mon_async_handle_event(struct mon_async *mc, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	if (c == mc->lc) {
		if (ev == CM_CONN_UP) {
			if (mc->last_front) {
				resend_last(mc);
				free(mc->last_front);
				mc->last_front = NULL;
			}
		} else {
			CM_DEBUG("leader session %s: %s", cm_conn_event_name(ev), cm_strerror(rc));
			conn_drop(&mc->lc);
			mc->leader_addr[0] = 0;
		}
		return true;
	}
	if (c != mc->c)
		return false;
	if (ev == CM_CONN_UP) {
		mc->up = true;
		request_map(mc);
		if (!mc->o.subscribe)
			mc->hunt_since_ms = 0;
	} else {
		if (ev == CM_CONN_FAILED)
			CM_LOG_RL(CM_LOG_ERR, "mon %s refused us: %s", cm_conn_peer(c),
				  cm_strerror(rc));
		CM_DEBUG("mon session %s: %s", cm_conn_event_name(ev), cm_strerror(rc));
		conn_drop(&mc->c);
		mc->up = false;
	}
	return true;
}

int
mon_async_send(struct mon_async *mc, uint16_t type, uint64_t tid, const ProtobufCMessage *pb,
	       bool to_leader)
{
	struct cm_conn *c = mc->c && mc->up ? mc->c : NULL;
	int rc;

	if (to_leader && mc->lc && cm_conn_is_up(mc->lc))
		c = mc->lc;
	if (!c)
		return -ENOTCONN;
	if (to_leader) {
		size_t len = protobuf_c_message_get_packed_size(pb);
		uint8_t *f = malloc(len ? len : 1);

		if (!f)
			return -ENOMEM;
		protobuf_c_message_pack(pb, f);
		free(mc->last_front);
		mc->last_front = f;
		mc->last_len = len;
		mc->last_type = type;
		mc->last_tid = tid;
	}
	rc = cm_conn_send_pb(c, type, tid, pb, NULL);
	if (rc && c == mc->c) {
		conn_drop(&mc->c);
		mc->up = false;
	}
	return rc;
}
