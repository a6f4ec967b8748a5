/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Editing a parsed map, as the monitors do when OSDs boot, hosts appear and
 * pools get rules: change devices, real buckets and rules, then
 * crush_edit_print() recomputes every bucket's weight bottom-up and prints
 * the text form. Shadow (device-class) trees of the edited map are stale
 * until that text is parsed again, so: parse -> edit -> print -> parse.
 * Shadow ids already in the map are kept (they are printed), new ones are
 * assigned at the next parse.
 *
 * Threading: like the map itself, one writer at a time.
 */
#ifndef CRUSH_EDIT_H
#define CRUSH_EDIT_H

#include "crush/crush.h"

/* Add device id (or rename it / change its class; cls NULL: none). \return 0, -EEXIST (name used by
 * another item), -EINVAL, -ENOMEM. */
int crush_edit_set_device(struct crush_map *m, int32_t id, const char *name, const char *cls);

/*
 * Add a straw2 bucket of type `type` under parent (NULL: a new root).
 * \return 0 (*idp the new id), -EEXIST (name taken), -ENOENT (no such type or parent), -ENOMEM.
 */
int crush_edit_add_bucket(struct crush_map *m, const char *name, const char *type,
			  const char *parent, int32_t *idp);

/* Put item in bucket with weight (16.16), or change its weight there. \return 0, -ENOENT, -EINVAL
 * (a loop), -ENOMEM. */
int crush_edit_set_item(struct crush_map *m, int32_t bucket, int32_t item, uint32_t weight);

/* Unlink item from every bucket; a device also loses its name (the id is free again). \return 0,
 * -ENOENT, -ENOTEMPTY (a bucket with items). */
int crush_edit_remove_item(struct crush_map *m, int32_t item);

/*
 * Add a rule "take root [class cls]; chooseleaf firstn|indep 0 type T; emit"
 * (erasure rules, indep, also get set_chooseleaf_tries 5 / set_choose_tries
 * 100 as Ceph gives them). \return 0 (*idp its id), -EEXIST, -ENOENT (root,
 * type or class unknown), -ENOMEM.
 */
int crush_edit_add_rule(struct crush_map *m, const char *name, const char *root, const char *cls,
			const char *failure_type, bool indep, int *idp);

/* \return 0, -ENOENT. */
int crush_edit_remove_rule(struct crush_map *m, int id);

/* Re-weight the tree and print the map. *text is malloc'd. \return 0, -ENOMEM. */
int crush_edit_print(struct crush_map *m, char **text);

#endif
