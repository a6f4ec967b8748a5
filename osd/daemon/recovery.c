/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Recovery and backfill. docs/design/osd.md, "Recovery".
 *
 * Three roles, often two of them on one OSD:
 *  - the primary plans: after peering it picks the authoritative copy (the
 *    newest last_update among complete copies) and, for every acting OSD
 *    behind it, either the objects named by the log since the point their
 *    histories part (log-based recovery) or the whole PG (backfill);
 *  - the source (the authoritative OSD) pushes those objects, whole, in
 *    chunks, a bounded number at a time (osd_recovery_max_active);
 *  - the target applies pushes, then adopts the authoritative log.
 *
 * A target's info changes only at the end (PG_LOG), so a target that dies
 * halfway still says how old it is; a backfill target is marked incomplete
 * first and is never chosen as authoritative until it is done.
 */
#include "pg_int.h"
#include "msgcheck.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(recovery);

#define PUSH_CHUNK     (4u << 20) /* data per push */
#define PUSH_OMAP_KEYS 512u       /* omap entries per push */
#define LIST_PAGE      256u       /* backfill listing page */
#define RETRY_MS       2000u      /* after a failed recovery */
#define PUSH_TIMEOUT   60000u

/* ---------- the primary: planning ---------- */

/* A log as seen by the primary: its own ring or a peer's notify. */
struct lview {
	struct pg *pg;
	const Cairn__Osd__PgNotify *n;
};

static size_t
lv_n(const struct lview *lv)
{
	return lv->n ? lv->n->n_log : lv->pg->log_n;
}

static void
lv_get(const struct lview *lv, size_t i, struct osd_ver *v, const char **oid)
{
	if (lv->n) {
		ver_from_pb(lv->n->log[i]->ver, v);
		*oid = lv->n->log[i]->oid ? lv->n->log[i]->oid : "";
	} else {
		const struct pg_lent *e = pg_log_at(lv->pg, i);

		*v = e->ver;
		*oid = e->oid;
	}
}

static void
lv_of(struct pg *pg, int slot, struct lview *lv)
{
	lv->pg = pg;
	lv->n = pg->slot_osd[slot] == pg->osd->id ? NULL : pg->peer[slot].n;
}

/* Is v a point of the authoritative history (its tail or one of its entries)? */
static bool
lv_has(const struct lview *a, const struct osd_ver *tail, const struct osd_ver *v)
{
	size_t lo = 0, hi = lv_n(a);

	if (osd_ver_cmp(v, tail) == 0)
		return true;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct osd_ver x;
		const char *oid;
		int c;

		lv_get(a, mid, &x, &oid);
		c = osd_ver_cmp(&x, v);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
peer_oids_free(struct pg_peer *p)
{
	for (size_t i = 0; i < p->noids; i++)
		free(p->oids[i]);
	free(p->oids);
	p->oids = NULL;
	p->noids = 0;
}

/* Add the objects of lv's entries newer than c to p->oids. */
static int
collect_after(struct pg_peer *p, const struct lview *lv, const struct osd_ver *c)
{
	size_t n = lv_n(lv);
	char **grown = realloc(p->oids, (p->noids + n + 1) * sizeof(*p->oids));

	if (!grown)
		return -ENOMEM;
	p->oids = grown;
	for (size_t i = 0; i < n; i++) {
		struct osd_ver v;
		const char *oid;

		lv_get(lv, i, &v, &oid);
		if (osd_ver_cmp(&v, c) <= 0 || !oid[0])
			continue;
		p->oids[p->noids] = strdup(oid);
		if (!p->oids[p->noids])
			return -ENOMEM;
		p->noids++;
	}
	return 0;
}

/*
 * Plan slot t against the authoritative slot a: nothing, log-based (the
 * objects to push in peer[t].oids) or backfill. \return 0 or -ENOMEM.
 */
static int
plan_slot(struct pg *pg, int t, int a)
{
	struct pg_peer *p = &pg->peer[t], *ap = &pg->peer[a];
	struct lview av, tv;
	struct osd_ver common;
	bool found = false;
	size_t w = 0;
	int rc;

	p->step = REC_NONE;
	p->backfill = false;
	if (p->exists && !p->incomplete && osd_ver_cmp(&p->lu, &ap->lu) == 0)
		return 0;
	lv_of(pg, a, &av);
	if (!p->exists) {
		/* No copy: the log is enough while it reaches back to the PG's creation. */
		common = (struct osd_ver){ 0, 0 };
		found = osd_ver_cmp(&ap->tail, &common) == 0;
		tv.pg = pg;
		tv.n = NULL;
	} else if (!p->incomplete) {
		lv_of(pg, t, &tv);
		if (lv_has(&av, &ap->tail, &p->lu)) {
			common = p->lu;
			found = true;
		}
		for (size_t i = lv_n(&tv); !found && i-- > 0;) {
			const char *oid;

			lv_get(&tv, i, &common, &oid);
			found = lv_has(&av, &ap->tail, &common);
		}
		if (!found && lv_has(&av, &ap->tail, &p->tail)) {
			common = p->tail;
			found = true;
		}
	}
	if (!found) {
		p->backfill = true;
		p->step = REC_WIPE;
		return 0;
	}
	/* Objects changed on the authoritative copy since the common point, and
	 * those our target changed on a history that did not survive. */
	rc = collect_after(p, &av, &common);
	if (!rc && p->exists)
		rc = collect_after(p, &tv, &common);
	if (rc)
		return rc;
	qsort(p->oids, p->noids, sizeof(*p->oids), cmp_str);
	for (size_t i = 0; i < p->noids; i++) {
		if (w && strcmp(p->oids[w - 1], p->oids[i]) == 0) {
			free(p->oids[i]);
			continue;
		}
		p->oids[w++] = p->oids[i];
	}
	p->noids = w;
	p->step = p->noids ? REC_PUSH : REC_LOG;
	return 0;
}

void
rec_reset(struct pg *pg)
{
	for (int i = 0; i < PG_MAX_SLOTS; i++) {
		struct pg_peer *p = &pg->peer[i];

		if (p->n)
			cairn__osd__pg_notify__free_unpacked(p->n, NULL);
		peer_oids_free(p);
		memset(p, 0, sizeof(*p));
	}
	pg->rec_pending = 0;
	pg->auth = -1;
	pg->rec_gen++;
}

static void
rec_fail(struct pg *pg, int32_t who, int rc)
{
	CM_WARN("%s: recovery of osd.%d failed: %s; peering again in %u ms", pg->cid, who,
		cm_strerror(rc), RETRY_MS);
	rec_reset(pg);
	pg->retry_ms = cm_now_ms() + RETRY_MS;
}

static void job_start(struct osd *o, const Cairn__Osd__RecoverReq *q, int32_t primary);
static void log_apply(struct osd *o, struct cm_conn *c, const Cairn__Osd__PgNotify *n);

/* Ask the source to push peer[t]'s objects (or all of them) to it. */
static void
send_recover(struct pg *pg, int t)
{
	Cairn__Osd__RecoverReq q = CAIRN__OSD__RECOVER_REQ__INIT;
	struct pg_peer *p = &pg->peer[t];
	struct osd *o = pg->osd;
	int32_t src = pg->slot_osd[pg->auth];

	q.pool = pg->pool;
	q.seed = pg->seed;
	q.epoch = pg->plan_epoch;
	q.gen = pg->rec_gen;
	q.target = pg->acting[t];
	q.from = o->id;
	q.all = p->backfill;
	if (!q.all) {
		q.oids = p->oids;
		q.n_oids = p->noids;
	}
	p->step = REC_PUSH;
	if (src == o->id) {
		job_start(o, &q, o->id);
		return;
	}
	if (osd_send_pb(osd_peer_conn(o, src), OSD_MSG_RECOVER, 0, &q.base, NULL))
		rec_fail(pg, src, -ENOTCONN);
}

/* Tell peer[t] to adopt the authoritative log (or, wipe, to empty its copy). */
static void
send_pg_log(struct pg *pg, int t, bool wipe)
{
	Cairn__Osd__PgNotify n = CAIRN__OSD__PG_NOTIFY__INIT;
	Cairn__Osd__PgInfo pi;
	Cairn__Osd__Version lu, tail;
	Cairn__Osd__LogEntry **les = NULL;
	size_t nles = 0;
	struct osd *o = pg->osd;
	int32_t to = pg->acting[t];

	n.pool = pg->pool;
	n.seed = pg->seed;
	n.epoch = pg->plan_epoch;
	n.gen = pg->rec_gen;
	n.exists = true;
	n.wipe = wipe;
	if (!wipe) {
		if (pg->slot_osd[pg->auth] == o->id) {
			pg_info_fill(pg, &pi, &lu, &tail);
			if (pg_log_pb(pg, &les, &nles)) {
				rec_fail(pg, to, -ENOMEM);
				return;
			}
			n.info = &pi;
			n.log = les;
			n.n_log = nles;
		} else {
			const Cairn__Osd__PgNotify *an = pg->peer[pg->auth].n;

			n.info = an->info;
			n.log = an->log;
			n.n_log = an->n_log;
		}
	}
	pg->peer[t].step = wipe ? REC_WIPE : REC_LOG;
	if (to == o->id)
		log_apply(o, NULL, &n);
	else if (osd_send_pb(osd_peer_conn(o, to), OSD_MSG_PG_LOG, 0, &n.base, NULL))
		rec_fail(pg, to, -ENOTCONN);
	pg_log_pb_free(les, nles);
}

void
rec_plan(struct pg *pg)
{
	struct osd *o = pg->osd;
	int a = -1, self = -1;
	bool backfill = false;
	uint64_t gen;

	bool prior_seen = pg->nprior == 0 || pg->prior_overlap;

	/* The authoritative copy: the newest complete one, acting or prior
	 * (ties: ours, then an acting OSD's). */
	for (int i = 0; i < pg->nslots; i++) {
		struct pg_peer *p = &pg->peer[i];

		if (pg->slot_osd[i] == o->id)
			self = i;
		if (!p->have || !p->exists || p->incomplete)
			continue;
		if (a < 0 || osd_ver_cmp(&p->lu, &pg->peer[a].lu) > 0 ||
		    (osd_ver_cmp(&p->lu, &pg->peer[a].lu) == 0 && pg->slot_osd[i] == o->id))
			a = i;
	}
	/* The previous interval may have taken writes: someone of it must be here. */
	for (int k = 0; k < pg->nprior && !prior_seen; k++)
		for (int i = 0; i < pg->nslots; i++)
			if (pg->slot_osd[i] == pg->prior[k] && pg->peer[i].have)
				prior_seen = true;
	if (!prior_seen) {
		pg->state = PG_INCOMPLETE;
		pg->retry_ms = cm_now_ms() + RETRY_MS;
		CM_WARN("%s: none of the OSDs that held it before is up: waiting", pg->cid);
		return;
	}
	if (a < 0 || self < 0) {
		pg->state = PG_INCOMPLETE;
		pg->retry_ms = cm_now_ms() + RETRY_MS;
		CM_WARN("%s: no complete copy among the acting OSDs: waiting", pg->cid);
		return;
	}
	pg->auth = a;
	pg->rec_pending = 0;
	/* Prior OSDs with a copy: told to drop it once the PG is clean. */
	pg->nstrays = 0;
	for (int i = pg->nacting; i < pg->nslots; i++)
		if (pg->peer[i].have && pg->peer[i].exists)
			pg->strays[pg->nstrays++] = pg->slot_osd[i];
	/*
	 * Messages of this plan carry our map's epoch: an OSD whose map shows an
	 * interval newer than that refuses them (the plan is stale), one that saw
	 * this interval begin at a later epoch than we did (it skipped maps, or
	 * booted) takes them.
	 */
	pg->plan_epoch = o->epoch;
	for (int i = 0; i < pg->nacting; i++) {
		if (i == a)
			continue;
		if (plan_slot(pg, i, a)) {
			rec_fail(pg, pg->acting[i], -ENOMEM);
			return;
		}
		if (pg->peer[i].step != REC_NONE)
			pg->rec_pending++;
		backfill |= pg->peer[i].backfill;
	}
	if (!pg->rec_pending) {
		pg_activate(pg);
		return;
	}
	pg->state = backfill ? PG_BACKFILLING : PG_RECOVERING;
	pg->rec_objects = pg->rec_bytes = 0;
	if (o->map && (o->map->flags & (backfill ? MON_FLAG_NOBACKFILL : MON_FLAG_NORECOVER))) {
		/* The operator holds it: look again later (and on every map change). */
		rec_reset(pg);
		pg->retry_ms = cm_now_ms() + RETRY_MS;
		return;
	}
	CM_INFO("%s: %s %u of %d copies from osd.%d (at %" PRIu64 ".%" PRIu64 ")", pg->cid,
		pg_state_name(pg->state), pg->rec_pending, pg->nacting, pg->slot_osd[a],
		pg->peer[a].lu.epoch, pg->peer[a].lu.seq);
	/* Start every target; a failure resets the plan (gen changes): stop then. */
	gen = pg->rec_gen;
	for (int i = 0; i < pg->nacting && gen == pg->rec_gen; i++) {
		switch (pg->peer[i].step) {
		case REC_WIPE:
			send_pg_log(pg, i, true);
			break;
		case REC_PUSH:
			send_recover(pg, i);
			break;
		case REC_LOG:
			send_pg_log(pg, i, false);
			break;
		default:
			break;
		}
	}
}

static struct pg *
rec_pg(struct osd *o, int64_t pool, uint32_t seed, uint64_t epoch, uint64_t gen, int32_t target,
       int *slot)
{
	struct pg *pg = pg_find(o, pool, seed);

	if (!pg || pg->primary != o->id || pg->plan_epoch != epoch || pg->rec_gen != gen ||
	    (pg->state != PG_RECOVERING && pg->state != PG_BACKFILLING))
		return NULL;
	for (int i = 0; i < pg->nacting; i++)
		if (pg->acting[i] == target) {
			*slot = i;
			return pg;
		}
	return NULL;
}

static void
slot_done(struct pg *pg, int t)
{
	pg->peer[t].step = REC_DONE;
	peer_oids_free(&pg->peer[t]);
	if (--pg->rec_pending)
		return;
	CM_INFO("%s: recovered (%" PRIu64 " objects, %" PRIu64 " bytes)", pg->cid, pg->rec_objects,
		pg->rec_bytes);
	rec_reset(pg);
	pg_activate(pg);
}

static void
on_recover_done(struct osd *o, const Cairn__Osd__PgAck *a)
{
	int t;
	struct pg *pg = rec_pg(o, a->pool, a->seed, a->epoch, a->gen, a->target, &t);

	if (!pg || pg->peer[t].step != REC_PUSH)
		return;
	if (a->rc) {
		rec_fail(pg, a->target, a->rc);
		return;
	}
	pg->rec_objects += a->objects;
	pg->rec_bytes += a->bytes;
	send_pg_log(pg, t, false);
}

static void
on_log_ack(struct osd *o, const Cairn__Osd__PgAck *a)
{
	int t;
	struct pg *pg = rec_pg(o, a->pool, a->seed, a->epoch, a->gen, a->target, &t);

	if (!pg)
		return;
	if (a->rc) {
		rec_fail(pg, a->target, a->rc);
		return;
	}
	if (pg->peer[t].step == REC_WIPE)
		send_recover(pg, t);
	else if (pg->peer[t].step == REC_LOG)
		slot_done(pg, t);
}

/* An ack (RECOVER_DONE, PG_LOG_ACK) for the primary's plan: fn takes it. */
static void
handle_ack(struct osd *o, struct cm_msg *m, void (*fn)(struct osd *, const Cairn__Osd__PgAck *))
{
	Cairn__Osd__PgAck *a =
		(Cairn__Osd__PgAck *)cm_msg_unpack_front(m, &cairn__osd__pg_ack__descriptor);

	cm_msg_destroy(m);
	if (!a)
		return;
	fn(o, a);
	cairn__osd__pg_ack__free_unpacked(a, NULL);
}

void
pg_handle_recover_done(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	(void)c;
	handle_ack(o, m, on_recover_done);
}

void
pg_handle_pg_log_ack(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	(void)c;
	handle_ack(o, m, on_log_ack);
}

/* ---------- the source: pushing objects ---------- */

struct rjob {
	TAILQ_ENTRY(rjob) link;  /* o->rjobs */
	TAILQ_ENTRY(rjob) rlink; /* o->rjobs_ready */
	struct osd *osd;
	int64_t pool;
	uint32_t seed;
	char cid[48];
	uint64_t epoch, gen;
	int32_t target, primary;
	bool all, list_done;
	bool ready;   /* on rjobs_ready */
	bool busy;    /* a worker, a read or the store will call back */
	bool slot;    /* holds one of osd_recovery_max_active */
	bool waiting; /* for the target's PushReply */
	bool dead;    /* free when the callback returns */
	bool finished;
	char **oids; /* log-based: the objects; backfill: the current page */
	size_t noids, next;
	char *cursor; /* backfill: the last name listed */
	/* the current object */
	char *oid;
	bool first, deleted, omap_more;
	uint64_t size, data_off;
	struct os_kv *attrs, hdr, *omap;
	size_t nattrs, nomap;

	struct {
		uint8_t *key;
		size_t len;
	} omap_after;
	struct cm_buf *data;
	uint64_t sent_ms;
	int rc;
	uint64_t objects, bytes;
	struct cm_work w;
};

static void job_kick(struct osd *o);

static void
job_clear_object(struct rjob *j)
{
	os_kvs_free(j->attrs, j->nattrs);
	os_kvs_free(j->omap, j->nomap);
	kv_clear(&j->hdr);
	j->attrs = j->omap = NULL;
	j->nattrs = j->nomap = 0;
	if (j->data)
		cm_buf_put(j->data);
	j->data = NULL;
}

static void
job_free(struct rjob *j)
{
	job_clear_object(j);
	for (size_t i = 0; i < j->noids; i++)
		free(j->oids[i]);
	free(j->oids);
	free(j->oid);
	free(j->cursor);
	free(j->omap_after.key);
	free(j);
}

/* Quietly drop a job nobody waits for any more (freed now or when its callback returns). */
static void
job_drop(struct rjob *j)
{
	struct osd *o = j->osd;

	if (j->slot) {
		j->slot = false;
		o->rec_active--;
	}
	if (j->ready)
		TAILQ_REMOVE(&o->rjobs_ready, j, rlink);
	TAILQ_REMOVE(&o->rjobs, j, link);
	j->ready = false;
	j->dead = true;
	if (!j->busy)
		job_free(j);
}

/* The source's answer to RECOVER, to the primary (maybe us). */
static void
report_done(struct osd *o, int32_t primary, const Cairn__Osd__PgAck *a)
{
	if (primary == o->id)
		on_recover_done(o, a);
	else
		osd_send_pb(osd_peer_conn(o, primary), OSD_MSG_RECOVER_DONE, 0, &a->base, NULL);
}

/* Report to the primary and forget the job. */
static void
job_finish(struct rjob *j, int rc)
{
	struct osd *o = j->osd;
	Cairn__Osd__PgAck a = CAIRN__OSD__PG_ACK__INIT;
	int32_t primary = j->primary;

	if (j->dead)
		return;
	a.pool = j->pool;
	a.seed = j->seed;
	a.epoch = j->epoch;
	a.gen = j->gen;
	a.target = j->target;
	a.rc = rc;
	a.objects = j->objects;
	a.bytes = j->bytes;
	if (rc >= 0 || rc == -ENOTCONN || rc == -ECONNRESET || rc == -ESTALE)
		CM_DEBUG("%s: pushed %" PRIu64 " objects to osd.%d: %s", j->cid, j->objects,
			 j->target, cm_strerror(rc));
	else
		CM_WARN("%s: pushing to osd.%d failed: %s", j->cid, j->target, cm_strerror(rc));
	job_drop(j);
	report_done(o, primary, &a);
	job_kick(o);
}

static void
job_ready(struct rjob *j)
{
	if (j->ready || j->dead)
		return;
	j->ready = true;
	TAILQ_INSERT_TAIL(&j->osd->rjobs_ready, j, rlink);
}

/* On a worker: pick the object and read its metadata for the next push. */
static void
job_step_fn(void *arg)
{
	struct rjob *j = arg;
	struct os_store *s = j->osd->store;
	struct os_stat st;
	int rc;

	while (!j->oid) {
		if (j->next < j->noids) {
			char *oid = j->oids[j->next++];

			if ((uint8_t)oid[0] == 1)
				continue;
			j->oid = strdup(oid);
			if (!j->oid) {
				j->rc = -ENOMEM;
				return;
			}
			j->first = true;
			j->data_off = 0;
			free(j->omap_after.key);
			j->omap_after.key = NULL;
			j->omap_after.len = 0;
			break;
		}
		if (!j->all || j->list_done) {
			j->finished = true;
			return;
		}
		for (size_t i = 0; i < j->noids; i++)
			free(j->oids[i]);
		free(j->oids);
		j->oids = NULL;
		j->noids = j->next = 0;
		{
			bool more = false;

			rc = os_list(s, j->cid, j->cursor, LIST_PAGE, &j->oids, &j->noids, &more);
			if (rc) {
				j->rc = rc;
				return;
			}
			j->list_done = !more;
		}
		if (j->noids) {
			free(j->cursor);
			j->cursor = strdup(j->oids[j->noids - 1]);
			if (!j->cursor) {
				j->rc = -ENOMEM;
				return;
			}
		}
	}
	if (j->first) {
		rc = os_stat(s, j->cid, j->oid, &st);
		j->deleted = rc == -ENOENT;
		if (rc && !j->deleted) {
			j->rc = rc;
			return;
		}
		j->size = j->deleted ? 0 : st.size;
		j->omap_more = !j->deleted;
		if (!j->deleted) {
			rc = os_getattrs(s, j->cid, j->oid, &j->attrs, &j->nattrs);
			if (!rc)
				rc = os_omap_get_header(s, j->cid, j->oid, &j->hdr);
			if (rc == -ENOENT) { /* removed since the stat: push the deletion */
				j->deleted = true;
				j->size = 0;
				j->omap_more = false;
				rc = 0;
			}
			if (rc) {
				j->rc = rc;
				return;
			}
		}
	}
	if (j->omap_more) {
		bool more = false;

		rc = os_omap_iterate(s, j->cid, j->oid, j->omap_after.key, j->omap_after.len, NULL,
				     0, PUSH_OMAP_KEYS, &j->omap, &j->nomap, &more);
		if (rc) {
			j->rc = rc == -ENOENT ? 0 : rc;
			j->omap_more = false;
			return;
		}
		j->omap_more = more;
		if (j->nomap) {
			uint8_t *k = malloc(j->omap[j->nomap - 1].klen + 1);

			if (!k) {
				j->rc = -ENOMEM;
				return;
			}
			memcpy(k, j->omap[j->nomap - 1].key, j->omap[j->nomap - 1].klen);
			free(j->omap_after.key);
			j->omap_after.key = k;
			j->omap_after.len = j->omap[j->nomap - 1].klen;
		}
	}
}

static void
job_send(struct rjob *j)
{
	struct osd *o = j->osd;
	Cairn__Osd__Push p = CAIRN__OSD__PUSH__INIT;
	ProtobufCBinaryData *an = NULL, *av = NULL, *ok = NULL, *ov = NULL;
	struct cm_sgl sgl;
	uint64_t dlen = j->data ? j->data->len : 0;
	int rc = -ENOMEM;

	cm_sgl_init(&sgl);
	p.pool = j->pool;
	p.seed = j->seed;
	p.epoch = j->epoch;
	p.oid = j->oid;
	p.deleted = j->deleted;
	p.size = j->size;
	p.first = j->first;
	p.data_off = j->data_off;
	p.last = j->deleted || (!j->omap_more && j->data_off + dlen >= j->size);
	an = calloc(j->nattrs + 1, sizeof(*an));
	av = calloc(j->nattrs + 1, sizeof(*av));
	ok = calloc(j->nomap + 1, sizeof(*ok));
	ov = calloc(j->nomap + 1, sizeof(*ov));
	if (!an || !av || !ok || !ov)
		goto out;
	for (size_t i = 0; i < j->nattrs; i++) {
		an[i] = (ProtobufCBinaryData){ j->attrs[i].klen, j->attrs[i].key };
		av[i] = (ProtobufCBinaryData){ j->attrs[i].vlen, j->attrs[i].val };
	}
	for (size_t i = 0; i < j->nomap; i++) {
		ok[i] = (ProtobufCBinaryData){ j->omap[i].klen, j->omap[i].key };
		ov[i] = (ProtobufCBinaryData){ j->omap[i].vlen, j->omap[i].val };
	}
	if (j->first) {
		p.attr_names = an;
		p.attr_vals = av;
		p.n_attr_names = p.n_attr_vals = j->nattrs;
		p.omap_header = (ProtobufCBinaryData){ j->hdr.vlen, j->hdr.val };
	}
	p.omap_keys = ok;
	p.omap_vals = ov;
	p.n_omap_keys = p.n_omap_vals = j->nomap;
	if (j->data && (rc = cm_sgl_append(&sgl, j->data, 0, j->data->len)))
		goto out;
	rc = osd_send_pb(osd_peer_conn(o, j->target), OSD_MSG_PUSH, 0, &p.base,
			 j->data ? &sgl : NULL);
out:
	cm_sgl_fini(&sgl);
	free(an);
	free(av);
	free(ok);
	free(ov);
	if (rc) {
		job_finish(j, rc);
		return;
	}
	j->waiting = true;
	j->sent_ms = cm_now_ms();
}

static void
job_on_data(void *arg, int rc, struct cm_buf *data)
{
	struct rjob *j = arg;

	j->busy = false;
	if (j->dead) {
		if (data)
			cm_buf_put(data);
		job_free(j);
		return;
	}
	if (rc) {
		if (data)
			cm_buf_put(data);
		job_finish(j, rc);
		return;
	}
	j->data = data;
	job_send(j);
}

static void
job_step_done(void *arg)
{
	struct rjob *j = arg;

	j->busy = false;
	if (j->dead) {
		job_free(j);
		return;
	}
	if (j->rc) {
		job_finish(j, j->rc);
		return;
	}
	if (j->finished) {
		job_finish(j, 0);
		return;
	}
	if (!j->deleted && !j->omap_more && j->data_off < j->size) {
		j->busy = true;
		os_read(j->osd->store, j->cid, j->oid, j->data_off,
			CM_MIN((uint64_t)PUSH_CHUNK, j->size - j->data_off), job_on_data, j);
		return;
	}
	job_send(j);
}

static void
job_step(struct rjob *j)
{
	j->w = (struct cm_work){ .fn = job_step_fn, .done = job_step_done, .arg = j };
	j->busy = true;
	if (cm_worker_submit(j->osd->wp, j->osd->r, &j->w)) {
		j->busy = false;
		job_finish(j, -ESHUTDOWN);
	}
}

/* Start pushes while slots are free, oldest waiting job first. */
static void
job_kick(struct osd *o)
{
	struct rjob *j;

	while (o->rec_active < o->cfg->recovery_max_active && (j = TAILQ_FIRST(&o->rjobs_ready))) {
		TAILQ_REMOVE(&o->rjobs_ready, j, rlink);
		j->ready = false;
		j->slot = true;
		o->rec_active++;
		job_step(j);
	}
}

/* Everything queued in the store before the job is durable: reads see it. */
static void
job_barrier_done(void *arg, int rc)
{
	struct rjob *j = arg;

	j->busy = false;
	if (j->dead) {
		job_free(j);
		return;
	}
	if (rc) {
		job_finish(j, rc);
		return;
	}
	job_ready(j);
	job_kick(j->osd);
}

static void
job_start(struct osd *o, const Cairn__Osd__RecoverReq *q, int32_t primary)
{
	struct rjob *j, *x, *tmp;
	struct os_txn *t = NULL;
	struct pg *pg = pg_find(o, q->pool, q->seed);
	int rc;

	/* A newer request for the same target replaces older ones. */
	TAILQ_FOREACH_SAFE(x, &o->rjobs, link, tmp)
		if (x->pool == q->pool && x->seed == q->seed && x->target == q->target)
			job_drop(x);
	j = calloc(1, sizeof(*j));
	if (!j)
		goto fail;
	j->osd = o;
	j->pool = q->pool;
	j->seed = q->seed;
	j->epoch = q->epoch;
	j->gen = q->gen;
	j->target = q->target;
	j->primary = primary;
	j->all = q->all;
	snprintf(j->cid, sizeof(j->cid), "pg.%" PRId64 ".%x", q->pool, q->seed);
	TAILQ_INSERT_TAIL(&o->rjobs, j, link);
	if (!pg || !pg->in_store || pg->incomplete || q->epoch < pg->interval_epoch) {
		job_finish(j, -ESTALE);
		return;
	}
	if (!j->all) {
		j->oids = calloc(q->n_oids + 1, sizeof(*j->oids));
		if (!j->oids) {
			job_finish(j, -ENOMEM);
			return;
		}
		for (size_t i = 0; i < q->n_oids; i++) {
			j->oids[i] = strdup(q->oids[i] ? q->oids[i] : "");
			if (!j->oids[i]) {
				job_finish(j, -ENOMEM);
				return;
			}
			j->noids++;
		}
	}
	rc = os_txn_create(&t);
	if (!rc)
		rc = os_txn_touch(t, j->cid, PGMETA);
	if (rc) {
		os_txn_destroy(t);
		job_finish(j, rc);
		return;
	}
	j->busy = true;
	os_queue(o->store, t, job_barrier_done, j);
	return;
fail : {
	Cairn__Osd__PgAck a = CAIRN__OSD__PG_ACK__INIT;

	a.pool = q->pool;
	a.seed = q->seed;
	a.epoch = q->epoch;
	a.gen = q->gen;
	a.target = q->target;
	a.rc = -ENOMEM;
	report_done(o, primary, &a);
}
}

void
pg_handle_recover(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__RecoverReq *q = (Cairn__Osd__RecoverReq *)cm_msg_unpack_front(
		m, &cairn__osd__recover_req__descriptor);

	if (q && q->from >= 0 && q->from != o->id)
		job_start(o, q, q->from);
	else
		CM_LOG_RL(CM_LOG_WARN, "bad recovery request from %s", cm_conn_peer(c));
	if (q)
		cairn__osd__recover_req__free_unpacked(q, NULL);
	cm_msg_destroy(m);
}

void
pg_handle_push_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PushReply *r = (Cairn__Osd__PushReply *)cm_msg_unpack_front(
		m, &cairn__osd__push_reply__descriptor);
	intptr_t peer = (intptr_t)cm_conn_user(c) - 1;
	struct rjob *j;

	cm_msg_destroy(m);
	if (!r)
		return;
	TAILQ_FOREACH(j, &o->rjobs, link)
		if (j->waiting && j->target == peer && j->pool == r->pool && j->seed == r->seed &&
		    j->epoch == r->epoch && r->oid && strcmp(j->oid, r->oid) == 0)
			break;
	if (!j)
		goto out;
	j->waiting = false;
	if (j->slot) {
		j->slot = false;
		o->rec_active--;
	}
	if (r->rc) {
		job_finish(j, r->rc);
		goto out;
	}
	if (j->data) {
		j->bytes += j->data->len;
		o->rec_bytes += j->data->len;
		j->data_off += j->data->len;
	}
	j->first = false;
	if (j->deleted || (!j->omap_more && j->data_off >= j->size)) {
		j->objects++;
		o->rec_objects++;
		free(j->oid);
		j->oid = NULL;
	}
	job_clear_object(j);
	job_ready(j);
	job_kick(o);
out:
	cairn__osd__push_reply__free_unpacked(r, NULL);
}

void
rec_peer_reset(struct osd *o, int32_t peer)
{
	struct rjob *j, *tmp;

	TAILQ_FOREACH_SAFE(j, &o->rjobs, link, tmp)
		if (j->target == peer)
			job_finish(j, -ECONNRESET);
		else if (j->primary == peer)
			job_drop(j);
}

void
rec_tick(struct osd *o, uint64_t now_ms)
{
	struct rjob *j, *tmp;

	TAILQ_FOREACH_SAFE(j, &o->rjobs, link, tmp) {
		struct pg *pg = pg_find(o, j->pool, j->seed);

		if (!pg || pg->interval_epoch > j->epoch)
			job_drop(j); /* the PG moved on: its primary asks again */
		else if (j->waiting && now_ms - j->sent_ms > PUSH_TIMEOUT)
			job_finish(j, -ETIMEDOUT);
	}
}

void
rec_free_all(struct osd *o)
{
	struct rjob *j;

	while ((j = TAILQ_FIRST(&o->rjobs))) {
		TAILQ_REMOVE(&o->rjobs, j, link);
		if (j->ready)
			TAILQ_REMOVE(&o->rjobs_ready, j, rlink);
		if (!j->busy)
			job_free(j);
		else
			j->dead = true; /* the store or a worker still holds it */
	}
}

/* ---------- the target: applying pushes and logs ---------- */

struct tgt_ctx {
	struct osd *osd;
	struct cm_conn *c; /* NULL: the primary is us */
	int64_t pool;
	uint32_t seed;
	uint64_t epoch, gen;
	char *oid;
	unsigned pending;
	int rc;
	struct pg *pg; /* wipe */
	char **oids;
	size_t noids;
	struct cm_work w;
};

static void
tgt_free(struct tgt_ctx *x)
{
	if (x->c)
		cm_conn_put(x->c);
	for (size_t i = 0; i < x->noids; i++)
		free(x->oids[i]);
	free(x->oids);
	free(x->oid);
	free(x);
}

static void
on_push_commit(void *arg, int rc)
{
	struct tgt_ctx *x = arg;
	Cairn__Osd__PushReply r = CAIRN__OSD__PUSH_REPLY__INIT;

	r.pool = x->pool;
	r.seed = x->seed;
	r.epoch = x->epoch;
	r.oid = x->oid;
	r.rc = rc;
	if (rc)
		CM_WARN("pg.%" PRId64 ".%x: applying a push of %s failed: %s", x->pool, x->seed,
			x->oid, cm_strerror(rc));
	osd_send_pb(x->c, OSD_MSG_PUSH_REPLY, 0, &r.base, NULL);
	tgt_free(x);
}

static int
push_txn(struct pg *pg, const Cairn__Osd__Push *p, const struct cm_sgl *data, struct os_txn *t)
{
	const char *cid = pg->cid, *oid = p->oid;
	int rc = 0;

	if (p->first) {
		/* Replace whatever we had: the object becomes the source's. */
		rc = os_txn_touch(t, cid, oid);
		if (!rc)
			rc = os_txn_remove(t, cid, oid);
		if (p->deleted || rc)
			return rc;
		rc = os_txn_touch(t, cid, oid);
		if (!rc && p->size)
			rc = os_txn_truncate(t, cid, oid, p->size);
		for (size_t i = 0; i < p->n_attr_names && !rc; i++) {
			char name[256];
			size_t nl = p->attr_names[i].len;

			if (nl == 0 || nl >= sizeof(name))
				return -EINVAL;
			memcpy(name, p->attr_names[i].data, nl);
			name[nl] = 0;
			rc = os_txn_setattr(t, cid, oid, name, p->attr_vals[i].data,
					    p->attr_vals[i].len);
		}
		if (!rc && p->omap_header.len)
			rc = os_txn_omap_set_header(t, cid, oid, p->omap_header.data,
						    p->omap_header.len);
	}
	if (p->deleted)
		return rc;
	for (size_t i = 0; i < p->n_omap_keys && !rc; i++)
		rc = os_txn_omap_set(t, cid, oid, p->omap_keys[i].data, p->omap_keys[i].len,
				     p->omap_vals[i].data, p->omap_vals[i].len);
	if (!rc && data->len) {
		uint64_t pos = 0, off = p->data_off;

		for (unsigned i = 0; i < data->n && !rc; i++) {
			const struct cm_sg *sg = &data->sg[i];

			rc = os_txn_write_buf(t, cid, oid, off + pos, sg->buf, sg->off, sg->len);
			pos += sg->len;
		}
	}
	return rc;
}

void
pg_handle_push(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__Push *p =
		(Cairn__Osd__Push *)cm_msg_unpack_front(m, &cairn__osd__push__descriptor);
	struct tgt_ctx *x = NULL;
	struct os_txn *t = NULL;
	struct pg *pg;
	int rc;

	if (!p || osd_check_push(p)) {
		CM_LOG_RL(CM_LOG_WARN, "bad push from %s", cm_conn_peer(c));
		goto out;
	}
	x = calloc(1, sizeof(*x));
	if (!x || !(x->oid = strdup(p->oid))) {
		free(x);
		goto out;
	}
	x->osd = o;
	x->c = cm_conn_get(c);
	x->pool = p->pool;
	x->seed = p->seed;
	x->epoch = p->epoch;
	pg = pg_find(o, p->pool, p->seed);
	if (!pg || (!pg->in_store && !pg->creating)) {
		on_push_commit(x, -ENOENT);
		goto out;
	}
	if (p->epoch < pg->interval_epoch) {
		on_push_commit(x, -ESTALE);
		goto out;
	}
	rc = os_txn_create(&t);
	if (!rc)
		rc = push_txn(pg, p, &m->data, t);
	if (rc) {
		os_txn_destroy(t);
		on_push_commit(x, rc);
		goto out;
	}
	os_queue(o->store, t, on_push_commit, x);
out:
	if (p)
		cairn__osd__push__free_unpacked(p, NULL);
	cm_msg_destroy(m);
}

static void
log_ack(struct tgt_ctx *x, int rc)
{
	Cairn__Osd__PgAck a = CAIRN__OSD__PG_ACK__INIT;

	a.pool = x->pool;
	a.seed = x->seed;
	a.epoch = x->epoch;
	a.gen = x->gen;
	a.target = x->osd->id;
	a.rc = rc;
	if (x->c)
		osd_send_pb(x->c, OSD_MSG_PG_LOG_ACK, 0, &a.base, NULL);
	else
		on_log_ack(x->osd, &a);
	tgt_free(x);
}

static void
on_log_commit(void *arg, int rc)
{
	struct tgt_ctx *x = arg;

	if (rc && !x->rc)
		x->rc = rc;
	if (--x->pending == 0)
		log_ack(x, x->rc);
}

/* The log keys, the info: in t. */
static int
log_txn(struct pg *pg, struct os_txn *t, const Cairn__Osd__PgInfo *info,
	Cairn__Osd__LogEntry *const *les, size_t n)
{
	uint8_t first[1] = { 'l' }, last[1] = { 'm' }, buf[256];
	int rc = os_txn_omap_rm_range(t, pg->cid, PGMETA, first, 1, last, 1);
	size_t len;

	for (size_t i = 0; i < n && !rc; i++) {
		uint8_t k[LOGKEY_LEN], *b;
		struct osd_ver v;

		ver_from_pb(les[i]->ver, &v);
		log_key(&v, k);
		len = cairn__osd__log_entry__get_packed_size(les[i]);
		b = malloc(len ? len : 1);
		if (!b)
			return -ENOMEM;
		cairn__osd__log_entry__pack(les[i], b);
		rc = os_txn_omap_set(t, pg->cid, PGMETA, k, sizeof(k), b, len);
		free(b);
	}
	if (rc)
		return rc;
	if (cairn__osd__pg_info__get_packed_size(info) > sizeof(buf))
		return -EINVAL;
	len = cairn__osd__pg_info__pack(info, buf);
	return os_txn_omap_set(t, pg->cid, PGMETA, "info", 4, buf, len);
}

/*
 * Remove x->oids from pg in transactions of 256 (t, when not NULL, is the
 * first one, with what must precede them); all: the PG's metadata object
 * too, then the collection. Each queued transaction counts in x->pending
 * and calls cb. \return 0 or the error that stopped the queueing.
 */
static int
queue_removes(struct tgt_ctx *x, struct pg *pg, struct os_txn *t, bool all, os_commit_cb cb)
{
	size_t i = 0;
	int rc = 0;

	for (;;) {
		if (!t && (rc = os_txn_create(&t)))
			return rc;
		for (size_t k = 0; !rc && i < x->noids && k < 256; i++) {
			if (!all && (uint8_t)x->oids[i][0] == 1)
				continue;
			rc = os_txn_remove(t, pg->cid, x->oids[i]);
			k++;
		}
		if (!rc && all && i >= x->noids)
			rc = os_txn_rmcoll(t, pg->cid);
		if (rc) {
			os_txn_destroy(t);
			return rc;
		}
		x->pending++;
		os_queue(x->osd->store, t, cb, x);
		t = NULL;
		if (i >= x->noids)
			return 0;
	}
}

/* Wipe: list every object on a worker, then remove them and mark the copy incomplete. */
static void
wipe_list_fn(void *arg)
{
	struct tgt_ctx *x = arg;
	char *after = NULL;
	bool more = true;

	while (more && !x->rc) {
		char **names = NULL, **grown;
		size_t n = 0;
		int rc = os_list(x->osd->store, x->pg->cid, after, 1024, &names, &n, &more);

		if (rc) {
			x->rc = rc == -ENOENT ? 0 : rc;
			break;
		}
		grown = realloc(x->oids, (x->noids + n + 1) * sizeof(*x->oids));
		if (!grown) {
			os_names_free(names, n);
			x->rc = -ENOMEM;
			break;
		}
		x->oids = grown;
		for (size_t i = 0; i < n; i++) {
			x->oids[x->noids++] = names[i];
			names[i] = NULL;
		}
		after = n ? x->oids[x->noids - 1] : NULL;
		free(names);
		if (!n)
			break;
	}
}

static void
wipe_list_done(void *arg)
{
	struct tgt_ctx *x = arg;
	struct pg *pg = pg_find(x->osd, x->pool, x->seed);
	Cairn__Osd__PgInfo pi;
	Cairn__Osd__Version lu, tail;
	struct os_txn *t = NULL;
	int rc = x->rc;

	if (!rc && pg != x->pg)
		rc = -ESTALE;
	if (rc) {
		log_ack(x, rc);
		return;
	}
	pg_log_clear(pg);
	pg->last_update = pg->log_tail = (struct osd_ver){ 0, 0 };
	pg->incomplete = true;
	pg_info_fill(pg, &pi, &lu, &tail);
	rc = os_txn_create(&t);
	if (!rc)
		rc = log_txn(pg, t, &pi, NULL, 0);
	if (rc)
		os_txn_destroy(t);
	x->pending = 1; /* held until every transaction is queued */
	if (!rc)
		rc = queue_removes(x, pg, t, false, on_log_commit);
	if (rc)
		x->rc = rc;
	CM_INFO("%s: emptied for a backfill (%zu objects)", pg->cid, x->noids);
	on_log_commit(x, 0);
}

static void
log_apply(struct osd *o, struct cm_conn *c, const Cairn__Osd__PgNotify *n)
{
	struct tgt_ctx *x = calloc(1, sizeof(*x));
	struct pg *pg = pg_find(o, n->pool, n->seed);
	struct os_txn *t = NULL;
	Cairn__Osd__PgInfo pi;
	int rc;

	if (!x)
		return; /* the primary times out and retries */
	x->osd = o;
	x->c = c ? cm_conn_get(c) : NULL;
	x->pool = n->pool;
	x->seed = n->seed;
	x->epoch = n->epoch;
	x->gen = n->gen;
	if (!pg || (!pg->in_store && !pg->creating)) {
		log_ack(x, -ENOENT);
		return;
	}
	if (n->epoch < pg->interval_epoch) {
		log_ack(x, -ESTALE);
		return;
	}
	if (n->wipe) {
		x->pg = pg;
		x->w = (struct cm_work){ .fn = wipe_list_fn, .done = wipe_list_done, .arg = x };
		if (cm_worker_submit(o->wp, o->r, &x->w))
			log_ack(x, -ESHUTDOWN);
		return;
	}
	if (!n->info) {
		log_ack(x, -EINVAL);
		return;
	}
	pi = *n->info;
	pi.incomplete = false;
	rc = os_txn_create(&t);
	if (!rc)
		rc = log_txn(pg, t, &pi, n->log, n->n_log);
	if (rc) {
		os_txn_destroy(t);
		log_ack(x, rc);
		return;
	}
	pg_log_clear(pg);
	for (size_t i = 0; i < n->n_log && !rc; i++)
		rc = pg_log_append(pg, n->log[i]);
	ver_from_pb(pi.last_update, &pg->last_update);
	ver_from_pb(pi.log_tail, &pg->log_tail);
	pg->last_epoch_started = pi.last_epoch_started;
	pg->incomplete = false;
	if (rc)
		CM_WARN("%s: no memory for the adopted log: duplicates may be missed", pg->cid);
	x->pending = 1;
	os_queue(o->store, t, on_log_commit, x);
}

void
pg_handle_pg_log(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PgNotify *n =
		(Cairn__Osd__PgNotify *)cm_msg_unpack_front(m, &cairn__osd__pg_notify__descriptor);

	if (n && osd_check_notify(n) == 0)
		log_apply(o, c, n);
	else
		CM_LOG_RL(CM_LOG_WARN, "bad PG log from %s", cm_conn_peer(c));
	if (n)
		cairn__osd__pg_notify__free_unpacked(n, NULL);
	cm_msg_destroy(m);
}

/* ---------- strays ---------- */

/*
 * The PG is active with all its copies: the prior OSDs that answered
 * peering with a copy may drop it (PG_REMOVE). Called by pg_activate.
 */
void
rec_remove_strays(struct pg *pg)
{
	struct osd *o = pg->osd;
	Cairn__Osd__PgAck a = CAIRN__OSD__PG_ACK__INIT;

	if ((unsigned)pg->nacting >= pg->size) {
		a.pool = pg->pool;
		a.seed = pg->seed;
		a.epoch = o->epoch;
		for (int i = 0; i < pg->nstrays; i++) {
			a.target = pg->strays[i];
			osd_send_pb(osd_peer_conn(o, pg->strays[i]), OSD_MSG_PG_REMOVE, 0, &a.base,
				    NULL);
		}
	}
	pg->nstrays = 0;
}

static void
on_remove_commit(void *arg, int rc)
{
	struct tgt_ctx *x = arg;

	if (rc && !x->rc)
		x->rc = rc;
	if (--x->pending)
		return;
	if (x->rc)
		CM_WARN("pg.%" PRId64 ".%x: removing the stray copy failed: %s", x->pool, x->seed,
			cm_strerror(x->rc));
	else
		CM_NOTICE("pg.%" PRId64 ".%x: stray copy removed (%zu objects): the PG is clean "
			  "on its acting OSDs",
			  x->pool, x->seed, x->noids);
	tgt_free(x);
}

static void
remove_list_done(void *arg)
{
	struct tgt_ctx *x = arg;
	struct osd *o = x->osd;
	struct pg *pg = pg_find(o, x->pool, x->seed);
	int rc = x->rc;

	/* Still a stray (no interval made us a member meanwhile)? */
	if (rc || pg != x->pg || pg->state != PG_NONE || !pg->in_store || pg->creating) {
		tgt_free(x);
		return;
	}
	x->pending = 1;
	x->rc = queue_removes(x, pg, NULL, true, on_remove_commit);
	/* Forget it in memory now: a later interval that needs it creates it
	 * again, queued after these. */
	pg_log_clear(pg);
	pg->in_store = false;
	pg->incomplete = false;
	pg->last_update = pg->log_tail = (struct osd_ver){ 0, 0 };
	on_remove_commit(x, 0);
}

void
pg_handle_pg_remove(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PgAck *a =
		(Cairn__Osd__PgAck *)cm_msg_unpack_front(m, &cairn__osd__pg_ack__descriptor);
	struct tgt_ctx *x = NULL;
	struct pg *pg;

	(void)c;
	cm_msg_destroy(m);
	if (!a)
		return;
	pg = pg_find(o, a->pool, a->seed);
	/* Only a copy we do not serve in our map, and only for a newer interval. */
	if (!pg || pg->state != PG_NONE || !pg->in_store || pg->creating ||
	    a->epoch < pg->interval_epoch || !(x = calloc(1, sizeof(*x))))
		goto out;
	x->osd = o;
	x->pool = a->pool;
	x->seed = a->seed;
	x->pg = pg;
	x->w = (struct cm_work){ .fn = wipe_list_fn, .done = remove_list_done, .arg = x };
	if (cm_worker_submit(o->wp, o->r, &x->w))
		tgt_free(x);
out:
	cairn__osd__pg_ack__free_unpacked(a, NULL);
}
