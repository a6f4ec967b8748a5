/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DESIGN: the CRUSH descent, as Ceph runs it (Weil et al., SC'06, with the
 * later tunables):
 *  - straw2: every item draws ln(hash(x, item, r) & 0xffff) / weight; the
 *    highest draw wins, so moving weight between two items only moves
 *    inputs between those two.
 *  - firstn (replicated): positions are filled in order; a collision or an
 *    out device retries with r' = r + ftotal, descending again from the top.
 *  - indep (erasure coded): each position keeps its own r sequence
 *    (r' = r + numrep * ftotal), so a failed device changes only its own
 *    position; unfillable positions become CRUSH_ITEM_NONE.
 *  - chooseleaf: after choosing a failure-domain bucket, descend to one leaf
 *    in it (recursion with the chooseleaf tunables).
 * Nothing here allocates; the three scratch vectors live in `work`.
 */
#include "crush_internal.h"

static int
straw2_choose(const struct crush_bucket *b, int x, int r)
{
	unsigned high = 0;
	int64_t high_draw = 0;

	for (unsigned i = 0; i < b->size; i++) {
		int64_t draw;

		if (b->item_weights[i]) {
			uint32_t u =
				crush_hash32_3((uint32_t)x, (uint32_t)b->items[i], (uint32_t)r) &
				0xffff;
			int64_t ln = (int64_t)crush_ln(u) - 0x1000000000000ll;

			/* ln <= 0: the heaviest item has the draw closest to 0. */
			draw = ln / (int64_t)b->item_weights[i];
		} else {
			draw = INT64_MIN;
		}
		if (i == 0 || draw > high_draw) {
			high = i;
			high_draw = draw;
		}
	}
	return b->items[high];
}

static int
bucket_choose(const struct crush_bucket *b, int x, int r)
{
	/* Only straw2 is built (crush_map_finalize refuses the others). */
	return straw2_choose(b, x, r);
}

static bool
is_out(const uint32_t *weight, int weight_max, int item, int x)
{
	if (item < 0 || item >= weight_max)
		return true;
	if (weight[item] >= CRUSH_WEIGHT_ONE)
		return false;
	if (weight[item] == 0)
		return true;
	return (crush_hash32_2((uint32_t)x, (uint32_t)item) & 0xffff) >= weight[item];
}

struct ctx {
	const struct crush_map *m;
	const uint32_t *weight;
	int weight_max;
	int x;
};

static int
item_type(const struct crush_map *m, int item)
{
	if (item >= 0)
		return 0;
	/* A dangling bucket id is no type: the callers then skip it. */
	return -1 - item < m->max_buckets && m->buckets[-1 - item] ? m->buckets[-1 - item]->type
								   : -1;
}

static int
choose_firstn(const struct ctx *c, const struct crush_bucket *bucket, int numrep, int type,
	      int *out, int outpos, int out_size, unsigned tries, unsigned recurse_tries,
	      unsigned local_retries, unsigned local_fallback_retries, bool recurse_to_leaf,
	      unsigned vary_r, unsigned stable, int *out2, int parent_r)
{
	const struct crush_map *m = c->m;
	int count = out_size;

	for (int rep = stable ? 0 : outpos; rep < numrep && count > 0; rep++) {
		unsigned ftotal = 0;
		bool skip_rep = false, retry_descent;
		int item = 0;

		do {
			const struct crush_bucket *in = bucket;
			unsigned flocal = 0;
			bool retry_bucket;

			retry_descent = false;
			do {
				bool collide = false, reject;
				int r = rep + parent_r + (int)ftotal, itemtype;

				retry_bucket = false;
				if (in->size == 0) {
					reject = true;
					goto rejected;
				}
				/* (local_fallback_retries would use a permutation; the
				 * straw2-only maps we build have it 0.) */
				item = bucket_choose(in, c->x, r);
				if (item >= m->max_devices) {
					skip_rep = true;
					break;
				}
				itemtype = item_type(m, item);
				if (itemtype != type) {
					if (item >= 0 || -1 - item >= m->max_buckets ||
					    !m->buckets[-1 - item]) {
						skip_rep = true;
						break;
					}
					in = m->buckets[-1 - item];
					retry_bucket = true;
					continue;
				}
				for (int i = 0; i < outpos; i++) {
					if (out[i] == item) {
						collide = true;
						break;
					}
				}
				reject = false;
				if (!collide && recurse_to_leaf) {
					if (item < 0) {
						int sub_r = vary_r ? r >> (vary_r - 1) : 0;

						if (choose_firstn(c, m->buckets[-1 - item],
								  stable ? 1 : outpos + 1, 0, out2,
								  outpos, count, recurse_tries, 0,
								  local_retries,
								  local_fallback_retries, false,
								  vary_r, stable, NULL,
								  sub_r) <= outpos)
							reject = true; /* no leaf there */
					} else {
						out2[outpos] = item;
					}
				}
				if (!reject && !collide && itemtype == 0)
					reject = is_out(c->weight, c->weight_max, item, c->x);
rejected:
				if (reject || collide) {
					ftotal++;
					flocal++;
					if (collide && flocal <= local_retries)
						retry_bucket = true;
					else if (local_fallback_retries > 0 &&
						 flocal <= in->size + local_fallback_retries)
						retry_bucket = true;
					else if (ftotal < tries)
						retry_descent = true;
					else
						skip_rep = true;
				}
			} while (retry_bucket);
		} while (retry_descent);
		if (skip_rep)
			continue;
		out[outpos++] = item;
		count--;
	}
	return outpos;
}

static void
choose_indep(const struct ctx *c, const struct crush_bucket *bucket, int left, int numrep, int type,
	     int *out, int outpos, unsigned tries, unsigned recurse_tries, bool recurse_to_leaf,
	     int *out2, int parent_r)
{
	const struct crush_map *m = c->m;
	int endpos = outpos + left;

	for (int rep = outpos; rep < endpos; rep++) {
		out[rep] = CRUSH_ITEM_UNDEF;
		if (out2)
			out2[rep] = CRUSH_ITEM_UNDEF;
	}
	for (unsigned ftotal = 0; left > 0 && ftotal < tries; ftotal++) {
		for (int rep = outpos; rep < endpos; rep++) {
			const struct crush_bucket *in = bucket;

			if (out[rep] != CRUSH_ITEM_UNDEF)
				continue;
			for (;;) {
				int r = rep + parent_r, item, itemtype;
				bool collide = false;

				/* Position-stable retries: r' = r + n * ftotal. */
				if (in->alg == CRUSH_BUCKET_UNIFORM && in->size % numrep == 0)
					r += (numrep + 1) * (int)ftotal;
				else
					r += numrep * (int)ftotal;
				if (in->size == 0)
					break;
				item = bucket_choose(in, c->x, r);
				if (item >= m->max_devices) {
					out[rep] = CRUSH_ITEM_NONE;
					if (out2)
						out2[rep] = CRUSH_ITEM_NONE;
					left--;
					break;
				}
				itemtype = item_type(m, item);
				if (itemtype != type) {
					if (item >= 0 || -1 - item >= m->max_buckets ||
					    !m->buckets[-1 - item]) {
						out[rep] = CRUSH_ITEM_NONE;
						if (out2)
							out2[rep] = CRUSH_ITEM_NONE;
						left--;
						break;
					}
					in = m->buckets[-1 - item];
					continue;
				}
				for (int i = outpos; i < endpos; i++) {
					if (out[i] == item) {
						collide = true;
						break;
					}
				}
				if (collide)
					break;
				if (recurse_to_leaf) {
					if (item < 0) {
						choose_indep(c, m->buckets[-1 - item], 1, numrep, 0,
							     out2, rep, recurse_tries, 0, false,
							     NULL, r);
						if (out2[rep] == CRUSH_ITEM_NONE)
							break; /* no leaf there */
					} else {
						out2[rep] = item;
					}
				}
				if (itemtype == 0 && is_out(c->weight, c->weight_max, item, c->x))
					break;
				out[rep] = item;
				left--;
				break;
			}
		}
	}
	for (int rep = outpos; rep < endpos; rep++) {
		if (out[rep] == CRUSH_ITEM_UNDEF)
			out[rep] = CRUSH_ITEM_NONE;
		if (out2 && out2[rep] == CRUSH_ITEM_UNDEF)
			out2[rep] = CRUSH_ITEM_NONE;
	}
}

size_t
crush_work_size(const struct crush_map *m, int result_max)
{
	(void)m;
	return sizeof(int) * 3 * (size_t)(result_max > 0 ? result_max : 1);
}

int
crush_do_rule(const struct crush_map *m, int ruleno, int x, int *result, int result_max,
	      const uint32_t *weight, int weight_max, void *work)
{
	struct ctx c = { .m = m, .weight = weight, .weight_max = weight_max, .x = x };
	const struct crush_rule *rule;
	int *a = work, *b = a + result_max, *cc = b + result_max;
	int *w = a, *o = b, wsize = 0, result_len = 0;
	/* choose_total_tries counted retries, not tries: one more. */
	unsigned choose_tries = m->t.choose_total_tries + 1, choose_leaf_tries = 0;
	unsigned local_retries = m->t.choose_local_tries;
	unsigned local_fallback_retries = m->t.choose_local_fallback_tries;
	unsigned vary_r = m->t.chooseleaf_vary_r, stable = m->t.chooseleaf_stable;

	if (ruleno < 0 || ruleno >= m->max_rules || !m->rules[ruleno] || result_max <= 0)
		return 0;
	rule = m->rules[ruleno];
	for (unsigned step = 0; step < rule->len; step++) {
		const struct crush_step *s = &rule->steps[step];
		bool firstn = false, leaf;
		int osize, *tmp;

		switch (s->op) {
		case CRUSH_OP_TAKE:
			if ((s->arg1 >= 0 && s->arg1 < m->max_devices) ||
			    (-1 - s->arg1 >= 0 && -1 - s->arg1 < m->max_buckets &&
			     m->buckets[-1 - s->arg1])) {
				w[0] = s->arg1;
				wsize = 1;
			}
			break;
		case CRUSH_OP_SET_CHOOSE_TRIES:
			if (s->arg1 > 0)
				choose_tries = (unsigned)s->arg1;
			break;
		case CRUSH_OP_SET_CHOOSELEAF_TRIES:
			if (s->arg1 > 0)
				choose_leaf_tries = (unsigned)s->arg1;
			break;
		case CRUSH_OP_SET_CHOOSE_LOCAL_TRIES:
			if (s->arg1 >= 0)
				local_retries = (unsigned)s->arg1;
			break;
		case CRUSH_OP_SET_CHOOSE_LOCAL_FALLBACK_TRIES:
			if (s->arg1 >= 0)
				local_fallback_retries = (unsigned)s->arg1;
			break;
		case CRUSH_OP_SET_CHOOSELEAF_VARY_R:
			if (s->arg1 >= 0)
				vary_r = (unsigned)s->arg1;
			break;
		case CRUSH_OP_SET_CHOOSELEAF_STABLE:
			if (s->arg1 >= 0)
				stable = (unsigned)s->arg1;
			break;
		case CRUSH_OP_CHOOSELEAF_FIRSTN:
		case CRUSH_OP_CHOOSE_FIRSTN:
			firstn = true;
			/* fall through */
		case CRUSH_OP_CHOOSELEAF_INDEP:
		case CRUSH_OP_CHOOSE_INDEP:
			if (wsize == 0)
				break;
			leaf = s->op == CRUSH_OP_CHOOSELEAF_FIRSTN ||
			       s->op == CRUSH_OP_CHOOSELEAF_INDEP;
			osize = 0;
			for (int i = 0; i < wsize; i++) {
				int numrep = s->arg1, bno = -1 - w[i];

				if (numrep <= 0) {
					numrep += result_max;
					if (numrep <= 0)
						continue;
				}
				if (bno < 0 || bno >= m->max_buckets || !m->buckets[bno])
					continue; /* e.g. an indep hole from the step before */
				if (firstn) {
					unsigned recurse_tries =
						choose_leaf_tries              ? choose_leaf_tries
						: m->t.chooseleaf_descend_once ? 1
									       : choose_tries;

					osize += choose_firstn(
						&c, m->buckets[bno], numrep, s->arg2, o + osize, 0,
						result_max - osize, choose_tries, recurse_tries,
						local_retries, local_fallback_retries, leaf, vary_r,
						stable, cc + osize, 0);
				} else {
					int out_size = numrep < result_max - osize
							       ? numrep
							       : result_max - osize;

					choose_indep(&c, m->buckets[bno], out_size, numrep, s->arg2,
						     o + osize, 0, choose_tries,
						     choose_leaf_tries ? choose_leaf_tries : 1,
						     leaf, cc + osize, 0);
					osize += out_size;
				}
			}
			if (leaf)
				memcpy(o, cc, sizeof(*o) * (size_t)osize);
			tmp = o;
			o = w;
			w = tmp;
			wsize = osize;
			break;
		case CRUSH_OP_EMIT:
			for (int i = 0; i < wsize && result_len < result_max; i++)
				result[result_len++] = w[i];
			wsize = 0;
			break;
		default:
			break;
		}
	}
	return result_len;
}
