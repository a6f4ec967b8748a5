/* SPDX-License-Identifier: Apache-2.0 */
/*
 * etcd v3 client over the JSON gRPC gateway (etcd 3.4's /v3/... paths), with
 * libcurl. Keys and values are bytes (base64 on the wire).
 *
 * Calls are synchronous and thread-safe: run them on worker threads (never on
 * a reactor), e.g. through cm_worker_submit. Each call tries the endpoints in
 * turn, starting with the last one that answered, and retries with backoff
 * until the call's deadline; when no endpoint answers it fails with
 * -CM_EETCD. A watch streams on a thread of its own and calls back there.
 */
#ifndef CM_ETCD_H
#define CM_ETCD_H

#include "cm/stdinc.h"
#include "cm/conf.h"

struct cm_etcd;
struct cm_etcd_watch;

struct cm_etcd_opts {
	size_t opts_size;
	const char *endpoints; /* "http://127.0.0.1:2379,http://127.0.0.1:22379" */
	unsigned timeout_ms;   /* per call, all retries included; default 5000 */
	unsigned attempt_ms;   /* per HTTP attempt; default 1000 */
	/* https endpoints: the CA that signed etcd's certificate, and our
	 * client certificate and key (etcd run with --client-cert-auth lets
	 * only holders of a certificate its CA signed in). NULL: none. */
	const char *ca_file;
	const char *cert_file;
	const char *key_file;
};

void cm_etcd_opts_init(struct cm_etcd_opts *o, size_t size);

/* How a daemon or tool reaches etcd, from its config (CM_ETCD_CONF_OPTS). */
struct cm_etcd_conf {
	char *endpoints;
	char *ca;
	char *cert;
	char *key;
};

/* The config options of a struct cm_etcd_conf member m_ of st_. */
#define CM_ETCD_CONF_OPTS(st_, m_, def_endpoints_)                                       \
	CM_OPT("etcd_endpoints", CM_OPT_STR, def_endpoints_, 0, 0, 0, st_, m_.endpoints, \
	       "etcd client URLs, comma-separated"),                                     \
		CM_OPT("etcd_ca", CM_OPT_STR, "", 0, 0, 0, st_, m_.ca,                   \
		       "https etcd: the CA certificate that signed etcd's (PEM file)"),  \
		CM_OPT("etcd_cert", CM_OPT_STR, "", 0, 0, 0, st_, m_.cert,               \
		       "https etcd: our client certificate (PEM file)"),                 \
		CM_OPT("etcd_key", CM_OPT_STR, "", 0, 0, 0, st_, m_.key,                 \
		       "https etcd: our client certificate's private key (PEM file, mode 0600)")

/* Fill o (initialised) from c; o points into c. */
void cm_etcd_opts_from_conf(struct cm_etcd_opts *o, const struct cm_etcd_conf *c);

/* \return 0, -EINVAL (no endpoint; a certificate without its key), -ENOMEM. */
int cm_etcd_create(const struct cm_etcd_opts *o, struct cm_etcd **ep);
void cm_etcd_destroy(struct cm_etcd *e);

struct cm_etcd_kv {
	char *key;
	size_t key_len;
	uint8_t *value;
	size_t value_len;
	int64_t create_revision, mod_revision, version, lease;
};

struct cm_etcd_range {
	struct cm_etcd_kv *kvs;
	size_t count;
	bool more;        /* limit cut the result */
	int64_t revision; /* store revision of the read */
};

void cm_etcd_range_free(struct cm_etcd_range *r);

/* The range end that makes [prefix, end) "every key starting with prefix". Caller frees. */
char *cm_etcd_prefix_end(const char *prefix, size_t len, size_t *end_len);

/*
 * Read key (range_end NULL) or [key, range_end). limit 0: all.
 * \return 0, -CM_EETCD (no endpoint answered), -EPROTO (bad response), -ENOMEM,
 * or an error etcd returned (-EINVAL, -ENOENT, -ESTALE for compacted revisions).
 */
int cm_etcd_get(struct cm_etcd *e, const char *key, size_t key_len, const char *range_end,
		size_t end_len, int64_t limit, struct cm_etcd_range *out);

/* \return as cm_etcd_get; *revision (may be NULL) the store revision after the put. */
int cm_etcd_put(struct cm_etcd *e, const char *key, size_t key_len, const void *value,
		size_t value_len, int64_t lease, int64_t *revision);

/* Delete key or [key, range_end); *deleted (may be NULL) how many. */
int cm_etcd_delete(struct cm_etcd *e, const char *key, size_t key_len, const char *range_end,
		   size_t end_len, int64_t *deleted);

enum cm_etcd_cmp_target { CM_ETCD_VERSION, CM_ETCD_CREATE, CM_ETCD_MOD, CM_ETCD_VALUE };

enum cm_etcd_cmp_result { CM_ETCD_EQUAL, CM_ETCD_GREATER, CM_ETCD_LESS, CM_ETCD_NOT_EQUAL };

struct cm_etcd_cmp {
	const char *key;
	size_t key_len;
	enum cm_etcd_cmp_target target;
	enum cm_etcd_cmp_result result;
	int64_t number;    /* version / create / mod revision */
	const void *value; /* CM_ETCD_VALUE */
	size_t value_len;
};

enum cm_etcd_op_type { CM_ETCD_OP_PUT, CM_ETCD_OP_DELETE, CM_ETCD_OP_GET };

struct cm_etcd_op {
	enum cm_etcd_op_type type;
	const char *key;
	size_t key_len;
	const void *value; /* put */
	size_t value_len;
	int64_t lease; /* put */
};

/*
 * One atomic transaction: if every compare holds, the success ops run, else
 * the failure ops. *succeeded says which; *revision the store revision.
 * Results of GET ops are not returned (read before, compare on mod_revision).
 */
int cm_etcd_txn(struct cm_etcd *e, const struct cm_etcd_cmp *cmps, size_t ncmp,
		const struct cm_etcd_op *success, size_t nsuccess, const struct cm_etcd_op *failure,
		size_t nfailure, bool *succeeded, int64_t *revision);

/* Leases. \return 0, -ENOENT (no such lease, e.g. expired), or as above. */
int cm_etcd_lease_grant(struct cm_etcd *e, int64_t ttl_s, int64_t *id, int64_t *granted_ttl);
int cm_etcd_lease_keepalive(struct cm_etcd *e, int64_t id, int64_t *ttl);
int cm_etcd_lease_revoke(struct cm_etcd *e, int64_t id);

enum cm_etcd_event_type { CM_ETCD_EV_PUT, CM_ETCD_EV_DELETE };

struct cm_etcd_event {
	enum cm_etcd_event_type type;
	struct cm_etcd_kv kv; /* borrowed for the callback's duration */
};

/*
 * Called on the watch thread for each event, in revision order. rc != 0 with
 * ev NULL reports the watch failed for good (e.g. -ESTALE: start_revision was
 * compacted).
 */
typedef void (*cm_etcd_watch_cb)(void *arg, const struct cm_etcd_event *ev, int rc);

/*
 * Watch key (or [key, range_end)) from start_revision (0: now). Reconnects
 * on its own across endpoints and etcd restarts, resuming after the last
 * revision delivered. \return 0, -ENOMEM, or pthread_create's error.
 */
int cm_etcd_watch_start(struct cm_etcd *e, const char *key, size_t key_len, const char *range_end,
			size_t end_len, int64_t start_revision, cm_etcd_watch_cb cb, void *arg,
			struct cm_etcd_watch **wp);

/* Stop and join the watch thread; no callback runs after it returns. NULL is a no-op. */
void cm_etcd_watch_stop(struct cm_etcd_watch *w);

#endif
