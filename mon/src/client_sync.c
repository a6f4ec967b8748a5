/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Blocking monitor client; see mon/client_sync.h.
 */
#include "mon/client_sync.h"
#include "cm/auth.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(monc);

#define CONNECT_MS 2000

struct mon_sync {
	struct cm_reactor *r;
	struct cm_msgr *m;
	struct mon_addr *mons;
	size_t nmons;
	size_t next; /* the mon to try next */
	unsigned timeout_ms;
	struct cm_conn *c;
	char peer_addr[128];
	bool up, failed, lost;
	int fail_rc;
	uint64_t tid;
	/* the reply being waited for */
	uint64_t want_tid;
	uint16_t want_type;
	struct cm_msg *reply;
	char leader_addr[128]; /* from NOT_LEADER */
	bool not_leader;
	/* unsolicited messages (tid 0) */
	struct cm_msg *pushed[64];
	unsigned npushed;
	/* who we are to the mons (cm_daemon_identity) */
	char name[CM_HS_ENTITY_MAX];
	char entity[CM_HS_ENTITY_MAX];
	uint8_t key[CM_HS_KEY_LEN];
};

static int
cred(void *arg, struct cm_conn *c, unsigned kind, struct cm_cred *cr)
{
	struct mon_sync *s = arg;

	(void)c;
	(void)kind;
	snprintf(cr->auth_name, sizeof(cr->auth_name), "%s", s->name);
	memcpy(cr->key, s->key, CM_HS_KEY_LEN);
	return 0;
}

static void
on_msg(void *arg, struct cm_conn *c, struct cm_msg *m)
{
	struct mon_sync *s = arg;

	if (c != s->c) {
		cm_msg_destroy(m);
		return;
	}
	if (m->type == MON_MSG_NOT_LEADER) {
		Cairn__Mon__NotLeader *nl = (Cairn__Mon__NotLeader *)cm_msg_unpack_front(
			m, &cairn__mon__not_leader__descriptor);

		s->not_leader = true;
		snprintf(s->leader_addr, sizeof(s->leader_addr), "%s", nl ? nl->addr : "");
		if (nl)
			cairn__mon__not_leader__free_unpacked(nl, NULL);
		cm_msg_destroy(m);
		return;
	}
	if (m->tid == s->want_tid && m->type == s->want_type && !s->reply) {
		s->reply = m;
		return;
	}
	if (m->tid == 0 && s->npushed < CM_ARRAY_SIZE(s->pushed)) {
		s->pushed[s->npushed++] = m;
		return;
	}
	cm_msg_destroy(m);
}

static void
on_event(void *arg, struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct mon_sync *s = arg;

	if (c != s->c)
		return;
	if (ev == CM_CONN_UP) {
		s->up = true;
	} else if (ev == CM_CONN_FAILED) {
		s->failed = true;
		s->fail_rc = rc;
	} else {
		s->lost = true;
	}
}

int
mon_sync_open(const struct cm_daemon_conf *d, const char *mon_host, unsigned timeout_ms,
	      struct mon_sync **sp, char *err, size_t errlen)
{
	struct mon_sync *s = calloc(1, sizeof(*s));
	struct cm_msgr_opts mo;
	int rc;

	if (!s)
		return -ENOMEM;
	rc = mon_parse_hosts(mon_host, &s->mons, &s->nmons, err, errlen);
	if (rc) {
		free(s);
		return rc;
	}
	s->timeout_ms = timeout_ms ? timeout_ms : 10000;
	s->next = (size_t)(cm_now_ns() / 1000) % s->nmons;
	rc = cm_daemon_identity(d, CM_AUTH_ADMIN, s->name, s->key, err, errlen);
	if (rc) {
		mon_sync_close(s);
		return rc;
	}
	/* Our name on the wire: the entity's, with a random instance. */
	snprintf(s->entity, sizeof(s->entity), "%.63s.%08" PRIx32, s->name,
		 (uint32_t)(cm_now_ns() ^ ((uint64_t)getpid() << 16)));
	rc = cm_daemon_client_reactor_create(d, "monc", &s->r);
	if (!rc) {
		cm_daemon_msgr_opts(d, &mo);
		mo.entity = s->entity;
		mo.ops = (struct cm_msgr_ops){ .on_msg = on_msg, .on_event = on_event };
		mo.ops_arg = s;
		mo.auth.cred_fn = cred;
		mo.backoff_min_ms = 50;
		rc = cm_msgr_create(s->r, &mo, &s->m);
	}
	if (rc) {
		snprintf(err, errlen, "messenger: %s", cm_strerror(rc));
		mon_sync_close(s);
		return rc;
	}
	*sp = s;
	return 0;
}

static void
drop_conn(struct mon_sync *s)
{
	if (!s->c)
		return;
	cm_conn_close(s->c);
	cm_conn_put(s->c);
	s->c = NULL;
	s->up = s->lost = s->failed = false;
	s->peer_addr[0] = 0;
}

void
mon_sync_close(struct mon_sync *s)
{
	if (!s)
		return;
	drop_conn(s);
	if (s->reply)
		cm_msg_destroy(s->reply);
	for (unsigned i = 0; i < s->npushed; i++)
		cm_msg_destroy(s->pushed[i]);
	if (s->m)
		cm_msgr_destroy(s->m);
	if (s->r)
		cm_reactor_destroy(s->r);
	free(s->mons);
	memset(s->key, 0, sizeof(s->key));
	free(s);
}

const char *
mon_sync_peer(const struct mon_sync *s)
{
	return s->c && s->up ? cm_conn_peer(s->c) : "";
}

/* A session with addr (or the next mon when NULL), up within CONNECT_MS. */
static int
connect_to(struct mon_sync *s, const char *addr, uint64_t deadline)
{
	uint64_t until;
	int rc;

	if (!addr) {
		addr = s->mons[s->next].addr;
		s->next = (s->next + 1) % s->nmons;
	}
	if (s->c && s->up && !s->lost && strcmp(s->peer_addr, addr) == 0)
		return 0;
	drop_conn(s);
	rc = cm_msgr_connect_kind(s->m, addr, false, CM_CRED_MON, &s->c);
	if (rc)
		return rc;
	snprintf(s->peer_addr, sizeof(s->peer_addr), "%s", addr);
	until = CM_MIN(deadline, cm_now_ms() + CONNECT_MS);
	while (!s->up && !s->failed && !s->lost && cm_now_ms() < until)
		cm_reactor_run_once(s->r, 20);
	if (s->failed)
		return s->fail_rc ? s->fail_rc : -CM_EAUTH;
	if (!s->up) {
		CM_DEBUG("no session with %s", addr);
		drop_conn(s);
		return -ETIMEDOUT;
	}
	return 0;
}

/* Send one message; with want_type, wait for its reply. */
static int
exchange(struct mon_sync *s, uint16_t type, const ProtobufCMessage *req, bool leader,
	 uint16_t want_type, struct cm_msg **reply)
{
	uint64_t deadline = cm_now_ms() + s->timeout_ms;
	const char *target = NULL;
	char leader_addr[128] = "";
	int rc = -ETIMEDOUT;

	if (leader && s->leader_addr[0]) {
		snprintf(leader_addr, sizeof(leader_addr), "%s", s->leader_addr);
		target = leader_addr;
	}
	while (cm_now_ms() < deadline) {
		struct cm_msg *m;

		if (!s->c || !s->up || s->lost || (target && strcmp(target, s->peer_addr) != 0)) {
			rc = connect_to(s, target, deadline);
			target = NULL;
			if (rc == -CM_EAUTH || (s->failed && rc))
				return rc;
			if (rc) {
				cm_reactor_run_once(s->r, 50);
				continue;
			}
		}
		rc = cm_msg_create(type, ++s->tid, &m);
		if (!rc)
			rc = cm_msg_set_front(m, req);
		if (!rc)
			rc = cm_conn_send(s->c, m);
		if (rc) {
			cm_msg_destroy(m);
			drop_conn(s);
			continue;
		}
		s->want_tid = s->tid;
		s->want_type = want_type;
		s->not_leader = false;
		if (!want_type) {
			/* Fire and forget, but see a NOT_LEADER that comes back at once. */
			uint64_t until = cm_now_ms() + 20;

			while (!s->not_leader && !s->lost && cm_now_ms() < until)
				cm_reactor_run_once(s->r, 5);
			if (!s->not_leader)
				return 0;
		}
		while (!s->reply && !s->not_leader && !s->lost && cm_now_ms() < deadline)
			cm_reactor_run_once(s->r, 20);
		if (s->reply) {
			*reply = s->reply;
			s->reply = NULL;
			return 0;
		}
		if (s->not_leader) {
			/* Go to the leader it named, or wait for an election. */
			if (s->leader_addr[0]) {
				snprintf(leader_addr, sizeof(leader_addr), "%s", s->leader_addr);
				target = leader_addr;
			} else {
				uint64_t until = cm_now_ms() + 200;

				while (cm_now_ms() < until)
					cm_reactor_run_once(s->r, 20);
			}
			continue;
		}
		if (s->lost)
			drop_conn(s);
		rc = -ETIMEDOUT;
	}
	/* Out of time: never 0 here (a NOT_LEADER at the deadline left rc 0
	 * with no reply, and callers unpacked a NULL message). */
	return rc ? rc : -ETIMEDOUT;
}

int
mon_sync_call(struct mon_sync *s, uint16_t type, const ProtobufCMessage *req, bool leader,
	      uint16_t rep_type, const ProtobufCMessageDescriptor *rep_desc, ProtobufCMessage **rep)
{
	struct cm_msg *m = NULL;
	int rc = exchange(s, type, req, leader, rep_type, &m);

	if (rc)
		return rc;
	*rep = cm_msg_unpack_front(m, rep_desc);
	cm_msg_destroy(m);
	return *rep ? 0 : -EBADMSG;
}

int
mon_sync_send_leader(struct mon_sync *s, uint16_t type, const ProtobufCMessage *req)
{
	return exchange(s, type, req, true, 0, NULL);
}

int
mon_sync_command(struct mon_sync *s, int argc, char **argv, bool json,
		 Cairn__Mon__CommandReply **rep)
{
	Cairn__Mon__Command cmd = CAIRN__MON__COMMAND__INIT;

	cmd.n_args = (size_t)argc;
	cmd.args = argv;
	cmd.json = json;
	return mon_sync_call(s, MON_MSG_COMMAND, &cmd.base, false, MON_MSG_COMMAND_REPLY,
			     &cairn__mon__command_reply__descriptor, (ProtobufCMessage **)rep);
}

int
mon_sync_wait_push(struct mon_sync *s, uint16_t type, const ProtobufCMessageDescriptor *desc,
		   unsigned timeout_ms, ProtobufCMessage **msg)
{
	uint64_t deadline = cm_now_ms() + timeout_ms;

	for (;;) {
		for (unsigned i = 0; i < s->npushed; i++) {
			struct cm_msg *m = s->pushed[i];

			if (m->type != type)
				continue;
			memmove(&s->pushed[i], &s->pushed[i + 1],
				sizeof(*s->pushed) * (s->npushed - i - 1));
			s->npushed--;
			*msg = cm_msg_unpack_front(m, desc);
			cm_msg_destroy(m);
			return *msg ? 0 : -EBADMSG;
		}
		if (cm_now_ms() >= deadline)
			return -ETIMEDOUT;
		cm_reactor_run_once(s->r, 20);
	}
}
