/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Preparing a transaction (kv thread, one at a time, in queue order):
 * apply its ops to working copies of the onodes (from this thread's cache,
 * which holds the newest, possibly uncommitted, state; else the KV),
 * allocate blocks for copy-on-write data, turn small overwrites of
 * allocated blocks into deferred writes, and fill one RocksDB batch. On any
 * error the working copies are dropped and what was taken is given back:
 * nothing of the transaction happens.
 */
#include "store_internal.h"
#include "cm/crc32c.h"
#include "cm/log.h"

CM_LOG_SUBSYS(store);

#define MAX_EXT_PER_WRITE 256
#define CLONE_CHUNK       (4u << 20)

struct pobj {
	char *key;
	size_t klen;
	char *cid, *oid;
	struct os_onode *on;   /* working copy; NULL: does not exist (now) */
	struct os_onode *base; /* the state before (shared, never changed); NULL: none */
	bool dirty, bumped;
	bool base_exists; /* before this transaction (collection stats) */
	uint64_t base_size;
};

/* What this transaction did to an omap so far (clone reads committed keys + these). */
struct ovl {
	uint64_t nid;
	enum os_op_type type; /* OP_OMAP_SET, OP_OMAP_RM, OP_OMAP_RM_RANGE, OP_OMAP_CLEAR */
	const uint8_t *k, *v;
	size_t kl, vl;
};

struct pctx {
	struct os_store *s;
	struct os_txn *t;
	bool nb; /* on the reactor: -EAGAIN rather than wait for the disk */
	struct ovl *ovl;
	size_t novl;
	uint8_t **owned; /* buffers the overlay points into */
	size_t nowned;
	struct pobj *objs;
	size_t nobjs;
	char **mk, **rm; /* collections made / removed by this transaction */
	size_t nmk, nrm;

	/* Changes to the shared blocks' counts (s->refs), in order, with the
	 * count before each: undone on failure, persisted by install. */
	struct rundo {
		uint64_t pb;
		uint32_t old;
	} * ru;

	size_t nru, capru;
};

static int ovl_add(struct pctx *c, uint64_t nid, enum os_op_type type, const uint8_t *k, size_t kl,
		   const uint8_t *v, size_t vl);

static int
blk_read(struct pctx *c, const struct os_onode *on, uint64_t lb, uint8_t *dst, const char *what)
{
	struct os_store *s = c->s;
	const struct os_xext *e = os_onode_find(on, lb, NULL);
	uint64_t pb;
	ssize_t n;

	if (!e) {
		memset(dst, 0, s->B);
		return 0;
	}
	pb = e->pblock + (lb - e->lblock);
	if (os_pend_copy(s, pb, dst))
		return 0;
	if (c->nb)
		return -EAGAIN;
	n = pread(s->fd, dst, s->B, (off_t)(pb * s->B));
	if (n != (ssize_t)s->B) {
		CM_ERR("%s: device read of block %" PRIu64 " failed", what, pb);
		return -EIO;
	}
	if (cm_crc32c(0, dst, s->B) != e->csum[lb - e->lblock]) {
		CM_ERR("%s: checksum mismatch at offset %" PRIu64 " (device block %" PRIu64 ")",
		       what, lb * s->B, pb);
		s->c_csum_errors++;
		return -EIO;
	}
	return 0;
}

static bool
coll_exists(struct pctx *c, const char *cid)
{
	for (size_t i = 0; i < c->nrm; i++)
		if (!strcmp(c->rm[i], cid))
			return false;
	for (size_t i = 0; i < c->nmk; i++)
		if (!strcmp(c->mk[i], cid))
			return true;
	for (size_t i = 0; i < c->s->ncolls; i++)
		if (!strcmp(c->s->colls[i], cid))
			return true;
	return false;
}

static int
push_name(char ***v, size_t *n, const char *name)
{
	char **nv = realloc(*v, sizeof(*nv) * (*n + 1));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(name);
	if (!nv[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

/*
 * A copy of the newest committed-or-queued state of an object (*op NULL:
 * none), made under the cache lock (the commit thread may evict entries).
 */
static int
base_onode(struct os_store *s, const char *key, size_t klen, bool nb, struct os_onode **op,
	   struct os_onode **basep)
{
	struct os_oent *e;
	struct os_onode *on = NULL;
	int rc = 0;

	*basep = NULL;
	pthread_mutex_lock(&s->pcache_mu);
	e = os_ocache_get(&s->pcache, key, klen);
	if (e) {
		*op = e->on ? os_onode_dup(e->on) : NULL;
		rc = e->on && !*op ? -ENOMEM : 0;
		if (!rc && e->on)
			*basep = os_onode_ref(e->on);
	}
	pthread_mutex_unlock(&s->pcache_mu);
	if (e)
		return rc;
	rc = os_onode_load(s->db, nb ? s->ro_nb : s->ro, nb, key, klen, &on);
	if (rc)
		return rc; /* -EAGAIN: block cache only, and it is on the disk */
	*op = on ? os_onode_dup(on) : NULL;
	if (on && !*op) {
		os_onode_free(on);
		return -ENOMEM;
	}
	pthread_mutex_lock(&s->pcache_mu);
	e = os_ocache_put(&s->pcache, key, klen, on);
	if (e && on)
		*basep = os_onode_ref(on);
	pthread_mutex_unlock(&s->pcache_mu);
	if (!e) {
		os_onode_free(*op);
		return -ENOMEM;
	}
	return 0;
}

static int
get_obj(struct pctx *c, const char *cid, const char *oid, bool create, struct pobj **pp)
{
	char key[2 * OS_NAME_MAX + 4];
	size_t klen = os_key_onode(key, cid, oid);
	struct os_onode *base, *base_ref;
	struct pobj *p, *n;
	int rc;

	for (size_t i = 0; i < c->nobjs; i++) {
		p = &c->objs[i];
		if (p->klen == klen && !memcmp(p->key, key, klen))
			goto found;
	}
	if (!coll_exists(c, cid))
		return -ENOENT;
	rc = base_onode(c->s, key, klen, c->nb, &base, &base_ref);
	if (rc)
		return rc;
	n = realloc(c->objs, sizeof(*n) * (c->nobjs + 1));
	if (!n) {
		os_onode_free(base);
		os_onode_free(base_ref);
		return -ENOMEM;
	}
	c->objs = n;
	p = &c->objs[c->nobjs];
	memset(p, 0, sizeof(*p));
	p->key = malloc(klen);
	p->cid = strdup(cid);
	p->oid = strdup(oid);
	if (!p->key || !p->cid || !p->oid) {
		free(p->key);
		free(p->cid);
		free(p->oid);
		os_onode_free(base);
		os_onode_free(base_ref);
		return -ENOMEM;
	}
	memcpy(p->key, key, klen);
	p->klen = klen;
	p->on = base;
	p->base = base_ref;
	p->base_exists = base != NULL;
	p->base_size = base ? base->size : 0;
	c->nobjs++;
found:
	if (!coll_exists(c, cid))
		return -ENOENT;
	if (!p->on) {
		if (!create)
			return -ENOENT;
		p->on = os_onode_new(c->s->next_nid++);
		if (!p->on)
			return -ENOMEM;
		p->dirty = true;
	}
	if (!p->bumped) {
		p->on->version++;
		p->bumped = true;
	}
	*pp = p;
	return 0;
}

/* A copy-on-write device write of n blocks; cs: their crc32c (for the journal's manifest). */
static int
add_write(struct os_txn *t, uint64_t pblock, uint64_t n, struct cm_buf *buf, size_t off,
	  const uint32_t *cs)
{
	uint32_t *csum = malloc(sizeof(*csum) * n);

	if (!csum)
		return -ENOMEM;
	memcpy(csum, cs, sizeof(*csum) * n);
	if (t->nwrites == t->capwrites) {
		size_t nc = t->capwrites ? t->capwrites * 2 : 4;
		struct os_dwrite *w = realloc(t->writes, sizeof(*w) * nc);

		if (!w) {
			free(csum);
			return -ENOMEM;
		}
		t->writes = w;
		t->capwrites = nc;
	}
	t->writes[t->nwrites++] = (struct os_dwrite){
		.pblock = pblock, .n = n, .buf = cm_buf_get(buf), .off = off, .csum = csum
	};
	return 0;
}

static int
add_pending_tag(struct os_txn *t, uint64_t tag)
{
	if (!tag)
		return -ENOMEM;
	if (t->npending == t->cappending) {
		size_t cap = t->cappending ? t->cappending * 2 : 8;
		uint64_t *n = realloc(t->pending_tags, sizeof(*n) * cap);

		if (!n)
			return -ENOMEM;
		t->pending_tags = n;
		t->cappending = cap;
	}
	t->pending_tags[t->npending++] = tag;
	return 0;
}

/* Set block pb's reference count (0: out of s->refs), remembering the old one. */
static int
refs_set(struct pctx *c, uint64_t pb, uint32_t refs)
{
	int rc;

	if (c->nru == c->capru) {
		size_t cap = c->capru ? c->capru * 2 : 64;
		struct rundo *n = realloc(c->ru, sizeof(*n) * cap);

		if (!n)
			return -ENOMEM;
		c->ru = n;
		c->capru = cap;
	}
	c->ru[c->nru] = (struct rundo){ pb, os_refs_get(&c->s->refs, pb) };
	rc = os_refs_set(&c->s->refs, pb, refs);
	if (!rc)
		c->nru++;
	return rc;
}

/*
 * Unmap logical blocks [start, end) of on: a shared block loses one
 * reference (down to 1 it stays in s->refs: see store_internal.h), any
 * other is freed once the transaction commits.
 */
static int
unmap(struct pctx *c, struct os_onode *on, uint64_t start, uint64_t end)
{
	struct os_store *s = c->s;
	struct os_txn *t = c->t;
	struct os_extent *fr = NULL;
	size_t nfr = 0, cap = 0;
	int rc;

	if (!s->refs.n) /* nothing shared: every block goes */
		return os_onode_punch(on, start, end, &t->frees, &t->nfrees, &t->capfrees);
	rc = os_onode_punch(on, start, end, &fr, &nfr, &cap);
	for (size_t i = 0; !rc && i < nfr; i++) {
		for (uint64_t b = fr[i].start; !rc && b < fr[i].start + fr[i].len; b++) {
			uint32_t r = os_refs_get(&s->refs, b);

			if (r >= 2) {
				rc = refs_set(c, b, r - 1);
				continue;
			}
			if (r == 1)
				rc = refs_set(c, b, 0);
			if (!rc)
				rc = os_extent_append(&t->frees, &t->nfrees, &t->capfrees, b, 1);
		}
	}
	free(fr);
	return rc;
}

/* Is any block of logical [fb, fb + nb) of on unmapped or shared? */
static bool
unmapped_or_shared(struct pctx *c, const struct os_onode *on, uint64_t fb, uint64_t nb)
{
	for (uint64_t lb = fb; lb < fb + nb; lb++) {
		const struct os_xext *e = os_onode_find(on, lb, NULL);

		if (!e || (c->s->refs.n && os_refs_get(&c->s->refs, e->pblock + (lb - e->lblock))))
			return true;
	}
	return false;
}

/* Write the blocks [fb, fb + nb) of p from img at ioff (nb blocks, page aligned). */
static int
put_blocks(struct pctx *c, struct pobj *p, uint64_t fb, uint64_t nb, struct cm_buf *img,
	   size_t ioff, uint64_t bytes)
{
	struct os_store *s = c->s;
	struct os_txn *t = c->t;
	struct os_onode *on = p->on;
	uint32_t *cs = malloc(sizeof(uint32_t) * nb);
	bool mapped = true;
	int rc = 0;

	if (!cs)
		return -ENOMEM;
	/* The messenger may have computed them as the data arrived (and checked
	 * the data against the sender's crc then): one pass less. */
	if (s->B == 4096 && img->bcrc && ioff >= img->bcrc_off &&
	    (ioff - img->bcrc_off) % 4096 == 0 &&
	    (ioff - img->bcrc_off) / 4096 + nb <= img->bcrc_n) {
		memcpy(cs, img->bcrc + (ioff - img->bcrc_off) / 4096, nb * sizeof(*cs));
		s->c_csum_reused += nb;
	} else {
		for (uint64_t i = 0; i < nb; i++)
			cs[i] = cm_crc32c(0, img->data + ioff + i * s->B, s->B);
	}
	/* A shared block is never written in place: its other owners keep its bytes. */
	mapped = !unmapped_or_shared(c, on, fb, nb);
	if (mapped && bytes <= s->deferred_max) {
		/* Deferred: the data rides in the KV batch; the device write follows the commit. */
		Cairn__Store__Deferred dpb = CAIRN__STORE__DEFERRED__INIT;
		struct os_dfr *d = calloc(1, sizeof(*d)), **nd;
		char key[16];
		uint8_t *val;
		size_t vl;

		if (!d || !(d->pblocks = calloc(nb, sizeof(uint64_t))) ||
		    !(d->tags = calloc(nb, sizeof(uint64_t)))) {
			if (d) {
				free(d->pblocks);
				free(d);
			}
			free(cs);
			return -ENOMEM;
		}
		for (uint64_t i = 0; i < nb; i++) {
			size_t idx;
			struct os_xext *e = (struct os_xext *)os_onode_find(on, fb + i, &idx);

			d->pblocks[i] = e->pblock + (fb + i - e->lblock);
			e->csum[fb + i - e->lblock] = cs[i];
		}
		d->seq = s->next_dseq++;
		d->n = nb;
		d->buf = cm_buf_get(img);
		d->boff = ioff;
		dpb.n_pblock = nb;
		dpb.pblock = d->pblocks;
		dpb.data.data = img->data + ioff;
		dpb.data.len = nb * s->B;
		vl = cairn__store__deferred__get_packed_size(&dpb);
		val = malloc(vl);
		nd = realloc(t->dfrs, sizeof(*nd) * (t->ndfrs + 1));
		if (!val || !nd) {
			free(val);
			if (nd)
				t->dfrs = nd;
			cm_buf_put(d->buf);
			free(d->pblocks);
			free(d->tags);
			free(d);
			free(cs);
			return -ENOMEM;
		}
		t->dfrs = nd;
		cairn__store__deferred__pack(&dpb, val);
		rocksdb_writebatch_put(t->wb, key, os_key_deferred(key, d->seq), (char *)val, vl);
		free(val);
		for (uint64_t i = 0; i < nb; i++)
			d->tags[i] = os_pend_add(s, d->pblocks[i], 1, img, ioff + i * s->B);
		t->dfrs[t->ndfrs++] = d;
		s->c_deferred++;
	} else {
		struct os_extent ex[MAX_EXT_PER_WRITE];
		int k;
		uint64_t done = 0;

		pthread_mutex_lock(&s->alloc_mu);
		k = os_alloc_get(s->alloc, nb, s->reserve_blocks, ex, MAX_EXT_PER_WRITE);
		pthread_mutex_unlock(&s->alloc_mu);
		if (k < 0) {
			free(cs);
			return k;
		}
		rc = unmap(c, on, fb, fb + nb);
		for (int i = 0; i < k; i++) {
			if (!rc)
				rc = add_write(t, ex[i].start, ex[i].len, img, ioff + done * s->B,
					       cs + done);
			if (rc) {
				/* Not yet in t->writes: give it back here. */
				pthread_mutex_lock(&s->alloc_mu);
				os_alloc_put(s->alloc, ex[i].start, ex[i].len);
				pthread_mutex_unlock(&s->alloc_mu);
				continue;
			}
			rc = os_onode_insert(on, fb + done, ex[i].start, (uint32_t)ex[i].len,
					     cs + done);
			if (!rc)
				rc = add_pending_tag(t, os_pend_add(s, ex[i].start, ex[i].len, img,
								    ioff + done * s->B));
			done += ex[i].len;
		}
		s->c_cow++;
	}
	free(cs);
	p->dirty = true;
	return rc;
}

static int
do_write_buf(struct pctx *c, struct pobj *p, uint64_t off, const uint8_t *data, uint64_t len,
	     struct cm_buf *src)
{
	struct os_store *s = c->s;
	uint64_t B = s->B, fb = off / B, le = (off + len + B - 1) / B, nb = le - fb;
	struct cm_buf *img;
	int rc = 0;

	if (len == 0) {
		p->dirty = true;
		return 0;
	}
	/* Whole blocks from page-aligned data (e.g. a message's data segment,
	 * which the messenger lands on a page): the buffer is the image. */
	if (src && off % B == 0 && len % B == 0 && data >= src->data &&
	    (uintptr_t)data % 4096 == 0 && len > s->deferred_max) {
		rc = put_blocks(c, p, fb, nb, src, (size_t)(data - src->data), len);
		if (!rc && off + len > p->on->size)
			p->on->size = off + len;
		return rc;
	}
	if (cm_buf_alloc_aligned(nb * B, 4096, &img))
		return -ENOMEM;
	if (off % B)
		rc = blk_read(c, p->on, fb, img->data, p->oid);
	if (!rc && (off + len) % B && (le - 1 != fb || off % B == 0))
		rc = blk_read(c, p->on, le - 1, img->data + (nb - 1) * B, p->oid);
	if (!rc) {
		if (data)
			memcpy(img->data + (off - fb * B), data, len);
		else
			memset(img->data + (off - fb * B), 0, len);
		rc = put_blocks(c, p, fb, nb, img, 0, len);
	}
	cm_buf_put(img);
	if (!rc && off + len > p->on->size)
		p->on->size = off + len;
	return rc;
}

static int
do_write(struct pctx *c, struct pobj *p, uint64_t off, const uint8_t *data, uint64_t len)
{
	return do_write_buf(c, p, off, data, len, NULL);
}

/* Unmap whole blocks, zero partial edges; holes read as zeros. */
static int
do_zero(struct pctx *c, struct pobj *p, uint64_t off, uint64_t len)
{
	struct os_store *s = c->s;
	uint64_t B = s->B, end = off + len, size = p->on->size;
	uint64_t fb_full = (off + B - 1) / B, le_full = end / B;
	int rc = 0;

	if (len == 0)
		return 0;
	if (fb_full < le_full) {
		rc = unmap(c, p->on, fb_full, le_full);
		if (!rc && off < fb_full * B && os_onode_find(p->on, off / B, NULL))
			rc = do_write(c, p, off, NULL, fb_full * B - off);
		if (!rc && end > le_full * B && os_onode_find(p->on, le_full, NULL))
			rc = do_write(c, p, le_full * B, NULL, end - le_full * B);
	} else {
		/* Within one block or straddling two without a whole one. */
		for (uint64_t a = off; !rc && a < end;) {
			uint64_t b = CM_MIN(end, (a / B + 1) * B);

			if (os_onode_find(p->on, a / B, NULL))
				rc = do_write(c, p, a, NULL, b - a);
			a = b;
		}
	}
	p->on->size = CM_MAX(size, end);
	p->dirty = true;
	return rc;
}

static int
do_truncate(struct pctx *c, struct pobj *p, uint64_t size)
{
	struct os_store *s = c->s;
	uint64_t B = s->B;
	int rc = 0;

	if (size < p->on->size) {
		uint64_t keep = (size + B - 1) / B;

		rc = unmap(c, p->on, keep, UINT64_MAX / 2);
		/* Bytes past the end of the last block read as zeros later: clear them now. */
		if (!rc && size % B && os_onode_find(p->on, size / B, NULL))
			rc = do_write(c, p, size, NULL, B - size % B);
	}
	p->on->size = size;
	p->dirty = true;
	return rc;
}

static void
omap_range(char *a, size_t *al, char *b, size_t *bl, uint64_t nid)
{
	*al = os_key_omap(a, nid, NULL, 0);
	*bl = os_key_omap(b, nid + 1, NULL, 0);
}

/* Drop p's omap entries (committed ones by a range delete). */
static int
omap_clear(struct pctx *c, struct pobj *p)
{
	char a[16], b[16];
	size_t al, bl;

	if (p->on->no_omap)
		return 0; /* no key to delete: no range tombstone for every later get to skip */
	omap_range(a, &al, b, &bl, p->on->nid);
	rocksdb_writebatch_delete_range(c->t->wb, a, al, b, bl);
	c->t->range_deletes = true;
	p->on->no_omap = true;
	p->dirty = true;
	return ovl_add(c, p->on->nid, OP_OMAP_CLEAR, NULL, 0, NULL, 0);
}

static int
do_remove(struct pctx *c, struct pobj *p)
{
	int rc = unmap(c, p->on, 0, UINT64_MAX / 2);

	if (rc)
		return rc;
	rc = omap_clear(c, p);
	if (rc)
		return rc;
	os_onode_free(p->on);
	p->on = NULL;
	p->dirty = true;
	return 0;
}

/* Copy [off, off + len) of src's data into dst at doff, in chunks. */
static int
copy_data(struct pctx *c, struct pobj *src, uint64_t off, uint64_t len, struct pobj *dst,
	  uint64_t doff)
{
	struct os_store *s = c->s;
	uint8_t *buf = aligned_alloc(4096, CLONE_CHUNK + s->B);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (uint64_t done = 0; !rc && done < len;) {
		uint64_t n = CM_MIN((uint64_t)CLONE_CHUNK, len - done), a = off + done;
		uint64_t fb = a / s->B, le = (a + n + s->B - 1) / s->B;
		bool any = false;

		for (uint64_t lb = fb; lb < le && !rc; lb++) {
			any |= os_onode_find(src->on, lb, NULL) != NULL;
			rc = blk_read(c, src->on, lb, buf + (lb - fb) * s->B, src->oid);
		}
		/* Past the source's end reads as zeros. */
		if (!rc && a + n > src->on->size) {
			uint64_t z = a >= src->on->size ? 0 : src->on->size - a;

			memset(buf + (a - fb * s->B) + z, 0, n - z);
		}
		if (!rc && any)
			rc = do_write(c, dst, doff + done, buf + (a - fb * s->B), n);
		else if (!rc && doff + done + n > dst->on->size)
			dst->on->size = doff + done + n;
		done += n;
	}
	free(buf);
	dst->dirty = true;
	return rc;
}

/*
 * Map dst's logical blocks [fb, le) (unmapped) to the device blocks src maps
 * there, one reference more each: a clone by reference, no data read or
 * written. src's holes stay holes.
 */
static int
share_blocks(struct pctx *c, struct pobj *src, uint64_t fb, uint64_t le, struct pobj *dst)
{
	const struct os_onode *on = src->on;
	size_t i = 0;
	int rc = 0;

	if (fb >= le)
		return 0;
	(void)os_onode_find(on, fb, &i); /* i: the first extent ending past fb */
	for (; !rc && i < on->next && on->ext[i].lblock < le; i++) {
		const struct os_xext *e = &on->ext[i];
		uint64_t a = CM_MAX(e->lblock, fb), b = CM_MIN(e->lblock + e->n, le);
		uint64_t pb = e->pblock + (a - e->lblock);

		if (a >= b)
			continue;
		rc = os_onode_insert(dst->on, a, pb, (uint32_t)(b - a), e->csum + (a - e->lblock));
		for (uint64_t k = 0; !rc && k < b - a; k++) {
			uint32_t r = os_refs_get(&c->s->refs, pb + k);

			rc = refs_set(c, pb + k, r ? r + 1 : 2);
		}
	}
	dst->dirty = true;
	return rc;
}

/* dst's bytes [off, off + len) become src's by copy (src's holes: zeros). */
static int
copy_bytes(struct pctx *c, struct pobj *src, uint64_t off, uint64_t len, struct pobj *dst)
{
	int rc = do_zero(c, dst, off, len);

	return rc ? rc : copy_data(c, src, off, len, dst, off);
}

/*
 * Unstash's data: dst's bytes [off, off + len) become src's — whole blocks
 * by reference (src's holes become holes), partial edge blocks copied.
 */
static int
take_range(struct pctx *c, struct pobj *src, uint64_t off, uint64_t len, struct pobj *dst)
{
	uint64_t B = c->s->B, end = off + len, fb = (off + B - 1) / B, le = end / B;
	int rc = 0;

	if (end < off)
		return -EINVAL;
	if (fb >= le) /* no whole block */
		return copy_bytes(c, src, off, len, dst);
	if (off < fb * B)
		rc = copy_bytes(c, src, off, fb * B - off, dst);
	if (!rc)
		rc = unmap(c, dst->on, fb, le);
	if (!rc)
		rc = share_blocks(c, src, fb, le, dst);
	if (!rc && end > le * B)
		rc = copy_bytes(c, src, le * B, end - le * B, dst);
	if (!rc && dst->on->size < end)
		dst->on->size = end;
	dst->dirty = true;
	return rc;
}

static int
ovl_add(struct pctx *c, uint64_t nid, enum os_op_type type, const uint8_t *k, size_t kl,
	const uint8_t *v, size_t vl)
{
	struct ovl *n = realloc(c->ovl, sizeof(*n) * (c->novl + 1));

	if (!n)
		return -ENOMEM;
	c->ovl = n;
	n[c->novl++] = (struct ovl){ .nid = nid, .type = type, .k = k, .kl = kl, .v = v, .vl = vl };
	return 0;
}

static int
kcmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	int r = memcmp(a, b, CM_MIN(al, bl));

	return r ? r : (al < bl ? -1 : al > bl);
}

struct okv {
	uint8_t *k, *v;
	size_t kl, vl;
	bool gone;
};

/* Copy the omap of nid `from` (committed keys, then this transaction's changes) to `to`. */
static int
copy_omap(struct pctx *c, uint64_t from, uint64_t to)
{
	struct os_store *s = c->s;
	rocksdb_iterator_t *it;
	char lo[16], *k2;
	size_t ll = os_key_omap(lo, from, NULL, 0), n = 0, cap = 0;
	struct okv *kv = NULL;
	int rc = 0;

	if (c->nb)
		return -EAGAIN; /* iterates the KV */
	it = rocksdb_create_iterator(s->db, s->ro);
	k2 = malloc(9 + 65536);
	if (!k2) {
		rocksdb_iter_destroy(it);
		return -ENOMEM;
	}
	for (rocksdb_iter_seek(it, lo, ll); !rc && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);

		if (kl < 9 || memcmp(k, lo, 9) != 0)
			break;
		if (n == cap) {
			struct okv *nk = realloc(kv, sizeof(*nk) * (cap ? cap * 2 : 16));

			if (!nk) {
				rc = -ENOMEM;
				break;
			}
			kv = nk;
			cap = cap ? cap * 2 : 16;
		}
		kv[n].k = malloc(kl - 9 + 1);
		kv[n].v = malloc(vl + 1);
		if (!kv[n].k || !kv[n].v) {
			free(kv[n].k);
			free(kv[n].v);
			rc = -ENOMEM;
			break;
		}
		memcpy(kv[n].k, k + 9, kl - 9);
		memcpy(kv[n].v, v, vl);
		kv[n].kl = kl - 9;
		kv[n].vl = vl;
		kv[n].gone = false;
		n++;
	}
	rocksdb_iter_destroy(it);
	/* This transaction's own changes to the source, in order. */
	for (size_t i = 0; !rc && i < c->novl; i++) {
		const struct ovl *o = &c->ovl[i];

		if (o->nid != from)
			continue;
		for (size_t j = 0; j < n; j++) {
			bool hit = o->type == OP_OMAP_CLEAR ||
				   (o->type == OP_OMAP_RM_RANGE
					    ? kcmp(kv[j].k, kv[j].kl, o->k, o->kl) >= 0 &&
						      kcmp(kv[j].k, kv[j].kl, o->v, o->vl) < 0
					    : kcmp(kv[j].k, kv[j].kl, o->k, o->kl) == 0);

			if (hit)
				kv[j].gone = true;
		}
	}
	for (size_t j = 0; !rc && j < n; j++) {
		if (kv[j].gone)
			continue;
		rocksdb_writebatch_put(c->t->wb, k2, os_key_omap(k2, to, kv[j].k, kv[j].kl),
				       (char *)kv[j].v, kv[j].vl);
		rc = ovl_add(c, to, OP_OMAP_SET, kv[j].k, kv[j].kl, kv[j].v, kv[j].vl);
	}
	/* Keys set by this transaction (after any clear or removal that hid older ones). */
	for (size_t i = 0; !rc && i < c->novl; i++) {
		const struct ovl *o = &c->ovl[i];
		bool later_gone = false;

		if (o->nid != from || o->type != OP_OMAP_SET)
			continue;
		for (size_t j = i + 1; j < c->novl; j++) {
			const struct ovl *x = &c->ovl[j];

			if (x->nid != from)
				continue;
			if (x->type == OP_OMAP_CLEAR ||
			    (x->type == OP_OMAP_RM && !kcmp(o->k, o->kl, x->k, x->kl)) ||
			    (x->type == OP_OMAP_SET && !kcmp(o->k, o->kl, x->k, x->kl)) ||
			    (x->type == OP_OMAP_RM_RANGE && kcmp(o->k, o->kl, x->k, x->kl) >= 0 &&
			     kcmp(o->k, o->kl, x->v, x->vl) < 0))
				later_gone = true;
		}
		if (later_gone || !o->v)
			continue;
		rocksdb_writebatch_put(c->t->wb, k2, os_key_omap(k2, to, o->k, o->kl),
				       (const char *)o->v, o->vl);
		rc = ovl_add(c, to, OP_OMAP_SET, o->k, o->kl, o->v, o->vl);
	}
	for (size_t j = 0; j < n; j++) {
		/* Keys copied from the KV: the overlay points at them; keep them until the end. */
		if (kv[j].gone) {
			free(kv[j].k);
			free(kv[j].v);
		}
	}
	{
		/* Remember the surviving copies for pctx_free. */
		struct okv *keep = kv;
		size_t nk = 0;

		for (size_t j = 0; j < n; j++)
			if (!kv[j].gone)
				keep[nk++] = kv[j];
		uint8_t **no = realloc(c->owned, sizeof(*no) * (c->nowned + 2 * nk + 1));

		if (no)
			c->owned = no;
		else
			rc = -ENOMEM;
		for (size_t j = 0; j < nk; j++) {
			if (no) {
				c->owned[c->nowned++] = keep[j].k;
				c->owned[c->nowned++] = keep[j].v;
			} else {
				free(keep[j].k);
				free(keep[j].v);
			}
		}
	}
	free(kv);
	free(k2);
	return rc;
}

static int
attr_set(struct os_onode *on, const char *name, const uint8_t *val, size_t len)
{
	size_t i = 0;
	uint8_t *v = malloc(len ? len : 1);

	if (!v)
		return -ENOMEM;
	if (len)
		memcpy(v, val, len);
	while (i < on->nattrs && strcmp(on->attrs[i].name, name) < 0)
		i++;
	if (i < on->nattrs && !strcmp(on->attrs[i].name, name)) {
		free(on->attrs[i].val);
		on->attrs[i].val = v;
		on->attrs[i].len = len;
		return 0;
	}
	{
		struct os_attr *na = realloc(on->attrs, sizeof(*na) * (on->nattrs + 1));
		char *nm = strdup(name);

		if (!na || !nm) {
			if (na)
				on->attrs = na;
			free(nm);
			free(v);
			return -ENOMEM;
		}
		on->attrs = na;
		memmove(&na[i + 1], &na[i], sizeof(*na) * (on->nattrs - i));
		na[i] = (struct os_attr){ .name = nm, .val = v, .len = len };
		on->nattrs++;
	}
	return 0;
}

/* dst starts over (clone, stash, rename): remove it if it exists. */
static int
dst_clear(struct pctx *c, const char *cid, const char *oid)
{
	struct pobj *q;
	int rc = get_obj(c, cid, oid, false, &q);

	if (rc == -ENOENT && coll_exists(c, cid))
		return 0;
	return rc ? rc : do_remove(c, q);
}

/* oid's entry again (get_obj may move the array). */
static struct pobj *
find_obj(struct pctx *c, const char *cid, const char *oid)
{
	char key[2 * OS_NAME_MAX + 4];
	size_t klen = os_key_onode(key, cid, oid);

	for (size_t i = 0; i < c->nobjs; i++)
		if (c->objs[i].klen == klen && !memcmp(c->objs[i].key, key, klen))
			return &c->objs[i];
	return NULL;
}

/* p's attributes, omap header and (omap) its omap to q (which has none of them). */
static int
copy_meta(struct pctx *c, struct pobj *p, struct pobj *q, bool omap)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < p->on->nattrs; i++)
		rc = attr_set(q->on, p->on->attrs[i].name, p->on->attrs[i].val,
			      p->on->attrs[i].len);
	if (!rc && p->on->hdrlen) {
		q->on->hdr = malloc(p->on->hdrlen);
		if (!q->on->hdr)
			return -ENOMEM;
		memcpy(q->on->hdr, p->on->hdr, p->on->hdrlen);
		q->on->hdrlen = p->on->hdrlen;
	}
	q->dirty = true;
	if (rc || !omap)
		return rc;
	q->on->no_omap = p->on->no_omap;
	return p->on->no_omap ? 0 : copy_omap(c, p->on->nid, q->on->nid);
}

static int
apply_op(struct pctx *c, const struct os_op *op)
{
	struct os_txn *t = c->t;
	struct pobj *p, *q;
	char key[2 * OS_NAME_MAX + 16], k2[16];
	size_t kl, k2l;
	int rc;

	switch (op->type) {
	case OP_MKCOLL:
		if (coll_exists(c, op->cid))
			return -EEXIST;
		for (size_t i = 0; i < c->nrm; i++)
			if (!strcmp(c->rm[i], op->cid))
				c->rm[i][0] = 0; /* made again */
		rocksdb_writebatch_put(t->wb, key, os_key_coll(key, op->cid), "", 0);
		return push_name(&c->mk, &c->nmk, op->cid);
	case OP_RMCOLL: {
		rocksdb_iterator_t *it;
		bool empty = true;

		if (!coll_exists(c, op->cid))
			return -ENOENT;
		for (size_t i = 0; i < c->nobjs; i++)
			if (!strcmp(c->objs[i].cid, op->cid) && c->objs[i].on)
				return -ENOTEMPTY;
		if (c->nb)
			return -EAGAIN; /* iterates the KV */
		kl = os_key_onode(key, op->cid, "");
		it = rocksdb_create_iterator(c->s->db, c->s->ro);
		rocksdb_iter_seek(it, key, kl);
		if (rocksdb_iter_valid(it)) {
			size_t l;
			const char *k = rocksdb_iter_key(it, &l);

			if (l >= kl && !memcmp(k, key, kl)) {
				/* Committed, unless this transaction removed it. */
				empty = false;
				for (size_t i = 0; i < c->nobjs; i++)
					if (c->objs[i].klen == l && !memcmp(c->objs[i].key, k, l) &&
					    !c->objs[i].on)
						empty = true;
			}
		}
		rocksdb_iter_destroy(it);
		if (!empty)
			return -ENOTEMPTY;
		rocksdb_writebatch_delete(t->wb, key, os_key_coll(key, op->cid));
		return push_name(&c->rm, &c->nrm, op->cid);
	}
	case OP_TOUCH:
		rc = get_obj(c, op->cid, op->oid, true, &p);
		if (!rc)
			p->dirty = true;
		return rc;
	case OP_WRITE:
		rc = get_obj(c, op->cid, op->oid, true, &p);
		return rc ? rc : do_write_buf(c, p, op->off, op->data, op->len, op->buf);
	case OP_ZERO:
		rc = get_obj(c, op->cid, op->oid, true, &p);
		return rc ? rc : do_zero(c, p, op->off, op->len);
	case OP_TRUNCATE:
		rc = get_obj(c, op->cid, op->oid, true, &p);
		return rc ? rc : do_truncate(c, p, op->off);
	case OP_REMOVE:
		rc = get_obj(c, op->cid, op->oid, false, &p);
		return rc ? rc : do_remove(c, p);
	case OP_CLONE:
	case OP_STASH:
		rc = get_obj(c, op->cid, op->oid, false, &p);
		if (rc)
			return rc;
		/* The destination starts over: a new object with the source's everything
		 * (a stash: but the data outside [off, off + len)). */
		rc = dst_clear(c, op->cid, op->oid2);
		if (rc)
			return rc;
		rc = get_obj(c, op->cid, op->oid2, true, &q);
		if (rc)
			return rc;
		p = find_obj(c, op->cid, op->oid);
		/* By reference: the blocks (a stash: those the range touches) are shared. */
		if (op->type == OP_CLONE)
			rc = share_blocks(c, p, 0, UINT64_MAX / 2, q);
		else if (op->off < p->on->size)
			rc = share_blocks(
				c, p, op->off / c->s->B,
				(op->off + CM_MIN(op->len, p->on->size - op->off) + c->s->B - 1) /
					c->s->B,
				q);
		if (!rc)
			rc = copy_meta(c, p, q, op->type == OP_CLONE);
		q->on->size = p->on->size;
		return rc;
	case OP_UNSTASH:
		rc = get_obj(c, op->cid, op->oid, false, &p);
		if (rc)
			return rc;
		rc = get_obj(c, op->cid, op->oid2, true, &q);
		if (rc)
			return rc;
		p = find_obj(c, op->cid, op->oid);
		/* dst takes the stash's attributes, omap header and size, and its
		 * bytes of [off, off + len); the stash goes. */
		for (size_t i = 0; i < q->on->nattrs; i++) {
			free(q->on->attrs[i].name);
			free(q->on->attrs[i].val);
		}
		free(q->on->attrs);
		q->on->attrs = NULL;
		q->on->nattrs = 0;
		free(q->on->hdr);
		q->on->hdr = NULL;
		q->on->hdrlen = 0;
		rc = copy_meta(c, p, q, false);
		if (!rc && op->len)
			rc = take_range(c, p, op->off, op->len, q);
		if (!rc)
			rc = do_truncate(c, q, p->on->size);
		return rc ? rc : do_remove(c, p);
	case OP_RENAME: {
		const char *dcid = op->cid2 ? op->cid2 : op->cid;

		rc = get_obj(c, op->cid, op->oid, false, &p);
		if (rc)
			return rc;
		rc = dst_clear(c, dcid, op->oid2);
		if (!rc)
			rc = get_obj(c, dcid, op->oid2, true, &q);
		if (rc)
			return rc;
		os_onode_free(q->on); /* the fresh onode get_obj made */
		/* The onode moves: same blocks, same nid (so the same omap). */
		p = find_obj(c, op->cid, op->oid);
		q->on = p->on;
		p->on = NULL;
		p->dirty = q->dirty = true;
		return 0;
	}
	case OP_REMOVE_ANY:
		rc = get_obj(c, op->cid, op->oid, false, &p);
		if (rc == -ENOENT && coll_exists(c, op->cid))
			return 0;
		return rc ? rc : do_remove(c, p);
	case OP_CLONE_RANGE:
		rc = get_obj(c, op->cid, op->oid, false, &p);
		if (rc)
			return rc;
		rc = get_obj(c, op->cid, op->oid2, true, &q);
		if (rc)
			return rc;
		p = find_obj(c, op->cid, op->oid);
		return copy_data(c, p, op->off, op->len, q, op->off2);
	case OP_SETATTR:
		rc = get_obj(c, op->cid, op->oid, true, &p);
		if (!rc)
			rc = attr_set(p->on, op->name, op->data, op->dlen);
		if (!rc)
			p->dirty = true;
		return rc;
	case OP_RMATTR:
		rc = get_obj(c, op->cid, op->oid, false, &p);
		if (rc)
			return rc;
		for (size_t i = 0; i < p->on->nattrs; i++) {
			if (strcmp(p->on->attrs[i].name, op->name))
				continue;
			free(p->on->attrs[i].name);
			free(p->on->attrs[i].val);
			memmove(&p->on->attrs[i], &p->on->attrs[i + 1],
				sizeof(*p->on->attrs) * (p->on->nattrs - i - 1));
			p->on->nattrs--;
			p->dirty = true;
			return 0;
		}
		return -ENODATA;
	case OP_OMAP_SET:
	case OP_OMAP_HEADER:
		rc = get_obj(c, op->cid, op->oid, true, &p);
		if (rc)
			return rc;
		if (op->type == OP_OMAP_HEADER) {
			uint8_t *h = malloc(op->dlen ? op->dlen : 1);

			if (!h)
				return -ENOMEM;
			if (op->dlen)
				memcpy(h, op->data, op->dlen);
			free(p->on->hdr);
			p->on->hdr = h;
			p->on->hdrlen = op->dlen;
			p->dirty = true;
			return 0;
		}
		if (op->klen > 65536)
			return -ENAMETOOLONG;
		/* The onode changes only with its first key (no_omap): setting
		 * keys of an object that has some is one KV put each, not a
		 * rewrite of its onode too (a PG's log and info on every change). */
		if (p->on->no_omap)
			p->dirty = true;
		p->on->no_omap = false;
		{
			char *k = malloc(9 + op->klen);

			if (!k)
				return -ENOMEM;
			rocksdb_writebatch_put(t->wb, k,
					       os_key_omap(k, p->on->nid, op->key, op->klen),
					       (const char *)op->data, op->dlen);
			free(k);
		}
		return ovl_add(c, p->on->nid, OP_OMAP_SET, op->key, op->klen, op->data, op->dlen);
	case OP_OMAP_RM:
	case OP_OMAP_RM_RANGE:
	case OP_OMAP_CLEAR:
		rc = get_obj(c, op->cid, op->oid, false, &p);
		if (rc)
			return rc;
		if (op->klen > 65536 || op->dlen > 65536)
			return -ENAMETOOLONG;
		if (p->on->no_omap)
			return 0; /* nothing to remove */
		{
			char *a = malloc(9 + CM_MAX(op->klen, op->dlen)),
			     *b = malloc(9 + CM_MAX(op->klen, op->dlen));
			size_t al, bl;

			if (!a || !b) {
				free(a);
				free(b);
				return -ENOMEM;
			}
			if (op->type == OP_OMAP_RM) {
				rocksdb_writebatch_delete(
					t->wb, a, os_key_omap(a, p->on->nid, op->key, op->klen));
			} else if (op->type == OP_OMAP_RM_RANGE) {
				al = os_key_omap(a, p->on->nid, op->data, op->dlen);
				bl = os_key_omap(b, p->on->nid, op->key, op->klen);
				if (memcmp(a, b, CM_MIN(al, bl)) < 0 ||
				    (memcmp(a, b, CM_MIN(al, bl)) == 0 && al < bl))
					rocksdb_writebatch_delete_range(t->wb, a, al, b, bl);
				t->range_deletes = true;
			} else {
				omap_range(k2, &k2l, a, &al, p->on->nid);
				rocksdb_writebatch_delete_range(t->wb, k2, k2l, a, al);
				t->range_deletes = true;
				p->on->no_omap = true;
				p->dirty = true;
			}
			free(a);
			free(b);
		}
		if (op->type == OP_OMAP_RM_RANGE)
			return ovl_add(c, p->on->nid, op->type, op->data, op->dlen, op->key,
				       op->klen);
		return ovl_add(c, p->on->nid, op->type, op->key, op->klen, NULL, 0);
	}
	return -EINVAL;
}

static void
rollback(struct pctx *c)
{
	struct os_store *s = c->s;
	struct os_txn *t = c->t;

	pthread_mutex_lock(&s->alloc_mu);
	for (size_t i = 0; i < t->nwrites; i++)
		os_alloc_put(s->alloc, t->writes[i].pblock, t->writes[i].n);
	pthread_mutex_unlock(&s->alloc_mu);
	for (size_t i = 0; i < t->nwrites; i++) {
		if (i < t->npending)
			os_pend_del(s, t->writes[i].pblock, t->writes[i].n, t->pending_tags[i]);
		cm_buf_put(t->writes[i].buf);
		free(t->writes[i].csum);
	}
	t->nwrites = 0;
	t->npending = 0;
	for (size_t i = 0; i < t->ndfrs; i++) {
		struct os_dfr *d = t->dfrs[i];

		for (size_t b = 0; b < d->n; b++)
			os_pend_del(s, d->pblocks[b], 1, d->tags[b]);
		free(d->pblocks);
		free(d->tags);
		cm_buf_put(d->buf);
		free(d);
	}
	t->ndfrs = 0;
	t->nfrees = 0;
	/* Counts back, newest change first (this never allocates: refs.c). */
	while (c->nru) {
		c->nru--;
		os_refs_set(&s->refs, c->ru[c->nru].pb, c->ru[c->nru].old);
	}
}

static void
pctx_free(struct pctx *c)
{
	for (size_t i = 0; i < c->nobjs; i++) {
		free(c->objs[i].key);
		free(c->objs[i].cid);
		free(c->objs[i].oid);
		os_onode_free(c->objs[i].on);
		os_onode_free(c->objs[i].base);
	}
	free(c->objs);
	for (size_t i = 0; i < c->nmk; i++)
		free(c->mk[i]);
	for (size_t i = 0; i < c->nrm; i++)
		free(c->rm[i]);
	free(c->mk);
	free(c->rm);
	free(c->ovl);
	free(c->ru);
	for (size_t i = 0; i < c->nowned; i++)
		free(c->owned[i]);
	free(c->owned);
}

/*
 * The shard records of every object id the transaction changed: what it
 * was (the base of the object that had it) against what it is (the working
 * copy that has it now — another object's after a rename). Sets each
 * working copy's shard_blocks, which its head record then says.
 */
static int
put_shards(struct pctx *c)
{
	for (size_t i = 0; i < c->nobjs; i++) {
		struct pobj *p = &c->objs[i];
		const struct os_onode *before = NULL;

		if (!p->dirty || !p->on)
			continue;
		for (size_t k = 0; k < c->nobjs && !before; k++)
			if (c->objs[k].base && c->objs[k].base->nid == p->on->nid)
				before = c->objs[k].base;
		if (os_onode_put_shards(c->t->wb, before, p->on))
			return -ENOMEM;
	}
	/* Ids that no object has any more: their shards go. */
	for (size_t i = 0; i < c->nobjs; i++) {
		struct pobj *p = &c->objs[i];
		bool kept = false;

		if (!p->base || !p->base->shard_blocks)
			continue;
		for (size_t k = 0; k < c->nobjs && !kept; k++)
			kept = c->objs[k].on && c->objs[k].on->nid == p->base->nid;
		if (!kept && os_onode_put_shards(c->t->wb, p->base, NULL))
			return -ENOMEM;
	}
	return 0;
}

/* A change to a block's count and where it is in the undo list (put_refs' sort). */
struct rix {
	uint64_t pb;
	size_t i;
};

static int
cmp_rix(const void *a, const void *b)
{
	const struct rix *x = a, *y = b;

	if (x->pb != y->pb)
		return x->pb < y->pb ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * The "R" records of the blocks whose count the transaction changed, as
 * absolute values (replay-safe). A block that went 1 -> 2 -> 1 (an EC
 * write's stash of the blocks it then rewrites) needs none.
 */
static int
put_refs(struct pctx *c)
{
	struct rix *x;

	if (!c->nru)
		return 0;
	x = malloc(sizeof(*x) * c->nru);
	if (!x)
		return -ENOMEM;
	for (size_t i = 0; i < c->nru; i++)
		x[i] = (struct rix){ c->ru[i].pb, i };
	qsort(x, c->nru, sizeof(*x), cmp_rix);
	for (size_t i = 0; i < c->nru; i++) {
		/* A block's first change holds its count before the transaction. */
		uint32_t before = c->ru[x[i].i].old, after;

		if (i && x[i - 1].pb == x[i].pb)
			continue;
		after = os_refs_get(&c->s->refs, x[i].pb);
		/* Records hold counts >= 2 only. */
		if ((before >= 2 ? before : 0) != (after >= 2 ? after : 0))
			os_refs_put_kv(c->t->wb, x[i].pb, after);
	}
	free(x);
	return 0;
}

/* Success: onodes into the batch, the prepare cache, and the list for the read cache. */
static int
install(struct pctx *c)
{
	struct os_store *s = c->s;
	struct os_txn *t = c->t;

	t->touched = calloc(c->nobjs + 1, sizeof(*t->touched));
	if (!t->touched)
		return -ENOMEM;
	if (put_shards(c))
		return -ENOMEM;
	for (size_t i = 0; i < c->nobjs; i++) {
		struct pobj *p = &c->objs[i];
		struct os_touched *tt;
		struct os_onode *cache_copy = NULL, *read_copy = NULL;
		uint8_t *buf;
		size_t len;

		if (!p->dirty)
			continue;
		if (p->on) {
			if (os_onode_encode(p->on, &buf, &len))
				return -ENOMEM;
			rocksdb_writebatch_put(t->wb, p->key, p->klen, (char *)buf, len);
			free(buf);
			/* Done with it: the caches and the read copy share it. */
			cache_copy = os_onode_ref(p->on);
			read_copy = os_onode_ref(p->on);
		} else {
			rocksdb_writebatch_delete(t->wb, p->key, p->klen);
		}
		tt = &t->touched[t->ntouched];
		tt->key = malloc(p->klen);
		if (!tt->key) {
			os_onode_free(cache_copy);
			os_onode_free(read_copy);
			return -ENOMEM;
		}
		memcpy(tt->key, p->key, p->klen);
		tt->klen = p->klen;
		tt->on = read_copy;
		t->ntouched++;
		{
			struct os_oent *e;

			pthread_mutex_lock(&s->pcache_mu);
			e = os_ocache_put(&s->pcache, p->key, p->klen, cache_copy);
			if (e)
				e->pending++;
			pthread_mutex_unlock(&s->pcache_mu);
		}
	}
	/* Collections, and their stats. */
	pthread_mutex_lock(&s->stat_mu);
	for (size_t i = 0; i < c->nrm; i++) {
		for (size_t k = 0; c->rm[i][0] && k < s->ncolls; k++) {
			if (!strcmp(s->colls[k], c->rm[i])) {
				free(s->colls[k]);
				s->colls[k] = s->colls[--s->ncolls];
				s->cstat[k] = s->cstat[s->ncolls];
				break;
			}
		}
	}
	for (size_t i = 0; i < c->nmk; i++) {
		bool have = false;
		struct os_cstat *cs;

		for (size_t k = 0; k < s->ncolls; k++)
			have |= !strcmp(s->colls[k], c->mk[i]);
		if (have)
			continue;
		cs = realloc(s->cstat, (s->ncolls + 1) * sizeof(*cs));
		if (cs)
			s->cstat = cs;
		if (!cs || push_name(&s->colls, &s->ncolls, c->mk[i])) {
			pthread_mutex_unlock(&s->stat_mu);
			return -ENOMEM;
		}
		s->cstat[s->ncolls - 1] = (struct os_cstat){ 0, 0 };
	}
	for (size_t i = 0; i < c->nobjs; i++) {
		struct pobj *p = &c->objs[i];

		if (!p->dirty)
			continue;
		for (size_t k = 0; k < s->ncolls; k++) {
			if (strcmp(s->colls[k], p->cid) != 0)
				continue;
			s->cstat[k].objects += (uint64_t)(p->on != NULL) - (uint64_t)p->base_exists;
			s->cstat[k].bytes += (p->on ? p->on->size : 0) - p->base_size;
			break;
		}
	}
	pthread_mutex_unlock(&s->stat_mu);
	return 0;
}

int
os_coll_stat(struct os_store *s, const char *cid, uint64_t *objects, uint64_t *bytes)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&s->stat_mu);
	for (size_t k = 0; k < s->ncolls; k++)
		if (strcmp(s->colls[k], cid) == 0) {
			*objects = s->cstat[k].objects;
			*bytes = s->cstat[k].bytes;
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&s->stat_mu);
	return rc;
}

static int
prepare_run(struct os_txn *t, bool nb)
{
	struct os_store *s = t->s;
	struct pctx c = { .s = s, .t = t, .nb = nb };
	int rc = 0;

	uint64_t t0 = cm_now_ns();

	if (s->failed) {
		t->rc = -EIO;
		return 0;
	}
	t->wb = os_wb_get(s);
	t->dfr_tag = s->next_dseq - 1;
	for (size_t i = 0; i < t->nops && !rc; i++)
		rc = apply_op(&c, &t->ops[i]);
	/* Any deferred record this transaction made itself must be retired before its frees. */
	if (!rc)
		t->dfr_tag = s->next_dseq - 1;
	/* The refcount records before install: a failure here is undone like any other. */
	if (!rc)
		rc = put_refs(&c);
	if (!rc) {
		rc = install(&c);
		if (rc)
			s->failed = true; /* the prepare cache may be half updated */
	}
	if (rc) {
		rollback(&c);
		rocksdb_writebatch_clear(t->wb);
		t->rc = rc;
	}
	pctx_free(&c);
	s->c_prep_ns += cm_now_ns() - t0;
	if (rc == -EAGAIN && nb) {
		/* As if never prepared: the prepare thread starts it again. */
		rocksdb_writebatch_destroy(t->wb);
		t->wb = NULL;
		t->rc = 0;
		t->range_deletes = false;
		return -EAGAIN;
	}
	return 0;
}

void
os_prepare(void *arg)
{
	prepare_run(arg, false);
}

int
os_prepare_nb(struct os_txn *t)
{
	return prepare_run(t, true);
}
