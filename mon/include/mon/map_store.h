/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cluster map in etcd. Keys under /cairn/<fsid>/:
 *   osdmap                 the current map (protobuf OsdMap)
 *   osdmap/<epoch:020>     each epoch's map, the last MON_MAP_HISTORY kept
 *   osdmap_inc/<epoch:020> each epoch's incremental (from epoch - 1), the last
 *                          MON_INC_HISTORY kept: subscribers catch up with
 *                          these, or take a full map when further behind
 *
 * Every change is read -> apply -> epoch + 1 -> one etcd transaction that
 * succeeds only if osdmap still has the mod_revision that was read, writing
 * the new map, its history entry and its incremental (and trimming the
 * oldest) together. A conflict re-reads and re-applies, so concurrent
 * writers (several monitors) never lose a change and epochs increase by
 * exactly one per change.
 *
 * Threading: blocking (etcd calls); run on worker threads.
 */
#ifndef MON_MAP_STORE_H
#define MON_MAP_STORE_H

#include "cm/etcd.h"

#include <cairn/osdmap.pb-c.h>

#define MON_MAP_HISTORY 50
#define MON_INC_HISTORY 500

struct mon_map_store;

/* \return 0, -EINVAL (bad fsid), -ENOMEM. The store borrows e. */
int mon_map_store_open(struct cm_etcd *e, const char *fsid, struct mon_map_store **sp);
void mon_map_store_close(struct mon_map_store *s);

/*
 * Store `initial` as epoch 1 unless a map exists.
 * \return 0, -EEXIST (a map is there already), or an etcd error.
 */
int mon_map_create(struct mon_map_store *s, const Cairn__Map__OsdMap *initial);

/*
 * The current map (free with cairn__map__osd_map__free_unpacked(m, NULL)).
 * \return 0, -ENOENT (no map yet), -EBADMSG (undecodable), or an etcd error.
 */
int mon_map_read(struct mon_map_store *s, Cairn__Map__OsdMap **mp);

/* Epoch `epoch` from the history. \return 0, -ENOENT (trimmed or never), ... */
int mon_map_read_epoch(struct mon_map_store *s, uint64_t epoch, Cairn__Map__OsdMap **mp);

/* The incremental that made `epoch` (free with cairn__map__incremental__free_unpacked). \return 0,
 * -ENOENT (trimmed, never, or epoch 1), -EBADMSG, ... */
int mon_map_read_inc(struct mon_map_store *s, uint64_t epoch, Cairn__Map__Incremental **incp);

/*
 * Change the map: fn edits it (allocating with malloc: strings via
 * mon_map_set_str, arrays via realloc) and returns 0 to commit, 1 for "no
 * change", or a negative error that aborts the update and is returned.
 * fn may run more than once (on conflicts): it must be a pure function of
 * the map it is given. \return 0 (committed; *epoch the new epoch), 1 (no
 * change), -EAGAIN (still conflicting after many tries), fn's error, or an
 * etcd error.
 */
typedef int (*mon_map_update_fn)(void *arg, Cairn__Map__OsdMap *m);

int mon_map_update(struct mon_map_store *s, mon_map_update_fn fn, void *arg, uint64_t *epoch);

/* Replace a string field of an unpacked message. \return 0 or -ENOMEM. */
int mon_map_set_str(char **field, const char *value);

#endif
