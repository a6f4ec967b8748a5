/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads of EC objects: stripes from k shards (decoding when some are
 * missing), client reads, one shard rebuilt for recovery, and the shard
 * side of EC_READ. docs/design/ec.md.
 */
#include "osd_int.h"
#include "backend/ec.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(ec);

static void ecr_step(struct osd_ecr *r);
static void ecsrv_start_local(struct osd_ecr *r, unsigned j);

static void
ecr_free(struct osd_ecr *r)
{
	for (unsigned i = 0; i < OSD_EC_MAX_SHARDS; i++)
		free(r->buf[i]);
	cm_buf_put(r->out);
	os_kvs_free(r->attrs, r->nattrs);
	free(r);
}

/* Shards the acting set holds and that do not lack oid. */
static uint32_t
shards_with(struct osd_pg *pg, const char *oid, int32_t *osd_of)
{
	const uint32_t *miss = osd_oset_get(&pg->rmiss, oid);
	uint32_t m = 0;

	for (int t = 0; t < pg->nacting; t++) {
		if (pg->acting[t] < 0 || (miss && (*miss & 1u << t)))
			continue;
		if (pg->rec_pending && pg->peer[t].backfill && pg->peer[t].step != OSD_REC_DONE)
			continue; /* being backfilled: may lack anything */
		m |= 1u << pg->shard[t];
		if (osd_of)
			osd_of[pg->shard[t]] = pg->acting[t];
	}
	return m;
}

static void
ecr_finish(struct osd_ecr *r, int rc)
{
	if (r->finished)
		return;
	r->finished = true;
	r->rc = rc;
	TAILQ_REMOVE(&r->osd->ecrs, r, link);
	r->cb(r, rc);
	if (!r->local_pending)
		ecr_free(r);
}

/* What a shard said of the object besides its bytes. */
struct ecmeta {
	struct osd_ver ver;
	uint64_t size;
	struct os_kv *attrs; /* taken by ecr_got */
	size_t nattrs;
};

/* Shard j's bytes arrived (the rest of the range are zeros); meta: NULL for
 * a plain local read. */
static void
ecr_got(struct osd_ecr *r, unsigned j, int rc, const struct cm_sgl *sgl, struct cm_buf *b,
	struct ecmeta *meta)
{
	size_t want = (size_t)(r->ns * r->pg->ec->su), n;

	if (r->finished)
		return;
	if (!rc && meta && r->any) {
		/* No version named: every shard read must hold the same one. */
		if (!r->got_meta)
			r->ver = meta->ver;
		else if (osd_ver_cmp(&r->ver, &meta->ver) != 0)
			rc = -ESTALE;
	}
	if (!rc && meta && !r->got_meta) {
		r->got_meta = true;
		r->lsize = meta->size;
		r->attrs = meta->attrs;
		r->nattrs = meta->nattrs;
		meta->attrs = NULL;
		meta->nattrs = 0;
	}
	if (!rc) {
		n = sgl ? sgl->len : b ? b->len : 0;
		if (n > want)
			n = want;
		if (sgl)
			rc = cm_sgl_copy_out(sgl, 0, r->buf[j], n);
		else if (n)
			memcpy(r->buf[j], b->data, n);
		if (!rc)
			memset(r->buf[j] + n, 0, want - n);
	}
	if (rc) {
		CM_LOG_RL(CM_LOG_WARN, "%s: shard %u of %s (osd.%d): %s; decoding from others",
			  r->pg->cid, j, r->oid, r->osd_of[j], cm_strerror(rc));
		r->failed |= 1u << j;
		r->need = 0; /* a small read falls back to k shards and a decode */
	} else {
		r->have |= 1u << j;
	}
	ecr_step(r);
}

unsigned
osd__self_shard(struct osd_pg *pg)
{
	for (int t = 0; t < pg->nacting; t++)
		if (pg->acting[t] == pg->osd->id)
			return pg->shard[t];
	return 0;
}

static void
ecr_local_done(void *arg, int rc, struct cm_buf *data)
{
	struct osd_ecr *r = arg;

	if (!r->finished)
		ecr_got(r, osd__self_shard(r->pg), rc, NULL, data, NULL);
	cm_buf_put(data);
	if (--r->local_pending == 0 && r->finished)
		ecr_free(r);
}

static int
ecr_ask(struct osd_ecr *r, unsigned j)
{
	const struct osd_ec *ec = r->pg->ec;
	size_t len = (size_t)(r->ns * ec->su);

	r->asked |= 1u << j;
	r->buf[j] = malloc(len ? len : 1);
	if (!r->buf[j])
		return -ENOMEM;
	if (r->osd_of[j] == r->osd->id) {
		r->local_pending++;
		if (r->any || r->want_attrs) /* the version and attributes too */
			ecsrv_start_local(r, j);
		else
			osd__read(r->osd, r->pg->cid, r->oid, r->s0 * ec->su, len, ecr_local_done,
				  r);
		return 0;
	}
	{
		Cairn__Osd__EcRead q = CAIRN__OSD__EC_READ__INIT;
		Cairn__Osd__Version v;

		q.pool = r->pg->pool;
		q.seed = r->pg->seed;
		q.epoch = r->osd->epoch;
		q.oid = r->oid;
		q.shard = j;
		q.off = r->s0 * ec->su;
		q.len = len;
		osd_ver_to_pb(&r->ver, &v);
		q.ver = &v;
		q.any = r->any;
		q.attrs = r->want_attrs && !r->got_meta;
		r->tid[j] = ++r->osd->tid;
		r->osd->ec_reads++;
		return osd__send_pb(osd__peer_conn(r->osd, r->osd_of[j], r->pg->seed),
				    OSD_MSG_EC_READ, r->tid[j], &q.base, NULL);
	}
}

/* Ask for more shards if some failed; decode and finish once k are in. */
static void
ecr_step1(struct osd_ecr *r)
{
	const struct osd_ec *ec = r->pg->ec;
	uint32_t data = (1u << ec->k) - 1;
	unsigned inflight, ok, target;

	ok = (unsigned)__builtin_popcount(r->have);
	if (r->need && (r->have & r->need) == r->need) {
		/* A small read: the data shards holding the range answered. */
		int rc = cm_buf_alloc_aligned((size_t)(r->ns * osd_ec_stripe_width(ec)), 4096,
					      &r->out);

		if (!rc) {
			for (unsigned i = 0; i < ec->k; i++)
				if (!(r->need & 1u << i))
					r->buf[i] = r->buf[i] ? r->buf[i]
							      : calloc(1, (size_t)(r->ns * ec->su));
			for (unsigned i = 0; i < ec->k && !rc; i++)
				if (!r->buf[i])
					rc = -ENOMEM;
			if (!rc)
				osd_ec_join(ec, r->buf, r->ns, r->out->data);
		}
		ecr_finish(r, rc);
		return;
	}
	if (!r->need && ok >= ec->k) {
		uint8_t *sh[OSD_EC_MAX_SHARDS];
		uint32_t want = (r->tshard >= 0 ? 1u << r->tshard : data) & ~r->have;
		int rc = 0;

		for (unsigned i = 0; i < ec->k + ec->m; i++)
			sh[i] = r->buf[i];
		for (unsigned i = 0; i < ec->k + ec->m && !rc; i++)
			if ((want & 1u << i) && !sh[i]) {
				sh[i] = r->buf[i] = malloc((size_t)(r->ns * ec->su) + 1);
				if (!sh[i])
					rc = -ENOMEM;
			}
		if (!rc && want) {
			r->osd->ec_decodes++;
			rc = osd_ec_decode(ec, (size_t)(r->ns * ec->su), sh, r->have, want);
		}
		if (!rc && r->tshard < 0)
			rc = cm_buf_alloc_aligned((size_t)(r->ns * osd_ec_stripe_width(ec)), 4096,
						  &r->out);
		if (!rc && r->tshard < 0)
			osd_ec_join(ec, sh, r->ns, r->out->data);
		ecr_finish(r, rc);
		return;
	}
	for (;;) {
		uint32_t left = r->avail & ~r->asked;
		unsigned j;
		int rc;

		if (r->finished || r->again) /* a read answered at once: look again */
			return;
		inflight = (unsigned)__builtin_popcount(r->asked & ~r->have & ~r->failed);
		target = r->need ? (unsigned)__builtin_popcount(r->need) : ec->k;
		if (ok + inflight >= target)
			return;
		if (r->need)
			left &= r->need;

		if (!left) {
			CM_LOG_RL(CM_LOG_WARN,
				  "%s: %s: fewer than %u shards readable (of %#x: %#x failed)",
				  r->pg->cid, r->oid, ec->k, r->avail, r->failed);
			ecr_finish(r, -EIO);
			return;
		}
		/* data shards first: no decoding when they answer */
		j = (unsigned)__builtin_ctz(left & data ? left & data : left);
		rc = ecr_ask(r, j);
		if (rc)
			r->failed |= 1u << j;
	}
}

/* Ask for more shards if some failed; decode and finish once k are in.
 * Reentrant: a store read may answer inside ecr_ask. */
static void
ecr_step(struct osd_ecr *r)
{
	if (r->finished)
		return;
	if (r->stepping) {
		r->again = true;
		return;
	}
	r->stepping = true;
	r->local_pending++; /* hold r: it may finish inside */
	do {
		r->again = false;
		ecr_step1(r);
	} while (r->again && !r->finished);
	r->stepping = false;
	if (--r->local_pending == 0 && r->finished)
		ecr_free(r);
}

/* A read of stripes [s0, s0 + ns) of oid (version ver); set the caller's
 * fields, then osd__ecr_run. cb is called once, on the reactor (maybe from osd__ecr_run). */
struct osd_ecr *
osd__ecr_new(struct osd_pg *pg, const char *oid, const struct osd_ver *ver, uint64_t s0,
	     uint64_t ns, osd_ecr_cb cb, void *arg)
{
	struct osd_ecr *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->osd = pg->osd;
	r->pg = pg;
	snprintf(r->oid, sizeof(r->oid), "%s", oid);
	r->ver = *ver;
	r->s0 = s0;
	r->ns = ns;
	r->cb = cb;
	r->arg = arg;
	for (unsigned i = 0; i < OSD_EC_MAX_SHARDS; i++)
		r->osd_of[i] = -1;
	r->avail = shards_with(pg, oid, r->osd_of);
	r->tshard = -1;
	return r;
}

void
osd__ecr_run(struct osd_ecr *r)
{
	TAILQ_INSERT_TAIL(&r->osd->ecrs, r, link);
	ecr_step(r);
}

void
osd__pg_handle_ec_read_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__EcReadReply *got = (Cairn__Osd__EcReadReply *)cm_msg_unpack_front(
		m, &cairn__osd__ec_read_reply__descriptor);
	Cairn__Osd__EcReadReply bad = CAIRN__OSD__EC_READ_REPLY__INIT, *rep = got;
	struct osd_ecr *r;

	if (!got || osd_check_ec_read_reply(got)) {
		/* The shard's read fails now (else it would wait for a session reset). */
		CM_LOG_RL(CM_LOG_WARN, "bad EC read reply from %s", cm_conn_peer(c));
		bad.rc = -EIO;
		rep = &bad;
	}
	TAILQ_FOREACH(r, &o->ecrs, link)
		for (unsigned j = 0; j < OSD_EC_MAX_SHARDS; j++)
			if (r->tid[j] == m->tid && (r->asked & 1u << j) &&
			    !((r->have | r->failed) & 1u << j)) {
				struct ecmeta meta = { .size = rep->size };
				int rc = rep->rc > 0 ? -EIO : rep->rc;

				osd_ver_from_pb(rep->ver, &meta.ver);
				if (!rc && !r->any && osd_ver_cmp(&meta.ver, &r->ver) != 0)
					rc = -ESTALE;
				if (!rc && rep->n_attr_names) {
					meta.attrs = calloc(rep->n_attr_names, sizeof(*meta.attrs));
					for (size_t i = 0; meta.attrs && i < rep->n_attr_names;
					     i++) {
						struct os_kv *kv = &meta.attrs[i];

						meta.nattrs = i + 1;
						kv->key = malloc(rep->attr_names[i].len + 1);
						kv->val = malloc(rep->attr_vals[i].len + 1);
						if (!kv->key || !kv->val) {
							rc = -ENOMEM;
							break;
						}
						memcpy(kv->key, rep->attr_names[i].data,
						       rep->attr_names[i].len);
						memcpy(kv->val, rep->attr_vals[i].data,
						       rep->attr_vals[i].len);
						kv->klen = rep->attr_names[i].len;
						kv->vlen = rep->attr_vals[i].len;
					}
					if (!meta.attrs)
						rc = -ENOMEM;
				}
				ecr_got(r, j, rc, &m->data, NULL, &meta);
				os_kvs_free(meta.attrs, meta.nattrs);
				goto out;
			}
out:
	if (got)
		cairn__osd__ec_read_reply__free_unpacked(got, NULL);
	cm_msg_destroy(m);
}

void
osd__ec_peer_reset(struct osd *o, int32_t peer)
{
	struct osd_ecr *r, *tmp;

	/* ecr_got may finish r (its callback may even start other reads): hold
	 * r meanwhile, and begin again after each failure. */
again:
	TAILQ_FOREACH_SAFE(r, &o->ecrs, link, tmp)
		for (unsigned j = 0; j < OSD_EC_MAX_SHARDS; j++)
			if (r->osd_of[j] == peer && (r->asked & 1u << j) &&
			    !((r->have | r->failed) & 1u << j)) {
				r->local_pending++;
				ecr_got(r, j, -ECONNRESET, NULL, NULL, NULL);
				if (--r->local_pending == 0 && r->finished)
					ecr_free(r);
				goto again;
			}
}

/* ---------- recovery: one shard's bytes rebuilt from the others ---------- */

struct fetch_ctx {
	osd_ec_fetch_cb cb;
	void *arg;
	uint64_t off, len;
};

static void
fetch_done(struct osd_ecr *r, int rc)
{
	struct fetch_ctx *fc = r->arg;
	struct osd_ec_fetch f = { .rc = rc };

	if (!rc) {
		uint64_t ss = osd_ec_shard_size(r->pg->ec, r->lsize);
		uint64_t n = fc->off < ss ? CM_MIN(fc->len, ss - fc->off) : 0;

		f.lsize = r->lsize;
		f.ver = r->ver;
		f.attrs = r->attrs;
		f.nattrs = r->nattrs;
		r->attrs = NULL;
		r->nattrs = 0;
		if (n && !(f.rc = cm_buf_alloc_aligned((size_t)n, 4096, &f.data)))
			memcpy(f.data->data, r->buf[r->tshard], (size_t)n);
	}
	fc->cb(fc->arg, &f);
	os_kvs_free(f.attrs, f.nattrs);
	cm_buf_put(f.data);
	free(fc);
}

int
osd__ec_fetch_shard(struct osd_pg *pg, const char *oid, const struct osd_ver *ver, unsigned shard,
		    uint64_t off, uint64_t len, bool attrs, osd_ec_fetch_cb cb, void *arg)
{
	const struct osd_ec *ec = pg->ec;
	struct osd_ver any = { 0, 0 };
	struct fetch_ctx *fc;
	struct osd_ecr *r;

	if (!ec || off % ec->su || !len || len % ec->su || shard >= ec->k + ec->m)
		return -EINVAL;
	fc = calloc(1, sizeof(*fc));
	r = fc ? osd__ecr_new(pg, oid, ver ? ver : &any, off / ec->su, len / ec->su, fetch_done, fc)
	       : NULL;
	if (!r) {
		free(fc);
		return -ENOMEM;
	}
	fc->cb = cb;
	fc->arg = arg;
	fc->off = off;
	fc->len = len;
	r->any = !ver;
	r->want_attrs = attrs;
	r->tshard = (int)shard;
	r->avail &= ~(1u << shard);
	osd__ecr_run(r);
	return 0;
}

/* ---------- client reads ---------- */

static void
op_read_done(struct osd_ecr *r, int rc)
{
	struct osd_op *op = r->arg;
	unsigned i = r->idx;

	if (!op->dropped && !op->rc) {
		if (rc) {
			osd__op_fail(op, i, rc);
		} else if (r->ulen) { /* the reply sends the range straight from the stripes */
			op->rbufs[i] = cm_buf_get(r->out);
			op->roff[i] = (size_t)r->uoff;
			op->rlen[i] = (size_t)r->ulen;
		}
	}
	op->res[i].more = true;
	if (--op->reads_pending == 0)
		osd__op_reads_done(op);
}

void
osd__ec_op_read(struct osd_op *op)
{
	const struct osd_ec *ec = op->pg->ec;
	uint64_t w = osd_ec_stripe_width(ec);
	unsigned n = op->reads_pending;

	op->reads_pending++; /* hold until all are issued */
	for (size_t i = 0; i < op->req->n_ops && n; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];
		uint64_t len, s0, s1;
		struct osd_ecr *r;

		if (!osd__subop_reads_data(so->op) || op->res[i].more)
			continue;
		n--;
		len = so->len ? so->len : op->size - so->off;
		len = CM_MIN(len, op->size - so->off);
		s0 = so->off / w;
		s1 = (so->off + len + w - 1) / w;
		r = (s1 - s0) * w > OSD_EC_IMAGE_MAX ? NULL
						     : osd__ecr_new(op->pg, op->req->oid, &op->ver,
								    s0, s1 - s0, op_read_done, op);
		if (!r) {
			osd__op_fail(op, (unsigned)i,
				     (s1 - s0) * w > OSD_EC_IMAGE_MAX ? -E2BIG : -ENOMEM);
			op->res[i].more = true;
			op->reads_pending--;
			continue;
		}
		r->idx = (unsigned)i;
		r->uoff = so->off - s0 * w;
		r->ulen = len;
		if (s1 - s0 == 1) { /* within one stripe: read just the data shards it spans */
			unsigned a = (unsigned)(r->uoff / ec->su);
			unsigned b = (unsigned)((r->uoff + len - 1) / ec->su);

			r->need = (uint32_t)((1ull << (b + 1)) - (1ull << a));
			if (r->need & ~r->avail)
				r->need = 0; /* one is away: any k and a decode */
		}
		osd__ecr_run(r);
	}
	if (--op->reads_pending == 0)
		osd__op_reads_done(op);
}

/* ---------- the shard side ---------- */

/* An EC_READ being served (for a peer, or for our own ecr: local). */
struct ecsrv {
	struct osd *osd;
	struct cm_conn *c; /* NULL: local */
	struct osd_ecr *r; /* local: the read and the shard */
	unsigned j;
	uint64_t tid;
	char cid[48];
	char *oid;
	uint64_t off, len;
	struct osd_ver want;
	bool any, attrs;
	struct cm_work w;
	int rc;
	struct ecmeta meta;
};

static void
ecsrv_free(struct ecsrv *x)
{
	if (x->c)
		cm_conn_put(x->c);
	os_kvs_free(x->meta.attrs, x->meta.nattrs);
	free(x->oid);
	free(x);
}

static void
ecsrv_reply(struct ecsrv *x, int rc, struct cm_buf *data)
{
	Cairn__Osd__EcReadReply r = CAIRN__OSD__EC_READ_REPLY__INIT;
	Cairn__Osd__Version v;
	ProtobufCBinaryData *an = NULL, *av = NULL;
	struct cm_sgl d;

	if (!x->c) { /* ours */
		struct osd_ecr *er = x->r;

		if (!er->finished)
			ecr_got(er, x->j, rc, NULL, data, &x->meta);
		if (--er->local_pending == 0 && er->finished)
			ecr_free(er);
		ecsrv_free(x);
		return;
	}
	cm_sgl_init(&d);
	r.rc = rc;
	osd_ver_to_pb(&x->meta.ver, &v);
	r.ver = &v;
	r.size = x->meta.size;
	if (!rc && x->meta.nattrs) {
		an = calloc(x->meta.nattrs, sizeof(*an));
		av = calloc(x->meta.nattrs, sizeof(*av));
		if (!an || !av)
			r.rc = -ENOMEM;
		for (size_t i = 0; an && av && i < x->meta.nattrs; i++) {
			an[i] = (ProtobufCBinaryData){ x->meta.attrs[i].klen,
						       x->meta.attrs[i].key };
			av[i] = (ProtobufCBinaryData){ x->meta.attrs[i].vlen,
						       x->meta.attrs[i].val };
		}
		r.attr_names = an;
		r.attr_vals = av;
		r.n_attr_names = r.n_attr_vals = an && av ? x->meta.nattrs : 0;
	}
	if (!r.rc && data && data->len && cm_sgl_append(&d, data, 0, data->len))
		r.rc = -ENOMEM;
	osd__send_pb(x->c, OSD_MSG_EC_READ_REPLY, x->tid, &r.base, r.rc ? NULL : &d);
	cm_sgl_fini(&d);
	free(an);
	free(av);
	ecsrv_free(x);
}

/* On a worker: the shard's version of the object (and its attributes). */
static void
ecsrv_meta_fn(void *arg)
{
	struct ecsrv *x = arg;
	struct os_store *s = x->osd->store;
	struct os_kv v = { 0 };

	x->rc = os_getattr(s, x->cid, x->oid, "v", &v);
	if (!x->rc) {
		if (v.val && v.vlen == 16) {
			x->meta.ver.epoch = osd_get_be64(v.val);
			x->meta.ver.seq = osd_get_be64(v.val + 8);
		}
		osd_kv_clear(&v);
	} else if (x->rc == -ENODATA) {
		x->rc = -ESTALE;
	}
	if (!x->rc && os_getattr(s, x->cid, x->oid, "s", &v) == 0) {
		if (v.val && v.vlen == 8)
			x->meta.size = osd_get_be64(v.val);
		osd_kv_clear(&v);
	}
	if (!x->rc && x->attrs)
		x->rc = os_getattrs(s, x->cid, x->oid, &x->meta.attrs, &x->meta.nattrs);
}

static void
ecsrv_data(void *arg, int rc, struct cm_buf *data)
{
	struct ecsrv *x = arg;

	ecsrv_reply(x, rc, data);
	cm_buf_put(data);
}

static void
ecsrv_meta_done(void *arg)
{
	struct ecsrv *x = arg;

	if (!x->rc && !x->any && osd_ver_cmp(&x->want, &x->meta.ver) != 0)
		x->rc = -ESTALE;
	if (x->rc) {
		ecsrv_reply(x, x->rc, NULL);
		return;
	}
	osd__read(x->osd, x->cid, x->oid, x->off, x->len, ecsrv_data, x);
}

static void
ecsrv_submit(struct ecsrv *x)
{
	x->w = (struct cm_work){ .fn = ecsrv_meta_fn, .done = ecsrv_meta_done, .arg = x };
	if (osd__work(x->osd, &x->w))
		ecsrv_reply(x, -ESHUTDOWN, NULL);
}

static void
ecsrv_start_local(struct osd_ecr *r, unsigned j)
{
	struct ecsrv *x = calloc(1, sizeof(*x));

	if (!x || !(x->oid = strdup(r->oid))) {
		free(x);
		r->local_pending--;
		ecr_got(r, j, -ENOMEM, NULL, NULL, NULL);
		return;
	}
	x->osd = r->osd;
	x->r = r;
	x->j = j;
	snprintf(x->cid, sizeof(x->cid), "%s", r->pg->cid);
	x->off = r->s0 * r->pg->ec->su;
	x->len = r->ns * r->pg->ec->su;
	x->want = r->ver;
	x->any = r->any;
	x->attrs = r->want_attrs && !r->got_meta;
	ecsrv_submit(x);
}

void
osd__pg_handle_ec_read(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__EcRead *q =
		(Cairn__Osd__EcRead *)cm_msg_unpack_front(m, &cairn__osd__ec_read__descriptor);
	struct ecsrv *x = NULL;
	struct osd_pg *pg;
	int rc = 0, t;

	if (!q || osd_check_ec_read(q)) {
		CM_LOG_RL(CM_LOG_WARN, "bad EC read from %s", cm_conn_peer(c));
		rc = -EINVAL;
		goto reply;
	}
	pg = osd__pg_find(o, q->pool, q->seed);
	/* Only the shard this OSD holds in its own map's interval. */
	for (t = 0; pg && t < pg->nacting; t++)
		if (pg->acting[t] == o->id)
			break;
	if (!pg || !pg->in_store || !pg->ec || t == pg->nacting || pg->shard[t] != q->shard ||
	    pg->info_shard != q->shard + 1 || pg->incomplete ||
	    osd_oset_get(&pg->missing, q->oid)) {
		rc = -ESTALE;
		goto reply;
	}
	x = calloc(1, sizeof(*x));
	if (!x || !(x->oid = strdup(q->oid))) {
		free(x);
		rc = -ENOMEM;
		goto reply;
	}
	x->osd = o;
	x->c = cm_conn_get(c);
	x->tid = m->tid;
	snprintf(x->cid, sizeof(x->cid), "%s", pg->cid);
	x->off = q->off;
	x->len = q->len;
	osd_ver_from_pb(q->ver, &x->want);
	x->any = q->any;
	x->attrs = q->attrs;
	cairn__osd__ec_read__free_unpacked(q, NULL);
	cm_msg_destroy(m);
	ecsrv_submit(x);
	return;
reply : {
	Cairn__Osd__EcReadReply r = CAIRN__OSD__EC_READ_REPLY__INIT;

	r.rc = rc;
	osd__send_pb(c, OSD_MSG_EC_READ_REPLY, m->tid, &r.base, NULL);
}
	if (q)
		cairn__osd__ec_read__free_unpacked(q, NULL);
	cm_msg_destroy(m);
}

/* ---------- shutdown ---------- */

void
osd__ec_abort_all(struct osd *o)
{
	struct osd_ecr *r;

	/* Reads in flight end without running their ops on: an op whose last
	 * read this was is let go (freed if its interval already dropped it,
	 * else with its PG); a recovery job hears -ESHUTDOWN (it is dead by now). */
	while ((r = TAILQ_FIRST(&o->ecrs))) {
		r->finished = true;
		TAILQ_REMOVE(&o->ecrs, r, link);
		if (r->cb == op_read_done) {
			struct osd_op *op = r->arg;

			if (--op->reads_pending == 0)
				(void)osd__op_resume(op);
		} else if (r->cb == osd__old_read_done) {
			struct osd_op *op = r->arg;

			if (--op->ecw->reads == 0)
				(void)osd__op_resume(op);
		} else if (r->cb == fetch_done) {
			fetch_done(r, -ESHUTDOWN);
		}
		if (!r->local_pending)
			ecr_free(r);
	}
}
