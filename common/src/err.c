/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/err.h"

static const struct {
	const char *name;
	const char *text;
} g_cm_errs[CM_ERR_LAST - CM_ERR_BASE] = {
	[CM_EAUTH - CM_ERR_BASE] = { "CM_EAUTH", "authentication failed" },
	[CM_EVERSION - CM_ERR_BASE] = { "CM_EVERSION", "no common protocol version" },
	[CM_ECRC - CM_ERR_BASE] = { "CM_ECRC", "checksum mismatch" },
	[CM_ECLOSED - CM_ERR_BASE] = { "CM_ECLOSED", "connection closed" },
	[CM_EREFUSED - CM_ERR_BASE] = { "CM_EREFUSED", "refused by peer" },
	[CM_EPEERDEAD - CM_ERR_BASE] = { "CM_EPEERDEAD", "peer not responding" },
	[CM_ESTUCK - CM_ERR_BASE] = { "CM_ESTUCK", "peer not reading" },
	[CM_ERESET - CM_ERR_BASE] = { "CM_ERESET", "session reset" },
	[CM_ECONF - CM_ERR_BASE] = { "CM_ECONF", "configuration error" },
	[CM_EETCD - CM_ERR_BASE] = { "CM_EETCD", "no etcd endpoint answered" },
	[CM_EMAC - CM_ERR_BASE] = { "CM_EMAC", "a frame failed its MAC (changed in flight, or not "
					       "of this session)" },
	[CM_ETICKET -
		CM_ERR_BASE] = { "CM_ETICKET", "the ticket is stale (renewed, then retried)" },
	[CM_ETLS -
		CM_ERR_BASE] = { "CM_ETLS",
				 "TLS: a certificate or key cannot be used, or the peer's is not "
				 "trusted" },
};

const char *
cm_strerror(int rc)
{
	if (rc < 0)
		rc = -rc;
	if (rc >= CM_ERR_BASE && rc < CM_ERR_LAST)
		return g_cm_errs[rc - CM_ERR_BASE].text;
	if (rc == 0)
		return "success";
	return strerrordesc_np(rc) ? strerrordesc_np(rc) : "unknown error";
}

const char *
cm_errname(int rc)
{
	if (rc < 0)
		rc = -rc;
	if (rc >= CM_ERR_BASE && rc < CM_ERR_LAST)
		return g_cm_errs[rc - CM_ERR_BASE].name;
	if (rc == 0)
		return "OK";
	return strerrorname_np(rc) ? strerrorname_np(rc) : "EUNKNOWN";
}
