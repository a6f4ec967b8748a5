/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A set of object names, each with a small value: the objects a copy of a
 * PG lacks, and on the primary which acting OSDs lack them. Single thread.
 */
#ifndef OSD_OSET_H
#define OSD_OSET_H

#include <stddef.h>
#include <stdint.h>

struct oent;

struct oset {
	struct oent **b;
	size_t nb, n;
};

/* The value of name, or NULL when it is not in the set. */
uint32_t *oset_get(const struct oset *s, const char *name);
/* Add name (or set its value). \return 0 or -ENOMEM. */
int oset_put(struct oset *s, const char *name, uint32_t val);
/* Remove name. \return whether it was there. */
int oset_del(struct oset *s, const char *name);
void oset_clear(struct oset *s);
/*
 * The names, in no order, valid until the set changes (free the array with
 * free()). \return 0 or -ENOMEM.
 */
int oset_names(const struct oset *s, char ***out, size_t *n);

#endif
