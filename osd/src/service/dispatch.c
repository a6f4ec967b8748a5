/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Messages and session events of a shard's messenger, to their handlers.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(osd);

/*
 * A client's op or listing for a PG another shard serves (one session per
 * OSD: clients send everything to its first address): handed to that
 * shard, which answers on a proxy of c. \return true when m went there.
 */
static bool
forward_to_shard(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	uint8_t small[2048], *p = small;
	uint32_t seed;
	unsigned k;
	int rc;

	if (o->nshards < 2 || cm_conn_is_proxy(c) ||
	    (m->type != OSD_MSG_OP && m->type != OSD_MSG_PG_LIST))
		return false;
	if (m->front.len > sizeof(small) && !(p = malloc(m->front.len)))
		return false; /* (handled here: it answers for a PG it does not serve) */
	rc = cm_sgl_copy_out(&m->front, 0, p, m->front.len);
	if (!rc)
		rc = osd_peek_seed(p, m->front.len, &seed);
	if (p != small)
		free(p);
	if (rc || (k = seed % o->nshards) == o->shard)
		return false;
	rc = cm_conn_forward(c, o->node->sh[k]->msgr, k, m);
	if (rc) /* (the client resends what is unanswered) */
		CM_LOG_RL(CM_LOG_WARN, "a message from %s not handed to PG shard %u: %s",
			  cm_conn_peer(c), k, cm_strerror(rc));
	return true;
}

void
osd__on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct osd *o = arg;

	if (o->stopping) {
		cm_msg_destroy(m); /* shutting down: nothing new starts */
		return;
	}
	if (o->monc && mon_async_handle_msg(o->monc, c, m))
		return;
	if (forward_to_shard(o, c, m))
		return;
	/* Peer messages only from OSDs (clients' ops and listings are checked
	 * against their caps where their pool and namespace are known). */
	if (m->type != OSD_MSG_OP && m->type != OSD_MSG_PG_LIST &&
	    !osd__auth_peer_ok(o, c, m->type)) {
		cm_msg_destroy(m);
		return;
	}
	switch (m->type) {
	case OSD_MSG_OP:
		osd__pg_handle_op(o, c, m);
		break;
	case OSD_MSG_PG_LIST:
		osd__pg_handle_list(o, c, m);
		break;
	case OSD_MSG_REP_OP:
		osd__pg_handle_repop(o, c, m);
		break;
	case OSD_MSG_REP_OP_REPLY:
		osd__pg_handle_repop_reply(o, c, m);
		break;
	case OSD_MSG_PG_QUERY:
		osd__pg_handle_query(o, c, m);
		break;
	case OSD_MSG_PG_NOTIFY:
		osd__pg_handle_notify(o, c, m);
		break;
	case OSD_MSG_PUSH:
		osd__pg_handle_push(o, c, m);
		break;
	case OSD_MSG_PUSH_REPLY:
		osd__pg_handle_push_reply(o, c, m);
		break;
	case OSD_MSG_PING:
		osd__handle_ping(o, c, m);
		break;
	case OSD_MSG_RECOVER:
		osd__pg_handle_recover(o, c, m);
		break;
	case OSD_MSG_RECOVER_DONE:
		osd__pg_handle_recover_done(o, c, m);
		break;
	case OSD_MSG_PG_LOG:
		osd__pg_handle_pg_log(o, c, m);
		break;
	case OSD_MSG_PG_LOG_ACK:
		osd__pg_handle_pg_log_ack(o, c, m);
		break;
	case OSD_MSG_PG_REMOVE:
		osd__pg_handle_pg_remove(o, c, m);
		break;
	case OSD_MSG_PG_LIST_REPLY: /* a shard's listing for an EC backfill */
		osd__rec_handle_list_reply(o, c, m);
		break;
	case OSD_MSG_EC_READ:
		osd__pg_handle_ec_read(o, c, m);
		break;
	case OSD_MSG_EC_READ_REPLY:
		osd__pg_handle_ec_read_reply(o, c, m);
		break;
	default:
		CM_LOG_RL(CM_LOG_WARN, "unexpected message type=%u from %s", m->type,
			  cm_conn_peer(c));
		cm_msg_destroy(m);
		break;
	}
}

void
osd__on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct osd *o = arg;
	int32_t id;
	unsigned k;

	if (o->monc && mon_async_handle_event(o->monc, c, ev, rc))
		return;
	if ((ev == CM_CONN_DOWN || ev == CM_CONN_RESET) && rc == -ECONNREFUSED &&
	    mon_osd_sessions_of(c, &id, &k))
		osd__peer_refused(o, id);
	if ((ev == CM_CONN_RESET || ev == CM_CONN_FAILED || ev == CM_CONN_CLOSED) &&
	    mon_osd_sessions_of(c, &id, &k)) {
		CM_INFO("session with osd.%d (shard %u): %s", id, k, cm_conn_event_name(ev));
		if (id < o->npeers && mon_osd_sessions_drop(&o->sess, c, NULL, NULL))
			osd__pg_peer_reset(o, id);
	}
}
