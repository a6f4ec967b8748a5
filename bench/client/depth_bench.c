/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU per op at depth: OBJECTS objects of 4 KiB are written, then read at
 * random with DEPTH reads in flight for SECONDS, driven the way a
 * front-end with its own event loop would: completions on a completion
 * queue, the main thread polling its fd, reaping and resubmitting. The
 * client's CPU (this process: the main thread and the library's thread,
 * getrusage) and the OSDs' (their /proc/PID/stat utime + stime over the
 * same interval) are divided by the reads done. Every read is checked
 * (length and the object's first bytes). Prints a line and a JSON line.
 *   depth_bench CONF POOL OBJECTS DEPTH SECONDS OSD_PID[,OSD_PID...]
 * Environment: DEPTH_IO_THREADS=N (the client's io threads, default 1),
 * DEPTH_SHARD_SESSIONS=1 (one session per PG shard).
 */
#include "cairn/cairn.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define OBJ_SIZE 4096

struct slot {
	cairn_op_t *op;
	unsigned obj;
	char buf[OBJ_SIZE];
	size_t got;
	int rval;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* This process's CPU seconds (user + system, every thread). */
static double
self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The CPU seconds of the processes in pids (comma-separated), or -1. */
static double
procs_cpu_s(const char *pids)
{
	double sum = 0, tick = (double)sysconf(_SC_CLK_TCK);
	const char *p = pids;

	while (*p) {
		char path[64], line[1024], *q;
		unsigned long ut, st;
		long pid = strtol(p, &q, 10);
		FILE *f;

		if (q == p || pid <= 0)
			return -1;
		p = *q == ',' ? q + 1 : q;
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		f = fopen(path, "r");
		if (!f)
			return -1;
		q = fgets(line, sizeof(line), f);
		fclose(f);
		/* fields after the command (which may hold spaces): 14, 15 are utime, stime */
		if (!q || !(q = strrchr(line, ')')) ||
		    sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
			   &st) != 2)
			return -1;
		sum += (double)(ut + st) / tick;
	}
	return sum;
}

static void
obj_name(char *out, size_t len, unsigned i)
{
	snprintf(out, len, "depth-bench-%06u", i);
}

/* Object i's bytes: its number, then a pattern. */
static void
obj_fill(char *b, unsigned i)
{
	memset(b, (int)('a' + i % 26), OBJ_SIZE);
	memcpy(b, &i, sizeof(i));
}

static int
submit(cairn_ioctx_t *io, cairn_cq_t *cq, struct slot *s, unsigned nobj)
{
	cairn_completion_t *c = cairn_completion_create_cq(cq, s);
	char name[32];
	int rc;

	if (!c)
		return -ENOMEM;
	s->obj = (unsigned)random() % nobj;
	obj_name(name, sizeof(name), s->obj);
	cairn_op_release(s->op);
	s->op = cairn_op_create();
	if (!s->op) {
		cairn_completion_release(c);
		return -ENOMEM;
	}
	cairn_op_read(s->op, 0, OBJ_SIZE, s->buf, &s->got, &s->rval);
	rc = cairn_aio_operate(io, name, s->op, c);
	if (rc)
		cairn_completion_release(c);
	return rc;
}

int
main(int argc, char **argv)
{
	struct cairn_opts o;
	cairn_cluster_t *cl;
	cairn_ioctx_t *io;
	cairn_cq_t *cq;
	struct slot *sl;
	unsigned nobj, depth, secs;
	uint64_t ops = 0, bad = 0;
	double t0, t1, c0, c1, s0, s1;
	char err[256], name[32], buf[OBJ_SIZE];
	int rc = 0;

	if (argc != 7) {
		fprintf(stderr, "usage: depth_bench CONF POOL OBJECTS DEPTH SECONDS OSD_PIDS\n");
		return 2;
	}
	nobj = (unsigned)strtoul(argv[3], NULL, 10);
	depth = (unsigned)strtoul(argv[4], NULL, 10);
	secs = (unsigned)strtoul(argv[5], NULL, 10);
	if (!nobj || !depth || !secs || procs_cpu_s(argv[6]) < 0) {
		fprintf(stderr, "depth_bench: bad arguments (or an OSD pid without /proc)\n");
		return 2;
	}
	cairn_opts_init(&o, sizeof(o));
	o.conf_file = argv[1];
	o.max_ops_in_flight = depth;
	/* (bench/client/sessions_bench.sh: one session per PG shard instead of per OSD) */
	o.shard_sessions =
		getenv("DEPTH_SHARD_SESSIONS") && !strcmp(getenv("DEPTH_SHARD_SESSIONS"), "1");
	/* (client_bench.sh: the same reads on several io threads) */
	o.io_threads =
		getenv("DEPTH_IO_THREADS") ? strtoul(getenv("DEPTH_IO_THREADS"), NULL, 10) : 0;
	if (cairn_connect(&o, &cl, err, sizeof(err))) {
		fprintf(stderr, "depth_bench: connect: %s\n", err);
		return 1;
	}
	if (cairn_ioctx_create(cl, argv[2], &io) || cairn_cq_create(&cq)) {
		fprintf(stderr, "depth_bench: no pool %s, or no completion queue\n", argv[2]);
		return 1;
	}
	for (unsigned i = 0; i < nobj && !rc; i++) {
		obj_fill(buf, i);
		obj_name(name, sizeof(name), i);
		rc = cairn_write_full(io, name, buf, OBJ_SIZE);
	}
	sl = calloc(depth, sizeof(*sl));
	if (rc || !sl) {
		fprintf(stderr, "depth_bench: writing the objects: %s\n",
			strerror(rc ? -rc : ENOMEM));
		return 1;
	}
	srandom(1);
	t0 = now_s();
	c0 = self_cpu_s();
	s0 = procs_cpu_s(argv[6]);
	for (unsigned i = 0; i < depth && !rc; i++)
		rc = submit(io, cq, &sl[i], nobj);
	while (!rc) {
		struct pollfd pf = { .fd = cairn_cq_fd(cq), .events = POLLIN };
		cairn_completion_t *got[64];
		size_t n;
		bool stop = now_s() - t0 >= secs;

		if (stop)
			break;
		if (poll(&pf, 1, 1000) < 0 && errno != EINTR)
			rc = -errno;
		n = cairn_cq_reap(cq, got, 64);
		for (size_t k = 0; k < n && !rc; k++) {
			struct slot *s = cairn_completion_arg(got[k]);
			unsigned tag;

			rc = cairn_completion_rc(got[k]);
			cairn_completion_release(got[k]);
			memcpy(&tag, s->buf, sizeof(tag));
			bad += !rc && (s->got != OBJ_SIZE || tag != s->obj);
			ops++;
			if (!rc)
				rc = submit(io, cq, s, nobj);
		}
	}
	t1 = now_s();
	c1 = self_cpu_s();
	s1 = procs_cpu_s(argv[6]);
	/* drain: what is still in flight ends before the queue goes */
	for (uint64_t left = depth, w = 0; left && w < 30000; w++) {
		cairn_completion_t *got[64];
		size_t n = cairn_cq_reap(cq, got, 64);

		for (size_t k = 0; k < n; k++)
			cairn_completion_release(got[k]);
		left -= n;
		if (!n)
			usleep(1000);
	}
	if (rc) {
		fprintf(stderr, "depth_bench: read: %s\n", strerror(-rc));
		return 1;
	}
	{
		double ops_s = (double)ops / (t1 - t0);
		double cns = (c1 - c0) * 1e9 / (double)ops, ons = (s1 - s0) * 1e9 / (double)ops;

		printf("4 KiB reads, %u in flight, %u objects, %.1f s: %.0f ops/s; CPU per op: "
		       "client %.0f ns, OSDs %.0f ns (client/OSD %.2f); %" PRIu64 " wrong\n",
		       depth, nobj, t1 - t0, ops_s, cns, ons, ons > 0 ? cns / ons : 0, bad);
		printf("{\"bench\":\"depth\",\"depth\":%u,\"objects\":%u,\"ops\":%" PRIu64
		       ",\"ops_s\":%.0f,\"client_ns_per_op\":%.0f,\"osd_ns_per_op\":%.0f,"
		       "\"client_over_osd\":%.3f,\"bad\":%" PRIu64 "}\n",
		       depth, nobj, ops, ops_s, cns, ons, ons > 0 ? cns / ons : 0, bad);
	}
	for (unsigned i = 0; i < depth; i++)
		cairn_op_release(sl[i].op);
	free(sl);
	for (unsigned i = 0; i < nobj; i++) {
		obj_name(name, sizeof(name), i);
		cairn_remove(io, name);
	}
	if (cairn_cq_destroy(cq))
		fprintf(stderr, "depth_bench: completions still held at the end\n");
	cairn_ioctx_destroy(io);
	cairn_shutdown(cl);
	return bad ? 1 : 0;
}
