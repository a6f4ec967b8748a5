/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Map edits on real buckets, devices and rules; see crush/edit.h.
 */
#include "crush/edit.h"
#include "crush_internal.h"

#include <stdio.h>

static struct crush_bucket *
real_bucket(const struct crush_map *m, int32_t id)
{
	struct crush_bucket *b;

	if (id >= 0 || -1 - id >= m->max_buckets)
		return NULL;
	b = m->buckets[-1 - id];
	return b && b->class_id < 0 ? b : NULL;
}

/* Grow every real bucket's class_ids to nclasses entries. */
static int
grow_class_ids(struct crush_map *m, int old)
{
	for (int i = 0; i < m->max_buckets; i++) {
		struct crush_bucket *b = m->buckets[i];
		int32_t *c;

		if (!b || b->class_id >= 0)
			continue;
		c = realloc(b->class_ids, sizeof(*c) * (size_t)m->nclasses);
		if (!c)
			return -ENOMEM;
		for (int k = b->class_ids ? old : 0; k < m->nclasses; k++)
			c[k] = 0;
		b->class_ids = c;
	}
	return 0;
}

int
crush_edit_set_device(struct crush_map *m, int32_t id, const char *name, const char *cls)
{
	int32_t other;
	int c = -1;

	if (id < 0 || id >= (1 << 24) || !name || !name[0] || strchr(name, '~'))
		return -EINVAL;
	other = crush_item_by_name(m, name);
	if (other != INT32_MIN && other != id)
		return -EEXIST;
	if (cls && cls[0]) {
		int old = m->nclasses;

		c = crush__add_class(m, cls);
		if (c < 0)
			return c;
		if (m->nclasses != old && grow_class_ids(m, old))
			return -ENOMEM;
	}
	if (crush__grow_devices(m, id + 1))
		return -ENOMEM;
	if (!m->device_names[id] || strcmp(m->device_names[id], name) != 0) {
		char *d = strdup(name);

		if (!d)
			return -ENOMEM;
		free(m->device_names[id]);
		m->device_names[id] = d;
	}
	m->device_class[id] = c;
	return 0;
}

static int32_t
new_bucket_id(const struct crush_map *m)
{
	for (int32_t id = -1;; id--) {
		int idx = -1 - id;
		bool used = idx < m->max_buckets && m->buckets[idx];

		for (int i = 0; i < m->max_buckets && !used; i++) {
			const struct crush_bucket *b = m->buckets[i];

			for (int c = 0; b && b->class_ids && b->class_id < 0 && c < m->nclasses;
			     c++)
				if (b->class_ids[c] == id)
					used = true;
		}
		if (!used)
			return id;
	}
}

static int
append_item(struct crush_bucket *b, int32_t item, uint32_t weight)
{
	int32_t *it = realloc(b->items, sizeof(*it) * (b->size + 1));
	uint32_t *w;

	if (!it)
		return -ENOMEM;
	b->items = it;
	w = realloc(b->item_weights, sizeof(*w) * (b->size + 1));
	if (!w)
		return -ENOMEM;
	b->item_weights = w;
	b->items[b->size] = item;
	b->item_weights[b->size] = weight;
	b->size++;
	return 0;
}

int
crush_edit_add_bucket(struct crush_map *m, const char *name, const char *type, const char *parent,
		      int32_t *idp)
{
	struct crush_bucket *b, *p = NULL;
	int t = crush_type_by_name(m, type);
	int rc;

	if (!name || !name[0] || strchr(name, '~'))
		return -EINVAL;
	if (crush_item_by_name(m, name) != INT32_MIN)
		return -EEXIST;
	if (t == INT32_MIN)
		return -ENOENT;
	if (t == 0)
		return -EINVAL; /* the devices' type */
	if (parent && !(p = real_bucket(m, crush_item_by_name(m, parent))))
		return -ENOENT;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->id = new_bucket_id(m);
	b->type = t;
	b->alg = CRUSH_BUCKET_STRAW2;
	b->class_id = -1;
	b->name = strdup(name);
	b->class_ids = calloc((size_t)(m->nclasses ? m->nclasses : 1), sizeof(*b->class_ids));
	if (!b->name || !b->class_ids) {
		free(b->name);
		free(b->class_ids);
		free(b);
		return -ENOMEM;
	}
	rc = crush__add_bucket(m, b);
	if (rc) {
		free(b->name);
		free(b->class_ids);
		free(b);
		return rc;
	}
	if (p && (rc = append_item(p, b->id, 0)))
		return rc;
	if (idp)
		*idp = b->id;
	return 0;
}

/* Is `anc` item itself or below it? */
static bool
contains(const struct crush_map *m, int32_t anc, int32_t item, int depth)
{
	const struct crush_bucket *b;

	if (anc == item)
		return true;
	b = real_bucket(m, anc);
	if (!b || depth > 64)
		return false;
	for (unsigned i = 0; i < b->size; i++)
		if (b->items[i] < 0 && contains(m, b->items[i], item, depth + 1))
			return true;
	return false;
}

int
crush_edit_set_item(struct crush_map *m, int32_t bucket, int32_t item, uint32_t weight)
{
	struct crush_bucket *b = real_bucket(m, bucket);

	if (!b)
		return -ENOENT;
	if (item >= 0 ? item >= m->max_devices || !m->device_names[item] : !real_bucket(m, item))
		return -ENOENT;
	if (item < 0 && contains(m, item, bucket, 0))
		return -EINVAL;
	for (unsigned i = 0; i < b->size; i++) {
		if (b->items[i] == item) {
			b->item_weights[i] = weight;
			return 0;
		}
	}
	return append_item(b, item, weight);
}

int
crush_edit_remove_item(struct crush_map *m, int32_t item)
{
	struct crush_bucket *rb = NULL;

	if (item >= 0) {
		if (item >= m->max_devices || !m->device_names[item])
			return -ENOENT;
	} else {
		rb = real_bucket(m, item);
		if (!rb)
			return -ENOENT;
		if (rb->size)
			return -ENOTEMPTY;
	}
	for (int i = 0; i < m->max_buckets; i++) {
		struct crush_bucket *b = m->buckets[i];

		if (!b || b->class_id >= 0)
			continue;
		for (unsigned j = 0; j < b->size; j++) {
			if (b->items[j] != item)
				continue;
			memmove(&b->items[j], &b->items[j + 1],
				sizeof(*b->items) * (b->size - j - 1));
			memmove(&b->item_weights[j], &b->item_weights[j + 1],
				sizeof(*b->item_weights) * (b->size - j - 1));
			b->size--;
			j--;
		}
	}
	if (item >= 0) {
		free(m->device_names[item]);
		m->device_names[item] = NULL;
		m->device_class[item] = -1;
	} else {
		/* Its shadows go when the text is parsed again; drop the bucket now. */
		m->buckets[-1 - item] = NULL;
		free(rb->items);
		free(rb->item_weights);
		free(rb->name);
		free(rb->class_ids);
		free(rb);
	}
	return 0;
}

int
crush_edit_add_rule(struct crush_map *m, const char *name, const char *root, const char *cls,
		    const char *failure_type, bool indep, int *idp)
{
	struct crush_bucket *rb = real_bucket(m, crush_item_by_name(m, root));
	int t = crush_type_by_name(m, failure_type), c = -1, id = 0;
	struct crush_rule *r;
	unsigned n = 0;

	if (!name || !name[0])
		return -EINVAL;
	if (crush_rule_by_name(m, name) >= 0)
		return -EEXIST;
	if (!rb || t == INT32_MIN)
		return -ENOENT;
	if (cls && cls[0]) {
		c = crush_class_by_name(m, cls);
		if (c < 0 || !rb->class_ids || !rb->class_ids[c])
			return -ENOENT;
	}
	while (id < m->max_rules && m->rules[id])
		id++;
	if (id >= m->max_rules) {
		struct crush_rule **nr = realloc(m->rules, sizeof(*nr) * (size_t)(id + 1));

		if (!nr)
			return -ENOMEM;
		m->rules = nr;
		m->rules[id] = NULL;
		m->max_rules = id + 1;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->steps = calloc(5, sizeof(*r->steps));
	r->name = strdup(name);
	if (!r->steps || !r->name) {
		free(r->steps);
		free(r->name);
		free(r);
		return -ENOMEM;
	}
	r->id = id;
	r->type = indep ? 3 : 1;
	if (indep) {
		r->steps[n++] = (struct crush_step){ .op = CRUSH_OP_SET_CHOOSELEAF_TRIES,
						     .arg1 = 5,
						     .take_class = -1 };
		r->steps[n++] = (struct crush_step){ .op = CRUSH_OP_SET_CHOOSE_TRIES,
						     .arg1 = 100,
						     .take_class = -1 };
	}
	r->steps[n++] = (struct crush_step){ .op = CRUSH_OP_TAKE,
					     .arg1 = c >= 0 ? rb->class_ids[c] : rb->id,
					     .take_class = c };
	r->steps[n++] = (struct crush_step){ .op = indep ? CRUSH_OP_CHOOSELEAF_INDEP
							 : CRUSH_OP_CHOOSELEAF_FIRSTN,
					     .arg1 = 0,
					     .arg2 = t,
					     .take_class = -1 };
	r->steps[n++] = (struct crush_step){ .op = CRUSH_OP_EMIT, .take_class = -1 };
	r->len = n;
	m->rules[id] = r;
	if (idp)
		*idp = id;
	return 0;
}

int
crush_edit_remove_rule(struct crush_map *m, int id)
{
	struct crush_rule *r;

	if (id < 0 || id >= m->max_rules || !m->rules[id])
		return -ENOENT;
	r = m->rules[id];
	m->rules[id] = NULL;
	free(r->name);
	free(r->steps);
	free(r);
	return 0;
}

/* A real bucket's weight from its children, recursively. */
static uint32_t
reweight(struct crush_map *m, struct crush_bucket *b, int depth)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < b->size; i++) {
		struct crush_bucket *c = b->items[i] < 0 ? real_bucket(m, b->items[i]) : NULL;

		if (c && depth < 64)
			b->item_weights[i] = reweight(m, c, depth + 1);
		sum += b->item_weights[i];
	}
	b->weight = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
	return b->weight;
}

int
crush_edit_print(struct crush_map *m, char **text)
{
	size_t len = 0;
	FILE *f;
	int rc;

	for (int i = 0; i < m->max_buckets; i++)
		if (m->buckets[i] && m->buckets[i]->class_id < 0)
			reweight(m, m->buckets[i], 0);
	*text = NULL;
	f = open_memstream(text, &len);
	if (!f)
		return -ENOMEM;
	rc = crush_text_print(m, f);
	if (fclose(f) && !rc)
		rc = -ENOMEM;
	if (rc) {
		free(*text);
		*text = NULL;
	}
	return rc;
}
