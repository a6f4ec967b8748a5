/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A shard's calls into the store and the worker pool, counted so that
 * shutdown waits for their callbacks; sending protobuf messages.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(osd);

/* ---------- the shard's store and worker calls (counted for shutdown) ---------- */

struct osd_call {
	struct osd *o;

	union {
		os_commit_cb commit;
		os_read_cb read;
		os_read_meta_cb meta;
	} cb;

	void *arg;
	struct cm_work w, *inner; /* osd__work */
};

static struct osd_call *
call_new(struct osd *o, void *arg)
{
	struct osd_call *c = malloc(sizeof(*c));

	if (c) {
		c->o = o;
		c->arg = arg;
		o->pending++;
	}
	return c;
}

/* Before the callback: it may start the next call, or free what c names. */
static void *
call_end(struct osd_call *c)
{
	void *arg = c->arg;

	c->o->pending--;
	free(c);
	return arg;
}

static void
call_commit(void *arg, int rc)
{
	struct osd_call *c = arg;
	os_commit_cb cb = c->cb.commit;

	cb(call_end(c), rc);
}

void
osd__queue(struct osd *o, struct os_txn *t, os_commit_cb cb, void *arg)
{
	struct osd_call *c;

	if (!cb) {
		os_queue(o->store, t, NULL, NULL); /* nothing of ours to wait for */
		return;
	}
	c = call_new(o, arg);
	if (!c) {
		os_txn_destroy(t);
		cb(arg, -ENOMEM);
		return;
	}
	c->cb.commit = cb;
	os_queue(o->store, t, call_commit, c);
}

static void
call_read(void *arg, int rc, struct cm_buf *data)
{
	struct osd_call *c = arg;
	os_read_cb cb = c->cb.read;

	cb(call_end(c), rc, data);
}

void
osd__read(struct osd *o, const char *cid, const char *oid, uint64_t off, uint64_t len,
	  os_read_cb cb, void *arg)
{
	struct osd_call *c = call_new(o, arg);

	if (!c) {
		cb(arg, -ENOMEM, NULL);
		return;
	}
	c->cb.read = cb;
	os_read(o->store, cid, oid, off, len, call_read, c);
}

static void
call_read_meta(void *arg, int rc, struct cm_buf *data, const struct os_read_meta *m)
{
	struct osd_call *c = arg;
	os_read_meta_cb cb = c->cb.meta;

	cb(call_end(c), rc, data, m);
}

void
osd__read_meta(struct osd *o, const char *cid, const char *oid, uint64_t off, uint64_t len,
	       const char *attr, os_read_meta_cb cb, void *arg)
{
	struct osd_call *c = call_new(o, arg);

	if (!c) {
		const struct os_read_meta none = { 0 };

		cb(arg, -ENOMEM, NULL, &none);
		return;
	}
	c->cb.meta = cb;
	os_read_meta(o->store, cid, oid, off, len, attr, call_read_meta, c);
}

static void
call_work(void *arg)
{
	struct osd_call *c = arg;

	c->inner->fn(c->inner->arg);
}

static void
call_work_done(void *arg)
{
	struct osd_call *c = arg;
	struct cm_work *w = c->inner;

	call_end(c);
	if (w->done)
		w->done(w->arg);
}

int
osd__work(struct osd *o, struct cm_work *w)
{
	struct osd_call *c = call_new(o, NULL);
	int rc;

	if (!c)
		return -ENOMEM;
	c->inner = w;
	c->w = (struct cm_work){ .fn = call_work, .done = call_work_done, .arg = c };
	rc = cm_worker_submit(o->wp, o->r, &c->w);
	if (rc)
		call_end(c);
	return rc;
}

int
osd__send_pb(struct cm_conn *c, uint16_t type, uint64_t tid, const ProtobufCMessage *pb,
	     const struct cm_sgl *data)
{
	int rc;

	if (!c)
		return -ENOTCONN;
	rc = cm_conn_send_pb(c, type, tid, pb, data);
	if (rc)
		CM_LOG_RL(CM_LOG_WARN, "send type=%u to %s: %s", type, cm_conn_peer(c),
			  cm_strerror(rc));
	return rc;
}

const Cairn__Map__Pool *
osd__pool(struct osd *o, int64_t id)
{
	return o->map ? mon_pool_find_id(o->map, id) : NULL;
}
