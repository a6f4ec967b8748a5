/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A monitor's service, on the caller's reactor: every mon serves the cluster
 * map (the full map, then incrementals from a ring of the last
 * MON_SERVER_INC_RING, to subscribed sessions as epochs arrive through an
 * etcd watch; the map is re-read and the watch restarted when it fails) and
 * answers commands; OSD boots, beacons and failure reports go to the leader
 * (others answer NOT_LEADER), whose logic is mon/leader.h. Each tick
 * (tick_ms) a worker renews the lease and campaigns; the leader's down/out
 * decisions are made on the reactor and applied by that worker. Also serves
 * /metrics when asked to.
 *
 * Threads: the caller's reactor (messenger, timers, map state), a pool of
 * `workers` threads for every blocking etcd call (commands, boots, ticks),
 * and the etcd watch's thread (posts new maps to the reactor).
 *
 * Ownership: the server borrows the reactor and the etcd client, which
 * must outlive it.
 */
#ifndef MON_SERVER_H
#define MON_SERVER_H

#include "mon/leader.h"
#include "cm/etcd.h"
#include "cm/msgr.h"

#define MON_SERVER_INC_RING 512 /* incrementals kept in memory for subscribers catching up */

struct mon_server_opts {
	size_t opts_size;     /* set by mon_server_opts_init */
	const char *id;       /* this mon's name (required) */
	const char *fsid;     /* the cluster (required) */
	const char *addr;     /* where the messenger listens, "IP:PORT" (required) */
	struct cm_etcd *etcd; /* borrowed (required) */
	/*
	 * Entity, cluster key, timeouts, TLS (cm_daemon_msgr_opts fills them);
	 * ops and ops_arg are the server's own. Strings are borrowed for
	 * mon_server_create only.
	 */
	struct cm_msgr_opts msgr;
	const char *metrics_addr; /* serve /metrics here; NULL or "": not at all */
	/* Graces, reporters, down -> out, lease TTL; fsid, id and addr come from above. */
	struct mon_leader_opts leader;
	uint64_t tick_ms; /* lease renewal and leader checks; default 1000 */
	/* The cluster key: the KEK that opens the entities' keys comes from it
	 * (mon/auth.h). NULL: auth commands are refused. Borrowed. */
	const char *cluster_key;
	uint64_t ticket_ms; /* a ticket's life; 0: MON_AUTH_TICKET_NS (an hour) */
	unsigned workers;   /* etcd worker threads; default 2 */
};

/* Defaults as above; the msgr and leader members get their own defaults. */
void mon_server_opts_init(struct mon_server_opts *o, size_t size);

struct mon_server;

/*
 * Start the service: open the map store, read the map and start its watch
 * (blocking on etcd), listen, serve /metrics, arm the tick. Call on r's
 * thread before running r; the work happens while r runs. Logs what failed.
 * \return 0 (*sp), -EINVAL (a required option missing), -ENOENT (no map in
 * etcd: the cluster was not created), -EBADMSG (undecodable map), an etcd
 * error, the messenger's or the metrics listener's error (e.g.
 * -EADDRINUSE), -ENOMEM.
 */
int mon_server_create(struct cm_reactor *r, const struct mon_server_opts *o,
		      struct mon_server **sp);

/*
 * Stop and free, on r's thread after r stopped running: stops the watch,
 * lets work in flight finish and runs its completions, gives up the lease
 * (another mon leads at once), closes every session. NULL is a no-op.
 */
void mon_server_destroy(struct mon_server *s);

/* The messenger's port (the one picked when addr's port was 0). */
uint16_t mon_server_port(const struct mon_server *s);

/* The epoch of the map it serves. */
uint64_t mon_server_epoch(const struct mon_server *s);

#endif
