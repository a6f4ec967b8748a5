/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Onodes in memory: extent maps (sorted, disjoint, per-block crc32c),
 * xattrs, omap header; encoding to the Onode protobuf; keys.
 *
 * A large object's extent map is kept in shard records (OnodeShard, key
 * "X" + nid + shard index) beside a head record without extents, so an
 * overwrite puts the head and the shards it changed, not the whole map:
 * see docs/design/store.md, "Sharded extent maps". In memory an onode is
 * always whole; only loading and putting know about shards.
 */
#include "store_internal.h"
#include "cm/log.h"

#include <assert.h>

CM_LOG_SUBSYS(store);

struct os_onode *
os_onode_new(uint64_t nid)
{
	struct os_onode *o = calloc(1, sizeof(*o));

	if (o) {
		o->ref = 1;
		o->nid = nid;
		o->no_omap = true; /* (decode overrides it: older onodes say nothing) */
	}
	return o;
}

void
os_onode_free(struct os_onode *o)
{
	if (!o || __atomic_sub_fetch(&o->ref, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	for (size_t i = 0; i < o->next; i++)
		free(o->ext[i].csum);
	free(o->ext);
	for (size_t i = 0; i < o->nattrs; i++) {
		free(o->attrs[i].name);
		free(o->attrs[i].val);
	}
	free(o->attrs);
	free(o->hdr);
	free(o);
}

struct os_onode *
os_onode_ref(struct os_onode *o)
{
	__atomic_add_fetch(&o->ref, 1, __ATOMIC_RELAXED);
	return o;
}

static void *
memdup(const void *p, size_t n)
{
	void *d = malloc(n ? n : 1);

	if (d && n)
		memcpy(d, p, n);
	return d;
}

struct os_onode *
os_onode_dup(const struct os_onode *s)
{
	struct os_onode *o = os_onode_new(s->nid);

	if (!o)
		return NULL;
	o->size = s->size;
	o->version = s->version;
	o->no_omap = s->no_omap;
	o->shard_blocks = s->shard_blocks;
	o->ext = calloc(s->next + 1, sizeof(*o->ext));
	o->attrs = calloc(s->nattrs + 1, sizeof(*o->attrs));
	o->hdr = memdup(s->hdr, s->hdrlen);
	o->hdrlen = s->hdrlen;
	if (!o->ext || !o->attrs || !o->hdr)
		goto nomem;
	o->cap = s->next + 1;
	for (size_t i = 0; i < s->next; i++) {
		o->ext[i] = s->ext[i];
		o->ext[i].csum = memdup(s->ext[i].csum, sizeof(uint32_t) * s->ext[i].n);
		o->next = i + 1;
		if (!o->ext[i].csum)
			goto nomem;
	}
	for (size_t i = 0; i < s->nattrs; i++) {
		o->attrs[i].name = strdup(s->attrs[i].name);
		o->attrs[i].val = memdup(s->attrs[i].val, s->attrs[i].len);
		o->attrs[i].len = s->attrs[i].len;
		o->nattrs = i + 1;
		if (!o->attrs[i].name || !o->attrs[i].val)
			goto nomem;
	}
	return o;
nomem:
	os_onode_free(o);
	return NULL;
}

int
os_onode_decode(const void *buf, size_t len, struct os_onode **op)
{
	Cairn__Store__Onode *pb = cairn__store__onode__unpack(NULL, len, buf);
	struct os_onode *o;
	uint64_t prev_end = 0;

	if (!pb)
		return -EBADMSG;
	if ((pb->shard_blocks && pb->n_extents) || pb->shard_blocks > OS_MAX_SHARD_BLOCKS) {
		cairn__store__onode__free_unpacked(pb, NULL);
		return -EBADMSG; /* a sharded head carries no extents */
	}
	o = os_onode_new(pb->nid);
	if (!o)
		goto nomem;
	o->size = pb->size;
	o->version = pb->version;
	o->no_omap = pb->no_omap;
	o->shard_blocks = pb->shard_blocks;
	o->ext = calloc(pb->n_extents + 1, sizeof(*o->ext));
	o->attrs = calloc(pb->n_attrs + 1, sizeof(*o->attrs));
	o->hdr = memdup(pb->omap_header.data, pb->omap_header.len);
	o->hdrlen = pb->omap_header.len;
	if (!o->ext || !o->attrs || !o->hdr)
		goto nomem;
	o->cap = pb->n_extents + 1;
	for (size_t i = 0; i < pb->n_extents; i++) {
		const Cairn__Store__Extent *e = pb->extents[i];

		if (e->nblocks == 0 || e->n_csum != e->nblocks || e->lblock < prev_end ||
		    e->lblock > OS_MAX_LBLOCK || e->nblocks > OS_MAX_LBLOCK - e->lblock) {
			os_onode_free(o);
			cairn__store__onode__free_unpacked(pb, NULL);
			return -EBADMSG;
		}
		prev_end = e->lblock + e->nblocks;
		o->ext[i] =
			(struct os_xext){ .lblock = e->lblock,
					  .pblock = e->pblock,
					  .n = e->nblocks,
					  .csum = memdup(e->csum, sizeof(uint32_t) * e->n_csum) };
		o->next = i + 1;
		if (!o->ext[i].csum)
			goto nomem;
	}
	for (size_t i = 0; i < pb->n_attrs; i++) {
		o->attrs[i].name = strdup(pb->attrs[i]->name);
		o->attrs[i].val = memdup(pb->attrs[i]->value.data, pb->attrs[i]->value.len);
		o->attrs[i].len = pb->attrs[i]->value.len;
		o->nattrs = i + 1;
		if (!o->attrs[i].name || !o->attrs[i].val)
			goto nomem;
	}
	cairn__store__onode__free_unpacked(pb, NULL);
	*op = o;
	return 0;
nomem:
	os_onode_free(o);
	cairn__store__onode__free_unpacked(pb, NULL);
	return -ENOMEM;
}

int
os_onode_encode(const struct os_onode *o, uint8_t **buf, size_t *len)
{
	Cairn__Store__Onode pb = CAIRN__STORE__ONODE__INIT;
	size_t nx = o->shard_blocks ? 0 : o->next;
	Cairn__Store__Extent *ev = calloc(nx + 1, sizeof(*ev)), **ep;
	Cairn__Store__Attr *av = calloc(o->nattrs + 1, sizeof(*av)), **ap;
	int rc = 0;

	ep = calloc(nx + 1, sizeof(*ep));
	ap = calloc(o->nattrs + 1, sizeof(*ap));
	if (!ev || !av || !ep || !ap) {
		rc = -ENOMEM;
		goto out;
	}
	pb.nid = o->nid;
	pb.size = o->size;
	pb.version = o->version;
	pb.shard_blocks = o->shard_blocks;
	for (size_t i = 0; i < nx; i++) {
		cairn__store__extent__init(&ev[i]);
		ev[i].lblock = o->ext[i].lblock;
		ev[i].nblocks = o->ext[i].n;
		ev[i].pblock = o->ext[i].pblock;
		ev[i].n_csum = o->ext[i].n;
		ev[i].csum = o->ext[i].csum;
		ep[i] = &ev[i];
	}
	pb.n_extents = nx;
	pb.extents = ep;
	for (size_t i = 0; i < o->nattrs; i++) {
		cairn__store__attr__init(&av[i]);
		av[i].name = o->attrs[i].name;
		av[i].value.data = o->attrs[i].val;
		av[i].value.len = o->attrs[i].len;
		ap[i] = &av[i];
	}
	pb.n_attrs = o->nattrs;
	pb.attrs = ap;
	pb.omap_header.data = o->hdr;
	pb.omap_header.len = o->hdrlen;
	pb.no_omap = o->no_omap;
	*len = cairn__store__onode__get_packed_size(&pb);
	*buf = malloc(*len ? *len : 1);
	if (!*buf)
		rc = -ENOMEM;
	else
		cairn__store__onode__pack(&pb, *buf);
out:
	free(ev);
	free(av);
	free(ep);
	free(ap);
	return rc;
}

const struct os_xext *
os_onode_find(const struct os_onode *o, uint64_t lb, size_t *idx)
{
	size_t lo = 0, hi = o->next;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (o->ext[mid].lblock + o->ext[mid].n <= lb)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (idx)
		*idx = lo;
	if (lo < o->next && o->ext[lo].lblock <= lb)
		return &o->ext[lo];
	return NULL;
}

int
os_extent_append(struct os_extent **fr, size_t *nfr, size_t *cap, uint64_t start, uint64_t len)
{
	if (*nfr && (*fr)[*nfr - 1].start + (*fr)[*nfr - 1].len == start) {
		(*fr)[*nfr - 1].len += len;
		return 0;
	}
	if (*nfr == *cap) {
		size_t nc = *cap ? *cap * 2 : 8;
		struct os_extent *n = realloc(*fr, sizeof(*n) * nc);

		if (!n)
			return -ENOMEM;
		*fr = n;
		*cap = nc;
	}
	(*fr)[(*nfr)++] = (struct os_extent){ .start = start, .len = len };
	return 0;
}

static int
grow(struct os_onode *o, size_t need)
{
	if (o->next + need <= o->cap)
		return 0;
	size_t nc = CM_MAX(o->cap * 2, o->next + need + 4);
	struct os_xext *n = realloc(o->ext, sizeof(*n) * nc);

	if (!n)
		return -ENOMEM;
	o->ext = n;
	o->cap = nc;
	return 0;
}

int
os_onode_punch(struct os_onode *o, uint64_t start, uint64_t end, struct os_extent **fr, size_t *nfr,
	       size_t *cap)
{
	size_t i;

	if (start >= end)
		return 0;
	os_onode_find(o, start, &i);
	while (i < o->next && o->ext[i].lblock < end) {
		struct os_xext *e = &o->ext[i];
		uint64_t es = e->lblock, ee = e->lblock + e->n;
		uint64_t cs = CM_MAX(es, start), ce = CM_MIN(ee, end);

		if (os_extent_append(fr, nfr, cap, e->pblock + (cs - es), ce - cs))
			return -ENOMEM;
		if (cs == es && ce == ee) {
			free(e->csum);
			memmove(e, e + 1, sizeof(*e) * (o->next - i - 1));
			o->next--;
			continue;
		}
		if (cs == es) { /* keep the tail */
			uint32_t cut = (uint32_t)(ce - es);

			memmove(e->csum, e->csum + cut, sizeof(uint32_t) * (e->n - cut));
			e->lblock += cut;
			e->pblock += cut;
			e->n -= cut;
			i++;
			continue;
		}
		if (ce == ee) { /* keep the head */
			e->n = (uint32_t)(cs - es);
			i++;
			continue;
		}
		/* The middle goes: split in two. */
		{
			uint32_t tail_n = (uint32_t)(ee - ce);
			uint32_t *tail_cs = malloc(sizeof(uint32_t) * tail_n);
			struct os_xext tail;

			if (!tail_cs || grow(o, 1)) {
				free(tail_cs);
				return -ENOMEM;
			}
			e = &o->ext[i];
			memcpy(tail_cs, e->csum + (ce - es), sizeof(uint32_t) * tail_n);
			tail = (struct os_xext){ .lblock = ce,
						 .pblock = e->pblock + (ce - es),
						 .n = tail_n,
						 .csum = tail_cs };
			e->n = (uint32_t)(cs - es);
			memmove(&o->ext[i + 2], &o->ext[i + 1], sizeof(*e) * (o->next - i - 1));
			o->ext[i + 1] = tail;
			o->next++;
			i += 2;
		}
	}
	return 0;
}

int
os_onode_insert(struct os_onode *o, uint64_t lblock, uint64_t pblock, uint32_t n,
		const uint32_t *csum)
{
	size_t i;
	uint32_t *cs = memdup(csum, sizeof(uint32_t) * n);

	if (!cs || grow(o, 1)) {
		free(cs);
		return -ENOMEM;
	}
	os_onode_find(o, lblock, &i);
	memmove(&o->ext[i + 1], &o->ext[i], sizeof(*o->ext) * (o->next - i));
	o->ext[i] = (struct os_xext){ .lblock = lblock, .pblock = pblock, .n = n, .csum = cs };
	o->next++;
	return 0;
}

size_t
os_key_onode(char *out, const char *cid, const char *oid)
{
	size_t cl = strlen(cid), ol = strlen(oid);

	out[0] = 'O';
	memcpy(out + 1, cid, cl);
	out[1 + cl] = 0;
	memcpy(out + 2 + cl, oid, ol);
	return 2 + cl + ol;
}

size_t
os_key_coll(char *out, const char *cid)
{
	size_t cl = strlen(cid);

	out[0] = 'C';
	memcpy(out + 1, cid, cl);
	return 1 + cl;
}

static void
put_be64(char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (char)(v & 0xff);
		v >>= 8;
	}
}

uint64_t
os_get_be64(const char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | (uint8_t)p[i];
	return v;
}

size_t
os_key_omap(char *out, uint64_t nid, const void *k, size_t klen)
{
	out[0] = 'M';
	put_be64(out + 1, nid);
	if (klen)
		memcpy(out + 9, k, klen);
	return 9 + klen;
}

size_t
os_key_deferred(char *out, uint64_t seq)
{
	out[0] = 'D';
	put_be64(out + 1, seq);
	return 9;
}

size_t
os_key_refs(char *out, uint64_t pblock)
{
	out[0] = 'R';
	put_be64(out + 1, pblock);
	return 9;
}

size_t
os_key_shard(char *out, uint64_t nid, uint64_t idx)
{
	out[0] = 'X';
	put_be64(out + 1, nid);
	put_be64(out + 9, idx);
	return OS_KEY_SHARD_LEN;
}

/* ---- sharded extent maps ---- */

/* Shard idx of sb blocks lies inside the largest object. */
static bool
shard_ok(uint64_t idx, uint32_t sb)
{
	return sb && sb <= OS_MAX_SHARD_BLOCKS && idx < OS_MAX_LBLOCK / sb;
}

int
os_onode_add_shard(struct os_onode *o, uint64_t idx, const void *buf, size_t len)
{
	Cairn__Store__OnodeShard *pb;
	uint64_t lo, hi, prev_end;
	int rc = 0;

	if (!shard_ok(idx, o->shard_blocks))
		return -EBADMSG;
	pb = cairn__store__onode_shard__unpack(NULL, len, buf);
	if (!pb)
		return -EBADMSG;
	lo = idx * o->shard_blocks;
	hi = lo + o->shard_blocks;
	prev_end = o->next ? o->ext[o->next - 1].lblock + o->ext[o->next - 1].n : 0;
	if (pb->n_extents == 0)
		rc = -EBADMSG; /* an empty shard has no record */
	for (size_t i = 0; !rc && i < pb->n_extents; i++) {
		const Cairn__Store__Extent *e = pb->extents[i];
		struct os_xext *last = o->next ? &o->ext[o->next - 1] : NULL;

		if (e->nblocks == 0 || e->n_csum != e->nblocks || e->lblock < lo ||
		    e->lblock < prev_end || e->lblock >= hi || e->nblocks > hi - e->lblock) {
			rc = -EBADMSG;
			break;
		}
		prev_end = e->lblock + e->nblocks;
		if (last && last->lblock + last->n == e->lblock &&
		    last->pblock + last->n == e->pblock &&
		    (uint64_t)last->n + e->nblocks <= UINT32_MAX) {
			/* The rest of an extent the shard before cut: one again. */
			uint32_t *cs = realloc(last->csum, sizeof(*cs) * (last->n + e->nblocks));

			if (!cs) {
				rc = -ENOMEM;
				break;
			}
			memcpy(cs + last->n, e->csum, sizeof(*cs) * e->nblocks);
			last->csum = cs;
			last->n += e->nblocks;
			continue;
		}
		rc = os_onode_insert(o, e->lblock, e->pblock, e->nblocks, e->csum);
	}
	cairn__store__onode_shard__free_unpacked(pb, NULL);
	return rc;
}

/*
 * The next shard index >= *cur that holds a piece of o's extents, walking
 * extents from *ei. \return false when there is none.
 */
static bool
shard_next(const struct os_onode *o, uint32_t sb, size_t *ei, uint64_t *cur, uint64_t *out)
{
	while (*ei < o->next) {
		const struct os_xext *e = &o->ext[*ei];
		uint64_t first = e->lblock / sb, last = (e->lblock + e->n - 1) / sb;

		if (*cur < first)
			*cur = first;
		if (*cur <= last) {
			*out = (*cur)++;
			return true;
		}
		(*ei)++;
	}
	return false;
}

/* The part of extent e inside [lo, hi) (which it overlaps). */
static void
piece(const struct os_xext *e, uint64_t lo, uint64_t hi, struct os_xext *p)
{
	uint64_t s = CM_MAX(e->lblock, lo), end = CM_MIN(e->lblock + e->n, hi);

	p->lblock = s;
	p->pblock = e->pblock + (s - e->lblock);
	p->n = (uint32_t)(end - s);
	p->csum = e->csum + (s - e->lblock);
}

/* Whether a and b (either NULL: no extents) map blocks [lo, hi) alike. */
static bool
range_equal(const struct os_onode *a, const struct os_onode *b, uint64_t lo, uint64_t hi)
{
	size_t ai = 0, bi = 0;

	if (a)
		os_onode_find(a, lo, &ai);
	if (b)
		os_onode_find(b, lo, &bi);
	for (;; ai++, bi++) {
		bool ha = a && ai < a->next && a->ext[ai].lblock < hi;
		bool hb = b && bi < b->next && b->ext[bi].lblock < hi;
		struct os_xext pa, pb;

		if (!ha || !hb)
			return ha == hb;
		piece(&a->ext[ai], lo, hi, &pa);
		piece(&b->ext[bi], lo, hi, &pb);
		if (pa.lblock != pb.lblock || pa.pblock != pb.pblock || pa.n != pb.n ||
		    memcmp(pa.csum, pb.csum, sizeof(*pa.csum) * pa.n))
			return false;
	}
}

/* Put shard idx of o (which holds a piece of it) into wb. */
static int
put_shard(rocksdb_writebatch_t *wb, const struct os_onode *o, uint64_t idx)
{
	uint32_t sb = o->shard_blocks;
	uint64_t lo = idx * sb, hi = lo + sb;
	Cairn__Store__OnodeShard pb = CAIRN__STORE__ONODE_SHARD__INIT;
	Cairn__Store__Extent *ev, **ep;
	uint8_t stackbuf[1024], *buf = stackbuf;
	char key[OS_KEY_SHARD_LEN];
	size_t i, n = 0, len;

	os_onode_find(o, lo, &i);
	for (size_t k = i; k < o->next && o->ext[k].lblock < hi; k++)
		n++;
	ev = calloc(n + 1, sizeof(*ev));
	ep = calloc(n + 1, sizeof(*ep));
	if (!ev || !ep) {
		free(ev);
		free(ep);
		return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++) {
		struct os_xext p;

		piece(&o->ext[i + k], lo, hi, &p);
		cairn__store__extent__init(&ev[k]);
		ev[k].lblock = p.lblock;
		ev[k].nblocks = p.n;
		ev[k].pblock = p.pblock;
		ev[k].n_csum = p.n;
		ev[k].csum = p.csum;
		ep[k] = &ev[k];
	}
	pb.n_extents = n;
	pb.extents = ep;
	len = cairn__store__onode_shard__get_packed_size(&pb);
	if (len > sizeof(stackbuf))
		buf = malloc(len);
	if (buf) {
		cairn__store__onode_shard__pack(&pb, buf);
		rocksdb_writebatch_put(wb, key, os_key_shard(key, o->nid, idx), (char *)buf, len);
	}
	if (buf != stackbuf)
		free(buf);
	free(ev);
	free(ep);
	return buf ? 0 : -ENOMEM;
}

/* One past the last mapped logical block (0: none, or no onode). */
static uint64_t
map_end(const struct os_onode *o)
{
	return o && o->next ? o->ext[o->next - 1].lblock + o->ext[o->next - 1].n : 0;
}

/* Whether at most half of after's shards (of OS_SHARD_BLOCKS) differ from before's. */
static bool
mostly_kept(const struct os_onode *before, const struct os_onode *after)
{
	uint64_t cur = 0, idx, n = 0, changed = 0, sb = OS_SHARD_BLOCKS;
	size_t ei = 0;

	while (shard_next(after, OS_SHARD_BLOCKS, &ei, &cur, &idx)) {
		n++;
		changed += !range_equal(before, after, idx * sb, idx * sb + sb);
	}
	return changed * 2 <= n;
}

int
os_onode_put_shards(rocksdb_writebatch_t *wb, const struct os_onode *before, struct os_onode *after)
{
	uint32_t bsb = before ? before->shard_blocks : 0, asb = 0;
	char key[OS_KEY_SHARD_LEN];
	size_t ei = 0;
	uint64_t cur = 0, idx;
	int rc = 0;

	assert(!before || !after || before->nid == after->nid);
	if (after) {
		/*
		 * Sharded while the map reaches past the first shard, keeping
		 * its shard size. An inline map becomes sharded only when a
		 * transaction leaves most of it as it was: one that writes
		 * the object whole (4 MiB objects written in order, again and
		 * again) puts one record, where 16 shard records would cost
		 * the memtable more for nothing.
		 */
		if (map_end(after) > OS_SHARD_BLOCKS) {
			if (bsb)
				asb = bsb;
			else if (map_end(before) > OS_SHARD_BLOCKS && mostly_kept(before, after))
				asb = OS_SHARD_BLOCKS;
		}
		after->shard_blocks = asb;
	}
	/* Deletes first: with another shard size a key may be put again below. */
	while (bsb && shard_next(before, bsb, &ei, &cur, &idx)) {
		if (asb == bsb && !range_equal(after, NULL, idx * bsb, idx * bsb + bsb))
			continue; /* after has this shard: put or kept below */
		rocksdb_writebatch_delete(wb, key, os_key_shard(key, before->nid, idx));
	}
	ei = 0;
	cur = 0;
	while (!rc && asb && shard_next(after, asb, &ei, &cur, &idx)) {
		if (asb == bsb && range_equal(before, after, idx * asb, idx * asb + asb))
			continue; /* the same record is there */
		rc = put_shard(wb, after, idx);
	}
	return rc;
}

/* A KV error: -EAGAIN if only the block cache was to be read, else -EIO. */
static int
kv_err(char *err, bool nb)
{
	if (!nb)
		CM_ERR("rocksdb read: %s", err);
	rocksdb_free(err);
	return nb ? -EAGAIN : -EIO;
}

int
os_onode_load_shards(rocksdb_iterator_t *it, bool nb, struct os_onode *o)
{
	char key[OS_KEY_SHARD_LEN], *err = NULL;
	int rc = 0;

	os_key_shard(key, o->nid, 0);
	for (rocksdb_iter_seek(it, key, sizeof(key)); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl), *v;
		uint64_t idx = 0;

		if (kl < 9 || memcmp(k, key, 9))
			break;
		if (kl != OS_KEY_SHARD_LEN)
			return -EIO;
		idx = os_get_be64(k + 9);
		v = rocksdb_iter_value(it, &vl);
		rc = os_onode_add_shard(o, idx, v, vl);
		if (rc)
			return rc == -EBADMSG ? -EIO : rc;
	}
	rocksdb_iter_get_error(it, &err);
	return err ? kv_err(err, nb) : 0;
}

int
os_walk_onodes(rocksdb_iterator_t *it, rocksdb_iterator_t *xit, const struct os_walk_ops *ops,
	       void *arg)
{
	int rc = 0;

	for (rocksdb_iter_seek(it, "C", 1); rocksdb_iter_valid(it) && !rc; rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);

		if (kl < 1 || k[0] != 'C')
			break;
		rc = ops->coll(arg, k + 1, kl - 1);
	}
	if (!rc && ops->colls_done)
		rc = ops->colls_done(arg);
	for (rocksdb_iter_seek(it, "O", 1); rocksdb_iter_valid(it) && !rc; rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl), *v, *oid;
		struct os_onode *on = NULL;
		int drc, src = 0;

		if (kl < 1 || k[0] != 'O')
			break;
		v = rocksdb_iter_value(it, &vl);
		oid = memchr(k + 1, 0, kl - 1);
		if (oid)
			oid++;
		drc = os_onode_decode(v, vl, &on);
		if (drc)
			on = NULL;
		else if (on->shard_blocks)
			src = os_onode_load_shards(xit, false, on);
		rc = ops->onode(arg, k, kl, oid, on, drc, src);
		os_onode_free(on);
	}
	return rc;
}

int
os_onode_load(rocksdb_t *db, const rocksdb_readoptions_t *ro, bool nb, const char *key, size_t klen,
	      struct os_onode **op)
{
	rocksdb_iterator_t *it;
	struct os_onode *on = NULL;
	char *err = NULL, *v;
	size_t vl;
	int rc;

	*op = NULL;
	v = rocksdb_get(db, ro, key, klen, &vl, &err);
	if (err)
		return kv_err(err, nb);
	if (!v)
		return 0;
	rc = os_onode_decode(v, vl, &on);
	rocksdb_free(v);
	if (rc)
		return rc == -EBADMSG ? -EIO : rc;
	if (!on->shard_blocks) {
		*op = on;
		return 0;
	}
	os_onode_free(on);
	on = NULL;
	/*
	 * Head and shards from one view (an iterator's): a commit between a
	 * get and a scan would mix two versions of the map.
	 */
	it = rocksdb_create_iterator(db, ro);
	rocksdb_iter_seek(it, key, klen);
	if (rocksdb_iter_valid(it)) {
		const char *k = rocksdb_iter_key(it, &vl);

		if (vl == klen && !memcmp(k, key, klen)) {
			v = (char *)rocksdb_iter_value(it, &vl);
			rc = os_onode_decode(v, vl, &on);
			if (rc)
				rc = rc == -EBADMSG ? -EIO : rc;
			else if (on->shard_blocks)
				rc = os_onode_load_shards(it, nb, on);
		}
	}
	if (!rc && !on) {
		/* Gone since the get (or an error): which one? */
		rocksdb_iter_get_error(it, &err);
		if (err)
			rc = kv_err(err, nb);
	}
	rocksdb_iter_destroy(it);
	if (rc) {
		os_onode_free(on);
		return rc;
	}
	*op = on;
	return 0;
}
