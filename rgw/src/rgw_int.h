/* SPDX-License-Identifier: Apache-2.0 */
/* cairn-rgw's internals: the gateway, its threads, a request's context. */
#ifndef RGW_INT_H
#define RGW_INT_H

#include "rgw/http.h"
#include "rgw/rgw.h"
#include "rgw/sigv4.h"
#include "rgw/str.h"
#include "rgw/uri.h"
#include "rgw/md5.h"
#include "rgw/meta.h"
#include "rgw/shardmap.h"

#include <openssl/evp.h>
#include <pthread.h>

#define RGW_CHUNK        (4u << 20) /* data object size (the striper's default layout) */
#define RGW_PUT_INFLIGHT 4          /* data objects of one PUT in flight */
#define RGW_GET_AHEAD    4          /* data objects of one GET read ahead (16 MiB of buffers) */
#define RGW_BUF_POOL     16         /* RGW_CHUNK buffers each thread keeps for reuse */
#define RGW_KEY_MAX      1024
#define RGW_META_MAX     2048 /* user metadata, in all */
#define RGW_XML_MAX      (1u << 20)
#define RGW_MAX_PUT      (5ull << 30) /* one PUT (S3's limit) */

/* Keys of an index shard's system region (after every UTF-8 key). */
#define RGW_SYS_PENDING \
	"\xff"          \
	"p" /* + instance hex: a PUT in progress */
#define RGW_SYS_DEAD \
	"\xff"       \
	"d" /* + 16 hex ns + instance hex: data to collect */
#define RGW_SYS_UPLOAD \
	"\xff"         \
	"u"              /* + key + "\0" + upload id: a multipart upload in progress */
#define RGW_DEAD_VLEN 25 /* a dead marker's value: instance, size, flags */
#define RGW_DEAD_MP   1  /* flags: the instance is a manifest (its parts go with it) */

#define RGW_PART_MIN   (5ull << 20) /* every part but the last */
#define RGW_PARTS_MAX  10000
#define RGW_UPLOAD_LEN 32 /* an upload id: 16 hex of its start (ns), 16 random */

struct rgw_cache_ent;
struct shardq;
struct rgw_split_note;

/*
 * An index op that may share one compound op with others on the same
 * shard (batch.c, docs/design/rgw.md §3.2). build adds the item's sub-ops
 * (alone: also the shard guard and its counters; else the batch adds the
 * guard once, with guard, and the counters summed); done gets the op's
 * result (alone, if its batch failed). Items with the same key never
 * share an op (guards see the object as it was before the op).
 */
struct rgw_batch_item {
	cairn_ioctx_t *io;
	const char *oid;
	const void *
		range; /* the shard's range mark it was planned with (batched only with its like) */
	size_t rlen;
	const void *key; /* the entry key it touches */
	size_t klen;
	void (*build)(void *arg, cairn_op_t *op, bool alone);
	void (*guard)(void *arg, cairn_op_t *op);
	void (*done)(void *arg, int rc);
	void *arg;
	bool usage; /* the shard's counters move by dbytes, dobjs (bounded by the quotas) */
	int64_t dbytes, dobjs, quota_bytes, quota_objects;
	struct rgw_batch_item *next;
};

#define RGW_BATCH_MAX 8 /* items in one op (xattr counters: at most 16 per op) */

struct rgw {
	cairn_cluster_t *cl;
	struct rgw_conf conf;
	char meta_pool[64], data_pool[64], dns_name[256], region[64], name[80];
	cairn_ioctx_t *meta;
	struct rgw_http_server *http;
	pthread_mutex_t mu; /* the caches, the log */
	struct rgw_cache_ent *keys, *buckets;
	cairn_watch_t *watch; /* on RGW_NOTIFY_OID: the others' changes */
	bool watch_ok;        /* (g->mu) it holds: entries may be cached */
	uint64_t cache_gen;   /* (g->mu) moved by every drop: see cache_put */
	FILE *alog;
	bool registered;
	/* the collector of dead instances */
	pthread_t gc_tid;
	bool gc_started, gc_stop;
	cairn_completion_t *gc_cur; /* (gc_mu) the collector's op in flight */
	pthread_cond_t gc_cv;
	pthread_mutex_t gc_mu;
	struct rgw_gc_item *gc_head, *gc_tail;
	size_t gc_len;
	struct rgw_split_note *split_notes; /* (gc_mu) shards to look at for a split */
	char split_cookie[20];              /* this gateway's hold of a shard's split lock */
};

/* One HTTP thread's state: its completion queue, polled by its reactor. */
struct rgw_thr {
	struct rgw *g;
	struct rgw_http_thread *ht;
	struct cm_reactor *r;
	cairn_cq_t *cq;
	struct cm_io cqio;
	bool polling;
	unsigned inflight;
	struct shardq *shards; /* index ops waiting for their shard's op in flight */
	unsigned nshards_new;  /* shards added since the list was last trimmed */
	/* RGW_CHUNK buffers given back by ended requests, for the next ones */
	void *bufs[RGW_BUF_POOL];
	unsigned nbufs;
	/* PUTs' bytes waiting for their MD5 (ETag), hashed in lanes (rgw/md5.h) */
	struct rgw_md5_batch md5b;
};

/* A RGW_CHUNK buffer (from t's pool: no page faults on a fresh mapping), or NULL. */
void *rgw__buf_get(struct rgw_thr *t);
/* Give b (from rgw__buf_get, may be NULL) back; only once nothing reads or writes it. */
void rgw__buf_put(struct rgw_thr *t, void *b);

/* Queue it for its shard (batch.c): sent now if the shard has no op in flight. */
void rgw__batch(struct rgw_thr *t, struct rgw_batch_item *it);
void rgw__batch_fini(struct rgw_thr *t);

/* Run op on oid; cb(arg, rc) on the request's thread, then op is released. */
typedef void (*rgw_aio_cb)(void *arg, int rc);
int rgw__aio(struct rgw_thr *t, cairn_ioctx_t *io, const char *oid, cairn_op_t *op, rgw_aio_cb cb,
	     void *arg);

struct s3_req;
typedef void (*s3_step)(struct s3_req *q);

struct rgw_policy;

/*
 * A bucket's configurations that any request may need, read with its
 * record (its record object's xattrs rgw.policy, rgw.cors) and cached with it.
 */
struct s3_bconf {
	char *policy, *cors; /* as stored, NUL-terminated; NULL: none */
	size_t policy_len, cors_len;
	char *map; /* the index shard map as stored (RGW_MAP_XATTR); NULL: shard 0 alone */
	size_t map_len;
	struct rgw_shardmap shards; /* map, decoded (points into it) */
	struct rgw_policy *pol;     /* policy, parsed */
	bool broken;                /* a stored policy that does not parse: nothing is granted */
};

void s3_bconf_fini(struct s3_bconf *c);

/* A request in progress. */
struct s3_req {
	struct rgw *g;
	struct rgw_thr *t;
	struct rgw_req *r;
	const struct rgw_http_head *h;
	struct rgw_uri u;
	char *bucket; /* NULL: the service (ListBuckets) */
	char *key;    /* NULL: the bucket itself */
	size_t key_len;
	/* auth */
	struct rgw_sigv4 sig;
	bool anon;
	char uid[65];
	char secret[64];
	int64_t uq_bytes, uq_objects; /* the user's quota (0: none) */
	/* deletes' moves of the user's and the bucket's quota counters, sent once at the end
	 * (s3_usage_flush: one op each, not one per key of a DeleteObjects) */
	int64_t du_bytes, du_objs, db_bytes, db_objs;
	char seed[65];
	uint8_t sigkey[32];
	/* the bucket */
	struct rgw_bucket b;
	struct s3_bconf bc; /* b's */
	bool have_b;
	bool cors_done;      /* the CORS headers were added */
	cairn_ioctx_t *data; /* the data pool, in the bucket's namespace */
	cairn_ioctx_t *mpio; /* the metadata pool in the bucket's namespace (uploads) */
	int pending;         /* ops in flight */
	s3_step next;
	s3_step entry; /* the step the first s3_bucket_load went on to (s3_index_restart) */
	int restarts;
	int status;
	/* body collection (small XML bodies) */
	struct rgw_str body;
	/* payload checks */
	EVP_MD_CTX *md5, *sha;
	bool check_sha;
	int64_t started_ns;
	uint64_t bytes_in, bytes_out;
	char *op_name;
	void *op; /* the operation's own state */
	void (*op_free)(struct s3_req *q);
};

/* Errors in S3's XML form; then the request ends. */
void s3_error(struct s3_req *q, int status, const char *code, const char *msg);
/* The same with extra headers (each "Name: value\r\n"). */
void s3_error_hdrs(struct s3_req *q, int status, const char *code, const char *msg,
		   const char *hdrs);
/* The error for a libcairn errno. */
void s3_error_rc(struct s3_req *q, int rc, const char *what);
/* The S3 status and code (*code) s3_error_rc answers rc with. */
int s3_rc_status(int rc, const char **code);
/* Respond with status, extra headers and an XML body; then end. */
void s3_respond_xml(struct s3_req *q, int status, const char *hdrs, struct rgw_str *xml);
void s3_done(struct s3_req *q);

/* An index shard as a bucket's shard map gave it: its object and its range mark. */
struct s3_shard {
	char oid[128];
	uint32_t num;
	char range[RGW_RANGE_MAX]; /* lo "\0" hi (rgw/shardmap.h) */
	size_t rlen;
	char got[RGW_RANGE_MARK_MAX]; /* what a read found (s3_shard_read) */
	size_t glen;
	int grval;
};

/*
 * The index shard of bucket b holding key, from the shard map in bc (NULL,
 * or no map: shard 0, which holds every key). docs/design/rgw.md §3.1.1.
 */
void s3_shard_pick(const struct rgw_bucket *b, const struct s3_bconf *bc, const char *key,
		   size_t klen, struct s3_shard *s);
/* Guard an index write on the shard's range (a split or merge changes it). */
void s3_shard_guard(const struct s3_shard *s, cairn_op_t *op);
/* An index read's check of the shard's range: its mark read into s by op. */
void s3_shard_read(struct s3_shard *s, cairn_op_t *op);
/*
 * After that read: whether the shard holds another range now (the map q
 * used was stale: its keys may be elsewhere). If so the request starts
 * again with the map read anew (s3_index_restart) and the caller stops.
 */
bool s3_shard_moved(struct s3_req *q, const struct s3_shard *s);
/*
 * Start q again from the step its first s3_bucket_load was given, with the
 * bucket's record (and map) read from the cluster; after S3_RESTARTS_MAX
 * of them, 503 SlowDown. Only for requests that did nothing yet.
 */
void s3_index_restart(struct s3_req *q);
#define S3_RESTARTS_MAX 8
/* Bucket's shard map as stored (*raw malloc'd; none, never split: NULL and 0). */
int rgw__map_read(cairn_ioctx_t *io, const char *bucket, uint8_t **raw, size_t *len);

/*
 * One index write's patience with its shard (rgw.md §3.1.1): while a
 * split freezes it, waits (20 ms doubling to 1 s, S3_FROZEN_MAX_MS in
 * all); when it moved (the map was read before a split), the bucket's
 * map is read anew and the key's shard picked again. For a site that
 * must not start its whole request again (one key of DeleteObjects, a
 * write whose body was read).
 */
#define S3_FROZEN_MAX_MS 30000
typedef void (*s3_shwait_cb)(void *arg, int rc);

struct s3_shwait {
	struct s3_req *q;
	struct s3_shard *s;
	const char *key; /* the key s is picked for (the caller keeps it) */
	size_t klen;
	const char *bucket; /* the bucket (q->bucket; a copy's source is another) */
	char bid[33];       /* its id when the request began */
	bool reader;        /* a read: a frozen shard is read, only a moved one is waited for */
	struct cm_timer t;
	unsigned wait_ms, waited_ms, moves;
	s3_shwait_cb fn;
	void *arg;
	struct rgw_bucket b;
	struct s3_bconf bc;
};

void s3_shwait_init(struct s3_shwait *w, struct s3_req *q, struct s3_shard *s, const char *key,
		    size_t klen, s3_shwait_cb fn, void *arg);
/* The same for bucket (of id bid) instead of q's, as a reader. */
void s3_shwait_init_read(struct s3_shwait *w, struct s3_req *q, const char *bucket, const char *bid,
			 struct s3_shard *s, const char *key, size_t klen, s3_shwait_cb fn,
			 void *arg);
/*
 * After an index op that read w->s's mark (s3_shard_read): false if the
 * shard holds the key now (carry on); true if it is frozen or moved: fn
 * is called later with 0 (read again: w->s is the key's shard now),
 * -ENOENT (the bucket was deleted, or deleted and made again) or -EBUSY
 * (frozen too long, or moved too often).
 */
bool s3_shard_wait(struct s3_shwait *w);
void s3_shwait_fini(struct s3_shwait *w);
/* The key after the shard's range (its hi), or NULL (the last shard). */
const char *s3_shard_hi(const struct s3_shard *s, size_t *len);
/* The index entry's omap key of object key. */
void s3_entry_key(const char *key, size_t klen, struct rgw_str *out);
/* An instance's data object n. */
void s3_data_oid(const uint8_t inst[16], uint64_t n, char *oid, size_t len);

/* rgw__aio with q as the argument, q->pending counted; a failure is answered. \return 0 or it. */
int s3_submit(struct s3_req *q, cairn_ioctx_t *io, const char *oid, cairn_op_t *op, rgw_aio_cb cb);
/*
 * The shard's usage counters moved by dbytes and dobjs in op (an index
 * change); a growth past the bucket's quota fails the op with -EOVERFLOW,
 * nothing written (exact: the counters move with the entries, in one op).
 */
void s3_usage_op(const struct s3_req *q, cairn_op_t *op, int64_t dbytes, int64_t dobjs);
/* The counters' ADDs in op, each bounded above by its max (0: not bounded). */
void rgw__usage_add(cairn_op_t *op, int64_t dbytes, int64_t dobjs, int64_t max_bytes,
		    int64_t max_objs);
/*
 * Move the usage counter of q's user (object usage.<uid>) by dbytes and
 * dobjs: with cb, bounded by the user's quota (-EOVERFLOW: nothing taken;
 * q->pending counted); without, fire and forget (a give-back). \return 0
 * or an errno (nothing sent, nothing answered).
 */
int s3_user_usage(struct s3_req *q, int64_t dbytes, int64_t dobjs, rgw_aio_cb cb);
/* Whether q's user has a quota that this request's writes move (her own bucket). */
bool s3_user_quota_applies(const struct s3_req *q);
/*
 * The bucket's quota counter (object busage.<id>, rgw.md §6), whatever its
 * index shards: kept while the bucket has a quota. A commit's growth is
 * taken first with cb (bounded by the quota: -EOVERFLOW, nothing taken;
 * q->pending counted), and given back if the commit fails; a shrink moves
 * it after the commit, without cb (fire and forget, only if the counter
 * exists). \return 0 or an errno (nothing sent).
 */
int s3_bucket_usage(struct s3_req *q, int64_t dbytes, int64_t dobjs, rgw_aio_cb cb);
bool s3_bucket_quota_applies(const struct s3_req *q);
/*
 * Hold (nb, no) of the bucket's quota counter where (*hb, *ho) is held (a
 * commit's plan changed on a retry): what is held beyond is given back now,
 * more is taken bounded with cb (the caller then holds nb, no).
 * \return 0 (done: *hb, *ho are nb, no), 1 (cb runs), or an errno.
 */
int s3_bucket_hold(struct s3_req *q, int64_t *hb, int64_t *ho, int64_t nb, int64_t no,
		   rgw_aio_cb cb);
/* Send the moves deletes noted in q->du_* and q->db_* (fire and forget), once. */
void s3_usage_flush(struct s3_req *q);
/* The answer to a commit refused by a quota (-EOVERFLOW). */
#define S3_QUOTA_MSG "the bucket's or its owner's quota would be exceeded"

/* A dead marker (key NUL-terminated, at most 64 bytes; value RGW_DEAD_VLEN) for an instance. */
void s3_dead_marker(const uint8_t inst[16], uint64_t size, bool manifest, char key[64],
		    uint8_t val[RGW_DEAD_VLEN]);
/* q->mpio, made when first needed. \return 0 or an errno. */
int s3_mp_io(struct s3_req *q);
/* Whether s is an upload id (RGW_UPLOAD_LEN lower-case hex digits). */
bool s3_upload_id_ok(const char *s);
/* The shard's marker of an upload: RGW_SYS_UPLOAD + key + NUL + id. */
void s3_upload_marker(const char *key, size_t klen, const char *upid, struct rgw_str *out);

/* ---- versions (s3_version.c, docs/design/rgw.md §3.3) ---- */

#define RGW_SYS_NULL \
	"\xff"       \
	"n" /* + key: the key's null version, when it is an older one */
#define RGW_NPTR_VLEN (RGW_VID_LEN + 1 + 16 + 8) /* its sort key, flags, instance, size */

enum s3_vmode { S3_V_NEVER, S3_V_ENABLED, S3_V_SUSPENDED };
enum s3_vmode s3_vmode(const struct rgw_bucket *b);
/* An older version's record key: key "\0\1" sk. */
void s3_version_key(const char *key, size_t klen, const char *sk, struct rgw_str *out);
/* The key's null pointer: RGW_SYS_NULL key. */
void s3_null_ptr_key(const char *key, size_t klen, struct rgw_str *out);

/*
 * What one op reads of a key's versions: the latest entry, and when asked
 * the null pointer, the record under sort key sk, the newest record.
 */
struct s3_vread {
	struct cairn_kv want[3];
	size_t nwant;
	int inptr, irec; /* their index in want (0: not read) */
	bool list;
	struct cairn_kv prefix; /* "<key>\0\1" */
	struct cairn_kv *kvs, *first;
	size_t n, nfirst;
	bool more;
	int rval, frval;
};

/* \return 0, -ENOMEM (r is then safe to fini). */
int s3_vread_init(struct s3_vread *r, const char *key, size_t klen, bool nptr, const char *sk,
		  bool first);
/* Its reads into op (what a previous op read is freed). */
void s3_vread_op(struct s3_vread *r, cairn_op_t *op);
void s3_vread_reset(struct s3_vread *r);
int s3_vread_rc(const struct s3_vread *r);
/* What the op found (NULL: absent, or not read). */
const struct cairn_kv *s3_vread_cur(const struct s3_vread *r);
/* A time for a new latest version: now, or just after the current latest's (its sort key)
 * when that is later (a slower commit, a clock behind), so versions sort as they commit. */
int64_t s3_version_time(const struct s3_vread *r, int64_t now);
const struct cairn_kv *s3_vread_nptr(const struct s3_vread *r);
const struct cairn_kv *s3_vread_rec(const struct s3_vread *r);
const struct cairn_kv *s3_vread_first(const struct s3_vread *r);
void s3_vread_fini(struct s3_vread *r);
/*
 * The entry of version vid (NULL: the latest) among what r read (made with
 * nptr for "null", with sk = vid for an id), or NULL. next_sk gets the null
 * version's sort key when it is an older one: its record is read next.
 */
const struct cairn_kv *s3_vread_pick(const struct s3_vread *r, const char *vid,
				     char next_sk[RGW_VID_LEN + 1]);

/* A version's data to collect once the plan's op succeeded. */
struct s3_vdead {
	uint8_t inst[16];
	uint64_t size;
	bool mp;
	char dkey[64];
	uint8_t dval[RGW_DEAD_VLEN];
};

enum { S3_VP_CMP = 1, S3_VP_ABSENT, S3_VP_SET, S3_VP_RM };

#define S3_VPLAN_OPS 12

struct s3_vplan_op {
	int kind;
	void *key; /* the plan's */
	size_t klen;
	const void *val; /* (the read's, or the plan's own) */
	size_t vlen;
};

/*
 * The compares and writes of one change of a key's versions, the counters'
 * moves (every stored version counts; delete markers do not) and the data
 * it frees. Values point into the s3_vread it was made from: keep both
 * until the op completes. Zeroed before first use (s3_vplan_zero).
 */
struct s3_vplan {
	struct s3_vplan_op o[S3_VPLAN_OPS];
	int n;
	bool oom;
	uint8_t nptr_val[RGW_NPTR_VLEN];
	struct s3_vdead dead[2];
	int ndead;
	int64_t dbytes, dobjs;
	bool have_old, old_dm; /* put: a latest existed (a delete marker); delete: it was one */
	uint64_t old_size;
	bool found; /* delete: the version was there */
};

void s3_vplan_zero(struct s3_vplan *v);
/*
 * A new latest version (neu, nlen: its encoding; ne: it) for key, in b's
 * versioning mode, from what r read (the latest; the null pointer in a
 * suspended bucket). neu NULL (never-versioned buckets only): the latest
 * is removed. \return 0, -EBADMSG (a damaged entry), -ENOMEM.
 */
int s3_vplan_put(struct s3_vplan *v, const struct rgw_bucket *b, const char *key, size_t klen,
		 const struct s3_vread *r, const void *neu, size_t nlen,
		 const struct rgw_entry *ne);
/*
 * Version vid ("null" or an id) of key removed, from what r read (the
 * latest, the null pointer, vid's record, the newest record); v->found says
 * whether it was there. \return 0, -EBADMSG, -ENOMEM.
 */
int s3_vplan_delete(struct s3_vplan *v, const char *key, size_t klen, const struct s3_vread *r,
		    const char *vid);
void s3_vplan_ops(const struct s3_vplan *v, cairn_op_t *op);
/* After the op succeeded: the freed data to the collector. */
void s3_vplan_collect(struct s3_req *q, const struct s3_vplan *v, const char *shard);
void s3_vplan_fini(struct s3_vplan *v);

/* An object's kept headers (Content-Type, x-amz-meta-*, ...) into e (strdup'd). \return 0, -E2BIG,
 * -ENOMEM. */
int s3_put_meta(struct s3_req *q, struct rgw_entry *e);
/* Free what s3_put_meta (or s3_meta_dup, s3_put_tags) put in e. */
void s3_meta_free(struct rgw_entry *e);
/* src's headers (and its tags, its ACL when asked) into dst (strdup'd). \return 0, -ENOMEM. */
int s3_meta_dup(struct rgw_entry *dst, const struct rgw_entry *src, bool tags, bool acl);
/* src's tags into dst (malloc'd). \return 0, -ENOMEM. */
int s3_tags_dup(struct rgw_entry *dst, const struct rgw_entry *src);
/* x-amz-tagging into e. \return 0, or -EINVAL: answered. */
int s3_put_tags(struct s3_req *q, struct rgw_entry *e);
/* The answer for a tag set rgw_tags_add or rgw_tags_from_query refused. */
void s3_tags_error(struct s3_req *q, int rc);
/* GET, PUT, DELETE /bucket/key?tagging (s3_tagging.c). */
void s3_obj_tagging(struct s3_req *q);
/* GET, PUT /bucket/key?acl (canned ACLs; s3_tagging.c). */
void s3_obj_acl(struct s3_req *q);

/*
 * An op reading e's manifest (object 0 of its instance) into a new *buf.
 * \return 0, -EBADMSG (e's part count is out of bounds), -ENOMEM.
 */
int s3_manifest_op(const struct rgw_entry *e, cairn_op_t **op, uint8_t **buf, size_t *len,
		   int *rval);

/* ---- the source of CopyObject and UploadPartCopy (s3_copy.c) ---- */

typedef void (*s3_copy_data_cb)(struct s3_req *q, const uint8_t *data, size_t n, int rc);

struct s3_copy {
	struct s3_req *q;
	struct rgw_copy_src cs;
	struct rgw_bucket sb; /* the source's bucket */
	struct s3_bconf sbc;  /* its configurations */
	cairn_ioctx_t *io;    /* its data (q->data for the same bucket) */
	bool own_io, part;
	bool same;            /* the source is the destination (bucket and key) */
	struct cairn_kv want; /* (the null version's record, when it is an older one) */
	struct cairn_kv *kvs;
	size_t n;
	int rval;
	struct s3_vread vr; /* the source key's latest entry, or its version's */
	struct s3_shwait w; /* its shard moved by a split */
	bool second;
	struct s3_shard shard;
	struct rgw_entry e; /* the source's entry */
	bool have_e;
	struct rgw_layout l;
	uint8_t *mbuf;
	size_t mlen;
	int mrval;
	uint64_t off, len; /* the bytes copied: [off, off + len) of the source */
	bool whole;        /* the whole source */
	uint64_t pos;      /* the next byte to read */
	/* the read in flight */
	uint8_t *buf;
	size_t want_n, got;
	int rrval;
	bool reading;
	s3_step next;
	s3_copy_data_cb dcb;
};

/*
 * Open q's x-amz-copy-source (part: UploadPartCopy, which may take
 * x-amz-copy-source-range): the source's bucket (yours), its entry, the
 * x-amz-copy-source-if-* conditions, its layout; then next(q). Any
 * failure is answered (q ends). *cp is set at once (the caller frees it).
 */
void s3_copy_open(struct s3_req *q, bool part, struct s3_copy **cp, s3_step next);
/* Read the next piece (at most RGW_CHUNK bytes); cb(q, data, n, rc) with c->buf. \return 0 or an
 * errno (nothing in flight then). */
int s3_copy_read(struct s3_copy *c, s3_copy_data_cb cb);
bool s3_copy_eof(const struct s3_copy *c);
void s3_copy_free(struct s3_copy *c);

/*
 * Access (canned ACLs, docs/design/rgw.md §2.1; bucket policies, §2.2). A
 * bucket's owner may do anything in it; others what the bucket's canned ACL
 * grants (READ: list; WRITE: put and delete objects) and, on an object,
 * what its own canned ACL grants (READ: get, head) or its writer (OWNER of
 * it). Then the bucket's policy, for q's own bucket and key and the S3
 * action q is (s3_action): a Deny takes away, an Allow adds.
 */
enum s3_perm { S3_P_READ = 1, S3_P_WRITE = 2, S3_P_OWNER = 3 };

bool s3_allow_bucket(const struct s3_req *q, const struct rgw_bucket *b, enum s3_perm perm);
bool s3_allow_object(const struct s3_req *q, const struct rgw_bucket *b, const struct rgw_entry *e,
		     enum s3_perm perm);
/* The ACLs' verdicts alone. */
bool s3_acl_bucket(const struct s3_req *q, const struct rgw_bucket *b, enum s3_perm perm);
bool s3_acl_object(const struct s3_req *q, const struct rgw_bucket *b, const struct rgw_entry *e,
		   enum s3_perm perm);
/* The ACL's verdict acl_ok on bucket b's key (NULL: the bucket) for action (NULL: q's own),
 * with b's policy (bc; NULL: none) applied. */
bool s3_access(const struct s3_req *q, const struct rgw_bucket *b, const struct s3_bconf *bc,
	       const char *key, size_t klen, const char *action, bool acl_ok);
/* Whether q may list its bucket (what a missing key's answer depends on). */
bool s3_may_list(const struct s3_req *q);
/* How many of S3's sub-resources (of a bucket, or of an object) q names. */
int s3_subresources(const struct s3_req *q);
/* The S3 action ("s3:GetObject") q is. */
const char *s3_action(const struct s3_req *q);
/* PutBucketPolicy's check of the body (answered when nonzero), what to keep. */
int s3_policy_check(struct s3_req *q, struct rgw_str *out);
/* PutBucketCors's. */
int s3_cors_check(struct s3_req *q, struct rgw_str *out);
/* An OPTIONS preflight (unauthenticated). */
void s3_cors_preflight(struct s3_req *q);
/* A request from a browser (Origin) to q's loaded bucket: its CORS headers. */
void s3_cors_actual(struct s3_req *q);
/* <AccessControlPolicy> of a canned ACL: the owner's FULL_CONTROL and the ACL's grants
 * (bucket_owner: an object's bucket's owner, for bucket-owner-*; NULL for a bucket). */
void s3_acl_xml(struct rgw_str *x, const char *owner, const char *acl, const char *bucket_owner);
/* 403 AccessDenied. */
void s3_deny(struct s3_req *q);
/* A canned ACL's name S3 knows. */
bool s3_canned_ok(const char *acl);
/* x-amz-acl into e (strdup'd). \return 0, or -EINVAL: answered. */
int s3_put_acl(struct s3_req *q, struct rgw_entry *e);

/* <Owner><ID>uid</ID><DisplayName>uid</DisplayName></Owner> */
void s3_owner_xml(struct rgw_str *x, const char *uid);

/* Operations (s3_*.c). */
void s3_list_buckets(struct s3_req *q);
void s3_bucket_op(struct s3_req *q);
void s3_object_op(struct s3_req *q);
void s3_list_objects(struct s3_req *q);
/* Multipart (s3_multipart.c): POST ?uploads, POST ?uploadId, GET ?uploadId, DELETE ?uploadId. */
void s3_mp_initiate(struct s3_req *q);
void s3_mp_complete(struct s3_req *q);
void s3_mp_list_parts(struct s3_req *q);
void s3_mp_abort(struct s3_req *q);
/* GET /bucket?uploads */
void s3_mp_list_uploads(struct s3_req *q);

/* Load bucket name's record into *b and its configurations into *bc (may be NULL; fini'd
 * first) from the cache or the cluster, then cb(q, arg, rc): 0, -ENOENT, an errno. */
typedef void (*s3_bucket_cb)(struct s3_req *q, void *arg, int rc);
void s3_bucket_get(struct s3_req *q, const char *name, struct rgw_bucket *b, struct s3_bconf *bc,
		   s3_bucket_cb cb, void *arg);
/* Load q's bucket (cache or cluster), then next; NoSuchBucket otherwise. */
void s3_bucket_load(struct s3_req *q, s3_step next);
void s3_bucket_forget(struct rgw *g, const char *name);
/* q changed its bucket's record or a configuration: every gateway drops its cached copy
 * (RGW_NOTIFY_OID; this one at once), then next(q) answers, once they acknowledged or
 * RGW_NOTIFY_TIMEOUT_MS passed. */
void s3_bucket_changed(struct s3_req *q, s3_step next);

/* Read the whole (small) body into q->body (at most max bytes), then next. */
void s3_read_body(struct s3_req *q, size_t max, s3_step next);

/* The garbage collector: delete inst's data after the gc delay, then its dead marker. */
void rgw__gc_add(struct rgw *g, const char *bucket_id, const char *shard_oid, const char *marker,
		 size_t mlen, const uint8_t inst[16], uint64_t size, bool manifest);
int rgw__gc_start(struct rgw *g);
/* Apply a bucket's lifecycle rules (xml: its configuration) to its index (the sweep; synchronous).
 */
void rgw__lc_bucket(struct rgw *g, const struct rgw_bucket *b, const char *xml, size_t n,
		    int64_t now);
void rgw__gc_stop(struct rgw *g);
/*
 * Index shard splits (split.c, rgw.md §3.1.1), on the collector's thread:
 * look at bucket's shards (one: shard only), resume a split left frozen,
 * split those past rgw_index_shard_max. \return 1 if the map changed, 0.
 */
int rgw__split_bucket(struct rgw *g, const char *bucket, uint32_t only, bool one);
/* A commit grew shard num of bucket: the collector looks at it soon (any thread). */
void rgw__split_note(struct rgw *g, const char *bucket, uint32_t num);
/* The noted shards looked at (the collector's thread). */
void rgw__split_check(struct rgw *g);
void rgw__split_fini(struct rgw *g);
/* The numbers of bucket's index shards, in key order (free *nums). \return 0 or an errno. */
int rgw__bucket_shards(struct rgw *g, const char *bucket, uint32_t **nums, size_t *n);
/* cairn_operate that rgw__gc_stop ends (-ECANCELED); for the collector's thread; g may be NULL. */
int rgw__gc_operate(struct rgw *g, cairn_ioctx_t *io, const char *oid, cairn_op_t *op);

int64_t rgw__now_ns(void);
/* "2026-12-02T07:30:00.000Z" */
void rgw__iso8601(int64_t ns, char *out, size_t len);
/* "Wed, 02 Dec 2026 07:30:00 GMT" */
void rgw__http_date(int64_t ns, char *out, size_t len);

#endif
