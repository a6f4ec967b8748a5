/* SPDX-License-Identifier: Apache-2.0 */
#include "crush_internal.h"
#include "crush/balancer.h"

#include <math.h>

struct bal {
	const struct crush_map *m;
	const struct crush_pool *p;
	int max_osd;
	int size;
	int32_t *up;     /* pg_num x size */
	int *count;      /* replicas per OSD */
	double *weight;  /* effective weight per OSD (0: not eligible) */
	int32_t *domain; /* failure-domain bucket of each OSD (or the OSD) */
	int32_t *outer;  /* outer bucket (two-step rules), or 0 */
	double *target;
	struct crush_upmap_item *items;
	size_t nitems, cap_items;
};

/* The rule's take bucket, failure-domain type, and outer type/count. */
static int
rule_shape(const struct crush_map *m, int rule, int32_t *take, int *dom_type, int *outer_type)
{
	const struct crush_rule *r = rule >= 0 && rule < m->max_rules ? m->rules[rule] : NULL;
	int chooses = 0;

	*take = 0;
	*dom_type = -1;
	*outer_type = -1;
	if (!r)
		return -EINVAL;
	for (unsigned i = 0; i < r->len; i++) {
		const struct crush_step *s = &r->steps[i];

		if (s->op == CRUSH_OP_TAKE) {
			*take = s->arg1;
		} else if (s->op == CRUSH_OP_CHOOSE_FIRSTN || s->op == CRUSH_OP_CHOOSE_INDEP ||
			   s->op == CRUSH_OP_CHOOSELEAF_FIRSTN ||
			   s->op == CRUSH_OP_CHOOSELEAF_INDEP) {
			if (chooses++ > 0)
				*outer_type = *dom_type;
			*dom_type = s->arg2;
		}
	}
	if (*take >= 0 || *dom_type < 0)
		return -EINVAL;
	return 0;
}

/* Walk the take subtree: weights, domains and outer buckets of every OSD. */
static void
walk(struct bal *b, int32_t id, double w, int32_t dom, int32_t outer, int dom_type, int outer_type,
     int depth)
{
	const struct crush_bucket *bk;

	if (depth > 64)
		return;
	if (id >= 0) {
		if (id < b->max_osd) {
			b->weight[id] = w;
			b->domain[id] = dom_type == 0 ? id : dom;
			b->outer[id] = outer;
		}
		return;
	}
	bk = b->m->buckets[-1 - id];
	if (bk->type == dom_type)
		dom = id;
	if (bk->type == outer_type)
		outer = id;
	for (unsigned i = 0; i < bk->size; i++)
		walk(b, bk->items[i], (double)bk->item_weights[i] / 0x10000, dom, outer, dom_type,
		     outer_type, depth + 1);
}

/* Share `amount` among n weighted slots, none above cap; result in share[]. */
static void
water_fill(double amount, const double *w, int n, double cap, double *share)
{
	bool *fixed = calloc((size_t)(n ? n : 1), sizeof(*fixed));
	double left = amount;

	if (!fixed)
		return;
	for (int round = 0; round <= n; round++) {
		double sw = 0;
		bool again = false;

		for (int i = 0; i < n; i++)
			if (!fixed[i])
				sw += w[i];
		for (int i = 0; i < n; i++) {
			if (fixed[i])
				continue;
			share[i] = sw > 0 ? left * w[i] / sw : 0;
			if (share[i] > cap) {
				share[i] = cap;
				fixed[i] = true;
				left -= cap;
				again = true;
			}
		}
		if (!again)
			break;
	}
	free(fixed);
}

/* Distinct ids in v (unique list). */
static int
uniq(const int32_t *v, int n, int32_t *out)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		bool seen = false;

		for (int j = 0; j < k && !seen; j++)
			seen = out[j] == v[i];
		if (!seen)
			out[k++] = v[i];
	}
	return k;
}

static int
compute_targets(struct bal *b, double total, int per_outer)
{
	int n = b->max_osd, ng;
	int32_t *groups = malloc(sizeof(*groups) * (size_t)(n ? n : 1));
	double *gw = calloc((size_t)(n ? n : 1), sizeof(*gw));
	double *gs = calloc((size_t)(n ? n : 1), sizeof(*gs));
	int32_t *keys = malloc(sizeof(*keys) * (size_t)(n ? n : 1));
	int nk = 0, rc = 0;

	if (!groups || !gw || !gs || !keys) {
		rc = -ENOMEM;
		goto out;
	}
	/* Level 1: outer groups (or one group), capped at pg_num * per_outer. */
	for (int i = 0; i < n; i++)
		if (b->weight[i] > 0)
			keys[nk++] = b->outer[i];
	ng = uniq(keys, nk, groups);
	for (int g = 0; g < ng; g++)
		for (int i = 0; i < n; i++)
			if (b->weight[i] > 0 && b->outer[i] == groups[g])
				gw[g] += b->weight[i];
	water_fill(total, gw, ng, ng > 1 ? (double)b->p->pg_num * per_outer : total, gs);
	/* Level 2: domains within each group, capped at pg_num; then OSDs by weight. */
	for (int g = 0; g < ng; g++) {
		int32_t doms[4096];
		double dw[4096], ds[4096];
		int nd;

		nk = 0;
		for (int i = 0; i < n; i++)
			if (b->weight[i] > 0 && b->outer[i] == groups[g])
				keys[nk++] = b->domain[i];
		nd = uniq(keys, nk, doms);
		if (nd > 4096) {
			rc = -EINVAL;
			goto out;
		}
		for (int d = 0; d < nd; d++) {
			dw[d] = 0;
			for (int i = 0; i < n; i++)
				if (b->weight[i] > 0 && b->domain[i] == doms[d] &&
				    b->outer[i] == groups[g])
					dw[d] += b->weight[i];
		}
		water_fill(gs[g], dw, nd, (double)b->p->pg_num, ds);
		for (int d = 0; d < nd; d++)
			for (int i = 0; i < n; i++)
				if (b->weight[i] > 0 && b->domain[i] == doms[d] &&
				    b->outer[i] == groups[g])
					b->target[i] = dw[d] > 0 ? ds[d] * b->weight[i] / dw[d] : 0;
	}
out:
	free(groups);
	free(gw);
	free(gs);
	free(keys);
	return rc;
}

/* Can OSD d take the replica of PG seed that s holds now? */
static bool
may_move(const struct bal *b, uint32_t seed, int32_t s, int32_t d)
{
	const int32_t *set = &b->up[(size_t)seed * (size_t)b->size];

	if (d == s || d < 0 || d >= b->max_osd || b->weight[d] <= 0)
		return false;
	if (b->outer[d] != b->outer[s])
		return false;
	for (int i = 0; i < b->size; i++) {
		int32_t o = set[i];

		if (o == d)
			return false;
		if (o == s || o == CRUSH_ITEM_NONE || o < 0 || o >= b->max_osd)
			continue;
		if (b->domain[o] == b->domain[d])
			return false; /* two replicas in one failure domain */
	}
	return true;
}

static int
record_move(struct bal *b, uint32_t seed, int32_t s, int32_t d)
{
	/* An item that already brought s here is redirected to d (or dropped). */
	for (size_t i = 0; i < b->nitems; i++) {
		struct crush_upmap_item *it = &b->items[i];

		if (it->pool == b->p->id && it->seed == seed && it->to == s) {
			if (it->from == d)
				*it = b->items[--b->nitems];
			else
				it->to = d;
			return 0;
		}
	}
	if (b->nitems == b->cap_items) {
		size_t nc = b->cap_items ? b->cap_items * 2 : 64;
		struct crush_upmap_item *ni = realloc(b->items, sizeof(*ni) * nc);

		if (!ni)
			return -ENOMEM;
		b->items = ni;
		b->cap_items = nc;
	}
	b->items[b->nitems++] =
		(struct crush_upmap_item){ .pool = b->p->id, .seed = seed, .from = s, .to = d };
	return 0;
}

static double
max_dev(const struct bal *b, const int *count)
{
	double m = 0;

	for (int i = 0; i < b->max_osd; i++)
		if (b->weight[i] > 0 || count[i])
			m = fmax(m, fabs(count[i] - b->target[i]));
	return m;
}

static double
bytes_dev(const struct bal *b, const uint64_t *pg_bytes)
{
	double *bytes = calloc((size_t)b->max_osd, sizeof(*bytes)), total = 0, tw = 0, m = 0;

	if (!bytes || !pg_bytes) {
		free(bytes);
		return 0;
	}
	for (uint32_t s = 0; s < b->p->pg_num; s++)
		for (int i = 0; i < b->size; i++) {
			int32_t o = b->up[(size_t)s * (size_t)b->size + (size_t)i];

			if (o >= 0 && o < b->max_osd) {
				bytes[o] += (double)pg_bytes[s];
				total += (double)pg_bytes[s];
			}
		}
	for (int i = 0; i < b->max_osd; i++)
		tw += b->target[i];
	for (int i = 0; i < b->max_osd; i++)
		if (b->target[i] > 0)
			m = fmax(m, fabs(bytes[i] / (total * b->target[i] / tw) - 1.0));
	free(bytes);
	return m;
}

int
crush_balance(const struct crush_map *m, const struct crush_pool *p,
	      const struct crush_osd_state *osds, int max_osd, const struct crush_upmap_item *cur,
	      size_t ncur, const uint64_t *pg_bytes, unsigned max_moves,
	      struct crush_balance_plan *plan)
{
	struct bal b = { .m = m, .p = p, .max_osd = max_osd, .size = (int)p->size };
	int32_t take;
	int dom_type, outer_type, rc, per_outer = 1;
	uint32_t *w = NULL;
	void *work = NULL;
	double total = 0;

	memset(plan, 0, sizeof(*plan));
	rc = rule_shape(m, p->rule, &take, &dom_type, &outer_type);
	if (rc)
		return rc;
	b.up = malloc(sizeof(*b.up) * (size_t)p->pg_num * (size_t)b.size);
	b.count = calloc((size_t)max_osd, sizeof(*b.count));
	b.weight = calloc((size_t)max_osd, sizeof(*b.weight));
	b.domain = calloc((size_t)max_osd, sizeof(*b.domain));
	b.outer = calloc((size_t)max_osd, sizeof(*b.outer));
	b.target = calloc((size_t)max_osd, sizeof(*b.target));
	w = calloc((size_t)max_osd, sizeof(*w));
	work = malloc(crush_work_size(m, b.size));
	plan->before = calloc((size_t)max_osd, sizeof(*plan->before));
	if (!b.up || !b.count || !b.weight || !b.domain || !b.outer || !b.target || !w || !work ||
	    !plan->before) {
		rc = -ENOMEM;
		goto out;
	}
	/* The pool's items are ours to rewrite; other pools' are not touched. */
	for (size_t i = 0; i < ncur; i++) {
		if (cur[i].pool != p->id)
			continue;
		if ((rc = record_move(&b, cur[i].seed, cur[i].from, cur[i].to)))
			goto out;
	}
	walk(&b, take, 1.0, 0, 0, dom_type, outer_type, 0);
	for (int i = 0; i < max_osd; i++) {
		b.weight[i] *=
			osds[i].exists && osds[i].up ? (double)osds[i].in_weight / 0x10000 : 0;
		if (b.weight[i] <= 0)
			b.weight[i] = 0;
	}
	crush_osd_weights(osds, max_osd, w);
	for (uint32_t s = 0; s < p->pg_num; s++) {
		int32_t *set = &b.up[(size_t)s * (size_t)b.size];
		int primary, n = crush_pg_to_up(m, p, s, osds, w, max_osd, cur, ncur, set, &primary,
						work);

		for (int i = n; i < b.size; i++)
			set[i] = CRUSH_ITEM_NONE;
		for (int i = 0; i < n; i++) {
			if (set[i] >= 0 && set[i] < max_osd) {
				b.count[set[i]]++;
				total++;
			}
		}
	}
	if (outer_type >= 0) {
		/* Replicas per outer bucket: the inner choose's count (e.g. 2 hosts per rack). */
		const struct crush_rule *r = m->rules[p->rule];

		for (unsigned i = 0; i < r->len; i++)
			if (r->steps[i].arg2 == dom_type && r->steps[i].arg1 > 0)
				per_outer = r->steps[i].arg1;
	}
	if ((rc = compute_targets(&b, total, per_outer)))
		goto out;
	memcpy(plan->before, b.count, sizeof(*b.count) * (size_t)max_osd);
	plan->max_dev_before = max_dev(&b, b.count);
	plan->bytes_dev_before = bytes_dev(&b, pg_bytes);

	for (unsigned moves = 0; !max_moves || moves < max_moves;) {
		int32_t best_s = -1, best_d = -1;
		uint32_t best_seed = 0;
		double best_gain = 0;

		/* The most overfull OSDs first, each paired with the most underfull taker. */
		for (int s = 0; s < max_osd; s++) {
			double ds = b.count[s] - b.target[s];

			if (ds <= 0 || (best_s >= 0 && ds <= b.count[best_s] - b.target[best_s]))
				continue;
			for (uint32_t seed = 0; seed < p->pg_num; seed++) {
				const int32_t *set = &b.up[(size_t)seed * (size_t)b.size];
				bool has = false;

				for (int i = 0; i < b.size && !has; i++)
					has = set[i] == s;
				if (!has)
					continue;
				for (int d = 0; d < max_osd; d++) {
					double dd = b.count[d] - b.target[d];
					double gain =
						ds - dd; /* > 1: the move narrows the spread */

					if (gain > 1.0 + 1e-9 && gain > best_gain &&
					    may_move(&b, seed, s, d)) {
						best_gain = gain;
						best_s = s;
						best_d = d;
						best_seed = seed;
					}
				}
			}
		}
		if (best_s < 0 || max_dev(&b, b.count) <= 1.0 + 1e-9)
			break;
		for (int i = 0; i < b.size; i++) {
			int32_t *slot = &b.up[(size_t)best_seed * (size_t)b.size + (size_t)i];

			if (*slot == best_s)
				*slot = best_d;
		}
		b.count[best_s]--;
		b.count[best_d]++;
		if ((rc = record_move(&b, best_seed, best_s, best_d)))
			goto out;
		moves++;
		plan->moves = moves;
	}
	plan->max_dev_after = max_dev(&b, b.count);
	plan->bytes_dev_after = bytes_dev(&b, pg_bytes);
	plan->after = b.count;
	b.count = NULL;
	plan->target = b.target;
	b.target = NULL;
	plan->items = b.items;
	b.items = NULL;
	plan->nitems = b.nitems;
	plan->max_osd = max_osd;
out:
	free(b.up);
	free(b.count);
	free(b.weight);
	free(b.domain);
	free(b.outer);
	free(b.target);
	free(b.items);
	free(w);
	free(work);
	if (rc)
		crush_balance_plan_free(plan);
	return rc;
}

void
crush_balance_plan_free(struct crush_balance_plan *plan)
{
	free(plan->items);
	free(plan->target);
	free(plan->before);
	free(plan->after);
	memset(plan, 0, sizeof(*plan));
}
