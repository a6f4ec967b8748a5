/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PGs: the table, PG creation and loading, intervals and peering, client ops
 * on the primary (per-object order, read phase, guards, write phase),
 * replication with versions and the PG log, duplicate detection, listing.
 * docs/design/osd.md.
 */
#include "pg_int.h"
#include "msgcheck.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

/* A replica's pending apply. */
struct rapply {
	struct osd *osd;
	struct cm_conn *c;
	int64_t pool;
	uint32_t seed;
	struct osd_ver ver;
};

const char *
pg_state_name(enum pg_state s)
{
	switch (s) {
	case PG_NONE:
		return "stray";
	case PG_CREATING:
		return "creating";
	case PG_PEERING:
		return "peering";
	case PG_ACTIVE:
		return "active";
	case PG_REPLICA:
		return "replica";
	case PG_DOWN:
		return "down";
	case PG_INCOMPLETE:
		return "incomplete";
	case PG_RECOVERING:
		return "recovering";
	case PG_BACKFILLING:
		return "backfilling";
	}
	return "?";
}

/* ---------- encoding helpers ---------- */

/* ---------- the PG table ---------- */

static size_t
pg_hash(int64_t pool, uint32_t seed, size_t nb)
{
	uint64_t h = (uint64_t)pool * 0x9e3779b97f4a7c15ull ^ seed * 0xc2b2ae3d27d4eb4full;

	return (size_t)(h >> 17) % nb;
}

struct pg *
pg_find(struct osd *o, int64_t pool, uint32_t seed)
{
	struct pg *pg;

	if (!o->pgs)
		return NULL;
	for (pg = o->pgs[pg_hash(pool, seed, o->npg_b)]; pg; pg = pg->hnext)
		if (pg->pool == pool && pg->seed == seed)
			return pg;
	return NULL;
}

static struct pg *
pg_new(struct osd *o, int64_t pool, uint32_t seed)
{
	struct pg *pg;
	size_t h;

	if (!o->pgs) {
		o->npg_b = 1024;
		o->pgs = calloc(o->npg_b, sizeof(*o->pgs));
		if (!o->pgs)
			return NULL;
	}
	pg = calloc(1, sizeof(*pg));
	if (!pg)
		return NULL;
	pg->log_cap = o->cfg->pg_log_max + TRIM_SLACK + 1;
	pg->log = calloc(pg->log_cap, sizeof(*pg->log));
	if (!pg->log) {
		free(pg);
		return NULL;
	}
	pg->osd = o;
	pg->pool = pool;
	pg->seed = seed;
	pg->primary = -1;
	snprintf(pg->cid, sizeof(pg->cid), "pg.%" PRId64 ".%x", pool, seed);
	TAILQ_INIT(&pg->waiting);
	TAILQ_INIT(&pg->running);
	TAILQ_INIT(&pg->repops);
	pg->my_shard = -1;
	h = pg_hash(pool, seed, o->npg_b);
	pg->hnext = o->pgs[h];
	o->pgs[h] = pg;
	o->npgs++;
	return pg;
}

struct pg_lent *
pg_log_at(struct pg *pg, size_t i)
{
	return &pg->log[(pg->log_head + i) % pg->log_cap];
}

static void
lent_clear(struct pg_lent *e)
{
	free(e->oid);
	free(e->client);
	free(e->sent_to);
	memset(e, 0, sizeof(*e));
}

int
pg_log_append(struct pg *pg, const Cairn__Osd__LogEntry *le)
{
	struct pg_lent *e;

	if (pg->log_n == pg->log_cap) {
		pg->log_gap = true; /* its key stays in the store until a trim */
		lent_clear(pg_log_at(pg, 0));
		pg->log_head = (pg->log_head + 1) % pg->log_cap;
		pg->log_n--;
	}
	e = pg_log_at(pg, pg->log_n);
	ver_from_pb(le->ver, &e->ver);
	ver_from_pb(le->prior, &e->prior);
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
	if (!e->oid || !e->client) {
		lent_clear(e);
		pg->log_gap = true;
		return -ENOMEM;
	}
	pg->log_n++;
	return 0;
}

/* Drop entries <= v from memory. */
static void
log_trim_mem(struct pg *pg, const struct osd_ver *v)
{
	while (pg->log_n && osd_ver_cmp(&pg_log_at(pg, 0)->ver, v) <= 0) {
		lent_clear(pg_log_at(pg, 0));
		pg->log_head = (pg->log_head + 1) % pg->log_cap;
		pg->log_n--;
	}
	if (osd_ver_cmp(&pg->log_tail, v) < 0)
		pg->log_tail = *v;
}

static const struct pg_lent *
log_find_req(struct pg *pg, const char *client, uint64_t tid)
{
	for (size_t i = pg->log_n; i-- > 0;) {
		const struct pg_lent *e = pg_log_at(pg, i);

		if (e->tid == tid && strcmp(e->client, client) == 0)
			return e;
	}
	return NULL;
}

void
pg_log_clear(struct pg *pg)
{
	for (size_t i = 0; i < pg->log_n; i++)
		lent_clear(pg_log_at(pg, i));
	pg->log_head = 0;
	pg->log_n = 0;
}

void
pg_info_fill(struct pg *pg, Cairn__Osd__PgInfo *pi, Cairn__Osd__Version *lu,
	     Cairn__Osd__Version *tail)
{
	cairn__osd__pg_info__init(pi);
	pi->pool = pg->pool;
	pi->seed = pg->seed;
	ver_to_pb(&pg->last_update, lu);
	ver_to_pb(&pg->log_tail, tail);
	pi->last_update = lu;
	pi->log_tail = tail;
	pi->last_epoch_started = pg->last_epoch_started;
	pi->incomplete = pg->incomplete;
	pi->shard = pg->info_shard;
}

uint32_t
pg_shard_label(struct pg *pg)
{
	return pg->ec && pg->my_shard >= 0 ? (uint32_t)pg->my_shard + 1 : 0;
}

void
pg_log_pb_free(Cairn__Osd__LogEntry **les, size_t n)
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
pg_log_pb(struct pg *pg, Cairn__Osd__LogEntry ***out, size_t *n)
{
	Cairn__Osd__LogEntry **les = calloc(pg->log_n ? pg->log_n : 1, sizeof(*les));

	*out = NULL;
	*n = 0;
	if (!les)
		return -ENOMEM;
	for (size_t i = 0; i < pg->log_n; i++) {
		const struct pg_lent *e = pg_log_at(pg, i);
		struct lent_pb *x = calloc(1, sizeof(*x));

		if (!x) {
			pg_log_pb_free(les, i);
			return -ENOMEM;
		}
		cairn__osd__log_entry__init(&x->le);
		ver_to_pb(&e->ver, &x->v);
		ver_to_pb(&e->prior, &x->p);
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
		les[i] = &x->le;
	}
	*out = les;
	*n = pg->log_n;
	return 0;
}

static void op_free(struct op *op);
static void pga_free_all(struct osd *o);

static void
pg_destroy(struct pg *pg)
{
	struct op *op;
	struct repop *rp;

	while ((rp = TAILQ_FIRST(&pg->repops))) {
		TAILQ_REMOVE(&pg->repops, rp, link);
		free(rp);
	}
	while ((op = TAILQ_FIRST(&pg->waiting))) {
		TAILQ_REMOVE(&pg->waiting, op, link);
		op->queued = false;
		op_free(op);
	}
	while ((op = TAILQ_FIRST(&pg->running))) {
		TAILQ_REMOVE(&pg->running, op, link);
		op->queued = false;
		op_free(op);
	}
	rec_reset(pg);
	pg_log_clear(pg);
	oset_clear(&pg->missing);
	free(pg->stashes);
	free(pg->log);
	free(pg);
}

void
pg_free_all(struct osd *o)
{
	struct op *op;

	rec_free_all(o);
	ec_abort_all(o); /* after the jobs are marked dead, before the PGs' ops go */
	pga_free_all(o);
	while ((op = TAILQ_FIRST(&o->wait_map))) {
		TAILQ_REMOVE(&o->wait_map, op, link);
		op->queued = false;
		op_free(op);
	}
	for (size_t b = 0; b < o->npg_b; b++) {
		struct pg *pg = o->pgs[b], *next;

		for (; pg; pg = next) {
			next = pg->hnext;
			pg_destroy(pg);
		}
	}
	free(o->pgs);
	o->pgs = NULL;
	o->npgs = 0;
}

/* ---------- loading PGs at start (blocking) ---------- */

/* The objects our copy lacks (keys 'm' + name in PGMETA's omap). */
static int
pg_load_missing(struct pg *pg)
{
	uint8_t *after = NULL;
	size_t alen = 0;
	bool more = true;
	int rc = 0;

	while (more && !rc) {
		struct os_kv *kvs = NULL;
		size_t n = 0;

		rc = os_omap_iterate(pg->osd->store, pg->cid, PGMETA, after, alen, "m", 1, 512,
				     &kvs, &n, &more);
		for (size_t i = 0; i < n && !rc; i++) {
			char name[OSD_NAME_MAX + 1];
			size_t nl = kvs[i].klen - 1;

			if (kvs[i].klen < 2 || nl > OSD_NAME_MAX) {
				rc = -EIO;
				break;
			}
			memcpy(name, kvs[i].key + 1, nl);
			name[nl] = 0;
			rc = oset_put(&pg->missing, name, 0);
		}
		if (!rc && n) {
			free(after);
			after = malloc(kvs[n - 1].klen);
			if (after) {
				alen = kvs[n - 1].klen;
				memcpy(after, kvs[n - 1].key, alen);
			} else {
				rc = -ENOMEM;
			}
		}
		os_kvs_free(kvs, n);
		if (!n)
			break;
	}
	free(after);
	if (!rc && pg->missing.n)
		CM_INFO("%s: %zu objects missing from an unfinished recovery", pg->cid,
			pg->missing.n);
	if (!rc)
		pg->in_store = true;
	return rc;
}

static int stash_add(struct pg *pg, struct os_txn *t, const struct osd_ver *v);

/* EC: the stash objects our copy keeps (keys 's' + version in PGMETA's omap). */
static int
pg_load_stashes(struct pg *pg)
{
	struct os_kv *kvs = NULL;
	uint8_t after[17];
	size_t n = 0, alen = 0;
	bool more = true;
	int rc = 0;

	while (more && !rc) {
		rc = os_omap_iterate(pg->osd->store, pg->cid, PGMETA, alen ? after : NULL, alen,
				     "s", 1, 512, &kvs, &n, &more);
		for (size_t i = 0; i < n && !rc; i++) {
			struct osd_ver v;

			if (kvs[i].klen != 17) {
				rc = -EIO;
				break;
			}
			v.epoch = get_be64(kvs[i].key + 1);
			v.seq = get_be64(kvs[i].key + 9);
			rc = stash_add(pg, NULL, &v);
			memcpy(after, kvs[i].key, 17);
			alen = 17;
		}
		os_kvs_free(kvs, n);
		if (!n)
			break;
	}
	if (!rc && pg->nstash)
		CM_NOTICE("%s: %zu rollback stashes kept", pg->cid, pg->nstash);
	return rc;
}

/*
 * A past interval of a PG: maps [first, last] with one acting set. `rw`:
 * it had min_size OSDs, so it may have activated and taken writes (we have
 * no up_thru to tell whether it did).
 */
#define PIV_OPEN   UINT64_MAX /* `last` of the current interval */
#define PGA_MAX_IV 12

struct piv {
	uint64_t first, last;
	bool rw;
	uint8_t n;
	int32_t a[OSD_MAX_ACTING];
};

/* Every PG's acting set as of the previous map, ours or not. */
struct pga {
	struct pga *next;
	int64_t pool;
	uint32_t seed;
	int n;
	int32_t a[OSD_MAX_ACTING]; /* the last non-empty acting set */
	/* The "before" of map `epoch`: a map handled twice (the boot reply
	 * after the map that marks us up) sees the same one. */
	uint64_t epoch;
	int nb;
	int32_t b[OSD_MAX_ACTING];
	/* The intervals since the PG last started (as far as we know: trimmed
	 * by the newest last_epoch_started we hear of), oldest first; the last
	 * one is the current interval. */
	int niv;
	struct piv iv[PGA_MAX_IV];
	/* We know its intervals since it last started: kept in our store,
	 * seen since the PG was made, or it started since. If not (a new OSD,
	 * or a PG first seen in our first map), peering asks every up OSD. */
	bool known;
};

static bool
has_osd(const int32_t *a, int n, int32_t id)
{
	for (int i = 0; i < n; i++)
		if (a[i] == id)
			return true;
	return false;
}

/* Map `epoch` shows acting set a[k]: open a new interval if it changed (true). */
static bool
pga_note(struct pga *x, uint64_t epoch, const int32_t *a, int k, bool rw)
{
	struct piv *cur = x->niv && x->iv[x->niv - 1].last == PIV_OPEN ? &x->iv[x->niv - 1] : NULL;

	if (cur && cur->n == k && !memcmp(cur->a, a, sizeof(*a) * (size_t)k))
		return false;
	if (cur && cur->first >= epoch) {
		x->niv--; /* the same map again, or an older one: replace */
	} else if (cur) {
		cur->last = epoch - 1;
	}
	if (x->niv == PGA_MAX_IV) {
		/* Oldest first out: from here on only the union of the prior
		 * sets (set_prior) speaks for it. */
		memmove(x->iv, x->iv + 1, sizeof(x->iv[0]) * (PGA_MAX_IV - 1));
		x->niv--;
	}
	cur = &x->iv[x->niv++];
	cur->first = epoch;
	cur->last = PIV_OPEN;
	cur->rw = k > 0 && rw;
	cur->n = (uint8_t)k;
	memcpy(cur->a, a, sizeof(*a) * (size_t)k);
	return true;
}

/*
 * A past interval a peer knows of (it may be one we missed, restarted):
 * kept in order of its last map, before the current interval; the oldest
 * goes when the list is full.
 */
static bool
pga_merge(struct pga *x, const Cairn__Osd__PastInterval *p)
{
	int at;
	struct piv iv = { .first = p->first, .last = p->last, .rw = p->rw };

	if (!p->rw || p->n_osds == 0 || p->n_osds > OSD_MAX_ACTING || p->last == PIV_OPEN)
		return false; /* only intervals that may have taken writes matter */
	iv.n = (uint8_t)p->n_osds;
	memcpy(iv.a, p->osds, sizeof(*iv.a) * p->n_osds);
	for (int i = 0; i < x->niv; i++)
		if (x->iv[i].first == iv.first && x->iv[i].last == iv.last && x->iv[i].n == iv.n &&
		    !memcmp(x->iv[i].a, iv.a, sizeof(*iv.a) * iv.n))
			return false; /* known */
	for (at = x->niv;
	     at > 0 && (x->iv[at - 1].last == PIV_OPEN || x->iv[at - 1].last > iv.last); at--)
		;
	if (x->niv == PGA_MAX_IV) {
		if (at == 0)
			return false; /* older than all we keep */
		memmove(x->iv, x->iv + 1, sizeof(x->iv[0]) * (size_t)(at - 1));
		at--;
		x->niv--;
	}
	memmove(x->iv + at + 1, x->iv + at, sizeof(x->iv[0]) * (size_t)(x->niv - at));
	x->iv[at] = iv;
	x->niv++;
	return true;
}

/* The PG started (went active) at map `les`: intervals that ended before are done with. */
static void
pga_trim(struct pga *x, uint64_t les)
{
	int j = 0;

	for (int i = 0; i < x->niv; i++)
		if (x->iv[i].last == PIV_OPEN || x->iv[i].last >= les)
			x->iv[j++] = x->iv[i];
	x->niv = j;
}

static struct pga *pga_get(struct osd *o, int64_t pool, uint32_t seed, bool *fresh);

/* pg's entry (NULL only without memory). */
static struct pga *
pg_pga(struct pg *pg)
{
	bool fresh;

	return pga_get(pg->osd, pg->pool, pg->seed, &fresh);
}

/*
 * The PG's interval, durable (PGMETA "prior"): its acting set, its prior
 * set, and whether it became active since. A restarted OSD starts from them
 * as if it had seen the maps: the acting set is the "before" of its first
 * interval, and a prior set the PG never got past is kept, so peering asks
 * the OSDs that held the data before (e.g. a new primary without a copy
 * whose backfill had not run). Layout: version 1, active, n acting, n prior,
 * then the ids (int32, little-endian).
 */
#define PRIOR_KEY "prior"

static uint8_t *
put_le(uint8_t *q, uint64_t v, int bytes)
{
	for (int b = 0; b < bytes; b++)
		*q++ = (uint8_t)(v >> (8 * b));
	return q;
}

static uint64_t
get_le(const uint8_t *q, int bytes)
{
	uint64_t v = 0;

	for (int b = 0; b < bytes; b++)
		v |= (uint64_t)q[b] << (8 * b);
	return v;
}

#define PIV_REC_LEN (8 + 8 + 1 + 1)
#define PIVS_MAX    (1 + PGA_MAX_IV * (PIV_REC_LEN + 4 * OSD_MAX_ACTING))

/* A past interval list: count, then each first, last, rw, n, the ids. */
static uint8_t *
pivs_put(uint8_t *q, const struct pga *x)
{
	*q++ = (uint8_t)(x ? x->niv : 0);
	for (int i = 0; x && i < x->niv; i++) {
		const struct piv *iv = &x->iv[i];

		q = put_le(q, iv->first, 8);
		q = put_le(q, iv->last, 8);
		*q++ = iv->rw;
		*q++ = iv->n;
		for (int j = 0; j < iv->n; j++)
			q = put_le(q, (uint32_t)iv->a[j], 4);
	}
	return q;
}

/* Decode a list at v[*at, n) into iv[]; -EINVAL when malformed. */
static int
pivs_get(const uint8_t *v, size_t n, size_t *at, struct piv *iv, int *niv)
{
	size_t a = *at;

	if (a >= n || (*niv = v[a++]) > PGA_MAX_IV)
		return -EINVAL;
	for (int i = 0; i < *niv; i++) {
		if (n - a < PIV_REC_LEN)
			return -EINVAL;
		iv[i].first = get_le(v + a, 8);
		iv[i].last = get_le(v + a + 8, 8);
		iv[i].rw = v[a + 16] != 0;
		iv[i].n = v[a + 17];
		a += PIV_REC_LEN;
		if (iv[i].n > OSD_MAX_ACTING || n - a < 4 * (size_t)iv[i].n ||
		    iv[i].first > iv[i].last)
			return -EINVAL;
		for (int j = 0; j < iv[i].n; j++, a += 4)
			iv[i].a[j] = (int32_t)get_le(v + a, 4);
	}
	*at = a;
	return 0;
}

/*
 * Every PG's past intervals, also of PGs we do not hold, kept in the meta
 * object (key "iv.POOL.SEED"): a restarted OSD that becomes a PG's primary
 * knows the intervals before its restart (PGs we hold keep theirs in their
 * prior record too). Written with the map's epoch, without waiting.
 */
#define IV_PREFIX "iv."

static void
pivs_save(struct osd *o, struct os_txn **t, const struct pga *x)
{
	uint8_t v[PIVS_MAX];
	char key[48];
	int kl;

	if (!osd_meta_ok(o) || (!*t && os_txn_create(t)))
		return;
	kl = snprintf(key, sizeof(key), IV_PREFIX "%" PRId64 ".%x", x->pool, x->seed);
	if (os_txn_omap_set(*t, META_CID, META_OID, key, (size_t)kl, v,
			    (size_t)(pivs_put(v, x) - v))) {
		os_txn_destroy(*t);
		*t = NULL;
	}
}

/* At start, after the PGs we hold: the kept lists of the others. */
static void
pivs_load_all(struct osd *o)
{
	uint8_t after[64];
	size_t salen = 0;
	bool more = true;

	while (more) {
		struct os_kv *kvs = NULL;
		size_t n = 0;

		if (os_omap_iterate(o->store, META_CID, META_OID, salen ? after : NULL, salen,
				    IV_PREFIX, sizeof(IV_PREFIX) - 1, 512, &kvs, &n, &more))
			return; /* none kept (a new OSD) */
		for (size_t i = 0; i < n; i++) {
			char key[64];
			int64_t pool;
			unsigned seed;
			int end = 0;
			struct piv iv[PGA_MAX_IV];
			int niv;
			size_t at = 0;
			bool fresh;
			struct pga *x;

			if (kvs[i].klen >= sizeof(key))
				continue;
			memcpy(key, kvs[i].key, kvs[i].klen);
			key[kvs[i].klen] = 0;
			memcpy(after, kvs[i].key, kvs[i].klen);
			salen = kvs[i].klen;
			if (sscanf(key, IV_PREFIX "%" SCNd64 ".%x%n", &pool, &seed, &end) != 2 ||
			    key[end] || !osd_pg_mine(o, seed))
				continue;
			if (pivs_get(kvs[i].val, kvs[i].vlen, &at, iv, &niv) || at != kvs[i].vlen) {
				CM_WARN("unreadable past intervals of pg.%" PRId64 ".%x: ignored",
					pool, seed);
				continue;
			}
			x = pga_get(o, pool, seed, &fresh);
			if (!x || !fresh)
				continue; /* ours: its prior record has them */
			x->niv = niv;
			memcpy(x->iv, iv, sizeof(iv[0]) * (size_t)niv);
			x->known = true;
			for (int k = niv - 1; k >= 0 && !x->n; k--)
				if (iv[k].n) { /* the last set that held it: "before" */
					x->n = iv[k].n;
					memcpy(x->a, iv[k].a, sizeof(*x->a) * iv[k].n);
				}
		}
		os_kvs_free(kvs, n);
		if (!n)
			break;
	}
}

static int
prior_txn(struct pg *pg, struct os_txn *t, bool active)
{
	uint8_t v[4 + 4 * 2 * OSD_MAX_ACTING + 8 + PIVS_MAX], *q = v + 4;
	struct pga *x = pg_pga(pg);

	v[0] = 2;
	v[1] = active;
	v[2] = (uint8_t)pg->nacting;
	v[3] = (uint8_t)pg->nprior;
	for (int i = 0; i < pg->nacting + pg->nprior; i++)
		q = put_le(q,
			   (uint32_t)(i < pg->nacting ? pg->acting[i] : pg->prior[i - pg->nacting]),
			   4);
	q = put_le(q, pg->last_epoch_started, 8);
	q = pivs_put(q, x);
	return os_txn_omap_set(t, pg->cid, PGMETA, PRIOR_KEY, sizeof(PRIOR_KEY) - 1, v,
			       (size_t)(q - v));
}

/* Write the record now (own transaction, ordered after the PG's others). */
static void
prior_save(struct pg *pg, bool active)
{
	struct os_txn *t;

	if (!pg->in_store || os_txn_create(&t))
		return;
	if (prior_txn(pg, t, active)) {
		os_txn_destroy(t);
		return;
	}
	osd_queue(pg->osd, t, NULL, NULL);
}

static void
prior_load(struct pg *pg, const uint8_t *v, size_t n)
{
	int na, np;
	int32_t ids[2 * OSD_MAX_ACTING];
	struct pga *x;

	struct piv iv[PGA_MAX_IV];
	int niv = 0;
	size_t at;

	if (n < 4 || (v[0] != 1 && v[0] != 2) || (na = v[2]) > OSD_MAX_ACTING ||
	    (np = v[3]) > OSD_MAX_ACTING || n < 4 + 4 * (size_t)(na + np) ||
	    (v[0] == 1 && n != 4 + 4 * (size_t)(na + np)))
		goto bad;
	for (int i = 0; i < na + np; i++)
		ids[i] = (int32_t)get_le(v + 4 + 4 * i, 4);
	at = 4 + 4 * (size_t)(na + np);
	if (v[0] == 2) {
		/* version 2: then last_epoch_started and the past intervals (pga_note) */
		uint64_t les;

		if (n - at < 8)
			goto bad;
		les = get_le(v + at, 8);
		at += 8;
		if (pivs_get(v, n, &at, iv, &niv) || at != n)
			goto bad;
		if (les > pg->last_epoch_started)
			pg->last_epoch_started = les; /* activation writes no info */
	}
	x = pg_pga(pg);
	if (x) {
		x->n = na;
		memcpy(x->a, ids, sizeof(*ids) * (size_t)na);
		x->niv = niv;
		memcpy(x->iv, iv, sizeof(iv[0]) * (size_t)niv);
		x->known = v[0] == 2;
		pga_trim(x, pg->last_epoch_started);
	}
	if (!v[1] && np) {
		memcpy(pg->prior, ids + na, sizeof(*ids) * (size_t)np);
		pg->nprior = np;
		pg->prior_loaded = true;
		CM_NOTICE("%s: %d prior OSD(s) from before the restart (not yet active since)",
			  pg->cid, np);
	}
	return;
bad:
	CM_WARN("%s: unreadable prior set record (%zu bytes): ignored", pg->cid, n);
}

static int
pg_load(struct pg *pg)
{
	struct os_store *s = pg->osd->store;
	struct os_kv key = { .key = (uint8_t *)"info", .klen = 4 }, val = { 0 };
	uint8_t after[LOGKEY_LEN];
	size_t salen = 0;
	bool more = true;
	int rc;

	rc = os_omap_get(s, pg->cid, PGMETA, &key, 1, &val);
	if (rc)
		return rc;
	if (val.val) {
		Cairn__Osd__PgInfo *pi = cairn__osd__pg_info__unpack(NULL, val.vlen, val.val);

		if (!pi) {
			kv_clear(&val);
			CM_ERR("%s: undecodable PG info", pg->cid);
			return -EIO;
		}
		ver_from_pb(pi->last_update, &pg->last_update);
		ver_from_pb(pi->log_tail, &pg->log_tail);
		pg->last_epoch_started = pi->last_epoch_started;
		pg->incomplete = pi->incomplete;
		pg->info_shard = pi->shard;
		cairn__osd__pg_info__free_unpacked(pi, NULL);
	}
	kv_clear(&val);
	key.key = (uint8_t *)PRIOR_KEY;
	key.klen = sizeof(PRIOR_KEY) - 1;
	rc = os_omap_get(s, pg->cid, PGMETA, &key, 1, &val);
	if (rc)
		return rc;
	if (val.val)
		prior_load(pg, val.val, val.vlen);
	kv_clear(&val);
	while (more) {
		struct os_kv *kvs = NULL;
		size_t n = 0;

		rc = os_omap_iterate(s, pg->cid, PGMETA, salen ? after : NULL, salen, "l", 1, 512,
				     &kvs, &n, &more);
		if (rc)
			return rc;
		for (size_t i = 0; i < n && !rc; i++) {
			Cairn__Osd__LogEntry *le =
				cairn__osd__log_entry__unpack(NULL, kvs[i].vlen, kvs[i].val);

			if (!le) {
				rc = -EIO;
				break;
			}
			rc = pg_log_append(pg, le);
			cairn__osd__log_entry__free_unpacked(le, NULL);
			if (kvs[i].klen == LOGKEY_LEN) {
				memcpy(after, kvs[i].key, LOGKEY_LEN);
				salen = LOGKEY_LEN;
			}
		}
		os_kvs_free(kvs, n);
		if (rc)
			return rc;
		if (!n)
			break;
	}
	rc = pg_load_stashes(pg);
	return rc ? rc : pg_load_missing(pg);
}

int
pg_load_all(struct osd *o)
{
	char **cids = NULL;
	size_t n = 0;
	int rc = os_list_collections(o->store, &cids, &n);

	for (size_t i = 0; i < n && !rc; i++) {
		int64_t pool;
		unsigned seed;
		struct pg *pg;
		int end = 0;

		if (sscanf(cids[i], "pg.%" SCNd64 ".%x%n", &pool, &seed, &end) != 2 ||
		    cids[i][end] || !osd_pg_mine(o, seed))
			continue;
		pg = pg_new(o, pool, seed);
		if (!pg) {
			rc = -ENOMEM;
			break;
		}
		rc = pg_load(pg);
		if (rc)
			CM_ERR("cannot load %s: %s", cids[i], cm_strerror(rc));
	}
	os_names_free(cids, n);
	if (!rc)
		pivs_load_all(o);
	return rc;
}

/* ---------- store transactions from TxOps ---------- */

static int
txn_write_sgl(struct os_txn *t, const char *cid, const char *oid, uint64_t off,
	      const struct cm_sgl *d, uint64_t doff, uint64_t len)
{
	uint64_t pos = 0;

	for (unsigned i = 0; i < d->n && len; i++) {
		const struct cm_sg *sg = &d->sg[i];
		uint64_t n;
		int rc;

		if (doff >= pos + sg->len) {
			pos += sg->len;
			continue;
		}
		n = CM_MIN(len, pos + sg->len - doff);
		rc = os_txn_write_buf(t, cid, oid, off, sg->buf, sg->off + (size_t)(doff - pos),
				      (size_t)n);
		if (rc)
			return rc;
		off += n;
		doff += n;
		len -= n;
		pos += sg->len;
	}
	return len ? -EINVAL : 0;
}

/*
 * touch: our copy is being backfilled and may not have the object yet (the
 * backfill replaces it later): create it so that ops needing it apply.
 * ver: the entry's version (its stash object's name).
 */
static int
txn_add_ops(struct os_txn *t, const char *cid, Cairn__Osd__TxOp *const *ops, size_t n,
	    const struct cm_sgl *data, bool touch, const struct osd_ver *ver)
{
	char stash[STASH_NAME_MAX];
	int rc = 0;

	stash_name(ver, stash);

	for (size_t i = 0; i < n && !rc; i++) {
		const Cairn__Osd__TxOp *x = ops[i];
		const char *oid = x->oid;

		if (touch && (rc = os_txn_touch(t, cid, oid)))
			return rc;
		switch (x->op) {
		case OSD_TX_TOUCH:
			rc = os_txn_touch(t, cid, oid);
			break;
		case OSD_TX_WRITE:
			if (x->data_off > data->len || x->len > data->len - x->data_off)
				return -EINVAL;
			rc = txn_write_sgl(t, cid, oid, x->off, data, x->data_off, x->len);
			break;
		case OSD_TX_TRUNCATE:
			rc = os_txn_truncate(t, cid, oid, x->len);
			break;
		case OSD_TX_ZERO:
			rc = os_txn_zero(t, cid, oid, x->off, x->len);
			break;
		case OSD_TX_REMOVE:
			/* Touch first: removing is idempotent on every copy. */
			rc = os_txn_touch(t, cid, oid);
			if (!rc)
				rc = os_txn_remove(t, cid, oid);
			break;
		case OSD_TX_SETATTR:
			rc = os_txn_setattr(t, cid, oid, x->name, x->value.data, x->value.len);
			break;
		case OSD_TX_RMATTR:
			rc = os_txn_rmattr(t, cid, oid, x->name);
			break;
		case OSD_TX_OMAP_SET:
			if (x->n_keys != x->n_vals)
				return -EINVAL;
			for (size_t k = 0; k < x->n_keys && !rc; k++)
				rc = os_txn_omap_set(t, cid, oid, x->keys[k].data, x->keys[k].len,
						     x->vals[k].data, x->vals[k].len);
			break;
		case OSD_TX_OMAP_RM:
			for (size_t k = 0; k < x->n_keys && !rc; k++)
				rc = os_txn_omap_rm(t, cid, oid, x->keys[k].data, x->keys[k].len);
			break;
		case OSD_TX_OMAP_RM_RANGE:
			if (x->n_keys != 1)
				return -EINVAL;
			rc = os_txn_omap_rm_range(t, cid, oid, x->keys[0].data, x->keys[0].len,
						  x->end.data, x->end.len);
			break;
		case OSD_TX_OMAP_CLEAR:
			rc = os_txn_omap_clear(t, cid, oid);
			break;
		case OSD_TX_OMAP_SET_HEADER:
			rc = os_txn_omap_set_header(t, cid, oid, x->value.data, x->value.len);
			break;
		case OSD_TX_STASH:
			rc = os_txn_stash(t, cid, oid, stash, x->off, x->len);
			break;
		case OSD_TX_RENAME:
			rc = os_txn_touch(t, cid, oid); /* as a remove: idempotent */
			if (!rc)
				rc = os_txn_rename(t, cid, oid, stash);
			break;
		default:
			return -EINVAL;
		}
	}
	return rc;
}

static size_t
stash_key(const struct osd_ver *v, uint8_t k[17])
{
	k[0] = 's';
	ver_pack(v, k + 1);
	return 17;
}

/* Index of v in pg->stashes, or -1. */
static ssize_t
stash_find(const struct pg *pg, const struct osd_ver *v)
{
	for (size_t i = 0; i < pg->nstash; i++)
		if (osd_ver_cmp(&pg->stashes[i], v) == 0)
			return (ssize_t)i;
	return -1;
}

/* Our copy keeps a stash for the entry at v (t makes it). */
static int
stash_add(struct pg *pg, struct os_txn *t, const struct osd_ver *v)
{
	uint8_t k[17];
	size_t i = pg->nstash;

	if (stash_find(pg, v) >= 0)
		return 0;
	if (pg->nstash == pg->capstash) {
		size_t cap = pg->capstash ? 2 * pg->capstash : 8;
		struct osd_ver *n = realloc(pg->stashes, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		pg->stashes = n;
		pg->capstash = cap;
	}
	while (i > 0 && osd_ver_cmp(&pg->stashes[i - 1], v) > 0) {
		pg->stashes[i] = pg->stashes[i - 1];
		i--;
	}
	pg->stashes[i] = *v;
	pg->nstash++;
	return t ? os_txn_omap_set(t, pg->cid, PGMETA, k, stash_key(v, k), "", 0) : 0;
}

/* Forget stash i; its object too unless the caller consumes it. */
static int
stash_del(struct pg *pg, struct os_txn *t, size_t i, bool object)
{
	struct osd_ver v = pg->stashes[i];
	char name[STASH_NAME_MAX];
	uint8_t k[17];
	int rc = 0;

	memmove(&pg->stashes[i], &pg->stashes[i + 1], (pg->nstash - i - 1) * sizeof(v));
	pg->nstash--;
	if (object) {
		stash_name(&v, name);
		rc = os_txn_remove_any(t, pg->cid, name);
	}
	return rc ? rc : os_txn_omap_rm(t, pg->cid, PGMETA, k, stash_key(&v, k));
}

int
pg_stash_drop(struct pg *pg, struct os_txn *t, const struct osd_ver *upto)
{
	int rc = 0;

	while (!rc && pg->nstash && osd_ver_cmp(&pg->stashes[0], upto) <= 0)
		rc = stash_del(pg, t, 0, true);
	return rc;
}

int
pg_stash_prune(struct pg *pg, struct os_txn *t, bool (*keep)(void *, const struct osd_ver *),
	       void *arg)
{
	int rc = 0;

	for (size_t i = pg->nstash; i-- > 0 && !rc;)
		if (!keep(arg, &pg->stashes[i]))
			rc = stash_del(pg, t, i, true);
	return rc;
}

int
pg_stash_forget(struct pg *pg, struct os_txn *t)
{
	uint8_t first[1] = { 's' }, end[1] = { 't' };

	pg->nstash = 0;
	return os_txn_omap_rm_range(t, pg->cid, PGMETA, first, 1, end, 1);
}

int
pg_undo_entry(struct pg *pg, struct os_txn *t, const struct pg_lent *e)
{
	char name[STASH_NAME_MAX];
	ssize_t i;
	int rc;

	if (e->undo == OSD_UNDO_CREATE)
		return os_txn_remove_any(t, pg->cid, e->oid);
	if (e->undo != OSD_UNDO_STASH && e->undo != OSD_UNDO_RENAME)
		return -ENOENT;
	i = stash_find(pg, &e->ver);
	if (i < 0)
		return -ENOENT;
	stash_name(&e->ver, name);
	rc = e->undo == OSD_UNDO_STASH
		     ? os_txn_unstash(t, pg->cid, name, e->oid, e->undo_off, e->undo_len)
		     : os_txn_rename(t, pg->cid, name, e->oid);
	return rc ? rc : stash_del(pg, t, (size_t)i, false);
}

/* Did the TxOps keep a stash (EC)? */
static bool
txops_stash(Cairn__Osd__TxOp *const *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ops[i]->op == OSD_TX_STASH || ops[i]->op == OSD_TX_RENAME)
			return true;
	return false;
}

/* The log entry, the new info and a trim, into t. */
static int
txn_add_log(struct pg *pg, struct os_txn *t, const Cairn__Osd__LogEntry *le,
	    const struct osd_ver *trim_to)
{
	Cairn__Osd__PgInfo pi = CAIRN__OSD__PG_INFO__INIT;
	Cairn__Osd__Version lu, tail;
	uint8_t k[LOGKEY_LEN], buf[256], *lebuf;
	struct osd_ver v;
	size_t n;
	int rc;

	ver_from_pb(le->ver, &v);
	log_key(&v, k);
	n = cairn__osd__log_entry__get_packed_size(le);
	lebuf = malloc(n ? n : 1);
	if (!lebuf)
		return -ENOMEM;
	cairn__osd__log_entry__pack(le, lebuf);
	rc = os_txn_omap_set(t, pg->cid, PGMETA, k, sizeof(k), lebuf, n);
	free(lebuf);
	if (!rc && trim_to && trim_to->seq && !pg->log_gap) {
		/* Point deletes of the entries we hold: a range delete would
		 * leave a range tombstone that every later get in the KV's
		 * memtable has to fragment again (RocksDB 7), slowing all reads
		 * of metadata as the memtable fills. */
		for (size_t i = 0; i < pg->log_n && !rc; i++) {
			const struct pg_lent *e = pg_log_at(pg, i);
			uint8_t ek[LOGKEY_LEN];

			if (osd_ver_cmp(&e->ver, trim_to) > 0)
				break;
			log_key(&e->ver, ek);
			rc = os_txn_omap_rm(t, pg->cid, PGMETA, ek, sizeof(ek));
		}
	} else if (!rc && trim_to && trim_to->seq) {
		/* Some entries in the store are not in memory: all of them. */
		uint8_t first[LOGKEY_LEN] = { 'l' }, last[LOGKEY_LEN];
		struct osd_ver end = { trim_to->epoch, trim_to->seq + 1 };

		log_key(&end, last);
		rc = os_txn_omap_rm_range(t, pg->cid, PGMETA, first, sizeof(first), last,
					  sizeof(last));
		if (!rc)
			pg->log_gap = false;
	}
	if (rc)
		return rc;
	pi.pool = pg->pool;
	pi.seed = pg->seed;
	ver_to_pb(&v, &lu);
	ver_to_pb(trim_to && osd_ver_cmp(trim_to, &pg->log_tail) > 0 ? trim_to : &pg->log_tail,
		  &tail);
	pi.last_update = &lu;
	pi.log_tail = &tail;
	pi.last_epoch_started = pg->last_epoch_started;
	pi.incomplete = pg->incomplete;
	pi.shard = pg->info_shard;
	n = cairn__osd__pg_info__pack(&pi, buf);
	return os_txn_omap_set(t, pg->cid, PGMETA, "info", 4, buf, n);
}

/* ---------- replies ---------- */

static void
op_free(struct op *op)
{
	if (!op)
		return;
	for (size_t i = 0; i < op->nres; i++) {
		Cairn__Osd__SubOpResult *r = &op->res[i];

		free(r->value.data);
		for (size_t k = 0; k < r->n_keys; k++)
			free(r->keys[k].data);
		for (size_t k = 0; k < r->n_vals; k++)
			free(r->vals[k].data);
		free(r->keys);
		free(r->vals);
		if (op->rbufs && op->rbufs[i])
			cm_buf_put(op->rbufs[i]);
	}
	for (size_t i = 0; i < op->ntx; i++) {
		free(op->tx[i].keys);
		free(op->tx[i].vals);
	}
	for (size_t i = 0; i < op->nowned; i++)
		free(op->owned[i]);
	free(op->owned);
	free(op->tx);
	free(op->txp);
	free(op->rbufs);
	free(op->roff);
	free(op->rlen);
	free(op->res);
	free(op->resp);
	free(op->rver);
	if (op->ecw)
		ec_op_free(op);
	cm_sgl_fini(&op->rdata);
	if (op->req)
		cairn__osd__osd_op__free_unpacked(op->req, NULL);
	if (op->m)
		cm_msg_destroy(op->m);
	if (op->c)
		cm_conn_put(op->c);
	free(op);
}

static void
reply_simple(struct osd *o, struct cm_conn *c, uint64_t tid, int rc)
{
	Cairn__Osd__OsdOpReply r = CAIRN__OSD__OSD_OP_REPLY__INIT;

	r.rc = rc;
	r.epoch = o->epoch;
	osd_send_pb(c, OSD_MSG_OP_REPLY, tid, &r.base, NULL);
}

static void op_start_next(struct pg *pg, const char *oid);

/* Reply to the client and finish op (it leaves pg->running). */
void
op_reply(struct op *op, const struct osd_ver *ver)
{
	Cairn__Osd__OsdOpReply r = CAIRN__OSD__OSD_OP_REPLY__INIT;
	Cairn__Osd__Version v;
	struct pg *pg = op->pg;
	char oid[OSD_NAME_MAX + 1];

	r.rc = op->rc;
	r.failed_op = op->failed;
	r.epoch = op->osd->epoch;
	if (ver) {
		ver_to_pb(ver, &v);
		r.ver = &v;
	}
	r.n_results = op->nres;
	r.results = op->resp;
	osd_send_pb(op->c, OSD_MSG_OP_REPLY, op->m->tid, &r.base, &op->rdata);
	op->osd->ops++;
	snprintf(oid, sizeof(oid), "%s", op->req->oid);
	if (op->queued && pg) {
		TAILQ_REMOVE(&pg->running, op, link);
		op->queued = false;
	}
	op_free(op);
	if (pg) {
		op_start_next(pg, oid);
		/* A push may wait for this object (only while recovery runs here). */
		if (!TAILQ_EMPTY(&pg->osd->rjobs) && !pg_object_busy(pg, oid))
			rec_object_idle(pg, oid);
	}
}

void
op_fail(struct op *op, unsigned i, int rc)
{
	if (op->rc)
		return;
	op->rc = rc;
	op->failed = i;
	if (i < op->nres)
		op->res[i].rc = rc;
}

/* ---------- the read phase ---------- */

static bool
subop_reads_meta(uint32_t t)
{
	switch (t) {
	case OSD_OP_STAT:
	case OSD_OP_APPEND:
	case OSD_OP_REMOVE:
	case OSD_OP_CREATE:
	case OSD_OP_GETXATTR:
	case OSD_OP_GETXATTRS:
	case OSD_OP_OMAP_GET:
	case OSD_OP_OMAP_LIST:
	case OSD_OP_OMAP_GET_HEADER:
	case OSD_OP_ASSERT_VERSION:
	case OSD_OP_CMPXATTR:
	case OSD_OP_ASSERT_EXISTS:
	case OSD_OP_READ:
		return true;
	default:
		return false;
	}
}

bool
op_subop_writes(uint32_t t)
{
	switch (t) {
	case OSD_OP_WRITE:
	case OSD_OP_WRITEFULL:
	case OSD_OP_APPEND:
	case OSD_OP_TRUNCATE:
	case OSD_OP_ZERO:
	case OSD_OP_REMOVE:
	case OSD_OP_CREATE:
	case OSD_OP_SETXATTR:
	case OSD_OP_RMXATTR:
	case OSD_OP_OMAP_SET:
	case OSD_OP_OMAP_RM:
	case OSD_OP_OMAP_CLEAR:
	case OSD_OP_OMAP_SET_HEADER:
	case OSD_OP_OMAP_RM_RANGE:
		return true;
	default:
		return false;
	}
}

static int
dup_bin(ProtobufCBinaryData *d, const void *p, size_t n)
{
	d->data = malloc(n ? n : 1);
	if (!d->data)
		return -ENOMEM;
	memcpy(d->data, p, n);
	d->len = n;
	return 0;
}

static int
cmp_bytes(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	int c = memcmp(a, b, CM_MIN(al, bl));

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

char *
op_xattr_name(const char *name)
{
	size_t n = strlen(name);
	char *s = malloc(n + 2);

	if (s) {
		s[0] = '_';
		memcpy(s + 1, name, n + 1);
	}
	return s;
}

/* On a worker: object state and every metadata result. */
static void
op_meta_fn(void *arg)
{
	struct op *op = arg;
	struct os_store *s = op->osd->store;
	const char *cid = op->pg->cid, *oid = op->req->oid;
	struct os_stat st;
	struct os_kv v = { 0 };
	int rc;

	rc = os_stat(s, cid, oid, &st);
	if (rc && rc != -ENOENT) {
		op_fail(op, 0, rc);
		return;
	}
	op->exists = rc == 0;
	op->size = op->exists ? st.size : 0;
	if (op->exists && os_getattr(s, cid, oid, "v", &v) == 0) {
		if (v.val && v.vlen == 16) {
			op->ver.epoch = get_be64(v.val);
			op->ver.seq = get_be64(v.val + 8);
		}
		kv_clear(&v);
	}
	if (op->exists && op->pg->ec) { /* an EC shard's size is not the object's */
		op->size = 0;
		if (os_getattr(s, cid, oid, "s", &v) == 0) {
			if (v.val && v.vlen == 8)
				op->size = get_be64(v.val);
			kv_clear(&v);
		}
	}
	for (size_t i = 0; i < op->req->n_ops && !op->rc; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];
		Cairn__Osd__SubOpResult *r = &op->res[i];
		char *xn;

		switch (so->op) {
		case OSD_OP_READ:
		case OSD_OP_STAT:
		case OSD_OP_ASSERT_EXISTS:
		case OSD_OP_REMOVE:
			if (!op->exists)
				op_fail(op, (unsigned)i, -ENOENT);
			break;
		case OSD_OP_CREATE:
			if (so->exclusive && op->exists)
				op_fail(op, (unsigned)i, -EEXIST);
			break;
		case OSD_OP_ASSERT_VERSION: {
			struct osd_ver want;

			ver_from_pb(so->ver, &want);
			if (!op->exists)
				op_fail(op, (unsigned)i, -ENOENT);
			else if (osd_ver_cmp(&want, &op->ver) != 0)
				op_fail(op, (unsigned)i, -ERANGE);
			break;
		}
		case OSD_OP_GETXATTR:
		case OSD_OP_CMPXATTR:
			if (!op->exists) {
				if (so->op == OSD_OP_CMPXATTR && so->cmp == OSD_CMP_ABSENT)
					break;
				op_fail(op, (unsigned)i, -ENOENT);
				break;
			}
			xn = op_xattr_name(so->name);
			if (!xn) {
				op_fail(op, (unsigned)i, -ENOMEM);
				break;
			}
			memset(&v, 0, sizeof(v));
			rc = os_getattr(s, cid, oid, xn, &v);
			free(xn);
			if (rc && rc != -ENODATA && rc != -ENOENT) {
				op_fail(op, (unsigned)i, rc);
				break;
			}
			if (so->op == OSD_OP_GETXATTR) {
				if (rc || !v.val)
					op_fail(op, (unsigned)i, -ENODATA);
				else if (dup_bin(&r->value, v.val, v.vlen))
					op_fail(op, (unsigned)i, -ENOMEM);
			} else {
				bool have = rc == 0 && v.val;
				int c = have ? cmp_bytes(v.val, v.vlen, so->value.data,
							 so->value.len)
					     : 0;
				bool ok;

				switch (so->cmp) {
				case OSD_CMP_ABSENT:
					ok = !have;
					break;
				case OSD_CMP_EQ:
					ok = have && c == 0;
					break;
				case OSD_CMP_NE:
					ok = !have || c != 0;
					break;
				case OSD_CMP_GT:
					ok = have && c > 0;
					break;
				case OSD_CMP_GE:
					ok = have && c >= 0;
					break;
				case OSD_CMP_LT:
					ok = have && c < 0;
					break;
				case OSD_CMP_LE:
					ok = have && c <= 0;
					break;
				default:
					ok = false;
					break;
				}
				if (!ok)
					op_fail(op, (unsigned)i, -ECANCELED);
			}
			if (!rc)
				kv_clear(&v);
			break;
		case OSD_OP_GETXATTRS: {
			struct os_kv *kvs = NULL;
			size_t n = 0, k = 0;

			if (!op->exists) {
				op_fail(op, (unsigned)i, -ENOENT);
				break;
			}
			rc = os_getattrs(s, cid, oid, &kvs, &n);
			if (rc) {
				op_fail(op, (unsigned)i, rc);
				break;
			}
			r->keys = calloc(n + 1, sizeof(*r->keys));
			r->vals = calloc(n + 1, sizeof(*r->vals));
			for (size_t j = 0; j < n && r->keys && r->vals; j++) {
				if (kvs[j].klen < 1 || kvs[j].key[0] != '_')
					continue;
				if (dup_bin(&r->keys[k], kvs[j].key + 1, kvs[j].klen - 1) ||
				    dup_bin(&r->vals[k], kvs[j].val, kvs[j].vlen)) {
					free(r->keys[k].data);
					r->keys[k].data = NULL;
					op_fail(op, (unsigned)i, -ENOMEM);
					break;
				}
				k++;
			}
			if (!r->keys || !r->vals)
				op_fail(op, (unsigned)i, -ENOMEM);
			r->n_keys = r->n_vals = k;
			os_kvs_free(kvs, n);
			break;
		}
		case OSD_OP_OMAP_GET: {
			struct os_kv *keys, *out;
			size_t k = 0;

			if (!op->exists) {
				op_fail(op, (unsigned)i, -ENOENT);
				break;
			}
			keys = calloc(so->n_keys + 1, sizeof(*keys));
			out = calloc(so->n_keys + 1, sizeof(*out));
			r->keys = calloc(so->n_keys + 1, sizeof(*r->keys));
			r->vals = calloc(so->n_keys + 1, sizeof(*r->vals));
			if (!keys || !out || !r->keys || !r->vals) {
				free(keys);
				free(out);
				op_fail(op, (unsigned)i, -ENOMEM);
				break;
			}
			for (size_t j = 0; j < so->n_keys; j++) {
				keys[j].key = so->keys[j].data;
				keys[j].klen = so->keys[j].len;
			}
			rc = os_omap_get(s, cid, oid, keys, so->n_keys, out);
			for (size_t j = 0; !rc && j < so->n_keys; j++) {
				if (!out[j].val)
					continue;
				if (dup_bin(&r->keys[k], out[j].key, out[j].klen) ||
				    dup_bin(&r->vals[k], out[j].val, out[j].vlen)) {
					free(r->keys[k].data);
					r->keys[k].data = NULL;
					rc = -ENOMEM;
					break;
				}
				k++;
			}
			r->n_keys = r->n_vals = k;
			if (rc)
				op_fail(op, (unsigned)i, rc);
			os_kvs_free(out, so->n_keys);
			free(keys);
			break;
		}
		case OSD_OP_OMAP_LIST: {
			struct os_kv *kvs = NULL;
			size_t n = 0, k = 0;
			bool more = false;
			unsigned max = so->max ? CM_MIN(so->max, (uint32_t)OSD_MAX_KEYS) : 1000;

			if (!op->exists) {
				op_fail(op, (unsigned)i, -ENOENT);
				break;
			}
			rc = os_omap_iterate(
				s, cid, oid, so->start_after.len ? so->start_after.data : NULL,
				so->start_after.len, so->prefix.len ? so->prefix.data : NULL,
				so->prefix.len, max, &kvs, &n, &more);
			if (rc) {
				op_fail(op, (unsigned)i, rc);
				break;
			}
			r->keys = calloc(n + 1, sizeof(*r->keys));
			r->vals = calloc(n + 1, sizeof(*r->vals));
			for (size_t j = 0; j < n && r->keys && r->vals; j++, k++)
				if (dup_bin(&r->keys[k], kvs[j].key, kvs[j].klen) ||
				    dup_bin(&r->vals[k], kvs[j].val, kvs[j].vlen)) {
					free(r->keys[k].data);
					r->keys[k].data = NULL;
					op_fail(op, (unsigned)i, -ENOMEM);
					break;
				}
			if (!r->keys || !r->vals)
				op_fail(op, (unsigned)i, -ENOMEM);
			r->n_keys = r->n_vals = k;
			r->more = more;
			os_kvs_free(kvs, n);
			break;
		}
		case OSD_OP_OMAP_GET_HEADER:
			if (!op->exists) {
				op_fail(op, (unsigned)i, -ENOENT);
				break;
			}
			memset(&v, 0, sizeof(v));
			rc = os_omap_get_header(s, cid, oid, &v);
			if (rc && rc != -ENODATA && rc != -ENOENT) {
				op_fail(op, (unsigned)i, rc);
				break;
			}
			if (!rc && v.val && dup_bin(&r->value, v.val, v.vlen))
				op_fail(op, (unsigned)i, -ENOMEM);
			if (!rc)
				kv_clear(&v);
			break;
		default:
			break;
		}
	}
}

static void op_after_reads(struct op *op);

bool
op_resume(struct op *op)
{
	op->busy = false;
	if (op->dropped) {
		op_free(op);
		return false;
	}
	return true;
}

void
op_reads_done(struct op *op)
{
	op->busy = false;
	if (op->dropped)
		op_free(op);
	else
		op_after_reads(op);
}

static void
on_data_read(void *arg, int rc, struct cm_buf *data)
{
	struct op *op = arg;
	unsigned i = 0;

	/* Reads complete in the order issued: the first unfilled READ is ours. */
	for (; i < op->req->n_ops; i++)
		if (op->req->ops[i]->op == OSD_OP_READ && !op->rbufs[i] && op->res[i].rc == 0 &&
		    !op->res[i].more)
			break;
	if (i < op->req->n_ops) {
		op->res[i].more = true; /* marks it done; cleared before the reply */
		if (rc)
			op_fail(op, i, rc);
		else
			op->rbufs[i] = data;
	} else if (data) {
		cm_buf_put(data);
	}
	if (--op->reads_pending == 0)
		op_reads_done(op);
}

static void
op_meta_done(void *arg)
{
	struct op *op = arg;

	op->busy = false;
	if (op->dropped) {
		op_free(op);
		return;
	}
	if (op->rc) {
		op_reply(op, NULL);
		return;
	}
	/* Data reads, through the reactor. */
	for (size_t i = 0; i < op->req->n_ops; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];
		uint64_t len;

		if (so->op != OSD_OP_READ)
			continue;
		len = so->len ? so->len : (so->off < op->size ? op->size - so->off : 0);
		if (so->off >= op->size || !len) {
			op->res[i].more = true;
			continue;
		}
		op->reads_pending++;
	}
	if (!op->reads_pending) {
		op_after_reads(op);
		return;
	}
	if (op->pg->ec) {
		op->busy = true;
		ec_op_read(op);
		return;
	}
	{
		unsigned n = op->reads_pending;

		op->busy = true;
		op->reads_pending++; /* hold until all are issued */
		for (size_t i = 0; i < op->req->n_ops && n; i++) {
			const Cairn__Osd__SubOp *so = op->req->ops[i];
			uint64_t len;

			if (so->op != OSD_OP_READ || op->res[i].more)
				continue;
			len = so->len ? so->len : op->size - so->off;
			n--;
			osd_read(op->osd, op->pg->cid, op->req->oid, so->off, len, on_data_read,
				 op);
		}
		if (--op->reads_pending == 0)
			op_reads_done(op);
	}
}

/* ---------- the write phase ---------- */

Cairn__Osd__TxOp *
op_tx_add(struct op *op, uint32_t type)
{
	Cairn__Osd__TxOp *x;

	if (op->ntx == op->txcap) {
		size_t cap = op->txcap ? op->txcap * 2 : 8;
		Cairn__Osd__TxOp *nt = realloc(op->tx, cap * sizeof(*nt));

		if (!nt)
			return NULL;
		op->tx = nt;
		op->txcap = cap;
	}
	x = &op->tx[op->ntx++];
	cairn__osd__tx_op__init(x);
	x->op = type;
	x->oid = op->req->oid;
	return x;
}

char *
op_own(struct op *op, char *s)
{
	char **no;

	if (!s)
		return NULL;
	no = realloc(op->owned, (op->nowned + 1) * sizeof(*no));
	if (!no) {
		free(s);
		return NULL;
	}
	op->owned = no;
	op->owned[op->nowned++] = s;
	return s;
}

/* The sub-ops as store mutations. \return 0 or -ENOMEM. */
static int
build_txops(struct op *op)
{
	bool exists = op->exists;
	uint64_t size = op->size;
	Cairn__Osd__TxOp *x;

	for (size_t i = 0; i < op->req->n_ops; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];

		int rc;

		if (!op_subop_writes(so->op))
			continue;
		rc = op_tx_life(op, so, &exists);
		if (rc < 0)
			return rc;
		if (rc) { /* removed */
			size = 0;
			continue;
		}
		switch (so->op) {
		case OSD_OP_WRITE:
		case OSD_OP_APPEND:
			x = op_tx_add(op, OSD_TX_WRITE);
			if (!x)
				return -ENOMEM;
			x->off = so->op == OSD_OP_APPEND ? size : so->off;
			x->len = so->len;
			x->data_off = so->data_off;
			size = CM_MAX(size, x->off + x->len);
			break;
		case OSD_OP_WRITEFULL:
			x = op_tx_add(op, OSD_TX_TRUNCATE);
			if (!x)
				return -ENOMEM;
			x->len = 0;
			if (so->len) {
				x = op_tx_add(op, OSD_TX_WRITE);
				if (!x)
					return -ENOMEM;
				x->len = so->len;
				x->data_off = so->data_off;
			}
			size = so->len;
			break;
		case OSD_OP_TRUNCATE:
			x = op_tx_add(op, OSD_TX_TRUNCATE);
			if (!x)
				return -ENOMEM;
			x->len = so->len;
			size = so->len;
			break;
		case OSD_OP_ZERO:
			x = op_tx_add(op, OSD_TX_ZERO);
			if (!x)
				return -ENOMEM;
			x->off = so->off;
			x->len = so->len;
			break;
		case OSD_OP_CREATE:
			break;
		case OSD_OP_SETXATTR:
		case OSD_OP_RMXATTR:
			if ((rc = op_tx_xattr(op, so)))
				return rc;
			break;
		case OSD_OP_OMAP_SET:
		case OSD_OP_OMAP_RM:
		case OSD_OP_OMAP_RM_RANGE:
			x = op_tx_add(op, so->op == OSD_OP_OMAP_SET  ? OSD_TX_OMAP_SET
					  : so->op == OSD_OP_OMAP_RM ? OSD_TX_OMAP_RM
								     : OSD_TX_OMAP_RM_RANGE);
			if (!x)
				return -ENOMEM;
			/* Borrowed from the request; freed arrays are ours (see op_free). */
			x->keys = malloc((so->n_keys + 1) * sizeof(*x->keys));
			x->vals = malloc((so->n_vals + 1) * sizeof(*x->vals));
			if (!x->keys || !x->vals)
				return -ENOMEM;
			if (so->n_keys)
				memcpy(x->keys, so->keys, so->n_keys * sizeof(*x->keys));
			if (so->n_vals)
				memcpy(x->vals, so->vals, so->n_vals * sizeof(*x->vals));
			x->n_keys = so->n_keys;
			x->n_vals = so->op == OSD_OP_OMAP_SET ? so->n_vals : 0;
			x->end = so->end;
			break;
		case OSD_OP_OMAP_CLEAR:
			if (!op_tx_add(op, OSD_TX_OMAP_CLEAR))
				return -ENOMEM;
			break;
		case OSD_OP_OMAP_SET_HEADER:
			x = op_tx_add(op, OSD_TX_OMAP_SET_HEADER);
			if (!x)
				return -ENOMEM;
			x->value = so->value;
			break;
		default:
			break;
		}
	}
	return op_tx_finish(op, exists);
}

int
op_tx_life(struct op *op, const Cairn__Osd__SubOp *so, bool *exists)
{
	if (so->op == OSD_OP_REMOVE) {
		*exists = false;
		return op_tx_add(op, OSD_TX_REMOVE) ? 1 : -ENOMEM;
	}
	if (!*exists) {
		if (!op_tx_add(op, OSD_TX_TOUCH))
			return -ENOMEM;
		*exists = true;
	}
	return 0;
}

int
op_tx_xattr(struct op *op, const Cairn__Osd__SubOp *so)
{
	Cairn__Osd__TxOp *x =
		op_tx_add(op, so->op == OSD_OP_SETXATTR ? OSD_TX_SETATTR : OSD_TX_RMATTR);

	if (!x || !(x->name = op_own(op, op_xattr_name(so->name))))
		return -ENOMEM;
	x->value = so->value;
	return 0;
}

int
op_tx_finish(struct op *op, bool exists)
{
	if (exists) {
		Cairn__Osd__TxOp *x = op_tx_add(op, OSD_TX_SETATTR);

		if (!x)
			return -ENOMEM;
		x->name = "v";
		ver_pack(&op->new_ver, op->verbuf);
		x->value.data = op->verbuf;
		x->value.len = sizeof(op->verbuf);
	}
	op->txp = malloc((op->ntx + 1) * sizeof(*op->txp));
	if (!op->txp)
		return -ENOMEM;
	for (size_t i = 0; i < op->ntx; i++)
		op->txp[i] = &op->tx[i];
	return 0;
}

static void
repop_finish(struct repop *rp)
{
	struct pg *pg = rp->pg;
	struct op *op = rp->op;
	bool oldest = rp == TAILQ_FIRST(&pg->repops);

	if (rp->split) {
		CM_WARN("%s: osd_debug_split_write: %" PRIu64 ".%" PRIu64
			" is on shards below %" PRIu64 " only; exiting",
			pg->cid, rp->ver.epoch, rp->ver.seq, pg->osd->cfg->debug_split);
		_exit(3);
	}
	TAILQ_REMOVE(&pg->repops, rp, link);
	/* EC: how far every shard committed (stashes before that may go). */
	if (op && rp->rc)
		pg->roll_stuck = true;
	else if (op && oldest) {
		struct repop *next = TAILQ_FIRST(&pg->repops);
		struct osd_ver upto = rp->ver;

		if (next && next->ver.seq > 0)
			upto = (struct osd_ver){ next->ver.epoch, next->ver.seq - 1 };
		if (osd_ver_cmp(&upto, &pg->roll_ok) > 0)
			pg->roll_ok = upto;
	}
	if (op) {
		if (rp->rc)
			op_fail(op, 0, rp->rc);
		op_reply(op, &rp->ver);
	}
	free(rp);
}

static void
on_local_commit(void *arg, int rc)
{
	struct repop *rp = arg;

	rp->local_pending = false;
	if (rc) {
		CM_ERR("%s: local commit of %" PRIu64 ".%" PRIu64 " failed: %s", rp->pg->cid,
		       rp->ver.epoch, rp->ver.seq, cm_strerror(rc));
		rp->rc = rc;
	}
	if (--rp->waiting == 0)
		repop_finish(rp);
}

static void
fill_entry(Cairn__Osd__LogEntry *le, Cairn__Osd__Version *v, Cairn__Osd__Version *pv, struct op *op,
	   bool deleted)
{
	cairn__osd__log_entry__init(le);
	ver_to_pb(&op->new_ver, v);
	ver_to_pb(&op->ver, pv);
	le->ver = v;
	le->prior = pv;
	le->op = deleted ? OSD_LOG_DELETE : OSD_LOG_MODIFY;
	le->oid = op->req->oid;
	le->client = op->client;
	le->tid = op->m->tid;
}

static const struct cm_sgl *
repl_data(struct op *op, int shard)
{
	(void)shard;
	return &op->m->data;
}

static void
op_write(struct op *op)
{
	struct pg *pg = op->pg;
	int rc;

	op->new_ver.epoch = op->osd->epoch;
	op->new_ver.seq = pg->last_update.seq + 1;
	if (pg->ec) {
		ec_op_write(op);
		return;
	}
	rc = build_txops(op);
	if (rc) {
		op_fail(op, 0, rc);
		op_reply(op, NULL);
		return;
	}
	op_commit(op, repl_data);
}

void
op_commit(struct op *op, const struct cm_sgl *(*data)(struct op *op, int shard))
{
	struct pg *pg = op->pg;
	struct osd *o = op->osd;
	Cairn__Osd__LogEntry le;
	Cairn__Osd__Version v, pv, tv, rv;
	Cairn__Osd__RepOp ro = CAIRN__OSD__REP_OP__INIT;
	struct osd_ver trim = { 0, 0 }, roll = { 0, 0 };
	uint32_t sent[OSD_EC_MAX_SHARDS] = { 0 };
	struct os_txn *t = NULL;
	struct repop *rp;
	bool deleted;
	int rc, self = 0;

	for (int i = 0; i < pg->nacting; i++)
		if (pg->acting[i] == o->id)
			self = pg->shard[i];
	deleted = op->ntx && (op->tx[op->ntx - 1].op == OSD_TX_REMOVE ||
			      op->tx[op->ntx - 1].op == OSD_TX_RENAME);
	fill_entry(&le, &v, &pv, op, deleted);
	if (pg->ec) {
		le.undo = op->undo;
		le.undo_off = op->undo_off;
		le.undo_len = op->undo_len;
		for (int i = 0; i < pg->nacting; i++)
			if (pg->acting[i] >= 0 && pg->shard[i] < OSD_EC_MAX_SHARDS) {
				sent[pg->shard[i]] = (uint32_t)pg->acting[i] + 1;
				le.n_sent_to = CM_MAX(le.n_sent_to, (size_t)pg->shard[i] + 1);
			}
		le.sent_to = sent;
		if (!pg->roll_stuck)
			roll = pg->roll_ok;
	}
	if (pg->log_n >= o->cfg->pg_log_max + TRIM_SLACK)
		trim = pg_log_at(pg, pg->log_n - o->cfg->pg_log_max - 1)->ver;
	rp = calloc(1, sizeof(*rp));
	rc = rp ? os_txn_create(&t) : -ENOMEM;
	if (!rc)
		rc = txn_add_ops(t, pg->cid, op->txp, op->ntx, data(op, self), false, &op->new_ver);
	if (!rc)
		rc = pg_stash_drop(pg, t, osd_ver_cmp(&roll, &trim) > 0 ? &roll : &trim);
	if (!rc && txops_stash(op->txp, op->ntx))
		rc = stash_add(pg, t, &op->new_ver);
	if (!rc)
		rc = txn_add_log(pg, t, &le, &trim);
	if (!rc)
		rc = pg_log_append(pg, &le);
	if (rc) {
		os_txn_destroy(t);
		free(rp);
		op_fail(op, 0, rc);
		op_reply(op, NULL);
		return;
	}
	pg->last_update = op->new_ver;
	if (trim.seq)
		log_trim_mem(pg, &trim);
	rp->pg = pg;
	rp->op = op;
	rp->ver = op->new_ver;
	rp->waiting = 1;
	rp->local_pending = true;
	rp->split = pg->ec && o->cfg->debug_split && !strncmp(op->req->oid, "split-", 6);
	TAILQ_INSERT_TAIL(&pg->repops, rp, link);
	/* Replicas. */
	ro.pool = pg->pool;
	ro.seed = pg->seed;
	/* Our map's epoch, not the interval's start: a replica that saw the
	 * interval begin at a later epoch (it skipped maps) still takes it, one
	 * whose map shows a newer interval than ours refuses it. */
	ro.epoch = o->epoch;
	ro.entry = &le;
	ro.n_ops = op->ntx;
	ro.ops = op->txp;
	ver_to_pb(&trim, &tv);
	ro.trim_to = &tv;
	if (roll.seq) {
		ver_to_pb(&roll, &rv);
		ro.roll_to = &rv;
		pg->roll_sent = roll;
	}
	for (int i = 0; i < pg->nacting; i++) {
		int32_t id = pg->acting[i];

		if (id == o->id || id < 0 || (rp->split && pg->shard[i] >= o->cfg->debug_split))
			continue;
		if (osd_send_pb(osd_peer_conn(o, id, pg->seed), OSD_MSG_REP_OP, 0, &ro.base,
				data(op, pg->shard[i]))) {
			/* The session is gone: the interval will change; the client resends. */
			rp->rc = -EAGAIN;
			continue;
		}
		rp->waiting++;
		o->repops++;
	}
	if (rp->split && (unsigned)self >= o->cfg->debug_split) {
		os_txn_destroy(t); /* (our log has it in memory only: we exit before anyone asks) */
		on_local_commit(rp, 0);
		return;
	}
	osd_queue(o, t, on_local_commit, rp);
}

static void
op_after_reads(struct op *op)
{
	bool writes = false;

	for (size_t i = 0; i < op->req->n_ops; i++) {
		op->res[i].more = op->req->ops[i]->op == OSD_OP_OMAP_LIST && op->res[i].more;
		writes |= op_subop_writes(op->req->ops[i]->op);
	}
	if (op->rc) {
		op_reply(op, NULL);
		return;
	}
	/* Results of reads and stats. */
	for (size_t i = 0; i < op->req->n_ops; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];
		Cairn__Osd__SubOpResult *r = &op->res[i];

		if (so->op == OSD_OP_STAT) {
			r->size = op->size;
			ver_to_pb(&op->ver, &op->rver[i]);
			r->ver = &op->rver[i];
		} else if (so->op == OSD_OP_READ && op->rbufs[i]) {
			size_t off = op->rlen[i] ? op->roff[i] : 0;

			r->data_off = op->rdata.len;
			r->data_len = op->rlen[i] ? op->rlen[i] : op->rbufs[i]->len;
			if (r->data_len &&
			    cm_sgl_append(&op->rdata, op->rbufs[i], off, (size_t)r->data_len)) {
				op_fail(op, (unsigned)i, -ENOMEM);
				op_reply(op, NULL);
				return;
			}
			op->osd->op_bytes_out += r->data_len;
		}
	}
	if (!writes) {
		op_reply(op, &op->ver);
		return;
	}
	if (op->osd->map && (op->osd->map->flags & MON_FLAG_FULL)) {
		op_fail(op, 0, -ENOSPC);
		op_reply(op, NULL);
		return;
	}
	op_write(op);
}

/* ---------- running ops ---------- */

/*
 * A lone READ on a replicated pool: the store reads the data, the size and
 * the version xattr from one state of the object, with no metadata read on
 * a worker (two KV gets and a thread hop per read before).
 */
static void
on_plain_read(void *arg, int rc, struct cm_buf *data, const struct os_read_meta *m)
{
	struct op *op = arg;

	op->busy = false;
	if (op->dropped) {
		cm_buf_put(data);
		op_free(op);
		return;
	}
	if (rc) {
		cm_buf_put(data);
		op_fail(op, 0, rc);
		op_reply(op, NULL);
		return;
	}
	op->exists = true;
	op->size = m->size;
	if (m->has_attr && m->attr_len == 16) {
		op->ver.epoch = get_be64(m->attr);
		op->ver.seq = get_be64(m->attr + 8);
	}
	op->res[0].more = true; /* done; cleared before the reply */
	if (data && data->len)
		op->rbufs[0] = data;
	else
		cm_buf_put(data);
	op_after_reads(op);
}

static void
op_exec(struct op *op)
{
	bool meta = false;

	if (op->req->flags & OSD_OPF_RESEND) { /* was it applied already? */
		const struct pg_lent *e = log_find_req(op->pg, op->client, op->m->tid);

		if (e) {
			op->osd->dups++;
			op->rc = e->rc;
			op_reply(op, &e->ver);
			return;
		}
	}
	if (!op->pg->ec && op->req->n_ops == 1 && op->req->ops[0]->op == OSD_OP_READ) {
		const Cairn__Osd__SubOp *so = op->req->ops[0];

		op->busy = true;
		osd_read_meta(op->osd, op->pg->cid, op->req->oid, so->off,
			      so->len ? so->len : UINT64_MAX, "v", on_plain_read, op);
		return;
	}
	for (size_t i = 0; i < op->req->n_ops; i++)
		meta |= subop_reads_meta(op->req->ops[i]->op);
	meta |= op->pg->ec != NULL; /* EC writes need the size and version first */
	if (!meta) {
		op_after_reads(op);
		return;
	}
	op->w = (struct cm_work){ .fn = op_meta_fn, .done = op_meta_done, .arg = op };
	op->busy = true;
	if (osd_work(op->osd, &op->w)) {
		op->busy = false;
		op_fail(op, 0, -ESHUTDOWN);
		op_reply(op, NULL);
	}
}

/* Run the first op on oid if it waits and may run now. */
static void
op_start_next(struct pg *pg, const char *oid)
{
	struct op *op;

	TAILQ_FOREACH(op, &pg->running, link)
		if (strcmp(op->req->oid, oid) == 0) {
			/* Recovery may hold it (rec_op_blocked asks for the object first;
			 * it may also run it from inside, when the answer is at hand). */
			if (op->blocked && pg->state == PG_ACTIVE &&
			    !rec_op_blocked(pg, oid, op->writes)) {
				op->blocked = false;
				op_exec(op);
			}
			return;
		}
}

static void
op_start(struct pg *pg, struct op *op)
{
	struct op *x;
	bool busy = false;

	TAILQ_FOREACH(x, &pg->running, link)
		if (strcmp(x->req->oid, op->req->oid) == 0) {
			busy = true;
			break;
		}
	op->pg = pg;
	op->blocked = true;
	op->queued = true;
	if (pg->ec && op->writes && (unsigned)pg->nacting < pg->min_size) {
		/* Fewer shards than min_size: reads go on, writes wait for a new
		 * interval (or the client's timeout). */
		TAILQ_INSERT_TAIL(&pg->waiting, op, link);
		return;
	}
	TAILQ_INSERT_TAIL(&pg->running, op, link);
	if (!busy)
		op_start_next(pg, op->req->oid);
}

bool
pg_object_busy(struct pg *pg, const char *oid)
{
	struct op *op;

	TAILQ_FOREACH(op, &pg->running, link)
		if (!op->blocked && strcmp(op->req->oid, oid) == 0)
			return true;
	return false;
}

void
pg_object_ready(struct pg *pg, const char *oid)
{
	if (pg->primary == pg->osd->id && pg->state == PG_ACTIVE)
		op_start_next(pg, oid);
}

/* ---------- client messages ---------- */

/* Queue op on its PG, or answer that the client must look again. */
static void
op_dispatch(struct osd *o, struct op *op)
{
	struct pg *pg;

	if (op->req->epoch > o->epoch) {
		op->queued = true;
		TAILQ_INSERT_TAIL(&o->wait_map, op, link);
		osd_want_map(o, o->epoch);
		return;
	}
	pg = pg_find(o, op->req->pool, op->req->seed);
	if (!osd_pool(o, op->req->pool)) {
		reply_simple(o, op->c, op->m->tid, -ENOENT);
		op_free(op);
		return;
	}
	if (!pg || pg->primary != o->id || pg->state == PG_NONE || pg->state == PG_REPLICA) {
		/* Not ours in our map: the client's map differs; it looks again. */
		reply_simple(o, op->c, op->m->tid, -ESTALE);
		op_free(op);
		return;
	}
	op->pg = pg;
	if (osd_pool(o, op->req->pool)->erasure) {
		int rc = pg->ec ? 0 : -ENOMEM;

		for (size_t i = 0; i < op->req->n_ops && !rc; i++)
			if (op->req->ops[i]->op >= OSD_OP_OMAP_GET &&
			    op->req->ops[i]->op <= OSD_OP_OMAP_SET_HEADER)
				rc = -EOPNOTSUPP; /* metadata belongs in replicated pools */
			else if (op->req->ops[i]->op == OSD_OP_OMAP_RM_RANGE)
				rc = -EOPNOTSUPP;
		if (rc) {
			reply_simple(o, op->c, op->m->tid, rc);
			op_free(op);
			return;
		}
	}
	if (pg->state != PG_ACTIVE) {
		op->queued = true;
		TAILQ_INSERT_TAIL(&pg->waiting, op, link);
		return;
	}
	op_start(pg, op);
}

void
pg_handle_op(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	struct op *op = calloc(1, sizeof(*op));
	int rc;

	if (!op) {
		reply_simple(o, c, m->tid, -ENOMEM);
		cm_msg_destroy(m);
		return;
	}
	op->osd = o;
	op->c = cm_conn_get(c);
	op->m = m;
	cm_sgl_init(&op->rdata);
	snprintf(op->client, sizeof(op->client), "%s", cm_conn_peer(c));
	op->req = (Cairn__Osd__OsdOp *)cm_msg_unpack_front(m, &cairn__osd__osd_op__descriptor);
	rc = op->req ? osd_check_op(op->req, m->data.len) : -EBADMSG;
	if (!rc) {
		op->nres = op->req->n_ops;
		op->res = calloc(op->nres, sizeof(*op->res));
		op->resp = calloc(op->nres, sizeof(*op->resp));
		op->rver = calloc(op->nres, sizeof(*op->rver));
		op->rbufs = calloc(op->nres, sizeof(*op->rbufs));
		op->roff = calloc(op->nres, sizeof(*op->roff));
		op->rlen = calloc(op->nres, sizeof(*op->rlen));
		if (!op->res || !op->resp || !op->rver || !op->rbufs || !op->roff || !op->rlen)
			rc = -ENOMEM;
		for (size_t i = 0; !rc && i < op->nres; i++) {
			cairn__osd__sub_op_result__init(&op->res[i]);
			op->resp[i] = &op->res[i];
		}
	}
	if (rc) {
		CM_LOG_RL(CM_LOG_WARN, "bad op from %s: %s", op->client, cm_strerror(rc));
		reply_simple(o, c, m->tid, rc);
		op->nres = 0;
		op_free(op);
		return;
	}
	{
		uint64_t cost = 4096;

		for (size_t i = 0; i < op->req->n_ops; i++) {
			if (op_subop_writes(op->req->ops[i]->op)) {
				o->op_bytes_in += op->req->ops[i]->len;
				op->writes = true;
			}
			cost += op->req->ops[i]->len;
		}
		rec_client_cost(o, cost);
	}
	op_dispatch(o, op);
}

void
pg_retry_wait_map(struct osd *o)
{
	TAILQ_HEAD(, op) q = TAILQ_HEAD_INITIALIZER(q);
	struct op *op;

	TAILQ_CONCAT(&q, &o->wait_map, link);
	while ((op = TAILQ_FIRST(&q))) {
		TAILQ_REMOVE(&q, op, link);
		op->queued = false;
		op_dispatch(o, op);
	}
}

/* Listing a PG's objects (on the worker). */
struct list_req {
	struct osd *osd;
	struct cm_conn *c;
	uint64_t tid;
	Cairn__Osd__PgList *q;
	char cid[48];
	char **oids;
	size_t n;
	bool more;
	int rc;
	struct cm_work w;
};

static void
list_fn(void *arg)
{
	struct list_req *l = arg;
	unsigned max = l->q->max ? CM_MIN(l->q->max, 10000u) : 1000;
	size_t k = 0;

	l->rc = os_list(l->osd->store, l->cid, l->q->start_after[0] ? l->q->start_after : NULL,
			max + 1, &l->oids, &l->n, &l->more);
	if (l->rc)
		return;
	for (size_t i = 0; i < l->n; i++) {
		if ((uint8_t)l->oids[i][0] == 1) {
			free(l->oids[i]);
			continue;
		}
		l->oids[k++] = l->oids[i];
	}
	l->n = k;
	if (l->n > max) {
		for (size_t i = max; i < l->n; i++)
			free(l->oids[i]);
		l->n = max;
		l->more = true;
	}
}

static void
list_done(void *arg)
{
	struct list_req *l = arg;
	Cairn__Osd__PgListReply r = CAIRN__OSD__PG_LIST_REPLY__INIT;

	r.rc = l->rc == -ENOENT ? 0 : l->rc;
	r.oids = l->oids;
	r.n_oids = l->rc ? 0 : l->n;
	r.more = l->more;
	r.epoch = l->osd->epoch;
	osd_send_pb(l->c, OSD_MSG_PG_LIST_REPLY, l->tid, &r.base, NULL);
	if (!l->rc)
		os_names_free(l->oids, l->n);
	cairn__osd__pg_list__free_unpacked(l->q, NULL);
	cm_conn_put(l->c);
	free(l);
}

void
pg_handle_list(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PgList *q =
		(Cairn__Osd__PgList *)cm_msg_unpack_front(m, &cairn__osd__pg_list__descriptor);
	Cairn__Osd__PgListReply r = CAIRN__OSD__PG_LIST_REPLY__INIT;
	struct list_req *l;
	struct pg *pg;

	r.epoch = o->epoch;
	if (!q) {
		r.rc = -EBADMSG;
		goto reply;
	}
	pg = pg_find(o, q->pool, q->seed);
	if (!osd_pool(o, q->pool)) {
		r.rc = -ENOENT;
		goto reply;
	}
	if (q->shard) {
		/* An EC primary backfilling its own shard lists a complete one. */
		if (!pg || !pg->ec || !pg->in_store || pg->incomplete || pg->missing.n) {
			r.rc = -ESTALE;
			goto reply;
		}
	} else if (!pg || pg->primary != o->id || pg->state != PG_ACTIVE) {
		r.rc = pg && pg->primary == o->id ? -EAGAIN : -ESTALE;
		goto reply;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		r.rc = -ENOMEM;
		goto reply;
	}
	l->osd = o;
	l->c = cm_conn_get(c);
	l->tid = m->tid;
	l->q = q;
	snprintf(l->cid, sizeof(l->cid), "%s", pg->cid);
	l->w = (struct cm_work){ .fn = list_fn, .done = list_done, .arg = l };
	cm_msg_destroy(m);
	if (osd_work(o, &l->w))
		list_done(l);
	return;
reply:
	osd_send_pb(c, OSD_MSG_PG_LIST_REPLY, m->tid, &r.base, NULL);
	if (q)
		cairn__osd__pg_list__free_unpacked(q, NULL);
	cm_msg_destroy(m);
}

/* ---------- replicas ---------- */

static void
on_replica_commit(void *arg, int rc)
{
	struct rapply *ra = arg;
	Cairn__Osd__RepOpReply r = CAIRN__OSD__REP_OP_REPLY__INIT;
	Cairn__Osd__Version v;

	r.pool = ra->pool;
	r.seed = ra->seed;
	ver_to_pb(&ra->ver, &v);
	r.ver = &v;
	r.rc = rc;
	if (rc)
		CM_ERR("pg.%" PRId64 ".%x: applying %" PRIu64 ".%" PRIu64 " failed: %s", ra->pool,
		       ra->seed, ra->ver.epoch, ra->ver.seq, cm_strerror(rc));
	osd_send_pb(ra->c, OSD_MSG_REP_OP_REPLY, 0, &r.base, NULL);
	cm_conn_put(ra->c);
	free(ra);
}

static void roll_local(struct pg *pg, const struct osd_ver *v);

/*
 * A replica hears that the PG is active in the interval that began at map
 * `epoch` (the primary's activation message, or its first change): the
 * intervals before need no hearing from any more. Kept in the prior record.
 */
static void
replica_started(struct pg *pg, uint64_t epoch)
{
	struct pga *x;

	if (epoch <= pg->last_epoch_started)
		return;
	x = pg_pga(pg);
	pg->last_epoch_started = epoch;
	if (x) {
		pga_trim(x, epoch);
		x->known = true;
	}
	prior_save(pg, true);
}

void
pg_handle_repop(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__RepOp *ro =
		(Cairn__Osd__RepOp *)cm_msg_unpack_front(m, &cairn__osd__rep_op__descriptor);
	struct rapply *ra = NULL;
	struct os_txn *t = NULL;
	struct osd_ver trim = { 0, 0 }, roll, v;
	struct pg *pg;
	int rc;

	if (!ro || osd_check_repop(ro, m->data.len)) {
		CM_LOG_RL(CM_LOG_WARN, "undecodable replication op from %s", cm_conn_peer(c));
		goto out;
	}
	pg = pg_find(o, ro->pool, ro->seed);
	if (!ro->entry) {
		/* The primary activated (or, EC, rolls forward): no reply */
		ver_from_pb(ro->roll_to, &roll);
		if (pg && pg->in_store && ro->epoch >= pg->interval_epoch) {
			replica_started(pg, ro->epoch);
			roll_local(pg, &roll);
		}
		goto out;
	}
	ver_from_pb(ro->entry->ver, &v);
	ra = calloc(1, sizeof(*ra));
	if (!ra)
		goto out;
	ra->osd = o;
	ra->c = cm_conn_get(c);
	ra->pool = ro->pool;
	ra->seed = ro->seed;
	ra->ver = v;
	if (!pg || !pg->in_store || ro->epoch < pg->interval_epoch) {
		/* Not (or no longer) a replica of this interval: the primary re-peers. */
		on_replica_commit(ra, -ESTALE);
		goto out;
	}
	replica_started(pg, ro->epoch);
	ver_from_pb(ro->trim_to, &trim);
	ver_from_pb(ro->roll_to, &roll);
	rc = os_txn_create(&t);
	if (!rc)
		rc = txn_add_ops(t, pg->cid, ro->ops, ro->n_ops, &m->data, pg->incomplete, &v);
	if (!rc)
		rc = pg_stash_drop(pg, t, osd_ver_cmp(&roll, &trim) > 0 ? &roll : &trim);
	if (!rc && txops_stash(ro->ops, ro->n_ops))
		rc = stash_add(pg, t, &v);
	if (!rc)
		rc = txn_add_log(pg, t, ro->entry, &trim);
	if (!rc)
		rc = pg_log_append(pg, ro->entry);
	if (rc) {
		os_txn_destroy(t);
		on_replica_commit(ra, rc);
		goto out;
	}
	pg->last_update = v;
	if (trim.seq)
		log_trim_mem(pg, &trim);
	o->repops++;
	osd_queue(o, t, on_replica_commit, ra);
out:
	if (ro)
		cairn__osd__rep_op__free_unpacked(ro, NULL);
	cm_msg_destroy(m);
}

void
pg_handle_repop_reply(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__RepOpReply *r = (Cairn__Osd__RepOpReply *)cm_msg_unpack_front(
		m, &cairn__osd__rep_op_reply__descriptor);
	struct repop *rp;
	struct osd_ver v;
	struct pg *pg;

	(void)c;
	if (!r)
		goto out;
	pg = pg_find(o, r->pool, r->seed);
	if (!pg)
		goto out;
	ver_from_pb(r->ver, &v);
	TAILQ_FOREACH(rp, &pg->repops, link)
		if (osd_ver_cmp(&rp->ver, &v) == 0)
			break;
	if (!rp || !rp->op)
		goto out; /* unknown, or from an interval that ended */
	if (r->rc && !rp->rc)
		rp->rc = r->rc == -ESTALE ? -EAGAIN : r->rc;
	if (--rp->waiting == 0)
		repop_finish(rp);
out:
	if (r)
		cairn__osd__rep_op_reply__free_unpacked(r, NULL);
	cm_msg_destroy(m);
}

/* ---------- intervals and peering ---------- */

void
pg_activate(struct pg *pg)
{
	struct op *op;
	TAILQ_HEAD(, op) q = TAILQ_HEAD_INITIALIZER(q);

	struct pga *x = pg_pga(pg);

	pg->state = PG_ACTIVE;
	pg->last_epoch_started = pg->osd->epoch;
	if (x) {
		pga_trim(x, pg->last_epoch_started);
		x->known = true;
	}
	/* Peering settled every entry up to here: none is undone any more. */
	pg->roll_ok = pg->last_update;
	pg->roll_sent = (struct osd_ver){ 0, 0 }; /* tell the shards (pg_roll_forward) */
	pg->roll_stuck = false;
	prior_save(pg, true); /* a restart need not wait for the prior set any more */
	if (!pg->ec) {
		/* Tell the replicas (EC shards hear it from pg_roll_forward). */
		Cairn__Osd__RepOp ro = CAIRN__OSD__REP_OP__INIT;

		ro.pool = pg->pool;
		ro.seed = pg->seed;
		ro.epoch = pg->interval_epoch;
		for (int i = 0; i < pg->nacting; i++)
			if (pg->acting[i] != pg->osd->id && pg->acting[i] >= 0)
				osd_send_pb(osd_peer_conn(pg->osd, pg->acting[i], pg->seed),
					    OSD_MSG_REP_OP, 0, &ro.base, NULL);
	}
	if (!pg->rec_pending)
		rec_remove_strays(pg);
	pg->osd->last_beacon_ms = 0; /* report the new state at the next tick */
	CM_INFO("%s: active (acting %d of %u) at %" PRIu64 ".%" PRIu64 "%s", pg->cid, pg->nacting,
		pg->size, pg->last_update.epoch, pg->last_update.seq,
		pg->rec_pending ? ", recovering meanwhile" : "");
	TAILQ_CONCAT(&q, &pg->waiting, link);
	while ((op = TAILQ_FIRST(&q))) {
		TAILQ_REMOVE(&q, op, link);
		op->queued = false;
		op_start(pg, op);
	}
}

void
pg_recovered(struct pg *pg)
{
	rec_remove_strays(pg);
	pg->osd->last_beacon_ms = 0;
}

/* Leaving active: ops held by recovery wait for the next activation, in order. */
static void
ops_park(struct pg *pg)
{
	TAILQ_HEAD(, op) q = TAILQ_HEAD_INITIALIZER(q);
	struct op *op, *tmp;

	TAILQ_FOREACH_SAFE(op, &pg->running, link, tmp)
		if (op->blocked) {
			TAILQ_REMOVE(&pg->running, op, link);
			TAILQ_INSERT_TAIL(&q, op, link);
		}
	TAILQ_CONCAT(&q, &pg->waiting, link);
	TAILQ_CONCAT(&pg->waiting, &q, link);
}

static void
pg_send_queries(struct pg *pg)
{
	Cairn__Osd__PgQuery q = CAIRN__OSD__PG_QUERY__INIT;
	struct osd *o = pg->osd;

	q.pool = pg->pool;
	q.seed = pg->seed;
	q.epoch = pg->interval_epoch;
	rec_reset(pg);
	pg->notifies_wanted = 0;
	/* Slots: the acting set, then prior OSDs that are up. */
	pg->nslots = 0;
	for (int i = 0; i < pg->nacting; i++)
		pg->slot_osd[pg->nslots++] = pg->acting[i];
	for (int k = 0; k < pg->nprior && pg->nslots < PG_MAX_SLOTS; k++) {
		const Cairn__Map__Osd *mo = mon_osd_find(o->map, pg->prior[k]);

		if (mo && mo->up)
			pg->slot_osd[pg->nslots++] = pg->prior[k];
	}
	{
		/* and the OSDs of past intervals that may have taken writes */
		struct pga *x = pg_pga(pg);

		for (size_t k = 0; x && !x->known && k < o->map->n_osds; k++) {
			const Cairn__Map__Osd *mo = o->map->osds[k];

			if (mo->up && pg->nslots < PG_MAX_SLOTS &&
			    !has_osd(pg->slot_osd, pg->nslots, mo->id))
				pg->slot_osd[pg->nslots++] = mo->id;
		}
		for (int v = 0; x && v < x->niv; v++) {
			const struct piv *iv = &x->iv[v];

			for (int j = 0; iv->rw && iv->last != PIV_OPEN && j < iv->n &&
					pg->nslots < PG_MAX_SLOTS;
			     j++) {
				const Cairn__Map__Osd *mo = mon_osd_find(o->map, iv->a[j]);

				if (mo && mo->up && !has_osd(pg->slot_osd, pg->nslots, iv->a[j]))
					pg->slot_osd[pg->nslots++] = iv->a[j];
			}
		}
	}
	for (int i = 0; i < pg->nslots; i++) {
		struct pg_peer *p = &pg->peer[i];
		const Cairn__Map__Osd *mo = mon_osd_find(o->map, pg->slot_osd[i]);

		pg->peer_up_since[i] = mo ? mo->up_since : 0;
		if (pg->slot_osd[i] == o->id) {
			p->have = true;
			p->exists = true;
			p->incomplete = pg->incomplete;
			p->partial = pg->missing.n > 0;
			p->les = pg->last_epoch_started;
			p->lu = pg->last_update;
			p->tail = pg->log_tail;
			continue;
		}
		if (osd_send_pb(osd_peer_conn(o, pg->slot_osd[i], pg->seed), OSD_MSG_PG_QUERY, 0,
				&q.base, NULL) == 0)
			pg->notifies_wanted++;
	}
}

void
pg_start_peering(struct pg *pg)
{
	pg->retry_ms = 0;
	ops_park(pg);
	/* An EC PG with k shards can be read; writes wait for min_size (op_start). */
	if ((unsigned)pg->nacting < (pg->ec ? pg->ec->k : pg->min_size)) {
		rec_reset(pg);
		pg->state = PG_DOWN;
		CM_INFO("%s: down (%d of min_size %u up)", pg->cid, pg->nacting, pg->min_size);
		return;
	}
	pg->state = PG_PEERING;
	pg_send_queries(pg);
	if (!pg->notifies_wanted)
		rec_plan(pg);
}

static void
pg_created(void *arg, int rc)
{
	struct pg *pg = arg;

	pg->creating = false;
	if (rc) {
		CM_ERR("%s: cannot create: %s", pg->cid, cm_strerror(rc));
		return;
	}
	pg->in_store = true;
	if (pg->primary == pg->osd->id && pg->state == PG_CREATING)
		pg_start_peering(pg);
	else if (pg->state == PG_CREATING)
		pg->state = PG_REPLICA;
}

static void
pg_create_in_store(struct pg *pg)
{
	Cairn__Osd__PgInfo pi = CAIRN__OSD__PG_INFO__INIT;
	struct os_txn *t;
	uint8_t buf[128];
	size_t n;
	int rc;

	pi.pool = pg->pool;
	pi.seed = pg->seed;
	pi.epoch_created = pg->osd->epoch;
	pi.shard = pg->info_shard = pg_shard_label(pg);
	n = cairn__osd__pg_info__pack(&pi, buf);
	rc = os_txn_create(&t);
	if (!rc)
		rc = os_txn_mkcoll(t, pg->cid);
	if (!rc)
		rc = os_txn_touch(t, pg->cid, PGMETA);
	if (!rc)
		rc = os_txn_omap_set(t, pg->cid, PGMETA, "info", 4, buf, n);
	if (!rc)
		rc = prior_txn(pg, t, false);
	if (rc) {
		os_txn_destroy(t);
		CM_ERR("%s: cannot create: %s", pg->cid, cm_strerror(rc));
		return;
	}
	pg->creating = true;
	osd_queue(pg->osd, t, pg_created, pg);
}

/*
 * A new interval: drop every op of the PG (clients resend when they see the
 * acting set change; the log answers those already applied).
 */
static void
pg_reset_interval(struct pg *pg)
{
	struct repop *rp, *rtmp;
	struct op *op;

	rec_reset(pg);
	pg->retry_ms = 0;
	pg->roll_stuck = true; /* until the next activation */
	TAILQ_FOREACH_SAFE(rp, &pg->repops, link, rtmp) {
		rp->op = NULL; /* the op is freed below */
		if (rp->local_pending) {
			rp->waiting = 1; /* keep it for the local commit's callback */
		} else {
			TAILQ_REMOVE(&pg->repops, rp, link);
			free(rp);
		}
	}
	while ((op = TAILQ_FIRST(&pg->running))) {
		TAILQ_REMOVE(&pg->running, op, link);
		op->queued = false;
		if (op->busy)
			op->dropped = true;
		else
			op_free(op);
	}
	while ((op = TAILQ_FIRST(&pg->waiting))) {
		TAILQ_REMOVE(&pg->waiting, op, link);
		op->queued = false;
		op_free(op);
	}
}

/* Peering or recovering (an active PG too, while its recovery runs). */
static bool
pg_settling(const struct pg *pg)
{
	return pg->state == PG_PEERING || pg->state == PG_RECOVERING ||
	       pg->state == PG_BACKFILLING || pg->rec_pending;
}

void
pg_peer_reset(struct osd *o, int32_t peer)
{
	rec_peer_reset(o, peer);
	ec_peer_reset(o, peer);
	for (size_t b = 0; b < o->npg_b; b++)
		for (struct pg *pg = o->pgs[b]; pg; pg = pg->hnext) {
			if (pg->primary != o->id)
				continue;
			if (!pg_settling(pg))
				continue;
			for (int i = 0; i < pg->nslots; i++)
				if (pg->slot_osd[i] == peer) {
					/* Start over on a fresh session, from the tick: a peer
					 * whose sessions keep failing must not make us re-peer
					 * in a loop. */
					uint64_t at = cm_now_ms() + 500;

					if (!pg->retry_ms || pg->retry_ms > at)
						pg->retry_ms = at;
					break;
				}
		}
}

static struct pga *
pga_get(struct osd *o, int64_t pool, uint32_t seed, bool *fresh)
{
	size_t h;
	struct pga *x;

	*fresh = false;
	if (!o->pga) {
		o->npga_b = 1024;
		o->pga = calloc(o->npga_b, sizeof(*o->pga));
		if (!o->pga)
			return NULL;
	}
	h = pg_hash(pool, seed, o->npga_b);
	for (x = o->pga[h]; x; x = x->next)
		if (x->pool == pool && x->seed == seed)
			return x;
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->pool = pool;
	x->seed = seed;
	x->next = o->pga[h];
	o->pga[h] = x;
	*fresh = true;
	return x;
}

static void
pga_free_all(struct osd *o)
{
	for (size_t b = 0; b < o->npga_b; b++)
		while (o->pga[b]) {
			struct pga *x = o->pga[b];

			o->pga[b] = x->next;
			free(x);
		}
	free(o->pga);
	o->pga = NULL;
}

/*
 * A new interval of pg: the OSDs that held it before (the previous acting
 * set, plus the older prior set while the PG never became active since)
 * that are not in the new acting set. Peering asks them too.
 */
static void
set_prior(struct pg *pg, const int32_t *before, int nbefore, const int32_t *acting, int k)
{
	int32_t np[OSD_MAX_ACTING];
	int n = 0;
	bool keep = pg->state == PG_PEERING || pg->state == PG_RECOVERING ||
		    pg->state == PG_BACKFILLING || pg->state == PG_DOWN ||
		    pg->state == PG_INCOMPLETE || pg->state == PG_CREATING || pg->prior_loaded;
	bool overlap = false;

	for (int i = 0; keep && i < pg->nprior; i++) {
		if (has_osd(acting, k, pg->prior[i]))
			overlap = true;
		else if (n < OSD_MAX_ACTING)
			np[n++] = pg->prior[i];
	}
	for (int i = 0; i < nbefore; i++) {
		if (has_osd(acting, k, before[i]))
			overlap = true;
		else if (n < OSD_MAX_ACTING && !has_osd(np, n, before[i]))
			np[n++] = before[i];
	}
	memcpy(pg->prior, np, sizeof(*np) * (size_t)n);
	pg->nprior = n;
	pg->prior_overlap = overlap || nbefore == 0;
	pg->prior_loaded = false;
}

/*
 * While peering or recovering (active ones too): did a slot OSD restart (or get a new
 * address) since we asked it? Its answers may never come: ask again.
 */
static bool
peers_restarted(struct pg *pg)
{
	if (!pg_settling(pg))
		return false;
	for (int i = 0; i < pg->nslots; i++) {
		const Cairn__Map__Osd *mo = mon_osd_find(pg->osd->map, pg->slot_osd[i]);

		if (pg->slot_osd[i] != pg->osd->id && (!mo || mo->up_since != pg->peer_up_since[i]))
			return true;
	}
	return false;
}

/*
 * An active primary: did an acting OSD restart (a new incarnation, same
 * set) since peering talked to it? Changes in flight to the old one are
 * lost with its session, and a write waiting for its commit would wait
 * forever (holding every later op on that object): that is a new interval,
 * as a change of the set is.
 */
static bool
acting_restarted(const struct pg *pg)
{
	if (pg->primary != pg->osd->id || pg->state != PG_ACTIVE || pg_settling(pg))
		return false;
	for (int i = 0; i < pg->nacting && i < pg->nslots; i++) {
		const Cairn__Map__Osd *mo = mon_osd_find(pg->osd->map, pg->acting[i]);

		if (pg->acting[i] == pg->osd->id || pg->slot_osd[i] != pg->acting[i] ||
		    !pg->peer_up_since[i])
			continue;
		if (mo && mo->up_since != pg->peer_up_since[i])
			return true;
	}
	return false;
}

void
pg_on_map(struct osd *o)
{
	const Cairn__Map__OsdMap *m = o->map;
	struct os_txn *mt = NULL;

	for (size_t p = 0; p < m->n_pools; p++) {
		const Cairn__Map__Pool *pool = m->pools[p];

		for (uint32_t seed = 0; seed < pool->pg_num; seed++) {
			int32_t up[64];
			int primary = -1, n, k = 0;
			int32_t acting[OSD_MAX_ACTING], before[OSD_MAX_ACTING];
			uint8_t shard[OSD_MAX_ACTING];
			int nbefore;
			struct pg *pg;
			bool mine = false, changed;

			if (!osd_pg_mine(o, seed))
				continue; /* another shard's */
			n = mon_placement_pg_up(&o->pl, pool, seed, up, &primary);
			for (int i = 0; i < n && k < OSD_MAX_ACTING; i++) {
				if (up[i] == CRUSH_ITEM_NONE)
					continue;
				shard[k] = (uint8_t)(pool->erasure ? i : k);
				acting[k++] = up[i];
				mine |= up[i] == o->id;
			}
			pg = pg_find(o, pool->id, seed);
			{
				bool fresh;
				struct pga *x = pga_get(o, pool->id, seed, &fresh);

				if (x && fresh)
					x->known = o->pg_maps > 0; /* made since we run */
				nbefore = 0;
				if (x && !fresh && x->epoch == m->epoch) {
					nbefore = x->nb;
					memcpy(before, x->b, sizeof(*before) * (size_t)x->nb);
				} else if (x && !fresh) {
					nbefore = x->n;
					memcpy(before, x->a, sizeof(*before) * (size_t)x->n);
				}
				if (x && x->epoch != m->epoch) {
					x->epoch = m->epoch;
					x->nb = nbefore;
					memcpy(x->b, before, sizeof(*before) * (size_t)nbefore);
				}
				/*
				 * An empty acting set (every holder down) is not
				 * "before": the next interval must still hear
				 * from the last OSDs that held the PG, else a
				 * PG whose holders all died and went out would
				 * start empty on its new OSDs.
				 */
				if (x && k > 0) {
					x->n = k;
					memcpy(x->a, acting, sizeof(*acting) * (size_t)k);
				}
				if (x &&
				    pga_note(x, m->epoch, acting, k,
					     (unsigned)k >= (pool->min_size ? pool->min_size : 1)))
					pivs_save(o, &mt, x);
			}
			if (!mine || !o->booted) {
				if (pg && pg->state != PG_NONE) {
					pg_reset_interval(pg);
					pg->state = PG_NONE;
					pg->primary = primary;
					pg->nacting = 0;
				}
				continue;
			}
			if (!pg) {
				pg = pg_new(o, pool->id, seed);
				if (!pg)
					continue;
			}
			changed = pg->state == PG_NONE || pg->primary != primary ||
				  pg->nacting != k ||
				  memcmp(pg->acting, acting, sizeof(*acting) * (size_t)k) != 0 ||
				  memcmp(pg->shard, shard, (size_t)k) != 0 ||
				  (pg->primary == primary && acting_restarted(pg));
			pg->size = pool->size;
			pg->ec = pool->erasure ? ec_pool_profile(o, pool) : NULL;
			pg->min_size = pool->min_size ? pool->min_size : 1;
			if (!changed) {
				if (pg->primary == o->id &&
				    (pg->state == PG_DOWN || pg->state == PG_INCOMPLETE ||
				     pg->retry_ms || peers_restarted(pg)))
					pg_start_peering(pg);
				continue;
			}
			set_prior(pg, before, nbefore, acting, k);
			pg_reset_interval(pg);
			memcpy(pg->acting, acting, sizeof(*acting) * (size_t)k);
			memcpy(pg->shard, shard, (size_t)k);
			pg->nacting = k;
			pg->my_shard = -1;
			for (int i = 0; i < k; i++)
				if (acting[i] == o->id)
					pg->my_shard = shard[i];
			pg->primary = primary;
			pg->interval_epoch = m->epoch;
			prior_save(pg, false);
			if (!pg->in_store) {
				pg->state = PG_CREATING;
				if (!pg->creating)
					pg_create_in_store(pg);
				continue;
			}
			if (primary == o->id)
				pg_start_peering(pg);
			else
				pg->state = PG_REPLICA;
		}
	}
	if (mt)
		osd_queue(o, mt, NULL, NULL);
	o->pg_maps++;
}

/*
 * Peering heard from every past interval that may have taken writes since
 * the PG last started (the newest last_epoch_started among the answers):
 * from each, one OSD with a usable copy answered, or all of its OSDs were
 * removed from the map (their data given up). Otherwise the acting set may
 * lack acknowledged writes: false, and the PG waits. Ceph's prior set rule;
 * without up_thru every interval with min_size OSDs counts as one that may
 * have taken writes.
 */
int
pg_past_heard(struct pg *pg)
{
	struct osd *o = pg->osd;
	struct pga *x = pg_pga(pg);
	uint64_t les = pg->last_epoch_started;

	if (!x)
		return 1;
	for (int i = 0; i < pg->nslots; i++)
		if (pg->peer[i].have && pg->peer[i].exists && pg->peer[i].les > les)
			les = pg->peer[i].les;
	pga_trim(x, les);
	for (int v = 0; v < x->niv; v++) {
		const struct piv *iv = &x->iv[v];
		bool heard = false, left = false, quiet = true;
		char who[128];
		size_t wl = 0;

		if (!iv->rw || iv->last == PIV_OPEN)
			continue;
		for (int j = 0; j < iv->n && !heard; j++) {
			bool answered = false;

			if (!mon_osd_find(o->map, iv->a[j]))
				continue; /* removed: its data was given up */
			left = true;
			for (int i = 0; i < pg->nslots && !heard; i++) {
				const struct pg_peer *p = &pg->peer[i];

				if (pg->slot_osd[i] != iv->a[j] || !p->have)
					continue;
				answered = true;
				heard = p->exists && (pg->ec || (!p->incomplete && !p->partial));
				if (p->exists && p->les >= iv->first)
					quiet = false;
			}
			if (!answered)
				quiet = false;
		}
		/*
		 * Every OSD of it answered and none started the PG in it (their
		 * last_epoch_started is older; the primary's would not be): it
		 * took no writes, whatever the map suggested.
		 */
		if (heard || !left || quiet)
			continue;
		for (int j = 0; j < iv->n; j++) {
			const Cairn__Map__Osd *mo = mon_osd_find(o->map, iv->a[j]);

			if (mo && mo->up && pg->nslots < PG_MAX_SLOTS &&
			    !has_osd(pg->slot_osd, pg->nslots, iv->a[j])) {
				/* one a peer told us of, not asked yet: ask again, with it */
				CM_INFO("%s: interval %" PRIu64 "-%" PRIu64
					" learnt from a peer: asking its OSDs too",
					pg->cid, iv->first, iv->last);
				return -1;
			}
		}
		who[0] = 0;
		for (int j = 0; j < iv->n && wl < sizeof(who) - 16; j++)
			wl += (size_t)snprintf(who + wl, sizeof(who) - wl, "%sosd.%d", j ? "," : "",
					       iv->a[j]);
		CM_WARN("%s: interval %" PRIu64 "-%" PRIu64 " [%s] may have taken writes and "
			"none of its OSDs with a usable copy answered: waiting",
			pg->cid, iv->first, iv->last, who);
		return 0;
	}
	return 1;
}

void
pg_handle_query(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PgQuery *q =
		(Cairn__Osd__PgQuery *)cm_msg_unpack_front(m, &cairn__osd__pg_query__descriptor);
	Cairn__Osd__PgNotify n = CAIRN__OSD__PG_NOTIFY__INIT;
	Cairn__Osd__PastInterval pv[PGA_MAX_IV], *pvp[PGA_MAX_IV];
	Cairn__Osd__PgInfo pi;
	Cairn__Osd__Version lu, tail;
	Cairn__Osd__LogEntry **les = NULL;
	size_t nles = 0;
	char **missing = NULL;
	struct pg *pg;

	if (!q)
		goto out;
	pg = pg_find(o, q->pool, q->seed);
	n.pool = q->pool;
	n.seed = q->seed;
	n.epoch = q->epoch;
	n.exists = pg && pg->in_store;
	{
		bool fresh;
		struct pga *x = pga_get(o, q->pool, q->seed, &fresh);

		for (int i = 0; x && i < x->niv; i++) {
			const struct piv *iv = &x->iv[i];

			if (!iv->rw || iv->last == PIV_OPEN)
				continue;
			pv[n.n_past] = (Cairn__Osd__PastInterval)CAIRN__OSD__PAST_INTERVAL__INIT;
			pv[n.n_past].first = iv->first;
			pv[n.n_past].last = iv->last;
			pv[n.n_past].rw = true;
			pv[n.n_past].n_osds = iv->n;
			pv[n.n_past].osds = (int32_t *)iv->a;
			pvp[n.n_past] = &pv[n.n_past];
			n.n_past++;
		}
		n.past = pvp;
	}
	if (n.exists) {
		pg_info_fill(pg, &pi, &lu, &tail);
		n.info = &pi;
		if (pg_log_pb(pg, &les, &nles)) {
			CM_WARN("%s: no memory for the log of a notify", pg->cid);
			goto out; /* the primary asks again */
		}
		n.log = les;
		n.n_log = nles;
		if (oset_names(&pg->missing, &missing, &n.n_missing)) {
			pg_log_pb_free(les, nles);
			goto out;
		}
		n.missing = missing;
	}
	osd_send_pb(c, OSD_MSG_PG_NOTIFY, 0, &n.base, NULL);
	pg_log_pb_free(les, nles);
	free(missing);
out:
	if (q)
		cairn__osd__pg_query__free_unpacked(q, NULL);
	cm_msg_destroy(m);
}

void
pg_handle_notify(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PgNotify *n =
		(Cairn__Osd__PgNotify *)cm_msg_unpack_front(m, &cairn__osd__pg_notify__descriptor);
	intptr_t peer = osd_conn_peer(c);
	struct pg *pg;

	cm_msg_destroy(m);
	if (!n)
		return;
	pg = pg_find(o, n->pool, n->seed);
	if (osd_check_notify(n)) {
		CM_LOG_RL(CM_LOG_WARN, "bad PG notify from %s", cm_conn_peer(c));
		goto out;
	}
	if (!pg || pg->state != PG_PEERING || n->epoch != pg->interval_epoch)
		goto out;
	if (n->n_past) {
		bool fresh;
		struct pga *x = pga_get(o, n->pool, n->seed, &fresh);

		int added = 0;

		for (size_t i = 0; x && i < n->n_past; i++)
			added += pga_merge(x, n->past[i]);
		if (added)
			CM_NOTICE("%s: learnt %d past interval(s) from osd.%d", pg->cid, added,
				  (int)peer);
	}
	for (int i = 0; i < pg->nslots; i++) {
		struct pg_peer *p = &pg->peer[i];

		if (pg->slot_osd[i] != peer || p->have)
			continue;
		p->have = true;
		p->exists = n->exists && n->info;
		if (p->exists) {
			ver_from_pb(n->info->last_update, &p->lu);
			ver_from_pb(n->info->log_tail, &p->tail);
			p->incomplete = n->info->incomplete;
			p->partial = n->n_missing > 0;
			p->les = n->info->last_epoch_started;
			p->n = n; /* keeps its log for planning */
			n = NULL;
		}
		if (--pg->notifies_wanted == 0)
			rec_plan(pg);
		break;
	}
out:
	if (n)
		cairn__osd__pg_notify__free_unpacked(n, NULL);
}

/* The state as `clusterctl status` shows it. */
static const char *
pg_state_str(const struct pg *pg)
{
	bool full = (unsigned)pg->nacting >= pg->size;
	bool wait = false;

	for (int i = 0; i < pg->nacting; i++)
		wait |= pg->peer[i].step == REC_WAIT;
	switch (pg->state) {
	case PG_ACTIVE:
		if (pg->ec && (unsigned)pg->nacting < pg->min_size)
			return "active+undersized+degraded+readonly";
		if (!pg->rec_pending)
			return full ? "active+clean" : "active+undersized+degraded";
		if (pg->rec_backfill && wait)
			return full ? "active+backfill_wait+degraded"
				    : "active+backfill_wait+undersized+degraded";
		if (pg->rec_backfill)
			return full ? "active+backfilling+degraded"
				    : "active+backfilling+undersized+degraded";
		if (wait)
			return full ? "active+recovery_wait+degraded"
				    : "active+recovery_wait+undersized+degraded";
		return full ? "active+recovering+degraded"
			    : "active+recovering+undersized+degraded";
	case PG_RECOVERING:
		return (unsigned)pg->nacting >= pg->size ? "recovering" : "recovering+undersized";
	case PG_BACKFILLING:
		return (unsigned)pg->nacting >= pg->size ? "backfilling" : "backfilling+undersized";
	default:
		return pg_state_name(pg->state);
	}
}

int
pg_stats(struct osd *o, Cairn__Mon__PgStat **out, size_t *n)
{
	Cairn__Mon__PgStat *a;
	size_t k = 0;

	*out = NULL;
	*n = 0;
	a = calloc(o->npgs + 1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	for (size_t b = 0; b < o->npg_b; b++)
		for (struct pg *pg = o->pgs[b]; pg; pg = pg->hnext) {
			if (pg->primary != o->id || pg->state == PG_NONE || pg->state == PG_REPLICA)
				continue;
			cairn__mon__pg_stat__init(&a[k]);
			a[k].pool = pg->pool;
			a[k].seed = pg->seed;
			a[k].state = (char *)pg_state_str(pg);
			a[k].epoch = o->epoch;
			if (pg->in_store &&
			    os_coll_stat(o->store, pg->cid, &a[k].objects, &a[k].bytes) == 0 &&
			    a[k].objects) {
				a[k].objects--; /* PGMETA */
				/* EC rollback stashes are not objects (their bytes
				 * count: they take space until dropped) */
				a[k].objects -= CM_MIN(a[k].objects, (uint64_t)pg->nstash);
				if (pg->ec) /* our shard holds 1/k of the data (plus padding) */
					a[k].bytes *= pg->ec->k;
			}
			a[k].degraded = pg->rmiss.n;
			k++;
		}
	*out = a;
	*n = k;
	return 0;
}

static void
on_roll_commit(void *arg, int rc)
{
	struct osd *o = arg;

	(void)o;
	if (rc)
		CM_WARN("dropping rollback stashes failed: %s", cm_strerror(rc));
}

/* Drop our stashes of entries up to v (a transaction of its own). */
static void
roll_local(struct pg *pg, const struct osd_ver *v)
{
	struct os_txn *t = NULL;

	if (!pg->nstash || osd_ver_cmp(&pg->stashes[0], v) > 0)
		return;
	if (os_txn_create(&t) || pg_stash_drop(pg, t, v)) {
		os_txn_destroy(t);
		return; /* the next change tries again */
	}
	osd_queue(pg->osd, t, on_roll_commit, pg->osd);
}

/*
 * EC primary, no change in flight: entries up to roll_ok are on every shard
 * but the shards were not told (no change came since). Tell them with a
 * RepOp without an entry, so the stash of a PG's last change (a removed
 * object's whole data) does not stay until the next one.
 */
static void
pg_roll_forward(struct pg *pg)
{
	Cairn__Osd__RepOp ro = CAIRN__OSD__REP_OP__INIT;
	Cairn__Osd__Version rv;
	struct osd *o = pg->osd;

	if (!pg->ec || pg->primary != o->id || pg->state != PG_ACTIVE || pg->roll_stuck ||
	    !TAILQ_EMPTY(&pg->repops) || osd_ver_cmp(&pg->roll_ok, &pg->roll_sent) <= 0 ||
	    !pg->roll_ok.seq)
		return;
	pg->roll_sent = pg->roll_ok;
	roll_local(pg, &pg->roll_ok);
	ro.pool = pg->pool;
	ro.seed = pg->seed;
	ro.epoch = o->epoch;
	ver_to_pb(&pg->roll_ok, &rv);
	ro.roll_to = &rv;
	for (int i = 0; i < pg->nacting; i++)
		if (pg->acting[i] != o->id && pg->acting[i] >= 0)
			osd_send_pb(osd_peer_conn(o, pg->acting[i], pg->seed), OSD_MSG_REP_OP, 0,
				    &ro.base, NULL);
}

void
pg_tick(struct osd *o)
{
	uint64_t now = cm_now_ms();

	for (size_t b = 0; b < o->npg_b; b++)
		for (struct pg *pg = o->pgs[b]; pg; pg = pg->hnext) {
			if (pg->retry_ms && now >= pg->retry_ms && pg->primary == o->id &&
			    pg->state != PG_NONE && pg->state != PG_REPLICA)
				pg_start_peering(pg);
			pg_roll_forward(pg);
		}
	rec_tick(o, now);
}
