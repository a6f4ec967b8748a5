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
#define IDLE_KEEP_MS   30000u     /* a finished log-based job answers late requests */
#define REC_PRIO       (1u << 31) /* rmiss: the object's push was asked for first */
#define REC_STALL_MS   30000u     /* a plan without any ack this long is started over */

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

/* Entry i's undo kind (enum osd_undo) and the OSDs its shards were sent to. */
static void
lv_undo(const struct lview *lv, size_t i, uint32_t *undo, const uint32_t **sent, size_t *nsent)
{
	if (lv->n) {
		*undo = lv->n->log[i]->undo;
		*sent = lv->n->log[i]->sent_to;
		*nsent = lv->n->log[i]->n_sent_to;
	} else {
		const struct pg_lent *e = pg_log_at(lv->pg, i);

		*undo = e->undo;
		*sent = e->sent_to;
		*nsent = e->nsent;
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

static int
oids_add(struct pg_peer *p, const char *oid)
{
	char **grown;

	if (!(p->noids & (p->noids + 1)) || !p->oids) { /* grow at 2^k - 1 */
		grown = realloc(p->oids, (2 * p->noids + 2) * sizeof(*p->oids));
		if (!grown)
			return -ENOMEM;
		p->oids = grown;
	}
	p->oids[p->noids] = strdup(oid);
	if (!p->oids[p->noids])
		return -ENOMEM;
	p->noids++;
	return 0;
}

/* Add the objects of lv's entries newer than c to p->oids. */
static int
collect_after(struct pg_peer *p, const struct lview *lv, const struct osd_ver *c)
{
	size_t n = lv_n(lv);

	for (size_t i = 0; i < n; i++) {
		struct osd_ver v;
		const char *oid;
		int rc;

		lv_get(lv, i, &v, &oid);
		if (osd_ver_cmp(&v, c) <= 0 || !oid[0])
			continue;
		if ((rc = oids_add(p, oid)))
			return rc;
	}
	return 0;
}

/* Add the objects slot t's copy reported missing to p->oids. */
static int
collect_missing(struct pg *pg, int t, struct pg_peer *p)
{
	char **names = NULL;
	size_t n = 0;
	int rc = 0;

	if (pg->slot_osd[t] != pg->osd->id) {
		for (size_t i = 0; p->n && i < p->n->n_missing && !rc; i++)
			rc = oids_add(p, p->n->missing[i]);
		return rc;
	}
	if (oset_names(&pg->missing, &names, &n))
		return -ENOMEM;
	for (size_t i = 0; i < n && !rc; i++)
		rc = oids_add(p, names[i]);
	free(names);
	return rc;
}

/* The shard label of slot i's copy (shard + 1; 0: none or replicated). */
static uint32_t
slot_label(struct pg *pg, int i)
{
	const struct pg_peer *p = &pg->peer[i];

	if (pg->slot_osd[i] == pg->osd->id)
		return pg->info_shard;
	return p->n && p->n->info ? p->n->info->shard : 0;
}

/*
 * EC: may slot t's entry v (its shards sent to the OSDs sent[i] - 1), which
 * the authoritative history lacks, be undone? Only if it was never
 * acknowledged: one of the OSDs it was sent to is here, with a copy of the
 * same shard, and lacks it (an acknowledged write is on every shard it was
 * sent to). Otherwise those that may hold it are away, and fewer than k of
 * them here cannot tell.
 */
static bool
ec_unacked(struct pg *pg, int t, const struct osd_ver *v, const uint32_t *sent, size_t nsent)
{
	for (int s = 0; s < pg->nslots; s++) {
		const struct pg_peer *q = &pg->peer[s];
		uint32_t label = slot_label(pg, s);
		struct lview sv;

		if (s == t || !q->have || !q->exists || q->incomplete || !label || label > nsent ||
		    sent[label - 1] != (uint32_t)pg->slot_osd[s] + 1)
			continue;
		lv_of(pg, s, &sv);
		if (osd_ver_cmp(&q->lu, v) < 0 ||
		    (osd_ver_cmp(&q->tail, v) < 0 && !lv_has(&sv, &q->tail, v)))
			return true;
	}
	return false;
}

/*
 * EC: slot t holds entries newer than `common` that the authoritative
 * history lacks. Undo them on t (peer[t].rollback) when every one can be
 * undone and provably was never acknowledged. \return 0 (then
 * peer[t].rollback says whether), or -EAGAIN: one may have been
 * acknowledged, so the PG must wait for more of its shards.
 */
static int
ec_plan_rollback(struct pg *pg, int t, const struct lview *tv, const struct osd_ver *common)
{
	struct pg_peer *p = &pg->peer[t];
	bool undoable = true;

	p->rollback = false;
	for (size_t i = lv_n(tv); i-- > 0;) {
		struct osd_ver v;
		const char *oid;
		uint32_t undo;
		const uint32_t *sent;
		size_t nsent;

		lv_get(tv, i, &v, &oid);
		if (osd_ver_cmp(&v, common) <= 0)
			break;
		lv_undo(tv, i, &undo, &sent, &nsent);
		if (undo == OSD_UNDO_NONE || !nsent) {
			undoable = false; /* (an entry of an older version: rebuilt instead) */
			continue;
		}
		if (!ec_unacked(pg, t, &v, sent, nsent)) {
			CM_LOG_RL(
				CM_LOG_WARN,
				"%s: osd.%d's change %" PRIu64 ".%" PRIu64 " of %s is on too few "
				"shards here, but may have been acknowledged: waiting for more of "
				"the shards it was written to",
				pg->cid, pg->slot_osd[t], v.epoch, v.seq, oid);
			return -EAGAIN;
		}
	}
	p->rollback = undoable;
	p->rollback_to = *common;
	return 0;
}

/*
 * Plan slot t against the authoritative slot a: nothing, log-based (the
 * objects to push in peer[t].oids) or backfill. \return 0, -ENOMEM, or
 * -EAGAIN (EC: t's newer entries can be neither kept nor undone yet).
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
	if (p->exists && !p->incomplete && !p->partial && osd_ver_cmp(&p->lu, &ap->lu) == 0)
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
	/* Objects changed on the authoritative copy since the common point, those
	 * our target changed on a history that did not survive (EC: undone on the
	 * target instead, when it can), and those it still lacked from an earlier
	 * recovery. */
	if (pg->ec && p->exists && (rc = ec_plan_rollback(pg, t, &tv, &common)))
		return rc;
	rc = collect_after(p, &av, &common);
	if (!rc && p->exists && !p->rollback)
		rc = collect_after(p, &tv, &common);
	if (!rc && p->partial)
		rc = collect_missing(pg, t, p);
	if (rc)
		return rc;
	if (p->noids)
		qsort(p->oids, p->noids, sizeof(*p->oids), cmp_str);
	for (size_t i = 0; i < p->noids; i++) {
		if (w && strcmp(p->oids[w - 1], p->oids[i]) == 0) {
			free(p->oids[i]);
			continue;
		}
		p->oids[w++] = p->oids[i];
	}
	p->noids = w;
	p->step = REC_ADOPT;
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
	oset_clear(&pg->rmiss);
	pg->rec_pending = 0;
	pg->rec_init = 0;
	pg->rec_early = false;
	pg->rec_backfill = false;
	pg->auth = -1;
	pg->rec_gen++;
}

static void
rec_fail(struct pg *pg, int32_t who, int rc)
{
	CM_WARN("%s: recovery of osd.%d failed: %s; peering again in %u ms", pg->cid, who,
		cm_strerror(rc), RETRY_MS);
	rec_reset(pg);
	if (pg->state == PG_ACTIVE)
		pg->state = PG_PEERING; /* ops wait: the missing sets are unknown until then */
	pg->retry_ms = cm_now_ms() + RETRY_MS;
}

static void job_start(struct osd *o, const Cairn__Osd__RecoverReq *q, int32_t primary);
static void push_apply(struct osd *o, struct cm_conn *c, const Cairn__Osd__Push *p,
		       const struct cm_sgl *data);
static void push_replied(struct osd *o, int32_t peer, const Cairn__Osd__PushReply *r);
static void slot_done(struct pg *pg, int t);
static void log_apply(struct osd *o, struct cm_conn *c, const Cairn__Osd__PgNotify *n);

/* Send a recovery request for peer[t] to the source (maybe us). \return 0 or -errno. */
static int
send_req(struct pg *pg, int t, char **oids, size_t n, bool all, bool prio)
{
	Cairn__Osd__RecoverReq q = CAIRN__OSD__RECOVER_REQ__INIT;
	struct osd *o = pg->osd;
	int32_t src = pg->ec ? o->id : pg->slot_osd[pg->auth]; /* EC: we rebuild shards */

	q.pool = pg->pool;
	q.seed = pg->seed;
	q.epoch = pg->plan_epoch;
	q.gen = pg->rec_gen;
	q.target = pg->acting[t];
	q.from = o->id;
	q.all = all;
	q.prio = prio;
	q.oids = oids;
	q.n_oids = n;
	if (src == o->id) {
		job_start(o, &q, o->id);
		return 0;
	}
	return osd_send_pb(osd_peer_conn(o, src, pg->seed), OSD_MSG_RECOVER, 0, &q.base, NULL)
		       ? -ENOTCONN
		       : 0;
}

/*
 * Ask the source to push peer[t]'s objects (or all of them) to it: those it
 * still lacks. One pushed already for a client may have been written since:
 * pushing it again would undo that.
 */
static void
send_recover(struct pg *pg, int t)
{
	struct pg_peer *p = &pg->peer[t];
	char **left = NULL;
	size_t n = 0;
	int rc;

	p->step = REC_PUSH;
	if (!p->backfill) {
		left = calloc(p->noids + 1, sizeof(*left));
		if (!left) {
			rec_fail(pg, pg->acting[t], -ENOMEM);
			return;
		}
		for (size_t i = 0; i < p->noids; i++) {
			uint32_t *v = oset_get(&pg->rmiss, p->oids[i]);

			if (v && (*v & 1u << t))
				left[n++] = p->oids[i];
		}
		if (!n) {
			free(left);
			slot_done(pg, t);
			return;
		}
	}
	rc = send_req(pg, t, left, n, p->backfill, false);
	free(left);
	if (rc)
		rec_fail(pg, pg->slot_osd[pg->auth], rc);
}

static bool
held_by_flag(struct pg *pg, int t)
{
	const Cairn__Map__OsdMap *m = pg->osd->map;

	return m && (m->flags & (pg->peer[t].backfill ? MON_FLAG_NOBACKFILL : MON_FLAG_NORECOVER));
}

/* Push to peer[t] now, or once the operator lets us. */
static void
start_push(struct pg *pg, int t)
{
	if (held_by_flag(pg, t))
		pg->peer[t].step = REC_WAIT;
	else
		send_recover(pg, t);
}

/*
 * Tell peer[t] to adopt the authoritative log (with, at the start of a
 * log-based recovery, the objects it is to mark missing), or, wipe, to
 * empty its copy for a backfill.
 */
static void
send_pg_log(struct pg *pg, int t, bool wipe, char **missing, size_t nmissing)
{
	Cairn__Osd__PgNotify n = CAIRN__OSD__PG_NOTIFY__INIT;
	Cairn__Osd__PgInfo pi;
	Cairn__Osd__Version lu, tail, rb;
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
	n.shard = pg->ec ? (uint32_t)pg->shard[t] + 1 : 0;
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
		n.missing = missing;
		n.n_missing = nmissing;
		if (pg->peer[t].rollback) {
			ver_to_pb(&pg->peer[t].rollback_to, &rb);
			n.rollback = true;
			n.rollback_to = &rb;
		}
	}
	if (to == o->id)
		log_apply(o, NULL, &n);
	else if (osd_send_pb(osd_peer_conn(o, to, pg->seed), OSD_MSG_PG_LOG, 0, &n.base, NULL))
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

	if (pg->ec) {
		ec_plan_auth(pg);
		a = pg->auth;
		for (int i = 0; i < pg->nslots; i++)
			if (pg->slot_osd[i] == o->id)
				self = i;
	}
	/* The authoritative copy: the newest complete one, acting or prior
	 * (ties: ours, then an acting OSD's). A copy waiting for objects of an
	 * earlier recovery (partial) cannot be it. */
	for (int i = 0; i < pg->nslots && !pg->ec; i++) {
		struct pg_peer *p = &pg->peer[i];

		if (pg->slot_osd[i] == o->id)
			self = i;
		if (!p->have || !p->exists || p->incomplete || p->partial)
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
		/* Every one of them removed from the map (`osd rm`): the operator
		 * gave their data up; go on with what the acting set has. */
		bool left = false;

		for (int k = 0; k < pg->nprior && !left; k++)
			left = mon_osd_find(o->map, pg->prior[k]) != NULL;
		if (!left) {
			CM_WARN("%s: the OSDs that held it before were removed from the map: "
				"going on without what only they had",
				pg->cid);
			prior_seen = true;
		}
	}
	if (!prior_seen) {
		pg->state = PG_INCOMPLETE;
		pg->retry_ms = cm_now_ms() + RETRY_MS;
		CM_WARN("%s: none of the OSDs that held it before is up: waiting", pg->cid);
		return;
	}
	switch (pg_past_heard(pg)) {
	case 1:
		break;
	case 0:
		pg->state = PG_INCOMPLETE;
		pg->retry_ms = cm_now_ms() + RETRY_MS;
		return;
	default:
		pg->state = PG_INCOMPLETE;
		pg->retry_ms = cm_now_ms() + 1; /* at the next tick */
		return;
	}
	if (a < 0 || self < 0) {
		pg->state = PG_INCOMPLETE;
		pg->retry_ms = cm_now_ms() + RETRY_MS;
		if (pg->ec)
			CM_WARN("%s: fewer than k=%u complete shards among the acting OSDs: "
				"waiting",
				pg->cid, pg->ec->k);
		else
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
		int prc = plan_slot(pg, i, a);

		if (prc == -EAGAIN) {
			rec_reset(pg);
			pg->state = PG_INCOMPLETE;
			pg->retry_ms = cm_now_ms() + RETRY_MS;
			return;
		}
		if (prc) {
			rec_fail(pg, pg->acting[i], prc);
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
	/*
	 * Serve while recovering when the authoritative copy stays in the acting
	 * set and our own copy is usable: objects some acting OSD lacks wait for
	 * their push (asked for first); a backfill needs us as its source, so
	 * that a push and a client op on one object never overlap.
	 */
	pg->rec_early = a < pg->nacting && !pg->peer[self].backfill &&
			(a == self || !backfill || pg->ec); /* EC: we rebuild, whoever is auth */
	pg->rec_backfill = backfill;
	pg->state = backfill ? PG_BACKFILLING : PG_RECOVERING;
	pg->rec_objects = pg->rec_bytes = 0;
	pg->rec_seen_ms = cm_now_ms();
	if (!pg->rec_early && o->map &&
	    (o->map->flags & (backfill ? MON_FLAG_NOBACKFILL : MON_FLAG_NORECOVER))) {
		/* The operator holds it: look again later (and on every map change). */
		rec_reset(pg);
		pg->retry_ms = cm_now_ms() + RETRY_MS;
		return;
	}
	for (int i = 0; i < pg->nacting; i++) {
		struct pg_peer *p = &pg->peer[i];

		for (size_t k = 0; p->step == REC_ADOPT && k < p->noids; k++) {
			uint32_t *v = oset_get(&pg->rmiss, p->oids[k]);

			if (oset_put(&pg->rmiss, p->oids[k], (v ? *v : 0) | 1u << i)) {
				rec_fail(pg, pg->acting[i], -ENOMEM);
				return;
			}
		}
		if (p->step == REC_ADOPT || p->step == REC_WIPE)
			pg->rec_init++;
	}
	CM_INFO("%s: %s %u of %d copies from osd.%d (at %" PRIu64 ".%" PRIu64 ", %zu objects)%s",
		pg->cid, pg_state_name(pg->state), pg->rec_pending, pg->nacting, pg->slot_osd[a],
		pg->peer[a].lu.epoch, pg->peer[a].lu.seq, pg->rmiss.n,
		pg->rec_early ? ", serving meanwhile" : "");
	/* Start every target; a failure resets the plan (gen changes): stop then. */
	gen = pg->rec_gen;
	for (int i = 0; i < pg->nacting && gen == pg->rec_gen; i++) {
		struct pg_peer *p = &pg->peer[i];

		if (p->step == REC_WIPE)
			send_pg_log(pg, i, true, NULL, 0);
		else if (p->step == REC_ADOPT)
			send_pg_log(pg, i, false, p->oids, p->noids);
	}
}

static struct pg *
rec_pg(struct osd *o, int64_t pool, uint32_t seed, uint64_t epoch, uint64_t gen, int32_t target,
       int *slot)
{
	struct pg *pg = pg_find(o, pool, seed);

	if (!pg || pg->primary != o->id || pg->plan_epoch != epoch || pg->rec_gen != gen ||
	    pg->auth < 0 || !pg->rec_pending)
		return NULL;
	for (int i = 0; i < pg->nacting; i++)
		if (pg->acting[i] == target) {
			*slot = i;
			return pg;
		}
	return NULL;
}

/* Slot t has oid now: ops on it may run once no acting OSD lacks it. */
static void
object_recovered(struct pg *pg, int t, const char *oid)
{
	uint32_t *v = oset_get(&pg->rmiss, oid);

	if (!v || !(*v & 1u << t))
		return;
	*v &= ~(1u << t);
	if (*v & ~REC_PRIO)
		return;
	oset_del(&pg->rmiss, oid);
	pg_object_ready(pg, oid);
}

static void
slot_done(struct pg *pg, int t)
{
	struct pg_peer *p = &pg->peer[t];
	uint64_t gen = pg->rec_gen;

	p->step = REC_DONE;
	for (size_t i = 0; i < p->noids && gen == pg->rec_gen; i++)
		object_recovered(pg, t, p->oids[i]);
	if (gen != pg->rec_gen)
		return;
	peer_oids_free(p);
	if (--pg->rec_pending)
		return;
	CM_INFO("%s: recovered (%" PRIu64 " objects, %" PRIu64 " bytes)", pg->cid, pg->rec_objects,
		pg->rec_bytes);
	if (pg->state == PG_ACTIVE) {
		rec_reset(pg);
		pg_recovered(pg);
	} else {
		rec_reset(pg);
		pg_activate(pg);
	}
}

/* The PG activated (early) or the last initial ack came: activate once all did. */
static void
init_acked(struct pg *pg)
{
	if (--pg->rec_init == 0 && pg->rec_early && pg->state != PG_ACTIVE)
		pg_activate(pg);
}

static void
on_recover_done(struct osd *o, const Cairn__Osd__PgAck *a)
{
	int t;
	struct pg *pg = rec_pg(o, a->pool, a->seed, a->epoch, a->gen, a->target, &t);
	uint64_t gen;

	if (!pg)
		return;
	pg->rec_seen_ms = cm_now_ms();
	if (a->progress) {
		gen = pg->rec_gen;
		for (size_t i = 0; i < a->n_oids && gen == pg->rec_gen; i++)
			object_recovered(pg, t, a->oids[i]);
		return;
	}
	if (pg->peer[t].step != REC_PUSH)
		return;
	if (a->rc) {
		rec_fail(pg, a->target, a->rc);
		return;
	}
	pg->rec_objects += a->objects;
	pg->rec_bytes += a->bytes;
	if (pg->peer[t].backfill) {
		pg->peer[t].step = REC_LOG;
		send_pg_log(pg, t, false, NULL, 0);
	} else {
		slot_done(pg, t);
	}
}

static void
on_log_ack(struct osd *o, const Cairn__Osd__PgAck *a)
{
	int t;
	struct pg *pg = rec_pg(o, a->pool, a->seed, a->epoch, a->gen, a->target, &t);
	struct pg_peer *p;
	uint64_t gen;

	if (!pg)
		return;
	pg->rec_seen_ms = cm_now_ms();
	if (a->rc) {
		rec_fail(pg, a->target, a->rc);
		return;
	}
	p = &pg->peer[t];
	gen = pg->rec_gen;
	/* EC: objects the target could not roll back: rebuild them too. */
	for (size_t i = 0; p->step == REC_ADOPT && i < a->n_oids; i++) {
		uint32_t *v = oset_get(&pg->rmiss, a->oids[i]);

		if (v && (*v & 1u << t))
			continue;
		if (oids_add(p, a->oids[i]) ||
		    oset_put(&pg->rmiss, a->oids[i], (v ? *v : 0) | 1u << t)) {
			rec_fail(pg, a->target, -ENOMEM);
			return;
		}
	}
	switch (p->step) {
	case REC_WIPE:
		start_push(pg, t);
		break;
	case REC_ADOPT:
		if (p->noids)
			start_push(pg, t);
		else
			slot_done(pg, t);
		break;
	case REC_LOG:
		slot_done(pg, t);
		return;
	default:
		return;
	}
	if (gen == pg->rec_gen)
		init_acked(pg);
}

/* The operator let recovery or backfill go on: start held pushes. */
static void
rec_release(struct pg *pg)
{
	uint64_t gen = pg->rec_gen;

	for (int t = 0; t < pg->nacting && gen == pg->rec_gen; t++)
		if (pg->peer[t].step == REC_WAIT && !held_by_flag(pg, t))
			send_recover(pg, t);
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
	if (osd_check_ack(a) == 0)
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
	bool bg;      /* the primary's whole list is in (not only objects clients wait for) */
	bool ready;   /* on rjobs_ready */
	bool busy;    /* a worker, a read or the store will call back */
	bool slot;    /* holds one of osd_recovery_max_active */
	bool waiting; /* for the target's PushReply */
	bool held;    /* the next object has client ops executing: wait for them */
	bool dead;    /* free when the callback returns */
	bool idle;    /* everything asked for is pushed: kept to answer late requests */
	uint64_t idle_ms;
	char **oids; /* log-based: the objects; backfill: the current page */
	size_t noids, next, cap;
	struct oset done; /* log-based: pushed in this plan (never twice) */
	struct oset prio; /* clients wait for these: not held by the share */
	char *cursor;     /* backfill: the last name listed */
	/* the current object (set on the reactor; workers only read it) */
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
	/* EC: the primary's own shard cannot list the PG: a complete shard does */
	uint64_t list_tid;
	int32_t list_peer;
	struct osd_ver ec_ver; /* EC: the version the current object's chunks are read at */
};

static void job_kick(struct osd *o);

static bool
job_pushing(const struct rjob *j, const struct pg *pg, const char *oid)
{
	return j->oid && !j->dead && j->pool == pg->pool && j->seed == pg->seed &&
	       strcmp(j->oid, oid) == 0;
}

bool
rec_op_blocked(struct pg *pg, const char *oid, bool writes)
{
	uint32_t *v = oset_get(&pg->rmiss, oid);
	struct rjob *j;

	if (v && !writes) { /* a read needs our copy only */
		for (int t = 0; t < pg->nacting; t++)
			if (pg->acting[t] == pg->osd->id && !(*v & 1u << t))
				v = NULL;
	}
	if (v) {
		if (!(*v & REC_PRIO)) {
			/* A local source may answer at once and run the op: oid (the op's)
			 * may be gone when send_req returns. */
			char name[OSD_NAME_MAX + 1];
			char *one[1] = { name };
			uint32_t mask = *v;
			uint64_t gen = pg->rec_gen;

			snprintf(name, sizeof(name), "%s", oid);
			*v |= REC_PRIO;
			for (int t = 0; t < pg->nacting && gen == pg->rec_gen; t++)
				if (mask & 1u << t)
					(void)send_req(pg, t, one, 1, false, true);
		}
		return true;
	}
	TAILQ_FOREACH(j, &pg->osd->rjobs, link)
		if (writes && job_pushing(j, pg, oid))
			return true;
	return false;
}

static void
job_ready(struct rjob *j)
{
	if (j->ready || j->dead)
		return;
	j->ready = true;
	TAILQ_INSERT_TAIL(&j->osd->rjobs_ready, j, rlink);
}

static void
job_release_slot(struct rjob *j)
{
	if (j->slot) {
		j->slot = false;
		j->osd->rec_active--;
	}
}

void
rec_object_idle(struct pg *pg, const char *oid)
{
	struct osd *o = pg->osd;
	struct rjob *j;
	bool any = false;

	TAILQ_FOREACH(j, &o->rjobs, link)
		if (j->held && j->pool == pg->pool && j->seed == pg->seed && j->next < j->noids &&
		    strcmp(j->oids[j->next], oid) == 0) {
			j->held = false;
			job_ready(j);
			any = true;
		}
	if (any)
		job_kick(o);
}

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
job_free_list(struct rjob *j)
{
	for (size_t i = 0; i < j->noids; i++)
		free(j->oids[i]);
	free(j->oids);
	j->oids = NULL;
	j->noids = j->next = j->cap = 0;
}

static void
job_free(struct rjob *j)
{
	job_clear_object(j);
	job_free_list(j);
	oset_clear(&j->done);
	oset_clear(&j->prio);
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

	job_release_slot(j);
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
		osd_send_pb(osd_peer_conn(o, primary, a->seed), OSD_MSG_RECOVER_DONE, 0, &a->base,
			    NULL);
}

static void
job_ack_init(const struct rjob *j, Cairn__Osd__PgAck *a)
{
	cairn__osd__pg_ack__init(a);
	a->pool = j->pool;
	a->seed = j->seed;
	a->epoch = j->epoch;
	a->gen = j->gen;
	a->target = j->target;
}

/* Tell the primary oid is on the target now (clients waiting for it go on). */
static void
job_progress(struct rjob *j, const char *oid)
{
	Cairn__Osd__PgAck a;
	char *one[1] = { (char *)oid };

	job_ack_init(j, &a);
	a.progress = true;
	a.oids = one;
	a.n_oids = 1;
	report_done(j->osd, j->primary, &a);
}

/*
 * Report to the primary. A log-based job that succeeded stays (idle) for a
 * while: a request for an object it pushed already is answered at once
 * instead of pushing it again over a client's newer write.
 */
static void
job_finish(struct rjob *j, int rc)
{
	struct osd *o = j->osd;
	Cairn__Osd__PgAck a;
	int32_t primary = j->primary;
	bool report = j->bg || j->all || rc;

	if (j->dead)
		return;
	job_ack_init(j, &a);
	a.rc = rc;
	a.objects = j->objects;
	a.bytes = j->bytes;
	if (rc >= 0 || rc == -ENOTCONN || rc == -ECONNRESET || rc == -ESTALE)
		CM_DEBUG("%s: pushed %" PRIu64 " objects to osd.%d: %s", j->cid, j->objects,
			 j->target, cm_strerror(rc));
	else
		CM_WARN("%s: pushing to osd.%d failed: %s", j->cid, j->target, cm_strerror(rc));
	if (!rc && !j->all) {
		job_release_slot(j);
		j->idle = true;
		j->idle_ms = cm_now_ms();
	} else {
		job_drop(j);
	}
	if (report)
		report_done(o, primary, &a);
	job_kick(o);
}

/* On a worker: read the current object's metadata (and an omap page) for the next push. */
static void
job_step_fn(void *arg)
{
	struct rjob *j = arg;
	struct os_store *s = j->osd->store;
	struct os_stat st;
	int rc;

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

/* On a worker: the next page of a backfill's listing. */
static void
job_list_fn(void *arg)
{
	struct rjob *j = arg;
	bool more = false;
	char **names = NULL;
	size_t n = 0;
	int rc;

	job_free_list(j);
	rc = os_list(j->osd->store, j->cid, j->cursor, LIST_PAGE, &names, &n, &more);
	if (rc) {
		j->rc = rc;
		return;
	}
	j->oids = names;
	j->noids = j->cap = n;
	j->list_done = !more;
	if (n) {
		free(j->cursor);
		j->cursor = strdup(names[n - 1]);
		if (!j->cursor)
			j->rc = -ENOMEM;
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
	bool local = false;
	int rc = -ENOMEM;

	cm_sgl_init(&sgl);
	p.pool = j->pool;
	p.seed = j->seed;
	p.epoch = j->epoch;
	p.gen = j->gen;
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
	o->sch_rec += 4096 + dlen;
	if (j->target == o->id) { /* an EC primary rebuilding its own shard */
		j->waiting = true;
		j->sent_ms = cm_now_ms();
		/* A failure answers at once and may end j: do not touch it after. */
		local = true;
		push_apply(o, NULL, &p, &sgl);
	} else {
		rc = osd_send_pb(osd_peer_conn(o, j->target, j->seed), OSD_MSG_PUSH, 0, &p.base,
				 j->data ? &sgl : NULL);
	}
out:
	cm_sgl_fini(&sgl);
	free(an);
	free(av);
	free(ok);
	free(ov);
	if (local)
		return;
	if (rc) {
		job_finish(j, rc);
		return;
	}
	j->waiting = true;
	j->sent_ms = cm_now_ms();
}

/*
 * A callback of the job's worker step, read or store barrier came back with
 * rc: free a job dropped meanwhile, end one that failed. \return whether
 * the job goes on.
 */
static bool
job_resume(struct rjob *j, int rc)
{
	j->busy = false;
	if (j->dead) {
		job_free(j);
		return false;
	}
	if (rc) {
		job_finish(j, rc);
		return false;
	}
	return true;
}

static void
job_on_data(void *arg, int rc, struct cm_buf *data)
{
	struct rjob *j = arg;

	if (!job_resume(j, rc)) {
		if (data)
			cm_buf_put(data);
		return;
	}
	j->data = data;
	job_send(j);
}

static void
job_step_done(void *arg)
{
	struct rjob *j = arg;

	if (!job_resume(j, j->rc))
		return;
	if (!j->deleted && !j->omap_more && j->data_off < j->size) {
		j->busy = true;
		osd_read(j->osd, j->cid, j->oid, j->data_off,
			 CM_MIN((uint64_t)PUSH_CHUNK, j->size - j->data_off), job_on_data, j);
		return;
	}
	job_send(j);
}

static void job_step(struct rjob *j);

/* ---- EC: the primary rebuilds the target's shard from k others ---- */

#define EC_PUSH_CHUNK (1u << 20) /* shard bytes per push */

static void
job_ec_fetched(void *arg, struct ec_fetch *f)
{
	struct rjob *j = arg;

	if (!job_resume(j, f->rc))
		return;
	if (j->first) {
		struct pg *pg = pg_find(j->osd, j->pool, j->seed);

		j->size = pg && pg->ec ? osd_ec_shard_size(pg->ec, f->lsize) : 0;
		j->ec_ver = f->ver; /* the next chunks come from the same version */
		j->attrs = f->attrs;
		j->nattrs = f->nattrs;
		f->attrs = NULL;
		f->nattrs = 0;
	}
	j->data = f->data ? cm_buf_get(f->data) : NULL;
	job_send(j);
}

static void
job_ec_step(struct rjob *j, struct pg *pg)
{
	const struct pg_lent *e = NULL;
	int shard = -1, rc;

	/* The object's version, once per object: its newest entry in our (the
	 * authoritative) log; an object the log does not name is the same on
	 * every complete shard (any version, as long as they agree). */
	for (size_t i = pg->log_n; j->first && i-- > 0;) {
		const struct pg_lent *x = pg_log_at(pg, i);

		if (strcmp(x->oid, j->oid) == 0) {
			e = x;
			break;
		}
	}
	for (int t = 0; t < pg->nacting; t++)
		if (pg->acting[t] == j->target)
			shard = pg->shard[t];
	if (shard < 0) {
		job_finish(j, -ESTALE);
		return;
	}
	if (j->first) {
		j->omap_more = false;
		j->deleted = e && e->op == OSD_LOG_DELETE;
		if (j->deleted) {
			j->size = 0;
			job_send(j);
			return;
		}
	}
	j->busy = true;
	rc = ec_fetch_shard(pg, j->oid,
			    !j->first ? &j->ec_ver
			    : e       ? &e->ver
				      : NULL,
			    (unsigned)shard, j->data_off, EC_PUSH_CHUNK, j->first, job_ec_fetched,
			    j);
	if (rc) {
		j->busy = false;
		job_finish(j, rc);
	}
}

static void
job_list_done(void *arg)
{
	struct rjob *j = arg;

	if (job_resume(j, j->rc))
		job_step(j);
}

/* Ask a complete shard (the authoritative one) for the next page of names. */
static void
job_list_remote(struct rjob *j, struct pg *pg)
{
	Cairn__Osd__PgList q = CAIRN__OSD__PG_LIST__INIT;

	if (pg->auth < 0 || pg->slot_osd[pg->auth] == j->osd->id) {
		job_finish(j, -ESTALE);
		return;
	}
	q.pool = j->pool;
	q.seed = j->seed;
	q.epoch = j->epoch;
	q.start_after = j->cursor ? j->cursor : "";
	q.max = LIST_PAGE;
	q.shard = true;
	j->list_peer = pg->slot_osd[pg->auth];
	if (!j->cursor)
		CM_NOTICE("%s: rebuilding osd.%d's shard from osd.%d's listing", pg->cid, j->target,
			  j->list_peer);
	j->list_tid = ++j->osd->tid;
	j->busy = true;
	if (osd_send_pb(osd_peer_conn(j->osd, j->list_peer, j->seed), OSD_MSG_PG_LIST, j->list_tid,
			&q.base, NULL)) {
		j->rc = -ENOTCONN;
		j->list_tid = 0;
		job_list_done(j);
	}
}

void
rec_handle_list_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PgListReply *r = (Cairn__Osd__PgListReply *)cm_msg_unpack_front(
		m, &cairn__osd__pg_list_reply__descriptor);
	struct rjob *j;

	(void)c;
	TAILQ_FOREACH(j, &o->rjobs, link)
		if (j->busy && j->list_tid && j->list_tid == m->tid)
			break;
	if (!j)
		goto out;
	j->list_tid = 0;
	job_free_list(j);
	j->rc = !r ? -EBADMSG : r->rc;
	if (!j->rc && r->n_oids) {
		j->oids = calloc(r->n_oids, sizeof(*j->oids));
		for (size_t i = 0; j->oids && i < r->n_oids; i++)
			if (!(j->oids[j->noids++] = strdup(r->oids[i])))
				j->rc = -ENOMEM;
		if (!j->oids)
			j->rc = -ENOMEM;
		j->cap = j->noids;
		free(j->cursor);
		j->cursor = strdup(r->oids[r->n_oids - 1]);
		if (!j->cursor)
			j->rc = -ENOMEM;
	}
	if (!j->rc)
		j->list_done = !r->more;
	job_list_done(j);
out:
	if (r)
		cairn__osd__pg_list_reply__free_unpacked(r, NULL);
	cm_msg_destroy(m);
}

static void
job_submit(struct rjob *j, void (*fn)(void *), void (*done)(void *))
{
	j->w = (struct cm_work){ .fn = fn, .done = done, .arg = j };
	j->busy = true;
	if (osd_work(j->osd, &j->w)) {
		j->busy = false;
		job_finish(j, -ESHUTDOWN);
	}
}

/*
 * The next step of a job holding a slot: pick the next object (not one a
 * client op is executing on: wait for it, so that what we read includes
 * that op's change; ops on the object wait for us from now on), then read
 * it on a worker.
 */
static void
job_step(struct rjob *j)
{
	struct pg *pg = pg_find(j->osd, j->pool, j->seed);

	while (!j->oid && j->next < j->noids) {
		const char *oid = j->oids[j->next];

		if ((uint8_t)oid[0] == 1 || (!j->all && oset_get(&j->done, oid))) {
			j->next++;
			continue;
		}
		if (pg && pg_object_busy(pg, oid)) {
			j->held = true;
			job_release_slot(j);
			return;
		}
		j->oid = strdup(oid);
		if (!j->oid) {
			job_finish(j, -ENOMEM);
			return;
		}
		j->next++;
		j->first = true;
		j->data_off = 0;
		free(j->omap_after.key);
		j->omap_after.key = NULL;
		j->omap_after.len = 0;
	}
	if (!j->oid) {
		if (!j->all || j->list_done)
			job_finish(j, 0);
		else if (pg && pg->ec && (pg->incomplete || pg->missing.n))
			job_list_remote(j, pg);
		else
			job_submit(j, job_list_fn, job_list_done);
		return;
	}
	if (pg && pg->ec) {
		job_ec_step(j, pg);
		return;
	}
	job_submit(j, job_step_fn, job_step_done);
}

/* ---------- the share of recovery while clients are active ---------- */

#define SCH_WINDOW_MS 1000u
#define SCH_FLOOR     (PUSH_CHUNK + 4096u) /* recovery's minimum per window */

static void
sch_window(struct osd *o, uint64_t now)
{
	if (now - o->sch_win_ms >= SCH_WINDOW_MS) {
		o->sch_win_ms = now;
		o->sch_client = o->sch_rec = 0;
	}
}

void
rec_client_cost(struct osd *o, uint64_t cost)
{
	uint64_t now = cm_now_ms();

	sch_window(o, now);
	o->sch_client += cost;
	o->sch_client_ms = now;
}

/*
 * May a push start? Always while no client op came for a window; else while
 * recovery's cost in this window stays within its share of the whole
 * (share / (100 - share) of the clients' cost), and at least SCH_FLOOR per
 * window so that recovery never stops. Held pushes start at the next tick.
 */
static bool
sch_may_push(struct osd *o)
{
	uint64_t now = cm_now_ms(), share = o->cfg->recovery_share, allow;

	sch_window(o, now);
	if (share >= 100 || now - o->sch_client_ms > SCH_WINDOW_MS)
		return true;
	allow = o->sch_client * share / (100 - share);
	if (o->sch_rec < CM_MAX(allow, (uint64_t)SCH_FLOOR))
		return true;
	o->sch_throttled++;
	return false;
}

/* Start pushes while slots are free, oldest waiting job first. */
static void
job_kick(struct osd *o)
{
	struct rjob *j;

	while (o->rec_active < o->cfg->recovery_max_active) {
		/* Pushes clients wait for first, and regardless of the share. */
		TAILQ_FOREACH(j, &o->rjobs_ready, rlink)
			if (j->prio.n)
				break;
		if (!j && (!TAILQ_FIRST(&o->rjobs_ready) || !sch_may_push(o)))
			break;
		if (!j)
			j = TAILQ_FIRST(&o->rjobs_ready);
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

	if (!job_resume(j, rc))
		return;
	job_ready(j);
	job_kick(j->osd);
}

/* Put oid in j's list at position at (shifting the rest). \return 0 or -ENOMEM. */
static int
job_insert(struct rjob *j, size_t at, const char *oid)
{
	char *s = strdup(oid);

	if (!s)
		return -ENOMEM;
	if (j->noids + 1 > j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 16;
		char **grown = realloc(j->oids, cap * sizeof(*grown));

		if (!grown) {
			free(s);
			return -ENOMEM;
		}
		j->oids = grown;
		j->cap = cap;
	}
	memmove(j->oids + at + 1, j->oids + at, (j->noids - at) * sizeof(*j->oids));
	j->oids[at] = s;
	j->noids++;
	return 0;
}

/*
 * A request for a job of the same plan: add its objects (prio: next in
 * line). Objects pushed already are never pushed again (a client may have
 * written them since); a client waiting for one is told at once.
 */
static int
job_merge(struct rjob *j, const Cairn__Osd__RecoverReq *q)
{
	for (size_t i = 0; i < q->n_oids; i++) {
		const char *oid = q->oids[i];
		size_t k;
		int rc;

		if (oset_get(&j->done, oid)) {
			if (q->prio)
				job_progress(j, oid);
			continue;
		}
		if (q->prio && (rc = oset_put(&j->prio, oid, 0)))
			return rc;
		if (j->oid && strcmp(j->oid, oid) == 0)
			continue;
		for (k = j->next; k < j->noids; k++)
			if (strcmp(j->oids[k], oid) == 0)
				break;
		if (k < j->noids) {
			char *s = j->oids[k];

			if (q->prio) { /* move it to the front of what is left */
				memmove(j->oids + j->next + 1, j->oids + j->next,
					(k - j->next) * sizeof(*j->oids));
				j->oids[j->next] = s;
			}
			continue;
		}
		if ((rc = job_insert(j, q->prio ? j->next : j->noids, oid)))
			return rc;
	}
	if (!q->prio)
		j->bg = true;
	if ((j->idle || (q->prio && j->held)) && j->next < j->noids) {
		j->idle = false;
		j->held = false;
		job_ready(j);
		job_kick(j->osd);
	} else if (j->idle && !q->prio) {
		/* Clients' requests pushed everything already: the job is done. */
		Cairn__Osd__PgAck a;

		job_ack_init(j, &a);
		a.objects = j->objects;
		a.bytes = j->bytes;
		report_done(j->osd, j->primary, &a);
	}
	return 0;
}

static void
job_start(struct osd *o, const Cairn__Osd__RecoverReq *q, int32_t primary)
{
	struct rjob *j, *x, *tmp;
	struct os_txn *t = NULL;
	struct pg *pg = pg_find(o, q->pool, q->seed);
	int rc;

	/* The same plan: merge. A newer plan for the same target replaces older ones. */
	TAILQ_FOREACH_SAFE(x, &o->rjobs, link, tmp) {
		if (x->pool != q->pool || x->seed != q->seed || x->target != q->target)
			continue;
		if (x->epoch == q->epoch && x->gen == q->gen && !x->all && !q->all) {
			if ((rc = job_merge(x, q)))
				job_finish(x, rc);
			return;
		}
		job_drop(x);
	}
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
	j->bg = !q->prio;
	snprintf(j->cid, sizeof(j->cid), "pg.%" PRId64 ".%x", q->pool, q->seed);
	TAILQ_INSERT_TAIL(&o->rjobs, j, link);
	/* A source needs a complete copy, but an EC primary rebuilds from the
	 * shards (and lists a complete one when its own is not). */
	if (!pg || !pg->in_store || q->epoch < pg->interval_epoch ||
	    (!pg->ec && (pg->incomplete || pg->missing.n))) {
		job_finish(j, -ESTALE);
		return;
	}
	for (size_t i = 0; !j->all && i < q->n_oids; i++)
		if ((rc = job_insert(j, j->noids, q->oids[i])) ||
		    (q->prio && (rc = oset_put(&j->prio, q->oids[i], 0)))) {
			job_finish(j, rc);
			return;
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
	osd_queue(o, t, job_barrier_done, j);
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

	if (q && osd_check_recover(q) == 0 && q->from != o->id)
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
	intptr_t peer = osd_conn_peer(c);

	cm_msg_destroy(m);
	if (!r)
		return;
	push_replied(o, (int32_t)peer, r);
	cairn__osd__push_reply__free_unpacked(r, NULL);
}

/* The target (peer; maybe us) applied a push, or failed to. */
static void
push_replied(struct osd *o, int32_t peer, const Cairn__Osd__PushReply *r)
{
	struct rjob *j;
	char *done = NULL;
	struct pg *pg;

	TAILQ_FOREACH(j, &o->rjobs, link)
		if (j->waiting && j->target == peer && j->pool == r->pool && j->seed == r->seed &&
		    j->epoch == r->epoch && r->oid && strcmp(j->oid, r->oid) == 0)
			break;
	if (!j)
		goto out;
	j->waiting = false;
	job_release_slot(j);
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
	job_clear_object(j);
	if (j->deleted || (!j->omap_more && j->data_off >= j->size)) {
		j->objects++;
		o->rec_objects++;
		done = j->oid;
		j->oid = NULL;
		oset_del(&j->prio, done);
		if (!j->all && oset_put(&j->done, done, 0)) {
			job_finish(j, -ENOMEM);
			goto out;
		}
	}
	if (done && !j->all) {
		/* The object is on the target: tell the primary (clients may wait
		 * for it). Hold j: the primary's side may drop it. */
		j->busy = true;
		job_progress(j, done);
		j->busy = false;
		if (j->dead) {
			job_free(j);
			j = NULL;
		}
	}
	if (j) { /* the next step may end j at once (an EC rebuild that cannot read) */
		job_ready(j);
		job_kick(o);
	}
	/* Ops on the object may run here now. */
	if (done && (pg = pg_find(o, r->pool, r->seed)))
		pg_object_ready(pg, done);
out:
	free(done);
}

void
rec_peer_reset(struct osd *o, int32_t peer)
{
	struct rjob *j, *tmp;

	TAILQ_FOREACH_SAFE(j, &o->rjobs, link, tmp)
		if (j->list_tid && j->list_peer == peer) { /* its listing will not come */
			j->list_tid = 0;
			j->rc = -ECONNRESET;
			job_list_done(j);
		} else if (j->target == peer && !j->idle)
			job_finish(j, -ECONNRESET);
		else if (j->primary == peer || j->target == peer)
			job_drop(j);
}

/*
 * A plan that heard nothing from its targets and sources for REC_STALL_MS
 * (an answer lost with a session, or a state no ack will move) starts over:
 * peering again costs a little, waiting forever costs the PG. Slots the
 * operator holds (norecover, nobackfill) do not count; a plan with a
 * backfill pushing is not watched (its source reports only at the end).
 */
static void
rec_stalled(struct pg *pg, uint64_t now_ms)
{
	bool moving = false;

	for (int i = 0; i < pg->nacting; i++) {
		const struct pg_peer *p = &pg->peer[i];

		/* (a backfill's pushes report only at its end: not watched) */
		if (p->backfill && p->step == REC_PUSH)
			return;
		moving |= p->step != REC_NONE && p->step != REC_DONE && p->step != REC_WAIT;
	}
	if (!moving) {
		pg->rec_seen_ms = now_ms;
		return;
	}
	if (now_ms - pg->rec_seen_ms < REC_STALL_MS)
		return;
	CM_WARN("%s: recovery heard from no target or source for %u s: peering again", pg->cid,
		REC_STALL_MS / 1000);
	rec_fail(pg, pg->osd->id, -ETIMEDOUT);
}

void
rec_tick(struct osd *o, uint64_t now_ms)
{
	struct rjob *j, *tmp;

	TAILQ_FOREACH_SAFE(j, &o->rjobs, link, tmp) {
		struct pg *pg = pg_find(o, j->pool, j->seed);

		if (!pg || pg->interval_epoch > j->epoch)
			job_drop(j); /* the PG moved on: its primary asks again */
		else if (j->idle && now_ms - j->idle_ms > IDLE_KEEP_MS)
			job_drop(j);
		else if (j->waiting && now_ms - j->sent_ms > PUSH_TIMEOUT)
			job_finish(j, -ETIMEDOUT);
	}
	job_kick(o); /* pushes the client share held */
	/* Pushes the operator held (norecover, nobackfill) may go now. */
	for (size_t b = 0; b < o->npg_b; b++)
		for (struct pg *pg = o->pgs[b]; pg; pg = pg->hnext)
			if (pg->primary == o->id && pg->rec_pending && pg->auth >= 0) {
				rec_release(pg);
				rec_stalled(pg, now_ms);
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
	struct pg *pg;  /* wipe */
	uint32_t shard; /* wipe: the EC shard label from now on */
	char **oids;    /* wipe: the objects; PG_LOG: those lost (report: tell the primary) */
	size_t noids;
	bool report;
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
	if (x->c)
		osd_send_pb(x->c, OSD_MSG_PUSH_REPLY, 0, &r.base, NULL);
	else /* we pushed to ourselves (an EC primary rebuilding its own shard) */
		push_replied(x->osd, x->osd->id, &r);
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
	if (!rc && p->last && oset_get(&pg->missing, oid)) {
		uint8_t k[OSD_NAME_MAX + 1];

		rc = os_txn_omap_rm(t, cid, PGMETA, k, missing_key(oid, k));
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

	if (!p || osd_check_push(p))
		CM_LOG_RL(CM_LOG_WARN, "bad push from %s", cm_conn_peer(c));
	else
		push_apply(o, c, p, &m->data);
	if (p)
		cairn__osd__push__free_unpacked(p, NULL);
	cm_msg_destroy(m);
}

/* Apply a push from c (NULL: from ourselves); answer when it is durable. */
static void
push_apply(struct osd *o, struct cm_conn *c, const Cairn__Osd__Push *p, const struct cm_sgl *data)
{
	struct tgt_ctx *x = NULL;
	struct os_txn *t = NULL;
	struct pg *pg;
	int rc;

	x = calloc(1, sizeof(*x));
	if (!x || !(x->oid = strdup(p->oid))) {
		free(x);
		return; /* the source times out */
	}
	x->osd = o;
	x->c = c ? cm_conn_get(c) : NULL;
	x->pool = p->pool;
	x->seed = p->seed;
	x->epoch = p->epoch;
	pg = pg_find(o, p->pool, p->seed);
	if (!pg || (!pg->in_store && !pg->creating)) {
		on_push_commit(x, -ENOENT);
		return;
	}
	/* Only pushes of the plan whose PG_LOG we took: a late push of an
	 * abandoned plan could undo a client's newer write. */
	if (p->epoch != pg->push_epoch || p->gen != pg->push_gen || p->epoch < pg->interval_epoch) {
		on_push_commit(x, -ESTALE);
		return;
	}
	rc = os_txn_create(&t);
	if (!rc)
		rc = push_txn(pg, p, data, t);
	if (rc) {
		os_txn_destroy(t);
		on_push_commit(x, rc);
		return;
	}
	if (p->last)
		oset_del(&pg->missing, p->oid);
	osd_queue(o, t, on_push_commit, x);
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
	if (x->report && !rc) {
		a.oids = x->oids;
		a.n_oids = x->noids;
	}
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

size_t
missing_key(const char *oid, uint8_t *k)
{
	size_t n = strlen(oid);

	k[0] = 'm';
	memcpy(k + 1, oid, n);
	return n + 1;
}

/* The log keys, the missing set (keys 'm' + name), the info: in t. */
static int
log_txn(struct pg *pg, struct os_txn *t, const Cairn__Osd__PgInfo *info,
	Cairn__Osd__LogEntry *const *les, size_t n, char *const *missing, size_t nmissing)
{
	uint8_t first[1] = { 'l' }, end[1] = { 'n' }, buf[256];
	int rc = os_txn_omap_rm_range(t, pg->cid, PGMETA, first, 1, end, 1);
	size_t len;

	for (size_t i = 0; i < nmissing && !rc; i++) {
		uint8_t k[OSD_NAME_MAX + 1];

		rc = os_txn_omap_set(t, pg->cid, PGMETA, k, missing_key(missing[i], k), "", 0);
	}

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
			if (!all && strcmp(x->oids[i], PGMETA) == 0)
				continue; /* (stash objects go too) */
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
		osd_queue(x->osd, t, cb, x);
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
	oset_clear(&pg->missing);
	pg->last_update = pg->log_tail = (struct osd_ver){ 0, 0 };
	pg->incomplete = true;
	pg->info_shard = x->shard ? x->shard : pg_shard_label(pg);
	pg_info_fill(pg, &pi, &lu, &tail);
	rc = os_txn_create(&t);
	if (!rc)
		rc = log_txn(pg, t, &pi, NULL, 0, NULL, 0);
	if (!rc)
		rc = pg_stash_forget(pg, t); /* their objects are removed with the rest */
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

struct undo_keep {
	const Cairn__Osd__PgNotify *n;
	struct osd_ver to;
};

/* A stash the new log still needs: of one of its entries, not undone. */
static bool
undo_keep(void *arg, const struct osd_ver *v)
{
	const struct undo_keep *k = arg;

	const struct lview lv = { .n = k->n };
	const struct osd_ver none = { UINT64_MAX, UINT64_MAX }; /* no tail matches */

	return osd_ver_cmp(v, &k->to) <= 0 && lv_has(&lv, &none, v);
}

/*
 * Before our log is replaced by n's: with n->rollback, undo our entries
 * newer than n->rollback_to, newest first (EC: each shard puts back what it
 * kept), so that our copy holds every object as of that version. An object
 * one of whose entries cannot be undone (no stash of it here) is lost
 * instead: added to miss and x->oids (the ack tells the primary). Then drop
 * the stashes the new log does not need. Into t.
 */
static int
log_undo(struct pg *pg, struct os_txn *t, const Cairn__Osd__PgNotify *n, struct oset *miss,
	 struct tgt_ctx *x)
{
	struct undo_keep k = { .n = n, .to = { UINT64_MAX, UINT64_MAX } };
	struct oset lost = { 0 };
	unsigned undone = 0;
	int rc = 0;

	if (n->rollback)
		ver_from_pb(n->rollback_to, &k.to);
	for (size_t i = pg->log_n; i-- > 0 && !rc;) {
		const struct pg_lent *e = pg_log_at(pg, i);

		if (osd_ver_cmp(&e->ver, &k.to) <= 0)
			break;
		if (oset_get(&lost, e->oid))
			continue;
		rc = pg_undo_entry(pg, t, e);
		if (rc == -ENOENT) {
			CM_WARN("%s: cannot undo %" PRIu64 ".%" PRIu64 " of %s (no stash of it "
				"here): the object is rebuilt instead",
				pg->cid, e->ver.epoch, e->ver.seq, e->oid);
			rc = oset_put(&lost, e->oid, 0);
			if (!rc && !oset_get(miss, e->oid))
				rc = oset_put(miss, e->oid, 0);
			if (!rc) {
				char **no = realloc(x->oids, (x->noids + 1) * sizeof(*no));

				if (no)
					x->oids = no;
				if (!no || !(no[x->noids] = strdup(e->oid)))
					rc = -ENOMEM;
				else
					x->noids++;
			}
			continue;
		}
		undone++;
	}
	oset_clear(&lost);
	if (!rc)
		rc = pg_stash_prune(pg, t, undo_keep, &k);
	if (!rc && (undone || x->noids))
		CM_NOTICE("%s: undid %u changes newer than %" PRIu64 ".%" PRIu64
			  " (never acknowledged), %zu objects to rebuild",
			  pg->cid, undone, k.to.epoch, k.to.seq, x->noids);
	return rc;
}

static void
log_apply(struct osd *o, struct cm_conn *c, const Cairn__Osd__PgNotify *n)
{
	struct tgt_ctx *x = calloc(1, sizeof(*x));
	struct pg *pg = pg_find(o, n->pool, n->seed);
	struct os_txn *t = NULL;
	struct oset miss = { 0 };
	Cairn__Osd__PgInfo pi;
	int rc = 0;

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
	pg->push_epoch = n->epoch;
	pg->push_gen = n->gen;
	if (n->wipe) {
		x->pg = pg;
		x->shard = n->shard;
		x->w = (struct cm_work){ .fn = wipe_list_fn, .done = wipe_list_done, .arg = x };
		if (osd_work(o, &x->w))
			log_ack(x, -ESHUTDOWN);
		return;
	}
	if (!n->info) {
		log_ack(x, -EINVAL);
		return;
	}
	pi = *n->info;
	pi.incomplete = false;
	if (pg->last_epoch_started > pi.last_epoch_started)
		pi.last_epoch_started = pg->last_epoch_started; /* it never goes back */
	pi.shard = pg->info_shard = n->shard ? n->shard : pg_shard_label(pg);
	for (size_t i = 0; i < n->n_missing && !rc; i++)
		rc = oset_put(&miss, n->missing[i], 0);
	if (!rc)
		rc = os_txn_create(&t);
	if (!rc)
		rc = log_undo(pg, t, n, &miss, x);
	if (!rc)
		rc = log_txn(pg, t, &pi, n->log, n->n_log, n->missing, n->n_missing);
	for (size_t i = 0; i < x->noids && !rc; i++) {
		uint8_t k[OSD_NAME_MAX + 1];

		rc = os_txn_omap_set(t, pg->cid, PGMETA, k, missing_key(x->oids[i], k), "", 0);
	}
	x->report = x->noids > 0;
	if (rc) {
		oset_clear(&miss);
		os_txn_destroy(t);
		log_ack(x, rc);
		return;
	}
	oset_clear(&pg->missing);
	pg->missing = miss;
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
	osd_queue(o, t, on_log_commit, x);
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
			osd_send_pb(osd_peer_conn(o, pg->strays[i], pg->seed), OSD_MSG_PG_REMOVE, 0,
				    &a.base, NULL);
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
	oset_clear(&pg->missing);
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
	if (osd_work(o, &x->w))
		tgt_free(x);
out:
	cairn__osd__pg_ack__free_unpacked(a, NULL);
}
