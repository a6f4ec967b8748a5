/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A deterministic fake reactor for unit tests: a virtual clock and a queue
 * of callbacks, each due at a virtual time in milliseconds. Nothing runs by
 * itself and no time passes except in cm_test_fake_run_until, which runs
 * the due callbacks in time order, callbacks due at the same time in the
 * order they were scheduled, setting the clock to each one's time before
 * calling it. No sockets, no threads, no real clock: a scenario (beacons
 * every second, a tick every 100 ms, ...) plays out the same way every time
 * and takes no wall-clock time. Code under test is handed the time as
 * cm_test_fake_now_ns(f).
 *
 * Threading: one thread. Callbacks may schedule more (also at the current
 * time: they run in the same cm_test_fake_run_until, after those already
 * due then).
 */
#ifndef CM_TEST_FAKE_REACTOR_H
#define CM_TEST_FAKE_REACTOR_H

#include "cm/stdinc.h"

struct cm_test_fake;

/* f is the fake reactor; arg what was given when it was scheduled. */
typedef void (*cm_test_fake_fn)(struct cm_test_fake *f, void *arg);

/*
 * A fake reactor whose clock reads start_ms (a monotonic clock is rarely
 * near 0; starting elsewhere keeps "0 means never" stamps apart from real
 * times). \return 0 (*fp), -ENOMEM.
 */
int cm_test_fake_create(uint64_t start_ms, struct cm_test_fake **fp);

/* Free f and drop the callbacks still queued (they never run). NULL is a no-op. */
void cm_test_fake_destroy(struct cm_test_fake *f);

/* The virtual time. */
uint64_t cm_test_fake_now_ms(const struct cm_test_fake *f);
uint64_t cm_test_fake_now_ns(const struct cm_test_fake *f);

/*
 * Run fn(f, arg) at virtual time at_ms (one in the past runs at the next
 * cm_test_fake_run_until, at the current time). \return 0, -ENOMEM.
 */
int cm_test_fake_at(struct cm_test_fake *f, uint64_t at_ms, cm_test_fake_fn fn, void *arg);

/* The same, delay_ms after the current virtual time. */
int cm_test_fake_after(struct cm_test_fake *f, uint64_t delay_ms, cm_test_fake_fn fn, void *arg);

/*
 * Run every callback due at or before until_ms (an until_ms in the past
 * means now), in order, then set the clock to until_ms (never backwards).
 * \return how many ran.
 */
unsigned cm_test_fake_run_until(struct cm_test_fake *f, uint64_t until_ms);

/* Callbacks queued and not yet run. */
size_t cm_test_fake_pending(const struct cm_test_fake *f);

#endif
