/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by cairn-echod and cairn-ping: the options every messenger daemon
 * has (key, reactor, logging, timeouts), so both read the same cairn.conf.
 */
#ifndef CAIRN_ECHO_COMMON_H
#define CAIRN_ECHO_COMMON_H

#include "cm/conf.h"
#include "cm/msgr.h"

#define ECHO_T_REQ 600
#define ECHO_T_REP 601

struct echo_conf {
	char *listen;
	char *metrics_addr;
	char *cluster_key;
	char *entity;
	char *reactor;
	char *log_level;
	char *log_file;
	char *debug;
	char *pid_file;
	uint64_t keepalive_ms;
	uint64_t timeout_ms;
	uint64_t max_queue;
	bool crc_data;
	bool tls;
	char *tls_cert;
	char *tls_key;
	char *tls_ca;
	/* cairn-ping only */
	uint64_t count;
	uint64_t size;
	uint64_t inflight;
};

extern const struct cm_opt g_echo_opts[];

/* Logging and reactor from the config. \return 0, or -CM_ECONF with a message on stderr. */
int echo_setup_logging(const struct echo_conf *c);
int echo_reactor_create(const struct echo_conf *c, const char *name, struct cm_reactor **rp);
void echo_msgr_opts(const struct echo_conf *c, struct cm_msgr_opts *o);

#endif
