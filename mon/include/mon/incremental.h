/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Incrementals: what changed between two consecutive maps, so subscribers
 * that are a few epochs behind catch up with small messages instead of whole
 * maps. mon_map_apply(a, mon_map_diff(a, b)) encodes byte for byte as b
 * (OSDs, pools and upmap items are kept sorted by id / (pool, seed, from)).
 * Pure functions; allocate with malloc; free results with the protobuf-c
 * free_unpacked functions (allocator NULL).
 */
#ifndef MON_INCREMENTAL_H
#define MON_INCREMENTAL_H

#include <cairn/osdmap.pb-c.h>

/* PgPin pointers by (pool, seed): the canonical order (a qsort/bsearch comparator). */
int mon_pin_cmp(const void *x, const void *y);

/* BlocklistEntry pointers by entity: the canonical order. */
int mon_blocklist_cmp(const void *x, const void *y);

/* Sort a map's OSDs, pools, upmap items, pins and blocklist into canonical order. */
void mon_map_canonicalize(Cairn__Map__OsdMap *m);

/* \return 0, -EINVAL (b is not a's next epoch or another fsid), -ENOMEM. */
int mon_map_diff(const Cairn__Map__OsdMap *a, const Cairn__Map__OsdMap *b,
		 Cairn__Map__Incremental **incp);

/* \return 0, -ESTALE (inc is not for a's next epoch), -EBADMSG (inc does not fit), -ENOMEM. */
int mon_map_apply(const Cairn__Map__OsdMap *a, const Cairn__Map__Incremental *inc,
		  Cairn__Map__OsdMap **bp);

#endif
