/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The leader's cluster logic: what the mon holding the leader key (under its
 * etcd lease) decides about OSDs, and the campaign that makes a mon the
 * leader. See docs/design/0003-monitors.md, "Cluster logic (leader)".
 *
 *  - Beacons: an up OSD without a beacon for osd_grace is marked down. A
 *    boot, a map that shows an OSD coming up, and becoming the leader each
 *    give the OSD a fresh grace.
 *  - Failure reports: an OSD is marked down once peers on min_reporters
 *    distinct hosts report it failed (no more hosts than have an up OSD
 *    other than it, at least one: a small cluster needs fewer), each for at
 *    least the report grace (osd_report_grace; default 0: at once, the
 *    reporter waited its own heartbeat grace) or with `immediate` (its
 *    connection was refused: the process is gone), and each received within
 *    the last 2 * max(report grace, 10 s). `alive` withdraws a report; at
 *    most MON_LEADER_MAX_REPORTS are kept per OSD.
 *  - Out: a down OSD still in is marked out down_out_interval after it went
 *    down (its down_stamp_ns in the map). NODOWN and NOOUT stop these.
 *
 * A decision is made on the reactor from the current map
 * (mon_leader_decide), then applied to the newest map in one guarded etcd
 * transaction (mon_leader_apply, run by mon_leader_round on a worker), which
 * re-checks each OSD: one that rebooted after the decision's map is left
 * up.
 *
 * Every decision takes the time as an argument (now_ns, CLOCK_MONOTONIC
 * like cm_now_ns()) and the map, and touches no etcd, socket or thread, so
 * tests drive it on virtual time (tests/unit/mon/leader_test.c).
 *
 * Threading: a struct mon_leader belongs to one reactor thread, except
 * mon_leader_round, which runs on a worker (one round at a time) and touches
 * only the lease; the reactor may go on calling the other functions
 * meanwhile, but calls mon_leader_round_done only after the round returned.
 */
#ifndef MON_LEADER_H
#define MON_LEADER_H

#include "mon/cluster.h"
#include "mon/merge.h"
#include "mon/proto.h"
#include "cm/etcd.h"

#include <cairn/osdmap.pb-c.h>

#define MON_LEADER_MAX_REPORTS 8 /* failure reports kept per OSD (distinct reporters) */

struct mon_leader_opts {
	size_t opts_size;         /* set by mon_leader_opts_init */
	uint64_t osd_grace_ms;    /* default 20000 */
	uint64_t report_grace_ms; /* default 0: a report counts at once */
	uint64_t down_out_ms;     /* default 600000 */
	unsigned min_reporters;   /* default 2 */
	/* For the campaign only (mon_leader_round); copied. */
	uint64_t lease_ttl_ms; /* default 10000 */
	const char *fsid;      /* the cluster's keys are under /cairn/FSID/ */
	const char *id;        /* this mon's name */
	const char *addr;      /* this mon's messenger address */
};

/* Defaults as above; strings NULL. */
void mon_leader_opts_init(struct mon_leader_opts *o, size_t size);

struct mon_leader;

/*
 * \return 0 (*lp; not the leader until a round says so), -EINVAL (o NULL,
 * osd_grace_ms or min_reporters 0), -ENOMEM.
 */
int mon_leader_create(const struct mon_leader_opts *o, struct mon_leader **lp);

/* Free l and the beacons it kept. Does not touch etcd (see mon_leader_resign). NULL is a no-op. */
void mon_leader_destroy(struct mon_leader *l);

/* ---------- what the mon hears (reactor) ---------- */

/*
 * A new map (every mon, leader or not, so a new leader starts from the
 * current states): OSDs that came up since the last one start their grace
 * at now_ns; OSDs that are down lose their failure reports.
 */
void mon_leader_map(struct mon_leader *l, const Cairn__Map__OsdMap *m, uint64_t now_ns);

/*
 * A beacon from b->osd_id at now_ns: restarts its grace, and keeps b for
 * mon_leader_stats (rates from the counters' change since its previous one).
 * \return 0 (l took ownership of b), -EINVAL (osd_id out of range), -ENOMEM;
 * on error b stays the caller's.
 */
int mon_leader_beacon(struct mon_leader *l, Cairn__Mon__OsdBeacon *b, uint64_t now_ns);

/*
 * A failure report (f->alive: a withdrawal) received at now_ns. A report
 * says since when the reporter has missed the target (now_ns -
 * failed_for_ms); a reporter's later reports refresh only the time received.
 * Reports about itself, about ids out of range, and new reporters beyond
 * MON_LEADER_MAX_REPORTS are ignored.
 */
void mon_leader_failure(struct mon_leader *l, const Cairn__Mon__OsdFailure *f, uint64_t now_ns);

/* OSD id booted at now_ns (its boot was committed): a fresh grace, no reports. */
void mon_leader_booted(struct mon_leader *l, int32_t id, uint64_t now_ns);

/* ---------- decisions (reactor) ---------- */

/* Which OSDs to mark down and out, and the map epoch it was decided on. */
struct mon_leader_decision {
	uint64_t epoch;
	int32_t *down;
	bool *down_dead; /* [ndown]: a peer's connection to it was refused (its process is gone) */
	size_t ndown;
	int32_t *out;
	size_t nout;
	struct mon_merge_edit *merges; /* PG merge steps (mon/merge.h) */
	size_t nmerges;
	struct mon_pin_step *pins; /* EC pin steps (mon/ec_pin.h) */
	size_t npins;
	uint64_t wall_ns; /* blocklist entries that ended by this wall-clock time go */
	size_t nexpire;   /* how many there were */
};

/*
 * Add to d the blocklist entries of m that expired at wall_ns (the
 * leader's CLOCK_REALTIME; OSDs never compare times): mon_leader_apply
 * drops those still expired then.
 */
void mon_leader_decide_expiry(struct mon_leader_decision *d, const Cairn__Map__OsdMap *m,
			      uint64_t wall_ns);

/*
 * Decide on m at now_ns (see the file comment); logs each OSD to be marked
 * down and why. The map's NODOWN/NOOUT flags are checked by
 * mon_leader_apply, not here. \return 0 (*d, release with
 * mon_leader_decision_fini; ndown == nout == 0: nothing to do), -ENOMEM (*d
 * empty).
 */
int mon_leader_decide(struct mon_leader *l, const Cairn__Map__OsdMap *m, uint64_t now_ns,
		      struct mon_leader_decision *d);

/* Free d's lists and empty it. Safe on an empty (zeroed) decision. */
void mon_leader_decision_fini(struct mon_leader_decision *d);

/*
 * The map edit: apply d to m (the newest map, perhaps newer than d->epoch)
 * at now_ns, re-checking each OSD: down only if still up, not NODOWN, and up
 * since d->epoch or before (not rebooted since); out only if still down and
 * in, not NOOUT, and down for down_out_ms at now_ns. Pure; any thread.
 * \return how many OSDs it changed.
 */
unsigned mon_leader_apply(const struct mon_leader *l, const struct mon_leader_decision *d,
			  Cairn__Map__OsdMap *m, uint64_t now_ns);

/*
 * The `status` figures from what the up OSDs (as of the last
 * mon_leader_map) last reported, over map m: capacity, rates, PG states (a
 * PG two OSDs report counts as the newer report; one reported at an older
 * epoch than m's is "+stale"). Allocation failures leave PGs out.
 * Release *st with mon_stats_free.
 */
void mon_leader_stats(const struct mon_leader *l, const Cairn__Map__OsdMap *m,
		      struct mon_stats *st);

/* ---------- the campaign ---------- */

/* One round's work: in, the decision to apply if this mon leads; out, who leads. */
struct mon_leader_round {
	struct mon_leader_decision dec; /* in; may be empty; still the caller's */
	bool leader;                    /* out: this mon holds the leader key */
	char leader_name[64];           /* out: "" when the round could not tell */
	char leader_addr[128];
};

/*
 * One round, blocking on etcd (a worker's job): register (grant a lease,
 * put mons/ID and alive/ID under it) or keep the lease alive, then take the
 * leader key if free and read who holds it; if this mon leads, apply rd->dec
 * in one map update (mon_map_update with mon_leader_apply at now_ns).
 * Failures are logged (rate-limited) and leave rd saying nothing is known.
 * \return 0, or the etcd error that ended the round (rd->leader false).
 */
int mon_leader_round(struct mon_leader *l, struct cm_etcd *e, struct mon_map_store *store,
		     struct mon_leader_round *rd, uint64_t now_ns);

/*
 * On the reactor once rd's round returned (or, in tests, with a made-up
 * rd): this mon leads if the round says so, or if it led and the round
 * could not tell who leads while its lease was renewed less than
 * lease_ttl_ms before now_ns. On becoming the leader every tracked OSD gets
 * a fresh grace from now_ns and loses its reports (beacons went to the old
 * leader). Logs the changes.
 */
void mon_leader_round_done(struct mon_leader *l, const struct mon_leader_round *rd,
			   uint64_t now_ns);

/* Give up the lease now (blocking), so another mon leads at once instead of after the TTL. */
void mon_leader_resign(struct mon_leader *l, struct cm_etcd *e);

/* Whether this mon leads, as of the last mon_leader_round_done. */
bool mon_leader_is_leader(const struct mon_leader *l);

/* The leader's name and address as last seen ("" when none yet); valid until the next round_done.
 */
const char *mon_leader_name(const struct mon_leader *l);
const char *mon_leader_addr(const struct mon_leader *l);

#endif
