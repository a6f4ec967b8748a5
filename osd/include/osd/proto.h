/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Message types and op codes of the OSD protocol (fronts in proto/osd.proto).
 *
 *   client -> primary   OSD_OP -> OSD_OP_REPLY (same tid)
 *   client -> primary   PG_LIST -> PG_LIST_REPLY
 *   primary -> replica  REP_OP -> REP_OP_REPLY
 *   primary -> peer     PG_QUERY -> PG_NOTIFY
 *   primary -> source   RECOVER -> RECOVER_DONE (recovery, backfill)
 *   source -> target    PUSH -> PUSH_REPLY (whole objects, in chunks)
 *   primary -> target   PG_LOG -> PG_LOG_ACK (adopt the log; or wipe)
 *   primary -> stray    PG_REMOVE (PgAck; no answer)
 *   OSD <-> OSD         PING (heartbeats)
 *   EC primary -> shard EC_READ -> EC_READ_REPLY (same tid; data: the range)
 */
#ifndef OSD_PROTO_H
#define OSD_PROTO_H

#include <cairn/osd.pb-c.h>

#include "crush/oname.h"

enum osd_msg_type {
	OSD_MSG_OP = 800,
	OSD_MSG_OP_REPLY = 801,
	OSD_MSG_PG_LIST = 802,
	OSD_MSG_PG_LIST_REPLY = 803,
	OSD_MSG_REP_OP = 810,
	OSD_MSG_REP_OP_REPLY = 811,
	OSD_MSG_PG_QUERY = 812,
	OSD_MSG_PG_NOTIFY = 813,
	OSD_MSG_PUSH = 814,
	OSD_MSG_PUSH_REPLY = 815,
	OSD_MSG_PING = 816,
	OSD_MSG_RECOVER = 817,      /* primary -> source: push objects to a target */
	OSD_MSG_RECOVER_DONE = 818, /* source -> primary (PgAck) */
	OSD_MSG_PG_LOG = 819,       /* primary -> target: adopt this log (or wipe) */
	OSD_MSG_PG_LOG_ACK = 820,   /* target -> primary (PgAck) */
	OSD_MSG_PG_REMOVE = 821,    /* primary -> a prior OSD: the PG is clean, drop your copy */
	OSD_MSG_EC_READ = 822,      /* EC primary -> shard: read a range of its shard */
	OSD_MSG_EC_READ_REPLY = 823,
	OSD_MSG_WATCH_EVENT = 824, /* primary -> a watcher's session: WatchEvent (tid 0) */
};

/* Client sub-ops (SubOp.op). */
enum osd_subop {
	OSD_OP_READ = 1,      /* off, len (0: to the end) */
	OSD_OP_STAT = 2,      /* size, version */
	OSD_OP_WRITE = 3,     /* off, len, data */
	OSD_OP_WRITEFULL = 4, /* len, data: the object becomes exactly this */
	OSD_OP_APPEND = 5,    /* len, data */
	OSD_OP_TRUNCATE = 6,  /* len = new size */
	OSD_OP_ZERO = 7,      /* off, len */
	OSD_OP_REMOVE = 8,
	OSD_OP_CREATE = 9, /* exclusive: -EEXIST if it exists */
	OSD_OP_GETXATTR = 10,
	OSD_OP_GETXATTRS = 11,
	OSD_OP_SETXATTR = 12,
	OSD_OP_RMXATTR = 13,
	OSD_OP_OMAP_GET = 14,  /* keys -> keys + vals of those that exist */
	OSD_OP_OMAP_SET = 15,  /* keys, vals */
	OSD_OP_OMAP_RM = 16,   /* keys */
	OSD_OP_OMAP_LIST = 17, /* start_after, prefix, max -> keys, vals, more */
	OSD_OP_OMAP_CLEAR = 18,
	OSD_OP_OMAP_GET_HEADER = 19,
	OSD_OP_OMAP_SET_HEADER = 20,
	OSD_OP_OMAP_RM_RANGE = 21,  /* [keys[0], end) */
	OSD_OP_ASSERT_VERSION = 22, /* -ERANGE unless the object's version is ver */
	OSD_OP_CMPXATTR = 23,       /* -ECANCELED unless xattr name cmp value holds */
	OSD_OP_ASSERT_EXISTS = 24,  /* -ENOENT unless the object exists */
	OSD_OP_CMPEXT = 25,         /* -ECANCELED unless [off, off + len) holds the len bytes at
				     * data_off (past the end: zeros); size = the first that differs */
	OSD_OP_OMAP_CMP = 26,       /* -ECANCELED unless each keys[i] cmp vals[i] holds */
	OSD_OP_NUM = 27, /* a counter (int64 LE, absent = 0): xattr name or omap keys[0] */
	/* Locks (name; value: a packed LockReq); the holder is (session name, cookie). */
	OSD_OP_LOCK = 28,          /* take or renew; -EBUSY (held by others), -EEXIST (held by
				    * us, no renew flag), -ENOENT (MUST_RENEW, not held) */
	OSD_OP_UNLOCK = 29,        /* -ENOENT unless we hold it */
	OSD_OP_BREAK_LOCK = 30,    /* drop LockReq.entity's hold; -ENOENT if none */
	OSD_OP_LOCK_INFO = 31,     /* -> value: a packed LockState */
	OSD_OP_ASSERT_LOCKED = 32, /* -EBUSY unless we hold it (of type, if given) */
	/* watch/notify (osd/src/ops/watch.c): value is a packed WatchReq,
	 * NotifyReq or NotifyAckReq; the object must exist (-ENOENT) */
	OSD_OP_WATCH = 33,         /* register (entity, cookie): a write of the attribute "W" */
	OSD_OP_UNWATCH = 34,       /* unregister: a write ; 0 also if it was not there */
	OSD_OP_WATCH_PING = 35,    /* renew, and bind the watch to this session; -ENOTCONN
				    * if the object has no such watch (dropped: watch again) */
	OSD_OP_NOTIFY = 36,        /* alone in its op; the reply waits for the acks or the
				    * timeout -> value: a packed NotifyResult */
	OSD_OP_NOTIFY_ACK = 37,    /* -ENOENT if that notify is not pending here */
	OSD_OP_LIST_WATCHERS = 38, /* -> value: a packed WatchSet of the live watchers */
	OSD_OP_MAX_
};

enum osd_lock_type {
	OSD_LOCK_EXCLUSIVE = 1,
	OSD_LOCK_SHARED = 2,
};

enum osd_lock_flags {
	OSD_LOCK_MAY_RENEW = 1,  /* LOCK by the holder renews it (else -EEXIST) */
	OSD_LOCK_MUST_RENEW = 2, /* LOCK only renews: -ENOENT unless held */
};

#define OSD_LOCK_STR_MAX  256 /* lock cookies, tags, entities */
#define OSD_LOCK_NAME_MAX 255 /* stored as the attribute "L<name>" */
/* A stored attribute's name: '_' or 'L' and a name of up to 255 bytes. */
#define OSD_ATTR_NAME_MAX         256
#define OSD_LOCK_DESC_MAX         1024
#define OSD_LOCKERS_MAX           1024       /* shared holders of one lock */
#define OSD_WATCHERS_MAX          1024       /* watchers of one object */
#define OSD_NOTIFY_MAX            (1u << 20) /* bytes of a notify's payload or an ack's reply */
#define OSD_WATCH_TIMEOUT_MIN_MS  1000
#define OSD_WATCH_TIMEOUT_MAX_MS  3600000
#define OSD_NOTIFY_TIMEOUT_MAX_MS 600000

/* How NUM computes a counter's new value from its old one. */
enum osd_num {
	OSD_NUM_ADD = 1, /* old + num (-EOVERFLOW past int64) */
	OSD_NUM_SET = 2, /* num */
	OSD_NUM_MAX = 3, /* the larger of old and num */
	OSD_NUM_MIN = 4, /* the smaller */
};

/* NUM sub-ops in one op at most, and so the bytes of a log entry's
 * outputs (LogEntry.outs: index, length, 8 bytes each). */
#define OSD_MAX_NUMS     16
#define OSD_LOG_OUTS_MAX (OSD_MAX_NUMS * 10)

enum osd_cmp {
	OSD_CMP_EQ = 1,
	OSD_CMP_NE = 2,
	OSD_CMP_GT = 3, /* the stored value is greater (bytewise) */
	OSD_CMP_GE = 4,
	OSD_CMP_LT = 5,
	OSD_CMP_LE = 6,
	OSD_CMP_ABSENT = 7, /* the xattr does not exist */
};

/* Store mutations (TxOp.op), replicated as they are. */
enum osd_txop {
	OSD_TX_TOUCH = 1,
	OSD_TX_WRITE = 2,
	OSD_TX_TRUNCATE = 3,
	OSD_TX_ZERO = 4,
	OSD_TX_REMOVE = 5,
	OSD_TX_SETATTR = 6,
	OSD_TX_RMATTR = 7,
	OSD_TX_OMAP_SET = 8,
	OSD_TX_OMAP_RM = 9,
	OSD_TX_OMAP_RM_RANGE = 10,
	OSD_TX_OMAP_CLEAR = 11,
	OSD_TX_OMAP_SET_HEADER = 12,
	OSD_TX_STASH = 13,  /* EC: keep the old state for a rollback (see osd_undo) */
	OSD_TX_RENAME = 14, /* EC: the object becomes its entry's stash (a remove) */
};

enum osd_log_op { OSD_LOG_MODIFY = 1, OSD_LOG_DELETE = 2 };

/* LogEntry.undo: how a shard of an EC PG undoes an entry. */
enum osd_undo {
	OSD_UNDO_NONE = 0,   /* cannot (replicated pools) */
	OSD_UNDO_CREATE = 1, /* remove the object: it did not exist before */
	OSD_UNDO_STASH = 2,  /* unstash: old size, attributes, bytes of [undo_off, +undo_len) */
	OSD_UNDO_RENAME = 3, /* rename the stash back: the entry removed the object */
};

/* OsdOp.flags */
enum osd_op_flags {
	OSD_OPF_RESEND = 1, /* sent before: the primary checks the PG log for it */
};

/*
 * Object names on the wire and in the store: store names of (namespace,
 * locator key, name), crush/oname.h; at most OSD_NAME_MAX bytes. Names
 * starting with \x01 are the OSD's own (PG meta, EC stashes).
 */
#define OSD_NAME_MAX CRUSH_ONAME_MAX

/* Sub-ops per compound op, and keys per omap sub-op. */
#define OSD_MAX_SUBOPS 64
#define OSD_MAX_KEYS   4096

/*
 * Data one compound op may carry (its writes, appends) or return (its
 * reads), in all: the messenger's data segment limit. A larger op is
 * refused at once with -E2BIG (by the client, or by the OSD when only it
 * knows the size: a read to the end of a large object). Objects larger
 * than this are read and written in ranges (the striper does it).
 */
#define OSD_MAX_IO (64u << 20)

#endif
