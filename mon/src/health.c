/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Health checks; see mon/health.h.
 */
#include "mon/health.h"
#include "mon/ec_pin.h"

#include <stdarg.h>

const char *
mon_health_status_name(enum mon_health_status s)
{
	switch (s) {
	case MON_HEALTH_OK:
		return "HEALTH_OK";
	case MON_HEALTH_WARN:
		return "HEALTH_WARN";
	default:
		return "HEALTH_ERR";
	}
}

int
mon_pg_summarize(const Cairn__Map__OsdMap *m, struct mon_placement *pl,
		 struct mon_pg_summary **pools, struct mon_pg_summary *total)
{
	struct mon_pg_summary *ps = calloc(m->n_pools + 1, sizeof(*ps));
	int32_t up[64];
	int primary;

	if (!ps)
		return -ENOMEM;
	memset(total, 0, sizeof(*total));
	for (size_t i = 0; i < m->n_pools; i++) {
		const Cairn__Map__Pool *p = m->pools[i];

		for (uint32_t seed = 0; seed < p->pg_num; seed++) {
			int n = mon_placement_pg_up(pl, p, seed, up, &primary), have = 0;

			for (int k = 0; k < n; k++)
				have += up[k] != CRUSH_ITEM_NONE;
			ps[i].total++;
			if ((unsigned)have >= p->size)
				ps[i].clean++;
			else if ((unsigned)have >= p->min_size)
				ps[i].undersized++;
			else
				ps[i].inactive++;
		}
		total->total += ps[i].total;
		total->clean += ps[i].clean;
		total->undersized += ps[i].undersized;
		total->inactive += ps[i].inactive;
	}
	*pools = ps;
	return 0;
}

static struct mon_health_check *add_check(struct mon_health *h, const char *code,
					  enum mon_health_status sev, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int add_detail(struct mon_health_check *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static struct mon_health_check *
add_check(struct mon_health *h, const char *code, enum mon_health_status sev, const char *fmt, ...)
{
	struct mon_health_check *c, *n = realloc(h->checks, sizeof(*n) * (h->nchecks + 1));
	va_list ap;

	if (!n)
		return NULL;
	h->checks = n;
	c = &n[h->nchecks++];
	memset(c, 0, sizeof(*c));
	c->code = code;
	c->severity = sev;
	va_start(ap, fmt);
	vsnprintf(c->summary, sizeof(c->summary), fmt, ap);
	va_end(ap);
	if (sev > h->status)
		h->status = sev;
	return c;
}

int
mon_health_add(struct mon_health *h, const char *code, enum mon_health_status sev,
	       const char *summary)
{
	return add_check(h, code, sev, "%s", summary) ? 0 : -ENOMEM;
}

static int
add_detail(struct mon_health_check *c, const char *fmt, ...)
{
	char **n = realloc(c->detail, sizeof(*n) * (c->ndetail + 1));
	char line[256];
	va_list ap;

	if (!n)
		return -ENOMEM;
	c->detail = n;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n[c->ndetail] = strdup(line);
	if (!n[c->ndetail])
		return -ENOMEM;
	c->ndetail++;
	return 0;
}

#define CHECK_OR_NOMEM(c)           \
	do {                        \
		if (!(c))           \
			goto nomem; \
	} while (0)

/* PG_DEGRADED (fewer OSDs up than size) or PG_AVAILABILITY (than min_size). */
static int
pg_check(struct mon_health *h, const Cairn__Map__OsdMap *m, bool inactive)
{
	uint64_t n = inactive ? h->pg_total.inactive : h->pg_total.undersized;
	struct mon_health_check *c;

	if (!n || !m->n_osds)
		return 0;
	c = add_check(h, inactive ? "PG_AVAILABILITY" : "PG_DEGRADED",
		      inactive ? MON_HEALTH_ERR : MON_HEALTH_WARN,
		      "%" PRIu64 " pgs %s (fewer OSDs up than %s)", n,
		      inactive ? "inactive" : "undersized", inactive ? "min_size" : "size");
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_pools; i++) {
		const struct mon_pg_summary *p = &h->pg_pools[i];
		uint64_t k = inactive ? p->inactive : p->undersized;

		if (k &&
		    add_detail(c, "pool '%s': %" PRIu64 " of %" PRIu64 " pgs have fewer than %u",
			       m->pools[i]->name, k, p->total,
			       inactive ? m->pools[i]->min_size : m->pools[i]->size))
			return -ENOMEM;
	}
	return 0;
}

int
mon_health_compute(const Cairn__Map__OsdMap *m, const struct mon_info *mons, size_t nmons,
		   const struct mon_pool_usage *usage, size_t nusage, struct mon_health *h)
{
	struct mon_health_check *c;
	struct mon_placement pl;
	struct mon_pg_summary *ps = NULL, tot;
	char err[MON_ERRLEN], flags[160];
	size_t down = 0, monsdown = 0;
	int rc;

	memset(h, 0, sizeof(*h));
	for (size_t i = 0; i < m->n_osds; i++)
		down += !m->osds[i]->up;
	if (down) {
		c = add_check(h, "OSD_DOWN", MON_HEALTH_WARN, "%zu osds down", down);
		CHECK_OR_NOMEM(c);
		for (size_t i = 0; i < m->n_osds; i++) {
			const Cairn__Map__Osd *o = m->osds[i];

			if (!o->up &&
			    add_detail(c, "osd.%d (host %s) is down%s", o->id,
				       o->host[0] ? o->host : "?", o->in ? "" : " and out"))
				goto nomem;
		}
	}
	for (size_t i = 0; i < nmons; i++)
		monsdown += !mons[i].alive;
	if (monsdown) {
		c = add_check(h, "MON_DOWN", MON_HEALTH_WARN, "%zu/%zu mons down", monsdown, nmons);
		CHECK_OR_NOMEM(c);
		for (size_t i = 0; i < nmons; i++)
			if (!mons[i].alive &&
			    add_detail(c, "mon.%s (%s) is not running or cannot reach etcd",
				       mons[i].name, mons[i].addr))
				goto nomem;
	}
	if (m->flags & ~(uint64_t)MON_FLAG_FULL) {
		c = add_check(
			h, "OSDMAP_FLAGS", MON_HEALTH_WARN, "%s flag(s) set",
			mon_flags_str(m->flags & ~(uint64_t)MON_FLAG_FULL, flags, sizeof(flags)));
		CHECK_OR_NOMEM(c);
	}
	{
		c = NULL;
		if (m->flags & MON_FLAG_FULL) {
			c = add_check(h, "POOL_FULL", MON_HEALTH_ERR,
				      "the full flag is set: writes are refused");
			CHECK_OR_NOMEM(c);
		}
		for (size_t i = 0; i < m->n_pools; i++) {
			const Cairn__Map__Pool *p = m->pools[i];

			for (size_t u = 0; p->quota_max_bytes && u < nusage; u++) {
				if (usage[u].pool != p->id || usage[u].bytes < p->quota_max_bytes)
					continue;
				if (!c) {
					c = add_check(h, "POOL_FULL", MON_HEALTH_ERR,
						      "pools are full");
					CHECK_OR_NOMEM(c);
				}
				if (add_detail(c,
					       "pool '%s' holds %" PRIu64
					       " bytes, its quota is %" PRIu64,
					       p->name, usage[u].bytes, p->quota_max_bytes))
					goto nomem;
			}
		}
	}
	if (m->n_pools && !m->n_osds) {
		c = add_check(h, "NO_OSDS", MON_HEALTH_WARN, "%zu pools but no OSDs", m->n_pools);
		CHECK_OR_NOMEM(c);
	}
	rc = mon_placement_build(m, &pl, err);
	if (rc) {
		mon_health_free(h);
		return rc;
	}
	rc = mon_pg_summarize(m, &pl, &ps, &tot);
	if (!rc) {
		size_t stuck = 0;

		mon_pin_stuck(m, &pl, &stuck);
		if (stuck) {
			c = add_check(h, "EC_PGS_HELD", MON_HEALTH_WARN,
				      "%zu EC PGs cannot move to their CRUSH placement", stuck);
			if (!c ||
			    add_detail(c, "every OSD CRUSH wants for them holds another shard "
					  "of the PG and no spare OSD is up and in (k+m OSDs "
					  "in for a k+m pool): add an OSD or bring one back "
					  "in; until then the pool's merges and pgp_num "
					  "raises wait"))
				rc = -ENOMEM;
		}
	}
	mon_placement_free(&pl);
	if (rc)
		goto nomem;
	h->pg_pools = ps;
	h->pg_total = tot;
	ps = NULL;
	if (pg_check(h, m, false) || pg_check(h, m, true))
		goto nomem;
	return 0;
nomem:
	free(ps);
	mon_health_free(h);
	return -ENOMEM;
}

void
mon_health_free(struct mon_health *h)
{
	for (size_t i = 0; i < h->nchecks; i++) {
		for (size_t d = 0; d < h->checks[i].ndetail; d++)
			free(h->checks[i].detail[d]);
		free(h->checks[i].detail);
	}
	free(h->checks);
	free(h->pg_pools);
	memset(h, 0, sizeof(*h));
}

json_t *
mon_health_json(const struct mon_health *h)
{
	json_t *o = json_object(), *checks = json_object();

	json_object_set_new(o, "status", json_string(mon_health_status_name(h->status)));
	for (size_t i = 0; i < h->nchecks; i++) {
		const struct mon_health_check *c = &h->checks[i];
		json_t *d = json_array();

		for (size_t k = 0; k < c->ndetail; k++)
			json_array_append_new(d, json_string(c->detail[k]));
		json_object_set_new(checks, c->code,
				    json_pack("{s:s, s:s, s:o}", "severity",
					      mon_health_status_name(c->severity), "summary",
					      c->summary, "detail", d));
	}
	json_object_set_new(o, "checks", checks);
	return o;
}
