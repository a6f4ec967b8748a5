/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two-level bitmap allocator; see osd/alloc.h.
 */
#include "os/alloc.h"

struct os_alloc {
	uint64_t nblocks, reserved, nfree;
	uint64_t nwords;
	uint64_t *map;   /* bit set: block in use */
	uint64_t *avail; /* bit set: map word has a free block */
	uint64_t cursor; /* next block to look at */
};

static void
set_avail(struct os_alloc *a, uint64_t w)
{
	if (~a->map[w])
		a->avail[w / 64] |= 1ull << (w % 64);
	else
		a->avail[w / 64] &= ~(1ull << (w % 64));
}

int
os_alloc_create(uint64_t nblocks, uint64_t reserved, struct os_alloc **ap)
{
	struct os_alloc *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->nblocks = nblocks;
	a->nwords = (nblocks + 63) / 64;
	a->map = calloc(a->nwords + 1, sizeof(*a->map));
	a->avail = calloc(a->nwords / 64 + 2, sizeof(*a->avail));
	if (!a->map || !a->avail) {
		os_alloc_destroy(a);
		return -ENOMEM;
	}
	/* Bits past the end count as used. */
	for (uint64_t b = nblocks; b < a->nwords * 64; b++)
		a->map[b / 64] |= 1ull << (b % 64);
	for (uint64_t w = 0; w < a->nwords; w++)
		set_avail(a, w);
	a->nfree = nblocks;
	a->reserved = CM_MIN(reserved, nblocks);
	if (a->reserved)
		os_alloc_mark(a, 0, a->reserved);
	a->cursor = a->reserved;
	*ap = a;
	return 0;
}

void
os_alloc_destroy(struct os_alloc *a)
{
	if (!a)
		return;
	free(a->map);
	free(a->avail);
	free(a);
}

bool
os_alloc_is_used(const struct os_alloc *a, uint64_t b)
{
	return b >= a->nblocks || (a->map[b / 64] >> (b % 64)) & 1;
}

uint64_t
os_alloc_free_blocks(const struct os_alloc *a)
{
	return a->nfree;
}

uint64_t
os_alloc_total_blocks(const struct os_alloc *a)
{
	return a->nblocks;
}

/* Set or clear bits [start, start + len); \return how many bits changed state. */
static uint64_t
set_range(struct os_alloc *a, uint64_t start, uint64_t len, bool used)
{
	uint64_t changed = 0, b = start, end = start + len;

	while (b < end) {
		uint64_t w = b / 64, lo = b % 64, n = CM_MIN(64 - lo, end - b);
		uint64_t mask = (n == 64 ? ~0ull : ((1ull << n) - 1)) << lo;
		uint64_t before = a->map[w];

		a->map[w] = used ? before | mask : before & ~mask;
		changed += (uint64_t)__builtin_popcountll((before ^ a->map[w]) & mask);
		set_avail(a, w);
		b += n;
	}
	return changed;
}

static bool
range_state(const struct os_alloc *a, uint64_t start, uint64_t len, bool used)
{
	for (uint64_t b = start; b < start + len; b++)
		if (os_alloc_is_used(a, b) != used)
			return false;
	return true;
}

int
os_alloc_mark(struct os_alloc *a, uint64_t start, uint64_t len)
{
	if (start + len > a->nblocks || start + len < start)
		return -ERANGE;
	if (!range_state(a, start, len, false))
		return -EEXIST;
	a->nfree -= set_range(a, start, len, true);
	return 0;
}

int
os_alloc_put(struct os_alloc *a, uint64_t start, uint64_t len)
{
	if (start + len > a->nblocks || start + len < start || start < a->reserved)
		return -EINVAL;
	if (!range_state(a, start, len, true))
		return -EINVAL;
	a->nfree += set_range(a, start, len, false);
	return 0;
}

/* The first free block at or after b (a->nblocks if none before the end). */
static uint64_t
next_free(const struct os_alloc *a, uint64_t b)
{
	uint64_t w = b / 64;

	if (b >= a->nblocks)
		return a->nblocks;
	/* Within b's word first. */
	{
		uint64_t freebits = ~a->map[w] & (~0ull << (b % 64));

		if (freebits)
			return w * 64 + (uint64_t)__builtin_ctzll(freebits);
	}
	/* Then whole words, skipping 64 full words at a time through the summary. */
	for (w++; w < a->nwords;) {
		uint64_t sw = w / 64, bits = a->avail[sw] & (~0ull << (w % 64));

		if (bits) {
			w = sw * 64 + (uint64_t)__builtin_ctzll(bits);
			return w * 64 + (uint64_t)__builtin_ctzll(~a->map[w]);
		}
		w = (sw + 1) * 64;
	}
	return a->nblocks;
}

/* Length of the free run starting at b, at most max. */
static uint64_t
run_len(const struct os_alloc *a, uint64_t b, uint64_t max)
{
	uint64_t n = 0;

	while (n < max && b + n < a->nblocks) {
		uint64_t w = (b + n) / 64, lo = (b + n) % 64;
		uint64_t used = a->map[w] >> lo;

		if (used & 1)
			break;
		if (used == 0) {
			n += 64 - lo;
		} else {
			n += (uint64_t)__builtin_ctzll(used);
			break;
		}
	}
	return CM_MIN(n, max);
}

int
os_alloc_get(struct os_alloc *a, uint64_t n, uint64_t keep, struct os_extent *ex, int max)
{
	uint64_t got = 0, b = a->cursor;
	int k = 0;
	bool wrapped = false;

	if (n == 0 || max <= 0)
		return 0;
	if (a->nfree < n + keep)
		return -ENOSPC;
	while (got < n && k < max) {
		uint64_t len;

		b = next_free(a, b);
		if (b >= a->nblocks) {
			if (wrapped)
				break;
			wrapped = true;
			b = a->reserved;
			continue;
		}
		len = run_len(a, b, n - got);
		/* Prefer a run long enough for the rest over many small ones. */
		ex[k].start = b;
		ex[k].len = len;
		set_range(a, b, len, true);
		a->nfree -= len;
		got += len;
		k++;
		b += len;
	}
	if (got < n) {
		for (int i = 0; i < k; i++) {
			set_range(a, ex[i].start, ex[i].len, false);
			a->nfree += ex[i].len;
		}
		return -ENOSPC;
	}
	a->cursor = b >= a->nblocks ? a->reserved : b;
	return k;
}
