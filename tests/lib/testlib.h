/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the unit and integration tests. */
#ifndef CM_TESTLIB_H
#define CM_TESTLIB_H

#include "cm/reactor.h"

#include <check.h>

/* The backend under test: CAIRN_REACTOR=uring|epoll (ctest runs both), default auto. */
enum cm_reactor_backend cm_test_backend(void);

/* A reactor on the backend under test; fails the test on error. */
struct cm_reactor *cm_test_reactor(void);

/*
 * The same for a process check does not run (a test's child): exits with
 * status 6 on error instead of asserting (check's asserts abort there).
 */
struct cm_reactor *cm_test_child_reactor(void);

/* Run r until *flag is true or timeout_ms passes. \return true if the flag was set. */
bool cm_test_run_until(struct cm_reactor *r, const volatile bool *flag, int timeout_ms);

/* Run r until cond(arg) holds or timeout_ms passes. */
bool cm_test_run_until_fn(struct cm_reactor *r, bool (*cond)(void *), void *arg, int timeout_ms);

/*
 * Run the suite in fork mode. \return the process exit status: 1 if a test
 * failed, else 77 (CM_TEST_SKIPPED: ctest's SKIP_RETURN_CODE, so the run
 * says SKIPPED, never PASS) if a test skipped part of itself, else 0.
 */
int cm_test_main(Suite *s);

#define CM_TEST_SKIPPED 77

/*
 * The calling test could not run what it is for here (no io_uring, not
 * root for a mount or a loop device): say why on stderr and mark the run
 * skipped (see cm_test_main). Call it, then return from the test. Works
 * from Check's forked children.
 */
void cm_test_skip(const char *why);

/* A deterministic byte pattern: fill and check (returns the first bad offset or -1). */
/* A 64-bit mixing function (murmur3's finaliser): cheap deterministic pseudo-randomness. */
uint64_t cm_test_mix(uint64_t x);
void cm_test_fill(void *buf, size_t len, uint64_t seed);
long cm_test_check(const void *buf, size_t len, uint64_t seed);
/*
 * The first offset where a and b differ (b NULL: where a is not zero), or
 * -1. Compare buffers with this and one assertion: each passing ck_assert
 * is a message to Check's parent, so one per byte of 16 MiB took minutes.
 */
long cm_test_first_diff(const void *a, const void *b, size_t len);

/*
 * A loop device over file (a raw block device for tests; direct I/O where
 * the file's file system takes it) into dev (e.g. "/dev/loop3").
 * \return 0, or -1 where none can be had (not root, no loop driver), said
 * on stderr. Detach with cm_test_loop_detach.
 */
int cm_test_loop_attach(const char *file, char *dev, size_t devlen);

/* Re-read the loop device's size from its file (after the file was resized). \return 0 or -1. */
int cm_test_loop_resize(const char *dev);

void cm_test_loop_detach(const char *dev);

#endif
