/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Caches of freed objects of one kind, so a hot path allocates nothing in
 * the steady state: a list per thread (no lock: an object freed on a
 * thread goes to that thread's list) and, past its bound, one list shared
 * by every thread under a mutex, where a thread that frees what another
 * makes (an op made by the caller, completed on the library's thread)
 * leaves them for the maker. A thread's list is destroyed when the thread
 * exits. Objects need at least a pointer's room: the lists link through
 * their first bytes, which a cached object may not keep.
 *
 * Under AddressSanitizer (CAIRN_ASAN) nothing is cached: a use after free
 * is still caught.
 *
 *   static struct cm_tlc_kind g_kind = CM_TLC_KIND(1024, 4096, destroy_fn);
 *   static __thread struct cm_tlc t_cache = { .kind = &g_kind };
 *   p = cm_tlc_get(&t_cache);   (NULL: allocate one)
 *   cm_tlc_put(&t_cache, p);    (cached, or destroy_fn(p))
 */
#ifndef CM_TLCACHE_H
#define CM_TLCACHE_H

#include <pthread.h>
#include <stdbool.h>

struct cm_tlc_kind {
	unsigned max;               /* kept per thread */
	unsigned gmax;              /* kept in the shared list */
	void (*destroy)(void *obj); /* frees one that is not kept */
	pthread_mutex_t mu;         /* the shared list */
	void *ghead;
	unsigned gn; /* (read without mu as a hint: __atomic) */
};

#define CM_TLC_KIND(max_, gmax_, destroy_)                              \
	{                                                               \
		.max = (max_), .gmax = (gmax_), .destroy = (destroy_),  \
		.mu = PTHREAD_MUTEX_INITIALIZER, .ghead = NULL, .gn = 0 \
	}

/* One thread's list of a kind (a __thread variable, .kind set statically). */
struct cm_tlc {
	struct cm_tlc_kind *kind;
	void *head;
	unsigned n;
	bool registered;     /* destroyed at thread exit */
	struct cm_tlc *next; /* this thread's registered lists */
};

/* A cached object (its contents are what it held when put, but the first pointer's worth), or NULL.
 */
void *cm_tlc_get(struct cm_tlc *t);

/* Keep obj for a later cm_tlc_get, or destroy it (the lists are full). */
void cm_tlc_put(struct cm_tlc *t, void *obj);

#endif
