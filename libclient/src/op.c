/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcairn: building compound ops (cairn_op_*, any thread) and freeing what
 * their outputs allocate. An io thread (client.c) turns an op into an
 * OsdOp message and fills its outputs from the reply.
 */
#include "cairn/cairn.h"
#include "client_int.h"
#include "osd/proto.h"
#include "cm/err.h"
#include "cm/tlcache.h"

/*
 * Released ops wait in caches (cm/tlcache.h) with their sub-op array, so
 * an op per call allocates nothing in the steady state; an array grown
 * past OP_KEEP_SUBS is freed instead of kept.
 */
#define OP_KEEP_SUBS 16

static void
op_destroy(void *p)
{
	cairn_op_t *op = p;

	free(op->subs);
	free(op);
}

static struct cm_tlc_kind g_op_kind = CM_TLC_KIND(1024, 4096, op_destroy);
static __thread struct cm_tlc t_ops = { .kind = &g_op_kind };

/* Count len more bytes written (or read) by op: -E2BIG past OSD_MAX_IO. */
static bool
op_io_add(cairn_op_t *op, uint64_t *total, size_t len)
{
	if (len > OSD_MAX_IO || *total + len > OSD_MAX_IO) {
		op->err = -E2BIG;
		return false;
	}
	*total += len;
	return true;
}

cairn_op_t *
cairn_op_create(void)
{
	cairn_op_t *op = cm_tlc_get(&t_ops);

	if (!op)
		return calloc(1, sizeof(struct cairn_op));
	/* (subs and cap were kept: the list linked through cache_link) */
	op->n = 0;
	op->err = 0;
	op->wbytes = op->rbytes = 0;
	return op;
}

static void
bin_free(ProtobufCBinaryData *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

void
cairn_op_release(cairn_op_t *op)
{
	if (!op)
		return;
	for (size_t i = 0; i < op->n; i++) {
		struct csub *s = &op->subs[i];

		free(s->name);
		bin_free(&s->value);
		bin_free(&s->end);
		bin_free(&s->start_after);
		bin_free(&s->prefix);
		for (size_t k = 0; k < s->nkeys; k++)
			free(s->keys[k].data);
		for (size_t k = 0; k < s->nvals; k++)
			free(s->vals[k].data);
		free(s->keys);
		free(s->vals);
	}
	if (op->cap > OP_KEEP_SUBS) {
		free(op->subs);
		op->subs = NULL;
		op->cap = 0;
	}
	cm_tlc_put(&t_ops, op);
}

static struct csub *
sub_add(cairn_op_t *op, uint32_t type)
{
	struct csub *s;

	if (op->err)
		return NULL;
	if (op->n == OSD_MAX_SUBOPS) {
		op->err = -E2BIG;
		return NULL;
	}
	if (op->n == op->cap) {
		size_t cap = op->cap ? op->cap * 2 : 4;
		struct csub *ns = realloc(op->subs, cap * sizeof(*ns));

		if (!ns) {
			op->err = -ENOMEM;
			return NULL;
		}
		op->subs = ns;
		op->cap = cap;
	}
	s = &op->subs[op->n++];
	memset(s, 0, sizeof(*s));
	s->type = type;
	return s;
}

static int
bin_set(ProtobufCBinaryData *b, const void *p, size_t n)
{
	b->data = malloc(n ? n : 1);
	if (!b->data)
		return -ENOMEM;
	if (n)
		memcpy(b->data, p, n);
	b->len = n;
	return 0;
}

static void
sub_name(cairn_op_t *op, struct csub *s, const char *name)
{
	if (!s)
		return;
	if (!name || !name[0] || strlen(name) > 255) {
		op->err = -EINVAL;
		return;
	}
	s->name = strdup(name);
	if (!s->name)
		op->err = -ENOMEM;
}

void
cairn_op_write(cairn_op_t *op, uint64_t off, const void *buf, size_t len)
{
	struct csub *s = sub_add(op, OSD_OP_WRITE);

	if (s && op_io_add(op, &op->wbytes, len)) {
		s->off = off;
		s->len = len;
		s->wbuf = buf;
	}
}

void
cairn_op_write_full(cairn_op_t *op, const void *buf, size_t len)
{
	struct csub *s = sub_add(op, OSD_OP_WRITEFULL);

	if (s && op_io_add(op, &op->wbytes, len)) {
		s->len = len;
		s->wbuf = buf;
	}
}

void
cairn_op_append(cairn_op_t *op, const void *buf, size_t len)
{
	struct csub *s = sub_add(op, OSD_OP_APPEND);

	if (s && op_io_add(op, &op->wbytes, len)) {
		s->len = len;
		s->wbuf = buf;
	}
}

void
cairn_op_truncate(cairn_op_t *op, uint64_t size)
{
	struct csub *s = sub_add(op, OSD_OP_TRUNCATE);

	if (s)
		s->len = size;
}

void
cairn_op_zero(cairn_op_t *op, uint64_t off, uint64_t len)
{
	struct csub *s = sub_add(op, OSD_OP_ZERO);

	if (s) {
		s->off = off;
		s->len = len;
	}
}

void
cairn_op_remove(cairn_op_t *op)
{
	sub_add(op, OSD_OP_REMOVE);
}

void
cairn_op_create_object(cairn_op_t *op, bool exclusive)
{
	struct csub *s = sub_add(op, OSD_OP_CREATE);

	if (s)
		s->excl = exclusive;
}

void
cairn_op_setxattr(cairn_op_t *op, const char *name, const void *val, size_t len)
{
	struct csub *s = sub_add(op, OSD_OP_SETXATTR);

	sub_name(op, s, name);
	if (s && !op->err && bin_set(&s->value, val, len))
		op->err = -ENOMEM;
}

void
cairn_op_rmxattr(cairn_op_t *op, const char *name)
{
	sub_name(op, sub_add(op, OSD_OP_RMXATTR), name);
}

/* The last sub-op when it is of this type (for joining keys), else a new one. */
static struct csub *
sub_join(cairn_op_t *op, uint32_t type)
{
	if (op->n && op->subs[op->n - 1].type == type && op->subs[op->n - 1].nkeys < OSD_MAX_KEYS)
		return &op->subs[op->n - 1];
	return sub_add(op, type);
}

static int
push_bin(ProtobufCBinaryData **arr, size_t *n, const void *p, size_t len)
{
	ProtobufCBinaryData *na = realloc(*arr, (*n + 1) * sizeof(*na));

	if (!na)
		return -ENOMEM;
	*arr = na;
	if (bin_set(&na[*n], p, len))
		return -ENOMEM;
	(*n)++;
	return 0;
}

void
cairn_op_omap_set(cairn_op_t *op, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct csub *s = sub_join(op, OSD_OP_OMAP_SET);

	if (s &&
	    (push_bin(&s->keys, &s->nkeys, key, klen) || push_bin(&s->vals, &s->nvals, val, vlen)))
		op->err = -ENOMEM;
}

void
cairn_op_omap_rm(cairn_op_t *op, const void *key, size_t klen)
{
	struct csub *s = sub_join(op, OSD_OP_OMAP_RM);

	if (s && push_bin(&s->keys, &s->nkeys, key, klen))
		op->err = -ENOMEM;
}

void
cairn_op_omap_rm_range(cairn_op_t *op, const void *first, size_t flen, const void *last,
		       size_t llen)
{
	struct csub *s = sub_add(op, OSD_OP_OMAP_RM_RANGE);

	if (s && (push_bin(&s->keys, &s->nkeys, first, flen) || bin_set(&s->end, last, llen)))
		op->err = -ENOMEM;
}

void
cairn_op_omap_clear(cairn_op_t *op)
{
	sub_add(op, OSD_OP_OMAP_CLEAR);
}

void
cairn_op_omap_set_header(cairn_op_t *op, const void *val, size_t len)
{
	struct csub *s = sub_add(op, OSD_OP_OMAP_SET_HEADER);

	if (s && bin_set(&s->value, val, len))
		op->err = -ENOMEM;
}

void
cairn_op_assert_exists(cairn_op_t *op)
{
	sub_add(op, OSD_OP_ASSERT_EXISTS);
}

void
cairn_op_assert_version(cairn_op_t *op, const struct cairn_version *v)
{
	struct csub *s = sub_add(op, OSD_OP_ASSERT_VERSION);

	if (s)
		s->ver = *v;
}

void
cairn_op_cmpxattr(cairn_op_t *op, const char *name, enum cairn_cmp cmp, const void *val, size_t len)
{
	struct csub *s = sub_add(op, OSD_OP_CMPXATTR);

	sub_name(op, s, name);
	if (!s || op->err)
		return;
	if (cmp < CAIRN_CMP_EQ || cmp > CAIRN_CMP_ABSENT) {
		op->err = -EINVAL;
		return;
	}
	s->cmp = (uint32_t)cmp;
	if (bin_set(&s->value, val, len))
		op->err = -ENOMEM;
}

void
cairn_op_cmpext(cairn_op_t *op, uint64_t off, const void *buf, size_t len, uint64_t *mismatch,
		int *rval)
{
	struct csub *s = sub_add(op, OSD_OP_CMPEXT);

	if (!s)
		return;
	if (!len) {
		op->err = -EINVAL;
		return;
	}
	if (op_io_add(op, &op->wbytes, len) && op_io_add(op, &op->rbytes, len)) {
		s->off = off;
		s->len = len;
		s->wbuf = buf;
		s->out_size = mismatch;
		s->rval = rval;
	}
}

void
cairn_op_omap_cmp(cairn_op_t *op, const void *key, size_t klen, enum cairn_cmp cmp, const void *val,
		  size_t vlen)
{
	struct csub *s;

	if (cmp < CAIRN_CMP_EQ || cmp > CAIRN_CMP_ABSENT) {
		if (!op->err)
			op->err = -EINVAL;
		return;
	}
	s = sub_join(op, OSD_OP_OMAP_CMP);
	if (s && s->nkeys && s->cmp != (uint32_t)cmp)
		s = sub_add(op, OSD_OP_OMAP_CMP);
	if (!s)
		return;
	s->cmp = (uint32_t)cmp;
	if (push_bin(&s->keys, &s->nkeys, key, klen) || push_bin(&s->vals, &s->nvals, val, vlen))
		op->err = -ENOMEM;
}

static struct csub *
num_add(cairn_op_t *op, enum cairn_num_op nop, int64_t num, int64_t *result, int *rval)
{
	struct csub *s;

	if (nop < CAIRN_NUM_ADD || nop > CAIRN_NUM_MIN) {
		if (!op->err)
			op->err = -EINVAL;
		return NULL;
	}
	s = sub_add(op, OSD_OP_NUM);
	if (s) {
		s->num_op = (uint32_t)nop;
		s->num = num;
		s->out_num = result;
		s->rval = rval;
	}
	return s;
}

void
cairn_op_xattr_num(cairn_op_t *op, const char *name, enum cairn_num_op nop, int64_t num,
		   int64_t *result, int *rval)
{
	sub_name(op, num_add(op, nop, num, result, rval), name);
}

void
cairn_op_omap_num(cairn_op_t *op, const void *key, size_t klen, enum cairn_num_op nop, int64_t num,
		  int64_t *result, int *rval)
{
	struct csub *s = num_add(op, nop, num, result, rval);

	if (!s)
		return;
	s->omap = true;
	if (!klen)
		op->err = -EINVAL;
	else if (push_bin(&s->keys, &s->nkeys, key, klen))
		op->err = -ENOMEM;
}

void
cairn_op_num_bounds(cairn_op_t *op, int64_t min, int64_t max)
{
	for (size_t i = op->n; i-- > 0;)
		if (op->subs[i].type == OSD_OP_NUM) {
			op->subs[i].bounded = true;
			op->subs[i].num_min = min;
			op->subs[i].num_max = max;
			if (min > max && !op->err)
				op->err = -EINVAL;
			return;
		}
	if (!op->err)
		op->err = -EINVAL;
}

void
cairn_op_read(cairn_op_t *op, uint64_t off, size_t len, void *buf, size_t *bytes_read, int *rval)
{
	struct csub *s = sub_add(op, OSD_OP_READ);

	if (!s)
		return;
	if (!len) {
		op->err = -EINVAL;
		return;
	}
	if (!op_io_add(op, &op->rbytes, len))
		return;
	s->off = off;
	s->len = len;
	s->rbuf = buf;
	s->rbuflen = len;
	s->out_len = bytes_read;
	s->rval = rval;
}

void
cairn_op_stat(cairn_op_t *op, uint64_t *size, struct cairn_version *ver, int *rval)
{
	struct csub *s = sub_add(op, OSD_OP_STAT);

	if (s) {
		s->out_size = size;
		s->out_ver = ver;
		s->rval = rval;
	}
}

void
cairn_op_getxattr(cairn_op_t *op, const char *name, void *buf, size_t buflen, size_t *len,
		  int *rval)
{
	struct csub *s = sub_add(op, OSD_OP_GETXATTR);

	sub_name(op, s, name);
	if (s) {
		s->rbuf = buf;
		s->rbuflen = buflen;
		s->out_len = len;
		s->rval = rval;
	}
}

void
cairn_op_getxattrs(cairn_op_t *op, struct cairn_kv **kvs, size_t *n, int *rval)
{
	struct csub *s = sub_add(op, OSD_OP_GETXATTRS);

	if (s) {
		s->out_kvs = kvs;
		s->out_n = n;
		s->rval = rval;
	}
}

void
cairn_op_omap_get(cairn_op_t *op, const struct cairn_kv *keys, size_t nkeys, struct cairn_kv **kvs,
		  size_t *n, int *rval)
{
	struct csub *s = sub_add(op, OSD_OP_OMAP_GET);

	if (!s)
		return;
	if (nkeys > OSD_MAX_KEYS) {
		op->err = -E2BIG;
		return;
	}
	for (size_t i = 0; i < nkeys; i++)
		if (push_bin(&s->keys, &s->nkeys, keys[i].key, keys[i].klen)) {
			op->err = -ENOMEM;
			return;
		}
	s->out_kvs = kvs;
	s->out_n = n;
	s->rval = rval;
}

void
cairn_op_omap_list(cairn_op_t *op, const void *start_after, size_t salen, const void *prefix,
		   size_t plen, unsigned max, struct cairn_kv **kvs, size_t *n, bool *more,
		   int *rval)
{
	struct csub *s = sub_add(op, OSD_OP_OMAP_LIST);

	if (!s)
		return;
	if ((start_after && bin_set(&s->start_after, start_after, salen)) ||
	    (prefix && bin_set(&s->prefix, prefix, plen))) {
		op->err = -ENOMEM;
		return;
	}
	s->max = max;
	s->out_kvs = kvs;
	s->out_n = n;
	s->out_more = more;
	s->rval = rval;
}

void
cairn_op_omap_get_header(cairn_op_t *op, struct cairn_kv *header, int *rval)
{
	struct csub *s = sub_add(op, OSD_OP_OMAP_GET_HEADER);

	if (s) {
		s->out_header = header;
		s->rval = rval;
	}
}

void
cairn_kvs_free(struct cairn_kv *kvs, size_t n)
{
	if (!kvs)
		return;
	for (size_t i = 0; i < n; i++) {
		free(kvs[i].key);
		free(kvs[i].val);
	}
	free(kvs);
}

void
cairn_names_free(char **names, size_t n)
{
	if (!names)
		return;
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* ---------- locks ---------- */

/* A lock sub-op: name, and its request packed into the value. */
static void
lock_add(cairn_op_t *op, uint32_t type, const char *name, const Cairn__Osd__LockReq *rq)
{
	struct csub *s = sub_add(op, type);
	size_t n;

	sub_name(op, s, name);
	if (!s || op->err)
		return;
	if (!name[0] || strlen(name) > OSD_LOCK_NAME_MAX ||
	    (rq->cookie && strlen(rq->cookie) > OSD_LOCK_STR_MAX) ||
	    (rq->tag && strlen(rq->tag) > OSD_LOCK_STR_MAX) ||
	    (rq->entity && strlen(rq->entity) > OSD_LOCK_STR_MAX) ||
	    (rq->description && strlen(rq->description) > OSD_LOCK_DESC_MAX)) {
		op->err = -EINVAL;
		return;
	}
	n = cairn__osd__lock_req__get_packed_size(rq);
	s->value.data = malloc(n ? n : 1);
	if (!s->value.data) {
		op->err = -ENOMEM;
		return;
	}
	s->value.len = cairn__osd__lock_req__pack(rq, s->value.data);
}

void
cairn_op_lock(cairn_op_t *op, const char *name, enum cairn_lock_type type, const char *cookie,
	      const char *tag, const char *description, uint64_t duration_ms, unsigned flags)
{
	Cairn__Osd__LockReq rq = CAIRN__OSD__LOCK_REQ__INIT;

	if (type != CAIRN_LOCK_EXCLUSIVE && type != CAIRN_LOCK_SHARED) {
		op->err = op->err ? op->err : -EINVAL;
		return;
	}
	rq.type = (uint32_t)type;
	rq.cookie = (char *)(cookie ? cookie : "");
	rq.tag = (char *)(tag ? tag : "");
	rq.description = (char *)(description ? description : "");
	rq.duration_ms = duration_ms;
	rq.flags = flags & (CAIRN_LOCK_MAY_RENEW | CAIRN_LOCK_MUST_RENEW);
	lock_add(op, OSD_OP_LOCK, name, &rq);
}

void
cairn_op_unlock(cairn_op_t *op, const char *name, const char *cookie)
{
	Cairn__Osd__LockReq rq = CAIRN__OSD__LOCK_REQ__INIT;

	rq.cookie = (char *)(cookie ? cookie : "");
	lock_add(op, OSD_OP_UNLOCK, name, &rq);
}

void
cairn_op_break_lock(cairn_op_t *op, const char *name, const char *entity, const char *cookie)
{
	Cairn__Osd__LockReq rq = CAIRN__OSD__LOCK_REQ__INIT;

	if (!entity || !entity[0]) {
		op->err = op->err ? op->err : -EINVAL;
		return;
	}
	rq.entity = (char *)entity;
	rq.cookie = (char *)(cookie ? cookie : "");
	lock_add(op, OSD_OP_BREAK_LOCK, name, &rq);
}

void
cairn_op_assert_locked(cairn_op_t *op, const char *name, enum cairn_lock_type type,
		       const char *cookie, const char *tag)
{
	Cairn__Osd__LockReq rq = CAIRN__OSD__LOCK_REQ__INIT;

	rq.type = (uint32_t)type;
	rq.cookie = (char *)(cookie ? cookie : "");
	rq.tag = (char *)(tag ? tag : "");
	lock_add(op, OSD_OP_ASSERT_LOCKED, name, &rq);
}

void
cairn_op_lock_info(cairn_op_t *op, const char *name, struct cairn_lock_info *info, int *rval)
{
	Cairn__Osd__LockReq rq = CAIRN__OSD__LOCK_REQ__INIT;
	size_t n = op->n;

	lock_add(op, OSD_OP_LOCK_INFO, name, &rq);
	if (op->n > n) {
		op->subs[n].out_lock = info;
		op->subs[n].rval = rval;
	}
	if (info)
		memset(info, 0, sizeof(*info));
}

void
cairn_lock_info_free(struct cairn_lock_info *info)
{
	for (size_t i = 0; info && i < info->n; i++) {
		free(info->lockers[i].entity);
		free(info->lockers[i].cookie);
		free(info->lockers[i].description);
	}
	if (info) {
		free(info->lockers);
		free(info->tag);
		memset(info, 0, sizeof(*info));
	}
}

/* A LockState from an OSD into info. \return 0, -EBADMSG, -ENOMEM. */
int
cairn__lock_info_decode(const uint8_t *p, size_t len, struct cairn_lock_info *info)
{
	Cairn__Osd__LockState *st = cairn__osd__lock_state__unpack(NULL, len, p);
	int rc = 0;

	memset(info, 0, sizeof(*info));
	if (!st)
		return -EBADMSG;
	info->type = (enum cairn_lock_type)st->type;
	info->tag = strdup(st->tag ? st->tag : "");
	info->lockers = calloc(st->n_lockers + 1, sizeof(*info->lockers));
	if (!info->tag || !info->lockers)
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < st->n_lockers; i++) {
		struct cairn_locker *l = &info->lockers[i];

		l->entity = strdup(st->lockers[i]->entity);
		l->cookie = strdup(st->lockers[i]->cookie);
		l->description = strdup(st->lockers[i]->description);
		l->expires_ns = st->lockers[i]->expires_ns;
		l->expired = st->lockers[i]->expired;
		info->n++;
		if (!l->entity || !l->cookie || !l->description)
			rc = -ENOMEM;
	}
	cairn__osd__lock_state__free_unpacked(st, NULL);
	if (rc)
		cairn_lock_info_free(info);
	return rc;
}

/* ---------- watch/notify ---------- */

/* A watch/notify sub-op with its request packed (pack: the message's packer). */
static struct csub *
watch_sub(cairn_op_t *op, uint32_t type, const ProtobufCMessage *rq)
{
	struct csub *s = sub_add(op, type);
	size_t n;

	if (!s)
		return NULL;
	n = protobuf_c_message_get_packed_size(rq);
	s->value.data = malloc(n ? n : 1);
	if (!s->value.data) {
		op->err = -ENOMEM;
		return NULL;
	}
	s->value.len = protobuf_c_message_pack(rq, s->value.data);
	return s;
}

void
cairn__op_watch(cairn_op_t *op, uint32_t type, uint64_t cookie, unsigned timeout_ms)
{
	Cairn__Osd__WatchReq rq = CAIRN__OSD__WATCH_REQ__INIT;

	rq.cookie = cookie;
	rq.timeout_ms = timeout_ms;
	watch_sub(op, type, &rq.base);
}

void
cairn__op_notify_ack(cairn_op_t *op, uint64_t notify_id, uint64_t cookie, const void *reply,
		     size_t len)
{
	Cairn__Osd__NotifyAckReq rq = CAIRN__OSD__NOTIFY_ACK_REQ__INIT;

	if (len > CAIRN_NOTIFY_MAX || (len && !reply)) {
		op->err = op->err ? op->err : -EINVAL;
		return;
	}
	rq.notify_id = notify_id;
	rq.cookie = cookie;
	rq.reply.data = (uint8_t *)reply;
	rq.reply.len = len;
	watch_sub(op, OSD_OP_NOTIFY_ACK, &rq.base);
}

void
cairn_op_notify(cairn_op_t *op, const void *payload, size_t len, unsigned timeout_ms,
		struct cairn_notify_result *res, int *rval)
{
	Cairn__Osd__NotifyReq rq = CAIRN__OSD__NOTIFY_REQ__INIT;
	struct csub *s;

	if (res)
		memset(res, 0, sizeof(*res));
	if (len > CAIRN_NOTIFY_MAX || (len && !payload) || timeout_ms > OSD_NOTIFY_TIMEOUT_MAX_MS) {
		op->err = op->err ? op->err : -EINVAL;
		return;
	}
	rq.payload.data = (uint8_t *)payload;
	rq.payload.len = len;
	rq.timeout_ms = timeout_ms ? timeout_ms : 5000;
	s = watch_sub(op, OSD_OP_NOTIFY, &rq.base);
	if (s) {
		s->out_notify = res;
		s->rval = rval;
		s->notify_ms = rq.timeout_ms;
	}
}

void
cairn_op_list_watchers(cairn_op_t *op, struct cairn_watcher **w, size_t *n, int *rval)
{
	Cairn__Osd__WatchReq rq = CAIRN__OSD__WATCH_REQ__INIT;
	struct csub *s;

	if (w)
		*w = NULL;
	if (n)
		*n = 0;
	s = watch_sub(op, OSD_OP_LIST_WATCHERS, &rq.base);
	if (s) {
		s->out_watchers = w;
		s->out_n = n;
		s->rval = rval;
	}
}

static void
replies_free(struct cairn_notify_reply *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++) {
		free(r[i].entity);
		free(r[i].data);
	}
	free(r);
}

void
cairn_notify_result_free(struct cairn_notify_result *res)
{
	if (!res)
		return;
	replies_free(res->acks, res->nacks);
	replies_free(res->timeouts, res->ntimeouts);
	memset(res, 0, sizeof(*res));
}

void
cairn_watchers_free(struct cairn_watcher *w, size_t n)
{
	for (size_t i = 0; w && i < n; i++)
		free(w[i].entity);
	free(w);
}

static int
replies_from(Cairn__Osd__NotifyReply **v, size_t n, struct cairn_notify_reply **out, size_t *nout)
{
	struct cairn_notify_reply *r = calloc(n + 1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	*out = r;
	for (size_t i = 0; i < n; i++) {
		r[i].entity = strdup(v[i]->entity ? v[i]->entity : "");
		r[i].cookie = v[i]->cookie;
		*nout = i + 1;
		if (!r[i].entity)
			return -ENOMEM;
		if (v[i]->reply.len) {
			r[i].data = malloc(v[i]->reply.len);
			if (!r[i].data)
				return -ENOMEM;
			memcpy(r[i].data, v[i]->reply.data, v[i]->reply.len);
			r[i].len = v[i]->reply.len;
		}
	}
	return 0;
}

/* A NotifyResult from an OSD into res. \return 0, -EBADMSG, -ENOMEM. */
int
cairn__notify_result_decode(const uint8_t *p, size_t len, struct cairn_notify_result *res)
{
	Cairn__Osd__NotifyResult *nr = cairn__osd__notify_result__unpack(NULL, len, p);
	int rc;

	memset(res, 0, sizeof(*res));
	if (!nr)
		return -EBADMSG;
	rc = replies_from(nr->acks, nr->n_acks, &res->acks, &res->nacks);
	if (!rc)
		rc = replies_from(nr->timeouts, nr->n_timeouts, &res->timeouts, &res->ntimeouts);
	cairn__osd__notify_result__free_unpacked(nr, NULL);
	if (rc)
		cairn_notify_result_free(res);
	return rc;
}

/* A WatchSet from an OSD into *w, *n. \return 0, -EBADMSG, -ENOMEM. */
int
cairn__watchers_decode(const uint8_t *p, size_t len, struct cairn_watcher **w, size_t *n)
{
	Cairn__Osd__WatchSet *set = len ? cairn__osd__watch_set__unpack(NULL, len, p) : NULL;
	struct cairn_watcher *v;
	size_t k = 0, cnt = set ? set->n_watchers : 0;
	int rc = 0;

	*w = NULL;
	*n = 0;
	if (len && !set)
		return -EBADMSG;
	v = calloc(cnt + 1, sizeof(*v));
	if (!v)
		rc = -ENOMEM;
	for (; !rc && k < cnt; k++) {
		v[k].entity = strdup(set->watchers[k]->entity ? set->watchers[k]->entity : "");
		v[k].cookie = set->watchers[k]->cookie;
		v[k].timeout_ms = set->watchers[k]->timeout_ms;
		if (!v[k].entity)
			rc = -ENOMEM;
	}
	if (set)
		cairn__osd__watch_set__free_unpacked(set, NULL);
	if (rc) {
		cairn_watchers_free(v, k);
		return rc;
	}
	*w = v;
	*n = cnt;
	return 0;
}
