/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcrush: CRUSH placement as Ceph computes it (straw2 buckets, rjenkins1,
 * firstn and indep rules, the "optimal" tunables and the legacy ones, device
 * classes through shadow trees), plus the text map format of `crushtool -d`.
 *
 * Mapping is pure computation: crush_do_rule() reads a const map, writes into
 * caller workspace and allocates nothing, so any number of threads may map
 * with one map. Building and parsing allocate; a map is immutable once
 * crush_map_finalize() has run.
 *
 * Ids follow Ceph: devices >= 0, buckets < 0 (bucket id b lives at index
 * -1-b), 16.16 fixed-point weights (0x10000 = 1.0).
 */
#ifndef CRUSH_CRUSH_H
#define CRUSH_CRUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CRUSH_ITEM_UNDEF 0x7ffffffe /* internal: not yet chosen */
#define CRUSH_ITEM_NONE  0x7fffffff /* an indep hole: no item for this position */
#define CRUSH_WEIGHT_ONE 0x10000u

enum crush_bucket_alg {
	CRUSH_BUCKET_UNIFORM = 1,
	CRUSH_BUCKET_LIST = 2,
	CRUSH_BUCKET_TREE = 3,
	CRUSH_BUCKET_STRAW = 4,
	CRUSH_BUCKET_STRAW2 = 5,
};

/*
 * Bounds the text parser puts on retry counts (tunables and rule steps):
 * they multiply in the mapper, so huge ones make every mapping spin.
 * Ceph ships 50 total tries, legacy 2 local and 5 fallback tries, and EC
 * rules with set_choose_tries 100.
 */
#define CRUSH_MAX_TRIES       100
#define CRUSH_MAX_LOCAL_TRIES 5

/* Rule step opcodes, numbered as Ceph numbers them. */
enum crush_op {
	CRUSH_OP_NOOP = 0,
	CRUSH_OP_TAKE = 1,
	CRUSH_OP_CHOOSE_FIRSTN = 2,
	CRUSH_OP_CHOOSE_INDEP = 3,
	CRUSH_OP_EMIT = 4,
	CRUSH_OP_CHOOSELEAF_FIRSTN = 6,
	CRUSH_OP_CHOOSELEAF_INDEP = 7,
	CRUSH_OP_SET_CHOOSE_TRIES = 8,
	CRUSH_OP_SET_CHOOSELEAF_TRIES = 9,
	CRUSH_OP_SET_CHOOSE_LOCAL_TRIES = 10,
	CRUSH_OP_SET_CHOOSE_LOCAL_FALLBACK_TRIES = 11,
	CRUSH_OP_SET_CHOOSELEAF_VARY_R = 12,
	CRUSH_OP_SET_CHOOSELEAF_STABLE = 13,
};

struct crush_step {
	int op;
	int32_t arg1;
	int32_t arg2;
	int32_t take_class; /* text form: `take X class C` (-1: none); arg1 is the shadow id */
};

struct crush_rule {
	int id;
	char *name;
	int type; /* 1 replicated, 3 erasure (Ceph's numbers) */
	int min_size, max_size;
	bool has_sizes; /* min_size/max_size were given */
	unsigned len;
	struct crush_step *steps;
};

struct crush_bucket {
	int32_t id;
	int type;
	int alg;
	int hash;        /* 0 = rjenkins1 */
	uint32_t weight; /* sum of item weights */
	unsigned size;
	int32_t *items;
	uint32_t *item_weights;
	char *name;
	int class_id;       /* -1 for a real bucket; else the class of this shadow */
	int32_t shadow_of;  /* shadow: the real bucket it mirrors */
	int32_t *class_ids; /* real bucket: shadow id per class (0: none); size nclasses */
};

struct crush_tunables {
	uint32_t choose_local_tries;
	uint32_t choose_local_fallback_tries;
	uint32_t choose_total_tries;
	uint32_t chooseleaf_descend_once;
	uint32_t chooseleaf_vary_r;
	uint32_t chooseleaf_stable;
	uint32_t straw_calc_version;
	uint32_t allowed_bucket_algs;
};

struct crush_map {
	struct crush_tunables t;
	int32_t max_devices;
	char **device_names; /* [max_devices], NULL for a hole */
	int *device_class;   /* [max_devices], -1: none */
	int max_buckets;
	struct crush_bucket **buckets; /* [max_buckets], index -1-id */
	int max_rules;
	struct crush_rule **rules; /* [max_rules], by id */
	int ntypes;
	int *type_ids;
	char **type_names;
	int nclasses;
	char **class_names; /* class id -> name */
	bool finalized;
};

/* Ceph's "optimal" (jewel and later) tunables. */
void crush_tunables_optimal(struct crush_tunables *t);
/* The legacy (argonaut) tunables a map gets when it names none. */
void crush_tunables_legacy(struct crush_tunables *t);

/* An empty map with the optimal tunables. \return 0 or -ENOMEM. */
int crush_map_create(struct crush_map **mp);
void crush_map_destroy(struct crush_map *m);

/*
 * Build shadow trees for device classes (reusing shadow ids the map already
 * names, as `id -N class C` lines do), compute bucket weights, check that
 * every referenced item exists. \return 0, -EINVAL (with a reason in err).
 */
int crush_map_finalize(struct crush_map *m, char *err, size_t errlen);

/* Lookups by name. \return the id, or INT32_MIN when absent. */
int32_t crush_item_by_name(const struct crush_map *m, const char *name);
int crush_type_by_name(const struct crush_map *m, const char *name);
int crush_class_by_name(const struct crush_map *m, const char *name);
int crush_rule_by_name(const struct crush_map *m, const char *name);
const char *crush_item_name(const struct crush_map *m, int32_t id);
const char *crush_type_name(const struct crush_map *m, int type);

/* Workspace bytes crush_do_rule needs for result_max results. */
size_t crush_work_size(const struct crush_map *m, int result_max);

/*
 * Map input x through rule ruleno into result[0..result_max).
 * weight[0..weight_max) are per-device in-weights (16.16; 0 = out,
 * 0x10000 = fully in), as crushtool --weight sets them. work must be
 * crush_work_size() bytes. \return the number of results (indep rules fill
 * holes with CRUSH_ITEM_NONE), or 0 for a missing rule.
 */
int crush_do_rule(const struct crush_map *m, int ruleno, int x, int *result, int result_max,
		  const uint32_t *weight, int weight_max, void *work);

/* rjenkins1, as Ceph's crush_hash32_*. */
uint32_t crush_hash32_2(uint32_t a, uint32_t b);
uint32_t crush_hash32_3(uint32_t a, uint32_t b, uint32_t c);

/* 2^44 * log2(x + 1) in fixed point, x < 2^16 (the straw2 draw's log). */
uint64_t crush_ln(unsigned x);

/*
 * Parse the text of `crushtool -d`. On error returns -EINVAL and writes
 * "LINE:COL: what" into err. \return 0, -EINVAL, -ENOMEM.
 */
int crush_text_parse(const char *text, struct crush_map **mp, char *err, size_t errlen);

/* Print m in the same syntax (round trip stable). \return 0 or -EIO. */
int crush_text_print(const struct crush_map *m, FILE *out);

#endif
