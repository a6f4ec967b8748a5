/* SPDX-License-Identifier: Apache-2.0 */
/* Store names of (namespace, locator key, name). crush/oname.h. */
#include "crush/oname.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int
check_part(const char *s, size_t n, size_t max)
{
	if (n > max)
		return -ENAMETOOLONG;
	if (n && memchr(s, CRUSH_ONAME_SEP, n))
		return -EINVAL;
	return 0;
}

static int
check_name(const char *s, size_t n)
{
	if (!n)
		return -EINVAL;
	if (n > CRUSH_ONAME_NAME_MAX)
		return -ENAMETOOLONG;
	if ((uint8_t)s[0] == 1 || s[0] == CRUSH_ONAME_NS_MARK)
		return -EINVAL;
	return 0;
}

int
crush_oname_check(const char *nspace, const char *key, const char *name)
{
	size_t nl = nspace ? strlen(nspace) : 0, kl = key ? strlen(key) : 0;
	int rc;

	if (!name)
		return -EINVAL;
	if ((rc = check_part(nspace, nl, CRUSH_ONAME_NS_MAX)) ||
	    (rc = check_part(key, kl, CRUSH_ONAME_KEY_MAX)))
		return rc;
	return check_name(name, strnlen(name, CRUSH_ONAME_NAME_MAX + 1));
}

int
crush_oname_encode(const char *nspace, const char *key, const char *name, char *out,
		   size_t out_size)
{
	size_t nl = nspace ? strlen(nspace) : 0, kl = key ? strlen(key) : 0, ol, len;
	int rc = crush_oname_check(nspace, key, name);

	if (rc)
		return rc;
	ol = strlen(name);
	len = nl || kl ? 3 + nl + kl + ol : ol;
	if (len + 1 > out_size)
		return -ENOBUFS;
	if (len == ol) {
		memcpy(out, name, ol + 1);
		return (int)len;
	}
	out[0] = CRUSH_ONAME_NS_MARK;
	if (nl) /* (NULL parts are "") */
		memcpy(out + 1, nspace, nl);
	out[1 + nl] = CRUSH_ONAME_SEP;
	if (kl)
		memcpy(out + 2 + nl, key, kl);
	out[2 + nl + kl] = CRUSH_ONAME_SEP;
	memcpy(out + 3 + nl + kl, name, ol + 1);
	return (int)len;
}

int
crush_oname_decode(const char *s, struct crush_oname *o)
{
	const char *a, *b;
	size_t n;

	memset(o, 0, sizeof(*o));
	if (!s || !s[0] || (uint8_t)s[0] == 1)
		return -EINVAL;
	n = strnlen(s, CRUSH_ONAME_MAX + 1);
	if (n > CRUSH_ONAME_MAX)
		return -ENAMETOOLONG;
	o->nspace = o->key = "";
	if (s[0] != CRUSH_ONAME_NS_MARK) {
		o->name = s;
		o->namelen = n;
		return check_name(s, n);
	}
	a = memchr(s + 1, CRUSH_ONAME_SEP, n - 1);
	b = a ? memchr(a + 1, CRUSH_ONAME_SEP, (size_t)(s + n - a - 1)) : NULL;
	if (!b)
		return -EINVAL;
	o->nspace = s + 1;
	o->nslen = (size_t)(a - s - 1);
	o->key = a + 1;
	o->keylen = (size_t)(b - a - 1);
	o->name = b + 1;
	o->namelen = (size_t)(s + n - b - 1);
	/* One store name per object: the bare form when the parts allow it. */
	if (!o->nslen && !o->keylen)
		return -EINVAL;
	if (o->nslen > CRUSH_ONAME_NS_MAX || o->keylen > CRUSH_ONAME_KEY_MAX)
		return -ENAMETOOLONG;
	return check_name(o->name, o->namelen);
}

int
crush_oname_to_pg(const struct crush_pool *p, const char *s, uint32_t *pg)
{
	uint32_t ps;
	int rc = crush_oname_hash(s, &ps);

	if (rc)
		return rc;
	*pg = crush_hash_to_pg(p, ps);
	return 0;
}

/* Hash "ns\037hashed" or "hashed" as crush_object_hash does, from parts. */
int
crush_oname_hash(const char *s, uint32_t *ps)
{
	struct crush_oname o;
	char stackbuf[512], *ns, *what;
	size_t wl;
	int rc = crush_oname_decode(s, &o);

	if (rc)
		return rc;
	if (!o.nslen && !o.keylen)
		return crush_object_hash(NULL, s, ps);
	/* the key stands in for the name when there is one */
	wl = o.keylen ? o.keylen : o.namelen;
	if (o.nslen + wl + 2 <= sizeof(stackbuf)) {
		ns = stackbuf;
	} else if (!(ns = malloc(o.nslen + wl + 2))) {
		return -ENOMEM;
	}
	memcpy(ns, o.nspace, o.nslen);
	ns[o.nslen] = 0;
	what = ns + o.nslen + 1;
	memcpy(what, o.keylen ? o.key : o.name, wl);
	what[wl] = 0;
	rc = crush_object_hash(ns, what, ps);
	if (ns != stackbuf)
		free(ns);
	return rc;
}

/*
 * An exclusive scan start just below namespace nspace's range
 * (\x02 nspace \x1f ...): \x02 nspace \x1e. Only names of namespaces
 * "nspace\x1e..." lie between.
 */
static void
ns_floor(const char *nspace, char *out)
{
	size_t nl = strlen(nspace);

	out[0] = CRUSH_ONAME_NS_MARK;
	memcpy(out + 1, nspace, nl);
	out[1 + nl] = CRUSH_ONAME_SEP - 1;
	out[2 + nl] = 0;
}

/* Greater than every \x02 name, less than any bare one: \x02 and 257 x \xff. */
static void
past_ns_names(char *out)
{
	out[0] = CRUSH_ONAME_NS_MARK;
	memset(out + 1, 0xff, CRUSH_ONAME_NS_MAX + 1);
	out[CRUSH_ONAME_NS_MAX + 2] = 0;
}

static void
max_into(char *out, const char *a)
{
	if (strcmp(a, out) > 0)
		memcpy(out, a, strlen(a) + 1);
}

void
crush_oname_list_start(const char *nspace, const char *after, char *out)
{
	out[0] = 0;
	if (nspace && nspace[0])
		ns_floor(nspace, out);
	if (after)
		max_into(out, after);
}

int
crush_oname_list_step(const char *nspace, const char *s, char *resume)
{
	size_t nl;

	memcpy(resume, s, strlen(s) + 1);
	if ((uint8_t)s[0] == 1)
		return CRUSH_ONAME_SKIP; /* the OSD's own: a few, first */
	if (!nspace)
		return CRUSH_ONAME_TAKE;
	if (!nspace[0]) {
		/* the default namespace: \x02\x1f... (keyed) and bare names */
		if (s[0] != CRUSH_ONAME_NS_MARK || s[1] == CRUSH_ONAME_SEP)
			return CRUSH_ONAME_TAKE;
		if ((uint8_t)s[1] < (uint8_t)CRUSH_ONAME_SEP) {
			char floor[3] = { CRUSH_ONAME_NS_MARK, CRUSH_ONAME_SEP - 1, 0 };

			/* "\x02\x1e" < every keyed name: they come next */
			max_into(resume, floor);
		} else {
			char past[CRUSH_ONAME_NS_MAX + 3];

			past_ns_names(past);
			max_into(resume, past);
		}
		return CRUSH_ONAME_SKIP;
	}
	nl = strlen(nspace);
	{
		char p[CRUSH_ONAME_NS_MAX + 3];

		ns_floor(nspace, p);
		p[1 + nl] = CRUSH_ONAME_SEP; /* the range's prefix */
		if (!strncmp(s, p, nl + 2))
			return CRUSH_ONAME_TAKE;
		if (strcmp(s, p) > 0)
			return CRUSH_ONAME_END; /* greater and not in it: past it */
		p[1 + nl] = CRUSH_ONAME_SEP - 1;
		max_into(resume, p);
	}
	return CRUSH_ONAME_SKIP;
}
