/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The write phase of a client op: sub-ops as store mutations (TxOps), a
 * log entry, the local commit and the replicas, the reply when all did.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

bool
osd__op_subop_writes(uint32_t t)
{
	switch (t) {
	case OSD_OP_WRITE:
	case OSD_OP_WRITEFULL:
	case OSD_OP_APPEND:
	case OSD_OP_TRUNCATE:
	case OSD_OP_ZERO:
	case OSD_OP_REMOVE:
	case OSD_OP_CREATE:
	case OSD_OP_SETXATTR:
	case OSD_OP_RMXATTR:
	case OSD_OP_OMAP_SET:
	case OSD_OP_OMAP_RM:
	case OSD_OP_OMAP_CLEAR:
	case OSD_OP_OMAP_SET_HEADER:
	case OSD_OP_OMAP_RM_RANGE:
	case OSD_OP_NUM:
	case OSD_OP_LOCK:
	case OSD_OP_UNLOCK:
	case OSD_OP_BREAK_LOCK:
	case OSD_OP_WATCH:
	case OSD_OP_UNWATCH:
		return true;
	default:
		return false;
	}
}

/* ---------- the write phase ---------- */

Cairn__Osd__TxOp *
osd__op_tx_add(struct osd_op *op, uint32_t type)
{
	Cairn__Osd__TxOp *x;

	if (op->ntx == op->txcap) {
		size_t cap = op->txcap ? op->txcap * 2 : 8;
		Cairn__Osd__TxOp *nt = realloc(op->tx, cap * sizeof(*nt));

		if (!nt)
			return NULL;
		op->tx = nt;
		op->txcap = cap;
	}
	x = &op->tx[op->ntx++];
	cairn__osd__tx_op__init(x);
	x->op = type;
	x->oid = op->req->oid;
	return x;
}

static char *
op_own(struct osd_op *op, char *s)
{
	char **no;

	if (!s)
		return NULL;
	no = realloc(op->owned, (op->nowned + 1) * sizeof(*no));
	if (!no) {
		free(s);
		return NULL;
	}
	op->owned = no;
	op->owned[op->nowned++] = s;
	return s;
}

int
osd__op_tx_life(struct osd_op *op, const Cairn__Osd__SubOp *so, bool *exists)
{
	if (so->op == OSD_OP_REMOVE) {
		*exists = false;
		return osd__op_tx_add(op, OSD_TX_REMOVE) ? 1 : -ENOMEM;
	}
	if (!*exists) {
		if (!osd__op_tx_add(op, OSD_TX_TOUCH))
			return -ENOMEM;
		*exists = true;
	}
	return 0;
}

int
osd__op_tx_xattr(struct osd_op *op, const Cairn__Osd__SubOp *so)
{
	Cairn__Osd__TxOp *x =
		osd__op_tx_add(op, so->op == OSD_OP_SETXATTR ? OSD_TX_SETATTR : OSD_TX_RMATTR);

	if (!x || !(x->name = op_own(op, osd__op_xattr_name(so->name))))
		return -ENOMEM;
	x->value = so->value;
	return 0;
}

/* Lock sub-op i: its new state (read phase) stored, or the attribute removed (no holder left). */
int
osd__op_tx_lock(struct osd_op *op, size_t i)
{
	const Cairn__Osd__SubOp *so = op->req->ops[i];
	bool none = !op->res[i].value.len;
	Cairn__Osd__TxOp *x = osd__op_tx_add(op, none ? OSD_TX_RMATTR : OSD_TX_SETATTR);

	if (!x || !(x->name = op_own(op, osd__op_lock_attr(so->name))))
		return -ENOMEM;
	if (!none)
		x->value = op->res[i].value;
	return 0;
}

/* NUM sub-op i: its new value (computed in the read phase) stored. */
int
osd__op_tx_num(struct osd_op *op, size_t i)
{
	const Cairn__Osd__SubOp *so = op->req->ops[i];
	Cairn__Osd__TxOp *x = osd__op_tx_add(op, so->omap ? OSD_TX_OMAP_SET : OSD_TX_SETATTR);

	if (!x)
		return -ENOMEM;
	if (!so->omap) {
		if (!(x->name = op_own(op, osd__op_xattr_name(so->name))))
			return -ENOMEM;
		x->value = op->res[i].value;
		return 0;
	}
	/* Arrays ours, bytes borrowed (see osd__op_free). */
	x->keys = malloc(sizeof(*x->keys));
	x->vals = malloc(sizeof(*x->vals));
	if (!x->keys || !x->vals)
		return -ENOMEM;
	x->keys[0] = so->keys[0];
	x->vals[0] = op->res[i].value;
	x->n_keys = x->n_vals = 1;
	return 0;
}

/*
 * op's version: one above the PG's last change and above any version handed
 * out before. Given when the change is built, right before osd__op_commit
 * (never earlier: an EC write that reads old stripes first would share its
 * version with a write committed meanwhile: two log entries and two repops
 * with one version, whose replies then complete the wrong one).
 */
static void
op_assign_ver(struct osd_op *op)
{
	struct osd_pg *pg = op->pg;
	struct osd_ver v = { op->osd->epoch, pg->last_update.seq + 1 };

	if (v.seq <= pg->ver_issued.seq)
		v.seq = pg->ver_issued.seq + 1;
	op->new_ver = v;
	pg->ver_issued = v;
}

int
osd__op_tx_finish(struct osd_op *op, bool exists)
{
	op_assign_ver(op);
	if (exists) {
		Cairn__Osd__TxOp *x = osd__op_tx_add(op, OSD_TX_SETATTR);

		if (!x)
			return -ENOMEM;
		x->name = "v";
		osd_ver_pack(&op->new_ver, op->verbuf);
		x->value.data = op->verbuf;
		x->value.len = sizeof(op->verbuf);
	}
	op->txp = malloc((op->ntx + 1) * sizeof(*op->txp));
	if (!op->txp)
		return -ENOMEM;
	for (size_t i = 0; i < op->ntx; i++)
		op->txp[i] = &op->tx[i];
	return 0;
}

static void
repop_finish(struct osd_repop *rp)
{
	struct osd_pg *pg = rp->pg;
	struct osd_op *op = rp->op;
	bool oldest = rp == TAILQ_FIRST(&pg->repops);

	if (rp->split) {
		CM_WARN("%s: osd_debug_split_write: %" PRIu64 ".%" PRIu64
			" is on shards below %" PRIu64 " only; exiting in 1 s",
			pg->cid, rp->ver.epoch, rp->ver.seq, pg->osd->cfg->debug_split);
		/* Hung (sockets open) for a second before dying: the test takes
		 * its client away first, else the refused connections mark us
		 * down at once and the client's resend would rightly complete. */
		sleep(1);
		_exit(3);
	}
	TAILQ_REMOVE(&pg->repops, rp, link);
	if (op && rp->rc == -EAGAIN && !pg->repop_failed) {
		/* Ops queued behind it (a read of the same object) would see our
		 * copy of a change the client is told failed: hold every op and
		 * peer again (from the tick, not from inside this callback). */
		CM_INFO("%s: change %" PRIu64 ".%" PRIu64 " failed on a replica: peering again",
			pg->cid, rp->ver.epoch, rp->ver.seq);
		pg->repop_failed = true;
		pg->retry_ms = cm_now_ms();
	}
	/* EC: how far every shard committed (stashes before that may go). */
	if (op && rp->rc)
		pg->roll_stuck = true;
	else if (op && oldest) {
		struct osd_repop *next = TAILQ_FIRST(&pg->repops);
		struct osd_ver upto = rp->ver;

		if (next && next->ver.seq > 0)
			upto = (struct osd_ver){ next->ver.epoch, next->ver.seq - 1 };
		if (osd_ver_cmp(&upto, &pg->roll_ok) > 0)
			pg->roll_ok = upto;
	}
	if (op) {
		if (rp->rc)
			osd__op_fail(op, 0, rp->rc);
		osd__op_reply(op, &rp->ver);
	}
	free(rp);
}

static void
on_local_commit(void *arg, int rc)
{
	struct osd_repop *rp = arg;

	rp->local_pending = false;
	if (rc) {
		CM_ERR("%s: local commit of %" PRIu64 ".%" PRIu64 " failed: %s", rp->pg->cid,
		       rp->ver.epoch, rp->ver.seq, cm_strerror(rc));
		rp->rc = rc;
	}
	if (--rp->waiting == 0)
		repop_finish(rp);
}

/*
 * The log holds more than max_bytes: the version to trim to, so that the
 * entries left hold at most 3/4 of it (trims come in batches), keeping the
 * newest entry. EC: never past roll (entries after it may still be rolled
 * back from their stashes); nothing when roll is unknown.
 */
static struct osd_ver
log_trim_bytes(struct osd_pg *pg, uint64_t max_bytes, const struct osd_ver *roll)
{
	struct osd_ver none = { 0, 0 }, v = none;
	size_t left = pg->log_bytes, target = (size_t)(max_bytes / 4 * 3);

	for (size_t i = 0; i + 1 < pg->log_n && left > target; i++) {
		const struct osd_lent *e = osd__pg_log_at(pg, i);

		if (pg->ec && osd_ver_cmp(&e->ver, roll) > 0)
			break;
		left -= osd__lent_bytes(e);
		v = e->ver;
	}
	return v;
}

static void
fill_entry(Cairn__Osd__LogEntry *le, Cairn__Osd__Version *v, Cairn__Osd__Version *pv,
	   struct osd_op *op, bool deleted)
{
	cairn__osd__log_entry__init(le);
	osd_ver_to_pb(&op->new_ver, v);
	osd_ver_to_pb(&op->ver, pv);
	le->ver = v;
	le->prior = pv;
	le->op = deleted ? OSD_LOG_DELETE : OSD_LOG_MODIFY;
	le->oid = op->req->oid;
	le->client = op->client;
	le->tid = op->m->tid;
	/* What a resend must be answered with again: the new values of NUMs. */
	for (size_t i = 0, n = 0; i < op->req->n_ops; i++) {
		const ProtobufCBinaryData *val = &op->res[i].value;

		if (op->req->ops[i]->op != OSD_OP_NUM || val->len != 8 || n + 10 > sizeof(op->outs))
			continue;
		op->outs[n] = (uint8_t)i;
		op->outs[n + 1] = 8;
		memcpy(op->outs + n + 2, val->data, 8);
		n += 10;
		le->outs.data = op->outs;
		le->outs.len = n;
	}
}

void
osd__op_write(struct osd_op *op)
{
	op->pg->be->write(op);
}

void
osd__op_commit(struct osd_op *op, const struct cm_sgl *(*data)(struct osd_op *op, int shard))
{
	struct osd_pg *pg = op->pg;
	struct osd *o = op->osd;
	Cairn__Osd__LogEntry le;
	Cairn__Osd__Version v, pv, tv, rv;
	Cairn__Osd__RepOp ro = CAIRN__OSD__REP_OP__INIT;
	struct osd_ver trim = { 0, 0 }, roll = { 0, 0 };
	uint32_t sent[OSD_EC_MAX_SHARDS] = { 0 };
	struct os_txn *t = NULL;
	struct osd_repop *rp;
	bool deleted;
	int rc, self = 0;

	for (int i = 0; i < pg->nacting; i++)
		if (pg->acting[i] == o->id)
			self = pg->shard[i];
	if (osd_ver_cmp(&op->new_ver, &pg->last_update) <= 0) {
		/* A backend that did not build the change right before (a bug):
		 * refuse rather than log two changes under one version. */
		CM_ERR("%s: write version %" PRIu64 ".%" PRIu64
		       " not above the last change %" PRIu64 ".%" PRIu64 ": refused",
		       pg->cid, op->new_ver.epoch, op->new_ver.seq, pg->last_update.epoch,
		       pg->last_update.seq);
		osd__op_fail(op, 0, -EAGAIN);
		osd__op_reply(op, NULL);
		return;
	}
	deleted = op->ntx && (op->tx[op->ntx - 1].op == OSD_TX_REMOVE ||
			      op->tx[op->ntx - 1].op == OSD_TX_RENAME);
	fill_entry(&le, &v, &pv, op, deleted);
	pg->be->log_entry(op, &le, sent, &roll);
	if (pg->log_n >= o->cfg->pg_log_max + OSD_TRIM_SLACK)
		trim = osd__pg_log_at(pg, pg->log_n - o->cfg->pg_log_max - 1)->ver;
	else if (o->cfg->pg_log_max_bytes && pg->log_bytes > o->cfg->pg_log_max_bytes)
		trim = log_trim_bytes(pg, o->cfg->pg_log_max_bytes, &roll);
	rp = calloc(1, sizeof(*rp));
	rc = rp ? os_txn_create(&t) : -ENOMEM;
	if (!rc)
		rc = osd__txn_add_ops(t, pg->cid, op->txp, op->ntx, data(op, self), false,
				      &op->new_ver);
	if (!rc)
		rc = osd__pg_stash_drop(pg, t, osd_ver_cmp(&roll, &trim) > 0 ? &roll : &trim);
	if (!rc && osd__txops_stash(op->txp, op->ntx))
		rc = osd__stash_add(pg, t, &op->new_ver);
	if (!rc)
		rc = osd__txn_add_log(pg, t, &le, &trim);
	if (!rc)
		rc = osd__pg_log_append(pg, &le);
	if (rc) {
		os_txn_destroy(t);
		free(rp);
		osd__op_fail(op, 0, rc);
		osd__op_reply(op, NULL);
		return;
	}
	pg->last_update = op->new_ver;
	if (trim.seq)
		osd__log_trim_mem(pg, &trim);
	rp->pg = pg;
	rp->op = op;
	rp->ver = op->new_ver;
	rp->waiting = 1;
	rp->local_pending = true;
	rp->split = op->split;
	rp->start_ms = cm_now_ms();
	TAILQ_INSERT_TAIL(&pg->repops, rp, link);
	/* Replicas. */
	ro.pool = pg->pool;
	ro.seed = pg->seed;
	/* Our map's epoch, not the interval's start: a replica that saw the
	 * interval begin at a later epoch (it skipped maps) still takes it, one
	 * whose map shows a newer interval than ours refuses it. */
	ro.epoch = o->epoch;
	ro.entry = &le;
	ro.n_ops = op->ntx;
	ro.ops = op->txp;
	osd_ver_to_pb(&trim, &tv);
	ro.trim_to = &tv;
	if (roll.seq) {
		osd_ver_to_pb(&roll, &rv);
		ro.roll_to = &rv;
		pg->roll_sent = roll;
	}
	for (int i = 0; i < pg->nacting; i++) {
		int32_t id = pg->acting[i];

		if (id == o->id || id < 0 || (rp->split && pg->shard[i] >= o->cfg->debug_split))
			continue;
		if (osd__send_pb(osd__peer_conn(o, id, pg->seed), OSD_MSG_REP_OP, 0, &ro.base,
				 data(op, pg->shard[i]))) {
			/* The session is gone: the interval will change; the client resends. */
			rp->rc = -EAGAIN;
			continue;
		}
		rp->waiting++;
		o->repops++;
	}
	if (rp->split && (unsigned)self >= o->cfg->debug_split) {
		os_txn_destroy(t); /* (our log has it in memory only: we exit before anyone asks) */
		on_local_commit(rp, 0);
		return;
	}
	osd__queue(o, t, on_local_commit, rp);
}

void
osd__pg_handle_repop_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__RepOpReply *r = (Cairn__Osd__RepOpReply *)cm_msg_unpack_front(
		m, &cairn__osd__rep_op_reply__descriptor);
	struct osd_repop *rp;
	struct osd_ver v;
	struct osd_pg *pg;

	(void)c;
	if (!r)
		goto out;
	pg = osd__pg_find(o, r->pool, r->seed);
	if (!pg)
		goto out;
	osd_ver_from_pb(r->ver, &v);
	/* A change of an interval that ended waits for its local commit only
	 * (op NULL): a reply is never for it. */
	TAILQ_FOREACH(rp, &pg->repops, link)
		if (rp->op && osd_ver_cmp(&rp->ver, &v) == 0)
			break;
	if (!rp)
		goto out; /* unknown, or from an interval that ended */
	if (r->rc && !rp->rc)
		rp->rc = r->rc == -ESTALE ? -EAGAIN : r->rc;
	if (--rp->waiting == 0)
		repop_finish(rp);
out:
	if (r)
		cairn__osd__rep_op_reply__free_unpacked(r, NULL);
	cm_msg_destroy(m);
}
