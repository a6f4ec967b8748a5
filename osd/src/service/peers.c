/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sessions with peer OSDs, one per PG shard of each peer, kept current
 * with the map (incarnation and address): the table libcairn uses too
 * (mon/osd_sessions.h), lossless, replaced when a peer restarts.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(osd);

int32_t
osd__conn_peer(struct cm_conn *c)
{
	int32_t id;

	return mon_osd_sessions_of(c, &id, NULL) ? id : -1;
}

struct cm_conn *
osd__peer_conn(struct osd *o, int32_t id, uint32_t seed)
{
	if (id >= o->npeers)
		return NULL;
	return mon_osd_sessions_get(&o->sess, o->map, id, seed, NULL);
}

static void
peer_lost(void *arg, int32_t id)
{
	/* Whatever was in flight on the session is lost with it: the PGs and
	 * recovery jobs waiting on this peer must hear of it (the session's own
	 * close event no longer names a peer). A plan whose source restarted
	 * otherwise waited for pushes that never came (until the recovery
	 * watchdog, 30 s). */
	osd__pg_peer_reset(arg, id);
}

/* The map changed: heartbeat slots for every OSD in it; sessions it no longer backs go. */
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
	mon_osd_sessions_update(&o->sess, o->map, peer_lost, o);
}
