/* SPDX-License-Identifier: Apache-2.0 */
/* The monitor library's internals shared between its files. */
#ifndef MON_INT_H
#define MON_INT_H

#include "mon/auth.h"
#include "cm/reactor.h"
#include "cm/worker.h"

/*
 * The monitor's copy of the entities and the service secrets (auth_cache.c):
 * created (blocking: a full read, then a watch) before the reactor runs;
 * lookups on the reactor thread. Stop (the watch) before the reactor's
 * last messages run, destroy after.
 */
struct mon_auth_cache;

int mon_auth_cache_create(struct cm_reactor *r, struct cm_etcd *e, struct cm_worker_pool *wp,
			  const char *fsid, const uint8_t kek[CM_AUTH_KEY_LEN],
			  struct mon_auth_cache **cp);
void mon_auth_cache_stop(struct mon_auth_cache *c);
void mon_auth_cache_destroy(struct mon_auth_cache *c);

/* name's key and caps (*caps malloc'd, may be NULL not to ask). \return 0, -ENOENT, -ENOMEM. */
int mon_auth_cache_lookup(const struct mon_auth_cache *c, const char *name,
			  uint8_t key[CM_AUTH_KEY_LEN], char **caps);

const struct mon_secrets *mon_auth_cache_secrets(const struct mon_auth_cache *c);

#endif
