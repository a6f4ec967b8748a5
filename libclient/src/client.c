/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcairn: see cairn.h. Io threads (cairn_opts.io_threads, default one)
 * each run a reactor with a messenger, sessions with the OSDs, a copy of
 * the map and the ops in flight that were routed to it: an op goes to
 * thread (placement hash of its object) % n, so one object's ops stay in
 * order on one thread, and for n a power of two no larger than pg_num that
 * is the thread of its PG seed % n. Thread 0 also runs the monitor client
 * (maps, tickets, admin calls) and posts each map to the others. API calls
 * post requests to a thread and wait on completions
 * (docs/design/libcairn-v1.md section 9).
 */
#include "cairn/cairn.h"
#include "client_int.h"
#include "osd/proto.h"
#include "mon/client_async.h"
#include "mon/creds.h"
#include "cm/auth.h"
#include "mon/osd_sessions.h"
#include "mon/osdmap.h"
#include "cm/daemon.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/random.h"

#include <pthread.h>

_Static_assert(CAIRN_MAX_IO == OSD_MAX_IO, "the public limit is the OSD's");
_Static_assert(offsetof(struct cairn_opts, io_threads) >=
		       ((offsetof(struct cairn_opts, shard_sessions) + sizeof(bool) + 7) &
			~(size_t)7),
	       "io_threads starts past the end of the struct that ended with shard_sessions");
_Static_assert(CAIRN_NAME_MAX == CRUSH_ONAME_NAME_MAX && CAIRN_NS_MAX == CRUSH_ONAME_NS_MAX &&
		       CAIRN_KEY_MAX == CRUSH_ONAME_KEY_MAX,
	       "the public name limits are the codec's");

CM_LOG_SUBSYS(client);

#define TICK_MS        100
#define RESEND_MS      5000  /* an op unanswered this long is resent (the log dedups) */
#define RETRY_MS       500   /* an op the OSD could not take yet */
#define BUSY_MS        50    /* an op the OSD pushed back (its client data cap was reached) */
#define MON_RESEND_MS  1000  /* an admin call unanswered this long is sent again */
#define MON_TIMEOUT_MS 30000 /* an admin call's limit when op_timeout_ms is 0 */
#define PGC_SLOTS      4096  /* placements cached per map (direct mapped by pool, PG) */

struct cl_conf {
	struct cm_daemon_conf d;
	char *mon_host;
	uint64_t io_threads;
};

static const struct cm_opt g_cl_opts[] = {
	CM_DAEMON_OPTS(struct cl_conf, d, "client"),
	CM_OPT("mon_host", CM_OPT_STR, "", 0, 0, 0, struct cl_conf, mon_host,
	       "the monitors: name=ip:port,..."),
	CM_OPT("io_threads", CM_OPT_UINT, "1", 1, 64, 0, struct cl_conf, io_threads,
	       "the client's io threads (cairn_opts.io_threads wins when set)"),
	{ 0 },
};

struct cairn_ioctx {
	struct cairn_cluster *cl;
	int64_t pool;
	char nspace[CAIRN_NS_MAX + 1]; /* "": the default namespace */
	char key[CAIRN_KEY_MAX + 1];   /* "": none (objects placed by name) */
};

enum { CREQ_OP, CREQ_LIST };

struct cl_io;

struct creq {
	TAILQ_ENTRY(creq) link;
	struct creq *hnext; /* in its io thread's tid table */
	struct cairn_cluster *cl;
	struct cl_io *iot;   /* the io thread it runs on */
	uint32_t hash;       /* an op: its object's placement hash (the submitter's) */
	unsigned timeout_ms; /* this op's own limit (0: the client's op_timeout_ms) */
	unsigned hold_ms;    /* the OSD holds it this long (a notify): resend after that */
	int kind;
	int64_t pool;
	char *oid; /* the store name (crush/oname.h): oid_in, or allocated */
	char oid_in[160];
	uint32_t seed;
	cairn_op_t *op;
	cairn_completion_t *comp;
	uint64_t tid;
	uint64_t deadline_ms, sent_ms, retry_ms;
	bool sent_once, linked;
	int32_t target;
	unsigned tshard; /* the target's PG shard we sent to */
	int32_t acting[16];
	int nacting;
	struct cm_reactor_msg post;
	bool throttled; /* holds thr_bytes and one op of the throttle */
	uint64_t thr_bytes;
	/* list (the strings are its waiter's, who waits for it) */
	const char *after;  /* a store name, or "" */
	const char *nspace; /* the namespace listed ("": default), NULL: all */
	bool ns_only;       /* the namespaces present, not objects */
	unsigned max;
	uint32_t pg_num; /* a listing: the pool's pg_num it was planned for */
	char **names;
	size_t nnames;
	bool more;
};

/* A request to the monitors' leader (admin calls), on io thread 0. */
struct mreq {
	TAILQ_ENTRY(mreq) link;
	struct cairn_cluster *cl;
	uint16_t type, reply_type;
	const ProtobufCMessage *req; /* the caller's, until it completes */
	uint64_t tid, sent_ms, deadline_ms;
	bool sent, linked;
	struct cm_msg *reply; /* for the caller */
	cairn_completion_t *comp;
	struct cm_reactor_msg post;
};

/* A map shared by io threads 1..n-1 (thread 0 holds the monitor client's). */
struct shared_map {
	Cairn__Map__OsdMap *m;
	unsigned refs; /* (atomic) */
};

/* One io thread: what it alone touches, but for the fields marked otherwise. */
struct cl_io {
	struct cairn_cluster *cl;
	unsigned idx;
	struct cm_reactor *r;
	pthread_t th;
	bool th_started;
	struct cm_msgr *msgr;
	const Cairn__Map__OsdMap *map; /* 0: the monitor client's; others: smap's */
	struct shared_map *smap;
	uint64_t want_ms; /* others: when they last asked thread 0 for a map */
	unsigned behind;  /* others: ticks in a row behind thread 0's map */
	struct mon_placement pl;
	bool pl_ok;
	bool fenced;               /* our name is on the map's blocklist */
	bool down;                 /* its loop ended (cairn_shutdown); map gone */
	struct reply_arena *arena; /* op replies unpack here */

	/*
	 * Placements computed in this map: CRUSH per op was a sixth of the
	 * client's CPU at 1,024 4 KiB reads in flight. Direct mapped by
	 * (pool, PG); an entry of an older generation is stale.
	 */
	struct pgc_entry {
		uint64_t gen; /* 0: empty */
		int64_t pool;
		uint32_t seed;
		int32_t primary;
		int nacting;
		int32_t acting[16];
	} * pgc;

	uint64_t pgc_gen;

	struct { /* the last pool an op named, as CRUSH sees it */
		uint64_t gen;
		int64_t id;
		struct crush_pool cp;
	} pcache;
	struct mon_osd_sessions sess; /* with the OSDs */
	TAILQ_HEAD(, creq) inflight;
	struct creq **htab; /* inflight by tid: a power of two of chains */
	size_t hcap, hn;
	uint64_t tid; /* tids are (tid << IO_BITS) | idx: unique in the client */
	struct cm_timer tick;
	struct cairn__wlist watches;     /* the watches of objects routed here */
	struct cm_reactor_msg stop_post; /* cairn_shutdown's stop, kept until its loop runs */
};

/* Io threads at most, and the tid bits that name one. */
#define IO_BITS 6
#define IO_MAX  (1u << IO_BITS)

struct cairn_cluster {
	struct cl_conf cfg;
	struct cm_conf conf;
	unsigned op_timeout_ms;
	char entity[CM_HS_ENTITY_MAX]; /* <name>.<16 hex>: this client instance on the wire */
	pthread_mutex_t creds_mu;      /* creds: io thread 0 writes, every messenger reads */
	struct mon_creds creds;        /* our key and our ticket for the OSDs */
	int ticket_rc;                 /* under mu: the last ticket reply's (1: none yet) */
	bool auth_refused;             /* under mu: a monitor refused our proof */
	char ticket_err[160];          /* under mu: its reason */
	uint64_t barrier;    /* ops are sent with a map of at least this epoch (__atomic) */
	uint64_t epoch0;     /* (atomic) the epoch io thread 0 holds */
	bool shard_sessions; /* cairn_opts.shard_sessions: one session per PG shard */
	bool revoked;        /* (atomic) the mons give us no ticket (entity removed) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned nstarted; /* under mu: io threads that started (or failed to) */
	int start_rc;      /* under mu: the first failure */
	/* the throttle (under thr_mu): ops and bytes in flight, and the limits */
	pthread_mutex_t thr_mu;
	pthread_cond_t thr_cv;
	unsigned thr_ops, thr_max_ops;
	uint64_t thr_bytes, thr_max_bytes;
	bool thr_closing;        /* shutting down: waiters give up */
	struct creq *creq_cache; /* under thr_mu: freed requests (linked by hnext) */
	unsigned ncreq_cache;
	/* under mu: what API threads need from the map */
	uint64_t epoch;

	struct {
		int64_t id;
		char *name;
		struct crush_pool cp;      /* its PG count, and for placing names (listing) */
		struct cairn_pool_info pi; /* its settings (cairn_pool_info) */
	} * pools;

	size_t npools;
	/* io thread 0 */
	struct mon_async *monc;
	TAILQ_HEAD(, mreq) mons; /* admin calls in flight */
	uint64_t watch_seq;      /* watch cookies (atomic) */
	struct cairn__svcs svcs;
	unsigned nio;
	struct cl_io *io; /* nio of them */
};

/* The io thread this thread is (NULL: not one). */
static __thread struct cl_io *tl_io;

struct cairn__svcs *
cairn__cl_svcs(struct cairn_cluster *cl)
{
	return &cl->svcs;
}

struct cm_reactor *
cairn__io_reactor(struct cl_io *iot)
{
	return iot->r;
}

struct cairn__wlist *
cairn__io_watches(struct cl_io *iot)
{
	return &iot->watches;
}

uint64_t
cairn__cl_watch_cookie(struct cairn_cluster *cl)
{
	return __atomic_add_fetch(&cl->watch_seq, 1, __ATOMIC_RELAXED);
}

/* The io thread of an object's placement hash. */
static struct cl_io *
io_of_hash(struct cairn_cluster *cl, uint32_t hash)
{
	return &cl->io[cl->nio == 1 ? 0 : hash % cl->nio];
}

/* The store name of (io's namespace and key, oid) in sname. \return its length, or -errno. */
static int
store_name(const cairn_ioctx_t *io, const char *oid, char *sname, size_t size)
{
	return crush_oname_encode(io->nspace, io->key, oid, sname, size);
}

int
cairn__io_of(const cairn_ioctx_t *io, const char *oid, struct cl_io **iot)
{
	char sname[CRUSH_ONAME_MAX + 1];
	uint32_t hash = 0;
	int rc = store_name(io, oid, sname, sizeof(sname));

	if (rc < 0)
		return rc;
	if (crush_oname_hash(sname, &hash))
		return -ENOMEM;
	*iot = io_of_hash(io->cl, hash);
	return 0;
}

/* Io thread idx of cl (zeroed memory): empty, not started. */
static void
io_init(struct cl_io *iot, struct cairn_cluster *cl, unsigned idx)
{
	iot->cl = cl;
	iot->idx = idx;
	TAILQ_INIT(&iot->inflight);
	TAILQ_INIT(&iot->watches.head);
}

/* cairn_shutdown has begun: no new request may be posted (a reactor may be gone). */
static bool
closing(struct cairn_cluster *cl)
{
	bool c;

	pthread_mutex_lock(&cl->thr_mu);
	c = cl->thr_closing;
	pthread_mutex_unlock(&cl->thr_mu);
	return c;
}

struct cairn_cluster *
cairn__ioctx_cluster(const cairn_ioctx_t *io)
{
	return io->cl;
}

cairn_ioctx_t *
cairn__ioctx_dup(const cairn_ioctx_t *io)
{
	cairn_ioctx_t *d = malloc(sizeof(*d));

	if (d)
		memcpy(d, io, sizeof(*d));
	return d;
}

/* ---------- the client thread: targeting and sending ---------- */

/* The tid table: a reply finds its request without a scan. */
static size_t
tid_slot(const struct cl_io *iot, uint64_t tid)
{
	return (size_t)(tid * 0x9e3779b97f4a7c15ull >> 20) & (iot->hcap - 1);
}

/* A new tid of iot: unique in the client (its low bits name the thread). */
static uint64_t
io_tid(struct cl_io *iot)
{
	return (++iot->tid << IO_BITS) | iot->idx;
}

/* q (tid set) in flight: in the list and the table. \return 0, -ENOMEM. */
static int
creq_link(struct creq *q)
{
	struct cl_io *cl = q->iot;

	if (cl->hn >= cl->hcap) { /* grow (load at most 1): rehash what is in flight */
		size_t cap = cl->hcap ? cl->hcap * 2 : 256;
		struct creq **nt = calloc(cap, sizeof(*nt)), *x;

		if (!nt)
			return -ENOMEM;
		free(cl->htab);
		cl->htab = nt;
		cl->hcap = cap;
		TAILQ_FOREACH(x, &cl->inflight, link) {
			size_t k = tid_slot(cl, x->tid);

			x->hnext = cl->htab[k];
			cl->htab[k] = x;
		}
	}
	TAILQ_INSERT_TAIL(&cl->inflight, q, link);
	q->hnext = cl->htab[tid_slot(cl, q->tid)];
	cl->htab[tid_slot(cl, q->tid)] = q;
	cl->hn++;
	q->linked = true;
	return 0;
}

static void
creq_unlink(struct creq *q)
{
	struct cl_io *cl = q->iot;
	struct creq **pp = &cl->htab[tid_slot(cl, q->tid)];

	while (*pp && *pp != q)
		pp = &(*pp)->hnext;
	if (*pp) {
		*pp = q->hnext;
		cl->hn--;
	}
	TAILQ_REMOVE(&cl->inflight, q, link);
	q->linked = false;
}

static struct creq *
creq_find(struct cl_io *cl, uint64_t tid)
{
	struct creq *q = cl->hcap ? cl->htab[tid_slot(cl, tid)] : NULL;

	while (q && q->tid != tid)
		q = q->hnext;
	return q;
}

/* q->oid = a copy of store name s (len bytes). \return 0, -ENOMEM. */
static int
creq_set_oid(struct creq *q, const char *s, size_t len)
{
	q->oid = len < sizeof(q->oid_in) ? q->oid_in : malloc(len + 1);
	if (!q->oid)
		return -ENOMEM;
	memcpy(q->oid, s, len + 1);
	return 0;
}

/* ---------- the throttle ---------- */

/*
 * Room for one op of bytes: wait for it unless nowait (-EAGAIN) or on the
 * client thread (which completes ops, so never waits: counted over).
 */
/*
 * Requests of ops are made on the submitting thread and freed on the
 * client thread, which defeats malloc's per-thread caches (one op in
 * flight per slot of 1,024 went through its locked bins). Freed ones go
 * back to a cache the submitters take from, under thr_mu, which both sides
 * take anyway for the throttle. None under AddressSanitizer (a use after
 * free is still caught).
 */
#ifdef CAIRN_ASAN
#define CREQ_CACHE_MAX 0u
#else
#define CREQ_CACHE_MAX 4096u
#endif

/*
 * One op of bytes into the throttle, and with qp a zeroed request for it.
 * \return 0, -EAGAIN (nowait, full), -ESHUTDOWN, -ENOMEM.
 */
static int
throttle_get(struct cairn_cluster *cl, uint64_t bytes, bool nowait, struct creq **qp)
{
	bool own = tl_io && tl_io->cl == cl; /* (an io thread completes ops: never waits) */
	struct creq *q = NULL;
	int rc = 0;

	pthread_mutex_lock(&cl->thr_mu);
	if (cl->thr_closing) /* (a callback run by cairn_shutdown: its reactor may be gone) */
		rc = -ESHUTDOWN;
	while (!rc && !own && cl->thr_ops &&
	       (cl->thr_ops + 1 > cl->thr_max_ops || cl->thr_bytes + bytes > cl->thr_max_bytes)) {
		if (nowait || cl->thr_closing) {
			rc = cl->thr_closing ? -ESHUTDOWN : -EAGAIN;
			break;
		}
		pthread_cond_wait(&cl->thr_cv, &cl->thr_mu);
	}
	if (!rc) {
		cl->thr_ops++;
		cl->thr_bytes += bytes;
		if (qp && (q = cl->creq_cache)) {
			cl->creq_cache = q->hnext;
			cl->ncreq_cache--;
		}
	}
	pthread_mutex_unlock(&cl->thr_mu);
	if (rc || !qp)
		return rc;
	if (q)
		memset(q, 0, sizeof(*q));
	else if (!(q = calloc(1, sizeof(*q)))) {
		pthread_mutex_lock(&cl->thr_mu);
		cl->thr_ops--;
		cl->thr_bytes -= bytes;
		pthread_cond_broadcast(&cl->thr_cv);
		pthread_mutex_unlock(&cl->thr_mu);
		return -ENOMEM;
	}
	q->cl = cl;
	q->throttled = true;
	q->thr_bytes = bytes;
	*qp = q;
	return 0;
}

static void
creq_free(struct creq *q)
{
	struct cairn_cluster *cl;

	if (!q)
		return;
	if (q->oid != q->oid_in)
		free(q->oid);
	if (!q->throttled) {
		free(q);
		return;
	}
	/* its slot of the throttle back, and the request to the cache */
	cl = q->cl;
	pthread_mutex_lock(&cl->thr_mu);
	cl->thr_ops--;
	cl->thr_bytes -= q->thr_bytes;
	pthread_cond_broadcast(&cl->thr_cv);
	if (cl->ncreq_cache < CREQ_CACHE_MAX) {
		q->hnext = cl->creq_cache;
		cl->creq_cache = q;
		cl->ncreq_cache++;
		q = NULL;
	}
	pthread_mutex_unlock(&cl->thr_mu);
	free(q);
}

static void
creq_finish(struct creq *q, int rc, const struct cairn_version *v)
{
	if (q->linked)
		creq_unlink(q);
	if (q->op && q->op->err == 0 && rc)
		for (size_t i = 0; i < q->op->n; i++)
			if (q->op->subs[i].rval && *q->op->subs[i].rval == 0)
				*q->op->subs[i].rval = rc;
	/* A list request belongs to its waiter, who may free it as soon as it completes. */
	if (q->kind == CREQ_OP) {
		cairn_completion_t *c = q->comp;

		creq_free(q);
		cairn__complete_v(c, rc, v);
	} else {
		cairn__complete_v(q->comp, rc, v);
	}
}

/* Where q goes in the current map. \return 0, -ENOENT (pool gone), -EAGAIN (no primary), -ENOMEM.
 */
static int
creq_target(struct creq *q, int32_t *acting, int *nacting, int32_t *primary)
{
	struct cl_io *cl = q->iot;
	const Cairn__Map__Pool *p;
	int32_t up[64];
	int prim = -1, n, k = 0;

	struct pgc_entry *e = NULL;

	if (!cl->map || !cl->pl_ok)
		return -EAGAIN;
	p = mon_pool_find_id(cl->map, q->pool);
	if (!p)
		return -ENOENT;
	if (q->kind == CREQ_OP) {
		if (cl->pcache.gen != cl->pgc_gen || cl->pcache.id != q->pool) {
			mon_pool_to_crush(p, &cl->pcache.cp);
			cl->pcache.gen = cl->pgc_gen;
			cl->pcache.id = q->pool;
		}
		q->seed = crush_hash_to_pg(&cl->pcache.cp, q->hash);
	} else if (q->seed >= p->pg_num || (q->pg_num && q->pg_num != p->pg_num)) {
		return -ENOENT; /* the listing plans its PGs again */
	}
	if (!cl->pgc)
		cl->pgc = calloc(PGC_SLOTS, sizeof(*cl->pgc));
	if (cl->pgc) {
		uint64_t h = ((uint64_t)q->pool * 0x9e3779b97f4a7c15ull) ^
			     ((uint64_t)q->seed * 0xc2b2ae3d27d4eb4full);

		e = &cl->pgc[(h >> 32) % PGC_SLOTS];
		if (e->gen == cl->pgc_gen && e->pool == q->pool && e->seed == q->seed) {
			memcpy(acting, e->acting, sizeof(*acting) * (size_t)e->nacting);
			*nacting = e->nacting;
			*primary = e->primary;
			return e->primary < 0 ? -EAGAIN : 0;
		}
	}
	n = mon_placement_pg_up(&cl->pl, p, q->seed, up, &prim);
	for (int i = 0; i < n && k < 16; i++)
		if (up[i] != CRUSH_ITEM_NONE)
			acting[k++] = up[i];
	*nacting = k;
	*primary = prim;
	if (e) {
		*e = (struct pgc_entry){ .gen = cl->pgc_gen,
					 .pool = q->pool,
					 .seed = q->seed,
					 .primary = prim,
					 .nacting = k };
		memcpy(e->acting, acting, sizeof(*acting) * (size_t)k);
	}
	return prim < 0 ? -EAGAIN : 0;
}

/* Sub-ops of an op packed from the stack (more: from the heap). */
#define BUILD_SMALL 8

static int
build_msg(struct creq *q, struct cm_msg **mp)
{
	Cairn__Osd__OsdOp req = CAIRN__OSD__OSD_OP__INIT;
	Cairn__Osd__SubOp so_s[BUILD_SMALL], *sop_s[BUILD_SMALL], *so = so_s, **sop = sop_s;
	Cairn__Osd__Version vv_s[BUILD_SMALL], *vv = vv_s;
	cairn_op_t *op = q->op;
	struct cm_msg *m = NULL;
	uint64_t doff = 0;
	int rc = -ENOMEM;

	if (op->n > BUILD_SMALL) {
		so = calloc(op->n, sizeof(*so));
		sop = calloc(op->n, sizeof(*sop));
		vv = calloc(op->n, sizeof(*vv));
	}
	if (!so || !sop || !vv || cm_msg_create(OSD_MSG_OP, q->tid, &m))
		goto out;
	rc = 0;
	for (size_t i = 0; i < op->n && !rc; i++) {
		struct csub *s = &op->subs[i];

		cairn__osd__sub_op__init(&so[i]);
		sop[i] = &so[i];
		so[i].op = s->type;
		so[i].off = s->off;
		so[i].len = s->len;
		so[i].name = s->name ? s->name : (char *)"";
		so[i].value = s->value;
		so[i].keys = s->keys;
		so[i].n_keys = s->nkeys;
		so[i].vals = s->vals;
		so[i].n_vals = s->nvals;
		so[i].start_after = s->start_after;
		so[i].prefix = s->prefix;
		so[i].max = s->max;
		so[i].exclusive = s->excl;
		so[i].cmp = s->cmp;
		so[i].end = s->end;
		so[i].num_op = s->num_op;
		so[i].num = s->num;
		so[i].bounded = s->bounded;
		so[i].num_min = s->num_min;
		so[i].num_max = s->num_max;
		so[i].omap = s->omap;
		if (s->type == OSD_OP_ASSERT_VERSION) {
			cairn__osd__version__init(&vv[i]);
			vv[i].epoch = s->ver.epoch;
			vv[i].seq = s->ver.seq;
			so[i].ver = &vv[i];
		}
		if ((s->type == OSD_OP_WRITE || s->type == OSD_OP_WRITEFULL ||
		     s->type == OSD_OP_APPEND || s->type == OSD_OP_CMPEXT) &&
		    s->len) {
			struct cm_buf *b;

			so[i].data_off = doff;
			rc = cm_buf_wrap((void *)s->wbuf, s->len, NULL, NULL, &b);
			if (!rc) {
				rc = cm_sgl_append(&m->data, b, 0, s->len);
				cm_buf_put(b);
			}
			doff += s->len;
		}
	}
	req.pool = q->pool;
	req.seed = q->seed;
	req.oid = q->oid;
	req.epoch = q->iot->map->epoch;
	req.n_ops = op->n;
	req.ops = sop;
	req.flags = q->sent_once ? OSD_OPF_RESEND : 0;
	if (!rc)
		rc = cm_msg_set_front(m, &req.base);
out:
	if (so != so_s) {
		free(so);
		free(sop);
		free(vv);
	}
	if (rc) {
		cm_msg_destroy(m);
		return rc;
	}
	*mp = m;
	return 0;
}

static int
build_list_msg(struct creq *q, struct cm_msg **mp)
{
	Cairn__Osd__PgList req = CAIRN__OSD__PG_LIST__INIT;
	struct cm_msg *m;
	int rc = cm_msg_create(OSD_MSG_PG_LIST, q->tid, &m);

	if (rc)
		return rc;
	req.pool = q->pool;
	req.seed = q->seed;
	req.epoch = q->iot->map->epoch;
	req.start_after = (char *)q->after;
	req.nspace = (char *)(q->nspace ? q->nspace : "");
	req.all_ns = !q->nspace;
	req.ns_only = q->ns_only;
	req.max = q->max;
	req.pg_num = q->pg_num;
	rc = cm_msg_set_front(m, &req.base);
	if (rc) {
		cm_msg_destroy(m);
		return rc;
	}
	*mp = m;
	return 0;
}

/*
 * Io thread 0 hands io thread k a map newer than the one k holds (epoch
 * have): its own when it has one (k missed it), else it asks the monitors.
 */
struct want_msg {
	struct cm_reactor_msg post;
	struct cairn_cluster *cl;
	unsigned k;
	uint64_t have;
};

static struct map_pending *map_share(struct cairn_cluster *cl, const Cairn__Map__OsdMap *m,
				     unsigned k0, unsigned k1, bool self);

static void
want_fn(void *arg)
{
	struct want_msg *x = arg;
	struct cl_io *io0 = &x->cl->io[0];

	if (io0->map && io0->map->epoch > x->have)
		(void)map_share(x->cl, io0->map, x->k, x->k + 1, false);
	else if (x->cl->monc)
		mon_async_want_map(x->cl->monc, x->have);
	free(x);
}

/* A map newer than the one iot holds (epoch have, 0: none). Others than thread 0: once a second. */
static void
io_want_map(struct cl_io *iot, uint64_t have)
{
	struct want_msg *x;
	uint64_t now = cm_now_ms();

	if (iot->idx == 0) {
		mon_async_want_map(iot->cl->monc, have);
		return;
	}
	if ((iot->want_ms && now - iot->want_ms < 1000) || !(x = malloc(sizeof(*x))))
		return; /* (a map thread 0 takes comes here anyway) */
	iot->want_ms = now;
	*x = (struct want_msg){ .post = { .fn = want_fn, .drop = free, .arg = x },
				.cl = iot->cl,
				.k = iot->idx,
				.have = have };
	cm_reactor_post(iot->cl->io[0].r, &x->post);
}

/* Send q to its primary when it is not already there (or force). */
static void
creq_send(struct creq *q, bool force)
{
	struct cl_io *iot = q->iot;
	int32_t acting[16], primary;
	int nacting = 0, rc;
	unsigned shard = 0;
	struct cm_conn *c;
	struct cm_msg *m;

	rc = creq_target(q, acting, &nacting, &primary);
	if (rc == -ENOENT || rc == -ENOMEM) {
		creq_finish(q, rc, NULL);
		return;
	}
	if (rc) {
		q->target = -1;
		return;
	}
	if (!force && q->target == primary && q->nacting == nacting &&
	    memcmp(q->acting, acting, sizeof(*acting) * (size_t)nacting) == 0)
		return;
	if (iot->map->epoch < __atomic_load_n(&q->cl->barrier, __ATOMIC_ACQUIRE)) {
		/* An epoch barrier (cairn_set_epoch_barrier): not before that map,
		 * so the OSD knows what it says (a blocklist) before our op. */
		io_want_map(iot, iot->map->epoch);
		q->target = -1;
		return;
	}
	if (q->kind == CREQ_OP && (iot->map->flags & MON_FLAG_PAUSE)) {
		/* `osd set pause`: reads and writes wait (sent once it is unset: the
		 * map that clears it resends every op not sent). */
		q->target = -1;
		return;
	}
	c = mon_osd_sessions_get(&iot->sess, iot->map, primary, q->seed, &shard);
	if (!c) {
		q->target = -1;
		return;
	}
	rc = q->kind == CREQ_OP ? build_msg(q, &m) : build_list_msg(q, &m);
	if (rc) {
		creq_finish(q, rc, NULL);
		return;
	}
	rc = cm_conn_send(c, m);
	if (rc == -EMSGSIZE) { /* larger than any session takes: no resend helps */
		cm_msg_destroy(m);
		creq_finish(q, -E2BIG, NULL);
		return;
	}
	if (rc) {
		cm_msg_destroy(m);
		q->target = -1;
		return;
	}
	q->target = primary;
	q->tshard = shard;
	memcpy(q->acting, acting, sizeof(*acting) * (size_t)nacting);
	q->nacting = nacting;
	q->sent_once = true;
	q->sent_ms = cm_now_ms();
}

/*
 * A request posted to the client thread that it never took (cairn_shutdown
 * stopped it first): it ends as the ones in flight do, with -ESHUTDOWN (on
 * the thread that destroys the reactor).
 */
static void
submit_drop(void *arg)
{
	creq_finish(arg, -ESHUTDOWN, NULL);
}

static void
submit_fn(void *arg)
{
	struct creq *q = arg;
	struct cairn_cluster *cl = q->cl;
	struct cl_io *iot = q->iot;
	unsigned limit = q->timeout_ms ? q->timeout_ms : cl->op_timeout_ms;
	bool cancel, revoked = __atomic_load_n(&cl->revoked, __ATOMIC_ACQUIRE);

	q->tid = io_tid(iot);
	q->target = -1;
	q->deadline_ms = limit ? cm_now_ms() + limit : UINT64_MAX;
	/* (the completion learns its op: cairn_completion_cancel finds it by tid) */
	pthread_mutex_lock(&q->comp->mu);
	q->comp->cl = cl;
	q->comp->tid = q->tid;
	cancel = q->comp->cancel;
	pthread_mutex_unlock(&q->comp->mu);
	/*
	 * (down: taken while the messenger drains at shutdown, after the map
	 * went with the monitor client: it ends like the ones in flight did.)
	 */
	if (cancel || iot->down || iot->fenced || revoked || creq_link(q)) {
		creq_finish(q,
			    cancel        ? -ECANCELED
			    : iot->down   ? -ESHUTDOWN
			    : iot->fenced ? -EKEYREVOKED
			    : revoked     ? -EPERM
					  : -ENOMEM,
			    NULL);
		return;
	}
	creq_send(q, true);
}

/* A result from the cluster: 0 or -errno; anything else is a bad reply. */
static int
reply_rc(int32_t rc)
{
	return rc > 0 || rc < -4095 ? -EBADMSG : rc;
}

static int
kvs_from(ProtobufCBinaryData *k, ProtobufCBinaryData *v, size_t n, struct cairn_kv **out)
{
	struct cairn_kv *kv = calloc(n + 1, sizeof(*kv));

	if (!kv)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		kv[i].key = malloc(k[i].len + 1);
		kv[i].val = malloc(v[i].len + 1);
		if (!kv[i].key || !kv[i].val) {
			cairn_kvs_free(kv, i + 1);
			return -ENOMEM;
		}
		if (k[i].len) /* an empty field may have no data pointer */
			memcpy(kv[i].key, k[i].data, k[i].len);
		if (v[i].len)
			memcpy(kv[i].val, v[i].data, v[i].len);
		((char *)kv[i].key)[k[i].len] = 0;
		((char *)kv[i].val)[v[i].len] = 0;
		kv[i].klen = k[i].len;
		kv[i].vlen = v[i].len;
	}
	*out = kv;
	return 0;
}

static void
fill_outputs(struct creq *q, const Cairn__Osd__OsdOpReply *r, const struct cm_msg *m)
{
	cairn_op_t *op = q->op;

	for (size_t i = 0; i < op->n && i < r->n_results; i++) {
		struct csub *s = &op->subs[i];
		const Cairn__Osd__SubOpResult *x = r->results[i];
		/* an OSD's result is 0 or -errno: anything else is a bad reply */
		int rc = reply_rc(x->rc);

		if (!rc) {
			switch (s->type) {
			case OSD_OP_READ: {
				size_t n = (size_t)CM_MIN(x->data_len, (uint64_t)s->rbuflen);

				if (x->data_off > m->data.len || n > m->data.len - x->data_off)
					rc = -EBADMSG;
				else if (n)
					cm_sgl_copy_out(&m->data, (size_t)x->data_off, s->rbuf, n);
				if (s->out_len)
					*s->out_len = rc ? 0 : n;
				break;
			}
			case OSD_OP_STAT:
				if (s->out_size)
					*s->out_size = x->size;
				if (s->out_ver && x->ver) {
					s->out_ver->epoch = x->ver->epoch;
					s->out_ver->seq = x->ver->seq;
				}
				break;
			case OSD_OP_GETXATTR:
				if (s->out_len)
					*s->out_len = x->value.len;
				if (x->value.len > s->rbuflen)
					rc = -ERANGE;
				else if (x->value.len)
					memcpy(s->rbuf, x->value.data, x->value.len);
				break;
			case OSD_OP_GETXATTRS:
			case OSD_OP_OMAP_GET:
			case OSD_OP_OMAP_LIST: {
				size_t n = CM_MIN(x->n_keys, x->n_vals);
				struct cairn_kv *kv = NULL;

				rc = kvs_from(x->keys, x->vals, n, &kv);
				if (!rc && s->out_kvs)
					*s->out_kvs = kv;
				else
					cairn_kvs_free(kv, n);
				if (s->out_n)
					*s->out_n = rc ? 0 : n;
				if (s->out_more)
					*s->out_more = x->more;
				break;
			}
			case OSD_OP_NOTIFY:
				if (s->out_notify)
					rc = cairn__notify_result_decode(
						x->value.data, x->value.len, s->out_notify);
				break;
			case OSD_OP_LIST_WATCHERS:
				if (s->out_watchers) {
					size_t n = 0;

					rc = cairn__watchers_decode(x->value.data, x->value.len,
								    s->out_watchers, &n);
					if (s->out_n)
						*s->out_n = n;
				}
				break;
			case OSD_OP_LOCK_INFO:
				if (s->out_lock)
					rc = cairn__lock_info_decode(x->value.data, x->value.len,
								     s->out_lock);
				break;
			case OSD_OP_NUM:
				if (x->value.len != 8)
					rc = -EBADMSG;
				else if (s->out_num)
					*s->out_num = (int64_t)cm_get_le64(x->value.data);
				break;
			case OSD_OP_OMAP_GET_HEADER:
				if (s->out_header) {
					memset(s->out_header, 0, sizeof(*s->out_header));
					s->out_header->val = malloc(x->value.len + 1);
					if (!s->out_header->val) {
						rc = -ENOMEM;
						break;
					}
					if (x->value.len) /* no header: no data pointer */
						memcpy(s->out_header->val, x->value.data,
						       x->value.len);
					s->out_header->vlen = x->value.len;
				}
				break;
			default:
				break;
			}
		}
		if (s->type == OSD_OP_CMPEXT && rc == -ECANCELED && s->out_size)
			*s->out_size = x->size;
		if (s->rval)
			*s->rval = rc;
	}
}

/*
 * Op replies are unpacked into a bump arena of the client thread, emptied
 * after each (their results are copied out before the op completes): no
 * malloc and free per part of a reply. What does not fit goes to malloc
 * and is freed at the reset. A reply handled while another is (it cannot
 * happen: replies do not nest) would use malloc. None under
 * AddressSanitizer.
 */
#define ARENA_SIZE (16u << 10)

struct arena_spill {
	struct arena_spill *next;
	max_align_t pad; /* (what follows is aligned as malloc's) */
};

struct reply_arena {
	ProtobufCAllocator pa;
	size_t used;
	bool busy;
	struct arena_spill *spill;
	_Alignas(max_align_t) uint8_t buf[ARENA_SIZE];
};

static void *
arena_alloc(void *d, size_t n)
{
	struct reply_arena *a = d;
	size_t at = (a->used + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
	struct arena_spill *s;

	if (at <= ARENA_SIZE && n <= ARENA_SIZE - at) {
		a->used = at + n;
		return a->buf + at;
	}
	if (n > SIZE_MAX - sizeof(*s) || !(s = malloc(sizeof(*s) + n)))
		return NULL;
	s->next = a->spill;
	a->spill = s;
	return s + 1;
}

static void
arena_free(void *d, void *p)
{
	(void)d; /* (all of it goes at arena_end) */
	(void)p;
}

/* The arena for one reply, or NULL (use malloc's). */
static ProtobufCAllocator *
arena_begin(struct cl_io *cl)
{
#ifdef CAIRN_ASAN
	(void)cl;
	(void)arena_alloc;
	(void)arena_free;
	return NULL;
#else
	if (!cl->arena && (cl->arena = malloc(sizeof(*cl->arena))))
		*cl->arena = (struct reply_arena){ .pa = { .alloc = arena_alloc,
							   .free = arena_free,
							   .allocator_data = cl->arena } };
	if (!cl->arena || cl->arena->busy)
		return NULL;
	cl->arena->busy = true;
	return &cl->arena->pa;
#endif
}

static void
arena_end(struct cl_io *cl, ProtobufCAllocator *pa)
{
	struct reply_arena *a = cl->arena;

	if (!pa)
		return;
	while (a->spill) {
		struct arena_spill *s = a->spill;

		a->spill = s->next;
		free(s);
	}
	a->used = 0;
	a->busy = false;
}

static void
on_op_reply(struct cl_io *cl, struct cm_msg *m)
{
	ProtobufCAllocator *pa = arena_begin(cl);
	Cairn__Osd__OsdOpReply *r = (Cairn__Osd__OsdOpReply *)cm_msg_unpack_front_with(
		m, &cairn__osd__osd_op_reply__descriptor, pa);
	struct creq *q = creq_find(cl, m->tid);
	struct cairn_version v = { 0, 0 };

	if (!r || !q || q->kind != CREQ_OP)
		goto out;
	if (r->rc == -ESTALE || r->rc == -EAGAIN) {
		/* The OSD sees another map (catch up and resend), or is busy at
		 * our epoch (its client data cap: resend shortly). */
		bool busy = r->rc == -EAGAIN && r->epoch == cl->map->epoch;

		if (r->epoch > cl->map->epoch)
			io_want_map(cl, cl->map->epoch);
		q->target = -1;
		q->retry_ms = cm_now_ms() + (busy ? BUSY_MS : RETRY_MS);
		goto out;
	}
	if (r->ver) {
		v.epoch = r->ver->epoch;
		v.seq = r->ver->seq;
	}
	fill_outputs(q, r, m);
	creq_finish(q, reply_rc(r->rc), &v);
out:
	if (r && !pa)
		cairn__osd__osd_op_reply__free_unpacked(r, NULL);
	arena_end(cl, pa);
	cm_msg_destroy(m);
}

static void
on_list_reply(struct cl_io *cl, struct cm_msg *m)
{
	Cairn__Osd__PgListReply *r = (Cairn__Osd__PgListReply *)cm_msg_unpack_front(
		m, &cairn__osd__pg_list_reply__descriptor);
	struct creq *q = creq_find(cl, m->tid);
	int rc = 0;

	if (!r || !q || q->kind != CREQ_LIST)
		goto out;
	if (r->rc == -ESTALE || r->rc == -EAGAIN) {
		if (r->epoch > cl->map->epoch)
			io_want_map(cl, cl->map->epoch);
		q->target = -1;
		q->retry_ms = cm_now_ms() + RETRY_MS;
		goto out;
	}
	if (!r->rc && r->n_oids) {
		q->names = calloc(r->n_oids, sizeof(*q->names));
		if (!q->names)
			rc = -ENOMEM;
		for (size_t i = 0; !rc && i < r->n_oids; i++) {
			q->names[i] = strdup(r->oids[i]);
			if (!q->names[i])
				rc = -ENOMEM;
			else
				q->nnames++;
		}
	}
	q->more = r->more;
	creq_finish(q, r->rc ? reply_rc(r->rc) : rc, NULL);
out:
	if (r)
		cairn__osd__pg_list_reply__free_unpacked(r, NULL);
	cm_msg_destroy(m);
}

static void
resend_all(struct cl_io *cl, bool force_unsent)
{
	struct creq *q, *tmp;
	uint64_t now = cm_now_ms();

	TAILQ_FOREACH_SAFE(q, &cl->inflight, link, tmp) {
		if (q->target < 0 && !force_unsent && now < q->retry_ms)
			continue;
		creq_send(q, q->target < 0);
	}
}

/* The cluster's view of map m for API threads (pools, epoch), once every io thread holds it. */
static void
publish_map(struct cairn_cluster *cl, const Cairn__Map__OsdMap *m)
{
	void *np;

	pthread_mutex_lock(&cl->mu);
	if (m->epoch <= cl->epoch) { /* (a later one was published first) */
		pthread_mutex_unlock(&cl->mu);
		return;
	}
	for (size_t i = 0; i < cl->npools; i++)
		free(cl->pools[i].name);
	cl->npools = 0;
	np = realloc(cl->pools, (m->n_pools + 1) * sizeof(*cl->pools));
	if (np) {
		cl->pools = np;
		for (size_t i = 0; i < m->n_pools; i++) {
			const Cairn__Map__Pool *p = m->pools[i];
			struct cairn_pool_info *pi = &cl->pools[cl->npools].pi;

			cl->pools[cl->npools].id = p->id;
			mon_pool_to_crush(p, &cl->pools[cl->npools].cp);
			memset(pi, 0, sizeof(*pi));
			pi->id = p->id;
			snprintf(pi->name, sizeof(pi->name), "%s", p->name);
			pi->erasure = p->erasure;
			pi->size = p->size;
			pi->min_size = p->min_size;
			pi->ec_k = p->ec_k;
			pi->ec_m = p->ec_m;
			pi->stripe_unit = p->erasure ? (p->stripe_unit ? p->stripe_unit : 4096) : 0;
			pi->pg_num = p->pg_num;
			pi->pgp_num = p->pgp_num;
			pi->quota_max_bytes = p->quota_max_bytes;
			cl->pools[cl->npools].name = strdup(m->pools[i]->name);
			if (cl->pools[cl->npools].name)
				cl->npools++;
		}
	}
	cl->epoch = m->epoch;
	pthread_cond_broadcast(&cl->cv);
	pthread_mutex_unlock(&cl->mu);
}

/* iot holds map m now (borrowed: the monitor client's on thread 0, its smap's on others). */
static void
io_take_map(struct cl_io *iot, const Cairn__Map__OsdMap *m)
{
	char err[MON_ERRLEN];

	iot->map = m;
	if (iot->pl_ok)
		mon_placement_free(&iot->pl);
	iot->pl_ok = mon_placement_build(m, &iot->pl, err) == 0;
	iot->pgc_gen++; /* every cached placement is of the old map */
	if (!iot->pl_ok && iot->idx == 0)
		CM_ERR("map epoch %" PRIu64 ": %s", m->epoch, err);
}

/* After io_take_map (and publish): fence, then what was waiting for a map goes now. */
static void
io_map_kick(struct cl_io *iot)
{
	const Cairn__Map__OsdMap *m = iot->map;

	if (!iot->fenced && mon_blocklisted(m, iot->cl->entity)) {
		/* Fenced: someone took over what we did. Nothing of ours may
		 * change anything now: every op ends, later ones too. */
		struct creq *q, *tmp;

		if (iot->idx == 0)
			CM_ERR("%s is on the blocklist of map epoch %" PRIu64
			       ": every op fails with -EKEYREVOKED (connect again for a new name)",
			       iot->cl->entity, m->epoch);
		iot->fenced = true;
		TAILQ_FOREACH_SAFE(q, &iot->inflight, link, tmp)
			creq_finish(q, -EKEYREVOKED, NULL);
	}
	resend_all(iot, true);
	cairn__watch_kick(iot); /* bind the watches where the map puts them now */
}

static void
smap_put(struct shared_map *sm)
{
	if (sm && __atomic_sub_fetch(&sm->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		cairn__map__osd_map__free_unpacked(sm->m, NULL);
		free(sm);
	}
}

/*
 * The io threads yet to take a map: the last one publishes it, unless one
 * of them never got it (out of memory: then a later map is the first that
 * every thread holds, and cairn_map_epoch never says more than they do).
 */
struct map_pending {
	unsigned n;  /* (atomic) */
	bool missed; /* (atomic) */
};

/* One thread took the map (or missed it): the last one publishes m and frees p. */
static void
map_taken(struct cairn_cluster *cl, struct map_pending *p, const Cairn__Map__OsdMap *m, bool took)
{
	if (!took)
		__atomic_store_n(&p->missed, true, __ATOMIC_RELEASE);
	if (__atomic_sub_fetch(&p->n, 1, __ATOMIC_ACQ_REL) == 0) {
		if (!__atomic_load_n(&p->missed, __ATOMIC_ACQUIRE))
			publish_map(cl, m);
		free(p);
	}
}

/* A map on its way to io thread iot (1..n-1). */
struct map_msg {
	struct cm_reactor_msg post;
	struct cl_io *iot;
	struct shared_map *sm;
	struct map_pending *pending;
};

static void
map_msg_drop(void *arg)
{
	struct map_msg *x = arg;

	map_taken(x->iot->cl, x->pending, x->sm->m, false);
	smap_put(x->sm);
	free(x);
}

static void
map_msg_fn(void *arg)
{
	struct map_msg *x = arg;
	struct cl_io *iot = x->iot;
	struct shared_map *old = iot->smap;

	if (!iot->down) {
		iot->smap = x->sm;
		io_take_map(iot, x->sm->m);
		smap_put(old);
		map_taken(iot->cl, x->pending, x->sm->m, true);
		io_map_kick(iot);
		free(x);
		return;
	}
	map_msg_drop(x);
}

/*
 * Map m (thread 0's) to io threads k0..k1-1, as one shared copy; *pending
 * counts them, and thread 0 too with self. \return it, or NULL (no memory:
 * none of them gets m).
 */
static struct map_pending *
map_share(struct cairn_cluster *cl, const Cairn__Map__OsdMap *m, unsigned k0, unsigned k1,
	  bool self)
{
	size_t len = cairn__map__osd_map__get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);
	struct shared_map *sm = calloc(1, sizeof(*sm));
	struct map_pending *pending = calloc(1, sizeof(*pending));

	if (!buf || !sm || !pending)
		goto fail;
	cairn__map__osd_map__pack(m, buf);
	sm->m = cairn__map__osd_map__unpack(NULL, len, buf);
	if (!sm->m)
		goto fail;
	free(buf);
	sm->refs = k1 - k0;
	pending->n = k1 - k0 + (self ? 1 : 0);
	for (unsigned k = k0; k < k1; k++) {
		struct map_msg *x = malloc(sizeof(*x));

		if (!x) { /* (that thread misses it: it asks for it again, io_want_map) */
			map_taken(cl, pending, m, false);
			smap_put(sm);
			continue;
		}
		*x = (struct map_msg){ .post = { .fn = map_msg_fn, .drop = map_msg_drop, .arg = x },
				       .iot = &cl->io[k],
				       .sm = sm,
				       .pending = pending };
		cm_reactor_post(cl->io[k].r, &x->post);
	}
	return pending;
fail:
	CM_LOG_RL(CM_LOG_ERR, "map epoch %" PRIu64 ": no memory to share it with the io threads",
		  m->epoch);
	free(buf);
	if (sm && sm->m)
		cairn__map__osd_map__free_unpacked(sm->m, NULL);
	free(sm);
	free(pending);
	return NULL;
}

/* The monitor client's new map (io thread 0). */
static void
on_map(void *arg, const Cairn__Map__OsdMap *m)
{
	struct cl_io *io0 = arg;
	struct cairn_cluster *cl = io0->cl;
	struct map_pending *pending = cl->nio > 1 ? map_share(cl, m, 1, cl->nio, true) : NULL;

	io_take_map(io0, m);
	__atomic_store_n(&cl->epoch0, m->epoch, __ATOMIC_RELEASE);
	if (pending)
		map_taken(cl, pending, m, true);
	else if (cl->nio == 1)
		publish_map(cl, m);
	/* (else the others did not get it: published with a later one they all hold) */
	/* A first ticket at once (and a new one when auth_epoch rose past ours). */
	if (cl->monc) {
		pthread_mutex_lock(&cl->creds_mu);
		(void)mon_creds_tick(&cl->creds, cl->monc, io_tid(io0), cm_now_ms(), m->auth_epoch);
		pthread_mutex_unlock(&cl->creds_mu);
	}
	io_map_kick(io0);
}

/* The messenger's cred_fn: our key towards the mons, our ticket towards the OSDs. */
static int
cl_cred(void *arg, struct cm_conn *c, unsigned kind, struct cm_cred *out)
{
	struct cl_io *iot = arg;
	int rc;

	(void)c;
	pthread_mutex_lock(&iot->cl->creds_mu);
	rc = mon_creds_fill(&iot->cl->creds, kind, out);
	pthread_mutex_unlock(&iot->cl->creds_mu);
	return rc;
}

static void
on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct cl_io *cl = arg;

	if (cl->idx == 0 && mon_async_handle_msg(cl->cl->monc, c, m))
		return;
	if (m->type == OSD_MSG_OP_REPLY)
		on_op_reply(cl, m);
	else if (m->type == OSD_MSG_PG_LIST_REPLY)
		on_list_reply(cl, m);
	else if (m->type == OSD_MSG_WATCH_EVENT)
		cairn__watch_event(cl, m);
	else
		cm_msg_destroy(m);
}

static void
on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct cl_io *cl = arg;
	int32_t id;
	unsigned k;
	struct creq *q;

	if (ev == CM_CONN_FAILED && rc == -CM_EAUTH) {
		pthread_mutex_lock(&cl->cl->mu);
		cl->cl->auth_refused = true;
		pthread_cond_broadcast(&cl->cl->cv);
		pthread_mutex_unlock(&cl->cl->mu);
	}
	if (cl->idx == 0 && mon_async_handle_event(cl->cl->monc, c, ev, rc))
		return;
	/* The session is gone with whatever it carried: resend on a new one. */
	if (ev == CM_CONN_UP || !mon_osd_sessions_drop(&cl->sess, c, &id, &k))
		return;
	TAILQ_FOREACH(q, &cl->inflight, link)
		if (q->target == id && q->tshard == k) {
			q->target = -1;
			q->retry_ms = cm_now_ms() + 50;
		}
	cairn__watch_kick(cl); /* (a watch may have been bound to that session) */
}

/* ---------- admin calls: requests to the monitors' leader ---------- */

static void
mreq_finish(struct mreq *q, int rc)
{
	if (q->linked) {
		TAILQ_REMOVE(&q->cl->mons, q, link);
		q->linked = false;
	}
	cairn__complete_v(q->comp, rc, NULL);
}

static void
mreq_send(struct mreq *q)
{
	/* (-ENOTCONN and the like: the tick tries again) */
	if (mon_async_send(q->cl->monc, q->type, q->tid, q->req, true) == 0) {
		q->sent = true;
		q->sent_ms = cm_now_ms();
	}
}

static void
mreq_tick(struct cairn_cluster *cl, uint64_t now)
{
	struct mreq *q, *tmp;

	TAILQ_FOREACH_SAFE(q, &cl->mons, link, tmp) {
		if (now >= q->deadline_ms)
			mreq_finish(q, -ETIMEDOUT);
		else if (!q->sent || now - q->sent_ms >= MON_RESEND_MS)
			mreq_send(q); /* (no leader known yet, or it changed: a mon answers once) */
	}
}

static void
mreq_drop(void *arg)
{
	mreq_finish(arg, -ESHUTDOWN);
}

static void
mreq_submit_fn(void *arg)
{
	struct mreq *q = arg;
	struct cairn_cluster *cl = q->cl;

	if (cl->io[0].down) { /* (as submit_fn) */
		mreq_finish(q, -ESHUTDOWN);
		return;
	}
	q->tid = io_tid(&cl->io[0]);
	TAILQ_INSERT_TAIL(&cl->mons, q, link);
	q->linked = true;
	mreq_send(q);
}

/* A mon's reply (mon_async's on_reply): the admin call it answers, if any. */
/* Every op in flight on an io thread ends with rc. */
static void
io_fail_all(struct cl_io *iot, int rc)
{
	struct creq *q;

	while ((q = TAILQ_FIRST(&iot->inflight)))
		creq_finish(q, rc, NULL);
}

static void
on_mon_reply(void *arg, struct cm_msg *m)
{
	struct cl_io *io0 = arg;
	struct cairn_cluster *cl = io0->cl;
	struct mreq *q;

	if (m->type == MON_MSG_AUTH_TICKET_REPLY) {
		char why[sizeof(cl->ticket_err)];
		bool ours;
		int rc = 0;

		pthread_mutex_lock(&cl->creds_mu);
		ours = m->tid == cl->creds.tid;
		if (ours)
			rc = mon_creds_take(&cl->creds, m);
		snprintf(why, sizeof(why), "%s", cl->creds.last_err);
		pthread_mutex_unlock(&cl->creds_mu);
		if (ours) {
			if (rc)
				CM_LOG_RL(CM_LOG_ERR, "no ticket for the OSDs: %s", why);
			if ((rc == -ENOENT || rc == -EPERM) &&
			    !__atomic_load_n(&cl->revoked, __ATOMIC_ACQUIRE)) {
				/* Removed (or refused) for good: nothing of ours may
				 * reach an OSD now; ops end rather than wait (on the
				 * other io threads at their next tick). */
				__atomic_store_n(&cl->revoked, true, __ATOMIC_RELEASE);
				io_fail_all(io0, -EPERM);
			} else if (!rc) {
				__atomic_store_n(&cl->revoked, false, __ATOMIC_RELEASE);
			}
			pthread_mutex_lock(&cl->mu);
			cl->ticket_rc = rc;
			snprintf(cl->ticket_err, sizeof(cl->ticket_err), "%s", why);
			pthread_cond_broadcast(&cl->cv);
			pthread_mutex_unlock(&cl->mu);
		}
		cm_msg_destroy(m);
		return;
	}
	TAILQ_FOREACH(q, &cl->mons, link)
		if (q->tid == m->tid && q->reply_type == m->type)
			break;
	if (!q) {
		cm_msg_destroy(m);
		return;
	}
	q->reply = m;
	mreq_finish(q, 0);
}

/* Send req to the leader and wait for its reply (*reply: cm_msg_destroy). */
static int
mon_call_within(struct cairn_cluster *cl, uint16_t type, const ProtobufCMessage *req,
		uint16_t reply_type, struct cm_msg **reply, unsigned timeout_ms)
{
	struct mreq *q;
	int rc;

	*reply = NULL;
	if (closing(cl))
		return -ESHUTDOWN;
	q = calloc(1, sizeof(*q));
	if (!q || !(q->comp = cairn_completion_create(NULL, NULL))) {
		free(q);
		return -ENOMEM;
	}
	q->cl = cl;
	q->type = type;
	q->reply_type = reply_type;
	q->req = req;
	q->deadline_ms = cm_now_ms() + timeout_ms;
	q->post = (struct cm_reactor_msg){ .fn = mreq_submit_fn, .drop = mreq_drop, .arg = q };
	cm_reactor_post(cl->io[0].r, &q->post);
	rc = cairn_completion_wait(q->comp);
	cairn_completion_release(q->comp);
	*reply = q->reply;
	free(q);
	return rc;
}

static int
mon_call(struct cairn_cluster *cl, uint16_t type, const ProtobufCMessage *req, uint16_t reply_type,
	 struct cm_msg **reply)
{
	return mon_call_within(cl, type, req, reply_type, reply,
			       cl->op_timeout_ms ? cl->op_timeout_ms : MON_TIMEOUT_MS);
}

static void
on_tick(struct cm_timer *t)
{
	struct cl_io *iot = t->arg;
	struct cairn_cluster *cl = iot->cl;
	struct creq *q, *tmp;
	uint64_t now = cm_now_ms();

	TAILQ_FOREACH_SAFE(q, &iot->inflight, link, tmp) {
		if (now >= q->deadline_ms) {
			creq_finish(q, -ETIMEDOUT, NULL);
			continue;
		}
		if (q->target >= 0 && now - q->sent_ms >= RESEND_MS + q->hold_ms)
			creq_send(q, true);
	}
	if (__atomic_load_n(&cl->revoked, __ATOMIC_ACQUIRE))
		io_fail_all(iot, -EPERM); /* (thread 0 ended its own when it learned it) */
	resend_all(iot, false);
	if (iot->idx) {
		/* A map thread 0 could not hand over (no memory): asked for after 1 s. */
		uint64_t have = iot->map ? iot->map->epoch : 0;

		if (have >= __atomic_load_n(&cl->epoch0, __ATOMIC_ACQUIRE))
			iot->behind = 0;
		else if (++iot->behind >= 1000 / TICK_MS)
			io_want_map(iot, have);
	}
	if (iot->idx == 0) {
		if (iot->map && cl->monc) {
			pthread_mutex_lock(&cl->creds_mu);
			(void)mon_creds_tick(&cl->creds, cl->monc, io_tid(iot), now,
					     iot->map->auth_epoch);
			pthread_mutex_unlock(&cl->creds_mu);
		}
		mreq_tick(cl, now);
	}
	cairn__watch_tick(iot, now);
	cm_timer_arm(iot->r, &iot->tick, TICK_MS);
}

static void *
client_thread(void *arg)
{
	struct cl_io *iot = arg;
	struct cairn_cluster *cl = iot->cl;
	struct mon_async_opts mco = { 0 };
	struct cm_msgr_opts mo;
	char err[256];
	int rc;

	tl_io = iot;
	cm_daemon_msgr_opts(&cl->cfg.d, &mo);
	mo.entity = cl->entity;
	mo.ops = (struct cm_msgr_ops){ .on_msg = on_msg, .on_event = on_event };
	mo.ops_arg = iot;
	mo.auth.cred_fn = cl_cred;
	mo.backoff_min_ms = 20;
	mo.backoff_max_ms = 500;
	rc = cm_msgr_create(iot->r, &mo, &iot->msgr);
	if (!rc) {
		mon_osd_sessions_init(&iot->sess, iot->msgr, false, true, false);
		iot->sess.per_osd = !cl->shard_sessions;
		iot->sess.home = iot->idx; /* (thread k at an OSD's shard k: its ops seldom hop) */
	}
	if (!rc && iot->idx == 0) {
		mco.mon_host = cl->cfg.mon_host;
		mco.subscribe = true;
		mco.ops.on_map = on_map;
		mco.ops.on_reply = on_mon_reply;
		mco.arg = iot;
		rc = mon_async_create(iot->r, iot->msgr, &mco, &cl->monc, err, sizeof(err));
	}
	pthread_mutex_lock(&cl->mu);
	if (rc && !cl->start_rc)
		cl->start_rc = rc;
	cl->nstarted++;
	pthread_cond_broadcast(&cl->cv);
	pthread_mutex_unlock(&cl->mu);
	if (!rc) {
		cm_timer_init(&iot->tick, on_tick, iot);
		cm_timer_arm(iot->r, &iot->tick, TICK_MS);
		cm_reactor_run(iot->r);
		cm_timer_cancel(iot->r, &iot->tick);
	}
	iot->down = true;
	io_fail_all(iot, -ESHUTDOWN);
	if (iot->idx == 0) {
		while (!TAILQ_EMPTY(&cl->mons))
			mreq_finish(TAILQ_FIRST(&cl->mons), -ESHUTDOWN);
		if (cl->monc)
			mon_async_destroy(cl->monc);
		cl->monc = NULL;
	}
	iot->map = NULL; /* (thread 0's was the monitor client's; the others' go with smap) */
	if (iot->msgr) {
		mon_osd_sessions_fini(&iot->sess);
		cm_msgr_destroy(iot->msgr);
		iot->msgr = NULL;
	}
	tl_io = NULL;
	return NULL;
}

/* ---------- the cluster handle ---------- */

void
cairn_opts_init(struct cairn_opts *o, size_t size)
{
	memset(o, 0, size);
	o->opts_size = size;
}

static void
cluster_free(struct cairn_cluster *cl)
{
	for (unsigned k = 0; k < cl->nio; k++) {
		struct cl_io *iot = &cl->io[k];

		if (iot->pl_ok)
			mon_placement_free(&iot->pl);
		free(iot->htab);
		free(iot->pgc);
	}
	for (size_t i = 0; i < cl->npools; i++)
		free(cl->pools[i].name);
	free(cl->pools);
	/* (every reactor before the watches and the request cache: their last
	 * drops complete pings, free requests and post to other threads) */
	for (unsigned k = 0; k < cl->nio; k++)
		cm_reactor_destroy(cl->io[k].r);
	for (unsigned k = 0; k < cl->nio; k++) {
		cairn__watch_fini(&cl->io[k]);
		smap_put(cl->io[k].smap);
		free(cl->io[k].arena);
	}
	free(cl->io);
	while (cl->creq_cache) {
		struct creq *q = cl->creq_cache;

		cl->creq_cache = q->hnext;
		free(q);
	}
	cm_conf_free(&cl->conf);
	mon_creds_fini(&cl->creds);
	pthread_mutex_destroy(&cl->creds_mu);
	pthread_mutex_destroy(&cl->mu);
	pthread_cond_destroy(&cl->cv);
	pthread_mutex_destroy(&cl->thr_mu);
	pthread_cond_destroy(&cl->thr_cv);
	free(cl);
}

int
cairn_connect(const struct cairn_opts *o, cairn_cluster_t **clp, char *err, size_t errlen)
{
	struct cairn_cluster *cl = calloc(1, sizeof(*cl));
	struct cairn_opts opts;
	struct cm_reactor_opts ro;
	uint8_t rnd[8];
	uint64_t deadline, nio;
	int rc;

	if (!cl)
		return -ENOMEM;
	cairn_opts_init(&opts, sizeof(opts));
	memcpy(&opts, o, CM_MIN(o->opts_size ? o->opts_size : sizeof(opts), sizeof(opts)));
	pthread_mutex_init(&cl->mu, NULL);
	pthread_cond_init(&cl->cv, NULL);
	pthread_mutex_init(&cl->thr_mu, NULL);
	pthread_cond_init(&cl->thr_cv, NULL);
	pthread_mutex_init(&cl->creds_mu, NULL);
	cl->thr_max_ops = opts.max_ops_in_flight ? opts.max_ops_in_flight : 1024;
	cl->shard_sessions = opts.opts_size >= offsetof(struct cairn_opts, shard_sessions) +
						       sizeof(opts.shard_sessions) &&
			     opts.shard_sessions;
	cl->thr_max_bytes = opts.max_bytes_in_flight ? opts.max_bytes_in_flight : 256u << 20;
	TAILQ_INIT(&cl->mons);
	cairn__svc_init(&cl->svcs);
	cl->conf = (struct cm_conf){
		.table = g_cl_opts, .base = &cl->cfg, .section = "client", .env_prefix = "CAIRN_"
	};
	rc = cm_conf_defaults(&cl->conf);
	if (!rc && opts.conf_file && opts.conf_file[0])
		rc = cm_conf_load_file(&cl->conf, opts.conf_file);
	if (!rc && opts.mon_host)
		rc = cm_conf_set(&cl->conf, "mon_host", opts.mon_host, "cairn_opts");
	if (!rc && opts.cluster_key)
		rc = cm_conf_set(&cl->conf, "cluster_key", opts.cluster_key, "cairn_opts");
	if (!rc && opts.opts_size >= offsetof(struct cairn_opts, key) + sizeof(opts.key)) {
		if (!rc && opts.name)
			rc = cm_conf_set(&cl->conf, "name", opts.name, "cairn_opts");
		if (!rc && opts.keyring)
			rc = cm_conf_set(&cl->conf, "keyring", opts.keyring, "cairn_opts");
		if (!rc && opts.key)
			rc = cm_conf_set(&cl->conf, "key", opts.key, "cairn_opts");
	}
	if (!rc && !cl->cfg.mon_host[0]) {
		snprintf(cl->conf.err, sizeof(cl->conf.err), "mon_host is not set");
		rc = -CM_ECONF;
	}
	if (!rc) {
		char name[CM_HS_ENTITY_MAX];
		uint8_t key[CM_HS_KEY_LEN];

		rc = cm_daemon_identity(&cl->cfg.d, CM_AUTH_ADMIN, name, key, cl->conf.err,
					sizeof(cl->conf.err));
		if (!rc)
			mon_creds_init(&cl->creds, name, key);
		else
			rc = -CM_ECONF; /* (conf.err says which: not "no such config file") */
		memset(key, 0, sizeof(key));
	}
	if (rc) {
		snprintf(err, errlen, "%s", rc == -ENOENT ? "no such config file" : cl->conf.err);
		cluster_free(cl);
		return -EINVAL;
	}
	if (opts.log_level) {
		enum cm_log_level lvl;

		if (cm_log_level_parse(opts.log_level, &lvl) == 0)
			cm_log_set_level(lvl);
	}
	cl->op_timeout_ms = opts.op_timeout_ms; /* 0: none (ops wait through failures) */
	if (cm_random_bytes(rnd, sizeof(rnd)))
		memset(rnd, 0, sizeof(rnd));
	/* This instance on the wire: the entity's name and 16 random hex digits. */
	snprintf(cl->entity, sizeof(cl->entity), "%.63s.%02x%02x%02x%02x%02x%02x%02x%02x",
		 cl->creds.name, rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	cl->ticket_rc = 1; /* none yet */
	nio = opts.opts_size >= offsetof(struct cairn_opts, io_threads) + sizeof(opts.io_threads)
		      ? opts.io_threads
		      : 0;
	if (nio > IO_MAX) {
		snprintf(err, errlen, "io_threads: at most %u", IO_MAX);
		cluster_free(cl);
		return -EINVAL;
	}
	/* (0: the config's io_threads, 1 by default) */
	cl->nio = nio ? (unsigned)nio : (unsigned)cl->cfg.io_threads;
	cl->io = calloc(cl->nio, sizeof(*cl->io));
	if (!cl->io) {
		cl->nio = 0;
		cluster_free(cl);
		return -ENOMEM;
	}
	for (unsigned k = 0; k < cl->nio; k++)
		io_init(&cl->io[k], cl, k);
	cm_reactor_opts_init(&ro, sizeof(ro));
	ro.name = "cairn-client";
	cm_reactor_backend_parse(cl->cfg.d.reactor, &ro.backend);
	for (unsigned k = 0; k < cl->nio && !rc; k++)
		if ((rc = cm_reactor_create(&ro, &cl->io[k].r)))
			snprintf(err, errlen, "event loop: %s", cm_strerror(rc));
	if (rc) {
		cluster_free(cl);
		return rc;
	}
	for (unsigned k = 0; k < cl->nio; k++) {
		int prc = pthread_create(&cl->io[k].th, NULL, client_thread, &cl->io[k]);

		if (prc) {
			snprintf(err, errlen, "thread: %s", strerror(prc));
			cairn_shutdown(cl); /* (those started stop) */
			return -prc;
		}
		cl->io[k].th_started = true;
	}
	deadline = cm_now_ms() + (opts.connect_timeout_ms ? opts.connect_timeout_ms : 10000);
	pthread_mutex_lock(&cl->mu);
	while (cl->nstarted < cl->nio)
		pthread_cond_wait(&cl->cv, &cl->mu);
	rc = cl->start_rc;
	/* The first map and an answer to our first ticket request. */
	while (!rc && (!cl->epoch || cl->ticket_rc == 1) && !(cl->auth_refused && !cl->epoch) &&
	       cm_now_ms() < deadline) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 50 * 1000000L;
		if (t.tv_nsec >= 1000000000L) {
			t.tv_sec++;
			t.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&cl->cv, &cl->mu, &t);
	}
	if (!rc && !cl->epoch && cl->auth_refused) {
		rc = -EPERM;
		snprintf(err, errlen,
			 "the monitors refused %s: no such entity, or not its key (their log says "
			 "which)",
			 cl->creds.name);
	}
	if (!rc && !cl->epoch)
		rc = -ENOTCONN;
	if (!rc && cl->ticket_rc) {
		rc = cl->ticket_rc == 1 ? -ENOTCONN : -EPERM;
		snprintf(err, errlen, "no ticket for the OSDs: %s",
			 cl->ticket_rc == 1 ? "no monitor answered in time" : cl->ticket_err);
	}
	pthread_mutex_unlock(&cl->mu);
	if (rc) {
		if (rc != -EPERM && !(rc == -ENOTCONN && cl->epoch))
			snprintf(err, errlen, "%s",
				 rc == -ENOTCONN
					 ? "no monitor answered (mon_host? and is the key of this "
					   "name right? the monitors log refusals)"
					 : cm_strerror(rc));
		cairn_shutdown(cl);
		return rc;
	}
	*clp = cl;
	return 0;
}

static void
stop_fn(void *arg)
{
	cm_reactor_stop(((struct cl_io *)arg)->r);
}

static void
stop_drop(void *arg)
{
	(void)arg; /* (the thread's own: nothing to free) */
}

void
cairn_shutdown(cairn_cluster_t *cl)
{
	if (!cl)
		return;
	cairn__svc_stop(&cl->svcs); /* (its beacons need the client thread) */
	pthread_mutex_lock(&cl->thr_mu);
	cl->thr_closing = true; /* (a submitter waiting for room gives up) */
	pthread_cond_broadcast(&cl->thr_cv);
	pthread_mutex_unlock(&cl->thr_mu);
	for (unsigned k = 0; k < cl->nio; k++)
		if (cl->io[k].th_started) {
			/* Stopped now, and again by a post once its loop runs: a
			 * thread still starting (cm_reactor_run clears a stop
			 * that came before it) would miss a stop alone. */
			cl->io[k].stop_post = (struct cm_reactor_msg){ .fn = stop_fn,
								       .drop = stop_drop,
								       .arg = &cl->io[k] };
			cm_reactor_stop(cl->io[k].r);
			cm_reactor_post(cl->io[k].r, &cl->io[k].stop_post);
		}
	for (unsigned k = 0; k < cl->nio; k++)
		if (cl->io[k].th_started)
			pthread_join(cl->io[k].th, NULL);
	cluster_free(cl);
}

uint64_t
cairn_map_epoch(cairn_cluster_t *cl)
{
	uint64_t e;

	pthread_mutex_lock(&cl->mu);
	e = cl->epoch;
	pthread_mutex_unlock(&cl->mu);
	return e;
}

int
cairn_ioctx_create(cairn_cluster_t *cl, const char *pool, cairn_ioctx_t **iop)
{
	cairn_ioctx_t *io;
	int rc = -ENOENT;

	pthread_mutex_lock(&cl->mu);
	for (size_t i = 0; i < cl->npools; i++)
		if (strcmp(cl->pools[i].name, pool) == 0) {
			io = calloc(1, sizeof(*io));
			if (!io) {
				rc = -ENOMEM;
				break;
			}
			io->cl = cl;
			io->pool = cl->pools[i].id;
			*iop = io;
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&cl->mu);
	return rc;
}

void
cairn_ioctx_destroy(cairn_ioctx_t *io)
{
	free(io);
}

int
cairn_ioctx_set_namespace(cairn_ioctx_t *io, const char *nspace)
{
	int rc = crush_oname_check(nspace, NULL, "x");

	if (rc)
		return rc;
	snprintf(io->nspace, sizeof(io->nspace), "%s", nspace ? nspace : "");
	return 0;
}

const char *
cairn_ioctx_get_namespace(const cairn_ioctx_t *io)
{
	return io->nspace;
}

int
cairn_ioctx_set_locator_key(cairn_ioctx_t *io, const char *key)
{
	int rc = crush_oname_check(NULL, key, "x");

	if (rc)
		return rc;
	snprintf(io->key, sizeof(io->key), "%s", key ? key : "");
	return 0;
}

int
cairn_aio_operate(cairn_ioctx_t *io, const char *oid, cairn_op_t *op, cairn_completion_t *c)
{
	return cairn_aio_operate_opts(io, oid, op, c, NULL);
}

int
cairn_aio_operate_opts(cairn_ioctx_t *io, const char *oid, cairn_op_t *op, cairn_completion_t *c,
		       const struct cairn_aio_opts *o)
{
	struct cairn_aio_opts opts = { 0 };
	struct creq *q;
	char sname[CRUSH_ONAME_MAX + 1];
	uint32_t hash;
	int rc, len = store_name(io, oid, sname, sizeof(sname));

	if (len < 0)
		return len;
	if (op->err)
		return op->err;
	if (!op->n)
		return -EINVAL;
	/* (the name was checked: only memory can fail) */
	if (crush_oname_hash(sname, &hash))
		return -ENOMEM;
	if (o)
		memcpy(&opts, o, CM_MIN(o->opts_size ? o->opts_size : sizeof(opts), sizeof(opts)));
	rc = throttle_get(io->cl, op->wbytes + op->rbytes, opts.flags & CAIRN_AIO_NOWAIT, &q);
	if (rc)
		return rc;
	q->kind = CREQ_OP;
	q->pool = io->pool;
	q->hash = hash;
	q->iot = io_of_hash(io->cl, hash);
	if (creq_set_oid(q, sname, (size_t)len)) {
		creq_free(q);
		return -ENOMEM;
	}
	q->op = op;
	q->comp = c;
	cairn__comp_attach(c);
	q->timeout_ms = opts.timeout_ms;
	for (size_t i = 0; i < op->n; i++)
		if (op->subs[i].type == OSD_OP_NOTIFY) {
			/* The OSD answers when the watchers did, or at the notify's timeout. */
			unsigned need = op->subs[i].notify_ms + RESEND_MS;

			q->hold_ms = op->subs[i].notify_ms;
			if (!q->timeout_ms && io->cl->op_timeout_ms && io->cl->op_timeout_ms < need)
				q->timeout_ms = need;
		}
	q->post = (struct cm_reactor_msg){ .fn = submit_fn, .drop = submit_drop, .arg = q };
	cm_reactor_post(q->iot->r, &q->post);
	return 0;
}

/* A cancel on the client thread: its op, if still in flight, ends. */
struct cancel_msg {
	struct cm_reactor_msg post;
	struct cairn_cluster *cl;
	uint64_t tid;
	cairn_completion_t *c; /* compared, never used: it may be released by now */
};

static void
cancel_fn(void *arg)
{
	struct cancel_msg *x = arg;
	struct creq *q = creq_find(&x->cl->io[x->tid & (IO_MAX - 1)], x->tid);

	if (q && q->comp == x->c)
		creq_finish(q, -ECANCELED, NULL);
	free(x);
}

int
cairn_completion_cancel(cairn_completion_t *c)
{
	struct cancel_msg *x;
	struct cairn_cluster *cl;

	pthread_mutex_lock(&c->mu);
	cl = c->cl;
	pthread_mutex_unlock(&c->mu);
	if (cl && closing(cl)) /* (shutting down: it ends with -ESHUTDOWN anyway) */
		return -ESHUTDOWN;
	pthread_mutex_lock(&c->mu);
	if (c->done) {
		pthread_mutex_unlock(&c->mu);
		return -EALREADY;
	}
	if (!c->tid) { /* not taken by the client thread yet: it ends it there */
		c->cancel = true;
		pthread_mutex_unlock(&c->mu);
		return 0;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		pthread_mutex_unlock(&c->mu);
		return -ENOMEM;
	}
	x->cl = c->cl;
	x->tid = c->tid;
	x->c = c;
	pthread_mutex_unlock(&c->mu);
	x->post = (struct cm_reactor_msg){ .fn = cancel_fn, .drop = free, .arg = x };
	cm_reactor_post(x->cl->io[x->tid & (IO_MAX - 1)].r, &x->post); /* (its thread) */
	return 0;
}

int
cairn_operate(cairn_ioctx_t *io, const char *oid, cairn_op_t *op, struct cairn_version *ver)
{
	cairn_completion_t *c = cairn_completion_create(NULL, NULL);
	int rc;

	if (!c)
		return -ENOMEM;
	rc = cairn_aio_operate(io, oid, op, c);
	if (!rc) {
		rc = cairn_completion_wait(c);
		if (ver)
			*ver = c->ver;
	}
	cairn_completion_release(c);
	return rc;
}

int
cairn_write_full(cairn_ioctx_t *io, const char *oid, const void *buf, size_t len)
{
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!op)
		return -ENOMEM;
	cairn_op_write_full(op, buf, len);
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	return rc;
}

int
cairn_write(cairn_ioctx_t *io, const char *oid, const void *buf, size_t len, uint64_t off)
{
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!op)
		return -ENOMEM;
	cairn_op_write(op, off, buf, len);
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	return rc;
}

int64_t
cairn_read(cairn_ioctx_t *io, const char *oid, void *buf, size_t len, uint64_t off)
{
	cairn_op_t *op = cairn_op_create();
	size_t got = 0;
	int rc, rval = 0;

	if (!op)
		return -ENOMEM;
	cairn_op_read(op, off, len, buf, &got, &rval);
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	return rc ? rc : (int64_t)got;
}

int
cairn_stat(cairn_ioctx_t *io, const char *oid, uint64_t *size, struct cairn_version *ver)
{
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!op)
		return -ENOMEM;
	cairn_op_stat(op, size, ver, NULL);
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	return rc;
}

/* One lock sub-op (built by fn's caller into op), run synchronously. */
int
cairn__op_run(cairn_ioctx_t *io, const char *oid, cairn_op_t *op)
{
	int rc = cairn_operate(io, oid, op, NULL);

	cairn_op_release(op);
	return rc;
}

int
cairn_lock_exclusive(cairn_ioctx_t *io, const char *oid, const char *name, const char *cookie,
		     const char *description, uint64_t duration_ms, unsigned flags)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return -ENOMEM;
	cairn_op_lock(op, name, CAIRN_LOCK_EXCLUSIVE, cookie, "", description, duration_ms, flags);
	return cairn__op_run(io, oid, op);
}

int
cairn_lock_shared(cairn_ioctx_t *io, const char *oid, const char *name, const char *cookie,
		  const char *tag, const char *description, uint64_t duration_ms, unsigned flags)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return -ENOMEM;
	cairn_op_lock(op, name, CAIRN_LOCK_SHARED, cookie, tag, description, duration_ms, flags);
	return cairn__op_run(io, oid, op);
}

int
cairn_unlock(cairn_ioctx_t *io, const char *oid, const char *name, const char *cookie)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return -ENOMEM;
	cairn_op_unlock(op, name, cookie);
	return cairn__op_run(io, oid, op);
}

int
cairn_break_lock(cairn_ioctx_t *io, const char *oid, const char *name, const char *entity,
		 const char *cookie)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return -ENOMEM;
	cairn_op_break_lock(op, name, entity, cookie);
	return cairn__op_run(io, oid, op);
}

int
cairn_lock_get_info(cairn_ioctx_t *io, const char *oid, const char *name,
		    struct cairn_lock_info *info)
{
	cairn_op_t *op = cairn_op_create();
	int rc, rval = 0;

	if (!op)
		return -ENOMEM;
	cairn_op_lock_info(op, name, info, &rval);
	rc = cairn__op_run(io, oid, op);
	/* (a reply that does not decode is the sub-op's error: no holder is assumed) */
	return rc ? rc : rval;
}

int
cairn_lock_take(cairn_ioctx_t *io, const char *oid, const char *name, const char *cookie,
		const char *description, uint64_t duration_ms, unsigned fence_seconds)
{
	struct cairn_lock_info li;
	const char *me = io->cl->entity;
	int rc = cairn_lock_get_info(io, oid, name, &li);

	if (rc == -ENOENT) /* no object yet: no holder */
		return cairn_lock_exclusive(io, oid, name, cookie, description, duration_ms,
					    CAIRN_LOCK_MAY_RENEW);
	if (rc)
		return rc;
	for (size_t i = 0; i < li.n && !rc; i++)
		if (!li.lockers[i].expired && strcmp(li.lockers[i].entity, me) != 0)
			rc = -EBUSY;
	for (size_t i = 0; i < li.n && !rc; i++) {
		const struct cairn_locker *l = &li.lockers[i];

		if (!l->expired || !strcmp(l->entity, me))
			continue;
		CM_NOTICE("lock %s on %s: %s's hold expired: fencing it, then taking over", name,
			  oid, l->entity);
		rc = cairn_blocklist_add(io->cl, l->entity, fence_seconds, NULL);
		if (!rc) {
			rc = cairn_break_lock(io, oid, name, l->entity, l->cookie);
			if (rc == -ENOENT) /* (someone broke it meanwhile) */
				rc = 0;
		}
	}
	cairn_lock_info_free(&li);
	if (rc)
		return rc;
	return cairn_lock_exclusive(io, oid, name, cookie, description, duration_ms,
				    CAIRN_LOCK_MAY_RENEW);
}

int
cairn_remove(cairn_ioctx_t *io, const char *oid)
{
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!op)
		return -ENOMEM;
	cairn_op_remove(op);
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	return rc;
}

/*
 * One page of PG seed's objects after `after` (at most max), as the primary
 * lists them: ascending by name, while the pool has pg_num PGs (the client's
 * map and the primary's both). \return 0, -ENOENT (no such PG or pool, or
 * another pg_num, in the current map), or an error.
 */
static int
list_pg(cairn_ioctx_t *io, uint32_t seed, uint32_t pg_num, const char *nspace, const char *after,
	unsigned max, char ***names, size_t *n, bool *more, bool ns_only)
{
	cairn_completion_t *c;
	struct creq *q;
	int rc;

	*names = NULL;
	*n = 0;
	*more = false;
	if (closing(io->cl))
		return -ESHUTDOWN;
	c = cairn_completion_create(NULL, NULL);
	q = calloc(1, sizeof(*q));
	if (!c || !q) {
		cairn_completion_release(c);
		free(q);
		return -ENOMEM;
	}
	q->cl = io->cl;
	q->iot = &io->cl->io[seed % io->cl->nio]; /* (thread k serves PGs k mod n, as ops) */
	q->kind = CREQ_LIST;
	q->pool = io->pool;
	q->seed = seed;
	q->pg_num = pg_num;
	q->after = after;
	q->nspace = nspace;
	q->ns_only = ns_only;
	q->max = max;
	q->comp = c;
	q->post = (struct cm_reactor_msg){ .fn = submit_fn, .drop = submit_drop, .arg = q };
	cm_reactor_post(q->iot->r, &q->post);
	rc = cairn_completion_wait(c);
	cairn_completion_release(c);
	if (rc) {
		cairn_names_free(q->names, q->nnames);
	} else {
		*names = q->names;
		*n = q->nnames;
		*more = q->more;
	}
	free(q);
	return rc;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Page attempts that may meet a PG count changing under them. */
#define LIST_TRIES 200

/*
 * The listing walks the PGs of the pool's pg_num when it started (cur->pg_num),
 * whatever the count is now: the objects of PG p then are listed from the PGs
 * that hold them now (crush_pg_cover: p's children after a split, the PG it
 * went into after a merge), merged by name and kept to those whose PG then is
 * p. So a split or merge during a listing neither hides nor repeats an
 * object. A page asks each of those PGs for max names after cur->after and
 * returns names only up to the lowest last name of a PG that had more, so
 * nothing between is skipped.
 */
static int
list_page(cairn_ioctx_t *io, struct cairn_list_cursor *cur, unsigned max, const char *nspace,
	  char ***names, size_t *n)
{
	struct cairn_cluster *cl = io->cl;
	int tries = 0;

	*names = NULL;
	*n = 0;
	if (!max)
		max = 1000;
	while (!cur->done) {
		struct crush_pool then = { 0 };
		uint32_t now = 0, *cover = NULL;
		char **all = NULL, *bound = NULL;
		size_t nall = 0, ncover, k = 0;
		int rc = 0;

		pthread_mutex_lock(&cl->mu); /* (the map itself is the client thread's) */
		for (size_t i = 0; i < cl->npools; i++) {
			if (cl->pools[i].id == io->pool) {
				then = cl->pools[i].cp;
				now = cl->pools[i].cp.pg_num;
			}
		}
		pthread_mutex_unlock(&cl->mu);
		if (!now)
			return -ENOENT;
		if (!cur->pg_num)
			cur->pg_num = now;
		if (cur->pg >= cur->pg_num) {
			cairn_list_cursor_fini(cur);
			cur->done = true;
			break;
		}
		then.pg_num = cur->pg_num;
		ncover = crush_pg_cover(cur->pg_num, cur->pg, now, NULL, 0);
		cover = calloc(ncover, sizeof(*cover));
		if (!cover)
			return -ENOMEM;
		crush_pg_cover(cur->pg_num, cur->pg, now, cover, ncover);
		for (size_t i = 0; i < ncover && !rc; i++) {
			char **got, **grown;
			size_t ng;
			bool more;

			rc = list_pg(io, cover[i], now, nspace, cur->after ? cur->after : "", max,
				     &got, &ng, &more, false);
			if (rc)
				break;
			if (more && ng && (!bound || strcmp(got[ng - 1], bound) < 0)) {
				free(bound);
				if (!(bound = strdup(got[ng - 1])))
					rc = -ENOMEM;
			}
			/* Only the objects of PG cur->pg then (a merged PG holds others). */
			if (!ng) {
				free(got);
				continue;
			}
			grown = realloc(all, (nall + ng) * sizeof(*all));
			if (!grown) {
				cairn_names_free(got, ng);
				rc = -ENOMEM;
				break;
			}
			all = grown;
			for (size_t j = 0; j < ng; j++) {
				uint32_t pg;

				if (!crush_oname_to_pg(&then, got[j], &pg) && pg == cur->pg)
					all[nall++] = got[j];
				else
					free(got[j]);
			}
			free(got);
		}
		free(cover);
		if (rc == -ENOENT && ++tries < LIST_TRIES) {
			/* The count changed under us (a PG of the cover is gone, or
			 * the map or the primary has another pg_num): plan again. */
			cairn_names_free(all, nall);
			free(bound);
			usleep(10000);
			continue;
		}
		if (rc) {
			cairn_names_free(all, nall);
			free(bound);
			return rc;
		}
		if (nall)
			qsort(all, nall, sizeof(*all), name_cmp);
		/* Up to the bound (inclusive) and max names; one copy of each. */
		for (size_t j = 0; j < nall; j++) {
			bool keep = k < max && (!bound || strcmp(all[j], bound) <= 0) &&
				    (!k || strcmp(all[j], all[k - 1]) != 0);

			if (keep)
				all[k++] = all[j];
			else
				free(all[j]);
		}
		if (k == max || bound) {
			/* More to come in this PG: after the last one returned, or
			 * the bound when every name up to it belonged elsewhere. */
			char *next = strdup(k == max ? all[k - 1] : bound);

			if (!next) {
				cairn_names_free(all, k);
				free(bound);
				return -ENOMEM;
			}
			free(cur->after);
			cur->after = next;
		} else {
			cur->pg++;
			free(cur->after);
			cur->after = NULL;
		}
		free(bound);
		if (k) {
			*names = all;
			*n = k;
			return 0;
		}
		free(all);
	}
	return 0;
}

/* Insert s (taken) into the sorted set *v of *n names; a name already there is freed. */
static int
set_add(char ***v, size_t *n, char *s)
{
	size_t lo = 0, hi = *n;
	char **grown;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp((*v)[mid], s);

		if (!c) {
			free(s);
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	grown = realloc(*v, (*n + 1) * sizeof(**v));
	if (!grown) {
		free(s);
		return -ENOMEM;
	}
	*v = grown;
	memmove(&grown[lo + 1], &grown[lo], (*n - lo) * sizeof(*grown));
	grown[lo] = s;
	(*n)++;
	return 0;
}

int
cairn_namespace_list(cairn_ioctx_t *io, char ***nss, size_t *n)
{
	struct cairn_cluster *cl = io->cl;
	int rc = -ENOENT;

	*nss = NULL;
	*n = 0;
	/* Every PG of the pool, page by page; a PG count that changes under
	 * the walk (-ENOENT from a PG) starts it again. */
	for (int tries = 0; tries < LIST_TRIES && rc == -ENOENT; tries++) {
		uint32_t pg_num = 0;

		cairn_names_free(*nss, *n);
		*nss = NULL;
		*n = 0;
		pthread_mutex_lock(&cl->mu);
		for (size_t i = 0; i < cl->npools; i++)
			if (cl->pools[i].id == io->pool)
				pg_num = cl->pools[i].cp.pg_num;
		pthread_mutex_unlock(&cl->mu);
		if (!pg_num)
			return -ENOENT;
		rc = 0;
		for (uint32_t pg = 0; pg < pg_num && !rc; pg++) {
			char *after = strdup("");
			bool more = true;

			if (!after)
				rc = -ENOMEM;
			while (after && more && !rc) {
				char **got;
				size_t ng;

				rc = list_pg(io, pg, pg_num, NULL, after, 1000, &got, &ng, &more,
					     true);
				if (rc)
					break;
				free(after);
				after = NULL;
				if (ng) {
					size_t l = strlen(got[ng - 1]);

					if ((after = malloc(l + 3))) {
						after[0] = '\x02';
						memcpy(after + 1, got[ng - 1], l);
						after[1 + l] = ' ';
						after[2 + l] = 0;
					}
				} else {
					more = false;
				}
				for (size_t i = 0; i < ng; i++)
					if (!rc)
						rc = set_add(nss, n, got[i]);
					else
						free(got[i]);
				free(got);
				if (more && !after && !rc)
					rc = -ENOMEM;
			}
			free(after);
		}
		if (rc == -ENOENT)
			usleep(10000);
	}
	if (rc) {
		cairn_names_free(*nss, *n);
		*nss = NULL;
		*n = 0;
	}
	return rc;
}

void
cairn_list_cursor_fini(struct cairn_list_cursor *cur)
{
	free(cur->after);
	cur->after = NULL;
}

int
cairn_list(cairn_ioctx_t *io, struct cairn_list_cursor *cur, unsigned max, char ***names, size_t *n)
{
	int rc = list_page(io, cur, max, io->nspace, names, n);

	/* The names of the io's namespace, without namespace and key. */
	for (size_t i = 0; !rc && i < *n; i++) {
		struct crush_oname o;
		char *s = (*names)[i];

		if (crush_oname_decode(s, &o) == 0)
			memmove(s, o.name, o.namelen + 1);
	}
	return rc;
}

static char *
dup_part(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

int
cairn_list_objs(cairn_ioctx_t *io, struct cairn_list_cursor *cur, unsigned max, unsigned flags,
		struct cairn_obj **objs, size_t *n)
{
	char **names;
	size_t nn, k = 0;
	int rc =
		list_page(io, cur, max, flags & CAIRN_LIST_ALL_NS ? NULL : io->nspace, &names, &nn);

	*objs = NULL;
	*n = 0;
	if (rc || !nn)
		return rc;
	*objs = calloc(nn, sizeof(**objs));
	for (size_t i = 0; *objs && i < nn; i++) {
		struct crush_oname o;
		struct cairn_obj *ob = &(*objs)[k];

		if (crush_oname_decode(names[i], &o))
			continue; /* (the OSD checked every name it stored) */
		ob->nspace = dup_part(o.nspace, o.nslen);
		ob->key = dup_part(o.key, o.keylen);
		ob->name = dup_part(o.name, o.namelen);
		k++;
		if (!ob->nspace || !ob->key || !ob->name) {
			cairn_objs_free(*objs, k);
			*objs = NULL;
		}
	}
	cairn_names_free(names, nn);
	if (!*objs)
		return -ENOMEM;
	*n = k;
	return 0;
}

void
cairn_objs_free(struct cairn_obj *objs, size_t n)
{
	for (size_t i = 0; objs && i < n; i++) {
		free(objs[i].nspace);
		free(objs[i].key);
		free(objs[i].name);
	}
	free(objs);
}

/* ---------- entry point for tests/fuzz/libcairn_reply_fuzz.c ---------- */

int
cairn__reply_decode(const Cairn__Map__OsdMap *map, int64_t pool, const char *oid, uint32_t seed,
		    cairn_op_t *op, struct cm_msg *reply, char ***names, size_t *nnames, bool *more)
{
	struct cairn_cluster *cl = calloc(1, sizeof(*cl));
	struct cl_io *iot = calloc(1, sizeof(*iot));
	cairn_completion_t *c = cairn_completion_create(NULL, NULL);
	struct creq *q = calloc(1, sizeof(*q));
	int kind = reply->type == OSD_MSG_PG_LIST_REPLY ? CREQ_LIST : CREQ_OP;
	int32_t acting[16], primary;
	int nacting, rc;

	*names = NULL;
	*nnames = 0;
	*more = false;
	if (!cl || !iot || !c || !q) {
		free(cl);
		free(iot);
		cairn_completion_release(c);
		free(q);
		cm_msg_destroy(reply);
		return -ENOMEM;
	}
	pthread_mutex_init(&cl->mu, NULL);
	pthread_cond_init(&cl->cv, NULL);
	pthread_mutex_init(&cl->thr_mu, NULL);
	pthread_cond_init(&cl->thr_cv, NULL);
	pthread_mutex_init(&cl->creds_mu, NULL);
	cl->nio = 1;
	cl->io = iot;
	io_init(iot, cl, 0);
	TAILQ_INIT(&cl->mons);
	cl->conf = (struct cm_conf){ .table = g_cl_opts, .base = &cl->cfg };
	on_map(iot, map);
	/* The request, as submit_fn and creq_send make it (but sent nowhere). */
	q->cl = cl;
	q->iot = iot;
	q->kind = kind;
	q->pool = pool;
	q->seed = seed;
	q->after = "";
	q->op = kind == CREQ_OP ? op : NULL;
	q->comp = c;
	q->tid = 1; /* (what the fuzz target's replies answer) */
	q->deadline_ms = UINT64_MAX;
	if (kind == CREQ_OP && crush_oname_hash(oid, &q->hash))
		q->hash = 0; /* (a bad name: the request is placed by hash 0) */
	if (creq_set_oid(q, oid, strlen(oid)) || creq_link(q)) {
		creq_free(q);
		cairn_completion_release(c);
		cm_msg_destroy(reply);
		cluster_free(cl);
		return -ENOMEM;
	}
	q->target = creq_target(q, acting, &nacting, &primary) ? -1 : primary;
	/* As on_msg, without the monitor client (it takes no OSD replies). */
	if (reply->type == OSD_MSG_OP_REPLY)
		on_op_reply(iot, reply);
	else if (reply->type == OSD_MSG_PG_LIST_REPLY)
		on_list_reply(iot, reply);
	else
		cm_msg_destroy(reply);
	/* Not completed by it (another tid, a map to wait for): as at shutdown. */
	if (creq_find(iot, 1))
		creq_finish(creq_find(iot, 1), -ESHUTDOWN, NULL);
	rc = cairn_completion_wait(c);
	cairn_completion_release(c);
	/* An op's request is freed by now; a listing's is ours (as in cairn_list). */
	if (kind == CREQ_LIST) {
		if (rc) {
			cairn_names_free(q->names, q->nnames);
		} else {
			*names = q->names;
			*nnames = q->nnames;
			*more = q->more;
		}
		creq_free(q);
	}
	cluster_free(cl);
	return rc;
}

/* ---------- admin calls ---------- */

int
cairn_pool_list(cairn_cluster_t *cl, char ***names, size_t *n)
{
	char **v;
	size_t k = 0;

	*names = NULL;
	*n = 0;
	pthread_mutex_lock(&cl->mu);
	v = calloc(cl->npools + 1, sizeof(*v));
	for (size_t i = 0; v && i < cl->npools; i++) {
		if (!(v[k] = strdup(cl->pools[i].name)))
			break;
		k++;
	}
	pthread_mutex_unlock(&cl->mu);
	if (!v || k < cl->npools) {
		cairn_names_free(v, k);
		return -ENOMEM;
	}
	*names = v;
	*n = k;
	return 0;
}

/* A DF_REPLY into *df (zeroed first). m is consumed. */
static int
df_decode(struct cm_msg *m, struct cairn_df *df)
{
	Cairn__Mon__DfReply *r =
		(Cairn__Mon__DfReply *)cm_msg_unpack_front(m, &cairn__mon__df_reply__descriptor);
	int rc;

	memset(df, 0, sizeof(*df));
	cm_msg_destroy(m);
	if (!r)
		return -EBADMSG;
	rc = reply_rc(r->rc);
	if (!rc && !(df->pools = calloc(r->n_pools + 1, sizeof(*df->pools))))
		rc = -ENOMEM;
	if (!rc) {
		df->stats_valid = r->stats_valid;
		df->total_bytes = r->total_bytes;
		df->free_bytes = r->free_bytes;
		df->epoch = r->epoch;
		for (size_t i = 0; i < r->n_pools; i++) {
			const Cairn__Mon__PoolStats *p = r->pools[i];
			struct cairn_pool_stat *d = &df->pools[i];

			d->id = p->id;
			snprintf(d->name, sizeof(d->name), "%s", p->name ? p->name : "");
			d->objects = p->objects;
			d->stored = p->stored;
			d->raw = p->raw;
			d->quota_max_bytes = p->quota_max_bytes;
			d->max_avail = p->max_avail;
		}
		df->npools = r->n_pools;
	}
	cairn__mon__df_reply__free_unpacked(r, NULL);
	return rc;
}

int
cairn_pool_info(cairn_cluster_t *cl, const char *pool, struct cairn_pool_info *pi)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&cl->mu);
	for (size_t i = 0; i < cl->npools; i++)
		if (strcmp(cl->pools[i].name, pool) == 0) {
			*pi = cl->pools[i].pi;
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&cl->mu);
	return rc;
}

int
cairn_df(cairn_cluster_t *cl, struct cairn_df *df)
{
	Cairn__Mon__DfRequest req = CAIRN__MON__DF_REQUEST__INIT;
	struct cm_msg *m;
	int rc;

	memset(df, 0, sizeof(*df));
	rc = mon_call(cl, MON_MSG_DF_REQUEST, &req.base, MON_MSG_DF_REPLY, &m);
	return rc ? rc : df_decode(m, df);
}

void
cairn_df_free(struct cairn_df *df)
{
	free(df->pools);
	memset(df, 0, sizeof(*df));
}

int
cairn_pool_stat(cairn_ioctx_t *io, struct cairn_pool_stat *st)
{
	struct cairn_df df;
	int rc = cairn_df(io->cl, &df);

	if (rc)
		return rc;
	rc = -ENOENT;
	for (size_t i = 0; i < df.npools; i++)
		if (df.pools[i].id == io->pool) {
			*st = df.pools[i];
			rc = 0;
		}
	cairn_df_free(&df);
	return rc;
}

void
cairn_health_free(struct cairn_health *h)
{
	for (size_t i = 0; h->checks && i < h->nchecks; i++) {
		struct cairn_health_check *c = &h->checks[i];

		free(c->code);
		free(c->summary);
		cairn_names_free(c->detail, c->ndetail);
	}
	free(h->checks);
	memset(h, 0, sizeof(*h));
}

/* A HEALTH_REPLY into *h (zeroed first). m is consumed. */
static int
health_decode(struct cm_msg *m, struct cairn_health *h)
{
	Cairn__Mon__HealthReply *r = (Cairn__Mon__HealthReply *)cm_msg_unpack_front(
		m, &cairn__mon__health_reply__descriptor);
	int rc;

	memset(h, 0, sizeof(*h));
	cm_msg_destroy(m);
	if (!r)
		return -EBADMSG;
	rc = reply_rc(r->rc);
	if (!rc && r->status > CAIRN_HEALTH_ERR)
		rc = -EBADMSG;
	if (!rc && !(h->checks = calloc(r->n_checks + 1, sizeof(*h->checks))))
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < r->n_checks; i++) {
		const Cairn__Mon__HealthCheck *k = r->checks[i];
		struct cairn_health_check *c = &h->checks[i];

		h->nchecks = i + 1;
		c->severity = k->severity > CAIRN_HEALTH_ERR
				      ? CAIRN_HEALTH_ERR
				      : (enum cairn_health_status)k->severity;
		c->code = strdup(k->code ? k->code : "");
		c->summary = strdup(k->summary ? k->summary : "");
		c->detail = calloc(k->n_detail + 1, sizeof(*c->detail));
		if (!c->code || !c->summary || !c->detail) {
			rc = -ENOMEM;
			break;
		}
		for (size_t d = 0; d < k->n_detail; d++) {
			if (!(c->detail[d] = strdup(k->detail[d] ? k->detail[d] : ""))) {
				rc = -ENOMEM;
				break;
			}
			c->ndetail = d + 1;
		}
	}
	if (!rc)
		h->status = (enum cairn_health_status)r->status;
	else
		cairn_health_free(h);
	cairn__mon__health_reply__free_unpacked(r, NULL);
	return rc;
}

int
cairn_health(cairn_cluster_t *cl, struct cairn_health *h)
{
	Cairn__Mon__HealthRequest req = CAIRN__MON__HEALTH_REQUEST__INIT;
	struct cm_msg *m;
	int rc;

	memset(h, 0, sizeof(*h));
	rc = mon_call(cl, MON_MSG_HEALTH_REQUEST, &req.base, MON_MSG_HEALTH_REPLY, &m);
	return rc ? rc : health_decode(m, h);
}

/* A COMMAND_REPLY into *out, *err (may be NULL). m is consumed. */
static int
command_decode(struct cm_msg *m, char **out, char **err)
{
	Cairn__Mon__CommandReply *r = (Cairn__Mon__CommandReply *)cm_msg_unpack_front(
		m, &cairn__mon__command_reply__descriptor);
	int rc;

	*out = NULL;
	if (err)
		*err = NULL;
	cm_msg_destroy(m);
	if (!r)
		return -EBADMSG;
	rc = reply_rc(r->rc);
	*out = strdup(r->out ? r->out : "");
	if (err)
		*err = strdup(r->err ? r->err : "");
	if (!*out || (err && !*err)) {
		free(*out);
		*out = NULL;
		if (err) {
			free(*err);
			*err = NULL;
		}
		rc = -ENOMEM;
	}
	cairn__mon__command_reply__free_unpacked(r, NULL);
	return rc;
}

int
cairn_mon_command(cairn_cluster_t *cl, const char *const *argv, size_t argc, bool json, char **out,
		  char **err)
{
	return cairn__mon_command_within(cl, argv, argc, json, out, err,
					 cl->op_timeout_ms ? cl->op_timeout_ms : MON_TIMEOUT_MS);
}

int
cairn__mon_command_within(cairn_cluster_t *cl, const char *const *argv, size_t argc, bool json,
			  char **out, char **err, unsigned timeout_ms)
{
	Cairn__Mon__Command req = CAIRN__MON__COMMAND__INIT;
	struct cm_msg *m;
	int rc;

	*out = NULL;
	if (err)
		*err = NULL;
	if (!argc)
		return -EINVAL;
	req.args = (char **)argv;
	req.n_args = argc;
	req.json = json;
	rc = mon_call_within(cl, MON_MSG_COMMAND, &req.base, MON_MSG_COMMAND_REPLY, &m, timeout_ms);
	return rc ? rc : command_decode(m, out, err);
}

/* The map epoch in a command's JSON result ({"changed":…,"epoch":N,…}). */
static int
json_epoch(const char *s, uint64_t *epoch)
{
	const char *p = s ? strstr(s, "\"epoch\":") : NULL;
	char *end;

	if (!p)
		return -EBADMSG;
	p += 8;
	while (*p == ' ')
		p++;
	if (*p < '0' || *p > '9')
		return -EBADMSG;
	errno = 0;
	*epoch = strtoull(p, &end, 10);
	return errno || (*end != ',' && *end != '}' && *end != ' ') ? -EBADMSG : 0;
}

const char *
cairn_client_name(cairn_cluster_t *cl)
{
	return cl->entity;
}

void
cairn_set_epoch_barrier(cairn_cluster_t *cl, uint64_t epoch)
{
	uint64_t cur = __atomic_load_n(&cl->barrier, __ATOMIC_ACQUIRE);

	while (epoch > cur && !__atomic_compare_exchange_n(&cl->barrier, &cur, epoch, false,
							   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
}

int
cairn_blocklist_add(cairn_cluster_t *cl, const char *entity, unsigned seconds, uint64_t *epoch)
{
	char secs[16], *out = NULL, *err = NULL;
	const char *argv[] = { "osd", "blocklist", "add", entity, secs };
	uint64_t e = 0;
	int rc;

	if (!entity || !entity[0])
		return -EINVAL;
	snprintf(secs, sizeof(secs), "%u", seconds);
	rc = cairn_mon_command(cl, argv, 5, true, &out, &err);
	if (!rc)
		rc = json_epoch(out, &e);
	else if (err && err[0])
		CM_WARN("osd blocklist add %s: %s", entity, err);
	free(out);
	free(err);
	if (rc)
		return rc;
	cairn_set_epoch_barrier(cl, e);
	if (epoch)
		*epoch = e;
	return 0;
}

int
cairn_blocklist_rm(cairn_cluster_t *cl, const char *entity)
{
	char *out = NULL, *err = NULL;
	const char *argv[] = { "osd", "blocklist", "rm", entity };
	int rc;

	if (!entity || !entity[0])
		return -EINVAL;
	rc = cairn_mon_command(cl, argv, 4, false, &out, &err);
	free(out);
	free(err);
	return rc;
}

/* ---------- entry point for tests/fuzz/libcairn_mon_reply_fuzz.c ---------- */

int
cairn__mon_reply_decode(struct cm_msg *m)
{
	struct cairn_health h;
	struct cairn_df df;
	char *out, *err;
	int rc;

	switch (m->type) {
	case MON_MSG_DF_REPLY:
		rc = df_decode(m, &df);
		cairn_df_free(&df);
		return rc;
	case MON_MSG_HEALTH_REPLY:
		rc = health_decode(m, &h);
		cairn_health_free(&h);
		return rc;
	case MON_MSG_COMMAND_REPLY: {
		uint64_t e;

		rc = command_decode(m, &out, &err);
		if (!rc)
			(void)json_epoch(out, &e); /* what cairn_blocklist_add reads of it */
		free(out);
		free(err);
		return rc;
	}
	default:
		cm_msg_destroy(m);
		return -EINVAL;
	}
}
