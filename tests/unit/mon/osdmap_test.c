/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitors' map operations as pure functions: first map, OSD boot into
 * CRUSH hosts, down/out/in/reweight/rm, pools (replicated and EC with their
 * rule), refusals with their sentences, health checks and PG summaries,
 * mon_host parsing, and the CRUSH edit API round trip.
 */
#include "mon/health.h"
#include "mon/incremental.h"
#include "mon/osdmap.h"
#include "mon/proto.h"
#include "crush/edit.h"
#include "testlib.h"

static Cairn__Map__OsdMap *
fresh(void)
{
	Cairn__Map__OsdMap *m;

	ck_assert_int_eq(mon_map_initial("fsid-1", &m), 0);
	m->epoch = 1;
	return m;
}

static int32_t
boot(Cairn__Map__OsdMap *m, int32_t id, const char *uuid, const char *host)
{
	struct mon_osd_boot b = { .id = id,
				  .uuid = uuid,
				  .addr = "127.0.0.1:7000",
				  .host = host,
				  .device_class = "ssd" };
	char err[MON_ERRLEN];
	int32_t got = -1;

	ck_assert_msg(mon_osd_boot(m, &b, &got, err) == 0, "%s", err);
	m->epoch++;
	return got;
}

/* Up sets of every PG of pool p with each OSD's host; checks no host repeats. */
static void
check_failure_domain(const Cairn__Map__OsdMap *m, const Cairn__Map__Pool *p)
{
	struct mon_placement pl;
	char err[MON_ERRLEN];
	int32_t up[64];
	int primary;

	ck_assert_int_eq(mon_placement_build(m, &pl, err), 0);
	for (uint32_t s = 0; s < p->pg_num; s++) {
		int n = mon_placement_pg_up(&pl, p, s, up, &primary);

		ck_assert_int_eq(n, (int)p->size);
		for (int i = 0; i < n; i++)
			for (int j = i + 1; j < n; j++)
				ck_assert_str_ne(mon_osd_find(m, up[i])->host,
						 mon_osd_find(m, up[j])->host);
	}
	mon_placement_free(&pl);
}

START_TEST(test_boot_builds_crush_hosts)
{
	Cairn__Map__OsdMap *m = fresh();
	struct mon_pool_spec spec = { .name = "rbd", .pg_num = 64 };
	char err[MON_ERRLEN];
	int64_t pid;

	for (int i = 0; i < 6; i++) {
		char uuid[32], host[16];

		snprintf(uuid, sizeof(uuid), "uuid-%d", i);
		snprintf(host, sizeof(host), "node%d", i / 2);
		ck_assert_int_eq(boot(m, -1, uuid, host), i);
	}
	/* The same uuid gets its id back; the lowest free id goes to a new one. */
	ck_assert_int_eq(boot(m, -1, "uuid-3", "node1"), 3);
	ck_assert_ptr_nonnull(strstr(m->crush, "host node2 {"));
	ck_assert_ptr_nonnull(strstr(m->crush, "item node2 weight 2.00000"));
	ck_assert_ptr_nonnull(strstr(m->crush, "device 5 osd.5 class ssd"));
	ck_assert_int_eq(mon_pool_create(m, &spec, &pid, err), 0);
	check_failure_domain(m, mon_pool_find(m, "rbd"));
	/* An OSD that moves host leaves the old bucket. */
	ck_assert_int_eq(boot(m, 5, "uuid-5", "node9"), 5);
	ck_assert_ptr_nonnull(strstr(m->crush, "host node9 {"));
	ck_assert_ptr_nonnull(strstr(m->crush, "item node2 weight 1.00000"));
	/* rm: only when down; then the id is free again and CRUSH forgets it. */
	ck_assert_int_eq(mon_osd_rm(m, 4, err), -EBUSY);
	ck_assert_ptr_nonnull(strstr(err, "is up"));
	ck_assert_int_eq(mon_osd_mark_down(m, 4, 1), 0);
	ck_assert_int_eq(mon_osd_mark_down(m, 4, 1), 1);
	ck_assert_int_eq(mon_osd_rm(m, 4, err), 0);
	ck_assert_ptr_null(strstr(m->crush, "osd.4 "));
	ck_assert_int_eq(mon_osd_rm(m, 4, err), -ENOENT);
	ck_assert_int_eq(boot(m, -1, "uuid-new", "node7"), 4);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

START_TEST(test_boot_refusals)
{
	Cairn__Map__OsdMap *m = fresh();
	struct mon_osd_boot b = { .id = -1, .uuid = "u", .addr = "a:1", .host = "h" };
	char err[MON_ERRLEN];
	int32_t id;

	ck_assert_int_eq(boot(m, -1, "u0", "h0"), 0);
	b.id = 0;
	ck_assert_int_eq(mon_osd_boot(m, &b, &id, err), -EEXIST);
	ck_assert_ptr_nonnull(strstr(err, "belongs to uuid u0"));
	b.id = 7;
	ck_assert_int_eq(mon_osd_boot(m, &b, &id, err), -ENOENT);
	b.id = -1;
	b.host = "a host";
	ck_assert_int_eq(mon_osd_boot(m, &b, &id, err), -EINVAL);
	b.host = "h";
	b.uuid = "";
	ck_assert_int_eq(mon_osd_boot(m, &b, &id, err), -EINVAL);
	b.uuid = "u";
	b.device_class = "bad class";
	ck_assert_int_eq(mon_osd_boot(m, &b, &id, err), -EINVAL);
	b.device_class = NULL;
	m->flags |= MON_FLAG_NOUP;
	ck_assert_int_eq(mon_osd_boot(m, &b, &id, err), -EAGAIN);
	m->flags = MON_FLAG_NOIN;
	ck_assert_int_eq(mon_osd_boot(m, &b, &id, err), 0);
	ck_assert(!mon_osd_find(m, id)->in);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

/* An OSD with PG shards: their addresses go in the map; PG seed s goes to shard s % n. */
START_TEST(test_boot_pg_shards)
{
	Cairn__Map__OsdMap *m = fresh();
	char *addrs[40], buf[40][32];
	struct mon_osd_boot b = { .id = -1, .uuid = "u", .addr = "10.0.0.1:6800", .host = "h" };
	char err[MON_ERRLEN];
	const Cairn__Map__Osd *o;
	unsigned k;
	int32_t id;

	for (int i = 0; i < 40; i++) {
		snprintf(buf[i], sizeof(buf[i]), "10.0.0.1:%d", 6800 + i);
		addrs[i] = buf[i];
	}
	b.shard_addrs = addrs;
	b.nshard_addrs = 33;
	ck_assert_int_eq(mon_osd_boot(m, &b, &id, err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "at most 32"));
	b.nshard_addrs = 3;
	addrs[0] = "10.0.0.1:1";
	ck_assert_int_eq(mon_osd_boot(m, &b, &id, err), -EINVAL); /* [0] is not addr */
	addrs[0] = buf[0];
	addrs[2] = "";
	ck_assert_int_eq(mon_osd_boot(m, &b, &id, err), -EINVAL);
	addrs[2] = buf[2];
	ck_assert_int_eq(mon_osd_boot(m, &b, &id, err), 0);
	o = mon_osd_find(m, id);
	ck_assert_uint_eq(o->n_shard_addrs, 3);
	ck_assert_str_eq(mon_osd_pg_addr(o, 0, &k), "10.0.0.1:6800");
	ck_assert_uint_eq(k, 0);
	ck_assert_str_eq(mon_osd_pg_addr(o, 7, &k), "10.0.0.1:6801");
	ck_assert_uint_eq(k, 1);
	ck_assert_str_eq(mon_osd_pg_addr(o, 5, &k), "10.0.0.1:6802");
	ck_assert_uint_eq(k, 2);
	/* Restarted with one shard: the list goes, every PG at addr. */
	m->epoch++;
	b.id = id;
	b.nshard_addrs = 0;
	ck_assert_int_eq(mon_osd_boot(m, &b, &id, err), 0);
	o = mon_osd_find(m, id);
	ck_assert_uint_eq(o->n_shard_addrs, 0);
	ck_assert_str_eq(mon_osd_pg_addr(o, 5, &k), "10.0.0.1:6800");
	ck_assert_uint_eq(k, 0);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

START_TEST(test_pools)
{
	Cairn__Map__OsdMap *m = fresh();
	struct mon_pool_spec s = { .name = "a" };
	char err[MON_ERRLEN];
	unsigned k, mm;
	int64_t id;

	ck_assert_int_eq(mon_pool_create(m, &s, &id, err), 0);
	ck_assert_int_eq(id, 1);
	ck_assert_uint_eq(mon_pool_find(m, "a")->size, 3);
	ck_assert_uint_eq(mon_pool_find(m, "a")->min_size, 2);
	ck_assert_uint_eq(mon_pool_find(m, "a")->pg_num, 32);
	ck_assert_int_eq(mon_pool_create(m, &s, &id, err), -EEXIST);
	ck_assert_str_eq(err, "pool 'a' already exists");
	s = (struct mon_pool_spec){ .name = "e", .erasure = true, .ec_k = 4, .ec_m = 2 };
	ck_assert_int_eq(mon_pool_create(m, &s, &id, err), 0);
	ck_assert_uint_eq(mon_pool_find(m, "e")->size, 6);
	ck_assert_uint_eq(mon_pool_find(m, "e")->min_size, 5);
	ck_assert_ptr_nonnull(strstr(m->crush, "rule ec_e {"));
	ck_assert_int_eq(mon_parse_ec_profile("8+3", &k, &mm, err), 0);
	ck_assert_uint_eq(k, 8);
	ck_assert_uint_eq(mm, 3);
	ck_assert_int_eq(mon_parse_ec_profile("8+", &k, &mm, err), -EINVAL);
	ck_assert_int_eq(mon_parse_ec_profile("+2", &k, &mm, err), -EINVAL);
	ck_assert_int_eq(mon_parse_ec_profile("4+2x", &k, &mm, err), -EINVAL);
	ck_assert_int_eq(mon_parse_ec_profile("1+1", &k, &mm, err), -EINVAL);
	ck_assert_int_eq(mon_parse_ec_profile("99999999999999999999+1", &k, &mm, err), -EINVAL);
	s = (struct mon_pool_spec){ .name = "x", .size = 3, .min_size = 4 };
	ck_assert_int_eq(mon_pool_create(m, &s, &id, err), -EINVAL);
	s = (struct mon_pool_spec){ .name = "", .size = 3 };
	ck_assert_int_eq(mon_pool_create(m, &s, &id, err), -EINVAL);
	s = (struct mon_pool_spec){ .name = "x", .pg_num = 1 << 20 };
	ck_assert_int_eq(mon_pool_create(m, &s, &id, err), -EINVAL);
	/* set */
	ck_assert_int_eq(mon_pool_set(m, "a", "size", "2", err), 0);
	ck_assert_int_eq(mon_pool_set(m, "a", "size", "2", err), 1);
	ck_assert_int_eq(mon_pool_set(m, "a", "min_size", "3", err), -EINVAL);
	/* PGs split (pg_num up, pgp_num stays); down sets the merge target and
	 * lowers pgp_num to it at once; up again stops the merge. */
	ck_assert_int_eq(mon_pool_set(m, "a", "pg_num", "32", err), 1);
	ck_assert_int_eq(mon_pool_set(m, "a", "pg_num", "8", err), 0);
	ck_assert_uint_eq(mon_pool_find(m, "a")->pg_num, 32);
	ck_assert_uint_eq(mon_pool_find(m, "a")->pg_num_target, 8);
	ck_assert_uint_eq(mon_pool_find(m, "a")->pgp_num, 8);
	ck_assert_int_eq(mon_pool_set(m, "a", "pg_num", "8", err), 1);
	ck_assert_int_eq(mon_pool_set(m, "a", "pgp_num", "16", err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "merged to"));
	ck_assert_int_eq(mon_map_validate(m, err), 0);
	ck_assert_int_eq(mon_pool_set(m, "a", "pg_num", "32", err), 0);
	ck_assert_uint_eq(mon_pool_find(m, "a")->pg_num_target, 0);
	ck_assert_int_eq(mon_pool_set(m, "a", "pgp_num", "32", err), 0);
	ck_assert_int_eq(mon_pool_set(m, "a", "pg_num", "0", err), -EINVAL);
	ck_assert_int_eq(mon_pool_set(m, "a", "pg_num", "-1", err), -EINVAL);
	ck_assert_int_eq(mon_pool_set(m, "a", "pg_num", "70000", err), -EINVAL);
	ck_assert_int_eq(mon_pool_set(m, "a", "pg_num", "64", err), 0);
	ck_assert_uint_eq(mon_pool_find(m, "a")->pg_num, 64);
	ck_assert_uint_eq(mon_pool_find(m, "a")->pgp_num, 32);
	ck_assert_int_eq(mon_pool_set(m, "a", "pgp_num", "65", err), -EINVAL);
	ck_assert_int_eq(mon_pool_set(m, "a", "pgp_num", "0", err), -EINVAL);
	ck_assert_int_eq(mon_pool_set(m, "a", "pgp_num", "64", err), 0);
	ck_assert_int_eq(mon_pool_set(m, "a", "pgp_num", "64", err), 1);
	ck_assert_uint_eq(mon_pool_find(m, "a")->pgp_num, 64);
	ck_assert_int_eq(mon_pool_set(m, "a", "crush_rule", "ec_e", err), 0);
	ck_assert_int_eq(mon_pool_set(m, "a", "crush_rule", "nope", err), -ENOENT);
	ck_assert_int_eq(mon_pool_set(m, "e", "size", "3", err), -EINVAL);
	ck_assert_int_eq(mon_pool_set(m, "zz", "size", "3", err), -ENOENT);
	/* An EC pool splits, raises pgp_num and merges as a replicated one does
	 * (the pins move its shards one position at a time: mon/ec_pin.h). */
	{
		uint32_t pg = mon_pool_find(m, "e")->pg_num;
		char v[16];

		snprintf(v, sizeof(v), "%u", 2 * pg);
		ck_assert_int_eq(mon_pool_set(m, "e", "pg_num", v, err), 0);
		ck_assert_int_eq(mon_pool_set(m, "e", "pgp_num", v, err), 0);
		ck_assert_uint_eq(mon_pool_find(m, "e")->pgp_num, 2 * pg);
		snprintf(v, sizeof(v), "%u", pg);
		ck_assert_int_eq(mon_pool_set(m, "e", "pg_num", v, err), 0);
		ck_assert_uint_eq(mon_pool_find(m, "e")->pgp_num, pg);
		ck_assert_uint_eq(mon_pool_find(m, "e")->pg_num_target, pg);
	}
	/* rm drops the EC rule only when no other pool uses it. */
	ck_assert_int_eq(mon_pool_rm(m, "e", err), 0);
	ck_assert_ptr_nonnull(strstr(m->crush, "rule ec_e {"));
	ck_assert_int_eq(mon_pool_set(m, "a", "crush_rule", "replicated_rule", err), 0);
	s = (struct mon_pool_spec){ .name = "e", .erasure = true, .ec_k = 4, .ec_m = 2 };
	ck_assert_int_eq(mon_pool_create(m, &s, &id, err), 0);
	ck_assert_int_eq(id, 3); /* ids are never reused */
	ck_assert_int_eq(mon_pool_rm(m, "e", err), 0);
	ck_assert_ptr_null(strstr(m->crush, "rule ec_e {"));
	ck_assert_int_eq(mon_pool_rm(m, "e", err), -ENOENT);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

static const struct mon_health_check *
find_check(const struct mon_health *h, const char *code)
{
	for (size_t i = 0; i < h->nchecks; i++)
		if (!strcmp(h->checks[i].code, code))
			return &h->checks[i];
	return NULL;
}

START_TEST(test_health)
{
	Cairn__Map__OsdMap *m = fresh();
	struct mon_pool_spec s = { .name = "rbd", .pg_num = 16 };
	struct mon_info mons[3] = { { "a", "x:1", true },
				    { "b", "x:2", false },
				    { "c", "x:3", true } };
	struct mon_pool_usage use = { .pool = 1, .bytes = 5000 };
	struct mon_health h;
	const struct mon_health_check *c;
	char err[MON_ERRLEN];
	int64_t id;

	ck_assert_int_eq(mon_health_compute(m, mons, 1, NULL, 0, &h), 0);
	ck_assert_int_eq(h.status, MON_HEALTH_OK);
	mon_health_free(&h);
	ck_assert_int_eq(mon_pool_create(m, &s, &id, err), 0);
	ck_assert_int_eq(mon_health_compute(m, mons, 3, NULL, 0, &h), 0);
	ck_assert_ptr_nonnull(find_check(&h, "NO_OSDS"));
	c = find_check(&h, "MON_DOWN");
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(c->summary, "1/3 mons down");
	ck_assert_ptr_nonnull(strstr(c->detail[0], "mon.b"));
	mon_health_free(&h);
	for (int i = 0; i < 3; i++) {
		char uuid[16], host[16];

		snprintf(uuid, sizeof(uuid), "u%d", i);
		snprintf(host, sizeof(host), "h%d", i);
		boot(m, -1, uuid, host);
	}
	ck_assert_int_eq(mon_health_compute(m, mons, 1, NULL, 0, &h), 0);
	ck_assert_int_eq(h.status, MON_HEALTH_OK);
	mon_health_free(&h);
	/* One host down: every PG of a size-3 pool over 3 hosts is undersized. */
	mon_osd_mark_down(m, 2, 1);
	m->flags |= MON_FLAG_NOOUT;
	ck_assert_int_eq(mon_pool_set(m, "rbd", "quota_max_bytes", "4096", err), 0);
	ck_assert_int_eq(mon_health_compute(m, mons, 1, &use, 1, &h), 0);
	ck_assert_int_eq(h.status, MON_HEALTH_ERR);
	c = find_check(&h, "OSD_DOWN");
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(c->detail[0], "osd.2 (host h2) is down");
	c = find_check(&h, "PG_DEGRADED");
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(c->summary, "16 pgs undersized (fewer OSDs up than size)");
	ck_assert_ptr_nonnull(find_check(&h, "OSDMAP_FLAGS"));
	c = find_check(&h, "POOL_FULL");
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(strstr(c->detail[0], "quota is 4096"));
	ck_assert_ptr_null(find_check(&h, "PG_AVAILABILITY"));
	mon_health_free(&h);
	/* Two down: below min_size. */
	mon_osd_mark_down(m, 1, 1);
	ck_assert_int_eq(mon_health_compute(m, mons, 1, NULL, 0, &h), 0);
	c = find_check(&h, "PG_AVAILABILITY");
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->severity, MON_HEALTH_ERR);
	{
		json_t *j = mon_health_json(&h);

		ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "HEALTH_ERR");
		ck_assert_ptr_nonnull(json_object_get(json_object_get(j, "checks"), "OSD_DOWN"));
		json_decref(j);
	}
	mon_health_free(&h);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

START_TEST(test_flags_and_weights)
{
	Cairn__Map__OsdMap *m = fresh();
	char buf[128];

	ck_assert_uint_eq(mon_flag_parse("noout"), MON_FLAG_NOOUT);
	ck_assert_uint_eq(mon_flag_parse("pause"), MON_FLAG_PAUSE);
	ck_assert_uint_eq(mon_flag_parse("nope"), 0);
	ck_assert_uint_eq(mon_flag_parse("noscrub"), 0); /* no scrub to stop yet */
	ck_assert_str_eq(mon_flags_str(MON_FLAG_NOOUT | MON_FLAG_FULL, buf, sizeof(buf)),
			 "noout,full");
	ck_assert_str_eq(mon_flags_str(0, buf, sizeof(buf)), "");
	boot(m, -1, "u", "h");
	ck_assert_int_eq(mon_osd_reweight(m, 0, 0x8000), 0);
	ck_assert_int_eq(mon_osd_reweight(m, 0, 0x8000), 1);
	ck_assert_int_eq(mon_osd_reweight(m, 0, 0x20000), -ERANGE);
	ck_assert_int_eq(mon_osd_set_in(m, 0, false), 0);
	ck_assert_uint_eq(mon_osd_find(m, 0)->reweight, 0);
	ck_assert_int_eq(mon_osd_set_in(m, 0, false), 1);
	ck_assert_int_eq(mon_osd_set_in(m, 9, true), -ENOENT);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

START_TEST(test_mon_hosts)
{
	struct mon_addr *v;
	size_t n;
	char err[256];

	ck_assert_int_eq(
		mon_parse_hosts("a=127.0.0.1:1, b=[::1]:2 ,c=1.2.3.4:5", &v, &n, err, sizeof(err)),
		0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(v[1].name, "b");
	ck_assert_str_eq(v[1].addr, "[::1]:2");
	free(v);
	ck_assert_int_eq(mon_parse_hosts("127.0.0.1:1,127.0.0.1:2", &v, &n, err, sizeof(err)), 0);
	ck_assert_str_eq(v[1].name, "1");
	free(v);
	ck_assert_int_eq(mon_parse_hosts("", &v, &n, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(mon_parse_hosts("a=1:1,,b=1:2", &v, &n, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "mon_host entry 2 is empty");
	ck_assert_int_eq(mon_parse_hosts("a=1:1,a=1:2", &v, &n, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "mon_host names mon 'a' twice");
	ck_assert_int_eq(mon_parse_hosts("a=localhost", &v, &n, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(mon_parse_hosts("=1.2.3.4:5", &v, &n, err, sizeof(err)), -EINVAL);
}

END_TEST

/* parse -> edit -> print -> parse: edits survive, shadow ids stay put. */
START_TEST(test_crush_edit_round_trip)
{
	Cairn__Map__OsdMap *m = fresh();
	struct crush_map *cm, *again;
	char err[256], *text, *text2;
	int32_t hid, rid;

	boot(m, -1, "u0", "h0"); /* class ssd: a shadow tree exists */
	ck_assert_int_eq(crush_text_parse(m->crush, &cm, err, sizeof(err)), 0);
	ck_assert_int_eq(crush_edit_set_device(cm, 1, "osd.1", "hdd"), 0);
	ck_assert_int_eq(crush_edit_set_device(cm, 2, "osd.0", NULL), -EEXIST);
	ck_assert_int_eq(crush_edit_add_bucket(cm, "rack1", "rack", "default", &hid), 0);
	ck_assert_int_eq(crush_edit_add_bucket(cm, "rack1", "rack", "default", &hid), -EEXIST);
	ck_assert_int_eq(crush_edit_add_bucket(cm, "r2", "nosuchtype", NULL, &hid), -ENOENT);
	ck_assert_int_eq(crush_edit_add_bucket(cm, "h1", "host", "rack1", &hid), 0);
	ck_assert_int_eq(crush_edit_set_item(cm, hid, 1, 0x20000), 0);
	ck_assert_int_eq(crush_edit_set_item(cm, hid, crush_item_by_name(cm, "default"), 0),
			 -EINVAL); /* a loop */
	ck_assert_int_eq(crush_edit_remove_item(cm, crush_item_by_name(cm, "rack1")), -ENOTEMPTY);
	ck_assert_int_eq(crush_edit_add_rule(cm, "fast", "default", "ssd", "host", false, &rid), 0);
	ck_assert_int_eq(crush_edit_add_rule(cm, "fast", "default", NULL, "host", false, &rid),
			 -EEXIST);
	ck_assert_int_eq(crush_edit_add_rule(cm, "x", "default", "nvme", "host", false, &rid),
			 -ENOENT);
	ck_assert_int_eq(crush_edit_print(cm, &text), 0);
	ck_assert_msg(crush_text_parse(text, &again, err, sizeof(err)) == 0, "%s\n%s", err, text);
	ck_assert_ptr_nonnull(strstr(text, "item rack1 weight 2.00000"));
	ck_assert_ptr_nonnull(strstr(text, "step take default class ssd"));
	ck_assert_ptr_nonnull(strstr(text, "device 1 osd.1 class hdd"));
	/*
	 * The re-parsed map names the shadow ids the parse gave the new buckets;
	 * from then on print -> parse -> print is stable.
	 */
	ck_assert_int_eq(crush_edit_print(again, &text2), 0);
	free(text);
	crush_map_destroy(again);
	ck_assert_int_eq(crush_text_parse(text2, &again, err, sizeof(err)), 0);
	ck_assert_int_eq(crush_edit_print(again, &text), 0);
	ck_assert_str_eq(text, text2);
	ck_assert_ptr_nonnull(strstr(m->crush, "id -4 class ssd"));
	ck_assert_int_eq(crush_edit_remove_rule(again, rid), 0);
	ck_assert_int_eq(crush_edit_remove_rule(again, rid), -ENOENT);
	ck_assert_int_eq(crush_edit_remove_item(again, 1), 0);
	ck_assert_int_eq(crush_edit_remove_item(again, 1), -ENOENT);
	free(text);
	free(text2);
	crush_map_destroy(cm);
	crush_map_destroy(again);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("osdmap");
	TCase *tc = tcase_create("ops");

	tcase_add_test(tc, test_boot_builds_crush_hosts);
	tcase_add_test(tc, test_boot_refusals);
	tcase_add_test(tc, test_boot_pg_shards);
	tcase_add_test(tc, test_pools);
	tcase_add_test(tc, test_health);
	tcase_add_test(tc, test_flags_and_weights);
	tcase_add_test(tc, test_mon_hosts);
	tcase_add_test(tc, test_crush_edit_round_trip);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
