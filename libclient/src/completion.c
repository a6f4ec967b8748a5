/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcairn: completions, and completion queues for a caller's own event
 * loop (an eventfd it polls). A completion ends once; whoever holds it last
 * (the caller, an op in flight, the callback, the queue) frees it.
 */
#include "cairn/cairn.h"
#include "client_int.h"
#include "cm/tlcache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct cairn_cq {
	pthread_mutex_t mu;
	int fd; /* eventfd: readable while completions wait in ready */
	TAILQ_HEAD(, cairn_completion) ready;
	size_t n;    /* in ready */
	size_t live; /* its completions not freed yet */
};

/*
 * Freed completions wait in caches (cm/tlcache.h) for the next create: a
 * completion per op was a malloc per op of the caller (made on its thread,
 * often freed on the library's: the shared list brings them back).
 */
static void
comp_destroy(void *p)
{
	free(p);
}

static struct cm_tlc_kind g_comp_kind = CM_TLC_KIND(1024, 4096, comp_destroy);
static __thread struct cm_tlc t_comps = { .kind = &g_comp_kind };

static cairn_completion_t *
completion_new(cairn_callback_t cb, struct cairn_cq *cq, void *arg)
{
	cairn_completion_t *c = cm_tlc_get(&t_comps);

	if (c)
		memset(c, 0, sizeof(*c));
	else if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->cb = cb;
	c->cq = cq;
	c->arg = arg;
	if (cq) {
		pthread_mutex_lock(&cq->mu);
		cq->live++;
		pthread_mutex_unlock(&cq->mu);
	}
	return c;
}

cairn_completion_t *
cairn_completion_create(cairn_callback_t cb, void *arg)
{
	return completion_new(cb, NULL, arg);
}

cairn_completion_t *
cairn_completion_create_cq(cairn_cq_t *cq, void *arg)
{
	return cq ? completion_new(NULL, cq, arg) : NULL;
}

void *
cairn_completion_arg(cairn_completion_t *c)
{
	return c->arg;
}

/* (a queue's completion: with cq->mu held) */
static void
completion_free(cairn_completion_t *c)
{
	if (c->cq)
		c->cq->live--;
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	cm_tlc_put(&t_comps, c);
}

/* The eventfd reads empty once nothing waits (cq->mu held). */
static void
cq_drain(struct cairn_cq *cq)
{
	uint64_t v;

	if (!cq->n && read(cq->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		abort(); /* (an eventfd of ours: never fails but EAGAIN) */
}

void
cairn_completion_release(cairn_completion_t *c)
{
	struct cairn_cq *cq;
	bool keep;

	if (!c)
		return;
	cq = c->cq;
	if (cq)
		pthread_mutex_lock(&cq->mu);
	pthread_mutex_lock(&c->mu);
	if (c->queued) { /* done, never reaped */
		TAILQ_REMOVE(&cq->ready, c, qlink);
		c->queued = false;
		cq->n--;
		cq_drain(cq);
	}
	keep = c->busy || c->in_cb;
	c->released = true;
	pthread_mutex_unlock(&c->mu);
	if (!keep)
		completion_free(c);
	if (cq)
		pthread_mutex_unlock(&cq->mu);
}

void
cairn__comp_attach(cairn_completion_t *c)
{
	pthread_mutex_lock(&c->mu);
	c->busy = true;
	pthread_mutex_unlock(&c->mu);
}

int
cairn_completion_wait(cairn_completion_t *c)
{
	int rc;

	pthread_mutex_lock(&c->mu);
	while (!c->done)
		pthread_cond_wait(&c->cv, &c->mu);
	rc = c->rc;
	pthread_mutex_unlock(&c->mu);
	return rc;
}

bool
cairn_completion_done(cairn_completion_t *c)
{
	bool d;

	pthread_mutex_lock(&c->mu);
	d = c->done;
	pthread_mutex_unlock(&c->mu);
	return d;
}

int
cairn_completion_rc(cairn_completion_t *c)
{
	return cairn_completion_wait(c);
}

struct cairn_version
cairn_completion_version(cairn_completion_t *c)
{
	struct cairn_version v;

	cairn_completion_wait(c);
	pthread_mutex_lock(&c->mu);
	v = c->ver;
	pthread_mutex_unlock(&c->mu);
	return v;
}

/* A queue's completion ends: into its ready list, and the eventfd ticks. */
static void
complete_cq(cairn_completion_t *c, int rc, const struct cairn_version *v)
{
	struct cairn_cq *cq = c->cq;
	const uint64_t one = 1;
	bool gone;

	pthread_mutex_lock(&cq->mu);
	pthread_mutex_lock(&c->mu);
	c->rc = rc;
	if (v)
		c->ver = *v;
	c->done = true;
	c->busy = false;
	gone = c->released;
	if (!gone) {
		c->queued = true;
		TAILQ_INSERT_TAIL(&cq->ready, c, qlink);
		if (cq->n++ == 0 && write(cq->fd, &one, sizeof(one)) != sizeof(one))
			abort(); /* (a counter of at most 1: never full) */
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (gone) /* released while its op ran: nobody reaps it */
		completion_free(c);
	pthread_mutex_unlock(&cq->mu);
}

void
cairn__complete_v(cairn_completion_t *c, int rc, const struct cairn_version *v)
{
	cairn_callback_t cb;
	void *arg;
	bool gone;

	if (c->cq) {
		complete_cq(c, rc, v);
		return;
	}
	pthread_mutex_lock(&c->mu);
	c->rc = rc;
	if (v)
		c->ver = *v;
	c->done = true;
	c->busy = false;
	c->in_cb = true;
	cb = c->cb;
	arg = c->arg;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (cb)
		cb(c, arg);
	pthread_mutex_lock(&c->mu);
	c->in_cb = false;
	gone = c->released;
	pthread_mutex_unlock(&c->mu);
	if (gone) /* released in the callback, or while the op ran */
		completion_free(c);
}

void
cairn__complete(cairn_completion_t *c, int rc)
{
	cairn__complete_v(c, rc, NULL);
}

/* ---------- completion queues ---------- */

int
cairn_cq_create(cairn_cq_t **cqp)
{
	struct cairn_cq *cq = calloc(1, sizeof(*cq));

	if (!cq)
		return -ENOMEM;
	cq->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cq->fd < 0) {
		int rc = -errno;

		free(cq);
		return rc;
	}
	pthread_mutex_init(&cq->mu, NULL);
	TAILQ_INIT(&cq->ready);
	*cqp = cq;
	return 0;
}

int
cairn_cq_fd(cairn_cq_t *cq)
{
	return cq->fd;
}

size_t
cairn_cq_reap(cairn_cq_t *cq, cairn_completion_t **out, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&cq->mu);
	while (n < max && !TAILQ_EMPTY(&cq->ready)) {
		cairn_completion_t *c = TAILQ_FIRST(&cq->ready);

		TAILQ_REMOVE(&cq->ready, c, qlink);
		pthread_mutex_lock(&c->mu);
		c->queued = false;
		pthread_mutex_unlock(&c->mu);
		cq->n--;
		out[n++] = c;
	}
	cq_drain(cq);
	pthread_mutex_unlock(&cq->mu);
	return n;
}

int
cairn_cq_destroy(cairn_cq_t *cq)
{
	size_t live;

	if (!cq)
		return 0;
	pthread_mutex_lock(&cq->mu);
	live = cq->live;
	pthread_mutex_unlock(&cq->mu);
	if (live)
		return -EBUSY; /* completions of it are still held (or not reaped) */
	pthread_mutex_destroy(&cq->mu);
	close(cq->fd);
	free(cq);
	return 0;
}
