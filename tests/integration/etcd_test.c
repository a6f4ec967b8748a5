/* SPDX-License-Identifier: Apache-2.0 */
/* The etcd client against a real etcd (Debian's etcd-server 3.4) on loopback. */
#include "cm/err.h"
#include "cm/etcd.h"
#include "etcd_helper.h"
#include "testlib.h"

#include <pthread.h>

static struct cm_test_etcd g_etcd;

static void
setup(void)
{
	cm_test_etcd_start(&g_etcd);
}

static void
teardown(void)
{
	cm_test_etcd_stop(&g_etcd);
}

START_TEST(test_kv_put_get_range_delete)
{
	struct cm_etcd *e = cm_test_etcd_client(g_etcd.endpoint, 3000);
	struct cm_etcd_range r;
	int64_t rev1, rev2, deleted;
	char *end;
	size_t end_len;
	const uint8_t bin[4] = { 0, 0xff, '\n', 7 };

	ck_assert_int_eq(cm_etcd_put(e, "/cairn/a", 8, "one", 3, 0, &rev1), 0);
	ck_assert_int_eq(cm_etcd_put(e, "/cairn/b", 8, bin, sizeof(bin), 0, &rev2), 0);
	ck_assert_int_gt(rev2, rev1);
	ck_assert_int_eq(cm_etcd_put(e, "/cairn/c", 8, "", 0, 0, NULL), 0);
	ck_assert_int_eq(cm_etcd_put(e, "/cairo", 6, "x", 1, 0, NULL), 0);
	ck_assert_int_eq(cm_etcd_get(e, "/cairn/a", 8, NULL, 0, 0, &r), 0);
	ck_assert_uint_eq(r.count, 1);
	ck_assert_int_eq(memcmp(r.kvs[0].value, "one", 3), 0);
	ck_assert_int_eq(r.kvs[0].mod_revision, rev1);
	ck_assert_int_eq(r.kvs[0].version, 1);
	cm_etcd_range_free(&r);
	/* Binary values survive. */
	ck_assert_int_eq(cm_etcd_get(e, "/cairn/b", 8, NULL, 0, 0, &r), 0);
	ck_assert_uint_eq(r.kvs[0].value_len, sizeof(bin));
	ck_assert_int_eq(memcmp(r.kvs[0].value, bin, sizeof(bin)), 0);
	cm_etcd_range_free(&r);
	/* Prefix, in key order, paged. */
	end = cm_etcd_prefix_end("/cairn/", 7, &end_len);
	ck_assert_int_eq(cm_etcd_get(e, "/cairn/", 7, end, end_len, 2, &r), 0);
	ck_assert_uint_eq(r.count, 2);
	ck_assert(r.more);
	ck_assert_int_eq(memcmp(r.kvs[0].key, "/cairn/a", 8), 0);
	ck_assert_int_eq(memcmp(r.kvs[1].key, "/cairn/b", 8), 0);
	cm_etcd_range_free(&r);
	ck_assert_int_eq(cm_etcd_get(e, "/cairn/", 7, end, end_len, 0, &r), 0);
	ck_assert_uint_eq(r.count, 3); /* /cairo is outside the prefix */
	ck_assert(!r.more);
	ck_assert_uint_eq(r.kvs[2].value_len, 0);
	cm_etcd_range_free(&r);
	ck_assert_int_eq(cm_etcd_delete(e, "/cairn/", 7, end, end_len, &deleted), 0);
	ck_assert_int_eq(deleted, 3);
	ck_assert_int_eq(cm_etcd_get(e, "/cairn/a", 8, NULL, 0, 0, &r), 0);
	ck_assert_uint_eq(r.count, 0);
	cm_etcd_range_free(&r);
	free(end);
	cm_etcd_destroy(e);
}

END_TEST

struct cas_arg {
	const char *endpoint;
	int increments;
	int conflicts;
};

/* Read, add one, write only if nobody wrote since (compare mod_revision). */
static void *
cas_main(void *p)
{
	struct cas_arg *a = p;
	struct cm_etcd *e = cm_test_etcd_client(a->endpoint, 5000);

	for (int done = 0; done < a->increments;) {
		struct cm_etcd_range r;
		char buf[32];
		long v = 0;
		int64_t mod = 0;
		bool ok;

		ck_assert_int_eq(cm_etcd_get(e, "counter", 7, NULL, 0, 0, &r), 0);
		if (r.count) {
			v = strtol((char *)r.kvs[0].value, NULL, 10);
			mod = r.kvs[0].mod_revision;
		}
		cm_etcd_range_free(&r);
		snprintf(buf, sizeof(buf), "%ld", v + 1);
		struct cm_etcd_cmp c = { .key = "counter",
					 .key_len = 7,
					 .target = CM_ETCD_MOD,
					 .result = CM_ETCD_EQUAL,
					 .number = mod };
		struct cm_etcd_op op = { .type = CM_ETCD_OP_PUT,
					 .key = "counter",
					 .key_len = 7,
					 .value = buf,
					 .value_len = strlen(buf) };

		ck_assert_int_eq(cm_etcd_txn(e, &c, 1, &op, 1, NULL, 0, &ok, NULL), 0);
		if (ok)
			done++;
		else
			a->conflicts++;
	}
	cm_etcd_destroy(e);
	return NULL;
}

START_TEST(test_txn_no_lost_update)
{
	struct cas_arg a[3];
	pthread_t th[3];
	struct cm_etcd *e = cm_test_etcd_client(g_etcd.endpoint, 3000);
	struct cm_etcd_range r;

	for (int i = 0; i < 3; i++) {
		a[i] = (struct cas_arg){ .endpoint = g_etcd.endpoint, .increments = 60 };
		pthread_create(&th[i], NULL, cas_main, &a[i]);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(cm_etcd_get(e, "counter", 7, NULL, 0, 0, &r), 0);
	ck_assert_int_eq(strtol((char *)r.kvs[0].value, NULL, 10), 180);
	cm_etcd_range_free(&r);
	cm_etcd_destroy(e);
}

END_TEST

START_TEST(test_lease_keepalive_revoke_expire)
{
	struct cm_etcd *e = cm_test_etcd_client(g_etcd.endpoint, 3000);
	struct cm_etcd_range r;
	int64_t id, ttl;

	ck_assert_int_eq(cm_etcd_lease_grant(e, 5, &id, &ttl), 0);
	ck_assert_int_eq(ttl, 5);
	ck_assert_int_eq(cm_etcd_put(e, "leader", 6, "mon.a", 5, id, NULL), 0);
	ck_assert_int_eq(cm_etcd_lease_keepalive(e, id, &ttl), 0);
	ck_assert_int_gt(ttl, 0);
	ck_assert_int_eq(cm_etcd_get(e, "leader", 6, NULL, 0, 0, &r), 0);
	ck_assert_int_eq(r.kvs[0].lease, id);
	cm_etcd_range_free(&r);
	ck_assert_int_eq(cm_etcd_lease_revoke(e, id), 0);
	ck_assert_int_eq(cm_etcd_get(e, "leader", 6, NULL, 0, 0, &r), 0);
	ck_assert_uint_eq(r.count, 0); /* revoking the lease removed the key */
	cm_etcd_range_free(&r);
	ck_assert_int_eq(cm_etcd_lease_keepalive(e, id, &ttl), -ENOENT);
	/* Expiry without keepalives. */
	ck_assert_int_eq(cm_etcd_lease_grant(e, 1, &id, NULL), 0);
	ck_assert_int_eq(cm_etcd_put(e, "leader", 6, "mon.b", 5, id, NULL), 0);
	sleep(3);
	ck_assert_int_eq(cm_etcd_get(e, "leader", 6, NULL, 0, 0, &r), 0);
	ck_assert_uint_eq(r.count, 0);
	cm_etcd_range_free(&r);
	/* A put on a dead lease is refused by etcd. */
	ck_assert_int_eq(cm_etcd_put(e, "leader", 6, "x", 1, id, NULL), -ENOENT);
	cm_etcd_destroy(e);
}

END_TEST

struct seen {
	pthread_mutex_t lock;
	int n;
	char keys[16][16];
	int types[16];
	int64_t revs[16];
	int err;
};

static void
on_event(void *arg, const struct cm_etcd_event *ev, int rc)
{
	struct seen *s = arg;

	pthread_mutex_lock(&s->lock);
	if (!ev) {
		s->err = rc;
	} else if (s->n < 16) {
		snprintf(s->keys[s->n], sizeof(s->keys[0]), "%.*s", (int)ev->kv.key_len,
			 ev->kv.key);
		s->types[s->n] = ev->type;
		s->revs[s->n] = ev->kv.mod_revision;
		s->n++;
	}
	pthread_mutex_unlock(&s->lock);
}

static int
seen_n(struct seen *s)
{
	int n;

	pthread_mutex_lock(&s->lock);
	n = s->n;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static bool
wait_seen(struct seen *s, int n)
{
	for (int i = 0; i < 200 && seen_n(s) < n; i++)
		usleep(25000);
	return seen_n(s) >= n;
}

START_TEST(test_watch_order_and_restart)
{
	struct cm_etcd *e = cm_test_etcd_client(g_etcd.endpoint, 8000);
	struct seen s = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct cm_etcd_watch *w;
	struct cm_etcd_range r;
	size_t end_len;
	char *end = cm_etcd_prefix_end("/map/", 5, &end_len);

	ck_assert_int_eq(cm_etcd_watch_start(e, "/map/", 5, end, end_len, 0, on_event, &s, &w), 0);
	usleep(300000);
	ck_assert_int_eq(cm_etcd_put(e, "/map/1", 6, "a", 1, 0, NULL), 0);
	ck_assert_int_eq(cm_etcd_put(e, "/other", 6, "z", 1, 0, NULL), 0);
	ck_assert_int_eq(cm_etcd_put(e, "/map/2", 6, "b", 1, 0, NULL), 0);
	ck_assert_int_eq(cm_etcd_delete(e, "/map/1", 6, NULL, 0, NULL), 0);
	ck_assert(wait_seen(&s, 3));
	ck_assert_str_eq(s.keys[0], "/map/1");
	ck_assert_int_eq(s.types[0], CM_ETCD_EV_PUT);
	ck_assert_str_eq(s.keys[1], "/map/2");
	ck_assert_str_eq(s.keys[2], "/map/1");
	ck_assert_int_eq(s.types[2], CM_ETCD_EV_DELETE);
	ck_assert_int_lt(s.revs[0], s.revs[1]);
	ck_assert_int_lt(s.revs[1], s.revs[2]);
	/* etcd dies and comes back: calls fail meanwhile, then work; the watch resumes. */
	cm_test_etcd_kill(&g_etcd);
	struct cm_etcd *quick = cm_test_etcd_client(g_etcd.endpoint, 400);

	ck_assert_int_eq(cm_etcd_get(quick, "/map/2", 6, NULL, 0, 0, &r), -CM_EETCD);
	cm_etcd_destroy(quick);
	cm_test_etcd_restart(&g_etcd);
	ck_assert_int_eq(cm_etcd_put(e, "/map/3", 6, "c", 1, 0, NULL), 0);
	ck_assert(wait_seen(&s, 4));
	ck_assert_str_eq(s.keys[3], "/map/3");
	ck_assert_int_gt(s.revs[3], s.revs[2]);
	ck_assert_int_eq(s.err, 0);
	cm_etcd_watch_stop(w);
	free(end);
	cm_etcd_destroy(e);
}

END_TEST

START_TEST(test_endpoint_failover_and_none)
{
	char eps[160];
	struct cm_etcd *e;
	struct cm_etcd_range r;
	uint64_t t0;

	/* A dead endpoint first: the call still succeeds on the live one. */
	snprintf(eps, sizeof(eps), "http://127.0.0.1:1,%s", g_etcd.endpoint);
	e = cm_test_etcd_client(eps, 3000);
	ck_assert_int_eq(cm_etcd_put(e, "k", 1, "v", 1, 0, NULL), 0);
	ck_assert_int_eq(cm_etcd_get(e, "k", 1, NULL, 0, 0, &r), 0);
	ck_assert_uint_eq(r.count, 1);
	cm_etcd_range_free(&r);
	cm_etcd_destroy(e);
	/* None answers: a clear error, within the call's deadline. */
	e = cm_test_etcd_client("http://127.0.0.1:1,http://127.0.0.1:2", 700);
	t0 = cm_now_ms();
	ck_assert_int_eq(cm_etcd_get(e, "k", 1, NULL, 0, 0, &r), -CM_EETCD);
	ck_assert_uint_lt(cm_now_ms() - t0, 3000);
	ck_assert_str_eq(cm_strerror(-CM_EETCD), "no etcd endpoint answered");
	cm_etcd_destroy(e);
	ck_assert_int_eq(cm_etcd_create(&(struct cm_etcd_opts){ .endpoints = "" }, &e), -EINVAL);
	{
		struct cm_etcd_opts o;

		/* https options: a certificate needs its key; a CA file that cannot be
		 * read is a TLS error at once, not a retry until the deadline. */
		cm_etcd_opts_init(&o, sizeof(o));
		o.endpoints = "https://127.0.0.1:1";
		o.cert_file = "/nonexistent/client.pem";
		ck_assert_int_eq(cm_etcd_create(&o, &e), -EINVAL);
		o.cert_file = NULL;
		o.ca_file = "/nonexistent/ca.pem";
		o.timeout_ms = 20000;
		snprintf(eps, sizeof(eps), "https://%s", strstr(g_etcd.endpoint, "127.0.0.1"));
		o.endpoints = eps;
		ck_assert_int_eq(cm_etcd_create(&o, &e), 0);
		t0 = cm_now_ms();
		ck_assert_int_eq(cm_etcd_get(e, "k", 1, NULL, 0, 0, &r), -CM_ETLS);
		ck_assert_uint_lt(cm_now_ms() - t0, 5000);
		cm_etcd_destroy(e);
	}
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("etcd");
	TCase *tc = tcase_create("etcd");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_kv_put_get_range_delete);
	tcase_add_test(tc, test_txn_no_lost_update);
	tcase_add_test(tc, test_lease_keepalive_revoke_expire);
	tcase_add_test(tc, test_watch_order_and_restart);
	tcase_add_test(tc, test_endpoint_failover_and_none);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
