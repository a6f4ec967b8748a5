/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcairn's striper against a running cluster (cluster_test.sh sets
 * CAIRN_CONF and makes the pools "default" and "ec21"): random writes,
 * appends, truncates and reads of a striped stream checked against a copy
 * in memory, calls of 16 MiB over 4 MiB objects, appends racing each
 * other, the open rules, and removal -- on a replicated and an
 * erasure-coded pool.
 */
#include "cairn/cairn.h"
#include "testlib.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static cairn_cluster_t *g_cl;
static cairn_ioctx_t *g_io;
static const char *g_pools[] = { "default", "ec21" };

static void
setup(void)
{
	struct cairn_opts o;
	char err[256];
	int rc;

	cairn_opts_init(&o, sizeof(o));
	o.conf_file = getenv("CAIRN_CONF");
	o.op_timeout_ms = 60000;
	if (getenv("CAIRN_TEST_IO_THREADS")) /* (the stream's objects on several io threads) */
		o.io_threads = strtoul(getenv("CAIRN_TEST_IO_THREADS"), NULL, 10);
	ck_assert_ptr_nonnull(o.conf_file);
	rc = cairn_connect(&o, &g_cl, err, sizeof(err));
	ck_assert_msg(rc == 0, "connect: %s", err);
}

static void
teardown(void)
{
	cairn_shutdown(g_cl);
}

#define MODEL_MAX (3u << 20)

/* Random calls on a small striped layout, each checked against the model. */
START_TEST(test_random_against_model)
{
	struct cairn_layout l = { 65536, 3, 262144 }, got_l;
	static uint8_t model[MODEL_MAX + (1u << 20)], buf[MODEL_MAX + (1u << 20)], data[MODEL_MAX];
	uint64_t size = 0, st = 0, at;
	cairn_stream_t *s;
	int64_t n;

	ck_assert_int_eq(cairn_ioctx_create(g_cl, g_pools[_i], &g_io), 0);
	cairn_stream_remove(g_io, "model"); /* (a rerun) */
	ck_assert_int_eq(
		cairn_stream_open(g_io, "model", CAIRN_STREAM_CREATE | CAIRN_STREAM_EXCL, &l, &s),
		0);
	cairn_stream_layout(s, &got_l);
	ck_assert_uint_eq(got_l.stripe_count, 3);
	memset(model, 0, sizeof(model));
	srand(11 + (unsigned)_i);
	for (int t = 0; t < 160; t++) {
		int what = rand() % 10;
		uint64_t off = (uint64_t)rand() % MODEL_MAX, len = (uint64_t)rand() % 300000 + 1;

		if (what < 4) { /* write */
			if (off + len > MODEL_MAX)
				len = MODEL_MAX - off;
			cm_test_fill(data, (size_t)len, (uint64_t)t);
			ck_assert_int_eq(cairn_stream_write(s, off, data, (size_t)len), 0);
			memcpy(model + off, data, (size_t)len);
			if (off + len > size)
				size = off + len;
		} else if (what < 5 && size + len <= MODEL_MAX) { /* append */
			cm_test_fill(data, (size_t)len, (uint64_t)t);
			ck_assert_int_eq(cairn_stream_append(s, data, (size_t)len, &at), 0);
			ck_assert_uint_eq(at, size);
			memcpy(model + size, data, (size_t)len);
			size += len;
		} else if (what < 6) { /* truncate, down or up */
			uint64_t to = (uint64_t)rand() % MODEL_MAX;

			ck_assert_int_eq(cairn_stream_truncate(s, to), 0);
			if (to < size)
				memset(model + to, 0, (size_t)(size - to));
			size = to;
		} else { /* read, also across the end */
			n = cairn_stream_read(s, off, buf, (size_t)len + 1000);
			ck_assert_int_eq(n,
					 off >= size ? 0 : (int64_t)CM_MIN(len + 1000, size - off));
			ck_assert_msg(n <= 0 || memcmp(buf, model + off, (size_t)n) == 0,
				      "op %d: read %" PRIu64 "+%" PRId64 " differs", t, off, n);
		}
		ck_assert_int_eq(cairn_stream_stat(s, &st), 0);
		ck_assert_uint_eq(st, size);
	}
	n = cairn_stream_read(s, 0, buf, MODEL_MAX + 100);
	ck_assert_int_eq(n, (int64_t)size);
	at = (uint64_t)cm_test_first_diff(buf, model, size);
	ck_assert_msg(at == UINT64_MAX, "whole read: byte %" PRIu64 " of %" PRIu64 " differs", at,
		      size);
	cairn_stream_close(s);
	/* Removed: every object of it. */
	ck_assert_int_eq(cairn_stream_remove(g_io, "model"), 0);
	for (uint64_t o = 0; o < 48; o++) {
		char name[64];
		uint64_t osz;

		snprintf(name, sizeof(name), "model.%016" PRIx64, o);
		ck_assert_int_eq(cairn_stat(g_io, name, &osz, NULL), -ENOENT);
	}
	ck_assert_int_eq(cairn_stream_open(g_io, "model", 0, NULL, &s), -ENOENT);
	cairn_ioctx_destroy(g_io);
}

END_TEST

#define BIG (16u << 20)

/* Calls of 16 MiB over 4 MiB objects (four objects at once), and racing appends. */
START_TEST(test_big_calls_and_appends)
{
	static uint8_t a[BIG], b[BIG];
	cairn_completion_t *c[8];
	uint64_t at[8], size;
	cairn_stream_t *s;

	ck_assert_int_eq(cairn_ioctx_create(g_cl, g_pools[_i], &g_io), 0);
	cairn_stream_remove(g_io, "big");
	ck_assert_int_eq(cairn_stream_open(g_io, "big", CAIRN_STREAM_CREATE, NULL, &s), 0);
	cm_test_fill(a, BIG, 99);
	ck_assert_int_eq(cairn_stream_write(s, 0, a, BIG), 0);
	ck_assert_int_eq(cairn_stream_write(s, 3 * BIG + 12345, a, BIG), 0); /* a hole before */
	ck_assert_int_eq(cairn_stream_read(s, 0, b, BIG), BIG);
	ck_assert(memcmp(a, b, BIG) == 0);
	ck_assert_int_eq(cairn_stream_read(s, 2 * BIG, b, BIG), BIG);
	ck_assert_msg(cm_test_first_diff(b, NULL, BIG) == -1, "hole byte %ld is not 0",
		      cm_test_first_diff(b, NULL, BIG));
	ck_assert_int_eq(cairn_stream_read(s, 3 * BIG + 12345, b, BIG), BIG);
	ck_assert(memcmp(a, b, BIG) == 0);
	ck_assert_int_eq(cairn_stream_stat(s, &size), 0);
	ck_assert_uint_eq(size, 4ull * BIG + 12345);

	/* Eight appends at once: each gets its own place. */
	ck_assert_int_eq(cairn_stream_truncate(s, 1000), 0);
	for (int i = 0; i < 8; i++) {
		c[i] = cairn_completion_create(NULL, NULL);
		ck_assert_int_eq(
			cairn_stream_aio_append(s, a + (size_t)i * 100000, 100000, &at[i], c[i]),
			0);
	}
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(cairn_completion_wait(c[i]), 0);
		cairn_completion_release(c[i]);
		ck_assert_uint_ge(at[i], 1000);
		ck_assert_uint_eq((at[i] - 1000) % 100000, 0);
		for (int k = 0; k < i; k++)
			ck_assert_uint_ne(at[i], at[k]);
	}
	ck_assert_int_eq(cairn_stream_stat(s, &size), 0);
	ck_assert_uint_eq(size, 1000 + 8 * 100000);
	for (int i = 0; i < 8; i++) {
		ck_assert_int_eq(cairn_stream_read(s, at[i], b, 100000), 100000);
		ck_assert(memcmp(b, a + (size_t)i * 100000, 100000) == 0);
	}
	cairn_stream_close(s);
	ck_assert_int_eq(cairn_stream_remove(g_io, "big"), 0);
	cairn_ioctx_destroy(g_io);
}

END_TEST

START_TEST(test_open_rules)
{
	struct cairn_layout l = { 65536, 2, 131072 }, other = { 4096, 1, 4096 }, got;
	struct cairn_layout bad = { 4096, 1, 6000 };
	char longname[CAIRN_NAME_MAX];
	cairn_stream_t *s, *t;

	ck_assert_int_eq(cairn_ioctx_create(g_cl, "default", &g_io), 0);
	cairn_stream_remove(g_io, "rules");
	ck_assert_int_eq(cairn_stream_open(g_io, "rules", 0, NULL, &s), -ENOENT);
	ck_assert_int_eq(cairn_stream_open(g_io, "rules", CAIRN_STREAM_CREATE, &bad, &s), -EINVAL);
	ck_assert_int_eq(cairn_stream_open(g_io, "rules", CAIRN_STREAM_CREATE, &l, &s), 0);
	ck_assert_int_eq(
		cairn_stream_open(g_io, "rules", CAIRN_STREAM_CREATE | CAIRN_STREAM_EXCL, &l, &t),
		-EEXIST);
	/* An existing stream keeps its own layout. */
	ck_assert_int_eq(cairn_stream_open(g_io, "rules", CAIRN_STREAM_CREATE, &other, &t), 0);
	cairn_stream_layout(t, &got);
	ck_assert_uint_eq(got.stripe_unit, 65536);
	ck_assert_uint_eq(got.stripe_count, 2);
	cairn_stream_close(t);
	cairn_stream_close(s);
	/* An object that is no stream's object 0. */
	ck_assert_int_eq(cairn_write_full(g_io, "plain.0000000000000000", "x", 1), 0);
	ck_assert_int_eq(cairn_stream_open(g_io, "plain", 0, NULL, &s), -EINVAL);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	ck_assert_int_eq(cairn_stream_open(g_io, longname, CAIRN_STREAM_CREATE, NULL, &s),
			 -ENAMETOOLONG);
	ck_assert_int_eq(cairn_stream_remove(g_io, "rules"), 0);
	cairn_ioctx_destroy(g_io);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("striper");
	TCase *tc = tcase_create("cluster");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, test_random_against_model, 0, 2);
	tcase_add_loop_test(tc, test_big_calls_and_appends, 0, 2);
	tcase_add_test(tc, test_open_rules);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
