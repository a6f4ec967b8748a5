/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The index shard map's codec, the shard of a key, and the shards' range
 * marks (rgw/shardmap.h; docs/design/rgw.md §3.1.1).
 */
#include "rgw/shardmap.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
keycmp(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0; /* (an empty key may be a NULL buffer) */

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static void
map_one(struct rgw_shardmap *m)
{
	memset(m, 0, sizeof(*m));
	m->n = 1;
	m->v = &m->one;
}

static int
num_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * No shard number twice (sorted, not pairwise: a map of 4,096 shards is
 * read per request). \return 0, -EBADMSG, -ENOMEM.
 */
static int
nums_distinct(const struct rgw_shardmap *m)
{
	uint32_t *v = m->n > 1 ? malloc(m->n * sizeof(*v)) : NULL;
	bool ok = true;

	if (m->n < 2)
		return 0;
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->n; i++)
		v[i] = m->v[i].num;
	qsort(v, m->n, sizeof(*v), num_cmp);
	for (uint32_t i = 1; i < m->n && ok; i++)
		ok = v[i] != v[i - 1];
	free(v);
	return ok ? 0 : -EBADMSG;
}

int
rgw_shardmap_decode(const void *p, size_t len, struct rgw_shardmap *m)
{
	const uint8_t *b = p, *end;
	uint32_t n;
	int rc;

	map_one(m);
	if (!len)
		return 0; /* (p may be NULL: no pointer arithmetic on it before this) */
	end = b + len;
	if (len < 5 || b[0] != RGW_MAP_V)
		return -EBADMSG;
	memcpy(&n, b + 1, 4);
	n = le32toh(n);
	/* (each span takes at least 6 bytes: a count past what len can hold is refused unallocated)
	 */
	if (n < 1 || n > RGW_MAP_MAX || n > (len - 5) / 6)
		return -EBADMSG;
	if (!(m->v = calloc(n, sizeof(*m->v)))) {
		map_one(m);
		return -ENOMEM;
	}
	m->n = n;
	b += 5;
	for (uint32_t i = 0; i < n; i++) {
		struct rgw_shard_span *s = &m->v[i];
		uint16_t l;

		if (end - b < 6)
			goto bad;
		memcpy(&s->num, b, 4);
		s->num = le32toh(s->num);
		memcpy(&l, b + 4, 2);
		s->lolen = le16toh(l);
		b += 6;
		if (s->lolen > RGW_MAP_KEY_MAX || (size_t)(end - b) < s->lolen)
			goto bad;
		s->lo = b;
		b += s->lolen;
		if (i == 0 ? s->lolen != 0 : s->lolen == 0)
			goto bad;
		if (memchr(s->lo, '\0', s->lolen))
			goto bad; /* (a key has no NUL: the range mark ends lo with one) */
		if (i && keycmp(m->v[i - 1].lo, m->v[i - 1].lolen, s->lo, s->lolen) >= 0)
			goto bad;
	}
	if (b != end)
		goto bad;
	if ((rc = nums_distinct(m))) {
		rgw_shardmap_fini(m);
		return rc;
	}
	return 0;
bad:
	rgw_shardmap_fini(m);
	return -EBADMSG;
}

void
rgw_shardmap_fini(struct rgw_shardmap *m)
{
	if (m->v != &m->one)
		free(m->v);
	map_one(m);
}

void
rgw_shardmap_encode(const struct rgw_shardmap *m, struct rgw_str *out)
{
	uint32_t n = htole32(m->n);

	rgw_str_addc(out, (char)RGW_MAP_V);
	rgw_str_add(out, &n, 4);
	for (uint32_t i = 0; i < m->n; i++) {
		uint32_t num = htole32(m->v[i].num);
		uint16_t l = htole16(m->v[i].lolen);

		rgw_str_add(out, &num, 4);
		rgw_str_add(out, &l, 2);
		rgw_str_add(out, m->v[i].lo, m->v[i].lolen);
	}
}

size_t
rgw_shardmap_pick(const struct rgw_shardmap *m, const void *key, size_t klen)
{
	size_t lo = 0, hi = m->n; /* the answer is in [lo, hi): v[0]'s key "" is <= any */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (keycmp(m->v[mid].lo, m->v[mid].lolen, key, klen) <= 0)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

size_t
rgw_shardmap_range_buf(const struct rgw_shardmap *m, size_t i, char *out)
{
	size_t n = m->v[i].lolen; /* (each key <= RGW_MAP_KEY_MAX, as decoded: it fits) */

	if (n)
		memcpy(out, m->v[i].lo, n);
	out[n++] = '\0';
	if (i + 1 < m->n) {
		memcpy(out + n, m->v[i + 1].lo, m->v[i + 1].lolen);
		n += m->v[i + 1].lolen;
	}
	return n;
}

void
rgw_shardmap_range(const struct rgw_shardmap *m, size_t i, struct rgw_str *out)
{
	char buf[RGW_RANGE_MAX];

	rgw_str_add(out, buf, rgw_shardmap_range_buf(m, i, buf));
}

void
rgw_shard_oid(const char *bucket_id, uint32_t num, char *oid, size_t len)
{
	snprintf(oid, len, "idx.%s.%" PRIu32, bucket_id, num);
}

void
rgw_retired_key(uint32_t num, char out[RGW_RETIRED_KEY_LEN + 1])
{
	snprintf(out, RGW_RETIRED_KEY_LEN + 1, RGW_RETIRED_PREFIX "%08" PRIx32, num);
}

int
rgw_retired_num(const void *key, size_t klen, uint32_t *num)
{
	char hex[9], *end;

	if (klen != RGW_RETIRED_KEY_LEN || memcmp(key, RGW_RETIRED_PREFIX, klen - 8))
		return -EINVAL;
	memcpy(hex, (const char *)key + klen - 8, 8);
	hex[8] = '\0';
	*num = (uint32_t)strtoul(hex, &end, 16);
	return *end ? -EINVAL : 0;
}

uint32_t
rgw_shardmap_next_num(const struct rgw_shardmap *m)
{
	uint32_t max = 0;

	for (uint32_t i = 0; i < m->n; i++)
		if (m->v[i].num > max)
			max = m->v[i].num;
	return max + 1;
}

void
rgw_range_freeze(char tag, const void *range, size_t rlen, const void *key, size_t klen,
		 struct rgw_str *out)
{
	rgw_str_addc(out, '\xff');
	rgw_str_addc(out, tag);
	rgw_str_add(out, range, rlen);
	rgw_str_addc(out, '\0');
	rgw_str_add(out, key, klen);
}

int
rgw_range_frozen_parse(const void *mark, size_t len, char *tag, const uint8_t **range, size_t *rlen,
		       const uint8_t **key, size_t *klen)
{
	const uint8_t *b = mark, *end, *lo_end, *hi_end;

	if (!mark || len < 4)
		return -EINVAL;
	end = b + len;
	if (b[0] != 0xff || (b[1] != RGW_FREEZE_SPLIT && b[1] != RGW_FREEZE_MERGE))
		return -EINVAL;
	/* range = lo "\0" hi, then "\0" key: lo and hi hold no NUL */
	if (!(lo_end = memchr(b + 2, '\0', (size_t)(end - b - 2))) ||
	    !(hi_end = memchr(lo_end + 1, '\0', (size_t)(end - lo_end - 1))))
		return -EINVAL;
	*tag = (char)b[1];
	*range = b + 2;
	*rlen = (size_t)(hi_end - (b + 2));
	*key = hi_end + 1;
	*klen = (size_t)(end - hi_end - 1);
	return 0;
}

/*
 * Whether want (lo "\0" hi) is one half of range r split at key k: lo "\0" k
 * or k "\0" hi. Both shards of a split carry the same frozen mark until it
 * ends, so each answers a map from before the split's map change and one
 * from after.
 */
static bool
half_of(const uint8_t *r, size_t rlen, const uint8_t *k, size_t klen, const void *want, size_t wlen)
{
	const uint8_t *z = memchr(r, '\0', rlen), *w = want;
	size_t lolen, hilen;

	if (!z || !klen)
		return false;
	lolen = (size_t)(z - r);
	hilen = rlen - lolen - 1;
	if (wlen == lolen + 1 + klen && !memcmp(w, r, lolen + 1) && !memcmp(w + lolen + 1, k, klen))
		return true;
	return wlen == klen + 1 + hilen && !memcmp(w, k, klen) && w[klen] == '\0' &&
	       !memcmp(w + klen + 1, z + 1, hilen);
}

enum rgw_range_state
rgw_range_state(const void *want, size_t wlen, const void *got, size_t glen)
{
	const uint8_t *r, *k;
	size_t rlen, klen;
	char tag;

	if (got && glen == wlen && !memcmp(got, want, wlen))
		return RGW_RANGE_OK;
	if (got && glen == sizeof(RGW_RANGE_CLOSED) - 1 &&
	    !memcmp(got, RGW_RANGE_CLOSED, sizeof(RGW_RANGE_CLOSED) - 1))
		return RGW_RANGE_CLOSED_ST;
	if (!got || rgw_range_frozen_parse(got, glen, &tag, &r, &rlen, &k, &klen))
		return RGW_RANGE_MOVED;
	if (rlen == wlen && !memcmp(r, want, wlen))
		return RGW_RANGE_FROZEN;
	if ((tag == RGW_FREEZE_SPLIT || tag == RGW_FREEZE_MERGE) &&
	    half_of(r, rlen, k, klen, want, wlen))
		return RGW_RANGE_FROZEN; /* (a map read before a merge's map change, or after a
					  * split's) */
	return RGW_RANGE_MOVED;
}
