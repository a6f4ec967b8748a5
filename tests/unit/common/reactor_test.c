/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/reactor.h"
#include "cm/sock.h"
#include "cm/worker.h"
#include "testlib.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>

struct ctx {
	int order[8];
	int n;
	bool done;
	int res;
	bool in_submit;
	bool ran_in_submit;
};

static struct ctx g_tc;
static int g_tid[3];

static void
timer_cb_id(struct cm_timer *t)
{
	g_tc.order[g_tc.n++] = *(int *)t->arg;
}

START_TEST(test_timer_order_and_cancel)
{
	struct cm_reactor *r = cm_test_reactor();
	struct cm_timer t[3];
	uint64_t start = cm_now_ms();

	memset(&g_tc, 0, sizeof(g_tc));
	for (int i = 0; i < 3; i++) {
		g_tid[i] = i;
		cm_timer_init(&t[i], timer_cb_id, &g_tid[i]);
	}
	cm_timer_arm(r, &t[0], 60);
	cm_timer_arm(r, &t[1], 20);
	cm_timer_arm(r, &t[2], 40);
	cm_timer_cancel(r, &t[2]);
	ck_assert(!cm_timer_armed(&t[2]));
	while (g_tc.n < 2 && cm_now_ms() - start < 2000)
		cm_reactor_run_once(r, -1);
	ck_assert_int_eq(g_tc.n, 2);
	ck_assert_int_eq(g_tc.order[0], 1);
	ck_assert_int_eq(g_tc.order[1], 0);
	ck_assert_uint_ge(cm_now_ms() - start, 59);
	cm_reactor_destroy(r);
}

END_TEST

static void
msg_fn(void *arg)
{
	atomic_int *n = arg;

	atomic_fetch_add(n, 1);
}

struct sender {
	struct cm_reactor *r;
	atomic_int *n;
};

static void *
sender_main(void *arg)
{
	struct sender *s = arg;

	for (int i = 0; i < 10000; i++)
		ck_assert_int_eq(cm_reactor_send_msg(s->r, msg_fn, s->n), 0);
	return NULL;
}

static bool
reached_20000(void *arg)
{
	return atomic_load((atomic_int *)arg) == 20000;
}

START_TEST(test_send_msg_cross_thread)
{
	struct cm_reactor *r = cm_test_reactor();
	atomic_int n = 0;
	struct sender s = { r, &n };
	pthread_t th[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, sender_main, &s);
	ck_assert(cm_test_run_until_fn(r, reached_20000, &n, 10000));
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	cm_reactor_destroy(r);
}

END_TEST

static void
io_done(struct cm_io *io, int res)
{
	struct ctx *c = io->arg;

	c->res = res;
	c->done = true;
	if (c->in_submit)
		c->ran_in_submit = true;
}

START_TEST(test_socket_roundtrip)
{
	struct cm_reactor *r = cm_test_reactor();
	int lfd, cfd, sfd;
	uint16_t port;
	char addr[64], rxbuf[16];
	struct sockaddr_storage ss;
	socklen_t sl;
	struct cm_io a = { 0 }, c = { 0 }, rx = { 0 }, tx = { 0 };
	struct ctx ac = { 0 }, cc = { 0 }, rc_ = { 0 }, tc = { 0 };
	struct iovec iov[2] = { { "hel", 3 }, { "lo", 2 } };

	ck_assert_int_eq(cm_sock_listen("127.0.0.1:0", 16, &lfd, &port), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(cm_sock_parse_addr(addr, &ss, &sl), 0);
	ck_assert_int_eq(cm_sock_stream(AF_INET, &cfd), 0);
	a.cb = c.cb = rx.cb = tx.cb = io_done;
	a.arg = &ac;
	c.arg = &cc;
	rx.arg = &rc_;
	tx.arg = &tc;
	ac.in_submit = true;
	ck_assert_int_eq(cm_io_accept(r, &a, lfd), 0);
	ck_assert_int_eq(cm_io_accept(r, &a, lfd), -EBUSY);
	ac.in_submit = false;
	cc.in_submit = true;
	ck_assert_int_eq(cm_io_connect(r, &c, cfd, (struct sockaddr *)&ss, sl), 0);
	cc.in_submit = false;
	ck_assert(cm_test_run_until(r, &ac.done, 5000));
	ck_assert(cm_test_run_until(r, &cc.done, 5000));
	ck_assert(!ac.ran_in_submit && !cc.ran_in_submit);
	ck_assert_int_eq(cc.res, 0);
	ck_assert_int_ge(ac.res, 0);
	sfd = ac.res;
	ck_assert_int_eq(fcntl(sfd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);

	ck_assert_int_eq(cm_io_recv(r, &rx, sfd, rxbuf, sizeof(rxbuf)), 0);
	ck_assert_int_eq(cm_io_sendmsg(r, &tx, cfd, iov, 2), 0);
	ck_assert(cm_test_run_until(r, &tc.done, 5000));
	ck_assert_int_eq(tc.res, 5);
	ck_assert(cm_test_run_until(r, &rc_.done, 5000));
	ck_assert_int_eq(rc_.res, 5);
	ck_assert_int_eq(memcmp(rxbuf, "hello", 5), 0);

	/* A pending recv is cancelled with -ECANCELED. */
	memset(&rc_, 0, sizeof(rc_));
	ck_assert_int_eq(cm_io_recv(r, &rx, sfd, rxbuf, sizeof(rxbuf)), 0);
	cm_reactor_run_once(r, 10);
	ck_assert(!rc_.done);
	cm_io_cancel(r, &rx);
	ck_assert(cm_test_run_until(r, &rc_.done, 5000));
	ck_assert_int_eq(rc_.res, -ECANCELED);

	/* EOF: recv returns 0 when the peer closes. */
	memset(&rc_, 0, sizeof(rc_));
	ck_assert_int_eq(cm_io_recv(r, &rx, sfd, rxbuf, sizeof(rxbuf)), 0);
	cm_reactor_close(r, cfd);
	ck_assert(cm_test_run_until(r, &rc_.done, 5000));
	ck_assert_int_eq(rc_.res, 0);
	cm_reactor_close(r, sfd);
	cm_reactor_close(r, lfd);
	cm_reactor_destroy(r);
}

END_TEST

START_TEST(test_connect_refused)
{
	struct cm_reactor *r = cm_test_reactor();
	int lfd, cfd;
	uint16_t port;
	char addr[64];
	struct sockaddr_storage ss;
	socklen_t sl;
	struct cm_io c = { 0 };
	struct ctx cc = { 0 };

	/* A port that was just free and is now closed. */
	ck_assert_int_eq(cm_sock_listen("127.0.0.1:0", 1, &lfd, &port), 0);
	close(lfd);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(cm_sock_parse_addr(addr, &ss, &sl), 0);
	ck_assert_int_eq(cm_sock_stream(AF_INET, &cfd), 0);
	c.cb = io_done;
	c.arg = &cc;
	ck_assert_int_eq(cm_io_connect(r, &c, cfd, (struct sockaddr *)&ss, sl), 0);
	ck_assert(cm_test_run_until(r, &cc.done, 5000));
	ck_assert_int_eq(cc.res, -ECONNREFUSED);
	cm_reactor_close(r, cfd);
	cm_reactor_destroy(r);
}

END_TEST

START_TEST(test_file_io)
{
	struct cm_reactor *r = cm_test_reactor();
	char path[] = "/tmp/cairn-reactor-XXXXXX";
	int fd = mkstemp(path);
	char wbuf[8192], rbuf[8192];
	struct iovec wiov[2] = { { wbuf, 4096 }, { wbuf + 4096, 4096 } };
	struct iovec riov = { rbuf, sizeof(rbuf) };
	struct cm_io io = { 0 };
	struct ctx c = { 0 };

	ck_assert_int_ge(fd, 0);
	cm_test_fill(wbuf, sizeof(wbuf), 9);
	io.cb = io_done;
	io.arg = &c;
	c.in_submit = true;
	ck_assert_int_eq(cm_io_writev(r, &io, fd, wiov, 2, 4096), 0);
	c.in_submit = false;
	ck_assert(cm_test_run_until(r, &c.done, 5000));
	ck_assert(!c.ran_in_submit);
	ck_assert_int_eq(c.res, 8192);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(cm_io_fsync(r, &io, fd), 0);
	ck_assert(cm_test_run_until(r, &c.done, 5000));
	ck_assert_int_eq(c.res, 0);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(cm_io_readv(r, &io, fd, &riov, 1, 4096), 0);
	ck_assert(cm_test_run_until(r, &c.done, 5000));
	ck_assert_int_eq(c.res, 8192);
	ck_assert_int_eq(memcmp(wbuf, rbuf, 8192), 0);
	/* A durable write (RWF_DSYNC) over the first half, read back. */
	cm_test_fill(wbuf, 4096, 10);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(cm_io_writev_dsync(r, &io, fd, wiov, 1, 4096), 0);
	ck_assert(cm_test_run_until(r, &c.done, 5000));
	ck_assert_int_eq(c.res, 4096);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(cm_io_readv(r, &io, fd, &riov, 1, 4096), 0);
	ck_assert(cm_test_run_until(r, &c.done, 5000));
	ck_assert_int_eq(c.res, 8192);
	ck_assert_int_eq(memcmp(wbuf, rbuf, 8192), 0);
	/* Errors come back as negative errno: a read on a write-only fd. */
	int wo = open(path, O_WRONLY);

	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(cm_io_readv(r, &io, wo, &riov, 1, 0), 0);
	ck_assert(cm_test_run_until(r, &c.done, 5000));
	ck_assert_int_eq(c.res, -EBADF);
	close(wo);
	close(fd);
	unlink(path);
	cm_reactor_destroy(r);
}

END_TEST

static void
count_done(struct cm_io *io, int res)
{
	struct ctx *c = io->arg;

	if (res == 1)
		c->n++;
}

/*
 * io_uring: device SQEs go to the kernel once 8 of them wait, not only
 * when the loop next waits (so a turn that handles many completions keeps
 * the device's queue full). Writes to a pipe complete as they are
 * submitted: after 7 nothing is in the pipe yet, after the 8th all 8 bytes.
 */
START_TEST(test_uring_early_submit)
{
	struct cm_reactor_opts o;
	struct cm_reactor *r;
	struct cm_io io[8];
	struct ctx c = { 0 };
	char b = 'x', got[16];
	struct iovec iov = { &b, 1 };
	int p[2];

	cm_reactor_opts_init(&o, sizeof(o));
	o.backend = CM_REACTOR_URING;
	if (cm_reactor_create(&o, &r)) {
		cm_test_skip("test_uring_early_submit: no io_uring here");
		return;
	}
	ck_assert_int_eq(pipe2(p, O_NONBLOCK), 0);
	memset(io, 0, sizeof(io));
	for (int i = 0; i < 8; i++) {
		io[i].cb = count_done;
		io[i].arg = &c;
		ck_assert_int_eq(cm_io_writev(r, &io[i], p[1], &iov, 1, 0), 0);
		if (i == 6)
			ck_assert_int_eq(read(p[0], got, sizeof(got)), -1); /* still queued */
	}
	ck_assert_int_eq(read(p[0], got, sizeof(got)), 8);
	for (int i = 0; i < 100 && c.n < 8; i++)
		cm_reactor_run_once(r, 10);
	ck_assert_int_eq(c.n, 8);
	close(p[0]);
	close(p[1]);
	cm_reactor_destroy(r);
}

END_TEST

static void
work_fn(void *arg)
{
	struct ctx *c = arg;

	c->res = 41;
	usleep(1000);
}

static void
work_done(void *arg)
{
	struct ctx *c = arg;

	c->res++;
	c->done = cm_reactor_self() != NULL;
}

START_TEST(test_worker_completion_on_reactor)
{
	struct cm_reactor *r = cm_test_reactor();
	struct cm_worker_pool *p;
	struct cm_work w = { .fn = work_fn, .done = work_done };
	struct ctx c = { 0 };

	w.arg = &c;
	ck_assert_int_eq(cm_worker_pool_create(2, "t", &p), 0);
	ck_assert_int_eq(cm_worker_submit(p, r, &w), 0);
	ck_assert(cm_test_run_until(r, &c.done, 5000));
	ck_assert_int_eq(c.res, 42);
	cm_worker_pool_destroy(p);
	ck_assert_int_eq(cm_worker_pool_create(0, "t", &p), -EINVAL);
	cm_reactor_destroy(r);
}

END_TEST

START_TEST(test_nop_and_poll)
{
	struct cm_reactor *r = cm_test_reactor();
	struct cm_io io = { 0 };
	struct ctx c = { 0 };
	int sv[2];

	io.cb = io_done;
	io.arg = &c;
	c.in_submit = true;
	ck_assert_int_eq(cm_io_nop(r, &io), 0);
	c.in_submit = false;
	ck_assert(cm_test_run_until(r, &c.done, 1000));
	ck_assert(!c.ran_in_submit);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(cm_io_poll(r, &io, sv[0], POLLIN), 0);
	cm_reactor_run_once(r, 10);
	ck_assert(!c.done);
	ck_assert_int_eq(write(sv[1], "x", 1), 1);
	ck_assert(cm_test_run_until(r, &c.done, 5000));
	ck_assert(c.res & POLLIN);
	cm_reactor_close(r, sv[0]);
	cm_reactor_close(r, sv[1]);
	cm_reactor_destroy(r);
}

END_TEST

START_TEST(test_backend_parse)
{
	enum cm_reactor_backend b;

	ck_assert_int_eq(cm_reactor_backend_parse("epoll", &b), 0);
	ck_assert_int_eq(b, CM_REACTOR_EPOLL);
	ck_assert_int_eq(cm_reactor_backend_parse("io_uring", &b), 0);
	ck_assert_int_eq(b, CM_REACTOR_URING);
	ck_assert_int_eq(cm_reactor_backend_parse("kqueue", &b), -EINVAL);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("reactor");
	TCase *tc = tcase_create("reactor");

	tcase_add_test(tc, test_timer_order_and_cancel);
	tcase_add_test(tc, test_send_msg_cross_thread);
	tcase_add_test(tc, test_socket_roundtrip);
	tcase_add_test(tc, test_connect_refused);
	tcase_add_test(tc, test_file_io);
	tcase_add_test(tc, test_uring_early_submit);
	tcase_add_test(tc, test_worker_completion_on_reactor);
	tcase_add_test(tc, test_nop_and_poll);
	tcase_add_test(tc, test_backend_parse);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
