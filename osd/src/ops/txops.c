/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TxOps (the replicated form of a change) as a store transaction.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

/* ---------- store transactions from TxOps ---------- */

static int
txn_write_sgl(struct os_txn *t, const char *cid, const char *oid, uint64_t off,
	      const struct cm_sgl *d, uint64_t doff, uint64_t len)
{
	uint64_t pos = 0;

	for (unsigned i = 0; i < d->n && len; i++) {
		const struct cm_sg *sg = &d->sg[i];
		uint64_t n;
		int rc;

		if (doff >= pos + sg->len) {
			pos += sg->len;
			continue;
		}
		n = CM_MIN(len, pos + sg->len - doff);
		rc = os_txn_write_buf(t, cid, oid, off, sg->buf, sg->off + (size_t)(doff - pos),
				      (size_t)n);
		if (rc)
			return rc;
		off += n;
		doff += n;
		len -= n;
		pos += sg->len;
	}
	return len ? -EINVAL : 0;
}

/*
 * touch: our copy is being backfilled and may not have the object yet (the
 * backfill replaces it later): create it so that ops needing it apply.
 * ver: the entry's version (its stash object's name).
 */
int
osd__txn_add_ops(struct os_txn *t, const char *cid, Cairn__Osd__TxOp *const *ops, size_t n,
		 const struct cm_sgl *data, bool touch, const struct osd_ver *ver)
{
	char stash[OSD_STASH_NAME_MAX];
	int rc = 0;

	osd_stash_name(ver, stash);

	for (size_t i = 0; i < n && !rc; i++) {
		const Cairn__Osd__TxOp *x = ops[i];
		const char *oid = x->oid;

		if (touch && (rc = os_txn_touch(t, cid, oid)))
			return rc;
		switch (x->op) {
		case OSD_TX_TOUCH:
			rc = os_txn_touch(t, cid, oid);
			break;
		case OSD_TX_WRITE:
			if (x->data_off > data->len || x->len > data->len - x->data_off)
				return -EINVAL;
			rc = txn_write_sgl(t, cid, oid, x->off, data, x->data_off, x->len);
			break;
		case OSD_TX_TRUNCATE:
			rc = os_txn_truncate(t, cid, oid, x->len);
			break;
		case OSD_TX_ZERO:
			rc = os_txn_zero(t, cid, oid, x->off, x->len);
			break;
		case OSD_TX_REMOVE:
			/* Touch first: removing is idempotent on every copy. */
			rc = os_txn_touch(t, cid, oid);
			if (!rc)
				rc = os_txn_remove(t, cid, oid);
			break;
		case OSD_TX_SETATTR:
			rc = os_txn_setattr(t, cid, oid, x->name, x->value.data, x->value.len);
			break;
		case OSD_TX_RMATTR:
			rc = os_txn_rmattr(t, cid, oid, x->name);
			break;
		case OSD_TX_OMAP_SET:
			if (x->n_keys != x->n_vals)
				return -EINVAL;
			for (size_t k = 0; k < x->n_keys && !rc; k++)
				rc = os_txn_omap_set(t, cid, oid, x->keys[k].data, x->keys[k].len,
						     x->vals[k].data, x->vals[k].len);
			break;
		case OSD_TX_OMAP_RM:
			for (size_t k = 0; k < x->n_keys && !rc; k++)
				rc = os_txn_omap_rm(t, cid, oid, x->keys[k].data, x->keys[k].len);
			break;
		case OSD_TX_OMAP_RM_RANGE:
			if (x->n_keys != 1)
				return -EINVAL;
			rc = os_txn_omap_rm_range(t, cid, oid, x->keys[0].data, x->keys[0].len,
						  x->end.data, x->end.len);
			break;
		case OSD_TX_OMAP_CLEAR:
			rc = os_txn_omap_clear(t, cid, oid);
			break;
		case OSD_TX_OMAP_SET_HEADER:
			rc = os_txn_omap_set_header(t, cid, oid, x->value.data, x->value.len);
			break;
		case OSD_TX_STASH:
			rc = os_txn_stash(t, cid, oid, stash, x->off, x->len);
			break;
		case OSD_TX_RENAME:
			rc = os_txn_touch(t, cid, oid); /* as a remove: idempotent */
			if (!rc)
				rc = os_txn_rename(t, cid, oid, stash);
			break;
		default:
			return -EINVAL;
		}
	}
	return rc;
}
