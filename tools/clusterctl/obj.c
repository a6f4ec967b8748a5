/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clusterctl obj put|get|stat|rm|ls and clusterctl bench: objects through
 * libcairn.
 */
#include "ctl.h"
#include "cairn/cairn.h"
#include "cm/err.h"

#include <jansson.h>
#include <pthread.h>

#define BENCH_PREFIX "bench_obj" /* objects: PREFIX_N; what 'write' left: PREFIX_meta */

static int
connect_cluster(const struct ctl_conf *c, cairn_cluster_t **clp)
{
	char err[256];
	int rc;

	if (!c->mon_host[0]) {
		fprintf(stderr, "clusterctl: mon_host is not set: pass -c DIR/cairn.conf, set "
				"CAIRN_CONF, or run 'clusterctl up' first\n");
		return 2;
	}
	/* (op_timeout_ms 0: ops wait; Ctrl-C stops them) */
	rc = ctl_connect(c, (unsigned)c->command_timeout_ms, (unsigned)c->op_timeout_ms, clp, err,
			 sizeof(err));
	if (rc) {
		fprintf(stderr, "clusterctl: cannot connect: %s\n", err);
		return 1;
	}
	return 0;
}

static int
open_pool(cairn_cluster_t *cl, const char *pool, cairn_ioctx_t **io)
{
	int rc = cairn_ioctx_create(cl, pool, io);

	if (rc)
		fprintf(stderr, "clusterctl: pool '%s': %s\n", pool,
			rc == -ENOENT ? "no such pool" : cm_strerror(rc));
	return rc;
}

static int
read_all(const char *path, uint8_t **bufp, size_t *lenp)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 1 << 20, len = 0;
	uint8_t *buf;

	if (!f)
		return -errno;
	buf = malloc(cap);
	while (buf) {
		size_t n = fread(buf + len, 1, cap - len, f);

		len += n;
		if (len < cap) {
			if (ferror(f)) {
				free(buf);
				buf = NULL;
				errno = EIO;
			}
			break;
		}
		cap *= 2;
		uint8_t *nb = realloc(buf, cap);

		if (!nb)
			free(buf);
		buf = nb;
	}
	if (f != stdin)
		fclose(f);
	if (!buf)
		return errno ? -errno : -ENOMEM;
	*bufp = buf;
	*lenp = len;
	return 0;
}

static int
obj_put(cairn_ioctx_t *io, const char *name, const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc = read_all(path, &buf, &len);

	if (rc) {
		fprintf(stderr, "clusterctl: %s: %s\n", path, cm_strerror(rc));
		return 1;
	}
	rc = cairn_write_full(io, name, buf, len);
	free(buf);
	if (rc == -E2BIG) {
		fprintf(stderr,
			"clusterctl: put %s: %zu bytes is too large: one op carries at most %u MiB "
			"(larger objects are written in ranges by the striper)\n",
			name, len, CAIRN_MAX_IO >> 20);
		return 1;
	}
	if (rc) {
		fprintf(stderr, "clusterctl: put %s: %s\n", name, cm_strerror(rc));
		return 1;
	}
	return 0;
}

static int
obj_get(cairn_ioctx_t *io, const char *name, const char *path)
{
	const size_t chunk = 16u << 20;
	uint64_t size, off = 0;
	uint8_t *buf;
	FILE *f;
	int rc = cairn_stat(io, name, &size, NULL);

	if (rc) {
		fprintf(stderr, "clusterctl: get %s: %s\n", name, cm_strerror(rc));
		return 1;
	}
	f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
	if (!f) {
		fprintf(stderr, "clusterctl: %s: %s\n", path, strerror(errno));
		return 1;
	}
	buf = malloc(chunk);
	rc = buf ? 0 : -ENOMEM;
	while (!rc && off < size) {
		int64_t n = cairn_read(io, name, buf, chunk, off);

		if (n < 0) {
			rc = (int)n;
			break;
		}
		if (n == 0)
			break;
		if (fwrite(buf, 1, (size_t)n, f) != (size_t)n)
			rc = -EIO;
		off += (uint64_t)n;
	}
	free(buf);
	if (f != stdout && fclose(f))
		rc = rc ? rc : -EIO;
	if (rc) {
		fprintf(stderr, "clusterctl: get %s: %s\n", name, cm_strerror(rc));
		return 1;
	}
	return 0;
}

/* One listed object: "name", or with every namespace "ns<TAB>name" (keys as "ns<TAB>name<TAB>key").
 */
static int
ls_one(json_t *arr, bool all, const struct cairn_obj *o)
{
	if (arr) {
		json_t *j = all ? json_pack("{s:s,s:s}", "namespace", o->nspace, "name", o->name)
				: json_string(o->name);

		if (j && all && o->key[0])
			json_object_set_new(j, "key", json_string(o->key));
		/* (JSON strings are UTF-8: other names need the text listing) */
		if (!j || json_array_append_new(arr, j))
			return -EILSEQ;
	} else if (all) {
		printf("%s\t%s%s%s\n", o->nspace, o->name, o->key[0] ? "\t" : "", o->key);
	} else { /* (a keyed object is named with its key: get needs both) */
		printf("%s%s%s\n", o->name, o->key[0] ? "\t" : "", o->key);
	}
	return 0;
}

static int
ls_done(json_t *arr, int rc, const char *what)
{
	if (arr) {
		char *t = json_dumps(arr, 0);

		if (t && !rc)
			printf("%s\n", t);
		free(t);
		json_decref(arr);
	}
	if (rc) {
		fprintf(stderr, "clusterctl: %s: %s\n", what, cm_strerror(rc));
		return 1;
	}
	return 0;
}

static int
obj_ls(cairn_ioctx_t *io, bool all, bool json)
{
	struct cairn_list_cursor cur;
	json_t *arr = json ? json_array() : NULL;
	int rc = 0;

	memset(&cur, 0, sizeof(cur));
	while (!cur.done && !rc) {
		struct cairn_obj *objs;
		size_t n;

		rc = cairn_list_objs(io, &cur, 1000, all ? CAIRN_LIST_ALL_NS : 0, &objs, &n);
		if (rc)
			break;
		for (size_t i = 0; i < n && !rc; i++)
			rc = ls_one(arr, all, &objs[i]);
		cairn_objs_free(objs, n);
	}
	cairn_list_cursor_fini(&cur);
	return ls_done(arr, rc, "ls");
}

static int
obj_ns(cairn_ioctx_t *io, bool json)
{
	json_t *arr = json ? json_array() : NULL;
	char **nss = NULL;
	size_t n = 0;
	int rc = cairn_namespace_list(io, &nss, &n);

	for (size_t i = 0; !rc && i < n; i++) {
		if (arr)
			json_array_append_new(arr, json_string(nss[i]));
		else
			printf("%s\n", nss[i][0] ? nss[i] : "(default)");
	}
	cairn_names_free(nss, n);
	return ls_done(arr, rc, "ns");
}

static int
obj_usage(void)
{
	fprintf(stderr, "usage: clusterctl obj put|get POOL NAME [FILE|-] [OPTIONS]\n"
			"       clusterctl obj stat|rm POOL NAME [OPTIONS]\n"
			"       clusterctl obj ls POOL [OPTIONS] [--all-namespaces]\n"
			"       clusterctl obj ns POOL   (the namespaces that hold objects)\n"
			"OPTIONS: --namespace NS (default: the default namespace), --key KEY\n"
			"         (the locator key: objects sharing one share a PG)\n");
	return 2;
}

int
ctl_obj(const struct ctl_conf *c, int argc, char **argv, bool json)
{
	cairn_cluster_t *cl;
	cairn_ioctx_t *io;
	const char *verb, *ns = NULL, *key = NULL, *pos[4] = { NULL };
	bool all = false;
	int status, rc, npos = 0;

	for (int i = 1; i < argc; i++) {
		bool takes = !strcmp(argv[i], "--namespace") || !strcmp(argv[i], "-N") ||
			     !strcmp(argv[i], "--key");

		if (takes && i + 1 >= argc)
			return obj_usage(); /* (an option without its value) */
		if (!strcmp(argv[i], "--namespace") || !strcmp(argv[i], "-N"))
			ns = argv[++i];
		else if (!strcmp(argv[i], "--key"))
			key = argv[++i];
		else if (!strcmp(argv[i], "--all-namespaces"))
			all = true;
		else if (argv[i][0] == '-' && argv[i][1] == '-')
			return obj_usage();
		else if (npos < 4)
			pos[npos++] = argv[i];
		else
			return obj_usage();
	}
	verb = npos ? pos[0] : "";
	if (npos < 2 || (strcmp(verb, "ls") && strcmp(verb, "ns") && npos < 3) ||
	    (strcmp(verb, "put") && strcmp(verb, "get") && strcmp(verb, "stat") &&
	     strcmp(verb, "rm") && strcmp(verb, "ls") && strcmp(verb, "ns")) ||
	    (all && strcmp(verb, "ls")) || (key && (!strcmp(verb, "ls") || !strcmp(verb, "ns"))) ||
	    ((ns || all) && !strcmp(verb, "ns")))
		return obj_usage();
	status = connect_cluster(c, &cl);
	if (status)
		return status;
	if (open_pool(cl, pos[1], &io)) {
		cairn_shutdown(cl);
		return 1;
	}
	rc = cairn_ioctx_set_namespace(io, ns);
	if (!rc)
		rc = cairn_ioctx_set_locator_key(io, key);
	if (rc) {
		fprintf(stderr, "clusterctl: bad --namespace or --key: %s\n", cm_strerror(rc));
		status = 1;
	} else if (!strcmp(verb, "put")) {
		status = obj_put(io, pos[2], npos > 3 ? pos[3] : "-");
	} else if (!strcmp(verb, "get")) {
		status = obj_get(io, pos[2], npos > 3 ? pos[3] : "-");
	} else if (!strcmp(verb, "stat")) {
		uint64_t size = 0;
		struct cairn_version v = { 0, 0 };

		rc = cairn_stat(io, pos[2], &size, &v);
		status = rc ? 1 : 0;
		if (rc)
			fprintf(stderr, "clusterctl: stat %s: %s\n", pos[2], cm_strerror(rc));
		else if (json)
			printf("{\"name\":\"%s\",\"size\":%" PRIu64 ",\"version\":\"%" PRIu64
			       ".%" PRIu64 "\"}\n",
			       pos[2], size, v.epoch, v.seq);
		else
			printf("%s size %" PRIu64 " version %" PRIu64 ".%" PRIu64 "\n", pos[2],
			       size, v.epoch, v.seq);
	} else if (!strcmp(verb, "rm")) {
		rc = cairn_remove(io, pos[2]);
		status = rc ? 1 : 0;
		if (rc)
			fprintf(stderr, "clusterctl: rm %s: %s\n", pos[2], cm_strerror(rc));
	} else if (!strcmp(verb, "ns")) {
		status = obj_ns(io, json);
	} else {
		status = obj_ls(io, all, json);
	}
	cairn_ioctx_destroy(io);
	cairn_shutdown(cl);
	return status;
}

/* ---------- bench ---------- */

struct bench {
	cairn_ioctx_t *io;
	const char *prefix; /* object names: PREFIX_N */
	int mode;           /* 0 write, 1 seq, 2 rand */
	size_t size;
	uint64_t nobj;    /* objects available (reads) */
	uint64_t max_obj; /* write: stop after this many (0: none) */
	uint64_t next;    /* next object index */
	uint64_t done, errors;
	int first_err; /* the first failed op's rc (0: none), said on stderr */
	uint64_t deadline_ns;
	uint64_t *lat_us;
	size_t nlat, caplat;
	uint64_t lat_max_us;
	/* The client-visible pauses: completions per second of the run, and the
	 * longest time without any completion. */
	uint64_t t0_ns, last_ns, max_gap_ns;
	uint32_t *per_sec;
	size_t nsec;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned inflight;
	uint64_t seed;
};

struct bslot {
	struct bench *b;
	cairn_op_t *op;
	cairn_completion_t *c;
	uint8_t *buf;
	size_t got;
	uint64_t start_ns;
	char name[96];
};

static void bench_issue(struct bslot *s);

static void
bench_cb(cairn_completion_t *c, void *arg)
{
	struct bslot *s = arg;
	struct bench *b = s->b;
	int rc = cairn_completion_rc(c);
	uint64_t now = cm_now_ns();

	pthread_mutex_lock(&b->mu);
	if (rc) {
		b->errors++;
		if (!b->first_err)
			b->first_err = rc;
	} else {
		b->done++;
	}
	if (b->nlat < b->caplat)
		b->lat_us[b->nlat++] = (now - s->start_ns) / 1000;
	b->lat_max_us = CM_MAX(b->lat_max_us, (now - s->start_ns) / 1000);
	if (!rc) {
		size_t sec = (size_t)((now - b->t0_ns) / 1000000000ull);

		b->max_gap_ns = CM_MAX(b->max_gap_ns, now - b->last_ns);
		b->last_ns = now;
		if (sec < b->nsec)
			b->per_sec[sec]++;
	}
	pthread_mutex_unlock(&b->mu);
	cairn_completion_release(s->c);
	s->c = NULL;
	cairn_op_release(s->op);
	s->op = NULL;
	bench_issue(s);
}

static void
bench_issue(struct bslot *s)
{
	struct bench *b = s->b;
	uint64_t idx;
	int rc;

	pthread_mutex_lock(&b->mu);
	if (cm_now_ns() >= b->deadline_ns || (b->mode == 1 && b->next >= b->nobj) ||
	    (b->mode == 0 && b->max_obj && b->next >= b->max_obj)) {
		b->inflight--;
		pthread_cond_broadcast(&b->cv);
		pthread_mutex_unlock(&b->mu);
		return;
	}
	if (b->mode == 2) {
		b->seed = b->seed * 6364136223846793005ull + 1442695040888963407ull;
		idx = (b->seed >> 33) % b->nobj;
	} else {
		idx = b->next++;
	}
	pthread_mutex_unlock(&b->mu);
	snprintf(s->name, sizeof(s->name), "%s_%" PRIu64, b->prefix, idx);
	s->op = cairn_op_create();
	s->c = cairn_completion_create(bench_cb, s);
	if (b->mode == 0)
		cairn_op_write_full(s->op, s->buf, b->size);
	else
		cairn_op_read(s->op, 0, b->size, s->buf, &s->got, NULL);
	s->start_ns = cm_now_ns();
	rc = cairn_aio_operate(b->io, s->name, s->op, s->c);
	if (rc) {
		pthread_mutex_lock(&b->mu);
		b->errors++;
		if (!b->first_err)
			b->first_err = rc;
		b->inflight--;
		pthread_cond_broadcast(&b->cv);
		pthread_mutex_unlock(&b->mu);
	}
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int
ctl_bench(const struct ctl_conf *c, int argc, char **argv, bool json)
{
	const char *pool = argc > 1 ? argv[1] : NULL, *mode = argc > 2 ? argv[2] : "";
	uint64_t seconds = 10, size = 4 << 20, threads = 16, max_obj = 0;
	const char *prefix = BENCH_PREFIX;
	char meta_name[96];
	bool cleanup = false;
	struct bench b;
	struct bslot *slots;
	cairn_cluster_t *cl;
	uint64_t t0, el;
	int status;

	memset(&b, 0, sizeof(b));
	b.mode = !strcmp(mode, "write")  ? 0
		 : !strcmp(mode, "seq")  ? 1
		 : !strcmp(mode, "rand") ? 2
					 : -1;
	for (int i = 3; i < argc; i++) {
		int bad = 0;

		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			char *end;

			seconds = strtoull(argv[++i], &end, 10);
			bad = *end || !seconds || seconds > 86400;
		} else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
			bad = cm_parse_size(argv[++i], &size) || !size;
			if (!bad && size > CAIRN_MAX_IO) {
				fprintf(stderr,
					"clusterctl bench: --size %s is too large: one op carries at "
					"most %u MiB\n",
					argv[i], CAIRN_MAX_IO >> 20);
				return 2;
			}
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			bad = cm_parse_size(argv[++i], &threads) || !threads || threads > 1024;
		else if (!strcmp(argv[i], "--max-objects") && i + 1 < argc)
			bad = cm_parse_size(argv[++i], &max_obj) || !max_obj;
		else if (!strcmp(argv[i], "--prefix") && i + 1 < argc) {
			prefix = argv[++i];
			bad = !prefix[0] || strlen(prefix) > 64;
		} else if (!strcmp(argv[i], "--cleanup"))
			cleanup = true;
		else
			bad = 1;
		if (bad) {
			b.mode = -1;
			break;
		}
	}
	if (!pool || b.mode < 0) {
		fprintf(stderr,
			"usage: clusterctl bench POOL write|seq|rand [--seconds S] [--size B] "
			"[--threads T] [--max-objects N] [--prefix P] [--cleanup]\n");
		return 2;
	}
	b.prefix = prefix;
	/* The default prefix keeps the name earlier runs left. */
	if (!strcmp(prefix, BENCH_PREFIX))
		snprintf(meta_name, sizeof(meta_name), "bench_meta");
	else
		snprintf(meta_name, sizeof(meta_name), "%s_meta", prefix);
	status = connect_cluster(c, &cl);
	if (status)
		return status;
	if (open_pool(cl, pool, &b.io)) {
		cairn_shutdown(cl);
		return 1;
	}
	if (b.mode) {
		/* What `write` left: object count and size. */
		char meta[64] = "";
		int64_t n = cairn_read(b.io, meta_name, meta, sizeof(meta) - 1, 0);
		unsigned long long cnt = 0, sz = 0;

		if (n <= 0 || sscanf(meta, "%llu %llu", &cnt, &sz) != 2 || !cnt) {
			fprintf(stderr, "clusterctl bench: no objects from a 'write' run in %s\n",
				pool);
			cairn_ioctx_destroy(b.io);
			cairn_shutdown(cl);
			return 1;
		}
		b.nobj = cnt;
		size = sz;
	}
	b.size = (size_t)size;
	b.max_obj = max_obj;
	b.caplat = 1 << 20;
	b.lat_us = malloc(b.caplat * sizeof(*b.lat_us));
	slots = calloc(threads, sizeof(*slots));
	pthread_mutex_init(&b.mu, NULL);
	pthread_cond_init(&b.cv, NULL);
	b.seed = cm_now_ns();
	b.nsec = (size_t)seconds;
	b.per_sec = calloc(b.nsec + 1, sizeof(*b.per_sec));
	t0 = cm_now_ns();
	b.t0_ns = b.last_ns = t0;
	b.deadline_ns = t0 + seconds * 1000000000ull;
	for (uint64_t i = 0; slots && b.lat_us && i < threads; i++) {
		slots[i].b = &b;
		slots[i].buf = aligned_alloc(4096, (b.size + 4095) & ~(size_t)4095);
		if (!slots[i].buf)
			break;
		memset(slots[i].buf, (int)(0x41 + i % 26), b.size);
		pthread_mutex_lock(&b.mu);
		b.inflight++;
		pthread_mutex_unlock(&b.mu);
		bench_issue(&slots[i]);
	}
	pthread_mutex_lock(&b.mu);
	while (b.inflight)
		pthread_cond_wait(&b.cv, &b.mu);
	pthread_mutex_unlock(&b.mu);
	el = cm_now_ns() - t0;
	if (b.mode == 0) {
		char meta[64];
		int n = snprintf(meta, sizeof(meta), "%" PRIu64 " %zu", b.next, b.size);

		cairn_write_full(b.io, meta_name, meta, (size_t)n);
	}
	if (cleanup && b.mode == 0) {
		for (uint64_t i = 0; i < b.next; i++) {
			char name[96];

			snprintf(name, sizeof(name), "%s_%" PRIu64, prefix, i);
			cairn_remove(b.io, name);
		}
		cairn_remove(b.io, meta_name);
	}
	{
		double secs = (double)el / 1e9;
		double mib = (double)b.done * (double)b.size / (1 << 20) / secs;
		double iops = (double)b.done / secs;
		uint64_t p50 = 0, p99 = 0, zero_s = 0;

		/* Whole seconds of the run with no completion at all (a pause a
		 * client saw), and the longest gap between completions. */
		for (size_t i = 0; b.per_sec && i < b.nsec && i < (size_t)(el / 1000000000ull); i++)
			zero_s += !b.per_sec[i];
		if (b.nlat) {
			qsort(b.lat_us, b.nlat, sizeof(*b.lat_us), cmp_u64);
			p50 = b.lat_us[b.nlat / 2];
			p99 = b.lat_us[CM_MIN(b.nlat - 1, b.nlat * 99 / 100)];
		}
		if (!json)
			printf("%s %s: %" PRIu64 " ops of %zu bytes in %.2f s, %" PRIu64
			       " errors: %.1f MiB/s, %.0f IOPS, latency p50 %.2f ms p99 %.2f ms max "
			       "%.2f ms; longest pause %.2f s, %" PRIu64 " s with no completion\n",
			       pool, mode, b.done, b.size, secs, b.errors, mib, iops, p50 / 1000.0,
			       p99 / 1000.0, b.lat_max_us / 1000.0, b.max_gap_ns / 1e9, zero_s);
		printf("{\"bench\":\"%s\",\"pool\":\"%s\",\"size\":%zu,\"threads\":%" PRIu64
		       ",\"seconds\":%.3f,\"ops\":%" PRIu64 ",\"errors\":%" PRIu64
		       ",\"mib_s\":%.2f,\"iops\":%.1f,\"lat_p50_ms\":%.3f,\"lat_p99_ms\":%.3f"
		       ",\"lat_max_ms\":%.3f,\"max_pause_s\":%.3f,\"zero_s\":%" PRIu64 "}\n",
		       mode, pool, b.size, threads, secs, b.done, b.errors, mib, iops, p50 / 1000.0,
		       p99 / 1000.0, b.lat_max_us / 1000.0, b.max_gap_ns / 1e9, zero_s);
		status = b.errors ? 1 : 0;
		if (b.errors)
			fprintf(stderr,
				"clusterctl: bench %s %s: %" PRIu64
				" ops failed, the first with %s\n",
				pool, mode, b.errors, cm_strerror(b.first_err));
	}
	for (uint64_t i = 0; slots && i < threads; i++)
		free(slots[i].buf);
	free(slots);
	free(b.lat_us);
	free(b.per_sec);
	pthread_mutex_destroy(&b.mu);
	pthread_cond_destroy(&b.cv);
	cairn_ioctx_destroy(b.io);
	cairn_shutdown(cl);
	return status;
}
