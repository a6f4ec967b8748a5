/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Group commit of index ops (docs/design/rgw.md §3.2). Every PUT writes
 * its index shard twice (the pending marker, the commit) and a bucket's
 * keys written in order all fall in one shard, so one object takes every
 * writer's ops; the OSD applies them one at a time. Here each thread
 * keeps at most one op in flight per shard: the items that arrive
 * meanwhile wait and go together as one compound op when it completes
 * (no added latency when a shard is idle). A compound op is atomic: if it
 * fails (a guard, a compare, a quota bound), every item of it is sent
 * again alone, so each gets exactly the result it would have had alone.
 */
#include "rgw_int.h"
#include "cm/log.h"

CM_LOG_SUBSYS(rgw);

struct shardq {
	char oid[128];
	bool busy;
	struct rgw_batch_item *head, *tail;
	struct shardq *next;
	bool seen; /* used since the last trim */
};

/* The items of one op in flight. */
struct sent {
	struct rgw_thr *t;
	struct shardq *sq; /* NULL: an item sent alone (after its batch failed) */
	struct rgw_batch_item *items;
	unsigned n;
};

static void batch_send(struct rgw_thr *t, struct shardq *sq, struct rgw_batch_item *items,
		       unsigned n);

static void
solo_done(void *arg, int rc)
{
	struct sent *s = arg;
	struct rgw_batch_item *it = s->items;

	free(s);
	it->done(it->arg, rc);
}

/* Send one item alone (outside its shard's queue). */
static void
solo_send(struct rgw_thr *t, struct rgw_batch_item *it)
{
	struct sent *s = calloc(1, sizeof(*s));
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!s || !op) {
		free(s);
		cairn_op_release(op);
		it->done(it->arg, -ENOMEM);
		return;
	}
	it->next = NULL;
	s->t = t;
	s->items = it;
	s->n = 1;
	it->build(it->arg, op, true);
	if ((rc = rgw__aio(t, it->io, it->oid, op, solo_done, s))) {
		free(s);
		it->done(it->arg, rc);
	}
}

static bool
same_key(const struct rgw_batch_item *a, const struct rgw_batch_item *b)
{
	return a->klen == b->klen && !memcmp(a->key, b->key, a->klen);
}

/*
 * The queue's first items, up to RGW_BATCH_MAX, stopping before a key
 * already taken and before an item planned with another range of the
 * shard: the batch's one guard is the first item's, and an item planned
 * with a stale shard map must fail its own guard, not pass a fresh one.
 */
static struct rgw_batch_item *
take(struct shardq *sq, unsigned *n)
{
	struct rgw_batch_item *h = sq->head, *e = h;
	unsigned k = 1;

	while (e->next && k < RGW_BATCH_MAX) {
		bool dup = e->next->rlen != h->rlen ||
			   (h->rlen && memcmp(e->next->range, h->range, h->rlen));

		for (struct rgw_batch_item *x = h; x != e->next && !dup; x = x->next)
			dup = same_key(x, e->next);
		if (dup)
			break;
		e = e->next;
		k++;
	}
	sq->head = e->next;
	if (!sq->head)
		sq->tail = NULL;
	e->next = NULL;
	*n = k;
	return h;
}

static void
batch_done(void *arg, int rc)
{
	struct sent *s = arg;
	struct rgw_thr *t = s->t;
	struct shardq *sq = s->sq;
	struct rgw_batch_item *it = s->items, *next;
	unsigned n = s->n;

	free(s);
	/* What is queued goes next, before the callbacks add more behind it. */
	if (sq->head) {
		unsigned k;
		struct rgw_batch_item *h = take(sq, &k);

		batch_send(t, sq, h, k);
	} else {
		sq->busy = false;
	}
	if (n > 1 && (rc == -ECANCELED || rc == -EOVERFLOW || rc == -ENOENT)) {
		/* (a guard, a compare or a bound failed: nothing was written, and which item
		 * failed is not known: each goes again alone; any other error may have been
		 * applied, and is every item's) */
		for (; it; it = next) {
			next = it->next;
			solo_send(t, it);
		}
		return;
	}
	for (; it; it = next) {
		next = it->next;
		it->done(it->arg, rc);
	}
}

static void
batch_send(struct rgw_thr *t, struct shardq *sq, struct rgw_batch_item *items, unsigned n)
{
	struct sent *s = calloc(1, sizeof(*s));
	cairn_op_t *op = cairn_op_create();
	int64_t db = 0, dob = 0, qb = 0, qo = 0;
	bool usage = false, grow_b = false, grow_o = false;
	int rc;

	sq->busy = true;
	if (!s || !op) {
		free(s);
		cairn_op_release(op);
		s = NULL;
		rc = -ENOMEM;
		goto fail;
	}
	s->t = t;
	s->sq = sq;
	s->items = items;
	s->n = n;
	if (n == 1) {
		items->build(items->arg, op, true);
	} else {
		/* the shard guard once, each item's sub-ops, the counters summed */
		items->guard(items->arg, op);
		for (struct rgw_batch_item *it = items; it; it = it->next) {
			it->build(it->arg, op, false);
			if (it->usage) {
				usage = true;
				db += it->dbytes;
				dob += it->dobjs;
				/* (bounded if any item grows: over a lowered quota, a PUT batched
				 * with DELETEs fails as it would alone) */
				grow_b |= it->dbytes > 0;
				grow_o |= it->dobjs > 0;
				qb = it->quota_bytes;
				qo = it->quota_objects;
			}
		}
		if (usage)
			rgw__usage_add(op, db, dob, grow_b ? qb : 0, grow_o ? qo : 0);
	}
	if (!(rc = rgw__aio(t, items->io, sq->oid, op, batch_done, s)))
		return;
	free(s);
fail:
	/* (nothing in flight for the shard: send what is queued behind, then fail these) */
	sq->busy = false;
	if (sq->head) {
		unsigned k;
		struct rgw_batch_item *h = take(sq, &k);

		batch_send(t, sq, h, k);
	}
	for (struct rgw_batch_item *it = items, *next; it; it = next) {
		next = it->next;
		it->done(it->arg, rc);
	}
}

/* Forget the idle shards not used since the last trim (the list stays short). */
static void
trim(struct rgw_thr *t)
{
	for (struct shardq **pp = &t->shards, *sq; (sq = *pp);) {
		if (!sq->busy && !sq->head && !sq->seen) {
			*pp = sq->next;
			free(sq);
			continue;
		}
		sq->seen = false;
		pp = &sq->next;
	}
	t->nshards_new = 0;
}

void
rgw__batch(struct rgw_thr *t, struct rgw_batch_item *it)
{
	struct shardq *sq, **pp;

	it->next = NULL;
	for (pp = &t->shards; (sq = *pp); pp = &sq->next)
		if (!strcmp(sq->oid, it->oid))
			break;
	if (sq && pp != &t->shards) {
		/* (the busiest shards stay near the front) */
		*pp = sq->next;
		sq->next = t->shards;
		t->shards = sq;
	}
	if (!sq) {
		if (++t->nshards_new > 64)
			trim(t);
		if (!(sq = calloc(1, sizeof(*sq)))) {
			solo_send(t, it);
			return;
		}
		snprintf(sq->oid, sizeof(sq->oid), "%s", it->oid);
		sq->next = t->shards;
		t->shards = sq;
	}
	sq->seen = true;
	if (sq->busy) {
		if (sq->tail)
			sq->tail->next = it;
		else
			sq->head = it;
		sq->tail = it;
		return;
	}
	batch_send(t, sq, it, 1);
}

void
rgw__batch_fini(struct rgw_thr *t)
{
	while (t->shards) {
		struct shardq *sq = t->shards;

		t->shards = sq->next;
		free(sq);
	}
}
