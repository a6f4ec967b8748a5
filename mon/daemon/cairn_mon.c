/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cairn-mon: a monitor. Every mon serves the cluster map (full, then
 * incrementals, fed by an etcd watch) and answers commands; the one holding
 * the leader key (under its etcd lease) also runs the cluster logic: OSD
 * boot, beacons and failure reports -> down after osd_grace, down -> out
 * after mon_osd_down_out_interval. See docs/design/0003-monitors.md.
 *
 * Threads: the reactor (messenger, timers, map state), a small worker pool
 * for every blocking etcd call, and the etcd watch thread (posts new maps to
 * the reactor).
 */
#include "mon/cluster.h"
#include "mon/incremental.h"
#include "mon/proto.h"
#include "cm/daemon.h"
#include "cm/err.h"
#include "cm/http.h"
#include "cm/log.h"
#include "cm/metrics.h"
#include "cm/worker.h"

CM_LOG_SUBSYS(mon);

extern char **environ;

#define INC_RING    512 /* incrementals kept in memory (a restarted OSD replays those it missed) */
#define MAX_REPORTS 8

struct mon_conf {
	struct cm_daemon_conf d;
	char *id;
	char *fsid;
	char *mon_host;
	char *listen;
	char *etcd_endpoints;
	char *metrics_addr;
	bool mkfs;
	uint64_t osd_grace_ms;
	uint64_t report_grace_ms;
	uint64_t down_out_ms;
	uint64_t min_reporters;
	uint64_t lease_ttl_ms;
	uint64_t tick_ms;
};

static const struct cm_opt g_mon_opts[] = {
	CM_DAEMON_OPTS(struct mon_conf, d, ""),
	CM_OPT("id", CM_OPT_STR, "", 0, 0, 0, struct mon_conf, id,
	       "this mon's name (its mon_host entry and [mon.ID] section)"),
	CM_OPT("fsid", CM_OPT_STR, "", 0, 0, 0, struct mon_conf, fsid,
	       "the cluster's id (its keys in etcd are under /cairn/FSID/)"),
	CM_OPT("mon_host", CM_OPT_STR, "", 0, 0, 0, struct mon_conf, mon_host,
	       "every mon: NAME=IP:PORT,..."),
	CM_OPT("listen", CM_OPT_STR, "", 0, 0, 0, struct mon_conf, listen,
	       "messenger address (default: this mon's mon_host entry)"),
	CM_OPT("etcd_endpoints", CM_OPT_STR, "http://127.0.0.1:2379", 0, 0, 0, struct mon_conf,
	       etcd_endpoints, "etcd client URLs, comma-separated"),
	CM_OPT("metrics_addr", CM_OPT_STR, "", 0, 0, 0, struct mon_conf, metrics_addr,
	       "where /metrics is served (Prometheus text); empty: off"),
	CM_OPT("mkfs", CM_OPT_BOOL, "false", 0, 0, 0, struct mon_conf, mkfs,
	       "create the cluster (key check and first map) in etcd if absent, then exit"),
	CM_OPT("osd_grace", CM_OPT_DURATION, "20s", 100, 3600000, 0, struct mon_conf, osd_grace_ms,
	       "an OSD silent (no beacon) or reported failed this long is down"),
	CM_OPT("osd_report_grace", CM_OPT_DURATION, "0", 0, 3600000, 0, struct mon_conf,
	       report_grace_ms,
	       "a failure peers report (after their own heartbeat grace) counts once it is this "
	       "old; 0: osd_grace"),
	CM_OPT("mon_osd_down_out_interval", CM_OPT_DURATION, "600s", 100, 604800000, 0,
	       struct mon_conf, down_out_ms, "a down OSD is marked out after this long"),
	CM_OPT("mon_osd_min_down_reporters", CM_OPT_UINT, "2", 1, 100, 0, struct mon_conf,
	       min_reporters, "distinct OSDs that must report a peer failed to mark it down"),
	CM_OPT("mon_lease_ttl", CM_OPT_DURATION, "10s", 2000, 600000, 0, struct mon_conf,
	       lease_ttl_ms, "etcd lease of a mon: leadership moves this long after it dies"),
	CM_OPT("mon_tick", CM_OPT_DURATION, "1s", 50, 60000, 0, struct mon_conf, tick_ms,
	       "how often a mon renews its lease and the leader checks OSDs"),
	{ 0 },
};

struct mond;

struct sub {
	TAILQ_ENTRY(sub) link;
	struct cm_conn *c;
	uint64_t epoch;
};

struct report {
	int32_t reporter;
	uint64_t failed_since_ns, recv_ns;
};

struct track {
	bool up; /* as of the last map */
	uint64_t last_beacon_ns;
	Cairn__Mon__OsdBeacon *b; /* the last beacon (stats) */
	uint64_t b_ns;
	double r_ops, r_in, r_out, r_robj, r_rbytes; /* rates between its last two */
	struct report rep[MAX_REPORTS];
	int nrep;
};

/* The periodic lease/election/leader work, one at a time. */
struct tick {
	struct cm_work w;
	struct mond *d;
	uint64_t epoch; /* the map the decisions were made on */
	int32_t *down, *out;
	int ndown, nout;
	/* results */
	bool leader;
	char leader_name[64], leader_addr[128];
};

/* A request answered from a worker. */
struct req {
	struct cm_work w;
	struct mond *d;
	struct cm_conn *c;
	uint64_t tid;
	Cairn__Mon__Command *cmd;
	Cairn__Mon__OsdBoot *boot;
	int rc;
	char *out, *err;
	struct mon_stats stats;
	int32_t osd_id;
	uint64_t epoch;
	char errbuf[MON_ERRLEN];
};

struct map_post {
	struct mond *d;
	Cairn__Map__OsdMap *map; /* NULL: the watch failed; reload */
};

struct mond {
	struct mon_conf cfg;
	struct cm_reactor *r;
	struct cm_msgr *m;
	struct cm_worker_pool *wp;
	struct cm_etcd *e;
	struct mon_map_store *store;
	struct cm_daemon_signals *sigs;
	struct cm_metrics *metrics;
	struct cm_counter *commands, *map_msgs;
	char addr[128];
	char osdmap_key[200];
	struct cm_etcd_watch *watch;
	bool stopping;

	Cairn__Map__OsdMap *map;
	Cairn__Map__Incremental *ring[INC_RING];
	uint64_t ring_lo; /* ring holds epochs [ring_lo, map->epoch] (ring_lo > epoch: none) */
	TAILQ_HEAD(, sub) subs;
	unsigned nsubs;

	struct tick tick;
	bool tick_busy;
	struct cm_timer tick_timer;
	int64_t lease_id;       /* worker-owned while tick_busy */
	uint64_t last_renew_ns; /* worker-owned while tick_busy */
	bool leader;
	char leader_name[64], leader_addr[128];
	struct track *track;
	int ntrack;
};

/* ---------- map state and subscribers (reactor) ---------- */

/* Bring a client at `have` up to date: incrementals from the ring, else the full map. */
static int
send_map(struct mond *d, struct cm_conn *c, uint64_t tid, uint64_t have)
{
	Cairn__Mon__MapUpdate up = CAIRN__MON__MAP_UPDATE__INIT;
	Cairn__Map__Incremental *incs[INC_RING];
	uint64_t cur = d->map->epoch;

	if (have && have < cur && have + 1 >= d->ring_lo) {
		for (uint64_t e = have + 1; e <= cur; e++)
			incs[up.n_incs++] = d->ring[e % INC_RING];
		up.incs = incs;
	} else if (have != cur) {
		up.full = d->map;
	}
	cm_counter_add(d->map_msgs, 1);
	return cm_conn_send_pb(c, MON_MSG_MAP_UPDATE, tid, &up.base, NULL);
}

/* Keep b as t's last beacon; rates from the counters' change since the one before. */
static void
track_beacon(struct track *t, Cairn__Mon__OsdBeacon *b)
{
	static const double ns = 1e9;
	uint64_t now = cm_now_ns();

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

/* Sum what the up OSDs last reported; a PG two OSDs report counts as the newer one's. */
static void
stats_collect(struct mond *d, struct mon_stats *st)
{
	struct pg_rep *reps = NULL;
	size_t nreps = 0, cap = 0;

	memset(st, 0, sizeof(*st));
	st->valid = true;
	for (int i = 0; i < d->ntrack; i++) {
		const struct track *t = &d->track[i];
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
			const Cairn__Map__Pool *pool =
				d->map ? mon_pool_find_id(d->map, p->pool) : NULL;

			if (!pool || p->seed >= pool->pg_num || !p->state)
				continue;
			reps[nreps] = (struct pg_rep){ p->pool,    p->seed,  p->epoch,   "",
						       p->objects, p->bytes, p->degraded };
			/* Not heard of since the map changed: it may have changed too. */
			snprintf(reps[nreps].state, sizeof(reps[nreps].state), "%s%s", p->state,
				 p->epoch < d->map->epoch ? "+stale" : "");
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

static struct track *
track_get(struct mond *d, int32_t id)
{
	if (id < 0 || id > (1 << 20))
		return NULL;
	if (id >= d->ntrack) {
		int n = CM_MAX(id + 1, d->ntrack * 2);
		struct track *t = realloc(d->track, sizeof(*t) * (size_t)n);

		if (!t)
			return NULL;
		memset(t + d->ntrack, 0, sizeof(*t) * (size_t)(n - d->ntrack));
		d->track = t;
		d->ntrack = n;
	}
	return &d->track[id];
}

static void
set_map(struct mond *d, Cairn__Map__OsdMap *nm)
{
	Cairn__Map__Incremental *inc = NULL;
	uint64_t now = cm_now_ns();
	struct sub *s, *tmp;

	char why[MON_ERRLEN];

	if (d->map && nm->epoch <= d->map->epoch) {
		cairn__map__osd_map__free_unpacked(nm, NULL);
		return;
	}
	if (mon_map_validate(nm, why)) {
		CM_ERR("ignoring map epoch=%" PRIu64 " from etcd: %s", nm->epoch, why);
		cairn__map__osd_map__free_unpacked(nm, NULL);
		return;
	}
	if (d->map && nm->epoch == d->map->epoch + 1 && mon_map_diff(d->map, nm, &inc) == 0) {
		if (d->ring_lo > d->map->epoch)
			d->ring_lo = nm->epoch;
		if (nm->epoch >= d->ring_lo + INC_RING)
			d->ring_lo = nm->epoch - INC_RING + 1;
		if (d->ring[nm->epoch % INC_RING])
			cairn__map__incremental__free_unpacked(d->ring[nm->epoch % INC_RING], NULL);
		d->ring[nm->epoch % INC_RING] = inc;
	} else {
		d->ring_lo = nm->epoch + 1; /* a gap: no incrementals until the next epoch */
	}
	if (d->map)
		cairn__map__osd_map__free_unpacked(d->map, NULL);
	d->map = nm;
	/* OSDs that came up start their grace now; down ones lose their reports. */
	for (size_t i = 0; i < nm->n_osds; i++) {
		struct track *t = track_get(d, nm->osds[i]->id);

		if (!t)
			continue;
		if (nm->osds[i]->up && !t->up)
			t->last_beacon_ns = now;
		if (!nm->osds[i]->up)
			t->nrep = 0;
		t->up = nm->osds[i]->up;
	}
	CM_INFO("map epoch=%" PRIu64 " osds=%zu pools=%zu", nm->epoch, nm->n_osds, nm->n_pools);
	TAILQ_FOREACH_SAFE(s, &d->subs, link, tmp) {
		if (s->epoch < nm->epoch && send_map(d, s->c, 0, s->epoch) == 0)
			s->epoch = nm->epoch;
	}
}

static void reload_submit(struct mond *d);

static void
on_map_post(void *arg)
{
	struct map_post *p = arg;
	struct mond *d = p->d;

	if (p->map)
		set_map(d, p->map);
	else if (!d->stopping)
		reload_submit(d);
	free(p);
}

/* Watch thread. */
static void
on_watch(void *arg, const struct cm_etcd_event *ev, int rc)
{
	struct mond *d = arg;
	struct map_post *p;

	if (ev && ev->type != CM_ETCD_EV_PUT)
		return;
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->d = d;
	if (ev) {
		p->map = cairn__map__osd_map__unpack(NULL, ev->kv.value_len, ev->kv.value);
		if (!p->map) {
			CM_ERR("undecodable map in etcd at revision %" PRId64, ev->kv.mod_revision);
			free(p);
			return;
		}
	} else {
		CM_WARN("map watch ended: %s; reloading", cm_strerror(rc));
	}
	if (cm_reactor_send_msg(d->r, on_map_post, p)) {
		if (p->map)
			cairn__map__osd_map__free_unpacked(p->map, NULL);
		free(p);
	}
}

/* Read the map and (re)start the watch after it. Blocking. */
static int
load_and_watch(struct mond *d, Cairn__Map__OsdMap **mp)
{
	struct cm_etcd_range r;
	int rc = cm_etcd_get(d->e, d->osdmap_key, strlen(d->osdmap_key), NULL, 0, 0, &r);

	if (rc)
		return rc;
	if (!r.count) {
		cm_etcd_range_free(&r);
		return -ENOENT;
	}
	*mp = cairn__map__osd_map__unpack(NULL, r.kvs[0].value_len, r.kvs[0].value);
	if (!*mp) {
		cm_etcd_range_free(&r);
		return -EBADMSG;
	}
	cm_etcd_watch_stop(d->watch);
	d->watch = NULL;
	rc = cm_etcd_watch_start(d->e, d->osdmap_key, strlen(d->osdmap_key), NULL, 0,
				 r.revision + 1, on_watch, d, &d->watch);
	cm_etcd_range_free(&r);
	return rc;
}

struct reload {
	struct cm_work w;
	struct mond *d;
	Cairn__Map__OsdMap *map;
	int rc;
};

static void
reload_fn(void *arg)
{
	struct reload *rl = arg;

	rl->rc = load_and_watch(rl->d, &rl->map);
}

static void
reload_done(void *arg)
{
	struct reload *rl = arg;

	if (rl->rc)
		CM_ERR("reloading the map: %s", cm_strerror(rl->rc));
	else
		set_map(rl->d, rl->map);
	free(rl);
}

static void
reload_submit(struct mond *d)
{
	struct reload *rl = calloc(1, sizeof(*rl));

	if (!rl)
		return;
	rl->d = d;
	rl->w = (struct cm_work){ .fn = reload_fn, .done = reload_done, .arg = rl };
	if (cm_worker_submit(d->wp, d->r, &rl->w))
		free(rl);
}

/* ---------- lease, election, leader duties (tick) ---------- */

static int
register_self(struct mond *d)
{
	char k[256];
	int64_t ttl;
	int rc = cm_etcd_lease_grant(d->e, (int64_t)(d->cfg.lease_ttl_ms / 1000), &d->lease_id,
				     &ttl);

	if (rc)
		return rc;
	mon_key_path(d->cfg.fsid, "mons", d->cfg.id, k, sizeof(k));
	rc = cm_etcd_put(d->e, k, strlen(k), d->addr, strlen(d->addr), 0, NULL);
	if (!rc) {
		mon_key_path(d->cfg.fsid, "alive", d->cfg.id, k, sizeof(k));
		rc = cm_etcd_put(d->e, k, strlen(k), d->addr, strlen(d->addr), d->lease_id, NULL);
	}
	if (rc) {
		cm_etcd_lease_revoke(d->e, d->lease_id);
		d->lease_id = 0;
		return rc;
	}
	CM_NOTICE("registered in etcd lease=%" PRId64 " ttl=%" PRId64 "s", d->lease_id, ttl);
	return 0;
}

struct leader_edit {
	struct tick *t;
	uint64_t now;
	unsigned changed;
};

static int
leader_fn(void *arg, Cairn__Map__OsdMap *m)
{
	struct leader_edit *le = arg;
	struct tick *t = le->t;
	uint64_t out_ns = t->d->cfg.down_out_ms * 1000000ull;

	le->changed = 0;
	for (int i = 0; i < t->ndown && !(m->flags & MON_FLAG_NODOWN); i++) {
		Cairn__Map__Osd *o = mon_osd_find(m, t->down[i]);

		/* Not if it rebooted after the map the decision was made on. */
		if (o && o->up && o->up_since <= t->epoch &&
		    mon_osd_mark_down(m, o->id, le->now) == 0)
			le->changed++;
	}
	for (int i = 0; i < t->nout && !(m->flags & MON_FLAG_NOOUT); i++) {
		Cairn__Map__Osd *o = mon_osd_find(m, t->out[i]);

		if (o && !o->up && o->in && o->down_stamp_ns &&
		    o->down_stamp_ns + out_ns <= le->now && mon_osd_set_in(m, o->id, false) == 0)
			le->changed++;
	}
	return le->changed ? 0 : 1;
}

static void
tick_fn(void *arg)
{
	struct tick *t = arg;
	struct mond *d = t->d;
	struct cm_etcd_range r;
	char k[256], val[256];
	uint64_t now = cm_now_ns();
	bool ok;
	int rc;

	t->leader = false;
	t->leader_name[0] = t->leader_addr[0] = 0;
	if (!d->lease_id) {
		rc = register_self(d);
		if (rc) {
			CM_LOG_RL(CM_LOG_WARN, "cannot register in etcd: %s", cm_strerror(rc));
			return;
		}
	} else {
		int64_t ttl;

		rc = cm_etcd_lease_keepalive(d->e, d->lease_id, &ttl);
		if (rc == -ENOENT || (!rc && ttl <= 0)) {
			CM_WARN("lease %" PRId64 " expired; registering again", d->lease_id);
			d->lease_id = 0;
			return;
		}
		if (rc) {
			CM_LOG_RL(CM_LOG_WARN, "etcd lease keepalive: %s", cm_strerror(rc));
			return;
		}
	}
	d->last_renew_ns = now;
	/* Campaign: take the leader key if nobody holds it. */
	mon_key_path(d->cfg.fsid, "leader", NULL, k, sizeof(k));
	snprintf(val, sizeof(val), "%s %s", d->cfg.id, d->addr);
	struct cm_etcd_cmp free_key = {
		.key = k, .key_len = strlen(k), .target = CM_ETCD_CREATE, .result = CM_ETCD_EQUAL
	};
	struct cm_etcd_op put = { .type = CM_ETCD_OP_PUT,
				  .key = k,
				  .key_len = strlen(k),
				  .value = val,
				  .value_len = strlen(val),
				  .lease = d->lease_id };

	rc = cm_etcd_txn(d->e, &free_key, 1, &put, 1, NULL, 0, &ok, NULL);
	if (!rc)
		rc = cm_etcd_get(d->e, k, strlen(k), NULL, 0, 0, &r);
	if (rc) {
		CM_LOG_RL(CM_LOG_WARN, "election: %s", cm_strerror(rc));
		return;
	}
	if (r.count) {
		size_t n = CM_MIN(r.kvs[0].value_len, sizeof(val) - 1);
		char *sp;

		memcpy(val, r.kvs[0].value, n);
		val[n] = 0;
		sp = strchr(val, ' ');
		if (sp)
			*sp++ = 0;
		snprintf(t->leader_name, sizeof(t->leader_name), "%s", val);
		snprintf(t->leader_addr, sizeof(t->leader_addr), "%s", sp ? sp : "");
		t->leader = r.kvs[0].lease == d->lease_id && strcmp(val, d->cfg.id) == 0;
	}
	cm_etcd_range_free(&r);
	if (t->leader && (t->ndown || t->nout)) {
		struct leader_edit le = { .t = t, .now = now };
		uint64_t epoch;

		rc = mon_map_update(d->store, leader_fn, &le, &epoch);
		if (rc < 0)
			CM_WARN("marking OSDs down/out: %s", cm_strerror(rc));
		else if (rc == 0)
			CM_NOTICE("epoch %" PRIu64 ": %u OSDs marked down or out", epoch,
				  le.changed);
	}
}

static void
tick_done(void *arg)
{
	struct tick *t = arg;
	struct mond *d = t->d;
	bool was = d->leader;
	uint64_t now = cm_now_ns();

	d->tick_busy = false;
	free(t->down);
	free(t->out);
	t->down = t->out = NULL;
	/* Without a renewal for a whole TTL the lease may be gone: stop leading. */
	d->leader = t->leader || (was && d->last_renew_ns &&
				  now - d->last_renew_ns < d->cfg.lease_ttl_ms * 1000000ull &&
				  !t->leader_name[0]);
	if (t->leader_name[0]) {
		snprintf(d->leader_name, sizeof(d->leader_name), "%s", t->leader_name);
		snprintf(d->leader_addr, sizeof(d->leader_addr), "%s", t->leader_addr);
	}
	if (d->leader && !was) {
		CM_NOTICE("now the leader");
		/* Beacons went to the old leader: every up OSD gets a fresh grace. */
		for (int i = 0; i < d->ntrack; i++) {
			d->track[i].last_beacon_ns = now;
			d->track[i].nrep = 0;
		}
	} else if (!d->leader && was) {
		CM_NOTICE("no longer the leader (leader=%s)",
			  d->leader_name[0] ? d->leader_name : "none");
	}
	if (!d->stopping)
		cm_timer_arm(d->r, &d->tick_timer, d->cfg.tick_ms);
}

/* Which OSDs the leader should mark down or out now. */
static void
decide(struct mond *d, struct tick *t)
{
	uint64_t now = cm_now_ns(), grace = d->cfg.osd_grace_ms * 1000000ull;
	uint64_t rgrace = d->cfg.report_grace_ms ? d->cfg.report_grace_ms * 1000000ull : grace;
	const Cairn__Map__OsdMap *m = d->map;

	t->down = calloc(m->n_osds + 1, sizeof(*t->down));
	t->out = calloc(m->n_osds + 1, sizeof(*t->out));
	t->ndown = t->nout = 0;
	t->epoch = m->epoch;
	if (!t->down || !t->out)
		return;
	for (size_t i = 0; i < m->n_osds; i++) {
		const Cairn__Map__Osd *o = m->osds[i];
		struct track *tr = track_get(d, o->id);
		unsigned reporters = 0;

		if (!tr)
			continue;
		if (o->up) {
			for (int k = 0; k < tr->nrep; k++)
				if (now - tr->rep[k].failed_since_ns >= rgrace &&
				    now - tr->rep[k].recv_ns < 2 * CM_MAX(rgrace, 10000000000ull))
					reporters++;
			if (now - tr->last_beacon_ns >= grace) {
				CM_NOTICE("osd.%d: no beacon for %" PRIu64 " ms: marking down",
					  o->id, (now - tr->last_beacon_ns) / 1000000);
				t->down[t->ndown++] = o->id;
			} else if (reporters >= d->cfg.min_reporters) {
				CM_NOTICE("osd.%d: reported failed by %u peers: marking down",
					  o->id, reporters);
				t->down[t->ndown++] = o->id;
			}
		} else if (o->in && o->down_stamp_ns &&
			   cm_now_ns() >= o->down_stamp_ns + d->cfg.down_out_ms * 1000000ull) {
			t->out[t->nout++] = o->id;
		}
	}
}

static void
on_tick(struct cm_timer *tm)
{
	struct mond *d = tm->arg;
	struct tick *t = &d->tick;

	if (d->tick_busy || d->stopping)
		return;
	t->d = d;
	if (d->leader && d->map)
		decide(d, t);
	t->w = (struct cm_work){ .fn = tick_fn, .done = tick_done, .arg = t };
	d->tick_busy = true;
	if (cm_worker_submit(d->wp, d->r, &t->w)) {
		d->tick_busy = false;
		free(t->down);
		free(t->out);
		t->down = t->out = NULL;
	}
}

/* ---------- requests ---------- */

static void
req_free(struct req *q)
{
	if (q->cmd)
		cairn__mon__command__free_unpacked(q->cmd, NULL);
	if (q->boot)
		cairn__mon__osd_boot__free_unpacked(q->boot, NULL);
	free(q->out);
	free(q->err);
	mon_stats_free(&q->stats);
	cm_conn_put(q->c);
	free(q);
}

static void
cmd_fn(void *arg)
{
	struct req *q = arg;
	struct mon_cmd_env env = {
		.etcd = q->d->e, .store = q->d->store, .fsid = q->d->cfg.fsid, .stats = &q->stats
	};

	q->rc = mon_command(&env, (int)q->cmd->n_args, q->cmd->args, q->cmd->json, &q->out,
			    &q->err);
}

static void
cmd_done(void *arg)
{
	struct req *q = arg;
	Cairn__Mon__CommandReply rep = CAIRN__MON__COMMAND_REPLY__INIT;

	rep.rc = q->rc;
	rep.out = q->out ? q->out : (char *)"";
	rep.err = q->err ? q->err : (char *)"";
	cm_conn_send_pb(q->c, MON_MSG_COMMAND_REPLY, q->tid, &rep.base, NULL);
	req_free(q);
}

struct boot_edit {
	struct req *q;
	struct mon_osd_boot b;
};

static int
boot_edit_fn(void *arg, Cairn__Map__OsdMap *m)
{
	struct boot_edit *be = arg;

	return mon_osd_boot(m, &be->b, &be->q->osd_id, be->q->errbuf);
}

static void
boot_fn(void *arg)
{
	struct req *q = arg;
	struct boot_edit be = { .q = q,
				.b = { .id = q->boot->osd_id,
				       .uuid = q->boot->uuid,
				       .addr = q->boot->addr,
				       .host = q->boot->host,
				       .device_class = q->boot->device_class,
				       .weight = q->boot->weight,
				       .shard_addrs = q->boot->shard_addrs,
				       .nshard_addrs = q->boot->n_shard_addrs } };

	q->rc = mon_map_update(q->d->store, boot_edit_fn, &be, &q->epoch);
	if (q->rc == 1)
		q->rc = 0;
}

static void
boot_done(void *arg)
{
	struct req *q = arg;
	Cairn__Mon__OsdBootReply rep = CAIRN__MON__OSD_BOOT_REPLY__INIT;
	struct track *t;

	rep.rc = q->rc;
	rep.osd_id = q->rc ? -1 : q->osd_id;
	rep.epoch = q->epoch;
	rep.error = q->rc ? (q->errbuf[0] ? q->errbuf : (char *)cm_strerror(q->rc)) : (char *)"";
	if (q->rc)
		CM_WARN("boot of %s from %s refused: %s", q->boot->uuid, cm_conn_peer(q->c),
			rep.error);
	else
		CM_NOTICE("osd.%d booted at %s (host %s) epoch=%" PRIu64, q->osd_id, q->boot->addr,
			  q->boot->host, q->epoch);
	if (!q->rc && (t = track_get(q->d, q->osd_id))) {
		t->last_beacon_ns = cm_now_ns();
		t->nrep = 0;
	}
	cm_conn_send_pb(q->c, MON_MSG_OSD_BOOT_REPLY, q->tid, &rep.base, NULL);
	req_free(q);
}

static bool
need_leader(struct mond *d, struct cm_conn *c, uint64_t tid)
{
	Cairn__Mon__NotLeader nl = CAIRN__MON__NOT_LEADER__INIT;

	if (d->leader)
		return false;
	nl.leader = d->leader_name;
	nl.addr = d->leader_addr;
	cm_conn_send_pb(c, MON_MSG_NOT_LEADER, tid, &nl.base, NULL);
	return true;
}

static void
on_failure_report(struct mond *d, const Cairn__Mon__OsdFailure *f)
{
	struct track *t = track_get(d, f->target);
	uint64_t now = cm_now_ns();
	int k;

	if (!t || f->reporter == f->target)
		return;
	for (k = 0; k < t->nrep && t->rep[k].reporter != f->reporter; k++)
		;
	if (f->alive) {
		if (k < t->nrep)
			t->rep[k] = t->rep[--t->nrep];
		return;
	}
	if (k == t->nrep) {
		if (t->nrep == MAX_REPORTS)
			return;
		t->nrep++;
		t->rep[k].failed_since_ns =
			now - CM_MIN((uint64_t)f->failed_for_ms * 1000000ull, now);
	}
	t->rep[k].reporter = f->reporter;
	t->rep[k].recv_ns = now;
	CM_INFO("osd.%d reports osd.%d failed for %u ms", f->reporter, f->target, f->failed_for_ms);
}

static struct req *
req_new(struct mond *d, struct cm_conn *c, uint64_t tid)
{
	struct req *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->d = d;
	q->c = cm_conn_get(c);
	q->tid = tid;
	return q;
}

static void
on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct mond *d = arg;
	ProtobufCMessage *pb = NULL;
	struct req *q;

	switch (m->type) {
	case MON_MSG_MAP_REQUEST: {
		Cairn__Mon__MapRequest *mr = (Cairn__Mon__MapRequest *)cm_msg_unpack_front(
			m, &cairn__mon__map_request__descriptor);
		struct sub *s;

		pb = &mr->base;
		if (!mr || !d->map)
			break;
		send_map(d, c, m->tid, mr->have_epoch);
		if (!mr->subscribe)
			break;
		TAILQ_FOREACH(s, &d->subs, link)
			if (s->c == c)
				break;
		if (!s && (s = calloc(1, sizeof(*s)))) {
			s->c = cm_conn_get(c);
			TAILQ_INSERT_TAIL(&d->subs, s, link);
			d->nsubs++;
		}
		if (s)
			s->epoch = d->map->epoch;
		break;
	}
	case MON_MSG_COMMAND:
		q = req_new(d, c, m->tid);
		if (!q)
			break;
		q->cmd = (Cairn__Mon__Command *)cm_msg_unpack_front(
			m, &cairn__mon__command__descriptor);
		if (!q->cmd) {
			req_free(q);
			break;
		}
		if ((q->cmd->n_args == 1 && strcmp(q->cmd->args[0], "status") == 0) ||
		    (q->cmd->n_args >= 2 && strcmp(q->cmd->args[0], "pg") == 0)) {
			/* The OSDs' stats live at the leader: send status there. */
			if (!d->leader && d->leader_addr[0]) {
				need_leader(d, c, m->tid);
				req_free(q);
				break;
			}
			if (d->leader)
				stats_collect(d, &q->stats);
		}
		cm_counter_add(d->commands, 1);
		q->w = (struct cm_work){ .fn = cmd_fn, .done = cmd_done, .arg = q };
		if (cm_worker_submit(d->wp, d->r, &q->w))
			req_free(q);
		break;
	case MON_MSG_OSD_BOOT:
		if (need_leader(d, c, m->tid))
			break;
		q = req_new(d, c, m->tid);
		if (!q)
			break;
		q->boot = (Cairn__Mon__OsdBoot *)cm_msg_unpack_front(
			m, &cairn__mon__osd_boot__descriptor);
		if (!q->boot) {
			req_free(q);
			break;
		}
		q->w = (struct cm_work){ .fn = boot_fn, .done = boot_done, .arg = q };
		if (cm_worker_submit(d->wp, d->r, &q->w))
			req_free(q);
		break;
	case MON_MSG_OSD_BEACON: {
		Cairn__Mon__OsdBeacon *b = (Cairn__Mon__OsdBeacon *)cm_msg_unpack_front(
			m, &cairn__mon__osd_beacon__descriptor);
		struct track *t;

		pb = &b->base;
		if (!b || need_leader(d, c, m->tid))
			break;
		t = track_get(d, b->osd_id);
		if (t) {
			t->last_beacon_ns = cm_now_ns();
			track_beacon(t, b);
			pb = NULL; /* kept */
		}
		break;
	}
	case MON_MSG_OSD_FAILURE: {
		Cairn__Mon__OsdFailure *f = (Cairn__Mon__OsdFailure *)cm_msg_unpack_front(
			m, &cairn__mon__osd_failure__descriptor);

		pb = &f->base;
		if (f && !need_leader(d, c, m->tid))
			on_failure_report(d, f);
		break;
	}
	default:
		CM_LOG_RL(CM_LOG_WARN, "unexpected message type=%u from %s", m->type,
			  cm_conn_peer(c));
		break;
	}
	if (pb)
		protobuf_c_message_free_unpacked(pb, NULL);
	cm_msg_destroy(m);
}

static void
drop_sub(struct mond *d, struct cm_conn *c)
{
	struct sub *s, *tmp;

	TAILQ_FOREACH_SAFE(s, &d->subs, link, tmp) {
		if (s->c != c)
			continue;
		TAILQ_REMOVE(&d->subs, s, link);
		d->nsubs--;
		cm_conn_put(s->c);
		free(s);
	}
}

static void
on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct mond *d = arg;

	CM_DEBUG("session event=%s peer=%s rc=%d", cm_conn_event_name(ev), cm_conn_peer(c), rc);
	if (ev == CM_CONN_CLOSED || ev == CM_CONN_RESET || ev == CM_CONN_FAILED)
		drop_sub(d, c);
}

/* ---------- metrics ---------- */

static double
g_epoch(void *arg)
{
	struct mond *d = arg;

	return d->map ? (double)d->map->epoch : 0;
}

static double
g_leader(void *arg)
{
	return ((struct mond *)arg)->leader ? 1 : 0;
}

static double
g_subs(void *arg)
{
	return (double)((struct mond *)arg)->nsubs;
}

static int
setup_metrics(struct mond *d)
{
	if (cm_metrics_create(&d->metrics))
		return -ENOMEM;
	d->commands =
		cm_metrics_counter(d->metrics, "cairn_mon_commands_total", NULL, "Commands run.");
	d->map_msgs = cm_metrics_counter(d->metrics, "cairn_mon_map_messages_total", NULL,
					 "Map updates sent to clients.");
	if (!d->commands || !d->map_msgs ||
	    cm_metrics_gauge_fn(d->metrics, "cairn_mon_epoch", NULL, "Map epoch.", g_epoch, d) ||
	    cm_metrics_gauge_fn(d->metrics, "cairn_mon_leader", NULL, "1 on the leader.", g_leader,
				d) ||
	    cm_metrics_gauge_fn(d->metrics, "cairn_mon_subscribers", NULL,
				"Sessions subscribed to the map.", g_subs, d))
		return -ENOMEM;
	return 0;
}

/* ---------- start-up ---------- */

static int
pre_scan_id(int argc, char **argv, const char **id)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--id") == 0 && i + 1 < argc)
			*id = argv[i + 1];
		else if (strncmp(argv[i], "--id=", 5) == 0)
			*id = argv[i] + 5;
	}
	if (!*id)
		*id = getenv("CAIRN_ID");
	return 0;
}

static int
check_conf(struct mond *d)
{
	struct mon_addr *hosts = NULL;
	size_t n = 0;
	char err[256];
	const char *mine = NULL;

	if (!d->cfg.d.cluster_key[0]) {
		fprintf(stderr, "cairn-mon: cluster_key is not set\n");
		return -CM_ECONF;
	}
	if (!d->cfg.fsid[0] || strchr(d->cfg.fsid, '/') || strlen(d->cfg.fsid) > 64) {
		fprintf(stderr, "cairn-mon: fsid is %s\n",
			d->cfg.fsid[0] ? "malformed" : "not set");
		return -CM_ECONF;
	}
	if (!d->cfg.id[0] || strchr(d->cfg.id, '/') || strchr(d->cfg.id, ' ') ||
	    strlen(d->cfg.id) > 63) {
		fprintf(stderr, "cairn-mon: --id NAME is %s\n",
			d->cfg.id[0] ? "malformed" : "missing");
		return -CM_ECONF;
	}
	if (d->cfg.mon_host[0]) {
		if (mon_parse_hosts(d->cfg.mon_host, &hosts, &n, err, sizeof(err))) {
			fprintf(stderr, "cairn-mon: %s\n", err);
			return -CM_ECONF;
		}
		for (size_t i = 0; i < n; i++)
			if (strcmp(hosts[i].name, d->cfg.id) == 0)
				mine = hosts[i].addr;
	}
	if (d->cfg.listen[0])
		mine = d->cfg.listen;
	if (!mine && !d->cfg.mkfs) {
		fprintf(stderr,
			"cairn-mon: no address for mon.%s: add it to mon_host or set listen\n",
			d->cfg.id);
		free(hosts);
		return -CM_ECONF;
	}
	snprintf(d->addr, sizeof(d->addr), "%s", mine ? mine : "");
	free(hosts);
	return 0;
}

static char *g_entity;

int
main(int argc, char **argv)
{
	struct mond d = { 0 };
	const char *id = NULL;
	struct cm_conf conf = {
		.table = g_mon_opts, .base = &d.cfg, .section = "mon", .env_prefix = "CAIRN_"
	};
	struct cm_http_metrics *http = NULL;
	struct cm_etcd_opts eo;
	struct cm_msgr_opts mo;
	struct cm_msgr_ops ops = { .on_msg = on_msg, .on_event = on_event };
	sigset_t mask;
	uint16_t port = 0, mport = 0;
	int rc, first, status = 2;

	TAILQ_INIT(&d.subs);
	cm_daemon_block_signals(&mask);
	pre_scan_id(argc, argv, &id);
	conf.id = id;
	rc = cm_conf_init(&conf, argc, argv, environ, getenv("CAIRN_CONF"), stdout, &first);
	if (rc == 1)
		return 0;
	if (rc) {
		fprintf(stderr, "cairn-mon: %s\n", conf.err);
		goto out;
	}
	if (first < argc) {
		fprintf(stderr, "cairn-mon: unexpected argument '%s'\n", argv[first]);
		goto out;
	}
	if (check_conf(&d))
		goto out;
	if (!d.cfg.d.entity[0]) {
		size_t elen = strlen(d.cfg.id) + 5;

		g_entity = malloc(elen);
		if (!g_entity)
			goto out;
		snprintf(g_entity, elen, "mon.%s", d.cfg.id);
		free(d.cfg.d.entity);
		d.cfg.d.entity = g_entity;
		g_entity = NULL;
	}
	if (cm_daemon_setup_logging(&d.cfg.d))
		goto out;
	status = 1;
	cm_etcd_opts_init(&eo, sizeof(eo));
	eo.endpoints = d.cfg.etcd_endpoints;
	eo.timeout_ms = (unsigned)CM_MAX(d.cfg.lease_ttl_ms / 2, (uint64_t)2000);
	rc = cm_etcd_create(&eo, &d.e);
	if (!rc)
		rc = mon_map_store_open(d.e, d.cfg.fsid, &d.store);
	if (rc) {
		fprintf(stderr, "cairn-mon: etcd client: %s\n", cm_strerror(rc));
		goto out;
	}
	if (d.cfg.mkfs) {
		rc = mon_cluster_create(d.e, d.cfg.fsid, d.cfg.d.cluster_key);
		if (rc < 0) {
			fprintf(stderr, "cairn-mon: mkfs: %s\n",
				rc == -EACCES ? "the cluster exists with another cluster_key"
					      : cm_strerror(rc));
			goto out;
		}
		printf("cairn-mon: cluster %s %s in etcd %s\n", d.cfg.fsid,
		       rc == 0 ? "created" : "already exists", d.cfg.etcd_endpoints);
		status = 0;
		goto out;
	}
	rc = mon_cluster_verify(d.e, d.cfg.fsid, d.cfg.d.cluster_key);
	if (rc) {
		fprintf(stderr, "cairn-mon: cluster %s: %s\n", d.cfg.fsid,
			rc == -ENOENT   ? "does not exist in etcd (run cairn-mon --mkfs first)"
			: rc == -EACCES ? "cluster_key does not match the cluster's"
					: cm_strerror(rc));
		goto out;
	}
	mon_key_path(d.cfg.fsid, "osdmap", NULL, d.osdmap_key, sizeof(d.osdmap_key));
	rc = cm_daemon_reactor_create(&d.cfg.d, "mon", &d.r);
	if (!rc)
		rc = cm_worker_pool_create(2, "mon-etcd", &d.wp);
	if (rc) {
		fprintf(stderr, "cairn-mon: %s\n", cm_strerror(rc));
		goto out;
	}
	rc = load_and_watch(&d, &d.map);
	if (rc) {
		fprintf(stderr, "cairn-mon: reading the map: %s\n", cm_strerror(rc));
		goto out;
	}
	d.ring_lo = d.map->epoch + 1;
	cm_daemon_msgr_opts(&d.cfg.d, &mo);
	mo.ops = ops;
	mo.ops_arg = &d;
	rc = cm_msgr_create(d.r, &mo, &d.m);
	if (!rc)
		rc = cm_msgr_listen(d.m, d.addr, &port);
	if (rc) {
		fprintf(stderr, "cairn-mon: listen %s: %s\n", d.addr, cm_strerror(rc));
		goto out;
	}
	if (setup_metrics(&d))
		goto out;
	if (d.cfg.metrics_addr[0]) {
		rc = cm_http_metrics_start(d.r, d.metrics, d.cfg.metrics_addr, &mport, &http);
		if (rc) {
			fprintf(stderr, "cairn-mon: metrics on %s: %s\n", d.cfg.metrics_addr,
				cm_strerror(rc));
			goto out;
		}
	}
	if (cm_daemon_signals_watch(d.r, &mask, &d.sigs)) {
		fprintf(stderr, "cairn-mon: signalfd failed\n");
		goto out;
	}
	rc = cm_daemon_write_pid(d.cfg.d.pid_file);
	if (rc) {
		fprintf(stderr, "cairn-mon: pid_file %s: %s\n", d.cfg.d.pid_file, cm_strerror(rc));
		goto out;
	}
	cm_timer_init(&d.tick_timer, on_tick, &d);
	cm_timer_arm(d.r, &d.tick_timer, 0);
	CM_NOTICE("mon.%s listening on %s port=%u fsid=%s epoch=%" PRIu64 " etcd=%s", d.cfg.id,
		  d.addr, port, d.cfg.fsid, d.map->epoch, d.cfg.etcd_endpoints);
	status = cm_reactor_run(d.r) ? 1 : 0;
	if (d.cfg.d.pid_file[0])
		unlink(d.cfg.d.pid_file);
out:
	d.stopping = true;
	if (d.r)
		cm_timer_cancel(d.r, &d.tick_timer);
	cm_etcd_watch_stop(d.watch);
	cm_worker_pool_destroy(d.wp);
	/* Run the completions the pool posted, so nothing they own leaks. */
	for (int i = 0; d.r && i < 5; i++)
		cm_reactor_run_once(d.r, 0);
	if (d.lease_id) {
		/* Hand leadership over now rather than after the TTL. */
		cm_etcd_lease_revoke(d.e, d.lease_id);
	}
	while (!TAILQ_EMPTY(&d.subs))
		drop_sub(&d, TAILQ_FIRST(&d.subs)->c);
	cm_http_metrics_stop(http);
	cm_daemon_signals_stop(d.sigs);
	cm_msgr_destroy(d.m);
	cm_reactor_destroy(d.r);
	for (int i = 0; i < INC_RING; i++)
		if (d.ring[i])
			cairn__map__incremental__free_unpacked(d.ring[i], NULL);
	if (d.map)
		cairn__map__osd_map__free_unpacked(d.map, NULL);
	for (int i = 0; i < d.ntrack; i++)
		if (d.track[i].b)
			cairn__mon__osd_beacon__free_unpacked(d.track[i].b, NULL);
	free(d.track);
	mon_map_store_close(d.store);
	cm_etcd_destroy(d.e);
	cm_metrics_destroy(d.metrics);
	cm_conf_free(&conf);
	return status;
}
