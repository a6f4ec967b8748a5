/* SPDX-License-Identifier: Apache-2.0 */
/* Sessions with OSDs, kept current with the map; see mon/osd_sessions.h. */
#include "mon/osd_sessions.h"
#include "cm/err.h"

/* A session's user word: OSD id + 1, and the shard above bit 32. */
#define SESS_USER(id, k) ((void *)(((intptr_t)(k) << 32) | (intptr_t)((id) + 1)))

void
mon_osd_sessions_init(struct mon_osd_sessions *s, struct cm_msgr *msgr, bool lossless, bool up_only,
		      bool incarnation)
{
	memset(s, 0, sizeof(*s));
	s->msgr = msgr;
	s->lossless = lossless;
	s->up_only = up_only;
	s->incarnation = incarnation;
}

static void
shl_drop(struct mon_osd_shl *l)
{
	if (!l->c)
		return;
	cm_conn_close(l->c);
	cm_conn_put(l->c);
	l->c = NULL;
	l->addr[0] = 0;
}

void
mon_osd_sessions_fini(struct mon_osd_sessions *s)
{
	for (int i = 0; i < s->nosd; i++) {
		for (unsigned k = 0; k < s->osd[i].nsh; k++)
			shl_drop(&s->osd[i].sh[k]);
		free(s->osd[i].sh);
	}
	free(s->osd);
	s->osd = NULL;
	s->nosd = 0;
}

/* Does map entry mo still back session k? */
static bool
shl_current(const struct mon_osd_sessions *s, const struct mon_osd_shl *l,
	    const Cairn__Map__Osd *mo, unsigned k)
{
	const char *addr = s->per_osd              ? mon_osd_pg_addr(mo, s->home, NULL)
			   : k == 0                ? mo->addr
			   : k < mo->n_shard_addrs ? mo->shard_addrs[k]
						   : NULL;

	return mo->up && addr && strcmp(l->addr, addr) == 0 &&
	       (!s->incarnation || l->up_since == mo->up_since);
}

/* OSD id's slot for shard k, grown on demand. */
static struct mon_osd_shl *
shl_get(struct mon_osd_sessions *s, int32_t id, unsigned k)
{
	struct mon_osd_sess *o;

	if (id >= s->nosd) {
		struct mon_osd_sess *n = realloc(s->osd, sizeof(*n) * (size_t)(id + 1));

		if (!n)
			return NULL;
		memset(n + s->nosd, 0, sizeof(*n) * (size_t)(id + 1 - s->nosd));
		s->osd = n;
		s->nosd = id + 1;
	}
	o = &s->osd[id];
	if (k >= o->nsh) {
		struct mon_osd_shl *n = realloc(o->sh, sizeof(*n) * (k + 1));

		if (!n)
			return NULL;
		memset(n + o->nsh, 0, sizeof(*n) * (k + 1 - o->nsh));
		o->sh = n;
		o->nsh = k + 1;
	}
	return &o->sh[k];
}

struct cm_conn *
mon_osd_sessions_get(struct mon_osd_sessions *s, const Cairn__Map__OsdMap *m, int32_t id,
		     uint32_t seed, unsigned *shard)
{
	const Cairn__Map__Osd *mo;
	struct mon_osd_shl *l;
	const char *addr;
	unsigned k;

	if (id < 0 || !m || !(mo = mon_osd_find(m, id)) || !mo->addr[0] || (s->up_only && !mo->up))
		return NULL;
	addr = mon_osd_pg_addr(mo, s->per_osd ? s->home : seed, &k);
	if (s->per_osd)
		k = 0;
	if (shard)
		*shard = k;
	l = shl_get(s, id, k);
	if (!l)
		return NULL;
	if (l->c && (strcmp(l->addr, addr) != 0 || (s->incarnation && l->up_since != mo->up_since)))
		shl_drop(l);
	if (!l->c) {
		if (cm_msgr_connect(s->msgr, addr, s->lossless, &l->c)) {
			l->c = NULL;
			return NULL;
		}
		cm_conn_set_user(l->c, SESS_USER(id, k));
		snprintf(l->addr, sizeof(l->addr), "%s", addr);
		l->up_since = mo->up_since;
	}
	return l->c;
}

bool
mon_osd_sessions_of(struct cm_conn *c, int32_t *id, unsigned *shard)
{
	intptr_t u = (intptr_t)cm_conn_user(c);

	if (u <= 0)
		return false;
	if (id)
		*id = (int32_t)((u & 0xffffffff) - 1);
	if (shard)
		*shard = (unsigned)(u >> 32);
	return true;
}

bool
mon_osd_sessions_drop(struct mon_osd_sessions *s, struct cm_conn *c, int32_t *id, unsigned *shard)
{
	int32_t i;
	unsigned k;

	if (!mon_osd_sessions_of(c, &i, &k) || i < 0 || i >= s->nosd || k >= s->osd[i].nsh ||
	    s->osd[i].sh[k].c != c)
		return false;
	shl_drop(&s->osd[i].sh[k]);
	if (id)
		*id = i;
	if (shard)
		*shard = k;
	return true;
}

void
mon_osd_sessions_update(struct mon_osd_sessions *s, const Cairn__Map__OsdMap *m,
			void (*lost)(void *arg, int32_t id), void *arg)
{
	for (int i = 0; i < s->nosd; i++) {
		const Cairn__Map__Osd *mo = mon_osd_find(m, i);
		bool dropped = false;

		for (unsigned k = 0; k < s->osd[i].nsh; k++) {
			struct mon_osd_shl *l = &s->osd[i].sh[k];

			if (!l->c || (mo && shl_current(s, l, mo, k)))
				continue;
			shl_drop(l);
			dropped = true;
		}
		if (dropped && lost)
			lost(arg, i);
	}
}
