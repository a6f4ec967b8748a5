/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Crash consistency of the object store. A child process mounts the store
 * and runs a deterministic random workload (writes of random sizes and
 * offsets, overwrites small and large, zero, truncate, xattrs, omap changes,
 * removes, clones, and the stash/unstash pairs of EC rollback: all three
 * share blocks by reference), up to 8 transactions in flight, telling the parent over
 * a pipe what it queued and what committed. The parent SIGKILLs it at a
 * random moment, mounts, runs fsck, and checks that the store equals the
 * model after exactly k transactions for some k between the last one
 * reported committed and the last one queued: every acknowledged
 * transaction fully present, every other fully absent. Then the next child
 * continues from there. CAIRN_CRASH_ITERS sets the number of kills
 * (default 100) of a store with its journal; a store without (the
 * version-1 layout, RocksDB's WAL) gets a quarter as many, and so does a
 * store with its journal on a raw block device (a loop device over a file).
 * CAIRN_MODEL_TXNS the length of the no-crash comparison (default 4000
 * transactions).
 */
#include "os/store.h"
#include "cm/log.h"
#include "testlib.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#define NOBJ     6
#define MAXSIZE  (1u << 20)
#define NATTR    4
#define NKEYS    8
#define INFLIGHT 8
#define BIGVAL   (1200u << 10)

struct mobj {
	bool exists;
	uint8_t *data;
	uint64_t size;
	bool has_attr[NATTR];
	uint32_t attr[NATTR];
	bool has_key[NKEYS];
	uint32_t key[NKEYS];  /* a value's first 4 bytes; the rest is filled from them */
	uint32_t vlen[NKEYS]; /* its length */
};

struct model {
	struct mobj o[NOBJ];
};

enum {
	W_WRITE,
	W_ZERO,
	W_TRUNC,
	W_SETATTR,
	W_RMATTR,
	W_OMAPSET,
	W_OMAPRM,
	W_REMOVE,
	W_CLONE,
	W_STASH,
	W_UNSTASH
};

struct wop {
	int type, obj, obj2, idx;
	uint64_t off, len, seed;
};

struct wtxn {
	int nops;
	struct wop ops[3];
};

static char g_dir[64], g_dev[96], g_db[96];
static char g_loop[64]; /* the loop device the store is on, when it is on one */
static bool g_no_dsync; /* journal records written, then fsynced (no RWF_DSYNC) */

static uint64_t
rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 17;
}

/* Transaction i of the workload (pure function of i). */
static void
gen(uint32_t i, struct wtxn *t)
{
	uint64_t s = 0x9e3779b97f4a7c15ull ^ ((uint64_t)i * 0x100000001b3ull);

	rnd(&s);
	t->nops = 1 + (int)(rnd(&s) % 3);
	for (int k = 0; k < t->nops; k++) {
		struct wop *op = &t->ops[k];
		uint64_t r = rnd(&s) % 100;

		op->obj = (int)(rnd(&s) % NOBJ);
		op->obj2 = (op->obj + 1 + (int)(rnd(&s) % (NOBJ - 1))) % NOBJ;
		op->idx = (int)(rnd(&s) % NKEYS);
		op->seed = rnd(&s);
		op->off = rnd(&s) % (MAXSIZE - 300000);
		op->len = r % 2 ? rnd(&s) % 9000 : rnd(&s) % 300000;
		op->type = r < 45   ? W_WRITE
			   : r < 50 ? W_ZERO
			   : r < 55 ? W_TRUNC
			   : r < 65 ? W_SETATTR
			   : r < 70 ? W_RMATTR
			   : r < 85 ? W_OMAPSET
			   : r < 90 ? W_OMAPRM
			   : r < 93 ? W_REMOVE
			   : r < 96 ? W_CLONE
			   : r < 98 ? W_STASH
				    : W_UNSTASH;
		if (op->type == W_TRUNC)
			op->off = rnd(&s) % MAXSIZE;
		if (op->type == W_OMAPSET) {
			/*
			 * Mostly tiny values, some of tens of KiB, and now and then one
			 * larger than a journal record may be (a quarter of the 4 MiB
			 * journal of this 256 MiB device): it takes the other path.
			 */
			uint64_t v = rnd(&s);

			op->len = v % 40 == 0  ? BIGVAL - v % 100000
				  : v % 4 == 0 ? 4 + v % 70000
					       : 4;
		}
	}
}

static void
oname(int i, char *out)
{
	snprintf(out, 8, "o%d", i);
}

static void
build(struct os_txn *t, const struct wtxn *w)
{
	static uint8_t buf[300000];
	char a[8], b[8], k[8];

	for (int n = 0; n < w->nops; n++) {
		const struct wop *op = &w->ops[n];

		oname(op->obj, a);
		oname(op->obj2, b);
		snprintf(k, sizeof(k), "k%d", op->idx);
		switch (op->type) {
		case W_WRITE:
			cm_test_fill(buf, op->len, op->seed);
			os_txn_write(t, "c", a, op->off, buf, op->len);
			break;
		case W_ZERO:
			os_txn_zero(t, "c", a, op->off, op->len);
			break;
		case W_TRUNC:
			os_txn_truncate(t, "c", a, op->off);
			break;
		case W_SETATTR:
			snprintf(k, sizeof(k), "a%d", op->idx % NATTR);
			os_txn_setattr(t, "c", a, k, &op->seed, 4);
			break;
		case W_RMATTR:
			snprintf(k, sizeof(k), "a%d", op->idx % NATTR);
			os_txn_rmattr(t, "c", a, k);
			break;
		case W_OMAPSET: {
			static uint8_t val[BIGVAL];

			memcpy(val, &op->seed, 4);
			cm_test_fill(val + 4, op->len - 4, (uint32_t)op->seed);
			os_txn_omap_set(t, "c", a, k, strlen(k), val, op->len);
			break;
		}
		case W_OMAPRM:
			os_txn_omap_rm(t, "c", a, k, strlen(k));
			break;
		case W_REMOVE:
			os_txn_remove(t, "c", a);
			break;
		case W_CLONE:
			os_txn_clone(t, "c", a, b);
			break;
		case W_STASH:
			os_txn_stash(t, "c", a, b, op->off, op->len);
			break;
		case W_UNSTASH:
			os_txn_unstash(t, "c", a, b, op->off, op->len);
			break;
		}
	}
}

static void
mobj_reset(struct mobj *o)
{
	uint8_t *d = o->data;

	memset(o, 0, sizeof(*o));
	o->data = d;
	memset(d, 0, MAXSIZE + 300000);
}

/* Apply w to m as the store must: all or nothing. */
static void
model_apply(struct model *m, const struct wtxn *w)
{
	static uint8_t buf[300000];
	struct model n;
	bool fail = false;

	for (int i = 0; i < NOBJ; i++) {
		n.o[i] = m->o[i];
		n.o[i].data = malloc(MAXSIZE + 300000);
		ck_assert_ptr_nonnull(n.o[i].data);
		memcpy(n.o[i].data, m->o[i].data, MAXSIZE + 300000);
	}
	for (int k = 0; k < w->nops && !fail; k++) {
		const struct wop *op = &w->ops[k];
		struct mobj *o = &n.o[op->obj];

		switch (op->type) {
		case W_WRITE:
			cm_test_fill(buf, op->len, op->seed);
			o->exists = true;
			memcpy(o->data + op->off, buf, op->len);
			if (op->len)
				o->size = CM_MAX(o->size, op->off + op->len);
			break;
		case W_ZERO:
			o->exists = true;
			memset(o->data + op->off, 0, op->len);
			if (op->len)
				o->size = CM_MAX(o->size, op->off + op->len);
			break;
		case W_TRUNC:
			o->exists = true;
			if (op->off < o->size)
				memset(o->data + op->off, 0, o->size - op->off);
			o->size = op->off;
			break;
		case W_SETATTR:
			o->exists = true;
			o->has_attr[op->idx % NATTR] = true;
			o->attr[op->idx % NATTR] = (uint32_t)op->seed;
			break;
		case W_RMATTR:
			if (!o->exists || !o->has_attr[op->idx % NATTR])
				fail = true;
			else
				o->has_attr[op->idx % NATTR] = false;
			break;
		case W_OMAPSET:
			o->exists = true;
			o->has_key[op->idx] = true;
			o->key[op->idx] = (uint32_t)op->seed;
			o->vlen[op->idx] = (uint32_t)op->len;
			break;
		case W_OMAPRM:
			if (!o->exists)
				fail = true;
			else
				o->has_key[op->idx] = false;
			break;
		case W_REMOVE:
			if (!o->exists)
				fail = true;
			else
				mobj_reset(o);
			break;
		case W_CLONE:
			if (!o->exists) {
				fail = true;
			} else {
				struct mobj *d = &n.o[op->obj2];
				uint8_t *dd = d->data;

				*d = *o;
				d->data = dd;
				memcpy(dd, o->data, MAXSIZE + 300000);
			}
			break;
		case W_STASH:
			/* A new object: o's attributes and size, and o's data in the
			 * blocks [off, off + len) touches (the store shares whole
			 * blocks), zeros elsewhere; no omap. */
			if (!o->exists) {
				fail = true;
			} else {
				struct mobj *d = &n.o[op->obj2];

				mobj_reset(d);
				d->exists = true;
				d->size = o->size;
				memcpy(d->has_attr, o->has_attr, sizeof(d->has_attr));
				memcpy(d->attr, o->attr, sizeof(d->attr));
				if (op->off < o->size) {
					uint64_t lo = op->off / 4096 * 4096,
						 hi = op->off + CM_MIN(op->len, o->size - op->off);

					hi = (hi + 4095) / 4096 * 4096;
					memcpy(d->data + lo, o->data + lo, hi - lo);
				}
			}
			break;
		case W_UNSTASH:
			/* obj2 takes o's attributes, size and bytes [off, off + len)
			 * (keeping its own omap); o goes. */
			if (!o->exists) {
				fail = true;
			} else {
				struct mobj *d = &n.o[op->obj2];

				d->exists = true;
				memcpy(d->has_attr, o->has_attr, sizeof(d->has_attr));
				memcpy(d->attr, o->attr, sizeof(d->attr));
				memcpy(d->data + op->off, o->data + op->off, op->len);
				if (o->size < d->size)
					memset(d->data + o->size, 0, d->size - o->size);
				d->size = o->size;
				mobj_reset(o);
			}
			break;
		}
	}
	for (int i = 0; i < NOBJ; i++) {
		if (!fail)
			memcpy(m->o[i].data, n.o[i].data, MAXSIZE + 300000);
		free(n.o[i].data);
		if (!fail) {
			uint8_t *d = m->o[i].data;

			m->o[i] = n.o[i];
			m->o[i].data = d;
		}
	}
}

/* ---- the child ---- */

struct child {
	struct os_store *s;
	int fd;
	unsigned inflight;
	uint32_t next;
};

static void
report(int fd, char type, uint32_t idx)
{
	char msg[5] = { type };

	memcpy(msg + 1, &idx, 4);
	if (write(fd, msg, 5) != 5)
		_exit(3);
}

static void
child_cb(void *arg, int rc)
{
	struct child *c = arg;

	(void)rc;
	c->inflight--;
	report(c->fd, 'C', 0); /* completions arrive in order: the parent counts them */
}

static void
child_main(int fd, uint32_t start)
{
	struct cm_reactor *r = cm_test_child_reactor();
	struct os_opts o;
	struct child c = { .fd = fd, .next = start };
	uint64_t deadline = cm_now_ms() + 20000;

	cm_log_set_level(CM_LOG_ERR);
	/*
	 * Make this reactor the thread's current one: fork kept the parent's,
	 * and os_queue would forward to the store's reactor and send every
	 * completion back to that one, which nobody runs here.
	 */
	cm_reactor_run_once(r, 0);
	os_opts_init(&o, sizeof(o));
	o.path = g_dev;
	o.db_path = g_db;
	o.no_dsync = getenv("CRASH_CHILD_NO_DSYNC") != NULL;
	if (os_mount(r, &o, &c.s))
		_exit(2);
	report(fd, 'M', start);
	while (cm_now_ms() < deadline) {
		while (c.inflight < INFLIGHT) {
			struct os_txn *t;
			struct wtxn w;

			gen(c.next, &w);
			if (os_txn_create(&t))
				_exit(4);
			build(t, &w);
			report(fd, 'Q', c.next);
			c.inflight++;
			c.next++;
			os_queue(c.s, t, child_cb, &c);
		}
		cm_reactor_run_once(r, 10);
	}
	_exit(0);
}

/* ---- the parent ---- */

static bool store_equals(struct os_store *s, struct cm_reactor *r, const struct model *m, char *why,
			 size_t wl);

struct rdone {
	bool done;
	int rc;
	struct cm_buf *b;
};

static void
rcb(void *arg, int rc, struct cm_buf *b)
{
	struct rdone *d = arg;

	d->rc = rc;
	d->b = b;
	d->done = true;
}

/* A value's bytes after its first 4: cm_test_fill from the seed they came from. */
static bool
fill_matches(const uint8_t *p, size_t n, uint32_t seed32)
{
	static uint8_t want[BIGVAL];

	cm_test_fill(want, n, seed32);
	return memcmp(p, want, n) == 0;
}

static bool
store_equals(struct os_store *s, struct cm_reactor *r, const struct model *m, char *why, size_t wl)
{
	for (int i = 0; i < NOBJ; i++) {
		const struct mobj *o = &m->o[i];
		struct os_stat st;
		char name[8];
		int rc;

		oname(i, name);
		rc = os_stat(s, "c", name, &st);
		if (!o->exists) {
			if (rc != -ENOENT) {
				snprintf(why, wl, "%s exists, the model says not", name);
				return false;
			}
			continue;
		}
		if (rc || st.size != o->size) {
			snprintf(why, wl, "%s: stat %d size %" PRIu64 " vs %" PRIu64, name, rc,
				 rc ? 0 : st.size, o->size);
			return false;
		}
		{
			struct rdone d = { 0 };
			bool same;

			os_read(s, "c", name, 0, o->size, rcb, &d);
			ck_assert(cm_test_run_until(r, &d.done, 30000));
			if (d.rc) {
				snprintf(why, wl, "%s: read %d", name, d.rc);
				return false;
			}
			same = d.b->len == o->size && memcmp(d.b->data, o->data, o->size) == 0;
			if (!same) {
				uint64_t at = 0, end;

				while (at < o->size && at < d.b->len &&
				       d.b->data[at] == o->data[at])
					at++;
				end = at;
				while (end < o->size && end < d.b->len &&
				       d.b->data[end] != o->data[end])
					end++;
				snprintf(why, wl,
					 "%s: data differs from offset %" PRIu64
					 " to about %" PRIu64 " (size %" PRIu64 ")",
					 name, at, end, o->size);
				{
					/* The same read unaligned (another read path): does it
					 * agree? */
					struct rdone d2 = { 0 };
					bool same2;
					size_t l = strlen(why);

					os_read(s, "c", name, 1, o->size - 1, rcb, &d2);
					ck_assert(cm_test_run_until(r, &d2.done, 30000));
					same2 = !d2.rc && d2.b->len == o->size - 1 &&
						!memcmp(d2.b->data, o->data + 1, o->size - 1);
					cm_buf_put(d2.b);
					snprintf(why + l, wl - l, "; an unaligned read %s",
						 same2 ? "matches the model" : "differs too");
				}
			}
			cm_buf_put(d.b);
			if (!same)
				return false;
		}
		for (int a = 0; a < NATTR; a++) {
			struct os_kv kv;
			char an[8];

			snprintf(an, sizeof(an), "a%d", a);
			rc = os_getattr(s, "c", name, an, &kv);
			if (rc == 0) {
				bool ok = o->has_attr[a] && kv.vlen == 4 &&
					  !memcmp(kv.val, &o->attr[a], 4);

				free(kv.key);
				free(kv.val);
				if (!ok) {
					snprintf(why, wl, "%s: attr %s differs", name, an);
					return false;
				}
			} else if (o->has_attr[a]) {
				snprintf(why, wl, "%s: attr %s missing", name, an);
				return false;
			}
		}
		{
			struct os_kv *kvs;
			size_t n;
			bool more;
			int want = 0;

			ck_assert_int_eq(os_omap_iterate(s, "c", name, NULL, 0, NULL, 0, 100, &kvs,
							 &n, &more),
					 0);
			for (int k = 0; k < NKEYS; k++)
				want += o->has_key[k];
			for (size_t j = 0; j < n; j++) {
				int k = kvs[j].key[1] - '0';

				if (k < 0 || k >= NKEYS || !o->has_key[k] ||
				    kvs[j].vlen != o->vlen[k] ||
				    memcmp(kvs[j].val, &o->key[k], 4) != 0 ||
				    !fill_matches(kvs[j].val + 4, kvs[j].vlen - 4, o->key[k]))
					want = -1;
			}
			if (want != (int)n) {
				size_t off =
					(size_t)snprintf(why, wl, "%s: omap differs: store", name);

				for (size_t j = 0; j < n && off < wl; j++)
					off += (size_t)snprintf(why + off, wl - off, " %.*s=%08x",
								(int)kvs[j].klen, kvs[j].key,
								*(uint32_t *)(void *)kvs[j].val);
				for (int k = 0; k < NKEYS && off < wl; k++)
					if (o->has_key[k])
						off += (size_t)snprintf(why + off, wl - off,
									" model k%d=%08x", k,
									o->key[k]);
				os_kvs_free(kvs, n);
				return false;
			}
			os_kvs_free(kvs, n);
		}
	}
	return true;
}

struct qdone {
	unsigned left;
};

static void
qcb(void *arg, int rc)
{
	(void)rc;
	((struct qdone *)arg)->left--;
}

static bool
q_empty(void *arg)
{
	return ((struct qdone *)arg)->left == 0;
}

/*
 * A store on a fresh 256 MiB file (or a loop device over it) with
 * collection "c" (transaction 0), unmounted; an empty model. \return false
 * when a loop device was asked for and none can be had.
 */
static bool
fresh_store(struct os_opts *o, struct cm_reactor **rp, struct model *m, bool no_journal,
	    bool on_loop)
{
	struct os_store *s;
	struct os_txn *t;
	struct qdone q = { 1 };
	char file[96];
	int fd;

	cm_log_set_level(CM_LOG_ERR);
	snprintf(g_dir, sizeof(g_dir), "/tmp/cairn-crash-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
	snprintf(file, sizeof(file), "%s/block", g_dir);
	snprintf(g_db, sizeof(g_db), "%s/block.db", g_dir);
	fd = open(file, O_RDWR | O_CREAT, 0600);
	ck_assert_int_eq(posix_fallocate(fd, 0, 256 << 20), 0);
	close(fd);
	snprintf(g_dev, sizeof(g_dev), "%s", file);
	if (on_loop) {
		char cmd[128];

		if (cm_test_loop_attach(file, g_loop, sizeof(g_loop))) {
			snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
			ck_assert_int_eq(system(cmd), 0);
			cm_test_skip(
				"store_crash_test: no loop device (not root?): the kills on a block device");
			return false;
		}
		snprintf(g_dev, sizeof(g_dev), "%s", g_loop);
	}
	os_opts_init(o, sizeof(*o));
	o->path = g_dev;
	o->db_path = g_db;
	o->no_journal = no_journal;
	o->no_dsync = g_no_dsync;
	ck_assert_int_eq(os_mkfs(o), 0);
	*rp = cm_test_reactor();
	ck_assert_int_eq(os_mount(*rp, o, &s), 0);
	ck_assert_int_eq(os_txn_create(&t), 0);
	ck_assert_int_eq(os_txn_mkcoll(t, "c"), 0);
	os_queue(s, t, qcb, &q);
	ck_assert(cm_test_run_until_fn(*rp, q_empty, &q, 10000));
	os_umount(s);
	memset(m, 0, sizeof(*m));
	for (int i = 0; i < NOBJ; i++) {
		m->o[i].data = calloc(1, MAXSIZE + 300000);
		ck_assert_ptr_nonnull(m->o[i].data);
	}
	return true;
}

static void
cleanup(struct cm_reactor *r, struct model *m)
{
	char cmd[128];

	for (int i = 0; i < NOBJ; i++)
		free(m->o[i].data);
	cm_reactor_destroy(r);
	cm_test_loop_detach(g_loop);
	g_loop[0] = 0;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Kill, recover, compare; the store keeps commits durable with its journal or RocksDB's WAL. */
static void
kill_and_recover(bool no_journal, bool on_loop, int iters)
{
	struct cm_reactor *r;
	struct model m;
	struct os_opts o;
	uint32_t next = 1; /* transaction 0 made the collection */
	uint64_t seed = (uint64_t)cm_now_ns(), total_acked = 0, lost_tail = 0;

	if (!fresh_store(&o, &r, &m, no_journal, on_loop))
		return;
	fprintf(stderr, "store_crash_test: %d kills (%s%s, on %s), seed %" PRIu64 "\n", iters,
		no_journal ? "RocksDB WAL" : "journal", g_no_dsync ? ", records fsynced" : "",
		on_loop ? g_loop : "a file", seed);
	for (int iter = 0; iter < iters; iter++) {
		int p[2], status;
		pid_t pid;
		uint32_t queued = next - 1, completed = 0;
		bool mounted = false;
		char msg[5], why[256] = "";
		struct os_store *s;
		struct os_fsck_report rep;
		uint64_t wait_ms;
		bool found = false;

		ck_assert_int_eq(pipe(p), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			char fds[16], starts[16];

			/*
			 * A fresh process image: RocksDB's background threads (flushes)
			 * do not survive fork, and this process has used RocksDB.
			 */
			close(p[0]);
			snprintf(fds, sizeof(fds), "%d", p[1]);
			snprintf(starts, sizeof(starts), "%u", next);
			setenv("CRASH_CHILD_FD", fds, 1);
			setenv("CRASH_CHILD_START", starts, 1);
			setenv("CRASH_CHILD_DEV", g_dev, 1);
			setenv("CRASH_CHILD_DB", g_db, 1);
			if (g_no_dsync)
				setenv("CRASH_CHILD_NO_DSYNC", "1", 1);
			else
				unsetenv("CRASH_CHILD_NO_DSYNC");
			execl("/proc/self/exe", "store_crash_test", (char *)NULL);
			_exit(5);
		}
		close(p[1]);
		/* Let it mount and run for a random while, then kill it mid-flight. */
		while (!mounted && read(p[0], msg, 5) == 5)
			mounted = msg[0] == 'M';
		ck_assert_msg(mounted, "iteration %d: the child did not mount", iter);
		wait_ms = 5 + rnd(&seed) % 250;
		usleep((useconds_t)wait_ms * 1000);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		while (read(p[0], msg, 5) == 5) {
			if (msg[0] == 'Q')
				memcpy(&queued, msg + 1, 4);
			else if (msg[0] == 'C')
				completed++;
		}
		close(p[0]);
		/* Mount (replays deferred writes), fsck, compare with the model. */
		ck_assert_int_eq(os_mount(r, &o, &s), 0);
		ck_assert_int_eq(os_fsck(s, iter % 10 == 0, &rep), 0);
		ck_assert_msg(rep.errors == 0, "iteration %d: fsck: %s", iter, rep.first_error);
		{
			struct wtxn w;
			uint32_t k = next;

			/* Everything acknowledged must be there. */
			for (; k < next + completed; k++) {
				gen(k, &w);
				model_apply(&m, &w);
			}
			total_acked += completed;
			for (;; k++) {
				if (store_equals(s, r, &m, why, sizeof(why))) {
					found = true;
					break;
				}
				if (k > queued)
					break;
				gen(k, &w);
				model_apply(&m, &w);
				lost_tail++;
			}
			ck_assert_msg(
				found,
				"iteration %d: the store matches no state between transaction "
				"%u (last acknowledged) and %u (last queued): %s",
				iter, next + completed - 1, queued, why);
			next = k;
		}
		os_umount(s);
	}
	fprintf(stderr,
		"store_crash_test: %d kills, %" PRIu64 " acknowledged transactions all present, "
		"%" PRIu64 " unacknowledged ones found committed, none partial\n",
		iters, total_acked, lost_tail);
	/* The workload must have been acknowledged along the way, or nothing was tested. */
	ck_assert_msg(iters < 10 || total_acked > 0, "no transaction was ever acknowledged");
	cleanup(r, &m);
}

static int
crash_iters(void)
{
	const char *it = getenv("CAIRN_CRASH_ITERS");

	/* ctest's pass sets a smaller default; CAIRN_CRASH_ITERS wins over it. */
	if (!it)
		it = getenv("CAIRN_CRASH_ITERS_DEFAULT");
	return it ? (int)strtol(it, NULL, 10) : 100;
}

START_TEST(test_kill_and_recover)
{
	kill_and_recover(false, false, crash_iters());
}

END_TEST

/*
 * Records written, then the device fsynced, as on a device with FUA (where
 * an RWF_DSYNC record would not flush the rest): a quarter as many kills.
 */
START_TEST(test_kill_and_recover_fsync)
{
	g_no_dsync = true;
	kill_and_recover(false, false, (crash_iters() + 3) / 4);
	g_no_dsync = false;
}

END_TEST

/* The version-1 layout (no journal) is still mounted and written: a quarter as many kills. */
START_TEST(test_kill_and_recover_wal)
{
	kill_and_recover(true, false, (crash_iters() + 3) / 4);
}

END_TEST

/*
 * On a raw block device (a loop device over a file: its size from the
 * device, O_DIRECT and fsync on a block device), with the journal: a quarter
 * as many kills. Where no loop device can be had (not root) it says so.
 */
START_TEST(test_kill_and_recover_blockdev)
{
	kill_and_recover(false, true, (crash_iters() + 3) / 4);
}

END_TEST

/* Without crashes: after every batch of 8 queued transactions the store equals the model. */
START_TEST(test_model_agrees)
{
	struct cm_reactor *r;
	struct model m;
	struct os_opts o;
	struct os_store *s;
	char why[256];

	ck_assert(fresh_store(&o, &r, &m, false, false));
	ck_assert_int_eq(os_mount(r, &o, &s), 0);
	const char *mt = getenv("CAIRN_MODEL_TXNS");
	uint32_t ntx = mt ? (uint32_t)strtoul(mt, NULL, 10) : 4000;

	for (uint32_t i = 1; i < ntx; i += INFLIGHT) {
		struct qdone q = { INFLIGHT };

		for (uint32_t k = i; k < i + INFLIGHT; k++) {
			struct os_txn *t;
			struct wtxn w;

			gen(k, &w);
			os_txn_create(&t);
			build(t, &w);
			os_queue(s, t, qcb, &q);
			model_apply(&m, &w);
		}
		ck_assert(cm_test_run_until_fn(r, q_empty, &q, 30000));
		ck_assert_msg(store_equals(s, r, &m, why, sizeof(why)), "after transaction %u: %s",
			      i + INFLIGHT - 1, why);
		if (i % 200 == 1) {
			os_umount(s);
			ck_assert_int_eq(os_mount(r, &o, &s), 0);
		}
	}
	os_umount(s);
	cleanup(r, &m);
}

END_TEST

int
main(void)
{
	Suite *su;

	if (getenv("CRASH_CHILD_FD")) {
		snprintf(g_dev, sizeof(g_dev), "%s", getenv("CRASH_CHILD_DEV"));
		snprintf(g_db, sizeof(g_db), "%s", getenv("CRASH_CHILD_DB"));
		child_main((int)strtol(getenv("CRASH_CHILD_FD"), NULL, 10),
			   (uint32_t)strtoul(getenv("CRASH_CHILD_START"), NULL, 10));
	}
	su = suite_create("store_crash");
	TCase *tc = tcase_create("crash");

	tcase_set_timeout(tc, 1200);
	tcase_add_test(tc, test_model_agrees);
	tcase_add_test(tc, test_kill_and_recover);
	tcase_add_test(tc, test_kill_and_recover_fsync);
	tcase_add_test(tc, test_kill_and_recover_wal);
	tcase_add_test(tc, test_kill_and_recover_blockdev);
	suite_add_tcase(su, tc);
	return cm_test_main(su);
}
