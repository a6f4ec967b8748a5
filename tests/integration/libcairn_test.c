/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcairn against a running cluster (cluster_test.sh starts it and sets
 * CAIRN_CONF): compound ops are atomic (a guard failure changes nothing),
 * every sub-op kind, async ops, listing, and clear errors for bad input.
 */
#include "cairn/cairn.h"
#include "testlib.h"

#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static cairn_cluster_t *g_cl;
static cairn_ioctx_t *g_io;

static cairn_cluster_t *connect_other(void);

/* The suite's client options: CAIRN_CONF, a 20 s op limit, CAIRN_TEST_IO_THREADS io threads. */
static void
test_opts(struct cairn_opts *o)
{
	const char *t = getenv("CAIRN_TEST_IO_THREADS");

	cairn_opts_init(o, sizeof(*o));
	o->conf_file = getenv("CAIRN_CONF");
	o->op_timeout_ms = 20000;
	o->io_threads = t ? strtoul(t, NULL, 10) : 0;
}

static bool blocklist_lists(const char *entity);

static void
setup(void)
{
	struct cairn_opts o;
	char err[256];
	int rc;

	test_opts(&o);
	ck_assert_ptr_nonnull(o.conf_file);
	rc = cairn_connect(&o, &g_cl, err, sizeof(err));
	ck_assert_msg(rc == 0, "connect: %s", err);
	ck_assert_int_eq(cairn_ioctx_create(g_cl, "default", &g_io), 0);
}

static void
teardown(void)
{
	cairn_ioctx_destroy(g_io);
	cairn_shutdown(g_cl);
}

START_TEST(test_guards_are_atomic)
{
	cairn_op_t *op = cairn_op_create();
	struct cairn_version v1, v2;
	char buf[64];
	size_t got = 0;
	struct cairn_kv *kvs = NULL;
	size_t n = 0;
	int rval = 0, rc;

	cairn_op_write_full(op, "hello", 5);
	cairn_op_setxattr(op, "a", "1", 1);
	cairn_op_omap_set(op, "k1", 2, "v1", 2);
	cairn_op_omap_set(op, "k2", 2, "v2", 2);
	ck_assert_int_eq(cairn_operate(g_io, "guarded", op, &v1), 0);
	cairn_op_release(op);

	/* A lone read (the OSD's fast read path) reports the object's version. */
	op = cairn_op_create();
	cairn_op_read(op, 0, sizeof(buf), buf, &got, &rval);
	ck_assert_int_eq(cairn_operate(g_io, "guarded", op, &v2), 0);
	cairn_op_release(op);
	ck_assert_int_eq(rval, 0);
	ck_assert_uint_eq(got, 5);
	ck_assert(memcmp(buf, "hello", 5) == 0);
	ck_assert(v2.epoch == v1.epoch && v2.seq == v1.seq);
	op = cairn_op_create();
	cairn_op_read(op, 100, 10, buf, &got, &rval); /* past the end: nothing */
	ck_assert_int_eq(cairn_operate(g_io, "guarded", op, NULL), 0);
	cairn_op_release(op);
	ck_assert_int_eq(rval, 0);
	ck_assert_uint_eq(got, 0);

	/* cmpxattr fails: the write, the xattr and the omap change must not happen. */
	op = cairn_op_create();
	cairn_op_cmpxattr(op, "a", CAIRN_CMP_EQ, "2", 1);
	cairn_op_write(op, 0, "XXXXX", 5);
	cairn_op_setxattr(op, "b", "new", 3);
	cairn_op_omap_rm(op, "k1", 2);
	rc = cairn_operate(g_io, "guarded", op, NULL);
	ck_assert_int_eq(rc, -ECANCELED);
	cairn_op_release(op);

	/* assert-version with a stale version fails too. */
	op = cairn_op_create();
	v2 = v1;
	v2.seq += 1000;
	cairn_op_assert_version(op, &v2);
	cairn_op_truncate(op, 0);
	ck_assert_int_eq(cairn_operate(g_io, "guarded", op, NULL), -ERANGE);
	cairn_op_release(op);

	/* Exclusive create of an existing object. */
	op = cairn_op_create();
	cairn_op_create_object(op, true);
	ck_assert_int_eq(cairn_operate(g_io, "guarded", op, NULL), -EEXIST);
	cairn_op_release(op);

	/* Nothing changed. */
	op = cairn_op_create();
	cairn_op_read(op, 0, sizeof(buf), buf, &got, &rval);
	cairn_op_getxattrs(op, &kvs, &n, NULL);
	ck_assert_int_eq(cairn_operate(g_io, "guarded", op, &v2), 0);
	cairn_op_release(op);
	ck_assert_int_eq(rval, 0);
	ck_assert_uint_eq(got, 5);
	ck_assert_mem_eq(buf, "hello", 5);
	ck_assert_uint_eq(n, 1);
	ck_assert_mem_eq(kvs[0].key, "a", 1);
	cairn_kvs_free(kvs, n);
	ck_assert_uint_eq(v2.epoch, v1.epoch);
	ck_assert_uint_eq(v2.seq, v1.seq);

	/* With the right version and value the same op applies. */
	op = cairn_op_create();
	cairn_op_assert_version(op, &v1);
	cairn_op_cmpxattr(op, "a", CAIRN_CMP_EQ, "1", 1);
	cairn_op_append(op, " world", 6);
	cairn_op_omap_rm(op, "k1", 2);
	ck_assert_int_eq(cairn_operate(g_io, "guarded", op, &v2), 0);
	cairn_op_release(op);
	ck_assert(v2.seq > v1.seq || v2.epoch > v1.epoch);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(cairn_read(g_io, "guarded", buf, sizeof(buf), 0), 11);
	ck_assert_str_eq(buf, "hello world");
	op = cairn_op_create();
	cairn_op_omap_list(op, NULL, 0, NULL, 0, 10, &kvs, &n, NULL, NULL);
	ck_assert_int_eq(cairn_operate(g_io, "guarded", op, NULL), 0);
	cairn_op_release(op);
	ck_assert_uint_eq(n, 1);
	ck_assert_mem_eq(kvs[0].key, "k2", 2);
	cairn_kvs_free(kvs, n);
}

END_TEST

START_TEST(test_subops)
{
	cairn_op_t *op = cairn_op_create();
	struct cairn_kv keys[2] = { { .key = "b", .klen = 1 }, { .key = "zz", .klen = 2 } };
	struct cairn_kv *kvs = NULL, hdr = { 0 };
	char xv[8];
	size_t n = 0, xl = 0;
	uint64_t size = 0;
	bool more = true;
	int r1 = 1, r2 = 1;

	cairn_op_write(op, 8192, "tail", 4);
	cairn_op_zero(op, 0, 100);
	cairn_op_omap_set_header(op, "H", 1);
	for (char c = 'a'; c <= 'f'; c++)
		cairn_op_omap_set(op, &c, 1, &c, 1);
	ck_assert_int_eq(cairn_operate(g_io, "subops", op, NULL), 0);
	cairn_op_release(op);

	op = cairn_op_create();
	cairn_op_stat(op, &size, NULL, NULL);
	cairn_op_getxattr(op, "nope", xv, sizeof(xv), &xl, &r2);
	ck_assert_int_eq(cairn_operate(g_io, "subops", op, NULL), -ENODATA);
	cairn_op_release(op);
	ck_assert_int_eq(r2, -ENODATA);

	op = cairn_op_create();
	cairn_op_stat(op, &size, NULL, NULL);
	cairn_op_omap_get(op, keys, 2, &kvs, &n, &r1);
	cairn_op_omap_get_header(op, &hdr, NULL);
	ck_assert_int_eq(cairn_operate(g_io, "subops", op, NULL), 0);
	cairn_op_release(op);
	ck_assert_uint_eq(size, 8196);
	ck_assert_int_eq(r1, 0);
	ck_assert_uint_eq(n, 1); /* "zz" does not exist */
	ck_assert_mem_eq(kvs[0].val, "b", 1);
	cairn_kvs_free(kvs, n);
	ck_assert_uint_eq(hdr.vlen, 1);
	free(hdr.val);

	/* Paged omap listing with a prefix-free range removal. */
	op = cairn_op_create();
	cairn_op_omap_rm_range(op, "b", 1, "d", 1);
	cairn_op_truncate(op, 10);
	ck_assert_int_eq(cairn_operate(g_io, "subops", op, NULL), 0);
	cairn_op_release(op);
	op = cairn_op_create();
	cairn_op_omap_list(op, "a", 1, NULL, 0, 2, &kvs, &n, &more, NULL);
	ck_assert_int_eq(cairn_operate(g_io, "subops", op, NULL), 0);
	cairn_op_release(op);
	ck_assert_uint_eq(n, 2);
	ck_assert_mem_eq(kvs[0].key, "d", 1);
	ck_assert_mem_eq(kvs[1].key, "e", 1);
	ck_assert(more);
	cairn_kvs_free(kvs, n);
	ck_assert_int_eq(cairn_stat(g_io, "subops", &size, NULL), 0);
	ck_assert_uint_eq(size, 10);

	/* Remove, then everything about it is gone. */
	ck_assert_int_eq(cairn_remove(g_io, "subops"), 0);
	ck_assert_int_eq(cairn_stat(g_io, "subops", &size, NULL), -ENOENT);
	ck_assert_int_eq(cairn_remove(g_io, "subops"), -ENOENT);
}

END_TEST

#define NASYNC 64

START_TEST(test_async_and_list)
{
	static char bufs[NASYNC][5000];
	cairn_completion_t *c[NASYNC];
	cairn_op_t *op[NASYNC];
	char name[32];
	struct cairn_list_cursor cur;
	size_t seen = 0;

	for (int i = 0; i < NASYNC; i++) {
		cm_test_fill(bufs[i], sizeof(bufs[i]), (uint64_t)i + 1);
		snprintf(name, sizeof(name), "async.%03d", i);
		op[i] = cairn_op_create();
		cairn_op_write_full(op[i], bufs[i], sizeof(bufs[i]) - (size_t)i);
		c[i] = cairn_completion_create(NULL, NULL);
		ck_assert_int_eq(cairn_aio_operate(g_io, name, op[i], c[i]), 0);
	}
	for (int i = 0; i < NASYNC; i++) {
		ck_assert_int_eq(cairn_completion_wait(c[i]), 0);
		cairn_completion_release(c[i]);
		cairn_op_release(op[i]);
	}
	for (int i = 0; i < NASYNC; i++) {
		char back[5000];

		snprintf(name, sizeof(name), "async.%03d", i);
		ck_assert_int_eq(cairn_read(g_io, name, back, sizeof(back), 0),
				 (int64_t)(sizeof(back) - (size_t)i));
		ck_assert_int_eq(cm_test_check(back, sizeof(back) - (size_t)i, (uint64_t)i + 1),
				 -1);
	}
	memset(&cur, 0, sizeof(cur));
	while (!cur.done) {
		char **names;
		size_t n;

		ck_assert_int_eq(cairn_list(g_io, &cur, 7, &names, &n), 0);
		ck_assert_uint_le(n, 7);
		for (size_t i = 0; i < n; i++)
			seen += strncmp(names[i], "async.", 6) == 0;
		cairn_names_free(names, n);
	}
	ck_assert_uint_eq(seen, NASYNC);
}

END_TEST

static atomic_int g_released_done;

static void
released_cb(cairn_completion_t *c, void *arg)
{
	(void)c;
	cairn_op_release(arg);
	atomic_fetch_add(&g_released_done, 1);
}

/*
 * Completions released while their ops are in flight (allowed: the op runs
 * on, the callback runs, then the completion is freed): an op, a stream
 * write. Under ASan a completion freed too early is a use after free.
 */
START_TEST(test_release_in_flight)
{
	static char data[NASYNC][512];
	cairn_stream_t *s;
	cairn_completion_t *c;
	char name[32], back[512];

	atomic_store(&g_released_done, 0);
	for (int i = 0; i < NASYNC; i++) {
		cairn_op_t *op = cairn_op_create();

		memset(data[i], 'a' + i % 26, sizeof(data[i]));
		snprintf(name, sizeof(name), "rel.%03d", i);
		cairn_op_write_full(op, data[i], sizeof(data[i]));
		c = cairn_completion_create(released_cb, op);
		ck_assert_int_eq(cairn_aio_operate(g_io, name, op, c), 0);
		cairn_completion_release(c);
	}
	ck_assert_int_eq(cairn_stream_open(g_io, "rel-stream", CAIRN_STREAM_CREATE, NULL, &s), 0);
	c = cairn_completion_create(NULL, NULL);
	ck_assert_int_eq(cairn_stream_aio_write(s, 1u << 20, data[0], sizeof(data[0]), c), 0);
	cairn_completion_release(c);
	for (int t = 0; t < 3000 && atomic_load(&g_released_done) < NASYNC; t++)
		usleep(10000);
	ck_assert_int_eq(atomic_load(&g_released_done), NASYNC);
	for (int i = 0; i < NASYNC; i++) {
		snprintf(name, sizeof(name), "rel.%03d", i);
		ck_assert_int_eq(cairn_read(g_io, name, back, sizeof(back), 0),
				 (int64_t)sizeof(back));
		ck_assert_int_eq(memcmp(back, data[i], sizeof(back)), 0);
		ck_assert_int_eq(cairn_remove(g_io, name), 0);
	}
	/* the stream's write completes in its time: wait for its size */
	for (int t = 0; t < 3000; t++) {
		uint64_t size = 0;

		ck_assert_int_eq(cairn_stream_stat(s, &size), 0);
		if (size == (1u << 20) + sizeof(data[0]))
			break;
		usleep(10000);
	}
	ck_assert_int_eq(cairn_stream_read(s, 1u << 20, back, sizeof(back)), (int64_t)sizeof(back));
	ck_assert_int_eq(memcmp(back, data[0], sizeof(back)), 0);
	cairn_stream_close(s);
	ck_assert_int_eq(cairn_stream_remove(g_io, "rel-stream"), 0);
}

END_TEST

START_TEST(test_bad_input)
{
	char longname[CAIRN_NAME_MAX + 2];
	cairn_ioctx_t *io;
	cairn_op_t *op;

	ck_assert_int_eq(cairn_ioctx_create(g_cl, "no-such-pool", &io), -ENOENT);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	ck_assert_int_eq(cairn_write_full(g_io, longname, "x", 1), -ENAMETOOLONG);
	ck_assert_int_eq(cairn_write_full(g_io, "", "x", 1), -EINVAL);
	ck_assert_int_eq(cairn_write_full(g_io, "\x01internal", "x", 1), -EINVAL);
	op = cairn_op_create();
	ck_assert_int_eq(cairn_operate(g_io, "empty-op", op, NULL), -EINVAL);
	cairn_op_setxattr(op, "", "x", 1);
	ck_assert_int_eq(cairn_operate(g_io, "bad-xattr", op, NULL), -EINVAL);
	cairn_op_release(op);
	ck_assert_int_eq(cairn_read(g_io, "never-written", (char[4]){ 0 }, 4, 0), -ENOENT);
}

END_TEST

/* More data than one op carries (64 MiB, the message limit): -E2BIG at once, nothing done. */
START_TEST(test_too_large)
{
	size_t big = (64u << 20) + 1;
	char *buf = malloc(big);
	cairn_op_t *op;
	uint64_t size;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 'b', big);
	ck_assert_int_eq(cairn_write_full(g_io, "too-large", buf, big), -E2BIG);
	ck_assert_int_eq(cairn_stat(g_io, "too-large", &size, NULL), -ENOENT);
	/* Two writes of 40 MiB in one op: 80 MiB in all. */
	op = cairn_op_create();
	cairn_op_write(op, 0, buf, 40u << 20);
	cairn_op_write(op, 40u << 20, buf, 40u << 20);
	ck_assert_int_eq(cairn_operate(g_io, "too-large", op, NULL), -E2BIG);
	cairn_op_release(op);
	ck_assert_int_eq(cairn_stat(g_io, "too-large", &size, NULL), -ENOENT);
	/* A read of more than that. */
	ck_assert_int_eq(cairn_write_full(g_io, "too-large", "x", 1), 0);
	ck_assert_int_eq(cairn_read(g_io, "too-large", buf, big, 0), -E2BIG);
	ck_assert_int_eq(cairn_read(g_io, "too-large", buf, 64u << 20, 0), 1);
	ck_assert_int_eq(cairn_remove(g_io, "too-large"), 0);
	free(buf);
}

END_TEST

/* An xattr or omap counter's value (8 bytes LE), or -1 if it is not 8 bytes. */
static int64_t
le64_of(const void *p, size_t len)
{
	return len == 8 ? (int64_t)cm_get_le64(p) : -1;
}

static int64_t
xattr_counter(cairn_ioctx_t *io, const char *oid, const char *name)
{
	uint8_t b[16];
	size_t len = 0;
	int rval = 0;
	cairn_op_t *op = cairn_op_create();

	cairn_op_getxattr(op, name, b, sizeof(b), &len, &rval);
	ck_assert_int_eq(cairn_operate(io, oid, op, NULL), 0);
	cairn_op_release(op);
	return le64_of(b, len);
}

#define NNUM 500

/* Server-side methods: counters (NUM) on xattrs and omap keys, omap compare. */
START_TEST(test_methods)
{
	cairn_completion_t *c[NNUM];
	cairn_op_t *op, *ops[NNUM];
	int64_t r1 = 0, r2 = 0, r3 = 0, res[NNUM];
	static uint8_t seen[NNUM + 1];
	struct cairn_kv key = { .key = "c", .klen = 1 }, *kvs = NULL;
	size_t n = 0;
	int rv1 = 1, rv2 = 1, rc, ok = 0, cancelled = 0;

	/* An absent counter counts from 0 (the object is created); several on
	 * one counter in one op apply in order. (Removed first: the suite can
	 * run again on one cluster.) */
	cairn_remove(g_io, "methods");
	cairn_remove(g_io, "methods2");
	cairn_remove(g_io, "counter");
	cairn_remove(g_io, "cas");
	op = cairn_op_create();
	cairn_op_xattr_num(op, "n", CAIRN_NUM_ADD, 5, &r1, &rv1);
	cairn_op_xattr_num(op, "n", CAIRN_NUM_ADD, 3, &r2, &rv2);
	cairn_op_xattr_num(op, "m", CAIRN_NUM_MAX, 100, &r3, NULL);
	ck_assert_int_eq(cairn_operate(g_io, "methods", op, NULL), 0);
	cairn_op_release(op);
	ck_assert_int_eq(rv1, 0);
	ck_assert_int_eq(rv2, 0);
	ck_assert_int_eq(r1, 5);
	ck_assert_int_eq(r2, 8);
	ck_assert_int_eq(r3, 100);
	ck_assert_int_eq(xattr_counter(g_io, "methods", "n"), 8);
	op = cairn_op_create();
	cairn_op_xattr_num(op, "m", CAIRN_NUM_MAX, 7, &r1, NULL);
	cairn_op_xattr_num(op, "m", CAIRN_NUM_MIN, 50, &r2, NULL);
	cairn_op_xattr_num(op, "n", CAIRN_NUM_SET, -7, &r3, NULL);
	ck_assert_int_eq(cairn_operate(g_io, "methods", op, NULL), 0);
	cairn_op_release(op);
	ck_assert_int_eq(r1, 100);
	ck_assert_int_eq(r2, 50);
	ck_assert_int_eq(r3, -7);

	/* Out of bounds or past int64: -EOVERFLOW, and nothing of the op is written. */
	op = cairn_op_create();
	cairn_op_setxattr(op, "marker", "x", 1);
	cairn_op_xattr_num(op, "n", CAIRN_NUM_ADD, 10, NULL, &rv1);
	cairn_op_num_bounds(op, -10, 0);
	ck_assert_int_eq(cairn_operate(g_io, "methods", op, NULL), -EOVERFLOW);
	cairn_op_release(op);
	ck_assert_int_eq(rv1, -EOVERFLOW);
	ck_assert_int_eq(xattr_counter(g_io, "methods", "n"), -7);
	op = cairn_op_create();
	cairn_op_getxattr(op, "marker", NULL, 0, NULL, &rv1);
	ck_assert_int_eq(cairn_operate(g_io, "methods", op, NULL), -ENODATA);
	cairn_op_release(op);
	op = cairn_op_create();
	cairn_op_xattr_num(op, "big", CAIRN_NUM_SET, INT64_MAX, NULL, NULL);
	cairn_op_xattr_num(op, "big", CAIRN_NUM_ADD, 1, NULL, NULL);
	ck_assert_int_eq(cairn_operate(g_io, "methods", op, NULL), -EOVERFLOW);
	cairn_op_release(op);
	/* A value that is not a counter. */
	ck_assert_int_eq(cairn_write_full(g_io, "methods2", "x", 1), 0);
	op = cairn_op_create();
	cairn_op_setxattr(op, "s", "abc", 3);
	ck_assert_int_eq(cairn_operate(g_io, "methods2", op, NULL), 0);
	cairn_op_release(op);
	op = cairn_op_create();
	cairn_op_xattr_num(op, "s", CAIRN_NUM_ADD, 1, NULL, NULL);
	ck_assert_int_eq(cairn_operate(g_io, "methods2", op, NULL), -EINVAL);
	cairn_op_release(op);
	/* Bad calls fail at submit. */
	op = cairn_op_create();
	cairn_op_num_bounds(op, 0, 1); /* no counter before it */
	ck_assert_int_eq(cairn_operate(g_io, "methods2", op, NULL), -EINVAL);
	cairn_op_release(op);

	/* NNUM increments in flight at once on one omap counter: each answer is
	 * a different value of 1..NNUM (each applied once, in some order). */
	for (int i = 0; i < NNUM; i++) {
		ops[i] = cairn_op_create();
		cairn_op_omap_num(ops[i], "c", 1, CAIRN_NUM_ADD, 1, &res[i], NULL);
		c[i] = cairn_completion_create(NULL, NULL);
		ck_assert_int_eq(cairn_aio_operate(g_io, "counter", ops[i], c[i]), 0);
	}
	for (int i = 0; i < NNUM; i++) {
		ck_assert_int_eq(cairn_completion_wait(c[i]), 0);
		cairn_completion_release(c[i]);
		cairn_op_release(ops[i]);
		ck_assert(res[i] >= 1 && res[i] <= NNUM);
		ck_assert_msg(!seen[res[i]], "two increments answered %" PRId64, res[i]);
		seen[res[i]] = 1;
	}
	op = cairn_op_create();
	cairn_op_omap_get(op, &key, 1, &kvs, &n, NULL);
	ck_assert_int_eq(cairn_operate(g_io, "counter", op, NULL), 0);
	cairn_op_release(op);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(le64_of(kvs[0].val, kvs[0].vlen), NNUM);
	cairn_kvs_free(kvs, n);

	/* Compare-and-swap on an omap value: of four swaps from the same old
	 * value, sent at once, exactly one wins each round. */
	op = cairn_op_create();
	cairn_op_omap_cmp(op, "v", 1, CAIRN_CMP_ABSENT, NULL, 0);
	cairn_op_omap_set(op, "v", 1, "0000", 4);
	ck_assert_int_eq(cairn_operate(g_io, "cas", op, NULL), 0);
	cairn_op_release(op);
	for (int round = 0; round < 20; round++) {
		char old[5], val[4][5];

		snprintf(old, sizeof(old), "%04d", round);
		for (int i = 0; i < 4; i++) {
			snprintf(val[i], sizeof(val[i]), "%04d", round + 1);
			ops[i] = cairn_op_create();
			cairn_op_omap_cmp(ops[i], "v", 1, CAIRN_CMP_EQ, old, 4);
			cairn_op_omap_set(ops[i], "v", 1, val[i], 4);
			c[i] = cairn_completion_create(NULL, NULL);
			ck_assert_int_eq(cairn_aio_operate(g_io, "cas", ops[i], c[i]), 0);
		}
		for (int i = 0; i < 4; i++) {
			rc = cairn_completion_wait(c[i]);
			ck_assert_msg(rc == 0 || rc == -ECANCELED, "cas: %d", rc);
			ok += rc == 0;
			cancelled += rc == -ECANCELED;
			cairn_completion_release(c[i]);
			cairn_op_release(ops[i]);
		}
		ck_assert_int_eq(ok, round + 1);
	}
	ck_assert_int_eq(cancelled, 60);
	/* ABSENT on a key that exists fails; all keys of a joined compare must hold. */
	op = cairn_op_create();
	cairn_op_omap_cmp(op, "v", 1, CAIRN_CMP_ABSENT, NULL, 0);
	cairn_op_omap_set(op, "w", 1, "x", 1);
	ck_assert_int_eq(cairn_operate(g_io, "cas", op, NULL), -ECANCELED);
	cairn_op_release(op);
	op = cairn_op_create();
	cairn_op_omap_cmp(op, "v", 1, CAIRN_CMP_EQ, "0020", 4);
	cairn_op_omap_cmp(op, "w", 1, CAIRN_CMP_EQ, "x", 1);
	cairn_op_omap_set(op, "w", 1, "y", 1);
	ck_assert_int_eq(cairn_operate(g_io, "cas", op, NULL), -ECANCELED);
	cairn_op_release(op);
	op = cairn_op_create();
	cairn_op_omap_cmp(op, "v", 1, CAIRN_CMP_GE, "0020", 4);
	cairn_op_omap_cmp(op, "v", 1, CAIRN_CMP_LT, "0021", 4);
	ck_assert_int_eq(cairn_operate(g_io, "cas", op, NULL), 0);
	cairn_op_release(op);

	/* On an erasure-coded pool (cluster_test.sh makes "ec21"): xattr
	 * counters work, omap ones and omap compares are refused. */
	{
		cairn_ioctx_t *ec;

		ck_assert_int_eq(cairn_ioctx_create(g_cl, "ec21", &ec), 0);
		cairn_remove(ec, "ec-methods"); /* (a run before this one) */
		op = cairn_op_create();
		cairn_op_write_full(op, "data", 4);
		cairn_op_xattr_num(op, "n", CAIRN_NUM_ADD, 2, &r1, NULL);
		cairn_op_xattr_num(op, "n", CAIRN_NUM_ADD, 2, &r2, NULL);
		ck_assert_int_eq(cairn_operate(ec, "ec-methods", op, NULL), 0);
		cairn_op_release(op);
		ck_assert_int_eq(r1, 2);
		ck_assert_int_eq(r2, 4);
		ck_assert_int_eq(xattr_counter(ec, "ec-methods", "n"), 4);
		op = cairn_op_create();
		cairn_op_omap_num(op, "k", 1, CAIRN_NUM_ADD, 1, NULL, NULL);
		ck_assert_int_eq(cairn_operate(ec, "ec-methods", op, NULL), -EOPNOTSUPP);
		cairn_op_release(op);
		op = cairn_op_create();
		cairn_op_omap_cmp(op, "k", 1, CAIRN_CMP_ABSENT, NULL, 0);
		ck_assert_int_eq(cairn_operate(ec, "ec-methods", op, NULL), -EOPNOTSUPP);
		cairn_op_release(op);
		cairn_ioctx_destroy(ec);
	}
}

END_TEST

/* cmpext on pool io: compares, mismatch offsets, zeros past the end, and
 * compare-and-write races with exactly one winner a round. */
static void
cmpext_checks(cairn_ioctx_t *io)
{
	static uint8_t data[10000], probe[12000];
	cairn_completion_t *c[4];
	cairn_op_t *op, *ops[4];
	uint64_t at = 0;
	int rval = 0, rc, ok = 0;

	cm_test_fill(data, sizeof(data), 77);
	ck_assert_int_eq(cairn_write_full(io, "cmpext", data, sizeof(data)), 0);
	/* Equal: passes, and a write with it applies. */
	op = cairn_op_create();
	cairn_op_cmpext(op, 100, data + 100, 5000, &at, &rval);
	cairn_op_write(op, 0, "W", 1);
	ck_assert_int_eq(cairn_operate(io, "cmpext", op, NULL), 0);
	cairn_op_release(op);
	ck_assert_int_eq(rval, 0);
	data[0] = 'W';
	/* One byte off at 4097 from off: -ECANCELED, its offset, no write. */
	memcpy(probe, data + 100, 5000);
	probe[4097] ^= 1;
	op = cairn_op_create();
	cairn_op_cmpext(op, 100, probe, 5000, &at, &rval);
	cairn_op_write(op, 0, "X", 1);
	ck_assert_int_eq(cairn_operate(io, "cmpext", op, NULL), -ECANCELED);
	cairn_op_release(op);
	ck_assert_int_eq(rval, -ECANCELED);
	ck_assert_uint_eq(at, 4097);
	ck_assert_int_eq(cairn_read(io, "cmpext", probe, 1, 0), 1);
	ck_assert_int_eq(probe[0], 'W');
	/* Past the end compares as zeros. */
	memset(probe, 0, sizeof(probe));
	memcpy(probe, data + 9990, 10);
	op = cairn_op_create();
	cairn_op_cmpext(op, 9990, probe, 2000, &at, &rval);
	ck_assert_int_eq(cairn_operate(io, "cmpext", op, NULL), 0);
	cairn_op_release(op);
	probe[1500] = 1;
	op = cairn_op_create();
	cairn_op_cmpext(op, 9990, probe, 2000, &at, &rval);
	ck_assert_int_eq(cairn_operate(io, "cmpext", op, NULL), -ECANCELED);
	cairn_op_release(op);
	ck_assert_uint_eq(at, 1500);
	memset(probe, 0, sizeof(probe));
	op = cairn_op_create();
	cairn_op_cmpext(op, 50000, probe, 1000, NULL, NULL); /* all past the end: zeros */
	ck_assert_int_eq(cairn_operate(io, "cmpext", op, NULL), 0);
	cairn_op_release(op);
	op = cairn_op_create();
	cairn_op_cmpext(op, 0, probe, 10, NULL, NULL);
	ck_assert_int_eq(cairn_operate(io, "no-such-cmpext", op, NULL), -ENOENT);
	cairn_op_release(op);
	op = cairn_op_create();
	cairn_op_cmpext(op, 0, probe, 0, NULL, NULL);
	ck_assert_int_eq(cairn_operate(io, "cmpext", op, NULL), -EINVAL);
	cairn_op_release(op);

	/* Compare-and-write from four writers at once: one wins each round. */
	for (int round = 0; round < 8; round++) {
		static char old[16], val[4][16];

		snprintf(old, sizeof(old), "gen-%08d", round);
		if (round == 0)
			ck_assert_int_eq(cairn_write_full(io, "caw", old, strlen(old)), 0);
		for (int i = 0; i < 4; i++) {
			snprintf(val[i], sizeof(val[i]), "gen-%08d", round + 1);
			ops[i] = cairn_op_create();
			cairn_op_cmpext(ops[i], 0, old, strlen(old), NULL, NULL);
			cairn_op_write_full(ops[i], val[i], strlen(val[i]));
			c[i] = cairn_completion_create(NULL, NULL);
			ck_assert_int_eq(cairn_aio_operate(io, "caw", ops[i], c[i]), 0);
		}
		for (int i = 0; i < 4; i++) {
			rc = cairn_completion_wait(c[i]);
			ck_assert_msg(rc == 0 || rc == -ECANCELED, "compare-and-write: %d", rc);
			ok += rc == 0;
			cairn_completion_release(c[i]);
			cairn_op_release(ops[i]);
		}
		ck_assert_int_eq(ok, round + 1);
	}
}

START_TEST(test_cmpext)
{
	cairn_ioctx_t *ec;

	cmpext_checks(g_io);
	ck_assert_int_eq(cairn_ioctx_create(g_cl, "ec21", &ec), 0);
	cmpext_checks(ec);
	cairn_ioctx_destroy(ec);
}

END_TEST

/* Admin calls: pools, usage (after the OSDs' next beacons), health, commands. */
START_TEST(test_admin)
{
	static char data[4096];
	struct cairn_pool_stat st;
	struct cairn_health h;
	struct cairn_df df;
	char **names, *out, *err, name[32];
	const char *osd_ls[] = { "osd", "ls" }, *bad[] = { "no-such-command" };
	size_t n;
	bool def = false, ec = false;
	int rc;

	ck_assert_int_eq(cairn_pool_list(g_cl, &names, &n), 0);
	for (size_t i = 0; i < n; i++) {
		def |= strcmp(names[i], "default") == 0;
		ec |= strcmp(names[i], "ec21") == 0;
	}
	cairn_names_free(names, n);
	ck_assert(def && ec);
	{
		struct cairn_pool_info pi;

		ck_assert_int_eq(cairn_pool_info(g_cl, "ec21", &pi), 0);
		ck_assert(pi.erasure);
		ck_assert_uint_eq(pi.ec_k, 2);
		ck_assert_uint_eq(pi.ec_m, 1);
		ck_assert_uint_eq(pi.size, 3);
		ck_assert_uint_eq(pi.pg_num, 8);
		ck_assert_uint_gt(pi.stripe_unit, 0);
		ck_assert_int_eq(cairn_pool_info(g_cl, "default", &pi), 0);
		ck_assert(!pi.erasure);
		ck_assert_uint_ge(pi.size, 1);
		ck_assert_int_eq(cairn_pool_info(g_cl, "no-such-pool", &pi), -ENOENT);
	}

	memset(data, 'a', sizeof(data));
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "admin.%02d", i);
		ck_assert_int_eq(cairn_write_full(g_io, name, data, sizeof(data)), 0);
	}
	/* Usage comes with the OSDs' beacons: wait for one that counts them. */
	for (int i = 0; i < 150; i++) {
		ck_assert_int_eq(cairn_pool_stat(g_io, &st), 0);
		if (st.objects >= 20 && st.stored >= 20 * sizeof(data))
			break;
		usleep(200000);
	}
	ck_assert_str_eq(st.name, "default");
	ck_assert_uint_ge(st.objects, 20);
	ck_assert_uint_ge(st.stored, 20 * sizeof(data));
	ck_assert_uint_ge(st.raw, 2 * st.stored); /* (every copy) */
	ck_assert_int_eq(cairn_df(g_cl, &df), 0);
	ck_assert(df.stats_valid);
	ck_assert_uint_gt(df.total_bytes, 0);
	ck_assert_uint_le(df.free_bytes, df.total_bytes);
	ck_assert_uint_ge(df.npools, 2);
	for (size_t i = 0; i < df.npools; i++)
		if (strcmp(df.pools[i].name, "default") == 0)
			ck_assert_uint_le(df.pools[i].max_avail, df.free_bytes);
	cairn_df_free(&df);

	ck_assert_int_eq(cairn_health(g_cl, &h), 0);
	ck_assert(h.status == CAIRN_HEALTH_OK || h.status == CAIRN_HEALTH_WARN);
	for (size_t i = 0; i < h.nchecks; i++) {
		ck_assert(h.checks[i].code[0]);
		ck_assert_str_ne(h.checks[i].code, "OSD_DOWN");
	}
	cairn_health_free(&h);

	ck_assert_int_eq(cairn_mon_command(g_cl, osd_ls, 2, false, &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(out, "UUID"));
	ck_assert_ptr_nonnull(strstr(out, " up "));
	free(out);
	free(err);
	rc = cairn_mon_command(g_cl, bad, 1, false, &out, &err);
	ck_assert_int_lt(rc, 0);
	ck_assert(err[0]);
	free(out);
	free(err);
}

END_TEST

/* Set or clear the pause flag and wait until this client's map has it. */
static void
set_pause(bool on)
{
	const char *argv[] = { "osd", on ? "set" : "unset", "pause" };
	uint64_t e0 = cairn_map_epoch(g_cl);
	char *out, *err;

	ck_assert_int_eq(cairn_mon_command(g_cl, argv, 3, false, &out, &err), 0);
	free(out);
	free(err);
	for (int i = 0; i < 200 && cairn_map_epoch(g_cl) <= e0; i++)
		usleep(50000);
	ck_assert_uint_gt(cairn_map_epoch(g_cl), e0);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#define NCANCEL 100

/* Per-op deadlines and cancellation, with ops held by the pause flag. */
START_TEST(test_cancel_and_deadline)
{
	struct cairn_aio_opts ao = { .opts_size = sizeof(ao), .timeout_ms = 1000 };
	static cairn_completion_t *c[NCANCEL];
	static cairn_op_t *op[NCANCEL];
	char name[32];
	double t0, dt;
	uint64_t size;

	set_pause(true);
	/* Its own deadline: -ETIMEDOUT after 1 s (the client's is 20 s). */
	op[0] = cairn_op_create();
	cairn_op_write_full(op[0], "late", 4);
	c[0] = cairn_completion_create(NULL, NULL);
	t0 = now_s();
	ck_assert_int_eq(cairn_aio_operate_opts(g_io, "deadline", op[0], c[0], &ao), 0);
	ck_assert_int_eq(cairn_completion_wait(c[0]), -ETIMEDOUT);
	dt = now_s() - t0;
	ck_assert_msg(dt >= 0.9 && dt < 10, "deadline after %.2f s", dt);
	ck_assert_int_eq(cairn_completion_cancel(c[0]), -EALREADY);
	cairn_completion_release(c[0]);
	cairn_op_release(op[0]);

	/* NCANCEL ops waiting, each cancelled: -ECANCELED at once, never sent. */
	for (int i = 0; i < NCANCEL; i++) {
		snprintf(name, sizeof(name), "cancelled.%03d", i);
		op[i] = cairn_op_create();
		cairn_op_write_full(op[i], "never", 5);
		c[i] = cairn_completion_create(NULL, NULL);
		ck_assert_int_eq(cairn_aio_operate(g_io, name, op[i], c[i]), 0);
		if (i % 2 == 0)
			ck_assert_int_eq(cairn_completion_cancel(c[i]),
					 0); /* maybe not taken yet */
	}
	usleep(200000);
	t0 = now_s();
	for (int i = 0; i < NCANCEL; i++) {
		if (i % 2)
			ck_assert_int_eq(cairn_completion_cancel(c[i]), 0);
		ck_assert_int_eq(cairn_completion_wait(c[i]), -ECANCELED);
		cairn_completion_release(c[i]);
		cairn_op_release(op[i]);
	}
	ck_assert_msg(now_s() - t0 < 5, "cancels took %.2f s", now_s() - t0);
	set_pause(false);
	ck_assert_int_eq(cairn_write_full(g_io, "deadline-after", "x", 1), 0);
	for (int i = 0; i < NCANCEL; i++) {
		snprintf(name, sizeof(name), "cancelled.%03d", i);
		ck_assert_int_eq(cairn_stat(g_io, name, &size, NULL), -ENOENT);
	}
	ck_assert_int_eq(cairn_stat(g_io, "deadline", &size, NULL), -ENOENT);
}

END_TEST

static atomic_int g_thr_done;
static atomic_bool g_unpausing;

static void
thr_cb(cairn_completion_t *c, void *arg)
{
	(void)c;
	cairn_op_release(arg);
	atomic_fetch_add(&g_thr_done, 1);
}

static cairn_cluster_t *
connect_throttled(unsigned max_ops, uint64_t max_bytes)
{
	struct cairn_opts o;
	cairn_cluster_t *cl;
	char err[256];

	test_opts(&o);
	o.max_ops_in_flight = max_ops;
	o.max_bytes_in_flight = max_bytes;
	ck_assert_int_eq(cairn_connect(&o, &cl, err, sizeof(err)), 0);
	return cl;
}

/* A write of len bytes of data to oid, its completion released (thr_cb counts it). */
static int
thr_write(cairn_ioctx_t *io, const char *oid, const char *data, size_t len, unsigned flags)
{
	struct cairn_aio_opts ao = { .opts_size = sizeof(ao), .flags = flags };
	cairn_op_t *op = cairn_op_create();
	cairn_completion_t *c = cairn_completion_create(thr_cb, op);
	int rc;

	cairn_op_write_full(op, data, len);
	rc = cairn_aio_operate_opts(io, oid, op, c, &ao);
	if (rc)
		cairn_op_release(op);
	cairn_completion_release(c);
	return rc;
}

static void *
unpause_later(void *arg)
{
	const char *argv[] = { "osd", "unset", "pause" };
	char *out = NULL, *err = NULL;

	(void)arg;
	usleep(1000000);
	atomic_store(&g_unpausing, true); /* (before: no op can complete earlier) */
	if (cairn_mon_command(g_cl, argv, 3, false, &out, &err))
		abort();
	free(out);
	free(err);
	return NULL;
}

/*
 * The throttle: with the OSDs paused, a client allowed 4 ops takes 4 and
 * refuses a 5th under NOWAIT, and a 5th without it returns only after the
 * unpause let one end; one allowed 1000 bytes takes a 600-byte write
 * alone and refuses a second. Afterwards 40 writes through 4 slots all
 * land.
 */
START_TEST(test_throttle)
{
	static const char data[600] = { 't' };
	cairn_cluster_t *a = connect_throttled(4, 0), *b = connect_throttled(0, 1000);
	cairn_ioctx_t *ia, *ib;
	char name[32], back[600];
	pthread_t th;

	ck_assert_int_eq(cairn_ioctx_create(a, "default", &ia), 0);
	ck_assert_int_eq(cairn_ioctx_create(b, "default", &ib), 0);
	atomic_store(&g_thr_done, 0);
	atomic_store(&g_unpausing, false);
	set_pause(true);
	/* a and b hold their ops only once their maps have the flag too (they
	 * were connected just now: theirs may still lag g_cl's) */
	for (int i = 0; i < 200 && (cairn_map_epoch(a) < cairn_map_epoch(g_cl) ||
				    cairn_map_epoch(b) < cairn_map_epoch(g_cl));
	     i++)
		usleep(50000);
	ck_assert_uint_ge(cairn_map_epoch(a), cairn_map_epoch(g_cl));
	ck_assert_uint_ge(cairn_map_epoch(b), cairn_map_epoch(g_cl));
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "thr.%d", i);
		ck_assert_int_eq(thr_write(ia, name, data, 100, CAIRN_AIO_NOWAIT), 0);
	}
	ck_assert_int_eq(thr_write(ia, "thr.x", data, 100, CAIRN_AIO_NOWAIT), -EAGAIN);
	ck_assert_int_eq(thr_write(ib, "thr.b0", data, 600, CAIRN_AIO_NOWAIT), 0);
	ck_assert_int_eq(thr_write(ib, "thr.b1", data, 600, CAIRN_AIO_NOWAIT), -EAGAIN);
	ck_assert_int_eq(pthread_create(&th, NULL, unpause_later, NULL), 0);
	ck_assert_int_eq(thr_write(ia, "thr.4", data, 100, 0), 0);
	ck_assert(atomic_load(&g_unpausing)); /* it waited for room */
	pthread_join(th, NULL);
	for (int i = 5; i < 45; i++) {
		snprintf(name, sizeof(name), "thr.%d", i);
		ck_assert_int_eq(thr_write(ia, name, data, sizeof(data), 0), 0);
	}
	for (int t = 0; t < 3000 && atomic_load(&g_thr_done) < 46; t++)
		usleep(10000);
	ck_assert_int_eq(atomic_load(&g_thr_done), 46);
	for (int i = 0; i < 45; i++) {
		snprintf(name, sizeof(name), "thr.%d", i);
		ck_assert_int_eq(cairn_read(ia, name, back, sizeof(back), 0), i < 5 ? 100 : 600);
		ck_assert_int_eq(memcmp(back, data, i < 5 ? 100 : 600), 0);
		ck_assert_int_eq(cairn_remove(ia, name), 0);
	}
	ck_assert_int_eq(cairn_read(ia, "thr.x", back, sizeof(back), 0), -ENOENT);
	ck_assert_int_eq(cairn_read(ia, "thr.b1", back, sizeof(back), 0), -ENOENT);
	ck_assert_int_eq(cairn_remove(ia, "thr.b0"), 0);
	cairn_ioctx_destroy(ia);
	cairn_ioctx_destroy(ib);
	cairn_shutdown(a);
	cairn_shutdown(b);
}

END_TEST

static atomic_int g_shut_done, g_shut_rc_bad;

static void
shut_cb(cairn_completion_t *c, void *arg)
{
	int rc = cairn_completion_rc(c);

	cairn_op_release(arg);
	if (rc && rc != -ESHUTDOWN)
		atomic_fetch_add(&g_shut_rc_bad, 1);
	atomic_fetch_add(&g_shut_done, 1);
}

/*
 * cairn_shutdown right after 300 submissions: every op completes before it
 * returns (0 if it got through, else -ESHUTDOWN), also those the client
 * thread had not taken yet when it stopped.
 */
START_TEST(test_shutdown_completes)
{
	static const char data[64] = "shutdown";
	cairn_cluster_t *cl = connect_other();
	cairn_ioctx_t *io;
	char name[32];

	atomic_store(&g_shut_done, 0);
	atomic_store(&g_shut_rc_bad, 0);
	ck_assert_int_eq(cairn_ioctx_create(cl, "default", &io), 0);
	for (int i = 0; i < 300; i++) {
		cairn_op_t *op = cairn_op_create();
		cairn_completion_t *c = cairn_completion_create(shut_cb, op);

		snprintf(name, sizeof(name), "shut.%d", i);
		cairn_op_write_full(op, data, sizeof(data));
		ck_assert_int_eq(cairn_aio_operate(io, name, op, c), 0);
		cairn_completion_release(c);
	}
	cairn_ioctx_destroy(io);
	cairn_shutdown(cl);
	ck_assert_int_eq(atomic_load(&g_shut_done), 300);
	ck_assert_int_eq(atomic_load(&g_shut_rc_bad), 0);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "shut.%d", i);
		cairn_remove(g_io, name);
	}
}

END_TEST

/* ---------- io threads ---------- */

#define IOT_THREADS 4
#define IOT_SUBS    8  /* submitting threads */
#define IOT_OBJS    4  /* objects of each */
#define IOT_RECS    64 /* appends to each, all in flight at once */
#define IOT_REC     16 /* bytes of one */

static pthread_mutex_t g_iot_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t g_iot_cb[IOT_THREADS + 1];
static int g_iot_ncb;        /* distinct threads that ran a callback */
static atomic_int g_iot_cbs; /* callbacks run */

static void
iot_cb(cairn_completion_t *c, void *arg)
{
	pthread_t me = pthread_self();
	bool seen = false;

	(void)c;
	(void)arg;
	pthread_mutex_lock(&g_iot_mu);
	for (int i = 0; i < g_iot_ncb; i++)
		seen = seen || pthread_equal(g_iot_cb[i], me);
	if (!seen && g_iot_ncb < IOT_THREADS + 1)
		g_iot_cb[g_iot_ncb++] = me;
	pthread_mutex_unlock(&g_iot_mu);
	atomic_fetch_add(&g_iot_cbs, 1);
}

struct iot_sub {
	cairn_ioctx_t *io;
	int id;
	int bad; /* ops that failed */
	char rec[IOT_OBJS][IOT_RECS][IOT_REC];
};

static void
iot_name(char *b, size_t n, int sub, int obj)
{
	snprintf(b, n, "iot.%d.%d", sub, obj);
}

/* One submitter: every append to its objects in flight at once, in order per object. */
static void *
iot_submit(void *p)
{
	struct iot_sub *s = p;
	cairn_op_t *ops[IOT_OBJS * IOT_RECS];
	cairn_completion_t *c[IOT_OBJS * IOT_RECS];
	int n = 0;

	for (int r = 0; r < IOT_RECS; r++)
		for (int o = 0; o < IOT_OBJS; o++) {
			char name[32];

			snprintf(s->rec[o][r], IOT_REC, "%02d.%d.%04d......", s->id, o, r);
			s->rec[o][r][IOT_REC - 1] = '\n';
			iot_name(name, sizeof(name), s->id, o);
			ops[n] = cairn_op_create();
			c[n] = cairn_completion_create(iot_cb, NULL);
			cairn_op_append(ops[n], s->rec[o][r], IOT_REC);
			if (cairn_aio_operate(s->io, name, ops[n], c[n]))
				s->bad++;
			n++;
		}
	for (int i = 0; i < n; i++) {
		if (cairn_completion_wait(c[i]))
			s->bad++;
		cairn_completion_release(c[i]);
		cairn_op_release(ops[i]);
	}
	return NULL;
}

/*
 * A client of 4 io threads: 8 threads append 64 records to each of their 4
 * objects, all in flight at once. Each object reads back its records in the
 * order they were submitted (one object's ops stay on one io thread, in
 * order), and the callbacks ran on more than one io thread.
 */
START_TEST(test_io_threads)
{
	struct cairn_opts o;
	cairn_cluster_t *cl;
	cairn_ioctx_t *io;
	struct iot_sub *subs = calloc(IOT_SUBS, sizeof(*subs));
	pthread_t th[IOT_SUBS];
	char err[256], name[32];
	static char got[IOT_RECS * IOT_REC + 1];

	ck_assert_ptr_nonnull(subs);
	test_opts(&o);
	o.io_threads = 65; /* (at most 64) */
	ck_assert_int_eq(cairn_connect(&o, &cl, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "io_threads"), "%s", err);
	/* Thread 0 fails to start (no monitor address parses) while the others
	 * start: each connect fails and returns, its threads stopped. (The race
	 * of a stop with a thread still starting is too narrow to show here:
	 * cairn_shutdown also posts each thread its stop.) */
	o.io_threads = 8;
	o.mon_host = "a=not-an-address";
	for (int i = 0; i < 20; i++)
		ck_assert_int_lt(cairn_connect(&o, &cl, err, sizeof(err)), 0);
	o.mon_host = NULL;
	o.io_threads = IOT_THREADS;
	ck_assert_int_eq(cairn_connect(&o, &cl, err, sizeof(err)), 0);
	ck_assert_int_eq(cairn_ioctx_create(cl, "default", &io), 0);
	g_iot_ncb = 0;
	atomic_store(&g_iot_cbs, 0);
	for (int s = 0; s < IOT_SUBS; s++)
		for (int k = 0; k < IOT_OBJS; k++) {
			iot_name(name, sizeof(name), s, k);
			(void)cairn_remove(io, name); /* (a run before this one) */
		}
	for (int s = 0; s < IOT_SUBS; s++) {
		subs[s].io = io;
		subs[s].id = s;
		ck_assert_int_eq(pthread_create(&th[s], NULL, iot_submit, &subs[s]), 0);
	}
	for (int s = 0; s < IOT_SUBS; s++) {
		pthread_join(th[s], NULL);
		ck_assert_int_eq(subs[s].bad, 0);
	}
	/* (a waiter may wake before its callback has run: up to 10 s for the last ones) */
	for (int i = 0; i < 1000 && atomic_load(&g_iot_cbs) < IOT_SUBS * IOT_OBJS * IOT_RECS; i++)
		usleep(10000);
	ck_assert_int_eq(atomic_load(&g_iot_cbs), IOT_SUBS * IOT_OBJS * IOT_RECS);
	pthread_mutex_lock(&g_iot_mu);
	ck_assert_msg(g_iot_ncb >= 2, "every callback ran on one thread");
	pthread_mutex_unlock(&g_iot_mu);
	for (int s = 0; s < IOT_SUBS; s++)
		for (int k = 0; k < IOT_OBJS; k++) {
			size_t len = 0;
			int rv = 0;
			cairn_op_t *op = cairn_op_create();

			iot_name(name, sizeof(name), s, k);
			cairn_op_read(op, 0, sizeof(got) - 1, got, &len, &rv);
			ck_assert_int_eq(cairn_operate(io, name, op, NULL), 0);
			cairn_op_release(op);
			ck_assert_uint_eq(len, IOT_RECS * IOT_REC);
			for (int r = 0; r < IOT_RECS; r++)
				ck_assert_msg(
					!memcmp(got + r * IOT_REC, subs[s].rec[k][r], IOT_REC),
					"%s: record %d is '%.15s', not '%.15s'", name, r,
					got + r * IOT_REC, subs[s].rec[k][r]);
			ck_assert_int_eq(cairn_remove(io, name), 0);
		}
	cairn_ioctx_destroy(io);
	cairn_shutdown(cl);
	free(subs);
}

END_TEST

/* ---------- watch/notify ---------- */

struct wstate {
	atomic_int events;
	bool ack; /* answer each notify */
	char reply[32];
	uint64_t last_id;
	char payload[64];
};

static void
w_cb(cairn_watch_t *w, const struct cairn_notify_event *ev, void *arg)
{
	struct wstate *st = arg;

	st->last_id = ev->notify_id;
	snprintf(st->payload, sizeof(st->payload), "%.*s", (int)ev->len, (const char *)ev->payload);
	atomic_fetch_add(&st->events, 1);
	if (st->ack)
		ck_assert_int_eq(cairn_notify_ack(w, ev->notify_id, st->reply, strlen(st->reply)),
				 0);
}

/* The ack in res from (entity, cookie), or NULL. */
static const struct cairn_notify_reply *
ack_of(const struct cairn_notify_result *res, const char *entity, uint64_t cookie)
{
	for (size_t i = 0; i < res->nacks; i++)
		if (!strcmp(res->acks[i].entity, entity) && res->acks[i].cookie == cookie)
			return &res->acks[i];
	return NULL;
}

/*
 * Watchers on two clients (one of them the notifier's) on a replicated and
 * an EC pool: a notify reaches both and returns their replies; a watcher
 * that does not answer is reported as timed out; the watcher list; unwatch;
 * the errors.
 */
START_TEST(test_watch_notify)
{
	static const char *const pools[] = { "default", "ec21" };
	cairn_cluster_t *b = connect_other();
	char bname[64];

	snprintf(bname, sizeof(bname), "%s", cairn_client_name(b));
	for (size_t p = 0; p < 2; p++) {
		struct wstate sa = { .ack = true, .reply = "from-a" };
		struct wstate sb = { .ack = true, .reply = "from-b" };
		struct wstate sc = { .ack = false };
		cairn_ioctx_t *ia, *ib;
		cairn_watch_t *wa, *wb, *wc;
		struct cairn_notify_result res;
		const struct cairn_notify_reply *r;
		struct cairn_watcher *wl;
		size_t n;
		cairn_op_t *op;
		uint64_t size;

		ck_assert_int_eq(cairn_ioctx_create(g_cl, pools[p], &ia), 0);
		ck_assert_int_eq(cairn_ioctx_create(b, pools[p], &ib), 0);
		cairn_remove(ia, "w.obj");
		/* No object: nothing to watch or notify. */
		ck_assert_int_eq(cairn_watch(ia, "w.obj", 3000, w_cb, NULL, &sa, &wa), -ENOENT);
		ck_assert_int_eq(cairn_notify(ia, "w.obj", "x", 1, 1000, &res), -ENOENT);
		ck_assert_int_eq(cairn_write_full(ia, "w.obj", "data", 4), 0);
		ck_assert_int_eq(cairn_watch(ia, "w.obj", 500, w_cb, NULL, &sa, &wa), -EINVAL);
		/* Nobody watches: an empty answer at once. */
		ck_assert_int_eq(cairn_notify(ia, "w.obj", "x", 1, 1000, &res), 0);
		ck_assert_uint_eq(res.nacks + res.ntimeouts, 0);
		cairn_notify_result_free(&res);

		ck_assert_int_eq(cairn_watch(ia, "w.obj", 3000, w_cb, NULL, &sa, &wa), 0);
		ck_assert_int_eq(cairn_watch(ib, "w.obj", 3000, w_cb, NULL, &sb, &wb), 0);
		ck_assert_uint_ne(cairn_watch_cookie(wa), 0);
		ck_assert_int_eq(cairn_notify(ia, "w.obj", "hello", 5, 5000, &res), 0);
		ck_assert_uint_eq(res.nacks, 2);
		ck_assert_uint_eq(res.ntimeouts, 0);
		r = ack_of(&res, cairn_client_name(g_cl), cairn_watch_cookie(wa));
		ck_assert_ptr_nonnull(r);
		ck_assert_uint_eq(r->len, 6);
		ck_assert_mem_eq(r->data, "from-a", 6);
		r = ack_of(&res, bname, cairn_watch_cookie(wb));
		ck_assert_ptr_nonnull(r);
		ck_assert_mem_eq(r->data, "from-b", 6);
		cairn_notify_result_free(&res);
		ck_assert_int_eq(atomic_load(&sa.events), 1);
		ck_assert_int_eq(atomic_load(&sb.events), 1);
		ck_assert_str_eq(sb.payload, "hello");

		/* One that never answers: reported, the others' acks come back. */
		ck_assert_int_eq(cairn_watch(ib, "w.obj", 3000, w_cb, NULL, &sc, &wc), 0);
		ck_assert_int_eq(cairn_list_watchers(ia, "w.obj", &wl, &n), 0);
		ck_assert_uint_eq(n, 3);
		cairn_watchers_free(wl, n);
		ck_assert_int_eq(cairn_notify(ia, "w.obj", "again", 5, 1500, &res), 0);
		ck_assert_uint_eq(res.nacks, 2);
		ck_assert_uint_eq(res.ntimeouts, 1);
		ck_assert_str_eq(res.timeouts[0].entity, bname);
		ck_assert_uint_eq(res.timeouts[0].cookie, cairn_watch_cookie(wc));
		cairn_notify_result_free(&res);
		ck_assert_int_eq(atomic_load(&sc.events), 1);

		/* An unwatch ends its part of a pending notify: the notify does not
		 * wait 20 s for it, nor reports it as timed out. */
		{
			struct cairn_notify_result r2;
			cairn_completion_t *nc = cairn_completion_create(NULL, NULL);
			int rv = 1;

			op = cairn_op_create();
			cairn_op_notify(op, "bye", 3, 20000, &r2, &rv);
			ck_assert_int_eq(cairn_aio_operate(ia, "w.obj", op, nc), 0);
			for (int t = 0; t < 1000 && atomic_load(&sc.events) < 2; t++)
				usleep(10000);
			ck_assert_int_eq(atomic_load(&sc.events), 2);
			ck_assert_int_eq(cairn_unwatch(wc), 0);
			ck_assert_int_eq(cairn_completion_wait(nc), 0);
			ck_assert_int_eq(rv, 0);
			ck_assert_uint_eq(r2.nacks, 2);
			ck_assert_uint_eq(r2.ntimeouts, 0);
			cairn_notify_result_free(&r2);
			cairn_completion_release(nc);
			cairn_op_release(op);
		}

		/* Watch ops are alone in their op. */
		op = cairn_op_create();
		cairn_op_notify(op, "x", 1, 1000, &res, NULL);
		cairn_op_stat(op, &size, NULL, NULL);
		ck_assert_int_eq(cairn_operate(ia, "w.obj", op, NULL), -EINVAL);
		cairn_op_release(op);

		ck_assert_int_eq(cairn_unwatch(wb), 0);
		ck_assert_int_eq(cairn_list_watchers(ia, "w.obj", &wl, &n), 0);
		ck_assert_uint_eq(n, 1);
		ck_assert_str_eq(wl[0].entity, cairn_client_name(g_cl));
		ck_assert_uint_eq(wl[0].timeout_ms, 3000);
		cairn_watchers_free(wl, n);
		ck_assert_int_eq(cairn_unwatch(wa), 0);
		ck_assert_int_eq(cairn_list_watchers(ia, "w.obj", &wl, &n), 0);
		ck_assert_uint_eq(n, 0);
		cairn_watchers_free(wl, n);
		ck_assert_int_eq(cairn_remove(ia, "w.obj"), 0);
		cairn_ioctx_destroy(ia);
		cairn_ioctx_destroy(ib);
	}
	cairn_shutdown(b);
}

END_TEST

/* ---------- the service map ---------- */

/* Is (type, name) registered, by instance (if not NULL)? */
static bool
svc_listed(const char *type, const char *name, const char *instance)
{
	struct cairn_service *v;
	size_t n;
	bool found = false;

	ck_assert_int_eq(cairn_service_list(g_cl, NULL, &v, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].type, type) && !strcmp(v[i].name, name) &&
		    (!instance || !strcmp(v[i].instance, instance)))
			found = true;
	cairn_services_free(v, n);
	return found;
}

/*
 * Registrations from two clients: listed (all, by type), kept alive past
 * their TTL while the client runs, shown by status; a newer instance takes
 * a name over (the old one's unregister leaves it); unregister removes at
 * once; a client that stops renewing drops out after its TTL.
 */
START_TEST(test_services)
{
	cairn_cluster_t *b = connect_other();
	const char *st[] = { "status" };
	struct cairn_service *v;
	char *out, *err, bname[64];
	size_t n;
	bool gone = false;

	snprintf(bname, sizeof(bname), "%s", cairn_client_name(b));
	ck_assert_int_eq(cairn_service_register(g_cl, "rgw", "gw/a", "x", NULL, 3), -EINVAL);
	ck_assert_int_eq(cairn_service_register(g_cl, "rgw", "gw-a", "127.0.0.1:7480", NULL, 1),
			 -EINVAL);
	ck_assert_int_eq(cairn_service_register(g_cl, "rgw", "gw-a", "127.0.0.1:7480", "zone=a", 3),
			 0);
	ck_assert_int_eq(cairn_service_register(b, "rgw", "gw-b", "127.0.0.1:7481", NULL, 3), 0);
	ck_assert_int_eq(cairn_service_register(b, "mds", "m0", "127.0.0.1:6800", NULL, 3), 0);
	ck_assert_int_eq(cairn_service_list(g_cl, "rgw", &v, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(v[0].name, "gw-a");
	ck_assert_str_eq(v[0].addr, "127.0.0.1:7480");
	ck_assert_str_eq(v[0].meta, "zone=a");
	ck_assert_str_eq(v[0].instance, cairn_client_name(g_cl));
	ck_assert_uint_eq(v[0].ttl_s, 3);
	ck_assert_str_eq(v[1].instance, bname);
	cairn_services_free(v, n);
	ck_assert_int_eq(cairn_mon_command(g_cl, st, 1, false, &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(out, "rgw: 2 daemons (gw-a at 127.0.0.1:7480, gw-b at "));
	ck_assert_ptr_nonnull(strstr(out, "mds: 1 daemon (m0 at 127.0.0.1:6800)"));
	free(out);
	free(err);
	/* Past the TTL: renewed, still there. */
	sleep(5);
	ck_assert(svc_listed("rgw", "gw-a", NULL));
	ck_assert(svc_listed("mds", "m0", bname));
	/* A newer instance takes the name; the old one's unregister leaves it. */
	ck_assert_int_eq(cairn_service_register(g_cl, "csi", "ctrl", "127.0.0.1:9000", NULL, 3), 0);
	ck_assert_int_eq(cairn_service_register(b, "csi", "ctrl", "127.0.0.1:9001", NULL, 3), 0);
	ck_assert(svc_listed("csi", "ctrl", bname));
	ck_assert_int_eq(cairn_service_unregister(g_cl, "csi", "ctrl"), 0);
	ck_assert(svc_listed("csi", "ctrl", bname));
	ck_assert_int_eq(cairn_service_unregister(g_cl, "rgw", "gw-a"), 0);
	ck_assert(!svc_listed("rgw", "gw-a", NULL));
	/* b stops renewing (as if it died): its registrations lapse after 3 s. */
	cairn_shutdown(b);
	for (int i = 0; i < 100 && !gone; i++) {
		usleep(100 * 1000);
		gone = !svc_listed("rgw", "gw-b", NULL) && !svc_listed("mds", "m0", NULL) &&
		       !svc_listed("csi", "ctrl", NULL);
	}
	ck_assert_msg(gone, "a stopped client's registrations did not lapse within 10 s");
}

END_TEST

/*
 * The MDS map: the first daemon to beacon takes rank 0, the others stand
 * by; max_mds 2 gives the next one rank 1; when rank 0's holder stops
 * beaconing, a standby takes it after the TTL and fences it first.
 */
START_TEST(test_mds_map)
{
	cairn_cluster_t *a = connect_other(), *b = connect_other(), *c = connect_other();
	char fs[40], aname[64], *out, *err;
	const char *set2[] = { "mds", "set", fs, "max_mds", "2" };
	const char *ls[] = { "mds", "ls", fs };
	int ra, rb, rc_ = -1;
	uint64_t e0, e1, e2;

	snprintf(aname, sizeof(aname), "%s", cairn_client_name(a));
	/* (a file system of its own: the suite can run again on one cluster) */
	snprintf(fs, sizeof(fs), "fs-%.16s", aname + strlen("client."));
	ck_assert_int_eq(cairn_mds_beacon(a, "fs/x", "m-a", "127.0.0.1:6800", 3, &ra, NULL),
			 -EINVAL);
	ck_assert_int_eq(cairn_mds_beacon(a, fs, "m-a", "127.0.0.1:6800", 3, &ra, &e0), 0);
	ck_assert_int_eq(ra, 0);
	ck_assert_int_eq(cairn_mds_beacon(b, fs, "m-b", "127.0.0.1:6801", 3, &rb, NULL), 0);
	ck_assert_int_eq(rb, -1);
	ck_assert_int_eq(cairn_mds_beacon(c, fs, "m-c", "127.0.0.1:6802", 3, &rc_, NULL), 0);
	ck_assert_int_eq(rc_, -1);
	/* Beacons that change nothing keep the epoch. */
	ck_assert_int_eq(cairn_mds_beacon(a, fs, "m-a", "127.0.0.1:6800", 3, &ra, &e1), 0);
	ck_assert_int_eq(ra, 0);
	ck_assert_uint_eq(e1, e0);
	ck_assert_int_eq(cairn_mon_command(g_cl, set2, 5, false, &out, &err), 0);
	free(out);
	free(err);
	ck_assert_int_eq(cairn_mds_beacon(b, fs, "m-b", "127.0.0.1:6801", 3, &rb, NULL), 0);
	ck_assert_int_eq(rb, 1);
	ck_assert_int_eq(cairn_mon_command(g_cl, ls, 3, false, &out, &err), 0);
	ck_assert_ptr_nonnull(strstr(out, "rank 0: m-a"));
	ck_assert_ptr_nonnull(strstr(out, "rank 1: m-b"));
	ck_assert_ptr_nonnull(strstr(out, "standby: m-c"));
	free(out);
	free(err);
	/* a stops; b and c keep beaconing; after a's TTL c takes rank 0 and fences a. */
	cairn_shutdown(a);
	for (int t = 0; t < 100 && rc_ < 0; t++) {
		usleep(300 * 1000);
		ck_assert_int_eq(cairn_mds_beacon(b, fs, "m-b", "127.0.0.1:6801", 3, &rb, NULL), 0);
		ck_assert_int_eq(rb, 1);
		ck_assert_int_eq(cairn_mds_beacon(c, fs, "m-c", "127.0.0.1:6802", 3, &rc_, &e2), 0);
	}
	ck_assert_int_eq(rc_, 0);
	ck_assert_uint_gt(e2, e1);
	ck_assert(blocklist_lists(aname));
	ck_assert_int_eq(cairn_blocklist_rm(g_cl, aname), 0);
	cairn_shutdown(b);
	cairn_shutdown(c);
}

END_TEST

/* Completions for the caller's own event loop: poll the queue's fd, reap, release. */
START_TEST(test_completion_queue)
{
	enum { N = 100 };

	static char data[N][64];
	cairn_op_t *ops[N];
	cairn_completion_t *got[16], *one;
	bool seen[N] = { false };
	cairn_cq_t *cq;
	char name[32];
	size_t reaped = 0;
	struct pollfd pf;

	ck_assert_int_eq(cairn_cq_create(&cq), 0);
	pf = (struct pollfd){ .fd = cairn_cq_fd(cq), .events = POLLIN };
	for (int i = 0; i < N; i++) {
		cairn_completion_t *c = cairn_completion_create_cq(cq, &seen[i]);

		snprintf(data[i], sizeof(data[i]), "cq-%d", i);
		snprintf(name, sizeof(name), "cq.%03d", i);
		ops[i] = cairn_op_create();
		cairn_op_write_full(ops[i], data[i], strlen(data[i]));
		ck_assert_int_eq(cairn_aio_operate(g_io, name, ops[i], c), 0);
	}
	for (int t = 0; t < 300 && reaped < N; t++) {
		size_t n;

		if (poll(&pf, 1, 100) <= 0)
			continue;
		ck_assert(pf.revents & POLLIN);
		n = cairn_cq_reap(cq, got, 16);
		ck_assert_uint_gt(n, 0); /* readable means something to reap */
		for (size_t k = 0; k < n; k++) {
			bool *mark = cairn_completion_arg(got[k]);

			ck_assert_int_eq(cairn_completion_rc(got[k]), 0);
			ck_assert(!*mark);
			*mark = true;
			cairn_completion_release(got[k]);
		}
		reaped += n;
	}
	ck_assert_uint_eq(reaped, N);
	ck_assert_int_eq(poll(&pf, 1, 0), 0); /* all reaped: not readable */
	for (int i = 0; i < N; i++) {
		char back[64];

		cairn_op_release(ops[i]);
		snprintf(name, sizeof(name), "cq.%03d", i);
		ck_assert_int_eq(cairn_read(g_io, name, back, sizeof(back), 0),
				 (int64_t)strlen(data[i]));
		ck_assert_int_eq(cairn_remove(g_io, name), 0);
	}
	/* an ended completion never reaped: released, the fd reads empty again */
	one = cairn_completion_create_cq(cq, NULL);
	ops[0] = cairn_op_create();
	cairn_op_stat(ops[0], NULL, NULL, NULL);
	ck_assert_int_eq(cairn_aio_operate(g_io, "cq.000", ops[0], one), 0);
	ck_assert_int_eq(cairn_completion_wait(one), -ENOENT);
	ck_assert_int_eq(poll(&pf, 1, 0), 1);
	ck_assert_int_eq(cairn_cq_destroy(cq), -EBUSY); /* one still held */
	cairn_completion_release(one);
	cairn_op_release(ops[0]);
	ck_assert_int_eq(poll(&pf, 1, 0), 0);
	ck_assert_int_eq(cairn_cq_destroy(cq), 0);
}

END_TEST

/* Names of one listing of io (flags as cairn_list_objs), "ns|key|name" each, sorted, in *out. */
static size_t
list_all(cairn_ioctx_t *io, unsigned flags, unsigned page, char ***out)
{
	struct cairn_list_cursor cur;
	char **all = NULL;
	size_t nall = 0;

	memset(&cur, 0, sizeof(cur));
	while (!cur.done) {
		struct cairn_obj *objs;
		size_t n;

		ck_assert_int_eq(cairn_list_objs(io, &cur, page, flags, &objs, &n), 0);
		ck_assert_uint_le(n, page);
		all = realloc(all, (nall + n + 1) * sizeof(*all));
		for (size_t i = 0; i < n; i++) {
			size_t l = strlen(objs[i].nspace) + strlen(objs[i].key) +
				   strlen(objs[i].name) + 3;

			all[nall] = malloc(l);
			snprintf(all[nall++], l, "%s|%s|%s", objs[i].nspace, objs[i].key,
				 objs[i].name);
		}
		cairn_objs_free(objs, n);
	}
	cairn_list_cursor_fini(&cur);
	*out = all;
	return nall;
}

static size_t
count_prefix(char **names, size_t n, const char *prefix)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += strncmp(names[i], prefix, strlen(prefix)) == 0;
	return k;
}

static void
names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * Namespaces and locator keys end to end: one name in three namespaces is
 * three objects; a listing shows its namespace exactly (or all of them);
 * a key is part of the identity and comes back in listings; the limits
 * (2048-byte names, 256-byte namespaces, 2048-byte keys) hold on a
 * replicated and an erasure-coded pool.
 */
START_TEST(test_namespaces)
{
	static const char *const pools[] = { NULL, "ec21" };
	char *longname = malloc(CAIRN_NAME_MAX + 2), *longns = malloc(CAIRN_NS_MAX + 2),
	     *longkey = malloc(CAIRN_KEY_MAX + 2), **names, buf[64];
	cairn_ioctx_t *a, *b, *k, *ec;
	size_t n;

	ck_assert_int_eq(cairn_ioctx_create(g_cl, "default", &a), 0);
	ck_assert_int_eq(cairn_ioctx_create(g_cl, "default", &b), 0);
	ck_assert_int_eq(cairn_ioctx_create(g_cl, "default", &k), 0);
	ck_assert_int_eq(cairn_ioctx_set_namespace(a, "tenant-a"), 0);
	ck_assert_int_eq(cairn_ioctx_set_namespace(b, "tenant-a2"), 0); /* a's prefix */
	ck_assert_str_eq(cairn_ioctx_get_namespace(b), "tenant-a2");
	ck_assert_int_eq(cairn_ioctx_set_namespace(k, "tenant-a"), 0);
	ck_assert_int_eq(cairn_ioctx_set_locator_key(k, "shard-7"), 0);

	/* One name, four objects. */
	ck_assert_int_eq(cairn_write_full(g_io, "ns-same", "default", 7), 0);
	ck_assert_int_eq(cairn_write_full(a, "ns-same", "in-a", 4), 0);
	ck_assert_int_eq(cairn_write_full(b, "ns-same", "in-a2", 5), 0);
	ck_assert_int_eq(cairn_write_full(k, "ns-same", "keyed", 5), 0);
	ck_assert_int_eq(cairn_read(g_io, "ns-same", buf, sizeof(buf), 0), 7);
	ck_assert(!memcmp(buf, "default", 7));
	ck_assert_int_eq(cairn_read(a, "ns-same", buf, sizeof(buf), 0), 4);
	ck_assert(!memcmp(buf, "in-a", 4));
	ck_assert_int_eq(cairn_read(b, "ns-same", buf, sizeof(buf), 0), 5);
	ck_assert(!memcmp(buf, "in-a2", 5));
	ck_assert_int_eq(cairn_read(k, "ns-same", buf, sizeof(buf), 0), 5);
	ck_assert(!memcmp(buf, "keyed", 5));
	ck_assert_int_eq(cairn_remove(a, "ns-same"), 0);
	ck_assert_int_eq(cairn_read(a, "ns-same", buf, sizeof(buf), 0), -ENOENT);
	ck_assert_int_eq(cairn_read(g_io, "ns-same", buf, sizeof(buf), 0), 7);
	ck_assert_int_eq(cairn_read(k, "ns-same", buf, sizeof(buf), 0), 5);

	/* Listings: exactly the namespace's objects, keyed ones with their key. */
	for (int i = 0; i < 30; i++) {
		snprintf(buf, sizeof(buf), "ns-a.%02d", i);
		ck_assert_int_eq(cairn_write_full(a, buf, "x", 1), 0);
		if (i < 12)
			ck_assert_int_eq(cairn_write_full(b, buf, "y", 1), 0);
		if (i < 5)
			ck_assert_int_eq(cairn_write_full(k, buf, "z", 1), 0);
	}
	n = list_all(a, 0, 4, &names);
	ck_assert_uint_eq(n, 30 + 6); /* a's 30, and the keyed ones (ns-same too) */
	ck_assert_uint_eq(count_prefix(names, n, "tenant-a||ns-a."), 30);
	ck_assert_uint_eq(count_prefix(names, n, "tenant-a|shard-7|ns-"), 6);
	names_free(names, n);
	n = list_all(b, 0, 5, &names);
	ck_assert_uint_eq(n, 13);
	ck_assert_uint_eq(count_prefix(names, n, "tenant-a2||ns-"), 13);
	names_free(names, n);
	/* The default namespace shows none of them; all namespaces show all. */
	n = list_all(g_io, 0, 50, &names);
	ck_assert_uint_eq(count_prefix(names, n, "tenant"), 0);
	ck_assert_uint_eq(count_prefix(names, n, "||ns-same"), 1);
	names_free(names, n);
	n = list_all(g_io, CAIRN_LIST_ALL_NS, 50, &names);
	ck_assert_uint_eq(count_prefix(names, n, "tenant-a||ns-a."), 30);
	ck_assert_uint_eq(count_prefix(names, n, "tenant-a2||"), 13);
	ck_assert_uint_eq(count_prefix(names, n, "tenant-a|shard-7|"), 6);
	ck_assert_uint_eq(count_prefix(names, n, "||ns-same"), 1);
	names_free(names, n);
	{
		/* cairn_list: the io's namespace, bare names. */
		struct cairn_list_cursor cur;
		size_t seen = 0;

		memset(&cur, 0, sizeof(cur));
		while (!cur.done) {
			char **nm;
			size_t m;

			ck_assert_int_eq(cairn_list(b, &cur, 3, &nm, &m), 0);
			for (size_t i = 0; i < m; i++)
				seen += !strncmp(nm[i], "ns-", 3);
			cairn_names_free(nm, m);
		}
		ck_assert_uint_eq(seen, 13);
	}

	{
		/* The pool's namespaces, each once ("" the default one). */
		char **nss;
		size_t nn;

		ck_assert_int_eq(cairn_namespace_list(a, &nss, &nn), 0);
		ck_assert_uint_eq(nn, 3);
		ck_assert_str_eq(nss[0], "");
		ck_assert_str_eq(nss[1], "tenant-a");
		ck_assert_str_eq(nss[2], "tenant-a2");
		cairn_names_free(nss, nn);
	}

	/* Limits, and what is refused. */
	memset(longname, 'n', CAIRN_NAME_MAX + 1);
	longname[CAIRN_NAME_MAX + 1] = 0;
	memset(longns, 's', CAIRN_NS_MAX + 1);
	longns[CAIRN_NS_MAX + 1] = 0;
	memset(longkey, 'k', CAIRN_KEY_MAX + 1);
	longkey[CAIRN_KEY_MAX + 1] = 0;
	ck_assert_int_eq(cairn_ioctx_set_namespace(a, longns), -ENAMETOOLONG);
	ck_assert_int_eq(cairn_ioctx_set_locator_key(a, longkey), -ENAMETOOLONG);
	ck_assert_int_eq(cairn_ioctx_set_namespace(a, "a\x1f"
						      "b"),
			 -EINVAL);
	ck_assert_int_eq(cairn_ioctx_set_locator_key(a, "a\x1f"), -EINVAL);
	ck_assert_str_eq(cairn_ioctx_get_namespace(a), "tenant-a"); /* unchanged */
	ck_assert_int_eq(cairn_write_full(a, longname, "x", 1), -ENAMETOOLONG);
	ck_assert_int_eq(cairn_write_full(a,
					  "\x02"
					  "x",
					  "x", 1),
			 -EINVAL);
	longname[CAIRN_NAME_MAX] = 0;
	longns[CAIRN_NS_MAX] = 0;
	longkey[CAIRN_KEY_MAX] = 0;
	for (size_t p = 0; p < 2; p++) {
		cairn_ioctx_t *io;

		ck_assert_int_eq(cairn_ioctx_create(g_cl, pools[p] ? pools[p] : "default", &io), 0);
		ck_assert_int_eq(cairn_ioctx_set_namespace(io, longns), 0);
		ck_assert_int_eq(cairn_ioctx_set_locator_key(io, longkey), 0);
		ck_assert_int_eq(cairn_write_full(io, longname, "long", 4), 0);
		ck_assert_int_eq(cairn_read(io, longname, buf, sizeof(buf), 0), 4);
		n = list_all(io, 0, 10, &names);
		ck_assert_uint_eq(n, 1);
		ck_assert_uint_eq(strlen(names[0]),
				  CAIRN_NS_MAX + CAIRN_KEY_MAX + CAIRN_NAME_MAX + 2);
		names_free(names, n);
		ck_assert_int_eq(cairn_remove(io, longname), 0);
		cairn_ioctx_destroy(io);
	}
	/* An erasure-coded pool keeps namespaces apart too. */
	ck_assert_int_eq(cairn_ioctx_create(g_cl, "ec21", &ec), 0);
	ck_assert_int_eq(cairn_ioctx_set_namespace(ec, "tenant-a"), 0);
	ck_assert_int_eq(cairn_write_full(ec, "ns-ec", "ec-a", 4), 0);
	ck_assert_int_eq(cairn_ioctx_set_namespace(ec, NULL), 0);
	ck_assert_int_eq(cairn_read(ec, "ns-ec", buf, sizeof(buf), 0), -ENOENT);
	ck_assert_int_eq(cairn_ioctx_set_namespace(ec, "tenant-a"), 0);
	ck_assert_int_eq(cairn_read(ec, "ns-ec", buf, sizeof(buf), 0), 4);
	ck_assert_int_eq(cairn_remove(ec, "ns-ec"), 0);
	cairn_ioctx_destroy(ec);
	cairn_ioctx_destroy(a);
	cairn_ioctx_destroy(b);
	cairn_ioctx_destroy(k);
	free(longname);
	free(longns);
	free(longkey);
}

END_TEST

static cairn_cluster_t *
connect_other(void)
{
	struct cairn_opts o;
	cairn_cluster_t *cl;
	char err[256];

	test_opts(&o);
	ck_assert_int_eq(cairn_connect(&o, &cl, err, sizeof(err)), 0);
	return cl;
}

/* Is entity in `osd blocklist ls`? */
static bool
blocklist_lists(const char *entity)
{
	const char *argv[] = { "osd", "blocklist", "ls" };
	char *out, *err;
	bool found;

	ck_assert_int_eq(cairn_mon_command(g_cl, argv, 3, true, &out, &err), 0);
	found = strstr(out, entity) != NULL;
	free(out);
	free(err);
	return found;
}

/*
 * Fencing from the client's side: a blocklisted client's op, held (pause)
 * when the fence came, fails with -EKEYREVOKED and is never applied, and so
 * is everything it submits after; the fencer's writes (behind its epoch
 * barrier) go through; entries are listed, removed, and expire at the
 * leader. (The OSDs' own refusal, for a client that cannot learn of the
 * fence, is partition_test's fence case.)
 */
START_TEST(test_blocklist)
{
	cairn_cluster_t *a = connect_other(), *d = connect_other();
	cairn_ioctx_t *aio, *dio;
	cairn_completion_t *c;
	cairn_op_t *op;
	char name[64], buf[16];
	uint64_t e, size;

	ck_assert_int_eq(cairn_ioctx_create(a, "default", &aio), 0);
	ck_assert_int_eq(cairn_ioctx_create(d, "default", &dio), 0);
	ck_assert_str_ne(cairn_client_name(a), cairn_client_name(g_cl));
	ck_assert_int_eq(cairn_write_full(aio, "fence-obj", "a-1", 3), 0);
	/* A's next write waits (pause) when A is fenced. */
	set_pause(true);
	/* (A's map too: set_pause waits for g_cl's, and A would send the write unpaused) */
	for (int i = 0; i < 200 && cairn_map_epoch(a) < cairn_map_epoch(g_cl); i++)
		usleep(50000);
	ck_assert_uint_ge(cairn_map_epoch(a), cairn_map_epoch(g_cl));
	op = cairn_op_create();
	cairn_op_write_full(op, "a-2", 3);
	c = cairn_completion_create(NULL, NULL);
	ck_assert_int_eq(cairn_aio_operate(aio, "fence-held", op, c), 0);
	snprintf(name, sizeof(name), "%s", cairn_client_name(a));
	ck_assert_int_eq(cairn_blocklist_add(g_cl, name, 600, &e), 0);
	ck_assert_uint_gt(e, 0);
	ck_assert(blocklist_lists(name));
	set_pause(false);
	ck_assert_int_eq(cairn_completion_wait(c), -EKEYREVOKED);
	cairn_completion_release(c);
	cairn_op_release(op);
	/* The fencer writes (its barrier: after the map of the fence). */
	ck_assert_int_eq(cairn_write_full(g_io, "fence-obj", "fencer", 6), 0);
	ck_assert_int_eq(cairn_write_full(aio, "fence-obj", "a-3", 3), -EKEYREVOKED);
	ck_assert_int_eq(cairn_read(aio, "fence-obj", buf, sizeof(buf), 0), -EKEYREVOKED);
	ck_assert_int_eq(cairn_read(g_io, "fence-obj", buf, sizeof(buf), 0), 6);
	ck_assert(!memcmp(buf, "fencer", 6));
	ck_assert_int_eq(cairn_stat(g_io, "fence-held", &size, NULL), -ENOENT);
	/* Removed: no longer listed (A stays fenced: it must connect again). */
	ck_assert_int_eq(cairn_blocklist_rm(g_cl, name), 0);
	ck_assert(!blocklist_lists(name));
	/* Expiry: D for 1 s; the leader drops the entry. */
	snprintf(name, sizeof(name), "%s", cairn_client_name(d));
	ck_assert_int_eq(cairn_blocklist_add(g_cl, name, 1, NULL), 0);
	ck_assert(blocklist_lists(name));
	for (int i = 0; i < 100 && blocklist_lists(name); i++)
		usleep(100000);
	ck_assert_msg(!blocklist_lists(name), "%s still listed 10 s after its 1 s", name);
	/* Bad names are refused by the mons. */
	ck_assert_int_eq(cairn_blocklist_add(g_cl, "has space", 10, NULL), -EINVAL);
	ck_assert_int_eq(cairn_blocklist_add(g_cl, "", 10, NULL), -EINVAL);
	cairn_ioctx_destroy(aio);
	cairn_ioctx_destroy(dio);
	cairn_shutdown(a);
	cairn_shutdown(d);
}

END_TEST

/* A write_full of s guarded by our hold of lock "img" (cookie). */
static int
guarded_write(cairn_ioctx_t *io, const char *oid, const char *cookie, const char *s)
{
	cairn_op_t *op = cairn_op_create();
	int rc;

	cairn_op_assert_locked(op, "img", CAIRN_LOCK_EXCLUSIVE, cookie, NULL);
	cairn_op_write_full(op, s, strlen(s));
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	return rc;
}

/*
 * Locks: exclusive and shared holds by (client, cookie), renewals, guards
 * that refuse a non-holder's write and change nothing, break, expiry, the
 * holders as lock_info reports them, on a replicated and an EC pool.
 */
START_TEST(test_locks)
{
	static const char *const pools[] = { "default", "ec21" };
	cairn_cluster_t *b = connect_other();
	char bname[64], buf[16];

	snprintf(bname, sizeof(bname), "%s", cairn_client_name(b));
	for (size_t p = 0; p < 2; p++) {
		cairn_ioctx_t *ia, *ib;
		struct cairn_lock_info li;
		const char *oid = "lk-obj";

		ck_assert_int_eq(cairn_ioctx_create(g_cl, pools[p], &ia), 0);
		ck_assert_int_eq(cairn_ioctx_create(b, pools[p], &ib), 0);
		/* exclusive */
		ck_assert_int_eq(cairn_lock_exclusive(ia, oid, "img", "c1", "writer A", 0, 0), 0);
		ck_assert_int_eq(cairn_lock_exclusive(ib, oid, "img", "c1", "writer B", 0, 0),
				 -EBUSY);
		ck_assert_int_eq(cairn_lock_shared(ib, oid, "img", "c1", "", "B", 0, 0), -EBUSY);
		ck_assert_int_eq(cairn_lock_exclusive(ia, oid, "img", "c1", "again", 0, 0),
				 -EEXIST);
		ck_assert_int_eq(cairn_lock_exclusive(ia, oid, "img", "c1", "renewed", 60000,
						      CAIRN_LOCK_MAY_RENEW),
				 0);
		ck_assert_int_eq(
			cairn_lock_exclusive(ib, oid, "img", "c2", "", 0, CAIRN_LOCK_MUST_RENEW),
			-ENOENT);
		ck_assert_int_eq(cairn_lock_get_info(ia, oid, "img", &li), 0);
		ck_assert_int_eq(li.type, CAIRN_LOCK_EXCLUSIVE);
		ck_assert_uint_eq(li.n, 1);
		ck_assert_str_eq(li.lockers[0].entity, cairn_client_name(g_cl));
		ck_assert_str_eq(li.lockers[0].cookie, "c1");
		ck_assert_str_eq(li.lockers[0].description, "renewed");
		ck_assert_uint_gt(li.lockers[0].expires_ns, 0);
		cairn_lock_info_free(&li);
		/* guards: the holder writes, another is refused and changes nothing */
		ck_assert_int_eq(guarded_write(ia, oid, "c1", "by-A"), 0);
		ck_assert_int_eq(guarded_write(ib, oid, "c1", "by-B"), -EBUSY);
		ck_assert_int_eq(guarded_write(ia, oid, "c9", "by-A-other-cookie"), -EBUSY);
		ck_assert_int_eq(cairn_read(ib, oid, buf, sizeof(buf), 0), 4);
		ck_assert(!memcmp(buf, "by-A", 4));
		/* a user xattr listing does not show the lock */
		{
			struct cairn_kv *kvs;
			size_t n;
			cairn_op_t *op = cairn_op_create();

			cairn_op_getxattrs(op, &kvs, &n, NULL);
			ck_assert_int_eq(cairn_operate(ia, oid, op, NULL), 0);
			ck_assert_uint_eq(n, 0);
			cairn_kvs_free(kvs, n);
			cairn_op_release(op);
		}
		ck_assert_int_eq(cairn_unlock(ib, oid, "img", "c1"), -ENOENT); /* not B's */
		ck_assert_int_eq(cairn_unlock(ia, oid, "img", "c1"), 0);
		ck_assert_int_eq(cairn_unlock(ia, oid, "img", "c1"), -ENOENT);
		/* shared, by tag */
		ck_assert_int_eq(cairn_lock_shared(ia, oid, "img", "c1", "t", "A", 0, 0), 0);
		ck_assert_int_eq(cairn_lock_shared(ib, oid, "img", "c2", "t", "B", 0, 0), 0);
		ck_assert_int_eq(cairn_lock_shared(ib, oid, "img", "c3", "u", "B", 0, 0), -EBUSY);
		ck_assert_int_eq(cairn_lock_exclusive(ia, oid, "img", "c9", "", 0, 0), -EBUSY);
		ck_assert_int_eq(cairn_lock_get_info(ia, oid, "img", &li), 0);
		ck_assert_int_eq(li.type, CAIRN_LOCK_SHARED);
		ck_assert_str_eq(li.tag, "t");
		ck_assert_uint_eq(li.n, 2);
		cairn_lock_info_free(&li);
		/* break B's hold (an admin, or a takeover) */
		ck_assert_int_eq(cairn_break_lock(ia, oid, "img", bname, "c2"), 0);
		ck_assert_int_eq(cairn_break_lock(ia, oid, "img", bname, "c2"), -ENOENT);
		ck_assert_int_eq(cairn_unlock(ia, oid, "img", "c1"), 0);
		ck_assert_int_eq(cairn_lock_get_info(ia, oid, "img", &li), 0);
		ck_assert_int_eq(li.type, 0);
		ck_assert_uint_eq(li.n, 0);
		cairn_lock_info_free(&li);
		/* expiry: B's 800 ms hold lapses (shown, marked, until someone locks) */
		ck_assert_int_eq(cairn_lock_exclusive(ib, oid, "exp", "c", "", 800, 0), 0);
		ck_assert_int_eq(cairn_lock_exclusive(ia, oid, "exp", "c", "", 0, 0), -EBUSY);
		usleep(1000000);
		ck_assert_int_eq(cairn_lock_get_info(ia, oid, "exp", &li), 0);
		ck_assert_uint_eq(li.n, 1);
		ck_assert(li.lockers[0].expired);
		ck_assert_str_eq(li.lockers[0].entity, bname);
		cairn_lock_info_free(&li);
		ck_assert_int_eq(cairn_lock_exclusive(ia, oid, "exp", "c", "", 0, 0), 0);
		ck_assert_int_eq(cairn_lock_get_info(ia, oid, "exp", &li), 0);
		ck_assert_uint_eq(li.n, 1);
		ck_assert_str_eq(li.lockers[0].entity, cairn_client_name(g_cl));
		cairn_lock_info_free(&li);
		/* the longest names (stored as "L" + 255 and "_" + 255 bytes) */
		{
			char nm[257], got[4];
			size_t gl = 0;
			int grv = -1;
			cairn_op_t *op = cairn_op_create();

			memset(nm, 'n', 256);
			nm[256] = 0;
			ck_assert_int_eq(cairn_lock_exclusive(ia, oid, nm, "c", "", 0, 0), -EINVAL);
			nm[255] = 0;
			ck_assert_int_eq(cairn_lock_exclusive(ia, oid, nm, "c", "", 0, 0), 0);
			ck_assert_int_eq(cairn_lock_get_info(ia, oid, nm, &li), 0);
			ck_assert_uint_eq(li.n, 1);
			cairn_lock_info_free(&li);
			ck_assert_int_eq(cairn_unlock(ia, oid, nm, "c"), 0);
			cairn_op_setxattr(op, nm, "v", 1);
			ck_assert_int_eq(cairn_operate(ia, oid, op, NULL), 0);
			cairn_op_release(op);
			op = cairn_op_create();
			cairn_op_getxattr(op, nm, got, sizeof(got), &gl, &grv);
			ck_assert_int_eq(cairn_operate(ia, oid, op, NULL), 0);
			ck_assert_int_eq(grv, 0);
			ck_assert_uint_eq(gl, 1);
			ck_assert_int_eq(got[0], 'v');
			cairn_op_release(op);
		}
		/* bad requests */
		ck_assert_int_eq(cairn_lock_get_info(ia, "lk-none", "img", &li), -ENOENT);
		ck_assert_int_eq(cairn_unlock(ia, oid, "", "c"), -EINVAL);
		ck_assert_int_eq(cairn_remove(ia, oid), 0);
		cairn_ioctx_destroy(ia);
		cairn_ioctx_destroy(ib);
	}
	cairn_shutdown(b);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("libcairn");
	TCase *tc = tcase_create("cluster");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_guards_are_atomic);
	tcase_add_test(tc, test_subops);
	tcase_add_test(tc, test_async_and_list);
	tcase_add_test(tc, test_release_in_flight);
	tcase_add_test(tc, test_throttle);
	tcase_add_test(tc, test_completion_queue);
	tcase_add_test(tc, test_shutdown_completes);
	tcase_add_test(tc, test_io_threads);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_too_large);
	tcase_add_test(tc, test_methods);
	tcase_add_test(tc, test_cmpext);
	tcase_add_test(tc, test_admin);
	tcase_add_test(tc, test_cancel_and_deadline);
	tcase_add_test(tc, test_namespaces);
	tcase_add_test(tc, test_blocklist);
	tcase_add_test(tc, test_locks);
	tcase_add_test(tc, test_watch_notify);
	tcase_add_test(tc, test_services);
	tcase_add_test(tc, test_mds_map);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
