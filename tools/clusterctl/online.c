/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clusterctl's cluster commands: sent through libcairn (cairn_mon_command)
 * to the monitors' leader, which runs them (see mon/cluster.h for the list)
 * and answers with text or JSON.
 */
#include "ctl.h"
#include "cairn/cairn.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

int
ctl_connect(const struct ctl_conf *c, unsigned connect_ms, unsigned op_ms, cairn_cluster_t **clp,
	    char *err, size_t errlen)
{
	struct cairn_opts o;

	cairn_opts_init(&o, sizeof(o));
	o.conf_file = c->conf_path; /* (tls, frame_mac, ...: the messenger's settings) */
	o.mon_host = c->mon_host;
	o.cluster_key = c->d.cluster_key;
	/* (only what is set: the file's [client] section may name them) */
	o.name = c->d.name && c->d.name[0] ? c->d.name : NULL;
	o.keyring = c->d.keyring && c->d.keyring[0] ? c->d.keyring : NULL;
	o.key = c->d.key && c->d.key[0] ? c->d.key : NULL;
	o.connect_timeout_ms = connect_ms;
	o.op_timeout_ms = op_ms;
	return cairn_connect(&o, clp, err, errlen);
}

int
ctl_online(const struct ctl_conf *c, int argc, char **argv, bool json)
{
	cairn_cluster_t *cl;
	char err[256], *out = NULL, *msg = NULL;
	int rc;

	if (!c->mon_host[0]) {
		fprintf(stderr, "clusterctl: mon_host is not set: pass -c DIR/cairn.conf, set "
				"CAIRN_CONF, or run 'clusterctl up' first\n");
		return 2;
	}
	rc = ctl_connect(c, (unsigned)c->command_timeout_ms, (unsigned)c->command_timeout_ms, &cl,
			 err, sizeof(err));
	if (rc) {
		/* (err may say it already) */
		if (strstr(err, "no monitor answered"))
			fprintf(stderr, "clusterctl: %s (%s)\n", err, c->mon_host);
		else if (rc == -EPERM || rc == -EINVAL)
			fprintf(stderr, "clusterctl: %s\n", err);
		else
			fprintf(stderr, "clusterctl: no monitor answered (%s): %s\n", c->mon_host,
				err);
		return rc == -EINVAL ? 2 : 1;
	}
	rc = cairn_mon_command(cl, (const char *const *)argv, (size_t)argc, json, &out, &msg);
	if (!out) { /* (no answer at all) */
		fprintf(stderr, "clusterctl: no monitor answered (%s): %s\n", c->mon_host,
			rc == -ETIMEDOUT ? "timed out" : strerror(-rc));
		free(msg);
		cairn_shutdown(cl);
		return 1;
	}
	fputs(out, stdout);
	if (rc) {
		const char *m = msg && msg[0] ? msg : strerror(-rc);

		if (json) {
			json_t *e = json_pack("{s:i, s:s}", "error", rc, "message", m);
			char *t = e ? json_dumps(e, 0) : NULL;

			if (t)
				printf("%s\n", t);
			free(t);
			json_decref(e);
		}
		fprintf(stderr, "clusterctl: %s\n", m);
	}
	free(out);
	free(msg);
	cairn_shutdown(cl);
	return rc == 0 ? 0 : rc == -EINVAL ? 2 : 1;
}
