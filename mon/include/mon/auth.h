/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The entities' keys and caps in etcd (docs/design/auth.md):
 *   /cairn/<fsid>/auth/<name>   AuthEntity { name, key sealed under the KEK, caps }
 * and the `auth` commands. The KEK comes from the cluster key
 * (cm_auth_kek); only the monitors hold it.
 *
 * Threading: blocking (etcd); worker threads. mon_auth_decode is pure.
 */
#ifndef MON_AUTH_H
#define MON_AUTH_H

#include "cm/auth.h"
#include "cm/etcd.h"

#include <cairn/mon.pb-c.h>
#include <jansson.h>
#include <stdio.h>

struct mon_auth_entry {
	char name[CM_AUTH_NAME_MAX + 1];
	uint8_t key[CM_AUTH_KEY_LEN];
	char *caps; /* malloc'd, canonical */
	uint64_t created_ns;
};

void mon_auth_entry_fini(struct mon_auth_entry *a);

/* The etcd key of name (or of the prefix, name NULL). \return 0 or -ENAMETOOLONG. */
int mon_auth_key(const char *fsid, const char *name, char *out, size_t len);

/*
 * Decode one stored entity (the value at auth/<name>): the name must match,
 * the key must open under kek (kek NULL: the key is not opened, left
 * zero). \return 0, -EBADMSG (undecodable, another name, a key that does
 * not open), -ENOMEM.
 */
int mon_auth_decode(const uint8_t *kek, const char *name, const void *val, size_t len,
		    struct mon_auth_entry *out);

/*
 * Store name with key and caps (checked, stored canonical). create_only:
 * -EEXIST if it exists. \return 0, -EEXIST, -EINVAL (a bad name or caps),
 * or an etcd error.
 */
int mon_auth_put(struct cm_etcd *e, const char *fsid, const uint8_t kek[CM_AUTH_KEY_LEN],
		 const char *name, const uint8_t key[CM_AUTH_KEY_LEN], const char *caps,
		 bool create_only);

/* \return 0, -ENOENT, -EBADMSG, or an etcd error. */
int mon_auth_get(struct cm_etcd *e, const char *fsid, const uint8_t *kek, const char *name,
		 struct mon_auth_entry *out);

/* Every entity, sorted by name (keys opened if kek is not NULL). *v malloc'd. */
int mon_auth_list(struct cm_etcd *e, const char *fsid, const uint8_t *kek,
		  struct mon_auth_entry **v, size_t *n);

void mon_auth_list_free(struct mon_auth_entry *v, size_t n);

/* \return 0, -ENOENT, or an etcd error. */
int mon_auth_rm(struct cm_etcd *e, const char *fsid, const char *name);

/*
 * The built-in entities, made if absent with keys derived from the cluster
 * key: client.admin (admin) and client.bootstrap-osd (profile
 * bootstrap-osd). Called when a cluster is made and when a mon starts (a
 * cluster made before identities gains them). \return 0 or an error.
 */
int mon_auth_builtin(struct cm_etcd *e, const char *fsid, const char *cluster_key);

/*
 * `auth ls | add NAME [CAPS...] | get NAME | get-or-create NAME [CAPS...] |
 * rm NAME | caps NAME CAPS...` (argv from "auth"; CAPS words are joined by
 * spaces). Output text to out, or the JSON result into *res. kek NULL:
 * -EPERM ("this monitor holds no cluster key"). \return 0 or a negative
 * errno with err set.
 */
int mon_auth_command(struct cm_etcd *e, const char *fsid, const uint8_t *kek, int argc, char **argv,
		     bool json, FILE *out, json_t **res, char *err, size_t errlen);

/* ---------- service secrets and tickets (for the OSDs) ---------- */

#define MON_AUTH_GEN_S       3600ull /* a service secret's generation: one wall-clock hour */
#define MON_AUTH_TICKET_NS   (3600ull * 1000000000ull) /* a ticket's life */
#define MON_AUTH_SECRETS_MAX 4

struct mon_secrets {
	struct {
		uint64_t gen;
		uint8_t key[CM_AUTH_KEY_LEN];
	} v[MON_AUTH_SECRETS_MAX];

	size_t n; /* sorted by gen */
};

/* The generation current at wall-clock time now_ns. */
uint64_t mon_auth_gen(uint64_t now_ns);

/* The secret of generation gen, or NULL. */
const uint8_t *mon_secrets_find(const struct mon_secrets *s, uint64_t gen);

/* Seal / open a set of secrets under key with aad (etcd: the KEK; to an OSD: its key). */
int mon_secrets_seal(const uint8_t key[CM_AUTH_KEY_LEN], const char *aad,
		     const struct mon_secrets *s, uint8_t **out, size_t *len);
int mon_secrets_open(const uint8_t key[CM_AUTH_KEY_LEN], const char *aad, const uint8_t *in,
		     size_t len, struct mon_secrets *s);

/* The stored secrets. \return 0, -ENOENT (none yet), -EBADMSG, or an etcd error. */
int mon_auth_rotating_get(struct cm_etcd *e, const char *fsid, const uint8_t kek[CM_AUTH_KEY_LEN],
			  struct mon_secrets *s);

/*
 * Keep the previous, current and next generations at now_ns, dropping older
 * ones (one guarded etcd transaction; any mon may run it, the leader does
 * each tick). *changed: whether it wrote. \return 0 or an error.
 */
int mon_auth_rotate(struct cm_etcd *e, const char *fsid, const uint8_t kek[CM_AUTH_KEY_LEN],
		    uint64_t now_ns, bool *changed);

struct mon_ticket {
	char entity[CM_AUTH_NAME_MAX + 1];
	char *caps; /* malloc'd */
	uint8_t session_key[CM_AUTH_KEY_LEN];
	uint64_t expires_ns;
	uint64_t auth_epoch;
};

void mon_ticket_fini(struct mon_ticket *t);

/*
 * A ticket for entity (whose own key is ekey) with caps, sealed with the
 * current generation's secret: r's ticket, gen, session_key_sealed (all
 * malloc'd: mon_ticket_reply_fini), expires_ns, auth_epoch. \return 0,
 * -EAGAIN (no current secret yet), -ENOMEM, -EIO.
 */
int mon_ticket_make(const struct mon_secrets *s, uint64_t now_ns, uint64_t life_ns,
		    const char *entity, const uint8_t ekey[CM_AUTH_KEY_LEN], const char *caps,
		    uint64_t auth_epoch, Cairn__Mon__AuthTicketReply *r);

void mon_ticket_reply_fini(Cairn__Mon__AuthTicketReply *r);

/*
 * Open a ticket of generation gen. \return 0, -ENOENT (no secret of that
 * generation: fetch them again), -EBADMSG (forged, changed, not a ticket).
 */
int mon_ticket_open(const struct mon_secrets *s, uint64_t gen, const uint8_t *blob, size_t len,
		    struct mon_ticket *t);

/* The client's side: the session key of a reply, opened with its own key. \return 0 or -EBADMSG. */
int mon_ticket_session_key(const uint8_t ekey[CM_AUTH_KEY_LEN], const char *entity,
			   const Cairn__Mon__AuthTicketReply *r, uint8_t out[CM_AUTH_KEY_LEN]);

#endif
