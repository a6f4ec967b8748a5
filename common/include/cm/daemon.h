/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every Cairn process that speaks the messenger shares: the options
 * (cluster key, reactor, logging, messenger timeouts, TLS, pid file) as one
 * struct embedded in the process's own config struct, their option-table
 * entries, and the start-up steps built on them.
 *
 *   struct mon_conf { struct cm_daemon_conf d; uint64_t osd_grace_ms; ... };
 *   static const struct cm_opt opts[] = {
 *           CM_DAEMON_OPTS(struct mon_conf, d, "mon.a"), ... , { 0 } };
 */
#ifndef CM_DAEMON_H
#define CM_DAEMON_H

#include "cm/conf.h"
#include "cm/msgr.h"

#include <signal.h>

struct cm_daemon_conf {
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
	char *frame_mac; /* "on" (NULL: a conf not read from the table) or "off" */
	bool tls;
	char *tls_cert;
	char *tls_key;
	char *tls_ca;
	bool tls_verify;
	char *bind_src; /* outgoing connections leave from this address ("": the kernel picks) */
	/* Identities (docs/design/auth.md, cm_daemon_identity). */
	char *name;    /* the entity whose key we prove; "": the process's default */
	char *keyring; /* a keyring file holding name's key */
	char *key;     /* name's key itself (base64); wins over keyring */
};

int cm_daemon_valid_key(const struct cm_opt *o, const char *v, char *err, size_t len);
int cm_daemon_valid_reactor(const struct cm_opt *o, const char *v, char *err, size_t len);
int cm_daemon_valid_on_off(const struct cm_opt *o, const char *v, char *err, size_t len);
int cm_daemon_valid_level(const struct cm_opt *o, const char *v, char *err, size_t len);

#define CM_DAEMON_OPT_(name_, type_, def_, min_, max_, st_, m_, field_, help_, valid_, flags_) \
	{                                                                                      \
		.name = (name_), .type = (type_), .def = (def_), .min = (min_), .max = (max_), \
		.flags = (flags_),                                                             \
		.offset = offsetof(st_, m_) + offsetof(struct cm_daemon_conf, field_),         \
		.help = (help_), .validate = (valid_)                                          \
	}

/* The shared entries; st_ is the daemon's struct, m_ its cm_daemon_conf member. */
#define CM_DAEMON_OPTS(st_, m_, entity_)                                                           \
	CM_DAEMON_OPT_("cluster_key", CM_OPT_STR, "", 0, 0, st_, m_, cluster_key,                  \
		       "shared secret every daemon and client of the cluster holds (>= 16 chars)", \
		       cm_daemon_valid_key, CM_OPT_F_SECRET),                                      \
		CM_DAEMON_OPT_("entity", CM_OPT_STR, entity_, 0, 0, st_, m_, entity,               \
			       "this process's name on the wire", NULL, 0),                        \
		CM_DAEMON_OPT_("reactor", CM_OPT_STR, "auto", 0, 0, st_, m_, reactor,              \
			       "event loop backend: auto (io_uring, else epoll), uring, epoll",    \
			       cm_daemon_valid_reactor, 0),                                        \
		CM_DAEMON_OPT_("log_level", CM_OPT_STR, "notice", 0, 0, st_, m_, log_level,        \
			       "err, warn, notice, info or debug", cm_daemon_valid_level, 0),      \
		CM_DAEMON_OPT_("log_file", CM_OPT_STR, "", 0, 0, st_, m_, log_file,                \
			       "log to this file (appended) instead of stderr", NULL, 0),          \
		CM_DAEMON_OPT_("debug", CM_OPT_STR, "", 0, 0, st_, m_, debug,                      \
			       "comma-separated subsystems to log at DEBUG (msgr,reactor,... or "  \
			       "all)",                                                             \
			       NULL, 0),                                                           \
		CM_DAEMON_OPT_("pid_file", CM_OPT_STR, "", 0, 0, st_, m_, pid_file,                \
			       "write the process id here", NULL, 0),                              \
		CM_DAEMON_OPT_("keepalive", CM_OPT_DURATION, "1s", 10, 600000, st_, m_,            \
			       keepalive_ms, "send a keepalive when a link is idle this long",     \
			       NULL, 0),                                                           \
		CM_DAEMON_OPT_("timeout", CM_OPT_DURATION, "15s", 100, 3600000, st_, m_,           \
			       timeout_ms, "a peer silent (or not reading) this long is dead",     \
			       NULL, 0),                                                           \
		CM_DAEMON_OPT_("max_queue", CM_OPT_SIZE, "256M", 1048576, 68719476736, st_, m_,    \
			       max_queue, "per-session send queue bound (backpressure)", NULL, 0), \
		CM_DAEMON_OPT_("crc_data", CM_OPT_BOOL, "true", 0, 0, st_, m_, crc_data,           \
			       "crc32c over message data (set the same cluster-wide)", NULL, 0),   \
		CM_DAEMON_OPT_("frame_mac", CM_OPT_STR, "on", 0, 0, st_, m_, frame_mac,            \
			       "on or off: a MAC on every frame after the handshake (plain TCP; "  \
			       "set the same cluster-wide: off only on a network you trust)",      \
			       cm_daemon_valid_on_off, 0),                                         \
		CM_DAEMON_OPT_("tls", CM_OPT_BOOL, "false", 0, 0, st_, m_, tls,                    \
			       "TLS on every messenger link (set the same cluster-wide)", NULL,    \
			       0),                                                                 \
		CM_DAEMON_OPT_("tls_cert", CM_OPT_STR, "", 0, 0, st_, m_, tls_cert,                \
			       "PEM certificate (chain) this process presents; needed to listen",  \
			       NULL, 0),                                                           \
		CM_DAEMON_OPT_("tls_key", CM_OPT_STR, "", 0, 0, st_, m_, tls_key,                  \
			       "PEM private key for tls_cert", NULL, 0),                           \
		CM_DAEMON_OPT_("tls_ca", CM_OPT_STR, "", 0, 0, st_, m_, tls_ca,                    \
			       "PEM CA bundle: peers must present a certificate it signed", NULL,  \
			       0),                                                                 \
		CM_DAEMON_OPT_("tls_verify", CM_OPT_BOOL, "true", 0, 0, st_, m_, tls_verify,       \
			       "check peers' certificates against tls_ca (false: TLS only "        \
			       "encrypts)",                                                        \
			       NULL, 0),                                                           \
		CM_DAEMON_OPT_("bind_src", CM_OPT_STR, "", 0, 0, st_, m_, bind_src,                \
			       "outgoing connections leave from this address (IP:0; empty: the "   \
			       "kernel picks; cairn-osd: its public_addr's host)",                 \
			       NULL, 0),                                                           \
		CM_DAEMON_OPT_("name", CM_OPT_STR, "", 0, 0, st_, m_, name,                        \
			       "the entity whose key this process proves (default client.admin "   \
			       "for tools and clients; an OSD is osd.<its store's uuid>)",         \
			       NULL, 0),                                                           \
		CM_DAEMON_OPT_("keyring", CM_OPT_STR, "", 0, 0, st_, m_, keyring,                  \
			       "keyring file with name's key (mode 0600)", NULL, 0),               \
		CM_DAEMON_OPT_("key", CM_OPT_STR, "", 0, 0, st_, m_, key,                          \
			       "name's key itself (base64; wins over keyring)", NULL,              \
			       CM_OPT_F_SECRET)

/* Logging from the config. \return 0, or -CM_ECONF with a message on stderr. */
int cm_daemon_setup_logging(const struct cm_daemon_conf *c);
/* The reactor the config asks for; the daemon's log names its backend (NOTICE). */
int cm_daemon_reactor_create(const struct cm_daemon_conf *c, const char *name,
			     struct cm_reactor **rp);
/* The same for a client tool: nothing logged (its stderr is the user's). */
int cm_daemon_client_reactor_create(const struct cm_daemon_conf *c, const char *name,
				    struct cm_reactor **rp);
void cm_daemon_msgr_opts(const struct cm_daemon_conf *c, struct cm_msgr_opts *o);

/*
 * The entity this process proves and its key (docs/design/auth.md):
 * c->name, else default_name; the key from c->key, else c->keyring, else,
 * for client.admin and client.bootstrap-osd, derived from c->cluster_key.
 * eturn 0; -ENOENT (no key for the name anywhere), -EPERM (a keyring
 * others may read), -EINVAL (a bad name or key), -EBADMSG, -EIO; err
 * (errlen bytes) says which.
 */
int cm_daemon_identity(const struct cm_daemon_conf *c, const char *default_name,
		       char name[CM_HS_ENTITY_MAX], uint8_t key[CM_HS_KEY_LEN], char *err,
		       size_t errlen);

/* The kinds of credentials cm_msgr_cred_fn is asked for (cm_msgr_connect_kind). */
enum cm_cred_kind {
	CM_CRED_SERVICE = 0, /* an OSD: a ticket */
	CM_CRED_MON = 1,     /* a monitor: the entity's own key */
};

/* Write our pid to path (empty: nothing). \return 0 or -errno. */
int cm_daemon_write_pid(const char *path);

/*
 * Block SIGTERM/SIGINT (call before any thread starts) and ignore SIGPIPE;
 * cm_daemon_signals_watch then stops r when one arrives.
 */
void cm_daemon_block_signals(sigset_t *mask);

struct cm_daemon_signals;
int cm_daemon_signals_watch(struct cm_reactor *r, const sigset_t *mask,
			    struct cm_daemon_signals **sp);
void cm_daemon_signals_stop(struct cm_daemon_signals *s);

#endif
