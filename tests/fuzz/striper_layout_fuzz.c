/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stream's layout as libcairn reads it from the cluster (object 0's
 * cairn.layout xattr: stripe unit and count LE32, object size LE64), then
 * the extents of an (offset, length) from the input: a layout the striper
 * takes must map every byte once, inside one object, within the object
 * size; one it refuses must be refused, never divided by.
 */
#include "striper_map.h"
#include "cm/stdinc.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cairn_layout l;
	struct smap_ext ext[64];
	uint64_t off, len, sum = 0, prev_end;
	size_t n;

	if (size < 16 + 16)
		return 0;
	l.stripe_unit = cm_get_le32(data);
	l.stripe_count = cm_get_le32(data + 4);
	l.object_size = cm_get_le64(data + 8);
	if (cairn__smap_check(&l))
		return 0;
	off = cm_get_le64(data + 16) & ((1ull << 50) - 1);
	len = cm_get_le64(data + 24) % (63ull * l.stripe_unit + 1); /* at most 64 pieces */
	n = cairn__smap_extents(&l, off, len, ext, 64);
	if (n > 64)
		abort(); /* (len spans at most 64 units, one piece each: fits) */
	prev_end = 0;
	for (size_t i = 0; i < n; i++) {
		if (!ext[i].len || ext[i].buf_off != prev_end ||
		    ext[i].obj_off + ext[i].len > l.object_size)
			abort();
		prev_end = ext[i].buf_off + ext[i].len;
		sum += ext[i].len;
		/* the object holds this piece at a size that ends past it */
		if (cairn__smap_obj_len(&l, ext[i].objno, off + ext[i].buf_off + ext[i].len) <
		    ext[i].obj_off + ext[i].len)
			abort();
	}
	if (sum != len)
		abort();
	if (len && cairn__smap_nobjects(&l, off + len) <= ext[n - 1].objno)
		abort();
	return 0;
}
