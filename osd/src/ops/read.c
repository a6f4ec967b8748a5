/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The read phase of a client op: the object's state, guards, metadata
 * results and data reads.
 */
#include "osd_int.h"
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
	int c = memcmp(a, b, CM_MIN(al, bl));

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
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
				bool ok;

				switch (so->cmp) {
				case OSD_CMP_ABSENT:
					ok = !have;
					break;
				case OSD_CMP_EQ:
					ok = have && c == 0;
					break;
				case OSD_CMP_NE:
					ok = !have || c != 0;
					break;
				case OSD_CMP_GT:
					ok = have && c > 0;
					break;
				case OSD_CMP_GE:
					ok = have && c >= 0;
					break;
				case OSD_CMP_LT:
					ok = have && c < 0;
					break;
				case OSD_CMP_LE:
					ok = have && c <= 0;
					break;
				default:
					ok = false;
					break;
				}
				if (!ok)
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

		if (so->op != OSD_OP_READ)
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

void
osd__op_after_reads(struct osd_op *op)
{
	bool writes = false;

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
	if (op->osd->map && (op->osd->map->flags & MON_FLAG_FULL)) {
		osd__op_fail(op, 0, -ENOSPC);
		osd__op_reply(op, NULL);
		return;
	}
	osd__op_write(op);
}
