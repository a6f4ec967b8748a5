/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The leader's down/out decisions (mon/src/leader.c) on virtual time: a
 * fake reactor plays OSDs that beacon every second and a leader whose tick
 * (every 100 ms) decides on the map and, tick_apply_ms later (the worker's
 * round), applies the decision to the map, which then comes back to it as
 * a new epoch (the watch). No etcd, sockets or threads: every time asserted
 * is exact, so a grace off by one tick fails.
 */
#include "mon/leader.h"
#include "mon/map_store.h"
#include "mon/osdmap.h"
#include "cm/log.h"
#include "fake_reactor.h"
#include "testlib.h"

#define T0      1000000 /* virtual start, ms */
#define TICK_MS 100
#define MAXOSD  16

struct sim {
	struct cm_test_fake *f;
	struct mon_leader *l;
	Cairn__Map__OsdMap *map;
	int nosd;
	bool beaconing[MAXOSD];
	uint64_t ops[MAXOSD];
	uint64_t down_at[MAXOSD], out_at[MAXOSD]; /* virtual ms the map changed; 0: not yet */
	uint64_t apply_ms;                        /* decision -> map edit (the worker's round) */
	bool busy;                                /* a decision is being applied */
	int host_of[MAXOSD];                      /* host index of each OSD (default: its id) */
	bool same_host;                           /* sim_start: every OSD on host0 */
	struct mon_leader_decision dec;
	unsigned ticks, applied;
};

static struct sim g;

static uint64_t
now_ms(void)
{
	return cm_test_fake_now_ms(g.f);
}

static uint64_t
now_ns(void)
{
	return cm_test_fake_now_ns(g.f);
}

static Cairn__Map__Osd *
osd(int id)
{
	Cairn__Map__Osd *o = mon_osd_find(g.map, id);

	ck_assert_ptr_nonnull(o);
	return o;
}

/* A change committed: the next epoch, seen by the leader as the watch would show it. */
static void
commit(void)
{
	g.map->epoch++;
	mon_leader_map(g.l, g.map, now_ns());
}

/* OSD id (new or known) boots: the map edit, the boot reply, then the new map. */
static void
boot(int id)
{
	char uuid[32], addr[32], host[32], err[MON_ERRLEN];
	struct mon_osd_boot b = { .id = -1, .uuid = uuid, .addr = addr, .host = host };
	int32_t got = -1;

	/* Each OSD on a host of its own, unless the test put some together. */
	snprintf(host, sizeof(host), "host%d", g.host_of[id]);
	snprintf(uuid, sizeof(uuid), "uuid-%d", id);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", 6800 + id);
	ck_assert_int_eq(mon_osd_boot(g.map, &b, &got, err), 0);
	ck_assert_int_eq(got, id);
	mon_leader_booted(g.l, got, now_ns());
	commit();
}

static void
lead(bool leader)
{
	struct mon_leader_round rd = { .leader = leader };

	snprintf(rd.leader_name, sizeof(rd.leader_name), "%s", leader ? "a" : "b");
	mon_leader_round_done(g.l, &rd, now_ns());
	ck_assert(mon_leader_is_leader(g.l) == leader);
}

static void
set_flag(uint64_t flag, bool on)
{
	if (on)
		g.map->flags |= flag;
	else
		g.map->flags &= ~flag;
	commit();
}

static void
beacon_ev(struct cm_test_fake *f, void *arg)
{
	int id = (int)(intptr_t)arg;
	Cairn__Mon__OsdBeacon *b;

	if (!g.beaconing[id])
		return;
	/* Beacons to a mon that does not lead are refused (NOT_LEADER). */
	if (mon_leader_is_leader(g.l)) {
		b = malloc(sizeof(*b));
		ck_assert_ptr_nonnull(b);
		cairn__mon__osd_beacon__init(b);
		b->osd_id = id;
		b->ops = g.ops[id];
		b->total_bytes = 1000;
		b->free_bytes = 600;
		if (mon_leader_beacon(g.l, b, now_ns()))
			cairn__mon__osd_beacon__free_unpacked(b, NULL);
	}
	ck_assert_int_eq(cm_test_fake_after(f, 1000, beacon_ev, arg), 0);
}

static void
apply_ev(struct cm_test_fake *f, void *arg)
{
	bool up[MAXOSD], in[MAXOSD];

	(void)f;
	(void)arg;
	for (int i = 0; i < g.nosd; i++) {
		up[i] = osd(i)->up;
		in[i] = osd(i)->in;
	}
	if (mon_leader_apply(g.l, &g.dec, g.map, now_ns())) {
		g.applied++;
		commit();
	}
	for (int i = 0; i < g.nosd; i++) {
		if (up[i] && !osd(i)->up)
			g.down_at[i] = now_ms();
		if (in[i] && !osd(i)->in)
			g.out_at[i] = now_ms();
	}
	mon_leader_decision_fini(&g.dec);
	g.busy = false;
}

/* The tick: the leader decides on the map it has; a worker applies it. */
static void
tick_ev(struct cm_test_fake *f, void *arg)
{
	g.ticks++;
	if (mon_leader_is_leader(g.l) && !g.busy) {
		ck_assert_int_eq(mon_leader_decide(g.l, g.map, now_ns(), &g.dec), 0);
		if (g.dec.ndown || g.dec.nout) {
			g.busy = true;
			ck_assert_int_eq(cm_test_fake_after(f, g.apply_ms, apply_ev, NULL), 0);
		} else {
			mon_leader_decision_fini(&g.dec);
		}
	}
	ck_assert_int_eq(cm_test_fake_after(f, TICK_MS, tick_ev, arg), 0);
}

static void
stop_ev(struct cm_test_fake *f, void *arg)
{
	(void)f;
	g.beaconing[(int)(intptr_t)arg] = false;
}

static void
boot_ev(struct cm_test_fake *f, void *arg)
{
	(void)f;
	boot((int)(intptr_t)arg);
}

/*
 * nosd OSDs booted at T0 (epochs 1..nosd), beaconing every second from T0,
 * a tick every 100 ms from T0; the mon leads from T0 when `leader`.
 */
static void
sim_start(const struct mon_leader_opts *o, int nosd, bool leader)
{
	struct mon_leader_opts def;

	{
		bool same = g.same_host;
		int hosts[MAXOSD];

		memcpy(hosts, g.host_of, sizeof(hosts));
		memset(&g, 0, sizeof(g));
		for (int i = 0; i < MAXOSD; i++)
			g.host_of[i] = same ? 0 : hosts[i] ? hosts[i] : i;
	}

	if (!o) {
		mon_leader_opts_init(&def, sizeof(def));
		o = &def;
	}
	ck_assert_int_eq(cm_test_fake_create(T0, &g.f), 0);
	ck_assert_int_eq(mon_leader_create(o, &g.l), 0);
	ck_assert_int_eq(mon_map_initial("fsid", &g.map), 0);
	g.map->epoch = 0;
	g.nosd = nosd;
	for (int i = 0; i < nosd; i++)
		boot(i);
	ck_assert_uint_eq(g.map->epoch, (uint64_t)nosd);
	if (leader)
		lead(true);
	for (int i = 0; i < nosd; i++) {
		g.beaconing[i] = true;
		ck_assert_int_eq(cm_test_fake_at(g.f, T0, beacon_ev, (void *)(intptr_t)i), 0);
	}
	ck_assert_int_eq(cm_test_fake_at(g.f, T0, tick_ev, NULL), 0);
}

static void
sim_end(void)
{
	mon_leader_decision_fini(&g.dec);
	mon_leader_destroy(g.l);
	cairn__map__osd_map__free_unpacked(g.map, NULL);
	cm_test_fake_destroy(g.f);
}

/* At virtual time at, OSD id stops beaconing (after a beacon due then). */
static void
stop_at(uint64_t at, int id)
{
	ck_assert_int_eq(cm_test_fake_at(g.f, at, stop_ev, (void *)(intptr_t)id), 0);
}

static void
run_to(uint64_t at)
{
	cm_test_fake_run_until(g.f, at);
}

static uint64_t g_report_up_since; /* target_up_since the next reports carry (0: unknown) */

static void
report(int reporter, int target, uint32_t failed_for_ms, bool alive, bool immediate)
{
	Cairn__Mon__OsdFailure f = CAIRN__MON__OSD_FAILURE__INIT;

	f.target_up_since = g_report_up_since;
	f.reporter = reporter;
	f.target = target;
	f.failed_for_ms = failed_for_ms;
	f.alive = alive;
	f.immediate = immediate;
	mon_leader_failure(g.l, &f, now_ns());
}

struct report_ev {
	int reporter, target;
	uint32_t failed_for_ms;
	bool alive, immediate;
};

static void
report_ev(struct cm_test_fake *f, void *arg)
{
	struct report_ev *r = arg;

	(void)f;
	/* Like beacons, reports to a mon that does not lead are refused. */
	if (mon_leader_is_leader(g.l))
		report(r->reporter, r->target, r->failed_for_ms, r->alive, r->immediate);
	free(r);
}

/*
 * A report at virtual time at. Scheduled before running, it comes before
 * the tick due at the same time (ticks are scheduled 100 ms ahead).
 */
static void
report_at(uint64_t at, int reporter, int target, uint32_t failed_for_ms, bool alive)
{
	struct report_ev *r = malloc(sizeof(*r));

	ck_assert_ptr_nonnull(r);
	*r = (struct report_ev){ reporter, target, failed_for_ms, alive, false };
	ck_assert_int_eq(cm_test_fake_at(g.f, at, report_ev, r), 0);
}

/* A report that the reporter's connection was refused (the process is gone). */
static void
refused_at(uint64_t at, int reporter, int target)
{
	struct report_ev *r = malloc(sizeof(*r));

	ck_assert_ptr_nonnull(r);
	*r = (struct report_ev){ reporter, target, 0, false, true };
	ck_assert_int_eq(cm_test_fake_at(g.f, at, report_ev, r), 0);
}

/* ---------- the fake reactor itself ---------- */

static char g_order[32];
static size_t g_norder;

static void
mark_ev(struct cm_test_fake *f, void *arg)
{
	g_order[g_norder++] = (char)(intptr_t)arg;
	if ((intptr_t)arg == 'b') /* scheduled now for now: runs after what is already due */
		cm_test_fake_at(f, cm_test_fake_now_ms(f), mark_ev, (void *)(intptr_t)'z');
}

START_TEST(test_fake_reactor_order)
{
	struct cm_test_fake *f;

	ck_assert_int_eq(cm_test_fake_create(500, &f), 0);
	ck_assert_uint_eq(cm_test_fake_now_ms(f), 500);
	ck_assert_uint_eq(cm_test_fake_now_ns(f), 500000000ull);
	cm_test_fake_at(f, 700, mark_ev, (void *)(intptr_t)'c');
	cm_test_fake_at(f, 600, mark_ev, (void *)(intptr_t)'a');
	cm_test_fake_at(f, 600, mark_ev, (void *)(intptr_t)'b');
	cm_test_fake_at(f, 600, mark_ev, (void *)(intptr_t)'y');
	cm_test_fake_after(f, 100, mark_ev, (void *)(intptr_t)'x'); /* 600, last of the four */
	ck_assert_uint_eq(cm_test_fake_run_until(f, 599), 0);
	ck_assert_uint_eq(cm_test_fake_now_ms(f), 599);
	ck_assert_uint_eq(cm_test_fake_run_until(f, 600), 5);
	ck_assert_uint_eq(cm_test_fake_now_ms(f), 600);
	ck_assert_uint_eq(cm_test_fake_pending(f), 1);
	ck_assert_uint_eq(cm_test_fake_run_until(f, 10000), 1);
	ck_assert_uint_eq(cm_test_fake_now_ms(f), 10000);
	g_order[g_norder] = 0;
	ck_assert_str_eq(g_order, "abyxzc");
	/* The past runs now, and time never goes back. */
	cm_test_fake_at(f, 5, mark_ev, (void *)(intptr_t)'p');
	ck_assert_uint_eq(cm_test_fake_run_until(f, 10), 1);
	ck_assert_uint_eq(cm_test_fake_now_ms(f), 10000);
	cm_test_fake_destroy(f);
}

END_TEST

START_TEST(test_opts_defaults)
{
	struct mon_leader_opts o;
	struct mon_leader *l;

	mon_leader_opts_init(&o, sizeof(o));
	ck_assert_uint_eq(o.osd_grace_ms, 20000);
	ck_assert_uint_eq(o.report_grace_ms, 0);
	ck_assert_uint_eq(o.down_out_ms, 600000);
	ck_assert_uint_eq(o.min_reporters, 2);
	ck_assert_uint_eq(o.lease_ttl_ms, 10000);
	ck_assert_int_eq(MON_LEADER_MAX_REPORTS, 8);
	o.min_reporters = 0;
	ck_assert_int_eq(mon_leader_create(&o, &l), -EINVAL);
	o.min_reporters = 2;
	o.osd_grace_ms = 0;
	ck_assert_int_eq(mon_leader_create(&o, &l), -EINVAL);
	ck_assert_int_eq(mon_leader_create(NULL, &l), -EINVAL);
	mon_leader_destroy(NULL);
}

END_TEST

/* ---------- beacons ---------- */

START_TEST(test_decide_beacon_grace)
{
	sim_start(NULL, 4, true);
	/* osd.3 (up since the newest epoch the decisions see) beacons last at T0+10s. */
	stop_at(T0 + 10500, 3);
	run_to(T0 + 29999);
	for (int i = 0; i < 4; i++)
		ck_assert_msg(osd(i)->up, "osd.%d down at %" PRIu64, i, g.down_at[i]);
	run_to(T0 + 30000);
	ck_assert(!osd(3)->up);
	ck_assert_uint_eq(g.down_at[3], T0 + 30000); /* its last beacon is exactly osd_grace old */
	ck_assert_uint_eq(osd(3)->down_stamp_ns, (T0 + 30000) * 1000000ull);
	ck_assert(osd(3)->in);
	/* The others go on beaconing and stay up. */
	run_to(T0 + 100000);
	for (int i = 0; i < 3; i++)
		ck_assert(osd(i)->up);
	ck_assert_uint_eq(g.applied, 1);
	ck_assert_uint_ge(g.ticks, 1000);
	sim_end();
}

END_TEST

START_TEST(test_decide_beacon_grace_option)
{
	struct mon_leader_opts o;

	mon_leader_opts_init(&o, sizeof(o));
	o.osd_grace_ms = 3500;
	sim_start(&o, 3, true);
	stop_at(T0 + 2500, 1);
	run_to(T0 + 5400);
	ck_assert(osd(1)->up);
	run_to(T0 + 5500);
	ck_assert_uint_eq(g.down_at[1], T0 + 5500);
	ck_assert(osd(0)->up && osd(2)->up);
	sim_end();
}

END_TEST

START_TEST(test_decide_not_leader)
{
	sim_start(NULL, 3, false);
	g.beaconing[1] = false;
	run_to(T0 + 100000);
	ck_assert(osd(1)->up); /* only the leader decides */
	ck_assert_uint_eq(g.applied, 0);
	sim_end();
}

END_TEST

/* ---------- failure reports ---------- */

START_TEST(test_failure_min_reporters)
{
	sim_start(NULL, 5, true);
	/* Already failed for osd_grace: one reporter is not enough, nor reports about oneself. */
	report_at(T0 + 5000, 0, 4, 20000, false);
	report_at(T0 + 5000, 4, 4, 20000, false);
	report_at(T0 + 6000, 0, 4, 20000, false); /* the same reporter again */
	report_at(T0 + 8000, 1, 4, 20000, false);
	run_to(T0 + 7999);
	ck_assert(osd(4)->up);
	run_to(T0 + 8000);
	ck_assert_uint_eq(g.down_at[4], T0 + 8000);
	for (int i = 0; i < 4; i++)
		ck_assert(osd(i)->up);
	sim_end();
}

END_TEST

START_TEST(test_failure_min_reporters_option)
{
	struct mon_leader_opts o;

	mon_leader_opts_init(&o, sizeof(o));
	o.min_reporters = 1;
	sim_start(&o, 3, true);
	report_at(T0 + 5000, 0, 2, 20000, false);
	run_to(T0 + 5000);
	ck_assert_uint_eq(g.down_at[2], T0 + 5000);
	sim_end();
	/* Three needed, two report. */
	o.min_reporters = 3;
	sim_start(&o, 4, true);
	report_at(T0 + 5000, 0, 3, 20000, false);
	report_at(T0 + 5000, 1, 3, 20000, false);
	report_at(T0 + 15100, 2, 3, 20000, false);
	run_to(T0 + 15000);
	ck_assert(osd(3)->up);
	run_to(T0 + 15100);
	ck_assert_uint_eq(g.down_at[3], T0 + 15100);
	sim_end();
}

END_TEST

START_TEST(test_failure_report_grace)
{
	struct mon_leader_opts o;

	/* Default (0): a report counts at once (the reporter waited its own
	 * heartbeat grace before sending it): down with the second reporter. */
	sim_start(NULL, 3, true);
	report_at(T0 + 5000, 0, 2, 0, false);
	report_at(T0 + 6000, 1, 2, 0, false);
	run_to(T0 + 5900);
	ck_assert(osd(2)->up);
	run_to(T0 + 6000);
	ck_assert_uint_eq(g.down_at[2], T0 + 6000);
	sim_end();

	mon_leader_opts_init(&o, sizeof(o));
	o.report_grace_ms = 5000;
	sim_start(&o, 3, true);
	report_at(T0 + 5000, 0, 2, 0, false);
	report_at(T0 + 5000, 1, 2, 1000, false);
	run_to(T0 + 9900);
	ck_assert(osd(2)->up);
	run_to(T0 + 10000);
	ck_assert_uint_eq(g.down_at[2], T0 + 10000);
	sim_end();
}

END_TEST

START_TEST(test_failure_stale_ignored)
{
	struct mon_leader_opts o;

	mon_leader_opts_init(&o, sizeof(o));
	o.report_grace_ms = 1000; /* fresh for 2 * max(1 s, 10 s) = 20 s */
	sim_start(&o, 4, true);
	report_at(T0 + 5000, 0, 2, 5000, false);
	report_at(T0 + 25000, 1, 2, 5000, false); /* the first is 20 s old: stale */
	report_at(T0 + 5000, 0, 3, 5000, false);
	report_at(T0 + 24900, 1, 3, 5000, false); /* the first is 19.9 s old: fresh */
	/* A report again refreshes it (the failure is still dated from its first). */
	report_at(T0 + 30000, 0, 2, 0, false);
	run_to(T0 + 24900);
	ck_assert_uint_eq(g.down_at[3], T0 + 24900);
	run_to(T0 + 29999);
	ck_assert(osd(2)->up);
	run_to(T0 + 30000);
	ck_assert_uint_eq(g.down_at[2], T0 + 30000);
	sim_end();

	/* A report grace over 10 s stretches freshness: 2 * 15 s. */
	o.report_grace_ms = 15000;
	sim_start(&o, 4, true);
	report_at(T0 + 1000, 0, 2, 15000, false);
	report_at(T0 + 31000, 1, 2, 15000, false); /* 30 s: stale */
	report_at(T0 + 1000, 0, 3, 15000, false);
	report_at(T0 + 30900, 1, 3, 15000, false); /* 29.9 s: fresh */
	run_to(T0 + 40000);
	ck_assert_uint_eq(g.down_at[3], T0 + 30900);
	ck_assert(osd(2)->up);
	sim_end();
}

END_TEST

START_TEST(test_failure_alive_withdraws)
{
	struct mon_leader_opts o;

	mon_leader_opts_init(&o, sizeof(o));
	o.report_grace_ms = 5000;
	sim_start(&o, 3, true);
	report_at(T0 + 1000, 0, 2, 0, false);
	report_at(T0 + 1000, 1, 2, 0, false);
	report_at(T0 + 3000, 0, 2, 0, true); /* osd.0 hears osd.2 again */
	/* Reported again: a new failure, dated from then, not from the withdrawn one. */
	report_at(T0 + 8000, 0, 2, 0, false);
	run_to(T0 + 8000);
	ck_assert(osd(2)->up);
	run_to(T0 + 12900);
	ck_assert(osd(2)->up);
	run_to(T0 + 13000);
	ck_assert_uint_eq(g.down_at[2], T0 + 13000);
	ck_assert(!osd(2)->dead); /* silence: it may still run (and hold a read lease) */
	sim_end();
}

END_TEST

START_TEST(test_failure_max_reporters)
{
	struct mon_leader_opts o;

	mon_leader_opts_init(&o, sizeof(o));
	o.min_reporters = 9; /* more than the 8 reports kept */
	sim_start(&o, 10, true);
	for (int i = 0; i < 9; i++)
		report_at(T0 + 1000, i, 9, 20000, false);
	run_to(T0 + 15000);
	ck_assert(osd(9)->up);
	sim_end();

	o.min_reporters = 8;
	sim_start(&o, 10, true);
	for (int i = 0; i < 8; i++)
		report_at(T0 + 1000, i, 9, 20000, false);
	run_to(T0 + 1000);
	ck_assert_uint_eq(g.down_at[9], T0 + 1000);
	sim_end();
}

END_TEST

/* Refused connections count at once, whatever the report grace. */
START_TEST(test_failure_refused_immediate)
{
	struct mon_leader_opts o;

	mon_leader_opts_init(&o, sizeof(o));
	o.report_grace_ms = 15000;
	sim_start(&o, 3, true);
	refused_at(T0 + 5000, 0, 2);
	report_at(T0 + 5000, 1, 2, 0, false); /* an ordinary report waits for its grace */
	run_to(T0 + 19900);
	ck_assert(osd(2)->up);
	run_to(T0 + 20000);
	ck_assert_uint_eq(g.down_at[2], T0 + 20000);
	ck_assert(osd(2)->dead); /* a refused connection: its process is gone */
	sim_end();

	sim_start(&o, 3, true);
	refused_at(T0 + 5000, 0, 2);
	refused_at(T0 + 5200, 1, 2);
	run_to(T0 + 5100);
	ck_assert(osd(2)->up); /* one of two hosts */
	run_to(T0 + 5200);
	ck_assert_uint_eq(g.down_at[2], T0 + 5200);
	sim_end();
}

END_TEST

/*
 * A refused connection reported by a peer whose map still showed the old
 * incarnation arrives after the OSD booted again: it says nothing of the
 * new process, which stays up; reports on the new incarnation count.
 */
START_TEST(test_failure_old_incarnation)
{
	uint64_t old;

	sim_start(NULL, 3, true);
	old = osd(2)->up_since;
	g_report_up_since = old;
	refused_at(T0 + 5000, 0, 2);
	refused_at(T0 + 5000, 1, 2);
	run_to(T0 + 5500);
	ck_assert(!osd(2)->up);
	ck_assert(osd(2)->dead);
	boot(2);
	ck_assert(!osd(2)->dead);
	ck_assert_uint_gt(osd(2)->up_since, old);
	refused_at(T0 + 6000, 0, 2); /* late: still about the old process */
	refused_at(T0 + 6000, 1, 2);
	run_to(T0 + 8000);
	ck_assert(osd(2)->up);
	g_report_up_since = osd(2)->up_since;
	refused_at(T0 + 8000, 0, 2);
	refused_at(T0 + 8000, 1, 2);
	run_to(T0 + 8500);
	ck_assert(!osd(2)->up);
	g_report_up_since = 0;
	sim_end();
}

END_TEST

/* Reporters count by host: two OSDs of one host are one reporter. */
START_TEST(test_failure_reporter_hosts)
{
	g.host_of[0] = 5; /* osd.0 and osd.1 share host5 */
	g.host_of[1] = 5;
	sim_start(NULL, 4, true);
	report_at(T0 + 5000, 0, 3, 0, false);
	report_at(T0 + 5000, 1, 3, 0, false);
	report_at(T0 + 9000, 2, 3, 0, false); /* a second host */
	run_to(T0 + 8900);
	ck_assert(osd(3)->up);
	run_to(T0 + 9000);
	ck_assert_uint_eq(g.down_at[3], T0 + 9000);
	sim_end();
}

END_TEST

/* A cluster with fewer hosts than min_reporters: one reporter per other host suffices. */
START_TEST(test_failure_fewer_hosts)
{
	/* Every OSD on one host: one reporter. */
	g.same_host = true;
	sim_start(NULL, 3, true);
	report_at(T0 + 5000, 0, 2, 0, false);
	run_to(T0 + 5000);
	ck_assert_uint_eq(g.down_at[2], T0 + 5000);
	sim_end();

	/* Two hosts, the target alone on one: one reporter from the other. */
	g.host_of[0] = 7;
	g.host_of[1] = 7;
	g.host_of[2] = 8;
	sim_start(NULL, 3, true);
	report_at(T0 + 5000, 0, 2, 0, false);
	run_to(T0 + 5000);
	ck_assert_uint_eq(g.down_at[2], T0 + 5000);
	sim_end();

	/* Three hosts: two are needed, until osd.1 is down (one other host is up). */
	g.host_of[0] = g.host_of[1] = g.host_of[2] = 0;
	sim_start(NULL, 3, true);
	report_at(T0 + 5000, 0, 2, 0, false);
	run_to(T0 + 5000);
	ck_assert(osd(2)->up);
	g.beaconing[1] = false;
	osd(1)->up = false;
	commit();
	run_to(T0 + 5100);
	ck_assert_uint_eq(g.down_at[2], T0 + 5100);
	sim_end();
}

END_TEST

/* ---------- out ---------- */

START_TEST(test_decide_down_out)
{
	sim_start(NULL, 3, true);
	stop_at(T0 + 500, 1); /* last beacon T0: down at T0+20s */
	run_to(T0 + 20000);
	ck_assert_uint_eq(g.down_at[1], T0 + 20000);
	run_to(T0 + 20000 + 599900);
	ck_assert(osd(1)->in);
	run_to(T0 + 20000 + 600000);
	ck_assert(!osd(1)->in);
	ck_assert_uint_eq(g.out_at[1], T0 + 620000);
	ck_assert_uint_eq(osd(1)->reweight, 0);
	ck_assert(osd(0)->in && osd(2)->in);
	sim_end();
}

END_TEST

START_TEST(test_decide_noout)
{
	struct mon_leader_opts o;

	mon_leader_opts_init(&o, sizeof(o));
	o.down_out_ms = 60000;
	sim_start(&o, 3, true);
	set_flag(MON_FLAG_NOOUT, true);
	stop_at(T0 + 500, 1);
	run_to(T0 + 200000);
	ck_assert_uint_eq(g.down_at[1], T0 + 20000);
	ck_assert(osd(1)->in);
	set_flag(MON_FLAG_NOOUT, false); /* the clock kept running: out at the next tick */
	run_to(T0 + 200000);
	ck_assert(osd(1)->in);
	run_to(T0 + 200100);
	ck_assert_uint_eq(g.out_at[1], T0 + 200100);
	sim_end();
}

END_TEST

/* ---------- nodown, and the edit's re-check ---------- */

START_TEST(test_decide_nodown)
{
	sim_start(NULL, 3, true);
	set_flag(MON_FLAG_NODOWN, true);
	stop_at(T0 + 500, 2);
	report_at(T0 + 1000, 0, 1, 30000, false);
	report_at(T0 + 1000, 2, 1, 30000, false);
	run_to(T0 + 60000);
	ck_assert(osd(1)->up && osd(2)->up);
	ck_assert_uint_eq(g.applied, 0);
	set_flag(MON_FLAG_NODOWN, false);
	run_to(T0 + 60000);
	ck_assert(osd(2)->up);
	run_to(T0 + 60100);
	ck_assert_uint_eq(g.down_at[2], T0 + 60100);
	ck_assert(osd(1)->up); /* the reports were 59 s old: stale */
	sim_end();
}

END_TEST

START_TEST(test_apply_rebooted_after_decision)
{
	sim_start(NULL, 3, true);
	g.apply_ms = 50;
	stop_at(T0 + 500, 2);
	/* Decided at T0+20s on epoch 3; osd.2 reboots before the edit runs at +50 ms. */
	ck_assert_int_eq(cm_test_fake_at(g.f, T0 + 20020, boot_ev, (void *)(intptr_t)2), 0);
	run_to(T0 + 20049);
	ck_assert_uint_eq(osd(2)->up_since, 4);
	run_to(T0 + 20050);
	ck_assert(osd(2)->up);
	ck_assert_uint_eq(g.applied, 0);
	/* Its boot gave it a fresh grace; still silent, it goes down after that. */
	run_to(T0 + 40100);
	ck_assert(osd(2)->up);
	run_to(T0 + 40150);
	ck_assert_uint_eq(g.down_at[2], T0 + 40150);
	sim_end();
}

END_TEST

START_TEST(test_apply_epoch_check)
{
	struct mon_leader_decision d = { 0 };
	int32_t down[1] = { 1 };
	struct mon_leader_opts o;

	mon_leader_opts_init(&o, sizeof(o));
	sim_start(&o, 3, true);
	/* osd.1 came up at epoch 2: a decision made on epoch 1 must not take it down, on 2 it may.
	 */
	d.down = down;
	d.ndown = 1;
	d.epoch = 1;
	ck_assert_uint_eq(mon_leader_apply(g.l, &d, g.map, now_ns()), 0);
	ck_assert(osd(1)->up);
	d.epoch = 2;
	ck_assert_uint_eq(mon_leader_apply(g.l, &d, g.map, now_ns()), 1);
	ck_assert(!osd(1)->up);
	ck_assert_uint_eq(mon_leader_apply(g.l, &d, g.map, now_ns()), 0); /* already down */
	/* Out: the edit checks the interval itself (the OSD may have gone down again since). */
	d.ndown = 0;
	d.out = down;
	d.nout = 1;
	ck_assert_uint_eq(mon_leader_apply(g.l, &d, g.map, now_ns() + 599999ull * 1000000), 0);
	ck_assert(osd(1)->in);
	ck_assert_uint_eq(mon_leader_apply(g.l, &d, g.map, now_ns() + 600000ull * 1000000), 1);
	ck_assert(!osd(1)->in);
	sim_end();
}

END_TEST

/* The leader drops blocklist entries whose time is over (its wall clock), only those. */
START_TEST(test_blocklist_expiry)
{
	struct mon_leader_decision d = { 0 };
	char err[MON_ERRLEN];

	sim_start(NULL, 3, true);
	ck_assert_int_eq(mon_blocklist_add(g.map, "client.old", 1000, err), 0);
	ck_assert_int_eq(mon_blocklist_add(g.map, "client.new", 5000, err), 0);
	ck_assert_int_eq(mon_blocklist_add(g.map, "client.ever", 0, err), 0);
	mon_leader_decide_expiry(&d, g.map, 999);
	ck_assert_uint_eq(d.nexpire, 0);
	mon_leader_decide_expiry(&d, g.map, 2000);
	ck_assert_uint_eq(d.nexpire, 1);
	/* renewed between the decision and the edit: it stays */
	ck_assert_int_eq(mon_blocklist_add(g.map, "client.old", 3000, err), 0);
	ck_assert_uint_eq(mon_leader_apply(g.l, &d, g.map, now_ns()), 0);
	ck_assert(mon_blocklisted(g.map, "client.old"));
	mon_leader_decide_expiry(&d, g.map, 4000);
	ck_assert_uint_eq(mon_leader_apply(g.l, &d, g.map, now_ns()), 1);
	ck_assert(!mon_blocklisted(g.map, "client.old"));
	ck_assert(mon_blocklisted(g.map, "client.new") && mon_blocklisted(g.map, "client.ever"));
	sim_end();
}

END_TEST

/* ---------- boot and new leader ---------- */

START_TEST(test_boot_resets_grace)
{
	sim_start(NULL, 3, true);
	stop_at(T0 + 500, 1); /* last beacon T0 */
	report_at(T0 + 1000, 0, 1, 0, false);
	/* It boots again (still up in the map, so only the boot resets it) and stays silent. */
	ck_assert_int_eq(cm_test_fake_at(g.f, T0 + 15000, boot_ev, (void *)(intptr_t)1), 0);
	report_at(T0 + 15000, 2, 1, 20000, false);
	run_to(T0 + 34900);
	ck_assert(osd(1)->up); /* osd.0's report went with the boot: osd.2's alone is not enough */
	run_to(T0 + 35000);
	ck_assert_uint_eq(g.down_at[1], T0 + 35000);
	sim_end();
}

END_TEST

START_TEST(test_new_leader_fresh_grace)
{
	sim_start(NULL, 3, false);
	g.beaconing[2] = false; /* silent since its boot at T0 */
	run_to(T0 + 15000);
	lead(true); /* its beacons may have gone to the old leader: 20 s from now */
	run_to(T0 + 34900);
	ck_assert(osd(2)->up);
	run_to(T0 + 35000);
	ck_assert_uint_eq(g.down_at[2], T0 + 35000);
	ck_assert(osd(0)->up && osd(1)->up);
	/* Leadership lost: no more decisions. */
	g.beaconing[0] = false;
	lead(false);
	ck_assert_str_eq(mon_leader_name(g.l), "b");
	run_to(T0 + 100000);
	ck_assert(osd(0)->up);
	sim_end();
}

END_TEST

START_TEST(test_new_leader_drops_reports)
{
	struct mon_leader_opts o;

	mon_leader_opts_init(&o, sizeof(o));
	o.report_grace_ms = 15000;
	sim_start(&o, 3, true);
	report_at(T0 + 1000, 0, 2, 0, false);
	report_at(T0 + 1000, 1, 2, 0, false); /* both count from T0+16s */
	run_to(T0 + 10000);
	lead(false);
	run_to(T0 + 12000);
	lead(true); /* leading again: what it heard before is gone */
	run_to(T0 + 60000);
	ck_assert(osd(2)->up);
	ck_assert_uint_eq(g.applied, 0);
	sim_end();
}

END_TEST

START_TEST(test_map_up_resets_grace)
{
	sim_start(NULL, 3, true);
	stop_at(T0 + 500, 1);
	run_to(T0 + 20000);
	ck_assert_uint_eq(g.down_at[1], T0 + 20000);
	/* Marked up again by a map (not a boot this mon answered): grace from that map. */
	run_to(T0 + 30000);
	osd(1)->up = true;
	osd(1)->up_since = g.map->epoch + 1;
	commit();
	run_to(T0 + 49900);
	ck_assert(osd(1)->up);
	run_to(T0 + 50000);
	ck_assert_uint_eq(g.down_at[1], T0 + 50000);
	sim_end();
}

END_TEST

/* ---------- status ---------- */

START_TEST(test_stats_rates)
{
	struct mon_stats st;

	sim_start(NULL, 2, true);
	g.ops[0] = 100;
	run_to(T0); /* beacons at T0 */
	g.ops[0] = 300;
	run_to(T0 + 1000);
	mon_leader_stats(g.l, g.map, &st);
	ck_assert(st.valid);
	ck_assert_uint_eq(st.osds, 2);
	ck_assert_uint_eq(st.total_bytes, 2000);
	ck_assert_uint_eq(st.free_bytes, 1200);
	ck_assert_double_eq_tol(st.op_rate, 200.0, 1e-9);
	mon_stats_free(&st);
	/* Rates are per second of the time between the two beacons (2 s here: 400 ops). */
	g.ops[0] = 700;
	cm_test_fake_at(g.f, T0 + 3000, beacon_ev, (void *)(intptr_t)0);
	g.beaconing[0] = false;
	run_to(T0 + 2999);
	g.beaconing[0] = true;
	run_to(T0 + 3000);
	mon_leader_stats(g.l, g.map, &st);
	ck_assert_double_eq_tol(st.op_rate, 200.0, 1e-9);
	mon_stats_free(&st);
	/* osd.0 restarted (counters went back): no rate, not a negative one. */
	g.ops[0] = 5;
	run_to(T0 + 4000);
	mon_leader_stats(g.l, g.map, &st);
	ck_assert_double_eq_tol(st.op_rate, 0.0, 1e-9);
	mon_stats_free(&st);
	/* Down OSDs do not count. */
	g.beaconing[1] = false;
	run_to(T0 + 40000);
	ck_assert(!osd(1)->up);
	mon_leader_stats(g.l, g.map, &st);
	ck_assert_uint_eq(st.osds, 1);
	mon_stats_free(&st);
	sim_end();
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("leader");

	struct {
		const char *name;
		const TTest *t;
	} cases[] = {
		{ "fake_reactor", test_fake_reactor_order },
		{ "opts", test_opts_defaults },
		{ "beacon_grace", test_decide_beacon_grace },
		{ "beacon_grace_option", test_decide_beacon_grace_option },
		{ "not_leader", test_decide_not_leader },
		{ "min_reporters", test_failure_min_reporters },
		{ "min_reporters_option", test_failure_min_reporters_option },
		{ "report_grace", test_failure_report_grace },
		{ "refused_immediate", test_failure_refused_immediate },
		{ "old_incarnation", test_failure_old_incarnation },
		{ "reporter_hosts", test_failure_reporter_hosts },
		{ "fewer_hosts", test_failure_fewer_hosts },
		{ "stale_reports", test_failure_stale_ignored },
		{ "alive_withdraws", test_failure_alive_withdraws },
		{ "max_reporters", test_failure_max_reporters },
		{ "down_out", test_decide_down_out },
		{ "noout", test_decide_noout },
		{ "nodown", test_decide_nodown },
		{ "rebooted_after_decision", test_apply_rebooted_after_decision },
		{ "apply_epoch_check", test_apply_epoch_check },
		{ "blocklist_expiry", test_blocklist_expiry },
		{ "boot_resets_grace", test_boot_resets_grace },
		{ "new_leader_fresh_grace", test_new_leader_fresh_grace },
		{ "new_leader_drops_reports", test_new_leader_drops_reports },
		{ "map_up_resets_grace", test_map_up_resets_grace },
		{ "stats", test_stats_rates },
	};

	cm_log_set_level(getenv("LEADER_TEST_VERBOSE") ? CM_LOG_INFO : CM_LOG_WARN);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_add_test(tc, cases[i].t);
		suite_add_tcase(s, tc);
	}
	return cm_test_main(s);
}
