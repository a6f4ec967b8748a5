/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Object -> PG -> OSDs, as Ceph computes them for a pool:
 *
 *   ps    = rjenkins string hash of the object name ("ns\037name" with a namespace)
 *   pg    = stable_mod(ps, pg_num)                  the PG's seed, shown "pool.seed-in-hex"
 *   x     = hash32_2(stable_mod(pg, pgp_num), pool)  (hashpspool pools)
 *   raw   = crush_do_rule(rule, x, size, in-weights)
 *   raw  -= devices that do not exist (EC: a hole)
 *   raw   = apply pg_upmap_items (from -> to, unless `to` is out or already there)
 *   up    = raw without down devices (EC: a hole); primary = first in up
 *
 * All pure computation over const inputs; thread-safe.
 */
#ifndef CRUSH_PLACEMENT_H
#define CRUSH_PLACEMENT_H

#include "crush/crush.h"

enum crush_pool_type { CRUSH_POOL_REPLICATED = 1, CRUSH_POOL_ERASURE = 3 };

struct crush_pool {
	int64_t id;
	int type;      /* enum crush_pool_type */
	unsigned size; /* replicas, or k + m */
	uint32_t pg_num, pgp_num;
	int rule;
	bool hashpspool; /* Ceph's default since Firefly */
};

/* Per-OSD state, as the OSDMap holds it. */
struct crush_osd_state {
	bool exists;
	bool up;
	uint32_t in_weight; /* 16.16: 0 out, 0x10000 fully in (reweight) */
};

struct crush_upmap_item {
	int64_t pool;
	uint32_t seed;
	int32_t from, to;
};

/* Bob Jenkins' lookup2 over bytes, as ceph_str_hash_rjenkins. */
uint32_t crush_str_hash(const void *data, size_t len);

/* Ceph's stable modulo: x mod b that moves few inputs when b grows. */
uint32_t crush_stable_mod(uint32_t x, uint32_t b, uint32_t bmask);

/* The mask for pg_num: (1 << bits(pg_num - 1)) - 1. */
uint32_t crush_pg_mask(uint32_t pg_num);

/*
 * The PGs at pg_num_now that hold the objects PG pg held at pg_num_then
 * (and maybe others): after a split its children, after a merge the one it
 * went into. It rests on stable_mod(stable_mod(ps, a), b) == stable_mod(ps,
 * b) for a >= b. Fills out with at most max seeds, ascending; \return how
 * many there are (0: pg is not below pg_num_then, or a count is 0).
 */
size_t crush_pg_cover(uint32_t pg_num_then, uint32_t pg, uint32_t pg_num_now, uint32_t *out,
		      size_t max);

/*
 * The PG seed of an object (nspace may be NULL or ""), in *pg. \return 0, or
 * -ENOMEM (a long namespace + name needed a buffer; *pg is not set: no PG is
 * ever guessed).
 */
int crush_object_to_pg(const struct crush_pool *p, const char *nspace, const char *name,
		       uint32_t *pg);

/*
 * The two halves of crush_object_to_pg: the object's placement hash (the
 * same in every pool, whatever its pg_num; \return 0 or -ENOMEM as above),
 * and the PG seed of a hash in pool p. For n a power of two and a pg_num of
 * at least n, hash % n == seed % n: libcairn's io threads rely on it.
 */
int crush_object_hash(const char *nspace, const char *name, uint32_t *ps);
uint32_t crush_hash_to_pg(const struct crush_pool *p, uint32_t ps);

/* The CRUSH in-weight vector for osds (0 for those that do not exist); once per map. */
void crush_osd_weights(const struct crush_osd_state *osds, int max_osd, uint32_t *weights);

/*
 * The up set of PG (pool, seed). up must hold pool->size entries (at most
 * 64); returns the count (replicated: compacted; erasure: pool->size with
 * CRUSH_ITEM_NONE holes) and the primary in *primary (-1 if none). osds and
 * weights (from crush_osd_weights) have max_osd entries. work is
 * crush_work_size(m, size) bytes.
 */
int crush_pg_to_up(const struct crush_map *m, const struct crush_pool *p, uint32_t seed,
		   const struct crush_osd_state *osds, const uint32_t *weights, int max_osd,
		   const struct crush_upmap_item *upmaps, size_t nupmaps, int32_t *up, int *primary,
		   void *work);

/*
 * The raw set of PG (pool, seed): what crush_pg_to_up returns before down
 * devices go. pin (npin == pool->size entries, or NULL) then replaces it
 * position by position: pin[i] an OSD that exists and is in, or -1 for a
 * hole; a pinned OSD that is gone or out gives way to position i's CRUSH
 * answer unless the pin holds that OSD elsewhere (then a hole). raw holds
 * pool->size entries. \return the count.
 */
int crush_pg_to_raw(const struct crush_map *m, const struct crush_pool *p, uint32_t seed,
		    const struct crush_osd_state *osds, const uint32_t *weights, int max_osd,
		    const struct crush_upmap_item *upmaps, size_t nupmaps, const int32_t *pin,
		    int npin, int32_t *raw, void *work);

/* up and *primary from a raw set (down devices: dropped, or holes for EC). \return the count. */
int crush_raw_to_up(const struct crush_pool *p, const struct crush_osd_state *osds, int max_osd,
		    const int32_t *raw, int n, int32_t *up, int *primary);

#endif
