/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Peering's decisions (osd/src/peering/decide.c and the backends' choices)
 * on a deterministic fake reactor: no sockets, no threads, no store. Each
 * test builds a primary's PG (osd.0) with the copies its peers report, as
 * their notifies would (packed and unpacked like on the wire), lets the
 * answers and maps arrive at virtual times, and checks what peering
 * concludes: the prior set, whether it may go on, the authoritative copy,
 * each target's missing objects or backfill, and EC rollback.
 */
#include "osd_int.h"
#include "crush/placement.h"
#include "fake_reactor.h"
#include "testlib.h"

#define POOL 1
#define T0   1000 /* the fake reactor's start (ms) */

struct ent {
	uint64_t e, s;
	const char *oid;
	uint32_t undo;
	uint32_t sent[4]; /* EC: OSD + 1 per shard */
	size_t nsent;
};

/* A copy as its holder reports it. */
struct copy {
	bool exists;
	const struct ent *log;
	size_t n;
	struct osd_ver tail;
	uint64_t les;
	bool incomplete;
	const char *const *missing;
	size_t nmissing;
	uint32_t label; /* EC: shard + 1 */
};

struct fx {
	struct osd_conf cfg;
	struct osd o;
	Cairn__Map__OsdMap map;
	Cairn__Map__Osd mo[8];
	Cairn__Map__Osd *mop[8];
	struct osd_ec ec;
	bool have_ec;
	struct osd_pg *pg;
	struct cm_test_fake *f;
};

static void
fx_init(struct fx *x, int nosds, bool ec)
{
	memset(x, 0, sizeof(*x));
	x->cfg.pg_log_max = 100;
	x->o.cfg = &x->cfg;
	x->o.id = 0;
	TAILQ_INIT(&x->o.wait_map);
	TAILQ_INIT(&x->o.rjobs);
	TAILQ_INIT(&x->o.rjobs_ready);
	TAILQ_INIT(&x->o.ecrs);
	cairn__map__osd_map__init(&x->map);
	for (int i = 0; i < nosds; i++) {
		cairn__map__osd__init(&x->mo[i]);
		x->mo[i].id = i;
		x->mo[i].up = true;
		x->mo[i].in = true;
		x->mo[i].up_since = 1;
		x->mop[i] = &x->mo[i];
	}
	x->map.osds = x->mop;
	x->map.n_osds = (size_t)nosds;
	x->map.epoch = 20;
	x->o.map = &x->map;
	x->o.epoch = 20;
	x->pg = osd__pg_new(&x->o, POOL, 0);
	ck_assert_ptr_nonnull(x->pg);
	x->pg->state = OSD_PG_PEERING;
	x->pg->primary = 0;
	x->pg->size = 3;
	x->pg->min_size = 2;
	x->pg->interval_epoch = 20;
	x->pg->in_store = true;
	x->pg->auth = -1;
	if (ec) {
		ck_assert_int_eq(osd_ec_init(&x->ec, 2, 1, 4096), 0);
		x->have_ec = true;
		x->pg->be = &osd__backend_ec;
		x->pg->ec = &x->ec;
		x->pg->my_shard = 0;
		x->pg->info_shard = 1;
	}
	ck_assert_int_eq(cm_test_fake_create(T0, &x->f), 0);
}

static void
fx_fini(struct fx *x)
{
	osd__pg_free_all(&x->o);
	if (x->have_ec)
		osd_ec_fini(&x->ec);
	cm_test_fake_destroy(x->f);
}

/* The acting set (slots 0..n-1, shard i at slot i), then the prior OSDs asked. */
static void
fx_slots(struct fx *x, const int32_t *acting, int n, const int32_t *more, int nmore)
{
	struct osd_pg *pg = x->pg;

	pg->nacting = n;
	pg->nslots = 0;
	for (int i = 0; i < n; i++) {
		pg->acting[i] = acting[i];
		pg->shard[i] = (uint8_t)i;
		pg->slot_osd[pg->nslots++] = acting[i];
	}
	for (int i = 0; i < nmore; i++)
		pg->slot_osd[pg->nslots++] = more[i];
}

static int
slot_of(const struct osd_pg *pg, int32_t id)
{
	for (int i = 0; i < pg->nslots; i++)
		if (pg->slot_osd[i] == id)
			return i;
	ck_abort_msg("osd.%d is not a slot", id);
	return -1;
}

static void
ent_pb(const struct ent *e, Cairn__Osd__LogEntry *le, Cairn__Osd__Version *v,
       Cairn__Osd__Version *pv)
{
	cairn__osd__log_entry__init(le);
	cairn__osd__version__init(v);
	cairn__osd__version__init(pv);
	v->epoch = e->e;
	v->seq = e->s;
	le->ver = v;
	le->prior = pv;
	le->op = OSD_LOG_MODIFY;
	le->oid = (char *)e->oid;
	le->client = (char *)"client.test";
	le->tid = e->s;
	le->undo = e->undo;
	le->sent_to = (uint32_t *)e->sent;
	le->n_sent_to = e->nsent;
}

static struct osd_ver
copy_lu(const struct copy *c)
{
	return c->n ? (struct osd_ver){ c->log[c->n - 1].e, c->log[c->n - 1].s } : c->tail;
}

/* Our own copy (osd.0): its log in the PG's ring, its slot answered at once. */
static void
own_copy(struct fx *x, const struct copy *c)
{
	struct osd_pg *pg = x->pg;
	struct osd_pg_peer *p = &pg->peer[slot_of(pg, 0)];

	for (size_t i = 0; i < c->n; i++) {
		Cairn__Osd__LogEntry le;
		Cairn__Osd__Version v, pv;

		ent_pb(&c->log[i], &le, &v, &pv);
		ck_assert_int_eq(osd__pg_log_append(pg, &le), 0);
	}
	pg->last_update = copy_lu(c);
	pg->log_tail = c->tail;
	pg->incomplete = c->incomplete;
	pg->last_epoch_started = c->les;
	if (c->label)
		pg->info_shard = c->label;
	for (size_t i = 0; i < c->nmissing; i++)
		ck_assert_int_eq(osd_oset_put(&pg->missing, c->missing[i], 0), 0);
	p->have = true;
	p->exists = true;
	p->incomplete = pg->incomplete;
	p->partial = pg->missing.n > 0;
	p->les = pg->last_epoch_started;
	p->lu = pg->last_update;
	p->tail = pg->log_tail;
}

/* osd.id's notify, packed and unpacked as on the wire, taken as pg_handle_notify does. */
static void
answer(struct fx *x, int32_t id, const struct copy *c)
{
	Cairn__Osd__PgNotify n = CAIRN__OSD__PG_NOTIFY__INIT, *got;
	Cairn__Osd__PgInfo pi = CAIRN__OSD__PG_INFO__INIT;
	Cairn__Osd__Version lu = CAIRN__OSD__VERSION__INIT, tail = CAIRN__OSD__VERSION__INIT;
	Cairn__Osd__LogEntry les[16], *lep[16];
	Cairn__Osd__Version vs[16], pvs[16];
	struct osd_ver v = copy_lu(c);
	struct osd_pg_peer *p = &x->pg->peer[slot_of(x->pg, id)];
	uint8_t *buf;
	size_t len;

	ck_assert_uint_le(c->n, 16);
	n.pool = POOL;
	n.exists = c->exists;
	if (c->exists) {
		lu.epoch = v.epoch;
		lu.seq = v.seq;
		tail.epoch = c->tail.epoch;
		tail.seq = c->tail.seq;
		pi.last_update = &lu;
		pi.log_tail = &tail;
		pi.last_epoch_started = c->les;
		pi.incomplete = c->incomplete;
		pi.shard = c->label;
		n.info = &pi;
		for (size_t i = 0; i < c->n; i++) {
			ent_pb(&c->log[i], &les[i], &vs[i], &pvs[i]);
			lep[i] = &les[i];
		}
		n.log = lep;
		n.n_log = c->n;
		n.missing = (char **)c->missing;
		n.n_missing = c->nmissing;
	}
	len = cairn__osd__pg_notify__get_packed_size(&n);
	buf = malloc(len + 1);
	ck_assert_ptr_nonnull(buf);
	cairn__osd__pg_notify__pack(&n, buf);
	got = cairn__osd__pg_notify__unpack(NULL, len, buf);
	free(buf);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(osd_check_notify(got), 0);
	p->have = true;
	p->exists = got->exists && got->info;
	if (p->exists) {
		osd_ver_from_pb(got->info->last_update, &p->lu);
		osd_ver_from_pb(got->info->log_tail, &p->tail);
		p->incomplete = got->info->incomplete;
		p->partial = got->n_missing > 0;
		p->les = got->info->last_epoch_started;
		p->n = got;
	} else {
		cairn__osd__pg_notify__free_unpacked(got, NULL);
	}
}

/* ---------- answers arriving on the fake reactor ---------- */

struct arrival {
	struct fx *x;
	int32_t id;
	const struct copy *c;
};

static void
arrive(struct cm_test_fake *f, void *arg)
{
	struct arrival *a = arg;

	(void)f;
	answer(a->x, a->id, a->c);
}

static enum osd_peering_verdict
decide(struct fx *x, int *auth)
{
	int self;
	enum osd_peering_verdict v = osd__peering_decide(x->pg, auth, &self);

	if (v == OSD_PEERING_GO)
		ck_assert_int_eq(self, slot_of(x->pg, 0));
	return v;
}

static bool
has_oid(const struct osd_pg_peer *p, const char *oid)
{
	for (size_t i = 0; i < p->noids; i++)
		if (strcmp(p->oids[i], oid) == 0)
			return true;
	return false;
}

/* ---------- the prior set ---------- */

START_TEST(test_prior_set_active)
{
	struct fx x;
	int32_t before[] = { 0, 1, 2 }, now[] = { 0, 1, 3 }, moved[] = { 3, 4, 5 };

	fx_init(&x, 6, false);
	x.pg->state = OSD_PG_ACTIVE;
	osd__set_prior(x.pg, before, 3, now, 3);
	ck_assert_int_eq(x.pg->nprior, 1);
	ck_assert_int_eq(x.pg->prior[0], 2);
	ck_assert(x.pg->prior_overlap); /* osd.0 and osd.1 carry the interval over */
	/* A wholly new set: every OSD before is prior, none carries over. */
	x.pg->state = OSD_PG_ACTIVE;
	osd__set_prior(x.pg, before, 3, moved, 3);
	ck_assert_int_eq(x.pg->nprior, 3);
	ck_assert(!x.pg->prior_overlap);
	/* The first interval has nobody before it. */
	osd__set_prior(x.pg, NULL, 0, now, 3);
	ck_assert_int_eq(x.pg->nprior, 0);
	ck_assert(x.pg->prior_overlap);
	fx_fini(&x);
}

END_TEST

/* A PG that never became active again keeps the older prior set too. */
START_TEST(test_prior_set_kept_until_active)
{
	struct fx x;
	int32_t a1[] = { 0, 1, 2 }, a2[] = { 0, 1, 3 }, a3[] = { 0, 4, 5 };

	fx_init(&x, 6, false);
	x.pg->state = OSD_PG_ACTIVE;
	osd__set_prior(x.pg, a1, 3, a2, 3); /* prior {2} */
	x.pg->state = OSD_PG_PEERING;       /* the next map comes before it activates */
	osd__set_prior(x.pg, a2, 3, a3, 3);
	ck_assert_int_eq(x.pg->nprior, 3);
	ck_assert_int_eq(x.pg->prior[0], 2);
	ck_assert_int_eq(x.pg->prior[1], 1);
	ck_assert_int_eq(x.pg->prior[2], 3);
	/* Active in between: only the last set counts. */
	x.pg->state = OSD_PG_ACTIVE;
	osd__set_prior(x.pg, a2, 3, a3, 3);
	ck_assert_int_eq(x.pg->nprior, 2);
	fx_fini(&x);
}

END_TEST

/* The prior set must be heard from: answers arrive over virtual time. */
START_TEST(test_decide_waits_for_prior)
{
	static const struct ent log[] = { { .e = 10, .s = 1, .oid = "a" },
					  { .e = 10, .s = 2, .oid = "b" } };
	static const struct copy mine = { .exists = true, .log = log, .n = 2, .les = 10 };
	static const struct copy none = { .exists = false };
	static const struct copy old = { .exists = true, .log = log, .n = 2, .les = 10 };
	struct fx x;
	int32_t acting[] = { 0, 3, 4 }, prior[] = { 1, 2 };
	struct arrival a3 = { &x, 3, &none }, a4 = { &x, 4, &none }, a2 = { &x, 2, &old };
	int auth = -1;

	fx_init(&x, 5, false);
	x.pg->prior[0] = 1;
	x.pg->prior[1] = 2;
	x.pg->nprior = 2;
	x.pg->prior_overlap = false;
	fx_slots(&x, acting, 3, prior, 2);
	own_copy(&x, &mine);
	cm_test_fake_at(x.f, T0 + 100, arrive, &a3);
	cm_test_fake_at(x.f, T0 + 200, arrive, &a4);
	cm_test_fake_at(x.f, T0 + 900, arrive, &a2);
	ck_assert_uint_eq(cm_test_fake_run_until(x.f, T0 + 500), 2);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_WAIT_PRIOR);
	ck_assert_uint_eq(cm_test_fake_run_until(x.f, T0 + 1000), 1);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(auth, 0); /* the tie of equal copies goes to ours */
	fx_fini(&x);
}

END_TEST

/* Prior OSDs removed from the map (`osd rm`): their data was given up. */
START_TEST(test_decide_prior_removed)
{
	static const struct ent log[] = { { .e = 10, .s = 1, .oid = "a" } };
	static const struct copy mine = { .exists = true, .log = log, .n = 1 };
	struct fx x;
	int32_t acting[] = { 0 };
	int auth;

	fx_init(&x, 3, false);
	x.pg->prior[0] = 1;
	x.pg->prior[1] = 2;
	x.pg->nprior = 2;
	fx_slots(&x, acting, 1, NULL, 0);
	own_copy(&x, &mine);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_WAIT_PRIOR);
	x.map.n_osds = 1; /* osd.1 and osd.2 removed */
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	fx_fini(&x);
}

END_TEST

/* ---------- the authoritative copy ---------- */

START_TEST(test_auth_replicated_newest_complete)
{
	static const struct ent l5[] = { { .e = 10, .s = 5, .oid = "a" } },
				l7[] = { { .e = 10, .s = 7, .oid = "a" } },
				l8[] = { { .e = 10, .s = 8, .oid = "a" } };
	static const char *const miss[] = { "q" };
	static const struct copy c5 = { .exists = true, .log = l5, .n = 1 };
	static const struct copy c7 = { .exists = true, .log = l7, .n = 1 };
	static const struct copy c8p = {
		.exists = true, .log = l8, .n = 1, .missing = miss, .nmissing = 1
	};
	static const struct copy c8i = { .exists = true, .log = l8, .n = 1, .incomplete = true };
	struct fx x;
	int32_t acting[] = { 0, 1, 2 }, more[] = { 3 };
	int auth;

	fx_init(&x, 4, false);
	fx_slots(&x, acting, 3, more, 1);
	own_copy(&x, &c5);
	answer(&x, 1, &c7);
	answer(&x, 2, &c8p); /* newer but partial */
	answer(&x, 3, &c8i); /* newer but being backfilled */
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(auth, 1);
	fx_fini(&x);

	/* A tie between ours and a peer's: ours. */
	fx_init(&x, 2, false);
	fx_slots(&x, (int32_t[]){ 1, 0 }, 2, NULL, 0);
	answer(&x, 1, &c7);
	own_copy(&x, &c7);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(auth, 1); /* slot 1 is osd.0 */
	fx_fini(&x);
}

END_TEST

START_TEST(test_auth_replicated_none)
{
	static const struct copy none = { .exists = false };
	struct fx x;
	int32_t acting[] = { 0, 1 };
	int auth;

	fx_init(&x, 2, false);
	fx_slots(&x, acting, 2, NULL, 0);
	x.pg->peer[0].have = true; /* ours: created, never written, being backfilled */
	x.pg->peer[0].exists = true;
	x.pg->peer[0].incomplete = true;
	answer(&x, 1, &none);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_NO_AUTH);
	fx_fini(&x);
}

END_TEST

/* EC k=2: the k-th newest complete shard; writes newer than it reached fewer than k. */
START_TEST(test_auth_ec_kth_newest)
{
	static const struct ent l5[] = { { .e = 10, .s = 5, .oid = "a" } },
				l7[] = { { .e = 10, .s = 7, .oid = "a" } },
				l9[] = { { .e = 10, .s = 9, .oid = "a" } };
	static const struct copy s0 = { .exists = true, .log = l5, .n = 1, .label = 1 };
	static const struct copy s1 = { .exists = true, .log = l7, .n = 1, .label = 2 };
	static const struct copy s2 = { .exists = true, .log = l9, .n = 1, .label = 3 };
	static const struct copy s1wrong = { .exists = true, .log = l7, .n = 1, .label = 3 };
	struct fx x;
	int32_t acting[] = { 0, 1, 2 };
	int auth;

	fx_init(&x, 3, true);
	fx_slots(&x, acting, 3, NULL, 0);
	own_copy(&x, &s0);
	answer(&x, 1, &s1);
	answer(&x, 2, &s2);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(auth, 1); /* 10.9 is on one shard only: 10.7 is the newest on k */
	fx_fini(&x);

	/* osd.1 holds another shard than its place: no copy; then 10.5 is the k-th. */
	fx_init(&x, 3, true);
	fx_slots(&x, acting, 3, NULL, 0);
	own_copy(&x, &s0);
	answer(&x, 1, &s1wrong);
	answer(&x, 2, &s2);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(auth, 0);
	ck_assert(!x.pg->peer[1].exists);
	fx_fini(&x);
}

END_TEST

/* ---------- each target's missing objects ---------- */

static const struct ent g_auth_log[] = {
	{ .e = 10, .s = 1, .oid = "a" }, { .e = 10, .s = 2, .oid = "b" },
	{ .e = 10, .s = 3, .oid = "c" }, { .e = 10, .s = 4, .oid = "d" },
	{ .e = 10, .s = 5, .oid = "e" }, { .e = 10, .s = 6, .oid = "f" }
};

START_TEST(test_missing_log_based)
{
	static const struct copy mine = { .exists = true, .log = g_auth_log, .n = 6 };
	static const struct copy behind = { .exists = true, .log = g_auth_log, .n = 3 };
	static const struct copy same = { .exists = true, .log = g_auth_log, .n = 6 };
	struct fx x;
	int32_t acting[] = { 0, 1, 2 };
	int auth;

	fx_init(&x, 3, false);
	fx_slots(&x, acting, 3, NULL, 0);
	own_copy(&x, &mine);
	answer(&x, 1, &behind);
	answer(&x, 2, &same);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(auth, 0);
	ck_assert_int_eq(osd__plan_slot(x.pg, 1, auth), 0);
	ck_assert_int_eq(x.pg->peer[1].step, OSD_REC_ADOPT);
	ck_assert(!x.pg->peer[1].backfill);
	ck_assert_uint_eq(x.pg->peer[1].noids, 3);
	ck_assert_str_eq(x.pg->peer[1].oids[0], "d");
	ck_assert_str_eq(x.pg->peer[1].oids[1], "e");
	ck_assert_str_eq(x.pg->peer[1].oids[2], "f");
	ck_assert_int_eq(osd__plan_slot(x.pg, 2, auth), 0);
	ck_assert_int_eq(x.pg->peer[2].step, OSD_REC_NONE);
	fx_fini(&x);
}

END_TEST

/* A target's own entries the authoritative history lacks: their objects too. */
START_TEST(test_missing_divergent)
{
	static const struct ent div[] = { { .e = 10, .s = 1, .oid = "a" },
					  { .e = 10, .s = 2, .oid = "b" },
					  { .e = 11, .s = 1, .oid = "x" } };
	static const struct copy mine = { .exists = true, .log = g_auth_log, .n = 6 };
	static const struct copy other = { .exists = true, .log = div, .n = 3 };
	struct fx x;
	int32_t acting[] = { 0, 1 };
	int auth;

	fx_init(&x, 2, false);
	fx_slots(&x, acting, 2, NULL, 0);
	own_copy(&x, &mine);
	answer(&x, 1, &other);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(auth, 1); /* the newest complete copy (11.1) wins, even over ours */
	fx_fini(&x);

	fx_init(&x, 2, false);
	fx_slots(&x, acting, 2, NULL, 0);
	{
		static const struct ent l2[] = { { .e = 10, .s = 1, .oid = "a" },
						 { .e = 10, .s = 2, .oid = "b" },
						 { .e = 10, .s = 3, .oid = "c" },
						 { .e = 12, .s = 1, .oid = "g" } };
		static const struct copy newer = { .exists = true, .log = l2, .n = 4 };

		own_copy(&x, &newer);
	}
	answer(&x, 1, &other);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(auth, 0);
	ck_assert_int_eq(osd__plan_slot(x.pg, 1, auth), 0);
	ck_assert_int_eq(x.pg->peer[1].step, OSD_REC_ADOPT);
	/* since 10.2 (the last entry both share): c and g, and x it changed alone */
	ck_assert_uint_eq(x.pg->peer[1].noids, 3);
	ck_assert(has_oid(&x.pg->peer[1], "c"));
	ck_assert(has_oid(&x.pg->peer[1], "g"));
	ck_assert(has_oid(&x.pg->peer[1], "x"));
	fx_fini(&x);
}

END_TEST

/* The log no longer reaches back to where a copy stands: backfill it whole. */
START_TEST(test_missing_backfill)
{
	static const struct ent old[] = { { .e = 9, .s = 9, .oid = "z" } };
	static const struct copy mine = {
		.exists = true, .log = g_auth_log + 3, .n = 3, .tail = { 10, 3 }
	};
	static const struct copy stale = { .exists = true, .log = old, .n = 1, .tail = { 9, 0 } };
	static const struct copy none = { .exists = false };
	struct fx x;
	int32_t acting[] = { 0, 1, 2 };
	int auth;

	fx_init(&x, 3, false);
	fx_slots(&x, acting, 3, NULL, 0);
	own_copy(&x, &mine);
	answer(&x, 1, &stale);
	answer(&x, 2, &none);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(osd__plan_slot(x.pg, 1, auth), 0);
	ck_assert(x.pg->peer[1].backfill);
	ck_assert_int_eq(x.pg->peer[1].step, OSD_REC_WIPE);
	/* No copy, and the log was trimmed: backfill too. */
	ck_assert_int_eq(osd__plan_slot(x.pg, 2, auth), 0);
	ck_assert(x.pg->peer[2].backfill);
	fx_fini(&x);

	/* No copy, and the log reaches back to the PG's creation: its objects. */
	fx_init(&x, 2, false);
	fx_slots(&x, acting, 2, NULL, 0);
	{
		static const struct copy whole = { .exists = true, .log = g_auth_log, .n = 6 };

		own_copy(&x, &whole);
	}
	answer(&x, 1, &none);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(osd__plan_slot(x.pg, 1, auth), 0);
	ck_assert(!x.pg->peer[1].backfill);
	ck_assert_uint_eq(x.pg->peer[1].noids, 6);
	fx_fini(&x);
}

END_TEST

/* A copy as new as ours that still lacks objects of an earlier recovery. */
START_TEST(test_missing_partial)
{
	static const char *const miss[] = { "q", "r" };
	static const struct copy mine = { .exists = true, .log = g_auth_log, .n = 6 };
	static const struct copy partial = {
		.exists = true, .log = g_auth_log, .n = 6, .missing = miss, .nmissing = 2
	};
	struct fx x;
	int32_t acting[] = { 0, 1 };
	int auth;

	fx_init(&x, 2, false);
	fx_slots(&x, acting, 2, NULL, 0);
	own_copy(&x, &mine);
	answer(&x, 1, &partial);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(auth, 0);
	ck_assert_int_eq(osd__plan_slot(x.pg, 1, auth), 0);
	ck_assert_int_eq(x.pg->peer[1].step, OSD_REC_ADOPT);
	ck_assert_uint_eq(x.pg->peer[1].noids, 2);
	ck_assert(has_oid(&x.pg->peer[1], "q") && has_oid(&x.pg->peer[1], "r"));
	fx_fini(&x);
}

END_TEST

/* ---------- EC rollback ---------- */

START_TEST(test_ec_rollback_unacked)
{
	static const struct ent base[] = { { .e = 10, .s = 1, .oid = "a" },
					   { .e = 10, .s = 2, .oid = "b" } };
	static const struct ent ahead[] = { { .e = 10, .s = 1, .oid = "a" },
					    { .e = 10, .s = 2, .oid = "b" },
					    { .e = 10,
					      .s = 3,
					      .oid = "c",
					      .undo = OSD_UNDO_STASH,
					      .sent = { 1, 2, 3 },
					      .nsent = 3 } };
	static const struct copy s0 = { .exists = true, .log = base, .n = 2, .label = 1 };
	static const struct copy s1 = { .exists = true, .log = ahead, .n = 3, .label = 2 };
	static const struct copy s2 = { .exists = true, .log = base, .n = 2, .label = 3 };
	struct fx x;
	int32_t acting[] = { 0, 1, 2 };
	int auth;

	fx_init(&x, 3, true);
	fx_slots(&x, acting, 3, NULL, 0);
	own_copy(&x, &s0);
	answer(&x, 1, &s1);
	answer(&x, 2, &s2);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(auth, 0); /* 10.3 is on one shard of the three */
	ck_assert_int_eq(osd__plan_slot(x.pg, 1, auth), 0);
	/* osd.0 and osd.2 were sent 10.3's shards and lack them: never
	 * acknowledged (an acknowledged write is on every shard it was sent
	 * to), so osd.1 undoes it */
	ck_assert(x.pg->peer[1].rollback);
	ck_assert_uint_eq(x.pg->peer[1].rollback_to.epoch, 10);
	ck_assert_uint_eq(x.pg->peer[1].rollback_to.seq, 2);
	ck_assert_uint_eq(x.pg->peer[1].noids, 0); /* nothing to rebuild */
	ck_assert_int_eq(x.pg->peer[1].step, OSD_REC_ADOPT);
	fx_fini(&x);
}

END_TEST

START_TEST(test_ec_rollback_maybe_acked)
{
	static const struct ent base[] = { { .e = 10, .s = 1, .oid = "a" },
					   { .e = 10, .s = 2, .oid = "b" } };
	/* 10.3 went to shards 1 and 2 only (osd.1, osd.2): osd.2 does not answer */
	static const struct ent ahead[] = { { .e = 10, .s = 1, .oid = "a" },
					    { .e = 10, .s = 2, .oid = "b" },
					    { .e = 10,
					      .s = 3,
					      .oid = "c",
					      .undo = OSD_UNDO_STASH,
					      .sent = { 0, 2, 3 },
					      .nsent = 3 } };
	static const struct ent noundo[] = { { .e = 10, .s = 1, .oid = "a" },
					     { .e = 10, .s = 2, .oid = "b" },
					     { .e = 10,
					       .s = 3,
					       .oid = "c",
					       .undo = OSD_UNDO_NONE,
					       .sent = { 1, 2, 3 },
					       .nsent = 3 } };
	static const struct copy s0 = { .exists = true, .log = base, .n = 2, .label = 1 };
	static const struct copy s1 = { .exists = true, .log = ahead, .n = 3, .label = 2 };
	static const struct copy s1n = { .exists = true, .log = noundo, .n = 3, .label = 2 };
	static const struct copy s2 = { .exists = true, .log = base, .n = 2, .label = 3 };
	struct fx x;
	int32_t acting[] = { 0, 1, 2 };
	int auth;

	fx_init(&x, 3, true);
	fx_slots(&x, acting, 3, NULL, 0);
	own_copy(&x, &s0);
	answer(&x, 1, &s1);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(osd__plan_slot(x.pg, 1, auth), -EAGAIN);
	/* osd.2 answers: it lacks 10.3, which therefore was never acknowledged */
	answer(&x, 2, &s2);
	ck_assert_int_eq(osd__plan_slot(x.pg, 1, auth), 0);
	ck_assert(x.pg->peer[1].rollback);
	fx_fini(&x);

	/* An entry that cannot be undone: its object is rebuilt instead. */
	fx_init(&x, 3, true);
	fx_slots(&x, acting, 3, NULL, 0);
	own_copy(&x, &s0);
	answer(&x, 1, &s1n);
	answer(&x, 2, &s2);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(osd__plan_slot(x.pg, 1, auth), 0);
	ck_assert(!x.pg->peer[1].rollback);
	ck_assert_uint_eq(x.pg->peer[1].noids, 1);
	ck_assert_str_eq(x.pg->peer[1].oids[0], "c");
	fx_fini(&x);
}

END_TEST

/* ---------- past intervals (maps arriving on the fake reactor) ---------- */

struct map_step {
	struct fx *x;
	uint64_t epoch;
	int32_t a[4];
	int n;
};

static void
map_arrives(struct cm_test_fake *f, void *arg)
{
	struct map_step *m = arg;
	bool fresh;
	struct osd_pga *pga = osd__pga_get(&m->x->o, POOL, 0, &fresh);

	(void)f;
	ck_assert_ptr_nonnull(pga);
	pga->known = true;
	osd__pga_note(pga, m->epoch, m->a, m->n, m->n >= 2);
}

/* Maps: 5 [0,1,2], 8 [3,4] (may have taken writes), 12 [0,1,2] (now). */
static void
past_maps(struct fx *x, struct map_step *st)
{
	st[0] = (struct map_step){ x, 5, { 0, 1, 2 }, 3 };
	st[1] = (struct map_step){ x, 8, { 3, 4 }, 2 };
	st[2] = (struct map_step){ x, 12, { 0, 1, 2 }, 3 };
	for (int i = 0; i < 3; i++)
		cm_test_fake_at(x->f, T0 + 1000 * (uint64_t)(i + 1), map_arrives, &st[i]);
	ck_assert_uint_eq(cm_test_fake_run_until(x->f, T0 + 5000), 3);
	x->pg->last_epoch_started = 4;
}

START_TEST(test_past_interval_must_be_heard)
{
	static const struct ent log[] = { { .e = 10, .s = 1, .oid = "a" } };
	static const struct copy mine = { .exists = true, .log = log, .n = 1, .les = 4 };
	static const struct copy with = { .exists = true, .log = log, .n = 1, .les = 8 };
	static const struct copy none = { .exists = false };
	struct map_step st[3];
	struct fx x;
	int32_t acting[] = { 0, 1, 2 }, more[] = { 3, 4 };
	int auth;

	fx_init(&x, 5, false);
	fx_slots(&x, acting, 3, more, 2);
	past_maps(&x, st);
	own_copy(&x, &mine);
	answer(&x, 1, &mine);
	answer(&x, 2, &mine);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_WAIT_PAST); /* nobody of [3,4] */
	answer(&x, 4, &none);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_WAIT_PAST); /* osd.3 may have it */
	answer(&x, 3, &with);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	ck_assert_int_eq(auth, 0);
	fx_fini(&x);
}

END_TEST

/* Every OSD of the interval answered and none started the PG in it: it took no writes. */
START_TEST(test_past_interval_quiet)
{
	static const struct ent log[] = { { .e = 10, .s = 1, .oid = "a" } };
	static const struct copy mine = { .exists = true, .log = log, .n = 1, .les = 4 };
	static const struct copy none = { .exists = false };
	struct map_step st[3];
	struct fx x;
	int32_t acting[] = { 0, 1, 2 }, more[] = { 3, 4 };
	int auth;

	fx_init(&x, 5, false);
	fx_slots(&x, acting, 3, more, 2);
	past_maps(&x, st);
	own_copy(&x, &mine);
	answer(&x, 1, &mine);
	answer(&x, 2, &mine);
	answer(&x, 3, &none);
	answer(&x, 4, &none);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	fx_fini(&x);
}

END_TEST

/* Its OSDs removed from the map, or an interval a peer told of with an OSD not asked. */
START_TEST(test_past_interval_removed_or_unasked)
{
	static const struct ent log[] = { { .e = 10, .s = 1, .oid = "a" } };
	static const struct copy mine = { .exists = true, .log = log, .n = 1, .les = 4 };
	struct map_step st[3];
	struct fx x;
	int32_t acting[] = { 0, 1, 2 }, more[] = { 3 };
	int auth;

	fx_init(&x, 5, false);
	fx_slots(&x, acting, 3, NULL, 0);
	past_maps(&x, st);
	own_copy(&x, &mine);
	answer(&x, 1, &mine);
	answer(&x, 2, &mine);
	/* osd.3 and osd.4 are up and were never asked: ask again, with them */
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_AGAIN);
	x.map.n_osds = 3; /* both removed: their data was given up */
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_GO);
	fx_fini(&x);

	/* Asked, but down and silent: wait. */
	fx_init(&x, 5, false);
	fx_slots(&x, acting, 3, more, 1);
	past_maps(&x, st);
	x.mo[3].up = false;
	x.mo[4].up = false;
	own_copy(&x, &mine);
	answer(&x, 1, &mine);
	answer(&x, 2, &mine);
	ck_assert_int_eq(decide(&x, &auth), OSD_PEERING_WAIT_PAST);
	fx_fini(&x);
}

END_TEST

/*
 * Write versions: two changes built before either commits (an EC write that
 * read old stripes while another write of the PG committed) get distinct,
 * rising versions, and a version stays unique after peering in the same
 * epoch took the PG's last change back.
 */
START_TEST(test_write_versions_unique)
{
	struct fx x;
	struct osd_op a, b, c;

	fx_init(&x, 3, false);
	x.pg->state = OSD_PG_ACTIVE;
	x.pg->last_update = (struct osd_ver){ 20, 7 };
	memset(&a, 0, sizeof(a));
	a.osd = &x.o;
	a.pg = x.pg;
	b = a;
	c = a;
	ck_assert_int_eq(osd__op_tx_finish(&a, false), 0);
	ck_assert_int_eq(osd__op_tx_finish(&b, false), 0); /* a not committed yet */
	ck_assert_uint_eq(a.new_ver.epoch, 20);
	ck_assert_uint_eq(a.new_ver.seq, 8);
	ck_assert_uint_eq(b.new_ver.seq, 9);
	/* Peering in epoch 20 undid 20.8 and 20.9: the next is still new. */
	x.pg->last_update = (struct osd_ver){ 20, 7 };
	ck_assert_int_eq(osd__op_tx_finish(&c, false), 0);
	ck_assert_uint_eq(c.new_ver.seq, 10);
	/* A new epoch: its own versions, above the last change. */
	x.o.epoch = 21;
	x.pg->last_update = (struct osd_ver){ 20, 10 };
	free(c.txp);
	c.txp = NULL;
	ck_assert_int_eq(osd__op_tx_finish(&c, false), 0);
	ck_assert_uint_eq(c.new_ver.epoch, 21);
	ck_assert_uint_eq(c.new_ver.seq, 11);
	free(a.txp);
	free(b.txp);
	free(c.txp);
	fx_fini(&x);
}

END_TEST

/*
 * A source whose map lags learns of a primary's boot after the primary's
 * request: the request (its epoch at or after the boot) is the running
 * incarnation's and its job must stay (recovery_test's watchdog: dropped,
 * the primary waited 30 s); one from before the boot is the dead one's.
 */
START_TEST(test_request_of_current_incarnation)
{
	struct fx x;

	fx_init(&x, 3, false);
	x.mo[1].up_since = 30;
	ck_assert(osd__sent_by_current(&x.o, 1, 30));
	ck_assert(osd__sent_by_current(&x.o, 1, 31));
	ck_assert(!osd__sent_by_current(&x.o, 1, 29));
	x.mo[1].up = false;
	ck_assert(!osd__sent_by_current(&x.o, 1, 31));
	ck_assert(!osd__sent_by_current(&x.o, 7, 31)); /* not in the map */
	fx_fini(&x);
}

END_TEST

/* ---------- PG split: which PGs are children of which ---------- */

/* Does clearing high bits of c, one at a time, reach a (osd__split_child_waits' walk)? */
static bool
walk_reaches(uint32_t c, uint32_t a)
{
	while (c != a && c) {
		c &= ~(1u << (31 - __builtin_clz(c)));
	}
	return c == a;
}

START_TEST(test_split_children)
{
	static const uint32_t pairs[][2] = { { 8, 64 },    { 8, 32 },    { 12, 20 },
					     { 5, 7 },     { 1, 3 },     { 16, 17 },
					     { 100, 300 }, { 1, 65536 }, { 33, 4096 } };
	uint64_t st = 0x9e3779b97f4a7c15ull;

	for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
		uint32_t from = pairs[k][0], to = pairs[k][1];
		uint32_t *parents = calloc(to, sizeof(*parents));

		ck_assert_ptr_nonnull(parents);
		/* Every new seed has exactly one parent among the old ones, reached by
		 * clearing its high bits. */
		for (uint32_t c = from; c < to; c++) {
			unsigned n = 0;

			for (uint32_t p = 0; p < from; p++)
				if (osd__split_is_child(p, from, to, c)) {
					n++;
					parents[c] = p;
				}
			ck_assert_uint_eq(n, 1);
			ck_assert(walk_reaches(c, parents[c]));
			ck_assert(!osd__split_is_child(parents[c], from, to, parents[c]));
		}
		/* An object's PG after the split is its old PG or a child of it. */
		for (int i = 0; i < 20000; i++) {
			uint32_t h, p, c;

			st = st * 6364136223846793005ull + 1442695040888963407ull;
			h = (uint32_t)(st >> 32);
			p = crush_stable_mod(h, from, crush_pg_mask(from));
			c = crush_stable_mod(h, to, crush_pg_mask(to));
			ck_assert(c == p || osd__split_is_child(p, from, to, c));
			ck_assert(c == p || parents[c] == p);
		}
		free(parents);
	}
}

END_TEST

/*
 * The recovery watchdog measures from the plan's last sign of progress. A
 * tick reads the clock once, then starts plans (each stamped with a later
 * clock): such a plan is fresh, not 2^64 ms old (CI saw the watchdog fire on
 * a plan started a moment before in the same tick).
 */
START_TEST(test_rec_watchdog_measures_forward)
{
	struct fx x;
	static const int32_t acting[] = { 0, 1 };
	uint64_t now = 5000000;

	fx_init(&x, 3, false);
	fx_slots(&x, acting, 2, NULL, 0);
	x.pg->auth = 0;
	x.pg->rec_pending = 1;
	x.pg->peer[1].step = OSD_REC_LOG; /* waits for osd.1's log ack */

	x.pg->rec_seen_ms = now + 3; /* started after the tick read the clock */
	osd__rec_stalled(x.pg, now);
	ck_assert_uint_eq(x.o.rec_watchdog, 0);
	ck_assert_uint_eq(x.pg->rec_pending, 1);

	x.pg->rec_seen_ms = now - OSD_REC_STALL_MS + 1; /* not yet */
	osd__rec_stalled(x.pg, now);
	ck_assert_uint_eq(x.o.rec_watchdog, 0);

	x.pg->rec_seen_ms = now - OSD_REC_STALL_MS; /* silent for the whole time */
	osd__rec_stalled(x.pg, now);
	ck_assert_uint_eq(x.o.rec_watchdog, 1);
	ck_assert_uint_eq(x.pg->rec_pending, 0); /* started over */
	fx_fini(&x);
}

END_TEST

static Suite *
peering_suite(void)
{
	Suite *s = suite_create("peering");
	TCase *tc;

	tc = tcase_create("prior_set");
	tcase_add_test(tc, test_prior_set_active);
	tcase_add_test(tc, test_prior_set_kept_until_active);
	tcase_add_test(tc, test_decide_waits_for_prior);
	tcase_add_test(tc, test_decide_prior_removed);
	suite_add_tcase(s, tc);
	tc = tcase_create("authoritative");
	tcase_add_test(tc, test_auth_replicated_newest_complete);
	tcase_add_test(tc, test_auth_replicated_none);
	tcase_add_test(tc, test_auth_ec_kth_newest);
	suite_add_tcase(s, tc);
	tc = tcase_create("missing");
	tcase_add_test(tc, test_missing_log_based);
	tcase_add_test(tc, test_missing_divergent);
	tcase_add_test(tc, test_missing_backfill);
	tcase_add_test(tc, test_missing_partial);
	suite_add_tcase(s, tc);
	tc = tcase_create("ec_rollback");
	tcase_add_test(tc, test_ec_rollback_unacked);
	tcase_add_test(tc, test_ec_rollback_maybe_acked);
	suite_add_tcase(s, tc);
	tc = tcase_create("past_intervals");
	tcase_add_test(tc, test_past_interval_must_be_heard);
	tcase_add_test(tc, test_past_interval_quiet);
	tcase_add_test(tc, test_past_interval_removed_or_unasked);
	suite_add_tcase(s, tc);
	tc = tcase_create("writes");
	tcase_add_test(tc, test_write_versions_unique);
	tcase_add_test(tc, test_request_of_current_incarnation);
	suite_add_tcase(s, tc);
	tc = tcase_create("split");
	tcase_add_test(tc, test_split_children);
	tcase_add_test(tc, test_rec_watchdog_measures_forward);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return cm_test_main(peering_suite());
}
