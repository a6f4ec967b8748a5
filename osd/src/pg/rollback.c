/* SPDX-License-Identifier: Apache-2.0 */
/*
 * EC rollback stashes: the old state a shard keeps until every shard has
 * an entry, and undoing an entry from its stash.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

static size_t
stash_key(const struct osd_ver *v, uint8_t k[17])
{
	k[0] = 's';
	osd_ver_pack(v, k + 1);
	return 17;
}

/* Index of v in pg->stashes, or -1. */
static ssize_t
stash_find(const struct osd_pg *pg, const struct osd_ver *v)
{
	for (size_t i = 0; i < pg->nstash; i++)
		if (osd_ver_cmp(&pg->stashes[i], v) == 0)
			return (ssize_t)i;
	return -1;
}

/* Our copy keeps a stash for the entry at v (t makes it). */
int
osd__stash_add(struct osd_pg *pg, struct os_txn *t, const struct osd_ver *v)
{
	uint8_t k[17];
	size_t i = pg->nstash;

	if (stash_find(pg, v) >= 0)
		return 0;
	if (pg->nstash == pg->capstash) {
		size_t cap = pg->capstash ? 2 * pg->capstash : 8;
		struct osd_ver *n = realloc(pg->stashes, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		pg->stashes = n;
		pg->capstash = cap;
	}
	while (i > 0 && osd_ver_cmp(&pg->stashes[i - 1], v) > 0) {
		pg->stashes[i] = pg->stashes[i - 1];
		i--;
	}
	pg->stashes[i] = *v;
	pg->nstash++;
	return t ? os_txn_omap_set(t, pg->cid, OSD_PGMETA, k, stash_key(v, k), "", 0) : 0;
}

/* Forget stash i; its object too unless the caller consumes it. */
static int
stash_del(struct osd_pg *pg, struct os_txn *t, size_t i, bool object)
{
	struct osd_ver v = pg->stashes[i];
	char name[OSD_STASH_NAME_MAX];
	uint8_t k[17];
	int rc = 0;

	memmove(&pg->stashes[i], &pg->stashes[i + 1], (pg->nstash - i - 1) * sizeof(v));
	pg->nstash--;
	if (object) {
		osd_stash_name(&v, name);
		rc = os_txn_remove_any(t, pg->cid, name);
	}
	return rc ? rc : os_txn_omap_rm(t, pg->cid, OSD_PGMETA, k, stash_key(&v, k));
}

int
osd__pg_stash_drop(struct osd_pg *pg, struct os_txn *t, const struct osd_ver *upto)
{
	int rc = 0;

	while (!rc && pg->nstash && osd_ver_cmp(&pg->stashes[0], upto) <= 0)
		rc = stash_del(pg, t, 0, true);
	return rc;
}

int
osd__pg_stash_prune(struct osd_pg *pg, struct os_txn *t,
		    bool (*keep)(void *, const struct osd_ver *), void *arg)
{
	int rc = 0;

	for (size_t i = pg->nstash; i-- > 0 && !rc;)
		if (!keep(arg, &pg->stashes[i]))
			rc = stash_del(pg, t, i, true);
	return rc;
}

int
osd__pg_stash_forget(struct osd_pg *pg, struct os_txn *t)
{
	uint8_t first[1] = { 's' }, end[1] = { 't' };

	pg->nstash = 0;
	return os_txn_omap_rm_range(t, pg->cid, OSD_PGMETA, first, 1, end, 1);
}

int
osd__pg_undo_entry(struct osd_pg *pg, struct os_txn *t, const struct osd_lent *e)
{
	char name[OSD_STASH_NAME_MAX];
	ssize_t i;
	int rc;

	if (e->undo == OSD_UNDO_CREATE)
		return os_txn_remove_any(t, pg->cid, e->oid);
	if (e->undo != OSD_UNDO_STASH && e->undo != OSD_UNDO_RENAME)
		return -ENOENT;
	i = stash_find(pg, &e->ver);
	if (i < 0)
		return -ENOENT;
	osd_stash_name(&e->ver, name);
	rc = e->undo == OSD_UNDO_STASH
		     ? os_txn_unstash(t, pg->cid, name, e->oid, e->undo_off, e->undo_len)
		     : os_txn_rename(t, pg->cid, name, e->oid);
	return rc ? rc : stash_del(pg, t, (size_t)i, false);
}

/* Did the TxOps keep a stash (EC)? */
bool
osd__txops_stash(Cairn__Osd__TxOp *const *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ops[i]->op == OSD_TX_STASH || ops[i]->op == OSD_TX_RENAME)
			return true;
	return false;
}

static void
on_roll_commit(void *arg, int rc)
{
	struct osd *o = arg;

	(void)o;
	if (rc)
		CM_WARN("dropping rollback stashes failed: %s", cm_strerror(rc));
}

/* Drop our stashes of entries up to v (a transaction of its own). */
void
osd__roll_local(struct osd_pg *pg, const struct osd_ver *v)
{
	struct os_txn *t = NULL;

	if (!pg->nstash || osd_ver_cmp(&pg->stashes[0], v) > 0)
		return;
	if (os_txn_create(&t) || osd__pg_stash_drop(pg, t, v)) {
		os_txn_destroy(t);
		return; /* the next change tries again */
	}
	osd__queue(pg->osd, t, on_roll_commit, pg->osd);
}
