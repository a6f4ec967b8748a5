/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by cairn-echod and cairn-ping: the options every messenger daemon
 * has (key, reactor, logging, timeouts), so both read the same cairn.conf.
 */
#ifndef CAIRN_ECHO_COMMON_H
#define CAIRN_ECHO_COMMON_H

#include "cm/daemon.h"

#define ECHO_T_REQ 600
#define ECHO_T_REP 601

struct echo_conf {
	struct cm_daemon_conf d;
	char *listen;
	char *metrics_addr;
	/* cairn-ping only */
	uint64_t count;
	uint64_t size;
	uint64_t inflight;
};

extern const struct cm_opt g_echo_opts[];

#endif
