/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The object store on a preallocated file (and once on a raw block device,
 * a loop device over a file): every transaction op and read op,
 * errors, persistence across remounts, checksums (a flipped byte on the
 * device reads as -EIO and fsck --deep names the object), and a full device
 * (-ENOSPC with nothing changed, then delete and write again). Each test
 * ends with fsck.
 */
#include "store_test.h"

char g_dir[64], g_dev[96];
char g_db[128]; /* the metadata's place when not "<g_dev>.db" (a block device's) */
struct cm_reactor *g_r;
struct os_store *g_s;

void
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

void
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

void
mount_store(void)
{
	struct os_opts o;

	opts(&o);
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
}

void
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

void
setup(void)
{
	setup_size(256ull << 20);
}

struct os_fsck_report
fsck_clean(bool deep)
{
	struct os_fsck_report rep;

	ck_assert_int_eq(os_fsck(g_s, deep, &rep), 0);
	ck_assert_msg(rep.errors == 0, "fsck: %" PRIu64 " errors, first: %s", rep.errors,
		      rep.first_error);
	return rep;
}

void
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

/* Put (val) or delete (!val) one key in the unmounted store's RocksDB. */
void
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

void
commit_cb(void *arg, int rc)
{
	struct done *d = arg;

	d->rc = rc;
	d->done = true;
}

int
apply(struct os_txn *t)
{
	struct done d = { 0 };

	os_queue(g_s, t, commit_cb, &d);
	ck_assert(cm_test_run_until(g_r, &d.done, 30000));
	return d.rc;
}

void
read_cb(void *arg, int rc, struct cm_buf *b)
{
	struct done *d = arg;

	d->rc = rc;
	d->buf = b;
	d->done = true;
}

/* Read; returns rc, *out the data (caller puts). */
int
rd(const char *oid, uint64_t off, uint64_t len, struct cm_buf **out)
{
	struct done d = { 0 };

	os_read(g_s, "c", oid, off, len, read_cb, &d);
	ck_assert(cm_test_run_until(g_r, &d.done, 30000));
	*out = d.buf;
	return d.rc;
}

struct os_txn *
txn(void)
{
	struct os_txn *t;

	ck_assert_int_eq(os_txn_create(&t), 0);
	return t;
}

void
mkcoll(void)
{
	struct os_txn *t = txn();

	ck_assert_int_eq(os_txn_mkcoll(t, "c"), 0);
	ck_assert_int_eq(apply(t), 0);
}

void
write_obj(const char *oid, uint64_t off, const void *data, size_t len)
{
	struct os_txn *t = txn();

	ck_assert_int_eq(os_txn_write(t, "c", oid, off, data, len), 0);
	ck_assert_int_eq(apply(t), 0);
}

/* The object's bytes equal model[0, size). */
void
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

/*
 * move: objects go to another collection whole (data, attributes, omap
 * header and omap), in one transaction with the collection's creation (a
 * PG split), the collections' stats follow, and all of it survives a
 * remount and a deep fsck.
 */
START_TEST(test_move_between_collections)
{
	static uint8_t a[300000], b[5000];
	struct os_kv kv, *kvs;
	struct os_stat st;
	struct os_txn *t;
	uint64_t objs, bytes;
	size_t n;
	bool more;
	char **names;

	mkcoll();
	cm_test_fill(a, sizeof(a), 11);
	cm_test_fill(b, sizeof(b), 12);
	write_obj("big", 0, a, sizeof(a));
	write_obj("small", 0, b, sizeof(b));
	write_obj("stays", 0, b, 10);
	t = txn();
	ck_assert_int_eq(os_txn_setattr(t, "c", "big", "v", "ver1", 4), 0);
	ck_assert_int_eq(os_txn_omap_set(t, "c", "big", "k1", 2, "val1", 4), 0);
	ck_assert_int_eq(os_txn_omap_set_header(t, "c", "big", "hdr", 3), 0);
	ck_assert_int_eq(apply(t), 0);
	/* The child collection and the moves in one transaction; a write to the
	 * moved object under its new home in the same transaction. */
	t = txn();
	ck_assert_int_eq(os_txn_mkcoll(t, "d"), 0);
	ck_assert_int_eq(os_txn_move(t, "c", "big", "d", "big"), 0);
	ck_assert_int_eq(os_txn_move(t, "c", "small", "d", "small"), 0);
	ck_assert_int_eq(os_txn_write(t, "d", "small", 0, "XY", 2), 0);
	ck_assert_int_eq(apply(t), 0);
	memcpy(b, "XY", 2);
	for (int pass = 0; pass < 2; pass++) {
		ck_assert_int_eq(os_stat(g_s, "c", "big", &st), -ENOENT);
		ck_assert_int_eq(os_stat(g_s, "c", "small", &st), -ENOENT);
		ck_assert_int_eq(os_stat(g_s, "d", "big", &st), 0);
		ck_assert_uint_eq(st.size, sizeof(a));
		ck_assert_int_eq(os_getattr(g_s, "d", "big", "v", &kv), 0);
		ck_assert_uint_eq(kv.vlen, 4);
		ck_assert_int_eq(memcmp(kv.val, "ver1", 4), 0);
		free(kv.key);
		free(kv.val);
		ck_assert_int_eq(os_omap_get_header(g_s, "d", "big", &kv), 0);
		ck_assert_uint_eq(kv.vlen, 3);
		free(kv.key);
		free(kv.val);
		ck_assert_int_eq(
			os_omap_iterate(g_s, "d", "big", NULL, 0, NULL, 0, 10, &kvs, &n, &more), 0);
		ck_assert_uint_eq(n, 1);
		ck_assert_int_eq(memcmp(kvs[0].val, "val1", 4), 0);
		os_kvs_free(kvs, n);
		ck_assert_int_eq(os_list(g_s, "d", NULL, 10, &names, &n, &more), 0);
		ck_assert_uint_eq(n, 2);
		os_names_free(names, n);
		ck_assert_int_eq(os_list(g_s, "c", NULL, 10, &names, &n, &more), 0);
		ck_assert_uint_eq(n, 1);
		ck_assert_str_eq(names[0], "stays");
		os_names_free(names, n);
		ck_assert_int_eq(os_coll_stat(g_s, "c", &objs, &bytes), 0);
		ck_assert_uint_eq(objs, 1);
		ck_assert_uint_eq(bytes, 10);
		ck_assert_int_eq(os_coll_stat(g_s, "d", &objs, &bytes), 0);
		ck_assert_uint_eq(objs, 2);
		ck_assert_uint_eq(bytes, sizeof(a) + sizeof(b));
		{
			struct cm_buf *buf;
			struct done d = { 0 };

			os_read(g_s, "d", "small", 0, sizeof(b), read_cb, &d);
			ck_assert(cm_test_run_until(g_r, &d.done, 30000));
			ck_assert_int_eq(d.rc, 0);
			buf = d.buf;
			ck_assert_uint_eq(buf->len, sizeof(b));
			ck_assert_int_eq(memcmp(buf->data, b, sizeof(b)), 0);
			cm_buf_put(buf);
		}
		fsck_clean(true);
		os_umount(g_s);
		mount_store();
	}
	/* Errors: into a missing collection, the same object, a missing source. */
	t = txn();
	ck_assert_int_eq(os_txn_move(t, "d", "big", "nocoll", "big"), 0);
	ck_assert_int_eq(apply(t), -ENOENT);
	t = txn();
	ck_assert_int_eq(os_txn_move(t, "d", "big", "d", "big"), -EINVAL);
	os_txn_destroy(t);
	t = txn();
	ck_assert_int_eq(os_txn_move(t, "c", "gone", "d", "gone"), 0);
	ck_assert_int_eq(apply(t), -ENOENT);
	ck_assert_int_eq(os_stat(g_s, "d", "big", &st), 0);
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
		/* Full to the last block: a clone still goes (it shares, takes no
		 * block), but a 4 KiB overwrite of a shared block needs a new one. */
		for (int k = 0; k < 1000 && rc == -ENOSPC; k++) {
			char small[16];

			snprintf(small, sizeof(small), "small%d", k);
			t = txn();
			ck_assert_int_eq(os_txn_write(t, "c", small, 0, a, 4096), 0);
			if (apply(t))
				break;
		}
		t = txn();
		ck_assert_int_eq(os_txn_clone(t, "c", "fill1", "fill1c"), 0);
		ck_assert_int_eq(apply(t), 0);
		t = txn();
		ck_assert_int_eq(os_txn_write(t, "c", "fill1", 8192, "x", 1), 0);
		ck_assert_int_eq(apply(t), -ENOSPC);
		ck_assert_int_eq(rd("fill1", 8192, 4096, &b), 0);
		ck_assert(memcmp(b->data, a + 8192, 4096) == 0);
		cm_buf_put(b);
		ck_assert_int_eq(rd("fill1c", 0, sizeof(a), &b), 0);
		ck_assert(memcmp(b->data, a, sizeof(a)) == 0);
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
	tcase_add_test(tc, test_move_between_collections);
	store_journal_tests(tc);
	store_clone_tests(tc, alloc);
	store_fault_tests(tc, bdev);
	tcase_add_checked_fixture(small, setup_small, teardown);
	tcase_set_timeout(small, 120);
	tcase_add_test(small, test_enospc_then_delete);
	tcase_add_test(alloc, test_allocator);
	tcase_set_timeout(bdev, 120);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, small);
	suite_add_tcase(s, alloc);
	suite_add_tcase(s, bdev);
	return cm_test_main(s);
}
