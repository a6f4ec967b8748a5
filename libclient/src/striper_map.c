/* SPDX-License-Identifier: Apache-2.0 */
/* The striper's arithmetic; see striper_map.h. */
#include "striper_map.h"

#include <errno.h>

int
cairn__smap_check(const struct cairn_layout *l)
{
	if (!l->stripe_unit || !l->stripe_count || l->stripe_count > SMAP_MAX_UNITS ||
	    !l->object_size || l->object_size > SMAP_MAX_OBJECT ||
	    l->object_size % l->stripe_unit || l->object_size / l->stripe_unit > SMAP_MAX_UNITS)
		return -EINVAL;
	return 0;
}

size_t
cairn__smap_extents(const struct cairn_layout *l, uint64_t off, uint64_t len, struct smap_ext *out,
		    size_t max)
{
	uint64_t su = l->stripe_unit, sc = l->stripe_count, spo = l->object_size / su;
	size_t n = 0;

	for (uint64_t done = 0; done < len; n++) {
		uint64_t at = off + done, b = at / su, s = b / sc, in = at % su;
		uint64_t piece = su - in < len - done ? su - in : len - done;

		if (n < max) {
			out[n].objno = (s / spo) * sc + b % sc;
			out[n].obj_off = (s % spo) * su + in;
			out[n].len = piece;
			out[n].buf_off = done;
		}
		done += piece;
	}
	return n;
}

uint64_t
cairn__smap_obj_len(const struct cairn_layout *l, uint64_t objno, uint64_t size)
{
	uint64_t su = l->stripe_unit, sc = l->stripe_count, spo = l->object_size / su;
	uint64_t set = objno / sc, pos = objno % sc, olen = 0;

	/* The object's units in logical order: stripe set*spo + k, position pos. */
	for (uint64_t k = 0; k < spo; k++) {
		uint64_t start = ((set * spo + k) * sc + pos) * su;

		if (start >= size)
			break;
		olen = k * su + (size - start < su ? size - start : su);
	}
	return olen;
}

uint64_t
cairn__smap_nobjects(const struct cairn_layout *l, uint64_t size)
{
	uint64_t su = l->stripe_unit, sc = l->stripe_count, spo = l->object_size / su;
	uint64_t units, stripes, sets;

	if (!size)
		return 0;
	units = (size + su - 1) / su;
	stripes = (units + sc - 1) / sc;
	sets = (stripes + spo - 1) / spo;
	/* Every object of the full sets before the last, and of the last set the
	 * positions its units reached (all of them once it has a full stripe). */
	if (stripes - (sets - 1) * spo > 1)
		return sets * sc;
	return (sets - 1) * sc + (units - (sets - 1) * spo * sc);
}
