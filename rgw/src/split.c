/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Online split of a bucket's index shard (docs/design/rgw.md §3.1.1), run
 * by the collector's thread: for a shard noted by a commit (rgw__split_note)
 * or seen by the sweep, whose entries pass rgw_index_shard_max.
 *
 * Shard A (range lo..hi) splits at key K into A (lo..K) and a new shard B
 * (K..hi):
 *   1. freeze A: its range mark becomes the split-frozen form (lo, hi, K),
 *      guarded on the plain one, with lock rgw.split on A and the new
 *      shard's number in A's xattr rgw.split.to; writers back off, readers
 *      go on;
 *   2. copy A's entries of [K, hi) and the system entries of those keys to
 *      B, which carries the same frozen mark, then B's counters;
 *   3. the bucket's map gets B (compare-and-swap on the whole old map),
 *      and the gateways are told;
 *   4. A loses those entries, its counters what B has, its mark becomes
 *      lo..K (guarded on the frozen one);
 *   5. B's mark becomes K..hi; the lock goes.
 * Until 4, a reader with either map reads a whole copy and no writer
 * writes either shard, so no read is stale. A crash anywhere leaves the
 * frozen mark, which the next look at the shard resumes from: before 3
 * the copy is made again, after it 4 and 5 are done.
 */
#include "rgw_int.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/random.h"

#include <endian.h>
#include <unistd.h>

CM_LOG_SUBSYS(rgw);

#define SPLIT_LOCK    "rgw.split"
#define SPLIT_TO      "rgw.split.to"
#define SPLIT_TOK     "rgw.split.tok"  /* B: the copy attempt writing it */
#define SPLIT_DONE    "rgw.split.done" /* B: the copy is whole (set by its last op) */
#define SPLIT_TOK_LEN 16
#define MERGE_FROM    "rgw.merge.from"    /* A: the number of the shard merged into it */
#define MERGE_ADD     RGW_MERGE_ADD_XATTR /* A: that shard's counters, copied with its entries */
/* B once merged: out of the map, empty; a reader with an older map reads the map anew */
#define RANGE_MERGED \
	"\x01"       \
	"merged"
/* renewed by every page: a dead splitter blocks its shard's writers this long (a live
 * one that loses it to a stall is fenced by the guards: the copy's token, the lock
 * check before the map change) */
#define SPLIT_LOCK_MS 6000
#define SPLIT_PAGE    1000
#define SPLIT_NOTES   256
#define MAP_TRIES     10

struct rgw_split_note {
	char bucket[64];
	uint32_t num;
	struct rgw_split_note *next;
};

/* A bucket as the splitter reads it: its record, the map's bytes as stored, the map. */
struct sbk {
	char name[64];
	struct rgw_bucket b;
	uint8_t *raw;
	size_t rlen;
	uint8_t *rec; /* the record's bytes (a split's map change is guarded on them) */
	size_t reclen;
	struct rgw_shardmap m;
};

/* A shard's xattrs. */
struct sst {
	char mark[RGW_RANGE_MARK_MAX];
	size_t mlen;
	bool has_mark, has_to, has_tok, done, has_from, has_add;
	int64_t objs, bytes;
	int64_t add_objs, add_bytes; /* MERGE_ADD */
	uint32_t to, from;
	uint8_t tok[SPLIT_TOK_LEN];
};

static int
keycmp(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t n = CM_MIN(alen, blen);
	int c = n ? memcmp(a, b, n) : 0; /* (shard 0's lowest key is a NULL buffer) */

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static int
run(struct rgw *g, const char *oid, cairn_op_t *op)
{
	int rc = rgw__gc_operate(g, g->meta, oid, op);

	cairn_op_release(op);
	return rc;
}

static void
sbk_fini(struct sbk *s)
{
	rgw_shardmap_fini(&s->m);
	free(s->raw);
	free(s->rec);
	s->raw = s->rec = NULL;
	s->rlen = s->reclen = 0;
}

static int
sbk_load(struct rgw *g, const char *bucket, struct sbk *s)
{
	struct cairn_kv *kvs = NULL;
	size_t n = 0;
	int rval = 0, rc;
	char oid[96], name[64];
	bool rec = false;
	cairn_op_t *op = cairn_op_create();

	snprintf(name, sizeof(name), "%s", bucket); /* (a reload passes s->name itself) */
	memset(s, 0, sizeof(*s));
	rgw_shardmap_decode(NULL, 0, &s->m);
	if (!op)
		return -ENOMEM;
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(oid, sizeof(oid), "bucket.%s", name);
	cairn_op_getxattrs(op, &kvs, &n, &rval);
	rc = run(g, oid, op);
	if (!rc)
		rc = rval;
	for (size_t i = 0; !rc && i < n; i++) {
		if (kvs[i].klen == 10 && !memcmp(kvs[i].key, "rgw.bucket", 10)) {
			rec = rgw_bucket_decode(kvs[i].val, kvs[i].vlen, &s->b) == 0;
			if (rec && !(s->rec = malloc(kvs[i].vlen)))
				rc = -ENOMEM;
			else if (rec)
				memcpy(s->rec, kvs[i].val, s->reclen = kvs[i].vlen);
		} else if (kvs[i].klen == sizeof(RGW_MAP_XATTR) - 1 &&
			   !memcmp(kvs[i].key, RGW_MAP_XATTR, kvs[i].klen) && kvs[i].vlen) {
			if (!(s->raw = malloc(kvs[i].vlen)))
				rc = -ENOMEM;
			else
				memcpy(s->raw, kvs[i].val, s->rlen = kvs[i].vlen);
		}
	}
	cairn_kvs_free(kvs, n);
	if (!rc && !rec)
		rc = -ENOENT;
	if (!rc && (rc = rgw_shardmap_decode(s->raw, s->rlen, &s->m)))
		CM_ERR("split: bucket %s: its shard map does not decode: %s", name,
		       cm_strerror(rc));
	if (rc)
		sbk_fini(s);
	return rc;
}

static void
shard_oid(const struct sbk *s, uint32_t num, char *oid, size_t len)
{
	rgw_shard_oid(s->b.id, num, oid, len);
}

static int64_t
le64s(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return (int64_t)le64toh(v);
}

/* The time now, as a retired key's value. */
static void
retired_val(uint8_t out[8])
{
	uint64_t v = htole64((uint64_t)rgw__now_ns());

	memcpy(out, &v, 8);
}

/*
 * Note on the bucket object that shard num's object may be left out of the
 * map (a split's copy, from now: the map change takes the note away; its
 * time is renewed by every attempt, so a split at work is never older than
 * the grace). Guarded on the bucket's id (a deleted bucket gets no object).
 */
static int
retire_note(struct rgw *g, const struct sbk *s, uint32_t num, uint8_t v[8])
{
	cairn_op_t *op = cairn_op_create();
	char key[RGW_RETIRED_KEY_LEN + 1], oid[96];

	if (!op)
		return -ENOMEM;
	rgw_retired_key(num, key);
	retired_val(v);
	snprintf(oid, sizeof(oid), "bucket.%s", s->name);
	cairn_op_cmpxattr(op, "rgw.id", CAIRN_CMP_EQ, s->b.id, strlen(s->b.id));
	cairn_op_omap_set(op, key, strlen(key), v, 8);
	return run(g, oid, op);
}

/*
 * The sweep's part: every note older than the grace is claimed (removed,
 * guarded on its value: a split that noted it again keeps it), then, if its
 * shard is not in the map as just read, the shard's object goes. A split's
 * map change compares the note with what its attempt wrote, so a split
 * whose note was claimed never puts a removed shard in the map: it fails,
 * and the next attempt copies again.
 */
static void
retire_sweep(struct rgw *g, const struct sbk *s)
{
	struct cairn_kv *kvs = NULL;
	cairn_op_t *op = cairn_op_create();
	int64_t now = rgw__now_ns(), grace = (int64_t)g->conf.shard_retire_s * 1000000000;
	char oid[96];
	size_t n = 0;
	bool more = false;
	int rval = 0;

	if (!op)
		return;
	snprintf(oid, sizeof(oid), "bucket.%s", s->name);
	cairn_op_omap_list(op, NULL, 0, RGW_RETIRED_PREFIX, sizeof(RGW_RETIRED_PREFIX) - 1, 1000,
			   &kvs, &n, &more, &rval);
	if (run(g, oid, op) || rval)
		n = 0;
	for (size_t i = 0; i < n && !g->gc_stop; i++) {
		const struct cairn_kv *kv = &kvs[i];
		char soid[96];
		uint32_t num;
		bool mapped = false;
		int rc;

		if (rgw_retired_num(kv->key, kv->klen, &num) || kv->vlen != 8 ||
		    now - le64s(kv->val) < grace)
			continue;
		for (size_t j = 0; j < s->m.n; j++)
			mapped |= s->m.v[j].num == num;
		if (!(op = cairn_op_create()))
			break;
		cairn_op_omap_cmp(op, kv->key, kv->klen, CAIRN_CMP_EQ, kv->val, 8);
		cairn_op_omap_rm(op, kv->key, kv->klen);
		if (run(g, oid, op) || mapped)
			continue; /* (noted again meanwhile, or in the map: the object stays) */
		if (!(op = cairn_op_create()))
			break;
		shard_oid(s, num, soid, sizeof(soid));
		cairn_op_remove(op);
		if ((rc = run(g, soid, op)) && rc != -ENOENT)
			CM_WARN_RC(rc, "split: bucket %s: removing the retired shard %s", s->name,
				   soid);
		else
			CM_INFO("split: bucket %s: retired shard %s removed", s->name, soid);
	}
	cairn_kvs_free(kvs, n);
}

static int
shard_read(struct rgw *g, const char *oid, struct sst *st)
{
	struct cairn_kv *kvs = NULL;
	size_t n = 0;
	int rval = 0, rc;
	cairn_op_t *op = cairn_op_create();

	memset(st, 0, sizeof(*st));
	if (!op)
		return -ENOMEM;
	cairn_op_getxattrs(op, &kvs, &n, &rval);
	if (!(rc = run(g, oid, op)))
		rc = rval;
	for (size_t i = 0; !rc && i < n; i++) {
		const struct cairn_kv *kv = &kvs[i];

		if (kv->klen == sizeof(RGW_RANGE_XATTR) - 1 &&
		    !memcmp(kv->key, RGW_RANGE_XATTR, kv->klen) && kv->vlen <= sizeof(st->mark)) {
			memcpy(st->mark, kv->val, kv->vlen);
			st->mlen = kv->vlen;
			st->has_mark = true;
		} else if (kv->klen == strlen(RGW_USAGE_OBJS) &&
			   !memcmp(kv->key, RGW_USAGE_OBJS, kv->klen) && kv->vlen == 8) {
			st->objs = le64s(kv->val);
		} else if (kv->klen == strlen(RGW_USAGE_BYTES) &&
			   !memcmp(kv->key, RGW_USAGE_BYTES, kv->klen) && kv->vlen == 8) {
			st->bytes = le64s(kv->val);
		} else if (kv->klen == sizeof(SPLIT_TO) - 1 &&
			   !memcmp(kv->key, SPLIT_TO, kv->klen) && kv->vlen == 4) {
			memcpy(&st->to, kv->val, 4);
			st->to = le32toh(st->to);
			st->has_to = true;
		} else if (kv->klen == sizeof(SPLIT_TOK) - 1 &&
			   !memcmp(kv->key, SPLIT_TOK, kv->klen) && kv->vlen == SPLIT_TOK_LEN) {
			memcpy(st->tok, kv->val, SPLIT_TOK_LEN);
			st->has_tok = true;
		} else if (kv->klen == sizeof(SPLIT_DONE) - 1 &&
			   !memcmp(kv->key, SPLIT_DONE, kv->klen)) {
			st->done = true;
		} else if (kv->klen == sizeof(MERGE_FROM) - 1 &&
			   !memcmp(kv->key, MERGE_FROM, kv->klen) && kv->vlen == 4) {
			memcpy(&st->from, kv->val, 4);
			st->from = le32toh(st->from);
			st->has_from = true;
		} else if (kv->klen == sizeof(MERGE_ADD) - 1 &&
			   !memcmp(kv->key, MERGE_ADD, kv->klen) && kv->vlen == 16) {
			st->add_objs = le64s(kv->val);
			st->add_bytes = le64s((const uint8_t *)kv->val + 8);
			st->has_add = true;
		}
	}
	cairn_kvs_free(kvs, n);
	return rc;
}

/* The S3 key of an entry's omap key (the bytes before its NUL). */
static size_t
skey_len(const struct cairn_kv *kv)
{
	const uint8_t *z = memchr(kv->key, 0, kv->klen);

	return z ? (size_t)(z - (const uint8_t *)kv->key) : kv->klen;
}

/* The S3 key a system entry belongs to (pending, upload, null pointer). \return false: none. */
static bool
sys_key(const struct cairn_kv *kv, const uint8_t **k, size_t *kl)
{
	const uint8_t *key = kv->key;

	if (kv->klen < 2 || key[0] != 0xff)
		return false;
	if (key[1] == 'p' && kv->vlen > 16) {
		*k = (const uint8_t *)kv->val + 16;
		*kl = kv->vlen - 16;
		return true;
	}
	if (key[1] == 'u' && kv->klen > 2 + 1 + RGW_UPLOAD_LEN &&
	    key[kv->klen - RGW_UPLOAD_LEN - 1] == '\0') {
		*k = key + 2;
		*kl = kv->klen - 2 - 1 - RGW_UPLOAD_LEN;
		return true;
	}
	if (key[1] == 'n' && kv->klen > 2) {
		*k = key + 2;
		*kl = kv->klen - 2;
		return true;
	}
	return false;
}

/* The split's geometry, from a frozen mark. */
struct geo {
	const uint8_t *lo, *hi, *k;
	size_t lolen, hilen, klen;
	char frozen[RGW_RANGE_MARK_MAX];
	size_t flen;
	char lower[RGW_RANGE_MAX], upper[RGW_RANGE_MAX], whole[RGW_RANGE_MAX];
	size_t lowlen, uplen, wholelen;
};

static int
geo_of(const char *mark, size_t mlen, char want_tag, struct geo *x)
{
	const uint8_t *r, *z;
	size_t rlen;
	char tag;

	memset(x, 0, sizeof(*x));
	if (mlen > sizeof(x->frozen) ||
	    rgw_range_frozen_parse(mark, mlen, &tag, &r, &rlen, &x->k, &x->klen) ||
	    tag != want_tag || !x->klen || !(z = memchr(r, 0, rlen)))
		return -EINVAL;
	memcpy(x->frozen, mark, mlen);
	x->flen = mlen;
	/* (pointers into x->frozen, which x keeps) */
	x->k = (const uint8_t *)x->frozen + (x->k - (const uint8_t *)mark);
	r = (const uint8_t *)x->frozen + (r - (const uint8_t *)mark);
	z = (const uint8_t *)x->frozen + (z - (const uint8_t *)mark);
	x->lo = r;
	x->lolen = (size_t)(z - r);
	x->hi = z + 1;
	x->hilen = rlen - x->lolen - 1;
	if (x->lolen > RGW_MAP_KEY_MAX || x->hilen > RGW_MAP_KEY_MAX || x->klen > RGW_MAP_KEY_MAX ||
	    keycmp(x->k, x->klen, x->lo, x->lolen) <= 0 ||
	    (x->hilen && keycmp(x->k, x->klen, x->hi, x->hilen) >= 0))
		return -EINVAL;
	memcpy(x->whole, r, rlen);
	x->wholelen = rlen;
	memcpy(x->lower, x->lo, x->lolen);
	x->lower[x->lolen] = '\0';
	memcpy(x->lower + x->lolen + 1, x->k, x->klen);
	x->lowlen = x->lolen + 1 + x->klen;
	memcpy(x->upper, x->k, x->klen);
	x->upper[x->klen] = '\0';
	if (x->hilen)
		memcpy(x->upper + x->klen + 1, x->hi, x->hilen);
	x->uplen = x->klen + 1 + x->hilen;
	return 0;
}

static bool
in_upper(const struct geo *x, const uint8_t *k, size_t kl)
{
	return keycmp(k, kl, x->k, x->klen) >= 0 &&
	       (!x->hilen || keycmp(k, kl, x->hi, x->hilen) < 0);
}

static void
lock_op(struct rgw *g, cairn_op_t *op)
{
	cairn_op_lock(op, SPLIT_LOCK, CAIRN_LOCK_EXCLUSIVE, g->split_cookie, "", g->name,
		      SPLIT_LOCK_MS, CAIRN_LOCK_MAY_RENEW);
}

static int
lock_take(struct rgw *g, const char *aoid)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return -ENOMEM;
	lock_op(g, op);
	return run(g, aoid, op);
}

static void
lock_drop(struct rgw *g, const char *aoid)
{
	cairn_op_t *op = cairn_op_create();

	if (op) {
		cairn_op_unlock(op, SPLIT_LOCK, g->split_cookie);
		run(g, aoid, op);
	}
}

/*
 * Undo a freeze of bucket's shard anum that never reached the map (its
 * copy failed, or the map changed under it): A as it was, and B (boid, if
 * known) removed. Only while the map still gives A the whole range and
 * the lock is ours: a splitter that holds it may be about to publish B.
 */
static void
unfreeze(struct rgw *g, const char *bucket, uint32_t anum, const char *aoid, uint32_t to,
	 const char *boid, const struct geo *x)
{
	uint32_t tl = htole32(to);
	char want[RGW_RANGE_MAX];
	struct sbk s;
	cairn_op_t *op;
	size_t i, wl;
	int rc;

	if (sbk_load(g, bucket, &s))
		return;
	i = rgw_shardmap_pick(&s.m, x->k, x->klen);
	wl = rgw_shardmap_range_buf(&s.m, i, want);
	rc = s.m.v[i].num == anum && wl == x->wholelen && !memcmp(want, x->whole, wl);
	sbk_fini(&s);
	if (!rc || !(op = cairn_op_create()))
		return; /* (the map has B: the split goes on at the next look) */
	lock_op(g, op);
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
	if (to)
		cairn_op_cmpxattr(op, SPLIT_TO, CAIRN_CMP_EQ, &tl, 4);
	cairn_op_setxattr(op, RGW_RANGE_XATTR, x->whole, x->wholelen);
	cairn_op_rmxattr(op, SPLIT_TO);
	cairn_op_unlock(op, SPLIT_LOCK, g->split_cookie);
	if (run(g, aoid, op) || !boid || !(op = cairn_op_create()))
		return;
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
	cairn_op_remove(op);
	run(g, boid, op);
}

/* Step 2: B made anew with A's upper entries. */
static int
copy_upper(struct rgw *g, const char *aoid, const char *boid, const struct geo *x)
{
	struct sst bs;
	cairn_op_t *op;
	int64_t objs = 0, bytes = 0;
	char after[2 + RGW_KEY_MAX + 2 + RGW_UPLOAD_LEN + 64];
	uint8_t tok[SPLIT_TOK_LEN];
	size_t alen;
	bool more = true;
	int rc;

	rc = shard_read(g, boid, &bs);
	if (!rc && (bs.mlen != x->flen || memcmp(bs.mark, x->frozen, x->flen)))
		return -EEXIST; /* (another split's shard: the number is taken) */
	if (!rc && bs.done)
		return 0; /* (whole: A has been frozen since, so it is still a copy) */
	if (!rc) {
		if (!(op = cairn_op_create()))
			return -ENOMEM;
		/* (a copy a crash cut short, or a splitter whose lock ran out; never a
		 * whole one, which may be in the map by now) */
		cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
		cairn_op_cmpxattr(op, SPLIT_DONE, CAIRN_CMP_ABSENT, NULL, 0);
		cairn_op_remove(op);
		if ((rc = run(g, boid, op)) && rc != -ENOENT)
			return rc;
	} else if (rc != -ENOENT) {
		return rc;
	}
	/* this attempt's token: every write below is guarded on it, so a stale
	 * splitter's pages never land in another attempt's copy */
	cm_random_bytes(tok, sizeof(tok));
	if (!(op = cairn_op_create()))
		return -ENOMEM;
	cairn_op_create_object(op, true);
	cairn_op_setxattr(op, RGW_RANGE_XATTR, x->frozen, x->flen);
	cairn_op_setxattr(op, SPLIT_TOK, tok, sizeof(tok));
	if ((rc = run(g, boid, op)))
		return rc;
	/* the keys' entries: from K up to hi (or the system region) */
	memcpy(after, x->k, x->klen);
	alen = x->klen;
	for (int pass = 0; pass < 2; pass++) {
		more = true;
		if (pass == 1) {
			memcpy(after, "\xff", 1);
			alen = 1;
		}
		while (more) {
			struct cairn_kv *kvs = NULL;
			size_t n = 0, set = 0;
			int rval = 0;
			cairn_op_t *w;

			if (!(op = cairn_op_create()))
				return -ENOMEM;
			lock_op(g, op); /* (still ours: or someone else resumes this split) */
			cairn_op_omap_list(op, after, alen, pass ? "\xff" : NULL, pass, SPLIT_PAGE,
					   &kvs, &n, &more, &rval);
			if (!(rc = run(g, aoid, op)))
				rc = rval;
			if (rc || !(w = cairn_op_create())) {
				cairn_kvs_free(kvs, n);
				return rc ? rc : -ENOMEM;
			}
			cairn_op_cmpxattr(w, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
			cairn_op_cmpxattr(w, SPLIT_TOK, CAIRN_CMP_EQ, tok, sizeof(tok));
			for (size_t i = 0; i < n; i++) {
				const struct cairn_kv *kv = &kvs[i];
				const uint8_t *k;
				size_t kl;

				if (!pass) {
					struct rgw_entry e;

					kl = skey_len(kv);
					if (((const uint8_t *)kv->key)[0] == 0xff ||
					    !in_upper(x, kv->key, kl)) {
						more = false;
						break;
					}
					if (rgw_entry_decode(kv->val, kv->vlen, &e) == 0) {
						if (!(e.flags & RGW_ENTRY_DELETE_MARKER)) {
							objs++;
							bytes += (int64_t)e.size;
						}
						rgw_entry_fini(&e);
					}
				} else if (!sys_key(kv, &k, &kl) || !in_upper(x, k, kl)) {
					continue;
				}
				cairn_op_omap_set(w, kv->key, kv->klen, kv->val, kv->vlen);
				set++;
			}
			if (n) {
				alen = CM_MIN(kvs[n - 1].klen, sizeof(after));
				memcpy(after, kvs[n - 1].key, alen);
			} else {
				more = false;
			}
			cairn_kvs_free(kvs, n);
			rc = set ? run(g, boid, w) : (cairn_op_release(w), 0);
			if (rc)
				return rc;
		}
	}
	if (!(op = cairn_op_create()))
		return -ENOMEM;
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
	cairn_op_cmpxattr(op, SPLIT_TOK, CAIRN_CMP_EQ, tok, sizeof(tok));
	cairn_op_xattr_num(op, RGW_USAGE_OBJS, CAIRN_NUM_SET, objs, NULL, NULL);
	cairn_op_xattr_num(op, RGW_USAGE_BYTES, CAIRN_NUM_SET, bytes, NULL, NULL);
	cairn_op_setxattr(op, SPLIT_DONE, "1", 1);
	return run(g, boid, op);
}

/* Every gateway drops its copy of the bucket's record (and so of its map). */
static void
tell(struct rgw *g, const char *bucket)
{
	struct cairn_notify_result res;
	char payload[1 + 64];
	int n = snprintf(payload, sizeof(payload), "%c%s", RGW_NOTIFY_BUCKET, bucket), rc;

	memset(&res, 0, sizeof(res));
	if (n < 0 || (size_t)n >= sizeof(payload))
		return;
	rc = cairn_notify(g->meta, RGW_NOTIFY_OID, payload, (size_t)n, RGW_NOTIFY_TIMEOUT_MS, &res);
	if (rc && rc != -ENOENT)
		CM_WARN_RC(rc, "split: telling the gateways of bucket %s's new map", bucket);
	cairn_notify_result_free(&res);
}

/*
 * Whether we still hold A's lock and A is still frozen for this split
 * (renewed: it is ours for SPLIT_LOCK_MS from now). Checked right before
 * the map changes, so that a splitter whose lock ran out (a takeover may
 * have undone the split and removed B) never publishes B.
 */
static int
still_ours(struct rgw *g, const char *aoid, const struct geo *x, const char *tox, uint32_t to,
	   uint64_t *at)
{
	cairn_op_t *op = cairn_op_create();
	uint32_t tl = htole32(to);

	if (!op)
		return -ENOMEM;
	*at = cm_now_ms();
	lock_op(g, op);
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
	/* (and the other shard: an undone split's mark may come again, for another B) */
	cairn_op_cmpxattr(op, tox, CAIRN_CMP_EQ, &tl, 4);
	return run(g, aoid, op);
}

/*
 * The bucket's map becomes nm (its spans freed here), compared with the
 * map s was read with (and with its record, if rec); on success every
 * gateway is told. \return 0, -ECANCELED (changed meanwhile), or an errno.
 */
static int
map_swap(struct rgw *g, const struct sbk *s, struct rgw_shardmap *nm, bool rec, uint32_t num,
	 bool retire, const uint8_t *noted)
{
	char key[RGW_RETIRED_KEY_LEN + 1];
	uint8_t v[8];
	struct rgw_str enc;
	cairn_op_t *op;
	char oid[96];
	int rc;

	rgw_str_init(&enc);
	rgw_shardmap_encode(nm, &enc);
	free(nm->v);
	nm->v = NULL;
	if (enc.oom || !(op = cairn_op_create())) {
		rgw_str_fini(&enc);
		return -ENOMEM;
	}
	if (s->rlen)
		cairn_op_cmpxattr(op, RGW_MAP_XATTR, CAIRN_CMP_EQ, s->raw, s->rlen);
	else
		cairn_op_cmpxattr(op, RGW_MAP_XATTR, CAIRN_CMP_ABSENT, NULL, 0);
	if (rec)
		cairn_op_cmpxattr(op, "rgw.bucket", CAIRN_CMP_EQ, s->rec, s->reclen);
	cairn_op_setxattr(op, RGW_MAP_XATTR, enc.p, enc.len);
	/* (with the map change: a merged shard is noted, a split's new one is not any more) */
	rgw_retired_key(num, key);
	retired_val(v);
	if (retire) {
		cairn_op_omap_set(op, key, strlen(key), v, 8);
	} else {
		/* (the note as this attempt wrote it: one the sweep claimed fails the change) */
		if (noted)
			cairn_op_omap_cmp(op, key, strlen(key), CAIRN_CMP_EQ, noted, 8);
		cairn_op_omap_rm(op, key, strlen(key));
	}
	snprintf(oid, sizeof(oid), "bucket.%s", s->name);
	rc = run(g, oid, op);
	rgw_str_fini(&enc);
	if (!rc) {
		s3_bucket_forget(g, s->name);
		tell(g, s->name);
	}
	return rc;
}

/* Step 3: the map gets shard num at key K after span i (whose range is x's whole). */
static int
map_add(struct rgw *g, struct sbk *s, uint32_t anum, uint32_t num, const struct geo *x,
	const uint8_t noted[8])
{
	char aoid[96];

	shard_oid(s, anum, aoid, sizeof(aoid));
	for (int tries = 0; tries < MAP_TRIES; tries++) {
		struct rgw_shardmap nm = { 0 };
		char want[RGW_RANGE_MAX];
		uint64_t at = 0;
		size_t i, wl;
		int rc;

		if (tries) {
			sbk_fini(s);
			if ((rc = sbk_load(g, s->name, s)))
				return rc;
		}
		i = rgw_shardmap_pick(&s->m, x->k, x->klen);
		if (s->m.v[i].num == num && s->m.v[i].lolen == x->klen &&
		    !memcmp(s->m.v[i].lo, x->k, x->klen))
			return 0; /* (done: before a crash, or by a takeover) */
		if (s->m.v[i].num != anum)
			return -ESTALE; /* (the map no longer gives K to A) */
		wl = rgw_shardmap_range_buf(&s->m, i, want);
		if (wl != x->wholelen || memcmp(want, x->whole, wl))
			return -ESTALE;
		if (s->m.n >= RGW_MAP_MAX)
			return -ENOSPC;
		if ((rc = still_ours(g, aoid, x, SPLIT_TO, num, &at)))
			return rc == -ECANCELED ? -ESTALE : rc;
		if (cm_now_ms() - at > SPLIT_LOCK_MS / 3)
			continue; /* (this thread stalled: the lock may be someone's by now) */
		if (!(nm.v = calloc(s->m.n + 1, sizeof(*nm.v))))
			return -ENOMEM;
		nm.n = s->m.n + 1;
		memcpy(nm.v, s->m.v, (i + 1) * sizeof(*nm.v));
		nm.v[i + 1].num = num;
		nm.v[i + 1].lo = x->k;
		nm.v[i + 1].lolen = (uint16_t)x->klen;
		memcpy(nm.v + i + 2, s->m.v + i + 1, (s->m.n - i - 1) * sizeof(*nm.v));
		if (!nm.v[0].lo)
			nm.v[0].lo = (const uint8_t *)""; /* (the map of shard 0 alone) */
		/* (and the record as read: a bucket changed meanwhile is read again) */
		if ((rc = map_swap(g, s, &nm, true, num, false, noted)) == -ECANCELED)
			continue; /* (another shard of the bucket split meanwhile: again) */
		return rc;
	}
	return -EBUSY;
}

/*
 * Run op, which is guarded on the frozen mark and sets oid's mark to
 * (mark, len); a guard that fails because that was done before (a resume
 * after a lost reply) is success.
 */
static int
remark(struct rgw *g, const char *oid, cairn_op_t *op, const char *mark, size_t len)
{
	struct sst st;
	int rc = run(g, oid, op);

	if (rc == -ECANCELED && !shard_read(g, oid, &st) && st.mlen == len &&
	    !memcmp(st.mark, mark, len))
		rc = 0;
	return rc;
}

/* Step 4: A keeps the lower keys only. */
static int
trim_lower(struct rgw *g, const char *aoid, const char *boid, const struct geo *x)
{
	struct sst bs;
	char after[2 + RGW_KEY_MAX + 2 + RGW_UPLOAD_LEN + 64];
	size_t alen = 1;
	bool more = true;
	cairn_op_t *op;
	int rc;

	if ((rc = shard_read(g, boid, &bs)))
		return rc;
	if (!(op = cairn_op_create()))
		return -ENOMEM;
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
	/* (the keys' system entries, a page of them at a time, before the entries go) */
	memcpy(after, "\xff", 1);
	while (more) {
		struct cairn_kv *kvs = NULL;
		size_t n = 0;
		int rval = 0;
		cairn_op_t *l = cairn_op_create();

		if (!l) {
			cairn_op_release(op);
			return -ENOMEM;
		}
		lock_op(g, l);
		cairn_op_omap_list(l, after, alen, "\xff", 1, SPLIT_PAGE, &kvs, &n, &more, &rval);
		if (!(rc = run(g, aoid, l)))
			rc = rval;
		for (size_t i = 0; !rc && i < n; i++) {
			const uint8_t *k;
			size_t kl;

			if (sys_key(&kvs[i], &k, &kl) && in_upper(x, k, kl))
				cairn_op_omap_rm(op, kvs[i].key, kvs[i].klen);
		}
		if (n) {
			alen = CM_MIN(kvs[n - 1].klen, sizeof(after));
			memcpy(after, kvs[n - 1].key, alen);
		} else {
			more = false;
		}
		cairn_kvs_free(kvs, n);
		if (rc) {
			cairn_op_release(op);
			return rc;
		}
	}
	cairn_op_omap_rm_range(op, x->k, x->klen, x->hilen ? (const void *)x->hi : "\xff",
			       x->hilen ? x->hilen : 1);
	cairn_op_xattr_num(op, RGW_USAGE_OBJS, CAIRN_NUM_ADD, -bs.objs, NULL, NULL);
	cairn_op_xattr_num(op, RGW_USAGE_BYTES, CAIRN_NUM_ADD, -bs.bytes, NULL, NULL);
	cairn_op_setxattr(op, RGW_RANGE_XATTR, x->lower, x->lowlen);
	cairn_op_rmxattr(op, SPLIT_TO);
	return remark(g, aoid, op, x->lower, x->lowlen);
}

/* Step 5: B open for writes. */
static int
open_upper(struct rgw *g, const char *boid, const struct geo *x)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return -ENOMEM;
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
	cairn_op_setxattr(op, RGW_RANGE_XATTR, x->upper, x->uplen);
	return remark(g, boid, op, x->upper, x->uplen);
}

/* rgw_split_pause: a window between two steps, wide enough for a test's readers to meet. */
static void
pause_for_tests(struct rgw *g)
{
	if (g->conf.split_pause_ms && !g->gc_stop)
		usleep(g->conf.split_pause_ms * 1000u);
}

/*
 * Carry on the split of span i's shard A frozen as x says, from wherever
 * it is. We hold A's lock. \return 0 (done), or an errno (the frozen mark
 * stays for the next look, or A is as before).
 */
static int
split_on(struct rgw *g, struct sbk *s, size_t i, const struct geo *x, uint32_t to)
{
	char aoid[96], boid[96], want[RGW_RANGE_MAX];
	uint32_t anum = s->m.v[i].num;
	size_t wl = rgw_shardmap_range_buf(&s->m, i, want);
	uint8_t noted[8];
	int rc;

	shard_oid(s, anum, aoid, sizeof(aoid));
	if (wl == x->wholelen && !memcmp(want, x->whole, wl)) {
		/* before the map change: the copy (again), then the map */
		shard_oid(s, to, boid, sizeof(boid));
		if ((rc = retire_note(g, s, to, noted)) || (rc = copy_upper(g, aoid, boid, x))) {
			CM_WARN_RC(rc,
				   "split: %s at a key of %zu bytes: the copy to %s failed, "
				   "the split is undone",
				   aoid, x->klen, boid);
			if (rc != -EBUSY)
				unfreeze(g, s->name, anum, aoid, to, rc == -EEXIST ? NULL : boid,
					 x);
			return rc;
		}
		if ((rc = map_add(g, s, anum, to, x, noted))) {
			if (rc == -ESTALE || rc == -ENOSPC)
				unfreeze(g, s->name, anum, aoid, to, boid, x);
			return rc;
		}
	} else if (!(wl == x->lowlen && !memcmp(want, x->lower, wl) && i + 1 < s->m.n &&
		     s->m.v[i + 1].lolen == x->klen && !memcmp(s->m.v[i + 1].lo, x->k, x->klen))) {
		CM_ERR("split: %s is frozen for a split the bucket's map does not know: left "
		       "frozen",
		       aoid);
		lock_drop(g, aoid);
		return -EIO;
	} else {
		to = s->m.v[i + 1].num;
	}
	shard_oid(s, to, boid, sizeof(boid));
	pause_for_tests(g);
	if ((rc = trim_lower(g, aoid, boid, x)))
		return rc;
	pause_for_tests(g);
	if ((rc = open_upper(g, boid, x)))
		return rc;
	lock_drop(g, aoid);
	return 0;
}

/* Step 1 for span i's shard A (state as), then the rest. */
static int
split_start(struct rgw *g, struct sbk *s, size_t i, const struct sst *as)
{
	char aoid[96], want[RGW_RANGE_MAX], key[RGW_KEY_MAX + 4];
	size_t wl = rgw_shardmap_range_buf(&s->m, i, want), kl = 0;
	const uint8_t *hi = i + 1 < s->m.n ? s->m.v[i + 1].lo : NULL;
	size_t hilen = i + 1 < s->m.n ? s->m.v[i + 1].lolen : 0;
	int64_t seen = 0, half = as->objs / 2;
	char after[2 + RGW_KEY_MAX + 2 + 64];
	size_t alen = 0;
	bool more = true, found = false;
	struct rgw_str mark;
	struct geo x;
	uint32_t to = 0;
	cairn_op_t *op;
	int rc = 0;

	shard_oid(s, s->m.v[i].num, aoid, sizeof(aoid));
	/* K: the key of the median entry, or the next key after it if that is lo */
	while (more && !found) {
		struct cairn_kv *kvs = NULL;
		size_t n = 0;
		int rval = 0;

		if (!(op = cairn_op_create()))
			return -ENOMEM;
		cairn_op_omap_list(op, alen ? after : NULL, alen, NULL, 0, SPLIT_PAGE, &kvs, &n,
				   &more, &rval);
		if (!(rc = run(g, aoid, op)))
			rc = rval;
		for (size_t j = 0; !rc && j < n && !found; j++) {
			size_t l = skey_len(&kvs[j]);

			if (((const uint8_t *)kvs[j].key)[0] == 0xff ||
			    (hilen && keycmp(kvs[j].key, l, hi, hilen) >= 0)) {
				more = false;
				break;
			}
			if (++seen >= half && l <= RGW_MAP_KEY_MAX &&
			    keycmp(kvs[j].key, l, s->m.v[i].lo, s->m.v[i].lolen) > 0) {
				memcpy(key, kvs[j].key, l);
				kl = l;
				found = true;
			}
		}
		if (n) {
			alen = CM_MIN(kvs[n - 1].klen, sizeof(after));
			memcpy(after, kvs[n - 1].key, alen);
		} else {
			more = false;
		}
		cairn_kvs_free(kvs, n);
		if (rc)
			return rc;
	}
	if (!found)
		return 0; /* (one key and its versions: nothing to split at) */
	/* the new shard's number: random, not in the map (concurrent splits pick apart) */
	for (int t = 0; t < 16 && !to; t++) {
		uint32_t r;

		cm_random_bytes(&r, sizeof(r));
		r = (r & 0x7fffffff) | 1;
		for (size_t j = 0; j < s->m.n && r; j++)
			if (s->m.v[j].num == r)
				r = 0;
		to = r;
	}
	if (!to)
		return -EAGAIN;
	rgw_str_init(&mark);
	rgw_range_freeze(RGW_FREEZE_SPLIT, want, wl, key, kl, &mark);
	if (mark.oom || geo_of(mark.p, mark.len, RGW_FREEZE_SPLIT, &x) ||
	    !(op = cairn_op_create())) {
		rgw_str_fini(&mark);
		return -ENOMEM;
	}
	{
		uint32_t tl = htole32(to);

		cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, want, wl);
		lock_op(g, op);
		cairn_op_setxattr(op, RGW_RANGE_XATTR, mark.p, mark.len);
		cairn_op_setxattr(op, SPLIT_TO, &tl, 4);
	}
	rgw_str_fini(&mark);
	if ((rc = run(g, aoid, op)))
		return rc == -ECANCELED || rc == -EBUSY ? 0 : rc; /* (changed meanwhile) */
	CM_NOTICE("split: bucket %s: shard %s (%" PRId64 " objects) splits at a key of %zu "
		  "bytes into shard %" PRIu32,
		  s->name, aoid, as->objs, kl, to);
	return split_on(g, s, i, &x, to);
}

/* ---- merges: span i's shard A (lo..K) takes in span i+1's B (K..hi) ---- */

/* The merged range lo "\0" hi of spans i and i+1 into out. \return its length. */
static size_t
merged_range(const struct sbk *s, size_t i, char *out)
{
	const struct rgw_shard_span *a = &s->m.v[i];
	const struct rgw_shard_span *c = i + 2 < s->m.n ? &s->m.v[i + 2] : NULL;
	size_t n = a->lolen;

	if (n)
		memcpy(out, a->lo, n);
	out[n++] = '\0';
	if (c && c->lolen) {
		memcpy(out + n, c->lo, c->lolen);
		n += c->lolen;
	}
	return n;
}

/* Back out a merge that froze A but could not freeze B (nothing was copied yet). */
static void
merge_undo(struct rgw *g, const char *aoid, const struct geo *x)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return;
	lock_op(g, op);
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
	cairn_op_setxattr(op, RGW_RANGE_XATTR, x->lower, x->lowlen);
	cairn_op_rmxattr(op, MERGE_FROM);
	cairn_op_unlock(op, SPLIT_LOCK, g->split_cookie);
	run(g, aoid, op);
}

/* Step 2 of a merge: every entry of B (frozen) copied into A, then B's counters noted on A. */
static int
merge_copy(struct rgw *g, const char *aoid, const char *boid, const struct geo *x)
{
	char after[2 + RGW_KEY_MAX + 2 + RGW_UPLOAD_LEN + 64];
	size_t alen = 0;
	bool more = true;
	struct sst bs;
	uint8_t add[16];
	cairn_op_t *op;
	int rc;

	if ((rc = shard_read(g, boid, &bs)))
		return rc;
	if (bs.mlen != x->flen || memcmp(bs.mark, x->frozen, x->flen))
		return -ESTALE;
	while (more) {
		struct cairn_kv *kvs = NULL;
		size_t n = 0;
		int rval = 0;

		if (!(op = cairn_op_create()))
			return -ENOMEM;
		cairn_op_omap_list(op, alen ? after : NULL, alen, NULL, 0, SPLIT_PAGE, &kvs, &n,
				   &more, &rval);
		if (!(rc = run(g, boid, op)))
			rc = rval;
		if (rc || !(op = cairn_op_create())) {
			cairn_kvs_free(kvs, n);
			return rc ? rc : -ENOMEM;
		}
		/* (the lock renewed and A's mark checked with each page: a merger whose lock
		 * ran out writes nothing into A, which may be open by now) */
		lock_op(g, op);
		cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
		for (size_t j = 0; j < n; j++)
			cairn_op_omap_set(op, kvs[j].key, kvs[j].klen, kvs[j].val, kvs[j].vlen);
		if (n) {
			alen = CM_MIN(kvs[n - 1].klen, sizeof(after));
			memcpy(after, kvs[n - 1].key, alen);
		} else {
			more = false;
		}
		cairn_kvs_free(kvs, n);
		if ((rc = run(g, aoid, op)))
			return rc;
	}
	for (int j = 0; j < 8; j++) {
		add[j] = (uint8_t)((uint64_t)bs.objs >> (8 * j));
		add[8 + j] = (uint8_t)((uint64_t)bs.bytes >> (8 * j));
	}
	if (!(op = cairn_op_create()))
		return -ENOMEM;
	lock_op(g, op);
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
	cairn_op_setxattr(op, MERGE_ADD, add, sizeof(add));
	return run(g, aoid, op);
}

/* Step 3: span i+1 (B, bnum) leaves the map; span i (A) gets the merged range. */
static int
map_del(struct rgw *g, struct sbk *s, uint32_t anum, uint32_t bnum, const struct geo *x)
{
	char aoid[96];

	shard_oid(s, anum, aoid, sizeof(aoid));
	for (int tries = 0; tries < MAP_TRIES; tries++) {
		struct rgw_shardmap nm = { 0 };
		char want[RGW_RANGE_MAX];
		uint64_t at = 0;
		size_t i, wl;
		int rc;

		if (tries) {
			sbk_fini(s);
			if ((rc = sbk_load(g, s->name, s)))
				return rc;
		}
		i = rgw_shardmap_pick(&s->m, x->lo, x->lolen);
		if (s->m.v[i].num != anum)
			return -ESTALE;
		wl = rgw_shardmap_range_buf(&s->m, i, want);
		if (wl == x->wholelen && !memcmp(want, x->whole, wl))
			return 0; /* (done: before a crash, or by a takeover) */
		if (wl != x->lowlen || memcmp(want, x->lower, wl) || i + 1 >= s->m.n ||
		    s->m.v[i + 1].num != bnum)
			return -ESTALE;
		if ((rc = still_ours(g, aoid, x, MERGE_FROM, bnum, &at)))
			return rc == -ECANCELED ? -ESTALE : rc;
		if (cm_now_ms() - at > SPLIT_LOCK_MS / 3)
			continue; /* (this thread stalled: the lock may be someone's by now) */
		if (!(nm.v = calloc(s->m.n - 1, sizeof(*nm.v))))
			return -ENOMEM;
		nm.n = s->m.n - 1;
		memcpy(nm.v, s->m.v, (i + 1) * sizeof(*nm.v));
		memcpy(nm.v + i + 1, s->m.v + i + 2, (s->m.n - i - 2) * sizeof(*nm.v));
		if ((rc = map_swap(g, s, &nm, false, bnum, true, NULL)) == -ECANCELED)
			continue; /* (another change of the map meanwhile: again) */
		return rc;
	}
	return -EBUSY;
}

/* Steps 4 and 5: B emptied and marked merged, then A opened with B's counters added. */
static int
merge_finish(struct rgw *g, const char *aoid, const char *boid, const struct geo *x)
{
	struct sst as;
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!op)
		return -ENOMEM;
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
	cairn_op_omap_clear(op);
	cairn_op_xattr_num(op, RGW_USAGE_OBJS, CAIRN_NUM_SET, 0, NULL, NULL);
	cairn_op_xattr_num(op, RGW_USAGE_BYTES, CAIRN_NUM_SET, 0, NULL, NULL);
	cairn_op_setxattr(op, RGW_RANGE_XATTR, RANGE_MERGED, sizeof(RANGE_MERGED) - 1);
	/* (B gone: the sweep removed it, its grace after the map change) */
	if ((rc = remark(g, boid, op, RANGE_MERGED, sizeof(RANGE_MERGED) - 1)) && rc != -ENOENT)
		return rc;
	pause_for_tests(g);
	if ((rc = shard_read(g, aoid, &as)))
		return rc;
	if (as.mlen == x->wholelen && !memcmp(as.mark, x->whole, x->wholelen))
		return 0; /* (opened before a lost reply) */
	if (as.mlen != x->flen || memcmp(as.mark, x->frozen, x->flen) || !as.has_add)
		return -EIO;
	if (!(op = cairn_op_create()))
		return -ENOMEM;
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->frozen, x->flen);
	cairn_op_xattr_num(op, RGW_USAGE_OBJS, CAIRN_NUM_ADD, as.add_objs, NULL, NULL);
	cairn_op_xattr_num(op, RGW_USAGE_BYTES, CAIRN_NUM_ADD, as.add_bytes, NULL, NULL);
	cairn_op_setxattr(op, RGW_RANGE_XATTR, x->whole, x->wholelen);
	cairn_op_rmxattr(op, MERGE_ADD);
	cairn_op_rmxattr(op, MERGE_FROM);
	if ((rc = remark(g, aoid, op, x->whole, x->wholelen)))
		return rc;
	lock_drop(g, aoid);
	return 0;
}

/*
 * Carry on the merge into span i's shard A of shard bnum, frozen as x
 * says, from wherever it is. We hold A's lock.
 */
static int
merge_on(struct rgw *g, struct sbk *s, size_t i, const struct geo *x, uint32_t bnum)
{
	char aoid[96], boid[96], want[RGW_RANGE_MAX];
	uint32_t anum = s->m.v[i].num;
	size_t wl = rgw_shardmap_range_buf(&s->m, i, want);
	cairn_op_t *op;
	int rc;

	shard_oid(s, anum, aoid, sizeof(aoid));
	shard_oid(s, bnum, boid, sizeof(boid));
	if (wl == x->lowlen && !memcmp(want, x->lower, wl) && i + 1 < s->m.n &&
	    s->m.v[i + 1].num == bnum) {
		/* before the map change: B frozen (if a crash came first), the copy, the map */
		if (!(op = cairn_op_create()))
			return -ENOMEM;
		cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, x->upper, x->uplen);
		cairn_op_setxattr(op, RGW_RANGE_XATTR, x->frozen, x->flen);
		if ((rc = remark(g, boid, op, x->frozen, x->flen))) {
			if (rc == -ECANCELED || rc == -ENOENT) /* (B is splitting, or gone) */
				merge_undo(g, aoid, x);
			return rc;
		}
		pause_for_tests(g);
		if ((rc = merge_copy(g, aoid, boid, x)) || (rc = map_del(g, s, anum, bnum, x)))
			return rc; /* (left frozen: the next look resumes it) */
		pause_for_tests(g);
	} else if (!(wl == x->wholelen && !memcmp(want, x->whole, wl))) {
		CM_ERR("split: %s is frozen for a merge the bucket's map does not know: left "
		       "frozen",
		       aoid);
		lock_drop(g, aoid);
		return -EIO;
	}
	return merge_finish(g, aoid, boid, x);
}

/* A merge of span i's shard A (state as) with span i+1's (state bs), from step 1. */
static int
merge_start(struct rgw *g, struct sbk *s, size_t i, const struct sst *as, const struct sst *bs)
{
	char aoid[96], want[RGW_RANGE_MAX], whole[RGW_RANGE_MAX];
	size_t wl = rgw_shardmap_range_buf(&s->m, i, want), whl = merged_range(s, i, whole);
	const struct rgw_shard_span *b = &s->m.v[i + 1];
	uint32_t bl = htole32(b->num);
	struct rgw_str mark;
	struct geo x;
	cairn_op_t *op;
	int rc;

	shard_oid(s, s->m.v[i].num, aoid, sizeof(aoid));
	rgw_str_init(&mark);
	rgw_range_freeze(RGW_FREEZE_MERGE, whole, whl, b->lo, b->lolen, &mark);
	if (mark.oom || geo_of(mark.p, mark.len, RGW_FREEZE_MERGE, &x) ||
	    !(op = cairn_op_create())) {
		rgw_str_fini(&mark);
		return -ENOMEM;
	}
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, want, wl);
	lock_op(g, op);
	cairn_op_setxattr(op, RGW_RANGE_XATTR, mark.p, mark.len);
	cairn_op_setxattr(op, MERGE_FROM, &bl, 4);
	rgw_str_fini(&mark);
	if ((rc = run(g, aoid, op)))
		return rc == -ECANCELED || rc == -EBUSY ? 0 : rc; /* (changed meanwhile) */
	CM_NOTICE("split: bucket %s: shard %s (%" PRId64 " objects) takes in shard %" PRIu32
		  " (%" PRId64 " objects): a merge",
		  s->name, aoid, as->objs, b->num, bs->objs);
	return merge_on(g, s, i, &x, b->num);
}

/* Span i's shard, frozen for a merge (x): resumed by whoever takes A's lock. */
static int
merge_look(struct rgw *g, struct sbk *s, size_t i, const struct geo *x)
{
	char want[RGW_RANGE_MAX], aoid[96];
	size_t wl = rgw_shardmap_range_buf(&s->m, i, want);
	size_t ia = wl == x->uplen && !memcmp(want, x->upper, wl) && i > 0 ? i - 1 : i;
	struct sst as;
	int rc;

	shard_oid(s, s->m.v[ia].num, aoid, sizeof(aoid));
	if ((rc = lock_take(g, aoid)))
		return rc == -EBUSY ? 0 : rc; /* (its merger is at work) */
	if ((rc = shard_read(g, aoid, &as)) || as.mlen != x->flen ||
	    memcmp(as.mark, x->frozen, x->flen) || !as.has_from) {
		lock_drop(g, aoid);
		return rc; /* (B frozen alone: A was opened or undone since this read) */
	}
	CM_NOTICE("split: bucket %s: resuming the merge into %s that was left frozen", s->name,
		  aoid);
	rc = merge_on(g, s, ia, x, as.from);
	return rc ? rc : 1;
}

/*
 * Look at span i's shard: resume a split left frozen, or start one when
 * it holds more than the maximum. \return 1 if the map changed, 0, or an
 * errno.
 */
static int
look(struct rgw *g, struct sbk *s, size_t i)
{
	char oid[96], want[RGW_RANGE_MAX];
	size_t wl = rgw_shardmap_range_buf(&s->m, i, want);
	struct sst st;
	struct geo x;
	size_t ia;
	int rc;

	shard_oid(s, s->m.v[i].num, oid, sizeof(oid));
	if ((rc = shard_read(g, oid, &st)))
		return rc == -ENOENT ? 0 : rc;
	if (st.mlen == wl && !memcmp(st.mark, want, wl)) {
		if (!g->conf.index_shard_max)
			return 0;
		if (st.objs <= (int64_t)g->conf.index_shard_max / 4 && i + 1 < s->m.n) {
			/* (small: merged with the next shard if both hold a quarter at most,
			 * far from splitting again) */
			char bw[RGW_RANGE_MAX], boid[96];
			size_t bwl = rgw_shardmap_range_buf(&s->m, i + 1, bw);
			struct sst bs;

			shard_oid(s, s->m.v[i + 1].num, boid, sizeof(boid));
			if ((rc = shard_read(g, boid, &bs)))
				return rc == -ENOENT ? 0 : rc;
			if (bs.mlen != bwl || memcmp(bs.mark, bw, bwl) ||
			    st.objs + bs.objs > (int64_t)g->conf.index_shard_max / 4)
				return 0;
			rc = merge_start(g, s, i, &st, &bs);
			return rc ? rc : 1;
		}
		if (st.objs <= (int64_t)g->conf.index_shard_max)
			return 0;
		rc = split_start(g, s, i, &st);
		return rc ? rc : 1;
	}
	if (!geo_of(st.mark, st.mlen, RGW_FREEZE_MERGE, &x))
		return merge_look(g, s, i, &x);
	if (geo_of(st.mark, st.mlen, RGW_FREEZE_SPLIT, &x))
		return 0; /* (closed, merged, or a map we read before a change) */
	/* A frozen split: this is A (whole or lower range in the map) or B (upper) */
	if (wl == x.uplen && !memcmp(want, x.upper, wl) && i > 0)
		ia = i - 1;
	else
		ia = i;
	shard_oid(s, s->m.v[ia].num, oid, sizeof(oid));
	if ((rc = lock_take(g, oid)))
		return rc == -EBUSY ? 0 : rc; /* (its splitter is at work) */
	if (ia == i && !st.has_to && wl == x.wholelen) {
		unfreeze(g, s->name, s->m.v[ia].num, oid, 0, NULL, &x);
		return 0;
	}
	CM_NOTICE("split: bucket %s: resuming the split of %s that was left frozen", s->name, oid);
	rc = split_on(g, s, ia, &x, st.to);
	return rc ? rc : 1;
}

int
rgw__split_bucket(struct rgw *g, const char *bucket, uint32_t only, bool one)
{
	struct sbk s;
	int rc, changed = 0;

	if ((rc = sbk_load(g, bucket, &s)))
		return rc == -ENOENT ? 0 : rc;
	for (size_t i = 0; i < s.m.n && !g->gc_stop; i++) {
		if (one && s.m.v[i].num != only)
			continue;
		rc = look(g, &s, i);
		if (rc < 0)
			CM_WARN_RC(rc, "split: bucket %s, shard %" PRIu32, bucket, s.m.v[i].num);
		if (rc == 1) {
			changed = 1;
			/* (the map changed: read again; the next look is at the upper half) */
			sbk_fini(&s);
			if (sbk_load(g, bucket, &s))
				return 1;
		}
		if (one)
			break;
	}
	if (!one && !g->gc_stop)
		retire_sweep(g, &s);
	sbk_fini(&s);
	return changed;
}

void
rgw__split_note(struct rgw *g, const char *bucket, uint32_t num)
{
	struct rgw_split_note *n;
	size_t len = 0;

	if (!g->conf.index_shard_max || !g->gc_started)
		return;
	pthread_mutex_lock(&g->gc_mu);
	for (n = g->split_notes; n; n = n->next, len++)
		if (n->num == num && !strcmp(n->bucket, bucket))
			break;
	if (!n && len < SPLIT_NOTES && strlen(bucket) < sizeof(n->bucket) &&
	    (n = calloc(1, sizeof(*n)))) {
		snprintf(n->bucket, sizeof(n->bucket), "%s", bucket);
		n->num = num;
		n->next = g->split_notes;
		if (!g->split_notes)
			pthread_cond_signal(&g->gc_cv);
		g->split_notes = n;
	}
	pthread_mutex_unlock(&g->gc_mu);
}

void
rgw__split_check(struct rgw *g)
{
	struct rgw_split_note *n;

	pthread_mutex_lock(&g->gc_mu);
	n = g->split_notes;
	g->split_notes = NULL;
	pthread_mutex_unlock(&g->gc_mu);
	while (n) {
		struct rgw_split_note *next = n->next;

		if (!g->gc_stop)
			rgw__split_bucket(g, n->bucket, n->num, true);
		free(n);
		n = next;
	}
}

void
rgw__split_fini(struct rgw *g)
{
	while (g->split_notes) {
		struct rgw_split_note *n = g->split_notes;

		g->split_notes = n->next;
		free(n);
	}
}

int
rgw__bucket_shards(struct rgw *g, const char *bucket, uint32_t **nums, size_t *n)
{
	struct sbk s;
	int rc;

	*nums = NULL;
	*n = 0;
	if ((rc = sbk_load(g, bucket, &s)))
		return rc;
	if (!(*nums = calloc(s.m.n, sizeof(**nums)))) {
		sbk_fini(&s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s.m.n; i++)
		(*nums)[i] = s.m.v[i].num;
	*n = s.m.n;
	sbk_fini(&s);
	return 0;
}
