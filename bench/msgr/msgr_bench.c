/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Messenger throughput and message rate over loopback, one connection,
 * beside raw TCP doing the same exchange in the same run:
 *
 *  - 4 MiB messages, 8 in flight: MiB/s
 *  - 4 KiB messages, 1 in flight and 64 in flight: messages/s
 *
 * Both use the same exchange: the client sends a request (header + payload),
 * the server answers each with a small reply, and the client keeps a fixed
 * number of requests outstanding. Raw TCP is blocking send/recv, one thread
 * per side, with the messenger's warm-up (200 ms) and its batching (replies
 * read as they come, several at once; what they free sent in one writev;
 * the server reads up to 1 MiB at a time and answers every request complete
 * in it with one write);
 * the messenger runs a reactor per side (backend from
 * CAIRN_REACTOR, default auto), lossless sessions, crc32c on every frame,
 * GMAC frame tags (protocol 3; beside it, MACs off and protocol 2's
 * Poly1305 tags for the 4 MiB and 64-in-flight cases).
 * Prints a table, then one JSON line. MSGR_BENCH_SMALL=1 runs only 4 KiB x 64
 * in flight without MACs (for perf record: the messenger's per-message cost),
 * MSGR_BENCH_BIG=1 only 4 MiB x 8; =msgr instead of 1 leaves out the raw TCP
 * runs; MSGR_BENCH_MAC=1 keeps the frame MACs, MSGR_BENCH_NOCRC=1 turns
 * crc_data off.
 */
#include "bench_stats.h"
#include "cm/crc32c.h"
#include "cm/err.h"
#include "cm/frame.h"
#include "cm/msgr.h"
#include "cm/sock.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/uio.h>

#define T_REQ     500
#define T_REP     501
#define RAW_BATCH 64 /* requests or replies per raw TCP write at most */

static const char g_key[] = "bench-cluster-key-0123456789";
static double g_secs = 3.0;
static enum cm_reactor_backend g_backend = CM_REACTOR_AUTO;
static bool g_crc_data = true;
/* The protocol both sides speak: 0 the default (3: GMAC frame tags), 1 no
 * MACs, 2 Poly1305 frame tags (the MAC before protocol 3). */
static uint32_t g_proto;
static char g_tls_dir[64];
static bool g_tls;
/* MSGR_BENCH_SMALL=msgr: the messenger's side only (for a profiler). */
static bool g_no_raw;

/* ---------------- raw TCP ---------------- */

struct raw_srv {
	int lfd;
	size_t max;
};

static int
write_full(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void *
raw_server(void *arg)
{
	struct raw_srv *s = arg;
	size_t cap = 1u << 20;
	uint8_t *buf = malloc(cap), hdr[16], zero[RAW_BATCH * 16];
	int fd = accept(s->lfd, NULL, NULL);
	size_t hgot = 0, body_left = 0;
	bool bad = false;

	memset(zero, 0, sizeof(zero));
	cm_sock_tune(fd);
	/* As the messenger does: read what the socket has (up to 1 MiB), take
	 * every request complete in it, answer them with one write. */
	while (!bad) {
		ssize_t n = read(fd, buf, cap);
		unsigned nrep = 0;

		if (n <= 0)
			break;
		for (size_t pos = 0; pos < (size_t)n;) {
			size_t t;

			if (body_left) {
				t = CM_MIN(body_left, (size_t)n - pos);
				body_left -= t;
				pos += t;
				nrep += !body_left;
				continue;
			}
			t = CM_MIN(16 - hgot, (size_t)n - pos);
			memcpy(hdr + hgot, buf + pos, t);
			hgot += t;
			pos += t;
			if (hgot < 16)
				continue;
			hgot = 0;
			body_left = cm_get_le32(hdr);
			if (body_left > s->max)
				bad = true;
			nrep += !body_left;
		}
		while (nrep && !bad) {
			unsigned k = CM_MIN(nrep, (unsigned)RAW_BATCH);

			bad = write_full(fd, zero, (size_t)k * 16) != 0;
			nrep -= k;
		}
	}
	close(fd);
	free(buf);
	return NULL;
}

/* Send n requests (buf, len bytes each) in as few writev calls as it takes. */
static int
raw_send(int fd, uint8_t *buf, size_t len, unsigned n)
{
	struct iovec iov[RAW_BATCH];

	while (n) {
		unsigned k = CM_MIN(n, (unsigned)RAW_BATCH);
		size_t want = (size_t)k * len, done = 0;

		for (unsigned i = 0; i < k; i++)
			iov[i] = (struct iovec){ .iov_base = buf, .iov_len = len };
		while (done < want) {
			ssize_t w;
			unsigned first = (unsigned)(done / len);

			iov[first].iov_base = buf + done % len;
			iov[first].iov_len = len - done % len;
			w = writev(fd, iov + first, (int)(k - first));
			if (w <= 0)
				return -1;
			done += (size_t)w;
		}
		n -= k;
	}
	return 0;
}

/* \return completed requests per second. */
static double
raw_run(size_t size, unsigned window)
{
	struct raw_srv s = { .max = size };
	struct sockaddr_storage ss;
	socklen_t sl;
	pthread_t th;
	uint16_t port;
	char addr[32];
	uint8_t *buf = malloc(size + 16), rep[RAW_BATCH * 16];
	uint64_t done = 0, t0, end;
	size_t have = 0;
	double secs;
	int fd;

	memset(buf, 0xa5, size + 16);
	if (cm_sock_listen("127.0.0.1:0", 4, &s.lfd, &port))
		return 0;
	fcntl(s.lfd, F_SETFL, fcntl(s.lfd, F_GETFL) & ~O_NONBLOCK);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	pthread_create(&th, NULL, raw_server, &s);
	cm_sock_parse_addr(addr, &ss, &sl);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0)
		return 0;
	cm_sock_tune(fd);
	cm_put_le32(buf, (uint32_t)size);
	raw_send(fd, buf, size + 16, window);
	/* The messenger's warm-up (200 ms), then count. Replies are read as
	 * they come (several per read) and answered with one writev. */
	t0 = cm_now_ns();
	end = t0 + 200000000ull;
	for (bool counting = false;;) {
		uint64_t now = cm_now_ns();
		ssize_t got;
		unsigned n;

		if (now >= end) {
			if (counting)
				break;
			counting = true;
			t0 = now;
			end = t0 + (uint64_t)(g_secs * 1e9);
			done = 0;
		}
		got = read(fd, rep + have, sizeof(rep) - have);
		if (got <= 0)
			break;
		have += (size_t)got;
		n = (unsigned)(have / 16);
		memmove(rep, rep + (size_t)n * 16, have % 16);
		have %= 16;
		done += n;
		if (raw_send(fd, buf, size + 16, n))
			break;
	}
	secs = (double)(cm_now_ns() - t0) / 1e9;
	/* the window still in flight */
	for (size_t left = (size_t)window * 16 - have; left;) {
		ssize_t got = read(fd, rep, CM_MIN(left, sizeof(rep)));

		if (got <= 0)
			break;
		left -= (size_t)got;
	}
	shutdown(fd, SHUT_WR);
	pthread_join(th, NULL);
	close(fd);
	close(s.lfd);
	free(buf);
	return (double)done / secs;
}

/* ---------------- per-byte costs ---------------- */

static volatile uint32_t g_sink; /* keeps the crc loop */

/*
 * What the messenger adds per byte of a large message, on one core, over a
 * 4 MiB buffer in cache as it is when the socket copy has just touched it in
 * 64 KiB pieces: the frame MAC (GMAC, protocol 3) and crc32c. MiB/s.
 */
static double
prim_rate(bool mac)
{
	static const uint8_t key[CM_FRAME_MAC_KEY_LEN] = "bench-frame-mac-key-0123456789a";
	size_t piece = 64u << 10, len = 4u << 20, done = 0;
	uint8_t pre[CM_FRAME_PREAMBLE_LEN] = { 0 }, tag[CM_FRAME_MAC_LEN];
	struct cm_frame_mac *m = NULL;
	struct cm_buf *b;
	struct cm_sgl front, data;
	uint32_t crc = 0;
	uint64_t t0;

	if (cm_buf_alloc(len, &b) || (mac && cm_frame_mac_create(key, true, &m)))
		exit(2);
	memset(b->data, 0x5a, len);
	cm_sgl_init(&front);
	cm_sgl_init(&data);
	t0 = cm_now_ns();
	while (cm_now_ns() - t0 < 500000000ull) {
		for (size_t off = 0; off < len; off += piece) {
			if (mac) {
				cm_sgl_append(&data, b, off, piece);
				if (cm_frame_mac_sign(m, pre, &front, &data, tag))
					exit(2);
				cm_sgl_fini(&data);
			} else {
				crc = cm_crc32c(crc, b->data + off, piece);
			}
		}
		done += len;
	}
	g_sink = crc;
	cm_frame_mac_destroy(m);
	cm_buf_put(b);
	return (double)done / ((double)(cm_now_ns() - t0) / 1e9) / (1 << 20);
}

/* ---------------- messenger ---------------- */

struct msrv {
	struct cm_reactor *r;
	struct cm_msgr *m;
	uint16_t port;
	bool ready;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void
srv_on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct cm_msg *rep;

	(void)arg;
	if (cm_msg_create(T_REP, m->tid, &rep) == 0 && cm_conn_send(c, rep))
		cm_msg_destroy(rep);
	cm_msg_destroy(m);
}

static void
srv_on_accept(void *arg, struct cm_conn *c)
{
	(void)arg;
	(void)c;
}

static struct cm_reactor *
mk_reactor(void)
{
	struct cm_reactor_opts o;
	struct cm_reactor *r;

	cm_reactor_opts_init(&o, sizeof(o));
	o.backend = g_backend;
	if (cm_reactor_create(&o, &r)) {
		fprintf(stderr, "msgr_bench: cannot create a reactor\n");
		exit(2);
	}
	return r;
}

static struct cm_msgr *
mk_msgr(struct cm_reactor *r, const char *name, const struct cm_msgr_ops *ops, void *arg)
{
	struct cm_msgr_opts o;
	struct cm_msgr *m;

	cm_msgr_opts_init(&o, sizeof(o));
	o.entity = name;
	o.key = (const uint8_t *)g_key;
	o.key_len = strlen(g_key);
	o.ops = *ops;
	o.ops_arg = arg;
	o.crc_data = g_crc_data;
	if (g_proto)
		o.proto_min = o.proto_max = g_proto;
	if (g_tls) {
		static char cert[128], key[128];

		snprintf(cert, sizeof(cert), "%s/node.pem", g_tls_dir);
		snprintf(key, sizeof(key), "%s/node.key", g_tls_dir);
		o.tls = true;
		o.tls_cert = cert;
		o.tls_key = key;
		o.tls_verify = false; /* encryption cost only, as the baseline has no peer check */
	}
	if (cm_msgr_create(r, &o, &m)) {
		fprintf(stderr, "msgr_bench: cannot create a messenger\n");
		exit(2);
	}
	return m;
}

static void *
msrv_main(void *arg)
{
	struct msrv *s = arg;
	struct cm_msgr_ops ops = { .on_msg = srv_on_msg, .on_accept = srv_on_accept };

	s->r = mk_reactor();
	s->m = mk_msgr(s->r, "osd.0", &ops, s);
	if (cm_msgr_listen(s->m, "127.0.0.1:0", &s->port))
		exit(2);
	pthread_mutex_lock(&s->lock);
	s->ready = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	cm_reactor_run(s->r);
	cm_msgr_destroy(s->m);
	cm_reactor_destroy(s->r);
	return NULL;
}

struct mcli {
	struct cm_conn *c;
	struct cm_buf *payload;
	size_t size;
	uint64_t done, tid;
	bool up, counting, stop;
	unsigned outstanding;
};

static void
cli_send(struct mcli *k)
{
	struct cm_msg *m;

	if (cm_msg_create(T_REQ, k->tid++, &m))
		return;
	cm_sgl_append(&m->data, k->payload, 0, k->size);
	if (cm_conn_send(k->c, m)) {
		cm_msg_destroy(m);
		return;
	}
	k->outstanding++;
}

static void
cli_on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct mcli *k = arg;

	(void)c;
	cm_msg_destroy(m);
	k->outstanding--;
	if (k->counting)
		k->done++;
	if (!k->stop)
		cli_send(k);
}

static void
cli_on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct mcli *k = arg;

	(void)c;
	if (ev == CM_CONN_UP)
		k->up = true;
	else
		fprintf(stderr, "msgr_bench: session %s (%s)\n", cm_conn_event_name(ev),
			cm_strerror(rc));
}

static double
msgr_run(size_t size, unsigned window, const char **backend)
{
	struct msrv s = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct cm_msgr_ops ops = { .on_msg = cli_on_msg, .on_event = cli_on_event };
	struct mcli k = { .size = size };
	struct cm_reactor *r;
	struct cm_msgr *m;
	pthread_t th;
	char addr[32];
	uint64_t t0, end;
	double secs;

	pthread_create(&th, NULL, msrv_main, &s);
	pthread_mutex_lock(&s.lock);
	while (!s.ready)
		pthread_cond_wait(&s.cond, &s.lock);
	pthread_mutex_unlock(&s.lock);
	r = mk_reactor();
	*backend = cm_reactor_backend_name(r);
	m = mk_msgr(r, "client.bench", &ops, &k);
	cm_buf_alloc(size, &k.payload);
	memset(k.payload->data, 0xa5, size);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", s.port);
	if (cm_msgr_connect(m, addr, true, &k.c))
		exit(2);
	while (!k.up)
		cm_reactor_run_once(r, 100);
	for (unsigned i = 0; i < window; i++)
		cli_send(&k);
	/* A short warm-up, then count. */
	t0 = cm_now_ns();
	while (cm_now_ns() - t0 < 200000000ull)
		cm_reactor_run_once(r, 10);
	k.counting = true;
	t0 = cm_now_ns();
	end = t0 + (uint64_t)(g_secs * 1e9);
	while (cm_now_ns() < end)
		cm_reactor_run_once(r, 10);
	k.counting = false;
	secs = (double)(cm_now_ns() - t0) / 1e9;
	k.stop = true;
	for (int i = 0; i < 1000 && k.outstanding; i++)
		cm_reactor_run_once(r, 10);
	cm_conn_close(k.c);
	cm_conn_put(k.c);
	cm_msgr_destroy(m);
	cm_reactor_destroy(r);
	cm_buf_put(k.payload);
	cm_reactor_stop(s.r);
	pthread_join(th, NULL);
	return (double)k.done / secs;
}

#define REPS_MAX 15

/*
 * One case: each repetition measures raw TCP and then the messenger back to
 * back, so drift in the machine hits both; the ratio reported is the median
 * of the per-repetition ratios, the rates the medians of each side.
 */
struct result {
	double msgr, raw, ratio;
};

static struct result
run_case(size_t size, unsigned window, int reps, double scale, const char **bname)
{
	double m[REPS_MAX], r[REPS_MAX], q[REPS_MAX];
	struct result res;

	for (int i = 0; i < reps; i++) {
		r[i] = g_no_raw ? 0 : raw_run(size, window) * scale;
		m[i] = msgr_run(size, window, bname) * scale;
		q[i] = r[i] > 0 ? m[i] / r[i] : 0;
	}
	res.ratio = bench_median(q, reps);
	res.msgr = bench_median(m, reps);
	res.raw = bench_median(r, reps);
	return res;
}

static bool
make_cert(void)
{
	char cmd[512];

	snprintf(g_tls_dir, sizeof(g_tls_dir), "/tmp/cairn-bench-tls-XXXXXX");
	if (!mkdtemp(g_tls_dir))
		return false;
	snprintf(cmd, sizeof(cmd),
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		 "-keyout %s/node.key -out %s/node.pem -days 1 -subj /CN=bench >/dev/null 2>&1",
		 g_tls_dir, g_tls_dir);
	return system(cmd) == 0;
}

static void
remove_cert(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_tls_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "msgr_bench: could not remove %s\n", g_tls_dir);
}

int
main(int argc, char **argv)
{
	const char *be = getenv("CAIRN_REACTOR"), *bname = "?";
	struct result big, nocrc, nomac, poly, tls = { 0 }, one, many, many_nomac, many_poly;
	double mac_rate, crc_rate, ceil_both, ceil_mac;
	int reps = 5;

	if (argc > 1)
		g_secs = strtod(argv[1], NULL);
	if (argc > 2)
		reps = (int)strtol(argv[2], NULL, 10);
	if (g_secs <= 0)
		g_secs = 1.0;
	if (reps < 1 || reps > REPS_MAX)
		reps = 5;
	if (be && cm_reactor_backend_parse(be, &g_backend)) {
		fprintf(stderr, "msgr_bench: CAIRN_REACTOR must be auto, uring or epoll\n");
		return 2;
	}
	if (getenv("MSGR_BENCH_SMALL") || getenv("MSGR_BENCH_BIG")) {
		/* One case, without MACs (for a profiler): no table. */
		bool small = getenv("MSGR_BENCH_SMALL") != NULL;
		const char *v = small ? getenv("MSGR_BENCH_SMALL") : getenv("MSGR_BENCH_BIG");

		g_no_raw = !strcmp(v, "msgr");
		if (!getenv("MSGR_BENCH_MAC"))
			g_proto = CM_MSGR_PROTO_MIN;
		g_crc_data = !getenv("MSGR_BENCH_NOCRC");
		one = small ? run_case(4096, 64, reps, 1.0, &bname)
			    : run_case(4u << 20, 8, reps, 4.0, &bname);
		printf("{\"bench\":\"msgr\",\"%s%s%s\":%.0f,\"ratio\":%.3f}\n",
		       small ? "msgs_s_4k" : "mib_s", g_proto ? "_nomac" : "",
		       g_crc_data ? "" : "_nocrc", one.msgr, one.ratio);
		return 0;
	}
	big = run_case(4u << 20, 8, reps, 4.0, &bname);
	g_crc_data = false;
	nocrc = run_case(4u << 20, 8, reps, 4.0, &bname);
	g_crc_data = true;
	g_proto = CM_MSGR_PROTO_MIN;
	nomac = run_case(4u << 20, 8, reps, 4.0, &bname);
	g_proto = CM_MSGR_PROTO_MAC;
	poly = run_case(4u << 20, 8, reps, 4.0, &bname);
	g_proto = 0;
	if (make_cert()) {
		g_tls = true;
		tls = run_case(4u << 20, 8, reps, 4.0, &bname);
		g_tls = false;
		remove_cert();
	}
	one = run_case(4096, 1, reps, 1.0, &bname);
	many = run_case(4096, 64, reps, 1.0, &bname);
	g_proto = CM_MSGR_PROTO_MIN;
	many_nomac = run_case(4096, 64, reps, 1.0, &bname);
	g_proto = CM_MSGR_PROTO_MAC;
	many_poly = run_case(4096, 64, reps, 1.0, &bname);
	g_proto = 0;
	mac_rate = prim_rate(true);
	crc_rate = prim_rate(false);
	/* Raw TCP keeps each side's core busy copying (big.raw MiB/s); whatever
	 * the messenger adds per byte runs on those same cores. */
	ceil_both = 1.0 / (1.0 + big.raw / mac_rate + big.raw / crc_rate);
	ceil_mac = 1.0 / (1.0 + big.raw / mac_rate);
	printf("msgr bench: loopback, one connection, reactor %s; %d repetitions of %.1f s, each "
	       "raw TCP then messenger; medians\n",
	       bname, reps, g_secs);
	printf("  %-30s %14s %14s %8s\n", "case", "messenger", "raw TCP", "ratio");
	printf("  %-30s %10.0f MiB/s %10.0f MiB/s %8.2f\n", "4 MiB messages, 8 in flight", big.msgr,
	       big.raw, big.ratio);
	printf("  %-30s %10.0f MiB/s %10.0f MiB/s %8.2f\n", "  same, crc_data off", nocrc.msgr,
	       nocrc.raw, nocrc.ratio);
	printf("  %-30s %10.0f MiB/s %10.0f MiB/s %8.2f\n", "  same, frame MACs off", nomac.msgr,
	       nomac.raw, nomac.ratio);
	printf("  %-30s %10.0f MiB/s %10.0f MiB/s %8.2f\n", "  same, Poly1305 MACs (proto 2)",
	       poly.msgr, poly.raw, poly.ratio);
	printf("  %-30s %10.0f MiB/s %10.0f MiB/s %8.2f\n", "  same, over TLS", tls.msgr, tls.raw,
	       tls.ratio);
	printf("  %-30s %12.0f/s %12.0f/s %8.2f\n", "4 KiB messages, 1 in flight", one.msgr,
	       one.raw, one.ratio);
	printf("  %-30s %12.0f/s %12.0f/s %8.2f\n", "4 KiB messages, 64 in flight", many.msgr,
	       many.raw, many.ratio);
	printf("  %-30s %12.0f/s %12.0f/s %8.2f\n", "  same, frame MACs off", many_nomac.msgr,
	       many_nomac.raw, many_nomac.ratio);
	printf("  %-30s %12.0f/s %12.0f/s %8.2f\n", "  same, Poly1305 MACs (proto 2)",
	       many_poly.msgr, many_poly.raw, many_poly.ratio);
	printf("  per byte on one core: frame MAC (GMAC) %.0f MiB/s, crc32c %.0f MiB/s; with raw TCP\n"
	       "  at %.0f MiB/s per side's core, 4 MiB messages can reach at most %.2f of it with\n"
	       "  both (%.2f with the MAC alone) when the sender does them on its own core\n",
	       mac_rate, crc_rate, big.raw, ceil_both, ceil_mac);
	printf("{\"bench\":\"msgr\",\"reactor\":\"%s\",\"reps\":%d,\"mac_mib_s\":%.0f,"
	       "\"crc_mib_s\":%.0f,\"ceiling_mac_crc\":%.3f,\"ceiling_mac\":%.3f,\"mib_s\":%.0f,\"raw_mib_s\":%.0f,"
	       "\"ratio\":%.3f,\"mib_s_nocrc\":%.0f,\"ratio_nocrc\":%.3f,\"mib_s_tls\":%.0f,"
	       "\"ratio_tls\":%.3f,\"msgs_s_4k_1\":%.0f,\"raw_msgs_s_4k_1\":%.0f,\"ratio_4k_1\":%.3f,"
	       "\"msgs_s_4k\":%.0f,\"raw_msgs_s_4k\":%.0f,\"ratio_4k_64\":%.3f,"
	       "\"mib_s_nomac\":%.0f,\"ratio_nomac\":%.3f,\"msgs_s_4k_nomac\":%.0f,"
	       "\"ratio_4k_64_nomac\":%.3f,\"mib_s_poly\":%.0f,\"ratio_poly\":%.3f,"
	       "\"msgs_s_4k_poly\":%.0f,\"ratio_4k_64_poly\":%.3f}\n",
	       bname, reps, mac_rate, crc_rate, ceil_both, ceil_mac, big.msgr, big.raw, big.ratio,
	       nocrc.msgr, nocrc.ratio, tls.msgr, tls.ratio, one.msgr, one.raw, one.ratio,
	       many.msgr, many.raw, many.ratio, nomac.msgr, nomac.ratio, many_nomac.msgr,
	       many_nomac.ratio, poly.msgr, poly.ratio, many_poly.msgr, many_poly.ratio);
	return 0;
}
