/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The upmap balancer: given a map, a pool, the OSD states and the pool's
 * current pg_upmap_items, compute new items that bring every OSD within one
 * PG of its target share, moving one replica at a time, never breaking the
 * rule's failure domain.
 *
 * Targets: replicas are shared among failure domains (the rule's chooseleaf
 * or last choose type) in proportion to weight, but a domain holds at most one
 * replica of each PG, so a heavy domain is capped at pg_num and its excess
 * goes to the others (water-filling; the same one level up for two-step rules
 * such as "2 racks, then 2 hosts in each"). Inside a domain, OSDs share in
 * proportion to their weight (CRUSH weight times reweight).
 *
 * Moves: repeatedly move one replica of some PG from the most overfull OSD to
 * the most underfull OSD that may take it (in the rule's subtree and class,
 * in a failure domain the PG does not use yet, under the same outer bucket),
 * while that lowers the imbalance. The result is the pool's new item list;
 * an existing a->s item followed by a move s->d becomes a->d.
 */
#ifndef CRUSH_BALANCER_H
#define CRUSH_BALANCER_H

#include "crush/placement.h"

struct crush_balance_plan {
	struct crush_upmap_item *items; /* the pool's items after balancing (malloc'd) */
	size_t nitems;
	unsigned moves; /* replicas moved */
	int max_osd;
	double *target;                           /* per OSD (malloc'd) */
	int *before;                              /* PG replicas per OSD before */
	int *after;                               /* and after */
	double max_dev_before, max_dev_after;     /* max |count - target| */
	double bytes_dev_before, bytes_dev_after; /* max |bytes/share - 1|, when sizes known */
};

/*
 * Balance pool p. cur/ncur: current upmap items (any pool; only p's are
 * used). pg_bytes: bytes stored per PG seed (pg_num entries) or NULL.
 * max_moves bounds the plan (0: no bound besides convergence).
 * \return 0, -EINVAL (rule without a usable take/choose), -ENOMEM.
 * Free the plan with crush_balance_plan_free.
 */
int crush_balance(const struct crush_map *m, const struct crush_pool *p,
		  const struct crush_osd_state *osds, int max_osd,
		  const struct crush_upmap_item *cur, size_t ncur, const uint64_t *pg_bytes,
		  unsigned max_moves, struct crush_balance_plan *plan);

void crush_balance_plan_free(struct crush_balance_plan *plan);

#endif
