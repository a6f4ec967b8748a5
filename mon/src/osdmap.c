/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cluster map operations; see mon/osdmap.h.
 */
#include "mon/osdmap.h"
#include "mon/incremental.h"
#include "mon/map_store.h"
#include "crush/edit.h"

#include <ctype.h>

#define WEIGHT_ONE 0x10000u

/* By bit; NULL: a bit no flag uses (4 was noscrub: there is no scrub to stop yet). */
static const char *const g_flag_names[] = {
	"noout", "norebalance", "nobackfill", "norecover", NULL,
	"pause", "full",        "noup",       "nodown",    "noin",
};

uint64_t
mon_flag_parse(const char *name)
{
	for (size_t i = 0; i < CM_ARRAY_SIZE(g_flag_names); i++)
		if (g_flag_names[i] && strcmp(name, g_flag_names[i]) == 0)
			return 1ull << i;
	return 0;
}

const char *
mon_flags_str(uint64_t flags, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < CM_ARRAY_SIZE(g_flag_names); i++)
		if ((flags & (1ull << i)) && g_flag_names[i] && off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "",
						g_flag_names[i]);
	return buf;
}

static const char g_initial_crush[] = "tunable choose_local_tries 0\n"
				      "tunable choose_local_fallback_tries 0\n"
				      "tunable choose_total_tries 50\n"
				      "tunable chooseleaf_descend_once 1\n"
				      "tunable chooseleaf_vary_r 1\n"
				      "tunable chooseleaf_stable 1\n"
				      "tunable straw_calc_version 1\n"
				      "tunable allowed_bucket_algs 54\n"
				      "type 0 osd\ntype 1 host\ntype 2 chassis\ntype 3 rack\n"
				      "type 4 row\ntype 5 pdu\ntype 6 pod\ntype 7 room\n"
				      "type 8 datacenter\ntype 9 zone\ntype 10 region\n"
				      "type 11 root\n"
				      "root default {\n\tid -1\n\talg straw2\n\thash 0\n}\n"
				      "rule replicated_rule {\n\tid 0\n\ttype replicated\n"
				      "\tstep take default\n"
				      "\tstep chooseleaf firstn 0 type host\n"
				      "\tstep emit\n}\n";

int
mon_map_initial(const char *fsid, Cairn__Map__OsdMap **mp)
{
	Cairn__Map__OsdMap *m = malloc(sizeof(*m));
	struct crush_map *cm;
	char err[MON_ERRLEN], *text;
	int rc;

	if (!m)
		return -ENOMEM;
	cairn__map__osd_map__init(m);
	m->next_pool_id = 1;
	rc = crush_text_parse(g_initial_crush, &cm, err, sizeof(err));
	if (rc) {
		free(m);
		return rc;
	}
	rc = crush_edit_print(cm, &text);
	crush_map_destroy(cm);
	if (rc) {
		free(m);
		return rc;
	}
	m->crush = text;
	rc = mon_map_set_str(&m->fsid, fsid);
	if (rc) {
		cairn__map__osd_map__free_unpacked(m, NULL);
		return rc;
	}
	*mp = m;
	return 0;
}

const char *
mon_osd_pg_addr(const Cairn__Map__Osd *o, uint32_t seed, unsigned *shard)
{
	unsigned k = o->n_shard_addrs > 1 ? seed % (unsigned)o->n_shard_addrs : 0;

	if (shard)
		*shard = k;
	return k ? o->shard_addrs[k] : o->addr;
}

Cairn__Map__Osd *
mon_osd_find(const Cairn__Map__OsdMap *m, int32_t id)
{
	for (size_t i = 0; i < m->n_osds; i++)
		if (m->osds[i]->id == id)
			return m->osds[i];
	return NULL;
}

Cairn__Map__Pool *
mon_pool_find(const Cairn__Map__OsdMap *m, const char *name)
{
	for (size_t i = 0; i < m->n_pools; i++)
		if (strcmp(m->pools[i]->name, name) == 0)
			return m->pools[i];
	return NULL;
}

Cairn__Map__Pool *
mon_pool_find_id(const Cairn__Map__OsdMap *m, int64_t id)
{
	for (size_t i = 0; i < m->n_pools; i++)
		if (m->pools[i]->id == id)
			return m->pools[i];
	return NULL;
}

/* A bucket or device name: letters, digits, '-', '_', '.'. */
static bool
good_name(const char *s, size_t max)
{
	size_t n = 0;

	if (!s || !s[0])
		return false;
	for (; s[n]; n++)
		if (!isalnum((unsigned char)s[n]) && !strchr("-_.", s[n]))
			return false;
	return n <= max;
}

/* Edit the CRUSH text of m with fn. \return fn's result, or a parse/print error. */
static int
edit_crush(Cairn__Map__OsdMap *m, int (*fn)(struct crush_map *cm, void *arg), void *arg, char *err)
{
	struct crush_map *cm;
	char *text;
	int rc = crush_text_parse(m->crush, &cm, err, MON_ERRLEN);

	if (rc)
		return -EBADMSG;
	rc = fn(cm, arg);
	if (rc >= 0 && (rc = crush_edit_print(cm, &text)) == 0) {
		struct crush_map *check;

		/*
		 * What we store must parse: catch an edit that broke the map here.
		 * Store the re-parsed map's text, which names the shadow ids the
		 * parse gave new buckets, so later edits never renumber them.
		 */
		rc = crush_text_parse(text, &check, err, MON_ERRLEN);
		free(text);
		if (rc) {
			crush_map_destroy(cm);
			return -EBADMSG;
		}
		rc = crush_edit_print(check, &text);
		crush_map_destroy(check);
		if (rc) {
			crush_map_destroy(cm);
			return rc;
		}
		if (m->crush != protobuf_c_empty_string)
			free(m->crush);
		m->crush = text;
	}
	crush_map_destroy(cm);
	return rc;
}

struct boot_crush {
	int32_t id;
	const char *host, *cls;
	uint32_t weight;
	char *err;
};

static int
boot_crush_fn(struct crush_map *cm, void *arg)
{
	struct boot_crush *b = arg;
	char name[32];
	int32_t hid = crush_item_by_name(cm, b->host);
	int rc;

	snprintf(name, sizeof(name), "osd.%d", b->id);
	rc = crush_edit_set_device(cm, b->id, name, b->cls);
	if (rc) {
		snprintf(b->err, MON_ERRLEN, "crush: cannot add %s: %s", name, strerror(-rc));
		return rc;
	}
	if (hid == INT32_MIN) {
		rc = crush_edit_add_bucket(cm, b->host, "host", "default", &hid);
		if (rc) {
			snprintf(b->err, MON_ERRLEN, "crush: cannot add host %s: %s", b->host,
				 strerror(-rc));
			return rc;
		}
	} else if (hid >= 0) {
		snprintf(b->err, MON_ERRLEN, "host name '%s' is a device's name", b->host);
		return -EINVAL;
	}
	/* Moved hosts: out of every old bucket, into the new one. */
	for (int i = 0; i < cm->max_buckets; i++) {
		struct crush_bucket *bk = cm->buckets[i];

		if (!bk || bk->class_id >= 0 || bk->id == hid)
			continue;
		for (unsigned j = 0; j < bk->size; j++) {
			if (bk->items[j] == b->id) {
				memmove(&bk->items[j], &bk->items[j + 1],
					sizeof(*bk->items) * (bk->size - j - 1));
				memmove(&bk->item_weights[j], &bk->item_weights[j + 1],
					sizeof(*bk->item_weights) * (bk->size - j - 1));
				bk->size--;
				j--;
			}
		}
	}
	rc = crush_edit_set_item(cm, hid, b->id, b->weight);
	if (rc)
		snprintf(b->err, MON_ERRLEN, "crush: cannot place %s in %s: %s", name, b->host,
			 strerror(-rc));
	return rc;
}

int
mon_osd_boot(Cairn__Map__OsdMap *m, const struct mon_osd_boot *b, int32_t *idp, char *err)
{
	Cairn__Map__Osd *o = NULL;
	int32_t id = b->id;
	bool fresh = false;
	int rc;

	err[0] = 0;
	if (!b->uuid || !b->uuid[0] || strlen(b->uuid) > 64) {
		snprintf(err, MON_ERRLEN, "an OSD needs a uuid");
		return -EINVAL;
	}
	if (!b->addr || !b->addr[0] || strlen(b->addr) > 128) {
		snprintf(err, MON_ERRLEN, "an OSD needs an address");
		return -EINVAL;
	}
	if (b->nshard_addrs > MON_OSD_SHARDS_MAX) {
		snprintf(err, MON_ERRLEN, "%zu PG shards: at most %d", b->nshard_addrs,
			 MON_OSD_SHARDS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < b->nshard_addrs; i++)
		if (!b->shard_addrs[i] || !b->shard_addrs[i][0] ||
		    strlen(b->shard_addrs[i]) > 128 ||
		    (i == 0 && strcmp(b->shard_addrs[0], b->addr) != 0)) {
			snprintf(err, MON_ERRLEN, "bad address of PG shard %zu", i);
			return -EINVAL;
		}
	if (!good_name(b->host, 64)) {
		snprintf(err, MON_ERRLEN, "bad host name '%s' (letters, digits, -_.)",
			 b->host ? b->host : "");
		return -EINVAL;
	}
	if (b->device_class && b->device_class[0] && !good_name(b->device_class, 32)) {
		snprintf(err, MON_ERRLEN, "bad device class '%s'", b->device_class);
		return -EINVAL;
	}
	if (id >= 0) {
		o = mon_osd_find(m, id);
		if (!o) {
			snprintf(err, MON_ERRLEN, "osd.%d does not exist (removed?)", id);
			return -ENOENT;
		}
		if (strcmp(o->uuid, b->uuid) != 0) {
			snprintf(err, MON_ERRLEN, "osd.%d belongs to uuid %s, not %s", id, o->uuid,
				 b->uuid);
			return -EEXIST;
		}
	} else {
		for (size_t i = 0; i < m->n_osds && !o; i++)
			if (strcmp(m->osds[i]->uuid, b->uuid) == 0)
				o = m->osds[i];
	}
	if (m->flags & MON_FLAG_NOUP) {
		snprintf(err, MON_ERRLEN, "the noup flag is set");
		return -EAGAIN;
	}
	if (!o) {
		Cairn__Map__Osd **n = realloc(m->osds, sizeof(*n) * (m->n_osds + 1));

		if (!n)
			return -ENOMEM;
		m->osds = n;
		o = malloc(sizeof(*o));
		if (!o)
			return -ENOMEM;
		cairn__map__osd__init(o);
		/* The lowest free id, as Ceph gives them. */
		for (id = 0; mon_osd_find(m, id); id++)
			;
		o->id = id;
		o->weight = b->weight ? b->weight : WEIGHT_ONE;
		o->in = !(m->flags & MON_FLAG_NOIN);
		o->reweight = o->in ? WEIGHT_ONE : 0;
		m->osds[m->n_osds++] = o;
		if (mon_map_set_str(&o->uuid, b->uuid))
			return -ENOMEM;
		if (id >= m->next_osd_id)
			m->next_osd_id = id + 1;
		fresh = true;
	}
	id = o->id;
	if (b->weight)
		o->weight = b->weight;
	if (mon_map_set_str(&o->addr, b->addr) || mon_map_set_str(&o->host, b->host) ||
	    mon_map_set_str(&o->device_class, b->device_class ? b->device_class : ""))
		return -ENOMEM;
	if (b->nshard_addrs > 1) {
		char **a = calloc(b->nshard_addrs, sizeof(*a));

		if (!a)
			return -ENOMEM;
		for (size_t i = 0; i < b->nshard_addrs; i++)
			if (!(a[i] = strdup(b->shard_addrs[i]))) {
				while (i--)
					free(a[i]);
				free(a);
				return -ENOMEM;
			}
		for (size_t i = 0; i < o->n_shard_addrs; i++)
			free(o->shard_addrs[i]);
		free(o->shard_addrs);
		o->shard_addrs = a;
		o->n_shard_addrs = b->nshard_addrs;
	} else {
		for (size_t i = 0; i < o->n_shard_addrs; i++)
			free(o->shard_addrs[i]);
		free(o->shard_addrs);
		o->shard_addrs = NULL;
		o->n_shard_addrs = 0;
	}
	o->up = true;
	o->dead = false;
	o->up_since = m->epoch + 1;
	o->down_stamp_ns = 0;
	{
		struct boot_crush bc = { .id = id,
					 .host = b->host,
					 .cls = b->device_class,
					 .weight = o->weight,
					 .err = err };

		rc = edit_crush(m, boot_crush_fn, &bc, err);
		if (rc)
			return rc;
	}
	(void)fresh;
	*idp = id;
	return 0;
}

int
mon_osd_mark_down(Cairn__Map__OsdMap *m, int32_t id, uint64_t down_ns)
{
	Cairn__Map__Osd *o = mon_osd_find(m, id);

	if (!o)
		return -ENOENT;
	if (!o->up)
		return 1;
	o->up = false;
	o->down_since = m->epoch + 1;
	o->down_stamp_ns = down_ns;
	return 0;
}

int
mon_osd_set_in(Cairn__Map__OsdMap *m, int32_t id, bool in)
{
	Cairn__Map__Osd *o = mon_osd_find(m, id);

	if (!o)
		return -ENOENT;
	if (o->in == in)
		return 1;
	o->in = in;
	o->reweight = in ? WEIGHT_ONE : 0;
	return 0;
}

int
mon_osd_reweight(Cairn__Map__OsdMap *m, int32_t id, uint32_t reweight)
{
	Cairn__Map__Osd *o = mon_osd_find(m, id);

	if (!o)
		return -ENOENT;
	if (reweight > WEIGHT_ONE)
		return -ERANGE;
	if (o->reweight == reweight && o->in == (reweight > 0))
		return 1;
	o->reweight = reweight;
	o->in = reweight > 0;
	return 0;
}

static int
rm_crush_fn(struct crush_map *cm, void *arg)
{
	int32_t id = *(int32_t *)arg;

	if (id < cm->max_devices && cm->device_names[id])
		return crush_edit_remove_item(cm, id);
	return 0;
}

static void
drop_upmaps(Cairn__Map__OsdMap *m, bool (*match)(const Cairn__Map__UpmapItem *u, int64_t v),
	    int64_t v)
{
	size_t j = 0;

	for (size_t i = 0; i < m->n_upmap_items; i++) {
		if (match(m->upmap_items[i], v))
			cairn__map__upmap_item__free_unpacked(m->upmap_items[i], NULL);
		else
			m->upmap_items[j++] = m->upmap_items[i];
	}
	m->n_upmap_items = j;
}

/* Drop the pins of pool. */
static void
drop_pins(Cairn__Map__OsdMap *m, int64_t pool)
{
	size_t j = 0;

	for (size_t i = 0; i < m->n_pg_pins; i++) {
		if (m->pg_pins[i]->pool == pool)
			cairn__map__pg_pin__free_unpacked(m->pg_pins[i], NULL);
		else
			m->pg_pins[j++] = m->pg_pins[i];
	}
	m->n_pg_pins = j;
}

static bool
upmap_uses_osd(const Cairn__Map__UpmapItem *u, int64_t id)
{
	return u->from == id || u->to == id;
}

static bool
upmap_in_pool(const Cairn__Map__UpmapItem *u, int64_t pool)
{
	return u->pool == pool;
}

int
mon_osd_rm(Cairn__Map__OsdMap *m, int32_t id, char *err)
{
	Cairn__Map__Osd *o = mon_osd_find(m, id);
	int rc;

	err[0] = 0;
	if (!o) {
		snprintf(err, MON_ERRLEN, "osd.%d does not exist", id);
		return -ENOENT;
	}
	if (o->up) {
		snprintf(err, MON_ERRLEN, "osd.%d is up: stop it (or mark it down) first", id);
		return -EBUSY;
	}
	rc = edit_crush(m, rm_crush_fn, &id, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < m->n_osds; i++) {
		if (m->osds[i] == o) {
			memmove(&m->osds[i], &m->osds[i + 1],
				sizeof(*m->osds) * (m->n_osds - i - 1));
			m->n_osds--;
			break;
		}
	}
	cairn__map__osd__free_unpacked(o, NULL);
	drop_upmaps(m, upmap_uses_osd, id);
	return 0;
}

int
mon_parse_ec_profile(const char *s, unsigned *k, unsigned *m, char *err)
{
	char *end;
	unsigned long a, b;

	errno = 0;
	a = strtoul(s, &end, 10);
	if (end == s || *end != '+' || !isdigit((unsigned char)end[1]))
		goto bad;
	s = end + 1;
	b = strtoul(s, &end, 10);
	if (*end || errno)
		goto bad;
	if (a < 2 || a > 32 || b < 1 || b > 16 || a + b > 32) {
		snprintf(err, MON_ERRLEN,
			 "erasure profile %lu+%lu: need 2 <= k <= 32, 1 <= m <= 16, k + m <= 32", a,
			 b);
		return -EINVAL;
	}
	*k = (unsigned)a;
	*m = (unsigned)b;
	return 0;
bad:
	snprintf(err, MON_ERRLEN, "bad erasure profile '%s': expected K+M, e.g. 4+2", s);
	return -EINVAL;
}

struct rule_arg {
	const char *name;
	int id;
	char *err;
};

static int
add_ec_rule_fn(struct crush_map *cm, void *arg)
{
	struct rule_arg *ra = arg;
	int rc = crush_rule_by_name(cm, ra->name);

	if (rc >= 0) {
		ra->id = rc;
		return 0;
	}
	rc = crush_edit_add_rule(cm, ra->name, "default", NULL, "host", true, &ra->id);
	if (rc)
		snprintf(ra->err, MON_ERRLEN, "crush: cannot add rule %s: %s", ra->name,
			 strerror(-rc));
	return rc;
}

static int
rule_by_name(const Cairn__Map__OsdMap *m, const char *name, char *err)
{
	struct crush_map *cm;
	int rc = crush_text_parse(m->crush, &cm, err, MON_ERRLEN);

	if (rc)
		return -EBADMSG;
	rc = crush_rule_by_name(cm, name);
	crush_map_destroy(cm);
	return rc;
}

int
mon_pool_create(Cairn__Map__OsdMap *m, const struct mon_pool_spec *s, int64_t *idp, char *err)
{
	Cairn__Map__Pool *p, **np;
	unsigned size, min_size, pg_num = s->pg_num ? s->pg_num : 32;
	int rule;

	err[0] = 0;
	if (!good_name(s->name, 64)) {
		snprintf(err, MON_ERRLEN,
			 "bad pool name '%s': 1-64 letters, digits, '-', '_' or '.'",
			 s->name ? s->name : "");
		return -EINVAL;
	}
	if (mon_pool_find(m, s->name)) {
		snprintf(err, MON_ERRLEN, "pool '%s' already exists", s->name);
		return -EEXIST;
	}
	if (pg_num > 65536) {
		snprintf(err, MON_ERRLEN, "pg_num %u: at most 65536", pg_num);
		return -EINVAL;
	}
	if (s->erasure) {
		if (s->ec_k < 2 || s->ec_k > 32 || s->ec_m < 1 || s->ec_m > 16 ||
		    s->ec_k + s->ec_m > 32) {
			snprintf(err, MON_ERRLEN,
				 "erasure profile %u+%u: need 2 <= k <= 32, 1 <= m <= 16, "
				 "k + m <= 32",
				 s->ec_k, s->ec_m);
			return -EINVAL;
		}
		size = s->ec_k + s->ec_m;
		if (s->size && s->size != size) {
			snprintf(err, MON_ERRLEN, "an EC %u+%u pool has size %u, not %u", s->ec_k,
				 s->ec_m, size, s->size);
			return -EINVAL;
		}
		if (s->stripe_unit && (s->stripe_unit % 4096 || s->stripe_unit > (1u << 20))) {
			snprintf(err, MON_ERRLEN,
				 "stripe unit %u: a multiple of 4096 bytes, at most 1 MiB",
				 s->stripe_unit);
			return -EINVAL;
		}
		min_size = s->min_size ? s->min_size : s->ec_k + (s->ec_m > 1 ? 1 : 0);
		if (min_size < s->ec_k || min_size > size) {
			snprintf(err, MON_ERRLEN, "min_size %u: between k=%u and k+m=%u", min_size,
				 s->ec_k, size);
			return -EINVAL;
		}
	} else {
		size = s->size ? s->size : 3;
		if (size > 10) {
			snprintf(err, MON_ERRLEN, "size %u: between 1 and 10", size);
			return -EINVAL;
		}
		min_size = s->min_size ? s->min_size : size - size / 2;
		if (min_size > size) {
			snprintf(err, MON_ERRLEN, "min_size %u is larger than size %u", min_size,
				 size);
			return -EINVAL;
		}
	}
	if (s->erasure) {
		char rname[96];
		struct rule_arg ra = { .name = rname, .err = err };
		int rc;

		snprintf(rname, sizeof(rname), "ec_%s", s->name);
		rc = edit_crush(m, add_ec_rule_fn, &ra, err);
		if (rc)
			return rc;
		rule = ra.id;
	} else {
		rule = rule_by_name(m, "replicated_rule", err);
		if (rule == -EBADMSG)
			return rule;
		if (rule < 0) {
			snprintf(err, MON_ERRLEN, "the CRUSH map has no rule 'replicated_rule'");
			return -ENOENT;
		}
	}
	np = realloc(m->pools, sizeof(*np) * (m->n_pools + 1));
	if (!np)
		return -ENOMEM;
	m->pools = np;
	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	cairn__map__pool__init(p);
	m->pools[m->n_pools++] = p;
	if (mon_map_set_str(&p->name, s->name))
		return -ENOMEM;
	if (m->next_pool_id < 1)
		m->next_pool_id = 1;
	p->id = m->next_pool_id++;
	p->erasure = s->erasure;
	p->size = size;
	p->min_size = min_size;
	p->ec_k = s->erasure ? s->ec_k : 0;
	p->ec_m = s->erasure ? s->ec_m : 0;
	p->stripe_unit = s->erasure ? (s->stripe_unit ? s->stripe_unit : 4096) : 0;
	p->pg_num = p->pgp_num = pg_num;
	p->crush_rule = rule;
	*idp = p->id;
	return 0;
}

static int
rm_rule_fn(struct crush_map *cm, void *arg)
{
	int id = crush_rule_by_name(cm, arg);

	return id >= 0 ? crush_edit_remove_rule(cm, id) : 0;
}

int
mon_pool_rm(Cairn__Map__OsdMap *m, const char *name, char *err)
{
	Cairn__Map__Pool *p = mon_pool_find(m, name);
	char rname[96];
	int rule;
	bool shared = false;

	err[0] = 0;
	if (!p) {
		snprintf(err, MON_ERRLEN, "pool '%s' does not exist", name);
		return -ENOENT;
	}
	rule = p->crush_rule;
	for (size_t i = 0; i < m->n_pools; i++) {
		if (m->pools[i] == p) {
			memmove(&m->pools[i], &m->pools[i + 1],
				sizeof(*m->pools) * (m->n_pools - i - 1));
			m->n_pools--;
			break;
		}
	}
	drop_upmaps(m, upmap_in_pool, p->id);
	drop_pins(m, p->id);
	if (p->erasure) {
		for (size_t i = 0; i < m->n_pools; i++)
			shared |= m->pools[i]->crush_rule == rule;
		snprintf(rname, sizeof(rname), "ec_%s", name);
		if (!shared && rule_by_name(m, rname, err) == rule) {
			int rc = edit_crush(m, rm_rule_fn, rname, err);

			if (rc) {
				cairn__map__pool__free_unpacked(p, NULL);
				return rc;
			}
		}
	}
	cairn__map__pool__free_unpacked(p, NULL);
	return 0;
}

static int
parse_u64(const char *v, uint64_t *out)
{
	char *end;

	if (!v[0] || !isdigit((unsigned char)v[0]))
		return -EINVAL;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return *end || errno ? -EINVAL : 0;
}

int
mon_pool_set(Cairn__Map__OsdMap *m, const char *name, const char *key, const char *value, char *err)
{
	Cairn__Map__Pool *p = mon_pool_find(m, name);
	uint64_t v = 0;

	err[0] = 0;
	if (!p) {
		snprintf(err, MON_ERRLEN, "pool '%s' does not exist", name);
		return -ENOENT;
	}
	if (strcmp(key, "crush_rule") == 0) {
		int r = rule_by_name(m, value, err);

		if (r == -EBADMSG)
			return r;
		if (r < 0) {
			snprintf(err, MON_ERRLEN, "no CRUSH rule named '%s'", value);
			return -ENOENT;
		}
		if (p->crush_rule == r)
			return 1;
		p->crush_rule = r;
		return 0;
	}
	if (parse_u64(value, &v)) {
		snprintf(err, MON_ERRLEN, "%s: '%s' is not a number", key, value);
		return -EINVAL;
	}
	if (strcmp(key, "size") == 0) {
		if (p->erasure) {
			snprintf(err, MON_ERRLEN, "an EC pool's size is k+m; it cannot change");
			return -EINVAL;
		}
		if (v < 1 || v > 10) {
			snprintf(err, MON_ERRLEN, "size %" PRIu64 ": between 1 and 10", v);
			return -EINVAL;
		}
		if (p->size == v)
			return 1;
		p->size = (uint32_t)v;
		if (p->min_size > p->size)
			p->min_size = p->size;
		return 0;
	}
	if (strcmp(key, "min_size") == 0) {
		unsigned lo = p->erasure ? p->ec_k : 1;

		if (v < lo || v > p->size) {
			snprintf(err, MON_ERRLEN, "min_size %" PRIu64 ": between %u and %u", v, lo,
				 p->size);
			return -EINVAL;
		}
		if (p->min_size == v)
			return 1;
		p->min_size = (uint32_t)v;
		return 0;
	}
	if (strcmp(key, "pg_num") == 0) {
		if (v < 1 || v > 65536) {
			snprintf(err, MON_ERRLEN, "pg_num %" PRIu64 ": between 1 and 65536", v);
			return -EINVAL;
		}
		if (v >= p->pg_num) {
			/* Up (or back to today's count): a merge under way stops
			 * (its paused PGs go on), and the OSDs split each PG in
			 * place (pgp_num stays, so a child sits where its parent
			 * is). */
			if (p->pg_num == v && !p->pg_num_target && !p->pg_num_pending)
				return 1;
			p->pg_num_target = 0;
			p->pg_num_pending = 0;
			p->pending_epoch = 0;
			p->pending_ns = 0;
			p->pg_num = (uint32_t)v;
			return 0;
		}
		/* Down: the leader merges in steps (mon/src/merge.c) once pgp_num
		 * (lowered here at once) has put each source PG on its target's
		 * OSDs and every PG is clean. */
		if (p->pg_num_target == v)
			return 1;
		p->pg_num_target = (uint32_t)v;
		if (p->pg_num_pending && p->pg_num_pending < v) {
			p->pg_num_pending = 0; /* the step under way went below it */
			p->pending_epoch = 0;
			p->pending_ns = 0;
		}
		if (p->pgp_num > v)
			p->pgp_num = (uint32_t)v;
		/* Upmaps are per PG: a source and its target would not sit on the
		 * same OSDs (the merge waits for that). */
		drop_upmaps(m, upmap_in_pool, p->id);
		return 0;
	}
	if (strcmp(key, "pgp_num") == 0) {
		/* Where PGs are placed: raising it after a split moves children to
		 * their own OSDs (backfill); at most pg_num (or the count a merge
		 * goes to: a source must sit on its target's OSDs). */
		uint32_t hi = p->pg_num_target ? p->pg_num_target : p->pg_num;

		if (v < 1 || v > hi) {
			snprintf(err, MON_ERRLEN, "pgp_num %" PRIu64 ": between 1 and %s (%u)", v,
				 p->pg_num_target ? "the pg_num being merged to" : "pg_num", hi);
			return -EINVAL;
		}
		if (p->pgp_num == v)
			return 1;
		/* (an EC pool's PGs move one position at a time: mon/ec_pin.h) */
		p->pgp_num = (uint32_t)v;
		return 0;
	}
	if (strcmp(key, "quota_max_bytes") == 0) {
		if (p->quota_max_bytes == v)
			return 1;
		p->quota_max_bytes = v;
		return 0;
	}
	snprintf(err, MON_ERRLEN,
		 "unknown pool setting '%s' (size, min_size, pg_num, pgp_num, "
		 "crush_rule, quota_max_bytes)",
		 key);
	return -EINVAL;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Are the n values unique? (sorts vals) */
static bool
unique(int64_t *vals, size_t n)
{
	qsort(vals, n, sizeof(*vals), cmp_i64);
	for (size_t i = 1; i < n; i++)
		if (vals[i] == vals[i - 1])
			return false;
	return true;
}

/*
 * Pins name an existing PG of an EC pool, one entry per position, OSD ids or
 * -1, none twice. \return 0, -1.
 */
static int
pins_validate(const Cairn__Map__OsdMap *m, char *err)
{
	Cairn__Map__PgPin **v;
	int rc = 0;

	for (size_t i = 0; i < m->n_pg_pins; i++) {
		const Cairn__Map__PgPin *q = m->pg_pins[i];
		const Cairn__Map__Pool *p = NULL;

		for (size_t j = 0; j < m->n_pools && !p; j++)
			if (m->pools[j]->id == q->pool)
				p = m->pools[j];
		if (!p || !p->erasure || q->seed >= p->pg_num || q->n_osds != p->size) {
			snprintf(err, MON_ERRLEN,
				 "pin of pg %" PRId64 ".%x names no PG of its size", q->pool,
				 q->seed);
			return -1;
		}
		for (size_t a = 0; a < q->n_osds; a++) {
			bool twice = false;

			for (size_t b = 0; b < a && q->osds[a] >= 0; b++)
				twice |= q->osds[b] == q->osds[a];
			if (q->osds[a] < -1 || q->osds[a] >= MON_MAX_OSD_ID || twice) {
				snprintf(err, MON_ERRLEN,
					 "pin of pg %" PRId64 ".%x names a bad osd", q->pool,
					 q->seed);
				return -1;
			}
		}
	}
	if (m->n_pg_pins < 2)
		return 0;
	v = malloc(m->n_pg_pins * sizeof(*v));
	if (!v) {
		snprintf(err, MON_ERRLEN, "out of memory");
		return -1;
	}
	memcpy(v, m->pg_pins, m->n_pg_pins * sizeof(*v));
	qsort(v, m->n_pg_pins, sizeof(*v), mon_pin_cmp);
	for (size_t i = 1; i < m->n_pg_pins && !rc; i++) {
		if (mon_pin_cmp(&v[i - 1], &v[i]) == 0) {
			snprintf(err, MON_ERRLEN, "pg %" PRId64 ".%x is pinned twice", v[i]->pool,
				 v[i]->seed);
			rc = -1;
		}
	}
	free(v);
	return rc;
}

int
mon_map_validate(const Cairn__Map__OsdMap *m, char *err)
{
	size_t n = CM_MAX(m->n_osds, m->n_pools);
	int64_t *ids = malloc(sizeof(*ids) * (n + 1));
	struct crush_map *cm;
	int rc = -EBADMSG;

	err[0] = 0;
	if (!ids) {
		snprintf(err, MON_ERRLEN, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->n_osds; i++) {
		ids[i] = m->osds[i]->id;
		if (ids[i] < 0 || ids[i] >= MON_MAX_OSD_ID) {
			snprintf(err, MON_ERRLEN, "osd id %" PRId64 " out of range", ids[i]);
			goto out;
		}
	}
	if (!unique(ids, m->n_osds)) {
		snprintf(err, MON_ERRLEN, "an osd id appears twice");
		goto out;
	}
	for (size_t i = 0; i < m->n_pools; i++) {
		const Cairn__Map__Pool *p = m->pools[i];

		ids[i] = p->id;
		if (p->size < 1 || p->size > 32 || p->min_size > p->size || p->pg_num < 1 ||
		    p->pg_num > 65536 || p->pgp_num < 1 || p->pgp_num > p->pg_num ||
		    (p->erasure && p->ec_k + p->ec_m != p->size) ||
		    (p->erasure && (p->stripe_unit % 4096 || p->stripe_unit > (1u << 20)))) {
			snprintf(err, MON_ERRLEN, "pool %" PRId64 " has impossible sizes", p->id);
			goto out;
		}
		if (p->pg_num_target >= p->pg_num ||
		    (p->pg_num_target && p->pgp_num > p->pg_num_target) ||
		    (p->pg_num_pending &&
		     (!p->pg_num_target || p->pg_num_pending < p->pg_num_target ||
		      p->pg_num_pending >= p->pg_num ||
		      p->pg_num_pending < mon_merge_half(p->pg_num))) ||
		    (p->last_merge && (p->last_merge->to >= p->last_merge->from ||
				       p->last_merge->n_sources > 65536))) {
			snprintf(err, MON_ERRLEN, "pool %" PRId64 " has an impossible merge state",
				 p->id);
			goto out;
		}
	}
	if (!unique(ids, m->n_pools)) {
		snprintf(err, MON_ERRLEN, "a pool id appears twice");
		goto out;
	}
	for (size_t i = 0; i < m->n_upmap_items; i++) {
		if (m->upmap_items[i]->from < 0 || m->upmap_items[i]->to < 0 ||
		    m->upmap_items[i]->from >= MON_MAX_OSD_ID ||
		    m->upmap_items[i]->to >= MON_MAX_OSD_ID) {
			snprintf(err, MON_ERRLEN, "an upmap item names a bad osd id");
			goto out;
		}
	}
	if (pins_validate(m, err))
		goto out;
	for (size_t i = 0; i < m->n_blocklist; i++) {
		const char *e = m->blocklist[i]->entity;

		if (!e[0] || strlen(e) > MON_ENTITY_MAX) {
			snprintf(err, MON_ERRLEN,
				 "a blocklist entry names no entity, or a long one");
			goto out;
		}
		if (i && strcmp(m->blocklist[i - 1]->entity, e) >= 0) {
			snprintf(err, MON_ERRLEN, "the blocklist is not sorted or names one twice");
			goto out;
		}
	}
	if (crush_text_parse(m->crush, &cm, err, MON_ERRLEN)) {
		char why[MON_ERRLEN];

		snprintf(why, sizeof(why), "crush map: %s", err);
		snprintf(err, MON_ERRLEN, "%s", why);
		goto out;
	}
	crush_map_destroy(cm);
	rc = 0;
out:
	free(ids);
	return rc;
}

void
mon_pool_to_crush(const Cairn__Map__Pool *p, struct crush_pool *cp)
{
	*cp = (struct crush_pool){ .id = p->id,
				   .type = p->erasure ? CRUSH_POOL_ERASURE : CRUSH_POOL_REPLICATED,
				   .size = p->size,
				   .pg_num = p->pg_num,
				   .pgp_num = p->pgp_num,
				   .rule = p->crush_rule,
				   .hashpspool = true };
}

static int
pin_cmp(const void *x, const void *y)
{
	const struct mon_pin *a = x, *b = y;

	if (a->pool != b->pool)
		return (a->pool > b->pool) - (a->pool < b->pool);
	return (a->seed > b->seed) - (a->seed < b->seed);
}

const struct mon_pin *
mon_placement_pin(const struct mon_placement *pl, int64_t pool, uint32_t seed)
{
	struct mon_pin key = { .pool = pool, .seed = seed };

	if (!pl->npins)
		return NULL;
	return bsearch(&key, pl->pins, pl->npins, sizeof(*pl->pins), pin_cmp);
}

int
mon_placement_build(const Cairn__Map__OsdMap *m, struct mon_placement *pl, char *err)
{
	int rc, max = 0;

	memset(pl, 0, sizeof(*pl));
	rc = mon_map_validate(m, err);
	if (rc)
		return rc;
	rc = crush_text_parse(m->crush, &pl->crush, err, MON_ERRLEN);
	if (rc)
		return -EBADMSG;
	for (size_t i = 0; i < m->n_osds; i++)
		max = CM_MAX(max, m->osds[i]->id + 1);
	pl->max_osd = max;
	pl->osds = calloc((size_t)max + 1, sizeof(*pl->osds));
	pl->weights = calloc((size_t)max + 1, sizeof(*pl->weights));
	pl->upmaps = calloc(m->n_upmap_items + 1, sizeof(*pl->upmaps));
	pl->work = malloc(crush_work_size(pl->crush, 64));
	if (!pl->osds || !pl->weights || !pl->upmaps || !pl->work) {
		mon_placement_free(pl);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->n_osds; i++) {
		const Cairn__Map__Osd *o = m->osds[i];

		pl->osds[o->id] = (struct crush_osd_state){ .exists = true,
							    .up = o->up,
							    .in_weight = o->in ? o->reweight : 0 };
	}
	crush_osd_weights(pl->osds, max, pl->weights);
	for (size_t i = 0; i < m->n_upmap_items; i++)
		pl->upmaps[i] = (struct crush_upmap_item){ .pool = m->upmap_items[i]->pool,
							   .seed = m->upmap_items[i]->seed,
							   .from = m->upmap_items[i]->from,
							   .to = m->upmap_items[i]->to };
	pl->nupmaps = m->n_upmap_items;
	{
		size_t tot = 0, at = 0;

		for (size_t i = 0; i < m->n_pg_pins; i++)
			tot += m->pg_pins[i]->n_osds;
		pl->pins = calloc(m->n_pg_pins + 1, sizeof(*pl->pins));
		pl->pin_osds = calloc(tot + 1, sizeof(*pl->pin_osds));
		if (!pl->pins || !pl->pin_osds) {
			mon_placement_free(pl);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->n_pg_pins; i++) {
			const Cairn__Map__PgPin *q = m->pg_pins[i];

			memcpy(&pl->pin_osds[at], q->osds, q->n_osds * sizeof(*q->osds));
			pl->pins[i] = (struct mon_pin){ .pool = q->pool,
							.seed = q->seed,
							.n = (int)q->n_osds,
							.osds = &pl->pin_osds[at],
							.epoch = q->epoch };
			at += q->n_osds;
		}
		pl->npins = m->n_pg_pins;
		qsort(pl->pins, pl->npins, sizeof(*pl->pins), pin_cmp);
	}
	return 0;
}

void
mon_placement_free(struct mon_placement *pl)
{
	crush_map_destroy(pl->crush);
	free(pl->osds);
	free(pl->weights);
	free(pl->upmaps);
	free(pl->pins);
	free(pl->pin_osds);
	free(pl->work);
	memset(pl, 0, sizeof(*pl));
}

/* cp for p if its rule exists. \return false if it does not. */
static bool
placement_pool(const struct mon_placement *pl, const Cairn__Map__Pool *p, struct crush_pool *cp)
{
	mon_pool_to_crush(p, cp);
	return cp->size <= 64 && p->crush_rule >= 0 && p->crush_rule < pl->crush->max_rules &&
	       pl->crush->rules[p->crush_rule];
}

int
mon_placement_pg_raw(struct mon_placement *pl, const Cairn__Map__Pool *p, uint32_t seed, bool nopin,
		     int32_t *raw)
{
	const struct mon_pin *pin = nopin ? NULL : mon_placement_pin(pl, p->id, seed);
	struct crush_pool cp;

	if (!placement_pool(pl, p, &cp))
		return 0;
	return crush_pg_to_raw(pl->crush, &cp, seed, pl->osds, pl->weights, pl->max_osd, pl->upmaps,
			       pl->nupmaps, pin ? pin->osds : NULL, pin ? pin->n : 0, raw,
			       pl->work);
}

int
mon_placement_pg_up(struct mon_placement *pl, const Cairn__Map__Pool *p, uint32_t seed, int32_t *up,
		    int *primary)
{
	struct crush_pool cp;
	int32_t raw[64];
	int n;

	*primary = -1;
	if (!placement_pool(pl, p, &cp))
		return 0;
	n = mon_placement_pg_raw(pl, p, seed, false, raw);
	return crush_raw_to_up(&cp, pl->osds, pl->max_osd, raw, n, up, primary);
}

/* ---------- the blocklist ---------- */

bool
mon_blocklisted(const Cairn__Map__OsdMap *m, const char *entity)
{
	size_t lo = 0, hi = m ? m->n_blocklist : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(m->blocklist[mid]->entity, entity);

		if (!c)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

int
mon_blocklist_add(Cairn__Map__OsdMap *m, const char *entity, uint64_t until_ns, char *err)
{
	Cairn__Map__BlocklistEntry *e, **grown;
	size_t n = strlen(entity);

	if (!n || n > MON_ENTITY_MAX) {
		snprintf(err, MON_ERRLEN, "an entity name is 1 to %d bytes", MON_ENTITY_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)entity[i] <= ' ' || (unsigned char)entity[i] == 0x7f) {
			snprintf(err, MON_ERRLEN, "an entity name has no spaces or control bytes");
			return -EINVAL;
		}
	for (size_t i = 0; i < m->n_blocklist; i++)
		if (strcmp(m->blocklist[i]->entity, entity) == 0) {
			/* renewed: a new expiry, the same fence */
			m->blocklist[i]->until_ns = until_ns;
			return 0;
		}
	e = malloc(sizeof(*e));
	grown = realloc(m->blocklist, (m->n_blocklist + 1) * sizeof(*grown));
	if (grown)
		m->blocklist = grown;
	if (!e || !grown || !(entity = strdup(entity))) {
		free(e);
		return -ENOMEM;
	}
	cairn__map__blocklist_entry__init(e);
	e->entity = (char *)entity;
	e->until_ns = until_ns;
	e->added_epoch = m->epoch + 1;
	m->blocklist[m->n_blocklist++] = e;
	qsort(m->blocklist, m->n_blocklist, sizeof(*m->blocklist), mon_blocklist_cmp);
	return 0;
}

static void
blocklist_drop(Cairn__Map__OsdMap *m, size_t i)
{
	protobuf_c_message_free_unpacked(&m->blocklist[i]->base, NULL);
	memmove(&m->blocklist[i], &m->blocklist[i + 1],
		(m->n_blocklist - i - 1) * sizeof(*m->blocklist));
	m->n_blocklist--;
}

int
mon_blocklist_rm(Cairn__Map__OsdMap *m, const char *entity)
{
	for (size_t i = 0; i < m->n_blocklist; i++)
		if (strcmp(m->blocklist[i]->entity, entity) == 0) {
			blocklist_drop(m, i);
			return 0;
		}
	return 1;
}

unsigned
mon_blocklist_expire(Cairn__Map__OsdMap *m, uint64_t wall_ns)
{
	unsigned n = 0;

	for (size_t i = 0; i < m->n_blocklist;) {
		uint64_t until = m->blocklist[i]->until_ns;

		if (until && until <= wall_ns) {
			blocklist_drop(m, i);
			n++;
		} else {
			i++;
		}
	}
	return n;
}
