/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The QoS share of recovery against client ops (by cost per window).
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(recovery);

/* ---------- the share of recovery while clients are active ---------- */

#define SCH_WINDOW_MS 1000u
#define SCH_FLOOR     (OSD_PUSH_CHUNK + 4096u) /* recovery's minimum per window */

static void
sch_window(struct osd *o, uint64_t now)
{
	if (now - o->sch_win_ms >= SCH_WINDOW_MS) {
		o->sch_win_ms = now;
		o->sch_client = o->sch_rec = 0;
	}
}

void
osd__rec_client_cost(struct osd *o, uint64_t cost)
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
bool
osd__sch_may_push(struct osd *o)
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
