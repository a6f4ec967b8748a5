/* SPDX-License-Identifier: Apache-2.0 */
#include "rgw/uri.h"
#include "rgw/meta.h"
#include "rgw/str.h"

/* Decode [b, b+n) into dst (at least n + 1 bytes). \return its length, or -EINVAL. */
static ssize_t
decode(const char *b, size_t n, char *dst, bool nul_ok)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = b[i];

		if (c == '%') {
			unsigned v = 0;

			if (i + 2 >= n)
				return -EINVAL;
			for (int k = 1; k <= 2; k++) {
				char d = b[i + (size_t)k];

				v <<= 4;
				if (d >= '0' && d <= '9')
					v |= (unsigned)(d - '0');
				else if (d >= 'a' && d <= 'f')
					v |= (unsigned)(d - 'a' + 10);
				else if (d >= 'A' && d <= 'F')
					v |= (unsigned)(d - 'A' + 10);
				else
					return -EINVAL;
			}
			c = (char)v;
			i += 2;
		}
		if (!c && !nul_ok)
			return -EINVAL;
		dst[o++] = c;
	}
	dst[o] = '\0';
	return (ssize_t)o;
}

int
rgw_uri_parse(const char *target, size_t len, struct rgw_uri *u)
{
	const char *q, *end = target + len, *p = target;
	char *m;
	ssize_t n;

	memset(u, 0, sizeof(*u));
	if (len >= 7 && !strncasecmp(target, "http://", 7)) {
		p = memchr(target + 7, '/', len - 7);
		if (!p)
			return -EINVAL;
	} else if (len >= 8 && !strncasecmp(target, "https://", 8)) {
		p = memchr(target + 8, '/', len - 8);
		if (!p)
			return -EINVAL;
	}
	if (p == end || *p != '/')
		return -EINVAL;
	q = memchr(p, '?', (size_t)(end - p));
	if (!q)
		q = end;
	/* (decoded text is never longer than its source) */
	if (!(m = malloc(2 * (size_t)(end - p) + 2 + RGW_URI_MAX_PARAMS * 2)))
		return -ENOMEM;
	u->mem = m;
	u->raw_path = p;
	u->raw_path_len = (size_t)(q - p);
	if ((n = decode(p, (size_t)(q - p), m, false)) < 0)
		goto bad;
	u->path = m;
	u->path_len = (size_t)n;
	m += n + 1;
	if (q < end)
		q++;
	while (q < end) {
		const char *amp = memchr(q, '&', (size_t)(end - q));
		const char *eq;
		struct rgw_qparam *qp;

		if (!amp)
			amp = end;
		if (amp == q) {
			q++;
			continue;
		}
		if (u->nq == RGW_URI_MAX_PARAMS) {
			rgw_uri_fini(u);
			return -E2BIG;
		}
		qp = &u->q[u->nq++];
		eq = memchr(q, '=', (size_t)(amp - q));
		qp->has_val = eq != NULL;
		if (!eq)
			eq = amp;
		if ((n = decode(q, (size_t)(eq - q), m, false)) < 0)
			goto bad;
		qp->key = m;
		qp->klen = (size_t)n;
		m += n + 1;
		if (qp->has_val) {
			if ((n = decode(eq + 1, (size_t)(amp - eq - 1), m, false)) < 0)
				goto bad;
		} else {
			*m = '\0';
			n = 0;
		}
		qp->val = m;
		qp->vlen = (size_t)n;
		m += n + 1;
		q = amp < end ? amp + 1 : end;
	}
	return 0;
bad:
	rgw_uri_fini(u);
	return -EINVAL;
}

void
rgw_uri_fini(struct rgw_uri *u)
{
	free(u->mem);
	memset(u, 0, sizeof(*u));
}

int
rgw_copy_source_parse(const char *v, struct rgw_copy_src *cs)
{
	const char *q = strchr(v, '?'), *end = v + strlen(v), *slash;
	size_t plen;
	ssize_t n;
	char *m;

	memset(cs, 0, sizeof(*cs));
	if (*v == '/')
		v++;
	plen = (size_t)((q ? q : end) - v);
	if (!(m = malloc(2 * (size_t)(end - v) + 3)))
		return -ENOMEM;
	cs->mem = m;
	/* (a bucket name holds no '/' and no escapes that matter: split before decoding) */
	slash = memchr(v, '/', plen);
	if (!slash || slash == v || slash + 1 == v + plen)
		goto bad;
	if ((n = decode(v, (size_t)(slash - v), m, false)) <= 0 || strchr(m, '/'))
		goto bad;
	cs->bucket = m;
	m += n + 1;
	if ((n = decode(slash + 1, (size_t)(v + plen - slash - 1), m, false)) <= 0)
		goto bad;
	cs->key = m;
	cs->key_len = (size_t)n;
	m += n + 1;
	if (q) {
		q++;
		if (strncmp(q, "versionId=", 10))
			goto bad;
		q += 10;
		if (memchr(q, '&', (size_t)(end - q)) ||
		    (n = decode(q, (size_t)(end - q), m, false)) <= 0)
			goto bad;
		cs->version = m;
	}
	return 0;
bad:
	rgw_copy_source_fini(cs);
	return -EINVAL;
}

void
rgw_copy_source_fini(struct rgw_copy_src *cs)
{
	free(cs->mem);
	memset(cs, 0, sizeof(*cs));
}

int
rgw_tags_from_query(const char *s, struct rgw_str *packed)
{
	size_t n = strlen(s);
	char *m = malloc(2 * n + 3), *c;
	const char *end;
	int rc = 0;

	if (!m)
		return -ENOMEM;
	/* ('+' is a space in this form: a copy with them replaced is decoded) */
	c = m + n + 2;
	for (size_t i = 0; i <= n; i++)
		c[i] = s[i] == '+' ? ' ' : s[i];
	s = c;
	end = s + n;
	while (s < end && !rc) {
		const char *amp = memchr(s, '&', (size_t)(end - s)), *eq;
		ssize_t kl, vl;

		if (!amp)
			amp = end;
		eq = memchr(s, '=', (size_t)(amp - s));
		if (!eq)
			eq = amp;
		if ((kl = decode(s, (size_t)(eq - s), m, false)) < 0 ||
		    (vl = decode(eq < amp ? eq + 1 : amp, (size_t)(amp - (eq < amp ? eq + 1 : amp)),
				 m + kl + 1, false)) < 0)
			rc = -EINVAL;
		else
			rc = rgw_tags_add(packed, m, (size_t)kl, m + kl + 1, (size_t)vl);
		s = amp < end ? amp + 1 : end;
	}
	free(m);
	return rc;
}

const char *
rgw_uri_q(const struct rgw_uri *u, const char *key)
{
	for (size_t i = 0; i < u->nq; i++)
		if (!strcmp(u->q[i].key, key))
			return u->q[i].val;
	return NULL;
}
