/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PG merge, the leader's half (docs/design/osd.md, "PG merge"): a pool
 * whose pg_num_target is below its pg_num goes down in steps.
 *
 *  1. Every PG of the pool active+clean (as its primary reported it in the
 *     current map): a step starts. pg_num_pending = max(target, half) where
 *     half = mon_merge_half(pg_num); each source s in [pending, pg_num) goes
 *     into s - half. The OSDs pause the sources and their targets (client
 *     ops wait), and each primary reports merge_ready with its last_update
 *     once its PG is clean with nothing in flight.
 *  2. Every source and target reported ready since the step began: the step
 *     commits. pg_num = pending, and the map records each source's and
 *     target's version (last_merge): an OSD copy at exactly those versions
 *     merges clean, any other is backfilled.
 *  3. A step not ready within MON_MERGE_PENDING_MS gives up (its PGs go on)
 *     and starts again once every PG is clean. The step's start time is the
 *     leader's CLOCK_MONOTONIC: a new leader whose clock is behind it gives
 *     up at once (the step starts again), never waits for it.
 *
 * A step starts only when each source's up set is its target's (pgp_num
 * placed them together; `pool set pg_num` down drops the pool's upmaps).
 *
 * After a split (pgp_num < pg_num, no merge under way) the same reports
 * raise pgp_num, doubling it at most each time and only once every PG of
 * the pool is active+clean, so children move to their own OSDs a share at
 * a time (backfill); never while norebalance is set, and for an
 * erasure-coded pool only once no PG of it is pinned (mon/ec_pin.h: the
 * last doubling has finished moving its shards).
 *
 * Pure functions of the map, the reports and the time: tests drive them
 * without a cluster (tests/unit/mon/merge_test.c).
 */
#ifndef MON_MERGE_H
#define MON_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mon/proto.h"

#define MON_MERGE_PENDING_MS 30000

/* One PG as its primary last reported it. */
struct mon_merge_rep {
	int64_t pool;
	uint32_t seed;
	uint64_t epoch; /* the reporter's map epoch */
	bool clean;     /* active+clean */
	bool ready;     /* paused for a merge, nothing in flight */
	uint64_t lu_epoch, lu_seq;
};

enum mon_merge_kind {
	MON_MERGE_START = 1, /* pg_num_pending = to */
	MON_MERGE_COMMIT,    /* pg_num = to, last_merge = sources */
	MON_MERGE_GIVE_UP,   /* pg_num_pending = 0 */
	MON_MERGE_PGP,       /* pgp_num = to (after a split) */
};

/* One edit of one pool. */
struct mon_merge_edit {
	enum mon_merge_kind kind;
	int64_t pool;
	uint32_t from, to;
	uint64_t pending_epoch;       /* COMMIT, GIVE_UP: the step decided on */
	Cairn__Map__MergeSource *src; /* COMMIT: one per source seed, to .. from - 1 */
	size_t nsrc;
};

/*
 * What to do for every pool of m given the reports (any order; a PG
 * reported twice: the newer epoch counts) at now_ns. \return 0 (*out,
 * *nout; release with mon_merge_edits_free), -ENOMEM.
 */
int mon_merge_decide(const Cairn__Map__OsdMap *m, const struct mon_merge_rep *reps, size_t n,
		     uint64_t now_ns, struct mon_merge_edit **out, size_t *nout);

void mon_merge_edits_free(struct mon_merge_edit *e, size_t n);

/*
 * Apply edits to m (the newest map, perhaps newer than the one decided on),
 * each only if its pool is still where it was decided (same pg_num, same
 * pending step). \return how many it applied, -ENOMEM.
 */
int mon_merge_apply(const struct mon_merge_edit *e, size_t n, Cairn__Map__OsdMap *m,
		    uint64_t now_ns);

#endif
