/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cairn-rgw, the S3 gateway, as a library (docs/design/rgw.md): rgw_start
 * serves S3 on a listener over a connected libcairn cluster handle; the
 * daemon (rgw/daemon/main.c) only reads its config and calls it. The admin
 * calls manage users and keys in the cluster (clusterctl s3 ...), with no
 * gateway running.
 */
#ifndef RGW_RGW_H
#define RGW_RGW_H

#include "cairn/cairn.h"
#include "cm/reactor.h"
#include "cm/stdinc.h"

#define RGW_DEFAULT_META_POOL "rgw.meta"
#define RGW_DEFAULT_DATA_POOL "rgw.data"

struct rgw_conf {
	const char *listen; /* "127.0.0.1:7480" */
	/* HTTPS on a second address (NULL/"": none), with a PEM certificate chain and key */
	const char *tls_listen, *tls_cert, *tls_key;
	unsigned threads;      /* HTTP reactors (default 2) */
	const char *meta_pool; /* replicated: users, buckets, the index */
	const char *data_pool; /* objects' bytes (may be erasure-coded) */
	const char
		*dns_name; /* virtual-hosted buckets: BUCKET.<dns_name>; NULL/"": path style only */
	const char *region;       /* the region buckets are created in (default "us-east-1") */
	const char *name;         /* this gateway in the service map (default "rgw.<port>") */
	const char *access_log;   /* a file, one line per request; NULL/"": none */
	unsigned gc_delay_s;      /* an overwritten or deleted instance's data goes after this */
	unsigned cache_ttl_ms;    /* users and buckets are cached this long (default 2000) */
	unsigned pending_grace_s; /* a PUT pending this long had a dead gateway (default 3600) */
	unsigned sweep_first_s;   /* the first sweep of leftovers, after start (default 30) */
	unsigned sweep_every_s;   /* then one every this long (default 300) */
	unsigned lc_day_s;        /* a lifecycle rule's day (default 86400; shorter for tests) */
	unsigned shard_retire_s;  /* a shard out of the map is removed this long after (3600) */
	unsigned index_shard_max; /* an index shard with more objects splits (0: never; the
				   * daemon's default 100,000) */
	unsigned split_pause_ms;  /* tests: a split waits this long after each step (0) */
	bool test_resend_commits; /* tests: a multipart completion's applied commit goes twice */
	enum cm_reactor_backend backend;
};

struct rgw;

/* The TLS listener's port (0: none). */
uint16_t rgw_tls_port(const struct rgw *g);

/*
 * Serve. The pools must exist (rgw_pools_ensure makes them). \return 0;
 * -ENOENT (a pool is missing), -EADDRINUSE, or another negative errno;
 * err says what.
 */
int rgw_start(cairn_cluster_t *cl, const struct rgw_conf *c, struct rgw **gp, char *err,
	      size_t errlen);
uint16_t rgw_port(const struct rgw *g);
/* Stop serving (open requests finish), unregister. NULL: a no-op. */
void rgw_stop(struct rgw *g);

/* Make the metadata pool (replicated) and the data pool if they are missing. */
int rgw_pools_ensure(cairn_cluster_t *cl, const char *meta_pool, const char *data_pool, char *err,
		     size_t errlen);

/* ---- admin (synchronous) ---- */

struct rgw_user_info {
	char uid[65];
	char display_name[129];
	bool suspended;
	uint64_t created;
	uint64_t quota_bytes;   /* 0: none */
	uint64_t quota_objects; /* 0: none */
	char (*keys)[33];       /* its access keys */
	size_t nkeys;
};

/*
 * Create user uid (1-64 of [A-Za-z0-9._-]) with a first key pair (written
 * to access[21] and secret[41]). \return 0, -EEXIST, -EINVAL, or an error.
 */
int rgw_admin_user_create(cairn_cluster_t *cl, const char *meta_pool, const char *uid,
			  const char *display, char access[21], char secret[41]);
/* A new key pair for uid. \return 0, -ENOENT, or an error. */
int rgw_admin_key_add(cairn_cluster_t *cl, const char *meta_pool, const char *uid, char access[21],
		      char secret[41]);
/* \return 0, -ENOENT (no such key). */
int rgw_admin_key_rm(cairn_cluster_t *cl, const char *meta_pool, const char *access);
/* The users, sorted (free with free()). */
int rgw_admin_user_list(cairn_cluster_t *cl, const char *meta_pool, char ***uids, size_t *n);
int rgw_admin_user_info(cairn_cluster_t *cl, const char *meta_pool, const char *uid,
			struct rgw_user_info *ui);
void rgw_user_info_fini(struct rgw_user_info *ui);
/* Remove uid and its keys. \return 0, -ENOENT, -ENOTEMPTY (it owns buckets). */
int rgw_admin_user_rm(cairn_cluster_t *cl, const char *meta_pool, const char *uid);
/*
 * Set uid's quota (0: none): its record, then its usage counter (usage.<uid>)
 * from what its buckets hold now, then every key's record (gateways read
 * the quota with the key, within their cache time).
 */
int rgw_admin_user_quota(cairn_cluster_t *cl, const char *meta_pool, const char *uid,
			 uint64_t max_bytes, uint64_t max_objects);
/*
 * What uid's buckets hold (the sum of their index counters); with sync,
 * also written to the usage counter the gateways bound by the user's
 * quota (which moves by reservations: a gateway killed mid-upload leaves
 * it high until a sync).
 */
int rgw_admin_user_usage(cairn_cluster_t *cl, const char *meta_pool, const char *uid, bool sync,
			 int64_t *bytes, int64_t *objects);

struct rgw_lc_counts {
	unsigned buckets, expired, noncurrent, markers, aborted;
};

/*
 * Apply bucket name's lifecycle rules now (NULL: every bucket that has
 * some), a rule's day being day_s seconds (0: a day; shorter to test
 * rules), as a gateway's sweep does; the data freed is dead-marked for
 * the gateways' collector. \return 0, -ENOENT, -ENODATA (no rules).
 */
int rgw_admin_lc_run(cairn_cluster_t *cl, const char *meta_pool, const char *name, unsigned day_s,
		     struct rgw_lc_counts *c);

struct rgw_bucket_stats {
	char owner[65], id[33];
	int64_t bytes, objects;             /* the index's counters */
	int64_t quota_bytes, quota_objects; /* 0: none */
	uint32_t shards;                    /* index shards */
};

/* \return 0, -ENOENT. */
int rgw_admin_bucket_stats(cairn_cluster_t *cl, const char *meta_pool, const char *name,
			   struct rgw_bucket_stats *st);
/*
 * Set a bucket's quota (0: none), enforced from the gateways' next bucket
 * cache refresh; the bucket's quota counter (busage.<id>) is then set to
 * what its index shards hold (rgw.md §6).
 */
int rgw_admin_bucket_quota(cairn_cluster_t *cl, const char *meta_pool, const char *name,
			   uint64_t max_bytes, uint64_t max_objects);

#endif
