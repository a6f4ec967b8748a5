/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An LD_PRELOAD that counts the process's malloc, calloc and realloc
 * calls (through glibc's own __libc_* entry points) and prints the totals
 * to stderr at exit: "allocations: N". bench/client runs depth_bench under
 * it for two durations; the difference in allocations over the difference
 * in reads is what one read costs in allocations (start-up cancels out).
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t a, size_t b);
extern void *__libc_realloc(void *p, size_t n);

void *malloc(size_t n);
void *calloc(size_t a, size_t b);
void *realloc(void *p, size_t n);

static atomic_ulong g_allocs;

void *
malloc(size_t n)
{
	atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
	return __libc_malloc(n);
}

void *
calloc(size_t a, size_t b)
{
	atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
	return __libc_calloc(a, b);
}

void *
realloc(void *p, size_t n)
{
	atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
	return __libc_realloc(p, n);
}

__attribute__((destructor)) static void
report(void)
{
	fprintf(stderr, "allocations: %lu\n", (unsigned long)atomic_load(&g_allocs));
}
