/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The serving OSD: store, PG shards (each a reactor thread with its own
 * messenger, sessions with peer OSDs and PGs), monitor client, boot and
 * beacons, the map, and message dispatch to the PGs (pg.c).
 */
#include "osd.h"
#include "cm/err.h"
#include "cm/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

CM_LOG_SUBSYS(osd);

#define TICK_MS       250
#define BOOT_EVERY_MS 2000

int osd_serve(struct osd_conf *cfg);

/* A shard's PG states and counters, as it last handed them to shard 0. */
struct osd_counters {
	uint64_t ops, bytes_in, bytes_out, rec_objects, rec_bytes, ec_reads, ec_decodes;
};

struct osd_snap {
	Cairn__Mon__PgStat *pgs;
	size_t npgs;
	struct osd_counters c;
};

static struct osd_counters
counters_of(const struct osd *o)
{
	return (struct osd_counters){ .ops = o->ops,
				      .bytes_in = o->op_bytes_in,
				      .bytes_out = o->op_bytes_out,
				      .rec_objects = o->rec_objects,
				      .rec_bytes = o->rec_bytes,
				      .ec_reads = o->ec_reads,
				      .ec_decodes = o->ec_decodes };
}

static void
counters_add(struct osd_counters *t, const struct osd_counters *c)
{
	t->ops += c->ops;
	t->bytes_in += c->bytes_in;
	t->bytes_out += c->bytes_out;
	t->rec_objects += c->rec_objects;
	t->rec_bytes += c->rec_bytes;
	t->ec_reads += c->ec_reads;
	t->ec_decodes += c->ec_decodes;
}

/* The length of addr's host part ("host:port" -> host). */
static int
addr_host_len(const char *addr)
{
	const char *colon = strrchr(addr, ':');

	return (int)(colon ? (size_t)(colon - addr) : strlen(addr));
}

struct osd_node {
	unsigned n;
	struct osd **sh; /* sh[0] is the main thread's, with the monitor client */
	pthread_t *th;
	bool *th_started;
	pthread_mutex_t mu;
	struct osd_snap *snap; /* [n], under mu; [0] unused */
	atomic_bool beacon_soon;
	char **addrs;         /* [n]: each shard's address (for boot) */
	atomic_uint draining; /* shutdown: shard threads not yet drained (shard_drain) */
	atomic_bool stuck;    /* shutdown: a shard's calls did not call back in DRAIN_MS */
};

/* ---------- the shard's store and worker calls (counted for shutdown) ---------- */

struct osd_call {
	struct osd *o;

	union {
		os_commit_cb commit;
		os_read_cb read;
		os_read_meta_cb meta;
	} cb;

	void *arg;
	struct cm_work w, *inner; /* osd_work */
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
osd_queue(struct osd *o, struct os_txn *t, os_commit_cb cb, void *arg)
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
osd_read(struct osd *o, const char *cid, const char *oid, uint64_t off, uint64_t len, os_read_cb cb,
	 void *arg)
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
osd_read_meta(struct osd *o, const char *cid, const char *oid, uint64_t off, uint64_t len,
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
osd_work(struct osd *o, struct cm_work *w)
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
osd_send_pb(struct cm_conn *c, uint16_t type, uint64_t tid, const ProtobufCMessage *pb,
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
osd_pool(struct osd *o, int64_t id)
{
	return o->map ? mon_pool_find_id(o->map, id) : NULL;
}

/* A peer session's user word: OSD id + 1, and the peer's shard above bit 32. */
#define PEER_USER(id, k) ((void *)(((intptr_t)(k) << 32) | (intptr_t)((id) + 1)))

int32_t
osd_conn_peer(struct cm_conn *c)
{
	intptr_t u = (intptr_t)cm_conn_user(c);

	return u > 0 ? (int32_t)((u & 0xffffffff) - 1) : -1;
}

static void
link_drop(struct osd_plink *l)
{
	if (!l->c)
		return;
	cm_conn_close(l->c);
	cm_conn_put(l->c);
	l->c = NULL;
	l->addr[0] = 0;
}

static void
peer_drop(struct osd_peer *p)
{
	for (unsigned k = 0; k < p->nlinks; k++)
		link_drop(&p->links[k]);
}

/* Is link k of a peer still a session with the incarnation and shard mo shows? */
static bool
link_current(const struct osd_plink *l, const Cairn__Map__Osd *mo, unsigned k)
{
	const char *addr = k == 0 ? mo->addr : k < mo->n_shard_addrs ? mo->shard_addrs[k] : NULL;

	return mo->up && addr && strcmp(l->addr, addr) == 0 && l->up_since == mo->up_since;
}

struct cm_conn *
osd_peer_conn(struct osd *o, int32_t id, uint32_t seed)
{
	const Cairn__Map__Osd *mo;
	struct osd_peer *p;
	struct osd_plink *l;
	const char *addr;
	unsigned k;

	if (id < 0 || id >= o->npeers || !o->map)
		return NULL;
	p = &o->peers[id];
	mo = mon_osd_find(o->map, id);
	if (!mo || !mo->addr[0])
		return NULL;
	addr = mon_osd_pg_addr(mo, seed, &k);
	if (k >= p->nlinks) {
		struct osd_plink *n = realloc(p->links, sizeof(*n) * (k + 1));

		if (!n)
			return NULL;
		memset(n + p->nlinks, 0, sizeof(*n) * (k + 1 - p->nlinks));
		p->links = n;
		p->nlinks = k + 1;
	}
	l = &p->links[k];
	if (l->c && (strcmp(l->addr, addr) != 0 || l->up_since != mo->up_since))
		link_drop(l);
	if (!l->c) {
		if (cm_msgr_connect(o->msgr, addr, true, &l->c)) {
			l->c = NULL;
			return NULL;
		}
		cm_conn_set_user(l->c, PEER_USER(id, k));
		snprintf(l->addr, sizeof(l->addr), "%s", addr);
		l->up_since = mo->up_since;
	}
	return l->c;
}

static void
update_peers(struct osd *o)
{
	int max = 0;

	for (size_t i = 0; i < o->map->n_osds; i++)
		max = CM_MAX(max, o->map->osds[i]->id + 1);
	if (max > o->npeers) {
		struct osd_peer *np = realloc(o->peers, sizeof(*np) * (size_t)max);

		if (!np)
			return;
		memset(np + o->npeers, 0, sizeof(*np) * (size_t)(max - o->npeers));
		o->peers = np;
		o->npeers = max;
	}
	for (int i = 0; i < o->npeers; i++) {
		const Cairn__Map__Osd *mo = mon_osd_find(o->map, i);
		struct osd_peer *p = &o->peers[i];
		bool dropped = false;

		for (unsigned k = 0; k < p->nlinks; k++) {
			if (!p->links[k].c || (mo && link_current(&p->links[k], mo, k)))
				continue;
			/* Whatever was in flight on the session is lost with it: the
			 * PGs and recovery jobs waiting on this peer must hear of it
			 * (the session's own close event no longer names a peer). A
			 * plan whose source restarted otherwise waited for pushes that
			 * never came (until the recovery watchdog, 30 s). */
			link_drop(&p->links[k]);
			dropped = true;
		}
		if (dropped)
			pg_peer_reset(o, i);
	}
}

/* A new map on shard o: placement, sessions, PGs, waiting ops. */
static void
apply_map(struct osd *o, const Cairn__Map__OsdMap *m)
{
	char err[MON_ERRLEN];

	o->map = m;
	o->epoch = m->epoch;
	if (o->pl_ok)
		mon_placement_free(&o->pl);
	o->pl_ok = mon_placement_build(m, &o->pl, err) == 0;
	if (!o->pl_ok && o->shard == 0)
		CM_ERR("map epoch %" PRIu64 ": cannot place PGs: %s", m->epoch, err);
	update_peers(o);
	if (o->pl_ok)
		pg_on_map(o);
	pg_retry_wait_map(o);
}

/* ---------- the other shards: maps and boot state in, stats out ---------- */

struct shard_post {
	struct cm_reactor_msg m;
	struct osd *o; /* the shard it is for */
	uint8_t *map;  /* a packed map, or NULL (boot state only) */
	size_t len;
	int32_t id;
	bool booted;
	uint64_t up_epoch;
	uint64_t want_epoch; /* to shard 0: ask the mons for maps after this */
};

static void
shard_post_free(void *arg)
{
	struct shard_post *p = arg;

	free(p->map);
	free(p);
}

/* Shard > 0: hand our PG states and counters to shard 0's next beacon. */
static void
shard_snapshot(struct osd *o)
{
	struct osd_node *nd = o->node;
	struct osd_snap s = { 0 };

	if (pg_stats(o, &s.pgs, &s.npgs))
		return;
	s.c = counters_of(o);
	pthread_mutex_lock(&nd->mu);
	free(nd->snap[o->shard].pgs);
	nd->snap[o->shard] = s;
	pthread_mutex_unlock(&nd->mu);
	o->snap_ms = cm_now_ms();
}

static void
shard_state_run(void *arg)
{
	struct shard_post *p = arg;
	struct osd *o = p->o;
	bool booted_now = p->booted && !o->booted;

	if (o->stopping) {
		shard_post_free(p); /* no new map: nothing new starts */
		return;
	}

	o->id = p->id;
	o->booted = p->booted;
	o->up_epoch = p->up_epoch;
	if (p->map) {
		Cairn__Map__OsdMap *m = cairn__map__osd_map__unpack(NULL, p->len, p->map);

		if (!m) {
			CM_ERR("shard %u: cannot decode the map shard 0 handed over", o->shard);
		} else {
			Cairn__Map__OsdMap *old = o->own_map;

			o->own_map = m;
			apply_map(o, m);
			if (old)
				cairn__map__osd_map__free_unpacked(old, NULL);
		}
	} else if (booted_now && o->map && o->pl_ok && o->epoch >= o->up_epoch) {
		pg_on_map(o);
	}
	shard_snapshot(o);
	atomic_store(&o->node->beacon_soon, true);
	shard_post_free(p);
}

/* Shard 0: tell the other shards our id, boot state and (when buf) the packed map. */
static void
shards_publish(struct osd *o, const uint8_t *buf, size_t len)
{
	struct osd_node *nd = o->node;

	if (nd->n <= 1)
		return;
	for (unsigned k = 1; k < nd->n; k++) {
		struct shard_post *p = calloc(1, sizeof(*p));

		if (!p || (buf && !(p->map = malloc(len ? len : 1)))) {
			free(p);
			CM_ERR("out of memory handing the map to shard %u", k);
			continue;
		}
		if (buf) {
			memcpy(p->map, buf, len);
			p->len = len;
		}
		p->o = nd->sh[k];
		p->id = o->id;
		p->booted = o->booted;
		p->up_epoch = o->up_epoch;
		p->m = (struct cm_reactor_msg){ .fn = shard_state_run,
						.arg = p,
						.drop = shard_post_free };
		cm_reactor_post(nd->sh[k]->r, &p->m);
	}
}

static void
want_map_run(void *arg)
{
	struct shard_post *p = arg;
	struct osd *o = p->o;

	if (o->monc)
		mon_client_want_map(o->monc, p->want_epoch);
	shard_post_free(p);
}

void
osd_want_map(struct osd *o, uint64_t epoch)
{
	struct osd *o0 = o->node ? o->node->sh[0] : o;
	struct shard_post *p;

	if (o0 == o) {
		mon_client_want_map(o->monc, epoch);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return; /* the op waits for the next map anyway */
	p->o = o0;
	p->want_epoch = epoch;
	p->m = (struct cm_reactor_msg){ .fn = want_map_run, .arg = p, .drop = shard_post_free };
	cm_reactor_post(o0->r, &p->m);
}

/*
 * The last map seen, kept in the store (collection "meta", object "osd",
 * omap key "map"): a restart starts the mon client from it, so the epochs
 * published while the OSD was down arrive one by one and its PGs learn the
 * acting sets they missed (the last one that held each PG is its "before";
 * see docs/design/osd.md). Written without waiting: after a crash an older
 * map only means more epochs to replay.
 */
#define MAP_KEY "map"

bool
osd_meta_ok(const struct osd *o)
{
	return (o->node ? o->node->sh[0] : o)->meta_ok;
}

static void
map_save(struct osd *o, const uint8_t *buf, size_t len)
{
	struct os_txn *t = NULL;

	if (!o->meta_ok || os_txn_create(&t))
		return;
	if (os_txn_omap_set(t, META_CID, META_OID, MAP_KEY, sizeof(MAP_KEY) - 1, buf, len))
		os_txn_destroy(t);
	else
		os_queue(o->store, t, NULL, NULL);
}

/* Before the reactor runs: make the meta object if needed, start monc from the kept map. */
static void
map_seed(struct osd *o)
{
	struct os_kv key = { .key = (uint8_t *)MAP_KEY, .klen = sizeof(MAP_KEY) - 1 }, val = { 0 };
	struct os_stat st;
	int rc = os_stat(o->store, META_CID, META_OID, &st);

	if (rc == -ENOENT) {
		char **cids = NULL;
		size_t n = 0;
		bool have = false;
		struct os_txn *t = NULL;

		if (os_list_collections(o->store, &cids, &n) == 0)
			for (size_t i = 0; i < n; i++) {
				have |= strcmp(cids[i], META_CID) == 0;
				free(cids[i]);
			}
		free(cids);
		if (os_txn_create(&t) == 0 && (have || os_txn_mkcoll(t, META_CID) == 0) &&
		    os_txn_touch(t, META_CID, META_OID) == 0) {
			os_queue(o->store, t, NULL, NULL);
			o->meta_ok = true;
		} else if (t) {
			os_txn_destroy(t);
		}
		return;
	}
	if (rc) {
		CM_WARN("cannot read the kept map: %s (starting from the mons' map)",
			cm_strerror(rc));
		return;
	}
	if (os_omap_get(o->store, META_CID, META_OID, &key, 1, &val) || !val.val) {
		o->meta_ok = true;
		return;
	}
	rc = mon_client_seed_map(o->monc, val.val, val.vlen); /* (not saved again) */
	o->meta_ok = true;
	if (rc)
		CM_WARN("the kept map is unreadable (%s): starting from the mons' map",
			cm_strerror(rc));
	else if (o->map)
		CM_NOTICE("starting from the kept map, epoch %" PRIu64
			  "; replaying the epochs after it",
			  o->map->epoch);
	free(val.key);
	free(val.val);
}

static void
on_map(void *arg, const Cairn__Map__OsdMap *m)
{
	struct osd *o = arg;
	const Cairn__Map__Osd *me;

	me = o->id >= 0 ? mon_osd_find(m, o->id) : NULL;
	if (o->booted && me && !me->up && m->epoch > o->up_epoch) {
		CM_NOTICE("map epoch %" PRIu64 " marks us down: booting again", m->epoch);
		o->booted = false;
		o->last_boot_ms = 0;
	}
	CM_DEBUG("map epoch %" PRIu64, m->epoch);
	apply_map(o, m);
	{
		/* Packed once: for the other shards and for the store. */
		size_t len = cairn__map__osd_map__get_packed_size(m);
		uint8_t *buf = malloc(len ? len : 1);

		if (buf) {
			cairn__map__osd_map__pack(m, buf);
			shards_publish(o, buf, len);
			map_save(o, buf, len);
			free(buf);
		} else {
			CM_ERR("out of memory packing map epoch %" PRIu64, m->epoch);
		}
	}
	o->last_beacon_ms = 0; /* tell the mons our PGs' states soon */
}

static void
send_boot(struct osd *o)
{
	Cairn__Mon__OsdBoot b = CAIRN__MON__OSD_BOOT__INIT;

	b.osd_id = o->id;
	b.uuid = (char *)os_uuid(o->store);
	b.addr = o->addr;
	b.host = o->cfg->host;
	b.device_class = o->cfg->device_class;
	if (o->node->n > 1) {
		b.shard_addrs = o->node->addrs;
		b.n_shard_addrs = o->node->n;
	}
	o->last_boot_ms = cm_now_ms();
	mon_client_send(o->monc, MON_MSG_OSD_BOOT, ++o->tid, &b.base, true);
}

static void
on_reply(void *arg, struct cm_msg *m)
{
	struct osd *o = arg;

	if (m->type == MON_MSG_OSD_BOOT_REPLY) {
		Cairn__Mon__OsdBootReply *r = (Cairn__Mon__OsdBootReply *)cm_msg_unpack_front(
			m, &cairn__mon__osd_boot_reply__descriptor);

		if (r && r->rc == 0 && !o->booted) {
			if (o->id >= 0 && o->id != r->osd_id)
				CM_WARN("the mons gave us osd.%d, we were osd.%d", r->osd_id,
					o->id);
			o->id = r->osd_id;
			o->booted = true;
			o->up_epoch = r->epoch;
			CM_NOTICE("booted as osd.%d (epoch %" PRIu64 ") at %s%s", o->id, r->epoch,
				  o->addr, o->node->n > 1 ? " (and its other PG shards)" : "");
			mon_client_want_map(o->monc, r->epoch);
			/* The map that marks us up may have come before this reply. */
			if (o->map && o->pl_ok && o->epoch >= r->epoch)
				pg_on_map(o);
			shards_publish(o, NULL, 0);
		} else if (r && r->rc) {
			CM_LOG_RL(CM_LOG_WARN, "boot refused: %s (%s)", cm_strerror(r->rc),
				  r->error);
		}
		if (r)
			cairn__mon__osd_boot_reply__free_unpacked(r, NULL);
	}
	cm_msg_destroy(m);
}

/*
 * Heartbeats (shard 0): ping every other up OSD each osd_heartbeat_interval; one that
 * has not answered for osd_heartbeat_grace is reported failed to the mons
 * (they mark it down once mon_osd_min_down_reporters agree), and reported
 * alive again if it answers after all.
 */
static void
send_failure(struct osd *o, int32_t target, uint64_t silent_ms, bool alive)
{
	Cairn__Mon__OsdFailure f = CAIRN__MON__OSD_FAILURE__INIT;

	f.reporter = o->id;
	f.target = target;
	f.failed_for_ms = (uint32_t)CM_MIN(silent_ms, UINT32_MAX);
	f.alive = alive;
	mon_client_send(o->monc, MON_MSG_OSD_FAILURE, 0, &f.base, true);
}

static void
heartbeat(struct osd *o, uint64_t now)
{
	Cairn__Osd__Ping p = CAIRN__OSD__PING__INIT;

	p.from = o->id;
	p.epoch = o->epoch;
	p.stamp_ns = cm_now_ns();
	for (int i = 0; i < o->npeers; i++) {
		const Cairn__Map__Osd *mo = mon_osd_find(o->map, i);
		struct osd_peer *pe = &o->peers[i];

		if (i == o->id || !mo || !mo->up)
			continue;
		if (pe->hb_up_since != mo->up_since || !pe->hb_since_ms) {
			pe->hb_up_since = mo->up_since;
			pe->hb_since_ms = now;
			pe->hb_rx_ms = 0;
			pe->hb_report_ms = 0;
		}
		/* seed 0: the peer's first shard, which answers pings */
		osd_send_pb(osd_peer_conn(o, i, 0), OSD_MSG_PING, 0, &p.base, NULL);
		{
			uint64_t last = CM_MAX(pe->hb_rx_ms, pe->hb_since_ms);

			if (now - last >= o->cfg->hb_grace_ms &&
			    (!pe->hb_report_ms || now - pe->hb_report_ms >= o->cfg->hb_grace_ms)) {
				CM_LOG_RL(CM_LOG_WARN,
					  "osd.%d silent for %" PRIu64 " ms: reporting it", i,
					  now - last);
				send_failure(o, i, now - last, false);
				pe->hb_report_ms = now;
			}
		}
	}
}

static void
handle_ping(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__Ping *p =
		(Cairn__Osd__Ping *)cm_msg_unpack_front(m, &cairn__osd__ping__descriptor);

	cm_msg_destroy(m);
	if (!p)
		return;
	if (!p->reply) {
		Cairn__Osd__Ping r = *p;

		r.from = o->id;
		r.reply = true;
		osd_send_pb(c, OSD_MSG_PING, 0, &r.base, NULL);
	} else if (o->monc && p->from >= 0 && p->from < o->npeers && p->from != o->id) {
		struct osd_peer *pe = &o->peers[p->from];

		pe->hb_rx_ms = cm_now_ms();
		if (pe->hb_report_ms) {
			send_failure(o, p->from, 0, true);
			pe->hb_report_ms = 0;
		}
	}
	cairn__osd__ping__free_unpacked(p, NULL);
}

static void
send_beacon(struct osd *o, uint64_t now)
{
	struct osd_node *nd = o->node;
	Cairn__Mon__OsdBeacon b = CAIRN__MON__OSD_BEACON__INIT;
	Cairn__Mon__PgStat *st = NULL, **stp = NULL;
	struct osd_counters t = counters_of(o);
	struct os_usage u;
	size_t n = 0, all;

	os_get_usage(o->store, &u);
	b.osd_id = o->id;
	b.epoch = o->epoch;
	b.total_bytes = u.total_bytes;
	b.free_bytes = u.free_bytes;
	b.csum_errors = u.csum_errors;
	if (pg_stats(o, &st, &n))
		st = NULL, n = 0;
	pthread_mutex_lock(&nd->mu);
	all = n;
	for (unsigned k = 1; k < nd->n; k++) {
		all += nd->snap[k].npgs;
		counters_add(&t, &nd->snap[k].c);
	}
	b.ops = t.ops;
	b.bytes_in = t.bytes_in;
	b.bytes_out = t.bytes_out;
	b.rec_objects = t.rec_objects;
	b.rec_bytes = t.rec_bytes;
	b.ec_reads = t.ec_reads;
	b.ec_decodes = t.ec_decodes;
	if ((stp = calloc(all + 1, sizeof(*stp)))) {
		Cairn__Mon__PgStat *more = NULL;

		if (all > n && (more = calloc(all - n, sizeof(*more)))) {
			size_t j = 0;

			for (unsigned k = 1; k < nd->n; k++) {
				memcpy(more + j, nd->snap[k].pgs, sizeof(*more) * nd->snap[k].npgs);
				j += nd->snap[k].npgs;
			}
		} else {
			all = n;
		}
		for (size_t i = 0; i < n; i++)
			stp[i] = &st[i];
		for (size_t i = n; i < all; i++)
			stp[i] = &more[i - n];
		b.pgs = stp;
		b.n_pgs = all;
		pthread_mutex_unlock(&nd->mu);
		if (mon_client_send(o->monc, MON_MSG_OSD_BEACON, 0, &b.base, true) == 0)
			o->last_beacon_ms = now;
		free(more);
	} else {
		pthread_mutex_unlock(&nd->mu);
	}
	free(stp);
	free(st);
}

static void
on_tick(struct cm_timer *t)
{
	struct osd *o = t->arg;
	uint64_t now = cm_now_ms();

	if (o->shard > 0) {
		if (o->booted)
			pg_tick(o);
		/* A PG changed state (the PG code clears last_beacon_ms, as on
		 * shard 0): hand the states over now and have shard 0 beacon. */
		if (!o->last_beacon_ms || now - o->snap_ms >= o->cfg->beacon_ms / 2) {
			shard_snapshot(o);
			if (!o->last_beacon_ms)
				atomic_store(&o->node->beacon_soon, true);
			o->last_beacon_ms = now;
		}
		cm_timer_arm(o->r, &o->tick, TICK_MS);
		return;
	}
	if (!o->booted && now - o->last_boot_ms >= BOOT_EVERY_MS)
		send_boot(o);
	if (atomic_exchange(&o->node->beacon_soon, false))
		o->last_beacon_ms = 0;
	if (o->booted && now - o->last_beacon_ms >= o->cfg->beacon_ms)
		send_beacon(o, now);
	if (o->booted && o->epoch < o->up_epoch && now - o->last_map_ask_ms >= 1000) {
		/* Booted but the map that says so has not come: ask again. */
		o->last_map_ask_ms = now;
		mon_client_want_map(o->monc, o->up_epoch);
	}
	if (o->booted && o->map && now - o->last_hb_ms >= o->cfg->hb_interval_ms) {
		if (o->last_hb_ms && now - o->last_hb_ms > o->cfg->hb_grace_ms / 2) {
			/* We were not running (stopped, starved): our peers' silence says
			 * nothing about them. Start their clocks again. */
			for (int i = 0; i < o->npeers; i++)
				o->peers[i].hb_since_ms = 0;
		}
		o->last_hb_ms = now;
		heartbeat(o, now);
	}
	if (o->booted)
		pg_tick(o);
	cm_timer_arm(o->r, &o->tick, TICK_MS);
}

static void
on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct osd *o = arg;

	if (o->stopping) {
		cm_msg_destroy(m); /* shutting down: nothing new starts */
		return;
	}
	if (o->monc && mon_client_handle_msg(o->monc, c, m))
		return;
	switch (m->type) {
	case OSD_MSG_OP:
		pg_handle_op(o, c, m);
		break;
	case OSD_MSG_PG_LIST:
		pg_handle_list(o, c, m);
		break;
	case OSD_MSG_REP_OP:
		pg_handle_repop(o, c, m);
		break;
	case OSD_MSG_REP_OP_REPLY:
		pg_handle_repop_reply(o, c, m);
		break;
	case OSD_MSG_PG_QUERY:
		pg_handle_query(o, c, m);
		break;
	case OSD_MSG_PG_NOTIFY:
		pg_handle_notify(o, c, m);
		break;
	case OSD_MSG_PUSH:
		pg_handle_push(o, c, m);
		break;
	case OSD_MSG_PUSH_REPLY:
		pg_handle_push_reply(o, c, m);
		break;
	case OSD_MSG_PING:
		handle_ping(o, c, m);
		break;
	case OSD_MSG_RECOVER:
		pg_handle_recover(o, c, m);
		break;
	case OSD_MSG_RECOVER_DONE:
		pg_handle_recover_done(o, c, m);
		break;
	case OSD_MSG_PG_LOG:
		pg_handle_pg_log(o, c, m);
		break;
	case OSD_MSG_PG_LOG_ACK:
		pg_handle_pg_log_ack(o, c, m);
		break;
	case OSD_MSG_PG_REMOVE:
		pg_handle_pg_remove(o, c, m);
		break;
	case OSD_MSG_PG_LIST_REPLY: /* a shard's listing for an EC backfill */
		rec_handle_list_reply(o, c, m);
		break;
	case OSD_MSG_EC_READ:
		pg_handle_ec_read(o, c, m);
		break;
	case OSD_MSG_EC_READ_REPLY:
		pg_handle_ec_read_reply(o, c, m);
		break;
	default:
		CM_LOG_RL(CM_LOG_WARN, "unexpected message type=%u from %s", m->type,
			  cm_conn_peer(c));
		cm_msg_destroy(m);
		break;
	}
}

static void
on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct osd *o = arg;
	intptr_t u;

	if (o->monc && mon_client_handle_event(o->monc, c, ev, rc))
		return;
	u = (intptr_t)cm_conn_user(c);
	if (u > 0 && (ev == CM_CONN_RESET || ev == CM_CONN_FAILED || ev == CM_CONN_CLOSED)) {
		int32_t id = (int32_t)((u & 0xffffffff) - 1);
		unsigned k = (unsigned)(u >> 32);

		CM_INFO("session with osd.%d (shard %u): %s", id, k, cm_conn_event_name(ev));
		if (id < o->npeers && k < o->peers[id].nlinks && o->peers[id].links[k].c == c) {
			link_drop(&o->peers[id].links[k]);
			pg_peer_reset(o, id);
		}
	}
}

static int
open_store(struct osd *o, struct os_store **sp)
{
	struct os_opts so;
	int rc;

	os_opts_init(&so, sizeof(so));
	so.path = o->cfg->osd_data;
	so.db_path = o->cfg->osd_db[0] ? o->cfg->osd_db : NULL;
	so.block_size = (uint32_t)o->cfg->block_size;
	so.deferred_max = o->cfg->deferred_max;
	so.cache_data = o->cfg->data_cache;
	so.fsid = o->cfg->fsid[0] ? o->cfg->fsid : NULL;
	so.osd_id = -1;
	rc = os_mkfs(&so);
	if (rc == 0)
		CM_NOTICE("made a new store on %s", so.path);
	else if (rc != -EEXIST) {
		CM_ERR("cannot make a store on %s: %s", so.path, cm_strerror(rc));
		return rc;
	}
	rc = os_mount(o->r, &so, sp);
	if (rc)
		CM_ERR("cannot mount %s: %s", so.path, cm_strerror(rc));
	return rc;
}

/* Make shard k: its reactor, messenger and address (shard 0: the main thread's). */
static int
shard_open(struct osd_node *nd, struct osd *o, unsigned k, const char *listen_addr)
{
	struct osd_conf *cfg = o->cfg;
	struct cm_msgr_opts mo;
	char name[16];
	uint16_t port = 0;
	int rc;

	o->node = nd;
	o->shard = k;
	o->nshards = nd->n;
	TAILQ_INIT(&o->wait_map);
	TAILQ_INIT(&o->rjobs);
	TAILQ_INIT(&o->rjobs_ready);
	TAILQ_INIT(&o->ecrs);
	if (!o->r) {
		snprintf(name, sizeof(name), "osd-s%u", k);
		rc = cm_daemon_reactor_create(&cfg->d, name, &o->r);
		if (rc)
			return rc;
	}
	cm_daemon_msgr_opts(&cfg->d, &mo);
	/* Unique on the wire from the first boot on (sessions are per entity). */
	if (k == 0)
		snprintf(o->entity, sizeof(o->entity), "osd.%s", os_uuid(o->store));
	else
		snprintf(o->entity, sizeof(o->entity), "osd.%s.%u", os_uuid(o->store), k);
	mo.entity = o->entity;
	mo.ops = (struct cm_msgr_ops){ .on_msg = on_msg, .on_event = on_event };
	mo.ops_arg = o;
	mo.backoff_min_ms = 20;
	mo.backoff_max_ms = 500;
	rc = cm_msgr_create(o->r, &mo, &o->msgr);
	if (rc)
		return rc;
	rc = cm_msgr_listen(o->msgr, listen_addr, &port);
	if (rc) {
		CM_ERR("cannot listen on %s: %s", listen_addr, cm_strerror(rc));
		return rc;
	}
	snprintf(o->addr, sizeof(o->addr), "%.*s:%u", addr_host_len(listen_addr), listen_addr,
		 port);
	nd->addrs[k] = o->addr;
	cm_timer_init(&o->tick, on_tick, o);
	return 0;
}

/* Free what shard o holds (on its own thread, after its reactor stopped). */
static void
shard_close(struct osd *o)
{
	if (o->r)
		cm_timer_cancel(o->r, &o->tick);
	for (int i = 0; i < o->npeers; i++) {
		peer_drop(&o->peers[i]);
		free(o->peers[i].links);
	}
	free(o->peers);
	o->peers = NULL;
	o->npeers = 0;
	pg_free_all(o);
	ec_free_all(o);
	if (o->msgr)
		cm_msgr_destroy(o->msgr);
	o->msgr = NULL;
	if (o->pl_ok)
		mon_placement_free(&o->pl);
	o->pl_ok = false;
	o->map = NULL;
	if (o->own_map)
		cairn__map__osd_map__free_unpacked(o->own_map, NULL);
	o->own_map = NULL;
}

/* How long shutdown waits for the store calls and worker jobs in flight. */
#define DRAIN_MS 10000

/*
 * Shutdown, once o's reactor stopped: from now on o drops what arrives and
 * its tick starts nothing; run its reactor until every store call and
 * worker job it started has called back (shard 0 also until the other
 * shards have: their transactions run on its reactor) — only then may their
 * PGs, ops and jobs be freed. \return false after DRAIN_MS without that.
 */
static bool
shard_drain(struct osd *o)
{
	uint64_t t0 = cm_now_ms(), n0 = o->pending;

	o->stopping = true;
	cm_timer_cancel(o->r, &o->tick);
	while (o->pending || (o->shard == 0 && o->node && atomic_load(&o->node->draining))) {
		if (cm_now_ms() - t0 > DRAIN_MS)
			return false;
		/* (a stopped reactor does not sleep in run_once) */
		if (cm_reactor_run_once(o->r, 0) == 0)
			usleep(200);
	}
	if (n0)
		CM_NOTICE("stopping: shard %u waited %" PRIu64 " ms for the %" PRIu64
			  " store calls and worker jobs in flight",
			  o->shard, cm_now_ms() - t0, n0);
	return true;
}

static void *
shard_main(void *arg)
{
	struct osd *o = arg;

	cm_timer_arm(o->r, &o->tick, TICK_MS);
	cm_reactor_run(o->r);
	if (!shard_drain(o)) {
		/* Its state stays (calls still use it); shard 0 exits as a crash would. */
		atomic_store(&o->node->stuck, true);
		atomic_fetch_sub(&o->node->draining, 1);
		return NULL;
	}
	atomic_fetch_sub(&o->node->draining, 1);
	shard_close(o);
	return NULL;
}

int
osd_serve(struct osd_conf *cfg)
{
	struct osd o = { .cfg = cfg, .id = -1 };
	struct osd_node nd = { .n = (unsigned)cfg->op_shards };
	struct cm_daemon_signals *sig = NULL;
	struct mon_client_opts mco = { 0 };
	char err[256];
	sigset_t mask;
	size_t npgs = 0;
	int rc;

	if (!cfg->mon_host[0]) {
		fprintf(stderr, "cairn-osd: mon_host is not set\n");
		return 2;
	}
	if (!cfg->d.cluster_key[0]) {
		fprintf(stderr, "cairn-osd: cluster_key is not set\n");
		return 2;
	}
	if (nd.n < 1)
		nd.n = 1;
	pthread_mutex_init(&nd.mu, NULL);
	nd.sh = calloc(nd.n, sizeof(*nd.sh));
	nd.th = calloc(nd.n, sizeof(*nd.th));
	nd.th_started = calloc(nd.n, sizeof(*nd.th_started));
	nd.snap = calloc(nd.n, sizeof(*nd.snap));
	nd.addrs = calloc(nd.n, sizeof(*nd.addrs));
	if (!nd.sh || !nd.th || !nd.th_started || !nd.snap || !nd.addrs) {
		fprintf(stderr, "cairn-osd: out of memory\n");
		rc = -ENOMEM;
		goto out_free;
	}
	nd.sh[0] = &o;
	/* Threads made from here on inherit the blocked signals. */
	cm_daemon_block_signals(&mask);
	rc = cm_daemon_reactor_create(&cfg->d, "osd", &o.r);
	if (rc)
		goto out_free;
	rc = open_store(&o, &o.store);
	if (rc)
		goto out;
	rc = cm_worker_pool_create((unsigned)cfg->op_threads, "osd-op", &o.wp);
	if (rc)
		goto out;
	for (unsigned k = 1; k < nd.n; k++) {
		nd.sh[k] = calloc(1, sizeof(*nd.sh[k]));
		if (!nd.sh[k]) {
			rc = -ENOMEM;
			goto out;
		}
		*nd.sh[k] = (struct osd){ .cfg = cfg, .id = -1, .store = o.store, .wp = o.wp };
	}
	for (unsigned k = 0; k < nd.n; k++) {
		char listen[160];

		if (k == 0) {
			snprintf(listen, sizeof(listen), "%s", cfg->public_addr);
		} else { /* the same host, any free port */
			snprintf(listen, sizeof(listen), "%.*s:0", addr_host_len(cfg->public_addr),
				 cfg->public_addr);
		}
		rc = shard_open(&nd, nd.sh[k], k, listen);
		if (rc)
			goto out;
		rc = pg_load_all(nd.sh[k]);
		if (rc)
			goto out;
		npgs += nd.sh[k]->npgs;
	}
	mco.mon_host = cfg->mon_host;
	mco.subscribe = true;
	mco.ops = (struct mon_client_ops){ .on_map = on_map, .on_reply = on_reply };
	mco.arg = &o;
	rc = mon_client_create(o.r, o.msgr, &mco, &o.monc, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "cairn-osd: mon_host: %s\n", err);
		goto out;
	}
	map_seed(&o);
	rc = cm_daemon_write_pid(cfg->d.pid_file);
	if (rc)
		goto out;
	rc = cm_daemon_signals_watch(o.r, &mask, &sig);
	if (rc)
		goto out;
	for (unsigned k = 1; k < nd.n; k++) {
		atomic_fetch_add(&nd.draining, 1);
		rc = -pthread_create(&nd.th[k], NULL, shard_main, nd.sh[k]);
		if (rc) {
			atomic_fetch_sub(&nd.draining, 1);
			CM_ERR("cannot start PG shard %u: %s", k, cm_strerror(rc));
			goto out;
		}
		nd.th_started[k] = true;
	}
	cm_timer_arm(o.r, &o.tick, 1);
	CM_NOTICE("serving at %s, store uuid %s, %zu PGs on disk, %u PG shard%s", o.addr,
		  os_uuid(o.store), npgs, nd.n, nd.n > 1 ? "s" : "");
	rc = cm_reactor_run(o.r);
	CM_NOTICE("stopping");
	for (unsigned k = 1; k < nd.n; k++)
		if (nd.th_started[k])
			cm_reactor_stop(nd.sh[k]->r);
	if (!shard_drain(&o) || atomic_load(&nd.stuck)) {
		/* Freeing now could pull memory from under a callback: stop as a
		 * crash would (acknowledged writes are durable; the store replays). */
		CM_ERR("stopping: store calls or worker jobs still in flight after %d s: "
		       "exiting without unmounting the store (its next mount replays the journal)",
		       DRAIN_MS / 1000);
		_exit(1);
	}
out:
	for (unsigned k = 1; k < nd.n; k++)
		if (nd.th_started[k]) {
			cm_reactor_stop(nd.sh[k]->r);
			pthread_join(nd.th[k], NULL);
		}
	cm_daemon_signals_stop(sig);
	mon_client_destroy(o.monc);
	o.monc = NULL;
	shard_close(&o);
	for (unsigned k = 1; k < nd.n; k++)
		if (nd.sh[k] && !nd.th_started[k])
			shard_close(nd.sh[k]); /* never ran */
	cm_worker_pool_destroy(o.wp);
	/* The store's last completions for other shards go to their reactors
	 * (which drop them): destroy those after it. */
	if (o.store)
		os_umount(o.store);
	for (unsigned k = 1; k < nd.n; k++)
		if (nd.sh[k]) {
			cm_reactor_destroy(nd.sh[k]->r);
			free(nd.sh[k]);
		}
	cm_reactor_destroy(o.r);
out_free:
	if (nd.snap)
		for (unsigned k = 0; k < nd.n; k++)
			free(nd.snap[k].pgs);
	free(nd.snap);
	free(nd.sh);
	free(nd.th);
	free(nd.th_started);
	free(nd.addrs);
	pthread_mutex_destroy(&nd.mu);
	return rc ? 1 : 0;
}
