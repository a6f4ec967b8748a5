/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DESIGN: the backend-independent half of the reactor: timers (a binary
 * min-heap of caller-embedded cm_timer), deferred completions (so no callback
 * ever runs inside a submit call), cross-thread messages (a mutex-guarded
 * intrusive list plus an eventfd that is written only on the empty->non-empty
 * edge) and the loop itself. Backends only submit, cancel and wait.
 */
#include "reactor_internal.h"
#include "cm/log.h"

#include <sys/eventfd.h>
#include <poll.h>

CM_LOG_SUBSYS(reactor);

static __thread struct cm_reactor *t_reactor;

static void send_msg_run(void *arg);

void
cm_reactor_opts_init(struct cm_reactor_opts *o, size_t size)
{
	memset(o, 0, size);
	o->opts_size = size;
	o->backend = CM_REACTOR_AUTO;
	o->entries = 256;
}

int
cm_reactor_backend_parse(const char *s, enum cm_reactor_backend *out)
{
	if (!s || !*s || strcmp(s, "auto") == 0)
		*out = CM_REACTOR_AUTO;
	else if (strcmp(s, "uring") == 0 || strcmp(s, "io_uring") == 0)
		*out = CM_REACTOR_URING;
	else if (strcmp(s, "epoll") == 0)
		*out = CM_REACTOR_EPOLL;
	else
		return -EINVAL;
	return 0;
}

int
cm_reactor_create(const struct cm_reactor_opts *o, struct cm_reactor **rp)
{
	struct cm_reactor_opts d;
	struct cm_reactor *r;
	int rc;

	if (!o) {
		cm_reactor_opts_init(&d, sizeof(d));
		o = &d;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	snprintf(r->name, sizeof(r->name), "%s", o->name ? o->name : "reactor");
	TAILQ_INIT(&r->deferred);
	TAILQ_INIT(&r->msgs);
	pthread_mutex_init(&r->msg_lock, NULL);
	r->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->event_fd < 0) {
		rc = -errno;
		goto err_free;
	}
	if (o->workers) {
		r->workers = o->workers;
	} else {
		rc = cm_worker_pool_create(2, "reactor-io", &r->workers);
		if (rc)
			goto err_close;
		r->own_workers = true;
	}

	rc = -ENOSYS;
	if (o->backend == CM_REACTOR_AUTO || o->backend == CM_REACTOR_URING) {
		r->ops = &cm__reactor_uring_ops;
		rc = r->ops->init(r, o->entries ? o->entries : 256);
		if (rc && o->backend == CM_REACTOR_URING) {
			CM_ERR_RC(rc, "io_uring demanded but unavailable reactor=%s", r->name);
			goto err_workers;
		}
		if (rc)
			CM_NOTICE("io_uring unavailable (%s), falling back to epoll reactor=%s",
				  cm_strerror(rc), r->name);
	}
	if (rc) {
		r->ops = &cm__reactor_epoll_ops;
		rc = r->ops->init(r, o->entries);
		if (rc) {
			CM_ERR_RC(rc, "epoll setup failed reactor=%s", r->name);
			goto err_workers;
		}
	}
	CM_INFO("reactor=%s backend=%s", r->name, r->ops->name);
	*rp = r;
	return 0;

err_workers:
	if (r->own_workers)
		cm_worker_pool_destroy(r->workers);
err_close:
	close(r->event_fd);
err_free:
	pthread_mutex_destroy(&r->msg_lock);
	free(r);
	return rc;
}

void
cm_reactor_destroy(struct cm_reactor *r)
{
	struct cm_reactor_msg *m;

	if (!r)
		return;
	/* Workers may still post completions: stop them before freeing. */
	if (r->own_workers)
		cm_worker_pool_destroy(r->workers);
	r->ops->fini(r);
	while ((m = TAILQ_FIRST(&r->msgs))) {
		TAILQ_REMOVE(&r->msgs, m, link);
		/* Only cm_reactor_send_msg nodes are ours to free. */
		if (m->fn == send_msg_run)
			free(m);
		else if (m->drop)
			m->drop(m->arg);
	}
	close(r->event_fd);
	pthread_mutex_destroy(&r->msg_lock);
	free(r->heap);
	if (t_reactor == r)
		t_reactor = NULL;
	free(r);
}

const char *
cm_reactor_backend_name(const struct cm_reactor *r)
{
	return r->ops->name;
}

struct cm_reactor *
cm_reactor_self(void)
{
	return t_reactor;
}

/* ---- timers ---- */

void
cm_timer_init(struct cm_timer *t, cm_timer_cb cb, void *arg)
{
	t->deadline_ns = 0;
	t->heap_idx = 0;
	t->cb = cb;
	t->arg = arg;
}

static void
heap_swap(struct cm_reactor *r, unsigned a, unsigned b)
{
	struct cm_timer *t = r->heap[a];

	r->heap[a] = r->heap[b];
	r->heap[b] = t;
	r->heap[a]->heap_idx = a;
	r->heap[b]->heap_idx = b;
}

static void
heap_up(struct cm_reactor *r, unsigned i)
{
	while (i > 1 && r->heap[i]->deadline_ns < r->heap[i / 2]->deadline_ns) {
		heap_swap(r, i, i / 2);
		i /= 2;
	}
}

static void
heap_down(struct cm_reactor *r, unsigned i)
{
	for (;;) {
		unsigned l = 2 * i, m = i;

		if (l <= r->heap_n && r->heap[l]->deadline_ns < r->heap[m]->deadline_ns)
			m = l;
		if (l + 1 <= r->heap_n && r->heap[l + 1]->deadline_ns < r->heap[m]->deadline_ns)
			m = l + 1;
		if (m == i)
			return;
		heap_swap(r, i, m);
		i = m;
	}
}

void
cm_timer_cancel(struct cm_reactor *r, struct cm_timer *t)
{
	unsigned i = t->heap_idx;

	if (!i)
		return;
	if (i != r->heap_n) {
		heap_swap(r, i, r->heap_n);
		r->heap_n--;
		heap_up(r, i);
		heap_down(r, i);
	} else {
		r->heap_n--;
	}
	t->heap_idx = 0;
}

void
cm_timer_arm(struct cm_reactor *r, struct cm_timer *t, uint64_t delay_ms)
{
	cm_timer_cancel(r, t);
	if (r->heap_n + 1 >= r->heap_cap) {
		unsigned cap = r->heap_cap ? r->heap_cap * 2 : 64;
		struct cm_timer **h = realloc(r->heap, sizeof(*h) * cap);

		/* Timers are few and long-lived; running out here is a programming error. */
		assert(h);
		if (!h)
			return;
		r->heap = h;
		r->heap_cap = cap;
	}
	t->deadline_ns = cm_now_ns() + delay_ms * 1000000ull;
	r->heap[++r->heap_n] = t;
	t->heap_idx = r->heap_n;
	heap_up(r, r->heap_n);
}

static int
run_timers(struct cm_reactor *r, uint64_t now)
{
	int n = 0;

	while (r->heap_n && r->heap[1]->deadline_ns <= now) {
		struct cm_timer *t = r->heap[1];

		cm_timer_cancel(r, t);
		t->cb(t);
		n++;
	}
	return n;
}

/* ---- messages ---- */

static void
reactor_wake(struct cm_reactor *r)
{
	uint64_t one = 1;

	if (atomic_exchange(&r->wake_pending, true))
		return;
	if (write(r->event_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		CM_LOG_RL(CM_LOG_ERR, "eventfd write failed reactor=%s errno=%d", r->name, errno);
}

void
cm_reactor_post(struct cm_reactor *r, struct cm_reactor_msg *m)
{
	pthread_mutex_lock(&r->msg_lock);
	TAILQ_INSERT_TAIL(&r->msgs, m, link);
	pthread_mutex_unlock(&r->msg_lock);
	reactor_wake(r);
}

struct send_msg_node {
	struct cm_reactor_msg m;
	cm_msg_fn fn;
	void *arg;
};

static void
send_msg_run(void *arg)
{
	struct send_msg_node *n = arg;
	cm_msg_fn fn = n->fn;
	void *a = n->arg;

	free(n);
	fn(a);
}

int
cm_reactor_send_msg(struct cm_reactor *r, cm_msg_fn fn, void *arg)
{
	struct send_msg_node *n = malloc(sizeof(*n));

	if (!n)
		return -ENOMEM;
	n->fn = fn;
	n->arg = arg;
	n->m.fn = send_msg_run;
	n->m.arg = n;
	n->m.drop = NULL;
	cm_reactor_post(r, &n->m);
	return 0;
}

int
cm__reactor_drain_msgs(struct cm_reactor *r)
{
	struct cm_reactor_msg_list batch;
	struct cm_reactor_msg *m;
	uint64_t v;
	int n = 0;

	/*
	 * Consume the eventfd before clearing the flag: a poster that finds the
	 * flag clear writes the eventfd again, so no wakeup is lost; one that
	 * finds it still set has already queued its message, taken below.
	 */
	if (read(r->event_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		CM_LOG_RL(CM_LOG_ERR, "eventfd read failed reactor=%s errno=%d", r->name, errno);
	atomic_store(&r->wake_pending, false);
	TAILQ_INIT(&batch);
	pthread_mutex_lock(&r->msg_lock);
	TAILQ_CONCAT(&batch, &r->msgs, link);
	pthread_mutex_unlock(&r->msg_lock);
	while ((m = TAILQ_FIRST(&batch))) {
		TAILQ_REMOVE(&batch, m, link);
		m->fn(m->arg);
		n++;
	}
	return n;
}

void
cm_reactor_stop(struct cm_reactor *r)
{
	atomic_store(&r->stop, true);
	reactor_wake(r);
}

/* ---- completions ---- */

void
cm__reactor_complete(struct cm_reactor *r, struct cm_io *io, int res)
{
	(void)r;
	io->op = CM_IO_NONE;
	io->state = CM_IO_ST_IDLE;
	io->flags = 0;
	io->res = res;
	io->cb(io, res);
}

void
cm__reactor_defer(struct cm_reactor *r, struct cm_io *io, int res)
{
	io->res = res;
	io->state = CM_IO_ST_DEFERRED;
	TAILQ_INSERT_TAIL(&r->deferred, io, link);
}

static int
run_deferred(struct cm_reactor *r)
{
	struct cm_io_list batch;
	struct cm_io *io;
	int n = 0;

	TAILQ_INIT(&batch);
	TAILQ_CONCAT(&batch, &r->deferred, link);
	while ((io = TAILQ_FIRST(&batch))) {
		TAILQ_REMOVE(&batch, io, link);
		cm__reactor_complete(r, io, io->res);
		n++;
	}
	return n;
}

int
cm_reactor_run_once(struct cm_reactor *r, int timeout_ms)
{
	int n = 0, rc;

	t_reactor = r;
	n += run_timers(r, cm_now_ns());
	n += run_deferred(r);
	if (!TAILQ_EMPTY(&r->deferred) || atomic_load(&r->stop)) {
		timeout_ms = 0;
	} else if (r->heap_n) {
		uint64_t now = cm_now_ns(), dl = r->heap[1]->deadline_ns;
		int64_t ms = dl > now ? (int64_t)((dl - now + 999999) / 1000000) : 0;

		if (timeout_ms < 0 || ms < timeout_ms)
			timeout_ms = (int)CM_MIN(ms, (int64_t)INT_MAX);
	}
	if (n > 0)
		timeout_ms = 0;
	rc = r->ops->wait(r, timeout_ms);
	if (rc < 0)
		return rc;
	return n + rc;
}

int
cm_reactor_run(struct cm_reactor *r)
{
	atomic_store(&r->stop, false);
	while (!atomic_load(&r->stop)) {
		int rc = cm_reactor_run_once(r, -1);

		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- submission ---- */

static int
io_submit_checked(struct cm_reactor *r, struct cm_io *io, int op, int fd)
{
	int rc;

	if (io->op != CM_IO_NONE)
		return -EBUSY; /* this io is still pending: leave it alone */
	if (!io->cb)
		return -EINVAL;
	io->r = r;
	io->op = (uint8_t)op;
	io->fd = fd;
	io->flags = 0;
	io->res = 0;
	rc = r->ops->submit(r, io);
	if (rc) {
		io->op = CM_IO_NONE;
		io->state = CM_IO_ST_IDLE;
	}
	return rc;
}

int
cm_io_recv(struct cm_reactor *r, struct cm_io *io, int fd, void *buf, size_t len)
{
	if (io->op != CM_IO_NONE)
		return -EBUSY;
	io->u.rx.buf = buf;
	io->u.rx.len = len;
	return io_submit_checked(r, io, CM_IO_RECV, fd);
}

int
cm_io_sendmsg(struct cm_reactor *r, struct cm_io *io, int fd, const struct iovec *iov, int iovcnt)
{
	if (io->op != CM_IO_NONE)
		return -EBUSY;
	memset(&io->u.msg, 0, sizeof(io->u.msg));
	io->u.msg.msg_iov = (struct iovec *)iov;
	io->u.msg.msg_iovlen = (size_t)iovcnt;
	return io_submit_checked(r, io, CM_IO_SENDMSG, fd);
}

int
cm_io_accept(struct cm_reactor *r, struct cm_io *io, int fd)
{
	return io_submit_checked(r, io, CM_IO_ACCEPT, fd);
}

int
cm_io_connect(struct cm_reactor *r, struct cm_io *io, int fd, const struct sockaddr *addr,
	      socklen_t addrlen)
{
	if (io->op != CM_IO_NONE)
		return -EBUSY;
	if (addrlen > sizeof(io->u.conn.addr))
		return -EINVAL;
	memcpy(&io->u.conn.addr, addr, addrlen);
	io->u.conn.addrlen = addrlen;
	return io_submit_checked(r, io, CM_IO_CONNECT, fd);
}

int
cm_io_poll(struct cm_reactor *r, struct cm_io *io, int fd, unsigned events)
{
	if (io->op != CM_IO_NONE)
		return -EBUSY;
	io->u.poll_events = events;
	return io_submit_checked(r, io, CM_IO_POLL, fd);
}

static int
io_file(struct cm_reactor *r, struct cm_io *io, int op, int fd, const struct iovec *iov, int iovcnt,
	off_t off)
{
	if (io->op != CM_IO_NONE)
		return -EBUSY;
	io->u.file.iov = iov;
	io->u.file.iovcnt = iovcnt;
	io->u.file.off = off;
	return io_submit_checked(r, io, op, fd);
}

int
cm_io_readv(struct cm_reactor *r, struct cm_io *io, int fd, const struct iovec *iov, int iovcnt,
	    off_t off)
{
	return io_file(r, io, CM_IO_READV, fd, iov, iovcnt, off);
}

int
cm_io_writev(struct cm_reactor *r, struct cm_io *io, int fd, const struct iovec *iov, int iovcnt,
	     off_t off)
{
	return io_file(r, io, CM_IO_WRITEV, fd, iov, iovcnt, off);
}

int
cm_io_writev_dsync(struct cm_reactor *r, struct cm_io *io, int fd, const struct iovec *iov,
		   int iovcnt, off_t off)
{
	return io_file(r, io, CM_IO_WRITEV_DSYNC, fd, iov, iovcnt, off);
}

int
cm_io_fsync(struct cm_reactor *r, struct cm_io *io, int fd)
{
	return io_submit_checked(r, io, CM_IO_FSYNC, fd);
}

int
cm_io_nop(struct cm_reactor *r, struct cm_io *io)
{
	if (io->op != CM_IO_NONE)
		return -EBUSY;
	if (!io->cb)
		return -EINVAL;
	io->r = r;
	io->op = CM_IO_NOP;
	io->fd = -1;
	cm__reactor_defer(r, io, 0);
	return 0;
}

void
cm_io_cancel(struct cm_reactor *r, struct cm_io *io)
{
	if (io->op == CM_IO_NONE || io->state == CM_IO_ST_DEFERRED)
		return;
	if (io->flags & CM_IO_F_CANCEL)
		return;
	io->flags |= CM_IO_F_CANCEL;
	r->ops->cancel(r, io);
}

void
cm_reactor_close(struct cm_reactor *r, int fd)
{
	if (fd < 0)
		return;
	r->ops->close_fd(r, fd);
	close(fd);
}

void
cm__reactor_file_op_exec(struct cm_io *io)
{
	ssize_t n;

	switch (io->op) {
	case CM_IO_READV:
		n = preadv(io->fd, io->u.file.iov, io->u.file.iovcnt, io->u.file.off);
		break;
	case CM_IO_WRITEV:
		n = pwritev(io->fd, io->u.file.iov, io->u.file.iovcnt, io->u.file.off);
		break;
	case CM_IO_WRITEV_DSYNC:
		n = pwritev2(io->fd, io->u.file.iov, io->u.file.iovcnt, io->u.file.off, RWF_DSYNC);
		break;
	case CM_IO_FSYNC:
		n = fdatasync(io->fd);
		break;
	default:
		n = -1;
		errno = EINVAL;
	}
	io->res = n < 0 ? -errno : (int)n;
}
