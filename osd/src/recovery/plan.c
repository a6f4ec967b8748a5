/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Recovery on the primary: the plan after peering (authoritative copy,
 * each target's objects or backfill), its messages and acks.
 * docs/design/osd.md, "Recovery".
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(recovery);

static void slot_done(struct osd_pg *pg, int t);

void
osd__rec_reset(struct osd_pg *pg)
{
	for (int i = 0; i < OSD_PG_MAX_SLOTS; i++) {
		struct osd_pg_peer *p = &pg->peer[i];

		if (p->n)
			cairn__osd__pg_notify__free_unpacked(p->n, NULL);
		osd__peer_oids_free(p);
		memset(p, 0, sizeof(*p));
	}
	osd_oset_clear(&pg->rmiss);
	pg->rec_pending = 0;
	pg->rec_init = 0;
	pg->rec_early = false;
	pg->rec_backfill = false;
	pg->auth = -1;
	pg->rec_gen++;
}

static void
rec_fail(struct osd_pg *pg, int32_t who, int rc)
{
	CM_WARN("%s: recovery of osd.%d failed: %s; peering again in %u ms", pg->cid, who,
		cm_strerror(rc), OSD_RETRY_MS);
	osd__rec_reset(pg);
	if (pg->state == OSD_PG_ACTIVE)
		pg->state = OSD_PG_PEERING; /* ops wait: the missing sets are unknown until then */
	pg->retry_ms = cm_now_ms() + OSD_RETRY_MS;
}

/* Send a recovery request for peer[t] to the source (maybe us). \return 0 or -errno. */
int
osd__send_req(struct osd_pg *pg, int t, char **oids, size_t n, bool all, bool prio)
{
	Cairn__Osd__RecoverReq q = CAIRN__OSD__RECOVER_REQ__INIT;
	struct osd *o = pg->osd;
	int32_t src = pg->be->rec_source(pg);

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
		osd__job_start(o, &q, o->id);
		return 0;
	}
	return osd__send_pb(osd__peer_conn(o, src, pg->seed), OSD_MSG_RECOVER, 0, &q.base, NULL)
		       ? -ENOTCONN
		       : 0;
}

/*
 * Ask the source to push peer[t]'s objects (or all of them) to it: those it
 * still lacks. One pushed already for a client may have been written since:
 * pushing it again would undo that.
 */
static void
send_recover(struct osd_pg *pg, int t)
{
	struct osd_pg_peer *p = &pg->peer[t];
	char **left = NULL;
	size_t n = 0;
	int rc;

	p->step = OSD_REC_PUSH;
	if (!p->backfill) {
		left = calloc(p->noids + 1, sizeof(*left));
		if (!left) {
			rec_fail(pg, pg->acting[t], -ENOMEM);
			return;
		}
		for (size_t i = 0; i < p->noids; i++) {
			uint32_t *v = osd_oset_get(&pg->rmiss, p->oids[i]);

			if (v && (*v & 1u << t))
				left[n++] = p->oids[i];
		}
		if (!n) {
			free(left);
			slot_done(pg, t);
			return;
		}
	}
	rc = osd__send_req(pg, t, left, n, p->backfill, false);
	free(left);
	if (rc)
		rec_fail(pg, pg->slot_osd[pg->auth], rc);
}

static bool
held_by_flag(struct osd_pg *pg, int t)
{
	const Cairn__Map__OsdMap *m = pg->osd->map;

	if (!m)
		return false;
	/* Data movement only (every copy is whole somewhere): norebalance
	 * holds it, whether the new OSD is filled by backfill or from the log. */
	if ((m->flags & MON_FLAG_NOREBALANCE) && !pg->be->degraded(pg))
		return true;
	return m->flags & (pg->peer[t].backfill ? MON_FLAG_NOBACKFILL : MON_FLAG_NORECOVER);
}

/* Push to peer[t] now, or once the operator lets us. */
static void
start_push(struct osd_pg *pg, int t)
{
	if (held_by_flag(pg, t))
		pg->peer[t].step = OSD_REC_WAIT;
	else
		send_recover(pg, t);
}

/*
 * Tell peer[t] to adopt the authoritative log (with, at the start of a
 * log-based recovery, the objects it is to mark missing), or, wipe, to
 * empty its copy for a backfill.
 */
static void
send_pg_log(struct osd_pg *pg, int t, bool wipe, char **missing, size_t nmissing)
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
	n.shard = pg->be->slot_label(pg, t);
	if (!wipe) {
		if (pg->slot_osd[pg->auth] == o->id) {
			osd__pg_info_fill(pg, &pi, &lu, &tail);
			if (osd__pg_log_pb(pg, &les, &nles)) {
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
			osd_ver_to_pb(&pg->peer[t].rollback_to, &rb);
			n.rollback = true;
			n.rollback_to = &rb;
		}
	}
	if (to == o->id)
		osd__log_apply(o, NULL, &n);
	else if (osd__send_pb(osd__peer_conn(o, to, pg->seed), OSD_MSG_PG_LOG, 0, &n.base, NULL))
		rec_fail(pg, to, -ENOTCONN);
	osd__pg_log_pb_free(les, nles);
}

void
osd__rec_plan(struct osd_pg *pg)
{
	struct osd *o = pg->osd;
	int a = -1, self = -1;
	bool backfill = false;
	uint64_t gen;

	switch (osd__peering_decide(pg, &a, &self)) {
	case OSD_PEERING_GO:
		break;
	case OSD_PEERING_AGAIN:
		pg->state = OSD_PG_INCOMPLETE;
		pg->retry_ms = cm_now_ms() + 1; /* at the next tick */
		return;
	default: /* WAIT_PRIOR, WAIT_PAST, NO_AUTH: said in the log */
		pg->state = OSD_PG_INCOMPLETE;
		pg->retry_ms = cm_now_ms() + OSD_RETRY_MS;
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
		int prc = osd__plan_slot(pg, i, a);

		if (prc == -EAGAIN) {
			osd__rec_reset(pg);
			pg->state = OSD_PG_INCOMPLETE;
			pg->retry_ms = cm_now_ms() + OSD_RETRY_MS;
			return;
		}
		if (prc) {
			rec_fail(pg, pg->acting[i], prc);
			return;
		}
		if (pg->peer[i].step != OSD_REC_NONE)
			pg->rec_pending++;
		backfill |= pg->peer[i].backfill;
	}
	if (!pg->rec_pending) {
		osd__pg_activate(pg);
		return;
	}
	/*
	 * Serve while recovering when the authoritative copy stays in the acting
	 * set and our own copy is usable: objects some acting OSD lacks wait for
	 * their push (asked for first); a backfill needs us as its source, so
	 * that a push and a client op on one object never overlap.
	 */
	pg->rec_early = a < pg->nacting && !pg->peer[self].backfill &&
			pg->be->serve_recovering(pg, a, self, backfill);
	pg->rec_backfill = backfill;
	pg->state = backfill ? OSD_PG_BACKFILLING : OSD_PG_RECOVERING;
	pg->rec_objects = pg->rec_bytes = 0;
	pg->rec_seen_ms = cm_now_ms();
	if (!pg->rec_early && o->map &&
	    ((o->map->flags & (backfill ? MON_FLAG_NOBACKFILL : MON_FLAG_NORECOVER)) ||
	     ((o->map->flags & MON_FLAG_NOREBALANCE) && !pg->be->degraded(pg)))) {
		/* The operator holds it: look again later (and on every map change). */
		osd__rec_reset(pg);
		pg->retry_ms = cm_now_ms() + OSD_RETRY_MS;
		return;
	}
	for (int i = 0; i < pg->nacting; i++) {
		struct osd_pg_peer *p = &pg->peer[i];

		for (size_t k = 0; p->step == OSD_REC_ADOPT && k < p->noids; k++) {
			uint32_t *v = osd_oset_get(&pg->rmiss, p->oids[k]);

			if (osd_oset_put(&pg->rmiss, p->oids[k], (v ? *v : 0) | 1u << i)) {
				rec_fail(pg, pg->acting[i], -ENOMEM);
				return;
			}
		}
		if (p->step == OSD_REC_ADOPT || p->step == OSD_REC_WIPE)
			pg->rec_init++;
	}
	CM_INFO("%s: %s %u of %d copies from osd.%d (at %" PRIu64 ".%" PRIu64 ", %zu objects)%s",
		pg->cid, osd__pg_state_name(pg->state), pg->rec_pending, pg->nacting,
		pg->slot_osd[a], pg->peer[a].lu.epoch, pg->peer[a].lu.seq, pg->rmiss.n,
		pg->rec_early ? ", serving meanwhile" : "");
	/* Start every target; a failure resets the plan (gen changes): stop then. */
	gen = pg->rec_gen;
	for (int i = 0; i < pg->nacting && gen == pg->rec_gen; i++) {
		struct osd_pg_peer *p = &pg->peer[i];

		if (p->step == OSD_REC_WIPE)
			send_pg_log(pg, i, true, NULL, 0);
		else if (p->step == OSD_REC_ADOPT)
			send_pg_log(pg, i, false, p->oids, p->noids);
	}
}

static struct osd_pg *
rec_pg(struct osd *o, int64_t pool, uint32_t seed, uint64_t epoch, uint64_t gen, int32_t target,
       int *slot)
{
	struct osd_pg *pg = osd__pg_find(o, pool, seed);

	if (!pg || pg->primary != o->id || pg->plan_epoch != epoch || pg->rec_gen != gen ||
	    pg->auth < 0 || !pg->rec_pending)
		return NULL;
	for (int i = 0; i < pg->nacting; i++)
		if (pg->acting[i] == target) {
			*slot = i;
			return pg;
		}
	/* An ack of this very plan that names no acting OSD would leave the
	 * plan waiting for the watchdog: say so. */
	CM_WARN("%s: recovery ack names osd.%d, not an acting OSD of the plan: dropped", pg->cid,
		target);
	return NULL;
}

/* Slot t has oid now: ops on it may run once no acting OSD lacks it. */
static void
object_recovered(struct osd_pg *pg, int t, const char *oid)
{
	uint32_t *v = osd_oset_get(&pg->rmiss, oid);

	if (!v || !(*v & 1u << t))
		return;
	*v &= ~(1u << t);
	if (*v & ~OSD_REC_PRIO)
		return;
	osd_oset_del(&pg->rmiss, oid);
	osd__pg_object_ready(pg, oid);
}

static void
slot_done(struct osd_pg *pg, int t)
{
	struct osd_pg_peer *p = &pg->peer[t];
	uint64_t gen = pg->rec_gen;

	p->step = OSD_REC_DONE;
	for (size_t i = 0; i < p->noids && gen == pg->rec_gen; i++)
		object_recovered(pg, t, p->oids[i]);
	if (gen != pg->rec_gen)
		return;
	osd__peer_oids_free(p);
	if (--pg->rec_pending)
		return;
	CM_INFO("%s: recovered (%" PRIu64 " objects, %" PRIu64 " bytes)", pg->cid, pg->rec_objects,
		pg->rec_bytes);
	if (pg->state == OSD_PG_ACTIVE) {
		osd__rec_reset(pg);
		osd__pg_recovered(pg);
	} else {
		osd__rec_reset(pg);
		osd__pg_activate(pg);
	}
}

/* The PG activated (early) or the last initial ack came: activate once all did. */
static void
init_acked(struct osd_pg *pg)
{
	if (--pg->rec_init == 0 && pg->rec_early && pg->state != OSD_PG_ACTIVE)
		osd__pg_activate(pg);
}

void
osd__on_recover_done(struct osd *o, const Cairn__Osd__PgAck *a)
{
	int t;
	struct osd_pg *pg = rec_pg(o, a->pool, a->seed, a->epoch, a->gen, a->target, &t);
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
	if (pg->peer[t].step != OSD_REC_PUSH)
		return;
	if (a->rc) {
		rec_fail(pg, a->target, a->rc);
		return;
	}
	pg->rec_objects += a->objects;
	pg->rec_bytes += a->bytes;
	if (pg->peer[t].backfill) {
		pg->peer[t].step = OSD_REC_LOG;
		send_pg_log(pg, t, false, NULL, 0);
	} else {
		slot_done(pg, t);
	}
}

void
osd__on_log_ack(struct osd *o, const Cairn__Osd__PgAck *a)
{
	int t;
	struct osd_pg *pg = rec_pg(o, a->pool, a->seed, a->epoch, a->gen, a->target, &t);
	struct osd_pg_peer *p;
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
	for (size_t i = 0; p->step == OSD_REC_ADOPT && i < a->n_oids; i++) {
		uint32_t *v = osd_oset_get(&pg->rmiss, a->oids[i]);

		if (v && (*v & 1u << t))
			continue;
		if (osd__oids_add(p, a->oids[i]) ||
		    osd_oset_put(&pg->rmiss, a->oids[i], (v ? *v : 0) | 1u << t)) {
			rec_fail(pg, a->target, -ENOMEM);
			return;
		}
	}
	switch (p->step) {
	case OSD_REC_WIPE:
		start_push(pg, t);
		break;
	case OSD_REC_ADOPT:
		if (p->noids)
			start_push(pg, t);
		else
			slot_done(pg, t);
		break;
	case OSD_REC_LOG:
		slot_done(pg, t);
		return;
	default:
		return;
	}
	if (gen == pg->rec_gen)
		init_acked(pg);
}

/* The operator let recovery or backfill go on: start held pushes. */
void
osd__rec_release(struct osd_pg *pg)
{
	uint64_t gen = pg->rec_gen;

	for (int t = 0; t < pg->nacting && gen == pg->rec_gen; t++)
		if (pg->peer[t].step == OSD_REC_WAIT && !held_by_flag(pg, t))
			send_recover(pg, t);
}

/*
 * An ack (RECOVER_DONE, PG_LOG_ACK) for the primary's plan: fn takes it.
 * target >= 0: the slot's OSD, whatever the ack says.
 */
static void
handle_ack(struct osd *o, struct cm_msg *m, int32_t target,
	   void (*fn)(struct osd *, const Cairn__Osd__PgAck *))
{
	Cairn__Osd__PgAck *a =
		(Cairn__Osd__PgAck *)cm_msg_unpack_front(m, &cairn__osd__pg_ack__descriptor);

	cm_msg_destroy(m);
	if (!a)
		return;
	if (osd_check_ack(a) == 0) {
		if (target >= 0)
			a->target = target;
		fn(o, a);
	}
	cairn__osd__pg_ack__free_unpacked(a, NULL);
}

void
osd__pg_handle_recover_done(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	(void)c; /* from the source: its target is the one RECOVER named */
	handle_ack(o, m, -1, osd__on_recover_done);
}

void
osd__pg_handle_pg_log_ack(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	/*
	 * The target answers on the session PG_LOG went out on, ours to it:
	 * the session names it. Its own word may not: an OSD that restarted
	 * takes PG_LOG as soon as our map shows it up, which can be before
	 * the mons' boot reply gives it its id (-1 until then); that ack
	 * matched no slot (rec_pg), was dropped unheard, and the plan waited
	 * for the recovery watchdog.
	 */
	handle_ack(o, m, osd__conn_peer(c), osd__on_log_ack);
}

/*
 * A plan that heard nothing from its targets and sources for OSD_REC_STALL_MS
 * (an answer lost with a session, or a state no ack will move) starts over:
 * peering again costs a little, waiting forever costs the PG. It never
 * should fire: it is an alarm (an error in the log, the OSD's
 * cairn_osd_recovery_watchdog_total, RECOVERY_WATCHDOG in health), and the
 * daemon-level tests fail when it fires. Slots the
 * operator holds (norecover, nobackfill) do not count; a plan with a
 * backfill pushing is not watched (its source reports only at the end).
 */
void
osd__rec_stalled(struct osd_pg *pg, uint64_t now_ms)
{
	bool moving = false;

	for (int i = 0; i < pg->nacting; i++) {
		const struct osd_pg_peer *p = &pg->peer[i];

		/* (a backfill's pushes report only at its end: not watched) */
		if (p->backfill && p->step == OSD_REC_PUSH)
			return;
		moving |= p->step != OSD_REC_NONE && p->step != OSD_REC_DONE &&
			  p->step != OSD_REC_WAIT;
	}
	if (!moving) {
		pg->rec_seen_ms = now_ms;
		return;
	}
	if (cm_ms_since(now_ms, pg->rec_seen_ms) < OSD_REC_STALL_MS)
		return;
	/* Loud: a stall is a bug this only works around (the tests fail on
	 * this line; status shows RECOVERY_WATCHDOG). */
	pg->osd->rec_watchdog++;
	CM_ERR("%s: recovery watchdog fired: the plan heard from no target or source for %u s "
	       "(a bug: please report it with this log); peering again",
	       pg->cid, OSD_REC_STALL_MS / 1000);
	rec_fail(pg, pg->osd->id, -ETIMEDOUT);
}

/* ---------- strays ---------- */

/*
 * The PG is active with all its copies: the prior OSDs that answered
 * peering with a copy may drop it (PG_REMOVE). Called by osd__pg_activate.
 */
void
osd__rec_remove_strays(struct osd_pg *pg)
{
	struct osd *o = pg->osd;
	Cairn__Osd__PgAck a = CAIRN__OSD__PG_ACK__INIT;

	if ((unsigned)pg->nacting >= pg->size) {
		a.pool = pg->pool;
		a.seed = pg->seed;
		a.epoch = o->epoch;
		for (int i = 0; i < pg->nstrays; i++) {
			a.target = pg->strays[i];
			osd__send_pb(osd__peer_conn(o, pg->strays[i], pg->seed), OSD_MSG_PG_REMOVE,
				     0, &a.base, NULL);
		}
	}
	pg->nstrays = 0;
}
