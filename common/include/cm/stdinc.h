/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one place system headers come from. Sets _GNU_SOURCE before any of them.
 */
#ifndef CM_STDINC_H
#define CM_STDINC_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)                                         \
	for ((var) = TAILQ_FIRST((head)); (var) && ((tvar) = TAILQ_NEXT((var), field), 1); \
	     (var) = (tvar))
#endif

#define CM_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* Each argument is evaluated once (unique temporaries, so nesting is fine). */
#define CM__CAT2(a, b) a##b
#define CM__CAT(a, b)  CM__CAT2(a, b)
#define CM__MINMAX(a, b, op, n)                                                                 \
	({                                                                                      \
		__typeof__(a) CM__CAT(cm__a, n) = (a);                                          \
		__typeof__(b) CM__CAT(cm__b, n) = (b);                                          \
		CM__CAT(cm__a, n) op CM__CAT(cm__b, n) ? CM__CAT(cm__a, n) : CM__CAT(cm__b, n); \
	})
#define CM_MIN(a, b)                       CM__MINMAX(a, b, <, __COUNTER__)
#define CM_MAX(a, b)                       CM__MINMAX(a, b, >, __COUNTER__)
#define CM_ALIGN_UP(x, a)                  (((x) + ((a)-1)) & ~((__typeof__(x))(a)-1))
#define CM_CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#define CM_UNUSED                          __attribute__((unused))
#define CM_LIKELY(x)                       __builtin_expect(!!(x), 1)
#define CM_UNLIKELY(x)                     __builtin_expect(!!(x), 0)

/* Free and NULL. */
#define CM_FREE(p)          \
	do {                \
		free(p);    \
		(p) = NULL; \
	} while (0)

/* Monotonic clock in nanoseconds. */
static inline uint64_t
cm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t
cm_now_ms(void)
{
	return cm_now_ns() / 1000000ull;
}

/* Wall clock in nanoseconds since 1970 (expiry times kept in the map). */
static inline uint64_t
cm_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Milliseconds from then to now, 0 when then is later: a tick reads the clock
 * once and then works for a while, and what it starts meanwhile stamps itself
 * with a later time. A plain now - then would wrap to ~2^64 and fire every
 * timeout that compares with it (it fired the recovery watchdog on plans
 * started a millisecond earlier in the same tick).
 */
static inline uint64_t
cm_ms_since(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

/* Little-endian helpers: never cast packed structs onto wire bytes. */
static inline void
cm_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void
cm_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void
cm_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t
cm_get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t
cm_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t
cm_get_le64(const uint8_t *p)
{
	return (uint64_t)cm_get_le32(p) | ((uint64_t)cm_get_le32(p + 4) << 32);
}

#endif
