/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cluster creation, the monmap view, and the commands; see mon/cluster.h.
 */
#include "mon/cluster.h"
#include "mon/auth.h"
#include "mon/osdmap.h"
#include "cm/err.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

int
mon_key_path(const char *fsid, const char *what, const char *name, char *out, size_t len)
{
	int n = name ? snprintf(out, len, "/cairn/%s/%s/%s", fsid, what, name)
		     : snprintf(out, len, "/cairn/%s/%s", fsid, what);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

void
mon_key_check(const char *key, const char *fsid, char out[65])
{
	unsigned char mac[32];
	unsigned int len = sizeof(mac);

	HMAC(EVP_sha256(), key, (int)strlen(key), (const unsigned char *)fsid, strlen(fsid), mac,
	     &len);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
}

int
mon_cluster_verify(struct cm_etcd *e, const char *fsid, const char *key)
{
	struct cm_etcd_range r;
	char k[256], want[65];
	int rc = mon_key_path(fsid, "key_check", NULL, k, sizeof(k));

	if (rc)
		return rc;
	rc = cm_etcd_get(e, k, strlen(k), NULL, 0, 0, &r);
	if (rc)
		return rc;
	mon_key_check(key, fsid, want);
	if (r.count == 0)
		rc = -ENOENT;
	else if (r.kvs[0].value_len != 64 || memcmp(r.kvs[0].value, want, 64) != 0)
		rc = -EACCES;
	cm_etcd_range_free(&r);
	return rc;
}

int
mon_cluster_create(struct cm_etcd *e, const char *fsid, const char *key)
{
	Cairn__Map__OsdMap *m;
	struct mon_map_store *s;
	char k[256], val[65];
	bool ok;
	int rc = mon_key_path(fsid, "key_check", NULL, k, sizeof(k)), made;

	if (rc)
		return rc;
	mon_key_check(key, fsid, val);
	struct cm_etcd_cmp absent = {
		.key = k, .key_len = strlen(k), .target = CM_ETCD_CREATE, .result = CM_ETCD_EQUAL
	};
	struct cm_etcd_op put = { .type = CM_ETCD_OP_PUT,
				  .key = k,
				  .key_len = strlen(k),
				  .value = val,
				  .value_len = 64 };

	rc = cm_etcd_txn(e, &absent, 1, &put, 1, NULL, 0, &ok, NULL);
	if (rc)
		return rc;
	if (!ok) {
		rc = mon_cluster_verify(e, fsid, key);
		if (rc)
			return rc;
	}
	made = ok ? 0 : 1;
	rc = mon_map_store_open(e, fsid, &s);
	if (rc)
		return rc;
	rc = mon_map_initial(fsid, &m);
	if (!rc) {
		rc = mon_map_create(s, m);
		cairn__map__osd_map__free_unpacked(m, NULL);
		if (rc == -EEXIST)
			rc = 0;
		else if (!rc)
			made = 0;
	}
	mon_map_store_close(s);
	/* The built-in entities (client.admin, client.bootstrap-osd). */
	if (!rc)
		rc = mon_auth_builtin(e, fsid, key);
	return rc ? rc : made;
}

static char *
dup_n(const void *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, p, n);
		s[n] = 0;
	}
	return s;
}

/* The part of a key after its last '/'. */
static const char *
key_leaf(const struct cm_etcd_kv *kv, size_t *len)
{
	size_t i = kv->key_len;

	while (i > 0 && kv->key[i - 1] != '/')
		i--;
	*len = kv->key_len - i;
	return kv->key + i;
}

int
mon_cluster_view_read(struct cm_etcd *e, const char *fsid, struct mon_cluster_view *v)
{
	struct cm_etcd_range mons, alive, leader;
	char k[256], *end;
	size_t end_len;
	int rc;

	memset(v, 0, sizeof(*v));
	mon_key_path(fsid, "mons/", NULL, k, sizeof(k));
	end = cm_etcd_prefix_end(k, strlen(k), &end_len);
	if (!end)
		return -ENOMEM;
	rc = cm_etcd_get(e, k, strlen(k), end, end_len, 0, &mons);
	free(end);
	if (rc)
		return rc;
	mon_key_path(fsid, "alive/", NULL, k, sizeof(k));
	end = cm_etcd_prefix_end(k, strlen(k), &end_len);
	rc = end ? cm_etcd_get(e, k, strlen(k), end, end_len, 0, &alive) : -ENOMEM;
	free(end);
	if (rc) {
		cm_etcd_range_free(&mons);
		return rc;
	}
	mon_key_path(fsid, "leader", NULL, k, sizeof(k));
	rc = cm_etcd_get(e, k, strlen(k), NULL, 0, 0, &leader);
	if (rc) {
		cm_etcd_range_free(&mons);
		cm_etcd_range_free(&alive);
		return rc;
	}
	if (leader.count) {
		char *lv = dup_n(leader.kvs[0].value, leader.kvs[0].value_len), *sp;

		if (lv) {
			sp = strchr(lv, ' ');
			if (sp)
				*sp++ = 0;
			snprintf(v->leader, sizeof(v->leader), "%s", lv);
			snprintf(v->leader_addr, sizeof(v->leader_addr), "%s", sp ? sp : "");
			free(lv);
		}
	}
	v->mons = calloc(mons.count + 1, sizeof(*v->mons));
	if (!v->mons)
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < mons.count; i++) {
		size_t nl;
		const char *leaf = key_leaf(&mons.kvs[i], &nl);
		struct mon_info *mi = &v->mons[v->nmons];

		mi->name = dup_n(leaf, nl);
		mi->addr = dup_n(mons.kvs[i].value, mons.kvs[i].value_len);
		if (!mi->name || !mi->addr) {
			free((char *)mi->name);
			free((char *)mi->addr);
			rc = -ENOMEM;
			break;
		}
		for (size_t j = 0; j < alive.count; j++) {
			size_t al;
			const char *as = key_leaf(&alive.kvs[j], &al);

			if (al == nl && memcmp(as, leaf, nl) == 0)
				mi->alive = true;
		}
		v->nmons++;
	}
	cm_etcd_range_free(&mons);
	cm_etcd_range_free(&alive);
	cm_etcd_range_free(&leader);
	if (rc)
		mon_cluster_view_free(v);
	return rc;
}

void
mon_cluster_view_free(struct mon_cluster_view *v)
{
	for (size_t i = 0; i < v->nmons; i++) {
		free((char *)v->mons[i].name);
		free((char *)v->mons[i].addr);
	}
	free(v->mons);
	memset(v, 0, sizeof(*v));
}

/* ---- commands ---- */

struct cmd {
	struct mon_cmd_env *env;
	int argc;
	char **argv;
	bool json;
	FILE *out;
	char err[MON_ERRLEN];
	json_t *res; /* JSON result, printed at the end with json */
};

static int
usage(struct cmd *c, const char *what)
{
	snprintf(c->err, sizeof(c->err), "usage: %s", what);
	return -EINVAL;
}

static int
read_map(struct cmd *c, Cairn__Map__OsdMap **m)
{
	int rc = mon_map_read(c->env->store, m);

	if (rc == -ENOENT)
		snprintf(
			c->err, sizeof(c->err),
			"no cluster map in etcd for fsid %s (run cairn-mon --mkfs or clusterctl up)",
			c->env->fsid);
	else if (rc)
		snprintf(c->err, sizeof(c->err), "reading the map: %s", cm_strerror(rc));
	return rc;
}

static json_t *
osd_json(const Cairn__Map__Osd *o)
{
	json_t *j = json_pack("{s:i, s:s, s:s, s:s, s:s, s:f, s:f, s:b, s:b, s:I, s:I}", "id",
			      o->id, "uuid", o->uuid, "addr", o->addr, "host", o->host, "class",
			      o->device_class, "weight", (double)o->weight / 65536.0, "reweight",
			      (double)o->reweight / 65536.0, "up", o->up, "in", o->in, "up_since",
			      (json_int_t)o->up_since, "down_since", (json_int_t)o->down_since);

	if (j) {
		json_t *a = json_array();

		for (size_t i = 0; a && i < o->n_shard_addrs; i++)
			json_array_append_new(a, json_string(o->shard_addrs[i]));
		json_object_set_new(
			j, "pg_shards",
			json_integer(o->n_shard_addrs ? (json_int_t)o->n_shard_addrs : 1));
		if (a)
			json_object_set_new(j, "shard_addrs", a);
	}
	return j;
}

static json_t *
pool_json(const Cairn__Map__Pool *p, const char *rule)
{
	json_t *o =
		json_pack("{s:I, s:s, s:s, s:i, s:i, s:i, s:i, s:s, s:I}", "id", (json_int_t)p->id,
			  "name", p->name, "type", p->erasure ? "erasure" : "replicated", "size",
			  (int)p->size, "min_size", (int)p->min_size, "pg_num", (int)p->pg_num,
			  "crush_rule", (int)p->crush_rule, "crush_rule_name", rule ? rule : "",
			  "quota_max_bytes", (json_int_t)p->quota_max_bytes);

	if (o) {
		json_object_set_new(o, "pgp_num", json_integer(p->pgp_num));
		json_object_set_new(o, "pg_num_target", json_integer(p->pg_num_target));
		json_object_set_new(o, "pg_num_pending", json_integer(p->pg_num_pending));
	}
	if (o && p->erasure) {
		json_object_set_new(o, "ec_k", json_integer(p->ec_k));
		json_object_set_new(o, "ec_m", json_integer(p->ec_m));
		json_object_set_new(o, "stripe_unit",
				    json_integer(p->stripe_unit ? p->stripe_unit : 4096));
	}
	return o;
}

static void
print_health_text(FILE *f, const struct mon_health *h, bool detail, const char *indent)
{
	for (size_t i = 0; i < h->nchecks; i++) {
		const struct mon_health_check *c = &h->checks[i];

		if (detail) {
			fprintf(f, "%s[%s] %s: %s\n", indent,
				c->severity == MON_HEALTH_ERR ? "ERR" : "WRN", c->code, c->summary);
			for (size_t d = 0; d < c->ndetail; d++)
				fprintf(f, "%s    %s\n", indent, c->detail[d]);
		} else {
			fprintf(f, "%s%s: %s\n", indent, c->code, c->summary);
		}
	}
}

void
mon_stats_free(struct mon_stats *s)
{
	free(s->pg);
	free(s->states);
	memset(s, 0, sizeof(*s));
}

/* A pool's objects and stored bytes (one copy) as its PGs' primaries reported them. */
static void
pool_usage(const struct mon_stats *st, int64_t pool, uint64_t *objects, uint64_t *bytes)
{
	*objects = *bytes = 0;
	for (size_t i = 0; st && i < st->npg; i++)
		if (st->pg[i].pool == pool) {
			*objects += st->pg[i].objects;
			*bytes += st->pg[i].bytes;
		}
}

/* Raw bytes a pool's stored bytes take: every replica, or k + m shards of k. */
static double
pool_raw(const Cairn__Map__Pool *p, uint64_t stored)
{
	if (p->erasure && p->ec_k)
		return (double)stored * (p->ec_k + p->ec_m) / p->ec_k;
	return (double)stored * p->size;
}

/* "30 active+clean, 2 recovering, 1 unknown" into buf. */
static void
pg_states_str(const struct mon_stats *st, uint64_t total, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (size_t i = 0; i < st->nstates && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%" PRIu64 " %s", off ? ", " : "",
					st->states[i].n, st->states[i].state);
	if (total > st->pgs && off < len)
		snprintf(buf + off, len - off, "%s%" PRIu64 " unknown", off ? ", " : "",
			 total - st->pgs);
}

static json_t *
stats_json(const struct mon_stats *st, uint64_t total)
{
	json_t *states = json_object();

	for (size_t i = 0; i < st->nstates; i++)
		json_object_set_new(states, st->states[i].state,
				    json_integer((json_int_t)st->states[i].n));
	if (total > st->pgs)
		json_object_set_new(states, "unknown", json_integer((json_int_t)(total - st->pgs)));
	return json_pack("{s:o, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:I, s:I}",
			 "pg_states", states, "osds_reporting", (json_int_t)st->osds, "total_bytes",
			 (json_int_t)st->total_bytes, "free_bytes", (json_int_t)st->free_bytes,
			 "client_ops", st->op_rate, "client_wr_bps", st->wr_bps, "client_rd_bps",
			 st->rd_bps, "recovery_objps", st->rec_objps, "recovery_bps", st->rec_bps,
			 "recovered_objects", (json_int_t)st->rec_objects, "recovered_bytes",
			 (json_int_t)st->rec_bytes, "degraded_objects", (json_int_t)st->degraded,
			 "ec_decodes", (json_int_t)st->ec_decodes, "csum_errors",
			 (json_int_t)st->csum_errors);
}

/* m's health (the monmap into *v: mon_cluster_view_free after, as h). */
static int
health_of(const struct mon_cmd_env *env, const Cairn__Map__OsdMap *m, struct mon_cluster_view *v,
	  struct mon_health *h, char *err, size_t errlen)
{
	int rc = mon_cluster_view_read(env->etcd, env->fsid, v);

	if (rc) {
		snprintf(err, errlen, "reading the monmap: %s", cm_strerror(rc));
		return rc;
	}
	rc = mon_health_compute(m, v->mons, v->nmons, NULL, 0, h);
	if (rc) {
		snprintf(err, errlen, "health: %s", cm_strerror(rc));
		mon_cluster_view_free(v);
		return rc;
	}
	if (env->stats && env->stats->valid && env->stats->rec_watchdog) {
		char s[160];

		snprintf(s, sizeof(s),
			 "the recovery watchdog restarted %" PRIu64
			 " stalled plans (a bug: see the OSD logs)",
			 env->stats->rec_watchdog);
		rc = mon_health_add(h, "RECOVERY_WATCHDOG", MON_HEALTH_WARN, s);
		if (rc) {
			snprintf(err, errlen, "health: %s", cm_strerror(rc));
			mon_health_free(h);
			mon_cluster_view_free(v);
		}
	}
	return rc;
}

int
mon_health_read(const struct mon_cmd_env *env, struct mon_health *h, char *err, size_t errlen)
{
	struct mon_cluster_view v;
	Cairn__Map__OsdMap *m;
	int rc = mon_map_read(env->store, &m);

	if (rc) {
		snprintf(err, errlen, "reading the map: %s", cm_strerror(rc));
		return rc;
	}
	rc = health_of(env, m, &v, h, err, errlen);
	if (!rc)
		mon_cluster_view_free(&v);
	cairn__map__osd_map__free_unpacked(m, NULL);
	return rc;
}

int
mon_df_fill(const Cairn__Map__OsdMap *m, const struct mon_stats *st, Cairn__Mon__DfReply *r)
{
	bool valid = st && st->valid;

	cairn__mon__df_reply__init(r);
	r->epoch = m->epoch;
	r->stats_valid = valid;
	r->total_bytes = valid ? st->total_bytes : 0;
	r->free_bytes = valid ? st->free_bytes : 0;
	r->pools = calloc(m->n_pools + 1, sizeof(*r->pools));
	if (!r->pools)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_pools; i++) {
		const Cairn__Map__Pool *p = m->pools[i];
		Cairn__Mon__PoolStats *ps = calloc(1, sizeof(*ps));
		double avail;

		if (!ps) {
			mon_df_reply_fini(r);
			return -ENOMEM;
		}
		cairn__mon__pool_stats__init(ps);
		r->pools[r->n_pools++] = ps;
		ps->id = p->id;
		ps->name = p->name;
		pool_usage(valid ? st : NULL, p->id, &ps->objects, &ps->stored);
		ps->raw = (uint64_t)pool_raw(p, ps->stored);
		ps->quota_max_bytes = p->quota_max_bytes;
		/* Free device bytes over what one logical byte takes. */
		avail = pool_raw(p, 1) > 0 ? (double)r->free_bytes / pool_raw(p, 1) : 0;
		ps->max_avail = (uint64_t)avail;
		if (p->quota_max_bytes)
			ps->max_avail =
				p->quota_max_bytes > ps->stored
					? CM_MIN(ps->max_avail, p->quota_max_bytes - ps->stored)
					: 0;
	}
	return 0;
}

void
mon_df_reply_fini(Cairn__Mon__DfReply *r)
{
	for (size_t i = 0; i < r->n_pools; i++)
		free(r->pools[i]);
	free(r->pools);
	r->pools = NULL;
	r->n_pools = 0;
}

static int svc_read(struct cmd *c, const char *type, struct cm_etcd_range *r);
static json_t *svc_entry(const struct cmd *c, const struct cm_etcd_kv *kv);

/*
 * The registrations (of type, or all: NULL) as a JSON array of entries
 * ({type, name, addr, instance, meta, ttl}), ordered by type and name.
 */
static int
svc_list(struct cmd *c, const char *type, json_t **out)
{
	struct cm_etcd_range r;
	json_t *a;
	int rc = svc_read(c, type, &r);

	*out = NULL;
	if (rc)
		return rc;
	a = json_array();
	for (size_t i = 0; a && i < r.count; i++) {
		json_t *e = svc_entry(c, &r.kvs[i]);

		if (e)
			json_array_append_new(a, e);
	}
	cm_etcd_range_free(&r);
	*out = a;
	return a ? 0 : -ENOMEM;
}

/* The service map for status (empty if it cannot be read: status goes on without it). */
static json_t *
svc_all(struct cmd *c)
{
	json_t *a;

	if (svc_list(c, NULL, &a)) {
		c->err[0] = 0;
		a = json_array();
	}
	return a;
}

static int
cmd_status(struct cmd *c, bool health_only, bool detail)
{
	struct mon_cluster_view v;
	struct mon_health h;
	Cairn__Map__OsdMap *m;
	const struct mon_pg_summary *ps, *tot;
	char flags[160];
	size_t up = 0, in = 0, alive = 0;
	uint64_t pgs = 0;
	int rc = read_map(c, &m);

	if (rc)
		return rc;
	rc = health_of(c->env, m, &v, &h, c->err, sizeof(c->err));
	if (rc) {
		cairn__map__osd_map__free_unpacked(m, NULL);
		return rc;
	}
	ps = h.pg_pools; /* the PG counts the health checks used */
	tot = &h.pg_total;
	for (size_t i = 0; i < m->n_osds; i++) {
		up += m->osds[i]->up;
		in += m->osds[i]->in;
	}
	for (size_t i = 0; i < m->n_pools; i++)
		pgs += m->pools[i]->pg_num;
	for (size_t i = 0; i < v.nmons; i++)
		alive += v.mons[i].alive;
	mon_flags_str(m->flags, flags, sizeof(flags));
	if (health_only && c->json) {
		c->res = mon_health_json(&h);
	} else if (health_only) {
		fprintf(c->out, "%s\n", mon_health_status_name(h.status));
		print_health_text(c->out, &h, detail, detail ? "" : "    ");
	} else if (c->json) {
		json_t *mons = json_array(), *pools = json_array();

		for (size_t i = 0; i < v.nmons; i++)
			json_array_append_new(
				mons, json_pack("{s:s, s:s, s:b}", "name", v.mons[i].name, "addr",
						v.mons[i].addr, "alive", v.mons[i].alive));
		for (size_t i = 0; i < m->n_pools; i++) {
			uint64_t objs, bytes;

			pool_usage(c->env->stats, m->pools[i]->id, &objs, &bytes);
			json_array_append_new(
				pools,
				json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "name",
					  m->pools[i]->name, "pgs", (json_int_t)ps[i].total,
					  "clean", (json_int_t)ps[i].clean, "undersized",
					  (json_int_t)ps[i].undersized, "inactive",
					  (json_int_t)ps[i].inactive, "objects", (json_int_t)objs,
					  "stored_bytes", (json_int_t)bytes, "raw_bytes",
					  (json_int_t)pool_raw(m->pools[i], bytes)));
		}
		c->res = json_pack(
			"{s:s, s:I, s:s, s:o, s:o, s:s, s:{s:i, s:i, s:i}, s:o, s:{s:I, s:I, s:I, s:I}}",
			"fsid", m->fsid, "epoch", (json_int_t)m->epoch, "flags", flags, "health",
			mon_health_json(&h), "mons", mons, "leader", v.leader, "osds", "total",
			(int)m->n_osds, "up", (int)up, "in", (int)in, "pools", pools, "pgs",
			"total", (json_int_t)tot->total, "clean", (json_int_t)tot->clean,
			"undersized", (json_int_t)tot->undersized, "inactive",
			(json_int_t)tot->inactive);
		json_object_set_new(json_object_get(c->res, "pgs"), "pinned",
				    json_integer((json_int_t)m->n_pg_pins));
		json_object_set_new(c->res, "services", svc_all(c));
		if (c->env->stats && c->env->stats->valid)
			json_object_set_new(c->res, "stats", stats_json(c->env->stats, pgs));
	} else {
		fprintf(c->out, "  cluster:\n    id:     %s\n    health: %s\n", m->fsid,
			mon_health_status_name(h.status));
		print_health_text(c->out, &h, false, "            ");
		fprintf(c->out, "\n  services:\n    mon: %zu daemons, %zu alive, leader %s\n",
			v.nmons, alive, v.leader[0] ? v.leader : "(none)");
		fprintf(c->out, "    osd: %zu osds: %zu up, %zu in\n", m->n_osds, up, in);
		{
			json_t *sv = svc_all(c);
			size_t n = json_array_size(sv);

			/* One line per type: "rgw: 2 daemons (a at ADDR, b at ADDR)". */
			for (size_t i = 0; i < n;) {
				const char *t = json_string_value(
					json_object_get(json_array_get(sv, i), "type"));
				size_t j = i;

				while (j < n && !strcmp(t, json_string_value(json_object_get(
								   json_array_get(sv, j), "type"))))
					j++;
				fprintf(c->out, "    %s: %zu daemon%s (", t, j - i,
					j - i == 1 ? "" : "s");
				for (size_t k = i; k < j; k++) {
					json_t *e = json_array_get(sv, k);
					const char *ad =
						json_string_value(json_object_get(e, "addr"));

					fprintf(c->out, "%s%s at %s", k > i ? ", " : "",
						json_string_value(json_object_get(e, "name")),
						ad ? ad : "?");
				}
				fprintf(c->out, ")\n");
				i = j;
			}
			json_decref(sv);
		}
		fprintf(c->out, "\n  data:\n    pools: %zu pools, %" PRIu64 " pgs\n", m->n_pools,
			pgs);
		if (m->n_osds && tot->total)
			fprintf(c->out,
				"    placement: %" PRIu64 " pgs, %" PRIu64
				" on a full set, %" PRIu64 " undersized, %" PRIu64
				" without OSDs\n",
				tot->total, tot->clean, tot->undersized, tot->inactive);
		if (m->n_pg_pins)
			fprintf(c->out,
				"    moving: %zu EC pgs held off their CRUSH placement, moving one "
				"shard at a time\n",
				m->n_pg_pins);
		if (c->env->stats && c->env->stats->valid) {
			const struct mon_stats *st = c->env->stats;
			char buf[1024];

			pg_states_str(st, pgs, buf, sizeof(buf));
			fprintf(c->out, "    pgs:   %" PRIu64 " pgs: %s\n", pgs, buf);
			fprintf(c->out, "    usage: %.1f GiB used, %.1f GiB / %.1f GiB avail\n",
				(double)(st->total_bytes - st->free_bytes) / (1 << 30),
				(double)st->free_bytes / (1 << 30),
				(double)st->total_bytes / (1 << 30));
			for (size_t i = 0; i < m->n_pools; i++) {
				const Cairn__Map__Pool *p = m->pools[i];
				uint64_t objs, bytes;
				char kind[32];

				pool_usage(st, p->id, &objs, &bytes);
				if (p->erasure)
					snprintf(kind, sizeof(kind), "EC %u+%u", p->ec_k, p->ec_m);
				else
					snprintf(kind, sizeof(kind), "%u copies", p->size);
				fprintf(c->out,
					"    pool %s: %" PRIu64
					" objects, %.2f GiB stored, %.2f GiB raw (%s)\n",
					p->name, objs, (double)bytes / (1 << 30),
					pool_raw(p, bytes) / (1 << 30), kind);
			}
			fprintf(c->out,
				"\n  io:\n    client:   %.0f op/s, %.1f MiB/s wr, %.1f MiB/s rd\n",
				st->op_rate, st->wr_bps / (1 << 20), st->rd_bps / (1 << 20));
			if (st->rec_objps > 0 || st->rec_bps > 0 || st->degraded)
				fprintf(c->out,
					"    recovery: %" PRIu64
					" objects degraded, %.0f objects/s, %.1f MiB/s\n",
					st->degraded, st->rec_objps, st->rec_bps / (1 << 20));
			if (st->ec_decodes || st->csum_errors)
				fprintf(c->out,
					"    repairs:  %" PRIu64 " EC reads decoded around a lost "
					"or bad shard, %" PRIu64 " blocks failed their checksum\n",
					st->ec_decodes, st->csum_errors);
		}
		fprintf(c->out, "\n  map: epoch %" PRIu64 "%s%s\n", m->epoch,
			flags[0] ? ", flags " : "", flags);
	}
	mon_health_free(&h);
	mon_cluster_view_free(&v);
	cairn__map__osd_map__free_unpacked(m, NULL);
	return 0;
}

static const char *
pg_state_of(const struct mon_stats *st, int64_t pool, uint32_t seed)
{
	size_t lo = 0, hi = st ? st->npg : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct mon_pg_state *g = &st->pg[mid];

		if (g->pool == pool && g->seed == seed)
			return g->state;
		if (g->pool < pool || (g->pool == pool && g->seed < seed))
			lo = mid + 1;
		else
			hi = mid;
	}
	return st && st->valid ? "unknown" : "?";
}

/*
 * pg ls [POOL [OBJECT]]: every PG's up set and primary from the map, its
 * state from the primaries; with OBJECT only the PG that holds it (as
 * clients place it).
 */
static int
cmd_pg_ls(struct cmd *c)
{
	const struct mon_stats *st = c->env->stats;
	const char *only = c->argc > 2 ? c->argv[2] : NULL;
	const char *obj = c->argc > 3 ? c->argv[3] : NULL;
	struct mon_placement pl;
	Cairn__Map__OsdMap *m;
	json_t *a = NULL;
	uint32_t oseed = 0;
	int rc = read_map(c, &m);

	if (rc)
		return rc;
	if (only && !mon_pool_find(m, only)) {
		snprintf(c->err, sizeof(c->err), "no such pool '%s'", only);
		cairn__map__osd_map__free_unpacked(m, NULL);
		return -ENOENT;
	}
	if (obj) {
		struct crush_pool cp;

		mon_pool_to_crush(mon_pool_find(m, only), &cp);
		if (!obj[0] || crush_object_to_pg(&cp, NULL, obj, &oseed)) {
			snprintf(c->err, sizeof(c->err), "cannot place object '%s'", obj);
			cairn__map__osd_map__free_unpacked(m, NULL);
			return -EINVAL;
		}
	}
	rc = mon_placement_build(m, &pl, c->err);
	if (rc) {
		cairn__map__osd_map__free_unpacked(m, NULL);
		return rc;
	}
	if (c->json)
		a = json_array();
	else
		fprintf(c->out, "%-10s %-28s %-7s %s\n", "PG", "STATE", "PRIMARY", "UP");
	for (size_t i = 0; i < m->n_pools; i++) {
		const Cairn__Map__Pool *p = m->pools[i];

		if (only && strcmp(p->name, only) != 0)
			continue;
		for (uint32_t seed = obj ? oseed : 0; seed < (obj ? oseed + 1 : p->pg_num);
		     seed++) {
			int32_t up[64];
			int primary = -1, n = mon_placement_pg_up(&pl, p, seed, up, &primary);
			const char *state = pg_state_of(st, p->id, seed);
			char id[48], ups[512];
			size_t off = 0;

			snprintf(id, sizeof(id), "%" PRId64 ".%x", p->id, seed);
			ups[0] = 0;
			for (int k = 0; k < n && off < sizeof(ups); k++)
				off += (size_t)snprintf(ups + off, sizeof(ups) - off, "%s%d",
							k ? "," : "",
							up[k] == CRUSH_ITEM_NONE ? -1 : up[k]);
			/* Held off CRUSH's placement (mon/ec_pin.h): where CRUSH wants it. */
			int32_t want[64];
			int nw = mon_placement_pin(&pl, p->id, seed)
					 ? mon_placement_pg_raw(&pl, p, seed, true, want)
					 : 0;
			char wants[512];

			wants[0] = 0;
			for (int k = 0, o = 0; k < nw && o < (int)sizeof(wants); k++)
				o += snprintf(wants + o, sizeof(wants) - (size_t)o, "%s%d",
					      k ? "," : "",
					      want[k] == CRUSH_ITEM_NONE ? -1 : want[k]);
			if (a) {
				json_t *u = json_array(), *pg;

				for (int k = 0; k < n; k++)
					json_array_append_new(
						u, json_integer(up[k] == CRUSH_ITEM_NONE ? -1
											 : up[k]));
				pg = json_pack("{s:s, s:s, s:i, s:o}", "pg", id, "state", state,
					       "primary", primary, "up", u);
				if (nw) {
					json_t *w = json_array();

					for (int k = 0; k < nw; k++)
						json_array_append_new(
							w, json_integer(want[k] == CRUSH_ITEM_NONE
										? -1
										: want[k]));
					json_object_set_new(pg, "held_for", w);
				}
				json_array_append_new(a, pg);
			} else if (nw) {
				fprintf(c->out, "%-10s %-28s %-7d [%s] held; CRUSH wants [%s]\n",
					id, state, primary, ups, wants);
			} else {
				fprintf(c->out, "%-10s %-28s %-7d [%s]\n", id, state, primary, ups);
			}
		}
	}
	if (a)
		c->res = json_pack("{s:I, s:o}", "epoch", (json_int_t)m->epoch, "pgs", a);
	mon_placement_free(&pl);
	cairn__map__osd_map__free_unpacked(m, NULL);
	return 0;
}

static int
cmd_mon_ls(struct cmd *c)
{
	struct mon_cluster_view v;
	int rc = mon_cluster_view_read(c->env->etcd, c->env->fsid, &v);

	if (rc) {
		snprintf(c->err, sizeof(c->err), "reading the monmap: %s", cm_strerror(rc));
		return rc;
	}
	if (c->json) {
		json_t *a = json_array();

		for (size_t i = 0; i < v.nmons; i++)
			json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:b}", "name",
							   v.mons[i].name, "addr", v.mons[i].addr,
							   "alive", v.mons[i].alive, "leader",
							   strcmp(v.leader, v.mons[i].name) == 0));
		c->res = json_pack("{s:o, s:s}", "mons", a, "leader", v.leader);
	} else {
		for (size_t i = 0; i < v.nmons; i++)
			fprintf(c->out, "mon.%s %s %s%s\n", v.mons[i].name, v.mons[i].addr,
				v.mons[i].alive ? "alive" : "DOWN",
				strcmp(v.leader, v.mons[i].name) == 0 ? " leader" : "");
	}
	mon_cluster_view_free(&v);
	return 0;
}

static int
cmd_crush_show(struct cmd *c)
{
	Cairn__Map__OsdMap *m;
	int rc = read_map(c, &m);

	if (rc)
		return rc;
	if (c->json)
		c->res = json_pack("{s:I, s:s}", "epoch", (json_int_t)m->epoch, "crush", m->crush);
	else
		fputs(m->crush, c->out);
	cairn__map__osd_map__free_unpacked(m, NULL);
	return 0;
}

static int
cmd_osd_ls(struct cmd *c)
{
	Cairn__Map__OsdMap *m;
	int rc = read_map(c, &m);

	if (rc)
		return rc;
	if (c->json) {
		json_t *a = json_array();

		for (size_t i = 0; i < m->n_osds; i++)
			json_array_append_new(a, osd_json(m->osds[i]));
		c->res = json_pack("{s:I, s:o}", "epoch", (json_int_t)m->epoch, "osds", a);
	} else {
		fprintf(c->out, "%-6s %-6s %-4s %-4s %-9s %-9s %-8s %-16s %-36s %s\n", "ID", "HOST",
			"UP", "IN", "WEIGHT", "REWEIGHT", "CLASS", "ADDR", "UUID", "SHARDS");
		for (size_t i = 0; i < m->n_osds; i++) {
			const Cairn__Map__Osd *o = m->osds[i];

			fprintf(c->out, "%-6d %-6s %-4s %-4s %-9.5f %-9.5f %-8s %-16s %-36s %zu\n",
				o->id, o->host, o->up ? "up" : "down", o->in ? "in" : "out",
				(double)o->weight / 65536.0, (double)o->reweight / 65536.0,
				o->device_class[0] ? o->device_class : "-", o->addr, o->uuid,
				o->n_shard_addrs ? o->n_shard_addrs : (size_t)1);
		}
	}
	cairn__map__osd_map__free_unpacked(m, NULL);
	return 0;
}

/* One map change, with an error sentence from the edit. */
struct edit {
	struct cmd *c;
	const char *verb;
	int32_t *ids;
	int nids;
	uint32_t reweight;
	uint64_t flag;
	bool set;
	struct mon_pool_spec spec;
	int64_t pool_id;
	const char *key, *value;
	uint64_t now_ns;
	uint64_t until_ns; /* blocklist add: wall clock, 0: never */
};

static int
edit_fn(void *arg, Cairn__Map__OsdMap *m)
{
	struct edit *e = arg;
	char *err = e->c->err;
	bool changed = false;
	int rc;

	err[0] = 0;
	if (strcmp(e->verb, "flag") == 0) {
		uint64_t f = e->set ? m->flags | e->flag : m->flags & ~e->flag;

		if (f == m->flags)
			return 1;
		m->flags = f;
		return 0;
	}
	if (strcmp(e->verb, "blocklist add") == 0)
		return mon_blocklist_add(m, e->key, e->until_ns, err);
	if (strcmp(e->verb, "blocklist rm") == 0)
		return mon_blocklist_rm(m, e->key);
	if (strcmp(e->verb, "pool create") == 0)
		return mon_pool_create(m, &e->spec, &e->pool_id, err);
	if (strcmp(e->verb, "pool rm") == 0)
		return mon_pool_rm(m, e->spec.name, err);
	if (strcmp(e->verb, "pool set") == 0)
		return mon_pool_set(m, e->spec.name, e->key, e->value, err);
	for (int i = 0; i < e->nids; i++) {
		int32_t id = e->ids[i];

		if (strcmp(e->verb, "down") == 0)
			rc = mon_osd_mark_down(m, id, e->now_ns);
		else if (strcmp(e->verb, "out") == 0)
			rc = mon_osd_set_in(m, id, false);
		else if (strcmp(e->verb, "in") == 0)
			rc = mon_osd_set_in(m, id, true);
		else if (strcmp(e->verb, "reweight") == 0)
			rc = mon_osd_reweight(m, id, e->reweight);
		else
			rc = mon_osd_rm(m, id, err);
		if (rc == -ENOENT && !err[0])
			snprintf(err, MON_ERRLEN, "osd.%d does not exist", id);
		if (rc < 0)
			return rc;
		changed |= rc == 0;
	}
	return changed ? 0 : 1;
}

static int
run_edit(struct cmd *c, struct edit *e, const char *done)
{
	uint64_t epoch = 0;
	int rc;

	e->c = c;
	e->now_ns = cm_now_ns();
	rc = mon_map_update(c->env->store, edit_fn, e, &epoch);
	if (rc < 0) {
		if (!c->err[0])
			snprintf(c->err, sizeof(c->err), "map update: %s", cm_strerror(rc));
		return rc;
	}
	if (c->json)
		c->res = json_pack("{s:b, s:I, s:s}", "changed", rc == 0, "epoch",
				   (json_int_t)epoch, "result", done);
	else
		fprintf(c->out, "%s%s\n", done, rc == 1 ? " (no change)" : "");
	return 0;
}

static int
parse_osd_id(struct cmd *c, const char *s, int32_t *id)
{
	char *end;
	long v;

	if (strncmp(s, "osd.", 4) == 0)
		s += 4;
	errno = 0;
	v = strtol(s, &end, 10);
	if (!s[0] || *end || errno || v < 0 || v > (1 << 24)) {
		snprintf(c->err, sizeof(c->err), "'%s' is not an OSD id (N or osd.N)", s);
		return -EINVAL;
	}
	*id = (int32_t)v;
	return 0;
}

static int parse_uint_arg(struct cmd *c, const char *opt, const char *v, unsigned lo, unsigned hi,
			  unsigned *out);

/* osd blocklist ls|add ENTITY [SECONDS]|rm ENTITY */
static int
cmd_osd_blocklist(struct cmd *c)
{
	const char *verb = c->argc > 2 ? c->argv[2] : "";
	struct edit e = { 0 };
	char done[MON_ENTITY_MAX + 96];

	if (strcmp(verb, "ls") == 0 && c->argc == 3) {
		Cairn__Map__OsdMap *m;
		uint64_t now = cm_wall_ns();
		json_t *a = c->json ? json_array() : NULL;
		int rc = read_map(c, &m);

		if (rc) {
			json_decref(a);
			return rc;
		}
		for (size_t i = 0; i < m->n_blocklist; i++) {
			const Cairn__Map__BlocklistEntry *b = m->blocklist[i];
			double left = b->until_ns ? ((double)b->until_ns - (double)now) / 1e9 : -1;

			if (a)
				json_array_append_new(
					a, json_pack("{s:s, s:I, s:f, s:I}", "entity", b->entity,
						     "until_ns", (json_int_t)b->until_ns,
						     "expires_in_s", left, "added_epoch",
						     (json_int_t)b->added_epoch));
			else if (b->until_ns)
				fprintf(c->out,
					"%s expires in %.0f s (added at epoch %" PRIu64 ")\n",
					b->entity, left > 0 ? left : 0, b->added_epoch);
			else
				fprintf(c->out, "%s never expires (added at epoch %" PRIu64 ")\n",
					b->entity, b->added_epoch);
		}
		if (a)
			c->res = json_pack("{s:I, s:o}", "epoch", (json_int_t)m->epoch, "blocklist",
					   a);
		else
			fprintf(c->out, "listed %zu entries\n", m->n_blocklist);
		cairn__map__osd_map__free_unpacked(m, NULL);
		return 0;
	}
	if (strcmp(verb, "add") == 0 && (c->argc == 4 || c->argc == 5)) {
		unsigned secs = 3600;

		if (c->argc == 5 &&
		    parse_uint_arg(c, "SECONDS", c->argv[4], 0, 10u * 365 * 86400, &secs))
			return -EINVAL;
		e.verb = "blocklist add";
		e.key = c->argv[3];
		e.until_ns = secs ? cm_wall_ns() + (uint64_t)secs * 1000000000ull : 0;
		if (secs)
			snprintf(done, sizeof(done), "blocklisted %.*s for %u s", MON_ENTITY_MAX,
				 e.key, secs);
		else
			snprintf(done, sizeof(done), "blocklisted %.*s until removed",
				 MON_ENTITY_MAX, e.key);
		return run_edit(c, &e, done);
	}
	if (strcmp(verb, "rm") == 0 && c->argc == 4) {
		e.verb = "blocklist rm";
		e.key = c->argv[3];
		snprintf(done, sizeof(done), "removed %.*s from the blocklist", MON_ENTITY_MAX,
			 e.key);
		return run_edit(c, &e, done);
	}
	return usage(c, "osd blocklist ls | osd blocklist add ENTITY [SECONDS, default 3600; 0: "
			"until removed] | osd blocklist rm ENTITY");
}

static int
cmd_osd(struct cmd *c)
{
	struct edit e = { 0 };
	int32_t ids[64];
	char done[160];
	const char *verb = c->argc > 1 ? c->argv[1] : "";
	int rc;

	if (strcmp(verb, "ls") == 0)
		return cmd_osd_ls(c);
	if (strcmp(verb, "blocklist") == 0)
		return cmd_osd_blocklist(c);
	if (strcmp(verb, "set") == 0 || strcmp(verb, "unset") == 0) {
		if (c->argc != 3)
			return usage(c, "osd set|unset FLAG");
		e.flag = mon_flag_parse(c->argv[2]);
		if (!e.flag) {
			snprintf(c->err, sizeof(c->err),
				 "unknown flag '%s' (noout, norebalance, nobackfill, norecover, "
				 "pause, full, noup, nodown, noin)",
				 c->argv[2]);
			return -EINVAL;
		}
		e.verb = "flag";
		e.set = verb[0] == 's';
		snprintf(done, sizeof(done), "%s is %s", c->argv[2], e.set ? "set" : "unset");
		return run_edit(c, &e, done);
	}
	if (strcmp(verb, "reweight") == 0) {
		char *end;
		double w;

		if (c->argc != 4)
			return usage(c, "osd reweight ID WEIGHT (0.0 - 1.0)");
		rc = parse_osd_id(c, c->argv[2], &ids[0]);
		if (rc)
			return rc;
		w = strtod(c->argv[3], &end);
		if (*end || end == c->argv[3] || !(w >= 0.0 && w <= 1.0)) {
			snprintf(c->err, sizeof(c->err), "reweight '%s': a number from 0 to 1",
				 c->argv[3]);
			return -EINVAL;
		}
		e.verb = "reweight";
		e.ids = ids;
		e.nids = 1;
		e.reweight = (uint32_t)(w * 65536.0 + 0.5);
		snprintf(done, sizeof(done), "reweighted osd.%d to %.5f", ids[0],
			 (double)e.reweight / 65536.0);
		return run_edit(c, &e, done);
	}
	if (strcmp(verb, "down") == 0 || strcmp(verb, "out") == 0 || strcmp(verb, "in") == 0 ||
	    strcmp(verb, "rm") == 0) {
		size_t off = 0;

		if (c->argc < 3 || c->argc - 2 > (int)CM_ARRAY_SIZE(ids))
			return usage(c, "osd down|out|in|rm ID...");
		off += (size_t)snprintf(done, sizeof(done), "marked %s", verb);
		if (strcmp(verb, "rm") == 0)
			off = (size_t)snprintf(done, sizeof(done), "removed");
		for (int i = 2; i < c->argc; i++) {
			rc = parse_osd_id(c, c->argv[i], &ids[i - 2]);
			if (rc)
				return rc;
			if (off < sizeof(done))
				off += (size_t)snprintf(done + off, sizeof(done) - off, " osd.%d",
							ids[i - 2]);
		}
		e.verb = verb;
		e.ids = ids;
		e.nids = c->argc - 2;
		return run_edit(c, &e, done);
	}
	return usage(c, "osd ls | osd down|out|in|rm ID... | osd reweight ID W | "
			"osd set|unset FLAG | osd blocklist ls|add|rm");
}

static int
parse_uint_arg(struct cmd *c, const char *opt, const char *v, unsigned lo, unsigned hi,
	       unsigned *out)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(v, &end, 10);
	if (!v[0] || *end || errno || x < lo || x > hi || v[0] == '-') {
		snprintf(c->err, sizeof(c->err), "%s '%s': a whole number from %u to %u", opt, v,
			 lo, hi);
		return -EINVAL;
	}
	*out = (unsigned)x;
	return 0;
}

static int
cmd_pool_ls(struct cmd *c)
{
	Cairn__Map__OsdMap *m;
	struct crush_map *cm = NULL;
	int rc = read_map(c, &m);

	if (rc)
		return rc;
	crush_text_parse(m->crush, &cm, c->err, sizeof(c->err));
	c->err[0] = 0;
	if (c->json) {
		json_t *a = json_array();

		for (size_t i = 0; i < m->n_pools; i++) {
			const char *rn = cm && m->pools[i]->crush_rule >= 0 &&
							 m->pools[i]->crush_rule < cm->max_rules &&
							 cm->rules[m->pools[i]->crush_rule]
						 ? cm->rules[m->pools[i]->crush_rule]->name
						 : "?";

			json_array_append_new(a, pool_json(m->pools[i], rn));
		}
		c->res = json_pack("{s:I, s:o}", "epoch", (json_int_t)m->epoch, "pools", a);
	} else {
		for (size_t i = 0; i < m->n_pools; i++) {
			const Cairn__Map__Pool *p = m->pools[i];
			const char *rn = cm && p->crush_rule >= 0 &&
							 p->crush_rule < cm->max_rules &&
							 cm->rules[p->crush_rule]
						 ? cm->rules[p->crush_rule]->name
						 : "?";

			char merge[96] = "";

			if (p->pg_num_target && p->pg_num_pending)
				snprintf(merge, sizeof(merge), " merging_to %u (step to %u paused)",
					 p->pg_num_target, p->pg_num_pending);
			else if (p->pg_num_target)
				snprintf(merge, sizeof(merge), " merging_to %u", p->pg_num_target);
			if (p->erasure)
				fprintf(c->out,
					"pool %" PRId64
					" '%s' erasure %u+%u stripe_unit %u size %u "
					"min_size %u pg_num %u crush_rule %s pgp_num %u%s\n",
					p->id, p->name, p->ec_k, p->ec_m,
					p->stripe_unit ? p->stripe_unit : 4096, p->size,
					p->min_size, p->pg_num, rn, p->pgp_num, merge);
			else
				fprintf(c->out,
					"pool %" PRId64 " '%s' replicated size %u min_size %u "
					"pg_num %u crush_rule %s pgp_num %u%s\n",
					p->id, p->name, p->size, p->min_size, p->pg_num, rn,
					p->pgp_num, merge);
		}
	}
	crush_map_destroy(cm);
	cairn__map__osd_map__free_unpacked(m, NULL);
	return 0;
}

static int
cmd_pool(struct cmd *c)
{
	struct edit e = { 0 };
	char done[200];
	const char *verb = c->argc > 1 ? c->argv[1] : "";
	int rc;

	if (strcmp(verb, "ls") == 0)
		return cmd_pool_ls(c);
	if (strcmp(verb, "create") == 0) {
		if (c->argc < 3 || c->argv[2][0] == '-')
			return usage(c, "pool create NAME [--size N] [--min-size N] [--ec K+M] "
					"[--stripe-unit BYTES] [--pg-num N]");
		e.spec.name = c->argv[2];
		for (int i = 3; i < c->argc; i++) {
			const char *o = c->argv[i], *v = i + 1 < c->argc ? c->argv[i + 1] : NULL;

			if (!v) {
				snprintf(c->err, sizeof(c->err), "%s needs a value", o);
				return -EINVAL;
			}
			i++;
			if (strcmp(o, "--size") == 0)
				rc = parse_uint_arg(c, o, v, 1, 32, &e.spec.size);
			else if (strcmp(o, "--min-size") == 0)
				rc = parse_uint_arg(c, o, v, 1, 32, &e.spec.min_size);
			else if (strcmp(o, "--pg-num") == 0)
				rc = parse_uint_arg(c, o, v, 1, 65536, &e.spec.pg_num);
			else if (strcmp(o, "--stripe-unit") == 0)
				rc = parse_uint_arg(c, o, v, 4096, 1u << 20, &e.spec.stripe_unit);
			else if (strcmp(o, "--ec") == 0) {
				e.spec.erasure = true;
				rc = mon_parse_ec_profile(v, &e.spec.ec_k, &e.spec.ec_m, c->err);
			} else {
				snprintf(c->err, sizeof(c->err),
					 "pool create: unknown option '%s' (--size, --min-size, "
					 "--ec, --stripe-unit, --pg-num)",
					 o);
				rc = -EINVAL;
			}
			if (rc)
				return rc;
		}
		e.verb = "pool create";
		snprintf(done, sizeof(done), "pool '%s' created", e.spec.name);
		return run_edit(c, &e, done);
	}
	if (strcmp(verb, "rm") == 0) {
		if (c->argc != 4 || strcmp(c->argv[3], "--yes-i-really-mean-it") != 0)
			return usage(c, "pool rm NAME --yes-i-really-mean-it (its data goes too)");
		e.verb = "pool rm";
		e.spec.name = c->argv[2];
		snprintf(done, sizeof(done), "pool '%s' removed", e.spec.name);
		return run_edit(c, &e, done);
	}
	if (strcmp(verb, "set") == 0) {
		if (c->argc != 5)
			return usage(c, "pool set NAME KEY VALUE (size, min_size, pg_num, "
					"crush_rule, quota_max_bytes)");
		e.verb = "pool set";
		e.spec.name = c->argv[2];
		e.key = c->argv[3];
		e.value = c->argv[4];
		snprintf(done, sizeof(done), "pool '%s': %s = %s", e.spec.name, e.key, e.value);
		return run_edit(c, &e, done);
	}
	return usage(c, "pool ls | pool create NAME [...] | pool rm NAME --yes-i-really-mean-it | "
			"pool set NAME KEY VALUE");
}

/* ---- the service map: gateways, MDS daemons, CSI controllers (by etcd lease) ---- */

/* A service type or name: [A-Za-z0-9._-], 1..max bytes. */
static bool
svc_word_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (!n || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

/* A free-form field (address, meta): printable ASCII, no tab or newline. */
static bool
svc_text_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

/* An instance: a client name as the blocklist takes it (it may have to be fenced). */
static bool
svc_instance_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > MON_ENTITY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

#define SVC_MAX_PER_TYPE 1024 /* registrations of one type (status, ls and replies stay small) */

/* The registrations under services/ (of type, if not NULL) into *r. */
static int
svc_read(struct cmd *c, const char *type, struct cm_etcd_range *r)
{
	char k[256], *end;
	size_t end_len;
	int rc;

	if (type)
		snprintf(k, sizeof(k), "/cairn/%s/services/%s/", c->env->fsid, type);
	else
		snprintf(k, sizeof(k), "/cairn/%s/services/", c->env->fsid);
	end = cm_etcd_prefix_end(k, strlen(k), &end_len);
	if (!end)
		return -ENOMEM;
	rc = cm_etcd_get(c->env->etcd, k, strlen(k), end, end_len, 0, r);
	free(end);
	if (rc)
		snprintf(c->err, sizeof(c->err), "reading the service map: %s", cm_strerror(rc));
	return rc;
}

/* One registration as JSON {type, name, addr, instance, meta, ttl} (NULL: not one). */
static json_t *
svc_entry(const struct cmd *c, const struct cm_etcd_kv *kv)
{
	char pre[160];
	size_t pl = (size_t)snprintf(pre, sizeof(pre), "/cairn/%s/services/", c->env->fsid);
	char *key = dup_n(kv->key, kv->key_len), *slash;
	json_error_t je;
	json_t *v = NULL;

	if (key && strlen(key) > pl && (slash = strchr(key + pl, '/'))) {
		*slash = 0;
		v = json_loadb((const char *)kv->value, kv->value_len, 0, &je);
		if (v && json_is_object(v)) {
			json_object_set_new(v, "type", json_string(key + pl));
			json_object_set_new(v, "name", json_string(slash + 1));
		} else {
			json_decref(v);
			v = NULL;
		}
	}
	free(key);
	return v;
}

static const char *
jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

/*
 * Register (type, name) for instance at addr with meta for ttl (text)
 * seconds, or renew it: the lease is kept alive when nothing changed, else
 * a new one carries the new value (another instance takes the name over).
 */
static int
svc_beacon(struct cmd *c, const char *type, const char *name, const char *inst, const char *addr,
	   const char *ttl_s, const char *meta, int64_t *lease_out)
{
	struct cm_etcd_range r;
	unsigned long ttl;
	char k[512], *end, *val;
	json_t *v;
	int64_t lease = 0, granted;
	int rc;

	errno = 0;
	ttl = strtoul(ttl_s, &end, 10);
	if (!svc_word_ok(type, 32) || !svc_word_ok(name, 64) || !svc_instance_ok(inst) ||
	    !svc_text_ok(addr, 256) || !svc_text_ok(meta, 1024) || errno || *end || end == ttl_s ||
	    ttl < 2 || ttl > 3600) {
		snprintf(c->err, sizeof(c->err),
			 "service beacon: TYPE (1-32) and NAME (1-64) of [A-Za-z0-9._-], "
			 "INSTANCE (a client name: 1-128 bytes, no spaces), ADDR (at most 256) and "
			 "META (at most 1024) printable ASCII, TTL 2..3600 seconds");
		return -EINVAL;
	}
	snprintf(k, sizeof(k), "/cairn/%s/services/%s/%s", c->env->fsid, type, name);
	rc = cm_etcd_get(c->env->etcd, k, strlen(k), NULL, 0, 0, &r);
	if (rc) {
		snprintf(c->err, sizeof(c->err), "reading the service map: %s", cm_strerror(rc));
		return rc;
	}
	if (!r.count) {
		struct cm_etcd_range all;

		rc = svc_read(c, type, &all);
		if (rc) {
			cm_etcd_range_free(&r);
			return rc;
		}
		rc = all.count >= SVC_MAX_PER_TYPE ? -E2BIG : 0;
		cm_etcd_range_free(&all);
		if (rc) {
			cm_etcd_range_free(&r);
			snprintf(c->err, sizeof(c->err), "service beacon: %d %s services already",
				 SVC_MAX_PER_TYPE, type);
			return rc;
		}
	}
	v = json_pack("{s:s, s:s, s:s, s:I}", "instance", inst, "addr", addr, "meta", meta, "ttl",
		      (json_int_t)ttl);
	val = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(v);
	if (!val) {
		cm_etcd_range_free(&r);
		return -ENOMEM;
	}
	/* The same instance with the same value: renew its lease (any mon may). */
	if (r.count && r.kvs[0].lease && r.kvs[0].value_len == strlen(val) &&
	    memcmp(r.kvs[0].value, val, r.kvs[0].value_len) == 0 &&
	    cm_etcd_lease_keepalive(c->env->etcd, r.kvs[0].lease, &granted) == 0 && granted > 0)
		lease = r.kvs[0].lease;
	cm_etcd_range_free(&r);
	rc = 0;
	if (!lease) { /* new, changed, another instance, or its lease ran out */
		rc = cm_etcd_lease_grant(c->env->etcd, (int64_t)ttl, &lease, &granted);
		if (!rc)
			rc = cm_etcd_put(c->env->etcd, k, strlen(k), val, strlen(val), lease, NULL);
	}
	free(val);
	if (rc)
		snprintf(c->err, sizeof(c->err), "service beacon: %s", cm_strerror(rc));
	*lease_out = lease;
	return rc;
}

/*
 * service beacon TYPE NAME INSTANCE ADDR TTL [META]: register, or keep
 * alive; service rm TYPE NAME INSTANCE; service ls [TYPE].
 */
static int
cmd_service(struct cmd *c)
{
	const char *verb = c->argc > 1 ? c->argv[1] : "";
	char k[512];
	int rc;

	if (strcmp(verb, "ls") == 0) {
		json_t *a;

		if (c->argc > 3 || (c->argc == 3 && !svc_word_ok(c->argv[2], 32)))
			return usage(c, "service ls [TYPE]");
		rc = svc_list(c, c->argc == 3 ? c->argv[2] : NULL, &a);
		if (rc)
			return rc;
		for (size_t i = 0; !c->json && i < json_array_size(a); i++) {
			json_t *e = json_array_get(a, i);

			fprintf(c->out, "%s\t%s\t%s\t%s\t%s\n", jstr(e, "type"), jstr(e, "name"),
				jstr(e, "addr"), jstr(e, "instance"), jstr(e, "meta"));
		}
		if (c->json)
			c->res = json_pack("{s:o}", "services", a);
		else
			json_decref(a);
		return 0;
	}
	if (strcmp(verb, "beacon") == 0) {
		int64_t lease;

		if (c->argc != 7 && c->argc != 8)
			return usage(c, "service beacon TYPE NAME INSTANCE ADDR TTL [META]");
		rc = svc_beacon(c, c->argv[2], c->argv[3], c->argv[4], c->argv[5], c->argv[6],
				c->argc == 8 ? c->argv[7] : "", &lease);
		if (!rc && c->json)
			c->res = json_pack("{s:I}", "lease", (json_int_t)lease);
		return rc;
	}
	if (strcmp(verb, "rm") == 0) {
		struct cm_etcd_range r;
		json_t *e;
		bool mine = false;

		if (c->argc != 5 || !svc_word_ok(c->argv[2], 32) || !svc_word_ok(c->argv[3], 64))
			return usage(c, "service rm TYPE NAME INSTANCE");
		snprintf(k, sizeof(k), "/cairn/%s/services/%s/%s", c->env->fsid, c->argv[2],
			 c->argv[3]);
		rc = cm_etcd_get(c->env->etcd, k, strlen(k), NULL, 0, 0, &r);
		if (rc)
			return rc;
		/* Only the instance that holds the name removes it (a restarted one took it over).
		 */
		e = r.count ? svc_entry(c, &r.kvs[0]) : NULL;
		mine = e && strcmp(jstr(e, "instance"), c->argv[4]) == 0;
		json_decref(e);
		if (mine) {
			struct cm_etcd_cmp cmp = { .key = k,
						   .key_len = strlen(k),
						   .target = CM_ETCD_MOD,
						   .result = CM_ETCD_EQUAL,
						   .number = r.kvs[0].mod_revision };
			struct cm_etcd_op del = { .type = CM_ETCD_OP_DELETE,
						  .key = k,
						  .key_len = strlen(k) };
			bool ok;

			rc = cm_etcd_txn(c->env->etcd, &cmp, 1, &del, 1, NULL, 0, &ok, NULL);
		}
		cm_etcd_range_free(&r);
		return rc;
	}
	return usage(c, "service ls [TYPE] | service beacon TYPE NAME INSTANCE ADDR TTL [META] | "
			"service rm TYPE NAME INSTANCE");
}

/* ---- the MDS map: which metadata daemon holds which rank of a file system ---- */

#define MDS_TRIES 4 /* read-decide-write rounds against concurrent beacons */

/* FS's MDS map from etcd into *map (a default one if none: epoch 0, max_mds 1), its mod revision.
 */
static int
mds_load(struct cmd *c, const char *fs, json_t **map, int64_t *rev)
{
	struct cm_etcd_range r;
	char k[256];
	json_error_t je;
	int rc;

	snprintf(k, sizeof(k), "/cairn/%s/mdsmap/%s", c->env->fsid, fs);
	rc = cm_etcd_get(c->env->etcd, k, strlen(k), NULL, 0, 0, &r);
	if (rc) {
		snprintf(c->err, sizeof(c->err), "reading the MDS map: %s", cm_strerror(rc));
		return rc;
	}
	*rev = r.count ? r.kvs[0].mod_revision : 0;
	*map = r.count ? json_loadb((const char *)r.kvs[0].value, r.kvs[0].value_len, 0, &je)
		       : json_pack("{s:I, s:I, s:[], s:[]}", "epoch", (json_int_t)0, "max_mds",
				   (json_int_t)1, "ranks", "failed");
	cm_etcd_range_free(&r);
	if (!*map || !json_is_array(json_object_get(*map, "ranks")) ||
	    !json_is_array(json_object_get(*map, "failed"))) {
		json_decref(*map);
		*map = NULL;
		snprintf(c->err, sizeof(c->err), "the MDS map of %s does not decode", fs);
		return -EIO;
	}
	return 0;
}

/* Store map as FS's if nobody changed it since rev. \return 0, -EAGAIN (someone did), or an error.
 */
static int
mds_store(struct cmd *c, const char *fs, json_t *map, int64_t rev)
{
	char k[256], *val = json_dumps(map, JSON_COMPACT);
	struct cm_etcd_cmp cmp = { .target = CM_ETCD_MOD, .result = CM_ETCD_EQUAL, .number = rev };
	struct cm_etcd_op put = { .type = CM_ETCD_OP_PUT };
	bool ok = false;
	int rc;

	if (!val)
		return -ENOMEM;
	snprintf(k, sizeof(k), "/cairn/%s/mdsmap/%s", c->env->fsid, fs);
	cmp.key = put.key = k;
	cmp.key_len = put.key_len = strlen(k);
	put.value = val;
	put.value_len = strlen(val);
	rc = cm_etcd_txn(c->env->etcd, &cmp, 1, &put, 1, NULL, 0, &ok, NULL);
	free(val);
	return rc ? rc : ok ? 0 : -EAGAIN;
}

/* Is NAME registered (regs: svc_list of "mds") by instance? (live: its lease holds) */
static bool
mds_live(json_t *regs, const char *name, const char *inst)
{
	for (size_t i = 0; i < json_array_size(regs); i++) {
		json_t *e = json_array_get(regs, i);

		if (!strcmp(jstr(e, "name"), name) && !strcmp(jstr(e, "instance"), inst))
			return true;
	}
	return false;
}

/*
 * One beacon's decision on map (regs: the live mds registrations): ranks
 * whose holder is no longer registered by the same instance, and ranks at
 * or past max_mds, are vacated (remembered in "failed" with that instance:
 * whoever takes the rank fences it first); (name, inst) keeps its rank, or
 * takes the lowest free one below max_mds (fence: whom that rank failed
 * from, "" if none), or stays standby (-1). \return whether map changed.
 */
static bool
mds_decide(json_t *map, json_t *regs, const char *name, const char *inst, const char *addr,
	   json_int_t *rank, char *fence, size_t fencelen)
{
	json_t *ranks = json_object_get(map, "ranks"), *failed = json_object_get(map, "failed");
	json_int_t max = json_integer_value(json_object_get(map, "max_mds"));
	bool changed = false;
	size_t i;

	*rank = -1;
	fence[0] = 0;
	for (i = 0; i < json_array_size(ranks);) {
		json_t *e = json_array_get(ranks, i);
		json_int_t r = json_integer_value(json_object_get(e, "rank"));

		if (r >= max || !mds_live(regs, jstr(e, "name"), jstr(e, "instance"))) {
			/* Lapsed, restarted, or stepping down (max_mds lowered): whoever
			 * takes the rank fences it first. */
			/* (one entry per rank: the last holder is the one to fence) */
			for (size_t x = 0; x < json_array_size(failed); x++)
				if (json_integer_value(json_object_get(json_array_get(failed, x),
								       "rank")) == r) {
					json_array_remove(failed, x);
					break;
				}
			json_array_append_new(failed, json_pack("{s:I, s:s}", "rank", r, "instance",
								jstr(e, "instance")));
			json_array_remove(ranks, i);
			changed = true;
		} else {
			if (!strcmp(jstr(e, "name"), name) && !strcmp(jstr(e, "instance"), inst))
				*rank = r;
			i++;
		}
	}
	for (json_int_t r = 0; *rank < 0 && r < max; r++) {
		bool held = false;

		for (i = 0; i < json_array_size(ranks) && !held; i++)
			held = json_integer_value(
				       json_object_get(json_array_get(ranks, i), "rank")) == r;
		if (held)
			continue;
		for (i = 0; i < json_array_size(failed); i++) {
			json_t *f = json_array_get(failed, i);

			if (json_integer_value(json_object_get(f, "rank")) == r) {
				snprintf(fence, fencelen, "%s", jstr(f, "instance"));
				json_array_remove(failed, i);
				break;
			}
		}
		json_array_append_new(ranks,
				      json_pack("{s:I, s:s, s:s, s:s, s:s, s:I}", "rank", r, "name",
						name, "instance", inst, "addr", addr, "fence",
						fence, "fence_epoch", (json_int_t)0));
		*rank = r;
		changed = true;
	}
	if (changed)
		json_object_set_new(
			map, "epoch",
			json_integer(json_integer_value(json_object_get(map, "epoch")) + 1));
	return changed;
}

/* The entry of rank in map's ranks, or NULL. */
static json_t *
mds_rank_entry(json_t *map, json_int_t rank)
{
	json_t *ranks = json_object_get(map, "ranks");

	for (size_t i = 0; rank >= 0 && i < json_array_size(ranks); i++)
		if (json_integer_value(json_object_get(json_array_get(ranks, i), "rank")) == rank)
			return json_array_get(ranks, i);
	return NULL;
}

/*
 * A decided map stored: when the caller took rank from a failed holder
 * (fence), that holder is blocklisted first (24 hours), so it cannot write
 * once another acts as the rank; the map's epoch that fences goes in the
 * rank's entry. (A failed holder that is the caller itself, back before
 * anyone else took its rank, is not fenced.) \return as mds_store, or the
 * fence's error (nothing stored then).
 */
static int
mds_fence_store(struct cmd *c, const char *fs, json_t *map, int64_t rev, json_int_t rank,
		const char *fence, const char *inst)
{
	json_t *e = mds_rank_entry(map, rank);

	if (fence[0] && e && strcmp(fence, inst) != 0) {
		struct edit ed = { .c = c,
				   .verb = "blocklist add",
				   .key = fence,
				   .now_ns = cm_now_ns(),
				   .until_ns = cm_wall_ns() + 86400ull * 1000000000ull };
		uint64_t epoch = 0;
		int rc = mon_map_update(c->env->store, edit_fn, &ed, &epoch);

		if (rc < 0) {
			if (!c->err[0])
				snprintf(c->err, sizeof(c->err), "mds beacon: fencing %.128s: %s",
					 fence, cm_strerror(rc));
			return rc;
		}
		json_object_set_new(e, "fence_epoch", json_integer((json_int_t)epoch));
	}
	return mds_store(c, fs, map, rev);
}

/* mds beacon FS NAME INSTANCE ADDR TTL | mds set FS max_mds N | mds ls [FS] */
static int
cmd_mds(struct cmd *c)
{
	const char *verb = c->argc > 1 ? c->argv[1] : "", *fs = c->argc > 2 ? c->argv[2] : "";
	json_t *map = NULL;
	int64_t rev, lease;
	int rc = -EAGAIN;

	if (c->argc > 2 && !svc_word_ok(fs, 32)) {
		snprintf(c->err, sizeof(c->err), "mds: FS is 1-32 bytes of [A-Za-z0-9._-]");
		return -EINVAL;
	}
	if (strcmp(verb, "beacon") == 0) {
		json_t *regs;
		Cairn__Map__OsdMap *om;
		json_int_t rank = -1, fepoch = 0;
		const char *inst = c->argc > 4 ? c->argv[4] : "";
		char meta[48], fence[160] = "";
		bool fenced;

		if (c->argc != 7)
			return usage(c, "mds beacon FS NAME INSTANCE ADDR TTL");
		/* A fenced instance takes no rank again: its I/O fails for good. */
		rc = read_map(c, &om);
		if (rc)
			return rc;
		fenced = mon_blocklisted(om, inst);
		cairn__map__osd_map__free_unpacked(om, NULL);
		if (fenced) {
			snprintf(
				c->err, sizeof(c->err),
				"mds beacon: %.128s is blocklisted (connect again as a new client)",
				inst);
			return -EKEYREVOKED;
		}
		snprintf(meta, sizeof(meta), "fs=%s", fs);
		rc = svc_beacon(c, "mds", c->argv[3], inst, c->argv[5], c->argv[6], meta, &lease);
		for (int t = 0; !rc && t < MDS_TRIES; t++) {
			rc = mds_load(c, fs, &map, &rev);
			if (!rc && !(rc = svc_list(c, "mds", &regs))) {
				if (mds_decide(map, regs, c->argv[3], inst, c->argv[5], &rank,
					       fence, sizeof(fence)))
					rc = mds_fence_store(c, fs, map, rev, rank, fence, inst);
				json_decref(regs);
			}
			if (rc != -EAGAIN)
				break;
			json_decref(map);
			map = NULL;
		}
		if (!rc) {
			json_int_t epoch = json_integer_value(json_object_get(map, "epoch"));
			json_t *e = mds_rank_entry(map, rank);

			/* (every reply: the holder writes only with the map that fenced) */
			fepoch = e ? json_integer_value(json_object_get(e, "fence_epoch")) : 0;
			if (c->json)
				c->res = json_pack("{s:I, s:I, s:I}", "rank", rank, "epoch", epoch,
						   "fence_epoch", fepoch);
			else
				fprintf(c->out,
					"rank %" JSON_INTEGER_FORMAT " epoch %" JSON_INTEGER_FORMAT
					" fence_epoch %" JSON_INTEGER_FORMAT "\n",
					rank, epoch, fepoch);
		} else if (rc == -EAGAIN) {
			snprintf(c->err, sizeof(c->err), "mds beacon: the MDS map kept changing");
		}
		json_decref(map);
		return rc;
	}
	if (strcmp(verb, "set") == 0) {
		char *end;
		unsigned long n;

		errno = 0;
		n = c->argc == 5 ? strtoul(c->argv[4], &end, 10) : 0;
		if (c->argc != 5 || strcmp(c->argv[3], "max_mds") || errno || *end || n < 1 ||
		    n > 64)
			return usage(c, "mds set FS max_mds N (1..64)");
		for (int t = 0; t < MDS_TRIES && rc == -EAGAIN; t++) {
			rc = mds_load(c, fs, &map, &rev);
			if (rc)
				break;
			json_object_set_new(map, "max_mds", json_integer((json_int_t)n));
			json_object_set_new(
				map, "epoch",
				json_integer(json_integer_value(json_object_get(map, "epoch")) +
					     1));
			rc = mds_store(c, fs, map, rev);
			json_decref(map);
		}
		return rc;
	}
	if (strcmp(verb, "ls") == 0) {
		struct cm_etcd_range r;
		json_t *regs;
		char k[256], *end;
		size_t end_len;
		json_t *a;

		if (c->argc > 3)
			return usage(c, "mds ls [FS]");
		snprintf(k, sizeof(k), "/cairn/%s/mdsmap/%s", c->env->fsid, c->argc == 3 ? fs : "");
		end = c->argc == 3 ? NULL : cm_etcd_prefix_end(k, strlen(k), &end_len);
		if (c->argc < 3 && !end)
			return -ENOMEM;
		rc = cm_etcd_get(c->env->etcd, k, strlen(k), end, end ? end_len : 0, 0, &r);
		free(end);
		if (rc)
			return rc;
		rc = svc_list(c, "mds", &regs);
		if (rc) {
			cm_etcd_range_free(&r);
			return rc;
		}
		a = json_array();
		for (size_t i = 0; i < r.count; i++) {
			json_error_t je;
			json_t *m = json_loadb((const char *)r.kvs[i].value, r.kvs[i].value_len, 0,
					       &je);
			const char *slash = NULL;
			json_t *sb = json_array();

			for (size_t x = r.kvs[i].key_len; x-- > 0 && !slash;)
				if (r.kvs[i].key[x] == '/')
					slash = r.kvs[i].key + x;

			if (!m || !slash) {
				json_decref(m);
				json_decref(sb);
				continue;
			}
			json_object_set_new(
				m, "fs",
				json_stringn(slash + 1, r.kvs[i].key_len - (size_t)(slash + 1 -
										    r.kvs[i].key)));
			/* Standbys: live mds registrations for this FS holding no rank. */
			for (size_t j = 0; j < json_array_size(regs); j++) {
				json_t *e = json_array_get(regs, j);
				json_t *rk = json_object_get(m, "ranks");
				char want[48];
				bool held = false;

				snprintf(want, sizeof(want), "fs=%s", jstr(m, "fs"));
				for (size_t x = 0; x < json_array_size(rk) && !held; x++)
					held = !strcmp(jstr(json_array_get(rk, x), "name"),
						       jstr(e, "name"));
				if (!held && !strcmp(jstr(e, "meta"), want))
					json_array_append_new(sb, json_string(jstr(e, "name")));
			}
			json_object_set_new(m, "standby", sb);
			/* A holder whose registration lapsed keeps its rank until a standby
			 * beacons. */
			for (size_t x = 0; x < json_array_size(json_object_get(m, "ranks")); x++) {
				json_t *e = json_array_get(json_object_get(m, "ranks"), x);

				json_object_set_new(e, "live",
						    json_boolean(mds_live(regs, jstr(e, "name"),
									  jstr(e, "instance"))));
			}
			if (!c->json) {
				json_t *rk = json_object_get(m, "ranks");

				fprintf(c->out,
					"%s: epoch %" JSON_INTEGER_FORMAT
					", max_mds %" JSON_INTEGER_FORMAT "\n",
					jstr(m, "fs"),
					json_integer_value(json_object_get(m, "epoch")),
					json_integer_value(json_object_get(m, "max_mds")));
				for (size_t x = 0; x < json_array_size(rk); x++) {
					json_t *e = json_array_get(rk, x);

					fprintf(c->out,
						"  rank %" JSON_INTEGER_FORMAT
						": %s (%s) at %s%s\n",
						json_integer_value(json_object_get(e, "rank")),
						jstr(e, "name"), jstr(e, "instance"),
						jstr(e, "addr"),
						json_is_true(json_object_get(e, "live"))
							? ""
							: " (not beaconing: a standby takes over)");
				}
				for (size_t x = 0; x < json_array_size(sb); x++)
					fprintf(c->out, "  standby: %s\n",
						json_string_value(json_array_get(sb, x)));
			}
			json_array_append_new(a, m);
		}
		cm_etcd_range_free(&r);
		json_decref(regs);
		if (c->json)
			c->res = json_pack("{s:o}", "filesystems", a);
		else
			json_decref(a);
		return 0;
	}
	return usage(c, "mds ls [FS] | mds beacon FS NAME INSTANCE ADDR TTL | "
			"mds set FS max_mds N");
}

static int
bump_fn(void *arg, Cairn__Map__OsdMap *m)
{
	(void)arg;
	m->auth_epoch++;
	return 0;
}

static int
bump_auth_epoch(struct cmd *c)
{
	uint64_t epoch = 0;
	int rc = c->env->store ? mon_map_update(c->env->store, bump_fn, NULL, &epoch) : 0;

	if (rc < 0)
		snprintf(c->err, sizeof(c->err), "raising the map's auth epoch: %s",
			 cm_strerror(rc));
	return rc < 0 ? rc : 0;
}

enum mon_cmd_need
mon_command_need(int argc, char **argv)
{
	const char *w0 = argc > 0 ? argv[0] : "", *w1 = argc > 1 ? argv[1] : "";
	const char *w2 = argc > 2 ? argv[2] : "";

	if (!strcmp(w0, "auth")) {
		/* The one thing an OSD host's bootstrap key may do: make an OSD's key. */
		if (!strcmp(w1, "get-or-create") && argc == 5 && !strncmp(w2, "osd.", 4) &&
		    !strcmp(argv[3], "profile") && !strcmp(argv[4], "osd"))
			return MON_NEED_BOOTSTRAP;
		return MON_NEED_ADMIN;
	}
	if (!strcmp(w0, "status") || !strcmp(w0, "health") || !strcmp(w1, "ls") ||
	    !strcmp(w1, "show") ||
	    (!strcmp(w0, "osd") && !strcmp(w1, "blocklist") && (!strcmp(w2, "ls") || argc == 2)))
		return MON_NEED_R;
	return MON_NEED_W;
}

int
mon_command(struct mon_cmd_env *env, int argc, char **argv, bool json, char **out, char **err)
{
	struct cmd c = { .env = env, .argc = argc, .argv = argv, .json = json };
	const char *w0 = argc > 0 ? argv[0] : "", *w1 = argc > 1 ? argv[1] : "";
	size_t len = 0;
	char *buf = NULL;
	int rc;

	c.out = open_memstream(&buf, &len);
	if (!c.out)
		return -ENOMEM;
	if (strcmp(w0, "status") == 0 && argc == 1)
		rc = cmd_status(&c, false, false);
	else if (strcmp(w0, "health") == 0 && (argc == 1 || strcmp(w1, "detail") == 0))
		rc = cmd_status(&c, true, argc > 1);
	else if (strcmp(w0, "mon") == 0 && strcmp(w1, "ls") == 0)
		rc = cmd_mon_ls(&c);
	else if (strcmp(w0, "crush") == 0 && strcmp(w1, "show") == 0)
		rc = cmd_crush_show(&c);
	else if (strcmp(w0, "osd") == 0)
		rc = cmd_osd(&c);
	else if (strcmp(w0, "pool") == 0)
		rc = cmd_pool(&c);
	else if (strcmp(w0, "pg") == 0 && strcmp(w1, "ls") == 0)
		rc = cmd_pg_ls(&c);
	else if (strcmp(w0, "service") == 0)
		rc = cmd_service(&c);
	else if (strcmp(w0, "mds") == 0)
		rc = cmd_mds(&c);
	else if (strcmp(w0, "auth") == 0) {
		rc = mon_auth_command(env->etcd, env->fsid, env->kek, argc, argv, json, c.out,
				      &c.res, c.err, sizeof(c.err));
		/* A removed entity or changed caps: every ticket issued before is
		 * void at the OSDs from the map that raises auth_epoch. */
		if (!rc && (!strcmp(w1, "rm") || !strcmp(w1, "caps")))
			rc = bump_auth_epoch(&c);
	} else {
		snprintf(c.err, sizeof(c.err),
			 "unknown command '%s%s%s' (status, health [detail], mon ls, crush show, "
			 "osd ..., pool ..., pg ls, service ..., mds ..., auth ...)",
			 w0, argc > 1 ? " " : "", w1);
		rc = -EINVAL;
	}
	if (!rc && c.res) {
		char *s = json_dumps(c.res, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

		if (s) {
			fprintf(c.out, "%s\n", s);
			free(s);
		}
	}
	json_decref(c.res);
	fclose(c.out);
	if (out)
		*out = buf;
	else
		free(buf);
	if (err)
		*err = rc ? strdup(c.err[0] ? c.err : cm_strerror(rc)) : NULL;
	return rc;
}
