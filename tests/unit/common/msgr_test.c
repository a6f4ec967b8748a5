/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/err.h"
#include "cm/frame.h"
#include "cm/msgr.h"
#include "cm/sock.h"
#include "testlib.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <string.h>
#include <cairn/msgr.pb-c.h>
#include <sys/socket.h>
#include <unistd.h>

#define T_REQ 300
#define T_REP 301

static const uint8_t g_key[] = "0123456789abcdef0123456789abcdef";

struct side {
	struct cm_msgr *m;
	struct cm_msgr *fwd_to; /* hand every T_REQ to this messenger (slot 1) */
	uint64_t proxied;       /* T_REQs that came on a proxy of the client's session */
	struct cm_conn *accepted;
	uint64_t next_tid; /* server: the tid expected next (exactly once, in order) */
	uint64_t got, bad, replies;
	bool up, echo, close_in_cb;
	int events[8];
	int last_rc;
	bool writable;
};

static void
on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct side *s = arg;

	if (m->type == T_REQ && s->fwd_to) {
		ck_assert_int_eq(cm_conn_forward(c, s->fwd_to, 1, m), 0);
		return;
	}
	if (m->type == T_REQ) {
		struct cm_buf *flat;

		if (cm_conn_is_proxy(c)) {
			s->proxied++;
			if (strcmp(cm_conn_peer(c), "client.1") != 0 || !cm_conn_is_up(c))
				s->bad++;
		}
		if (m->tid != s->next_tid)
			s->bad++;
		s->next_tid = m->tid + 1;
		ck_assert_int_eq(cm_sgl_flatten(&m->data, &flat), 0);
		if (cm_test_check(flat->data, flat->len, m->tid) != -1)
			s->bad++;
		cm_buf_put(flat);
		s->got++;
		if (s->echo) {
			struct cm_msg *r;

			ck_assert_int_eq(cm_msg_create(T_REP, m->tid, &r), 0);
			if (cm_conn_send(c, r))
				cm_msg_destroy(r);
		}
	} else if (m->type == T_REP) {
		s->replies++;
	}
	cm_msg_destroy(m);
	if (s->close_in_cb)
		cm_conn_close(c); /* from inside the socket's own receive path */
}

static void
on_accept(void *arg, struct cm_conn *c)
{
	struct side *s = arg;

	s->accepted = c;
}

static void
on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct side *s = arg;

	(void)c;
	__atomic_add_fetch(&s->events[ev], 1,
			   __ATOMIC_RELEASE); /* (test_msgr_forward: another thread's) */
	s->last_rc = rc;
	if (ev == CM_CONN_UP)
		s->up = true;
}

static void
on_writable(void *arg, struct cm_conn *c)
{
	struct side *s = arg;

	(void)c;
	s->writable = true;
}

static struct cm_msgr *
mk(struct cm_reactor *r, struct side *s, const char *name, const uint8_t *key,
   void (*tweak)(struct cm_msgr_opts *))
{
	struct cm_msgr_opts o;
	struct cm_msgr *m;

	cm_msgr_opts_init(&o, sizeof(o));
	o.entity = name;
	o.key = key;
	o.key_len = sizeof(g_key);
	o.ops.on_msg = on_msg;
	o.ops.on_accept = on_accept;
	o.ops.on_event = on_event;
	o.ops.on_writable = on_writable;
	o.ops_arg = s;
	if (tweak)
		tweak(&o);
	ck_assert_int_eq(cm_msgr_create(r, &o, &m), 0);
	s->m = m;
	return m;
}

static struct cm_msg *
req(uint64_t tid, size_t len)
{
	struct cm_msg *m;
	struct cm_buf *b;

	ck_assert_int_eq(cm_msg_create(T_REQ, tid, &m), 0);
	ck_assert_int_eq(cm_buf_alloc(len, &b), 0);
	cm_test_fill(b->data, len, tid);
	ck_assert_int_eq(cm_sgl_append(&m->data, b, 0, len), 0);
	cm_buf_put(b);
	return m;
}

static char g_addr[64];

static struct cm_conn *
setup(struct cm_reactor *r, struct side *srv, struct side *cli, bool lossless,
      void (*tweak)(struct cm_msgr_opts *))
{
	uint16_t port;
	struct cm_conn *c;

	mk(r, srv, "osd.0", g_key, tweak);
	mk(r, cli, "client.1", g_key, tweak);
	srv->echo = true;
	ck_assert_int_eq(cm_msgr_listen(srv->m, "127.0.0.1:0", &port), 0);
	snprintf(g_addr, sizeof(g_addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(cm_msgr_connect(cli->m, g_addr, lossless, &c), 0);
	ck_assert(cm_test_run_until(r, &cli->up, 5000));
	for (int i = 0; i < 500 && !srv->accepted; i++)
		cm_reactor_run_once(r, 10);
	ck_assert_ptr_nonnull(srv->accepted);
	ck_assert_str_eq(cm_conn_peer(c), "osd.0");
	ck_assert_str_eq(cm_conn_peer(srv->accepted), "client.1");
	return c;
}

static void
teardown(struct cm_reactor *r, struct side *srv, struct side *cli, struct cm_conn *c)
{
	cm_conn_close(c);
	cm_conn_put(c);
	cm_msgr_destroy(cli->m);
	cm_msgr_destroy(srv->m);
	cm_reactor_destroy(r);
}

struct until_n {
	uint64_t *v;
	uint64_t n;
};

static bool
reached(void *arg)
{
	struct until_n *u = arg;

	return *u->v >= u->n;
}

START_TEST(test_msgr_exchange)
{
	struct cm_reactor *r = cm_test_reactor();
	struct side srv = { 0 }, cli = { 0 };
	struct cm_conn *c = setup(r, &srv, &cli, true, NULL);
	struct until_n u = { &cli.replies, 1000 };
	struct cm_msgr_stats st;

	for (uint64_t i = 0; i < 1000; i++)
		ck_assert_int_eq(cm_conn_send(c, req(i, (i * 7919) % (256 * 1024))), 0);
	ck_assert(cm_test_run_until_fn(r, reached, &u, 20000));
	ck_assert_uint_eq(srv.got, 1000);
	ck_assert_uint_eq(srv.bad, 0);
	cm_msgr_get_stats(cli.m, &st);
	ck_assert_uint_eq(st.msgs_sent, 1000);
	ck_assert_uint_eq(st.msgs_recv, 1000);
	teardown(r, &srv, &cli, c);
}

END_TEST

static void *
run_reactor(void *arg)
{
	cm_reactor_run(arg);
	return NULL;
}

/*
 * Forwarding: every request the server gets is handed to a messenger on
 * another reactor thread, which answers on its proxy of the session; the
 * client sees every reply, in order; when the client goes, the proxy gets
 * CM_CONN_CLOSED there (and nothing leaks, under ASan).
 */
START_TEST(test_msgr_forward)
{
	struct cm_reactor *r = cm_test_reactor(), *r2 = cm_test_reactor();
	struct side srv = { 0 }, cli = { 0 }, other = { 0 };
	struct cm_conn *c;
	struct until_n u = { &cli.replies, 500 };
	struct cm_msgr_stats st;
	pthread_t th;

	mk(r2, &other, "osd.0", g_key, NULL);
	other.echo = true;
	c = setup(r, &srv, &cli, false, NULL);
	srv.fwd_to = other.m;
	ck_assert_int_eq(pthread_create(&th, NULL, run_reactor, r2), 0);
	for (uint64_t i = 0; i < 500; i++)
		ck_assert_int_eq(cm_conn_send(c, req(i, (i * 7919) % (64 * 1024))), 0);
	ck_assert(cm_test_run_until_fn(r, reached, &u, 20000));
	cm_msgr_get_stats(srv.m, &st);
	ck_assert_uint_eq(st.forwarded, 500);
	/* a slot past the table is refused (and the message freed) */
	ck_assert_int_eq(cm_conn_forward(c, other.m, CM_FWD_SLOTS, req(9, 10)), -EINVAL);
	/* the client leaves: the server's session ends, and so does the proxy */
	cm_conn_close(c);
	for (int i = 0;
	     i < 500 && !__atomic_load_n(&other.events[CM_CONN_CLOSED], __ATOMIC_ACQUIRE); i++)
		cm_reactor_run_once(r, 10);
	cm_reactor_stop(r2);
	pthread_join(th, NULL);
	ck_assert_int_eq(other.events[CM_CONN_CLOSED], 1);
	ck_assert_uint_eq(other.got, 500);
	ck_assert_uint_eq(other.proxied, 500);
	ck_assert_uint_eq(other.bad, 0);
	ck_assert_uint_eq(srv.got, 0);
	cm_msgr_destroy(other.m);
	cm_conn_put(c);
	cm_msgr_destroy(cli.m);
	cm_msgr_destroy(srv.m);
	cm_reactor_destroy(r);
	cm_reactor_destroy(r2);
}

END_TEST

static void
other_version(struct cm_msgr_opts *o)
{
	o->proto_min = o->proto_max = CM_MSGR_PROTO_MAX + 1;
}

/* frame_mac off (cm_daemon_msgr_opts): protocol 1, frames without MACs. */
static void
no_frame_mac(struct cm_msgr_opts *o)
{
	o->proto_min = o->proto_max = CM_MSGR_PROTO_MIN;
}

static const char *g_src;

static void
with_src(struct cm_msgr_opts *o)
{
	o->bind_src = g_src;
}

/* bind_src: the session leaves from that address (what a cut by address
 * relies on); a malformed one is refused at create. */
START_TEST(test_msgr_bind_src)
{
	struct cm_reactor *r = cm_test_reactor();
	struct side cli = { 0 };
	struct cm_msgr_opts o;
	struct cm_msgr *bad;
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	struct cm_conn *c;
	uint16_t port;
	char addr[64], ip[32];
	int lfd, fd = -1;

	cm_msgr_opts_init(&o, sizeof(o));
	o.entity = "client.9";
	o.key = g_key;
	o.key_len = sizeof(g_key);
	o.bind_src = "not-an-address";
	ck_assert_int_eq(cm_msgr_create(r, &o, &bad), -EINVAL);
	ck_assert_int_eq(cm_sock_listen("127.0.0.1:0", 4, &lfd, &port), 0);
	g_src = "127.0.0.2:0";
	mk(r, &cli, "client.1", g_key, with_src);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(cm_msgr_connect(cli.m, addr, true, &c), 0);
	for (int i = 0; i < 500 && fd < 0; i++) {
		cm_reactor_run_once(r, 10);
		fd = accept(lfd, (struct sockaddr *)&peer, &plen);
	}
	ck_assert_int_ge(fd, 0);
	ck_assert_ptr_nonnull(inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof(ip)));
	ck_assert_str_eq(ip, "127.0.0.2");
	close(fd);
	close(lfd);
	cm_conn_close(c);
	cm_conn_put(c);
	cm_msgr_destroy(cli.m);
	cm_reactor_destroy(r);
}

END_TEST

START_TEST(test_msgr_wrong_key_and_version_refused)
{
	struct cm_reactor *r = cm_test_reactor();
	struct side srv = { 0 }, bad = { 0 }, old = { 0 };
	static const uint8_t other[sizeof(g_key)] = "ffffffffffffffffffffffffffffffff";
	struct cm_conn *c1, *c2;
	struct cm_msgr_stats st;
	uint16_t port;
	bool done = false;

	mk(r, &srv, "osd.0", g_key, NULL);
	mk(r, &bad, "client.bad", other, NULL);
	mk(r, &old, "client.old", g_key, other_version);
	ck_assert_int_eq(cm_msgr_listen(srv.m, "127.0.0.1:0", &port), 0);
	snprintf(g_addr, sizeof(g_addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(cm_msgr_connect(bad.m, g_addr, true, &c1), 0);
	ck_assert_int_eq(cm_msgr_connect(old.m, g_addr, true, &c2), 0);
	for (int i = 0; i < 500 && !done; i++) {
		cm_reactor_run_once(r, 10);
		done = bad.events[CM_CONN_FAILED] && old.events[CM_CONN_FAILED];
	}
	ck_assert(done);
	ck_assert_int_eq(bad.last_rc, -CM_EAUTH);
	ck_assert_int_eq(old.last_rc, -CM_EVERSION);
	ck_assert(!bad.up && !old.up);
	ck_assert_ptr_null(srv.accepted);
	cm_msgr_get_stats(srv.m, &st);
	ck_assert_uint_ge(st.auth_failures, 1);
	/* A failed session refuses sends and does not retry. */
	struct cm_msg *m = req(0, 10);

	ck_assert_int_eq(cm_conn_send(c1, m), -CM_ECLOSED);
	cm_msg_destroy(m);
	cm_conn_put(c1);
	cm_conn_put(c2);
	/* A peer without frame MACs cannot talk a MAC-requiring one down to
	 * none (what a man in the middle editing HELLO would try): refused. */
	{
		struct side plain = { 0 };

		mk(r, &plain, "client.plain", g_key, no_frame_mac);
		ck_assert_int_eq(cm_msgr_connect(plain.m, g_addr, true, &c2), 0);
		for (int i = 0; i < 500 && !plain.events[CM_CONN_FAILED]; i++)
			cm_reactor_run_once(r, 10);
		ck_assert_int_eq(plain.last_rc, -CM_EVERSION);
		ck_assert(!plain.up);
		cm_conn_put(c2);
		cm_msgr_destroy(plain.m);
	}
	cm_msgr_destroy(bad.m);
	cm_msgr_destroy(old.m);
	cm_msgr_destroy(srv.m);
	cm_reactor_destroy(r);
}

END_TEST

START_TEST(test_msgr_lossless_resume)
{
	struct cm_reactor *r = cm_test_reactor();
	struct side srv = { 0 }, cli = { 0 };
	struct cm_conn *c = setup(r, &srv, &cli, true, NULL);
	struct until_n u = { &srv.got, 0 };
	struct cm_msgr_stats st;
	uint64_t tid = 0;

	/* Batches of sends with the socket cut in the middle, from either side. */
	for (int round = 0; round < 10; round++) {
		/* Cut only a live socket: wait for the session to come back first. */
		for (int i = 0; i < 500 && (!cm_conn_is_up(c) || !cm_conn_is_up(srv.accepted)); i++)
			cm_reactor_run_once(r, 5);
		ck_assert(cm_conn_is_up(c));
		for (int i = 0; i < 200; i++, tid++)
			ck_assert_int_eq(cm_conn_send(c, req(tid, (tid * 131) % 70000)), 0);
		for (int k = 0; k < round % 3; k++)
			cm_reactor_run_once(r, 0);
		if (round & 1)
			cm_conn_reset_socket(srv.accepted);
		else
			cm_conn_reset_socket(c);
	}
	u.n = tid;
	ck_assert(cm_test_run_until_fn(r, reached, &u, 30000));
	u.v = &cli.replies;
	ck_assert(cm_test_run_until_fn(r, reached, &u, 30000));
	ck_assert_uint_eq(srv.got, tid); /* exactly once */
	ck_assert_uint_eq(srv.bad, 0);   /* in order, intact */
	ck_assert_uint_eq(cli.replies, tid);
	ck_assert_int_eq(srv.events[CM_CONN_RESET], 0);
	ck_assert_int_eq(cli.events[CM_CONN_RESET], 0);
	ck_assert_int_eq(cli.events[CM_CONN_DOWN], 10);
	cm_msgr_get_stats(cli.m, &st);
	ck_assert_uint_gt(st.sock_resets, 0);
	/* Everything acknowledged: nothing left queued. */
	for (int i = 0; i < 50 && cm_conn_queued_bytes(c); i++)
		cm_reactor_run_once(r, 10);
	ck_assert_uint_eq(cm_conn_queued_bytes(c), 0);
	teardown(r, &srv, &cli, c);
}

END_TEST

START_TEST(test_msgr_lossy_reset)
{
	struct cm_reactor *r = cm_test_reactor();
	struct side srv = { 0 }, cli = { 0 };
	struct cm_conn *c = setup(r, &srv, &cli, false, NULL);
	struct until_n u = { &cli.replies, 1 };

	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(cm_conn_send(c, req(1000 + (uint64_t)i, 100000)), 0);
	cm_conn_reset_socket(c);
	ck_assert_int_eq(cli.events[CM_CONN_RESET], 1);
	ck_assert_uint_eq(cm_conn_queued_bytes(c), 0);
	cli.up = false;
	ck_assert(cm_test_run_until(r, &cli.up, 5000));
	srv.next_tid = 7;
	ck_assert_int_eq(cm_conn_send(c, req(7, 10)), 0);
	ck_assert(cm_test_run_until_fn(r, reached, &u, 5000));
	ck_assert_uint_eq(srv.bad, 0);
	teardown(r, &srv, &cli, c);
}

END_TEST

static void
small_queue(struct cm_msgr_opts *o)
{
	o->max_queue_bytes = 4u << 20;
}

START_TEST(test_msgr_backpressure_bounded)
{
	/* The server runs on a second reactor that we stop running: it stops reading. */
	struct cm_reactor *r = cm_test_reactor(), *r2 = cm_test_reactor();
	struct side srv = { 0 }, cli = { 0 };
	struct cm_conn *c;
	uint16_t port;
	uint64_t sent = 0, peak = 0;
	bool full = false;

	mk(r2, &srv, "osd.0", g_key, small_queue);
	mk(r, &cli, "client.1", g_key, small_queue);
	ck_assert_int_eq(cm_msgr_listen(srv.m, "127.0.0.1:0", &port), 0);
	snprintf(g_addr, sizeof(g_addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(cm_msgr_connect(cli.m, g_addr, true, &c), 0);
	for (int i = 0; i < 1000 && !cli.up; i++) {
		cm_reactor_run_once(r, 1);
		cm_reactor_run_once(r2, 1);
	}
	ck_assert(cli.up);
	for (int i = 0; i < 2000 && !full; i++) {
		struct cm_msg *m = req(sent, 1 << 20);
		int rc = cm_conn_send(c, m);

		if (rc == -EAGAIN) {
			cm_msg_destroy(m);
			/* Let the kernel buffers fill, then try once more. */
			for (int k = 0; k < 20; k++)
				cm_reactor_run_once(r, 5);
			m = req(sent, 1 << 20);
			rc = cm_conn_send(c, m);
			if (rc == -EAGAIN) {
				cm_msg_destroy(m);
				full = true;
				break;
			}
		}
		ck_assert_int_eq(rc, 0);
		sent++;
		peak = CM_MAX(peak, (uint64_t)cm_conn_queued_bytes(c));
		cm_reactor_run_once(r, 0);
	}
	ck_assert(full);
	ck_assert_uint_le(peak, (4u << 20) + (1u << 20) + 4096);
	/* The peer reads again: everything arrives, and on_writable fired. */
	for (int i = 0; i < 20000 && srv.got < sent; i++) {
		cm_reactor_run_once(r, 1);
		cm_reactor_run_once(r2, 1);
	}
	ck_assert_uint_eq(srv.got, sent);
	ck_assert_uint_eq(srv.bad, 0);
	ck_assert(cli.writable);
	cm_conn_close(c);
	cm_conn_put(c);
	cm_msgr_destroy(cli.m);
	cm_msgr_destroy(srv.m);
	cm_reactor_destroy(r);
	cm_reactor_destroy(r2);
}

END_TEST

static void
fast_timeouts(struct cm_msgr_opts *o)
{
	o->keepalive_ms = 100;
	o->timeout_ms = 600;
}

START_TEST(test_msgr_dead_peer_detected)
{
	struct cm_reactor *r = cm_test_reactor(), *r2 = cm_test_reactor();
	struct side srv = { 0 }, cli = { 0 };
	struct cm_conn *c;
	uint16_t port;
	uint64_t t0;

	mk(r2, &srv, "osd.0", g_key, fast_timeouts);
	mk(r, &cli, "client.1", g_key, fast_timeouts);
	ck_assert_int_eq(cm_msgr_listen(srv.m, "127.0.0.1:0", &port), 0);
	snprintf(g_addr, sizeof(g_addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(cm_msgr_connect(cli.m, g_addr, true, &c), 0);
	for (int i = 0; i < 1000 && !cli.up; i++) {
		cm_reactor_run_once(r, 1);
		cm_reactor_run_once(r2, 1);
	}
	ck_assert(cli.up);
	/* Both alive: keepalives keep the session up well past the timeout. */
	t0 = cm_now_ms();
	while (cm_now_ms() - t0 < 1500) {
		cm_reactor_run_once(r, 5);
		cm_reactor_run_once(r2, 5);
	}
	ck_assert_int_eq(cli.events[CM_CONN_DOWN], 0);
	/* The server freezes (its reactor stops): the client notices. */
	t0 = cm_now_ms();
	while (!cli.events[CM_CONN_DOWN] && cm_now_ms() - t0 < 5000)
		cm_reactor_run_once(r, 20);
	ck_assert_int_eq(cli.events[CM_CONN_DOWN], 1);
	ck_assert_int_eq(cli.last_rc, -CM_EPEERDEAD);
	cm_conn_close(c);
	cm_conn_put(c);
	cm_msgr_destroy(cli.m);
	cm_msgr_destroy(srv.m);
	cm_reactor_destroy(r);
	cm_reactor_destroy(r2);
}

END_TEST

START_TEST(test_msgr_garbage_and_oversize_rejected)
{
	struct cm_reactor *r = cm_test_reactor();
	struct side srv = { 0 };
	struct cm_msgr_stats st;
	struct sockaddr_storage ss;
	socklen_t sl;
	uint16_t port;
	uint8_t pre[CM_FRAME_PREAMBLE_LEN];
	struct cm_frame_hdr h = { .version = 1, .type = CM_MSG_HELLO, .front_len = 1u << 30 };
	int fd;
	char junk[256];

	mk(r, &srv, "osd.0", g_key, NULL);
	ck_assert_int_eq(cm_msgr_listen(srv.m, "127.0.0.1:0", &port), 0);
	snprintf(g_addr, sizeof(g_addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(cm_sock_parse_addr(g_addr, &ss, &sl), 0);
	/* 1: garbage bytes. 2: a well-formed preamble announcing a 1 GiB front before auth. */
	for (int k = 0; k < 2; k++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_eq(connect(fd, (struct sockaddr *)&ss, sl), 0);
		if (k == 0) {
			memset(junk, 0x5a, sizeof(junk));
			ck_assert_int_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
		} else {
			cm_frame_hdr_encode(&h, pre);
			ck_assert_int_eq(write(fd, pre, sizeof(pre)), (ssize_t)sizeof(pre));
		}
		/* The server resets the socket: we read EOF or ECONNRESET. */
		for (int i = 0; i < 100; i++)
			cm_reactor_run_once(r, 5);
		ck_assert_int_le(read(fd, junk, sizeof(junk)), 0);
		close(fd);
	}
	cm_msgr_get_stats(srv.m, &st);
	ck_assert_uint_eq(st.bad_frames, 2);
	ck_assert_ptr_null(srv.accepted);
	cm_msgr_destroy(srv.m);
	cm_reactor_destroy(r);
}

END_TEST

static void
no_data_crc(struct cm_msgr_opts *o)
{
	o->crc_data = false;
}

START_TEST(test_msgr_crc_data_off_and_mismatch)
{
	struct cm_reactor *r = cm_test_reactor();
	struct side srv = { 0 }, cli = { 0 }, strict = { 0 }, lax = { 0 };
	struct cm_conn *c = setup(r, &srv, &cli, true, no_data_crc), *c2;
	struct until_n u = { &cli.replies, 200 };
	struct cm_msgr_stats st;
	uint16_t port;

	/* Both sides off: works, data still intact. */
	for (uint64_t i = 0; i < 200; i++)
		ck_assert_int_eq(cm_conn_send(c, req(i, 100000)), 0);
	ck_assert(cm_test_run_until_fn(r, reached, &u, 20000));
	ck_assert_uint_eq(srv.bad, 0);
	teardown(r, &srv, &cli, c);

	/* A strict server refuses frames without a data crc. */
	r = cm_test_reactor();
	mk(r, &strict, "osd.0", g_key, NULL);
	mk(r, &lax, "client.1", g_key, no_data_crc);
	ck_assert_int_eq(cm_msgr_listen(strict.m, "127.0.0.1:0", &port), 0);
	snprintf(g_addr, sizeof(g_addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(cm_msgr_connect(lax.m, g_addr, true, &c2), 0);
	ck_assert(cm_test_run_until(r, &lax.up, 5000));
	ck_assert_int_eq(cm_conn_send(c2, req(0, 1000)), 0);
	for (int i = 0; i < 50; i++)
		cm_reactor_run_once(r, 5);
	cm_msgr_get_stats(strict.m, &st);
	ck_assert_uint_ge(st.bad_frames, 1);
	ck_assert_uint_eq(strict.got, 0);
	cm_conn_close(c2);
	cm_conn_put(c2);
	cm_msgr_destroy(lax.m);
	cm_msgr_destroy(strict.m);
	cm_reactor_destroy(r);
}

END_TEST

START_TEST(test_msgr_close_from_callback)
{
	struct cm_reactor *r = cm_test_reactor();
	struct side srv = { 0 }, cli = { 0 };
	struct cm_conn *c = setup(r, &srv, &cli, false, NULL);

	srv.close_in_cb = true;
	srv.echo = false;
	for (uint64_t i = 0; i < 20; i++)
		ck_assert_int_eq(cm_conn_send(c, req(i, 1000)), 0);
	for (int i = 0; i < 100 && !cli.events[CM_CONN_RESET]; i++)
		cm_reactor_run_once(r, 5);
	ck_assert_uint_ge(srv.got, 1);
	ck_assert_int_ge(cli.events[CM_CONN_RESET], 1);
	teardown(r, &srv, &cli, c);
}

END_TEST

static char g_pki[64];

/* A CA, a node certificate it signs, and a second, unrelated CA. */
static void
make_pki(void)
{
	char cmd[2048];

	snprintf(g_pki, sizeof(g_pki), "/tmp/cairn-pki-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_pki));
	snprintf(
		cmd, sizeof(cmd),
		"cd %s && for ca in ca ca2; do openssl req -x509 -newkey ec "
		"-pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $ca.key -out $ca.pem -days 2 "
		"-subj /CN=cairn-test-$ca; done && openssl req -newkey ec "
		"-pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout node.key -out node.csr "
		"-subj /CN=node && openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key "
		"-CAcreateserial -out node.pem -days 2",
		g_pki);
	ck_assert_int_eq(system(cmd), 0);
}

static char g_cert[128], g_key_file[128], g_ca[128], g_ca2[128];

static void
remove_pki(void)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_pki);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g_pki);
}

static void
pki_paths(void)
{
	snprintf(g_cert, sizeof(g_cert), "%s/node.pem", g_pki);
	snprintf(g_key_file, sizeof(g_key_file), "%s/node.key", g_pki);
	snprintf(g_ca, sizeof(g_ca), "%s/ca.pem", g_pki);
	snprintf(g_ca2, sizeof(g_ca2), "%s/ca2.pem", g_pki);
}

static void
tls_on(struct cm_msgr_opts *o)
{
	o->tls = true;
	o->tls_cert = g_cert;
	o->tls_key = g_key_file;
	o->tls_ca = g_ca;
}

static void
tls_other_ca(struct cm_msgr_opts *o)
{
	tls_on(o);
	o->tls_ca = g_ca2;
}

START_TEST(test_msgr_tls_exchange_and_resume)
{
	struct cm_reactor *r;
	struct side srv = { 0 }, cli = { 0 };
	struct cm_conn *c;
	struct until_n u = { &cli.replies, 0 };
	struct cm_msgr_stats st;
	uint64_t tid = 0;

	make_pki();
	pki_paths();
	r = cm_test_reactor();
	c = setup(r, &srv, &cli, true, tls_on);
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 100 && !cm_conn_is_up(c); i++)
			cm_reactor_run_once(r, 5);
		for (int i = 0; i < 150; i++, tid++)
			ck_assert_int_eq(cm_conn_send(c, req(tid, (tid * 7919) % (256u << 10))), 0);
		cm_reactor_run_once(r, 0);
		cm_conn_reset_socket(round & 1 ? srv.accepted : c);
	}
	u.n = tid;
	ck_assert(cm_test_run_until_fn(r, reached, &u, 60000));
	ck_assert_uint_eq(srv.got, tid);
	ck_assert_uint_eq(srv.bad, 0);
	cm_msgr_get_stats(srv.m, &st);
	ck_assert_uint_eq(st.tls_failures, 0);
	ck_assert_uint_eq(st.crc_errors, 0);
	teardown(r, &srv, &cli, c);
	remove_pki();
}

END_TEST

START_TEST(test_msgr_tls_mismatch_diagnosed)
{
	struct cm_reactor *r;
	struct side srv = { 0 }, cli = { 0 }, srv2 = { 0 }, cli2 = { 0 };
	struct cm_conn *c, *c2;
	struct cm_msgr_stats st;
	uint16_t port;

	make_pki();
	pki_paths();
	r = cm_test_reactor();
	/* TLS client, plain server. */
	mk(r, &srv, "osd.0", g_key, NULL);
	mk(r, &cli, "client.1", g_key, tls_on);
	ck_assert_int_eq(cm_msgr_listen(srv.m, "127.0.0.1:0", &port), 0);
	snprintf(g_addr, sizeof(g_addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(cm_msgr_connect(cli.m, g_addr, true, &c), 0);
	/* Plain client, TLS server. */
	mk(r, &srv2, "osd.1", g_key, tls_on);
	mk(r, &cli2, "client.2", g_key, NULL);
	ck_assert_int_eq(cm_msgr_listen(srv2.m, "127.0.0.1:0", &port), 0);
	snprintf(g_addr, sizeof(g_addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(cm_msgr_connect(cli2.m, g_addr, true, &c2), 0);
	for (int i = 0; i < 100; i++)
		cm_reactor_run_once(r, 10);
	ck_assert(!cli.up && !cli2.up);
	ck_assert_ptr_null(srv.accepted);
	ck_assert_ptr_null(srv2.accepted);
	cm_msgr_get_stats(srv.m, &st);
	ck_assert_uint_ge(st.tls_failures, 1);
	cm_msgr_get_stats(srv2.m, &st);
	ck_assert_uint_ge(st.tls_failures, 1);
	cm_conn_close(c);
	cm_conn_put(c);
	cm_conn_close(c2);
	cm_conn_put(c2);
	cm_msgr_destroy(cli.m);
	cm_msgr_destroy(cli2.m);
	cm_msgr_destroy(srv.m);
	cm_msgr_destroy(srv2.m);
	cm_reactor_destroy(r);
	remove_pki();
}

END_TEST

START_TEST(test_msgr_tls_untrusted_certificate)
{
	struct cm_reactor *r;
	struct side srv = { 0 }, cli = { 0 };
	struct cm_conn *c;
	uint16_t port;
	struct cm_msgr_opts o;
	struct cm_msgr *m;

	make_pki();
	pki_paths();
	r = cm_test_reactor();
	mk(r, &srv, "osd.0", g_key, tls_on);
	mk(r, &cli, "client.1", g_key, tls_other_ca);
	ck_assert_int_eq(cm_msgr_listen(srv.m, "127.0.0.1:0", &port), 0);
	snprintf(g_addr, sizeof(g_addr), "127.0.0.1:%u", port);
	ck_assert_int_eq(cm_msgr_connect(cli.m, g_addr, true, &c), 0);
	for (int i = 0; i < 300 && !cli.events[CM_CONN_FAILED]; i++)
		cm_reactor_run_once(r, 10);
	ck_assert_int_eq(cli.events[CM_CONN_FAILED], 1);
	ck_assert_int_eq(cli.last_rc, -CM_EAUTH);
	ck_assert_ptr_null(srv.accepted);
	cm_conn_put(c);
	cm_msgr_destroy(cli.m);
	cm_msgr_destroy(srv.m);
	/* Unusable files are refused at create. */
	cm_msgr_opts_init(&o, sizeof(o));
	o.entity = "x";
	o.key = g_key;
	o.key_len = sizeof(g_key);
	o.tls = true;
	o.tls_cert = "/nonexistent.pem";
	ck_assert_int_eq(cm_msgr_create(r, &o, &m), -EINVAL);
	/* Verification is the default: without a CA to verify against, TLS
	 * is refused unless tls_verify is turned off (encryption only). */
	o.tls_cert = g_cert;
	o.tls_key = g_key_file;
	o.tls_ca = NULL;
	ck_assert(o.tls_verify);
	ck_assert_int_eq(cm_msgr_create(r, &o, &m), -EINVAL);
	o.tls_verify = false;
	ck_assert_int_eq(cm_msgr_create(r, &o, &m), 0);
	cm_msgr_destroy(m);
	cm_reactor_destroy(r);
	remove_pki();
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("msgr");
	TCase *tc = tcase_create("msgr");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_msgr_exchange);
	tcase_add_test(tc, test_msgr_forward);
	tcase_add_test(tc, test_msgr_bind_src);
	tcase_add_test(tc, test_msgr_wrong_key_and_version_refused);
	tcase_add_test(tc, test_msgr_lossless_resume);
	tcase_add_test(tc, test_msgr_lossy_reset);
	tcase_add_test(tc, test_msgr_backpressure_bounded);
	tcase_add_test(tc, test_msgr_dead_peer_detected);
	tcase_add_test(tc, test_msgr_garbage_and_oversize_rejected);
	tcase_add_test(tc, test_msgr_crc_data_off_and_mismatch);
	tcase_add_test(tc, test_msgr_close_from_callback);
	tcase_add_test(tc, test_msgr_tls_exchange_and_resume);
	tcase_add_test(tc, test_msgr_tls_mismatch_diagnosed);
	tcase_add_test(tc, test_msgr_tls_untrusted_certificate);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
