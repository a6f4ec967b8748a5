/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PG table: creation in the store, loading at start, states and stats.
 */
#include "osd_int.h"
#include "load_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

const char *
osd__pg_state_name(enum osd_pg_state s)
{
	switch (s) {
	case OSD_PG_NONE:
		return "stray";
	case OSD_PG_CREATING:
		return "creating";
	case OSD_PG_PEERING:
		return "peering";
	case OSD_PG_ACTIVE:
		return "active";
	case OSD_PG_REPLICA:
		return "replica";
	case OSD_PG_DOWN:
		return "down";
	case OSD_PG_INCOMPLETE:
		return "incomplete";
	case OSD_PG_RECOVERING:
		return "recovering";
	case OSD_PG_BACKFILLING:
		return "backfilling";
	}
	return "?";
}

/* ---------- encoding helpers ---------- */

/* ---------- the PG table ---------- */

size_t
osd__pg_hash(int64_t pool, uint32_t seed, size_t nb)
{
	uint64_t h = (uint64_t)pool * 0x9e3779b97f4a7c15ull ^ seed * 0xc2b2ae3d27d4eb4full;

	return (size_t)(h >> 17) % nb;
}

struct osd_pg *
osd__pg_find_any(struct osd *o, int64_t pool, uint32_t seed)
{
	struct osd_pg *pg;

	if (!o->pgs)
		return NULL;
	for (pg = o->pgs[osd__pg_hash(pool, seed, o->npg_b)]; pg; pg = pg->hnext)
		if (pg->pool == pool && pg->seed == seed)
			return pg;
	return NULL;
}

struct osd_pg *
osd__pg_find(struct osd *o, int64_t pool, uint32_t seed)
{
	struct osd_pg *pg = osd__pg_find_any(o, pool, seed);

	return pg && !pg->splitting && !pg->split_wait && !pg->merging ? pg : NULL;
}

struct osd_pg *
osd__pg_new(struct osd *o, int64_t pool, uint32_t seed)
{
	struct osd_pg *pg;
	size_t h;

	if (!o->pgs) {
		o->npg_b = 1024;
		o->pgs = calloc(o->npg_b, sizeof(*o->pgs));
		if (!o->pgs)
			return NULL;
	}
	pg = calloc(1, sizeof(*pg));
	if (!pg)
		return NULL;
	pg->log_cap = o->cfg->pg_log_max + OSD_TRIM_SLACK + 1;
	pg->log = calloc(pg->log_cap, sizeof(*pg->log));
	if (!pg->log) {
		free(pg);
		return NULL;
	}
	pg->osd = o;
	pg->be = &osd__backend_replicated; /* until a map shows its pool */
	pg->pool = pool;
	pg->seed = seed;
	pg->primary = -1;
	snprintf(pg->cid, sizeof(pg->cid), "pg.%" PRId64 ".%x", pool, seed);
	TAILQ_INIT(&pg->waiting);
	TAILQ_INIT(&pg->running);
	TAILQ_INIT(&pg->notifies);
	TAILQ_INIT(&pg->repops);
	pg->my_shard = -1;
	h = osd__pg_hash(pool, seed, o->npg_b);
	pg->hnext = o->pgs[h];
	o->pgs[h] = pg;
	o->npgs++;
	return pg;
}

static void
pg_destroy(struct osd_pg *pg)
{
	struct osd_op *op;
	struct osd_repop *rp;

	while ((rp = TAILQ_FIRST(&pg->repops))) {
		TAILQ_REMOVE(&pg->repops, rp, link);
		free(rp);
	}
	while ((op = TAILQ_FIRST(&pg->waiting))) {
		TAILQ_REMOVE(&pg->waiting, op, link);
		op->queued = false;
		osd__op_free(op);
	}
	while ((op = TAILQ_FIRST(&pg->running))) {
		TAILQ_REMOVE(&pg->running, op, link);
		op->queued = false;
		osd__op_free(op);
	}
	osd__watch_reset(pg, false);
	osd__rec_reset(pg);
	osd__pg_log_clear(pg);
	osd_oset_clear(&pg->missing);
	osd__merge_free(pg);
	free(pg->stashes);
	free(pg->log);
	free(pg);
}

void
osd__pg_free_all(struct osd *o)
{
	struct osd_op *op;

	osd__rec_free_all(o);
	osd__backends_abort_all(o); /* after the jobs are marked dead, before the PGs' ops go */
	osd__pga_free_all(o);
	while ((op = TAILQ_FIRST(&o->wait_map))) {
		TAILQ_REMOVE(&o->wait_map, op, link);
		op->queued = false;
		osd__op_free(op);
	}
	for (size_t b = 0; b < o->npg_b; b++) {
		struct osd_pg *pg = o->pgs[b], *next;

		for (; pg; pg = next) {
			next = pg->hnext;
			pg_destroy(pg);
		}
	}
	free(o->pgs);
	o->pgs = NULL;
	o->npgs = 0;
}

int
osd__pgmeta_walk(struct os_store *s, const char *cid, const char *prefix, size_t plen,
		 int (*fn)(void *arg, const struct os_kv *kv), void *arg)
{
	uint8_t *after = NULL;
	size_t alen = 0;
	bool more = true;
	int rc = 0;

	while (more && !rc) {
		struct os_kv *kvs = NULL;
		size_t n = 0;

		rc = os_omap_iterate(s, cid, OSD_PGMETA, after, alen, prefix, plen, 512, &kvs, &n,
				     &more);
		for (size_t i = 0; i < n && !rc; i++)
			rc = fn(arg, &kvs[i]);
		if (!rc && n) {
			uint8_t *g = realloc(after, kvs[n - 1].klen);

			if (!g) {
				rc = -ENOMEM;
			} else {
				after = g;
				alen = kvs[n - 1].klen;
				memcpy(after, kvs[n - 1].key, alen);
			}
		}
		os_kvs_free(kvs, n);
		if (!n)
			break;
	}
	free(after);
	return rc;
}

/* ---------- loading PGs at start (blocking) ---------- */

/* One object our copy lacks (key 'm' + name). */
static int
missing_load(void *arg, const struct os_kv *kv)
{
	struct osd_pg *pg = arg;
	char name[OSD_NAME_MAX + 1];
	size_t nl = kv->klen - 1;

	if (kv->klen < 2 || nl > OSD_NAME_MAX)
		return -EIO;
	memcpy(name, kv->key + 1, nl);
	name[nl] = 0;
	return osd_oset_put(&pg->missing, name, 0);
}

/* The objects our copy lacks (keys 'm' + name in OSD_PGMETA's omap). */
static int
pg_load_missing(struct osd_pg *pg)
{
	int rc = osd__pgmeta_walk(pg->osd->store, pg->cid, "m", 1, missing_load, pg);

	if (!rc && pg->missing.n)
		CM_INFO("%s: %zu objects missing from an unfinished recovery", pg->cid,
			pg->missing.n);
	if (!rc)
		pg->in_store = true;
	return rc;
}

/* EC: one stash object our copy keeps (key 's' + version). */
static int
stash_load(void *arg, const struct os_kv *kv)
{
	struct osd_pg *pg = arg;
	struct osd_ver v;

	if (kv->klen != 17)
		return -EIO;
	v.epoch = osd_get_be64(kv->key + 1);
	v.seq = osd_get_be64(kv->key + 9);
	return osd__stash_add(pg, NULL, &v);
}

/* EC: the stash objects our copy keeps (keys 's' + version in OSD_PGMETA's omap). */
static int
pg_load_stashes(struct osd_pg *pg)
{
	int rc = osd__pgmeta_walk(pg->osd->store, pg->cid, "s", 1, stash_load, pg);

	if (!rc && pg->nstash)
		CM_NOTICE("%s: %zu rollback stashes kept", pg->cid, pg->nstash);
	return rc;
}

/* The PG's info record (OSD_PGMETA "info"). */
static int
info_load(struct osd_pg *pg, const uint8_t *v, size_t n)
{
	Cairn__Osd__PgInfo *pi = cairn__osd__pg_info__unpack(NULL, n, v);

	if (!pi) {
		CM_ERR("%s: undecodable PG info", pg->cid);
		return -EIO;
	}
	osd_ver_from_pb(pi->last_update, &pg->last_update);
	osd_ver_from_pb(pi->log_tail, &pg->log_tail);
	pg->last_epoch_started = pi->last_epoch_started;
	pg->incomplete = pi->incomplete;
	pg->info_shard = pi->shard;
	cairn__osd__pg_info__free_unpacked(pi, NULL);
	return 0;
}

/* One entry of the PG log (key 'l' + version). */
static int
log_load(struct osd_pg *pg, const uint8_t *v, size_t n)
{
	Cairn__Osd__LogEntry *le = cairn__osd__log_entry__unpack(NULL, n, v);
	int rc;

	if (!le)
		return -EIO;
	rc = osd__pg_log_append(pg, le);
	cairn__osd__log_entry__free_unpacked(le, NULL);
	return rc;
}

/* The pg_num the copy is split for (OSD_SPLIT_KEY). */
static int
split_load(struct osd_pg *pg, const uint8_t *v, size_t n)
{
	int rc = osd_split_rec_get(v, n, &pg->split_for);

	if (rc)
		CM_ERR("%s: unreadable split record (%zu bytes)", pg->cid, n);
	return rc;
}

int
osd__pg_load_record(struct osd_pg *pg, const struct os_kv *kv)
{
	if (kv->klen == 4 && memcmp(kv->key, "info", 4) == 0)
		return info_load(pg, kv->val, kv->vlen);
	if (kv->klen == sizeof(OSD_SPLIT_KEY) - 1 &&
	    memcmp(kv->key, OSD_SPLIT_KEY, sizeof(OSD_SPLIT_KEY) - 1) == 0)
		return split_load(pg, kv->val, kv->vlen);
	if (kv->klen == sizeof(OSD_PRIOR_KEY) - 1 &&
	    memcmp(kv->key, OSD_PRIOR_KEY, sizeof(OSD_PRIOR_KEY) - 1) == 0) {
		osd__prior_load(pg, kv->val, kv->vlen);
		return 0;
	}
	if (kv->klen && kv->key[0] == 'l')
		return log_load(pg, kv->val, kv->vlen);
	if (kv->klen && kv->key[0] == 's')
		return stash_load(pg, kv);
	if (kv->klen && kv->key[0] == 'm')
		return missing_load(pg, kv);
	return 0;
}

static int
pg_load(struct osd_pg *pg)
{
	struct os_store *s = pg->osd->store;
	/* info, the prior record, the split record: one read */
	struct os_kv keys[3] = { { .key = (uint8_t *)"info", .klen = 4 },
				 { .key = (uint8_t *)OSD_PRIOR_KEY,
				   .klen = sizeof(OSD_PRIOR_KEY) - 1 },
				 { .key = (uint8_t *)OSD_SPLIT_KEY,
				   .klen = sizeof(OSD_SPLIT_KEY) - 1 } },
		     vals[3] = { { 0 } };
	uint8_t after[OSD_LOGKEY_LEN];
	size_t salen = 0;
	bool more = true;
	int rc;

	rc = os_omap_get(s, pg->cid, OSD_PGMETA, keys, 3, vals);
	if (!rc && vals[0].val)
		rc = info_load(pg, vals[0].val, vals[0].vlen);
	if (!rc && vals[1].val)
		osd__prior_load(pg, vals[1].val, vals[1].vlen);
	if (!rc && vals[2].val)
		rc = split_load(pg, vals[2].val, vals[2].vlen);
	for (int i = 0; i < 3; i++)
		osd_kv_clear(&vals[i]);
	if (rc)
		return rc;
	while (more) {
		struct os_kv *kvs = NULL;
		size_t n = 0;

		rc = os_omap_iterate(s, pg->cid, OSD_PGMETA, salen ? after : NULL, salen, "l", 1,
				     512, &kvs, &n, &more);
		if (rc)
			return rc;
		for (size_t i = 0; i < n && !rc; i++) {
			rc = log_load(pg, kvs[i].val, kvs[i].vlen);
			if (rc == -EIO)
				break;
			if (kvs[i].klen == OSD_LOGKEY_LEN) {
				memcpy(after, kvs[i].key, OSD_LOGKEY_LEN);
				salen = OSD_LOGKEY_LEN;
			}
		}
		os_kvs_free(kvs, n);
		if (rc)
			return rc;
		if (!n)
			break;
	}
	rc = pg_load_stashes(pg);
	return rc ? rc : pg_load_missing(pg);
}

int
osd__pg_reload(struct osd_pg *pg)
{
	osd__pg_log_clear(pg);
	osd_oset_clear(&pg->missing);
	pg->nstash = 0;
	pg->nprior = 0;
	pg->prior_loaded = false;
	pg->last_update = pg->log_tail = (struct osd_ver){ 0, 0 };
	pg->last_epoch_started = 0;
	pg->incomplete = false;
	pg->split_for = 0;
	pg->in_store = false;
	pg->merged_away = false;
	return pg_load(pg);
}

int
osd__pg_load_all(struct osd *o)
{
	char **cids = NULL;
	size_t n = 0;
	int rc = os_list_collections(o->store, &cids, &n);

	for (size_t i = 0; i < n && !rc; i++) {
		int64_t pool;
		unsigned seed;
		struct osd_pg *pg;
		int end = 0;

		if (sscanf(cids[i], "pg.%" SCNd64 ".%x%n", &pool, &seed, &end) != 2 ||
		    cids[i][end] || !osd_pg_mine(o, seed))
			continue;
		pg = osd__pg_new(o, pool, seed);
		if (!pg) {
			rc = -ENOMEM;
			break;
		}
		rc = pg_load(pg);
		if (rc)
			CM_ERR("cannot load %s: %s", cids[i], cm_strerror(rc));
	}
	os_names_free(cids, n);
	if (!rc)
		osd__pivs_load_all(o);
	return rc;
}

static void
pg_created(void *arg, int rc)
{
	struct osd_pg *pg = arg;

	pg->creating = false;
	if (rc) {
		CM_ERR("%s: cannot create: %s", pg->cid, cm_strerror(rc));
		return;
	}
	pg->in_store = true;
	if (pg->primary == pg->osd->id && pg->state == OSD_PG_CREATING)
		osd__pg_start_peering(pg);
	else if (pg->state == OSD_PG_CREATING)
		pg->state = OSD_PG_REPLICA;
	{
		/* pg_num grew while it was being made: split it now, not at some
		 * later map (children on other shards wait for it). */
		const Cairn__Map__Pool *p = pg->osd->map ? osd__pool(pg->osd, pg->pool) : NULL;

		if (p && (pg->split_for != p->pg_num || pg->seed >= p->pg_num || pg->nmq) &&
		    pg->osd->pl_ok)
			osd__pg_on_map(pg->osd);
	}
}

void
osd__pg_create_in_store(struct osd_pg *pg)
{
	Cairn__Osd__PgInfo pi = CAIRN__OSD__PG_INFO__INIT;
	struct os_txn *t;
	uint8_t buf[128];
	size_t n;
	int rc;

	pi.pool = pg->pool;
	pi.seed = pg->seed;
	pi.epoch_created = pg->osd->epoch;
	pi.shard = pg->info_shard = osd__pg_shard_label(pg);
	n = cairn__osd__pg_info__pack(&pi, buf);
	rc = os_txn_create(&t);
	if (!rc)
		rc = os_txn_mkcoll(t, pg->cid);
	if (!rc)
		rc = os_txn_touch(t, pg->cid, OSD_PGMETA);
	if (!rc)
		rc = os_txn_omap_set(t, pg->cid, OSD_PGMETA, "info", 4, buf, n);
	if (!rc)
		rc = osd__prior_txn(pg, t, false);
	if (!rc)
		rc = osd__split_txn(pg, t, pg->split_for);
	if (rc) {
		os_txn_destroy(t);
		CM_ERR("%s: cannot create: %s", pg->cid, cm_strerror(rc));
		return;
	}
	pg->creating = true;
	osd__queue(pg->osd, t, pg_created, pg);
}

/* The state as `clusterctl status` shows it. */
static const char *
pg_state_str(const struct osd_pg *pg)
{
	bool full = (unsigned)pg->nacting >= pg->size;
	bool wait = false;

	for (int i = 0; i < pg->nacting; i++)
		wait |= pg->peer[i].step == OSD_REC_WAIT;
	switch (pg->state) {
	case OSD_PG_ACTIVE:
		if (!pg->be->writable(pg))
			return "active+undersized+degraded+readonly";
		if (!pg->rec_pending)
			return full ? "active+clean" : "active+undersized+degraded";
		if (pg->rec_backfill && wait)
			return full ? "active+backfill_wait+degraded"
				    : "active+backfill_wait+undersized+degraded";
		if (pg->rec_backfill)
			return full ? "active+backfilling+degraded"
				    : "active+backfilling+undersized+degraded";
		if (wait)
			return full ? "active+recovery_wait+degraded"
				    : "active+recovery_wait+undersized+degraded";
		return full ? "active+recovering+degraded"
			    : "active+recovering+undersized+degraded";
	case OSD_PG_RECOVERING:
		return (unsigned)pg->nacting >= pg->size ? "recovering" : "recovering+undersized";
	case OSD_PG_BACKFILLING:
		return (unsigned)pg->nacting >= pg->size ? "backfilling" : "backfilling+undersized";
	default:
		return osd__pg_state_name(pg->state);
	}
}

int
osd__pg_stats(struct osd *o, Cairn__Mon__PgStat **out, size_t *n)
{
	Cairn__Mon__PgStat *a;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	a = calloc(o->npgs + 1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	for (size_t b = 0; b < o->npg_b; b++)
		for (struct osd_pg *pg = o->pgs[b]; pg; pg = pg->hnext) {
			if (pg->primary != o->id || pg->state == OSD_PG_NONE ||
			    pg->state == OSD_PG_REPLICA)
				continue;
			cairn__mon__pg_stat__init(&a[k]);
			a[k].pool = pg->pool;
			a[k].seed = pg->seed;
			a[k].state = (char *)pg_state_str(pg);
			a[k].epoch = o->epoch;
			if (pg->in_store &&
			    os_coll_stat(o->store, pg->cid, &a[k].objects, &a[k].bytes) == 0 &&
			    a[k].objects) {
				a[k].objects--; /* OSD_PGMETA */
				/* EC rollback stashes are not objects (their bytes
				 * count: they take space until dropped) */
				a[k].objects -= CM_MIN(a[k].objects, (uint64_t)pg->nstash);
				a[k].bytes = pg->be->stat_bytes(pg, a[k].bytes);
			}
			a[k].degraded = pg->rmiss.n;
			if (osd__merge_ready(pg)) {
				a[k].merge_ready = true;
				a[k].lu_epoch = pg->last_update.epoch;
				a[k].lu_seq = pg->last_update.seq;
			}
			k++;
		}
	*out = a;
	*n = k;
	return 0;
}
