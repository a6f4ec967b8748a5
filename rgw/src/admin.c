/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Users and keys in the metadata pool (docs/design/rgw.md §2): object
 * "users" (omap: uid -> the user's JSON record, with its access keys) and
 * object "keys" (omap: access key -> {"uid", "secret"}), which a gateway
 * reads to check a signature. Changes are compare-and-swaps on the omap
 * values, so two admins never lose each other's change.
 */
#include "rgw_int.h"
#include "rgw/rgw.h"
#include "rgw/meta.h"
#include "rgw/shardmap.h"
#include "rgw/str.h"
#include "cm/log.h"
#include "cm/random.h"

#include <openssl/crypto.h>

#include <jansson.h>

CM_LOG_SUBSYS(rgw);

#define CAS_TRIES 16

static bool
uid_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static void
new_keys(char access[21], char secret[41])
{
	static const char up[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
	static const char any[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint8_t b[60];

	cm_random_bytes(b, sizeof(b));
	memcpy(access, "CRN", 3); /* (recognisable, as AWS keys start with AKIA) */
	for (int i = 3; i < 20; i++)
		access[i] = up[b[i] & 31];
	access[20] = '\0';
	for (int i = 0; i < 40; i++)
		secret[i] = any[b[20 + i] & 63];
	secret[40] = '\0';
}

/* A JSON record, the value of oid's omap key (raw: a copy as read). \return 0, -ENOENT, or an
 * error. */
static int
rec_get(cairn_ioctx_t *io, const char *oid, const char *key, json_t **j, char **raw, size_t *rawlen)
{
	struct cairn_kv want = { .key = (void *)key, .klen = strlen(key) };
	struct cairn_kv *kvs = NULL;
	size_t n = 0;
	int rval = 0, rc;
	cairn_op_t *op = cairn_op_create();

	if (!op)
		return -ENOMEM;
	cairn_op_omap_get(op, &want, 1, &kvs, &n, &rval);
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	if (!rc)
		rc = rval;
	if (!rc && n != 1)
		rc = -ENOENT;
	if (!rc && !(*j = json_loadb(kvs[0].val, kvs[0].vlen, 0, NULL)))
		rc = -EBADMSG;
	if (!rc && raw) {
		if ((*raw = malloc(kvs[0].vlen))) {
			memcpy(*raw, kvs[0].val, kvs[0].vlen);
			*rawlen = kvs[0].vlen;
		} else {
			json_decref(*j);
			rc = -ENOMEM;
		}
	}
	if (n == 1)
		OPENSSL_cleanse(kvs[0].val, kvs[0].vlen); /* (a key's record holds its secret) */
	cairn_kvs_free(kvs, n);
	return rc;
}

/* The user's record (value of users[uid]). \return 0, -ENOENT, or an error. */
static int
user_get(cairn_ioctx_t *io, const char *uid, json_t **j, char **raw, size_t *rawlen)
{
	return rec_get(io, "users", uid, j, raw, rawlen);
}

/* Replace users[uid] (raw: its value as read; NULL: it must be absent). */
static int
user_put(cairn_ioctx_t *io, const char *uid, const char *raw, size_t rawlen, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	cairn_op_t *op = cairn_op_create();
	int rc;

	if (!s || !op) {
		free(s);
		cairn_op_release(op);
		return -ENOMEM;
	}
	if (raw)
		cairn_op_omap_cmp(op, uid, strlen(uid), CAIRN_CMP_EQ, raw, rawlen);
	else
		cairn_op_omap_cmp(op, uid, strlen(uid), CAIRN_CMP_ABSENT, NULL, 0);
	cairn_op_omap_set(op, uid, strlen(uid), s, strlen(s));
	rc = cairn_operate(io, "users", op, NULL);
	cairn_op_release(op);
	free(s);
	return rc;
}

static int
key_put(cairn_ioctx_t *io, const char *uid, const char *access, const char *secret, int64_t qbytes,
	int64_t qobjs)
{
	json_t *j = json_pack("{s:s, s:s, s:I, s:I}", "uid", uid, "secret", secret, "quota_bytes",
			      (json_int_t)qbytes, "quota_objects", (json_int_t)qobjs);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	cairn_op_t *op = cairn_op_create();
	int rc;

	json_decref(j);
	if (!s || !op) {
		free(s);
		cairn_op_release(op);
		return -ENOMEM;
	}
	cairn_op_omap_cmp(op, access, strlen(access), CAIRN_CMP_ABSENT, NULL, 0);
	cairn_op_omap_set(op, access, strlen(access), s, strlen(s));
	rc = cairn_operate(io, "keys", op, NULL);
	cairn_op_release(op);
	OPENSSL_cleanse(s, strlen(s));
	free(s);
	return rc == -ECANCELED ? -EEXIST : rc;
}

static int
open_meta(cairn_cluster_t *cl, const char *pool, cairn_ioctx_t **io)
{
	return cairn_ioctx_create(cl, pool && *pool ? pool : RGW_DEFAULT_META_POOL, io);
}

/* Every gateway drops what it cached under name (kind: RGW_NOTIFY_*), or its TTL does it. */
static void
tell_gateways(cairn_ioctx_t *io, char kind, const char *name)
{
	struct cairn_notify_result res;
	char payload[1 + 128];
	int n = snprintf(payload, sizeof(payload), "%c%s", kind, name), rc;

	if (n < 0 || (size_t)n >= sizeof(payload))
		return;
	rc = cairn_notify(io, RGW_NOTIFY_OID, payload, (size_t)n, RGW_NOTIFY_TIMEOUT_MS, &res);
	if (rc && rc != -ENOENT) /* (-ENOENT: no gateway ever ran) */
		CM_WARN_RC(rc, "telling the gateways of a change to %s", name);
	cairn_notify_result_free(&res);
}

/* Add (add true) or remove access from uid's record's key list. */
static int
user_keys_edit(cairn_ioctx_t *io, const char *uid, const char *access, bool add)
{
	for (int t = 0; t < CAS_TRIES; t++) {
		json_t *j = NULL, *keys, *nk;
		char *raw = NULL;
		size_t rl = 0;
		int rc = user_get(io, uid, &j, &raw, &rl);

		if (rc)
			return rc;
		keys = json_object_get(j, "keys");
		nk = json_array();
		for (size_t i = 0; keys && i < json_array_size(keys); i++) {
			const char *k = json_string_value(json_array_get(keys, i));

			if (k && strcmp(k, access))
				json_array_append_new(nk, json_string(k));
		}
		if (add)
			json_array_append_new(nk, json_string(access));
		json_object_set_new(j, "keys", nk);
		rc = user_put(io, uid, raw, rl, j);
		json_decref(j);
		free(raw);
		if (rc != -ECANCELED)
			return rc;
	}
	return -EAGAIN;
}

int
rgw_admin_user_create(cairn_cluster_t *cl, const char *pool, const char *uid, const char *display,
		      char access[21], char secret[41])
{
	cairn_ioctx_t *io;
	json_t *j;
	int rc;

	if (!uid_ok(uid) || (display && strlen(display) > 128))
		return -EINVAL;
	if ((rc = open_meta(cl, pool, &io)))
		return rc;
	new_keys(access, secret);
	j = json_pack("{s:s, s:s, s:b, s:I, s:I, s:I, s:[s]}", "uid", uid, "display_name",
		      display && *display ? display : uid, "suspended", 0, "created",
		      (json_int_t)time(NULL), "quota_bytes", (json_int_t)0, "quota_objects",
		      (json_int_t)0, "keys", access);
	if (!j) {
		cairn_ioctx_destroy(io);
		return -ENOMEM;
	}
	rc = user_put(io, uid, NULL, 0, j);
	json_decref(j);
	if (rc == -ECANCELED)
		rc = -EEXIST;
	if (!rc)
		rc = key_put(io, uid, access, secret, 0, 0);
	cairn_ioctx_destroy(io);
	return rc;
}

int
rgw_admin_key_add(cairn_cluster_t *cl, const char *pool, const char *uid, char access[21],
		  char secret[41])
{
	cairn_ioctx_t *io;
	int64_t qb, qo;
	int rc;

	if (!uid_ok(uid))
		return -EINVAL;
	if ((rc = open_meta(cl, pool, &io)))
		return rc;
	new_keys(access, secret);
	{
		/* (the key carries the user's quota: a gateway learns both in one read) */
		json_t *j = NULL;
		char *raw = NULL;
		size_t rl = 0;

		if ((rc = user_get(io, uid, &j, &raw, &rl))) {
			cairn_ioctx_destroy(io);
			return rc;
		}
		qb = (int64_t)json_integer_value(json_object_get(j, "quota_bytes"));
		qo = (int64_t)json_integer_value(json_object_get(j, "quota_objects"));
		json_decref(j);
		free(raw);
	}
	/* The key first (a gateway may use it at once), then the user's list. */
	if (!(rc = key_put(io, uid, access, secret, qb, qo)))
		rc = user_keys_edit(io, uid, access, true);
	cairn_ioctx_destroy(io);
	return rc;
}

int
rgw_admin_key_rm(cairn_cluster_t *cl, const char *pool, const char *access)
{
	struct cairn_kv want = { .key = (void *)access, .klen = strlen(access) };
	struct cairn_kv *kvs = NULL;
	size_t n = 0;
	int rval = 0, rc;
	cairn_ioctx_t *io;
	cairn_op_t *op;
	json_t *j = NULL;
	char uid[65] = "";

	if ((rc = open_meta(cl, pool, &io)))
		return rc;
	if (!(op = cairn_op_create())) {
		cairn_ioctx_destroy(io);
		return -ENOMEM;
	}
	cairn_op_omap_get(op, &want, 1, &kvs, &n, &rval);
	rc = cairn_operate(io, "keys", op, NULL);
	cairn_op_release(op);
	if (!rc)
		rc = rval;
	if (!rc && n != 1)
		rc = -ENOENT;
	if (!rc && (j = json_loadb(kvs[0].val, kvs[0].vlen, 0, NULL)))
		snprintf(uid, sizeof(uid), "%s",
			 json_string_value(json_object_get(j, "uid")) ?: "");
	json_decref(j);
	cairn_kvs_free(kvs, n);
	if (!rc && (op = cairn_op_create())) {
		cairn_op_omap_rm(op, access, strlen(access));
		rc = cairn_operate(io, "keys", op, NULL);
		cairn_op_release(op);
		if (!rc)
			tell_gateways(io, RGW_NOTIFY_KEY, access);
		if (!rc && uid[0]) {
			int r = user_keys_edit(io, uid, access, false);

			if (r && r != -ENOENT)
				rc = r;
		}
	}
	cairn_ioctx_destroy(io);
	return rc;
}

int
rgw_admin_user_list(cairn_cluster_t *cl, const char *pool, char ***uids, size_t *nuids)
{
	cairn_ioctx_t *io;
	char **v = NULL, *after = NULL;
	size_t n = 0, cap = 0, alen = 0;
	bool more = true;
	int rc;

	*uids = NULL;
	*nuids = 0;
	if ((rc = open_meta(cl, pool, &io)))
		return rc;
	while (more && !rc) {
		struct cairn_kv *kvs = NULL;
		size_t k = 0;
		int rval = 0;
		cairn_op_t *op = cairn_op_create();

		if (!op) {
			rc = -ENOMEM;
			break;
		}
		cairn_op_omap_list(op, after, alen, NULL, 0, 1000, &kvs, &k, &more, &rval);
		rc = cairn_operate(io, "users", op, NULL);
		cairn_op_release(op);
		if (rc == -ENOENT) {
			rc = 0;
			break;
		}
		if (!rc)
			rc = rval;
		for (size_t i = 0; !rc && i < k; i++) {
			if (n == cap) {
				char **nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

				if (!nv) {
					rc = -ENOMEM;
					break;
				}
				v = nv;
			}
			if (!(v[n] = strndup(kvs[i].key, kvs[i].klen))) {
				rc = -ENOMEM;
				break;
			}
			n++;
		}
		if (!rc && k) {
			free(after);
			alen = kvs[k - 1].klen;
			if (!(after = malloc(alen)))
				rc = -ENOMEM;
			else
				memcpy(after, kvs[k - 1].key, alen);
		}
		cairn_kvs_free(kvs, k);
		if (!k)
			break;
	}
	free(after);
	cairn_ioctx_destroy(io);
	if (rc) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return rc;
	}
	*uids = v;
	*nuids = n;
	return 0;
}

int
rgw_admin_user_info(cairn_cluster_t *cl, const char *pool, const char *uid,
		    struct rgw_user_info *ui)
{
	cairn_ioctx_t *io;
	json_t *j = NULL, *keys;
	int rc;

	memset(ui, 0, sizeof(*ui));
	if (!uid_ok(uid))
		return -EINVAL;
	if ((rc = open_meta(cl, pool, &io)))
		return rc;
	rc = user_get(io, uid, &j, NULL, NULL);
	cairn_ioctx_destroy(io);
	if (rc)
		return rc;
	snprintf(ui->uid, sizeof(ui->uid), "%s", uid);
	snprintf(ui->display_name, sizeof(ui->display_name), "%s",
		 json_string_value(json_object_get(j, "display_name")) ?: uid);
	ui->suspended = json_is_true(json_object_get(j, "suspended"));
	ui->created = (uint64_t)json_integer_value(json_object_get(j, "created"));
	ui->quota_bytes = (uint64_t)json_integer_value(json_object_get(j, "quota_bytes"));
	ui->quota_objects = (uint64_t)json_integer_value(json_object_get(j, "quota_objects"));
	keys = json_object_get(j, "keys");
	if (json_array_size(keys) &&
	    (ui->keys = calloc(json_array_size(keys), sizeof(*ui->keys)))) {
		for (size_t i = 0; i < json_array_size(keys); i++) {
			const char *k = json_string_value(json_array_get(keys, i));

			if (k)
				snprintf(ui->keys[ui->nkeys++], sizeof(ui->keys[0]), "%s", k);
		}
	}
	json_decref(j);
	return 0;
}

void
rgw_user_info_fini(struct rgw_user_info *ui)
{
	free(ui->keys);
	memset(ui, 0, sizeof(*ui));
}

int
rgw_admin_user_rm(cairn_cluster_t *cl, const char *pool, const char *uid)
{
	struct rgw_user_info ui;
	struct cairn_kv *kvs = NULL;
	size_t n = 0;
	bool more = false;
	int rval = 0, rc;
	cairn_ioctx_t *io;
	cairn_op_t *op;
	char oid[96];

	if ((rc = rgw_admin_user_info(cl, pool, uid, &ui)))
		return rc;
	if ((rc = open_meta(cl, pool, &io))) {
		rgw_user_info_fini(&ui);
		return rc;
	}
	snprintf(oid, sizeof(oid), "buckets.%s", uid);
	if (!(op = cairn_op_create())) {
		rc = -ENOMEM;
		goto out;
	}
	cairn_op_omap_list(op, NULL, 0, NULL, 0, 1, &kvs, &n, &more, &rval);
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	cairn_kvs_free(kvs, n);
	if (rc == -ENOENT)
		rc = 0;
	else if (!rc && (rval || n))
		rc = rval ? rval : -ENOTEMPTY;
	if (rc)
		goto out;
	for (size_t i = 0; i < ui.nkeys; i++) {
		if (!(op = cairn_op_create())) {
			rc = -ENOMEM;
			goto out;
		}
		cairn_op_omap_rm(op, ui.keys[i], strlen(ui.keys[i]));
		rc = cairn_operate(io, "keys", op, NULL);
		cairn_op_release(op);
		if (rc)
			goto out;
		tell_gateways(io, RGW_NOTIFY_KEY, ui.keys[i]);
	}
	if (!(op = cairn_op_create())) {
		rc = -ENOMEM;
		goto out;
	}
	cairn_op_omap_rm(op, uid, strlen(uid));
	rc = cairn_operate(io, "users", op, NULL);
	cairn_op_release(op);
out:
	cairn_ioctx_destroy(io);
	rgw_user_info_fini(&ui);
	return rc;
}

/* keys[access]'s record with the quota set (CAS). */
static int
key_quota(cairn_ioctx_t *io, const char *access, int64_t qb, int64_t qo)
{
	for (int t = 0; t < CAS_TRIES; t++) {
		json_t *j = NULL;
		char *s = NULL, *raw = NULL;
		size_t rl = 0;
		cairn_op_t *op;
		int rc = rec_get(io, "keys", access, &j, &raw, &rl);

		if (!rc) {
			json_object_set_new(j, "quota_bytes", json_integer((json_int_t)qb));
			json_object_set_new(j, "quota_objects", json_integer((json_int_t)qo));
			if (!(s = json_dumps(j, JSON_COMPACT)) || !(op = cairn_op_create())) {
				rc = -ENOMEM;
			} else {
				cairn_op_omap_cmp(op, access, strlen(access), CAIRN_CMP_EQ, raw,
						  rl);
				cairn_op_omap_set(op, access, strlen(access), s, strlen(s));
				rc = cairn_operate(io, "keys", op, NULL);
				cairn_op_release(op);
			}
		}
		if (s)
			OPENSSL_cleanse(s, strlen(s));
		free(s);
		json_decref(j);
		if (raw)
			OPENSSL_cleanse(raw, rl);
		free(raw);
		if (!rc)
			tell_gateways(io, RGW_NOTIFY_KEY, access);
		if (rc != -ECANCELED)
			return rc;
	}
	return -ECANCELED;
}

int
rgw_admin_user_quota(cairn_cluster_t *cl, const char *pool, const char *uid, uint64_t max_bytes,
		     uint64_t max_objects)
{
	struct rgw_user_info ui;
	cairn_ioctx_t *io;
	int64_t b, o;
	int rc;

	if (!uid_ok(uid) || max_bytes > INT64_MAX || max_objects > INT64_MAX)
		return -EINVAL;
	if ((rc = open_meta(cl, pool, &io)))
		return rc;
	for (int t = 0; t < CAS_TRIES; t++) {
		json_t *j = NULL;
		char *raw = NULL;
		size_t rl = 0;

		if ((rc = user_get(io, uid, &j, &raw, &rl)))
			break;
		json_object_set_new(j, "quota_bytes", json_integer((json_int_t)max_bytes));
		json_object_set_new(j, "quota_objects", json_integer((json_int_t)max_objects));
		rc = user_put(io, uid, raw, rl, j);
		json_decref(j);
		free(raw);
		if (rc != -ECANCELED)
			break;
	}
	cairn_ioctx_destroy(io);
	if (rc)
		return rc;
	/* The usage counter the gateways bound starts from what the buckets hold now. */
	if ((rc = rgw_admin_user_usage(cl, pool, uid, true, &b, &o)))
		return rc;
	/* Then every key carries the quota (the gateways read it with the key). */
	if ((rc = rgw_admin_user_info(cl, pool, uid, &ui)))
		return rc;
	if ((rc = open_meta(cl, pool, &io)) == 0) {
		for (size_t i = 0; i < ui.nkeys && !rc; i++)
			rc = key_quota(io, ui.keys[i], (int64_t)max_bytes, (int64_t)max_objects);
		cairn_ioctx_destroy(io);
	}
	rgw_user_info_fini(&ui);
	return rc;
}

/* The bucket record (raw JSON, malloc'd) of name. */
static int
bucket_get(cairn_ioctx_t *io, const char *name, char **raw, size_t *len, struct rgw_bucket *b)
{
	char oid[128], *buf = malloc(4096);
	cairn_op_t *op = cairn_op_create();
	int rval = 0, rc;

	*raw = NULL;
	if (!buf || !op) {
		free(buf);
		cairn_op_release(op);
		return -ENOMEM;
	}
	snprintf(oid, sizeof(oid), "bucket.%s", name);
	cairn_op_getxattr(op, "rgw.bucket", buf, 4096, len, &rval);
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	if (!rc)
		rc = rval;
	if (rc == -ENODATA)
		rc = -ENOENT;
	if (!rc && rgw_bucket_decode(buf, *len, b))
		rc = -EBADMSG;
	if (rc) {
		free(buf);
		return rc;
	}
	*raw = buf;
	return 0;
}

/*
 * The usage counters of one index shard, added to *bytes and *objs; its
 * range mark in mark (*mlen bytes, 0: none).
 */
static int
shard_usage(cairn_ioctx_t *io, const char *oid, int64_t *bytes, int64_t *objs, char *mark,
	    size_t *mlen, int64_t add[2])
{
	cairn_op_t *op = cairn_op_create();
	struct cairn_kv *kvs = NULL;
	size_t n = 0;
	int rval = 0, rc;

	if (!op)
		return -ENOMEM;
	cairn_op_getxattrs(op, &kvs, &n, &rval);
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	if (!rc)
		rc = rval;
	*mlen = 0;
	add[0] = add[1] = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		/* (a merge's A: the counters of B, copied in, added to A's at its end) */
		if (kvs[i].klen == sizeof(RGW_MERGE_ADD_XATTR) - 1 &&
		    !memcmp(kvs[i].key, RGW_MERGE_ADD_XATTR, kvs[i].klen) && kvs[i].vlen == 16)
			for (int h = 0; h < 2; h++)
				for (int k = 7; k >= 0; k--)
					add[h] =
						(int64_t)((uint64_t)add[h] << 8 |
							  ((const uint8_t *)kvs[i].val)[8 * h + k]);
		if (kvs[i].klen == sizeof(RGW_RANGE_XATTR) - 1 &&
		    !memcmp(kvs[i].key, RGW_RANGE_XATTR, kvs[i].klen) &&
		    kvs[i].vlen <= RGW_RANGE_MARK_MAX) {
			memcpy(mark, kvs[i].val, kvs[i].vlen);
			*mlen = kvs[i].vlen;
		}
	}
	for (size_t i = 0; !rc && i < n; i++) {
		int64_t *out = kvs[i].klen == strlen(RGW_USAGE_BYTES) &&
					       !memcmp(kvs[i].key, RGW_USAGE_BYTES, kvs[i].klen)
				       ? bytes
			       : kvs[i].klen == strlen(RGW_USAGE_OBJS) &&
					       !memcmp(kvs[i].key, RGW_USAGE_OBJS, kvs[i].klen)
				       ? objs
				       : NULL;
		uint64_t x = 0;

		/* (a counter never moved is absent: 0) */
		if (!out || kvs[i].vlen != 8)
			continue;
		for (int k = 7; k >= 0; k--)
			x = x << 8 | ((const uint8_t *)kvs[i].val)[k];
		*out += (int64_t)x;
	}
	cairn_kvs_free(kvs, n);
	return rc;
}

/* The usage counters of a bucket's index: every shard of its map (rgw.md §3.1.1). */
static int
bucket_usage(cairn_ioctx_t *io, const struct rgw_bucket *b, int64_t *bytes, int64_t *objs,
	     uint32_t *shards)
{
	char oid[128];
	cairn_op_t *op = cairn_op_create();
	struct cairn_kv *kvs = NULL;
	struct rgw_shardmap m;
	const void *raw = NULL;

	struct {
		int64_t bytes, objs;
		int64_t add[2]; /* a merge's A: B's objects and bytes, not in A's counters yet */
		char *mark;     /* a frozen mark, or NULL */
		size_t mlen;
		char tag; /* its kind: RGW_FREEZE_SPLIT or RGW_FREEZE_MERGE */
	} *fz = NULL;

	size_t n = 0, rlen = 0;
	int rval = 0, rc;

	*bytes = *objs = 0;
	rgw_shardmap_decode(NULL, 0, &m); /* (shard 0 alone, until the map is read) */
	if (!op)
		return -ENOMEM;
	snprintf(oid, sizeof(oid), "bucket.%s", b->name);
	cairn_op_getxattrs(op, &kvs, &n, &rval);
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	if (!rc)
		rc = rval;
	for (size_t i = 0; !rc && i < n; i++)
		if (kvs[i].klen == sizeof(RGW_MAP_XATTR) - 1 &&
		    !memcmp(kvs[i].key, RGW_MAP_XATTR, kvs[i].klen)) {
			raw = kvs[i].val;
			rlen = kvs[i].vlen;
		}
	if (!rc)
		rc = rgw_shardmap_decode(raw, rlen, &m);
	/* Last shard first: a split trims A before it opens B, so B read first and then A
	 * shows either both frozen (B's counters are a copy of A's: skipped) or A trimmed. */
	if (!rc && !(fz = calloc(m.n, sizeof(*fz))))
		rc = -ENOMEM;
	for (uint32_t i = m.n; !rc && i-- > 0;) {
		char mark[RGW_RANGE_MARK_MAX], tag;
		const uint8_t *r, *k;
		size_t ml = 0, rl, kl;

		rgw_shard_oid(b->id, m.v[i].num, oid, sizeof(oid));
		if ((rc = shard_usage(io, oid, &fz[i].bytes, &fz[i].objs, mark, &ml, fz[i].add)))
			break;
		if (ml && !rgw_range_frozen_parse(mark, ml, &tag, &r, &rl, &k, &kl) &&
		    (fz[i].mark = malloc(ml))) {
			memcpy(fz[i].mark, mark, ml);
			fz[i].mlen = ml;
			fz[i].tag = tag;
		}
	}
	/*
	 * A split's B under the same frozen mark as A holds a copy of A's upper
	 * keys: skipped. A merge's B under A's mark is not in A's counters (they
	 * move at the merge's end): counted; once B left the map, A's note of
	 * B's counters stands for it.
	 */
	for (uint32_t i = 0; !rc && i < m.n; i++) {
		bool prev = i && fz[i].mark && fz[i - 1].mark && fz[i].mlen == fz[i - 1].mlen &&
			    !memcmp(fz[i].mark, fz[i - 1].mark, fz[i].mlen);
		bool next = i + 1 < m.n && fz[i].mark && fz[i + 1].mark &&
			    fz[i].mlen == fz[i + 1].mlen &&
			    !memcmp(fz[i].mark, fz[i + 1].mark, fz[i].mlen);

		if (prev && fz[i].tag == RGW_FREEZE_SPLIT)
			continue;
		*bytes += fz[i].bytes;
		*objs += fz[i].objs;
		if (fz[i].mark && fz[i].tag == RGW_FREEZE_MERGE && !next) {
			*objs += fz[i].add[0];
			*bytes += fz[i].add[1];
		}
	}
	for (uint32_t i = 0; fz && i < m.n; i++)
		free(fz[i].mark);
	free(fz);
	if (shards)
		*shards = rc ? 0 : m.n;
	rgw_shardmap_fini(&m);
	cairn_kvs_free(kvs, n);
	return rc;
}

int
rgw_admin_bucket_stats(cairn_cluster_t *cl, const char *pool, const char *name,
		       struct rgw_bucket_stats *st)
{
	struct rgw_bucket b;
	cairn_ioctx_t *io;
	char *raw = NULL;
	size_t len = 0;
	int rc;

	memset(st, 0, sizeof(*st));
	if ((rc = open_meta(cl, pool, &io)))
		return rc;
	if (!(rc = bucket_get(io, name, &raw, &len, &b)) &&
	    !(rc = bucket_usage(io, &b, &st->bytes, &st->objects, &st->shards))) {
		snprintf(st->owner, sizeof(st->owner), "%s", b.owner);
		snprintf(st->id, sizeof(st->id), "%s", b.id);
		st->quota_bytes = b.quota_bytes;
		st->quota_objects = b.quota_objects;
	}
	free(raw);
	cairn_ioctx_destroy(io);
	return rc;
}

/* The bucket's shard map as stored (*raw, *len; none: NULL, 0). \return 0 or an errno. */
int
rgw__map_read(cairn_ioctx_t *io, const char *bucket, uint8_t **raw, size_t *len)
{
	struct cairn_kv *kvs = NULL;
	cairn_op_t *op = cairn_op_create();
	size_t n = 0;
	char oid[128];
	int rval = 0, rc;

	*raw = NULL;
	*len = 0;
	if (!op)
		return -ENOMEM;
	snprintf(oid, sizeof(oid), "bucket.%s", bucket);
	/* (all of them: a getxattr of one that is missing fails, and this one's size varies) */
	cairn_op_getxattrs(op, &kvs, &n, &rval);
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	if (!rc)
		rc = rval;
	for (size_t i = 0; !rc && i < n; i++)
		if (kvs[i].klen == sizeof(RGW_MAP_XATTR) - 1 &&
		    !memcmp(kvs[i].key, RGW_MAP_XATTR, kvs[i].klen) && kvs[i].vlen) {
			if (!(*raw = malloc(kvs[i].vlen)))
				rc = -ENOMEM;
			else
				memcpy(*raw, kvs[i].val, *len = kvs[i].vlen);
		}
	cairn_kvs_free(kvs, n);
	return rc;
}

/*
 * The bucket's quota counter (busage.<id>, rgw.md §6) set to what its
 * index shards hold: commits that land while this reads are counted by
 * the shards or by the counter, and the SET keeps the shards' view.
 */
static int
busage_recount(cairn_ioctx_t *io, const struct rgw_bucket *b)
{
	int64_t bytes = 0, objs = 0;
	cairn_op_t *op;
	char oid[96];
	int rc;

	if ((rc = bucket_usage(io, b, &bytes, &objs, NULL)))
		return rc;
	if (!(op = cairn_op_create()))
		return -ENOMEM;
	snprintf(oid, sizeof(oid), "busage.%s", b->id);
	cairn_op_xattr_num(op, RGW_USAGE_BYTES, CAIRN_NUM_SET, bytes, NULL, NULL);
	cairn_op_xattr_num(op, RGW_USAGE_OBJS, CAIRN_NUM_SET, objs, NULL, NULL);
	rc = cairn_operate(io, oid, op, NULL);
	cairn_op_release(op);
	return rc;
}

int
rgw_admin_bucket_quota(cairn_cluster_t *cl, const char *pool, const char *name, uint64_t max_bytes,
		       uint64_t max_objects)
{
	cairn_ioctx_t *io;
	int rc;

	if (max_bytes > INT64_MAX || max_objects > INT64_MAX)
		return -EINVAL;
	if ((rc = open_meta(cl, pool, &io)))
		return rc;
	for (int t = 0; t < CAS_TRIES; t++) {
		struct rgw_bucket b;
		char *raw = NULL, *s = NULL, oid[128];
		size_t len = 0;
		cairn_op_t *op;

		if ((rc = bucket_get(io, name, &raw, &len, &b)))
			break;
		b.quota_bytes = (int64_t)max_bytes;
		b.quota_objects = (int64_t)max_objects;
		if (!(s = rgw_bucket_encode(&b)) || !(op = cairn_op_create())) {
			free(s);
			free(raw);
			rc = -ENOMEM;
			break;
		}
		snprintf(oid, sizeof(oid), "bucket.%s", name);
		cairn_op_cmpxattr(op, "rgw.bucket", CAIRN_CMP_EQ, raw, len);
		cairn_op_setxattr(op, "rgw.bucket", s, strlen(s));
		rc = cairn_operate(io, oid, op, NULL);
		cairn_op_release(op);
		free(s);
		free(raw);
		if (!rc) {
			/* (the gateways keep the counter from when they know the quota; then
			 * it starts from what the shards hold) */
			tell_gateways(io, RGW_NOTIFY_BUCKET, name);
			if (max_bytes || max_objects)
				rc = busage_recount(io, &b);
		}
		if (rc != -ECANCELED)
			break;
	}
	cairn_ioctx_destroy(io);
	return rc;
}

int
rgw_admin_user_usage(cairn_cluster_t *cl, const char *pool, const char *uid, bool sync,
		     int64_t *bytes, int64_t *objects)
{
	cairn_ioctx_t *io;
	struct cairn_kv *kvs = NULL;
	size_t n = 0;
	char oid[128];
	int rc;

	*bytes = *objects = 0;
	if (!uid_ok(uid))
		return -EINVAL;
	if ((rc = open_meta(cl, pool, &io)))
		return rc;
	snprintf(oid, sizeof(oid), "buckets.%s", uid);
	for (bool more = true; more && !rc;) {
		cairn_op_t *op = cairn_op_create();
		char after[128] = "";
		int rval = 0;

		if (!op) {
			rc = -ENOMEM;
			break;
		}
		if (n)
			snprintf(after, sizeof(after), "%.*s", (int)kvs[n - 1].klen,
				 (const char *)kvs[n - 1].key);
		cairn_kvs_free(kvs, n);
		kvs = NULL;
		n = 0;
		cairn_op_omap_list(op, after, strlen(after), NULL, 0, 1000, &kvs, &n, &more, &rval);
		rc = cairn_operate(io, oid, op, NULL);
		cairn_op_release(op);
		if (rc == -ENOENT) {
			rc = 0;
			break;
		}
		if (!rc)
			rc = rval;
		for (size_t i = 0; i < n && !rc; i++) {
			struct rgw_bucket b;
			char name[64], *raw = NULL;
			size_t len = 0;
			int64_t bb = 0, bo = 0;

			snprintf(name, sizeof(name), "%.*s", (int)kvs[i].klen,
				 (const char *)kvs[i].key);
			rc = bucket_get(io, name, &raw, &len, &b);
			free(raw);
			if (rc == -ENOENT) {
				rc = 0; /* (being created or removed) */
				continue;
			}
			if (!rc && !(rc = bucket_usage(io, &b, &bb, &bo, NULL))) {
				*bytes += bb;
				*objects += bo;
			}
			if (rc == -ENOENT)
				rc = 0;
		}
		if (!n)
			more = false;
	}
	cairn_kvs_free(kvs, n);
	if (!rc && sync) {
		cairn_op_t *op = cairn_op_create();

		if (!op) {
			rc = -ENOMEM;
		} else {
			snprintf(oid, sizeof(oid), "usage.%s", uid);
			cairn_op_xattr_num(op, RGW_USAGE_BYTES, CAIRN_NUM_SET, *bytes, NULL, NULL);
			cairn_op_xattr_num(op, RGW_USAGE_OBJS, CAIRN_NUM_SET, *objects, NULL, NULL);
			rc = cairn_operate(io, oid, op, NULL);
			cairn_op_release(op);
		}
	}
	cairn_ioctx_destroy(io);
	return rc;
}
