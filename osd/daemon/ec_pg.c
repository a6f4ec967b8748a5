/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Client ops of erasure-coded pools on the primary: reads gather k shards
 * (decoding when a data shard is down, lacks the object or fails), writes
 * rebuild the touched stripes (read-modify-write of partial ones), encode
 * them and hand every shard its own bytes to op_commit; the shard side of
 * EC_READ. docs/design/ec.md.
 */
#include "pg_int.h"
#include "msgcheck.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(ec);

#define EC_IMAGE_MAX  (64ull << 20) /* the stripes one compound op may rewrite */
#define EC_GATHER_MAX 2048u         /* stripes sent as slices of the image, at most */

/* ---------- profiles ---------- */

const struct osd_ec *
ec_pool_profile(struct osd *o, const Cairn__Map__Pool *p)
{
	struct osd_pool_ec **na, *e;

	if (!p->erasure)
		return NULL;
	for (size_t i = 0; i < o->necp; i++)
		if (o->ecp[i]->pool == p->id)
			return &o->ecp[i]->ec;
	e = calloc(1, sizeof(*e));
	na = e ? realloc(o->ecp, (o->necp + 1) * sizeof(*na)) : NULL;
	if (!na || osd_ec_init(&e->ec, p->ec_k, p->ec_m, p->stripe_unit ? p->stripe_unit : 4096)) {
		CM_ERR("pool %" PRId64 ": EC profile %u+%u/%u unusable", p->id, p->ec_k, p->ec_m,
		       p->stripe_unit);
		free(e);
		if (na)
			o->ecp = na;
		return NULL;
	}
	e->pool = p->id;
	o->ecp = na;
	o->ecp[o->necp++] = e;
	return &e->ec;
}

/* ---------- reading stripes from k shards ---------- */

struct ecr;
typedef void (*ecr_cb)(struct ecr *r, int rc);

struct ecr {
	TAILQ_ENTRY(ecr) link; /* on osd->ecrs while it runs */
	struct osd *osd;
	struct pg *pg;
	char oid[OSD_NAME_MAX + 1];
	struct osd_ver ver; /* every shard must hold this version */
	uint64_t s0, ns;    /* stripes [s0, s0 + ns) */
	uint8_t *buf[OSD_EC_MAX_SHARDS];
	int32_t osd_of[OSD_EC_MAX_SHARDS];
	uint64_t tid[OSD_EC_MAX_SHARDS];
	uint32_t avail, asked, have, failed;
	unsigned local_pending; /* store reads that will call back (and holds) */
	bool finished;
	bool stepping, again;
	int rc;
	ecr_cb cb;
	void *arg;
	struct cm_buf *out; /* ns whole stripes, logical order */
	/* recovery (ec_fetch_shard) */
	bool any;        /* no version given: the shards read must agree */
	bool want_attrs; /* the first shard read sends the attributes */
	int tshard;      /* rebuild this shard's bytes (-1: none) */
	uint32_t need;   /* a small read: only these data shards (0: any k) */
	uint32_t skip;   /* shards not to read */
	struct os_kv *attrs;
	size_t nattrs;
	uint64_t lsize; /* the object's size, from the "s" attribute */
	bool got_meta;
	/* the caller's */
	unsigned idx;
	uint64_t uoff, ulen;
};

static void
ecr_free(struct ecr *r)
{
	for (unsigned i = 0; i < OSD_EC_MAX_SHARDS; i++)
		free(r->buf[i]);
	cm_buf_put(r->out);
	os_kvs_free(r->attrs, r->nattrs);
	free(r);
}

/* Shards the acting set holds and that do not lack oid. */
static uint32_t
shards_with(struct pg *pg, const char *oid, int32_t *osd_of)
{
	const uint32_t *miss = oset_get(&pg->rmiss, oid);
	uint32_t m = 0;

	for (int t = 0; t < pg->nacting; t++) {
		if (pg->acting[t] < 0 || (miss && (*miss & 1u << t)))
			continue;
		if (pg->rec_pending && pg->peer[t].backfill && pg->peer[t].step != REC_DONE)
			continue; /* being backfilled: may lack anything */
		m |= 1u << pg->shard[t];
		if (osd_of)
			osd_of[pg->shard[t]] = pg->acting[t];
	}
	return m;
}

static void ecr_step(struct ecr *r);

static void
ecr_finish(struct ecr *r, int rc)
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
ecr_got(struct ecr *r, unsigned j, int rc, const struct cm_sgl *sgl, struct cm_buf *b,
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

static unsigned
self_shard(struct pg *pg)
{
	for (int t = 0; t < pg->nacting; t++)
		if (pg->acting[t] == pg->osd->id)
			return pg->shard[t];
	return 0;
}

static void
ecr_local_done(void *arg, int rc, struct cm_buf *data)
{
	struct ecr *r = arg;

	if (!r->finished)
		ecr_got(r, self_shard(r->pg), rc, NULL, data, NULL);
	cm_buf_put(data);
	if (--r->local_pending == 0 && r->finished)
		ecr_free(r);
}

static void ecsrv_start_local(struct ecr *r, unsigned j);

static int
ecr_ask(struct ecr *r, unsigned j)
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
			osd_read(r->osd, r->pg->cid, r->oid, r->s0 * ec->su, len, ecr_local_done,
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
		ver_to_pb(&r->ver, &v);
		q.ver = &v;
		q.any = r->any;
		q.attrs = r->want_attrs && !r->got_meta;
		r->tid[j] = ++r->osd->tid;
		r->osd->ec_reads++;
		return osd_send_pb(osd_peer_conn(r->osd, r->osd_of[j], r->pg->seed),
				   OSD_MSG_EC_READ, r->tid[j], &q.base, NULL);
	}
}

/* Ask for more shards if some failed; decode and finish once k are in. */
static void
ecr_step1(struct ecr *r)
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
ecr_step(struct ecr *r)
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
 * fields, then ecr_run. cb is called once, on the reactor (maybe from ecr_run). */
static struct ecr *
ecr_new(struct pg *pg, const char *oid, const struct osd_ver *ver, uint64_t s0, uint64_t ns,
	ecr_cb cb, void *arg)
{
	struct ecr *r = calloc(1, sizeof(*r));

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

static void
ecr_run(struct ecr *r)
{
	TAILQ_INSERT_TAIL(&r->osd->ecrs, r, link);
	ecr_step(r);
}

void
pg_handle_ec_read_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__EcReadReply *got = (Cairn__Osd__EcReadReply *)cm_msg_unpack_front(
		m, &cairn__osd__ec_read_reply__descriptor);
	Cairn__Osd__EcReadReply bad = CAIRN__OSD__EC_READ_REPLY__INIT, *rep = got;
	struct ecr *r;

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

				ver_from_pb(rep->ver, &meta.ver);
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
ec_peer_reset(struct osd *o, int32_t peer)
{
	struct ecr *r, *tmp;

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

/* ---------- peering ---------- */

void
ec_plan_auth(struct pg *pg)
{
	struct osd_ver lus[OSD_MAX_ACTING], t;
	unsigned n = 0;

	pg->auth = -1;
	for (int i = 0; i < pg->nacting; i++) {
		struct pg_peer *p = &pg->peer[i];
		uint32_t label = pg->slot_osd[i] == pg->osd->id ? pg->info_shard
				 : p->n && p->n->info           ? p->n->info->shard
								: 0;

		if (p->have && p->exists && label != (uint32_t)pg->shard[i] + 1) {
			CM_INFO("%s: osd.%d holds shard %d, not %u: rebuilt whole", pg->cid,
				pg->slot_osd[i], (int)label - 1, pg->shard[i]);
			p->exists = false;
			p->incomplete = false;
			p->partial = false;
		}
		if (!p->have || !p->exists || p->incomplete || p->partial)
			continue;
		/* insertion sort, newest first */
		unsigned k = n++;

		for (; k > 0 && osd_ver_cmp(&lus[k - 1], &p->lu) < 0; k--)
			lus[k] = lus[k - 1];
		lus[k] = p->lu;
	}
	if (n < pg->ec->k)
		return;
	t = lus[pg->ec->k - 1];
	for (int i = 0; i < pg->nacting; i++) {
		struct pg_peer *p = &pg->peer[i];

		if (!p->have || !p->exists || p->incomplete || p->partial ||
		    osd_ver_cmp(&p->lu, &t) != 0)
			continue;
		if (pg->auth < 0 || pg->slot_osd[i] == pg->osd->id)
			pg->auth = i;
	}
}

/* ---------- recovery: one shard's bytes rebuilt from the others ---------- */

struct fetch_ctx {
	ec_fetch_cb cb;
	void *arg;
	uint64_t off, len;
};

static void
fetch_done(struct ecr *r, int rc)
{
	struct fetch_ctx *fc = r->arg;
	struct ec_fetch f = { .rc = rc };

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
ec_fetch_shard(struct pg *pg, const char *oid, const struct osd_ver *ver, unsigned shard,
	       uint64_t off, uint64_t len, bool attrs, ec_fetch_cb cb, void *arg)
{
	const struct osd_ec *ec = pg->ec;
	struct osd_ver any = { 0, 0 };
	struct fetch_ctx *fc;
	struct ecr *r;

	if (!ec || off % ec->su || !len || len % ec->su || shard >= ec->k + ec->m)
		return -EINVAL;
	fc = calloc(1, sizeof(*fc));
	r = fc ? ecr_new(pg, oid, ver ? ver : &any, off / ec->su, len / ec->su, fetch_done, fc)
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
	ecr_run(r);
	return 0;
}

/* ---------- client reads ---------- */

static void
op_read_done(struct ecr *r, int rc)
{
	struct op *op = r->arg;
	unsigned i = r->idx;

	if (!op->dropped && !op->rc) {
		if (rc) {
			op_fail(op, i, rc);
		} else if (r->ulen) { /* the reply sends the range straight from the stripes */
			op->rbufs[i] = cm_buf_get(r->out);
			op->roff[i] = (size_t)r->uoff;
			op->rlen[i] = (size_t)r->ulen;
		}
	}
	op->res[i].more = true;
	if (--op->reads_pending == 0)
		op_reads_done(op);
}

void
ec_op_read(struct op *op)
{
	const struct osd_ec *ec = op->pg->ec;
	uint64_t w = osd_ec_stripe_width(ec);
	unsigned n = op->reads_pending;

	op->reads_pending++; /* hold until all are issued */
	for (size_t i = 0; i < op->req->n_ops && n; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];
		uint64_t len, s0, s1;
		struct ecr *r;

		if (so->op != OSD_OP_READ || op->res[i].more)
			continue;
		n--;
		len = so->len ? so->len : op->size - so->off;
		len = CM_MIN(len, op->size - so->off);
		s0 = so->off / w;
		s1 = (so->off + len + w - 1) / w;
		r = (s1 - s0) * w > EC_IMAGE_MAX ? NULL
						 : ecr_new(op->pg, op->req->oid, &op->ver, s0,
							   s1 - s0, op_read_done, op);
		if (!r) {
			op_fail(op, (unsigned)i, (s1 - s0) * w > EC_IMAGE_MAX ? -E2BIG : -ENOMEM);
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
		ecr_run(r);
	}
	if (--op->reads_pending == 0)
		op_reads_done(op);
}

/* ---------- client writes ---------- */

/* An EC write in progress (op->ecw). */
struct ecw {
	uint64_t d0, d1;    /* stripes the image holds */
	struct cm_buf *img; /* their new bytes, logical order */
	unsigned reads;     /* old stripes being read */
	int rc;
	bool reset; /* the object was emptied (writefull, remove) */
	bool exists_end;
	uint64_t size_end;
	struct cm_sgl data[OSD_EC_MAX_SHARDS]; /* each shard's bytes */
};

void
ec_op_free(struct op *op)
{
	struct ecw *w = op->ecw;

	for (unsigned i = 0; i < OSD_EC_MAX_SHARDS; i++)
		cm_sgl_fini(&w->data[i]);
	cm_buf_put(w->img);
	free(w);
	op->ecw = NULL;
}

static const struct cm_sgl *
shard_data(struct op *op, int shard)
{
	return &op->ecw->data[shard];
}

struct rng {
	uint64_t a, b;
};

/* Zero [a, b) of the image (logical offsets; clipped). */
static void
img_zero(struct ecw *w, uint64_t sw, uint64_t a, uint64_t b)
{
	uint64_t lo = w->d0 * sw, hi = w->d1 * sw;

	a = CM_MAX(a, lo);
	b = CM_MIN(b, hi);
	if (a < b)
		memset(w->img->data + (a - lo), 0, (size_t)(b - a));
}

/* Client bytes [doff, doff + len) to logical [off, off + len) of the image (clipped). */
static int
img_copy(struct ecw *w, uint64_t sw, const struct cm_sgl *d, uint64_t doff, uint64_t off,
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
ec_walk(struct op *op, struct ecw *w, bool apply, struct rng *set, unsigned *nset)
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

		if (!op_subop_writes(so->op))
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

static void ec_write_finish(struct op *op);

static void
old_read_done(struct ecr *r, int rc)
{
	struct op *op = r->arg;
	struct ecw *w = op->ecw;
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
	if (!op_resume(op))
		return;
	ec_write_finish(op);
}

void
ec_op_write(struct op *op)
{
	const struct osd_ec *ec = op->pg->ec;
	uint64_t sw = osd_ec_stripe_width(ec), old_ns;
	struct rng set[OSD_MAX_SUBOPS];
	unsigned nset = 0;
	struct ecw *w;
	int rc;

	w = calloc(1, sizeof(*w));
	if (!w) {
		op_fail(op, 0, -ENOMEM);
		op_reply(op, NULL);
		return;
	}
	for (unsigned i = 0; i < OSD_EC_MAX_SHARDS; i++)
		cm_sgl_init(&w->data[i]);
	op->ecw = w;
	ec_walk(op, w, false, set, &nset);
	if ((w->d1 - w->d0) * sw > EC_IMAGE_MAX) {
		op_fail(op, 0, -E2BIG); /* one op rewrites at most 64 MiB of stripes */
		op_reply(op, NULL);
		return;
	}
	if (w->d1 > w->d0) {
		rc = cm_buf_alloc_aligned((size_t)((w->d1 - w->d0) * sw), 4096, &w->img);
		if (rc) {
			op_fail(op, 0, rc);
			op_reply(op, NULL);
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
		struct ecr *r;

		while (e < CM_MIN(w->d1, old_ns) && !stripe_set(set, nset, e * sw, (e + 1) * sw))
			e++;
		if (e == s) {
			s++;
			continue;
		}
		r = ecr_new(op->pg, op->req->oid, &op->ver, s, e - s, old_read_done, op);
		if (!r) {
			w->rc = -ENOMEM;
			break;
		}
		w->reads++;
		ecr_run(r);
		s = e;
	}
	if (--w->reads == 0 && op_resume(op))
		ec_write_finish(op);
}

static Cairn__Osd__TxOp *
tx_data(struct op *op, uint32_t type, uint64_t off, uint64_t len)
{
	Cairn__Osd__TxOp *x = op_tx_add(op, type);

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
ec_undo_plan(struct op *op)
{
	const struct osd_ec *ec = op->pg->ec;
	struct ecw *w = op->ecw;
	uint64_t sw = osd_ec_stripe_width(ec), old_ns, ns_end, lo = 0, hi = 0;
	Cairn__Osd__TxOp *x;

	if (!op->exists) {
		op->undo = OSD_UNDO_CREATE;
		return 0;
	}
	for (size_t i = 0; i < op->req->n_ops; i++) {
		uint32_t t = op->req->ops[i]->op;

		if (!op_subop_writes(t))
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
	x = op_tx_add(op, OSD_TX_STASH);
	if (!x)
		return -ENOMEM;
	x->off = op->undo_off;
	x->len = op->undo_len;
	return 0;
}

/* The image is complete: encode it, build each shard's TxOps, commit. */
static void
ec_write_finish(struct op *op)
{
	const struct osd_ec *ec = op->pg->ec;
	struct ecw *w = op->ecw;
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

		if (!op_subop_writes(so->op))
			continue;
		rc = op_tx_life(op, so, &exists);
		if (rc > 0) { /* removed */
			rc = 0;
			continue;
		}
		if (!rc && (so->op == OSD_OP_SETXATTR || so->op == OSD_OP_RMXATTR))
			rc = op_tx_xattr(op, so);
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
			unsigned self = self_shard(op->pg);
			uint8_t *d[OSD_EC_MAX_SHARDS];

			/* Parity straight from the image; data shards are sent as
			 * slices of it (no copy), but for our own store's (one
			 * contiguous write) and very long ranges. */
			for (unsigned i = 0; i < n && !rc; i++) {
				if (i < ec->k && i != self && nst <= EC_GATHER_MAX)
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
		if (!rc && !(x = op_tx_add(op, OSD_TX_SETATTR)))
			rc = -ENOMEM;
		if (!rc) {
			put_be64(op->sizebuf, w->size_end);
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
		rc = op_tx_finish(op, w->exists_end);
	if (rc) {
		op_fail(op, 0, rc);
		op_reply(op, NULL);
		return;
	}
	op_commit(op, shard_data);
}

/* ---------- the shard side ---------- */

/* An EC_READ being served (for a peer, or for our own ecr: local). */
struct ecsrv {
	struct osd *osd;
	struct cm_conn *c; /* NULL: local */
	struct ecr *r;     /* local: the read and the shard */
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
		struct ecr *er = x->r;

		if (!er->finished)
			ecr_got(er, x->j, rc, NULL, data, &x->meta);
		if (--er->local_pending == 0 && er->finished)
			ecr_free(er);
		ecsrv_free(x);
		return;
	}
	cm_sgl_init(&d);
	r.rc = rc;
	ver_to_pb(&x->meta.ver, &v);
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
	osd_send_pb(x->c, OSD_MSG_EC_READ_REPLY, x->tid, &r.base, r.rc ? NULL : &d);
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
			x->meta.ver.epoch = get_be64(v.val);
			x->meta.ver.seq = get_be64(v.val + 8);
		}
		kv_clear(&v);
	} else if (x->rc == -ENODATA) {
		x->rc = -ESTALE;
	}
	if (!x->rc && os_getattr(s, x->cid, x->oid, "s", &v) == 0) {
		if (v.val && v.vlen == 8)
			x->meta.size = get_be64(v.val);
		kv_clear(&v);
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
	osd_read(x->osd, x->cid, x->oid, x->off, x->len, ecsrv_data, x);
}

static void
ecsrv_submit(struct ecsrv *x)
{
	x->w = (struct cm_work){ .fn = ecsrv_meta_fn, .done = ecsrv_meta_done, .arg = x };
	if (osd_work(x->osd, &x->w))
		ecsrv_reply(x, -ESHUTDOWN, NULL);
}

static void
ecsrv_start_local(struct ecr *r, unsigned j)
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
pg_handle_ec_read(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__EcRead *q =
		(Cairn__Osd__EcRead *)cm_msg_unpack_front(m, &cairn__osd__ec_read__descriptor);
	struct ecsrv *x = NULL;
	struct pg *pg;
	int rc = 0, t;

	if (!q || osd_check_ec_read(q)) {
		CM_LOG_RL(CM_LOG_WARN, "bad EC read from %s", cm_conn_peer(c));
		rc = -EINVAL;
		goto reply;
	}
	pg = pg_find(o, q->pool, q->seed);
	/* Only the shard this OSD holds in its own map's interval. */
	for (t = 0; pg && t < pg->nacting; t++)
		if (pg->acting[t] == o->id)
			break;
	if (!pg || !pg->in_store || !pg->ec || t == pg->nacting || pg->shard[t] != q->shard ||
	    pg->info_shard != q->shard + 1 || pg->incomplete || oset_get(&pg->missing, q->oid)) {
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
	ver_from_pb(q->ver, &x->want);
	x->any = q->any;
	x->attrs = q->attrs;
	cairn__osd__ec_read__free_unpacked(q, NULL);
	cm_msg_destroy(m);
	ecsrv_submit(x);
	return;
reply : {
	Cairn__Osd__EcReadReply r = CAIRN__OSD__EC_READ_REPLY__INIT;

	r.rc = rc;
	osd_send_pb(c, OSD_MSG_EC_READ_REPLY, m->tid, &r.base, NULL);
}
	if (q)
		cairn__osd__ec_read__free_unpacked(q, NULL);
	cm_msg_destroy(m);
}

/* ---------- shutdown ---------- */

void
ec_abort_all(struct osd *o)
{
	struct ecr *r;

	/* Reads in flight end without running their ops on: an op whose last
	 * read this was is let go (freed if its interval already dropped it,
	 * else with its PG); a recovery job hears -ESHUTDOWN (it is dead by now). */
	while ((r = TAILQ_FIRST(&o->ecrs))) {
		r->finished = true;
		TAILQ_REMOVE(&o->ecrs, r, link);
		if (r->cb == op_read_done) {
			struct op *op = r->arg;

			if (--op->reads_pending == 0)
				(void)op_resume(op);
		} else if (r->cb == old_read_done) {
			struct op *op = r->arg;

			if (--op->ecw->reads == 0)
				(void)op_resume(op);
		} else if (r->cb == fetch_done) {
			fetch_done(r, -ESHUTDOWN);
		}
		if (!r->local_pending)
			ecr_free(r);
	}
}

void
ec_free_all(struct osd *o)
{
	ec_abort_all(o);
	for (size_t i = 0; i < o->necp; i++) {
		osd_ec_fini(&o->ecp[i]->ec);
		free(o->ecp[i]);
	}
	free(o->ecp);
	o->ecp = NULL;
	o->necp = 0;
}
