/* SPDX-License-Identifier: Apache-2.0 */
/* Object store internals shared by its source files. */
#ifndef OSD_STORE_INTERNAL_H
#define OSD_STORE_INTERNAL_H

#include "os/alloc.h"
#include "os/store.h"
#include "cm/worker.h"

#include <cairn/store.pb-c.h>
#include <pthread.h>
#include <rocksdb/c.h>

#define OS_MAX_OBJ_BYTES (1ull << 48)

/* An object's metadata in memory. */
struct os_xext {
	uint64_t lblock, pblock;
	uint32_t n;
	uint32_t *csum; /* n entries */
};

struct os_attr {
	char *name;
	uint8_t *val;
	size_t len;
};

/*
 * An onode in the prepare or read cache is never changed (prepare works on
 * a copy): the caches and a transaction's read copy share one, counted in
 * ref (atomic: the prepare thread and the reactor drop references).
 */
struct os_onode {
	unsigned ref;
	uint64_t nid, size, version;
	struct os_xext *ext;
	size_t next, cap;
	struct os_attr *attrs;
	size_t nattrs;
	uint8_t *hdr;
	size_t hdrlen;
	bool no_omap; /* no omap key under nid: a remove or clear needs no range delete */
	/*
	 * How the KV holds the extents: 0 in the onode record itself, else in
	 * shard records of that many logical blocks each ("X" keys, onode.c).
	 * Set by decode, and by os_onode_put_shards for what a batch writes.
	 */
	uint32_t shard_blocks;
};

/*
 * Extent maps of objects that span more than one shard of this many blocks
 * (256 KiB with 4 KiB blocks) are kept in shards, so that an overwrite
 * rewrites the shard it changed instead of the object's whole map (a 4 MiB
 * object's checksums alone are 4 KiB).
 */
#define OS_SHARD_BLOCKS 64u
/* What a decoded record may say: shard sizes, logical blocks (objects are < 2^48 bytes). */
#define OS_MAX_SHARD_BLOCKS (1u << 20)
#define OS_MAX_LBLOCK       (1ull << 48)

struct os_onode *os_onode_new(uint64_t nid);
void os_onode_free(struct os_onode *o); /* drops a reference; the last frees */
/* Another reference to an onode nobody changes any more. \return o. */
struct os_onode *os_onode_ref(struct os_onode *o);
struct os_onode *os_onode_dup(const struct os_onode *o);
int os_onode_decode(const void *buf, size_t len, struct os_onode **op);
int os_onode_encode(const struct os_onode *o, uint8_t **buf, size_t *len);
/* The extent holding logical block lb, or NULL; *idx its index. */
const struct os_xext *os_onode_find(const struct os_onode *o, uint64_t lb, size_t *idx);
/* Unmap [start, end); freed physical ranges are appended to *fr. \return 0 or -ENOMEM. */
int os_onode_punch(struct os_onode *o, uint64_t start, uint64_t end, struct os_extent **fr,
		   size_t *nfr, size_t *cap);
/* Append [start, start + len) to *fr (joined to the last range if adjacent). \return 0, -ENOMEM. */
int os_extent_append(struct os_extent **fr, size_t *nfr, size_t *cap, uint64_t start, uint64_t len);
/* Map [lblock, lblock + n) to pblock (the range must be unmapped). csum copied. */
int os_onode_insert(struct os_onode *o, uint64_t lblock, uint64_t pblock, uint32_t n,
		    const uint32_t *csum);

/*
 * Shard records. add_shard appends shard idx's extents (decoded from a
 * record) to o, whose shards must come in order; \return 0, -EBADMSG or
 * -ENOMEM. put_shards puts into wb what changes the KV's shard records of
 * one object id from before's to after's (either may be NULL; both have
 * that nid) and sets after->shard_blocks — call it before encoding after.
 */
int os_onode_add_shard(struct os_onode *o, uint64_t idx, const void *buf, size_t len);
int os_onode_put_shards(rocksdb_writebatch_t *wb, const struct os_onode *before,
			struct os_onode *after);
/*
 * An object's onode from the KV, shards and all (*op NULL: no such object).
 * nb: ro reads the block cache only, and -EAGAIN says the disk is needed.
 * \return 0, -EAGAIN, -EIO (a KV error or an undecodable record), -ENOMEM.
 */
int os_onode_load(rocksdb_t *db, const rocksdb_readoptions_t *ro, bool nb, const char *key,
		  size_t klen, struct os_onode **op);
/*
 * The shards of a decoded onode o (o->shard_blocks > 0), read with it, an
 * iterator over a view that holds o's record. \return as os_onode_load.
 */
int os_onode_load_shards(rocksdb_iterator_t *it, bool nb, struct os_onode *o);

/*
 * One walk over a view of the store's metadata, for the two readers of every
 * onode (mount's rebuild of the allocator and collection counts, and fsck):
 * first each collection (coll), then each onode record in key order (onode).
 * onode gets the record's key (k, kl: 'O' cid NUL oid), oid (NULL when the
 * key has no NUL: malformed), the decoded onode with its extent map shards
 * loaded (NULL when undecodable: decode_rc says why), and shard_rc (nonzero:
 * a shard record of a decoded onode is unreadable; on lacks those extents).
 * The walker frees on after the call. A callback's nonzero return ends the
 * walk with that value. it and xit are iterators over one view (xit reads
 * the shard records beside it). \return 0 or what a callback returned.
 */
struct os_walk_ops {
	int (*coll)(void *arg, const char *name, size_t len);
	int (*colls_done)(void *arg); /* may be NULL */
	int (*onode)(void *arg, const char *k, size_t kl, const char *oid, struct os_onode *on,
		     int decode_rc, int shard_rc);
};

int os_walk_onodes(rocksdb_iterator_t *it, rocksdb_iterator_t *xit, const struct os_walk_ops *ops,
		   void *arg);

/*
 * Reference counts of blocks shared by more than one extent (refs.c). An
 * allocated block that is absent has one owner. A block stays in it with
 * count 1 once it was shared (until it is freed, or the next mount): a
 * transaction that unshared it may not have committed yet, and reads of
 * the committed state may still be in flight, so its last owner must not
 * write it in place either. Owned by whoever prepares (one at a time),
 * loaded at mount (counts >= 2 only; "R" records hold only those).
 */
struct os_refs {
	uint64_t *pb; /* 0: empty slot */
	uint32_t *refs;
	size_t cap, n; /* slots (a power of two), entries */
};

void os_refs_fini(struct os_refs *r);
/* pb's count if it is in the map (>= 1), else 0. */
uint32_t os_refs_get(const struct os_refs *r, uint64_t pb);
/*
 * Set pb's count; 0 removes it. Growing may fail (-ENOMEM, nothing
 * changed); removing never allocates, nor re-inserting after removals.
 */
int os_refs_set(struct os_refs *r, uint64_t pb, uint32_t refs);
/* Iterate: i = 0 first; \return the next i, 0 at the end. */
size_t os_refs_next(const struct os_refs *r, size_t i, uint64_t *pb, uint32_t *refs);
/* An "R" record (key k, value v): \return 0 with *pb, *refs (>= 2), or -EBADMSG. */
int os_refs_decode(const char *k, size_t kl, const void *v, size_t vl, uint64_t *pb,
		   uint32_t *refs);
/*
 * Mount and fsck: mark extent [pb, pb + n) in a; blocks marked before
 * count one reference more in cnt. \return 0, -ERANGE (outside a), -ENOMEM.
 */
int os_refs_mark(struct os_alloc *a, struct os_refs *cnt, uint64_t pb, uint64_t n);
/*
 * Every block whose counted references (cnt, from the onodes; absent: 1 if
 * marked in used, else 0) differ from what recorded says (absent: 1):
 * cb(pb, counted, recorded) each. \return how many.
 */
uint64_t os_refs_compare(const struct os_refs *counted, const struct os_refs *recorded,
			 const struct os_alloc *used,
			 void (*cb)(void *arg, uint64_t pb, uint32_t counted, uint32_t recorded),
			 void *arg);
/*
 * Read every "R" record through it into rec; bad(k, why) for each one that
 * is undecodable or outside [data_start, nblocks). \return 0, -EUCLEAN
 * (some were bad; the good ones are in rec), -ENOMEM.
 */
int os_refs_load(rocksdb_iterator_t *it, uint64_t nblocks, uint64_t data_start, struct os_refs *rec,
		 void (*bad)(void *arg, const char *k, size_t kl, const char *why), void *arg);
/* Put pb's record (refs >= 2) or its deletion into wb. */
void os_refs_put_kv(rocksdb_writebatch_t *wb, uint64_t pb, uint32_t refs);

/* Keys. out must hold 2 + strlen(cid) + strlen(oid) (+ 8) bytes. */
size_t os_key_onode(char *out, const char *cid, const char *oid);
size_t os_key_coll(char *out, const char *cid);
size_t os_key_omap(char *out, uint64_t nid, const void *k, size_t klen);
size_t os_key_deferred(char *out, uint64_t seq);
size_t os_key_refs(char *out, uint64_t pblock); /* "R" + be64 block: 9 bytes */
#define OS_KEY_SHARD_LEN 17
/* "X" + be64 nid + be64 shard index. */
size_t os_key_shard(char *out, uint64_t nid, uint64_t idx);
/* The big-endian 64-bit number at p (the nid or index in a key). */
uint64_t os_get_be64(const char *p);

/* ---- the store ---- */

enum os_op_type {
	OP_MKCOLL,
	OP_RMCOLL,
	OP_TOUCH,
	OP_WRITE,
	OP_ZERO,
	OP_TRUNCATE,
	OP_REMOVE,
	OP_CLONE,
	OP_CLONE_RANGE,
	OP_SETATTR,
	OP_RMATTR,
	OP_OMAP_SET,
	OP_OMAP_RM,
	OP_OMAP_RM_RANGE,
	OP_OMAP_CLEAR,
	OP_OMAP_HEADER,
	OP_STASH,
	OP_UNSTASH,
	OP_RENAME,
	OP_REMOVE_ANY,
};

struct os_op {
	enum os_op_type type;
	char *cid, *oid, *oid2, *name;
	char *cid2; /* RENAME: dst's collection (NULL: cid) */
	uint64_t off, len, off2;
	uint8_t *data; /* write data, attr value, omap value / first key, header */
	size_t dlen;
	struct cm_buf *buf; /* write data by reference (data points into it) */
	uint8_t *key;       /* omap key / last key */
	size_t klen;
};

/* A device write of a prepared transaction. */
struct os_dwrite {
	uint64_t pblock, n;
	struct cm_buf *buf; /* block images, B-aligned */
	size_t off;         /* into buf */
	struct iovec iov;
	struct cm_io io;
	struct os_txn *t;   /* COW write of t, or NULL */
	struct os_dfr *dfr; /* deferred apply, or NULL */
	struct os_store *s;
	uint32_t *csum; /* COW: crc32c of each block (the journal record's manifest) */
};

/* A deferred write: committed in the KV, applied to the device afterwards. */
struct os_dfr {
	TAILQ_ENTRY(os_dfr) link;
	uint64_t seq;
	uint64_t *tags; /* pending-map entries, per block */
	uint64_t *pblocks;
	size_t n;
	struct cm_buf *buf; /* n blocks, from boff */
	size_t boff;
	unsigned ios_left;
	struct os_dwrite *ios;
	size_t nios;
	bool applied;
	uint64_t need_fsync; /* journal mode: applied, durable once fsync number >= this is done */
};

struct os_touched {
	char *key;
	size_t klen;
	struct os_onode *on; /* NULL: removed */
};

enum os_txn_state { T_QUEUED, T_PREPARING, T_WRITING, T_READY, T_COMMITTING };

struct os_txn {
	TAILQ_ENTRY(os_txn) link;
	struct os_op *ops;
	size_t nops, cap;
	bool barrier; /* clone / rmcoll: prepare only once everything before has committed */
	os_commit_cb cb;
	void *arg;
	struct os_store *s;
	int rc;
	enum os_txn_state state;
	struct cm_work work;
	/* prepared */
	rocksdb_writebatch_t *wb;
	bool range_deletes; /* wb has DeleteRange ops (which batches cannot be merged across) */
	struct os_dwrite *writes;
	size_t nwrites, capwrites;
	unsigned writes_left;
	struct os_dfr **dfrs;
	size_t ndfrs, capdfrs;
	struct os_extent *frees;
	size_t nfrees, capfrees;
	uint64_t dfr_tag; /* frees wait until deferred records <= this are retired */
	struct os_touched *touched;
	size_t ntouched, captouched;
	uint64_t *pending_tags; /* pending-map tag of each COW write (writes[i]) */
	uint64_t t_ready;       /* when it became T_READY (cm_now_ns), for gather (txn.c) */
	size_t npending, cappending;
};

/* Blocks whose newest content is not (yet) on the device. */
struct os_pend {
	struct os_pend *next;
	uint64_t pblock, n, tag; /* blocks [pblock, pblock + n), within one span */
	struct cm_buf *buf;
	size_t off; /* where pblock's bytes start in buf */
};

/* An onode cache (by key), LRU-bounded; entries with pending > 0 stay. */
struct os_oent {
	struct os_oent *hnext;
	TAILQ_ENTRY(os_oent) lru;
	char *key;
	size_t klen;
	uint64_t h;
	struct os_onode *on; /* NULL: known not to exist */
	unsigned pending;
};

struct os_ocache {
	struct os_oent **b;
	size_t nb, n, max;
	TAILQ_HEAD(, os_oent) lru;
};

int os_ocache_init(struct os_ocache *c, size_t max);
void os_ocache_fini(struct os_ocache *c);
struct os_oent *os_ocache_get(struct os_ocache *c, const char *key, size_t klen);
/* Insert or replace (takes on). \return the entry or NULL (-ENOMEM). */
struct os_oent *os_ocache_put(struct os_ocache *c, const char *key, size_t klen,
			      struct os_onode *on);
void os_ocache_trim(struct os_ocache *c);

/* A group commit: fsync (if needed), then its batches in one KV commit. Up to two in flight. */
struct os_round {
	TAILQ_ENTRY(os_round) link;
	struct os_store *s;
	struct os_txn **txns;
	size_t n;
	TAILQ_HEAD(, os_dfr) retiring; /* deferred records deleted by this commit */
	struct cm_io fsync_io;
	struct cm_work work;
	int commit_rc;
	bool synced, submitted;
	bool failed; /* journal mode: its record's write or fsync (or an earlier one's) failed */
	bool big;    /* journal mode: one transaction too big for a record (via RocksDB's WAL) */
	/* journal mode: its number among rounds called back once durable, before
	 * the memtable has them (0: at the commit; called back once <= kv_acked) */
	uint64_t ack_no;
	uint64_t t_fsync, t_kv;
	/* journal mode: the round's record (written, then the device fsynced) */
	rocksdb_writebatch_t *retire; /* deletes of the retired deferred records */
	uint8_t *jbuf;
	struct iovec jiov;
	struct cm_io jio;
	uint64_t jpos, jseq; /* where it starts; its sequence */
	uint64_t jend, jcum; /* where it ends; bytes charged to records up to it */
	uint64_t fsync_no;   /* the number of the fsync after its record's write (0: none yet) */
};

struct os_held {
	TAILQ_ENTRY(os_held) link;
	struct os_extent ex;
	uint64_t dfr_tag, gen;
};

struct os_rio {
	struct cm_io io;
	struct iovec iov;
	uint64_t pblock;
	uint64_t n;
	size_t boff; /* into the bounce buffer */
	struct os_rd *rd;
};

struct os_rblk {
	uint64_t lblock, pblock;
	uint32_t csum;
	size_t boff; /* into the bounce buffer */
};

/* A read in flight (listed in start order: releases wait for older reads). */
struct os_rd {
	TAILQ_ENTRY(os_rd) link;
	uint64_t gen;
	struct os_store *s;
	char *cid, *oid;
	char *key;
	size_t klen;
	uint64_t off, len;
	os_read_cb cb;
	os_read_meta_cb mcb; /* os_read_meta: instead of cb */
	void *arg;
	char *attr; /* os_read_meta: the xattr to report */
	struct os_read_meta meta;
	uint8_t *attr_val; /* meta.attr's copy */
	struct cm_work work;
	struct os_onode *on;
	bool missing;
	int rc;
	uint64_t fetch_gen;
	uint64_t kv_want;            /* its onode fetch waits until kv_done reaches this */
	TAILQ_ENTRY(os_rd) wlink;    /* in fetch_wait */
	struct cm_buf *out, *bounce; /* bounce NULL: blocks read straight into out */
	struct os_rblk *blks;
	size_t nblks;
	struct os_rio *ios;
	size_t nios;
	unsigned ios_left;
	uint64_t dgen; /* the data cache's generation when the device reads began */
};

/* The data cache (dcache.c): checked device blocks by physical number. */
struct os_dent;

struct os_dcache {
	pthread_mutex_t mu;
	struct os_dent **b;
	size_t nb, n, cap; /* buckets, entries, most entries */
	uint32_t B;
	TAILQ_HEAD(os_dent_q, os_dent) lru;
	uint64_t gen; /* moves on with every invalidation */
	uint64_t hits, misses;
};

int os_dcache_init(struct os_dcache *c, uint64_t bytes, uint32_t B);
void os_dcache_fini(struct os_dcache *c);
/* Copy block pblock into dst (B bytes) if cached. Any thread. */
bool os_dcache_get(struct os_dcache *c, uint64_t pblock, void *dst);
/* Read before starting a device read; pass to os_dcache_put. */
uint64_t os_dcache_gen(struct os_dcache *c);
/* Cache a block read and checked, unless a write came since gen was read. */
void os_dcache_put(struct os_dcache *c, uint64_t pblock, const void *src, uint64_t gen);
/* Blocks [pblock, pblock + n) are being written: drop them. */
void os_dcache_inval(struct os_dcache *c, uint64_t pblock, uint64_t n);

struct os_store {
	struct cm_reactor *r;
	int fd;
	char *path, *db_path;
	char uuid[40];
	uint32_t B;
	uint64_t nblocks, reserve_blocks, deferred_max;
	rocksdb_t *db;
	rocksdb_options_t *dbo;
	rocksdb_writeoptions_t *wo_sync, *wo_async;
	rocksdb_readoptions_t *ro;
	rocksdb_readoptions_t *ro_nb; /* block cache only: never waits for the disk */
	bool inline_prepare;
	unsigned nprep; /* transactions on the prepare thread (reactor-owned) */
	bool in_kick, kick_again;
	bool acking; /* calling back a durable round: no round forms until all are called */
	struct cm_worker_pool *kv;     /* one thread: prepare, in order */
	struct cm_worker_pool *commit; /* one thread: KV commits, in order */
	pthread_mutex_t pcache_mu;     /* pcache: prepare and commit threads */
	struct cm_worker_pool *rd;     /* onode fetches for reads */
	struct os_alloc *alloc;
	pthread_mutex_t alloc_mu;
	/*
	 * Cleared write batches for the next transactions: a batch grows by
	 * appending (a 4 KiB overwrite's is ~8 KiB, reallocated and copied on
	 * the way up); a reused one already has the room.
	 */
	pthread_mutex_t wb_mu;
	rocksdb_writebatch_t *wb_pool[64];
	unsigned nwb_pool;
	uint64_t data_start; /* first block for data: after the label and the journal */
	/* the journal (journal.c); jblocks == 0: RocksDB's own WAL makes commits durable */
	uint64_t jstart, jblocks; /* blocks: two superblocks, then the record area */
	uint64_t jarea;           /* bytes of the record area */
	uint32_t jnonce;          /* from the store uuid: records of another store never match */
	uint64_t jhead, jseq;     /* where the next record goes, and its sequence */
	uint64_t jcum, jtrimmed;  /* bytes ever charged to records; of them trimmed */
	uint64_t jsb_gen;

	struct os_jmark {
		uint64_t seq, end, cum;
	} japplied, jnote; /* newest round in the memtable; the one a running flush trims to */

	bool jflushing, jwaiting; /* a flush runs; a round waits for room */
	/*
	 * The newest record placed has a data manifest (mount checks its data);
	 * the timer that then seals it with an empty record once the store is
	 * idle; a seal is wanted (kick_commit forms the empty round).
	 */
	bool jlast_data, jseal;
	struct cm_timer jseal_timer;
	/*
	 * Device fsyncs are numbered as issued: the completion of number n makes
	 * every write that completed before n was issued durable. fsync_done is
	 * the highest number completed; jwriting counts record writes not yet
	 * followed by their fsync (a dsync record is numbered when submitted and
	 * not counted); dflush is an fsync with no record (applied
	 * deferred writes waiting to be retired, and nothing in flight that
	 * would issue one).
	 */
	uint64_t fsync_issued, fsync_done;
	unsigned jwriting;
	struct cm_io dflush_io;
	uint64_t dflush_no;
	bool dflushing;
	int jflush_rc;
	struct cm_worker_pool *flusher;
	struct cm_work jflush_work;
	uint8_t *jsb_buf;
	struct iovec jsb_iov;
	struct cm_io jsb_io;
	rocksdb_writeoptions_t *wo_nowal;
	/* pending map (mutex) */
	pthread_mutex_t pend_mu;
	struct os_pend **pend;
	size_t npend_b;
	unsigned long npend; /* entries (atomic: read without the lock to skip empty lookups) */
	uint64_t pend_tag;
	/* prepare state (kv thread) */
	struct os_ocache pcache;
	struct os_refs refs;     /* shared blocks (refs.c): prepare's, like pcache */
	bool fsck_mount, repair; /* os_opts' (mount's handling of refcount records) */
	uint64_t next_nid, next_dseq;
	char **colls;
	size_t ncolls;

	/* objects and logical bytes of each collection (same order as colls;
	 * counted at mount, changed at prepare) */
	struct os_cstat {
		uint64_t objects, bytes;
	} * cstat;

	pthread_mutex_t stat_mu; /* colls + cstat for readers off the kv thread */
	/* reactor state */
	TAILQ_HEAD(, os_txn) q;
	unsigned inflight; /* queued transactions not yet called back */
	TAILQ_HEAD(, os_round) rounds;
	unsigned nrounds;
	bool dirty;
	unsigned napplied; /* deferred writes applied, not yet retired */
	TAILQ_HEAD(, os_dfr) dfr_waiting, dfr_applying, dfr_applied;
	bool failed; /* a KV commit failed: the prepare state is no longer trusted */
	TAILQ_HEAD(, os_held) held;
	uint64_t gen;
	struct os_ocache rcache;
	struct os_dcache dcache;
	TAILQ_HEAD(, os_rd) reads;
	uint64_t commit_gen;
	/*
	 * Journal mode: a round is called back once its record is durable,
	 * while the commit thread puts it into the memtable (ack_durable in
	 * txn.c). Reads that go to RocksDB first wait until it has every round
	 * called back before they began: kv_acked counts those rounds (set on
	 * the reactor), kv_done the ones in the memtable (set by the commit
	 * thread, under kv_mu); worker threads wait on kv_cv (os_kv_wait),
	 * onode fetches on the reactor in fetch_wait. kv_broken: a memtable
	 * insert failed (the store refuses transactions; such reads fail).
	 */
	pthread_mutex_t kv_mu;
	pthread_cond_t kv_cv;
	uint64_t kv_acked, kv_done;
	uint64_t kv_ack_seq; /* reactor: numbers rounds to be called back early (os_round.ack_no) */
	bool kv_broken;
	bool dfr_hold; /* ack_durable: deferred writes wait until the next record is out */
	TAILQ_HEAD(, os_rd) fetch_wait;
	uint32_t test_kv_delay_us;
	uint32_t test_kv_fail_txn,
		test_kv_txns; /* os_opts.test_kv_fail_txn; commit thread's count */
	/*
	 * Journal records are written with RWF_DSYNC instead of write + fsync:
	 * only where that write is followed by a flush of the whole device cache
	 * (no FUA: the kernel flushes after it; or no volatile cache), so it
	 * makes every write that completed before it durable, as the fsync did.
	 * A FUA write would make only itself durable (os_dsync_flushes_all).
	 */
	bool dsync;
	/* counters */
	uint64_t c_csum_errors, c_deferred, c_cow, c_commits, c_groups, c_csum_reused;
	uint64_t c_jdsync;
	uint64_t c_fsyncs, c_fsync_ns, c_kv_ns, c_kv_sync_ns, c_kv_fn_ns, c_prep_ns;
	uint64_t c_prep_inline, c_prep_retry; /* prepared on the reactor; given up there */
	uint64_t c_jbytes, c_jflushes, c_jwaits, c_jseals;
	uint64_t c_gate_waits; /* atomic: workers and the reactor */
};

/* Pending map. */
uint64_t os_pend_add(struct os_store *s, uint64_t pblock, uint64_t n, struct cm_buf *buf,
		     size_t off);
void os_pend_del(struct os_store *s, uint64_t pblock, uint64_t n, uint64_t tag);
/* Copy the pending content of pblock into dst. \return true if there was one. */
bool os_pend_copy(struct os_store *s, uint64_t pblock, void *dst);

void os_prepare(void *arg); /* work fn: os_txn */
/*
 * Prepare on the calling (reactor) thread without blocking: -EAGAIN (and
 * nothing of it done) when it would read the disk — an onode or block not
 * cached, an omap iteration; the caller then uses os_prepare on the
 * prepare thread. Only when no transaction is being prepared there.
 */
int os_prepare_nb(struct os_txn *t);
void os_store_free(struct os_store *s);
/* Run the reactor until nothing is queued, in flight or waiting to be applied. */
void os_drain(struct os_store *s);
int os_load_onode(struct os_store *s, const char *key, size_t klen, struct os_onode **op);
void os_read_gate_release(struct os_store *s);
/*
 * Wait until RocksDB has every transaction acknowledged so far (journal
 * mode acknowledges before the memtable insert). Worker threads, before a
 * RocksDB read. \return 0, or -EIO if a memtable insert failed.
 */
int os_kv_wait(struct os_store *s);
/* Reactor: onode fetches that waited for the memtable go on (read.c). */
void os_fetch_release(struct os_store *s);
uint64_t os_hash(const void *p, size_t n);
/*
 * Mount's reading of the label in block (4096 bytes) and its checks against
 * o (path, fsid, osd_id) and the device's size in bytes (store.c); no I/O.
 * \return 0 with *nblocks, *data_start the geometry mount takes from it,
 * -ENODATA (not a store), -EINVAL (damaged, or not this device's or
 * cluster's). The fuzz target's entry.
 */
int os__label_check(const uint8_t *block, const struct os_opts *o, uint64_t size, uint64_t *nblocks,
		    uint64_t *data_start);

/* ---- the journal (journal.c) ---- */

#define OS_JNL_DEPTH OS_JOURNAL_DEPTH /* osd/store.h */

/*
 * Check a journal record read from the device (b, len bytes): header,
 * sequence, nonce, length, crc (when check_crc), and the framing of its
 * batches and its data manifest; call cb (if set) with each batch, then mcb
 * (if set) with each manifest run (n blocks from pblock, n crc32c little
 * endian), stopping at a non-zero return. \return 0, -EBADMSG (not this
 * record, or damaged), -EUCLEAN (bad framing), or the callback's value.
 * Pure: the fuzz target's entry.
 */
int os_jnl_record_parse(const uint8_t *b, size_t len, uint32_t nonce, uint64_t seq, bool check_crc,
			int (*cb)(void *arg, const uint8_t *batch, size_t blen),
			int (*mcb)(void *arg, uint64_t pblock, uint32_t n, const uint8_t *crcs),
			void *arg);
/* mkfs: the journal's superblocks for an empty journal (on a file: the area written once). */
int os_jnl_format(int fd, uint32_t B, uint64_t jstart, uint64_t jblocks, const char *uuid);
/* mount: replay the records after the trim point into RocksDB, flush, trim. Blocking. */
int os_jnl_mount(struct os_store *s);
/*
 * Flush RocksDB and trim the whole journal (umount; before a transaction too
 * big for a record goes through RocksDB's WAL). Blocking; no record may be
 * in flight.
 */
int os_jnl_checkpoint(struct os_store *s);
/* Bytes a transaction's batch takes in a record; the most one may take. */
size_t os_jnl_txn_bytes(const struct os_txn *t);
size_t os_jnl_round_max(const struct os_store *s);
/*
 * Build rd's record (retire batch, its transactions' batches, the manifest of
 * their copy-on-write blocks) and place it. \return 0, or -EAGAIN: no room
 * until a flush trims (one is started); nothing changed.
 */
int os_jnl_place(struct os_store *s, struct os_round *rd);
/* Start the record's write; then the device fsync; then done(rd, res). */
void os_jnl_write(struct os_store *s, struct os_round *rd, void (*done)(struct cm_io *, int));
/* A round is in the memtable: maybe flush RocksDB and trim. */
void os_jnl_applied(struct os_store *s, struct os_round *rd);
void os_jnl_maybe_flush(struct os_store *s);
/* How long the store is idle before the newest data record is sealed (journal.c). */
#define OS_JNL_SEAL_MS 200
/* A round waits for small copy-on-write writes in flight behind it (txn.c, gather). */
#define OS_GATHER_MAX   32u
#define OS_GATHER_BYTES (64u << 10)
#define OS_GATHER_NS    1000000u
/* Form and start commit rounds (txn.c). */
void os_kick_commit(struct os_store *s);
/* A write batch for a transaction: from the store's pool of cleared ones, or new. */
rocksdb_writebatch_t *os_wb_get(struct os_store *s);

/* Free what one recorded op holds (txn_ops.c). */
void os_op_free(struct os_op *op);

#endif
