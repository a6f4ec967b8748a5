/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OSD's object store: objects (bytes, xattrs, omap) in collections, on
 * one device or preallocated file, crash-consistent. See
 * docs/design/store.md for the layout and the crash model.
 *
 * Data lives on the device in blocks (block_size, default 4 KiB, which is
 * both the allocation unit and the checksum block); metadata (onodes with
 * extent maps and per-block crc32c, xattrs, omap, collections, deferred
 * writes) lives in RocksDB at db_path. A transaction is atomic: after any
 * crash it is either wholly there or wholly absent; it is durable when its
 * callback reports 0.
 *
 * Threading: a store belongs to one reactor, where its device I/O and
 * transaction pipeline run; os_umount is called on it. os_queue and os_read
 * may be called on any reactor's thread (an OSD's shards): they call back
 * on the caller's reactor, and one caller's transactions and reads reach
 * the store in the order it made them. The metadata
 * reads (os_stat ... os_list) block on RocksDB: call them from a worker
 * thread (or a tool), never from a reactor. Device I/O of writes and reads
 * goes through the reactor (io_uring, or the epoll backend's workers).
 */
#ifndef OS_STORE_H
#define OS_STORE_H

#include "cm/buf.h"
#include "cm/reactor.h"

#define OS_NAME_MAX 4608 /* collection and object names: 1..OS_NAME_MAX bytes, no NUL */

/*
 * Journal records whose write and fsync may be in flight at once. A record
 * is written only once the one OS_JOURNAL_DEPTH before it is durable, so
 * after a crash a damaged record may be followed by up to OS_JOURNAL_DEPTH
 * - 1 good ones (never acknowledged); one further means damage. One: on
 * this project's VM two in flight made rounds smaller without making the
 * device's flushes faster (bench/store 4 KiB writes the same, bench/cluster
 * 4 KiB writes 8,610-9,045 IOPS vs 9,103-10,873 with one; docs/design/
 * store.md "Journal").
 */
#define OS_JOURNAL_DEPTH 1

struct os_store;
struct os_txn;

struct os_opts {
	size_t opts_size;
	const char *path;      /* device or preallocated file */
	const char *db_path;   /* RocksDB directory; NULL: "<path>.db" (files; devices need one) */
	uint32_t block_size;   /* allocation and checksum unit; default 4096 */
	uint64_t deferred_max; /* overwrites of allocated blocks up to this go via the KV; 64 KiB */
	uint64_t reserve; /* bytes kept free for metadata-only work; default 1% (1 MiB..1 GiB) */
	uint64_t cache_onodes;     /* onodes cached for reads; default 65536 */
	uint64_t cache_data;       /* bytes of device blocks cached for reads; default 64 MiB */
	bool no_direct;            /* buffered I/O (for filesystems without O_DIRECT) */
	bool no_inline_prepare;    /* always prepare on the store's thread (see store.md) */
	bool no_dsync;             /* every journal record written, then fsynced (A/B, tests) */
	uint32_t test_kv_delay_us; /* tests: the commit thread sleeps this long before putting a
				    * journaled round into the memtable (reads must still see
				    * every acknowledged transaction) */
	uint32_t test_kv_fail_txn; /* tests: the memtable insert of the Nth journaled transaction
				    * since mount fails, as a RocksDB error would (0: none) */
	/* mkfs */
	const char *fsid;
	int32_t osd_id;
	uint64_t journal_size; /* bytes of the device for the journal; 0: 1/64, 4..128 MiB (none
				* on devices under 64 MiB) */
	bool no_journal;       /* commits durable through RocksDB's WAL instead (store.md) */
	/*
	 * Mount for fsck: refcount records that disagree with the onodes (or do
	 * not decode) are left for os_fsck to report instead of refusing the
	 * mount (a count too low) or being corrected (too high). repair: mount
	 * rewrites them all from the onodes (and drops bad ones).
	 */
	bool fsck_mount, repair;
};

void os_opts_init(struct os_opts *o, size_t size);

/*
 * Write the label (block 0: magic, uuid, fsid, osd id, size) and create the
 * metadata. \return 0, -EEXIST (already a store), -EINVAL (too small,
 * bad block size, a block device without db_path), or an errno.
 */
int os_mkfs(const struct os_opts *o);

/*
 * Open, check the label against the device, the metadata, and (when set in
 * o) the cluster fsid and OSD id, replay
 * deferred writes, rebuild the allocator. Blocking. \return 0, -EINVAL (not
 * a store, another store's metadata, a device smaller than its label says,
 * a block device without db_path: err logged), or an errno.
 */
int os_mount(struct cm_reactor *r, const struct os_opts *o, struct os_store **sp);

/* The store's uuid (made by mkfs; the OSD's identity towards the mons). */
const char *os_uuid(const struct os_store *s);

/* Wait for queued transactions and deferred writes, then close. Runs the reactor. */
void os_umount(struct os_store *s);

/* ---- transactions ---- */

int os_txn_create(struct os_txn **tp);
void os_txn_destroy(struct os_txn *t);

/* Each records one op (0 or -ENOMEM; -EINVAL for a bad name or range). Data is copied. */
int os_txn_mkcoll(struct os_txn *t, const char *cid);
int os_txn_rmcoll(struct os_txn *t, const char *cid);
int os_txn_touch(struct os_txn *t, const char *cid, const char *oid);
int os_txn_write(struct os_txn *t, const char *cid, const char *oid, uint64_t off, const void *data,
		 size_t len);
/*
 * The same without a copy: the transaction takes a reference on buf and
 * writes buf->data[boff, boff + len). Block-aligned writes from a 4 KiB
 * aligned buffer go to the device straight from it.
 */
int os_txn_write_buf(struct os_txn *t, const char *cid, const char *oid, uint64_t off,
		     struct cm_buf *buf, size_t boff, size_t len);
int os_txn_zero(struct os_txn *t, const char *cid, const char *oid, uint64_t off, uint64_t len);
int os_txn_truncate(struct os_txn *t, const char *cid, const char *oid, uint64_t size);
int os_txn_remove(struct os_txn *t, const char *cid, const char *oid);
/*
 * clone: dst becomes a new object with src's data, attributes, omap header
 * and omap. The data blocks are shared by reference (counted in "R"
 * records), never copied: a later write to either copies the blocks it
 * touches. clone_range copies bytes.
 */
int os_txn_clone(struct os_txn *t, const char *cid, const char *src, const char *dst);
int os_txn_clone_range(struct os_txn *t, const char *cid, const char *src, uint64_t src_off,
		       uint64_t len, const char *dst, uint64_t dst_off);
/*
 * Rollback support (EC overwrites; for objects without omap: neither copies
 * omap entries). stash: dst becomes a new object with src's size,
 * attributes and omap header, and src's bytes of the blocks [off, off + len)
 * touches (outside them holes), shared by reference: no data is copied,
 * and src's blocks are copied on their next write. unstash: dst (made if
 * missing) takes the stash's
 * attributes, omap header and size and its bytes of [off, off + len),
 * keeping its own elsewhere; the stash is removed.
 * rename: src's object becomes dst (replacing it), without copying data.
 * remove_any: remove oid if it exists.
 */
int os_txn_stash(struct os_txn *t, const char *cid, const char *src, const char *dst, uint64_t off,
		 uint64_t len);
int os_txn_unstash(struct os_txn *t, const char *cid, const char *stash, const char *dst,
		   uint64_t off, uint64_t len);
int os_txn_rename(struct os_txn *t, const char *cid, const char *src, const char *dst);
/*
 * move: src of collection cid becomes dst of collection dst_cid (which must
 * exist, or be made earlier in t), replacing it: data, attributes, omap
 * header and omap go along without a copy (what a PG split moves its
 * objects with). -EINVAL for the same object.
 */
int os_txn_move(struct os_txn *t, const char *cid, const char *src, const char *dst_cid,
		const char *dst);
int os_txn_remove_any(struct os_txn *t, const char *cid, const char *oid);
int os_txn_setattr(struct os_txn *t, const char *cid, const char *oid, const char *name,
		   const void *val, size_t len);
int os_txn_rmattr(struct os_txn *t, const char *cid, const char *oid, const char *name);
int os_txn_omap_set(struct os_txn *t, const char *cid, const char *oid, const void *key,
		    size_t klen, const void *val, size_t vlen);
int os_txn_omap_rm(struct os_txn *t, const char *cid, const char *oid, const void *key,
		   size_t klen);
/* Remove keys in [first, last). */
int os_txn_omap_rm_range(struct os_txn *t, const char *cid, const char *oid, const void *first,
			 size_t flen, const void *last, size_t llen);
int os_txn_omap_clear(struct os_txn *t, const char *cid, const char *oid);
int os_txn_omap_set_header(struct os_txn *t, const char *cid, const char *oid, const void *val,
			   size_t len);

typedef void (*os_commit_cb)(void *arg, int rc);

/*
 * Apply t (the store takes it). Transactions commit in the order queued.
 * cb(arg, rc): 0 durable; -ENOENT (a collection or, for remove/clone/rmattr,
 * an object missing), -EEXIST (mkcoll of an existing one), -ENOTEMPTY
 * (rmcoll of a non-empty one), -ENOSPC (device full; nothing changed),
 * -EIO (a block to merge failed its checksum), -EFBIG (beyond 2^48 bytes).
 * On any error nothing of t is applied.
 */
void os_queue(struct os_store *s, struct os_txn *t, os_commit_cb cb, void *arg);

/* ---- reads ---- */

/*
 * Read [off, off + len) as committed. cb(arg, rc, data): rc 0 with data
 * (the caller takes the reference; shorter at the end of the object, holes
 * as zeros), -ENOENT, -EIO (a block failed its checksum: logged with object
 * and offset, counted; never wrong bytes). cb may run before os_read
 * returns (onode and blocks cached, or -ENOENT): a caller that reads again
 * from cb should not loop without bound.
 */
typedef void (*os_read_cb)(void *arg, int rc, struct cm_buf *data);
void os_read(struct os_store *s, const char *cid, const char *oid, uint64_t off, uint64_t len,
	     os_read_cb cb, void *arg);

/*
 * The same, and from the same state of the object: its size and the value
 * of its xattr attr (when not NULL), so a reader needs no metadata read of
 * its own. m is valid during the callback; with rc != 0 it is all zeros.
 */
struct os_read_meta {
	uint64_t size;
	bool has_attr;
	const uint8_t *attr; /* has_attr: its value */
	size_t attr_len;
};

typedef void (*os_read_meta_cb)(void *arg, int rc, struct cm_buf *data,
				const struct os_read_meta *m);
void os_read_meta(struct os_store *s, const char *cid, const char *oid, uint64_t off, uint64_t len,
		  const char *attr, os_read_meta_cb cb, void *arg);

struct os_stat {
	uint64_t size, version, nid;
	uint32_t nattrs;
};

struct os_kv {
	uint8_t *key;
	size_t klen;
	uint8_t *val;
	size_t vlen;
};

void os_kvs_free(struct os_kv *kv, size_t n);

/* Blocking metadata reads (worker threads). \return 0, -ENOENT, -EIO (RocksDB), -ENOMEM. */
int os_stat(struct os_store *s, const char *cid, const char *oid, struct os_stat *st);
int os_getattr(struct os_store *s, const char *cid, const char *oid, const char *name,
	       struct os_kv *out);
int os_getattrs(struct os_store *s, const char *cid, const char *oid, struct os_kv **kvs,
		size_t *n);
int os_omap_get_header(struct os_store *s, const char *cid, const char *oid, struct os_kv *out);
/* Values of keys that exist (out[i].val NULL for a missing one). */
int os_omap_get(struct os_store *s, const char *cid, const char *oid, const struct os_kv *keys,
		size_t nkeys, struct os_kv *out);
/* Up to max keys > start_after (NULL: from the first) starting with prefix (may be NULL). */
int os_omap_iterate(struct os_store *s, const char *cid, const char *oid, const void *start_after,
		    size_t salen, const void *prefix, size_t plen, unsigned max, struct os_kv **kvs,
		    size_t *n, bool *more);
/* Objects of a collection in byte order of their names, after start_after (NULL: first). */
int os_list(struct os_store *s, const char *cid, const char *start_after, unsigned max,
	    char ***oids, size_t *n, bool *more);
int os_list_collections(struct os_store *s, char ***cids, size_t *n);
/*
 * The objects of a collection and the sum of their sizes, as of the
 * transactions queued so far (kept in memory: counted at mount, changed by
 * every transaction). Any thread. \return 0 or -ENOENT.
 */
int os_coll_stat(struct os_store *s, const char *cid, uint64_t *objects, uint64_t *bytes);
void os_names_free(char **names, size_t n);

/* ---- checking ---- */

struct os_fsck_report {
	uint64_t collections, objects, extents, blocks_used, omap_keys;
	uint64_t shards;        /* extent map shard records (large objects) */
	uint64_t shared_blocks; /* blocks mapped by more than one extent (clones) */
	uint64_t errors;        /* all problems found */
	uint64_t csum_errors;   /* deep: blocks whose data fails its crc */
	char first_error[320];
};

/*
 * Check a mounted, idle store: every extent inside the device, each block
 * mapped by one extent or by as many as its refcount record (and the
 * store's count in memory) says, the allocator's in-use set equal to the
 * extents, onodes
 * decodable and sorted, extent map shards owned by live sharded objects
 * and inside their shard, omap keys owned by live objects, objects in
 * existing collections; deep: every block read and its crc verified (bad
 * ones reported with object and offset). Call on the store's reactor
 * thread: it first runs the reactor until queued work and deferred writes
 * are done, then checks (blocking). \return 0 (see errors).
 */
int os_fsck(struct os_store *s, bool deep, struct os_fsck_report *rep);

struct os_usage {
	uint64_t total_bytes, free_bytes, reserved_bytes;
	uint64_t csum_errors; /* reads refused for a bad block since mount */
	uint64_t deferred_writes, cow_writes, commits, commit_groups;
	uint64_t fsyncs, fsync_ns, kv_commit_ns; /* time spent syncing the device and the KV;
						  * fsync_ns includes journal_dsync writes */
	uint64_t kv_sync_ns;                     /* of which in the last, synced, KV write */
	uint64_t kv_fn_ns;                       /* on the commit thread in all */
	uint64_t prepare_ns;                     /* preparing transactions */
	uint64_t prepared_inline;                /* of them on the reactor */
	uint64_t prepare_retries; /* started there, needed the disk: on the prepare thread */
	uint64_t cache_hits, cache_misses; /* data cache lookups of blocks read */
	uint64_t cache_bytes;              /* data cache: bytes held now */
	uint64_t journal_size;             /* bytes of the device for the journal (0: none) */
	uint64_t journal_bytes;            /* bytes of records written */
	uint64_t journal_flushes;          /* RocksDB flushes that trimmed it */
	uint64_t journal_waits;            /* rounds that waited for room */
	uint64_t journal_seals;            /* empty records after the last data one, when idle */
	uint64_t journal_dsync;            /* records durable by their own write (no fsync) */
	uint64_t kv_gate_waits; /* reads that waited for the memtable to have acknowledged rounds */
};

void os_get_usage(struct os_store *s, struct os_usage *u);

#endif
