/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Capabilities (cm/caps.h): a small grammar of grants, parsed once per
 * session and checked per request.
 */
#include "cm/caps.h"

/* Words of one grant: split at blanks, at most 6. */
#define MAX_WORDS 6

struct word {
	const char *s;
	size_t n;
};

static bool
is(const struct word *w, const char *s)
{
	return w->n == strlen(s) && !memcmp(w->s, s, w->n);
}

static int
perr(char *err, size_t errlen, const char *g, size_t gn, const char *why)
{
	snprintf(err, errlen, "caps: '%.*s': %s", (int)(gn > 80 ? 80 : gn), g, why);
	return -EINVAL;
}

/* A pool or namespace value: printable ASCII but blanks, ';' and '='. */
static bool
good_value(const char *s, size_t n, bool star_ok)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c >= 0x7f || c == ';' || c == '=')
			return false;
		if (c == '*' && !(star_ok && i == n - 1))
			return false;
	}
	return true;
}

static int
parse_access(const struct word *w, unsigned *a)
{
	if (is(w, "r"))
		*a = CM_CAP_R;
	else if (is(w, "rw") || is(w, "*"))
		*a = CM_CAP_RW;
	else if (is(w, "w"))
		*a = CM_CAP_W;
	else
		return -1;
	return 0;
}

static int
add_osd(struct cm_caps *c, unsigned access, const struct word *pool, const struct word *ns)
{
	struct cm_cap_grant *n = realloc(c->osd, sizeof(*n) * (c->nosd + 1)), *g;

	if (!n)
		return -ENOMEM;
	c->osd = n;
	g = &c->osd[c->nosd];
	memset(g, 0, sizeof(*g));
	g->access = access;
	if (pool && !(g->pool = strndup(pool->s, pool->n)))
		return -ENOMEM;
	if (ns) {
		g->ns_prefix = ns->n && ns->s[ns->n - 1] == '*';
		g->nspace = strndup(ns->s, ns->n - (g->ns_prefix ? 1 : 0));
		if (!g->nspace) {
			free(g->pool);
			return -ENOMEM;
		}
	}
	c->nosd++;
	return 0;
}

static int
parse_grant(struct cm_caps *c, const char *g, size_t gn, char *err, size_t errlen)
{
	struct word w[MAX_WORDS + 1];
	size_t nw = 0, i = 0;
	unsigned access;

	while (i < gn) {
		while (i < gn && (g[i] == ' ' || g[i] == '\t' || g[i] == '\n'))
			i++;
		if (i == gn)
			break;
		if (nw == MAX_WORDS)
			return perr(err, errlen, g, gn, "too many words");
		w[nw].s = g + i;
		while (i < gn && g[i] != ' ' && g[i] != '\t' && g[i] != '\n')
			i++;
		w[nw].n = (size_t)(g + i - w[nw].s);
		nw++;
	}
	if (nw == 0)
		return 0; /* an empty grant (";;", a trailing ';') */
	if (is(&w[0], "admin")) {
		if (nw != 1)
			return perr(err, errlen, g, gn, "admin takes nothing after it");
		c->admin = true;
		return 0;
	}
	if (is(&w[0], "profile")) {
		if (nw != 2)
			return perr(err, errlen, g, gn,
				    "profile takes one name (osd, bootstrap-osd)");
		if (is(&w[1], "osd"))
			c->profile_osd = true;
		else if (is(&w[1], "bootstrap-osd"))
			c->profile_bootstrap_osd = true;
		else
			return perr(err, errlen, g, gn, "unknown profile (osd, bootstrap-osd)");
		return 0;
	}
	if (is(&w[0], "mon")) {
		if (nw != 2 || parse_access(&w[1], &access))
			return perr(err, errlen, g, gn, "mon takes r or rw");
		c->mon |= access;
		return 0;
	}
	if (is(&w[0], "osd")) {
		const struct word *pool = NULL, *ns = NULL;
		struct word pv, nv;

		if (nw < 2 || parse_access(&w[1], &access))
			return perr(err, errlen, g, gn,
				    "osd takes r or rw, then pool= and namespace=");
		for (size_t k = 2; k < nw; k++) {
			const char *eq = memchr(w[k].s, '=', w[k].n);
			struct word key = { w[k].s, eq ? (size_t)(eq - w[k].s) : w[k].n };
			struct word val = { eq ? eq + 1 : NULL, eq ? w[k].n - key.n - 1 : 0 };

			if (!eq || val.n == 0)
				return perr(err, errlen, g, gn,
					    "expected pool=NAME or namespace=NS");
			if (is(&key, "pool") && !pool) {
				if (!good_value(val.s, val.n, false))
					return perr(err, errlen, g, gn, "bad pool name");
				pv = val;
				pool = &pv;
			} else if (is(&key, "namespace") && !ns) {
				if (!good_value(val.s, val.n, true))
					return perr(err, errlen, g, gn, "bad namespace");
				nv = val;
				ns = &nv;
			} else {
				return perr(err, errlen, g, gn,
					    "expected pool= and namespace= once each");
			}
		}
		return add_osd(c, access, pool, ns) ? -ENOMEM : 0;
	}
	return perr(err, errlen, g, gn, "expected mon, osd, profile or admin");
}

int
cm_caps_parse(const char *s, struct cm_caps *c, char *err, size_t errlen)
{
	size_t n = s ? strlen(s) : 0, i = 0;
	int rc;

	memset(c, 0, sizeof(*c));
	if (err && errlen)
		err[0] = 0;
	if (n > CM_CAPS_MAX) {
		snprintf(err, errlen, "caps: longer than %d bytes", CM_CAPS_MAX);
		return -EINVAL;
	}
	while (i <= n) {
		const char *semi = memchr(s + i, ';', n - i);
		size_t gn = semi ? (size_t)(semi - (s + i)) : n - i;

		rc = parse_grant(c, s + i, gn, err, errlen);
		if (rc) {
			cm_caps_fini(c);
			return rc;
		}
		i += gn + 1;
	}
	return 0;
}

void
cm_caps_fini(struct cm_caps *c)
{
	for (size_t i = 0; i < c->nosd; i++) {
		free(c->osd[i].pool);
		free(c->osd[i].nspace);
	}
	free(c->osd);
	memset(c, 0, sizeof(*c));
}

int
cm_caps_copy(struct cm_caps *dst, const struct cm_caps *src)
{
	*dst = *src;
	dst->osd = NULL;
	dst->nosd = 0;
	if (!src->nosd)
		return 0;
	dst->osd = calloc(src->nosd, sizeof(*dst->osd));
	if (!dst->osd)
		return -ENOMEM;
	for (size_t i = 0; i < src->nosd; i++, dst->nosd++) {
		const struct cm_cap_grant *g = &src->osd[i];

		dst->osd[i] = *g;
		dst->osd[i].pool = g->pool ? strdup(g->pool) : NULL;
		dst->osd[i].nspace = g->nspace ? strdup(g->nspace) : NULL;
		if ((g->pool && !dst->osd[i].pool) || (g->nspace && !dst->osd[i].nspace)) {
			dst->nosd++;
			cm_caps_fini(dst);
			return -ENOMEM;
		}
	}
	return 0;
}

bool
cm_caps_mon(const struct cm_caps *c, unsigned need)
{
	unsigned have = c->mon;

	if (c->admin)
		return true;
	if (c->profile_osd)
		have |= CM_CAP_R;
	return (have & need) == need;
}

bool
cm_caps_osd(const struct cm_caps *c, const char *pool, const char *nspace, unsigned need,
	    bool all_ns)
{
	if (c->admin || c->profile_osd)
		return true;
	for (size_t i = 0; i < c->nosd; i++) {
		const struct cm_cap_grant *g = &c->osd[i];

		if ((g->access & need) != need)
			continue;
		if (g->pool && strcmp(g->pool, pool ? pool : ""))
			continue;
		if (g->nspace) {
			if (all_ns)
				continue;
			if (g->ns_prefix ? strncmp(nspace, g->nspace, strlen(g->nspace))
					 : strcmp(nspace, g->nspace))
				continue;
		}
		return true;
	}
	return false;
}

bool
cm_caps_is_osd(const struct cm_caps *c)
{
	return c->profile_osd || c->admin;
}

static int app(char *out, size_t len, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int
app(char *out, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out + *off, *off < len ? len - *off : 0, fmt, ap);
	va_end(ap);
	if (n < 0 || *off + (size_t)n >= len)
		return -ENOSPC;
	*off += (size_t)n;
	return 0;
}

int
cm_caps_format(const struct cm_caps *c, char *out, size_t len)
{
	static const char *const acc[] = { "", "r", "w", "rw" };
	size_t off = 0;
	bool first = true;
	int rc = 0;

	if (len)
		out[0] = 0;
#define SEP (first ? (first = false, "") : "; ")
	if (c->admin)
		rc |= app(out, len, &off, "%sadmin", SEP);
	if (c->profile_osd)
		rc |= app(out, len, &off, "%sprofile osd", SEP);
	if (c->profile_bootstrap_osd)
		rc |= app(out, len, &off, "%sprofile bootstrap-osd", SEP);
	if (c->mon)
		rc |= app(out, len, &off, "%smon %s", SEP, acc[c->mon & 3]);
	for (size_t i = 0; i < c->nosd; i++) {
		const struct cm_cap_grant *g = &c->osd[i];

		rc |= app(out, len, &off, "%sosd %s", SEP, acc[g->access & 3]);
		if (g->pool)
			rc |= app(out, len, &off, " pool=%s", g->pool);
		if (g->nspace)
			rc |= app(out, len, &off, " namespace=%s%s", g->nspace,
				  g->ns_prefix ? "*" : "");
	}
#undef SEP
	/* Canonical spacing may lengthen a text: what would not parse again is refused. */
	return rc || off > CM_CAPS_MAX ? -ENOSPC : (int)off;
}
