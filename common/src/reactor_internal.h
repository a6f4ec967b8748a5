/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CM_REACTOR_INTERNAL_H
#define CM_REACTOR_INTERNAL_H

#include "cm/reactor.h"
#include "cm/worker.h"

#include <pthread.h>

TAILQ_HEAD(cm_io_list, cm_io);
TAILQ_HEAD(cm_reactor_msg_list, cm_reactor_msg);

enum cm_io_state {
	CM_IO_ST_IDLE = 0,
	CM_IO_ST_QUEUED,   /* waiting for readiness (epoll) or SQE space */
	CM_IO_ST_INFLIGHT, /* with the kernel or a worker */
	CM_IO_ST_DEFERRED, /* result known, callback on the next iteration */
};

/* io->flags */
#define CM_IO_F_CANCEL       0x1 /* cancel requested */
#define CM_IO_F_CONNECT_POLL 0x2 /* connect finishing through a poll for POLLOUT */

/* Device I/O (the epoll backend's workers run it; io_uring counts it for early submits). */
static inline bool
cm__io_is_file(uint8_t op)
{
	return op == CM_IO_READV || op == CM_IO_WRITEV || op == CM_IO_WRITEV_DSYNC ||
	       op == CM_IO_FSYNC;
}

struct cm_reactor_backend_ops {
	const char *name;
	int (*init)(struct cm_reactor *r, unsigned entries);
	void (*fini)(struct cm_reactor *r);
	int (*submit)(struct cm_reactor *r, struct cm_io *io);
	void (*cancel)(struct cm_reactor *r, struct cm_io *io);
	/* Submit batched work and wait up to timeout_ms; run completions. \return count. */
	int (*wait)(struct cm_reactor *r, int timeout_ms);
	void (*close_fd)(struct cm_reactor *r, int fd);
};

struct cm_reactor {
	const struct cm_reactor_backend_ops *ops;
	void *be; /* backend state */
	char name[32];

	struct cm_timer **heap; /* 1-based min-heap on deadline */
	unsigned heap_n, heap_cap;

	struct cm_io_list deferred; /* results ready, callbacks pending */

	pthread_mutex_t msg_lock;
	struct cm_reactor_msg_list msgs;
	atomic_bool wake_pending;
	int event_fd;

	atomic_bool stop;
	struct cm_worker_pool *workers;
	bool own_workers;
};

extern const struct cm_reactor_backend_ops cm__reactor_uring_ops;
extern const struct cm_reactor_backend_ops cm__reactor_epoll_ops;

/* Finish io with res: clear it, then call back. Backends call this from wait(). */
void cm__reactor_complete(struct cm_reactor *r, struct cm_io *io, int res);

/* Queue io's callback for the next iteration (never inside a submit). */
void cm__reactor_defer(struct cm_reactor *r, struct cm_io *io, int res);

/* Drain the eventfd and run posted messages. \return count run. */
int cm__reactor_drain_msgs(struct cm_reactor *r);

/* Queue a raw node on a worker pool: m->fn(m->arg) runs on a worker thread. */
int cm__worker_queue(struct cm_worker_pool *p, struct cm_reactor_msg *m);

/* Run the blocking syscall of a file op (epoll backend, on a worker). */
void cm__reactor_file_op_exec(struct cm_io *io);

#endif
