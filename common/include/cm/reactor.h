/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reactor: one event loop per thread. Completion based: the caller submits
 * an operation (socket recv/send/accept/connect, file readv/writev/fsync, poll)
 * in a caller-owned struct cm_io and gets one callback with the result.
 *
 * Backends (chosen at run time, see cm_reactor_opts.backend):
 *  - io_uring (liburing): operations are SQEs, submitted in one batch per loop
 *    iteration and reaped as CQEs.
 *  - epoll fallback, for hosts that forbid io_uring (many container runtimes):
 *    socket operations are retried on edge-triggered readiness; file
 *    operations run on worker threads that post the completion back.
 *
 * Contract for every submit function: a return < 0 means the callback will
 * never run; 0 means it runs exactly once, on the reactor thread, and never
 * from inside the submit call. The struct cm_io and everything it points at
 * (buffers, iovecs, addresses) must stay valid until the callback.
 *
 * Threading: everything here is called on the reactor's own thread, except
 * cm_reactor_send_msg(), cm_reactor_post() and cm_reactor_stop(), which any
 * thread may call.
 */
#ifndef CM_REACTOR_H
#define CM_REACTOR_H

#include "cm/stdinc.h"
#include <sys/socket.h>

struct cm_reactor;
struct cm_worker_pool;
struct cm_io;
struct cm_timer;

/* res: bytes moved, a new fd (accept), revents (poll), 0, or a negative errno. */
typedef void (*cm_io_cb)(struct cm_io *io, int res);
typedef void (*cm_msg_fn)(void *arg);
typedef void (*cm_timer_cb)(struct cm_timer *t);

enum cm_reactor_backend {
	CM_REACTOR_AUTO = 0, /* io_uring when the kernel allows it, else epoll */
	CM_REACTOR_URING,
	CM_REACTOR_EPOLL,
};

struct cm_reactor_opts {
	size_t opts_size; /* sizeof(struct cm_reactor_opts), set by cm_reactor_opts_init */
	enum cm_reactor_backend backend;
	unsigned entries; /* io_uring SQ size (default 256) */
	/* Worker pool for file I/O under epoll; NULL: the reactor makes its own of 2 threads. */
	struct cm_worker_pool *workers;
	const char *name; /* for logs */
};

void cm_reactor_opts_init(struct cm_reactor_opts *o, size_t size);

/*
 * Parse "auto", "uring"/"io_uring" or "epoll". \return 0 or -EINVAL.
 */
int cm_reactor_backend_parse(const char *s, enum cm_reactor_backend *out);

/*
 * Create a reactor bound to no thread yet; it belongs to the first thread that
 * runs it. With CM_REACTOR_AUTO a failing io_uring setup falls back to epoll,
 * logged at NOTICE. \return 0, -ENOMEM, or the backend's setup error (e.g.
 * -EPERM / -ENOSYS when io_uring was demanded and is forbidden).
 */
int cm_reactor_create(const struct cm_reactor_opts *o, struct cm_reactor **rp);

/* Destroy a stopped reactor. Pending messages are dropped. NULL is a no-op. */
void cm_reactor_destroy(struct cm_reactor *r);

/* "io_uring" or "epoll". */
const char *cm_reactor_backend_name(const struct cm_reactor *r);

/* Run until cm_reactor_stop(). \return 0 or a fatal backend error. */
int cm_reactor_run(struct cm_reactor *r);

/*
 * One loop iteration: run due timers, deferred completions and messages, then
 * wait at most timeout_ms (-1 forever, 0 not at all) for I/O.
 * \return the number of callbacks run (>= 0), or a fatal backend error.
 */
int cm_reactor_run_once(struct cm_reactor *r, int timeout_ms);

/* Ask the reactor to return from cm_reactor_run(). Any thread. */
void cm_reactor_stop(struct cm_reactor *r);

/* The reactor running on this thread, or NULL. */
struct cm_reactor *cm_reactor_self(void);

/*
 * Run fn(arg) on r's thread. Any thread. Allocates a small node.
 * \return 0, -ENOMEM.
 */
int cm_reactor_send_msg(struct cm_reactor *r, cm_msg_fn fn, void *arg);

/*
 * The allocation-free form: the caller owns m until fn runs. A reactor
 * destroyed with m still queued calls drop(arg) instead, when set (so a
 * message that owns memory can free it).
 */
struct cm_reactor_msg {
	cm_msg_fn fn;
	void *arg;
	cm_msg_fn drop;
	TAILQ_ENTRY(cm_reactor_msg) link;
};

void cm_reactor_post(struct cm_reactor *r, struct cm_reactor_msg *m);

/* Timers (caller-embedded; one-shot; re-arm from the callback for periodic). */
struct cm_timer {
	uint64_t deadline_ns;
	unsigned heap_idx; /* 0 = not armed */
	cm_timer_cb cb;
	void *arg;
};

void cm_timer_init(struct cm_timer *t, cm_timer_cb cb, void *arg);

/* Arm (or re-arm) t to fire after delay_ms. */
void cm_timer_arm(struct cm_reactor *r, struct cm_timer *t, uint64_t delay_ms);
void cm_timer_cancel(struct cm_reactor *r, struct cm_timer *t);

static inline bool
cm_timer_armed(const struct cm_timer *t)
{
	return t->heap_idx != 0;
}

/* I/O operations. Fields are private: set them only through the submit calls. */
enum cm_io_op {
	CM_IO_NONE = 0,
	CM_IO_RECV,
	CM_IO_SENDMSG,
	CM_IO_ACCEPT,
	CM_IO_CONNECT,
	CM_IO_READV,
	CM_IO_WRITEV,
	CM_IO_FSYNC,
	CM_IO_POLL,
	CM_IO_WRITEV_DSYNC,
	CM_IO_NOP,
};

struct cm_io {
	cm_io_cb cb;
	void *arg; /* for the caller */
	/* private */
	struct cm_reactor *r;
	uint8_t op;
	uint8_t state;
	uint8_t flags;
	int fd;
	int res;

	union {
		struct {
			void *buf;
			size_t len;
		} rx;
		struct msghdr msg;

		struct {
			const struct iovec *iov;
			int iovcnt;
			off_t off;
		} file;

		struct {
			struct sockaddr_storage addr;
			socklen_t addrlen;
		} conn;

		unsigned poll_events;
	} u;

	TAILQ_ENTRY(cm_io) link;
	struct cm_reactor_msg post; /* epoll: worker completion */
};

/*
 * Socket operations on a non-blocking socket fd.
 * recv: res = bytes (0 at EOF). sendmsg: res = bytes sent (may be short).
 * accept: res = a new non-blocking, close-on-exec fd. connect: res = 0.
 * Errors: negative errno from the syscall; -ECANCELED after cm_io_cancel();
 * -EBUSY when another read-side (or write-side) op is pending on the fd under
 * epoll (one of each at a time per fd).
 */
int cm_io_recv(struct cm_reactor *r, struct cm_io *io, int fd, void *buf, size_t len);
int cm_io_sendmsg(struct cm_reactor *r, struct cm_io *io, int fd, const struct iovec *iov,
		  int iovcnt);
int cm_io_accept(struct cm_reactor *r, struct cm_io *io, int fd);
int cm_io_connect(struct cm_reactor *r, struct cm_io *io, int fd, const struct sockaddr *addr,
		  socklen_t addrlen);

/* Wait for poll(2) events (POLLIN/POLLOUT); res = revents. */
int cm_io_poll(struct cm_reactor *r, struct cm_io *io, int fd, unsigned events);

/* File operations (regular files and block devices, O_DIRECT welcome). res = bytes. */
int cm_io_readv(struct cm_reactor *r, struct cm_io *io, int fd, const struct iovec *iov, int iovcnt,
		off_t off);
int cm_io_writev(struct cm_reactor *r, struct cm_io *io, int fd, const struct iovec *iov,
		 int iovcnt, off_t off);
int cm_io_fsync(struct cm_reactor *r, struct cm_io *io, int fd);
/*
 * A write that completes once it is durable, as if fdatasync(fd) followed it
 * (RWF_DSYNC: on a device with FUA, one FUA write; else the write and then a
 * device cache flush, inside the kernel — no second trip through the loop).
 */
int cm_io_writev_dsync(struct cm_reactor *r, struct cm_io *io, int fd, const struct iovec *iov,
		       int iovcnt, off_t off);

/* Complete on the next loop iteration with res 0 (a deferred call). */
int cm_io_nop(struct cm_reactor *r, struct cm_io *io);

/*
 * Ask a pending op to finish early. Its callback still runs exactly once, with
 * -ECANCELED or, if it raced, its real result. No-op when io is not pending.
 */
void cm_io_cancel(struct cm_reactor *r, struct cm_io *io);

static inline bool
cm_io_pending(const struct cm_io *io)
{
	return io->op != CM_IO_NONE;
}

/*
 * Close an fd the reactor has seen. Use this rather than close(2): the epoll
 * backend forgets its per-fd state (fd numbers are reused). Pending ops on the
 * fd must have completed first.
 */
void cm_reactor_close(struct cm_reactor *r, int fd);

#endif
