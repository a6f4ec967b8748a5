/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The map model, and finalize: bucket weights and device-class shadow trees.
 *
 * Shadow trees (as Ceph builds them): for every class and every root of the
 * real hierarchy, each bucket B gets a clone "B~class" of the same type, alg
 * and hash holding, in B's order, the devices of that class (with their
 * weights) and the clones of B's child buckets (with the clone's weight, 0
 * when the class is absent below). `step take B class C` starts at the clone.
 * Clone ids come from the map's `id -N class C` lines when given, else the
 * lowest free bucket id.
 */
#include "crush_internal.h"

#include <stdio.h>

void
crush_tunables_optimal(struct crush_tunables *t)
{
	t->choose_local_tries = 0;
	t->choose_local_fallback_tries = 0;
	t->choose_total_tries = 50;
	t->chooseleaf_descend_once = 1;
	t->chooseleaf_vary_r = 1;
	t->chooseleaf_stable = 1;
	t->straw_calc_version = 1;
	t->allowed_bucket_algs = 54;
}

void
crush_tunables_legacy(struct crush_tunables *t)
{
	t->choose_local_tries = 2;
	t->choose_local_fallback_tries = 5;
	t->choose_total_tries = 19;
	t->chooseleaf_descend_once = 0;
	t->chooseleaf_vary_r = 0;
	t->chooseleaf_stable = 0;
	t->straw_calc_version = 0;
	t->allowed_bucket_algs = 22;
}

int
crush_map_create(struct crush_map **mp)
{
	struct crush_map *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	crush_tunables_optimal(&m->t);
	*mp = m;
	return 0;
}

static void
bucket_free(struct crush_bucket *b)
{
	if (!b)
		return;
	free(b->items);
	free(b->item_weights);
	free(b->name);
	free(b->class_ids);
	free(b);
}

void
crush_map_destroy(struct crush_map *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->max_buckets; i++)
		bucket_free(m->buckets[i]);
	free(m->buckets);
	for (int i = 0; i < m->max_rules; i++) {
		if (!m->rules[i])
			continue;
		free(m->rules[i]->name);
		free(m->rules[i]->steps);
		free(m->rules[i]);
	}
	free(m->rules);
	for (int i = 0; i < m->max_devices; i++)
		free(m->device_names[i]);
	free(m->device_names);
	free(m->device_class);
	for (int i = 0; i < m->ntypes; i++)
		free(m->type_names[i]);
	free(m->type_names);
	free(m->type_ids);
	for (int i = 0; i < m->nclasses; i++)
		free(m->class_names[i]);
	free(m->class_names);
	free(m);
}

int
crush__add_bucket(struct crush_map *m, struct crush_bucket *b)
{
	int idx = -1 - b->id;

	if (b->id >= 0)
		return -EINVAL;
	if (idx >= m->max_buckets) {
		int n = idx + 1;
		struct crush_bucket **nb = realloc(m->buckets, sizeof(*nb) * (size_t)n);

		if (!nb)
			return -ENOMEM;
		memset(nb + m->max_buckets, 0, sizeof(*nb) * (size_t)(n - m->max_buckets));
		m->buckets = nb;
		m->max_buckets = n;
	}
	if (m->buckets[idx])
		return -EEXIST;
	m->buckets[idx] = b;
	return 0;
}

int
crush__grow_devices(struct crush_map *m, int n)
{
	char **dn;
	int *dc;

	if (n <= m->max_devices)
		return 0;
	dn = realloc(m->device_names, sizeof(*dn) * (size_t)n);
	if (!dn)
		return -ENOMEM;
	m->device_names = dn;
	dc = realloc(m->device_class, sizeof(*dc) * (size_t)n);
	if (!dc)
		return -ENOMEM;
	m->device_class = dc;
	for (int i = m->max_devices; i < n; i++) {
		dn[i] = NULL;
		dc[i] = -1;
	}
	m->max_devices = n;
	return 0;
}

int
crush__add_class(struct crush_map *m, const char *name)
{
	char **n;
	int id = crush_class_by_name(m, name);

	if (id >= 0)
		return id;
	n = realloc(m->class_names, sizeof(*n) * (size_t)(m->nclasses + 1));
	if (!n)
		return -ENOMEM;
	m->class_names = n;
	n[m->nclasses] = strdup(name);
	if (!n[m->nclasses])
		return -ENOMEM;
	return m->nclasses++;
}

int32_t
crush_item_by_name(const struct crush_map *m, const char *name)
{
	for (int i = 0; i < m->max_devices; i++)
		if (m->device_names[i] && strcmp(m->device_names[i], name) == 0)
			return i;
	for (int i = 0; i < m->max_buckets; i++)
		if (m->buckets[i] && m->buckets[i]->name && strcmp(m->buckets[i]->name, name) == 0)
			return m->buckets[i]->id;
	return INT32_MIN;
}

int
crush_type_by_name(const struct crush_map *m, const char *name)
{
	for (int i = 0; i < m->ntypes; i++)
		if (strcmp(m->type_names[i], name) == 0)
			return m->type_ids[i];
	return INT32_MIN;
}

int
crush_class_by_name(const struct crush_map *m, const char *name)
{
	for (int i = 0; i < m->nclasses; i++)
		if (strcmp(m->class_names[i], name) == 0)
			return i;
	return -1;
}

int
crush_rule_by_name(const struct crush_map *m, const char *name)
{
	for (int i = 0; i < m->max_rules; i++)
		if (m->rules[i] && strcmp(m->rules[i]->name, name) == 0)
			return i;
	return -1;
}

const char *
crush_item_name(const struct crush_map *m, int32_t id)
{
	if (id >= 0)
		return id < m->max_devices ? m->device_names[id] : NULL;
	if (-1 - id < m->max_buckets && m->buckets[-1 - id])
		return m->buckets[-1 - id]->name;
	return NULL;
}

const char *
crush_type_name(const struct crush_map *m, int type)
{
	for (int i = 0; i < m->ntypes; i++)
		if (m->type_ids[i] == type)
			return m->type_names[i];
	return NULL;
}

/* The lowest bucket id free in the map and not reserved by the text. */
static int32_t
free_bucket_id(const struct crush_map *m)
{
	for (int32_t id = -1;; id--) {
		int idx = -1 - id;
		bool reserved = false;

		if (idx < m->max_buckets && m->buckets[idx])
			continue;
		for (int i = 0; i < m->max_buckets && !reserved; i++) {
			const struct crush_bucket *b = m->buckets[i];

			for (int c = 0; b && b->class_ids && c < m->nclasses; c++)
				if (b->class_ids[c] == id)
					reserved = true;
		}
		if (!reserved)
			return id;
	}
}

static bool
has_parent(const struct crush_map *m, int32_t id)
{
	for (int i = 0; i < m->max_buckets; i++) {
		const struct crush_bucket *b = m->buckets[i];

		if (!b || b->class_id >= 0)
			continue;
		for (unsigned j = 0; j < b->size; j++)
			if (b->items[j] == id)
				return true;
	}
	return false;
}

/* The clone of bucket id for class cls, made (recursively) if missing. \return 0 or -errno. */
static int
clone_for_class(struct crush_map *m, int32_t id, int cls, int32_t *out, char *err, size_t errlen,
		int depth)
{
	struct crush_bucket *orig = m->buckets[-1 - id], *cl;
	char name[256];
	int32_t cid;
	int rc;

	if (depth > 64) {
		snprintf(err, errlen, "bucket hierarchy too deep (a loop?) at %s", orig->name);
		return -EINVAL;
	}
	snprintf(name, sizeof(name), "%s~%s", orig->name, m->class_names[cls]);
	cid = crush_item_by_name(m, name);
	if (cid != INT32_MIN) {
		const struct crush_bucket *sh = cid < 0 ? m->buckets[-1 - cid] : NULL;

		/* Only this bucket's own shadow may carry the name. */
		if (!sh || sh->class_id != cls || sh->shadow_of != id) {
			snprintf(err, errlen, "item %s has the name of the %s shadow of %s", name,
				 m->class_names[cls], orig->name);
			return -EINVAL;
		}
		*out = cid;
		return 0;
	}
	cid = orig->class_ids && orig->class_ids[cls] ? orig->class_ids[cls] : free_bucket_id(m);
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	cl->id = cid;
	cl->type = orig->type;
	cl->alg = orig->alg;
	cl->hash = orig->hash;
	cl->class_id = cls;
	cl->shadow_of = id;
	cl->name = strdup(name);
	cl->items = calloc(orig->size ? orig->size : 1, sizeof(*cl->items));
	cl->item_weights = calloc(orig->size ? orig->size : 1, sizeof(*cl->item_weights));
	if (!cl->name || !cl->items || !cl->item_weights) {
		bucket_free(cl);
		return -ENOMEM;
	}
	rc = crush__add_bucket(m, cl);
	if (rc) {
		snprintf(err, errlen, "shadow id %d of %s is taken by %s", cid, name,
			 crush_item_name(m, cid) ? crush_item_name(m, cid) : "?");
		bucket_free(cl);
		return rc == -EEXIST ? -EINVAL : rc;
	}
	if (orig->class_ids)
		orig->class_ids[cls] = cid;
	for (unsigned i = 0; i < orig->size; i++) {
		int32_t it = orig->items[i];
		uint32_t w;

		if (it >= 0) {
			if (m->device_class[it] != cls)
				continue;
			w = orig->item_weights[i];
		} else {
			rc = clone_for_class(m, it, cls, &it, err, errlen, depth + 1);
			if (rc)
				return rc;
			w = m->buckets[-1 - it]->weight;
		}
		cl->items[cl->size] = it;
		cl->item_weights[cl->size] = w;
		cl->size++;
		cl->weight += w;
	}
	*out = cid;
	return 0;
}

int
crush_map_finalize(struct crush_map *m, char *err, size_t errlen)
{
	int nreal = m->max_buckets;

	for (int i = 0; i < nreal; i++) {
		struct crush_bucket *b = m->buckets[i];

		if (!b)
			continue;
		if (b->alg != CRUSH_BUCKET_STRAW2) {
			snprintf(err, errlen, "bucket %s: only straw2 buckets are supported",
				 b->name);
			return -EINVAL;
		}
		b->weight = 0;
		for (unsigned j = 0; j < b->size; j++) {
			int32_t it = b->items[j];

			if (it >= 0 ? it >= m->max_devices || !m->device_names[it]
				    : -1 - it >= m->max_buckets || !m->buckets[-1 - it]) {
				snprintf(err, errlen, "bucket %s: item %d does not exist", b->name,
					 it);
				return -EINVAL;
			}
			b->weight += b->item_weights[j];
		}
	}
	/* Shadow trees for every class, from every real root. */
	for (int cls = 0; cls < m->nclasses; cls++) {
		for (int i = 0; i < nreal; i++) {
			struct crush_bucket *b = m->buckets[i];
			int32_t cid;
			int rc;

			if (!b || b->class_id >= 0 || has_parent(m, b->id))
				continue;
			rc = clone_for_class(m, b->id, cls, &cid, err, errlen, 0);
			if (rc)
				return rc;
		}
	}
	/* Resolve `take X class C`. */
	for (int r = 0; r < m->max_rules; r++) {
		struct crush_rule *rule = m->rules[r];

		for (unsigned s = 0; rule && s < rule->len; s++) {
			struct crush_step *st = &rule->steps[s];
			const struct crush_bucket *b;

			if (st->op != CRUSH_OP_TAKE || st->take_class < 0)
				continue;
			b = st->arg1 < 0 && -1 - st->arg1 < m->max_buckets
				    ? m->buckets[-1 - st->arg1]
				    : NULL;
			if (!b || !b->class_ids || !b->class_ids[st->take_class]) {
				snprintf(err, errlen, "rule %s: no class %s under the taken item",
					 rule->name, m->class_names[st->take_class]);
				return -EINVAL;
			}
			st->arg1 = b->class_ids[st->take_class];
			b = -1 - st->arg1 < m->max_buckets ? m->buckets[-1 - st->arg1] : NULL;
			if (!b || b->class_id != st->take_class) {
				snprintf(err, errlen,
					 "rule %s: the %s shadow of the taken item is missing",
					 rule->name, m->class_names[st->take_class]);
				return -EINVAL;
			}
		}
	}
	m->finalized = true;
	return 0;
}
