/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CRUSH_INTERNAL_H
#define CRUSH_INTERNAL_H

#include "crush/crush.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CRUSH_RH_LH_ENTRIES (128 * 2 + 2)
#define CRUSH_LL_ENTRIES    256

extern const int64_t crush__rh_lh_tbl[CRUSH_RH_LH_ENTRIES];
extern const int64_t crush__ll_tbl[CRUSH_LL_ENTRIES];

/* Add a bucket (takes ownership of b). \return 0, -EEXIST, -ENOMEM. */
int crush__add_bucket(struct crush_map *m, struct crush_bucket *b);
int crush__add_class(struct crush_map *m, const char *name);
/* Make room for devices [0, n) (new slots: no name, no class). \return 0, -ENOMEM. */
int crush__grow_devices(struct crush_map *m, int n);

#endif
