/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server on the project's reactors (rgw/http.h).
 *
 * DESIGN: one listening socket; every thread keeps an accept posted on it
 * (the kernel hands each connection to one of them) and owns the
 * connections it accepted. A connection has one receive buffer (64 KiB),
 * one parser and at most one request at a time: the parser stops after a
 * head (the handler runs) and after a request's end (the response must be
 * sent before the next request is parsed), so pipelined requests are
 * answered in order and never more than one is in memory. Body bytes go to
 * the handler as they are decoded; a handler that pauses stops the reads
 * (back-pressure: at most one receive buffer more reaches it). A
 * connection is freed only when its request was ended and no I/O of it is
 * in flight, so a handler's async work may outlive the peer.
 */
#include "rgw/http.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/random.h"
#include "cm/sock.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>

CM_LOG_SUBSYS(rgw_http);

#define RBUF_SIZE    (64u << 10)
#define DISCARD_MAX  (16u << 20) /* an unread body longer than this closes instead */
#define SEND_IOV_MAX 18
#define HEAD_OUT_MAX (16u << 10)
#define TLS_IN_SIZE  (64u << 10) /* ciphertext received at once */

struct rgw_http_server {
	struct rgw_http_server_opts o;
	int lfd;
	uint16_t port;
	int tls_lfd; /* -1: no TLS listener */
	uint16_t tls_port;
	SSL_CTX *tls;
	unsigned nthreads;
	struct rgw_http_thread *threads;
	atomic_uint_fast64_t next_id;
	uint64_t id_base;
};

struct rgw_conn;

struct rgw_http_thread {
	struct rgw_http_server *s;
	unsigned idx;
	pthread_t tid;
	bool started;
	struct cm_reactor *r;
	struct cm_io acc, tacc; /* accepts on the plain and the TLS listener */
	bool stopping;
	TAILQ_HEAD(, rgw_conn) conns;
	void *ctx;
	int init_rc;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool ready;
	struct cm_reactor_msg stop_msg;
	time_t date_t;
	char date[40];
};

enum conn_state {
	CS_HEAD,    /* parsing a head */
	CS_REQ,     /* a request is with the handler */
	CS_DISCARD, /* the handler ended; its body is being read and dropped */
};

struct rgw_req {
	struct rgw_conn *c;
	void *ctx;
	char id[24];
	bool head_queued, head_pending, ended, close_after, failed;
	bool method_head; /* a HEAD: bodies are not sent */
	int status;
	rgw_body_cb bcb;
	void *barg;
	bool body_paused;
	bool body_done;
	bool body_end_told;
	bool body_err_told;
	bool continue_pending, continue_sent;
	uint64_t body_seen;
	char *head_out;
	size_t head_len;
	char *extra_hdrs; /* rgw_req_add_headers: in every response head */
	/* the send in flight */
	struct iovec iov[SEND_IOV_MAX];
	int iovcnt;
	rgw_sent_cb scb;
	void *sarg;
	bool send_user; /* the send in flight carries the caller's pieces */
	void *owned;    /* rgw_req_respond's copy */
};

struct rgw_conn {
	struct rgw_http_thread *t;
	int fd;
	char peer[64];
	struct rgw_http_parser *p;
	struct rgw_http_head head;
	char *rbuf;
	size_t roff, rlen;
	struct cm_io rio, sio, nio;
	bool reading, sending, nop_pending;
	bool dead;    /* the peer is gone or the link failed: no more I/O */
	bool closing; /* close once the request is ended and I/O drained */
	struct cm_timer idle;
	enum conn_state st;
	bool req_active;
	int nest;        /* our callbacks running on the stack: no free until they return */
	bool head_ready; /* the parser stopped at a head: run the handler */
	bool at_end;     /* the parser stopped at a request's end */
	struct rgw_req req;
	TAILQ_ENTRY(rgw_conn) link;
	/*
	 * TLS (a connection from the TLS listener): OpenSSL over two memory BIOs.
	 * Ciphertext is received into tin and written into rb; SSL_read yields the
	 * plaintext into rbuf. A send's plaintext is SSL_written whole into wb;
	 * wb's bytes go out through tio, one send at a time, collected into tout
	 * only while no send is in flight; the send is done once the socket took
	 * every ciphertext byte up to user_end (BIO_number_written counts).
	 */
	SSL *ssl;
	BIO *rb, *wb;
	char *tin, *tout;
	size_t tout_len, tout_off, tout_cap;
	struct cm_io tio;
	struct iovec tiov;
	bool tls_sending, user_pending;
	uint64_t sent_total, user_end;
	size_t user_plain;
};

static void conn_kick(struct rgw_conn *c);
static void conn_maybe_free(struct rgw_conn *c);
static void send_next(struct rgw_conn *c);
static void send_done(struct cm_io *io, int res);
static void send_done_in(struct cm_io *io, int res);

static const char *
date_now(struct rgw_http_thread *t)
{
	time_t now = time(NULL);
	struct tm tm;

	if (now != t->date_t) {
		gmtime_r(&now, &tm);
		strftime(t->date, sizeof(t->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		t->date_t = now;
	}
	return t->date;
}

const char *
rgw_http_reason(int status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 200:
		return "OK";
	case 204:
		return "No Content";
	case 206:
		return "Partial Content";
	case 301:
		return "Moved Permanently";
	case 304:
		return "Not Modified";
	case 307:
		return "Temporary Redirect";
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 409:
		return "Conflict";
	case 411:
		return "Length Required";
	case 412:
		return "Precondition Failed";
	case 413:
		return "Payload Too Large";
	case 416:
		return "Range Not Satisfiable";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	case 507:
		return "Insufficient Storage";
	default:
		return "Unknown";
	}
}

/* ---- parser ops ---- */

static int
op_head(struct rgw_http_parser *p, struct rgw_http_head *h)
{
	struct rgw_conn *c = rgw_http_parser_arg(p);

	(void)h;
	c->head_ready = true;
	return 0;
}

static int
op_body(struct rgw_http_parser *p, const char *data, size_t len)
{
	struct rgw_conn *c = rgw_http_parser_arg(p);
	struct rgw_req *r = &c->req;

	r->body_seen += len;
	if (c->st == CS_REQ && r->bcb)
		r->bcb(r, data, (ssize_t)len, r->barg);
	return 0;
}

static int
op_end(struct rgw_http_parser *p)
{
	struct rgw_conn *c = rgw_http_parser_arg(p);

	if (c->st == CS_REQ) {
		c->req.body_done = true;
		c->at_end = true;
	} else if (c->st == CS_DISCARD) {
		c->st = CS_HEAD; /* (the dropped body is over) */
	}
	/* (CS_HEAD: the end of a request without a body whose answer went first) */
	return 0;
}

static const struct rgw_http_parser_ops parser_ops = {
	.head = op_head,
	.body = op_body,
	.end = op_end,
};

/* ---- connections ---- */

static void
conn_close(struct rgw_conn *c)
{
	c->closing = true;
	c->dead = true;
	if (c->reading)
		cm_io_cancel(c->t->r, &c->rio);
	if (c->sending && !c->user_pending)
		cm_io_cancel(c->t->r, &c->sio);
	if (c->tls_sending)
		cm_io_cancel(c->t->r, &c->tio);
	conn_maybe_free(c);
}

static void
conn_maybe_free(struct rgw_conn *c)
{
	struct rgw_http_thread *t = c->t;

	if (!c->closing || c->req_active || c->reading || c->sending || c->nop_pending || c->nest ||
	    c->tls_sending)
		return;
	cm_timer_cancel(t->r, &c->idle);
	TAILQ_REMOVE(&t->conns, c, link);
	cm_reactor_close(t->r, c->fd);
	rgw_http_parser_destroy(c->p);
	free(c->req.head_out);
	free(c->req.owned);
	free(c->req.extra_hdrs);
	free(c->rbuf);
	SSL_free(c->ssl); /* (and its BIOs) */
	free(c->tin);
	free(c->tout);
	free(c);
}

/* Tell a body reader about an error (once). */
static void
body_fail(struct rgw_conn *c, int err)
{
	struct rgw_req *r = &c->req;

	if (c->st == CS_REQ && r->bcb && !r->body_done && !r->body_err_told) {
		r->body_err_told = true;
		r->bcb(r, NULL, err, r->barg);
	}
}

static void
recv_done_in(struct cm_io *io, int res)
{
	struct rgw_conn *c = io->arg;

	c->reading = false;
	if (res <= 0 || c->closing) {
		if (!c->closing && res == 0 && c->st == CS_HEAD && c->roff == c->rlen &&
		    !rgw_http_parser_eof(c->p)) {
			/* a clean close between requests */
		} else if (!c->closing) {
			CM_DEBUG("%s: read ended: %d", c->peer, res);
		}
		c->dead = true;
		body_fail(c, res == 0 ? -ECONNRESET : (res < 0 ? res : -ECONNRESET));
		conn_close(c);
		return;
	}
	if (c->ssl) {
		/* (ciphertext: conn_kick's start_read decrypts what it can) */
		if (BIO_write(c->rb, c->tin, res) != res) {
			c->dead = true;
			body_fail(c, -ENOMEM);
			conn_close(c);
			return;
		}
	} else {
		c->rlen += (size_t)res;
	}
	cm_timer_arm(c->t->r, &c->idle, c->t->s->o.idle_ms);
	conn_kick(c);
}

static void
recv_done(struct cm_io *io, int res)
{
	struct rgw_conn *c = io->arg;

	c->nest++;
	recv_done_in(io, res);
	c->nest--;
	conn_maybe_free(c);
}

static void tls_pump(struct rgw_conn *c);

/* Decrypt what rb holds into rbuf. \return the bytes added, 0 (more ciphertext wanted), or
 * -ECONNRESET (the peer closed the session), -EPROTO (TLS failed: a bad handshake, plain
 * HTTP on the TLS port). */
static int
tls_read_plain(struct rgw_conn *c)
{
	size_t got = 0;
	int rc = 0;

	while (c->rlen < RBUF_SIZE) {
		int n = SSL_read(c->ssl, c->rbuf + c->rlen, (int)(RBUF_SIZE - c->rlen)), e;

		if (n > 0) {
			c->rlen += (size_t)n;
			got += (size_t)n;
			continue;
		}
		e = SSL_get_error(c->ssl, n);
		if (e != SSL_ERROR_WANT_READ) {
			rc = e == SSL_ERROR_ZERO_RETURN ? -ECONNRESET : -EPROTO;
			if (rc == -EPROTO)
				CM_DEBUG("%s: TLS: %s", c->peer,
					 ERR_reason_error_string(ERR_peek_error()) ?: "failed");
			ERR_clear_error();
		}
		break;
	}
	tls_pump(c); /* (the handshake's answers, session tickets) */
	if (got)
		return (int)got;
	return rc;
}

/* Read more: \return true when bytes were added at once (TLS plaintext already received). */
static bool
start_read(struct rgw_conn *c)
{
	int rc;

	if (c->reading || c->dead)
		return false;
	if (c->roff == c->rlen)
		c->roff = c->rlen = 0;
	else if (c->roff > 0 && c->rlen == RBUF_SIZE) {
		memmove(c->rbuf, c->rbuf + c->roff, c->rlen - c->roff);
		c->rlen -= c->roff;
		c->roff = 0;
	}
	if (c->rlen == RBUF_SIZE)
		return false; /* (full of unparsed bytes: the parser is stopped) */
	if (c->ssl) {
		rc = tls_read_plain(c);
		if (rc > 0)
			return true;
		if (rc < 0 || c->dead) {
			c->dead = true;
			body_fail(c, rc < 0 ? rc : -EPIPE);
			conn_close(c);
			return false;
		}
		rc = cm_io_recv(c->t->r, &c->rio, c->fd, c->tin, TLS_IN_SIZE);
	} else {
		rc = cm_io_recv(c->t->r, &c->rio, c->fd, c->rbuf + c->rlen, RBUF_SIZE - c->rlen);
	}
	if (rc) {
		c->dead = true;
		body_fail(c, rc);
		conn_close(c);
		return false;
	}
	c->reading = true;
	return false;
}

static void
req_reset(struct rgw_conn *c)
{
	struct rgw_req *r = &c->req;
	struct rgw_http_server *s = c->t->s;
	uint64_t n = atomic_fetch_add(&s->next_id, 1);

	free(r->head_out);
	free(r->owned);
	free(r->extra_hdrs);
	memset(r, 0, sizeof(*r));
	r->c = c;
	snprintf(r->id, sizeof(r->id), "%016" PRIx64, s->id_base + n);
	r->method_head = c->head.method == RGW_M_HEAD;
}

/* A simple error answer on a head the parser refused; closes after. */
static void
refuse_head(struct rgw_conn *c, int err)
{
	static const char big[] = "HTTP/1.1 431 Request Header Fields Too Large\r\n"
				  "Content-Length: 0\r\nConnection: close\r\n\r\n";
	static const char bad[] = "HTTP/1.1 400 Bad Request\r\n"
				  "Content-Length: 0\r\nConnection: close\r\n\r\n";
	const char *m = err == -E2BIG ? big : bad;
	ssize_t n;

	CM_INFO("%s: request refused: %s", c->peer, rgw_http_parser_error(c->p));
	/* (best effort, non-blocking: the link closes right after) */
	n = send(c->fd, m, strlen(m), MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)n;
	conn_close(c);
}

/* Feed what we have to the parser and act on where it stopped. */
static void
conn_kick(struct rgw_conn *c)
{
	while (!c->dead) {
		size_t used = 0;
		int rc;

		if (c->st == CS_REQ &&
		    (c->at_end || c->head_ready || c->req.body_paused || !c->req.bcb)) {
			/* (the handler has the request and reads no body now) */
			if (c->at_end && c->req.bcb && !c->req.body_end_told) {
				c->req.body_end_told = true;
				c->req.bcb(&c->req, NULL, 0, c->req.barg);
				continue;
			}
			return;
		}
		if (c->roff == c->rlen && !rgw_http_parser_paused(c->p)) {
			if (start_read(c))
				continue;
			return;
		}
		rc = rgw_http_parser_feed(c->p, c->rbuf + c->roff, c->rlen - c->roff, &used);
		c->roff += used;
		if (rc < 0) {
			if (c->st == CS_HEAD) {
				refuse_head(c, rc);
			} else {
				body_fail(c, -EBADMSG);
				conn_close(c);
			}
			return;
		}
		if (c->head_ready) {
			c->head_ready = false;
			req_reset(c);
			c->st = CS_REQ;
			c->req_active = true;
			if (!c->head.has_length && !c->head.chunked)
				c->req.body_done = true; /* (no body; llhttp ends it at once) */
			if (c->head.expect_continue && !c->req.body_done)
				c->req.continue_pending = true;
			c->t->s->o.handler(&c->req, c->t->s->o.arg);
			continue;
		}
		if (rc == 0 && c->roff == c->rlen) {
			if (start_read(c))
				continue;
			return;
		}
	}
}

static void
idle_fired_in(struct cm_timer *tm)
{
	struct rgw_conn *c = tm->arg;

	if (c->st == CS_HEAD || c->st == CS_DISCARD) {
		conn_close(c);
		return;
	}
	if (c->req.bcb && !c->req.body_paused && !c->req.body_done) {
		body_fail(c, -ETIMEDOUT);
		conn_close(c);
		return;
	}
	cm_timer_arm(c->t->r, &c->idle, c->t->s->o.idle_ms); /* (the handler is working) */
}

static void
idle_fired(struct cm_timer *tm)
{
	struct rgw_conn *c = tm->arg;

	c->nest++;
	idle_fired_in(tm);
	c->nest--;
	conn_maybe_free(c);
}

static void
nop_done_in(struct cm_io *io, int res)
{
	struct rgw_conn *c = io->arg;

	(void)res;
	c->nop_pending = false;
	if (c->closing) {
		conn_maybe_free(c);
		return;
	}
	conn_kick(c);
}

static void
nop_done(struct cm_io *io, int res)
{
	struct rgw_conn *c = io->arg;

	c->nest++;
	nop_done_in(io, res);
	c->nest--;
	conn_maybe_free(c);
}

/* Run conn_kick from the loop (never inside the handler's own call). */
static void
kick_later(struct rgw_conn *c)
{
	if (c->nop_pending)
		return;
	if (cm_io_nop(c->t->r, &c->nio) == 0)
		c->nop_pending = true;
}

static void accept_done(struct cm_io *io, int res);

static void
post_accept(struct rgw_http_thread *t, bool tls)
{
	if (t->stopping)
		return;
	if (cm_io_accept(t->r, tls ? &t->tacc : &t->acc, tls ? t->s->tls_lfd : t->s->lfd)) {
		CM_ERR("rgw thread %u: cannot accept", t->idx);
	}
}

static void tls_sent(struct cm_io *io, int res);

/* c's TLS session (server side, over memory BIOs). \return 0, -ENOMEM. */
static int
tls_conn_init(struct rgw_conn *c, SSL_CTX *ctx)
{
	if (!(c->ssl = SSL_new(ctx)) || !(c->tin = malloc(TLS_IN_SIZE)) ||
	    !(c->rb = BIO_new(BIO_s_mem())) || !(c->wb = BIO_new(BIO_s_mem()))) {
		BIO_free(c->rb);
		c->rb = NULL;
		return -ENOMEM;
	}
	BIO_set_mem_eof_return(c->rb, -1); /* (empty: "want more", not the end) */
	SSL_set_bio(c->ssl, c->rb, c->wb);
	SSL_set_accept_state(c->ssl);
	c->tio.cb = tls_sent;
	c->tio.arg = c;
	return 0;
}

static void
accept_done(struct cm_io *io, int res)
{
	struct rgw_http_thread *t = io->arg;
	bool tls = io == &t->tacc;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct rgw_conn *c;

	if (res < 0) {
		if (res != -ECANCELED && res != -EAGAIN && !t->stopping)
			CM_WARN_RC(res, "accept");
		if (!t->stopping)
			post_accept(t, tls);
		return;
	}
	if (t->stopping) {
		close(res);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->rbuf = malloc(RBUF_SIZE)) ||
	    rgw_http_parser_create(&parser_ops, c, &c->head, &c->p) ||
	    (tls && tls_conn_init(c, t->s->tls))) {
		if (c) {
			free(c->rbuf);
			rgw_http_parser_destroy(c->p);
			SSL_free(c->ssl);
			free(c->tin);
		}
		free(c);
		close(res);
		post_accept(t, tls);
		return;
	}
	c->t = t;
	c->fd = res;
	cm_sock_tune(res);
	if (getpeername(res, (struct sockaddr *)&ss, &sl) == 0)
		cm_sock_addr_str((struct sockaddr *)&ss, c->peer, sizeof(c->peer));
	else
		snprintf(c->peer, sizeof(c->peer), "?");
	c->rio.cb = recv_done;
	c->rio.arg = c;
	c->sio.arg = c;
	c->nio.cb = nop_done;
	c->nio.arg = c;
	c->st = CS_HEAD;
	cm_timer_init(&c->idle, idle_fired, c);
	TAILQ_INSERT_TAIL(&t->conns, c, link);
	cm_timer_arm(t->r, &c->idle, t->s->o.idle_ms);
	(void)start_read(c);
	post_accept(t, tls);
}

/* ---- the request API ---- */

const struct rgw_http_head *
rgw_req_head(const struct rgw_req *r)
{
	return &r->c->head;
}

struct rgw_http_thread *
rgw_req_thread(const struct rgw_req *r)
{
	return r->c->t;
}

void
rgw_req_set_ctx(struct rgw_req *r, void *ctx)
{
	r->ctx = ctx;
}

void *
rgw_req_ctx(const struct rgw_req *r)
{
	return r->ctx;
}

const char *
rgw_req_peer(const struct rgw_req *r)
{
	return r->c->peer;
}

const char *
rgw_req_id(const struct rgw_req *r)
{
	return r->id;
}

bool
rgw_req_body_done(const struct rgw_req *r)
{
	return r->body_done;
}

void
rgw_req_close_after(struct rgw_req *r)
{
	r->close_after = true;
}

void
rgw_req_body_read(struct rgw_req *r, rgw_body_cb cb, void *arg)
{
	struct rgw_conn *c = r->c;

	if (cb) {
		r->bcb = cb;
		r->barg = arg;
	}
	r->body_paused = false;
	if (c->dead) {
		r->body_err_told = false;
		kick_later(c);
		return;
	}
	if (r->continue_pending && !r->continue_sent && !c->sending)
		send_next(c);
	kick_later(c);
}

void
rgw_req_body_pause(struct rgw_req *r)
{
	r->body_paused = true;
}

static int
head_text(struct rgw_req *r, int status, const char *hdrs, uint64_t len)
{
	struct rgw_conn *c = r->c;
	bool close = r->close_after || !c->head.keep_alive;
	const char *xh = r->extra_hdrs ? r->extra_hdrs : "";
	size_t hl = (hdrs ? strlen(hdrs) : 0) + strlen(xh);
	size_t cap = hl + 512;
	char *b;
	int n;

	if (hl > HEAD_OUT_MAX)
		return -E2BIG;
	if (!(b = malloc(cap)))
		return -ENOMEM;
	if (len == UINT64_MAX)
		n = snprintf(b, cap,
			     "HTTP/1.1 %d %s\r\nDate: %s\r\nServer: cairn-rgw\r\n"
			     "x-amz-request-id: %s\r\n%s%sTransfer-Encoding: chunked\r\n%s\r\n",
			     status, rgw_http_reason(status), date_now(c->t), r->id,
			     hdrs ? hdrs : "", xh, close ? "Connection: close\r\n" : "");
	else
		n = snprintf(b, cap,
			     "HTTP/1.1 %d %s\r\nDate: %s\r\nServer: cairn-rgw\r\n"
			     "x-amz-request-id: %s\r\n%s%sContent-Length: %" PRIu64 "\r\n%s\r\n",
			     status, rgw_http_reason(status), date_now(c->t), r->id,
			     hdrs ? hdrs : "", xh, len, close ? "Connection: close\r\n" : "");
	if (n < 0 || (size_t)n >= cap) {
		free(b);
		return -E2BIG;
	}
	if (close)
		r->close_after = true;
	free(r->head_out);
	r->head_out = b;
	r->head_len = (size_t)n;
	return 0;
}

int
rgw_req_add_headers(struct rgw_req *r, const char *hdrs)
{
	size_t have = r->extra_hdrs ? strlen(r->extra_hdrs) : 0, n = strlen(hdrs);
	char *nb;

	if (have + n > HEAD_OUT_MAX)
		return -E2BIG;
	if (!(nb = realloc(r->extra_hdrs, have + n + 1)))
		return -ENOMEM;
	memcpy(nb + have, hdrs, n + 1);
	r->extra_hdrs = nb;
	return 0;
}

int
rgw_req_send_head(struct rgw_req *r, int status, const char *hdrs, uint64_t len)
{
	int rc;

	if (r->head_queued || r->ended)
		return -EALREADY;
	if ((rc = head_text(r, status, hdrs, len)))
		return rc;
	r->head_queued = true;
	r->head_pending = true;
	/* (no 100 Continue once a final answer goes out) */
	r->continue_pending = false;
	r->status = status;
	return 0;
}

static void finish_req(struct rgw_conn *c);

/* Send wb's ciphertext: one socket send at a time, collected while none is in flight. */
static void
tls_pump(struct rgw_conn *c)
{
	size_t pend;

	if (c->tls_sending || c->dead)
		return;
	if (c->tout_off == c->tout_len)
		c->tout_off = c->tout_len = 0;
	pend = (size_t)BIO_ctrl_pending(c->wb);
	if (pend) {
		if (c->tout_off) {
			memmove(c->tout, c->tout + c->tout_off, c->tout_len - c->tout_off);
			c->tout_len -= c->tout_off;
			c->tout_off = 0;
		}
		if (c->tout_len + pend > c->tout_cap) {
			size_t cap = c->tout_len + pend;
			char *nb = realloc(c->tout, cap);

			if (!nb) {
				c->dead = true;
				conn_close(c);
				return;
			}
			c->tout = nb;
			c->tout_cap = cap;
		}
		if (BIO_read(c->wb, c->tout + c->tout_len, (int)pend) != (int)pend) {
			c->dead = true;
			conn_close(c);
			return;
		}
		c->tout_len += pend;
	}
	if (c->tout_off == c->tout_len)
		return;
	c->tiov.iov_base = c->tout + c->tout_off;
	c->tiov.iov_len = c->tout_len - c->tout_off;
	if (cm_io_sendmsg(c->t->r, &c->tio, c->fd, &c->tiov, 1)) {
		c->dead = true;
		conn_close(c);
		return;
	}
	c->tls_sending = true;
}

static void
tls_sent_in(struct cm_io *io, int res)
{
	struct rgw_conn *c = io->arg;

	c->tls_sending = false;
	if (res < 0 || c->dead) {
		c->dead = true;
		if (c->user_pending) {
			c->user_pending = false;
			send_done_in(&c->sio, res < 0 ? res : -EPIPE);
		} else {
			conn_close(c);
		}
		return;
	}
	c->tout_off += (size_t)res;
	c->sent_total += (uint64_t)res;
	if (c->user_pending && c->sent_total >= c->user_end) {
		/* (the whole plaintext went: as a plain send taking every byte) */
		c->user_pending = false;
		send_done_in(&c->sio, (int)c->user_plain);
	}
	tls_pump(c);
}

static void
tls_sent(struct cm_io *io, int res)
{
	struct rgw_conn *c = io->arg;

	c->nest++;
	tls_sent_in(io, res);
	c->nest--;
	conn_maybe_free(c);
}

/* Encrypt r->iov[0..iovcnt) whole and send it (as submit_send). */
static int
tls_submit(struct rgw_conn *c)
{
	struct rgw_req *r = &c->req;
	size_t total = 0;

	for (int i = 0; i < r->iovcnt; i++) {
		const char *p = r->iov[i].iov_base;
		size_t n = r->iov[i].iov_len;

		while (n) {
			int w = SSL_write(c->ssl, p, n > INT_MAX ? INT_MAX : (int)n);

			if (w <= 0) {
				ERR_clear_error();
				return -EIO;
			}
			p += w;
			n -= (size_t)w;
			total += (size_t)w;
		}
	}
	if (total > INT_MAX)
		return -E2BIG;
	c->user_plain = total;
	c->user_end = BIO_number_written(c->wb);
	c->user_pending = true;
	c->sending = true;
	tls_pump(c);
	if (c->dead && c->user_pending) {
		c->user_pending = false;
		c->sending = false;
		return -EIO;
	}
	return 0;
}

/* Submit r->iov[0..iovcnt). \return 0 or an error (nothing in flight). */
static int
submit_send(struct rgw_conn *c)
{
	struct rgw_req *r = &c->req;

	if (c->ssl)
		return tls_submit(c);
	c->sio.cb = send_done;
	if (cm_io_sendmsg(c->t->r, &c->sio, c->fd, r->iov, r->iovcnt))
		return -EIO;
	c->sending = true;
	return 0;
}

static void
send_done_in(struct cm_io *io, int res)
{
	struct rgw_conn *c = io->arg;
	struct rgw_req *r = &c->req;
	size_t n;
	int i = 0;

	c->sending = false;
	if (res >= 0 && !c->dead) {
		n = (size_t)res;
		while (i < r->iovcnt && n >= r->iov[i].iov_len)
			n -= r->iov[i++].iov_len;
		if (i < r->iovcnt) {
			r->iov[i].iov_base = (char *)r->iov[i].iov_base + n;
			r->iov[i].iov_len -= n;
			memmove(r->iov, r->iov + i, sizeof(r->iov[0]) * (size_t)(r->iovcnt - i));
			r->iovcnt -= i;
			if (submit_send(c) == 0)
				return;
			res = -EIO;
		}
	}
	r->iovcnt = 0;
	if (res < 0 || c->dead) {
		c->dead = true;
		r->failed = true;
	}
	if (r->send_user) {
		rgw_sent_cb cb = r->scb;

		r->send_user = false;
		r->scb = NULL;
		if (cb)
			cb(r, r->failed ? (res < 0 ? res : -EPIPE) : 0, r->sarg);
		/* (cb may have sent more, or ended r) */
	}
	if (r->failed)
		conn_close(c);
	if (r->ended)
		finish_req(c);
	else if (!c->sending)
		send_next(c);
}

static void
send_done(struct cm_io *io, int res)
{
	struct rgw_conn *c = io->arg;

	c->nest++;
	send_done_in(io, res);
	c->nest--;
	conn_maybe_free(c);
}

/* Send the 100 Continue if one is due and nothing else goes. */
static void
send_next(struct rgw_conn *c)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
	struct rgw_req *r = &c->req;

	if (c->sending || c->dead || !r->continue_pending || r->continue_sent || r->head_queued)
		return;
	r->continue_sent = true;
	r->continue_pending = false;
	r->iov[0].iov_base = (void *)cont;
	r->iov[0].iov_len = sizeof(cont) - 1;
	r->iovcnt = 1;
	if (submit_send(c))
		conn_close(c);
}

int
rgw_req_send(struct rgw_req *r, const struct iovec *iov, int iovcnt, rgw_sent_cb cb, void *arg)
{
	struct rgw_conn *c = r->c;
	int n = 0;

	if (!r->head_queued || r->ended)
		return -EINVAL;
	if (iovcnt < 0 || iovcnt > SEND_IOV_MAX - 1)
		return -E2BIG;
	if (c->sending)
		return -EBUSY;
	if (c->dead)
		return -EPIPE;
	if (r->head_pending) {
		r->iov[n].iov_base = r->head_out;
		r->iov[n++].iov_len = r->head_len;
		r->head_pending = false;
	}
	for (int i = 0; i < iovcnt; i++)
		if (iov[i].iov_len && r->method_head == false)
			r->iov[n++] = iov[i];
	r->scb = cb;
	r->sarg = arg;
	r->send_user = true;
	r->iovcnt = n;
	if (!n) {
		/* (nothing to send: complete on the loop) */
		c->sio.cb = send_done;
		if (cm_io_nop(c->t->r, &c->sio) == 0) {
			c->sending = true;
			return 0;
		}
		r->send_user = false;
		return -ENOMEM;
	}
	if (submit_send(c)) {
		r->send_user = false;
		r->iovcnt = 0;
		return -EIO;
	}
	return 0;
}

static void
finish_req(struct rgw_conn *c)
{
	struct rgw_req *r = &c->req;

	if (c->sending || !c->req_active)
		return;
	if (r->head_pending && !c->dead) {
		/* (the head alone is still to go) */
		r->head_pending = false;
		r->iov[0].iov_base = r->head_out;
		r->iov[0].iov_len = r->head_len;
		r->iovcnt = 1;
		if (submit_send(c) == 0)
			return;
		c->dead = true;
	}
	c->req_active = false;
	/* (the handler is done with the request: no body callback may reach it now) */
	r->bcb = NULL;
	r->barg = NULL;
	if (c->dead || r->close_after || r->failed) {
		conn_close(c);
		return;
	}
	if (!r->body_done) {
		uint64_t left = c->head.has_length ? c->head.content_length - r->body_seen : 0;

		/* (a client waiting for 100 Continue never sends the body: close) */
		if ((c->head.expect_continue && !r->continue_sent) || !c->head.has_length ||
		    left > DISCARD_MAX) {
			conn_close(c);
			return;
		}
		c->st = CS_DISCARD;
	} else {
		c->st = CS_HEAD;
	}
	c->at_end = false;
	r->bcb = NULL;
	kick_later(c);
}

void
rgw_req_end(struct rgw_req *r)
{
	if (r->ended)
		return;
	if (!r->head_queued && rgw_req_send_head(r, 500, NULL, 0))
		r->failed = true;
	r->ended = true;
	finish_req(r->c);
}

static void
respond_sent(struct rgw_req *r, int res, void *arg)
{
	(void)res;
	(void)arg;
	rgw_req_end(r);
}

void
rgw_req_respond(struct rgw_req *r, int status, const char *hdrs, const void *body, size_t len)
{
	struct iovec iov;

	if (rgw_req_send_head(r, status, hdrs, len)) {
		r->failed = true;
		rgw_req_end(r);
		return;
	}
	if (len) {
		free(r->owned);
		if (!(r->owned = malloc(len))) {
			r->failed = true;
			rgw_req_end(r);
			return;
		}
		memcpy(r->owned, body, len);
	}
	iov.iov_base = r->owned;
	iov.iov_len = len;
	if (rgw_req_send(r, &iov, len ? 1 : 0, respond_sent, NULL)) {
		r->failed = true;
		rgw_req_end(r);
	}
}

/* ---- threads ---- */

static void
stop_msg(void *arg)
{
	struct rgw_http_thread *t = arg;
	struct rgw_conn *c, *tmp;

	t->stopping = true;
	cm_io_cancel(t->r, &t->acc);
	if (t->s->tls)
		cm_io_cancel(t->r, &t->tacc);
	TAILQ_FOREACH_SAFE(c, &t->conns, link, tmp)
		conn_close(c);
	cm_reactor_stop(t->r);
}

static void *
thread_main(void *arg)
{
	struct rgw_http_thread *t = arg;
	struct rgw_http_server *s = t->s;
	int rc = 0;

	if (s->o.thread_init)
		rc = s->o.thread_init(t, s->o.arg);
	if (!rc) {
		t->acc.cb = accept_done;
		t->acc.arg = t;
		t->tacc.cb = accept_done;
		t->tacc.arg = t;
		if (cm_io_accept(t->r, &t->acc, s->lfd) ||
		    (s->tls && cm_io_accept(t->r, &t->tacc, s->tls_lfd)))
			rc = -EIO;
	}
	pthread_mutex_lock(&t->mu);
	t->init_rc = rc;
	t->ready = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	if (rc)
		return NULL;
	cm_reactor_run(t->r);
	/* Drain: connections whose handler still works finish first. */
	for (int i = 0; i < 100000 && (!TAILQ_EMPTY(&t->conns) || cm_io_pending(&t->acc) ||
				       (s->tls && cm_io_pending(&t->tacc)));
	     i++)
		cm_reactor_run_once(t->r, 10);
	if (s->o.thread_fini)
		s->o.thread_fini(t, s->o.arg);
	return NULL;
}

/* The TLS listener's context: TLS 1.2 and later, the certificate chain and its key. */
static int
tls_ctx_make(const struct rgw_http_server_opts *o, SSL_CTX **out)
{
	SSL_CTX *ctx;

	*out = NULL;
	if (!o->tls_cert || !*o->tls_cert || !o->tls_key || !*o->tls_key) {
		CM_ERR("rgw: a TLS listener needs a certificate and a key");
		return -EINVAL;
	}
	if (!(ctx = SSL_CTX_new(TLS_server_method())))
		return -ENOMEM;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	if (SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, o->tls_key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		CM_ERR("rgw: TLS certificate %s / key %s: %s", o->tls_cert, o->tls_key,
		       ERR_reason_error_string(ERR_peek_last_error()) ?: "not usable");
		ERR_clear_error();
		SSL_CTX_free(ctx);
		return -EINVAL;
	}
	*out = ctx;
	return 0;
}

int
rgw_http_server_start(const struct rgw_http_server_opts *o, struct rgw_http_server **sp)
{
	struct rgw_http_server *s;
	int rc;

	*sp = NULL;
	if (!o->handler)
		return -EINVAL;
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	s->o = *o;
	if (!s->o.threads)
		s->o.threads = 2;
	if (!s->o.idle_ms)
		s->o.idle_ms = 60000;
	cm_random_bytes(&s->id_base, sizeof(s->id_base));
	s->id_base &= ~0xffffffffull;
	s->tls_lfd = -1;
	rc = cm_sock_listen(o->listen, 1024, &s->lfd, &s->port);
	if (rc) {
		free(s);
		return rc;
	}
	if (o->tls_listen && *o->tls_listen) {
		if ((rc = tls_ctx_make(o, &s->tls)) ||
		    (rc = cm_sock_listen(o->tls_listen, 1024, &s->tls_lfd, &s->tls_port))) {
			SSL_CTX_free(s->tls);
			close(s->lfd);
			free(s);
			return rc;
		}
	}
	s->threads = calloc(s->o.threads, sizeof(*s->threads));
	if (!s->threads) {
		rc = -ENOMEM;
		goto err;
	}
	for (unsigned i = 0; i < s->o.threads; i++) {
		struct rgw_http_thread *t = &s->threads[i];
		struct cm_reactor_opts ro;
		char name[32];

		t->s = s;
		t->idx = i;
		TAILQ_INIT(&t->conns);
		pthread_mutex_init(&t->mu, NULL);
		pthread_cond_init(&t->cv, NULL);
		snprintf(name, sizeof(name), "rgw.%u", i);
		cm_reactor_opts_init(&ro, sizeof(ro));
		ro.backend = o->backend;
		ro.name = name;
		if ((rc = cm_reactor_create(&ro, &t->r)))
			goto err;
		s->nthreads = i + 1;
		if ((rc = -pthread_create(&t->tid, NULL, thread_main, t)))
			goto err;
		t->started = true;
		pthread_mutex_lock(&t->mu);
		while (!t->ready)
			pthread_cond_wait(&t->cv, &t->mu);
		pthread_mutex_unlock(&t->mu);
		if ((rc = t->init_rc))
			goto err;
	}
	*sp = s;
	return 0;
err:
	rgw_http_server_stop(s);
	return rc;
}

uint16_t
rgw_http_server_port(const struct rgw_http_server *s)
{
	return s->port;
}

uint16_t
rgw_http_server_tls_port(const struct rgw_http_server *s)
{
	return s->tls ? s->tls_port : 0;
}

bool
rgw_req_is_tls(const struct rgw_req *r)
{
	return r->c->ssl != NULL;
}

void
rgw_http_server_stop(struct rgw_http_server *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->nthreads; i++) {
		struct rgw_http_thread *t = &s->threads[i];

		if (t->started && !t->init_rc) {
			t->stop_msg.fn = stop_msg;
			t->stop_msg.arg = t;
			cm_reactor_post(t->r, &t->stop_msg);
		}
	}
	for (unsigned i = 0; i < s->nthreads; i++) {
		struct rgw_http_thread *t = &s->threads[i];

		if (t->started)
			pthread_join(t->tid, NULL);
		cm_reactor_destroy(t->r);
		pthread_mutex_destroy(&t->mu);
		pthread_cond_destroy(&t->cv);
	}
	if (s->lfd > 0)
		close(s->lfd);
	if (s->tls_lfd >= 0)
		close(s->tls_lfd);
	SSL_CTX_free(s->tls);
	free(s->threads);
	free(s);
}

struct cm_reactor *
rgw_http_thread_reactor(struct rgw_http_thread *t)
{
	return t->r;
}

unsigned
rgw_http_thread_index(const struct rgw_http_thread *t)
{
	return t->idx;
}

void
rgw_http_thread_set_ctx(struct rgw_http_thread *t, void *ctx)
{
	t->ctx = ctx;
}

void *
rgw_http_thread_ctx(const struct rgw_http_thread *t)
{
	return t->ctx;
}
