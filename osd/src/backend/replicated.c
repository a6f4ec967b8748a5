/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replicated pools: every acting OSD holds the whole object. The primary
 * turns sub-ops into store mutations (TxOps) and sends them, with the
 * client's data as it came, to every replica; reads are served from the
 * primary's own copy; the authoritative copy after peering is the newest
 * complete one, and recovery pushes whole objects from it.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

static void
rep_attach(struct osd *o, struct osd_pg *pg, const Cairn__Map__Pool *pool)
{
	(void)o;
	(void)pool;
	pg->ec = NULL;
}

static uint8_t
rep_shard_of(int up_pos, int acting_pos)
{
	(void)up_pos;
	return (uint8_t)acting_pos;
}

static uint32_t
rep_label(const struct osd_pg *pg)
{
	(void)pg;
	return 0;
}

static uint32_t
rep_slot_label(const struct osd_pg *pg, int t)
{
	(void)pg;
	(void)t;
	return 0;
}

static unsigned
rep_peer_min(const struct osd_pg *pg)
{
	return pg->min_size;
}

/* Peering needs min_size copies: an active PG takes writes. */
static bool
rep_writable(const struct osd_pg *pg)
{
	(void)pg;
	return true;
}

static int
rep_check_op(const struct osd_pg *pg, const Cairn__Osd__OsdOp *q)
{
	(void)pg;
	(void)q;
	return 0;
}

/* ---------- client ops ---------- */

/* ---------- running ops ---------- */

/*
 * A lone READ on a replicated pool: the store reads the data, the size and
 * the version xattr from one state of the object, with no metadata read on
 * a worker (two KV gets and a thread hop per read before).
 */
static void
on_plain_read(void *arg, int rc, struct cm_buf *data, const struct os_read_meta *m)
{
	struct osd_op *op = arg;

	op->busy = false;
	if (op->dropped) {
		cm_buf_put(data);
		osd__op_free(op);
		return;
	}
	if (!rc && data && data->len > OSD_MAX_IO)
		rc = -E2BIG; /* more than a reply carries: the client reads it in ranges */
	if (rc) {
		cm_buf_put(data);
		osd__op_fail(op, 0, rc);
		osd__op_reply(op, NULL);
		return;
	}
	op->exists = true;
	op->size = m->size;
	if (m->has_attr && m->attr_len == 16) {
		op->ver.epoch = osd_get_be64(m->attr);
		op->ver.seq = osd_get_be64(m->attr + 8);
	}
	op->res[0].more = true; /* done; cleared before the reply */
	if (data && data->len)
		op->rbufs[0] = data;
	else
		cm_buf_put(data);
	osd__op_after_reads(op);
}

/*
 * A lone READ: one store call reads the data, the size and the version
 * attribute from one state of the object (on_plain_read).
 */
static bool
rep_fast_path(struct osd_op *op)
{
	const Cairn__Osd__SubOp *so = op->req->ops[0];

	if (op->req->n_ops != 1 || so->op != OSD_OP_READ)
		return false;
	/* To the end: at most one byte more than a reply may carry, so that
	 * on_plain_read sees an object too large without reading all of it. */
	op->busy = true;
	osd__read_meta(op->osd, op->pg->cid, op->req->oid, so->off,
		       so->len ? so->len : (uint64_t)OSD_MAX_IO + 1, "v", on_plain_read, op);
	return true;
}

static bool
rep_reads_state(const struct osd_op *op)
{
	for (size_t i = 0; i < op->req->n_ops; i++)
		if (osd__subop_reads_meta(op->req->ops[i]->op))
			return true;
	return false;
}

static void
on_data_read(void *arg, int rc, struct cm_buf *data)
{
	struct osd_rd_arg *ra = arg;
	struct osd_op *op = ra->op;
	unsigned i = ra->i;

	/* (Reads may complete in any order: each knows its sub-op.) */
	op->res[i].more = true; /* marks it done; cleared before the reply */
	if (rc)
		osd__op_fail(op, i, rc);
	else
		op->rbufs[i] = data;
	if (--op->reads_pending == 0)
		osd__op_reads_done(op);
}

/* Every READ sub-op not done yet, from our own copy, through the reactor. */
static void
rep_read(struct osd_op *op)
{
	unsigned n = op->reads_pending;

	if (!op->rargs && !(op->rargs = calloc(op->nres, sizeof(*op->rargs)))) {
		op->reads_pending = 0;
		osd__op_fail(op, 0, -ENOMEM);
		osd__op_reads_done(op);
		return;
	}
	op->reads_pending++; /* hold until all are issued */
	for (size_t i = 0; i < op->req->n_ops && n; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];
		uint64_t len;

		if (!osd__subop_reads_data(so->op) || op->res[i].more)
			continue;
		len = so->len ? so->len : op->size - so->off;
		n--;
		op->rargs[i] = (struct osd_rd_arg){ op, (unsigned)i };
		osd__read(op->osd, op->pg->cid, op->req->oid, so->off, len, on_data_read,
			  &op->rargs[i]);
	}
	if (--op->reads_pending == 0)
		osd__op_reads_done(op);
}

/* The sub-ops as store mutations. \return 0 or -ENOMEM. */
static int
build_txops(struct osd_op *op)
{
	bool exists = op->exists;
	uint64_t size = op->size;
	Cairn__Osd__TxOp *x;

	for (size_t i = 0; i < op->req->n_ops; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];

		int rc;

		if (!osd__op_subop_writes(so->op))
			continue;
		rc = osd__op_tx_life(op, so, &exists);
		if (rc < 0)
			return rc;
		if (rc) { /* removed */
			size = 0;
			continue;
		}
		switch (so->op) {
		case OSD_OP_WRITE:
		case OSD_OP_APPEND:
			x = osd__op_tx_add(op, OSD_TX_WRITE);
			if (!x)
				return -ENOMEM;
			x->off = so->op == OSD_OP_APPEND ? size : so->off;
			x->len = so->len;
			x->data_off = so->data_off;
			size = CM_MAX(size, x->off + x->len);
			break;
		case OSD_OP_WRITEFULL:
			x = osd__op_tx_add(op, OSD_TX_TRUNCATE);
			if (!x)
				return -ENOMEM;
			x->len = 0;
			if (so->len) {
				x = osd__op_tx_add(op, OSD_TX_WRITE);
				if (!x)
					return -ENOMEM;
				x->len = so->len;
				x->data_off = so->data_off;
			}
			size = so->len;
			break;
		case OSD_OP_TRUNCATE:
			x = osd__op_tx_add(op, OSD_TX_TRUNCATE);
			if (!x)
				return -ENOMEM;
			x->len = so->len;
			size = so->len;
			break;
		case OSD_OP_ZERO:
			x = osd__op_tx_add(op, OSD_TX_ZERO);
			if (!x)
				return -ENOMEM;
			x->off = so->off;
			x->len = so->len;
			break;
		case OSD_OP_CREATE:
			break;
		case OSD_OP_SETXATTR:
		case OSD_OP_RMXATTR:
			if ((rc = osd__op_tx_xattr(op, so)))
				return rc;
			break;
		case OSD_OP_OMAP_SET:
		case OSD_OP_OMAP_RM:
		case OSD_OP_OMAP_RM_RANGE:
			x = osd__op_tx_add(op, so->op == OSD_OP_OMAP_SET  ? OSD_TX_OMAP_SET
					       : so->op == OSD_OP_OMAP_RM ? OSD_TX_OMAP_RM
									  : OSD_TX_OMAP_RM_RANGE);
			if (!x)
				return -ENOMEM;
			/* Borrowed from the request; freed arrays are ours (see osd__op_free). */
			x->keys = malloc((so->n_keys + 1) * sizeof(*x->keys));
			x->vals = malloc((so->n_vals + 1) * sizeof(*x->vals));
			if (!x->keys || !x->vals)
				return -ENOMEM;
			if (so->n_keys)
				memcpy(x->keys, so->keys, so->n_keys * sizeof(*x->keys));
			if (so->n_vals)
				memcpy(x->vals, so->vals, so->n_vals * sizeof(*x->vals));
			x->n_keys = so->n_keys;
			x->n_vals = so->op == OSD_OP_OMAP_SET ? so->n_vals : 0;
			x->end = so->end;
			break;
		case OSD_OP_OMAP_CLEAR:
			if (!osd__op_tx_add(op, OSD_TX_OMAP_CLEAR))
				return -ENOMEM;
			break;
		case OSD_OP_NUM:
			if ((rc = osd__op_tx_num(op, i)))
				return rc;
			break;
		case OSD_OP_LOCK:
		case OSD_OP_UNLOCK:
		case OSD_OP_BREAK_LOCK:
			if ((rc = osd__op_tx_lock(op, i)))
				return rc;
			break;
		case OSD_OP_WATCH:
		case OSD_OP_UNWATCH:
			if ((rc = osd__op_tx_watch(op, i)))
				return rc;
			break;
		case OSD_OP_OMAP_SET_HEADER:
			x = osd__op_tx_add(op, OSD_TX_OMAP_SET_HEADER);
			if (!x)
				return -ENOMEM;
			x->value = so->value;
			break;
		default:
			break;
		}
	}
	return osd__op_tx_finish(op, exists);
}

static const struct cm_sgl *
repl_data(struct osd_op *op, int shard)
{
	(void)shard;
	return &op->m->data;
}

static void
rep_write(struct osd_op *op)
{
	int rc = build_txops(op);

	if (rc) {
		osd__op_fail(op, 0, rc);
		osd__op_reply(op, NULL);
		return;
	}
	osd__op_commit(op, repl_data);
}

/* Replicated entries carry nothing more: they are never undone. */
static void
rep_log_entry(struct osd_op *op, Cairn__Osd__LogEntry *le, uint32_t *sent, struct osd_ver *roll)
{
	(void)op;
	(void)le;
	(void)sent;
	(void)roll;
}

static bool
rep_lists_own_copy(const struct osd_pg *pg)
{
	(void)pg;
	return false;
}

/* ---------- states ---------- */

/* Tell the replicas: a RepOp without an entry (replica_started). */
static void
rep_activated(struct osd_pg *pg)
{
	Cairn__Osd__RepOp ro = CAIRN__OSD__REP_OP__INIT;

	ro.pool = pg->pool;
	ro.seed = pg->seed;
	ro.epoch = pg->interval_epoch;
	for (int i = 0; i < pg->nacting; i++)
		if (pg->acting[i] != pg->osd->id && pg->acting[i] >= 0)
			osd__send_pb(osd__peer_conn(pg->osd, pg->acting[i], pg->seed),
				     OSD_MSG_REP_OP, 0, &ro.base, NULL);
}

static uint64_t
rep_stat_bytes(const struct osd_pg *pg, uint64_t bytes)
{
	(void)pg;
	return bytes;
}

/* ---------- peering ---------- */

/*
 * The authoritative copy: the newest complete one, acting or prior (ties:
 * ours, then an acting OSD's). A copy waiting for objects of an earlier
 * recovery (partial) cannot be it.
 */
int
osd__rep_choose_auth(struct osd_pg *pg)
{
	int a = -1;

	for (int i = 0; i < pg->nslots; i++) {
		struct osd_pg_peer *p = &pg->peer[i];

		if (!p->have || !p->exists || p->incomplete || p->partial)
			continue;
		if (a < 0 || osd_ver_cmp(&p->lu, &pg->peer[a].lu) > 0 ||
		    (osd_ver_cmp(&p->lu, &pg->peer[a].lu) == 0 && pg->slot_osd[i] == pg->osd->id))
			a = i;
	}
	return a;
}

/* Only a complete copy holds every write of the intervals it was in. */
static bool
rep_copy_heard(const struct osd_pg *pg, const struct osd_pg_peer *p)
{
	(void)pg;
	return !p->incomplete && !p->partial;
}

/* A replica's entries the authoritative history lacks are not undone: their
 * objects are pushed whole again. */
static int
rep_plan_divergent(struct osd_pg *pg, int t, const struct osd_lview *tv,
		   const struct osd_ver *common)
{
	(void)tv;
	(void)common;
	pg->peer[t].rollback = false;
	return 0;
}

/* A backfill needs us as its source, so that a push and a client op on one
 * object never overlap. */
static bool
rep_serve_recovering(const struct osd_pg *pg, int auth, int self, bool backfill)
{
	(void)pg;
	return auth == self || !backfill;
}

static void
rep_no_auth(const struct osd_pg *pg)
{
	CM_WARN("%s: no complete copy among the acting OSDs: waiting", pg->cid);
}

/* ---------- recovery ---------- */

/*
 * Short of copies (degraded), or only moving data (norebalance holds
 * that)? The slots (acting or prior) holding a complete copy as new as the
 * authoritative one count.
 */
static bool
rep_degraded(const struct osd_pg *pg)
{
	unsigned full = 0;

	if (pg->auth < 0)
		return true;
	for (int i = 0; i < pg->nslots; i++) {
		const struct osd_pg_peer *p = &pg->peer[i];

		if (p->have && p->exists && !p->incomplete && !p->partial &&
		    osd_ver_cmp(&p->lu, &pg->peer[pg->auth].lu) == 0)
			full++;
	}
	return full < pg->size;
}

static int32_t
rep_rec_source(const struct osd_pg *pg)
{
	return pg->slot_osd[pg->auth];
}

static bool
rep_source_ok(const struct osd_pg *pg)
{
	return !pg->incomplete && !pg->missing.n;
}

static bool
rep_list_remote(const struct osd_pg *pg)
{
	(void)pg;
	return false;
}

const struct osd_backend osd__backend_replicated = {
	.name = "replicated",
	.attach = rep_attach,
	.shard_of = rep_shard_of,
	.shard_label = rep_label,
	.slot_label = rep_slot_label,
	.peer_min = rep_peer_min,
	.writable = rep_writable,
	.check_op = rep_check_op,
	.fast_path = rep_fast_path,
	.reads_state = rep_reads_state,
	.read = rep_read,
	.write = rep_write,
	.log_entry = rep_log_entry,
	.lists_own_copy = rep_lists_own_copy,
	.activated = rep_activated,
	.stat_bytes = rep_stat_bytes,
	.choose_auth = osd__rep_choose_auth,
	.copy_heard = rep_copy_heard,
	.plan_divergent = rep_plan_divergent,
	.serve_recovering = rep_serve_recovering,
	.no_auth = rep_no_auth,
	.rec_source = rep_rec_source,
	.degraded = rep_degraded,
	.source_ok = rep_source_ok,
	.list_remote = rep_list_remote,
	.push_step = osd__push_step_replicated,
};
