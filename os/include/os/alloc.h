/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Block allocator for the object store: a two-level bitmap over the
 * device's blocks (bit set = in use; one summary bit per 64-block word says
 * "this word has a free block"), next-fit from a cursor so consecutive
 * writes land together. An allocation of n blocks returns up to max extents
 * (contiguous when the space allows); 4 KiB and multi-MiB requests cost a
 * few word scans. State is rebuilt at mount from the onodes.
 *
 * Threading: the caller serialises (the store holds a mutex).
 */
#ifndef OS_ALLOC_H
#define OS_ALLOC_H

#include "cm/stdinc.h"

struct os_extent {
	uint64_t start; /* block */
	uint64_t len;   /* blocks */
};

struct os_alloc;

/* Blocks [0, nblocks); the first `reserved` blocks are never handed out. \return 0, -ENOMEM. */
int os_alloc_create(uint64_t nblocks, uint64_t reserved, struct os_alloc **ap);
void os_alloc_destroy(struct os_alloc *a);

/*
 * n blocks in at most max extents into ex. Leaves at least `keep` blocks
 * free (metadata reserve). \return the number of extents, -ENOSPC (nothing
 * taken).
 */
int os_alloc_get(struct os_alloc *a, uint64_t n, uint64_t keep, struct os_extent *ex, int max);

/* Give back. \return 0, -EINVAL (a block in it is not in use: a double free). */
int os_alloc_put(struct os_alloc *a, uint64_t start, uint64_t len);

/* Mark in use (mount-time rebuild). \return 0, -EEXIST (already in use: referenced twice). */
int os_alloc_mark(struct os_alloc *a, uint64_t start, uint64_t len);

uint64_t os_alloc_free_blocks(const struct os_alloc *a);
uint64_t os_alloc_total_blocks(const struct os_alloc *a);
bool os_alloc_is_used(const struct os_alloc *a, uint64_t block);

#endif
