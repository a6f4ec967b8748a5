/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lifecycle (docs/design/rgw.md §5.1): the collector's sweep applies a
 * bucket's rules to its index, one key at a time, with the same planner
 * (s3_version.c) as client requests: every action reads the key's
 * versions again, checks the judgement still holds (the same latest entry,
 * the version still an older one) and commits with compares, so a client's
 * write in between wins and the action waits for the next sweep.
 * Synchronous calls on the collector's thread: never on a request's path.
 */
#include "rgw_int.h"
#include "rgw/lc.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(rgw);

#define LC_PAGE         1000
#define LC_ROUNDS       100000 /* listing pages per bucket and pass (a bound) */
#define LC_KEY_VERSIONS 10000  /* versions of one key judged per pass */

struct lc_run {
	struct rgw *g; /* the sweeping gateway (freed data to its collector), or NULL (clusterctl:
			* the dead markers wait for a gateway's sweep) */
	cairn_cluster_t *cl;
	cairn_ioctx_t *meta;
	const char *meta_pool;
	const struct rgw_bucket *b;
	const struct rgw_lc *lc;
	const char *shard;         /* sh's object */
	const struct s3_shard *sh; /* the index shard the run walks */
	int64_t now, day_ns;
	cairn_ioctx_t *mio; /* the bucket's uploads */
	int64_t dbytes, dobjs;
	unsigned expired, noncurrent, markers, aborted;
};

/*
 * Whether days (of x->day_ns) since since have passed, S3's way: the deadline is rounded up
 * to the next day boundary (midnight UTC with 24 h days), so an object written late in a
 * day is not expired early.
 */
static bool
lc_due(const struct lc_run *x, int64_t since, int days)
{
	int64_t end;

	if (!days)
		return false;
	end = since + days * x->day_ns;
	if (end % x->day_ns)
		end += x->day_ns - end % x->day_ns;
	return end <= x->now;
}

struct ver {
	struct rgw_entry e;
	void *raw;
	size_t rlen;
};

/* The plan committed on the shard (guarded, counters moved); its freed data queued. */
static int
commit(struct lc_run *x, struct s3_vplan *v)
{
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!op)
		return -ENOMEM;
	s3_shard_guard(x->sh, op);
	s3_vplan_ops(v, op);
	rgw__usage_add(op, v->dbytes, v->dobjs, 0, 0);
	rc = rgw__gc_operate(x->g, x->meta, x->shard, op);
	cairn_op_release(op);
	if (rc)
		return rc;
	for (int i = 0; x->g && i < v->ndead; i++)
		rgw__gc_add(x->g, x->b->id, x->shard, v->dead[i].dkey, strlen(v->dead[i].dkey),
			    v->dead[i].inst, v->dead[i].size, v->dead[i].mp);
	x->dbytes += v->dbytes;
	x->dobjs += v->dobjs;
	return 0;
}

/* Read key's versions as a delete by id needs them. */
static int
read_versions(struct lc_run *x, struct s3_vread *r, const char *key, size_t klen, const char *sk)
{
	cairn_op_t *op;
	int rc;

	if ((rc = s3_vread_init(r, key, klen, true, sk, true)))
		return rc;
	if (!(op = cairn_op_create()))
		return -ENOMEM;
	s3_vread_op(r, op);
	rc = rgw__gc_operate(x->g, x->meta, x->shard, op);
	cairn_op_release(op);
	return rc ? rc : s3_vread_rc(r);
}

/* Remove version vid of key if it is still an older one (latest: its judged bytes, alone). */
static int
remove_version(struct lc_run *x, const char *key, size_t klen, const char *vid,
	       const struct ver *latest_was)
{
	bool null = !strcmp(vid, "null");
	struct s3_vread r;
	struct s3_vplan v;
	const struct cairn_kv *cur;
	int rc;

	s3_vplan_zero(&v);
	if ((rc = read_versions(x, &r, key, klen, null ? NULL : vid)))
		goto out;
	cur = s3_vread_cur(&r);
	if (latest_was) {
		/* (an expired delete marker: still the latest, still alone) */
		if (!cur || cur->vlen != latest_was->rlen ||
		    memcmp(cur->val, latest_was->raw, cur->vlen) || s3_vread_first(&r))
			goto out;
	} else if (cur) {
		struct rgw_entry e;

		if (rgw_entry_decode(cur->val, cur->vlen, &e) == 0) {
			bool is_cur = null ? !e.vid[0] : !strcmp(e.vid, vid);

			rgw_entry_fini(&e);
			if (is_cur)
				goto out; /* (it became the latest meanwhile: not noncurrent) */
		}
	}
	if ((rc = s3_vplan_delete(&v, key, klen, &r, vid)) || !v.found)
		goto out;
	rc = commit(x, &v);
out:
	s3_vplan_fini(&v);
	s3_vread_fini(&r);
	return rc;
}

/* Expire key's latest version (judged from was): removed, or a delete marker in its place. */
static int
expire_latest(struct lc_run *x, const char *key, size_t klen, const struct ver *was)
{
	enum s3_vmode mode = s3_vmode(x->b);
	struct rgw_entry dm;
	struct rgw_str enc;
	struct s3_vread r;
	struct s3_vplan v;
	const struct cairn_kv *cur;
	int rc;

	memset(&dm, 0, sizeof(dm));
	rgw_str_init(&enc);
	s3_vplan_zero(&v);
	if ((rc = s3_vread_init(&r, key, klen, mode == S3_V_SUSPENDED, NULL, false)))
		goto out;
	{
		cairn_op_t *op = cairn_op_create();

		if (!op) {
			rc = -ENOMEM;
			goto out;
		}
		s3_vread_op(&r, op);
		rc = rgw__gc_operate(x->g, x->meta, x->shard, op);
		cairn_op_release(op);
		if (rc || (rc = s3_vread_rc(&r)))
			goto out;
	}
	cur = s3_vread_cur(&r);
	if (!cur || cur->vlen != was->rlen || memcmp(cur->val, was->raw, cur->vlen))
		goto out; /* (written meanwhile: not what was judged) */
	if (mode == S3_V_NEVER) {
		rc = s3_vplan_put(&v, x->b, key, klen, &r, NULL, 0, NULL);
	} else {
		dm.flags = RGW_ENTRY_DELETE_MARKER;
		dm.mtime_ns = rgw__now_ns();
		dm.owner = (char *)x->b->owner;
		if (mode == S3_V_ENABLED)
			rgw_vid_make(dm.mtime_ns, dm.vid);
		rgw_entry_encode(&dm, &enc);
		rc = enc.oom ? -ENOMEM : s3_vplan_put(&v, x->b, key, klen, &r, enc.p, enc.len, &dm);
	}
	if (!rc)
		rc = commit(x, &v);
out:
	s3_vplan_fini(&v);
	s3_vread_fini(&r);
	rgw_str_fini(&enc);
	return rc;
}

static bool
rule_applies(const struct rgw_lc_rule *r, const char *key, size_t klen, const struct rgw_entry *e)
{
	return rgw_lc_prefix_match(r, key, klen) &&
	       (!r->tags || rgw_lc_tags_match(r, e->tags, e->tags_len));
}

/* One key: vs[0] its latest, vs[1..n) its older versions, newest first. */
static void
judge_key(struct lc_run *x, const char *key, size_t klen, struct ver *vs, size_t n)
{
	bool expire = false, dm_gone = false;
	int rc = 0;

	/* Older versions first (their clocks run from the next newer version's time). */
	for (size_t i = 1; i < n; i++) {
		int64_t since = vs[i - 1].e.mtime_ns;
		bool go = false;

		for (size_t j = 0; j < x->lc->n && !go; j++) {
			const struct rgw_lc_rule *r = &x->lc->r[j];

			go = r->nc_days && i - 1 >= (size_t)r->nc_newer &&
			     lc_due(x, since, r->nc_days) && rule_applies(r, key, klen, &vs[i].e);
		}
		if (go) {
			rc = remove_version(x, key, klen, vs[i].e.vid[0] ? vs[i].e.vid : "null",
					    NULL);
			if (!rc)
				x->noncurrent++;
			else if (rc != -ECANCELED)
				break;
		}
	}
	if (rc && rc != -ECANCELED)
		goto fail;
	for (size_t j = 0; j < x->lc->n; j++) {
		const struct rgw_lc_rule *r = &x->lc->r[j];
		const struct rgw_entry *e = &vs[0].e;

		if (!rule_applies(r, key, klen, e))
			continue;
		bool aged = lc_due(x, e->mtime_ns, r->exp_days);
		/* (in seconds: a far date times 1e9 would overflow) */
		bool dated = r->exp_date && r->exp_date <= x->now / 1000000000;

		/* (S3: Days also removes a delete marker left alone once it is as old) */
		if (e->flags & RGW_ENTRY_DELETE_MARKER)
			dm_gone |= n == 1 && (r->exp_dm || aged);
		else
			expire |= aged || dated;
	}
	if (dm_gone) {
		rc = remove_version(x, key, klen, vs[0].e.vid[0] ? vs[0].e.vid : "null", &vs[0]);
		if (!rc)
			x->markers++;
	} else if (expire) {
		rc = expire_latest(x, key, klen, &vs[0]);
		if (!rc)
			x->expired++;
	}
	if (!rc || rc == -ECANCELED)
		return;
fail:
	CM_WARN_RC(rc, "lifecycle: bucket %s key %.*s (the next sweep tries again)", x->b->name,
		   (int)klen, key);
}

/* An incomplete multipart upload aborted: closed, its parts dead-marked with the marker's removal.
 */
static int
abort_upload(struct lc_run *x, const struct cairn_kv *mk, const char *upid)
{
	char moid[48], after[64];
	size_t alen = 0, nd = 0, cap = 0;
	bool more = true;
	struct s3_vdead *dead = NULL;
	cairn_op_t *op;
	int rc = 0;

	snprintf(moid, sizeof(moid), "mp.%s", upid);
	if (!x->mio)
		return -EIO;
	if (!(op = cairn_op_create()))
		return -ENOMEM;
	cairn_op_setxattr(op, "rgw.state", "closed", 6); /* (no part commits from now on) */
	rc = rgw__gc_operate(x->g, x->mio, moid, op);
	cairn_op_release(op);
	if (rc == -ENOENT) {
		rc = 0; /* (its initiate died before the object: only the marker) */
		more = false;
	}
	for (int round = 0; !rc && more && round < 1000; round++) {
		struct cairn_kv *kvs = NULL;
		size_t n = 0;
		int rval = 0;

		if (!(op = cairn_op_create())) {
			rc = -ENOMEM;
			break;
		}
		cairn_op_omap_list(op, alen ? after : NULL, alen, NULL, 0, 1000, &kvs, &n, &more,
				   &rval);
		rc = rgw__gc_operate(x->g, x->mio, moid, op);
		cairn_op_release(op);
		if (!rc)
			rc = rval;
		for (size_t i = 0; !rc && i < n; i++) {
			const struct cairn_kv *kv = &kvs[i];
			struct rgw_part p;
			uint8_t inst[16];
			uint64_t size = 0;
			char ih[33];

			if (kv->klen == 2 + 32 && !memcmp(kv->key, RGW_SYS_PENDING, 2) &&
			    kv->vlen >= 16) {
				memcpy(ih, (const char *)kv->key + 2, 32);
				ih[32] = '\0';
				if (rgw_unhex(ih, inst, 16))
					continue;
				for (int b = 7; b >= 0; b--)
					size = size << 8 | ((const uint8_t *)kv->val)[8 + b];
			} else if (rgw_part_decode(kv->key, kv->klen, kv->val, kv->vlen, &p) == 0) {
				memcpy(inst, p.inst, 16);
				size = p.size;
			} else {
				continue;
			}
			if (nd == cap) {
				size_t nc = cap ? 2 * cap : 64;
				struct s3_vdead *d2 = realloc(dead, nc * sizeof(*d2));

				if (!d2) {
					rc = -ENOMEM;
					break;
				}
				dead = d2;
				cap = nc;
			}
			memcpy(dead[nd].inst, inst, 16);
			dead[nd].size = size;
			dead[nd].mp = false;
			s3_dead_marker(inst, size, false, dead[nd].dkey, dead[nd].dval);
			nd++;
		}
		if (n) {
			alen = CM_MIN(kvs[n - 1].klen, sizeof(after));
			memcpy(after, kvs[n - 1].key, alen);
		}
		cairn_kvs_free(kvs, n);
	}
	if (!rc && more)
		rc = -E2BIG; /* (more records than one pass reads: left for the client's Abort) */
	if (!rc && !(op = cairn_op_create()))
		rc = -ENOMEM;
	if (!rc) {
		s3_shard_guard(x->sh, op);
		cairn_op_omap_cmp(op, mk->key, mk->klen, CAIRN_CMP_EQ, mk->val, mk->vlen);
		cairn_op_omap_rm(op, mk->key, mk->klen);
		for (size_t i = 0; i < nd; i++)
			cairn_op_omap_set(op, dead[i].dkey, strlen(dead[i].dkey), dead[i].dval,
					  sizeof(dead[i].dval));
		rc = rgw__gc_operate(x->g, x->meta, x->shard, op);
		cairn_op_release(op);
	}
	if (!rc) {
		for (size_t i = 0; x->g && i < nd; i++)
			rgw__gc_add(x->g, x->b->id, x->shard, dead[i].dkey, strlen(dead[i].dkey),
				    dead[i].inst, dead[i].size, false);
		cairn_remove(x->mio, moid);
	}
	free(dead);
	return rc;
}

static void
sweep_uploads(struct lc_run *x)
{
	char after[2 + RGW_KEY_MAX + 1 + RGW_UPLOAD_LEN];
	size_t alen = 0;
	bool more = true, any = false;

	for (size_t j = 0; j < x->lc->n; j++)
		any |= x->lc->r[j].abort_days && x->lc->r[j].enabled;
	for (int round = 0; any && more && round < LC_ROUNDS; round++) {
		struct cairn_kv *kvs = NULL;
		size_t n = 0;
		int rval = 0, rc;
		cairn_op_t *op = cairn_op_create();

		if (!op)
			return;
		cairn_op_omap_list(op, alen ? after : NULL, alen, RGW_SYS_UPLOAD, 2, LC_PAGE, &kvs,
				   &n, &more, &rval);
		rc = rgw__gc_operate(x->g, x->meta, x->shard, op);
		cairn_op_release(op);
		if (rc || rval) {
			cairn_kvs_free(kvs, n);
			return;
		}
		for (size_t i = 0; i < n; i++) {
			const char *k = kvs[i].key;
			size_t kl = kvs[i].klen, klen;
			char upid[RGW_UPLOAD_LEN + 1];
			uint8_t t[8];
			int64_t started = 0;
			bool go = false;

			if (kl <= 2 + 1 + RGW_UPLOAD_LEN || k[kl - RGW_UPLOAD_LEN - 1] != '\0')
				continue;
			memcpy(upid, k + kl - RGW_UPLOAD_LEN, RGW_UPLOAD_LEN);
			upid[RGW_UPLOAD_LEN] = '\0';
			if (rgw_unhex(upid, t, 8))
				continue;
			for (int b = 0; b < 8; b++)
				started = (int64_t)((uint64_t)started << 8 | t[b]);
			klen = kl - 2 - 1 - RGW_UPLOAD_LEN;
			for (size_t j = 0; j < x->lc->n && !go; j++) {
				const struct rgw_lc_rule *r = &x->lc->r[j];

				go = r->abort_days && rgw_lc_prefix_match(r, k + 2, klen) &&
				     lc_due(x, started, r->abort_days);
			}
			if (!go)
				continue;
			if ((rc = abort_upload(x, &kvs[i], upid)) == 0)
				x->aborted++;
			else if (rc != -ECANCELED)
				CM_WARN_RC(
					rc,
					"lifecycle: bucket %s upload %s (the next sweep tries again)",
					x->b->name, upid);
		}
		if (n) {
			alen = CM_MIN(kvs[n - 1].klen, sizeof(after));
			memcpy(after, kvs[n - 1].key, alen);
		}
		cairn_kvs_free(kvs, n);
	}
}

static void
vers_free(struct ver *vs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		rgw_entry_fini(&vs[i].e);
		free(vs[i].raw);
	}
}

static void
lc_bucket(struct lc_run *x, const char *shard)
{
	struct rgw_str start, key;
	struct ver *vs = NULL;
	size_t nv = 0, cap = 0;
	bool more = true, skip = false;

	rgw_str_init(&start);
	rgw_str_init(&key);
	for (int round = 0; more && round < LC_ROUNDS && !(x->g && x->g->gc_stop); round++) {
		struct cairn_kv *kvs = NULL;
		size_t n = 0;
		int rval = 0, rc;
		cairn_op_t *op = cairn_op_create();

		if (!op)
			break;
		cairn_op_omap_list(op, start.len ? start.p : NULL, start.len, NULL, 0, LC_PAGE,
				   &kvs, &n, &more, &rval);
		rc = rgw__gc_operate(x->g, x->meta, shard, op);
		cairn_op_release(op);
		if (rc || rval) {
			cairn_kvs_free(kvs, n);
			break;
		}
		for (size_t i = 0; i < n; i++) {
			const uint8_t *k = kvs[i].key, *z;
			size_t kl = kvs[i].klen;
			struct ver *v;

			if (!kl || k[0] == 0xff) {
				more = false;
				break;
			}
			if (!(z = memchr(k, 0, kl)))
				continue;
			if ((size_t)(z - k) + 1 == kl || (size_t)(z - k) != key.len ||
			    memcmp(k, key.p, key.len)) {
				/* a new key: judge the one before */
				if (nv && !skip)
					judge_key(x, key.p, key.len, vs, nv);
				vers_free(vs, nv);
				nv = 0;
				rgw_str_reset(&key);
				rgw_str_add(&key, k, (size_t)(z - k));
				/* (records without a latest are not the index's shape: left alone)
				 */
				skip = (size_t)(z - k) + 1 != kl;
			}
			if (skip || nv >= LC_KEY_VERSIONS)
				continue; /* (the newest LC_KEY_VERSIONS of a key are judged) */
			if (nv == cap) {
				size_t nc = cap ? 2 * cap : 16;
				struct ver *v2 = realloc(vs, nc * sizeof(*v2));

				if (!v2)
					continue;
				vs = v2;
				cap = nc;
			}
			v = &vs[nv];
			if (rgw_entry_decode(kvs[i].val, kvs[i].vlen, &v->e))
				continue;
			if (!(v->raw = malloc(kvs[i].vlen ? kvs[i].vlen : 1))) {
				rgw_entry_fini(&v->e);
				continue;
			}
			memcpy(v->raw, kvs[i].val, kvs[i].vlen);
			v->rlen = kvs[i].vlen;
			nv++;
		}
		if (n) {
			rgw_str_reset(&start);
			rgw_str_add(&start, kvs[n - 1].key, kvs[n - 1].klen);
		}
		cairn_kvs_free(kvs, n);
	}
	if (nv && !skip)
		judge_key(x, key.p, key.len, vs, nv);
	vers_free(vs, nv);
	free(vs);
	rgw_str_fini(&start);
	rgw_str_fini(&key);
	sweep_uploads(x);
}

/* After every shard of the bucket: the owner's usage moved once, and the log line. */
static void
lc_account(struct lc_run *x)
{
	if (x->dbytes || x->dobjs) {
		/* The owner's usage counter, when a quota bounds it (else it is not kept). */
		struct rgw_user_info ui;

		memset(&ui, 0, sizeof(ui));
		if (rgw_admin_user_info(x->cl, x->meta_pool, x->b->owner, &ui) == 0 &&
		    (ui.quota_bytes || ui.quota_objects)) {
			cairn_op_t *op = cairn_op_create();
			char oid[96];

			snprintf(oid, sizeof(oid), "usage.%s", x->b->owner);
			if (op) {
				rgw__usage_add(op, x->dbytes, x->dobjs, 0, 0);
				rgw__gc_operate(x->g, x->meta, oid, op);
				cairn_op_release(op);
			}
		}
		rgw_user_info_fini(&ui);
		if (x->b->quota_bytes || x->b->quota_objects) {
			/* (and the bucket's quota counter, kept while it has a quota) */
			cairn_op_t *op = cairn_op_create();
			char oid[96];

			snprintf(oid, sizeof(oid), "busage.%s", x->b->id);
			if (op) {
				cairn_op_assert_exists(op);
				rgw__usage_add(op, x->dbytes, x->dobjs, 0, 0);
				rgw__gc_operate(x->g, x->meta, oid, op);
				cairn_op_release(op);
			}
		}
	}
	if (x->expired || x->noncurrent || x->markers || x->aborted)
		CM_NOTICE(
			"lifecycle: bucket %s: %u objects expired, %u older versions and %u delete "
			"markers removed, %u incomplete uploads aborted",
			x->b->name, x->expired, x->noncurrent, x->markers, x->aborted);
}

static int load_map(cairn_ioctx_t *meta, const char *name, struct s3_bconf *bc);

/* One bucket's rules from the xml its record holds. */
static int
run_one(cairn_cluster_t *cl, cairn_ioctx_t *meta, const char *meta_pool, struct rgw *g,
	const struct rgw_bucket *b, const char *xml, size_t n, int64_t day_ns, int64_t now,
	struct rgw_lc_counts *c)
{
	struct lc_run x = { .g = g,
			    .cl = cl,
			    .meta = meta,
			    .meta_pool = meta_pool,
			    .b = b,
			    .now = now,
			    .day_ns = day_ns };
	struct rgw_lc lc;
	char err[160];
	struct s3_shard sh;
	struct s3_bconf bc = { 0 };
	int rc;

	if ((rc = rgw_lc_parse(xml, n, &lc, err, sizeof(err)))) {
		CM_WARN("lifecycle: bucket %s: its configuration does not parse (%s): skipped",
			b->name, err);
		return rc;
	}
	x.lc = &lc;
	if (cairn_ioctx_create(cl, meta_pool, &x.mio) || cairn_ioctx_set_namespace(x.mio, b->id)) {
		cairn_ioctx_destroy(x.mio);
		x.mio = NULL;
	}
	/* (every shard of the map, in key order; shard 0 alone while no split wrote one) */
	if ((rc = load_map(meta, b->name, &bc)))
		CM_WARN_RC(rc, "lifecycle: bucket %s: reading its index shard map", b->name);
	for (uint32_t i = 0; !rc && i < (bc.shards.n ? bc.shards.n : 1); i++) {
		const struct rgw_shard_span *v = bc.shards.n ? &bc.shards.v[i] : NULL;

		if (x.g && x.g->gc_stop)
			break;
		s3_shard_pick(b, &bc, v && v->lolen ? (const char *)v->lo : "", v ? v->lolen : 0,
			      &sh);
		x.sh = &sh;
		x.shard = sh.oid;
		lc_bucket(&x, sh.oid);
	}
	lc_account(&x);
	s3_bconf_fini(&bc);
	if (x.mio)
		cairn_ioctx_destroy(x.mio);
	rgw_lc_fini(&lc);
	if (c) {
		c->buckets++;
		c->expired += x.expired;
		c->noncurrent += x.noncurrent;
		c->markers += x.markers;
		c->aborted += x.aborted;
	}
	return 0;
}

/* Bucket name's index shard map, as stored and decoded, into bc (none: shard 0 alone). */
static int
load_map(cairn_ioctx_t *meta, const char *name, struct s3_bconf *bc)
{
	uint8_t *raw = NULL;
	int rc;

	rgw_shardmap_decode(NULL, 0, &bc->shards);
	if ((rc = rgw__map_read(meta, name, &raw, &bc->map_len)) || !raw)
		return rc;
	bc->map = (char *)raw;
	rgw_shardmap_fini(&bc->shards);
	return rgw_shardmap_decode(bc->map, bc->map_len, &bc->shards);
}

void
rgw__lc_bucket(struct rgw *g, const struct rgw_bucket *b, const char *xml, size_t n, int64_t now)
{
	run_one(g->cl, g->meta, g->meta_pool, g, b, xml, n,
		(int64_t)(g->conf.lc_day_s ? g->conf.lc_day_s : 86400) * 1000000000, now, NULL);
}

/* Bucket name's record and lifecycle configuration (*xml malloc'd; -ENODATA: none). */
static int
load_bucket(cairn_ioctx_t *meta, const char *name, struct rgw_bucket *b, char **xml, size_t *n)
{
	char oid[128], buf[4096];
	size_t len = 0;
	cairn_op_t *op;
	int rc, rval = 0;

	*xml = NULL;
	snprintf(oid, sizeof(oid), "bucket.%s", name);
	if (!(op = cairn_op_create()))
		return -ENOMEM;
	cairn_op_getxattr(op, "rgw.bucket", buf, sizeof(buf), &len, NULL);
	rc = cairn_operate(meta, oid, op, NULL);
	cairn_op_release(op);
	if (rc || (rc = rgw_bucket_decode(buf, len, b)))
		return rc;
	if (!(*xml = malloc(RGW_LC_XML_MAX)) || !(op = cairn_op_create())) {
		free(*xml);
		*xml = NULL;
		return -ENOMEM;
	}
	cairn_op_getxattr(op, "rgw.lc", *xml, RGW_LC_XML_MAX, n, &rval);
	rc = cairn_operate(meta, oid, op, NULL);
	cairn_op_release(op);
	if (rc) {
		free(*xml);
		*xml = NULL;
	}
	return rc;
}

int
rgw_admin_lc_run(cairn_cluster_t *cl, const char *meta_pool, const char *name, unsigned day_s,
		 struct rgw_lc_counts *c)
{
	int64_t day_ns = (int64_t)(day_s ? day_s : 86400) * 1000000000, now = rgw__now_ns();
	cairn_ioctx_t *meta;
	char **uids = NULL;
	size_t nu = 0;
	int rc;

	memset(c, 0, sizeof(*c));
	if ((rc = cairn_ioctx_create(cl, meta_pool, &meta)))
		return rc;
	if (name) {
		struct rgw_bucket b;
		char *xml;
		size_t n = 0;

		rc = load_bucket(meta, name, &b, &xml, &n);
		if (!rc)
			rc = run_one(cl, meta, meta_pool, NULL, &b, xml, n, day_ns, now, c);
		free(xml);
		cairn_ioctx_destroy(meta);
		return rc;
	}
	if ((rc = rgw_admin_user_list(cl, meta_pool, &uids, &nu))) {
		cairn_ioctx_destroy(meta);
		return rc;
	}
	for (size_t u = 0; u < nu; u++) {
		struct cairn_kv *kvs = NULL;
		size_t n = 0;
		bool more = false;
		int rval = 0;
		cairn_op_t *op = cairn_op_create();
		char oid[96];

		if (!op)
			break;
		snprintf(oid, sizeof(oid), "buckets.%s", uids[u]);
		cairn_op_omap_list(op, NULL, 0, NULL, 0, 1000, &kvs, &n, &more, &rval);
		if (cairn_operate(meta, oid, op, NULL) == 0 && !rval) {
			for (size_t i = 0; i < n; i++) {
				struct rgw_bucket b;
				char bn[64], *xml;
				size_t xl = 0;

				snprintf(bn, sizeof(bn), "%.*s", (int)kvs[i].klen,
					 (char *)kvs[i].key);
				if (load_bucket(meta, bn, &b, &xml, &xl) == 0)
					run_one(cl, meta, meta_pool, NULL, &b, xml, xl, day_ns, now,
						c);
				free(xml);
			}
		}
		cairn_op_release(op);
		cairn_kvs_free(kvs, n);
	}
	for (size_t u = 0; u < nu; u++)
		free(uids[u]);
	free(uids);
	cairn_ioctx_destroy(meta);
	return 0;
}
