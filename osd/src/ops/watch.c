/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch/notify on the primary (docs/design/watch-notify.md).
 *
 * An object's watchers are its internal attribute "W" (a WatchSet): WATCH
 * and UNWATCH are writes of it (logged, replicated, on every EC shard), so
 * they survive failovers. Which session each watcher uses, and when it last
 * pinged, is the primary's memory only (pg->watches), cleared at every new
 * interval: a watcher is live while it pinged within its timeout (or, not
 * bound yet, within its timeout of the interval's start). A NOTIFY leaves
 * pg->running once it knows the live watchers (it never holds up other ops
 * on the object), sends each a WATCH_EVENT on its session, and replies with
 * the acks (NOTIFY_ACK sub-ops, routed like any op on the object) once all
 * came, or at its timeout (osd__watch_tick) with the rest as timeouts.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

#define WATCH_ATTR "W" /* not '_': no user xattr call sees it */

/* One watcher of a pending notify. */
struct osd_notify_w {
	char *entity;
	uint64_t cookie;
	bool acked;
	const struct cm_conn *sent_on; /* the session the event went to (not a reference) */
	ProtobufCBinaryData reply;
};

struct osd_notify {
	TAILQ_ENTRY(osd_notify) link;
	struct osd_op *op;
	uint64_t id;
	uint64_t deadline_ms;
	size_t reply_bytes; /* of the acks so far: at most OSD_NOTIFY_MAX in all */
	Cairn__Osd__NotifyReq *req;
	struct osd_notify_w *w;
	size_t nw, nleft;
};

bool
osd__subop_watch(uint32_t t)
{
	return t >= OSD_OP_WATCH && t <= OSD_OP_LIST_WATCHERS;
}

/* ---------- bindings: watcher -> session (memory) ---------- */

static struct osd_watch *
bind_find(struct osd_pg *pg, const char *oid, const char *entity, uint64_t cookie)
{
	for (struct osd_watch *b = pg->watches; b; b = b->next)
		if (b->cookie == cookie && !strcmp(b->entity, entity) && !strcmp(b->oid, oid))
			return b;
	return NULL;
}

static void
bind_free(struct osd_watch *b)
{
	if (b->c)
		cm_conn_put(b->c);
	free(b->oid);
	free(b);
}

static void
unbind(struct osd_pg *pg, const char *oid, const char *entity, uint64_t cookie)
{
	for (struct osd_watch **p = &pg->watches; *p; p = &(*p)->next)
		if ((*p)->cookie == cookie && !strcmp((*p)->entity, entity) &&
		    !strcmp((*p)->oid, oid)) {
			struct osd_watch *b = *p;

			*p = b->next;
			bind_free(b);
			return;
		}
}

/* Bind (oid, entity, cookie) to session c, seen now. \return it, NULL (no memory). */
static struct osd_watch *
watch_bind(struct osd_pg *pg, const char *oid, const char *entity, uint64_t cookie,
	   struct cm_conn *c, uint64_t now, uint32_t timeout_ms)
{
	struct osd_watch *b = bind_find(pg, oid, entity, cookie);

	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || !(b->oid = strdup(oid))) {
			free(b);
			return NULL;
		}
		snprintf(b->entity, sizeof(b->entity), "%s", entity);
		b->cookie = cookie;
		b->next = pg->watches;
		pg->watches = b;
	}
	if (b->c != c) {
		if (b->c)
			cm_conn_put(b->c);
		b->c = cm_conn_get(c);
	}
	b->seen_ms = now;
	b->timeout_ms = timeout_ms;
	return b;
}

static bool
watcher_live(struct osd_pg *pg, const char *oid, const Cairn__Osd__Watcher *w, uint64_t now)
{
	const struct osd_watch *b = bind_find(pg, oid, w->entity, w->cookie);
	uint64_t seen = b ? b->seen_ms : pg->watch_since_ms;

	return now < seen || now - seen <= w->timeout_ms;
}

/* ---------- notifies ---------- */

static void
notify_free(struct osd_notify *n)
{
	for (size_t i = 0; i < n->nw; i++) {
		free(n->w[i].entity);
		free(n->w[i].reply.data);
	}
	free(n->w);
	if (n->req)
		cairn__osd__notify_req__free_unpacked(n->req, NULL);
	free(n);
}

/* Send n's event to watcher k on session c (again if it moved). */
static void
notify_send(struct osd_notify *n, size_t k, struct cm_conn *c)
{
	Cairn__Osd__WatchEvent ev = CAIRN__OSD__WATCH_EVENT__INIT;

	if (n->w[k].acked || n->w[k].sent_on == c || !cm_conn_is_up(c))
		return;
	ev.cookie = n->w[k].cookie;
	ev.notify_id = n->id;
	ev.notifier = n->op->client;
	ev.payload = n->req->payload;
	if (osd__send_pb(c, OSD_MSG_WATCH_EVENT, 0, &ev.base, NULL) == 0)
		n->w[k].sent_on = c;
}

/* Reply to n's notifier: the acks and the rest as timeouts. Frees n. */
static void
notify_finish(struct osd_pg *pg, struct osd_notify *n)
{
	Cairn__Osd__NotifyResult res = CAIRN__OSD__NOTIFY_RESULT__INIT;
	Cairn__Osd__NotifyReply *rs = calloc(n->nw + 1, sizeof(*rs));
	Cairn__Osd__NotifyReply **acks = calloc(n->nw + 1, sizeof(*acks));
	Cairn__Osd__NotifyReply **tos = calloc(n->nw + 1, sizeof(*tos));
	struct osd_op *op = n->op;
	Cairn__Osd__SubOpResult *r = &op->res[0];

	TAILQ_REMOVE(&pg->notifies, n, link);
	if (!rs || !acks || !tos) {
		osd__op_fail(op, 0, -ENOMEM);
	} else {
		for (size_t i = 0; i < n->nw; i++) {
			cairn__osd__notify_reply__init(&rs[i]);
			rs[i].entity = n->w[i].entity;
			rs[i].cookie = n->w[i].cookie;
			if (n->w[i].acked) {
				rs[i].reply = n->w[i].reply;
				acks[res.n_acks++] = &rs[i];
			} else {
				tos[res.n_timeouts++] = &rs[i];
			}
		}
		res.acks = acks;
		res.timeouts = tos;
		r->value.len = cairn__osd__notify_result__get_packed_size(&res);
		r->value.data = malloc(r->value.len ? r->value.len : 1);
		if (!r->value.data) {
			r->value.len = 0;
			osd__op_fail(op, 0, -ENOMEM);
		} else {
			cairn__osd__notify_result__pack(&res, r->value.data);
		}
		if (res.n_timeouts)
			CM_LOG_RL(CM_LOG_INFO,
				  "%s: notify %" PRIx64 " from %s: %zu of %zu watchers timed out",
				  pg->cid, n->id, op->client, res.n_timeouts, n->nw);
	}
	free(rs);
	free(acks);
	free(tos);
	n->op = NULL;
	notify_free(n);
	osd__op_reply(op, NULL);
}

/* The same notify for every resend of it: the notifier and its request's tid. */
static uint64_t
notify_id(const struct osd_op *op)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *p = op->client; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	return h ^ (op->m->tid * 0x9e3779b97f4a7c15ull);
}

/* NOTIFY with the object's stored watchers set: start it (op leaves pg->running). */
static int
notify_start(struct osd_op *op, const Cairn__Osd__WatchSet *set, uint64_t now)
{
	struct osd_pg *pg = op->pg;
	const Cairn__Osd__SubOp *so = op->req->ops[0];
	struct osd_notify *n = calloc(1, sizeof(*n)), *x;

	if (!n)
		return -ENOMEM;
	n->req = cairn__osd__notify_req__unpack(NULL, so->value.len, so->value.data);
	n->w = calloc(set->n_watchers + 1, sizeof(*n->w));
	if (!n->req || !n->w) {
		int rc = n->req ? -ENOMEM : -EINVAL;

		notify_free(n);
		return rc;
	}
	for (size_t i = 0; i < set->n_watchers; i++) {
		const Cairn__Osd__Watcher *w = set->watchers[i];

		if (!watcher_live(pg, op->req->oid, w, now))
			continue; /* dead: it gets nothing, and is dropped at the next change */
		if (!(n->w[n->nw].entity = strdup(w->entity))) {
			notify_free(n);
			return -ENOMEM;
		}
		n->w[n->nw++].cookie = w->cookie;
	}
	n->nleft = n->nw;
	n->op = op;
	n->id = notify_id(op);
	n->deadline_ms = now + n->req->timeout_ms;
	/* A resend of a notify still pending here (the client's timer): this one replaces it. */
	TAILQ_FOREACH(x, &pg->notifies, link)
		if (x->id == n->id) {
			TAILQ_REMOVE(&pg->notifies, x, link);
			osd__op_free(x->op);
			x->op = NULL;
			notify_free(x);
			break;
		}
	osd__op_detach(op);
	TAILQ_INSERT_TAIL(&pg->notifies, n, link);
	for (size_t k = 0; k < n->nw; k++) {
		struct osd_watch *b = bind_find(pg, op->req->oid, n->w[k].entity, n->w[k].cookie);

		if (b && b->c)
			notify_send(n, k, b->c);
	}
	if (!n->nw)
		notify_finish(pg, n);
	return 0;
}

/* NOTIFY_ACK: the ack recorded (the notify replies when it was the last). */
static int
notify_ack(struct osd_op *op)
{
	const Cairn__Osd__SubOp *so = op->req->ops[0];
	Cairn__Osd__NotifyAckReq *a =
		cairn__osd__notify_ack_req__unpack(NULL, so->value.len, so->value.data);
	struct osd_notify *n;
	int rc = -ENOENT;

	if (!a)
		return -EINVAL;
	TAILQ_FOREACH(n, &op->pg->notifies, link)
		if (n->id == a->notify_id && !strcmp(n->op->req->oid, op->req->oid))
			break;
	for (size_t k = 0; n && k < n->nw; k++) {
		struct osd_notify_w *w = &n->w[k];

		if (w->cookie != a->cookie || strcmp(w->entity, op->client))
			continue;
		rc = 0;
		if (w->acked)
			break;
		if (a->reply.len > OSD_NOTIFY_MAX - n->reply_bytes) {
			/* The result must fit one reply: the ack counts, its reply is dropped. */
			CM_LOG_RL(CM_LOG_WARN,
				  "%s: notify %" PRIx64
				  ": replies over %u bytes in all: %s's dropped",
				  op->pg->cid, n->id, OSD_NOTIFY_MAX, op->client);
		} else if (a->reply.len) {
			w->reply.data = malloc(a->reply.len);
			if (!w->reply.data) {
				rc = -ENOMEM;
				break;
			}
			memcpy(w->reply.data, a->reply.data, a->reply.len);
			w->reply.len = a->reply.len;
			n->reply_bytes += a->reply.len;
			/* (held with the notify's op: counted against osd_client_message_cap) */
			n->op->charged += a->reply.len;
			op->osd->client_bytes += a->reply.len;
		}
		w->acked = true;
		if (--n->nleft == 0)
			notify_finish(op->pg, n);
		break;
	}
	cairn__osd__notify_ack_req__free_unpacked(a, NULL);
	return rc;
}

/* UNWATCH: the notifies pending on oid stop waiting for (entity, cookie). */
static void
notify_forget(struct osd_pg *pg, const char *oid, const char *entity, uint64_t cookie)
{
	struct osd_notify *n;

again:
	TAILQ_FOREACH(n, &pg->notifies, link) {
		if (strcmp(n->op->req->oid, oid))
			continue;
		for (size_t k = 0; k < n->nw; k++) {
			struct osd_notify_w *w = &n->w[k];

			if (w->acked || w->cookie != cookie || strcmp(w->entity, entity))
				continue;
			free(w->entity);
			free(w->reply.data);
			*w = n->w[--n->nw]; /* (order does not matter) */
			if (--n->nleft == 0) {
				notify_finish(pg, n);
				goto again; /* (n is gone) */
			}
			break;
		}
	}
}

/* PING from a watcher (bound to session b->c now): the notifies it missed. */
static void
notify_catch_up(struct osd_pg *pg, const char *oid, struct osd_watch *b)
{
	struct osd_notify *n;

	TAILQ_FOREACH(n, &pg->notifies, link) {
		if (strcmp(n->op->req->oid, oid))
			continue;
		for (size_t k = 0; k < n->nw; k++)
			if (n->w[k].cookie == b->cookie && !strcmp(n->w[k].entity, b->entity))
				notify_send(n, k, b->c);
	}
}

void
osd__watch_tick(struct osd_pg *pg, uint64_t now)
{
	struct osd_notify *n;

	/* Bindings of watchers silent past their timeout (dead clients' sessions) go. */
	for (struct osd_watch **p = &pg->watches; *p;) {
		struct osd_watch *b = *p;

		if (now > b->seen_ms && now - b->seen_ms > b->timeout_ms) {
			*p = b->next;
			bind_free(b);
		} else {
			p = &b->next;
		}
	}

	/* (from the start after each: a reply may start ops that finish other notifies) */
again:
	TAILQ_FOREACH(n, &pg->notifies, link)
		if (now >= n->deadline_ms) {
			notify_finish(pg, n);
			goto again;
		}
}

void
osd__watch_reset(struct osd_pg *pg, bool tell)
{
	struct osd_notify *n;
	struct osd_watch *b;

	/* Notifiers send again (at once: -EAGAIN at our epoch) to whoever is primary next. */
	while ((n = TAILQ_FIRST(&pg->notifies))) {
		TAILQ_REMOVE(&pg->notifies, n, link);
		if (tell)
			osd__op_push_back(n->op);
		osd__op_free(n->op);
		n->op = NULL;
		notify_free(n);
	}
	while ((b = pg->watches)) {
		pg->watches = b->next;
		bind_free(b);
	}
	pg->watch_since_ms = cm_now_ms();
}

/* ---------- the sub-ops ---------- */

static int
watch_find(const Cairn__Osd__WatchSet *set, const char *entity, uint64_t cookie)
{
	for (size_t i = 0; i < set->n_watchers; i++)
		if (set->watchers[i]->cookie == cookie && !strcmp(set->watchers[i]->entity, entity))
			return (int)i;
	return -1;
}

static void
watch_drop(Cairn__Osd__WatchSet *set, size_t i)
{
	protobuf_c_message_free_unpacked(&set->watchers[i]->base, NULL);
	memmove(&set->watchers[i], &set->watchers[i + 1],
		(set->n_watchers - i - 1) * sizeof(*set->watchers));
	set->n_watchers--;
}

/* Drop the watchers that are not live (and their bindings). */
static void
watch_prune(struct osd_pg *pg, const char *oid, Cairn__Osd__WatchSet *set, uint64_t now)
{
	for (size_t i = 0; i < set->n_watchers;) {
		const Cairn__Osd__Watcher *w = set->watchers[i];

		if (watcher_live(pg, oid, w, now)) {
			i++;
			continue;
		}
		CM_LOG_RL(CM_LOG_INFO, "%s: watcher %s/%" PRIx64 " silent for over %u ms: dropped",
			  pg->cid, w->entity, w->cookie, w->timeout_ms);
		unbind(pg, oid, w->entity, w->cookie);
		watch_drop(set, i);
	}
}

/* set packed into d (empty set: len 0). */
static int
set_pack(const Cairn__Osd__WatchSet *set, ProtobufCBinaryData *d)
{
	size_t n = set->n_watchers ? cairn__osd__watch_set__get_packed_size(set) : 0;

	d->data = malloc(n ? n : 1);
	if (!d->data)
		return -ENOMEM;
	d->len = n;
	if (n)
		cairn__osd__watch_set__pack(set, d->data);
	return 0;
}

/* WATCH: (client, cookie) added, or its timeout changed. */
static int
watch_add(Cairn__Osd__WatchSet *set, const char *entity, uint64_t cookie, uint32_t timeout_ms)
{
	int at = watch_find(set, entity, cookie);
	Cairn__Osd__Watcher *w, **g;

	if (at >= 0) {
		set->watchers[at]->timeout_ms = timeout_ms;
		return 0;
	}
	if (set->n_watchers >= OSD_WATCHERS_MAX)
		return -E2BIG;
	w = malloc(sizeof(*w));
	g = realloc(set->watchers, (set->n_watchers + 1) * sizeof(*g));
	if (g)
		set->watchers = g;
	if (!w || !g) {
		free(w);
		return -ENOMEM;
	}
	cairn__osd__watcher__init(w);
	w->cookie = cookie;
	w->timeout_ms = timeout_ms;
	w->entity = strdup(entity);
	set->watchers[set->n_watchers++] = w;
	return w->entity ? 0 : -ENOMEM;
}

/* On the worker (osd__op_meta_fn): the stored watchers, raw, into the result. */
int
osd__watch_meta(struct osd_op *op)
{
	struct os_kv v = { 0 };
	Cairn__Osd__SubOpResult *r = &op->res[0];
	int rc;

	if (op->req->ops[0]->op == OSD_OP_NOTIFY_ACK)
		return 0;
	if (!op->exists)
		return -ENOENT;
	rc = os_getattr(op->osd->store, op->pg->cid, op->req->oid, WATCH_ATTR, &v);
	if (rc == -ENODATA || rc == -ENOENT)
		return 0;
	if (rc)
		return rc;
	r->value.data = malloc(v.vlen ? v.vlen : 1);
	if (!r->value.data) {
		osd_kv_clear(&v);
		return -ENOMEM;
	}
	memcpy(r->value.data, v.val, v.vlen);
	r->value.len = v.vlen;
	osd_kv_clear(&v);
	return 0;
}

/*
 * On the reactor, after the read phase of a watch sub-op (alone in its op):
 * WATCH and UNWATCH leave the new set packed in the result for the write
 * phase (osd__op_tx_watch); the others are answered here or (NOTIFY) wait.
 * \return true if op was taken (a notify pending, or replied).
 */
bool
osd__watch_run(struct osd_op *op)
{
	struct osd_pg *pg = op->pg;
	const Cairn__Osd__SubOp *so = op->req->ops[0];
	Cairn__Osd__SubOpResult *r = &op->res[0];
	Cairn__Osd__WatchSet *set = NULL;
	Cairn__Osd__WatchReq *rq = NULL;
	uint64_t now = cm_now_ms();
	struct osd_watch *b;
	int rc = 0, at;

	if (!pg->watch_since_ms)
		pg->watch_since_ms = now; /* (a PG loaded at start: its watchers get a timeout) */
	if (so->op == OSD_OP_NOTIFY_ACK) {
		rc = notify_ack(op);
		if (rc)
			osd__op_fail(op, 0, rc);
		return false;
	}
	set = r->value.len ? cairn__osd__watch_set__unpack(NULL, r->value.len, r->value.data)
			   : malloc(sizeof(*set));
	if (set && !r->value.len)
		cairn__osd__watch_set__init(set);
	free(r->value.data);
	r->value.data = NULL;
	r->value.len = 0;
	if (!set) {
		CM_LOG_RL(CM_LOG_ERR, "%s: an object's watchers are not a valid WatchSet", pg->cid);
		rc = -EIO;
		goto out;
	}
	if (so->op == OSD_OP_WATCH || so->op == OSD_OP_UNWATCH || so->op == OSD_OP_WATCH_PING) {
		rq = cairn__osd__watch_req__unpack(NULL, so->value.len, so->value.data);
		if (!rq) {
			rc = -EINVAL;
			goto out;
		}
	}
	switch (so->op) {
	case OSD_OP_WATCH:
		watch_prune(pg, op->req->oid, set, now);
		rc = watch_add(set, op->client, rq->cookie, rq->timeout_ms);
		if (!rc && !watch_bind(pg, op->req->oid, op->client, rq->cookie, op->c, now,
				       rq->timeout_ms))
			rc = -ENOMEM;
		if (!rc)
			rc = set_pack(set, &r->value);
		break;
	case OSD_OP_UNWATCH:
		watch_prune(pg, op->req->oid, set, now);
		at = watch_find(set, op->client, rq->cookie);
		if (at >= 0)
			watch_drop(set, (size_t)at);
		unbind(pg, op->req->oid, op->client, rq->cookie);
		notify_forget(pg, op->req->oid, op->client, rq->cookie);
		rc = set_pack(set, &r->value);
		break;
	case OSD_OP_WATCH_PING:
		at = watch_find(set, op->client, rq->cookie);
		if (at < 0) {
			rc = -ENOTCONN;
			break;
		}
		/* Past its timeout already: it was dead (notifies skipped it). */
		if (!watcher_live(pg, op->req->oid, set->watchers[at], now)) {
			rc = -ENOTCONN;
			break;
		}
		b = watch_bind(pg, op->req->oid, op->client, rq->cookie, op->c, now,
			       set->watchers[at]->timeout_ms);
		if (!b)
			rc = -ENOMEM;
		else
			notify_catch_up(pg, op->req->oid, b);
		break;
	case OSD_OP_LIST_WATCHERS:
		watch_prune(pg, op->req->oid, set, now); /* (only what we answer) */
		rc = set_pack(set, &r->value);
		break;
	case OSD_OP_NOTIFY:
		rc = notify_start(op, set, now);
		if (!rc) {
			cairn__osd__watch_set__free_unpacked(set, NULL);
			return true;
		}
		break;
	default:
		rc = -EOPNOTSUPP;
		break;
	}
out:
	if (rc)
		osd__op_fail(op, 0, rc);
	if (set)
		cairn__osd__watch_set__free_unpacked(set, NULL);
	if (rq)
		cairn__osd__watch_req__free_unpacked(rq, NULL);
	return false;
}

/* WATCH/UNWATCH: the new set (read phase) stored, or the attribute removed (none left). */
int
osd__op_tx_watch(struct osd_op *op, size_t i)
{
	bool none = !op->res[i].value.len;
	Cairn__Osd__TxOp *x = osd__op_tx_add(op, none ? OSD_TX_RMATTR : OSD_TX_SETATTR);

	if (!x)
		return -ENOMEM;
	x->name = (char *)WATCH_ATTR;
	if (!none)
		x->value = op->res[i].value;
	return 0;
}
