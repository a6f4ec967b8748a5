/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DESIGN: epoll fallback. Each fd the reactor sees is registered once,
 * edge-triggered for both directions, and keeps one read-side waiter (recv,
 * accept, poll-in) and one write-side waiter (sendmsg, connect, poll-out).
 * A submit tries the syscall at once when the fd is believed ready (the result
 * is delivered on the next iteration, never inside submit); on EAGAIN it
 * clears the ready bit and waits for the edge. File ops run on worker threads
 * and come back through cm_reactor_post, with no allocation.
 */
#include "reactor_internal.h"
#include "cm/log.h"

#include <poll.h>
#include <sys/epoll.h>

CM_LOG_SUBSYS(reactor);

struct ep_fd {
	struct cm_io *rd;
	struct cm_io *wr;
	bool registered;
	bool rd_ready;
	bool wr_ready;
};

struct ep_be {
	int epfd;
	struct ep_fd *fds;
	unsigned nfds;
};

static int
ep_init(struct cm_reactor *r, unsigned entries)
{
	struct ep_be *be = calloc(1, sizeof(*be));
	struct epoll_event ev = { .events = EPOLLIN };

	(void)entries;
	if (!be)
		return -ENOMEM;
	be->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (be->epfd < 0) {
		int rc = -errno;

		free(be);
		return rc;
	}
	ev.data.ptr = NULL; /* NULL = the eventfd */
	if (epoll_ctl(be->epfd, EPOLL_CTL_ADD, r->event_fd, &ev) < 0) {
		int rc = -errno;

		close(be->epfd);
		free(be);
		return rc;
	}
	r->be = be;
	return 0;
}

static void
ep_fini(struct cm_reactor *r)
{
	struct ep_be *be = r->be;

	if (!be)
		return;
	close(be->epfd);
	free(be->fds);
	free(be);
	r->be = NULL;
}

static struct ep_fd *
ep_fd_get(struct ep_be *be, int fd)
{
	if (fd < 0)
		return NULL;
	if ((unsigned)fd >= be->nfds) {
		unsigned n = be->nfds ? be->nfds : 64;
		struct ep_fd *a;

		while (n <= (unsigned)fd)
			n *= 2;
		a = realloc(be->fds, sizeof(*a) * n);
		if (!a)
			return NULL;
		memset(a + be->nfds, 0, sizeof(*a) * (n - be->nfds));
		be->fds = a;
		be->nfds = n;
	}
	return &be->fds[fd];
}

static int
ep_register(struct ep_be *be, int fd, struct ep_fd *f)
{
	struct epoll_event ev;

	if (f->registered)
		return 0;
	ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
	ev.data.u64 = (uint64_t)fd + 1;
	if (epoll_ctl(be->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	f->registered = true;
	/* Assume ready: the first attempt tells. */
	f->rd_ready = true;
	f->wr_ready = true;
	return 0;
}

static bool
is_read_side(const struct cm_io *io)
{
	return io->op == CM_IO_RECV || io->op == CM_IO_ACCEPT ||
	       (io->op == CM_IO_POLL && (io->u.poll_events & POLLIN));
}

/*
 * Try the operation now. \return true when it finished (io->res set), false
 * when it must wait for readiness.
 */
static bool
ep_try(struct cm_io *io, struct ep_fd *f)
{
	ssize_t n;
	int err;
	socklen_t l;

	switch (io->op) {
	case CM_IO_RECV:
		n = recv(io->fd, io->u.rx.buf, io->u.rx.len, MSG_DONTWAIT);
		break;
	case CM_IO_SENDMSG:
		n = sendmsg(io->fd, &io->u.msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		break;
	case CM_IO_ACCEPT:
		n = accept4(io->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		break;
	case CM_IO_CONNECT:
		if (!(io->flags & CM_IO_F_CONNECT_POLL)) {
			io->flags |= CM_IO_F_CONNECT_POLL;
			n = connect(io->fd, (struct sockaddr *)&io->u.conn.addr,
				    io->u.conn.addrlen);
			if (n < 0 && errno == EINPROGRESS) {
				f->wr_ready = false;
				return false;
			}
			break;
		}
		if (!f->wr_ready)
			return false;
		err = 0;
		l = sizeof(err);
		if (getsockopt(io->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
			err = errno;
		io->res = -err;
		return true;
	case CM_IO_POLL: {
		struct pollfd p = { .fd = io->fd, .events = (short)io->u.poll_events };

		n = poll(&p, 1, 0);
		if (n == 0) {
			if (io->u.poll_events & POLLIN)
				f->rd_ready = false;
			else
				f->wr_ready = false;
			return false;
		}
		if (n > 0)
			n = p.revents;
		break;
	}
	default:
		n = -1;
		errno = EINVAL;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		if (is_read_side(io))
			f->rd_ready = false;
		else
			f->wr_ready = false;
		return false;
	}
	if (n < 0 && errno == EINTR)
		return false;
	io->res = n < 0 ? -errno : (int)n;
	return true;
}

static void
file_op_done(void *arg)
{
	struct cm_io *io = arg;

	cm__reactor_complete(io->r, io, io->res);
}

/* On a worker thread: run the syscall, then reuse the same node to post back. */
static void
file_op_run(void *arg)
{
	struct cm_io *io = arg;

	cm__reactor_file_op_exec(io);
	io->post.fn = file_op_done;
	io->post.arg = io;
	io->post.drop = NULL;
	cm_reactor_post(io->r, &io->post);
}

static int
ep_submit_file(struct cm_reactor *r, struct cm_io *io)
{
	int rc;

	io->post.fn = file_op_run;
	io->post.arg = io;
	rc = cm__worker_queue(r->workers, &io->post);
	if (rc)
		return rc;
	io->state = CM_IO_ST_INFLIGHT;
	return 0;
}

static int
ep_submit(struct cm_reactor *r, struct cm_io *io)
{
	struct ep_be *be = r->be;
	struct ep_fd *f;
	int rc;

	if (cm__io_is_file(io->op))
		return ep_submit_file(r, io);

	f = ep_fd_get(be, io->fd);
	if (!f)
		return io->fd < 0 ? -EBADF : -ENOMEM;
	rc = ep_register(be, io->fd, f);
	if (rc)
		return rc;
	if (is_read_side(io)) {
		if (f->rd)
			return -EBUSY;
		f->rd = io;
		if (f->rd_ready && ep_try(io, f)) {
			f->rd = NULL;
			cm__reactor_defer(r, io, io->res);
			return 0;
		}
	} else {
		if (f->wr)
			return -EBUSY;
		f->wr = io;
		if ((f->wr_ready || io->op == CM_IO_CONNECT) && ep_try(io, f)) {
			f->wr = NULL;
			cm__reactor_defer(r, io, io->res);
			return 0;
		}
	}
	io->state = CM_IO_ST_QUEUED;
	return 0;
}

static void
ep_cancel(struct cm_reactor *r, struct cm_io *io)
{
	struct ep_be *be = r->be;
	struct ep_fd *f;

	if (io->state != CM_IO_ST_QUEUED)
		return; /* in a worker: it completes on its own */
	f = ep_fd_get(be, io->fd);
	if (f && f->rd == io)
		f->rd = NULL;
	if (f && f->wr == io)
		f->wr = NULL;
	cm__reactor_defer(r, io, -ECANCELED);
}

static int
ep_wait(struct cm_reactor *r, int timeout_ms)
{
	struct ep_be *be = r->be;
	struct epoll_event evs[64];
	int n, count = 0;

	n = epoll_wait(be->epfd, evs, CM_ARRAY_SIZE(evs), timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		uint32_t e = evs[i].events;
		int fd;
		struct ep_fd *f;
		struct cm_io *io;

		if (evs[i].data.u64 == 0) {
			count += cm__reactor_drain_msgs(r);
			continue;
		}
		fd = (int)(evs[i].data.u64 - 1);
		f = ep_fd_get(be, fd);
		if (!f || !f->registered)
			continue;
		if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			f->rd_ready = true;
		if (e & (EPOLLOUT | EPOLLHUP | EPOLLERR))
			f->wr_ready = true;
		io = f->rd;
		if (io && f->rd_ready && ep_try(io, f)) {
			f->rd = NULL;
			cm__reactor_complete(r, io, io->res);
			count++;
		}
		/* The callback may have closed and reused the fd: look again. */
		f = ep_fd_get(be, fd);
		io = f ? f->wr : NULL;
		if (io && f->wr_ready && ep_try(io, f)) {
			f->wr = NULL;
			cm__reactor_complete(r, io, io->res);
			count++;
		}
	}
	return count;
}

static void
ep_close_fd(struct cm_reactor *r, int fd)
{
	struct ep_be *be = r->be;
	struct ep_fd *f;

	if (fd < 0 || (unsigned)fd >= be->nfds)
		return;
	f = &be->fds[fd];
	if (f->registered)
		epoll_ctl(be->epfd, EPOLL_CTL_DEL, fd, NULL);
	assert(!f->rd && !f->wr);
	memset(f, 0, sizeof(*f));
}

const struct cm_reactor_backend_ops cm__reactor_epoll_ops = {
	.name = "epoll",
	.init = ep_init,
	.fini = ep_fini,
	.submit = ep_submit,
	.cancel = ep_cancel,
	.wait = ep_wait,
	.close_fd = ep_close_fd,
};
