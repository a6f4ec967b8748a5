/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcairn's striper: streams over many objects (cairn.h, "streams"), on
 * the public async calls. A call becomes a job: one child op per object it
 * touches, all in flight at once, then (writes, appends, truncates) a
 * change of the size counter on object 0. Children complete on the client
 * thread; the last one moves the job to its next phase or completes the
 * caller's completion.
 */
#include "cairn/cairn.h"
#include "client_int.h"
#include "striper_map.h"
#include "cm/err.h"

#include <pthread.h>
#include <stdatomic.h>

#define XATTR_LAYOUT "cairn.layout"
#define XATTR_SIZE   "cairn.size"

struct cairn_stream {
	cairn_ioctx_t *io;
	char *name;
	struct cairn_layout l;
	atomic_int refs; /* the caller's, and one per job in flight */
};

enum job_kind { JOB_WRITE, JOB_READ, JOB_APPEND, JOB_TRUNCATE, JOB_STAT };

enum job_phase {
	PH_SIZE_READ, /* read the size counter (reads, truncates, stats) */
	PH_RESERVE,   /* appends: add their length to the size counter */
	PH_DATA,      /* the objects' data */
	PH_SIZE_SET,  /* raise (writes) or set (truncates) the size */
	PH_DONE,
};

struct sjob {
	cairn_stream_t *s;
	cairn_completion_t *user;
	pthread_mutex_t mu;
	enum job_kind kind;
	enum job_phase phase;
	size_t pending;
	int rc;
	uint64_t off, len;
	uint64_t size;   /* the size counter, once read (appends: after the reserve) */
	uint64_t target; /* truncates: the new size */
	const uint8_t *wbuf;
	uint8_t *rbuf;
	size_t *got;
	uint64_t *size_out, *at_out;
};

struct schild {
	struct sjob *j;
	cairn_op_t *op;
	cairn_completion_t *c;
	struct smap_ext *ext; /* reads: its pieces, to zero what the object lacks */
	size_t n;
	size_t *got;
	int *rval;
	uint8_t xbuf[16];
	size_t xlen;
	int64_t num;
	bool size_child; /* reads the size counter into the job */
	bool reserve;    /* appends: the counter's new value into the job */
};

static void stream_put(cairn_stream_t *s);
static void job_next(struct sjob *j);

/* Object objno of stream name. */
static void
obj_name(const char *name, uint64_t objno, char *out, size_t len)
{
	snprintf(out, len, "%s.%016llx", name, (unsigned long long)objno);
}

/* ---------- jobs ---------- */

static void
job_fail(struct sjob *j, int rc)
{
	pthread_mutex_lock(&j->mu);
	if (!j->rc)
		j->rc = rc;
	pthread_mutex_unlock(&j->mu);
}

static int
job_rc(struct sjob *j)
{
	int rc;

	pthread_mutex_lock(&j->mu);
	rc = j->rc;
	pthread_mutex_unlock(&j->mu);
	return rc;
}

static void
job_end(struct sjob *j)
{
	cairn_completion_t *c = j->user;
	int rc = j->rc;

	if (!rc && j->kind == JOB_READ && j->got)
		*j->got = j->off >= j->size ? 0 : (size_t)CM_MIN(j->len, j->size - j->off);
	if (!rc && j->kind == JOB_STAT && j->size_out)
		*j->size_out = j->size;
	stream_put(j->s);
	pthread_mutex_destroy(&j->mu);
	free(j);
	cairn__complete(c, rc);
}

static void
child_free(struct schild *ch)
{
	cairn_op_release(ch->op);
	free(ch->ext);
	free(ch->got);
	free(ch->rval);
	free(ch);
}

/* A child's op completed (client thread). */
static void
child_done(cairn_completion_t *c, void *arg)
{
	struct schild *ch = arg;
	struct sjob *j = ch->j;
	int rc = cairn_completion_rc(c);
	bool last;

	if (j->kind == JOB_READ && !ch->size_child) {
		/* What the object lacks reads as zeros (never written, or cut). */
		for (size_t e = 0; (!rc || rc == -ENOENT) && e < ch->n; e++) {
			size_t have = rc ? 0 : ch->got[e];

			if (have < ch->ext[e].len)
				memset(j->rbuf + ch->ext[e].buf_off + have, 0,
				       (size_t)ch->ext[e].len - have);
		}
		if (rc == -ENOENT)
			rc = 0;
	} else if (j->kind == JOB_TRUNCATE && j->phase == PH_DATA && rc == -ENOENT) {
		rc = 0; /* (nothing to cut there) */
	}
	pthread_mutex_lock(&j->mu);
	if (!rc && ch->size_child) {
		if (ch->xlen != 8)
			rc = -EINVAL; /* not a stream's object 0 */
		else
			j->size = cm_get_le64(ch->xbuf);
	}
	if (!rc && ch->reserve)
		j->size = (uint64_t)ch->num;
	if (rc && !j->rc)
		j->rc = rc;
	last = --j->pending == 0;
	pthread_mutex_unlock(&j->mu);
	cairn_completion_release(c);
	child_free(ch);
	if (last)
		job_next(j);
}

static struct schild *
child_new(struct sjob *j)
{
	struct schild *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->j = j;
	if (!(ch->op = cairn_op_create())) {
		free(ch);
		return NULL;
	}
	return ch;
}

/* Send ch's op to object objno (counted in the job's pending). */
static void
child_send(struct sjob *j, struct schild *ch, uint64_t objno)
{
	char name[CAIRN_NAME_MAX + 1];
	int rc;

	obj_name(j->s->name, objno, name, sizeof(name));
	ch->c = cairn_completion_create(child_done, ch);
	pthread_mutex_lock(&j->mu);
	j->pending++;
	pthread_mutex_unlock(&j->mu);
	rc = ch->c ? cairn_aio_operate(j->s->io, name, ch->op, ch->c) : -ENOMEM;
	if (rc) {
		pthread_mutex_lock(&j->mu);
		j->pending--;
		if (!j->rc)
			j->rc = rc;
		pthread_mutex_unlock(&j->mu);
		cairn_completion_release(ch->c);
		child_free(ch);
	}
}

/* The job's pieces grouped by object, in object order. */
static int
ext_cmp(const void *a, const void *b)
{
	const struct smap_ext *x = a, *y = b;

	if (x->objno != y->objno)
		return x->objno < y->objno ? -1 : 1;
	return x->obj_off < y->obj_off ? -1 : x->obj_off > y->obj_off;
}

/* One child per object the job's extent touches. */
static void
send_data(struct sjob *j)
{
	const struct cairn_layout *l = &j->s->l;
	size_t n = cairn__smap_extents(l, j->off, j->len, NULL, 0), i = 0;
	struct smap_ext *ext = calloc(n + 1, sizeof(*ext));

	if (!ext) {
		job_fail(j, -ENOMEM);
		return;
	}
	cairn__smap_extents(l, j->off, j->len, ext, n);
	qsort(ext, n, sizeof(*ext), ext_cmp);
	while (i < n && !job_rc(j)) {
		size_t k = i;
		struct schild *ch;

		while (k < n && ext[k].objno == ext[i].objno)
			k++;
		if (!(ch = child_new(j))) {
			job_fail(j, -ENOMEM);
			break;
		}
		if (j->kind == JOB_READ) {
			ch->n = k - i;
			ch->ext = malloc(ch->n * sizeof(*ch->ext));
			ch->got = calloc(ch->n, sizeof(*ch->got));
			ch->rval = calloc(ch->n, sizeof(*ch->rval));
			if (!ch->ext || !ch->got || !ch->rval) {
				child_free(ch);
				job_fail(j, -ENOMEM);
				break;
			}
			memcpy(ch->ext, ext + i, ch->n * sizeof(*ch->ext));
			for (size_t e = 0; e < ch->n; e++)
				cairn_op_read(ch->op, ch->ext[e].obj_off, (size_t)ch->ext[e].len,
					      j->rbuf + ch->ext[e].buf_off, &ch->got[e],
					      &ch->rval[e]);
		} else {
			for (size_t e = i; e < k; e++)
				cairn_op_write(ch->op, ext[e].obj_off, j->wbuf + ext[e].buf_off,
					       (size_t)ext[e].len);
		}
		child_send(j, ch, ext[i].objno);
		i = k;
	}
	free(ext);
}

/* Truncate down: cut every object that holds bytes at or past the new size. */
static void
send_cuts(struct sjob *j)
{
	const struct cairn_layout *l = &j->s->l;
	uint64_t had = cairn__smap_nobjects(l, j->size);
	/* (and a stripe set more: what a failed write may have left past the size) */
	uint64_t nobj = had + l->stripe_count;

	for (uint64_t o = 0; o < nobj && !job_rc(j); o++) {
		uint64_t keep = cairn__smap_obj_len(l, o, j->target);
		struct schild *ch;

		if (o < had && cairn__smap_obj_len(l, o, j->size) <= keep)
			continue; /* nothing of it goes */
		if (!(ch = child_new(j))) {
			job_fail(j, -ENOMEM);
			break;
		}
		if (keep || o == 0) {
			cairn_op_assert_exists(ch->op); /* (never make one to cut it) */
			cairn_op_truncate(ch->op, keep);
		} else {
			cairn_op_remove(ch->op);
		}
		child_send(j, ch, o);
	}
}

/* One op on object 0 about the size counter (read: as the phase were PH_SIZE_READ). */
static void
send_size(struct sjob *j, bool read)
{
	struct schild *ch = child_new(j);

	if (!ch) {
		job_fail(j, -ENOMEM);
		return;
	}
	switch (read ? PH_SIZE_READ : j->phase) {
	case PH_SIZE_READ:
		ch->size_child = true;
		cairn_op_getxattr(ch->op, XATTR_SIZE, ch->xbuf, sizeof(ch->xbuf), &ch->xlen, NULL);
		break;
	case PH_RESERVE:
		ch->reserve = true;
		cairn_op_xattr_num(ch->op, XATTR_SIZE, CAIRN_NUM_ADD, (int64_t)j->len, &ch->num,
				   NULL);
		break;
	default: /* PH_SIZE_SET */
		if (j->kind == JOB_TRUNCATE)
			cairn_op_xattr_num(ch->op, XATTR_SIZE, CAIRN_NUM_SET, (int64_t)j->target,
					   NULL, NULL);
		else
			cairn_op_xattr_num(ch->op, XATTR_SIZE, CAIRN_NUM_MAX,
					   (int64_t)(j->off + j->len), NULL, NULL);
		break;
	}
	child_send(j, ch, 0);
}

/* The phase after ph (PH_DONE: the first). */
static enum job_phase
phase_after(const struct sjob *j, enum job_phase ph)
{
	switch (j->kind) {
	case JOB_WRITE: /* the data, then the size */
		return ph == PH_DONE ? PH_DATA : ph == PH_DATA ? PH_SIZE_SET : PH_DONE;
	case JOB_APPEND: /* reserve, then the data */
		return ph == PH_DONE ? PH_RESERVE : ph == PH_RESERVE ? PH_DATA : PH_DONE;
	case JOB_READ: /* the data and the size at once */
		return ph == PH_DONE ? PH_DATA : PH_DONE;
	case JOB_STAT:
		return ph == PH_DONE ? PH_SIZE_READ : PH_DONE;
	case JOB_TRUNCATE: /* the size, the cuts (when smaller), then the new size */
		if (ph == PH_DONE)
			return PH_SIZE_READ;
		if (ph == PH_SIZE_READ)
			return j->target < j->size ? PH_DATA : PH_SIZE_SET;
		return ph == PH_DATA ? PH_SIZE_SET : PH_DONE;
	}
	return PH_DONE;
}

/*
 * Run the job's next phase, or end it. Called when the last child of a
 * phase completed (or to start); a phase whose children all completed
 * while it was still sending them goes on here.
 */
static void
job_next(struct sjob *j)
{
	for (;;) {
		bool more;

		if (job_rc(j)) {
			job_end(j);
			return;
		}
		if (j->phase == PH_RESERVE) { /* the bytes go where the counter was */
			j->off = j->size - j->len;
			if (j->at_out)
				*j->at_out = j->off;
		}
		j->phase = phase_after(j, j->phase);
		if (j->phase == PH_DONE) {
			job_end(j);
			return;
		}
		pthread_mutex_lock(&j->mu);
		j->pending++; /* held while the phase's children go out */
		pthread_mutex_unlock(&j->mu);
		if (j->phase != PH_DATA) {
			send_size(j, false);
		} else if (j->kind == JOB_TRUNCATE) {
			send_cuts(j);
		} else {
			if (j->kind == JOB_READ) /* (the reply is clipped to it at the end) */
				send_size(j, true);
			send_data(j);
		}
		pthread_mutex_lock(&j->mu);
		more = --j->pending > 0;
		pthread_mutex_unlock(&j->mu);
		if (more)
			return; /* the last child goes on */
	}
}

static int
job_start(cairn_stream_t *s, enum job_kind kind, cairn_completion_t *c, struct sjob **jp)
{
	struct sjob *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->mu, NULL);
	j->s = s;
	j->user = c;
	cairn__comp_attach(c);
	j->kind = kind;
	j->phase = PH_DONE;
	atomic_fetch_add(&s->refs, 1);
	*jp = j;
	return 0;
}

/* ---------- the calls ---------- */

int
cairn_stream_aio_write(cairn_stream_t *s, uint64_t off, const void *buf, size_t len,
		       cairn_completion_t *c)
{
	struct sjob *j;
	int rc;

	if (off > INT64_MAX - len)
		return -EFBIG;
	if (!len) {
		cairn__complete(c, 0);
		return 0;
	}
	if ((rc = job_start(s, JOB_WRITE, c, &j)))
		return rc;
	j->off = off;
	j->len = len;
	j->wbuf = buf;
	job_next(j);
	return 0;
}

int
cairn_stream_aio_read(cairn_stream_t *s, uint64_t off, void *buf, size_t len, size_t *got,
		      cairn_completion_t *c)
{
	struct sjob *j;
	int rc;

	if (off > INT64_MAX - len)
		return -EFBIG;
	if ((rc = job_start(s, JOB_READ, c, &j)))
		return rc;
	j->off = off;
	j->len = len;
	j->rbuf = buf;
	j->got = got;
	job_next(j);
	return 0;
}

int
cairn_stream_aio_append(cairn_stream_t *s, const void *buf, size_t len, uint64_t *at,
			cairn_completion_t *c)
{
	struct sjob *j;
	int rc;

	if (len > INT64_MAX)
		return -EFBIG;
	if ((rc = job_start(s, JOB_APPEND, c, &j)))
		return rc;
	j->len = len;
	j->wbuf = buf;
	j->at_out = at;
	job_next(j);
	return 0;
}

int
cairn_stream_aio_truncate(cairn_stream_t *s, uint64_t size, cairn_completion_t *c)
{
	struct sjob *j;
	int rc;

	if (size > INT64_MAX)
		return -EFBIG;
	if ((rc = job_start(s, JOB_TRUNCATE, c, &j)))
		return rc;
	j->target = size;
	job_next(j);
	return 0;
}

int
cairn_stream_aio_stat(cairn_stream_t *s, uint64_t *size, cairn_completion_t *c)
{
	struct sjob *j;
	int rc;

	if ((rc = job_start(s, JOB_STAT, c, &j)))
		return rc;
	j->size_out = size;
	job_next(j);
	return 0;
}

/* Run an aio call and wait for it. */
#define SYNC_CALL(call)                                                       \
	do {                                                                  \
		cairn_completion_t *c_ = cairn_completion_create(NULL, NULL); \
		int rc_;                                                      \
		if (!c_)                                                      \
			return -ENOMEM;                                       \
		rc_ = (call);                                                 \
		if (!rc_)                                                     \
			rc_ = cairn_completion_wait(c_);                      \
		cairn_completion_release(c_);                                 \
		return rc_;                                                   \
	} while (0)

int
cairn_stream_write(cairn_stream_t *s, uint64_t off, const void *buf, size_t len)
{
	SYNC_CALL(cairn_stream_aio_write(s, off, buf, len, c_));
}

int64_t
cairn_stream_read(cairn_stream_t *s, uint64_t off, void *buf, size_t len)
{
	cairn_completion_t *c = cairn_completion_create(NULL, NULL);
	size_t got = 0;
	int rc;

	if (!c)
		return -ENOMEM;
	rc = cairn_stream_aio_read(s, off, buf, len, &got, c);
	if (!rc)
		rc = cairn_completion_wait(c);
	cairn_completion_release(c);
	return rc ? rc : (int64_t)got;
}

int
cairn_stream_append(cairn_stream_t *s, const void *buf, size_t len, uint64_t *at)
{
	SYNC_CALL(cairn_stream_aio_append(s, buf, len, at, c_));
}

int
cairn_stream_truncate(cairn_stream_t *s, uint64_t size)
{
	SYNC_CALL(cairn_stream_aio_truncate(s, size, c_));
}

int
cairn_stream_stat(cairn_stream_t *s, uint64_t *size)
{
	SYNC_CALL(cairn_stream_aio_stat(s, size, c_));
}

/* ---------- open, close, remove ---------- */

static void
stream_put(cairn_stream_t *s)
{
	if (atomic_fetch_sub(&s->refs, 1) == 1) {
		free(s->name);
		free(s);
	}
}

void
cairn_stream_close(cairn_stream_t *s)
{
	if (s)
		stream_put(s);
}

void
cairn_stream_layout(const cairn_stream_t *s, struct cairn_layout *l)
{
	*l = s->l;
}

static int
check_name(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (!n || (uint8_t)name[0] == 1)
		return -EINVAL;
	return n > CAIRN_NAME_MAX - 17 ? -ENAMETOOLONG : 0;
}

/* Stream name's layout and size, from its object 0.
 * \return 0, -ENOENT, -ENODATA (no layout), -EINVAL (a bad one), or an error. */
static int
read_layout(cairn_ioctx_t *io, const char *name, struct cairn_layout *l, uint64_t *size)
{
	cairn_op_t *op = cairn_op_create();
	char obj0[CAIRN_NAME_MAX + 1];
	uint8_t b[32], sb[16];
	size_t len = 0, slen = 0;
	int rc;

	if (!op)
		return -ENOMEM;
	obj_name(name, 0, obj0, sizeof(obj0));
	cairn_op_getxattr(op, XATTR_LAYOUT, b, sizeof(b), &len, NULL);
	cairn_op_getxattr(op, XATTR_SIZE, sb, sizeof(sb), &slen, NULL);
	rc = cairn_operate(io, obj0, op, NULL);
	cairn_op_release(op);
	if (rc)
		return rc;
	if (len != 16 || slen != 8)
		return -EINVAL;
	l->stripe_unit = cm_get_le32(b);
	l->stripe_count = cm_get_le32(b + 4);
	l->object_size = cm_get_le64(b + 8);
	*size = cm_get_le64(sb);
	return cairn__smap_check(l);
}

int
cairn_stream_open(cairn_ioctx_t *io, const char *name, int flags, const struct cairn_layout *layout,
		  cairn_stream_t **sp)
{
	static const struct cairn_layout def = CAIRN_LAYOUT_DEFAULT;
	char obj0[CAIRN_NAME_MAX + 1];
	struct cairn_layout l;
	cairn_stream_t *s;
	uint64_t size;
	int rc = check_name(name);

	*sp = NULL;
	if (rc)
		return rc;
	if ((flags & CAIRN_STREAM_CREATE) && layout && cairn__smap_check(layout))
		return -EINVAL;
	obj_name(name, 0, obj0, sizeof(obj0));
	for (int tries = 0;; tries++) {
		rc = read_layout(io, name, &l, &size);
		if (!rc && (flags & CAIRN_STREAM_CREATE) && (flags & CAIRN_STREAM_EXCL))
			return -EEXIST;
		if (rc != -ENOENT && rc != -ENODATA)
			break;
		if (!(flags & CAIRN_STREAM_CREATE))
			return rc == -ENODATA ? -EINVAL : -ENOENT;
		{
			/* Made once: the layout only where there is none, the size 0. */
			cairn_op_t *op = cairn_op_create();
			uint8_t b[16];

			if (!op)
				return -ENOMEM;
			l = layout ? *layout : def;
			cm_put_le32(b, l.stripe_unit);
			cm_put_le32(b + 4, l.stripe_count);
			cm_put_le64(b + 8, l.object_size);
			cairn_op_cmpxattr(op, XATTR_LAYOUT, CAIRN_CMP_ABSENT, NULL, 0);
			cairn_op_setxattr(op, XATTR_LAYOUT, b, sizeof(b));
			cairn_op_xattr_num(op, XATTR_SIZE, CAIRN_NUM_MAX, 0, NULL, NULL);
			rc = cairn_operate(io, obj0, op, NULL);
			cairn_op_release(op);
		}
		if (!rc)
			break; /* ours */
		if (rc != -ECANCELED || tries > 3)
			return rc;
		if (flags & CAIRN_STREAM_EXCL)
			return -EEXIST; /* another made it first */
	}
	if (rc)
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(name))) {
		free(s);
		return -ENOMEM;
	}
	s->io = io;
	s->l = l;
	atomic_init(&s->refs, 1);
	*sp = s;
	return 0;
}

int
cairn_stream_remove(cairn_ioctx_t *io, const char *name)
{
	struct cairn_layout l;
	uint64_t size = 0, nobj;
	cairn_completion_t **c;
	cairn_op_t **ops;
	char obj[CAIRN_NAME_MAX + 1];
	int rc = check_name(name);

	if (!rc)
		rc = read_layout(io, name, &l, &size);
	if (rc)
		return rc == -ENODATA ? -EINVAL : rc;
	/* (a stripe set more than the size spans: a failed write's leftovers) */
	nobj = cairn__smap_nobjects(&l, size) + l.stripe_count;
	c = calloc(nobj, sizeof(*c));
	ops = calloc(nobj, sizeof(*ops));
	if (!c || !ops)
		rc = -ENOMEM;
	/* Every object but 0 at once, then 0 (which says it is a stream). */
	for (uint64_t o = 1; !rc && o < nobj; o++) {
		obj_name(name, o, obj, sizeof(obj));
		if (!(ops[o] = cairn_op_create()) ||
		    !(c[o] = cairn_completion_create(NULL, NULL))) {
			rc = -ENOMEM;
			break;
		}
		cairn_op_remove(ops[o]);
		if ((rc = cairn_aio_operate(io, obj, ops[o], c[o]))) {
			cairn_completion_release(c[o]);
			c[o] = NULL; /* (not sent: nothing to wait for) */
		}
	}
	for (uint64_t o = 1; c && ops && o < nobj; o++) {
		if (c[o]) {
			int r = cairn_completion_wait(c[o]);

			if (r && r != -ENOENT && !rc)
				rc = r;
			cairn_completion_release(c[o]);
		}
		cairn_op_release(ops[o]);
	}
	free(c);
	free(ops);
	if (!rc) {
		obj_name(name, 0, obj, sizeof(obj));
		rc = cairn_remove(io, obj);
	}
	return rc;
}
