/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The read phase of a client op: the object's state, guards, metadata
 * results and data reads.
 */
#include "osd_int.h"
#include "mon/map_store.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

/* ---------- the read phase ---------- */

bool
osd__subop_reads_meta(uint32_t t)
{
	switch (t) {
	case OSD_OP_STAT:
	case OSD_OP_APPEND:
	case OSD_OP_REMOVE:
	case OSD_OP_CREATE:
	case OSD_OP_GETXATTR:
	case OSD_OP_GETXATTRS:
	case OSD_OP_OMAP_GET:
	case OSD_OP_OMAP_LIST:
	case OSD_OP_OMAP_GET_HEADER:
	case OSD_OP_ASSERT_VERSION:
	case OSD_OP_CMPXATTR:
	case OSD_OP_ASSERT_EXISTS:
	case OSD_OP_READ:
	case OSD_OP_CMPEXT:
	case OSD_OP_OMAP_CMP:
	case OSD_OP_NUM:
	case OSD_OP_LOCK:
	case OSD_OP_UNLOCK:
	case OSD_OP_BREAK_LOCK:
	case OSD_OP_LOCK_INFO:
	case OSD_OP_ASSERT_LOCKED:
	case OSD_OP_WATCH:
	case OSD_OP_UNWATCH:
	case OSD_OP_WATCH_PING:
	case OSD_OP_NOTIFY:
	case OSD_OP_LIST_WATCHERS:
		return true;
	default:
		return false;
	}
}

static int
dup_bin(ProtobufCBinaryData *d, const void *p, size_t n)
{
	d->data = malloc(n ? n : 1);
	if (!d->data)
		return -ENOMEM;
	memcpy(d->data, p, n);
	d->len = n;
	return 0;
}

static int
cmp_bytes(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	int c = CM_MIN(al, bl) ? memcmp(a, b, CM_MIN(al, bl)) : 0; /* (empty: maybe NULL) */

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

/* Whether a stored value (have: it exists; c: it compared with the operand
 * as cmp_bytes) satisfies cmp (enum osd_cmp). */
static bool
cmp_holds(uint32_t cmp, bool have, int c)
{
	switch (cmp) {
	case OSD_CMP_ABSENT:
		return !have;
	case OSD_CMP_EQ:
		return have && c == 0;
	case OSD_CMP_NE:
		return !have || c != 0;
	case OSD_CMP_GT:
		return have && c > 0;
	case OSD_CMP_GE:
		return have && c >= 0;
	case OSD_CMP_LT:
		return have && c < 0;
	case OSD_CMP_LE:
		return have && c <= 0;
	default:
		return false;
	}
}

/* OMAP_CMP: -ECANCELED unless every keys[j] cmp vals[j] holds. */
static int
omap_cmp(struct osd_op *op, const Cairn__Osd__SubOp *so)
{
	struct os_kv *keys, *out;
	int rc;

	if (!op->exists)
		return so->cmp == OSD_CMP_ABSENT ? 0 : -ENOENT;
	keys = calloc(so->n_keys + 1, sizeof(*keys));
	out = calloc(so->n_keys + 1, sizeof(*out));
	if (!keys || !out) {
		free(keys);
		free(out);
		return -ENOMEM;
	}
	for (size_t j = 0; j < so->n_keys; j++) {
		keys[j].key = so->keys[j].data;
		keys[j].klen = so->keys[j].len;
	}
	rc = os_omap_get(op->osd->store, op->pg->cid, op->req->oid, keys, so->n_keys, out);
	for (size_t j = 0; !rc && j < so->n_keys; j++) {
		bool have = out[j].val != NULL;
		int c = have ? cmp_bytes(out[j].val, out[j].vlen, so->vals[j].data, so->vals[j].len)
			     : 0;

		if (!cmp_holds(so->cmp, have, c))
			rc = -ECANCELED;
	}
	os_kvs_free(out, so->n_keys);
	free(keys);
	return rc;
}

/* Whether sub-ops a and b (both NUM) name the same counter. */
static bool
num_same(const Cairn__Osd__SubOp *a, const Cairn__Osd__SubOp *b)
{
	if (a->omap != b->omap)
		return false;
	if (a->omap)
		return a->keys[0].len == b->keys[0].len &&
		       memcmp(a->keys[0].data, b->keys[0].data, a->keys[0].len) == 0;
	return strcmp(a->name, b->name) == 0;
}

/*
 * NUM: the counter's new value into the result (8 bytes, int64 LE), from
 * the stored one (absent: 0), or from an earlier NUM of this op on the same
 * counter. -EINVAL if the stored value is not 8 bytes, -EOVERFLOW past
 * int64 or outside the bounds.
 */
static int
num_compute(struct osd_op *op, size_t i)
{
	const Cairn__Osd__SubOp *so = op->req->ops[i];
	int64_t cur = 0, nv;
	bool found = false;
	int rc = 0;

	for (size_t j = i; j-- > 0;) {
		const Cairn__Osd__SubOp *p = op->req->ops[j];

		if (p->op == OSD_OP_NUM && num_same(p, so)) {
			cur = (int64_t)cm_get_le64(op->res[j].value.data);
			found = true;
			break;
		}
	}
	if (!found && op->exists) {
		struct os_kv v = { 0 };

		if (so->omap) {
			struct os_kv key = { .key = so->keys[0].data, .klen = so->keys[0].len };

			rc = os_omap_get(op->osd->store, op->pg->cid, op->req->oid, &key, 1, &v);
		} else {
			char *xn = osd__op_xattr_name(so->name);

			rc = xn ? os_getattr(op->osd->store, op->pg->cid, op->req->oid, xn, &v)
				: -ENOMEM;
			free(xn);
		}
		if (rc == -ENODATA || rc == -ENOENT)
			rc = 0;
		else if (!rc && v.val && v.vlen != 8)
			rc = -EINVAL;
		else if (!rc && v.val)
			cur = (int64_t)cm_get_le64(v.val);
		osd_kv_clear(&v);
		if (rc)
			return rc;
	}
	switch (so->num_op) {
	case OSD_NUM_ADD:
		if (__builtin_add_overflow(cur, so->num, &nv))
			return -EOVERFLOW;
		break;
	case OSD_NUM_SET:
		nv = so->num;
		break;
	case OSD_NUM_MAX:
		nv = CM_MAX(cur, so->num);
		break;
	case OSD_NUM_MIN:
		nv = CM_MIN(cur, so->num);
		break;
	default:
		return -EINVAL;
	}
	if (so->bounded && (nv < so->num_min || nv > so->num_max))
		return -EOVERFLOW;
	op->res[i].value.data = malloc(8);
	if (!op->res[i].value.data)
		return -ENOMEM;
	cm_put_le64(op->res[i].value.data, (uint64_t)nv);
	op->res[i].value.len = 8;
	return 0;
}

char *
osd__op_xattr_name(const char *name)
{
	size_t n = strlen(name);
	char *s = malloc(n + 2);

	if (s) {
		s[0] = '_';
		memcpy(s + 1, name, n + 1);
	}
	return s;
}

/* ---------- locks ---------- */

char *
osd__op_lock_attr(const char *name)
{
	size_t n = strlen(name);
	char *s = malloc(n + 2);

	if (s) {
		s[0] = 'L'; /* not '_': no user xattr call sees or touches it */
		memcpy(s + 1, name, n + 1);
	}
	return s;
}

static void
locker_free(Cairn__Osd__Locker *l)
{
	if (l)
		protobuf_c_message_free_unpacked(&l->base, NULL);
}

/* Index of (entity, cookie) among st's lockers, or -1. */
static int
locker_find(const Cairn__Osd__LockState *st, const char *entity, const char *cookie)
{
	for (size_t i = 0; i < st->n_lockers; i++)
		if (!strcmp(st->lockers[i]->entity, entity) &&
		    !strcmp(st->lockers[i]->cookie, cookie))
			return (int)i;
	return -1;
}

static void
locker_drop(Cairn__Osd__LockState *st, size_t i)
{
	locker_free(st->lockers[i]);
	memmove(&st->lockers[i], &st->lockers[i + 1],
		(st->n_lockers - i - 1) * sizeof(*st->lockers));
	st->n_lockers--;
}

static char *
str_dup_pb(const char *s)
{
	return strdup(s ? s : "");
}

/*
 * A lock sub-op (i) on the stored state: the state read (expired lockers
 * dropped, by the primary's wall clock), the request applied; a change
 * leaves the new state packed in the result (empty: no holder left, the
 * attribute goes), LOCK_INFO the state. \return 0 or -errno.
 */
static int
lock_compute(struct osd_op *op, size_t i)
{
	const Cairn__Osd__SubOp *so = op->req->ops[i];
	Cairn__Osd__LockReq *rq = cairn__osd__lock_req__unpack(NULL, so->value.len, so->value.data);
	Cairn__Osd__LockState *st = NULL;
	struct os_kv v = { 0 };
	uint64_t now = cm_wall_ns();
	char *an = osd__op_lock_attr(so->name);
	bool change =
		so->op == OSD_OP_LOCK || so->op == OSD_OP_UNLOCK || so->op == OSD_OP_BREAK_LOCK;
	int rc = 0, at;

	if (!rq || !an) {
		rc = rq ? -ENOMEM : -EINVAL;
		goto out;
	}
	if (!op->exists && so->op != OSD_OP_LOCK) {
		rc = -ENOENT;
		goto out;
	}
	if (op->exists) {
		rc = os_getattr(op->osd->store, op->pg->cid, op->req->oid, an, &v);
		if (rc == -ENODATA || rc == -ENOENT)
			rc = 0;
		if (rc)
			goto out;
	}
	if (v.val) {
		st = cairn__osd__lock_state__unpack(NULL, v.vlen, v.val);
		if (!st) {
			CM_LOG_RL(CM_LOG_ERR, "%s: lock %s of an object holds no valid state",
				  op->pg->cid, so->name);
			rc = -EIO;
			goto out;
		}
	} else {
		st = malloc(sizeof(*st));
		if (!st) {
			rc = -ENOMEM;
			goto out;
		}
		cairn__osd__lock_state__init(st); /* (tag: protobuf-c's static "") */
	}
	/* Expired holds are no holds; LOCK_INFO still shows them (marked):
	 * whoever takes over learns whom to fence. */
	for (size_t k = 0; k < st->n_lockers;) {
		Cairn__Osd__Locker *l = st->lockers[k];
		bool gone = l->expires_ns && l->expires_ns <= now;

		if (gone && so->op != OSD_OP_LOCK_INFO) {
			locker_drop(st, k);
			continue;
		}
		l->expired = gone;
		k++;
	}
	if (!st->n_lockers)
		st->type = 0;
	at = locker_find(st, op->client, rq->cookie);
	switch (so->op) {
	case OSD_OP_LOCK:
		if (at >= 0) {
			Cairn__Osd__Locker *l = st->lockers[at];

			if (!(rq->flags & (OSD_LOCK_MAY_RENEW | OSD_LOCK_MUST_RENEW)) ||
			    rq->type != st->type) {
				rc = -EEXIST;
				break;
			}
			l->expires_ns = rq->duration_ms ? now + rq->duration_ms * 1000000ull : 0;
			/* (unpacked strings may be protobuf-c's static "") */
			rc = mon_map_set_str(&l->description,
					     rq->description ? rq->description : "");
			break;
		}
		if (rq->flags & OSD_LOCK_MUST_RENEW) {
			rc = -ENOENT;
			break;
		}
		if (st->n_lockers &&
		    (st->type == OSD_LOCK_EXCLUSIVE || rq->type == OSD_LOCK_EXCLUSIVE ||
		     strcmp(st->tag, rq->tag ? rq->tag : "") != 0)) {
			rc = -EBUSY;
			break;
		}
		if (st->n_lockers >= OSD_LOCKERS_MAX) {
			rc = -E2BIG;
			break;
		}
		{
			Cairn__Osd__Locker *l = malloc(sizeof(*l)), **g;

			g = realloc(st->lockers, (st->n_lockers + 1) * sizeof(*g));
			if (g)
				st->lockers = g;
			if (!l || !g) {
				free(l);
				rc = -ENOMEM;
				break;
			}
			cairn__osd__locker__init(l);
			l->entity = str_dup_pb(op->client);
			l->cookie = str_dup_pb(rq->cookie);
			l->description = str_dup_pb(rq->description);
			l->expires_ns = rq->duration_ms ? now + rq->duration_ms * 1000000ull : 0;
			st->lockers[st->n_lockers++] = l;
			if (!l->entity || !l->cookie || !l->description) {
				rc = -ENOMEM;
				break;
			}
			if (st->n_lockers == 1 && /* the first holder sets the tag */
			    (rc = mon_map_set_str(&st->tag, rq->tag ? rq->tag : "")))
				break;
			st->type = rq->type;
		}
		break;
	case OSD_OP_UNLOCK:
		if (at < 0)
			rc = -ENOENT;
		else
			locker_drop(st, (size_t)at);
		break;
	case OSD_OP_BREAK_LOCK:
		at = locker_find(st, rq->entity, rq->cookie);
		if (at < 0)
			rc = -ENOENT;
		else
			locker_drop(st, (size_t)at);
		break;
	case OSD_OP_ASSERT_LOCKED:
		if (at < 0 || (rq->type && rq->type != st->type) ||
		    (rq->tag && rq->tag[0] && strcmp(rq->tag, st->tag) != 0))
			rc = -EBUSY;
		break;
	default: /* LOCK_INFO */
		break;
	}
	if (!rc && (change || so->op == OSD_OP_LOCK_INFO)) {
		Cairn__Osd__SubOpResult *r = &op->res[i];
		size_t n;

		if (!st->n_lockers) {
			st->type = 0;
			if ((rc = mon_map_set_str(&st->tag, "")))
				goto out;
		}
		n = st->n_lockers || !change ? cairn__osd__lock_state__get_packed_size(st) : 0;
		r->value.data = malloc(n ? n : 1);
		if (!r->value.data) {
			rc = -ENOMEM;
			goto out;
		}
		r->value.len = n;
		if (n)
			cairn__osd__lock_state__pack(st, r->value.data);
	}
out:
	if (st)
		cairn__osd__lock_state__free_unpacked(st, NULL);
	if (rq)
		cairn__osd__lock_req__free_unpacked(rq, NULL);
	osd_kv_clear(&v);
	free(an);
	return rc;
}

/* On a worker: object state and every metadata result. */
void
osd__op_meta_fn(void *arg)
{
	struct osd_op *op = arg;
	struct os_store *s = op->osd->store;
	const char *cid = op->pg->cid, *oid = op->req->oid;
	struct os_stat st;
	struct os_kv v = { 0 };
	int rc;

	rc = os_stat(s, cid, oid, &st);
	if (rc && rc != -ENOENT) {
		osd__op_fail(op, 0, rc);
		return;
	}
	op->exists = rc == 0;
	op->size = op->exists ? st.size : 0;
	if (op->exists && os_getattr(s, cid, oid, "v", &v) == 0) {
		if (v.val && v.vlen == 16) {
			op->ver.epoch = osd_get_be64(v.val);
			op->ver.seq = osd_get_be64(v.val + 8);
		}
		osd_kv_clear(&v);
	}
	if (op->exists && op->pg->be->state_fn)
		op->pg->be->state_fn(op);
	for (size_t i = 0; i < op->req->n_ops && !op->rc; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];
		Cairn__Osd__SubOpResult *r = &op->res[i];
		char *xn;

		switch (so->op) {
		case OSD_OP_READ:
		case OSD_OP_CMPEXT:
		case OSD_OP_STAT:
		case OSD_OP_ASSERT_EXISTS:
		case OSD_OP_REMOVE:
			if (!op->exists)
				osd__op_fail(op, (unsigned)i, -ENOENT);
			break;
		case OSD_OP_CREATE:
			if (so->exclusive && op->exists)
				osd__op_fail(op, (unsigned)i, -EEXIST);
			break;
		case OSD_OP_ASSERT_VERSION: {
			struct osd_ver want;

			osd_ver_from_pb(so->ver, &want);
			if (!op->exists)
				osd__op_fail(op, (unsigned)i, -ENOENT);
			else if (osd_ver_cmp(&want, &op->ver) != 0)
				osd__op_fail(op, (unsigned)i, -ERANGE);
			break;
		}
		case OSD_OP_GETXATTR:
		case OSD_OP_CMPXATTR:
			if (!op->exists) {
				if (so->op == OSD_OP_CMPXATTR && so->cmp == OSD_CMP_ABSENT)
					break;
				osd__op_fail(op, (unsigned)i, -ENOENT);
				break;
			}
			xn = osd__op_xattr_name(so->name);
			if (!xn) {
				osd__op_fail(op, (unsigned)i, -ENOMEM);
				break;
			}
			memset(&v, 0, sizeof(v));
			rc = os_getattr(s, cid, oid, xn, &v);
			free(xn);
			if (rc && rc != -ENODATA && rc != -ENOENT) {
				osd__op_fail(op, (unsigned)i, rc);
				break;
			}
			if (so->op == OSD_OP_GETXATTR) {
				if (rc || !v.val)
					osd__op_fail(op, (unsigned)i, -ENODATA);
				else if (dup_bin(&r->value, v.val, v.vlen))
					osd__op_fail(op, (unsigned)i, -ENOMEM);
			} else {
				bool have = rc == 0 && v.val;
				int c = have ? cmp_bytes(v.val, v.vlen, so->value.data,
							 so->value.len)
					     : 0;

				if (!cmp_holds(so->cmp, have, c))
					osd__op_fail(op, (unsigned)i, -ECANCELED);
			}
			if (!rc)
				osd_kv_clear(&v);
			break;
		case OSD_OP_GETXATTRS: {
			struct os_kv *kvs = NULL;
			size_t n = 0, k = 0;

			if (!op->exists) {
				osd__op_fail(op, (unsigned)i, -ENOENT);
				break;
			}
			rc = os_getattrs(s, cid, oid, &kvs, &n);
			if (rc) {
				osd__op_fail(op, (unsigned)i, rc);
				break;
			}
			r->keys = calloc(n + 1, sizeof(*r->keys));
			r->vals = calloc(n + 1, sizeof(*r->vals));
			for (size_t j = 0; j < n && r->keys && r->vals; j++) {
				if (kvs[j].klen < 1 || kvs[j].key[0] != '_')
					continue;
				if (dup_bin(&r->keys[k], kvs[j].key + 1, kvs[j].klen - 1) ||
				    dup_bin(&r->vals[k], kvs[j].val, kvs[j].vlen)) {
					free(r->keys[k].data);
					r->keys[k].data = NULL;
					osd__op_fail(op, (unsigned)i, -ENOMEM);
					break;
				}
				k++;
			}
			if (!r->keys || !r->vals)
				osd__op_fail(op, (unsigned)i, -ENOMEM);
			r->n_keys = r->n_vals = k;
			os_kvs_free(kvs, n);
			break;
		}
		case OSD_OP_OMAP_GET: {
			struct os_kv *keys, *out;
			size_t k = 0;

			if (!op->exists) {
				osd__op_fail(op, (unsigned)i, -ENOENT);
				break;
			}
			keys = calloc(so->n_keys + 1, sizeof(*keys));
			out = calloc(so->n_keys + 1, sizeof(*out));
			r->keys = calloc(so->n_keys + 1, sizeof(*r->keys));
			r->vals = calloc(so->n_keys + 1, sizeof(*r->vals));
			if (!keys || !out || !r->keys || !r->vals) {
				free(keys);
				free(out);
				osd__op_fail(op, (unsigned)i, -ENOMEM);
				break;
			}
			for (size_t j = 0; j < so->n_keys; j++) {
				keys[j].key = so->keys[j].data;
				keys[j].klen = so->keys[j].len;
			}
			rc = os_omap_get(s, cid, oid, keys, so->n_keys, out);
			for (size_t j = 0; !rc && j < so->n_keys; j++) {
				if (!out[j].val)
					continue;
				if (dup_bin(&r->keys[k], out[j].key, out[j].klen) ||
				    dup_bin(&r->vals[k], out[j].val, out[j].vlen)) {
					free(r->keys[k].data);
					r->keys[k].data = NULL;
					rc = -ENOMEM;
					break;
				}
				k++;
			}
			r->n_keys = r->n_vals = k;
			if (rc)
				osd__op_fail(op, (unsigned)i, rc);
			os_kvs_free(out, so->n_keys);
			free(keys);
			break;
		}
		case OSD_OP_OMAP_LIST: {
			struct os_kv *kvs = NULL;
			size_t n = 0, k = 0;
			bool more = false;
			unsigned max = so->max ? CM_MIN(so->max, (uint32_t)OSD_MAX_KEYS) : 1000;

			if (!op->exists) {
				osd__op_fail(op, (unsigned)i, -ENOENT);
				break;
			}
			rc = os_omap_iterate(
				s, cid, oid, so->start_after.len ? so->start_after.data : NULL,
				so->start_after.len, so->prefix.len ? so->prefix.data : NULL,
				so->prefix.len, max, &kvs, &n, &more);
			if (rc) {
				osd__op_fail(op, (unsigned)i, rc);
				break;
			}
			r->keys = calloc(n + 1, sizeof(*r->keys));
			r->vals = calloc(n + 1, sizeof(*r->vals));
			for (size_t j = 0; j < n && r->keys && r->vals; j++, k++)
				if (dup_bin(&r->keys[k], kvs[j].key, kvs[j].klen) ||
				    dup_bin(&r->vals[k], kvs[j].val, kvs[j].vlen)) {
					free(r->keys[k].data);
					r->keys[k].data = NULL;
					osd__op_fail(op, (unsigned)i, -ENOMEM);
					break;
				}
			if (!r->keys || !r->vals)
				osd__op_fail(op, (unsigned)i, -ENOMEM);
			r->n_keys = r->n_vals = k;
			r->more = more;
			os_kvs_free(kvs, n);
			break;
		}
		case OSD_OP_OMAP_CMP:
		case OSD_OP_NUM:
			rc = so->op == OSD_OP_NUM ? num_compute(op, i) : omap_cmp(op, so);
			if (rc)
				osd__op_fail(op, (unsigned)i, rc);
			break;
		case OSD_OP_WATCH:
		case OSD_OP_UNWATCH:
		case OSD_OP_WATCH_PING:
		case OSD_OP_NOTIFY:
		case OSD_OP_NOTIFY_ACK:
		case OSD_OP_LIST_WATCHERS:
			rc = osd__watch_meta(op);
			if (rc)
				osd__op_fail(op, (unsigned)i, rc);
			break;
		case OSD_OP_LOCK:
		case OSD_OP_UNLOCK:
		case OSD_OP_BREAK_LOCK:
		case OSD_OP_LOCK_INFO:
		case OSD_OP_ASSERT_LOCKED:
			rc = lock_compute(op, i);
			if (rc)
				osd__op_fail(op, (unsigned)i, rc);
			break;
		case OSD_OP_OMAP_GET_HEADER:
			if (!op->exists) {
				osd__op_fail(op, (unsigned)i, -ENOENT);
				break;
			}
			memset(&v, 0, sizeof(v));
			rc = os_omap_get_header(s, cid, oid, &v);
			if (rc && rc != -ENODATA && rc != -ENOENT) {
				osd__op_fail(op, (unsigned)i, rc);
				break;
			}
			if (!rc && v.val && dup_bin(&r->value, v.val, v.vlen))
				osd__op_fail(op, (unsigned)i, -ENOMEM);
			if (!rc)
				osd_kv_clear(&v);
			break;
		default:
			break;
		}
	}
}

void
osd__op_meta_done(void *arg)
{
	struct osd_op *op = arg;

	op->busy = false;
	if (op->dropped) {
		osd__op_free(op);
		return;
	}
	if (op->rc) {
		osd__op_reply(op, NULL);
		return;
	}
	/* Data reads, through the reactor; what they return is bounded first
	 * (a read to the end of a large object: -E2BIG, nothing read). */
	for (size_t i = 0, total = 0; i < op->req->n_ops; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];
		uint64_t len;

		if (!osd__subop_reads_data(so->op))
			continue;
		len = so->len ? so->len : (so->off < op->size ? op->size - so->off : 0);
		if (so->off >= op->size || !len) {
			op->res[i].more = true;
			continue;
		}
		len = CM_MIN(len, op->size - so->off);
		if (len > OSD_MAX_IO || (total += (size_t)len) > OSD_MAX_IO) {
			osd__op_fail(op, (unsigned)i, -E2BIG);
			osd__op_reply(op, NULL);
			return;
		}
		op->reads_pending++;
	}
	if (!op->reads_pending) {
		osd__op_after_reads(op);
		return;
	}
	op->busy = true;
	op->pg->be->read(op);
}

/*
 * CMPEXT sub-op i, its data read: the offset (from its off) of the first
 * byte that differs from its operand (bytes past the object's end read as
 * zeros), -1 if none does, INT64_MAX if out of memory.
 */
static int64_t
cmpext_at(struct osd_op *op, size_t i)
{
	const Cairn__Osd__SubOp *so = op->req->ops[i];
	const uint8_t *have = NULL;
	size_t hlen = 0, chunk = 64u << 10;
	uint8_t *want = malloc(chunk);

	if (!want)
		return INT64_MAX;
	if (op->rbufs[i]) {
		have = op->rbufs[i]->data + (op->rlen[i] ? op->roff[i] : 0);
		hlen = op->rlen[i] ? op->rlen[i] : op->rbufs[i]->len;
	}
	for (size_t at = 0; at < so->len; at += chunk) {
		size_t n = (size_t)CM_MIN((uint64_t)chunk, so->len - at);

		cm_sgl_copy_out(&op->m->data, (size_t)so->data_off + at, want, n);
		for (size_t k = 0; k < n; k++) {
			uint8_t b = at + k < hlen ? have[at + k] : 0;

			if (b != want[k]) {
				free(want);
				return (int64_t)(at + k);
			}
		}
	}
	free(want);
	return -1;
}

void
osd__op_after_reads(struct osd_op *op)
{
	bool writes = false;

	/* (watch sub-ops are alone in their op) */
	if (!op->rc && osd__subop_watch(op->req->ops[0]->op) && osd__watch_run(op))
		return;
	for (size_t i = 0; i < op->req->n_ops; i++) {
		op->res[i].more = op->req->ops[i]->op == OSD_OP_OMAP_LIST && op->res[i].more;
		writes |= osd__op_subop_writes(op->req->ops[i]->op);
	}
	if (op->rc) {
		osd__op_reply(op, NULL);
		return;
	}
	/* Results of reads and stats. */
	for (size_t i = 0; i < op->req->n_ops; i++) {
		const Cairn__Osd__SubOp *so = op->req->ops[i];
		Cairn__Osd__SubOpResult *r = &op->res[i];

		if (so->op == OSD_OP_STAT) {
			r->size = op->size;
			osd_ver_to_pb(&op->ver, &op->rver[i]);
			r->ver = &op->rver[i];
		} else if (so->op == OSD_OP_CMPEXT) {
			int64_t at = cmpext_at(op, i);

			if (at >= 0) {
				osd__op_fail(op, (unsigned)i,
					     at == INT64_MAX ? -ENOMEM : -ECANCELED);
				r->size = at == INT64_MAX ? 0 : (uint64_t)at;
				osd__op_reply(op, NULL);
				return;
			}
		} else if (so->op == OSD_OP_READ && op->rbufs[i]) {
			size_t off = op->rlen[i] ? op->roff[i] : 0;

			r->data_off = op->rdata.len;
			r->data_len = op->rlen[i] ? op->rlen[i] : op->rbufs[i]->len;
			if (r->data_len &&
			    cm_sgl_append(&op->rdata, op->rbufs[i], off, (size_t)r->data_len)) {
				osd__op_fail(op, (unsigned)i, -ENOMEM);
				osd__op_reply(op, NULL);
				return;
			}
			op->osd->op_bytes_out += r->data_len;
		}
	}
	if (!writes) {
		osd__op_reply(op, &op->ver);
		return;
	}
	/* (a watch change is a few bytes of one attribute: a full cluster takes it) */
	if (op->osd->map && (op->osd->map->flags & MON_FLAG_FULL) &&
	    !osd__subop_watch(op->req->ops[0]->op)) {
		osd__op_fail(op, 0, -ENOSPC);
		osd__op_reply(op, NULL);
		return;
	}
	osd__op_write(op);
}
