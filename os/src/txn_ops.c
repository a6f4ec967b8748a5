/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transactions: recording their ops (os_txn_mkcoll ... os_txn_omap_set_header).
 * Each op keeps copies of its names and data; prepare (prepare.c) applies
 * them in order. The transaction's life and pipeline are txn.c.
 */
#include "store_internal.h"

void
os_op_free(struct os_op *op)
{
	free(op->cid);
	free(op->oid);
	free(op->oid2);
	free(op->cid2);
	free(op->name);
	if (op->buf)
		cm_buf_put(op->buf);
	else
		free(op->data);
	free(op->key);
}

static bool
good_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n >= 1 && n <= OS_NAME_MAX;
}

static struct os_op *
add_op(struct os_txn *t, enum os_op_type type, const char *cid, const char *oid)
{
	struct os_op *op;

	if (!good_name(cid) || (oid && !good_name(oid)))
		return NULL;
	if (t->nops == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 4;
		struct os_op *n = realloc(t->ops, sizeof(*n) * nc);

		if (!n)
			return NULL;
		t->ops = n;
		t->cap = nc;
	}
	op = &t->ops[t->nops];
	memset(op, 0, sizeof(*op));
	op->type = type;
	op->cid = strdup(cid);
	op->oid = oid ? strdup(oid) : NULL;
	if (!op->cid || (oid && !op->oid)) {
		os_op_free(op);
		return NULL;
	}
	t->nops++;
	return op;
}

static int
dup_bytes(uint8_t **dst, size_t *dlen, const void *src, size_t len)
{
	*dst = malloc(len ? len : 1);
	if (!*dst)
		return -ENOMEM;
	if (len)
		memcpy(*dst, src, len);
	*dlen = len;
	return 0;
}

/* Undo the last add_op (its allocation of extra fields failed). */
static int
drop_last(struct os_txn *t)
{
	os_op_free(&t->ops[--t->nops]);
	return -ENOMEM;
}

int
os_txn_mkcoll(struct os_txn *t, const char *cid)
{
	return add_op(t, OP_MKCOLL, cid, NULL) ? 0 : -EINVAL;
}

int
os_txn_rmcoll(struct os_txn *t, const char *cid)
{
	if (!add_op(t, OP_RMCOLL, cid, NULL))
		return -EINVAL;
	t->barrier = true;
	return 0;
}

int
os_txn_touch(struct os_txn *t, const char *cid, const char *oid)
{
	return add_op(t, OP_TOUCH, cid, oid) ? 0 : -EINVAL;
}

int
os_txn_write(struct os_txn *t, const char *cid, const char *oid, uint64_t off, const void *data,
	     size_t len)
{
	struct os_op *op;

	if (off + len < off || off + len > OS_MAX_OBJ_BYTES)
		return -EFBIG;
	op = add_op(t, OP_WRITE, cid, oid);
	if (!op)
		return -EINVAL;
	op->off = off;
	op->len = len;
	/* One copy, into an aligned buffer the device write can use as it is. */
	if (cm_buf_alloc_aligned(len ? len : 1, 4096, &op->buf))
		return drop_last(t);
	if (len)
		memcpy(op->buf->data, data, len);
	op->data = op->buf->data;
	op->dlen = len;
	return 0;
}

int
os_txn_write_buf(struct os_txn *t, const char *cid, const char *oid, uint64_t off,
		 struct cm_buf *buf, size_t boff, size_t len)
{
	struct os_op *op;

	if (off + len < off || off + len > OS_MAX_OBJ_BYTES)
		return -EFBIG;
	if (boff + len > buf->len)
		return -EINVAL;
	op = add_op(t, OP_WRITE, cid, oid);
	if (!op)
		return -EINVAL;
	op->off = off;
	op->len = len;
	op->buf = cm_buf_get(buf);
	op->data = buf->data + boff;
	op->dlen = len;
	return 0;
}

int
os_txn_zero(struct os_txn *t, const char *cid, const char *oid, uint64_t off, uint64_t len)
{
	struct os_op *op;

	if (off + len < off || off + len > OS_MAX_OBJ_BYTES)
		return -EFBIG;
	op = add_op(t, OP_ZERO, cid, oid);
	if (!op)
		return -EINVAL;
	op->off = off;
	op->len = len;
	return 0;
}

int
os_txn_truncate(struct os_txn *t, const char *cid, const char *oid, uint64_t size)
{
	struct os_op *op;

	if (size > OS_MAX_OBJ_BYTES)
		return -EFBIG;
	op = add_op(t, OP_TRUNCATE, cid, oid);
	if (!op)
		return -EINVAL;
	op->off = size;
	return 0;
}

int
os_txn_remove(struct os_txn *t, const char *cid, const char *oid)
{
	return add_op(t, OP_REMOVE, cid, oid) ? 0 : -EINVAL;
}

int
os_txn_clone_range(struct os_txn *t, const char *cid, const char *src, uint64_t src_off,
		   uint64_t len, const char *dst, uint64_t dst_off)
{
	struct os_op *op;

	if (!good_name(dst))
		return -EINVAL;
	if (src_off + len < src_off || dst_off + len < dst_off || dst_off + len > OS_MAX_OBJ_BYTES)
		return -EFBIG;
	op = add_op(t, OP_CLONE_RANGE, cid, src);
	if (!op)
		return -EINVAL;
	op->off = src_off;
	op->len = len;
	op->off2 = dst_off;
	op->oid2 = strdup(dst);
	if (!op->oid2)
		return drop_last(t);
	/* No barrier: it copies no omap, and its reads see in-flight writes
	 * through the pending map (as stash's did when it copied). */
	return 0;
}

int
os_txn_clone(struct os_txn *t, const char *cid, const char *src, const char *dst)
{
	struct os_op *op;

	if (!good_name(dst) || (src && dst && strcmp(src, dst) == 0))
		return -EINVAL;
	op = add_op(t, OP_CLONE, cid, src);
	if (!op)
		return -EINVAL;
	op->oid2 = strdup(dst);
	if (!op->oid2)
		return drop_last(t);
	t->barrier = true; /* it copies the source's omap, read from committed state */
	return 0;
}

/* src, dst: STASH, UNSTASH or RENAME; off, len for the first two. */
static int
two_obj_op(struct os_txn *t, enum os_op_type type, const char *cid, const char *src,
	   const char *dst, uint64_t off, uint64_t len)
{
	struct os_op *op;

	if (!src || !good_name(dst) || strcmp(src, dst) == 0)
		return -EINVAL;
	if (off + len < off || off + len > OS_MAX_OBJ_BYTES)
		return -EFBIG;
	op = add_op(t, type, cid, src);
	if (!op)
		return -EINVAL;
	op->off = off;
	op->len = len;
	op->oid2 = strdup(dst);
	if (!op->oid2)
		return drop_last(t);
	return 0; /* no barrier: they copy no omap (data comes through the pending map) */
}

int
os_txn_stash(struct os_txn *t, const char *cid, const char *src, const char *dst, uint64_t off,
	     uint64_t len)
{
	return two_obj_op(t, OP_STASH, cid, src, dst, off, len);
}

int
os_txn_unstash(struct os_txn *t, const char *cid, const char *stash, const char *dst, uint64_t off,
	       uint64_t len)
{
	return two_obj_op(t, OP_UNSTASH, cid, stash, dst, off, len);
}

int
os_txn_rename(struct os_txn *t, const char *cid, const char *src, const char *dst)
{
	return two_obj_op(t, OP_RENAME, cid, src, dst, 0, 0);
}

int
os_txn_move(struct os_txn *t, const char *cid, const char *src, const char *dst_cid,
	    const char *dst)
{
	struct os_op *op;

	if (!dst_cid || !strcmp(cid ? cid : "", dst_cid))
		return os_txn_rename(t, cid, src, dst);
	if (!src || !good_name(dst) || !good_name(dst_cid))
		return -EINVAL;
	op = add_op(t, OP_RENAME, cid, src);
	if (!op)
		return -EINVAL;
	op->oid2 = strdup(dst);
	op->cid2 = strdup(dst_cid);
	if (!op->oid2 || !op->cid2)
		return drop_last(t);
	return 0; /* no barrier, as rename */
}

int
os_txn_remove_any(struct os_txn *t, const char *cid, const char *oid)
{
	return add_op(t, OP_REMOVE_ANY, cid, oid) ? 0 : -EINVAL;
}

int
os_txn_setattr(struct os_txn *t, const char *cid, const char *oid, const char *name,
	       const void *val, size_t len)
{
	struct os_op *op;

	if (!name || !name[0] || strlen(name) > 256)
		return -EINVAL;
	op = add_op(t, OP_SETATTR, cid, oid);
	if (!op)
		return -EINVAL;
	op->name = strdup(name);
	if (!op->name || dup_bytes(&op->data, &op->dlen, val, len))
		return drop_last(t);
	return 0;
}

int
os_txn_rmattr(struct os_txn *t, const char *cid, const char *oid, const char *name)
{
	struct os_op *op;

	if (!name || !name[0])
		return -EINVAL;
	op = add_op(t, OP_RMATTR, cid, oid);
	if (!op)
		return -EINVAL;
	op->name = strdup(name);
	return op->name ? 0 : drop_last(t);
}

int
os_txn_omap_set(struct os_txn *t, const char *cid, const char *oid, const void *key, size_t klen,
		const void *val, size_t vlen)
{
	struct os_op *op = add_op(t, OP_OMAP_SET, cid, oid);

	if (!op)
		return -EINVAL;
	if (dup_bytes(&op->key, &op->klen, key, klen) || dup_bytes(&op->data, &op->dlen, val, vlen))
		return drop_last(t);
	return 0;
}

int
os_txn_omap_rm(struct os_txn *t, const char *cid, const char *oid, const void *key, size_t klen)
{
	struct os_op *op = add_op(t, OP_OMAP_RM, cid, oid);

	if (!op)
		return -EINVAL;
	return dup_bytes(&op->key, &op->klen, key, klen) ? drop_last(t) : 0;
}

int
os_txn_omap_rm_range(struct os_txn *t, const char *cid, const char *oid, const void *first,
		     size_t flen, const void *last, size_t llen)
{
	struct os_op *op = add_op(t, OP_OMAP_RM_RANGE, cid, oid);

	if (!op)
		return -EINVAL;
	if (dup_bytes(&op->data, &op->dlen, first, flen) ||
	    dup_bytes(&op->key, &op->klen, last, llen))
		return drop_last(t);
	return 0;
}

int
os_txn_omap_clear(struct os_txn *t, const char *cid, const char *oid)
{
	return add_op(t, OP_OMAP_CLEAR, cid, oid) ? 0 : -EINVAL;
}

int
os_txn_omap_set_header(struct os_txn *t, const char *cid, const char *oid, const void *val,
		       size_t len)
{
	struct os_op *op = add_op(t, OP_OMAP_HEADER, cid, oid);

	if (!op)
		return -EINVAL;
	return dup_bytes(&op->data, &op->dlen, val, len) ? drop_last(t) : 0;
}
