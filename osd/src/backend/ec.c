/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Erasure-coded pools: their profiles and the backend table. An object is
 * cut into k data and m parity shards, acting OSD i holding shard i; the
 * primary reads k shards (backend/ec_read.c), rewrites whole stripes
 * (backend/ec_write.c), keeps undo information until every shard has a
 * change, and rebuilds shards for recovery. docs/design/ec.md.
 */
#include "osd_int.h"
#include "backend/ec.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(ec);

/* ---------- profiles ---------- */

const struct osd_ec *
osd__ec_pool_profile(struct osd *o, const Cairn__Map__Pool *p)
{
	struct osd_pool_ec **na, *e;

	if (!p->erasure)
		return NULL;
	for (size_t i = 0; i < o->necp; i++)
		if (o->ecp[i]->pool == p->id)
			return &o->ecp[i]->ec;
	e = calloc(1, sizeof(*e));
	na = e ? realloc(o->ecp, (o->necp + 1) * sizeof(*na)) : NULL;
	if (!na || osd_ec_init(&e->ec, p->ec_k, p->ec_m, p->stripe_unit ? p->stripe_unit : 4096)) {
		CM_ERR("pool %" PRId64 ": EC profile %u+%u/%u unusable", p->id, p->ec_k, p->ec_m,
		       p->stripe_unit);
		free(e);
		if (na)
			o->ecp = na;
		return NULL;
	}
	e->pool = p->id;
	o->ecp = na;
	o->ecp[o->necp++] = e;
	return &e->ec;
}

void
osd__ec_free_all(struct osd *o)
{
	osd__ec_abort_all(o);
	for (size_t i = 0; i < o->necp; i++) {
		osd_ec_fini(&o->ecp[i]->ec);
		free(o->ecp[i]);
	}
	free(o->ecp);
	o->ecp = NULL;
	o->necp = 0;
}

/*
 * EC primary, no change in flight: entries up to roll_ok are on every shard
 * but the shards were not told (no change came since). Tell them with a
 * RepOp without an entry, so the stash of a PG's last change (a removed
 * object's whole data) does not stay until the next one.
 */
static void
ec_roll_forward(struct osd_pg *pg)
{
	Cairn__Osd__RepOp ro = CAIRN__OSD__REP_OP__INIT;
	Cairn__Osd__Version rv;
	struct osd *o = pg->osd;

	if (!pg->ec || pg->primary != o->id || pg->state != OSD_PG_ACTIVE || pg->roll_stuck ||
	    !TAILQ_EMPTY(&pg->repops) || osd_ver_cmp(&pg->roll_ok, &pg->roll_sent) <= 0 ||
	    !pg->roll_ok.seq)
		return;
	pg->roll_sent = pg->roll_ok;
	osd__roll_local(pg, &pg->roll_ok);
	ro.pool = pg->pool;
	ro.seed = pg->seed;
	ro.epoch = o->epoch;
	osd_ver_to_pb(&pg->roll_ok, &rv);
	ro.roll_to = &rv;
	for (int i = 0; i < pg->nacting; i++)
		if (pg->acting[i] != o->id && pg->acting[i] >= 0)
			osd__send_pb(osd__peer_conn(o, pg->acting[i], pg->seed), OSD_MSG_REP_OP, 0,
				     &ro.base, NULL);
}

static void
ec_attach(struct osd *o, struct osd_pg *pg, const Cairn__Map__Pool *pool)
{
	pg->ec = osd__ec_pool_profile(o, pool);
}

static uint8_t
ec_shard_of(int up_pos, int acting_pos)
{
	(void)acting_pos;
	return (uint8_t)up_pos;
}

static uint32_t
ec_label(const struct osd_pg *pg)
{
	return pg->ec && pg->my_shard >= 0 ? (uint32_t)pg->my_shard + 1 : 0;
}

static uint32_t
ec_slot_label(const struct osd_pg *pg, int t)
{
	return (uint32_t)pg->shard[t] + 1;
}

/* k shards can be read (writes wait for min_size, ec_writable). A pool whose
 * profile is unusable (logged when it was made) never peers. */
static unsigned
ec_peer_min(const struct osd_pg *pg)
{
	return pg->ec ? pg->ec->k : UINT_MAX;
}

static bool
ec_writable(const struct osd_pg *pg)
{
	return !pg->ec || (unsigned)pg->nacting >= pg->min_size;
}

/* Metadata (omap) belongs in replicated pools. */
static int
ec_check_op(const struct osd_pg *pg, const Cairn__Osd__OsdOp *q)
{
	int rc = pg->ec ? 0 : -ENOMEM;

	for (size_t i = 0; i < q->n_ops && !rc; i++)
		if (q->ops[i]->op >= OSD_OP_OMAP_GET && q->ops[i]->op <= OSD_OP_OMAP_SET_HEADER)
			rc = -EOPNOTSUPP;
		else if (q->ops[i]->op == OSD_OP_OMAP_RM_RANGE ||
			 q->ops[i]->op == OSD_OP_OMAP_CMP ||
			 (q->ops[i]->op == OSD_OP_NUM && q->ops[i]->omap))
			rc = -EOPNOTSUPP;
	return rc;
}

static bool
ec_fast_path(struct osd_op *op)
{
	(void)op;
	return false;
}

/* Writes need the size and version first (and reads the logical size). */
static bool
ec_reads_state(const struct osd_op *op)
{
	(void)op;
	return true;
}

/* On the worker: an EC shard's size is not the object's ("s" is). */
static void
ec_state_fn(struct osd_op *op)
{
	struct os_kv v = { 0 };

	op->size = 0;
	if (os_getattr(op->osd->store, op->pg->cid, op->req->oid, "s", &v) == 0) {
		if (v.val && v.vlen == 8)
			op->size = osd_get_be64(v.val);
		osd_kv_clear(&v);
	}
}

/* An entry says how each shard undoes it and which OSD each shard went to;
 * the shards may drop the stashes of entries up to roll_ok. */
static void
ec_log_entry(struct osd_op *op, Cairn__Osd__LogEntry *le, uint32_t *sent, struct osd_ver *roll)
{
	struct osd_pg *pg = op->pg;

	le->undo = op->undo;
	le->undo_off = op->undo_off;
	le->undo_len = op->undo_len;
	for (int i = 0; i < pg->nacting; i++)
		if (pg->acting[i] >= 0 && pg->shard[i] < OSD_EC_MAX_SHARDS) {
			sent[pg->shard[i]] = (uint32_t)pg->acting[i] + 1;
			le->n_sent_to = CM_MAX(le->n_sent_to, (size_t)pg->shard[i] + 1);
		}
	le->sent_to = sent;
	if (!pg->roll_stuck)
		*roll = pg->roll_ok;
	op->split = op->osd->cfg->debug_split && !strncmp(op->req->oid, "split-", 6);
}

/* An EC primary backfilling its own shard lists a complete one. */
static bool
ec_lists_own_copy(const struct osd_pg *pg)
{
	return pg->ec && pg->in_store && !pg->incomplete && !pg->missing.n;
}

/* The shards hear it from ec_roll_forward. */
static void
ec_activated(struct osd_pg *pg)
{
	(void)pg;
}

/* Our shard holds 1/k of the data (plus padding). */
static uint64_t
ec_stat_bytes(const struct osd_pg *pg, uint64_t bytes)
{
	return pg->ec ? bytes * pg->ec->k : bytes;
}

static int
ec_choose_auth(struct osd_pg *pg)
{
	osd__ec_plan_auth(pg);
	return pg->auth;
}

/* A shard holds its part of every write of its intervals, complete or not. */
static bool
ec_copy_heard(const struct osd_pg *pg, const struct osd_pg_peer *p)
{
	(void)pg;
	(void)p;
	return true;
}

/* The primary rebuilds shards, whoever is authoritative. */
static bool
ec_serve_recovering(const struct osd_pg *pg, int auth, int self, bool backfill)
{
	(void)pg;
	(void)auth;
	(void)self;
	(void)backfill;
	return true;
}

static void
ec_no_auth(const struct osd_pg *pg)
{
	CM_WARN("%s: fewer than k=%u complete shards among the acting OSDs: waiting", pg->cid,
		pg->ec->k);
}

/* A shard held by a prior OSD is not the one the acting set lacks (its
 * place moved): every backfill of an EC PG restores redundancy. */
static bool
ec_degraded(const struct osd_pg *pg)
{
	(void)pg;
	return true;
}

static int32_t
ec_rec_source(const struct osd_pg *pg)
{
	return pg->osd->id;
}

/* The primary rebuilds from the shards, even while its own is incomplete. */
static bool
ec_source_ok(const struct osd_pg *pg)
{
	return pg->ec || (!pg->incomplete && !pg->missing.n);
}

/* An incomplete own shard cannot be listed: a complete one is (job_list_remote). */
static bool
ec_list_remote(const struct osd_pg *pg)
{
	return pg->incomplete || pg->missing.n;
}

const struct osd_backend osd__backend_ec = {
	.name = "erasure",
	.attach = ec_attach,
	.shard_of = ec_shard_of,
	.shard_label = ec_label,
	.slot_label = ec_slot_label,
	.peer_min = ec_peer_min,
	.writable = ec_writable,
	.check_op = ec_check_op,
	.fast_path = ec_fast_path,
	.reads_state = ec_reads_state,
	.state_fn = ec_state_fn,
	.read = osd__ec_op_read,
	.write = osd__ec_op_write,
	.log_entry = ec_log_entry,
	.lists_own_copy = ec_lists_own_copy,
	.activated = ec_activated,
	.tick = ec_roll_forward,
	.stat_bytes = ec_stat_bytes,
	.choose_auth = ec_choose_auth,
	.copy_heard = ec_copy_heard,
	.plan_divergent = osd__ec_plan_rollback,
	.serve_recovering = ec_serve_recovering,
	.no_auth = ec_no_auth,
	.rec_source = ec_rec_source,
	.degraded = ec_degraded,
	.source_ok = ec_source_ok,
	.list_remote = ec_list_remote,
	.push_step = osd__push_step_ec,
	.peer_reset = osd__ec_peer_reset,
	.abort_all = osd__ec_abort_all,
	.free_all = osd__ec_free_all,
};
