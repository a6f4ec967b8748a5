/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the monitors do to the cluster map, as pure functions on an unpacked
 * OsdMap (the mon_map_update callbacks call these): a new cluster's first
 * map, OSD boot/down/out/in/reweight/rm, pools, flags, and the placement
 * view (CRUSH map + OSD states) that health checks and clients compute PGs
 * with. Errors come back as a negative errno plus a human sentence in err.
 *
 * Threading: pure; a map is edited by one thread at a time.
 */
#ifndef MON_OSDMAP_H
#define MON_OSDMAP_H

#include "crush/placement.h"
#include "cm/stdinc.h"

#include <cairn/osdmap.pb-c.h>

/* Map flags (OsdMap.flags bits). */
enum mon_flag {
	MON_FLAG_NOOUT = 1u << 0,       /* down OSDs are not marked out */
	MON_FLAG_NOREBALANCE = 1u << 1, /* no data movement for balance */
	MON_FLAG_NOBACKFILL = 1u << 2,
	MON_FLAG_NORECOVER = 1u << 3,
	/* 1u << 4: unused (was noscrub; no scrub exists yet to stop) */
	MON_FLAG_PAUSE = 1u << 5,  /* clients' reads and writes wait */
	MON_FLAG_FULL = 1u << 6,   /* writes refused cluster-wide */
	MON_FLAG_NOUP = 1u << 7,   /* booting OSDs are not marked up */
	MON_FLAG_NODOWN = 1u << 8, /* failures do not mark OSDs down */
	MON_FLAG_NOIN = 1u << 9,   /* new OSDs start out */
};

/* \return the bit, or 0 for an unknown name. */
uint64_t mon_flag_parse(const char *name);
/* "noout,pause" ("" for none) into buf. */
const char *mon_flags_str(uint64_t flags, char *buf, size_t len);

#define MON_ERRLEN     256
#define MON_MAX_OSD_ID (1 << 20)
#define MON_ENTITY_MAX 128 /* a blocklisted entity's name */

/*
 * Is entity on m's blocklist? (Sorted by entity: a binary search.) Expiry
 * is the leader's: OSDs and clients never compare times.
 */
bool mon_blocklisted(const Cairn__Map__OsdMap *m, const char *entity);

/*
 * Blocklist edits, as `osd blocklist add|rm` make them: add (or renew)
 * entity until until_ns (wall clock, 0: never) at m->epoch + 1, or remove
 * it. \return 0 (changed), 1 (no change: rm of an absent entity),
 * -EINVAL (a bad name: err), -ENOMEM.
 */
int mon_blocklist_add(Cairn__Map__OsdMap *m, const char *entity, uint64_t until_ns, char *err);
int mon_blocklist_rm(Cairn__Map__OsdMap *m, const char *entity);

/* Drop the entries whose until_ns has passed at wall_ns. \return how many. */
unsigned mon_blocklist_expire(Cairn__Map__OsdMap *m, uint64_t wall_ns);

/* The map of a new cluster: epoch 0 (mon_map_create stores it as 1), a CRUSH map with the
 * standard types, root "default" and rule "replicated_rule" (hosts). */
int mon_map_initial(const char *fsid, Cairn__Map__OsdMap **mp);

Cairn__Map__Osd *mon_osd_find(const Cairn__Map__OsdMap *m, int32_t id);
Cairn__Map__Pool *mon_pool_find(const Cairn__Map__OsdMap *m, const char *name);
Cairn__Map__Pool *mon_pool_find_id(const Cairn__Map__OsdMap *m, int64_t id);

struct mon_osd_boot {
	int32_t id; /* < 0: first boot */
	const char *uuid, *addr, *host, *device_class;
	uint32_t weight;          /* 16.16; 0: keep (1.0 for a new OSD) */
	char *const *shard_addrs; /* its PG shards' addresses ([0] == addr), or none */
	size_t nshard_addrs;
};

#define MON_OSD_SHARDS_MAX 32

/*
 * The address serving PG seed on OSD o: o's shard seed % n when it runs
 * n > 1 PG shards, else its address. *shard: that shard's index (or 0).
 */
const char *mon_osd_pg_addr(const Cairn__Map__Osd *o, uint32_t seed, unsigned *shard);

/*
 * Register/mark up a booting OSD; a new uuid gets the lowest free id. The
 * OSD enters CRUSH under host bucket `host` (made under root "default").
 * \return 0 (*id), -EINVAL (bad fields), -EEXIST (id belongs to another
 * uuid), -EAGAIN (noup set), -ENOMEM.
 */
int mon_osd_boot(Cairn__Map__OsdMap *m, const struct mon_osd_boot *b, int32_t *id, char *err);

/* \return 0, 1 (already so), -ENOENT. down_ns: when it went down (wall clock). */
int mon_osd_mark_down(Cairn__Map__OsdMap *m, int32_t id, uint64_t down_ns);
int mon_osd_set_in(Cairn__Map__OsdMap *m, int32_t id, bool in);
/* reweight 16.16 in [0, 1.0]. \return 0, 1, -ENOENT, -ERANGE. */
int mon_osd_reweight(Cairn__Map__OsdMap *m, int32_t id, uint32_t reweight);
/* Remove a down OSD from the map and CRUSH. \return 0, -ENOENT, -EBUSY (up). */
int mon_osd_rm(Cairn__Map__OsdMap *m, int32_t id, char *err);

struct mon_pool_spec {
	const char *name;
	bool erasure;
	unsigned size, min_size; /* 0: defaults (3 / size - size/2; EC: k+m / k+1) */
	unsigned ec_k, ec_m;
	unsigned stripe_unit; /* EC: 0 = 4096; a multiple of 4096 up to 1 MiB */
	unsigned pg_num;      /* 0: 32 */
};

/* Parse "K+M". \return 0, -EINVAL (with err). */
int mon_parse_ec_profile(const char *s, unsigned *k, unsigned *m, char *err);

/* \return 0 (*id), -EEXIST, -EINVAL, -ENOMEM; err says why. EC pools get their own indep rule. */
int mon_pool_create(Cairn__Map__OsdMap *m, const struct mon_pool_spec *s, int64_t *id, char *err);
/* \return 0, -ENOENT. Drops the pool's upmaps and its own EC rule. */
int mon_pool_rm(Cairn__Map__OsdMap *m, const char *name, char *err);
/* key: size, min_size, pg_num, crush_rule, quota_max_bytes. \return 0, 1 (unchanged), -ENOENT,
 * -EINVAL. */
int mon_pool_set(Cairn__Map__OsdMap *m, const char *name, const char *key, const char *value,
		 char *err);

/*
 * Is m a map the monitors could have written? OSD ids in [0, 2^20) and
 * unique, pools with sane sizes (size 1-32, min_size <= size, pg_num
 * 1-65536, pgp_num <= pg_num) and unique ids, upmaps naming OSD ids, a CRUSH
 * text that parses. Maps read from etcd or the wire are checked before use.
 * \return 0, -EBADMSG (err says what).
 */
int mon_map_validate(const Cairn__Map__OsdMap *m, char *err);

/* A PgPin of the map, in a mon_placement. */
struct mon_pin {
	int64_t pool;
	uint32_t seed;
	int n;
	const int32_t *osds;
	uint64_t epoch;
};

/* Placement view of a map (built once per map; read-only after, thread-safe). */
struct mon_placement {
	struct crush_map *crush;
	int max_osd;
	struct crush_osd_state *osds;
	uint32_t *weights;
	struct crush_upmap_item *upmaps;
	size_t nupmaps;
	struct mon_pin *pins; /* sorted by pool, seed */
	size_t npins;
	int32_t *pin_osds; /* every pin's OSDs, back to back */
	void *work;
};

/* \return 0, -EBADMSG (CRUSH text does not parse; err), -ENOMEM. */
int mon_placement_build(const Cairn__Map__OsdMap *m, struct mon_placement *pl, char *err);
void mon_placement_free(struct mon_placement *pl);
void mon_pool_to_crush(const Cairn__Map__Pool *p, struct crush_pool *cp);

/*
 * PG merge: the largest power of two below from (0 if from < 2). A merge
 * step from -> to (half <= to < from) moves each source PG s (to <= s <
 * from) into its target s - half, where stable_mod places s's objects once
 * pg_num is to (and where pgp_num <= to has placed s already).
 */
static inline uint32_t
mon_merge_half(uint32_t from)
{
	return from < 2 ? 0 : 1u << (31 - __builtin_clz(from - 1));
}

/* Up set of a PG. \return the count (see crush_pg_to_up). Not thread-safe (shared work area). */
int mon_placement_pg_up(struct mon_placement *pl, const Cairn__Map__Pool *p, uint32_t seed,
			int32_t *up, int *primary);

/*
 * Raw set of a PG (before down OSDs go; with the pin unless nopin). \return
 * the count (see crush_pg_to_raw). Not thread-safe.
 */
int mon_placement_pg_raw(struct mon_placement *pl, const Cairn__Map__Pool *p, uint32_t seed,
			 bool nopin, int32_t *raw);

/* The pin of (pool, seed), or NULL. */
const struct mon_pin *mon_placement_pin(const struct mon_placement *pl, int64_t pool,
					uint32_t seed);

#endif
