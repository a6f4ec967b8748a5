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
	uint8_t msg[16 + 4 + 2 * CM_HS_NONCE_LEN + 2 * 65];
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
	return step_reply(hs, &h.base, CM_MSG_HELLO, CM_HS_HELLO_SENT, out);
}

static bool
valid_entity(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return true;
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
		return refuse(hs, -CM_EAUTH, out,
			      "authentication failed: %s does not hold this cluster's key",
			      hs->peer_entity);
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
		return refuse(hs, -CM_EAUTH, out,
			      "authentication failed: server %s does not hold this cluster's key",
			      hs->peer_entity);
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
	if (r->code == -CM_EAUTH || r->code == -CM_EVERSION)
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
