/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The object store on a preallocated file (and once on a raw block device,
 * a loop device over a file): every transaction op and read op,
 * errors, persistence across remounts, checksums (a flipped byte on the
 * device reads as -EIO and fsck --deep names the object), and a full device
 * (-ENOSPC with nothing changed, then delete and write again). Each test
 * ends with fsck.
 */
#include "os/alloc.h"
#include "os/store.h"
#include "cm/crc32c.h"
#include "cm/log.h"
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char g_dir[64], g_dev[96];
static char g_db[128]; /* the metadata's place when not "<g_dev>.db" (a block device's) */
static struct cm_reactor *g_r;
static struct os_store *g_s;

static void
make_dev(uint64_t size)
{
	int fd;

	snprintf(g_dir, sizeof(g_dir), "/tmp/cairn-store-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
	snprintf(g_dev, sizeof(g_dev), "%s/block", g_dir);
	fd = open(g_dev, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(posix_fallocate(fd, 0, (off_t)size), 0);
	close(fd);
}

static void
opts(struct os_opts *o)
{
	os_opts_init(o, sizeof(*o));
	o->path = g_dev;
	o->db_path = g_db[0] ? g_db : NULL;
	o->fsid = "test-fsid";
	o->osd_id = 3;
	/*
	 * The epoll run writes each journal record and then fsyncs, the
	 * io_uring one uses RWF_DSYNC records where the device allows them.
	 */
	o->no_dsync = getenv("CAIRN_REACTOR") && !strcmp(getenv("CAIRN_REACTOR"), "epoll");
}

static void
mount_store(void)
{
	struct os_opts o;

	opts(&o);
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
}

static void
setup_size(uint64_t size)
{
	struct os_opts o;

	cm_log_set_level(CM_LOG_ERR);
	make_dev(size);
	opts(&o);
	ck_assert_int_eq(os_mkfs(&o), 0);
	ck_assert_int_eq(os_mkfs(&o), -EEXIST);
	g_r = cm_test_reactor();
	mount_store();
}

static void
setup(void)
{
	setup_size(256ull << 20);
}

static void
fsck_clean(bool deep)
{
	struct os_fsck_report rep;

	ck_assert_int_eq(os_fsck(g_s, deep, &rep), 0);
	ck_assert_msg(rep.errors == 0, "fsck: %" PRIu64 " errors, first: %s", rep.errors,
		      rep.first_error);
}

static void
teardown(void)
{
	char cmd[128];

	if (g_s) {
		fsck_clean(true);
		os_umount(g_s);
		g_s = NULL;
	}
	cm_reactor_destroy(g_r);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	ck_assert_int_eq(system(cmd), 0);
}

struct done {
	bool done;
	int rc;
	struct cm_buf *buf;
};

static void
commit_cb(void *arg, int rc)
{
	struct done *d = arg;

	d->rc = rc;
	d->done = true;
}

static int
apply(struct os_txn *t)
{
	struct done d = { 0 };

	os_queue(g_s, t, commit_cb, &d);
	ck_assert(cm_test_run_until(g_r, &d.done, 30000));
	return d.rc;
}

static void
read_cb(void *arg, int rc, struct cm_buf *b)
{
	struct done *d = arg;

	d->rc = rc;
	d->buf = b;
	d->done = true;
}

/* Read; returns rc, *out the data (caller puts). */
static int
rd(const char *oid, uint64_t off, uint64_t len, struct cm_buf **out)
{
	struct done d = { 0 };

	os_read(g_s, "c", oid, off, len, read_cb, &d);
	ck_assert(cm_test_run_until(g_r, &d.done, 30000));
	*out = d.buf;
	return d.rc;
}

static struct os_txn *
txn(void)
{
	struct os_txn *t;

	ck_assert_int_eq(os_txn_create(&t), 0);
	return t;
}

static void
mkcoll(void)
{
	struct os_txn *t = txn();

	ck_assert_int_eq(os_txn_mkcoll(t, "c"), 0);
	ck_assert_int_eq(apply(t), 0);
}

static void
write_obj(const char *oid, uint64_t off, const void *data, size_t len)
{
	struct os_txn *t = txn();

	ck_assert_int_eq(os_txn_write(t, "c", oid, off, data, len), 0);
	ck_assert_int_eq(apply(t), 0);
}

/* The object's bytes equal model[0, size). */
static void
check_obj(const char *oid, const uint8_t *model, uint64_t size)
{
	struct cm_buf *b;
	struct os_stat st;

	ck_assert_int_eq(rd(oid, 0, size + 12345, &b), 0);
	ck_assert_uint_eq(b->len, size);
	ck_assert_msg(memcmp(b->data, model, size) == 0, "%s differs from the model", oid);
	cm_buf_put(b);
	ck_assert_int_eq(os_stat(g_s, "c", oid, &st), 0);
	ck_assert_uint_eq(st.size, size);
}

START_TEST(test_write_read_patterns)
{
	static uint8_t model[1 << 20], data[600000];
	uint64_t size = 0;
	uint64_t seed = 42;
	struct os_usage u;

	mkcoll();
	/* Random writes: unaligned, small (deferred once allocated) and large (COW). */
	for (int i = 0; i < 120; i++) {
		uint64_t off, len;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		off = (seed >> 20) % (sizeof(model) - sizeof(data));
		len = i % 3 == 0 ? (seed >> 40) % sizeof(data) : (seed >> 40) % 9000;
		cm_test_fill(data, len, seed);
		write_obj("obj", off, data, len);
		memcpy(model + off, data, len);
		size = CM_MAX(size, off + len);
		if (i % 10 == 0)
			check_obj("obj", model, size);
	}
	check_obj("obj", model, size);
	os_get_usage(g_s, &u);
	ck_assert_uint_gt(u.deferred_writes, 10);
	ck_assert_uint_gt(u.cow_writes, 10);
	/* The same after a remount (deferred writes applied or replayed). */
	os_umount(g_s);
	mount_store();
	check_obj("obj", model, size);
}

END_TEST

/*
 * Writes queued back to back, none waiting for the one before: an unaligned
 * edge of a later write reads its block from an earlier write's data that is
 * not on the device yet (the pending map), across the map's 1 MiB spans.
 */
START_TEST(test_pipelined_writes)
{
	enum { NW = 60 };

	static uint8_t model[4 << 20], data[NW][3 << 20];
	struct done d[NW] = { { 0 } };
	uint64_t size = 0, seed = 7;

	mkcoll();
	for (int i = 0; i < NW; i++) {
		struct os_txn *t = txn();
		uint64_t off, len;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		len = i % 2 ? (seed >> 40) % sizeof(data[0]) : (seed >> 40) % 6000;
		off = (seed >> 16) % (sizeof(model) - len);
		cm_test_fill(data[i], len, seed);
		ck_assert_int_eq(os_txn_write(t, "c", "p", off, data[i], len), 0);
		os_queue(g_s, t, commit_cb, &d[i]);
		memcpy(model + off, data[i], len);
		size = CM_MAX(size, off + len);
	}
	for (int i = 0; i < NW; i++) {
		ck_assert(cm_test_run_until(g_r, &d[i].done, 30000));
		ck_assert_int_eq(d[i].rc, 0);
	}
	check_obj("p", model, size);
	os_umount(g_s);
	mount_store();
	check_obj("p", model, size);
}

END_TEST

/*
 * Transactions that need nothing from the disk are prepared on the reactor;
 * one that does (an onode or a block not cached: here after a remount, a
 * partial-block overwrite) goes to the prepare thread, and so do those
 * queued behind it while it is there, so order holds across the switch.
 */
START_TEST(test_prepare_inline_and_on_thread)
{
	static uint8_t model[8192], x[100], z[4096], n[4096];
	struct done d[3] = { { 0 } };
	struct os_usage u0, u1, u2;
	struct os_txn *t;

	mkcoll();
	cm_test_fill(model, sizeof(model), 1);
	os_get_usage(g_s, &u0);
	write_obj("q", 0, model, sizeof(model));
	os_get_usage(g_s, &u1);
	ck_assert_uint_eq(u1.prepared_inline - u0.prepared_inline, 1);
	ck_assert_uint_eq(u1.prepare_retries - u0.prepare_retries, 0);
	os_umount(g_s);
	mount_store();
	os_get_usage(g_s, &u0);
	cm_test_fill(x, sizeof(x), 2);
	cm_test_fill(z, sizeof(z), 3);
	cm_test_fill(n, sizeof(n), 4);
	t = txn(); /* must read block 0 and q's onode: not cached after the remount */
	ck_assert_int_eq(os_txn_write(t, "c", "q", 10, x, sizeof(x)), 0);
	os_queue(g_s, t, commit_cb, &d[0]);
	t = txn(); /* a whole block of q: it must land after the one above */
	ck_assert_int_eq(os_txn_write(t, "c", "q", 0, z, sizeof(z)), 0);
	os_queue(g_s, t, commit_cb, &d[1]);
	t = txn();
	ck_assert_int_eq(os_txn_write(t, "c", "new", 0, n, sizeof(n)), 0);
	os_queue(g_s, t, commit_cb, &d[2]);
	for (int i = 0; i < 3; i++) {
		ck_assert(cm_test_run_until(g_r, &d[i].done, 30000));
		ck_assert_int_eq(d[i].rc, 0);
	}
	os_get_usage(g_s, &u1);
	ck_assert_uint_eq(u1.prepare_retries - u0.prepare_retries, 1);
	ck_assert_uint_eq(u1.prepared_inline - u0.prepared_inline, 0);
	memcpy(model, z, sizeof(z));
	check_obj("q", model, sizeof(model));
	check_obj("new", n, sizeof(n));
	/* The thread is idle again: the next one is prepared inline. */
	write_obj("new2", 0, n, 100);
	os_get_usage(g_s, &u2);
	ck_assert_uint_eq(u2.prepared_inline - u1.prepared_inline, 1);
	check_obj("new2", n, 100);
	fsck_clean(true);
}

END_TEST

/*
 * An OSD's other PG shards queue transactions and reads from their own
 * reactors: each reaches the store's reactor (here the test thread's), and
 * every callback comes back on the caller's reactor, in the caller's order.
 */
enum { XR_N = 24 };

struct xr {
	struct cm_reactor *r;
	pthread_t th;
	atomic_bool done;
	int commits, reads, bad_thread, bad_order, bad_data;
	uint8_t data[XR_N][2][9000];
	size_t len[XR_N][2];
	int committed[XR_N]; /* commits seen per object, in order */
};

struct xr_op {
	struct xr *x;
	int obj, gen;
};

static struct xr_op g_xr_ops[XR_N][2];

static void
xr_read_cb(void *arg, int rc, struct cm_buf *b, const struct os_read_meta *m)
{
	struct xr_op *op = arg;
	struct xr *x = op->x;

	if (cm_reactor_self() != x->r || !pthread_equal(pthread_self(), x->th))
		x->bad_thread++;
	if (rc || !b || b->len != x->len[op->obj][1] ||
	    memcmp(b->data, x->data[op->obj][1], b->len) != 0 || m->size != b->len ||
	    !m->has_attr || m->attr_len != 4 || memcmp(m->attr, x->data[op->obj][1], 4) != 0)
		x->bad_data++;
	cm_buf_put(b);
	if (++x->reads == XR_N)
		cm_reactor_stop(x->r);
}

static void
xr_commit_cb(void *arg, int rc)
{
	struct xr_op *op = arg;
	struct xr *x = op->x;

	if (cm_reactor_self() != x->r || !pthread_equal(pthread_self(), x->th))
		x->bad_thread++;
	if (rc)
		x->bad_data++;
	if (x->committed[op->obj]++ != op->gen)
		x->bad_order++;
	x->commits++;
	if (op->gen == 1) { /* both writes are in: read the second back */
		char oid[16];

		snprintf(oid, sizeof(oid), "x%d", op->obj);
		os_read_meta(g_s, "c", oid, 0, 1 << 20, "a", xr_read_cb, op);
	}
}

static void
xr_start(void *arg)
{
	struct xr *x = arg;

	for (int i = 0; i < XR_N; i++)
		for (int g = 0; g < 2; g++) {
			struct os_txn *t = txn();
			char oid[16];

			snprintf(oid, sizeof(oid), "x%d", i);
			g_xr_ops[i][g] = (struct xr_op){ .x = x, .obj = i, .gen = g };
			if (g == 1) {
				ck_assert_int_eq(os_txn_truncate(t, "c", oid, 0), 0);
				ck_assert_int_eq(os_txn_setattr(t, "c", oid, "a", x->data[i][1], 4),
						 0);
			}
			ck_assert_int_eq(os_txn_write(t, "c", oid, 0, x->data[i][g], x->len[i][g]),
					 0);
			os_queue(g_s, t, xr_commit_cb, &g_xr_ops[i][g]);
		}
}

static void *
xr_main(void *arg)
{
	struct xr *x = arg;

	cm_reactor_run(x->r);
	atomic_store(&x->done, true);
	return NULL;
}

START_TEST(test_queue_from_other_reactor)
{
	static struct xr x;
	struct cm_reactor_opts ro;
	bool done = false;

	memset(&x, 0, sizeof(x));
	mkcoll();
	for (int i = 0; i < XR_N; i++)
		for (int g = 0; g < 2; g++) {
			x.len[i][g] = 4 + (size_t)(i * 379 + g * 4111) % (sizeof(x.data[i][g]) - 4);
			cm_test_fill(x.data[i][g], x.len[i][g], (uint64_t)(i * 2 + g + 1));
		}
	cm_reactor_opts_init(&ro, sizeof(ro));
	ro.name = "shard";
	ck_assert_int_eq(cm_reactor_create(&ro, &x.r), 0);
	ck_assert_int_eq(pthread_create(&x.th, NULL, xr_main, &x), 0);
	ck_assert_int_eq(cm_reactor_send_msg(x.r, xr_start, &x), 0);
	for (int i = 0; i < 3000 && !atomic_load(&x.done); i++)
		cm_test_run_until(g_r, &done, 10);
	ck_assert(atomic_load(&x.done));
	pthread_join(x.th, NULL);
	cm_reactor_destroy(x.r);
	ck_assert_int_eq(x.commits, 2 * XR_N);
	ck_assert_int_eq(x.reads, XR_N);
	ck_assert_int_eq(x.bad_thread, 0);
	ck_assert_int_eq(x.bad_order, 0);
	ck_assert_int_eq(x.bad_data, 0);
	for (int i = 0; i < XR_N; i++) {
		char oid[16];

		snprintf(oid, sizeof(oid), "x%d", i);
		check_obj(oid, x.data[i][1], x.len[i][1]);
	}
}

END_TEST

struct mdone {
	bool done;
	int rc;
	struct cm_buf *buf;
	uint64_t size;
	bool has;
	uint8_t val[32];
	size_t vlen;
};

static void
meta_cb(void *arg, int rc, struct cm_buf *b, const struct os_read_meta *m)
{
	struct mdone *d = arg;

	d->rc = rc;
	d->buf = b;
	d->size = m->size;
	d->has = m->has_attr;
	d->vlen = m->attr_len;
	if (m->has_attr && m->attr_len <= sizeof(d->val))
		memcpy(d->val, m->attr, m->attr_len);
	d->done = true;
}

static struct mdone
rd_meta(const char *oid, uint64_t off, uint64_t len, const char *attr)
{
	struct mdone d = { 0 };

	os_read_meta(g_s, "c", oid, off, len, attr, meta_cb, &d);
	ck_assert(cm_test_run_until(g_r, &d.done, 30000));
	return d;
}

/* os_read_meta: the data, the size and one xattr from the same state. */
START_TEST(test_read_meta)
{
	struct os_txn *t;
	struct mdone d;

	mkcoll();
	t = txn();
	ck_assert_int_eq(os_txn_write(t, "c", "m", 0, "0123456789", 10), 0);
	ck_assert_int_eq(os_txn_setattr(t, "c", "m", "v", "sixteen bytes!!!", 16), 0);
	ck_assert_int_eq(apply(t), 0);
	d = rd_meta("m", 2, UINT64_MAX, "v");
	ck_assert_int_eq(d.rc, 0);
	ck_assert_uint_eq(d.size, 10);
	ck_assert_uint_eq(d.buf->len, 8);
	ck_assert(memcmp(d.buf->data, "23456789", 8) == 0);
	ck_assert(d.has && d.vlen == 16 && memcmp(d.val, "sixteen bytes!!!", 16) == 0);
	cm_buf_put(d.buf);
	d = rd_meta("m", 20, 5, "nope"); /* past the end; no such xattr */
	ck_assert_int_eq(d.rc, 0);
	ck_assert_uint_eq(d.size, 10);
	ck_assert_uint_eq(d.buf->len, 0);
	ck_assert(!d.has);
	cm_buf_put(d.buf);
	t = txn(); /* a later change is what the next read reports */
	ck_assert_int_eq(os_txn_truncate(t, "c", "m", 4), 0);
	ck_assert_int_eq(os_txn_setattr(t, "c", "m", "v", "x", 1), 0);
	ck_assert_int_eq(apply(t), 0);
	d = rd_meta("m", 0, 100, "v");
	ck_assert_int_eq(d.rc, 0);
	ck_assert_uint_eq(d.size, 4);
	ck_assert_uint_eq(d.buf->len, 4);
	ck_assert(d.has && d.vlen == 1 && d.val[0] == 'x');
	cm_buf_put(d.buf);
	d = rd_meta("absent", 0, 100, "v");
	ck_assert_int_eq(d.rc, -ENOENT);
	ck_assert_ptr_null(d.buf);
	ck_assert(!d.has && d.size == 0);
}

END_TEST

/*
 * With the journal a round is called back once its record is durable,
 * before the commit thread has put it into RocksDB's memtable. Every read
 * after the callback still sees it: onode fetches for reads (the onode not
 * in the read cache, which holds one here) and metadata reads, which read
 * RocksDB, wait for the memtable. The commit thread is held back 100 ms per
 * round so the reads come first; kv_gate_waits shows they waited.
 */
START_TEST(test_ack_before_memtable)
{
	static uint8_t a[3 * 4096 + 100], b[5000];
	struct os_opts o;
	struct os_usage u0, u1, u2;
	struct os_txn *t;
	struct os_stat st;
	struct os_kv kv, key = { .key = (uint8_t *)"ok", .klen = 2 }, out;
	struct cm_buf *buf;
	char **names;
	size_t n;
	bool more;

	os_umount(g_s);
	opts(&o);
	o.test_kv_delay_us = 100000;
	o.cache_onodes = 1;
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
	cm_test_fill(a, sizeof(a), 31);
	cm_test_fill(b, sizeof(b), 32);
	os_get_usage(g_s, &u0);
	t = txn();
	ck_assert_int_eq(os_txn_mkcoll(t, "c"), 0);
	ck_assert_int_eq(os_txn_write(t, "c", "x", 0, a, sizeof(a)), 0);
	ck_assert_int_eq(os_txn_write(t, "c", "y", 0, b, sizeof(b)), 0);
	ck_assert_int_eq(os_txn_setattr(t, "c", "x", "k", "v1", 2), 0);
	ck_assert_int_eq(os_txn_omap_set(t, "c", "x", "ok", 2, "ov1", 3), 0);
	ck_assert_int_eq(apply(t), 0);
	/* Data first: one of the two onodes is not in the read cache. */
	ck_assert_int_eq(rd("x", 0, sizeof(a), &buf), 0);
	ck_assert(buf->len == sizeof(a) && memcmp(buf->data, a, sizeof(a)) == 0);
	cm_buf_put(buf);
	ck_assert_int_eq(rd("y", 0, sizeof(b), &buf), 0);
	ck_assert(buf->len == sizeof(b) && memcmp(buf->data, b, sizeof(b)) == 0);
	cm_buf_put(buf);
	os_get_usage(g_s, &u1);
	ck_assert_uint_gt(u1.kv_gate_waits, u0.kv_gate_waits);
	check_obj("y", b, sizeof(b));
	/* A change of all of it; then metadata reads first. */
	memset(a + 4096, 0x5a, 5000); /* in place, through the KV */
	t = txn();
	ck_assert_int_eq(os_txn_write(t, "c", "x", 4096, a + 4096, 5000), 0);
	ck_assert_int_eq(os_txn_setattr(t, "c", "x", "k", "v2", 2), 0);
	ck_assert_int_eq(os_txn_omap_set(t, "c", "x", "ok", 2, "ov2", 3), 0);
	ck_assert_int_eq(os_txn_remove(t, "c", "y"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_int_eq(os_stat(g_s, "c", "y", &st), -ENOENT);
	ck_assert_int_eq(os_getattr(g_s, "c", "x", "k", &kv), 0);
	ck_assert(kv.vlen == 2 && memcmp(kv.val, "v2", 2) == 0);
	free(kv.key);
	free(kv.val);
	ck_assert_int_eq(os_omap_get(g_s, "c", "x", &key, 1, &out), 0);
	ck_assert(out.vlen == 3 && memcmp(out.val, "ov2", 3) == 0);
	free(out.key);
	free(out.val);
	ck_assert_int_eq(os_list(g_s, "c", NULL, 10, &names, &n, &more), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(names[0], "x");
	os_names_free(names, n);
	os_get_usage(g_s, &u2);
	ck_assert_uint_gt(u2.kv_gate_waits, u1.kv_gate_waits);
	check_obj("x", a, sizeof(a));
}

END_TEST

/*
 * A journaled round's memtable insert fails after the round was called back
 * (a RocksDB error; injected here): reads of it and of every later round
 * fail with -EIO, never answer without it — a later round that did reach the
 * memtable must not open the gate past the broken one — and after a
 * remount both transactions are there (the journal replays them).
 */
/* cm_test_run_until_fn: the store's commit rounds have called back arg transactions. */
static bool
commits_reach(void *arg)
{
	struct os_usage u;

	os_get_usage(g_s, &u);
	return u.commits >= (uintptr_t)arg;
}

START_TEST(test_memtable_failure)
{
	static uint8_t a[8192], b[4096];
	struct os_opts o;
	struct os_txn *t;
	struct os_stat st;
	struct os_kv key = { .key = (uint8_t *)"k", .klen = 1 }, out;
	struct cm_buf *buf = NULL;
	int r;

	os_umount(g_s);
	opts(&o);
	o.test_kv_delay_us = 200000;
	o.test_kv_fail_txn = 2; /* the mkcoll's insert, then A's */
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
	mkcoll();
	cm_test_fill(a, sizeof(a), 41);
	cm_test_fill(b, sizeof(b), 42);
	/* A, then B: each called back once its record is durable, long before
	 * the commit thread (200 ms per round) has it in the memtable. */
	t = txn();
	ck_assert_int_eq(os_txn_write(t, "c", "a", 0, a, sizeof(a)), 0);
	ck_assert_int_eq(os_txn_omap_set(t, "c", "a", "k", 1, "va", 2), 0);
	ck_assert_int_eq(apply(t), 0);
	write_obj("b", 0, b, sizeof(b));
	/* Reads after the commit thread has been through both (B's insert went in). */
	ck_assert(cm_test_run_until_fn(g_r, commits_reach, (void *)(uintptr_t)3, 30000));
	ck_assert_int_eq(os_stat(g_s, "c", "a", &st), -EIO);
	ck_assert_int_eq(os_stat(g_s, "c", "b", &st), -EIO);
	ck_assert_int_eq(os_omap_get(g_s, "c", "a", &key, 1, &out), -EIO);
	/* Data reads may be served from the read cache, which has the called-back round. */
	r = rd("b", 0, sizeof(b), &buf);
	ck_assert_msg(r == -EIO || (r == 0 && buf->len == sizeof(b) &&
				    memcmp(buf->data, b, sizeof(b)) == 0),
		      "read of b: %d", r);
	if (buf)
		cm_buf_put(buf);
	t = txn();
	ck_assert_int_eq(os_txn_touch(t, "c", "z"), 0);
	ck_assert_int_eq(apply(t), -EIO); /* the store refuses more */
	os_umount(g_s);
	g_s = NULL;
	mount_store();
	check_obj("a", a, sizeof(a));
	check_obj("b", b, sizeof(b));
	ck_assert_int_eq(os_stat(g_s, "c", "z", &st), -ENOENT);
	ck_assert_int_eq(os_omap_get(g_s, "c", "a", &key, 1, &out), 0);
	ck_assert(out.val && out.vlen == 2 && memcmp(out.val, "va", 2) == 0);
	free(out.key);
	free(out.val);
	fsck_clean(true);
}

END_TEST

/*
 * The data cache serves blocks read before, and never one a write has
 * changed since: in-place (deferred) overwrites, copy-on-write overwrites,
 * and blocks freed and given to another object.
 */
START_TEST(test_data_cache)
{
	static uint8_t a[256 << 10], b[256 << 10], c[1 << 20];
	struct os_usage u0, u1;
	struct os_txn *t;

	mkcoll();
	cm_test_fill(a, sizeof(a), 21);
	write_obj("a", 0, a, sizeof(a));
	check_obj("a", a, sizeof(a)); /* from the device: cached */
	os_get_usage(g_s, &u0);
	check_obj("a", a, sizeof(a)); /* from the cache */
	os_get_usage(g_s, &u1);
	ck_assert_uint_ge(u1.cache_hits - u0.cache_hits, sizeof(a) / 4096);
	ck_assert_uint_ge(u1.cache_bytes, sizeof(a));
	for (int round = 0; round < 20; round++) {
		uint64_t off = (uint64_t)round * 12289 % (sizeof(a) - 9000);
		size_t len = round % 2 ? 9000 : 100; /* in place, through the KV */

		cm_test_fill(a + off, len, 100 + (uint64_t)round);
		write_obj("a", off, a + off, len);
		check_obj("a", a, sizeof(a));
	}
	/* Copy-on-write over all of it, then the freed blocks go to "b". */
	cm_test_fill(a, sizeof(a), 22);
	write_obj("a", 0, a, sizeof(a));
	check_obj("a", a, sizeof(a));
	cm_test_fill(b, sizeof(b), 23);
	write_obj("b", 0, b, sizeof(b));
	cm_test_fill(c, sizeof(c), 24);
	write_obj("c", 0, c, sizeof(c));
	check_obj("a", a, sizeof(a));
	check_obj("b", b, sizeof(b));
	check_obj("c", c, sizeof(c));
	t = txn(); /* removed, and its blocks rewritten by another object */
	ck_assert_int_eq(os_txn_remove(t, "c", "c"), 0);
	ck_assert_int_eq(apply(t), 0);
	os_umount(g_s);
	mount_store(); /* frees held until now are released */
	check_obj("b", b, sizeof(b));
	cm_test_fill(c, sizeof(c), 25);
	write_obj("d", 0, c, sizeof(c));
	check_obj("d", c, sizeof(c));
	check_obj("a", a, sizeof(a));
	check_obj("b", b, sizeof(b));
}

END_TEST

/* Block-aligned reads land straight in the result: holes and mapped blocks in their places. */
START_TEST(test_aligned_reads_with_holes)
{
	uint8_t model[40960] = { 0 }, blk[4096];
	struct cm_buf *b;

	mkcoll();
	cm_test_fill(blk, sizeof(blk), 11);
	write_obj("h", 5 * 4096, blk, sizeof(blk));
	memcpy(model + 5 * 4096, blk, sizeof(blk));
	cm_test_fill(blk, sizeof(blk), 12);
	write_obj("h", 9 * 4096, blk, sizeof(blk));
	memcpy(model + 9 * 4096, blk, sizeof(blk));
	ck_assert_int_eq(rd("h", 0, sizeof(model), &b), 0);
	ck_assert_uint_eq(b->len, sizeof(model));
	ck_assert(memcmp(b->data, model, sizeof(model)) == 0);
	cm_buf_put(b);
	ck_assert_int_eq(rd("h", 4096, 8192, &b), 0); /* a hole, then a block */
	ck_assert(memcmp(b->data, model + 4096, 8192) == 0);
	cm_buf_put(b);
	ck_assert_int_eq(rd("h", 9 * 4096, 4096, &b), 0);
	ck_assert(memcmp(b->data, model + 9 * 4096, 4096) == 0);
	cm_buf_put(b);
}

END_TEST

START_TEST(test_zero_truncate_remove)
{
	uint8_t model[40000], buf[40000];
	struct cm_buf *b;
	struct os_txn *t;

	mkcoll();
	cm_test_fill(model, sizeof(model), 7);
	write_obj("o", 0, model, sizeof(model));
	/* zero: unaligned edges and whole blocks in between. */
	t = txn();
	ck_assert_int_eq(os_txn_zero(t, "c", "o", 1000, 20000), 0);
	ck_assert_int_eq(apply(t), 0);
	memset(model + 1000, 0, 20000);
	check_obj("o", model, sizeof(model));
	/* truncate down to mid-block, then up: the gap reads as zeros. */
	t = txn();
	ck_assert_int_eq(os_txn_truncate(t, "c", "o", 5000), 0);
	ck_assert_int_eq(os_txn_truncate(t, "c", "o", 30000), 0);
	ck_assert_int_eq(apply(t), 0);
	memcpy(buf, model, 5000);
	memset(buf + 5000, 0, sizeof(buf) - 5000);
	check_obj("o", buf, 30000);
	/* Writing past the end leaves a hole of zeros. */
	write_obj("o", 35000, "tail", 4);
	memcpy(buf + 35000, "tail", 4);
	memset(buf + 30000, 0, 5000);
	check_obj("o", buf, 35004);
	ck_assert_int_eq(rd("o", 40000, 10, &b), 0);
	ck_assert_uint_eq(b->len, 0);
	cm_buf_put(b);
	/* remove, and the errors of a missing object. */
	t = txn();
	ck_assert_int_eq(os_txn_remove(t, "c", "o"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_int_eq(rd("o", 0, 10, &b), -ENOENT);
	t = txn();
	ck_assert_int_eq(os_txn_remove(t, "c", "o"), 0);
	ck_assert_int_eq(apply(t), -ENOENT);
	/* A failed transaction changes nothing: the write before the bad op is not applied. */
	t = txn();
	ck_assert_int_eq(os_txn_write(t, "c", "new", 0, "abc", 3), 0);
	ck_assert_int_eq(os_txn_rmattr(t, "c", "missing", "x"), 0);
	ck_assert_int_eq(apply(t), -ENOENT);
	ck_assert_int_eq(rd("new", 0, 10, &b), -ENOENT);
	t = txn();
	ck_assert_int_eq(os_txn_write(t, "nocoll", "x", 0, "abc", 3), 0);
	ck_assert_int_eq(apply(t), -ENOENT);
}

END_TEST

START_TEST(test_collections_and_listing)
{
	struct os_txn *t;
	char **names;
	size_t n;
	bool more;

	mkcoll();
	t = txn();
	ck_assert_int_eq(os_txn_mkcoll(t, "c"), 0);
	ck_assert_int_eq(apply(t), -EEXIST);
	t = txn();
	for (int i = 0; i < 25; i++) {
		char oid[16];

		snprintf(oid, sizeof(oid), "obj%02d", 24 - i);
		ck_assert_int_eq(os_txn_touch(t, "c", oid), 0);
	}
	ck_assert_int_eq(os_txn_mkcoll(t, "d"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_int_eq(os_list(g_s, "c", NULL, 10, &names, &n, &more), 0);
	ck_assert_uint_eq(n, 10);
	ck_assert(more);
	ck_assert_str_eq(names[0], "obj00");
	ck_assert_str_eq(names[9], "obj09");
	os_names_free(names, n);
	ck_assert_int_eq(os_list(g_s, "c", "obj09", 100, &names, &n, &more), 0);
	ck_assert_uint_eq(n, 15);
	ck_assert(!more);
	ck_assert_str_eq(names[0], "obj10");
	os_names_free(names, n);
	ck_assert_int_eq(os_list(g_s, "nope", NULL, 10, &names, &n, &more), -ENOENT);
	ck_assert_int_eq(os_list_collections(g_s, &names, &n), 0);
	ck_assert_uint_eq(n, 2);
	os_names_free(names, n);
	t = txn();
	ck_assert_int_eq(os_txn_rmcoll(t, "c"), 0);
	ck_assert_int_eq(apply(t), -ENOTEMPTY);
	t = txn();
	ck_assert_int_eq(os_txn_rmcoll(t, "d"), 0);
	ck_assert_int_eq(apply(t), 0);
	t = txn();
	ck_assert_int_eq(os_txn_rmcoll(t, "d"), 0);
	ck_assert_int_eq(apply(t), -ENOENT);
	/* Bad names are refused when the op is built. */
	t = txn();
	ck_assert_int_eq(os_txn_touch(t, "", "x"), -EINVAL);
	ck_assert_int_eq(os_txn_touch(t, "c", ""), -EINVAL);
	ck_assert_int_eq(os_txn_write(t, "c", "x", UINT64_MAX - 2, "abc", 3), -EFBIG);
	os_txn_destroy(t);
}

END_TEST

/* Objects and bytes per collection: kept by every transaction, recounted at mount. */
START_TEST(test_collection_stats)
{
	static uint8_t buf[20000];
	struct os_txn *t;
	uint64_t no = 99, nb = 99;

	memset(buf, 7, sizeof(buf));
	mkcoll();
	ck_assert_int_eq(os_coll_stat(g_s, "c", &no, &nb), 0);
	ck_assert_uint_eq(no, 0);
	ck_assert_uint_eq(nb, 0);
	ck_assert_int_eq(os_coll_stat(g_s, "nope", &no, &nb), -ENOENT);
	write_obj("a", 0, buf, 10000);
	write_obj("b", 5000, buf, 100);  /* sparse: 5,100 bytes */
	write_obj("a", 9000, buf, 2000); /* grows to 11,000 */
	t = txn();
	ck_assert_int_eq(os_txn_touch(t, "c", "e"), 0);
	ck_assert_int_eq(os_txn_mkcoll(t, "d"), 0);
	ck_assert_int_eq(os_txn_write(t, "d", "x", 0, buf, 300), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_int_eq(os_coll_stat(g_s, "c", &no, &nb), 0);
	ck_assert_uint_eq(no, 3);
	ck_assert_uint_eq(nb, 16100);
	t = txn();
	ck_assert_int_eq(os_txn_truncate(t, "c", "a", 1000), 0);
	ck_assert_int_eq(os_txn_remove(t, "c", "b"), 0);
	ck_assert_int_eq(os_txn_clone(t, "c", "a", "a2"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_int_eq(os_coll_stat(g_s, "c", &no, &nb), 0);
	ck_assert_uint_eq(no, 3);
	ck_assert_uint_eq(nb, 2000);
	/* A failed transaction changes nothing. */
	t = txn();
	ck_assert_int_eq(os_txn_write(t, "c", "a", 0, buf, 5000), 0);
	ck_assert_int_eq(os_txn_mkcoll(t, "d"), 0);
	ck_assert_int_eq(apply(t), -EEXIST);
	ck_assert_int_eq(os_coll_stat(g_s, "c", &no, &nb), 0);
	ck_assert_uint_eq(nb, 2000);
	/* Mount counts the same. */
	os_umount(g_s);
	g_s = NULL;
	mount_store();
	ck_assert_int_eq(os_coll_stat(g_s, "c", &no, &nb), 0);
	ck_assert_uint_eq(no, 3);
	ck_assert_uint_eq(nb, 2000);
	ck_assert_int_eq(os_coll_stat(g_s, "d", &no, &nb), 0);
	ck_assert_uint_eq(no, 1);
	ck_assert_uint_eq(nb, 300);
	t = txn();
	ck_assert_int_eq(os_txn_remove(t, "d", "x"), 0);
	ck_assert_int_eq(os_txn_rmcoll(t, "d"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_int_eq(os_coll_stat(g_s, "d", &no, &nb), -ENOENT);
	ck_assert_int_eq(os_coll_stat(g_s, "c", &no, &nb), 0);
	ck_assert_uint_eq(no, 3);
}

END_TEST

START_TEST(test_attrs_and_omap)
{
	struct os_txn *t;
	struct os_kv kv, *kvs,
		keys[3] = { { .key = (uint8_t *)"k1", .klen = 2 },
			    { .key = (uint8_t *)"zz", .klen = 2 },
			    { .key = (uint8_t *)"k3", .klen = 2 } },
		out[3];
	size_t n;
	bool more;

	mkcoll();
	t = txn();
	ck_assert_int_eq(os_txn_setattr(t, "c", "o", "user.b", "two", 3), 0);
	ck_assert_int_eq(os_txn_setattr(t, "c", "o", "user.a", "one", 3), 0);
	ck_assert_int_eq(os_txn_setattr(t, "c", "o", "user.a", "ONE!", 4), 0);
	for (int i = 0; i < 10; i++) {
		char k[8], v[8];

		snprintf(k, sizeof(k), "k%d", i);
		snprintf(v, sizeof(v), "v%d", i);
		ck_assert_int_eq(os_txn_omap_set(t, "c", "o", k, strlen(k), v, strlen(v)), 0);
	}
	ck_assert_int_eq(os_txn_omap_set(t, "c", "o", "p/1", 3, "x", 1), 0);
	ck_assert_int_eq(os_txn_omap_set(t, "c", "o", "p/2", 3, "y", 1), 0);
	ck_assert_int_eq(os_txn_omap_set_header(t, "c", "o", "HDR", 3), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_int_eq(os_getattr(g_s, "c", "o", "user.a", &kv), 0);
	ck_assert_str_eq((char *)kv.val, "ONE!");
	free(kv.key);
	free(kv.val);
	ck_assert_int_eq(os_getattr(g_s, "c", "o", "user.zz", &kv), -ENODATA);
	ck_assert_int_eq(os_getattrs(g_s, "c", "o", &kvs, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq((char *)kvs[0].key, "user.a");
	os_kvs_free(kvs, n);
	ck_assert_int_eq(os_omap_get(g_s, "c", "o", keys, 3, out), 0);
	ck_assert_str_eq((char *)out[0].val, "v1");
	ck_assert_ptr_null(out[1].val);
	ck_assert_str_eq((char *)out[2].val, "v3");
	free(out[0].key);
	free(out[0].val);
	free(out[2].key);
	free(out[2].val);
	ck_assert_int_eq(os_omap_iterate(g_s, "c", "o", NULL, 0, "p/", 2, 10, &kvs, &n, &more), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert(!more);
	ck_assert_str_eq((char *)kvs[1].key, "p/2");
	os_kvs_free(kvs, n);
	ck_assert_int_eq(os_omap_iterate(g_s, "c", "o", "k3", 2, NULL, 0, 3, &kvs, &n, &more), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert(more);
	ck_assert_str_eq((char *)kvs[0].key, "k4");
	os_kvs_free(kvs, n);
	ck_assert_int_eq(os_omap_get_header(g_s, "c", "o", &kv), 0);
	ck_assert_str_eq((char *)kv.val, "HDR");
	free(kv.key);
	free(kv.val);
	/* rm, rm_range [k2, k5), rmattr, clear */
	t = txn();
	ck_assert_int_eq(os_txn_omap_rm(t, "c", "o", "k0", 2), 0);
	ck_assert_int_eq(os_txn_omap_rm_range(t, "c", "o", "k2", 2, "k5", 2), 0);
	ck_assert_int_eq(os_txn_rmattr(t, "c", "o", "user.b"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_int_eq(os_omap_iterate(g_s, "c", "o", NULL, 0, "k", 1, 100, &kvs, &n, &more), 0);
	ck_assert_uint_eq(n, 6); /* k1 k5 k6 k7 k8 k9 */
	ck_assert_str_eq((char *)kvs[0].key, "k1");
	ck_assert_str_eq((char *)kvs[1].key, "k5");
	os_kvs_free(kvs, n);
	t = txn();
	ck_assert_int_eq(os_txn_rmattr(t, "c", "o", "user.b"), 0);
	ck_assert_int_eq(apply(t), -ENODATA);
	t = txn();
	ck_assert_int_eq(os_txn_omap_clear(t, "c", "o"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_int_eq(os_omap_iterate(g_s, "c", "o", NULL, 0, NULL, 0, 100, &kvs, &n, &more), 0);
	ck_assert_uint_eq(n, 0);
	os_kvs_free(kvs, n);
}

END_TEST

START_TEST(test_clone)
{
	static uint8_t a[300000], m[400000];
	struct os_txn *t;
	struct os_kv kv;

	mkcoll();
	cm_test_fill(a, sizeof(a), 3);
	t = txn();
	ck_assert_int_eq(os_txn_write(t, "c", "src", 0, a, sizeof(a)), 0);
	ck_assert_int_eq(os_txn_setattr(t, "c", "src", "_", "attr", 4), 0);
	ck_assert_int_eq(os_txn_omap_set(t, "c", "src", "key", 3, "val", 3), 0);
	ck_assert_int_eq(apply(t), 0);
	write_obj("dst", 0, "old content", 11);
	t = txn();
	ck_assert_int_eq(os_txn_clone(t, "c", "src", "dst"), 0);
	ck_assert_int_eq(apply(t), 0);
	check_obj("dst", a, sizeof(a));
	ck_assert_int_eq(os_getattr(g_s, "c", "dst", "_", &kv), 0);
	ck_assert_str_eq((char *)kv.val, "attr");
	free(kv.key);
	free(kv.val);
	{
		struct os_kv key = { .key = (uint8_t *)"key", .klen = 3 }, out;

		ck_assert_int_eq(os_omap_get(g_s, "c", "dst", &key, 1, &out), 0);
		ck_assert_str_eq((char *)out.val, "val");
		free(out.key);
		free(out.val);
	}
	/* Changing the source leaves the clone alone. */
	write_obj("src", 0, "XXXX", 4);
	check_obj("dst", a, sizeof(a));
	/* clone_range at an unaligned offset into another object. */
	t = txn();
	ck_assert_int_eq(os_txn_clone_range(t, "c", "dst", 1234, 100000, "cr", 5555), 0);
	ck_assert_int_eq(apply(t), 0);
	memset(m, 0, sizeof(m));
	memcpy(m + 5555, a + 1234, 100000);
	check_obj("cr", m, 105555);
	t = txn();
	ck_assert_int_eq(os_txn_clone(t, "c", "nope", "x"), 0);
	ck_assert_int_eq(apply(t), -ENOENT);
}

END_TEST

/* The rollback ops EC overwrites use: stash, unstash, rename, remove_any. */
START_TEST(test_stash_unstash_rename)
{
	static uint8_t a[300000], b[300000], want[300000];
	struct os_txn *t;
	struct os_kv kv;
	struct os_stat st;

	mkcoll();
	cm_test_fill(a, sizeof(a), 5);
	cm_test_fill(b, sizeof(b), 6);
	t = txn();
	ck_assert_int_eq(os_txn_write(t, "c", "o", 0, a, sizeof(a)), 0);
	ck_assert_int_eq(os_txn_setattr(t, "c", "o", "v", "old", 3), 0);
	ck_assert_int_eq(os_txn_setattr(t, "c", "o", "_x", "keep", 4), 0);
	ck_assert_int_eq(apply(t), 0);
	/* An overwrite of [10000, 150000) that also grows the object, drops
	 * attribute _x and changes v: the stash keeps what it destroys. */
	t = txn();
	ck_assert_int_eq(os_txn_stash(t, "c", "o", "\x01r1", 8192, 143360), 0);
	ck_assert_int_eq(os_txn_write(t, "c", "o", 10000, b, 140000), 0);
	ck_assert_int_eq(os_txn_write(t, "c", "o", 300000, b, 5000), 0);
	ck_assert_int_eq(os_txn_setattr(t, "c", "o", "v", "new!", 4), 0);
	ck_assert_int_eq(os_txn_rmattr(t, "c", "o", "_x"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_int_eq(os_stat(g_s, "c", "\x01r1", &st), 0);
	ck_assert_uint_eq(st.size, sizeof(a));
	memcpy(want, a, sizeof(a));
	memcpy(want + 10000, b, 140000);
	ck_assert_int_eq(os_stat(g_s, "c", "o", &st), 0);
	ck_assert_uint_eq(st.size, 305000);
	/* Undo: back to exactly the old object; the stash is gone. */
	t = txn();
	ck_assert_int_eq(os_txn_unstash(t, "c", "\x01r1", "o", 8192, 143360), 0);
	ck_assert_int_eq(apply(t), 0);
	check_obj("o", a, sizeof(a));
	ck_assert_int_eq(os_getattr(g_s, "c", "o", "v", &kv), 0);
	ck_assert_uint_eq(kv.vlen, 3);
	ck_assert_int_eq(memcmp(kv.val, "old", 3), 0);
	free(kv.key);
	free(kv.val);
	ck_assert_int_eq(os_getattr(g_s, "c", "o", "_x", &kv), 0);
	free(kv.key);
	free(kv.val);
	ck_assert_int_eq(os_stat(g_s, "c", "\x01r1", &st), -ENOENT);
	/* Stash, overwrite and unstash in one transaction: a no-op. Then a
	 * shrink undone: the cut bytes come back. */
	t = txn();
	ck_assert_int_eq(os_txn_stash(t, "c", "o", "\x01r2", 0, 300000), 0);
	ck_assert_int_eq(os_txn_write(t, "c", "o", 0, b, 4096), 0);
	ck_assert_int_eq(os_txn_unstash(t, "c", "\x01r2", "o", 0, 300000), 0);
	ck_assert_int_eq(apply(t), 0);
	check_obj("o", a, sizeof(a));
	t = txn();
	ck_assert_int_eq(os_txn_stash(t, "c", "o", "\x01r3", 100000, 200000), 0);
	ck_assert_int_eq(os_txn_truncate(t, "c", "o", 100000), 0);
	ck_assert_int_eq(apply(t), 0);
	t = txn();
	ck_assert_int_eq(os_txn_unstash(t, "c", "\x01r3", "o", 100000, 200000), 0);
	ck_assert_int_eq(apply(t), 0);
	check_obj("o", a, sizeof(a));
	/* Rename moves without copying; the destination is replaced; undo by
	 * renaming back. An object removed and re-made is undone the same way. */
	write_obj("other", 0, "x", 1);
	t = txn();
	ck_assert_int_eq(os_txn_rename(t, "c", "o", "other"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_int_eq(os_stat(g_s, "c", "o", &st), -ENOENT);
	check_obj("other", a, sizeof(a));
	t = txn();
	ck_assert_int_eq(os_txn_rename(t, "c", "other", "o"), 0);
	ck_assert_int_eq(os_txn_write(t, "c", "other", 0, b, 100), 0);
	ck_assert_int_eq(os_txn_remove_any(t, "c", "other"), 0);
	ck_assert_int_eq(os_txn_remove_any(t, "c", "never"), 0);
	ck_assert_int_eq(apply(t), 0);
	check_obj("o", a, sizeof(a));
	ck_assert_int_eq(os_stat(g_s, "c", "other", &st), -ENOENT);
	/* Errors: a missing source, a missing collection, a name clash. */
	t = txn();
	ck_assert_int_eq(os_txn_unstash(t, "c", "\x01nope", "o", 0, 4096), 0);
	ck_assert_int_eq(apply(t), -ENOENT);
	t = txn();
	ck_assert_int_eq(os_txn_remove_any(t, "nocoll", "o"), 0);
	ck_assert_int_eq(apply(t), -ENOENT);
	t = txn();
	ck_assert_int_eq(os_txn_rename(t, "c", "o", "o"), -EINVAL);
	os_txn_destroy(t);
	check_obj("o", a, sizeof(a));
	fsck_clean(true);
}

END_TEST

START_TEST(test_checksum_catches_corruption)
{
	static uint8_t a[65536];
	struct os_fsck_report rep;
	struct cm_buf *b;
	uint8_t byte;
	int fd;
	uint64_t victim = 0;

	mkcoll();
	cm_test_fill(a, sizeof(a), 9);
	write_obj("good", 0, a, sizeof(a));
	write_obj("bad", 0, a, sizeof(a));
	os_umount(g_s);
	g_s = NULL;
	/* Find a block of "bad" on the device by its content and flip a byte in it. */
	fd = open(g_dev, O_RDWR);
	ck_assert_int_ge(fd, 0);
	{
		uint8_t blk[4096];
		int hits = 0;

		for (uint64_t off = 4096; pread(fd, blk, 4096, (off_t)off) == 4096; off += 4096) {
			if (memcmp(blk, a + 8192, 4096) == 0 && ++hits == 2) {
				victim = off; /* the second copy: "bad" was written second */
				break;
			}
		}
	}
	ck_assert_uint_ne(victim, 0);
	ck_assert_int_eq(pread(fd, &byte, 1, (off_t)victim + 100), 1);
	byte ^= 0x5a;
	ck_assert_int_eq(pwrite(fd, &byte, 1, (off_t)victim + 100), 1);
	close(fd);
	mount_store();
	ck_assert_int_eq(rd("bad", 0, sizeof(a), &b), -EIO);
	ck_assert_int_eq(rd("bad", 8192 + 100, 1, &b), -EIO);
	ck_assert_int_eq(rd("bad", 0, 8192, &b), 0); /* the blocks before are fine */
	cm_buf_put(b);
	check_obj("good", a, sizeof(a));
	ck_assert_int_eq(os_fsck(g_s, false, &rep), 0);
	ck_assert_uint_eq(rep.errors, 0);
	ck_assert_int_eq(os_fsck(g_s, true, &rep), 0);
	ck_assert_uint_eq(rep.csum_errors, 1);
	ck_assert_msg(strstr(rep.first_error, "c/bad") && strstr(rep.first_error, "offset 8192"),
		      "%s", rep.first_error);
	{
		struct os_usage u;

		os_get_usage(g_s, &u);
		ck_assert_uint_ge(u.csum_errors, 2);
	}
	/* Rewriting the object heals it. */
	write_obj("bad", 0, a, sizeof(a));
	check_obj("bad", a, sizeof(a));
}

END_TEST

static void
setup_small(void)
{
	setup_size(16ull << 20);
}

START_TEST(test_enospc_then_delete)
{
	static uint8_t a[1 << 20];
	struct os_usage u0, u1;
	struct os_txn *t;
	int i, rc = 0;

	mkcoll();
	cm_test_fill(a, sizeof(a), 5);
	os_get_usage(g_s, &u0);
	for (i = 0; i < 64; i++) {
		char oid[16];

		snprintf(oid, sizeof(oid), "fill%d", i);
		t = txn();
		ck_assert_int_eq(os_txn_write(t, "c", oid, 0, a, sizeof(a)), 0);
		ck_assert_int_eq(os_txn_setattr(t, "c", oid, "a", "b", 1), 0);
		rc = apply(t);
		if (rc)
			break;
	}
	ck_assert_int_eq(rc, -ENOSPC);
	ck_assert_int_gt(i, 8);
	/* Nothing of the failed transaction exists; metadata-only work still goes. */
	{
		char oid[16];
		struct os_stat st;
		struct cm_buf *b;

		snprintf(oid, sizeof(oid), "fill%d", i);
		ck_assert_int_eq(os_stat(g_s, "c", oid, &st), -ENOENT);
		t = txn();
		ck_assert_int_eq(os_txn_omap_set(t, "c", "fill0", "k", 1, "v", 1), 0);
		ck_assert_int_eq(apply(t), 0);
		/* A small overwrite of allocated blocks needs no new space. */
		t = txn();
		ck_assert_int_eq(os_txn_write(t, "c", "fill0", 100, "hello", 5), 0);
		ck_assert_int_eq(apply(t), 0);
		ck_assert_int_eq(rd("fill0", 100, 5, &b), 0);
		ck_assert(memcmp(b->data, "hello", 5) == 0);
		cm_buf_put(b);
	}
	/* Delete half, then writing works again. */
	for (int k = 0; k < i; k += 2) {
		char oid[16];

		snprintf(oid, sizeof(oid), "fill%d", k);
		t = txn();
		ck_assert_int_eq(os_txn_remove(t, "c", oid), 0);
		ck_assert_int_eq(apply(t), 0);
	}
	for (int k = 0; k < 10; k++)
		cm_reactor_run_once(g_r, 10);
	write_obj("after", 0, a, sizeof(a));
	check_obj("after", a, sizeof(a));
	os_get_usage(g_s, &u1);
	ck_assert_uint_lt(u1.free_bytes, u0.free_bytes);
}

END_TEST

START_TEST(test_mount_refusals)
{
	struct os_opts o;
	struct os_store *s2;
	char other[128];
	int fd;

	os_umount(g_s);
	g_s = NULL;
	opts(&o);
	/* Not a store. */
	snprintf(other, sizeof(other), "%s/empty", g_dir);
	fd = open(other, O_RDWR | O_CREAT, 0600);
	ck_assert_int_eq(posix_fallocate(fd, 0, 1 << 20), 0);
	close(fd);
	o.path = other;
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EINVAL);
	/* Another cluster's or another OSD's store. */
	o.path = g_dev;
	o.fsid = "another-fsid";
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EINVAL);
	o.fsid = "test-fsid";
	o.osd_id = 4;
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EINVAL);
	o.osd_id = 3;
	o.path = other;
	/* Metadata of another store. */
	ck_assert_int_eq(os_mkfs(&o), 0);
	o.path = g_dev;
	{
		char db[160];

		snprintf(db, sizeof(db), "%s.db", other);
		o.db_path = db;
		ck_assert_int_eq(os_mount(g_r, &o, &s2), -EINVAL);
	}
	mount_store();
}

END_TEST

/*
 * On a raw block device (a loop device over a file): its size comes from
 * the device, not a file's length; its metadata needs a place given; made,
 * written (copy-on-write and deferred), remounted, refused once the device
 * is smaller than its label says, mounted again once it is not, fsck --deep
 * clean.
 */
START_TEST(test_block_device)
{
	static uint8_t model[1 << 20], data[70000];
	char file[128], cmd[256];
	struct os_opts o;
	struct os_store *s2;
	struct os_usage u;
	uint64_t seed = 7;
	int fd;

	cm_log_set_level(CM_LOG_ERR);
	snprintf(g_dir, sizeof(g_dir), "/tmp/cairn-store-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
	snprintf(file, sizeof(file), "%s/file", g_dir);
	fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(posix_fallocate(fd, 0, 128 << 20), 0);
	close(fd);
	if (cm_test_loop_attach(file, g_dev, sizeof(g_dev))) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
		ck_assert_int_eq(system(cmd), 0);
		return;
	}
	/* Without a place for its metadata ("<device>.db" would be in /dev): refused. */
	opts(&o);
	ck_assert_int_eq(os_mkfs(&o), -EINVAL);
	snprintf(g_db, sizeof(g_db), "%s/db", g_dir);
	opts(&o);
	ck_assert_int_eq(os_mkfs(&o), 0);
	ck_assert_int_eq(os_mkfs(&o), -EEXIST);
	g_r = cm_test_reactor();
	mount_store();
	os_get_usage(g_s, &u);
	ck_assert_uint_le(u.total_bytes, 128 << 20);
	ck_assert_uint_gt(u.total_bytes, 100 << 20);
	ck_assert_uint_gt(u.journal_size, 0);
	mkcoll();
	cm_test_fill(model, sizeof(model), 1);
	write_obj("obj", 0, model, sizeof(model));
	for (int i = 0; i < 40; i++) {
		uint64_t off, len;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		len = i % 4 == 0 ? sizeof(data) : 1 + (seed >> 40) % 9000;
		off = (seed >> 20) % (sizeof(model) - len);
		cm_test_fill(data, len, seed);
		write_obj("obj", off, data, len);
		memcpy(model + off, data, len);
	}
	check_obj("obj", model, sizeof(model));
	os_get_usage(g_s, &u);
	ck_assert_uint_gt(u.deferred_writes, 10);
	os_umount(g_s);
	g_s = NULL;
	/* Smaller than the label says: refused. */
	ck_assert_int_eq(truncate(file, 120 << 20), 0);
	ck_assert_int_eq(cm_test_loop_resize(g_dev), 0);
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EINVAL);
	ck_assert_int_eq(truncate(file, 128 << 20), 0);
	ck_assert_int_eq(cm_test_loop_resize(g_dev), 0);
	o.db_path = NULL;
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EINVAL);
	mount_store();
	check_obj("obj", model, sizeof(model));
	fsck_clean(true);
	os_umount(g_s);
	g_s = NULL;
	cm_reactor_destroy(g_r);
	cm_test_loop_detach(g_dev);
	g_db[0] = 0;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	ck_assert_int_eq(system(cmd), 0);
}

END_TEST

/* ---- the journal ---- */

#define JN_OBJ   (1u << 20)
#define JN_BIGV  (2u << 20)
#define JN_OVERW 3000

/* Overwrite k of the journal workload: 4 KiB at a block of "big" (deferred). */
static uint64_t
jn_off(uint32_t k)
{
	return ((k * 2654435761u) % (JN_OBJ / 4096)) * 4096;
}

struct jn_child {
	unsigned inflight, done, errors;
};

static void
jn_cb(void *arg, int rc)
{
	struct jn_child *c = arg;

	c->inflight--;
	c->done++;
	c->errors += rc != 0;
}

/*
 * In a child: mount, run the workload with 16 in flight (first..last
 * overwrites; with big, a 2 MiB omap value half-way: too big for a record of
 * the 4 MiB journal), wait for every acknowledgement, and exit without
 * unmounting — RocksDB's memtable is lost, as in a crash.
 */
/* Contents of test_journal_data_check's objects: 16 blocks each. */
#define JD_D   21 /* "d": new, block 1 rewritten in the same transaction */
#define JD_D1  22
#define JD_TMP 23 /* "tmp": written and removed in the same transaction */
#define JD_N   24 /* "n": new, alone in the last record */

/* One transaction (mk 3: "d" and "tmp"; mk 4: "n"), acknowledged, then exit. */
static void
jn_child_cow(struct cm_reactor *r, struct os_store *s, int mk)
{
	static uint8_t a[64 << 10], b1[4096];
	struct jn_child c = { 0 };
	struct os_txn *t;

	os_txn_create(&t);
	if (mk == 3) {
		cm_test_fill(a, sizeof(a), JD_D);
		os_txn_write(t, "c", "d", 0, a, sizeof(a));
		cm_test_fill(b1, sizeof(b1), JD_D1);
		os_txn_write(t, "c", "d", 4096, b1, sizeof(b1)); /* deferred: d's blocks exist */
		cm_test_fill(a, sizeof(a), JD_TMP);
		os_txn_write(t, "c", "tmp", 0, a, sizeof(a));
		os_txn_remove(t, "c", "tmp");
	} else {
		cm_test_fill(a, sizeof(a), JD_N);
		os_txn_write(t, "c", "n", 0, a, sizeof(a));
	}
	c.inflight = 1;
	os_queue(s, t, jn_cb, &c);
	while (c.inflight)
		cm_reactor_run_once(r, 10);
	if (c.errors)
		_exit(3);
}

/* The child's part (a fresh process image: see jn_run_child). */
static void
jn_child_main(uint32_t first, uint32_t last, bool big, int mk)
{
	struct cm_reactor *r = cm_test_child_reactor();
	static uint8_t blk[4096], val[JN_BIGV];
	struct jn_child c = { 0 };
	struct os_store *s;
	struct os_opts o;

	cm_log_set_level(CM_LOG_ERR);
	cm_reactor_run_once(r, 0); /* the thread's current reactor */
	opts(&o);
	if (os_mount(r, &o, &s))
		_exit(2);
	if (mk >= 3) {
		jn_child_cow(r, s, mk);
		_exit(0);
	}
	if (mk == 1) {
		static uint8_t obj[JN_OBJ];
		struct os_txn *t;

		cm_test_fill(obj, sizeof(obj), 7);
		os_txn_create(&t);
		os_txn_mkcoll(t, "c");
		os_txn_write(t, "c", "big", 0, obj, sizeof(obj));
		c.inflight++;
		os_queue(s, t, jn_cb, &c);
	}
	for (uint32_t k = first; k <= last; k++) {
		struct os_txn *t;

		while (c.inflight >= 16)
			cm_reactor_run_once(r, 10);
		os_txn_create(&t);
		cm_test_fill(blk, sizeof(blk), 1000 + k);
		if (mk == 2) { /* metadata only: key k<k> */
			char key[16];

			snprintf(key, sizeof(key), "k%u", k);
			os_txn_omap_set(t, "c", "big", key, strlen(key), blk, 64);
		} else {
			os_txn_write(t, "c", "big", jn_off(k), blk, sizeof(blk));
		}
		if (big && k == (first + last) / 2) {
			cm_test_fill(val, sizeof(val), 99);
			os_txn_omap_set(t, "c", "big", "v", 1, val, sizeof(val));
		}
		c.inflight++;
		os_queue(s, t, jn_cb, &c);
	}
	while (c.inflight)
		cm_reactor_run_once(r, 10);
	_exit(c.errors ? 3 : 0);
}

/*
 * In a child: mount, run the workload with 16 in flight (first..last
 * overwrites; with big, a 2 MiB omap value half-way: too big for a record of
 * the 4 MiB journal), wait for every acknowledgement, and exit without
 * unmounting — RocksDB's memtable is lost, as in a crash. The child execs
 * this binary afresh: RocksDB's background threads (its flushes) do not
 * survive a fork of a process that has used RocksDB.
 */
static void
jn_run_child(uint32_t first, uint32_t last, bool big, int mk)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char arg[64];

		snprintf(arg, sizeof(arg), "%u %u %d %d", first, last, big, mk);
		setenv("JN_CHILD", arg, 1);
		setenv("JN_CHILD_DEV", g_dev, 1);
		execl("/proc/self/exe", "store_test", (char *)NULL);
		_exit(5);
	}
	waitpid(pid, &status, 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %d", status);
}

static void
jn_model(uint8_t *m, uint32_t last)
{
	static uint8_t blk[4096];

	cm_test_fill(m, JN_OBJ, 7);
	for (uint32_t k = 1; k <= last; k++) {
		cm_test_fill(blk, sizeof(blk), 1000 + k);
		memcpy(m + jn_off(k), blk, sizeof(blk));
	}
}

/* A field (le64 at byte off) of the newest journal superblock (layout: docs/design/store.md
 * "Journal"). */
static uint64_t
jn_sb_field(size_t off)
{
	uint8_t b[2][4096];
	int fd = open(g_dev, O_RDONLY);
	uint64_t gen[2], v[2];

	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pread(fd, b[i], 4096, (off_t)(1 + i) * 4096), 4096);
		memcpy(&gen[i], b[i] + 8, 8);
		memcpy(&v[i], b[i] + off, 8);
		if (memcmp(b[i], "CAIRNJSB", 8) != 0)
			gen[i] = 0;
	}
	close(fd);
	return gen[0] > gen[1] ? v[0] : v[1];
}

/* Its trim offset and its next sequence. */
static uint64_t
jn_tail(void)
{
	return jn_sb_field(16);
}

static uint64_t
jn_sbseq(void)
{
	return jn_sb_field(24);
}

/*
 * The journal record with sequence seq at area offset *pos, or at 0 after a
 * wrap (*pos moved there): true and its length, from its header.
 */
static bool
jn_rec(uint64_t *pos, uint64_t seq, uint64_t *len)
{
	int fd = open(g_dev, O_RDONLY);
	uint64_t at[2] = { *pos, 0 };
	bool found = false;

	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 2 && !found; i++) {
		uint8_t h[64];
		uint64_t sq;
		uint32_t magic, plen;

		ck_assert_int_eq(pread(fd, h, sizeof(h), (off_t)(3 * 4096 + at[i])), 64);
		memcpy(&magic, h, 4);
		memcpy(&sq, h + 8, 8);
		memcpy(&plen, h + 16, 4);
		if (magic == 0x314e524aU && sq == seq) {
			*pos = at[i];
			*len = (64 + plen + 4095) / 4096 * 4096;
			found = true;
		}
	}
	close(fd);
	return found;
}

static void
jn_flip(uint64_t area_off)
{
	int fd = open(g_dev, O_RDWR);
	uint8_t c;
	off_t at = (off_t)(3 * 4096 + area_off + 100); /* in the first batch's bytes */

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &c, 1, at), 1);
	c ^= 0x5a;
	ck_assert_int_eq(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

/* Keep a copy of the device file beside it (keep), or put that copy back. */
static void
dev_keep(bool keep)
{
	char cmd[512];

	if (keep)
		snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s.keep", g_dev, g_dev);
	else
		snprintf(cmd, sizeof(cmd), "mv %s.keep %s", g_dev, g_dev);
	ck_assert_int_eq(system(cmd), 0);
}

/* fsck's count of extent map shard records (and no errors). */
static uint64_t
shard_records(void)
{
	struct os_fsck_report rep;

	ck_assert_int_eq(os_fsck(g_s, false, &rep), 0);
	ck_assert_msg(rep.errors == 0, "fsck: %" PRIu64 " errors, first: %s", rep.errors,
		      rep.first_error);
	return rep.shards;
}

/* Put (val) or delete (!val) one key in the unmounted store's RocksDB. */
static void
db_poke(const char *key, size_t klen, const char *val, size_t vlen)
{
	char path[256], *err = NULL;
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_t *db;

	snprintf(path, sizeof(path), "%s", g_db[0] ? g_db : "");
	if (!g_db[0])
		snprintf(path, sizeof(path), "%s.db", g_dev);
	db = rocksdb_open(o, path, &err);
	ck_assert_msg(db && !err, "open %s: %s", path, err ? err : "");
	if (val)
		rocksdb_put(db, wo, key, klen, val, vlen, &err);
	else
		rocksdb_delete(db, wo, key, klen, &err);
	ck_assert_msg(!err, "%s", err ? err : "");
	rocksdb_close(db);
	rocksdb_writeoptions_destroy(wo);
	rocksdb_options_destroy(o);
}

/* Write blk at off of oid and model. */
static void
overwrite_block(const char *oid, uint8_t *model, uint64_t off, const uint8_t *blk)
{
	write_obj(oid, off, blk, 4096);
	memcpy(model + off, blk, 4096);
}

/*
 * Extent maps of objects past one shard (64 blocks) live in shard records
 * once such an object changes after it was written whole: an overwrite
 * journals the head and the one shard it changed, not the whole map; a map
 * that shrinks to one shard goes back into the onode; rename keeps the
 * shards (same object id), remove deletes them; and fsck names a shard
 * record no object owns.
 */
START_TEST(test_sharded_extent_maps)
{
	static uint8_t model[4 << 20], small[200 << 10], blk[4096];
	uint64_t before, seals, bytes;
	struct os_usage u;
	struct os_fsck_report rep;
	struct os_txn *t;

	mkcoll();
	cm_test_fill(model, sizeof(model), 11);
	memcpy(small, model, sizeof(small));
	write_obj("small", 0, small, sizeof(small));
	ck_assert_uint_eq(shard_records(), 0); /* 50 blocks: in its onode */
	write_obj("big", 0, model, sizeof(model));
	ck_assert_uint_eq(shard_records(), 0); /* written whole at once: one record */
	check_obj("big", model, sizeof(model));
	cm_test_fill(blk, sizeof(blk), 12);
	overwrite_block("big", model, 5 << 20 >> 2, blk); /* its first change: sharded */
	ck_assert_uint_eq(shard_records(), 16);           /* 1024 blocks, 64 a shard */

	/* A 4 KiB overwrite: one block, the head and one shard (was: the
	 * object's 4 KiB of checksums as well) — one 8 KiB record. */
	os_get_usage(g_s, &u);
	before = u.journal_bytes;
	seals = u.journal_seals;
	cm_test_fill(blk, sizeof(blk), 13);
	overwrite_block("big", model, (1 << 20) + 8192, blk);
	os_get_usage(g_s, &u);
	ck_assert_uint_eq(u.deferred_writes > 0, 1);
	bytes = u.journal_bytes - before - (u.journal_seals - seals) * 4096;
	ck_assert_msg(bytes <= 8192, "a 4 KiB overwrite journaled %" PRIu64 " bytes", bytes);
	ck_assert_uint_eq(shard_records(), 16);
	check_obj("big", model, sizeof(model));

	/* Down to one shard: back into the onode; past it again: shards once
	 * it changes again. */
	t = txn();
	ck_assert_int_eq(os_txn_truncate(t, "c", "big", 100000), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shard_records(), 0);
	check_obj("big", model, 100000);
	memset(model + 100000, 0, sizeof(model) - 100000);
	cm_test_fill(model + (3 << 20), 50000, 14);
	write_obj("big", 3 << 20, model + (3 << 20), 50000);
	ck_assert_uint_eq(shard_records(), 0);
	overwrite_block("big", model, 0, blk);
	ck_assert_uint_eq(shard_records(), 2); /* shard 0 and shard 12 */
	check_obj("big", model, (3 << 20) + 50000);

	/* Rename keeps them, clone copies, remove drops; all after a remount. */
	t = txn();
	ck_assert_int_eq(os_txn_rename(t, "c", "big", "big2"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shard_records(), 2);
	t = txn();
	ck_assert_int_eq(os_txn_clone(t, "c", "big2", "big3"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shard_records(), 2); /* the clone is written whole at once */
	/* (clone copies the zeros between too: 781 blocks, 13 shards) */
	overwrite_block("big3", model, 4096, blk);
	ck_assert_uint_eq(shard_records(), 2 + 13);
	/* Written over a sharded object by rename: the old one's shards go. */
	t = txn();
	ck_assert_int_eq(os_txn_rename(t, "c", "big3", "big2"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shard_records(), 13);
	os_umount(g_s);
	mount_store();
	check_obj("big2", model, (3 << 20) + 50000);
	t = txn();
	ck_assert_int_eq(os_txn_remove(t, "c", "big2"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shard_records(), 0);

	/* A shard record no object owns is an fsck error. */
	os_umount(g_s);
	db_poke("X\0\0\0\0\0\0\x30\x39\0\0\0\0\0\0\0\0", 17, "junk", 4);
	mount_store();
	ck_assert_int_eq(os_fsck(g_s, false, &rep), 0);
	ck_assert_uint_eq(rep.errors, 1);
	ck_assert_msg(strstr(rep.first_error, "extent map shard of object id 12345"), "%s",
		      rep.first_error);
	os_umount(g_s);
	db_poke("X\0\0\0\0\0\0\x30\x39\0\0\0\0\0\0\0\0", 17, NULL, 0);
	mount_store();
	check_obj("small", small, sizeof(small));
}

END_TEST

START_TEST(test_journal_replay)
{
	static uint8_t model[JN_OBJ];
	struct os_usage u;
	struct os_opts o;
	struct os_store *s2;
	uint64_t tail;

	os_get_usage(g_s, &u);
	ck_assert_uint_eq(u.journal_size, 4u << 20); /* 1/64 of 256 MiB is under the 4 MiB floor */
	os_umount(g_s);
	g_s = NULL;
	/* ~13 MiB of records through a 4 MiB journal, a too-big transaction in the middle. */
	jn_run_child(1, JN_OVERW, true, true);
	mount_store();
	jn_model(model, JN_OVERW);
	check_obj("big", model, JN_OBJ);
	{
		struct os_kv key = { .key = (uint8_t *)"v", .klen = 1 }, out;
		static uint8_t val[JN_BIGV];

		ck_assert_int_eq(os_omap_get(g_s, "c", "big", &key, 1, &out), 0);
		ck_assert_uint_eq(out.vlen, JN_BIGV);
		cm_test_fill(val, sizeof(val), 99);
		ck_assert(memcmp(out.val, val, JN_BIGV) == 0);
		free(out.key);
		free(out.val);
	}
	fsck_clean(true);
	os_umount(g_s);
	g_s = NULL;
	/* A damaged record with good ones after it: mount refuses (acknowledged rounds would be
	 * lost). */
	tail = jn_tail();
	jn_run_child(JN_OVERW + 1, JN_OVERW + 40, false, false);
	dev_keep(true); /* a copy of the device to come back to */
	jn_flip(tail);
	opts(&o);
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EUCLEAN);
	/* The same bytes undamaged replay whole. */
	dev_keep(false);
	mount_store();
	jn_model(model, JN_OVERW + 40);
	check_obj("big", model, JN_OBJ);
	/*
	 * A damaged record followed by up to OS_JOURNAL_DEPTH - 1 good ones (and
	 * nothing after them) is a crash's tail: none was acknowledged. Mount
	 * replays up to the damaged one, and its superblock moves the sequence
	 * past them, so a later replay cannot take a good one up again.
	 */
	os_umount(g_s);
	g_s = NULL;
	jn_run_child(JN_OVERW + 41, JN_OVERW + 80, false, 2);
	{
		uint64_t seq = jn_sbseq(), pa = jn_tail(), pos, len;
		static const uint8_t zero[4096];
		int fd;

		pos = pa;
		ck_assert(jn_rec(&pos, seq, &len));
		for (uint64_t k = 1; k <= OS_JOURNAL_DEPTH; k++) {
			pos += len;
			ck_assert_msg(jn_rec(&pos, seq + k, &len),
				      "the child wrote too few records");
		}
		/* The first record damaged, the one OS_JOURNAL_DEPTH after it never written. */
		jn_flip(pa);
		fd = open(g_dev, O_RDWR);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pwrite(fd, zero, sizeof(zero), (off_t)(3 * 4096 + pos)), 4096);
		close(fd);
		mount_store();
		for (uint32_t k = JN_OVERW + 41; k <= JN_OVERW + 80; k++) {
			char name[16];
			struct os_kv key = { .key = (uint8_t *)name }, out;

			/* Nothing of the child's: its first record is bad. */
			key.klen = (size_t)snprintf(name, sizeof(name), "k%u", k);
			ck_assert_int_eq(os_omap_get(g_s, "c", "big", &key, 1, &out), 0);
			ck_assert_msg(out.val == NULL, "key %s replayed", name);
			free(out.key);
		}
		check_obj("big", model, JN_OBJ);
		ck_assert_uint_eq(jn_tail(), pa);
		ck_assert_uint_eq(jn_sbseq(), seq + OS_JOURNAL_DEPTH);
		fsck_clean(true);
	}
}

END_TEST

/* The device is no store any more (label and metadata gone), for a new mkfs. */
static void
unmake_store(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "rm -rf %s.db && dd if=/dev/zero of=%s bs=4096 count=1 conv=notrunc status=none",
		 g_dev, g_dev);
	ck_assert_int_eq(system(cmd), 0);
}

/* A manifest run of a journal record: n blocks from pblock, their crc32c. */
struct jd_run {
	uint64_t pblock;
	uint32_t n;
	uint32_t crc[16];
};

/*
 * The manifest of the record with sequence seq (at area offset *pos or 0),
 * up to max runs into runs: the number of runs, or -1 if there is no such
 * record.
 */
static int
jd_manifest(uint64_t *pos, uint64_t seq, uint64_t *len, struct jd_run *runs, int max)
{
	uint8_t *b;
	uint32_t plen, mlen;
	size_t p, end;
	int fd, n = 0;

	if (!jn_rec(pos, seq, len))
		return -1;
	b = malloc(*len);
	ck_assert_ptr_nonnull(b);
	fd = open(g_dev, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, b, *len, (off_t)(3 * 4096 + *pos)), (ssize_t)*len);
	close(fd);
	memcpy(&plen, b + 16, 4);
	memcpy(&mlen, b + 28, 4);
	ck_assert_uint_le(mlen, plen);
	for (p = 64 + plen - mlen, end = 64 + plen; p < end; n++) {
		struct jd_run *ru = &runs[n];

		ck_assert_int_lt(n, max);
		memcpy(&ru->pblock, b + p, 8);
		memcpy(&ru->n, b + p + 8, 4);
		ck_assert_uint_le(ru->n, 16);
		memcpy(ru->crc, b + p + 12, 4 * ru->n);
		p += 12 + 4 * (size_t)ru->n;
	}
	free(b);
	return n;
}

/* Whether crc is the crc32c of one of the 16 blocks of cm_test_fill(pattern). */
static bool
jd_crc_of(uint32_t crc, uint32_t pattern, uint32_t skip_block)
{
	static uint8_t a[64 << 10];

	cm_test_fill(a, sizeof(a), pattern);
	for (uint32_t i = 0; i < 16; i++)
		if (i != skip_block && cm_crc32c(0, a + i * 4096, 4096) == crc)
			return true;
	return false;
}

/* "d" as jn_child_cow wrote it (a: 64 KiB to build it in). */
static void
jd_check_d(uint8_t *a)
{
	cm_test_fill(a, 64 << 10, JD_D);
	cm_test_fill(a + 4096, 4096, JD_D1);
	check_obj("d", a, 64 << 10);
}

/* A record's write + fsync, or its RWF_DSYNC write (where that flushes the device). */
static uint64_t
syncs(const struct os_usage *u)
{
	return u->fsyncs + u->journal_dsync;
}

/* Unmount, run child mode mk, and the journal's first record as its mount left it. */
static void
jd_run_child(int mk, uint64_t *pos, uint64_t *seq)
{
	os_umount(g_s);
	g_s = NULL;
	jn_run_child(0, 0, false, mk);
	*pos = jn_tail();
	*seq = jn_sbseq();
}

/*
 * With the journal a round's record is written beside its copy-on-write
 * data, not after it: one device fsync covers both (on an idle store a write
 * of new data costs one fsync, as does an overwrite riding in the record).
 * The record's manifest names the blocks written with their crc32c — not
 * blocks the round frees again or overwrites in place (a deferred write),
 * which may hold other bytes at a crash — and mount drops a last record
 * whose data is not all on the device (it was never acknowledged).
 */
START_TEST(test_journal_data_check)
{
	static uint8_t a[64 << 10], keep[4096];
	struct jd_run runs[8];
	struct os_usage u0, u1, u2;
	struct os_stat st;
	uint64_t seq, pos, len;
	int nr, fd, blocks = 0;

	mkcoll();
	cm_test_fill(a, sizeof(a), 11);
	os_get_usage(g_s, &u0);
	write_obj("o", 0, a, sizeof(a)); /* new blocks: copy-on-write */
	os_get_usage(g_s, &u1);
	/* (An idle store's seal, below, is one more.) */
	ck_assert_uint_eq((syncs(&u1) - u1.journal_seals) - (syncs(&u0) - u0.journal_seals), 1);
	/*
	 * Idle after a record with a manifest: an empty record follows it
	 * (OS_JNL_SEAL_MS), so no crash later has mount check that data.
	 */
	for (uint64_t t0 = cm_now_ns(); cm_now_ns() - t0 < 5000000000ull;) {
		cm_reactor_run_once(g_r, 10);
		os_get_usage(g_s, &u2);
		/* Counted when it is placed; its fsync once its record is written. */
		if (u2.journal_seals > u0.journal_seals && syncs(&u2) > syncs(&u1))
			break;
	}
	ck_assert_uint_eq(u2.journal_seals, u0.journal_seals + 1);
	ck_assert_uint_eq(syncs(&u2), syncs(&u1) + 1);
	{
		int last = -1, data = 0;

		pos = jn_tail();
		for (uint64_t sq = jn_sbseq(); (nr = jd_manifest(&pos, sq, &len, runs, 8)) >= 0;
		     sq++) {
			data += nr > 0;
			last = nr;
			pos += len;
		}
		ck_assert_int_eq(data, 1); /* o's */
		ck_assert_int_eq(last, 0); /* the seal */
	}
	os_get_usage(g_s, &u1);
	write_obj("o", 4096, a, 4096); /* an overwrite: deferred, its data in the record */
	os_get_usage(g_s, &u2);
	/* its record; maybe a retire's */
	ck_assert_uint_le((syncs(&u2) - u2.journal_seals) - (syncs(&u1) - u1.journal_seals), 2);
	memcpy(a + 4096, a, 4096);
	check_obj("o", a, sizeof(a));
	/* "d" (block 1 rewritten in the same transaction) and "tmp" (removed again). */
	jd_run_child(3, &pos, &seq);
	for (uint64_t sq = seq; (nr = jd_manifest(&pos, sq, &len, runs, 8)) >= 0; sq++) {
		for (int i = 0; i < nr; i++)
			for (uint32_t k = 0; k < runs[i].n; k++) {
				ck_assert_msg(jd_crc_of(runs[i].crc[k], JD_D, 1),
					      "the manifest names a block not of d's first write");
				blocks++;
			}
		pos += len;
	}
	ck_assert_int_eq(blocks, 15); /* d's 16 but the one the deferred write rewrote */
	mount_store();
	jd_check_d(a);
	ck_assert_int_eq(os_stat(g_s, "c", "tmp", &st), -ENOENT);
	fsck_clean(true);

	/* "n" alone in the last record: its data lost from the device → the record dropped. */
	jd_run_child(4, &pos, &seq);
	ck_assert_int_eq(nr = jd_manifest(&pos, seq, &len, runs, 8), 1);
	ck_assert_uint_eq(runs[0].n, 16);
	pos += len;
	ck_assert_int_eq(jd_manifest(&pos, seq + 1, &len, runs + 1, 7), -1); /* the last */
	fd = open(g_dev, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, keep, sizeof(keep), (off_t)((runs[0].pblock + 9) * 4096)), 4096);
	memset(a, 0, 4096); /* as if the write of this block never reached the media */
	ck_assert_int_eq(pwrite(fd, a, 4096, (off_t)((runs[0].pblock + 9) * 4096)), 4096);
	close(fd);
	dev_keep(true); /* a copy of the device to come back to */
	mount_store();
	ck_assert_int_eq(os_stat(g_s, "c", "n", &st), -ENOENT);
	jd_check_d(a); /* the records before it replayed */
	fsck_clean(true);
	os_umount(g_s);
	g_s = NULL;
	/* The same device with the block as written: the record replays. */
	dev_keep(false);
	fd = open(g_dev, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, keep, 4096, (off_t)((runs[0].pblock + 9) * 4096)), 4096);
	close(fd);
	mount_store();
	cm_test_fill(a, sizeof(a), JD_N);
	check_obj("n", a, sizeof(a));
	fsck_clean(true);
}

END_TEST

/* A store made without the journal (the version-1 layout) still works and persists. */
START_TEST(test_no_journal_store)
{
	static uint8_t a[64 << 10];
	struct os_opts o;
	struct os_usage u;

	os_umount(g_s);
	g_s = NULL;
	unmake_store();
	opts(&o);
	o.no_journal = true;
	ck_assert_int_eq(os_mkfs(&o), 0);
	mount_store();
	os_get_usage(g_s, &u);
	ck_assert_uint_eq(u.journal_size, 0);
	mkcoll();
	cm_test_fill(a, sizeof(a), 5);
	write_obj("o", 0, a, sizeof(a));
	write_obj("o", 8192, a, 4096); /* deferred */
	memcpy(a + 8192, a, 4096);
	os_umount(g_s);
	mount_store();
	check_obj("o", a, sizeof(a));
}

END_TEST

/*
 * The metadata's filesystem fills up (the DB on a 6 MiB tmpfs; root only):
 * transactions fail with an error — none waits for ever — and after the
 * filesystem has room again every acknowledged one is there.
 */
START_TEST(test_db_filesystem_full)
{
	static uint8_t val[16 << 10];
	char fs[128], db[160], cmd[400];
	struct os_opts o;
	int acked = 0, rc = 0;

	os_umount(g_s);
	g_s = NULL;
	snprintf(fs, sizeof(fs), "%s/dbfs", g_dir);
	ck_assert_int_eq(mkdir(fs, 0700), 0);
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o size=6M tmpfs %s 2>/dev/null", fs);
	if (system(cmd) != 0) {
		fprintf(stderr,
			"store_test: no tmpfs mount (not root?): skipping the full DB test\n");
		return;
	}
	snprintf(db, sizeof(db), "%s/db", fs);
	unmake_store();
	opts(&o);
	o.db_path = db;
	ck_assert_int_eq(os_mkfs(&o), 0);
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
	mkcoll();
	/* 16 KiB omap values, one per transaction: 40 MiB would not fit in 6. */
	for (int i = 0; i < 2560 && !rc; i++) {
		struct os_txn *t = txn();
		char k[16];

		snprintf(k, sizeof(k), "k%05d", i);
		cm_test_fill(val, sizeof(val), (uint64_t)i);
		ck_assert_int_eq(os_txn_omap_set(t, "c", "o", k, strlen(k), val, sizeof(val)), 0);
		rc = apply(t); /* fails the test if it never completes */
		if (!rc)
			acked++;
	}
	ck_assert_msg(rc != 0, "2560 transactions of 16 KiB fit a 6 MiB filesystem?");
	ck_assert_int_eq(rc, -EIO);
	ck_assert_int_gt(acked, 0);
	{
		/*
		 * The last acknowledged value, before the remount: it, or -EIO if
		 * its round never reached the memtable — never a missing key.
		 */
		char k[16];
		struct os_kv key, out;
		int r;

		snprintf(k, sizeof(k), "k%05d", acked - 1);
		key = (struct os_kv){ .key = (uint8_t *)k, .klen = strlen(k) };
		r = os_omap_get(g_s, "c", "o", &key, 1, &out);
		ck_assert_msg(r == -EIO || (r == 0 && out.val != NULL),
			      "acknowledged key %s: %d, %s", k, r, r ? "" : "missing");
		if (r == 0) {
			cm_test_fill(val, sizeof(val), (uint64_t)(acked - 1));
			ck_assert(out.vlen == sizeof(val) &&
				  memcmp(out.val, val, sizeof(val)) == 0);
			free(out.key);
			free(out.val);
		}
	}
	os_umount(g_s);
	g_s = NULL;
	/* Room again: every acknowledged transaction is there. */
	snprintf(cmd, sizeof(cmd), "mount -o remount,size=256M %s", fs);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
	for (int i = 0; i < acked; i++) {
		char k[16];
		struct os_kv key, out;

		snprintf(k, sizeof(k), "k%05d", i);
		key = (struct os_kv){ .key = (uint8_t *)k, .klen = strlen(k) };
		ck_assert_int_eq(os_omap_get(g_s, "c", "o", &key, 1, &out), 0);
		ck_assert_msg(out.val != NULL, "acknowledged key %s is missing", k);
		cm_test_fill(val, sizeof(val), (uint64_t)i);
		ck_assert(out.vlen == sizeof(val) && memcmp(out.val, val, sizeof(val)) == 0);
		free(out.key);
		free(out.val);
	}
	fprintf(stderr,
		"store_test: %d transactions acknowledged before the DB filesystem filled\n",
		acked);
	fsck_clean(true);
	os_umount(g_s);
	g_s = NULL;
	snprintf(cmd, sizeof(cmd), "umount %s", fs);
	ck_assert_int_eq(system(cmd), 0);
}

END_TEST

/*
 * A device write that fails (the device's file on a tmpfs that fills up:
 * ENOSPC from the file system under it, as a dying disk gives EIO) fails
 * its transaction and every one queued after it — they were prepared on
 * top of its onodes — with -EIO, and the store refuses further ones; every
 * transaction acknowledged before is whole after a remount.
 */
START_TEST(test_device_write_fails)
{
	enum { NT = 24 };

	static uint8_t data[NT][1 << 20];
	struct done d[NT] = { { 0 } };
	char fs[128], dev[160], db[160], cmd[400];
	struct os_opts o;
	struct os_txn *t;
	int fd, first_fail = -1, acked = 0;

	os_umount(g_s);
	g_s = NULL;
	snprintf(fs, sizeof(fs), "%s/devfs", g_dir);
	ck_assert_int_eq(mkdir(fs, 0700), 0);
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o size=16M tmpfs %s 2>/dev/null", fs);
	if (system(cmd) != 0) {
		fprintf(stderr, "store_test: no tmpfs mount (not root?): skipping the failed "
				"device write test\n");
		return;
	}
	/* A 256 MiB device with room for its label, 4 MiB journal and ~11 MiB of data. */
	snprintf(dev, sizeof(dev), "%s/block", fs);
	snprintf(db, sizeof(db), "%s/devdb", g_dir);
	fd = open(dev, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 256 << 20), 0);
	close(fd);
	opts(&o);
	o.path = dev;
	o.db_path = db;
	o.no_direct = true; /* tmpfs */
	ck_assert_int_eq(os_mkfs(&o), 0);
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
	mkcoll();
	/* Four one at a time (they fit), then the rest queued at once: several
	 * in flight when the first write fails. */
	for (int i = 0; i < NT; i++) {
		char oid[16];

		snprintf(oid, sizeof(oid), "o%d", i);
		cm_test_fill(data[i], sizeof(data[i]), (uint64_t)i + 100);
		t = txn();
		ck_assert_int_eq(os_txn_write(t, "c", oid, 0, data[i], sizeof(data[i])), 0);
		os_queue(g_s, t, commit_cb, &d[i]);
		if (i < 4)
			ck_assert(cm_test_run_until(g_r, &d[i].done, 30000));
	}
	for (int i = 0; i < NT; i++) {
		ck_assert(cm_test_run_until(g_r, &d[i].done, 30000));
		if (d[i].rc && first_fail < 0)
			first_fail = i;
		if (first_fail >= 0)
			ck_assert_msg(d[i].rc == -EIO, "transaction %d after a failed one: %d", i,
				      d[i].rc);
		else
			acked++;
	}
	ck_assert_msg(first_fail >= 4, "24 MiB of writes on 11 MiB of room: first failure %d",
		      first_fail);
	/* Refused from now on, even without data. */
	t = txn();
	ck_assert_int_eq(os_txn_setattr(t, "c", "o0", "a", "b", 1), 0);
	ck_assert_int_eq(apply(t), -EIO);
	os_umount(g_s);
	g_s = NULL;
	/* Room again: every acknowledged write is whole. */
	snprintf(cmd, sizeof(cmd), "mount -o remount,size=512M %s", fs);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
	for (int i = 0; i < acked; i++) {
		char oid[16];

		snprintf(oid, sizeof(oid), "o%d", i);
		check_obj(oid, data[i], sizeof(data[i]));
	}
	fprintf(stderr, "store_test: %d of %d writes acknowledged before the device failed\n",
		acked, NT);
	fsck_clean(true);
	os_umount(g_s);
	g_s = NULL;
	snprintf(cmd, sizeof(cmd), "umount %s", fs);
	ck_assert_int_eq(system(cmd), 0);
}

END_TEST

START_TEST(test_allocator)
{
	struct os_alloc *a;
	struct os_extent ex[8];
	int k;

	ck_assert_int_eq(os_alloc_create(1000, 10, &a), 0);
	ck_assert_uint_eq(os_alloc_free_blocks(a), 990);
	k = os_alloc_get(a, 1, 0, ex, 8);
	ck_assert_int_eq(k, 1);
	ck_assert_uint_eq(ex[0].start, 10);
	k = os_alloc_get(a, 500, 0, ex, 8);
	ck_assert_int_eq(k, 1);
	ck_assert_uint_eq(ex[0].len, 500);
	ck_assert_int_eq(os_alloc_put(a, 11, 100), 0);
	ck_assert_int_eq(os_alloc_put(a, 11, 100), -EINVAL); /* double free */
	ck_assert_int_eq(os_alloc_put(a, 5, 1), -EINVAL);    /* reserved */
	ck_assert_int_eq(os_alloc_mark(a, 11, 1), 0);
	ck_assert_int_eq(os_alloc_mark(a, 11, 1), -EEXIST);
	/* Fragmented: 99 free at 12.., 489 at 511..: a big request spans both. */
	k = os_alloc_get(a, 580, 0, ex, 8);
	ck_assert_int_ge(k, 2);
	ck_assert_uint_eq(os_alloc_free_blocks(a), 990 - 1 - 500 + 100 - 1 - 580);
	ck_assert_int_eq(os_alloc_get(a, 100, 0, ex, 8), -ENOSPC);
	ck_assert_int_eq(os_alloc_get(a, 5, 5, ex, 8), -ENOSPC); /* the reserve stays */
	ck_assert_int_eq(os_alloc_get(a, 3, 5, ex, 8), 1);
	os_alloc_destroy(a);
	/* Large: 4 KiB and 4 MiB allocations on a 1 TiB bitmap. */
	ck_assert_int_eq(os_alloc_create(1ull << 28, 1, &a), 0);
	for (int i = 0; i < 1000; i++) {
		ck_assert_int_eq(os_alloc_get(a, i % 2 ? 1 : 1024, 0, ex, 8), 1);
		if (i % 3 == 0)
			ck_assert_int_eq(os_alloc_put(a, ex[0].start, ex[0].len), 0);
	}
	os_alloc_destroy(a);
}

END_TEST

int
main(void)
{
	Suite *s;
	TCase *tc = tcase_create("ops"), *small = tcase_create("small"),
	      *alloc = tcase_create("alloc"), *bdev = tcase_create("blockdev");

	if (getenv("JN_CHILD")) {
		unsigned first, last;
		int big, mk;

		if (sscanf(getenv("JN_CHILD"), "%u %u %d %d", &first, &last, &big, &mk) != 4)
			return 4;
		snprintf(g_dev, sizeof(g_dev), "%s", getenv("JN_CHILD_DEV"));
		jn_child_main(first, last, big, mk);
	}
	s = suite_create("store");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_write_read_patterns);
	tcase_add_test(tc, test_pipelined_writes);
	tcase_add_test(tc, test_prepare_inline_and_on_thread);
	tcase_add_test(tc, test_queue_from_other_reactor);
	tcase_add_test(tc, test_read_meta);
	tcase_add_test(tc, test_data_cache);
	tcase_add_test(tc, test_ack_before_memtable);
	tcase_add_test(tc, test_memtable_failure);
	tcase_add_test(tc, test_aligned_reads_with_holes);
	tcase_add_test(tc, test_zero_truncate_remove);
	tcase_add_test(tc, test_collections_and_listing);
	tcase_add_test(tc, test_collection_stats);
	tcase_add_test(tc, test_attrs_and_omap);
	tcase_add_test(tc, test_clone);
	tcase_add_test(tc, test_stash_unstash_rename);
	tcase_add_test(tc, test_checksum_catches_corruption);
	tcase_add_test(tc, test_mount_refusals);
	tcase_add_test(tc, test_sharded_extent_maps);
	tcase_add_test(tc, test_journal_replay);
	tcase_add_test(tc, test_journal_data_check);
	tcase_add_test(tc, test_no_journal_store);
	tcase_add_test(tc, test_db_filesystem_full);
	tcase_add_test(tc, test_device_write_fails);
	tcase_add_checked_fixture(small, setup_small, teardown);
	tcase_set_timeout(small, 120);
	tcase_add_test(small, test_enospc_then_delete);
	tcase_add_test(alloc, test_allocator);
	tcase_set_timeout(bdev, 120);
	tcase_add_test(bdev, test_block_device);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, small);
	suite_add_tcase(s, alloc);
	suite_add_tcase(s, bdev);
	return cm_test_main(s);
}
