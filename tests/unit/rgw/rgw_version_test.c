/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The version planner (rgw/src/s3_version.c) against a model of S3's
 * versioning: random PUTs and DELETEs (latest and by id) on a few keys, in
 * never-versioned, enabled and suspended buckets, applied to an in-memory
 * omap the way the shard applies a compound op (every compare first, then
 * the writes). After each step the omap must hold exactly the model's
 * versions (the latest under "<key>\0", the older ones as records in
 * order, the null pointer exactly when the null version is an older one),
 * and the counters' moves must add up to the stored versions.
 */
#include "rgw_int.h"
#include "cm/random.h"
#include "testlib.h"

#define MAXKV 1024
#define NKEYS 3
#define MAXV  64

struct kv {
	uint8_t k[64], v[512];
	size_t kl, vl;
};

static struct kv g_omap[MAXKV];
static size_t g_n;

static struct kv *
om_find(const void *k, size_t kl)
{
	for (size_t i = 0; i < g_n; i++)
		if (g_omap[i].kl == kl && !memcmp(g_omap[i].k, k, kl))
			return &g_omap[i];
	return NULL;
}

static void
om_set(const void *k, size_t kl, const void *v, size_t vl)
{
	struct kv *e = om_find(k, kl);

	ck_assert(kl <= sizeof(e->k) && vl <= sizeof(e->v));
	if (!e) {
		ck_assert(g_n < MAXKV);
		e = &g_omap[g_n++];
	}
	memcpy(e->k, k, kl);
	e->kl = kl;
	memcpy(e->v, v, vl);
	e->vl = vl;
}

static void
om_rm(const void *k, size_t kl)
{
	struct kv *e = om_find(k, kl);

	if (e)
		*e = g_omap[--g_n];
}

static struct cairn_kv
dupkv(const struct kv *e)
{
	struct cairn_kv c = { malloc(e->kl), e->kl, malloc(e->vl ? e->vl : 1), e->vl };

	memcpy(c.key, e->k, e->kl);
	memcpy(c.val, e->v, e->vl);
	return c;
}

/* What the OSD returns for s3_vread_op's sub-ops. */
static void
om_read(struct s3_vread *r)
{
	const struct kv *best = NULL;

	s3_vread_reset(r);
	r->kvs = calloc(r->nwant, sizeof(*r->kvs));
	for (size_t i = 0; i < r->nwant; i++) {
		const struct kv *e = om_find(r->want[i].key, r->want[i].klen);

		if (e)
			r->kvs[r->n++] = dupkv(e);
	}
	if (!r->list)
		return;
	for (size_t i = 0; i < g_n; i++) {
		const struct kv *e = &g_omap[i];
		size_t m;

		if (e->kl < r->prefix.klen || memcmp(e->k, r->prefix.key, r->prefix.klen))
			continue;
		m = best ? CM_MIN(best->kl, e->kl) : 0;
		if (!best || memcmp(e->k, best->k, m) < 0 ||
		    (!memcmp(e->k, best->k, m) && e->kl < best->kl))
			best = e;
	}
	if (best) {
		r->first = calloc(1, sizeof(*r->first));
		r->first[0] = dupkv(best);
		r->nfirst = 1;
	}
}

/* The plan as the shard runs a compound op: false (nothing written) if a compare fails. */
static bool
om_apply(const struct s3_vplan *v)
{
	for (int i = 0; i < v->n; i++) {
		const struct s3_vplan_op *o = &v->o[i];
		const struct kv *e = om_find(o->key, o->klen);

		if (o->kind == S3_VP_ABSENT && e)
			return false;
		if (o->kind == S3_VP_CMP &&
		    (!e || e->vl != o->vlen || memcmp(e->v, o->val, o->vlen)))
			return false;
	}
	for (int i = 0; i < v->n; i++) {
		const struct s3_vplan_op *o = &v->o[i];

		if (o->kind == S3_VP_SET)
			om_set(o->key, o->klen, o->val, o->vlen);
		else if (o->kind == S3_VP_RM)
			om_rm(o->key, o->klen);
	}
	return true;
}

/* ---- the model: each key's versions, newest first ---- */

struct mver {
	char vid[RGW_VID_LEN + 1]; /* "" : null */
	bool dm;
	uint64_t size;
	uint8_t inst[16];
};

static struct mver g_m[NKEYS][MAXV];
static int g_nv[NKEYS];
static int64_t g_bytes, g_objs; /* the counters, as the plans moved them */
static int64_t g_ns = 1000000000;

static void
m_remove(int k, int i)
{
	memmove(&g_m[k][i], &g_m[k][i + 1], (size_t)(g_nv[k] - i - 1) * sizeof(g_m[k][0]));
	g_nv[k]--;
}

static int
m_null(int k)
{
	for (int i = 0; i < g_nv[k]; i++)
		if (!g_m[k][i].vid[0])
			return i;
	return -1;
}

static void
m_push(int k, const struct mver *mv)
{
	ck_assert_int_lt(g_nv[k], MAXV);
	memmove(&g_m[k][1], &g_m[k][0], (size_t)g_nv[k] * sizeof(g_m[k][0]));
	g_m[k][0] = *mv;
	g_nv[k]++;
}

static int
kv_cmp(const void *a, const void *b)
{
	const struct kv *x = *(const struct kv *const *)a, *y = *(const struct kv *const *)b;
	int c = memcmp(x->k, y->k, CM_MIN(x->kl, y->kl));

	return c ? c : (x->kl > y->kl) - (x->kl < y->kl);
}

static void
check_version(const struct kv *e, const struct mver *mv, const char *key, int i)
{
	struct rgw_entry d;

	ck_assert_int_eq(rgw_entry_decode(e->v, e->vl, &d), 0);
	ck_assert_msg(!strcmp(d.vid, mv->vid), "key %s: version %d is %s, model %s", key, i, d.vid,
		      mv->vid);
	ck_assert_int_eq(!!(d.flags & RGW_ENTRY_DELETE_MARKER), mv->dm);
	ck_assert(!memcmp(d.inst, mv->inst, 16));
	if (i) {
		/* (an older version's record key: its sort key) */
		struct rgw_str rk;
		char sk[RGW_VID_LEN + 1];

		rgw_str_init(&rk);
		rgw_version_sk(&d, sk);
		s3_version_key(key, strlen(key), sk, &rk);
		ck_assert(rk.len == e->kl && !memcmp(rk.p, e->k, rk.len));
		rgw_str_fini(&rk);
	}
	rgw_entry_fini(&d);
}

/*
 * The omap against the model: the latest under "<key>\0", the older versions
 * as records in the model's order (newest first: ascending keys), the null
 * pointer exactly when the null version is an older one.
 */
static void
check_key(int k, const char *key)
{
	const struct kv *recs[MAXV], *e;
	struct rgw_str ek, pk;
	int nrec = 0, ni = m_null(k);

	rgw_str_init(&ek);
	rgw_str_init(&pk);
	s3_entry_key(key, strlen(key), &ek);
	s3_null_ptr_key(key, strlen(key), &pk);
	e = om_find(ek.p, ek.len);
	ck_assert_msg(!!e == (g_nv[k] > 0), "key %s: latest present %d, model %d", key, !!e,
		      g_nv[k]);
	if (e)
		check_version(e, &g_m[k][0], key, 0);
	for (size_t j = 0; j < g_n; j++)
		if (g_omap[j].kl > ek.len && !memcmp(g_omap[j].k, ek.p, ek.len) &&
		    g_omap[j].k[ek.len] == 1) {
			ck_assert_int_lt(nrec, MAXV);
			recs[nrec++] = &g_omap[j];
		}
	ck_assert_int_eq(nrec, g_nv[k] ? g_nv[k] - 1 : 0);
	qsort(recs, (size_t)nrec, sizeof(recs[0]), kv_cmp);
	for (int i = 0; i < nrec; i++)
		check_version(recs[i], &g_m[k][i + 1], key, i + 1);
	e = om_find(pk.p, pk.len);
	ck_assert_msg(!!e == (ni > 0), "key %s: null pointer %d, null version at %d", key, !!e, ni);
	rgw_str_fini(&ek);
	rgw_str_fini(&pk);
}

static void
check_counters(void)
{
	int64_t b = 0, o = 0;

	for (int k = 0; k < NKEYS; k++)
		for (int i = 0; i < g_nv[k]; i++)
			if (!g_m[k][i].dm) {
				b += (int64_t)g_m[k][i].size;
				o++;
			}
	ck_assert_int_eq(g_bytes, b);
	ck_assert_int_eq(g_objs, o);
}

static void
apply_ok(struct s3_vplan *v)
{
	ck_assert(om_apply(v));
	/* the collector: a dead marker per freed instance, which then goes */
	for (int i = 0; i < v->ndead; i++) {
		ck_assert(om_find(v->dead[i].dkey, strlen(v->dead[i].dkey)));
		om_rm(v->dead[i].dkey, strlen(v->dead[i].dkey));
	}
	g_bytes += v->dbytes;
	g_objs += v->dobjs;
}

/* A PUT (dm: a DELETE without an id, in a versioned bucket) of key k. */
static void
do_put(const struct rgw_bucket *b, int k, const char *key, bool dm, uint64_t size)
{
	enum s3_vmode mode = s3_vmode(b);
	struct rgw_entry e = { .flags = dm ? RGW_ENTRY_DELETE_MARKER : 0, .size = dm ? 0 : size };
	struct s3_vread r;
	struct s3_vplan v;
	struct rgw_str enc;
	struct mver mv = { .dm = dm, .size = e.size };
	int ni;

	e.mtime_ns = (g_ns += 1000);
	if (!dm)
		cm_random_bytes(e.inst, 16);
	if (mode == S3_V_ENABLED)
		rgw_vid_make(e.mtime_ns, e.vid);
	rgw_str_init(&enc);
	rgw_entry_encode(&e, &enc);
	ck_assert_int_eq(s3_vread_init(&r, key, strlen(key), mode == S3_V_SUSPENDED, NULL, false),
			 0);
	om_read(&r);
	s3_vplan_zero(&v);
	ck_assert_int_eq(s3_vplan_put(&v, b, key, strlen(key), &r, enc.p, enc.len, &e), 0);
	apply_ok(&v);
	s3_vplan_fini(&v);
	s3_vread_fini(&r);
	rgw_str_fini(&enc);
	/* the model */
	if (mode == S3_V_NEVER)
		g_nv[k] = 0;
	else if (mode == S3_V_SUSPENDED && (ni = m_null(k)) >= 0)
		m_remove(k, ni);
	memcpy(mv.vid, e.vid, sizeof(mv.vid));
	memcpy(mv.inst, e.inst, 16);
	m_push(k, &mv);
}

/* A DELETE of key k's latest in a never-versioned bucket. */
static void
do_remove_latest(const struct rgw_bucket *b, int k, const char *key)
{
	struct s3_vread r;
	struct s3_vplan v;

	ck_assert_int_eq(s3_vread_init(&r, key, strlen(key), false, NULL, false), 0);
	om_read(&r);
	s3_vplan_zero(&v);
	if (s3_vread_cur(&r)) {
		ck_assert_int_eq(s3_vplan_put(&v, b, key, strlen(key), &r, NULL, 0, NULL), 0);
		apply_ok(&v);
		g_nv[k] = 0;
	}
	s3_vplan_fini(&v);
	s3_vread_fini(&r);
}

/* A DELETE of version i of key k (or of an id that is not there, i < 0). */
static void
do_delete_version(int k, const char *key, int i)
{
	char vid[RGW_VID_LEN + 1];
	bool null;
	struct s3_vread r;
	struct s3_vplan v;

	if (i >= 0)
		snprintf(vid, sizeof(vid), "%s", g_m[k][i].vid[0] ? g_m[k][i].vid : "null");
	else
		rgw_vid_make(1, vid);
	null = !strcmp(vid, "null");
	ck_assert_int_eq(s3_vread_init(&r, key, strlen(key), true, null ? NULL : vid, true), 0);
	om_read(&r);
	s3_vplan_zero(&v);
	ck_assert_int_eq(s3_vplan_delete(&v, key, strlen(key), &r, vid), 0);
	ck_assert_int_eq(v.found, i >= 0);
	if (i >= 0) {
		ck_assert_int_eq(v.old_dm, g_m[k][i].dm);
		apply_ok(&v);
		m_remove(k, i);
	}
	s3_vplan_fini(&v);
	s3_vread_fini(&r);
}

START_TEST(test_version_model)
{
	static const char *const keys[NKEYS] = { "a", "a/b", "ab" };
	struct rgw_bucket b = { .versioning = "" };
	uint64_t seed = 0x5eed;

	g_n = 0;
	memset(g_nv, 0, sizeof(g_nv));
	g_bytes = g_objs = 0;
	for (int step = 0; step < 4000; step++) {
		int k, op;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		k = (int)((seed >> 33) % NKEYS);
		op = (int)((seed >> 40) % 100);
		if (step == 300)
			snprintf(b.versioning, sizeof(b.versioning), "Enabled");
		else if (step > 300 && op < 3)
			snprintf(b.versioning, sizeof(b.versioning), "%s",
				 strcmp(b.versioning, "Enabled") ? "Enabled" : "Suspended");
		if (op < 45 && g_nv[k] < MAXV - 1) {
			do_put(&b, k, keys[k], false, (seed >> 20) % 10000);
		} else if (op < 65) {
			if (s3_vmode(&b) == S3_V_NEVER)
				do_remove_latest(&b, k, keys[k]);
			else if (g_nv[k] < MAXV - 1)
				do_put(&b, k, keys[k], true, 0);
		} else if (g_nv[k]) {
			int i = (int)((seed >> 24) % (uint64_t)(g_nv[k] + 1)) - 1;

			do_delete_version(k, keys[k], op < 80 ? 0 : i);
		}
		for (int j = 0; j < NKEYS; j++)
			check_key(j, keys[j]);
		check_counters();
	}
}

END_TEST

START_TEST(test_version_ids)
{
	char a[RGW_VID_LEN + 1], b[RGW_VID_LEN + 1], s[RGW_VID_LEN + 1];
	struct rgw_entry e = { .mtime_ns = 5 };

	rgw_vid_make(1000, a);
	rgw_vid_make(2000, b);
	ck_assert(rgw_vid_ok(a) && rgw_vid_ok(b));
	ck_assert_int_gt(strcmp(a, b), 0); /* (newer sorts first) */
	ck_assert(!rgw_vid_ok("null") && !rgw_vid_ok("") && !rgw_vid_ok("0123456789abcdef0123456"));
	ck_assert(!rgw_vid_ok("0123456789ABCDEF01234567"));
	rgw_version_sk(&e, s);
	ck_assert_int_eq(strlen(s), 20);
	ck_assert_str_eq(s + 16, "null");
	memcpy(e.vid, a, sizeof(a));
	rgw_version_sk(&e, s);
	ck_assert_str_eq(s, a);
	ck_assert(rgw_key_ok("a/b c\xc3\xa9", 7));
	ck_assert(!rgw_key_ok("a\0b", 3) &&
		  !rgw_key_ok("\xff"
			      "p",
			      2) &&
		  !rgw_key_ok("\xc0", 1));
}

END_TEST

START_TEST(test_entry_vid)
{
	struct rgw_entry e = { .flags = RGW_ENTRY_DELETE_MARKER, .mtime_ns = 7 }, d;
	struct rgw_str s;

	rgw_vid_make(7, e.vid);
	rgw_str_init(&s);
	rgw_entry_encode(&e, &s);
	ck_assert_int_eq(rgw_entry_raw_flags(s.p, s.len), RGW_ENTRY_DELETE_MARKER);
	ck_assert_int_eq(rgw_entry_decode(s.p, s.len, &d), 0);
	ck_assert_str_eq(d.vid, e.vid);
	rgw_entry_fini(&d);
	/* a version id that is not one: refused */
	for (size_t i = 0; i + RGW_VID_LEN <= s.len; i++)
		if (!memcmp(s.p + i, e.vid, RGW_VID_LEN))
			s.p[i] = 'X';
	ck_assert_int_eq(rgw_entry_decode(s.p, s.len, &d), -EBADMSG);
	ck_assert_int_eq(rgw_entry_raw_flags("xx", 2), -1);
	rgw_str_fini(&s);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("rgw_version");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_version_ids);
	tcase_add_test(tc, test_entry_vid);
	tcase_add_test(tc, test_version_model);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
