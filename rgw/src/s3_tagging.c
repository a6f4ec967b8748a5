/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Object tagging: GET, PUT, DELETE /bucket/key?tagging (docs/design/rgw.md
 * §11.3). The tag set lives in the index entry (tag T_TAGS), so a change
 * is a compare-and-swap of the entry like a PUT's commit: a PUT of the
 * object racing it wins or loses whole, never mixes. (Object 0's copy of
 * the entry keeps the tags the PUT wrote.)
 */
#include "rgw_int.h"
#include "rgw/xml.h"
#include "cm/log.h"

CM_LOG_SUBSYS(rgw);

#define XMLNS        "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""
#define XMLHD        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define CAS_TRIES    16
#define TAGS_XML_MAX (64u << 10)

struct tg {
	struct s3_vread vr;         /* the key's latest entry, or its version's */
	const char *vid;            /* ?versionId=, or NULL: the latest */
	const struct cairn_kv *ent; /* the entry changed (in vr) */
	struct s3_shard shard;
	struct s3_shwait w; /* the shard frozen or moved by a split */
	struct rgw_entry e;
	bool have_e;
	bool put; /* PUT (the new set in tags) or DELETE */
	bool acl; /* ?acl: the canned ACL (GET, PUT), not the tags */
	char newacl[32];
	struct rgw_str tags, enc;
	int tries;
};

static void
tg_free(struct s3_req *q)
{
	struct tg *t = q->op;

	if (!t)
		return;
	s3_vread_fini(&t->vr);
	s3_shwait_fini(&t->w);
	if (t->have_e)
		rgw_entry_fini(&t->e);
	rgw_str_fini(&t->tags);
	rgw_str_fini(&t->enc);
	free(t);
	q->op = NULL;
}

static void tg_read(struct s3_req *q);

/* After a wait on a frozen shard, or the map read anew: the entry read again. */
static void
tg_waited(void *arg, int rc)
{
	struct s3_req *q = arg;

	if (rc == -ENOENT)
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
	else if (rc)
		s3_error(q, 503, "SlowDown", "the bucket's index is being reorganised: retry");
	else
		tg_read(q);
}

static void
tg_swapped(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct tg *t = q->op;

	q->pending--;
	if (rc == -ECANCELED && ++t->tries < CAS_TRIES) {
		tg_read(q);
		return;
	}
	if (rc == -ENOENT || rc == -ECANCELED) {
		s3_bucket_forget(q->g, q->bucket);
		s3_error(q, rc == -ENOENT ? 404 : 503, rc == -ENOENT ? "NoSuchBucket" : "SlowDown",
			 rc == -ENOENT ? "the bucket does not exist"
				       : "too many concurrent writers");
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "updating the index entry");
		return;
	}
	s3_respond_xml(q, t->put ? 200 : 204, NULL, NULL);
}

static void
tg_answer_get(struct s3_req *q)
{
	struct tg *t = q->op;
	struct rgw_str x;
	size_t pos = 0;
	const char *k, *v;

	rgw_str_init(&x);
	rgw_str_adds(&x, XMLHD "<Tagging " XMLNS "><TagSet>");
	while (t->e.tags && rgw_tags_next(t->e.tags, t->e.tags_len, &pos, &k, &v)) {
		rgw_str_adds(&x, "<Tag><Key>");
		rgw_str_xml(&x, k, strlen(k));
		rgw_str_adds(&x, "</Key><Value>");
		rgw_str_xml(&x, v, strlen(v));
		rgw_str_adds(&x, "</Value></Tag>");
	}
	rgw_str_adds(&x, "</TagSet></Tagging>");
	s3_respond_xml(q, 200, NULL, &x);
	rgw_str_fini(&x);
}

static void
tg_read_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct tg *t = q->op;
	cairn_op_t *op;
	char sk[RGW_VID_LEN + 1];

	q->pending--;
	if (rc == -ENOENT) {
		s3_bucket_forget(q->g, q->bucket);
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
		return;
	}
	if (!rc && s3_shard_wait(&t->w))
		return; /* (a split: tg_waited) */
	if (!rc)
		rc = s3_vread_rc(&t->vr);
	if (rc) {
		s3_error_rc(q, rc, "reading the index entry");
		return;
	}
	t->ent = s3_vread_pick(&t->vr, t->vid, sk);
	if (!t->ent && sk[0]) {
		s3_error(
			q, 501, "NotImplemented",
			"tags and ACLs of a null version that is not the latest are not supported");
		return;
	}
	if (!t->ent) {
		if (!s3_may_list(q))
			s3_deny(q);
		else if (t->vid)
			s3_error(q, 404, "NoSuchVersion", "the specified version does not exist");
		else
			s3_error(q, 404, "NoSuchKey", "the specified key does not exist");
		return;
	}
	if (t->have_e)
		rgw_entry_fini(&t->e);
	t->have_e = false;
	if (rgw_entry_decode(t->ent->val, t->ent->vlen, &t->e)) {
		CM_ERR("%s: bucket %s key %.*s: the index entry does not decode", rgw_req_id(q->r),
		       q->bucket, (int)q->key_len, q->key);
		s3_error(q, 500, "InternalError", "the index entry is damaged");
		return;
	}
	t->have_e = true;
	if (t->e.flags & RGW_ENTRY_DELETE_MARKER) {
		if (t->vid)
			s3_error(q, 405, "MethodNotAllowed",
				 "the specified version is a delete marker");
		else
			s3_error(q, 404, "NoSuchKey", "the specified key does not exist");
		return;
	}
	if (!s3_allow_object(q, &q->b, &t->e, S3_P_OWNER)) {
		s3_deny(q);
		return;
	}
	if (q->h->method == RGW_M_GET && t->acl) {
		struct rgw_str x;

		rgw_str_init(&x);
		s3_acl_xml(&x, *t->e.owner ? t->e.owner : q->b.owner, t->e.acl, q->b.owner);
		s3_respond_xml(q, 200, NULL, &x);
		rgw_str_fini(&x);
		return;
	}
	if (q->h->method == RGW_M_GET) {
		tg_answer_get(q);
		return;
	}
	/* (the decoded entry points into its own memory: only these pointers change) */
	if (t->acl) {
		t->e.acl = t->newacl;
	} else {
		t->e.tags = t->put ? t->tags.p : NULL;
		t->e.tags_len = t->put ? t->tags.len : 0;
	}
	rgw_str_reset(&t->enc);
	rgw_entry_encode(&t->e, &t->enc);
	if (t->enc.oom || !(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	s3_shard_guard(&t->shard, op);
	cairn_op_omap_cmp(op, t->ent->key, t->ent->klen, CAIRN_CMP_EQ, t->ent->val, t->ent->vlen);
	cairn_op_omap_set(op, t->ent->key, t->ent->klen, t->enc.p, t->enc.len);
	s3_submit(q, q->g->meta, t->shard.oid, op, tg_swapped);
}

static void
tg_read(struct s3_req *q)
{
	struct tg *t = q->op;
	cairn_op_t *op = cairn_op_create();

	if (!op) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	s3_shard_read(&t->shard, op);
	s3_vread_op(&t->vr, op);
	s3_submit(q, q->g->meta, t->shard.oid, op, tg_read_done);
}

static struct tg *
tg_new(struct s3_req *q)
{
	struct tg *t = calloc(1, sizeof(*t));
	const char *v = rgw_uri_q(&q->u, "versionId");

	if (!t) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return NULL;
	}
	q->op = t;
	q->op_free = tg_free;
	rgw_str_init(&t->tags);
	rgw_str_init(&t->enc);
	if (v && strcmp(v, "null") && !rgw_vid_ok(v)) {
		s3_error(q, 400, "InvalidArgument", "invalid version id specified");
		return NULL;
	}
	t->vid = v;
	if (s3_vread_init(&t->vr, q->key, q->key_len, v && !strcmp(v, "null"),
			  v && strcmp(v, "null") ? v : NULL, false)) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return NULL;
	}
	s3_shard_pick(&q->b, &q->bc, q->key, q->key_len, &t->shard);
	s3_shwait_init(&t->w, q, &t->shard, q->key, q->key_len, tg_waited, q);
	t->w.reader = q->h->method == RGW_M_GET; /* (a read: a frozen shard is read) */
	return t;
}

/* <Tagging><TagSet><Tag><Key/><Value/></Tag>...</TagSet></Tagging> */
static void
tg_body(struct s3_req *q)
{
	struct rgw_xml *x = NULL;
	const struct rgw_xml *set;
	char err[128];
	struct tg *t;
	int rc = 0;

	if (rgw_xml_parse(q->body.p ? q->body.p : "", q->body.len, &x, err, sizeof(err)) ||
	    strcmp(x->name, "Tagging") || !(set = rgw_xml_child(x, "TagSet"))) {
		rgw_xml_free(x);
		s3_error(q, 400, "MalformedXML", "the XML you provided was not well-formed");
		return;
	}
	if (!(t = tg_new(q))) {
		rgw_xml_free(x);
		return;
	}
	t->put = true;
	for (const struct rgw_xml *c = set->child; c && !rc; c = c->next) {
		const char *k, *v;

		if (strcmp(c->name, "Tag"))
			continue;
		k = rgw_xml_child_text(c, "Key");
		v = rgw_xml_child_text(c, "Value");
		if (!k) {
			rc = -EINVAL;
			break;
		}
		rc = rgw_tags_add(&t->tags, k, strlen(k), v ? v : "", v ? strlen(v) : 0);
	}
	rgw_xml_free(x);
	if (rc) {
		s3_tags_error(q, rc);
		return;
	}
	tg_read(q);
}

static void
acl_loaded(struct s3_req *q)
{
	const char *a = rgw_http_hdr(q->h, "x-amz-acl");
	struct tg *t;

	if (q->h->method != RGW_M_GET && q->h->method != RGW_M_PUT) {
		s3_error(q, 405, "MethodNotAllowed", "the method is not allowed on ?acl");
		return;
	}
	q->op_name = q->h->method == RGW_M_GET ? "GetObjectAcl" : "PutObjectAcl";
	if (q->h->method == RGW_M_PUT && !a) {
		s3_error(q, 501, "NotImplemented",
			 "only canned ACLs (x-amz-acl) are supported, not grant lists");
		return;
	}
	if (a && q->h->method == RGW_M_PUT && !s3_canned_ok(a)) {
		s3_error(q, 400, "InvalidArgument", "unknown canned ACL in x-amz-acl");
		return;
	}
	if (!(t = tg_new(q)))
		return;
	t->acl = true;
	t->put = q->h->method == RGW_M_PUT;
	if (a)
		snprintf(t->newacl, sizeof(t->newacl), "%s", a);
	tg_read(q);
}

void
s3_obj_acl(struct s3_req *q)
{
	s3_bucket_load(q, acl_loaded);
}

static void
tg_loaded(struct s3_req *q)
{
	switch (q->h->method) {
	case RGW_M_GET:
		q->op_name = "GetObjectTagging";
		if (tg_new(q))
			tg_read(q);
		return;
	case RGW_M_PUT:
		q->op_name = "PutObjectTagging";
		s3_read_body(q, TAGS_XML_MAX, tg_body);
		return;
	case RGW_M_DELETE:
		q->op_name = "DeleteObjectTagging";
		if (tg_new(q))
			tg_read(q);
		return;
	default:
		s3_error(q, 405, "MethodNotAllowed", "the method is not allowed on ?tagging");
	}
}

void
s3_obj_tagging(struct s3_req *q)
{
	s3_bucket_load(q, tg_loaded);
}
