/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The source side of CopyObject and UploadPartCopy (docs/design/rgw.md
 * §11.3): x-amz-copy-source parsed, the source bucket and its index entry
 * read, the x-amz-copy-source-if-* conditions checked on that entry, its
 * layout (plain or a manifest's parts) loaded; then the PUT path
 * (s3_object.c) writes the destination from s3_copy_read's pieces instead
 * of a request body, with its pending marker, commit and part record
 * unchanged.
 */
#include "rgw_int.h"
#include "rgw/cond.h"
#include "cm/log.h"

CM_LOG_SUBSYS(rgw);

void
s3_copy_free(struct s3_copy *c)
{
	if (!c)
		return;
	rgw_copy_source_fini(&c->cs);
	s3_bconf_fini(&c->sbc);
	free(c->want.key);
	cairn_kvs_free(c->kvs, c->n);
	s3_vread_fini(&c->vr);
	s3_shwait_fini(&c->w);
	rgw_entry_fini(&c->e);
	rgw_layout_fini(&c->l);
	free(c->mbuf);
	rgw__buf_put(c->q->t, c->buf);
	if (c->own_io)
		cairn_ioctx_destroy(c->io);
	free(c);
}

static void
manifest_done(void *arg, int rc)
{
	struct s3_copy *c = arg;
	struct s3_req *q = c->q;

	q->pending--;
	if (!rc)
		rc = c->mrval;
	if (!rc)
		rc = rgw_layout_manifest(&c->l, c->mbuf, c->mlen, c->e.size);
	if (rc) {
		CM_ERR("%s: copy source %s/%.*s: its manifest: %s", rgw_req_id(q->r), c->cs.bucket,
		       (int)c->cs.key_len, c->cs.key, cm_strerror(rc));
		s3_error(q, 500, "InternalError", "the copy source's manifest cannot be read");
		return;
	}
	c->next(q);
}

/* The copied range, the size limit, then the layout. */
static void
src_ready(struct s3_copy *c)
{
	struct s3_req *q = c->q;
	const char *range = rgw_http_hdr(q->h, "x-amz-copy-source-range");
	cairn_op_t *op;
	char oid[64];
	int rc;

	c->off = 0;
	c->len = c->e.size;
	if (range && !c->part) {
		s3_error(q, 400, "InvalidArgument",
			 "x-amz-copy-source-range is for UploadPartCopy only");
		return;
	}
	if (range && (rc = rgw_copy_range_parse(range, c->e.size, &c->off, &c->len))) {
		s3_error(q, 400, "InvalidArgument",
			 rc == -ERANGE ? "the range is beyond the end of the copy source"
				       : "x-amz-copy-source-range must be bytes=first-last");
		return;
	}
	c->whole = c->off == 0 && c->len == c->e.size;
	c->pos = c->off;
	if (c->len > RGW_MAX_PUT) {
		s3_error(q, 400, "InvalidRequest",
			 "the copy source is larger than the maximum allowable size for a copy "
			 "source: 5368709120 (copy it by parts: UploadPartCopy)");
		return;
	}
	if (!(c->e.flags & RGW_ENTRY_MULTIPART) || c->len == 0) {
		rgw_layout_single(&c->l, c->e.inst, c->e.size);
		c->next(q);
		return;
	}
	if ((rc = s3_manifest_op(&c->e, &op, &c->mbuf, &c->mlen, &c->mrval))) {
		s3_error(q, rc == -ENOMEM ? 503 : 500, rc == -ENOMEM ? "SlowDown" : "InternalError",
			 rc == -ENOMEM ? "out of memory" : "the copy source's manifest is damaged");
		return;
	}
	s3_data_oid(c->e.inst, 0, oid, sizeof(oid));
	if ((rc = rgw__aio(q->t, c->io, oid, op, manifest_done, c))) {
		s3_error_rc(q, rc, "reading the copy source's manifest");
		return;
	}
	q->pending++;
}

static void
entry_done(void *arg, int rc)
{
	struct s3_copy *c = arg;
	struct s3_req *q = c->q;
	const struct cairn_kv *e;
	enum rgw_cond_result cr;
	char etag[64], sk[RGW_VID_LEN + 1] = "";

	q->pending--;
	if (rc == -ENOENT) {
		s3_bucket_forget(q->g, c->cs.bucket);
		s3_error(q, 404, "NoSuchBucket", "the copy source's bucket does not exist");
		return;
	}
	if (!rc && s3_shard_wait(&c->w))
		return; /* (moved by a split: src_read again, from the first read) */
	if (!rc)
		rc = c->second ? c->rval : s3_vread_rc(&c->vr);
	if (rc) {
		s3_error_rc(q, rc, "reading the copy source's index entry");
		return;
	}
	if (c->second) {
		e = !c->rval && c->n == 1 ? &c->kvs[0] : NULL;
	} else {
		e = s3_vread_pick(&c->vr, c->cs.version, sk);
		if (e != s3_vread_cur(&c->vr))
			c->same = false; /* (an older version of the key itself: a restore) */
	}
	if (!e && sk[0]) {
		/* The null version is an older one: its record. */
		struct rgw_str k;
		cairn_op_t *op;

		rgw_str_init(&k);
		s3_version_key(c->cs.key, c->cs.key_len, sk, &k);
		free(c->want.key);
		c->want.key = rgw_str_take(&k, &c->want.klen);
		if (!c->want.key || !(op = cairn_op_create())) {
			s3_error(q, 503, "SlowDown", "out of memory");
			return;
		}
		c->second = true;
		c->same = false;
		cairn_kvs_free(c->kvs, c->n);
		c->kvs = NULL;
		c->n = 0;
		s3_shard_read(&c->shard, op);
		cairn_op_omap_get(op, &c->want, 1, &c->kvs, &c->n, &c->rval);
		if ((rc = rgw__aio(q->t, q->g->meta, c->shard.oid, op, entry_done, c))) {
			s3_error_rc(q, rc, "reading the copy source's index entry");
			return;
		}
		q->pending++;
		return;
	}
	if (e && rgw_entry_raw_flags(e->val, e->vlen) > 0 &&
	    (rgw_entry_raw_flags(e->val, e->vlen) & RGW_ENTRY_DELETE_MARKER)) {
		if (c->cs.version) {
			s3_error(q, 400, "InvalidRequest",
				 "the source version is a delete marker: it cannot be copied");
			return;
		}
		e = NULL;
	}
	if (!e) {
		if (!s3_access(q, &c->sb, &c->sbc, NULL, 0, "s3:ListBucket",
			       s3_acl_bucket(q, &c->sb, S3_P_READ)))
			s3_deny(q);
		else if (c->cs.version)
			s3_error(q, 404, "NoSuchVersion",
				 "the copy source's version does not exist");
		else
			s3_error(q, 404, "NoSuchKey", "the copy source does not exist");
		return;
	}
	if (rgw_entry_decode(e->val, e->vlen, &c->e)) {
		CM_ERR("%s: copy source %s/%.*s: the index entry does not decode", rgw_req_id(q->r),
		       c->cs.bucket, (int)c->cs.key_len, c->cs.key);
		s3_error(q, 500, "InternalError", "the copy source's index entry is damaged");
		return;
	}
	c->have_e = true;
	if (!s3_access(q, &c->sb, &c->sbc, c->cs.key, c->cs.key_len,
		       c->cs.version ? "s3:GetObjectVersion" : "s3:GetObject",
		       s3_acl_object(q, &c->sb, &c->e, S3_P_READ))) {
		s3_deny(q);
		return;
	}
	rgw_entry_etag(&c->e, etag, sizeof(etag));
	/* (S3: a copy condition that is "not modified" fails the copy: 412, never 304) */
	cr = rgw_cond_eval(rgw_http_hdr(q->h, "x-amz-copy-source-if-match"),
			   rgw_http_hdr(q->h, "x-amz-copy-source-if-unmodified-since"),
			   rgw_http_hdr(q->h, "x-amz-copy-source-if-none-match"),
			   rgw_http_hdr(q->h, "x-amz-copy-source-if-modified-since"), etag,
			   c->e.mtime_ns / 1000000000, true);
	if (cr != RGW_COND_OK) {
		s3_error(q, 412, "PreconditionFailed",
			 "at least one of the copy source preconditions you specified did not "
			 "hold");
		return;
	}
	src_ready(c);
}

/* The source key's entry (and its shard's range mark). */
static void
src_read(void *arg, int rc)
{
	struct s3_copy *c = arg;
	struct s3_req *q = c->q;
	cairn_op_t *op;

	if (rc == -ENOENT) {
		s3_error(q, 404, "NoSuchBucket", "the copy source's bucket does not exist");
		return;
	}
	if (rc || !(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown",
			 rc ? "the source bucket's index is being reorganised: retry"
			    : "out of memory");
		return;
	}
	c->second = false;
	s3_shard_read(&c->shard, op);
	s3_vread_op(&c->vr, op);
	if ((rc = rgw__aio(q->t, q->g->meta, c->shard.oid, op, entry_done, c))) {
		s3_error_rc(q, rc, "reading the copy source's index entry");
		return;
	}
	q->pending++;
}

static void
bucket_done(struct s3_req *q, void *arg, int rc)
{
	struct s3_copy *c = arg;
	const char *v = c->cs.version;

	if (rc == -ENOENT) {
		s3_error(q, 404, "NoSuchBucket", "the copy source's bucket does not exist");
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "reading the copy source's bucket");
		return;
	}
	if (!strcmp(c->sb.id, q->b.id)) {
		c->io = q->data;
	} else {
		if ((rc = cairn_ioctx_create(q->g->cl, q->g->data_pool, &c->io))) {
			s3_error_rc(q, rc, "the data pool");
			return;
		}
		c->own_io = true;
		if ((rc = cairn_ioctx_set_namespace(c->io, c->sb.id))) {
			s3_error_rc(q, rc, "the data pool");
			return;
		}
	}
	c->same = !strcmp(c->sb.id, q->b.id) && c->cs.key_len == q->key_len &&
		  !memcmp(c->cs.key, q->key, q->key_len);
	if (s3_vread_init(&c->vr, c->cs.key, c->cs.key_len, v && !strcmp(v, "null"),
			  v && strcmp(v, "null") ? v : NULL, false)) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	s3_shard_pick(&c->sb, &c->sbc, c->cs.key, c->cs.key_len, &c->shard);
	s3_shwait_init_read(&c->w, q, c->cs.bucket, c->sb.id, &c->shard, c->cs.key, c->cs.key_len,
			    src_read, c);
	src_read(c, 0);
}

void
s3_copy_open(struct s3_req *q, bool part, struct s3_copy **cp, s3_step next)
{
	struct s3_copy *c = calloc(1, sizeof(*c));
	int rc;

	*cp = c;
	if (!c) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	c->q = q;
	c->part = part;
	c->next = next;
	rc = rgw_copy_source_parse(rgw_http_hdr(q->h, "x-amz-copy-source"), &c->cs);
	if (rc == -ENOMEM) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	if (rc) {
		s3_error(q, 400, "InvalidArgument",
			 "x-amz-copy-source must be bucket/key (URL-encoded), with an optional "
			 "?versionId=");
		return;
	}
	if (c->cs.key_len > RGW_KEY_MAX) {
		s3_error(q, 400, "KeyTooLongError", "the copy source's key is too long");
		return;
	}
	if (c->cs.version && strcmp(c->cs.version, "null") && !rgw_vid_ok(c->cs.version)) {
		s3_error(q, 400, "InvalidArgument", "invalid version id specified");
		return;
	}
	if (!rgw_key_ok(c->cs.key, c->cs.key_len)) {
		s3_error(q, 400, "InvalidArgument", "the copy source's key is not valid");
		return;
	}
	if (!rgw_bucket_name_ok(c->cs.bucket)) {
		s3_error(q, 404, "NoSuchBucket", "the copy source's bucket does not exist");
		return;
	}
	s3_bucket_get(q, c->cs.bucket, &c->sb, &c->sbc, bucket_done, c);
}

static void
read_done(void *arg, int rc)
{
	struct s3_copy *c = arg;
	struct s3_req *q = c->q;
	size_t want = c->want_n;

	q->pending--;
	c->reading = false;
	if (!rc && c->rrval)
		rc = c->rrval;
	if (!rc && c->got != want)
		rc = -EIO;
	if (rc) {
		CM_ERR("%s: copy source %s/%.*s: reading at %" PRIu64 ": %s", rgw_req_id(q->r),
		       c->cs.bucket, (int)c->cs.key_len, c->cs.key, c->pos,
		       rc == -EIO ? "a short read" : cm_strerror(rc));
		c->dcb(q, NULL, 0, rc);
		return;
	}
	c->pos += want;
	c->dcb(q, c->buf, want, 0);
}

int
s3_copy_read(struct s3_copy *c, s3_copy_data_cb cb)
{
	struct s3_req *q = c->q;
	size_t pi = rgw_layout_find(&c->l, c->pos);
	uint64_t po = c->pos - c->l.starts[pi], in = po % RGW_CHUNK;
	cairn_op_t *op;
	char oid[64];
	int rc;

	if (!c->buf && !(c->buf = rgw__buf_get(q->t)))
		return -ENOMEM;
	if (!(op = cairn_op_create()))
		return -ENOMEM;
	/* (one data object's bytes at most: a piece never crosses objects or parts) */
	c->want_n = (size_t)CM_MIN(CM_MIN((uint64_t)RGW_CHUNK - in, c->l.parts[pi].size - po),
				   c->off + c->len - c->pos);
	c->got = 0;
	c->rrval = 0;
	c->dcb = cb;
	s3_data_oid(c->l.parts[pi].inst, po / RGW_CHUNK, oid, sizeof(oid));
	cairn_op_read(op, in, c->want_n, c->buf, &c->got, &c->rrval);
	if ((rc = rgw__aio(q->t, c->io, oid, op, read_done, c)))
		return rc;
	c->reading = true;
	q->pending++;
	return 0;
}

bool
s3_copy_eof(const struct s3_copy *c)
{
	return c->pos >= c->off + c->len;
}
