/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Past intervals of every PG (ours or not) and each PG's prior record:
 * what peering must hear from. docs/design/osd.md, "Peering".
 */
#include "osd_int.h"
#include "load_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

bool
osd__has_osd(const int32_t *a, int n, int32_t id)
{
	for (int i = 0; i < n; i++)
		if (a[i] == id)
			return true;
	return false;
}

/* Map `epoch` shows acting set a[k]: open a new interval if it changed (true). */
bool
osd__pga_note(struct osd_pga *x, uint64_t epoch, const int32_t *a, int k, bool rw)
{
	struct osd_piv *cur =
		x->niv && x->iv[x->niv - 1].last == OSD_PIV_OPEN ? &x->iv[x->niv - 1] : NULL;

	if (cur && cur->n == k && !memcmp(cur->a, a, sizeof(*a) * (size_t)k))
		return false;
	if (cur && cur->first >= epoch) {
		x->niv--; /* the same map again, or an older one: replace */
	} else if (cur) {
		cur->last = epoch - 1;
		osd__lease_closed(x, cur);
	}
	if (x->niv == OSD_PGA_MAX_IV) {
		/* Oldest first out: from here on only the union of the prior
		 * sets (osd__set_prior) speaks for it. */
		memmove(x->iv, x->iv + 1, sizeof(x->iv[0]) * (OSD_PGA_MAX_IV - 1));
		x->niv--;
	}
	cur = &x->iv[x->niv++];
	cur->first = epoch;
	cur->last = OSD_PIV_OPEN;
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
bool
osd__pga_merge(struct osd_pga *x, const Cairn__Osd__PastInterval *p)
{
	int at;
	struct osd_piv iv = { .first = p->first, .last = p->last, .rw = p->rw };

	if (!p->rw || p->n_osds == 0 || p->n_osds > OSD_MAX_ACTING || p->last == OSD_PIV_OPEN)
		return false; /* only intervals that may have taken writes matter */
	iv.n = (uint8_t)p->n_osds;
	memcpy(iv.a, p->osds, sizeof(*iv.a) * p->n_osds);
	for (int i = 0; i < x->niv; i++)
		if (x->iv[i].first == iv.first && x->iv[i].last == iv.last && x->iv[i].n == iv.n &&
		    !memcmp(x->iv[i].a, iv.a, sizeof(*iv.a) * iv.n))
			return false; /* known */
	for (at = x->niv;
	     at > 0 && (x->iv[at - 1].last == OSD_PIV_OPEN || x->iv[at - 1].last > iv.last); at--)
		;
	if (x->niv == OSD_PGA_MAX_IV) {
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
void
osd__pga_trim(struct osd_pga *x, uint64_t les)
{
	int j = 0;

	for (int i = 0; i < x->niv; i++)
		if (x->iv[i].last == OSD_PIV_OPEN || x->iv[i].last >= les)
			x->iv[j++] = x->iv[i];
	x->niv = j;
}

/* pg's entry (NULL only without memory). */
struct osd_pga *
osd__pg_pga(struct osd_pg *pg)
{
	bool fresh;

	return osd__pga_get(pg->osd, pg->pool, pg->seed, &fresh);
}

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
#define PIVS_MAX    (1 + OSD_PGA_MAX_IV * (PIV_REC_LEN + 4 * OSD_MAX_ACTING))

/* A past interval list: count, then each first, last, rw, n, the ids. */
static uint8_t *
pivs_put(uint8_t *q, const struct osd_pga *x)
{
	*q++ = (uint8_t)(x ? x->niv : 0);
	for (int i = 0; x && i < x->niv; i++) {
		const struct osd_piv *iv = &x->iv[i];

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
pivs_get(const uint8_t *v, size_t n, size_t *at, struct osd_piv *iv, int *niv)
{
	size_t a = *at;

	if (a >= n || (*niv = v[a++]) > OSD_PGA_MAX_IV)
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

void
osd__pivs_save(struct osd *o, struct os_txn **t, const struct osd_pga *x)
{
	uint8_t v[PIVS_MAX];
	char key[48];
	int kl;

	if (!osd__meta_ok(o) || (!*t && os_txn_create(t)))
		return;
	kl = snprintf(key, sizeof(key), IV_PREFIX "%" PRId64 ".%x", x->pool, x->seed);
	if (os_txn_omap_set(*t, OSD_META_CID, OSD_META_OID, key, (size_t)kl, v,
			    (size_t)(pivs_put(v, x) - v))) {
		os_txn_destroy(*t);
		*t = NULL;
	}
}

void
osd__pivs_load_record(struct osd *o, const struct os_kv *kv)
{
	char key[64];
	int64_t pool;
	unsigned seed;
	int end = 0;
	struct osd_piv iv[OSD_PGA_MAX_IV];
	int niv;
	size_t at = 0;
	bool fresh;
	struct osd_pga *x;

	if (kv->klen >= sizeof(key))
		return;
	memcpy(key, kv->key, kv->klen);
	key[kv->klen] = 0;
	if (sscanf(key, IV_PREFIX "%" SCNd64 ".%x%n", &pool, &seed, &end) != 2 || key[end] ||
	    !osd_pg_mine(o, seed))
		return;
	if (pivs_get(kv->val, kv->vlen, &at, iv, &niv) || at != kv->vlen) {
		CM_WARN("unreadable past intervals of pg.%" PRId64 ".%x: ignored", pool, seed);
		return;
	}
	x = osd__pga_get(o, pool, seed, &fresh);
	if (!x || !fresh)
		return; /* ours: its prior record has them */
	x->niv = niv;
	memcpy(x->iv, iv, sizeof(iv[0]) * (size_t)niv);
	x->known = true;
	for (int k = niv - 1; k >= 0 && !x->n; k--)
		if (iv[k].n) { /* the last set that held it: "before" */
			x->n = iv[k].n;
			memcpy(x->a, iv[k].a, sizeof(*x->a) * iv[k].n);
		}
}

/* At start, after the PGs we hold: the kept lists of the others. */
void
osd__pivs_load_all(struct osd *o)
{
	uint8_t *after = NULL; /* the page's last key, whatever its length */
	size_t salen = 0;
	bool more = true;

	while (more) {
		struct os_kv *kvs = NULL;
		size_t n = 0;
		if (os_omap_iterate(o->store, OSD_META_CID, OSD_META_OID, after, salen, IV_PREFIX,
				    sizeof(IV_PREFIX) - 1, 512, &kvs, &n, &more))
			break; /* none kept (a new OSD) */
		for (size_t i = 0; i < n; i++)
			osd__pivs_load_record(o, &kvs[i]);
		if (n) { /* the next page starts after this one's last key (taken over) */
			free(after);
			after = kvs[n - 1].key;
			salen = kvs[n - 1].klen;
			kvs[n - 1].key = NULL;
		}
		os_kvs_free(kvs, n);
		if (!n)
			break;
	}
	free(after);
}

int
osd__prior_txn(struct osd_pg *pg, struct os_txn *t, bool active)
{
	uint8_t v[4 + 4 * 2 * OSD_MAX_ACTING + 8 + PIVS_MAX], *q = v + 4;
	struct osd_pga *x = osd__pg_pga(pg);

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
	return os_txn_omap_set(t, pg->cid, OSD_PGMETA, OSD_PRIOR_KEY, sizeof(OSD_PRIOR_KEY) - 1, v,
			       (size_t)(q - v));
}

/* Write the record now (own transaction, ordered after the PG's others). */
void
osd__prior_save(struct osd_pg *pg, bool active)
{
	struct os_txn *t;

	if (!pg->in_store || os_txn_create(&t))
		return;
	if (osd__prior_txn(pg, t, active)) {
		os_txn_destroy(t);
		return;
	}
	osd__queue(pg->osd, t, NULL, NULL);
}

void
osd__prior_load(struct osd_pg *pg, const uint8_t *v, size_t n)
{
	int na, np;
	int32_t ids[2 * OSD_MAX_ACTING];
	struct osd_pga *x;

	struct osd_piv iv[OSD_PGA_MAX_IV];
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
		/* version 2: then last_epoch_started and the past intervals (osd__pga_note) */
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
	x = osd__pg_pga(pg);
	if (x) {
		x->n = na;
		memcpy(x->a, ids, sizeof(*ids) * (size_t)na);
		x->niv = niv;
		memcpy(x->iv, iv, sizeof(iv[0]) * (size_t)niv);
		x->known = v[0] == 2;
		osd__pga_trim(x, pg->last_epoch_started);
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

struct osd_pga *
osd__pga_get(struct osd *o, int64_t pool, uint32_t seed, bool *fresh)
{
	size_t h;
	struct osd_pga *x;

	*fresh = false;
	if (!o->pga) {
		o->npga_b = 1024;
		o->pga = calloc(o->npga_b, sizeof(*o->pga));
		if (!o->pga)
			return NULL;
	}
	h = osd__pg_hash(pool, seed, o->npga_b);
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

void
osd__pga_free_all(struct osd *o)
{
	for (size_t b = 0; b < o->npga_b; b++)
		while (o->pga[b]) {
			struct osd_pga *x = o->pga[b];

			o->pga[b] = x->next;
			free(x);
		}
	free(o->pga);
	o->pga = NULL;
}
