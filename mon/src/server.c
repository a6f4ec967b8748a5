/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A monitor's service (mon/server.h): the map and its subscribers, the etcd
 * watch and reload, requests (commands and boots answered from workers,
 * beacons and failure reports handed to the leader's logic), the tick that
 * runs the campaign and applies the leader's decisions, and metrics. What
 * the leader decides is in leader.c.
 */
#include "mon/server.h"
#include "mon/incremental.h"
#include "mon_int.h"
#include "cm/auth.h"
#include "cm/caps.h"
#include "cm/err.h"
#include "cm/http.h"
#include "cm/log.h"
#include "cm/metrics.h"
#include "cm/worker.h"

#include <openssl/crypto.h>

CM_LOG_SUBSYS(mon);

#define INC_RING MON_SERVER_INC_RING

struct sub {
	TAILQ_ENTRY(sub) link;
	struct cm_conn *c;
	uint64_t epoch;
};

/* The periodic lease/election/leader work, one at a time. */
struct tick {
	struct cm_work w;
	struct mon_server *s;
	struct mon_leader_round rd;
};

/* A request answered from a worker. */
struct req {
	struct cm_work w;
	struct mon_server *s;
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
	struct mon_health health; /* HEALTH_REQUEST, when rc is 0 */
};

struct map_post {
	struct mon_server *s;
	Cairn__Map__OsdMap *map; /* NULL: the watch failed; reload */
};

struct mon_server {
	struct cm_reactor *r;
	struct cm_etcd *e;
	char *id, *fsid, *addr;
	uint64_t tick_ms;
	struct cm_msgr *m;
	uint16_t port;
	struct cm_worker_pool *wp;
	struct mon_map_store *store;
	struct cm_metrics *metrics;
	struct cm_counter *commands, *map_msgs;
	struct cm_http_metrics *http;
	char osdmap_key[200];
	struct cm_etcd_watch *watch;
	bool stopping;

	Cairn__Map__OsdMap *map;
	Cairn__Map__Incremental *ring[INC_RING];
	uint64_t ring_lo; /* ring holds epochs [ring_lo, map->epoch] (ring_lo > epoch: none) */
	TAILQ_HEAD(, sub) subs;
	unsigned nsubs;

	struct mon_leader *leader;
	struct tick tick;
	bool tick_busy;
	bool tick_kick; /* run the next tick as soon as this one is done */
	struct cm_timer tick_timer;

	uint8_t kek[CM_AUTH_KEY_LEN]; /* from the cluster key (mon/auth.h) */
	bool have_kek;
	struct mon_auth_cache *auth; /* the entities and service secrets (with a KEK) */
	uint64_t rotated_gen;        /* the leader's last rotation of the service secrets */
	uint64_t ticket_ns;          /* a ticket's life */
	struct cm_counter *refused;  /* requests refused for the caller's caps */
};

void
mon_server_opts_init(struct mon_server_opts *o, size_t size)
{
	memset(o, 0, size);
	o->opts_size = size;
	cm_msgr_opts_init(&o->msgr, sizeof(o->msgr));
	mon_leader_opts_init(&o->leader, sizeof(o->leader));
	o->tick_ms = 1000;
	o->workers = 2;
}

/* ---------- map state and subscribers (reactor) ---------- */

/* Bring a client at `have` up to date: incrementals from the ring, else the full map. */
static int
send_map(struct mon_server *s, struct cm_conn *c, uint64_t tid, uint64_t have)
{
	Cairn__Mon__MapUpdate up = CAIRN__MON__MAP_UPDATE__INIT;
	Cairn__Map__Incremental *incs[INC_RING];
	uint64_t cur = s->map->epoch;

	if (have && have < cur && have + 1 >= s->ring_lo) {
		for (uint64_t e = have + 1; e <= cur; e++)
			incs[up.n_incs++] = s->ring[e % INC_RING];
		up.incs = incs;
	} else if (have != cur) {
		up.full = s->map;
	}
	cm_counter_add(s->map_msgs, 1);
	return cm_conn_send_pb(c, MON_MSG_MAP_UPDATE, tid, &up.base, NULL);
}

static void
set_map(struct mon_server *s, Cairn__Map__OsdMap *nm)
{
	Cairn__Map__Incremental *inc = NULL;
	struct sub *sb, *tmp;
	char why[MON_ERRLEN];

	if (s->map && nm->epoch <= s->map->epoch) {
		cairn__map__osd_map__free_unpacked(nm, NULL);
		return;
	}
	if (mon_map_validate(nm, why)) {
		CM_ERR("ignoring map epoch=%" PRIu64 " from etcd: %s", nm->epoch, why);
		cairn__map__osd_map__free_unpacked(nm, NULL);
		return;
	}
	if (s->map && nm->epoch == s->map->epoch + 1 && mon_map_diff(s->map, nm, &inc) == 0) {
		if (s->ring_lo > s->map->epoch)
			s->ring_lo = nm->epoch;
		if (nm->epoch >= s->ring_lo + INC_RING)
			s->ring_lo = nm->epoch - INC_RING + 1;
		if (s->ring[nm->epoch % INC_RING])
			cairn__map__incremental__free_unpacked(s->ring[nm->epoch % INC_RING], NULL);
		s->ring[nm->epoch % INC_RING] = inc;
	} else {
		s->ring_lo = nm->epoch + 1; /* a gap: no incrementals until the next epoch */
	}
	if (s->map)
		cairn__map__osd_map__free_unpacked(s->map, NULL);
	s->map = nm;
	/* OSDs that came up start their grace now; down ones lose their reports. */
	mon_leader_map(s->leader, nm, cm_now_ns());
	CM_INFO("map epoch=%" PRIu64 " osds=%zu pools=%zu", nm->epoch, nm->n_osds, nm->n_pools);
	TAILQ_FOREACH_SAFE(sb, &s->subs, link, tmp) {
		if (sb->epoch < nm->epoch && send_map(s, sb->c, 0, sb->epoch) == 0)
			sb->epoch = nm->epoch;
	}
}

static void reload_submit(struct mon_server *s);

static void
on_map_post(void *arg)
{
	struct map_post *p = arg;
	struct mon_server *s = p->s;

	if (p->map)
		set_map(s, p->map);
	else if (!s->stopping)
		reload_submit(s);
	free(p);
}

/* Watch thread. */
static void
on_watch(void *arg, const struct cm_etcd_event *ev, int rc)
{
	struct mon_server *s = arg;
	struct map_post *p;

	if (ev && ev->type != CM_ETCD_EV_PUT)
		return;
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->s = s;
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
	if (cm_reactor_send_msg(s->r, on_map_post, p)) {
		if (p->map)
			cairn__map__osd_map__free_unpacked(p->map, NULL);
		free(p);
	}
}

/* Read the map and (re)start the watch after it. Blocking. */
static int
load_and_watch(struct mon_server *s, Cairn__Map__OsdMap **mp)
{
	struct cm_etcd_range r;
	int rc = cm_etcd_get(s->e, s->osdmap_key, strlen(s->osdmap_key), NULL, 0, 0, &r);

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
	cm_etcd_watch_stop(s->watch);
	s->watch = NULL;
	rc = cm_etcd_watch_start(s->e, s->osdmap_key, strlen(s->osdmap_key), NULL, 0,
				 r.revision + 1, on_watch, s, &s->watch);
	cm_etcd_range_free(&r);
	return rc;
}

struct reload {
	struct cm_work w;
	struct mon_server *s;
	Cairn__Map__OsdMap *map;
	int rc;
};

static void
reload_fn(void *arg)
{
	struct reload *rl = arg;

	rl->rc = load_and_watch(rl->s, &rl->map);
}

static void
reload_done(void *arg)
{
	struct reload *rl = arg;

	if (rl->rc)
		CM_ERR("reloading the map: %s", cm_strerror(rl->rc));
	else
		set_map(rl->s, rl->map);
	free(rl);
}

static void
reload_submit(struct mon_server *s)
{
	struct reload *rl = calloc(1, sizeof(*rl));

	if (!rl)
		return;
	rl->s = s;
	rl->w = (struct cm_work){ .fn = reload_fn, .done = reload_done, .arg = rl };
	if (cm_worker_submit(s->wp, s->r, &rl->w))
		free(rl);
}

/* ---------- the tick: lease, election, the leader's decisions ---------- */

static void
tick_fn(void *arg)
{
	struct tick *t = arg;
	struct mon_server *s = t->s;

	mon_leader_round(s->leader, s->e, s->store, &t->rd, cm_now_ns());
	/* The leader keeps the service secrets' generations (once per hour). */
	if (s->have_kek && mon_leader_is_leader(s->leader) &&
	    mon_auth_gen(cm_wall_ns()) != s->rotated_gen) {
		bool changed;
		int rc = mon_auth_rotate(s->e, s->fsid, s->kek, cm_wall_ns(), &changed);

		if (rc)
			CM_WARN("rotating the service secrets: %s", cm_strerror(rc));
		else
			s->rotated_gen = mon_auth_gen(cm_wall_ns());
		if (!rc && changed)
			CM_NOTICE("service secrets rotated: generation %" PRIu64 " current",
				  s->rotated_gen);
	}
}

static void
tick_done(void *arg)
{
	struct tick *t = arg;
	struct mon_server *s = t->s;

	s->tick_busy = false;
	mon_leader_decision_fini(&t->rd.dec);
	mon_leader_round_done(s->leader, &t->rd, cm_now_ns());
	if (!s->stopping)
		cm_timer_arm(s->r, &s->tick_timer, s->tick_kick ? 0 : s->tick_ms);
	s->tick_kick = false;
}

/*
 * Decide now rather than at the next tick (an OSD's process is gone: its
 * peers' connections are refused). A tick in flight runs again at once
 * when it is done.
 */
static void
tick_kick(struct mon_server *s)
{
	if (s->stopping || !mon_leader_is_leader(s->leader))
		return;
	if (s->tick_busy) {
		s->tick_kick = true;
		return;
	}
	if (cm_timer_armed(&s->tick_timer))
		cm_timer_cancel(s->r, &s->tick_timer);
	cm_timer_arm(s->r, &s->tick_timer, 0);
}

static void
on_tick(struct cm_timer *tm)
{
	struct mon_server *s = tm->arg;
	struct tick *t = &s->tick;

	if (s->tick_busy || s->stopping)
		return;
	memset(&t->rd, 0, sizeof(t->rd));
	t->s = s;
	/* Decided here, on the map this mon serves; applied by the worker to the newest. */
	if (mon_leader_is_leader(s->leader) && s->map &&
	    mon_leader_decide(s->leader, s->map, cm_now_ns(), &t->rd.dec) == 0)
		mon_leader_decide_expiry(&t->rd.dec, s->map, cm_wall_ns());
	t->w = (struct cm_work){ .fn = tick_fn, .done = tick_done, .arg = t };
	s->tick_busy = true;
	if (cm_worker_submit(s->wp, s->r, &t->w)) {
		s->tick_busy = false;
		mon_leader_decision_fini(&t->rd.dec);
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

static struct req *
req_new(struct mon_server *s, struct cm_conn *c, uint64_t tid)
{
	struct req *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->s = s;
	q->c = cm_conn_get(c);
	q->tid = tid;
	return q;
}

static void
cmd_fn(void *arg)
{
	struct req *q = arg;
	struct mon_cmd_env env = { .etcd = q->s->e,
				   .store = q->s->store,
				   .fsid = q->s->fsid,
				   .stats = &q->stats,
				   .kek = q->s->have_kek ? q->s->kek : NULL };

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

	q->rc = mon_map_update(q->s->store, boot_edit_fn, &be, &q->epoch);
	if (q->rc == 1)
		q->rc = 0;
}

static void
boot_done(void *arg)
{
	struct req *q = arg;
	Cairn__Mon__OsdBootReply rep = CAIRN__MON__OSD_BOOT_REPLY__INIT;

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
	if (!q->rc)
		mon_leader_booted(q->s->leader, q->osd_id, cm_now_ns());
	cm_conn_send_pb(q->c, MON_MSG_OSD_BOOT_REPLY, q->tid, &rep.base, NULL);
	req_free(q);
}

/* ---------- identities (docs/design/auth.md) ---------- */

/* The messenger's auth_fn: the key a peer naming auth_name must prove. */
static int
auth_fn(void *arg, const struct cm_hs_hello_auth *h, uint8_t key[CM_HS_KEY_LEN],
	struct cm_hs_auth *a, char *reason, size_t rlen)
{
	struct mon_server *s = arg;
	int rc = mon_auth_cache_lookup(s->auth, h->auth_name, key, &a->caps);

	if (rc == -ENOENT)
		snprintf(reason, rlen, "no such entity");
	else if (rc)
		snprintf(reason, rlen, "%s", cm_strerror(rc));
	return rc ? -CM_EAUTH : 0;
}

/* The caller's caps and name; NULL caps: the shared cluster key (no identities). */
static const struct cm_caps *
caller(const struct cm_conn *c, const char **name)
{
	const struct cm_conn_auth *a = cm_conn_auth(c);

	*name = a->name[0] ? a->name : cm_conn_peer(c);
	return a->name[0] ? &a->caps : NULL;
}

/*
 * The caller's caps as they are now (the cache: an `auth caps` or `auth rm`
 * since the session began counts at once), parsed into *tmp (cm_caps_fini
 * it). NULL: the shared cluster key. An entity gone has none.
 */
static const struct cm_caps *
fresh(struct mon_server *s, struct cm_conn *c, const char **name, struct cm_caps *tmp)
{
	char *text = NULL, err[8];
	uint8_t key[CM_AUTH_KEY_LEN];

	memset(tmp, 0, sizeof(*tmp));
	if (!caller(c, name))
		return NULL;
	if (s->auth && mon_auth_cache_lookup(s->auth, *name, key, &text) == 0 &&
	    cm_caps_parse(text, tmp, err, sizeof(err)))
		memset(tmp, 0, sizeof(*tmp));
	OPENSSL_cleanse(key, sizeof(key));
	free(text);
	return tmp;
}

/* Does the caller lack mon access `need`? Then count and log it. */
static bool
lacks_mon(struct mon_server *s, struct cm_conn *c, unsigned need, const char *what)
{
	const char *name;
	struct cm_caps tmp;
	const struct cm_caps *caps = fresh(s, c, &name, &tmp);
	bool ok = !caps || cm_caps_mon(caps, need);

	cm_caps_fini(&tmp);
	if (ok)
		return false;
	cm_counter_add(s->refused, 1);
	CM_LOG_RL(CM_LOG_NOTICE, "%s from %s refused: it needs mon %s", what, name,
		  need & CM_CAP_W ? "w" : "r");
	return true;
}

/* Boots, beacons and failure reports come from OSDs only. */
static bool
not_osd(struct mon_server *s, struct cm_conn *c, const char *what)
{
	const char *name;
	const struct cm_caps *caps = caller(c, &name);

	if (!caps || cm_caps_is_osd(caps))
		return false;
	cm_counter_add(s->refused, 1);
	CM_LOG_RL(CM_LOG_WARN, "%s from %s refused: its caps are not an OSD's", what, name);
	return true;
}

static void
on_ticket(struct mon_server *s, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Mon__AuthTicketReply r = CAIRN__MON__AUTH_TICKET_REPLY__INIT;
	uint8_t ekey[CM_AUTH_KEY_LEN];
	const char *name;
	char *caps = NULL, err[160] = "";
	int rc;

	if (!caller(c, &name)) {
		rc = -EPERM;
		snprintf(err, sizeof(err), "this session proved the shared key, not an entity's");
	} else if (!s->auth) {
		rc = -EPERM;
		snprintf(err, sizeof(err), "this monitor holds no cluster key");
	} else {
		rc = mon_auth_cache_lookup(s->auth, name, ekey, &caps);
		if (rc)
			snprintf(err, sizeof(err), "%s: %s", name,
				 rc == -ENOENT ? "removed" : cm_strerror(rc));
		else
			rc = mon_ticket_make(mon_auth_cache_secrets(s->auth), cm_wall_ns(),
					     s->ticket_ns, name, ekey, caps,
					     s->map ? s->map->auth_epoch : 0, &r);
		if (rc == -EAGAIN)
			snprintf(err, sizeof(err), "no service secret yet (the leader makes them)");
		OPENSSL_cleanse(ekey, sizeof(ekey));
		free(caps);
	}
	r.rc = rc;
	r.err = err;
	cm_conn_send_pb(c, MON_MSG_AUTH_TICKET_REPLY, m->tid, &r.base, NULL);
	mon_ticket_reply_fini(&r);
}

static void
on_rotating(struct mon_server *s, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Mon__AuthRotatingReply r = CAIRN__MON__AUTH_ROTATING_REPLY__INIT;
	uint8_t ekey[CM_AUTH_KEY_LEN];
	const char *name;
	const struct cm_caps *caps = caller(c, &name);
	char err[160] = "", aad[CM_HS_ENTITY_MAX + 32];
	int rc = 0;

	if (!caps || !cm_caps_is_osd(caps) || !s->auth) {
		rc = -EPERM;
		snprintf(err, sizeof(err), "only OSDs get the service secrets");
		cm_counter_add(s->refused, 1);
	} else if (mon_auth_cache_secrets(s->auth)->n == 0) {
		rc = -EAGAIN;
		snprintf(err, sizeof(err), "no service secret yet (the leader makes them)");
	} else if ((rc = mon_auth_cache_lookup(s->auth, name, ekey, NULL)) == 0) {
		snprintf(aad, sizeof(aad), "cairn-rotating %s", name);
		rc = mon_secrets_seal(ekey, aad, mon_auth_cache_secrets(s->auth),
				      &r.secrets_sealed.data, &r.secrets_sealed.len);
		OPENSSL_cleanse(ekey, sizeof(ekey));
	}
	if (rc && !err[0])
		snprintf(err, sizeof(err), "%s", cm_strerror(rc));
	r.rc = rc;
	r.err = err;
	cm_conn_send_pb(c, MON_MSG_AUTH_ROTATING_REPLY, m->tid, &r.base, NULL);
	free(r.secrets_sealed.data);
}

/* Answer NOT_LEADER unless this mon leads. \return true if it answered. */
static bool
need_leader(struct mon_server *s, struct cm_conn *c, uint64_t tid)
{
	Cairn__Mon__NotLeader nl = CAIRN__MON__NOT_LEADER__INIT;

	if (mon_leader_is_leader(s->leader))
		return false;
	nl.leader = (char *)mon_leader_name(s->leader);
	nl.addr = (char *)mon_leader_addr(s->leader);
	cm_conn_send_pb(c, MON_MSG_NOT_LEADER, tid, &nl.base, NULL);
	return true;
}

static void
on_map_request(struct mon_server *s, struct cm_conn *c, const struct cm_msg *m,
	       Cairn__Mon__MapRequest *mr)
{
	struct sub *sb;

	if (!mr || !s->map)
		return;
	send_map(s, c, m->tid, mr->have_epoch);
	if (!mr->subscribe)
		return;
	TAILQ_FOREACH(sb, &s->subs, link)
		if (sb->c == c)
			break;
	if (!sb && (sb = calloc(1, sizeof(*sb)))) {
		sb->c = cm_conn_get(c);
		TAILQ_INSERT_TAIL(&s->subs, sb, link);
		s->nsubs++;
	}
	if (sb)
		sb->epoch = s->map->epoch;
}

static void
on_command(struct mon_server *s, struct cm_conn *c, struct cm_msg *m)
{
	struct req *q = req_new(s, c, m->tid);

	if (!q)
		return;
	q->cmd = (Cairn__Mon__Command *)cm_msg_unpack_front(m, &cairn__mon__command__descriptor);
	if (!q->cmd) {
		req_free(q);
		return;
	}
	{
		const char *name;
		struct cm_caps tmp;
		const struct cm_caps *caps = fresh(s, c, &name, &tmp);
		enum mon_cmd_need need = mon_command_need((int)q->cmd->n_args, q->cmd->args);
		bool ok = !caps || caps->admin ||
			  (need == MON_NEED_R && cm_caps_mon(caps, CM_CAP_R)) ||
			  (need == MON_NEED_W && cm_caps_mon(caps, CM_CAP_W)) ||
			  (need == MON_NEED_BOOTSTRAP && caps->profile_bootstrap_osd);

		cm_caps_fini(&tmp);
		if (!ok) {
			Cairn__Mon__CommandReply rep = CAIRN__MON__COMMAND_REPLY__INIT;
			char err[256];

			snprintf(err, sizeof(err), "%s may not run '%s%s%s': it needs %s", name,
				 q->cmd->n_args ? q->cmd->args[0] : "",
				 q->cmd->n_args > 1 ? " " : "",
				 q->cmd->n_args > 1 ? q->cmd->args[1] : "",
				 need == MON_NEED_R   ? "mon r"
				 : need == MON_NEED_W ? "mon w"
						      : "admin");
			cm_counter_add(s->refused, 1);
			CM_LOG_RL(CM_LOG_NOTICE, "%s", err);
			rep.rc = -EPERM;
			rep.out = (char *)"";
			rep.err = err;
			cm_conn_send_pb(c, MON_MSG_COMMAND_REPLY, m->tid, &rep.base, NULL);
			req_free(q);
			return;
		}
	}
	if ((q->cmd->n_args == 1 && strcmp(q->cmd->args[0], "status") == 0) ||
	    (q->cmd->n_args >= 2 && strcmp(q->cmd->args[0], "pg") == 0)) {
		/* The OSDs' stats live at the leader: send status there. */
		if (!mon_leader_is_leader(s->leader) && mon_leader_addr(s->leader)[0]) {
			need_leader(s, c, m->tid);
			req_free(q);
			return;
		}
		if (mon_leader_is_leader(s->leader))
			mon_leader_stats(s->leader, s->map, &q->stats);
	}
	cm_counter_add(s->commands, 1);
	q->w = (struct cm_work){ .fn = cmd_fn, .done = cmd_done, .arg = q };
	if (cm_worker_submit(s->wp, s->r, &q->w))
		req_free(q);
}

/* DF_REQUEST: from the leader's stats and the map it serves, on the reactor. */
static void
on_df(struct mon_server *s, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Mon__DfReply r;
	struct mon_stats st = { 0 };

	if (lacks_mon(s, c, CM_CAP_R, "df")) {
		cairn__mon__df_reply__init(&r);
		r.rc = -EPERM;
		cm_conn_send_pb(c, MON_MSG_DF_REPLY, m->tid, &r.base, NULL);
		return;
	}
	if (need_leader(s, c, m->tid))
		return;
	if (!s->map) {
		cairn__mon__df_reply__init(&r);
		r.rc = -EAGAIN;
		cm_conn_send_pb(c, MON_MSG_DF_REPLY, m->tid, &r.base, NULL);
		return;
	}
	mon_leader_stats(s->leader, s->map, &st);
	if (mon_df_fill(s->map, &st, &r)) {
		cairn__mon__df_reply__init(&r);
		r.rc = -ENOMEM;
	}
	cm_conn_send_pb(c, MON_MSG_DF_REPLY, m->tid, &r.base, NULL);
	mon_df_reply_fini(&r);
	mon_stats_free(&st);
}

static void
health_fn(void *arg)
{
	struct req *q = arg;
	struct mon_cmd_env env = {
		.etcd = q->s->e, .store = q->s->store, .fsid = q->s->fsid, .stats = &q->stats
	};

	q->rc = mon_health_read(&env, &q->health, q->errbuf, sizeof(q->errbuf));
}

static void
health_done(void *arg)
{
	struct req *q = arg;
	Cairn__Mon__HealthReply r = CAIRN__MON__HEALTH_REPLY__INIT;
	Cairn__Mon__HealthCheck *hc = NULL, **hcp = NULL;

	r.rc = q->rc;
	if (!q->rc) {
		hc = calloc(q->health.nchecks + 1, sizeof(*hc));
		hcp = calloc(q->health.nchecks + 1, sizeof(*hcp));
		if (!hc || !hcp)
			r.rc = -ENOMEM;
	}
	if (!q->rc && hc && hcp) {
		r.status = (uint32_t)q->health.status;
		for (size_t i = 0; i < q->health.nchecks; i++) {
			const struct mon_health_check *k = &q->health.checks[i];

			cairn__mon__health_check__init(&hc[i]);
			hc[i].code = (char *)k->code;
			hc[i].severity = (uint32_t)k->severity;
			hc[i].summary = (char *)k->summary;
			hc[i].detail = k->detail;
			hc[i].n_detail = k->ndetail;
			hcp[i] = &hc[i];
		}
		r.checks = hcp;
		r.n_checks = q->health.nchecks;
	}
	r.err = r.rc ? (q->errbuf[0] ? q->errbuf : (char *)cm_strerror(r.rc)) : (char *)"";
	cm_conn_send_pb(q->c, MON_MSG_HEALTH_REPLY, q->tid, &r.base, NULL);
	free(hc);
	free(hcp);
	if (!q->rc)
		mon_health_free(&q->health);
	req_free(q);
}

/* HEALTH_REQUEST: read and computed on a worker, as the health command. */
static void
on_health(struct mon_server *s, struct cm_conn *c, struct cm_msg *m)
{
	struct req *q;

	if (lacks_mon(s, c, CM_CAP_R, "health")) {
		Cairn__Mon__HealthReply r = CAIRN__MON__HEALTH_REPLY__INIT;

		r.rc = -EPERM;
		r.err = (char *)"it needs mon r";
		cm_conn_send_pb(c, MON_MSG_HEALTH_REPLY, m->tid, &r.base, NULL);
		return;
	}
	if (need_leader(s, c, m->tid) || !(q = req_new(s, c, m->tid)))
		return;
	if (s->map)
		mon_leader_stats(s->leader, s->map, &q->stats);
	q->w = (struct cm_work){ .fn = health_fn, .done = health_done, .arg = q };
	if (cm_worker_submit(s->wp, s->r, &q->w))
		req_free(q);
}

static void
on_boot(struct mon_server *s, struct cm_conn *c, struct cm_msg *m)
{
	struct req *q;

	if (need_leader(s, c, m->tid))
		return;
	q = req_new(s, c, m->tid);
	if (!q)
		return;
	q->boot = (Cairn__Mon__OsdBoot *)cm_msg_unpack_front(m, &cairn__mon__osd_boot__descriptor);
	if (!q->boot) {
		req_free(q);
		return;
	}
	{
		/* An OSD boots as itself: its entity is osd.<its store's uuid>. */
		const char *name;
		const struct cm_caps *caps = caller(c, &name);

		if (caps && !caps->admin &&
		    (!cm_caps_is_osd(caps) || strncmp(name, "osd.", 4) ||
		     strcmp(name + 4, q->boot->uuid ? q->boot->uuid : ""))) {
			cm_counter_add(s->refused, 1);
			q->rc = -EPERM;
			snprintf(q->errbuf, sizeof(q->errbuf),
				 "%s may not boot the OSD of store %s (an OSD is osd.<its uuid>, "
				 "with profile osd)",
				 name, q->boot->uuid ? q->boot->uuid : "?");
			boot_done(q);
			return;
		}
	}
	q->w = (struct cm_work){ .fn = boot_fn, .done = boot_done, .arg = q };
	if (cm_worker_submit(s->wp, s->r, &q->w))
		req_free(q);
}

static void
on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct mon_server *s = arg;
	ProtobufCMessage *pb = NULL;

	switch (m->type) {
	case MON_MSG_MAP_REQUEST: {
		Cairn__Mon__MapRequest *mr = (Cairn__Mon__MapRequest *)cm_msg_unpack_front(
			m, &cairn__mon__map_request__descriptor);

		pb = &mr->base;
		on_map_request(s, c, m, mr);
		break;
	}
	case MON_MSG_COMMAND:
		on_command(s, c, m);
		break;
	case MON_MSG_DF_REQUEST:
		on_df(s, c, m);
		break;
	case MON_MSG_HEALTH_REQUEST:
		on_health(s, c, m);
		break;
	case MON_MSG_OSD_BOOT:
		on_boot(s, c, m);
		break;
	case MON_MSG_AUTH_TICKET_REQUEST:
		on_ticket(s, c, m);
		break;
	case MON_MSG_AUTH_ROTATING_REQUEST:
		on_rotating(s, c, m);
		break;
	case MON_MSG_OSD_BEACON: {
		Cairn__Mon__OsdBeacon *b = (Cairn__Mon__OsdBeacon *)cm_msg_unpack_front(
			m, &cairn__mon__osd_beacon__descriptor);

		pb = &b->base;
		if (!b || not_osd(s, c, "beacon") || need_leader(s, c, m->tid))
			break;
		{
			bool ready = false;

			for (size_t i = 0; i < b->n_pgs && !ready; i++)
				ready = b->pgs[i]->merge_ready;
			if (mon_leader_beacon(s->leader, b, cm_now_ns()) == 0)
				pb = NULL; /* kept */
			if (ready)
				tick_kick(s); /* a merge step may be complete now */
		}
		break;
	}
	case MON_MSG_OSD_FAILURE: {
		Cairn__Mon__OsdFailure *f = (Cairn__Mon__OsdFailure *)cm_msg_unpack_front(
			m, &cairn__mon__osd_failure__descriptor);

		pb = &f->base;
		if (f && !not_osd(s, c, "failure report") && !need_leader(s, c, m->tid)) {
			mon_leader_failure(s->leader, f, cm_now_ns());
			if (f->immediate && !f->alive)
				tick_kick(s);
		}
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
drop_sub(struct mon_server *s, struct cm_conn *c)
{
	struct sub *sb, *tmp;

	TAILQ_FOREACH_SAFE(sb, &s->subs, link, tmp) {
		if (sb->c != c)
			continue;
		TAILQ_REMOVE(&s->subs, sb, link);
		s->nsubs--;
		cm_conn_put(sb->c);
		free(sb);
	}
}

static void
on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct mon_server *s = arg;

	CM_DEBUG("session event=%s peer=%s rc=%d", cm_conn_event_name(ev), cm_conn_peer(c), rc);
	if (ev == CM_CONN_CLOSED || ev == CM_CONN_RESET || ev == CM_CONN_FAILED)
		drop_sub(s, c);
}

/* ---------- metrics ---------- */

static double
g_epoch(void *arg)
{
	struct mon_server *s = arg;

	return s->map ? (double)s->map->epoch : 0;
}

static double
g_leader(void *arg)
{
	return mon_leader_is_leader(((struct mon_server *)arg)->leader) ? 1 : 0;
}

static double
g_subs(void *arg)
{
	return (double)((struct mon_server *)arg)->nsubs;
}

static int
setup_metrics(struct mon_server *s)
{
	if (cm_metrics_create(&s->metrics))
		return -ENOMEM;
	s->commands =
		cm_metrics_counter(s->metrics, "cairn_mon_commands_total", NULL, "Commands run.");
	s->map_msgs = cm_metrics_counter(s->metrics, "cairn_mon_map_messages_total", NULL,
					 "Map updates sent to clients.");
	s->refused = cm_metrics_counter(s->metrics, "cairn_mon_auth_refused_total", NULL,
					"Requests refused for the caller's caps.");
	if (!s->commands || !s->map_msgs || !s->refused ||
	    cm_metrics_gauge_fn(s->metrics, "cairn_mon_epoch", NULL, "Map epoch.", g_epoch, s) ||
	    cm_metrics_gauge_fn(s->metrics, "cairn_mon_leader", NULL, "1 on the leader.", g_leader,
				s) ||
	    cm_metrics_gauge_fn(s->metrics, "cairn_mon_subscribers", NULL,
				"Sessions subscribed to the map.", g_subs, s) ||
	    cm_msgr_metrics_register(s->metrics, NULL, s->m, s->r))
		return -ENOMEM;
	return 0;
}

/* ---------- start and stop ---------- */

static int
start(struct mon_server *s, const struct mon_server_opts *o)
{
	struct mon_leader_opts lo = o->leader;
	struct cm_msgr_opts mo = o->msgr;
	uint16_t mport = 0;
	int rc;

	lo.fsid = s->fsid;
	lo.id = s->id;
	lo.addr = s->addr;
	rc = mon_leader_create(&lo, &s->leader);
	if (rc) {
		CM_ERR_RC(rc, "leader options");
		return rc;
	}
	rc = mon_map_store_open(s->e, s->fsid, &s->store);
	if (!rc)
		rc = cm_worker_pool_create(o->workers, "mon-etcd", &s->wp);
	if (rc) {
		CM_ERR_RC(rc, "map store and workers");
		return rc;
	}
	mon_key_path(s->fsid, "osdmap", NULL, s->osdmap_key, sizeof(s->osdmap_key));
	rc = load_and_watch(s, &s->map);
	if (rc) {
		CM_ERR_RC(rc, "reading the map fsid=%s", s->fsid);
		return rc;
	}
	s->ring_lo = s->map->epoch + 1;
	/* The leader tracks every OSD of the first map too: the up ones start
	 * their grace now (else a mon that restarted and leads at once found
	 * them never beaconing, and status counted none). */
	mon_leader_map(s->leader, s->map, cm_now_ns());
	if (s->have_kek) {
		rc = mon_auth_cache_create(s->r, s->e, s->wp, s->fsid, s->kek, &s->auth);
		if (rc) {
			CM_ERR_RC(rc, "reading the entities fsid=%s", s->fsid);
			return rc;
		}
		mo.auth.auth_fn = auth_fn; /* every peer proves its own entity's key */
	}
	mo.ops = (struct cm_msgr_ops){ .on_msg = on_msg, .on_event = on_event };
	mo.ops_arg = s;
	rc = cm_msgr_create(s->r, &mo, &s->m);
	if (!rc)
		rc = cm_msgr_listen(s->m, s->addr, &s->port);
	if (rc) {
		CM_ERR_RC(rc, "listen addr=%s", s->addr);
		return rc;
	}
	rc = setup_metrics(s);
	if (rc)
		return rc;
	if (o->metrics_addr && o->metrics_addr[0]) {
		rc = cm_http_metrics_start(s->r, s->metrics, o->metrics_addr, &mport, &s->http);
		if (rc) {
			CM_ERR_RC(rc, "metrics on addr=%s", o->metrics_addr);
			return rc;
		}
	}
	cm_timer_init(&s->tick_timer, on_tick, s);
	cm_timer_arm(s->r, &s->tick_timer, 0);
	return 0;
}

int
mon_server_create(struct cm_reactor *r, const struct mon_server_opts *o, struct mon_server **sp)
{
	struct mon_server *s;
	int rc;

	if (!r || !o || !o->id || !o->id[0] || !o->fsid || !o->fsid[0] || !o->addr || !o->addr[0] ||
	    !o->etcd || !o->workers || !o->tick_ms)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->r = r;
	s->e = o->etcd;
	s->tick_ms = o->tick_ms;
	TAILQ_INIT(&s->subs);
	s->id = strdup(o->id);
	s->fsid = strdup(o->fsid);
	s->addr = strdup(o->addr);
	if (o->cluster_key && o->cluster_key[0])
		s->have_kek = cm_auth_kek(o->cluster_key, s->kek) == 0;
	s->ticket_ns = o->ticket_ms ? o->ticket_ms * 1000000ull : MON_AUTH_TICKET_NS;
	rc = s->id && s->fsid && s->addr ? start(s, o) : -ENOMEM;
	if (rc) {
		mon_server_destroy(s);
		return rc;
	}
	*sp = s;
	return 0;
}

void
mon_server_destroy(struct mon_server *s)
{
	if (!s)
		return;
	s->stopping = true;
	if (cm_timer_armed(&s->tick_timer))
		cm_timer_cancel(s->r, &s->tick_timer);
	cm_etcd_watch_stop(s->watch);
	s->watch = NULL;
	mon_auth_cache_stop(s->auth);
	cm_worker_pool_destroy(s->wp);
	/* Run the completions the pool posted, so nothing they own leaks. */
	for (int i = 0; i < 5; i++)
		cm_reactor_run_once(s->r, 0);
	/* Hand leadership over now rather than after the TTL. */
	if (s->leader)
		mon_leader_resign(s->leader, s->e);
	while (!TAILQ_EMPTY(&s->subs))
		drop_sub(s, TAILQ_FIRST(&s->subs)->c);
	cm_http_metrics_stop(s->http);
	cm_msgr_destroy(s->m);
	for (int i = 0; i < INC_RING; i++)
		if (s->ring[i])
			cairn__map__incremental__free_unpacked(s->ring[i], NULL);
	if (s->map)
		cairn__map__osd_map__free_unpacked(s->map, NULL);
	mon_auth_cache_destroy(s->auth);
	OPENSSL_cleanse(s->kek, sizeof(s->kek));
	mon_leader_destroy(s->leader);
	mon_map_store_close(s->store);
	cm_metrics_destroy(s->metrics);
	free(s->id);
	free(s->fsid);
	free(s->addr);
	free(s);
}

uint16_t
mon_server_port(const struct mon_server *s)
{
	return s->port;
}

uint64_t
mon_server_epoch(const struct mon_server *s)
{
	return s->map ? s->map->epoch : 0;
}
