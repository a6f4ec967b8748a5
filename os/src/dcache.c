/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data cache: device blocks by physical block number, least recently
 * used out first. Reads put the blocks they fetched and checked; any write
 * to a block (registered in the pending map at prepare, before it reaches
 * the device) takes it out and moves the generation on, so a read that
 * fetched a block before that write cannot put the old content back.
 * docs/design/store.md, "Data cache".
 */
#include "store_internal.h"

struct os_dent {
	uint64_t pblock;
	struct os_dent *hnext;
	TAILQ_ENTRY(os_dent) lru;
	uint8_t data[];
};

static size_t
dc_hash(const struct os_dcache *c, uint64_t pblock)
{
	return (size_t)((pblock * 0x9e3779b97f4a7c15ull) >> 20) & (c->nb - 1);
}

int
os_dcache_init(struct os_dcache *c, uint64_t bytes, uint32_t B)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	TAILQ_INIT(&c->lru);
	c->B = B;
	c->cap = (size_t)(bytes / B);
	if (!c->cap)
		return 0;
	for (c->nb = 64; c->nb < c->cap; c->nb <<= 1)
		;
	c->b = calloc(c->nb, sizeof(*c->b));
	if (!c->b) {
		c->cap = 0;
		return -ENOMEM;
	}
	return 0;
}

void
os_dcache_fini(struct os_dcache *c)
{
	struct os_dent *e;

	while ((e = TAILQ_FIRST(&c->lru))) {
		TAILQ_REMOVE(&c->lru, e, lru);
		free(e);
	}
	free(c->b);
	c->b = NULL;
	c->n = c->cap = 0;
	pthread_mutex_destroy(&c->mu);
}

static struct os_dent **
dc_find(struct os_dcache *c, uint64_t pblock)
{
	struct os_dent **pp = &c->b[dc_hash(c, pblock)];

	while (*pp && (*pp)->pblock != pblock)
		pp = &(*pp)->hnext;
	return pp;
}

bool
os_dcache_get(struct os_dcache *c, uint64_t pblock, void *dst)
{
	struct os_dent *e;

	if (!c->cap)
		return false;
	pthread_mutex_lock(&c->mu);
	e = *dc_find(c, pblock);
	if (e) {
		memcpy(dst, e->data, c->B);
		TAILQ_REMOVE(&c->lru, e, lru);
		TAILQ_INSERT_HEAD(&c->lru, e, lru);
		c->hits++;
	} else {
		c->misses++;
	}
	pthread_mutex_unlock(&c->mu);
	return e != NULL;
}

uint64_t
os_dcache_gen(struct os_dcache *c)
{
	return __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE);
}

void
os_dcache_put(struct os_dcache *c, uint64_t pblock, const void *src, uint64_t gen)
{
	struct os_dent **pp, *e;

	if (!c->cap)
		return;
	pthread_mutex_lock(&c->mu);
	if (gen != c->gen) { /* a write since the read began: src may be old */
		pthread_mutex_unlock(&c->mu);
		return;
	}
	pp = dc_find(c, pblock);
	if ((e = *pp)) {
		memcpy(e->data, src, c->B);
		TAILQ_REMOVE(&c->lru, e, lru);
		TAILQ_INSERT_HEAD(&c->lru, e, lru);
		pthread_mutex_unlock(&c->mu);
		return;
	}
	if (c->n >= c->cap) {
		/* Reuse the coldest entry. */
		struct os_dent **op;

		e = TAILQ_LAST(&c->lru, os_dent_q);
		TAILQ_REMOVE(&c->lru, e, lru);
		op = dc_find(c, e->pblock);
		*op = e->hnext;
		c->n--;
		pp = dc_find(c, pblock); /* the unlink may have moved it */
	} else {
		e = malloc(sizeof(*e) + c->B);
		if (!e) {
			pthread_mutex_unlock(&c->mu);
			return;
		}
	}
	e->pblock = pblock;
	memcpy(e->data, src, c->B);
	e->hnext = NULL;
	*pp = e;
	TAILQ_INSERT_HEAD(&c->lru, e, lru);
	c->n++;
	pthread_mutex_unlock(&c->mu);
}

void
os_dcache_inval(struct os_dcache *c, uint64_t pblock, uint64_t n)
{
	if (!c->cap)
		return;
	pthread_mutex_lock(&c->mu);
	__atomic_store_n(&c->gen, c->gen + 1, __ATOMIC_RELEASE);
	for (uint64_t b = pblock; c->n && b < pblock + n; b++) {
		struct os_dent **pp = dc_find(c, b), *e = *pp;

		if (!e)
			continue;
		*pp = e->hnext;
		TAILQ_REMOVE(&c->lru, e, lru);
		free(e);
		c->n--;
	}
	pthread_mutex_unlock(&c->mu);
}
