/* SPDX-License-Identifier: Apache-2.0 */
#include "echo_common.h"
#include "cm/err.h"
#include "cm/log.h"

static int
valid_key(const struct cm_opt *o, const char *v, char *err, size_t len)
{
	(void)o;
	if (v[0] && strlen(v) < 16) {
		snprintf(err, len, "a cluster key needs at least 16 characters");
		return -EINVAL;
	}
	return 0;
}

static int
valid_reactor(const struct cm_opt *o, const char *v, char *err, size_t len)
{
	enum cm_reactor_backend b;

	(void)o;
	if (cm_reactor_backend_parse(v, &b)) {
		snprintf(err, len, "one of auto, uring, epoll");
		return -EINVAL;
	}
	return 0;
}

static int
valid_level(const struct cm_opt *o, const char *v, char *err, size_t len)
{
	enum cm_log_level l;

	(void)o;
	if (cm_log_level_parse(v, &l)) {
		snprintf(err, len, "one of err, warn, notice, info, debug");
		return -EINVAL;
	}
	return 0;
}

const struct cm_opt g_echo_opts[] = {
	CM_OPT("listen", CM_OPT_STR, "127.0.0.1:6790", 0, 0, 0, struct echo_conf, listen,
	       "messenger address of cairn-echod (ip:port; [::1]:port for IPv6)"),
	CM_OPT("metrics_addr", CM_OPT_STR, "127.0.0.1:9283", 0, 0, 0, struct echo_conf,
	       metrics_addr, "where /metrics is served (Prometheus text); empty: off"),
	{ .name = "cluster_key",
	  .type = CM_OPT_STR,
	  .def = "",
	  .flags = CM_OPT_F_SECRET,
	  .offset = offsetof(struct echo_conf, cluster_key),
	  .help = "shared secret every daemon and client of the cluster holds (>= 16 chars)",
	  .validate = valid_key },
	CM_OPT("entity", CM_OPT_STR, "echo.0", 0, 0, 0, struct echo_conf, entity,
	       "this process's name on the wire"),
	{ .name = "reactor",
	  .type = CM_OPT_STR,
	  .def = "auto",
	  .offset = offsetof(struct echo_conf, reactor),
	  .help = "event loop backend: auto (io_uring, else epoll), uring, epoll",
	  .validate = valid_reactor },
	{ .name = "log_level",
	  .type = CM_OPT_STR,
	  .def = "notice",
	  .offset = offsetof(struct echo_conf, log_level),
	  .help = "err, warn, notice, info or debug",
	  .validate = valid_level },
	CM_OPT("log_file", CM_OPT_STR, "", 0, 0, 0, struct echo_conf, log_file,
	       "log to this file (appended) instead of stderr"),
	CM_OPT("debug", CM_OPT_STR, "", 0, 0, 0, struct echo_conf, debug,
	       "comma-separated subsystems to log at DEBUG (msgr,reactor,... or all)"),
	CM_OPT("pid_file", CM_OPT_STR, "", 0, 0, 0, struct echo_conf, pid_file,
	       "write the process id here"),
	CM_OPT("keepalive", CM_OPT_DURATION, "1s", 10, 600000, 0, struct echo_conf, keepalive_ms,
	       "send a keepalive when a link is idle this long"),
	CM_OPT("timeout", CM_OPT_DURATION, "15s", 100, 3600000, 0, struct echo_conf, timeout_ms,
	       "a peer silent (or not reading) this long is dead"),
	CM_OPT("max_queue", CM_OPT_SIZE, "256M", 1048576, 68719476736, 0, struct echo_conf,
	       max_queue, "per-session send queue bound (backpressure)"),
	CM_OPT("crc_data", CM_OPT_BOOL, "true", 0, 0, 0, struct echo_conf, crc_data,
	       "crc32c over message data (set the same cluster-wide)"),
	CM_OPT("tls", CM_OPT_BOOL, "false", 0, 0, 0, struct echo_conf, tls,
	       "TLS on every messenger link (set the same cluster-wide)"),
	CM_OPT("tls_cert", CM_OPT_STR, "", 0, 0, 0, struct echo_conf, tls_cert,
	       "PEM certificate (chain) this process presents; needed to listen"),
	CM_OPT("tls_key", CM_OPT_STR, "", 0, 0, 0, struct echo_conf, tls_key,
	       "PEM private key for tls_cert"),
	CM_OPT("tls_ca", CM_OPT_STR, "", 0, 0, 0, struct echo_conf, tls_ca,
	       "PEM CA bundle; when set, peers must present a certificate it signed"),
	CM_OPT("count", CM_OPT_UINT, "1000", 1, 100000000, 0, struct echo_conf, count,
	       "cairn-ping: requests to send"),
	CM_OPT("size", CM_OPT_SIZE, "4K", 0, 67108864, 0, struct echo_conf, size,
	       "cairn-ping: payload bytes per request"),
	CM_OPT("inflight", CM_OPT_UINT, "1", 1, 4096, 0, struct echo_conf, inflight,
	       "cairn-ping: requests outstanding at once"),
	{ 0 },
};

int
echo_setup_logging(const struct echo_conf *c)
{
	enum cm_log_level l = CM_LOG_NOTICE;
	char *list, *save = NULL;
	int rc;

	cm_log_level_parse(c->log_level, &l);
	cm_log_set_level(l);
	cm_log_set_ident(c->entity);
	if (c->log_file && c->log_file[0]) {
		rc = cm_log_set_file(c->log_file);
		if (rc) {
			fprintf(stderr, "log_file %s: %s\n", c->log_file, cm_strerror(rc));
			return -CM_ECONF;
		}
	}
	if (!c->debug || !c->debug[0])
		return 0;
	list = strdup(c->debug);
	if (!list)
		return -ENOMEM;
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (cm_log_set_debug(t, true)) {
			fprintf(stderr, "debug: no subsystem named '%s'\n", t);
			free(list);
			return -CM_ECONF;
		}
	}
	free(list);
	return 0;
}

int
echo_reactor_create(const struct echo_conf *c, const char *name, struct cm_reactor **rp)
{
	struct cm_reactor_opts o;

	cm_reactor_opts_init(&o, sizeof(o));
	cm_reactor_backend_parse(c->reactor, &o.backend);
	o.name = name;
	return cm_reactor_create(&o, rp);
}

void
echo_msgr_opts(const struct echo_conf *c, struct cm_msgr_opts *o)
{
	cm_msgr_opts_init(o, sizeof(*o));
	o->entity = c->entity;
	o->key = (const uint8_t *)c->cluster_key;
	o->key_len = strlen(c->cluster_key);
	o->keepalive_ms = (unsigned)c->keepalive_ms;
	o->timeout_ms = (unsigned)c->timeout_ms;
	o->max_queue_bytes = c->max_queue;
	o->crc_data = c->crc_data;
	o->tls = c->tls;
	o->tls_cert = c->tls_cert;
	o->tls_key = c->tls_key;
	o->tls_ca = c->tls_ca;
}
