/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/store: the object store beside fio on the same preallocated file.
 *
 *   4 MiB sequential write and read, queue depth 16   (MiB/s)
 *   4 KiB random write and read, queue depth 32       (IOPS; each store write
 *                                                       also commits metadata)
 *
 * Each repetition runs fio (ioengine io_uring, direct=1) on the file, then
 * makes a new store on it that runs the same patterns: new 4 MiB objects
 * written in order and read back; 4 KiB overwrites and reads at random
 * aligned offsets of those objects. This VM's disk swings by up to 2x
 * between runs of the same fio job, so the figures are medians over the
 * repetitions and each ratio is the median of the repetitions' own ratios
 * (fio and the store a minute apart). Prints each repetition, a table and,
 * last, one JSON line with each figure and its ratio to fio. Nothing here
 * fails on a timing.
 *
 * usage: store_bench [DIR|BLOCKDEV [SECONDS [FILE_GIB]]]
 * STORE_BENCH_ONLY=seqread,randwrite,randread: those patterns only (and the
 * sequential write, which makes the objects); STORE_BENCH_NO_FIO: no fio;
 * STORE_BENCH_REPS: repetitions (3); STORE_BENCH_DEFERRED_MAX: the store's
 * deferred_max (bytes; 0: overwrites copy-on-write too); STORE_BENCH_COPY: writes through
 * os_txn_write, which copies the data, instead of os_txn_write_buf (what the
 * OSD uses: the messenger's buffer goes to the device as it is).
 *
 * DIR: a FILE_GIB file is made there (preallocated) and removed at the end.
 * BLOCKDEV: the whole device is used (its first FILE_GIB GiB at most) and
 * overwritten; RocksDB and fio's output go to STORE_BENCH_DB_DIR (/tmp).
 */
#include "bench_stats.h"
#include "os/store.h"
#include "cm/log.h"

#include <fcntl.h>
#include <jansson.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

static char g_file[256];
static bool g_dev;
static char g_aux[300]; /* where RocksDB and fio's output go: "<file>" or "<dir>/<name>" */

static double
fio_sync(const char *rw, const char *bs, int depth, uint64_t size, int secs, bool iops, int sync)
{
	char cmd[1200], out[320];
	json_t *j, *job, *side;
	json_error_t err;
	double v = 0;

	snprintf(out, sizeof(out), "%s.fio.json", g_aux);
	snprintf(cmd, sizeof(cmd),
		 "fio --name=bench --filename=%s --ioengine=io_uring --direct=1 --rw=%s --bs=%s "
		 "--iodepth=%d --size=%" PRIu64 " --runtime=%d --time_based --ramp_time=1 "
		 "--fdatasync=%d --output-format=json --output=%s >/dev/null 2>&1",
		 g_file, rw, bs, depth, size, secs, sync, out);
	if (system(cmd) != 0) {
		fprintf(stderr, "store_bench: fio failed (is it installed?): %s\n", cmd);
		return 0;
	}
	j = json_load_file(out, 0, &err);
	unlink(out);
	if (!j)
		return 0;
	job = json_array_get(json_object_get(j, "jobs"), 0);
	side = json_object_get(job, strstr(rw, "read") ? "read" : "write");
	v = iops ? json_number_value(json_object_get(side, "iops"))
		 : json_number_value(json_object_get(side, "bw_bytes")) / 1048576.0;
	json_decref(j);
	return v;
}

static double
fio(const char *rw, const char *bs, int depth, uint64_t size, int secs, bool iops)
{
	return fio_sync(rw, bs, depth, size, secs, iops, 0);
}

/*
 * What to run on, into g_file: a new preallocated file of *size bytes in
 * dir, or the block device dir is (its first *size bytes at most; *size is
 * cut to it; it is the bench's to overwrite).
 */
static int
target_open(const char *dir, uint64_t *size)
{
	struct stat st;
	uint64_t dsz;
	int fd;

	if (stat(dir, &st) == 0 && S_ISBLK(st.st_mode)) {
		const char *aux = getenv("STORE_BENCH_DB_DIR");

		g_dev = true;
		snprintf(g_file, sizeof(g_file), "%s", dir);
		snprintf(g_aux, sizeof(g_aux), "%s/cairn-store-bench.%d", aux ? aux : "/tmp",
			 (int)getpid());
		fd = open(dir, O_RDONLY);
		if (fd < 0)
			return -errno;
		if (ioctl(fd, BLKGETSIZE64, &dsz) || dsz < (256u << 20)) {
			close(fd);
			return -EINVAL;
		}
		*size = CM_MIN(*size, dsz & ~((uint64_t)(1 << 20) - 1));
		close(fd);
		return 0;
	}
	snprintf(g_file, sizeof(g_file), "%s/cairn-store-bench.%d", dir, (int)getpid());
	snprintf(g_aux, sizeof(g_aux), "%s", g_file);
	fd = open(g_file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	if (posix_fallocate(fd, 0, (off_t)*size)) {
		close(fd);
		return -ENOSPC;
	}
	close(fd);
	return 0;
}

/* STORE_BENCH_ONLY="randwrite,seqread": those patterns (and the sequential write) alone. */
static bool
want(const char *pattern)
{
	const char *only = getenv("STORE_BENCH_ONLY");

	return !only || strstr(only, pattern);
}

struct run {
	struct os_store *s;
	struct cm_reactor *r;
	uint8_t *data;
	struct cm_buf *buf; /* data, wrapped: the store writes from it without a copy */
	bool copy;          /* os_txn_write (copies) instead of os_txn_write_buf */
	unsigned depth, inflight;
	uint64_t done, ops, nobj, seed;
	uint64_t obj_size, io_size;
	bool write, random, stop;
	int errors;
};

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void issue(struct run *x);

static void
wcb(void *arg, int rc)
{
	struct run *x = arg;

	x->inflight--;
	x->done++;
	if (rc)
		x->errors++;
	issue(x);
}

static void
rcb(void *arg, int rc, struct cm_buf *b)
{
	struct run *x = arg;

	x->inflight--;
	x->done++;
	if (rc)
		x->errors++;
	cm_buf_put(b);
	issue(x);
}

static void
issue(struct run *x)
{
	while (!x->stop && x->inflight < x->depth) {
		char oid[32];
		uint64_t obj, off = 0;

		if (x->random) {
			uint64_t r = rnd(&x->seed);

			obj = r % x->nobj;
			off = (rnd(&x->seed) % (x->obj_size / x->io_size)) * x->io_size;
		} else {
			obj = x->ops % x->nobj;
		}
		snprintf(oid, sizeof(oid), "obj%06" PRIu64, obj);
		x->ops++;
		x->inflight++;
		if (x->write) {
			struct os_txn *t;

			if (os_txn_create(&t) ||
			    (x->copy ? os_txn_write(t, "c", oid, off, x->data, x->io_size)
				     : os_txn_write_buf(t, "c", oid, off, x->buf, 0, x->io_size))) {
				x->errors++;
				x->inflight--;
				return;
			}
			os_queue(x->s, t, wcb, x);
		} else {
			os_read(x->s, "c", oid, off, x->io_size, rcb, x);
		}
	}
}

/* Run a pattern for secs; \return the rate (MiB/s, or IOPS). */
static double
store_run(struct run *x, int secs, bool iops)
{
	uint64_t t0, t1, d0;
	struct os_usage u0, u1;

	x->stop = false;
	x->done = 0;
	x->inflight = 0;
	issue(x);
	/* A one-second ramp, as fio's. */
	t0 = cm_now_ns();
	while (cm_now_ns() - t0 < 1000000000ull)
		cm_reactor_run_once(x->r, 10);
	d0 = x->done;
	os_get_usage(x->s, &u0);
	t0 = cm_now_ns();
	while (cm_now_ns() - t0 < (uint64_t)secs * 1000000000ull)
		cm_reactor_run_once(x->r, 10);
	t1 = cm_now_ns();
	d0 = x->done - d0;
	os_get_usage(x->s, &u1);
	printf("  prepare %.1f us per transaction\n",
	       d0 ? (double)(u1.prepare_ns - u0.prepare_ns) / 1e3 /
			       (double)(u1.commits - u0.commits + 1)
		  : 0.0);
	/* a journal record's write + fsync, or its RWF_DSYNC write: timed from the write */
	uint64_t syncs = u1.fsyncs + u1.journal_dsync - u0.fsyncs - u0.journal_dsync;

	printf("  %s %s: %" PRIu64 " ops, %" PRIu64 " commit rounds, %" PRIu64
	       " syncs (%.2f ms avg), KV commit %.2f ms avg per round (synced write %.2f, on the thread %.2f)\n",
	       x->random ? "random" : "sequential", x->write ? "write" : "read", d0,
	       u1.commit_groups - u0.commit_groups, syncs,
	       syncs ? (double)(u1.fsync_ns - u0.fsync_ns) / 1e6 / (double)syncs : 0.0,
	       u1.commit_groups > u0.commit_groups
		       ? (double)(u1.kv_commit_ns - u0.kv_commit_ns) / 1e6 /
				 (double)(u1.commit_groups - u0.commit_groups)
		       : 0.0,
	       u1.commit_groups > u0.commit_groups
		       ? (double)(u1.kv_sync_ns - u0.kv_sync_ns) / 1e6 /
				 (double)(u1.commit_groups - u0.commit_groups)
		       : 0.0,
	       u1.commit_groups > u0.commit_groups
		       ? (double)(u1.kv_fn_ns - u0.kv_fn_ns) / 1e6 /
				 (double)(u1.commit_groups - u0.commit_groups)
		       : 0.0);
	x->stop = true;
	while (x->inflight)
		cm_reactor_run_once(x->r, 10);
	return iops ? (double)d0 / ((double)(t1 - t0) / 1e9)
		    : (double)d0 * (double)x->io_size / 1048576.0 / ((double)(t1 - t0) / 1e9);
}

static void
commit_noop(void *arg, int rc)
{
	*(int *)arg = rc ? rc : 1;
}

enum { SW, SR, RW, RR, DSW, DRW, NFIG };

static const char *const g_fig_label[NFIG] = {
	"4 MiB seq write QD16 MiB/s", "4 MiB seq read QD16 MiB/s", "4 KiB rand write QD32 IOPS",
	"4 KiB rand read QD32 IOPS",  "4 MiB seq write, durable",  "4 KiB rand write, durable",
};

static const char *const g_fig_key[NFIG] = {
	"seq_write", "seq_read",          "rand_write",
	"rand_read", "durable_seq_write", "durable_rand_write",
};

static const char *const g_fig_unit[NFIG] = { "mibs", "mibs", "iops", "iops", "mibs", "iops" };

/* One repetition's figures: fio's and the store's (the durable rows compare
 * the store's write figures with fio flushing). */
struct rep {
	double fio[NFIG], store[NFIG];
	int errors;
};

static void
fio_pass(uint64_t size, uint64_t region, int secs, struct rep *p)
{
	/* The reads need the data the sequential write leaves: it always runs. */
	p->fio[SW] = fio("write", "4m", 16, size / 2, secs, false);
	p->fio[SR] = want("seqread") ? fio("read", "4m", 16, size / 2, secs, false) : 0;
	p->fio[RW] = want("randwrite") ? fio("randwrite", "4k", 32, region, secs, true) : 0;
	p->fio[RR] = want("randread") ? fio("randread", "4k", 32, region, secs, true) : 0;
	/* Durable baselines: fio flushing once per queue depth of writes. */
	p->fio[DSW] = fio_sync("write", "4m", 16, size / 2, secs, false, 16);
	p->fio[DRW] =
		want("randwrite") ? fio_sync("randwrite", "4k", 32, region, secs, true, 32) : 0;
}

/* A block of zeros at 0: whatever fio left there is not taken for a label. */
static int
wipe_label(void)
{
	void *zero = aligned_alloc(4096, 4096);
	int fd = open(g_file, O_RDWR | O_DIRECT), rc = 0;

	if (!zero || fd < 0)
		rc = -EIO;
	else if ((memset(zero, 0, 4096), pwrite(fd, zero, 4096, 0)) != 4096 || fsync(fd))
		rc = -EIO;
	if (fd >= 0)
		close(fd);
	free(zero);
	return rc;
}

/* mkfs, mount, the store's patterns, umount. \return 0 or -1 (said why). */
static int
store_pass(const char *dbpath, uint64_t size, uint64_t region, int secs, uint8_t *data,
	   struct rep *p)
{
	struct cm_reactor_opts ro;
	struct cm_reactor *r;
	struct os_opts o;
	struct os_store *s;
	struct run x = { 0 };
	struct os_txn *t;
	char cmd[400];
	int done = 0;

	os_opts_init(&o, sizeof(o));
	o.path = g_file;
	o.db_path = dbpath;
	o.no_journal = getenv("STORE_BENCH_NO_JOURNAL") != NULL; /* A/B: RocksDB's WAL instead */
	o.no_dsync = getenv("STORE_BENCH_NO_DSYNC") != NULL;     /* A/B: record + fsync always */
	if (getenv("STORE_BENCH_DEFERRED_MAX")) /* A/B: 0 = every overwrite copy-on-write */
		o.deferred_max = strtoull(getenv("STORE_BENCH_DEFERRED_MAX"), NULL, 10);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dbpath);
	if (system(cmd) != 0 || wipe_label() || os_mkfs(&o)) {
		fprintf(stderr, "store_bench: mkfs failed\n");
		return -1;
	}
	cm_reactor_opts_init(&ro, sizeof(ro));
	ro.backend = CM_REACTOR_AUTO;
	if (cm_reactor_create(&ro, &r) || os_mount(r, &o, &s)) {
		fprintf(stderr, "store_bench: mount failed\n");
		return -1;
	}
	if (os_txn_create(&t) || os_txn_mkcoll(t, "c")) {
		fprintf(stderr, "store_bench: out of memory\n");
		return -1;
	}
	os_queue(s, t, commit_noop, &done);
	while (!done)
		cm_reactor_run_once(r, 10);
	x.s = s;
	x.r = r;
	x.seed = 88172645463325252ull;
	x.data = data;
	x.copy = getenv("STORE_BENCH_COPY") != NULL;
	if (cm_buf_wrap(data, 4 << 20, NULL, NULL, &x.buf)) {
		fprintf(stderr, "store_bench: out of memory\n");
		return -1;
	}
	/* STORE_BENCH_OBJ_KIB: smaller objects (smaller onodes) for A/B runs; 4 MiB otherwise. */
	x.obj_size = getenv("STORE_BENCH_OBJ_KIB")
			     ? strtoull(getenv("STORE_BENCH_OBJ_KIB"), NULL, 10) << 10
			     : 4 << 20;
	if (x.obj_size < 4096 || x.obj_size > (4 << 20) || x.obj_size % 4096)
		x.obj_size = 4 << 20;
	x.nobj = size / 2 / x.obj_size;
	/* 4 MiB objects, written in order (new objects: copy-on-write), then read. */
	x.io_size = x.obj_size;
	x.depth = 16;
	x.write = true;
	p->store[SW] = p->store[DSW] = store_run(&x, secs, false);
	x.nobj = CM_MIN(x.nobj, CM_MAX(x.ops, (uint64_t)1));
	x.ops = 0;
	x.write = false;
	p->store[SR] = want("seqread") ? store_run(&x, secs, false) : 0;
	/* 4 KiB at random in the objects that exist (overwrites: deferred). */
	x.nobj = CM_MIN(x.nobj, region / x.obj_size);
	if (getenv("STORE_BENCH_NOBJ")) /* fewer objects (all onodes cached), for A/B runs */
		x.nobj = CM_MIN(x.nobj, strtoull(getenv("STORE_BENCH_NOBJ"), NULL, 10));
	x.io_size = 4096;
	x.depth = 32;
	x.random = true;
	x.write = true;
	p->store[RW] = p->store[DRW] = want("randwrite") ? store_run(&x, secs, true) : 0;
	x.write = false;
	p->store[RR] = want("randread") ? store_run(&x, secs, true) : 0;
	{
		struct os_usage u;

		os_get_usage(s, &u);
		printf("  store: %" PRIu64 " commits in %" PRIu64
		       " groups (%.1f per group), %" PRIu64 " deferred and %" PRIu64
		       " copy-on-write writes, %d errors\n",
		       u.commits, u.commit_groups,
		       u.commit_groups ? (double)u.commits / (double)u.commit_groups : 0.0,
		       u.deferred_writes, u.cow_writes, x.errors);
		printf("  journal: %" PRIu64 " MiB, %" PRIu64 " MiB of records (%" PRIu64
		       " written with RWF_DSYNC, no fsync), %" PRIu64 " flushes, %" PRIu64
		       " waits for room\n",
		       u.journal_size >> 20, u.journal_bytes >> 20, u.journal_dsync,
		       u.journal_flushes, u.journal_waits);
	}
	p->errors = x.errors;
	os_umount(s);
	cm_reactor_destroy(r);
	cm_buf_put(x.buf);
	return system(cmd) == 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	int secs = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 5;
	uint64_t gib = argc > 3 ? strtoull(argv[3], NULL, 10) : 4, size = gib << 30;
	const char *reps_env = getenv("STORE_BENCH_REPS");
	int nrep = reps_env ? (int)strtol(reps_env, NULL, 10) : 3, errors = 0;
	double med_s[NFIG], med_f[NFIG], med_r[NFIG], v[3][64];
	struct rep reps[64];
	uint64_t region;
	char dbpath[320];
	uint8_t *data;

	cm_log_set_level(CM_LOG_WARN);
	nrep = CM_MAX(1, CM_MIN(nrep, 64));
	if (target_open(dir, &size)) {
		fprintf(stderr, "store_bench: cannot make a %" PRIu64 " GiB file in %s\n", gib,
			dir);
		return 1;
	}
	region = CM_MIN(size / 4, (uint64_t)1 << 30);
	snprintf(dbpath, sizeof(dbpath), "%s.db", g_aux);
	data = aligned_alloc(4096, 4 << 20);
	if (!data)
		return 1;
	memset(data, 0xab, 4 << 20);
	printf("store bench: %.1f GiB %s %s, %d s per pattern, %d repetitions (fio, then the "
	       "store on a new store; medians)\n",
	       (double)size / (1 << 30), g_dev ? "of the device" : "file in", dir, secs, nrep);
	memset(reps, 0, sizeof(reps));
	for (int k = 0; k < nrep; k++) {
		struct rep *p = &reps[k];

		printf("repetition %d\n", k + 1);
		/* fio on the file first. Random patterns over the region the store uses. */
		if (!getenv("STORE_BENCH_NO_FIO")) /* for profiling the store alone */
			fio_pass(size, region, secs, p);
		if (store_pass(dbpath, size, region, secs, data, p))
			return 1;
		errors += p->errors;
		for (int f = 0; f < NFIG; f++)
			printf("  %-28s store %10.0f  fio %10.0f  ratio %5.2f\n", g_fig_label[f],
			       p->store[f], p->fio[f], p->fio[f] ? p->store[f] / p->fio[f] : 0);
	}
	for (int f = 0; f < NFIG; f++) {
		for (int k = 0; k < nrep; k++) {
			v[0][k] = reps[k].store[f];
			v[1][k] = reps[k].fio[f];
			v[2][k] = reps[k].fio[f] ? reps[k].store[f] / reps[k].fio[f] : 0;
		}
		med_s[f] = bench_median(v[0], nrep);
		med_f[f] = bench_median(v[1], nrep);
		med_r[f] = bench_median(v[2], nrep);
	}
	printf("%-28s %12s %12s %8s   (medians over %d; ratio: median of each repetition's)\n",
	       "pattern", "store", "fio", "ratio", nrep);
	for (int f = 0; f < NFIG; f++)
		printf("%-28s %12.0f %12.0f %8.2f%s\n", g_fig_label[f], med_s[f], med_f[f],
		       med_r[f],
		       f == DSW   ? "   (fio with fdatasync every 16)"
		       : f == DRW ? "   (fio with fdatasync every 32)"
				  : "");
	printf("{\"bench\":\"store\",\"reps\":%d,\"device\":%s", nrep, g_dev ? "true" : "false");
	for (int f = 0; f < NFIG; f++)
		printf(",\"%s_%s\":%.1f,\"fio_%s_%s\":%.1f,\"%s_ratio\":%.3f", g_fig_key[f],
		       g_fig_unit[f], med_s[f], g_fig_key[f], g_fig_unit[f], med_f[f], g_fig_key[f],
		       med_r[f]);
	printf(",\"errors\":%d}\n", errors);
	free(data);
	if (!g_dev)
		unlink(g_file);
	return 0;
}
