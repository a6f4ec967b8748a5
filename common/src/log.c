/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/log.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/time.h>

static struct cm_log_subsys *g_log_subsys_head;
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_log_level = CM_LOG_NOTICE;
static atomic_int g_log_fd = STDERR_FILENO;
static char g_log_ident[64] = "cairn";

static const char *const g_level_names[] = { "ERR", "WARN", "NOTICE", "INFO", "DEBUG" };

void
cm_log_subsys_register(struct cm_log_subsys *ss)
{
	pthread_mutex_lock(&g_log_lock);
	ss->next = g_log_subsys_head;
	g_log_subsys_head = ss;
	pthread_mutex_unlock(&g_log_lock);
}

bool
cm_log_enabled(const struct cm_log_subsys *ss, enum cm_log_level lvl)
{
	if (lvl == CM_LOG_DEBUG)
		return atomic_load_explicit(&ss->debug, memory_order_relaxed);
	return (int)lvl <= atomic_load_explicit(&g_log_level, memory_order_relaxed);
}

void
cm_log_write(struct cm_log_subsys *ss, enum cm_log_level lvl, const char *fmt, ...)
{
	char line[2048];
	struct timeval tv;
	struct tm tm;
	va_list ap;
	int n, m;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = snprintf(line, sizeof(line),
		     "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ %s[%d] %s %s: ", tm.tm_year + 1900,
		     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)tv.tv_usec,
		     g_log_ident, (int)getpid(), g_level_names[lvl], ss->name);
	if (n < 0)
		return;
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line: lines from many threads never interleave. */
	if (write(atomic_load(&g_log_fd), line, (size_t)n) < 0) {
		/* Nowhere left to report it. */
	}
}

bool
cm_log_ratelimit_pass(struct cm_log_ratelimit *rl, unsigned burst, unsigned *suppressed)
{
	uint64_t now = cm_now_ms();
	uint64_t start = atomic_load_explicit(&rl->window_start_ms, memory_order_relaxed);

	*suppressed = 0;
	if (now - start >= 1000 &&
	    atomic_compare_exchange_strong(&rl->window_start_ms, &start, now)) {
		*suppressed = atomic_exchange(&rl->suppressed, 0);
		atomic_store(&rl->count, 0);
	}
	if (atomic_fetch_add(&rl->count, 1) < burst)
		return true;
	atomic_fetch_add(&rl->suppressed, 1);
	return false;
}

void
cm_log_set_level(enum cm_log_level lvl)
{
	atomic_store(&g_log_level, (int)lvl);
}

enum cm_log_level
cm_log_get_level(void)
{
	return (enum cm_log_level)atomic_load(&g_log_level);
}

int
cm_log_set_debug(const char *subsys, bool on)
{
	bool all = strcmp(subsys, "all") == 0;
	int rc = -ENOENT;

	pthread_mutex_lock(&g_log_lock);
	for (struct cm_log_subsys *ss = g_log_subsys_head; ss; ss = ss->next) {
		if (all || strcmp(ss->name, subsys) == 0) {
			atomic_store(&ss->debug, on);
			rc = 0;
		}
	}
	pthread_mutex_unlock(&g_log_lock);
	return rc;
}

int
cm_log_set_file(const char *path)
{
	int fd = STDERR_FILENO, old;

	if (path) {
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
	}
	old = atomic_exchange(&g_log_fd, fd);
	if (old != STDERR_FILENO)
		close(old);
	return 0;
}

int
cm_log_level_parse(const char *s, enum cm_log_level *out)
{
	for (size_t i = 0; i < CM_ARRAY_SIZE(g_level_names); i++) {
		if (strcasecmp(s, g_level_names[i]) == 0) {
			*out = (enum cm_log_level)i;
			return 0;
		}
	}
	if (strcasecmp(s, "error") == 0) {
		*out = CM_LOG_ERR;
		return 0;
	}
	if (strcasecmp(s, "warning") == 0) {
		*out = CM_LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

void
cm_log_set_ident(const char *ident)
{
	pthread_mutex_lock(&g_log_lock);
	snprintf(g_log_ident, sizeof(g_log_ident), "%s", ident);
	pthread_mutex_unlock(&g_log_lock);
}
