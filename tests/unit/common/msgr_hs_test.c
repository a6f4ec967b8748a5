/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/err.h"
#include "cm/msgr_hs.h"
#include "testlib.h"

static const uint8_t g_key[] = "cluster-key-0123456789";
static const uint8_t g_bad[] = "some-other-cluster-key";

static int
session_cb(void *arg, struct cm_hs *hs, uint64_t *in_seq, bool *reset)
{
	(void)hs;
	*in_seq = *(uint64_t *)arg;
	*reset = false;
	return 0;
}

/* Pass `out` to the other side; \return that side's result. */
static int
pass(struct cm_hs *to, struct cm_hs_out *out, struct cm_hs_out *next)
{
	int rc;

	ck_assert_uint_ne(out->type, 0);
	rc = cm_hs_input(to, out->type, out->front->data, out->front->len, next);
	cm_buf_put(out->front);
	out->front = NULL;
	return rc;
}

START_TEST(test_hs_success)
{
	struct cm_hs c, s;
	struct cm_hs_out o1, o2;
	uint64_t srv_in = 17;

	cm_hs_init(&c, CM_HS_CLIENT, g_key, sizeof(g_key), "client.1");
	cm_hs_init(&s, CM_HS_SERVER, g_key, sizeof(g_key), "osd.0");
	s.session_fn = session_cb;
	s.session_arg = &srv_in;
	c.cookie = 99;
	c.lossless = true;
	c.my_in_seq = 5;
	ck_assert_int_eq(cm_hs_start(&c, &o1), 0);
	ck_assert_int_eq(pass(&s, &o1, &o2), 0); /* HELLO -> HELLO_REPLY */
	ck_assert_int_eq(pass(&c, &o2, &o1), 0); /* -> AUTH */
	ck_assert_int_eq(pass(&s, &o1, &o2), 0); /* -> READY */
	ck_assert_int_eq(pass(&c, &o2, &o1), 1); /* -> READY_ACK, client done */
	ck_assert_int_eq(pass(&s, &o1, &o2), 1); /* server done */
	ck_assert_uint_eq(o2.type, 0);
	ck_assert_str_eq(c.peer_entity, "osd.0");
	ck_assert_str_eq(s.peer_entity, "client.1");
	ck_assert_uint_eq(s.cookie, 99);
	ck_assert(s.lossless);
	ck_assert_uint_eq(c.peer_in_seq, 17);
	ck_assert_uint_eq(s.peer_in_seq, 5);
	/* Protocol 3 (GMAC frame tags): both hold the same frame MAC keys, one
	 * per direction. */
	ck_assert_uint_eq(c.proto, CM_MSGR_PROTO_GMAC);
	ck_assert_uint_eq(s.proto, CM_MSGR_PROTO_GMAC);
	ck_assert(c.mac && s.mac);
	ck_assert_int_eq(memcmp(c.mac_tx, s.mac_rx, sizeof(c.mac_tx)), 0);
	ck_assert_int_eq(memcmp(s.mac_tx, c.mac_rx, sizeof(s.mac_tx)), 0);
	ck_assert_int_ne(memcmp(c.mac_tx, c.mac_rx, sizeof(c.mac_tx)), 0);
	/* Anything after the handshake is a protocol error. */
	ck_assert_int_eq(cm_hs_input(&s, CM_MSG_HELLO, NULL, 0, &o2), -EPROTO);
}

END_TEST

/* A server's auth_fn: alice's key is k1 (caps "mon r"), a ticket "T" stands for k2. */
static const uint8_t g_k1[CM_HS_KEY_LEN] = { 1, 1, 1 }, g_k2[CM_HS_KEY_LEN] = { 2, 2, 2 };
static int g_auth_calls;

static int
auth_cb(void *arg, const struct cm_hs_hello_auth *h, uint8_t key[CM_HS_KEY_LEN],
	struct cm_hs_auth *a, char *reason, size_t rlen)
{
	(void)arg;
	g_auth_calls++;
	if (h->ticket_len) {
		if (h->ticket_len != 1 || h->ticket[0] != 'T' || h->ticket_gen != 7) {
			snprintf(reason, rlen, "bad ticket");
			return -CM_EAUTH;
		}
		memcpy(key, g_k2, CM_HS_KEY_LEN);
		a->caps = strdup("osd r");
		a->auth_epoch = 3;
		return 0;
	}
	if (strcmp(h->auth_name, "client.alice")) {
		snprintf(reason, rlen, "no such entity");
		return -CM_EAUTH;
	}
	memcpy(key, g_k1, CM_HS_KEY_LEN);
	a->caps = strdup("mon r");
	return 0;
}

/* Run a handshake of c against s to its end; \return the first error, or 1 when both are done. */
static int
run_hs(struct cm_hs *c, struct cm_hs *s)
{
	struct cm_hs_out o1, o2;
	int rc;

	ck_assert_int_eq(cm_hs_start(c, &o1), 0);
	for (int step = 0; step < 6; step++) {
		rc = pass(step % 2 ? c : s, step % 2 ? &o2 : &o1, step % 2 ? &o1 : &o2);
		if (rc < 0) {
			struct cm_hs_out *last = step % 2 ? &o1 : &o2;

			/* deliver a REFUSE to the other side, as the messenger does */
			if (last->type == CM_MSG_REFUSE)
				(void)pass(step % 2 ? s : c, last, step % 2 ? &o2 : &o1);
			if (last->front)
				cm_buf_put(last->front);
			return rc;
		}
		if (rc == 1 && step % 2 == 0)
			return 1; /* the server took READY_ACK */
	}
	return 0;
}

START_TEST(test_hs_identities)
{
	struct cm_hs c, s;

	/* An entity's own key: the server learns who, and its caps. */
	cm_hs_init(&c, CM_HS_CLIENT, NULL, 0, "client.alice.1f");
	cm_hs_init(&s, CM_HS_SERVER, NULL, 0, "mon.a");
	cm_hs_set_auth_fn(&s, auth_cb, NULL);
	ck_assert_int_eq(cm_hs_set_cred(&c, "client.alice", g_k1, NULL, 0, 0), 0);
	ck_assert_int_eq(run_hs(&c, &s), 1);
	ck_assert_str_eq(s.auth.name, "client.alice");
	ck_assert_str_eq(s.auth.caps, "mon r");
	ck_assert(c.mac && memcmp(c.mac_tx, s.mac_rx, sizeof(c.mac_tx)) == 0);
	cm_hs_fini(&c);
	cm_hs_fini(&s);

	/* A ticket: the server takes the key it stands for. */
	cm_hs_init(&c, CM_HS_CLIENT, NULL, 0, "client.alice.2");
	cm_hs_init(&s, CM_HS_SERVER, NULL, 0, "osd.x");
	cm_hs_set_auth_fn(&s, auth_cb, NULL);
	ck_assert_int_eq(cm_hs_set_cred(&c, "client.alice", g_k2, (const uint8_t *)"T", 1, 7), 0);
	ck_assert_int_eq(run_hs(&c, &s), 1);
	ck_assert_str_eq(s.auth.caps, "osd r");
	ck_assert_uint_eq(s.auth.auth_epoch, 3);
	cm_hs_fini(&c);
	cm_hs_fini(&s);

	/* The wrong key for the entity: refused both ways, with the entity named. */
	cm_hs_init(&c, CM_HS_CLIENT, NULL, 0, "client.alice");
	cm_hs_init(&s, CM_HS_SERVER, NULL, 0, "mon.a");
	cm_hs_set_auth_fn(&s, auth_cb, NULL);
	ck_assert_int_eq(cm_hs_set_cred(&c, "client.alice", g_k2, NULL, 0, 0), 0);
	ck_assert_int_eq(run_hs(&c, &s), -CM_EAUTH);
	ck_assert_ptr_nonnull(strstr(c.reason, "client.alice"));
	cm_hs_fini(&c);
	cm_hs_fini(&s);

	/* A ticket the server cannot open. */
	cm_hs_init(&c, CM_HS_CLIENT, NULL, 0, "client.alice");
	cm_hs_init(&s, CM_HS_SERVER, NULL, 0, "osd.x");
	cm_hs_set_auth_fn(&s, auth_cb, NULL);
	ck_assert_int_eq(cm_hs_set_cred(&c, "client.alice", g_k2, (const uint8_t *)"T", 1, 8), 0);
	ck_assert_int_eq(run_hs(&c, &s), -CM_EAUTH);
	ck_assert_ptr_nonnull(strstr(s.reason, "bad ticket"));
	cm_hs_fini(&c);
	cm_hs_fini(&s);

	/* An unknown entity, and a name that is not the entity's. */
	cm_hs_init(&c, CM_HS_CLIENT, NULL, 0, "client.bob");
	cm_hs_init(&s, CM_HS_SERVER, NULL, 0, "mon.a");
	cm_hs_set_auth_fn(&s, auth_cb, NULL);
	ck_assert_int_eq(cm_hs_set_cred(&c, "client.bob", g_k1, NULL, 0, 0), 0);
	ck_assert_int_eq(run_hs(&c, &s), -CM_EAUTH);
	ck_assert_ptr_nonnull(strstr(s.reason, "no such entity"));
	cm_hs_fini(&c);
	cm_hs_fini(&s);
	g_auth_calls = 0;
	cm_hs_init(&c, CM_HS_CLIENT, NULL, 0, "client.alicex");
	cm_hs_init(&s, CM_HS_SERVER, NULL, 0, "mon.a");
	cm_hs_set_auth_fn(&s, auth_cb, NULL);
	ck_assert_int_eq(cm_hs_set_cred(&c, "client.alice", g_k1, NULL, 0, 0), 0);
	ck_assert_int_eq(run_hs(&c, &s), -CM_EAUTH);
	ck_assert_ptr_nonnull(strstr(s.reason, "may not go by the name"));
	ck_assert_int_eq(g_auth_calls, 0); /* refused before any key was looked up */
	cm_hs_fini(&c);
	cm_hs_fini(&s);

	/* A client with the shared key only, to a server with identities. */
	cm_hs_init(&c, CM_HS_CLIENT, g_key, sizeof(g_key), "client.1");
	cm_hs_init(&s, CM_HS_SERVER, g_key, sizeof(g_key), "mon.a");
	cm_hs_set_auth_fn(&s, auth_cb, NULL);
	ck_assert_int_eq(run_hs(&c, &s), -CM_EAUTH);
	ck_assert_ptr_nonnull(strstr(s.reason, "named no entity"));
	cm_hs_fini(&c);
	cm_hs_fini(&s);

	/* Bad credentials are refused before anything is sent. */
	cm_hs_init(&c, CM_HS_CLIENT, NULL, 0, "client.1");
	ck_assert_int_eq(cm_hs_set_cred(&c, "", g_k1, NULL, 0, 0), -EINVAL);
	ck_assert_int_eq(cm_hs_set_cred(&c, "client.1", g_k1, NULL, CM_HS_TICKET_MAX + 1, 0),
			 -EINVAL);
	cm_hs_fini(&c);
}

END_TEST

START_TEST(test_hs_wrong_key_refused_both_sides)
{
	struct cm_hs c, s;
	struct cm_hs_out o1, o2;

	cm_hs_init(&c, CM_HS_CLIENT, g_bad, sizeof(g_bad), "client.1");
	cm_hs_init(&s, CM_HS_SERVER, g_key, sizeof(g_key), "osd.0");
	ck_assert_int_eq(cm_hs_start(&c, &o1), 0);
	ck_assert_int_eq(pass(&s, &o1, &o2), 0);
	/* The client sees the server's proof fail and refuses. */
	ck_assert_int_eq(pass(&c, &o2, &o1), -CM_EAUTH);
	ck_assert_ptr_nonnull(strstr(c.reason, "authentication failed"));
	ck_assert_uint_eq(o1.type, CM_MSG_REFUSE);
	ck_assert_int_eq(pass(&s, &o1, &o2), -CM_EAUTH);
	ck_assert_ptr_nonnull(strstr(s.reason, "authentication failed"));
}

END_TEST

START_TEST(test_hs_wrong_key_client_proof)
{
	/* A forged AUTH (client without the key, replaying nothing useful) is refused. */
	struct cm_hs c, s;
	struct cm_hs_out o1, o2;
	uint8_t junk[34] = { 0x0a, 32 };

	cm_hs_init(&c, CM_HS_CLIENT, g_key, sizeof(g_key), "client.1");
	cm_hs_init(&s, CM_HS_SERVER, g_key, sizeof(g_key), "osd.0");
	ck_assert_int_eq(cm_hs_start(&c, &o1), 0);
	ck_assert_int_eq(pass(&s, &o1, &o2), 0);
	cm_buf_put(o2.front);
	ck_assert_int_eq(cm_hs_input(&s, CM_MSG_AUTH, junk, sizeof(junk), &o2), -CM_EAUTH);
	ck_assert_uint_eq(o2.type, CM_MSG_REFUSE);
	ck_assert_ptr_nonnull(strstr(s.reason, "client.1 does not hold this cluster's key"));
	cm_buf_put(o2.front);
}

END_TEST

START_TEST(test_hs_version_mismatch)
{
	struct cm_hs c, s;
	struct cm_hs_out o1, o2;

	cm_hs_init(&c, CM_HS_CLIENT, g_key, sizeof(g_key), "client.1");
	cm_hs_init(&s, CM_HS_SERVER, g_key, sizeof(g_key), "osd.0");
	c.proto_min = c.proto_max = CM_MSGR_PROTO_MAX + 1;
	ck_assert_int_eq(cm_hs_start(&c, &o1), 0);
	ck_assert_int_eq(pass(&s, &o1, &o2), -CM_EVERSION);
	ck_assert_ptr_nonnull(strstr(s.reason, "client.1 speaks 4-4, osd.0 speaks 1-3"));
	ck_assert_int_eq(pass(&c, &o2, &o1), -CM_EVERSION);
	ck_assert_ptr_nonnull(strstr(c.reason, "no common protocol version"));
}

END_TEST

/* A peer that speaks up to protocol 2 (Poly1305 frame tags) and one of
 * today: they agree on 2, MACs on (a cluster upgraded one daemon at a time). */
START_TEST(test_hs_older_peer)
{
	struct cm_hs c, s;
	struct cm_hs_out o1, o2;

	cm_hs_init(&c, CM_HS_CLIENT, g_key, sizeof(g_key), "client.1");
	cm_hs_init(&s, CM_HS_SERVER, g_key, sizeof(g_key), "osd.0");
	c.proto_min = CM_MSGR_PROTO_MAC;
	c.proto_max = CM_MSGR_PROTO_MAC;
	ck_assert_int_eq(cm_hs_start(&c, &o1), 0);
	ck_assert_int_eq(pass(&s, &o1, &o2), 0);
	ck_assert_int_eq(pass(&c, &o2, &o1), 0);
	ck_assert_int_eq(pass(&s, &o1, &o2), 0);
	ck_assert_int_eq(pass(&c, &o2, &o1), 1);
	ck_assert_int_eq(pass(&s, &o1, &o2), 1);
	ck_assert_uint_eq(c.proto, CM_MSGR_PROTO_MAC);
	ck_assert_uint_eq(s.proto, CM_MSGR_PROTO_MAC);
	ck_assert(c.mac && s.mac);
}

END_TEST

START_TEST(test_hs_malformed)
{
	struct cm_hs s;
	struct cm_hs_out o;
	const uint8_t garbage[] = { 0xff, 0xff, 0xff, 0xff, 0x0f };

	cm_hs_init(&s, CM_HS_SERVER, g_key, sizeof(g_key), "osd.0");
	ck_assert_int_eq(cm_hs_input(&s, CM_MSG_HELLO, garbage, sizeof(garbage), &o), -EBADMSG);
	cm_hs_init(&s, CM_HS_SERVER, g_key, sizeof(g_key), "osd.0");
	ck_assert_int_eq(cm_hs_input(&s, CM_MSG_AUTH, NULL, 0, &o), -EPROTO);
	/* A HELLO without a nonce is refused. */
	cm_hs_init(&s, CM_HS_SERVER, g_key, sizeof(g_key), "osd.0");
	ck_assert_int_eq(cm_hs_input(&s, CM_MSG_HELLO, NULL, 0, &o), -EBADMSG);
	cm_buf_put(o.front);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("msgr_hs");
	TCase *tc = tcase_create("hs");

	tcase_add_test(tc, test_hs_success);
	tcase_add_test(tc, test_hs_identities);
	tcase_add_test(tc, test_hs_wrong_key_refused_both_sides);
	tcase_add_test(tc, test_hs_wrong_key_client_proof);
	tcase_add_test(tc, test_hs_version_mismatch);
	tcase_add_test(tc, test_hs_older_peer);
	tcase_add_test(tc, test_hs_malformed);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
