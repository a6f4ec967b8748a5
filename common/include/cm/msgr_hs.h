/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The messenger handshake as a pure state machine (no sockets), so it can be
 * unit tested and fuzzed on its own. cm_msgr drives it.
 *
 *   client                                   server
 *   HELLO {ver range, entity, nonce_c, cookie, lossless}  ->
 *        <-  HELLO_REPLY {ver, entity, nonce_s, proof_s}   (or REFUSE)
 *   AUTH {proof_c}                                        ->
 *        <-  READY {in_seq, session_reset}                 (or REFUSE)
 *   READY_ACK {in_seq}                                    ->
 *
 *   proof_s = HMAC-SHA256(key, "cairn-srv" | ver | nonce_c | nonce_s | ents)
 *   proof_c = HMAC-SHA256(key, "cairn-cli" | ver | nonce_s | nonce_c | ents)
 *
 * Both sides prove knowledge of the cluster key over the other side's fresh
 * nonce, so neither a replay nor a peer without the key gets through; the
 * chosen version is inside the MAC, so it cannot be downgraded in flight.
 * From protocol 2 on, both derive per-direction frame MAC keys from the same
 * inputs: the server tags every frame after READY, the client every frame
 * after READY_ACK (cm/frame.h).
 */
#ifndef CM_MSGR_HS_H
#define CM_MSGR_HS_H

#include "cm/buf.h"

enum cm_msgr_type {
	CM_MSG_HELLO = 1,
	CM_MSG_HELLO_REPLY = 2,
	CM_MSG_AUTH = 3,
	CM_MSG_READY = 4,
	CM_MSG_READY_ACK = 5,
	CM_MSG_REFUSE = 6,
	CM_MSG_KEEPALIVE = 7,
	CM_MSG_KEEPALIVE_ACK = 8,
	CM_MSG_ACK = 9,
	CM_MSG_USER_MIN = 256, /* application types start here */
};

#define CM_MSGR_PROTO_MIN  1
#define CM_MSGR_PROTO_MAX  3 /* 2: frames carry MACs after the handshake (cm/frame.h) */
#define CM_MSGR_PROTO_MAC  2
#define CM_MSGR_PROTO_GMAC 3 /* 3: those MACs are AES-256-GCM tags (GMAC), not Poly1305 */
#define CM_HS_NONCE_LEN    32
#define CM_HS_MAX_FRONT    4096 /* any pre-auth frame */
#define CM_HS_ENTITY_MAX   96   /* an entity's name on the wire, with its NUL */
#define CM_HS_TICKET_MAX   2048 /* a ticket in HELLO */
#define CM_HS_KEY_LEN      32   /* an entity's or a ticket's session key */

enum cm_hs_role { CM_HS_CLIENT, CM_HS_SERVER };

enum cm_hs_state {
	CM_HS_INIT,
	CM_HS_HELLO_SENT,     /* client */
	CM_HS_AUTH_SENT,      /* client */
	CM_HS_WAIT_HELLO,     /* server */
	CM_HS_WAIT_AUTH,      /* server */
	CM_HS_WAIT_READY_ACK, /* server */
	CM_HS_DONE,
	CM_HS_FAILED,
};

struct cm_hs;

/* Server: authenticated; find or create the session. Fill its in_seq / reset. */
typedef int (*cm_hs_session_fn)(void *arg, struct cm_hs *hs, uint64_t *in_seq, bool *reset);

/*
 * What a server learned of its peer (docs/design/auth.md): the entity
 * whose key it proved, its caps, and, from a ticket, its expiry and the
 * auth epoch it was issued at.
 */
struct cm_hs_auth {
	char name[CM_HS_ENTITY_MAX]; /* "" : the shared cluster key (no auth_fn) */
	char *caps;                  /* malloc'd caps text; NULL: none */
	uint64_t expires_ns;         /* wall clock; 0: no expiry */
	uint64_t auth_epoch;         /* of a ticket; 0: not from one */
};

/* The HELLO fields a server's auth_fn judges. */
struct cm_hs_hello_auth {
	const char *auth_name; /* the entity whose key the client uses */
	const char *entity;    /* the name it goes by: auth_name or auth_name.SUFFIX */
	const uint8_t *ticket; /* towards services: sealed by the monitors; may be NULL */
	size_t ticket_len;
	uint64_t ticket_gen;
};

/*
 * Server: the key the client of h must prove, into key, and what it is
 * into *a (caps malloc'd).
eturn 0, or -CM_EAUTH with a reason (the
 * peer is refused with it).
 */
typedef int (*cm_hs_auth_fn)(void *arg, const struct cm_hs_hello_auth *h,
			     uint8_t key[CM_HS_KEY_LEN], struct cm_hs_auth *a, char *reason,
			     size_t rlen);

struct cm_hs {
	enum cm_hs_role role;
	enum cm_hs_state state;
	const uint8_t *key;
	size_t key_len;
	uint32_t proto_min, proto_max, proto;
	char entity[CM_HS_ENTITY_MAX];
	char peer_entity[CM_HS_ENTITY_MAX];
	uint64_t cookie;      /* client's session cookie (server: the peer's) */
	bool lossless;        /* client's choice (server: the peer's) */
	uint64_t my_in_seq;   /* client: what we delivered so far on this session */
	uint64_t peer_in_seq; /* what the peer says it delivered */
	bool session_reset;   /* client: the server had no such session */
	uint8_t nonce_c[CM_HS_NONCE_LEN];
	uint8_t nonce_s[CM_HS_NONCE_LEN];
	cm_hs_session_fn session_fn;
	void *session_arg;
	/* Protocol >= CM_MSGR_PROTO_MAC: the session's frame MAC keys, ours
	 * to send with and the peer's, set once the peer proved the key:
	 * HMAC(key, "cairn-mac-c2s" or "-s2c" | proto | nonce_c | nonce_s |
	 * client entity | server entity). */
	bool mac;
	uint8_t mac_tx[32], mac_rx[32];
	int err;          /* on failure: the negative error */
	char reason[160]; /* on failure: why, for the log */
	/* Identities (cm_hs_set_cred, cm_hs_set_auth_fn): the key the proofs
	 * use then lives here, not in the shared key. */
	uint8_t own_key[CM_HS_KEY_LEN];
	char auth_name[CM_HS_ENTITY_MAX]; /* client: whose key; server: the peer's */
	uint8_t *ticket;                  /* client: sent in HELLO (malloc'd) */
	size_t ticket_len;
	uint64_t ticket_gen;
	cm_hs_auth_fn auth_fn; /* server: NULL = the shared key for every peer */
	void *auth_arg;
	struct cm_hs_auth auth; /* server: what auth_fn said of the peer */
};

/* A frame the handshake wants sent. */
struct cm_hs_out {
	uint16_t type;        /* 0 = nothing to send */
	struct cm_buf *front; /* packed protobuf; caller puts it */
};

void cm_hs_init(struct cm_hs *hs, enum cm_hs_role role, const uint8_t *key, size_t key_len,
		const char *entity);

/* Free what the handshake holds (ticket, caps); hs may be re-initialized after. */
void cm_hs_fini(struct cm_hs *hs);

/*
 * Client: prove auth_name's key (an entity's own, or a ticket's session
 * key with the ticket and its generation) instead of the shared one. The
 * entity the client goes by must be auth_name or auth_name.SUFFIX.
 * eturn 0, -EINVAL (a bad name or ticket), -ENOMEM.
 */
int cm_hs_set_cred(struct cm_hs *hs, const char *auth_name, const uint8_t key[CM_HS_KEY_LEN],
		   const uint8_t *ticket, size_t ticket_len, uint64_t ticket_gen);

/* Server: take each peer's key from fn (cm_hs_auth_fn) instead of the shared one. */
void cm_hs_set_auth_fn(struct cm_hs *hs, cm_hs_auth_fn fn, void *arg);

/* Client: produce HELLO. \return 0 or -ENOMEM / -EIO (no randomness). */
int cm_hs_start(struct cm_hs *hs, struct cm_hs_out *out);

/*
 * Feed one received frame. \return 0 (continue; maybe a frame in *out),
 * 1 (handshake done; maybe a final frame in *out), or a negative error with
 * hs->reason set and maybe a REFUSE frame in *out to send before closing:
 * -CM_EAUTH (bad proof), -CM_EVERSION, -CM_EREFUSED (peer refused us, its
 * reason in hs->reason), -EBADMSG / -EPROTO (malformed or unexpected frame).
 */
int cm_hs_input(struct cm_hs *hs, uint16_t type, const uint8_t *front, size_t len,
		struct cm_hs_out *out);

#endif
