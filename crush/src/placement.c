/* SPDX-License-Identifier: Apache-2.0 */
#include "crush_internal.h"
#include "crush/placement.h"

#include <string.h>

/* Bob Jenkins' 96-bit mix (public domain lookup2), as in Ceph's string hash. */
#define JMIX(a, b, c)         \
	do {                  \
		a -= b;       \
		a -= c;       \
		a ^= c >> 13; \
		b -= c;       \
		b -= a;       \
		b ^= a << 8;  \
		c -= a;       \
		c -= b;       \
		c ^= b >> 13; \
		a -= b;       \
		a -= c;       \
		a ^= c >> 12; \
		b -= c;       \
		b -= a;       \
		b ^= a << 16; \
		c -= a;       \
		c -= b;       \
		c ^= b >> 5;  \
		a -= b;       \
		a -= c;       \
		a ^= c >> 3;  \
		b -= c;       \
		b -= a;       \
		b ^= a << 10; \
		c -= a;       \
		c -= b;       \
		c ^= b >> 15; \
	} while (0)

static uint32_t
le32(const uint8_t *k)
{
	return (uint32_t)k[0] | (uint32_t)k[1] << 8 | (uint32_t)k[2] << 16 | (uint32_t)k[3] << 24;
}

uint32_t
crush_str_hash(const void *data, size_t length)
{
	const uint8_t *k = data;
	uint32_t a = 0x9e3779b9, b = a, c = 0;
	size_t len = length;

	while (len >= 12) {
		a += le32(k);
		b += le32(k + 4);
		c += le32(k + 8);
		JMIX(a, b, c);
		k += 12;
		len -= 12;
	}
	/* The last 11 bytes; c's lowest byte is taken by the length. */
	c += (uint32_t)length;
	switch (len) {
	case 11:
		c += (uint32_t)k[10] << 24;
		/* fall through */
	case 10:
		c += (uint32_t)k[9] << 16;
		/* fall through */
	case 9:
		c += (uint32_t)k[8] << 8;
		/* fall through */
	case 8:
		b += (uint32_t)k[7] << 24;
		/* fall through */
	case 7:
		b += (uint32_t)k[6] << 16;
		/* fall through */
	case 6:
		b += (uint32_t)k[5] << 8;
		/* fall through */
	case 5:
		b += k[4];
		/* fall through */
	case 4:
		a += (uint32_t)k[3] << 24;
		/* fall through */
	case 3:
		a += (uint32_t)k[2] << 16;
		/* fall through */
	case 2:
		a += (uint32_t)k[1] << 8;
		/* fall through */
	case 1:
		a += k[0];
		/* fall through */
	default:
		break;
	}
	JMIX(a, b, c);
	return c;
}

uint32_t
crush_stable_mod(uint32_t x, uint32_t b, uint32_t bmask)
{
	return (x & bmask) < b ? x & bmask : x & (bmask >> 1);
}

uint32_t
crush_pg_mask(uint32_t pg_num)
{
	uint32_t v = pg_num ? pg_num - 1 : 0;
	int bits = 0;

	while (v) {
		bits++;
		v >>= 1;
	}
	return (uint32_t)((1ull << bits) - 1);
}

size_t
crush_pg_cover(uint32_t pg_num_then, uint32_t pg, uint32_t pg_num_now, uint32_t *out, size_t max)
{
	uint32_t mask_then = crush_pg_mask(pg_num_then);
	size_t n = 0;

	if (!pg_num_then || !pg_num_now || pg >= pg_num_then)
		return 0;
	if (pg_num_now < pg_num_then) { /* merged: into one PG */
		if (max)
			out[0] = crush_stable_mod(pg, pg_num_now, crush_pg_mask(pg_num_now));
		return 1;
	}
	/* Split (or unchanged): its children, the PGs whose parent then is pg. */
	for (uint32_t c = 0; c < pg_num_now; c++) {
		if (crush_stable_mod(c, pg_num_then, mask_then) != pg)
			continue;
		if (n < max)
			out[n] = c;
		n++;
	}
	return n;
}

int
crush_object_to_pg(const struct crush_pool *p, const char *nspace, const char *name, uint32_t *pg)
{
	uint32_t ps;
	int rc = crush_object_hash(nspace, name, &ps);

	if (rc)
		return rc;
	*pg = crush_hash_to_pg(p, ps);
	return 0;
}

uint32_t
crush_hash_to_pg(const struct crush_pool *p, uint32_t ps)
{
	return crush_stable_mod(ps, p->pg_num, crush_pg_mask(p->pg_num));
}

int
crush_object_hash(const char *nspace, const char *name, uint32_t *out)
{
	uint32_t ps;

	if (nspace && nspace[0]) {
		size_t nl = strlen(nspace), ol = strlen(name);
		char stackbuf[512],
			*buf = nl + ol + 1 <= sizeof(stackbuf) ? stackbuf : malloc(nl + ol + 1);

		if (!buf)
			return -ENOMEM;
		memcpy(buf, nspace, nl);
		buf[nl] = '\037';
		memcpy(buf + nl + 1, name, ol);
		ps = crush_str_hash(buf, nl + ol + 1);
		if (buf != stackbuf)
			free(buf);
	} else {
		ps = crush_str_hash(name, strlen(name));
	}
	*out = ps;
	return 0;
}

static bool
osd_exists(const struct crush_osd_state *o, int max_osd, int32_t id)
{
	return id >= 0 && id < max_osd && o[id].exists;
}

void
crush_osd_weights(const struct crush_osd_state *osds, int max_osd, uint32_t *weights)
{
	for (int i = 0; i < max_osd; i++)
		weights[i] = osds[i].exists ? osds[i].in_weight : 0;
}

/* Position i of a pin, if usable: an OSD that exists and is in (-1: a hole the pin asks for). */
static bool
pin_usable(int32_t v, const struct crush_osd_state *osds, const uint32_t *w, int max_osd)
{
	return v == CRUSH_ITEM_NONE || v < 0 || (osd_exists(osds, max_osd, v) && w[v] > 0);
}

int
crush_pg_to_raw(const struct crush_map *m, const struct crush_pool *p, uint32_t seed,
		const struct crush_osd_state *osds, const uint32_t *w, int max_osd,
		const struct crush_upmap_item *upmaps, size_t nupmaps, const int32_t *pin, int npin,
		int32_t *raw, void *work)
{
	uint32_t pps, mod = crush_stable_mod(seed, p->pgp_num, crush_pg_mask(p->pgp_num));
	int n, k = 0, size = (int)p->size;
	bool ec = p->type == CRUSH_POOL_ERASURE;

	if (size <= 0 || size > 64)
		return 0;
	pps = p->hashpspool ? crush_hash32_2(mod, (uint32_t)p->id) : mod + (uint32_t)p->id;
	n = crush_do_rule(m, p->rule, (int)pps, raw, size, w, max_osd, work);
	/* Devices that do not exist go: compacted (replicated) or a hole (EC). */
	for (int i = 0; i < n; i++) {
		if (osd_exists(osds, max_osd, raw[i]))
			raw[k++] = raw[i];
		else if (ec)
			raw[k++] = CRUSH_ITEM_NONE;
	}
	n = k;
	/* pg_upmap_items: each pair, in order, as Ceph applies them. */
	for (size_t u = 0; u < nupmaps; u++) {
		const struct crush_upmap_item *it = &upmaps[u];
		int pos = -1;
		bool there = false;

		if (it->pool != p->id || it->seed != seed)
			continue;
		for (int i = 0; i < n; i++) {
			if (raw[i] == it->to) {
				there = true;
				break;
			}
			if (raw[i] == it->from && pos < 0 &&
			    !(it->to != CRUSH_ITEM_NONE && it->to >= 0 && it->to < max_osd &&
			      w[it->to] == 0))
				pos = i;
		}
		if (!there && pos >= 0)
			raw[pos] = it->to;
	}
	/*
	 * The pin, position by position. A pinned OSD that is gone or out
	 * gives way to the position's answer above, unless the pin holds that
	 * OSD at another position (then a hole: one OSD never serves two).
	 */
	if (pin && npin == size && (n == size || !ec)) {
		int32_t calc[64];

		memcpy(calc, raw, (size_t)n * sizeof(*raw));
		for (int i = 0; i < size; i++) {
			int32_t v = pin[i] < 0 ? CRUSH_ITEM_NONE : pin[i];

			if (!pin_usable(v, osds, w, max_osd)) {
				v = i < n ? calc[i] : CRUSH_ITEM_NONE;
				for (int j = 0; j < size && v != CRUSH_ITEM_NONE; j++)
					if (pin[j] == v && pin_usable(pin[j], osds, w, max_osd))
						v = CRUSH_ITEM_NONE;
			}
			raw[i] = v;
		}
		n = size;
	}
	return n;
}

int
crush_raw_to_up(const struct crush_pool *p, const struct crush_osd_state *osds, int max_osd,
		const int32_t *raw, int n, int32_t *up, int *primary)
{
	bool ec = p->type == CRUSH_POOL_ERASURE;
	int k = 0;

	/* Down devices go the same way; the primary is the first left. */
	*primary = -1;
	for (int i = 0; i < n; i++) {
		bool ok = raw[i] != CRUSH_ITEM_NONE && osd_exists(osds, max_osd, raw[i]) &&
			  osds[raw[i]].up;

		if (ok)
			up[k++] = raw[i];
		else if (ec)
			up[k++] = CRUSH_ITEM_NONE;
	}
	for (int i = 0; i < k; i++) {
		if (up[i] != CRUSH_ITEM_NONE) {
			*primary = up[i];
			break;
		}
	}
	return k;
}

int
crush_pg_to_up(const struct crush_map *m, const struct crush_pool *p, uint32_t seed,
	       const struct crush_osd_state *osds, const uint32_t *w, int max_osd,
	       const struct crush_upmap_item *upmaps, size_t nupmaps, int32_t *up, int *primary,
	       void *work)
{
	int32_t raw[64];
	int n = crush_pg_to_raw(m, p, seed, osds, w, max_osd, upmaps, nupmaps, NULL, 0, raw, work);

	return crush_raw_to_up(p, osds, max_osd, raw, n, up, primary);
}
