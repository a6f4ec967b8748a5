/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A daemon's messenger and reactor in its /metrics: the cairn_msgr_* figures
 * (read at render time through a caller's function, so a daemon with several
 * messengers can sum them) and cairn_reactor_info{backend=...}.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm/msgr.h"
#include "cm/metrics.h"
#include "cm/reactor.h"
#include "cm/stdinc.h"

struct stat_ref {
	cm_msgr_stats_fn fn;
	void *arg;
	size_t off;
};

static double
stat_value(void *p)
{
	const struct stat_ref *r = p;
	struct cm_msgr_stats st;

	memset(&st, 0, sizeof(st));
	r->fn(r->arg, &st);
	return (double)*(const uint64_t *)((const char *)&st + r->off);
}

/* One messenger's own stats, as a cm_msgr_stats_fn. */
static void
one_msgr(void *arg, struct cm_msgr_stats *st)
{
	cm_msgr_get_stats(arg, st);
}

int
cm_msgr_metrics_register(struct cm_metrics *reg, cm_msgr_stats_fn fn, void *arg,
			 const struct cm_reactor *r)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} s[] = {
		{ "cairn_msgr_messages_sent", "Messages sent.",
		  offsetof(struct cm_msgr_stats, msgs_sent) },
		{ "cairn_msgr_messages_received", "Messages received.",
		  offsetof(struct cm_msgr_stats, msgs_recv) },
		{ "cairn_msgr_bytes_sent", "Bytes written to sockets.",
		  offsetof(struct cm_msgr_stats, bytes_sent) },
		{ "cairn_msgr_bytes_received", "Bytes read from sockets.",
		  offsetof(struct cm_msgr_stats, bytes_recv) },
		{ "cairn_msgr_resends", "Messages resent after a reconnect.",
		  offsetof(struct cm_msgr_stats, resends) },
		{ "cairn_msgr_crc_errors", "Frames rejected for a bad crc32c.",
		  offsetof(struct cm_msgr_stats, crc_errors) },
		{ "cairn_msgr_bad_frames", "Malformed frames rejected.",
		  offsetof(struct cm_msgr_stats, bad_frames) },
		{ "cairn_msgr_mac_failures",
		  "Frames rejected for a wrong or missing MAC (changed in flight, or not of the session).",
		  offsetof(struct cm_msgr_stats, mac_failures) },
		{ "cairn_msgr_auth_failures", "Handshakes failing the key.",
		  offsetof(struct cm_msgr_stats, auth_failures) },
		{ "cairn_msgr_socket_resets", "Sockets reset.",
		  offsetof(struct cm_msgr_stats, sock_resets) },
		{ "cairn_msgr_keepalive_timeouts", "Peers declared dead.",
		  offsetof(struct cm_msgr_stats, keepalive_timeouts) },
		{ "cairn_msgr_tls_failures", "TLS handshakes or records that failed.",
		  offsetof(struct cm_msgr_stats, tls_failures) },
		{ "cairn_msgr_forwarded",
		  "Messages handed to another reactor of this process (an OSD's PG shards).",
		  offsetof(struct cm_msgr_stats, forwarded) },
	};

	char label[64];
	struct cm_gauge *info;

	if (!fn) {
		fn = one_msgr;
	}
	for (size_t i = 0; i < CM_ARRAY_SIZE(s); i++) {
		/* freed with the registry */
		struct stat_ref *ref = malloc(sizeof(*ref));
		int rc;

		if (!ref)
			return -ENOMEM;
		*ref = (struct stat_ref){ fn, arg, s[i].off };
		rc = cm_metrics_gauge_fn_owned(reg, s[i].name, NULL, s[i].help, stat_value, ref);
		if (rc) {
			free(ref);
			return rc;
		}
	}
	if (r) {
		snprintf(label, sizeof(label), "backend=\"%s\"", cm_reactor_backend_name(r));
		info = cm_metrics_gauge(reg, "cairn_reactor_info", label,
					"Reactor backend in use.");
		if (!info)
			return -ENOMEM;
		cm_gauge_set(info, 1);
	}
	return 0;
}
