/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/store: the object store beside fio on the same preallocated file.
 *
 *   4 MiB sequential write and read, queue depth 16   (MiB/s)
 *   4 KiB random write and read, queue depth 32       (IOPS; each store write
 *                                                       also commits metadata)
 *
 * fio runs first (ioengine io_uring, direct=1) on the file, then the store
 * is made on it and runs the same patterns: new 4 MiB objects written in
 * order and read back; 4 KiB overwrites and reads at random aligned offsets
 * of those objects. Prints a table and, last, one JSON line with each
 * figure and its ratio to fio. Nothing here fails on a timing.
 *
 * usage: store_bench [DIR [SECONDS [FILE_GIB]]]
 */
#include "osd/store.h"
#include "cm/log.h"

#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>

static char g_file[256];

static double
fio_sync(const char *rw, const char *bs, int depth, uint64_t size, int secs, bool iops, int sync)
{
	char cmd[1024], out[300];
	json_t *j, *job, *side;
	json_error_t err;
	double v = 0;

	snprintf(out, sizeof(out), "%s.fio.json", g_file);
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

struct run {
	struct os_store *s;
	struct cm_reactor *r;
	uint8_t *data;
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
			    os_txn_write(t, "c", oid, off, x->data, x->io_size)) {
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
	printf("  %s %s: %" PRIu64 " ops, %" PRIu64 " commit rounds, %" PRIu64
	       " fsyncs (%.2f ms avg), KV commit %.2f ms avg per round (synced write %.2f, on the thread %.2f)\n",
	       x->random ? "random" : "sequential", x->write ? "write" : "read", d0,
	       u1.commit_groups - u0.commit_groups, u1.fsyncs - u0.fsyncs,
	       u1.fsyncs > u0.fsyncs
		       ? (double)(u1.fsync_ns - u0.fsync_ns) / 1e6 / (double)(u1.fsyncs - u0.fsyncs)
		       : 0.0,
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

int
main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	int secs = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 5;
	uint64_t gib = argc > 3 ? strtoull(argv[3], NULL, 10) : 4, size = gib << 30;
	uint64_t region = CM_MIN(size / 4, (uint64_t)1 << 30);
	struct cm_reactor_opts ro;
	struct cm_reactor *r;
	struct os_opts o;
	struct os_store *s;
	struct run x = { 0 };
	double f_sw, f_sr, f_rw, f_rr, s_sw, s_sr, s_rw, s_rr, fd_sw = 0, fd_rw = 0;
	char dbcmd[600];
	int fd, done = 0;

	cm_log_set_level(CM_LOG_WARN);
	snprintf(g_file, sizeof(g_file), "%s/cairn-store-bench.%d", dir, (int)getpid());
	fd = open(g_file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || posix_fallocate(fd, 0, (off_t)size)) {
		fprintf(stderr, "store_bench: cannot make a %" PRIu64 " GiB file in %s\n", gib,
			dir);
		return 1;
	}
	close(fd);
	printf("store bench: %" PRIu64 " GiB file in %s, %d s per pattern\n", gib, dir, secs);
	/* fio on the file first. Random patterns over the region the store uses for them. */
	if (getenv("STORE_BENCH_NO_FIO")) { /* for profiling the store alone */
		f_sw = f_sr = f_rw = f_rr = 0;
	} else {
		f_sw = fio("write", "4m", 16, size / 2, secs, false);
		f_sr = fio("read", "4m", 16, size / 2, secs, false);
		f_rw = fio("randwrite", "4k", 32, region, secs, true);
		f_rr = fio("randread", "4k", 32, region, secs, true);
		/* Durable baselines: fio flushing once per queue depth of writes. */
		fd_sw = fio_sync("write", "4m", 16, size / 2, secs, false, 16);
		fd_rw = fio_sync("randwrite", "4k", 32, region, secs, true, 32);
	}
	/* The store on the same file. */
	os_opts_init(&o, sizeof(o));
	o.path = g_file;
	o.no_journal = getenv("STORE_BENCH_NO_JOURNAL") != NULL; /* A/B: RocksDB's WAL instead */
	if (os_mkfs(&o)) {
		fprintf(stderr, "store_bench: mkfs failed\n");
		return 1;
	}
	cm_reactor_opts_init(&ro, sizeof(ro));
	ro.backend = CM_REACTOR_AUTO;
	if (cm_reactor_create(&ro, &r) || os_mount(r, &o, &s)) {
		fprintf(stderr, "store_bench: mount failed\n");
		return 1;
	}
	{
		struct os_txn *t;

		os_txn_create(&t);
		os_txn_mkcoll(t, "c");
		os_queue(s, t, commit_noop, &done);
		while (!done)
			cm_reactor_run_once(r, 10);
	}
	x.s = s;
	x.r = r;
	x.seed = 88172645463325252ull;
	x.data = aligned_alloc(4096, 4 << 20);
	memset(x.data, 0xab, 4 << 20);
	x.obj_size = 4 << 20;
	x.nobj = size / 2 / x.obj_size;
	/* 4 MiB objects, written in order (new objects: copy-on-write), then read. */
	x.io_size = 4 << 20;
	x.depth = 16;
	x.write = true;
	s_sw = store_run(&x, secs, false);
	x.nobj = CM_MIN(x.nobj, CM_MAX(x.ops, (uint64_t)1));
	x.ops = 0;
	x.write = false;
	s_sr = store_run(&x, secs, false);
	/* 4 KiB at random in the objects that exist (overwrites: deferred). */
	x.nobj = CM_MIN(x.nobj, region / x.obj_size);
	x.io_size = 4096;
	x.depth = 32;
	x.random = true;
	x.write = true;
	s_rw = store_run(&x, secs, true);
	x.write = false;
	s_rr = store_run(&x, secs, true);
	{
		struct os_usage u;

		os_get_usage(s, &u);
		printf("store: %" PRIu64 " commits in %" PRIu64 " groups (%.1f per group), %" PRIu64
		       " deferred and %" PRIu64 " copy-on-write writes, %d errors\n",
		       u.commits, u.commit_groups,
		       u.commit_groups ? (double)u.commits / (double)u.commit_groups : 0.0,
		       u.deferred_writes, u.cow_writes, x.errors);
		printf("journal: %" PRIu64 " MiB, %" PRIu64 " MiB of records, %" PRIu64
		       " flushes, %" PRIu64 " waits for room\n",
		       u.journal_size >> 20, u.journal_bytes >> 20, u.journal_flushes,
		       u.journal_waits);
	}
	os_umount(s);
	cm_reactor_destroy(r);
	printf("%-28s %12s %12s %8s\n", "pattern", "store", "fio", "ratio");
	printf("%-28s %12.0f %12.0f %8.2f\n", "4 MiB seq write QD16 MiB/s", s_sw, f_sw,
	       f_sw ? s_sw / f_sw : 0);
	printf("%-28s %12.0f %12.0f %8.2f\n", "4 MiB seq read QD16 MiB/s", s_sr, f_sr,
	       f_sr ? s_sr / f_sr : 0);
	printf("%-28s %12.0f %12.0f %8.2f\n", "4 KiB rand write QD32 IOPS", s_rw, f_rw,
	       f_rw ? s_rw / f_rw : 0);
	printf("%-28s %12.0f %12.0f %8.2f\n", "4 KiB rand read QD32 IOPS", s_rr, f_rr,
	       f_rr ? s_rr / f_rr : 0);
	printf("%-28s %12.0f %12.0f %8.2f   (fio with fdatasync every 16)\n",
	       "4 MiB seq write, durable", s_sw, fd_sw, fd_sw ? s_sw / fd_sw : 0);
	printf("%-28s %12.0f %12.0f %8.2f   (fio with fdatasync every 32)\n",
	       "4 KiB rand write, durable", s_rw, fd_rw, fd_rw ? s_rw / fd_rw : 0);
	printf("{\"bench\":\"store\",\"fio_durable_seq_write_mibs\":%.1f,"
	       "\"durable_seq_write_ratio\":%.3f,\"fio_durable_rand_write_iops\":%.0f,"
	       "\"durable_rand_write_ratio\":%.3f,",
	       fd_sw, fd_sw ? s_sw / fd_sw : 0, fd_rw, fd_rw ? s_rw / fd_rw : 0);
	printf("\"seq_write_mibs\":%.1f,\"fio_seq_write_mibs\":%.1f,"
	       "\"seq_write_ratio\":%.3f,\"seq_read_mibs\":%.1f,\"fio_seq_read_mibs\":%.1f,"
	       "\"seq_read_ratio\":%.3f,\"rand_write_iops\":%.0f,\"fio_rand_write_iops\":%.0f,"
	       "\"rand_write_ratio\":%.3f,\"rand_read_iops\":%.0f,\"fio_rand_read_iops\":%.0f,"
	       "\"rand_read_ratio\":%.3f,\"errors\":%d}\n",
	       s_sw, f_sw, f_sw ? s_sw / f_sw : 0, s_sr, f_sr, f_sr ? s_sr / f_sr : 0, s_rw, f_rw,
	       f_rw ? s_rw / f_rw : 0, s_rr, f_rr, f_rr ? s_rr / f_rr : 0, x.errors);
	free(x.data);
	unlink(g_file);
	snprintf(dbcmd, sizeof(dbcmd), "rm -rf %s.db", g_file);
	return system(dbcmd) == 0 ? 0 : 1;
}
