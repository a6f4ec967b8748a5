/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A set of object names, each with a small value: the objects a copy of a
 * PG lacks, and on the primary which acting OSDs lack them. Single thread.
 */
#ifndef OSD_UTIL_OSET_H
#define OSD_UTIL_OSET_H

#include <stddef.h>
#include <stdint.h>

struct oent;

struct osd_oset {
	struct oent **b;
	size_t nb, n;
};

/* The value of name, or NULL when it is not in the set. */
uint32_t *osd_oset_get(const struct osd_oset *s, const char *name);
/* Add name (or set its value). \return 0 or -ENOMEM. */
int osd_oset_put(struct osd_oset *s, const char *name, uint32_t val);
/* Remove name. \return whether it was there. */
int osd_oset_del(struct osd_oset *s, const char *name);
void osd_oset_clear(struct osd_oset *s);
/*
 * The names, in no order, valid until the set changes (free the array with
 * free()). \return 0 or -ENOMEM.
 */
int osd_oset_names(const struct osd_oset *s, char ***out, size_t *n);

#endif
