/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads: data through the reactor (onode from the read cache, else fetched
 * on a reader thread; blocks read with O_DIRECT into a bounce buffer and
 * checked against their crc32c), metadata straight from the KV (blocking),
 * and fsck.
 */
#include "store_internal.h"
#include "cm/crc32c.h"
#include "cm/log.h"

CM_LOG_SUBSYS(store);

static void
rd_finish(struct os_rd *rd)
{
	struct os_store *s = rd->s;

	TAILQ_REMOVE(&s->reads, rd, link);
	if (rd->rc) {
		cm_buf_put(rd->out);
		rd->out = NULL;
		memset(&rd->meta, 0, sizeof(rd->meta));
	}
	if (rd->mcb)
		rd->mcb(rd->arg, rd->rc, rd->out, &rd->meta);
	else
		rd->cb(rd->arg, rd->rc, rd->out);
	free(rd->attr_val);
	free(rd->attr);
	cm_buf_put(rd->bounce);
	os_onode_free(rd->on);
	free(rd->blks);
	free(rd->ios);
	free(rd->key);
	free(rd->cid);
	free(rd->oid);
	free(rd);
	os_read_gate_release(s);
}

static void
rio_done(struct cm_io *io, int res)
{
	struct os_rio *x = io->arg;
	struct os_rd *rd = x->rd;
	struct os_store *s = rd->s;

	if (res != (int)x->iov.iov_len && !rd->rc) {
		CM_ERR("read %s/%s: device read of block %" PRIu64 " failed: %s", rd->cid, rd->oid,
		       x->pblock, res < 0 ? strerror(-res) : "short read");
		rd->rc = -EIO;
	}
	if (--rd->ios_left)
		return;
	for (size_t i = 0; i < rd->nblks && !rd->rc; i++) {
		const struct os_rblk *b = &rd->blks[i];
		const uint8_t *src = (rd->bounce ? rd->bounce : rd->out)->data + b->boff;
		uint64_t bs = b->lblock * s->B, lo = CM_MAX(bs, rd->off),
			 hi = CM_MIN(bs + s->B, rd->off + rd->len);

		if (cm_crc32c(0, src, s->B) != b->csum) {
			CM_ERR("read %s/%s: checksum mismatch at offset %" PRIu64
			       " (device block %" PRIu64 "): refusing the read",
			       rd->cid, rd->oid, bs, b->pblock);
			s->c_csum_errors++;
			rd->rc = -EIO;
			break;
		}
		os_dcache_put(&s->dcache, b->pblock, src, rd->dgen);
		if (rd->bounce)
			memcpy(rd->out->data + (lo - rd->off), src + (lo - bs), hi - lo);
	}
	rd_finish(rd);
}

static void
start_io(struct os_rd *rd, const struct os_onode *on)
{
	struct os_store *s = rd->s;
	uint64_t B = s->B, fb, le;
	uint8_t *tmp = NULL;
	size_t nb = 0;
	bool direct;

	if (!on) {
		rd->rc = -ENOENT;
		rd_finish(rd);
		return;
	}
	rd->meta.size = on->size;
	for (size_t i = 0; rd->attr && i < on->nattrs; i++) {
		if (strcmp(on->attrs[i].name, rd->attr) != 0)
			continue;
		rd->attr_val = malloc(on->attrs[i].len ? on->attrs[i].len : 1);
		if (!rd->attr_val) {
			rd->rc = -ENOMEM;
			rd_finish(rd);
			return;
		}
		memcpy(rd->attr_val, on->attrs[i].val, on->attrs[i].len);
		rd->meta.has_attr = true;
		rd->meta.attr = rd->attr_val;
		rd->meta.attr_len = on->attrs[i].len;
		break;
	}
	if (rd->off >= on->size)
		rd->len = 0;
	else
		rd->len = CM_MIN(rd->len, on->size - rd->off);
	/* Whole blocks: read straight into the result (aligned), no bounce, no copy. */
	direct = rd->off % B == 0 && rd->len % B == 0 && rd->len;
	if (direct ? cm_buf_alloc_aligned(rd->len, 4096, &rd->out)
		   : cm_buf_alloc(rd->len ? rd->len : 1, &rd->out)) {
		rd->rc = -ENOMEM;
		rd_finish(rd);
		return;
	}
	rd->out->len = rd->len;
	if (rd->len == 0) {
		rd_finish(rd);
		return;
	}
	fb = rd->off / B;
	le = (rd->off + rd->len + B - 1) / B;
	/* Before the lookups: a write that lands after it keeps what the
	 * device reads return out of the cache. */
	rd->dgen = os_dcache_gen(&s->dcache);
	rd->blks = calloc(le - fb, sizeof(*rd->blks));
	rd->ios = calloc(le - fb, sizeof(*rd->ios));
	tmp = malloc(B);
	if (!rd->blks || !rd->ios || !tmp) {
		free(tmp);
		rd->rc = -ENOMEM;
		rd_finish(rd);
		return;
	}
	for (uint64_t lb = fb; lb < le; lb++) {
		const struct os_xext *e = os_onode_find(on, lb, NULL);
		uint64_t bs = lb * B, lo = CM_MAX(bs, rd->off),
			 hi = CM_MIN(bs + B, rd->off + rd->len);
		uint64_t pb;
		size_t boff;

		if (!e) {
			memset(rd->out->data + (lo - rd->off), 0, hi - lo);
			continue;
		}
		pb = e->pblock + (lb - e->lblock);
		/* A deferred write not applied yet: its data is the newest. */
		if (os_pend_copy(s, pb, tmp)) {
			memcpy(rd->out->data + (lo - rd->off), tmp + (lo - bs), hi - lo);
			continue;
		}
		/* Cached (checked when it was read): straight into the result. */
		if (lo == bs && hi == bs + B) {
			if (os_dcache_get(&s->dcache, pb, rd->out->data + (lo - rd->off)))
				continue;
		} else if (os_dcache_get(&s->dcache, pb, tmp)) {
			memcpy(rd->out->data + (lo - rd->off), tmp + (lo - bs), hi - lo);
			continue;
		}
		/* Where the block lands: its place in the result, or the next bounce slot. */
		boff = direct ? (lb - fb) * B : nb * B;
		rd->blks[rd->nblks] = (struct os_rblk){
			.lblock = lb, .pblock = pb, .csum = e->csum[lb - e->lblock], .boff = boff
		};
		if (rd->nios && rd->ios[rd->nios - 1].pblock + rd->ios[rd->nios - 1].n == pb &&
		    rd->blks[rd->nblks - 1].lblock == lb - 1)
			rd->ios[rd->nios - 1].n++;
		else
			rd->ios[rd->nios++] = (struct os_rio){ .pblock = pb, .n = 1, .boff = boff };
		rd->nblks++;
		nb++;
	}
	free(tmp);
	if (!rd->nios) {
		rd_finish(rd);
		return;
	}
	if (!direct && cm_buf_alloc_aligned(nb * B, 4096, &rd->bounce)) {
		rd->rc = -ENOMEM;
		rd_finish(rd);
		return;
	}
	rd->ios_left = (unsigned)rd->nios;
	for (size_t i = 0; i < rd->nios; i++) {
		struct os_rio *x = &rd->ios[i];

		x->rd = rd;
		x->iov.iov_base = (direct ? rd->out : rd->bounce)->data + x->boff;
		x->iov.iov_len = x->n * B;
		x->io.cb = rio_done;
		x->io.arg = x;
		if (cm_io_readv(s->r, &x->io, s->fd, &x->iov, 1, (off_t)(x->pblock * B)))
			rio_done(&x->io, -EIO);
	}
}

static void
fetch_fn(void *arg)
{
	struct os_rd *rd = arg;
	struct os_store *s = rd->s;

	rd->on = NULL;
	rd->missing = false;
	rd->rc = os_onode_load(s->db, s->ro, false, rd->key, rd->klen, &rd->on);
	if (!rd->rc && !rd->on)
		rd->missing = true;
	else if (rd->rc && rd->rc != -ENOMEM)
		rd->rc = -EIO;
}

static void fetch_submit(struct os_rd *rd);

static void
fetch_done(void *arg)
{
	struct os_rd *rd = arg;
	struct os_store *s = rd->s;
	struct os_oent *e;

	if (rd->rc) {
		rd_finish(rd);
		return;
	}
	if (rd->fetch_gen != s->commit_gen) {
		/* A commit landed meanwhile: what we read may be stale. */
		os_onode_free(rd->on);
		rd->on = NULL;
		e = os_ocache_get(&s->rcache, rd->key, rd->klen);
		if (e) {
			start_io(rd, e->on);
			return;
		}
		fetch_submit(rd);
		return;
	}
	e = os_ocache_get(&s->rcache, rd->key, rd->klen);
	if (!e) {
		e = os_ocache_put(&s->rcache, rd->key, rd->klen, rd->on);
		rd->on = NULL;
		os_ocache_trim(&s->rcache);
		e = os_ocache_get(&s->rcache, rd->key, rd->klen);
	}
	if (!e) {
		start_io(rd, rd->missing ? NULL : rd->on);
		return;
	}
	start_io(rd, e->on);
}

static void
fetch_submit(struct os_rd *rd)
{
	struct os_store *s = rd->s;

	/* RocksDB may not have every acknowledged round yet: wait (os_fetch_release). */
	rd->kv_want = s->kv_acked;
	if (__atomic_load_n(&s->kv_done, __ATOMIC_ACQUIRE) < rd->kv_want) {
		__atomic_fetch_add(&s->c_gate_waits, 1, __ATOMIC_RELAXED);
		TAILQ_INSERT_TAIL(&s->fetch_wait, rd, wlink);
		return;
	}
	rd->fetch_gen = rd->s->commit_gen;
	rd->work = (struct cm_work){ .fn = fetch_fn, .done = fetch_done, .arg = rd };
	if (cm_worker_submit(rd->s->rd, rd->s->r, &rd->work)) {
		rd->rc = -ESHUTDOWN;
		rd_finish(rd);
	}
}

void
os_fetch_release(struct os_store *s)
{
	uint64_t done = __atomic_load_n(&s->kv_done, __ATOMIC_ACQUIRE);
	struct os_rd *rd, *tmp;
	bool broken;

	if (TAILQ_EMPTY(&s->fetch_wait))
		return;
	pthread_mutex_lock(&s->kv_mu);
	broken = s->kv_broken;
	pthread_mutex_unlock(&s->kv_mu);
	TAILQ_FOREACH_SAFE(rd, &s->fetch_wait, wlink, tmp) {
		if (done < rd->kv_want && !broken)
			continue;
		TAILQ_REMOVE(&s->fetch_wait, rd, wlink);
		if (done < rd->kv_want) {
			rd->rc = -EIO;
			rd_finish(rd);
		} else {
			fetch_submit(rd);
		}
	}
}

/* A read that never started: its callback, of whichever kind, with rc. */
static void
read_fail(os_read_cb cb, os_read_meta_cb mcb, void *arg, int rc)
{
	static const struct os_read_meta none;

	if (mcb)
		mcb(arg, rc, NULL, &none);
	else
		cb(arg, rc, NULL);
}

static void
read_here(struct os_store *s, const char *cid, const char *oid, uint64_t off, uint64_t len,
	  const char *attr, os_read_cb cb, os_read_meta_cb mcb, void *arg)
{
	struct os_rd *rd = calloc(1, sizeof(*rd));
	struct os_oent *e;

	if (!rd || !cid || !oid || strlen(cid) > OS_NAME_MAX || strlen(oid) > OS_NAME_MAX) {
		free(rd);
		read_fail(cb, mcb, arg, rd ? -EINVAL : -ENOMEM);
		return;
	}
	rd->s = s;
	rd->gen = s->gen;
	rd->off = off;
	rd->len = len;
	rd->cb = cb;
	rd->mcb = mcb;
	rd->arg = arg;
	rd->cid = strdup(cid);
	rd->oid = strdup(oid);
	rd->key = malloc(strlen(cid) + strlen(oid) + 2);
	if (attr)
		rd->attr = strdup(attr);
	TAILQ_INSERT_TAIL(&s->reads, rd, link);
	if (!rd->cid || !rd->oid || !rd->key || (attr && !rd->attr)) {
		rd->rc = -ENOMEM;
		rd_finish(rd);
		return;
	}
	rd->klen = os_key_onode(rd->key, cid, oid);
	e = os_ocache_get(&s->rcache, rd->key, rd->klen);
	if (e)
		start_io(rd, e->on);
	else
		fetch_submit(rd);
}

/*
 * A read from another reactor (an OSD shard) runs on the store's reactor
 * and its result travels back. A read posted after a transaction from the
 * same reactor reaches the store after it, as a local one would.
 */
struct os_rfwd {
	struct cm_reactor_msg m;
	struct cm_reactor *origin;
	struct os_store *s;
	char *cid, *oid, *attr;
	uint64_t off, len;
	os_read_cb cb;
	os_read_meta_cb mcb;
	void *arg;
	int rc;
	struct cm_buf *data;
	struct os_read_meta meta;
	uint8_t *attr_val;
};

static void
rfwd_free(void *arg)
{
	struct os_rfwd *f = arg;

	cm_buf_put(f->data);
	free(f->cid);
	free(f->oid);
	free(f->attr);
	free(f->attr_val);
	free(f);
}

static void
rfwd_back(void *arg)
{
	struct os_rfwd *f = arg;
	struct cm_buf *data = f->data;

	f->data = NULL;
	if (f->mcb)
		f->mcb(f->arg, f->rc, data, &f->meta);
	else
		f->cb(f->arg, f->rc, data);
	rfwd_free(f);
}

static void
rfwd_done(void *arg, int rc, struct cm_buf *data, const struct os_read_meta *m)
{
	struct os_rfwd *f = arg;

	f->rc = rc;
	f->data = data;
	f->meta = *m;
	f->meta.attr = NULL;
	if (m->has_attr) {
		f->attr_val = malloc(m->attr_len ? m->attr_len : 1);
		if (f->attr_val) {
			memcpy(f->attr_val, m->attr, m->attr_len);
			f->meta.attr = f->attr_val;
		} else {
			cm_buf_put(f->data);
			f->data = NULL;
			f->rc = -ENOMEM;
			memset(&f->meta, 0, sizeof(f->meta));
		}
	}
	f->m = (struct cm_reactor_msg){ .fn = rfwd_back, .arg = f, .drop = rfwd_free };
	cm_reactor_post(f->origin, &f->m);
}

static void
rfwd_run(void *arg)
{
	struct os_rfwd *f = arg;

	read_here(f->s, f->cid, f->oid, f->off, f->len, f->attr, NULL, rfwd_done, f);
}

static void
read_any(struct os_store *s, const char *cid, const char *oid, uint64_t off, uint64_t len,
	 const char *attr, os_read_cb cb, os_read_meta_cb mcb, void *arg)
{
	struct cm_reactor *self = cm_reactor_self();
	struct os_rfwd *f;

	if (!self || self == s->r) {
		read_here(s, cid, oid, off, len, attr, cb, mcb, arg);
		return;
	}
	f = calloc(1, sizeof(*f));
	if (f) {
		f->cid = cid ? strdup(cid) : NULL;
		f->oid = oid ? strdup(oid) : NULL;
		f->attr = attr ? strdup(attr) : NULL;
	}
	if (!f || (cid && !f->cid) || (oid && !f->oid) || (attr && !f->attr)) {
		if (f)
			rfwd_free(f);
		read_fail(cb, mcb, arg, -ENOMEM);
		return;
	}
	f->origin = self;
	f->s = s;
	f->off = off;
	f->len = len;
	f->cb = cb;
	f->mcb = mcb;
	f->arg = arg;
	f->m = (struct cm_reactor_msg){ .fn = rfwd_run, .arg = f, .drop = rfwd_free };
	cm_reactor_post(s->r, &f->m);
}

void
os_read(struct os_store *s, const char *cid, const char *oid, uint64_t off, uint64_t len,
	os_read_cb cb, void *arg)
{
	read_any(s, cid, oid, off, len, NULL, cb, NULL, arg);
}

void
os_read_meta(struct os_store *s, const char *cid, const char *oid, uint64_t off, uint64_t len,
	     const char *attr, os_read_meta_cb cb, void *arg)
{
	read_any(s, cid, oid, off, len, attr, NULL, cb, arg);
}

/* ---------- metadata (blocking) ---------- */

static int
load(struct os_store *s, const char *cid, const char *oid, struct os_onode **op)
{
	char key[2 * OS_NAME_MAX + 4];
	int rc;

	if (!cid || !oid || strlen(cid) > OS_NAME_MAX || strlen(oid) > OS_NAME_MAX)
		return -EINVAL;
	if ((rc = os_kv_wait(s)))
		return rc;
	rc = os_onode_load(s->db, s->ro, false, key, os_key_onode(key, cid, oid), op);
	if (!rc && !*op)
		return -ENOENT;
	return rc;
}

int
os_stat(struct os_store *s, const char *cid, const char *oid, struct os_stat *st)
{
	struct os_onode *on;
	int rc = load(s, cid, oid, &on);

	if (rc)
		return rc;
	st->size = on->size;
	st->version = on->version;
	st->nid = on->nid;
	st->nattrs = (uint32_t)on->nattrs;
	os_onode_free(on);
	return 0;
}

static int
kv_set(struct os_kv *kv, const void *k, size_t kl, const void *v, size_t vl)
{
	kv->key = malloc(kl + 1);
	kv->val = malloc(vl + 1);
	if (!kv->key || !kv->val) {
		free(kv->key);
		free(kv->val);
		kv->key = kv->val = NULL;
		return -ENOMEM;
	}
	if (kl)
		memcpy(kv->key, k, kl);
	kv->key[kl] = 0;
	if (vl)
		memcpy(kv->val, v, vl);
	kv->val[vl] = 0;
	kv->klen = kl;
	kv->vlen = vl;
	return 0;
}

void
os_kvs_free(struct os_kv *kv, size_t n)
{
	for (size_t i = 0; kv && i < n; i++) {
		free(kv[i].key);
		free(kv[i].val);
	}
	free(kv);
}

int
os_getattr(struct os_store *s, const char *cid, const char *oid, const char *name,
	   struct os_kv *out)
{
	struct os_onode *on;
	int rc = load(s, cid, oid, &on);

	if (rc)
		return rc;
	rc = -ENODATA;
	for (size_t i = 0; i < on->nattrs; i++)
		if (!strcmp(on->attrs[i].name, name))
			rc = kv_set(out, name, strlen(name), on->attrs[i].val, on->attrs[i].len);
	os_onode_free(on);
	return rc;
}

int
os_getattrs(struct os_store *s, const char *cid, const char *oid, struct os_kv **kvs, size_t *n)
{
	struct os_onode *on;
	int rc = load(s, cid, oid, &on);

	if (rc)
		return rc;
	*kvs = calloc(on->nattrs + 1, sizeof(**kvs));
	*n = 0;
	if (!*kvs)
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < on->nattrs; i++) {
		rc = kv_set(&(*kvs)[i], on->attrs[i].name, strlen(on->attrs[i].name),
			    on->attrs[i].val, on->attrs[i].len);
		if (!rc)
			(*n)++;
	}
	os_onode_free(on);
	return rc;
}

int
os_omap_get_header(struct os_store *s, const char *cid, const char *oid, struct os_kv *out)
{
	struct os_onode *on;
	int rc = load(s, cid, oid, &on);

	if (rc)
		return rc;
	rc = kv_set(out, "", 0, on->hdr, on->hdrlen);
	os_onode_free(on);
	return rc;
}

int
os_omap_get(struct os_store *s, const char *cid, const char *oid, const struct os_kv *keys,
	    size_t nkeys, struct os_kv *out)
{
	struct os_onode *on;
	int rc = load(s, cid, oid, &on);

	if (rc)
		return rc;
	for (size_t i = 0; i < nkeys && !rc; i++) {
		char *k = malloc(9 + keys[i].klen), *err = NULL, *v;
		size_t vl;

		memset(&out[i], 0, sizeof(out[i]));
		if (!k) {
			rc = -ENOMEM;
			break;
		}
		v = rocksdb_get(s->db, s->ro, k, os_key_omap(k, on->nid, keys[i].key, keys[i].klen),
				&vl, &err);
		free(k);
		if (err) {
			rocksdb_free(err);
			rc = -EIO;
		} else if (v) {
			rc = kv_set(&out[i], keys[i].key, keys[i].klen, v, vl);
			rocksdb_free(v);
		}
	}
	os_onode_free(on);
	return rc;
}

int
os_omap_iterate(struct os_store *s, const char *cid, const char *oid, const void *start_after,
		size_t salen, const void *prefix, size_t plen, unsigned max, struct os_kv **kvs,
		size_t *n, bool *more)
{
	struct os_onode *on;
	rocksdb_iterator_t *it;
	char *seek;
	size_t sl, cap = 16;
	int rc = load(s, cid, oid, &on);

	*n = 0;
	*more = false;
	*kvs = NULL;
	if (rc)
		return rc;
	seek = malloc(9 + CM_MAX(salen, plen));
	*kvs = calloc(cap, sizeof(**kvs));
	if (!seek || !*kvs) {
		free(seek);
		os_onode_free(on);
		return -ENOMEM;
	}
	if (start_after && (!prefix || memcmp(start_after, prefix, CM_MIN(salen, plen)) >= 0))
		sl = os_key_omap(seek, on->nid, start_after, salen);
	else
		sl = os_key_omap(seek, on->nid, prefix, prefix ? plen : 0);
	it = rocksdb_create_iterator(s->db, s->ro);
	for (rocksdb_iter_seek(it, seek, sl); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl), *v;

		if (kl < 9 || memcmp(k, seek, 9) != 0)
			break;
		if (start_after && kl - 9 == salen && !memcmp(k + 9, start_after, salen))
			continue;
		if (prefix && (kl - 9 < plen || memcmp(k + 9, prefix, plen) != 0))
			break;
		if (*n == max) {
			*more = true;
			break;
		}
		if (*n + 1 >= cap) {
			struct os_kv *nk = realloc(*kvs, sizeof(*nk) * cap * 2);

			if (!nk) {
				rc = -ENOMEM;
				break;
			}
			*kvs = nk;
			cap *= 2;
		}
		v = rocksdb_iter_value(it, &vl);
		rc = kv_set(&(*kvs)[*n], k + 9, kl - 9, v, vl);
		if (rc)
			break;
		(*n)++;
	}
	rocksdb_iter_destroy(it);
	free(seek);
	os_onode_free(on);
	if (rc) {
		os_kvs_free(*kvs, *n);
		*kvs = NULL;
		*n = 0;
	}
	return rc;
}

void
os_names_free(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

int
os_list(struct os_store *s, const char *cid, const char *start_after, unsigned max, char ***oids,
	size_t *n, bool *more)
{
	char key[2 * OS_NAME_MAX + 4];
	size_t pl, cap = 16;
	rocksdb_iterator_t *it;
	int rc = 0;

	*n = 0;
	*more = false;
	if (!cid || strlen(cid) > OS_NAME_MAX || (start_after && strlen(start_after) > OS_NAME_MAX))
		return -EINVAL;
	if ((rc = os_kv_wait(s)))
		return rc;
	{
		char ck[OS_NAME_MAX + 2], *err = NULL, *v;
		size_t vl;

		v = rocksdb_get(s->db, s->ro, ck, os_key_coll(ck, cid), &vl, &err);
		rocksdb_free(err);
		if (!v)
			return -ENOENT;
		rocksdb_free(v);
	}
	*oids = calloc(cap, sizeof(**oids));
	if (!*oids)
		return -ENOMEM;
	pl = os_key_onode(key, cid, "");
	it = rocksdb_create_iterator(s->db, s->ro);
	rocksdb_iter_seek(it, key, start_after ? os_key_onode(key, cid, start_after) : pl);
	for (; rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);

		if (kl < pl || memcmp(k, key, pl) != 0)
			break;
		if (start_after && kl - pl == strlen(start_after) &&
		    !memcmp(k + pl, start_after, kl - pl))
			continue;
		if (*n == max) {
			*more = true;
			break;
		}
		if (*n + 1 >= cap) {
			char **nn = realloc(*oids, sizeof(*nn) * cap * 2);

			if (!nn) {
				rc = -ENOMEM;
				break;
			}
			*oids = nn;
			cap *= 2;
		}
		(*oids)[*n] = strndup(k + pl, kl - pl);
		if (!(*oids)[*n]) {
			rc = -ENOMEM;
			break;
		}
		(*n)++;
	}
	rocksdb_iter_destroy(it);
	if (rc) {
		os_names_free(*oids, *n);
		*oids = NULL;
		*n = 0;
	}
	return rc;
}

int
os_list_collections(struct os_store *s, char ***cids, size_t *n)
{
	rocksdb_iterator_t *it;
	size_t cap = 16;
	int rc = 0;

	*n = 0;
	if ((rc = os_kv_wait(s)))
		return rc;
	it = rocksdb_create_iterator(s->db, s->ro);
	*cids = calloc(cap, sizeof(**cids));
	if (!*cids) {
		rocksdb_iter_destroy(it);
		return -ENOMEM;
	}
	for (rocksdb_iter_seek(it, "C", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);

		if (kl < 1 || k[0] != 'C')
			break;
		if (*n + 1 >= cap) {
			char **nn = realloc(*cids, sizeof(*nn) * cap * 2);

			if (!nn) {
				rc = -ENOMEM;
				break;
			}
			*cids = nn;
			cap *= 2;
		}
		(*cids)[*n] = strndup(k + 1, kl - 1);
		if (!(*cids)[(*n)])
			break;
		(*n)++;
	}
	rocksdb_iter_destroy(it);
	return rc;
}

/* ---------- fsck ---------- */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#define FSCK_ERR(rep, ...)                                                                     \
	do {                                                                                   \
		if (!(rep)->errors++)                                                          \
			snprintf((rep)->first_error, sizeof((rep)->first_error), __VA_ARGS__); \
	} while (0)

/*
 * Append nid to *v (fsck's lists of object ids). Out of memory it is left
 * out — as before, fsck then reports keys of that id as orphans.
 */
static void
push_nid(uint64_t **v, size_t *n, size_t *cap, uint64_t nid)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		uint64_t *nv = realloc(*v, sizeof(*nv) * nc);

		if (!nv)
			return;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = nid;
}

/* fsck's walk: what it learns of every collection and onode. */
struct fsck {
	struct os_store *s;
	struct os_fsck_report *rep;
	bool deep;
	struct os_alloc *seen;
	struct os_refs cnt; /* blocks mapped by more than one extent, and by how many */
	uint8_t *blk;
	char **colls;
	size_t ncolls;
	uint64_t *nids, *quiet; /* quiet: objects with no omap */
	uint64_t *sharded;      /* objects whose extents are in shards */
	size_t nnids, capn, nquiet, capq, nsharded, caps;
};

static int
fsck_coll(void *arg, const char *name, size_t len)
{
	struct fsck *f = arg;
	char **nc = realloc(f->colls, sizeof(*nc) * (f->ncolls + 1));

	if (nc) {
		f->colls = nc;
		nc[f->ncolls] = strndup(name, len);
		if (nc[f->ncolls])
			f->ncolls++;
	}
	f->rep->collections++;
	return 0;
}

static int
fsck_onode(void *arg, const char *k, size_t kl, const char *oid, struct os_onode *on, int drc,
	   int src)
{
	struct fsck *f = arg;
	struct os_store *s = f->s;
	struct os_fsck_report *rep = f->rep;
	const char *cid = k + 1;
	bool have_coll = false;
	int ol;

	if (!oid) {
		FSCK_ERR(rep, "malformed onode key");
		return 0;
	}
	ol = (int)(kl - (size_t)(oid - k));
	rep->objects++;
	for (size_t i = 0; i < f->ncolls; i++)
		have_coll |= !strcmp(f->colls[i], cid);
	if (!have_coll)
		FSCK_ERR(rep, "object %s/%.*s is in a collection that does not exist", cid, ol,
			 oid);
	if (drc) {
		FSCK_ERR(rep, "object %s/%.*s: undecodable onode", cid, ol, oid);
		return 0;
	}
	if (on->shard_blocks) {
		push_nid(&f->sharded, &f->nsharded, &f->caps, on->nid);
		if (src)
			FSCK_ERR(rep, "object %s/%.*s: undecodable extent map shard", cid, ol, oid);
	}
	push_nid(&f->nids, &f->nnids, &f->capn, on->nid);
	if (on->no_omap)
		push_nid(&f->quiet, &f->nquiet, &f->capq, on->nid);
	for (size_t i = 0; i < on->next; i++) {
		const struct os_xext *e = &on->ext[i];

		rep->extents++;
		rep->blocks_used += e->n;
		if (e->pblock < s->data_start || e->pblock + e->n > s->nblocks) {
			FSCK_ERR(rep, "object %s/%.*s: extent %" PRIu64 "+%u outside the device",
				 cid, ol, oid, e->pblock, e->n);
			continue;
		}
		if (os_refs_mark(f->seen, &f->cnt, e->pblock, e->n))
			FSCK_ERR(rep,
				 "object %s/%.*s: out of memory counting blocks %" PRIu64 "+%u",
				 cid, ol, oid, e->pblock, e->n);
		if (e->lblock * s->B >= on->size + s->B)
			FSCK_ERR(rep, "object %s/%.*s: extent past the end", cid, ol, oid);
		for (uint32_t b = 0; f->deep && b < e->n; b++) {
			if (pread(s->fd, f->blk, s->B, (off_t)((e->pblock + b) * s->B)) !=
				    (ssize_t)s->B ||
			    cm_crc32c(0, f->blk, s->B) != e->csum[b]) {
				rep->csum_errors++;
				FSCK_ERR(rep,
					 "object %s/%.*s: bad checksum at offset %" PRIu64
					 " (device block %" PRIu64 ")",
					 cid, ol, oid, (e->lblock + b) * s->B, e->pblock + b);
			}
		}
	}
	return 0;
}

struct fsck_refs {
	struct os_fsck_report *rep;
	const char *what;
};

static void
fsck_refs_bad(void *arg, const char *k, size_t kl, const char *why)
{
	struct os_fsck_report *rep = arg;

	FSCK_ERR(rep, "refcount record of block %" PRIu64 " %s", kl == 9 ? os_get_be64(k + 1) : 0,
		 why);
}

static void
fsck_refs_mismatch(void *arg, uint64_t pb, uint32_t counted, uint32_t recorded)
{
	struct fsck_refs *fr = arg;

	FSCK_ERR(fr->rep, "block %" PRIu64 ": %u extents map it, %s says %u", pb, counted, fr->what,
		 recorded);
}

/* Shared blocks: the "R" records and the store's counts against the onodes. */
static void
fsck_refs(struct os_store *s, struct fsck *f, rocksdb_iterator_t *it)
{
	struct os_fsck_report *rep = f->rep;
	struct os_refs rec = { 0 };
	struct fsck_refs fr = { .rep = rep, .what = "its refcount record" };
	uint64_t pb;
	uint32_t r;

	if (os_refs_load(it, s->nblocks, s->data_start, &rec, fsck_refs_bad, rep) == -ENOMEM)
		FSCK_ERR(rep, "out of memory reading refcount records");
	os_refs_compare(&f->cnt, &rec, f->seen, fsck_refs_mismatch, &fr);
	fr.what = "the mounted store's count";
	os_refs_compare(&f->cnt, &s->refs, f->seen, fsck_refs_mismatch, &fr);
	rep->shared_blocks = f->cnt.n;
	for (size_t i = os_refs_next(&f->cnt, 0, &pb, &r); i; i = os_refs_next(&f->cnt, i, &pb, &r))
		rep->blocks_used -= r - 1; /* distinct blocks */
	os_refs_fini(&rec);
}

int
os_fsck(struct os_store *s, bool deep, struct os_fsck_report *rep)
{
	static const struct os_walk_ops ops = { .coll = fsck_coll, .onode = fsck_onode };
	rocksdb_iterator_t *it, *xit;
	struct fsck f = { .s = s, .rep = rep, .deep = deep };
	uint64_t *nids, *quiet, *sharded;
	size_t nnids, nquiet, nsharded;
	int rc;

	memset(rep, 0, sizeof(*rep));
	os_drain(s); /* first: the iterator's snapshot must hold what was in flight */
	it = rocksdb_create_iterator(s->db, s->ro);
	xit = rocksdb_create_iterator(s->db, s->ro); /* shards, beside it (idle: same view) */
	f.blk = aligned_alloc(4096, s->B);
	rc = os_alloc_create(s->nblocks, s->data_start, &f.seen);
	if (rc || !f.blk) {
		free(f.blk);
		rocksdb_iter_destroy(it);
		rocksdb_iter_destroy(xit);
		os_alloc_destroy(f.seen);
		return -ENOMEM;
	}
	(void)os_walk_onodes(it, xit, &ops, &f);
	fsck_refs(s, &f, it);
	nids = f.nids;
	quiet = f.quiet;
	sharded = f.sharded;
	nnids = f.nnids;
	nquiet = f.nquiet;
	nsharded = f.nsharded;
	/* The allocator's in-use set is exactly the referenced blocks (plus held frees). */
	{
		uint64_t leaked = 0, missing = 0;

		pthread_mutex_lock(&s->alloc_mu);
		for (uint64_t b = 1; b < s->nblocks; b++) {
			bool used = os_alloc_is_used(s->alloc, b),
			     ref = os_alloc_is_used(f.seen, b);

			if (used && !ref)
				leaked++;
			else if (!used && ref)
				missing++;
		}
		pthread_mutex_unlock(&s->alloc_mu);
		if (missing)
			FSCK_ERR(rep, "%" PRIu64 " referenced blocks are free in the allocator",
				 missing);
		if (leaked && TAILQ_EMPTY(&s->held) && !s->inflight)
			FSCK_ERR(rep, "%" PRIu64 " blocks in use but referenced by no object",
				 leaked);
	}
	/* Omap keys of live objects only, and not of those whose onode says
	 * they have none (their removal would leave the keys behind). */
	if (nids)
		qsort(nids, nnids, sizeof(*nids), cmp_u64);
	if (quiet)
		qsort(quiet, nquiet, sizeof(*quiet), cmp_u64);
	for (rocksdb_iter_seek(it, "M", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);
		uint64_t nid = 0;

		if (kl < 1 || k[0] != 'M')
			break;
		if (kl < 9) {
			FSCK_ERR(rep, "malformed omap key");
			continue;
		}
		nid = os_get_be64(k + 1);
		rep->omap_keys++;
		if (!nids || !bsearch(&nid, nids, nnids, sizeof(*nids), cmp_u64))
			FSCK_ERR(rep, "omap key of object id %" PRIu64 " which does not exist",
				 nid);
		else if (quiet && bsearch(&nid, quiet, nquiet, sizeof(*quiet), cmp_u64))
			FSCK_ERR(rep,
				 "omap key of object id %" PRIu64 " whose onode says it has none",
				 nid);
	}
	/* Shard records of live sharded objects only. */
	if (sharded)
		qsort(sharded, nsharded, sizeof(*sharded), cmp_u64);
	for (rocksdb_iter_seek(it, "X", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);
		uint64_t nid = 0;

		if (kl < 1 || k[0] != 'X')
			break;
		rep->shards++;
		if (kl != OS_KEY_SHARD_LEN) {
			FSCK_ERR(rep, "malformed extent map shard key");
			continue;
		}
		nid = os_get_be64(k + 1);
		if (!sharded || !bsearch(&nid, sharded, nsharded, sizeof(*sharded), cmp_u64))
			FSCK_ERR(rep,
				 "extent map shard of object id %" PRIu64
				 " which does not exist or keeps its extents in its onode",
				 nid);
	}
	rocksdb_iter_destroy(it);
	rocksdb_iter_destroy(xit);
	os_alloc_destroy(f.seen);
	os_refs_fini(&f.cnt);
	for (size_t i = 0; i < f.ncolls; i++)
		free(f.colls[i]);
	free(f.colls);
	free(nids);
	free(quiet);
	free(sharded);
	free(f.blk);
	return 0;
}
