/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Client ops on the primary: dispatch, per-object order, replies.
 */
#include "osd_int.h"
#include "crush/placement.h"
#include "crush/oname.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

static void op_start_next(struct osd_pg *pg, const char *oid);

/* ---------- replies ---------- */

void
osd__op_free(struct osd_op *op)
{
	if (!op)
		return;
	for (size_t i = 0; i < op->nres; i++) {
		Cairn__Osd__SubOpResult *r = &op->res[i];

		free(r->value.data);
		for (size_t k = 0; k < r->n_keys; k++)
			free(r->keys[k].data);
		for (size_t k = 0; k < r->n_vals; k++)
			free(r->vals[k].data);
		free(r->keys);
		free(r->vals);
		if (op->rbufs && op->rbufs[i])
			cm_buf_put(op->rbufs[i]);
	}
	for (size_t i = 0; i < op->ntx; i++) {
		free(op->tx[i].keys);
		free(op->tx[i].vals);
	}
	for (size_t i = 0; i < op->nowned; i++)
		free(op->owned[i]);
	free(op->owned);
	free(op->tx);
	free(op->txp);
	free(op->rbufs);
	free(op->rargs);
	free(op->roff);
	free(op->rlen);
	free(op->res);
	free(op->resp);
	free(op->rver);
	if (op->ecw)
		osd__ec_op_free(op);
	cm_sgl_fini(&op->rdata);
	if (op->req)
		cairn__osd__osd_op__free_unpacked(op->req, NULL);
	if (op->m)
		cm_msg_destroy(op->m);
	if (op->c)
		cm_conn_put(op->c);
	op->osd->client_bytes -= op->charged;
	free(op);
}

static void
reply_simple(struct osd *o, struct cm_conn *c, uint64_t tid, int rc)
{
	Cairn__Osd__OsdOpReply r = CAIRN__OSD__OSD_OP_REPLY__INIT;

	r.rc = rc;
	r.epoch = o->epoch;
	osd__send_pb(c, OSD_MSG_OP_REPLY, tid, &r.base, NULL);
}

void
osd__op_push_back(struct osd_op *op)
{
	if (op->c && op->m)
		reply_simple(op->osd, op->c, op->m->tid, -EAGAIN);
}

/* Reply to the client and finish op (it leaves pg->running). */
void
osd__op_reply(struct osd_op *op, const struct osd_ver *ver)
{
	Cairn__Osd__OsdOpReply r = CAIRN__OSD__OSD_OP_REPLY__INIT;
	Cairn__Osd__Version v;
	struct osd_pg *pg = op->pg;
	char oid[OSD_NAME_MAX + 1];

	r.rc = op->rc;
	r.failed_op = op->failed;
	r.epoch = op->osd->epoch;
	if (ver) {
		osd_ver_to_pb(ver, &v);
		r.ver = &v;
	}
	r.n_results = op->nres;
	r.results = op->resp;
	/* A watch change's new watcher set was for the store, not for the client. */
	if (op->nres == 1 &&
	    (op->req->ops[0]->op == OSD_OP_WATCH || op->req->ops[0]->op == OSD_OP_UNWATCH))
		op->res[0].value.len = 0;
	osd__send_pb(op->c, OSD_MSG_OP_REPLY, op->m->tid, &r.base, &op->rdata);
	op->osd->ops++;
	snprintf(oid, sizeof(oid), "%s", op->req->oid);
	if (op->queued && pg) {
		TAILQ_REMOVE(&pg->running, op, link);
		op->queued = false;
	}
	osd__op_free(op);
	if (pg) {
		op_start_next(pg, oid);
		/* A push may wait for this object (only while recovery runs here). */
		if (!TAILQ_EMPTY(&pg->osd->rjobs) && !osd__pg_object_busy(pg, oid))
			osd__rec_object_idle(pg, oid);
	}
}

void
osd__op_detach(struct osd_op *op)
{
	char oid[OSD_NAME_MAX + 1];

	snprintf(oid, sizeof(oid), "%s", op->req->oid);
	if (op->queued) {
		TAILQ_REMOVE(&op->pg->running, op, link);
		op->queued = false;
	}
	op_start_next(op->pg, oid);
}

void
osd__op_fail(struct osd_op *op, unsigned i, int rc)
{
	if (op->rc)
		return;
	op->rc = rc;
	op->failed = i;
	if (i < op->nres)
		op->res[i].rc = rc;
}

bool
osd__op_resume(struct osd_op *op)
{
	op->busy = false;
	if (op->dropped) {
		osd__op_free(op);
		return false;
	}
	return true;
}

void
osd__op_reads_done(struct osd_op *op)
{
	op->busy = false;
	if (op->dropped)
		osd__op_free(op);
	else
		osd__op_after_reads(op);
}

/* A resend of an op applied already: what it returned the first time (the
 * new values of its NUMs, from the log entry). */
static int
op_replay_outs(struct osd_op *op, const struct osd_lent *e)
{
	for (size_t n = 0; n + 2 <= e->nouts;) {
		size_t i = e->outs[n], len = e->outs[n + 1];
		ProtobufCBinaryData *v;

		if (n + 2 + len > e->nouts)
			break;
		if (i < op->nres && op->req->ops[i]->op == OSD_OP_NUM) {
			v = &op->res[i].value;
			free(v->data);
			v->data = malloc(len ? len : 1);
			if (!v->data) {
				v->len = 0;
				return -ENOMEM;
			}
			memcpy(v->data, e->outs + n + 2, len);
			v->len = len;
		}
		n += 2 + len;
	}
	return 0;
}

static void
op_exec(struct osd_op *op)
{
	/*
	 * A fenced client (on the blocklist of our map) changes nothing more,
	 * resends of ops it had applied included: whoever fenced it acts from
	 * that map on. Ops it got in before run first (per-object order), and
	 * the fencer's own ops, which carry the blocklist's epoch, wait in
	 * op_dispatch until we have that map.
	 */
	if (mon_blocklisted(op->osd->map, op->client)) {
		op->osd->ops_blocklisted++;
		CM_LOG_RL(CM_LOG_NOTICE, "%s: op from %s refused: it is blocklisted", op->pg->cid,
			  op->client);
		osd__op_fail(op, 0, -EKEYREVOKED);
		osd__op_reply(op, NULL);
		return;
	}
	if (op->req->flags & OSD_OPF_RESEND) { /* was it applied already? */
		const struct osd_lent *e = osd__log_find_req(op->pg, op->client, op->m->tid);

		if (e) {
			op->osd->dups++;
			op->rc = e->rc;
			if (op_replay_outs(op, e)) {
				osd__op_fail(op, 0, -ENOMEM);
				osd__op_reply(op, NULL);
				return;
			}
			osd__op_reply(op, &e->ver);
			return;
		}
	}
	if (op->pg->be->fast_path(op))
		return;
	if (!op->pg->be->reads_state(op)) {
		osd__op_after_reads(op);
		return;
	}
	op->w = (struct cm_work){ .fn = osd__op_meta_fn, .done = osd__op_meta_done, .arg = op };
	op->busy = true;
	if (osd__work(op->osd, &op->w)) {
		op->busy = false;
		osd__op_fail(op, 0, -ESHUTDOWN);
		osd__op_reply(op, NULL);
	}
}

/* Run the first op on oid if it waits and may run now. */
static void
op_start_next(struct osd_pg *pg, const char *oid)
{
	struct osd_op *op;

	TAILQ_FOREACH(op, &pg->running, link)
		if (strcmp(op->req->oid, oid) == 0) {
			/* Recovery may hold it (osd__rec_op_blocked asks for the object first;
			 * it may also run it from inside, when the answer is at hand). */
			if (op->blocked && pg->state == OSD_PG_ACTIVE && !pg->repop_failed &&
			    !osd__rec_op_blocked(pg, oid, op->writes)) {
				op->blocked = false;
				op_exec(op);
			}
			return;
		}
}

void
osd__op_start(struct osd_pg *pg, struct osd_op *op)
{
	struct osd_op *x;
	bool busy = false;

	TAILQ_FOREACH(x, &pg->running, link)
		if (strcmp(x->req->oid, op->req->oid) == 0) {
			busy = true;
			break;
		}
	op->pg = pg;
	if (!osd__pg_readable(pg)) {
		/* No read lease (a replica silent, or a past primary's lease not
		 * over): the client resends shortly. Writes too: one acknowledged
		 * here while a past primary may still serve reads would let that
		 * one answer older data after it (and guards read state). */
		pg->osd->reads_unleased++;
		CM_LOG_RL(CM_LOG_INFO, "%s: no read lease yet: %s told to resend", pg->cid,
			  op->client);
		osd__op_push_back(op);
		osd__op_free(op);
		return;
	}
	op->blocked = true;
	op->queued = true;
	if (op->writes && !pg->be->writable(pg)) {
		/* (EC: fewer shards than min_size) reads go on, writes wait for a
		 * new interval (or the client's timeout). */
		TAILQ_INSERT_TAIL(&pg->waiting, op, link);
		return;
	}
	TAILQ_INSERT_TAIL(&pg->running, op, link);
	if (!busy)
		op_start_next(pg, op->req->oid);
}

bool
osd__pg_object_busy(struct osd_pg *pg, const char *oid)
{
	struct osd_op *op;

	TAILQ_FOREACH(op, &pg->running, link)
		if (!op->blocked && strcmp(op->req->oid, oid) == 0)
			return true;
	return false;
}

void
osd__pg_object_ready(struct osd_pg *pg, const char *oid)
{
	if (pg->primary == pg->osd->id && pg->state == OSD_PG_ACTIVE)
		op_start_next(pg, oid);
}

/* ---------- client messages ---------- */

/* Queue op on its PG, or answer that the client must look again. */
static void
op_dispatch(struct osd *o, struct osd_op *op)
{
	const Cairn__Map__Pool *pool;
	struct osd_pg *pg;
	int rc;

	if (op->req->epoch > o->epoch) {
		op->queued = true;
		TAILQ_INSERT_TAIL(&o->wait_map, op, link);
		osd__want_map(o, o->epoch);
		return;
	}
	pg = osd__pg_find_any(o, op->req->pool, op->req->seed);
	pool = osd__pool(o, op->req->pool);
	if (!pool) {
		reply_simple(o, op->c, op->m->tid, -ENOENT);
		osd__op_free(op);
		return;
	}
	if (op->req->epoch < o->epoch) {
		/* The client's map may have fewer PGs (a split since): is the
		 * object still in the PG it named? */
		struct crush_pool cp;
		uint32_t seed;

		mon_pool_to_crush(pool, &cp);
		if (crush_oname_to_pg(&cp, op->req->oid, &seed) || seed != op->req->seed)
			pg = NULL;
	}
	if (pg &&
	    (pg->splitting || pg->split_wait || pg->merging || osd__merge_paused(pool, pg->seed))) {
		/* Its copy is being split or merged here, or a merge step
		 * pauses it: the op waits for that (a few hundred ms, a few
		 * seconds for a merge step), then goes on (osd__split's retry,
		 * the next map). */
		op->queued = true;
		TAILQ_INSERT_TAIL(&o->wait_map, op, link);
		return;
	}
	if (!pg || pg->primary != o->id || pg->state == OSD_PG_NONE ||
	    pg->state == OSD_PG_REPLICA) {
		/* Not ours in our map: the client's map differs; it looks again. */
		reply_simple(o, op->c, op->m->tid, -ESTALE);
		osd__op_free(op);
		return;
	}
	op->pg = pg;
	rc = pg->be->check_op(pg, op->req);
	if (rc) {
		reply_simple(o, op->c, op->m->tid, rc);
		osd__op_free(op);
		return;
	}
	if (pg->state != OSD_PG_ACTIVE) {
		op->queued = true;
		TAILQ_INSERT_TAIL(&pg->waiting, op, link);
		return;
	}
	osd__op_start(pg, op);
}

/*
 * May the sender do this op (docs/design/auth.md, "Caps")? It needs w if
 * any sub-op writes, else r; watching and notifying count as reading (they
 * change no data). \return 0, -EPERM, -EKEYEXPIRED (its ticket was revoked).
 */
static int
op_caps(struct osd *o, struct cm_conn *c, const Cairn__Osd__OsdOp *q)
{
	struct crush_oname on;
	char ns[CRUSH_ONAME_NS_MAX + 1];
	unsigned need = CM_CAP_R;

	if (!cm_conn_auth(c)->name[0])
		return 0;
	for (size_t i = 0; i < q->n_ops; i++) {
		uint32_t so = q->ops[i]->op;

		if (so == OSD_OP_WATCH || so == OSD_OP_UNWATCH || so == OSD_OP_WATCH_PING ||
		    so == OSD_OP_NOTIFY || so == OSD_OP_NOTIFY_ACK)
			continue;
		if (osd__op_subop_writes(so))
			need = CM_CAP_RW;
	}
	if (crush_oname_decode(q->oid, &on))
		return -EINVAL; /* (osd_check_op took it: not reached) */
	snprintf(ns, sizeof(ns), "%.*s", (int)on.nslen, on.nspace ? on.nspace : "");
	return osd__auth_check(o, c, q->pool, ns, need, false);
}

void
osd__pg_handle_op(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	struct osd_op *op = calloc(1, sizeof(*op));
	int rc;

	if (!op) {
		reply_simple(o, c, m->tid, -ENOMEM);
		cm_msg_destroy(m);
		return;
	}
	op->osd = o;
	op->c = cm_conn_get(c);
	op->m = m;
	cm_sgl_init(&op->rdata);
	snprintf(op->client, sizeof(op->client), "%s", cm_conn_peer(c));
	op->req = (Cairn__Osd__OsdOp *)cm_msg_unpack_front(m, &cairn__osd__osd_op__descriptor);
	rc = op->req ? osd_check_op(op->req, m->data.len) : -EBADMSG;
	if (!rc) {
		op->nres = op->req->n_ops;
		op->res = calloc(op->nres, sizeof(*op->res));
		op->resp = calloc(op->nres, sizeof(*op->resp));
		op->rver = calloc(op->nres, sizeof(*op->rver));
		op->rbufs = calloc(op->nres, sizeof(*op->rbufs));
		op->roff = calloc(op->nres, sizeof(*op->roff));
		op->rlen = calloc(op->nres, sizeof(*op->rlen));
		if (!op->res || !op->resp || !op->rver || !op->rbufs || !op->roff || !op->rlen)
			rc = -ENOMEM;
		for (size_t i = 0; !rc && i < op->nres; i++) {
			cairn__osd__sub_op_result__init(&op->res[i]);
			op->resp[i] = &op->res[i];
		}
	}
	if (rc) {
		CM_LOG_RL(CM_LOG_WARN, "bad op from %s: %s", op->client, cm_strerror(rc));
		reply_simple(o, c, m->tid, rc);
		op->nres = 0;
		osd__op_free(op);
		return;
	}
	rc = op_caps(o, c, op->req);
	if (rc) {
		reply_simple(o, c, m->tid, rc);
		op->nres = 0;
		osd__op_free(op);
		return;
	}
	{
		/* What holding the op costs: the data it brought, the data it asks
		 * for (a reply is at most OSD_MAX_IO), its message. */
		uint64_t bytes = m->data.len + m->front.len;

		for (size_t i = 0; i < op->req->n_ops; i++)
			if (op->req->ops[i]->op == OSD_OP_READ)
				bytes += op->req->ops[i]->len ? CM_MIN(op->req->ops[i]->len,
								       (uint64_t)OSD_MAX_IO)
							      : OSD_MAX_IO;
		if (o->client_bytes && o->client_bytes + bytes > o->client_bytes_max) {
			/* Push back: nothing is kept of it; the client resends it
			 * shortly (-EAGAIN at our epoch). One op always gets in. */
			o->client_busy++;
			CM_LOG_RL(CM_LOG_INFO,
				  "client data in flight %" PRIu64 " + %" PRIu64 " > %" PRIu64
				  " (osd_client_message_cap): %s told to resend",
				  o->client_bytes, bytes, o->client_bytes_max, op->client);
			reply_simple(o, c, m->tid, -EAGAIN);
			op->nres = 0;
			osd__op_free(op);
			return;
		}
		o->client_bytes += bytes;
		op->charged = bytes;
	}
	{
		uint64_t cost = 4096;

		for (size_t i = 0; i < op->req->n_ops; i++) {
			if (osd__op_subop_writes(op->req->ops[i]->op)) {
				o->op_bytes_in += op->req->ops[i]->len;
				op->writes = true;
			}
			cost += op->req->ops[i]->len;
		}
		osd__rec_client_cost(o, cost);
	}
	op_dispatch(o, op);
}

void
osd__pg_retry_wait_map(struct osd *o)
{
	TAILQ_HEAD(, osd_op) q = TAILQ_HEAD_INITIALIZER(q);
	struct osd_op *op;

	TAILQ_CONCAT(&q, &o->wait_map, link);
	while ((op = TAILQ_FIRST(&q))) {
		TAILQ_REMOVE(&q, op, link);
		op->queued = false;
		op_dispatch(o, op);
	}
}
