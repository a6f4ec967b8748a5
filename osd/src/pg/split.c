/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PG split: a pool's pg_num grew. Every OSD that holds a copy of a PG (the
 * acting set, strays too) moves the objects whose PG changed into the child
 * PGs, locally, in one store transaction per parent: the children's
 * collections, their objects (moved, not copied), the log entries, missing
 * entries and rollback stashes of those objects, the parent's info and
 * prior record (past intervals) for each child. With pgp_num unchanged a
 * child is placed where its parent is, so no data crosses the network; the
 * parent and its children then peer as after any interval change.
 *
 * While a copy splits it is hidden from every message (osd__pg_find): ops
 * get -ESTALE and are resent, peering queries are answered "busy". A child
 * whose ancestor on this OSD has not split yet waits (split_wait) instead of
 * being created empty. The transaction is built on a worker from what the
 * store holds once every earlier transaction of the PG committed (a barrier
 * transaction first: the store commits in queue order), and the split
 * record (OSD_SPLIT_KEY) commits with it, so a crash splits again from the
 * start, never twice. See docs/design/osd.md.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"
#include "crush/placement.h"

CM_LOG_SUBSYS(pg);

/* One child of the split: its seed, and whether its collection existed already. */
struct split_kid {
	uint32_t seed;
	bool exists; /* made empty before (the parent was being created): gets no records */
	bool gets;   /* receives objects or records */
	char cid[48];
};

/* A log entry's version and the seed its object goes to (for the stash keys). */
struct split_ver {
	struct osd_ver v;
	uint32_t seed;
};

struct split_job {
	struct osd *o;
	struct osd_pg *pg; /* the parent (hidden while splitting, never freed before us) */
	int64_t pool;
	uint32_t seed, from, to;
	struct crush_pool cp; /* the pool with pg_num = to */
	struct cm_work w;
	struct os_txn *t;
	int rc;
	char why[160];
	struct split_kid *kids;
	size_t nkids;
	struct split_ver *vers;
	size_t nvers, capvers;
	size_t moved, records;
	uint64_t start_ms;
};

static void
split_key(uint32_t pg_num, uint8_t v[4])
{
	v[0] = (uint8_t)pg_num;
	v[1] = (uint8_t)(pg_num >> 8);
	v[2] = (uint8_t)(pg_num >> 16);
	v[3] = (uint8_t)(pg_num >> 24);
}

static int
split_key_txn(struct os_txn *t, const char *cid, uint32_t pg_num)
{
	uint8_t v[4];

	split_key(pg_num, v);
	return os_txn_omap_set(t, cid, OSD_PGMETA, OSD_SPLIT_KEY, sizeof(OSD_SPLIT_KEY) - 1, v, 4);
}

int
osd__split_txn(struct osd_pg *pg, struct os_txn *t, uint32_t pg_num)
{
	return pg_num ? split_key_txn(t, pg->cid, pg_num) : 0;
}

bool
osd__split_is_child(uint32_t parent, uint32_t from, uint32_t to, uint32_t c)
{
	return c >= from && c < to && crush_stable_mod(c, from, crush_pg_mask(from)) == parent;
}

/* ---------- children that wait for an ancestor's split ---------- */

/*
 * Will a split on this OSD make child c of pool? Its ancestors are c with
 * its high bits cleared one by one (stable_mod only ever drops high bits);
 * one that this OSD holds, split for a pg_num at most c, has c's objects.
 * A copy being created is empty: nothing to wait for. Reads the store for
 * ancestors of other PG shards (a new PG only, so rarely).
 */
bool
osd__split_child_waits(struct osd *o, int64_t pool, uint32_t c)
{
	for (uint32_t a = c; a;) {
		struct osd_pg *pg;

		a &= ~(1u << (31 - __builtin_clz(a)));
		if (osd_pg_mine(o, a)) {
			pg = osd__pg_find_any(o, pool, a);
			if (pg && (pg->in_store || pg->splitting) && !pg->split_wait &&
			    pg->split_for && pg->split_for <= c)
				return true;
		} else {
			char cid[48];
			struct os_kv key = { .key = (uint8_t *)OSD_SPLIT_KEY,
					     .klen = sizeof(OSD_SPLIT_KEY) - 1 },
				     val = { 0 };
			uint32_t f;

			snprintf(cid, sizeof(cid), "pg.%" PRId64 ".%x", pool, a);
			if (os_omap_get(o->store, cid, OSD_PGMETA, &key, 1, &val) || !val.val)
				continue;
			if (osd_split_rec_get(val.val, val.vlen, &f))
				f = 0;
			osd_kv_clear(&val);
			if (f && f <= c)
				return true;
		}
	}
	return false;
}

/* ---------- the split ---------- */

static void
job_free(struct split_job *j)
{
	if (j->t)
		os_txn_destroy(j->t);
	free(j->kids);
	free(j->vers);
	free(j);
}

/*
 * A split that did not happen: the copy stays hidden (its log still holds
 * entries of objects that belong to children now: no peer may take it as
 * it is) and the tick tries again in a second.
 */
static void
split_fail(struct split_job *j, int rc)
{
	struct osd_pg *pg = j->pg;

	if (!j->o->stopping) {
		pg->split_retry_ms = cm_now_ms() + 1000;
		CM_ERR("%s: cannot split for pg_num %u: %s%s%s (trying again in 1 s)", pg->cid,
		       j->to, cm_strerror(rc), j->why[0] ? ": " : "", j->why);
	}
	job_free(j);
}

void
osd__split_tick(struct osd_pg *pg, uint64_t now_ms)
{
	const Cairn__Map__Pool *p;

	if (!pg->splitting || !pg->split_retry_ms || now_ms < pg->split_retry_ms)
		return;
	pg->split_retry_ms = 0;
	p = pg->osd->map ? osd__pool(pg->osd, pg->pool) : NULL;
	if (p && pg->split_for < p->pg_num) {
		osd__split_start(pg, p);
		return;
	}
	pg->splitting = false; /* the pool went, or nothing left to split */
	osd__pg_retry_wait_map(pg->osd);
}

static struct split_kid *
kid_of(struct split_job *j, uint32_t s)
{
	for (size_t i = 0; i < j->nkids; i++)
		if (j->kids[i].seed == s)
			return &j->kids[i];
	return NULL;
}

/* The child an object goes to, NULL if it stays; -EINVAL in j->rc if the seed is no child. */
static struct split_kid *
target_of(struct split_job *j, const char *name)
{
	uint32_t s;
	struct split_kid *k;
	int rc = crush_oname_to_pg(&j->cp, name, &s);

	if (rc == -EINVAL && name[0] == CRUSH_ONAME_NS_MARK) {
		/* Stored before namespaces by a client that allowed this first
		 * byte: it was placed by its whole name, and moves so. */
		CM_LOG_RL(CM_LOG_WARN,
			  "split of %s: legacy object name of %zu bytes starting with \\x02",
			  j->pg->cid, strlen(name));
		rc = crush_object_to_pg(&j->cp, NULL, name, &s);
	}
	if (rc) {
		/* (every stored name was checked on its way in: a name that
		 * does not decode stops the split, loudly, rather than stay put) */
		CM_ERR("split of %s: object name of %zu bytes does not decode: %s", j->pg->cid,
		       strlen(name), cm_strerror(rc));
		j->rc = rc;
		return NULL;
	}
	if (s == j->seed)
		return NULL;
	k = kid_of(j, s);
	if (!k) {
		j->rc = -EINVAL;
		snprintf(j->why, sizeof(j->why), "object '%.64s' maps to PG %x, not a child", name,
			 s);
		return NULL;
	}
	if (k->exists) {
		j->rc = -EEXIST;
		snprintf(j->why, sizeof(j->why), "child %s exists already and would get '%.64s'",
			 k->cid, name);
		return NULL;
	}
	k->gets = true;
	return k;
}

/* Move one pgmeta record of the parent to child k. */
static int
move_record(struct split_job *j, const struct split_kid *k, const struct os_kv *kv)
{
	int rc = os_txn_omap_set(j->t, k->cid, OSD_PGMETA, kv->key, kv->klen, kv->val, kv->vlen);

	if (!rc)
		rc = os_txn_omap_rm(j->t, j->pg->cid, OSD_PGMETA, kv->key, kv->klen);
	j->records++;
	return rc;
}

/* The parent's info, as the child's own (its seed), to every new child. */
static int
copy_info(struct split_job *j, const struct os_kv *kv)
{
	Cairn__Osd__PgInfo *pi = cairn__osd__pg_info__unpack(NULL, kv->vlen, kv->val);
	int rc = 0;

	if (!pi) {
		snprintf(j->why, sizeof(j->why), "undecodable PG info");
		return -EIO;
	}
	for (size_t i = 0; i < j->nkids && !rc; i++) {
		size_t n;
		uint8_t *b;

		if (j->kids[i].exists)
			continue;
		pi->seed = j->kids[i].seed;
		n = cairn__osd__pg_info__get_packed_size(pi);
		b = malloc(n ? n : 1);
		if (!b) {
			rc = -ENOMEM;
			break;
		}
		cairn__osd__pg_info__pack(pi, b);
		rc = os_txn_omap_set(j->t, j->kids[i].cid, OSD_PGMETA, "info", 4, b, n);
		free(b);
	}
	cairn__osd__pg_info__free_unpacked(pi, NULL);
	return rc;
}

static int
copy_to_kids(struct split_job *j, const struct os_kv *kv)
{
	int rc = 0;

	for (size_t i = 0; i < j->nkids && !rc; i++)
		if (!j->kids[i].exists)
			rc = os_txn_omap_set(j->t, j->kids[i].cid, OSD_PGMETA, kv->key, kv->klen,
					     kv->val, kv->vlen);
	return rc;
}

static int
note_ver(struct split_job *j, const struct osd_ver *v, uint32_t seed)
{
	if (j->nvers == j->capvers) {
		size_t cap = j->capvers ? 2 * j->capvers : 256;
		struct split_ver *g = realloc(j->vers, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		j->vers = g;
		j->capvers = cap;
	}
	j->vers[j->nvers++] = (struct split_ver){ *v, seed };
	return 0;
}

static const struct split_ver *
ver_find(const struct split_job *j, const struct osd_ver *v)
{
	for (size_t i = 0; i < j->nvers; i++)
		if (osd_ver_cmp(&j->vers[i].v, v) == 0)
			return &j->vers[i];
	return NULL;
}

/* One record of the parent's pgmeta: stays, moves to a child, or is copied to all. */
static int
split_record(struct split_job *j, const struct os_kv *kv)
{
	char name[OSD_NAME_MAX + 1];
	struct split_kid *k;

	if (kv->klen == 4 && memcmp(kv->key, "info", 4) == 0)
		return copy_info(j, kv);
	if (kv->klen == sizeof(OSD_PRIOR_KEY) - 1 &&
	    memcmp(kv->key, OSD_PRIOR_KEY, sizeof(OSD_PRIOR_KEY) - 1) == 0)
		return copy_to_kids(j, kv);
	if (kv->klen == sizeof(OSD_SPLIT_KEY) - 1 &&
	    memcmp(kv->key, OSD_SPLIT_KEY, sizeof(OSD_SPLIT_KEY) - 1) == 0)
		return 0; /* each copy gets its own below */
	if (kv->klen == OSD_LOGKEY_LEN && kv->key[0] == 'l') {
		Cairn__Osd__LogEntry *le = cairn__osd__log_entry__unpack(NULL, kv->vlen, kv->val);
		struct osd_ver v = { osd_get_be64(kv->key + 1), osd_get_be64(kv->key + 9) };
		int rc = 0;

		if (!le || !le->oid) {
			if (le)
				cairn__osd__log_entry__free_unpacked(le, NULL);
			snprintf(j->why, sizeof(j->why), "undecodable log entry");
			return -EIO;
		}
		k = target_of(j, le->oid);
		cairn__osd__log_entry__free_unpacked(le, NULL);
		if (j->rc)
			return j->rc;
		if (k) {
			rc = note_ver(j, &v, k->seed);
			if (!rc)
				rc = move_record(j, k, kv);
		}
		return rc;
	}
	if (kv->klen >= 2 && kv->key[0] == 'm' && kv->klen - 1 <= OSD_NAME_MAX) {
		memcpy(name, kv->key + 1, kv->klen - 1);
		name[kv->klen - 1] = 0;
		k = target_of(j, name);
		if (j->rc)
			return j->rc;
		return k ? move_record(j, k, kv) : 0;
	}
	if (kv->klen == 17 && kv->key[0] == 's') {
		/* An EC rollback stash: it follows the object of its log entry. */
		struct osd_ver v = { osd_get_be64(kv->key + 1), osd_get_be64(kv->key + 9) };
		const struct split_ver *sv = ver_find(j, &v);
		char sname[OSD_STASH_NAME_MAX];
		int rc;

		if (!sv)
			return 0;
		k = kid_of(j, sv->seed);
		osd_stash_name(&v, sname);
		rc = move_record(j, k, kv);
		if (!rc)
			rc = os_txn_move(j->t, j->pg->cid, sname, k->cid, sname);
		return rc;
	}
	return 0; /* a record of a later version: stays with the parent */
}

static int
split_record_fn(void *arg, const struct os_kv *kv)
{
	return split_record(arg, kv);
}

/* On a worker: read the parent's records and objects, build the transaction. */
static void
split_build_fn(void *arg)
{
	struct split_job *j = arg;
	struct os_store *s = j->o->store;
	char *oafter = NULL;
	bool more = true;

	j->rc = os_txn_create(&j->t);
	for (uint32_t c = j->from; c < j->to && !j->rc; c++) {
		struct split_kid *k;
		struct os_stat st;

		if (!osd__split_is_child(j->seed, j->from, j->to, c))
			continue;
		k = &j->kids[j->nkids++];
		k->seed = c;
		snprintf(k->cid, sizeof(k->cid), "pg.%" PRId64 ".%x", j->pool, c);
		k->exists = os_stat(s, k->cid, OSD_PGMETA, &st) == 0;
		if (k->exists)
			continue;
		j->rc = os_txn_mkcoll(j->t, k->cid);
		if (!j->rc)
			j->rc = os_txn_touch(j->t, k->cid, OSD_PGMETA);
		if (!j->rc)
			j->rc = split_key_txn(j->t, k->cid, j->to);
	}
	/* The records, in key order: the log ('l') comes before the stashes ('s'). */
	if (!j->rc)
		j->rc = osd__pgmeta_walk(s, j->pg->cid, NULL, 0, split_record_fn, j);
	/* The objects (names starting with \x01 are the PG's own: moved above). */
	more = true;
	while (more && !j->rc) {
		char **names = NULL;
		size_t n = 0;

		j->rc = os_list(s, j->pg->cid, oafter, 1024, &names, &n, &more);
		for (size_t i = 0; i < n && !j->rc; i++) {
			struct split_kid *k;

			if (names[i][0] == '\x01')
				continue;
			k = target_of(j, names[i]);
			if (k) {
				j->rc = os_txn_move(j->t, j->pg->cid, names[i], k->cid, names[i]);
				j->moved++;
			}
		}
		free(oafter);
		oafter = n ? names[n - 1] : NULL;
		if (n)
			names[n - 1] = NULL;
		os_names_free(names, n);
		if (!n)
			break;
	}
	free(oafter);
	if (!j->rc)
		j->rc = split_key_txn(j->t, j->pg->cid, j->to);
}

bool
osd__split_adopt(struct osd_pg *pg)
{
	struct os_stat st;
	int rc;

	pg->split_wait = false;
	if (os_stat(pg->osd->store, pg->cid, OSD_PGMETA, &st))
		return false;
	rc = osd__pg_reload(pg);
	if (rc) {
		CM_ERR("%s: cannot load after the split: %s", pg->cid, cm_strerror(rc));
		return false;
	}
	return true;
}

void
osd__pga_take(struct osd *o, int64_t pool, uint32_t seed, struct osd_pga_copy *s)
{
	bool fresh;
	struct osd_pga *x = osd__pga_get(o, pool, seed, &fresh);

	s->have = x && !fresh;
	if (s->have)
		s->x = *x;
}

void
osd__pga_give(struct osd *o, int64_t pool, uint32_t seed, const struct osd_pga_copy *s)
{
	bool fresh;
	struct osd_pga *x, keep;

	if (!s->have || !(x = osd__pga_get(o, pool, seed, &fresh)))
		return;
	keep = *x;
	*x = s->x;
	x->next = keep.next; /* its own place in the table */
	x->pool = keep.pool;
	x->seed = keep.seed;
}

/* A child made by a split on another PG shard of this OSD (or ours): load it. */
static void
kid_load(struct osd *o, int64_t pool, uint32_t c, const struct osd_pga_copy *from)
{
	struct osd_pg *pg = osd__pg_find_any(o, pool, c);

	if (pg && pg->in_store && !pg->split_wait)
		return; /* the map found it first (osd__split_adopt) */
	if (!pg)
		pg = osd__pg_new(o, pool, c);
	if (!pg) {
		CM_ERR("pg.%" PRId64 ".%x: no memory to load the split's child", pool, c);
		return;
	}
	if (!osd__split_adopt(pg)) {
		CM_ERR("%s: the split's child is not in the store", pg->cid);
		return;
	}
	/* The parent's intervals as the maps recorded them, also during the
	 * split (its stored prior record, which the child loaded, is older). */
	osd__pga_give(o, pool, c, from);
	pg->state = OSD_PG_NONE; /* the map applied next sees a new interval */
	pg->nacting = 0;
}

struct kid_post {
	struct cm_reactor_msg m;
	struct osd *o;
	int64_t pool;
	uint32_t seed;
	struct osd_pga_copy pga;
};

static void
kid_post_run(void *arg)
{
	struct kid_post *p = arg;
	struct osd *o = p->o;

	if (!o->stopping) {
		kid_load(o, p->pool, p->seed, &p->pga);
		if (o->map && o->pl_ok)
			osd__pg_on_map(o);
		osd__pg_retry_wait_map(o); /* the ops that waited for the split */
	}
	free(p);
}

static void
split_committed(void *arg, int rc)
{
	struct split_job *j = arg;
	struct osd *o = j->o;
	struct osd_pg *pg = j->pg;
	struct osd_pga_copy pga;

	j->t = NULL; /* the store took it */
	if (rc || o->stopping) {
		split_fail(j, rc ? rc : -ESHUTDOWN);
		return;
	}
	pg->splitting = false;
	osd__pga_take(o, j->pool, j->seed, &pga);
	rc = osd__pg_reload(pg);
	if (rc)
		CM_ERR("%s: cannot load after the split: %s", pg->cid, cm_strerror(rc));
	osd__pga_give(o, j->pool, j->seed, &pga); /* the reload's stored record is older */
	for (size_t i = 0; i < j->nkids; i++) {
		uint32_t c = j->kids[i].seed;
		struct osd *ko;
		struct kid_post *p;

		if (j->kids[i].exists)
			continue;
		if (osd_pg_mine(o, c)) {
			kid_load(o, j->pool, c, &pga);
			continue;
		}
		ko = o->node->sh[c % o->node->n];
		p = calloc(1, sizeof(*p));
		if (!p) {
			CM_ERR("pg.%" PRId64 ".%x: no memory to hand the split's child to shard %u",
			       j->pool, c, ko->shard);
			continue;
		}
		*p = (struct kid_post){ .o = ko, .pool = j->pool, .seed = c, .pga = pga };
		p->m = (struct cm_reactor_msg){ .fn = kid_post_run, .arg = p, .drop = free };
		cm_reactor_post(ko->r, &p->m);
	}
	o->pg_splits++;
	CM_NOTICE("%s: split for pg_num %u -> %u: %zu children, %zu objects and %zu log/missing "
		  "records moved in %" PRIu64 " ms",
		  pg->cid, j->from, j->to, j->nkids, j->moved, j->records,
		  cm_now_ms() - j->start_ms);
	job_free(j);
	if (o->map && o->pl_ok)
		osd__pg_on_map(o); /* parent and children peer in their new interval */
	osd__pg_retry_wait_map(o); /* the ops that waited for the split */
}

static void
split_build_done(void *arg)
{
	struct split_job *j = arg;
	struct os_txn *t = j->t;

	if (j->rc || j->o->stopping) {
		split_fail(j, j->rc ? j->rc : -ESHUTDOWN);
		return;
	}
	j->t = NULL;
	osd__queue(j->o, t, split_committed, j);
}

/* Every earlier transaction of the PG committed: build the split from the store. */
static void
split_barrier(void *arg, int rc)
{
	struct split_job *j = arg;
	struct osd *o = j->o;
	const Cairn__Map__Pool *p = o->map ? osd__pool(o, j->pool) : NULL;

	if (rc || o->stopping || !p) {
		split_fail(j, rc ? rc : o->stopping ? -ESHUTDOWN : -ENOENT);
		return;
	}
	j->to = p->pg_num;
	mon_pool_to_crush(p, &j->cp);
	j->cp.pg_num = j->to;
	j->kids = calloc(j->to - j->from, sizeof(*j->kids));
	if (!j->kids) {
		split_fail(j, -ENOMEM);
		return;
	}
	j->w = (struct cm_work){ .fn = split_build_fn, .done = split_build_done, .arg = j };
	rc = osd__work(o, &j->w);
	if (rc)
		split_fail(j, rc);
}

void
osd__split_start(struct osd_pg *pg, const Cairn__Map__Pool *pool)
{
	struct osd *o = pg->osd;
	struct split_job *j = calloc(1, sizeof(*j));
	struct os_txn *t = NULL;
	int rc = j ? os_txn_create(&t) : -ENOMEM;

	if (!rc)
		rc = os_txn_touch(t, pg->cid, OSD_PGMETA);
	pg->splitting = true;
	pg->split_gen++;
	osd__rec_jobs_stale(o, pg->pool, pg->seed); /* no push from a copy about to change */
	if (rc) {
		if (t)
			os_txn_destroy(t);
		free(j);
		pg->split_retry_ms = cm_now_ms() + 1000;
		CM_ERR("%s: cannot start its split: %s (trying again in 1 s)", pg->cid,
		       cm_strerror(rc));
		return;
	}
	*j = (struct split_job){ .o = o,
				 .pg = pg,
				 .pool = pg->pool,
				 .seed = pg->seed,
				 .from = pg->split_for,
				 .to = pool->pg_num,
				 .start_ms = cm_now_ms() };
	CM_INFO("%s: splitting for pg_num %u (was %u)", pg->cid, pool->pg_num, pg->split_for);
	osd__queue(o, t, split_barrier, j);
}
