/* SPDX-License-Identifier: Apache-2.0 */
/* Caches of freed objects (cm/tlcache.h). */
#include "cm/tlcache.h"

#include <stdlib.h>

#ifndef CAIRN_ASAN /* (nothing is cached: cm_tlc_put destroys at once) */
/* One key for every list of a thread: its destructor empties them all at thread exit. */
static pthread_key_t g_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_key_ok;
static __thread struct cm_tlc *t_lists; /* this thread's registered lists */

static void
drain(void *arg)
{
	for (struct cm_tlc *t = arg, *next; t; t = next) {
		next = t->next;
		while (t->head) {
			void *p = t->head;

			t->head = *(void **)p;
			t->kind->destroy(p);
		}
		t->n = 0;
		t->registered = false; /* (a later put on this thread registers it again) */
		t->next = NULL;
	}
	t_lists = NULL;
}

static void
key_init(void)
{
	g_key_ok = pthread_key_create(&g_key, drain) == 0;
}

/* t's objects are destroyed when its thread exits. \return false: they could not be. */
static bool
tlc_register(struct cm_tlc *t)
{
	if (t->registered)
		return true;
	pthread_once(&g_once, key_init);
	if (!g_key_ok || pthread_setspecific(g_key, t))
		return false;
	t->next = t_lists;
	t_lists = t;
	/* (the key names the newest list; each links to the one before) */
	t->registered = true;
	return true;
}
#endif

void *
cm_tlc_get(struct cm_tlc *t)
{
	struct cm_tlc_kind *k = t->kind;
	void *p = t->head;

	if (p) {
		t->head = *(void **)p;
		t->n--;
		return p;
	}
	if (!__atomic_load_n(&k->gn, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&k->mu);
	p = k->ghead;
	if (p) {
		k->ghead = *(void **)p;
		__atomic_store_n(&k->gn, k->gn - 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&k->mu);
	return p;
}

void
cm_tlc_put(struct cm_tlc *t, void *p)
{
	struct cm_tlc_kind *k = t->kind;

#ifndef CAIRN_ASAN
	if (t->n < k->max && tlc_register(t)) {
		*(void **)p = t->head;
		t->head = p;
		t->n++;
		return;
	}
	if (k->gmax) {
		pthread_mutex_lock(&k->mu);
		if (k->gn < k->gmax) {
			*(void **)p = k->ghead;
			k->ghead = p;
			__atomic_store_n(&k->gn, k->gn + 1, __ATOMIC_RELAXED);
			p = NULL;
		}
		pthread_mutex_unlock(&k->mu);
		if (!p)
			return;
	}
#endif
	k->destroy(p);
}
