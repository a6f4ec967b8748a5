/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The striper's arithmetic (pure): where the bytes of a stream are, by its
 * layout (cairn.h, "streams"). Logical byte L is in unit b = L / su; unit b
 * is in stripe s = b / sc at position p = b % sc; a set of sc objects holds
 * spo = os / su stripes, so the unit lives in object (s / spo) * sc + p at
 * (s % spo) * su + L % su.
 */
#ifndef CAIRN_STRIPER_MAP_H
#define CAIRN_STRIPER_MAP_H

#include "cairn/cairn.h"

#include <stddef.h>
#include <stdint.h>

#define SMAP_MAX_OBJECT (64ull << 20)
#define SMAP_MAX_UNITS  64 /* units per object, and objects a stripe */

/* One piece of a logical extent: in object objno at obj_off, len bytes,
 * which are bytes [buf_off, buf_off + len) of the extent. */
struct smap_ext {
	uint64_t objno, obj_off, len, buf_off;
};

/* \return 0, or -EINVAL when l is not a layout the striper takes. */
int cairn__smap_check(const struct cairn_layout *l);

/*
 * The pieces of [off, off + len), in logical order, one per stripe unit
 * touched (max of them into out). \return how many there are.
 */
size_t cairn__smap_extents(const struct cairn_layout *l, uint64_t off, uint64_t len,
			   struct smap_ext *out, size_t max);

/* How many bytes object objno holds of a stream of size bytes (its length
 * once the stream is truncated to size). */
uint64_t cairn__smap_obj_len(const struct cairn_layout *l, uint64_t objno, uint64_t size);

/* How many objects a stream of size bytes spans (objects 0 .. n-1). */
uint64_t cairn__smap_nobjects(const struct cairn_layout *l, uint64_t size);

#endif
