/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Health checks: named codes (as Ceph names them, so runbooks carry over),
 * a severity, a one-line summary and one human detail line per affected
 * thing. Computed from a map plus what only the monitors know (which mons
 * are alive) and what OSDs report (pool usage).
 *
 *   OSD_DOWN         some OSDs are down                          WARN
 *   MON_DOWN         a monitor of the monmap is not running      WARN
 *   OSDMAP_FLAGS     flags such as noout are set                 WARN
 *   POOL_FULL        a pool reached its quota, or the full flag  ERR
 *   PG_DEGRADED      PGs with fewer than size OSDs up            WARN
 *   PG_AVAILABILITY  PGs with fewer than min_size OSDs up        ERR
 *   NO_OSDS          pools exist but no OSD does                 WARN
 *
 * PG counts come from the map (where CRUSH puts each PG given who is up)
 * until the OSDs report PG states themselves.
 */
#ifndef MON_HEALTH_H
#define MON_HEALTH_H

#include "mon/osdmap.h"

#include <jansson.h>

enum mon_health_status { MON_HEALTH_OK = 0, MON_HEALTH_WARN = 1, MON_HEALTH_ERR = 2 };

const char *mon_health_status_name(enum mon_health_status s);

struct mon_health_check {
	const char *code;
	enum mon_health_status severity;
	char summary[192];
	char **detail;
	size_t ndetail;
};

/* PGs by where CRUSH puts them now. */
struct mon_pg_summary {
	uint64_t total, clean, undersized, inactive;
};

struct mon_health {
	enum mon_health_status status;
	struct mon_health_check *checks;
	size_t nchecks;
	/* The PG counts the checks were made from, per pool (in map order) and in all. */
	struct mon_pg_summary *pg_pools;
	struct mon_pg_summary pg_total;
};

struct mon_info {
	const char *name, *addr;
	bool alive;
};

struct mon_pool_usage {
	int64_t pool;
	uint64_t bytes, objects;
};

/* Per-pool summaries in pools[] (m->n_pools entries; caller frees) and the total. */
int mon_pg_summarize(const Cairn__Map__OsdMap *m, struct mon_placement *pl,
		     struct mon_pg_summary **pools, struct mon_pg_summary *total);

/* \return 0, -EBADMSG (CRUSH text broken), -ENOMEM. */
int mon_health_compute(const Cairn__Map__OsdMap *m, const struct mon_info *mons, size_t nmons,
		       const struct mon_pool_usage *usage, size_t nusage, struct mon_health *h);
void mon_health_free(struct mon_health *h);
/* One more check (code: a static string). \return 0 or -ENOMEM. */
int mon_health_add(struct mon_health *h, const char *code, enum mon_health_status sev,
		   const char *summary);

/* {"status": "HEALTH_WARN", "checks": {CODE: {"severity", "summary", "detail": [..]}}} */
json_t *mon_health_json(const struct mon_health *h);

#endif
