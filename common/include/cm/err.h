/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Error codes. Every function returns 0 or a negative errno; conditions errno
 * cannot express use the codes below, also returned negated. cm_strerror()
 * knows both spaces.
 */
#ifndef CM_ERR_H
#define CM_ERR_H

#include "cm/stdinc.h"

enum cm_err {
	CM_ERR_BASE = 1000,
	CM_EAUTH = 1000,     /* peer failed authentication (wrong cluster key) */
	CM_EVERSION = 1001,  /* no protocol version in common with the peer */
	CM_ECRC = 1002,      /* checksum mismatch */
	CM_ECLOSED = 1003,   /* connection closed (by us or the peer) */
	CM_EREFUSED = 1004,  /* peer refused the session */
	CM_EPEERDEAD = 1005, /* peer stopped answering (keepalive timeout) */
	CM_ESTUCK = 1006,    /* peer stopped reading: no send progress */
	CM_ERESET = 1007,    /* session reset: queued messages were dropped */
	CM_ECONF = 1008,     /* configuration error */
	CM_EETCD = 1009,     /* no etcd endpoint answered */
	CM_ETLS = 1010,      /* TLS setup failed: our certificate or key, or the peer's */
	CM_EMAC = 1011,      /* a frame failed its MAC: changed in flight, or not of this session */
	CM_ETICKET = 1012,   /* a service refused our ticket as stale (renew it and retry) */
	CM_ERR_LAST
};

/*
 * Human text for an error code, errno or cairn code, negative or positive.
 * \return a static string, never NULL.
 */
const char *cm_strerror(int rc);

/*
 * Symbolic name, e.g. "EIO" or "CM_EAUTH". \return a static string, never NULL.
 */
const char *cm_errname(int rc);

#endif
