/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The asynchronous monitor client (mon_async_*; the blocking one for tools
 * is mon/client_sync.h), for daemons and libcairn: it lives on the
 * caller's reactor and messenger (the caller's on_msg/on_event hand it the
 * messages and events of its sessions), hunts across mon_host until a mon
 * answers, keeps the newest cluster map (subscribing: full map first, then
 * incrementals applied in epoch order; a gap asks for the full map again),
 * and sends OSD messages to the leader, following NOT_LEADER.
 *
 * Threading: everything on the reactor's thread.
 */
#ifndef MON_CLIENT_ASYNC_H
#define MON_CLIENT_ASYNC_H

#include "mon/proto.h"
#include "cm/msgr.h"

struct mon_async;

struct mon_async_ops {
	/* A newer map is current (borrowed: valid until the next on_map or destroy). */
	void (*on_map)(void *arg, const Cairn__Map__OsdMap *m);
	/* A reply to a message sent with mon_async_send (the callee owns m). */
	void (*on_reply)(void *arg, struct cm_msg *m);
};

struct mon_async_opts {
	const char *mon_host; /* "a=127.0.0.1:6789,..." */
	bool subscribe;       /* keep the map current (else: only on request) */
	unsigned hunt_ms;     /* a mon that gives no session or map this long is skipped; 3000 */
	struct mon_async_ops ops;
	void *arg;
};

/* \return 0, -EINVAL (mon_host unparsable; err says where), -ENOMEM. */
int mon_async_create(struct cm_reactor *r, struct cm_msgr *msgr, const struct mon_async_opts *o,
		     struct mon_async **mcp, char *err, size_t errlen);
void mon_async_destroy(struct mon_async *mc);

/* From the messenger's callbacks: true when the message/event was the client's (m consumed). */
bool mon_async_handle_msg(struct mon_async *mc, struct cm_conn *c, struct cm_msg *m);
bool mon_async_handle_event(struct mon_async *mc, struct cm_conn *c, enum cm_conn_event ev, int rc);

/*
 * Send pb to a mon (to_leader: to the leader, resent once to the leader a
 * NOT_LEADER names). Replies come to on_reply with this tid. Not queued when
 * no mon session is up: the caller retries on its own clock.
 * \return 0, -ENOTCONN (no session yet), -ENOMEM, or a send error.
 */
int mon_async_send(struct mon_async *mc, uint16_t type, uint64_t tid, const ProtobufCMessage *pb,
		   bool to_leader);

/*
 * Start from a map the caller kept (packed, e.g. from its last run): it
 * becomes the current map (on_map runs now) and the mons are asked only
 * for what came after it -- as incrementals while they still keep them, so
 * on_map sees every epoch since (a restarted OSD learns the PG intervals
 * it missed). Call before the reactor runs. \return 0, -EINVAL
 * (undecodable), -ENOMEM.
 */
int mon_async_seed_map(struct mon_async *mc, const uint8_t *buf, size_t len);

/* Ask for maps newer than `have` now (e.g. a peer spoke of a newer epoch). */
void mon_async_want_map(struct mon_async *mc, uint64_t have);

/* The current map, or NULL before the first one. */
const Cairn__Map__OsdMap *mon_async_map(const struct mon_async *mc);

/* The mon the session is with ("" when none). */
const char *mon_async_peer(const struct mon_async *mc);

#endif
