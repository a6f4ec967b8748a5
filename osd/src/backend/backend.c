/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pool kinds (struct osd_backend, osd_int.h), and what a shard does to
 * all of them at once.
 */
#include "osd_int.h"

static const struct osd_backend *const g_backends[] = { &osd__backend_replicated,
							&osd__backend_ec };

void
osd__backends_peer_reset(struct osd *o, int32_t peer)
{
	for (size_t i = 0; i < sizeof(g_backends) / sizeof(g_backends[0]); i++)
		if (g_backends[i]->peer_reset)
			g_backends[i]->peer_reset(o, peer);
}

void
osd__backends_abort_all(struct osd *o)
{
	for (size_t i = 0; i < sizeof(g_backends) / sizeof(g_backends[0]); i++)
		if (g_backends[i]->abort_all)
			g_backends[i]->abort_all(o);
}

void
osd__backends_free_all(struct osd *o)
{
	for (size_t i = 0; i < sizeof(g_backends) / sizeof(g_backends[0]); i++)
		if (g_backends[i]->free_all)
			g_backends[i]->free_all(o);
}
