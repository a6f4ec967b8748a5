/* SPDX-License-Identifier: Apache-2.0 */
/* clusterctl's parts: offline CRUSH tools, cluster commands, the local cluster. */
#ifndef CAIRN_CTL_H
#define CAIRN_CTL_H

#include "cm/daemon.h"

struct ctl_conf {
	struct cm_daemon_conf d;
	char *fsid;
	char *mon_host;
	char *etcd_endpoints;
	uint64_t etcd_peer_port;
	uint64_t command_timeout_ms;
	uint64_t op_timeout_ms; /* object ops (obj, bench); 0: none */
	char *osd_metrics;      /* clusterctl up: the OSDs' /metrics addresses, by start index */
};

extern const struct cm_opt g_ctl_opts[];

int ctl_crush_offline(int argc, char **argv);
bool ctl_crush_is_offline(const char *verb);

/* Commands answered by the mons. \return the exit status. */
int ctl_online(const struct ctl_conf *c, int argc, char **argv, bool json);

/* Objects through libcairn: obj put|get|stat|rm|ls, bench. \return the exit status. */
int ctl_obj(const struct ctl_conf *c, int argc, char **argv, bool json);
int ctl_bench(const struct ctl_conf *c, int argc, char **argv, bool json);

/* clusterctl up|down. \return the exit status. */
int ctl_up(int argc, char **argv, bool json);
int ctl_down(int argc, char **argv, bool json);

#endif
