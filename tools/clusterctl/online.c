/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clusterctl's cluster commands: sent to a monitor, which runs them (see
 * mon/cluster.h for the list) and answers with text or JSON.
 */
#include "ctl.h"
#include "mon/client_sync.h"
#include "cm/err.h"

#include <jansson.h>

int
ctl_online(const struct ctl_conf *c, int argc, char **argv, bool json)
{
	Cairn__Mon__CommandReply *rep = NULL;
	struct mon_sync *s;
	char err[256];
	int rc, status;

	if (!c->mon_host[0]) {
		fprintf(stderr, "clusterctl: mon_host is not set: pass -c DIR/cairn.conf, set "
				"CAIRN_CONF, or run 'clusterctl up' first\n");
		return 2;
	}
	if (!c->d.cluster_key[0]) {
		fprintf(stderr, "clusterctl: cluster_key is not set (in the config file)\n");
		return 2;
	}
	rc = mon_sync_open(&c->d, c->mon_host, (unsigned)c->command_timeout_ms, &s, err,
			   sizeof(err));
	if (rc) {
		fprintf(stderr, "clusterctl: %s\n", err);
		return 2;
	}
	rc = mon_sync_command(s, argc, argv, json, &rep);
	if (rc) {
		fprintf(stderr, "clusterctl: no monitor answered (%s): %s\n", c->mon_host,
			rc == -ETIMEDOUT ? "timed out" : cm_strerror(rc));
		mon_sync_close(s);
		return 1;
	}
	fputs(rep->out, stdout);
	if (rep->rc) {
		if (json) {
			json_t *e = json_pack("{s:i, s:s}", "error", rep->rc, "message", rep->err);
			char *t = e ? json_dumps(e, 0) : NULL;

			if (t)
				printf("%s\n", t);
			free(t);
			json_decref(e);
		}
		fprintf(stderr, "clusterctl: %s\n", rep->err);
	}
	status = rep->rc == 0 ? 0 : rep->rc == -EINVAL ? 2 : 1;
	cairn__mon__command_reply__free_unpacked(rep, NULL);
	mon_sync_close(s);
	return status;
}
