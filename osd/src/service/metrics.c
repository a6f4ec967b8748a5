/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /metrics of an OSD (Prometheus text, cm_http_metrics on shard 0's
 * reactor): its client ops and bytes, recovery, EC reads and decodes
 * (summed over its PG shards, as its beacons are), its PGs, its store's
 * usage and checksum errors, the map epoch and whether it is up.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/http.h"
#include "cm/log.h"
#include "cm/metrics.h"

CM_LOG_SUBSYS(osd);

struct osd_metrics {
	struct osd *o; /* shard 0 */
	struct cm_metrics *reg;
	struct cm_http_metrics *http;
};

/* Every shard's counters: ours now, the others' last snapshot. */
static struct osd_counters
total(const struct osd *o)
{
	struct osd_counters t;

	osd__counters_total(o, &t);
	return t;
}

#define COUNTER_FN(name, field)                   \
	static double name(void *arg)             \
	{                                         \
		struct osd_metrics *m = arg;      \
		return (double)total(m->o).field; \
	}
COUNTER_FN(g_ops, ops)
COUNTER_FN(g_bytes_in, bytes_in)
COUNTER_FN(g_bytes_out, bytes_out)
COUNTER_FN(g_rec_objects, rec_objects)
COUNTER_FN(g_rec_bytes, rec_bytes)
COUNTER_FN(g_ec_reads, ec_reads)
COUNTER_FN(g_ec_decodes, ec_decodes)
COUNTER_FN(g_rec_watchdog, rec_watchdog)
COUNTER_FN(g_client_busy, client_busy)
COUNTER_FN(g_pg_splits, pg_splits)
COUNTER_FN(g_pg_merges, pg_merges)
COUNTER_FN(g_reads_unleased, reads_unleased)
COUNTER_FN(g_dups, dups)
COUNTER_FN(g_blocklisted, ops_blocklisted)
COUNTER_FN(g_auth_refused, auth_refused)
COUNTER_FN(g_log_bytes, pg_log_bytes)
COUNTER_FN(g_log_bytes_max, pg_log_bytes_max)

static double
g_pgs(void *arg)
{
	struct osd_metrics *m = arg;
	struct osd_node *nd = m->o->node;
	double n = (double)m->o->npgs;

	pthread_mutex_lock(&nd->mu);
	for (unsigned k = 1; k < nd->n; k++)
		n += (double)nd->snap[k].npgs;
	pthread_mutex_unlock(&nd->mu);
	return n;
}

static double
g_usage(void *arg, int what)
{
	struct osd_metrics *m = arg;
	struct os_usage u;

	os_get_usage(m->o->store, &u);
	switch (what) {
	case 0:
		return (double)u.total_bytes;
	case 1:
		return (double)u.free_bytes;
	case 2:
		return (double)u.csum_errors;
	case 3:
		return (double)u.cache_hits;
	default:
		return (double)u.cache_misses;
	}
}

static double
g_total(void *arg)
{
	return g_usage(arg, 0);
}

static double
g_free(void *arg)
{
	return g_usage(arg, 1);
}

static double
g_csum(void *arg)
{
	return g_usage(arg, 2);
}

static double
g_cache_hits(void *arg)
{
	return g_usage(arg, 3);
}

static double
g_cache_misses(void *arg)
{
	return g_usage(arg, 4);
}

static double
g_epoch(void *arg)
{
	return (double)((struct osd_metrics *)arg)->o->epoch;
}

static double
g_up(void *arg)
{
	return ((struct osd_metrics *)arg)->o->booted ? 1 : 0;
}

/* Every shard's messenger: ours now, the others' last snapshot. */
static void
msgr_total(void *arg, struct cm_msgr_stats *st)
{
	struct osd *o = arg;
	struct osd_node *nd = o->node;

	cm_msgr_get_stats(o->msgr, st);
	pthread_mutex_lock(&nd->mu);
	for (unsigned k = 1; k < nd->n; k++) {
		const uint64_t *src = (const uint64_t *)&nd->snap[k].msgr;
		uint64_t *dst = (uint64_t *)st;

		for (size_t i = 0; i < sizeof(*st) / sizeof(uint64_t); i++)
			dst[i] += src[i];
	}
	pthread_mutex_unlock(&nd->mu);
}

int
osd__metrics_start(struct osd *o, const char *addr, struct osd_metrics **mp)
{
	static const struct {
		const char *name, *help;
		cm_gauge_fn fn;
	} g[] = {
		{ "cairn_osd_ops_total", "Client ops served (as primary).", g_ops },
		{ "cairn_osd_bytes_in_total", "Bytes clients wrote.", g_bytes_in },
		{ "cairn_osd_bytes_out_total", "Bytes clients read.", g_bytes_out },
		{ "cairn_osd_recovery_objects_total", "Objects recovered (pushed).",
		  g_rec_objects },
		{ "cairn_osd_recovery_bytes_total", "Bytes recovered (pushed).", g_rec_bytes },
		{ "cairn_osd_ec_shard_reads_total", "EC shard reads asked of peers.", g_ec_reads },
		{ "cairn_osd_ec_decodes_total", "EC reads that decoded.", g_ec_decodes },
		{ "cairn_osd_recovery_watchdog_total",
		  "Recovery plans the stall watchdog restarted (each one a bug).", g_rec_watchdog },
		{ "cairn_osd_client_busy_total",
		  "Client ops answered busy (osd_client_message_cap reached); clients resend.",
		  g_client_busy },
		{ "cairn_osd_pg_splits_total", "PG copies this OSD split (pg_num grew).",
		  g_pg_splits },
		{ "cairn_osd_pg_merges_total",
		  "Merges of PG copies into a target this OSD made (pg_num went down).",
		  g_pg_merges },
		{ "cairn_osd_reads_unleased_total",
		  "Reads a primary told to resend: it held no read lease from every replica, "
		  "or a past primary's lease was not yet over (osd_read_lease).",
		  g_reads_unleased },
		{ "cairn_osd_resends_applied_total",
		  "Resent client ops found applied already: answered from the PG log "
		  "(with their first results), not applied again.",
		  g_dups },
		{ "cairn_osd_ops_blocklisted_total",
		  "Client ops and listings refused with -EKEYREVOKED: the client is on the "
		  "map's blocklist (osd blocklist add).",
		  g_blocklisted },
		{ "cairn_osd_auth_refused_total",
		  "Client ops, listings and peer messages refused for the sender's caps "
		  "(docs/design/auth.md).",
		  g_auth_refused },
		{ "cairn_osd_pg_log_bytes",
		  "Memory the PG logs hold (each bounded by osd_pg_log_max_bytes).", g_log_bytes },
		{ "cairn_osd_pg_log_bytes_max", "Memory the largest PG log holds.",
		  g_log_bytes_max },
		{ "cairn_osd_data_cache_hits_total",
		  "Block reads the store's data cache answered (osd_data_cache).", g_cache_hits },
		{ "cairn_osd_data_cache_misses_total", "Block reads that went to the device.",
		  g_cache_misses },
		{ "cairn_osd_pgs", "PGs this OSD holds (as primary or replica).", g_pgs },
		{ "cairn_osd_store_bytes", "The store's device size.", g_total },
		{ "cairn_osd_store_free_bytes", "The store's free space.", g_free },
		{ "cairn_osd_checksum_errors_total", "Blocks that failed their crc32c.", g_csum },
		{ "cairn_osd_map_epoch", "The map epoch this OSD has.", g_epoch },
		{ "cairn_osd_up", "1 once the mons took its boot.", g_up },
	};
	struct osd_metrics *m = calloc(1, sizeof(*m));
	uint16_t port = 0;
	int rc;

	if (!m)
		return -ENOMEM;
	m->o = o;
	rc = cm_metrics_create(&m->reg);
	for (size_t i = 0; !rc && i < sizeof(g) / sizeof(g[0]); i++)
		rc = cm_metrics_gauge_fn(m->reg, g[i].name, NULL, g[i].help, g[i].fn, m);
	if (!rc)
		rc = cm_msgr_metrics_register(m->reg, msgr_total, o, o->r);
	if (!rc)
		rc = cm_http_metrics_start(o->r, m->reg, addr, &port, &m->http);
	if (rc) {
		CM_ERR_RC(rc, "metrics on %s", addr);
		osd__metrics_stop(m);
		return rc;
	}
	CM_NOTICE("metrics at http://%s/metrics (port %u)", addr, port);
	*mp = m;
	return 0;
}

void
osd__metrics_stop(struct osd_metrics *m)
{
	if (!m)
		return;
	cm_http_metrics_stop(m->http);
	cm_metrics_destroy(m->reg);
	free(m);
}
