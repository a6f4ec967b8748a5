/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DESIGN
 *
 * Two objects: a cm_conn is the session the application sees (queues,
 * sequence numbers, peer identity); a cm_sock is one TCP connection carrying
 * it (recv/send ios, the frame decoder, the handshake, the batch in flight).
 * An accepted socket runs its handshake detached and attaches to an existing
 * session when the peer proves the key and names a known cookie, so session
 * pointers stay stable across reconnects.
 *
 * Sending: cm_conn_send() queues and schedules a flush (a reactor nop), so all
 * sends of one loop iteration leave in one sendmsg: handshake/control frames
 * first, then application messages, each as preamble + front + data iovecs
 * (data by reference). One send is in flight per socket; partial sends resume
 * at tx_off. In lossless sessions fully sent messages move to `unacked` until
 * the peer's ack (piggybacked in every preamble, or an ACK frame when nothing
 * else goes out) covers them.
 *
 * Receiving: the frame decoder hands complete, crc-checked frames to
 * cm__msgr_sock_on_frame(); lossless sessions drop seq <= in_seq (duplicates of a
 * resend) and treat a gap as a protocol error.
 *
 * Failure: cm__msgr_sock_fail() shuts the socket down and cancels its ios; the session
 * gets its in-flight messages back (lossless) or drops them (lossy), and the
 * socket is freed once its last io completes. A periodic tick sends
 * keepalives, detects dead/stuck peers and handshake timeouts, and starts
 * reconnects whose backoff has elapsed.
 */
#include "msgr_int.h"
#include "cm/crc32c.h"
#include "cm/err.h"
#include "cm/frame.h"
#include "cm/log.h"
#include "cm/sock.h"

#include <cairn/msgr.pb-c.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <pthread.h>

CM_LOG_SUBSYS(msgr);

static void conn_connect(struct cm_conn *c);
static void sock_recv(struct cm_sock *s);
static void listener_accept(struct cm_listener *l);

/* ---------------- messages ---------------- */

/*
 * Freed messages wait in a per-thread cache for the next cm_msg_create(): a
 * window of 64 small messages in flight outgrows malloc's per-thread cache,
 * and calloc/free were a fifth of the messenger's instructions per message
 * (callgrind, bench/msgr 4 KiB x 64). Each thread has its own cache (a
 * message destroyed on another thread than the one that made it lands in
 * that thread's), so the cache needs no lock; it holds at most
 * MSG_CACHE_MAX and is freed when its thread exits. Under AddressSanitizer
 * there is no cache, so a use after destroy is still caught.
 */
#ifdef CAIRN_ASAN
#define MSG_CACHE_MAX 0
#else
#define MSG_CACHE_MAX 1024
#endif

struct msg_cache {
	struct cm_msg *head; /* linked through link.tqe_next */
	unsigned n;
	bool registered; /* msg_cache_key holds it: freed at thread exit */
};

static __thread struct msg_cache t_msg_cache;
static pthread_key_t msg_cache_key;
static pthread_once_t msg_cache_once = PTHREAD_ONCE_INIT;

static void
msg_cache_drain(void *arg)
{
	struct msg_cache *mc = arg;

	while (mc->head) {
		struct cm_msg *m = mc->head;

		mc->head = TAILQ_NEXT(m, link);
		free(m);
	}
	mc->n = 0;
	mc->registered = false; /* (a later destroy on this thread registers again) */
}

static void
msg_cache_key_init(void)
{
	if (pthread_key_create(&msg_cache_key, msg_cache_drain))
		abort();
}

int
cm_msg_create(uint16_t type, uint64_t tid, struct cm_msg **mp)
{
	struct msg_cache *mc = &t_msg_cache;
	struct cm_msg *m = mc->head;

	if (m) {
		mc->head = TAILQ_NEXT(m, link);
		mc->n--;
		memset(m, 0, sizeof(*m));
	} else if (!(m = calloc(1, sizeof(*m)))) {
		return -ENOMEM;
	}
	m->type = type;
	m->tid = tid;
	cm_sgl_init(&m->front);
	cm_sgl_init(&m->data);
	*mp = m;
	return 0;
}

void
cm_msg_destroy(struct cm_msg *m)
{
	struct msg_cache *mc = &t_msg_cache;

	if (!m)
		return;
	cm_sgl_fini(&m->front);
	cm_sgl_fini(&m->data);
	if (mc->n >= MSG_CACHE_MAX) {
		free(m);
		return;
	}
	if (!mc->registered) {
		pthread_once(&msg_cache_once, msg_cache_key_init);
		if (pthread_setspecific(msg_cache_key, mc)) {
			free(m);
			return;
		}
		mc->registered = true;
	}
	TAILQ_NEXT(m, link) = mc->head;
	mc->head = m;
	mc->n++;
}

int
cm_msg_set_front(struct cm_msg *m, const ProtobufCMessage *pb)
{
	size_t n = protobuf_c_message_get_packed_size(pb);
	struct cm_buf *b;
	int rc = cm_buf_alloc(n, &b);

	if (rc)
		return rc;
	protobuf_c_message_pack(pb, b->data);
	cm_sgl_fini(&m->front);
	rc = cm_sgl_append(&m->front, b, 0, n);
	cm_buf_put(b);
	return rc;
}

int
cm_conn_send_pb(struct cm_conn *c, uint16_t type, uint64_t tid, const ProtobufCMessage *pb,
		const struct cm_sgl *data)
{
	struct cm_msg *m;
	int rc = cm_msg_create(type, tid, &m);

	if (rc)
		return rc;
	rc = cm_msg_set_front(m, pb);
	if (!rc && data)
		rc = cm_sgl_append_sgl(&m->data, data);
	if (!rc)
		rc = cm_conn_send(c, m);
	if (rc)
		cm_msg_destroy(m);
	return rc;
}

ProtobufCMessage *
cm_msg_unpack_front_with(const struct cm_msg *m, const ProtobufCMessageDescriptor *desc,
			 ProtobufCAllocator *a)
{
	ProtobufCMessage *pb;
	struct cm_buf *flat;

	if (m->front.n <= 1) {
		const uint8_t *p = m->front.n ? m->front.sg[0].buf->data + m->front.sg[0].off
					      : (const uint8_t *)"";

		return protobuf_c_message_unpack(desc, a, m->front.len, p);
	}
	if (cm_sgl_flatten(&m->front, &flat))
		return NULL;
	pb = protobuf_c_message_unpack(desc, a, flat->len, flat->data);
	cm_buf_put(flat);
	return pb;
}

ProtobufCMessage *
cm_msg_unpack_front(const struct cm_msg *m, const ProtobufCMessageDescriptor *desc)
{
	return cm_msg_unpack_front_with(m, desc, NULL);
}

const char *
cm_conn_event_name(enum cm_conn_event ev)
{
	static const char *const names[] = { "UP", "DOWN", "RESET", "FAILED", "CLOSED" };

	return (unsigned)ev < CM_ARRAY_SIZE(names) ? names[ev] : "?";
}

static struct cm_msg *
ctl_msg(uint16_t type, struct cm_buf *front)
{
	struct cm_msg *msg;

	if (cm_msg_create(type, 0, &msg)) {
		cm_buf_put(front);
		return NULL;
	}
	if (front) {
		if (cm_sgl_append(&msg->front, front, 0, front->len)) {
			cm_buf_put(front);
			cm_msg_destroy(msg);
			return NULL;
		}
		cm_buf_put(front);
	}
	return msg;
}

/* ---------------- sessions ---------------- */

struct cm_conn *
cm_conn_get(struct cm_conn *c)
{
	c->refs++;
	return c;
}

static void
conn_drop_queue(struct cm_conn *c, struct msg_list *l)
{
	struct cm_msg *msg;

	while ((msg = TAILQ_FIRST(l))) {
		TAILQ_REMOVE(l, msg, link);
		c->q_bytes -= msg->wire_len;
		c->q_msgs--;
		cm_msg_destroy(msg);
	}
}

void
cm_conn_put(struct cm_conn *c)
{
	if (!c || --c->refs > 0)
		return;
	if (c->proxy) {
		cm__fwd_proxy_free(c);
		return;
	}
	if (c->fwd)
		cm__fwd_detach(c);
	assert(!c->sock);
	conn_drop_queue(c, &c->out_q);
	conn_drop_queue(c, &c->unacked);
	cm_caps_fini(&c->auth.caps);
	free(c);
}

const struct cm_conn_auth *
cm_conn_auth(const struct cm_conn *c)
{
	return &c->auth;
}

const char *
cm_conn_peer(const struct cm_conn *c)
{
	return c->peer[0] ? c->peer : "?";
}

bool
cm_conn_is_up(const struct cm_conn *c)
{
	return c->proxy ? cm__fwd_up(c) : c->state == C_OPEN;
}

bool
cm_conn_is_proxy(const struct cm_conn *c)
{
	return c->proxy;
}

size_t
cm_conn_queued_bytes(const struct cm_conn *c)
{
	return c->q_bytes; /* (0 on a proxy: its sends are queued on the real session) */
}

void
cm_conn_set_user(struct cm_conn *c, void *user)
{
	c->user = user;
}

void *
cm_conn_user(const struct cm_conn *c)
{
	return c->user;
}

static void
conn_event(struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct cm_msgr *m = c->m;

	if (c->fwd)
		cm__fwd_event(c, ev, rc);
	if (c->closed_by_app || m->destroying || !m->o.ops.on_event)
		return;
	m->o.ops.on_event(m->o.ops_arg, c, ev, rc);
}

static uint64_t
random_u64(void)
{
	uint64_t v = 0;

	while (v == 0) {
		if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
			v = cm_now_ns() ^ ((uint64_t)getpid() << 32);
	}
	return v;
}

static void
flush_io_done(struct cm_io *io, int res)
{
	struct cm_conn *c = io->arg;

	(void)res;
	if (c->sock && c->sock->open)
		cm__msgr_sock_flush(c->sock);
	cm_conn_put(c);
}

static void
conn_flush_schedule(struct cm_conn *c)
{
	if (cm_io_pending(&c->flush_io) || !c->sock || !c->sock->open)
		return;
	if (cm_io_nop(c->m->r, &c->flush_io) == 0)
		cm_conn_get(c);
}

static void
conn_retry(struct cm_timer *t)
{
	struct cm_conn *c = t->arg;

	if (c->client && c->state == C_WAIT && !c->sock && !c->closed_by_app)
		conn_connect(c);
}

static struct cm_conn *
conn_new(struct cm_msgr *m, bool client, bool lossless)
{
	struct cm_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->m = m;
	c->refs = 1; /* the msgr's, while listed */
	c->client = client;
	c->lossless = lossless;
	c->state = client ? C_CONNECTING : C_WAIT;
	c->backoff_ms = m->o.backoff_min_ms;
	TAILQ_INIT(&c->out_q);
	TAILQ_INIT(&c->unacked);
	c->flush_io.cb = flush_io_done;
	c->flush_io.arg = c;
	cm_timer_init(&c->retry_timer, conn_retry, c);
	TAILQ_INSERT_TAIL(&m->conns, c, link);
	return c;
}

/* Remove a session from the msgr (its list reference goes). */
static void
conn_unlist(struct cm_conn *c)
{
	if (c->state == C_CLOSED)
		return;
	c->state = C_CLOSED;
	if (c->fwd)
		cm__fwd_detach(c);
	cm_timer_cancel(c->m->r, &c->retry_timer);
	TAILQ_REMOVE(&c->m->conns, c, link);
	cm_conn_put(c);
}

void
cm_conn_close(struct cm_conn *c)
{
	if (c->closed_by_app)
		return;
	c->closed_by_app = true;
	if (c->proxy)
		return; /* (the real session is others' too) */
	if (c->sock)
		cm__msgr_sock_fail(c->sock, -CM_ECLOSED);
	conn_drop_queue(c, &c->out_q);
	conn_drop_queue(c, &c->unacked);
	conn_unlist(c);
}

int
cm_conn_reset_socket(struct cm_conn *c)
{
	if (c->proxy)
		return cm__fwd_reset(c);
	if (!c->sock)
		return -ENOTCONN;
	cm__msgr_sock_fail(c->sock, -ECONNRESET);
	return 0;
}

int
cm_conn_send(struct cm_conn *c, struct cm_msg *msg)
{
	return c->proxy ? cm__fwd_send(c, msg) : cm__conn_send(c, msg, false);
}

int
cm__conn_send(struct cm_conn *c, struct cm_msg *msg, bool force)
{
	struct cm_msgr *m = c->m;
	size_t wire = CM_FRAME_PREAMBLE_LEN + msg->front.len + msg->data.len;

	if (c->state == C_CLOSED || c->closed_by_app)
		return -CM_ECLOSED;
	if (msg->front.len > m->o.max_front || msg->data.len > m->o.max_data)
		return -EMSGSIZE;
	if (!force && ((c->q_bytes > 0 && c->q_bytes + wire > m->o.max_queue_bytes) ||
		       c->q_msgs >= m->o.max_queue_msgs)) {
		c->want_writable = true;
		return -EAGAIN;
	}
	msg->wire_len = (uint32_t)wire;
	msg->payload_crc = cm_sgl_crc32c(&msg->front, 0);
	if (m->o.crc_data && msg->data.len) /* the data's crc may be known already */
		msg->payload_crc =
			cm_crc32c_combine(msg->payload_crc, cm_sgl_crc(&msg->data), msg->data.len);
	else if (!m->o.crc_data)
		msg->flags = CM_FRAME_F_NO_DATA_CRC;
	msg->seq = ++c->out_seq;
	TAILQ_INSERT_TAIL(&c->out_q, msg, link);
	c->q_bytes += wire;
	c->q_msgs++;
	conn_flush_schedule(c);
	return 0;
}

/* Acknowledged by the peer: release everything up to ack. */
static void
conn_acked(struct cm_conn *c, uint64_t ack)
{
	struct cm_msg *msg;

	while ((msg = TAILQ_FIRST(&c->unacked)) && msg->seq <= ack) {
		TAILQ_REMOVE(&c->unacked, msg, link);
		c->q_bytes -= msg->wire_len;
		c->q_msgs--;
		cm_msg_destroy(msg);
	}
}

static void
conn_check_writable(struct cm_conn *c)
{
	struct cm_msgr *m = c->m;

	if (!c->want_writable || c->q_bytes > m->o.max_queue_bytes / 2 ||
	    c->q_msgs > m->o.max_queue_msgs / 2)
		return;
	c->want_writable = false;
	if (m->o.ops.on_writable && !c->closed_by_app && !m->destroying)
		m->o.ops.on_writable(m->o.ops_arg, c);
}

/* After a reconnect: what the peer has not delivered goes out again, first. */
static void
conn_requeue_unacked(struct cm_conn *c, uint64_t peer_in_seq)
{
	struct cm_msg *msg;

	conn_acked(c, peer_in_seq);
	while ((msg = TAILQ_LAST(&c->unacked, msg_list))) {
		TAILQ_REMOVE(&c->unacked, msg, link);
		TAILQ_INSERT_HEAD(&c->out_q, msg, link);
		c->m->st.resends++;
	}
}

/* The session's socket is gone (cm__msgr_sock_fail). Decide what the session does next. */
static void
conn_sock_lost(struct cm_conn *c, int rc, bool permanent)
{
	struct cm_msgr *m = c->m;

	if (c->closed_by_app || c->state == C_CLOSED)
		return;
	if (permanent) {
		conn_drop_queue(c, &c->out_q);
		conn_drop_queue(c, &c->unacked);
		cm_conn_get(c);
		conn_unlist(c);
		conn_event(c, CM_CONN_FAILED, rc);
		cm_conn_put(c);
		return;
	}
	if (!c->lossless) {
		/*
		 * Whatever was queued, or already handed to the kernel, may be lost:
		 * always a reset, so the client resends what is unanswered by tid.
		 */
		conn_drop_queue(c, &c->out_q);
		if (!c->client) {
			cm_conn_get(c);
			conn_unlist(c);
			conn_event(c, CM_CONN_CLOSED, rc);
			cm_conn_put(c);
			return;
		}
		conn_event(c, CM_CONN_RESET, rc);
	} else {
		conn_event(c, CM_CONN_DOWN, rc);
	}
	if (c->state == C_CLOSED)
		return;
	c->state = C_WAIT;
	if (c->client) {
		uint64_t jitter = random_u64() % (c->backoff_ms / 2 + 1);

		uint64_t delay = c->backoff_ms / 2 + jitter;

		c->retry_at_ms = cm_now_ms() + delay;
		c->backoff_ms = CM_MIN(c->backoff_ms * 2, m->o.backoff_max_ms);
		if (cm_timer_armed(&c->retry_timer))
			cm_timer_cancel(m->r, &c->retry_timer);
		cm_timer_arm(m->r, &c->retry_timer, delay);
	}
	conn_check_writable(c);
}

/* ---------------- sockets ---------------- */

static void
sock_maybe_free(struct cm_sock *s)
{
	struct cm_msg *msg;

	if (!s->dead || s->busy || cm_io_pending(&s->rx_io) || cm_io_pending(&s->tx_io) ||
	    cm_io_pending(&s->conn_io))
		return;
	cm_reactor_close(s->m->r, s->fd);
	s->fd = -1;
	while ((msg = TAILQ_FIRST(&s->ctl_q))) {
		TAILQ_REMOVE(&s->ctl_q, msg, link);
		cm_msg_destroy(msg);
	}
	while ((msg = TAILQ_FIRST(&s->inflight))) {
		TAILQ_REMOVE(&s->inflight, msg, link);
		cm_msg_destroy(msg);
	}
	cm_frame_rx_fini(&s->rx);
	cm_hs_fini(&s->hs);
	cm_frame_mac_destroy(s->tx_mac);
	SSL_free(s->ssl); /* frees both BIOs */
	free(s->tls_in);
	free(s->tls_out);
	TAILQ_REMOVE(&s->m->socks, s, link);
	if (s->conn)
		cm_conn_put(s->conn);
	free(s);
}

static bool
is_permanent(int rc)
{
	return rc == -CM_EAUTH || rc == -CM_EVERSION || rc == -CM_EREFUSED;
}

void
cm__msgr_sock_fail(struct cm_sock *s, int rc)
{
	struct cm_conn *c = s->conn;
	struct cm_msg *msg;

	if (s->dead)
		return;
	s->dead = true;
	s->m->st.sock_resets++;
	if (rc == -CM_ECLOSED || rc == -ECANCELED)
		CM_DEBUG("socket closed peer=%s addr=%s", s->hs.peer_entity, s->addr_str);
	else if (rc == 0 || rc == -ECONNRESET || rc == -EPIPE || rc == -ECONNREFUSED)
		CM_INFO("socket lost peer=%s addr=%s rc=%d (%s)",
			s->hs.peer_entity[0] ? s->hs.peer_entity : "?", s->addr_str, rc,
			cm_strerror(rc));
	else
		CM_WARN_RC(rc, "socket reset peer=%s addr=%s",
			   s->hs.peer_entity[0] ? s->hs.peer_entity : "?", s->addr_str);
	if (s->fd >= 0)
		shutdown(s->fd, SHUT_RDWR);
	cm_io_cancel(s->m->r, &s->rx_io);
	cm_io_cancel(s->m->r, &s->tx_io);
	cm_io_cancel(s->m->r, &s->conn_io);
	if (c && c->sock == s) {
		c->sock = NULL;
		/* Messages not fully sent go back to the session, in order. */
		while ((msg = TAILQ_LAST(&s->inflight, msg_list))) {
			TAILQ_REMOVE(&s->inflight, msg, link);
			if (msg->type < CM_MSG_USER_MIN) {
				cm_msg_destroy(msg);
				continue;
			}
			TAILQ_INSERT_HEAD(&c->out_q, msg, link);
		}
		s->tx_off = 0;
		conn_sock_lost(c, rc, is_permanent(rc));
	}
	sock_maybe_free(s);
}

static void
sock_queue_ctl(struct cm_sock *s, uint16_t type, struct cm_buf *front)
{
	struct cm_msg *msg = ctl_msg(type, front);

	if (!msg) {
		cm__msgr_sock_fail(s, -ENOMEM);
		return;
	}
	msg->wire_len = CM_FRAME_PREAMBLE_LEN + (uint32_t)msg->front.len;
	msg->payload_crc = cm_sgl_crc32c(&msg->front, 0);
	TAILQ_INSERT_TAIL(&s->ctl_q, msg, link);
}

/* Handshake frames are never tagged (the keys come from the handshake). */
static bool
msg_is_handshake(const struct cm_msg *msg)
{
	return (msg->type >= CM_MSG_HELLO && msg->type <= CM_MSG_READY_ACK) ||
	       msg->type == CM_MSG_REFUSE;
}

/* mac: tag the frame (the socket's next). \return 0, -EIO. */
static int
msg_build_preamble(struct cm_msg *msg, uint64_t ack, struct cm_frame_mac *mac)
{
	struct cm_frame_hdr h = {
		.version = CM_FRAME_VERSION,
		.flags = (uint8_t)((msg->flags & ~CM_FRAME_F_MAC) | (mac ? CM_FRAME_F_MAC : 0)),
		.type = msg->type,
		.tid = msg->tid,
		.seq = msg->type >= CM_MSG_USER_MIN ? msg->seq : 0,
		.ack = ack,
		.front_len = (uint32_t)msg->front.len,
		.data_len = (uint32_t)msg->data.len,
		.payload_crc = msg->payload_crc,
	};

	cm_frame_hdr_encode(&h, msg->preamble);
	msg->tag_len = 0;
	if (!mac)
		return 0;
	msg->tag_len = CM_FRAME_MAC_LEN;
	return cm_frame_mac_sign(mac, msg->preamble, &msg->front, &msg->data, msg->tag);
}

/* iovecs for msg's wire bytes from `skip` on. \return count. */
int
cm__msgr_msg_iov(struct cm_msg *msg, size_t skip, struct iovec *iov, int max)
{
	int n = 0;

	if (max <= 0)
		return 0;
	if (skip < CM_FRAME_PREAMBLE_LEN) {
		iov[n].iov_base = msg->preamble + skip;
		iov[n].iov_len = CM_FRAME_PREAMBLE_LEN - skip;
		n++;
		skip = 0;
	} else {
		skip -= CM_FRAME_PREAMBLE_LEN;
	}
	if (skip < msg->front.len) {
		n += cm_sgl_to_iov(&msg->front, skip, iov + n, max - n);
		skip = 0;
	} else {
		skip -= msg->front.len;
	}
	if (skip < msg->data.len) {
		n += cm_sgl_to_iov(&msg->data, skip, iov + n, max - n);
		skip = 0;
	} else {
		skip -= msg->data.len;
	}
	/* The tag, unless the data filled the iovecs (then it goes next time). */
	if (skip < msg->tag_len && n < max) {
		iov[n].iov_base = msg->tag + skip;
		iov[n].iov_len = msg->tag_len - skip;
		n++;
	}
	return n;
}

void
cm__msgr_sock_pull(struct cm_sock *s, struct msg_list *from)
{
	struct cm_conn *c = s->conn;
	struct cm_msg *msg;

	while ((msg = TAILQ_FIRST(from))) {
		TAILQ_REMOVE(from, msg, link);
		if (msg_build_preamble(msg, c ? c->in_seq : 0,
				       msg_is_handshake(msg) ? NULL : s->tx_mac)) {
			TAILQ_INSERT_HEAD(from, msg, link);
			cm__msgr_sock_fail(s, -EIO);
			return;
		}
		if (c)
			c->acked_to_peer = c->in_seq;
		TAILQ_INSERT_TAIL(&s->inflight, msg, link);
	}
}

void
cm__msgr_sock_flush(struct cm_sock *s)
{
	struct cm_conn *c = s->conn;
	struct cm_msg *msg;
	int n = 0, rc;
	size_t skip;

	if (s->dead || cm_io_pending(&s->tx_io))
		return;
	if (s->ssl) {
		cm__msgr_tls_flush(s);
		return;
	}
	cm__msgr_sock_pull(s, &s->ctl_q);
	if (s->open && c && c->sock == s)
		cm__msgr_sock_pull(s, &c->out_q);
	skip = s->tx_off;
	TAILQ_FOREACH(msg, &s->inflight, link) {
		if (n >= MSGR_IOV_MAX - 2)
			break;
		n += cm__msgr_msg_iov(msg, skip, s->iov + n, MSGR_IOV_MAX - n);
		skip = 0;
	}
	if (n == 0) {
		if (s->draining)
			cm__msgr_sock_fail(s, s->drain_rc);
		return;
	}
	rc = cm_io_sendmsg(s->m->r, &s->tx_io, s->fd, s->iov, n);
	if (rc)
		cm__msgr_sock_fail(s, rc);
}

/*
 * Run a socket io callback's body holding the socket: it may fail (and would
 * be freed) deep inside the body.
 */
static void
sock_io_guarded(struct cm_io *io, int res, void (*body)(struct cm_sock *s, int res))
{
	struct cm_sock *s = io->arg;

	s->busy++;
	body(s, res);
	s->busy--;
	sock_maybe_free(s);
}

/* n plaintext bytes of the in-flight batch are gone: retire whole messages. */
void
cm__msgr_sock_tx_account(struct cm_sock *s, size_t left)
{
	struct cm_conn *c = s->conn;
	struct cm_msg *msg;

	while (left > 0 && (msg = TAILQ_FIRST(&s->inflight))) {
		size_t rest = msg->wire_len + msg->tag_len - s->tx_off;

		if (left < rest) {
			s->tx_off += left;
			break;
		}
		left -= rest;
		s->tx_off = 0;
		TAILQ_REMOVE(&s->inflight, msg, link);
		if (msg->type < CM_MSG_USER_MIN) {
			cm_msg_destroy(msg);
			continue;
		}
		s->m->st.msgs_sent++;
		if (c && c->lossless) {
			TAILQ_INSERT_TAIL(&c->unacked, msg, link);
		} else {
			if (c) {
				c->q_bytes -= msg->wire_len;
				c->q_msgs--;
			}
			cm_msg_destroy(msg);
		}
	}
}

/*
 * Lossless: if we delivered messages the peer has not heard about and
 * nothing is going out to carry the ack in its preamble, queue an ACK frame.
 * \return true when one was queued.
 */
static bool
sock_ack_if_owed(struct cm_sock *s)
{
	struct cm_conn *c = s->conn;

	if (!c || !c->lossless || !s->open || c->in_seq == c->acked_to_peer ||
	    cm_io_pending(&s->tx_io) || !TAILQ_EMPTY(&s->inflight) || !TAILQ_EMPTY(&c->out_q) ||
	    !TAILQ_EMPTY(&s->ctl_q))
		return false;
	sock_queue_ctl(s, CM_MSG_ACK, NULL);
	return true;
}

/* After a send completed: owe an ack? send more, tell a blocked sender. */
static void
sock_tx_after(struct cm_sock *s)
{
	struct cm_conn *c = s->conn;

	sock_ack_if_owed(s);
	cm__msgr_sock_flush(s);
	if (c && !s->dead)
		conn_check_writable(c);
}

static void
sock_tx_done_body(struct cm_sock *s, int res)
{
	if (s->dead) {
		sock_maybe_free(s);
		return;
	}
	if (res < 0) {
		cm__msgr_sock_fail(s, res);
		return;
	}
	s->m->st.bytes_sent += (uint64_t)res;
	s->last_tx = s->last_progress = cm_now_ms();
	if (s->ssl) {
		/* Ciphertext: plaintext was accounted when it was encrypted. */
		s->tls_out_off += (size_t)res;
		if (s->tls_out_off < s->tls_out_len) {
			s->tls_iov.iov_base = s->tls_out + s->tls_out_off;
			s->tls_iov.iov_len = s->tls_out_len - s->tls_out_off;
			if (cm_io_sendmsg(s->m->r, &s->tx_io, s->fd, &s->tls_iov, 1))
				cm__msgr_sock_fail(s, -EIO);
			return;
		}
		s->tls_out_len = s->tls_out_off = 0;
	} else {
		cm__msgr_sock_tx_account(s, (size_t)res);
	}
	sock_tx_after(s);
}

static void
sock_tx_done(struct cm_io *io, int res)
{
	sock_io_guarded(io, res, sock_tx_done_body);
}

/* ---------------- handshake ---------------- */

static int
session_find(void *arg, struct cm_hs *hs, uint64_t *in_seq, bool *reset)
{
	struct cm_sock *s = arg;
	struct cm_msgr *m = s->m;
	struct cm_conn *c, *found = NULL, *tmp;

	TAILQ_FOREACH_SAFE(c, &m->conns, link, tmp) {
		if (c->client || !c->lossless || !hs->lossless || strcmp(c->peer, hs->peer_entity))
			continue;
		if (c->cookie == hs->cookie) {
			found = c;
			continue;
		}
		/* Same peer, new cookie: it restarted, its old session is void. */
		CM_NOTICE("peer restarted, session reset peer=%s", c->peer);
		if (c->sock)
			cm__msgr_sock_fail(c->sock, -CM_ERESET);
		cm_conn_get(c);
		conn_drop_queue(c, &c->out_q);
		conn_drop_queue(c, &c->unacked);
		conn_unlist(c);
		conn_event(c, CM_CONN_RESET, -CM_ERESET);
		cm_conn_put(c);
	}
	if (found) {
		if (found->sock && found->sock != s)
			cm__msgr_sock_fail(found->sock, -CM_ERESET);
		*in_seq = found->in_seq;
		*reset = false;
		c = found;
	} else {
		c = conn_new(m, false, hs->lossless);
		if (!c)
			return -ENOMEM;
		snprintf(c->peer, sizeof(c->peer), "%s", hs->peer_entity);
		c->cookie = hs->cookie;
		*in_seq = 0;
		*reset = true;
	}
	s->conn = cm_conn_get(c);
	c->sock = s;
	return 0;
}

static void
sock_set_limits(struct cm_sock *s)
{
	/* Before authentication, only small handshake frames; the limits grow after. */
	s->rx.lim.max_front = s->open ? s->m->o.max_front : CM_HS_MAX_FRONT;
	s->rx.lim.max_data = s->open ? s->m->o.max_data : 0;
}

static void
hs_done(struct cm_sock *s)
{
	struct cm_conn *c = s->conn;
	struct cm_msgr *m = s->m;

	s->open = true;
	sock_set_limits(s);
	c->state = C_OPEN;
	c->backoff_ms = m->o.backoff_min_ms;
	snprintf(c->peer, sizeof(c->peer), "%s", s->hs.peer_entity);
	if (!c->client) {
		/* What this handshake proved replaces what an earlier one did. */
		char cerr[8];

		cm_caps_fini(&c->auth.caps);
		memset(&c->auth, 0, sizeof(c->auth));
		c->auth_gen++;
		snprintf(c->auth.name, sizeof(c->auth.name), "%s", s->hs.auth.name);
		c->auth.expires_ns = s->hs.auth.expires_ns;
		c->auth.auth_epoch = s->hs.auth.auth_epoch;
		if (s->hs.auth.caps &&
		    cm_caps_parse(s->hs.auth.caps, &c->auth.caps, cerr, sizeof(cerr)))
			CM_WARN("peer=%s: its caps do not parse: it gets none", c->peer);
	}
	if (c->client && s->hs.session_reset && c->had_session && c->lossless) {
		/* The server lost our session (it restarted): fates unknown, start over. */
		CM_NOTICE("session reset by peer=%s, dropping %u queued messages", c->peer,
			  c->q_msgs);
		conn_drop_queue(c, &c->out_q);
		conn_drop_queue(c, &c->unacked);
		c->out_seq = c->in_seq = c->acked_to_peer = 0;
		conn_event(c, CM_CONN_RESET, -CM_ERESET);
	} else if (c->lossless) {
		conn_requeue_unacked(c, s->hs.peer_in_seq);
	}
	c->had_session = true;
	CM_INFO("session up peer=%s addr=%s lossless=%d proto=%u", c->peer, s->addr_str,
		c->lossless, s->hs.proto);
	if (!c->client && !c->accepted_notified) {
		c->accepted_notified = true;
		if (m->o.ops.on_accept && !m->destroying)
			m->o.ops.on_accept(m->o.ops_arg, c);
	} else {
		conn_event(c, CM_CONN_UP, 0);
	}
	if (s->conn && c->sock == s)
		cm__msgr_sock_flush(s);
}

/*
 * Frame MACs start at fixed points of the handshake (cm/msgr_hs.h): the
 * server tags what it sends after READY, the client after READY_ACK; each
 * side checks what it receives after the other's last handshake frame.
 * hs_rc: cm_hs_input's (1: done). \return hs_rc or -ENOMEM.
 */
static int
sock_mac_start(struct cm_sock *s, int hs_rc)
{
	struct cm_frame_mac *rx;
	bool tx_now = hs_rc == 1 || (s->server && s->hs.state == CM_HS_WAIT_READY_ACK);

	bool gmac = s->hs.proto >= CM_MSGR_PROTO_GMAC;

	if (tx_now && !s->tx_mac && cm_frame_mac_create(s->hs.mac_tx, gmac, &s->tx_mac))
		return -ENOMEM;
	if (hs_rc == 1) {
		if (cm_frame_mac_create(s->hs.mac_rx, gmac, &rx))
			return -ENOMEM;
		cm_frame_rx_set_mac(&s->rx, rx);
	}
	return hs_rc;
}

static int
sock_handshake_frame(struct cm_sock *s, struct cm_frame *f)
{
	struct cm_hs_out out;
	struct cm_buf *flat = NULL;
	const uint8_t *p = (const uint8_t *)"";
	int rc;

	if (f->hdr.type >= CM_MSG_USER_MIN || f->data.len) {
		s->m->st.bad_frames++;
		return -EPROTO;
	}
	if (f->front.n == 1) {
		p = f->front.sg[0].buf->data + f->front.sg[0].off;
	} else if (f->front.n > 1) {
		rc = cm_sgl_flatten(&f->front, &flat);
		if (rc)
			return rc;
		p = flat->data;
	}
	rc = cm_hs_input(&s->hs, f->hdr.type, p, f->front.len, &out);
	cm_buf_put(flat);
	if (out.type)
		sock_queue_ctl(s, out.type, out.front);
	if (rc >= 0 && s->hs.mac && !s->ssl) {
		rc = sock_mac_start(s, rc);
		if (rc < 0)
			return rc;
	}
	if (rc < 0) {
		if (rc == -CM_EAUTH)
			s->m->st.auth_failures++;
		CM_WARN("handshake failed peer=%s addr=%s: %s",
			s->hs.peer_entity[0] ? s->hs.peer_entity : "?", s->addr_str, s->hs.reason);
		if (out.type) {
			/* Let the REFUSE reach the peer, then close. */
			s->draining = true;
			s->drain_rc = rc;
			cm__msgr_sock_flush(s);
			return -CM_ECLOSED;
		}
		return rc;
	}
	if (rc == 1)
		hs_done(s);
	else
		cm__msgr_sock_flush(s);
	return 0;
}

/* ---------------- receive ---------------- */

int
cm__msgr_sock_on_frame(void *arg, struct cm_frame *f)
{
	struct cm_sock *s = arg;
	struct cm_conn *c = s->conn;
	struct cm_msgr *m = s->m;
	struct cm_msg *msg;

	if (s->dead || s->draining)
		return -CM_ECLOSED;
	if (!s->open)
		return sock_handshake_frame(s, f);
	if ((f->hdr.flags & CM_FRAME_F_NO_DATA_CRC) && m->o.crc_data && f->data.len) {
		CM_LOG_RL(
			CM_LOG_ERR,
			"peer=%s sends data without crc32c but crc_data is on here: set crc_data the same cluster-wide",
			c->peer);
		m->st.bad_frames++;
		return -EPROTO;
	}
	if (c->lossless)
		conn_acked(c, f->hdr.ack);
	if (f->hdr.type < CM_MSG_USER_MIN) {
		switch (f->hdr.type) {
		case CM_MSG_KEEPALIVE:
			sock_queue_ctl(s, CM_MSG_KEEPALIVE_ACK, NULL);
			cm__msgr_sock_flush(s);
			return 0;
		case CM_MSG_KEEPALIVE_ACK:
		case CM_MSG_ACK:
			return 0;
		default:
			m->st.bad_frames++;
			return -EPROTO;
		}
	}
	if (c->lossless) {
		if (f->hdr.seq <= c->in_seq) {
			m->st.dups_dropped++;
			return 0;
		}
		if (f->hdr.seq != c->in_seq + 1) {
			CM_WARN("sequence gap peer=%s got=%" PRIu64 " want=%" PRIu64, c->peer,
				f->hdr.seq, c->in_seq + 1);
			m->st.bad_frames++;
			return -EPROTO;
		}
		c->in_seq = f->hdr.seq;
	}
	if (cm_msg_create(f->hdr.type, f->hdr.tid, &msg))
		return -ENOMEM;
	msg->seq = f->hdr.seq;
	if (cm_sgl_move(&msg->front, &f->front) || cm_sgl_move(&msg->data, &f->data)) {
		cm_msg_destroy(msg);
		return -ENOMEM;
	}
	m->st.msgs_recv++;
	cm_conn_get(c);
	if (m->o.ops.on_msg && !c->closed_by_app && !m->destroying)
		m->o.ops.on_msg(m->o.ops_arg, c, msg);
	else
		cm_msg_destroy(msg);
	cm_conn_put(c);
	return s->dead ? -CM_ECLOSED : 0;
}

static void
sock_rx_done_body(struct cm_sock *s, int res)
{
	struct cm_conn *c;
	bool first;
	int rc;

	if (s->dead) {
		sock_maybe_free(s);
		return;
	}
	if (res <= 0) {
		cm__msgr_sock_fail(s, res == 0 ? -ECONNRESET : res);
		return;
	}
	s->last_rx = cm_now_ms();
	s->m->st.bytes_recv += (uint64_t)res;
	first = s->rx_total == 0;
	s->rx_total += (uint64_t)res;
	if (s->ssl) {
		rc = cm__msgr_tls_rx(s, (size_t)res, first);
	} else if (first && res >= 2 && s->rx_ptr[0] == 0x16 && s->rx_ptr[1] == 0x03) {
		CM_WARN("addr=%s opened with a TLS handshake but tls is off here: set tls the same on both sides",
			s->addr_str);
		s->m->st.tls_failures++;
		rc = -EPROTO;
	} else {
		rc = cm_frame_rx_advance(&s->rx, (size_t)res, cm__msgr_sock_on_frame, s);
	}
	if (rc == -CM_ECRC)
		s->m->st.crc_errors++;
	else if (rc == -CM_EMAC)
		s->m->st.mac_failures++;
	else if (rc == -EBADMSG || rc == -EMSGSIZE || rc == -EPROTO)
		s->m->st.bad_frames++;
	if (rc == -CM_ECLOSED && s->draining && !s->dead)
		return; /* the REFUSE is on its way; cm__msgr_sock_flush closes after it */
	if (rc) {
		cm__msgr_sock_fail(s, rc);
		return;
	}
	if (s->dead)
		return;
	c = s->conn;
	if (c)
		conn_check_writable(c); /* acks may have freed queue space */
	if (sock_ack_if_owed(s))
		cm__msgr_sock_flush(s);
	sock_recv(s);
}

static void
sock_rx_done(struct cm_io *io, int res)
{
	sock_io_guarded(io, res, sock_rx_done_body);
}

static void
sock_recv(struct cm_sock *s)
{
	void *p;
	size_t len;
	int rc;

	if (s->dead)
		return;
	if (s->ssl) {
		p = s->tls_in;
		len = TLS_IN_SIZE;
		rc = 0;
	} else {
		rc = cm_frame_rx_prepare(&s->rx, &p, &len);
	}
	s->rx_ptr = p;
	if (!rc)
		rc = cm_io_recv(s->m->r, &s->rx_io, s->fd, p, len);
	if (rc)
		cm__msgr_sock_fail(s, rc);
}

static struct cm_sock *
sock_new(struct cm_msgr *m, int fd, bool server)
{
	struct cm_sock *s = calloc(1, sizeof(*s));
	struct cm_frame_limits lim = { CM_HS_MAX_FRONT, 0 };

	if (!s)
		return NULL;
	s->m = m;
	s->fd = fd;
	s->server = server;
	s->rx_io.cb = sock_rx_done;
	s->rx_io.arg = s;
	s->tx_io.cb = sock_tx_done;
	s->tx_io.arg = s;
	TAILQ_INIT(&s->ctl_q);
	TAILQ_INIT(&s->inflight);
	cm_frame_rx_init(&s->rx, m->o.rbuf_size, &lim);
	cm_hs_init(&s->hs, server ? CM_HS_SERVER : CM_HS_CLIENT, m->key, m->o.key_len, m->entity);
	if (server && m->o.auth.auth_fn)
		cm_hs_set_auth_fn(&s->hs, m->o.auth.auth_fn, m->o.ops_arg);
	s->hs.proto_min = m->o.proto_min;
	s->hs.proto_max = m->o.proto_max;
	s->t_start = s->last_rx = s->last_tx = s->last_progress = cm_now_ms();
	if (m->ssl_ctx) {
		s->ssl = SSL_new(m->ssl_ctx);
		s->rbio = BIO_new(BIO_s_mem());
		s->wbio = BIO_new(BIO_s_mem());
		s->tls_in = malloc(TLS_IN_SIZE);
		if (!s->ssl || !s->rbio || !s->wbio || !s->tls_in) {
			BIO_free(s->rbio);
			BIO_free(s->wbio);
			SSL_free(s->ssl);
			free(s->tls_in);
			cm_frame_rx_fini(&s->rx);
			free(s);
			return NULL;
		}
		SSL_set_bio(s->ssl, s->rbio, s->wbio);
		if (server)
			SSL_set_accept_state(s->ssl);
		else
			SSL_set_connect_state(s->ssl);
	}
	TAILQ_INSERT_TAIL(&m->socks, s, link);
	return s;
}

/* ---------------- connect / accept ---------------- */

static void
sock_connect_done_body(struct cm_sock *s, int res)
{
	struct cm_conn *c = s->conn;
	struct cm_hs_out out;
	int rc;

	if (s->dead) {
		sock_maybe_free(s);
		return;
	}
	if (res < 0) {
		cm__msgr_sock_fail(s, res);
		return;
	}
	s->hs.cookie = c->cookie;
	s->hs.lossless = c->lossless;
	s->hs.my_in_seq = c->in_seq;
	if (s->m->o.auth.cred_fn) {
		struct cm_cred *cred = calloc(1, sizeof(*cred));

		rc = cred ? s->m->o.auth.cred_fn(s->m->o.ops_arg, c, c->cred_kind, cred) : -ENOMEM;
		if (!rc)
			rc = cm_hs_set_cred(&s->hs, cred->auth_name, cred->key, cred->ticket,
					    cred->ticket_len, cred->ticket_gen);
		if (cred) {
			OPENSSL_cleanse(cred, sizeof(*cred));
			free(cred);
		}
		if (rc) {
			cm__msgr_sock_fail(s, rc);
			return;
		}
	}
	rc = cm_hs_start(&s->hs, &out);
	if (rc) {
		cm__msgr_sock_fail(s, rc);
		return;
	}
	sock_queue_ctl(s, out.type, out.front);
	cm__msgr_sock_flush(s);
	sock_recv(s);
}

static void
sock_connect_done(struct cm_io *io, int res)
{
	sock_io_guarded(io, res, sock_connect_done_body);
}

/* Bind fd to the messenger's source address (opts.bind_src), if any. */
static int
bind_src(struct cm_msgr *m, int fd, sa_family_t family)
{
	int one = 1;

	if (!m->src_len || m->src.ss_family != family)
		return 0;
	/* With port 0 the port is picked at connect (by the 4-tuple), not here. */
	(void)setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	return bind(fd, (struct sockaddr *)&m->src, m->src_len) ? -errno : 0;
}

static void
conn_connect(struct cm_conn *c)
{
	struct cm_msgr *m = c->m;
	struct cm_sock *s;
	int fd, rc;

	rc = cm_sock_stream(c->addr.ss_family, &fd);
	if (rc) {
		CM_WARN_RC(rc, "socket() for peer addr=%s", c->addr_str);
		c->retry_at_ms = cm_now_ms() + c->backoff_ms;
		return;
	}
	rc = bind_src(m, fd, c->addr.ss_family);
	if (rc) {
		CM_WARN_RC(rc, "bind to the source address for peer addr=%s", c->addr_str);
		close(fd);
		c->retry_at_ms = cm_now_ms() + c->backoff_ms;
		return;
	}
	s = sock_new(m, fd, false);
	if (!s) {
		close(fd);
		c->retry_at_ms = cm_now_ms() + c->backoff_ms;
		return;
	}
	snprintf(s->addr_str, sizeof(s->addr_str), "%s", c->addr_str);
	s->conn = cm_conn_get(c);
	c->sock = s;
	c->state = C_CONNECTING;
	s->conn_io.cb = sock_connect_done;
	s->conn_io.arg = s;
	rc = cm_io_connect(m->r, &s->conn_io, fd, (struct sockaddr *)&c->addr, c->addrlen);
	if (rc)
		cm__msgr_sock_fail(s, rc);
}

int
cm_msgr_connect(struct cm_msgr *m, const char *addr, bool lossless, struct cm_conn **cp)
{
	return cm_msgr_connect_kind(m, addr, lossless, 0, cp);
}

int
cm_msgr_connect_kind(struct cm_msgr *m, const char *addr, bool lossless, unsigned kind,
		     struct cm_conn **cp)
{
	struct cm_conn *c;
	struct sockaddr_storage ss;
	socklen_t len;
	int rc;

	if (!m->o.key_len && !m->o.auth.cred_fn)
		return -EINVAL; /* nothing to prove who we are with */
	rc = cm_sock_parse_addr(addr, &ss, &len);
	if (rc)
		return rc;
	c = conn_new(m, true, lossless);
	if (!c)
		return -ENOMEM;
	c->addr = ss;
	c->addrlen = len;
	snprintf(c->addr_str, sizeof(c->addr_str), "%s", addr);
	c->cred_kind = kind;
	c->cookie = random_u64();
	conn_connect(c);
	*cp = cm_conn_get(c);
	return 0;
}

static void
listener_done(struct cm_io *io, int res)
{
	struct cm_listener *l = io->arg;
	struct cm_msgr *m = l->m;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct cm_sock *s;

	if (res == -ECANCELED || m->destroying)
		return;
	if (res < 0) {
		CM_LOG_RL(CM_LOG_WARN, "accept failed rc=%d (%s)", res, cm_strerror(res));
		if (res == -EMFILE || res == -ENFILE || res == -ENOMEM) {
			/* Out of fds: a tick later, try again rather than spin. */
			usleep(1000);
		}
		listener_accept(l);
		return;
	}
	cm_sock_tune(res);
	s = sock_new(m, res, true);
	if (!s) {
		close(res);
	} else {
		if (getpeername(res, (struct sockaddr *)&ss, &len) == 0)
			cm_sock_addr_str((struct sockaddr *)&ss, s->addr_str, sizeof(s->addr_str));
		s->hs.session_fn = session_find;
		s->hs.session_arg = s;
		sock_recv(s);
	}
	listener_accept(l);
}

static void
listener_accept(struct cm_listener *l)
{
	int rc = cm_io_accept(l->m->r, &l->io, l->fd);

	if (rc)
		CM_ERR_RC(rc, "cannot accept on listener fd=%d", l->fd);
}

int
cm_msgr_listen(struct cm_msgr *m, const char *addr, uint16_t *port)
{
	struct cm_listener *l;
	int rc;

	if (!m->o.key_len && !m->o.auth.auth_fn) {
		CM_ERR("messenger: no cluster key and no auth_fn: cannot listen on %s", addr);
		return -EINVAL;
	}
	if (m->ssl_ctx && !SSL_CTX_get0_certificate(m->ssl_ctx)) {
		CM_ERR("tls is on but no tls_cert/tls_key: cannot listen on %s", addr);
		return -EINVAL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	rc = cm_sock_listen(addr, 512, &l->fd, port);
	if (rc) {
		free(l);
		return rc;
	}
	l->m = m;
	l->io.cb = listener_done;
	l->io.arg = l;
	l->next = m->listeners;
	m->listeners = l;
	listener_accept(l);
	return 0;
}

/* ---------------- tick: keepalive, timeouts, reconnects ---------------- */

static void
msgr_tick(struct cm_timer *t)
{
	struct cm_msgr *m = t->arg;
	struct cm_sock *s, *stmp;
	struct cm_conn *c, *ctmp;
	uint64_t now = cm_now_ms();

	TAILQ_FOREACH_SAFE(s, &m->socks, link, stmp) {
		if (s->dead)
			continue;
		if (!s->open) {
			if (now - s->t_start >= m->o.timeout_ms)
				cm__msgr_sock_fail(s, -ETIMEDOUT);
			continue;
		}
		if (now - s->last_rx >= m->o.timeout_ms) {
			m->st.keepalive_timeouts++;
			cm__msgr_sock_fail(s, -CM_EPEERDEAD);
			continue;
		}
		if (!TAILQ_EMPTY(&s->inflight) && now - s->last_progress >= m->o.timeout_ms) {
			cm__msgr_sock_fail(s, -CM_ESTUCK);
			continue;
		}
		if (now - s->last_tx >= m->o.keepalive_ms && TAILQ_EMPTY(&s->ctl_q)) {
			sock_queue_ctl(s, CM_MSG_KEEPALIVE, NULL);
			s->last_tx = now;
			cm__msgr_sock_flush(s);
		}
	}
	TAILQ_FOREACH_SAFE(c, &m->conns, link, ctmp) {
		if (c->client && c->state == C_WAIT && !c->sock && now >= c->retry_at_ms)
			conn_connect(c);
	}
	cm_timer_arm(m->r, &m->tick, CM_MAX(10u, CM_MIN(m->o.keepalive_ms / 4, 100u)));
}

/* ---------------- msgr ---------------- */

void
cm_msgr_opts_init(struct cm_msgr_opts *o, size_t size)
{
	memset(o, 0, size);
	o->opts_size = size;
	o->max_front = 4u << 20;
	o->max_data = 64u << 20;
	o->max_queue_bytes = 256u << 20;
	o->max_queue_msgs = 65536;
	o->keepalive_ms = 1000;
	o->timeout_ms = 15000;
	o->backoff_min_ms = 20;
	o->backoff_max_ms = 2000;
	o->rbuf_size = 256u << 10;
	o->proto_min = CM_MSGR_PROTO_MAC;
	o->proto_max = CM_MSGR_PROTO_MAX;
	o->crc_data = true;
	o->tls_verify = true;
}

int
cm_msgr_create(struct cm_reactor *r, const struct cm_msgr_opts *o, struct cm_msgr **mp)
{
	struct cm_msgr *m;

	/* A shared key, or identities for the side(s) it plays (checked again
	 * at listen and connect). */
	if (!o || !o->entity || !o->entity[0] ||
	    ((!o->key || o->key_len == 0) && !o->auth.auth_fn && !o->auth.cred_fn))
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	cm_msgr_opts_init(&m->o, sizeof(m->o));
	memcpy(&m->o, o, CM_MIN(o->opts_size, sizeof(m->o)));
	m->o.opts_size = sizeof(m->o);
	m->key = malloc(o->key && o->key_len ? o->key_len : 1);
	if (!m->key) {
		free(m);
		return -ENOMEM;
	}
	if (o->key && o->key_len)
		memcpy(m->key, o->key, o->key_len);
	else
		m->o.key_len = 0;
	m->o.key = m->key;
	snprintf(m->entity, sizeof(m->entity), "%s", o->entity);
	m->o.entity = m->entity;
	if (m->o.keepalive_ms == 0)
		m->o.keepalive_ms = 1000;
	if (m->o.timeout_ms == 0)
		m->o.timeout_ms = 15000;
	if (m->o.backoff_min_ms == 0)
		m->o.backoff_min_ms = 20;
	if (m->o.backoff_max_ms < m->o.backoff_min_ms)
		m->o.backoff_max_ms = m->o.backoff_min_ms;
	if (m->o.bind_src && m->o.bind_src[0] &&
	    cm_sock_parse_addr(m->o.bind_src, &m->src, &m->src_len)) {
		CM_ERR("messenger: bad source address '%s' (IP:PORT)", m->o.bind_src);
		free(m->key);
		free(m);
		return -EINVAL;
	}
	m->o.bind_src = NULL; /* parsed */
	if (m->o.tls) {
		m->ssl_ctx = cm__msgr_tls_ctx_create(o);
		if (!m->ssl_ctx) {
			free(m->key);
			free(m);
			return -EINVAL;
		}
	}
	m->o.tls_cert = m->o.tls_key = m->o.tls_ca = NULL; /* read at create only */
	m->r = r;
	TAILQ_INIT(&m->conns);
	TAILQ_INIT(&m->socks);
	cm_timer_init(&m->tick, msgr_tick, m);
	cm_timer_arm(r, &m->tick, 10);
	*mp = m;
	return 0;
}

void
cm_msgr_destroy(struct cm_msgr *m)
{
	struct cm_conn *c;
	struct cm_sock *s, *tmp;
	struct cm_listener *l;
	uint64_t end;

	if (!m)
		return;
	m->destroying = true;
	cm_timer_cancel(m->r, &m->tick);
	for (l = m->listeners; l; l = l->next) {
		cm_io_cancel(m->r, &l->io);
		shutdown(l->fd, SHUT_RDWR);
	}
	while ((c = TAILQ_FIRST(&m->conns)))
		cm_conn_close(c);
	TAILQ_FOREACH_SAFE(s, &m->socks, link, tmp)
		cm__msgr_sock_fail(s, -CM_ECLOSED);
	/* Let cancelled ios come back before the memory they point at goes. */
	end = cm_now_ms() + 5000;
	while (cm_now_ms() < end) {
		bool busy = !TAILQ_EMPTY(&m->socks);

		for (l = m->listeners; l; l = l->next)
			busy |= cm_io_pending(&l->io);
		if (!busy)
			break;
		cm_reactor_run_once(m->r, 10);
	}
	while ((l = m->listeners)) {
		m->listeners = l->next;
		cm_reactor_close(m->r, l->fd);
		free(l);
	}
	SSL_CTX_free(m->ssl_ctx);
	free(m->key);
	free(m);
}

void
cm_msgr_get_stats(const struct cm_msgr *m, struct cm_msgr_stats *st)
{
	*st = m->st;
}
