/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Recovery sources: jobs that push objects (or, EC, rebuilt shards) to a
 * target, a bounded number at a time.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(recovery);

static void job_kick(struct osd *o);
static void job_step(struct osd_rjob *j);

/* ---------- the source: pushing objects ---------- */

struct osd_rjob {
	TAILQ_ENTRY(osd_rjob) link;  /* o->rjobs */
	TAILQ_ENTRY(osd_rjob) rlink; /* o->rjobs_ready */
	struct osd *osd;
	int64_t pool;
	uint32_t seed;
	char cid[48];
	uint64_t epoch, gen;
	int32_t target, primary;
	bool all, list_done;
	bool bg;      /* the primary's whole list is in (not only objects clients wait for) */
	bool ready;   /* on rjobs_ready */
	bool busy;    /* a worker, a read or the store will call back */
	bool slot;    /* holds one of osd_recovery_max_active */
	bool waiting; /* for the target's PushReply */
	bool held;    /* the next object has client ops executing: wait for them */
	bool dead;    /* free when the callback returns */
	bool idle;    /* everything asked for is pushed: kept to answer late requests */
	uint64_t idle_ms;
	char **oids; /* log-based: the objects; backfill: the current page */
	size_t noids, next, cap;
	struct osd_oset done; /* log-based: pushed in this plan (never twice) */
	struct osd_oset prio; /* clients wait for these: not held by the share */
	char *cursor;         /* backfill: the last name listed */
	/* the current object (set on the reactor; workers only read it) */
	char *oid;
	bool first, deleted, omap_more;
	uint64_t size, data_off;
	struct os_kv *attrs, hdr, *omap;
	size_t nattrs, nomap;

	struct {
		uint8_t *key;
		size_t len;
	} omap_after;
	struct cm_buf *data;
	uint64_t sent_ms;
	int rc;
	uint64_t objects, bytes;
	struct cm_work w;
	/* EC: the primary's own shard cannot list the PG: a complete shard does */
	uint64_t list_tid;
	int32_t list_peer;
	struct osd_ver ec_ver; /* EC: the version the current object's chunks are read at */
};

static bool
job_pushing(const struct osd_rjob *j, const struct osd_pg *pg, const char *oid)
{
	return j->oid && !j->dead && j->pool == pg->pool && j->seed == pg->seed &&
	       strcmp(j->oid, oid) == 0;
}

bool
osd__rec_op_blocked(struct osd_pg *pg, const char *oid, bool writes)
{
	uint32_t *v = osd_oset_get(&pg->rmiss, oid);
	struct osd_rjob *j;

	if (v && !writes) { /* a read needs our copy only */
		for (int t = 0; t < pg->nacting; t++)
			if (pg->acting[t] == pg->osd->id && !(*v & 1u << t))
				v = NULL;
	}
	if (v) {
		if (!(*v & OSD_REC_PRIO)) {
			/* A local source may answer at once and run the op: oid (the op's)
			 * may be gone when osd__send_req returns. */
			char name[OSD_NAME_MAX + 1];
			char *one[1] = { name };
			uint32_t mask = *v;
			uint64_t gen = pg->rec_gen;

			snprintf(name, sizeof(name), "%s", oid);
			*v |= OSD_REC_PRIO;
			for (int t = 0; t < pg->nacting && gen == pg->rec_gen; t++)
				if (mask & 1u << t)
					(void)osd__send_req(pg, t, one, 1, false, true);
		}
		return true;
	}
	TAILQ_FOREACH(j, &pg->osd->rjobs, link)
		if (writes && job_pushing(j, pg, oid))
			return true;
	return false;
}

static void
job_ready(struct osd_rjob *j)
{
	if (j->ready || j->dead)
		return;
	j->ready = true;
	TAILQ_INSERT_TAIL(&j->osd->rjobs_ready, j, rlink);
}

static void
job_release_slot(struct osd_rjob *j)
{
	if (j->slot) {
		j->slot = false;
		j->osd->rec_active--;
	}
}

void
osd__rec_object_idle(struct osd_pg *pg, const char *oid)
{
	struct osd *o = pg->osd;
	struct osd_rjob *j;
	bool any = false;

	TAILQ_FOREACH(j, &o->rjobs, link)
		if (j->held && j->pool == pg->pool && j->seed == pg->seed && j->next < j->noids &&
		    strcmp(j->oids[j->next], oid) == 0) {
			j->held = false;
			job_ready(j);
			any = true;
		}
	if (any)
		job_kick(o);
}

static void
job_clear_object(struct osd_rjob *j)
{
	os_kvs_free(j->attrs, j->nattrs);
	os_kvs_free(j->omap, j->nomap);
	osd_kv_clear(&j->hdr);
	j->attrs = j->omap = NULL;
	j->nattrs = j->nomap = 0;
	if (j->data)
		cm_buf_put(j->data);
	j->data = NULL;
}

static void
job_free_list(struct osd_rjob *j)
{
	for (size_t i = 0; i < j->noids; i++)
		free(j->oids[i]);
	free(j->oids);
	j->oids = NULL;
	j->noids = j->next = j->cap = 0;
}

static void
job_free(struct osd_rjob *j)
{
	job_clear_object(j);
	job_free_list(j);
	osd_oset_clear(&j->done);
	osd_oset_clear(&j->prio);
	free(j->oid);
	free(j->cursor);
	free(j->omap_after.key);
	free(j);
}

/* Quietly drop a job nobody waits for any more (freed now or when its callback returns). */
static void
job_drop(struct osd_rjob *j)
{
	struct osd *o = j->osd;

	job_release_slot(j);
	if (j->ready)
		TAILQ_REMOVE(&o->rjobs_ready, j, rlink);
	TAILQ_REMOVE(&o->rjobs, j, link);
	j->ready = false;
	j->dead = true;
	if (!j->busy)
		job_free(j);
}

/* The source's answer to RECOVER, to the primary (maybe us). */
static void
report_done(struct osd *o, int32_t primary, const Cairn__Osd__PgAck *a)
{
	if (primary == o->id)
		osd__on_recover_done(o, a);
	else
		osd__send_pb(osd__peer_conn(o, primary, a->seed), OSD_MSG_RECOVER_DONE, 0, &a->base,
			     NULL);
}

static void
job_ack_init(const struct osd_rjob *j, Cairn__Osd__PgAck *a)
{
	cairn__osd__pg_ack__init(a);
	a->pool = j->pool;
	a->seed = j->seed;
	a->epoch = j->epoch;
	a->gen = j->gen;
	a->target = j->target;
}

/* Tell the primary oid is on the target now (clients waiting for it go on). */
static void
job_progress(struct osd_rjob *j, const char *oid)
{
	Cairn__Osd__PgAck a;
	char *one[1] = { (char *)oid };

	job_ack_init(j, &a);
	a.progress = true;
	a.oids = one;
	a.n_oids = 1;
	report_done(j->osd, j->primary, &a);
}

/*
 * Report to the primary. A log-based job that succeeded stays (idle) for a
 * while: a request for an object it pushed already is answered at once
 * instead of pushing it again over a client's newer write.
 */
static void
job_finish(struct osd_rjob *j, int rc)
{
	struct osd *o = j->osd;
	Cairn__Osd__PgAck a;
	int32_t primary = j->primary;
	bool report = j->bg || j->all || rc;

	if (j->dead)
		return;
	job_ack_init(j, &a);
	a.rc = rc;
	a.objects = j->objects;
	a.bytes = j->bytes;
	if (rc >= 0 || rc == -ENOTCONN || rc == -ECONNRESET || rc == -ESTALE)
		CM_DEBUG("%s: pushed %" PRIu64 " objects to osd.%d: %s", j->cid, j->objects,
			 j->target, cm_strerror(rc));
	else
		CM_WARN("%s: pushing to osd.%d failed: %s", j->cid, j->target, cm_strerror(rc));
	if (!rc && !j->all) {
		job_release_slot(j);
		j->idle = true;
		j->idle_ms = cm_now_ms();
	} else {
		job_drop(j);
	}
	if (report)
		report_done(o, primary, &a);
	job_kick(o);
}

/* On a worker: read the current object's metadata (and an omap page) for the next push. */
static void
job_step_fn(void *arg)
{
	struct osd_rjob *j = arg;
	struct os_store *s = j->osd->store;
	struct os_stat st;
	int rc;

	if (j->first) {
		rc = os_stat(s, j->cid, j->oid, &st);
		j->deleted = rc == -ENOENT;
		if (rc && !j->deleted) {
			j->rc = rc;
			return;
		}
		j->size = j->deleted ? 0 : st.size;
		j->omap_more = !j->deleted;
		if (!j->deleted) {
			rc = os_getattrs(s, j->cid, j->oid, &j->attrs, &j->nattrs);
			if (!rc)
				rc = os_omap_get_header(s, j->cid, j->oid, &j->hdr);
			if (rc == -ENOENT) { /* removed since the stat: push the deletion */
				j->deleted = true;
				j->size = 0;
				j->omap_more = false;
				rc = 0;
			}
			if (rc) {
				j->rc = rc;
				return;
			}
		}
	}
	if (j->omap_more) {
		bool more = false;

		rc = os_omap_iterate(s, j->cid, j->oid, j->omap_after.key, j->omap_after.len, NULL,
				     0, OSD_PUSH_OMAP_KEYS, &j->omap, &j->nomap, &more);
		if (rc) {
			j->rc = rc == -ENOENT ? 0 : rc;
			j->omap_more = false;
			return;
		}
		j->omap_more = more;
		if (j->nomap) {
			uint8_t *k = malloc(j->omap[j->nomap - 1].klen + 1);

			if (!k) {
				j->rc = -ENOMEM;
				return;
			}
			memcpy(k, j->omap[j->nomap - 1].key, j->omap[j->nomap - 1].klen);
			free(j->omap_after.key);
			j->omap_after.key = k;
			j->omap_after.len = j->omap[j->nomap - 1].klen;
		}
	}
}

/* On a worker: the next page of a backfill's listing. */
static void
job_list_fn(void *arg)
{
	struct osd_rjob *j = arg;
	bool more = false;
	char **names = NULL;
	size_t n = 0;
	int rc;

	job_free_list(j);
	rc = os_list(j->osd->store, j->cid, j->cursor, OSD_LIST_PAGE, &names, &n, &more);
	if (rc) {
		j->rc = rc;
		return;
	}
	j->oids = names;
	j->noids = j->cap = n;
	j->list_done = !more;
	if (n) {
		free(j->cursor);
		j->cursor = strdup(names[n - 1]);
		if (!j->cursor)
			j->rc = -ENOMEM;
	}
}

static void
job_send(struct osd_rjob *j)
{
	struct osd *o = j->osd;
	Cairn__Osd__Push p = CAIRN__OSD__PUSH__INIT;
	ProtobufCBinaryData *an = NULL, *av = NULL, *ok = NULL, *ov = NULL;
	struct cm_sgl sgl;
	uint64_t dlen = j->data ? j->data->len : 0;
	bool local = false;
	int rc = -ENOMEM;

	cm_sgl_init(&sgl);
	p.pool = j->pool;
	p.seed = j->seed;
	p.epoch = j->epoch;
	p.gen = j->gen;
	p.oid = j->oid;
	p.deleted = j->deleted;
	p.size = j->size;
	p.first = j->first;
	p.data_off = j->data_off;
	p.last = j->deleted || (!j->omap_more && j->data_off + dlen >= j->size);
	an = calloc(j->nattrs + 1, sizeof(*an));
	av = calloc(j->nattrs + 1, sizeof(*av));
	ok = calloc(j->nomap + 1, sizeof(*ok));
	ov = calloc(j->nomap + 1, sizeof(*ov));
	if (!an || !av || !ok || !ov)
		goto out;
	for (size_t i = 0; i < j->nattrs; i++) {
		an[i] = (ProtobufCBinaryData){ j->attrs[i].klen, j->attrs[i].key };
		av[i] = (ProtobufCBinaryData){ j->attrs[i].vlen, j->attrs[i].val };
	}
	for (size_t i = 0; i < j->nomap; i++) {
		ok[i] = (ProtobufCBinaryData){ j->omap[i].klen, j->omap[i].key };
		ov[i] = (ProtobufCBinaryData){ j->omap[i].vlen, j->omap[i].val };
	}
	if (j->first) {
		p.attr_names = an;
		p.attr_vals = av;
		p.n_attr_names = p.n_attr_vals = j->nattrs;
		p.omap_header = (ProtobufCBinaryData){ j->hdr.vlen, j->hdr.val };
	}
	p.omap_keys = ok;
	p.omap_vals = ov;
	p.n_omap_keys = p.n_omap_vals = j->nomap;
	if (j->data && (rc = cm_sgl_append(&sgl, j->data, 0, j->data->len)))
		goto out;
	o->sch_rec += 4096 + dlen;
	if (j->target == o->id) { /* an EC primary rebuilding its own shard */
		j->waiting = true;
		j->sent_ms = cm_now_ms();
		/* A failure answers at once and may end j: do not touch it after. */
		local = true;
		osd__push_apply(o, NULL, &p, &sgl);
	} else {
		rc = osd__send_pb(osd__peer_conn(o, j->target, j->seed), OSD_MSG_PUSH, 0, &p.base,
				  j->data ? &sgl : NULL);
	}
out:
	cm_sgl_fini(&sgl);
	free(an);
	free(av);
	free(ok);
	free(ov);
	if (local)
		return;
	if (rc) {
		job_finish(j, rc);
		return;
	}
	j->waiting = true;
	j->sent_ms = cm_now_ms();
}

/*
 * A callback of the job's worker step, read or store barrier came back with
 * rc: free a job dropped meanwhile, end one that failed. \return whether
 * the job goes on.
 */
static bool
job_resume(struct osd_rjob *j, int rc)
{
	j->busy = false;
	if (j->dead) {
		job_free(j);
		return false;
	}
	if (rc) {
		job_finish(j, rc);
		return false;
	}
	return true;
}

static void
job_on_data(void *arg, int rc, struct cm_buf *data)
{
	struct osd_rjob *j = arg;

	if (!job_resume(j, rc)) {
		if (data)
			cm_buf_put(data);
		return;
	}
	j->data = data;
	job_send(j);
}

static void
job_step_done(void *arg)
{
	struct osd_rjob *j = arg;

	if (!job_resume(j, j->rc))
		return;
	if (!j->deleted && !j->omap_more && j->data_off < j->size) {
		j->busy = true;
		osd__read(j->osd, j->cid, j->oid, j->data_off,
			  CM_MIN((uint64_t)OSD_PUSH_CHUNK, j->size - j->data_off), job_on_data, j);
		return;
	}
	job_send(j);
}

/* ---- EC: the primary rebuilds the target's shard from k others ---- */

#define EC_PUSH_CHUNK (1u << 20) /* shard bytes per push */

static void
job_ec_fetched(void *arg, struct osd_ec_fetch *f)
{
	struct osd_rjob *j = arg;

	if (!job_resume(j, f->rc))
		return;
	if (j->first) {
		struct osd_pg *pg = osd__pg_find(j->osd, j->pool, j->seed);

		j->size = pg && pg->ec ? osd_ec_shard_size(pg->ec, f->lsize) : 0;
		j->ec_ver = f->ver; /* the next chunks come from the same version */
		j->attrs = f->attrs;
		j->nattrs = f->nattrs;
		f->attrs = NULL;
		f->nattrs = 0;
	}
	j->data = f->data ? cm_buf_get(f->data) : NULL;
	job_send(j);
}

static void
job_ec_step(struct osd_rjob *j, struct osd_pg *pg)
{
	const struct osd_lent *e = NULL;
	int shard = -1, rc;

	/* The object's version, once per object: its newest entry in our (the
	 * authoritative) log; an object the log does not name is the same on
	 * every complete shard (any version, as long as they agree). */
	for (size_t i = pg->log_n; j->first && i-- > 0;) {
		const struct osd_lent *x = osd__pg_log_at(pg, i);

		if (strcmp(x->oid, j->oid) == 0) {
			e = x;
			break;
		}
	}
	for (int t = 0; t < pg->nacting; t++)
		if (pg->acting[t] == j->target)
			shard = pg->shard[t];
	if (shard < 0) {
		job_finish(j, -ESTALE);
		return;
	}
	if (j->first) {
		j->omap_more = false;
		j->deleted = e && e->op == OSD_LOG_DELETE;
		if (j->deleted) {
			j->size = 0;
			job_send(j);
			return;
		}
	}
	j->busy = true;
	rc = osd__ec_fetch_shard(pg, j->oid,
				 !j->first ? &j->ec_ver
				 : e       ? &e->ver
					   : NULL,
				 (unsigned)shard, j->data_off, EC_PUSH_CHUNK, j->first,
				 job_ec_fetched, j);
	if (rc) {
		j->busy = false;
		job_finish(j, rc);
	}
}

static void
job_list_done(void *arg)
{
	struct osd_rjob *j = arg;

	if (job_resume(j, j->rc))
		job_step(j);
}

/* Ask a complete shard (the authoritative one) for the next page of names. */
static void
job_list_remote(struct osd_rjob *j, struct osd_pg *pg)
{
	Cairn__Osd__PgList q = CAIRN__OSD__PG_LIST__INIT;

	if (pg->auth < 0 || pg->slot_osd[pg->auth] == j->osd->id) {
		job_finish(j, -ESTALE);
		return;
	}
	q.pool = j->pool;
	q.seed = j->seed;
	q.epoch = j->epoch;
	q.start_after = j->cursor ? j->cursor : "";
	q.max = OSD_LIST_PAGE;
	q.shard = true;
	q.all_ns = true; /* (the OSD assumes it for shard listings too) */
	j->list_peer = pg->slot_osd[pg->auth];
	if (!j->cursor)
		CM_NOTICE("%s: rebuilding osd.%d's shard from osd.%d's listing", pg->cid, j->target,
			  j->list_peer);
	j->list_tid = ++j->osd->tid;
	j->busy = true;
	if (osd__send_pb(osd__peer_conn(j->osd, j->list_peer, j->seed), OSD_MSG_PG_LIST,
			 j->list_tid, &q.base, NULL)) {
		j->rc = -ENOTCONN;
		j->list_tid = 0;
		job_list_done(j);
	}
}

void
osd__rec_handle_list_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PgListReply *r = (Cairn__Osd__PgListReply *)cm_msg_unpack_front(
		m, &cairn__osd__pg_list_reply__descriptor);
	struct osd_rjob *j;

	(void)c;
	TAILQ_FOREACH(j, &o->rjobs, link)
		if (j->busy && j->list_tid && j->list_tid == m->tid)
			break;
	if (!j)
		goto out;
	j->list_tid = 0;
	job_free_list(j);
	j->rc = !r ? -EBADMSG : r->rc;
	if (!j->rc && r->n_oids) {
		j->oids = calloc(r->n_oids, sizeof(*j->oids));
		for (size_t i = 0; j->oids && i < r->n_oids; i++)
			if (!(j->oids[j->noids++] = strdup(r->oids[i])))
				j->rc = -ENOMEM;
		if (!j->oids)
			j->rc = -ENOMEM;
		j->cap = j->noids;
		free(j->cursor);
		j->cursor = strdup(r->oids[r->n_oids - 1]);
		if (!j->cursor)
			j->rc = -ENOMEM;
	}
	if (!j->rc)
		j->list_done = !r->more;
	job_list_done(j);
out:
	if (r)
		cairn__osd__pg_list_reply__free_unpacked(r, NULL);
	cm_msg_destroy(m);
}

static void
job_submit(struct osd_rjob *j, void (*fn)(void *), void (*done)(void *))
{
	j->w = (struct cm_work){ .fn = fn, .done = done, .arg = j };
	j->busy = true;
	if (osd__work(j->osd, &j->w)) {
		j->busy = false;
		job_finish(j, -ESHUTDOWN);
	}
}

/* A replicated PG's source reads the object from its own copy: metadata on a worker, then data. */
void
osd__push_step_replicated(struct osd_rjob *j, struct osd_pg *pg)
{
	(void)pg;
	job_submit(j, job_step_fn, job_step_done);
}

/* An EC PG's source (the primary) rebuilds the target's shard from k others. */
void
osd__push_step_ec(struct osd_rjob *j, struct osd_pg *pg)
{
	job_ec_step(j, pg);
}

/*
 * The next step of a job holding a slot: pick the next object (not one a
 * client op is executing on: wait for it, so that what we read includes
 * that op's change; ops on the object wait for us from now on), then read
 * it on a worker.
 */
static void
job_step(struct osd_rjob *j)
{
	struct osd_pg *pg = osd__pg_find(j->osd, j->pool, j->seed);

	while (!j->oid && j->next < j->noids) {
		const char *oid = j->oids[j->next];

		if ((uint8_t)oid[0] == 1 || (!j->all && osd_oset_get(&j->done, oid))) {
			j->next++;
			continue;
		}
		if (pg && osd__pg_object_busy(pg, oid)) {
			j->held = true;
			job_release_slot(j);
			return;
		}
		j->oid = strdup(oid);
		if (!j->oid) {
			job_finish(j, -ENOMEM);
			return;
		}
		j->next++;
		j->first = true;
		j->data_off = 0;
		free(j->omap_after.key);
		j->omap_after.key = NULL;
		j->omap_after.len = 0;
	}
	if (!j->oid) {
		if (!j->all || j->list_done)
			job_finish(j, 0);
		else if (pg && pg->be->list_remote(pg))
			job_list_remote(j, pg);
		else
			job_submit(j, job_list_fn, job_list_done);
		return;
	}
	(pg ? pg->be : &osd__backend_replicated)->push_step(j, pg);
}

/* Start pushes while slots are free, oldest waiting job first. */
static void
job_kick(struct osd *o)
{
	struct osd_rjob *j;

	while (o->rec_active < o->cfg->recovery_max_active) {
		/* Pushes clients wait for first, and regardless of the share. */
		TAILQ_FOREACH(j, &o->rjobs_ready, rlink)
			if (j->prio.n)
				break;
		if (!j && (!TAILQ_FIRST(&o->rjobs_ready) || !osd__sch_may_push(o)))
			break;
		if (!j)
			j = TAILQ_FIRST(&o->rjobs_ready);
		TAILQ_REMOVE(&o->rjobs_ready, j, rlink);
		j->ready = false;
		j->slot = true;
		o->rec_active++;
		job_step(j);
	}
}

/* Everything queued in the store before the job is durable: reads see it. */
static void
job_barrier_done(void *arg, int rc)
{
	struct osd_rjob *j = arg;

	if (!job_resume(j, rc))
		return;
	job_ready(j);
	job_kick(j->osd);
}

/* Put oid in j's list at position at (shifting the rest). \return 0 or -ENOMEM. */
static int
job_insert(struct osd_rjob *j, size_t at, const char *oid)
{
	char *s = strdup(oid);

	if (!s)
		return -ENOMEM;
	if (j->noids + 1 > j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 16;
		char **grown = realloc(j->oids, cap * sizeof(*grown));

		if (!grown) {
			free(s);
			return -ENOMEM;
		}
		j->oids = grown;
		j->cap = cap;
	}
	memmove(j->oids + at + 1, j->oids + at, (j->noids - at) * sizeof(*j->oids));
	j->oids[at] = s;
	j->noids++;
	return 0;
}

/*
 * A request for a job of the same plan: add its objects (prio: next in
 * line). Objects pushed already are never pushed again (a client may have
 * written them since); a client waiting for one is told at once.
 */
static int
job_merge(struct osd_rjob *j, const Cairn__Osd__RecoverReq *q)
{
	for (size_t i = 0; i < q->n_oids; i++) {
		const char *oid = q->oids[i];
		size_t k;
		int rc;

		if (osd_oset_get(&j->done, oid)) {
			if (q->prio)
				job_progress(j, oid);
			continue;
		}
		if (q->prio && (rc = osd_oset_put(&j->prio, oid, 0)))
			return rc;
		if (j->oid && strcmp(j->oid, oid) == 0)
			continue;
		for (k = j->next; k < j->noids; k++)
			if (strcmp(j->oids[k], oid) == 0)
				break;
		if (k < j->noids) {
			char *s = j->oids[k];

			if (q->prio) { /* move it to the front of what is left */
				memmove(j->oids + j->next + 1, j->oids + j->next,
					(k - j->next) * sizeof(*j->oids));
				j->oids[j->next] = s;
			}
			continue;
		}
		if ((rc = job_insert(j, q->prio ? j->next : j->noids, oid)))
			return rc;
	}
	if (!q->prio)
		j->bg = true;
	if ((j->idle || (q->prio && j->held)) && j->next < j->noids) {
		j->idle = false;
		j->held = false;
		job_ready(j);
		job_kick(j->osd);
	} else if (j->idle && !q->prio) {
		/* Clients' requests pushed everything already: the job is done. */
		Cairn__Osd__PgAck a;

		job_ack_init(j, &a);
		a.objects = j->objects;
		a.bytes = j->bytes;
		report_done(j->osd, j->primary, &a);
	}
	return 0;
}

void
osd__job_start(struct osd *o, const Cairn__Osd__RecoverReq *q, int32_t primary)
{
	struct osd_rjob *j, *x, *tmp;
	struct os_txn *t = NULL;
	struct osd_pg *pg = osd__pg_find(o, q->pool, q->seed);
	int rc;

	/* The same plan: merge. A newer plan for the same target replaces older ones. */
	TAILQ_FOREACH_SAFE(x, &o->rjobs, link, tmp) {
		if (x->pool != q->pool || x->seed != q->seed || x->target != q->target)
			continue;
		if (x->epoch == q->epoch && x->gen == q->gen && !x->all && !q->all) {
			if ((rc = job_merge(x, q)))
				job_finish(x, rc);
			return;
		}
		job_drop(x);
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		goto fail;
	j->osd = o;
	j->pool = q->pool;
	j->seed = q->seed;
	j->epoch = q->epoch;
	j->gen = q->gen;
	j->target = q->target;
	j->primary = primary;
	j->all = q->all;
	j->bg = !q->prio;
	snprintf(j->cid, sizeof(j->cid), "pg.%" PRId64 ".%x", q->pool, q->seed);
	TAILQ_INSERT_TAIL(&o->rjobs, j, link);
	/* A source needs a complete copy, but an EC primary rebuilds from the
	 * shards (and lists a complete one when its own is not). */
	if (!pg || !pg->in_store || q->epoch < pg->interval_epoch || !pg->be->source_ok(pg)) {
		job_finish(j, -ESTALE);
		return;
	}
	for (size_t i = 0; !j->all && i < q->n_oids; i++)
		if ((rc = job_insert(j, j->noids, q->oids[i])) ||
		    (q->prio && (rc = osd_oset_put(&j->prio, q->oids[i], 0)))) {
			job_finish(j, rc);
			return;
		}
	rc = os_txn_create(&t);
	if (!rc)
		rc = os_txn_touch(t, j->cid, OSD_PGMETA);
	if (rc) {
		os_txn_destroy(t);
		job_finish(j, rc);
		return;
	}
	j->busy = true;
	osd__queue(o, t, job_barrier_done, j);
	return;
fail : {
	Cairn__Osd__PgAck a = CAIRN__OSD__PG_ACK__INIT;

	a.pool = q->pool;
	a.seed = q->seed;
	a.epoch = q->epoch;
	a.gen = q->gen;
	a.target = q->target;
	a.rc = -ENOMEM;
	report_done(o, primary, &a);
}
}

void
osd__pg_handle_recover(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__RecoverReq *q = (Cairn__Osd__RecoverReq *)cm_msg_unpack_front(
		m, &cairn__osd__recover_req__descriptor);

	if (q && osd_check_recover(q) == 0 && q->from != o->id)
		osd__job_start(o, q, q->from);
	else
		CM_LOG_RL(CM_LOG_WARN, "bad recovery request from %s", cm_conn_peer(c));
	if (q)
		cairn__osd__recover_req__free_unpacked(q, NULL);
	cm_msg_destroy(m);
}

void
osd__pg_handle_push_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PushReply *r = (Cairn__Osd__PushReply *)cm_msg_unpack_front(
		m, &cairn__osd__push_reply__descriptor);
	intptr_t peer = osd__conn_peer(c);

	cm_msg_destroy(m);
	if (!r)
		return;
	osd__push_replied(o, (int32_t)peer, r);
	cairn__osd__push_reply__free_unpacked(r, NULL);
}

/* The target (peer; maybe us) applied a push, or failed to. */
void
osd__push_replied(struct osd *o, int32_t peer, const Cairn__Osd__PushReply *r)
{
	struct osd_rjob *j;
	char *done = NULL;
	struct osd_pg *pg;

	TAILQ_FOREACH(j, &o->rjobs, link)
		if (j->waiting && j->target == peer && j->pool == r->pool && j->seed == r->seed &&
		    j->epoch == r->epoch && r->oid && strcmp(j->oid, r->oid) == 0)
			break;
	if (!j)
		goto out;
	j->waiting = false;
	job_release_slot(j);
	if (r->rc) {
		job_finish(j, r->rc);
		goto out;
	}
	if (j->data) {
		j->bytes += j->data->len;
		o->rec_bytes += j->data->len;
		j->data_off += j->data->len;
	}
	j->first = false;
	job_clear_object(j);
	if (j->deleted || (!j->omap_more && j->data_off >= j->size)) {
		j->objects++;
		o->rec_objects++;
		done = j->oid;
		j->oid = NULL;
		osd_oset_del(&j->prio, done);
		if (!j->all && osd_oset_put(&j->done, done, 0)) {
			job_finish(j, -ENOMEM);
			goto out;
		}
	}
	if (done && !j->all) {
		/* The object is on the target: tell the primary (clients may wait
		 * for it). Hold j: the primary's side may drop it. */
		j->busy = true;
		job_progress(j, done);
		j->busy = false;
		if (j->dead) {
			job_free(j);
			j = NULL;
		}
	}
	if (j) { /* the next step may end j at once (an EC rebuild that cannot read) */
		job_ready(j);
		job_kick(o);
	}
	/* Ops on the object may run here now. */
	if (done && (pg = osd__pg_find(o, r->pool, r->seed)))
		osd__pg_object_ready(pg, done);
out:
	free(done);
}

/*
 * A request carries its sender's map epoch, so one sent at or after the
 * sender's own boot epoch (up_since) came from the process that runs now.
 * This OSD may learn of that boot only after the request (its map lags: it
 * booted later, or maps came in a batch): a job such a request asked for is
 * not an old incarnation's and must not be dropped unheard.
 */
bool
osd__sent_by_current(const struct osd *o, int32_t id, uint64_t epoch)
{
	const Cairn__Map__Osd *mo = o->map ? mon_osd_find(o->map, id) : NULL;

	return mo && mo->up && mo->up_since && epoch >= mo->up_since;
}

void
osd__rec_peer_reset(struct osd *o, int32_t peer)
{
	struct osd_rjob *j, *tmp;

	TAILQ_FOREACH_SAFE(j, &o->rjobs, link, tmp)
		if (j->list_tid && j->list_peer == peer) { /* its listing will not come */
			j->list_tid = 0;
			j->rc = -ECONNRESET;
			job_list_done(j);
		} else if (j->target == peer && !j->idle) {
			job_finish(j, -ECONNRESET); /* pushes in flight were lost: say so */
		} else if (j->primary == peer && osd__sent_by_current(o, j->primary, j->epoch)) {
			/* Asked by the primary running now: our session to it was
			 * replaced, the job (and the primary's wait) go on. An idle
			 * job whose target is that primary stays for its next ask. */
			continue;
		} else if (j->primary == peer || j->target == peer) {
			job_drop(j); /* the old incarnation is gone: nobody waits */
		}
}

void
osd__rec_jobs_stale(struct osd *o, int64_t pool, uint32_t seed)
{
	struct osd_rjob *j, *tmp;

	TAILQ_FOREACH_SAFE(j, &o->rjobs, link, tmp) {
		if (j->pool != pool || j->seed != seed)
			continue;
		if (j->idle)
			job_drop(j);
		else
			job_finish(j, -ESTALE);
	}
}

void
osd__rec_tick(struct osd *o, uint64_t now_ms)
{
	struct osd_rjob *j, *tmp;

	TAILQ_FOREACH_SAFE(j, &o->rjobs, link, tmp) {
		struct osd_pg *pg = osd__pg_find(o, j->pool, j->seed);
		bool moved = !pg || pg->interval_epoch > j->epoch;

		if (moved && j->idle)
			job_drop(j); /* done and reported: nobody waits for it */
		else if (moved)
			/* The PG moved on here. Say so rather than drop the job
			 * unheard: we may have noticed an interval at a later epoch
			 * than the primary planned in (we booted, or maps came in a
			 * batch) while the primary still waits for this job. A
			 * primary that moved on too ignores the answer (older gen). */
			job_finish(j, -ESTALE);
		else if (j->idle && cm_ms_since(now_ms, j->idle_ms) > OSD_IDLE_KEEP_MS)
			job_drop(j);
		else if (j->waiting && cm_ms_since(now_ms, j->sent_ms) > OSD_PUSH_TIMEOUT)
			job_finish(j, -ETIMEDOUT);
	}
	job_kick(o); /* pushes the client share held */
	/* Pushes the operator held (norecover, nobackfill) may go now. */
	for (size_t b = 0; b < o->npg_b; b++)
		for (struct osd_pg *pg = o->pgs[b]; pg; pg = pg->hnext)
			if (pg->primary == o->id && pg->rec_pending && pg->auth >= 0) {
				osd__rec_release(pg);
				osd__rec_stalled(pg, now_ms);
			}
}

void
osd__rec_free_all(struct osd *o)
{
	struct osd_rjob *j;

	while ((j = TAILQ_FIRST(&o->rjobs))) {
		TAILQ_REMOVE(&o->rjobs, j, link);
		if (j->ready)
			TAILQ_REMOVE(&o->rjobs_ready, j, rlink);
		if (!j->busy)
			job_free(j);
		else
			j->dead = true; /* the store or a worker still holds it */
	}
}
