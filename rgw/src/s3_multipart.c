/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Multipart uploads (docs/design/rgw.md §4, §11).
 *
 * An upload is a marker in its key's index shard (RGW_SYS_UPLOAD + key +
 * NUL + upload id; value: the object's record as initiated: owner,
 * headers) and an object "mp.<upload id>" in the metadata pool, in the
 * bucket's namespace: xattr rgw.state ("open" or "closed"), omap of part
 * records (RGW_PART_KEY_LEN keys: part number, instance) and pending
 * markers of parts being written. A part is an instance of its own; a
 * part uploaded twice has two records (the later wins), so no record is
 * ever overwritten and every instance stays named until it is collected.
 *
 * Complete: close the upload (parts arriving now fail), read every record,
 * match the request's list, write the manifest as object 0 of a new
 * instance, then one op on the shard: the entry swapped in (compare-and-
 * swap), the upload marker out, dead markers for the replaced entry and
 * for every part record the manifest does not use. Abort: close, read,
 * one op on the shard: the marker out and dead markers for every part.
 * The upload object goes last (a crash leaves only that metadata).
 */
#include "rgw_int.h"
#include "rgw/chunked.h"
#include "rgw/xml.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/random.h"

#include <openssl/evp.h>

CM_LOG_SUBSYS(rgw);

static const char *ck_elem(uint8_t alg);

#define XMLNS     "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""
#define XMLHD     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define CAS_TRIES 16
#define PAGE      1000

struct inst {
	uint8_t inst[16];
	uint64_t size;
};

struct mp {
	char upid[RGW_UPLOAD_LEN + 1];
	char moid[48];
	struct s3_shard shard;
	struct s3_shwait w; /* the shard frozen or moved by a split */
	rgw_aio_cb reread;  /* read_marker's callback (run again after a wait) */
	struct rgw_str ukey, ekey, enc, man;
	struct rgw_entry e; /* initiate: the record; complete: the new entry */
	/* shard reads: the upload marker; the key's latest entry (and null pointer) */
	struct cairn_kv want[1];
	struct s3_vread vr;
	struct s3_vplan vp; /* complete: the commit's compares and writes of the key's versions */
	struct cairn_kv *kvs;
	size_t n;
	int rval;
	/* the upload object's records, all pages */
	struct cairn_kv *lkvs;
	size_t ln;
	bool lmore;
	int lrval;
	char after[64];
	size_t alen;
	struct rgw_part *recs;
	size_t nrec, rcap;
	struct inst *pend;
	size_t npend, pcap;
	void (*loaded)(struct s3_req *q);
	/* complete */
	struct rgw_xml *x;
	uint32_t *want_num;
	uint8_t (*want_md5)[16];
	const struct rgw_xml **want_x; /* each wanted part's <Part> (its checksums) */
	size_t nwant;
	size_t *use;              /* recs index per wanted part */
	bool reserved, committed; /* the user's quota: the object taken from its usage counter */
	/* the bucket's quota counter: the completion's growth held (as in a PUT) */
	int64_t bheld_bytes, bheld_objs, bwant_bytes, bwant_objs;
	bool have_inst; /* m->e.inst is the completion's manifest */
	char (*dkeys)[64];
	struct inst *dead;
	size_t ndead;
	int tries;
	bool resent; /* tests (rgw_test_resend_commits): the commit was sent again */
};

static void
ignore_cb(void *arg, int rc)
{
	(void)arg;
	(void)rc;
}

static void
mp_free(struct s3_req *q)
{
	struct mp *m = q->op;

	if (!m)
		return;
	if (m->reserved && !m->committed)
		s3_user_usage(q, -(int64_t)m->e.size, -1, NULL); /* (not completed: give back) */
	if (m->bheld_bytes || m->bheld_objs)
		s3_bucket_usage(q, -m->bheld_bytes, -m->bheld_objs, NULL);
	rgw_str_fini(&m->ukey);
	rgw_str_fini(&m->ekey);
	rgw_str_fini(&m->enc);
	rgw_str_fini(&m->man);
	s3_shwait_fini(&m->w);
	s3_meta_free(&m->e);
	cairn_kvs_free(m->kvs, m->n);
	cairn_kvs_free(m->lkvs, m->ln);
	free(m->want[0].key);
	s3_vplan_fini(&m->vp);
	s3_vread_fini(&m->vr);
	free(m->recs);
	free(m->pend);
	rgw_xml_free(m->x);
	free(m->want_num);
	free(m->want_md5);
	free(m->want_x);
	free(m->use);
	free(m->dkeys);
	free(m->dead);
	free(m);
	q->op = NULL;
}

static struct mp *
mp_new(struct s3_req *q, const char *name)
{
	struct mp *m;

	q->op_name = (char *)name;
	if (!(m = calloc(1, sizeof(*m)))) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return NULL;
	}
	q->op = m;
	q->op_free = mp_free;
	rgw_str_init(&m->ukey);
	rgw_str_init(&m->ekey);
	rgw_str_init(&m->enc);
	rgw_str_init(&m->man);
	return m;
}

static int read_marker(struct s3_req *q, struct mp *m, rgw_aio_cb cb);
static void drop_manifest(struct s3_req *q, struct mp *m);
static void cm_reread(void *arg, int rc);
static void init_write(struct s3_req *q);
static void init_check(struct s3_req *q);
static void cm_fail(struct s3_req *q, int status, const char *code, const char *msg);

/* After a wait on a frozen shard, or the map read anew: the step's read again. */
static void
mp_waited(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;

	if (rc && m->reread == cm_reread) {
		/* (Complete closed the upload object: cm_fail opens it again) */
		drop_manifest(q, m);
		cm_fail(q, rc == -ENOENT ? 404 : 503, rc == -ENOENT ? "NoSuchBucket" : "SlowDown",
			rc == -ENOENT ? "the bucket does not exist"
				      : "the bucket's index is being reorganised: retry");
		return;
	}
	if (rc == -ENOENT)
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
	else if (rc)
		s3_error(q, 503, "SlowDown", "the bucket's index is being reorganised: retry");
	else if (m->reread)
		read_marker(q, m, m->reread);
	else
		init_write(q);
}

/* Owner check, the upload id, the pool, the names. \return 0, or the request was answered. */
static int
mp_names(struct s3_req *q, struct mp *m, const char *upid)
{
	int rc;

	if (!s3_allow_bucket(q, &q->b, S3_P_WRITE)) {
		s3_deny(q);
		return -EACCES;
	}
	if (!upid || !s3_upload_id_ok(upid)) {
		s3_error(q, 404, "NoSuchUpload", "the specified upload does not exist");
		return -ENOENT;
	}
	if ((rc = s3_mp_io(q))) {
		s3_error_rc(q, rc, "the upload's pool");
		return rc;
	}
	snprintf(m->upid, sizeof(m->upid), "%s", upid);
	snprintf(m->moid, sizeof(m->moid), "mp.%s", upid);
	s3_shard_pick(&q->b, &q->bc, q->key, q->key_len, &m->shard);
	s3_shwait_init(&m->w, q, &m->shard, q->key, q->key_len, mp_waited, q);
	s3_upload_marker(q->key, q->key_len, upid, &m->ukey);
	s3_entry_key(q->key, q->key_len, &m->ekey);
	if (m->ukey.oom || m->ekey.oom) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* Read the upload marker and the key's entry from the shard, then cb. */
static int
read_marker(struct s3_req *q, struct mp *m, rgw_aio_cb cb)
{
	cairn_op_t *op;

	m->reread = cb;
	cairn_kvs_free(m->kvs, m->n);
	m->kvs = NULL;
	m->n = 0;
	m->rval = 0;
	if (!m->want[0].key) {
		if (!(m->want[0].key = malloc(m->ukey.len)) ||
		    s3_vread_init(&m->vr, q->key, q->key_len, s3_vmode(&q->b) == S3_V_SUSPENDED,
				  NULL, false)) {
			s3_error(q, 503, "SlowDown", "out of memory");
			return -ENOMEM;
		}
		memcpy(m->want[0].key, m->ukey.p, m->ukey.len);
		m->want[0].klen = m->ukey.len;
	}
	if (!(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return -ENOMEM;
	}
	s3_shard_read(&m->shard, op);
	cairn_op_omap_get(op, m->want, 1, &m->kvs, &m->n, &m->rval);
	s3_vread_op(&m->vr, op);
	return s3_submit(q, q->g->meta, m->shard.oid, op, cb);
}

static const struct cairn_kv *
found(const struct mp *m, const struct rgw_str *k)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->kvs[i].klen == k->len && !memcmp(m->kvs[i].key, k->p, k->len))
			return &m->kvs[i];
	return NULL;
}

/*
 * read_marker's answer: whether the upload's marker is there (else the
 * request was answered: NoSuchUpload, or the error). An upload object
 * without its marker is the sweep's (it checks the object's key).
 */
static bool
marker_read(struct s3_req *q, struct mp *m, int rc)
{
	q->pending--;
	if (!rc && s3_shard_wait(&m->w))
		return false; /* (a split: mp_waited reads again) */
	if (!rc)
		rc = m->rval;
	if (!rc && m->vr.nwant)
		rc = s3_vread_rc(&m->vr);
	if (rc && rc != -ENOENT) {
		s3_error_rc(q, rc, "reading the upload");
		return false;
	}
	if (rc || !found(m, &m->ukey)) {
		s3_error(q, 404, "NoSuchUpload", "the specified upload does not exist");
		return false;
	}
	return true;
}

/* ---- the upload object's records ---- */

static void load_page(struct s3_req *q, bool close);
static void ab_loaded(struct s3_req *q);
static void cm_loaded(struct s3_req *q);
static void reopen(struct s3_req *q, struct mp *m);

static void
page_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;

	q->pending--;
	if (!rc)
		rc = m->lrval;
	if (rc == -ENOENT && m->loaded == ab_loaded && !m->alen) {
		/* (a marker whose upload object was never made: Abort takes the marker away) */
		m->loaded(q);
		return;
	}
	if (rc == -ENOENT) {
		s3_error(q, 404, "NoSuchUpload", "the specified upload does not exist");
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "reading the upload's parts");
		return;
	}
	for (size_t i = 0; i < m->ln; i++) {
		const struct cairn_kv *kv = &m->lkvs[i];

		if (kv->klen >= 2 && !memcmp(kv->key, RGW_SYS_PENDING, 2)) {
			const uint8_t *v = kv->val;
			struct inst *pi;
			char ih[33];

			if (kv->klen != 2 + 32 || kv->vlen < 16)
				continue;
			if (m->npend == m->pcap) {
				size_t nc = m->pcap ? 2 * m->pcap : 16;
				struct inst *np = realloc(m->pend, nc * sizeof(*np));

				if (!np) {
					s3_error(q, 503, "SlowDown", "out of memory");
					return;
				}
				m->pend = np;
				m->pcap = nc;
			}
			pi = &m->pend[m->npend];
			memcpy(ih, (const char *)kv->key + 2, 32);
			ih[32] = '\0';
			if (rgw_unhex(ih, pi->inst, 16) ||
			    (m->have_inst && !memcmp(pi->inst, m->e.inst, 16)))
				continue; /* (the completion's own manifest is no part) */
			pi->size = 0;
			for (int b = 7; b >= 0; b--)
				pi->size = pi->size << 8 | v[8 + b];
			m->npend++;
			continue;
		}
		if (m->nrec == m->rcap) {
			size_t nc = m->rcap ? 2 * m->rcap : 64;
			struct rgw_part *np = realloc(m->recs, nc * sizeof(*np));

			if (!np) {
				s3_error(q, 503, "SlowDown", "out of memory");
				return;
			}
			m->recs = np;
			m->rcap = nc;
		}
		if (rgw_part_decode(kv->key, kv->klen, kv->val, kv->vlen, &m->recs[m->nrec]) == 0)
			m->nrec++;
	}
	if (m->ln) {
		m->alen = CM_MIN(m->lkvs[m->ln - 1].klen, sizeof(m->after));
		memcpy(m->after, m->lkvs[m->ln - 1].key, m->alen);
	}
	cairn_kvs_free(m->lkvs, m->ln);
	m->lkvs = NULL;
	m->ln = 0;
	if (m->lmore && m->nrec + m->npend >= 20 * RGW_PARTS_MAX) {
		/* (refused, never acted on in part: a partial list would leak or misjudge parts) */
		if (m->loaded == cm_loaded)
			reopen(q, m);
		s3_error(q, 503, "SlowDown",
			 "the upload holds more part records than one pass reads");
		return;
	}
	if (m->lmore) {
		load_page(q, false);
		return;
	}
	m->loaded(q);
}

/* Every record and pending marker of the upload (close: first close it to new parts). */
static void
load_page(struct s3_req *q, bool close)
{
	struct mp *m = q->op;
	cairn_op_t *op = cairn_op_create();

	if (!op) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	m->lrval = 0;
	if (!m->alen)
		cairn_op_assert_exists(op);
	if (close && !m->alen)
		cairn_op_setxattr(op, "rgw.state", "closed", 6);
	if (close && !m->alen && m->have_inst) {
		/* The manifest Complete will write, named before it exists: a crash before the
		 * commit leaves it to the sweep (a pending "part" of the open upload, 0 bytes:
		 * object 0 only). The commit's removal of the upload object takes the marker. */
		uint8_t v[16] = { 0 };
		int64_t now = rgw__now_ns();
		char k[2 + 33];

		for (int i = 0; i < 8; i++)
			v[i] = (uint8_t)((uint64_t)now >> (8 * i));
		memcpy(k, RGW_SYS_PENDING, 2);
		rgw_hex(m->e.inst, 16, k + 2);
		cairn_op_omap_set(op, k, 2 + 32, v, sizeof(v));
	}
	cairn_op_omap_list(op, m->alen ? m->after : NULL, m->alen, NULL, 0, PAGE, &m->lkvs, &m->ln,
			   &m->lmore, &m->lrval);
	s3_submit(q, q->mpio, m->moid, op, page_done);
}

static void
reopen(struct s3_req *q, struct mp *m)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return;
	cairn_op_cmpxattr(op, "rgw.state", CAIRN_CMP_EQ, "closed", 6);
	cairn_op_setxattr(op, "rgw.state", "open", 4);
	rgw__aio(q->t, q->mpio, m->moid, op, ignore_cb, NULL);
}

static void
drop_upload_object(struct s3_req *q, struct mp *m)
{
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return;
	cairn_op_remove(op);
	rgw__aio(q->t, q->mpio, m->moid, op, ignore_cb, NULL);
}

/* ---- CreateMultipartUpload ---- */

static void
init_created(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;
	struct rgw_str x;
	cairn_op_t *op;

	q->pending--;
	if (rc) {
		if ((op = cairn_op_create())) {
			cairn_op_omap_rm(op, m->ukey.p, m->ukey.len);
			rgw__aio(q->t, q->g->meta, m->shard.oid, op, ignore_cb, NULL);
		}
		s3_error_rc(q, rc, "creating the upload");
		return;
	}
	rgw_str_init(&x);
	rgw_str_adds(&x, XMLHD "<InitiateMultipartUploadResult " XMLNS "><Bucket>");
	rgw_str_xml(&x, q->bucket, strlen(q->bucket));
	rgw_str_adds(&x, "</Bucket><Key>");
	rgw_str_xml(&x, q->key, q->key_len);
	rgw_str_adds(&x, "</Key><UploadId>");
	rgw_str_adds(&x, m->upid);
	rgw_str_adds(&x, "</UploadId></InitiateMultipartUploadResult>");
	s3_respond_xml(q, 200, NULL, &x);
	rgw_str_fini(&x);
}

static void
init_checked(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;

	q->pending--;
	if (!rc && s3_shard_wait(&m->w))
		return; /* (frozen or moved: mp_waited writes again) */
	if (rc == -ENOENT) {
		s3_bucket_forget(q->g, q->bucket);
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "reading the bucket's index");
		return;
	}
	init_write(q);
}

/* The marker's write failed its guard: the shard's range read, to tell a split from a delete. */
static void
init_check(struct s3_req *q)
{
	struct mp *m = q->op;
	cairn_op_t *op = cairn_op_create();

	if (!op) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	s3_shard_read(&m->shard, op);
	s3_submit(q, q->g->meta, m->shard.oid, op, init_checked);
}

static void
init_marked(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;
	cairn_op_t *op;

	q->pending--;
	if (rc == -ECANCELED && ++m->tries < CAS_TRIES) {
		init_check(q); /* (the shard's guard: a split, or the bucket deleted) */
		return;
	}
	if (rc == -ECANCELED || rc == -ENOENT) {
		s3_bucket_forget(q->g, q->bucket);
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "recording the upload");
		return;
	}
	if (!(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	cairn_op_create_object(op, true);
	cairn_op_setxattr(op, "rgw.state", "open", 4);
	cairn_op_setxattr(op, "rgw.key", q->key, q->key_len);
	if (s3_submit(q, q->mpio, m->moid, op, init_created) && (op = cairn_op_create())) {
		/* (answered: the marker must not outlive this failure) */
		cairn_op_omap_rm(op, m->ukey.p, m->ukey.len);
		rgw__aio(q->t, q->g->meta, m->shard.oid, op, ignore_cb, NULL);
	}
}

static void
init_loaded(struct s3_req *q)
{
	struct mp *m = mp_new(q, "CreateMultipartUpload");
	char upid[RGW_UPLOAD_LEN + 1];
	uint8_t rnd[8];
	int rc;

	if (!m)
		return;
	m->e.mtime_ns = rgw__now_ns();
	cm_random_bytes(rnd, sizeof(rnd));
	snprintf(upid, 17, "%016" PRIx64, (uint64_t)m->e.mtime_ns);
	rgw_hex(rnd, 8, upid + 16);
	if (mp_names(q, m, upid))
		return;
	if ((rc = s3_put_meta(q, &m->e))) {
		s3_error(q, 400, rc == -E2BIG ? "MetadataTooLarge" : "InternalError",
			 rc == -E2BIG ? "your metadata headers exceed the maximum allowed size"
				      : "out of memory");
		return;
	}
	if (s3_put_tags(q, &m->e) || s3_put_acl(q, &m->e))
		return;
	m->e.owner = q->uid;
	rgw_entry_encode(&m->e, &m->enc);
	if (m->enc.oom) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	init_write(q);
}

/* The marker first: an upload object always has one (or had, and is swept). */
static void
init_write(struct s3_req *q)
{
	struct mp *m = q->op;
	cairn_op_t *op = cairn_op_create();

	if (!op) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	s3_shard_guard(&m->shard, op);
	cairn_op_omap_set(op, m->ukey.p, m->ukey.len, m->enc.p, m->enc.len);
	s3_submit(q, q->g->meta, m->shard.oid, op, init_marked);
}

void
s3_mp_initiate(struct s3_req *q)
{
	s3_bucket_load(q, init_loaded);
}

/* ---- ListParts ---- */

/* The newest record of each part number, in order (recs are in key order). */
static size_t
latest(struct mp *m)
{
	size_t out = 0;

	for (size_t i = 0; i < m->nrec; i++) {
		if (out && m->recs[out - 1].num == m->recs[i].num) {
			if (m->recs[i].mtime_ns >= m->recs[out - 1].mtime_ns)
				m->recs[out - 1] = m->recs[i];
			continue;
		}
		m->recs[out++] = m->recs[i];
	}
	return out;
}

static void
lp_loaded(struct s3_req *q)
{
	struct mp *m = q->op;
	const char *pm = rgw_uri_q(&q->u, "part-number-marker");
	const char *mx = rgw_uri_q(&q->u, "max-parts");
	unsigned long marker = pm ? strtoul(pm, NULL, 10) : 0;
	unsigned long max = mx ? strtoul(mx, NULL, 10) : 1000;
	size_t n = latest(m), shown = 0;
	uint32_t last = 0;
	bool trunc = false;
	struct rgw_str x;

	if (max > 1000 || (mx && !*mx))
		max = 1000;
	rgw_str_init(&x);
	rgw_str_adds(&x, XMLHD "<ListPartsResult " XMLNS "><Bucket>");
	rgw_str_xml(&x, q->bucket, strlen(q->bucket));
	rgw_str_adds(&x, "</Bucket><Key>");
	rgw_str_xml(&x, q->key, q->key_len);
	rgw_str_addf(&x, "</Key><UploadId>%s</UploadId><Initiator><ID>", m->upid);
	rgw_str_xml(&x, q->b.owner, strlen(q->b.owner));
	rgw_str_adds(&x, "</ID><DisplayName>");
	rgw_str_xml(&x, q->b.owner, strlen(q->b.owner));
	rgw_str_adds(&x, "</DisplayName></Initiator>");
	s3_owner_xml(&x, q->b.owner);
	rgw_str_addf(&x,
		     "<StorageClass>STANDARD</StorageClass><PartNumberMarker>%lu"
		     "</PartNumberMarker>",
		     marker);
	for (size_t i = 0; i < n; i++) {
		const struct rgw_part *p = &m->recs[i];
		char date[40], h[33];

		if (p->num <= marker)
			continue;
		if (shown == max) {
			trunc = true;
			break;
		}
		rgw__iso8601(p->mtime_ns, date, sizeof(date));
		rgw_hex(p->md5, 16, h);
		rgw_str_addf(&x,
			     "<Part><PartNumber>%u</PartNumber><LastModified>%s</LastModified>"
			     "<ETag>&quot;%s&quot;</ETag><Size>%" PRIu64 "</Size>",
			     p->num, date, h, p->size);
		if (p->ck_alg && ck_elem(p->ck_alg))
			rgw_str_addf(&x, "<%s>%s</%s>", ck_elem(p->ck_alg), p->ck,
				     ck_elem(p->ck_alg));
		rgw_str_adds(&x, "</Part>");
		last = p->num;
		shown++;
	}
	rgw_str_addf(&x,
		     "<NextPartNumberMarker>%u</NextPartNumberMarker><MaxParts>%lu</MaxParts>"
		     "<IsTruncated>%s</IsTruncated></ListPartsResult>",
		     last, max, trunc ? "true" : "false");
	s3_respond_xml(q, 200, NULL, &x);
	rgw_str_fini(&x);
}

static void
lp_marker(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;

	if (!marker_read(q, m, rc))
		return;
	m->loaded = lp_loaded;
	load_page(q, false);
}

static void
lp_bucket(struct s3_req *q)
{
	struct mp *m = mp_new(q, "ListParts");

	if (m && !mp_names(q, m, rgw_uri_q(&q->u, "uploadId"))) {
		m->w.reader = true; /* (a read: a frozen shard is read) */
		read_marker(q, m, lp_marker);
	}
}

void
s3_mp_list_parts(struct s3_req *q)
{
	s3_bucket_load(q, lp_bucket);
}

/* ---- the shard's commit of Complete and Abort ---- */

static int
add_dead(struct mp *m, const uint8_t inst[16], uint64_t size)
{
	if (!(m->ndead & 63)) {
		struct inst *nd = realloc(m->dead, (m->ndead + 64) * sizeof(*nd));
		char(*nk)[64];

		if (!nd)
			return -ENOMEM;
		m->dead = nd;
		if (!(nk = realloc(m->dkeys, (m->ndead + 64) * sizeof(*nk))))
			return -ENOMEM;
		m->dkeys = nk;
	}
	memcpy(m->dead[m->ndead].inst, inst, 16);
	m->dead[m->ndead].size = size;
	m->ndead++;
	return 0;
}

/* Dead markers for m->dead into op (keys kept for the collector's queue). */
static void
dead_into(struct mp *m, cairn_op_t *op)
{
	for (size_t i = 0; i < m->ndead; i++) {
		uint8_t v[RGW_DEAD_VLEN];

		s3_dead_marker(m->dead[i].inst, m->dead[i].size, false, m->dkeys[i], v);
		cairn_op_omap_set(op, m->dkeys[i], strlen(m->dkeys[i]), v, sizeof(v));
	}
}

static void
dead_queue(struct s3_req *q, struct mp *m)
{
	for (size_t i = 0; i < m->ndead; i++)
		rgw__gc_add(q->g, q->b.id, m->shard.oid, m->dkeys[i], strlen(m->dkeys[i]),
			    m->dead[i].inst, m->dead[i].size, false);
}

/* ---- AbortMultipartUpload ---- */

static void ab_rechecked(void *arg, int rc);

static void
ab_committed(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;

	q->pending--;
	if (rc == -ECANCELED && ++m->tries < CAS_TRIES) {
		/* (the marker gone, or the shard's guard: a split; which?) */
		read_marker(q, m, ab_rechecked);
		return;
	}
	if (rc == -ECANCELED) {
		s3_error(q, 404, "NoSuchUpload",
			 "the upload was completed or aborted by another request");
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "aborting the upload");
		return;
	}
	dead_queue(q, m);
	drop_upload_object(q, m);
	s3_respond_xml(q, 204, NULL, NULL);
}

static void
ab_commit(struct s3_req *q)
{
	struct mp *m = q->op;
	const struct cairn_kv *u = found(m, &m->ukey);
	cairn_op_t *op;

	if (!u || !(op = cairn_op_create())) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	s3_shard_guard(&m->shard, op);
	cairn_op_omap_cmp(op, u->key, u->klen, CAIRN_CMP_EQ, u->val, u->vlen);
	cairn_op_omap_rm(op, u->key, u->klen);
	dead_into(m, op);
	s3_submit(q, q->g->meta, m->shard.oid, op, ab_committed);
}

static void
ab_rechecked(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;

	if (marker_read(q, m, rc))
		ab_commit(q); /* (still there: the upload object is closed already) */
}

static void
ab_loaded(struct s3_req *q)
{
	struct mp *m = q->op;

	for (size_t i = 0; i < m->nrec; i++)
		if (add_dead(m, m->recs[i].inst, m->recs[i].size))
			goto oom;
	for (size_t i = 0; i < m->npend; i++)
		if (add_dead(m, m->pend[i].inst, m->pend[i].size))
			goto oom;
	ab_commit(q);
	return;
oom:
	s3_error(q, 503, "SlowDown", "out of memory");
}

static void
ab_marker(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;

	if (!marker_read(q, m, rc))
		return;
	m->loaded = ab_loaded;
	load_page(q, true);
}

static void
ab_bucket(struct s3_req *q)
{
	struct mp *m = mp_new(q, "AbortMultipartUpload");

	if (m && !mp_names(q, m, rgw_uri_q(&q->u, "uploadId")))
		read_marker(q, m, ab_marker);
}

void
s3_mp_abort(struct s3_req *q)
{
	s3_bucket_load(q, ab_bucket);
}

/* ---- CompleteMultipartUpload ---- */

static void cm_commit(struct s3_req *q);
static void cm_done(struct s3_req *q);
static void cm_send(struct s3_req *q);
static bool cm_applied(const struct mp *m);

static void
cm_fail(struct s3_req *q, int status, const char *code, const char *msg)
{
	struct mp *m = q->op;

	reopen(q, m);
	s3_error(q, status, code, msg);
}

static void
drop_manifest(struct s3_req *q, struct mp *m)
{
	cairn_op_t *op = cairn_op_create();
	char oid[64];

	if (!op)
		return;
	s3_data_oid(m->e.inst, 0, oid, sizeof(oid));
	cairn_op_remove(op);
	rgw__aio(q->t, q->data, oid, op, ignore_cb, NULL);
}

static void
cm_reread(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;

	q->pending--;
	if (!rc && s3_shard_wait(&m->w))
		return; /* (a split: mp_waited reads again) */
	if (!rc)
		rc = m->rval;
	if (!rc && !found(m, &m->ukey) && cm_applied(m)) {
		/* (ours: its op applied though its answer said otherwise, a resend's
		 * compare after the first send had removed the marker) */
		CM_LOG(CM_LOG_NOTICE,
		       "%s: the completion of upload %s applied, though its commit was "
		       "answered as refused (a resend): answered as done",
		       rgw_req_id(q->r), m->upid);
		cm_done(q);
		return;
	}
	if (rc || !found(m, &m->ukey)) {
		drop_manifest(q, m);
		if (rc && rc != -ENOENT)
			cm_fail(q, 500, "InternalError", "reading the index again failed");
		else
			s3_error(q, 404, "NoSuchUpload",
				 "the upload was completed or aborted by another request");
		return;
	}
	cm_commit(q);
}

/*
 * Whether the key's latest entry, as read again, is this completion's (its
 * manifest's instance is new to each completion, so no other request wrote it).
 */
static bool
cm_applied(const struct mp *m)
{
	const struct cairn_kv *cur = s3_vread_cur(&m->vr);
	struct rgw_entry e;
	bool ours;

	if (!cur || rgw_entry_decode(cur->val, cur->vlen, &e))
		return false;
	ours = (e.flags & RGW_ENTRY_MULTIPART) && !memcmp(e.inst, m->e.inst, 16);
	rgw_entry_fini(&e);
	return ours;
}

static void
cm_committed(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;

	q->pending--;
	if (!rc && q->g->conf.test_resend_commits && !m->resent) {
		/* (tests: the same op again, as a resend the OSD did not know would go) */
		m->resent = true;
		cm_send(q);
		return;
	}
	if (rc && rc != -ECANCELED && rc != -ENOENT && rc != -EOVERFLOW && rc != -ENODATA)
		/* (it may have been applied: the counter keeps it, high rather than low) */
		m->bheld_bytes = m->bheld_objs = 0;
	if (rc == -ECANCELED && ++m->tries < CAS_TRIES) {
		read_marker(q, m, cm_reread);
		return;
	}
	if (rc == -EOVERFLOW) {
		drop_manifest(q, m);
		cm_fail(q, 403, "QuotaExceeded", S3_QUOTA_MSG);
		return;
	}
	if (rc) {
		drop_manifest(q, m);
		cm_fail(q, rc == -ECANCELED ? 503 : 500,
			rc == -ECANCELED ? "SlowDown" : "InternalError",
			"committing the index entry failed");
		return;
	}
	cm_done(q);
}

/* The completion's op applied: the counters' moves, the leftovers, the answer. */
static void
cm_done(struct s3_req *q)
{
	struct mp *m = q->op;
	struct rgw_str x;
	char etag[64], hd[64] = "";

	m->committed = true;
	m->bheld_bytes = m->bheld_objs = 0; /* (the completion's own now) */
	if (s3_bucket_quota_applies(q) && (m->vp.dbytes < 0 || m->vp.dobjs < 0))
		s3_bucket_usage(q, CM_MIN(m->vp.dbytes, 0), CM_MIN(m->vp.dobjs, 0), NULL);
	if (m->reserved && (m->vp.dbytes != (int64_t)m->e.size || m->vp.dobjs != 1))
		/* (the reservation against what the commit moved: an overwrite frees) */
		s3_user_usage(q, m->vp.dbytes - (int64_t)m->e.size, m->vp.dobjs - 1, NULL);
	s3_vplan_collect(q, &m->vp, m->shard.oid);
	dead_queue(q, m);
	drop_upload_object(q, m);
	rgw_entry_etag(&m->e, etag, sizeof(etag));
	rgw_str_init(&x);
	rgw_str_adds(&x, XMLHD "<CompleteMultipartUploadResult " XMLNS "><Location>/");
	rgw_str_xml(&x, q->bucket, strlen(q->bucket));
	rgw_str_addc(&x, '/');
	rgw_str_xml(&x, q->key, q->key_len);
	rgw_str_adds(&x, "</Location><Bucket>");
	rgw_str_xml(&x, q->bucket, strlen(q->bucket));
	rgw_str_adds(&x, "</Bucket><Key>");
	rgw_str_xml(&x, q->key, q->key_len);
	rgw_str_adds(&x, "</Key><ETag>");
	rgw_str_xml(&x, etag, strlen(etag));
	rgw_str_adds(&x, "</ETag>");
	if (m->e.ck_alg && ck_elem(m->e.ck_alg))
		rgw_str_addf(&x, "<%s>%s</%s>", ck_elem(m->e.ck_alg), m->e.ck,
			     ck_elem(m->e.ck_alg));
	rgw_str_adds(&x, "</CompleteMultipartUploadResult>");
	if (s3_vmode(&q->b) != S3_V_NEVER)
		snprintf(hd, sizeof(hd), "x-amz-version-id: %s\r\n",
			 m->e.vid[0] ? m->e.vid : "null");
	s3_respond_xml(q, 200, hd[0] ? hd : NULL, &x);
	rgw_str_fini(&x);
}

static void cm_commit(struct s3_req *q);

/* A quota counter's answer to the completion's taking. \return true if refused (answered). */
static bool
cm_refused(struct s3_req *q, int rc, int status, const char *msg)
{
	q->pending--;
	if (!rc)
		return false;
	drop_manifest(q, q->op);
	if (rc == -EOVERFLOW)
		cm_fail(q, 403, "QuotaExceeded", S3_QUOTA_MSG);
	else
		cm_fail(q, status, status == 503 ? "SlowDown" : "InternalError", msg);
	return true;
}

/* The bucket's quota counter took the completion's growth (or refused it). */
static void
cm_btaken(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;

	if (cm_refused(q, rc, 503, "reserving the bucket's quota failed"))
		return;
	m->bheld_bytes = m->bwant_bytes;
	m->bheld_objs = m->bwant_objs;
	cm_send(q);
}

static void
cm_reserved(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;

	if (cm_refused(q, rc, 500, "reserving the user's quota failed"))
		return;
	m->reserved = true;
	cm_commit(q);
}

/* The quotas' counters first (each bounded), then the completion's op. */
static void
cm_commit(struct s3_req *q)
{
	struct mp *m = q->op;
	int rc;

	if (!m->reserved && s3_user_quota_applies(q)) {
		/* (the user's quota takes the object first, bounded) */
		if (s3_user_usage(q, (int64_t)m->e.size, 1, cm_reserved)) {
			drop_manifest(q, m);
			cm_fail(q, 503, "SlowDown", "cannot reserve the user's quota");
		}
		return;
	}

	if ((rc = s3_vplan_put(&m->vp, &q->b, q->key, q->key_len, &m->vr, m->enc.p, m->enc.len,
			       &m->e))) {
		drop_manifest(q, m);
		cm_fail(q, rc == -ENOMEM ? 503 : 500, rc == -ENOMEM ? "SlowDown" : "InternalError",
			rc == -ENOMEM ? "out of memory" : "the index entry is damaged");
		return;
	}
	if (s3_bucket_quota_applies(q) || m->bheld_bytes || m->bheld_objs) {
		/* (the bucket's quota counter holds the growth first, bounded) */
		m->bwant_bytes = s3_bucket_quota_applies(q) ? CM_MAX(m->vp.dbytes, 0) : 0;
		m->bwant_objs = s3_bucket_quota_applies(q) ? CM_MAX(m->vp.dobjs, 0) : 0;
		rc = s3_bucket_hold(q, &m->bheld_bytes, &m->bheld_objs, m->bwant_bytes,
				    m->bwant_objs, cm_btaken);
		if (rc < 0) {
			drop_manifest(q, m);
			cm_fail(q, 503, "SlowDown", "cannot reserve the bucket's quota");
		}
		if (rc)
			return;
	}
	cm_send(q);
}

/* One op on the shard: the upload as read, the entry swapped, the markers. */
static void
cm_send(struct s3_req *q)
{
	struct mp *m = q->op;
	const struct cairn_kv *u = found(m, &m->ukey);
	cairn_op_t *op;

	if (!(op = cairn_op_create())) {
		drop_manifest(q, m);
		cm_fail(q, 503, "SlowDown", "out of memory");
		return;
	}
	s3_shard_guard(&m->shard, op);
	cairn_op_omap_cmp(op, u->key, u->klen, CAIRN_CMP_EQ, u->val, u->vlen);
	s3_vplan_ops(&m->vp, op);
	dead_into(m, op);
	s3_usage_op(q, op, m->vp.dbytes, m->vp.dobjs);
	cairn_op_omap_rm(op, u->key, u->klen);
	s3_submit(q, q->g->meta, m->shard.oid, op, cm_committed);
}

static void
cm_manifest_done(void *arg, int rc)
{
	struct s3_req *q = arg;

	q->pending--;
	if (rc) {
		drop_manifest(q, q->op);
		cm_fail(q, 500, "InternalError", "writing the manifest failed");
		return;
	}
	cm_commit(q);
}

/* The XML element of a checksum in S3's answers ("ChecksumCRC32"), or NULL. */
static const char *
ck_elem(uint8_t alg)
{
	switch ((enum rgw_cksum_alg)alg) {
	case RGW_CK_CRC32:
		return "ChecksumCRC32";
	case RGW_CK_CRC32C:
		return "ChecksumCRC32C";
	case RGW_CK_CRC64NVME:
		return "ChecksumCRC64NVME";
	case RGW_CK_SHA1:
		return "ChecksumSHA1";
	case RGW_CK_SHA256:
		return "ChecksumSHA256";
	default:
		return NULL;
	}
}

/*
 * S3's composite checksum of a multipart object: the algorithm over the parts' raw
 * checksums in order, "<base64>-N". Only when every part has one of the same algorithm
 * (CRC-64/NVME has no composite form in S3: none then).
 */
static void
composite_ck(struct mp *m)
{
	uint8_t alg = m->recs[m->use[0]].ck_alg;
	struct rgw_cksum c;
	char out[48];

	m->e.ck_alg = 0;
	m->e.ck[0] = '\0';
	if (!alg || alg == RGW_CK_CRC64NVME)
		return;
	for (size_t w = 0; w < m->nwant; w++)
		if (m->recs[m->use[w]].ck_alg != alg)
			return;
	if (rgw_cksum_init(&c, (enum rgw_cksum_alg)alg))
		return;
	for (size_t w = 0; w < m->nwant; w++) {
		const char *b = m->recs[m->use[w]].ck;
		size_t bl = strlen(b);
		unsigned char raw[48];
		int n;

		if (bl % 4 || bl > 4 * (sizeof(raw) / 3) ||
		    (n = EVP_DecodeBlock(raw, (const unsigned char *)b, (int)bl)) < 0) {
			rgw_cksum_fini(&c);
			return;
		}
		n -= (bl && b[bl - 1] == '=') + (bl > 1 && b[bl - 2] == '=');
		rgw_cksum_update(&c, raw, (size_t)n);
	}
	rgw_cksum_final(&c, out, sizeof(out));
	rgw_cksum_fini(&c);
	m->e.ck_alg = alg;
	snprintf(m->e.ck, sizeof(m->e.ck), "%s-%zu", out, m->nwant);
}

static int
etag_md5(const char *s, uint8_t out[16])
{
	size_t n;

	while (*s == '"' || *s == ' ')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == '"' || s[n - 1] == ' '))
		n--;
	return n == 32 ? rgw_unhex(s, out, 16) : -EINVAL;
}

static void
cm_loaded(struct s3_req *q)
{
	struct mp *m = q->op;
	const struct cairn_kv *u = found(m, &m->ukey);
	struct rgw_entry rec;
	struct rgw_mpart *mp;
	EVP_MD_CTX *md;
	unsigned l = 16;
	uint64_t total = 0;
	bool *used;
	cairn_op_t *op;
	char oid[64];

	if (!(m->use = calloc(m->nwant, sizeof(*m->use))) ||
	    !(used = calloc(m->nrec + 1, sizeof(*used)))) {
		cm_fail(q, 503, "SlowDown", "out of memory");
		return;
	}
	for (size_t w = 0; w < m->nwant; w++) {
		size_t best = SIZE_MAX;

		for (size_t i = 0; i < m->nrec; i++)
			if (m->recs[i].num == m->want_num[w] &&
			    !memcmp(m->recs[i].md5, m->want_md5[w], 16) &&
			    (best == SIZE_MAX || m->recs[i].mtime_ns > m->recs[best].mtime_ns))
				best = i;
		if (best == SIZE_MAX) {
			free(used);
			cm_fail(q, 400, "InvalidPart",
				"one or more of the specified parts could not be found, or its "
				"ETag did not match");
			return;
		}
		{
			/* a checksum the client names for the part must be the part's */
			const char *el = ck_elem(m->recs[best].ck_alg);
			const char *want = NULL;

			for (uint8_t a = RGW_CK_CRC32; a <= RGW_CK_SHA256 && !want; a++)
				if ((want = rgw_xml_child_text(m->want_x[w], ck_elem(a))) &&
				    (!el || a != m->recs[best].ck_alg ||
				     strcmp(want, m->recs[best].ck))) {
					free(used);
					cm_fail(q, 400, "InvalidPart",
						"a part's checksum does not match the one it was "
						"uploaded with");
					return;
				}
		}
		if (w + 1 < m->nwant && m->recs[best].size < RGW_PART_MIN) {
			free(used);
			cm_fail(q, 400, "EntityTooSmall",
				"your proposed upload is smaller than the minimum allowed size "
				"(5 MiB for every part but the last)");
			return;
		}
		m->use[w] = best;
		used[best] = true;
		total += m->recs[best].size;
	}
	if (total > (5ull << 40)) {
		free(used);
		cm_fail(q, 400, "EntityTooLarge", "the object would exceed 5 TiB");
		return;
	}
	for (size_t i = 0; i < m->nrec; i++)
		if (!used[i] && add_dead(m, m->recs[i].inst, m->recs[i].size)) {
			free(used);
			cm_fail(q, 503, "SlowDown", "out of memory");
			return;
		}
	free(used);
	for (size_t i = 0; i < m->npend; i++)
		if (add_dead(m, m->pend[i].inst, m->pend[i].size)) {
			cm_fail(q, 503, "SlowDown", "out of memory");
			return;
		}
	/* The new entry: the upload's record, the parts' sizes and MD5s. */
	if (rgw_entry_decode(u->val, u->vlen, &rec)) {
		cm_fail(q, 500, "InternalError", "the upload's record is damaged");
		return;
	}
	s3_meta_free(&m->e);
	if (s3_meta_dup(&m->e, &rec, true, true)) {
		rgw_entry_fini(&rec);
		cm_fail(q, 503, "SlowDown", "out of memory");
		return;
	}
	rgw_entry_fini(&rec);
	m->e.flags = RGW_ENTRY_MULTIPART;
	m->e.parts = (uint32_t)m->nwant;
	m->e.size = total;
	m->e.mtime_ns = rgw__now_ns();
	m->e.owner = q->uid;
	m->e.vid[0] = '\0';
	if (s3_vmode(&q->b) == S3_V_ENABLED)
		rgw_vid_make(m->e.mtime_ns, m->e.vid);
	if (!(mp = calloc(m->nwant, sizeof(*mp))) || !(md = EVP_MD_CTX_new())) {
		free(mp);
		cm_fail(q, 503, "SlowDown", "out of memory");
		return;
	}
	EVP_DigestInit_ex(md, EVP_md5(), NULL);
	for (size_t w = 0; w < m->nwant; w++) {
		const struct rgw_part *p = &m->recs[m->use[w]];

		EVP_DigestUpdate(md, p->md5, 16);
		memcpy(mp[w].inst, p->inst, 16);
		mp[w].size = p->size;
	}
	EVP_DigestFinal_ex(md, m->e.md5, &l);
	EVP_MD_CTX_free(md);
	composite_ck(m);
	rgw_manifest_encode(mp, m->nwant, &m->man);
	free(mp);
	rgw_entry_encode(&m->e, &m->enc);
	if (m->man.oom || m->enc.oom || !(op = cairn_op_create())) {
		cm_fail(q, 503, "SlowDown", "out of memory");
		return;
	}
	/* The manifest is object 0 of the new instance (with the entry's copy, as a PUT's). */
	s3_data_oid(m->e.inst, 0, oid, sizeof(oid));
	cairn_op_write_full(op, m->man.p, m->man.len);
	cairn_op_setxattr(op, "rgw.entry", m->enc.p, m->enc.len);
	s3_submit(q, q->data, oid, op, cm_manifest_done);
}

static void
cm_marker(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct mp *m = q->op;

	if (!marker_read(q, m, rc))
		return;
	m->loaded = cm_loaded;
	cm_random_bytes(m->e.inst, 16); /* (the manifest's instance, named in the close) */
	m->have_inst = true;
	load_page(q, true);
}

static void
cm_body(struct s3_req *q)
{
	struct mp *m = mp_new(q, "CompleteMultipartUpload");
	char err[128];
	size_t n = 0;

	if (!m || mp_names(q, m, rgw_uri_q(&q->u, "uploadId")))
		return;
	if (rgw_xml_parse(q->body.p ? q->body.p : "", q->body.len, &m->x, err, sizeof(err)) ||
	    strcmp(m->x->name, "CompleteMultipartUpload")) {
		s3_error(q, 400, "MalformedXML", "the XML you provided was not well-formed");
		return;
	}
	for (const struct rgw_xml *c = m->x->child; c; c = c->next)
		if (!strcmp(c->name, "Part"))
			n++;
	if (n == 0 || n > RGW_PARTS_MAX) {
		s3_error(q, 400, "MalformedXML", "a completion lists 1 to 10,000 parts");
		return;
	}
	if (!(m->want_num = calloc(n, sizeof(*m->want_num))) ||
	    !(m->want_md5 = calloc(n, sizeof(*m->want_md5))) ||
	    !(m->want_x = calloc(n, sizeof(*m->want_x)))) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	for (const struct rgw_xml *c = m->x->child; c; c = c->next) {
		const char *pn, *et;
		char *end = NULL;
		unsigned long num;

		if (strcmp(c->name, "Part"))
			continue;
		pn = rgw_xml_child_text(c, "PartNumber");
		et = rgw_xml_child_text(c, "ETag");
		num = pn ? strtoul(pn, &end, 10) : 0;
		if (!pn || !*pn || *end || num < 1 || num > RGW_PARTS_MAX) {
			s3_error(q, 400, "InvalidArgument", "PartNumber must be from 1 to 10000");
			return;
		}
		if (!et || etag_md5(et, m->want_md5[m->nwant])) {
			s3_error(q, 400, "InvalidPart", "a part's ETag is missing or malformed");
			return;
		}
		if (m->nwant && num <= m->want_num[m->nwant - 1]) {
			s3_error(q, 400, "InvalidPartOrder",
				 "the list of parts was not in ascending order");
			return;
		}
		m->want_x[m->nwant] = c;
		m->want_num[m->nwant++] = (uint32_t)num;
	}
	read_marker(q, m, cm_marker);
}

static void
cm_bucket(struct s3_req *q)
{
	q->op_name = "CompleteMultipartUpload";
	if (!s3_allow_bucket(q, &q->b, S3_P_WRITE)) {
		s3_deny(q);
		return;
	}
	/* (s3_read_body keeps its state in q->op until it calls cm_body) */
	s3_read_body(q, RGW_XML_MAX, cm_body);
}

void
s3_mp_complete(struct s3_req *q)
{
	s3_bucket_load(q, cm_bucket);
}

/* ---- ListMultipartUploads ---- */

struct lu {
	struct cairn_kv *kvs; /* every shard's markers read so far, in key order */
	size_t n;
	struct cairn_kv *got; /* the last read's */
	size_t ngot;
	bool more;
	int rval;
	struct rgw_str after, pfx;
	const char *prefix;
	size_t want; /* max-uploads + 1 (one more: is the answer truncated?) */
	struct s3_shard shard;
};

static void lu_read(struct s3_req *q);

static void
lu_free(struct s3_req *q)
{
	struct lu *l = q->op;

	if (!l)
		return;
	cairn_kvs_free(l->kvs, l->n);
	cairn_kvs_free(l->got, l->ngot);
	rgw_str_fini(&l->after);
	rgw_str_fini(&l->pfx);
	free(l);
	q->op = NULL;
}

/*
 * A shard's markers read: those of its range kept (a split's copy of the
 * next shard's is left to that shard). \return 1 if the listing goes on
 * (after this page, or in the next shard), 0 if it is complete, -ENOMEM.
 */
static int
lu_take(struct s3_req *q, struct lu *l)
{
	size_t hl = 0, n = l->n;
	const char *hi = s3_shard_hi(&l->shard, &hl);
	struct cairn_kv *all = realloc(l->kvs, (l->n + l->ngot + 1) * sizeof(*all));
	bool past = false;
	size_t pl = l->prefix ? strlen(l->prefix) : 0;

	if (!all)
		return -ENOMEM;
	l->kvs = all;
	for (size_t i = 0; i < l->ngot; i++) {
		struct cairn_kv *kv = &l->got[i];
		const char *k = (const char *)kv->key + 2;
		size_t kl = kv->klen - 2;
		const char *z = kv->klen > 2 ? memchr(k, 0, kl) : NULL;
		size_t sk = z ? (size_t)(z - k) : kl, c = CM_MIN(sk, hl);
		int cmp = hi ? (c ? memcmp(k, hi, c) : 0) : -1;

		if (hi && (cmp > 0 || (!cmp && sk >= hl)))
			past = true;
		if (past) {
			free(kv->key);
			free(kv->val);
			continue;
		}
		all[n++] = *kv;
	}
	free(l->got);
	l->got = NULL;
	if (l->ngot) {
		/* (the next page after this one's last marker) */
		const struct cairn_kv *last = n > l->n ? &all[n - 1] : NULL;

		rgw_str_reset(&l->after);
		if (last)
			rgw_str_add(&l->after, last->key, last->klen);
	}
	l->ngot = 0;
	l->n = n;
	if (l->n >= l->want)
		return 0; /* (one more than a page: the answer is truncated) */
	if (l->more && !past)
		return 1;
	if (!hi)
		return 0; /* (the last shard) */
	if (pl && !(hl >= pl && !memcmp(hi, l->prefix, pl))) {
		int c = memcmp(hi, l->prefix, CM_MIN(hl, pl));

		if (c > 0 || (!c && hl > pl))
			return 0; /* (the next shard's keys are all past the prefix's) */
	}
	s3_shard_pick(&q->b, &q->bc, hi, hl, &l->shard);
	return 1;
}

static void
lu_done(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct lu *l = q->op;
	const char *prefix = rgw_uri_q(&q->u, "prefix");
	const char *km = rgw_uri_q(&q->u, "key-marker");
	const char *um = rgw_uri_q(&q->u, "upload-id-marker");
	const char *mx = rgw_uri_q(&q->u, "max-uploads");
	unsigned long max = mx ? strtoul(mx, NULL, 10) : 1000;
	struct rgw_str x;
	size_t shown = 0;
	bool trunc = false;
	const char *nk = NULL, *nu = NULL;
	size_t nkl = 0;

	q->pending--;
	if (!rc && s3_shard_moved(q, &l->shard))
		return; /* (split since the map was read: again with the new one) */
	if (!rc)
		rc = l->rval;
	if (rc) {
		s3_error_rc(q, rc, "listing the uploads");
		return;
	}
	if ((rc = lu_take(q, l)) > 0) {
		lu_read(q);
		return;
	}
	if (rc) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	if (max > 1000 || (mx && !*mx))
		max = 1000;
	rgw_str_init(&x);
	rgw_str_adds(&x, XMLHD "<ListMultipartUploadsResult " XMLNS "><Bucket>");
	rgw_str_xml(&x, q->bucket, strlen(q->bucket));
	rgw_str_adds(&x, "</Bucket><KeyMarker>");
	if (km)
		rgw_str_xml(&x, km, strlen(km));
	rgw_str_adds(&x, "</KeyMarker><UploadIdMarker>");
	if (um)
		rgw_str_xml(&x, um, strlen(um));
	rgw_str_adds(&x, "</UploadIdMarker>");
	if (prefix) {
		rgw_str_adds(&x, "<Prefix>");
		rgw_str_xml(&x, prefix, strlen(prefix));
		rgw_str_adds(&x, "</Prefix>");
	}
	{
		struct rgw_str ups;

		rgw_str_init(&ups);
		for (size_t i = 0; i < l->n; i++) {
			const char *k = (const char *)l->kvs[i].key + 2;
			size_t kl = l->kvs[i].klen - 2;
			const char *z = memchr(k, 0, kl);
			struct rgw_entry e;
			char date[40];

			if (!z || (size_t)(k + kl - (z + 1)) != RGW_UPLOAD_LEN)
				continue;
			if (shown == max) {
				trunc = true;
				break;
			}
			if (rgw_entry_decode(l->kvs[i].val, l->kvs[i].vlen, &e))
				continue;
			rgw__iso8601(e.mtime_ns, date, sizeof(date));
			rgw_str_adds(&ups, "<Upload><Key>");
			rgw_str_xml(&ups, k, (size_t)(z - k));
			rgw_str_adds(&ups, "</Key><UploadId>");
			rgw_str_add(&ups, z + 1, RGW_UPLOAD_LEN);
			rgw_str_adds(&ups, "</UploadId><Initiator><ID>");
			rgw_str_xml(&ups, e.owner, strlen(e.owner));
			rgw_str_adds(&ups, "</ID><DisplayName>");
			rgw_str_xml(&ups, e.owner, strlen(e.owner));
			rgw_str_adds(&ups, "</DisplayName></Initiator>");
			s3_owner_xml(&ups, e.owner);
			rgw_str_addf(
				&ups,
				"<StorageClass>STANDARD</StorageClass><Initiated>%s</Initiated>"
				"</Upload>",
				date);
			rgw_entry_fini(&e);
			nk = k;
			nkl = (size_t)(z - k);
			nu = z + 1;
			shown++;
		}
		if (l->more && shown == max)
			trunc = true;
		if (trunc && nk) {
			rgw_str_adds(&x, "<NextKeyMarker>");
			rgw_str_xml(&x, nk, nkl);
			rgw_str_adds(&x, "</NextKeyMarker><NextUploadIdMarker>");
			rgw_str_add(&x, nu, RGW_UPLOAD_LEN);
			rgw_str_adds(&x, "</NextUploadIdMarker>");
		}
		rgw_str_addf(&x, "<MaxUploads>%lu</MaxUploads><IsTruncated>%s</IsTruncated>", max,
			     trunc ? "true" : "false");
		rgw_str_add(&x, ups.p ? ups.p : "", ups.len);
		rgw_str_fini(&ups);
	}
	rgw_str_adds(&x, "</ListMultipartUploadsResult>");
	s3_respond_xml(q, 200, NULL, &x);
	rgw_str_fini(&x);
}

static void
lu_loaded(struct s3_req *q)
{
	const char *prefix = rgw_uri_q(&q->u, "prefix");
	const char *km = rgw_uri_q(&q->u, "key-marker");
	const char *um = rgw_uri_q(&q->u, "upload-id-marker");
	struct lu *l;

	q->op_name = "ListMultipartUploads";
	if (!s3_allow_bucket(q, &q->b, S3_P_READ)) {
		s3_deny(q);
		return;
	}
	if (!(l = calloc(1, sizeof(*l)))) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	q->op = l;
	q->op_free = lu_free;
	l->prefix = prefix && *prefix ? prefix : NULL;
	{
		const char *mx = rgw_uri_q(&q->u, "max-uploads");
		unsigned long max = mx ? strtoul(mx, NULL, 10) : 1000;

		l->want = (max > 1000 || (mx && !*mx) ? 1000 : max) + 1;
	}
	rgw_str_init(&l->after);
	rgw_str_init(&l->pfx);
	rgw_str_adds(&l->pfx, RGW_SYS_UPLOAD);
	if (prefix)
		rgw_str_adds(&l->pfx, prefix);
	if (km && *km) {
		rgw_str_adds(&l->after, RGW_SYS_UPLOAD);
		rgw_str_adds(&l->after, km);
		if (um && *um) {
			rgw_str_addc(&l->after, '\0');
			rgw_str_adds(&l->after, um);
		} else {
			rgw_str_addc(&l->after, '\x01'); /* (past every upload of the key) */
		}
	}
	if (l->pfx.oom || l->after.oom) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	/* (a key's upload markers sit in its shard's system region: the listing walks the
	 * shards in key order from the marker's, or the prefix's, rgw.md §3.1.1) */
	if (km && *km && (!l->prefix || strcmp(km, l->prefix) > 0))
		s3_shard_pick(&q->b, &q->bc, km, strlen(km), &l->shard);
	else
		s3_shard_pick(&q->b, &q->bc, l->prefix ? l->prefix : "",
			      l->prefix ? strlen(l->prefix) : 0, &l->shard);
	lu_read(q);
}

static void
lu_read(struct s3_req *q)
{
	struct lu *l = q->op;
	cairn_op_t *op = cairn_op_create();

	if (!op) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	l->rval = 0;
	l->more = false;
	s3_shard_read(&l->shard, op);
	cairn_op_omap_list(op, l->after.len ? l->after.p : NULL, l->after.len, l->pfx.p, l->pfx.len,
			   (unsigned)(l->want - l->n), &l->got, &l->ngot, &l->more, &l->rval);
	s3_submit(q, q->g->meta, l->shard.oid, op, lu_done);
}

void
s3_mp_list_uploads(struct s3_req *q)
{
	lu_loaded(q);
}
