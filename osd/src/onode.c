/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Onodes in memory: extent maps (sorted, disjoint, per-block crc32c),
 * xattrs, omap header; encoding to the Onode protobuf; keys.
 */
#include "store_internal.h"

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
	o = os_onode_new(pb->nid);
	if (!o)
		goto nomem;
	o->size = pb->size;
	o->version = pb->version;
	o->no_omap = pb->no_omap;
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
		    e->lblock + e->nblocks < e->lblock) {
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
	Cairn__Store__Extent *ev = calloc(o->next + 1, sizeof(*ev)), **ep;
	Cairn__Store__Attr *av = calloc(o->nattrs + 1, sizeof(*av)), **ap;
	int rc = 0;

	ep = calloc(o->next + 1, sizeof(*ep));
	ap = calloc(o->nattrs + 1, sizeof(*ap));
	if (!ev || !av || !ep || !ap) {
		rc = -ENOMEM;
		goto out;
	}
	pb.nid = o->nid;
	pb.size = o->size;
	pb.version = o->version;
	for (size_t i = 0; i < o->next; i++) {
		cairn__store__extent__init(&ev[i]);
		ev[i].lblock = o->ext[i].lblock;
		ev[i].nblocks = o->ext[i].n;
		ev[i].pblock = o->ext[i].pblock;
		ev[i].n_csum = o->ext[i].n;
		ev[i].csum = o->ext[i].csum;
		ep[i] = &ev[i];
	}
	pb.n_extents = o->next;
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

static int
add_free(struct os_extent **fr, size_t *nfr, size_t *cap, uint64_t start, uint64_t len)
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

		if (add_free(fr, nfr, cap, e->pblock + (cs - es), ce - cs))
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
