/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Object versions in the bucket index (docs/design/rgw.md §3.3): what one
 * op reads of a key's versions (s3_vread), and what a write or a delete
 * changes (s3_vplan), as compares and writes of one compound op on the
 * key's shard.
 *
 *   "<key>\0"            the latest version (an object or a delete marker)
 *   "<key>\0\1<sort key>" each older version, newest first
 *   "\xffn<key>"          the null version, when it is an older one: its
 *                         sort key, flags, instance and size
 */
#include "rgw_int.h"
#include "cm/err.h"

enum s3_vmode
s3_vmode(const struct rgw_bucket *b)
{
	if (!strcmp(b->versioning, "Enabled"))
		return S3_V_ENABLED;
	if (!strcmp(b->versioning, "Suspended"))
		return S3_V_SUSPENDED;
	return S3_V_NEVER;
}

void
s3_version_key(const char *key, size_t klen, const char *sk, struct rgw_str *out)
{
	rgw_str_add(out, key, klen);
	rgw_str_add(out, "\0\1", 2);
	rgw_str_adds(out, sk);
}

void
s3_null_ptr_key(const char *key, size_t klen, struct rgw_str *out)
{
	rgw_str_adds(out, RGW_SYS_NULL);
	rgw_str_add(out, key, klen);
}

/* ---- the null pointer's value: sort key, flags, instance, size ---- */

static void
nptr_encode(const struct rgw_entry *e, uint8_t v[RGW_NPTR_VLEN])
{
	char sk[RGW_VID_LEN + 1] = { 0 }; /* (a null version's is shorter: NUL-padded) */

	rgw_version_sk(e, sk);
	memcpy(v, sk, RGW_VID_LEN);
	v[RGW_VID_LEN] = e->flags;
	memcpy(v + RGW_VID_LEN + 1, e->inst, 16);
	for (int i = 0; i < 8; i++)
		v[RGW_VID_LEN + 17 + i] = (uint8_t)(e->size >> (8 * i));
}

struct nptr {
	char sk[RGW_VID_LEN + 1];
	uint8_t flags;
	uint8_t inst[16];
	uint64_t size;
};

static int
nptr_decode(const struct cairn_kv *kv, struct nptr *p)
{
	const uint8_t *v = kv->val;

	if (kv->vlen != RGW_NPTR_VLEN)
		return -EBADMSG;
	memcpy(p->sk, v, RGW_VID_LEN);
	p->sk[RGW_VID_LEN] = '\0';
	p->flags = v[RGW_VID_LEN];
	memcpy(p->inst, v + RGW_VID_LEN + 1, 16);
	p->size = 0;
	for (int i = 7; i >= 0; i--)
		p->size = p->size << 8 | v[RGW_VID_LEN + 17 + i];
	return 0;
}

/* ---- reads ---- */

static int
dupkey(struct cairn_kv *w, const struct rgw_str *k)
{
	if (k->oom || !(w->key = malloc(k->len ? k->len : 1)))
		return -ENOMEM;
	memcpy(w->key, k->p, k->len);
	w->klen = k->len;
	return 0;
}

int
s3_vread_init(struct s3_vread *r, const char *key, size_t klen, bool nptr, const char *sk,
	      bool first)
{
	struct rgw_str k;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	rgw_str_init(&k);
	s3_entry_key(key, klen, &k);
	rc = dupkey(&r->want[r->nwant++], &k);
	if (!rc && nptr) {
		rgw_str_reset(&k);
		s3_null_ptr_key(key, klen, &k);
		r->inptr = (int)r->nwant;
		rc = dupkey(&r->want[r->nwant++], &k);
	}
	if (!rc && sk) {
		rgw_str_reset(&k);
		s3_version_key(key, klen, sk, &k);
		r->irec = (int)r->nwant;
		rc = dupkey(&r->want[r->nwant++], &k);
	}
	if (!rc && first) {
		rgw_str_reset(&k);
		rgw_str_add(&k, key, klen);
		rgw_str_add(&k, "\0\1", 2);
		r->list = true;
		rc = dupkey(&r->prefix, &k);
	}
	rgw_str_fini(&k);
	return rc;
}

void
s3_vread_reset(struct s3_vread *r)
{
	cairn_kvs_free(r->kvs, r->n);
	cairn_kvs_free(r->first, r->nfirst);
	r->kvs = r->first = NULL;
	r->n = r->nfirst = 0;
	r->rval = r->frval = 0;
	r->more = false;
}

void
s3_vread_op(struct s3_vread *r, cairn_op_t *op)
{
	s3_vread_reset(r);
	cairn_op_omap_get(op, r->want, r->nwant, &r->kvs, &r->n, &r->rval);
	if (r->list)
		cairn_op_omap_list(op, r->want[0].key, r->want[0].klen, r->prefix.key,
				   r->prefix.klen, 1, &r->first, &r->nfirst, &r->more, &r->frval);
}

int
s3_vread_rc(const struct s3_vread *r)
{
	return r->rval ? r->rval : r->frval;
}

static const struct cairn_kv *
find(const struct s3_vread *r, int i)
{
	if (i < 0 || (size_t)i >= r->nwant || r->rval)
		return NULL;
	for (size_t j = 0; j < r->n; j++)
		if (r->kvs[j].klen == r->want[i].klen &&
		    !memcmp(r->kvs[j].key, r->want[i].key, r->want[i].klen))
			return &r->kvs[j];
	return NULL;
}

const struct cairn_kv *
s3_vread_cur(const struct s3_vread *r)
{
	return find(r, 0);
}

int64_t
s3_version_time(const struct s3_vread *r, int64_t now)
{
	const struct cairn_kv *cur = s3_vread_cur(r);
	struct rgw_entry e;
	char sk[RGW_VID_LEN + 1], h[17];
	int64_t t;

	if (!cur || rgw_entry_decode(cur->val, cur->vlen, &e))
		return now;
	rgw_version_sk(&e, sk);
	rgw_entry_fini(&e);
	memcpy(h, sk, 16);
	h[16] = '\0';
	t = (int64_t) ~(uint64_t)strtoull(h, NULL, 16);
	return now > t ? now : t + 1;
}

const struct cairn_kv *
s3_vread_nptr(const struct s3_vread *r)
{
	return r->inptr ? find(r, r->inptr) : NULL;
}

const struct cairn_kv *
s3_vread_rec(const struct s3_vread *r)
{
	return r->irec ? find(r, r->irec) : NULL;
}

const struct cairn_kv *
s3_vread_first(const struct s3_vread *r)
{
	return r->list && !r->frval && r->nfirst == 1 ? &r->first[0] : NULL;
}

void
s3_vread_fini(struct s3_vread *r)
{
	s3_vread_reset(r);
	for (size_t i = 0; i < r->nwant; i++)
		free(r->want[i].key);
	free(r->prefix.key);
	memset(r, 0, sizeof(*r));
}

/* ---- plans ---- */

static void
vp_add(struct s3_vplan *v, int kind, void *key, size_t klen, const void *val, size_t vlen)
{
	if (v->n == S3_VPLAN_OPS) {
		free(key);
		v->oom = true;
		return;
	}
	v->o[v->n++] = (struct s3_vplan_op){
		.kind = kind, .key = key, .klen = klen, .val = val, .vlen = vlen
	};
}

/* A copy of k (the plan frees it), or NULL with v->oom set. */
static void *
vp_key(struct s3_vplan *v, const void *k, size_t kl)
{
	void *c = malloc(kl ? kl : 1);

	if (!c) {
		v->oom = true;
		return NULL;
	}
	memcpy(c, k, kl);
	return c;
}

static void
vp_cmp(struct s3_vplan *v, const struct rgw_str *k, const struct cairn_kv *was)
{
	void *kc = vp_key(v, k->p, k->len);

	if (kc)
		vp_add(v, was ? S3_VP_CMP : S3_VP_ABSENT, kc, k->len, was ? was->val : NULL,
		       was ? was->vlen : 0);
}

static void
vp_set(struct s3_vplan *v, const void *k, size_t kl, const void *val, size_t vlen)
{
	void *kc = vp_key(v, k, kl);

	if (kc)
		vp_add(v, S3_VP_SET, kc, kl, val, vlen);
}

static void
vp_rm(struct s3_vplan *v, const void *k, size_t kl)
{
	void *kc = vp_key(v, k, kl);

	if (kc)
		vp_add(v, S3_VP_RM, kc, kl, NULL, 0);
}

/* A version that goes away: its data to collect (none for a delete marker), the counters. */
static void
vp_gone(struct s3_vplan *v, uint8_t flags, const uint8_t inst[16], uint64_t size)
{
	if (flags & RGW_ENTRY_DELETE_MARKER)
		return;
	v->dbytes -= (int64_t)size;
	v->dobjs--;
	if (v->ndead < 2) {
		struct s3_vdead *d = &v->dead[v->ndead++];

		memcpy(d->inst, inst, 16);
		d->size = size;
		d->mp = flags & RGW_ENTRY_MULTIPART;
		s3_dead_marker(inst, size, d->mp, d->dkey, d->dval);
		vp_set(v, d->dkey, strlen(d->dkey), d->dval, sizeof(d->dval));
	}
}

static void
vp_init(struct s3_vplan *v)
{
	memset(v, 0, sizeof(*v));
}

int
s3_vplan_put(struct s3_vplan *v, const struct rgw_bucket *b, const char *key, size_t klen,
	     const struct s3_vread *r, const void *neu, size_t nlen, const struct rgw_entry *ne)
{
	enum s3_vmode mode = s3_vmode(b);
	const struct cairn_kv *cur = s3_vread_cur(r), *np = s3_vread_nptr(r);
	struct rgw_entry old;
	struct rgw_str ek, k;
	bool have_old = false;
	int rc = 0;

	s3_vplan_fini(v);
	vp_init(v);
	rgw_str_init(&ek);
	rgw_str_init(&k);
	s3_entry_key(key, klen, &ek);
	if (cur) {
		if ((rc = rgw_entry_decode(cur->val, cur->vlen, &old)))
			goto out;
		have_old = true;
		v->have_old = true;
		v->old_size = old.size;
		v->old_dm = old.flags & RGW_ENTRY_DELETE_MARKER;
	}
	vp_cmp(v, &ek, cur);
	if (neu)
		vp_set(v, ek.p, ek.len, neu, nlen);
	else
		vp_rm(v, ek.p, ek.len);
	if (ne && !(ne->flags & RGW_ENTRY_DELETE_MARKER)) {
		v->dbytes += (int64_t)ne->size;
		v->dobjs++;
	}
	if (mode == S3_V_SUSPENDED) {
		/* The null version this write replaces, if it is an older one. */
		s3_null_ptr_key(key, klen, &k);
		vp_cmp(v, &k, np);
		if (np) {
			struct nptr p;
			char sk[RGW_VID_LEN + 1];

			if ((rc = nptr_decode(np, &p)))
				goto out;
			memcpy(sk, p.sk, sizeof(sk));
			vp_rm(v, k.p, k.len);
			rgw_str_reset(&k);
			s3_version_key(key, klen, sk, &k);
			vp_rm(v, k.p, k.len);
			vp_gone(v, p.flags, p.inst, p.size);
		}
	}
	if (have_old) {
		if (mode == S3_V_NEVER || (mode == S3_V_SUSPENDED && !old.vid[0])) {
			vp_gone(v, old.flags, old.inst, old.size); /* (replaced) */
		} else {
			/* The latest becomes an older version (the same bytes, under its sort key).
			 */
			char sk[RGW_VID_LEN + 1];

			rgw_version_sk(&old, sk);
			rgw_str_reset(&k);
			s3_version_key(key, klen, sk, &k);
			vp_set(v, k.p, k.len, cur->val, cur->vlen);
			if (!old.vid[0]) {
				rgw_str_reset(&k);
				s3_null_ptr_key(key, klen, &k);
				nptr_encode(&old, v->nptr_val);
				vp_set(v, k.p, k.len, v->nptr_val, sizeof(v->nptr_val));
			}
		}
	}
	if (ek.oom || k.oom)
		v->oom = true;
out:
	if (have_old)
		rgw_entry_fini(&old);
	rgw_str_fini(&ek);
	rgw_str_fini(&k);
	if (!rc && v->oom)
		rc = -ENOMEM;
	return rc;
}

int
s3_vplan_delete(struct s3_vplan *v, const char *key, size_t klen, const struct s3_vread *r,
		const char *vid)
{
	const struct cairn_kv *cur = s3_vread_cur(r), *np = s3_vread_nptr(r);
	const struct cairn_kv *rec = s3_vread_rec(r), *first = s3_vread_first(r);
	bool null = !strcmp(vid, "null");
	struct rgw_entry e;
	struct rgw_str ek, k;
	int rc = 0;

	s3_vplan_fini(v);
	vp_init(v);
	rgw_str_init(&ek);
	rgw_str_init(&k);
	s3_entry_key(key, klen, &ek);
	if (cur) {
		if ((rc = rgw_entry_decode(cur->val, cur->vlen, &e)))
			goto out;
		if (null ? !e.vid[0] : !strcmp(e.vid, vid)) {
			/* The latest: removed; the newest older version (if any) takes its place.
			 */
			v->found = true;
			v->old_dm = e.flags & RGW_ENTRY_DELETE_MARKER;
			vp_cmp(v, &ek, cur);
			vp_gone(v, e.flags, e.inst, e.size);
			rgw_entry_fini(&e);
			if (first) {
				struct rgw_entry fe;

				if ((rc = rgw_entry_decode(first->val, first->vlen, &fe)))
					goto out;
				vp_set(v, ek.p, ek.len, first->val, first->vlen);
				rgw_str_add(&k, first->key, first->klen);
				vp_cmp(v, &k, first);
				vp_rm(v, first->key, first->klen);
				if (!fe.vid[0]) {
					rgw_str_reset(&k);
					s3_null_ptr_key(key, klen, &k);
					vp_cmp(v, &k, np);
					vp_rm(v, k.p, k.len);
				}
				rgw_entry_fini(&fe);
			} else {
				vp_rm(v, ek.p, ek.len);
			}
			goto out;
		}
		rgw_entry_fini(&e);
	}
	if (null && np) {
		struct nptr p;

		if ((rc = nptr_decode(np, &p)))
			goto out;
		v->found = true;
		v->old_dm = p.flags & RGW_ENTRY_DELETE_MARKER;
		s3_null_ptr_key(key, klen, &k);
		vp_cmp(v, &k, np);
		vp_rm(v, k.p, k.len);
		rgw_str_reset(&k);
		s3_version_key(key, klen, p.sk, &k);
		vp_rm(v, k.p, k.len);
		vp_gone(v, p.flags, p.inst, p.size);
	} else if (!null && rec) {
		if ((rc = rgw_entry_decode(rec->val, rec->vlen, &e)))
			goto out;
		v->found = true;
		v->old_dm = e.flags & RGW_ENTRY_DELETE_MARKER;
		rgw_str_add(&k, rec->key, rec->klen);
		vp_cmp(v, &k, rec);
		vp_rm(v, rec->key, rec->klen);
		vp_gone(v, e.flags, e.inst, e.size);
		rgw_entry_fini(&e);
	}
out:
	if (ek.oom || k.oom)
		v->oom = true;
	rgw_str_fini(&ek);
	rgw_str_fini(&k);
	if (!rc && v->oom)
		rc = -ENOMEM;
	return rc;
}

void
s3_vplan_ops(const struct s3_vplan *v, cairn_op_t *op)
{
	for (int i = 0; i < v->n; i++) {
		const struct s3_vplan_op *o = &v->o[i];

		switch (o->kind) {
		case S3_VP_CMP:
			cairn_op_omap_cmp(op, o->key, o->klen, CAIRN_CMP_EQ, o->val, o->vlen);
			break;
		case S3_VP_ABSENT:
			cairn_op_omap_cmp(op, o->key, o->klen, CAIRN_CMP_ABSENT, NULL, 0);
			break;
		case S3_VP_SET:
			cairn_op_omap_set(op, o->key, o->klen, o->val, o->vlen);
			break;
		default:
			cairn_op_omap_rm(op, o->key, o->klen);
			break;
		}
	}
}

void
s3_vplan_collect(struct s3_req *q, const struct s3_vplan *v, const char *shard)
{
	for (int i = 0; i < v->ndead; i++) {
		const struct s3_vdead *d = &v->dead[i];

		rgw__gc_add(q->g, q->b.id, shard, d->dkey, strlen(d->dkey), d->inst, d->size,
			    d->mp);
	}
}

void
s3_vplan_fini(struct s3_vplan *v)
{
	for (int i = 0; i < v->n; i++)
		free(v->o[i].key);
	v->n = 0;
}

void
s3_vplan_zero(struct s3_vplan *v)
{
	vp_init(v);
}

const struct cairn_kv *
s3_vread_pick(const struct s3_vread *r, const char *vid, char next_sk[RGW_VID_LEN + 1])
{
	const struct cairn_kv *cur = s3_vread_cur(r), *np;
	bool null = vid && !strcmp(vid, "null");
	struct rgw_entry e;

	next_sk[0] = '\0';
	if (!vid)
		return cur;
	if (cur && rgw_entry_decode(cur->val, cur->vlen, &e) == 0) {
		bool match = null ? !e.vid[0] : !strcmp(e.vid, vid);

		rgw_entry_fini(&e);
		if (match)
			return cur;
	}
	if (!null)
		return s3_vread_rec(r);
	if ((np = s3_vread_nptr(r)) && np->vlen == RGW_NPTR_VLEN) {
		memcpy(next_sk, np->val, RGW_VID_LEN);
		next_sk[RGW_VID_LEN] = '\0';
	}
	return NULL;
}
