/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Peering decisions of erasure-coded PGs: the authoritative copy (the
 * k-th newest complete shard) and rollback of changes on fewer than k shards.
 */
#include "osd_int.h"
#include "backend/ec.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(ec);

/* ---------- peering ---------- */

void
osd__ec_plan_auth(struct osd_pg *pg)
{
	struct osd_ver lus[OSD_MAX_ACTING], t;
	unsigned n = 0;

	pg->auth = -1;
	for (int i = 0; i < pg->nacting; i++) {
		struct osd_pg_peer *p = &pg->peer[i];
		uint32_t label = pg->slot_osd[i] == pg->osd->id ? pg->info_shard
				 : p->n && p->n->info           ? p->n->info->shard
								: 0;

		if (p->have && p->exists && label != (uint32_t)pg->shard[i] + 1) {
			CM_INFO("%s: osd.%d holds shard %d, not %u: rebuilt whole", pg->cid,
				pg->slot_osd[i], (int)label - 1, pg->shard[i]);
			p->exists = false;
			p->incomplete = false;
			p->partial = false;
		}
		if (!p->have || !p->exists || p->incomplete || p->partial)
			continue;
		/* insertion sort, newest first */
		unsigned k = n++;

		for (; k > 0 && osd_ver_cmp(&lus[k - 1], &p->lu) < 0; k--)
			lus[k] = lus[k - 1];
		lus[k] = p->lu;
	}
	if (n < pg->ec->k)
		return;
	t = lus[pg->ec->k - 1];
	for (int i = 0; i < pg->nacting; i++) {
		struct osd_pg_peer *p = &pg->peer[i];

		if (!p->have || !p->exists || p->incomplete || p->partial ||
		    osd_ver_cmp(&p->lu, &t) != 0)
			continue;
		if (pg->auth < 0 || pg->slot_osd[i] == pg->osd->id)
			pg->auth = i;
	}
}

/* The shard label of slot i's copy (shard + 1; 0: none or replicated). */
static uint32_t
slot_label(struct osd_pg *pg, int i)
{
	const struct osd_pg_peer *p = &pg->peer[i];

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
ec_unacked(struct osd_pg *pg, int t, const struct osd_ver *v, const uint32_t *sent, size_t nsent)
{
	for (int s = 0; s < pg->nslots; s++) {
		const struct osd_pg_peer *q = &pg->peer[s];
		uint32_t label = slot_label(pg, s);
		struct osd_lview sv;

		if (s == t || !q->have || !q->exists || q->incomplete || !label || label > nsent ||
		    sent[label - 1] != (uint32_t)pg->slot_osd[s] + 1)
			continue;
		osd__lv_of(pg, s, &sv);
		if (osd_ver_cmp(&q->lu, v) < 0 ||
		    (osd_ver_cmp(&q->tail, v) < 0 && !osd__lv_has(&sv, &q->tail, v)))
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
int
osd__ec_plan_rollback(struct osd_pg *pg, int t, const struct osd_lview *tv,
		      const struct osd_ver *common)
{
	struct osd_pg_peer *p = &pg->peer[t];
	bool undoable = true;

	p->rollback = false;
	for (size_t i = osd__lv_n(tv); i-- > 0;) {
		struct osd_ver v;
		const char *oid;
		uint32_t undo;
		const uint32_t *sent;
		size_t nsent;

		osd__lv_get(tv, i, &v, &oid);
		if (osd_ver_cmp(&v, common) <= 0)
			break;
		osd__lv_undo(tv, i, &undo, &sent, &nsent);
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
