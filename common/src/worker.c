/* SPDX-License-Identifier: Apache-2.0 */
#include "reactor_internal.h"
#include "cm/log.h"

CM_LOG_SUBSYS(worker);

struct cm_worker_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct cm_reactor_msg_list q;
	bool shutdown;
	unsigned n;
	pthread_t *threads;
	char name[16];
};

static void *
worker_main(void *arg)
{
	struct cm_worker_pool *p = arg;
	struct cm_reactor_msg *m;

	pthread_setname_np(pthread_self(), p->name);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (TAILQ_EMPTY(&p->q) && !p->shutdown)
			pthread_cond_wait(&p->cond, &p->lock);
		m = TAILQ_FIRST(&p->q);
		if (!m)
			break; /* shut down and drained */
		TAILQ_REMOVE(&p->q, m, link);
		pthread_mutex_unlock(&p->lock);
		m->fn(m->arg);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int
cm_worker_pool_create(unsigned nthreads, const char *name, struct cm_worker_pool **pp)
{
	struct cm_worker_pool *p;
	int rc;

	if (nthreads == 0)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->threads = calloc(nthreads, sizeof(*p->threads));
	if (!p->threads) {
		free(p);
		return -ENOMEM;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	TAILQ_INIT(&p->q);
	snprintf(p->name, sizeof(p->name), "%s", name ? name : "worker");
	for (p->n = 0; p->n < nthreads; p->n++) {
		rc = pthread_create(&p->threads[p->n], NULL, worker_main, p);
		if (rc) {
			CM_ERR_RC(-rc, "worker thread create pool=%s", p->name);
			cm_worker_pool_destroy(p);
			return -rc;
		}
	}
	*pp = p;
	return 0;
}

void
cm_worker_pool_destroy(struct cm_worker_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->shutdown = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p->threads);
	free(p);
}

int
cm__worker_queue(struct cm_worker_pool *p, struct cm_reactor_msg *m)
{
	pthread_mutex_lock(&p->lock);
	if (p->shutdown) {
		pthread_mutex_unlock(&p->lock);
		return -ESHUTDOWN;
	}
	TAILQ_INSERT_TAIL(&p->q, m, link);
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static void
work_run(void *arg)
{
	struct cm_work *w = arg;

	w->fn(w->arg);
	if (w->done && w->r) {
		w->msg.fn = w->done;
		w->msg.arg = w->arg;
		w->msg.drop = NULL;
		cm_reactor_post(w->r, &w->msg);
	}
}

int
cm_worker_submit(struct cm_worker_pool *p, struct cm_reactor *r, struct cm_work *w)
{
	w->r = r;
	w->msg.fn = work_run;
	w->msg.arg = w;
	return cm__worker_queue(p, &w->msg);
}
