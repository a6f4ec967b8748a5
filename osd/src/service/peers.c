/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sessions with peer OSDs, one per PG shard of each peer, kept current
 * with the map (incarnation and address).
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(osd);

/* A peer session's user word: OSD id + 1, and the peer's shard above bit 32. */
#define PEER_USER(id, k) ((void *)(((intptr_t)(k) << 32) | (intptr_t)((id) + 1)))

int32_t
osd__conn_peer(struct cm_conn *c)
{
	intptr_t u = (intptr_t)cm_conn_user(c);

	return u > 0 ? (int32_t)((u & 0xffffffff) - 1) : -1;
}

void
osd__link_drop(struct osd_plink *l)
{
	if (!l->c)
		return;
	cm_conn_close(l->c);
	cm_conn_put(l->c);
	l->c = NULL;
	l->addr[0] = 0;
}

void
osd__peer_drop(struct osd_peer *p)
{
	for (unsigned k = 0; k < p->nlinks; k++)
		osd__link_drop(&p->links[k]);
}

/* Is link k of a peer still a session with the incarnation and shard mo shows? */
static bool
link_current(const struct osd_plink *l, const Cairn__Map__Osd *mo, unsigned k)
{
	const char *addr = k == 0 ? mo->addr : k < mo->n_shard_addrs ? mo->shard_addrs[k] : NULL;

	return mo->up && addr && strcmp(l->addr, addr) == 0 && l->up_since == mo->up_since;
}

struct cm_conn *
osd__peer_conn(struct osd *o, int32_t id, uint32_t seed)
{
	const Cairn__Map__Osd *mo;
	struct osd_peer *p;
	struct osd_plink *l;
	const char *addr;
	unsigned k;

	if (id < 0 || id >= o->npeers || !o->map)
		return NULL;
	p = &o->peers[id];
	mo = mon_osd_find(o->map, id);
	if (!mo || !mo->addr[0])
		return NULL;
	addr = mon_osd_pg_addr(mo, seed, &k);
	if (k >= p->nlinks) {
		struct osd_plink *n = realloc(p->links, sizeof(*n) * (k + 1));

		if (!n)
			return NULL;
		memset(n + p->nlinks, 0, sizeof(*n) * (k + 1 - p->nlinks));
		p->links = n;
		p->nlinks = k + 1;
	}
	l = &p->links[k];
	if (l->c && (strcmp(l->addr, addr) != 0 || l->up_since != mo->up_since))
		osd__link_drop(l);
	if (!l->c) {
		if (cm_msgr_connect(o->msgr, addr, true, &l->c)) {
			l->c = NULL;
			return NULL;
		}
		cm_conn_set_user(l->c, PEER_USER(id, k));
		snprintf(l->addr, sizeof(l->addr), "%s", addr);
		l->up_since = mo->up_since;
	}
	return l->c;
}

void
osd__update_peers(struct osd *o)
{
	int max = 0;

	for (size_t i = 0; i < o->map->n_osds; i++)
		max = CM_MAX(max, o->map->osds[i]->id + 1);
	if (max > o->npeers) {
		struct osd_peer *np = realloc(o->peers, sizeof(*np) * (size_t)max);

		if (!np)
			return;
		memset(np + o->npeers, 0, sizeof(*np) * (size_t)(max - o->npeers));
		o->peers = np;
		o->npeers = max;
	}
	for (int i = 0; i < o->npeers; i++) {
		const Cairn__Map__Osd *mo = mon_osd_find(o->map, i);
		struct osd_peer *p = &o->peers[i];
		bool dropped = false;

		for (unsigned k = 0; k < p->nlinks; k++) {
			if (!p->links[k].c || (mo && link_current(&p->links[k], mo, k)))
				continue;
			/* Whatever was in flight on the session is lost with it: the
			 * PGs and recovery jobs waiting on this peer must hear of it
			 * (the session's own close event no longer names a peer). A
			 * plan whose source restarted otherwise waited for pushes that
			 * never came (until the recovery watchdog, 30 s). */
			osd__link_drop(&p->links[k]);
			dropped = true;
		}
		if (dropped)
			osd__pg_peer_reset(o, i);
	}
}
