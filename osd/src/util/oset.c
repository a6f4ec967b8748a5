/* SPDX-License-Identifier: Apache-2.0 */
#include "oset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct oent {
	struct oent *next;
	uint32_t val;
	char name[];
};

/* FNV-1a: names are short and the table is rebuilt as it grows. */
static size_t
name_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return (size_t)h;
}

static struct oent **
find(const struct osd_oset *s, const char *name)
{
	struct oent **pp;

	if (!s->nb)
		return NULL;
	for (pp = &s->b[name_hash(name) & (s->nb - 1)]; *pp; pp = &(*pp)->next)
		if (strcmp((*pp)->name, name) == 0)
			return pp;
	return NULL;
}

uint32_t *
osd_oset_get(const struct osd_oset *s, const char *name)
{
	struct oent **pp = find(s, name);

	return pp ? &(*pp)->val : NULL;
}

static int
grow(struct osd_oset *s)
{
	size_t nb = s->nb ? s->nb * 2 : 64;
	struct oent **b = calloc(nb, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < s->nb; i++)
		while (s->b[i]) {
			struct oent *e = s->b[i];

			s->b[i] = e->next;
			e->next = b[name_hash(e->name) & (nb - 1)];
			b[name_hash(e->name) & (nb - 1)] = e;
		}
	free(s->b);
	s->b = b;
	s->nb = nb;
	return 0;
}

int
osd_oset_put(struct osd_oset *s, const char *name, uint32_t val)
{
	uint32_t *v = osd_oset_get(s, name);
	size_t len = strlen(name);
	struct oent *e;

	if (v) {
		*v = val;
		return 0;
	}
	if (s->n >= s->nb && grow(s))
		return -ENOMEM;
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	memcpy(e->name, name, len + 1);
	e->val = val;
	e->next = s->b[name_hash(name) & (s->nb - 1)];
	s->b[name_hash(name) & (s->nb - 1)] = e;
	s->n++;
	return 0;
}

int
osd_oset_del(struct osd_oset *s, const char *name)
{
	struct oent **pp = find(s, name), *e;

	if (!pp)
		return 0;
	e = *pp;
	*pp = e->next;
	free(e);
	s->n--;
	return 1;
}

void
osd_oset_clear(struct osd_oset *s)
{
	for (size_t i = 0; i < s->nb; i++)
		while (s->b[i]) {
			struct oent *e = s->b[i];

			s->b[i] = e->next;
			free(e);
		}
	free(s->b);
	memset(s, 0, sizeof(*s));
}

int
osd_oset_names(const struct osd_oset *s, char ***out, size_t *n)
{
	char **a = calloc(s->n + 1, sizeof(*a));
	size_t k = 0;

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < s->nb; i++)
		for (struct oent *e = s->b[i]; e; e = e->next)
			a[k++] = e->name;
	*out = a;
	*n = k;
	return 0;
}
