/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The monitor's copy of the entities and the service secrets (mon/auth.h,
 * etcd under /cairn/<fsid>/auth...), so that a handshake finds its key
 * without waiting on etcd: read at start, then kept by an etcd watch whose
 * events are decoded on the watch thread and applied on the reactor. A
 * watch that ends is restarted by a full reload on a worker.
 */
#include "mon_int.h"
#include "cm/err.h"
#include "cm/log.h"

#include <openssl/crypto.h>

CM_LOG_SUBSYS(mon);

struct entry {
	char name[CM_AUTH_NAME_MAX + 1];
	uint8_t key[CM_AUTH_KEY_LEN];
	char *caps;
};

struct mon_auth_cache {
	struct cm_reactor *r;
	struct cm_etcd *e;
	struct cm_worker_pool *wp;
	char *fsid;
	char prefix[256]; /* "/cairn/<fsid>/auth": entities and the secrets */
	size_t plen;
	uint8_t kek[CM_AUTH_KEY_LEN];
	struct cm_etcd_watch *watch;
	bool stopping, reloading;
	/* reactor-owned */
	struct entry *v; /* sorted by name */
	size_t n, cap;
	struct mon_secrets secrets;
};

/* One change for the reactor: an entry put or deleted, the secrets, or a reload. */
struct change {
	struct mon_auth_cache *c;

	enum { CH_PUT, CH_DEL, CH_SECRETS, CH_RELOAD } kind;
	struct entry e;
	struct mon_secrets s;
};

static int
find(const struct mon_auth_cache *c, const char *name, bool *found)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int d = strcmp(c->v[mid].name, name);

		if (d == 0) {
			*found = true;
			return (int)mid;
		}
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return (int)lo;
}

static void
entry_fini(struct entry *e)
{
	free(e->caps);
	OPENSSL_cleanse(e, sizeof(*e));
}

/* Reactor: take e (its caps) into the cache. */
static void
put(struct mon_auth_cache *c, struct entry *e)
{
	bool found;
	int i = find(c, e->name, &found);

	if (found) {
		entry_fini(&c->v[i]);
		c->v[i] = *e;
		return;
	}
	if (c->n == c->cap) {
		size_t nc = c->cap ? 2 * c->cap : 16;
		struct entry *nv = realloc(c->v, nc * sizeof(*nv));

		if (!nv) {
			entry_fini(e);
			return;
		}
		c->v = nv;
		c->cap = nc;
	}
	memmove(&c->v[i + 1], &c->v[i], (c->n - (size_t)i) * sizeof(*c->v));
	c->v[i] = *e;
	c->n++;
}

static void
del(struct mon_auth_cache *c, const char *name)
{
	bool found;
	int i = find(c, name, &found);

	if (!found)
		return;
	entry_fini(&c->v[i]);
	memmove(&c->v[i], &c->v[i + 1], (c->n - (size_t)i - 1) * sizeof(*c->v));
	c->n--;
}

static void
clear(struct mon_auth_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		entry_fini(&c->v[i]);
	c->n = 0;
	OPENSSL_cleanse(&c->secrets, sizeof(c->secrets));
}

/*
 * Decode one kv of the range into *ch (any thread). \return 0 (ch filled),
 * 1 (not ours or undecodable: skipped, logged).
 */
static int
decode(struct mon_auth_cache *c, const char *key, size_t klen, const void *val, size_t vlen,
       bool deleted, struct change *ch)
{
	const char *rest = key + c->plen;
	size_t rlen = klen - c->plen;

	memset(ch, 0, sizeof(*ch));
	ch->c = c;
	if (klen < c->plen)
		return 1;
	if (rlen == strlen("_rotating") && !memcmp(rest, "_rotating", rlen)) {
		ch->kind = CH_SECRETS;
		if (deleted)
			return 0; /* no secrets: none until the leader makes them */
		if (mon_secrets_open(c->kek, "cairn-rotating", val, vlen, &ch->s)) {
			CM_ERR("the service secrets in etcd do not open with this cluster's key");
			return 1;
		}
		return 0;
	}
	if (rlen < 2 || rest[0] != '/' || rlen - 1 > CM_AUTH_NAME_MAX)
		return 1;
	memcpy(ch->e.name, rest + 1, rlen - 1);
	ch->e.name[rlen - 1] = 0;
	if (deleted) {
		ch->kind = CH_DEL;
		return 0;
	}
	{
		struct mon_auth_entry a;

		if (mon_auth_decode(c->kek, ch->e.name, val, vlen, &a)) {
			CM_ERR("entity %s in etcd does not decode (or its key does not open): it "
			       "cannot authenticate",
			       ch->e.name);
			return 1;
		}
		memcpy(ch->e.key, a.key, CM_AUTH_KEY_LEN);
		ch->e.caps = a.caps;
		a.caps = NULL;
		mon_auth_entry_fini(&a);
	}
	ch->kind = CH_PUT;
	return 0;
}

static void reload_submit(struct mon_auth_cache *c);

static void
apply(void *arg)
{
	struct change *ch = arg;
	struct mon_auth_cache *c = ch->c;

	switch (ch->kind) {
	case CH_PUT:
		put(c, &ch->e);
		ch->e.caps = NULL;
		break;
	case CH_DEL:
		del(c, ch->e.name);
		break;
	case CH_SECRETS:
		c->secrets = ch->s;
		break;
	case CH_RELOAD:
		if (!c->stopping)
			reload_submit(c);
		break;
	}
	entry_fini(&ch->e);
	OPENSSL_cleanse(&ch->s, sizeof(ch->s));
	free(ch);
}

/* Watch thread. */
static void
on_watch(void *arg, const struct cm_etcd_event *ev, int rc)
{
	struct mon_auth_cache *c = arg;
	struct change *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return;
	if (!ev) {
		CM_WARN("auth watch ended: %s; reloading", cm_strerror(rc));
		ch->c = c;
		ch->kind = CH_RELOAD;
	} else if (decode(c, ev->kv.key, ev->kv.key_len, ev->kv.value, ev->kv.value_len,
			  ev->type == CM_ETCD_EV_DELETE, ch)) {
		free(ch);
		return;
	}
	if (cm_reactor_send_msg(c->r, apply, ch)) {
		entry_fini(&ch->e);
		free(ch);
	}
}

/* What a load read: every change, to apply at once on the reactor. */
struct load {
	struct cm_work w;
	struct mon_auth_cache *c;
	struct change *v;
	size_t n;
	int rc;
};

/* Read everything and (re)start the watch after it. Blocking. */
static int
load(struct mon_auth_cache *c, struct load *l)
{
	struct cm_etcd_range r;
	size_t elen;
	char *end = cm_etcd_prefix_end(c->prefix, c->plen, &elen);
	int rc;

	if (!end)
		return -ENOMEM;
	rc = cm_etcd_get(c->e, c->prefix, c->plen, end, elen, 0, &r);
	if (rc) {
		free(end);
		return rc;
	}
	l->v = calloc(r.count ? r.count : 1, sizeof(*l->v));
	if (!l->v) {
		free(end);
		cm_etcd_range_free(&r);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r.count; i++)
		if (!decode(c, r.kvs[i].key, r.kvs[i].key_len, r.kvs[i].value, r.kvs[i].value_len,
			    false, &l->v[l->n]))
			l->n++;
	cm_etcd_watch_stop(c->watch);
	c->watch = NULL;
	rc = cm_etcd_watch_start(c->e, c->prefix, c->plen, end, elen, r.revision + 1, on_watch, c,
				 &c->watch);
	free(end);
	cm_etcd_range_free(&r);
	return rc;
}

static void
load_apply(struct mon_auth_cache *c, struct load *l)
{
	clear(c);
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].kind == CH_PUT) {
			put(c, &l->v[i].e);
			l->v[i].e.caps = NULL;
		} else if (l->v[i].kind == CH_SECRETS) {
			c->secrets = l->v[i].s;
		}
		entry_fini(&l->v[i].e);
		OPENSSL_cleanse(&l->v[i].s, sizeof(l->v[i].s));
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static void
reload_fn(void *arg)
{
	struct load *l = arg;

	l->rc = load(l->c, l);
}

static void
reload_done(void *arg)
{
	struct load *l = arg;
	struct mon_auth_cache *c = l->c;

	c->reloading = false;
	if (l->rc)
		CM_ERR("reloading the entities: %s", cm_strerror(l->rc));
	else
		load_apply(c, l);
	for (size_t i = 0; i < l->n; i++)
		entry_fini(&l->v[i].e);
	free(l->v);
	free(l);
}

static void
reload_submit(struct mon_auth_cache *c)
{
	struct load *l;

	if (c->reloading)
		return;
	l = calloc(1, sizeof(*l));
	if (!l)
		return;
	l->c = c;
	l->w = (struct cm_work){ .fn = reload_fn, .done = reload_done, .arg = l };
	c->reloading = true;
	if (cm_worker_submit(c->wp, c->r, &l->w)) {
		c->reloading = false;
		free(l);
	}
}

int
mon_auth_cache_create(struct cm_reactor *r, struct cm_etcd *e, struct cm_worker_pool *wp,
		      const char *fsid, const uint8_t kek[CM_AUTH_KEY_LEN],
		      struct mon_auth_cache **cp)
{
	struct mon_auth_cache *c = calloc(1, sizeof(*c));
	struct load l = { 0 };
	int rc;

	if (!c)
		return -ENOMEM;
	c->r = r;
	c->e = e;
	c->wp = wp;
	memcpy(c->kek, kek, CM_AUTH_KEY_LEN);
	snprintf(c->prefix, sizeof(c->prefix), "/cairn/%s/auth", fsid);
	c->plen = strlen(c->prefix);
	rc = load(c, &l);
	if (rc) {
		for (size_t i = 0; i < l.n; i++)
			entry_fini(&l.v[i].e);
		free(l.v);
		mon_auth_cache_destroy(c);
		return rc;
	}
	load_apply(c, &l);
	*cp = c;
	return 0;
}

void
mon_auth_cache_stop(struct mon_auth_cache *c)
{
	if (!c)
		return;
	c->stopping = true;
	cm_etcd_watch_stop(c->watch);
	c->watch = NULL;
}

void
mon_auth_cache_destroy(struct mon_auth_cache *c)
{
	if (!c)
		return;
	mon_auth_cache_stop(c);
	clear(c);
	free(c->v);
	OPENSSL_cleanse(c->kek, sizeof(c->kek));
	free(c);
}

int
mon_auth_cache_lookup(const struct mon_auth_cache *c, const char *name,
		      uint8_t key[CM_AUTH_KEY_LEN], char **caps)
{
	bool found;
	int i = find(c, name, &found);

	if (!found)
		return -ENOENT;
	memcpy(key, c->v[i].key, CM_AUTH_KEY_LEN);
	if (caps) {
		*caps = strdup(c->v[i].caps ? c->v[i].caps : "");
		if (!*caps)
			return -ENOMEM;
	}
	return 0;
}

const struct mon_secrets *
mon_auth_cache_secrets(const struct mon_auth_cache *c)
{
	return &c->secrets;
}
