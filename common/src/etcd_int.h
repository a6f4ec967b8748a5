/* SPDX-License-Identifier: Apache-2.0 */
/*
 * etcd.c's parsers of etcd's answers, reachable without a connection: for
 * tests/fuzz/etcd_fuzz.c only. Any thread; no I/O.
 */
#ifndef CM_ETCD_INT_H
#define CM_ETCD_INT_H

#include "cm/etcd.h"

/* The calls whose answers carry something beyond success. */
enum cm_etcd__reply_kind {
	CM_ETCD__RANGE,           /* cm_etcd_get */
	CM_ETCD__PUT,             /* cm_etcd_put */
	CM_ETCD__DELETE,          /* cm_etcd_delete */
	CM_ETCD__TXN,             /* cm_etcd_txn */
	CM_ETCD__LEASE_GRANT,     /* cm_etcd_lease_grant */
	CM_ETCD__LEASE_KEEPALIVE, /* cm_etcd_lease_keepalive */
};

/* What the call would hand its caller. */
struct cm_etcd__reply {
	struct cm_etcd_range range; /* RANGE: free with cm_etcd_range_free */
	int64_t revision, deleted, id, ttl;
	bool succeeded;
};

/*
 * Parse body (NUL-terminated, as received), an answer with HTTP status
 * `status` to a call of `kind`, as that call does. \return what the call
 * would return, or 1 where it would try another endpoint.
 */
int cm_etcd__parse_reply(enum cm_etcd__reply_kind kind, long status, const char *body,
			 struct cm_etcd__reply *out);

/*
 * Hand the bytes of a watch stream to a watch's parser in pieces of chunk
 * bytes (0: at once), as libcurl would, without a thread or connection: cb
 * runs for each event as for cm_etcd_watch_start. \return 0, or -1 where
 * the watch would drop the stream (it failed, or the bytes exceed its
 * buffer); *next_rev: the revision a reconnect would resume from.
 */
int cm_etcd__watch_feed(const char *data, size_t len, size_t chunk, cm_etcd_watch_cb cb, void *arg,
			int64_t *next_rev);

#endif
