/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/http.h"
#include "cm/metrics.h"
#include "cm/sock.h"
#include "testlib.h"

#include <pthread.h>

static double
seven(void *arg)
{
	(void)arg;
	return 7.5;
}

START_TEST(test_metrics_render)
{
	struct cm_metrics *m;
	struct cm_counter *c;
	struct cm_gauge *g;
	struct cm_histogram *h;
	char *out;
	size_t len;

	ck_assert_int_eq(cm_metrics_create(&m), 0);
	c = cm_metrics_counter(m, "cairn_msgs_total", "dir=\"in\"", "Messages.");
	ck_assert_ptr_eq(cm_metrics_counter(m, "cairn_msgs_total", "dir=\"in\"", "x"), c);
	ck_assert_ptr_nonnull(cm_metrics_counter(m, "cairn_msgs_total", "dir=\"out\"", "x"));
	ck_assert_ptr_null(cm_metrics_counter(m, "9bad name", NULL, "x"));
	g = cm_metrics_gauge(m, "cairn_queue_bytes", NULL, "Queued bytes.");
	h = cm_metrics_histogram(m, "cairn_op_seconds", "op=\"read\"", "Op latency.");
	ck_assert_int_eq(cm_metrics_gauge_fn(m, "cairn_fn", NULL, "Computed.", seven, NULL), 0);
	cm_counter_add(c, 3);
	cm_gauge_set(g, -4);
	cm_histogram_observe_ns(h, 7000);           /* <= 10us */
	cm_histogram_observe_ns(h, 300000);         /* <= 500us */
	cm_histogram_observe_ns(h, 20000000000ull); /* +Inf */
	ck_assert_int_eq(cm_metrics_render(m, &out, &len), 0);
	ck_assert_uint_eq(strlen(out), len);
	ck_assert_ptr_nonnull(strstr(out, "# TYPE cairn_msgs_total counter\n"
					  "cairn_msgs_total{dir=\"in\"} 3\n"
					  "cairn_msgs_total{dir=\"out\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(out, "cairn_queue_bytes -4\n"));
	ck_assert_ptr_nonnull(strstr(out, "cairn_fn 7.5\n"));
	ck_assert_ptr_nonnull(strstr(out, "cairn_op_seconds_bucket{op=\"read\",le=\"1e-05\"} 1\n"));
	ck_assert_ptr_nonnull(
		strstr(out, "cairn_op_seconds_bucket{op=\"read\",le=\"0.0005\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(out, "cairn_op_seconds_bucket{op=\"read\",le=\"10\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(out, "cairn_op_seconds_bucket{op=\"read\",le=\"+Inf\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(out, "cairn_op_seconds_count{op=\"read\"} 3\n"));
	/* one HELP per name */
	ck_assert_ptr_null(
		strstr(strstr(out, "# HELP cairn_msgs_total") + 1, "# HELP cairn_msgs_total"));
	free(out);
	cm_metrics_destroy(m);
}

END_TEST

START_TEST(test_histogram_quantile)
{
	struct cm_histogram h;

	memset(&h, 0, sizeof(h));
	ck_assert_uint_eq(cm_histogram_quantile_ns(&h, 0.5), 0);
	for (int i = 0; i < 99; i++)
		cm_histogram_observe_ns(&h, 80000); /* 50..100us bucket */
	cm_histogram_observe_ns(&h, 40000000);      /* 25..50ms bucket */
	ck_assert_uint_ge(cm_histogram_quantile_ns(&h, 0.5), 50000);
	ck_assert_uint_le(cm_histogram_quantile_ns(&h, 0.5), 100000);
	ck_assert_uint_ge(cm_histogram_quantile_ns(&h, 0.999), 25000000);
}

END_TEST

START_TEST(test_http_req_parse)
{
	struct cm_http_req r;
	const char *full = "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n";
	char big[CM_HTTP_MAX_REQUEST + 100];

	ck_assert_int_eq(cm_http_req_parse(full, strlen(full), &r), 0);
	ck_assert_str_eq(r.method, "GET");
	ck_assert_str_eq(r.path, "/metrics");
	ck_assert(r.keep_alive);
	ck_assert_uint_eq(r.consumed, strlen(full));
	ck_assert_int_eq(cm_http_req_parse(full, 20, &r), -EAGAIN);
	ck_assert_int_eq(cm_http_req_parse("BLAH\x01 / HTTP/1.1\r\n\r\n", 20, &r), -EBADMSG);
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /", 5);
	ck_assert_int_eq(cm_http_req_parse(big, sizeof(big), &r), -E2BIG);
}

END_TEST

struct http_client {
	uint16_t port;
	const char *req;
	char resp[65536];
	bool done;
};

static void *
client_main(void *arg)
{
	struct http_client *c = arg;
	struct sockaddr_storage ss;
	socklen_t sl;
	char addr[32];
	size_t fill = 0;
	ssize_t n;
	int fd;

	snprintf(addr, sizeof(addr), "127.0.0.1:%u", c->port);
	cm_sock_parse_addr(addr, &ss, &sl);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&ss, sl) == 0) {
		if (write(fd, c->req, strlen(c->req)) < 0)
			c->resp[0] = '\0';
		while ((n = read(fd, c->resp + fill, sizeof(c->resp) - 1 - fill)) > 0)
			fill += (size_t)n;
	}
	c->resp[fill] = '\0';
	close(fd);
	c->done = true;
	return NULL;
}

static const char *
fetch(struct cm_reactor *r, uint16_t port, const char *req)
{
	static struct http_client c;
	pthread_t th;

	memset(&c, 0, sizeof(c));
	c.port = port;
	c.req = req;
	pthread_create(&th, NULL, client_main, &c);
	ck_assert(cm_test_run_until(r, &c.done, 10000));
	pthread_join(th, NULL);
	return c.resp;
}

START_TEST(test_http_metrics_endpoint)
{
	struct cm_reactor *r = cm_test_reactor();
	struct cm_metrics *m;
	struct cm_http_metrics *h;
	uint16_t port;
	const char *resp;
	char big[CM_HTTP_MAX_REQUEST + 16];

	ck_assert_int_eq(cm_metrics_create(&m), 0);
	cm_counter_add(cm_metrics_counter(m, "cairn_test_total", NULL, "A test."), 42);
	ck_assert_int_eq(cm_http_metrics_start(r, m, "127.0.0.1:0", &port, &h), 0);
	resp = fetch(r, port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert_ptr_nonnull(strstr(resp, "HTTP/1.1 200 OK\r\n"));
	ck_assert_ptr_nonnull(strstr(resp, "Content-Type: text/plain; version=0.0.4"));
	ck_assert_ptr_nonnull(strstr(resp, "\r\n\r\n# HELP cairn_test_total A test.\n"));
	ck_assert_ptr_nonnull(strstr(resp, "cairn_test_total 42\n"));
	resp = fetch(r, port, "GET /other HTTP/1.1\r\n\r\n");
	ck_assert_ptr_nonnull(strstr(resp, "HTTP/1.1 404 Not Found"));
	resp = fetch(r, port, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
	ck_assert_ptr_nonnull(strstr(resp, "HTTP/1.1 405"));
	resp = fetch(r, port, "\x01\x02garbage\r\n\r\n");
	ck_assert_ptr_nonnull(strstr(resp, "HTTP/1.1 400 Bad Request"));
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "GET /", 5);
	resp = fetch(r, port, big);
	ck_assert_ptr_nonnull(strstr(resp, "HTTP/1.1 431"));
	cm_http_metrics_stop(h);
	cm_metrics_destroy(m);
	cm_reactor_destroy(r);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("metrics");

	tcase_add_test(tc, test_metrics_render);
	tcase_add_test(tc, test_histogram_quantile);
	tcase_add_test(tc, test_http_req_parse);
	tcase_add_test(tc, test_http_metrics_endpoint);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
