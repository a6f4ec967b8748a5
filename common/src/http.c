/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DESIGN: one request per connection (Connection: close); a connection reads
 * into a fixed 8 KiB buffer, re-parses from the start when more bytes arrive
 * (bounded by the buffer), answers, and closes. A 10 s timer closes idle or
 * trickling clients. Rendering happens on the reactor; /metrics is small.
 */
#include "cm/http.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/sock.h"

#include <http_parser.h>

CM_LOG_SUBSYS(http);

#define HTTP_IDLE_MS 10000

struct parse_ctx {
	struct cm_http_req *req;
	bool done;
	bool too_long;
	size_t path_len;
};

static int
on_url(http_parser *p, const char *at, size_t len)
{
	struct parse_ctx *x = p->data;

	if (x->path_len + len >= sizeof(x->req->path)) {
		x->too_long = true;
		return 1;
	}
	memcpy(x->req->path + x->path_len, at, len);
	x->path_len += len;
	x->req->path[x->path_len] = '\0';
	return 0;
}

static int
on_complete(http_parser *p)
{
	struct parse_ctx *x = p->data;

	x->done = true;
	http_parser_pause(p, 1);
	return 0;
}

int
cm_http_req_parse(const char *buf, size_t len, struct cm_http_req *req)
{
	http_parser_settings s;
	http_parser p;
	struct parse_ctx x = { .req = req };
	size_t n;

	memset(req, 0, sizeof(*req));
	http_parser_settings_init(&s);
	s.on_url = on_url;
	s.on_message_complete = on_complete;
	http_parser_init(&p, HTTP_REQUEST);
	p.data = &x;
	n = http_parser_execute(&p, &s, buf, len);
	if (x.too_long)
		return -E2BIG;
	if (x.done) {
		snprintf(req->method, sizeof(req->method), "%s",
			 http_method_str((enum http_method)p.method));
		req->keep_alive = http_should_keep_alive(&p);
		req->consumed = n;
		return 0;
	}
	if (HTTP_PARSER_ERRNO(&p) != HPE_OK)
		return -EBADMSG;
	return len >= CM_HTTP_MAX_REQUEST ? -E2BIG : -EAGAIN;
}

struct http_conn;

struct cm_http_metrics {
	struct cm_reactor *r;
	struct cm_metrics *m;
	int lfd;
	struct cm_io accept_io;
	bool stopping;
	unsigned nconns;
	TAILQ_HEAD(, http_conn) conns;
};

struct http_conn {
	struct cm_http_metrics *h;
	int fd;
	struct cm_io io;
	struct cm_timer idle;
	char buf[CM_HTTP_MAX_REQUEST];
	size_t fill;
	char head[256];
	char *body;
	struct iovec iov[2];
	bool closing;
	TAILQ_ENTRY(http_conn) link;
};

static void conn_recv(struct http_conn *c);

static void
conn_free(struct http_conn *c)
{
	struct cm_http_metrics *h = c->h;

	cm_timer_cancel(h->r, &c->idle);
	cm_reactor_close(h->r, c->fd);
	free(c->body);
	TAILQ_REMOVE(&h->conns, c, link);
	h->nconns--;
	free(c);
}

static void
conn_close(struct http_conn *c)
{
	c->closing = true;
	if (cm_io_pending(&c->io)) {
		shutdown(c->fd, SHUT_RDWR);
		cm_io_cancel(c->h->r, &c->io);
		return;
	}
	conn_free(c);
}

static void
sent_done(struct cm_io *io, int res)
{
	struct http_conn *c = io->arg;

	(void)res; /* a short write to a scraper that went away is its problem */
	conn_free(c);
}

static void
respond(struct http_conn *c, int status, const char *reason, const char *ctype, char *body,
	size_t blen)
{
	int n, rc;

	c->body = body;
	n = snprintf(c->head, sizeof(c->head),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n",
		     status, reason, ctype, blen);
	c->iov[0].iov_base = c->head;
	c->iov[0].iov_len = (size_t)n;
	c->iov[1].iov_base = body ? body : (char *)"";
	c->iov[1].iov_len = blen;
	c->io.cb = sent_done;
	rc = cm_io_sendmsg(c->h->r, &c->io, c->fd, c->iov, 2);
	if (rc)
		conn_free(c);
}

static void
respond_text(struct http_conn *c, int status, const char *reason, const char *text)
{
	char *b = strdup(text);

	respond(c, status, reason, "text/plain; charset=utf-8", b, b ? strlen(b) : 0);
}

static void
handle(struct http_conn *c, const struct cm_http_req *req)
{
	char *out;
	size_t len;

	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
		respond_text(c, 405, "Method Not Allowed", "only GET\n");
		return;
	}
	if (strcmp(req->path, "/metrics") != 0) {
		respond_text(c, 404, "Not Found", "try /metrics\n");
		return;
	}
	if (cm_metrics_render(c->h->m, &out, &len)) {
		respond_text(c, 500, "Internal Server Error", "out of memory\n");
		return;
	}
	if (strcmp(req->method, "HEAD") == 0)
		len = 0;
	respond(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", out, len);
}

static void
recv_done(struct cm_io *io, int res)
{
	struct http_conn *c = io->arg;
	struct cm_http_req req;
	int rc;

	if (c->closing || res <= 0) {
		conn_free(c);
		return;
	}
	c->fill += (size_t)res;
	rc = cm_http_req_parse(c->buf, c->fill, &req);
	if (rc == -EAGAIN) {
		conn_recv(c);
		return;
	}
	cm_timer_cancel(c->h->r, &c->idle);
	if (rc == -E2BIG)
		respond_text(c, 431, "Request Header Fields Too Large", "request too large\n");
	else if (rc)
		respond_text(c, 400, "Bad Request", "malformed request\n");
	else
		handle(c, &req);
}

static void
conn_recv(struct http_conn *c)
{
	int rc;

	c->io.cb = recv_done;
	rc = cm_io_recv(c->h->r, &c->io, c->fd, c->buf + c->fill, sizeof(c->buf) - c->fill);
	if (rc)
		conn_free(c);
}

static void
idle_fired(struct cm_timer *t)
{
	conn_close(t->arg);
}

static void
accept_done(struct cm_io *io, int res)
{
	struct cm_http_metrics *h = io->arg;
	struct http_conn *c;

	if (h->stopping)
		return;
	if (res >= 0) {
		c = calloc(1, sizeof(*c));
		if (!c || h->nconns >= 64) {
			/* Bounded: a scraper storm cannot eat memory. */
			free(c);
			close(res);
		} else {
			c->h = h;
			c->fd = res;
			c->io.arg = c;
			cm_timer_init(&c->idle, idle_fired, c);
			cm_timer_arm(h->r, &c->idle, HTTP_IDLE_MS);
			TAILQ_INSERT_TAIL(&h->conns, c, link);
			h->nconns++;
			conn_recv(c);
		}
	} else if (res != -ECANCELED) {
		CM_LOG_RL(CM_LOG_WARN, "metrics accept failed rc=%d (%s)", res, cm_strerror(res));
	}
	if (cm_io_accept(h->r, &h->accept_io, h->lfd))
		CM_ERR("metrics endpoint stopped accepting fd=%d", h->lfd);
}

int
cm_http_metrics_start(struct cm_reactor *r, struct cm_metrics *m, const char *addr, uint16_t *port,
		      struct cm_http_metrics **hp)
{
	struct cm_http_metrics *h = calloc(1, sizeof(*h));
	int rc;

	if (!h)
		return -ENOMEM;
	rc = cm_sock_listen(addr, 64, &h->lfd, port);
	if (rc) {
		free(h);
		return rc;
	}
	h->r = r;
	h->m = m;
	TAILQ_INIT(&h->conns);
	h->accept_io.cb = accept_done;
	h->accept_io.arg = h;
	rc = cm_io_accept(r, &h->accept_io, h->lfd);
	if (rc) {
		close(h->lfd);
		free(h);
		return rc;
	}
	*hp = h;
	return 0;
}

void
cm_http_metrics_stop(struct cm_http_metrics *h)
{
	struct http_conn *c, *tmp;

	if (!h)
		return;
	h->stopping = true;
	TAILQ_FOREACH_SAFE(c, &h->conns, link, tmp)
		conn_close(c);
	shutdown(h->lfd, SHUT_RDWR);
	cm_io_cancel(h->r, &h->accept_io);
	for (int i = 0; i < 500 && (h->nconns || cm_io_pending(&h->accept_io)); i++)
		cm_reactor_run_once(h->r, 10);
	cm_reactor_close(h->r, h->lfd);
	free(h);
}
