/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process's credentials (docs/design/auth.md): its entity and key, which
 * it proves to the monitors, and the ticket the monitors give it for the
 * OSDs, renewed at half its life or when the map's auth_epoch passes it.
 * libcairn and the OSDs hold one each and hand mon_creds_fill to their
 * messenger's cred_fn.
 *
 * Threading: one reactor thread owns it.
 */
#ifndef MON_CREDS_H
#define MON_CREDS_H

#include "mon/client_async.h"
#include "cm/daemon.h"

struct mon_creds {
	char name[CM_HS_ENTITY_MAX];
	uint8_t key[CM_HS_KEY_LEN];
	/* the ticket for the OSDs */
	bool have;
	uint8_t ticket[CM_HS_TICKET_MAX];
	size_t ticket_len;
	uint64_t gen;
	uint8_t session_key[CM_HS_KEY_LEN];
	uint64_t issued_ns, expires_ns, auth_epoch;
	/* the request in flight */
	uint64_t tid, sent_ms;
	int last_rc;        /* of the last reply (0: a ticket) */
	char last_err[160]; /* its reason */
	unsigned tickets;   /* taken so far */
};

void mon_creds_init(struct mon_creds *c, const char *name, const uint8_t key[CM_HS_KEY_LEN]);
void mon_creds_fini(struct mon_creds *c);

/*
 * The credentials for a handshake of kind (enum cm_cred_kind): the
 * entity's own key towards a monitor, the ticket towards an OSD.
 * \return 0, or -EAGAIN (no ticket yet: the attempt is retried).
 */
int mon_creds_fill(const struct mon_creds *c, unsigned kind, struct cm_cred *out);

/*
 * Ask for a ticket if one is due (none yet, past half its life, issued
 * before map_auth_epoch) and none was asked for in the last second, with
 * tid. \return 1 (asked), 0 (not due), or a negative errno (no session).
 */
int mon_creds_tick(struct mon_creds *c, struct mon_async *mc, uint64_t tid, uint64_t now_ms,
		   uint64_t map_auth_epoch);

/* A MON_MSG_AUTH_TICKET_REPLY: keep its ticket. \return 0, or its error (last_err says why). */
int mon_creds_take(struct mon_creds *c, const struct cm_msg *m);

#endif
