/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gateway's records in the cluster (docs/design/rgw.md §3): an index
 * entry (one object version: its instance, size, ETag, headers), its binary
 * codec, and the bucket record (JSON).
 */
#ifndef RGW_META_H
#define RGW_META_H

#include "rgw/str.h"

#define RGW_ENTRY_MAX_META 64

enum {
	RGW_ENTRY_DELETE_MARKER = 1,
	RGW_ENTRY_MULTIPART = 2, /* inst's object 0 holds a manifest of part instances */
};

/*
 * A version id (docs/design/rgw.md §3.3): 16 hex digits of the version's
 * time in ns, inverted (newer sorts first), then 8 random hex digits. The
 * null version has none ("" in an entry; "null" to S3).
 */
#define RGW_VID_LEN 24

struct rgw_meta_kv {
	char *k; /* lower case: "x-amz-meta-foo", "cache-control", ... */
	char *v;
};

struct rgw_entry {
	uint8_t flags;
	uint8_t inst[16]; /* the instance: its data is stream <hex(inst)> */
	uint64_t size;
	int64_t mtime_ns;
	uint8_t md5[16]; /* the ETag: MD5 of the bytes, or of the parts' MD5s */
	uint32_t parts;  /* multipart: the part count (ETag "...-N"); 0: none */
	char *ctype;     /* Content-Type ("" if none) */
	char *owner;
	uint8_t ck_alg; /* x-amz-checksum-*: enum rgw_cksum_alg (0: none) */
	char ck[64];    /* its value, as S3 shows it (base64; a multipart's: "<b64>-N") */
	struct rgw_meta_kv meta[RGW_ENTRY_MAX_META];
	size_t nmeta;
	char *tags; /* the tag set, packed (rgw_tags_add), or NULL */
	size_t tags_len;
	char *acl;                 /* the canned ACL ("" or NULL: private) */
	char vid[RGW_VID_LEN + 1]; /* the version id; "": the null version */
	char *mem;                 /* decode's allocation */
};

/* A new version id for a version written at ns. */
void rgw_vid_make(int64_t ns, char out[RGW_VID_LEN + 1]);
/* Whether s is a version id rgw_vid_make could have made. */
bool rgw_vid_ok(const char *s);
/*
 * The sort key of e's version among its key's versions: its id, or for the
 * null version 16 hex digits of its inverted time and "null" (newer first).
 */
void rgw_version_sk(const struct rgw_entry *e, char out[RGW_VID_LEN + 1]);
/* An encoded entry's flags, without decoding it. \return them, or -1 (not an entry). */
int rgw_entry_raw_flags(const void *b, size_t n);
/*
 * Whether key (klen bytes) may name an object: no NUL and no byte UTF-8
 * never uses (0xc0, 0xc1, 0xf5-0xff), so no key reaches the index's
 * system region ("\xff...") or a version record ("<key>\0\1...").
 */
bool rgw_key_ok(const char *key, size_t klen);

/*
 * Tag sets (object tagging), packed as "key\0value\0" pairs. S3's rules:
 * at most RGW_TAGS_MAX tags, keys of 1-128 characters and values of 0-256
 * (UTF-8, no control characters), keys unique.
 */
#define RGW_TAGS_MAX        10
#define RGW_BUCKET_TAGS_MAX 50 /* a bucket's */
/* Append a tag. \return 0, -EINVAL (a bad key or value), -EEXIST (a key again), -E2BIG (too
 * many), -ENOMEM. */
int rgw_tags_add(struct rgw_str *packed, const char *k, size_t kl, const char *v, size_t vl);
/* The same with at most max tags. */
int rgw_tags_add_n(struct rgw_str *packed, const char *k, size_t kl, const char *v, size_t vl,
		   int max);
/* Walk a packed set: the tag at *pos (then past it). \return false at the end. */
bool rgw_tags_next(const char *p, size_t len, size_t *pos, const char **k, const char **v);
/* Whether p is a well-formed set. \return its tag count, or -EBADMSG. */
int rgw_tags_check(const char *p, size_t len);

/* Append e's encoding to out. */
void rgw_entry_encode(const struct rgw_entry *e, struct rgw_str *out);
/*
 * Decode b into e (which then owns one allocation: rgw_entry_fini).
 * \return 0, -EBADMSG (malformed), -ENOMEM.
 */
int rgw_entry_decode(const void *b, size_t n, struct rgw_entry *e);
void rgw_entry_fini(struct rgw_entry *e);
/* "\"<md5 hex>\"" or "\"<md5 hex>-N\"" into out (at least 48 bytes). */
void rgw_entry_etag(const struct rgw_entry *e, char *out, size_t len);

/*
 * A completed multipart upload's manifest: the part instances in order (the
 * bytes of object 0 of the upload's own instance: docs/design/rgw.md §4).
 */
struct rgw_mpart {
	uint8_t inst[16];
	uint64_t size;
};

#define RGW_MANIFEST_HDR 9 /* bytes before the parts; each part is 24 */

void rgw_manifest_encode(const struct rgw_mpart *p, size_t n, struct rgw_str *out);
/* \return 0 (*parts malloc'd, *n of them), -EBADMSG, -ENOMEM. */
int rgw_manifest_decode(const void *b, size_t len, struct rgw_mpart **parts, size_t *n);

/*
 * The instances an object's bytes are in: its own (a plain object), or a
 * manifest's parts, each starting at starts[i] of the object.
 */
struct rgw_layout {
	struct rgw_mpart one, *parts;
	uint64_t start0, *starts;
	size_t np;
};

/* A plain object of size bytes in inst. */
void rgw_layout_single(struct rgw_layout *l, const uint8_t inst[16], uint64_t size);
/* A manifest's parts (b, n: its bytes); their sizes must add up to size. \return 0, -EBADMSG,
 * -ENOMEM. */
int rgw_layout_manifest(struct rgw_layout *l, const void *b, size_t n, uint64_t size);
/* The part holding the object's byte off (< the object's size). */
size_t rgw_layout_find(const struct rgw_layout *l, uint64_t off);
void rgw_layout_fini(struct rgw_layout *l);

/* One uploaded part: its record in the upload object's omap. */
struct rgw_part {
	uint32_t num; /* 1..10000 */
	uint8_t inst[16];
	uint8_t md5[16];
	uint64_t size;
	int64_t mtime_ns;
	uint8_t ck_alg; /* the part's x-amz-checksum-* (enum rgw_cksum_alg; 0: none) */
	char ck[48];    /* its value (base64) */
};

#define RGW_PART_KEY_LEN 37 /* "%05u" + the instance in hex */

/* The record's omap key (RGW_PART_KEY_LEN bytes and a NUL) and value. */
void rgw_part_key(uint32_t num, const uint8_t inst[16], char out[RGW_PART_KEY_LEN + 1]);
void rgw_part_encode(const struct rgw_part *p, struct rgw_str *out);
/* \return 0, -EBADMSG. */
int rgw_part_decode(const void *key, size_t klen, const void *val, size_t vlen, struct rgw_part *p);

struct rgw_bucket {
	char name[64];
	char id[33]; /* 128 random bits, hex: the data's namespace and the index's names */
	char owner[65];
	char location[64];
	int64_t created;                    /* seconds */
	char acl[32];                       /* canned: private, public-read, ... */
	char versioning[16];                /* "" (never), "Enabled", "Suspended" */
	int64_t quota_bytes, quota_objects; /* 0: none */
};

/* An index shard's usage counters (xattrs, int64): moved in the op of every index change. */
/*
 * Cache invalidation: every gateway watches this metadata-pool object; who
 * changes a bucket record or configuration, or a key, notifies it with a
 * payload of one kind byte and a name, and the gateways drop what they
 * cached under it before they acknowledge.
 */
#define RGW_NOTIFY_OID        "rgw.notify"
#define RGW_NOTIFY_BUCKET     'b' /* + bucket name */
#define RGW_NOTIFY_KEY        'k' /* + access key */
#define RGW_NOTIFY_TIMEOUT_MS 5000

#define RGW_USAGE_BYTES "rgw.bytes"
#define RGW_USAGE_OBJS  "rgw.objects"

/* JSON text of b (malloc'd), or NULL. */
char *rgw_bucket_encode(const struct rgw_bucket *b);
/* \return 0, -EBADMSG. */
int rgw_bucket_decode(const char *json, size_t n, struct rgw_bucket *b);

/* S3's bucket naming rules (3-63 of a-z0-9.-, ...). */
bool rgw_bucket_name_ok(const char *name);

#endif
