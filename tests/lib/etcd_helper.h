/* SPDX-License-Identifier: Apache-2.0 */
/* A private etcd for tests: free loopback ports, a temp data dir, stop/restart. */
#ifndef CM_TEST_ETCD_HELPER_H
#define CM_TEST_ETCD_HELPER_H

#include <sys/types.h>

struct cm_test_etcd {
	pid_t pid;
	int client_port, peer_port;
	char dir[64];
	char endpoint[64];
};

/* Start etcd and wait until it answers; fails the test on error. */
void cm_test_etcd_start(struct cm_test_etcd *t);

/* Kill it (SIGKILL), keeping the data dir. */
void cm_test_etcd_kill(struct cm_test_etcd *t);

/* Start it again on the same ports and data. */
void cm_test_etcd_restart(struct cm_test_etcd *t);

struct cm_etcd;

/* A client for endpoints (attempts of 300 ms, calls of timeout_ms); fails the test on error. */
struct cm_etcd *cm_test_etcd_client(const char *endpoints, unsigned timeout_ms);

/* Stop it and remove the data dir. */
void cm_test_etcd_stop(struct cm_test_etcd *t);

#endif
