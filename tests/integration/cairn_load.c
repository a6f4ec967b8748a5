/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A verifying object workload through libcairn, for the recovery and thrash
 * tests. Every object's contents follow from (name, generation): data of a
 * size drawn from the pair, xattr "gen", an omap of a few keys and an omap
 * header, all written in one compound op, so a reader can check any copy
 * without a record of what was written.
 *
 *   cairn_load write  -c CONF --pool P --prefix X [--first F] --count N --gen G [--max-size B]
 *       (write, verify: [--xattr-name-len N] names the generation xattr "gen" padded to N)
 *   cairn_load verify -c CONF --pool P --prefix X [--first F] --count N --gen G [--max-size B]
 *   cairn_load thrash -c CONF --pool P --prefix X --count N --seconds S [--threads T]
 *   cairn_load model  -c CONF --pool P --prefix X --count N --gen OPS [--save DIR]
 *   cairn_load mcheck -c CONF --pool P --prefix X --count N --save DIR
 *   cairn_load op     -c CONF --pool P --name O --do write|append|writefull|truncate|remove
 *                     [--off OFF] [--len SIZE] [--file F]
 *   cairn_load list   -c CONF --pool P --prefix X [--first F] --count N [--page K] [--seconds S]
 *                     [--pause 0]
 *   cairn_load health -c CONF
 *
 * write/verify use T threads too (default 4), each taking every T-th object.
 * thrash: T threads, each owning its share of the N objects, write new
 * generations and read back at random for S seconds, then read everything
 * once more. A write that returned success must never be undone (a read of
 * an older generation is a lost write); every read must be exactly some
 * generation that was written (otherwise a wrong read). Failed or timed-out
 * writes may or may not have happened. Each thread also appends numbered
 * records to a log object of its own and reads it back: an append is not
 * idempotent, so a resend applied twice shows (twice), and an acknowledged
 * record missing is lost. Exit 0 only with 0 lost, 0 wrong and 0 twice.
 * model: partial writes, appends, truncates, zeros, whole writes, removes at
 * unaligned offsets on N objects, checked against an in-memory model after
 * each op; --save keeps the final contents so mcheck can check them later.
 * --omap 0 leaves omap out (EC pools refuse it). --nspace NS: the objects
 * (and the listing) of namespace NS. The last line is JSON.
 * op: one change of object O with the bytes of file F (write at OFF,
 * append, writefull), truncate to SIZE, or remove; prints its result.
 * list: list the pool K names a page (default 7); after the first page it
 * prints {"paused":...} and waits for a line on stdin (at most S seconds),
 * so a test can change the pool's pg_num in the middle of the listing
 * (--pause 0: no wait, for a listing that runs while the count changes).
 * Every object X-F .. X-(F+N-1) must be listed exactly once: exit 0 only
 * with 0 missing and 0 listed twice.
 * health: the cluster's health through libcairn (cairn_health): the status,
 * then a line per check (CODE severity: summary).
 */
#include "cairn/cairn.h"
#include "testlib.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *g_pool = "default", *g_prefix = "load", *g_conf, *g_nspace;
static unsigned g_first, g_count = 100, g_threads = 4, g_seconds = 10;
static uint64_t g_gen = 1, g_max = 1 << 20, g_timeout; /* 0: ops wait through failures */
static bool g_omap = true; /* --omap 0: data and xattrs only (EC pools refuse omap) */
/* The xattr holding each object's generation: "gen", or with --xattr-name-len
 * N "gen" padded with 'x' to N bytes (255: the longest an xattr name may be) */
static char g_gen_attr[256] = "gen";
static const char *g_save; /* model: the final contents go to files here; mcheck reads them */
static cairn_cluster_t *g_cl;
static const char *g_name, *g_do, *g_file; /* op */
static uint64_t g_off, g_len;
static unsigned g_page = 7; /* list */
static bool g_pause = true; /* list: wait for a line after the first page */

static uint64_t
seed_of(const char *name, uint64_t gen)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	return cm_test_mix(h ^ cm_test_mix(gen + 1));
}

/* Mostly small objects, some up to max: log-uniform over [0, max]. */
/* An io on --pool, in --nspace when given. \return 0 or -errno. */
static int
io_create(cairn_ioctx_t **io)
{
	int rc = cairn_ioctx_create(g_cl, g_pool, io);

	if (!rc && g_nspace && (rc = cairn_ioctx_set_namespace(*io, g_nspace))) {
		cairn_ioctx_destroy(*io);
		*io = NULL;
	}
	return rc;
}

static size_t
size_of(uint64_t seed)
{
	unsigned bits = 0;
	uint64_t m = g_max;

	while (m >>= 1)
		bits++;
	if (!g_max)
		return 0;
	if (seed % 16 == 0)
		return 0;
	return (size_t)((cm_test_mix(seed ^ 7) % (1ull << (cm_test_mix(seed ^ 3) % (bits + 1)))) %
			(g_max + 1));
}

static unsigned
nkeys_of(uint64_t seed)
{
	return 1 + (unsigned)(seed % 5);
}

static void
name_of(unsigned i, char *buf, size_t len)
{
	snprintf(buf, len, "%s-%u", g_prefix, i);
}

/* Write generation gen of name. \return 0 or the op's error. */
static int
write_gen(cairn_ioctx_t *io, const char *name, uint64_t gen, uint8_t *buf)
{
	uint64_t seed = seed_of(name, gen);
	size_t size = size_of(seed);
	char g[32], keys[8][16], vals[8][96], hdr[64];
	unsigned nk = nkeys_of(seed);
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!op)
		return -ENOMEM;
	cm_test_fill(buf, size, seed);
	snprintf(g, sizeof(g), "%" PRIu64, gen);
	snprintf(hdr, sizeof(hdr), "h:%s:%" PRIu64, name, gen);
	cairn_op_write_full(op, buf, size);
	cairn_op_setxattr(op, g_gen_attr, g, strlen(g));
	if (g_omap)
		cairn_op_omap_clear(op);
	for (unsigned k = 0; g_omap && k < nk; k++) {
		snprintf(keys[k], sizeof(keys[k]), "k%u", k);
		snprintf(vals[k], sizeof(vals[k]), "%s:%" PRIu64 ":%u", name, gen, k);
		cairn_op_omap_set(op, keys[k], strlen(keys[k]), vals[k], strlen(vals[k]));
	}
	if (g_omap)
		cairn_op_omap_set_header(op, hdr, strlen(hdr));
	rc = cairn_operate(io, name, op, NULL);
	cairn_op_release(op);
	return rc;
}

/*
 * Read name and check it is exactly one generation. \return 0 with *gen,
 * 1 when the contents are not any generation (wrong), or the op's error.
 */
static int
read_check(cairn_ioctx_t *io, const char *name, uint64_t *gen, uint8_t *buf, uint8_t *want)
{
	cairn_op_t *op = cairn_op_create();
	char g[32];
	size_t glen = 0, got = 0, nkv = 0;
	struct cairn_kv *kvs = NULL, hdr = { 0 };
	bool more = false;
	int rc, r1 = 0, r2 = 0, r3 = 0, r4 = 0, bad = 0;

	if (!op)
		return -ENOMEM;
	cairn_op_read(op, 0, g_max + 1, buf, &got, &r1);
	cairn_op_getxattr(op, g_gen_attr, g, sizeof(g) - 1, &glen, &r2);
	if (g_omap) {
		cairn_op_omap_list(op, NULL, 0, NULL, 0, 64, &kvs, &nkv, &more, &r3);
		cairn_op_omap_get_header(op, &hdr, &r4);
	}
	rc = cairn_operate(io, name, op, NULL);
	cairn_op_release(op);
	if (rc)
		goto out;
	if (r2 || glen == 0) {
		bad = 1;
		fprintf(stderr, "%s: no gen xattr (%d)\n", name, r2);
		goto out;
	}
	g[glen] = 0;
	*gen = strtoull(g, NULL, 10);
	{
		uint64_t seed = seed_of(name, *gen);
		size_t size = size_of(seed);
		unsigned nk = nkeys_of(seed);
		char h[64];

		cm_test_fill(want, size, seed);
		if (r1 || got != size || memcmp(buf, want, size) != 0) {
			bad = 1;
			fprintf(stderr, "%s: gen %" PRIu64 ": data differs (%zu bytes, want %zu)\n",
				name, *gen, got, size);
		}
		if (!g_omap)
			goto out;
		if (r3 || nkv != nk || more) {
			bad = 1;
			fprintf(stderr, "%s: gen %" PRIu64 ": %zu omap keys, want %u\n", name, *gen,
				nkv, nk);
		}
		for (size_t k = 0; !bad && k < nkv; k++) {
			char key[32], val[128];

			snprintf(key, sizeof(key), "k%zu", k);
			snprintf(val, sizeof(val), "%s:%" PRIu64 ":%zu", name, *gen, k);
			if (kvs[k].klen != strlen(key) || memcmp(kvs[k].key, key, kvs[k].klen) ||
			    kvs[k].vlen != strlen(val) || memcmp(kvs[k].val, val, kvs[k].vlen)) {
				bad = 1;
				fprintf(stderr, "%s: gen %" PRIu64 ": omap key %zu differs\n", name,
					*gen, k);
			}
		}
		snprintf(h, sizeof(h), "h:%s:%" PRIu64, name, *gen);
		if (!bad && (r4 || hdr.vlen != strlen(h) || memcmp(hdr.val, h, hdr.vlen))) {
			bad = 1;
			fprintf(stderr, "%s: gen %" PRIu64 ": omap header differs\n", name, *gen);
		}
	}
out:
	cairn_kvs_free(kvs, nkv);
	free(hdr.key);
	free(hdr.val);
	return rc ? rc : bad;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct thr {
	unsigned first, n;
	uint64_t *acked, *tried; /* per object: last acknowledged / last attempted gen */
	uint64_t writes, write_errs, reads, read_errs, lost, wrong;
	/* The thread's append log: records 1..app_tried appended, app_ok[s] set
	 * when record s was acknowledged (appends are not idempotent: a resend
	 * applied twice shows as a duplicate). */
	uint64_t app_tried, appends, append_errs, dups;
	uint8_t *app_ok;
	/* Each append also adds 1 to the log's "count" xattr (an OSD-side
	 * counter, in the same op): app_num[s] is the count append s got back,
	 * which must be record s's place in the log (a resend answered again
	 * with the first answer, never applied twice). */
	int64_t *app_num;
	size_t app_cap;
	double longest; /* the longest op (or log read) of the loop, seconds */
	int k;
	int rc;
};

#define LOAD_NAME_LEN (CAIRN_NAME_MAX + 1) /* object names: prefix-N, up to the limit */
#define APP_REC       32 /* bytes per append record: "seq=%020llu" padded, newline */

static void
alog_name(int k, char *buf, size_t len)
{
	snprintf(buf, len, "%s-alog-%d", g_prefix, k);
}

/* Append the thread's next record. */
static void
do_append(struct thr *t, cairn_ioctx_t *io)
{
	char name[LOAD_NAME_LEN], rec[APP_REC + 1];
	uint64_t seq = ++t->app_tried;
	int64_t count = 0;
	int rc, crc = 0;

	if (seq >= t->app_cap) {
		size_t cap = t->app_cap ? 2 * t->app_cap : 1024;
		uint8_t *n = realloc(t->app_ok, cap);
		int64_t *nn = n ? realloc(t->app_num, cap * sizeof(*nn)) : NULL;

		if (n)
			t->app_ok = n;
		if (!nn) {
			t->rc = 1;
			return;
		}
		memset(n + t->app_cap, 0, cap - t->app_cap);
		memset(nn + t->app_cap, 0, (cap - t->app_cap) * sizeof(*nn));
		t->app_num = nn;
		t->app_cap = cap;
	}
	alog_name(t->k, name, sizeof(name));
	snprintf(rec, sizeof(rec), "seq=%020" PRIu64 "      \n", seq);
	{
		cairn_op_t *op = cairn_op_create();

		if (!op) {
			t->rc = 1;
			return;
		}
		cairn_op_append(op, rec, APP_REC);
		cairn_op_xattr_num(op, "count", CAIRN_NUM_ADD, 1, &count, &crc);
		rc = cairn_operate(io, name, op, NULL);
		cairn_op_release(op);
	}
	t->appends++;
	if (rc) {
		t->append_errs++;
		fprintf(stderr, "append %s #%" PRIu64 ": %s\n", name, seq, strerror(-rc));
	} else if (crc) {
		t->wrong++;
		fprintf(stderr, "WRONG: append %s #%" PRIu64 " applied, its count: %s\n", name, seq,
			strerror(-crc));
	} else {
		t->app_ok[seq] = 1;
		t->app_num[seq] = count;
	}
}

/*
 * Read the append log and check it exactly once: records in increasing
 * order, none twice (a resend applied twice), none malformed or never
 * sent (wrong), every acknowledged one there (else lost).
 */
static void
check_alog(struct thr *t, cairn_ioctx_t *io, uint8_t *buf)
{
	char name[LOAD_NAME_LEN];
	int64_t n, count = 0;
	uint64_t prev = 0, upto = 0, seen = 0;
	size_t cap = (size_t)(t->app_tried + 1) * APP_REC;
	uint8_t *b = cap <= g_max + 1 ? buf : malloc(cap);

	if (!b) {
		t->rc = 1;
		return;
	}
	alog_name(t->k, name, sizeof(name));
	{
		/* The records and the counter, from one state of the object. */
		cairn_op_t *op = cairn_op_create();
		size_t got = 0, clen = 0;
		uint8_t cb[8] = { 0 };
		int rc;

		if (!op) {
			t->rc = 1;
			goto out;
		}
		cairn_op_read(op, 0, cap, b, &got, NULL);
		cairn_op_getxattr(op, "count", cb, sizeof(cb), &clen, NULL);
		rc = cairn_operate(io, name, op, NULL);
		cairn_op_release(op);
		n = rc ? rc : (int64_t)got;
		if (!rc && clen != 8) {
			t->wrong++;
			fprintf(stderr, "WRONG: %s's count is %zu bytes\n", name, clen);
			goto out;
		}
		count = (int64_t)cm_get_le64(cb);
	}
	t->reads++;
	if (n == -ENOENT) {
		n = 0;
	} else if (n < 0) {
		t->read_errs++;
		fprintf(stderr, "read %s: %s\n", name, strerror((int)-n));
		goto out;
	}
	if (n % APP_REC) {
		t->wrong++;
		fprintf(stderr, "WRONG: %s is %" PRId64 " bytes, not whole records\n", name, n);
		goto out;
	}
	for (int64_t off = 0; off < n; off += APP_REC) {
		unsigned long long seq;

		if (sscanf((char *)b + off, "seq=%20llu", &seq) != 1 || seq == 0 ||
		    seq > t->app_tried) {
			t->wrong++;
			fprintf(stderr, "WRONG: %s record at %" PRId64 " is not one sent\n", name,
				off);
			goto out;
		}
		if (seq <= prev) {
			t->dups++;
			fprintf(stderr,
				"TWICE: %s has #%llu after #%" PRIu64
				" (an append applied twice, or out of order)\n",
				name, seq, prev);
		}
		prev = seq;
		seen++;
		if (t->app_ok[seq] && t->app_num[seq] != (int64_t)seen) {
			t->wrong++;
			fprintf(stderr,
				"WRONG: %s: append #%llu got count %" PRId64
				", but it is record %" PRIu64 "\n",
				name, seq, t->app_num[seq], seen);
		}
	}
	/* The counter went up once per record (an increment applied twice, or
	 * lost, shows here). */
	if (count != (int64_t)seen) {
		if (count > (int64_t)seen)
			t->dups++;
		else
			t->wrong++;
		fprintf(stderr, "%s: %s's count is %" PRId64 " over %" PRIu64 " records\n",
			count > (int64_t)seen ? "TWICE" : "WRONG", name, count, seen);
	}
	/* Every acknowledged record up to the last one read is there once. */
	upto = prev;
	for (uint64_t q = 1; q <= t->app_tried; q++)
		if (t->app_ok[q] && q > upto) {
			t->lost++;
			fprintf(stderr, "LOST: %s lacks acknowledged append #%" PRIu64 "\n", name,
				q);
			break;
		}
out:
	if (b != buf)
		free(b);
}

static void
check_read(struct thr *t, cairn_ioctx_t *io, unsigned i, uint8_t *buf, uint8_t *want)
{
	char name[LOAD_NAME_LEN];
	uint64_t gen = 0;
	int rc;

	name_of(t->first + i, name, sizeof(name));
	rc = read_check(io, name, &gen, buf, want);
	t->reads++;
	if (rc == -ENOENT && t->acked[i] == 0)
		return; /* never acknowledged: may not exist */
	if (rc == -ENOENT) {
		t->lost++;
		fprintf(stderr, "LOST: %s is gone, gen %" PRIu64 " was acknowledged\n", name,
			t->acked[i]);
		return;
	}
	if (rc < 0) {
		t->read_errs++;
		fprintf(stderr, "read %s: %s\n", name, strerror(-rc));
		return;
	}
	if (rc == 1) {
		t->wrong++;
		return;
	}
	if (gen < t->acked[i]) {
		t->lost++;
		fprintf(stderr,
			"LOST: %s reads gen %" PRIu64 ", gen %" PRIu64 " was acknowledged\n", name,
			gen, t->acked[i]);
	} else if (gen > t->tried[i]) {
		t->wrong++;
		fprintf(stderr,
			"WRONG: %s reads gen %" PRIu64 ", never written (last %" PRIu64 ")\n", name,
			gen, t->tried[i]);
	}
}

/* One op of the mix: an append, a log check, a write or a read. */
static void
thrash_one(struct thr *t, cairn_ioctx_t *io, uint64_t r, uint8_t *buf, uint8_t *want)
{
	unsigned i = (unsigned)(r % t->n);
	char name[LOAD_NAME_LEN];

	name_of(t->first + i, name, sizeof(name));
	if (r % 7 == 1) {
		do_append(t, io);
	} else if (r % 29 == 2) {
		check_alog(t, io, buf);
	} else if (r % 3 != 0 || !t->tried[i]) {
		uint64_t gen = ++t->tried[i];
		int rc = write_gen(io, name, gen, buf);

		t->writes++;
		if (rc == 0) {
			t->acked[i] = gen;
		} else {
			t->write_errs++;
			fprintf(stderr, "write %s gen %" PRIu64 ": %s\n", name, gen, strerror(-rc));
		}
	} else {
		check_read(t, io, i, buf, want);
	}
}

static void *
thrash_thread(void *arg)
{
	struct thr *t = arg;
	cairn_ioctx_t *io = NULL;
	uint8_t *buf = malloc(g_max + 1), *want = malloc(g_max + 1);
	uint64_t r = cm_test_mix(t->first + 1);
	double end = now_s() + g_seconds;

	if (!buf || !want || io_create(&io)) {
		t->rc = 1;
		goto out;
	}
	for (double t0 = now_s(), t1; t0 < end; t0 = t1) {
		thrash_one(t, io, r = cm_test_mix(r), buf, want);
		t1 = now_s();
		if (t1 - t0 > t->longest)
			t->longest = t1 - t0;
	}
	for (unsigned i = 0; i < t->n; i++)
		check_read(t, io, i, buf, want);
	check_alog(t, io, buf);
out:
	if (io)
		cairn_ioctx_destroy(io);
	free(buf);
	free(want);
	free(t->app_ok);
	free(t->app_num);
	return NULL;
}

static int
run_thrash(void)
{
	struct thr *t = calloc(g_threads, sizeof(*t));
	pthread_t *th = calloc(g_threads, sizeof(*th));
	uint64_t w = 0, we = 0, rd = 0, re = 0, lost = 0, wrong = 0, ap = 0, ape = 0, dups = 0;
	double longest = 0;
	unsigned per = g_count / g_threads;
	int rc = 0;

	if (!t || !th || !per)
		return 2;
	for (unsigned k = 0; k < g_threads; k++) {
		t[k].first = k * per;
		t[k].n = per;
		t[k].k = (int)k;
		t[k].acked = calloc(per, sizeof(uint64_t));
		t[k].tried = calloc(per, sizeof(uint64_t));
		if (!t[k].acked || !t[k].tried ||
		    pthread_create(&th[k], NULL, thrash_thread, &t[k]))
			return 2;
	}
	for (unsigned k = 0; k < g_threads; k++) {
		pthread_join(th[k], NULL);
		w += t[k].writes;
		we += t[k].write_errs;
		rd += t[k].reads;
		re += t[k].read_errs;
		lost += t[k].lost;
		wrong += t[k].wrong;
		ap += t[k].appends;
		ape += t[k].append_errs;
		dups += t[k].dups;
		longest = t[k].longest > longest ? t[k].longest : longest;
		rc |= t[k].rc;
		free(t[k].acked);
		free(t[k].tried);
	}
	printf("{\"writes\":%" PRIu64 ",\"write_errors\":%" PRIu64 ",\"appends\":%" PRIu64
	       ",\"append_errors\":%" PRIu64 ",\"reads\":%" PRIu64 ",\"read_errors\":%" PRIu64
	       ",\"twice\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"wrong\":%" PRIu64
	       ",\"longest_op_ms\":%.0f}\n",
	       w, we, ap, ape, rd, re, dups, lost, wrong, longest * 1000);
	free(t);
	free(th);
	return rc ? 2 : (lost || wrong || dups) ? 1 : 0;
}

struct wv {
	bool verify;
	unsigned k; /* this thread takes objects k, k + threads, ... */
	uint64_t ok, bad, bytes;
	int rc;
};

static void *
wv_thread(void *arg)
{
	struct wv *t = arg;
	cairn_ioctx_t *io = NULL;
	uint8_t *buf = malloc(g_max + 1), *want = malloc(g_max + 1);

	if (!buf || !want || io_create(&io)) {
		fprintf(stderr, "cairn_load: no pool %s or no memory\n", g_pool);
		t->rc = 2;
		goto out;
	}
	for (unsigned i = t->k; i < g_count; i += g_threads) {
		char name[LOAD_NAME_LEN];
		uint64_t gen = 0;
		int rc;

		name_of(g_first + i, name, sizeof(name));
		if (!t->verify) {
			rc = write_gen(io, name, g_gen, buf);
			t->bytes += size_of(seed_of(name, g_gen));
		} else {
			rc = read_check(io, name, &gen, buf, want);
			if (rc == 0 && gen != g_gen) {
				fprintf(stderr, "%s: gen %" PRIu64 ", want %" PRIu64 "\n", name,
					gen, g_gen);
				rc = 1;
			}
		}
		if (rc) {
			t->bad++;
			if (rc < 0)
				fprintf(stderr, "%s %s: %s\n", t->verify ? "verify" : "write", name,
					strerror(-rc));
		} else {
			t->ok++;
		}
	}
out:
	if (io)
		cairn_ioctx_destroy(io);
	free(buf);
	free(want);
	return NULL;
}

static int
run_write_verify(bool verify)
{
	struct wv *t = calloc(g_threads, sizeof(*t));
	pthread_t *th = calloc(g_threads, sizeof(*th));
	uint64_t ok = 0, bad = 0, bytes = 0;
	double t0 = now_s();
	int rc = 0;

	if (!t || !th)
		return 2;
	for (unsigned k = 0; k < g_threads; k++) {
		t[k].verify = verify;
		t[k].k = k;
		if (pthread_create(&th[k], NULL, wv_thread, &t[k]))
			return 2;
	}
	for (unsigned k = 0; k < g_threads; k++) {
		pthread_join(th[k], NULL);
		ok += t[k].ok;
		bad += t[k].bad;
		bytes += t[k].bytes;
		rc |= t[k].rc;
	}
	printf("{\"mode\":\"%s\",\"ok\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"bytes\":%" PRIu64
	       ",\"seconds\":%.2f}\n",
	       verify ? "verify" : "write", ok, bad, bytes, now_s() - t0);
	free(t);
	free(th);
	return rc ? 2 : bad ? 1 : 0;
}

/*
 * model: --count objects, --gen ops in all (one thread): writes at unaligned
 * offsets, appends, truncates, zeros, whole writes and removes at random,
 * each mirrored in memory; every object is read back whole and compared
 * after every op on it and at the end. Exit 0 when every read matched.
 */
struct mobj {
	uint8_t *data;
	size_t size, cap;
	bool exists;
};

static int
mobj_fit(struct mobj *m, size_t size)
{
	if (size > m->cap) {
		uint8_t *n = realloc(m->data, size);

		if (!n)
			return -ENOMEM;
		m->data = n;
		m->cap = size;
	}
	if (size > m->size)
		memset(m->data + m->size, 0, size - m->size);
	m->size = size;
	return 0;
}

static int
model_check(cairn_ioctx_t *io, const char *name, const struct mobj *m, uint8_t *buf, size_t max)
{
	uint64_t size = 0;
	int64_t n;
	int rc = cairn_stat(io, name, &size, NULL);

	if (!m->exists) {
		if (rc != -ENOENT) {
			fprintf(stderr, "%s: should not exist (stat %d)\n", name, rc);
			return 1;
		}
		return 0;
	}
	if (rc || size != m->size) {
		fprintf(stderr, "%s: stat %d size %" PRIu64 ", want %zu\n", name, rc, size,
			m->size);
		return 1;
	}
	n = cairn_read(io, name, buf, max, 0);
	if (n < 0 || (size_t)n != m->size || memcmp(buf, m->data, m->size)) {
		fprintf(stderr, "%s: read %" PRId64 " bytes, want %zu%s\n", name, n, m->size,
			n == (int64_t)m->size ? " (bytes differ)" : "");
		return 1;
	}
	/* and a piece from an odd place */
	if (m->size > 3) {
		size_t off = m->size / 3 + 1, len = m->size / 2;

		n = cairn_read(io, name, buf, len, off);
		if (n != (int64_t)len || memcmp(buf, m->data + off, len)) {
			fprintf(stderr, "%s: read [%zu, +%zu) differs\n", name, off, len);
			return 1;
		}
	}
	return 0;
}

static bool g_mcheck;

static int
run_model(void)
{
	cairn_ioctx_t *io = NULL;
	size_t max = (size_t)g_max * 2 + 65536;
	struct mobj *objs = calloc(g_count, sizeof(*objs));
	uint8_t *buf = malloc(max), *src = malloc(max);
	uint64_t x = seed_of(g_prefix, g_gen), ops = 0, bad = 0;
	char name[LOAD_NAME_LEN];
	int rc;

	if (!objs || !buf || !src)
		return 2;
	rc = io_create(&io);
	if (rc) {
		fprintf(stderr, "cairn_load: pool %s: %d\n", g_pool, rc);
		return 2;
	}
	for (uint64_t i = 0; i < g_gen && !bad; i++, ops++) {
		unsigned k, kind;
		struct mobj *m;
		size_t off, len;

		x = cm_test_mix(x + i);
		k = (unsigned)(x % g_count);
		m = &objs[k];
		kind = (unsigned)((x >> 8) % 10);
		off = (size_t)(cm_test_mix(x ^ 1) % (g_max + 1));
		len = (size_t)(cm_test_mix(x ^ 2) % (kind < 2 ? 64 * 1024 : g_max / 2 + 1));
		name_of(k, name, sizeof(name));
		cm_test_fill(src, len, x);
		if (m->size > g_max + g_max / 2)
			kind = 6; /* keep objects within the read buffer: truncate */
		switch (kind) {
		case 0: /* small unaligned writes */
		case 1:
		case 2:
		case 3:
			rc = cairn_write(io, name, src, len, off);
			if (!rc && !(rc = mobj_fit(m, CM_MAX(m->exists ? m->size : 0, off + len))))
				memcpy(m->data + off, src, len);
			break;
		case 4:
		case 5: { /* append */
			cairn_op_t *op = cairn_op_create();

			cairn_op_append(op, src, len);
			rc = cairn_operate(io, name, op, NULL);
			cairn_op_release(op);
			off = m->exists ? m->size : 0;
			if (!rc && !(rc = mobj_fit(m, off + len)))
				memcpy(m->data + off, src, len);
			break;
		}
		case 6: { /* truncate, up or down */
			cairn_op_t *op = cairn_op_create();

			cairn_op_truncate(op, off);
			rc = cairn_operate(io, name, op, NULL);
			cairn_op_release(op);
			if (!rc) {
				if (!m->exists)
					m->size = 0;
				if (off < m->size)
					m->size = off;
				rc = mobj_fit(m, off);
			}
			break;
		}
		case 7: { /* zero a range */
			cairn_op_t *op = cairn_op_create();

			cairn_op_zero(op, off, len);
			rc = cairn_operate(io, name, op, NULL);
			cairn_op_release(op);
			if (!rc && !(rc = mobj_fit(m, CM_MAX(m->exists ? m->size : 0, off + len))))
				memset(m->data + off, 0, len);
			break;
		}
		case 8: /* whole */
			rc = cairn_write_full(io, name, src, len);
			if (!rc) {
				m->size = 0;
				if (!(rc = mobj_fit(m, len)))
					memcpy(m->data, src, len);
			}
			break;
		default: /* remove (if there) */
			rc = cairn_remove(io, name);
			if (rc == -ENOENT && !m->exists)
				rc = 0;
			if (!rc) {
				m->exists = false;
				m->size = 0;
				break;
			}
			break;
		}
		if (rc) {
			fprintf(stderr, "%s: op %u failed: %d\n", name, kind, rc);
			bad++;
			break;
		}
		if (kind < 9)
			m->exists = true;
		if (model_check(io, name, m, buf, max)) {
			fprintf(stderr, "%s: after op %" PRIu64 ": kind %u off %zu len %zu\n", name,
				i, kind, off, len);
			bad++;
		} else if (getenv("CAIRN_LOAD_VERBOSE")) {
			fprintf(stderr, "%s: op %" PRIu64 ": kind %u off %zu len %zu size %zu\n",
				name, i, kind, off, len, m->size);
		}
	}
	if (g_mcheck) { /* only compare with what a model run saved */
		for (unsigned k = 0; k < g_count; k++) {
			char path[PATH_MAX + LOAD_NAME_LEN];
			FILE *f;

			name_of(k, name, sizeof(name));
			snprintf(path, sizeof(path), "%s/%s", g_save, name);
			f = fopen(path, "rb");
			objs[k].exists = f != NULL;
			if (f) {
				size_t got = fread(src, 1, max, f);

				fclose(f);
				if (mobj_fit(&objs[k], got))
					return 2;
				memcpy(objs[k].data, src, got);
			}
		}
	}
	for (unsigned k = 0; k < g_count && !bad; k++) {
		name_of(k, name, sizeof(name));
		bad += model_check(io, name, &objs[k], buf, max) != 0;
	}
	for (unsigned k = 0; g_save && !g_mcheck && k < g_count; k++) {
		char path[PATH_MAX + LOAD_NAME_LEN];
		FILE *f;

		name_of(k, name, sizeof(name));
		snprintf(path, sizeof(path), "%s/%s", g_save, name);
		if (!objs[k].exists) {
			unlink(path);
			continue;
		}
		f = fopen(path, "wb");
		if (!f || fwrite(objs[k].data, 1, objs[k].size, f) != objs[k].size)
			bad++;
		if (f)
			fclose(f);
	}
	printf("{\"ops\":%" PRIu64 ",\"bad\":%" PRIu64 "}\n", ops, bad);
	for (unsigned k = 0; k < g_count; k++)
		free(objs[k].data);
	free(objs);
	free(buf);
	free(src);
	cairn_ioctx_destroy(io);
	return bad ? 1 : 0;
}

static int
run_health(void)
{
	static const char *const sev[] = { "ok", "warn", "err" };
	struct cairn_health h;
	int rc = cairn_health(g_cl, &h);

	if (rc) {
		fprintf(stderr, "cairn_load: health: %s\n", strerror(-rc));
		return 1;
	}
	printf("%s\n", sev[h.status]);
	for (size_t i = 0; i < h.nchecks; i++)
		printf("%s %s: %s\n", h.checks[i].code, sev[h.checks[i].severity],
		       h.checks[i].summary);
	cairn_health_free(&h);
	return 0;
}

static int
run_op(void)
{
	cairn_ioctx_t *io = NULL;
	cairn_op_t *op = cairn_op_create();
	uint8_t *data = NULL;
	size_t n = 0;
	int rc;

	if (!op || !g_name || !g_do) {
		fprintf(stderr, "cairn_load: op needs --name and --do\n");
		cairn_op_release(op);
		return 2;
	}
	if (g_file) {
		FILE *f = fopen(g_file, "rb");
		long len = -1;

		if (f && fseek(f, 0, SEEK_END) == 0)
			len = ftell(f);
		data = len >= 0 ? malloc((size_t)len + 1) : NULL;
		if (!f || !data || fseek(f, 0, SEEK_SET) ||
		    fread(data, 1, (size_t)len, f) != (size_t)len) {
			fprintf(stderr, "cairn_load: cannot read %s\n", g_file);
			if (f)
				fclose(f);
			free(data);
			cairn_op_release(op);
			return 2;
		}
		fclose(f);
		n = (size_t)len;
	}
	if (!strcmp(g_do, "write"))
		cairn_op_write(op, g_off, data, n);
	else if (!strcmp(g_do, "append"))
		cairn_op_append(op, data, n);
	else if (!strcmp(g_do, "writefull"))
		cairn_op_write_full(op, data, n);
	else if (!strcmp(g_do, "truncate"))
		cairn_op_truncate(op, g_len);
	else if (!strcmp(g_do, "remove"))
		cairn_op_remove(op);
	else {
		fprintf(stderr, "cairn_load: unknown --do %s\n", g_do);
		free(data);
		cairn_op_release(op);
		return 2;
	}
	rc = io_create(&io);
	if (!rc)
		rc = cairn_operate(io, g_name, op, NULL);
	printf("{\"op\":\"%s\",\"name\":\"%s\",\"rc\":%d}\n", g_do, g_name, rc);
	if (io)
		cairn_ioctx_destroy(io);
	cairn_op_release(op);
	free(data);
	return rc ? 1 : 0;
}

/* list: see the top of the file. */
static int
run_list(void)
{
	struct cairn_list_cursor cur;
	cairn_ioctx_t *io = NULL;
	uint8_t *seen = calloc(g_count ? g_count : 1, 1);
	uint64_t listed = 0, pages = 0, missing = 0, twice = 0, other = 0;
	size_t plen = strlen(g_prefix);
	int rc;

	if (!seen)
		return 2;
	rc = io_create(&io);
	memset(&cur, 0, sizeof(cur));
	while (!rc && !cur.done) {
		char **names, line[64];
		size_t n;

		rc = cairn_list(io, &cur, g_page, &names, &n);
		if (rc)
			break;
		for (size_t i = 0; i < n; i++) {
			char *end;
			unsigned long k;

			listed++;
			if (strncmp(names[i], g_prefix, plen) || names[i][plen] != '-') {
				other++;
				continue;
			}
			k = strtoul(names[i] + plen + 1, &end, 10);
			if (*end || k < g_first || k - g_first >= g_count) {
				other++;
				continue;
			}
			if (seen[k - g_first]++)
				twice++;
		}
		cairn_names_free(names, n);
		if (++pages == 1 && !cur.done && g_pause) {
			struct pollfd p = { .fd = 0, .events = POLLIN };

			printf("{\"paused\":%" PRIu64 ",\"pg_num\":%u}\n", listed, cur.pg_num);
			fflush(stdout);
			if (poll(&p, 1, (int)(g_seconds ? g_seconds : 600) * 1000) != 1 ||
			    !fgets(line, sizeof(line), stdin))
				rc = -ETIMEDOUT;
		}
	}
	cairn_list_cursor_fini(&cur);
	for (unsigned i = 0; i < g_count; i++)
		missing += !seen[i];
	printf("{\"listed\":%" PRIu64 ",\"pages\":%" PRIu64 ",\"missing\":%" PRIu64
	       ",\"twice\":%" PRIu64 ",\"other\":%" PRIu64 ",\"rc\":%d}\n",
	       listed, pages, missing, twice, other, rc);
	cairn_ioctx_destroy(io);
	free(seen);
	return rc || missing || twice ? 1 : 0;
}

static uint8_t
stream_byte(uint64_t at)
{
	return (uint8_t)(((at / 7) * 2654435761u) >> 24);
}

/*
 * stream: write --count MiB to stream --name (1 MiB units over 2 objects of
 * 4 MiB) in 1 MiB calls, printing {"written":k} after each, then read it
 * all back: {"size":S,"bad":B,"rc":R}. cluster_test.sh kills object 0's
 * primary while it writes.
 */
static int
run_stream(void)
{
	struct cairn_layout l = { 1u << 20, 2, 4u << 20 };
	cairn_ioctx_t *io = NULL;
	cairn_stream_t *st = NULL;
	uint8_t *buf = malloc(1u << 20);
	uint64_t size = 0, bad = 0;
	int rc;

	if (!g_name || !buf || io_create(&io)) {
		free(buf);
		fprintf(stderr, "cairn_load: stream needs --name and a pool\n");
		return 2;
	}
	rc = cairn_stream_open(io, g_name, CAIRN_STREAM_CREATE | CAIRN_STREAM_EXCL, &l, &st);
	for (unsigned k = 0; !rc && k < g_count; k++) {
		for (size_t j = 0; j < (1u << 20); j++)
			buf[j] = stream_byte(((uint64_t)k << 20) + j);
		rc = cairn_stream_write(st, (uint64_t)k << 20, buf, 1u << 20);
		printf("{\"written\":%u,\"rc\":%d}\n", k + 1, rc);
		fflush(stdout);
		usleep(10000); /* (at most ~100 calls a second: a kill lands mid-stream) */
	}
	if (!rc)
		rc = cairn_stream_stat(st, &size);
	for (unsigned k = 0; !rc && k < g_count; k++) {
		int64_t n = cairn_stream_read(st, (uint64_t)k << 20, buf, 1u << 20);

		if (n != (1 << 20)) {
			rc = n < 0 ? (int)n : -EIO;
			break;
		}
		for (size_t j = 0; j < (1u << 20); j++)
			bad += buf[j] != stream_byte(((uint64_t)k << 20) + j);
	}
	printf("{\"size\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"rc\":%d}\n", size, bad, rc);
	if (st)
		cairn_stream_close(st);
	cairn_ioctx_destroy(io);
	free(buf);
	return rc || bad || size != (uint64_t)g_count << 20 ? 1 : 0;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * holder: hold lock "owner" on --name (3 s, renewed each second) and write
 * "H-<n>" to --prefix-0..7 (unguarded, as a block image's data writes are)
 * every 50 ms, for --seconds; the first error ends it ({"stop":rc,...}).
 * takeover: cairn_lock_take of that lock (fencing the holder once its hold
 * expired; retried while it is live), then "T" to every --prefix-k.
 * lock_fence_test.sh SIGSTOPs the holder in between.
 */
static int
run_holder(bool take)
{
	cairn_ioctx_t *io = NULL;
	uint64_t t0 = mono_ms(), renewed = 0, end = t0 + (g_seconds ? g_seconds : 30) * 1000ull;
	char obj[256], val[32];
	unsigned n = 0;
	int rc;

	if (!g_name || io_create(&io)) {
		fprintf(stderr, "cairn_load: holder/takeover needs --name and a pool\n");
		return 2;
	}
	if (take && getenv("FENCE") && !strcmp(getenv("FENCE"), "0")) {
		/* What the test guards against: a takeover that just locks
		 * once the hold expired, without fencing its holder. */
		while ((rc = cairn_lock_exclusive(io, g_name, "owner", "t", "taker", 0, 0)) ==
			       -EBUSY &&
		       mono_ms() < end)
			usleep(100000);
		for (unsigned k = 0; !rc && k < 8; k++) {
			snprintf(obj, sizeof(obj), "%s-%u", g_prefix, k);
			rc = cairn_write_full(io, obj, "T", 1);
		}
		printf("{\"taken\":%d,\"unfenced\":1}\n", rc);
		cairn_ioctx_destroy(io);
		return rc ? 1 : 0;
	}
	if (take) {
		while ((rc = cairn_lock_take(io, g_name, "owner", "t", "taker", 0, 600)) ==
			       -EBUSY &&
		       mono_ms() < end)
			usleep(100000);
		for (unsigned k = 0; !rc && k < 8; k++) {
			snprintf(obj, sizeof(obj), "%s-%u", g_prefix, k);
			rc = cairn_write_full(io, obj, "T", 1);
		}
		printf("{\"taken\":%d,\"waited_ms\":%" PRIu64 "}\n", rc, mono_ms() - t0);
		cairn_ioctx_destroy(io);
		return rc ? 1 : 0;
	}
	rc = cairn_lock_exclusive(io, g_name, "owner", "h", "holder", 3000, CAIRN_LOCK_MAY_RENEW);
	printf("{\"locked\":%d,\"client\":\"%s\"}\n", rc, cairn_client_name(g_cl));
	fflush(stdout);
	renewed = mono_ms();
	/* (a write, then the renewal when due: a writer stopped between the
	 * two sends its write first when it resumes) */
	while (!rc && mono_ms() < end) {
		snprintf(obj, sizeof(obj), "%s-%u", g_prefix, n % 8);
		snprintf(val, sizeof(val), "H-%u", n);
		rc = cairn_write_full(io, obj, val, strlen(val));
		if (rc)
			break;
		n++;
		if (mono_ms() - renewed >= 1000) {
			rc = cairn_lock_exclusive(io, g_name, "owner", "h", "holder", 3000,
						  CAIRN_LOCK_MAY_RENEW);
			renewed = mono_ms();
		}
		usleep(50000); /* (where SIGSTOP most likely lands: a write comes next) */
	}
	printf("{\"stop\":%d,\"writes\":%u}\n", rc, n);
	cairn_ioctx_destroy(io);
	return 0;
}

/*
 * rewrite: write "first" to --name, print this client's name, wait for a
 * line on stdin (at most --seconds), write "second", print the result:
 * the partition test fences this client while it cannot get new maps.
 */
static int
run_rewrite(void)
{
	cairn_ioctx_t *io = NULL;
	char line[64];
	int rc, wrc;

	if (!g_name) {
		fprintf(stderr, "cairn_load: rewrite needs --name\n");
		return 2;
	}
	rc = io_create(&io);
	if (rc)
		return 1;
	wrc = cairn_write_full(io, g_name, "first", 5);
	printf("{\"pass\":0,\"rc\":%d,\"client\":\"%s\"}\n", wrc, cairn_client_name(g_cl));
	fflush(stdout);
	{
		struct pollfd p = { .fd = 0, .events = POLLIN };

		if (poll(&p, 1, (int)(g_seconds ? g_seconds : 60) * 1000) != 1 ||
		    !fgets(line, sizeof(line), stdin))
			rc = -ETIMEDOUT;
	}
	if (!rc) {
		wrc = cairn_write_full(io, g_name, "second", 6);
		printf("{\"pass\":1,\"rc\":%d}\n", wrc);
		fflush(stdout);
	}
	cairn_ioctx_destroy(io);
	return rc ? 1 : 0;
}

/*
 * reread: read --name (up to 4 KiB, printable test data), print it, wait
 * for a line on stdin (at most --seconds), read it again, print that: the
 * partition test reads through a client whose map is held back.
 */
static int
run_reread(void)
{
	cairn_ioctx_t *io = NULL;
	char buf[4096], line[64];
	int rc;

	if (!g_name) {
		fprintf(stderr, "cairn_load: reread needs --name\n");
		return 2;
	}
	rc = io_create(&io);
	for (int pass = 0; !rc && pass < 2; pass++) {
		int64_t n;

		if (pass == 1) {
			struct pollfd p = { .fd = 0, .events = POLLIN };

			if (poll(&p, 1, (int)(g_seconds ? g_seconds : 60) * 1000) != 1 ||
			    !fgets(line, sizeof(line), stdin)) {
				rc = -ETIMEDOUT;
				break;
			}
		}
		n = cairn_read(io, g_name, buf, sizeof(buf) - 1, 0);
		for (int64_t i = 0; i < n; i++)
			if (buf[i] < 0x20 || buf[i] > 0x7e || buf[i] == '"' || buf[i] == '\\')
				buf[i] = '.';
		if (n >= 0)
			printf("{\"pass\":%d,\"rc\":0,\"data\":\"%.*s\"}\n", pass, (int)n, buf);
		else
			printf("{\"pass\":%d,\"rc\":%" PRId64 "}\n", pass, n);
		fflush(stdout);
	}
	if (io)
		cairn_ioctx_destroy(io);
	return rc ? 1 : 0;
}

int
main(int argc, char **argv)
{
	struct cairn_opts o;
	char err[256];
	const char *mode = argc > 1 ? argv[1] : "";
	int rc;

	for (int i = 2; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (!strcmp(k, "-c"))
			g_conf = v;
		else if (!strcmp(k, "--pool"))
			g_pool = v;
		else if (!strcmp(k, "--prefix"))
			g_prefix = v;
		else if (!strcmp(k, "--nspace"))
			g_nspace = v;
		else if (!strcmp(k, "--first"))
			g_first = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(k, "--count"))
			g_count = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(k, "--gen"))
			g_gen = strtoull(v, NULL, 10);
		else if (!strcmp(k, "--max-size"))
			g_max = strtoull(v, NULL, 10);
		else if (!strcmp(k, "--threads"))
			g_threads = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(k, "--seconds"))
			g_seconds = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(k, "--omap"))
			g_omap = strcmp(v, "0") != 0;
		else if (!strcmp(k, "--xattr-name-len")) {
			size_t n = strtoul(v, NULL, 10);

			if (n < 3 || n >= sizeof(g_gen_attr)) {
				fprintf(stderr, "cairn_load: --xattr-name-len 3..255\n");
				return 2;
			}
			memset(g_gen_attr + 3, 'x', n - 3);
			g_gen_attr[n] = 0;
		} else if (!strcmp(k, "--timeout"))
			g_timeout = strtoull(v, NULL, 10);
		else if (!strcmp(k, "--save"))
			g_save = v;
		else if (!strcmp(k, "--name"))
			g_name = v;
		else if (!strcmp(k, "--do"))
			g_do = v;
		else if (!strcmp(k, "--file"))
			g_file = v;
		else if (!strcmp(k, "--off"))
			g_off = strtoull(v, NULL, 10);
		else if (!strcmp(k, "--len"))
			g_len = strtoull(v, NULL, 10);
		else if (!strcmp(k, "--page"))
			g_page = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(k, "--pause"))
			g_pause = strcmp(v, "0") != 0;
		else {
			fprintf(stderr, "cairn_load: unknown option %s\n", k);
			return 2;
		}
	}
	if (strcmp(mode, "write") && strcmp(mode, "verify") && strcmp(mode, "thrash") &&
	    strcmp(mode, "model") && strcmp(mode, "mcheck") && strcmp(mode, "op") &&
	    strcmp(mode, "reread") && strcmp(mode, "list") && strcmp(mode, "health") &&
	    strcmp(mode, "rewrite") && strcmp(mode, "holder") && strcmp(mode, "takeover") &&
	    strcmp(mode, "stream")) {
		fprintf(stderr,
			"usage: cairn_load write|verify|thrash|model|mcheck|op|reread|rewrite|holder|takeover|stream|list|health -c CONF "
			"[--pool P] [--nspace NS] "
			"[--prefix X] [--first F] [--count N] [--gen G] [--max-size B] [--threads T] "
			"[--seconds S] [--omap 0|1] [--timeout MS] [--save DIR] [--name O --do D "
			"[--off OFF] [--len SIZE] [--file F]] [--page K] [--pause 0]\n");
		return 2;
	}
	if (!g_threads || g_max > (1ull << 30)) {
		fprintf(stderr, "cairn_load: bad --threads or --max-size\n");
		return 2;
	}
	cairn_opts_init(&o, sizeof(o));
	o.conf_file = g_conf;
	o.op_timeout_ms = g_timeout;
	if (getenv("CAIRN_TEST_IO_THREADS")) /* (tests run some loads on several io threads) */
		o.io_threads = strtoul(getenv("CAIRN_TEST_IO_THREADS"), NULL, 10);
	rc = cairn_connect(&o, &g_cl, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "cairn_load: connect: %s\n", err);
		return 2;
	}
	g_mcheck = !strcmp(mode, "mcheck");
	if (g_mcheck && !g_save) {
		fprintf(stderr, "cairn_load: mcheck needs --save DIR\n");
		return 2;
	}
	if (g_mcheck)
		g_gen = 0;
	rc = !strcmp(mode, "health")     ? run_health()
	     : !strcmp(mode, "op")       ? run_op()
	     : !strcmp(mode, "reread")   ? run_reread()
	     : !strcmp(mode, "rewrite")  ? run_rewrite()
	     : !strcmp(mode, "holder")   ? run_holder(false)
	     : !strcmp(mode, "stream")   ? run_stream()
	     : !strcmp(mode, "takeover") ? run_holder(true)
	     : !strcmp(mode, "list")     ? run_list()
	     : !strcmp(mode, "thrash")   ? run_thrash()
	     : !strcmp(mode, "model") || !strcmp(mode, "mcheck")
		     ? run_model()
		     : run_write_verify(!strcmp(mode, "verify"));
	cairn_shutdown(g_cl);
	return rc;
}
