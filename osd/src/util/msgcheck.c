/* SPDX-License-Identifier: Apache-2.0 */
/* Checks of OSD messages from the wire. msgcheck.h. */
#include "osd/osd.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define MAX_OFF (1ull << 46) /* offsets and lengths of objects */

/* A varint of at most max bytes at p[*at..n). \return 0, -EBADMSG (truncated, or longer). */
static int
varint(const uint8_t *p, size_t n, size_t *at, unsigned max, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned i = 0; i < max; i++) {
		uint8_t b;

		if (*at >= n)
			return -EBADMSG;
		b = p[(*at)++];
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -EBADMSG;
}

int
osd_peek_seed(const uint8_t *p, size_t n, uint32_t *seed)
{
	size_t at = 0;
	uint32_t s = 0;

	while (at < n) {
		uint64_t tag, v;
		uint32_t field;

		/* As protobuf-c reads a tag: at most 5 bytes, the field number
		 * taken modulo 2^32, none in the first byte refused. */
		if ((p[at] & 0xf8) == 0 || varint(p, n, &at, 5, &tag))
			return -EBADMSG;
		field = (uint32_t)(tag >> 3);
		switch (tag & 7) {
		case 0:
			if (varint(p, n, &at, 10, &v))
				return -EBADMSG;
			if (field == 2)
				s = (uint32_t)v;
			break;
		case 1:
			if (n - at < 8)
				return -EBADMSG;
			at += 8;
			break;
		case 2:
			if (varint(p, n, &at, 10, &v) || v > n - at)
				return -EBADMSG;
			at += v;
			break;
		case 5:
			if (n - at < 4)
				return -EBADMSG;
			at += 4;
			break;
		default: /* groups, and the types that do not exist */
			return -EBADMSG;
		}
		if (field == 2 && (tag & 7) != 0)
			return -EBADMSG;
	}
	*seed = s;
	return 0;
}

static bool
bad_name(const char *oid)
{
	size_t nl = oid ? strlen(oid) : 0;

	return !nl || nl > OSD_NAME_MAX || (uint8_t)oid[0] == 1;
}

static bool
lock_str_ok(const char *s, size_t max, bool empty_ok)
{
	size_t n = s ? strlen(s) : 0;

	return n <= max && (empty_ok || n);
}

/* A watch/notify sub-op: its packed request within bounds. */
static int
check_watch(const Cairn__Osd__SubOp *so)
{
	int rc = 0;

	switch (so->op) {
	case OSD_OP_WATCH:
	case OSD_OP_UNWATCH:
	case OSD_OP_WATCH_PING: {
		Cairn__Osd__WatchReq *r =
			cairn__osd__watch_req__unpack(NULL, so->value.len, so->value.data);

		if (!r)
			return -EINVAL;
		if (so->op == OSD_OP_WATCH && (r->timeout_ms < OSD_WATCH_TIMEOUT_MIN_MS ||
					       r->timeout_ms > OSD_WATCH_TIMEOUT_MAX_MS))
			rc = -EINVAL;
		cairn__osd__watch_req__free_unpacked(r, NULL);
		return rc;
	}
	case OSD_OP_NOTIFY: {
		Cairn__Osd__NotifyReq *r =
			cairn__osd__notify_req__unpack(NULL, so->value.len, so->value.data);

		if (!r)
			return -EINVAL;
		if (r->payload.len > OSD_NOTIFY_MAX)
			rc = -E2BIG;
		else if (!r->timeout_ms || r->timeout_ms > OSD_NOTIFY_TIMEOUT_MAX_MS)
			rc = -EINVAL;
		cairn__osd__notify_req__free_unpacked(r, NULL);
		return rc;
	}
	case OSD_OP_NOTIFY_ACK: {
		Cairn__Osd__NotifyAckReq *r =
			cairn__osd__notify_ack_req__unpack(NULL, so->value.len, so->value.data);

		if (!r)
			return -EINVAL;
		if (r->reply.len > OSD_NOTIFY_MAX)
			rc = -E2BIG;
		cairn__osd__notify_ack_req__free_unpacked(r, NULL);
		return rc;
	}
	default: /* LIST_WATCHERS */
		return 0;
	}
}

/* A lock sub-op: its name and its packed LockReq. */
static int
check_lock(const Cairn__Osd__SubOp *so)
{
	Cairn__Osd__LockReq *r;
	int rc = 0;

	if (!lock_str_ok(so->name, OSD_LOCK_NAME_MAX, false))
		return -EINVAL;
	r = cairn__osd__lock_req__unpack(NULL, so->value.len, so->value.data);
	if (!r)
		return -EINVAL;
	if (!lock_str_ok(r->cookie, OSD_LOCK_STR_MAX, true) ||
	    !lock_str_ok(r->tag, OSD_LOCK_STR_MAX, true) ||
	    !lock_str_ok(r->description, OSD_LOCK_DESC_MAX, true) ||
	    !lock_str_ok(r->entity, OSD_LOCK_STR_MAX, so->op != OSD_OP_BREAK_LOCK) ||
	    r->type > OSD_LOCK_SHARED || (so->op == OSD_OP_LOCK && !r->type) ||
	    r->flags > (OSD_LOCK_MAY_RENEW | OSD_LOCK_MUST_RENEW) ||
	    r->duration_ms > 10ull * 365 * 86400 * 1000)
		rc = -EINVAL;
	cairn__osd__lock_req__free_unpacked(r, NULL);
	return rc;
}

int
osd_check_op(const Cairn__Osd__OsdOp *q, size_t data_len)
{
	struct crush_oname on;
	int rc = crush_oname_decode(q->oid, &on); /* a client names no OSD-internal object */

	if (rc)
		return rc;
	if (!q->n_ops || q->n_ops > OSD_MAX_SUBOPS)
		return -EINVAL;
	if (data_len > OSD_MAX_IO)
		return -E2BIG;
	for (size_t i = 0, rd = 0, nums = 0, locks = 0; i < q->n_ops; i++) {
		const Cairn__Osd__SubOp *so = q->ops[i];

		/* Reads: what the reply would carry, bounded before anything is read. */
		if ((so->op == OSD_OP_READ || so->op == OSD_OP_CMPEXT) &&
		    (so->len > OSD_MAX_IO || (rd += (size_t)so->len) > OSD_MAX_IO))
			return -E2BIG;
		if (!so->op || so->op >= OSD_OP_MAX_)
			return -EOPNOTSUPP;
		if (so->n_keys > OSD_MAX_KEYS || so->n_vals > OSD_MAX_KEYS)
			return -E2BIG;
		if ((so->op == OSD_OP_WRITE || so->op == OSD_OP_WRITEFULL ||
		     so->op == OSD_OP_APPEND || so->op == OSD_OP_CMPEXT) &&
		    (so->data_off > data_len || so->len > data_len - so->data_off))
			return -EINVAL;
		if (so->op == OSD_OP_CMPEXT && !so->len)
			return -EINVAL;
		if ((so->op == OSD_OP_WRITE || so->op == OSD_OP_ZERO || so->op == OSD_OP_READ ||
		     so->op == OSD_OP_CMPEXT) &&
		    (so->off > MAX_OFF || so->len > MAX_OFF))
			return -EFBIG;
		if (so->op == OSD_OP_TRUNCATE && so->len > MAX_OFF)
			return -EFBIG;
		if ((so->op == OSD_OP_GETXATTR || so->op == OSD_OP_SETXATTR ||
		     so->op == OSD_OP_RMXATTR || so->op == OSD_OP_CMPXATTR) &&
		    (!so->name || !so->name[0] || strlen(so->name) > 255))
			return -EINVAL;
		if (so->op == OSD_OP_OMAP_SET && so->n_keys != so->n_vals)
			return -EINVAL;
		if (so->op == OSD_OP_OMAP_RM_RANGE && so->n_keys != 1)
			return -EINVAL;
		if (so->op == OSD_OP_OMAP_CMP && (so->n_keys != so->n_vals || !so->n_keys ||
						  so->cmp < OSD_CMP_EQ || so->cmp > OSD_CMP_ABSENT))
			return -EINVAL;
		if (so->op >= OSD_OP_LOCK && so->op <= OSD_OP_ASSERT_LOCKED) {
			int lrc = check_lock(so);

			if (lrc)
				return lrc;
			/* one change per lock in an op: each computes from the stored state */
			if (so->op <= OSD_OP_BREAK_LOCK && ++locks > 1)
				return -EINVAL;
		}
		if (so->op >= OSD_OP_WATCH && so->op <= OSD_OP_LIST_WATCHERS) {
			/* alone in its op: a notify's reply waits, and each watch
			 * change computes from the stored watchers */
			int wrc = q->n_ops == 1 ? check_watch(so) : -EINVAL;

			if (wrc)
				return wrc;
		}
		if (so->op == OSD_OP_NUM) {
			if (++nums > OSD_MAX_NUMS)
				return -E2BIG;
			if (so->num_op < OSD_NUM_ADD || so->num_op > OSD_NUM_MIN ||
			    (so->bounded && so->num_min > so->num_max))
				return -EINVAL;
			if (so->omap ? so->n_keys != 1 || !so->keys[0].len
				     : !so->name || !so->name[0] || strlen(so->name) > 255)
				return -EINVAL;
		}
	}
	return 0;
}

int
osd_check_push(const Cairn__Osd__Push *p)
{
	if (bad_name(p->oid) || p->n_attr_names != p->n_attr_vals ||
	    p->n_omap_keys != p->n_omap_vals || p->size > MAX_OFF || p->data_off > MAX_OFF ||
	    p->n_attr_names > OSD_MAX_KEYS || p->n_omap_keys > OSD_MAX_KEYS ||
	    p->omap_header.len > OSD_MAX_IO)
		return -EINVAL;
	for (size_t i = 0; i < p->n_attr_names; i++)
		if (!p->attr_names[i].len || p->attr_names[i].len > OSD_ATTR_NAME_MAX ||
		    memchr(p->attr_names[i].data, 0, p->attr_names[i].len))
			return -EINVAL;
	return 0;
}

int
osd_check_repop(const Cairn__Osd__RepOp *ro, size_t data_len)
{
	if (!ro->entry) /* activation, or EC roll-forward (roll_to): no change */
		return ro->n_ops ? -EINVAL : 0;
	if (!ro->entry->ver || bad_name(ro->entry->oid) || ro->n_ops > 4 * OSD_MAX_SUBOPS + 8 ||
	    osd_check_log_entry(ro->entry))
		return -EINVAL;
	for (size_t i = 0; i < ro->n_ops; i++) {
		const Cairn__Osd__TxOp *x = ro->ops[i];

		if (x->op < OSD_TX_TOUCH || x->op > OSD_TX_RENAME || bad_name(x->oid) ||
		    x->off > MAX_OFF || x->len > MAX_OFF)
			return -EINVAL;
		if (x->op == OSD_TX_WRITE &&
		    (x->data_off > data_len || x->len > data_len - x->data_off))
			return -EINVAL;
		if ((x->op == OSD_TX_SETATTR || x->op == OSD_TX_RMATTR) &&
		    (!x->name || !x->name[0] || strlen(x->name) > OSD_ATTR_NAME_MAX))
			return -EINVAL;
		if (x->op == OSD_TX_OMAP_SET && x->n_keys != x->n_vals)
			return -EINVAL;
		if (x->op == OSD_TX_OMAP_RM_RANGE && x->n_keys != 1)
			return -EINVAL;
	}
	return 0;
}

int
osd_check_log_entry(const Cairn__Osd__LogEntry *le)
{
	if (!le->ver || !le->oid || le->undo > OSD_UNDO_RENAME || le->undo_off > MAX_OFF ||
	    le->undo_len > MAX_OFF || le->n_sent_to > 32 || le->outs.len > OSD_LOG_OUTS_MAX)
		return -EINVAL;
	return 0;
}

int
osd_check_notify(const Cairn__Osd__PgNotify *n)
{
	if (n->n_log > OSD_MAX_LOG_MSG)
		return -EINVAL;
	for (size_t i = 0; i < n->n_log; i++)
		if (osd_check_log_entry(n->log[i]))
			return -EINVAL;
	if (n->exists && !n->wipe && !n->info)
		return -EINVAL;
	if (n->n_missing > OSD_MAX_LOG_MSG)
		return -EINVAL;
	for (size_t i = 0; i < n->n_missing; i++)
		if (bad_name(n->missing[i]))
			return -EINVAL;
	if (n->n_past > OSD_MAX_PAST || n->n_lease_waits > OSD_MAX_PAST)
		return -EINVAL;
	for (size_t i = 0; i < n->n_lease_waits; i++)
		if (n->lease_waits[i]->osd < 0)
			return -EINVAL;
	for (size_t i = 0; i < n->n_past; i++) {
		const Cairn__Osd__PastInterval *iv = n->past[i];

		if (iv->n_osds > OSD_MAX_PAST_OSDS || iv->first > iv->last ||
		    iv->last == UINT64_MAX)
			return -EINVAL;
		for (size_t j = 0; j < iv->n_osds; j++)
			if (iv->osds[j] < 0)
				return -EINVAL;
	}
	return 0;
}

int
osd_check_recover(const Cairn__Osd__RecoverReq *q)
{
	if (q->from < 0 || q->target < 0 || q->n_oids > OSD_MAX_LOG_MSG)
		return -EINVAL;
	for (size_t i = 0; i < q->n_oids; i++)
		if (bad_name(q->oids[i]))
			return -EINVAL;
	return 0;
}

int
osd_check_ack(const Cairn__Osd__PgAck *a)
{
	if (a->n_oids > OSD_MAX_LOG_MSG)
		return -EINVAL;
	for (size_t i = 0; i < a->n_oids; i++)
		if (bad_name(a->oids[i]))
			return -EINVAL;
	return 0;
}

int
osd_check_ec_read(const Cairn__Osd__EcRead *q)
{
	if (bad_name(q->oid) || q->shard >= 32 || q->off > MAX_OFF || !q->len ||
	    q->len > (64u << 20) || !q->ver)
		return -EINVAL;
	return 0;
}

int
osd_check_ec_read_reply(const Cairn__Osd__EcReadReply *r)
{
	if (r->n_attr_names != r->n_attr_vals || r->n_attr_names > OSD_MAX_KEYS ||
	    r->size > MAX_OFF)
		return -EINVAL;
	for (size_t i = 0; i < r->n_attr_names; i++)
		if (!r->attr_names[i].len || r->attr_names[i].len > OSD_ATTR_NAME_MAX)
			return -EINVAL;
	return 0;
}

int
osd_check_list(const Cairn__Osd__PgList *q)
{
	size_t al = q->start_after ? strlen(q->start_after) : 0;
	size_t nl = q->nspace ? strlen(q->nspace) : 0;

	/* (the cursor is a name this OSD returned, or the client's jump
	 * point: any bytes, bounded like a name) */
	if (al > OSD_NAME_MAX + 1 || nl > CRUSH_ONAME_NS_MAX)
		return -ENAMETOOLONG;
	if (nl && memchr(q->nspace, CRUSH_ONAME_SEP, nl))
		return -EINVAL;
	return 0;
}
