/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP server on real sockets: keep-alive and pipelining answered in
 * order, bodies read with pauses (back-pressure) and counted exactly, a
 * request refused on its head before its body (Expect: 100-continue),
 * bodies left unread, a head too large, and a peer that goes away.
 */
#include "rgw/http.h"
#include "testlib.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

struct st {
	struct rgw_req *r;
	uint64_t n;
	unsigned sum;
	int pauses;
	struct cm_timer t;
};

static void
resume(struct cm_timer *t)
{
	struct st *s = t->arg;

	rgw_req_body_read(s->r, NULL, NULL);
}

static void
body_cb(struct rgw_req *r, const char *d, ssize_t len, void *arg)
{
	struct st *s = arg;
	char out[96];

	if (len < 0) {
		cm_timer_cancel(rgw_http_thread_reactor(rgw_req_thread(r)), &s->t);
		rgw_req_end(r);
		free(s);
		return;
	}
	if (len > 0) {
		for (ssize_t i = 0; i < len; i++)
			s->sum = s->sum * 31 + (unsigned char)d[i];
		s->n += (uint64_t)len;
		/* Every 256 KiB, pause 2 ms: the server stops reading meanwhile. */
		if (s->n / (256 << 10) != (s->n - (uint64_t)len) / (256 << 10)) {
			s->pauses++;
			rgw_req_body_pause(r);
			cm_timer_arm(rgw_http_thread_reactor(rgw_req_thread(r)), &s->t, 2);
		}
		return;
	}
	cm_timer_cancel(rgw_http_thread_reactor(rgw_req_thread(r)), &s->t);
	snprintf(out, sizeof(out), "%" PRIu64 " %u", s->n, s->sum);
	rgw_req_respond(r, 200, "Content-Type: text/plain\r\n", out, strlen(out));
	free(s);
}

static void
handler(struct rgw_req *r, void *arg)
{
	const struct rgw_http_head *h = rgw_req_head(r);

	(void)arg;
	if (!strncmp(h->target, "/deny", 5)) {
		rgw_req_respond(r, 403, NULL, "no", 2);
		return;
	}
	if (!strncmp(h->target, "/ignore", 7)) {
		rgw_req_respond(r, 200, NULL, "ignored", 7); /* (the body is left unread) */
		return;
	}
	if (h->method == RGW_M_PUT || h->method == RGW_M_POST) {
		struct st *s = calloc(1, sizeof(*s));

		s->r = r;
		cm_timer_init(&s->t, resume, s);
		/* (the body callback is set once; a resume passes NULL and keeps it) */
		rgw_req_body_read(r, body_cb, s);
		return;
	}
	rgw_req_respond(r, 200, NULL, h->target, h->target_len);
}

static struct rgw_http_server *g_srv;

static int
dial(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(rgw_http_server_port(g_srv)) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void
send_all(int fd, const void *b, size_t n)
{
	const char *p = b;

	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		ck_assert_int_gt(w, 0);
		p += w;
		n -= (size_t)w;
	}
}

static void
send_str(int fd, const char *s)
{
	send_all(fd, s, strlen(s));
}

/* Read until n responses are complete (Content-Length bodies) or EOF; into buf. */
static size_t
read_responses(int fd, char *buf, size_t cap, int n, bool *eof)
{
	size_t len = 0;
	int done = 0;

	*eof = false;
	while (done < n) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;
		const char *s;
		int k = 0;

		ck_assert_int_gt(poll(&p, 1, 10000), 0);
		r = recv(fd, buf + len, cap - len - 1, 0);
		if (r <= 0) {
			*eof = true;
			break;
		}
		len += (size_t)r;
		buf[len] = '\0';
		/* count complete responses */
		s = buf;
		while ((s = strstr(s, "HTTP/1.1 "))) {
			const char *hend = strstr(s, "\r\n\r\n");
			const char *cl;
			long bl = 0;

			if (!hend)
				break;
			if (!strncmp(s, "HTTP/1.1 100", 12)) {
				s = hend + 4;
				continue;
			}
			cl = strstr(s, "Content-Length: ");
			if (cl && cl < hend)
				bl = strtol(cl + 16, NULL, 10);
			if ((size_t)(hend + 4 + bl - buf) > len)
				break;
			k++;
			s = hend + 4 + bl;
		}
		done = k;
	}
	return len;
}

static void
start(void)
{
	struct rgw_http_server_opts o = { 0 };
	const char *b = getenv("CAIRN_REACTOR");

	o.listen = "127.0.0.1:0";
	o.threads = 2;
	o.handler = handler;
	o.idle_ms = 5000;
	if (b && cm_reactor_backend_parse(b, &o.backend))
		o.backend = CM_REACTOR_AUTO;
	ck_assert_int_eq(rgw_http_server_start(&o, &g_srv), 0);
}

START_TEST(test_keepalive_pipelining)
{
	static const char two[] =
		"GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n\r\n"
		"PUT /three HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
		"GET /four HTTP/1.1\r\nHost: x\r\n\r\n";
	char *buf = malloc(65536);
	bool eof;
	const char *a, *b, *c, *d;
	int fd;

	start();
	fd = dial();
	send_all(fd, two, sizeof(two) - 1);
	read_responses(fd, buf, 65536, 4, &eof);
	ck_assert(!eof);
	a = strstr(buf, "/one");
	b = strstr(buf, "/two");
	c = strstr(buf, "\r\n\r\n3 ");
	d = strstr(buf, "/four");
	ck_assert(a && b && c && d);
	ck_assert(a < b && b < c && c < d); /* in order */
	ck_assert_ptr_nonnull(strstr(buf, "x-amz-request-id: "));
	/* The same connection still serves. */
	send_str(fd, "GET /five HTTP/1.1\r\nHost: x\r\n\r\n");
	read_responses(fd, buf, 65536, 1, &eof);
	ck_assert_ptr_nonnull(strstr(buf, "/five"));
	close(fd);
	rgw_http_server_stop(g_srv);
	free(buf);
}

END_TEST

START_TEST(test_bodies)
{
	size_t n = 3u << 20;
	char *body = malloc(n), *buf = malloc(65536), hd[256], want[64];
	unsigned sum = 0;
	bool eof;
	int fd;

	for (size_t i = 0; i < n; i++) {
		body[i] = (char)(i * 7 + (i >> 12));
		sum = sum * 31 + (unsigned char)body[i];
	}
	snprintf(want, sizeof(want), "%zu %u", n, sum);
	start();
	/* Content-Length, sent in pieces; the handler pauses every 256 KiB. */
	fd = dial();
	snprintf(hd, sizeof(hd), "PUT /b HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", n);
	send_all(fd, hd, strlen(hd));
	send_all(fd, body, n);
	read_responses(fd, buf, 65536, 1, &eof);
	ck_assert_ptr_nonnull(strstr(buf, want));
	/* Chunked. */
	send_str(fd, "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (size_t off = 0; off < n;) {
		size_t k = CM_MIN(n - off, (size_t)100000);

		snprintf(hd, sizeof(hd), "%zx\r\n", k);
		send_all(fd, hd, strlen(hd));
		send_all(fd, body + off, k);
		send_str(fd, "\r\n");
		off += k;
	}
	send_str(fd, "0\r\n\r\n");
	read_responses(fd, buf, 65536, 1, &eof);
	if (!strstr(buf, want))
		fprintf(stderr, "chunked: got [%s] want [%s] eof %d\n", buf, want, eof);
	ck_assert_ptr_nonnull(strstr(buf, want));
	/* A short body left unread: discarded, the next request is served. */
	send_str(fd, "PUT /ignore HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789"
		     "GET /after HTTP/1.1\r\nHost: x\r\n\r\n");
	read_responses(fd, buf, 65536, 2, &eof);
	ck_assert_ptr_nonnull(strstr(buf, "ignored"));
	ck_assert_ptr_nonnull(strstr(buf, "/after"));
	close(fd);
	rgw_http_server_stop(g_srv);
	free(body);
	free(buf);
}

END_TEST

START_TEST(test_expect_continue)
{
	char *buf = malloc(65536);
	bool eof;
	int fd;

	start();
	/* Refused on its head: no 100 Continue, the answer, then the connection closes. */
	fd = dial();
	send_str(
		fd,
		"PUT /deny HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
	read_responses(fd, buf, 65536, 1, &eof);
	ck_assert_ptr_null(strstr(buf, "100 Continue"));
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 403"));
	read_responses(fd, buf, 65536, 1, &eof);
	ck_assert(eof);
	close(fd);
	/* Accepted: 100 Continue first, then the body is read. */
	fd = dial();
	send_str(
		fd,
		"PUT /ok HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		ck_assert_int_gt(poll(&p, 1, 10000), 0);
		r = recv(fd, buf, 65535, 0);
		ck_assert_int_gt(r, 0);
		buf[r] = '\0';
		ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 100 Continue"));
	}
	send_str(fd, "hello");
	read_responses(fd, buf, 65536, 1, &eof);
	ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\n5 "));
	close(fd);
	rgw_http_server_stop(g_srv);
	free(buf);
}

END_TEST

START_TEST(test_bad_input)
{
	char *big = malloc(80000), *buf = malloc(65536);
	bool eof;
	size_t n;
	int fd;

	start();
	fd = dial();
	n = (size_t)snprintf(big, 80000, "GET / HTTP/1.1\r\nX-A: ");
	memset(big + n, 'a', 70000);
	n += 70000;
	memcpy(big + n, "\r\n\r\n", 4);
	n += 4;
	send(fd, big, n, MSG_NOSIGNAL); /* (the server may close before reading it all) */
	read_responses(fd, buf, 65536, 1, &eof);
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 431"));
	close(fd);
	fd = dial();
	send_str(fd, "NOT HTTP AT ALL\r\n\r\n");
	read_responses(fd, buf, 65536, 1, &eof);
	ck_assert_ptr_nonnull(strstr(buf, "HTTP/1.1 400"));
	close(fd);
	/* A peer that leaves mid-body: the handler hears of it, the server goes on. */
	fd = dial();
	send_str(fd, "PUT /gone HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nabc");
	usleep(50000);
	close(fd);
	fd = dial();
	send_str(fd, "GET /still HTTP/1.1\r\nHost: x\r\n\r\n");
	read_responses(fd, buf, 65536, 1, &eof);
	ck_assert_ptr_nonnull(strstr(buf, "/still"));
	close(fd);
	rgw_http_server_stop(g_srv);
	free(big);
	free(buf);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("http_server");
	TCase *tc = tcase_create("http_server");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_keepalive_pipelining);
	tcase_add_test(tc, test_bodies);
	tcase_add_test(tc, test_expect_continue);
	tcase_add_test(tc, test_bad_input);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
