/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS on a messenger socket: OpenSSL over memory BIOs, so the reactor keeps
 * doing the I/O: the handshake, encrypting what a flush sends, decrypting
 * what arrives. See the DESIGN block of msgr.c.
 */
#include "msgr_int.h"
#include "cm/err.h"
#include "cm/log.h"

#include <openssl/err.h>

CM_LOG_SUBSYS(msgr);

/* ---------------- TLS (OpenSSL over memory BIOs) ---------------- */

/*
 * DESIGN: the socket still moves bytes only through reactor ios; OpenSSL
 * sees two memory BIOs. Received ciphertext is written into rbio and
 * SSL_read decrypts straight into the frame decoder's buffer; outgoing
 * plaintext (the same iovecs a plain socket would send) is SSL_written into
 * wbio, at most TLS_BATCH per flush, and the ciphertext drained from wbio is
 * sent with one sendmsg. Messages count as sent once encrypted. The cluster
 * key handshake runs inside TLS.
 */

/* Send whatever ciphertext OpenSSL produced (handshake records, data, alerts). */
static void
tls_send_pending(struct cm_sock *s)
{
	size_t pend;
	int n;

	if (s->dead || cm_io_pending(&s->tx_io) || s->tls_out_len)
		return;
	pend = BIO_ctrl_pending(s->wbio);
	if (!pend)
		return;
	if (pend > s->tls_out_cap) {
		uint8_t *nb = realloc(s->tls_out, pend);

		if (!nb) {
			cm__msgr_sock_fail(s, -ENOMEM);
			return;
		}
		s->tls_out = nb;
		s->tls_out_cap = pend;
	}
	n = BIO_read(s->wbio, s->tls_out, (int)pend);
	if (n <= 0)
		return;
	s->tls_out_len = (size_t)n;
	s->tls_out_off = 0;
	s->tls_iov.iov_base = s->tls_out;
	s->tls_iov.iov_len = (size_t)n;
	if (cm_io_sendmsg(s->m->r, &s->tx_io, s->fd, &s->tls_iov, 1))
		cm__msgr_sock_fail(s, -EIO);
}

/* A TLS error: say why, let an alert out if we can, reset the socket. */
static void
tls_fail(struct cm_sock *s, const char *what)
{
	char reason[256] = "unknown";
	unsigned long e = ERR_get_error();
	long vr = SSL_get_verify_result(s->ssl);
	size_t pend;

	if (e)
		ERR_error_string_n(e, reason, sizeof(reason));
	ERR_clear_error();
	s->m->st.tls_failures++;
	/* Best effort, non-blocking: the alert tells the peer why. */
	pend = BIO_ctrl_pending(s->wbio);
	if (pend && !cm_io_pending(&s->tx_io)) {
		uint8_t alert[512];
		int n = BIO_read(s->wbio, alert, (int)CM_MIN(pend, sizeof(alert)));

		if (n > 0 && send(s->fd, alert, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			CM_DEBUG("tls alert not sent addr=%s", s->addr_str);
	}
	if (vr != X509_V_OK) {
		CM_WARN("TLS %s failed addr=%s: peer certificate not trusted: %s", what,
			s->addr_str, X509_verify_cert_error_string(vr));
		cm__msgr_sock_fail(s, -CM_EAUTH);
		return;
	}
	CM_WARN("TLS %s failed addr=%s: %s", what, s->addr_str, reason);
	cm__msgr_sock_fail(s, -EPROTO);
}

/* Drive the TLS handshake. \return true once it is done. */
static bool
tls_handshake(struct cm_sock *s)
{
	int rc, err;

	if (SSL_is_init_finished(s->ssl))
		return true;
	rc = SSL_do_handshake(s->ssl);
	if (rc == 1) {
		CM_INFO("tls up addr=%s version=%s cipher=%s", s->addr_str, SSL_get_version(s->ssl),
			SSL_get_cipher_name(s->ssl));
		return true;
	}
	err = SSL_get_error(s->ssl, rc);
	if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
		return false;
	tls_fail(s, "handshake");
	return false;
}

void
cm__msgr_tls_flush(struct cm_sock *s)
{
	struct cm_conn *c = s->conn;
	struct cm_msg *msg;
	struct iovec iov[MSGR_IOV_MAX];
	size_t total = 0, skip;
	bool full = false;

	if (!tls_handshake(s)) {
		tls_send_pending(s);
		return;
	}
	if (s->dead)
		return;
	cm__msgr_sock_pull(s, &s->ctl_q);
	if (s->open && c && c->sock == s)
		cm__msgr_sock_pull(s, &c->out_q);
	skip = s->tx_off;
	TAILQ_FOREACH(msg, &s->inflight, link) {
		int n = cm__msgr_msg_iov(msg, skip, iov, MSGR_IOV_MAX);

		skip = 0;
		for (int i = 0; i < n; i++) {
			size_t len = CM_MIN(iov[i].iov_len, (size_t)TLS_BATCH);

			if (len && SSL_write(s->ssl, iov[i].iov_base, (int)len) <= 0) {
				tls_fail(s, "write");
				return;
			}
			total += len;
			if (total >= TLS_BATCH || len < iov[i].iov_len) {
				full = true;
				break;
			}
		}
		if (full)
			break;
	}
	cm__msgr_sock_tx_account(s, total);
	if (!total && !BIO_ctrl_pending(s->wbio)) {
		if (s->draining)
			cm__msgr_sock_fail(s, s->drain_rc);
		return;
	}
	tls_send_pending(s);
}

/*
 * n bytes of ciphertext arrived in tls_in. \return as cm_frame_rx_advance:
 * 0, a decode error, or -CM_ECLOSED when the socket went away.
 */
int
cm__msgr_tls_rx(struct cm_sock *s, size_t n, bool first)
{
	bool was_done = SSL_is_init_finished(s->ssl);

	if (first && n >= 4 && memcmp(s->tls_in, "CRN1", 4) == 0) {
		CM_WARN("addr=%s sent a plain Cairn frame but tls is on here: set tls the same on both sides",
			s->addr_str);
		s->m->st.tls_failures++;
		return -EPROTO;
	}
	if (BIO_write(s->rbio, s->tls_in, (int)n) != (int)n)
		return -ENOMEM;
	if (!tls_handshake(s)) {
		tls_send_pending(s);
		return s->dead ? -CM_ECLOSED : 0;
	}
	if (!was_done)
		cm__msgr_sock_flush(s); /* the queued HELLO can go now */
	for (;;) {
		void *p;
		size_t room;
		int r, err, rc;

		if (s->dead)
			return -CM_ECLOSED;
		rc = cm_frame_rx_prepare(&s->rx, &p, &room);
		if (rc)
			return rc;
		r = SSL_read(s->ssl, p, (int)CM_MIN(room, (size_t)INT_MAX));
		if (r > 0) {
			rc = cm_frame_rx_advance(&s->rx, (size_t)r, cm__msgr_sock_on_frame, s);
			if (rc)
				return rc;
			continue;
		}
		err = SSL_get_error(s->ssl, r);
		if (err == SSL_ERROR_WANT_READ)
			break;
		if (err == SSL_ERROR_ZERO_RETURN)
			return -ECONNRESET;
		tls_fail(s, "read");
		return -CM_ECLOSED;
	}
	tls_send_pending(s);
	return 0;
}

SSL_CTX *
cm__msgr_tls_ctx_create(const struct cm_msgr_opts *o)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_method());
	char reason[256];

	if (!ctx)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (o->tls_cert && o->tls_cert[0] &&
	    SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert) != 1)
		goto err;
	if (o->tls_key && o->tls_key[0] &&
	    (SSL_CTX_use_PrivateKey_file(ctx, o->tls_key, SSL_FILETYPE_PEM) != 1 ||
	     SSL_CTX_check_private_key(ctx) != 1))
		goto err;
	if (o->tls_ca && o->tls_ca[0]) {
		if (SSL_CTX_load_verify_locations(ctx, o->tls_ca, NULL) != 1)
			goto err;
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	} else if (o->tls_verify) {
		CM_ERR("tls is on and tls_verify too, but tls_ca is not set: name the CA that "
		       "signed the cluster's certificates (tls_ca), or set tls_verify = false "
		       "for encryption only");
		SSL_CTX_free(ctx);
		return NULL;
	} else {
		/* Encryption only (tls_verify off): the cluster key handshake authenticates peers.
		 */
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	}
	return ctx;
err:
	ERR_error_string_n(ERR_get_error(), reason, sizeof(reason));
	ERR_clear_error();
	CM_ERR("tls setup failed cert=%s key=%s ca=%s: %s", o->tls_cert ? o->tls_cert : "",
	       o->tls_key ? o->tls_key : "", o->tls_ca ? o->tls_ca : "", reason);
	SSL_CTX_free(ctx);
	return NULL;
}
