/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A bucket's index shard map and the shards' range marks (docs/design/rgw.md
 * §3.1.1). The map is the xattr RGW_MAP_XATTR of the bucket record object:
 * a version byte, a u32 count (LE), then per shard, in key order, its u32
 * number, a u16 length and its lowest key (the first shard's is empty).
 * No map: shard 0 holds every key (every bucket before the first split).
 *
 * Each shard object carries RGW_RANGE_XATTR, the range the map gives it:
 * lo "\0" hi (hi empty: to the end). While a split or merge moves its keys
 * it is frozen: "\xff", a tag ('s' split, 'm' merge), the range, "\0" and
 * the key the move is at; readers still read it, writers wait. A bucket
 * being deleted has RGW_RANGE_CLOSED on every shard.
 */
#ifndef RGW_SHARDMAP_H
#define RGW_SHARDMAP_H

#include "rgw/str.h"

#define RGW_MAP_XATTR   "rgw.map"
#define RGW_RANGE_XATTR "rgw.range"
/*
 * The bucket object's omap keys naming index shards that may be left out
 * of its map (a split's new shard until the map has it, a shard merged
 * away), each "<prefix><8 hex: the number>" with the time it was noted (ns,
 * int64 little-endian): the sweep removes such a shard's object a grace
 * after, and DeleteBucket removes them all (rgw.md §3.1.1).
 */
#define RGW_RETIRED_PREFIX "shard.retired."
/* A merge's A: B's counters (objects, bytes: int64 LE each), until the merge ends. */
#define RGW_MERGE_ADD_XATTR "rgw.merge.add"
#define RGW_RETIRED_KEY_LEN (sizeof(RGW_RETIRED_PREFIX) - 1 + 8)
#define RGW_RANGE_CLOSED \
	"\x01"           \
	"closed"
#define RGW_MAP_V       1
#define RGW_MAP_MAX     4096 /* shards in one map */
#define RGW_MAP_KEY_MAX 1024 /* bytes of an S3 key (S3's limit) */
/* The longest plain range mark: two keys and the NUL between. */
#define RGW_RANGE_MAX (2 * RGW_MAP_KEY_MAX + 1)
/* The longest range mark: frozen, two keys in its range and one of the move. */
#define RGW_RANGE_MARK_MAX (3 * RGW_MAP_KEY_MAX + 4)
#define RGW_FREEZE_SPLIT   's'
#define RGW_FREEZE_MERGE   'm'

struct rgw_shard_span {
	uint32_t num;      /* the shard object is idx.<bucket id>.<num> */
	const uint8_t *lo; /* its lowest key (into the decoded bytes) */
	uint16_t lolen;
};

struct rgw_shardmap {
	uint32_t n; /* >= 1 */
	struct rgw_shard_span *v;
	struct rgw_shard_span one; /* (the map of a bucket without one: shard 0, everything) */
};

/*
 * Decode p[0..len) (len 0: no map, shard 0 alone) into m, which points
 * into p (keep p while m is used). The first shard's key is empty, the
 * keys strictly ascend, the numbers are distinct, nothing trails.
 * \return 0, -EBADMSG, -ENOMEM. Free with rgw_shardmap_fini.
 */
int rgw_shardmap_decode(const void *p, size_t len, struct rgw_shardmap *m);
void rgw_shardmap_fini(struct rgw_shardmap *m);
/* m's bytes appended to out (a map of shard 0 alone encodes too). */
void rgw_shardmap_encode(const struct rgw_shardmap *m, struct rgw_str *out);

/* The span holding S3 key (key, klen): the last whose lowest key is <= it. */
size_t rgw_shardmap_pick(const struct rgw_shardmap *m, const void *key, size_t klen);
/* Span i's range mark (lo "\0" hi) into out (RGW_RANGE_MAX bytes). \return its length. */
size_t rgw_shardmap_range_buf(const struct rgw_shardmap *m, size_t i, char *out);
/* The same, appended to out. */
void rgw_shardmap_range(const struct rgw_shardmap *m, size_t i, struct rgw_str *out);
/* Index shard num's object of the bucket whose id is bucket_id: "idx.<id>.<num>". */
void rgw_shard_oid(const char *bucket_id, uint32_t num, char *oid, size_t len);
/* The retired note's key for shard num (RGW_RETIRED_PREFIX + 8 hex). */
void rgw_retired_key(uint32_t num, char out[RGW_RETIRED_KEY_LEN + 1]);
/* The shard number a retired note's key names. \return 0, or -EINVAL (not such a key). */
int rgw_retired_num(const void *key, size_t klen, uint32_t *num);
/* The largest shard number in m plus one (a new shard's number). */
uint32_t rgw_shardmap_next_num(const struct rgw_shardmap *m);

enum rgw_range_state {
	RGW_RANGE_OK,        /* the shard holds what the map says */
	RGW_RANGE_FROZEN,    /* it does, but a split or merge is moving keys: writers wait */
	RGW_RANGE_MOVED,     /* it holds another range now: the map read was stale */
	RGW_RANGE_CLOSED_ST, /* the bucket is being deleted */
};

/*
 * What a shard's range mark got (glen bytes; absent: glen 0 and a NULL
 * got) says against the range want (from the map) that a writer or reader
 * expected.
 */
enum rgw_range_state rgw_range_state(const void *want, size_t wlen, const void *got, size_t glen);
/* The frozen form of range mark (range, rlen) for a move at key (key, klen). */
void rgw_range_freeze(char tag, const void *range, size_t rlen, const void *key, size_t klen,
		      struct rgw_str *out);
/*
 * A frozen mark's parts: its tag, its range and the key of the move.
 * \return 0, or -EINVAL (not a frozen mark).
 */
int rgw_range_frozen_parse(const void *mark, size_t len, char *tag, const uint8_t **range,
			   size_t *rlen, const uint8_t **key, size_t *klen);

#endif
