/* SPDX-License-Identifier: Apache-2.0 */
#include "rgw/cond.h"

static bool
num(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;

	if (*s < '0' || *s > '9')
		return false;
	while (*s >= '0' && *s <= '9') {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
		s++;
	}
	*v = x;
	*p = s;
	return true;
}

int
rgw_range_parse(const char *h, uint64_t size, uint64_t *off, uint64_t *len)
{
	const char *p = h;
	uint64_t a = 0, b = 0;
	bool has_a, has_b;

	while (*p == ' ')
		p++;
	if (strncmp(p, "bytes=", 6))
		return 1;
	p += 6;
	while (*p == ' ')
		p++;
	if (strchr(p, ','))
		return 1;
	has_a = num(&p, &a);
	if (*p != '-')
		return 1;
	p++;
	has_b = num(&p, &b);
	while (*p == ' ')
		p++;
	if (*p || (!has_a && !has_b))
		return 1;
	if (!has_a) {
		/* suffix: the last b bytes */
		if (b == 0)
			return -ERANGE;
		if (size == 0)
			return -ERANGE;
		*len = b > size ? size : b;
		*off = size - *len;
		return 0;
	}
	if (has_b && b < a)
		return 1;
	if (a >= size)
		return -ERANGE;
	if (!has_b || b >= size)
		b = size - 1;
	*off = a;
	*len = b - a + 1;
	return 0;
}

int
rgw_copy_range_parse(const char *h, uint64_t size, uint64_t *off, uint64_t *len)
{
	const char *p = h;
	uint64_t a, b;

	if (strncmp(p, "bytes=", 6))
		return -EINVAL;
	p += 6;
	if (!num(&p, &a) || *p++ != '-' || !num(&p, &b) || *p || b < a)
		return -EINVAL;
	if (b >= size)
		return -ERANGE;
	*off = a;
	*len = b - a + 1;
	return 0;
}

int
rgw_http_date_parse(const char *s, int64_t *t)
{
	static const char *const fmts[] = { "%a, %d %b %Y %H:%M:%S GMT",
					    "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y" };

	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		struct tm tm;
		const char *e;

		memset(&tm, 0, sizeof(tm));
		e = strptime(s, fmts[i], &tm);
		if (e && !*e) {
			*t = (int64_t)timegm(&tm);
			return 0;
		}
	}
	return -EINVAL;
}

bool
rgw_etag_match(const char *list, const char *etag)
{
	const char *p = list;
	size_t el = strlen(etag);
	const char *bare = etag;
	size_t bl = el;

	if (el >= 2 && etag[0] == '"' && etag[el - 1] == '"') {
		bare = etag + 1;
		bl = el - 2;
	}
	while (*p) {
		const char *b, *e;

		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		b = p;
		while (*p && *p != ',')
			p++;
		e = p;
		while (e > b && e[-1] == ' ')
			e--;
		if (e - b == 1 && *b == '*')
			return true;
		if (e - b >= 2 && b[0] == 'W' && b[1] == '/')
			b += 2; /* (a weak tag compares as strong for S3) */
		if (e - b >= 2 && *b == '"' && e[-1] == '"') {
			b++;
			e--;
		}
		if ((size_t)(e - b) == bl && !memcmp(b, bare, bl))
			return true;
	}
	return false;
}

enum rgw_cond_result
rgw_cond_eval(const char *if_match, const char *if_unmod, const char *if_none, const char *if_mod,
	      const char *etag, int64_t mtime, bool read)
{
	int64_t t;

	if (if_match) {
		if (!rgw_etag_match(if_match, etag))
			return RGW_COND_FAILED;
	} else if (if_unmod && rgw_http_date_parse(if_unmod, &t) == 0 && mtime > t) {
		return RGW_COND_FAILED;
	}
	if (if_none) {
		if (rgw_etag_match(if_none, etag))
			return read ? RGW_COND_NOT_MODIFIED : RGW_COND_FAILED;
	} else if (read && if_mod && rgw_http_date_parse(if_mod, &t) == 0 && mtime <= t) {
		return RGW_COND_NOT_MODIFIED;
	}
	return RGW_COND_OK;
}
