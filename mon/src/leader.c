/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The leader's logic (mon/leader.h): per-OSD tracks (last beacon, failure
 * reports, rates), the down/out decisions on virtual-able time, the map
 * edit that applies them, the `status` figures, and the campaign.
 */
#include "mon/leader.h"
#include "mon/ec_pin.h"
#include "mon/map_store.h"
#include "mon/osdmap.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(mon);

#define MS           UINT64_C(1000000)
#define REPORT_FRESH (10000 * MS) /* reports live at least 2x this (or 2x the report grace) */

struct report {
	int32_t reporter;
	uint64_t failed_since_ns, recv_ns;
	bool immediate; /* its connection was refused: counts at once */
};

struct track {
	bool up;           /* as of the last map */
	uint64_t up_since; /* its incarnation, as of the last map */
	uint64_t last_beacon_ns;
	Cairn__Mon__OsdBeacon *b; /* the last beacon (stats) */
	uint64_t b_ns;
	double r_ops, r_in, r_out, r_robj, r_rbytes; /* rates between its last two */
	struct report rep[MON_LEADER_MAX_REPORTS];
	int nrep;
};

struct mon_leader {
	struct mon_leader_opts o;
	char *fsid, *id, *addr; /* o's strings, copied */
	struct track *track;    /* by OSD id */
	int ntrack;
	/* Reactor: who leads, as of the last round_done. */
	bool leader;
	char leader_name[64], leader_addr[128];
	/* The worker's while a round runs; the reactor's in round_done. */
	int64_t lease_id;
	uint64_t last_renew_ns;
};

void
mon_leader_opts_init(struct mon_leader_opts *o, size_t size)
{
	memset(o, 0, size);
	o->opts_size = size;
	o->osd_grace_ms = 20000;
	o->report_grace_ms = 0;
	o->down_out_ms = 600000;
	o->min_reporters = 2;
	o->lease_ttl_ms = 10000;
}

static char *
dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

int
mon_leader_create(const struct mon_leader_opts *o, struct mon_leader **lp)
{
	struct mon_leader *l;

	if (!o || !o->osd_grace_ms || !o->min_reporters)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	memcpy(&l->o, o, CM_MIN(o->opts_size, sizeof(l->o)));
	l->fsid = dup_or_empty(o->fsid);
	l->id = dup_or_empty(o->id);
	l->addr = dup_or_empty(o->addr);
	if (!l->fsid || !l->id || !l->addr) {
		mon_leader_destroy(l);
		return -ENOMEM;
	}
	l->o.fsid = l->fsid;
	l->o.id = l->id;
	l->o.addr = l->addr;
	*lp = l;
	return 0;
}

void
mon_leader_destroy(struct mon_leader *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->ntrack; i++)
		if (l->track[i].b)
			cairn__mon__osd_beacon__free_unpacked(l->track[i].b, NULL);
	free(l->track);
	free(l->fsid);
	free(l->id);
	free(l->addr);
	free(l);
}

/* ---------- tracks ---------- */

static struct track *
track_get(struct mon_leader *l, int32_t id)
{
	if (id < 0 || id > (1 << 20))
		return NULL;
	if (id >= l->ntrack) {
		int n = CM_MAX(id + 1, l->ntrack * 2);
		struct track *t = realloc(l->track, sizeof(*t) * (size_t)n);

		if (!t)
			return NULL;
		memset(t + l->ntrack, 0, sizeof(*t) * (size_t)(n - l->ntrack));
		l->track = t;
		l->ntrack = n;
	}
	return &l->track[id];
}

/* Keep b as t's last beacon; rates from the counters' change since the one before. */
static void
track_beacon(struct track *t, Cairn__Mon__OsdBeacon *b, uint64_t now)
{
	static const double ns = 1e9;

	if (t->b) {
		Cairn__Mon__OsdBeacon *p = t->b;
		double dt = (double)(now - t->b_ns) / ns;

		if (dt > 0.05 && b->ops >= p->ops && b->rec_bytes >= p->rec_bytes) {
			t->r_ops = (double)(b->ops - p->ops) / dt;
			t->r_in = (double)(b->bytes_in - p->bytes_in) / dt;
			t->r_out = (double)(b->bytes_out - p->bytes_out) / dt;
			t->r_robj = (double)(b->rec_objects - p->rec_objects) / dt;
			t->r_rbytes = (double)(b->rec_bytes - p->rec_bytes) / dt;
		} else if (dt > 0.05) { /* it restarted */
			t->r_ops = t->r_in = t->r_out = t->r_robj = t->r_rbytes = 0;
		}
		cairn__mon__osd_beacon__free_unpacked(p, NULL);
	}
	t->b = b;
	t->b_ns = now;
}

void
mon_leader_map(struct mon_leader *l, const Cairn__Map__OsdMap *m, uint64_t now_ns)
{
	for (size_t i = 0; i < m->n_osds; i++) {
		struct track *t = track_get(l, m->osds[i]->id);

		if (!t)
			continue;
		if (m->osds[i]->up && !t->up)
			t->last_beacon_ns = now_ns;
		if (!m->osds[i]->up || m->osds[i]->up_since != t->up_since)
			t->nrep = 0; /* reports were about another incarnation */
		t->up = m->osds[i]->up;
		t->up_since = m->osds[i]->up_since;
	}
}

int
mon_leader_beacon(struct mon_leader *l, Cairn__Mon__OsdBeacon *b, uint64_t now_ns)
{
	struct track *t;

	if (b->osd_id < 0 || b->osd_id > (1 << 20))
		return -EINVAL;
	t = track_get(l, b->osd_id);
	if (!t)
		return -ENOMEM;
	t->last_beacon_ns = now_ns;
	track_beacon(t, b, now_ns);
	return 0;
}

void
mon_leader_failure(struct mon_leader *l, const Cairn__Mon__OsdFailure *f, uint64_t now_ns)
{
	struct track *t = track_get(l, f->target);
	int k;

	if (!t || f->reporter == f->target)
		return;
	if (f->target_up_since && f->target_up_since < t->up_since) {
		/* about an incarnation before the one up now (the reporter's map
		 * was older): its refused connection said nothing of this one */
		CM_INFO("osd.%d's report on osd.%d is about an older incarnation (up since %" PRIu64
			", now %" PRIu64 "): ignored",
			f->reporter, f->target, f->target_up_since, t->up_since);
		return;
	}
	for (k = 0; k < t->nrep && t->rep[k].reporter != f->reporter; k++)
		;
	if (f->alive) {
		if (k < t->nrep)
			t->rep[k] = t->rep[--t->nrep];
		return;
	}
	if (k == t->nrep) {
		if (t->nrep == MON_LEADER_MAX_REPORTS)
			return;
		t->nrep++;
		t->rep[k].failed_since_ns =
			now_ns - CM_MIN((uint64_t)f->failed_for_ms * MS, now_ns);
	}
	t->rep[k].reporter = f->reporter;
	t->rep[k].recv_ns = now_ns;
	t->rep[k].immediate |= f->immediate;
	CM_INFO("osd.%d reports osd.%d failed for %u ms%s", f->reporter, f->target,
		f->failed_for_ms, f->immediate ? " (connection refused)" : "");
}

void
mon_leader_booted(struct mon_leader *l, int32_t id, uint64_t now_ns)
{
	struct track *t = track_get(l, id);

	if (t) {
		t->last_beacon_ns = now_ns;
		t->nrep = 0;
	}
}

/* ---------- decisions ---------- */

/* Is host h among the first n of v? */
static bool
host_in(const char *const *v, unsigned n, const char *h)
{
	for (unsigned i = 0; i < n; i++)
		if (strcmp(v[i], h) == 0)
			return true;
	return false;
}

/*
 * How many reporters (from distinct hosts) mark `target` down: min_reporters,
 * but no more than the hosts with an up OSD other than it (one on a cluster
 * of fewer hosts), and at least one.
 */
static unsigned
reporters_needed(const struct mon_leader *l, const Cairn__Map__OsdMap *m, int32_t target)
{
	const char *hosts[128];
	unsigned n = 0;

	for (size_t i = 0; i < m->n_osds && n < l->o.min_reporters && n < 128; i++) {
		const Cairn__Map__Osd *o = m->osds[i];
		const char *h = o->host ? o->host : "";

		if (o->up && o->id != target && !host_in(hosts, n, h))
			hosts[n++] = h;
	}
	return CM_MAX(1u, CM_MIN(l->o.min_reporters, n));
}

/* The distinct hosts of t's reports that count at now (report grace passed, or immediate; fresh).
 */
static unsigned
reporter_hosts(const struct track *t, const Cairn__Map__OsdMap *m, uint64_t now, uint64_t rgrace)
{
	const char *hosts[MON_LEADER_MAX_REPORTS];
	unsigned n = 0;

	for (int k = 0; k < t->nrep; k++) {
		const struct report *r = &t->rep[k];
		const Cairn__Map__Osd *o = mon_osd_find(m, r->reporter);
		const char *h;

		if (!o || now - r->recv_ns >= 2 * CM_MAX(rgrace, REPORT_FRESH) ||
		    (!r->immediate && now - r->failed_since_ns < rgrace))
			continue;
		h = o->host ? o->host : "";
		if (!host_in(hosts, n, h))
			hosts[n++] = h;
	}
	return n;
}

/* A fresh report on t says a connection to it was refused: its process is gone. */
static bool
refused(const struct track *t, uint64_t now, uint64_t rgrace)
{
	for (int k = 0; k < t->nrep; k++)
		if (t->rep[k].immediate &&
		    now - t->rep[k].recv_ns < 2 * CM_MAX(rgrace, REPORT_FRESH))
			return true;
	return false;
}

/* PG merge and EC pin steps, from what the up OSDs last reported of the PGs they lead. */
static int
merge_decide(const struct mon_leader *l, const Cairn__Map__OsdMap *m, uint64_t now_ns,
	     struct mon_leader_decision *d)
{
	struct mon_merge_rep *reps = NULL;
	size_t n = 0, cap = 0;
	int rc;
	bool any = false;

	for (size_t i = 0; i < m->n_pools; i++)
		any |= m->pools[i]->pg_num_target != 0 ||
		       m->pools[i]->pgp_num < m->pools[i]->pg_num;
	if (!any && !m->n_pg_pins)
		return 0;
	for (int i = 0; i < l->ntrack; i++) {
		const struct track *t = &l->track[i];

		if (!t->up || !t->b)
			continue;
		for (size_t k = 0; k < t->b->n_pgs; k++) {
			const Cairn__Mon__PgStat *p = t->b->pgs[k];

			if (n == cap) {
				size_t ncap = cap ? 2 * cap : 256;
				struct mon_merge_rep *g = realloc(reps, ncap * sizeof(*g));

				if (!g) {
					free(reps);
					mon_leader_decision_fini(d);
					return -ENOMEM;
				}
				reps = g;
				cap = ncap;
			}
			reps[n++] = (struct mon_merge_rep){
				.pool = p->pool,
				.seed = p->seed,
				.epoch = p->epoch,
				.clean = p->state && strcmp(p->state, "active+clean") == 0,
				.ready = p->merge_ready,
				.lu_epoch = p->lu_epoch,
				.lu_seq = p->lu_seq,
			};
		}
	}
	rc = mon_merge_decide(m, reps, n, now_ns, &d->merges, &d->nmerges);
	if (!rc)
		rc = mon_pin_decide(m, reps, n, &d->pins, &d->npins);
	free(reps);
	if (rc)
		mon_leader_decision_fini(d);
	return rc;
}

int
mon_leader_decide(struct mon_leader *l, const Cairn__Map__OsdMap *m, uint64_t now_ns,
		  struct mon_leader_decision *d)
{
	uint64_t now = now_ns, grace = l->o.osd_grace_ms * MS;
	uint64_t rgrace = l->o.report_grace_ms * MS;

	memset(d, 0, sizeof(*d));
	d->epoch = m->epoch;
	d->down = calloc(m->n_osds + 1, sizeof(*d->down));
	d->down_dead = calloc(m->n_osds + 1, sizeof(*d->down_dead));
	d->out = calloc(m->n_osds + 1, sizeof(*d->out));
	if (!d->down || !d->down_dead || !d->out) {
		mon_leader_decision_fini(d);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->n_osds; i++) {
		const Cairn__Map__Osd *o = m->osds[i];
		struct track *tr = track_get(l, o->id);
		unsigned hosts, need;

		if (!tr)
			continue;
		if (o->up) {
			if (now - tr->last_beacon_ns >= grace) {
				CM_NOTICE("osd.%d: no beacon for %" PRIu64 " ms: marking down",
					  o->id, (now - tr->last_beacon_ns) / MS);
				d->down[d->ndown++] = o->id;
				continue;
			}
			if (!tr->nrep)
				continue;
			hosts = reporter_hosts(tr, m, now, rgrace);
			need = reporters_needed(l, m, o->id);
			if (hosts >= need) {
				CM_NOTICE(
					"osd.%d: reported failed by peers on %u host(s) (%u needed): "
					"marking down",
					o->id, hosts, need);
				d->down_dead[d->ndown] = refused(tr, now, rgrace);
				d->down[d->ndown++] = o->id;
			}
		} else if (o->in && o->down_stamp_ns &&
			   now >= o->down_stamp_ns + l->o.down_out_ms * MS) {
			d->out[d->nout++] = o->id;
		}
	}
	return merge_decide(l, m, now_ns, d);
}

void
mon_leader_decide_expiry(struct mon_leader_decision *d, const Cairn__Map__OsdMap *m,
			 uint64_t wall_ns)
{
	d->wall_ns = wall_ns;
	d->nexpire = 0;
	for (size_t i = 0; i < m->n_blocklist; i++)
		if (m->blocklist[i]->until_ns && m->blocklist[i]->until_ns <= wall_ns) {
			CM_NOTICE("blocklist: %s expired: dropping it", m->blocklist[i]->entity);
			d->nexpire++;
		}
}

void
mon_leader_decision_fini(struct mon_leader_decision *d)
{
	free(d->down);
	free(d->down_dead);
	free(d->out);
	d->down = d->out = NULL;
	d->down_dead = NULL;
	d->ndown = d->nout = 0;
	mon_merge_edits_free(d->merges, d->nmerges);
	d->merges = NULL;
	d->nmerges = 0;
	free(d->pins);
	d->pins = NULL;
	d->npins = 0;
}

unsigned
mon_leader_apply(const struct mon_leader *l, const struct mon_leader_decision *d,
		 Cairn__Map__OsdMap *m, uint64_t now_ns)
{
	uint64_t out_ns = l->o.down_out_ms * MS;
	unsigned changed = 0;

	for (size_t i = 0; i < d->ndown && !(m->flags & MON_FLAG_NODOWN); i++) {
		Cairn__Map__Osd *o = mon_osd_find(m, d->down[i]);

		/* Not if it rebooted after the map the decision was made on. */
		if (o && o->up && o->up_since <= d->epoch &&
		    mon_osd_mark_down(m, o->id, now_ns) == 0) {
			o->dead = d->down_dead && d->down_dead[i];
			changed++;
		}
	}
	for (size_t i = 0; i < d->nout && !(m->flags & MON_FLAG_NOOUT); i++) {
		Cairn__Map__Osd *o = mon_osd_find(m, d->out[i]);

		if (o && !o->up && o->in && o->down_stamp_ns &&
		    o->down_stamp_ns + out_ns <= now_ns && mon_osd_set_in(m, o->id, false) == 0)
			changed++;
	}
	if (d->nmerges) {
		int rc = mon_merge_apply(d->merges, d->nmerges, m, now_ns);

		if (rc > 0)
			changed += (unsigned)rc;
	}
	if (d->npins && !(m->flags & MON_FLAG_NOREBALANCE)) {
		int rc = mon_pin_apply(d->pins, d->npins, m);

		if (rc > 0)
			changed += (unsigned)rc;
	}
	if (d->nexpire)
		changed += mon_blocklist_expire(m, d->wall_ns);
	return changed;
}

/* ---------- status ---------- */

struct pg_rep {
	int64_t pool;
	uint32_t seed;
	uint64_t epoch;
	char state[48];
	uint64_t objects, bytes, degraded;
};

static int
pg_rep_cmp(const void *a, const void *b)
{
	const struct pg_rep *x = a, *y = b;

	if (x->pool != y->pool)
		return x->pool < y->pool ? -1 : 1;
	if (x->seed != y->seed)
		return x->seed < y->seed ? -1 : 1;
	return x->epoch > y->epoch ? -1 : x->epoch < y->epoch; /* newest first */
}

void
mon_leader_stats(const struct mon_leader *l, const Cairn__Map__OsdMap *m, struct mon_stats *st)
{
	struct pg_rep *reps = NULL;
	size_t nreps = 0, cap = 0;

	memset(st, 0, sizeof(*st));
	st->valid = true;
	for (int i = 0; i < l->ntrack; i++) {
		const struct track *t = &l->track[i];
		const Cairn__Mon__OsdBeacon *b = t->b;

		if (!t->up || !b)
			continue;
		st->osds++;
		st->total_bytes += b->total_bytes;
		st->free_bytes += b->free_bytes;
		st->op_rate += t->r_ops;
		st->wr_bps += t->r_in;
		st->rd_bps += t->r_out;
		st->rec_objps += t->r_robj;
		st->rec_bps += t->r_rbytes;
		st->rec_objects += b->rec_objects;
		st->rec_bytes += b->rec_bytes;
		st->ec_decodes += b->ec_decodes;
		st->csum_errors += b->csum_errors;
		st->rec_watchdog += b->rec_watchdog;
		if (nreps + b->n_pgs > cap) {
			size_t ncap = CM_MAX(cap * 2, nreps + b->n_pgs + 64);
			struct pg_rep *g = realloc(reps, ncap * sizeof(*g));

			if (!g)
				continue;
			reps = g;
			cap = ncap;
		}
		for (size_t k = 0; k < b->n_pgs; k++) {
			const Cairn__Mon__PgStat *p = b->pgs[k];
			const Cairn__Map__Pool *pool = m ? mon_pool_find_id(m, p->pool) : NULL;

			if (!pool || p->seed >= pool->pg_num || !p->state)
				continue;
			reps[nreps] = (struct pg_rep){ p->pool,    p->seed,  p->epoch,   "",
						       p->objects, p->bytes, p->degraded };
			/* Not heard of since the map changed: it may have changed too. */
			snprintf(reps[nreps].state, sizeof(reps[nreps].state), "%s%s", p->state,
				 p->epoch < m->epoch ? "+stale" : "");
			nreps++;
		}
	}
	if (nreps) {
		qsort(reps, nreps, sizeof(*reps), pg_rep_cmp);
		st->pg = calloc(nreps, sizeof(*st->pg));
	}
	for (size_t i = 0; i < nreps; i++) {
		size_t k;

		if (i && reps[i].pool == reps[i - 1].pool && reps[i].seed == reps[i - 1].seed)
			continue;
		st->pgs++;
		if (st->pg) {
			struct mon_pg_state *g = &st->pg[st->npg++];

			g->pool = reps[i].pool;
			g->seed = reps[i].seed;
			snprintf(g->state, sizeof(g->state), "%s", reps[i].state);
			g->objects = reps[i].objects;
			g->bytes = reps[i].bytes;
			g->degraded = reps[i].degraded;
		}
		st->degraded += reps[i].degraded;
		for (k = 0; k < st->nstates; k++)
			if (strcmp(st->states[k].state, reps[i].state) == 0)
				break;
		if (k == st->nstates) {
			struct mon_pg_state_count *g =
				realloc(st->states, (k + 1) * sizeof(*st->states));

			if (!g)
				continue;
			st->states = g;
			snprintf(g[k].state, sizeof(g[k].state), "%s", reps[i].state);
			g[k].n = 0;
			st->nstates++;
		}
		st->states[k].n++;
	}
	free(reps);
}

/* ---------- the campaign (worker) ---------- */

static int
register_self(struct mon_leader *l, struct cm_etcd *e)
{
	char k[256];
	int64_t ttl;
	int rc = cm_etcd_lease_grant(e, (int64_t)(l->o.lease_ttl_ms / 1000), &l->lease_id, &ttl);

	if (rc)
		return rc;
	mon_key_path(l->fsid, "mons", l->id, k, sizeof(k));
	rc = cm_etcd_put(e, k, strlen(k), l->addr, strlen(l->addr), 0, NULL);
	if (!rc) {
		mon_key_path(l->fsid, "alive", l->id, k, sizeof(k));
		rc = cm_etcd_put(e, k, strlen(k), l->addr, strlen(l->addr), l->lease_id, NULL);
	}
	if (rc) {
		cm_etcd_lease_revoke(e, l->lease_id);
		l->lease_id = 0;
		return rc;
	}
	CM_NOTICE("registered in etcd lease=%" PRId64 " ttl=%" PRId64 "s", l->lease_id, ttl);
	return 0;
}

/* Register, or keep the lease alive. */
static int
renew(struct mon_leader *l, struct cm_etcd *e)
{
	int64_t ttl;
	int rc;

	if (!l->lease_id) {
		rc = register_self(l, e);
		if (rc)
			CM_LOG_RL(CM_LOG_WARN, "cannot register in etcd: %s", cm_strerror(rc));
		return rc;
	}
	rc = cm_etcd_lease_keepalive(e, l->lease_id, &ttl);
	if (rc == -ENOENT || (!rc && ttl <= 0)) {
		CM_WARN("lease %" PRId64 " expired; registering again", l->lease_id);
		l->lease_id = 0;
		return -ENOENT;
	}
	if (rc)
		CM_LOG_RL(CM_LOG_WARN, "etcd lease keepalive: %s", cm_strerror(rc));
	return rc;
}

/* Take the leader key if nobody holds it, then read who does. */
static int
campaign(struct mon_leader *l, struct cm_etcd *e, struct mon_leader_round *rd)
{
	struct cm_etcd_range r;
	char k[256], val[256];
	bool ok;
	int rc;

	mon_key_path(l->fsid, "leader", NULL, k, sizeof(k));
	snprintf(val, sizeof(val), "%s %s", l->id, l->addr);
	struct cm_etcd_cmp free_key = {
		.key = k, .key_len = strlen(k), .target = CM_ETCD_CREATE, .result = CM_ETCD_EQUAL
	};
	struct cm_etcd_op put = { .type = CM_ETCD_OP_PUT,
				  .key = k,
				  .key_len = strlen(k),
				  .value = val,
				  .value_len = strlen(val),
				  .lease = l->lease_id };

	rc = cm_etcd_txn(e, &free_key, 1, &put, 1, NULL, 0, &ok, NULL);
	if (!rc)
		rc = cm_etcd_get(e, k, strlen(k), NULL, 0, 0, &r);
	if (rc) {
		CM_LOG_RL(CM_LOG_WARN, "election: %s", cm_strerror(rc));
		return rc;
	}
	if (r.count) {
		size_t n = CM_MIN(r.kvs[0].value_len, sizeof(val) - 1);
		char *sp;

		memcpy(val, r.kvs[0].value, n);
		val[n] = 0;
		sp = strchr(val, ' ');
		if (sp)
			*sp++ = 0;
		snprintf(rd->leader_name, sizeof(rd->leader_name), "%s", val);
		snprintf(rd->leader_addr, sizeof(rd->leader_addr), "%s", sp ? sp : "");
		rd->leader = r.kvs[0].lease == l->lease_id && strcmp(val, l->id) == 0;
	}
	cm_etcd_range_free(&r);
	return 0;
}

struct leader_edit {
	const struct mon_leader *l;
	const struct mon_leader_decision *d;
	uint64_t now;
	unsigned changed;
};

/* A mon_map_update_fn: may run more than once, on newer maps each time. */
static int
leader_fn(void *arg, Cairn__Map__OsdMap *m)
{
	struct leader_edit *le = arg;

	le->changed = mon_leader_apply(le->l, le->d, m, le->now);
	return le->changed ? 0 : 1;
}

int
mon_leader_round(struct mon_leader *l, struct cm_etcd *e, struct mon_map_store *store,
		 struct mon_leader_round *rd, uint64_t now_ns)
{
	int rc;

	rd->leader = false;
	rd->leader_name[0] = rd->leader_addr[0] = 0;
	rc = renew(l, e);
	if (rc)
		return rc;
	l->last_renew_ns = now_ns;
	rc = campaign(l, e, rd);
	if (rc)
		return rc;
	if (rd->leader && (rd->dec.ndown || rd->dec.nout || rd->dec.nmerges || rd->dec.npins ||
			   rd->dec.nexpire)) {
		struct leader_edit le = { .l = l, .d = &rd->dec, .now = now_ns };
		uint64_t epoch;

		rc = mon_map_update(store, leader_fn, &le, &epoch);
		if (rc < 0)
			CM_WARN("marking OSDs down/out: %s", cm_strerror(rc));
		else if (rc == 0)
			CM_NOTICE("epoch %" PRIu64
				  ": %u OSDs marked down or out, merge or pin steps, or blocklist "
				  "entries expired",
				  epoch, le.changed);
	}
	return 0;
}

void
mon_leader_round_done(struct mon_leader *l, const struct mon_leader_round *rd, uint64_t now_ns)
{
	bool was = l->leader;

	/* Without a renewal for a whole TTL the lease may be gone: stop leading. */
	l->leader = rd->leader ||
		    (was && l->last_renew_ns &&
		     now_ns - l->last_renew_ns < l->o.lease_ttl_ms * MS && !rd->leader_name[0]);
	if (rd->leader_name[0]) {
		snprintf(l->leader_name, sizeof(l->leader_name), "%s", rd->leader_name);
		snprintf(l->leader_addr, sizeof(l->leader_addr), "%s", rd->leader_addr);
	}
	if (l->leader && !was) {
		CM_NOTICE("now the leader");
		/* Beacons went to the old leader: every up OSD gets a fresh grace. */
		for (int i = 0; i < l->ntrack; i++) {
			l->track[i].last_beacon_ns = now_ns;
			l->track[i].nrep = 0;
		}
	} else if (!l->leader && was) {
		CM_NOTICE("no longer the leader (leader=%s)",
			  l->leader_name[0] ? l->leader_name : "none");
	}
}

void
mon_leader_resign(struct mon_leader *l, struct cm_etcd *e)
{
	if (l->lease_id)
		cm_etcd_lease_revoke(e, l->lease_id);
	l->lease_id = 0;
}

bool
mon_leader_is_leader(const struct mon_leader *l)
{
	return l->leader;
}

const char *
mon_leader_name(const struct mon_leader *l)
{
	return l->leader_name;
}

const char *
mon_leader_addr(const struct mon_leader *l)
{
	return l->leader_addr;
}
