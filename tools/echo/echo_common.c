/* SPDX-License-Identifier: Apache-2.0 */
#include "echo_common.h"

const struct cm_opt g_echo_opts[] = {
	CM_DAEMON_OPTS(struct echo_conf, d, "echo.0"),
	CM_OPT("listen", CM_OPT_STR, "127.0.0.1:6790", 0, 0, 0, struct echo_conf, listen,
	       "messenger address of cairn-echod (ip:port; [::1]:port for IPv6)"),
	CM_OPT("metrics_addr", CM_OPT_STR, "127.0.0.1:9283", 0, 0, 0, struct echo_conf,
	       metrics_addr, "where /metrics is served (Prometheus text); empty: off"),
	CM_OPT("count", CM_OPT_UINT, "1000", 1, 100000000, 0, struct echo_conf, count,
	       "cairn-ping: requests to send"),
	CM_OPT("size", CM_OPT_SIZE, "4K", 0, 67108864, 0, struct echo_conf, size,
	       "cairn-ping: payload bytes per request"),
	CM_OPT("inflight", CM_OPT_UINT, "1", 1, 4096, 0, struct echo_conf, inflight,
	       "cairn-ping: requests outstanding at once"),
	{ 0 },
};
