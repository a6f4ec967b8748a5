/* SPDX-License-Identifier: Apache-2.0 */
#include "etcd_helper.h"
#include "cm/etcd.h"
#include "cm/sock.h"
#include "testlib.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

static int
free_port(void)
{
	uint16_t port;

	ck_assert_int_eq(cm_sock_free_port("127.0.0.1", &port), 0);
	return port;
}

struct cm_etcd *
cm_test_etcd_client(const char *endpoints, unsigned timeout_ms)
{
	struct cm_etcd_opts o;
	struct cm_etcd *e;

	cm_etcd_opts_init(&o, sizeof(o));
	o.endpoints = endpoints;
	o.timeout_ms = timeout_ms;
	o.attempt_ms = 300;
	ck_assert_int_eq(cm_etcd_create(&o, &e), 0);
	return e;
}

static void
spawn(struct cm_test_etcd *t)
{
	char client[64], peer[64], cluster[96], log[128];

	snprintf(client, sizeof(client), "http://127.0.0.1:%d", t->client_port);
	snprintf(peer, sizeof(peer), "http://127.0.0.1:%d", t->peer_port);
	snprintf(cluster, sizeof(cluster), "default=%s", peer);
	snprintf(log, sizeof(log), "%s/etcd.log", t->dir);
	t->pid = fork();
	ck_assert_int_ge(t->pid, 0);
	if (t->pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		char datadir[96];

		snprintf(datadir, sizeof(datadir), "%s/data", t->dir);
		dup2(fd, 1);
		dup2(fd, 2);
		execlp("etcd", "etcd", "--name", "default", "--data-dir", datadir,
		       "--listen-client-urls", client, "--advertise-client-urls", client,
		       "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		       "--initial-cluster", cluster, "--log-level", "warn", (char *)NULL);
		_exit(127);
	}
	/* Ready when a read works. */
	struct cm_etcd *e = cm_test_etcd_client(t->endpoint, 300);
	struct cm_etcd_range r;
	int rc = -1;

	for (int i = 0; i < 100 && rc; i++) {
		rc = cm_etcd_get(e, "ping", 4, NULL, 0, 0, &r);
		if (rc)
			usleep(100000);
		else
			cm_etcd_range_free(&r);
	}
	cm_etcd_destroy(e);
	ck_assert_msg(rc == 0, "etcd did not come up (see %s)", log);
}

void
cm_test_etcd_start(struct cm_test_etcd *t)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "/tmp/cairn-etcd-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(t->dir));
	t->client_port = free_port();
	t->peer_port = free_port();
	snprintf(t->endpoint, sizeof(t->endpoint), "http://127.0.0.1:%d", t->client_port);
	spawn(t);
}

void
cm_test_etcd_kill(struct cm_test_etcd *t)
{
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, NULL, 0);
		t->pid = 0;
	}
}

void
cm_test_etcd_restart(struct cm_test_etcd *t)
{
	cm_test_etcd_kill(t);
	spawn(t);
}

void
cm_test_etcd_stop(struct cm_test_etcd *t)
{
	char cmd[128];

	cm_test_etcd_kill(t);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", t->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", t->dir);
}
