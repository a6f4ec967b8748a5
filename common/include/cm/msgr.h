/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The messenger: framed, authenticated message links over TCP on a reactor.
 *
 * A cm_msgr lives on one reactor and owns listening sockets and connections.
 * A cm_conn is a session with one peer; underneath, TCP sockets come and go:
 *  - lossless sessions (daemon to daemon): every message gets a sequence
 *    number; the sender keeps it until the peer acknowledges it; after a
 *    reconnect both sides say what they delivered and the rest is resent, so
 *    each message is delivered exactly once, in order. The connecting side
 *    reconnects with backoff; the accepting side keeps the session for it.
 *  - lossy sessions (clients): on a socket failure queued messages are dropped
 *    and CM_CONN_RESET is reported; the client resends by tid.
 *
 * Backpressure: each session's queue (queued + in flight + unacknowledged) is
 * bounded in bytes and messages; cm_conn_send() returns -EAGAIN when full and
 * on_writable() fires when it drains below half. Keepalives detect a dead peer
 * (nothing received for timeout_ms) and a stuck one (no send progress for
 * timeout_ms); both reset the socket.
 *
 * Every frame is crc-checked; lengths are checked against limits before any
 * allocation; a malformed, oversized or corrupt frame resets the socket and
 * is never delivered. Before authentication only small handshake frames are
 * accepted.
 *
 * Threading: everything runs on the msgr's reactor thread; call the functions
 * here only from it. Callbacks run on it too.
 */
#ifndef CM_MSGR_H
#define CM_MSGR_H

#include "cm/buf.h"
#include "cm/caps.h"
#include "cm/msgr_hs.h"
#include "cm/reactor.h"

#include <protobuf-c/protobuf-c.h>

struct cm_msgr;
struct cm_conn;

/* A message: type, tid, a protobuf front and a raw data segment. */
struct cm_msg {
	uint16_t type; /* >= CM_MSG_USER_MIN for application messages */
	uint64_t tid;  /* the sender's transaction id (lossy clients resend by it) */
	struct cm_sgl front;
	struct cm_sgl data;
	/* private */
	uint64_t seq;
	uint8_t flags;
	uint32_t payload_crc;
	uint32_t wire_len; /* preamble, front and data (what queue limits count) */
	uint8_t preamble[48];
	uint8_t tag_len; /* the frame's MAC after the data (this socket's): 0 or 16 */
	uint8_t tag[16];
	TAILQ_ENTRY(cm_msg) link;
};

/* \return 0, -ENOMEM. */
int cm_msg_create(uint16_t type, uint64_t tid, struct cm_msg **mp);

/* Free m and drop its references. NULL is a no-op. */
void cm_msg_destroy(struct cm_msg *m);

/* Pack pb as the front. \return 0, -ENOMEM. */
int cm_msg_set_front(struct cm_msg *m, const ProtobufCMessage *pb);

/* Unpack the front. \return the message (free with protobuf_c_message_free_unpacked) or NULL. */
ProtobufCMessage *cm_msg_unpack_front(const struct cm_msg *m,
				      const ProtobufCMessageDescriptor *desc);
/* The same into allocator a (NULL: malloc's); free it as a's memory. */
ProtobufCMessage *cm_msg_unpack_front_with(const struct cm_msg *m,
					   const ProtobufCMessageDescriptor *desc,
					   ProtobufCAllocator *a);

enum cm_conn_event {
	CM_CONN_UP,     /* handshake done, messages flow */
	CM_CONN_DOWN,   /* socket lost; lossless sessions resume after reconnect */
	CM_CONN_RESET,  /* the session was reset: queued/unacked messages were dropped */
	CM_CONN_FAILED, /* permanent: authentication or version refused; no retry */
	CM_CONN_CLOSED, /* the session is gone (server side of a lossy one, or replaced) */
};

const char *cm_conn_event_name(enum cm_conn_event ev);

struct cm_msgr_ops {
	/* A message arrived; ownership of m passes to the callee. */
	void (*on_msg)(void *arg, struct cm_conn *c, struct cm_msg *m);
	/* A new inbound session was authenticated. c is borrowed: cm_conn_get() to keep it. */
	void (*on_accept)(void *arg, struct cm_conn *c);
	/* State changes; rc is the cause (0 for UP). */
	void (*on_event)(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc);
	/* After -EAGAIN from cm_conn_send(), the queue has drained below half. */
	void (*on_writable)(void *arg, struct cm_conn *c);
};

/*
 * A client's credentials for one handshake (identities, docs/design/auth.md):
 * the entity whose key it proves, the key (its own, or a ticket's session
 * key), and towards a service the ticket with its generation.
 */
struct cm_cred {
	char auth_name[CM_HS_ENTITY_MAX];
	uint8_t key[CM_HS_KEY_LEN];
	uint8_t ticket[CM_HS_TICKET_MAX];
	size_t ticket_len;
	uint64_t ticket_gen;
};

/*
 * Client side: fill *cred for a handshake of c (kind: what cm_msgr_connect_kind
 * was given, 0 for cm_msgr_connect). Called at each connect, so a renewed
 * ticket is used from the next socket on.
eturn 0, or a negative errno
 * (the attempt fails and is retried with backoff, as a refused connect).
 */
typedef int (*cm_msgr_cred_fn)(void *arg, struct cm_conn *c, unsigned kind, struct cm_cred *cred);

/* Identities: o.auth_fn (server) and o.cred_fn (client), both with o.ops_arg. */
struct cm_msgr_auth_opts {
	cm_hs_auth_fn auth_fn;   /* server: each peer's key; NULL: the shared key */
	cm_msgr_cred_fn cred_fn; /* client: our credentials; NULL: the shared key */
};

struct cm_msgr_opts {
	size_t opts_size;
	const char *entity; /* our name, e.g. "osd.3" */
	const uint8_t *key; /* cluster key (copied) */
	size_t key_len;
	struct cm_msgr_ops ops;
	void *ops_arg;
	uint32_t max_front;      /* default 4 MiB */
	uint32_t max_data;       /* default 64 MiB */
	size_t max_queue_bytes;  /* per session; default 256 MiB */
	unsigned max_queue_msgs; /* per session; default 65536 */
	unsigned keepalive_ms;   /* default 1000 */
	unsigned timeout_ms;     /* dead/stuck peer and handshake; default 15000 */
	unsigned backoff_min_ms; /* default 20 */
	unsigned backoff_max_ms; /* default 2000 */
	size_t rbuf_size;        /* receive buffer; default 256 KiB */
	/* Protocol versions spoken; default CM_MSGR_PROTO_MAC..CM_MSGR_PROTO_MAX:
	 * frame MACs required (a peer that offers less is refused, so a man in
	 * the middle cannot talk the link down to unauthenticated frames).
	 * cm_daemon_msgr_opts with frame_mac off: 1..1. Set it the same
	 * cluster-wide. */
	uint32_t proto_min;
	uint32_t proto_max;
	/*
	 * crc32c over data segments (default true). Fronts are always
	 * checksummed. With false, frames say so in a flag; a messenger with
	 * true refuses such frames, so set it the same cluster-wide.
	 */
	bool crc_data;
	/*
	 * TLS on every connection, from the first byte (both sides must agree).
	 * tls_cert/tls_key (PEM) are needed to listen; the peer's certificate
	 * must chain to tls_ca. tls_verify (default true) false: no tls_ca is
	 * needed and TLS only encrypts (the cluster key still authenticates);
	 * true without tls_ca: cm_msgr_create refuses (-EINVAL, logged). Files
	 * are read by cm_msgr_create.
	 */
	bool tls;
	const char *tls_cert;
	const char *tls_key;
	const char *tls_ca;
	bool tls_verify;
	/*
	 * Outgoing connections bind this address first ("IP:0", or "IP:PORT"),
	 * so a daemon with its own address is seen from it on every link (a
	 * firewall or a partition cut by address sees all its traffic); NULL or
	 * "": the kernel picks. Parsed by cm_msgr_create (-EINVAL if bad).
	 */
	const char *bind_src;
	/* Identities (NULL members: the shared key o.key, as before). */
	struct cm_msgr_auth_opts auth;
};

void cm_msgr_opts_init(struct cm_msgr_opts *o, size_t size);

/* \return 0, -EINVAL (no key or entity; TLS files unusable, logged), -ENOMEM. */
int cm_msgr_create(struct cm_reactor *r, const struct cm_msgr_opts *o, struct cm_msgr **mp);

/* Close every session and socket, then free. Runs the reactor until sockets are gone. */
void cm_msgr_destroy(struct cm_msgr *m);

/*
 * Listen on addr ("127.0.0.1:0" picks a port, returned in *port).
 * \return 0 or a negative errno.
 */
int cm_msgr_listen(struct cm_msgr *m, const char *addr, uint16_t *port);

/*
 * Open a session to addr. Returns at once; CM_CONN_UP follows. The caller
 * gets one reference (cm_conn_put when done, after cm_conn_close).
 * \return 0, -EINVAL (bad address), -ENOMEM.
 */
int cm_msgr_connect(struct cm_msgr *m, const char *addr, bool lossless, struct cm_conn **cp);

/* As cm_msgr_connect; kind is handed to o.auth.cred_fn (which credentials to use). */
int cm_msgr_connect_kind(struct cm_msgr *m, const char *addr, bool lossless, unsigned kind,
			 struct cm_conn **cp);

/*
 * What the server side of c learned of its peer at the last handshake
 * (o.auth.auth_fn): name "" and no caps with the shared key. Valid until
 * the next handshake of c (a reconnect) or its last put.
 */
struct cm_conn_auth {
	char name[CM_HS_ENTITY_MAX];
	struct cm_caps caps;
	uint64_t expires_ns; /* of its ticket (wall clock); 0: none */
	uint64_t auth_epoch; /* its ticket's; 0: not from a ticket */
};

const struct cm_conn_auth *cm_conn_auth(const struct cm_conn *c);

/*
 * Queue m. On success the messenger owns m. \return 0; -EAGAIN (queue full:
 * wait for on_writable; the caller still owns m); -CM_ECLOSED (session closed
 * or failed); -EMSGSIZE (larger than the limits).
 */
int cm_conn_send(struct cm_conn *c, struct cm_msg *m);

/*
 * Send a message built from pb (the front) and, when data is not NULL, a
 * reference to data's buffers (no copy). On failure the message is dropped.
 * \return as cm_conn_send, or -ENOMEM.
 */
int cm_conn_send_pb(struct cm_conn *c, uint16_t type, uint64_t tid, const ProtobufCMessage *pb,
		    const struct cm_sgl *data);

/*
 * Drop the session's current socket as a network failure would (lossless
 * sessions reconnect and resend; lossy ones reset). For tests and for an
 * operator's "reconnect". \return 0, -ENOTCONN when no socket is attached.
 */
int cm_conn_reset_socket(struct cm_conn *c);

/* End the session: drop queued messages, close its socket. No more callbacks for c. */
void cm_conn_close(struct cm_conn *c);

struct cm_conn *cm_conn_get(struct cm_conn *c);
void cm_conn_put(struct cm_conn *c);

/* The peer's entity name ("?" before the handshake). */
const char *cm_conn_peer(const struct cm_conn *c);
bool cm_conn_is_up(const struct cm_conn *c);

/* Bytes queued on the session (queued + in flight + unacknowledged). */
size_t cm_conn_queued_bytes(const struct cm_conn *c);

/* A pointer for the application. */
void cm_conn_set_user(struct cm_conn *c, void *user);
void *cm_conn_user(const struct cm_conn *c);

/*
 * Forwarding: one session with a peer, served by several reactors (an
 * OSD's PG shards behind one address). cm_conn_forward hands m, received on
 * c, to messenger `to` on another reactor thread, whose on_msg gets it
 * there with a proxy of c: a session of `to`, one per c and slot, made by
 * the first forward. On a proxy (its thread): cm_conn_send goes out on c,
 * in order, from c's thread (never -EAGAIN: what a proxy sends answers
 * what it was sent, which the sender bounds); cm_conn_auth is c's as of
 * the last message forwarded; cm_conn_is_up follows c; cm_conn_reset_socket
 * resets c's socket; cm_conn_close only stops deliveries to it; its user
 * word is its own. c's events reach its proxies: CM_CONN_RESET, and when
 * c's session ends CM_CONN_CLOSED, after which nothing more arrives.
 * Call on c's thread, with slot < CM_FWD_SLOTS naming `to` (always the
 * same messenger for a slot). `to` stays until its reactor runs no more
 * posts (destroy it on its thread, after its reactor stopped), and its
 * reactor outlives c's messenger. Consumes m. \return 0, -EINVAL (slot,
 * or c is a proxy), -ENOMEM.
 */
#define CM_FWD_SLOTS 32
int cm_conn_forward(struct cm_conn *c, struct cm_msgr *to, unsigned slot, struct cm_msg *m);

/* Was c made by cm_conn_forward? */
bool cm_conn_is_proxy(const struct cm_conn *c);

/* Counters since creation. */
struct cm_msgr_stats {
	uint64_t msgs_sent, msgs_recv, bytes_sent, bytes_recv;
	uint64_t resends, dups_dropped, crc_errors, bad_frames, auth_failures;
	uint64_t mac_failures; /* frames whose MAC was wrong or missing */
	uint64_t sock_resets, keepalive_timeouts, tls_failures;
	uint64_t forwarded; /* messages handed to another reactor (cm_conn_forward) */
};

void cm_msgr_get_stats(const struct cm_msgr *m, struct cm_msgr_stats *st);

/*
 * Export the cairn_msgr_* figures (and cairn_reactor_info{backend=...} when r
 * is given) in a daemon's /metrics. fn fills the stats at render time, so a
 * daemon with several messengers can sum them; fn NULL reads arg as one
 * struct cm_msgr *. Returns 0 or -ENOMEM.
 */
struct cm_metrics;
typedef void (*cm_msgr_stats_fn)(void *arg, struct cm_msgr_stats *st);
int cm_msgr_metrics_register(struct cm_metrics *reg, cm_msgr_stats_fn fn, void *arg,
			     const struct cm_reactor *r);

#endif
