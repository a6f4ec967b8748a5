/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared daemon start-up; see cm/daemon.h.
 */
#include "cm/daemon.h"
#include "cm/auth.h"
#include "cm/err.h"
#include "cm/log.h"

#include <poll.h>
#include <sys/signalfd.h>

CM_LOG_SUBSYS(daemon);

int
cm_daemon_valid_key(const struct cm_opt *o, const char *v, char *err, size_t len)
{
	(void)o;
	if (v[0] && strlen(v) < 16) {
		snprintf(err, len, "a cluster key needs at least 16 characters");
		return -EINVAL;
	}
	return 0;
}

int
cm_daemon_valid_on_off(const struct cm_opt *o, const char *v, char *err, size_t len)
{
	(void)o;
	if (strcmp(v, "on") && strcmp(v, "off")) {
		snprintf(err, len, "on or off");
		return -EINVAL;
	}
	return 0;
}

int
cm_daemon_valid_reactor(const struct cm_opt *o, const char *v, char *err, size_t len)
{
	enum cm_reactor_backend b;

	(void)o;
	if (cm_reactor_backend_parse(v, &b)) {
		snprintf(err, len, "one of auto, uring, epoll");
		return -EINVAL;
	}
	return 0;
}

int
cm_daemon_valid_level(const struct cm_opt *o, const char *v, char *err, size_t len)
{
	enum cm_log_level l;

	(void)o;
	if (cm_log_level_parse(v, &l)) {
		snprintf(err, len, "one of err, warn, notice, info, debug");
		return -EINVAL;
	}
	return 0;
}

int
cm_daemon_setup_logging(const struct cm_daemon_conf *c)
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
cm_daemon_client_reactor_create(const struct cm_daemon_conf *c, const char *name,
				struct cm_reactor **rp)
{
	struct cm_reactor_opts o;

	cm_reactor_opts_init(&o, sizeof(o));
	cm_reactor_backend_parse(c->reactor, &o.backend);
	o.name = name;
	return cm_reactor_create(&o, rp);
}

int
cm_daemon_reactor_create(const struct cm_daemon_conf *c, const char *name, struct cm_reactor **rp)
{
	int rc = cm_daemon_client_reactor_create(c, name, rp);

	if (!rc) /* a daemon's log says which backend it runs (a client's stderr does not) */
		CM_NOTICE("reactor=%s backend=%s", name, cm_reactor_backend_name(*rp));
	return rc;
}

void
cm_daemon_msgr_opts(const struct cm_daemon_conf *c, struct cm_msgr_opts *o)
{
	cm_msgr_opts_init(o, sizeof(*o));
	o->entity = c->entity;
	o->key = (const uint8_t *)c->cluster_key;
	o->key_len = strlen(c->cluster_key);
	o->keepalive_ms = (unsigned)c->keepalive_ms;
	o->timeout_ms = (unsigned)c->timeout_ms;
	o->max_queue_bytes = c->max_queue;
	o->crc_data = c->crc_data;
	/* off: protocol 1, frames without MACs (and peers must agree). A conf
	 * built by hand (NULL) keeps the default, MACs on. */
	if (c->frame_mac && !strcmp(c->frame_mac, "off"))
		o->proto_min = o->proto_max = CM_MSGR_PROTO_MIN;
	o->tls = c->tls;
	o->tls_cert = c->tls_cert;
	o->tls_key = c->tls_key;
	o->tls_ca = c->tls_ca;
	o->tls_verify = c->tls_verify;
	o->bind_src = c->bind_src;
}

int
cm_daemon_identity(const struct cm_daemon_conf *c, const char *default_name,
		   char name[CM_HS_ENTITY_MAX], uint8_t key[CM_HS_KEY_LEN], char *err,
		   size_t errlen)
{
	const char *n = c->name && c->name[0] ? c->name : default_name;
	int rc;

	if (!n || !cm_auth_valid_name(n)) {
		snprintf(err, errlen, "name '%.80s' is not an entity name (client.ID, osd.ID, ...)",
			 n ? n : "");
		return -EINVAL;
	}
	snprintf(name, CM_HS_ENTITY_MAX, "%s", n);
	if (c->key && c->key[0]) {
		if (cm_auth_key_decode(c->key, key)) {
			snprintf(err, errlen, "key for %s is not a base64 key of 32 bytes", n);
			return -EINVAL;
		}
		return 0;
	}
	bool builtin = c->cluster_key && c->cluster_key[0] &&
		       (!strcmp(n, CM_AUTH_ADMIN) || !strcmp(n, CM_AUTH_BOOTSTRAP_OSD));

	if (c->keyring && c->keyring[0]) {
		rc = cm_keyring_read(c->keyring, n, key, err, errlen);
		if (rc != -ENOENT || !builtin)
			return rc;
	}
	if (builtin) {
		rc = cm_auth_entity_key(c->cluster_key, n, key);
		if (rc)
			snprintf(err, errlen, "deriving %s's key: %s", n, cm_strerror(rc));
		return rc;
	}
	snprintf(err, errlen, "no key for %s (set keyring or key)", n);
	return -ENOENT;
}

int
cm_daemon_write_pid(const char *path)
{
	FILE *f;

	if (!path || !path[0])
		return 0;
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%d\n", (int)getpid());
	return fclose(f) ? -errno : 0;
}

void
cm_daemon_block_signals(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGINT);
	sigprocmask(SIG_BLOCK, mask, NULL);
	signal(SIGPIPE, SIG_IGN);
}

struct cm_daemon_signals {
	struct cm_reactor *r;
	int fd;
	struct cm_io io;
	struct signalfd_siginfo si;
};

static void
on_signal(struct cm_io *io, int res)
{
	struct cm_daemon_signals *s = io->arg;

	if (res < 0 || read(s->fd, &s->si, sizeof(s->si)) != (ssize_t)sizeof(s->si)) {
		/* Spurious: wait again. */
		if (cm_io_poll(s->r, &s->io, s->fd, POLLIN) == 0)
			return;
	}
	CM_NOTICE("signal %u: shutting down", s->si.ssi_signo);
	cm_reactor_stop(s->r);
}

int
cm_daemon_signals_watch(struct cm_reactor *r, const sigset_t *mask, struct cm_daemon_signals **sp)
{
	struct cm_daemon_signals *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->r = r;
	s->fd = signalfd(-1, mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (s->fd < 0) {
		rc = -errno;
		free(s);
		return rc;
	}
	s->io.cb = on_signal;
	s->io.arg = s;
	rc = cm_io_poll(r, &s->io, s->fd, POLLIN);
	if (rc) {
		close(s->fd);
		free(s);
		return rc;
	}
	*sp = s;
	return 0;
}

void
cm_daemon_signals_stop(struct cm_daemon_signals *s)
{
	if (!s)
		return;
	if (cm_io_pending(&s->io)) {
		cm_io_cancel(s->r, &s->io);
		for (int i = 0; i < 100 && cm_io_pending(&s->io); i++)
			cm_reactor_run_once(s->r, 10);
	}
	cm_reactor_close(s->r, s->fd);
	free(s);
}
