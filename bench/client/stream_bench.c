/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The striper's throughput: write a stream of GIB GiB in calls of CALL_MIB
 * MiB with INFLIGHT calls in flight, then read it back the same way,
 * through libcairn (timed without checks, as clusterctl bench; then read
 * once more, untimed, checking every byte). Prints a line per phase and a
 * JSON line last. bench/client/client_bench.sh runs it beside clusterctl
 * bench on the same cluster.
 *   stream_bench CONF POOL GIB CALL_MIB INFLIGHT
 */
#include "cairn/cairn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct slot {
	cairn_completion_t *c;
	uint8_t *buf;
	uint64_t off;
	size_t got;
	bool busy;
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The bytes of a call at off: a word per 8 bytes, from the offset. */
static void
fill(uint8_t *b, size_t len, uint64_t off)
{
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t v = (off + i) * 0x9e3779b97f4a7c15ull;

		memcpy(b + i, &v, 8);
	}
}

/* One pass over the stream; \return MiB/s, or -1 on an error (printed). */
static double
pass(cairn_stream_t *s, bool write, bool verify, uint64_t total, size_t call, unsigned inflight,
     struct slot *sl, uint64_t *bad)
{
	uint64_t next = 0, done = 0;
	double t0 = now_s();

	while (done < total) {
		for (unsigned i = 0; i < inflight; i++) {
			int rc;

			if (sl[i].busy) {
				/* (round robin: the slots finish about in the order sent) */
				rc = cairn_completion_wait(sl[i].c);
				if (rc) {
					fprintf(stderr, "stream_bench: %s at %" PRIu64 ": %s\n",
						write ? "write" : "read", sl[i].off, strerror(-rc));
					return -1;
				}
				if (!write && verify) {
					uint8_t *want = malloc(call);

					if (!want)
						return -1;
					fill(want, call, sl[i].off);
					*bad += sl[i].got != call ||
						memcmp(want, sl[i].buf, call) != 0;
					free(want);
				}
				cairn_completion_release(sl[i].c);
				sl[i].busy = false;
				done += call;
			}
			if (next >= total)
				continue;
			sl[i].c = cairn_completion_create(NULL, NULL);
			sl[i].off = next;
			if (write) {
				fill(sl[i].buf, call, next);
				rc = cairn_stream_aio_write(s, next, sl[i].buf, call, sl[i].c);
			} else {
				rc = cairn_stream_aio_read(s, next, sl[i].buf, call, &sl[i].got,
							   sl[i].c);
			}
			if (rc) {
				fprintf(stderr, "stream_bench: submit: %s\n", strerror(-rc));
				return -1;
			}
			sl[i].busy = true;
			next += call;
		}
	}
	return (double)total / (1 << 20) / (now_s() - t0);
}

int
main(int argc, char **argv)
{
	struct cairn_opts o;
	cairn_cluster_t *cl;
	cairn_ioctx_t *io;
	cairn_stream_t *s;
	struct slot *sl;
	uint64_t total, bad = 0;
	size_t call;
	unsigned inflight;
	double w, r;
	char err[256];

	if (argc != 6) {
		fprintf(stderr, "usage: stream_bench CONF POOL GIB CALL_MIB INFLIGHT\n");
		return 2;
	}
	total = strtoull(argv[3], NULL, 10) << 30;
	call = (size_t)strtoul(argv[4], NULL, 10) << 20;
	inflight = (unsigned)strtoul(argv[5], NULL, 10);
	if (!total || !call || !inflight || total % call) {
		fprintf(stderr, "stream_bench: bad sizes\n");
		return 2;
	}
	cairn_opts_init(&o, sizeof(o));
	o.conf_file = argv[1];
	if (cairn_connect(&o, &cl, err, sizeof(err))) {
		fprintf(stderr, "stream_bench: connect: %s\n", err);
		return 1;
	}
	if (cairn_ioctx_create(cl, argv[2], &io)) {
		fprintf(stderr, "stream_bench: no pool %s\n", argv[2]);
		return 1;
	}
	cairn_stream_remove(io, "stream-bench");
	if (cairn_stream_open(io, "stream-bench", CAIRN_STREAM_CREATE | CAIRN_STREAM_EXCL, NULL,
			      &s)) {
		fprintf(stderr, "stream_bench: cannot create the stream\n");
		return 1;
	}
	sl = calloc(inflight, sizeof(*sl));
	for (unsigned i = 0; sl && i < inflight; i++)
		if (!(sl[i].buf = malloc(call)))
			return 1;
	if (!sl)
		return 1;
	/* Timed passes do what clusterctl bench does (no checking); then an
	 * untimed pass checks every byte read. */
	w = pass(s, true, false, total, call, inflight, sl, &bad);
	r = w < 0 ? -1 : pass(s, false, false, total, call, inflight, sl, &bad);
	if (r >= 0 && pass(s, false, true, total, call, inflight, sl, &bad) < 0)
		r = -1;
	cairn_stream_close(s);
	cairn_stream_remove(io, "stream-bench");
	if (w < 0 || r < 0)
		return 1;
	printf("stream of %" PRIu64 " MiB in %zu MiB calls, %u in flight (4 MiB objects): "
	       "write %.1f MiB/s, read %.1f MiB/s, %" PRIu64 " calls read wrong\n",
	       total >> 20, call >> 20, inflight, w, r, bad);
	printf("{\"bench\":\"stream\",\"mib\":%" PRIu64 ",\"call_mib\":%zu,\"inflight\":%u,"
	       "\"write_mib_s\":%.1f,\"read_mib_s\":%.1f,\"bad\":%" PRIu64 "}\n",
	       total >> 20, call >> 20, inflight, w, r, bad);
	for (unsigned i = 0; i < inflight; i++)
		free(sl[i].buf);
	free(sl);
	cairn_ioctx_destroy(io);
	cairn_shutdown(cl);
	return bad ? 1 : 0;
}
