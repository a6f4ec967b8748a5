/* SPDX-License-Identifier: Apache-2.0 */
#include "mon/incremental.h"
#include "cm/stdinc.h"

/* Deep copy of any message through its encoding: simple and exact. */
static void *
copy_msg(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);
	void *out;

	if (!buf)
		return NULL;
	protobuf_c_message_pack(m, buf);
	out = protobuf_c_message_unpack(m->descriptor, NULL, len, buf);
	free(buf);
	return out;
}

static bool
same_msg(const ProtobufCMessage *a, const ProtobufCMessage *b)
{
	size_t la = protobuf_c_message_get_packed_size(a),
	       lb = protobuf_c_message_get_packed_size(b);
	uint8_t *ba, *bb;
	bool same;

	if (la != lb)
		return false;
	ba = malloc(la ? la : 1);
	bb = malloc(lb ? lb : 1);
	if (!ba || !bb) {
		free(ba);
		free(bb);
		return false;
	}
	protobuf_c_message_pack(a, ba);
	protobuf_c_message_pack(b, bb);
	same = memcmp(ba, bb, la) == 0;
	free(ba);
	free(bb);
	return same;
}

static int
cmp_osd(const void *x, const void *y)
{
	const Cairn__Map__Osd *a = *(Cairn__Map__Osd *const *)x, *b = *(Cairn__Map__Osd *const *)y;

	return (a->id > b->id) - (a->id < b->id);
}

static int
cmp_pool(const void *x, const void *y)
{
	const Cairn__Map__Pool *a = *(Cairn__Map__Pool *const *)x;
	const Cairn__Map__Pool *b = *(Cairn__Map__Pool *const *)y;

	return (a->id > b->id) - (a->id < b->id);
}

static int
cmp_upmap(const void *x, const void *y)
{
	const Cairn__Map__UpmapItem *a = *(Cairn__Map__UpmapItem *const *)x;
	const Cairn__Map__UpmapItem *b = *(Cairn__Map__UpmapItem *const *)y;

	if (a->pool != b->pool)
		return (a->pool > b->pool) - (a->pool < b->pool);
	if (a->seed != b->seed)
		return (a->seed > b->seed) - (a->seed < b->seed);
	if (a->from != b->from)
		return (a->from > b->from) - (a->from < b->from);
	return (a->to > b->to) - (a->to < b->to);
}

int
mon_pin_cmp(const void *x, const void *y)
{
	const Cairn__Map__PgPin *a = *(Cairn__Map__PgPin *const *)x;
	const Cairn__Map__PgPin *b = *(Cairn__Map__PgPin *const *)y;

	if (a->pool != b->pool)
		return (a->pool > b->pool) - (a->pool < b->pool);
	return (a->seed > b->seed) - (a->seed < b->seed);
}

void
mon_map_canonicalize(Cairn__Map__OsdMap *m)
{
	if (m->n_osds)
		qsort(m->osds, m->n_osds, sizeof(*m->osds), cmp_osd);
	if (m->n_pools)
		qsort(m->pools, m->n_pools, sizeof(*m->pools), cmp_pool);
	if (m->n_upmap_items)
		qsort(m->upmap_items, m->n_upmap_items, sizeof(*m->upmap_items), cmp_upmap);
	if (m->n_pg_pins)
		qsort(m->pg_pins, m->n_pg_pins, sizeof(*m->pg_pins), mon_pin_cmp);
	if (m->n_blocklist)
		qsort(m->blocklist, m->n_blocklist, sizeof(*m->blocklist), mon_blocklist_cmp);
}

int
mon_blocklist_cmp(const void *x, const void *y)
{
	const Cairn__Map__BlocklistEntry *a = *(Cairn__Map__BlocklistEntry *const *)x;
	const Cairn__Map__BlocklistEntry *b = *(Cairn__Map__BlocklistEntry *const *)y;

	return strcmp(a->entity, b->entity);
}

/* Index of entity's entry in v (n of them), or n. (Blocklists are short: a scan.) */
static size_t
blocklist_at(Cairn__Map__BlocklistEntry *const *v, size_t n, const char *entity)
{
	size_t i = 0;

	while (i < n && strcmp(v[i]->entity, entity) != 0)
		i++;
	return i;
}

/* Append a (copied) element to a repeated field of pointers. */
static int
push(void ***arr, size_t *n, void *elem)
{
	void **na;

	if (!elem)
		return -ENOMEM;
	na = realloc(*arr, sizeof(*na) * (*n + 1));
	if (!na)
		return -ENOMEM;
	na[(*n)++] = elem;
	*arr = na;
	return 0;
}

static int
push_scalar64(int64_t **arr, size_t *n, int64_t v)
{
	int64_t *na = realloc(*arr, sizeof(*na) * (*n + 1));

	if (!na)
		return -ENOMEM;
	na[(*n)++] = v;
	*arr = na;
	return 0;
}

static int
push_scalar32(int32_t **arr, size_t *n, int32_t v)
{
	int32_t *na = realloc(*arr, sizeof(*na) * (*n + 1));

	if (!na)
		return -ENOMEM;
	na[(*n)++] = v;
	*arr = na;
	return 0;
}

static bool
has_upmap(Cairn__Map__UpmapItem *const *v, size_t n, const Cairn__Map__UpmapItem *u)
{
	for (size_t i = 0; i < n; i++)
		if (cmp_upmap(&v[i], &u) == 0)
			return true;
	return false;
}

static bool
pins_sorted(Cairn__Map__PgPin *const *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (mon_pin_cmp(&v[i - 1], &v[i]) >= 0)
			return false;
	return true;
}

/* Index of u's PG in v[0, n) (sorted: a binary search), or n. */
static size_t
pin_at(Cairn__Map__PgPin *const *v, size_t n, bool sorted, const Cairn__Map__PgPin *u)
{
	Cairn__Map__PgPin *const *hit;

	if (!sorted) {
		for (size_t i = 0; i < n; i++)
			if (mon_pin_cmp(&v[i], &u) == 0)
				return i;
		return n;
	}
	hit = n ? bsearch(&u, v, n, sizeof(*v), mon_pin_cmp) : NULL;
	return hit ? (size_t)(hit - v) : n;
}

/* The pin of u's PG in v, or NULL. */
static const Cairn__Map__PgPin *
pin_of(Cairn__Map__PgPin *const *v, size_t n, bool sorted, const Cairn__Map__PgPin *u)
{
	size_t i = pin_at(v, n, sorted, u);

	return i < n ? v[i] : NULL;
}

/* A pin key (pool, seed) for remove_pins. */
static Cairn__Map__PgPin *
pin_key(const Cairn__Map__PgPin *p)
{
	Cairn__Map__PgPin *k = malloc(sizeof(*k));

	if (k) {
		cairn__map__pg_pin__init(k);
		k->pool = p->pool;
		k->seed = p->seed;
	}
	return k;
}

int
mon_map_diff(const Cairn__Map__OsdMap *a, const Cairn__Map__OsdMap *b,
	     Cairn__Map__Incremental **incp)
{
	Cairn__Map__Incremental *inc;
	int rc = 0;

	if (b->epoch != a->epoch + 1 || strcmp(a->fsid, b->fsid))
		return -EINVAL;
	inc = malloc(sizeof(*inc));
	if (!inc)
		return -ENOMEM;
	cairn__map__incremental__init(inc);
	inc->epoch = b->epoch;
	inc->flags = b->flags;
	inc->auth_epoch = b->auth_epoch;
	inc->next_osd_id = b->next_osd_id;
	inc->next_pool_id = b->next_pool_id;
	inc->modified_ns = b->modified_ns;
	inc->fsid = strdup(b->fsid);
	if (!inc->fsid)
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < b->n_osds; i++) {
		const Cairn__Map__Osd *o = b->osds[i], *old = NULL;

		for (size_t j = 0; j < a->n_osds && !old; j++)
			if (a->osds[j]->id == o->id)
				old = a->osds[j];
		if (!old || !same_msg(&old->base, &o->base))
			rc = push((void ***)&inc->upsert_osds, &inc->n_upsert_osds,
				  copy_msg(&o->base));
	}
	for (size_t j = 0; !rc && j < a->n_osds; j++) {
		bool kept = false;

		for (size_t i = 0; i < b->n_osds && !kept; i++)
			kept = b->osds[i]->id == a->osds[j]->id;
		if (!kept)
			rc = push_scalar32(&inc->remove_osds, &inc->n_remove_osds, a->osds[j]->id);
	}
	for (size_t i = 0; !rc && i < b->n_pools; i++) {
		const Cairn__Map__Pool *p = b->pools[i], *old = NULL;

		for (size_t j = 0; j < a->n_pools && !old; j++)
			if (a->pools[j]->id == p->id)
				old = a->pools[j];
		if (!old || !same_msg(&old->base, &p->base))
			rc = push((void ***)&inc->upsert_pools, &inc->n_upsert_pools,
				  copy_msg(&p->base));
	}
	for (size_t j = 0; !rc && j < a->n_pools; j++) {
		bool kept = false;

		for (size_t i = 0; i < b->n_pools && !kept; i++)
			kept = b->pools[i]->id == a->pools[j]->id;
		if (!kept)
			rc = push_scalar64(&inc->remove_pools, &inc->n_remove_pools,
					   a->pools[j]->id);
	}
	if (!rc && strcmp(a->crush, b->crush)) {
		inc->crush_changed = true;
		inc->crush = strdup(b->crush);
		if (!inc->crush)
			rc = -ENOMEM;
	}
	for (size_t i = 0; !rc && i < b->n_upmap_items; i++)
		if (!has_upmap(a->upmap_items, a->n_upmap_items, b->upmap_items[i]))
			rc = push((void ***)&inc->add_upmaps, &inc->n_add_upmaps,
				  copy_msg(&b->upmap_items[i]->base));
	for (size_t j = 0; !rc && j < a->n_upmap_items; j++)
		if (!has_upmap(b->upmap_items, b->n_upmap_items, a->upmap_items[j]))
			rc = push((void ***)&inc->remove_upmaps, &inc->n_remove_upmaps,
				  copy_msg(&a->upmap_items[j]->base));
	bool asort = pins_sorted(a->pg_pins, a->n_pg_pins);
	bool bsort = pins_sorted(b->pg_pins, b->n_pg_pins);

	for (size_t i = 0; !rc && i < b->n_pg_pins; i++) {
		const Cairn__Map__PgPin *old =
			pin_of(a->pg_pins, a->n_pg_pins, asort, b->pg_pins[i]);

		if (!old || !same_msg(&old->base, &b->pg_pins[i]->base))
			rc = push((void ***)&inc->upsert_pins, &inc->n_upsert_pins,
				  copy_msg(&b->pg_pins[i]->base));
	}
	for (size_t j = 0; !rc && j < a->n_pg_pins; j++)
		if (!pin_of(b->pg_pins, b->n_pg_pins, bsort, a->pg_pins[j]))
			rc = push((void ***)&inc->remove_pins, &inc->n_remove_pins,
				  pin_key(a->pg_pins[j]));
	for (size_t i = 0; !rc && i < b->n_blocklist; i++) {
		size_t j = blocklist_at(a->blocklist, a->n_blocklist, b->blocklist[i]->entity);

		if (j == a->n_blocklist ||
		    !same_msg(&a->blocklist[j]->base, &b->blocklist[i]->base))
			rc = push((void ***)&inc->add_blocklist, &inc->n_add_blocklist,
				  copy_msg(&b->blocklist[i]->base));
	}
	for (size_t j = 0; !rc && j < a->n_blocklist; j++)
		if (blocklist_at(b->blocklist, b->n_blocklist, a->blocklist[j]->entity) ==
		    b->n_blocklist)
			rc = push((void ***)&inc->remove_blocklist, &inc->n_remove_blocklist,
				  strdup(a->blocklist[j]->entity));
	if (rc) {
		cairn__map__incremental__free_unpacked(inc, NULL);
		return rc;
	}
	*incp = inc;
	return 0;
}

/* Remove element i from a repeated field of pointers, freeing it. */
static void
drop(void **arr, size_t *n, size_t i)
{
	protobuf_c_message_free_unpacked(arr[i], NULL);
	memmove(&arr[i], &arr[i + 1], sizeof(*arr) * (*n - i - 1));
	(*n)--;
}

int
mon_map_apply(const Cairn__Map__OsdMap *a, const Cairn__Map__Incremental *inc,
	      Cairn__Map__OsdMap **bp)
{
	Cairn__Map__OsdMap *b;
	int rc = 0;

	if (inc->epoch != a->epoch + 1)
		return -ESTALE;
	b = copy_msg(&a->base);
	if (!b)
		return -ENOMEM;
	for (size_t r = 0; !rc && r < inc->n_remove_osds; r++) {
		size_t i = 0;

		while (i < b->n_osds && b->osds[i]->id != inc->remove_osds[r])
			i++;
		if (i == b->n_osds)
			rc = -EBADMSG;
		else
			drop((void **)b->osds, &b->n_osds, i);
	}
	for (size_t u = 0; !rc && u < inc->n_upsert_osds; u++) {
		size_t i = 0;

		while (i < b->n_osds && b->osds[i]->id != inc->upsert_osds[u]->id)
			i++;
		if (i < b->n_osds)
			drop((void **)b->osds, &b->n_osds, i);
		rc = push((void ***)&b->osds, &b->n_osds, copy_msg(&inc->upsert_osds[u]->base));
	}
	for (size_t r = 0; !rc && r < inc->n_remove_pools; r++) {
		size_t i = 0;

		while (i < b->n_pools && b->pools[i]->id != inc->remove_pools[r])
			i++;
		if (i == b->n_pools)
			rc = -EBADMSG;
		else
			drop((void **)b->pools, &b->n_pools, i);
	}
	for (size_t u = 0; !rc && u < inc->n_upsert_pools; u++) {
		size_t i = 0;

		while (i < b->n_pools && b->pools[i]->id != inc->upsert_pools[u]->id)
			i++;
		if (i < b->n_pools)
			drop((void **)b->pools, &b->n_pools, i);
		rc = push((void ***)&b->pools, &b->n_pools, copy_msg(&inc->upsert_pools[u]->base));
	}
	for (size_t r = 0; !rc && r < inc->n_remove_upmaps; r++) {
		size_t i = 0;

		while (i < b->n_upmap_items &&
		       cmp_upmap(&b->upmap_items[i], &inc->remove_upmaps[r]) != 0)
			i++;
		if (i == b->n_upmap_items)
			rc = -EBADMSG;
		else
			drop((void **)b->upmap_items, &b->n_upmap_items, i);
	}
	for (size_t u = 0; !rc && u < inc->n_add_upmaps; u++)
		rc = push((void ***)&b->upmap_items, &b->n_upmap_items,
			  copy_msg(&inc->add_upmaps[u]->base));
	/* (a sorted map's pins are found by binary search: a pgp_num change
	 * may pin thousands of PGs at once) */
	bool sorted = pins_sorted(b->pg_pins, b->n_pg_pins);

	for (size_t r = 0; !rc && r < inc->n_remove_pins; r++) {
		size_t i = pin_at(b->pg_pins, b->n_pg_pins, sorted, inc->remove_pins[r]);

		if (i == b->n_pg_pins)
			rc = -EBADMSG;
		else
			drop((void **)b->pg_pins, &b->n_pg_pins, i); /* stays sorted */
	}
	for (size_t u = 0, nsorted = b->n_pg_pins; !rc && u < inc->n_upsert_pins; u++) {
		size_t i = pin_at(b->pg_pins, nsorted, sorted, inc->upsert_pins[u]);
		Cairn__Map__PgPin *c = copy_msg(&inc->upsert_pins[u]->base);

		if (!c) {
			rc = -ENOMEM;
		} else if (i < nsorted) {
			protobuf_c_message_free_unpacked(&b->pg_pins[i]->base, NULL);
			b->pg_pins[i] = c; /* replaced in place */
		} else {
			rc = push((void ***)&b->pg_pins, &b->n_pg_pins, c);
			if (rc)
				protobuf_c_message_free_unpacked(&c->base, NULL);
		}
	}
	for (size_t r = 0; !rc && r < inc->n_remove_blocklist; r++) {
		size_t i = blocklist_at(b->blocklist, b->n_blocklist, inc->remove_blocklist[r]);

		if (i == b->n_blocklist)
			rc = -EBADMSG;
		else
			drop((void **)b->blocklist, &b->n_blocklist, i);
	}
	for (size_t u = 0; !rc && u < inc->n_add_blocklist; u++) {
		size_t i =
			blocklist_at(b->blocklist, b->n_blocklist, inc->add_blocklist[u]->entity);

		if (i < b->n_blocklist)
			drop((void **)b->blocklist, &b->n_blocklist, i);
		rc = push((void ***)&b->blocklist, &b->n_blocklist,
			  copy_msg(&inc->add_blocklist[u]->base));
	}
	if (!rc && inc->crush_changed) {
		char *c = strdup(inc->crush);

		if (!c) {
			rc = -ENOMEM;
		} else {
			if (b->crush != protobuf_c_empty_string)
				free(b->crush);
			b->crush = c;
		}
	}
	if (rc) {
		cairn__map__osd_map__free_unpacked(b, NULL);
		return rc;
	}
	b->epoch = inc->epoch;
	b->flags = inc->flags;
	b->auth_epoch = inc->auth_epoch;
	b->next_osd_id = inc->next_osd_id;
	b->next_pool_id = inc->next_pool_id;
	b->modified_ns = inc->modified_ns;
	mon_map_canonicalize(b);
	*bp = b;
	return 0;
}
