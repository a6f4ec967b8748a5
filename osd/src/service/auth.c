/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OSD's identity (docs/design/auth.md): it is osd.<its store's uuid>,
 * with its key in osd_keyring (made at first start through
 * client.bootstrap-osd when missing). It proves that key to the monitors,
 * holds a ticket for its peers, and opens the tickets of everyone who
 * connects to it with the service secrets it fetches from the monitors.
 * Then every request is checked against the caps the ticket carried.
 *
 * Threading: the credentials and secrets are the node's, under nd->auth.mu
 * (every shard's messenger calls the handshake hooks on its own thread);
 * shard 0 renews them.
 */
#include "osd_int.h"
#include "mon/client_sync.h"
#include "cm/err.h"
#include "cm/log.h"

#include <openssl/crypto.h>

CM_LOG_SUBSYS(osd);

#define SECRETS_EVERY_MS (10 * 60 * 1000) /* the service secrets, fetched again */
#define BOOTSTRAP_MS     60000            /* a first start waits this long for the mons */

/* The keyring this OSD keeps its key in. */
static void
keyring_path(const struct osd_conf *cfg, char *out, size_t len)
{
	if (cfg->keyring_path && cfg->keyring_path[0])
		snprintf(out, len, "%s", cfg->keyring_path);
	else
		snprintf(out, len, "%s.keyring", cfg->osd_data);
}

/*
 * First start: ask the mons for our key as client.bootstrap-osd (its key
 * from osd_bootstrap_keyring, or derived from cluster_key) and keep it.
 */
static int
bootstrap(const struct osd_conf *cfg, const char *name, const char *path,
	  uint8_t key[CM_AUTH_KEY_LEN])
{
	struct cm_daemon_conf d = cfg->d;
	Cairn__Mon__CommandReply *rep = NULL;
	char *argv[] = { "auth", "get-or-create", (char *)name, "profile", "osd" };
	char err[256] = "";
	uint64_t deadline = cm_now_ms() + BOOTSTRAP_MS;
	int rc = -ETIMEDOUT;

	d.name = (char *)CM_AUTH_BOOTSTRAP_OSD;
	d.keyring = cfg->bootstrap_keyring;
	d.key = (char *)"";
	while (cm_now_ms() < deadline) {
		struct mon_sync *s;

		rc = mon_sync_open(&d, cfg->mon_host, 5000, &s, err, sizeof(err));
		if (rc == -ENOENT || rc == -EPERM || rc == -EINVAL) {
			CM_ERR("no key of its own (%s) and none to bootstrap with: %s", path, err);
			return rc;
		}
		if (rc == 0) {
			rc = mon_sync_command(s, 5, argv, false, &rep);
			mon_sync_close(s);
		}
		if (rc == 0 && rep->rc == 0) {
			rc = cm_keyring_parse(rep->out, strlen(rep->out), name, key);
			OPENSSL_cleanse(rep->out, strlen(rep->out));
			cairn__mon__command_reply__free_unpacked(rep, NULL);
			if (rc)
				return rc;
			rc = cm_keyring_write(path, name, key);
			if (rc)
				CM_ERR_RC(rc, "writing keyring=%s", path);
			else
				CM_NOTICE(
					"made the key of %s with client.bootstrap-osd, kept in %s",
					name, path);
			return rc;
		}
		if (rc == 0) {
			rc = rep->rc;
			CM_ERR("bootstrap: the mons refused to make %s's key: %s", name,
			       rep->err ? rep->err : cm_strerror(rc));
			cairn__mon__command_reply__free_unpacked(rep, NULL);
			return rc;
		}
		if (rc == -CM_EAUTH) {
			CM_ERR("bootstrap: the mons refused client.bootstrap-osd's key");
			return -EPERM;
		}
		usleep(500000);
	}
	CM_ERR("bootstrap: no monitor answered in %d s", BOOTSTRAP_MS / 1000);
	return rc;
}

int
osd__auth_init(struct osd_node *nd, const struct osd_conf *cfg, const char *uuid)
{
	struct osd_auth *a = &nd->auth;
	char name[CM_HS_ENTITY_MAX], path[PATH_MAX], err[256];
	uint8_t key[CM_AUTH_KEY_LEN];
	int rc;

	pthread_mutex_init(&a->mu, NULL);
	a->inited = true;
	snprintf(name, sizeof(name), "osd.%.56s", uuid);
	keyring_path(cfg, path, sizeof(path));
	rc = cm_keyring_read(path, name, key, err, sizeof(err));
	if (rc == -ENOENT)
		rc = bootstrap(cfg, name, path, key);
	else if (rc)
		CM_ERR("%s", err);
	if (rc)
		return rc;
	mon_creds_init(&a->creds, name, key);
	OPENSSL_cleanse(key, sizeof(key));
	CM_NOTICE("identity %s (keyring %s)", name, path);
	return 0;
}

void
osd__auth_fini(struct osd_node *nd)
{
	if (!nd->auth.inited)
		return;
	mon_creds_fini(&nd->auth.creds);
	OPENSSL_cleanse(&nd->auth.secrets, sizeof(nd->auth.secrets));
	pthread_mutex_destroy(&nd->auth.mu);
	nd->auth.inited = false;
}

int
osd__cred_fn(void *arg, struct cm_conn *c, unsigned kind, struct cm_cred *out)
{
	struct osd *o = arg;
	struct osd_auth *a = &o->node->auth;
	int rc;

	(void)c;
	pthread_mutex_lock(&a->mu);
	rc = mon_creds_fill(&a->creds, kind, out);
	pthread_mutex_unlock(&a->mu);
	return rc;
}

int
osd__auth_fn(void *arg, const struct cm_hs_hello_auth *h, uint8_t key[CM_HS_KEY_LEN],
	     struct cm_hs_auth *ha, char *reason, size_t rlen)
{
	struct osd *o = arg;
	struct osd_auth *a = &o->node->auth;
	struct mon_ticket t;
	uint64_t now = cm_wall_ns();
	int rc;

	if (!h->ticket_len) {
		snprintf(reason, rlen, "no ticket (ask a monitor for one)");
		return -CM_EAUTH;
	}
	pthread_mutex_lock(&a->mu);
	rc = mon_ticket_open(&a->secrets, h->ticket_gen, h->ticket, h->ticket_len, &t);
	pthread_mutex_unlock(&a->mu);
	if (rc == -ENOENT) {
		/* (a generation newer than ours: we fetch the secrets; the client retries) */
		atomic_store(&a->want_secrets, true);
		snprintf(reason, rlen,
			 "a ticket of generation %" PRIu64 " this OSD has no secret of",
			 h->ticket_gen);
		return -CM_ETICKET;
	}
	if (rc) {
		snprintf(reason, rlen, "a ticket that does not open (forged or damaged)");
		return -CM_EAUTH;
	}
	/* Another's ticket is refused for good; an expired or revoked one
	 * until the client brings a new one (-CM_ETICKET: it retries). */
	rc = -CM_ETICKET;
	if (strcmp(t.entity, h->auth_name)) {
		rc = -CM_EAUTH;
		snprintf(reason, rlen, "the ticket is %s's", t.entity);
	} else if (t.expires_ns <= now) {
		snprintf(reason, rlen, "the ticket expired");
	} else if (o->map && t.auth_epoch < o->map->auth_epoch) {
		snprintf(reason, rlen, "the ticket is older than auth epoch %" PRIu64,
			 o->map->auth_epoch);
	} else {
		rc = 0;
	}
	if (!rc) {
		memcpy(key, t.session_key, CM_HS_KEY_LEN);
		ha->caps = t.caps;
		t.caps = NULL;
		ha->expires_ns = t.expires_ns;
		ha->auth_epoch = t.auth_epoch;
	}
	mon_ticket_fini(&t);
	return rc;
}

bool
osd__auth_ready(struct osd *o)
{
	struct osd_auth *a = &o->node->auth;
	bool ok;

	pthread_mutex_lock(&a->mu);
	ok = a->creds.have && a->secrets.n > 0;
	pthread_mutex_unlock(&a->mu);
	return ok;
}

void
osd__auth_tick(struct osd *o, uint64_t now)
{
	struct osd_auth *a = &o->node->auth;
	bool want = !a->secrets_ms || now - a->secrets_ms >= SECRETS_EVERY_MS ||
		    atomic_load(&a->want_secrets);

	if (want && (!a->rot_sent_ms || now - a->rot_sent_ms >= 1000)) {
		Cairn__Mon__AuthRotatingRequest q = CAIRN__MON__AUTH_ROTATING_REQUEST__INIT;

		a->rot_tid = ++o->tid;
		if (mon_async_send(o->monc, MON_MSG_AUTH_ROTATING_REQUEST, a->rot_tid, &q.base,
				   false) == 0)
			a->rot_sent_ms = now;
	}
	pthread_mutex_lock(&a->mu);
	(void)mon_creds_tick(&a->creds, o->monc, ++o->tid, now, o->map ? o->map->auth_epoch : 0);
	pthread_mutex_unlock(&a->mu);
}

bool
osd__auth_reply(struct osd *o, struct cm_msg *m)
{
	struct osd_auth *a = &o->node->auth;

	if (m->type == MON_MSG_AUTH_TICKET_REPLY) {
		int rc;

		pthread_mutex_lock(&a->mu);
		rc = m->tid == a->creds.tid ? mon_creds_take(&a->creds, m) : 0;
		pthread_mutex_unlock(&a->mu);
		if (rc)
			CM_LOG_RL(CM_LOG_ERR, "no ticket for our peers: %s", a->creds.last_err);
		return true;
	}
	if (m->type == MON_MSG_AUTH_ROTATING_REPLY) {
		Cairn__Mon__AuthRotatingReply *r =
			(Cairn__Mon__AuthRotatingReply *)cm_msg_unpack_front(
				m, &cairn__mon__auth_rotating_reply__descriptor);
		struct mon_secrets s;
		char aad[CM_HS_ENTITY_MAX + 32];
		int rc = r ? r->rc : -EBADMSG;

		a->rot_sent_ms = 0;
		if (!rc && m->tid == a->rot_tid) {
			snprintf(aad, sizeof(aad), "cairn-rotating %s", a->creds.name);
			rc = mon_secrets_open(a->creds.key, aad, r->secrets_sealed.data,
					      r->secrets_sealed.len, &s);
			if (!rc) {
				pthread_mutex_lock(&a->mu);
				a->secrets = s;
				pthread_mutex_unlock(&a->mu);
				OPENSSL_cleanse(&s, sizeof(s));
				a->secrets_ms = cm_now_ms();
				atomic_store(&a->want_secrets, false);
			}
		}
		if (rc)
			CM_LOG_RL(CM_LOG_ERR, "no service secrets from the mons: %s%s%s",
				  cm_strerror(rc), r && r->err && r->err[0] ? ": " : "",
				  r && r->err ? r->err : "");
		if (r)
			cairn__mon__auth_rotating_reply__free_unpacked(r, NULL);
		return true;
	}
	return false;
}

/*
 * Is c's ticket older than the map's auth epoch (an `auth rm` or `auth caps`
 * since)? Then its session is reset: the peer comes back with a new ticket,
 * or not at all. \return true if it was.
 */
static bool
revoked(struct osd *o, struct cm_conn *c, const struct cm_conn_auth *ca)
{
	if (!ca->name[0] || !o->map || ca->auth_epoch >= o->map->auth_epoch)
		return false;
	CM_LOG_RL(CM_LOG_NOTICE,
		  "%s: its ticket is older than auth epoch %" PRIu64 ": session reset", ca->name,
		  o->map->auth_epoch);
	cm_conn_reset_socket(c);
	return true;
}

bool
osd__auth_peer_ok(struct osd *o, struct cm_conn *c, uint16_t type)
{
	const struct cm_conn_auth *ca = cm_conn_auth(c);

	/*
	 * A peer's session is lossless: a message it delivered is never sent
	 * again, so one from a revoked session is still handled (the session
	 * was proven when it began), and the session is reset so that what
	 * comes next comes on a new handshake with a new ticket, or not at
	 * all. Dropping it lost a replica's write (the repop watchdog fired).
	 */
	(void)revoked(o, c, ca);
	if (!ca->name[0] || cm_caps_is_osd(&ca->caps))
		return true;
	o->auth_refused++;
	CM_LOG_RL(CM_LOG_WARN, "message type=%u from %s refused: only OSDs send it", type,
		  ca->name);
	return false;
}

int
osd__auth_check(struct osd *o, struct cm_conn *c, int64_t pool, const char *nspace, unsigned need,
		bool all_ns)
{
	const struct cm_conn_auth *ca = cm_conn_auth(c);
	const char *pname = NULL;

	if (!ca->name[0])
		return 0; /* the shared key: no identities */
	if (revoked(o, c, ca))
		return -EKEYEXPIRED;
	if (ca->caps.admin || ca->caps.profile_osd)
		return 0;
	for (size_t i = 0; o->map && i < o->map->n_pools; i++)
		if (o->map->pools[i]->id == pool)
			pname = o->map->pools[i]->name;
	if (pname && cm_caps_osd(&ca->caps, pname, nspace ? nspace : "", need, all_ns))
		return 0;
	o->auth_refused++;
	CM_LOG_RL(CM_LOG_NOTICE, "%s may not %s pool %s%s%s: -EPERM", ca->name,
		  need & CM_CAP_W ? "write" : "read", pname ? pname : "?",
		  all_ns ? "" : " namespace ",
		  all_ns                ? " (every namespace)"
		  : nspace && nspace[0] ? nspace
					: "(default)");
	return -EPERM;
}
