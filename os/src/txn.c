/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transactions: their life (create, destroy) and their pipeline on the
 * reactor (recording the ops is txn_ops.c).
 *
 *   os_queue -> prepare (kv thread, in order) -> COW device writes (reactor)
 *   -> READY; a commit round takes the READY prefix of the queue: fsync the
 *   device if anything was written since the last one, then (kv thread) the
 *   rounds' batches in order, the last one synced, plus deletions of
 *   deferred records already applied; then callbacks, deferred applies,
 *   releases of freed blocks once nothing can still read or replay them.
 *   With the store's journal: a transaction with COW data is READY for a
 *   round once a device fsync issued after its writes completed is done;
 *   the round writes its record, fsyncs (up to OS_JNL_DEPTH such rounds at
 *   once), then (commit thread) its batches go into the memtable.
 */
#include "store_internal.h"
#include "cm/log.h"

CM_LOG_SUBSYS(store);

int
os_txn_create(struct os_txn **tp)
{
	*tp = calloc(1, sizeof(**tp));
	return *tp ? 0 : -ENOMEM;
}

static void
dfr_free(struct os_dfr *d)
{
	if (!d)
		return;
	free(d->pblocks);
	free(d->tags);
	cm_buf_put(d->buf);
	free(d->ios);
	free(d);
}

rocksdb_writebatch_t *
os_wb_get(struct os_store *s)
{
	rocksdb_writebatch_t *wb = NULL;

	pthread_mutex_lock(&s->wb_mu);
	if (s->nwb_pool)
		wb = s->wb_pool[--s->nwb_pool];
	pthread_mutex_unlock(&s->wb_mu);
	return wb ? wb : rocksdb_writebatch_create();
}

/* Back to the pool, cleared (its room kept), unless the pool is full or it is big. */
static void
wb_put(struct os_store *s, rocksdb_writebatch_t *wb)
{
	size_t len;

	rocksdb_writebatch_data(wb, &len);
	if (len <= (256 << 10)) {
		rocksdb_writebatch_clear(wb);
		pthread_mutex_lock(&s->wb_mu);
		if (s->nwb_pool < sizeof(s->wb_pool) / sizeof(s->wb_pool[0])) {
			s->wb_pool[s->nwb_pool++] = wb;
			wb = NULL;
		}
		pthread_mutex_unlock(&s->wb_mu);
	}
	if (wb)
		rocksdb_writebatch_destroy(wb);
}

void
os_txn_destroy(struct os_txn *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nops; i++)
		os_op_free(&t->ops[i]);
	free(t->ops);
	if (t->wb && t->s)
		wb_put(t->s, t->wb);
	else if (t->wb)
		rocksdb_writebatch_destroy(t->wb);
	for (size_t i = 0; i < t->nwrites; i++) {
		cm_buf_put(t->writes[i].buf);
		free(t->writes[i].csum);
	}
	free(t->writes);
	for (size_t i = 0; i < t->ndfrs; i++)
		dfr_free(t->dfrs[i]);
	free(t->dfrs);
	free(t->frees);
	for (size_t i = 0; i < t->ntouched; i++) {
		free(t->touched[i].key);
		os_onode_free(t->touched[i].on);
	}
	free(t->touched);
	free(t->pending_tags);
	free(t);
}

/* ---------- the pipeline ---------- */

static void kick(struct os_store *s);
static void kick_commit(struct os_store *s);
static void start_waiting(struct os_store *s);

static void
write_done(struct cm_io *io, int res)
{
	struct os_dwrite *w = io->arg;
	struct os_store *s = w->s;

	if (res != (int)w->iov.iov_len) {
		CM_ERR("device write of %" PRIu64 " blocks at block %" PRIu64
		       " failed: %s; refusing further transactions",
		       w->n, w->pblock, res < 0 ? strerror(-res) : "short write");
		if (w->t && !w->t->rc)
			w->t->rc = -EIO;
		/*
		 * Transactions after it were prepared on top of its onodes (and
		 * put only the extent map shards they changed): none of them may
		 * commit without it. Every round formed from now on fails.
		 */
		if (w->t)
			s->failed = true;
	}
	s->dirty = true;
	if (w->t) {
		if (--w->t->writes_left == 0) {
			/*
			 * Journal: its record goes now; the record's fsync makes both
			 * durable, and mount checks the data of a last record
			 * (journal.c, os_jnl_mount).
			 */
			w->t->state = T_READY;
			w->t->t_ready = cm_now_ns();
			kick_commit(s);
		}
		return;
	}
	/* A deferred apply. */
	if (--w->dfr->ios_left == 0) {
		struct os_dfr *d = w->dfr;

		for (size_t i = 0; i < d->n; i++)
			os_pend_del(s, d->pblocks[i], 1, d->tags[i]);
		d->applied = true;
		d->need_fsync = s->fsync_issued + 1; /* retired (journal) once this is done */
		TAILQ_REMOVE(&s->dfr_applying, d, link);
		TAILQ_INSERT_TAIL(&s->dfr_applied, d, link);
		s->napplied++;
		start_waiting(s);
		kick_commit(s);
	}
}

static void
prepare_done(void *arg)
{
	struct os_txn *t = arg;
	struct os_store *s = t->s;

	if (t->rc || t->nwrites == 0) {
		t->state = T_READY;
		t->t_ready = cm_now_ns();
		kick_commit(s);
		return;
	}
	t->state = T_WRITING;
	t->writes_left = (unsigned)t->nwrites;
	for (size_t i = 0; i < t->nwrites; i++) {
		struct os_dwrite *w = &t->writes[i];

		w->s = s;
		w->t = t;
		w->iov.iov_base = w->buf->data + w->off;
		w->iov.iov_len = w->n * s->B;
		w->io.cb = write_done;
		w->io.arg = w;
		if (cm_io_writev(s->r, &w->io, s->fd, &w->iov, 1, (off_t)(w->pblock * s->B)))
			write_done(&w->io, -EIO);
	}
}

static void
prepared_on_thread(void *arg)
{
	struct os_txn *t = arg;

	t->s->nprep--;
	prepare_done(t);
}

/*
 * Prepare in queue order; a barrier waits until everything before it is
 * done. A transaction is prepared right here on the reactor when nothing is
 * being prepared on the prepare thread (order) and it needs nothing from
 * the disk (os_prepare_nb); otherwise it goes to the prepare thread, and so
 * do the ones after it while it is there. Saves two thread switches per
 * transaction (docs/design/store.md "Threads").
 */
static void
kick(struct os_store *s)
{
	struct os_txn *t;

	if (s->in_kick) { /* from a completion inside the loop below */
		s->kick_again = true;
		return;
	}
	s->in_kick = true;
	do {
		s->kick_again = false;
		TAILQ_FOREACH(t, &s->q, link) {
			if (t->state != T_QUEUED)
				continue;
			if (t->barrier && TAILQ_FIRST(&s->q) != t)
				break;
			t->state = T_PREPARING;
			if (s->inline_prepare && s->nprep == 0) {
				if (os_prepare_nb(t) == 0) {
					s->c_prep_inline++;
					prepare_done(t);
					if (s->kick_again)
						break; /* the queue may have changed */
					if (t->barrier)
						break;
					continue;
				}
				s->c_prep_retry++;
			}
			t->work = (struct cm_work){ .fn = os_prepare,
						    .done = prepared_on_thread,
						    .arg = t };
			if (cm_worker_submit(s->kv, s->r, &t->work)) {
				t->rc = -ESHUTDOWN;
				t->state = T_READY;
			} else {
				s->nprep++;
			}
			if (t->barrier)
				break; /* those after it are prepared after it */
		}
	} while (s->kick_again);
	s->in_kick = false;
}

static void
queue_here(struct os_store *s, struct os_txn *t, os_commit_cb cb, void *arg)
{
	t->s = s;
	t->cb = cb;
	t->arg = arg;
	t->state = T_QUEUED;
	TAILQ_INSERT_TAIL(&s->q, t, link);
	s->inflight++;
	kick(s);
}

/*
 * A transaction queued from another reactor (an OSD shard): it travels to
 * the store's reactor, and its callback travels back. Posts keep order, so
 * one sender's transactions commit, and report, in the order it queued them.
 */
struct os_qfwd {
	struct cm_reactor_msg m;
	struct cm_reactor *origin;
	struct os_store *s;
	struct os_txn *t;
	os_commit_cb cb;
	void *arg;
	int rc;
};

static void
qfwd_back(void *arg)
{
	struct os_qfwd *f = arg;

	if (f->cb)
		f->cb(f->arg, f->rc);
	free(f);
}

static void
qfwd_done(void *arg, int rc)
{
	struct os_qfwd *f = arg;

	f->rc = rc;
	f->t = NULL;
	f->m = (struct cm_reactor_msg){ .fn = qfwd_back, .arg = f, .drop = free };
	cm_reactor_post(f->origin, &f->m);
}

static void
qfwd_run(void *arg)
{
	struct os_qfwd *f = arg;

	queue_here(f->s, f->t, qfwd_done, f);
}

/* The store's reactor went away with the transaction still on its way. */
static void
qfwd_drop(void *arg)
{
	struct os_qfwd *f = arg;

	os_txn_destroy(f->t);
	free(f);
}

void
os_queue(struct os_store *s, struct os_txn *t, os_commit_cb cb, void *arg)
{
	struct cm_reactor *self = cm_reactor_self();
	struct os_qfwd *f;

	if (!self || self == s->r) {
		queue_here(s, t, cb, arg);
		return;
	}
	f = malloc(sizeof(*f));
	if (!f) {
		os_txn_destroy(t);
		if (cb)
			cb(arg, -ENOMEM);
		return;
	}
	*f = (struct os_qfwd){ .origin = self, .s = s, .t = t, .cb = cb, .arg = arg };
	f->m = (struct cm_reactor_msg){ .fn = qfwd_run, .arg = f, .drop = qfwd_drop };
	cm_reactor_post(s->r, &f->m);
}

static void
merge_put(void *state, const char *k, size_t kl, const char *v, size_t vl)
{
	rocksdb_writebatch_put(state, k, kl, v, vl);
}

static void
merge_del(void *state, const char *k, size_t kl)
{
	rocksdb_writebatch_delete(state, k, kl);
}

/* Batches merge (in order) unless one has a DeleteRange, which batch iteration cannot copy. */
static bool
merge_ok(const struct os_round *rd)
{
	size_t ok = 0;

	for (size_t i = 0; i < rd->n; i++) {
		if (rd->txns[i]->rc)
			continue;
		if (rd->txns[i]->range_deletes)
			return false;
		ok++;
	}
	return ok > 0;
}

/*
 * A round called back before its memtable insert (ack_durable) is in the
 * memtable now, or will never be (broken): reads waiting for it go on.
 */
static void
kv_gate_advance(struct os_store *s, const struct os_round *rd, bool broken)
{
	if (!rd->ack_no)
		return;
	pthread_mutex_lock(&s->kv_mu);
	/*
	 * kv_done stays below a broken round for good: a later round that
	 * "commits" (one whose transactions all failed writes nothing) must
	 * not let reads that want the broken one through.
	 */
	if (broken)
		__atomic_store_n(&s->kv_broken, true, __ATOMIC_RELEASE); /* reads wanting it fail */
	else if (!s->kv_broken && rd->ack_no > s->kv_done)
		__atomic_store_n(&s->kv_done, rd->ack_no, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&s->kv_cv);
	pthread_mutex_unlock(&s->kv_mu);
}

int
os_kv_wait(struct os_store *s)
{
	uint64_t want = __atomic_load_n(&s->kv_acked, __ATOMIC_ACQUIRE);
	int rc = 0;

	if (__atomic_load_n(&s->kv_done, __ATOMIC_ACQUIRE) >= want)
		return 0;
	__atomic_fetch_add(&s->c_gate_waits, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&s->kv_mu);
	while (s->kv_done < want && !s->kv_broken)
		pthread_cond_wait(&s->kv_cv, &s->kv_mu);
	if (s->kv_done < want)
		rc = -EIO;
	pthread_mutex_unlock(&s->kv_mu);
	return rc;
}

/*
 * commit thread: the round's batches in order (the last synced), and retired
 * deferred keys; merged into one write when they can be (the round then
 * commits all or nothing, which keeps the prefix property).
 */
static void
commit_fn(void *arg)
{
	struct os_round *rd = arg;
	struct os_store *s = rd->s;
	rocksdb_writebatch_t *retire = rocksdb_writebatch_create();
	struct os_dfr *d;
	char key[16], *err = NULL;
	size_t last = SIZE_MAX;

	uint64_t t_start = cm_now_ns();

	rd->commit_rc = 0;
	if (rd->big) {
		/* Alone in flight (kick_commit): everything before it into the tables first. */
		if (os_jnl_checkpoint(s))
			rd->commit_rc = -EIO;
		else if (!rd->txns[0]->rc)
			rocksdb_write(s->db, s->wo_sync, rd->txns[0]->wb, &err);
		goto out;
	}
	if (s->jblocks && (!rd->jbuf || rd->failed)) {
		rd->commit_rc = -EIO; /* no durable record: nothing of it happens now */
		goto out;
	}
	if (s->jblocks && __atomic_load_n(&s->kv_broken, __ATOMIC_ACQUIRE)) {
		/* An earlier round missed the memtable: none after it goes in (mount replays). */
		rd->commit_rc = -EIO;
		goto out;
	}
	if (s->jblocks) {
		/* Durable in the journal already: into the memtable, without RocksDB's WAL. */
		if (s->test_kv_delay_us)
			usleep(s->test_kv_delay_us);
		if (rd->retire && rocksdb_writebatch_count(rd->retire))
			rocksdb_write(s->db, s->wo_nowal, rd->retire, &err);
		for (size_t i = 0; i < rd->n && !err; i++) {
			if (rd->txns[i]->rc)
				continue;
			if (s->test_kv_fail_txn && ++s->test_kv_txns == s->test_kv_fail_txn)
				err = strdup("test_kv_fail_txn: an injected failure");
			else
				rocksdb_write(s->db, s->wo_nowal, rd->txns[i]->wb, &err);
		}
		goto out;
	}
	TAILQ_FOREACH(d, &rd->retiring, link)
		rocksdb_writebatch_delete(retire, key, os_key_deferred(key, d->seq));
	for (size_t i = 0; i < rd->n; i++)
		if (!rd->txns[i]->rc)
			last = i;
	if (merge_ok(rd)) {
		/* One write for the round: every batch copied into the retire batch. */
		uint64_t t0 = cm_now_ns();

		for (size_t i = 0; i < rd->n; i++)
			if (!rd->txns[i]->rc)
				rocksdb_writebatch_iterate(rd->txns[i]->wb, retire, merge_put,
							   merge_del);
		rocksdb_write(s->db, s->wo_sync, retire, &err);
		s->c_kv_sync_ns += cm_now_ns() - t0;
	} else {
		if (rocksdb_writebatch_count(retire))
			rocksdb_write(s->db, last == SIZE_MAX ? s->wo_sync : s->wo_async, retire,
				      &err);
		for (size_t i = 0; i < rd->n && !err; i++) {
			struct os_txn *t = rd->txns[i];
			uint64_t t0 = cm_now_ns();

			if (t->rc)
				continue;
			rocksdb_write(s->db, i == last ? s->wo_sync : s->wo_async, t->wb, &err);
			if (i == last)
				s->c_kv_sync_ns += cm_now_ns() - t0;
		}
	}
out:
	if (err) {
		CM_ERR("rocksdb commit failed: %s; refusing further transactions", err);
		rocksdb_free(err);
		rd->commit_rc = -EIO;
		s->failed = true;
	}
	rocksdb_writebatch_destroy(retire);
	kv_gate_advance(s, rd, rd->commit_rc != 0);
	s->c_kv_fn_ns += cm_now_ns() - t_start;
}

static void
release_held(struct os_store *s)
{
	struct os_held *h, *tmp;
	struct os_dfr *d = TAILQ_FIRST(&s->dfr_applying);
	uint64_t min_dfr = UINT64_MAX, min_read_gen = UINT64_MAX;

	/* Deferred records not yet retired may still be replayed onto their blocks. */
	if (d)
		min_dfr = d->seq;
	if ((d = TAILQ_FIRST(&s->dfr_applied)) && d->seq < min_dfr)
		min_dfr = d->seq;
	{
		struct os_round *rd;

		TAILQ_FOREACH(rd, &s->rounds, link)
			if ((d = TAILQ_FIRST(&rd->retiring)) && d->seq < min_dfr)
				min_dfr = d->seq;
	}
	if ((d = TAILQ_FIRST(&s->dfr_waiting)) && d->seq < min_dfr)
		min_dfr = d->seq;
	if (!TAILQ_EMPTY(&s->reads))
		min_read_gen = TAILQ_FIRST(&s->reads)->gen;
	pthread_mutex_lock(&s->alloc_mu);
	TAILQ_FOREACH_SAFE(h, &s->held, link, tmp) {
		if (h->dfr_tag >= min_dfr || h->gen >= min_read_gen)
			continue;
		if (os_alloc_put(s->alloc, h->ex.start, h->ex.len))
			CM_ERR("freeing blocks %" PRIu64 "+%" PRIu64 " twice", h->ex.start,
			       h->ex.len);
		TAILQ_REMOVE(&s->held, h, link);
		free(h);
	}
	pthread_mutex_unlock(&s->alloc_mu);
}

void
os_read_gate_release(struct os_store *s)
{
	release_held(s);
}

static bool
dfr_overlap(const struct os_dfr *a, const struct os_dfr *b)
{
	for (size_t i = 0; i < a->n; i++)
		for (size_t j = 0; j < b->n; j++)
			if (a->pblocks[i] == b->pblocks[j])
				return true;
	return false;
}

static void start_dfr(struct os_store *s, struct os_dfr *d);

/*
 * Start waiting deferred writes in order, each once no earlier one (applying
 * or waiting) writes one of its blocks: two writes of a block never race.
 */
static void
start_waiting(struct os_store *s)
{
	struct os_dfr *d, *tmp, *o;

	TAILQ_FOREACH_SAFE(d, &s->dfr_waiting, link, tmp) {
		bool blocked = false;

		TAILQ_FOREACH(o, &s->dfr_applying, link)
			if ((blocked = dfr_overlap(d, o)))
				break;
		for (o = TAILQ_FIRST(&s->dfr_waiting); !blocked && o != d; o = TAILQ_NEXT(o, link))
			blocked = dfr_overlap(d, o);
		if (blocked)
			continue;
		TAILQ_REMOVE(&s->dfr_waiting, d, link);
		start_dfr(s, d);
	}
}

static void
apply_deferred(struct os_store *s, struct os_dfr *d)
{
	TAILQ_INSERT_TAIL(&s->dfr_waiting, d, link);
	if (!s->dfr_hold)
		start_waiting(s);
}

static void
dfr_release(struct os_store *s)
{
	if (!s->dfr_hold)
		return;
	s->dfr_hold = false;
	start_waiting(s);
}

static void
start_dfr(struct os_store *s, struct os_dfr *d)
{
	size_t runs = 0;

	/* One write per run of consecutive blocks. */
	d->ios = calloc(d->n, sizeof(*d->ios));
	if (!d->ios) {
		CM_ERR("no memory to apply a deferred write; it stays in the KV for the next mount");
		return;
	}
	for (size_t i = 0; i < d->n;) {
		size_t j = i + 1;

		while (j < d->n && d->pblocks[j] == d->pblocks[j - 1] + 1)
			j++;
		d->ios[runs++] = (struct os_dwrite){ .pblock = d->pblocks[i],
						     .n = j - i,
						     .buf = d->buf,
						     .off = d->boff + i * s->B,
						     .dfr = d,
						     .s = s };
		i = j;
	}
	d->nios = runs;
	d->ios_left = (unsigned)runs;
	TAILQ_INSERT_TAIL(&s->dfr_applying, d, link);
	for (size_t i = 0; i < runs; i++) {
		struct os_dwrite *w = &d->ios[i];

		w->iov.iov_base = w->buf->data + w->off;
		w->iov.iov_len = w->n * s->B;
		w->io.cb = write_done;
		w->io.arg = w;
		if (cm_io_writev(s->r, &w->io, s->fd, &w->iov, 1, (off_t)(w->pblock * s->B)))
			write_done(&w->io, -EIO);
	}
}

static void submit_commits(struct os_store *s);

/*
 * What a transaction's callback may rely on in memory, done once, when it
 * is called back: its copy-on-write blocks read from the device (the data
 * is there) and, if it happened (ok), its onodes in the read cache and its
 * deferred writes on their way to the device.
 */
static void
txn_land(struct os_store *s, struct os_txn *t, bool ok)
{
	if (ok) {
		for (size_t k = 0; k < t->ntouched; k++) {
			os_ocache_put(&s->rcache, t->touched[k].key, t->touched[k].klen,
				      t->touched[k].on);
			t->touched[k].on = NULL;
		}
		os_ocache_trim(&s->rcache);
		for (size_t k = 0; k < t->ndfrs; k++) {
			apply_deferred(s, t->dfrs[k]);
			t->dfrs[k] = NULL;
		}
		t->ndfrs = 0;
	}
	for (size_t k = 0; k < t->nwrites && k < t->npending; k++)
		os_pend_del(s, t->writes[k].pblock, t->writes[k].n, t->pending_tags[k]);
}

static void
commit_done(void *arg)
{
	struct os_round *rd = arg;
	struct os_store *s = rd->s;
	struct os_dfr *d, *tmp;
	/* Called back already (ack_durable): its transactions landed then. */
	bool acked = rd->ack_no && rd->ack_no <= s->kv_acked;

	s->gen++;
	s->commit_gen++;
	s->c_kv_ns += cm_now_ns() - rd->t_kv;
	if (rd->ack_no && __atomic_load_n(&s->kv_done, __ATOMIC_ACQUIRE) < rd->ack_no)
		kv_gate_advance(s, rd, true); /* commit_fn never ran (shutdown) */
	os_fetch_release(s);
	/*
	 * The prepare cache may forget what is now in the KV. Here, not on the
	 * commit thread: prepare mostly runs on this reactor, so the lock is
	 * rarely contended (a contended one costs both threads a switch).
	 */
	pthread_mutex_lock(&s->pcache_mu);
	for (size_t i = 0; i < rd->n; i++) {
		struct os_txn *t = rd->txns[i];

		for (size_t k = 0; k < t->ntouched; k++) {
			struct os_oent *e =
				os_ocache_get(&s->pcache, t->touched[k].key, t->touched[k].klen);

			if (e && e->pending)
				e->pending--;
		}
	}
	os_ocache_trim(&s->pcache);
	pthread_mutex_unlock(&s->pcache_mu);
	/* Retired deferred records are gone from the KV now. */
	TAILQ_FOREACH_SAFE(d, &rd->retiring, link, tmp) {
		TAILQ_REMOVE(&rd->retiring, d, link);
		dfr_free(d);
	}
	for (size_t i = 0; i < rd->n; i++) {
		struct os_txn *t = rd->txns[i];
		/*
		 * One acknowledged is durable in the journal whatever its memtable
		 * insert did (a failed one stops the store; mount replays it): it
		 * stays done here, its blocks kept and its deferred writes applied.
		 */
		int rc = t->rc ? t->rc : acked ? 0 : rd->commit_rc;

		TAILQ_REMOVE(&s->q, t, link);
		if (!rc) {
			s->c_commits++;
			for (size_t k = 0; k < t->nfrees; k++) {
				struct os_held *h = malloc(sizeof(*h));

				if (!h)
					continue; /* leaked until the next mount rebuilds */
				h->ex = t->frees[k];
				h->dfr_tag = t->dfr_tag;
				h->gen = s->gen;
				TAILQ_INSERT_TAIL(&s->held, h, link);
			}
		} else {
			/* Nothing of it happened: give back what prepare took. */
			pthread_mutex_lock(&s->alloc_mu);
			for (size_t k = 0; k < t->nwrites; k++)
				os_alloc_put(s->alloc, t->writes[k].pblock, t->writes[k].n);
			pthread_mutex_unlock(&s->alloc_mu);
			for (size_t k = 0; k < t->ndfrs; k++)
				for (size_t b = 0; b < t->dfrs[k]->n; b++)
					os_pend_del(s, t->dfrs[k]->pblocks[b], 1,
						    t->dfrs[k]->tags[b]);
		}
		if (!acked) {
			txn_land(s, t, !rc);
			if (t->cb)
				t->cb(t->arg, rc);
		}
		s->inflight--;
		os_txn_destroy(t);
	}
	TAILQ_REMOVE(&s->rounds, rd, link);
	s->nrounds--;
	if (s->jblocks && !rd->big && !rd->commit_rc)
		os_jnl_applied(s, rd);
	if (rd->retire)
		rocksdb_writebatch_destroy(rd->retire);
	free(rd->jbuf);
	free(rd->txns);
	free(rd);
	release_held(s);
	kick(s);
	kick_commit(s);
}

/*
 * Journal mode: call back the rounds whose records are durable, in order,
 * while the commit thread puts them into the memtable.
 */
static void
ack_durable(struct os_store *s)
{
	struct os_round *rd;

	s->acking = true;
	/*
	 * Their deferred writes go to the device after the next round's record
	 * (fsync_completed, fsync_done: dfr_release): this disk works its queue
	 * in order, and the record is what the next 32 writers wait for.
	 */
	s->dfr_hold = true;
	TAILQ_FOREACH(rd, &s->rounds, link) {
		if (!rd->ack_no)
			break;
		if (rd->ack_no <= s->kv_acked)
			continue; /* called back already */
		__atomic_store_n(&s->kv_acked, rd->ack_no, __ATOMIC_RELEASE);
		s->commit_gen++; /* onode fetches in flight may have read what this replaces */
		for (size_t i = 0; i < rd->n; i++) {
			struct os_txn *t = rd->txns[i];

			/*
			 * Its copy-on-write data was written before the record; its
			 * deferred writes may go to the device now (their records are
			 * durable in the journal, and the device is idle until the next
			 * record is written).
			 */
			txn_land(s, t, !t->rc);
			if (t->cb)
				t->cb(t->arg, t->rc);
		}
	}
	s->acking = false;
}

/*
 * Journal: whether a round of the n ready transactions at the queue's head
 * (the oldest first) should wait for next, the transaction after them, whose small
 * copy-on-write data is being written. Each transaction's data must be on
 * the device before its record is written; without waiting, the first of
 * 32 small new-object writes to complete would go alone in a record, the
 * rest in the next ones, each record with its own flush — and at a fixed
 * number in flight, rounds of a few then alternate with rounds of the
 * rest (4 KiB copy-on-write writes at 32 in flight: 16 per round and
 * 27-47k IOPS; waiting, 32 per round and 45-56k). The wait ends with next's
 * completion (which kicks), and a round waits at most OS_GATHER_NS past
 * its oldest transaction's being ready and never grows past OS_GATHER_MAX.
 */
static bool
gather(const struct os_store *s, size_t n, const struct os_txn *first, const struct os_txn *next)
{
	uint64_t nb = 0;

	if (!n || n >= OS_GATHER_MAX || !next || next->state != T_WRITING)
		return false;
	for (size_t i = 0; i < next->nwrites; i++)
		nb += next->writes[i].n;
	return nb * s->B <= OS_GATHER_BYTES && cm_now_ns() - first->t_ready < OS_GATHER_NS;
}

/* KV commits go in round order: submit those whose fsync is done, up to the first that is not. */
static void
submit_commits(struct os_store *s)
{
	struct os_round *rd;

	TAILQ_FOREACH(rd, &s->rounds, link) {
		if (rd->submitted)
			continue;
		if (!rd->synced)
			break;
		rd->submitted = true;
		/* Numbered before the commit thread sees it: ack_durable calls it back. */
		if (s->jblocks && !rd->big && !rd->failed && rd->jbuf)
			rd->ack_no = ++s->kv_ack_seq;
		rd->t_kv = cm_now_ns();
		rd->work = (struct cm_work){ .fn = commit_fn, .done = commit_done, .arg = rd };
		if (cm_worker_submit(s->commit, s->r, &rd->work)) {
			rd->commit_rc = -ESHUTDOWN;
			commit_done(rd);
			return;
		}
	}
	if (s->jblocks)
		ack_durable(s);
}

static void
fsync_done(struct cm_io *io, int res)
{
	struct os_round *rd = io->arg;
	struct os_store *s = rd->s;

	if (rd->t_fsync)
		s->c_fsync_ns += cm_now_ns() - rd->t_fsync;
	if (res < 0) {
		CM_ERR("device fsync failed: %s", strerror(-res));
		for (size_t i = 0; i < rd->n; i++)
			if (!rd->txns[i]->rc)
				rd->txns[i]->rc = -EIO;
		s->failed = true;
	}
	rd->synced = true;
	submit_commits(s);
	if (s->jblocks)
		kick_commit(s); /* the next round's record may go while this one is applied */
	dfr_release(s);
}

/*
 * Journal mode: device fsync number no completed (a round's own, or a bare
 * one). A failed one fails every round not yet committed (the store refuses
 * further transactions).
 */
static void
fsync_completed(struct os_store *s, uint64_t no, int res)
{
	struct os_round *rd;

	if (res < 0) {
		CM_ERR("device fsync failed: %s; refusing further transactions", strerror(-res));
		s->failed = true;
		TAILQ_FOREACH(rd, &s->rounds, link)
			if (!rd->submitted && !rd->big)
				rd->failed = true;
	} else if (no > s->fsync_done) {
		s->fsync_done = no;
	}
	submit_commits(s);
	kick_commit(s); /* a round may go while these are applied; data may be durable now */
	dfr_release(s);
}

static void
jfsync_done(struct cm_io *io, int res)
{
	struct os_round *rd = io->arg;
	struct os_store *s = rd->s;

	if (rd->t_fsync)
		s->c_fsync_ns += cm_now_ns() - rd->t_fsync;
	/* Its record's write or fsync failed: it never becomes durable here. */
	if (res < 0)
		rd->failed = true;
	rd->synced = true; /* its own fsync done (it may have been durable before: below) */
	fsync_completed(s, rd->fsync_no, res);
}

static void
dflush_done(struct cm_io *io, int res)
{
	struct os_store *s = io->arg;

	s->dflushing = false;
	fsync_completed(s, s->dflush_no, res);
}

/*
 * Journal mode: make sure an fsync numbered no or later will complete — one
 * issued already, or one a record in its write will issue; else a bare one.
 */
static void
want_fsync(struct os_store *s, uint64_t no)
{
	if (s->fsync_issued >= no || s->jwriting || s->dflushing || s->failed)
		return;
	s->dflushing = true;
	s->dflush_no = ++s->fsync_issued;
	s->c_fsyncs++;
	s->dflush_io.cb = dflush_done;
	s->dflush_io.arg = s;
	if (cm_io_fsync(s->r, &s->dflush_io, s->fd)) {
		/* Not from here (kick_commit is half-way): the next kick lets the waiting fail. */
		CM_ERR("device fsync could not be started; refusing further transactions");
		s->dflushing = false;
		s->failed = true;
	}
}

/*
 * Journal mode: whether another round may start its record now — while
 * fewer than OS_JNL_DEPTH records are not yet durable. Durable: an fsync
 * issued after the record's write is done (its own, or a later one that
 * completed first).
 */
static bool
jnl_room(const struct os_store *s)
{
	const struct os_round *rd;
	unsigned open = 0;

	TAILQ_FOREACH(rd, &s->rounds, link) {
		if (rd->big)
			return false;
		/*
		 * A dsync record is numbered when submitted, so a later number
		 * done says nothing of its own write: only its completion does.
		 */
		open += !rd->synced &&
			(s->dsync || !(rd->fsync_no && rd->fsync_no <= s->fsync_done));
	}
	return open < OS_JNL_DEPTH && s->nrounds <= OS_JNL_DEPTH;
}

/* Deferred writes applied but not retired: retire them in bulk, or when idle. */
#define RETIRE_BATCH 256

static void
kick_commit(struct os_store *s)
{
	struct os_round *rd;
	struct os_txn *t, *first = NULL;
	struct os_dfr *d;
	size_t n = 0, bytes = 0, cap = s->jblocks ? os_jnl_round_max(s) : SIZE_MAX;
	size_t nretire = 0;
	uint64_t want = 0;
	bool cow = false, retire;

	if (s->acking)
		return; /* ack_durable kicks once every callback ran */
	if (s->jblocks) {
		/*
		 * Journal: up to OS_JNL_DEPTH rounds writing their records and
		 * syncing the device while the ones before go into the memtable.
		 */
		if (!jnl_room(s))
			return;
	} else if (s->nrounds >= 2) {
		return;
	} else if (s->nrounds == 1 && TAILQ_FIRST(&s->rounds)->synced) {
		/*
		 * One round syncing the device while the one before commits to the
		 * KV; but never two waiting for the KV alone: a round that needs no
		 * fsync waits, and grows, while the one before commits.
		 */
		return;
	}
	TAILQ_FOREACH(t, &s->q, link) {
		size_t b;

		if (t->state == T_COMMITTING)
			continue;
		if (t->state != T_READY)
			break;
		b = s->jblocks ? os_jnl_txn_bytes(t) : 0;
		if (n && bytes + b > cap)
			break;
		bytes += b;
		cow |= t->nwrites > 0 && !t->rc;
		if (n++ == 0)
			first = t;
	}
	if (s->jblocks && gather(s, n, first, t))
		return; /* t's write completes soon: one record for all of them */
	/*
	 * Retiring a deferred record needs its device write durable, i.e. an
	 * fsync: do it when one is due anyway (copy-on-write data in the
	 * round; with the journal, any round), when many have piled up, or
	 * when nothing else is waiting.
	 */
	if (s->jblocks) {
		/*
		 * Journal: a record may retire a deferred write only once its
		 * device write is durable — else a device that kept the record
		 * and lost the write would lose acknowledged data.
		 */
		TAILQ_FOREACH(d, &s->dfr_applied, link) {
			if (d->need_fsync > s->fsync_done) {
				if (n == 0 && !s->nrounds && d->need_fsync > want)
					want = d->need_fsync; /* idle: retire soon */
				break;
			}
			nretire++;
		}
		if (want)
			want_fsync(s, want);
		retire = nretire && (n || nretire >= RETIRE_BATCH || !s->nrounds);
	} else {
		nretire = s->napplied;
		retire = s->napplied &&
			 (cow || s->napplied >= RETIRE_BATCH || (n == 0 && !s->nrounds));
	}
	if (s->jblocks && n == 1 && bytes > cap) {
		/*
		 * A transaction bigger than a record: it goes through RocksDB's
		 * WAL after a flush has put everything journaled before it into
		 * RocksDB's tables and the journal is trimmed (so no replay puts
		 * older batches over it) — once nothing else is in flight.
		 */
		if (s->nrounds || s->jflushing)
			return;
		retire = false;
	}
	if (n == 0 && !retire && !(s->jseal && s->jblocks))
		return;
	rd = calloc(1, sizeof(*rd));
	if (!rd || !(rd->txns = calloc(n + 1, sizeof(*rd->txns)))) {
		free(rd);
		return;
	}
	rd->s = s;
	TAILQ_INIT(&rd->retiring);
	TAILQ_FOREACH(t, &s->q, link) {
		if (rd->n == n)
			break;
		if (t->state == T_COMMITTING)
			continue;
		rd->txns[rd->n++] = t;
	}
	rd->big = s->jblocks && n == 1 && bytes > cap; /* alone in flight: no record, no flush */
	if (s->jblocks && !rd->big) {
		if (retire) {
			char key[16];
			size_t k = 0;

			rd->retire = rocksdb_writebatch_create();
			TAILQ_FOREACH(d, &s->dfr_applied, link) {
				if (k++ == nretire)
					break;
				rocksdb_writebatch_delete(rd->retire, key,
							  os_key_deferred(key, d->seq));
			}
		}
		/* A store that refuses transactions writes no record: the round fails. */
		if (!s->failed && os_jnl_place(s, rd)) {
			/* No room until a flush trims the journal (or no memory): later. */
			if (rd->retire)
				rocksdb_writebatch_destroy(rd->retire);
			free(rd->txns);
			free(rd);
			return;
		}
	}
	for (size_t i = 0; i < rd->n; i++) {
		rd->txns[i]->state = T_COMMITTING;
		if (s->failed && !rd->txns[i]->rc)
			rd->txns[i]->rc = -EIO; /* see write_done */
	}
	for (size_t k = 0; retire && k < nretire; k++) {
		d = TAILQ_FIRST(&s->dfr_applied);
		TAILQ_REMOVE(&s->dfr_applied, d, link);
		TAILQ_INSERT_TAIL(&rd->retiring, d, link);
		s->napplied--;
	}
	TAILQ_INSERT_TAIL(&s->rounds, rd, link);
	s->nrounds++;
	s->c_groups++;
	rd->fsync_io.cb = fsync_done;
	rd->fsync_io.arg = rd;
	if (s->jblocks && !rd->big && !rd->jbuf) {
		for (size_t i = 0; i < rd->n; i++)
			if (!rd->txns[i]->rc)
				rd->txns[i]->rc = -EIO;
		fsync_done(&rd->fsync_io, 0);
	} else if (s->jblocks && !rd->big) {
		/*
		 * The record, then an fsync for it, or its RWF_DSYNC write
		 * (os_store.dsync): its data and what it retires are durable.
		 */
		s->dirty = false;
		os_jnl_write(s, rd, jfsync_done);
	} else if ((s->dirty || rd->big) && (cow || retire)) {
		/* A round of deferred writes alone is durable with the KV's own sync. */
		s->dirty = false;
		s->c_fsyncs++;
		rd->t_fsync = cm_now_ns();
		if (cm_io_fsync(s->r, &rd->fsync_io, s->fd))
			fsync_done(&rd->fsync_io, -EIO);
	} else {
		fsync_done(&rd->fsync_io, 0);
	}
}

void
os_kick_commit(struct os_store *s)
{
	kick_commit(s);
}

void
os_drain(struct os_store *s)
{
	/* Everything queued commits; every deferred write is applied and retired. */
	while (s->inflight || s->nrounds || !TAILQ_EMPTY(&s->dfr_waiting) ||
	       !TAILQ_EMPTY(&s->dfr_applying) || !TAILQ_EMPTY(&s->dfr_applied) ||
	       !TAILQ_EMPTY(&s->reads) || s->jflushing || s->dflushing) {
		kick_commit(s);
		cm_reactor_run_once(s->r, 10);
	}
	release_held(s);
}

void
os_umount(struct os_store *s)
{
	if (!s)
		return;
	os_drain(s);
	if (s->jblocks && cm_timer_armed(&s->jseal_timer))
		cm_timer_cancel(s->r, &s->jseal_timer);
	if (os_jnl_checkpoint(s))
		CM_WARN("%s: journal not trimmed at unmount; the next mount replays it", s->path);
	while (!TAILQ_EMPTY(&s->held)) {
		struct os_held *h = TAILQ_FIRST(&s->held);

		TAILQ_REMOVE(&s->held, h, link);
		free(h);
	}
	CM_NOTICE("unmounted %s: %" PRIu64 " transactions in %" PRIu64 " commit rounds, %" PRIu64
		  " device fsyncs (%.3f ms each), KV commit %.3f ms, "
		  "synced write %.3f ms per round, prepare %.3f ms per transaction (%" PRIu64
		  " on the reactor, %" PRIu64 " sent on to the prepare thread)",
		  s->path, s->c_commits, s->c_groups, s->c_fsyncs,
		  s->c_fsyncs ? (double)s->c_fsync_ns / 1e6 / (double)s->c_fsyncs : 0.0,
		  s->c_groups ? (double)s->c_kv_ns / 1e6 / (double)s->c_groups : 0.0,
		  s->c_groups ? (double)s->c_kv_sync_ns / 1e6 / (double)s->c_groups : 0.0,
		  s->c_commits ? (double)s->c_prep_ns / 1e6 / (double)s->c_commits : 0.0,
		  s->c_prep_inline, s->c_prep_retry);
	if (s->jblocks)
		CM_NOTICE("unmounted %s: journal of %" PRIu64 " MiB: %" PRIu64
			  " MiB of records, %" PRIu64 " flushes, %" PRIu64 " waits for room",
			  s->path, s->jblocks * s->B >> 20, s->c_jbytes >> 20, s->c_jflushes,
			  s->c_jwaits);
	cm_worker_pool_destroy(s->kv);
	cm_worker_pool_destroy(s->commit);
	cm_worker_pool_destroy(s->rd);
	cm_worker_pool_destroy(s->flusher);
	s->kv = s->commit = s->rd = s->flusher = NULL;
	os_store_free(s);
}
