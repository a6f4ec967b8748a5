/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging. Each .c names its subsystem once with CM_LOG_SUBSYS(name); messages
 * name objects as key=value. Levels ERR < WARN < NOTICE < INFO < DEBUG; DEBUG
 * is switched per subsystem at run time. Output goes to stderr or a file, one
 * write(2) per line (lines stay whole across threads).
 *
 * Threading: every function is thread-safe.
 */
#ifndef CM_LOG_H
#define CM_LOG_H

#include "cm/stdinc.h"
#include "cm/err.h"

enum cm_log_level {
	CM_LOG_ERR = 0,
	CM_LOG_WARN,
	CM_LOG_NOTICE,
	CM_LOG_INFO,
	CM_LOG_DEBUG,
};

struct cm_log_subsys {
	const char *name;
	atomic_bool debug;
	struct cm_log_subsys *next;
};

/* Per call-site state of the rate-limited form. */
struct cm_log_ratelimit {
	_Atomic uint64_t window_start_ms;
	atomic_uint count;
	atomic_uint suppressed;
};

void cm_log_subsys_register(struct cm_log_subsys *ss);

#define CM_LOG_SUBSYS(n)                                                   \
	static struct cm_log_subsys cm__log_ss = { .name = #n };           \
	__attribute__((constructor)) static void cm__log_ss_register(void) \
	{                                                                  \
		cm_log_subsys_register(&cm__log_ss);                       \
	}

void cm_log_write(struct cm_log_subsys *ss, enum cm_log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* \return true if a message at this level from this subsystem would be written. */
bool cm_log_enabled(const struct cm_log_subsys *ss, enum cm_log_level lvl);

/* \return true when this call site may log now (at most `burst` per second). */
bool cm_log_ratelimit_pass(struct cm_log_ratelimit *rl, unsigned burst, unsigned *suppressed);

#define CM_LOG(lvl, ...)                                               \
	do {                                                           \
		if (cm_log_enabled(&cm__log_ss, (lvl)))                \
			cm_log_write(&cm__log_ss, (lvl), __VA_ARGS__); \
	} while (0)

#define CM_ERR(...)    CM_LOG(CM_LOG_ERR, __VA_ARGS__)
#define CM_WARN(...)   CM_LOG(CM_LOG_WARN, __VA_ARGS__)
#define CM_NOTICE(...) CM_LOG(CM_LOG_NOTICE, __VA_ARGS__)
#define CM_INFO(...)   CM_LOG(CM_LOG_INFO, __VA_ARGS__)
#define CM_DEBUG(...)  CM_LOG(CM_LOG_DEBUG, __VA_ARGS__)

/* Appends " rc=-5 (EIO: Input/output error)". */
#define CM_LOG_RC(lvl, rc, fmt, ...)                                                 \
	CM_LOG(lvl, fmt " rc=%d (%s: %s)", ##__VA_ARGS__, (int)(rc), cm_errname(rc), \
	       cm_strerror(rc))
#define CM_ERR_RC(rc, fmt, ...)  CM_LOG_RC(CM_LOG_ERR, rc, fmt, ##__VA_ARGS__)
#define CM_WARN_RC(rc, fmt, ...) CM_LOG_RC(CM_LOG_WARN, rc, fmt, ##__VA_ARGS__)

/* Rate-limited form for per-I/O paths: at most 10 lines a second per call site. */
#define CM_LOG_RL(lvl, fmt, ...)                                                                 \
	do {                                                                                     \
		static struct cm_log_ratelimit cm__rl;                                           \
		unsigned cm__supp = 0;                                                           \
		if (cm_log_enabled(&cm__log_ss, (lvl)) &&                                        \
		    cm_log_ratelimit_pass(&cm__rl, 10, &cm__supp)) {                             \
			if (cm__supp)                                                            \
				cm_log_write(&cm__log_ss, (lvl), fmt " (%u similar suppressed)", \
					     ##__VA_ARGS__, cm__supp);                           \
			else                                                                     \
				cm_log_write(&cm__log_ss, (lvl), fmt, ##__VA_ARGS__);            \
		}                                                                                \
	} while (0)

/* Global threshold; messages above it are dropped (DEBUG also needs the subsystem switch). */
void cm_log_set_level(enum cm_log_level lvl);
enum cm_log_level cm_log_get_level(void);

/*
 * Turn DEBUG on or off for a subsystem by name ("all" for every one).
 * \return 0, or -ENOENT for an unknown subsystem.
 */
int cm_log_set_debug(const char *subsys, bool on);

/*
 * Send output to a file (appended), or back to stderr with NULL.
 * \return 0, or a negative errno from open(2).
 */
int cm_log_set_file(const char *path);

/* Parse "err|warn|notice|info|debug". \return 0 or -EINVAL. */
int cm_log_level_parse(const char *s, enum cm_log_level *out);

/* Name prefixed to every line (e.g. "osd.3"); copied. */
void cm_log_set_ident(const char *ident);

#endif
