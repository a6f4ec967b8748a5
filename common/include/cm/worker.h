/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker threads for blocking work (RocksDB commits, libcurl, file I/O under
 * the epoll backend). A work item runs fn(arg) on a worker thread, then
 * done(arg) on the reactor that submitted it.
 *
 * Threading: submit from a reactor thread; create/destroy from any thread.
 */
#ifndef CM_WORKER_H
#define CM_WORKER_H

#include "cm/reactor.h"

struct cm_worker_pool;
typedef void (*cm_work_fn)(void *arg);

/* Caller-embedded; owned by the pool from submit until done runs. */
struct cm_work {
	cm_work_fn fn;   /* on a worker thread */
	cm_work_fn done; /* on the submitting reactor; may be NULL */
	void *arg;
	struct cm_reactor *r;
	struct cm_reactor_msg msg; /* queue node, then the completion's node */
};

/* \return 0, -EINVAL (nthreads 0), -ENOMEM, or pthread_create's error. */
int cm_worker_pool_create(unsigned nthreads, const char *name, struct cm_worker_pool **pp);

/* Finish queued work, join the threads, free. NULL is a no-op. */
void cm_worker_pool_destroy(struct cm_worker_pool *p);

/*
 * Queue w. done (if any) is posted to r when fn returns; r may be NULL when
 * done is NULL. \return 0, -ESHUTDOWN while the pool is being destroyed.
 */
int cm_worker_submit(struct cm_worker_pool *p, struct cm_reactor *r, struct cm_work *w);

#endif
