/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the OSD reads back from its store when it loads its PGs, one record
 * at a time, without the store: for tests/fuzz/pg_record_fuzz.c only.
 * Reactor thread (or any, on a struct osd no reactor uses).
 */
#ifndef OSD_PG_LOAD_INT_H
#define OSD_PG_LOAD_INT_H

#include "osd_int.h"

/*
 * One record of pg's OSD_PGMETA omap as pg_load (table.c) takes it, by key:
 * "info", OSD_PRIOR_KEY, 'l' + version (a log entry), 's' + version (a
 * stash), 'm' + name (a missing object); others are ignored. pg_load reads
 * them in that order. \return 0, -EIO (undecodable, where pg_load fails),
 * -ENOMEM.
 */
int osd__pg_load_record(struct osd_pg *pg, const struct os_kv *kv);

/*
 * One "iv.POOL.SEED" record of the OSD's meta object (past intervals of a
 * PG we do not hold), as osd__pivs_load_all takes it after the PGs are
 * loaded. Records it cannot read are ignored.
 */
void osd__pivs_load_record(struct osd *o, const struct os_kv *kv);

#endif
