/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sessions with OSDs, kept current with the cluster map: one per PG shard
 * each OSD runs (its map entry's addr, then shard_addrs), opened on first
 * use and replaced when the map shows another address (or, with
 * `incarnation`, another up_since: the OSD restarted). libcairn's objecter
 * and an OSD's connections to its peers are the two users. A session's
 * user word names its OSD and shard, so the messenger's events on it find
 * their way back (mon_osd_sessions_of).
 *
 * Threading: the messenger's reactor thread, one table per messenger.
 */
#ifndef MON_OSD_SESSIONS_H
#define MON_OSD_SESSIONS_H

#include "mon/osdmap.h"
#include "cm/msgr.h"

struct mon_osd_sessions {
	struct cm_msgr *msgr;
	bool lossless;    /* sessions the messenger keeps across resets (OSD to OSD) */
	bool up_only;     /* connect only to OSDs the map shows up (a client) */
	bool incarnation; /* a new up_since replaces the session too (a peer OSD) */
	bool per_osd;     /* one session per OSD, at its addr (set after init; a client):
			   * the OSD hands each message to the shard serving its PG */
	unsigned home;    /* per_osd: at the address of its shard home % shards instead
			   * (set after init; libcairn's io thread home) */

	struct mon_osd_sess {
		struct mon_osd_shl {
			struct cm_conn *c;
			char addr[128];
			uint64_t up_since;
		} * sh;

		unsigned nsh;
	} * osd;

	int nosd;
};

/* An empty table on msgr (borrowed: it outlives the table). */
void mon_osd_sessions_init(struct mon_osd_sessions *s, struct cm_msgr *msgr, bool lossless,
			   bool up_only, bool incarnation);

/* Close every session and free the table (it may be initialised again). */
void mon_osd_sessions_fini(struct mon_osd_sessions *s);

/*
 * The session with OSD id's shard that serves PG seed in map m (seed 0: its
 * first shard; with per_osd, the OSD's one session, shard 0, at its shard home's address),
 * connecting when there is none or the map moved it. *shard (may be NULL): that shard's index.
 * \return the session (borrowed: valid until the table drops it), or NULL: the map has no address
 * for it (or it is down, with up_only), out of memory, or the connect failed.
 */
struct cm_conn *mon_osd_sessions_get(struct mon_osd_sessions *s, const Cairn__Map__OsdMap *m,
				     int32_t id, uint32_t seed, unsigned *shard);

/* The OSD and shard a session of a table names. \return false: not one of ours. */
bool mon_osd_sessions_of(struct cm_conn *c, int32_t *id, unsigned *shard);

/*
 * c ended (the messenger said so): forget it. \return true when it was the
 * table's current session for its OSD and shard (now dropped; *id, *shard
 * say which), false when it is not ours or was replaced already.
 */
bool mon_osd_sessions_drop(struct mon_osd_sessions *s, struct cm_conn *c, int32_t *id,
			   unsigned *shard);

/*
 * Map m is current: close the sessions it no longer backs (the OSD is gone
 * or down, or has another address, or, with incarnation, restarted).
 * lost(arg, id) runs once per OSD that lost a session: whatever was in
 * flight on it is lost with it.
 */
void mon_osd_sessions_update(struct mon_osd_sessions *s, const Cairn__Map__OsdMap *m,
			     void (*lost)(void *arg, int32_t id), void *arg);

#endif
