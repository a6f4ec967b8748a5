/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reference counts of shared blocks (clones by reference): an
 * open-addressing hash from device block to the number of extents that map
 * it, holding blocks that are or were shared (count 1: see os_refs in
 * store_internal.h); a block that is allocated and absent has one owner. Linear probing with
 * backward-shift deletion (no tombstones), so a removal followed by the re-insertion of as many
 * entries never grows the table: undoing a transaction needs no memory.
 */
#include "store_internal.h"

/* Fibonacci hashing: the product's top bits (cap is a power of two). */
static size_t
slot_of(const struct os_refs *r, uint64_t pb)
{
	return (size_t)((pb * 0x9E3779B97F4A7C15ull) >> (64 - __builtin_ctzll(r->cap)));
}

void
os_refs_fini(struct os_refs *r)
{
	free(r->pb);
	free(r->refs);
	memset(r, 0, sizeof(*r));
}

uint32_t
os_refs_get(const struct os_refs *r, uint64_t pb)
{
	if (!r->n)
		return 0;
	for (size_t i = slot_of(r, pb);; i = (i + 1) & (r->cap - 1)) {
		if (r->pb[i] == pb)
			return r->refs[i];
		if (!r->pb[i])
			return 0;
	}
}

static int
grow(struct os_refs *r)
{
	size_t ncap = r->cap ? r->cap * 2 : 64;
	struct os_refs nr = { .cap = ncap };

	nr.pb = calloc(ncap, sizeof(*nr.pb));
	nr.refs = calloc(ncap, sizeof(*nr.refs));
	if (!nr.pb || !nr.refs) {
		free(nr.pb);
		free(nr.refs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->cap; i++) {
		size_t k;

		if (!r->pb[i])
			continue;
		for (k = slot_of(&nr, r->pb[i]); nr.pb[k]; k = (k + 1) & (ncap - 1))
			;
		nr.pb[k] = r->pb[i];
		nr.refs[k] = r->refs[i];
		nr.n++;
	}
	free(r->pb);
	free(r->refs);
	*r = nr;
	return 0;
}

int
os_refs_set(struct os_refs *r, uint64_t pb, uint32_t refs)
{
	size_t i;

	if (!pb)
		return -EINVAL; /* block 0 is the label; 0 marks an empty slot */
	if (r->cap) {
		for (i = slot_of(r, pb); r->pb[i] && r->pb[i] != pb; i = (i + 1) & (r->cap - 1))
			;
		if (r->pb[i] == pb) {
			if (refs) {
				r->refs[i] = refs;
				return 0;
			}
			/* Remove; shift back later entries of the probe run that may sit past their
			 * home. */
			r->pb[i] = 0;
			r->n--;
			for (size_t j = (i + 1) & (r->cap - 1); r->pb[j];
			     j = (j + 1) & (r->cap - 1)) {
				size_t h = slot_of(r, r->pb[j]);

				/* j's entry may move to the hole i unless its home lies in (i, j].
				 */
				if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
					r->pb[i] = r->pb[j];
					r->refs[i] = r->refs[j];
					r->pb[j] = 0;
					i = j;
				}
			}
			return 0;
		}
	}
	if (!refs)
		return 0;
	if ((r->n + 1) * 10 > r->cap * 7) {
		int rc = grow(r);

		if (rc)
			return rc;
	}
	for (i = slot_of(r, pb); r->pb[i]; i = (i + 1) & (r->cap - 1))
		;
	r->pb[i] = pb;
	r->refs[i] = refs;
	r->n++;
	return 0;
}

size_t
os_refs_next(const struct os_refs *r, size_t i, uint64_t *pb, uint32_t *refs)
{
	for (; i < r->cap; i++) {
		if (r->pb[i]) {
			*pb = r->pb[i];
			*refs = r->refs[i];
			return i + 1;
		}
	}
	return 0;
}

int
os_refs_decode(const char *k, size_t kl, const void *v, size_t vl, uint64_t *pb, uint32_t *refs)
{
	Cairn__Store__Refs *m;

	if (kl != 9 || k[0] != 'R')
		return -EBADMSG;
	*pb = os_get_be64(k + 1);
	m = cairn__store__refs__unpack(NULL, vl, v);
	if (!m)
		return -EBADMSG;
	*refs = m->refs;
	cairn__store__refs__free_unpacked(m, NULL);
	return *refs >= 2 ? 0 : -EBADMSG;
}

void
os_refs_put_kv(rocksdb_writebatch_t *wb, uint64_t pb, uint32_t refs)
{
	Cairn__Store__Refs m = CAIRN__STORE__REFS__INIT;
	uint8_t val[16];
	char key[9];
	size_t vl;

	os_key_refs(key, pb);
	if (refs < 2) {
		rocksdb_writebatch_delete(wb, key, sizeof(key));
		return;
	}
	m.refs = refs;
	vl = cairn__store__refs__pack(&m, val);
	rocksdb_writebatch_put(wb, key, sizeof(key), (const char *)val, vl);
}

int
os_refs_mark(struct os_alloc *a, struct os_refs *cnt, uint64_t pb, uint64_t n)
{
	int rc = os_alloc_mark(a, pb, n);

	if (rc != -EEXIST)
		return rc;
	/* Some block of it is mapped already: count block by block. */
	for (uint64_t b = pb; b < pb + n; b++) {
		if (!os_alloc_is_used(a, b)) {
			rc = os_alloc_mark(a, b, 1);
		} else {
			uint32_t r = os_refs_get(cnt, b);

			rc = os_refs_set(cnt, b, r ? r + 1 : 2);
		}
		if (rc)
			return rc;
	}
	return 0;
}

uint64_t
os_refs_compare(const struct os_refs *counted, const struct os_refs *recorded,
		const struct os_alloc *used,
		void (*cb)(void *arg, uint64_t pb, uint32_t counted, uint32_t recorded), void *arg)
{
	uint64_t pb, bad = 0;
	uint32_t r;

	for (size_t i = os_refs_next(counted, 0, &pb, &r); i;
	     i = os_refs_next(counted, i, &pb, &r)) {
		uint32_t rec = os_refs_get(recorded, pb);

		if ((rec ? rec : 1) != r) {
			bad++;
			cb(arg, pb, r, rec ? rec : 1);
		}
	}
	for (size_t i = os_refs_next(recorded, 0, &pb, &r); i;
	     i = os_refs_next(recorded, i, &pb, &r)) {
		uint32_t c;

		if (os_refs_get(counted, pb))
			continue;
		c = pb < os_alloc_total_blocks(used) && os_alloc_is_used(used, pb) ? 1 : 0;
		if (c == r)
			continue; /* one owner, once shared (the store's own map) */
		bad++;
		cb(arg, pb, c, r);
	}
	return bad;
}

int
os_refs_load(rocksdb_iterator_t *it, uint64_t nblocks, uint64_t data_start, struct os_refs *rec,
	     void (*bad)(void *arg, const char *k, size_t kl, const char *why), void *arg)
{
	uint64_t nbad = 0;

	for (rocksdb_iter_seek(it, "R", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);
		uint64_t pb;
		uint32_t r;
		int rc;

		if (kl < 1 || k[0] != 'R')
			break;
		if (os_refs_decode(k, kl, v, vl, &pb, &r)) {
			bad(arg, k, kl, "undecodable");
			nbad++;
			continue;
		}
		if (pb < data_start || pb >= nblocks) {
			bad(arg, k, kl, "outside the device's data blocks");
			nbad++;
			continue;
		}
		rc = os_refs_set(rec, pb, r);
		if (rc)
			return rc;
	}
	return nbad ? -EUCLEAN : 0;
}
