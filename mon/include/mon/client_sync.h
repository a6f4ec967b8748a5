/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A blocking client of the monitors for tools and tests (clusterctl, the
 * OSD-like test client): its own reactor and messenger, lossy sessions,
 * hunting across mon_host when a mon does not answer, following NOT_LEADER
 * to the leader for OSD messages. Every call blocks until the answer or
 * the timeout; daemons, which must not block their reactor, use the
 * asynchronous client in mon/client_async.h instead.
 *
 * Threading: one thread at a time per mon_sync.
 */
#ifndef MON_CLIENT_SYNC_H
#define MON_CLIENT_SYNC_H

#include "mon/proto.h"
#include "cm/daemon.h"

struct mon_sync;

/* \return 0, -EINVAL (mon_host unparsable; err), -ENOMEM, or a reactor/msgr error. */
int mon_sync_open(const struct cm_daemon_conf *d, const char *mon_host, unsigned timeout_ms,
		  struct mon_sync **sp, char *err, size_t errlen);
void mon_sync_close(struct mon_sync *s);

/*
 * Send req and wait for the reply of rep_type with the same tid (leader:
 * the leader must answer). \return 0 (*rep, free with
 * protobuf_c_message_free_unpacked), -ETIMEDOUT (no mon answered in time),
 * -CM_EAUTH (the key was refused), -ENOMEM.
 */
int mon_sync_call(struct mon_sync *s, uint16_t type, const ProtobufCMessage *req, bool leader,
		  uint16_t rep_type, const ProtobufCMessageDescriptor *rep_desc,
		  ProtobufCMessage **rep);

/* Send without a reply (beacons, failure reports) to the leader. \return 0 or as above. */
int mon_sync_send_leader(struct mon_sync *s, uint16_t type, const ProtobufCMessage *req);

/* Run a command. \return as mon_sync_call; the command's own status is (*rep)->rc. */
int mon_sync_command(struct mon_sync *s, int argc, char **argv, bool json,
		     Cairn__Mon__CommandReply **rep);

/*
 * Wait up to timeout_ms for a message the mon sent on its own (tid 0, e.g.
 * the MAP_UPDATEs of a subscription) of the given type. Up to 64 are queued
 * between calls. \return 0 (*msg), -ETIMEDOUT, -EBADMSG.
 */
int mon_sync_wait_push(struct mon_sync *s, uint16_t type, const ProtobufCMessageDescriptor *desc,
		       unsigned timeout_ms, ProtobufCMessage **msg);

/* The name of the mon the session is with ("" when none). */
const char *mon_sync_peer(const struct mon_sync *s);

#endif
