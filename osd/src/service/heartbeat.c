/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Heartbeats between OSDs and failure reports to the mons.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(osd);

/*
 * Heartbeats (shard 0): ping every other up OSD each osd_heartbeat_interval; one that
 * has not answered for osd_heartbeat_grace is reported failed to the mons
 * (they mark it down once mon_osd_min_down_reporters agree), and reported
 * alive again if it answers after all.
 */
static void
send_failure(struct osd *o, int32_t target, uint64_t silent_ms, bool alive, bool immediate)
{
	Cairn__Mon__OsdFailure f = CAIRN__MON__OSD_FAILURE__INIT;
	const Cairn__Map__Osd *mo = o->map ? mon_osd_find(o->map, target) : NULL;

	f.target_up_since = mo ? mo->up_since : 0;
	f.reporter = o->id;
	f.target = target;
	f.failed_for_ms = (uint32_t)CM_MIN(silent_ms, UINT32_MAX);
	f.alive = alive;
	f.immediate = immediate;
	mon_async_send(o->monc, MON_MSG_OSD_FAILURE, 0, &f.base, true);
}

/*
 * Shard 0's session with peer id was refused: nothing listens at the
 * address the map gives for that incarnation, so its process is gone (a
 * hung or cut-off one still accepts, or times out). Report it at once, once
 * per incarnation; a ping answered later withdraws the report (alive).
 */
void
osd__peer_refused(struct osd *o, int32_t id)
{
	const Cairn__Map__Osd *mo;
	struct osd_peer *pe;

	if (!o->monc || !o->booted || !o->map || id == o->id || id < 0 || id >= o->npeers)
		return;
	mo = mon_osd_find(o->map, id);
	pe = &o->peers[id];
	if (!mo || !mo->up || pe->refused_up_since == mo->up_since)
		return;
	pe->refused_up_since = mo->up_since;
	CM_WARN("osd.%d refuses connections: reporting it gone", id);
	send_failure(o, id, 0, false, true);
	if (pe->hb_up_since == mo->up_since)
		pe->hb_report_ms = cm_now_ms();
}

void
osd__heartbeat(struct osd *o, uint64_t now)
{
	Cairn__Osd__Ping p = CAIRN__OSD__PING__INIT;

	p.from = o->id;
	/* The oldest map of our shards: a peer renews our lease only if every
	 * shard of ours knows what it knows. */
	p.epoch = osd__lease_epoch(o);
	p.stamp_ns = osd__lease_now();
	p.lease_ms = (uint32_t)o->cfg->read_lease_ms;
	for (int i = 0; i < o->npeers; i++) {
		const Cairn__Map__Osd *mo = mon_osd_find(o->map, i);
		struct osd_peer *pe = &o->peers[i];

		if (i == o->id || !mo || !mo->up)
			continue;
		if (pe->hb_up_since != mo->up_since || !pe->hb_since_ms) {
			pe->hb_up_since = mo->up_since;
			pe->hb_since_ms = now;
			pe->hb_rx_ms = 0;
			pe->hb_report_ms = 0;
		}
		/* seed 0: the peer's first shard, which answers pings */
		osd__send_pb(osd__peer_conn(o, i, 0), OSD_MSG_PING, 0, &p.base, NULL);
		{
			uint64_t last = CM_MAX(pe->hb_rx_ms, pe->hb_since_ms);

			if (now - last >= o->cfg->hb_grace_ms &&
			    (!pe->hb_report_ms || now - pe->hb_report_ms >= o->cfg->hb_grace_ms)) {
				CM_LOG_RL(CM_LOG_WARN,
					  "osd.%d silent for %" PRIu64 " ms: reporting it", i,
					  now - last);
				send_failure(o, i, now - last, false, false);
				pe->hb_report_ms = now;
			}
		}
	}
}

void
osd__handle_ping(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__Ping *p =
		(Cairn__Osd__Ping *)cm_msg_unpack_front(m, &cairn__osd__ping__descriptor);

	cm_msg_destroy(m);
	if (!p)
		return;
	if (!p->reply) {
		Cairn__Osd__Ping r = *p;

		r.from = o->id;
		r.reply = true;
		r.epoch = o->epoch;
		r.renew = p->from != o->id && osd__lease_grant(o, p->from, p->epoch, p->lease_ms);
		osd__send_pb(c, OSD_MSG_PING, 0, &r.base, NULL);
	} else if (o->monc && p->from >= 0 && p->from < o->npeers && p->from != o->id) {
		struct osd_peer *pe = &o->peers[p->from];

		pe->hb_rx_ms = cm_now_ms();
		if (p->renew)
			osd__lease_renewed(o, p->from, p->stamp_ns, p->lease_ms);
		else if (p->epoch > o->epoch)
			osd__want_map(o, o->epoch); /* it renews us once we have its map */
		if (pe->hb_report_ms) {
			send_failure(o, p->from, 0, true, false);
			pe->hb_report_ms = 0;
		}
	}
	cairn__osd__ping__free_unpacked(p, NULL);
}
