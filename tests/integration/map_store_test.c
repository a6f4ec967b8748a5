/* SPDX-License-Identifier: Apache-2.0 */
/* The cluster map in a real etcd: concurrent writers, epochs, history, refusals. */
#include "mon/map_store.h"
#include "mon/incremental.h"
#include "etcd_helper.h"
#include "testlib.h"

#include <pthread.h>

static struct cm_test_etcd g_etcd;

static struct cm_etcd *
client(void)
{
	return cm_test_etcd_client(g_etcd.endpoint, 5000);
}

static void
setup(void)
{
	cm_test_etcd_start(&g_etcd);
}

static void
teardown(void)
{
	cm_test_etcd_stop(&g_etcd);
}

/* Add a pool named arg; 1 (no change) if it exists; -EEXIST if asked to refuse dups. */
struct add_pool {
	const char *name;
	bool refuse_dup;
};

static int
add_pool(void *arg, Cairn__Map__OsdMap *m)
{
	struct add_pool *a = arg;
	Cairn__Map__Pool **np, *p;

	for (size_t i = 0; i < m->n_pools; i++)
		if (!strcmp(m->pools[i]->name, a->name))
			return a->refuse_dup ? -EEXIST : 1;
	np = realloc(m->pools, sizeof(*np) * (m->n_pools + 1));
	if (!np)
		return -ENOMEM;
	m->pools = np;
	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	cairn__map__pool__init(p);
	if (mon_map_set_str(&p->name, a->name)) {
		free(p);
		return -ENOMEM;
	}
	p->id = ++m->next_pool_id;
	p->size = 3;
	p->pg_num = p->pgp_num = 32;
	m->pools[m->n_pools++] = p;
	return 0;
}

static void
create_map(struct mon_map_store *s)
{
	Cairn__Map__OsdMap init = CAIRN__MAP__OSD_MAP__INIT;

	init.fsid = "4f1c2d3e-0000-4000-8000-000000000001";
	ck_assert_int_eq(mon_map_create(s, &init), 0);
}

START_TEST(test_create_read_refuse)
{
	struct cm_etcd *e = client();
	struct mon_map_store *s;
	Cairn__Map__OsdMap *m;
	struct add_pool dup = { "rbd", true };
	uint64_t epoch = 0;

	ck_assert_int_eq(mon_map_store_open(e, "fsid1", &s), 0);
	ck_assert_int_eq(mon_map_read(s, &m), -ENOENT);
	create_map(s);
	ck_assert_int_eq(mon_map_read(s, &m), 0);
	ck_assert_uint_eq(m->epoch, 1);
	ck_assert_str_eq(m->fsid, "4f1c2d3e-0000-4000-8000-000000000001");
	cairn__map__osd_map__free_unpacked(m, NULL);
	/* A second create finds the map. */
	{
		Cairn__Map__OsdMap again = CAIRN__MAP__OSD_MAP__INIT;

		ck_assert_int_eq(mon_map_create(s, &again), -EEXIST);
	}
	ck_assert_int_eq(mon_map_update(s, add_pool, &dup, &epoch), 0);
	ck_assert_uint_eq(epoch, 2);
	/* The same again: refused, epoch unchanged; "no change" likewise. */
	ck_assert_int_eq(mon_map_update(s, add_pool, &dup, &epoch), -EEXIST);
	dup.refuse_dup = false;
	ck_assert_int_eq(mon_map_update(s, add_pool, &dup, &epoch), 1);
	ck_assert_int_eq(mon_map_read(s, &m), 0);
	ck_assert_uint_eq(m->epoch, 2);
	ck_assert_uint_eq(m->n_pools, 1);
	cairn__map__osd_map__free_unpacked(m, NULL);
	/* Garbage where the map should be: a clear error, not a crash. */
	ck_assert_int_eq(cm_etcd_put(e, "/cairn/fsid1/osdmap", 19, "\xff\xff\xff", 3, 0, NULL), 0);
	ck_assert_int_eq(mon_map_read(s, &m), -EBADMSG);
	ck_assert_int_eq(mon_map_store_open(e, "a/b", &s), -EINVAL);
	mon_map_store_close(s);
	cm_etcd_destroy(e);
}

END_TEST

struct writer {
	int id;
	int n;
};

static void *
writer_main(void *p)
{
	struct writer *w = p;
	struct cm_etcd *e = client();
	struct mon_map_store *s;

	ck_assert_int_eq(mon_map_store_open(e, "race", &s), 0);
	for (int i = 0; i < w->n; i++) {
		char name[32];
		struct add_pool a = { name, true };

		snprintf(name, sizeof(name), "p%d-%d", w->id, i);
		ck_assert_int_eq(mon_map_update(s, add_pool, &a, NULL), 0);
	}
	mon_map_store_close(s);
	cm_etcd_destroy(e);
	return NULL;
}

START_TEST(test_three_writers_no_lost_change)
{
	struct cm_etcd *e = client();
	struct mon_map_store *s;
	struct writer w[3];
	pthread_t th[3];
	Cairn__Map__OsdMap *m;
	uint64_t prev_ns = 0;

	ck_assert_int_eq(mon_map_store_open(e, "race", &s), 0);
	create_map(s);
	for (int i = 0; i < 3; i++) {
		w[i] = (struct writer){ .id = i, .n = 40 };
		pthread_create(&th[i], NULL, writer_main, &w[i]);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(mon_map_read(s, &m), 0);
	ck_assert_uint_eq(m->n_pools, 120);
	ck_assert_uint_eq(m->epoch, 121);
	for (size_t i = 0; i < m->n_pools; i++)
		ck_assert_int_eq(m->pools[i]->id, (int64_t)i + 1); /* ids unique, in order */
	cairn__map__osd_map__free_unpacked(m, NULL);
	/* The last MON_MAP_HISTORY epochs are in the history, each one change after the one before.
	 */
	for (uint64_t ep = 122 - MON_MAP_HISTORY; ep <= 121; ep++) {
		ck_assert_int_eq(mon_map_read_epoch(s, ep, &m), 0);
		ck_assert_uint_eq(m->epoch, ep);
		ck_assert_uint_eq(m->n_pools, ep - 1);
		ck_assert_uint_ge(m->modified_ns, prev_ns);
		prev_ns = m->modified_ns;
		cairn__map__osd_map__free_unpacked(m, NULL);
	}
	ck_assert_int_eq(mon_map_read_epoch(s, 122 - MON_MAP_HISTORY - 1, &m), -ENOENT);
	ck_assert_int_eq(mon_map_read_epoch(s, 122, &m), -ENOENT);
	/* The oldest full map plus every later incremental gives the current map, byte for byte. */
	ck_assert_int_eq(mon_map_read_epoch(s, 122 - MON_MAP_HISTORY, &m), 0);
	for (uint64_t ep = 123 - MON_MAP_HISTORY; ep <= 121; ep++) {
		Cairn__Map__Incremental *inc;
		Cairn__Map__OsdMap *next;

		ck_assert_int_eq(mon_map_read_inc(s, ep, &inc), 0);
		ck_assert_int_eq(mon_map_apply(m, inc, &next), 0);
		cairn__map__incremental__free_unpacked(inc, NULL);
		cairn__map__osd_map__free_unpacked(m, NULL);
		m = next;
	}
	{
		Cairn__Map__OsdMap *cur;
		size_t la, lb;
		uint8_t *a, *b;

		ck_assert_int_eq(mon_map_read(s, &cur), 0);
		la = cairn__map__osd_map__get_packed_size(m);
		lb = cairn__map__osd_map__get_packed_size(cur);
		ck_assert_uint_eq(la, lb);
		a = malloc(la);
		b = malloc(lb);
		cairn__map__osd_map__pack(m, a);
		cairn__map__osd_map__pack(cur, b);
		ck_assert(memcmp(a, b, la) == 0);
		free(a);
		free(b);
		cairn__map__osd_map__free_unpacked(cur, NULL);
	}
	cairn__map__osd_map__free_unpacked(m, NULL);
	ck_assert_int_eq(mon_map_read_inc(s, 122, &(Cairn__Map__Incremental *){ NULL }), -ENOENT);
	mon_map_store_close(s);
	cm_etcd_destroy(e);
}

END_TEST

int
main(void)
{
	Suite *su = suite_create("map_store");
	TCase *tc = tcase_create("map_store");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_create_read_refuse);
	tcase_add_test(tc, test_three_writers_no_lost_change);
	suite_add_tcase(su, tc);
	return cm_test_main(su);
}
