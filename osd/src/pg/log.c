/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PG log: the ring in memory, entries as protobuf, and its records in
 * the store (entries, info, the missing set).
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

struct osd_lent *
osd__pg_log_at(struct osd_pg *pg, size_t i)
{
	return &pg->log[(pg->log_head + i) % pg->log_cap];
}

static void
lent_clear(struct osd_lent *e)
{
	free(e->oid);
	free(e->client);
	free(e->sent_to);
	free(e->outs);
	memset(e, 0, sizeof(*e));
}

size_t
osd__lent_bytes(const struct osd_lent *e)
{
	return sizeof(*e) + (e->oid ? strlen(e->oid) + 1 : 0) +
	       (e->client ? strlen(e->client) + 1 : 0) + e->nsent * sizeof(*e->sent_to) + e->nouts;
}

/* Drop the oldest entry from memory. */
static void
log_pop(struct osd_pg *pg)
{
	struct osd_lent *e = osd__pg_log_at(pg, 0);

	pg->log_bytes -= osd__lent_bytes(e);
	lent_clear(e);
	pg->log_head = (pg->log_head + 1) % pg->log_cap;
	pg->log_n--;
}

int
osd__pg_log_append(struct osd_pg *pg, const Cairn__Osd__LogEntry *le)
{
	struct osd_lent *e;

	if (pg->log_n == pg->log_cap) {
		pg->log_gap = true; /* its key stays in the store until a trim */
		log_pop(pg);
	}
	e = osd__pg_log_at(pg, pg->log_n);
	osd_ver_from_pb(le->ver, &e->ver);
	osd_ver_from_pb(le->prior, &e->prior);
	e->oid = strdup(le->oid ? le->oid : "");
	e->client = strdup(le->client ? le->client : "");
	e->tid = le->tid;
	e->rc = le->rc;
	e->op = (uint8_t)le->op;
	e->undo = le->undo <= OSD_UNDO_RENAME ? (uint8_t)le->undo : OSD_UNDO_NONE;
	e->undo_off = le->undo_off;
	e->undo_len = le->undo_len;
	if (le->n_sent_to && le->n_sent_to <= OSD_EC_MAX_SHARDS) {
		e->sent_to = malloc(le->n_sent_to * sizeof(*e->sent_to));
		if (!e->sent_to) {
			lent_clear(e);
			pg->log_gap = true;
			return -ENOMEM;
		}
		memcpy(e->sent_to, le->sent_to, le->n_sent_to * sizeof(*e->sent_to));
		e->nsent = (uint8_t)le->n_sent_to;
	}
	if (le->outs.len && le->outs.len <= OSD_LOG_OUTS_MAX) {
		e->outs = malloc(le->outs.len);
		if (!e->outs) {
			lent_clear(e);
			pg->log_gap = true;
			return -ENOMEM;
		}
		memcpy(e->outs, le->outs.data, le->outs.len);
		e->nouts = (uint8_t)le->outs.len;
	}
	if (!e->oid || !e->client) {
		lent_clear(e);
		pg->log_gap = true;
		return -ENOMEM;
	}
	pg->log_n++;
	pg->log_bytes += osd__lent_bytes(e);
	return 0;
}

/* Drop entries <= v from memory. */
void
osd__log_trim_mem(struct osd_pg *pg, const struct osd_ver *v)
{
	while (pg->log_n && osd_ver_cmp(&osd__pg_log_at(pg, 0)->ver, v) <= 0)
		log_pop(pg);
	if (osd_ver_cmp(&pg->log_tail, v) < 0)
		pg->log_tail = *v;
}

const struct osd_lent *
osd__log_find_req(struct osd_pg *pg, const char *client, uint64_t tid)
{
	for (size_t i = pg->log_n; i-- > 0;) {
		const struct osd_lent *e = osd__pg_log_at(pg, i);

		if (e->tid == tid && strcmp(e->client, client) == 0)
			return e;
	}
	return NULL;
}

void
osd__pg_log_clear(struct osd_pg *pg)
{
	for (size_t i = 0; i < pg->log_n; i++)
		lent_clear(osd__pg_log_at(pg, i));
	pg->log_head = 0;
	pg->log_n = 0;
	pg->log_bytes = 0;
}

void
osd__pg_info_fill(struct osd_pg *pg, Cairn__Osd__PgInfo *pi, Cairn__Osd__Version *lu,
		  Cairn__Osd__Version *tail)
{
	cairn__osd__pg_info__init(pi);
	pi->pool = pg->pool;
	pi->seed = pg->seed;
	osd_ver_to_pb(&pg->last_update, lu);
	osd_ver_to_pb(&pg->log_tail, tail);
	pi->last_update = lu;
	pi->log_tail = tail;
	pi->last_epoch_started = pg->last_epoch_started;
	pi->incomplete = pg->incomplete;
	pi->shard = pg->info_shard;
}

uint32_t
osd__pg_shard_label(struct osd_pg *pg)
{
	return pg->be->shard_label(pg);
}

void
osd__pg_log_pb_free(Cairn__Osd__LogEntry **les, size_t n)
{
	if (!les)
		return;
	for (size_t i = 0; i < n; i++)
		free(les[i]);
	free(les);
}

/* One allocation per entry: the entry, its two versions; strings point into the log. */
struct lent_pb {
	Cairn__Osd__LogEntry le;
	Cairn__Osd__Version v, p;
};

int
osd__pg_log_pb(struct osd_pg *pg, Cairn__Osd__LogEntry ***out, size_t *n)
{
	Cairn__Osd__LogEntry **les = calloc(pg->log_n ? pg->log_n : 1, sizeof(*les));

	*out = NULL;
	*n = 0;
	if (!les)
		return -ENOMEM;
	for (size_t i = 0; i < pg->log_n; i++) {
		const struct osd_lent *e = osd__pg_log_at(pg, i);
		struct lent_pb *x = calloc(1, sizeof(*x));

		if (!x) {
			osd__pg_log_pb_free(les, i);
			return -ENOMEM;
		}
		cairn__osd__log_entry__init(&x->le);
		osd_ver_to_pb(&e->ver, &x->v);
		osd_ver_to_pb(&e->prior, &x->p);
		x->le.ver = &x->v;
		x->le.prior = &x->p;
		x->le.op = e->op;
		x->le.oid = e->oid;
		x->le.client = e->client;
		x->le.tid = e->tid;
		x->le.rc = e->rc;
		x->le.undo = e->undo;
		x->le.undo_off = e->undo_off;
		x->le.undo_len = e->undo_len;
		x->le.sent_to = e->sent_to;
		x->le.n_sent_to = e->nsent;
		x->le.outs.data = e->outs;
		x->le.outs.len = e->nouts;
		les[i] = &x->le;
	}
	*out = les;
	*n = pg->log_n;
	return 0;
}

/* The log entry, the new info and a trim, into t. */
int
osd__txn_add_log(struct osd_pg *pg, struct os_txn *t, const Cairn__Osd__LogEntry *le,
		 const struct osd_ver *trim_to)
{
	Cairn__Osd__PgInfo pi = CAIRN__OSD__PG_INFO__INIT;
	Cairn__Osd__Version lu, tail;
	uint8_t k[OSD_LOGKEY_LEN], buf[256], *lebuf;
	struct osd_ver v;
	size_t n;
	int rc;

	osd_ver_from_pb(le->ver, &v);
	osd_log_key(&v, k);
	n = cairn__osd__log_entry__get_packed_size(le);
	lebuf = malloc(n ? n : 1);
	if (!lebuf)
		return -ENOMEM;
	cairn__osd__log_entry__pack(le, lebuf);
	rc = os_txn_omap_set(t, pg->cid, OSD_PGMETA, k, sizeof(k), lebuf, n);
	free(lebuf);
	if (!rc && trim_to && trim_to->seq && !pg->log_gap) {
		/* Point deletes of the entries we hold: a range delete would
		 * leave a range tombstone that every later get in the KV's
		 * memtable has to fragment again (RocksDB 7), slowing all reads
		 * of metadata as the memtable fills. */
		for (size_t i = 0; i < pg->log_n && !rc; i++) {
			const struct osd_lent *e = osd__pg_log_at(pg, i);
			uint8_t ek[OSD_LOGKEY_LEN];

			if (osd_ver_cmp(&e->ver, trim_to) > 0)
				break;
			osd_log_key(&e->ver, ek);
			rc = os_txn_omap_rm(t, pg->cid, OSD_PGMETA, ek, sizeof(ek));
		}
	} else if (!rc && trim_to && trim_to->seq) {
		/* Some entries in the store are not in memory: all of them. */
		uint8_t first[OSD_LOGKEY_LEN] = { 'l' }, last[OSD_LOGKEY_LEN];
		struct osd_ver end = { trim_to->epoch, trim_to->seq + 1 };

		osd_log_key(&end, last);
		rc = os_txn_omap_rm_range(t, pg->cid, OSD_PGMETA, first, sizeof(first), last,
					  sizeof(last));
		if (!rc)
			pg->log_gap = false;
	}
	if (rc)
		return rc;
	pi.pool = pg->pool;
	pi.seed = pg->seed;
	osd_ver_to_pb(&v, &lu);
	osd_ver_to_pb(trim_to && osd_ver_cmp(trim_to, &pg->log_tail) > 0 ? trim_to : &pg->log_tail,
		      &tail);
	pi.last_update = &lu;
	pi.log_tail = &tail;
	pi.last_epoch_started = pg->last_epoch_started;
	pi.incomplete = pg->incomplete;
	pi.shard = pg->info_shard;
	n = cairn__osd__pg_info__pack(&pi, buf);
	return os_txn_omap_set(t, pg->cid, OSD_PGMETA, "info", 4, buf, n);
}

size_t
osd__missing_key(const char *oid, uint8_t *k)
{
	size_t n = strlen(oid);

	k[0] = 'm';
	memcpy(k + 1, oid, n);
	return n + 1;
}

/* The log keys, the missing set (keys 'm' + name), the info: in t. */
int
osd__log_txn(struct osd_pg *pg, struct os_txn *t, const Cairn__Osd__PgInfo *info,
	     Cairn__Osd__LogEntry *const *les, size_t n, char *const *missing, size_t nmissing)
{
	uint8_t first[1] = { 'l' }, end[1] = { 'n' }, buf[256];
	int rc = os_txn_omap_rm_range(t, pg->cid, OSD_PGMETA, first, 1, end, 1);
	size_t len;

	for (size_t i = 0; i < nmissing && !rc; i++) {
		uint8_t k[OSD_NAME_MAX + 1];

		rc = os_txn_omap_set(t, pg->cid, OSD_PGMETA, k, osd__missing_key(missing[i], k), "",
				     0);
	}

	for (size_t i = 0; i < n && !rc; i++) {
		uint8_t k[OSD_LOGKEY_LEN], *b;
		struct osd_ver v;

		osd_ver_from_pb(les[i]->ver, &v);
		osd_log_key(&v, k);
		len = cairn__osd__log_entry__get_packed_size(les[i]);
		b = malloc(len ? len : 1);
		if (!b)
			return -ENOMEM;
		cairn__osd__log_entry__pack(les[i], b);
		rc = os_txn_omap_set(t, pg->cid, OSD_PGMETA, k, sizeof(k), b, len);
		free(b);
	}
	if (rc)
		return rc;
	if (cairn__osd__pg_info__get_packed_size(info) > sizeof(buf))
		return -EINVAL;
	len = cairn__osd__pg_info__pack(info, buf);
	return os_txn_omap_set(t, pg->cid, OSD_PGMETA, "info", 4, buf, len);
}
