/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writes of EC objects: the touched stripes rebuilt (read-modify-write of
 * partial ones), encoded, with undo information, each shard its bytes.
 */
#include "osd_int.h"
#include "backend/ec.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(ec);

static void ec_write_finish(struct osd_op *op);

/* ---------- client writes ---------- */

void
osd__ec_op_free(struct osd_op *op)
{
	struct osd_ecw *w = op->ecw;

	for (unsigned i = 0; i < OSD_EC_MAX_SHARDS; i++)
		cm_sgl_fini(&w->data[i]);
	cm_buf_put(w->img);
	free(w);
	op->ecw = NULL;
}

static const struct cm_sgl *
shard_data(struct osd_op *op, int shard)
{
	return &op->ecw->data[shard];
}

struct rng {
	uint64_t a, b;
};

/* Zero [a, b) of the image (logical offsets; clipped). */
static void
img_zero(struct osd_ecw *w, uint64_t sw, uint64_t a, uint64_t b)
{
	uint64_t lo = w->d0 * sw, hi = w->d1 * sw;

	a = CM_MAX(a, lo);
	b = CM_MIN(b, hi);
	if (a < b)
		memset(w->img->data + (a - lo), 0, (size_t)(b - a));
}

/* Client bytes [doff, doff + len) to logical [off, off + len) of the image (clipped). */
static int
img_copy(struct osd_ecw *w, uint64_t sw, const struct cm_sgl *d, uint64_t doff, uint64_t off,
	 uint64_t len)
{
	uint64_t lo = w->d0 * sw, hi = w->d1 * sw, a = CM_MAX(off, lo), b = CM_MIN(off + len, hi);

	if (a >= b)
		return 0;
	return cm_sgl_copy_out(d, (size_t)(doff + (a - off)), w->img->data + (a - lo),
			       (size_t)(b - a));
}

/*
 * Walk the sub-ops. plan: compute the dirty range, the final size and the
 * ranges every byte of which is set (so that a stripe they cover needs no
 * old bytes). apply: replay them onto the image.
 */
static int
ec_walk(struct osd_op *op, struct osd_ecw *w, bool apply, struct rng *set, unsigned *nset)
{
	const struct osd_ec *ec = op->pg->ec;
	uint64_t sw = osd_ec_stripe_width(ec);
	uint64_t cur = op->exists ? op->size : 0, lo = UINT64_MAX, hi = 0;
	bool exists = op->exists;
	int rc = 0;

	if (!apply) {
		w->reset = false;
		*nset = 0;
	}
	for (size_t i = 0; i < op->req->n_ops && !rc; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];
		uint64_t a = 0, b = 0;
		bool sets = false;

		if (!osd__op_subop_writes(so->op))
			continue;
		if (so->op == OSD_OP_REMOVE || so->op == OSD_OP_WRITEFULL) {
			if (apply)
				img_zero(w, sw, 0, UINT64_MAX);
			cur = 0;
			lo = UINT64_MAX;
			hi = 0;
			w->reset = true;
			if (!apply)
				*nset = 0;
			exists = so->op != OSD_OP_REMOVE;
			if (so->op == OSD_OP_REMOVE)
				continue;
		}
		exists = true;
		switch (so->op) {
		case OSD_OP_WRITE:
		case OSD_OP_APPEND:
		case OSD_OP_WRITEFULL:
			a = so->op == OSD_OP_WRITE ? so->off : cur;
			b = a + so->len;
			if (apply)
				rc = img_copy(w, sw, &op->m->data, so->data_off, a, so->len);
			cur = CM_MAX(cur, b);
			sets = true;
			break;
		case OSD_OP_ZERO:
			a = so->off;
			b = so->off + so->len;
			if (apply)
				img_zero(w, sw, a, b);
			cur = CM_MAX(cur, b);
			sets = true;
			break;
		case OSD_OP_TRUNCATE:
			if (so->len < cur) {
				/* the stripe the new end falls in is rewritten with zeros after it
				 */
				a = so->len;
				b = CM_MIN(cur, (so->len + sw - 1) / sw * sw);
				if (apply)
					img_zero(w, sw, so->len, cur);
			}
			cur = so->len;
			break;
		default:
			break;
		}
		if (a < b) {
			lo = CM_MIN(lo, a);
			hi = CM_MAX(hi, b);
			if (!apply && sets && *nset < OSD_MAX_SUBOPS)
				set[(*nset)++] = (struct rng){ a, b };
		}
	}
	if (!apply) {
		w->exists_end = exists;
		w->size_end = exists ? cur : 0;
		w->d0 = lo < hi ? lo / sw : 0;
		w->d1 = lo < hi ? (hi + sw - 1) / sw : 0;
	}
	return rc;
}

static bool
stripe_set(const struct rng *set, unsigned n, uint64_t a, uint64_t b)
{
	/* covered by the union of the ranges? (few ranges: try to walk from a) */
	for (bool moved = true; moved && a < b;) {
		moved = false;
		for (unsigned i = 0; i < n; i++)
			if (set[i].a <= a && set[i].b > a) {
				a = set[i].b;
				moved = true;
			}
	}
	return a >= b;
}

void
osd__old_read_done(struct osd_ecr *r, int rc)
{
	struct osd_op *op = r->arg;
	struct osd_ecw *w = op->ecw;
	uint64_t sw = osd_ec_stripe_width(r->pg->ec);

	if (!op->dropped) {
		if (rc && !w->rc)
			w->rc = rc;
		if (!rc)
			memcpy(w->img->data + (r->s0 - w->d0) * sw, r->out->data,
			       (size_t)(r->ns * sw));
	}
	if (--w->reads)
		return;
	if (!osd__op_resume(op))
		return;
	ec_write_finish(op);
}

void
osd__ec_op_write(struct osd_op *op)
{
	const struct osd_ec *ec = op->pg->ec;
	uint64_t sw = osd_ec_stripe_width(ec), old_ns;
	struct rng set[OSD_MAX_SUBOPS];
	unsigned nset = 0;
	struct osd_ecw *w;
	int rc;

	w = calloc(1, sizeof(*w));
	if (!w) {
		osd__op_fail(op, 0, -ENOMEM);
		osd__op_reply(op, NULL);
		return;
	}
	for (unsigned i = 0; i < OSD_EC_MAX_SHARDS; i++)
		cm_sgl_init(&w->data[i]);
	op->ecw = w;
	ec_walk(op, w, false, set, &nset);
	if ((w->d1 - w->d0) * sw > OSD_EC_IMAGE_MAX) {
		osd__op_fail(op, 0, -E2BIG); /* one op rewrites at most 64 MiB of stripes */
		osd__op_reply(op, NULL);
		return;
	}
	if (w->d1 > w->d0) {
		rc = cm_buf_alloc_aligned((size_t)((w->d1 - w->d0) * sw), 4096, &w->img);
		if (rc) {
			osd__op_fail(op, 0, rc);
			osd__op_reply(op, NULL);
			return;
		}
		memset(w->img->data, 0, w->img->len);
	}
	/* Old bytes of the stripes the op does not set whole (none after a reset). */
	old_ns = op->exists && !w->reset ? (op->size + sw - 1) / sw : 0;
	w->reads = 1;
	op->busy = true;
	for (uint64_t s = w->d0; s < CM_MIN(w->d1, old_ns);) {
		uint64_t e = s;
		struct osd_ecr *r;

		while (e < CM_MIN(w->d1, old_ns) && !stripe_set(set, nset, e * sw, (e + 1) * sw))
			e++;
		if (e == s) {
			s++;
			continue;
		}
		r = osd__ecr_new(op->pg, op->req->oid, &op->ver, s, e - s, osd__old_read_done, op);
		if (!r) {
			w->rc = -ENOMEM;
			break;
		}
		w->reads++;
		osd__ecr_run(r);
		s = e;
	}
	if (--w->reads == 0 && osd__op_resume(op))
		ec_write_finish(op);
}

static Cairn__Osd__TxOp *
tx_data(struct osd_op *op, uint32_t type, uint64_t off, uint64_t len)
{
	Cairn__Osd__TxOp *x = osd__op_tx_add(op, type);

	if (x) {
		x->off = off;
		x->len = len;
	}
	return x;
}

/*
 * How the shards undo this write while it may still be rolled back (a
 * primary that dies with the write on fewer than k shards): nothing kept
 * for a new object (the undo removes it); the object renamed aside when the
 * op starts by removing it; otherwise a stash (OSD_TX_STASH, the first
 * TxOp) of its old attributes, size and the shard bytes the op rewrites or
 * cuts off. \return 0 or -ENOMEM.
 */
static int
ec_undo_plan(struct osd_op *op)
{
	const struct osd_ec *ec = op->pg->ec;
	struct osd_ecw *w = op->ecw;
	uint64_t sw = osd_ec_stripe_width(ec), old_ns, ns_end, lo = 0, hi = 0;
	Cairn__Osd__TxOp *x;

	if (!op->exists) {
		op->undo = OSD_UNDO_CREATE;
		return 0;
	}
	for (size_t i = 0; i < op->req->n_ops; i++) {
		uint32_t t = op->req->ops[i]->op;

		if (!osd__op_subop_writes(t))
			continue;
		if (t == OSD_OP_REMOVE) {
			op->undo = OSD_UNDO_RENAME;
			return 0;
		}
		break;
	}
	old_ns = (op->size + sw - 1) / sw;
	ns_end = w->exists_end ? (w->size_end + sw - 1) / sw : 0;
	if (w->reset) {
		hi = old_ns;
	} else {
		if (w->d1 > w->d0 && w->d0 < old_ns) {
			lo = w->d0;
			hi = CM_MIN(w->d1, old_ns);
		}
		if (ns_end < old_ns) {
			lo = hi > lo ? CM_MIN(lo, ns_end) : ns_end;
			hi = old_ns;
		}
	}
	op->undo = OSD_UNDO_STASH;
	op->undo_off = lo * ec->su;
	op->undo_len = (hi - lo) * ec->su;
	x = osd__op_tx_add(op, OSD_TX_STASH);
	if (!x)
		return -ENOMEM;
	x->off = op->undo_off;
	x->len = op->undo_len;
	return 0;
}

/* The image is complete: encode it, build each shard's TxOps, commit. */
static void
ec_write_finish(struct osd_op *op)
{
	const struct osd_ec *ec = op->pg->ec;
	struct osd_ecw *w = op->ecw;
	uint64_t sw = osd_ec_stripe_width(ec), ns_end, w1;
	unsigned n = ec->k + ec->m;
	struct cm_buf *sb[OSD_EC_MAX_SHARDS] = { 0 };
	bool exists = op->exists;
	Cairn__Osd__TxOp *x;
	int rc = w->rc;

	if (!rc && w->img)
		rc = ec_walk(op, w, true, NULL, NULL);
	if (!rc)
		rc = ec_undo_plan(op);
	/* Attributes and the object's life, in sub-op order. */
	for (size_t i = 0; i < op->req->n_ops && !rc; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];

		if (!osd__op_subop_writes(so->op))
			continue;
		rc = osd__op_tx_life(op, so, &exists);
		if (rc > 0) { /* removed */
			rc = 0;
			continue;
		}
		if (!rc && (so->op == OSD_OP_SETXATTR || so->op == OSD_OP_RMXATTR))
			rc = osd__op_tx_xattr(op, so);
		else if (!rc && so->op == OSD_OP_NUM)
			rc = osd__op_tx_num(op, i);
		else if (!rc && (so->op == OSD_OP_LOCK || so->op == OSD_OP_UNLOCK ||
				 so->op == OSD_OP_BREAK_LOCK))
			rc = osd__op_tx_lock(op, i);
		else if (!rc && (so->op == OSD_OP_WATCH || so->op == OSD_OP_UNWATCH))
			rc = osd__op_tx_watch(op, i);
	}
	/* Then the data: every shard's part of the rewritten stripes. */
	ns_end = (w->size_end + sw - 1) / sw;
	w1 = CM_MIN(w->d1, ns_end);
	if (!rc && w->exists_end) {
		if (w->reset && op->exists && !tx_data(op, OSD_TX_TRUNCATE, 0, 0))
			rc = -ENOMEM;
		if (!rc && w1 > w->d0) {
			uint64_t nst = w1 - w->d0;
			size_t len = (size_t)(nst * ec->su);
			unsigned self = osd__self_shard(op->pg);
			uint8_t *d[OSD_EC_MAX_SHARDS];

			/* Parity straight from the image; data shards are sent as
			 * slices of it (no copy), but for our own store's (one
			 * contiguous write) and very long ranges. */
			for (unsigned i = 0; i < n && !rc; i++) {
				if (i < ec->k && i != self && nst <= OSD_EC_GATHER_MAX)
					continue;
				rc = cm_buf_alloc_aligned(len, 4096, &sb[i]);
				if (!rc)
					d[i] = sb[i]->data;
			}
			if (!rc)
				osd_ec_encode_stripes(ec, w->img->data, nst, d + ec->k);
			for (unsigned i = 0; i < n && !rc; i++) {
				if (sb[i]) {
					for (uint64_t st = 0; i < ec->k && st < nst; st++)
						memcpy(d[i] + st * ec->su,
						       w->img->data + (st * ec->k + i) * ec->su,
						       ec->su);
					rc = cm_sgl_append(&w->data[i], sb[i], 0, len);
					continue;
				}
				for (uint64_t st = 0; st < nst && !rc; st++)
					rc = cm_sgl_append(&w->data[i], w->img,
							   (size_t)((st * ec->k + i) * ec->su),
							   ec->su);
			}
			if (!rc && !tx_data(op, OSD_TX_WRITE, w->d0 * ec->su, len))
				rc = -ENOMEM;
		}
		if (!rc && !tx_data(op, OSD_TX_TRUNCATE, 0, ns_end * ec->su))
			rc = -ENOMEM;
		if (!rc && !(x = osd__op_tx_add(op, OSD_TX_SETATTR)))
			rc = -ENOMEM;
		if (!rc) {
			osd_put_be64(op->sizebuf, w->size_end);
			x->name = "s";
			x->value.data = op->sizebuf;
			x->value.len = sizeof(op->sizebuf);
		}
	}
	for (unsigned i = 0; i < n; i++)
		cm_buf_put(sb[i]);
	cm_buf_put(w->img);
	w->img = NULL;
	/* The first TxOp removes the object: it becomes the stash instead. */
	if (!rc && op->undo == OSD_UNDO_RENAME && op->ntx && op->tx[0].op == OSD_TX_REMOVE)
		op->tx[0].op = OSD_TX_RENAME;
	else if (!rc && op->undo == OSD_UNDO_RENAME)
		rc = -EINVAL;
	if (!rc)
		rc = osd__op_tx_finish(op, w->exists_end);
	if (rc) {
		osd__op_fail(op, 0, rc);
		osd__op_reply(op, NULL);
		return;
	}
	osd__op_commit(op, shard_data);
}
