/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CRUSH mapping rate: a 3-replica chooseleaf-host rule on 1,000 OSDs in 50
 * hosts (uneven weights), one thread, beside crushtool on the same map in the
 * same run when crushtool is installed (with --show-statistics so it maps
 * without printing each line). crushtool's rate excludes its process start and
 * map load: it runs over N/10 and over N inputs, and the rate is the
 * difference in inputs over the difference in time. Last line JSON.
 */
#include "crush/crush.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HOSTS    50
#define PER_HOST 20

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *
make_map(void)
{
	size_t cap = 1 << 20, len = 0;
	char *s = malloc(cap);

#define P(...) len += (size_t)snprintf(s + len, cap - len, __VA_ARGS__)
	P("tunable choose_local_tries 0\ntunable choose_local_fallback_tries 0\n"
	  "tunable choose_total_tries 50\ntunable chooseleaf_descend_once 1\n"
	  "tunable chooseleaf_vary_r 1\ntunable chooseleaf_stable 1\n"
	  "tunable straw_calc_version 1\ntunable allowed_bucket_algs 54\n");
	for (int i = 0; i < HOSTS * PER_HOST; i++)
		P("device %d osd.%d\n", i, i);
	P("type 0 osd\ntype 1 host\ntype 11 root\n");
	for (int h = 0; h < HOSTS; h++) {
		P("host host%d {\n\tid %d\n\talg straw2\n\thash 0\n", h, -2 - h);
		for (int j = 0; j < PER_HOST; j++)
			P("\titem osd.%d weight %.3f\n", h * PER_HOST + j, 1.0 + (j % 4) * 0.5);
		P("}\n");
	}
	P("root default {\n\tid -1\n\talg straw2\n\thash 0\n");
	for (int h = 0; h < HOSTS; h++)
		P("\titem host%d\n", h);
	P("}\nrule replicated {\n\tid 0\n\ttype replicated\n\tmin_size 1\n\tmax_size 10\n"
	  "\tstep take default\n\tstep chooseleaf firstn 0 type host\n\tstep emit\n}\n");
#undef P
	return s;
}

/* Seconds crushtool takes over inputs 0..n-1 of the compiled map bin, or -1. */
static double
crushtool_secs(const char *bin, long n)
{
	char cmd[512];
	double t0;

	snprintf(cmd, sizeof(cmd),
		 "crushtool -i %s --test --rule 0 --num-rep 3 --min-x 0 --max-x %ld "
		 "--show-statistics >/dev/null 2>&1",
		 bin, n - 1);
	t0 = now();
	if (system(cmd) != 0)
		return -1;
	return now() - t0;
}

int
main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000;
	struct crush_map *m;
	char err[256], *text = make_map(), path[] = "/tmp/cairn-crush-bench-XXXXXX", cmd[512];
	char bin[64];
	uint32_t *w;
	int res[3];
	void *work;
	volatile long sink = 0;
	double t0, ours, theirs = 0;
	int fd;

	if (n <= 0)
		n = 1000000;
	if (crush_text_parse(text, &m, err, sizeof(err))) {
		fprintf(stderr, "crush_bench: %s\n", err);
		return 1;
	}
	w = malloc(sizeof(*w) * (size_t)m->max_devices);
	for (int i = 0; i < m->max_devices; i++)
		w[i] = CRUSH_WEIGHT_ONE;
	work = malloc(crush_work_size(m, 3));
	t0 = now();
	for (long x = 0; x < n; x++) {
		int k = crush_do_rule(m, 0, (int)x, res, 3, w, m->max_devices, work);

		sink += k + res[0];
	}
	ours = (double)n / (now() - t0);
	(void)sink;
	fd = mkstemp(path);
	if (fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text) &&
	    system("command -v crushtool >/dev/null 2>&1") == 0) {
		snprintf(cmd, sizeof(cmd), "crushtool -c %s -o %s.bin >/dev/null 2>&1", path, path);
		snprintf(bin, sizeof(bin), "%s.bin", path);
		if (system(cmd) == 0) {
			double small, big;

			/* a first run warms the page cache (binary, libraries, map) */
			(void)crushtool_secs(bin, n / 10 + 1);
			small = crushtool_secs(bin, n / 10 + 1);
			big = crushtool_secs(bin, n);

			if (small >= 0 && big > small)
				theirs = (double)(n - (n / 10 + 1)) / (big - small);
		}
		unlink(bin);
	}
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	printf("crush bench: 3 replicas, chooseleaf host, %d OSDs in %d hosts, %ld inputs, 1 "
	       "thread\n",
	       HOSTS * PER_HOST, HOSTS, n);
	printf("  libcrush   %12.0f mappings/s\n", ours);
	if (theirs > 0)
		printf("  crushtool  %12.0f mappings/s (its start and map load excluded)\n",
		       theirs);
	else
		printf("  crushtool  not installed (apt-get install ceph-base to compare)\n");
	printf("{\"bench\":\"crush\",\"osds\":%d,\"hosts\":%d,\"inputs\":%ld,\"mappings_s\":%.0f,"
	       "\"crushtool_mappings_s\":%.0f,\"ratio\":%.3f}\n",
	       HOSTS * PER_HOST, HOSTS, n, ours, theirs, theirs > 0 ? ours / theirs : 0.0);
	free(w);
	free(work);
	free(text);
	crush_map_destroy(m);
	return 0;
}
