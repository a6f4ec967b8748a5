/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DESIGN: io_uring backend. Every cm_io is one SQE whose user_data is the
 * cm_io; SQEs accumulate and go to the kernel in one io_uring_submit per loop
 * iteration (inside submit_and_wait), or as soon as URING_EARLY_SUBMIT
 * device SQEs (file reads, writes, fsyncs) wait: a loop turn that handles
 * many completions (32 device reads done, each callback issuing the next)
 * would otherwise hold all the new work back until its last callback, and
 * the device's queue runs low meanwhile. Socket SQEs do not count: sending
 * those early too cost the CPU-bound local cluster 4 KiB writes (figures
 * in docs/design/store.md, "Limits and what is left"). Socket ops that come back -EAGAIN
 * (non-blocking sockets on kernels that do not arm poll for them) are retried
 * after a POLL_ADD, so callers never see -EAGAIN. Cross-thread wakeups are one
 * READ on the reactor's eventfd, re-armed after each completion.
 */
#include "reactor_internal.h"
#include "cm/log.h"

#include <liburing.h>
#include <poll.h>

CM_LOG_SUBSYS(reactor);

#define URING_TAG_IGNORE ((uint64_t)1) /* cancel requests: completion ignored */
#define URING_TAG_WAKE   ((uint64_t)2) /* eventfd read */

/* io->state values private to this backend */
#define URING_ST_POLL_RETRY 0x10 /* a POLL_ADD is in flight; resubmit the op after */

#define URING_EARLY_SUBMIT 8 /* device SQEs that go to the kernel without waiting for the loop */

struct uring_be {
	struct io_uring ring;
	uint64_t wake_val;
	bool wake_armed;
	unsigned file_sqes; /* device SQEs prepared since the last submit */
};

static struct io_uring_sqe *
get_sqe(struct uring_be *be)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&be->ring);

	if (!sqe) {
		/* SQ full: push the batch to the kernel and try again. */
		io_uring_submit(&be->ring);
		sqe = io_uring_get_sqe(&be->ring);
	}
	return sqe;
}

static int
arm_wake(struct cm_reactor *r, struct uring_be *be)
{
	struct io_uring_sqe *sqe = get_sqe(be);

	if (!sqe)
		return -EAGAIN;
	io_uring_prep_read(sqe, r->event_fd, &be->wake_val, sizeof(be->wake_val), 0);
	io_uring_sqe_set_data64(sqe, URING_TAG_WAKE);
	be->wake_armed = true;
	return 0;
}

static int
uring_init(struct cm_reactor *r, unsigned entries)
{
	struct io_uring_params p;
	struct uring_be *be = calloc(1, sizeof(*be));
	int rc;

	if (!be)
		return -ENOMEM;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_COOP_TASKRUN;
	rc = io_uring_queue_init_params(entries, &be->ring, &p);
	if (rc == -EINVAL) {
		memset(&p, 0, sizeof(p));
		rc = io_uring_queue_init_params(entries, &be->ring, &p);
	}
	if (rc) {
		free(be);
		return rc;
	}
	r->be = be;
	rc = arm_wake(r, be);
	if (rc) {
		io_uring_queue_exit(&be->ring);
		free(be);
		r->be = NULL;
	}
	return rc;
}

static void
uring_fini(struct cm_reactor *r)
{
	struct uring_be *be = r->be;

	if (!be)
		return;
	io_uring_queue_exit(&be->ring);
	free(be);
	r->be = NULL;
}

static void
prep(struct io_uring_sqe *sqe, struct cm_io *io)
{
	switch (io->op) {
	case CM_IO_RECV:
		io_uring_prep_recv(sqe, io->fd, io->u.rx.buf, io->u.rx.len, 0);
		break;
	case CM_IO_SENDMSG:
		io_uring_prep_sendmsg(sqe, io->fd, &io->u.msg, MSG_NOSIGNAL);
		break;
	case CM_IO_ACCEPT:
		io_uring_prep_accept(sqe, io->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		break;
	case CM_IO_CONNECT:
		io_uring_prep_connect(sqe, io->fd, (struct sockaddr *)&io->u.conn.addr,
				      io->u.conn.addrlen);
		break;
	case CM_IO_POLL:
		io_uring_prep_poll_add(sqe, io->fd, io->u.poll_events);
		break;
	case CM_IO_READV:
		io_uring_prep_readv(sqe, io->fd, io->u.file.iov, (unsigned)io->u.file.iovcnt,
				    (uint64_t)io->u.file.off);
		break;
	case CM_IO_WRITEV:
		io_uring_prep_writev(sqe, io->fd, io->u.file.iov, (unsigned)io->u.file.iovcnt,
				     (uint64_t)io->u.file.off);
		break;
	case CM_IO_WRITEV_DSYNC:
		io_uring_prep_writev2(sqe, io->fd, io->u.file.iov, (unsigned)io->u.file.iovcnt,
				      (uint64_t)io->u.file.off, RWF_DSYNC);
		break;
	case CM_IO_FSYNC:
		io_uring_prep_fsync(sqe, io->fd, IORING_FSYNC_DATASYNC);
		break;
	default:
		io_uring_prep_nop(sqe);
		break;
	}
	io_uring_sqe_set_data(sqe, io);
}

static int
uring_submit(struct cm_reactor *r, struct cm_io *io)
{
	struct uring_be *be = r->be;
	struct io_uring_sqe *sqe = get_sqe(be);

	if (!sqe)
		return -EAGAIN;
	prep(sqe, io);
	io->state = CM_IO_ST_INFLIGHT;
	if (cm__io_is_file(io->op) && ++be->file_sqes >= URING_EARLY_SUBMIT) {
		io_uring_submit(&be->ring);
		be->file_sqes = 0;
	}
	return 0;
}

static void
uring_cancel(struct cm_reactor *r, struct cm_io *io)
{
	struct uring_be *be = r->be;
	struct io_uring_sqe *sqe = get_sqe(be);

	if (!sqe)
		return;
	io_uring_prep_cancel(sqe, io, 0);
	io_uring_sqe_set_data64(sqe, URING_TAG_IGNORE);
}

static bool
is_socket_op(int op)
{
	return op == CM_IO_RECV || op == CM_IO_SENDMSG || op == CM_IO_ACCEPT;
}

static void
handle_cqe(struct cm_reactor *r, struct uring_be *be, struct cm_io *io, int res)
{
	if (io->state & URING_ST_POLL_RETRY) {
		/* The poll fired (or failed): resubmit the real op unless cancelled. */
		io->state &= (uint8_t)~URING_ST_POLL_RETRY;
		if (res >= 0 && !(io->flags & CM_IO_F_CANCEL)) {
			struct io_uring_sqe *sqe = get_sqe(be);

			if (sqe) {
				prep(sqe, io);
				return;
			}
			res = -EAGAIN;
		}
		if (io->flags & CM_IO_F_CANCEL)
			res = -ECANCELED;
	} else if (res == -EAGAIN && is_socket_op(io->op) && !(io->flags & CM_IO_F_CANCEL)) {
		struct io_uring_sqe *sqe = get_sqe(be);

		if (sqe) {
			io_uring_prep_poll_add(sqe, io->fd,
					       io->op == CM_IO_SENDMSG ? POLLOUT : POLLIN);
			io_uring_sqe_set_data(sqe, io);
			io->state |= URING_ST_POLL_RETRY;
			return;
		}
	} else if (io->op == CM_IO_CONNECT && res == -EINPROGRESS) {
		/* Non-blocking connect: wait for writability, then read SO_ERROR. */
		io->op = CM_IO_POLL;
		io->u.poll_events = POLLOUT;
		io->flags |= CM_IO_F_CONNECT_POLL;
		struct io_uring_sqe *sqe = get_sqe(be);

		if (sqe) {
			prep(sqe, io);
			return;
		}
	}
	if (io->flags & CM_IO_F_CONNECT_POLL) {
		int err = 0;
		socklen_t l = sizeof(err);

		if (res >= 0) {
			if (getsockopt(io->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
				err = errno;
			res = -err;
		}
	}
	cm__reactor_complete(r, io, res);
}

static int
uring_wait(struct cm_reactor *r, int timeout_ms)
{
	struct uring_be *be = r->be;
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts;
	unsigned head, seen;
	int rc, n = 0;

	be->file_sqes = 0;
	if (timeout_ms == 0) {
		rc = io_uring_submit(&be->ring);
	} else if (timeout_ms < 0) {
		rc = io_uring_submit_and_wait(&be->ring, 1);
	} else {
		ts.tv_sec = timeout_ms / 1000;
		ts.tv_nsec = (long long)(timeout_ms % 1000) * 1000000;
		rc = io_uring_submit_and_wait_timeout(&be->ring, &cqe, 1, &ts, NULL);
	}
	if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
		return rc;

	for (;;) {
		seen = 0;
		io_uring_for_each_cqe(&be->ring, head, cqe)
		{
			uint64_t tag = io_uring_cqe_get_data64(cqe);
			int res = cqe->res;

			seen++;
			if (tag == URING_TAG_IGNORE)
				continue;
			if (tag == URING_TAG_WAKE) {
				be->wake_armed = false;
				continue;
			}
			/* Advance before the callback: it may submit (and flush) more. */
			io_uring_cq_advance(&be->ring, seen);
			seen = 0;
			handle_cqe(r, be, (struct cm_io *)(uintptr_t)tag, res);
			n++;
			break;
		}
		if (seen)
			io_uring_cq_advance(&be->ring, seen);
		if (!io_uring_cq_ready(&be->ring))
			break;
	}
	if (!be->wake_armed) {
		n += cm__reactor_drain_msgs(r);
		arm_wake(r, be);
	}
	return n;
}

static void
uring_close_fd(struct cm_reactor *r, int fd)
{
	(void)r;
	(void)fd;
}

const struct cm_reactor_backend_ops cm__reactor_uring_ops = {
	.name = "io_uring",
	.init = uring_init,
	.fini = uring_fini,
	.submit = uring_submit,
	.cancel = uring_cancel,
	.wait = uring_wait,
	.close_fd = uring_close_fd,
};
