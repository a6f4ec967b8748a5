/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The collector (docs/design/rgw.md §5): an overwritten or deleted
 * instance's data goes rgw gc_delay seconds after its index entry changed
 * (a GET that read the old entry just before still finds its data), then
 * its dead marker in the shard. The queue is in memory; the markers are in
 * the cluster, so a gateway that dies with a queue leaves markers that the
 * sweep finds: every few minutes one gateway (the holder of lock rgw.gc on
 * object "gc") reads every bucket's shard system region, queues the dead
 * markers, and removes what pending markers older than the pending grace
 * name (PUTs whose gateway died before their commit: never acknowledged).
 * Runs on its own thread with synchronous calls: it is never on a
 * request's path.
 */
#include "rgw_int.h"
#include "rgw/lc.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/random.h"

CM_LOG_SUBSYS(rgw);

#define GC_RETRY_S     10
#define GC_TRIES       10
#define SWEEP_LOCK_S   60           /* a dead sweeper holds the others off this long at most */
#define SWEEP_BUSY_S   10           /* another gateway sweeps: look again after this */
#define SPLIT_EVERY_NS 1000000000ll /* noted shards are looked at at most this often */

struct rgw_gc_item {
	char bucket_id[33];
	char shard[128];
	char marker[64];
	size_t mlen;
	uint8_t inst[16];
	uint64_t size;
	bool manifest;
	int64_t due_ns;
	int tries;
	struct rgw_gc_item *next;
};

static void
push(struct rgw *g, struct rgw_gc_item *it)
{
	pthread_mutex_lock(&g->gc_mu);
	/* (items come in due order, but for retries: keep the list sorted) */
	if (!g->gc_head || g->gc_tail->due_ns <= it->due_ns) {
		it->next = NULL;
		if (g->gc_tail)
			g->gc_tail->next = it;
		else
			g->gc_head = it;
		g->gc_tail = it;
	} else {
		struct rgw_gc_item **pp = &g->gc_head;

		while (*pp && (*pp)->due_ns <= it->due_ns)
			pp = &(*pp)->next;
		it->next = *pp;
		*pp = it;
	}
	g->gc_len++;
	pthread_cond_signal(&g->gc_cv);
	pthread_mutex_unlock(&g->gc_mu);
}

void
rgw__gc_add(struct rgw *g, const char *bucket_id, const char *shard, const char *marker,
	    size_t mlen, const uint8_t inst[16], uint64_t size, bool manifest)
{
	struct rgw_gc_item *it = calloc(1, sizeof(*it));

	if (!it || mlen >= sizeof(it->marker)) {
		free(it);
		return; /* (the marker stays: the sweep finds it) */
	}
	snprintf(it->bucket_id, sizeof(it->bucket_id), "%s", bucket_id);
	snprintf(it->shard, sizeof(it->shard), "%s", shard);
	memcpy(it->marker, marker, mlen);
	it->mlen = mlen;
	memcpy(it->inst, inst, 16);
	it->size = size;
	it->manifest = manifest;
	it->due_ns = rgw__now_ns() + (int64_t)g->conf.gc_delay_s * 1000000000;
	push(g, it);
}

/*
 * cairn_operate for the collector's thread, which rgw__gc_stop can end:
 * data ops have no timeout (they wait through failures), so with the
 * cluster gone a sweep's op would hold the gateway's stop forever. The op
 * in flight is cancelled by the stop, and none is sent after it
 * (-ECANCELED). g NULL (an admin's lifecycle run): cairn_operate.
 */
int
rgw__gc_operate(struct rgw *g, cairn_ioctx_t *io, const char *oid, cairn_op_t *op)
{
	cairn_completion_t *c;
	bool stop;
	int rc;

	if (!g)
		return cairn_operate(io, oid, op, NULL);
	if (!(c = cairn_completion_create(NULL, NULL)))
		return -ENOMEM;
	pthread_mutex_lock(&g->gc_mu);
	stop = g->gc_stop;
	pthread_mutex_unlock(&g->gc_mu);
	if (stop || (rc = cairn_aio_operate(io, oid, op, c))) {
		cairn_completion_release(c);
		return stop ? -ECANCELED : rc;
	}
	pthread_mutex_lock(&g->gc_mu);
	g->gc_cur = c;
	stop = g->gc_stop;
	pthread_mutex_unlock(&g->gc_mu);
	if (stop)
		cairn_completion_cancel(c);
	rc = cairn_completion_wait(c);
	pthread_mutex_lock(&g->gc_mu);
	g->gc_cur = NULL;
	pthread_mutex_unlock(&g->gc_mu);
	cairn_completion_release(c);
	return rc;
}

/* rgw__gc_operate, then the op released. */
static int
gc_run(struct rgw *g, cairn_ioctx_t *io, const char *oid, cairn_op_t *op)
{
	int rc = rgw__gc_operate(g, io, oid, op);

	cairn_op_release(op);
	return rc;
}

/* One object removed, by the collector's thread. */
static int
gc_remove(struct rgw *g, cairn_ioctx_t *io, const char *oid)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return -ENOMEM;
	cairn_op_remove(op);
	return gc_run(g, io, oid, op);
}

/* Remove an instance's data objects (object 0, which names the stream, last). */
static int
remove_objs(struct rgw *g, cairn_ioctx_t *io, const uint8_t inst[16], uint64_t size)
{
	uint64_t n = size ? (size + RGW_CHUNK - 1) / RGW_CHUNK : 1;

	for (uint64_t i = n; i-- > 0;) {
		char oid[64];
		int r;

		s3_data_oid(inst, i, oid, sizeof(oid));
		r = gc_remove(g, io, oid);
		if (r && r != -ENOENT)
			return r;
	}
	return 0;
}

/* A manifest's parts, then the manifest (object 0 of its instance). */
static int
remove_manifest(struct rgw *g, cairn_ioctx_t *io, const uint8_t inst[16])
{
	size_t len = RGW_MANIFEST_HDR + (size_t)RGW_PARTS_MAX * 24, got = 0, np = 0;
	uint8_t *buf = malloc(len);
	struct rgw_mpart *parts = NULL;
	char oid[64];
	cairn_op_t *op;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	s3_data_oid(inst, 0, oid, sizeof(oid));
	if ((op = cairn_op_create())) {
		cairn_op_read(op, 0, len, buf, &got, NULL);
		rc = gc_run(g, io, oid, op);
	} else {
		rc = -ENOMEM;
	}
	if (rc == -ENOENT) {
		free(buf);
		return 0; /* (already gone) */
	}
	if (!rc && (rc = rgw_manifest_decode(buf, got, &parts, &np)) == -EBADMSG) {
		CM_ERR("gc: %s: not a manifest: left in place", oid);
		free(buf);
		return 0;
	}
	free(buf);
	for (size_t i = 0; !rc && i < np; i++)
		rc = remove_objs(g, io, parts[i].inst, parts[i].size);
	free(parts);
	if (!rc && (rc = gc_remove(g, io, oid)) == -ENOENT)
		rc = 0;
	return rc;
}

static int
remove_data(struct rgw *g, const char *bucket_id, const uint8_t inst[16], uint64_t size,
	    bool manifest)
{
	cairn_ioctx_t *io;
	int rc;

	if ((rc = cairn_ioctx_create(g->cl, g->data_pool, &io)))
		return rc;
	if ((rc = cairn_ioctx_set_namespace(io, bucket_id))) {
		cairn_ioctx_destroy(io);
		return rc;
	}
	rc = manifest ? remove_manifest(g, io, inst) : remove_objs(g, io, inst, size);
	cairn_ioctx_destroy(io);
	return rc;
}

static void
collect(struct rgw *g, struct rgw_gc_item *it)
{
	cairn_op_t *op;
	int rc = remove_data(g, it->bucket_id, it->inst, it->size, it->manifest);

	if (!rc && (op = cairn_op_create())) {
		/* (a write on a missing object makes it: a shard merged away or a bucket
		 * deleted meanwhile would come back as an empty object, never removed) */
		cairn_op_assert_exists(op);
		cairn_op_omap_rm(op, it->marker, it->mlen);
		rc = gc_run(g, g->meta, it->shard, op);
		if (rc == -ENOENT)
			rc = 0; /* (the bucket and its index are gone) */
	}
	if (rc && ++it->tries < GC_TRIES) {
		CM_INFO("gc: %s: retrying in %d s: %s", it->shard, GC_RETRY_S, cm_strerror(rc));
		it->due_ns = rgw__now_ns() + (int64_t)GC_RETRY_S * 1000000000;
		push(g, it);
		return;
	}
	if (rc)
		CM_WARN_RC(rc, "gc: %s: giving up for now (the sweep retries)", it->shard);
	free(it);
}

/* ---- the sweep ---- */

static uint64_t
le64(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static void sweep_pending(struct rgw *g, cairn_ioctx_t *mio, const char *moid,
			  const char *bucket_id, const char *upid, struct cairn_kv *kvs, size_t n,
			  int64_t now);

/* An open upload's parts whose gateway died before recording them (pending too long). */
static void
sweep_upload(struct rgw *g, cairn_ioctx_t *mio, const char *bucket_id, const char *upid,
	     int64_t now)
{
	char moid[48], after[2 + 32];
	size_t alen = 0;
	bool more = true;

	snprintf(moid, sizeof(moid), "mp.%s", upid);
	for (int round = 0; more && round < 1000; round++) {
		struct cairn_kv *kvs = NULL;
		size_t n = 0;
		int rval = 0;
		cairn_op_t *op = cairn_op_create();

		if (!op)
			return;
		more = false;
		cairn_op_omap_list(op, alen ? after : NULL, alen, RGW_SYS_PENDING, 2, 1000, &kvs,
				   &n, &more, &rval);
		if (rgw__gc_operate(g, mio, moid, op) || rval)
			more = false;
		else
			sweep_pending(g, mio, moid, bucket_id, upid, kvs, n, now);
		if (n && kvs[n - 1].klen == sizeof(after)) {
			memcpy(after, kvs[n - 1].key, sizeof(after));
			alen = sizeof(after);
		} else {
			more = false;
		}
		cairn_op_release(op);
		cairn_kvs_free(kvs, n);
	}
}

/* One page of an upload's pending markers: those older than the grace are removed. */
static void
sweep_pending(struct rgw *g, cairn_ioctx_t *mio, const char *moid, const char *bucket_id,
	      const char *upid, struct cairn_kv *kvs, size_t n, int64_t now)
{
	for (size_t i = 0; i < n; i++) {
		const uint8_t *v = kvs[i].val;
		uint8_t inst[16];

		if (kvs[i].klen != 2 + 32 || kvs[i].vlen < 16 ||
		    now - (int64_t)le64(v) < (int64_t)g->conf.pending_grace_s * 1000000000 ||
		    rgw_unhex((const char *)kvs[i].key + 2, inst, 16))
			continue;
		CM_NOTICE("gc: upload %s: a part left pending (its gateway died before "
			  "recording it): removing its %" PRIu64 " bytes",
			  upid, le64(v + 8));
		if (remove_data(g, bucket_id, inst, le64(v + 8), false) == 0) {
			cairn_op_t *rm = cairn_op_create();

			if (rm) {
				cairn_op_assert_exists(rm);
				cairn_op_omap_rm(rm, kvs[i].key, kvs[i].klen);
				gc_run(g, mio, moid, rm);
			}
		}
	}
}

/*
 * Upload objects no upload marker names (a gateway died between a
 * completion's or an abort's commit and the object's removal: the parts are
 * the object's or dead-marked by then, so only the record goes).
 */
static void
sweep_orphans(struct rgw *g, cairn_ioctx_t *mio, const char *shard, int64_t now)
{
	struct cairn_list_cursor cur;

	memset(&cur, 0, sizeof(cur));
	for (int round = 0; !cur.done && round < 1000; round++) {
		char **names = NULL;
		size_t n = 0;

		if (cairn_list(mio, &cur, 256, &names, &n))
			break;
		for (size_t i = 0; i < n; i++) {
			const char *upid = names[i] + 3;
			char key[RGW_KEY_MAX + 1];
			uint8_t t[8];
			size_t klen = 0;
			int rval = 0;
			cairn_op_t *op;
			struct rgw_str mk;
			struct cairn_kv want, *kvs = NULL;
			size_t nk = 0;

			if (strncmp(names[i], "mp.", 3) || strlen(upid) != RGW_UPLOAD_LEN ||
			    rgw_unhex(upid, t, 8))
				continue;
			{
				uint64_t started = 0;

				for (int b = 0; b < 8; b++)
					started = started << 8 | t[b];
				if (now - (int64_t)started <
				    (int64_t)g->conf.pending_grace_s * 1000000000)
					continue; /* (young: its initiate may still be writing) */
			}
			if (!(op = cairn_op_create()))
				continue;
			cairn_op_getxattr(op, "rgw.key", key, sizeof(key) - 1, &klen, &rval);
			if (rgw__gc_operate(g, mio, names[i], op) || rval) {
				cairn_op_release(op);
				continue;
			}
			cairn_op_release(op);
			rgw_str_init(&mk);
			rgw_str_adds(&mk, RGW_SYS_UPLOAD);
			rgw_str_add(&mk, key, klen);
			rgw_str_addc(&mk, '\0');
			rgw_str_adds(&mk, upid);
			want.key = mk.p;
			want.klen = mk.len;
			rval = 0;
			if (!mk.oom && (op = cairn_op_create())) {
				cairn_op_omap_get(op, &want, 1, &kvs, &nk, &rval);
				if (rgw__gc_operate(g, g->meta, shard, op) == 0 && !rval &&
				    nk == 0) {
					CM_NOTICE("gc: upload %s: its object outlived the upload: "
						  "removing it",
						  upid);
					cairn_remove(mio, names[i]);
				}
				cairn_op_release(op);
				cairn_kvs_free(kvs, nk);
			}
			rgw_str_fini(&mk);
		}
		cairn_names_free(names, n);
	}
	cairn_list_cursor_fini(&cur);
}

static void
sweep_shard(struct rgw *g, const char *bucket_id, const char *shard, int64_t now)
{
	char after[2 + RGW_KEY_MAX + 1 + RGW_UPLOAD_LEN];
	size_t alen = 0;
	bool more = true;
	cairn_ioctx_t *mio = NULL;

	if (cairn_ioctx_create(g->cl, g->meta_pool, &mio) ||
	    cairn_ioctx_set_namespace(mio, bucket_id)) {
		cairn_ioctx_destroy(mio);
		mio = NULL;
	}
	for (int round = 0; more && round < 1000; round++) {
		struct cairn_kv *kvs = NULL;
		size_t n = 0;
		int rval = 0, rc;
		cairn_op_t *op = cairn_op_create();

		if (!op)
			break;
		cairn_op_omap_list(op, alen ? after : NULL, alen, "\xff", 1, 256, &kvs, &n, &more,
				   &rval);
		rc = gc_run(g, g->meta, shard, op);
		if (rc || rval) {
			cairn_kvs_free(kvs, n);
			break;
		}
		for (size_t i = 0; i < n; i++) {
			const char *k = kvs[i].key;
			size_t kl = kvs[i].klen;
			const uint8_t *v = kvs[i].val;

			if (kl >= 2 + 16 + 32 && !memcmp(k, RGW_SYS_DEAD, 2) &&
			    (kvs[i].vlen == 24 || kvs[i].vlen == RGW_DEAD_VLEN)) {
				/* dead: "\xffd" + 16 hex ns + instance hex; value inst + size */
				struct rgw_gc_item *it = calloc(1, sizeof(*it));

				if (!it || kl >= sizeof(it->marker)) {
					free(it);
					continue;
				}
				snprintf(it->bucket_id, sizeof(it->bucket_id), "%s", bucket_id);
				snprintf(it->shard, sizeof(it->shard), "%s", shard);
				memcpy(it->marker, k, kl);
				it->mlen = kl;
				memcpy(it->inst, v, 16);
				it->size = le64(v + 16);
				it->manifest = kvs[i].vlen > 24 && (v[24] & RGW_DEAD_MP);
				it->due_ns = now;
				collect(g, it);
			} else if (!memcmp(k, RGW_SYS_UPLOAD, 2) && kl > 2 + 1 + RGW_UPLOAD_LEN &&
				   k[kl - RGW_UPLOAD_LEN - 1] == '\0' && mio) {
				char upid[RGW_UPLOAD_LEN + 1];

				memcpy(upid, k + kl - RGW_UPLOAD_LEN, RGW_UPLOAD_LEN);
				upid[RGW_UPLOAD_LEN] = '\0';
				sweep_upload(g, mio, bucket_id, upid, now);
			} else if (kl == 2 + 32 && !memcmp(k, RGW_SYS_PENDING, 2) &&
				   kvs[i].vlen >= 16) {
				/* pending: "\xffp" + instance hex; value time, size, key */
				int64_t t = (int64_t)le64(v);
				uint64_t size = le64(v + 8);
				uint8_t inst[16];
				char ih[33];

				if (now - t < (int64_t)g->conf.pending_grace_s * 1000000000)
					continue;
				memcpy(ih, k + 2, 32);
				ih[32] = '\0';
				if (rgw_unhex(ih, inst, 16))
					continue;
				CM_NOTICE("gc: %s: a PUT left pending %" PRId64
					  " s ago (its gateway died "
					  "before the commit): removing its %" PRIu64 " bytes",
					  shard, (now - t) / 1000000000, size);
				if (remove_data(g, bucket_id, inst, size, false) == 0 &&
				    (op = cairn_op_create())) {
					cairn_op_assert_exists(op); /* (see collect) */
					cairn_op_omap_rm(op, k, kl);
					gc_run(g, g->meta, shard, op);
				}
			}
		}
		if (n) {
			alen = CM_MIN(kvs[n - 1].klen, sizeof(after));
			memcpy(after, kvs[n - 1].key, alen);
			/* (null pointers stay, one per key: past them at once, since no key
			 * holds 0xff, so the pending and upload markers after them are seen) */
			if (alen >= 2 && !memcmp(after, RGW_SYS_NULL, 2)) {
				memcpy(after, RGW_SYS_NULL "\xff", 3);
				alen = 3;
			}
		}
		cairn_kvs_free(kvs, n);
	}
	if (mio) {
		sweep_orphans(g, mio, shard, now);
		cairn_ioctx_destroy(mio);
	}
}

/* Take or renew the sweep's lock (one gateway sweeps at a time). */
static int
gc_lock(struct rgw *g, const char *cookie)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return -ENOMEM;
	cairn_op_lock(op, "rgw.gc", CAIRN_LOCK_EXCLUSIVE, cookie, "", g->name,
		      (uint64_t)SWEEP_LOCK_S * 1000, CAIRN_LOCK_MAY_RENEW);
	return gc_run(g, g->meta, "gc", op);
}

static void
gc_unlock(struct rgw *g, const char *cookie)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return;
	cairn_op_unlock(op, "rgw.gc", cookie);
	gc_run(g, g->meta, "gc", op);
}

/* Every bucket of every user. \return the buckets swept. */
static unsigned
sweep(struct rgw *g, const char *cookie)
{
	char **uids = NULL;
	size_t nu = 0;
	unsigned nb = 0;
	int64_t now = rgw__now_ns();

	if (rgw_admin_user_list(g->cl, g->meta_pool, &uids, &nu))
		return 0;
	for (size_t u = 0; u < nu && !g->gc_stop; u++) {
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
		if (rgw__gc_operate(g, g->meta, oid, op) == 0 && !rval) {
			for (size_t i = 0; i < n && !g->gc_stop; i++) {
				char boid[128], buf[4096], shard[128];
				size_t len = 0, llen = 0;
				struct rgw_bucket b;
				cairn_op_t *bop = cairn_op_create();
				char *lcx = malloc(RGW_LC_XML_MAX);
				int lrval = 0;

				if (!bop || !lcx) {
					cairn_op_release(bop);
					free(lcx);
					break;
				}
				snprintf(boid, sizeof(boid), "bucket.%.*s", (int)kvs[i].klen,
					 (char *)kvs[i].key);
				cairn_op_getxattr(bop, "rgw.bucket", buf, sizeof(buf), &len, NULL);
				if (rgw__gc_operate(g, g->meta, boid, bop) == 0 &&
				    rgw_bucket_decode(buf, len, &b) == 0) {
					cairn_op_t *lop = cairn_op_create();
					uint32_t *nums = NULL;
					size_t ns = 0;

					/* (splits first: then every shard of the map as it is) */
					rgw__split_bucket(g, b.name, 0, false);
					if (rgw__bucket_shards(g, b.name, &nums, &ns) == 0) {
						for (size_t s = 0; s < ns && !g->gc_stop; s++) {
							rgw_shard_oid(b.id, nums[s], shard,
								      sizeof(shard));
							sweep_shard(g, b.id, shard, now);
						}
					}
					free(nums);
					/* (its own op: a missing xattr fails the op it is in) */
					if (lop) {
						cairn_op_getxattr(lop, "rgw.lc", lcx,
								  RGW_LC_XML_MAX, &llen, &lrval);
						if (rgw__gc_operate(g, g->meta, boid, lop) == 0 &&
						    !lrval && llen)
							rgw__lc_bucket(g, &b, lcx, llen, now);
						cairn_op_release(lop);
					}
					nb++;
					/* (still ours while we sweep) */
					gc_lock(g, cookie);
				}
				cairn_op_release(bop);
				free(lcx);
			}
		}
		cairn_op_release(op);
		cairn_kvs_free(kvs, n);
	}
	for (size_t u = 0; u < nu; u++)
		free(uids[u]);
	free(uids);
	return nb;
}

static void *
gc_main(void *arg)
{
	struct rgw *g = arg;
	int64_t next_sweep = rgw__now_ns() + (int64_t)g->conf.sweep_first_s * 1000000000;
	int64_t next_split = 0;
	char cookie[40];
	uint8_t rb[8];

	cm_random_bytes(rb, sizeof(rb));
	rgw_hex(rb, 8, cookie);
	pthread_mutex_lock(&g->gc_mu);
	while (!g->gc_stop) {
		int64_t now = rgw__now_ns();
		struct rgw_gc_item *it = g->gc_head;

		if (now >= next_sweep) {
			pthread_mutex_unlock(&g->gc_mu);
			int64_t wait_s = g->conf.sweep_every_s;

			if (gc_lock(g, cookie) == 0) {
				unsigned nb = sweep(g, cookie);

				gc_unlock(g, cookie);
				CM_INFO("gc: swept %u buckets", nb);
			} else {
				wait_s = SWEEP_BUSY_S; /* (another gateway sweeps, or died doing it)
							*/
			}
			next_sweep = rgw__now_ns() + wait_s * 1000000000;
			pthread_mutex_lock(&g->gc_mu);
			continue;
		}
		if (g->split_notes && now >= next_split) {
			pthread_mutex_unlock(&g->gc_mu);
			rgw__split_check(g);
			next_split = rgw__now_ns() + SPLIT_EVERY_NS;
			pthread_mutex_lock(&g->gc_mu);
			continue;
		}
		if (it && it->due_ns <= now) {
			g->gc_head = it->next;
			if (!g->gc_head)
				g->gc_tail = NULL;
			g->gc_len--;
			pthread_mutex_unlock(&g->gc_mu);
			collect(g, it);
			pthread_mutex_lock(&g->gc_mu);
			continue;
		}
		{
			int64_t until = next_sweep;
			struct timespec ts;

			if (it && it->due_ns < until)
				until = it->due_ns;
			if (g->split_notes && next_split < until)
				until = next_split; /* (a first note wakes the thread) */
			ts.tv_sec = (time_t)(until / 1000000000);
			ts.tv_nsec = (long)(until % 1000000000);
			pthread_cond_timedwait(&g->gc_cv, &g->gc_mu, &ts);
		}
	}
	pthread_mutex_unlock(&g->gc_mu);
	return NULL;
}

int
rgw__gc_start(struct rgw *g)
{
	pthread_condattr_t ca;
	uint8_t rb[8];
	int rc;

	cm_random_bytes(rb, sizeof(rb));
	rgw_hex(rb, 8, g->split_cookie);
	pthread_mutex_init(&g->gc_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_REALTIME);
	pthread_cond_init(&g->gc_cv, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = -pthread_create(&g->gc_tid, NULL, gc_main, g)))
		return rc;
	g->gc_started = true;
	return 0;
}

void
rgw__gc_stop(struct rgw *g)
{
	struct rgw_gc_item *it;

	if (!g->gc_started)
		return;
	pthread_mutex_lock(&g->gc_mu);
	g->gc_stop = true;
	if (g->gc_cur)
		cairn_completion_cancel(g->gc_cur); /* (its thread clears gc_cur) */
	pthread_cond_signal(&g->gc_cv);
	pthread_mutex_unlock(&g->gc_mu);
	pthread_join(g->gc_tid, NULL);
	g->gc_started = false;
	/* (what is left has its markers in the cluster: the next sweep collects it) */
	while ((it = g->gc_head)) {
		g->gc_head = it->next;
		free(it);
	}
	g->gc_tail = NULL;
	rgw__split_fini(g);
	pthread_cond_destroy(&g->gc_cv);
	pthread_mutex_destroy(&g->gc_mu);
}
