/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Service and bucket operations: ListBuckets, CreateBucket, HeadBucket,
 * DeleteBucket, and the bucket's sub-resources we answer (location,
 * versioning, acl, ...).
 *
 * CreateBucket: the index shard is made first, then the bucket record
 * (exclusive create: the commit point; a name is taken once), then the
 * owner's list. A crash in between leaves at worst an index shard nothing
 * points at, or a bucket missing from its owner's list (a second create by
 * the owner puts it back).
 * DeleteBucket: the shard's range guard is changed and its emptiness read
 * in one op, so a PUT racing the delete fails its guard instead of landing
 * in an index that is about to go.
 */
#include "rgw_int.h"
#include "rgw/cors.h"
#include "rgw/lc.h"
#include "rgw/policy.h"
#include "rgw/xml.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/random.h"

CM_LOG_SUBSYS(rgw);

#define XMLNS         "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""
#define XMLHD         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define DB_NOTES_PAGE 1000 /* DeleteBucket reads retired shards' notes this many at once */
#define DB_RM_WINDOW  32   /* and removes shard objects this many at once */

struct bop {
	struct cairn_kv *kvs, *pkvs, *ukvs;
	size_t n, pn, un;
	bool more, pmore, umore;
	int rval, rval2, prval, urval;
	char buf[4096];
	size_t len;
	char *json;
	struct s3_shard shard;
	size_t idx;            /* DeleteBucket: the map's shard at hand (closed in map order) */
	struct cairn_kv *rkvs; /* DeleteBucket: the shards noted retired (out of the map) */
	size_t rn;
	bool rmore;
	bool paging; /* DeleteBucket: reading notes past the first page, before the record goes */
	int rrval;
	/* DeleteBucket: shard objects to remove (numbers), DB_RM_WINDOW at a time, then rm_then */
	uint32_t *rm;
	size_t rm_n, rm_cap, rm_next, rm_busy;
	int rm_err;
	void (*rm_then)(struct s3_req *q);
	struct cm_timer retry; /* DeleteBucket: a shard was splitting or merging */
};

static void
bop_free(struct s3_req *q)
{
	struct bop *b = q->op;

	if (!b)
		return;
	if (cm_timer_armed(&b->retry))
		cm_timer_cancel(q->t->r, &b->retry);
	cairn_kvs_free(b->kvs, b->n);
	cairn_kvs_free(b->pkvs, b->pn);
	cairn_kvs_free(b->ukvs, b->un);
	cairn_kvs_free(b->rkvs, b->rn);
	free(b->rm);
	free(b->json);
	free(b);
	q->op = NULL;
}

static struct bop *
bop_new(struct s3_req *q)
{
	struct bop *b = calloc(1, sizeof(*b));

	if (!b) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return NULL;
	}
	q->op = b;
	q->op_free = bop_free;
	return b;
}

void
s3_owner_xml(struct rgw_str *x, const char *uid)
{
	rgw_str_adds(x, "<Owner><ID>");
	rgw_str_xml(x, uid, strlen(uid));
	rgw_str_adds(x, "</ID><DisplayName>");
	rgw_str_xml(x, uid, strlen(uid));
	rgw_str_adds(x, "</DisplayName></Owner>");
}

/* ---- ListBuckets ---- */

static void
lb_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct bop *b = q->op;
	struct rgw_str x;

	q->pending--;
	if (!rc && b->rval)
		rc = b->rval;
	if (rc && rc != -ENOENT) {
		s3_error_rc(q, rc, "listing the buckets");
		return;
	}
	rgw_str_init(&x);
	rgw_str_adds(&x, XMLHD "<ListAllMyBucketsResult " XMLNS ">");
	s3_owner_xml(&x, q->uid);
	rgw_str_adds(&x, "<Buckets>");
	for (size_t i = 0; !rc && i < b->n; i++) {
		int64_t t = 0;
		char when[40];

		if (b->kvs[i].vlen == 8)
			for (int k = 7; k >= 0; k--)
				t = t << 8 | ((uint8_t *)b->kvs[i].val)[k];
		rgw__iso8601(t * 1000000000, when, sizeof(when));
		rgw_str_adds(&x, "<Bucket><Name>");
		rgw_str_xml(&x, b->kvs[i].key, b->kvs[i].klen);
		rgw_str_addf(&x, "</Name><CreationDate>%s</CreationDate></Bucket>", when);
	}
	rgw_str_adds(&x, "</Buckets></ListAllMyBucketsResult>");
	s3_respond_xml(q, 200, NULL, &x);
	rgw_str_fini(&x);
}

void
s3_list_buckets(struct s3_req *q)
{
	struct bop *b;
	cairn_op_t *op;
	char oid[96];

	q->op_name = "ListBuckets";
	if (q->anon) {
		s3_error(q, 403, "AccessDenied", "anonymous users own no buckets");
		return;
	}
	if (!(b = bop_new(q)))
		return;
	if (!(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	snprintf(oid, sizeof(oid), "buckets.%s", q->uid);
	cairn_op_omap_list(op, NULL, 0, NULL, 0, 1000, &b->kvs, &b->n, &b->more, &b->rval);
	s3_submit(q, q->g->meta, oid, op, lb_done);
}

/* ---- CreateBucket ---- */

static void cb_record_done(void *arg, int rc);

static void
cb_list_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	char hd[128];

	q->pending--;
	if (rc) {
		s3_error_rc(q, rc, "adding the bucket to its owner's list");
		return;
	}
	snprintf(hd, sizeof(hd), "Location: /%s\r\n", q->bucket);
	s3_respond_xml(q, 200, hd, NULL);
}

/* Put q's bucket in its owner's list (created: its creation time), then cb. */
static void
add_to_owner(struct s3_req *q, rgw_aio_cb cb)
{
	cairn_op_t *op = cairn_op_create();
	uint8_t t[8];
	char oid[96];

	if (!op) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	for (int i = 0; i < 8; i++)
		t[i] = (uint8_t)((uint64_t)q->b.created >> (8 * i));
	snprintf(oid, sizeof(oid), "buckets.%s", q->uid);
	cairn_op_omap_set(op, q->bucket, strlen(q->bucket), t, 8);
	s3_submit(q, q->g->meta, oid, op, cb);
}

static void
cb_owned_done(void *arg, int rc)
{
	struct s3_req *q = arg;

	q->pending--;
	if (rc) {
		s3_error_rc(q, rc, "adding the bucket to its owner's list");
		return;
	}
	s3_error(q, 409, "BucketAlreadyOwnedByYou",
		 "the bucket you tried to create already exists, and you own it");
}

static void
cb_existing_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct bop *b = q->op;
	struct rgw_bucket old;

	q->pending--;
	if (!rc && b->rval)
		rc = b->rval;
	if (rc || rgw_bucket_decode(b->buf, b->len, &old)) {
		s3_error(q, 409, "BucketAlreadyExists",
			 "the requested bucket name is not available: select another name");
		return;
	}
	if (strcmp(old.owner, q->uid)) {
		s3_error(q, 409, "BucketAlreadyExists",
			 "the requested bucket name is not available: select another name");
		return;
	}
	/* Ours already: put it back in our list (a crash may have left it out), then say so. */
	q->b = old;
	add_to_owner(q, cb_owned_done);
}

static void
cb_ignore(void *arg, int rc)
{
	(void)arg;
	(void)rc;
}

static void
cb_record_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct bop *b = q->op;
	cairn_op_t *op;
	char oid[128];

	q->pending--;
	if (rc == -EEXIST) {
		/* Drop the shard we made for nothing, and look at who has the name. */
		if ((op = cairn_op_create())) {
			cairn_op_remove(op);
			rgw__aio(q->t, q->g->meta, b->shard.oid, op, cb_ignore, NULL);
		}
		if (!(op = cairn_op_create())) {
			s3_error(q, 503, "SlowDown", "out of memory");
			return;
		}
		snprintf(oid, sizeof(oid), "bucket.%s", q->bucket);
		cairn_op_getxattr(op, "rgw.bucket", b->buf, sizeof(b->buf), &b->len, &b->rval);
		s3_submit(q, q->g->meta, oid, op, cb_existing_done);
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "writing the bucket record");
		return;
	}
	s3_bucket_forget(q->g, q->bucket);
	add_to_owner(q, cb_list_done);
}

static void
cb_shard_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct bop *b = q->op;
	cairn_op_t *op;
	char oid[128];

	q->pending--;
	if (rc) {
		s3_error_rc(q, rc, "making the bucket index");
		return;
	}
	if (!(b->json = rgw_bucket_encode(&q->b)) || !(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	snprintf(oid, sizeof(oid), "bucket.%s", q->bucket);
	cairn_op_create_object(op, true);
	cairn_op_setxattr(op, "rgw.bucket", b->json, strlen(b->json));
	cairn_op_setxattr(op, "rgw.id", q->b.id, 32);
	s3_submit(q, q->g->meta, oid, op, cb_record_done);
}

static void
cb_body_read(struct s3_req *q)
{
	struct bop *b;
	cairn_op_t *op;
	uint8_t id[16];
	const char *acl = rgw_http_hdr(q->h, "x-amz-acl");

	if (q->body.len) {
		struct rgw_xml *x = NULL;
		char err[128];
		const char *loc;

		if (rgw_xml_parse(q->body.p, q->body.len, &x, err, sizeof(err))) {
			s3_error(q, 400, "MalformedXML", err);
			return;
		}
		loc = rgw_xml_child_text(x, "LocationConstraint");
		if (strcmp(x->name, "CreateBucketConfiguration")) {
			rgw_xml_free(x);
			s3_error(q, 400, "MalformedXML", "expected CreateBucketConfiguration");
			return;
		}
		if (loc && *loc && strcmp(loc, q->g->region)) {
			rgw_xml_free(x);
			s3_error(q, 400, "InvalidLocationConstraint",
				 "the location constraint is not this gateway's region");
			return;
		}
		rgw_xml_free(x);
	}
	if (acl && !s3_canned_ok(acl)) {
		s3_error(q, 400, "InvalidArgument", "unknown canned ACL in x-amz-acl");
		return;
	}
	if (!(b = bop_new(q)))
		return;
	memset(&q->b, 0, sizeof(q->b));
	snprintf(q->b.name, sizeof(q->b.name), "%s", q->bucket);
	snprintf(q->b.owner, sizeof(q->b.owner), "%s", q->uid);
	snprintf(q->b.location, sizeof(q->b.location), "%s", q->g->region);
	snprintf(q->b.acl, sizeof(q->b.acl), "%s", acl ? acl : "private");
	q->b.created = rgw__now_ns() / 1000000000;
	cm_random_bytes(id, sizeof(id));
	rgw_hex(id, 16, q->b.id);
	s3_shard_pick(&q->b, NULL, "", 0, &b->shard); /* (shard 0, every key) */
	if (!(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	cairn_op_create_object(op, true);
	cairn_op_setxattr(op, RGW_RANGE_XATTR, b->shard.range, b->shard.rlen);
	cairn_op_setxattr(op, "rgw.bucket", q->bucket, strlen(q->bucket));
	s3_submit(q, q->g->meta, b->shard.oid, op, cb_shard_done);
}

static void
create_bucket(struct s3_req *q)
{
	q->op_name = "CreateBucket";
	if (q->anon) {
		s3_error(q, 403, "AccessDenied", "anonymous users cannot create buckets");
		return;
	}
	if (!rgw_bucket_name_ok(q->bucket)) {
		s3_error(q, 400, "InvalidBucketName", "the bucket name is not valid");
		return;
	}
	s3_read_body(q, 64 << 10, cb_body_read);
}

/* ---- DeleteBucket ---- */

static void
answer_204(struct s3_req *q)
{
	s3_respond_xml(q, 204, NULL, NULL);
}

static void
answer_200(struct s3_req *q)
{
	s3_respond_xml(q, 200, NULL, NULL);
}

static void
db_list_done(void *arg, int rc)
{
	struct s3_req *q = arg;

	q->pending--;
	if (rc)
		CM_WARN_RC(rc, "bucket %s: removing it from %s's list", q->bucket, q->uid);
	/* (the other gateways forget the bucket before the client hears it is gone) */
	s3_bucket_changed(q, answer_204);
}

/* Shard i of the bucket's map into s. */
static void
map_shard(struct s3_req *q, size_t i, struct s3_shard *s)
{
	const struct rgw_shard_span *v = &q->bc.shards.v[i];

	s3_shard_pick(&q->b, &q->bc, v->lolen ? (const char *)v->lo : "", v->lolen, s);
}

static void db_close(struct s3_req *q);
static void db_notes(struct s3_req *q, const void *after, size_t alen);
static void db_page_done(void *arg, int rc);
static void db_page_removed(struct s3_req *q);
static void db_page_dropped(void *arg, int rc);
static void db_notes_next(struct s3_req *q, bool kept);
static void db_retired_add(struct bop *b);
static void db_shards_gone(struct s3_req *q);
static void rm_add(struct bop *b, uint32_t num);
static void rm_run(struct s3_req *q, void (*then)(struct s3_req *q));

static void
db_record_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct bop *b = q->op;

	q->pending--;
	if (rc == -ECANCELED || rc == -ENOENT) {
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "removing the bucket record");
		return;
	}
	s3_bucket_forget(q->g, q->bucket);
	/* The index shards go (their objects are gone: the bucket was empty), and
	 * those noted retired (merged away, or a split's copy undone) since the
	 * pages read before. */
	b->rm_n = 0;
	b->rm_err = 0;
	for (size_t i = 0; i < q->bc.shards.n; i++)
		rm_add(b, q->bc.shards.v[i].num);
	db_retired_add(b);
	rm_run(q, db_shards_gone);
}

/* The bucket's shard objects gone: its quota counter, then the owner's list. */
static void
db_shards_gone(struct s3_req *q)
{
	struct bop *b = q->op;
	cairn_op_t *op;
	char oid[96];

	if (b->rm_err)
		CM_ERR_RC(b->rm_err,
			  "bucket %s (id %s): removing its index shard objects (some are left in "
			  "pool %s: idx.%s.*)",
			  q->bucket, q->b.id, q->g->conf.meta_pool, q->b.id);
	if ((op = cairn_op_create())) {
		/* (its quota counter, if it ever had a quota) */
		snprintf(oid, sizeof(oid), "busage.%s", q->b.id);
		cairn_op_remove(op);
		rgw__aio(q->t, q->g->meta, oid, op, cb_ignore, NULL);
	}
	if (!(op = cairn_op_create())) {
		s3_bucket_changed(q, answer_204);
		return;
	}
	snprintf(oid, sizeof(oid), "buckets.%s", q->b.owner);
	cairn_op_omap_rm(op, q->bucket, strlen(q->bucket));
	s3_submit(q, q->g->meta, oid, op, db_list_done);
}

/* ---- DeleteBucket: shard objects removed a window at a time ---- */

static void
rm_add(struct bop *b, uint32_t num)
{
	if (b->rm_n == b->rm_cap) {
		size_t cap = b->rm_cap ? 2 * b->rm_cap : 64;
		uint32_t *v = realloc(b->rm, cap * sizeof(*v));

		if (!v) {
			b->rm_err = -ENOMEM;
			return;
		}
		b->rm = v;
		b->rm_cap = cap;
	}
	b->rm[b->rm_n++] = num;
}

static void rm_pump(struct s3_req *q);

static void
rm_one_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct bop *b = q->op;

	q->pending--;
	b->rm_busy--;
	if (rc && rc != -ENOENT && !b->rm_err)
		b->rm_err = rc;
	rm_pump(q);
}

static void
rm_pump(struct s3_req *q)
{
	struct bop *b = q->op;

	while (b->rm_busy < DB_RM_WINDOW && b->rm_next < b->rm_n) {
		cairn_op_t *op = cairn_op_create();
		char oid[128];
		int rc;

		if (!op) {
			b->rm_err = -ENOMEM;
			b->rm_next = b->rm_n;
			break;
		}
		rgw_shard_oid(q->b.id, b->rm[b->rm_next++], oid, sizeof(oid));
		cairn_op_remove(op);
		if ((rc = rgw__aio(q->t, q->g->meta, oid, op, rm_one_done, q))) {
			if (rc == -EAGAIN && b->rm_busy) {
				b->rm_next--; /* (the throttle full: again when one of ours ends) */
				break;
			}
			b->rm_err = rc;
			b->rm_next = b->rm_n;
			break;
		}
		b->rm_busy++;
		q->pending++;
	}
	if (!b->rm_busy && b->rm_next >= b->rm_n)
		b->rm_then(q);
}

/* Remove the shards in b->rm (errors in b->rm_err; -ENOENT is none), then then(q). */
static void
rm_run(struct s3_req *q, void (*then)(struct s3_req *q))
{
	struct bop *b = q->op;

	b->rm_next = b->rm_busy = 0;
	b->rm_then = then;
	rm_pump(q);
}

static void db_reopen(struct s3_req *q);

static void
db_retry_fired(struct cm_timer *t)
{
	struct s3_req *q = t->arg;

	q->pending--;
	s3_index_restart(q);
}

/*
 * A shard was changing (a split or merge freezes it for about a second):
 * DeleteBucket starts again with the map read anew, after 100 ms doubling
 * to 800 ms, S3_RESTARTS_MAX times (about 5 s), then 409.
 */
static void
db_conflict(struct s3_req *q)
{
	struct bop *b = q->op;

	if (q->restarts >= S3_RESTARTS_MAX) {
		s3_error(q, 409, "OperationAborted",
			 "a conflicting operation on this bucket is in progress: try again");
		return;
	}
	cm_timer_init(&b->retry, db_retry_fired, q);
	cm_timer_arm(q->t->r, &b->retry, 100u << CM_MIN(q->restarts, 3));
	q->pending++;
}

static void
db_reopen_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct bop *b = q->op;

	q->pending--;
	if (rc)
		CM_ERR_RC(rc, "bucket %s: reopening its index shard %s after a refused delete",
			  q->bucket, b->shard.oid);
	db_reopen(q);
}

/* Reopen the shards closed (those before b->idx, and b->idx if b->rval2), last first. */
static void
db_reopen(struct s3_req *q)
{
	struct bop *b = q->op;
	cairn_op_t *op;

	if (b->rval2) {
		b->rval2 = 0;
	} else if (b->idx-- == 0) {
		if (b->rval == -ECANCELED)
			db_conflict(q);
		else
			s3_error(q, 409, "BucketNotEmpty",
				 "the bucket you tried to delete is not empty (objects, or "
				 "multipart uploads in progress: abort them first)");
		return;
	}
	map_shard(q, b->idx, &b->shard);
	if (!(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, RGW_RANGE_CLOSED,
			  sizeof(RGW_RANGE_CLOSED) - 1);
	cairn_op_setxattr(op, RGW_RANGE_XATTR, b->shard.range, b->shard.rlen);
	s3_submit(q, q->g->meta, b->shard.oid, op, db_reopen_done);
}

static void
db_close_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct bop *b = q->op;
	bool empty = true;

	q->pending--;
	if ((rc == -ECANCELED || rc == -ENOENT) && b->idx) {
		/* (a later shard changed meanwhile: a split, or a delete): the ones before
		 * reopen */
		s3_bucket_forget(q->g, q->bucket);
		b->rval = -ECANCELED;
		b->rval2 = 0;
		db_reopen(q);
		return;
	}
	if (rc == -ECANCELED || rc == -ENOENT) {
		s3_bucket_forget(q->g, q->bucket);
		db_conflict(q);
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "closing the bucket index");
		return;
	}
	for (size_t i = 0; i < b->n; i++)
		if (b->kvs[i].klen && ((uint8_t *)b->kvs[i].key)[0] != 0xff)
			empty = false;
	if (b->prval || b->urval || b->pn || b->un)
		empty = false; /* (a PUT or a multipart upload in progress) */
	if (!empty) {
		b->rval = 0;
		b->rval2 = 1; /* (this one too) */
		db_reopen(q);
		return;
	}
	if (++b->idx < q->bc.shards.n) {
		db_close(q);
		return;
	}
	b->paging = true;
	db_notes(q, NULL, 0);
}

/* The shards named by the retired notes in b->rkvs, into the removal list. */
static void
db_retired_add(struct bop *b)
{
	for (size_t i = 0; !b->rrval && i < b->rn; i++) {
		uint32_t num;

		if (!rgw_retired_num(b->rkvs[i].key, b->rkvs[i].klen, &num))
			rm_add(b, num);
	}
}

/*
 * Every shard closed and empty: the bucket's record goes, with a read of the
 * retired shards' notes in the same op (up to DB_NOTES_PAGE; a bucket with more
 * has its notes paged through first, from after, their shards removed).
 */
static void
db_notes(struct s3_req *q, const void *after, size_t alen)
{
	struct bop *b = q->op;
	cairn_op_t *op;
	char oid[96];

	if (!(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	snprintf(oid, sizeof(oid), "bucket.%s", q->bucket);
	cairn_op_cmpxattr(op, "rgw.id", CAIRN_CMP_EQ, q->b.id, 32);
	/* (reads see the object before the op's writes: the retired shards' notes) */
	cairn_op_omap_list(op, after, alen, RGW_RETIRED_PREFIX, sizeof(RGW_RETIRED_PREFIX) - 1,
			   DB_NOTES_PAGE, &b->rkvs, &b->rn, &b->rmore, &b->rrval);
	if (b->paging) {
		s3_submit(q, q->g->meta, oid, op, db_page_done);
		return;
	}
	cairn_op_remove(op);
	s3_submit(q, q->g->meta, oid, op, db_record_done);
}

/*
 * A page of retired notes read (the record kept): their shards go, then their
 * notes (so the record's op reads only what was noted since), then the next page.
 */
static void
db_page_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct bop *b = q->op;

	q->pending--;
	if (rc == -ECANCELED || rc == -ENOENT) {
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
		return;
	}
	if (rc || b->rrval || !b->rn) {
		/* (a failed read: the record's op reads the first page again) */
		db_notes_next(q, false);
		return;
	}
	b->rm_n = 0;
	b->rm_err = 0;
	db_retired_add(b);
	rm_run(q, db_page_removed);
}

static void
db_page_removed(struct s3_req *q)
{
	struct bop *b = q->op;
	cairn_op_t *op;
	char oid[300];

	if (b->rm_err || !(op = cairn_op_create())) {
		/* (the notes stay: the sweep, or the record's op, removes those shards) */
		db_notes_next(q, true);
		return;
	}
	snprintf(oid, sizeof(oid), "bucket.%s", q->bucket);
	cairn_op_cmpxattr(op, "rgw.id", CAIRN_CMP_EQ, q->b.id, 32);
	for (size_t i = 0; i < b->rn; i++)
		cairn_op_omap_rm(op, b->rkvs[i].key, b->rkvs[i].klen);
	s3_submit(q, q->g->meta, oid, op, db_page_dropped);
}

static void
db_page_dropped(void *arg, int rc)
{
	struct s3_req *q = arg;

	q->pending--;
	if (rc == -ECANCELED || rc == -ENOENT) {
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
		return;
	}
	db_notes_next(q, rc != 0);
}

/* After a page: the next one (after its last key if its notes are still there), or the
 * record's op when it was the last. */
static void
db_notes_next(struct s3_req *q, bool kept)
{
	struct bop *b = q->op;
	char last[RGW_RETIRED_KEY_LEN + 1];
	size_t llen = 0;
	bool more = b->rmore && b->rn && !b->rrval;

	if (more && kept && b->rkvs[b->rn - 1].klen <= sizeof(last)) {
		llen = b->rkvs[b->rn - 1].klen;
		memcpy(last, b->rkvs[b->rn - 1].key, llen);
	}
	cairn_kvs_free(b->rkvs, b->rn);
	b->rkvs = NULL;
	b->rn = 0;
	b->rrval = 0;
	b->rmore = false;
	b->paging = more && (!kept || llen);
	db_notes(q, llen ? last : NULL, llen);
}

/*
 * Close shard b->idx to writers and read whether it is empty, in one op
 * (every shard in map order: a bucket is empty when each of them is).
 */
static void
db_close(struct s3_req *q)
{
	struct bop *b = q->op;
	cairn_op_t *op;

	cairn_kvs_free(b->kvs, b->n);
	cairn_kvs_free(b->pkvs, b->pn);
	cairn_kvs_free(b->ukvs, b->un);
	b->kvs = b->pkvs = b->ukvs = NULL;
	b->n = b->pn = b->un = 0;
	b->rval = b->prval = b->urval = 0;
	map_shard(q, b->idx, &b->shard);
	if (!(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	/* Close the shard to writers and read whether it is empty, in one op. */
	s3_shard_guard(&b->shard, op);
	cairn_op_setxattr(op, RGW_RANGE_XATTR, RGW_RANGE_CLOSED, sizeof(RGW_RANGE_CLOSED) - 1);
	cairn_op_omap_list(op, NULL, 0, NULL, 0, 1, &b->kvs, &b->n, &b->more, &b->rval);
	cairn_op_omap_list(op, NULL, 0, RGW_SYS_PENDING, 2, 1, &b->pkvs, &b->pn, &b->pmore,
			   &b->prval);
	cairn_op_omap_list(op, NULL, 0, RGW_SYS_UPLOAD, 2, 1, &b->ukvs, &b->un, &b->umore,
			   &b->urval);
	s3_submit(q, q->g->meta, b->shard.oid, op, db_close_done);
}

static void
delete_bucket(struct s3_req *q)
{
	struct bop *b;

	if (!(b = bop_new(q)))
		return;
	b->idx = 0;
	db_close(q);
}

/* ---- the bucket's own requests ---- */

static void
get_location(struct s3_req *q)
{
	struct rgw_str x;

	rgw_str_init(&x);
	rgw_str_adds(&x, XMLHD "<LocationConstraint " XMLNS ">");
	if (strcmp(q->b.location, "us-east-1"))
		rgw_str_xml(&x, q->b.location, strlen(q->b.location));
	rgw_str_adds(&x, "</LocationConstraint>");
	s3_respond_xml(q, 200, NULL, &x);
	rgw_str_fini(&x);
}

static void
get_versioning(struct s3_req *q)
{
	struct rgw_str x;

	rgw_str_init(&x);
	rgw_str_adds(&x, XMLHD "<VersioningConfiguration " XMLNS ">");
	if (q->b.versioning[0])
		rgw_str_addf(&x, "<Status>%s</Status>", q->b.versioning);
	rgw_str_adds(&x, "</VersioningConfiguration>");
	s3_respond_xml(q, 200, NULL, &x);
	rgw_str_fini(&x);
}

static void
get_acl(struct s3_req *q)
{
	struct rgw_str x;

	rgw_str_init(&x);
	s3_acl_xml(&x, q->b.owner, q->b.acl, NULL);
	s3_respond_xml(q, 200, NULL, &x);
	rgw_str_fini(&x);
}

static void
pba_done(void *arg, int rc)
{
	struct s3_req *q = arg;

	q->pending--;
	s3_bucket_forget(q->g, q->bucket);
	if (rc == -ECANCELED) {
		s3_error(q, 409, "OperationAborted",
			 "the bucket was changed at the same time: try again");
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "writing the bucket record");
		return;
	}
	s3_bucket_changed(q, answer_200);
}

/* The bucket record nb replaces what was loaded (a compare-and-swap), then pba_done. */
static void
swap_record(struct s3_req *q, const struct rgw_bucket *nb)
{
	char *old, *neu, oid[128];
	cairn_op_t *op;

	old = rgw_bucket_encode(&q->b);
	neu = rgw_bucket_encode(nb);
	if (!old || !neu || !(op = cairn_op_create())) {
		free(old);
		free(neu);
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	/* (the record as this gateway knows it: a concurrent change is not overwritten) */
	snprintf(oid, sizeof(oid), "bucket.%s", q->bucket);
	cairn_op_cmpxattr(op, "rgw.bucket", CAIRN_CMP_EQ, old, strlen(old));
	cairn_op_setxattr(op, "rgw.bucket", neu, strlen(neu));
	free(old);
	free(neu);
	s3_submit(q, q->g->meta, oid, op, pba_done);
}

/*
 * PUT ?versioning: <VersioningConfiguration><Status>Enabled|Suspended</Status>. A bucket
 * never goes back to unversioned; MFA delete is not supported.
 */
static void
put_versioning(struct s3_req *q)
{
	struct rgw_bucket nb = q->b;
	struct rgw_xml *x = NULL;
	const char *st, *mfa;
	char err[128];

	if (rgw_xml_parse(q->body.p, q->body.len, &x, err, sizeof(err)) ||
	    strcmp(x->name, "VersioningConfiguration")) {
		rgw_xml_free(x);
		s3_error(q, 400, "MalformedXML", "the XML is not a VersioningConfiguration");
		return;
	}
	st = rgw_xml_child_text(x, "Status");
	mfa = rgw_xml_child_text(x, "MfaDelete");
	if (mfa && !strcmp(mfa, "Enabled")) {
		rgw_xml_free(x);
		s3_error(q, 501, "NotImplemented", "MFA delete is not supported");
		return;
	}
	if (!st) {
		/* (no Status: nothing changes) */
		rgw_xml_free(x);
		s3_respond_xml(q, 200, NULL, NULL);
		return;
	}
	if (strcmp(st, "Enabled") && strcmp(st, "Suspended")) {
		rgw_xml_free(x);
		s3_error(q, 400, "MalformedXML", "Status must be Enabled or Suspended");
		return;
	}
	snprintf(nb.versioning, sizeof(nb.versioning), "%s", st);
	rgw_xml_free(x);
	if (!strcmp(nb.versioning, q->b.versioning)) {
		s3_respond_xml(q, 200, NULL, NULL);
		return;
	}
	swap_record(q, &nb);
}

/*
 * ---- configurations kept in an xattr of the bucket's record object ----
 * Lifecycle (rgw/lc.h; applied by the sweep, lc.c) and tagging: checked on
 * PUT, kept (lifecycle as sent, tags re-encoded), returned on GET, removed
 * on DELETE; every op guarded on the record's id (not a re-created bucket).
 */

struct bcfg {
	const char *sub, *xattr;
	size_t max;
	const char *nosuch, *nosuch_msg;
	const char *put_name, *get_name, *del_name;
	/* the PUT's body checked (400/501 answered: nonzero), what to keep into out */
	int (*check)(struct s3_req *q, struct rgw_str *out);
	const char *ctype; /* the GET's Content-Type header line (NULL: XML) */
	bool per_request;  /* read with the bucket's record (s3_bconf): its cache dropped */
	int put_status;    /* the PUT's answer (0: 200) */
};

static int lc_check(struct s3_req *q, struct rgw_str *out);
static int tags_check(struct s3_req *q, struct rgw_str *out);

static const struct bcfg bcfgs[] = {
	{ "lifecycle", "rgw.lc", RGW_LC_XML_MAX, "NoSuchLifecycleConfiguration",
	  "the lifecycle configuration does not exist", "PutBucketLifecycleConfiguration",
	  "GetBucketLifecycleConfiguration", "DeleteBucketLifecycle", lc_check, NULL, false, 0 },
	{ "tagging", "rgw.tags", 64u << 10, "NoSuchTagSet", "the tag set does not exist",
	  "PutBucketTagging", "GetBucketTagging", "DeleteBucketTagging", tags_check, NULL, false,
	  0 },
	{ "policy", "rgw.policy", RGW_POLICY_MAX, "NoSuchBucketPolicy",
	  "the bucket policy does not exist", "PutBucketPolicy", "GetBucketPolicy",
	  "DeleteBucketPolicy", s3_policy_check, "Content-Type: application/json\r\n", true, 204 },
	{ "cors", "rgw.cors", RGW_CORS_XML_MAX, "NoSuchCORSConfiguration",
	  "the CORS configuration does not exist", "PutBucketCors", "GetBucketCors",
	  "DeleteBucketCors", s3_cors_check, NULL, true, 0 },
};

struct cfgop {
	const struct bcfg *c;
	char *buf;
	size_t len;
	int rval;
	struct rgw_str keep;
};

static void
cfgop_free(struct s3_req *q)
{
	struct cfgop *o = q->op;

	if (o) {
		free(o->buf);
		rgw_str_fini(&o->keep);
	}
	free(o);
	q->op = NULL;
}

static void
cfg_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct cfgop *o = q->op;

	q->pending--;
	if (!rc && o->buf)
		rc = o->rval;
	if (rc == -ENODATA && q->h->method == RGW_M_DELETE)
		rc = 0; /* (none to delete: done) */
	if (rc == -ECANCELED || rc == -ENOENT) {
		s3_bucket_forget(q->g, q->bucket);
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
		return;
	}
	if (rc == -ENODATA && o->buf) {
		s3_error(q, 404, o->c->nosuch, o->c->nosuch_msg);
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "the bucket's configuration");
		return;
	}
	if (!o->buf && o->c->per_request) {
		/* (S3 answers a PutBucketPolicy with 204 too) */
		s3_bucket_changed(q, q->h->method == RGW_M_DELETE || o->c->put_status == 204
					     ? answer_204
					     : answer_200);
		return;
	}
	if (o->buf) {
		struct rgw_str x;

		rgw_str_init(&x);
		rgw_str_add(&x, o->buf, o->len);
		s3_respond_xml(q, 200, o->c->ctype, &x);
		rgw_str_fini(&x);
		return;
	}
	s3_respond_xml(q, q->h->method == RGW_M_DELETE ? 204 : 200, NULL, NULL);
}

static void
cfg_submit(struct s3_req *q, cairn_op_t *op)
{
	char oid[128];

	snprintf(oid, sizeof(oid), "bucket.%s", q->bucket);
	s3_submit(q, q->g->meta, oid, op, cfg_done);
}

static int
lc_check(struct s3_req *q, struct rgw_str *out)
{
	struct rgw_lc lc;
	char err[160];
	int rc = rgw_lc_parse(q->body.p, q->body.len, &lc, err, sizeof(err));

	if (rc == -ENOMEM) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return rc;
	}
	if (rc) {
		s3_error(q, rc == -EOPNOTSUPP ? 501 : 400,
			 rc == -EOPNOTSUPP ? "NotImplemented" : "MalformedXML", err);
		return rc;
	}
	rgw_lc_fini(&lc);
	rgw_str_add(out, q->body.p, q->body.len);
	return 0;
}

/* <Tagging><TagSet><Tag><Key/><Value/></Tag>...: S3's rules, 50 tags; kept re-encoded. */
static int
tags_check(struct s3_req *q, struct rgw_str *out)
{
	struct rgw_xml *x = NULL;
	const struct rgw_xml *set;
	struct rgw_str pk;
	size_t pos = 0;
	const char *k, *v;
	char err[128];
	int rc = 0;

	if (rgw_xml_parse(q->body.p ? q->body.p : "", q->body.len, &x, err, sizeof(err)) ||
	    strcmp(x->name, "Tagging") || !(set = rgw_xml_child(x, "TagSet"))) {
		rgw_xml_free(x);
		s3_error(q, 400, "MalformedXML", "the XML you provided was not well-formed");
		return -EBADMSG;
	}
	rgw_str_init(&pk);
	for (const struct rgw_xml *c = set->child; c && !rc; c = c->next) {
		if (strcmp(c->name, "Tag"))
			continue;
		if (!(k = rgw_xml_child_text(c, "Key"))) {
			rc = -EINVAL;
			break;
		}
		v = rgw_xml_child_text(c, "Value");
		rc = rgw_tags_add_n(&pk, k, strlen(k), v ? v : "", v ? strlen(v) : 0,
				    RGW_BUCKET_TAGS_MAX);
	}
	rgw_xml_free(x);
	if (rc) {
		rgw_str_fini(&pk);
		if (rc == -E2BIG)
			s3_error(q, 400, "BadRequest", "bucket tags cannot be more than 50");
		else
			s3_tags_error(q, rc);
		return rc;
	}
	rgw_str_adds(out, XMLHD "<Tagging " XMLNS "><TagSet>");
	while (pk.p && rgw_tags_next(pk.p, pk.len, &pos, &k, &v)) {
		rgw_str_adds(out, "<Tag><Key>");
		rgw_str_xml(out, k, strlen(k));
		rgw_str_adds(out, "</Key><Value>");
		rgw_str_xml(out, v, strlen(v));
		rgw_str_adds(out, "</Value></Tag>");
	}
	rgw_str_adds(out, "</TagSet></Tagging>");
	rgw_str_fini(&pk);
	return 0;
}

static struct cfgop *
cfgop_new(struct s3_req *q, const struct bcfg *c)
{
	struct cfgop *o = calloc(1, sizeof(*o));

	if (!o) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return NULL;
	}
	q->op = o;
	q->op_free = cfgop_free;
	o->c = c;
	rgw_str_init(&o->keep);
	return o;
}

/* The body read (s3_read_body held q->op meanwhile): checked, kept. */
static void
cfg_put(struct s3_req *q, const struct bcfg *c)
{
	struct cfgop *o = cfgop_new(q, c);
	cairn_op_t *op;

	if (!o || o->c->check(q, &o->keep))
		return;
	if (o->keep.len > o->c->max) {
		/* (kept re-encoded: what GET reads back must fit what it reads) */
		s3_error(q, 400, "InvalidRequest", "the configuration is too large once stored");
		return;
	}
	if (o->keep.oom || !(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	cairn_op_cmpxattr(op, "rgw.id", CAIRN_CMP_EQ, q->b.id, 32);
	cairn_op_setxattr(op, o->c->xattr, o->keep.p, o->keep.len);
	cfg_submit(q, op);
}

static const struct bcfg *
cfg_of(const struct s3_req *q)
{
	for (size_t i = 0; i < CM_ARRAY_SIZE(bcfgs); i++)
		if (rgw_uri_q(&q->u, bcfgs[i].sub))
			return &bcfgs[i];
	return NULL;
}

static void
cfg_put_body(struct s3_req *q)
{
	cfg_put(q, cfg_of(q));
}

/* ?lifecycle, ?tagging, ?policy, ?cors on a bucket: PUT, GET, DELETE. \return false: not one
 * of them. */
static bool
config_op(struct s3_req *q)
{
	const struct bcfg *c = cfg_of(q);
	struct cfgop *o;
	cairn_op_t *op;

	if (!c || (q->h->method != RGW_M_PUT && q->h->method != RGW_M_GET &&
		   q->h->method != RGW_M_DELETE))
		return false;
	if (q->h->method == RGW_M_PUT) {
		q->op_name = (char *)c->put_name;
		s3_read_body(q, c->max, cfg_put_body);
		return true;
	}
	if (!(o = cfgop_new(q, c)))
		return true;
	if (!(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return true;
	}
	cairn_op_cmpxattr(op, "rgw.id", CAIRN_CMP_EQ, q->b.id, 32);
	if (q->h->method == RGW_M_DELETE) {
		q->op_name = (char *)c->del_name;
		cairn_op_rmxattr(op, c->xattr);
		cfg_submit(q, op);
		return true;
	}
	q->op_name = (char *)c->get_name;
	if (!(o->buf = malloc(c->max))) {
		cairn_op_release(op);
		s3_error(q, 503, "SlowDown", "out of memory");
		return true;
	}
	cairn_op_getxattr(op, c->xattr, o->buf, c->max, &o->len, &o->rval);
	cfg_submit(q, op);
	return true;
}

/* GET ?policyStatus: whether the policy lets anyone in unconditionally. */
static void
get_policy_status(struct s3_req *q)
{
	struct rgw_str x;

	if (!q->bc.policy) {
		s3_error(q, 404, "NoSuchBucketPolicy", "the bucket policy does not exist");
		return;
	}
	rgw_str_init(&x);
	rgw_str_addf(&x, XMLHD "<PolicyStatus " XMLNS "><IsPublic>%s</IsPublic></PolicyStatus>",
		     rgw_policy_is_public(q->bc.pol) ? "true" : "false");
	s3_respond_xml(q, 200, NULL, &x);
	rgw_str_fini(&x);
}

/* PUT ?acl: a canned ACL (x-amz-acl); the bucket record swapped against what was loaded. */
static void
put_bucket_acl(struct s3_req *q)
{
	const char *a = rgw_http_hdr(q->h, "x-amz-acl");
	struct rgw_bucket nb = q->b;

	if (!a) {
		s3_error(q, 501, "NotImplemented",
			 "only canned ACLs (x-amz-acl) are supported, not grant lists");
		return;
	}
	if (!s3_canned_ok(a)) {
		s3_error(q, 400, "InvalidArgument", "unknown canned ACL in x-amz-acl");
		return;
	}
	snprintf(nb.acl, sizeof(nb.acl), "%s", a);
	swap_record(q, &nb);
}

static void
bucket_loaded(struct s3_req *q)
{
	const struct rgw_http_head *h = q->h;
	char hd[128];
	/* (classified by what is dispatched below: a GET naming any configuration
	 * sub-resource is the owner's; listings, uploads, the location and HEAD are READ) */
	static const char *const owner_only[] = {
		"acl",          "versioning",     "tagging",      "cors",
		"policy",       "lifecycle",      "encryption",   "object-lock",
		"replication",  "website",        "policyStatus", "logging",
		"notification", "requestPayment", "accelerate",   "ownershipControls",
	};
	bool read = h->method == RGW_M_HEAD || h->method == RGW_M_GET;
	bool write = h->method == RGW_M_POST && rgw_uri_q(&q->u, "delete");

	for (size_t i = 0; read && h->method == RGW_M_GET && i < CM_ARRAY_SIZE(owner_only); i++)
		if (rgw_uri_q(&q->u, owner_only[i]))
			read = false;

	/* (DeleteObjects under a policy: each key's own verdict decides, s3_object.c) */
	if (!(write && q->bc.pol) && !s3_allow_bucket(q, &q->b,
						      read    ? S3_P_READ
						      : write ? S3_P_WRITE
							      : S3_P_OWNER)) {
		s3_deny(q);
		return;
	}
	switch (h->method) {
	case RGW_M_HEAD:
		q->op_name = "HeadBucket";
		snprintf(hd, sizeof(hd), "x-amz-bucket-region: %s\r\n", q->b.location);
		s3_respond_xml(q, 200, hd, NULL);
		return;
	case RGW_M_DELETE:
		if (config_op(q))
			return;
		q->op_name = "DeleteBucket";
		if (q->u.nq) {
			s3_error(q, 501, "NotImplemented",
				 "this bucket sub-resource is not implemented");
			return;
		}
		delete_bucket(q);
		return;
	case RGW_M_GET:
		if (rgw_uri_q(&q->u, "location")) {
			q->op_name = "GetBucketLocation";
			get_location(q);
		} else if (rgw_uri_q(&q->u, "versioning")) {
			q->op_name = "GetBucketVersioning";
			get_versioning(q);
		} else if (rgw_uri_q(&q->u, "acl")) {
			q->op_name = "GetBucketAcl";
			get_acl(q);
		} else if (rgw_uri_q(&q->u, "uploads")) {
			s3_mp_list_uploads(q);
		} else if (rgw_uri_q(&q->u, "policyStatus")) {
			q->op_name = "GetBucketPolicyStatus";
			get_policy_status(q);
		} else if (config_op(q)) {
			/* (?tagging, ?lifecycle, ?policy, ?cors) */
		} else if (rgw_uri_q(&q->u, "encryption")) {
			s3_error(q, 404, "ServerSideEncryptionConfigurationNotFoundError",
				 "the server side encryption configuration was not found");
		} else if (rgw_uri_q(&q->u, "object-lock") || rgw_uri_q(&q->u, "replication") ||
			   rgw_uri_q(&q->u, "website") || rgw_uri_q(&q->u, "logging") ||
			   rgw_uri_q(&q->u, "notification") || rgw_uri_q(&q->u, "requestPayment") ||
			   rgw_uri_q(&q->u, "accelerate") ||
			   rgw_uri_q(&q->u, "ownershipControls")) {
			s3_error(q, 501, "NotImplemented",
				 "this bucket sub-resource is not implemented");
		} else {
			s3_list_objects(q);
		}
		return;
	case RGW_M_POST:
		if (rgw_uri_q(&q->u, "delete")) {
			s3_object_op(q);
			return;
		}
		s3_error(q, 501, "NotImplemented", "this POST is not implemented");
		return;
	case RGW_M_PUT:
		if (rgw_uri_q(&q->u, "acl")) {
			q->op_name = "PutBucketAcl";
			put_bucket_acl(q);
			return;
		}
		if (config_op(q))
			return;
		if (rgw_uri_q(&q->u, "versioning")) {
			q->op_name = "PutBucketVersioning";
			s3_read_body(q, 4096, put_versioning);
			return;
		}
		s3_error(q, 501, "NotImplemented", "this bucket sub-resource is not implemented");
		return;
	default:
		s3_error(q, 405, "MethodNotAllowed", "the method is not allowed on a bucket");
		return;
	}
}

void
s3_bucket_op(struct s3_req *q)
{
	if (q->h->method == RGW_M_PUT && !q->u.nq) {
		create_bucket(q);
		return;
	}
	s3_bucket_load(q, bucket_loaded);
}
