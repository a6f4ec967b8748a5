/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bucket lifecycle configurations (docs/design/rgw.md §5.1): what
 * PutBucketLifecycleConfiguration accepts, parsed into rules the
 * collector's sweep applies. Expiration only (this cluster has one
 * storage class): of current versions (after days or on a date; expired
 * delete markers), of noncurrent versions (days after they became
 * noncurrent, keeping the newest N), and of incomplete multipart uploads.
 */
#ifndef RGW_LC_H
#define RGW_LC_H

#include "cm/stdinc.h"

#define RGW_LC_RULES_MAX 1000
#define RGW_LC_XML_MAX   (64u << 10)

struct rgw_lc_rule {
	char id[256];
	char *prefix; /* "" : every key */
	char *tags;   /* packed tag set (rgw_tags_add) the object must carry, or NULL */
	size_t tags_len;
	bool enabled;
	int exp_days;     /* current versions: this many days after their time (0: none) */
	int64_t exp_date; /* or from this time (s since the epoch; 0: none) */
	bool exp_dm;      /* ExpiredObjectDeleteMarker */
	int nc_days;      /* noncurrent versions: days after they became noncurrent (0: none) */
	int nc_newer;     /* NewerNoncurrentVersions: the newest this many are kept */
	int abort_days;   /* incomplete multipart uploads: days after initiation (0: none) */
};

struct rgw_lc {
	struct rgw_lc_rule *r;
	size_t n;
};

/*
 * Parse a <LifecycleConfiguration>. \return 0, -EBADMSG (malformed or
 * invalid: err says why), -EOPNOTSUPP (transitions, size filters: err says
 * which), -ENOMEM.
 */
int rgw_lc_parse(const char *xml, size_t n, struct rgw_lc *lc, char *err, size_t elen);
void rgw_lc_fini(struct rgw_lc *lc);
/* Whether the rule applies to key (its prefix; tags checked apart: rgw_lc_tags_match). */
bool rgw_lc_prefix_match(const struct rgw_lc_rule *r, const char *key, size_t klen);
/* Whether an object's packed tags hold every tag the rule names. */
bool rgw_lc_tags_match(const struct rgw_lc_rule *r, const char *tags, size_t tlen);

#endif
