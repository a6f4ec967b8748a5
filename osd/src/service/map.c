/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Maps: applied on every shard, handed from shard 0 to the others, kept in
 * the store so a restart replays the epochs it missed.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(osd);

/* A new map on shard o: placement, sessions, PGs, waiting ops. */
static void
apply_map(struct osd *o, const Cairn__Map__OsdMap *m)
{
	char err[MON_ERRLEN];

	o->map = m;
	o->epoch = m->epoch;
	osd__lease_note_epoch(o, m->epoch); /* before any peer hears of it from us */
	if (o->pl_ok)
		mon_placement_free(&o->pl);
	o->pl_ok = mon_placement_build(m, &o->pl, err) == 0;
	if (!o->pl_ok && o->shard == 0)
		CM_ERR("map epoch %" PRIu64 ": cannot place PGs: %s", m->epoch, err);
	osd__update_peers(o);
	if (o->pl_ok)
		osd__pg_on_map(o);
	osd__pg_retry_wait_map(o);
}

/* ---------- the other shards: maps and boot state in, stats out ---------- */

struct shard_post {
	struct cm_reactor_msg m;
	struct osd *o; /* the shard it is for */
	uint8_t *map;  /* a packed map, or NULL (boot state only) */
	size_t len;
	int32_t id;
	bool booted;
	uint64_t up_epoch;
	uint64_t want_epoch; /* to shard 0: ask the mons for maps after this */
};

static void
shard_post_free(void *arg)
{
	struct shard_post *p = arg;

	free(p->map);
	free(p);
}

static void
shard_state_run(void *arg)
{
	struct shard_post *p = arg;
	struct osd *o = p->o;
	bool booted_now = p->booted && !o->booted;

	if (o->stopping) {
		shard_post_free(p); /* no new map: nothing new starts */
		return;
	}

	o->id = p->id;
	o->booted = p->booted;
	o->up_epoch = p->up_epoch;
	if (p->map) {
		Cairn__Map__OsdMap *m = cairn__map__osd_map__unpack(NULL, p->len, p->map);

		if (!m) {
			CM_ERR("shard %u: cannot decode the map shard 0 handed over", o->shard);
		} else {
			Cairn__Map__OsdMap *old = o->own_map;

			o->own_map = m;
			apply_map(o, m);
			if (old)
				cairn__map__osd_map__free_unpacked(old, NULL);
		}
	} else if (booted_now && o->map && o->pl_ok && o->epoch >= o->up_epoch) {
		osd__pg_on_map(o);
	}
	osd__shard_snapshot(o);
	atomic_store(&o->node->beacon_soon, true);
	shard_post_free(p);
}

/* Shard 0: tell the other shards our id, boot state and (when buf) the packed map. */
void
osd__shards_publish(struct osd *o, const uint8_t *buf, size_t len)
{
	struct osd_node *nd = o->node;

	if (nd->n <= 1)
		return;
	for (unsigned k = 1; k < nd->n; k++) {
		struct shard_post *p = calloc(1, sizeof(*p));

		if (!p || (buf && !(p->map = malloc(len ? len : 1)))) {
			free(p);
			CM_ERR("out of memory handing the map to shard %u", k);
			continue;
		}
		if (buf) {
			memcpy(p->map, buf, len);
			p->len = len;
		}
		p->o = nd->sh[k];
		p->id = o->id;
		p->booted = o->booted;
		p->up_epoch = o->up_epoch;
		p->m = (struct cm_reactor_msg){ .fn = shard_state_run,
						.arg = p,
						.drop = shard_post_free };
		cm_reactor_post(nd->sh[k]->r, &p->m);
	}
}

static void
want_map_run(void *arg)
{
	struct shard_post *p = arg;
	struct osd *o = p->o;

	if (o->monc)
		mon_async_want_map(o->monc, p->want_epoch);
	shard_post_free(p);
}

void
osd__want_map(struct osd *o, uint64_t epoch)
{
	struct osd *o0 = o->node ? o->node->sh[0] : o;
	struct shard_post *p;

	if (o0 == o) {
		mon_async_want_map(o->monc, epoch);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return; /* the op waits for the next map anyway */
	p->o = o0;
	p->want_epoch = epoch;
	p->m = (struct cm_reactor_msg){ .fn = want_map_run, .arg = p, .drop = shard_post_free };
	cm_reactor_post(o0->r, &p->m);
}

/*
 * The last map seen, kept in the store (collection "meta", object "osd",
 * omap key "map"): a restart starts the mon client from it, so the epochs
 * published while the OSD was down arrive one by one and its PGs learn the
 * acting sets they missed (the last one that held each PG is its "before";
 * see docs/design/osd.md). Written without waiting: after a crash an older
 * map only means more epochs to replay.
 */
#define MAP_KEY "map"

bool
osd__meta_ok(const struct osd *o)
{
	return (o->node ? o->node->sh[0] : o)->meta_ok;
}

static void
map_save(struct osd *o, const uint8_t *buf, size_t len)
{
	struct os_txn *t = NULL;

	if (!o->meta_ok || os_txn_create(&t))
		return;
	if (os_txn_omap_set(t, OSD_META_CID, OSD_META_OID, MAP_KEY, sizeof(MAP_KEY) - 1, buf, len))
		os_txn_destroy(t);
	else
		os_queue(o->store, t, NULL, NULL);
}

/* Before the reactor runs: make the meta object if needed, start monc from the kept map. */
void
osd__map_seed(struct osd *o)
{
	struct os_kv key = { .key = (uint8_t *)MAP_KEY, .klen = sizeof(MAP_KEY) - 1 }, val = { 0 };
	struct os_stat st;
	int rc = os_stat(o->store, OSD_META_CID, OSD_META_OID, &st);

	if (rc == -ENOENT) {
		char **cids = NULL;
		size_t n = 0;
		bool have = false;
		struct os_txn *t = NULL;

		if (os_list_collections(o->store, &cids, &n) == 0)
			for (size_t i = 0; i < n; i++) {
				have |= strcmp(cids[i], OSD_META_CID) == 0;
				free(cids[i]);
			}
		free(cids);
		if (os_txn_create(&t) == 0 && (have || os_txn_mkcoll(t, OSD_META_CID) == 0) &&
		    os_txn_touch(t, OSD_META_CID, OSD_META_OID) == 0) {
			os_queue(o->store, t, NULL, NULL);
			o->meta_ok = true;
		} else if (t) {
			os_txn_destroy(t);
		}
		return;
	}
	if (rc) {
		CM_WARN("cannot read the kept map: %s (starting from the mons' map)",
			cm_strerror(rc));
		return;
	}
	if (os_omap_get(o->store, OSD_META_CID, OSD_META_OID, &key, 1, &val) || !val.val) {
		o->meta_ok = true;
		return;
	}
	rc = mon_async_seed_map(o->monc, val.val, val.vlen); /* (not saved again) */
	o->meta_ok = true;
	if (rc)
		CM_WARN("the kept map is unreadable (%s): starting from the mons' map",
			cm_strerror(rc));
	else if (o->map)
		CM_NOTICE("starting from the kept map, epoch %" PRIu64
			  "; replaying the epochs after it",
			  o->map->epoch);
	free(val.key);
	free(val.val);
}

void
osd__on_map(void *arg, const Cairn__Map__OsdMap *m)
{
	struct osd *o = arg;
	const Cairn__Map__Osd *me;

	me = o->id >= 0 ? mon_osd_find(m, o->id) : NULL;
	if (o->booted && me && !me->up && m->epoch > o->up_epoch) {
		CM_NOTICE("map epoch %" PRIu64 " marks us down: booting again", m->epoch);
		o->booted = false;
		o->last_boot_ms = 0;
	}
	CM_DEBUG("map epoch %" PRIu64, m->epoch);
	apply_map(o, m);
	{
		/* Packed once: for the other shards and for the store. */
		size_t len = cairn__map__osd_map__get_packed_size(m);
		uint8_t *buf = malloc(len ? len : 1);

		if (buf) {
			cairn__map__osd_map__pack(m, buf);
			osd__shards_publish(o, buf, len);
			map_save(o, buf, len);
			free(buf);
		} else {
			CM_ERR("out of memory packing map epoch %" PRIu64, m->epoch);
		}
	}
	o->last_beacon_ms = 0; /* tell the mons our PGs' states soon */
}
