/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Peering's decisions, pure functions of what peering heard (no I/O): the
 * prior set, whether every past interval that may have taken writes was
 * heard from, and for each acting OSD what recovery must do (nothing, the
 * objects of the log since the histories part, or a backfill).
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

/*
 * A new interval of pg: the OSDs that held it before (the previous acting
 * set, plus the older prior set while the PG never became active since)
 * that are not in the new acting set. Peering asks them too.
 */
void
osd__set_prior(struct osd_pg *pg, const int32_t *before, int nbefore, const int32_t *acting, int k)
{
	int32_t np[OSD_MAX_ACTING];
	int n = 0;
	bool keep = pg->state == OSD_PG_PEERING || pg->state == OSD_PG_RECOVERING ||
		    pg->state == OSD_PG_BACKFILLING || pg->state == OSD_PG_DOWN ||
		    pg->state == OSD_PG_INCOMPLETE || pg->state == OSD_PG_CREATING ||
		    pg->prior_loaded;
	bool overlap = false;

	for (int i = 0; keep && i < pg->nprior; i++) {
		if (osd__has_osd(acting, k, pg->prior[i]))
			overlap = true;
		else if (n < OSD_MAX_ACTING)
			np[n++] = pg->prior[i];
	}
	for (int i = 0; i < nbefore; i++) {
		if (osd__has_osd(acting, k, before[i]))
			overlap = true;
		else if (n < OSD_MAX_ACTING && !osd__has_osd(np, n, before[i]))
			np[n++] = before[i];
	}
	memcpy(pg->prior, np, sizeof(*np) * (size_t)n);
	pg->nprior = n;
	pg->prior_overlap = overlap || nbefore == 0;
	pg->prior_loaded = false;
}

/*
 * Peering heard from every past interval that may have taken writes since
 * the PG last started (the newest last_epoch_started among the answers):
 * from each, one OSD with a usable copy answered, or all of its OSDs were
 * removed from the map (their data given up). Otherwise the acting set may
 * lack acknowledged writes: false, and the PG waits. Ceph's prior set rule;
 * without up_thru every interval with min_size OSDs counts as one that may
 * have taken writes.
 */
int
osd__pg_past_heard(struct osd_pg *pg)
{
	struct osd *o = pg->osd;
	struct osd_pga *x = osd__pg_pga(pg);
	uint64_t les = pg->last_epoch_started;

	if (!x)
		return 1;
	for (int i = 0; i < pg->nslots; i++)
		if (pg->peer[i].have && pg->peer[i].exists && pg->peer[i].les > les)
			les = pg->peer[i].les;
	osd__pga_trim(x, les);
	for (int v = 0; v < x->niv; v++) {
		const struct osd_piv *iv = &x->iv[v];
		bool heard = false, left = false, quiet = true;
		char who[128];
		size_t wl = 0;

		if (!iv->rw || iv->last == OSD_PIV_OPEN)
			continue;
		for (int j = 0; j < iv->n && !heard; j++) {
			bool answered = false;

			if (!mon_osd_find(o->map, iv->a[j]))
				continue; /* removed: its data was given up */
			left = true;
			for (int i = 0; i < pg->nslots && !heard; i++) {
				const struct osd_pg_peer *p = &pg->peer[i];

				if (pg->slot_osd[i] != iv->a[j] || !p->have)
					continue;
				answered = true;
				heard = p->exists && pg->be->copy_heard(pg, p);
				if (p->exists && p->les >= iv->first)
					quiet = false;
			}
			if (!answered)
				quiet = false;
		}
		/*
		 * Every OSD of it answered and none started the PG in it (their
		 * last_epoch_started is older; the primary's would not be): it
		 * took no writes, whatever the map suggested.
		 */
		if (heard || !left || quiet)
			continue;
		for (int j = 0; j < iv->n; j++) {
			const Cairn__Map__Osd *mo = mon_osd_find(o->map, iv->a[j]);

			if (mo && mo->up && pg->nslots < OSD_PG_MAX_SLOTS &&
			    !osd__has_osd(pg->slot_osd, pg->nslots, iv->a[j])) {
				/* one a peer told us of, not asked yet: ask again, with it */
				CM_INFO("%s: interval %" PRIu64 "-%" PRIu64
					" learnt from a peer: asking its OSDs too",
					pg->cid, iv->first, iv->last);
				return -1;
			}
		}
		who[0] = 0;
		for (int j = 0; j < iv->n && wl < sizeof(who) - 16; j++)
			wl += (size_t)snprintf(who + wl, sizeof(who) - wl, "%sosd.%d", j ? "," : "",
					       iv->a[j]);
		CM_WARN("%s: interval %" PRIu64 "-%" PRIu64 " [%s] may have taken writes and "
			"none of its OSDs with a usable copy answered: waiting",
			pg->cid, iv->first, iv->last, who);
		return 0;
	}
	return 1;
}

size_t
osd__lv_n(const struct osd_lview *lv)
{
	return lv->n ? lv->n->n_log : lv->pg->log_n;
}

void
osd__lv_get(const struct osd_lview *lv, size_t i, struct osd_ver *v, const char **oid)
{
	if (lv->n) {
		osd_ver_from_pb(lv->n->log[i]->ver, v);
		*oid = lv->n->log[i]->oid ? lv->n->log[i]->oid : "";
	} else {
		const struct osd_lent *e = osd__pg_log_at(lv->pg, i);

		*v = e->ver;
		*oid = e->oid;
	}
}

/* Entry i's undo kind (enum osd_undo) and the OSDs its shards were sent to. */
void
osd__lv_undo(const struct osd_lview *lv, size_t i, uint32_t *undo, const uint32_t **sent,
	     size_t *nsent)
{
	if (lv->n) {
		*undo = lv->n->log[i]->undo;
		*sent = lv->n->log[i]->sent_to;
		*nsent = lv->n->log[i]->n_sent_to;
	} else {
		const struct osd_lent *e = osd__pg_log_at(lv->pg, i);

		*undo = e->undo;
		*sent = e->sent_to;
		*nsent = e->nsent;
	}
}

void
osd__lv_of(struct osd_pg *pg, int slot, struct osd_lview *lv)
{
	lv->pg = pg;
	lv->n = pg->slot_osd[slot] == pg->osd->id ? NULL : pg->peer[slot].n;
}

/* Is v a point of the authoritative history (its tail or one of its entries)? */
bool
osd__lv_has(const struct osd_lview *a, const struct osd_ver *tail, const struct osd_ver *v)
{
	size_t lo = 0, hi = osd__lv_n(a);

	if (osd_ver_cmp(v, tail) == 0)
		return true;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct osd_ver x;
		const char *oid;
		int c;

		osd__lv_get(a, mid, &x, &oid);
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

void
osd__peer_oids_free(struct osd_pg_peer *p)
{
	for (size_t i = 0; i < p->noids; i++)
		free(p->oids[i]);
	free(p->oids);
	p->oids = NULL;
	p->noids = 0;
}

int
osd__oids_add(struct osd_pg_peer *p, const char *oid)
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
collect_after(struct osd_pg_peer *p, const struct osd_lview *lv, const struct osd_ver *c)
{
	size_t n = osd__lv_n(lv);

	for (size_t i = 0; i < n; i++) {
		struct osd_ver v;
		const char *oid;
		int rc;

		osd__lv_get(lv, i, &v, &oid);
		if (osd_ver_cmp(&v, c) <= 0 || !oid[0])
			continue;
		if ((rc = osd__oids_add(p, oid)))
			return rc;
	}
	return 0;
}

/* Add the objects slot t's copy reported missing to p->oids. */
static int
collect_missing(struct osd_pg *pg, int t, struct osd_pg_peer *p)
{
	char **names = NULL;
	size_t n = 0;
	int rc = 0;

	if (pg->slot_osd[t] != pg->osd->id) {
		for (size_t i = 0; p->n && i < p->n->n_missing && !rc; i++)
			rc = osd__oids_add(p, p->n->missing[i]);
		return rc;
	}
	if (osd_oset_names(&pg->missing, &names, &n))
		return -ENOMEM;
	for (size_t i = 0; i < n && !rc; i++)
		rc = osd__oids_add(p, names[i]);
	free(names);
	return rc;
}

/*
 * Plan slot t against the authoritative slot a: nothing, log-based (the
 * objects to push in peer[t].oids) or backfill. \return 0, -ENOMEM, or
 * -EAGAIN (EC: t's newer entries can be neither kept nor undone yet).
 */
int
osd__plan_slot(struct osd_pg *pg, int t, int a)
{
	struct osd_pg_peer *p = &pg->peer[t], *ap = &pg->peer[a];
	struct osd_lview av, tv;
	struct osd_ver common;
	bool found = false;
	size_t w = 0;
	int rc;

	p->step = OSD_REC_NONE;
	p->backfill = false;
	if (p->exists && !p->incomplete && !p->partial && osd_ver_cmp(&p->lu, &ap->lu) == 0)
		return 0;
	osd__lv_of(pg, a, &av);
	if (!p->exists) {
		/* No copy: the log is enough while it reaches back to the PG's creation. */
		common = (struct osd_ver){ 0, 0 };
		found = osd_ver_cmp(&ap->tail, &common) == 0;
		tv.pg = pg;
		tv.n = NULL;
	} else if (!p->incomplete) {
		osd__lv_of(pg, t, &tv);
		if (osd__lv_has(&av, &ap->tail, &p->lu)) {
			common = p->lu;
			found = true;
		}
		for (size_t i = osd__lv_n(&tv); !found && i-- > 0;) {
			const char *oid;

			osd__lv_get(&tv, i, &common, &oid);
			found = osd__lv_has(&av, &ap->tail, &common);
		}
		if (!found && osd__lv_has(&av, &ap->tail, &p->tail)) {
			common = p->tail;
			found = true;
		}
		/*
		 * The log covers what follows its tail. A merge keeps the
		 * target's older entries below a tail it raised (the source's
		 * log was cut short: mon merge, pg/merge.c): they still find
		 * resends, but a copy at one of them is backfilled.
		 */
		if (found && osd_ver_cmp(&common, &ap->tail) < 0)
			found = false;
	}
	if (!found) {
		p->backfill = true;
		p->step = OSD_REC_WIPE;
		return 0;
	}
	/* Objects changed on the authoritative copy since the common point, those
	 * our target changed on a history that did not survive (EC: undone on the
	 * target instead, when it can), and those it still lacked from an earlier
	 * recovery. */
	if (p->exists && (rc = pg->be->plan_divergent(pg, t, &tv, &common)))
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
	p->step = OSD_REC_ADOPT;
	return 0;
}

enum osd_peering_verdict
osd__peering_decide(struct osd_pg *pg, int *auth, int *self)
{
	struct osd *o = pg->osd;
	bool prior_seen = pg->nprior == 0 || pg->prior_overlap;

	*self = -1;
	for (int i = 0; i < pg->nslots; i++)
		if (pg->slot_osd[i] == o->id)
			*self = i;
	*auth = pg->be->choose_auth(pg);
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
		CM_WARN("%s: none of the OSDs that held it before is up: waiting", pg->cid);
		return OSD_PEERING_WAIT_PRIOR;
	}
	switch (osd__pg_past_heard(pg)) {
	case 1:
		break;
	case 0:
		return OSD_PEERING_WAIT_PAST;
	default:
		return OSD_PEERING_AGAIN;
	}
	if (*auth < 0 || *self < 0) {
		pg->be->no_auth(pg);
		return OSD_PEERING_NO_AUTH;
	}
	return OSD_PEERING_GO;
}
