/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the messenger's files share (msgr.c: sessions, sockets, framing,
 * the handshake, listeners, the tick; msgr_tls.c: TLS on a socket). See
 * the DESIGN block of msgr.c. Reactor thread only.
 */
#ifndef CM_MSGR_INT_H
#define CM_MSGR_INT_H

#include "cm/msgr.h"
#include "cm/frame.h"
#include "cm/sock.h"

#include <cairn/msgr.pb-c.h>
#include <openssl/ssl.h>

#define MSGR_IOV_MAX 128
#define TLS_IN_SIZE  (64u << 10) /* ciphertext read per recv */
#define TLS_BATCH    (1u << 20)  /* plaintext encrypted per flush (bounds the BIO) */

TAILQ_HEAD(msg_list, cm_msg);

enum conn_state {
	C_CONNECTING, /* client: a socket is connecting/handshaking */
	C_OPEN,
	C_WAIT, /* client: backing off; server: waiting for the client to return */
	C_CLOSED,
};

struct cm_sock;

struct cm_conn {
	struct cm_msgr *m;
	unsigned refs;
	enum conn_state state;
	bool client;
	bool lossless;
	bool closed_by_app;
	bool had_session;
	bool accepted_notified;
	bool want_writable;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	char addr_str[64];
	char peer[CM_HS_ENTITY_MAX];
	uint64_t cookie;
	unsigned cred_kind;       /* client: handed to o.auth.cred_fn */
	struct cm_conn_auth auth; /* server: what the last handshake learned of the peer */
	struct cm_sock *sock;
	struct msg_list out_q;
	struct msg_list unacked;
	size_t q_bytes;
	unsigned q_msgs;
	uint64_t out_seq, in_seq, acked_to_peer;
	unsigned backoff_ms;
	uint64_t retry_at_ms;
	struct cm_io flush_io;
	struct cm_timer retry_timer;
	void *user;
	TAILQ_ENTRY(cm_conn) link;
	uint64_t auth_gen;  /* server: bumped at each handshake that sets auth */
	struct cm_fwd *fwd; /* forwarding (msgr_fwd.c): a real session's, or a proxy's */
	bool proxy;         /* made by cm_conn_forward: no socket, no queues */
};

struct cm_sock {
	struct cm_msgr *m;
	struct cm_conn *conn; /* holds a reference once attached */
	int fd;
	bool server;
	bool dead;
	bool open;     /* handshake done */
	bool draining; /* sending a REFUSE, then closing */
	int drain_rc;
	struct cm_hs hs;
	struct cm_io rx_io, tx_io, conn_io;
	struct cm_frame_rx rx;
	struct cm_frame_mac *tx_mac; /* protocol 2 on plain TCP: tag what we send */
	struct msg_list ctl_q;
	struct msg_list inflight;
	size_t tx_off;
	struct iovec iov[MSGR_IOV_MAX];
	char addr_str[64];
	uint64_t t_start, last_rx, last_tx, last_progress;
	unsigned busy;     /* inside one of this socket's io callbacks: do not free */
	uint64_t rx_total; /* bytes received on this socket */
	uint8_t *rx_ptr;   /* where the pending recv lands */
	/* TLS (NULL ssl: plain TCP). Ciphertext moves through memory BIOs. */
	SSL *ssl;
	BIO *rbio, *wbio;
	uint8_t *tls_in;  /* ciphertext receive buffer */
	uint8_t *tls_out; /* ciphertext being sent */
	size_t tls_out_len, tls_out_off, tls_out_cap;
	struct iovec tls_iov;
	TAILQ_ENTRY(cm_sock) link;
};

TAILQ_HEAD(conn_list, cm_conn);
TAILQ_HEAD(sock_list, cm_sock);

struct cm_listener {
	int fd;
	struct cm_io io;
	struct cm_msgr *m;
	struct cm_listener *next;
};

struct cm_msgr {
	struct cm_reactor *r;
	struct cm_msgr_opts o;
	uint8_t *key;
	char entity[CM_HS_ENTITY_MAX];
	struct conn_list conns;
	struct sock_list socks;
	struct cm_listener *listeners;
	struct cm_timer tick;
	bool destroying;
	SSL_CTX *ssl_ctx;
	struct cm_msgr_stats st;
	struct sockaddr_storage src; /* opts.bind_src parsed; src_len 0: none */
	socklen_t src_len;
};

void cm__msgr_sock_fail(struct cm_sock *s, int rc);

/* cm_conn_send; force: past the queue limits (what a proxy sends). */
int cm__conn_send(struct cm_conn *c, struct cm_msg *msg, bool force);

/* ---------------- forwarding (msgr_fwd.c) ---------------- */
/* Real session c had event ev (its state already changed). */
void cm__fwd_event(struct cm_conn *c, enum cm_conn_event ev, int rc);
/* Real session c ended: its proxies get CM_CONN_CLOSED, and no more. */
void cm__fwd_detach(struct cm_conn *c);
/* On a proxy's thread: cm_conn_send, cm_conn_reset_socket, is it up, its last put. */
int cm__fwd_send(struct cm_conn *p, struct cm_msg *m);
int cm__fwd_reset(struct cm_conn *p);
bool cm__fwd_up(const struct cm_conn *p);
void cm__fwd_proxy_free(struct cm_conn *p);

/* iovecs for msg's wire bytes from `skip` on. \return count. */
int cm__msgr_msg_iov(struct cm_msg *msg, size_t skip, struct iovec *iov, int max);

void cm__msgr_sock_pull(struct cm_sock *s, struct msg_list *from);

void cm__msgr_sock_flush(struct cm_sock *s);

/* n plaintext bytes of the in-flight batch are gone: retire whole messages. */
void cm__msgr_sock_tx_account(struct cm_sock *s, size_t left);

/* ---------------- receive ---------------- */
int cm__msgr_sock_on_frame(void *arg, struct cm_frame *f);

void cm__msgr_tls_flush(struct cm_sock *s);

/*
 * n bytes of ciphertext arrived in tls_in. \return as cm_frame_rx_advance:
 * 0, a decode error, or -CM_ECLOSED when the socket went away.
 */
int cm__msgr_tls_rx(struct cm_sock *s, size_t n, bool first);

SSL_CTX *cm__msgr_tls_ctx_create(const struct cm_msgr_opts *o);

#endif
