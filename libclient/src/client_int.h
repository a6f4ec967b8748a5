/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcairn's internals: the op as op.c builds it and client.c sends it, and
 * client.c's handling of what the cluster sends, reachable without a
 * reactor or connections (for tests/fuzz/libcairn_reply_fuzz.c only).
 */
#ifndef CAIRN_CLIENT_INT_H
#define CAIRN_CLIENT_INT_H

#include "cairn/cairn.h"
#include "cm/msgr.h"

#include <cairn/osdmap.pb-c.h>
#include <protobuf-c/protobuf-c.h>
#include <pthread.h>
#include <sys/queue.h>

/* A completion (completion.c); client.c reads cl, tid and cancel under mu. */
struct cairn_completion {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	/* the op it completes, for cairn_completion_cancel (set on the client thread) */
	struct cairn_cluster *cl;
	uint64_t tid;
	bool cancel; /* asked before the client thread took the op */
	/* Release while in flight: the completer frees it after the callback. */
	bool busy;     /* an op holds it (cairn__comp_attach) and has not completed */
	bool in_cb;    /* complete() is running the callback */
	bool released; /* the caller let go: free when neither holds it */
	/* a completion of a queue (cairn_completion_create_cq): no callback */
	struct cairn_cq *cq;
	bool queued; /* in cq's ready list, not reaped yet */
	TAILQ_ENTRY(cairn_completion) qlink;
	int rc;
	struct cairn_version ver;
	cairn_callback_t cb;
	void *arg;
};

/* Complete c (once): wake its waiter, run its callback or queue it; free it if released. */
void cairn__complete_v(cairn_completion_t *c, int rc, const struct cairn_version *v);

/* One sub-op as the caller built it, with its outputs. */
struct csub {
	uint32_t type;
	uint64_t off, len;
	const void *wbuf;
	char *name;
	ProtobufCBinaryData value, end, start_after, prefix;
	ProtobufCBinaryData *keys, *vals;
	size_t nkeys, nvals;
	uint32_t cmp, max;
	bool excl;
	uint32_t num_op; /* NUM */
	int64_t num, num_min, num_max;
	bool bounded, omap;
	int64_t *out_num;
	struct cairn_version ver;
	/* outputs */
	void *rbuf;
	size_t rbuflen;
	size_t *out_len;
	int *rval;
	uint64_t *out_size;
	struct cairn_version *out_ver;
	struct cairn_kv **out_kvs;
	size_t *out_n;
	bool *out_more;
	struct cairn_kv *out_header;
	struct cairn_lock_info *out_lock;       /* LOCK_INFO */
	struct cairn_notify_result *out_notify; /* NOTIFY */
	unsigned notify_ms;                     /* NOTIFY: its timeout (for the client's timers) */
	struct cairn_watcher **out_watchers;    /* LIST_WATCHERS (count in out_n) */
};

/* cairn_operate op on oid, then release op. \return its result. */
int cairn__op_run(cairn_ioctx_t *io, const char *oid, cairn_op_t *op);

/* watch/notify sub-ops of the library itself (op.c), and decoding their results */
void cairn__op_watch(cairn_op_t *op, uint32_t type, uint64_t cookie, unsigned timeout_ms);
void cairn__op_notify_ack(cairn_op_t *op, uint64_t notify_id, uint64_t cookie, const void *reply,
			  size_t len);
int cairn__notify_result_decode(const uint8_t *p, size_t len, struct cairn_notify_result *res);
int cairn__watchers_decode(const uint8_t *p, size_t len, struct cairn_watcher **w, size_t *n);

/* watch.c, and what it needs of client.c */
struct cairn_watch;

/* An io thread of a cluster handle (client.c). */
struct cl_io;

struct cairn__wlist {
	TAILQ_HEAD(, cairn_watch) head; /* its io thread's */
};

/* The io thread of oid in io's namespace and key: the one its ops run on. \return 0, -errno. */
int cairn__io_of(const cairn_ioctx_t *io, const char *oid, struct cl_io **iot);
struct cm_reactor *cairn__io_reactor(struct cl_io *iot);
struct cairn__wlist *cairn__io_watches(struct cl_io *iot);
/* A new watch cookie, unique in the client. */
uint64_t cairn__cl_watch_cookie(struct cairn_cluster *cl);
struct cairn_cluster *cairn__ioctx_cluster(const cairn_ioctx_t *io);
cairn_ioctx_t *cairn__ioctx_dup(const cairn_ioctx_t *io);
/* io thread iot: pings due; ping every watch now (a new map, a session lost); an event (m taken) */
void cairn__watch_tick(struct cl_io *iot, uint64_t now);
void cairn__watch_kick(struct cl_io *iot);
void cairn__watch_event(struct cl_io *iot, struct cm_msg *m);
/* cluster_free, once no thread runs: free the watches never unwatched */
void cairn__watch_fini(struct cl_io *iot);

/* service.c: registrations kept alive by a thread of the handle */
struct svc;

struct cairn__svcs {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	TAILQ_HEAD(, svc) head;
	pthread_t th;
	bool started, stop;
};
struct cairn__svcs *cairn__cl_svcs(struct cairn_cluster *cl);
/* cairn_mon_command with its own limit (a renewal is no use past its TTL) */
int cairn__mon_command_within(cairn_cluster_t *cl, const char *const *argv, size_t argc, bool json,
			      char **out, char **err, unsigned timeout_ms);
void cairn__svc_init(struct cairn__svcs *ss);
/* cairn_shutdown, before the client thread stops: the thread ends, the registrations go */
void cairn__svc_stop(struct cairn__svcs *ss);

struct cairn_op {
	void *cache_link; /* (op.c's cache of released ops links through it) */
	struct csub *subs;
	size_t n, cap;
	int err;                 /* a build error, reported at submit */
	uint64_t wbytes, rbytes; /* data it carries and may return: at most OSD_MAX_IO each */
};

/*
 * On a cluster handle with neither thread nor sessions: take map (borrowed)
 * as the monitor client hands it over (on_map), target a request with tid 1
 * in it as creq_send does -- op on pool/oid, or, when reply is a
 * PG_LIST_REPLY, a listing of PG seed -- then handle reply (taken) as the
 * client thread does a message from an OSD. A request the reply does not
 * complete ends as at shutdown. The op's outputs are filled as for
 * cairn_operate (the caller frees what they allocate); a listing's names go
 * to *names (free with cairn_names_free). The map's epoch must be above
 * any reply's: a newer one would ask the monitor client, absent here.
 * \return the request's result, as cairn_operate or cairn_list would see it.
 */
int cairn__reply_decode(const Cairn__Map__OsdMap *map, int64_t pool, const char *oid, uint32_t seed,
			cairn_op_t *op, struct cm_msg *reply, char ***names, size_t *nnames,
			bool *more);

/*
 * A monitor's reply to an admin call (DF_REPLY, HEALTH_REPLY or
 * COMMAND_REPLY; m taken) decoded as cairn_df, cairn_health or
 * cairn_mon_command do, and what that made freed. \return their result.
 */
int cairn__mon_reply_decode(struct cm_msg *m);

/* Complete c with rc (its callback runs, waiters wake): for the striper's
 * calls, which complete their caller's completion themselves. */
void cairn__complete(cairn_completion_t *c, int rc);
/* c is held by an op from now until cairn__complete (a release meanwhile waits for it). */
void cairn__comp_attach(cairn_completion_t *c);

/* A LockState an OSD returned, into info (cairn_lock_info_free). \return 0, -EBADMSG, -ENOMEM. */
int cairn__lock_info_decode(const uint8_t *p, size_t len, struct cairn_lock_info *info);

#endif
