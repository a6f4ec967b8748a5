/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcairn: the client of a Cairn cluster's object layer.
 *
 * Objects live in pools; each object has bytes, xattrs and (in replicated
 * pools) an omap of sorted keys. The client computes where an object lives
 * from the cluster map (CRUSH) and talks to the object's primary OSD
 * directly; no lookup service is on the data path.
 *
 * Handles. cairn_connect() returns a cluster handle: background io threads
 * (one by default, cairn_opts.io_threads), each with its own event loop,
 * sessions with the OSDs and a copy of the current map; the first also
 * talks to the monitors. cairn_ioctx_t names a pool. cairn_op_t is a compound
 * op: any number of sub-ops applied to one object atomically (all or
 * nothing; guards first). cairn_completion_t reports an async op's end.
 *
 * Threading. Every function may be called from any thread; handles may be
 * shared, except that one cairn_op_t is built and submitted by one thread
 * at a time. Completion callbacks run on an io thread (the one of the op's
 * object; with several io threads, callbacks of different objects' ops may
 * run at the same time): keep them short and never wait in them for
 * another op. Ops on one object are sent in the order they were submitted
 * from one thread, whatever the number of io threads.
 *
 * Ownership. Buffers given to write sub-ops are not copied: they must stay
 * valid until the op completes. Output pointers given to read sub-ops are
 * filled before the op completes. Arrays returned as struct cairn_kv are the
 * caller's (cairn_kvs_free); names from cairn_list are freed with
 * cairn_names_free.
 *
 * Errors. Functions return 0 or a negative errno:
 *   -ENOENT      no such object (or pool)
 *   -EEXIST      exclusive create of an existing object
 *   -ENODATA     no such xattr
 *   -ERANGE      assert-version failed (or a getxattr buffer is too small)
 *   -ECANCELED   cmpxattr failed
 *   -ENAMETOOLONG, -EINVAL  bad names or arguments
 *   -E2BIG       one op writes or reads more than 64 MiB in all (CAIRN_MAX_IO:
 *                the messenger's message limit), or reads to the end of an
 *                object larger than that: nothing was done; use ranges
 *   -ETIMEDOUT   no answer within the op timeout (the op may or may not
 *                have been applied; a resend of the same op is safe)
 *   -ENOTCONN    no monitor answered at connect
 *   -ENOSPC      the cluster is full
 *   -EKEYREVOKED this client is blocklisted (fenced): nothing it sends is
 *                applied any more (see "fencing")
 *   -EPERM       the client's caps do not allow it (this pool or namespace,
 *                a write with read-only caps, a map change without mon w):
 *                nothing was done; also every op once the client's entity
 *                was removed (auth rm). Caps changed with auth caps apply
 *                from the client's next op (docs/design/auth.md)
 * Ops are resent automatically when the map changes where they go; the
 * primary recognises a resend and never applies it twice.
 */
#ifndef CAIRN_H
#define CAIRN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cairn_cluster cairn_cluster_t;
typedef struct cairn_ioctx cairn_ioctx_t;
typedef struct cairn_op cairn_op_t;
typedef struct cairn_completion cairn_completion_t;

/*
 * Object names: 1..CAIRN_NAME_MAX bytes, any bytes but NUL, not starting
 * with \x01 or \x02. Namespaces: 0..CAIRN_NS_MAX bytes, locator keys
 * 0..CAIRN_KEY_MAX, neither holding \x1f ("" is the default namespace, and
 * no key). Longer: -ENAMETOOLONG; otherwise refused: -EINVAL.
 */
#define CAIRN_NAME_MAX 2048
#define CAIRN_NS_MAX   256
#define CAIRN_KEY_MAX  2048
/* The most one op may write or read in all (the messenger's message limit): more is -E2BIG. */
#define CAIRN_MAX_IO (64u << 20)

struct cairn_version {
	uint64_t epoch, seq;
};

struct cairn_kv {
	void *key;
	size_t klen;
	void *val;
	size_t vlen;
};

void cairn_kvs_free(struct cairn_kv *kvs, size_t n);

struct cairn_opts {
	size_t opts_size;
	const char *conf_file;   /* a cairn.conf ([global] mon_host, cluster_key); may be NULL */
	const char *mon_host;    /* overrides the file: "a=127.0.0.1:6789,..." */
	const char *cluster_key; /* overrides the file */
	unsigned op_timeout_ms;  /* per op; default 0: none -- an op waits through OSD
				  * failures and peering, resent to the new primary */
	unsigned connect_timeout_ms; /* for the first map; default 10000 */
	const char *log_level;       /* "err" (default), "warn", "notice", "info", "debug" */
	/*
	 * The throttle: ops (and their bytes written plus bytes asked for)
	 * in flight at once, 0: 1024 ops, 256 MiB. A submission that would
	 * pass either waits for room (or fails with -EAGAIN under
	 * CAIRN_AIO_NOWAIT); one op alone always fits. Ops submitted from a
	 * callback (an io thread) never wait: they are counted.
	 */
	unsigned max_ops_in_flight;
	uint64_t max_bytes_in_flight;
	/*
	 * Who the client is (docs/design/auth.md): the entity whose key it
	 * proves (default client.admin), and the key: key (base64) wins over
	 * keyring (a file of mode 0600); without either, a conf's cluster_key
	 * stands for client.admin's. Each overrides the file's name, keyring
	 * and key.
	 */
	const char *name;
	const char *keyring;
	const char *key;
	/*
	 * Sessions with OSDs: by default one per OSD (at its first address;
	 * an OSD that runs several PG shards hands each op to the shard that
	 * serves its PG). true: one per PG shard (at the shard's own address,
	 * as the map lists them): no hop between the OSD's threads, but
	 * `shards` times as many connections.
	 */
	bool shard_sessions;
	/*
	 * Io threads (0: one; at most 64). Each runs its own event loop,
	 * sessions (one per OSD each) and map copy; an object's ops go to
	 * thread (its placement hash) % io_threads, so they keep their order,
	 * and callbacks of different objects run in parallel. With a power of
	 * two equal to the OSDs' PG shards (and pg_num at least that), thread
	 * k's ops are for PGs of seed k mod n and its sessions land on each
	 * OSD's shard k: no op hops between an OSD's threads. More threads
	 * help a caller whose callbacks, or the client's own CPU, are the
	 * limit; on a machine whose cores the OSDs use, they do not.
	 * (64 bits wide so that it starts past the tail padding of the
	 * struct before it: opts_size tells an older caller's apart.)
	 */
	uint64_t io_threads;
};

void cairn_opts_init(struct cairn_opts *o, size_t size);

/*
 * Connect: read the config, start the io threads, wait for the first
 * map and a ticket for the OSDs. \return 0; -EINVAL (bad config, or no key
 * for the name: err says what), -EPERM (the monitors refused the entity:
 * an unknown name, a wrong key, or no ticket for it; err says which),
 * -ENOTCONN (no map in time), -ENOMEM.
 */
int cairn_connect(const struct cairn_opts *o, cairn_cluster_t **clp, char *err, size_t errlen);

/*
 * Stop the io threads and free. Every op submitted before completes:
 * those still in flight (or not yet sent) with -ESHUTDOWN, their callbacks
 * run before this returns (on an io thread or on this one). No other
 * call on cl, its ioctxs or streams may run (or wait in the throttle)
 * while this runs, or start after.
 */
void cairn_shutdown(cairn_cluster_t *cl);

/* The map epoch the client holds. */
uint64_t cairn_map_epoch(cairn_cluster_t *cl);

/* \return 0, -ENOENT (no such pool in the current map), -ENOMEM. */
int cairn_ioctx_create(cairn_cluster_t *cl, const char *pool, cairn_ioctx_t **iop);
void cairn_ioctx_destroy(cairn_ioctx_t *io);

/*
 * The namespace of the io's objects from now on (NULL or "": the default
 * one). One name in two namespaces is two objects; a listing shows one
 * namespace (or all, cairn_list_objs). Namespaces need no creating. Not
 * to be called while another thread submits on the same io. \return 0,
 * -EINVAL, -ENAMETOOLONG.
 */
int cairn_ioctx_set_namespace(cairn_ioctx_t *io, const char *nspace);
const char *cairn_ioctx_get_namespace(const cairn_ioctx_t *io);

/*
 * The locator key of the io's objects from now on (NULL or "": none):
 * objects are placed by the key instead of their name, so objects sharing a
 * key (in one namespace) share a PG, and so its OSDs. It is part of the
 * object's identity: the same name with another key is another object.
 * \return 0, -EINVAL, -ENAMETOOLONG.
 */
int cairn_ioctx_set_locator_key(cairn_ioctx_t *io, const char *key);

/* ---- compound ops ---- */

cairn_op_t *cairn_op_create(void);
void cairn_op_release(cairn_op_t *op);

/* Writes (the object is created if it does not exist). */
void cairn_op_write(cairn_op_t *op, uint64_t off, const void *buf, size_t len);
void cairn_op_write_full(cairn_op_t *op, const void *buf, size_t len);
void cairn_op_append(cairn_op_t *op, const void *buf, size_t len);
void cairn_op_truncate(cairn_op_t *op, uint64_t size);
void cairn_op_zero(cairn_op_t *op, uint64_t off, uint64_t len);
void cairn_op_remove(cairn_op_t *op);
void cairn_op_create_object(cairn_op_t *op, bool exclusive);
void cairn_op_setxattr(cairn_op_t *op, const char *name, const void *val, size_t len);
void cairn_op_rmxattr(cairn_op_t *op, const char *name);
/* Consecutive calls of one kind join one sub-op. Keys and values are copied. */
void cairn_op_omap_set(cairn_op_t *op, const void *key, size_t klen, const void *val, size_t vlen);
void cairn_op_omap_rm(cairn_op_t *op, const void *key, size_t klen);
void cairn_op_omap_rm_range(cairn_op_t *op, const void *first, size_t flen, const void *last,
			    size_t llen);
void cairn_op_omap_clear(cairn_op_t *op);
void cairn_op_omap_set_header(cairn_op_t *op, const void *val, size_t len);

/* Guards: checked before anything is written; a failure fails the whole op. */
void cairn_op_assert_exists(cairn_op_t *op);
void cairn_op_assert_version(cairn_op_t *op, const struct cairn_version *v);

enum cairn_cmp {
	CAIRN_CMP_EQ = 1,
	CAIRN_CMP_NE,
	CAIRN_CMP_GT, /* the stored value is greater, bytewise */
	CAIRN_CMP_GE,
	CAIRN_CMP_LT,
	CAIRN_CMP_LE,
	CAIRN_CMP_ABSENT, /* the xattr does not exist */
};

void cairn_op_cmpxattr(cairn_op_t *op, const char *name, enum cairn_cmp cmp, const void *val,
		       size_t len);
/*
 * -ECANCELED unless the object's bytes at [off, off + len) equal buf's (bytes
 * past its end compare as zeros; -ENOENT if it does not exist); *mismatch
 * (may be NULL) then gets the offset from off of the first that differs.
 * buf is copied into the op's message at submit and must live until then.
 * Works on replicated and erasure-coded pools. len counts against both the
 * op's data and its reads (at most 64 MiB each).
 */
void cairn_op_cmpext(cairn_op_t *op, uint64_t off, const void *buf, size_t len, uint64_t *mismatch,
		     int *rval);

/*
 * -ECANCELED unless omap key's value cmp val holds (CAIRN_CMP_ABSENT: the key
 * does not exist; -ENOENT if the object does not, but for ABSENT). With
 * cairn_op_omap_set after it, a compare-and-swap in one round trip.
 * Consecutive calls with one cmp join one sub-op (all must hold).
 * Replicated pools only (-EOPNOTSUPP on erasure-coded ones).
 */
void cairn_op_omap_cmp(cairn_op_t *op, const void *key, size_t klen, enum cairn_cmp cmp,
		       const void *val, size_t vlen);

/*
 * Counters kept by the OSD, in one round trip: the value of xattr name (or
 * of omap key: replicated pools only) is an int64, 8 bytes little-endian,
 * and an absent one counts as 0 (the object is created if needed). It
 * becomes old + num (ADD), num (SET), or the larger (MAX) or smaller (MIN)
 * of old and num; *result (may be NULL) gets the new value. rval (and the
 * op): -EOVERFLOW past the int64 range or outside the bounds of
 * cairn_op_num_bounds (nothing is written), -EINVAL if the stored value is
 * not 8 bytes. Several on one counter in one op apply in order. A resend
 * (after a failover) of an op that was applied gets the same results, and
 * nothing is applied twice. At most 16 in one op (-E2BIG).
 */
enum cairn_num_op {
	CAIRN_NUM_ADD = 1,
	CAIRN_NUM_SET,
	CAIRN_NUM_MAX,
	CAIRN_NUM_MIN,
};

void cairn_op_xattr_num(cairn_op_t *op, const char *name, enum cairn_num_op nop, int64_t num,
			int64_t *result, int *rval);
void cairn_op_omap_num(cairn_op_t *op, const void *key, size_t klen, enum cairn_num_op nop,
		       int64_t num, int64_t *result, int *rval);
/* The op's last counter fails with -EOVERFLOW unless min <= its new value <= max. */
void cairn_op_num_bounds(cairn_op_t *op, int64_t min, int64_t max);

/*
 * Reads (they see the object as it was before the op's writes). rval, when
 * not NULL, gets the sub-op's own result.
 */
void cairn_op_read(cairn_op_t *op, uint64_t off, size_t len, void *buf, size_t *bytes_read,
		   int *rval);
void cairn_op_stat(cairn_op_t *op, uint64_t *size, struct cairn_version *ver, int *rval);
/* *len gets the value's length; -ERANGE in rval when buflen is too small. */
void cairn_op_getxattr(cairn_op_t *op, const char *name, void *buf, size_t buflen, size_t *len,
		       int *rval);
void cairn_op_getxattrs(cairn_op_t *op, struct cairn_kv **kvs, size_t *n, int *rval);
/* The values of those keys that exist. */
void cairn_op_omap_get(cairn_op_t *op, const struct cairn_kv *keys, size_t nkeys,
		       struct cairn_kv **kvs, size_t *n, int *rval);
/* Up to max keys after start_after (NULL: from the first) with prefix (NULL: any). */
void cairn_op_omap_list(cairn_op_t *op, const void *start_after, size_t salen, const void *prefix,
			size_t plen, unsigned max, struct cairn_kv **kvs, size_t *n, bool *more,
			int *rval);
void cairn_op_omap_get_header(cairn_op_t *op, struct cairn_kv *header, int *rval);

/*
 * Run op on object oid and wait. \return 0 or the first failing sub-op's
 * error; *ver (may be NULL) gets the version the op wrote, or the object's
 * version for a read-only op.
 */
int cairn_operate(cairn_ioctx_t *io, const char *oid, cairn_op_t *op, struct cairn_version *ver);

typedef void (*cairn_callback_t)(cairn_completion_t *c, void *arg);

/* cb may be NULL (then wait). \return NULL when out of memory. */
cairn_completion_t *cairn_completion_create(cairn_callback_t cb, void *arg);
/*
 * Let go of c. Allowed at any time, also inside its callback and while its
 * op is in flight: the op then runs on, the callback still runs, and c is
 * freed after it. After release, c must not be used (waited on, asked, or
 * given to another op). One completion serves one op.
 */
void cairn_completion_release(cairn_completion_t *c);
/* Block until the op completed. \return its result. */
int cairn_completion_wait(cairn_completion_t *c);
bool cairn_completion_done(cairn_completion_t *c);
int cairn_completion_rc(cairn_completion_t *c);
struct cairn_version cairn_completion_version(cairn_completion_t *c);

/*
 * Completion queues, for a caller with its own event loop: a queue's
 * completions run no callback; each one that ends is put on the queue and
 * the queue's fd (an eventfd) becomes readable until every ended one is
 * reaped. Poll the fd, then cairn_cq_reap, then read each completion
 * (cairn_completion_rc, cairn_completion_arg) and release it. Reaping and
 * releasing may happen on any thread.
 */
typedef struct cairn_cq cairn_cq_t;

/* \return 0, -ENOMEM, or eventfd's error. */
int cairn_cq_create(cairn_cq_t **cqp);
/* Readable (POLLIN) while ended completions wait to be reaped; never read it yourself. */
int cairn_cq_fd(cairn_cq_t *cq);
/* A completion that ends onto cq (arg: the caller's). \return NULL when out of memory. */
cairn_completion_t *cairn_completion_create_cq(cairn_cq_t *cq, void *arg);
/* The arg given at creation. */
void *cairn_completion_arg(cairn_completion_t *c);
/* Up to max ended completions, oldest first, without waiting. \return how many. */
size_t cairn_cq_reap(cairn_cq_t *cq, cairn_completion_t **out, size_t max);
/*
 * Free cq. \return 0; -EBUSY (nothing freed) while completions of it are
 * not released (in flight, or ended and not reaped and released).
 */
int cairn_cq_destroy(cairn_cq_t *cq);

/*
 * Start op; c completes it. op must live until then. \return 0,
 * -EINVAL/-ENOMEM, or -EAGAIN (CAIRN_AIO_NOWAIT and the client's throttle
 * is full: see cairn_opts.max_ops_in_flight).
 */
int cairn_aio_operate(cairn_ioctx_t *io, const char *oid, cairn_op_t *op, cairn_completion_t *c);

/* Per-op settings (zero: the defaults); set opts_size to sizeof. */
struct cairn_aio_opts {
	size_t opts_size;
	unsigned timeout_ms; /* this op fails with -ETIMEDOUT after this long (0: the
			      * client's op_timeout_ms; none by default) */
	unsigned flags;      /* CAIRN_AIO_* */
};

enum {
	/* When the throttle is full: -EAGAIN at once instead of waiting for room. */
	CAIRN_AIO_NOWAIT = 1,
};

/* cairn_aio_operate with per-op settings (o may be NULL). */
int cairn_aio_operate_opts(cairn_ioctx_t *io, const char *oid, cairn_op_t *op,
			   cairn_completion_t *c, const struct cairn_aio_opts *o);

/*
 * End c's op now with -ECANCELED (its callback runs, a waiter wakes), if it
 * has not completed: a late reply is then ignored and the op's buffers are
 * the caller's again. A write may still be applied (it may have reached
 * its OSD); read it back or guard the next one to know. \return 0,
 * -EALREADY (completed already), -ESHUTDOWN (cairn_shutdown is running: it
 * ends with -ESHUTDOWN if it has not), -ENOMEM.
 */
int cairn_completion_cancel(cairn_completion_t *c);

/* ---- shorthands (one sub-op each, synchronous) ---- */

int cairn_write_full(cairn_ioctx_t *io, const char *oid, const void *buf, size_t len);
int cairn_write(cairn_ioctx_t *io, const char *oid, const void *buf, size_t len, uint64_t off);
/* \return bytes read (short at the end), or a negative errno. */
int64_t cairn_read(cairn_ioctx_t *io, const char *oid, void *buf, size_t len, uint64_t off);
int cairn_stat(cairn_ioctx_t *io, const char *oid, uint64_t *size, struct cairn_version *ver);
int cairn_remove(cairn_ioctx_t *io, const char *oid);

/* ---- listing ---- */

/*
 * A listing's place: start with a zeroed one; it is done when cur->done
 * (and then holds nothing). Stopping before that: cairn_list_cursor_fini.
 * One cursor serves one listing (one io namespace, one set of flags).
 */
struct cairn_list_cursor {
	uint32_t pg;     /* next PG to list (of pg_num PGs) */
	uint32_t pg_num; /* the pool's PG count when the listing began */
	char *after;     /* opaque: where in that PG (allocated; NULL at its start) */
	bool done;
};

void cairn_list_cursor_fini(struct cairn_list_cursor *cur);

/*
 * The next page (up to max names) of the objects of the io's namespace,
 * PG by PG, as names (without namespace or key). Objects written or
 * removed during a listing may or may not appear; every other object
 * appears once, also when the pool's pg_num changes during the listing.
 * \return 0 (*names, *n), or an error.
 */
int cairn_list(cairn_ioctx_t *io, struct cairn_list_cursor *cur, unsigned max, char ***names,
	       size_t *n);
void cairn_names_free(char **names, size_t n);

/* An object's whole identity. */
struct cairn_obj {
	char *nspace; /* "": the default namespace */
	char *key;    /* "": none */
	char *name;
};

enum {
	CAIRN_LIST_ALL_NS = 1, /* every namespace, not only the io's */
};

/*
 * The namespaces holding objects in the io's pool ("" for the default
 * one), sorted, each once: one scan per namespace per PG (a pool with
 * many namespaces costs that many store seeks per PG). \return 0 (*nss,
 * *n; cairn_names_free), or an error.
 */
int cairn_namespace_list(cairn_ioctx_t *io, char ***nss, size_t *n);

/* As cairn_list, with each object's namespace and locator key. */
int cairn_list_objs(cairn_ioctx_t *io, struct cairn_list_cursor *cur, unsigned max, unsigned flags,
		    struct cairn_obj **objs, size_t *n);
void cairn_objs_free(struct cairn_obj *objs, size_t n);

/* ---- streams (the striper) ----
 *
 * A byte stream of any size over many objects of one pool: byte L of the
 * stream is in stripe unit L / stripe_unit; units go round-robin over
 * stripe_count objects, and a set of stripe_count objects holds
 * object_size / stripe_unit units each before the next set starts.
 * Objects are named "<name>.<16 hex digits>"; object 0 keeps the layout
 * (xattr cairn.layout) and the size (xattr cairn.size, a counter). A
 * call's reads or writes go to every object it touches at once. Bytes
 * never written read as zeros (streams are sparse). The size only grows
 * once a write's data is on every object (so a reader never sees bytes of a
 * write that failed), and a truncate cuts the data before the size. Works
 * on replicated and erasure-coded pools. Writes that overlap, or a
 * truncate racing writes, need the caller's own order (or a lock).
 */
typedef struct cairn_stream cairn_stream_t;

struct cairn_layout {
	uint32_t stripe_unit;  /* bytes; object_size a multiple of it, at most 64 units */
	uint32_t stripe_count; /* objects written round-robin, 1..64 */
	uint64_t object_size;  /* bytes per object, at most 64 MiB */
};

/* The default: 4 MiB units, one object at a time, 4 MiB objects. */
#define CAIRN_LAYOUT_DEFAULT          \
	{                             \
		4u << 20, 1, 4u << 20 \
	}

enum {
	CAIRN_STREAM_CREATE = 1, /* make it if it does not exist (with layout, or the default) */
	CAIRN_STREAM_EXCL = 2,   /* with CREATE: -EEXIST if it exists */
};

/*
 * Open stream name (at most CAIRN_NAME_MAX - 17 bytes). An existing stream
 * keeps its own layout (layout is then ignored). \return 0, -ENOENT,
 * -EEXIST, -EINVAL (a bad layout, or object 0 holds no valid one), or an
 * I/O error.
 */
int cairn_stream_open(cairn_ioctx_t *io, const char *name, int flags,
		      const struct cairn_layout *layout, cairn_stream_t **sp);
/* Ops still in flight keep the stream's memory until they complete. */
void cairn_stream_close(cairn_stream_t *s);
void cairn_stream_layout(const cairn_stream_t *s, struct cairn_layout *l);

/* Asynchronous: c completes with 0 or the first error (buf must live till then). */
int cairn_stream_aio_write(cairn_stream_t *s, uint64_t off, const void *buf, size_t len,
			   cairn_completion_t *c);
/* *got: the bytes read (short at the end of the stream). */
int cairn_stream_aio_read(cairn_stream_t *s, uint64_t off, void *buf, size_t len, size_t *got,
			  cairn_completion_t *c);
/* At the end: the size is reserved first (a counter), so appenders never
 * overlap; *at (may be NULL) gets where the bytes went. */
int cairn_stream_aio_append(cairn_stream_t *s, const void *buf, size_t len, uint64_t *at,
			    cairn_completion_t *c);
int cairn_stream_aio_truncate(cairn_stream_t *s, uint64_t size, cairn_completion_t *c);
int cairn_stream_aio_stat(cairn_stream_t *s, uint64_t *size, cairn_completion_t *c);

/* Synchronous forms. */
int cairn_stream_write(cairn_stream_t *s, uint64_t off, const void *buf, size_t len);
/* \return bytes read, or a negative errno. */
int64_t cairn_stream_read(cairn_stream_t *s, uint64_t off, void *buf, size_t len);
int cairn_stream_append(cairn_stream_t *s, const void *buf, size_t len, uint64_t *at);
int cairn_stream_truncate(cairn_stream_t *s, uint64_t size);
int cairn_stream_stat(cairn_stream_t *s, uint64_t *size);
/* Remove every object of the stream (the last one last: a rerun finishes). */
int cairn_stream_remove(cairn_ioctx_t *io, const char *name);

/* ---- admin calls ----
 *
 * Answered by the monitors' leader (found by the library, also across a
 * leader change). They wait at most op_timeout_ms, or 30 s when that is 0
 * (-ETIMEDOUT).
 */

/* The pools of the client's current map, by name (cairn_names_free). */
int cairn_pool_list(cairn_cluster_t *cl, char ***names, size_t *n);

struct cairn_pool_info {
	int64_t id;
	char name[64];
	bool erasure;
	uint32_t size;        /* copies, or k + m */
	uint32_t min_size;    /* writes wait below this many OSDs up */
	uint32_t ec_k, ec_m;  /* erasure-coded pools */
	uint32_t stripe_unit; /* EC: bytes per shard per stripe; 0 for replicated pools */
	uint32_t pg_num, pgp_num;
	uint64_t quota_max_bytes; /* 0: none */
};

/* A pool's settings in the client's current map. \return 0, -ENOENT. */
int cairn_pool_info(cairn_cluster_t *cl, const char *pool, struct cairn_pool_info *pi);

struct cairn_pool_stat {
	int64_t id;
	char name[64];
	uint64_t objects;         /* as the PGs' primaries last reported (a beacon behind) */
	uint64_t stored;          /* logical bytes, one copy */
	uint64_t raw;             /* on the devices: every copy, or k + m shards of k */
	uint64_t quota_max_bytes; /* 0: none */
	uint64_t max_avail;       /* about how many logical bytes still fit: the devices' free
				   * bytes over the copies (or x k/(k+m)), within the quota */
};

struct cairn_df {
	bool stats_valid; /* false: the leader has no OSD reports yet (the figures are 0) */
	uint64_t total_bytes, free_bytes; /* the OSDs' devices */
	uint64_t epoch;                   /* the map the pools are from */
	struct cairn_pool_stat *pools;
	size_t npools;
};

/* The cluster's usage (df->pools malloc'd: cairn_df_free). \return 0 or an error. */
int cairn_df(cairn_cluster_t *cl, struct cairn_df *df);
void cairn_df_free(struct cairn_df *df);
/* One pool's figures (io's pool). \return 0, -ENOENT (gone), or an error. */
int cairn_pool_stat(cairn_ioctx_t *io, struct cairn_pool_stat *st);

enum cairn_health_status { CAIRN_HEALTH_OK = 0, CAIRN_HEALTH_WARN = 1, CAIRN_HEALTH_ERR = 2 };

struct cairn_health_check {
	char *code; /* e.g. "OSD_DOWN", "PG_DEGRADED" */
	enum cairn_health_status severity;
	char *summary; /* one line */
	char **detail; /* one line per affected thing */
	size_t ndetail;
};

struct cairn_health {
	enum cairn_health_status status; /* the worst of the checks */
	struct cairn_health_check *checks;
	size_t nchecks;
};

/* The cluster's health, as `clusterctl health detail` (cairn_health_free). */
int cairn_health(cairn_cluster_t *cl, struct cairn_health *h);
void cairn_health_free(struct cairn_health *h);

/*
 * Any clusterctl command (argv as after "clusterctl", e.g. {"osd", "ls"}),
 * run by the monitors; *out gets its output (text, or JSON with json), *err
 * (may be NULL) its message when it fails; both malloc'd (free).
 * \return the command's result (0 or a negative errno), or an error of the
 * call itself.
 */
/* ---- locks ----
 *
 * Advisory locks on an object, kept by the OSDs with the object (an
 * internal attribute: replicated and EC pools, survives failover): held
 * exclusively or shared (holders of a shared lock agree on its tag), each
 * hold named by the client's name and a cookie of its choosing, with a
 * description and an expiry (the primary's wall clock: hosts need
 * synchronised clocks) that the holder renews. A lock does not stop
 * anyone's writes by itself: writers guard them with
 * cairn_op_assert_locked in the same compound op, and a takeover fences
 * the old holder (cairn_blocklist_add) before breaking its lock.
 * Lock names are 1-255 bytes; cookies, tags and client names up to 256;
 * descriptions up to 1,024 (longer: -EINVAL).
 */
enum cairn_lock_type {
	CAIRN_LOCK_EXCLUSIVE = 1,
	CAIRN_LOCK_SHARED = 2,
};

enum {
	CAIRN_LOCK_MAY_RENEW = 1,  /* taking it again renews our hold (else -EEXIST) */
	CAIRN_LOCK_MUST_RENEW = 2, /* only renew: -ENOENT unless we hold it */
};

/*
 * Take (or renew) lock name: exclusive or shared (tag must match the
 * holders'), for duration_ms (0: until unlocked or broken). The object is
 * created if it does not exist. Errors: -EBUSY (others hold it), -EEXIST
 * (we hold it, no renew flag), -ENOENT (MUST_RENEW and not held).
 */
void cairn_op_lock(cairn_op_t *op, const char *name, enum cairn_lock_type type, const char *cookie,
		   const char *tag, const char *description, uint64_t duration_ms, unsigned flags);
/* Release our hold: -ENOENT if we have none. */
void cairn_op_unlock(cairn_op_t *op, const char *name, const char *cookie);
/* Drop entity's hold (an admin, or a takeover after fencing it): -ENOENT if none. */
void cairn_op_break_lock(cairn_op_t *op, const char *name, const char *entity, const char *cookie);
/*
 * A guard: -EBUSY unless we hold lock name with cookie (of type, if not 0;
 * tag if given); -ENOENT when the object does not exist.
 */
void cairn_op_assert_locked(cairn_op_t *op, const char *name, enum cairn_lock_type type,
			    const char *cookie, const char *tag);

struct cairn_locker {
	char *entity, *cookie, *description;
	uint64_t expires_ns; /* wall clock, ns since 1970; 0: never */
	bool expired;        /* past it (by the OSD's clock): no hold any more */
};

struct cairn_lock_info {
	enum cairn_lock_type type; /* 0: nobody holds it */
	char *tag;
	struct cairn_locker *lockers;
	size_t n;
};

/* The lock's holders (expired ones marked); free with cairn_lock_info_free. */
void cairn_op_lock_info(cairn_op_t *op, const char *name, struct cairn_lock_info *info, int *rval);
void cairn_lock_info_free(struct cairn_lock_info *info);

/* The same, one call each (synchronous). */
int cairn_lock_exclusive(cairn_ioctx_t *io, const char *oid, const char *name, const char *cookie,
			 const char *description, uint64_t duration_ms, unsigned flags);
int cairn_lock_shared(cairn_ioctx_t *io, const char *oid, const char *name, const char *cookie,
		      const char *tag, const char *description, uint64_t duration_ms,
		      unsigned flags);
int cairn_unlock(cairn_ioctx_t *io, const char *oid, const char *name, const char *cookie);
int cairn_break_lock(cairn_ioctx_t *io, const char *oid, const char *name, const char *entity,
		     const char *cookie);
int cairn_lock_get_info(cairn_ioctx_t *io, const char *oid, const char *name,
			struct cairn_lock_info *info);

/*
 * Take lock name exclusively from holders whose hold expired (they hang, or
 * are cut off): each is fenced first (blocklisted for fence_seconds, which
 * also makes our later ops wait for that map), then its hold is broken,
 * then we lock. A live holder other than us: -EBUSY (nothing done). So a
 * stalled holder that wakes up finds its writes refused (-EKEYREVOKED)
 * instead of landing after ours.
 */
int cairn_lock_take(cairn_ioctx_t *io, const char *oid, const char *name, const char *cookie,
		    const char *description, uint64_t duration_ms, unsigned fence_seconds);

/* ---- watch/notify ----
 *
 * A client watches an object; a notify on it reaches every live watcher,
 * which acknowledges it (with an optional reply); the notifier gets the
 * acknowledgements, and the watchers that did not answer in time. Gateways
 * and file-system daemons use it to invalidate each other's caches.
 *
 * Watchers are kept with the object (they survive a failover of its PG, and
 * a restart of every OSD); the primary knows which session each one uses.
 * The library renews a watch by itself (a ping every timeout_ms / 3, and at
 * once when the map changes), so a watch lives as long as its client does:
 * a watcher silent for longer than its timeout (its process died, or is cut
 * off) gets no more notifies and is dropped at the object's next watch
 * change. A notify in flight while the primary fails is sent again to the
 * new primary, so a watcher may see one notify twice: events carry a
 * notify_id, and the library answers a repeated one it already acknowledged
 * by itself.
 *
 * Callbacks run on the library's thread: they must not wait on the library
 * (no synchronous calls, no cairn_completion_wait); cairn_notify_ack and
 * cairn_aio_* calls are fine. The object must exist to be watched.
 *
 * A watcher is named by its client's name (cairn_client_name) and its
 * cookie, which is unique within its client only. A client's own watch
 * gets its own notifies like any other. A blocklisted client's watches end
 * (its pings fail; err_cb is not called for that); cairn_shutdown frees
 * the watches left (the cluster drops them after their timeout).
 */
typedef struct cairn_watch cairn_watch_t;

struct cairn_notify_event {
	uint64_t notify_id;   /* the same for a notify sent again */
	const char *notifier; /* the notifying client's name */
	const void *payload;  /* (valid during the callback only) */
	size_t len;
};

/* A notify reached this watch: acknowledge it with cairn_notify_ack (now or later). */
typedef void (*cairn_watch_cb_t)(cairn_watch_t *w, const struct cairn_notify_event *ev, void *arg);
/*
 * The watch was lost and made again (err -ENOTCONN: the cluster had dropped
 * it, after a timeout, so notifies may have been missed: re-read what the
 * watch guards), or could not be made again (another -errno; the library
 * keeps trying).
 */
typedef void (*cairn_watch_err_cb_t)(cairn_watch_t *w, int err, void *arg);

/*
 * Watch oid (in io's namespace and key) with timeout_ms (0: 30 s; 1,000 to
 * 3,600,000). err_cb may be NULL. The watch does not depend on io
 * afterwards. cb may run before this returns (use its w argument).
 * \return 0 and *wp; -ENOENT (no such object), -EINVAL (a bad argument),
 * -E2BIG (the object has 1,024 watchers), or an op's error (-ETIMEDOUT,
 * -EKEYREVOKED, ...); *wp is NULL then.
 */
int cairn_watch(cairn_ioctx_t *io, const char *oid, unsigned timeout_ms, cairn_watch_cb_t cb,
		cairn_watch_err_cb_t err_cb, void *arg, cairn_watch_t **wp);
/*
 * Stop watching and free w (not from its own callbacks): once it returns no
 * callback of w runs. \return 0, or the cluster's error (-ENOENT: the
 * object is gone; -ETIMEDOUT; w is freed anyway, and a watch the cluster
 * still holds is dropped after its timeout).
 */
int cairn_unwatch(cairn_watch_t *w);
/* The watch's cookie: with cairn_client_name, how notifiers and watcher lists name it. */
uint64_t cairn_watch_cookie(const cairn_watch_t *w);
/*
 * Acknowledge notify_id with reply (len at most CAIRN_NOTIFY_MAX, may be
 * 0). Asynchronous (it may wait for the throttle's room, except on the
 * library's thread): \return 0 once it is queued, -EINVAL (a bad
 * argument), -ENOMEM. An ack the notifier no longer waits for is dropped.
 * The replies to one notify are at most CAIRN_NOTIFY_MAX bytes in all: past
 * that an ack still counts, without its reply.
 */
int cairn_notify_ack(cairn_watch_t *w, uint64_t notify_id, const void *reply, size_t len);

#define CAIRN_NOTIFY_MAX (1u << 20) /* bytes of a payload or a reply */

struct cairn_notify_reply {
	char *entity; /* the watcher's client name */
	uint64_t cookie;
	void *data; /* its reply (acks only; NULL when empty) */
	size_t len;
};

struct cairn_notify_result {
	struct cairn_notify_reply *acks; /* in no particular order */
	size_t nacks;
	struct cairn_notify_reply *timeouts; /* live watchers that did not ack in time */
	size_t ntimeouts;
};

/*
 * Notify every live watcher of the object with payload (at most
 * CAIRN_NOTIFY_MAX bytes) and wait up to timeout_ms (0: 5 s; at most
 * 600,000) for their acknowledgements. Alone in its op (else the op fails
 * with -EINVAL). The sub-op's result is 0 also when some timed out (see
 * res->ntimeouts); -ENOENT if there is no such object; -EINVAL for a bad
 * argument. res is zeroed first and filled only on success; free it with
 * cairn_notify_result_free (either way). If the object's primary fails
 * meanwhile the notify is sent again to the next one and its timeout starts
 * again there; the op's own deadline is stretched to cover one timeout
 * plus 5 s when the client's op_timeout_ms is shorter.
 */
void cairn_op_notify(cairn_op_t *op, const void *payload, size_t len, unsigned timeout_ms,
		     struct cairn_notify_result *res, int *rval);
int cairn_notify(cairn_ioctx_t *io, const char *oid, const void *payload, size_t len,
		 unsigned timeout_ms, struct cairn_notify_result *res);
void cairn_notify_result_free(struct cairn_notify_result *res);

struct cairn_watcher {
	char *entity;
	uint64_t cookie;
	unsigned timeout_ms;
};

/*
 * The object's live watchers (one silent past its timeout is not listed,
 * though the object still records it until its next watch change). Free
 * with cairn_watchers_free. \return 0, -ENOENT (no such object), or an
 * op's error.
 */
void cairn_op_list_watchers(cairn_op_t *op, struct cairn_watcher **w, size_t *n, int *rval);
int cairn_list_watchers(cairn_ioctx_t *io, const char *oid, struct cairn_watcher **w, size_t *n);
void cairn_watchers_free(struct cairn_watcher *w, size_t n);

/* ---- the service map ----
 *
 * Gateways, MDS daemons and CSI controllers say they are up, and where, so
 * that clients and `clusterctl status` find them. A registration lives in
 * etcd under a lease of ttl_s seconds; the library renews it (every
 * ttl_s / 3, from a thread of its own) until cairn_service_unregister or
 * cairn_shutdown (after which it lapses within ttl_s). A process that dies
 * drops out after ttl_s. One (type, name) is one registration: a newer
 * instance (a restarted daemon, another client) takes it over.
 */

/*
 * Register (type, name) at addr, with meta (free text, may be NULL), kept
 * alive for ttl_s (2..3600) seconds at a time. type: 1-32 bytes and name:
 * 1-64 bytes of [A-Za-z0-9._-]; addr: 1-256 and meta: at most 4096
 * printable bytes. \return 0 once the first registration is stored,
 * -EINVAL, -ENOMEM, or the monitors' error.
 */
int cairn_service_register(cairn_cluster_t *cl, const char *type, const char *name,
			   const char *addr, const char *meta, unsigned ttl_s);
/*
 * Stop renewing and remove it now. Waits at most 5 s for the monitors
 * (the registration lapses with its lease anyway; a stop with the
 * monitors gone need not wait longer). \return 0 (also when not
 * registered here), or an error (-ETIMEDOUT).
 */
int cairn_service_unregister(cairn_cluster_t *cl, const char *type, const char *name);

struct cairn_service {
	char *type, *name, *addr, *meta;
	char *instance; /* the client that registered it (cairn_client_name) */
	unsigned ttl_s;
};

/* The live registrations (of type, or all: NULL), by type and name. Free with cairn_services_free.
 */
int cairn_service_list(cairn_cluster_t *cl, const char *type, struct cairn_service **v, size_t *n);
void cairn_services_free(struct cairn_service *v, size_t n);

/*
 * The MDS map: which metadata daemon holds which rank of file system fs.
 * A daemon calls cairn_mds_beacon every ttl_s / 3 (ttl_s 2..3600): it
 * registers as service ("mds", name) at addr (meta "fs=<fs>") and learns
 * its rank (-1: standby). A rank whose holder stopped beaconing for ttl_s
 * (or restarted: another instance) goes to the first standby that beacons
 * after that, lowest rank first, up to the map's max_mds (`clusterctl mds
 * set FS max_mds N`, default 1). The monitors fence the holder it failed
 * from (blocklisted for 24 hours) in the same step, and this client's
 * later ops wait for the map that does it, so the old holder can no longer
 * write once we act as the rank. A rank at or past a lowered max_mds is
 * given up (and its holder fenced when another takes it). *epoch (may be
 * NULL): the MDS map's epoch, raised by every change. \return 0, -EINVAL,
 * -EKEYREVOKED (this client is blocklisted: connect again), or the
 * monitors' error (a failed fence included: no rank is given then).
 */
int cairn_mds_beacon(cairn_cluster_t *cl, const char *fs, const char *name, const char *addr,
		     unsigned ttl_s, int *rank, uint64_t *epoch);

/* ---- fencing ----
 *
 * A client that lost its lock or lease (or is presumed dead) is fenced by
 * putting its name on the map's blocklist: every OSD refuses its ops and
 * listings from that map on (-EKEYREVOKED), and the client itself, once it
 * sees the map, fails every op it holds or is handed (for good: it must connect
 * again, which gives it a new name). Ops it had sent before are ordered
 * before the fencer's, which carry the blocklist's epoch (the barrier) and
 * wait at each OSD until it has that map.
 */

/*
 * This client's name, as OSDs and the blocklist know it: its entity's
 * name (cairn_opts.name) and 16 random hex digits, "client.admin.3f09...".
 */
const char *cairn_client_name(cairn_cluster_t *cl);

/*
 * Fence entity for seconds (0: until removed), and set this client's epoch
 * barrier to the map that does it. \return 0 (*epoch: that map's epoch, may
 * be NULL), -EINVAL (a bad name), or an error of the monitors.
 */
int cairn_blocklist_add(cairn_cluster_t *cl, const char *entity, unsigned seconds, uint64_t *epoch);
/* \return 0 (also when it was not listed), or an error. */
int cairn_blocklist_rm(cairn_cluster_t *cl, const char *entity);

/*
 * Ops submitted from now on are sent with a map of epoch >= epoch (they wait
 * for it): a new writer that learned of a fence from elsewhere (the epoch
 * cairn_blocklist_add returned to whoever fenced) sets it before writing.
 */
void cairn_set_epoch_barrier(cairn_cluster_t *cl, uint64_t epoch);

/*
 * Run a monitor command (what `clusterctl` takes after its options, e.g.
 * {"osd", "ls"}) on the leader. *out: its output (text, or JSON with json);
 * *err (err may be NULL): a sentence when it failed; free both.
 * \return 0, the command's -errno (-EINVAL: a usage error), or -ETIMEDOUT.
 */
int cairn_mon_command(cairn_cluster_t *cl, const char *const *argv, size_t argc, bool json,
		      char **out, char **err);

#ifdef __cplusplus
}
#endif

#endif
