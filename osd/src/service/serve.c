/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OSD service: its PG shards (each a reactor thread with its own
 * messenger and PG table), their start, tick and orderly stop (osd_serve).
 */
#include "cm/stdinc.h" /* first: _GNU_SOURCE for sched_getaffinity */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

#include <sched.h>

CM_LOG_SUBSYS(osd);

#define TICK_MS       250
#define PING_SOON_MS  100 /* pings asked for by a read without a lease: at most this often */
#define BOOT_EVERY_MS 2000

/* The length of addr's host part ("host:port" -> host). */
static int
addr_host_len(const char *addr)
{
	const char *colon = strrchr(addr, ':');

	return (int)(colon ? (size_t)(colon - addr) : strlen(addr));
}

static void
on_tick(struct cm_timer *t)
{
	struct osd *o = t->arg;
	uint64_t now = cm_now_ms();
	bool soon;

	if (o->shard > 0) {
		if (o->booted)
			osd__pg_tick(o);
		/* A PG changed state (the PG code clears last_beacon_ms, as on
		 * shard 0): hand the states over now and have shard 0 beacon. */
		if (!o->last_beacon_ms || now - o->snap_ms >= o->cfg->beacon_ms / 2) {
			osd__shard_snapshot(o);
			if (!o->last_beacon_ms)
				atomic_store(&o->node->beacon_soon, true);
			o->last_beacon_ms = now;
		}
		cm_timer_arm(o->r, &o->tick, TICK_MS);
		return;
	}
	/* The service secrets and our ticket first: then we can take clients
	 * and reach our peers when the map shows us up. */
	osd__auth_tick(o, now);
	if (!o->booted && now - o->last_boot_ms >= BOOT_EVERY_MS && osd__auth_ready(o))
		osd__send_boot(o);
	if (atomic_exchange(&o->node->beacon_soon, false))
		o->last_beacon_ms = 0;
	if (o->booted && now - o->last_beacon_ms >= o->cfg->beacon_ms)
		osd__send_beacon(o, now);
	if (o->booted && o->epoch < o->up_epoch && now - o->last_map_ask_ms >= 1000) {
		/* Booted but the map that says so has not come: ask again. */
		o->last_map_ask_ms = now;
		mon_async_want_map(o->monc, o->up_epoch);
	}
	/* A read waits for a lease (a replica new to us, or its answer late):
	 * ping now rather than at the next interval. */
	soon = o->booted && o->map && now - o->last_hb_ms >= PING_SOON_MS &&
	       atomic_exchange(&o->node->ping_soon, false);
	if (o->booted && o->map && (soon || now - o->last_hb_ms >= o->cfg->hb_interval_ms)) {
		if (o->last_hb_ms && now - o->last_hb_ms > o->cfg->hb_grace_ms / 2) {
			/* We were not running (stopped, starved): our peers' silence says
			 * nothing about them. Start their clocks again. */
			for (int i = 0; i < o->npeers; i++)
				o->peers[i].hb_since_ms = 0;
		}
		o->last_hb_ms = now;
		osd__heartbeat(o, now);
	}
	if (o->booted)
		osd__pg_tick(o);
	cm_timer_arm(o->r, &o->tick, TICK_MS);
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
	char name[16], src[168];
	uint16_t port = 0;
	int rc, hlen;

	o->node = nd;
	o->shard = k;
	o->nshards = nd->n;
	/* each PG shard holds its share of the client data the OSD may hold */
	o->client_bytes_max = CM_MAX(cfg->client_bytes_max / nd->n, (uint64_t)65536);
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
	mo.ops = (struct cm_msgr_ops){ .on_msg = osd__on_msg, .on_event = osd__on_event };
	mo.ops_arg = o;
	/* Tickets from clients and peers; our key to the mons, our ticket to peers. */
	mo.auth.auth_fn = osd__auth_fn;
	mo.auth.cred_fn = osd__cred_fn;
	mo.backoff_min_ms = 20;
	mo.backoff_max_ms = 500;
	/* Our connections leave from the address we listen on (a specific
	 * one, not a wildcard): peers, firewalls and a cut by address see
	 * all of this OSD's traffic as its own. */
	hlen = addr_host_len(listen_addr);
	if ((!mo.bind_src || !mo.bind_src[0]) && hlen > 0 &&
	    !(hlen == 7 && strncmp(listen_addr, "0.0.0.0", 7) == 0) &&
	    !(hlen == 4 && strncmp(listen_addr, "[::]", 4) == 0)) {
		snprintf(src, sizeof(src), "%.*s:0", hlen, listen_addr);
		mo.bind_src = src;
	}
	rc = cm_msgr_create(o->r, &mo, &o->msgr);
	if (rc)
		return rc;
	mon_osd_sessions_init(&o->sess, o->msgr, true, false, true);
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
	mon_osd_sessions_fini(&o->sess);
	free(o->peers);
	o->peers = NULL;
	o->npeers = 0;
	osd__pg_free_all(o);
	osd__backends_free_all(o);
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

unsigned
osd_shards_auto(unsigned host_osds)
{
	cpu_set_t set;
	unsigned cpus = 1, n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cpus = (unsigned)CPU_COUNT(&set);
	n = cpus / (host_osds ? host_osds : 1);
	return n < 1 ? 1 : n > 8 ? 8 : n;
}

int
osd_serve(struct osd_conf *cfg)
{
	struct osd o = { .cfg = cfg, .id = -1 };
	struct osd_node nd = { .n = cfg->op_shards ? (unsigned)cfg->op_shards
						   : osd_shards_auto((unsigned)cfg->host_osds) };
	struct cm_daemon_signals *sig = NULL;
	struct osd_metrics *metrics = NULL;
	struct mon_async_opts mco = { 0 };
	char err[256];
	sigset_t mask;
	size_t npgs = 0;
	int rc;

	if (!cfg->mon_host[0] || !cfg->d.cluster_key[0])
		return -EINVAL;
	if (nd.n < 1)
		nd.n = 1;
	pthread_mutex_init(&nd.mu, NULL);
	nd.sh = calloc(nd.n, sizeof(*nd.sh));
	nd.th = calloc(nd.n, sizeof(*nd.th));
	nd.th_started = calloc(nd.n, sizeof(*nd.th_started));
	nd.snap = calloc(nd.n, sizeof(*nd.snap));
	nd.addrs = calloc(nd.n, sizeof(*nd.addrs));
	/* 1.5 MiB of address space; pages are touched only for the ids in use. */
	nd.lease = calloc(OSD_LEASE_IDS, sizeof(*nd.lease));
	nd.shard_epoch = calloc(nd.n, sizeof(*nd.shard_epoch));
	nd.start_ns = osd__lease_now();
	if (!nd.sh || !nd.th || !nd.th_started || !nd.snap || !nd.addrs || !nd.lease ||
	    !nd.shard_epoch) {
		CM_ERR("out of memory");
		rc = -ENOMEM;
		goto out_free;
	}
	nd.sh[0] = &o;
	if (cfg->read_lease_ms && cfg->read_lease_ms >= cfg->hb_grace_ms)
		CM_WARN("osd_read_lease %" PRIu64 " ms is not below osd_heartbeat_grace %" PRIu64
			" ms: a primary marked down by silence may still hold a read lease, and "
			"its PGs serve no reads until it is over",
			cfg->read_lease_ms, cfg->hb_grace_ms);
	if (cfg->read_lease_ms && cfg->hb_interval_ms * 8 >= cfg->read_lease_ms * 7)
		CM_WARN("osd_heartbeat_interval %" PRIu64 " ms is not below 7/8 of osd_read_lease "
			"%" PRIu64 " ms: leases lapse between pings and reads bounce",
			cfg->hb_interval_ms, cfg->read_lease_ms);
	if (!cfg->read_lease_ms)
		CM_WARN("osd_read_lease 0: a primary cut off from the cluster may serve stale "
			"reads to clients that still reach it");
	/* Threads made from here on inherit the blocked signals. */
	cm_daemon_block_signals(&mask);
	rc = cm_daemon_reactor_create(&cfg->d, "osd", &o.r);
	if (rc)
		goto out_free;
	rc = open_store(&o, &o.store);
	if (rc)
		goto out;
	/* Who we are: osd.<uuid>, its key made at first start (service/auth.c). */
	rc = osd__auth_init(&nd, cfg, os_uuid(o.store));
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
		rc = osd__pg_load_all(nd.sh[k]);
		if (rc)
			goto out;
		npgs += nd.sh[k]->npgs;
	}
	mco.mon_host = cfg->mon_host;
	mco.subscribe = true;
	mco.ops = (struct mon_async_ops){ .on_map = osd__on_map, .on_reply = osd__on_reply };
	mco.arg = &o;
	rc = mon_async_create(o.r, o.msgr, &mco, &o.monc, err, sizeof(err));
	if (rc) {
		CM_ERR("mon_host: %s", err);
		goto out;
	}
	osd__map_seed(&o);
	rc = cm_daemon_write_pid(cfg->d.pid_file);
	if (rc)
		goto out;
	rc = cm_daemon_signals_watch(o.r, &mask, &sig);
	if (rc)
		goto out;
	if (cfg->metrics_addr && cfg->metrics_addr[0]) {
		rc = osd__metrics_start(&o, cfg->metrics_addr, &metrics);
		if (rc)
			goto out;
	}
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
	CM_NOTICE("serving at %s, store uuid %s, %zu PGs on disk, %u PG shard%s%s", o.addr,
		  os_uuid(o.store), npgs, nd.n, nd.n > 1 ? "s" : "",
		  cfg->op_shards ? "" : " (osd_op_shards 0: cores / osd_host_osds)");
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
	osd__metrics_stop(metrics);
	cm_daemon_signals_stop(sig);
	mon_async_destroy(o.monc);
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
	free(nd.lease);
	free(nd.shard_epoch);
	free(nd.sh);
	free(nd.th);
	free(nd.th_started);
	free(nd.addrs);
	osd__auth_fini(&nd);
	pthread_mutex_destroy(&nd.mu);
	return rc < 0 ? rc : rc ? -EIO : 0;
}
