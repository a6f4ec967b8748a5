/* SPDX-License-Identifier: Apache-2.0 */
/* clusterctl's parts: offline CRUSH tools, cluster commands, the local cluster. */
#ifndef CAIRN_CTL_H
#define CAIRN_CTL_H

#include "cm/daemon.h"
#include "cm/etcd.h"
#include "cairn/cairn.h"

struct ctl_conf {
	struct cm_daemon_conf d;
	char *fsid;
	char *mon_host;
	struct cm_etcd_conf etcd;
	char *etcd_server_cert; /* clusterctl up: the certificate etcd serves with */
	char *etcd_server_key;
	uint64_t etcd_peer_port;
	uint64_t command_timeout_ms;
	uint64_t op_timeout_ms; /* object ops (obj, bench); 0: none */
	char *osd_metrics;      /* clusterctl up: the OSDs' /metrics addresses, by start index */
	char *osd_addr_base;    /* clusterctl up: OSD i listens on this IPv4 + i ("": 127.0.0.1) */
	const char
		*conf_path; /* the file read (NULL: none): libcairn reads its messenger settings */
};

extern const struct cm_opt g_ctl_opts[];

int ctl_crush_offline(int argc, char **argv);
bool ctl_crush_is_offline(const char *verb);

/*
 * A libcairn handle for c's cluster (its mon_host, key or identity, and the
 * messenger settings of its file), with those connect and op timeouts
 * (op_ms 0: ops wait). \return cairn_connect's.
 */
int ctl_connect(const struct ctl_conf *c, unsigned connect_ms, unsigned op_ms,
		cairn_cluster_t **clp, char *err, size_t errlen);

/* Commands answered by the mons. \return the exit status. */
int ctl_online(const struct ctl_conf *c, int argc, char **argv, bool json);

/* Objects through libcairn: obj put|get|stat|rm|ls, bench. \return the exit status. */
int ctl_obj(const struct ctl_conf *c, int argc, char **argv, bool json);
int ctl_bench(const struct ctl_conf *c, int argc, char **argv, bool json);
/* S3 users and keys: s3 user|key ... \return the exit status. */
int ctl_s3(const struct ctl_conf *c, int argc, char **argv, bool json);

/* clusterctl up|down. \return the exit status. */
int ctl_up(int argc, char **argv, bool json);
int ctl_down(int argc, char **argv, bool json);

/*
 * clusterctl up: a CA for the cluster's private etcd and the certificates
 * signed by it in dir (made 0700): ca.pem/ca.key, etcd.pem/etcd.key
 * (server, 127.0.0.1), client.pem/client.key (the mons'). \return 0, -errno.
 */
int ctl_tls_make(const char *dir);

#endif
