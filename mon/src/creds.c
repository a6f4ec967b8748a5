/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process's credentials and its ticket for the OSDs (mon/creds.h).
 */
#include "mon/creds.h"
#include "mon/auth.h"
#include "cm/err.h"
#include "cm/log.h"

#include <openssl/crypto.h>

CM_LOG_SUBSYS(monc);

void
mon_creds_init(struct mon_creds *c, const char *name, const uint8_t key[CM_HS_KEY_LEN])
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	memcpy(c->key, key, CM_HS_KEY_LEN);
}

void
mon_creds_fini(struct mon_creds *c)
{
	OPENSSL_cleanse(c, sizeof(*c));
}

int
mon_creds_fill(const struct mon_creds *c, unsigned kind, struct cm_cred *out)
{
	snprintf(out->auth_name, sizeof(out->auth_name), "%s", c->name);
	if (kind == CM_CRED_MON) {
		memcpy(out->key, c->key, CM_HS_KEY_LEN);
		return 0;
	}
	if (!c->have)
		return -EAGAIN;
	memcpy(out->key, c->session_key, CM_HS_KEY_LEN);
	memcpy(out->ticket, c->ticket, c->ticket_len);
	out->ticket_len = c->ticket_len;
	out->ticket_gen = c->gen;
	return 0;
}

int
mon_creds_tick(struct mon_creds *c, struct mon_async *mc, uint64_t tid, uint64_t now_ms,
	       uint64_t map_auth_epoch)
{
	Cairn__Mon__AuthTicketRequest q = CAIRN__MON__AUTH_TICKET_REQUEST__INIT;
	uint64_t now_ns = cm_wall_ns();
	bool due = !c->have || c->auth_epoch < map_auth_epoch ||
		   now_ns >= c->issued_ns + (c->expires_ns - c->issued_ns) / 2;
	int rc;

	if (!due || (c->sent_ms && now_ms < c->sent_ms + 1000))
		return 0;
	rc = mon_async_send(mc, MON_MSG_AUTH_TICKET_REQUEST, tid, &q.base, false);
	if (rc)
		return rc;
	c->tid = tid;
	c->sent_ms = now_ms;
	return 1;
}

int
mon_creds_take(struct mon_creds *c, const struct cm_msg *m)
{
	Cairn__Mon__AuthTicketReply *r = (Cairn__Mon__AuthTicketReply *)cm_msg_unpack_front(
		m, &cairn__mon__auth_ticket_reply__descriptor);
	uint8_t skey[CM_HS_KEY_LEN];
	int rc;

	c->sent_ms = 0; /* answered: another may go at once if still due */
	if (!r) {
		snprintf(c->last_err, sizeof(c->last_err), "an undecodable ticket reply");
		return c->last_rc = -EBADMSG;
	}
	rc = r->rc;
	if (rc > 0)
		rc = -EBADMSG;
	if (rc) {
		snprintf(c->last_err, sizeof(c->last_err), "%s",
			 r->err && r->err[0] ? r->err : cm_strerror(rc));
	} else if (r->ticket.len == 0 || r->ticket.len > CM_HS_TICKET_MAX) {
		rc = -EBADMSG;
		snprintf(c->last_err, sizeof(c->last_err), "a ticket of %zu bytes", r->ticket.len);
	} else if ((rc = mon_ticket_session_key(c->key, c->name, r, skey)) != 0) {
		snprintf(c->last_err, sizeof(c->last_err),
			 "the ticket's session key does not open with our key (a monitor that is "
			 "not ours?)");
	} else {
		memcpy(c->ticket, r->ticket.data, r->ticket.len);
		c->ticket_len = r->ticket.len;
		c->gen = r->gen;
		memcpy(c->session_key, skey, sizeof(skey));
		c->issued_ns = cm_wall_ns();
		c->expires_ns = r->expires_ns > c->issued_ns ? r->expires_ns : c->issued_ns + 1;
		c->auth_epoch = r->auth_epoch;
		c->have = true;
		c->tickets++;
		c->last_err[0] = 0;
	}
	OPENSSL_cleanse(skey, sizeof(skey));
	cairn__mon__auth_ticket_reply__free_unpacked(r, NULL);
	return c->last_rc = rc;
}
