/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cairn-rgw's HTTP/1.1 server (docs/design/rgw.md §1).
 *
 * Two layers:
 *  - struct rgw_http_parser: llhttp plus our collection of one request's
 *    head (method, target, headers) under fixed limits, and the body handed
 *    on as it is decoded (chunked transfer encoding undone). No sockets: the
 *    fuzz target drives it directly.
 *  - struct rgw_http_server: listeners and connections on the project's
 *    reactors, one thread each; requests of a connection are answered in
 *    order (keep-alive, pipelining), a handler gets each request once its
 *    head is complete and pulls its body when it wants it (so a request
 *    refused on its head, e.g. by auth, is answered before its body is read:
 *    Expect: 100-continue).
 */
#ifndef RGW_HTTP_H
#define RGW_HTTP_H

#include "cm/reactor.h"
#include "cm/stdinc.h"

#define RGW_HTTP_HEAD_MAX   (64u << 10) /* request line and headers, in all */
#define RGW_HTTP_HEADER_MAX (8u << 10)  /* one header (name and value) */
#define RGW_HTTP_HEADERS    100         /* headers per request */

struct rgw_http_hdr {
	const char *name;  /* lower case, NUL-terminated (in the request's head) */
	const char *value; /* trimmed, NUL-terminated */
	size_t vlen;
};

enum rgw_http_method {
	RGW_M_OTHER = 0,
	RGW_M_GET,
	RGW_M_HEAD,
	RGW_M_PUT,
	RGW_M_POST,
	RGW_M_DELETE,
	RGW_M_OPTIONS,
};

/* One request's head. */
struct rgw_http_head {
	enum rgw_http_method method;
	const char *method_name;
	const char *target; /* as sent: path and query, NUL-terminated */
	size_t target_len;
	struct rgw_http_hdr hdrs[RGW_HTTP_HEADERS];
	unsigned nhdrs;
	uint64_t content_length; /* with has_length */
	bool has_length;
	bool chunked; /* Transfer-Encoding: chunked */
	bool expect_continue;
	bool keep_alive;
	unsigned http_minor;
	char buf[RGW_HTTP_HEAD_MAX]; /* the strings above */
	size_t used;
};

/* The value of header name (lower case), or NULL. With several, the first. */
const char *rgw_http_hdr(const struct rgw_http_head *h, const char *name);

struct rgw_http_parser;

/* What the parser reports. Each returns 0; a negative errno stops the parse with it. */
struct rgw_http_parser_ops {
	/* A head is complete (h stays valid until the request ends). */
	int (*head)(struct rgw_http_parser *p, struct rgw_http_head *h);
	/* Body bytes, decoded (data points into what was fed). */
	int (*body)(struct rgw_http_parser *p, const char *data, size_t len);
	/* The request (its body included) is complete. */
	int (*end)(struct rgw_http_parser *p);
};

/*
 * Make a parser for requests; h is filled with each head in turn.
 * \return 0, -ENOMEM.
 */
int rgw_http_parser_create(const struct rgw_http_parser_ops *ops, void *arg,
			   struct rgw_http_head *h, struct rgw_http_parser **pp);
void rgw_http_parser_destroy(struct rgw_http_parser *p);
void *rgw_http_parser_arg(const struct rgw_http_parser *p);

/*
 * Feed len bytes. The parse stops after a head (ops->head ran) and after a
 * request's end (ops->end ran), so the caller can act before the rest:
 * *used says how many bytes were taken; feed the remainder again later.
 * \return 0 (all taken, more wanted), 1 (stopped: at a head or an end, see
 * *used), -EBADMSG (malformed: the connection must close), -E2BIG (a head
 * past the limits: RGW_HTTP_HEAD_MAX, RGW_HTTP_HEADER_MAX,
 * RGW_HTTP_HEADERS), or an op's error.
 */
int rgw_http_parser_feed(struct rgw_http_parser *p, const char *data, size_t len, size_t *used);

/* The last feed stopped (1): the next feed, even of no bytes, goes on from there. */
bool rgw_http_parser_paused(const struct rgw_http_parser *p);

/* The peer closed: \return 0 when no request was half-parsed, else -EBADMSG. */
int rgw_http_parser_eof(struct rgw_http_parser *p);

/* A sentence for the last -EBADMSG / -E2BIG. */
const char *rgw_http_parser_error(const struct rgw_http_parser *p);

/* ---- the server ---- */

struct rgw_http_server;
struct rgw_http_thread;
struct rgw_req;

/*
 * A request's handler: called on the connection's thread once the head is
 * complete. It answers (rgw_req_respond / rgw_req_send...) now or later,
 * and may read the body first (rgw_req_body_read).
 */
typedef void (*rgw_req_cb)(struct rgw_req *r, void *arg);

struct rgw_http_server_opts {
	const char *listen; /* "127.0.0.1:7480" (port 0: a free one) */
	/* A second listener serving HTTPS (NULL: none), with its PEM certificate chain and key. */
	const char *tls_listen, *tls_cert, *tls_key;
	unsigned threads; /* reactors (default 2) */
	unsigned idle_ms; /* close a connection idle this long (default 60 s) */
	enum cm_reactor_backend backend;
	rgw_req_cb handler;
	void *arg;
	/* Per-thread setup on the thread itself, before it serves (may be NULL). */
	int (*thread_init)(struct rgw_http_thread *t, void *arg);
	void (*thread_fini)(struct rgw_http_thread *t, void *arg);
};

/* Bind, and start the threads. \return 0 or a negative errno. */
int rgw_http_server_start(const struct rgw_http_server_opts *o, struct rgw_http_server **sp);
uint16_t rgw_http_server_port(const struct rgw_http_server *s);
/* The TLS listener's port (0: none). */
uint16_t rgw_http_server_tls_port(const struct rgw_http_server *s);
/* Stop serving, close every connection, join the threads. NULL: a no-op. */
void rgw_http_server_stop(struct rgw_http_server *s);

struct cm_reactor *rgw_http_thread_reactor(struct rgw_http_thread *t);
unsigned rgw_http_thread_index(const struct rgw_http_thread *t);
/* The handler's per-thread state (set by thread_init). */
void rgw_http_thread_set_ctx(struct rgw_http_thread *t, void *ctx);
void *rgw_http_thread_ctx(const struct rgw_http_thread *t);

/* ---- a request ---- */

const struct rgw_http_head *rgw_req_head(const struct rgw_req *r);
struct rgw_http_thread *rgw_req_thread(const struct rgw_req *r);
/* The handler's state for this request. */
void rgw_req_set_ctx(struct rgw_req *r, void *ctx);
void *rgw_req_ctx(const struct rgw_req *r);
/* Whether r came over TLS. */
bool rgw_req_is_tls(const struct rgw_req *r);
/* "127.0.0.1:5000" of the peer. */
const char *rgw_req_peer(const struct rgw_req *r);
/* The request's id (x-amz-request-id): 16 hex digits, unique per gateway run. */
const char *rgw_req_id(const struct rgw_req *r);

/*
 * Body reading: cb gets the body's bytes as they are decoded (any number of
 * calls), then len 0 at its end; never from inside rgw_req_body_read. A
 * cb of NULL resumes a paused read with the callback given before.
 * The first call sends "100 Continue" when the client asked for it. A
 * negative len is an error (-ECONNRESET: the peer went away; -EBADMSG:
 * malformed framing; -ETIMEDOUT).
 */
typedef void (*rgw_body_cb)(struct rgw_req *r, const char *data, ssize_t len, void *arg);
void rgw_req_body_read(struct rgw_req *r, rgw_body_cb cb, void *arg);
/* Stop reading the socket after the bytes already received (at most 64 KiB more reach cb);
 * rgw_req_body_read resumes. */
void rgw_req_body_pause(struct rgw_req *r);
/* The body was read to its end (or there was none). */
bool rgw_req_body_done(const struct rgw_req *r);

/*
 * The response. A head first: status, then headers as "Name: value\r\n"
 * lines (may be NULL); Date, Server, x-amz-request-id, Content-Length (from
 * len; UINT64_MAX: chunked) and Connection are added. Then body pieces;
 * cb (may be NULL) runs once each is sent (or failed: res < 0, after which
 * the request is ended by the server). Then rgw_req_end. A body that was
 * not read is discarded before the connection reads the next request (or
 * the connection closes, when that body is long or its head asked for
 * 100-continue).
 */
typedef void (*rgw_sent_cb)(struct rgw_req *r, int res, void *arg);
/* Headers ("Name: value\r\n" lines) every response head of r carries besides its own
 * (CORS's). \return 0, -E2BIG, -ENOMEM. */
int rgw_req_add_headers(struct rgw_req *r, const char *hdrs);
int rgw_req_send_head(struct rgw_req *r, int status, const char *hdrs, uint64_t len);
int rgw_req_send(struct rgw_req *r, const struct iovec *iov, int iovcnt, rgw_sent_cb cb, void *arg);
/* Done with r (r is freed or reused after this): the connection goes on. */
void rgw_req_end(struct rgw_req *r);
/* The whole response at once (body copied; may be NULL); then ends r. */
void rgw_req_respond(struct rgw_req *r, int status, const char *hdrs, const void *body, size_t len);
/* Close the connection once this response is sent (no keep-alive). */
void rgw_req_close_after(struct rgw_req *r);

/* The reason phrase of a status code ("OK"). */
const char *rgw_http_reason(int status);

#endif
