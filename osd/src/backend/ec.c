/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Erasure-coded pools: their profiles.
 */
#include "osd_int.h"
#include "backend/ec.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(ec);

/* ---------- profiles ---------- */

const struct osd_ec *
osd__ec_pool_profile(struct osd *o, const Cairn__Map__Pool *p)
{
	struct osd_pool_ec **na, *e;

	if (!p->erasure)
		return NULL;
	for (size_t i = 0; i < o->necp; i++)
		if (o->ecp[i]->pool == p->id)
			return &o->ecp[i]->ec;
	e = calloc(1, sizeof(*e));
	na = e ? realloc(o->ecp, (o->necp + 1) * sizeof(*na)) : NULL;
	if (!na || osd_ec_init(&e->ec, p->ec_k, p->ec_m, p->stripe_unit ? p->stripe_unit : 4096)) {
		CM_ERR("pool %" PRId64 ": EC profile %u+%u/%u unusable", p->id, p->ec_k, p->ec_m,
		       p->stripe_unit);
		free(e);
		if (na)
			o->ecp = na;
		return NULL;
	}
	e->pool = p->id;
	o->ecp = na;
	o->ecp[o->necp++] = e;
	return &e->ec;
}

void
osd__ec_free_all(struct osd *o)
{
	osd__ec_abort_all(o);
	for (size_t i = 0; i < o->necp; i++) {
		osd_ec_fini(&o->ecp[i]->ec);
		free(o->ecp[i]);
	}
	free(o->ecp);
	o->ecp = NULL;
	o->necp = 0;
}
