/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/msgr_hs.h"
#include "cm/err.h"

#include <cairn/msgr.pb-c.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#define PROOF_LEN 32

void
cm_hs_init(struct cm_hs *hs, enum cm_hs_role role, const uint8_t *key, size_t key_len,
	   const char *entity)
{
	memset(hs, 0, sizeof(*hs));
	hs->role = role;
	hs->state = role == CM_HS_CLIENT ? CM_HS_INIT : CM_HS_WAIT_HELLO;
	hs->key = key;
	hs->key_len = key_len;
	hs->proto_min = CM_MSGR_PROTO_MIN;
	hs->proto_max = CM_MSGR_PROTO_MAX;
	snprintf(hs->entity, sizeof(hs->entity), "%s", entity ? entity : "?");
}

void
cm_hs_fini(struct cm_hs *hs)
{
	free(hs->ticket);
	hs->ticket = NULL;
	free(hs->auth.caps);
	hs->auth.caps = NULL;
	OPENSSL_cleanse(hs->own_key, sizeof(hs->own_key));
}

int
cm_hs_set_cred(struct cm_hs *hs, const char *auth_name, const uint8_t key[CM_HS_KEY_LEN],
	       const uint8_t *ticket, size_t ticket_len, uint64_t ticket_gen)
{
	size_t n = auth_name ? strlen(auth_name) : 0;

	if (n == 0 || n >= sizeof(hs->auth_name) || ticket_len > CM_HS_TICKET_MAX ||
	    (ticket_len && !ticket))
		return -EINVAL;
	free(hs->ticket);
	hs->ticket = NULL;
	hs->ticket_len = 0;
	if (ticket_len) {
		hs->ticket = malloc(ticket_len);
		if (!hs->ticket)
			return -ENOMEM;
		memcpy(hs->ticket, ticket, ticket_len);
		hs->ticket_len = ticket_len;
	}
	hs->ticket_gen = ticket_gen;
	memcpy(hs->auth_name, auth_name, n + 1);
	memcpy(hs->own_key, key, CM_HS_KEY_LEN);
	hs->key = hs->own_key;
	hs->key_len = CM_HS_KEY_LEN;
	return 0;
}

void
cm_hs_set_auth_fn(struct cm_hs *hs, cm_hs_auth_fn fn, void *arg)
{
	hs->auth_fn = fn;
	hs->auth_arg = arg;
}

static int fail(struct cm_hs *hs, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
fail(struct cm_hs *hs, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hs->reason, sizeof(hs->reason), fmt, ap);
	va_end(ap);
	hs->err = err;
	hs->state = CM_HS_FAILED;
	return err;
}

static int
pack(const ProtobufCMessage *m, uint16_t type, struct cm_hs_out *out)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	int rc = cm_buf_alloc(n, &out->front);

	if (rc)
		return rc;
	protobuf_c_message_pack(m, out->front->data);
	out->type = type;
	return 0;
}

/* Queue this step's reply and move on to the next state. */
static int
step_reply(struct cm_hs *hs, const ProtobufCMessage *m, uint16_t type, enum cm_hs_state next,
	   struct cm_hs_out *out)
{
	int rc = pack(m, type, out);

	if (!rc)
		hs->state = next;
	return rc;
}

/* Fail with err and queue a REFUSE carrying the reason for the peer's log. */
static int refuse(struct cm_hs *hs, int err, struct cm_hs_out *out, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
refuse(struct cm_hs *hs, int err, struct cm_hs_out *out, const char *fmt, ...)
{
	Cairn__Msgr__Refuse r = CAIRN__MSGR__REFUSE__INIT;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hs->reason, sizeof(hs->reason), fmt, ap);
	va_end(ap);
	hs->err = err;
	hs->state = CM_HS_FAILED;
	r.code = err;
	r.reason = hs->reason;
	pack(&r.base, CM_MSG_REFUSE, out);
	return err;
}

static void
proof(const struct cm_hs *hs, const char *label, const uint8_t *n1, const uint8_t *n2,
      const char *e1, const char *e2, uint8_t out[PROOF_LEN])
{
	uint8_t msg[16 + 4 + 2 * CM_HS_NONCE_LEN + 2 * CM_HS_ENTITY_MAX];
	size_t off = 0, l;
	unsigned outlen = PROOF_LEN;

	l = strlen(label);
	memcpy(msg, label, l);
	off += l;
	cm_put_le32(msg + off, hs->proto);
	off += 4;
	memcpy(msg + off, n1, CM_HS_NONCE_LEN);
	off += CM_HS_NONCE_LEN;
	memcpy(msg + off, n2, CM_HS_NONCE_LEN);
	off += CM_HS_NONCE_LEN;
	l = strlen(e1) + 1;
	memcpy(msg + off, e1, l);
	off += l;
	l = strlen(e2) + 1;
	memcpy(msg + off, e2, l);
	off += l;
	HMAC(EVP_sha256(), hs->key, (int)hs->key_len, msg, off, out, &outlen);
}

/* The session's frame MAC keys (protocol >= CM_MSGR_PROTO_MAC), once the peer proved the key. */
static void
mac_keys(struct cm_hs *hs)
{
	bool srv = hs->role == CM_HS_SERVER;
	const char *cli_ent = srv ? hs->peer_entity : hs->entity;
	const char *srv_ent = srv ? hs->entity : hs->peer_entity;

	hs->mac = hs->proto >= CM_MSGR_PROTO_MAC;
	if (!hs->mac)
		return;
	proof(hs, "cairn-mac-c2s", hs->nonce_c, hs->nonce_s, cli_ent, srv_ent,
	      srv ? hs->mac_rx : hs->mac_tx);
	proof(hs, "cairn-mac-s2c", hs->nonce_c, hs->nonce_s, cli_ent, srv_ent,
	      srv ? hs->mac_tx : hs->mac_rx);
}

int
cm_hs_start(struct cm_hs *hs, struct cm_hs_out *out)
{
	Cairn__Msgr__Hello h = CAIRN__MSGR__HELLO__INIT;

	out->type = 0;
	out->front = NULL;
	if (RAND_bytes(hs->nonce_c, CM_HS_NONCE_LEN) != 1)
		return fail(hs, -EIO, "no randomness for the handshake nonce");
	h.proto_min = hs->proto_min;
	h.proto_max = hs->proto_max;
	h.entity = hs->entity;
	h.nonce.data = hs->nonce_c;
	h.nonce.len = CM_HS_NONCE_LEN;
	h.session_cookie = hs->cookie;
	h.lossless = hs->lossless;
	if (hs->auth_name[0]) {
		h.auth_name = hs->auth_name;
		h.ticket.data = hs->ticket;
		h.ticket.len = hs->ticket_len;
		h.ticket_gen = hs->ticket_gen;
	}
	return step_reply(hs, &h.base, CM_MSG_HELLO, CM_HS_HELLO_SENT, out);
}

static bool
valid_entity(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= CM_HS_ENTITY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return true;
}

/*
 * With an auth_fn: the key this peer must prove is its entity's (or its
 * ticket's), and the name it goes by must be that entity's or a suffixed
 * form of it (osd.U and its PG shards osd.U.1, client.admin and its
 * instances client.admin.HEX).
 */
static int
server_identity(struct cm_hs *hs, const Cairn__Msgr__Hello *h, struct cm_hs_out *out)
{
	struct cm_hs_hello_auth in = { .auth_name = h->auth_name,
				       .entity = h->entity,
				       .ticket = h->ticket.data,
				       .ticket_len = h->ticket.len,
				       .ticket_gen = h->ticket_gen };
	char why[160] = "";
	size_t an = h->auth_name ? strlen(h->auth_name) : 0;
	int rc;

	if (an == 0 || an >= sizeof(hs->auth_name))
		return refuse(
			hs, -CM_EAUTH, out,
			"%s named no entity whose key it holds (a client without identities?)",
			hs->peer_entity);
	if (strncmp(h->entity, h->auth_name, an) || (h->entity[an] && h->entity[an] != '.'))
		return refuse(hs, -CM_EAUTH, out, "%s may not go by the name %s", h->auth_name,
			      hs->peer_entity);
	if (h->ticket.len > CM_HS_TICKET_MAX)
		return refuse(hs, -CM_EAUTH, out, "a ticket of %zu bytes from %s", h->ticket.len,
			      hs->peer_entity);
	free(hs->auth.caps);
	memset(&hs->auth, 0, sizeof(hs->auth));
	rc = hs->auth_fn(hs->auth_arg, &in, hs->own_key, &hs->auth, why, sizeof(why));
	if (rc) {
		free(hs->auth.caps);
		hs->auth.caps = NULL;
		/* A stale ticket is worth another try once renewed; the rest is not. */
		return refuse(hs, rc == -CM_ETICKET ? -CM_ETICKET : -CM_EAUTH, out, "%s: %s",
			      h->auth_name, why[0] ? why : "not authenticated");
	}
	memcpy(hs->auth_name, h->auth_name, an + 1);
	snprintf(hs->auth.name, sizeof(hs->auth.name), "%s", h->auth_name);
	hs->key = hs->own_key;
	hs->key_len = CM_HS_KEY_LEN;
	return 0;
}

static int
server_hello(struct cm_hs *hs, const uint8_t *front, size_t len, struct cm_hs_out *out)
{
	Cairn__Msgr__Hello *h = cairn__msgr__hello__unpack(NULL, len, front);
	Cairn__Msgr__HelloReply r = CAIRN__MSGR__HELLO_REPLY__INIT;
	uint8_t p[PROOF_LEN];
	uint32_t lo, hi;
	int rc;

	if (!h)
		return fail(hs, -EBADMSG, "malformed HELLO");
	if (h->nonce.len != CM_HS_NONCE_LEN || !valid_entity(h->entity)) {
		cairn__msgr__hello__free_unpacked(h, NULL);
		return refuse(hs, -EBADMSG, out, "malformed HELLO (nonce or entity name)");
	}
	snprintf(hs->peer_entity, sizeof(hs->peer_entity), "%s", h->entity);
	if (hs->auth_fn) {
		rc = server_identity(hs, h, out);
		if (rc) {
			cairn__msgr__hello__free_unpacked(h, NULL);
			return rc;
		}
	}
	memcpy(hs->nonce_c, h->nonce.data, CM_HS_NONCE_LEN);
	hs->cookie = h->session_cookie;
	hs->lossless = h->lossless;
	lo = CM_MAX(h->proto_min, hs->proto_min);
	hi = CM_MIN(h->proto_max, hs->proto_max);
	if (lo > hi) {
		rc = refuse(hs, -CM_EVERSION, out,
			    "no common protocol version: %s speaks %u-%u, %s speaks %u-%u",
			    hs->peer_entity, h->proto_min, h->proto_max, hs->entity, hs->proto_min,
			    hs->proto_max);
		cairn__msgr__hello__free_unpacked(h, NULL);
		return rc;
	}
	cairn__msgr__hello__free_unpacked(h, NULL);
	hs->proto = hi;
	if (RAND_bytes(hs->nonce_s, CM_HS_NONCE_LEN) != 1)
		return fail(hs, -EIO, "no randomness for the handshake nonce");
	proof(hs, "cairn-srv", hs->nonce_c, hs->nonce_s, hs->peer_entity, hs->entity, p);
	r.proto = hs->proto;
	r.entity = hs->entity;
	r.nonce.data = hs->nonce_s;
	r.nonce.len = CM_HS_NONCE_LEN;
	r.proof.data = p;
	r.proof.len = PROOF_LEN;
	return step_reply(hs, &r.base, CM_MSG_HELLO_REPLY, CM_HS_WAIT_AUTH, out);
}

static int
server_auth(struct cm_hs *hs, const uint8_t *front, size_t len, struct cm_hs_out *out)
{
	Cairn__Msgr__Auth *a = cairn__msgr__auth__unpack(NULL, len, front);
	Cairn__Msgr__Ready r = CAIRN__MSGR__READY__INIT;
	uint8_t want[PROOF_LEN];
	uint64_t in_seq = 0;
	bool reset = true, ok;
	int rc;

	if (!a)
		return fail(hs, -EBADMSG, "malformed AUTH");
	proof(hs, "cairn-cli", hs->nonce_s, hs->nonce_c, hs->peer_entity, hs->entity, want);
	ok = a->proof.len == PROOF_LEN && CRYPTO_memcmp(a->proof.data, want, PROOF_LEN) == 0;
	cairn__msgr__auth__free_unpacked(a, NULL);
	if (!ok)
		return refuse(
			hs, -CM_EAUTH, out,
			hs->auth_fn
				? "authentication failed: %s does not hold the key of %s"
				: "authentication failed: %s does not hold this cluster's key%s",
			hs->peer_entity, hs->auth_fn ? hs->auth_name : "");
	mac_keys(hs);
	if (hs->session_fn) {
		rc = hs->session_fn(hs->session_arg, hs, &in_seq, &reset);
		if (rc)
			return refuse(hs, rc, out, "no session for %s", hs->peer_entity);
	}
	r.in_seq = in_seq;
	r.session_reset = reset;
	return step_reply(hs, &r.base, CM_MSG_READY, CM_HS_WAIT_READY_ACK, out);
}

static int
client_hello_reply(struct cm_hs *hs, const uint8_t *front, size_t len, struct cm_hs_out *out)
{
	Cairn__Msgr__HelloReply *h = cairn__msgr__hello_reply__unpack(NULL, len, front);
	Cairn__Msgr__Auth a = CAIRN__MSGR__AUTH__INIT;
	uint8_t want[PROOF_LEN], p[PROOF_LEN];
	bool ok;
	int rc;

	if (!h)
		return fail(hs, -EBADMSG, "malformed HELLO_REPLY");
	if (h->nonce.len != CM_HS_NONCE_LEN || !valid_entity(h->entity)) {
		cairn__msgr__hello_reply__free_unpacked(h, NULL);
		return refuse(hs, -EBADMSG, out, "malformed HELLO_REPLY");
	}
	if (h->proto < hs->proto_min || h->proto > hs->proto_max) {
		rc = refuse(hs, -CM_EVERSION, out, "server chose protocol %u, we speak %u-%u",
			    h->proto, hs->proto_min, hs->proto_max);
		cairn__msgr__hello_reply__free_unpacked(h, NULL);
		return rc;
	}
	hs->proto = h->proto;
	snprintf(hs->peer_entity, sizeof(hs->peer_entity), "%s", h->entity);
	memcpy(hs->nonce_s, h->nonce.data, CM_HS_NONCE_LEN);
	proof(hs, "cairn-srv", hs->nonce_c, hs->nonce_s, hs->entity, hs->peer_entity, want);
	ok = h->proof.len == PROOF_LEN && CRYPTO_memcmp(h->proof.data, want, PROOF_LEN) == 0;
	cairn__msgr__hello_reply__free_unpacked(h, NULL);
	if (!ok)
		return refuse(
			hs, -CM_EAUTH, out,
			hs->auth_name[0]
				? "authentication failed: server %s does not hold the key of %s"
				: "authentication failed: server %s does not hold this cluster's key%s",
			hs->peer_entity, hs->auth_name[0] ? hs->auth_name : "");
	mac_keys(hs);
	proof(hs, "cairn-cli", hs->nonce_s, hs->nonce_c, hs->entity, hs->peer_entity, p);
	a.proof.data = p;
	a.proof.len = PROOF_LEN;
	return step_reply(hs, &a.base, CM_MSG_AUTH, CM_HS_AUTH_SENT, out);
}

static int
client_ready(struct cm_hs *hs, const uint8_t *front, size_t len, struct cm_hs_out *out)
{
	Cairn__Msgr__Ready *r = cairn__msgr__ready__unpack(NULL, len, front);
	Cairn__Msgr__ReadyAck a = CAIRN__MSGR__READY_ACK__INIT;
	int rc;

	if (!r)
		return fail(hs, -EBADMSG, "malformed READY");
	hs->peer_in_seq = r->in_seq;
	hs->session_reset = r->session_reset;
	cairn__msgr__ready__free_unpacked(r, NULL);
	a.in_seq = hs->my_in_seq;
	rc = pack(&a.base, CM_MSG_READY_ACK, out);
	if (rc)
		return rc;
	hs->state = CM_HS_DONE;
	return 1;
}

static int
server_ready_ack(struct cm_hs *hs, const uint8_t *front, size_t len)
{
	Cairn__Msgr__ReadyAck *a = cairn__msgr__ready_ack__unpack(NULL, len, front);

	if (!a)
		return fail(hs, -EBADMSG, "malformed READY_ACK");
	hs->peer_in_seq = a->in_seq;
	cairn__msgr__ready_ack__free_unpacked(a, NULL);
	hs->state = CM_HS_DONE;
	return 1;
}

static int
peer_refused(struct cm_hs *hs, const uint8_t *front, size_t len)
{
	Cairn__Msgr__Refuse *r = cairn__msgr__refuse__unpack(NULL, len, front);
	int code = -CM_EREFUSED;

	if (!r)
		return fail(hs, -CM_EREFUSED, "peer refused (unreadable reason)");
	if (r->code == -CM_EAUTH || r->code == -CM_EVERSION || r->code == -CM_ETICKET)
		code = r->code;
	fail(hs, code, "peer refused: %.120s", r->reason ? r->reason : "");
	cairn__msgr__refuse__free_unpacked(r, NULL);
	return code;
}

int
cm_hs_input(struct cm_hs *hs, uint16_t type, const uint8_t *front, size_t len,
	    struct cm_hs_out *out)
{
	out->type = 0;
	out->front = NULL;
	if (hs->state == CM_HS_FAILED || hs->state == CM_HS_DONE)
		return fail(hs, -EPROTO, "handshake frame type=%u after the handshake", type);
	if (type == CM_MSG_REFUSE)
		return peer_refused(hs, front, len);
	switch (hs->state) {
	case CM_HS_WAIT_HELLO:
		if (type == CM_MSG_HELLO)
			return server_hello(hs, front, len, out);
		break;
	case CM_HS_WAIT_AUTH:
		if (type == CM_MSG_AUTH)
			return server_auth(hs, front, len, out);
		break;
	case CM_HS_WAIT_READY_ACK:
		if (type == CM_MSG_READY_ACK)
			return server_ready_ack(hs, front, len);
		break;
	case CM_HS_HELLO_SENT:
		if (type == CM_MSG_HELLO_REPLY)
			return client_hello_reply(hs, front, len, out);
		break;
	case CM_HS_AUTH_SENT:
		if (type == CM_MSG_READY)
			return client_ready(hs, front, len, out);
		break;
	default:
		break;
	}
	return fail(hs, -EPROTO, "unexpected frame type=%u in handshake state %d", type, hs->state);
}
