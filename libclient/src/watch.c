/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcairn: watches (docs/design/watch-notify.md). A watch is a linger
 * record on an io thread: registered with a WATCH sub-op, renewed by a
 * PING every timeout / 3 and at once on a new map (the ping also binds it to
 * the session the primary sees, so notifies reach it after a failover), made
 * again when the cluster dropped it (-ENOTCONN). Events come as
 * OSD_MSG_WATCH_EVENT on a session of that thread (the one the watch's
 * last ping bound) and are matched by cookie; a
 * notify seen again (resent to a new primary) that we acknowledged already
 * is acknowledged again by the library.
 *
 * Threads: a watch lives on the io thread its object's ops run on (so its
 * pings, its events and its list are that thread's alone); cairn_watch and
 * cairn_unwatch hand their list changes to it and wait, so once
 * cairn_unwatch's change ran no callback of the watch runs. The record of
 * recent notifies is under w->mu (cairn_notify_ack runs on any thread).
 */
#include "client_int.h"
#include "osd/proto.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/reactor.h"

#include <cairn/osd.pb-c.h>

CM_LOG_SUBSYS(client);

#define WATCH_SEEN 32 /* notifies remembered per watch, for repeats */

struct cairn_watch {
	TAILQ_ENTRY(cairn_watch) link;
	struct cairn_cluster *cl;
	struct cl_io *iot; /* the io thread of its object */
	cairn_ioctx_t *io; /* our own copy */
	char *oid;
	uint64_t cookie;
	unsigned timeout_ms;
	cairn_watch_cb_t cb;
	cairn_watch_err_cb_t err_cb;
	void *arg;
	bool registered; /* (atomic) its first WATCH succeeded: pings may go */
	/* its io thread */
	bool linked;
	bool gone;      /* unwatched: no callbacks, no pings; freed once idle */
	bool free_me;   /* free when the op in flight ends */
	bool busy;      /* a PING or WATCH of ours in flight */
	bool rewatch;   /* the cluster dropped it: WATCH again */
	bool lost;      /* tell err_cb once it is made again */
	bool ping_soon; /* a new map came while busy: ping again when it ends */
	uint64_t ping_ms;
	cairn_op_t *pop;
	/* recent notifies (mu) */
	pthread_mutex_t mu;

	struct {
		uint64_t id;
		bool acked;
		void *reply;
		size_t len;
	} seen[WATCH_SEEN];

	unsigned nseen;
};

/* ---------- running a function on the watch's io thread and waiting ---------- */

struct on_client {
	struct cm_reactor_msg post;
	void (*fn)(cairn_watch_t *w);
	cairn_watch_t *w;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
};

static void
on_client_done(struct on_client *x)
{
	pthread_mutex_lock(&x->mu);
	x->done = true;
	pthread_cond_signal(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

static void
on_client_run(void *arg)
{
	struct on_client *x = arg;

	x->fn(x->w);
	on_client_done(x);
}

static void
on_client_drop(void *arg)
{
	on_client_done(arg); /* (shut down: there is no list to change) */
}

static void
run_on_client(cairn_watch_t *w, void (*fn)(cairn_watch_t *w))
{
	struct on_client x = { .fn = fn, .w = w };

	pthread_mutex_init(&x.mu, NULL);
	pthread_cond_init(&x.cv, NULL);
	x.post = (struct cm_reactor_msg){ .fn = on_client_run, .drop = on_client_drop, .arg = &x };
	cm_reactor_post(cairn__io_reactor(w->iot), &x.post);
	pthread_mutex_lock(&x.mu);
	while (!x.done)
		pthread_cond_wait(&x.cv, &x.mu);
	pthread_mutex_unlock(&x.mu);
	pthread_mutex_destroy(&x.mu);
	pthread_cond_destroy(&x.cv);
}

/* ---------- the record ---------- */

static void
watch_free(cairn_watch_t *w)
{
	for (unsigned i = 0; i < WATCH_SEEN; i++)
		free(w->seen[i].reply);
	pthread_mutex_destroy(&w->mu);
	cairn_ioctx_destroy(w->io);
	free(w->oid);
	free(w);
}

static void
watch_link(cairn_watch_t *w)
{
	TAILQ_INSERT_TAIL(&cairn__io_watches(w->iot)->head, w, link);
	w->linked = true;
	w->ping_ms = cm_now_ms();
}

static void
watch_unlink(cairn_watch_t *w)
{
	if (w->linked)
		TAILQ_REMOVE(&cairn__io_watches(w->iot)->head, w, link);
	w->linked = false;
	w->gone = true;
}

static void
watch_release(cairn_watch_t *w)
{
	if (w->busy)
		w->free_me = true;
	else
		watch_free(w);
}

/* ---------- pings, and watching again ---------- */

static void ping_send(cairn_watch_t *w);

static void
ping_done(cairn_completion_t *c, void *arg)
{
	cairn_watch_t *w = arg;
	int rc = cairn_completion_rc(c);
	bool was_watch = w->rewatch;

	w->busy = false;
	cairn_op_release(w->pop);
	w->pop = NULL;
	if (w->gone) {
		if (w->free_me)
			watch_free(w);
		return;
	}
	if (was_watch) {
		if (!rc) {
			w->rewatch = false;
			if (w->lost) {
				w->lost = false;
				CM_LOG_RL(CM_LOG_NOTICE,
					  "watch %" PRIx64
					  " was dropped by the cluster: made again",
					  w->cookie);
				if (w->err_cb)
					w->err_cb(w, -ENOTCONN, w->arg);
			}
		} else if (rc != -ESHUTDOWN && w->err_cb) {
			w->err_cb(w, rc, w->arg);
		}
	} else if (rc == -ENOTCONN) {
		/* Dropped (we were silent past the timeout): watch again now. */
		w->rewatch = true;
		w->lost = true;
		w->ping_soon = true;
	} else if (rc == -ENOENT && w->err_cb) {
		w->err_cb(w, rc, w->arg); /* the object is gone */
	}
	if (w->ping_soon && rc != -ESHUTDOWN)
		ping_send(w);
}

/* A PING (or a WATCH, to make it again) of w, unless one is in flight. */
static void
ping_send(cairn_watch_t *w)
{
	struct cairn_aio_opts o = { .opts_size = sizeof(o) };
	cairn_completion_t *c;
	int rc;

	if (w->busy) {
		w->ping_soon = true;
		return;
	}
	w->ping_soon = false;
	w->ping_ms = cm_now_ms();
	w->pop = cairn_op_create();
	c = w->pop ? cairn_completion_create(ping_done, w) : NULL;
	if (!c) {
		cairn_op_release(w->pop);
		w->pop = NULL;
		return; /* (the next tick tries again) */
	}
	cairn__op_watch(w->pop, w->rewatch ? OSD_OP_WATCH : OSD_OP_WATCH_PING, w->cookie,
			w->timeout_ms);
	o.timeout_ms = w->timeout_ms;
	o.flags = CAIRN_AIO_NOWAIT; /* (never waits on an io thread anyway) */
	w->busy = true;
	rc = cairn_aio_operate_opts(w->io, w->oid, w->pop, c, &o);
	cairn_completion_release(c);
	if (rc) {
		w->busy = false;
		cairn_op_release(w->pop);
		w->pop = NULL;
	}
}

void
cairn__watch_tick(struct cl_io *iot, uint64_t now)
{
	cairn_watch_t *w;

	TAILQ_FOREACH(w, &cairn__io_watches(iot)->head, link)
		if (!w->busy && now - w->ping_ms >= w->timeout_ms / 3 &&
		    __atomic_load_n(&w->registered, __ATOMIC_ACQUIRE))
			ping_send(w);
}

void
cairn__watch_kick(struct cl_io *iot)
{
	cairn_watch_t *w;

	/* (not before the first WATCH succeeded: a ping could overtake it and be told -ENOTCONN) */
	TAILQ_FOREACH(w, &cairn__io_watches(iot)->head, link)
		if (__atomic_load_n(&w->registered, __ATOMIC_ACQUIRE))
			ping_send(w);
}

void
cairn__watch_fini(struct cl_io *iot)
{
	cairn_watch_t *w;

	/* Watches the caller never unwatched: ours to free now (no op is in flight). */
	while ((w = TAILQ_FIRST(&cairn__io_watches(iot)->head))) {
		watch_unlink(w);
		watch_free(w);
	}
}

/* ---------- events ---------- */

static void ack_send(cairn_watch_t *w, uint64_t id, const void *reply, size_t len);

void
cairn__watch_event(struct cl_io *iot, struct cm_msg *m)
{
	Cairn__Osd__WatchEvent *ev = (Cairn__Osd__WatchEvent *)cm_msg_unpack_front(
		m, &cairn__osd__watch_event__descriptor);
	struct cairn_notify_event ne;
	cairn_watch_t *w = NULL;
	bool repeat = false;

	if (!ev) {
		CM_LOG_RL(CM_LOG_WARN, "a watch event that does not decode: dropped");
		cm_msg_destroy(m);
		return;
	}
	TAILQ_FOREACH(w, &cairn__io_watches(iot)->head, link)
		if (w->cookie == ev->cookie)
			break;
	if (w) {
		void *again = NULL;
		size_t alen = 0;
		bool reack = false;

		pthread_mutex_lock(&w->mu);
		for (unsigned i = 0; i < WATCH_SEEN; i++)
			if (w->seen[i].id == ev->notify_id && (w->seen[i].id || i < w->nseen)) {
				repeat = true;
				/* answer it again, as we did (a copy: sent outside mu) */
				if (w->seen[i].acked &&
				    (!w->seen[i].len || (again = malloc(w->seen[i].len)))) {
					reack = true;
					alen = w->seen[i].len;
					if (alen)
						memcpy(again, w->seen[i].reply, alen);
				}
				break;
			}
		if (!repeat) {
			unsigned k = w->nseen++ % WATCH_SEEN;

			free(w->seen[k].reply);
			w->seen[k].id = ev->notify_id;
			w->seen[k].acked = false;
			w->seen[k].reply = NULL;
			w->seen[k].len = 0;
		}
		pthread_mutex_unlock(&w->mu);
		if (reack)
			ack_send(w, ev->notify_id, again, alen);
		free(again);
		if (!repeat) {
			ne = (struct cairn_notify_event){ .notify_id = ev->notify_id,
							  .notifier =
								  ev->notifier ? ev->notifier : "",
							  .payload = ev->payload.data,
							  .len = ev->payload.len };
			w->cb(w, &ne, w->arg);
		}
	}
	protobuf_c_message_free_unpacked(&ev->base, NULL);
	cm_msg_destroy(m);
}

/* ---------- the calls ---------- */

static void
ack_done(cairn_completion_t *c, void *arg)
{
	(void)c;
	cairn_op_release(arg);
}

/* A NOTIFY_ACK on its way (any thread; not under w->mu: it may wait for the throttle). */
static void
ack_send(cairn_watch_t *w, uint64_t id, const void *reply, size_t len)
{
	cairn_op_t *op = cairn_op_create();
	cairn_completion_t *c = op ? cairn_completion_create(ack_done, op) : NULL;

	if (!c) {
		cairn_op_release(op);
		return;
	}
	cairn__op_notify_ack(op, id, w->cookie, reply, len);
	if (cairn_aio_operate(w->io, w->oid, op, c))
		cairn_op_release(op);
	cairn_completion_release(c);
}

int
cairn_notify_ack(cairn_watch_t *w, uint64_t notify_id, const void *reply, size_t len)
{
	void *copy = NULL;

	if (!w || len > CAIRN_NOTIFY_MAX || (len && !reply))
		return -EINVAL;
	if (len && !(copy = malloc(len)))
		return -ENOMEM;
	if (len)
		memcpy(copy, reply, len);
	pthread_mutex_lock(&w->mu);
	for (unsigned i = 0; i < WATCH_SEEN; i++)
		if (w->seen[i].id == notify_id && !w->seen[i].acked) {
			w->seen[i].acked = true;
			w->seen[i].reply = copy;
			w->seen[i].len = len;
			copy = NULL;
			break;
		}
	pthread_mutex_unlock(&w->mu);
	ack_send(w, notify_id, reply, len);
	free(copy);
	return 0;
}

uint64_t
cairn_watch_cookie(const cairn_watch_t *w)
{
	return w->cookie;
}

static int
watch_op(cairn_watch_t *w, uint32_t type)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return -ENOMEM;
	cairn__op_watch(op, type, w->cookie, w->timeout_ms);
	if (type == OSD_OP_UNWATCH) {
		/* At most the watch's timeout: by then the cluster has dropped it anyway
		 * (with the cluster gone, an unwatch must not hold its caller's stop). */
		struct cairn_aio_opts o = { .opts_size = sizeof(o), .timeout_ms = w->timeout_ms };
		cairn_completion_t *c = cairn_completion_create(NULL, NULL);
		int rc;

		if (!c) {
			cairn_op_release(op);
			return -ENOMEM;
		}
		if (!(rc = cairn_aio_operate_opts(w->io, w->oid, op, c, &o)))
			rc = cairn_completion_wait(c);
		cairn_completion_release(c);
		cairn_op_release(op);
		return rc;
	}
	return cairn__op_run(w->io, w->oid, op);
}

int
cairn_watch(cairn_ioctx_t *io, const char *oid, unsigned timeout_ms, cairn_watch_cb_t cb,
	    cairn_watch_err_cb_t err_cb, void *arg, cairn_watch_t **wp)
{
	cairn_watch_t *w;
	int rc;

	*wp = NULL;
	if (!timeout_ms)
		timeout_ms = 30000;
	if (!cb || !oid || timeout_ms < OSD_WATCH_TIMEOUT_MIN_MS ||
	    timeout_ms > OSD_WATCH_TIMEOUT_MAX_MS)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	w->cl = cairn__ioctx_cluster(io);
	w->io = cairn__ioctx_dup(io);
	w->oid = strdup(oid);
	if (!w->io || !w->oid) {
		watch_free(w);
		return -ENOMEM;
	}
	rc = cairn__io_of(io, oid, &w->iot);
	if (rc) {
		watch_free(w);
		return rc;
	}
	w->cookie = cairn__cl_watch_cookie(w->cl);
	w->timeout_ms = timeout_ms;
	w->cb = cb;
	w->err_cb = err_cb;
	w->arg = arg;
	/* Listed first: an event may come before the WATCH's reply. */
	run_on_client(w, watch_link);
	rc = watch_op(w, OSD_OP_WATCH);
	if (rc) {
		run_on_client(w, watch_unlink);
		run_on_client(w, watch_release);
		return rc;
	}
	__atomic_store_n(&w->registered, true, __ATOMIC_RELEASE);
	*wp = w;
	return 0;
}

int
cairn_unwatch(cairn_watch_t *w)
{
	int rc;

	if (!w)
		return -EINVAL;
	run_on_client(w, watch_unlink); /* from here on, no callback of w runs */
	rc = watch_op(w, OSD_OP_UNWATCH);
	run_on_client(w, watch_release);
	return rc;
}

int
cairn_notify(cairn_ioctx_t *io, const char *oid, const void *payload, size_t len,
	     unsigned timeout_ms, struct cairn_notify_result *res)
{
	cairn_op_t *op = cairn_op_create();
	int rc, rval = 0;

	if (!op)
		return -ENOMEM;
	cairn_op_notify(op, payload, len, timeout_ms, res, &rval);
	rc = cairn__op_run(io, oid, op);
	return rc ? rc : rval;
}

int
cairn_list_watchers(cairn_ioctx_t *io, const char *oid, struct cairn_watcher **w, size_t *n)
{
	cairn_op_t *op = cairn_op_create();
	int rc, rval = 0;

	if (!op)
		return -ENOMEM;
	cairn_op_list_watchers(op, w, n, &rval);
	rc = cairn__op_run(io, oid, op);
	return rc ? rc : rval;
}
