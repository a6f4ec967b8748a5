/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two (or three) processes on loopback: msgr_peer server, client and a
 * fault-injecting proxy. Every byte is verified by the server; exactly-once
 * and order are checked per session; faults are real: cut TCP connections,
 * flipped bytes, SIGKILL, SIGSTOP, a wrong cluster key.
 */
#include "testlib.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char g_dir[64];

static void
setup_dir(void)
{
	snprintf(g_dir, sizeof(g_dir), "/tmp/cairn-msgr-it-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
}

/* A test that got here passed: its logs are not needed. (A failing one keeps them.) */
static void
cleanup_dir(void)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g_dir);
}

static pid_t
spawn(const char *name, char *const argv[], char *const env[])
{
	char out[128], err[128];
	pid_t pid;

	snprintf(out, sizeof(out), "%s/%s.out", g_dir, name);
	snprintf(err, sizeof(err), "%s/%s.err", g_dir, name);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(o, 1);
		dup2(e, 2);
		for (int i = 0; env && env[i]; i++)
			putenv(env[i]);
		execv(MSGR_PEER_PATH, argv);
		_exit(127);
	}
	return pid;
}

/* The file's contents (static buffer, last 64 KiB). */
static const char *
slurp(const char *name, const char *ext)
{
	static char buf[1 << 16];
	char path[128];
	ssize_t n;
	off_t sz;
	int fd;

	snprintf(path, sizeof(path), "%s/%s.%s", g_dir, name, ext);
	buf[0] = '\0';
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return buf;
	sz = lseek(fd, 0, SEEK_END);
	lseek(fd, sz > (off_t)sizeof(buf) - 1 ? sz - (off_t)sizeof(buf) + 1 : 0, SEEK_SET);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static int
wait_port(const char *name)
{
	for (int i = 0; i < 500; i++) {
		const char *s = strstr(slurp(name, "out"), "LISTENING ");

		if (s)
			return (int)strtol(s + 10, NULL, 10);
		usleep(10000);
	}
	ck_abort_msg("%s never listened: %s", name, slurp(name, "err"));
	return -1;
}

/* Wait for pid; kill it after timeout_s. \return the exit status (or 128+signal). */
static int
wait_exit(pid_t pid, int timeout_s)
{
	int st;

	for (int i = 0; i < timeout_s * 20; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static int
stop(pid_t pid)
{
	kill(pid, SIGCONT);
	kill(pid, SIGTERM);
	return wait_exit(pid, 30);
}

/* A numeric field of the last JSON line in name.out. */
static long long
field(const char *name, const char *key)
{
	const char *s = slurp(name, "out"), *last = NULL, *p;
	char pat[64];

	for (p = s; (p = strchr(p, '{')); p++)
		last = p;
	ck_assert_msg(last != NULL, "%s printed no JSON: out=%s err=%s", name, s,
		      slurp(name, "err"));
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(last, pat);
	ck_assert_msg(p != NULL, "%s: no %s in %s", name, key, last);
	return strtoll(p + strlen(pat), NULL, 10);
}

static char g_srv_addr[64], g_proxy_addr[64];

static pid_t
start_server(const char *name, const char *listen, char *const env[])
{
	char *argv[] = { "msgr_peer", "server", "--listen", (char *)listen, NULL };
	pid_t pid = spawn(name, argv, env);

	snprintf(g_srv_addr, sizeof(g_srv_addr), "127.0.0.1:%d", wait_port(name));
	return pid;
}

static pid_t
start_proxy(const char *fault, const char *every)
{
	char *argv[] = { "msgr_peer", "proxy",       "--listen",    "127.0.0.1:0", "--to",
			 g_srv_addr,  (char *)fault, (char *)every, NULL };
	pid_t pid = spawn("proxy", argv, NULL);

	snprintf(g_proxy_addr, sizeof(g_proxy_addr), "127.0.0.1:%d", wait_port("proxy"));
	return pid;
}

static void
check_server_clean(const char *name, long long want_recv)
{
	ck_assert_msg(field(name, "bad") == 0, "server saw corrupt data");
	ck_assert_msg(field(name, "dups") == 0, "server saw duplicates");
	ck_assert_msg(field(name, "order_errors") == 0, "server saw reordering");
	if (want_recv >= 0)
		ck_assert_int_eq(field(name, "recv"), want_recv);
}

START_TEST(test_100k_messages_0_to_16mib)
{
	pid_t srv, cli;
	char *argv[] = { "msgr_peer",  "client", "--connect",  g_srv_addr, "--count", "100000",
			 "--inflight", "64",     "--max-size", "16777216", NULL };

	setup_dir();
	srv = start_server("server", "127.0.0.1:0", NULL);
	cli = spawn("client", argv, NULL);
	ck_assert_msg(wait_exit(cli, 900) == 0, "client failed: %s", slurp("client", "err"));
	ck_assert_int_eq(stop(srv), 0);
	check_server_clean("server", 100000);
	ck_assert_int_eq(field("client", "replied"), 100000);
	cleanup_dir();
}

END_TEST

START_TEST(test_lossless_through_connection_cuts)
{
	pid_t srv, prx, cli;
	char *argv[] = { "msgr_peer", "client",     "--connect", g_proxy_addr, "--count",
			 "6000",      "--max-size", "2097152",   NULL };

	setup_dir();
	srv = start_server("server", "127.0.0.1:0", NULL);
	prx = start_proxy("--cut-every", "3000000");
	cli = spawn("client", argv, NULL);
	ck_assert_msg(wait_exit(cli, 300) == 0, "client failed: %s", slurp("client", "err"));
	ck_assert_int_eq(stop(prx), 0);
	ck_assert_int_eq(stop(srv), 0);
	ck_assert_int_gt(field("proxy", "cuts"), 3);
	/* Exactly once, in order, intact — through every cut. */
	check_server_clean("server", 6000);
	ck_assert_int_eq(field("client", "resent"), 0);
	cleanup_dir();
}

END_TEST

START_TEST(test_corrupted_bytes_rejected_and_resent)
{
	pid_t srv, prx, cli;
	char *argv[] = { "msgr_peer", "client",     "--connect", g_proxy_addr, "--count",
			 "6000",      "--max-size", "2097152",   NULL };

	setup_dir();
	srv = start_server("server", "127.0.0.1:0", NULL);
	prx = start_proxy("--flip-every", "2000000");
	cli = spawn("client", argv, NULL);
	ck_assert_msg(wait_exit(cli, 300) == 0, "client failed: %s", slurp("client", "err"));
	ck_assert_int_eq(stop(prx), 0);
	ck_assert_int_eq(stop(srv), 0);
	ck_assert_int_gt(field("proxy", "flips"), 3);
	/* Each flip is caught (by the preamble's crc or the frame's MAC: the
	 * payload crc never sees one now), the session starts over and the
	 * messages come again, exactly once. */
	ck_assert_int_gt(field("server", "mac_failures") + field("server", "bad_frames"), 3);
	ck_assert_int_gt(field("server", "mac_failures"), 0);
	check_server_clean("server", 6000);
	cleanup_dir();
}

END_TEST

START_TEST(test_lossy_resend_by_tid)
{
	pid_t srv, prx, cli;
	char *argv[] = { "msgr_peer", "client",     "--connect", g_proxy_addr, "--count",
			 "3000",      "--max-size", "1048576",   "--lossy",    NULL };
	char *env[] = { "PEER_ALLOW_RESEND=1", NULL };

	setup_dir();
	srv = start_server("server", "127.0.0.1:0", env);
	prx = start_proxy("--cut-every", "2000000");
	cli = spawn("client", argv, NULL);
	ck_assert_msg(wait_exit(cli, 300) == 0, "client failed: %s", slurp("client", "err"));
	ck_assert_int_eq(stop(prx), 0);
	ck_assert_int_eq(stop(srv), 0);
	ck_assert_int_eq(field("server", "bad"), 0);
	ck_assert_int_gt(field("client", "resent"), 0);
	ck_assert_int_eq(field("client", "replied"), 3000);
	cleanup_dir();
}

END_TEST

START_TEST(test_peer_killed_mid_message)
{
	pid_t srv, srv2, cli;
	char *argv[] = { "msgr_peer",    "client",  "--connect",  g_srv_addr, "--count", "400",
			 "--fixed-size", "8388608", "--inflight", "4",        NULL };
	char listen[64];

	setup_dir();
	srv = start_server("server", "127.0.0.1:0", NULL);
	snprintf(listen, sizeof(listen), "%s", g_srv_addr);
	cli = spawn("client", argv, NULL);
	/* 8 MiB messages: a kill lands mid-message almost surely. */
	usleep(700000);
	kill(srv, SIGKILL);
	ck_assert_int_eq(wait_exit(srv, 10), 128 + SIGKILL);
	usleep(300000);
	srv2 = start_server("server2", listen, NULL);
	ck_assert_msg(wait_exit(cli, 300) == 0, "client failed: %s", slurp("client", "err"));
	ck_assert_int_eq(stop(srv2), 0);
	/* The restarted server never saw a torn or wrong message. */
	ck_assert_int_eq(field("server2", "bad"), 0);
	ck_assert_int_eq(field("server2", "dups"), 0);
	ck_assert_int_gt(field("server2", "recv"), 0);
	ck_assert_int_eq(field("client", "replied"), 400);
	cleanup_dir();
}

END_TEST

START_TEST(test_wrong_key_refused)
{
	pid_t srv, cli;
	char *argv[] = { "msgr_peer",   "client", "--connect", g_srv_addr,
			 "--count",     "10",     "--key",     "not-the-cluster-key",
			 "--timeout-s", "20",     NULL };

	setup_dir();
	srv = start_server("server", "127.0.0.1:0", NULL);
	cli = spawn("client", argv, NULL);
	ck_assert_int_eq(wait_exit(cli, 60), 3);
	ck_assert_ptr_nonnull(strstr(slurp("client", "err"), "authentication failed"));
	ck_assert_int_eq(stop(srv), 0);
	ck_assert_ptr_nonnull(strstr(slurp("server", "err"), "authentication failed"));
	ck_assert_int_ge(field("server", "auth_failures"), 1);
	ck_assert_int_eq(field("server", "recv"), 0);
	cleanup_dir();
}

END_TEST

START_TEST(test_stopped_peer_bounded_memory)
{
	pid_t srv, cli;
	char *argv[] = { "msgr_peer",   "client",       "--connect", g_srv_addr,   "--count",
			 "300",         "--fixed-size", "1048576",   "--inflight", "300",
			 "--max-queue", "16777216",     NULL };

	setup_dir();
	srv = start_server("server", "127.0.0.1:0", NULL);
	cli = spawn("client", argv, NULL);
	usleep(300000);
	kill(srv, SIGSTOP);
	sleep(3);
	kill(srv, SIGCONT);
	ck_assert_msg(wait_exit(cli, 120) == 0, "client failed: %s", slurp("client", "err"));
	ck_assert_int_eq(stop(srv), 0);
	check_server_clean("server", 300);
	/* It hit the bound and stayed within it; 300 MiB would have been queued otherwise. */
	ck_assert_int_gt(field("client", "eagain"), 0);
	ck_assert_int_le(field("client", "peak_queue"), (16 << 20) + (1 << 20) + 4096);
#ifndef CAIRN_ASAN
	/* ASan keeps freed memory in quarantine, so RSS says nothing there. */
	ck_assert_int_lt(field("client", "peak_rss_kb"), 160 * 1024);
#endif
	cleanup_dir();
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("msgr_it");
	TCase *tc = tcase_create("msgr_it");

	signal(SIGPIPE, SIG_IGN);
	tcase_set_timeout(tc, 1200);
	tcase_add_test(tc, test_100k_messages_0_to_16mib);
	tcase_add_test(tc, test_lossless_through_connection_cuts);
	tcase_add_test(tc, test_corrupted_bytes_rejected_and_resent);
	tcase_add_test(tc, test_lossy_resend_by_tid);
	tcase_add_test(tc, test_peer_killed_mid_message);
	tcase_add_test(tc, test_wrong_key_refused);
	tcase_add_test(tc, test_stopped_peer_bounded_memory);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
