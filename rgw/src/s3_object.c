/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Object operations: PUT, GET, HEAD, DELETE, DeleteObjects
 * (docs/design/rgw.md §3, §4).
 *
 * An object version is an instance (128 random bits): its bytes are a
 * stream in the striper's format in the data pool (objects
 * "<instance hex>.<16 hex>", 4 MiB each; object 0 holds the layout and
 * size xattrs libcairn's streams use, and a copy of the index entry), in
 * the bucket's namespace. The index entry (key "<key>\0" in the shard)
 * names the current instance.
 *
 * PUT: (1) a pending marker in the shard's system region, with the
 * current entry read in the same op; (2) the data, up to 4 objects in
 * flight, MD5 (the ETag) and SHA-256 (a signed payload) computed as it
 * streams; (3) the commit: a compare-and-swap of the entry against what
 * (1) read, the pending marker removed and, for an overwrite, a dead
 * marker for the old instance, in one op. Only then is the PUT
 * acknowledged. A crash before (3) leaves data only a pending marker
 * names (swept later), never an entry without its data.
 */
#include "rgw_int.h"
#include "rgw/chunked.h"
#include "rgw/cond.h"
#include "rgw/xml.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/random.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

CM_LOG_SUBSYS(rgw);

#define XMLNS     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""
#define XMLHD     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define CAS_TRIES 16

static void
ignore_cb(void *arg, int rc)
{
	(void)arg;
	(void)rc;
}

/* Fire-and-forget removal of an instance's first n data objects. */
static void
drop_data(struct s3_req *q, const uint8_t inst[16], uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		cairn_op_t *op = cairn_op_create();
		char oid[64];

		if (!op)
			return;
		s3_data_oid(inst, i, oid, sizeof(oid));
		cairn_op_remove(op);
		rgw__aio(q->t, q->data, oid, op, ignore_cb, NULL);
	}
}

static void
drop_marker(struct s3_req *q, cairn_ioctx_t *io, const char *oid, const void *k, size_t kl)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return;
	cairn_op_assert_exists(op); /* (a shard merged away stays gone) */
	cairn_op_omap_rm(op, k, kl);
	rgw__aio(q->t, io, oid, op, ignore_cb, NULL);
}

/* ---- the shard's current entry of a key, read and swapped ---- */

struct cur {
	struct cairn_kv want;
	struct cairn_kv *kvs;
	size_t n;
	int rval;
	char range[RGW_RANGE_MARK_MAX]; /* the shard's range mark, read back */
	size_t rlen;
	int rrval;
};

static void
cur_reset(struct cur *c)
{
	cairn_kvs_free(c->kvs, c->n);
	c->kvs = NULL;
	c->n = 0;
	c->rval = 0;
}

static bool
cur_found(const struct cur *c)
{
	return !c->rval && c->n == 1;
}

/* Whether the key's latest version, as read, is an object (not a delete marker). */
static bool
latest_object(const struct s3_vread *r)
{
	const struct cairn_kv *c = s3_vread_cur(r);
	int f = c ? rgw_entry_raw_flags(c->val, c->vlen) : -1;

	return c && !(f > 0 && (f & RGW_ENTRY_DELETE_MARKER));
}

/* ---- PUT ---- */

struct chunk {
	uint8_t *buf;
	size_t len;
	uint64_t n;
	struct s3_req *q;
	bool busy;
};

struct put {
	struct cm_timer wait; /* a frozen shard: the commit waits (put_recheck) */
	unsigned wait_ms, waited_ms;
	int moves;          /* the shard maps read again for the commit */
	bool in_prepare;    /* the prepare met a shard split or merged: see put_recheck */
	struct cur c;       /* (the shard's range, read again on a retry) */
	struct s3_vread vr; /* the key's latest entry (and null pointer), as read */
	struct s3_vplan vp; /* the commit's compares and writes */
	struct rgw_entry e;
	struct rgw_str ekey, enc, pval;
	struct s3_shard shard;
	char pkey[40];
	uint64_t expect;
	uint64_t got;
	struct chunk ch[RGW_PUT_INFLIGHT + 1];
	struct chunk *fill;
	/* the ETag's MD5: fill's bytes wait in q->t's batch until a flush (rgw/md5.h) */
	struct rgw_md5 md5;
	unsigned inflight;
	uint64_t nobj;
	int err;
	bool body_done, committing, finished, single, head_written, cleanup, answered;
	bool if_none;
	int tries;
	uint8_t want_md5[16];
	bool have_md5;
	uint8_t want_sha[32];
	bool check_sha;
	char layout[16];
	struct rgw_entry old;
	bool have_old;
	/* UploadPart: the pending marker and the record go to the upload object */
	bool part;
	unsigned partno;
	cairn_ioctx_t *mio; /* the pending marker's object: the shard, or the upload */
	char moid[128];
	char bid[33]; /* the bucket's id when the PUT began (a re-created bucket is another) */
	/* aws-chunked bodies, x-amz-checksum-* */
	bool chunked;
	struct rgw_awschunk ac;
	struct rgw_cksum ck;
	bool ck_trailer;  /* the value comes in the trailer */
	char ck_want[64]; /* (from the header) */
	/* CopyObject, UploadPartCopy: the bytes come from the source, not the body */
	struct s3_copy *cp;
	bool ck_store; /* a checksum computed for the copy, with nothing to compare it to */
	/* the user's quota: expect bytes and an object taken from its usage counter */
	bool reserving, reserved, committed;
	/* the bucket's quota counter: the commit's growth held (given back unless the commit
	 * applied, or may have), and what the plan of the commit at hand wants */
	int64_t bheld_bytes, bheld_objs, bwant_bytes, bwant_objs;
	/* the shard ops (prepare, commit), batched with other requests' (batch.c) */
	struct rgw_batch_item bi;
};

void
s3_meta_free(struct rgw_entry *e)
{
	for (size_t i = 0; i < e->nmeta; i++) {
		free(e->meta[i].k);
		free(e->meta[i].v);
	}
	free(e->ctype);
	free(e->tags);
	free(e->acl);
	e->nmeta = 0;
	e->ctype = NULL;
	e->acl = NULL;
	e->tags = NULL;
	e->tags_len = 0;
}

int
s3_put_acl(struct s3_req *q, struct rgw_entry *e)
{
	const char *a = rgw_http_hdr(q->h, "x-amz-acl");

	if (!a)
		return 0;
	if (!s3_canned_ok(a)) {
		s3_error(q, 400, "InvalidArgument", "unknown canned ACL in x-amz-acl");
		return -EINVAL;
	}
	free(e->acl);
	if (!(e->acl = strdup(a))) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return -EINVAL;
	}
	return 0;
}

int
s3_meta_dup(struct rgw_entry *dst, const struct rgw_entry *src, bool tags, bool acl)
{
	if (acl && src->acl && *src->acl && !(dst->acl = strdup(src->acl)))
		return -ENOMEM;
	if (!(dst->ctype = strdup(src->ctype ? src->ctype : "")))
		return -ENOMEM;
	for (size_t i = 0; i < src->nmeta; i++) {
		if (!(dst->meta[i].k = strdup(src->meta[i].k)) ||
		    !(dst->meta[i].v = strdup(src->meta[i].v))) {
			free(dst->meta[i].k);
			return -ENOMEM;
		}
		dst->nmeta++;
	}
	return tags ? s3_tags_dup(dst, src) : 0;
}

int
s3_tags_dup(struct rgw_entry *dst, const struct rgw_entry *src)
{
	if (!src->tags_len)
		return 0;
	if (!(dst->tags = malloc(src->tags_len)))
		return -ENOMEM;
	memcpy(dst->tags, src->tags, src->tags_len);
	dst->tags_len = src->tags_len;
	return 0;
}

/* x-amz-tagging into e. \return 0, or -EINVAL (answered: InvalidTag). */
int
s3_put_tags(struct s3_req *q, struct rgw_entry *e)
{
	const char *t = rgw_http_hdr(q->h, "x-amz-tagging");
	struct rgw_str pk;
	int rc;

	if (!t)
		return 0;
	rgw_str_init(&pk);
	if ((rc = rgw_tags_from_query(t, &pk))) {
		rgw_str_fini(&pk);
		s3_tags_error(q, rc);
		return -EINVAL;
	}
	free(e->tags);
	e->tags = rgw_str_take(&pk, &e->tags_len);
	return 0;
}

void
s3_tags_error(struct s3_req *q, int rc)
{
	if (rc == -ENOMEM)
		s3_error(q, 503, "SlowDown", "out of memory");
	else
		s3_error(q, 400, rc == -E2BIG ? "BadRequest" : "InvalidTag",
			 rc == -E2BIG ? "object tags cannot be greater than 10"
			 : rc == -EEXIST
				 ? "cannot provide multiple tags with the same key"
				 : "a tag's key (1-128 characters) or value (0-256) is not valid");
}

static void
put_free(struct s3_req *q)
{
	struct put *p = q->op;

	if (!p)
		return;
	if (p->reserved && !p->committed)
		s3_user_usage(q, -(int64_t)p->expect, -1,
			      NULL); /* (the upload failed: give back) */
	if (p->bheld_bytes || p->bheld_objs)
		s3_bucket_usage(q, -p->bheld_bytes, -p->bheld_objs, NULL);
	if (cm_timer_armed(&p->wait))
		cm_timer_cancel(q->t->r, &p->wait);
	cur_reset(&p->c);
	free(p->c.want.key);
	s3_vplan_fini(&p->vp);
	s3_vread_fini(&p->vr);
	rgw_str_fini(&p->ekey);
	rgw_str_fini(&p->enc);
	rgw_str_fini(&p->pval);
	rgw_md5_drop(&p->md5); /* (before its bytes' buffers go back) */
	for (size_t i = 0; i < CM_ARRAY_SIZE(p->ch); i++)
		rgw__buf_put(q->t, p->ch[i].buf);
	s3_meta_free(&p->e);
	rgw_entry_fini(&p->old);
	if (p->chunked)
		rgw_awschunk_fini(&p->ac);
	rgw_cksum_fini(&p->ck);
	s3_copy_free(p->cp);
	free(p);
	q->op = NULL;
}

/*
 * A PUT failed: undo what it wrote (data, pending marker) and keep the
 * answer for put_maybe_finish, which gives it once no data op is in flight
 * (their buffers are ours until then).
 */
static void
put_fail(struct s3_req *q, int status, const char *code, const char *msg)
{
	struct put *p = q->op;

	if (p->finished)
		return;
	p->finished = true;
	if (!rgw_req_body_done(q->r))
		rgw_req_close_after(q->r); /* (the rest of the body is not read) */
	p->cleanup = true;
	q->status = status;
	rgw_str_reset(&q->body);
	rgw_str_adds(&q->body, code);
	rgw_str_addc(&q->body, '\n');
	rgw_str_adds(&q->body, msg);
}

static void put_commit(struct s3_req *q);
static void put_maybe_finish(struct s3_req *q);
static void put_answer_hdrs(const struct s3_req *q, const struct put *p, const char *etag, char *hd,
			    size_t len);
static void copy_answer(struct s3_req *q, const char *el, const char *etag);

static void
put_abort(struct s3_req *q, int status, const char *code, const char *msg)
{
	put_fail(q, status, code, msg);
	put_maybe_finish(q);
}

static void commit_done(void *arg, int rc);
static void btake_done(void *arg, int rc);
static void recheck_done(void *arg, int rc);
static void put_prepare_op(struct s3_req *q);

#define PUT_WAIT_MAX_MS 30000 /* a shard frozen this long (its splitter died): 503 */

/* Before the body is read (the prepare), a failure is answered at once. */
static void
put_stop(struct s3_req *q, int status, const char *code, const char *msg)
{
	struct put *p = q->op;

	if (!p->in_prepare) {
		put_abort(q, status, code, msg);
		return;
	}
	rgw_req_close_after(q->r);
	s3_error(q, status, code, msg);
}

/*
 * The shard's range and the key's entry read again, then the commit (or,
 * in_prepare, the prepare) again.
 */
static void
put_recheck(struct s3_req *q)
{
	struct put *p = q->op;
	cairn_op_t *op;

	cur_reset(&p->c);
	if (!(op = cairn_op_create())) {
		put_stop(q, 503, "SlowDown", "out of memory");
		return;
	}
	cairn_op_getxattr(op, RGW_RANGE_XATTR, p->c.range, sizeof(p->c.range), &p->c.rlen,
			  &p->c.rrval);
	s3_vread_op(&p->vr, op);
	if (rgw__aio(q->t, q->g->meta, p->shard.oid, op, recheck_done, q)) {
		put_stop(q, 503, "SlowDown", "cannot submit");
		return;
	}
	q->pending++;
}

static void
wait_fired(struct cm_timer *t)
{
	struct s3_req *q = t->arg;

	q->pending--;
	put_recheck(q);
}

/* The bucket's record (and map) read anew: the key's shard now, and the commit there. */
static void
put_reloaded(struct s3_req *q, void *arg, int rc)
{
	struct put *p = q->op;

	(void)arg;
	if (!rc && strcmp(q->b.id, p->bid))
		rc = -ENOENT; /* (deleted and made again: not the bucket we wrote into) */
	if (rc == -ENOENT) {
		put_stop(q, 404, "NoSuchBucket", "the bucket was deleted during the upload");
		return;
	}
	if (rc) {
		put_stop(q, 503, "SlowDown", "reading the bucket's index map failed");
		return;
	}
	s3_shard_pick(&q->b, &q->bc, q->key, q->key_len, &p->shard);
	if (!p->part) /* (the split moved the key's pending marker with it) */
		snprintf(p->moid, sizeof(p->moid), "%s", p->shard.oid);
	put_recheck(q);
}

static void
recheck_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct put *p = q->op;
	enum rgw_range_state st;

	q->pending--;
	if (!rc && p->c.rrval)
		rc = p->c.rrval;
	st = rc ? RGW_RANGE_MOVED
		: rgw_range_state(p->shard.range, p->shard.rlen, p->c.range, p->c.rlen);
	if (rc == -ENODATA || (!rc && st == RGW_RANGE_CLOSED_ST)) {
		s3_bucket_forget(q->g, q->bucket);
		put_stop(q, 404, "NoSuchBucket", "the bucket was deleted during the upload");
		return;
	}
	if (!rc && st == RGW_RANGE_FROZEN) {
		/* A split or merge moves the shard's keys: wait (20 ms doubling to 1 s). */
		p->wait_ms = p->wait_ms ? CM_MIN(p->wait_ms * 2, 1000u) : 20;
		if ((p->waited_ms += p->wait_ms) > PUT_WAIT_MAX_MS) {
			put_stop(q, 503, "SlowDown",
				 "the bucket's index is being reorganised: retry");
			return;
		}
		if (p->wait_ms == 20 || p->wait_ms == 1000)
			/* (its splitter may have died: the collector resumes it, lock allowing) */
			rgw__split_note(q->g, q->bucket, p->shard.num);
		cm_timer_init(&p->wait, wait_fired, q);
		cm_timer_arm(q->t->r, &p->wait, p->wait_ms);
		q->pending++;
		return;
	}
	if ((!rc && st != RGW_RANGE_OK) || rc == -ENOENT) {
		/* The shard holds another range now (the map was read before a split or
		 * merge), or is gone (merged away long ago, or the bucket deleted): the
		 * map read anew (put_reloaded: 404 if the bucket is gone), and the commit
		 * on the key's shard now. */
		s3_bucket_forget(q->g, q->bucket);
		if (++p->moves > S3_RESTARTS_MAX) {
			put_stop(q, 503, "SlowDown",
				 "the bucket's index is being reorganised: retry");
			return;
		}
		s3_bucket_get(q, q->bucket, &q->b, &q->bc, put_reloaded, NULL);
		return;
	}
	if (rc || (rc = s3_vread_rc(&p->vr))) {
		put_stop(q, 500, "InternalError", "reading the index entry again failed");
		return;
	}
	if (p->in_prepare) {
		p->in_prepare = false; /* (the shard holds the key: prepare there) */
		put_prepare_op(q);
		return;
	}
	if (p->if_none && latest_object(&p->vr)) {
		put_stop(q, 412, "PreconditionFailed",
			 "an object exists under this key (If-None-Match)");
		return;
	}
	put_commit(q);
}

static void
commit_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct put *p = q->op;
	char etag[64], hd[200];

	q->pending--;
	if ((rc == -ECANCELED || rc == -ENOENT) && ++p->tries < CAS_TRIES) {
		/* Another writer went first, or the shard changed or is gone (merged away
		 * long ago): read again and retry (what the bucket's counter holds too). */
		put_recheck(q);
		return;
	}
	if (rc && rc != -ECANCELED && rc != -ENOENT && rc != -EOVERFLOW && rc != -ENODATA)
		/* (it may have been applied: the counter keeps it, high rather than low) */
		p->bheld_bytes = p->bheld_objs = 0;
	if (rc == -EOVERFLOW) {
		put_abort(q, 403, "QuotaExceeded", S3_QUOTA_MSG);
		return;
	}
	if (rc) {
		put_abort(q, rc == -ECANCELED ? 503 : 500,
			  rc == -ECANCELED ? "SlowDown" : "InternalError",
			  "committing the index entry failed");
		return;
	}
	p->finished = true;
	p->committed = true;
	p->bheld_bytes = p->bheld_objs = 0; /* (the commit's own now) */
	if (s3_bucket_quota_applies(q) && (p->vp.dbytes < 0 || p->vp.dobjs < 0))
		s3_bucket_usage(q, CM_MIN(p->vp.dbytes, 0), CM_MIN(p->vp.dobjs, 0), NULL);
	if (p->vp.dobjs > 0)
		rgw__split_note(q->g, q->bucket, p->shard.num); /* (does it need a split?) */
	if (p->reserved && (p->vp.dbytes != (int64_t)p->expect || p->vp.dobjs != 1))
		/* (the reservation against what the commit moved: an overwrite frees) */
		s3_user_usage(q, p->vp.dbytes - (int64_t)p->expect, p->vp.dobjs - 1, NULL);
	s3_vplan_collect(q, &p->vp, p->shard.oid);
	rgw_entry_etag(&p->e, etag, sizeof(etag));
	if (p->cp) {
		copy_answer(q, "CopyObjectResult", etag);
		return;
	}
	put_answer_hdrs(q, p, etag, hd, sizeof(hd));
	s3_respond_xml(q, 200, hd, NULL);
}

/* A copy's answer: <CopyObjectResult> or <CopyPartResult>, the new ETag, time and checksum. */
static void
copy_answer(struct s3_req *q, const char *el, const char *etag)
{
	struct put *p = q->op;
	struct rgw_str x;
	char when[40], ckel[32], hd[128];
	int hn = 0;

	rgw__iso8601(p->e.mtime_ns, when, sizeof(when));
	rgw_str_init(&x);
	rgw_str_addf(&x, XMLHD "<%s " XMLNS "><LastModified>%s</LastModified><ETag>", el, when);
	rgw_str_xml(&x, etag, strlen(etag));
	rgw_str_adds(&x, "</ETag>");
	if (p->e.ck_alg) {
		const char *n = rgw_cksum_header((enum rgw_cksum_alg)p->e.ck_alg) + 15;
		size_t i;

		for (i = 0; n[i] && i < sizeof(ckel) - 1; i++)
			ckel[i] = (char)toupper((unsigned char)n[i]);
		ckel[i] = '\0';
		rgw_str_addf(&x, "<Checksum%s>%s</Checksum%s>", ckel, p->e.ck, ckel);
	}
	rgw_str_addf(&x, "</%s>", el);
	hd[0] = '\0';
	if (p->cp->cs.version || s3_vmode(&p->cp->sb) != S3_V_NEVER)
		hn = snprintf(hd, sizeof(hd), "x-amz-copy-source-version-id: %s\r\n",
			      p->cp->e.vid[0] ? p->cp->e.vid : "null");
	if (!p->part && s3_vmode(&q->b) != S3_V_NEVER)
		snprintf(hd + hn, sizeof(hd) - (size_t)hn, "x-amz-version-id: %s\r\n",
			 p->e.vid[0] ? p->e.vid : "null");
	s3_respond_xml(q, 200, hd[0] ? hd : NULL, &x);
	rgw_str_fini(&x);
}

/* A PUT's answer: its ETag, its checksum when one was given, its version in a versioned bucket. */
static void
put_answer_hdrs(const struct s3_req *q, const struct put *p, const char *etag, char *hd, size_t len)
{
	int n;

	if (p->e.ck_alg)
		n = snprintf(hd, len, "ETag: %s\r\n%s: %s\r\n", etag,
			     rgw_cksum_header((enum rgw_cksum_alg)p->e.ck_alg), p->e.ck);
	else
		n = snprintf(hd, len, "ETag: %s\r\n", etag);
	if (!p->part && s3_vmode(&q->b) != S3_V_NEVER && n > 0 && (size_t)n < len)
		snprintf(hd + n, len - (size_t)n, "x-amz-version-id: %s\r\n",
			 p->e.vid[0] ? p->e.vid : "null");
}

static void
part_commit_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct put *p = q->op;
	char etag[64], hd[160];

	q->pending--;
	if (rc == -ENOENT || rc == -ECANCELED) {
		put_abort(q, 404, "NoSuchUpload",
			  "the upload was completed or aborted during this part's upload");
		return;
	}
	if (rc) {
		put_abort(q, 500, "InternalError", "recording the part failed");
		return;
	}
	p->finished = true;
	p->e.parts = 0;
	rgw_entry_etag(&p->e, etag, sizeof(etag));
	if (p->cp) {
		copy_answer(q, "CopyPartResult", etag);
		return;
	}
	put_answer_hdrs(q, p, etag, hd, sizeof(hd));
	s3_respond_xml(q, 200, hd, NULL);
}

/* The part's record in the upload object, while the upload is open. */
static void
part_commit(struct s3_req *q)
{
	struct put *p = q->op;
	struct rgw_part pt = { .num = p->partno, .size = p->e.size, .mtime_ns = p->e.mtime_ns };
	char key[RGW_PART_KEY_LEN + 1];
	struct rgw_str v;
	cairn_op_t *op;

	memcpy(pt.inst, p->e.inst, 16);
	memcpy(pt.md5, p->e.md5, 16);
	if (p->e.ck_alg && strlen(p->e.ck) < sizeof(pt.ck)) {
		pt.ck_alg = p->e.ck_alg;
		memcpy(pt.ck, p->e.ck, strlen(p->e.ck) + 1);
	}
	rgw_part_key(p->partno, p->e.inst, key);
	rgw_str_init(&v);
	rgw_part_encode(&pt, &v);
	if (v.oom || !(op = cairn_op_create())) {
		rgw_str_fini(&v);
		put_abort(q, 503, "SlowDown", "out of memory");
		return;
	}
	cairn_op_cmpxattr(op, "rgw.state", CAIRN_CMP_EQ, "open", 4);
	cairn_op_omap_set(op, key, RGW_PART_KEY_LEN, v.p, v.len);
	cairn_op_omap_rm(op, p->pkey, strlen(p->pkey));
	rgw_str_fini(&v);
	if (rgw__aio(q->t, p->mio, p->moid, op, part_commit_done, q)) {
		put_abort(q, 503, "SlowDown", "cannot submit");
		return;
	}
	q->pending++;
}

static void
shard_guard_cb(void *arg, cairn_op_t *op)
{
	struct s3_req *q = arg;
	struct put *p = q->op;

	s3_shard_guard(&p->shard, op);
}

/* The commit's sub-ops: the entry swapped against what was read, the markers. */
static void
commit_build(void *arg, cairn_op_t *op, bool alone)
{
	struct s3_req *q = arg;
	struct put *p = q->op;

	if (alone)
		s3_shard_guard(&p->shard, op);
	s3_vplan_ops(&p->vp, op);
	if (alone)
		s3_usage_op(q, op, p->bi.dbytes, p->bi.dobjs);
	cairn_op_omap_rm(op, p->pkey, strlen(p->pkey));
}

/* A shard item of q's (prepare or commit), batched with other requests'. */
static void
put_item(struct s3_req *q, void (*build)(void *, cairn_op_t *, bool), void (*done)(void *, int))
{
	struct put *p = q->op;

	p->bi.io = q->g->meta;
	p->bi.oid = p->shard.oid;
	p->bi.range = p->shard.range;
	p->bi.rlen = p->shard.rlen;
	p->bi.key = p->ekey.p;
	p->bi.klen = p->ekey.len;
	p->bi.build = build;
	p->bi.guard = shard_guard_cb;
	p->bi.done = done;
	p->bi.arg = q;
	p->bi.quota_bytes = q->b.quota_bytes;
	p->bi.quota_objects = q->b.quota_objects;
	q->pending++;
	rgw__batch(q->t, &p->bi);
}

static void
put_commit(struct s3_req *q)
{
	struct put *p = q->op;
	const struct cairn_kv *cur = s3_vread_cur(&p->vr);
	int rc;

	if (p->part) {
		part_commit(q);
		return;
	}
	rgw_entry_fini(&p->old);
	p->have_old = false;
	if (cur && rgw_entry_decode(cur->val, cur->vlen, &p->old) == 0)
		p->have_old = true;
	if (p->have_old && !memcmp(p->old.inst, p->e.inst, 16)) {
		/* (our own commit, applied though its answer said otherwise: done) */
		p->have_old = false;
		s3_vplan_fini(&p->vp);
		s3_vplan_zero(&p->vp);
		p->vp.dbytes = (int64_t)p->expect;
		p->vp.dobjs = 1; /* (what it moved is not known again: the reservation stays) */
		q->pending++;
		commit_done(q, 0);
		return;
	}
	/* (the version's id and time are the commit's, each attempt: versions sort as they
	 * commit; the data object's rgw.entry copy keeps the upload's, which nothing reads) */
	if (s3_vmode(&q->b) != S3_V_NEVER) {
		p->e.mtime_ns = s3_version_time(&p->vr, rgw__now_ns());
		if (s3_vmode(&q->b) == S3_V_ENABLED)
			rgw_vid_make(p->e.mtime_ns, p->e.vid);
		rgw_str_reset(&p->enc);
		rgw_entry_encode(&p->e, &p->enc);
		if (p->enc.oom) {
			put_abort(q, 503, "SlowDown", "out of memory");
			return;
		}
	}
	if ((rc = s3_vplan_put(&p->vp, &q->b, q->key, q->key_len, &p->vr, p->enc.p, p->enc.len,
			       &p->e))) {
		put_abort(q, rc == -ENOMEM ? 503 : 500,
			  rc == -ENOMEM ? "SlowDown" : "InternalError",
			  rc == -ENOMEM ? "out of memory" : "the index entry is damaged");
		return;
	}
	p->bi.usage = true;
	p->bi.dbytes = p->vp.dbytes;
	p->bi.dobjs = p->vp.dobjs;
	if (s3_bucket_quota_applies(q) || p->bheld_bytes || p->bheld_objs) {
		/* The bucket's quota counter holds the growth first, bounded: exact
		 * whatever the number of index shards (each shard only bounds itself). */
		p->bwant_bytes = s3_bucket_quota_applies(q) ? CM_MAX(p->vp.dbytes, 0) : 0;
		p->bwant_objs = s3_bucket_quota_applies(q) ? CM_MAX(p->vp.dobjs, 0) : 0;
		rc = s3_bucket_hold(q, &p->bheld_bytes, &p->bheld_objs, p->bwant_bytes,
				    p->bwant_objs, btake_done);
		if (rc < 0)
			put_abort(q, 503, "SlowDown", "cannot reserve the bucket's quota");
		if (rc)
			return;
	}
	put_item(q, commit_build, commit_done);
}

static void
btake_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct put *p = q->op;

	q->pending--;
	if (rc == -EOVERFLOW) {
		put_abort(q, 403, "QuotaExceeded", S3_QUOTA_MSG);
		return;
	}
	if (rc) {
		put_abort(q, 503, "SlowDown", "reserving the bucket's quota failed");
		return;
	}
	p->bheld_bytes = p->bwant_bytes;
	p->bheld_objs = p->bwant_objs;
	put_item(q, commit_build, commit_done);
}

static void put_body(struct rgw_req *r, const char *data, ssize_t len, void *arg);
static void put_end(struct s3_req *q);

static void
head_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct put *p = q->op;

	q->pending--;
	p->inflight--;
	if (rc && !p->err)
		p->err = rc;
	put_maybe_finish(q);
}

/* After the last data op: object 0's size and entry copy (several objects), then the commit. */
static void
put_maybe_finish(struct s3_req *q)
{
	struct put *p = q->op;
	cairn_op_t *op;
	char oid[64];

	if (p->inflight)
		return;
	if (p->finished) {
		/* (a failure waited for the data ops in flight: answer it now) */
		const char *nl = q->body.p ? memchr(q->body.p, '\n', q->body.len) : NULL;
		char code[64] = "InternalError", msg[256] = "the upload failed";

		if (p->answered)
			return;
		p->answered = true;
		if (p->nobj)
			drop_data(q, p->e.inst, p->nobj);
		drop_marker(q, p->mio, p->moid, p->pkey, strlen(p->pkey));
		if (nl) {
			snprintf(code, sizeof(code), "%.*s", (int)(nl - q->body.p), q->body.p);
			snprintf(msg, sizeof(msg), "%.*s",
				 (int)(q->body.len - (size_t)(nl + 1 - q->body.p)), nl + 1);
		}
		s3_error(q, q->status ? q->status : 500, code, msg);
		return;
	}
	if (!p->body_done || p->committing)
		return;
	if (p->err) {
		/* (a full cluster is 507 InsufficientStorage, not an internal error) */
		const char *code;
		int status = s3_rc_status(p->err, &code);
		char m[160];

		snprintf(m, sizeof(m), "writing the data failed: %s", cm_strerror(p->err));
		if (status == 500)
			CM_WARN_RC(p->err, "%s: %s", rgw_req_id(q->r), m);
		put_fail(q, status, code, m);
		put_maybe_finish(q);
		return;
	}
	if (!p->single && !p->head_written) {
		p->head_written = true;
		if (!(op = cairn_op_create())) {
			put_fail(q, 503, "SlowDown", "out of memory");
			put_maybe_finish(q);
			return;
		}
		s3_data_oid(p->e.inst, 0, oid, sizeof(oid));
		cairn_op_xattr_num(op, "cairn.size", CAIRN_NUM_MAX, (int64_t)p->e.size, NULL, NULL);
		if (!p->part)
			cairn_op_setxattr(op, "rgw.entry", p->enc.p, p->enc.len);
		if (rgw__aio(q->t, q->data, oid, op, head_done, q)) {
			put_fail(q, 503, "SlowDown", "cannot submit");
			put_maybe_finish(q);
			return;
		}
		q->pending++;
		p->inflight++;
		return;
	}
	p->committing = true;
	put_commit(q);
}

static void copy_pump(struct s3_req *q);

static void
chunk_done(void *arg, int rc)
{
	struct chunk *ch = arg;
	struct s3_req *q = ch->q;
	struct put *p = q->op;

	q->pending--;
	p->inflight--;
	ch->busy = false;
	ch->len = 0;
	if (rc && !p->err)
		p->err = rc;
	if (p->cp) {
		copy_pump(q);
		return;
	}
	if (!p->body_done && !p->finished && p->inflight < RGW_PUT_INFLIGHT)
		rgw_req_body_read(q->r, put_body, q); /* (resume) */
	put_maybe_finish(q);
}

/* Encode the entry, as known at the end of the body. */
static int
put_seal(struct s3_req *q)
{
	struct put *p = q->op;
	unsigned l = 16;
	uint8_t sha[32];

	rgw_md5_final(&p->md5, p->e.md5);
	if (p->have_md5 && memcmp(p->want_md5, p->e.md5, 16)) {
		if (p->cp) {
			CM_ERR("%s: copy source %s/%.*s: its bytes do not match its ETag",
			       rgw_req_id(q->r), p->cp->cs.bucket, (int)p->cp->cs.key_len,
			       p->cp->cs.key);
			put_fail(q, 500, "InternalError",
				 "the copy source's bytes do not match its ETag (damaged)");
		} else {
			put_fail(q, 400, "BadDigest",
				 "the Content-MD5 you specified did not match what we received");
		}
		return -EINVAL;
	}
	if (p->check_sha) {
		l = 32;
		EVP_DigestFinal_ex(q->sha, sha, &l);
		if (memcmp(sha, p->want_sha, 32)) {
			put_fail(
				q, 400, "XAmzContentSHA256Mismatch",
				"the provided x-amz-content-sha256 does not match what was computed");
			return -EINVAL;
		}
	}
	if (p->ck.alg) {
		char got[64];

		if (p->ck_trailer && rgw_awschunk_trailer(&p->ac, rgw_cksum_header(p->ck.alg),
							  p->ck_want, sizeof(p->ck_want))) {
			put_fail(q, 400, "InvalidRequest",
				 "the checksum announced in x-amz-trailer was not in the trailer");
			return -EINVAL;
		}
		rgw_cksum_final(&p->ck, got, sizeof(got));
		if (!p->ck_store && strcmp(got, p->ck_want) && p->cp) {
			CM_ERR("%s: copy source %s/%.*s: its bytes do not match its checksum",
			       rgw_req_id(q->r), p->cp->cs.bucket, (int)p->cp->cs.key_len,
			       p->cp->cs.key);
			put_fail(q, 500, "InternalError",
				 "the copy source's bytes do not match its checksum (damaged)");
			return -EINVAL;
		}
		if (!p->ck_store && strcmp(got, p->ck_want)) {
			put_fail(
				q, 400, "BadDigest",
				"the checksum you specified did not match the calculated checksum");
			return -EINVAL;
		}
		p->e.ck_alg = (uint8_t)p->ck.alg;
		memcpy(p->e.ck, got, CM_MIN(strlen(got) + 1, sizeof(p->e.ck)));
		p->e.ck[sizeof(p->e.ck) - 1] = '\0';
	}
	p->e.size = p->got;
	p->e.mtime_ns = rgw__now_ns();
	rgw_str_reset(&p->enc);
	rgw_entry_encode(&p->e, &p->enc);
	if (p->enc.oom) {
		put_fail(q, 503, "SlowDown", "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Write chunk ch as data object ch->n (object 0 alone: everything in this one op). */
static int
chunk_send(struct s3_req *q, struct chunk *ch, bool last)
{
	struct put *p = q->op;
	cairn_op_t *op = cairn_op_create();
	char oid[64];
	int rc;

	if (!op)
		return -ENOMEM;
	s3_data_oid(p->e.inst, ch->n, oid, sizeof(oid));
	cairn_op_write_full(op, ch->buf, ch->len);
	if (ch->n == 0) {
		cairn_op_setxattr(op, "cairn.layout", p->layout, 16);
		if (last) {
			cairn_op_xattr_num(op, "cairn.size", CAIRN_NUM_MAX, (int64_t)p->got, NULL,
					   NULL);
			if (!p->part)
				cairn_op_setxattr(op, "rgw.entry", p->enc.p, p->enc.len);
		}
	}
	ch->busy = true;
	ch->q = q;
	if ((rc = rgw__aio(q->t, q->data, oid, op, chunk_done, ch))) {
		ch->busy = false;
		return rc;
	}
	q->pending++;
	p->inflight++;
	p->nobj = CM_MAX(p->nobj, ch->n + 1);
	return 0;
}

static struct chunk *
chunk_get(struct s3_req *q)
{
	struct put *p = q->op;

	for (size_t i = 0; i < CM_ARRAY_SIZE(p->ch); i++) {
		struct chunk *ch = &p->ch[i];

		if (ch->busy || ch == p->fill)
			continue;
		if (!ch->buf && !(ch->buf = rgw__buf_get(q->t)))
			return NULL;
		ch->len = 0;
		return ch;
	}
	return NULL;
}

static int put_data(void *arg, const char *data, size_t n);

static void
put_body(struct rgw_req *r, const char *data, ssize_t len, void *arg)
{
	struct s3_req *q = arg;
	struct put *p = q->op;
	int rc;

	(void)r;
	if (p->body_done || p->finished)
		return;
	if (len > 0 && p->chunked) {
		q->bytes_in += (uint64_t)len;
		if ((rc = rgw_awschunk_feed(&p->ac, data, (size_t)len, put_data, q))) {
			if (rc == -ECANCELED) {
				put_maybe_finish(q); /* (put_data failed it) */
				return;
			}
			p->body_done = true;
			if (rc == -EPERM)
				put_fail(q, 403, "SignatureDoesNotMatch", p->ac.err);
			else
				put_fail(q, 400, "IncompleteBody", p->ac.err);
			put_maybe_finish(q);
		}
		return;
	}
	if (len > 0) {
		q->bytes_in += (uint64_t)len;
		if (put_data(q, data, (size_t)len))
			put_maybe_finish(q);
		return;
	}
	if (len == 0 && p->chunked && !rgw_awschunk_done(&p->ac)) {
		p->body_done = true;
		put_fail(q, 400, "IncompleteBody", "the aws-chunked body ended early");
		put_maybe_finish(q);
		return;
	}
	if (len < 0) {
		p->body_done = true;
		put_fail(q, 400, "IncompleteBody", "the body ended early or was malformed");
		put_maybe_finish(q);
		return;
	}
	if (len == 0)
		put_end(q);
}

/* The last byte came: seal the entry, write what is left, then (put_maybe_finish) commit. */
static void
put_end(struct s3_req *q)
{
	struct put *p = q->op;

	p->body_done = true;
	if (p->got != p->expect) {
		put_fail(q, 400, "IncompleteBody",
			 "you did not provide the number of bytes specified by Content-Length");
		put_maybe_finish(q);
		return;
	}
	if (put_seal(q)) {
		put_maybe_finish(q);
		return;
	}
	if (!p->nobj) {
		/* One object holds it all: data, layout, size and entry in one op. */
		if (!p->fill && !(p->fill = chunk_get(q))) {
			put_fail(q, 503, "SlowDown", "out of memory");
			put_maybe_finish(q);
			return;
		}
		p->fill->n = 0;
		p->single = true;
	}
	if (p->fill && (p->fill->len || p->single)) {
		if (chunk_send(q, p->fill, p->single)) {
			put_fail(q, 503, "SlowDown", "cannot submit");
			put_maybe_finish(q);
			return;
		}
	}
	p->fill = NULL;
	put_maybe_finish(q);
}

/*
 * Payload bytes (as sent, or decoded from aws-chunked framing). \return 0,
 * or -1: the upload failed (put_fail); the caller answers with
 * put_maybe_finish once it no longer needs q (it may be freed then).
 */
static int
put_data(void *arg, const char *data, size_t dlen)
{
	struct s3_req *q = arg;
	struct put *p = q->op;
	ssize_t len = (ssize_t)dlen;

	if (p->body_done || p->finished)
		return -1;
	if (!dlen)
		return 0;
	if (p->got + (uint64_t)len > p->expect) {
		p->body_done = true;
		put_fail(q, 400, "IncompleteBody", "the body is longer than its Content-Length");
		return -1;
	}
	if (p->check_sha)
		EVP_DigestUpdate(q->sha, data, (size_t)len);
	if (p->ck.alg)
		rgw_cksum_update(&p->ck, data, (size_t)len);
	while (len > 0) {
		size_t n;

		if (!p->fill) {
			/* (the buffer chunk_get picks may hold bytes still waiting for MD5) */
			if (p->md5.b)
				rgw_md5_flush(p->md5.b);
			if (!(p->fill = chunk_get(q))) {
				p->body_done = true;
				put_fail(q, 503, "SlowDown", "no upload buffer");
				return -1;
			}
			p->fill->n = p->got / RGW_CHUNK;
		}
		n = CM_MIN((size_t)len, RGW_CHUNK - p->fill->len);
		memcpy(p->fill->buf + p->fill->len, data, n);
		rgw_md5_defer(&p->md5, &q->t->md5b, p->fill->buf + p->fill->len, n);
		p->fill->len += n;
		p->got += n;
		data += n;
		len -= (ssize_t)n;
		if (p->fill->len == RGW_CHUNK && p->got < p->expect) {
			if (chunk_send(q, p->fill, false)) {
				p->body_done = true;
				put_fail(q, 503, "SlowDown", "cannot submit");
				return -1;
			}
			p->fill = NULL;
			if (p->inflight >= RGW_PUT_INFLIGHT && !p->cp)
				rgw_req_body_pause(q->r);
		}
	}
	return 0;
}

static void
prepare_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct put *p = q->op;

	q->pending--;
	if (p->part && (rc == -ECANCELED || rc == -ENOENT)) {
		rgw_req_close_after(q->r);
		s3_error(q, 404, "NoSuchUpload",
			 "the specified upload does not exist: it may have been completed or "
			 "aborted");
		return;
	}
	if (rc == -ECANCELED && ++p->tries < CAS_TRIES) {
		/* (the shard's guard: a split or merge, or the bucket closed: which?) */
		p->in_prepare = true;
		put_recheck(q);
		return;
	}
	if (rc == -ECANCELED || rc == -ENOENT) {
		s3_bucket_forget(q->g, q->bucket);
		rgw_req_close_after(q->r);
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
		return;
	}
	if (rc) {
		rgw_req_close_after(q->r);
		s3_error_rc(q, rc, "preparing the index entry");
		return;
	}
	if (!p->part && (rc = s3_vread_rc(&p->vr))) {
		rgw_req_close_after(q->r);
		s3_error_rc(q, rc, "reading the index entry");
		return;
	}
	if (p->if_none && latest_object(&p->vr)) {
		put_abort(q, 412, "PreconditionFailed",
			  "an object exists under this key (If-None-Match)");
		return;
	}
	if (p->cp) {
		copy_pump(q);
		return;
	}
	rgw_req_body_read(q->r, put_body, q);
}

/* ---- CopyObject, UploadPartCopy: the PUT path fed from the source ---- */

static void
copy_got(struct s3_req *q, const uint8_t *data, size_t n, int rc)
{
	struct put *p = q->op;

	p->inflight--;
	if (p->finished) {
		put_maybe_finish(q);
		return;
	}
	if (rc) {
		put_fail(q, rc == -EAGAIN ? 503 : 500, rc == -EAGAIN ? "SlowDown" : "InternalError",
			 "reading the copy source failed");
		put_maybe_finish(q);
		return;
	}
	if (put_data(q, (const char *)data, n)) {
		put_maybe_finish(q);
		return;
	}
	copy_pump(q);
}

/* One source read at a time, while fewer than RGW_PUT_INFLIGHT writes are in flight. */
static void
copy_pump(struct s3_req *q)
{
	struct put *p = q->op;

	if (p->err && !p->finished && !p->cp->reading) {
		/* (a write failed: stop reading the source) */
		put_fail(q, 500, "InternalError", "writing the copy failed");
		put_maybe_finish(q);
		return;
	}
	if (!p->finished && !p->body_done && !p->cp->reading && p->inflight < RGW_PUT_INFLIGHT) {
		if (s3_copy_eof(p->cp)) {
			put_end(q);
			return;
		}
		if (s3_copy_read(p->cp, copy_got))
			put_fail(q, 503, "SlowDown", "cannot read the copy source");
		else
			p->inflight++;
	}
	put_maybe_finish(q);
}

static void put_prepare(struct s3_req *q);
static void put_prepare_op(struct s3_req *q);
static void reserve_done(void *arg, int rc);

/* The source is known: the size, the metadata (directive), the checks on what is read. */
static void
copy_opened(struct s3_req *q)
{
	struct put *p = q->op;
	const struct s3_copy *c = p->cp;
	const char *dir = rgw_http_hdr(q->h, "x-amz-metadata-directive");
	const char *tdir = rgw_http_hdr(q->h, "x-amz-tagging-directive");
	const char *ca = rgw_http_hdr(q->h, "x-amz-checksum-algorithm");
	enum rgw_cksum_alg alg = RGW_CK_NONE;
	bool replace = false, treplace = false;
	int rc;

	p->expect = c->len;
	if (dir && strcmp(dir, "COPY") && !(replace = !strcmp(dir, "REPLACE"))) {
		s3_error(q, 400, "InvalidArgument", "unknown metadata directive");
		return;
	}
	if (tdir && strcmp(tdir, "COPY") && !(treplace = !strcmp(tdir, "REPLACE"))) {
		s3_error(q, 400, "InvalidArgument", "unknown tagging directive");
		return;
	}
	if (ca && !(alg = rgw_cksum_alg_of(ca))) {
		s3_error(q, 400, "InvalidRequest", "unknown x-amz-checksum-algorithm");
		return;
	}
	if (c->same && !replace && !treplace && !alg) {
		s3_error(q, 400, "InvalidRequest",
			 "this copy request is illegal because it is trying to copy an object to "
			 "itself without changing the object's metadata");
		return;
	}
	if (!p->part) {
		if (replace)
			rc = s3_put_meta(q, &p->e);
		else
			rc = s3_meta_dup(&p->e, &c->e, !treplace, false);
		if (rc) {
			s3_error(q, 400, rc == -E2BIG ? "MetadataTooLarge" : "InternalError",
				 rc == -E2BIG
					 ? "your metadata headers exceed the maximum allowed size"
					 : "out of memory");
			return;
		}
		if (replace && !treplace && s3_tags_dup(&p->e, &c->e)) {
			s3_error(q, 503, "SlowDown", "out of memory");
			return;
		}
		if ((treplace && s3_put_tags(q, &p->e)) || s3_put_acl(q, &p->e))
			return;
	}
	/* What is read must match what the source says it holds (a damaged source is not
	 * copied): its MD5 (a plain object, whole) and its checksum, recomputed. */
	if (c->whole && !(c->e.flags & RGW_ENTRY_MULTIPART)) {
		memcpy(p->want_md5, c->e.md5, 16);
		p->have_md5 = true;
	}
	if (!alg && c->whole && !p->part)
		alg = (enum rgw_cksum_alg)c->e.ck_alg;
	if (alg) {
		if (rgw_cksum_init(&p->ck, alg)) {
			s3_error(q, 503, "SlowDown", "out of memory");
			return;
		}
		if (c->whole && c->e.ck_alg == alg)
			snprintf(p->ck_want, sizeof(p->ck_want), "%s", c->e.ck);
		else
			p->ck_store = true;
	}
	put_prepare(q);
}

/* A copy request's own checks: no body, and the arguments only a copy takes. */
static int
copy_check(struct s3_req *q)
{
	const char *pl = q->sig.payload;

	if ((q->h->has_length && q->h->content_length) || q->h->chunked ||
	    (pl && strcmp(pl, "UNSIGNED-PAYLOAD") &&
	     strcmp(pl, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))) {
		rgw_req_close_after(q->r);
		s3_error(q, 400, "InvalidRequest", "a copy request has no body");
		return -EINVAL;
	}
	return 0;
}

static int
b64_decode16(const char *s, uint8_t out[16])
{
	uint8_t b[24];
	size_t n = strlen(s);
	int l;

	if (n != 24)
		return -EINVAL;
	l = EVP_DecodeBlock(b, (const unsigned char *)s, 24);
	if (l != 18)
		return -EINVAL;
	memcpy(out, b, 16);
	return 0;
}

/* Content-Type, the x-amz-meta-* and other headers kept with the object. */
int
s3_put_meta(struct s3_req *q, struct rgw_entry *e)
{
	static const char *const keep[] = { "cache-control",    "content-disposition",
					    "content-encoding", "content-language",
					    "expires",          "x-amz-website-redirect-location" };
	const char *ct = rgw_http_hdr(q->h, "content-type");
	size_t total = 0;

	if (!(e->ctype = strdup(ct ? ct : "binary/octet-stream")))
		return -ENOMEM;
	for (unsigned i = 0; i < q->h->nhdrs; i++) {
		const struct rgw_http_hdr *hd = &q->h->hdrs[i];
		bool k = !strncmp(hd->name, "x-amz-meta-", 11);
		const char *v = hd->value;

		for (size_t j = 0; !k && j < CM_ARRAY_SIZE(keep); j++)
			k = !strcmp(hd->name, keep[j]);
		if (!k)
			continue;
		if (!strcmp(hd->name, "content-encoding") && !strncasecmp(v, "aws-chunked", 11)) {
			/* (the upload's framing, not the object's encoding) */
			v += 11;
			while (*v == ',' || *v == ' ')
				v++;
			if (!*v)
				continue;
		}
		total += strlen(hd->name) + strlen(v);
		if (total > RGW_META_MAX || e->nmeta == RGW_ENTRY_MAX_META)
			return -E2BIG;
		if (!(e->meta[e->nmeta].k = strdup(hd->name)) ||
		    !(e->meta[e->nmeta].v = strdup(v))) {
			free(e->meta[e->nmeta].k);
			return -ENOMEM;
		}
		e->nmeta++;
	}
	return 0;
}

static void
put_loaded(struct s3_req *q)
{
	struct put *p = calloc(1, sizeof(*p));
	const char *cmd5 = rgw_http_hdr(q->h, "content-md5");
	const char *inm = rgw_http_hdr(q->h, "if-none-match");
	int rc;

	const char *upid = rgw_uri_q(&q->u, "uploadId");

	q->op_name = upid ? "UploadPart" : "PutObject";
	if (!p) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	q->op = p;
	q->op_free = put_free;
	rgw_str_init(&p->ekey);
	rgw_str_init(&p->enc);
	rgw_str_init(&p->pval);
	if (!s3_allow_bucket(q, &q->b, S3_P_WRITE)) {
		s3_deny(q);
		return;
	}
	if (upid) {
		const char *pn = rgw_uri_q(&q->u, "partNumber");
		char *end = NULL;
		unsigned long n = pn ? strtoul(pn, &end, 10) : 0;

		if (!pn || !*pn || *end || n < 1 || n > RGW_PARTS_MAX) {
			s3_error(q, 400, "InvalidArgument",
				 "partNumber must be an integer from 1 to 10000");
			return;
		}
		if (!s3_upload_id_ok(upid)) {
			s3_error(q, 404, "NoSuchUpload", "the specified upload does not exist");
			return;
		}
		if ((rc = s3_mp_io(q))) {
			s3_error_rc(q, rc, "the upload's pool");
			return;
		}
		p->part = true;
		p->partno = (unsigned)n;
		p->mio = q->mpio;
		snprintf(p->moid, sizeof(p->moid), "mp.%s", upid);
		inm = NULL;
	}
	if (inm) {
		if (strcmp(inm, "*")) {
			s3_error(q, 501, "NotImplemented", "If-None-Match on PUT takes only *");
			return;
		}
		p->if_none = true;
	}
	if (rgw_http_hdr(q->h, "x-amz-copy-source")) {
		q->op_name = p->part ? "UploadPartCopy" : "CopyObject";
		if (copy_check(q))
			return;
		s3_copy_open(q, p->part, &p->cp, copy_opened);
		return;
	}
	if (!strncmp(q->sig.payload ? q->sig.payload : "", "STREAMING-", 10)) {
		const char *dl = rgw_http_hdr(q->h, "x-amz-decoded-content-length");
		const char *pl = q->sig.payload;
		unsigned fl;
		char *end = NULL;

		if (!strcmp(pl, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"))
			fl = RGW_AWSCHUNK_SIGNED;
		else if (!strcmp(pl, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"))
			fl = RGW_AWSCHUNK_SIGNED | RGW_AWSCHUNK_TRAILER;
		else if (!strcmp(pl, "STREAMING-UNSIGNED-PAYLOAD-TRAILER"))
			fl = RGW_AWSCHUNK_TRAILER;
		else {
			rgw_req_close_after(q->r);
			s3_error(q, 400, "InvalidArgument",
				 "unknown x-amz-content-sha256 streaming form");
			return;
		}
		if ((fl & RGW_AWSCHUNK_SIGNED) && (q->anon || q->sig.presigned)) {
			rgw_req_close_after(q->r);
			s3_error(q, 400, "InvalidArgument",
				 "a signed streaming body needs a signed header");
			return;
		}
		if (!dl || !*dl || (p->expect = strtoull(dl, &end, 10), *end)) {
			rgw_req_close_after(q->r);
			s3_error(q, 411, "MissingContentLength",
				 "a streaming upload needs x-amz-decoded-content-length");
			return;
		}
		if (rgw_awschunk_init(&p->ac, fl, q->sigkey, &q->sig, q->seed)) {
			s3_error(q, 503, "SlowDown", "out of memory");
			return;
		}
		p->chunked = true;
	} else if (!q->h->has_length) {
		rgw_req_close_after(q->r);
		s3_error(q, 411, "MissingContentLength",
			 "you must provide the Content-Length header");
		return;
	} else {
		p->expect = q->h->content_length;
	}
	{
		/* x-amz-checksum-<alg> in a header, or announced for the trailer */
		const char *tr = rgw_http_hdr(q->h, "x-amz-trailer");
		enum rgw_cksum_alg alg = RGW_CK_NONE;

		for (int a = RGW_CK_CRC32; a <= RGW_CK_SHA256 && !alg; a++) {
			const char *v = rgw_http_hdr(q->h, rgw_cksum_header((enum rgw_cksum_alg)a));

			if (v) {
				alg = (enum rgw_cksum_alg)a;
				snprintf(p->ck_want, sizeof(p->ck_want), "%s", v);
			}
		}
		if (!alg && tr) {
			if (strncasecmp(tr, "x-amz-checksum-", 15) ||
			    !(alg = rgw_cksum_alg_of(tr + 15)) || !p->chunked ||
			    !(p->ac.flags & RGW_AWSCHUNK_TRAILER)) {
				rgw_req_close_after(q->r);
				s3_error(q, 400, "InvalidRequest",
					 "x-amz-trailer names no checksum this upload can carry");
				return;
			}
			p->ck_trailer = true;
		}
		if (alg && rgw_cksum_init(&p->ck, alg)) {
			s3_error(q, 503, "SlowDown", "out of memory");
			return;
		}
	}
	if (p->expect > RGW_MAX_PUT) {
		rgw_req_close_after(q->r);
		s3_error(q, 400, "EntityTooLarge",
			 "your proposed upload exceeds the maximum allowed size (5 GiB)");
		return;
	}
	if (cmd5 && b64_decode16(cmd5, p->want_md5)) {
		s3_error(q, 400, "InvalidDigest", "the Content-MD5 you specified is not valid");
		return;
	}
	p->have_md5 = cmd5 != NULL;
	if (q->sig.payload && strcmp(q->sig.payload, "UNSIGNED-PAYLOAD") && !p->chunked) {
		if (strlen(q->sig.payload) != 64 || rgw_unhex(q->sig.payload, p->want_sha, 32)) {
			s3_error(q, 400, "InvalidArgument",
				 "x-amz-content-sha256 is not a SHA-256");
			return;
		}
		p->check_sha = true;
	}
	put_prepare(q);
}

/* The entry to be, the names; the user's quota taken; then the pending marker. */
static void
put_prepare(struct s3_req *q)
{
	struct put *p = q->op;
	char ih[33];
	int rc;

	if (!p->part && !p->cp && (rc = s3_put_meta(q, &p->e))) {
		s3_error(q, 400, rc == -E2BIG ? "MetadataTooLarge" : "InternalError",
			 rc == -E2BIG ? "your metadata headers exceed the maximum allowed size"
				      : "out of memory");
		return;
	}
	if (!p->part && !p->cp && (s3_put_tags(q, &p->e) || s3_put_acl(q, &p->e)))
		return;
	rgw_md5_init(&p->md5);
	if (p->check_sha &&
	    (!(q->sha = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(q->sha, EVP_sha256(), NULL))) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	cm_random_bytes(p->e.inst, 16);
	p->e.owner = q->uid;
	{
		/* the striper's default layout: 4 MiB units, 1 object, 4 MiB objects */
		uint32_t su = RGW_CHUNK, sc = 1;
		uint64_t os = RGW_CHUNK;

		for (int i = 0; i < 4; i++) {
			p->layout[i] = (char)(su >> (8 * i));
			p->layout[4 + i] = (char)(sc >> (8 * i));
		}
		for (int i = 0; i < 8; i++)
			p->layout[8 + i] = (char)(os >> (8 * i));
	}
	s3_entry_key(q->key, q->key_len, &p->ekey);
	s3_shard_pick(&q->b, &q->bc, q->key, q->key_len, &p->shard);
	snprintf(p->bid, sizeof(p->bid), "%s", q->b.id);
	if (!p->part) {
		p->mio = q->g->meta;
		snprintf(p->moid, sizeof(p->moid), "%s", p->shard.oid);
	}
	rgw_hex(p->e.inst, 16, ih);
	snprintf(p->pkey, sizeof(p->pkey), RGW_SYS_PENDING "%s", ih);
	{
		uint8_t t[8];
		int64_t now = rgw__now_ns();

		for (int i = 0; i < 8; i++)
			t[i] = (uint8_t)((uint64_t)now >> (8 * i));
		rgw_str_add(&p->pval, t, 8);
		for (int i = 0; i < 8; i++)
			t[i] = (uint8_t)(p->expect >> (8 * i));
		rgw_str_add(&p->pval, t, 8);
		rgw_str_add(&p->pval, q->key, q->key_len);
	}
	if (p->ekey.oom || p->pval.oom ||
	    s3_vread_init(&p->vr, q->key, q->key_len, s3_vmode(&q->b) == S3_V_SUSPENDED, NULL,
			  false)) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	if (!p->part && s3_vmode(&q->b) == S3_V_ENABLED)
		rgw_vid_make(rgw__now_ns(), p->e.vid);
	if (!p->part && s3_user_quota_applies(q)) {
		/* The user's quota: its usage counter takes the upload first (bounded). */
		if ((rc = s3_user_usage(q, (int64_t)p->expect, 1, reserve_done))) {
			rgw_req_close_after(q->r);
			s3_error_rc(q, rc, "reserving the user's quota");
			return;
		}
		p->reserving = true;
		return;
	}
	put_prepare_op(q);
}

static void
reserve_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct put *p = q->op;

	q->pending--;
	if (rc == -EOVERFLOW) {
		rgw_req_close_after(q->r);
		s3_error(q, 403, "QuotaExceeded", S3_QUOTA_MSG);
		return;
	}
	if (rc) {
		rgw_req_close_after(q->r);
		s3_error_rc(q, rc, "reserving the user's quota");
		return;
	}
	p->reserved = true;
	put_prepare_op(q);
}

/* The prepare's sub-ops: the current entry read, the pending marker. */
static void
prepare_build(void *arg, cairn_op_t *op, bool alone)
{
	struct s3_req *q = arg;
	struct put *p = q->op;

	if (alone)
		s3_shard_guard(&p->shard, op);
	s3_vread_op(&p->vr, op); /* (a batch that failed may have filled it: freed first) */
	cairn_op_omap_set(op, p->pkey, strlen(p->pkey), p->pval.p, p->pval.len);
}

/* The pending marker (with the current entry read), then the data. */
static void
put_prepare_op(struct s3_req *q)
{
	struct put *p = q->op;
	cairn_op_t *op;
	int rc;

	if (!(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	if (!p->part) {
		cairn_op_release(op);
		p->bi.usage = false;
		put_item(q, prepare_build, prepare_done);
		return;
	}
	/* (the upload is open: not completing, not aborted; and it is this key's) */
	cairn_op_cmpxattr(op, "rgw.state", CAIRN_CMP_EQ, "open", 4);
	cairn_op_cmpxattr(op, "rgw.key", CAIRN_CMP_EQ, q->key, q->key_len);
	cairn_op_omap_set(op, p->pkey, strlen(p->pkey), p->pval.p, p->pval.len);
	if ((rc = rgw__aio(q->t, p->mio, p->moid, op, prepare_done, q))) {
		rgw_req_close_after(q->r);
		s3_error_rc(q, rc, "preparing the index entry");
		return;
	}
	q->pending++;
}

/* ---- GET / HEAD ---- */

enum { SL_FREE, SL_READING, SL_READY, SL_SENDING };

struct slot {
	uint8_t *buf;
	size_t len, got;
	uint64_t start; /* the object's byte this slot holds from */
	uint64_t objno;
	int rc;
	int st;
	struct s3_req *q;
};

struct get {
	struct cur c;
	struct rgw_entry e;
	struct s3_shard shard;
	uint64_t end;       /* [next_send, end) is still to send */
	uint64_t next_read; /* the next byte to read */
	uint64_t next_send; /* the next byte to send */
	struct slot s[RGW_GET_AHEAD];
	bool sending, failed;
	struct rgw_layout l;
	bool have_l;
	uint8_t *mbuf; /* the manifest, as read */
	size_t mlen;
	int mrval;
	struct s3_vread vr;
	const char *vid; /* ?versionId= ("null" or an id), or NULL: the latest */
	bool second;     /* the null version's record is read (by its pointer) */
	unsigned part;   /* ?partNumber= (1..10000), or 0 */
};

static void
get_free(struct s3_req *q)
{
	struct get *g = q->op;

	if (!g)
		return;
	cur_reset(&g->c);
	free(g->c.want.key);
	s3_vread_fini(&g->vr);
	rgw_entry_fini(&g->e);
	for (int i = 0; i < RGW_GET_AHEAD; i++)
		rgw__buf_put(q->t, g->s[i].buf);
	rgw_layout_fini(&g->l);
	free(g->mbuf);
	free(g);
	q->op = NULL;
}

static void get_pump(struct s3_req *q);

static void
slot_done(void *arg, int rc)
{
	struct slot *s = arg;
	struct s3_req *q = s->q;

	q->pending--;
	s->rc = rc;
	s->st = SL_READY;
	get_pump(q);
}

static void
get_sent(struct rgw_req *r, int res, void *arg)
{
	struct s3_req *q = arg;
	struct get *g = q->op;

	(void)r;
	g->sending = false;
	for (int i = 0; i < RGW_GET_AHEAD; i++)
		if (g->s[i].st == SL_SENDING)
			g->s[i].st = SL_FREE;
	if (res < 0)
		g->failed = true;
	get_pump(q);
}

/* Keep reads ahead of the socket, and send what came back, in order. */
static void
get_pump(struct s3_req *q)
{
	struct get *g = q->op;

	if (!g->failed && !g->sending) {
		for (int i = 0; i < RGW_GET_AHEAD; i++) {
			struct slot *s = &g->s[i];
			struct iovec iov;

			if (s->st != SL_READY || s->start != g->next_send)
				continue;
			if (s->rc || s->got != s->len) {
				CM_ERR("%s %s: data object %" PRIu64 ": read %zu of %zu bytes: %s",
				       rgw_req_id(q->r), q->h->target, s->objno, s->got, s->len,
				       s->rc ? cm_strerror(s->rc) : "short");
				g->failed = true;
				break;
			}
			iov.iov_base = s->buf;
			iov.iov_len = s->len;
			s->st = SL_SENDING;
			g->sending = true;
			if (rgw_req_send(q->r, &iov, 1, get_sent, q)) {
				s->st = SL_FREE;
				g->sending = false;
				g->failed = true;
				break;
			}
			g->next_send += s->len;
			q->bytes_out += s->len;
			break;
		}
	}
	for (int i = 0; i < RGW_GET_AHEAD && !g->failed && g->next_read < g->end; i++) {
		struct slot *s = &g->s[i];
		size_t pi = rgw_layout_find(&g->l, g->next_read);
		uint64_t po = g->next_read - g->l.starts[pi];
		uint64_t in = po % RGW_CHUNK;
		size_t n =
			(size_t)CM_MIN(CM_MIN((uint64_t)RGW_CHUNK - in, g->l.parts[pi].size - po),
				       g->end - g->next_read);
		cairn_op_t *op;
		char oid[64];

		if (s->st != SL_FREE)
			continue;
		if ((!s->buf && !(s->buf = rgw__buf_get(q->t))) || !(op = cairn_op_create())) {
			g->failed = true;
			break;
		}
		s->q = q;
		s->objno = po / RGW_CHUNK;
		s->start = g->next_read;
		s->len = n;
		s->got = 0;
		s->rc = 0;
		s->st = SL_READING;
		s3_data_oid(g->l.parts[pi].inst, s->objno, oid, sizeof(oid));
		cairn_op_read(op, in, n, s->buf, &s->got, NULL);
		if (rgw__aio(q->t, q->data, oid, op, slot_done, s)) {
			s->st = SL_FREE;
			g->failed = true;
			break;
		}
		q->pending++;
		g->next_read += n;
	}
	if (q->pending || g->sending)
		return;
	if (g->failed) {
		/* (the head went out: a short body, and the connection closes) */
		q->status = 500;
		rgw_req_close_after(q->r);
	}
	if (g->failed || g->next_send >= g->end)
		s3_done(q);
}

static void
add_hdr(struct rgw_str *h, const char *name, const char *v)
{
	rgw_str_adds(h, name);
	rgw_str_adds(h, ": ");
	rgw_str_adds(h, v);
	rgw_str_adds(h, "\r\n");
}

static void
entry_headers(struct rgw_str *h, const struct rgw_entry *e, const struct s3_req *q, bool whole)
{
	const char *mode = rgw_http_hdr(q->h, "x-amz-checksum-mode");

	char etag[64], date[48];

	rgw_entry_etag(e, etag, sizeof(etag));
	rgw__http_date(e->mtime_ns, date, sizeof(date));
	add_hdr(h, "ETag", etag);
	add_hdr(h, "Last-Modified", date);
	add_hdr(h, "Accept-Ranges", "bytes");
	if (e->ctype && *e->ctype)
		add_hdr(h, "Content-Type", e->ctype);
	for (size_t i = 0; i < e->nmeta; i++)
		add_hdr(h, e->meta[i].k, e->meta[i].v);
	if (e->tags_len) {
		int n = rgw_tags_check(e->tags, e->tags_len);

		if (n > 0)
			rgw_str_addf(h, "x-amz-tagging-count: %d\r\n", n);
	}
	/* (a checksum covers the whole object: none on a range, as S3) */
	if (whole && e->ck_alg && mode && !strcasecmp(mode, "ENABLED"))
		add_hdr(h, rgw_cksum_header((enum rgw_cksum_alg)e->ck_alg), e->ck);
	if (e->vid[0] || s3_vmode(&q->b) != S3_V_NEVER)
		add_hdr(h, "x-amz-version-id", e->vid[0] ? e->vid : "null");
}

static void get_respond(struct s3_req *q);

static void
manifest_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct get *g = q->op;

	q->pending--;
	if (!rc)
		rc = g->mrval;
	if (!rc)
		rc = rgw_layout_manifest(&g->l, g->mbuf, g->mlen, g->e.size);
	if (rc) {
		CM_ERR("%s: bucket %s key %.*s: its manifest: %s", rgw_req_id(q->r), q->bucket,
		       (int)q->key_len, q->key, cm_strerror(rc));
		s3_error(q, 500, "InternalError", "the object's manifest cannot be read");
		return;
	}
	g->have_l = true;
	get_respond(q);
}

static void
lookup_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct get *g = q->op;
	const struct cairn_kv *e;
	char sk[RGW_VID_LEN + 1] = "";

	q->pending--;
	if (rc == -ENOENT) {
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
		return;
	}
	if (!rc && s3_shard_moved(q, &g->shard))
		return; /* (split or merged since the map was read: again with the new one) */
	if (!rc)
		rc = g->second ? g->c.rval : s3_vread_rc(&g->vr);
	if (rc) {
		s3_error_rc(q, rc, "reading the index entry");
		return;
	}
	if (g->second)
		e = cur_found(&g->c) ? &g->c.kvs[0] : NULL;
	else
		e = s3_vread_pick(&g->vr, g->vid, sk);
	if (!e && !g->second && sk[0]) {
		/* The null version is an older one: its record, by the pointer's sort key. */
		struct rgw_str k;
		cairn_op_t *op;

		rgw_str_init(&k);
		s3_version_key(q->key, q->key_len, sk, &k);
		free(g->c.want.key);
		g->c.want.key = rgw_str_take(&k, &g->c.want.klen);
		if (!g->c.want.key || !(op = cairn_op_create())) {
			s3_error(q, 503, "SlowDown", "out of memory");
			return;
		}
		g->second = true;
		s3_shard_read(&g->shard, op);
		cairn_op_omap_get(op, &g->c.want, 1, &g->c.kvs, &g->c.n, &g->c.rval);
		s3_submit(q, q->g->meta, g->shard.oid, op, lookup_done);
		return;
	}
	if (!e) {
		/* (S3: who may not list the bucket learns nothing about its keys) */
		if (!s3_may_list(q))
			s3_deny(q);
		else if (g->vid)
			s3_error(q, 404, "NoSuchVersion", "the specified version does not exist");
		else
			s3_error(q, 404, "NoSuchKey", "the specified key does not exist");
		return;
	}
	if (rgw_entry_decode(e->val, e->vlen, &g->e)) {
		CM_ERR("%s: bucket %s key %.*s: the index entry does not decode", rgw_req_id(q->r),
		       q->bucket, (int)q->key_len, q->key);
		s3_error(q, 500, "InternalError", "the index entry is damaged");
		return;
	}
	if (g->e.flags & RGW_ENTRY_DELETE_MARKER) {
		char hd[96];

		if (!s3_may_list(q)) {
			s3_deny(q);
			return;
		}
		snprintf(hd, sizeof(hd), "x-amz-delete-marker: true\r\nx-amz-version-id: %s\r\n",
			 g->e.vid[0] ? g->e.vid : "null");
		if (g->vid)
			s3_error_hdrs(q, 405, "MethodNotAllowed",
				      "the specified version is a delete marker", hd);
		else
			s3_error_hdrs(q, 404, "NoSuchKey", "the specified key does not exist", hd);
		return;
	}
	if (!s3_allow_object(q, &q->b, &g->e, S3_P_READ)) {
		s3_deny(q);
		return;
	}
	if (!(g->e.flags & RGW_ENTRY_MULTIPART)) {
		rgw_layout_single(&g->l, g->e.inst, g->e.size);
		g->have_l = true;
	}
	get_respond(q);
}

/* Read the object's manifest, then get_respond again. */
static void
get_manifest(struct s3_req *q)
{
	struct get *g = q->op;
	cairn_op_t *op;
	char oid[64];
	int rc;

	if ((rc = s3_manifest_op(&g->e, &op, &g->mbuf, &g->mlen, &g->mrval))) {
		bool bad = rc == -EBADMSG;

		s3_error(q, bad ? 500 : 503, bad ? "InternalError" : "SlowDown",
			 bad ? "the object's manifest is damaged" : "reading the manifest");
		return;
	}
	s3_data_oid(g->e.inst, 0, oid, sizeof(oid));
	if ((rc = rgw__aio(q->t, q->data, oid, op, manifest_done, q))) {
		s3_error_rc(q, rc, "reading the manifest");
		return;
	}
	q->pending++;
}

/* Conditions, range, the head, then the bytes (a manifest is read first). */
static void
get_respond(struct s3_req *q)
{
	struct get *g = q->op;
	const char *range = rgw_http_hdr(q->h, "range");
	char etag[64];
	struct rgw_str h;
	enum rgw_cond_result cr;
	uint64_t off = 0, len;
	int status = 200;

	rgw_entry_etag(&g->e, etag, sizeof(etag));
	cr = rgw_cond_eval(
		rgw_http_hdr(q->h, "if-match"), rgw_http_hdr(q->h, "if-unmodified-since"),
		rgw_http_hdr(q->h, "if-none-match"), rgw_http_hdr(q->h, "if-modified-since"), etag,
		g->e.mtime_ns / 1000000000, true);
	if (cr == RGW_COND_FAILED) {
		s3_error(q, 412, "PreconditionFailed",
			 "at least one of the preconditions you specified did not hold");
		return;
	}
	rgw_str_init(&h);
	if (cr == RGW_COND_NOT_MODIFIED) {
		entry_headers(&h, &g->e, q, true);
		q->status = 304;
		if (rgw_req_send_head(q->r, 304, rgw_str_cstr(&h), 0) == 0) {
			rgw_str_fini(&h);
			s3_done(q);
			return;
		}
		rgw_str_fini(&h);
		s3_error(q, 500, "InternalError", "out of memory");
		return;
	}
	len = g->e.size;
	if (g->part) {
		/* GET/HEAD ?partNumber: that part's bytes (a plain object is one part) */
		bool mp = g->e.flags & RGW_ENTRY_MULTIPART;
		size_t np = mp ? (g->have_l ? g->l.np : 0) : 1;

		if (mp && !g->have_l) {
			rgw_str_fini(&h);
			get_manifest(q);
			return;
		}
		if (g->part > np) {
			rgw_str_fini(&h);
			s3_error(q, 416, "InvalidPartNumber",
				 "the requested partnumber is not satisfiable");
			return;
		}
		if (mp) {
			off = g->l.starts[g->part - 1];
			len = g->l.parts[g->part - 1].size;
			rgw_str_addf(&h, "x-amz-mp-parts-count: %zu\r\n", np);
		}
		status = 206;
		if (len)
			rgw_str_addf(&h,
				     "Content-Range: bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64 "\r\n",
				     off, off + len - 1, g->e.size);
	} else if (range) {
		int r = rgw_range_parse(range, g->e.size, &off, &len);

		if (r == -ERANGE) {
			char cr2[64];

			rgw_str_fini(&h);
			snprintf(cr2, sizeof(cr2), "Content-Range: bytes */%" PRIu64 "\r\n",
				 g->e.size);
			(void)cr2;
			s3_error(q, 416, "InvalidRange", "the requested range is not satisfiable");
			return;
		}
		if (r == 0) {
			status = 206;
			rgw_str_addf(&h,
				     "Content-Range: bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64 "\r\n",
				     off, off + len - 1, g->e.size);
		} else {
			off = 0;
			len = g->e.size;
		}
	}
	if (!g->have_l && q->h->method != RGW_M_HEAD && len) {
		/* (the manifest names the parts: read it before anything is sent) */
		rgw_str_fini(&h);
		get_manifest(q);
		return;
	}
	entry_headers(&h, &g->e, q, status == 200);
	q->status = status;
	if (h.oom || rgw_req_send_head(q->r, status, rgw_str_cstr(&h), len)) {
		rgw_str_fini(&h);
		s3_error(q, 500, "InternalError", "out of memory");
		return;
	}
	rgw_str_fini(&h);
	if (q->h->method == RGW_M_HEAD || len == 0) {
		s3_done(q);
		return;
	}
	g->next_read = g->next_send = off;
	g->end = off + len;
	get_pump(q);
}

static void
get_loaded(struct s3_req *q)
{
	struct get *g = calloc(1, sizeof(*g));
	cairn_op_t *op;
	int rc;

	q->op_name = q->h->method == RGW_M_HEAD ? "HeadObject" : "GetObject";
	if (!g) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	q->op = g;
	q->op_free = get_free;
	/* (access is the object's ACL's: checked once the entry is read) */
	g->vid = rgw_uri_q(&q->u, "versionId");
	if (g->vid && strcmp(g->vid, "null") && !rgw_vid_ok(g->vid)) {
		s3_error(q, 400, "InvalidArgument", "invalid version id specified");
		return;
	}
	if (rgw_uri_q(&q->u, "partNumber")) {
		const char *pn = rgw_uri_q(&q->u, "partNumber");
		char *end;
		long v = strtol(pn, &end, 10);

		if (!*pn || *end || v < 1 || v > RGW_PARTS_MAX) {
			s3_error(q, 400, "InvalidArgument",
				 "Part number must be an integer between 1 and 10000, inclusive");
			return;
		}
		if (rgw_http_hdr(q->h, "range")) {
			s3_error(q, 400, "InvalidRequest",
				 "Cannot specify both Range header and partNumber query parameter");
			return;
		}
		g->part = (unsigned)v;
	}
	if (s3_vread_init(&g->vr, q->key, q->key_len, g->vid && !strcmp(g->vid, "null"),
			  g->vid && strcmp(g->vid, "null") ? g->vid : NULL, false) ||
	    !(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	s3_shard_pick(&q->b, &q->bc, q->key, q->key_len, &g->shard);
	s3_shard_read(&g->shard, op);
	s3_vread_op(&g->vr, op);
	if ((rc = rgw__aio(q->t, q->g->meta, g->shard.oid, op, lookup_done, q))) {
		s3_error_rc(q, rc, "reading the index entry");
		return;
	}
	q->pending++;
}

/* ---- DELETE (one key; also DeleteObjects' worker) ---- */

struct del;
typedef void (*del_cb)(struct del *d, int rc);

struct del {
	struct s3_req *q;
	struct s3_vread vr;
	struct s3_vplan vp;
	struct s3_shard shard;
	struct s3_shwait w; /* the shard frozen or moved by a split */
	int tries;
	del_cb cb;
	void *arg;
	char ekey[RGW_KEY_MAX + 1]; /* the entry key (the batch's same-key rule) */
	size_t eklen;
	char *key;
	size_t klen;
	char vid[RGW_VID_LEN + 1]; /* the version to remove ("null" too), or "" */
	bool by_vid;
	struct rgw_entry dm; /* a new delete marker */
	struct rgw_str dmenc;
	struct rgw_batch_item bi;
	/* the answer: the version removed or the delete marker made */
	char out_vid[RGW_VID_LEN + 1];
	bool out_has_vid, out_dm;
};

static void del_step(struct del *d);

/* After a wait on a frozen shard, or the map read anew: the key's entry read again. */
static void
del_waited(void *arg, int rc)
{
	struct del *d = arg;

	if (rc)
		d->cb(d, rc);
	else
		del_step(d);
}

static void
del_fini(struct del *d)
{
	s3_vplan_fini(&d->vp);
	s3_vread_fini(&d->vr);
	rgw_str_fini(&d->dmenc);
	s3_shwait_fini(&d->w);
	free(d->key);
	d->key = NULL;
}

static void
del_swapped(void *arg, int rc)
{
	struct del *d = arg;
	struct s3_req *q = d->q;

	q->pending--;
	if (rc == -ECANCELED && ++d->tries < CAS_TRIES) {
		del_step(d);
		return;
	}
	if (!rc) {
		s3_vplan_collect(q, &d->vp, d->shard.oid);
		/* (the quota counters move once, at the request's end: s3_usage_flush) */
		if (s3_user_quota_applies(q)) {
			q->du_bytes += d->vp.dbytes;
			q->du_objs += d->vp.dobjs;
		}
		if (s3_bucket_quota_applies(q)) {
			q->db_bytes += d->vp.dbytes;
			q->db_objs += d->vp.dobjs;
		}
	}
	d->cb(d, rc);
}

static void
del_guard(void *arg, cairn_op_t *op)
{
	struct del *d = arg;

	s3_shard_guard(&d->shard, op);
}

/* The delete's sub-ops: the plan's compares and writes (dead markers for the data it frees). */
static void
del_build(void *arg, cairn_op_t *op, bool alone)
{
	struct del *d = arg;

	if (alone)
		s3_shard_guard(&d->shard, op);
	s3_vplan_ops(&d->vp, op);
	if (alone)
		s3_usage_op(d->q, op, d->bi.dbytes, d->bi.dobjs);
}

static void
del_read(void *arg, int rc)
{
	struct del *d = arg;
	struct s3_req *q = d->q;
	enum s3_vmode mode = s3_vmode(&q->b);

	q->pending--;
	if (!rc && s3_shard_wait(&d->w))
		return; /* (a split: del_waited) */
	if (!rc)
		rc = s3_vread_rc(&d->vr);
	if (rc) {
		d->cb(d, rc);
		return;
	}
	d->out_has_vid = false;
	d->out_dm = false;
	if (d->by_vid) {
		if ((rc = s3_vplan_delete(&d->vp, d->key, d->klen, &d->vr, d->vid))) {
			d->cb(d, rc);
			return;
		}
		d->out_has_vid = true;
		snprintf(d->out_vid, sizeof(d->out_vid), "%s", d->vid);
		d->out_dm = d->vp.found && d->vp.old_dm;
		if (!d->vp.found) {
			d->cb(d, 0); /* (S3: deleting what is not there succeeds) */
			return;
		}
	} else if (mode == S3_V_NEVER) {
		if (!s3_vread_cur(&d->vr)) {
			d->cb(d, 0);
			return;
		}
		if ((rc = s3_vplan_put(&d->vp, &q->b, d->key, d->klen, &d->vr, NULL, 0, NULL))) {
			d->cb(d, rc);
			return;
		}
	} else {
		/* A delete marker becomes the latest version. */
		memset(&d->dm, 0, sizeof(d->dm));
		d->dm.flags = RGW_ENTRY_DELETE_MARKER;
		d->dm.mtime_ns = s3_version_time(&d->vr, rgw__now_ns());
		d->dm.owner = q->uid;
		if (mode == S3_V_ENABLED)
			rgw_vid_make(d->dm.mtime_ns, d->dm.vid);
		rgw_str_reset(&d->dmenc);
		rgw_entry_encode(&d->dm, &d->dmenc);
		if (d->dmenc.oom) {
			d->cb(d, -ENOMEM);
			return;
		}
		if ((rc = s3_vplan_put(&d->vp, &q->b, d->key, d->klen, &d->vr, d->dmenc.p,
				       d->dmenc.len, &d->dm))) {
			d->cb(d, rc);
			return;
		}
		d->out_has_vid = true;
		d->out_dm = true;
		snprintf(d->out_vid, sizeof(d->out_vid), "%s", d->dm.vid[0] ? d->dm.vid : "null");
	}
	d->bi = (struct rgw_batch_item){ .io = q->g->meta,
					 .oid = d->shard.oid,
					 .range = d->shard.range,
					 .rlen = d->shard.rlen,
					 .key = d->ekey,
					 .klen = d->eklen,
					 .build = del_build,
					 .guard = del_guard,
					 .done = del_swapped,
					 .arg = d,
					 .usage = true,
					 .dbytes = d->vp.dbytes,
					 .dobjs = d->vp.dobjs,
					 .quota_bytes = q->b.quota_bytes,
					 .quota_objects = q->b.quota_objects };
	q->pending++;
	rgw__batch(q->t, &d->bi);
}

static void
del_step(struct del *d)
{
	struct s3_req *q = d->q;
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!op) {
		d->cb(d, -ENOMEM);
		return;
	}
	s3_shard_read(&d->shard, op);
	s3_vread_op(&d->vr, op);
	if ((rc = rgw__aio(q->t, q->g->meta, d->shard.oid, op, del_read, d))) {
		d->cb(d, rc);
		return;
	}
	q->pending++;
}

/*
 * Delete key (vid: the version to remove, "null" too; NULL: the latest, which in a
 * versioned bucket becomes a delete marker). \return 0 (cb will be called), -EINVAL (a bad
 * key or version id), -ENOMEM.
 */
static int
del_start(struct s3_req *q, struct del *d, const char *key, size_t klen, const char *vid, del_cb cb)
{
	enum s3_vmode mode = s3_vmode(&q->b);
	bool null = vid && !strcmp(vid, "null");

	s3_vplan_zero(&d->vp);
	memset(&d->vr, 0, sizeof(d->vr));
	rgw_str_init(&d->dmenc);
	d->key = NULL;
	d->q = q;
	d->cb = cb;
	d->tries = 0;
	if (!klen || klen > RGW_KEY_MAX || !rgw_key_ok(key, klen) ||
	    (vid && !null && !rgw_vid_ok(vid)))
		return -EINVAL;
	d->by_vid = vid != NULL;
	snprintf(d->vid, sizeof(d->vid), "%s", vid ? vid : "");
	memcpy(d->ekey, key, klen);
	d->ekey[klen] = '\0';
	d->eklen = klen + 1;
	if (!(d->key = malloc(klen)))
		return -ENOMEM;
	memcpy(d->key, key, klen);
	d->klen = klen;
	/* (by id: the null pointer (an older null version may be promoted), the id's record and the
	 * newest record too; a delete marker in a suspended bucket replaces the null version,
	 * wherever it is) */
	if (s3_vread_init(&d->vr, key, klen, vid || mode == S3_V_SUSPENDED,
			  vid && !null ? vid : NULL, vid != NULL)) {
		del_fini(d); /* (the slot is used again: nothing of this key stays) */
		return -ENOMEM;
	}
	s3_shard_pick(&q->b, &q->bc, key, klen, &d->shard);
	s3_shwait_init(&d->w, q, &d->shard, d->key, d->klen, del_waited, d);
	del_step(d);
	return 0;
}

static void
del_one_free(struct s3_req *q)
{
	struct del *d = q->op;

	if (!d)
		return;
	del_fini(d);
	free(d);
	q->op = NULL;
}

static void
del_one_done(struct del *d, int rc)
{
	struct s3_req *q = d->q;
	char hd[96] = "";

	s3_usage_flush(q);
	if (rc == -ENOENT || rc == -ECANCELED) {
		s3_bucket_forget(q->g, q->bucket);
		s3_error(q, rc == -ENOENT ? 404 : 503, rc == -ENOENT ? "NoSuchBucket" : "SlowDown",
			 rc == -ENOENT ? "the bucket does not exist"
				       : "too many concurrent writers");
		return;
	}
	if (rc == -EBUSY) {
		s3_error(q, 503, "SlowDown", "the bucket's index is being reorganised: retry");
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "deleting the object");
		return;
	}
	if (d->out_has_vid)
		snprintf(hd, sizeof(hd), "x-amz-version-id: %s\r\n%s", d->out_vid,
			 d->out_dm ? "x-amz-delete-marker: true\r\n" : "");
	s3_respond_xml(q, 204, hd[0] ? hd : NULL, NULL);
}

static void
delete_loaded(struct s3_req *q)
{
	struct del *d = calloc(1, sizeof(*d));
	int rc;

	q->op_name = "DeleteObject";
	if (!d) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	q->op = d;
	q->op_free = del_one_free;
	if (!s3_allow_bucket(q, &q->b, S3_P_WRITE)) {
		s3_deny(q);
		return;
	}
	if ((rc = del_start(q, d, q->key, q->key_len, rgw_uri_q(&q->u, "versionId"), del_one_done)))
		s3_error(q, rc == -EINVAL ? 400 : 503,
			 rc == -EINVAL ? "InvalidArgument" : "SlowDown",
			 rc == -EINVAL ? "invalid version id specified" : "out of memory");
}

/* ---- DeleteObjects ---- */

#define MULTI_PAR 8

struct mdel {
	struct rgw_xml *x;
	const struct rgw_xml **objs;
	size_t nobj, next, done;
	bool quiet;
	struct del d[MULTI_PAR];
	int *rcs;

	struct mres {
		char vid[RGW_VID_LEN + 1];
		bool has_vid, dm;
	} * res;

	bool busy[MULTI_PAR];
	bool pumping, again; /* (a delete that fails at once calls back into the pump) */
};

static void
mdel_free(struct s3_req *q)
{
	struct mdel *m = q->op;

	if (!m)
		return;
	for (int i = 0; i < MULTI_PAR; i++)
		del_fini(&m->d[i]);
	rgw_xml_free(m->x);
	free(m->objs);
	free(m->rcs);
	free(m->res);
	free(m);
	q->op = NULL;
}

static void mdel_pump(struct s3_req *q);
static void mdel_fill(struct s3_req *q);
static void mdel_answer(struct s3_req *q);

static void
mdel_one(struct del *d, int rc)
{
	struct s3_req *q = d->q;
	struct mdel *m = q->op;
	size_t idx = (size_t)(uintptr_t)d->arg;

	m->rcs[idx] = rc;
	memcpy(m->res[idx].vid, d->out_vid, sizeof(d->out_vid));
	m->res[idx].has_vid = d->out_has_vid;
	m->res[idx].dm = d->out_dm;
	m->busy[d - m->d] = false;
	m->done++;
	del_fini(d);
	mdel_pump(q);
}

static void
mdel_pump(struct s3_req *q)
{
	struct mdel *m = q->op;

	if (m->pumping) {
		m->again = true;
		return;
	}
	m->pumping = true;
	do {
		m->again = false;
		mdel_fill(q);
	} while (m->again);
	m->pumping = false;
	if (m->done < m->nobj)
		return;
	mdel_answer(q);
}

/* Start deletes in the free slots. */
static void
mdel_fill(struct s3_req *q)
{
	struct mdel *m = q->op;

	for (int i = 0; i < MULTI_PAR && m->next < m->nobj; i++) {
		const char *key, *vid;
		int rc;

		if (m->busy[i])
			continue;
		key = rgw_xml_child_text(m->objs[m->next], "Key");
		vid = rgw_xml_child_text(m->objs[m->next], "VersionId");
		if (key && strlen(key) <= RGW_KEY_MAX &&
		    !s3_access(q, &q->b, &q->bc, key, strlen(key),
			       vid ? "s3:DeleteObjectVersion" : "s3:DeleteObject",
			       s3_acl_bucket(q, &q->b, S3_P_WRITE))) {
			m->rcs[m->next++] = -EACCES;
			m->done++;
			i--;
			continue;
		}
		m->d[i].arg = (void *)(uintptr_t)m->next;
		m->busy[i] = true;
		m->next++;
		rc = key ? del_start(q, &m->d[i], key, strlen(key), vid, mdel_one) : -EINVAL;
		if (rc) {
			m->rcs[m->next - 1] = rc;
			m->busy[i] = false;
			m->done++;
			i--;
			continue;
		}
	}
}

static void
mdel_answer(struct s3_req *q)
{
	struct mdel *m = q->op;
	struct rgw_str x;

	s3_usage_flush(q);
	rgw_str_init(&x);
	rgw_str_adds(&x, XMLHD "<DeleteResult " XMLNS ">");
	for (size_t i = 0; i < m->nobj; i++) {
		const char *key = rgw_xml_child_text(m->objs[i], "Key");

		if (!key)
			key = "";
		if (!m->rcs[i]) {
			if (m->quiet)
				continue;
			const struct mres *r = &m->res[i];
			const char *vid = rgw_xml_child_text(m->objs[i], "VersionId");

			rgw_str_adds(&x, "<Deleted><Key>");
			rgw_str_xml(&x, key, strlen(key));
			rgw_str_adds(&x, "</Key>");
			if (vid) {
				rgw_str_adds(&x, "<VersionId>");
				rgw_str_xml(&x, vid, strlen(vid));
				rgw_str_adds(&x, "</VersionId>");
				if (r->dm)
					rgw_str_adds(&x, "<DeleteMarker>true</DeleteMarker>");
			} else if (r->has_vid && r->dm) {
				rgw_str_addf(
					&x,
					"<DeleteMarker>true</DeleteMarker><DeleteMarkerVersionId>"
					"%s</DeleteMarkerVersionId>",
					r->vid);
			}
			rgw_str_adds(&x, "</Deleted>");
		} else {
			rgw_str_adds(&x, "<Error><Key>");
			rgw_str_xml(&x, key, strlen(key));
			rgw_str_addf(&x, "</Key><Code>%s</Code><Message>%s</Message></Error>",
				     m->rcs[i] == -EINVAL   ? "InvalidArgument"
				     : m->rcs[i] == -EACCES ? "AccessDenied"
				     : m->rcs[i] == -ENOMEM || m->rcs[i] == -EBUSY ||
						     m->rcs[i] == -ECANCELED
					     ? "SlowDown"
					     : "InternalError",
				     m->rcs[i] == -EINVAL   ? "bad key"
				     : m->rcs[i] == -EACCES ? "Access Denied"
							    : cm_strerror(m->rcs[i]));
		}
	}
	rgw_str_adds(&x, "</DeleteResult>");
	s3_respond_xml(q, 200, NULL, &x);
	rgw_str_fini(&x);
}

static void
mdel_body(struct s3_req *q)
{
	struct mdel *m = calloc(1, sizeof(*m));
	char err[128];
	size_t n = 0;
	const char *quiet;

	if (!m) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	q->op = m;
	q->op_free = mdel_free;
	if (rgw_xml_parse(q->body.p ? q->body.p : "", q->body.len, &m->x, err, sizeof(err)) ||
	    strcmp(m->x->name, "Delete")) {
		s3_error(q, 400, "MalformedXML", "the XML you provided was not well-formed");
		return;
	}
	for (const struct rgw_xml *c = m->x->child; c; c = c->next)
		if (!strcmp(c->name, "Object"))
			n++;
	if (n == 0 || n > 1000) {
		s3_error(q, 400, "MalformedXML", "a Delete takes 1 to 1,000 objects");
		return;
	}
	quiet = rgw_xml_child_text(m->x, "Quiet");
	m->quiet = quiet && !strcasecmp(quiet, "true");
	if (!(m->objs = calloc(n, sizeof(*m->objs))) || !(m->rcs = calloc(n, sizeof(int))) ||
	    !(m->res = calloc(n, sizeof(*m->res)))) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	for (const struct rgw_xml *c = m->x->child; c; c = c->next)
		if (!strcmp(c->name, "Object"))
			m->objs[m->nobj++] = c;
	mdel_pump(q);
}

static void
mdel_loaded(struct s3_req *q)
{
	q->op_name = "DeleteObjects";
	/* (with a policy, each key's own verdict decides: mdel_fill) */
	if (!q->bc.pol && !s3_allow_bucket(q, &q->b, S3_P_WRITE)) {
		s3_deny(q);
		return;
	}
	s3_read_body(q, RGW_XML_MAX, mdel_body);
}

/* Whether q names a sub-resource (not only presigning parameters, x-id, response-*). */
static bool
subresource(const struct s3_req *q)
{
	for (size_t i = 0; i < q->u.nq; i++) {
		const char *k = q->u.q[i].key;

		if (strncmp(k, "X-Amz-", 6) && strncmp(k, "response-", 9) && strcmp(k, "x-id") &&
		    strcmp(k, "versionId") && strcmp(k, "uploadId") && strcmp(k, "partNumber") &&
		    strcmp(k, "uploads") && strcmp(k, "max-parts") &&
		    strcmp(k, "part-number-marker"))
			return true;
	}
	return false;
}

void
s3_object_op(struct s3_req *q)
{
	if (!q->key) {
		/* POST /bucket?delete */
		s3_bucket_load(q, mdel_loaded);
		return;
	}
	if (rgw_uri_q(&q->u, "tagging")) {
		s3_obj_tagging(q);
		return;
	}
	if (rgw_uri_q(&q->u, "acl")) {
		s3_obj_acl(q);
		return;
	}
	if (subresource(q)) {
		s3_error(q, 501, "NotImplemented", "this object sub-resource is not implemented");
		return;
	}
	if (q->h->method == RGW_M_POST) {
		if (rgw_uri_q(&q->u, "uploads"))
			s3_mp_initiate(q);
		else if (rgw_uri_q(&q->u, "uploadId"))
			s3_mp_complete(q);
		else
			s3_error(q, 405, "MethodNotAllowed",
				 "this POST is not allowed on an object");
		return;
	}
	if (rgw_uri_q(&q->u, "uploadId") && q->h->method == RGW_M_GET) {
		s3_mp_list_parts(q);
		return;
	}
	if (rgw_uri_q(&q->u, "uploadId") && q->h->method == RGW_M_DELETE) {
		s3_mp_abort(q);
		return;
	}
	if (rgw_uri_q(&q->u, "uploadId") && q->h->method != RGW_M_PUT) {
		s3_error(q, 405, "MethodNotAllowed", "the method is not allowed on an upload");
		return;
	}
	if (rgw_uri_q(&q->u, "uploads") ||
	    (rgw_uri_q(&q->u, "partNumber") && !rgw_uri_q(&q->u, "uploadId") &&
	     q->h->method != RGW_M_GET && q->h->method != RGW_M_HEAD)) {
		s3_error(q, 501, "NotImplemented", "this object sub-resource is not implemented");
		return;
	}
	switch (q->h->method) {
	case RGW_M_PUT:
		s3_bucket_load(q, put_loaded);
		return;
	case RGW_M_GET:
	case RGW_M_HEAD:
		s3_bucket_load(q, get_loaded);
		return;
	case RGW_M_DELETE:
		s3_bucket_load(q, delete_loaded);
		return;
	default:
		s3_error(q, 405, "MethodNotAllowed", "the method is not allowed on an object");
		return;
	}
}
