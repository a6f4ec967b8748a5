/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A replica applies the primary's changes (REP_OP).
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

/* A replica's pending apply. */
struct rapply {
	struct osd *osd;
	struct cm_conn *c;
	int64_t pool;
	uint32_t seed;
	struct osd_ver ver;
};

/* ---------- replicas ---------- */

static void
on_replica_commit(void *arg, int rc)
{
	struct rapply *ra = arg;
	Cairn__Osd__RepOpReply r = CAIRN__OSD__REP_OP_REPLY__INIT;
	Cairn__Osd__Version v;

	r.pool = ra->pool;
	r.seed = ra->seed;
	osd_ver_to_pb(&ra->ver, &v);
	r.ver = &v;
	r.rc = rc;
	if (rc == -ESTALE || rc == -EAGAIN)
		/* Our copy moved on (a split or a new interval): the primary
		 * holds the PG's ops and peers again (repop_failed). */
		CM_WARN("pg.%" PRId64 ".%x: applying %" PRIu64 ".%" PRIu64
			" refused: %s; the primary peers again",
			ra->pool, ra->seed, ra->ver.epoch, ra->ver.seq, cm_strerror(rc));
	else if (rc)
		CM_ERR("pg.%" PRId64 ".%x: applying %" PRIu64 ".%" PRIu64 " failed: %s", ra->pool,
		       ra->seed, ra->ver.epoch, ra->ver.seq, cm_strerror(rc));
	osd__send_pb(ra->c, OSD_MSG_REP_OP_REPLY, 0, &r.base, NULL);
	cm_conn_put(ra->c);
	free(ra);
}

/*
 * A replica hears that the PG is active in the interval that began at map
 * `epoch` (the primary's activation message, or its first change): the
 * intervals before need no hearing from any more. Kept in the prior record.
 */
static void
replica_started(struct osd_pg *pg, uint64_t epoch)
{
	struct osd_pga *x;

	if (epoch <= pg->last_epoch_started)
		return;
	x = osd__pg_pga(pg);
	pg->last_epoch_started = epoch;
	if (x) {
		osd__pga_trim(x, epoch);
		x->known = true;
	}
	osd__prior_save(pg, true);
}

void
osd__pg_handle_repop(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__RepOp *ro =
		(Cairn__Osd__RepOp *)cm_msg_unpack_front(m, &cairn__osd__rep_op__descriptor);
	struct rapply *ra = NULL;
	struct os_txn *t = NULL;
	struct osd_ver trim = { 0, 0 }, roll, v;
	struct osd_pg *pg;
	int rc;

	if (!ro || osd_check_repop(ro, m->data.len)) {
		CM_LOG_RL(CM_LOG_WARN, "undecodable replication op from %s", cm_conn_peer(c));
		goto out;
	}
	pg = osd__pg_find(o, ro->pool, ro->seed);
	if (!ro->entry) {
		/* The primary activated (or, EC, rolls forward): no reply */
		osd_ver_from_pb(ro->roll_to, &roll);
		if (pg && pg->in_store && ro->epoch >= pg->interval_epoch) {
			replica_started(pg, ro->epoch);
			osd__roll_local(pg, &roll);
		}
		goto out;
	}
	osd_ver_from_pb(ro->entry->ver, &v);
	ra = calloc(1, sizeof(*ra));
	if (!ra)
		goto out;
	ra->osd = o;
	ra->c = cm_conn_get(c);
	ra->pool = ro->pool;
	ra->seed = ro->seed;
	ra->ver = v;
	if (!pg || !pg->in_store || ro->epoch < pg->interval_epoch) {
		/* Not (or no longer) a replica of this interval: the primary re-peers. */
		on_replica_commit(ra, -ESTALE);
		goto out;
	}
	if (osd_ver_cmp(&v, &pg->last_update) <= 0) {
		/* Changes come in version order: one not above our last is a
		 * resend from before a re-peering, or a primary's bug; applying
		 * it would log two changes under one version. */
		CM_LOG_RL(CM_LOG_WARN,
			  "%s: change %" PRIu64 ".%" PRIu64
			  " from %s is not above our last %" PRIu64 ".%" PRIu64 ": refused",
			  pg->cid, v.epoch, v.seq, cm_conn_peer(c), pg->last_update.epoch,
			  pg->last_update.seq);
		on_replica_commit(ra, -ESTALE);
		goto out;
	}
	replica_started(pg, ro->epoch);
	osd_ver_from_pb(ro->trim_to, &trim);
	osd_ver_from_pb(ro->roll_to, &roll);
	rc = os_txn_create(&t);
	if (!rc)
		rc = osd__txn_add_ops(t, pg->cid, ro->ops, ro->n_ops, &m->data, pg->incomplete, &v);
	if (!rc)
		rc = osd__pg_stash_drop(pg, t, osd_ver_cmp(&roll, &trim) > 0 ? &roll : &trim);
	if (!rc && osd__txops_stash(ro->ops, ro->n_ops))
		rc = osd__stash_add(pg, t, &v);
	if (!rc)
		rc = osd__txn_add_log(pg, t, ro->entry, &trim);
	if (!rc)
		rc = osd__pg_log_append(pg, ro->entry);
	if (rc) {
		os_txn_destroy(t);
		on_replica_commit(ra, rc);
		goto out;
	}
	pg->last_update = v;
	if (trim.seq)
		osd__log_trim_mem(pg, &trim);
	o->repops++;
	osd__queue(o, t, on_replica_commit, ra);
out:
	if (ro)
		cairn__osd__rep_op__free_unpacked(ro, NULL);
	cm_msg_destroy(m);
}
