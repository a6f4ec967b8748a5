/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Messenger message types of the monitor protocol (fronts in proto/mon.proto).
 *
 *   client -> any mon     MAP_REQUEST -> MAP_UPDATE (and more MAP_UPDATEs while subscribed)
 *   client -> any mon     COMMAND -> COMMAND_REPLY
 *   OSD -> leader         OSD_BOOT -> OSD_BOOT_REPLY; OSD_BEACON; OSD_FAILURE
 *   non-leader -> sender  NOT_LEADER (for the three above): go to the leader
 *
 * Replies carry the request's tid.
 */
#ifndef MON_PROTO_H
#define MON_PROTO_H

#include <cairn/mon.pb-c.h>

enum mon_msg_type {
	MON_MSG_MAP_REQUEST = 700,
	MON_MSG_MAP_UPDATE = 701,
	MON_MSG_OSD_BOOT = 702,
	MON_MSG_OSD_BOOT_REPLY = 703,
	MON_MSG_OSD_BEACON = 704,
	MON_MSG_OSD_FAILURE = 705,
	MON_MSG_NOT_LEADER = 706,
	MON_MSG_COMMAND = 707,
	MON_MSG_COMMAND_REPLY = 708,
	MON_MSG_DF_REQUEST = 709, /* to the leader */
	MON_MSG_DF_REPLY = 710,
	MON_MSG_HEALTH_REQUEST = 711, /* to the leader */
	MON_MSG_HEALTH_REPLY = 712,
	MON_MSG_AUTH_TICKET_REQUEST = 715, /* any mon: a ticket for the OSDs */
	MON_MSG_AUTH_TICKET_REPLY = 716,
	MON_MSG_AUTH_ROTATING_REQUEST = 717, /* an OSD -> any mon: the service secrets */
	MON_MSG_AUTH_ROTATING_REPLY = 718,
};

struct mon_addr {
	char name[64];
	char addr[128];
};

/*
 * Parse mon_host: "a=127.0.0.1:6789,b=127.0.0.1:6790" (names optional:
 * "127.0.0.1:6789,..." names them by position). \return 0 (*v malloc'd),
 * -EINVAL (err says where), -ENOMEM.
 */
int mon_parse_hosts(const char *s, struct mon_addr **v, size_t *n, char *err, size_t errlen);

#endif
