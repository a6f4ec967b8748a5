/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test peer for the two-process messenger tests.
 *
 *   msgr_peer server --listen ADDR [--key K] [--allow-resend]
 *       Verifies every byte of every request (pattern + crc), counts
 *       duplicates and order errors, replies to each. Prints "LISTENING
 *       <port>" when ready, and a JSON line of counters on SIGTERM.
 *   msgr_peer client --connect ADDR --count N [--seed S] [--inflight K]
 *                    [--lossy] [--max-size B] [--max-queue B] [--timeout-s T]
 *       Sends N requests (sizes 0 B .. max-size, skewed small), resends by
 *       tid after a session reset, exits 0 once every one is answered and
 *       checked, printing a JSON line.
 *   msgr_peer proxy --listen ADDR --to ADDR [--cut-every B] [--flip-every B]
 *       Forwards TCP both ways and injects faults: closes both sides after
 *       about B bytes, or flips one byte of the client->server stream.
 *
 * Reactor backend from CAIRN_REACTOR, as in the unit tests.
 */
#include "cm/crc32c.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/msgr.h"
#include "cm/sock.h"
#include "testlib.h"

#include <cairn/msgr.pb-c.h>
#include <poll.h>
#include <signal.h>

CM_LOG_SUBSYS(peer);

#define T_REQ 400
#define T_REP 401

static const char *g_key = "integration-test-cluster-key";
static struct cm_reactor *g_r;
static volatile sig_atomic_t g_term;

static void
on_term(int sig)
{
	(void)sig;
	g_term = 1;
	if (g_r)
		cm_reactor_stop(g_r);
}

static uint64_t
mix64(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dull;
	x ^= x >> 33;
	return x;
}

static uint64_t
pattern_seed(uint64_t seed, uint64_t index)
{
	return seed * 1000003ull + index * 7919ull;
}

/* Mostly small, some medium, a few up to max; index 0 is empty and index 1 is max. */
static size_t
msg_size(uint64_t seed, uint64_t index, size_t max)
{
	uint64_t h = mix64(seed ^ (index * 0x9e3779b97f4a7c15ull));
	unsigned pick = (unsigned)(h % 1000);
	double u = (double)((h >> 20) & 0xfffff) / (double)0x100000;
	size_t lo, hi;

	if (index == 0)
		return 0;
	if (index == 1)
		return max;
	if (pick < 900) {
		lo = 0;
		hi = 4096;
		return CM_MIN(max, (size_t)(u * (double)hi));
	}
	if (pick < 998) {
		lo = 4096;
		hi = 256 * 1024;
	} else {
		lo = 256 * 1024;
		hi = max;
	}
	if (hi <= lo)
		return CM_MIN(lo, max);
	/* log-uniform between lo and hi */
	return CM_MIN(max, (size_t)((double)lo *
				    __builtin_exp(u * __builtin_log((double)hi / (double)lo))));
}

static struct cm_msgr *
make_msgr(const char *entity, const struct cm_msgr_ops *ops, void *arg, size_t max_queue)
{
	struct cm_msgr_opts o;
	struct cm_msgr *m;
	int rc;

	cm_msgr_opts_init(&o, sizeof(o));
	o.entity = entity;
	o.key = (const uint8_t *)g_key;
	o.key_len = strlen(g_key);
	o.ops = *ops;
	o.ops_arg = arg;
	o.max_data = 32u << 20;
	if (max_queue)
		o.max_queue_bytes = max_queue;
	rc = cm_msgr_create(g_r, &o, &m);
	if (rc) {
		fprintf(stderr, "msgr_create: %s\n", cm_strerror(rc));
		exit(2);
	}
	return m;
}

static void
make_reactor(void)
{
	struct cm_reactor_opts ro;
	int rc;

	cm_reactor_opts_init(&ro, sizeof(ro));
	ro.backend = cm_test_backend();
	rc = cm_reactor_create(&ro, &g_r);
	if (rc) {
		fprintf(stderr, "reactor: %s\n", cm_strerror(rc));
		exit(2);
	}
}

/* ------------------------------ server ------------------------------ */

struct srv {
	bool allow_resend;
	uint64_t recv, bytes, bad, dups, order_errors;
	uint8_t *seen; /* bitmap by index */
	size_t seen_bits;
};

struct srv_session {
	uint64_t last;
	bool any;
};

static void
srv_on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct srv *s = arg;
	struct srv_session *ss = cm_conn_user(c);
	Cairn__Msgr__Echo *e;
	Cairn__Msgr__Echo rep = CAIRN__MSGR__ECHO__INIT;
	struct cm_msg *r;
	uint32_t crc;
	bool ok = true;

	if (m->type != T_REQ) {
		s->bad++;
		cm_msg_destroy(m);
		return;
	}
	e = (Cairn__Msgr__Echo *)cm_msg_unpack_front(m, &cairn__msgr__echo__descriptor);
	if (!e) {
		s->bad++;
		cm_msg_destroy(m);
		return;
	}
	crc = cm_sgl_crc32c(&m->data, 0);
	if (e->data_len != m->data.len || crc != e->data_crc || e->index != m->tid)
		ok = false;
	if (ok && m->data.n > 0) {
		/* A received message's data is one slice. */
		if (m->data.n != 1 ||
		    cm_test_check(m->data.sg[0].buf->data + m->data.sg[0].off, m->data.len,
				  pattern_seed(e->seed, e->index)) != -1)
			ok = false;
	}
	if (!ok)
		s->bad++;
	if (ss) {
		if (ss->any && e->index <= ss->last && !s->allow_resend)
			s->order_errors++;
		ss->any = true;
		ss->last = e->index;
	}
	if (e->index < s->seen_bits) {
		if (s->seen[e->index / 8] & (1u << (e->index % 8)))
			s->dups++;
		s->seen[e->index / 8] |= (uint8_t)(1u << (e->index % 8));
	}
	s->recv++;
	s->bytes += m->data.len;
	rep.index = e->index;
	rep.data_len = e->data_len;
	rep.data_crc = crc;
	if (cm_msg_create(T_REP, m->tid, &r) == 0) {
		if (cm_msg_set_front(r, &rep.base) || cm_conn_send(c, r))
			cm_msg_destroy(r);
	}
	protobuf_c_message_free_unpacked(&e->base, NULL);
	cm_msg_destroy(m);
}

static void
srv_on_accept(void *arg, struct cm_conn *c)
{
	(void)arg;
	cm_conn_set_user(c, calloc(1, sizeof(struct srv_session)));
	cm_conn_get(c);
}

static void
srv_on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	(void)arg;
	CM_INFO("server session event=%s peer=%s rc=%d", cm_conn_event_name(ev), cm_conn_peer(c),
		rc);
	if (ev == CM_CONN_CLOSED || ev == CM_CONN_RESET) {
		free(cm_conn_user(c));
		cm_conn_set_user(c, NULL);
		cm_conn_put(c);
	}
}

static int
run_server(const char *listen)
{
	struct srv s = { 0 };
	struct cm_msgr_ops ops = { .on_msg = srv_on_msg,
				   .on_accept = srv_on_accept,
				   .on_event = srv_on_event };
	struct cm_msgr *m;
	struct cm_msgr_stats st;
	uint16_t port;
	int rc;

	s.allow_resend = getenv("PEER_ALLOW_RESEND") != NULL;
	s.seen_bits = 8u << 20;
	s.seen = calloc(s.seen_bits / 8, 1);
	make_reactor();
	m = make_msgr("osd.0", &ops, &s, 0);
	rc = cm_msgr_listen(m, listen, &port);
	if (rc) {
		fprintf(stderr, "listen %s: %s\n", listen, cm_strerror(rc));
		return 2;
	}
	printf("LISTENING %u\n", port);
	fflush(stdout);
	cm_reactor_run(g_r);
	cm_msgr_get_stats(m, &st);
	printf("{\"recv\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"dups\":%" PRIu64
	       ",\"order_errors\":%" PRIu64 ",\"crc_errors\":%" PRIu64 ",\"bad_frames\":%" PRIu64
	       ",\"auth_failures\":%" PRIu64 ",\"sock_resets\":%" PRIu64
	       ",\"mac_failures\":%" PRIu64 "}\n",
	       s.recv, s.bytes, s.bad, s.dups, s.order_errors, st.crc_errors, st.bad_frames,
	       st.auth_failures, st.sock_resets, st.mac_failures);
	fflush(stdout);
	_exit(0); /* sessions hold per-connection state we need not unwind */
}

/* ------------------------------ client ------------------------------ */

struct cli {
	struct cm_conn *c;
	uint64_t n, seed, next, replied, resent, eagain, bytes;
	unsigned inflight, outstanding;
	size_t max_size, fixed_size;
	uint8_t *state; /* per index: 0 unsent, 1 sent, 2 replied */
	uint32_t *crc;
	uint64_t *resend;
	size_t nresend;
	size_t peak_queue;
	bool blocked, failed;
	int fail_rc;
};

static int
cli_send_one(struct cli *k, uint64_t idx)
{
	Cairn__Msgr__Echo e = CAIRN__MSGR__ECHO__INIT;
	size_t len = k->fixed_size ? k->fixed_size : msg_size(k->seed, idx, k->max_size);
	struct cm_msg *m;
	struct cm_buf *b;
	int rc;

	rc = cm_msg_create(T_REQ, idx, &m);
	if (rc)
		return rc;
	rc = cm_buf_alloc(len, &b);
	if (rc) {
		cm_msg_destroy(m);
		return rc;
	}
	cm_test_fill(b->data, len, pattern_seed(k->seed, idx));
	k->crc[idx] = cm_crc32c(0, b->data, len);
	cm_sgl_append(&m->data, b, 0, len);
	cm_buf_put(b);
	e.seed = k->seed;
	e.index = idx;
	e.data_len = (uint32_t)len;
	e.data_crc = k->crc[idx];
	cm_msg_set_front(m, &e.base);
	rc = cm_conn_send(k->c, m);
	if (rc) {
		cm_msg_destroy(m);
		return rc;
	}
	k->bytes += len;
	k->peak_queue = CM_MAX(k->peak_queue, cm_conn_queued_bytes(k->c));
	return 0;
}

static void
cli_pump(struct cli *k)
{
	while (!k->failed && k->outstanding < k->inflight) {
		uint64_t idx;
		bool again;
		int rc;

		if (k->nresend) {
			idx = k->resend[k->nresend - 1];
			again = true;
		} else if (k->next < k->n) {
			idx = k->next;
			again = false;
		} else {
			return;
		}
		rc = cli_send_one(k, idx);
		if (rc == -EAGAIN) {
			k->eagain++;
			k->blocked = true;
			return;
		}
		if (rc == -CM_ECLOSED)
			return;
		if (rc) {
			fprintf(stderr, "send: %s\n", cm_strerror(rc));
			k->failed = true;
			return;
		}
		if (again) {
			k->nresend--;
			k->resent++;
		} else {
			k->next++;
		}
		k->state[idx] = 1;
		k->outstanding++;
	}
}

static void
cli_on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct cli *k = arg;
	Cairn__Msgr__Echo *e;

	(void)c;
	e = (Cairn__Msgr__Echo *)cm_msg_unpack_front(m, &cairn__msgr__echo__descriptor);
	if (!e || m->type != T_REP || e->index >= k->n) {
		fprintf(stderr, "bad reply\n");
		k->failed = true;
	} else if (k->state[e->index] == 1) {
		if (e->data_crc != k->crc[e->index]) {
			fprintf(stderr, "reply crc mismatch index=%" PRIu64 "\n", e->index);
			k->failed = true;
		}
		k->state[e->index] = 2;
		k->replied++;
		k->outstanding--;
	}
	if (e)
		protobuf_c_message_free_unpacked(&e->base, NULL);
	cm_msg_destroy(m);
	cli_pump(k);
}

static void
cli_on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct cli *k = arg;

	(void)c;
	CM_INFO("client session event=%s rc=%d (%s)", cm_conn_event_name(ev), rc, cm_strerror(rc));
	if (ev == CM_CONN_FAILED) {
		k->failed = true;
		k->fail_rc = rc;
		cm_reactor_stop(g_r);
		return;
	}
	if (ev == CM_CONN_RESET) {
		/* The session lost messages: resend every unanswered one by tid. */
		k->nresend = 0;
		for (uint64_t i = k->next; i-- > 0;) {
			if (k->state[i] == 1) {
				k->state[i] = 0;
				k->resend[k->nresend++] = i;
			}
		}
		k->outstanding = 0;
	}
	if (ev == CM_CONN_UP || ev == CM_CONN_RESET)
		cli_pump(k);
}

static void
cli_on_writable(void *arg, struct cm_conn *c)
{
	struct cli *k = arg;

	(void)c;
	k->blocked = false;
	cli_pump(k);
}

static long
peak_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int
run_client(const char *addr, uint64_t n, uint64_t seed, unsigned inflight, bool lossy,
	   size_t max_size, size_t fixed_size, size_t max_queue, unsigned timeout_s)
{
	struct cli k = { 0 };
	struct cm_msgr_ops ops = { .on_msg = cli_on_msg,
				   .on_event = cli_on_event,
				   .on_writable = cli_on_writable };
	struct cm_msgr *m;
	struct cm_msgr_stats st;
	uint64_t t0, end;
	double secs;
	int rc;

	k.n = n;
	k.seed = seed;
	k.inflight = inflight;
	k.max_size = max_size;
	k.fixed_size = fixed_size;
	k.state = calloc(n, 1);
	k.crc = calloc(n, sizeof(*k.crc));
	k.resend = calloc(n, sizeof(*k.resend));
	make_reactor();
	m = make_msgr("client.1", &ops, &k, max_queue);
	rc = cm_msgr_connect(m, addr, !lossy, &k.c);
	if (rc) {
		fprintf(stderr, "connect %s: %s\n", addr, cm_strerror(rc));
		return 2;
	}
	t0 = cm_now_ms();
	end = t0 + (uint64_t)timeout_s * 1000;
	while (!k.failed && k.replied < n && cm_now_ms() < end && !g_term)
		cm_reactor_run_once(g_r, 100);
	secs = (double)(cm_now_ms() - t0) / 1000.0;
	cm_msgr_get_stats(m, &st);
	printf("{\"sent\":%" PRIu64 ",\"replied\":%" PRIu64 ",\"resent\":%" PRIu64
	       ",\"msgr_resends\":%" PRIu64 ",\"eagain\":%" PRIu64 ",\"peak_queue\":%zu"
	       ",\"peak_rss_kb\":%ld,\"bytes\":%" PRIu64 ",\"secs\":%.2f,\"sock_resets\":%" PRIu64
	       ",\"fail_rc\":%d}\n",
	       k.next, k.replied, k.resent, st.resends, k.eagain, k.peak_queue, peak_rss_kb(),
	       k.bytes, secs, st.sock_resets, k.fail_rc);
	fflush(stdout);
	if (k.fail_rc) {
		fprintf(stderr, "client failed: %s\n", cm_strerror(k.fail_rc));
		rc = k.fail_rc == -CM_EAUTH ? 3 : 4;
	} else {
		rc = k.failed || k.replied != n ? 1 : 0;
	}
	cm_conn_close(k.c);
	cm_conn_put(k.c);
	cm_msgr_destroy(m);
	cm_reactor_destroy(g_r);
	free(k.state);
	free(k.crc);
	free(k.resend);
	return rc;
}

/* ------------------------------ proxy ------------------------------ */

#define PROXY_PAIRS 16

struct pair {
	int a, b;     /* client side, upstream side */
	uint64_t fwd; /* bytes a->b */
	uint64_t cut_at, flip_at;
};

static int
connect_blocking(const struct sockaddr_storage *ss, socklen_t len)
{
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)ss, len) < 0) {
		close(fd);
		return -1;
	}
	cm_sock_tune(fd);
	return fd;
}

static uint64_t
next_fault(uint64_t *rng, uint64_t every)
{
	if (!every)
		return UINT64_MAX;
	*rng = mix64(*rng + 1);
	return every / 2 + *rng % (every + 1);
}

static int
run_proxy(const char *listen, const char *to, uint64_t cut_every, uint64_t flip_every)
{
	struct pair p[PROXY_PAIRS];
	struct sockaddr_storage up;
	socklen_t uplen;
	int lfd, rc;
	uint16_t port;
	uint64_t rng = 12345, cuts = 0, flips = 0;
	static uint8_t buf[1 << 16];

	rc = cm_sock_parse_addr(to, &up, &uplen);
	if (!rc)
		rc = cm_sock_listen(listen, 16, &lfd, &port);
	if (rc) {
		fprintf(stderr, "proxy setup: %s\n", cm_strerror(rc));
		return 2;
	}
	for (int i = 0; i < PROXY_PAIRS; i++)
		p[i].a = p[i].b = -1;
	printf("LISTENING %u\n", port);
	fflush(stdout);
	while (!g_term) {
		struct pollfd pf[1 + 2 * PROXY_PAIRS];
		int map[1 + 2 * PROXY_PAIRS], n = 0;

		pf[n].fd = lfd;
		pf[n].events = POLLIN;
		map[n++] = -1;
		for (int i = 0; i < PROXY_PAIRS; i++) {
			if (p[i].a < 0)
				continue;
			pf[n].fd = p[i].a;
			pf[n].events = POLLIN;
			map[n++] = 2 * i;
			pf[n].fd = p[i].b;
			pf[n].events = POLLIN;
			map[n++] = 2 * i + 1;
		}
		if (poll(pf, (nfds_t)n, 200) <= 0)
			continue;
		for (int j = 0; j < n; j++) {
			struct pair *q;
			int from, dst;
			ssize_t got;

			if (!pf[j].revents)
				continue;
			if (map[j] < 0) {
				int a = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), slot = -1;

				if (a < 0)
					continue;
				for (int i = 0; i < PROXY_PAIRS; i++)
					if (p[i].a < 0) {
						slot = i;
						break;
					}
				int b = slot >= 0 ? connect_blocking(&up, uplen) : -1;

				if (b < 0) {
					close(a);
					continue;
				}
				cm_sock_tune(a);
				p[slot].a = a;
				p[slot].b = b;
				p[slot].fwd = 0;
				p[slot].cut_at = next_fault(&rng, cut_every);
				p[slot].flip_at = next_fault(&rng, flip_every);
				continue;
			}
			q = &p[map[j] / 2];
			if (q->a < 0)
				continue;
			from = (map[j] & 1) ? q->b : q->a;
			dst = (map[j] & 1) ? q->a : q->b;
			got = read(from, buf, sizeof(buf));
			if (got > 0 && !(map[j] & 1)) {
				/* client -> server: faults */
				if (q->fwd + (uint64_t)got > q->flip_at) {
					buf[q->flip_at - q->fwd] ^= 0x20;
					flips++;
					q->flip_at = UINT64_MAX;
				}
				q->fwd += (uint64_t)got;
				if (q->fwd > q->cut_at)
					got = 0; /* cut: drop this chunk, close both */
			}
			if (got > 0) {
				ssize_t off = 0;

				while (off < got) {
					ssize_t w = write(dst, buf + off, (size_t)(got - off));

					if (w <= 0)
						break;
					off += w;
				}
				if (off == got)
					continue;
			}
			if (q->fwd > q->cut_at)
				cuts++;
			close(q->a);
			close(q->b);
			q->a = q->b = -1;
		}
	}
	printf("{\"cuts\":%" PRIu64 ",\"flips\":%" PRIu64 "}\n", cuts, flips);
	fflush(stdout);
	return 0;
}

/* ------------------------------ main ------------------------------ */

static const char *
arg_str(int argc, char **argv, const char *name, const char *def)
{
	for (int i = 2; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return argv[i + 1];
	return def;
}

static uint64_t
arg_u64(int argc, char **argv, const char *name, uint64_t def)
{
	const char *s = arg_str(argc, argv, name, NULL);

	return s ? strtoull(s, NULL, 0) : def;
}

static bool
arg_flag(int argc, char **argv, const char *name)
{
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return true;
	return false;
}

int
main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_term };
	const char *lvl = getenv("CAIRN_LOG_LEVEL");
	enum cm_log_level l;

	if (argc < 2) {
		fprintf(stderr, "usage: msgr_peer server|client|proxy ...\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (lvl && cm_log_level_parse(lvl, &l) == 0)
		cm_log_set_level(l);
	g_key = arg_str(argc, argv, "--key", g_key);
	if (strcmp(argv[1], "server") == 0)
		return run_server(arg_str(argc, argv, "--listen", "127.0.0.1:0"));
	if (strcmp(argv[1], "client") == 0)
		return run_client(arg_str(argc, argv, "--connect", "127.0.0.1:1"),
				  arg_u64(argc, argv, "--count", 1000),
				  arg_u64(argc, argv, "--seed", 1),
				  (unsigned)arg_u64(argc, argv, "--inflight", 64),
				  arg_flag(argc, argv, "--lossy"),
				  arg_u64(argc, argv, "--max-size", 16u << 20),
				  arg_u64(argc, argv, "--fixed-size", 0),
				  arg_u64(argc, argv, "--max-queue", 0),
				  (unsigned)arg_u64(argc, argv, "--timeout-s", 300));
	if (strcmp(argv[1], "proxy") == 0)
		return run_proxy(arg_str(argc, argv, "--listen", "127.0.0.1:0"),
				 arg_str(argc, argv, "--to", "127.0.0.1:1"),
				 arg_u64(argc, argv, "--cut-every", 0),
				 arg_u64(argc, argv, "--flip-every", 0));
	fprintf(stderr, "unknown mode %s\n", argv[1]);
	return 2;
}
