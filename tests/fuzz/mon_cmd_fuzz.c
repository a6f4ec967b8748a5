/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitors' command dispatcher (mon/src/cluster.c mon_command): the
 * words of `clusterctl` commands, run against a cluster map -- usage
 * checks, argument parsing, the map edits and the map store's
 * read-apply-validate-diff-commit cycle, and every listing and status
 * report. etcd is replaced at link time (-Wl,--wrap=cm_etcd_get,
 * --wrap=cm_etcd_txn) by a table in memory here, reset before each input
 * to the same cluster: three OSDs up and in on three hosts, a replicated pool,
 * three mons (two alive).
 *
 * Input: byte 0 bit 0: JSON output; then commands, one a line, words split
 * at spaces and tabs, run in turn (at most MAX_CMDS).
 */
#include "mon/cluster.h"
#include "mon/osdmap.h"
#include "cm/log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int __wrap_cm_etcd_get(struct cm_etcd *e, const char *key, size_t key_len, const char *range_end,
		       size_t end_len, int64_t limit, struct cm_etcd_range *out);
int __wrap_cm_etcd_txn(struct cm_etcd *e, const struct cm_etcd_cmp *cmps, size_t ncmp,
		       const struct cm_etcd_op *success, size_t nsuccess,
		       const struct cm_etcd_op *failure, size_t nfailure, bool *succeeded,
		       int64_t *revision);

int __wrap_cm_etcd_put(struct cm_etcd *e, const char *key, size_t key_len, const void *value,
		       size_t value_len, int64_t lease, int64_t *revision);
int __wrap_cm_etcd_lease_grant(struct cm_etcd *e, int64_t ttl_s, int64_t *id, int64_t *granted_ttl);
int __wrap_cm_etcd_lease_keepalive(struct cm_etcd *e, int64_t id, int64_t *ttl);

#define FSID      "fuzz"
#define MAX_CMDS  8
#define MAX_WORDS 72 /* `osd down` takes 64 ids */
/* Health and `pg ls` map every PG through CRUSH: bound the PGs a run may create. */
#define MAX_PGS 2048

/* ---------- etcd in memory ---------- */

struct fkv {
	char *key;
	size_t klen;
	uint8_t *val;
	size_t vlen;
	int64_t create_rev, mod_rev, version;
};

struct fstore {
	struct fkv *kv;
	size_t n, cap;
	int64_t rev;
};

static struct fstore g_db, g_seed;

static int
kcmp(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : (al > bl) - (al < bl);
}

static struct fkv *
find(struct fstore *s, const char *key, size_t klen)
{
	for (size_t i = 0; i < s->n; i++)
		if (kcmp(s->kv[i].key, s->kv[i].klen, key, klen) == 0)
			return &s->kv[i];
	return NULL;
}

static void *
dup_n(const void *p, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, p, n);
		d[n] = 0;
	}
	return d;
}

static int
put(struct fstore *s, const char *key, size_t klen, const void *val, size_t vlen)
{
	struct fkv *kv = find(s, key, klen);
	uint8_t *v = dup_n(val, vlen);

	if (!v)
		return -ENOMEM;
	if (!kv) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 16;
			struct fkv *a = realloc(s->kv, cap * sizeof(*a));

			if (!a) {
				free(v);
				return -ENOMEM;
			}
			s->kv = a;
			s->cap = cap;
		}
		kv = &s->kv[s->n];
		*kv = (struct fkv){ .key = dup_n(key, klen), .klen = klen, .create_rev = s->rev };
		if (!kv->key) {
			free(v);
			return -ENOMEM;
		}
		s->n++;
	}
	free(kv->val);
	kv->val = v;
	kv->vlen = vlen;
	kv->mod_rev = s->rev;
	kv->version++;
	return 0;
}

static void
del(struct fstore *s, const char *key, size_t klen)
{
	struct fkv *kv = find(s, key, klen);

	if (kv) {
		free(kv->key);
		free(kv->val);
		*kv = s->kv[--s->n];
	}
}

static void
fstore_clear(struct fstore *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->kv[i].key);
		free(s->kv[i].val);
	}
	free(s->kv);
	memset(s, 0, sizeof(*s));
}

static int
fstore_copy(struct fstore *d, const struct fstore *s)
{
	fstore_clear(d);
	d->kv = calloc(s->n + 1, sizeof(*d->kv));
	if (!d->kv)
		return -ENOMEM;
	d->cap = s->n + 1;
	d->rev = s->rev;
	for (size_t i = 0; i < s->n; i++) {
		d->kv[i] = s->kv[i];
		d->kv[i].key = dup_n(s->kv[i].key, s->kv[i].klen);
		d->kv[i].val = dup_n(s->kv[i].val, s->kv[i].vlen);
		d->n++;
		if (!d->kv[i].key || !d->kv[i].val)
			return -ENOMEM;
	}
	return 0;
}

/* Keys in [key, range_end) ("\0": to the end), as etcd's range; NULL range_end: key itself. */
static bool
in_range(const struct fkv *kv, const char *key, size_t key_len, const char *end, size_t end_len)
{
	if (!end)
		return kcmp(kv->key, kv->klen, key, key_len) == 0;
	if (kcmp(kv->key, kv->klen, key, key_len) < 0)
		return false;
	return (end_len == 1 && end[0] == 0) || kcmp(kv->key, kv->klen, end, end_len) < 0;
}

static int
by_key(const void *a, const void *b)
{
	const struct cm_etcd_kv *x = a, *y = b;

	return kcmp(x->key, x->key_len, y->key, y->key_len);
}

int
__wrap_cm_etcd_get(struct cm_etcd *e, const char *key, size_t key_len, const char *range_end,
		   size_t end_len, int64_t limit, struct cm_etcd_range *out)
{
	(void)e;
	memset(out, 0, sizeof(*out));
	out->revision = g_db.rev;
	out->kvs = calloc(g_db.n + 1, sizeof(*out->kvs));
	if (!out->kvs)
		return -ENOMEM;
	for (size_t i = 0; i < g_db.n; i++) {
		const struct fkv *kv = &g_db.kv[i];
		struct cm_etcd_kv *o = &out->kvs[out->count];

		if (!in_range(kv, key, key_len, range_end, end_len))
			continue;
		o->key = dup_n(kv->key, kv->klen);
		o->value = dup_n(kv->val, kv->vlen);
		out->count++;
		if (!o->key || !o->value) {
			cm_etcd_range_free(out);
			return -ENOMEM;
		}
		o->key_len = kv->klen;
		o->value_len = kv->vlen;
		o->create_revision = kv->create_rev;
		o->mod_revision = kv->mod_rev;
		o->version = kv->version;
	}
	qsort(out->kvs, out->count, sizeof(*out->kvs), by_key);
	if (limit > 0 && out->count > (size_t)limit) {
		out->more = true;
		while (out->count > (size_t)limit) {
			out->count--;
			free(out->kvs[out->count].key);
			free(out->kvs[out->count].value);
		}
	}
	return 0;
}

static bool
cmp_holds(const struct cm_etcd_cmp *c)
{
	const struct fkv *kv = find(&g_db, c->key, c->key_len);
	int64_t have = 0;
	int r;

	if (c->target == CM_ETCD_VALUE) {
		r = kv ? kcmp((const char *)kv->val, kv->vlen, c->value, c->value_len) : -1;
	} else {
		if (kv)
			have = c->target == CM_ETCD_VERSION  ? kv->version
			       : c->target == CM_ETCD_CREATE ? kv->create_rev
							     : kv->mod_rev;
		r = (have > c->number) - (have < c->number);
	}
	switch (c->result) {
	case CM_ETCD_EQUAL:
		return r == 0;
	case CM_ETCD_GREATER:
		return r > 0;
	case CM_ETCD_LESS:
		return r < 0;
	default:
		return r != 0;
	}
}

/* (service beacons: a put under a lease; leases always granted and alive) */
int
__wrap_cm_etcd_put(struct cm_etcd *e, const char *key, size_t key_len, const void *value,
		   size_t value_len, int64_t lease, int64_t *revision)
{
	int rc;

	(void)e;
	(void)lease;
	g_db.rev++;
	rc = put(&g_db, key, key_len, value, value_len);
	if (revision)
		*revision = g_db.rev;
	return rc;
}

int
__wrap_cm_etcd_lease_grant(struct cm_etcd *e, int64_t ttl_s, int64_t *id, int64_t *granted_ttl)
{
	(void)e;
	*id = 7;
	*granted_ttl = ttl_s;
	return 0;
}

int
__wrap_cm_etcd_lease_keepalive(struct cm_etcd *e, int64_t id, int64_t *ttl)
{
	(void)e;
	(void)id;
	*ttl = 10;
	return 0;
}

int
__wrap_cm_etcd_txn(struct cm_etcd *e, const struct cm_etcd_cmp *cmps, size_t ncmp,
		   const struct cm_etcd_op *success, size_t nsuccess,
		   const struct cm_etcd_op *failure, size_t nfailure, bool *succeeded,
		   int64_t *revision)
{
	const struct cm_etcd_op *ops = success;
	size_t nops = nsuccess;
	bool ok = true;
	int rc = 0;

	(void)e;
	for (size_t i = 0; i < ncmp; i++)
		ok = ok && cmp_holds(&cmps[i]);
	if (!ok) {
		ops = failure;
		nops = nfailure;
	}
	g_db.rev++;
	for (size_t i = 0; i < nops && !rc; i++) {
		if (ops[i].type == CM_ETCD_OP_PUT)
			rc = put(&g_db, ops[i].key, ops[i].key_len, ops[i].value, ops[i].value_len);
		else if (ops[i].type == CM_ETCD_OP_DELETE)
			del(&g_db, ops[i].key, ops[i].key_len);
	}
	if (succeeded)
		*succeeded = ok;
	if (revision)
		*revision = g_db.rev;
	return rc;
}

/* ---------- the cluster every input starts from ---------- */

static char g_etcd_dummy;
#define ETCD ((struct cm_etcd *)(void *)&g_etcd_dummy) /* never dereferenced: wrapped */

static struct mon_pg_state g_pgs[4];
static struct mon_pg_state_count g_states[2] = { { "active+clean", 3 }, { "recovering", 1 } };
static const struct mon_stats g_stats = { .valid = true,
					  .pg = g_pgs,
					  .npg = 4,
					  .pgs = 4,
					  .states = g_states,
					  .nstates = 2,
					  .osds = 3,
					  .total_bytes = 3ull << 30,
					  .free_bytes = 2ull << 30,
					  .op_rate = 10,
					  .degraded = 1 };

static int
seed_cluster(void)
{
	static const char *const mons[] = { "a", "b", "c" };
	struct mon_map_store *s;
	Cairn__Map__OsdMap *m;
	struct mon_pool_spec ps = { .name = "rbd", .pg_num = 8 };
	char err[MON_ERRLEN], k[256], uuid[40], addr[40], host[8];
	int64_t pid;
	int rc;

	g_db.rev = 1;
	for (size_t i = 0; i < 3; i++) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%zu", 6789 + i);
		if (mon_key_path(FSID, "mons", mons[i], k, sizeof(k)) ||
		    put(&g_db, k, strlen(k), addr, strlen(addr)))
			return -ENOMEM;
		if (i < 2 && (mon_key_path(FSID, "alive", mons[i], k, sizeof(k)) ||
			      put(&g_db, k, strlen(k), addr, strlen(addr))))
			return -ENOMEM;
	}
	if (mon_key_path(FSID, "leader", NULL, k, sizeof(k)) ||
	    put(&g_db, k, strlen(k), "a 127.0.0.1:6789", 16))
		return -ENOMEM;
	rc = mon_map_initial(FSID, &m);
	if (rc)
		return rc;
	for (int i = 0; i < 3; i++) {
		struct mon_osd_boot b = { .id = -1, .uuid = uuid, .addr = addr, .host = host };
		int32_t id;

		snprintf(uuid, sizeof(uuid), "00000000-0000-0000-0000-00000000000%d", i);
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", 6800 + i);
		snprintf(host, sizeof(host), "h%d", i);
		mon_osd_boot(m, &b, &id, err);
	}
	rc = mon_pool_create(m, &ps, &pid, err);
	for (uint32_t i = 0; i < 4; i++)
		g_pgs[i] = (struct mon_pg_state){ .pool = pid,
						  .seed = i,
						  .objects = 10 * i,
						  .bytes = 4096 * i,
						  .degraded = i == 3 };
	for (uint32_t i = 0; i < 4; i++)
		snprintf(g_pgs[i].state, sizeof(g_pgs[i].state), "%s",
			 i == 3 ? "active+recovering+degraded" : "active+clean");
	if (!rc)
		rc = mon_map_store_open(ETCD, FSID, &s);
	if (!rc) {
		rc = mon_map_create(s, m);
		mon_map_store_close(s);
	}
	cairn__map__osd_map__free_unpacked(m, NULL);
	return rc ? rc : fstore_copy(&g_seed, &g_db);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	cm_log_set_file("/dev/null");
	if (seed_cluster())
		abort();
	return 0;
}

/* PGs of the map in the store now (a command may have added pools or PGs). */
static uint64_t
map_pgs(struct mon_map_store *s)
{
	Cairn__Map__OsdMap *m;
	uint64_t pgs = 0;

	if (mon_map_read(s, &m))
		return 0;
	for (size_t i = 0; i < m->n_pools; i++)
		pgs += m->pools[i]->pg_num;
	cairn__map__osd_map__free_unpacked(m, NULL);
	return pgs;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mon_cmd_env env = { .etcd = ETCD, .fsid = FSID, .stats = &g_stats };
	char *text, *line, *save = NULL;
	int ncmd = 0;

	if (size < 1 || size > 4096)
		return 0;
	if (fstore_copy(&g_db, &g_seed) || mon_map_store_open(ETCD, FSID, &env.store))
		return 0;
	text = malloc(size);
	if (!text) {
		mon_map_store_close(env.store);
		return 0;
	}
	memcpy(text, data + 1, size - 1);
	text[size - 1] = 0;
	for (line = strtok_r(text, "\n", &save); line && ncmd < MAX_CMDS;
	     line = strtok_r(NULL, "\n", &save), ncmd++) {
		char *argv[MAX_WORDS + 1], *wsave = NULL, *out = NULL, *err = NULL;
		int argc = 0;

		for (char *w = strtok_r(line, " \t", &wsave); w && argc < MAX_WORDS;
		     w = strtok_r(NULL, " \t", &wsave))
			argv[argc++] = w;
		argv[argc] = NULL;
		(void)mon_command(&env, argc, argv, data[0] & 1, &out, &err);
		free(out);
		free(err);
		if (map_pgs(env.store) > MAX_PGS)
			break;
	}
	free(text);
	mon_map_store_close(env.store);
	return 0;
}
