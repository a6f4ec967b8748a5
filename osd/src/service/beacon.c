/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Boot and beacons to the mons: PG states and counters of every shard.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(osd);

static struct osd_counters
counters_of(const struct osd *o)
{
	uint64_t lb = 0, lmax = 0;

	for (size_t b = 0; o->pgs && b < o->npg_b; b++)
		for (const struct osd_pg *pg = o->pgs[b]; pg; pg = pg->hnext) {
			lb += pg->log_bytes;
			lmax = CM_MAX(lmax, (uint64_t)pg->log_bytes);
		}
	return (struct osd_counters){ .pg_log_bytes = lb,
				      .pg_log_bytes_max = lmax,
				      .ops = o->ops,
				      .bytes_in = o->op_bytes_in,
				      .bytes_out = o->op_bytes_out,
				      .rec_objects = o->rec_objects,
				      .rec_bytes = o->rec_bytes,
				      .ec_reads = o->ec_reads,
				      .ec_decodes = o->ec_decodes,
				      .rec_watchdog = o->rec_watchdog,
				      .client_busy = o->client_busy,
				      .pg_splits = o->pg_splits,
				      .pg_merges = o->pg_merges,
				      .reads_unleased = o->reads_unleased,
				      .dups = o->dups,
				      .ops_blocklisted = o->ops_blocklisted,
				      .auth_refused = o->auth_refused };
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
	t->rec_watchdog += c->rec_watchdog;
	t->client_busy += c->client_busy;
	t->pg_splits += c->pg_splits;
	t->pg_merges += c->pg_merges;
	t->reads_unleased += c->reads_unleased;
	t->dups += c->dups;
	t->ops_blocklisted += c->ops_blocklisted;
	t->auth_refused += c->auth_refused;
	t->pg_log_bytes += c->pg_log_bytes;
	t->pg_log_bytes_max = CM_MAX(t->pg_log_bytes_max, c->pg_log_bytes_max);
}

/* Shard 0: every shard's counters, ours now and the others' last snapshot. */
void
osd__counters_total(const struct osd *o, struct osd_counters *t)
{
	struct osd_node *nd = o->node;

	*t = counters_of(o);
	pthread_mutex_lock(&nd->mu);
	for (unsigned k = 1; k < nd->n; k++)
		counters_add(t, &nd->snap[k].c);
	pthread_mutex_unlock(&nd->mu);
}

/* Shard > 0: hand our PG states and counters to shard 0's next beacon. */
void
osd__shard_snapshot(struct osd *o)
{
	struct osd_node *nd = o->node;
	struct osd_snap s = { 0 };

	if (osd__pg_stats(o, &s.pgs, &s.npgs))
		return;
	s.c = counters_of(o);
	cm_msgr_get_stats(o->msgr, &s.msgr);
	pthread_mutex_lock(&nd->mu);
	free(nd->snap[o->shard].pgs);
	nd->snap[o->shard] = s;
	pthread_mutex_unlock(&nd->mu);
	o->snap_ms = cm_now_ms();
}

void
osd__send_boot(struct osd *o)
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
	mon_async_send(o->monc, MON_MSG_OSD_BOOT, ++o->tid, &b.base, true);
}

void
osd__on_reply(void *arg, struct cm_msg *m)
{
	struct osd *o = arg;

	if (osd__auth_reply(o, m)) {
		cm_msg_destroy(m);
		return;
	}
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
			mon_async_want_map(o->monc, r->epoch);
			/* The map that marks us up may have come before this reply. */
			if (o->map && o->pl_ok && o->epoch >= r->epoch)
				osd__pg_on_map(o);
			osd__shards_publish(o, NULL, 0);
		} else if (r && r->rc) {
			CM_LOG_RL(CM_LOG_WARN, "boot refused: %s (%s)", cm_strerror(r->rc),
				  r->error);
		}
		if (r)
			cairn__mon__osd_boot_reply__free_unpacked(r, NULL);
	}
	cm_msg_destroy(m);
}

void
osd__send_beacon(struct osd *o, uint64_t now)
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
	if (osd__pg_stats(o, &st, &n))
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
	b.rec_watchdog = t.rec_watchdog;
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
		if (mon_async_send(o->monc, MON_MSG_OSD_BEACON, 0, &b.base, true) == 0)
			o->last_beacon_ms = now;
		free(more);
	} else {
		pthread_mutex_unlock(&nd->mu);
	}
	free(stp);
	free(st);
}
