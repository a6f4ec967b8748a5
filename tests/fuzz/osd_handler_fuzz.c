/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OSD's message handlers past their checks (osd_msg_fuzz stops at
 * osd_check_*): a real OSD, run by the library's osd_serve in this process
 * so that libFuzzer sees its coverage, in a real one-OSD cluster (a private
 * etcd and a cairn-mon that `clusterctl up --osds 0` starts from the build
 * tree), with a replicated pool of size 1 and 8 PGs, all active on it.
 *
 * Each input is one frame sent on a session authenticated with
 * client.admin's ticket (admin caps: peer messages are taken from it as from
 * an OSD), as a client or a peer OSD would send it:
 *   byte 0  the message type, among every type osd__on_msg handles
 *   byte 1  fix-ups: bit 0 the pool field set to the pool's id, bit 1 the
 *           epoch field to the OSD's map epoch, bit 2 the seed field taken
 *           modulo 8 (so that the message reaches a PG's handler rather
 *           than stopping at "no such PG"; only a front that unpacks is
 *           fixed, and it is packed again)
 *   byte 2  the data segment's length, in 64-byte units
 *   rest    the front (protobuf bytes)
 * After each frame, a stat of a missing object on the same session (an op
 * the OSD must answer, at its map's epoch) marks when the OSD has taken the
 * frame; no answer within 8 s is a hang and aborts. A crash or a sanitizer
 * report of the OSD is the fuzzer's own.
 *
 * OSD_HANDLER_FUZZ_SEEDS=DIR writes a seed corpus (valid messages of every
 * kind) to DIR and exits, without starting a cluster.
 *
 * At exit (libFuzzer's time limit) the OSD is stopped with SIGTERM and the
 * cluster with `clusterctl down`; a reaper process does the latter if this
 * process dies first.
 */
#include "osd/osd.h"
#include "mon/auth.h"
#include "mon/client_sync.h"
#include "cm/auth.h"
#include "cm/buf.h"
#include "cm/log.h"
#include "cm/msgr.h"
#include "cm/reactor.h"

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NPG        8
#define BARRIER_MS 8000

static const struct {
	uint16_t type;
	const ProtobufCMessageDescriptor *desc;
} g_types[] = {
	{ OSD_MSG_OP, &cairn__osd__osd_op__descriptor },
	{ OSD_MSG_PG_LIST, &cairn__osd__pg_list__descriptor },
	{ OSD_MSG_PG_LIST_REPLY, &cairn__osd__pg_list_reply__descriptor },
	{ OSD_MSG_REP_OP, &cairn__osd__rep_op__descriptor },
	{ OSD_MSG_REP_OP_REPLY, &cairn__osd__rep_op_reply__descriptor },
	{ OSD_MSG_PG_QUERY, &cairn__osd__pg_query__descriptor },
	{ OSD_MSG_PG_NOTIFY, &cairn__osd__pg_notify__descriptor },
	{ OSD_MSG_PUSH, &cairn__osd__push__descriptor },
	{ OSD_MSG_PUSH_REPLY, &cairn__osd__push_reply__descriptor },
	{ OSD_MSG_PING, &cairn__osd__ping__descriptor },
	{ OSD_MSG_RECOVER, &cairn__osd__recover_req__descriptor },
	{ OSD_MSG_RECOVER_DONE, &cairn__osd__pg_ack__descriptor },
	{ OSD_MSG_PG_LOG, &cairn__osd__pg_notify__descriptor },
	{ OSD_MSG_PG_LOG_ACK, &cairn__osd__pg_ack__descriptor },
	{ OSD_MSG_PG_REMOVE, &cairn__osd__pg_ack__descriptor },
	{ OSD_MSG_EC_READ, &cairn__osd__ec_read__descriptor },
	{ OSD_MSG_EC_READ_REPLY, &cairn__osd__ec_read_reply__descriptor },
};

#define NTYPES (sizeof(g_types) / sizeof(g_types[0]))

static struct {
	char dir[64];
	char conf[96];
	char addr[64];
	int64_t pool;
	uint64_t epoch;
	struct osd_conf cfg;
	struct cm_conf cc;
	pthread_t osd_th;
	bool osd_running;
	struct cm_reactor *r;
	struct cm_msgr *m;
	struct cm_conn *c;
	bool up;
	uint64_t tid, want_tid;
	bool got;
	pid_t reaper;
	struct cm_cred cred; /* client.admin's ticket for the OSD */
} g;

extern char **environ;

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "osd_handler_fuzz: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* Run a shell command; its output into out (len bytes at most); die if it fails. */
static void run(char *out, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
run(char *out, size_t len, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	FILE *p;
	size_t n = 0;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	if (!p)
		die("popen %s", cmd);
	if (out && len) {
		out[0] = 0;
		n = fread(out, 1, len - 1, p);
		out[n] = 0;
	} else {
		char sink[256];

		while (fread(sink, 1, sizeof(sink), p) > 0)
			;
	}
	st = pclose(p);
	if (st != 0)
		die("'%s' failed (status %d): %s", cmd, st, out ? out : "");
}

static int
free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &l) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static void *
osd_thread(void *arg)
{
	int rc;

	(void)arg;
	rc = osd_serve(&g.cfg);
	fprintf(stderr, "osd_handler_fuzz: osd_serve returned %d\n", rc);
	/* The OSD must not stop under fuzzing: only our SIGTERM at exit ends it. */
	if (g.osd_running)
		die("the OSD stopped on its own (rc %d); see %s/osd.log", rc, g.dir);
	return NULL;
}

static void
cluster_down(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "'%s' down --dir '%s' >/dev/null 2>&1; rm -rf '%s'",
		 CLUSTERCTL_PATH, g.dir, g.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "osd_handler_fuzz: clusterctl down failed\n");
}

static void
at_exit(void)
{
	if (g.osd_running) {
		g.osd_running = false;
		pthread_kill(g.osd_th, SIGTERM);
		pthread_join(g.osd_th, NULL);
	}
	if (g.reaper > 0) {
		kill(g.reaper, SIGKILL);
		waitpid(g.reaper, NULL, 0);
	}
	cluster_down();
}

/* A child that takes the cluster down if we die without at_exit (a crash). */
static void
start_reaper(void)
{
	sigset_t set;
	int sig;

	g.reaper = fork();
	if (g.reaper != 0)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() == 1)
		raise(SIGTERM);
	sigwait(&set, &sig);
	cluster_down();
	_exit(0);
}

static int
cred_fn(void *arg, struct cm_conn *c, unsigned kind, struct cm_cred *out)
{
	(void)arg;
	(void)c;
	(void)kind;
	*out = g.cred;
	return 0;
}

/* client.admin's ticket for the OSDs, from a monitor (the session fuzzes as an admin: peer
 * messages need profile osd or admin). */
static void
get_ticket(void)
{
	Cairn__Mon__AuthTicketRequest q = CAIRN__MON__AUTH_TICKET_REQUEST__INIT;
	Cairn__Mon__AuthTicketReply *r = NULL;
	struct mon_sync *s;
	uint8_t key[CM_AUTH_KEY_LEN];
	char name[CM_HS_ENTITY_MAX], err[256];

	if (cm_daemon_identity(&g.cfg.d, CM_AUTH_ADMIN, name, key, err, sizeof(err)) ||
	    mon_sync_open(&g.cfg.d, g.cfg.mon_host, 10000, &s, err, sizeof(err)))
		die("client.admin: %s", err);
	if (mon_sync_call(s, MON_MSG_AUTH_TICKET_REQUEST, &q.base, false, MON_MSG_AUTH_TICKET_REPLY,
			  &cairn__mon__auth_ticket_reply__descriptor, (ProtobufCMessage **)&r) ||
	    r->rc || r->ticket.len > sizeof(g.cred.ticket) ||
	    mon_ticket_session_key(key, name, r, g.cred.key))
		die("no ticket for client.admin");
	snprintf(g.cred.auth_name, sizeof(g.cred.auth_name), "%s", name);
	memcpy(g.cred.ticket, r->ticket.data, r->ticket.len);
	g.cred.ticket_len = r->ticket.len;
	g.cred.ticket_gen = r->gen;
	cairn__mon__auth_ticket_reply__free_unpacked(r, NULL);
	mon_sync_close(s);
}

static void
on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	(void)arg;
	(void)c;
	if (m->type == OSD_MSG_OP_REPLY && m->tid == g.want_tid)
		g.got = true;
	cm_msg_destroy(m);
}

static void
on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	(void)arg;
	(void)c;
	if (ev == CM_CONN_UP)
		g.up = true;
	else if (ev == CM_CONN_FAILED)
		die("session to the OSD failed: %d", rc);
	else if (ev == CM_CONN_DOWN || ev == CM_CONN_RESET)
		g.up = false;
}

static void
wait_for(bool *flag, unsigned ms, const char *what)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!*flag) {
		cm_reactor_run_once(g.r, 50);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			die("no %s within %u ms (see %s/osd.log)", what, ms, g.dir);
	}
}

/* The barrier: a stat of an object no input writes. */
static void
barrier(void)
{
	Cairn__Osd__OsdOp q = CAIRN__OSD__OSD_OP__INIT;
	Cairn__Osd__SubOp s = CAIRN__OSD__SUB_OP__INIT, *sp = &s;
	int rc;

	s.op = OSD_OP_STAT;
	q.pool = g.pool;
	q.seed = 0;
	q.oid = "\x03osd-handler-fuzz barrier"; /* a bare name no seed writes */
	q.epoch = g.epoch;
	q.n_ops = 1;
	q.ops = &sp;
	g.want_tid = ++g.tid;
	g.got = false;
	rc = cm_conn_send_pb(g.c, OSD_MSG_OP, g.want_tid, &q.base, NULL);
	if (rc)
		die("send the barrier: %d", rc);
	wait_for(&g.got, BARRIER_MS, "answer to the barrier op");
}

static void
json_field(const char *json, const char *pool, const char *field, char *out, size_t len)
{
	char key[96];
	const char *p;

	snprintf(key, sizeof(key), "\"name\": \"%s\"", pool);
	p = strstr(json, key);
	if (!p) {
		snprintf(key, sizeof(key), "\"name\":\"%s\"", pool);
		p = strstr(json, key);
	}
	out[0] = 0;
	if (!p)
		return;
	while (p > json && *p != '{')
		p--;
	snprintf(key, sizeof(key), "\"%s\":", field);
	p = strstr(p, key);
	if (!p)
		return;
	p += strlen(key);
	while (*p == ' ')
		p++;
	snprintf(out, len, "%.*s", (int)strcspn(p, ",}"), p);
}

static void
write_seeds(const char *dir)
{
	Cairn__Osd__SubOp w = CAIRN__OSD__SUB_OP__INIT, st = CAIRN__OSD__SUB_OP__INIT;
	Cairn__Osd__SubOp *ops[2] = { &w, &st };
	Cairn__Osd__OsdOp q = CAIRN__OSD__OSD_OP__INIT;
	Cairn__Osd__PgList l = CAIRN__OSD__PG_LIST__INIT;
	Cairn__Osd__PgQuery pq = CAIRN__OSD__PG_QUERY__INIT;
	Cairn__Osd__Ping ping = CAIRN__OSD__PING__INIT;
	Cairn__Osd__Push push = CAIRN__OSD__PUSH__INIT;
	Cairn__Osd__PgAck ack = CAIRN__OSD__PG_ACK__INIT;
	Cairn__Osd__EcRead er = CAIRN__OSD__EC_READ__INIT;
	Cairn__Osd__RecoverReq rr = CAIRN__OSD__RECOVER_REQ__INIT;
	Cairn__Osd__PgNotify pn = CAIRN__OSD__PG_NOTIFY__INIT;
	Cairn__Osd__RepOp ro = CAIRN__OSD__REP_OP__INIT;
	Cairn__Osd__LogEntry le = CAIRN__OSD__LOG_ENTRY__INIT;
	Cairn__Osd__Version v = CAIRN__OSD__VERSION__INIT;

	struct {
		const char *name;
		unsigned idx;
		const ProtobufCMessage *pb;
		uint8_t data64;
	} seeds[] = {
		{ "op-write", 0, &q.base, 1 },        { "pg-list", 1, &l.base, 0 },
		{ "rep-op", 3, &ro.base, 1 },         { "pg-query", 5, &pq.base, 0 },
		{ "pg-notify", 6, &pn.base, 0 },      { "push", 7, &push.base, 1 },
		{ "ping", 9, &ping.base, 0 },         { "recover", 10, &rr.base, 0 },
		{ "recover-done", 11, &ack.base, 0 }, { "pg-log", 12, &pn.base, 0 },
		{ "pg-remove", 14, &ack.base, 0 },    { "ec-read", 15, &er.base, 0 },
	};

	w.op = OSD_OP_WRITEFULL;
	w.len = 64;
	st.op = OSD_OP_STAT;
	q.oid = "obj";
	q.n_ops = 2;
	q.ops = ops;
	l.max = 100;
	v.epoch = 5;
	v.seq = 1;
	pq.since = &v;
	ping.from = 0;
	push.oid = "obj";
	push.size = 64;
	push.ver = &v;
	push.first = push.last = true;
	ack.target = 0;
	er.oid = "obj";
	er.len = 64;
	er.ver = &v;
	rr.target = 0;
	rr.all = true;
	pn.exists = true;
	le.ver = &v;
	le.oid = "obj";
	ro.entry = &le;
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		size_t n = protobuf_c_message_get_packed_size(seeds[i].pb);
		uint8_t *buf = malloc(3 + n);
		char path[512];
		FILE *f;

		if (!buf)
			die("out of memory");
		buf[0] = (uint8_t)seeds[i].idx;
		buf[1] = 7; /* every fix-up */
		buf[2] = seeds[i].data64;
		protobuf_c_message_pack(seeds[i].pb, buf + 3);
		snprintf(path, sizeof(path), "%s/%s", dir, seeds[i].name);
		f = fopen(path, "w");
		if (!f || fwrite(buf, 1, 3 + n, f) != 3 + n || fclose(f))
			die("write %s", path);
		free(buf);
	}
	exit(0);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct cm_reactor_opts ro;
	struct cm_msgr_opts mo;
	char out[65536], field[64], data[128], pub[64], log[128];
	const char *seeds = getenv("OSD_HANDLER_FUZZ_SEEDS");
	int fd, port, first;

	(void)argc;
	(void)argv;
	if (seeds)
		write_seeds(seeds);
	snprintf(g.dir, sizeof(g.dir), "/tmp/cairn-osd-fuzz-XXXXXX");
	if (!mkdtemp(g.dir))
		die("mkdtemp");
	snprintf(g.conf, sizeof(g.conf), "%s/cairn.conf", g.dir);
	start_reaper();
	run(out, sizeof(out), "'%s' up --dir '%s' --mons 1 --osds 0 2>&1", CLUSTERCTL_PATH, g.dir);
	run(out, sizeof(out), "'%s' -c '%s' pool create fz --size 1 --min-size 1 --pg-num %d 2>&1",
	    CLUSTERCTL_PATH, g.conf, NPG);
	run(out, sizeof(out), "'%s' -c '%s' --format json pool ls", CLUSTERCTL_PATH, g.conf);
	json_field(out, "fz", "id", field, sizeof(field));
	if (!field[0])
		die("no pool fz in %s", out);
	g.pool = strtoll(field, NULL, 10);

	/* The OSD, from the daemon's option table and the cluster's conf file. */
	snprintf(data, sizeof(data), "%s/osd.data", g.dir);
	fd = open(data, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || posix_fallocate(fd, 0, 512ull << 20))
		die("preallocate %s", data);
	close(fd);
	port = free_port();
	if (port < 0)
		die("no free port");
	snprintf(pub, sizeof(pub), "127.0.0.1:%d", port);
	snprintf(g.addr, sizeof(g.addr), "%s", pub);
	snprintf(log, sizeof(log), "%s/osd.log", g.dir);
	{
		char *oargv[] = { "osd_handler_fuzz",
				  "--osd-data",
				  data,
				  "--public-addr",
				  pub,
				  "--host",
				  "fz",
				  "--osd-op-shards",
				  "1",
				  "--log-file",
				  log,
				  "--entity",
				  "osd",
				  NULL };

		g.cc = (struct cm_conf){ .table = osd_conf_opts, .base = &g.cfg, .section = "osd" };
		if (cm_conf_init(&g.cc, 13, oargv, environ, g.conf, stderr, &first) != 0)
			die("osd options: %s", g.cc.err);
	}
	if (cm_daemon_setup_logging(&g.cfg.d))
		die("logging to %s", log);
	g.osd_running = true;
	if (pthread_create(&g.osd_th, NULL, osd_thread, NULL))
		die("pthread_create");
	/* Every PG of fz active+clean on it. */
	for (int i = 0;; i++) {
		char want[64];

		run(out, sizeof(out), "'%s' -c '%s' pg ls 2>&1 || true", CLUSTERCTL_PATH, g.conf);
		snprintf(want, sizeof(want), "%" PRId64 ".", g.pool);
		{
			int clean = 0;

			for (const char *p = out; (p = strstr(p, want)); p++) {
				const char *eol = strchr(p, '\n');

				if (p != out && p[-1] != '\n')
					continue; /* a PG id starts its line */
				const char *ac = strstr(p, "active+clean");
				if (ac && (!eol || ac < eol))
					clean++;
			}
			if (clean >= NPG)
				break;
		}
		if (i > 600)
			die("the pool's PGs are not active+clean after 60 s: %s", out);
		usleep(100000);
	}
	run(out, sizeof(out), "'%s' -c '%s' --format json status", CLUSTERCTL_PATH, g.conf);
	{
		const char *p = strstr(out, "\"epoch\":");

		if (!p)
			die("no epoch in status: %s", out);
		g.epoch = strtoull(p + 8, NULL, 10);
	}

	/* Our session to it, as a peer or client would hold. */
	get_ticket();
	cm_reactor_opts_init(&ro, sizeof(ro));
	if (cm_reactor_create(&ro, &g.r))
		die("reactor");
	cm_msgr_opts_init(&mo, sizeof(mo));
	mo.entity = "client.admin.fuzz";
	mo.auth.cred_fn = cred_fn;
	mo.ops = (struct cm_msgr_ops){ .on_msg = on_msg, .on_event = on_event };
	if (cm_msgr_create(g.r, &mo, &g.m))
		die("messenger");
	if (cm_msgr_connect(g.m, g.addr, true, &g.c))
		die("connect %s", g.addr);
	wait_for(&g.up, 10000, "session to the OSD");
	barrier();
	/* Registered now, after the OSD's store made RocksDB's function-local
	 * statics, so that at exit the OSD stops before they are destroyed
	 * (exit runs handlers and static destructors in reverse order). */
	atexit(at_exit);
	fprintf(stderr,
		"osd_handler_fuzz: OSD at %s, pool %" PRId64 " (8 PGs), epoch %" PRIu64
		", cluster in %s\n",
		g.addr, g.pool, g.epoch, g.dir);
	return 0;
}

/* Set an integer field by name, if the message has it. */
static void
set_field(ProtobufCMessage *pb, const char *name, int64_t v, bool mod)
{
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field_by_name(pb->descriptor, name);
	void *p;

	if (!f || f->label == PROTOBUF_C_LABEL_REPEATED)
		return;
	p = (uint8_t *)pb + f->offset;
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
		*(int64_t *)p = v;
		break;
	case PROTOBUF_C_TYPE_UINT64:
		*(uint64_t *)p = (uint64_t)v;
		break;
	case PROTOBUF_C_TYPE_UINT32:
		*(uint32_t *)p = mod ? *(uint32_t *)p % NPG : (uint32_t)v;
		break;
	default:
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cm_msg *m;
	struct cm_buf *fb = NULL, *db = NULL;
	const uint8_t *front;
	size_t flen, dlen;
	unsigned t;
	int rc;

	if (size < 3)
		return 0;
	t = data[0] % NTYPES;
	dlen = (size_t)data[2] * 64;
	front = data + 3;
	flen = size - 3;
	if (data[1] & 7) {
		ProtobufCMessage *pb =
			protobuf_c_message_unpack(g_types[t].desc, NULL, flen, front);

		if (pb) {
			if (data[1] & 1)
				set_field(pb, "pool", g.pool, false);
			if (data[1] & 2)
				set_field(pb, "epoch", (int64_t)g.epoch, false);
			if (data[1] & 4)
				set_field(pb, "seed", 0, true);
			flen = protobuf_c_message_get_packed_size(pb);
			if (cm_buf_alloc(flen ? flen : 1, &fb))
				die("out of memory");
			protobuf_c_message_pack(pb, fb->data);
			protobuf_c_message_free_unpacked(pb, NULL);
		}
	}
	if (!fb) {
		if (cm_buf_alloc(flen ? flen : 1, &fb))
			die("out of memory");
		memcpy(fb->data, front, flen);
	}
	if (cm_msg_create(g_types[t].type, ++g.tid, &m))
		die("out of memory");
	if (flen && cm_sgl_append(&m->front, fb, 0, flen))
		die("out of memory");
	cm_buf_put(fb);
	if (dlen) {
		if (cm_buf_alloc(dlen, &db))
			die("out of memory");
		memset(db->data, 'd', dlen);
		if (cm_sgl_append(&m->data, db, 0, dlen))
			die("out of memory");
		cm_buf_put(db);
	}
	rc = cm_conn_send(g.c, m);
	if (rc == -EMSGSIZE) {
		cm_msg_destroy(m); /* over the messenger's limits: never sent */
		return 0;
	}
	if (rc)
		die("send: %d", rc);
	barrier();
	return 0;
}
