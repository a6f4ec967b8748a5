/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DESIGN: each call builds a JSON request (jansson), POSTs it to
 * <endpoint>/v3/<path> with a fresh libcurl easy handle, and parses the
 * answer. Transport failures (refused, timed out, 5xx, gRPC Unavailable)
 * move to the next endpoint with backoff until the call's deadline; etcd's
 * own errors (a gRPC status in the body) map to errno values at once. int64
 * fields travel as JSON strings and keys/values as base64, as grpc-gateway
 * encodes them. A watch is a streaming POST on its own thread: the body is a
 * sequence of JSON objects, parsed as they arrive.
 */
#include "cm/etcd.h"
#include "cm/err.h"
#include "etcd_int.h"
#include "cm/log.h"

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <ctype.h>
#include <pthread.h>

CM_LOG_SUBSYS(etcd);

#define ETCD_MAX_ENDPOINTS 16
#define ETCD_MAX_RESPONSE  (64u << 20)

struct cm_etcd {
	char *endpoints[ETCD_MAX_ENDPOINTS];
	int nendpoints;
	atomic_int preferred;
	unsigned timeout_ms, attempt_ms;
	char *ca_file, *cert_file, *key_file; /* https: see cm_etcd_opts */
};

static pthread_once_t g_curl_once = PTHREAD_ONCE_INIT;

static void
curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void
cm_etcd_opts_init(struct cm_etcd_opts *o, size_t size)
{
	memset(o, 0, size);
	o->opts_size = size;
	o->timeout_ms = 5000;
	o->attempt_ms = 1000;
}

void
cm_etcd_opts_from_conf(struct cm_etcd_opts *o, const struct cm_etcd_conf *c)
{
	o->endpoints = c->endpoints;
	o->ca_file = c->ca;
	o->cert_file = c->cert;
	o->key_file = c->key;
}

/* A copy of an optional string (NULL or "" stay NULL). \return 0, -ENOMEM. */
static int
dup_opt(const char *v, char **out)
{
	*out = NULL;
	if (!v || !v[0])
		return 0;
	*out = strdup(v);
	return *out ? 0 : -ENOMEM;
}

int
cm_etcd_create(const struct cm_etcd_opts *o, struct cm_etcd **ep)
{
	struct cm_etcd *e;
	char *list, *save = NULL;

	if (!o || !o->endpoints || !o->endpoints[0])
		return -EINVAL;
	pthread_once(&g_curl_once, curl_init_once);
	e = calloc(1, sizeof(*e));
	list = strdup(o->endpoints);
	if (!e || !list) {
		free(e);
		free(list);
		return -ENOMEM;
	}
	for (char *t = strtok_r(list, ", ", &save); t && e->nendpoints < ETCD_MAX_ENDPOINTS;
	     t = strtok_r(NULL, ", ", &save)) {
		size_t n = strlen(t);

		while (n && t[n - 1] == '/')
			t[--n] = '\0';
		e->endpoints[e->nendpoints] = strdup(t);
		if (!e->endpoints[e->nendpoints]) {
			free(list);
			cm_etcd_destroy(e);
			return -ENOMEM;
		}
		e->nendpoints++;
	}
	free(list);
	if (!e->nendpoints) {
		free(e);
		return -EINVAL;
	}
	e->timeout_ms = o->timeout_ms ? o->timeout_ms : 5000;
	e->attempt_ms = o->attempt_ms ? o->attempt_ms : 1000;
	if (o->opts_size >= offsetof(struct cm_etcd_opts, key_file) + sizeof(o->key_file) &&
	    (dup_opt(o->ca_file, &e->ca_file) || dup_opt(o->cert_file, &e->cert_file) ||
	     dup_opt(o->key_file, &e->key_file))) {
		cm_etcd_destroy(e);
		return -ENOMEM;
	}
	if (!e->cert_file != !e->key_file) {
		CM_ERR("etcd: a client certificate needs its key and a key its certificate");
		cm_etcd_destroy(e);
		return -EINVAL;
	}
	*ep = e;
	return 0;
}

/* https: whom to trust, and who we are. */
static void
tls_setopt(const struct cm_etcd *e, CURL *c)
{
	if (e->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, e->ca_file);
	if (e->cert_file) {
		curl_easy_setopt(c, CURLOPT_SSLCERT, e->cert_file);
		curl_easy_setopt(c, CURLOPT_SSLKEY, e->key_file);
	}
}

/*
 * A TLS failure no retry can mend: our certificate or key cannot be used,
 * the CA file is unreadable, or etcd's certificate is not signed by it.
 */
static bool
tls_permanent(CURLcode cc)
{
	return cc == CURLE_SSL_CERTPROBLEM || cc == CURLE_SSL_CACERT_BADFILE ||
	       cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CIPHER;
}

void
cm_etcd_destroy(struct cm_etcd *e)
{
	if (!e)
		return;
	for (int i = 0; i < e->nendpoints; i++)
		free(e->endpoints[i]);
	free(e->ca_file);
	free(e->cert_file);
	free(e->key_file);
	free(e);
}

/* ---------------- encoding helpers ---------------- */

static char *
b64_encode(const void *data, size_t len)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);

	if (out)
		EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	return out;
}

/* \return decoded length or -1. */
static ssize_t
b64_decode(const char *in, uint8_t **out)
{
	size_t n = strlen(in);
	ssize_t len;

	*out = malloc(n / 4 * 3 + 1);
	if (!*out || n % 4)
		return -1;
	len = EVP_DecodeBlock(*out, (const unsigned char *)in, (int)n);
	if (len < 0)
		return -1;
	/* EVP_DecodeBlock counts padding as data. */
	if (n >= 1 && in[n - 1] == '=')
		len--;
	if (n >= 2 && in[n - 2] == '=')
		len--;
	(*out)[len] = '\0';
	return len;
}

static int
set_b64(json_t *o, const char *field, const void *data, size_t len)
{
	char *b = b64_encode(data, len);

	if (!b)
		return -ENOMEM;
	json_object_set_new(o, field, json_string(b));
	free(b);
	return 0;
}

static void
set_i64(json_t *o, const char *field, int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	json_object_set_new(o, field, json_string(buf));
}

/* grpc-gateway writes int64 as strings; accept numbers too. Missing: 0. */
static int64_t
get_i64(const json_t *o, const char *field)
{
	const json_t *v = json_object_get(o, field);

	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	return 0;
}

static int
kv_from_json(const json_t *j, struct cm_etcd_kv *kv)
{
	const char *k = json_string_value(json_object_get(j, "key"));
	const char *v = json_string_value(json_object_get(j, "value"));
	ssize_t n;

	memset(kv, 0, sizeof(*kv));
	if (!k)
		return -EPROTO;
	n = b64_decode(k, (uint8_t **)&kv->key);
	if (n < 0)
		goto err_free;
	kv->key_len = (size_t)n;
	n = b64_decode(v ? v : "", &kv->value);
	if (n < 0)
		goto err_free;
	kv->value_len = (size_t)n;
	kv->create_revision = get_i64(j, "create_revision");
	kv->mod_revision = get_i64(j, "mod_revision");
	kv->version = get_i64(j, "version");
	kv->lease = get_i64(j, "lease");
	return 0;
err_free:
	/* b64_decode leaves its buffer on failure; a kv that failed owns nothing. */
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
	return -EPROTO;
}

static void
kv_free(struct cm_etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
}

void
cm_etcd_range_free(struct cm_etcd_range *r)
{
	for (size_t i = 0; i < r->count; i++)
		kv_free(&r->kvs[i]);
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

char *
cm_etcd_prefix_end(const char *prefix, size_t len, size_t *end_len)
{
	char *end = malloc(len + 1);

	if (!end)
		return NULL;
	memcpy(end, prefix, len);
	/* Increment the last byte that is not 0xff; an all-0xff prefix means "to the end". */
	for (size_t i = len; i-- > 0;) {
		if ((uint8_t)end[i] != 0xff) {
			end[i]++;
			*end_len = i + 1;
			end[i + 1] = '\0';
			return end;
		}
	}
	end[0] = '\0';
	*end_len = 1;
	return end;
}

/* ---------------- transport ---------------- */

struct resp {
	char *buf;
	size_t len, cap;
};

static size_t
resp_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct resp *r = userdata;
	size_t n = size * nmemb;

	if (r->len + n + 1 > ETCD_MAX_RESPONSE)
		return 0;
	if (r->len + n + 1 > r->cap) {
		size_t cap = CM_MAX(r->cap * 2, r->len + n + 1);
		char *nb = realloc(r->buf, cap);

		if (!nb)
			return 0;
		r->buf = nb;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, ptr, n);
	r->len += n;
	r->buf[r->len] = '\0';
	return n;
}

/* A gRPC status from etcd's answer, as an errno. */
static int
grpc_to_errno(int code)
{
	switch (code) {
	case 3: /* InvalidArgument */
		return -EINVAL;
	case 5: /* NotFound */
		return -ENOENT;
	case 6: /* AlreadyExists */
		return -EEXIST;
	case 7:  /* PermissionDenied */
	case 16: /* Unauthenticated */
		return -EACCES;
	case 9: /* FailedPrecondition */
		return -EPROTO;
	case 11: /* OutOfRange: compacted */
		return -ESTALE;
	case 8: /* ResourceExhausted */
		return -ENOSPC;
	default:
		return -EPROTO;
	}
}

/*
 * Parse body, an answer with HTTP status `status`: 0 with *out the answer
 * (status 200), 1 when another endpoint may do better (last_err says why),
 * or the call's error.
 */
static int
answer_parse(const char *url, long status, const char *body, json_t **out, char *last_err,
	     size_t errlen)
{
	json_error_t jerr;
	json_t *j = json_loads(body, 0, &jerr);
	const char *msg;
	int code;

	if (!j)
		return -EPROTO;
	if (status == 200) {
		*out = j;
		return 0;
	}
	code = (int)get_i64(j, "code");
	msg = json_string_value(json_object_get(j, "message"));
	/* Unavailable / DeadlineExceeded / 5xx: another endpoint may do. */
	if (code == 14 || code == 4 || (status >= 500 && code == 0)) {
		snprintf(last_err, errlen, "%s: %s", url, msg ? msg : "unavailable");
		json_decref(j);
		return 1;
	}
	CM_DEBUG("etcd %s answered %ld code=%d: %s", url, status, code, msg ? msg : "");
	json_decref(j);
	return grpc_to_errno(code);
}

/*
 * POST body to path on some endpoint; on success *out holds the parsed answer.
 * \return 0, -CM_EETCD (none answered before the deadline), an etcd error, -EPROTO.
 */
static int
call(struct cm_etcd *e, const char *path, json_t *body, json_t **out)
{
	char *text = json_dumps(body, JSON_COMPACT);
	uint64_t deadline = cm_now_ms() + e->timeout_ms;
	unsigned backoff = 25;
	int idx = atomic_load(&e->preferred), rc = -CM_EETCD, tried = 0;
	char url[512], last_err[1024] = "";

	*out = NULL;
	if (!text)
		return -ENOMEM;
	for (;;) {
		struct resp r = { 0 };
		struct curl_slist *hdr = NULL;
		CURL *c = curl_easy_init();
		char errbuf[CURL_ERROR_SIZE] = "";
		long status = 0;
		CURLcode cc;
		uint64_t now = cm_now_ms();
		bool retry = true;

		if (!c) {
			rc = -ENOMEM;
			break;
		}
		snprintf(url, sizeof(url), "%s/v3/%s", e->endpoints[idx], path);
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, resp_write);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		tls_setopt(e, c);
		curl_easy_setopt(
			c, CURLOPT_CONNECTTIMEOUT_MS,
			(long)CM_MIN((uint64_t)e->attempt_ms, deadline > now ? deadline - now : 1));
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
				 (long)CM_MIN((uint64_t)e->attempt_ms * 2,
					      deadline > now ? deadline - now : 1));
		cc = curl_easy_perform(c);
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		curl_slist_free_all(hdr);
		curl_easy_cleanup(c);
		tried++;
		if (cc == CURLE_OK && r.buf) {
			int ar = answer_parse(url, status, r.buf, out, last_err, sizeof(last_err));

			if (ar != 1) {
				if (ar == 0)
					atomic_store(&e->preferred, idx);
				rc = ar;
				retry = false;
			}
		} else {
			snprintf(last_err, sizeof(last_err), "%s: %s", url,
				 errbuf[0] ? errbuf : curl_easy_strerror(cc));
			if (tls_permanent(cc)) {
				CM_LOG_RL(CM_LOG_ERR, "etcd: %s", last_err);
				rc = -CM_ETLS;
				retry = false;
			}
		}
		free(r.buf);
		if (!retry)
			break;
		if (cm_now_ms() >= deadline) {
			CM_LOG_RL(CM_LOG_WARN,
				  "no etcd endpoint answered in %u ms after %d tries, last: %s",
				  e->timeout_ms, tried, last_err);
			rc = -CM_EETCD;
			break;
		}
		idx = (idx + 1) % e->nendpoints;
		if (idx == atomic_load(&e->preferred)) {
			/* A full round failed: back off before the next one. */
			usleep(backoff * 1000);
			backoff = CM_MIN(backoff * 2, 500u);
		}
	}
	free(text);
	return rc;
}

static int64_t
header_revision(const json_t *j)
{
	return get_i64(json_object_get(j, "header"), "revision");
}

/* ---------------- KV ---------------- */

/* A kv/range answer into *out (zeroed by the caller). */
static int
range_reply(const json_t *resp, struct cm_etcd_range *out)
{
	const json_t *kvs = json_object_get(resp, "kvs");
	int rc = 0;

	out->revision = header_revision(resp);
	out->more = json_is_true(json_object_get(resp, "more"));
	if (json_is_array(kvs) && json_array_size(kvs)) {
		out->kvs = calloc(json_array_size(kvs), sizeof(*out->kvs));
		if (!out->kvs)
			return -ENOMEM;
		for (size_t i = 0; i < json_array_size(kvs); i++) {
			rc = kv_from_json(json_array_get(kvs, i), &out->kvs[i]);
			out->count++;
			if (rc) {
				cm_etcd_range_free(out);
				break;
			}
		}
	}
	return rc;
}

int
cm_etcd_get(struct cm_etcd *e, const char *key, size_t key_len, const char *range_end,
	    size_t end_len, int64_t limit, struct cm_etcd_range *out)
{
	json_t *req = json_object(), *resp = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!req)
		return -ENOMEM;
	rc = set_b64(req, "key", key, key_len);
	if (!rc && range_end)
		rc = set_b64(req, "range_end", range_end, end_len);
	if (limit > 0)
		set_i64(req, "limit", limit);
	if (!rc)
		rc = call(e, "kv/range", req, &resp);
	json_decref(req);
	if (rc)
		return rc;
	rc = range_reply(resp, out);
	json_decref(resp);
	return rc;
}

static json_t *
put_json(const char *key, size_t key_len, const void *value, size_t value_len, int64_t lease)
{
	json_t *p = json_object();

	if (!p || set_b64(p, "key", key, key_len) || set_b64(p, "value", value, value_len)) {
		json_decref(p);
		return NULL;
	}
	if (lease)
		set_i64(p, "lease", lease);
	return p;
}

int
cm_etcd_put(struct cm_etcd *e, const char *key, size_t key_len, const void *value, size_t value_len,
	    int64_t lease, int64_t *revision)
{
	json_t *req = put_json(key, key_len, value, value_len, lease), *resp = NULL;
	int rc;

	if (!req)
		return -ENOMEM;
	rc = call(e, "kv/put", req, &resp);
	json_decref(req);
	if (rc)
		return rc;
	if (revision)
		*revision = header_revision(resp);
	json_decref(resp);
	return 0;
}

int
cm_etcd_delete(struct cm_etcd *e, const char *key, size_t key_len, const char *range_end,
	       size_t end_len, int64_t *deleted)
{
	json_t *req = json_object(), *resp = NULL;
	int rc;

	if (!req)
		return -ENOMEM;
	rc = set_b64(req, "key", key, key_len);
	if (!rc && range_end)
		rc = set_b64(req, "range_end", range_end, end_len);
	if (!rc)
		rc = call(e, "kv/deleterange", req, &resp);
	json_decref(req);
	if (rc)
		return rc;
	if (deleted)
		*deleted = get_i64(resp, "deleted");
	json_decref(resp);
	return 0;
}

static json_t *
ops_json(const struct cm_etcd_op *ops, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		json_t *op = json_object(), *inner = NULL;

		if (!op)
			goto err;
		if (ops[i].type == CM_ETCD_OP_PUT) {
			inner = put_json(ops[i].key, ops[i].key_len, ops[i].value, ops[i].value_len,
					 ops[i].lease);
			json_object_set_new(op, "request_put", inner);
		} else {
			inner = json_object();
			if (inner && set_b64(inner, "key", ops[i].key, ops[i].key_len))
				inner = NULL;
			json_object_set_new(op,
					    ops[i].type == CM_ETCD_OP_GET ? "request_range"
									  : "request_delete_range",
					    inner);
		}
		if (!inner) {
			json_decref(op);
			goto err;
		}
		json_array_append_new(a, op);
	}
	return a;
err:
	json_decref(a);
	return NULL;
}

static void
txn_reply(const json_t *resp, bool *succeeded, int64_t *revision)
{
	if (succeeded)
		*succeeded = json_is_true(json_object_get(resp, "succeeded"));
	if (revision)
		*revision = header_revision(resp);
}

int
cm_etcd_txn(struct cm_etcd *e, const struct cm_etcd_cmp *cmps, size_t ncmp,
	    const struct cm_etcd_op *success, size_t nsuccess, const struct cm_etcd_op *failure,
	    size_t nfailure, bool *succeeded, int64_t *revision)
{
	static const char *const targets[] = { "VERSION", "CREATE", "MOD", "VALUE" };
	static const char *const results[] = { "EQUAL", "GREATER", "LESS", "NOT_EQUAL" };
	static const char *const fields[] = { "version", "create_revision", "mod_revision" };
	json_t *req = json_object(), *ca = json_array(), *resp = NULL, *sa, *fa;
	int rc = 0;

	if (!req || !ca) {
		json_decref(req);
		json_decref(ca);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ncmp && !rc; i++) {
		json_t *c = json_object();

		if (!c) {
			rc = -ENOMEM;
			break;
		}
		rc = set_b64(c, "key", cmps[i].key, cmps[i].key_len);
		json_object_set_new(c, "target", json_string(targets[cmps[i].target]));
		json_object_set_new(c, "result", json_string(results[cmps[i].result]));
		if (!rc && cmps[i].target == CM_ETCD_VALUE)
			rc = set_b64(c, "value", cmps[i].value, cmps[i].value_len);
		else
			set_i64(c, fields[cmps[i].target], cmps[i].number);
		json_array_append_new(ca, c);
	}
	json_object_set_new(req, "compare", ca);
	sa = ops_json(success, nsuccess);
	fa = ops_json(failure, nfailure);
	if (!sa || !fa)
		rc = -ENOMEM;
	json_object_set_new(req, "success", sa ? sa : json_array());
	json_object_set_new(req, "failure", fa ? fa : json_array());
	if (!rc)
		rc = call(e, "kv/txn", req, &resp);
	json_decref(req);
	if (rc)
		return rc;
	txn_reply(resp, succeeded, revision);
	json_decref(resp);
	return 0;
}

/* ---------------- leases ---------------- */

static int
grant_reply(const json_t *resp, int64_t *id, int64_t *granted_ttl)
{
	*id = get_i64(resp, "ID");
	if (granted_ttl)
		*granted_ttl = get_i64(resp, "TTL");
	return *id ? 0 : -EPROTO;
}

int
cm_etcd_lease_grant(struct cm_etcd *e, int64_t ttl_s, int64_t *id, int64_t *granted_ttl)
{
	json_t *req = json_object(), *resp = NULL;
	int rc;

	if (!req)
		return -ENOMEM;
	set_i64(req, "TTL", ttl_s);
	rc = call(e, "lease/grant", req, &resp);
	json_decref(req);
	if (rc)
		return rc;
	rc = grant_reply(resp, id, granted_ttl);
	json_decref(resp);
	return rc;
}

static int
keepalive_reply(const json_t *resp, int64_t *ttl)
{
	const json_t *res = json_object_get(resp, "result");
	int64_t t = get_i64(res ? res : resp, "TTL");

	if (ttl)
		*ttl = t;
	/* An expired lease answers with no TTL. */
	return t > 0 ? 0 : -ENOENT;
}

int
cm_etcd_lease_keepalive(struct cm_etcd *e, int64_t id, int64_t *ttl)
{
	json_t *req = json_object(), *resp = NULL;
	int rc;

	if (!req)
		return -ENOMEM;
	set_i64(req, "ID", id);
	rc = call(e, "lease/keepalive", req, &resp);
	json_decref(req);
	if (rc)
		return rc;
	rc = keepalive_reply(resp, ttl);
	json_decref(resp);
	return rc;
}

int
cm_etcd_lease_revoke(struct cm_etcd *e, int64_t id)
{
	json_t *req = json_object(), *resp = NULL;
	int rc;

	if (!req)
		return -ENOMEM;
	set_i64(req, "ID", id);
	rc = call(e, "lease/revoke", req, &resp);
	json_decref(req);
	json_decref(resp);
	return rc;
}

/* ---------------- watch ---------------- */

struct cm_etcd_watch {
	struct cm_etcd *e;
	char *key, *end;
	size_t key_len, end_len;
	int64_t next_rev; /* resume from here after a reconnect */
	cm_etcd_watch_cb cb;
	void *arg;
	atomic_bool stop;
	bool failed;
	pthread_t th;
	struct resp buf;
};

/* Deliver every complete JSON object at the front of the buffer. */
static int
watch_consume(struct cm_etcd_watch *w)
{
	size_t off = 0;

	while (off < w->buf.len) {
		json_error_t jerr;
		json_t *j, *res, *evs;

		while (off < w->buf.len && isspace((unsigned char)w->buf.buf[off]))
			off++;
		if (off >= w->buf.len)
			break;
		j = json_loadb(w->buf.buf + off, w->buf.len - off, JSON_DISABLE_EOF_CHECK, &jerr);
		if (!j)
			break; /* incomplete: wait for more */
		off += (size_t)jerr.position;
		res = json_object_get(j, "result");
		if (json_is_true(json_object_get(res, "canceled")) ||
		    get_i64(res, "compact_revision")) {
			int rc = get_i64(res, "compact_revision") ? -ESTALE : -ECANCELED;

			json_decref(j);
			w->failed = true;
			w->cb(w->arg, NULL, rc);
			return -1;
		}
		evs = json_object_get(res, "events");
		for (size_t i = 0; json_is_array(evs) && i < json_array_size(evs); i++) {
			const json_t *ev = json_array_get(evs, i);
			const char *type = json_string_value(json_object_get(ev, "type"));
			struct cm_etcd_event out;

			if (kv_from_json(json_object_get(ev, "kv"), &out.kv))
				continue;
			out.type = type && !strcmp(type, "DELETE") ? CM_ETCD_EV_DELETE
								   : CM_ETCD_EV_PUT;
			if (!atomic_load(&w->stop))
				w->cb(w->arg, &out, 0);
			/* Resume after it (a malformed INT64_MAX must not overflow). */
			w->next_rev = out.kv.mod_revision < INT64_MAX ? out.kv.mod_revision + 1
								      : INT64_MAX;
			kv_free(&out.kv);
		}
		json_decref(j);
	}
	memmove(w->buf.buf, w->buf.buf + off, w->buf.len - off);
	w->buf.len -= off;
	return 0;
}

static size_t
watch_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct cm_etcd_watch *w = userdata;
	size_t n = size * nmemb;

	if (atomic_load(&w->stop) || resp_write(ptr, size, nmemb, &w->buf) != n)
		return 0;
	return watch_consume(w) ? 0 : n;
}

static int
watch_progress(void *clientp, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct cm_etcd_watch *w = clientp;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return atomic_load(&w->stop) ? 1 : 0;
}

static void *
watch_main(void *arg)
{
	struct cm_etcd_watch *w = arg;
	struct cm_etcd *e = w->e;
	int idx = atomic_load(&e->preferred);
	unsigned backoff = 50;

	while (!atomic_load(&w->stop) && !w->failed) {
		json_t *req = json_object(), *cr = json_object();
		struct curl_slist *hdr = NULL;
		char url[512], *text;
		CURL *c;

		if (!req || !cr || set_b64(cr, "key", w->key, w->key_len) ||
		    (w->end && set_b64(cr, "range_end", w->end, w->end_len))) {
			json_decref(req);
			json_decref(cr);
			w->cb(w->arg, NULL, -ENOMEM);
			break;
		}
		if (w->next_rev)
			set_i64(cr, "start_revision", w->next_rev);
		json_object_set_new(req, "create_request", cr);
		text = json_dumps(req, JSON_COMPACT);
		json_decref(req);
		c = curl_easy_init();
		if (!text || !c) {
			free(text);
			if (c)
				curl_easy_cleanup(c);
			w->cb(w->arg, NULL, -ENOMEM);
			break;
		}
		snprintf(url, sizeof(url), "%s/v3/watch", e->endpoints[idx]);
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_write);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, w);
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, watch_progress);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, w);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		tls_setopt(e, c);
		curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)e->attempt_ms);
		/* Idle streams are fine; a dead etcd shows as a closed connection. */
		curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
		w->buf.len = 0;
		curl_easy_perform(c);
		curl_slist_free_all(hdr);
		curl_easy_cleanup(c);
		free(text);
		if (atomic_load(&w->stop) || w->failed)
			break;
		/* The stream ended: another endpoint (or the same, restarted) after a pause. */
		CM_INFO("etcd watch stream ended, reconnecting endpoint=%s next_rev=%" PRId64,
			e->endpoints[idx], w->next_rev);
		idx = (idx + 1) % e->nendpoints;
		for (unsigned slept = 0; slept < backoff && !atomic_load(&w->stop); slept += 10)
			usleep(10000);
		backoff = CM_MIN(backoff * 2, 1000u);
	}
	return NULL;
}

int
cm_etcd_watch_start(struct cm_etcd *e, const char *key, size_t key_len, const char *range_end,
		    size_t end_len, int64_t start_revision, cm_etcd_watch_cb cb, void *arg,
		    struct cm_etcd_watch **wp)
{
	struct cm_etcd_watch *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	w->e = e;
	w->key = malloc(key_len + 1);
	w->end = range_end ? malloc(end_len + 1) : NULL;
	if (!w->key || (range_end && !w->end)) {
		free(w->key);
		free(w->end);
		free(w);
		return -ENOMEM;
	}
	memcpy(w->key, key, key_len);
	w->key_len = key_len;
	if (range_end) {
		memcpy(w->end, range_end, end_len);
		w->end_len = end_len;
	}
	w->next_rev = start_revision;
	w->cb = cb;
	w->arg = arg;
	rc = pthread_create(&w->th, NULL, watch_main, w);
	if (rc) {
		free(w->key);
		free(w->end);
		free(w);
		return -rc;
	}
	*wp = w;
	return 0;
}

void
cm_etcd_watch_stop(struct cm_etcd_watch *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	pthread_join(w->th, NULL);
	free(w->buf.buf);
	free(w->key);
	free(w->end);
	free(w);
}

/* ---------- entry points for tests/fuzz/etcd_fuzz.c ---------- */

int
cm_etcd__parse_reply(enum cm_etcd__reply_kind kind, long status, const char *body,
		     struct cm_etcd__reply *out)
{
	char last_err[1024];
	json_t *resp = NULL;
	int rc = answer_parse("fuzz", status, body, &resp, last_err, sizeof(last_err));

	memset(out, 0, sizeof(*out));
	if (rc)
		return rc;
	switch (kind) {
	case CM_ETCD__RANGE:
		rc = range_reply(resp, &out->range);
		break;
	case CM_ETCD__PUT:
		out->revision = header_revision(resp);
		break;
	case CM_ETCD__DELETE:
		out->deleted = get_i64(resp, "deleted");
		break;
	case CM_ETCD__TXN:
		txn_reply(resp, &out->succeeded, &out->revision);
		break;
	case CM_ETCD__LEASE_GRANT:
		rc = grant_reply(resp, &out->id, &out->ttl);
		break;
	case CM_ETCD__LEASE_KEEPALIVE:
		rc = keepalive_reply(resp, &out->ttl);
		break;
	}
	json_decref(resp);
	return rc;
}

int
cm_etcd__watch_feed(const char *data, size_t len, size_t chunk, cm_etcd_watch_cb cb, void *arg,
		    int64_t *next_rev)
{
	struct cm_etcd_watch w = { .cb = cb, .arg = arg };
	int rc = 0;

	if (!chunk)
		chunk = len;
	for (size_t off = 0; off < len && !rc; off += chunk) {
		size_t n = CM_MIN(chunk, len - off);

		if (watch_write((char *)data + off, 1, n, &w) != n)
			rc = -1;
	}
	*next_rev = w.next_rev;
	free(w.buf.buf);
	return rc;
}
