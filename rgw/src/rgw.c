/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gateway: threads and their completion queues, a request's way from
 * its head to an operation (addressing, auth), the caches of keys and
 * buckets, errors and the access log.
 *
 * Every cluster op a request needs goes out asynchronously; its completion
 * lands on the thread's cairn_cq, whose fd the thread's reactor polls, and
 * the request's next step runs there. No step waits.
 */
#include "rgw_int.h"
#include "rgw/policy.h"
#include "cm/err.h"
#include "cm/log.h"
#include "cm/random.h"

#include <jansson.h>
#include <poll.h>

CM_LOG_SUBSYS(rgw);

/* ---- time ---- */

int64_t
rgw__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
rgw__iso8601(int64_t ns, char *out, size_t len)
{
	time_t s = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&s, &tm);
	snprintf(out, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ns / 1000000 % 1000));
}

void
rgw__http_date(int64_t ns, char *out, size_t len)
{
	time_t s = (time_t)(ns / 1000000000);
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(out, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* ---- async ops on the thread's completion queue ---- */

struct aio {
	rgw_aio_cb cb;
	void *arg;
	cairn_op_t *op;
};

static void cq_poll(struct rgw_thr *t);

static void
cq_ready(struct cm_io *io, int res)
{
	struct rgw_thr *t = io->arg;
	cairn_completion_t *cs[64];
	size_t n;

	t->polling = false;
	(void)res;
	while ((n = cairn_cq_reap(t->cq, cs, CM_ARRAY_SIZE(cs))) > 0) {
		for (size_t i = 0; i < n; i++) {
			struct aio *a = cairn_completion_arg(cs[i]);
			int rc = cairn_completion_rc(cs[i]);

			cairn_completion_release(cs[i]);
			t->inflight--;
			a->cb(a->arg, rc);
			cairn_op_release(a->op);
			free(a);
		}
	}
	cq_poll(t);
}

static void
cq_poll(struct rgw_thr *t)
{
	if (t->polling)
		return;
	t->cqio.cb = cq_ready;
	t->cqio.arg = t;
	if (cm_io_poll(t->r, &t->cqio, cairn_cq_fd(t->cq), POLLIN) == 0)
		t->polling = true;
	else
		CM_ERR("rgw: cannot poll the completion queue");
}

int
rgw__aio(struct rgw_thr *t, cairn_ioctx_t *io, const char *oid, cairn_op_t *op, rgw_aio_cb cb,
	 void *arg)
{
	struct aio *a = malloc(sizeof(*a));
	cairn_completion_t *c;
	int rc;

	if (!a) {
		cairn_op_release(op);
		return -ENOMEM;
	}
	a->cb = cb;
	a->arg = arg;
	a->op = op;
	if (!(c = cairn_completion_create_cq(t->cq, a))) {
		cairn_op_release(op);
		free(a);
		return -ENOMEM;
	}
	/* (never wait on the throttle on a reactor: -EAGAIN is a 503 SlowDown) */
	{
		struct cairn_aio_opts o = { .opts_size = sizeof(o), .flags = CAIRN_AIO_NOWAIT };

		rc = cairn_aio_operate_opts(io, oid, op, c, &o);
	}
	if (rc) {
		cairn_completion_release(c);
		cairn_op_release(op);
		free(a);
		return rc;
	}
	t->inflight++;
	return 0;
}

/* ---- caches (keys and buckets), a TTL each ---- */

struct rgw_cache_ent {
	char *name;
	void *val;
	size_t vlen;
	int64_t expires_ns;
	struct rgw_cache_ent *next;
};

/* name's live entry (expired ones dropped on the way), or NULL; under g->mu. */
static struct rgw_cache_ent *
cache_find(struct rgw_cache_ent **head, const char *name)
{
	int64_t now = rgw__now_ns();

	for (struct rgw_cache_ent **pp = head, *e; (e = *pp);) {
		if (e->expires_ns < now) {
			*pp = e->next;
			free(e->name);
			free(e->val);
			free(e);
			continue;
		}
		if (!strcmp(e->name, name))
			return e;
		pp = &e->next;
	}
	return NULL;
}

static bool
cache_get(struct rgw *g, struct rgw_cache_ent **head, const char *name, void *out, size_t len)
{
	struct rgw_cache_ent *e;
	bool hit = false;

	pthread_mutex_lock(&g->mu);
	if ((e = cache_find(head, name)) && e->vlen == len) {
		memcpy(out, e->val, len);
		hit = true;
	}
	pthread_mutex_unlock(&g->mu);
	return hit;
}

/* A copy of name's value (malloc'd: *out, *len), or false. */
static bool
cache_get_dup(struct rgw *g, struct rgw_cache_ent **head, const char *name, void **out, size_t *len)
{
	struct rgw_cache_ent *e;
	bool hit = false;

	pthread_mutex_lock(&g->mu);
	if ((e = cache_find(head, name)) && (*out = malloc(e->vlen ? e->vlen : 1))) {
		memcpy(*out, e->val, e->vlen);
		*len = e->vlen;
		hit = true;
	}
	pthread_mutex_unlock(&g->mu);
	return hit;
}

/* Under g->mu. */
static void
cache_unlink(struct rgw_cache_ent **head, const char *name)
{
	for (struct rgw_cache_ent **pp = head, *e; (e = *pp);) {
		if (!strcmp(e->name, name)) {
			*pp = e->next;
			free(e->name);
			free(e->val);
			free(e);
			continue;
		}
		pp = &e->next;
	}
}

/*
 * The caches' generation: moved by every drop (a local change, another gateway's notify, a
 * lost watch). A load remembers it when it starts and caches what it read only if it did
 * not move meanwhile: a read answered before a change but handled after its notify must
 * not come back as the cached value.
 */
static uint64_t
cache_gen(struct rgw *g)
{
	uint64_t v;

	pthread_mutex_lock(&g->mu);
	v = g->cache_gen;
	pthread_mutex_unlock(&g->mu);
	return v;
}

static void
cache_drop(struct rgw *g, struct rgw_cache_ent **head, const char *name)
{
	pthread_mutex_lock(&g->mu);
	g->cache_gen++;
	cache_unlink(head, name);
	pthread_mutex_unlock(&g->mu);
}

static void
cache_put(struct rgw *g, struct rgw_cache_ent **head, const char *name, const void *val, size_t len,
	  uint64_t gen)
{
	struct rgw_cache_ent *e = calloc(1, sizeof(*e));

	if (!e || !(e->name = strdup(name)) || !(e->val = malloc(len))) {
		if (e)
			free(e->name);
		free(e);
		return;
	}
	memcpy(e->val, val, len);
	e->vlen = len;
	e->expires_ns = rgw__now_ns() + (int64_t)g->conf.cache_ttl_ms * 1000000;
	pthread_mutex_lock(&g->mu);
	if (g->cache_gen != gen || !g->watch_ok) {
		/* (changed since the read began, or no invalidation: not cached) */
		pthread_mutex_unlock(&g->mu);
		free(e->name);
		free(e->val);
		free(e);
		return;
	}
	cache_unlink(head, name);
	e->next = *head;
	*head = e;
	pthread_mutex_unlock(&g->mu);
}

static void
cache_free(struct rgw_cache_ent *e)
{
	while (e) {
		struct rgw_cache_ent *n = e->next;

		free(e->name);
		free(e->val);
		free(e);
		e = n;
	}
}

void
s3_bucket_forget(struct rgw *g, const char *name)
{
	cache_drop(g, &g->buckets, name);
}

/* ---- invalidation by watch/notify (RGW_NOTIFY_OID) ---- */

static void
on_notify(cairn_watch_t *w, const struct cairn_notify_event *ev, void *arg)
{
	struct rgw *g = arg;
	const char *p = ev->payload;
	char name[RGW_KEY_MAX + 1];

	if (ev->len >= 2 && ev->len - 1 < sizeof(name)) {
		memcpy(name, p + 1, ev->len - 1);
		name[ev->len - 1] = '\0';
		if (p[0] == RGW_NOTIFY_BUCKET)
			cache_drop(g, &g->buckets, name);
		else if (p[0] == RGW_NOTIFY_KEY)
			cache_drop(g, &g->keys, name);
	}
	(void)cairn_notify_ack(w, ev->notify_id, NULL, 0);
}

static void
on_watch_err(cairn_watch_t *w, int err, void *arg)
{
	struct rgw *g = arg;

	(void)w;
	/* (-ENOTCONN: the watch was dropped and made again, notifies may have been missed;
	 * another error: it could not be made again, so nothing is cached until it is) */
	CM_WARN_RC(err, "rgw: the invalidation watch %s: dropping every cached entry",
		   err == -ENOTCONN ? "was lost and made again" : "is lost");
	pthread_mutex_lock(&g->mu);
	g->cache_gen++;
	g->watch_ok = err == -ENOTCONN;
	cache_free(g->keys);
	cache_free(g->buckets);
	g->keys = g->buckets = NULL;
	pthread_mutex_unlock(&g->mu);
}

static int
watch_start(struct rgw *g)
{
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!op)
		return -ENOMEM;
	cairn_op_create_object(op, false);
	rc = cairn_operate(g->meta, RGW_NOTIFY_OID, op, NULL);
	cairn_op_release(op);
	if (rc)
		return rc;
	if ((rc = cairn_watch(g->meta, RGW_NOTIFY_OID, 10000, on_notify, on_watch_err, g,
			      &g->watch)))
		return rc;
	pthread_mutex_lock(&g->mu);
	g->watch_ok = true;
	pthread_mutex_unlock(&g->mu);
	return 0;
}

struct bnotify {
	struct s3_req *q;
	s3_step next;
	struct cairn_notify_result res;
	int rval;
	char payload[72];
};

static void
bucket_notified(void *arg, int rc)
{
	struct bnotify *n = arg;
	struct s3_req *q = n->q;
	s3_step next = n->next;

	q->pending--;
	if (!rc)
		rc = n->rval;
	if (rc)
		CM_WARN_RC(rc, "%s: telling the other gateways of bucket %s's change",
			   rgw_req_id(q->r), q->bucket);
	else if (n->res.ntimeouts)
		CM_WARN("%s: bucket %s changed: %zu gateway(s) did not acknowledge in %u ms (they "
			"drop it within the cache's TTL)",
			rgw_req_id(q->r), q->bucket, n->res.ntimeouts, RGW_NOTIFY_TIMEOUT_MS);
	cairn_notify_result_free(&n->res);
	free(n);
	next(q);
}

void
s3_bucket_changed(struct s3_req *q, s3_step next)
{
	struct bnotify *n;
	cairn_op_t *op;
	size_t len;

	s3_bucket_forget(q->g, q->bucket);
	if (!(n = calloc(1, sizeof(*n))) || !(op = cairn_op_create())) {
		free(n);
		next(q); /* (the others: within the TTL) */
		return;
	}
	n->q = q;
	n->next = next;
	len = (size_t)snprintf(n->payload, sizeof(n->payload), "%c%s", RGW_NOTIFY_BUCKET,
			       q->bucket);
	cairn_op_notify(op, n->payload, len, RGW_NOTIFY_TIMEOUT_MS, &n->res, &n->rval);
	if (rgw__aio(q->t, q->g->meta, RGW_NOTIFY_OID, op, bucket_notified, n)) {
		free(n);
		next(q);
		return;
	}
	q->pending++;
}

/* ---- responses ---- */

static void
access_log(struct s3_req *q)
{
	struct rgw *g = q->g;
	char when[40];

	if (!g->alog)
		return;
	rgw__iso8601(rgw__now_ns(), when, sizeof(when));
	pthread_mutex_lock(&g->mu);
	fprintf(g->alog, "%s %s %s %s %s %s %d %" PRIu64 " %" PRIu64 " %.3f %s\n", when,
		rgw_req_peer(q->r), rgw_req_id(q->r), q->anon ? "-" : (q->uid[0] ? q->uid : "-"),
		q->h->method_name, q->h->target, q->status, q->bytes_in, q->bytes_out,
		(double)(rgw__now_ns() - q->started_ns) / 1e6, q->op_name ? q->op_name : "-");
	fflush(g->alog);
	pthread_mutex_unlock(&g->mu);
}

static void
req_free(struct s3_req *q)
{
	if (q->op_free)
		q->op_free(q);
	rgw_uri_fini(&q->u);
	free(q->bucket);
	free(q->key);
	rgw_str_fini(&q->body);
	s3_bconf_fini(&q->bc);
	if (q->md5)
		EVP_MD_CTX_free(q->md5);
	if (q->sha)
		EVP_MD_CTX_free(q->sha);
	cairn_ioctx_destroy(q->data);
	cairn_ioctx_destroy(q->mpio);
	OPENSSL_cleanse(q->secret, sizeof(q->secret));
	OPENSSL_cleanse(q->sigkey, sizeof(q->sigkey));
	free(q);
}

void
s3_done(struct s3_req *q)
{
	access_log(q);
	rgw_req_set_ctx(q->r, NULL);
	rgw_req_end(q->r);
	req_free(q);
}

static void
xml_sent(struct rgw_req *r, int res, void *arg)
{
	struct s3_req *q = arg;

	(void)r;
	(void)res;
	s3_done(q);
}

void
s3_respond_xml(struct s3_req *q, int status, const char *hdrs, struct rgw_str *xml)
{
	struct rgw_str h;
	size_t len = xml ? xml->len : 0;
	struct iovec iov;

	q->status = status;
	rgw_str_init(&h);
	if (hdrs)
		rgw_str_adds(&h, hdrs);
	if (len && (!hdrs || !strcasestr(hdrs, "content-type:")))
		rgw_str_adds(&h, "Content-Type: application/xml\r\n");
	if (h.oom || (xml && xml->oom) || rgw_req_send_head(q->r, status, rgw_str_cstr(&h), len)) {
		rgw_str_fini(&h);
		q->status = 500;
		rgw_req_close_after(q->r);
		s3_done(q);
		return;
	}
	rgw_str_fini(&h);
	q->bytes_out += len;
	/* (the body lives in q->body's place until sent: keep it there) */
	if (xml && xml != &q->body) {
		rgw_str_fini(&q->body);
		q->body = *xml;
		rgw_str_init(xml);
	}
	iov.iov_base = q->body.p;
	iov.iov_len = len;
	if (rgw_req_send(q->r, &iov, len ? 1 : 0, xml_sent, q))
		s3_done(q);
}

void
s3_error(struct s3_req *q, int status, const char *code, const char *msg)
{
	s3_error_hdrs(q, status, code, msg, NULL);
}

void
s3_error_hdrs(struct s3_req *q, int status, const char *code, const char *msg, const char *hdrs)
{
	struct rgw_str x;

	rgw_str_init(&x);
	rgw_str_adds(&x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>");
	rgw_str_adds(&x, code);
	rgw_str_adds(&x, "</Code><Message>");
	rgw_str_xml(&x, msg, strlen(msg));
	rgw_str_adds(&x, "</Message>");
	if (q->bucket) {
		rgw_str_adds(&x, "<BucketName>");
		rgw_str_xml(&x, q->bucket, strlen(q->bucket));
		rgw_str_adds(&x, "</BucketName>");
	}
	if (q->key) {
		rgw_str_adds(&x, "<Key>");
		rgw_str_xml(&x, q->key, q->key_len);
		rgw_str_adds(&x, "</Key>");
	}
	rgw_str_adds(&x, "<Resource>");
	rgw_str_xml(&x, q->u.path ? q->u.path : "/", q->u.path ? q->u.path_len : 1);
	rgw_str_addf(&x, "</Resource><RequestId>%s</RequestId></Error>", rgw_req_id(q->r));
	CM_INFO("%s %s %s: %d %s: %s", rgw_req_id(q->r), q->h->method_name, q->h->target, status,
		code, msg);
	if (q->h->method == RGW_M_HEAD) {
		rgw_str_fini(&x);
		s3_respond_xml(q, status, hdrs, NULL);
		return;
	}
	s3_respond_xml(q, status, hdrs, &x);
}

int
s3_rc_status(int rc, const char **code)
{
	switch (rc) {
	case -EAGAIN:
		*code = "SlowDown";
		return 503;
	case -ENOSPC:
	case -EDQUOT:
		*code = "InsufficientStorage";
		return 507;
	case -EPERM:
	case -EACCES:
		*code = "AccessDenied";
		return 403;
	case -ETIMEDOUT:
		*code = "ServiceUnavailable";
		return 503;
	default:
		*code = "InternalError";
		return 500;
	}
}

void
s3_error_rc(struct s3_req *q, int rc, const char *what)
{
	const char *code;
	int status = s3_rc_status(rc, &code);
	char m[256];

	snprintf(m, sizeof(m), "%s: %s", what, cm_strerror(rc));
	if (status == 500)
		CM_WARN_RC(rc, "%s %s: %s", rgw_req_id(q->r), q->h->target, what);
	s3_error(q, status, code, m);
}

/* ---- small bodies ---- */

struct body_rd {
	size_t max;
	s3_step next;
	bool failed;
};

static void
body_chunk(struct rgw_req *r, const char *data, ssize_t len, void *arg)
{
	struct s3_req *q = arg;
	struct body_rd *b = q->op;

	(void)r;
	if (!b || b->failed)
		return; /* (answered already: the rest of the body is not ours) */
	if (len < 0) {
		free(b);
		q->op = NULL;
		q->status = 400;
		rgw_req_close_after(q->r);
		s3_done(q);
		return;
	}
	if (len == 0) {
		s3_step next = b->next;

		free(b);
		q->op = NULL;
		next(q);
		return;
	}
	q->bytes_in += (size_t)len;
	if (q->body.len + (size_t)len > b->max) {
		b->failed = true;
		rgw_req_close_after(q->r);
		free(b);
		q->op = NULL;
		s3_error(q, 400, "MaxMessageLengthExceeded", "the request body is too long");
		return;
	}
	rgw_str_add(&q->body, data, (size_t)len);
	if (q->sha)
		EVP_DigestUpdate(q->sha, data, (size_t)len);
	if (q->md5)
		EVP_DigestUpdate(q->md5, data, (size_t)len);
}

void
s3_read_body(struct s3_req *q, size_t max, s3_step next)
{
	struct body_rd *b = calloc(1, sizeof(*b));

	if (!b) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	if (q->h->has_length && q->h->content_length > max) {
		free(b);
		rgw_req_close_after(q->r);
		s3_error(q, 400, "MaxMessageLengthExceeded", "the request body is too long");
		return;
	}
	b->max = max;
	b->next = next;
	q->op = b;
	rgw_str_reset(&q->body);
	rgw_req_body_read(q->r, body_chunk, q);
}

/* ---- buckets ---- */

struct bload {
	struct s3_req *q;
	struct rgw_bucket *b;
	struct s3_bconf *bc;
	s3_bucket_cb cb;
	void *arg;
	char name[64];
	struct cairn_kv *kvs;
	size_t n;
	int rval;
	uint64_t gen; /* the caches' when the read began */
};

void
s3_bconf_fini(struct s3_bconf *c)
{
	free(c->policy);
	free(c->cors);
	rgw_policy_free(c->pol);
	rgw_shardmap_fini(&c->shards);
	free(c->map);
	memset(c, 0, sizeof(*c));
}

/* The cache's form of a bucket: its record, then u32 length + bytes of policy, CORS, shard map. */
static bool
blob_put(struct rgw_str *s, const char *v, size_t n)
{
	uint32_t l = (uint32_t)n;

	rgw_str_add(s, &l, sizeof(l));
	rgw_str_add(s, v ? v : "", n);
	return !s->oom;
}

static bool
blob_take(const uint8_t **p, const uint8_t *end, char **out, size_t *n)
{
	uint32_t l;

	if ((size_t)(end - *p) < sizeof(l))
		return false;
	memcpy(&l, *p, sizeof(l));
	*p += sizeof(l);
	if ((size_t)(end - *p) < l)
		return false;
	if (l && !(*out = malloc(l + 1)))
		return false;
	if (l) {
		memcpy(*out, *p, l);
		(*out)[l] = '\0';
	}
	*n = l;
	*p += l;
	return true;
}

/* bc's shard map decoded, its policy parsed (a stored policy was checked when it was put). */
static int
bconf_ready(struct s3_req *q, struct s3_bconf *bc, const char *bucket)
{
	char err[160];
	int rc;

	if ((rc = rgw_shardmap_decode(bc->map, bc->map_len, &bc->shards))) {
		/* (no shard can be chosen: every request on the bucket fails, loudly) */
		CM_ERR("%s: bucket %s: its index shard map (%zu bytes) does not decode: %s",
		       rgw_req_id(q->r), bucket, bc->map_len, strerror(-rc));
		return rc == -EBADMSG ? -EIO : rc;
	}
	if (!bc->policy)
		return 0;
	if (strlen(bc->policy) != bc->policy_len ||
	    rgw_policy_parse(bc->policy, bc->policy_len, bucket, &bc->pol, err, sizeof(err))) {
		/* (then nothing is granted but the owner's policy calls: she can replace it) */
		CM_WARN("%s: bucket %s: the stored policy does not parse: %s", rgw_req_id(q->r),
			bucket, strlen(bc->policy) != bc->policy_len ? "it holds a NUL" : err);
		bc->broken = true;
	}
	return 0;
}

static bool
bucket_cached(struct s3_req *q, const char *name, struct rgw_bucket *b, struct s3_bconf *bc)
{
	const uint8_t *p, *end;
	void *v;
	size_t len;
	bool ok;

	if (!cache_get_dup(q->g, &q->g->buckets, name, &v, &len))
		return false;
	p = v;
	end = p + len;
	ok = len >= sizeof(*b);
	if (ok) {
		memcpy(b, p, sizeof(*b));
		p += sizeof(*b);
	}
	if (ok && bc)
		ok = blob_take(&p, end, &bc->policy, &bc->policy_len) &&
		     blob_take(&p, end, &bc->cors, &bc->cors_len) &&
		     blob_take(&p, end, &bc->map, &bc->map_len);
	free(v);
	if (!ok && bc)
		s3_bconf_fini(bc);
	return ok;
}

static void
bucket_loaded(void *arg, int rc)
{
	struct bload *l = arg;
	struct s3_req *q = l->q;
	s3_bucket_cb cb = l->cb;
	void *cb_arg = l->arg;
	struct s3_bconf tmp = { 0 }, *bc = l->bc ? l->bc : &tmp;
	const struct cairn_kv *rec = NULL;

	q->pending--;
	if (!rc && l->rval)
		rc = l->rval;
	for (size_t i = 0; !rc && i < l->n; i++) {
		const struct cairn_kv *kv = &l->kvs[i];
		char **dst = NULL;
		size_t *dlen = NULL;

		if (kv->klen == 10 && !memcmp(kv->key, "rgw.bucket", 10))
			rec = kv;
		else if (kv->klen == 10 && !memcmp(kv->key, "rgw.policy", 10))
			dst = &bc->policy, dlen = &bc->policy_len;
		else if (kv->klen == 8 && !memcmp(kv->key, "rgw.cors", 8))
			dst = &bc->cors, dlen = &bc->cors_len;
		else if (kv->klen == sizeof(RGW_MAP_XATTR) - 1 &&
			 !memcmp(kv->key, RGW_MAP_XATTR, kv->klen))
			dst = &bc->map, dlen = &bc->map_len;
		if (dst && !kv->vlen)
			continue; /* (empty: none, as a cached copy has it) */
		if (dst && !(*dst = malloc(kv->vlen + 1))) {
			rc = -ENOMEM;
		} else if (dst) {
			memcpy(*dst, kv->val, kv->vlen);
			(*dst)[kv->vlen] = '\0';
			*dlen = kv->vlen;
		}
	}
	if (!rc && !rec)
		rc = -ENOENT;
	if (!rc && rgw_bucket_decode(rec->val, rec->vlen, l->b))
		rc = -EBADMSG;
	if (rc == -ENODATA)
		rc = -ENOENT;
	if (!rc) {
		struct rgw_str s;

		rgw_str_init(&s);
		rgw_str_add(&s, l->b, sizeof(*l->b));
		if (blob_put(&s, bc->policy, bc->policy_len) &&
		    blob_put(&s, bc->cors, bc->cors_len) && blob_put(&s, bc->map, bc->map_len))
			cache_put(q->g, &q->g->buckets, l->name, s.p, s.len, l->gen);
		rgw_str_fini(&s);
	}
	if (!rc && l->bc)
		rc = bconf_ready(q, l->bc, l->name);
	if (rc && l->bc)
		s3_bconf_fini(l->bc);
	s3_bconf_fini(&tmp);
	cairn_kvs_free(l->kvs, l->n);
	free(l);
	cb(q, cb_arg, rc);
}

void
s3_bucket_get(struct s3_req *q, const char *name, struct rgw_bucket *b, struct s3_bconf *bc,
	      s3_bucket_cb cb, void *arg)
{
	struct bload *l;
	cairn_op_t *op;
	char oid[128];
	int rc;

	if (bc)
		s3_bconf_fini(bc);
	if (strlen(name) >= sizeof(l->name)) {
		cb(q, arg, -ENOENT);
		return;
	}
	if (bucket_cached(q, name, b, bc)) {
		rc = bc ? bconf_ready(q, bc, name) : 0;
		if (rc && bc)
			s3_bconf_fini(bc);
		cb(q, arg, rc);
		return;
	}
	if (!(l = calloc(1, sizeof(*l))) || !(op = cairn_op_create())) {
		free(l);
		cb(q, arg, -ENOMEM);
		return;
	}
	l->q = q;
	l->gen = cache_gen(q->g);
	l->b = b;
	l->bc = bc;
	l->cb = cb;
	l->arg = arg;
	snprintf(l->name, sizeof(l->name), "%s", name);
	snprintf(oid, sizeof(oid), "bucket.%s", name);
	/* (all of them at once: a getxattr of one that is missing would fail the op) */
	cairn_op_getxattrs(op, &l->kvs, &l->n, &l->rval);
	if ((rc = rgw__aio(q->t, q->g->meta, oid, op, bucket_loaded, l))) {
		free(l);
		cb(q, arg, rc);
		return;
	}
	q->pending++;
}

static void
bucket_io(struct s3_req *q, s3_step next)
{
	int rc;

	if (!q->data) {
		if ((rc = cairn_ioctx_create(q->g->cl, q->g->data_pool, &q->data)) ||
		    (rc = cairn_ioctx_set_namespace(q->data, q->b.id))) {
			s3_error_rc(q, rc, "the data pool");
			return;
		}
	}
	next(q);
}

static void
bucket_ready(struct s3_req *q, void *arg, int rc)
{
	(void)arg;
	if (rc == -ENOENT) {
		s3_error(q, 404, "NoSuchBucket", "the bucket does not exist");
		return;
	}
	if (rc == -ENOMEM) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	if (rc) {
		s3_error_rc(q, rc, "reading the bucket record");
		return;
	}
	q->have_b = true;
	s3_cors_actual(q);
	bucket_io(q, q->next);
}

void
s3_bucket_load(struct s3_req *q, s3_step next)
{
	if (!q->entry)
		q->entry = next;
	q->next = next;
	s3_bucket_get(q, q->bucket, &q->b, &q->bc, bucket_ready, NULL);
}

/* ---- the index's names ---- */

void
s3_shard_pick(const struct rgw_bucket *b, const struct s3_bconf *bc, const char *key, size_t klen,
	      struct s3_shard *s)
{
	const struct rgw_shardmap *m = bc && bc->shards.n ? &bc->shards : NULL;
	size_t i = m ? rgw_shardmap_pick(m, key, klen) : 0;

	s->num = m ? m->v[i].num : 0;
	rgw_shard_oid(b->id, s->num, s->oid, sizeof(s->oid));
	if (m) {
		s->rlen = rgw_shardmap_range_buf(m, i, s->range);
	} else {
		s->range[0] = '\0'; /* (no map: shard 0's range, "" to the end) */
		s->rlen = 1;
	}
}

void
s3_shard_guard(const struct s3_shard *s, cairn_op_t *op)
{
	cairn_op_cmpxattr(op, RGW_RANGE_XATTR, CAIRN_CMP_EQ, s->range, s->rlen);
}

void
s3_shard_read(struct s3_shard *s, cairn_op_t *op)
{
	s->glen = 0;
	s->grval = 0;
	cairn_op_getxattr(op, RGW_RANGE_XATTR, s->got, sizeof(s->got), &s->glen, &s->grval);
}

bool
s3_shard_moved(struct s3_req *q, const struct s3_shard *s)
{
	if (s->grval || rgw_range_state(s->range, s->rlen, s->got, s->glen) != RGW_RANGE_MOVED)
		return false;
	s3_index_restart(q);
	return true;
}

void
s3_index_restart(struct s3_req *q)
{
	s3_bucket_forget(q->g, q->bucket);
	if (++q->restarts > S3_RESTARTS_MAX || !q->entry) {
		s3_error(q, 503, "SlowDown", "the bucket's index is being reorganised: retry");
		return;
	}
	if (q->op_free)
		q->op_free(q);
	q->op = NULL;
	q->op_free = NULL;
	s3_bucket_load(q, q->entry);
}

void
s3_shwait_init(struct s3_shwait *w, struct s3_req *q, struct s3_shard *s, const char *key,
	       size_t klen, s3_shwait_cb fn, void *arg)
{
	memset(w, 0, sizeof(*w));
	w->q = q;
	w->s = s;
	w->key = key;
	w->klen = klen;
	w->fn = fn;
	w->arg = arg;
	w->bucket = q->bucket;
	snprintf(w->bid, sizeof(w->bid), "%s", q->b.id);
}

void
s3_shwait_init_read(struct s3_shwait *w, struct s3_req *q, const char *bucket, const char *bid,
		    struct s3_shard *s, const char *key, size_t klen, s3_shwait_cb fn, void *arg)
{
	s3_shwait_init(w, q, s, key, klen, fn, arg);
	w->bucket = bucket;
	snprintf(w->bid, sizeof(w->bid), "%s", bid);
	w->reader = true;
}

void
s3_shwait_fini(struct s3_shwait *w)
{
	if (w->q && cm_timer_armed(&w->t))
		cm_timer_cancel(w->q->t->r, &w->t);
	s3_bconf_fini(&w->bc);
}

static void
shwait_fired(struct cm_timer *t)
{
	struct s3_shwait *w = t->arg;

	w->q->pending--;
	w->fn(w->arg, 0);
}

static void
shwait_reloaded(struct s3_req *q, void *arg, int rc)
{
	struct s3_shwait *w = arg;

	q->pending--;
	if (!rc && strcmp(w->b.id, w->bid))
		rc = -ENOENT; /* (deleted and made again: another bucket) */
	if (!rc)
		s3_shard_pick(&w->b, &w->bc, w->key, w->klen, w->s);
	s3_bconf_fini(&w->bc);
	w->fn(w->arg, rc);
}

bool
s3_shard_wait(struct s3_shwait *w)
{
	struct s3_shard *s = w->s;
	struct s3_req *q = w->q;

	if (s->grval)
		return false; /* (no mark: shard 0 of a bucket never split) */
	switch (rgw_range_state(s->range, s->rlen, s->got, s->glen)) {
	case RGW_RANGE_OK:
		return false;
	case RGW_RANGE_FROZEN:
		if (w->reader)
			return false; /* (a frozen shard still holds every key of its range) */
		w->wait_ms = w->wait_ms ? CM_MIN(w->wait_ms * 2, 1000u) : 20;
		if ((w->waited_ms += w->wait_ms) > S3_FROZEN_MAX_MS) {
			w->fn(w->arg, -EBUSY);
			return true;
		}
		if (w->wait_ms == 20 || w->wait_ms == 1000)
			/* (its splitter may have died: the collector resumes it, lock allowing) */
			rgw__split_note(q->g, w->bucket, s->num);
		cm_timer_init(&w->t, shwait_fired, w);
		cm_timer_arm(q->t->r, &w->t, w->wait_ms);
		q->pending++;
		return true;
	case RGW_RANGE_CLOSED_ST:
		if (w->reader)
			return false; /* (a DeleteBucket in progress: the entry as read) */
		s3_bucket_forget(q->g, w->bucket);
		w->fn(w->arg, -ENOENT);
		return true;
	default: /* (moved) */
		s3_bucket_forget(q->g, w->bucket);
		if (++w->moves > S3_RESTARTS_MAX) {
			w->fn(w->arg, -EBUSY);
			return true;
		}
		q->pending++;
		s3_bucket_get(q, w->bucket, &w->b, &w->bc, shwait_reloaded, w);
		return true;
	}
}

const char *
s3_shard_hi(const struct s3_shard *s, size_t *len)
{
	const char *z = memchr(s->range, '\0', s->rlen);

	if (!z || (size_t)(z - s->range) + 1 >= s->rlen)
		return NULL;
	*len = s->rlen - (size_t)(z - s->range) - 1;
	return z + 1;
}

void
s3_entry_key(const char *key, size_t klen, struct rgw_str *out)
{
	rgw_str_add(out, key, klen);
	rgw_str_addc(out, '\0');
}

void
s3_data_oid(const uint8_t inst[16], uint64_t n, char *oid, size_t len)
{
	char h[33];

	rgw_hex(inst, 16, h);
	snprintf(oid, len, "%s.%016" PRIx64, h, n);
}

int
s3_manifest_op(const struct rgw_entry *e, cairn_op_t **op, uint8_t **buf, size_t *len, int *rval)
{
	size_t n = RGW_MANIFEST_HDR + (size_t)e->parts * 24;

	*op = NULL;
	*buf = NULL;
	*len = 0;
	if (e->parts < 1 || e->parts > RGW_PARTS_MAX)
		return -EBADMSG;
	if (!(*buf = malloc(n)) || !(*op = cairn_op_create())) {
		free(*buf);
		*buf = NULL;
		return -ENOMEM;
	}
	cairn_op_read(*op, 0, n, *buf, len, rval);
	return 0;
}

void
rgw__usage_add(cairn_op_t *op, int64_t dbytes, int64_t dobjs, int64_t max_bytes, int64_t max_objs)
{
	cairn_op_xattr_num(op, RGW_USAGE_BYTES, CAIRN_NUM_ADD, dbytes, NULL, NULL);
	if (max_bytes)
		cairn_op_num_bounds(op, INT64_MIN, max_bytes);
	cairn_op_xattr_num(op, RGW_USAGE_OBJS, CAIRN_NUM_ADD, dobjs, NULL, NULL);
	if (max_objs)
		cairn_op_num_bounds(op, INT64_MIN, max_objs);
}

void
s3_usage_op(const struct s3_req *q, cairn_op_t *op, int64_t dbytes, int64_t dobjs)
{
	rgw__usage_add(op, dbytes, dobjs, dbytes > 0 ? q->b.quota_bytes : 0,
		       dobjs > 0 ? q->b.quota_objects : 0);
}

static void
usage_ignore(void *arg, int rc)
{
	(void)arg;
	(void)rc;
}

/*
 * Move counter object oid by dbytes and dobjs: with cb, the growths bounded
 * by (max_bytes, max_objs) (0: none); without, fire and forget, and only an
 * existing counter if must_exist.
 */
static int
usage_move(struct s3_req *q, const char *oid, int64_t dbytes, int64_t dobjs, int64_t max_bytes,
	   int64_t max_objs, bool must_exist, rgw_aio_cb cb)
{
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!op)
		return -ENOMEM;
	if (!cb && must_exist)
		cairn_op_assert_exists(op);
	rgw__usage_add(op, dbytes, dobjs, cb && dbytes > 0 ? max_bytes : 0,
		       cb && dobjs > 0 ? max_objs : 0);
	if (!cb)
		return rgw__aio(q->t, q->g->meta, oid, op, usage_ignore, NULL);
	if ((rc = rgw__aio(q->t, q->g->meta, oid, op, cb, q)))
		return rc;
	q->pending++;
	return 0;
}

int
s3_user_usage(struct s3_req *q, int64_t dbytes, int64_t dobjs, rgw_aio_cb cb)
{
	char oid[96];

	snprintf(oid, sizeof(oid), "usage.%s", q->uid);
	return usage_move(q, oid, dbytes, dobjs, q->uq_bytes, q->uq_objects, false, cb);
}

bool
s3_bucket_quota_applies(const struct s3_req *q)
{
	return q->b.quota_bytes || q->b.quota_objects;
}

int
s3_bucket_usage(struct s3_req *q, int64_t dbytes, int64_t dobjs, rgw_aio_cb cb)
{
	char oid[96];

	snprintf(oid, sizeof(oid), "busage.%s", q->b.id);
	/* (a give-back to a bucket deleted meanwhile makes no new counter) */
	return usage_move(q, oid, dbytes, dobjs, q->b.quota_bytes, q->b.quota_objects, true, cb);
}

int
s3_bucket_hold(struct s3_req *q, int64_t *hb, int64_t *ho, int64_t nb, int64_t no, rgw_aio_cb cb)
{
	int64_t gb = nb - *hb, go = no - *ho;
	int rc;

	if (gb < 0 || go < 0) {
		/* (less than held: given back now, it is ours) */
		s3_bucket_usage(q, CM_MIN(gb, 0), CM_MIN(go, 0), NULL);
		*hb = CM_MIN(*hb, nb);
		*ho = CM_MIN(*ho, no);
	}
	if (gb <= 0 && go <= 0)
		return 0;
	rc = s3_bucket_usage(q, CM_MAX(gb, 0), CM_MAX(go, 0), cb);
	return rc ? rc : 1;
}

void
s3_usage_flush(struct s3_req *q)
{
	if (q->du_bytes || q->du_objs)
		s3_user_usage(q, q->du_bytes, q->du_objs, NULL);
	if (q->db_bytes || q->db_objs)
		s3_bucket_usage(q, q->db_bytes, q->db_objs, NULL);
	q->du_bytes = q->du_objs = q->db_bytes = q->db_objs = 0;
}

bool
s3_user_quota_applies(const struct s3_req *q)
{
	/* (a user's counter moves for what she writes into her own buckets only: what others
	 * delete or overwrite there must not give them room) */
	return (q->uq_bytes || q->uq_objects) && !q->anon && !strcmp(q->uid, q->b.owner);
}

bool
s3_canned_ok(const char *a)
{
	static const char *const ok[] = { "private",           "public-read",
					  "public-read-write", "authenticated-read",
					  "bucket-owner-read", "bucket-owner-full-control" };

	for (size_t i = 0; i < CM_ARRAY_SIZE(ok); i++)
		if (!strcmp(a, ok[i]))
			return true;
	return false;
}

/* What a canned ACL grants someone other than the owner. */
static bool
canned_grants(const char *acl, bool anon, enum s3_perm perm, bool bucket)
{
	if (!acl || perm == S3_P_OWNER)
		return false;
	if (!strcmp(acl, "public-read-write"))
		return perm == S3_P_READ || (bucket && perm == S3_P_WRITE);
	if (!strcmp(acl, "public-read"))
		return perm == S3_P_READ;
	if (!strcmp(acl, "authenticated-read"))
		return !anon && perm == S3_P_READ;
	return false;
}

bool
s3_acl_bucket(const struct s3_req *q, const struct rgw_bucket *b, enum s3_perm perm)
{
	if (!q->anon && q->uid[0] && !strcmp(b->owner, q->uid))
		return true;
	return canned_grants(b->acl, q->anon, perm, true);
}

bool
s3_acl_object(const struct s3_req *q, const struct rgw_bucket *b, const struct rgw_entry *e,
	      enum s3_perm perm)
{
	if (!q->anon && q->uid[0] &&
	    (!strcmp(b->owner, q->uid) || (e->owner && !strcmp(e->owner, q->uid))))
		return true;
	return canned_grants(e->acl, q->anon, perm, false);
}

bool
s3_allow_bucket(const struct s3_req *q, const struct rgw_bucket *b, enum s3_perm perm)
{
	bool acl = s3_acl_bucket(q, b, perm);

	if (b != &q->b)
		return acl;
	if (!s3_access(q, b, &q->bc, q->key, q->key_len, NULL, acl))
		return false;
	/* (S3: a write that sets the new object's ACL by header needs s3:PutObjectAcl too; the
	 * writer owns what she writes, so only a Deny refuses it) */
	if (q->key && q->bc.pol && rgw_http_hdr(q->h, "x-amz-acl") &&
	    (q->h->method == RGW_M_PUT || q->h->method == RGW_M_POST) && !rgw_uri_q(&q->u, "acl"))
		return s3_access(q, b, &q->bc, q->key, q->key_len, "s3:PutObjectAcl", true);
	return true;
}

bool
s3_allow_object(const struct s3_req *q, const struct rgw_bucket *b, const struct rgw_entry *e,
		enum s3_perm perm)
{
	bool acl = s3_acl_object(q, b, e, perm);

	if (b != &q->b)
		return acl;
	return s3_access(q, b, &q->bc, q->key, q->key_len, NULL, acl);
}

static void
grant(struct rgw_str *x, const char *uid, const char *group, const char *perm)
{
	rgw_str_adds(x, "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" ");
	if (uid) {
		rgw_str_adds(x, "xsi:type=\"CanonicalUser\"><ID>");
		rgw_str_xml(x, uid, strlen(uid));
		rgw_str_adds(x, "</ID><DisplayName>");
		rgw_str_xml(x, uid, strlen(uid));
		rgw_str_adds(x, "</DisplayName>");
	} else {
		rgw_str_addf(
			x,
			"xsi:type=\"Group\"><URI>http://acs.amazonaws.com/groups/global/%s</URI>",
			group);
	}
	rgw_str_addf(x, "</Grantee><Permission>%s</Permission></Grant>", perm);
}

void
s3_acl_xml(struct rgw_str *x, const char *owner, const char *acl, const char *bucket_owner)
{
	const char *a = acl && *acl ? acl : "private";

	rgw_str_adds(x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<AccessControlPolicy "
			"xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	s3_owner_xml(x, owner);
	rgw_str_adds(x, "<AccessControlList>");
	grant(x, owner, NULL, "FULL_CONTROL");
	if (!strcmp(a, "public-read") || !strcmp(a, "public-read-write"))
		grant(x, NULL, "AllUsers", "READ");
	if (!strcmp(a, "public-read-write") && !bucket_owner)
		grant(x, NULL, "AllUsers", "WRITE");
	if (!strcmp(a, "authenticated-read"))
		grant(x, NULL, "AuthenticatedUsers", "READ");
	if (bucket_owner && strcmp(bucket_owner, owner) &&
	    (!strcmp(a, "bucket-owner-read") || !strcmp(a, "bucket-owner-full-control")))
		grant(x, bucket_owner, NULL,
		      !strcmp(a, "bucket-owner-read") ? "READ" : "FULL_CONTROL");
	rgw_str_adds(x, "</AccessControlList></AccessControlPolicy>");
}

void
s3_deny(struct s3_req *q)
{
	s3_error(q, 403, "AccessDenied", "Access Denied");
}

int
s3_submit(struct s3_req *q, cairn_ioctx_t *io, const char *oid, cairn_op_t *op, rgw_aio_cb cb)
{
	int rc = rgw__aio(q->t, io, oid, op, cb, q);

	if (rc) {
		s3_error_rc(q, rc, "submitting an op");
		return rc;
	}
	q->pending++;
	return 0;
}

void
s3_dead_marker(const uint8_t inst[16], uint64_t size, bool manifest, char key[64],
	       uint8_t val[RGW_DEAD_VLEN])
{
	char ih[33];

	rgw_hex(inst, 16, ih);
	snprintf(key, 64, RGW_SYS_DEAD "%016" PRIx64 "%s", (uint64_t)rgw__now_ns(), ih);
	memcpy(val, inst, 16);
	for (int i = 0; i < 8; i++)
		val[16 + i] = (uint8_t)(size >> (8 * i));
	val[24] = manifest ? RGW_DEAD_MP : 0;
}

int
s3_mp_io(struct s3_req *q)
{
	int rc;

	if (q->mpio)
		return 0;
	if ((rc = cairn_ioctx_create(q->g->cl, q->g->meta_pool, &q->mpio)))
		return rc;
	if ((rc = cairn_ioctx_set_namespace(q->mpio, q->b.id))) {
		cairn_ioctx_destroy(q->mpio);
		q->mpio = NULL;
	}
	return rc;
}

bool
s3_upload_id_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == RGW_UPLOAD_LEN;
}

void
s3_upload_marker(const char *key, size_t klen, const char *upid, struct rgw_str *out)
{
	rgw_str_adds(out, RGW_SYS_UPLOAD);
	rgw_str_add(out, key, klen);
	rgw_str_addc(out, '\0');
	rgw_str_adds(out, upid);
}

/* ---- auth ---- */

struct kload {
	struct cairn_kv want;
	struct cairn_kv *kvs;
	size_t n;
	int rval;
	s3_step next;
	uint64_t gen; /* the caches' when the read began */
};

struct cached_key {
	char uid[65];
	char secret[64];
	int64_t qb, qo; /* the user's quota, carried by its keys */
};

static void auth_check(struct s3_req *q);

static void
key_loaded(void *arg, int rc)
{
	struct s3_req *q = arg;
	struct kload *l = q->op;
	s3_step next = l->next;
	uint64_t l_gen = l->gen;
	struct cached_key ck;
	json_t *j = NULL;

	q->pending--;
	q->op = NULL;
	if (!rc && l->rval)
		rc = l->rval;
	if (!rc && l->n == 1)
		j = json_loadb(l->kvs[0].val, l->kvs[0].vlen, 0, NULL);
	cairn_kvs_free(l->kvs, l->n);
	free(l->want.key);
	free(l);
	if (rc && rc != -ENOENT) {
		json_decref(j);
		s3_error_rc(q, rc, "reading the access key");
		return;
	}
	{
		const char *uid = j ? json_string_value(json_object_get(j, "uid")) : NULL;
		const char *sec = j ? json_string_value(json_object_get(j, "secret")) : NULL;

		if (!uid || !sec || strlen(uid) >= sizeof(ck.uid) ||
		    strlen(sec) >= sizeof(ck.secret)) {
			json_decref(j);
			s3_error(q, 403, "InvalidAccessKeyId",
				 "the access key does not exist in our records");
			return;
		}
		memset(&ck, 0, sizeof(ck));
		snprintf(ck.uid, sizeof(ck.uid), "%s", uid);
		snprintf(ck.secret, sizeof(ck.secret), "%s", sec);
		ck.qb = (int64_t)json_integer_value(json_object_get(j, "quota_bytes"));
		ck.qo = (int64_t)json_integer_value(json_object_get(j, "quota_objects"));
		if (ck.qb < 0 || ck.qo < 0)
			ck.qb = ck.qo = 0;
	}
	json_decref(j);
	cache_put(q->g, &q->g->keys, q->sig.access_key, &ck, sizeof(ck), l_gen);
	memcpy(q->uid, ck.uid, sizeof(q->uid));
	memcpy(q->secret, ck.secret, sizeof(q->secret));
	q->uq_bytes = ck.qb;
	q->uq_objects = ck.qo;
	OPENSSL_cleanse(&ck, sizeof(ck));
	(void)next;
	auth_check(q);
}

static void route(struct s3_req *q);

static void
auth_check(struct s3_req *q)
{
	int rc = rgw_sigv4_verify(q->h, &q->sig, q->secret, q->seed);

	if (rc == -EPERM) {
		s3_error(q, 403, "SignatureDoesNotMatch",
			 "the request signature we calculated does not match the signature you "
			 "provided; check your key and signing method");
		return;
	}
	if (rc) {
		s3_error(q, 400, "AuthorizationHeaderMalformed", "a signed header is missing");
		return;
	}
	rgw_sigv4_key(q->secret, &q->sig, q->sigkey);
	route(q);
}

static void
auth_start(struct s3_req *q)
{
	char err[160];
	struct cached_key ck;
	struct kload *l;
	cairn_op_t *op;
	int rc = rgw_sigv4_parse(q->h, &q->sig, err, sizeof(err));

	if (rc == -ENOENT) {
		q->anon = true;
		route(q);
		return;
	}
	if (rc == -EPROTONOSUPPORT) {
		s3_error(q, 400, "InvalidRequest", err);
		return;
	}
	if (rc) {
		s3_error(q, 400,
			 q->sig.presigned ? "AuthorizationQueryParametersError"
					  : "AuthorizationHeaderMalformed",
			 err);
		return;
	}
	rc = rgw_sigv4_check_time(&q->sig, rgw__now_ns() / 1000000000);
	if (rc == -ETIMEDOUT) {
		s3_error(q, 403, "RequestTimeTooSkewed",
			 "the difference between the request time and the server's time is too "
			 "large");
		return;
	}
	if (rc == -EKEYEXPIRED) {
		s3_error(q, 403, "AccessDenied", "Request has expired");
		return;
	}
	if (cache_get(q->g, &q->g->keys, q->sig.access_key, &ck, sizeof(ck))) {
		memcpy(q->uid, ck.uid, sizeof(q->uid));
		memcpy(q->secret, ck.secret, sizeof(q->secret));
		q->uq_bytes = ck.qb;
		q->uq_objects = ck.qo;
		OPENSSL_cleanse(&ck, sizeof(ck));
		auth_check(q);
		return;
	}
	if (!(l = calloc(1, sizeof(*l))) || !(l->want.key = strdup(q->sig.access_key)) ||
	    !(op = cairn_op_create())) {
		if (l)
			free(l->want.key);
		free(l);
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	l->want.klen = strlen(q->sig.access_key);
	l->gen = cache_gen(q->g);
	q->op = l;
	cairn_op_omap_get(op, &l->want, 1, &l->kvs, &l->n, &l->rval);
	if ((rc = rgw__aio(q->t, q->g->meta, "keys", op, key_loaded, q))) {
		free(l->want.key);
		free(l);
		q->op = NULL;
		s3_error_rc(q, rc, "reading the access key");
		return;
	}
	q->pending++;
}

/* ---- routing ---- */

static void
route(struct s3_req *q)
{
	const struct rgw_http_head *h = q->h;

	if (!q->bucket) {
		if (h->method == RGW_M_GET) {
			s3_list_buckets(q);
			return;
		}
		s3_error(q, 405, "MethodNotAllowed", "the method is not allowed on the service");
		return;
	}
	/* A request names one sub-resource at most: what access is judged for (s3_action) and
	 * what is dispatched must be the same operation. */
	if (s3_subresources(q) > 1) {
		s3_error(q, 400, "InvalidRequest", "a request names one sub-resource at most");
		return;
	}
	/* (anonymous requests go on: each operation checks what the ACLs grant) */
	if (!q->key)
		s3_bucket_op(q);
	else
		s3_object_op(q);
}

/* Bucket and key from the Host header (virtual-hosted) or the path. */
static int
address(struct s3_req *q)
{
	const char *host = rgw_http_hdr(q->h, "host");
	const char *p = q->u.path + 1;
	const char *slash;
	size_t dl = strlen(q->g->dns_name);

	if (host && dl) {
		const char *colon = strrchr(host, ':');
		size_t hl = colon && !strchr(colon, ']') ? (size_t)(colon - host) : strlen(host);

		if (hl > dl + 1 && host[hl - dl - 1] == '.' &&
		    !strncasecmp(host + hl - dl, q->g->dns_name, dl)) {
			if (!(q->bucket = strndup(host, hl - dl - 1)))
				return -ENOMEM;
			if (*p) {
				q->key_len = q->u.path_len - 1;
				if (!(q->key = strndup(p, q->key_len)))
					return -ENOMEM;
			}
			return 0;
		}
	}
	if (!*p)
		return 0;
	slash = strchr(p, '/');
	if (!slash) {
		q->bucket = strdup(p);
		return q->bucket ? 0 : -ENOMEM;
	}
	if (!(q->bucket = strndup(p, (size_t)(slash - p))))
		return -ENOMEM;
	if (slash[1]) {
		q->key_len = q->u.path_len - (size_t)(slash + 1 - q->u.path);
		if (!(q->key = strndup(slash + 1, q->key_len)))
			return -ENOMEM;
	}
	return 0;
}

static void
on_request(struct rgw_req *r, void *arg)
{
	struct rgw *g = arg;
	struct s3_req *q = calloc(1, sizeof(*q));
	int rc;

	if (!q) {
		rgw_req_close_after(r);
		rgw_req_respond(r, 503, NULL, NULL, 0);
		return;
	}
	q->g = g;
	q->r = r;
	q->h = rgw_req_head(r);
	q->t = rgw_http_thread_ctx(rgw_req_thread(r));
	q->started_ns = rgw__now_ns();
	rgw_str_init(&q->body);
	rgw_req_set_ctx(r, q);
	rc = rgw_uri_parse(q->h->target, q->h->target_len, &q->u);
	if (rc) {
		s3_error(q, 400, "InvalidURI", "the request target is not a valid URI");
		return;
	}
	if ((rc = address(q))) {
		s3_error(q, 503, "SlowDown", "out of memory");
		return;
	}
	if (q->key && q->key_len > RGW_KEY_MAX) {
		s3_error(q, 400, "KeyTooLongError", "your key is too long");
		return;
	}
	if (q->key && !rgw_key_ok(q->key, q->key_len)) {
		s3_error(q, 400, "InvalidArgument", "the key is not valid UTF-8 (or holds a NUL)");
		return;
	}
	if (q->bucket && (strlen(q->bucket) > 63 || !*q->bucket)) {
		s3_error(q, 400, "InvalidBucketName", "the bucket name is not valid");
		return;
	}
	if (q->h->method == RGW_M_OPTIONS) {
		s3_cors_preflight(q);
		return;
	}
	auth_start(q);
}

/* ---- threads ---- */

void *
rgw__buf_get(struct rgw_thr *t)
{
	if (t->nbufs)
		return t->bufs[--t->nbufs];
	return malloc(RGW_CHUNK);
}

void
rgw__buf_put(struct rgw_thr *t, void *b)
{
	if (!b)
		return;
	if (t->nbufs < RGW_BUF_POOL)
		t->bufs[t->nbufs++] = b;
	else
		free(b);
}

static int
thr_init(struct rgw_http_thread *ht, void *arg)
{
	struct rgw_thr *t = calloc(1, sizeof(*t));
	int rc;

	if (!t)
		return -ENOMEM;
	t->g = arg;
	t->ht = ht;
	t->r = rgw_http_thread_reactor(ht);
	if ((rc = cairn_cq_create(&t->cq))) {
		free(t);
		return rc;
	}
	rgw_http_thread_set_ctx(ht, t);
	cq_poll(t);
	return 0;
}

static void
thr_fini(struct rgw_http_thread *ht, void *arg)
{
	struct rgw_thr *t = rgw_http_thread_ctx(ht);

	(void)arg;
	if (!t)
		return;
	/* Ops still in flight end before the queue goes. */
	for (int i = 0; i < 3000 && t->inflight; i++)
		cm_reactor_run_once(t->r, 10);
	if (t->polling)
		cm_io_cancel(t->r, &t->cqio);
	for (int i = 0; i < 100 && t->polling; i++)
		cm_reactor_run_once(t->r, 10);
	if (cairn_cq_destroy(t->cq))
		CM_WARN("rgw thread %u: completions still in flight at exit",
			rgw_http_thread_index(ht));
	while (t->nbufs)
		free(t->bufs[--t->nbufs]);
	rgw__batch_fini(t);
	free(t);
}

static int
check_pool(struct rgw *g, const char *pool, bool need_omap, char *err, size_t errlen)
{
	struct cairn_pool_info pi;
	int rc = cairn_pool_info(g->cl, pool, &pi);

	if (rc) {
		snprintf(err, errlen, "pool %s: %s (make it with clusterctl pool create)", pool,
			 cm_strerror(rc));
		return rc;
	}
	if (need_omap && pi.erasure) {
		snprintf(err, errlen,
			 "pool %s is erasure-coded: the metadata pool must be replicated", pool);
		return -EINVAL;
	}
	return 0;
}

int
rgw_start(cairn_cluster_t *cl, const struct rgw_conf *c, struct rgw **gp, char *err, size_t errlen)
{
	struct rgw_http_server_opts ho = { 0 };
	struct rgw *g = calloc(1, sizeof(*g));
	char addr[64], meta[320];
	int rc;

	*gp = NULL;
	if (!g)
		return -ENOMEM;
	g->cl = cl;
	g->conf = *c;
	snprintf(g->meta_pool, sizeof(g->meta_pool), "%s",
		 c->meta_pool && *c->meta_pool ? c->meta_pool : RGW_DEFAULT_META_POOL);
	snprintf(g->data_pool, sizeof(g->data_pool), "%s",
		 c->data_pool && *c->data_pool ? c->data_pool : RGW_DEFAULT_DATA_POOL);
	snprintf(g->dns_name, sizeof(g->dns_name), "%s", c->dns_name ? c->dns_name : "");
	snprintf(g->region, sizeof(g->region), "%s",
		 c->region && *c->region ? c->region : "us-east-1");
	if (!g->conf.cache_ttl_ms)
		g->conf.cache_ttl_ms = 2000;
	if (!g->conf.gc_delay_s)
		g->conf.gc_delay_s = 60;
	if (!g->conf.pending_grace_s)
		g->conf.pending_grace_s = 3600;
	if (!g->conf.sweep_first_s)
		g->conf.sweep_first_s = 30;
	if (!g->conf.sweep_every_s)
		g->conf.sweep_every_s = 300;
	if (!g->conf.lc_day_s)
		g->conf.lc_day_s = 86400;
	if (!g->conf.shard_retire_s)
		g->conf.shard_retire_s = 3600;
	pthread_mutex_init(&g->mu, NULL);
	if ((rc = check_pool(g, g->meta_pool, true, err, errlen)) ||
	    (rc = check_pool(g, g->data_pool, false, err, errlen)))
		goto err;
	if ((rc = cairn_ioctx_create(cl, g->meta_pool, &g->meta))) {
		snprintf(err, errlen, "pool %s: %s", g->meta_pool, cm_strerror(rc));
		goto err;
	}
	if (c->access_log && *c->access_log && !(g->alog = fopen(c->access_log, "a"))) {
		rc = -errno;
		snprintf(err, errlen, "access log %s: %s", c->access_log, cm_strerror(rc));
		goto err;
	}
	if (c->name && *c->name)
		snprintf(g->name, sizeof(g->name), "%s", c->name);
	else
		snprintf(g->name, sizeof(g->name), "rgw.%d", getpid());
	if ((rc = watch_start(g))) {
		snprintf(err, errlen, "watching %s (cache invalidation): %s", RGW_NOTIFY_OID,
			 cm_strerror(rc));
		goto err;
	}
	if ((rc = rgw__gc_start(g))) {
		snprintf(err, errlen, "the collector thread: %s", cm_strerror(rc));
		goto err;
	}
	ho.listen = c->listen && *c->listen ? c->listen : "127.0.0.1:7480";
	ho.tls_listen = c->tls_listen;
	ho.tls_cert = c->tls_cert;
	ho.tls_key = c->tls_key;
	ho.threads = c->threads ? c->threads : 2;
	ho.backend = c->backend;
	ho.handler = on_request;
	ho.arg = g;
	ho.thread_init = thr_init;
	ho.thread_fini = thr_fini;
	if ((rc = rgw_http_server_start(&ho, &g->http))) {
		snprintf(err, errlen, "listen on %s: %s", ho.listen, cm_strerror(rc));
		goto err;
	}
	{
		const char *l = ho.listen;
		const char *colon = strrchr(l, ':');
		size_t hl = colon ? (size_t)(colon - l) : strlen(l);

		snprintf(addr, sizeof(addr), "%.*s:%u", (int)hl, l, rgw_http_server_port(g->http));
	}
	snprintf(meta, sizeof(meta), "endpoint=http://%s meta_pool=%s data_pool=%s", addr,
		 g->meta_pool, g->data_pool);
	if (rgw_http_server_tls_port(g->http)) {
		const char *l = ho.tls_listen;
		const char *colon = strrchr(l, ':');
		size_t hl = colon ? (size_t)(colon - l) : strlen(l), ml = strlen(meta);

		snprintf(meta + ml, sizeof(meta) - ml, " tls_endpoint=https://%.*s:%u", (int)hl, l,
			 rgw_http_server_tls_port(g->http));
	}
	if ((rc = cairn_service_register(cl, "rgw", g->name, addr, meta, 10))) {
		snprintf(err, errlen, "service registration as %s: %s", g->name, cm_strerror(rc));
		goto err;
	}
	g->registered = true;
	*gp = g;
	return 0;
err:
	rgw_stop(g);
	return rc;
}

uint16_t
rgw_port(const struct rgw *g)
{
	return rgw_http_server_port(g->http);
}

uint16_t
rgw_tls_port(const struct rgw *g)
{
	return rgw_http_server_tls_port(g->http);
}

void
rgw_stop(struct rgw *g)
{
	if (!g)
		return;
	if (g->registered)
		cairn_service_unregister(g->cl, "rgw", g->name);
	rgw_http_server_stop(g->http);
	rgw__gc_stop(g);
	if (g->watch)
		cairn_unwatch(g->watch);
	cairn_ioctx_destroy(g->meta);
	cache_free(g->keys);
	cache_free(g->buckets);
	if (g->alog)
		fclose(g->alog);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

int
rgw_pools_ensure(cairn_cluster_t *cl, const char *meta_pool, const char *data_pool, char *err,
		 size_t errlen)
{
	const char *pools[2] = { meta_pool, data_pool };

	for (int i = 0; i < 2; i++) {
		struct cairn_pool_info pi;
		const char *argv[] = { "pool", "create", pools[i], "--pg-num", i ? "32" : "16" };
		char *out = NULL, *e = NULL;
		int rc;

		if (cairn_pool_info(cl, pools[i], &pi) == 0)
			continue;
		rc = cairn_mon_command(cl, argv, CM_ARRAY_SIZE(argv), false, &out, &e);
		if (rc && rc != -EEXIST) {
			snprintf(err, errlen, "pool create %s: %s", pools[i],
				 e ? e : cm_strerror(rc));
			free(out);
			free(e);
			return rc;
		}
		free(out);
		free(e);
	}
	/* (the new pools reach this client's map before ops use them) */
	for (int i = 0; i < 100; i++) {
		struct cairn_pool_info pi;

		if (cairn_pool_info(cl, meta_pool, &pi) == 0 &&
		    cairn_pool_info(cl, data_pool, &pi) == 0)
			return 0;
		usleep(100000);
	}
	snprintf(err, errlen, "the pools did not appear in the map within 10 s");
	return -ETIMEDOUT;
}
