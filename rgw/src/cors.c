/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CORS configurations: parsed from S3's XML, matched against a browser's
 * Origin and method (rgw/cors.h).
 */
#include "rgw/cors.h"

#include <strings.h>

#include "rgw/policy.h"
#include "rgw/xml.h"

static const struct {
	const char *name;
	unsigned bit;
} methods[] = {
	{ "GET", RGW_CORS_GET },       { "PUT", RGW_CORS_PUT },   { "POST", RGW_CORS_POST },
	{ "DELETE", RGW_CORS_DELETE }, { "HEAD", RGW_CORS_HEAD },
};

unsigned
rgw_cors_method(const char *name)
{
	for (size_t i = 0; i < CM_ARRAY_SIZE(methods); i++)
		if (!strcmp(methods[i].name, name))
			return methods[i].bit;
	return 0;
}

static void
list_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void
rgw_cors_fini(struct rgw_cors *c)
{
	for (size_t i = 0; i < c->n; i++) {
		list_free(c->r[i].origins, c->r[i].norigins);
		list_free(c->r[i].headers, c->r[i].nheaders);
		list_free(c->r[i].expose, c->r[i].nexpose);
	}
	free(c->r);
	c->r = NULL;
	c->n = 0;
}

/* Text that may go into a response header: printable, no CR/LF (and no comma in a name). */
static bool
header_safe(const char *s, bool list_item)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || (list_item && *s == ','))
			return false;
	return true;
}

static int
list_add(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int
rule_parse(const struct rgw_xml *x, struct rgw_cors_rule *r, char *err, size_t elen)
{
	int rc;

	r->max_age = -1;
	for (const struct rgw_xml *c = x->child; c; c = c->next) {
		const char *t = c->text ? c->text : "";

		if (!strcmp(c->name, "AllowedOrigin")) {
			const char *star = strchr(t, '*');

			if (!*t || !header_safe(t, false) || (star && strchr(star + 1, '*'))) {
				snprintf(err, elen,
					 "AllowedOrigin \"%.64s\" can not have more than one "
					 "wildcard",
					 t);
				return -EINVAL;
			}
			if ((rc = list_add(&r->origins, &r->norigins, t)))
				return rc;
		} else if (!strcmp(c->name, "AllowedMethod")) {
			unsigned m = rgw_cors_method(t);

			if (!m) {
				snprintf(
					err, elen,
					"Found unsupported HTTP method in CORS config. Unsupported "
					"method is %.16s",
					t);
				return -EINVAL;
			}
			r->methods |= m;
		} else if (!strcmp(c->name, "AllowedHeader")) {
			const char *star = strchr(t, '*');

			if (!*t || !header_safe(t, true) || (star && strchr(star + 1, '*'))) {
				snprintf(err, elen,
					 "AllowedHeader \"%.64s\" can not have more than one "
					 "wildcard",
					 t);
				return -EINVAL;
			}
			if ((rc = list_add(&r->headers, &r->nheaders, t)))
				return rc;
		} else if (!strcmp(c->name, "ExposeHeader")) {
			if (!*t || !header_safe(t, true) || strchr(t, '*')) {
				snprintf(err, elen, "ExposeHeader \"%.64s\" contains wildcard", t);
				return -EINVAL;
			}
			if ((rc = list_add(&r->expose, &r->nexpose, t)))
				return rc;
		} else if (!strcmp(c->name, "MaxAgeSeconds")) {
			char *end;
			long v = strtol(t, &end, 10);

			if (!*t || *end || v < 0 || v > INT32_MAX) {
				snprintf(err, elen, "MaxAgeSeconds must be a non-negative integer");
				return -EBADMSG;
			}
			r->max_age = (int)v;
		} else if (!strcmp(c->name, "ID")) {
			if (strlen(t) > 255) {
				snprintf(err, elen,
					 "a CORSRule's ID is longer than 255 characters");
				return -EINVAL;
			}
		} else {
			snprintf(err, elen, "unknown element %.64s in a CORSRule", c->name);
			return -EBADMSG;
		}
	}
	if (!r->norigins || !r->methods) {
		snprintf(err, elen, "a CORSRule needs an AllowedOrigin and an AllowedMethod");
		return -EBADMSG;
	}
	return 0;
}

int
rgw_cors_parse(const char *xml, size_t n, struct rgw_cors *c, char *err, size_t elen)
{
	struct rgw_xml *x = NULL;
	size_t nr = 0;
	int rc;

	memset(c, 0, sizeof(*c));
	if (rgw_xml_parse(xml ? xml : "", n, &x, err, elen))
		return -EBADMSG;
	if (strcmp(x->name, "CORSConfiguration")) {
		rgw_xml_free(x);
		snprintf(err, elen, "the XML is not a CORSConfiguration");
		return -EBADMSG;
	}
	for (const struct rgw_xml *r = x->child; r; r = r->next) {
		if (strcmp(r->name, "CORSRule")) {
			snprintf(err, elen, "unknown element %.64s in a CORSConfiguration",
				 r->name);
			rgw_xml_free(x);
			return -EBADMSG;
		}
		nr++;
	}
	if (!nr || nr > RGW_CORS_RULES_MAX) {
		rgw_xml_free(x);
		snprintf(err, elen, "a CORS configuration holds 1 to 100 rules");
		return nr ? -EINVAL : -EBADMSG;
	}
	if (!(c->r = calloc(nr, sizeof(*c->r)))) {
		rgw_xml_free(x);
		return -ENOMEM;
	}
	rc = 0;
	for (const struct rgw_xml *r = x->child; r && !rc; r = r->next)
		rc = rule_parse(r, &c->r[c->n++], err, elen);
	rgw_xml_free(x);
	if (rc) {
		if (rc == -ENOMEM)
			snprintf(err, elen, "out of memory");
		rgw_cors_fini(c);
	}
	return rc;
}

static bool
header_allowed(const struct rgw_cors_rule *r, const char *h, size_t n)
{
	for (size_t i = 0; i < r->nheaders; i++)
		if (rgw_wild_match(r->headers[i], strlen(r->headers[i]), h, n, true))
			return true;
	return false;
}

const struct rgw_cors_rule *
rgw_cors_match(const struct rgw_cors *c, const char *origin, unsigned method, const char *hdrs)
{
	for (size_t i = 0; c && i < c->n; i++) {
		const struct rgw_cors_rule *r = &c->r[i];
		bool ok = false;

		if (!(r->methods & method))
			continue;
		for (size_t j = 0; j < r->norigins && !ok; j++)
			ok = rgw_wild_match(r->origins[j], strlen(r->origins[j]), origin,
					    strlen(origin), false);
		/* every requested header must be allowed (names are case-insensitive) */
		for (const char *p = hdrs; ok && p && *p;) {
			const char *e = strchr(p, ',');
			size_t n = e ? (size_t)(e - p) : strlen(p);
			const char *s = p;
			size_t sn = n;

			while (sn && (*s == ' ' || *s == '\t'))
				s++, sn--;
			while (sn && (s[sn - 1] == ' ' || s[sn - 1] == '\t'))
				sn--;
			if (sn && !header_allowed(r, s, sn))
				ok = false;
			p = e ? e + 1 : NULL;
		}
		if (ok)
			return r;
	}
	return NULL;
}

void
rgw_cors_headers(const struct rgw_cors_rule *r, const char *origin, bool preflight,
		 const char *hdrs, struct rgw_str *out)
{
	bool any = false, first = true;

	for (size_t i = 0; i < r->norigins && !any; i++)
		any = !strcmp(r->origins[i], "*");
	if (any) {
		rgw_str_adds(out, "Access-Control-Allow-Origin: *\r\n");
	} else {
		rgw_str_adds(out, "Access-Control-Allow-Origin: ");
		rgw_str_adds(out, origin);
		rgw_str_adds(out, "\r\nAccess-Control-Allow-Credentials: true\r\n");
	}
	rgw_str_adds(out, "Access-Control-Allow-Methods: ");
	for (size_t i = 0; i < CM_ARRAY_SIZE(methods); i++) {
		if (!(r->methods & methods[i].bit))
			continue;
		rgw_str_addf(out, "%s%s", first ? "" : ", ", methods[i].name);
		first = false;
	}
	rgw_str_adds(out, "\r\n");
	if (preflight && hdrs && *hdrs) {
		rgw_str_adds(out, "Access-Control-Allow-Headers: ");
		rgw_str_adds(out, hdrs);
		rgw_str_adds(out, "\r\n");
	}
	if (r->nexpose) {
		rgw_str_adds(out, "Access-Control-Expose-Headers: ");
		for (size_t i = 0; i < r->nexpose; i++)
			rgw_str_addf(out, "%s%s", i ? ", " : "", r->expose[i]);
		rgw_str_adds(out, "\r\n");
	}
	if (preflight && r->max_age >= 0)
		rgw_str_addf(out, "Access-Control-Max-Age: %d\r\n", r->max_age);
	rgw_str_adds(out, "Vary: Origin, Access-Control-Request-Headers, "
			  "Access-Control-Request-Method\r\n");
}
