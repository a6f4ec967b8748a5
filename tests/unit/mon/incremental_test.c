/* SPDX-License-Identifier: Apache-2.0 */
#include "mon/incremental.h"
#include "mon/osdmap.h"
#include "mon/map_store.h"
#include "testlib.h"

static uint64_t g_rng = 88172645463325252ull;

static unsigned
rnd(unsigned n)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return (unsigned)(g_rng % n);
}

static size_t
packed(const ProtobufCMessage *m, uint8_t **buf)
{
	size_t n = protobuf_c_message_get_packed_size(m);

	*buf = malloc(n ? n : 1);
	protobuf_c_message_pack(m, *buf);
	return n;
}

static Cairn__Map__OsdMap *
copy_map(const Cairn__Map__OsdMap *m)
{
	uint8_t *buf;
	size_t n = packed(&m->base, &buf);
	Cairn__Map__OsdMap *c = cairn__map__osd_map__unpack(NULL, n, buf);

	free(buf);
	ck_assert_ptr_nonnull(c);
	return c;
}

static void
add_osd(Cairn__Map__OsdMap *m, int id)
{
	Cairn__Map__Osd *o = malloc(sizeof(*o));
	char buf[32];

	cairn__map__osd__init(o);
	o->id = id;
	snprintf(buf, sizeof(buf), "127.0.0.1:%d", 6800 + id);
	mon_map_set_str(&o->addr, buf);
	snprintf(buf, sizeof(buf), "host%d", id / 4);
	mon_map_set_str(&o->host, buf);
	o->weight = 0x10000;
	o->reweight = 0x10000;
	o->up = o->in = true;
	m->osds = realloc(m->osds, sizeof(*m->osds) * (m->n_osds + 1));
	m->osds[m->n_osds++] = o;
}

static void
add_pool(Cairn__Map__OsdMap *m, int64_t id)
{
	Cairn__Map__Pool *p = malloc(sizeof(*p));
	char buf[32];

	cairn__map__pool__init(p);
	p->id = id;
	snprintf(buf, sizeof(buf), "pool%" PRId64, id);
	mon_map_set_str(&p->name, buf);
	p->size = 3;
	p->pg_num = p->pgp_num = 64;
	m->pools = realloc(m->pools, sizeof(*m->pools) * (m->n_pools + 1));
	m->pools[m->n_pools++] = p;
}

static void
add_upmap(Cairn__Map__OsdMap *m)
{
	Cairn__Map__UpmapItem *u = malloc(sizeof(*u));

	cairn__map__upmap_item__init(u);
	u->pool = 1 + rnd(3);
	u->seed = rnd(64);
	u->from = (int32_t)rnd(20);
	u->to = (int32_t)rnd(20);
	m->upmap_items = realloc(m->upmap_items, sizeof(*m->upmap_items) * (m->n_upmap_items + 1));
	m->upmap_items[m->n_upmap_items++] = u;
}

static void
remove_at(void **arr, size_t *n, size_t i)
{
	protobuf_c_message_free_unpacked(arr[i], NULL);
	memmove(&arr[i], &arr[i + 1], sizeof(*arr) * (*n - i - 1));
	(*n)--;
}

/* One random edit, as a monitor might make. */
static void
edit(Cairn__Map__OsdMap *m)
{
	char buf[64], err[MON_ERRLEN];

	switch (rnd(12)) {
	case 9: /* blocklist: add or renew */
		snprintf(buf, sizeof(buf), "client.%x", rnd(6));
		ck_assert_int_eq(mon_blocklist_add(m, buf, rnd(3) * 1000ull, err), 0);
		break;
	case 10:
		snprintf(buf, sizeof(buf), "client.%x", rnd(6));
		ck_assert_int_ge(mon_blocklist_rm(m, buf), 0);
		break;
	case 11:
		(void)mon_blocklist_expire(m, rnd(3) * 1000ull);
		break;
	case 0:
		add_osd(m, m->next_osd_id++);
		break;
	case 1:
		if (m->n_osds)
			remove_at((void **)m->osds, &m->n_osds, rnd((unsigned)m->n_osds));
		break;
	case 2:
		if (m->n_osds) {
			Cairn__Map__Osd *o = m->osds[rnd((unsigned)m->n_osds)];

			o->up = !o->up;
			o->reweight = rnd(2) ? 0x10000 : 0x8000;
		}
		break;
	case 3:
		add_pool(m, ++m->next_pool_id);
		break;
	case 4:
		if (m->n_pools)
			remove_at((void **)m->pools, &m->n_pools, rnd((unsigned)m->n_pools));
		break;
	case 5:
		if (m->n_pools)
			m->pools[rnd((unsigned)m->n_pools)]->pg_num *= 2;
		break;
	case 6:
		add_upmap(m);
		break;
	case 7:
		if (m->n_upmap_items)
			remove_at((void **)m->upmap_items, &m->n_upmap_items,
				  rnd((unsigned)m->n_upmap_items));
		break;
	default:
		snprintf(buf, sizeof(buf), "# crush v%u\n", rnd(1000));
		mon_map_set_str(&m->crush, buf);
		m->flags ^= 1u << rnd(8);
		break;
	}
}

START_TEST(test_diff_apply_roundtrip_random)
{
	Cairn__Map__OsdMap *a = malloc(sizeof(*a));

	cairn__map__osd_map__init(a);
	mon_map_set_str(&a->fsid, "fsid-x");
	a->epoch = 1;
	for (int i = 0; i < 8; i++)
		add_osd(a, a->next_osd_id++);
	add_pool(a, ++a->next_pool_id);
	mon_map_canonicalize(a);
	for (int step = 0; step < 300; step++) {
		Cairn__Map__OsdMap *b = copy_map(a), *c;
		Cairn__Map__Incremental *inc;
		uint8_t *pb, *pc;
		size_t nb, nc;

		for (unsigned k = 0, n = 1 + rnd(3); k < n; k++)
			edit(b);
		b->epoch = a->epoch + 1;
		b->modified_ns = (uint64_t)step;
		mon_map_canonicalize(b);
		ck_assert_int_eq(mon_map_diff(a, b, &inc), 0);
		ck_assert_int_eq(mon_map_apply(a, inc, &c), 0);
		nb = packed(&b->base, &pb);
		nc = packed(&c->base, &pc);
		ck_assert_uint_eq(nb, nc);
		ck_assert_int_eq(memcmp(pb, pc, nb), 0);
		free(pb);
		free(pc);
		cairn__map__incremental__free_unpacked(inc, NULL);
		cairn__map__osd_map__free_unpacked(c, NULL);
		cairn__map__osd_map__free_unpacked(a, NULL);
		a = b;
	}
	cairn__map__osd_map__free_unpacked(a, NULL);
}

END_TEST

/* The blocklist's edits, lookups, expiry, and the checks of a map holding one. */
START_TEST(test_blocklist_edits)
{
	Cairn__Map__OsdMap *m = malloc(sizeof(*m));
	char err[MON_ERRLEN], name[MON_ENTITY_MAX + 2];

	cairn__map__osd_map__init(m);
	m->epoch = 7;
	ck_assert(!mon_blocklisted(m, "client.a"));
	ck_assert_int_eq(mon_blocklist_add(m, "client.c", 500, err), 0);
	ck_assert_int_eq(mon_blocklist_add(m, "client.a", 0, err), 0); /* never expires */
	ck_assert_int_eq(mon_blocklist_add(m, "client.b", 100, err), 0);
	ck_assert_uint_eq(m->n_blocklist, 3);
	ck_assert_str_eq(m->blocklist[0]->entity, "client.a"); /* kept sorted */
	ck_assert_str_eq(m->blocklist[2]->entity, "client.c");
	ck_assert_uint_eq(m->blocklist[1]->added_epoch, 8);
	ck_assert(mon_blocklisted(m, "client.a") && mon_blocklisted(m, "client.b") &&
		  mon_blocklisted(m, "client.c"));
	ck_assert(!mon_blocklisted(m, "client.") && !mon_blocklisted(m, "client.d"));
	/* renewing changes the expiry, not the entry count */
	ck_assert_int_eq(mon_blocklist_add(m, "client.b", 700, err), 0);
	ck_assert_uint_eq(m->n_blocklist, 3);
	ck_assert_uint_eq(m->blocklist[1]->until_ns, 700);
	/* bad names */
	ck_assert_int_eq(mon_blocklist_add(m, "", 1, err), -EINVAL);
	ck_assert_int_eq(mon_blocklist_add(m, "a b", 1, err), -EINVAL);
	memset(name, 'x', MON_ENTITY_MAX + 1);
	name[MON_ENTITY_MAX + 1] = 0;
	ck_assert_int_eq(mon_blocklist_add(m, name, 1, err), -EINVAL);
	/* expiry: at 600 client.c (500) goes; client.b (700) and client.a (never) stay */
	ck_assert_uint_eq(mon_blocklist_expire(m, 499), 0);
	ck_assert_uint_eq(mon_blocklist_expire(m, 600), 1);
	ck_assert(!mon_blocklisted(m, "client.c"));
	ck_assert_uint_eq(mon_blocklist_expire(m, UINT64_MAX), 1);
	ck_assert(mon_blocklisted(m, "client.a") && !mon_blocklisted(m, "client.b"));
	ck_assert_int_eq(mon_blocklist_rm(m, "client.a"), 0);
	ck_assert_int_eq(mon_blocklist_rm(m, "client.a"), 1);
	ck_assert_uint_eq(m->n_blocklist, 0);
	cairn__map__osd_map__free_unpacked(m, NULL);
}

END_TEST

START_TEST(test_apply_refuses_wrong_epoch_and_misfits)
{
	Cairn__Map__OsdMap *a = malloc(sizeof(*a)), *b, *c;
	Cairn__Map__Incremental *inc, *inc2;
	uint8_t *buf;
	size_t full, small;

	cairn__map__osd_map__init(a);
	mon_map_set_str(&a->fsid, "f");
	a->epoch = 7;
	for (int i = 0; i < 40; i++)
		add_osd(a, a->next_osd_id++);
	b = copy_map(a);
	b->epoch = 8;
	b->osds[3]->up = false; /* one OSD goes down */
	ck_assert_int_eq(mon_map_diff(a, b, &inc), 0);
	ck_assert_uint_eq(inc->n_upsert_osds, 1);
	small = packed(&inc->base, &buf);
	free(buf);
	full = packed(&b->base, &buf);
	free(buf);
	ck_assert_uint_lt(small * 10, full); /* a small change is a small message */
	b->epoch = 9;
	ck_assert_int_eq(mon_map_diff(a, b, &inc2), -EINVAL); /* not the next epoch */
	a->epoch = 6;
	ck_assert_int_eq(mon_map_apply(a, inc, &c), -ESTALE);
	a->epoch = 7;
	inc->remove_osds = malloc(sizeof(int32_t));
	inc->remove_osds[0] = 999;
	inc->n_remove_osds = 1;
	ck_assert_int_eq(mon_map_apply(a, inc, &c), -EBADMSG);
	cairn__map__incremental__free_unpacked(inc, NULL);
	cairn__map__osd_map__free_unpacked(a, NULL);
	cairn__map__osd_map__free_unpacked(b, NULL);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("incremental");
	TCase *tc = tcase_create("incremental");

	tcase_add_test(tc, test_diff_apply_roundtrip_random);
	tcase_add_test(tc, test_blocklist_edits);
	tcase_add_test(tc, test_apply_refuses_wrong_epoch_and_misfits);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
