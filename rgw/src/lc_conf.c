/* SPDX-License-Identifier: Apache-2.0 */
/* Lifecycle configurations: S3's XML into rules (rgw/lc.h). */
#include "rgw/lc.h"
#include "rgw/meta.h"
#include "rgw/xml.h"

#include <time.h>

static int
fail(char *err, size_t elen, int rc, const char *msg)
{
	snprintf(err, elen, "%s", msg);
	return rc;
}

/* A positive day count (at most 100 years). */
static int
days(const char *s, int *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EBADMSG;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || errno || v < 1 || v > 36500)
		return -EBADMSG;
	*out = (int)v;
	return 0;
}

/* A count of versions kept (1-100, as S3). */
static int
count(const char *s, int *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EBADMSG;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || errno || v < 1 || v > 100)
		return -EBADMSG;
	*out = (int)v;
	return 0;
}

/* An ISO 8601 date at midnight UTC: "2027-01-01T00:00:00Z" or "...000Z", or "2027-01-01". */
static int
date(const char *s, int64_t *out)
{
	struct tm tm;
	const char *rest;

	memset(&tm, 0, sizeof(tm));
	if (!s || !(rest = strptime(s, "%Y-%m-%d", &tm)))
		return -EBADMSG;
	if (*rest && strcmp(rest, "T00:00:00Z") && strcmp(rest, "T00:00:00.000Z"))
		return -EBADMSG; /* (S3: dates are midnight UTC) */
	*out = (int64_t)timegm(&tm);
	return *out > 0 ? 0 : -EBADMSG;
}

static int
tag_into(struct rgw_lc_rule *r, const struct rgw_xml *t)
{
	const char *k = rgw_xml_child_text(t, "Key"), *v = rgw_xml_child_text(t, "Value");
	struct rgw_str s;
	int rc;

	if (!k)
		return -EBADMSG;
	rgw_str_init(&s);
	if (r->tags)
		rgw_str_add(&s, r->tags, r->tags_len);
	rc = rgw_tags_add(&s, k, strlen(k), v ? v : "", v ? strlen(v) : 0);
	free(r->tags);
	r->tags = rgw_str_take(&s, &r->tags_len);
	if (!rc && !r->tags)
		rc = -ENOMEM;
	return rc == -ENOMEM ? rc : rc ? -EBADMSG : 0;
}

static int
rule_filter(struct rgw_lc_rule *r, const struct rgw_xml *rule, char *err, size_t elen)
{
	const struct rgw_xml *f = rgw_xml_child(rule, "Filter"), *a;
	const char *p = rgw_xml_child_text(rule, "Prefix");
	int rc;

	if (f && p)
		return fail(err, elen, -EBADMSG, "a rule has both Filter and Prefix");
	if (f) {
		if ((a = rgw_xml_child(f, "And"))) {
			if (f->child != a || a->next)
				return fail(err, elen, -EBADMSG,
					    "a Filter with And has nothing else");
			f = a;
		}
		p = rgw_xml_child_text(f, "Prefix");
		for (const struct rgw_xml *c = f->child, *seen = NULL; c; c = c->next) {
			if (strcmp(c->name, "Prefix"))
				continue;
			if (seen)
				return fail(err, elen, -EBADMSG, "a Filter has two Prefixes");
			seen = c;
		}
		if (rgw_xml_child(f, "ObjectSizeGreaterThan") ||
		    rgw_xml_child(f, "ObjectSizeLessThan"))
			return fail(err, elen, -EOPNOTSUPP,
				    "object size filters are not supported");
		p = rgw_xml_child_text(f, "Prefix");
		for (const struct rgw_xml *c = f->child; c; c = c->next) {
			if (!strcmp(c->name, "Tag")) {
				if ((rc = tag_into(r, c)))
					return rc == -ENOMEM ? rc
							     : fail(err, elen, -EBADMSG,
								    "a filter's tag is not valid");
			} else if (strcmp(c->name, "Prefix")) {
				return fail(err, elen, -EBADMSG,
					    "a Filter holds something unknown");
			}
		}
		if (!a && p && r->tags)
			return fail(err, elen, -EBADMSG, "a Filter of a prefix and tags needs And");
	}
	if (!(r->prefix = strdup(p ? p : "")))
		return -ENOMEM;
	if (strlen(r->prefix) > 1024)
		return fail(err, elen, -EBADMSG, "a rule's prefix is too long");
	return 0;
}

static int
rule_parse(struct rgw_lc_rule *r, const struct rgw_xml *x, char *err, size_t elen)
{
	const char *id = rgw_xml_child_text(x, "ID"), *st = rgw_xml_child_text(x, "Status");
	const struct rgw_xml *e;
	int rc;

	if (id && strlen(id) > 255)
		return fail(err, elen, -EBADMSG, "a rule's ID is longer than 255 characters");
	snprintf(r->id, sizeof(r->id), "%s", id ? id : "");
	if (!st || (strcmp(st, "Enabled") && strcmp(st, "Disabled")))
		return fail(err, elen, -EBADMSG, "a rule's Status must be Enabled or Disabled");
	r->enabled = !strcmp(st, "Enabled");
	if (rgw_xml_child(x, "Transition") || rgw_xml_child(x, "NoncurrentVersionTransition"))
		return fail(err, elen, -EOPNOTSUPP,
			    "transitions are not supported (one storage class)");
	if ((rc = rule_filter(r, x, err, elen)))
		return rc;
	if ((e = rgw_xml_child(x, "Expiration"))) {
		const char *d = rgw_xml_child_text(e, "Days"), *dt = rgw_xml_child_text(e, "Date");
		const char *dm = rgw_xml_child_text(e, "ExpiredObjectDeleteMarker");

		if (!!d + !!dt + !!dm != 1)
			return fail(
				err, elen, -EBADMSG,
				"an Expiration takes one of Days, Date, ExpiredObjectDeleteMarker");
		if (d && days(d, &r->exp_days))
			return fail(err, elen, -EBADMSG, "Days must be a positive integer");
		if (dt && date(dt, &r->exp_date))
			return fail(err, elen, -EBADMSG,
				    "Date must be an ISO 8601 date at midnight UTC");
		if (dm) {
			if (strcmp(dm, "true") && strcmp(dm, "false"))
				return fail(err, elen, -EBADMSG,
					    "ExpiredObjectDeleteMarker must be true or false");
			if (r->tags)
				return fail(
					err, elen, -EBADMSG,
					"ExpiredObjectDeleteMarker cannot go with a tag filter");
			r->exp_dm = !strcmp(dm, "true");
		}
	}
	if ((e = rgw_xml_child(x, "NoncurrentVersionExpiration"))) {
		const char *nv = rgw_xml_child_text(e, "NewerNoncurrentVersions");

		if (days(rgw_xml_child_text(e, "NoncurrentDays"), &r->nc_days))
			return fail(err, elen, -EBADMSG,
				    "NoncurrentDays must be a positive integer");
		if (nv && count(nv, &r->nc_newer))
			return fail(err, elen, -EBADMSG,
				    "NewerNoncurrentVersions must be from 1 to 100");
	}
	if ((e = rgw_xml_child(x, "AbortIncompleteMultipartUpload"))) {
		if (r->tags)
			return fail(err, elen, -EBADMSG,
				    "AbortIncompleteMultipartUpload cannot go with a tag filter");
		if (days(rgw_xml_child_text(e, "DaysAfterInitiation"), &r->abort_days))
			return fail(err, elen, -EBADMSG,
				    "DaysAfterInitiation must be a positive integer");
	}
	if (!r->exp_days && !r->exp_date && !r->exp_dm && !r->nc_days && !r->abort_days &&
	    !rgw_xml_child(x, "Expiration"))
		return fail(err, elen, -EBADMSG, "a rule takes at least one action");
	return 0;
}

int
rgw_lc_parse(const char *xml, size_t n, struct rgw_lc *lc, char *err, size_t elen)
{
	struct rgw_xml *x = NULL;
	size_t nr = 0;
	int rc;

	memset(lc, 0, sizeof(*lc));
	if (n > RGW_LC_XML_MAX)
		return fail(err, elen, -EBADMSG, "the configuration is larger than 64 KiB");
	if ((rc = rgw_xml_parse(xml ? xml : "", n, &x, err, elen)))
		return rc;
	if (strcmp(x->name, "LifecycleConfiguration")) {
		rgw_xml_free(x);
		return fail(err, elen, -EBADMSG, "the root element is not LifecycleConfiguration");
	}
	for (const struct rgw_xml *c = x->child; c; c = c->next)
		if (!strcmp(c->name, "Rule"))
			nr++;
	if (!nr || nr > RGW_LC_RULES_MAX) {
		rgw_xml_free(x);
		return fail(err, elen, -EBADMSG, "a configuration holds 1 to 1,000 rules");
	}
	if (!(lc->r = calloc(nr, sizeof(*lc->r)))) {
		rgw_xml_free(x);
		return -ENOMEM;
	}
	for (const struct rgw_xml *c = x->child; c && !rc; c = c->next) {
		if (strcmp(c->name, "Rule"))
			continue;
		rc = rule_parse(&lc->r[lc->n++], c, err, elen);
		for (size_t i = 0; !rc && lc->r[lc->n - 1].id[0] && i + 1 < lc->n; i++)
			if (!strcmp(lc->r[i].id, lc->r[lc->n - 1].id))
				rc = fail(err, elen, -EBADMSG, "two rules have the same ID");
	}
	rgw_xml_free(x);
	if (rc)
		rgw_lc_fini(lc);
	return rc;
}

void
rgw_lc_fini(struct rgw_lc *lc)
{
	for (size_t i = 0; i < lc->n; i++) {
		free(lc->r[i].prefix);
		free(lc->r[i].tags);
	}
	free(lc->r);
	memset(lc, 0, sizeof(*lc));
}

bool
rgw_lc_prefix_match(const struct rgw_lc_rule *r, const char *key, size_t klen)
{
	size_t pl = strlen(r->prefix);

	return r->enabled && klen >= pl && !memcmp(key, r->prefix, pl);
}

bool
rgw_lc_tags_match(const struct rgw_lc_rule *r, const char *tags, size_t tlen)
{
	size_t pos = 0;
	const char *k, *v;

	while (rgw_tags_next(r->tags, r->tags_len, &pos, &k, &v)) {
		size_t p2 = 0;
		const char *k2, *v2;
		bool found = false;

		while (!found && tags && rgw_tags_next(tags, tlen, &p2, &k2, &v2))
			found = !strcmp(k, k2) && !strcmp(v, v2);
		if (!found)
			return false;
	}
	return true;
}
