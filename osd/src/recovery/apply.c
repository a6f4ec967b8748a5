/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Recovery targets: applying pushes, adopting the authoritative log (with
 * EC rollback), emptying a copy for a backfill, removing a stray copy.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(recovery);

static bool undo_keep(void *arg, const struct osd_ver *v);

/* ---------- the target: applying pushes and logs ---------- */

struct tgt_ctx {
	struct osd *osd;
	struct cm_conn *c; /* NULL: the primary is us */
	int64_t pool;
	uint32_t seed;
	uint64_t epoch, gen;
	char *oid;
	unsigned pending;
	int rc;
	struct osd_pg *pg;  /* wipe */
	uint32_t split_gen; /* wipe, removal: pg's when listed (a split since: stale) */
	uint32_t shard;     /* wipe: the EC shard label from now on */
	char **oids;        /* wipe: the objects; PG_LOG: those lost (report: tell the primary) */
	size_t noids;
	bool report;
	struct cm_work w;
};

static void
tgt_free(struct tgt_ctx *x)
{
	if (x->c)
		cm_conn_put(x->c);
	for (size_t i = 0; i < x->noids; i++)
		free(x->oids[i]);
	free(x->oids);
	free(x->oid);
	free(x);
}

static void
on_push_commit(void *arg, int rc)
{
	struct tgt_ctx *x = arg;
	Cairn__Osd__PushReply r = CAIRN__OSD__PUSH_REPLY__INIT;

	r.pool = x->pool;
	r.seed = x->seed;
	r.epoch = x->epoch;
	r.oid = x->oid;
	r.rc = rc;
	if (rc)
		CM_WARN("pg.%" PRId64 ".%x: applying a push of %s failed: %s", x->pool, x->seed,
			x->oid, cm_strerror(rc));
	if (x->c)
		osd__send_pb(x->c, OSD_MSG_PUSH_REPLY, 0, &r.base, NULL);
	else /* we pushed to ourselves (an EC primary rebuilding its own shard) */
		osd__push_replied(x->osd, x->osd->id, &r);
	tgt_free(x);
}

static int
push_txn(struct osd_pg *pg, const Cairn__Osd__Push *p, const struct cm_sgl *data, struct os_txn *t)
{
	const char *cid = pg->cid, *oid = p->oid;
	int rc = 0;

	if (p->first) {
		/* Replace whatever we had: the object becomes the source's. */
		rc = os_txn_touch(t, cid, oid);
		if (!rc)
			rc = os_txn_remove(t, cid, oid);
		if (p->deleted || rc)
			return rc;
		rc = os_txn_touch(t, cid, oid);
		if (!rc && p->size)
			rc = os_txn_truncate(t, cid, oid, p->size);
		for (size_t i = 0; i < p->n_attr_names && !rc; i++) {
			char name[OSD_ATTR_NAME_MAX + 1]; /* ('_' or 'L' and 255) */
			size_t nl = p->attr_names[i].len;

			if (nl == 0 || nl > OSD_ATTR_NAME_MAX)
				return -EINVAL;
			memcpy(name, p->attr_names[i].data, nl);
			name[nl] = 0;
			rc = os_txn_setattr(t, cid, oid, name, p->attr_vals[i].data,
					    p->attr_vals[i].len);
		}
		if (!rc && p->omap_header.len)
			rc = os_txn_omap_set_header(t, cid, oid, p->omap_header.data,
						    p->omap_header.len);
	}
	if (!rc && p->last && osd_oset_get(&pg->missing, oid)) {
		uint8_t k[OSD_NAME_MAX + 1];

		rc = os_txn_omap_rm(t, cid, OSD_PGMETA, k, osd__missing_key(oid, k));
	}
	if (p->deleted)
		return rc;
	for (size_t i = 0; i < p->n_omap_keys && !rc; i++)
		rc = os_txn_omap_set(t, cid, oid, p->omap_keys[i].data, p->omap_keys[i].len,
				     p->omap_vals[i].data, p->omap_vals[i].len);
	if (!rc && data->len) {
		uint64_t pos = 0, off = p->data_off;

		for (unsigned i = 0; i < data->n && !rc; i++) {
			const struct cm_sg *sg = &data->sg[i];

			rc = os_txn_write_buf(t, cid, oid, off + pos, sg->buf, sg->off, sg->len);
			pos += sg->len;
		}
	}
	return rc;
}

void
osd__pg_handle_push(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__Push *p =
		(Cairn__Osd__Push *)cm_msg_unpack_front(m, &cairn__osd__push__descriptor);

	if (!p || osd_check_push(p))
		CM_LOG_RL(CM_LOG_WARN, "bad push from %s", cm_conn_peer(c));
	else
		osd__push_apply(o, c, p, &m->data);
	if (p)
		cairn__osd__push__free_unpacked(p, NULL);
	cm_msg_destroy(m);
}

/* Apply a push from c (NULL: from ourselves); answer when it is durable. */
void
osd__push_apply(struct osd *o, struct cm_conn *c, const Cairn__Osd__Push *p,
		const struct cm_sgl *data)
{
	struct tgt_ctx *x = NULL;
	struct os_txn *t = NULL;
	struct osd_pg *pg;
	int rc;

	x = calloc(1, sizeof(*x));
	if (!x || !(x->oid = strdup(p->oid))) {
		free(x);
		return; /* the source times out */
	}
	x->osd = o;
	x->c = c ? cm_conn_get(c) : NULL;
	x->pool = p->pool;
	x->seed = p->seed;
	x->epoch = p->epoch;
	pg = osd__pg_find(o, p->pool, p->seed);
	if (!pg || (!pg->in_store && !pg->creating)) {
		on_push_commit(x, -ENOENT);
		return;
	}
	/* Only pushes of the plan whose PG_LOG we took: a late push of an
	 * abandoned plan could undo a client's newer write. */
	if (p->epoch != pg->push_epoch || p->gen != pg->push_gen || p->epoch < pg->interval_epoch) {
		on_push_commit(x, -ESTALE);
		return;
	}
	rc = os_txn_create(&t);
	if (!rc)
		rc = push_txn(pg, p, data, t);
	if (rc) {
		os_txn_destroy(t);
		on_push_commit(x, rc);
		return;
	}
	if (p->last)
		osd_oset_del(&pg->missing, p->oid);
	osd__queue(o, t, on_push_commit, x);
}

static void
log_ack(struct tgt_ctx *x, int rc)
{
	Cairn__Osd__PgAck a = CAIRN__OSD__PG_ACK__INIT;

	a.pool = x->pool;
	a.seed = x->seed;
	a.epoch = x->epoch;
	a.gen = x->gen;
	a.target = x->osd->id;
	a.rc = rc;
	if (x->report && !rc) {
		a.oids = x->oids;
		a.n_oids = x->noids;
	}
	if (x->c)
		osd__send_pb(x->c, OSD_MSG_PG_LOG_ACK, 0, &a.base, NULL);
	else
		osd__on_log_ack(x->osd, &a);
	tgt_free(x);
}

static void
on_log_commit(void *arg, int rc)
{
	struct tgt_ctx *x = arg;

	if (rc && !x->rc)
		x->rc = rc;
	if (--x->pending == 0)
		log_ack(x, x->rc);
}

/*
 * Remove x->oids from pg in transactions of 256 (t, when not NULL, is the
 * first one, with what must precede them); all: the PG's metadata object
 * too, then the collection. Each queued transaction counts in x->pending
 * and calls cb. \return 0 or the error that stopped the queueing.
 */
static int
queue_removes(struct tgt_ctx *x, struct osd_pg *pg, struct os_txn *t, bool all, os_commit_cb cb)
{
	size_t i = 0;
	int rc = 0;

	for (;;) {
		if (!t && (rc = os_txn_create(&t)))
			return rc;
		for (size_t k = 0; !rc && i < x->noids && k < 256; i++) {
			if (!all && strcmp(x->oids[i], OSD_PGMETA) == 0)
				continue; /* (stash objects go too) */
			rc = os_txn_remove(t, pg->cid, x->oids[i]);
			k++;
		}
		if (!rc && all && i >= x->noids)
			rc = os_txn_rmcoll(t, pg->cid);
		if (rc) {
			os_txn_destroy(t);
			return rc;
		}
		x->pending++;
		osd__queue(x->osd, t, cb, x);
		t = NULL;
		if (i >= x->noids)
			return 0;
	}
}

/* Wipe: list every object on a worker, then remove them and mark the copy incomplete. */
static void
wipe_list_fn(void *arg)
{
	struct tgt_ctx *x = arg;
	char *after = NULL;
	bool more = true;

	while (more && !x->rc) {
		char **names = NULL, **grown;
		size_t n = 0;
		int rc = os_list(x->osd->store, x->pg->cid, after, 1024, &names, &n, &more);

		if (rc) {
			x->rc = rc == -ENOENT ? 0 : rc;
			break;
		}
		grown = realloc(x->oids, (x->noids + n + 1) * sizeof(*x->oids));
		if (!grown) {
			os_names_free(names, n);
			x->rc = -ENOMEM;
			break;
		}
		x->oids = grown;
		for (size_t i = 0; i < n; i++) {
			x->oids[x->noids++] = names[i];
			names[i] = NULL;
		}
		after = n ? x->oids[x->noids - 1] : NULL;
		free(names);
		if (!n)
			break;
	}
}

static void
wipe_list_done(void *arg)
{
	struct tgt_ctx *x = arg;
	struct osd_pg *pg = osd__pg_find(x->osd, x->pool, x->seed);
	Cairn__Osd__PgInfo pi;
	Cairn__Osd__Version lu, tail;
	struct os_txn *t = NULL;
	int rc = x->rc;

	if (!rc && (pg != x->pg || pg->split_gen != x->split_gen))
		rc = -ESTALE;
	if (rc) {
		log_ack(x, rc);
		return;
	}
	osd__pg_log_clear(pg);
	osd_oset_clear(&pg->missing);
	pg->last_update = pg->log_tail = (struct osd_ver){ 0, 0 };
	pg->incomplete = true;
	pg->info_shard = x->shard ? x->shard : osd__pg_shard_label(pg);
	osd__pg_info_fill(pg, &pi, &lu, &tail);
	rc = os_txn_create(&t);
	if (!rc)
		rc = osd__log_txn(pg, t, &pi, NULL, 0, NULL, 0);
	if (!rc)
		rc = osd__pg_stash_forget(pg, t); /* their objects are removed with the rest */
	if (rc)
		os_txn_destroy(t);
	x->pending = 1; /* held until every transaction is queued */
	if (!rc)
		rc = queue_removes(x, pg, t, false, on_log_commit);
	if (rc)
		x->rc = rc;
	CM_INFO("%s: emptied for a backfill (%zu objects)", pg->cid, x->noids);
	on_log_commit(x, 0);
}

struct undo_keep {
	const Cairn__Osd__PgNotify *n;
	struct osd_ver to;
};

/* A stash the new log still needs: of one of its entries, not undone. */
static bool
undo_keep(void *arg, const struct osd_ver *v)
{
	const struct undo_keep *k = arg;

	const struct osd_lview lv = { .n = k->n };
	const struct osd_ver none = { UINT64_MAX, UINT64_MAX }; /* no tail matches */

	return osd_ver_cmp(v, &k->to) <= 0 && osd__lv_has(&lv, &none, v);
}

/*
 * Before our log is replaced by n's: with n->rollback, undo our entries
 * newer than n->rollback_to, newest first (EC: each shard puts back what it
 * kept), so that our copy holds every object as of that version. An object
 * one of whose entries cannot be undone (no stash of it here) is lost
 * instead: added to miss and x->oids (the ack tells the primary). Then drop
 * the stashes the new log does not need. Into t.
 */
static int
log_undo(struct osd_pg *pg, struct os_txn *t, const Cairn__Osd__PgNotify *n, struct osd_oset *miss,
	 struct tgt_ctx *x)
{
	struct undo_keep k = { .n = n, .to = { UINT64_MAX, UINT64_MAX } };
	struct osd_oset lost = { 0 };
	unsigned undone = 0;
	int rc = 0;

	if (n->rollback)
		osd_ver_from_pb(n->rollback_to, &k.to);
	for (size_t i = pg->log_n; i-- > 0 && !rc;) {
		const struct osd_lent *e = osd__pg_log_at(pg, i);

		if (osd_ver_cmp(&e->ver, &k.to) <= 0)
			break;
		if (osd_oset_get(&lost, e->oid))
			continue;
		rc = osd__pg_undo_entry(pg, t, e);
		if (rc == -ENOENT) {
			CM_WARN("%s: cannot undo %" PRIu64 ".%" PRIu64 " of %s (no stash of it "
				"here): the object is rebuilt instead",
				pg->cid, e->ver.epoch, e->ver.seq, e->oid);
			rc = osd_oset_put(&lost, e->oid, 0);
			if (!rc && !osd_oset_get(miss, e->oid))
				rc = osd_oset_put(miss, e->oid, 0);
			if (!rc) {
				char **no = realloc(x->oids, (x->noids + 1) * sizeof(*no));

				if (no)
					x->oids = no;
				if (!no || !(no[x->noids] = strdup(e->oid)))
					rc = -ENOMEM;
				else
					x->noids++;
			}
			continue;
		}
		undone++;
	}
	osd_oset_clear(&lost);
	if (!rc)
		rc = osd__pg_stash_prune(pg, t, undo_keep, &k);
	if (!rc && (undone || x->noids))
		CM_NOTICE("%s: undid %u changes newer than %" PRIu64 ".%" PRIu64
			  " (never acknowledged), %zu objects to rebuild",
			  pg->cid, undone, k.to.epoch, k.to.seq, x->noids);
	return rc;
}

void
osd__log_apply(struct osd *o, struct cm_conn *c, const Cairn__Osd__PgNotify *n)
{
	struct tgt_ctx *x = calloc(1, sizeof(*x));
	struct osd_pg *pg = osd__pg_find(o, n->pool, n->seed);
	struct os_txn *t = NULL;
	struct osd_oset miss = { 0 };
	Cairn__Osd__PgInfo pi;
	int rc = 0;

	if (!x)
		return; /* the primary times out and retries */
	x->osd = o;
	x->c = c ? cm_conn_get(c) : NULL;
	x->pool = n->pool;
	x->seed = n->seed;
	x->epoch = n->epoch;
	x->gen = n->gen;
	if (!pg || (!pg->in_store && !pg->creating)) {
		log_ack(x, -ENOENT);
		return;
	}
	if (n->epoch < pg->interval_epoch) {
		log_ack(x, -ESTALE);
		return;
	}
	pg->push_epoch = n->epoch;
	pg->push_gen = n->gen;
	if (n->wipe) {
		x->pg = pg;
		x->split_gen = pg->split_gen;
		x->shard = n->shard;
		x->w = (struct cm_work){ .fn = wipe_list_fn, .done = wipe_list_done, .arg = x };
		if (osd__work(o, &x->w))
			log_ack(x, -ESHUTDOWN);
		return;
	}
	if (!n->info) {
		log_ack(x, -EINVAL);
		return;
	}
	pi = *n->info;
	pi.incomplete = false;
	if (pg->last_epoch_started > pi.last_epoch_started)
		pi.last_epoch_started = pg->last_epoch_started; /* it never goes back */
	pi.shard = pg->info_shard = n->shard ? n->shard : osd__pg_shard_label(pg);
	for (size_t i = 0; i < n->n_missing && !rc; i++)
		rc = osd_oset_put(&miss, n->missing[i], 0);
	if (!rc)
		rc = os_txn_create(&t);
	if (!rc)
		rc = log_undo(pg, t, n, &miss, x);
	if (!rc)
		rc = osd__log_txn(pg, t, &pi, n->log, n->n_log, n->missing, n->n_missing);
	for (size_t i = 0; i < x->noids && !rc; i++) {
		uint8_t k[OSD_NAME_MAX + 1];

		rc = os_txn_omap_set(t, pg->cid, OSD_PGMETA, k, osd__missing_key(x->oids[i], k), "",
				     0);
	}
	x->report = x->noids > 0;
	if (rc) {
		osd_oset_clear(&miss);
		os_txn_destroy(t);
		log_ack(x, rc);
		return;
	}
	osd_oset_clear(&pg->missing);
	pg->missing = miss;
	osd__pg_log_clear(pg);
	for (size_t i = 0; i < n->n_log && !rc; i++)
		rc = osd__pg_log_append(pg, n->log[i]);
	osd_ver_from_pb(pi.last_update, &pg->last_update);
	osd_ver_from_pb(pi.log_tail, &pg->log_tail);
	pg->last_epoch_started = pi.last_epoch_started;
	pg->incomplete = false;
	if (rc)
		CM_WARN("%s: no memory for the adopted log: duplicates may be missed", pg->cid);
	x->pending = 1;
	osd__queue(o, t, on_log_commit, x);
}

void
osd__pg_handle_pg_log(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PgNotify *n =
		(Cairn__Osd__PgNotify *)cm_msg_unpack_front(m, &cairn__osd__pg_notify__descriptor);

	if (n && osd_check_notify(n) == 0)
		osd__log_apply(o, c, n);
	else
		CM_LOG_RL(CM_LOG_WARN, "bad PG log from %s", cm_conn_peer(c));
	if (n)
		cairn__osd__pg_notify__free_unpacked(n, NULL);
	cm_msg_destroy(m);
}

static void
on_remove_commit(void *arg, int rc)
{
	struct tgt_ctx *x = arg;

	if (rc && !x->rc)
		x->rc = rc;
	if (--x->pending)
		return;
	if (x->rc)
		CM_WARN("pg.%" PRId64 ".%x: removing the stray copy failed: %s", x->pool, x->seed,
			cm_strerror(x->rc));
	else
		CM_NOTICE("pg.%" PRId64 ".%x: stray copy removed (%zu objects): the PG is clean "
			  "on its acting OSDs",
			  x->pool, x->seed, x->noids);
	tgt_free(x);
}

static void
remove_list_done(void *arg)
{
	struct tgt_ctx *x = arg;
	struct osd *o = x->osd;
	struct osd_pg *pg = osd__pg_find(o, x->pool, x->seed);
	int rc = x->rc;

	/* Still a stray (no interval made us a member meanwhile)? */
	if (rc || pg != x->pg || pg->split_gen != x->split_gen || pg->state != OSD_PG_NONE ||
	    !pg->in_store || pg->creating) {
		tgt_free(x);
		return;
	}
	x->pending = 1;
	x->rc = queue_removes(x, pg, NULL, true, on_remove_commit);
	/* Forget it in memory now: a later interval that needs it creates it
	 * again, queued after these. */
	osd__pg_log_clear(pg);
	osd_oset_clear(&pg->missing);
	pg->in_store = false;
	pg->incomplete = false;
	pg->last_update = pg->log_tail = (struct osd_ver){ 0, 0 };
	on_remove_commit(x, 0);
}

void
osd__pg_handle_pg_remove(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PgAck *a =
		(Cairn__Osd__PgAck *)cm_msg_unpack_front(m, &cairn__osd__pg_ack__descriptor);
	struct tgt_ctx *x = NULL;
	struct osd_pg *pg;

	(void)c;
	cm_msg_destroy(m);
	if (!a)
		return;
	pg = osd__pg_find(o, a->pool, a->seed);
	/* Only a copy we do not serve in our map, and only for a newer interval. */
	if (!pg || pg->state != OSD_PG_NONE || !pg->in_store || pg->creating ||
	    a->epoch < pg->interval_epoch || !(x = calloc(1, sizeof(*x))))
		goto out;
	x->osd = o;
	x->pool = a->pool;
	x->seed = a->seed;
	x->pg = pg;
	x->split_gen = pg->split_gen;
	x->w = (struct cm_work){ .fn = wipe_list_fn, .done = remove_list_done, .arg = x };
	if (osd__work(o, &x->w))
		tgt_free(x);
out:
	cairn__osd__pg_ack__free_unpacked(a, NULL);
}
