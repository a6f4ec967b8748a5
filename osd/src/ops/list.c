/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Listing a PG's objects.
 */
#include "osd_int.h"
#include "cm/err.h"
#include "cm/log.h"

CM_LOG_SUBSYS(pg);

/* Listing a PG's objects (on the worker). */
struct list_req {
	struct osd *osd;
	struct cm_conn *c;
	uint64_t tid;
	Cairn__Osd__PgList *q;
	char cid[48];
	uint32_t pg_num;         /* the pool's, when the listing began */
	uint64_t interval_epoch; /* the PG's, then */
	char **oids;
	size_t n;
	bool more;
	int rc;
	struct cm_work w;
};

/*
 * Up to max store names after start_after in the namespace asked for (or
 * all), and whether there are more. Internal objects (named from \x01: the
 * PG's meta object, EC stashes) are skipped, other namespaces jumped over
 * (crush_oname_list_step), and the scan goes on past them: a page of only
 * those must not look like the end of the PG.
 */
/*
 * ns_only: the namespaces in the PG after start_after, up to max: each
 * found by one scan from the jump past the one before ("\x02 ns \x20"
 * sorts after all of ns's names), the default one ("") when a name with
 * it comes (keyed ones sort among the namespaces, bare ones last).
 */
static void
list_ns_fn(struct list_req *l, unsigned max)
{
	char after[OS_NAME_MAX + 2];
	bool more = true, end = false;

	snprintf(after, sizeof(after), "%s", l->q->start_after ? l->q->start_after : "");
	l->n = 0;
	l->more = false;
	l->oids = calloc(max + 1, sizeof(*l->oids));
	if (!l->oids) {
		l->rc = -ENOMEM;
		return;
	}
	while (more && !end && l->n <= max) {
		char **got = NULL, *ns = NULL;
		size_t ng = 0, nl = 0;

		l->rc = os_list(l->osd->store, l->cid, after[0] ? after : NULL, 64, &got, &ng,
				&more);
		if (l->rc == -ENOENT && l->n) {
			l->rc = 0;
			break;
		}
		if (l->rc)
			break;
		if (!ng) {
			free(got);
			break;
		}
		for (size_t i = 0; i < ng && !ns && !end; i++) {
			const char *s = got[i], *sep;

			if ((uint8_t)s[0] == 1) {
				snprintf(after, sizeof(after), "%s", s);
			} else if (s[0] != CRUSH_ONAME_NS_MARK) {
				ns = (char *)s; /* bare: the default namespace, and the end */
				nl = 0;
				end = true;
			} else if ((sep = strchr(s + 1, CRUSH_ONAME_SEP))) {
				ns = (char *)s + 1;
				nl = (size_t)(sep - s - 1);
			} else {
				snprintf(after, sizeof(after), "%s", s); /* (no valid name) */
			}
		}
		if (ns) {
			char *one = malloc(nl + 1);

			if (!one) {
				os_names_free(got, ng);
				l->rc = -ENOMEM;
				break;
			}
			memcpy(one, ns, nl);
			one[nl] = 0;
			/* ("" twice: keyed names of the default one, then bare ones) */
			if (!l->n || strcmp(l->oids[l->n - 1], one))
				l->oids[l->n++] = one;
			else
				free(one);
			after[0] = CRUSH_ONAME_NS_MARK;
			memcpy(after + 1, ns, nl);
			after[1 + nl] = ' ';
			after[2 + nl] = 0;
		}
		os_names_free(got, ng);
	}
	if (l->rc) {
		os_names_free(l->oids, l->n);
		l->oids = NULL;
		l->n = 0;
		return;
	}
	l->more = more && !end;
	if (l->n > max) {
		for (size_t i = max; i < l->n; i++)
			free(l->oids[i]);
		l->n = max;
		l->more = true;
	}
}

static void
list_fn(void *arg)
{
	struct list_req *l = arg;
	unsigned max = l->q->max ? CM_MIN(l->q->max, 10000u) : 1000;
	/* A shard listing (an EC rebuild's) covers every namespace. */
	const char *ns = (l->q->all_ns || l->q->shard) ? NULL : l->q->nspace ? l->q->nspace : "";
	char after[OS_NAME_MAX + 2], res[OS_NAME_MAX + 2];
	bool more = true, end = false;

	if (l->q->ns_only) {
		list_ns_fn(l, max);
		return;
	}
	crush_oname_list_start(ns, l->q->start_after, after);
	l->n = 0;
	l->more = false;
	/* (each pass moves past at least one name or ends: bounded by the PG's size) */
	while (more && !end && l->n <= max) {
		char **got, **grown;
		size_t ng;

		l->rc = os_list(l->osd->store, l->cid, after[0] ? after : NULL,
				(unsigned)(max + 1 - l->n), &got, &ng, &more);
		if (l->rc == -ENOENT && l->n) {
			l->rc = 0; /* (the collection went since the first pass) */
			break;
		}
		if (l->rc)
			break;
		if (!ng) {
			free(got);
			break;
		}
		grown = realloc(l->oids, (l->n + ng) * sizeof(*l->oids));
		if (!grown) {
			os_names_free(got, ng);
			l->rc = -ENOMEM;
			break;
		}
		l->oids = grown;
		for (size_t i = 0; i < ng; i++) {
			int step = end ? CRUSH_ONAME_END : crush_oname_list_step(ns, got[i], res);

			if (step != CRUSH_ONAME_END && strcmp(res, after) > 0)
				memcpy(after, res, strlen(res) + 1);
			if (step == CRUSH_ONAME_TAKE) {
				l->oids[l->n++] = got[i];
				continue;
			}
			end |= step == CRUSH_ONAME_END;
			free(got[i]);
		}
		free(got);
	}
	if (end)
		more = false;
	if (l->rc) {
		os_names_free(l->oids, l->n);
		l->oids = NULL;
		l->n = 0;
		return;
	}
	l->more = more;
	if (l->n > max) {
		for (size_t i = max; i < l->n; i++)
			free(l->oids[i]);
		l->n = max;
		l->more = true;
	}
}

/*
 * Is what list_fn read still the PG's whole content? A split or merge that
 * began while it ran (the map that asks for it came meanwhile) moves
 * objects between collections under the scan: a page read then may lack
 * some, and the client must plan its listing again (-ESTALE).
 */
static bool
list_still_valid(struct list_req *l)
{
	struct osd *o = l->osd;
	const Cairn__Map__Pool *pool = osd__pool(o, l->q->pool);
	struct osd_pg *pg = osd__pg_find(o, l->q->pool, l->q->seed);

	return pool && pool->pg_num == l->pg_num && pg && pg->interval_epoch == l->interval_epoch &&
	       !pg->splitting && !pg->split_wait && !pg->merging;
}

static void
list_done(void *arg)
{
	struct list_req *l = arg;
	Cairn__Osd__PgListReply r = CAIRN__OSD__PG_LIST_REPLY__INIT;

	if ((!l->rc || l->rc == -ENOENT) && !list_still_valid(l)) {
		CM_NOTICE(
			"%s: a listing read while the PG split, merged or moved: the client lists "
			"it again",
			l->cid);
		os_names_free(l->oids, l->n);
		l->oids = NULL;
		l->n = 0;
		l->rc = -ESTALE;
	}
	r.rc = l->rc == -ENOENT ? 0 : l->rc;
	r.oids = l->oids;
	r.n_oids = l->rc ? 0 : l->n;
	r.more = l->more;
	r.epoch = l->osd->epoch;
	osd__send_pb(l->c, OSD_MSG_PG_LIST_REPLY, l->tid, &r.base, NULL);
	if (!l->rc)
		os_names_free(l->oids, l->n);
	cairn__osd__pg_list__free_unpacked(l->q, NULL);
	cm_conn_put(l->c);
	free(l);
}

void
osd__pg_handle_list(struct osd *o, struct cm_conn *c, struct cm_msg *m)
{
	Cairn__Osd__PgList *q =
		(Cairn__Osd__PgList *)cm_msg_unpack_front(m, &cairn__osd__pg_list__descriptor);
	Cairn__Osd__PgListReply r = CAIRN__OSD__PG_LIST_REPLY__INIT;
	const Cairn__Map__Pool *pool;
	struct list_req *l;
	struct osd_pg *pg;

	r.epoch = o->epoch;
	if (!q) {
		r.rc = -EBADMSG;
		goto reply;
	}
	if ((r.rc = osd_check_list(q)))
		goto reply;
	if (mon_blocklisted(o->map, cm_conn_peer(c))) {
		o->ops_blocklisted++;
		r.rc = -EKEYREVOKED;
		goto reply;
	}
	/* A shard's listing is an EC primary's (OSDs only); a client's needs r
	 * on the pool and the namespace (every one, for all or ns-only). */
	if (q->shard && !osd__auth_peer_ok(o, c, m->type)) {
		r.rc = -EPERM;
		goto reply;
	}
	if (!q->shard &&
	    (r.rc = osd__auth_check(o, c, q->pool, q->nspace, CM_CAP_R, q->all_ns || q->ns_only)))
		goto reply;
	pg = osd__pg_find(o, q->pool, q->seed);
	pool = osd__pool(o, q->pool);
	if (!pool) {
		r.rc = -ENOENT;
		goto reply;
	}
	if (q->pg_num && pool->pg_num != q->pg_num) {
		/* The client planned its listing for another PG count (its map
		 * or ours is behind): what this PG holds is not what it wants. */
		r.rc = -ESTALE;
		goto reply;
	}
	if (q->shard) {
		/* An EC primary backfilling its own shard lists a complete one. */
		if (!pg || !pg->be->lists_own_copy(pg)) {
			r.rc = -ESTALE;
			goto reply;
		}
	} else if (!pg || pg->primary != o->id || pg->state != OSD_PG_ACTIVE ||
		   !osd__pg_readable(pg)) {
		/* (Not readable: no read lease yet; the client asks again.) */
		r.rc = pg && pg->primary == o->id ? -EAGAIN : -ESTALE;
		goto reply;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		r.rc = -ENOMEM;
		goto reply;
	}
	l->osd = o;
	l->c = cm_conn_get(c);
	l->tid = m->tid;
	l->q = q;
	snprintf(l->cid, sizeof(l->cid), "%s", pg->cid);
	l->pg_num = pool->pg_num;
	l->interval_epoch = pg->interval_epoch;
	l->w = (struct cm_work){ .fn = list_fn, .done = list_done, .arg = l };
	cm_msg_destroy(m);
	if (osd__work(o, &l->w))
		list_done(l);
	return;
reply:
	osd__send_pb(c, OSD_MSG_PG_LIST_REPLY, m->tid, &r.base, NULL);
	if (q)
		cairn__osd__pg_list__free_unpacked(q, NULL);
	cm_msg_destroy(m);
}
