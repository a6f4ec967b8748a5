/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PG merge: a pool's pg_num went down (mon/merge.h has the mons' half).
 * pgp_num had put each source PG on its target's OSDs, and before the step
 * the mons waited until the primaries had paused both, with both clean and
 * nothing in flight, and recorded their versions in the map (last_merge).
 *
 * Every OSD then moves the objects of each source copy it holds into the
 * target copy, locally, in one store transaction per target: the objects
 * (moved, not copied), the source's log entries (re-versioned into the
 * merge's epoch, so a resend of an op applied before the merge is still
 * found), and the target's new info. The collection of the source goes.
 *
 * Clean or stale: a copy pair at exactly the recorded versions (complete,
 * nothing missing, same EC shard) merges clean, to last_update (merge
 * epoch, max(seq) + 1), the same on every such OSD, so the merged PG peers
 * with nothing to recover. Any other copy (it missed writes, the step, or
 * one of the pair) becomes an incomplete copy at version 0, which the
 * primary backfills.
 *
 * Shards: a source and its target may belong to different PG shards of
 * this OSD. The source's shard hides its copy, waits for its transactions
 * to commit (a barrier), and tells the target's shard it is quiet; the
 * target's shard hides the target the same way, lists the store's
 * collections for the sources it holds, waits until each is quiet, builds
 * the transaction on a worker from what the store holds, and after the
 * commit tells each source's shard its copy is gone.
 *
 * While merging, copies are hidden from every message (osd__pg_find): ops
 * wait, peering queries are answered busy.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"
#include "crush/placement.h"
#include "mon/osdmap.h"

CM_LOG_SUBSYS(pg);

/* What one copy's store records say (read on the worker). */
struct merge_copy {
	bool info; /* has an info record */
	struct osd_ver lu, tail;
	bool incomplete;
	bool missing;   /* any 'm' record */
	uint32_t shard; /* EC: info_shard */
	uint32_t split_for;
	uint64_t les;
};

struct osd_merge {
	struct osd *o;
	struct osd_pg *pg; /* the target (hidden while merging) */
	int64_t pool;
	uint32_t seed, to;
	/* the map's last step, if it is about this pg_num */
	bool step;
	uint32_t step_from;
	uint64_t step_epoch;
	bool rec; /* the step merged a source into us: its versions */
	uint32_t rec_seed;
	struct osd_ver rec_src, rec_tgt;
	struct crush_pool cp; /* the pool now (for the sources' target) */
	uint32_t *expect;     /* sources of ours in the store (listed after the barrier) */
	size_t nexpect;
	bool listed, building;
	bool busy;      /* a barrier or listing of it is out: its callback frees a cancelled job */
	bool cancelled; /* stopped by a map (pg no longer points to it) */
	uint64_t relist_ms, warn_ms; /* waiting for quiet sources: list again, complain */
	struct cm_work w;
	struct os_txn *t;
	int rc;
	char why[160];
	bool clean, created;
	size_t src_skip; /* clean: the source's oldest log entries left out */
	size_t moved, entries;
	uint64_t start_ms;
};

bool
osd__merge_paused(const Cairn__Map__Pool *p, uint32_t seed)
{
	uint32_t half;

	if (!p->pg_num_pending || p->pg_num_pending >= p->pg_num)
		return false;
	half = mon_merge_half(p->pg_num);
	if (seed >= p->pg_num_pending && seed < p->pg_num)
		return true; /* a source */
	return seed < half && seed + half >= p->pg_num_pending && seed + half < p->pg_num;
}

bool
osd__merge_ready(struct osd_pg *pg)
{
	const Cairn__Map__Pool *p = pg->osd->map ? osd__pool(pg->osd, pg->pool) : NULL;

	return p && osd__merge_paused(p, pg->seed) && pg->primary == pg->osd->id &&
	       pg->state == OSD_PG_ACTIVE && !pg->rec_pending && !pg->incomplete &&
	       (unsigned)pg->nacting >= pg->size && !pg->missing.n && !pg->rmiss.n &&
	       TAILQ_EMPTY(&pg->running) && TAILQ_EMPTY(&pg->waiting) && TAILQ_EMPTY(&pg->repops) &&
	       pg->be->writable(pg) && osd__pg_readable(pg); /* no past primary's lease left */
}

/* The PG a source's objects go to now. */
static uint32_t
final_target(const Cairn__Map__Pool *p, uint32_t s)
{
	return crush_stable_mod(s, p->pg_num, crush_pg_mask(p->pg_num));
}

static struct osd *
shard_of(struct osd *o, uint32_t seed)
{
	return o->node && o->node->n > 1 ? o->node->sh[seed % o->node->n] : o;
}

/* ---------- posts between shards ---------- */

/* QUIET: source -> target's shard; GONE, RELEASE (it is a PG again): target -> source's. */
enum merge_post_kind { MP_QUIET = 1, MP_GONE, MP_RELEASE };

struct merge_post {
	struct cm_reactor_msg m;
	struct osd *o;
	enum merge_post_kind kind;
	int64_t pool;
	uint32_t target, source;
};

static void merge_quiet(struct osd *o, int64_t pool, uint32_t target, uint32_t source);
static void merge_gone(struct osd *o, int64_t pool, uint32_t source);
static void merge_release(struct osd *o, int64_t pool, uint32_t source);

static void
post_deliver(struct osd *o, enum merge_post_kind kind, int64_t pool, uint32_t target,
	     uint32_t source)
{
	if (kind == MP_QUIET)
		merge_quiet(o, pool, target, source);
	else if (kind == MP_GONE)
		merge_gone(o, pool, source);
	else
		merge_release(o, pool, source);
}

static void
post_run(void *arg)
{
	struct merge_post *p = arg;

	if (!p->o->stopping)
		post_deliver(p->o, p->kind, p->pool, p->target, p->source);
	free(p);
}

static void
post_to(struct osd *from, uint32_t shard_seed, enum merge_post_kind kind, int64_t pool,
	uint32_t target, uint32_t source)
{
	struct osd *to = shard_of(from, shard_seed);
	struct merge_post *p;

	if (to == from) {
		post_deliver(from, kind, pool, target, source);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		CM_ERR("pg.%" PRId64 ".%x: no memory to tell shard %u of the merge", pool, source,
		       to->shard);
		return;
	}
	*p = (struct merge_post){
		.o = to, .kind = kind, .pool = pool, .target = target, .source = source
	};
	p->m = (struct cm_reactor_msg){ .fn = post_run, .arg = p, .drop = free };
	cm_reactor_post(to->r, &p->m);
}

/* ---------- sources ---------- */

static void
source_barrier(void *arg, int rc)
{
	struct osd_pg *pg = arg;
	struct osd *o = pg->osd;
	const Cairn__Map__Pool *p = o->map ? osd__pool(o, pg->pool) : NULL;

	if (o->stopping)
		return;
	if (rc)
		CM_ERR("%s: its last transactions failed before the merge: %s", pg->cid,
		       cm_strerror(rc));
	if (!p || pg->seed < p->pg_num) {
		/* pg_num went up again meanwhile: it is a PG again */
		pg->merging = false;
		osd__pg_on_map(o);
		osd__pg_retry_wait_map(o);
		return;
	}
	post_to(o, final_target(p, pg->seed), MP_QUIET, pg->pool, final_target(p, pg->seed),
		pg->seed);
}

static void
source_start(struct osd_pg *pg)
{
	struct osd *o = pg->osd;
	struct os_txn *t = NULL;
	int rc = os_txn_create(&t);

	osd__pg_hide(pg);
	pg->merging = true;
	pg->split_gen++; /* stale wipes and removals of it are dropped */
	osd__rec_jobs_stale(o, pg->pool, pg->seed);
	if (!rc)
		rc = os_txn_touch(t, pg->cid, OSD_PGMETA);
	if (rc) {
		if (t)
			os_txn_destroy(t);
		CM_ERR("%s: cannot start its merge: %s (the next map tries again)", pg->cid,
		       cm_strerror(rc));
		pg->merging = false;
		return;
	}
	CM_INFO("%s: merging away (pg_num is below it now)", pg->cid);
	osd__queue(o, t, source_barrier, pg);
}

void
osd__merge_sources_on_map(struct osd *o, const Cairn__Map__Pool *pool)
{
	for (size_t b = 0; b < o->npg_b; b++)
		for (struct osd_pg *pg = o->pgs[b]; pg; pg = pg->hnext) {
			if (pg->pool != pool->id || pg->seed < pool->pg_num || pg->merging)
				continue;
			if (pg->in_store && !pg->creating && !pg->splitting && !pg->split_wait) {
				source_start(pg);
			} else if (pg->state != OSD_PG_NONE) {
				osd__pg_hide(pg); /* no such PG any more */
				pg->primary = -1;
			}
		}
}

/* Our copy of source went into its target: forget it (its collection is gone). */
static void
merge_gone(struct osd *o, int64_t pool, uint32_t source)
{
	struct osd_pg *pg = osd__pg_find_any(o, pool, source);

	if (!pg)
		return;
	osd__pg_log_clear(pg);
	osd_oset_clear(&pg->missing);
	pg->nstash = 0;
	pg->in_store = false;
	pg->incomplete = false;
	pg->last_update = pg->log_tail = (struct osd_ver){ 0, 0 };
	pg->split_for = 0;
	pg->merging = false;
	pg->merged_away = true;
	pg->state = OSD_PG_NONE;
	osd__pg_retry_wait_map(o);
}

/* The target's shard let our source go (pg_num rose again before it merged). */
static void
merge_release(struct osd *o, int64_t pool, uint32_t source)
{
	struct osd_pg *pg = osd__pg_find_any(o, pool, source);

	if (!pg || !pg->merging || pg->mg)
		return;
	CM_INFO("%s: not merged after all (pg_num rose again)", pg->cid);
	pg->merging = false;
	if (o->map && o->pl_ok)
		osd__pg_on_map(o);
	osd__pg_retry_wait_map(o);
}

/* ---------- targets ---------- */

static void target_round(struct osd_pg *pg, const Cairn__Map__Pool *pool);
static void target_try(struct osd_merge *j);

void
osd__merge_free(struct osd_pg *pg)
{
	free(pg->mq);
	pg->mq = NULL;
	pg->nmq = pg->capmq = 0;
	/* a job under way holds pg; the OSD stops before PGs are freed */
}

static bool
mq_has(const struct osd_pg *pg, uint32_t s)
{
	for (size_t i = 0; i < pg->nmq; i++)
		if (pg->mq[i] == s)
			return true;
	return false;
}

static void
mq_drop(struct osd_pg *pg, uint32_t s)
{
	for (size_t i = 0; i < pg->nmq; i++)
		if (pg->mq[i] == s) {
			pg->mq[i] = pg->mq[--pg->nmq];
			return;
		}
}

/* Source's shard says it is quiet and goes into target. */
static void
merge_quiet(struct osd *o, int64_t pool, uint32_t target, uint32_t source)
{
	const Cairn__Map__Pool *p = o->map ? osd__pool(o, pool) : NULL;
	struct osd_pg *pg = osd__pg_find_any(o, pool, target);

	if (p && source < p->pg_num) {
		post_to(o, source, MP_RELEASE, pool, target, source); /* a PG again */
		return;
	}
	if (!pg)
		pg = osd__pg_new(o, pool, target);
	if (!pg) {
		CM_ERR("pg.%" PRId64 ".%x: no memory for the merge of pg.%" PRId64 ".%x", pool,
		       target, pool, source);
		return;
	}
	if (!mq_has(pg, source)) {
		if (pg->nmq == pg->capmq) {
			size_t cap = pg->capmq ? 2 * pg->capmq : 4;
			uint32_t *g = realloc(pg->mq, cap * sizeof(*g));

			if (!g) {
				CM_ERR("%s: no memory to note a source of its merge", pg->cid);
				return;
			}
			pg->mq = g;
			pg->capmq = cap;
		}
		pg->mq[pg->nmq++] = source;
	}
	if (pg->mg) {
		target_try(pg->mg);
		return;
	}
	/* (a shard whose map is older starts the round when the map comes) */
	if (!pg->merging && p && source >= p->pg_num && target < p->pg_num && !pg->creating &&
	    !pg->splitting && !pg->split_wait && o->pl_ok)
		target_round(pg, p);
}

static void
job_free(struct osd_merge *j)
{
	if (j->pg && j->pg->mg == j)
		j->pg->mg = NULL;
	if (j->t)
		os_txn_destroy(j->t);
	free(j->expect);
	free(j);
}

static void
merge_fail(struct osd_merge *j, int rc)
{
	struct osd_pg *pg = j->pg;

	if (!j->o->stopping) {
		pg->merge_retry_ms = cm_now_ms() + 1000;
		CM_ERR("%s: cannot merge: %s%s%s (trying again in 1 s)", pg->cid, cm_strerror(rc),
		       j->why[0] ? ": " : "", j->why);
	}
	job_free(j); /* pg stays merging (hidden) until the retry */
}

static void list_fn(void *arg);
static void list_done(void *arg);

static bool
job_expects(const struct osd_merge *j, uint32_t s)
{
	for (size_t i = 0; j && i < j->nexpect; i++)
		if (j->expect[i] == s)
			return true;
	return false;
}

void
osd__merge_tick(struct osd_pg *pg, uint64_t now_ms)
{
	struct osd_merge *j = pg->mg;

	if (j && j->listed && !j->building && now_ms >= j->relist_ms) {
		/* Still waiting for a source's shard: the store may have dropped
		 * it meanwhile (a stray's removal), so list again. */
		j->relist_ms = now_ms + 2000;
		if (now_ms >= j->warn_ms) {
			j->warn_ms = now_ms + 30000;
			for (size_t i = 0; i < j->nexpect; i++)
				if (!mq_has(pg, j->expect[i]))
					CM_WARN("%s: its merge waits for pg.%" PRId64 ".%x, which "
						"its shard has not handed over",
						pg->cid, j->pool, j->expect[i]);
		}
		j->listed = false;
		free(j->expect);
		j->expect = NULL;
		j->nexpect = 0;
		j->w = (struct cm_work){ .fn = list_fn, .done = list_done, .arg = j };
		j->busy = true;
		if (osd__work(j->o, &j->w)) {
			j->busy = false;
			merge_fail(j, -ESHUTDOWN);
		}
		return;
	}
	if (!pg->merging || j || !pg->merge_retry_ms || now_ms < pg->merge_retry_ms)
		return;
	/* A failed round: the map decides again (a round, a split, or nothing). */
	pg->merge_retry_ms = 0;
	pg->merging = false;
	if (pg->osd->map && pg->osd->pl_ok)
		osd__pg_on_map(pg->osd);
}

bool
osd__merge_on_map_pg(struct osd_pg *pg, const Cairn__Map__Pool *p)
{
	struct osd_merge *j = pg->mg;

	/* Noted sources that are PGs again go back (not one a build moves now). */
	for (size_t i = 0; i < pg->nmq;) {
		uint32_t s = pg->mq[i];

		if (s < p->pg_num && !(j && j->building && job_expects(j, s))) {
			mq_drop(pg, s);
			post_to(pg->osd, s, MP_RELEASE, pg->pool, pg->seed, s);
			continue;
		}
		i++;
	}
	if (j && !j->building && j->to != p->pg_num) {
		CM_INFO("%s: merge for pg_num %u stopped (pg_num is %u now)", pg->cid, j->to,
			p->pg_num);
		pg->mg = NULL;
		pg->merging = false;
		if (j->busy)
			j->cancelled = true; /* its callback frees it */
		else
			job_free(j);
	}
	return pg->merging;
}

/* Read a copy's info, split record and whether it misses objects. */
static int
copy_read(struct os_store *s, const char *cid, struct merge_copy *c)
{
	struct os_kv keys[2] = { { .key = (uint8_t *)"info", .klen = 4 },
				 { .key = (uint8_t *)OSD_SPLIT_KEY,
				   .klen = sizeof(OSD_SPLIT_KEY) - 1 } },
		     vals[2] = { { 0 } }, *kvs = NULL;
	size_t n = 0;
	bool more;
	int rc = os_omap_get(s, cid, OSD_PGMETA, keys, 2, vals);

	memset(c, 0, sizeof(*c));
	if (!rc && vals[0].val) {
		Cairn__Osd__PgInfo *pi =
			cairn__osd__pg_info__unpack(NULL, vals[0].vlen, vals[0].val);

		if (pi) {
			c->info = true;
			osd_ver_from_pb(pi->last_update, &c->lu);
			osd_ver_from_pb(pi->log_tail, &c->tail);
			c->incomplete = pi->incomplete;
			c->shard = pi->shard;
			c->les = pi->last_epoch_started;
			cairn__osd__pg_info__free_unpacked(pi, NULL);
		} else {
			rc = -EIO;
		}
	}
	if (!rc && vals[1].val && osd_split_rec_get(vals[1].val, vals[1].vlen, &c->split_for))
		rc = -EIO;
	osd_kv_clear(&vals[0]);
	osd_kv_clear(&vals[1]);
	if (!rc)
		rc = os_omap_iterate(s, cid, OSD_PGMETA, NULL, 0, "m", 1, 1, &kvs, &n, &more);
	if (!rc)
		c->missing = n > 0;
	os_kvs_free(kvs, n);
	return rc;
}

static int
put_info(struct osd_merge *j, const struct merge_copy *c, int64_t pool)
{
	Cairn__Osd__PgInfo pi = CAIRN__OSD__PG_INFO__INIT;
	Cairn__Osd__Version lu = CAIRN__OSD__VERSION__INIT, tail = CAIRN__OSD__VERSION__INIT;
	uint8_t b[128];
	size_t n;

	pi.pool = pool;
	pi.seed = j->seed;
	osd_ver_to_pb(&c->lu, &lu);
	osd_ver_to_pb(&c->tail, &tail);
	pi.last_update = &lu;
	pi.log_tail = &tail;
	pi.last_epoch_started = c->les;
	pi.incomplete = c->incomplete;
	pi.shard = c->shard;
	n = cairn__osd__pg_info__get_packed_size(&pi);
	if (n > sizeof(b))
		return -EOVERFLOW;
	cairn__osd__pg_info__pack(&pi, b);
	return os_txn_omap_set(j->t, j->pg->cid, OSD_PGMETA, "info", 4, b, n);
}

/* A walk over a copy's pgmeta records (osd__pgmeta_walk) for the merge. */
struct rec_walk {
	struct osd_merge *j;
	const char *cid, *tcid;
	size_t seen, drop;   /* log keys seen; the oldest drop of them go */
	struct osd_ver last; /* the newest log key dropped */
};

static int
log_key_fn(void *arg, const struct os_kv *kv)
{
	struct rec_walk *w = arg;
	int rc = 0;

	if (kv->klen != OSD_LOGKEY_LEN)
		return 0;
	if (w->seen++ < w->drop) {
		rc = os_txn_omap_rm(w->j->t, w->cid, OSD_PGMETA, kv->key, kv->klen);
		w->last = (struct osd_ver){ osd_get_be64(kv->key + 1), osd_get_be64(kv->key + 9) };
	}
	return rc;
}

/*
 * The log keys of a copy, oldest first: count them, and (drop > 0) remove the
 * oldest drop of them in j's transaction, *last the version of the newest
 * removed.
 */
static int
log_keys(struct osd_merge *j, const char *cid, size_t *n, size_t drop, struct osd_ver *last)
{
	struct rec_walk w = { .j = j, .cid = cid, .drop = drop, .last = *last };
	int rc = osd__pgmeta_walk(j->o->store, cid, "l", 1, log_key_fn, &w);

	*n = w.seen;
	*last = w.last;
	return rc;
}

/* An EC rollback stash record ('s' + version): its stash object goes. */
static int
stash_drop(struct osd_merge *j, const char *cid, const struct os_kv *kv)
{
	char sname[OSD_STASH_NAME_MAX];
	struct osd_ver v = { osd_get_be64(kv->key + 1), osd_get_be64(kv->key + 9) };

	osd_stash_name(&v, sname);
	return os_txn_remove_any(j->t, cid, sname);
}

/*
 * A source's log entry, re-versioned into the target's pgmeta; the object
 * (still in the source's collection, moved after) takes the new version as
 * its "v", so that a push naming its newest entry's version finds it
 * (entries come oldest first: the newest one's is the last set).
 */
static int
log_entry_move(struct osd_merge *j, const char *scid, const char *tcid, const struct os_kv *kv)
{
	Cairn__Osd__LogEntry *le = cairn__osd__log_entry__unpack(NULL, kv->vlen, kv->val);
	uint8_t key[OSD_LOGKEY_LEN], *b, verbuf[16];
	struct osd_ver v;
	size_t bl;
	int rc;

	if (!le || !le->ver) {
		if (le)
			cairn__osd__log_entry__free_unpacked(le, NULL);
		snprintf(j->why, sizeof(j->why), "undecodable log entry of a source");
		return -EIO;
	}
	/* Same seq, the merge's epoch: above every entry of the target, in the
	 * order the source made them, the same on every clean copy. */
	le->ver->epoch = j->step_epoch;
	le->undo = 0; /* committed everywhere: nothing to roll back */
	le->undo_off = le->undo_len = 0;
	le->n_sent_to = 0;
	v = (struct osd_ver){ le->ver->epoch, le->ver->seq };
	osd_log_key(&v, key);
	bl = cairn__osd__log_entry__get_packed_size(le);
	b = malloc(bl ? bl : 1);
	if (!b) {
		cairn__osd__log_entry__free_unpacked(le, NULL);
		return -ENOMEM;
	}
	cairn__osd__log_entry__pack(le, b);
	rc = os_txn_omap_set(j->t, tcid, OSD_PGMETA, key, OSD_LOGKEY_LEN, b, bl);
	free(b);
	if (!rc && le->oid && le->oid[0] && le->op != OSD_LOG_DELETE) {
		struct os_stat st;

		if (os_stat(j->o->store, scid, le->oid, &st) == 0) {
			osd_ver_pack(&v, verbuf);
			rc = os_txn_setattr(j->t, scid, le->oid, "v", verbuf, sizeof(verbuf));
		}
	}
	cairn__osd__log_entry__free_unpacked(le, NULL);
	j->entries++;
	return rc;
}

static int
source_record_fn(void *arg, const struct os_kv *kv)
{
	struct rec_walk *w = arg;

	if (kv->klen == 17 && kv->key[0] == 's')
		return stash_drop(w->j, w->cid, kv);
	if (!w->j->clean || kv->klen != OSD_LOGKEY_LEN || kv->key[0] != 'l')
		return 0;
	if (w->seen++ < w->drop)
		return 0; /* older than the merged log keeps */
	return log_entry_move(w->j, w->cid, w->tcid, kv);
}

/*
 * One source's pgmeta records: when clean, its log entries but the oldest
 * skip move (re-versioned); the rest go with its collection.
 */
static int
source_records(struct osd_merge *j, const char *scid, const char *tcid, size_t skip)
{
	struct rec_walk w = { .j = j, .cid = scid, .tcid = tcid, .drop = skip };

	return osd__pgmeta_walk(j->o->store, scid, NULL, 0, source_record_fn, &w);
}

static int
target_forget_fn(void *arg, const struct os_kv *kv)
{
	struct rec_walk *w = arg;
	int rc = 0;

	if (!kv->klen || (kv->key[0] != 'l' && kv->key[0] != 'm' && kv->key[0] != 's'))
		return 0;
	if (kv->klen == 17 && kv->key[0] == 's')
		rc = stash_drop(w->j, w->cid, kv);
	return rc ? rc : os_txn_omap_rm(w->j->t, w->cid, OSD_PGMETA, kv->key, kv->klen);
}

/* A stale target: its log, missing records and stashes go (it is backfilled). */
static int
target_forget(struct osd_merge *j)
{
	struct rec_walk w = { .j = j, .cid = j->pg->cid };

	return osd__pgmeta_walk(j->o->store, j->pg->cid, NULL, 0, target_forget_fn, &w);
}

/* Move every object of the source into the target; its own objects (\x01...) go. */
static int
source_objects(struct osd_merge *j, const char *scid, const char *tcid)
{
	struct os_store *s = j->o->store;
	char *after = NULL;
	bool more = true;
	int rc = 0;

	while (more && !rc) {
		char **names = NULL;
		size_t n = 0;

		rc = os_list(s, scid, after, 1024, &names, &n, &more);
		for (size_t i = 0; i < n && !rc; i++) {
			if (names[i][0] == '\x01') {
				if (strcmp(names[i], OSD_PGMETA) != 0)
					rc = os_txn_remove_any(j->t, scid, names[i]);
				continue;
			}
			rc = os_txn_move(j->t, scid, names[i], tcid, names[i]);
			j->moved++;
		}
		free(after);
		after = n ? names[n - 1] : NULL;
		if (n)
			names[n - 1] = NULL;
		os_names_free(names, n);
		if (!n)
			break;
	}
	free(after);
	if (!rc)
		rc = os_txn_remove_any(j->t, scid, OSD_PGMETA);
	if (!rc)
		rc = os_txn_rmcoll(j->t, scid);
	return rc;
}

/* On a worker: decide clean or stale, build the transaction. */
static void
build_fn(void *arg)
{
	struct osd_merge *j = arg;
	struct os_store *s = j->o->store;
	struct merge_copy tc, sc = { 0 };
	struct os_stat st;
	char scid[48];

	j->rc = os_txn_create(&j->t);
	if (j->rc)
		return;
	j->created = os_stat(s, j->pg->cid, OSD_PGMETA, &st) != 0;
	if (j->created) {
		memset(&tc, 0, sizeof(tc));
		j->rc = os_txn_mkcoll(j->t, j->pg->cid);
		if (!j->rc)
			j->rc = os_txn_touch(j->t, j->pg->cid, OSD_PGMETA);
	} else {
		j->rc = copy_read(s, j->pg->cid, &tc);
	}
	if (!j->rc && j->nexpect == 1) {
		snprintf(scid, sizeof(scid), "pg.%" PRId64 ".%x", j->pool, j->expect[0]);
		j->rc = copy_read(s, scid, &sc);
	}
	if (j->rc)
		return;
	/* Clean: the step merged exactly this pair into us, and both copies are
	 * complete at the versions the primaries reported. */
	j->clean = j->step && j->rec && j->nexpect == 1 && j->expect[0] == j->rec_seed && tc.info &&
		   sc.info && !tc.incomplete && !sc.incomplete && !tc.missing && !sc.missing &&
		   tc.split_for == j->step_from && sc.split_for == j->step_from &&
		   tc.shard == sc.shard && osd_ver_cmp(&tc.lu, &j->rec_tgt) == 0 &&
		   osd_ver_cmp(&sc.lu, &j->rec_src) == 0;
	if (!j->nexpect && !j->created && (!j->step || !j->rec)) {
		/* Nothing merged into this PG: only its split record changes. */
		j->clean = true;
	} else if (j->clean) {
		/*
		 * The merged log keeps the newest half of each log at most, so
		 * that it fits the ring a load reads (pg_log_max) and the next
		 * writes' trims do not drop all of the target's own entries at
		 * once: a resend of a recent op of either PG is still found.
		 */
		size_t keep = (size_t)CM_MAX(j->o->cfg->pg_log_max / 2, (uint64_t)1), nt = 0,
		       ns = 0;
		struct osd_ver last = { 0, 0 };

		j->rc = log_keys(j, j->pg->cid, &nt, 0, &last);
		if (!j->rc && nt > keep)
			j->rc = log_keys(j, j->pg->cid, &nt, nt - keep, &last);
		if (!j->rc)
			j->rc = log_keys(j, scid, &ns, 0, &last);
		j->src_skip = ns > keep ? ns - keep : 0;
		if (nt > keep && osd_ver_cmp(&last, &tc.tail) > 0)
			tc.tail = last;
		if (j->src_skip || sc.tail.epoch || sc.tail.seq) {
			/*
			 * The source's log does not reach back to its creation
			 * (trimmed before, or its oldest entries dropped here): nor
			 * does the merged one. A tail between the target's entries
			 * and the source's (re-versioned at the step's epoch) says
			 * so: a copy with nothing is backfilled, not rebuilt from a
			 * log that lacks some of its objects.
			 */
			struct osd_ver at = { j->step_epoch, 0 };

			if (osd_ver_cmp(&at, &tc.tail) > 0)
				tc.tail = at;
		}
		tc.lu = (struct osd_ver){ j->step_epoch, CM_MAX(tc.lu.seq, sc.lu.seq) + 1 };
		if (!j->rc)
			j->rc = put_info(j, &tc, j->pool);
	} else {
		if (!tc.info) {
			tc.shard = sc.shard;
			tc.les = sc.les;
		}
		tc.lu = tc.tail = (struct osd_ver){ 0, 0 };
		tc.incomplete = true;
		if (!j->created)
			j->rc = target_forget(j);
		if (!j->rc)
			j->rc = put_info(j, &tc, j->pool);
		if (!j->rc && j->created && j->nexpect) {
			/* the source's past intervals say who else may hold data */
			struct os_kv key = { .key = (uint8_t *)OSD_PRIOR_KEY,
					     .klen = sizeof(OSD_PRIOR_KEY) - 1 },
				     val = { 0 };

			snprintf(scid, sizeof(scid), "pg.%" PRId64 ".%x", j->pool, j->expect[0]);
			if (os_omap_get(s, scid, OSD_PGMETA, &key, 1, &val) == 0 && val.val)
				j->rc = os_txn_omap_set(j->t, j->pg->cid, OSD_PGMETA, key.key,
							key.klen, val.val, val.vlen);
			osd_kv_clear(&val);
		}
	}
	for (size_t i = 0; i < j->nexpect && !j->rc; i++) {
		snprintf(scid, sizeof(scid), "pg.%" PRId64 ".%x", j->pool, j->expect[i]);
		j->rc = source_records(j, scid, j->pg->cid, j->src_skip);
		if (!j->rc)
			j->rc = source_objects(j, scid, j->pg->cid);
	}
	if (!j->rc)
		j->rc = osd__split_txn(j->pg, j->t, j->to);
}

static void
committed(void *arg, int rc)
{
	struct osd_merge *j = arg;
	struct osd *o = j->o;
	struct osd_pg *pg = j->pg;
	struct osd_pga_copy pga;

	j->t = NULL; /* the store took it */
	if (rc || o->stopping) {
		merge_fail(j, rc ? rc : -ESHUTDOWN);
		return;
	}
	osd__pga_take(o, j->pool, j->seed, &pga);
	rc = osd__pg_reload(pg);
	if (rc)
		CM_ERR("%s: cannot load after the merge: %s", pg->cid, cm_strerror(rc));
	osd__pga_give(o, j->pool, j->seed, &pga);
	pg->merging = false;
	pg->state = OSD_PG_NONE; /* the map applied next sees a new interval */
	pg->nacting = 0;
	for (size_t i = 0; i < j->nexpect; i++) {
		mq_drop(pg, j->expect[i]);
		post_to(o, j->expect[i], MP_GONE, j->pool, j->seed, j->expect[i]);
	}
	if (j->nexpect || j->created)
		CM_NOTICE("%s: merged %zu source(s) for pg_num %u, %s: %zu objects and %zu log "
			  "entries moved in %" PRIu64 " ms",
			  pg->cid, j->nexpect, j->to,
			  j->clean ? "clean" : "stale (incomplete: it is backfilled)", j->moved,
			  j->entries, cm_now_ms() - j->start_ms);
	o->pg_merges++;
	job_free(j);
	if (o->map && o->pl_ok)
		osd__pg_on_map(o); /* the merged PG peers in its new interval */
	osd__pg_retry_wait_map(o);
	/* A source that turned up during the build: another round. */
	if (pg->nmq && !pg->merging && !pg->mg && o->map) {
		const Cairn__Map__Pool *p = osd__pool(o, pg->pool);

		if (p && pg->seed < p->pg_num)
			target_round(pg, p);
	}
}

static void
build_done(void *arg)
{
	struct osd_merge *j = arg;
	struct os_txn *t = j->t;

	if (j->rc || j->o->stopping) {
		merge_fail(j, j->rc ? j->rc : -ESHUTDOWN);
		return;
	}
	j->t = NULL;
	osd__queue(j->o, t, committed, j);
}

/* Every expected source quiet? Then build. */
static void
target_try(struct osd_merge *j)
{
	int rc;

	if (!j->listed || j->building)
		return;
	for (size_t i = 0; i < j->nexpect; i++)
		if (!mq_has(j->pg, j->expect[i]))
			return; /* its shard has not quiesced it yet */
	j->building = true;
	j->w = (struct cm_work){ .fn = build_fn, .done = build_done, .arg = j };
	rc = osd__work(j->o, &j->w);
	if (rc)
		merge_fail(j, rc);
}

/* On a worker: the sources of ours the store holds. */
static void
list_fn(void *arg)
{
	struct osd_merge *j = arg;
	char **cids = NULL;
	size_t n = 0;

	j->rc = os_list_collections(j->o->store, &cids, &n);
	for (size_t i = 0; i < n && !j->rc; i++) {
		int64_t pool;
		unsigned seed;
		int end = 0;
		uint32_t *g;

		if (sscanf(cids[i], "pg.%" SCNd64 ".%x%n", &pool, &seed, &end) != 2 ||
		    cids[i][end] || pool != j->pool || seed < j->to ||
		    crush_stable_mod(seed, j->to, crush_pg_mask(j->to)) != j->seed)
			continue;
		g = realloc(j->expect, (j->nexpect + 1) * sizeof(*g));
		if (!g) {
			j->rc = -ENOMEM;
			break;
		}
		j->expect = g;
		j->expect[j->nexpect++] = seed;
	}
	os_names_free(cids, n);
}

static void
list_done(void *arg)
{
	struct osd_merge *j = arg;

	j->busy = false;
	if (j->cancelled) {
		job_free(j);
		return;
	}
	if (j->rc || j->o->stopping) {
		merge_fail(j, j->rc ? j->rc : -ESHUTDOWN);
		return;
	}
	j->listed = true;
	if (j->nexpect)
		CM_INFO("%s: merging %zu source(s) for pg_num %u", j->pg->cid, j->nexpect, j->to);
	target_try(j);
}

static void
target_barrier(void *arg, int rc)
{
	struct osd_merge *j = arg;

	j->busy = false;
	if (j->cancelled) {
		job_free(j);
		return;
	}
	if (rc || j->o->stopping) {
		merge_fail(j, rc ? rc : -ESHUTDOWN);
		return;
	}
	j->w = (struct cm_work){ .fn = list_fn, .done = list_done, .arg = j };
	j->busy = true;
	rc = osd__work(j->o, &j->w);
	if (rc) {
		j->busy = false;
		merge_fail(j, rc);
	}
}

/* Hide the target, let its transactions commit, then list its sources. */
static void
target_round(struct osd_pg *pg, const Cairn__Map__Pool *p)
{
	struct osd *o = pg->osd;
	struct osd_merge *j = calloc(1, sizeof(*j));
	struct os_txn *t = NULL;
	int rc = j ? 0 : -ENOMEM;

	osd__pg_hide(pg);
	pg->merging = true;
	pg->split_gen++;
	osd__rec_jobs_stale(o, pg->pool, pg->seed);
	if (rc) {
		pg->merge_retry_ms = cm_now_ms() + 1000;
		CM_ERR("%s: no memory to start its merge (trying again in 1 s)", pg->cid);
		return;
	}
	*j = (struct osd_merge){ .o = o,
				 .pg = pg,
				 .pool = pg->pool,
				 .seed = pg->seed,
				 .to = p->pg_num,
				 .start_ms = cm_now_ms() };
	if (p->last_merge && p->last_merge->to == p->pg_num) {
		const Cairn__Map__MergeStep *st = p->last_merge;
		uint32_t half = mon_merge_half(st->from), s0 = pg->seed + half;

		j->step = true;
		j->step_from = st->from;
		j->step_epoch = st->epoch;
		if (pg->seed < half && s0 >= st->to && s0 < st->from &&
		    s0 - st->to < st->n_sources && st->sources[s0 - st->to]->seed == s0) {
			const Cairn__Map__MergeSource *ms = st->sources[s0 - st->to];

			j->rec = true;
			j->rec_seed = s0;
			j->rec_src = (struct osd_ver){ ms->src_epoch, ms->src_seq };
			j->rec_tgt = (struct osd_ver){ ms->tgt_epoch, ms->tgt_seq };
		}
	}
	pg->mg = j;
	if (!pg->in_store) {
		j->busy = true;
		target_barrier(j, 0); /* nothing of its own in flight */
		return;
	}
	rc = os_txn_create(&t);
	if (!rc)
		rc = os_txn_touch(t, pg->cid, OSD_PGMETA);
	if (rc) {
		if (t)
			os_txn_destroy(t);
		merge_fail(j, rc);
		return;
	}
	j->busy = true;
	osd__queue(o, t, target_barrier, j);
}

bool
osd__merge_target_on_map(struct osd_pg *pg, const Cairn__Map__Pool *p, struct os_txn **mt)
{
	const Cairn__Map__MergeStep *st = p->last_merge;

	if (!pg->nmq && st && st->to == p->pg_num && pg->split_for == st->from) {
		uint32_t half = mon_merge_half(st->from), s0 = pg->seed + half;

		if (!(pg->seed < half && s0 >= st->to && s0 < st->from)) {
			/* not a target of the step: nothing comes in */
			pg->split_for = p->pg_num;
			if (*mt || os_txn_create(mt) == 0)
				(void)osd__split_txn(pg, *mt, pg->split_for);
			return false;
		}
	}
	target_round(pg, p);
	return true;
}
