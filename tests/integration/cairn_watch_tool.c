/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch/notify through libcairn, for watch_test.sh. The cluster comes from
 * -c CONF, else $CAIRN_CONF.
 *
 *   cairn_watch_tool watch POOL OID [--timeout MS] [--reply TEXT] [--no-ack] [--seconds S]
 *   cairn_watch_tool notify POOL OID PAYLOAD [--timeout MS]
 *   cairn_watch_tool watchers POOL OID
 *   cairn_watch_tool register TYPE NAME ADDR [--timeout TTL_S] [--seconds S]
 *
 * watch: cairn_watch (timeout MS, default the library's), then prints
 *   watching cookie=<cookie> entity=<this client's name>
 *   event id=<notify_id> notifier=<name> payload=<payload>   (per event)
 *   watch error <rc>                                        (err callback)
 * and acknowledges each event with TEXT (default "ack-from-<cookie>")
 * unless --no-ack. On SIGTERM or SIGINT, or after S seconds (default 600),
 * it unwatches, prints "unwatched" and exits 0 (1 if unwatch failed).
 * stdout is flushed after every line: the test reads it while we run.
 * notify: cairn_notify (timeout MS, default the library's), then prints
 *   acks <n> / ack <entity> <cookie> <reply> (per ack)
 *   timeouts <n> / timeout <entity> <cookie> (per watcher that did not ack)
 * register: cairn_service_register (TTL default 10 s), prints "registered
 *   TYPE NAME as <client name>", keeps it until SIGTERM/SIGINT or S seconds,
 *   then unregisters ("unregistered").
 * watchers: cairn_list_watchers, then prints
 *   watchers <n> / watcher <entity> <cookie> <timeout_ms> (per watcher)
 * Payloads and replies are printed as text, bytes outside printable ASCII
 * as '.'. Exit 0 on success; 1 when an op fails (the error on stderr); 2
 * for bad usage or no connection.
 */
#include "cairn/cairn.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *g_conf, *g_reply, *g_pos[3];
static unsigned g_npos, g_timeout, g_seconds = 600;
static bool g_no_ack;
static cairn_cluster_t *g_cl;
/* Lines come from the main thread and from the library's (callbacks). */
static pthread_mutex_t g_out_lock = PTHREAD_MUTEX_INITIALIZER;

/* Print len bytes of buf as text, keeping the line one line. Under g_out_lock. */
static void
print_text(const void *buf, size_t len)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		putchar(p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '.');
}

static void
watch_event(cairn_watch_t *w, const struct cairn_notify_event *ev, void *arg)
{
	char def[64];
	const char *reply = g_reply;
	int rc = 0;

	(void)arg;
	pthread_mutex_lock(&g_out_lock);
	printf("event id=%" PRIu64 " notifier=%s payload=", ev->notify_id,
	       ev->notifier ? ev->notifier : "(none)");
	print_text(ev->payload, ev->len);
	putchar('\n');
	fflush(stdout);
	if (!g_no_ack) {
		if (!reply) {
			snprintf(def, sizeof(def), "ack-from-%" PRIu64, cairn_watch_cookie(w));
			reply = def;
		}
		rc = cairn_notify_ack(w, ev->notify_id, reply, strlen(reply));
		if (rc) {
			printf("ack error %d\n", rc);
			fflush(stdout);
		}
	}
	pthread_mutex_unlock(&g_out_lock);
}

static void
watch_error(cairn_watch_t *w, int err, void *arg)
{
	(void)w;
	(void)arg;
	pthread_mutex_lock(&g_out_lock);
	printf("watch error %d\n", err);
	fflush(stdout);
	pthread_mutex_unlock(&g_out_lock);
}

static int
op_error(const char *what, int rc)
{
	fprintf(stderr, "cairn_watch_tool: %s %s/%s: %s (%d)\n", what, g_pos[0], g_pos[1],
		strerror(-rc), rc);
	return 1;
}

/*
 * SIGTERM and SIGINT are blocked in every thread (main blocks them before
 * connecting, so the library's thread inherits the mask) and taken here
 * with sigtimedwait: nothing runs in a signal handler.
 */
/* Until SIGTERM or SIGINT, or g_seconds. */
static void
wait_stop(const sigset_t *stop)
{
	struct timespec end, now, left;
	int sig;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += g_seconds;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (left.tv_sec < 0)
			break;
		sig = sigtimedwait(stop, NULL, &left);
		if (sig > 0 || (sig < 0 && errno == EAGAIN))
			break;
	}
}

/* register: the service (g_pos: TYPE NAME ADDR) kept registered until stopped, then removed. */
static int
run_register(const sigset_t *stop)
{
	int rc = cairn_service_register(g_cl, g_pos[0], g_pos[1], g_pos[2], NULL,
					g_timeout ? g_timeout : 10);

	if (rc)
		return op_error("register", rc);
	printf("registered %s %s as %s\n", g_pos[0], g_pos[1], cairn_client_name(g_cl));
	fflush(stdout);
	wait_stop(stop);
	rc = cairn_service_unregister(g_cl, g_pos[0], g_pos[1]);
	if (rc)
		return op_error("unregister", rc);
	printf("unregistered\n");
	fflush(stdout);
	return 0;
}

static int
run_watch(cairn_ioctx_t *io, const sigset_t *stop)
{
	cairn_watch_t *w = NULL;
	int rc;

	rc = cairn_watch(io, g_pos[1], g_timeout, watch_event, watch_error, NULL, &w);
	if (rc)
		return op_error("watch", rc);
	pthread_mutex_lock(&g_out_lock);
	printf("watching cookie=%" PRIu64 " entity=%s\n", cairn_watch_cookie(w),
	       cairn_client_name(g_cl));
	fflush(stdout);
	pthread_mutex_unlock(&g_out_lock);
	wait_stop(stop);
	rc = cairn_unwatch(w);
	if (rc)
		return op_error("unwatch", rc);
	pthread_mutex_lock(&g_out_lock);
	printf("unwatched\n");
	fflush(stdout);
	pthread_mutex_unlock(&g_out_lock);
	return 0;
}

static void
print_replies(const char *what, const struct cairn_notify_reply *r, size_t n, bool data)
{
	printf("%ss %zu\n", what, n);
	for (size_t i = 0; i < n; i++) {
		printf("%s %s %" PRIu64, what, r[i].entity ? r[i].entity : "(none)", r[i].cookie);
		if (data) {
			putchar(' ');
			print_text(r[i].data, r[i].data ? r[i].len : 0);
		}
		putchar('\n');
	}
}

static int
run_notify(cairn_ioctx_t *io)
{
	struct cairn_notify_result res;
	int rc;

	memset(&res, 0, sizeof(res));
	rc = cairn_notify(io, g_pos[1], g_pos[2], strlen(g_pos[2]), g_timeout, &res);
	if (rc)
		return op_error("notify", rc);
	print_replies("ack", res.acks, res.nacks, true);
	print_replies("timeout", res.timeouts, res.ntimeouts, false);
	fflush(stdout);
	cairn_notify_result_free(&res);
	return 0;
}

static int
run_watchers(cairn_ioctx_t *io)
{
	struct cairn_watcher *w = NULL;
	size_t n = 0;
	int rc;

	rc = cairn_list_watchers(io, g_pos[1], &w, &n);
	if (rc)
		return op_error("watchers", rc);
	printf("watchers %zu\n", n);
	for (size_t i = 0; i < n; i++)
		printf("watcher %s %" PRIu64 " %u\n", w[i].entity ? w[i].entity : "(none)",
		       w[i].cookie, w[i].timeout_ms);
	fflush(stdout);
	cairn_watchers_free(w, n);
	return 0;
}

static int
usage(void)
{
	fprintf(stderr,
		"usage: cairn_watch_tool [-c CONF] watch POOL OID [--timeout MS] "
		"[--reply TEXT] [--no-ack] [--seconds S]\n"
		"       cairn_watch_tool [-c CONF] notify POOL OID PAYLOAD [--timeout MS]\n"
		"       cairn_watch_tool [-c CONF] watchers POOL OID\n"
		"       cairn_watch_tool [-c CONF] register TYPE NAME ADDR [--timeout TTL_S] "
		"[--seconds S]\n");
	return 2;
}

/* A decimal option value: \return false if v is not one (or does not fit). */
static bool
parse_uint(const char *v, unsigned *out)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-' || n > UINT32_MAX)
		return false;
	*out = (unsigned)n;
	return true;
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	struct cairn_opts o;
	cairn_ioctx_t *io = NULL;
	sigset_t stop;
	char err[256] = "";
	unsigned want;
	int rc;

	if (!strcmp(mode, "watch"))
		want = 2;
	else if (!strcmp(mode, "notify"))
		want = 3;
	else if (!strcmp(mode, "watchers"))
		want = 2;
	else if (!strcmp(mode, "register"))
		want = 3;
	else
		return usage();
	for (int i = 2; i < argc; i++) {
		const char *k = argv[i];
		bool has_val = i + 1 < argc;

		if (!strcmp(k, "-c") && has_val) {
			g_conf = argv[++i];
		} else if (!strcmp(k, "--timeout") && has_val) {
			if (!parse_uint(argv[++i], &g_timeout))
				return usage();
		} else if (!strcmp(k, "--seconds") && has_val &&
			   (!strcmp(mode, "watch") || !strcmp(mode, "register"))) {
			if (!parse_uint(argv[++i], &g_seconds))
				return usage();
		} else if (!strcmp(k, "--reply") && has_val && !strcmp(mode, "watch")) {
			g_reply = argv[++i];
		} else if (!strcmp(k, "--no-ack") && !strcmp(mode, "watch")) {
			g_no_ack = true;
		} else if (k[0] == '-' && k[1] == '-') {
			fprintf(stderr, "cairn_watch_tool: bad option %s\n", k);
			return usage();
		} else if (g_npos < want) {
			g_pos[g_npos++] = k;
		} else {
			return usage();
		}
	}
	if (g_npos != want || (!strcmp(mode, "watchers") && g_timeout))
		return usage();
	if (!g_conf)
		g_conf = getenv("CAIRN_CONF");

	/* Before connect: the library's thread inherits the mask (see run_watch). */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	if (!strcmp(mode, "watch") || !strcmp(mode, "register"))
		pthread_sigmask(SIG_BLOCK, &stop, NULL);

	cairn_opts_init(&o, sizeof(o));
	o.conf_file = g_conf;
	if (getenv("CAIRN_TEST_IO_THREADS"))
		o.io_threads = strtoul(getenv("CAIRN_TEST_IO_THREADS"), NULL, 10);
	rc = cairn_connect(&o, &g_cl, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "cairn_watch_tool: connect: %s (%d)\n",
			err[0] ? err : strerror(-rc), rc);
		return 2;
	}
	if (!strcmp(mode, "register")) {
		rc = run_register(&stop);
		goto out;
	}
	rc = cairn_ioctx_create(g_cl, g_pos[0], &io);
	if (rc) {
		rc = op_error("pool", rc);
		goto out;
	}
	if (!strcmp(mode, "watch"))
		rc = run_watch(io, &stop);
	else if (!strcmp(mode, "notify"))
		rc = run_notify(io);
	else
		rc = run_watchers(io);
	cairn_ioctx_destroy(io);
out:
	cairn_shutdown(g_cl);
	return rc;
}
