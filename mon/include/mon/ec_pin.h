/* SPDX-License-Identifier: Apache-2.0 */
/*
 * EC placement pins (docs/design/ec-shard-ids.md). An erasure-coded PG's
 * OSD at position i holds shard i; an OSD holds one shard of a PG. When a
 * map change moves two positions of a PG at once (an OSD added, one out,
 * pgp_num raised, an upmap), the OSDs cannot tell which copy is which shard
 * any more and may be left with fewer than k: the PG is incomplete.
 *
 *  1. Hold. Every map edit passes mon_ec_pin_hold (mon_map_update): for
 *     each EC PG, a position whose OSD is still in keeps it; only a
 *     position whose OSD is gone or out moves (to CRUSH's answer for it,
 *     or if that OSD holds another position, to another of CRUSH's OSDs
 *     for the PG). Where the result is not CRUSH's, the map keeps it as a
 *     PgPin.
 *  2. Step. The leader (mon_pin_decide) moves one position of a pinned PG
 *     once its primary reports it active+clean in a map at least as new as
 *     the pin: to CRUSH's OSD for it if free, else (the wanted OSDs all
 *     hold other positions: a cycle) to a spare OSD, else (m >= 2) to a
 *     hole. Never while norebalance is set. A pin equal to CRUSH's answer
 *     goes.
 *
 * So each map moves at most the positions an OSD left, plus one per PG
 * by a step: the OSDs rebuild a moved position from the k or more others.
 * Pure functions of maps and reports (tests/unit/mon/ec_pin_test.c).
 */
#ifndef MON_EC_PIN_H
#define MON_EC_PIN_H

#include <stddef.h>
#include <stdint.h>

#include "mon/merge.h"
#include "mon/osdmap.h"
#include "mon/proto.h"

/*
 * Rebuild m's pins for its EC pools, m being old after an edit (m->epoch
 * set). A pin the edit itself changed (a step) is kept as it is unless it
 * equals CRUSH's answer. \return 0, -ENOMEM; a map whose placement cannot
 * be built is left as it is (its validation refuses it).
 */
int mon_ec_pin_hold(const Cairn__Map__OsdMap *old, Cairn__Map__OsdMap *m);

/* One step: pin (pool, seed), as decided on (osds, epoch), becomes to. */
struct mon_pin_step {
	int64_t pool;
	uint32_t seed;
	uint64_t epoch;
	int n;
	int32_t from[32], to[32];
};

/*
 * Steps for m given the primaries' reports (any order; a PG reported twice:
 * the newer epoch counts). \return 0 (*out, *nout; free(*out)), -ENOMEM.
 */
int mon_pin_decide(const Cairn__Map__OsdMap *m, const struct mon_merge_rep *reps, size_t n,
		   struct mon_pin_step **out, size_t *nout);

/* Apply steps to m (the newest map), each only if its pin is still as decided. \return how many. */
int mon_pin_apply(const struct mon_pin_step *s, size_t n, Cairn__Map__OsdMap *m);

/*
 * How many pins of m no step can move (in *n): every OSD CRUSH wants for
 * the PG holds another of its positions and no spare OSD of the pool's
 * rule is up and in. They stay until an OSD is added or comes back in.
 * pl: m's placement (the caller's, built once). \return 0, -ENOMEM.
 */
int mon_pin_stuck(const Cairn__Map__OsdMap *m, struct mon_placement *pl, size_t *n);

#endif
