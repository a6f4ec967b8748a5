/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Forwarding (cm/msgr.h, cm_conn_forward): one session with a peer served
 * by several reactors. The real session stays on its own thread; each
 * other reactor that serves some of its messages gets a proxy, a cm_conn
 * of that reactor's messenger without a socket or queues.
 *
 * Threads. A cm_fwd is shared: its refs are atomic (one for the real
 * session while it lasts, one per proxy, one per post in flight); `real`
 * and the proxy table are touched on the real session's thread only; a
 * proxy's own fields on its thread only. Messages and events go to a
 * proxy's thread by reactor posts, in order; what a proxy sends goes back
 * the same way, so its sends leave in order. When the real session ends it
 * posts each proxy a CM_CONN_CLOSED (allocated with the proxy, so that post
 * cannot fail), the last thing that proxy gets; that post drops the
 * proxy's link reference, and the proxy goes at its last put.
 */
#include "msgr_int.h"
#include "cm/err.h"
#include "cm/log.h"

#include <stdatomic.h>

CM_LOG_SUBSYS(msgr);

struct fwd_in; /* to a proxy's thread: a message, or an event */

struct cm_fwd {
	atomic_uint refs;
	atomic_bool up;                   /* the real session is open */
	struct cm_reactor *r;             /* the real session's */
	struct cm_conn *real;             /* NULL once its session ended */
	struct cm_conn *px[CM_FWD_SLOTS]; /* the proxies, by slot */
	struct cm_reactor *px_r[CM_FWD_SLOTS];
	uint64_t px_gen[CM_FWD_SLOTS];       /* the real's auth_gen each was last given */
	struct fwd_in *px_bye[CM_FWD_SLOTS]; /* each proxy's CM_CONN_CLOSED, made with it */
};

struct fwd_in {
	struct cm_reactor_msg rm;
	struct cm_fwd *f;
	unsigned slot;
	struct cm_msg *m;          /* NULL: an event */
	struct cm_conn_auth *auth; /* the proxy's new auth, or NULL */
	enum cm_conn_event ev;
	int rc;
	bool bye; /* the last one: the proxy's link reference goes */
};

struct fwd_out { /* to the real session's thread: a message, or (NULL) a reset */
	struct cm_reactor_msg rm;
	struct cm_fwd *f;
	struct cm_msg *m;
};

static void
fwd_put(struct cm_fwd *f)
{
	if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) == 1)
		free(f);
}

static void
fwd_hold(struct cm_fwd *f)
{
	atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
}

static void
auth_free(struct cm_conn_auth *a)
{
	if (a) {
		cm_caps_fini(&a->caps);
		free(a);
	}
}

static struct cm_conn_auth *
auth_dup(const struct cm_conn_auth *src)
{
	struct cm_conn_auth *a = malloc(sizeof(*a));

	if (!a)
		return NULL;
	*a = *src;
	if (cm_caps_copy(&a->caps, &src->caps)) {
		free(a);
		return NULL;
	}
	return a;
}

/* ---------------- on a proxy's thread ---------------- */

static void
in_free(struct fwd_in *in)
{
	struct cm_fwd *f = in->f;

	if (in->m)
		cm_msg_destroy(in->m);
	auth_free(in->auth);
	if (in->bye)
		cm_conn_put(f->px[in->slot]); /* (may free the proxy: it holds a ref of f) */
	free(in);
	fwd_put(f);
}

static void
in_run(void *arg)
{
	struct fwd_in *in = arg;
	struct cm_conn *p = in->f->px[in->slot];
	struct cm_msgr *m = p->m;

	if (in->auth) {
		cm_caps_fini(&p->auth.caps);
		p->auth = *in->auth; /* (the caps' memory moves to p) */
		free(in->auth);
		in->auth = NULL;
	}
	if (in->bye)
		p->state = C_CLOSED;
	if (in->m) {
		struct cm_msg *msg = in->m;

		in->m = NULL;
		if (p->state != C_CLOSED && !p->closed_by_app && !m->destroying && m->o.ops.on_msg)
			m->o.ops.on_msg(m->o.ops_arg, p, msg);
		else
			cm_msg_destroy(msg);
	} else if (!p->closed_by_app && !m->destroying && m->o.ops.on_event) {
		cm_conn_get(p);
		m->o.ops.on_event(m->o.ops_arg, p, in->ev, in->rc);
		cm_conn_put(p);
	}
	in_free(in);
}

static void
in_drop(void *arg)
{
	in_free(arg); /* (the proxy's reactor went with this queued) */
}

bool
cm__fwd_up(const struct cm_conn *p)
{
	return p->state == C_OPEN && atomic_load_explicit(&p->fwd->up, memory_order_relaxed);
}

static void
out_free(struct fwd_out *o)
{
	if (o->m)
		cm_msg_destroy(o->m);
	fwd_put(o->f);
	free(o);
}

static void
out_run(void *arg)
{
	struct fwd_out *o = arg;
	struct cm_conn *c = o->f->real;

	if (o->m) {
		if (c && cm__conn_send(c, o->m, true) == 0)
			o->m = NULL; /* (the session owns it) */
	} else if (c) {
		(void)cm_conn_reset_socket(c);
	}
	out_free(o);
}

static void
out_drop(void *arg)
{
	out_free(arg);
}

static int
out_post(struct cm_conn *p, struct cm_msg *m)
{
	struct fwd_out *o;

	if (p->state == C_CLOSED || p->closed_by_app)
		return -CM_ECLOSED;
	o = malloc(sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->f = p->fwd;
	o->m = m;
	o->rm = (struct cm_reactor_msg){ .fn = out_run, .arg = o, .drop = out_drop };
	fwd_hold(o->f);
	cm_reactor_post(o->f->r, &o->rm);
	return 0;
}

int
cm__fwd_send(struct cm_conn *p, struct cm_msg *m)
{
	return out_post(p, m);
}

int
cm__fwd_reset(struct cm_conn *p)
{
	return out_post(p, NULL);
}

void
cm__fwd_proxy_free(struct cm_conn *p)
{
	struct cm_fwd *f = p->fwd;

	cm_caps_fini(&p->auth.caps);
	free(p);
	fwd_put(f);
}

/* ---------------- on the real session's thread ---------------- */

static void
in_post(struct cm_fwd *f, struct fwd_in *in)
{
	in->rm = (struct cm_reactor_msg){ .fn = in_run, .arg = in, .drop = in_drop };
	in->f = f;
	fwd_hold(f);
	cm_reactor_post(f->px_r[in->slot], &in->rm);
}

/* Slot's proxy of c (made now on first use). \return it, or NULL: out of memory. */
static struct cm_conn *
proxy_get(struct cm_conn *c, struct cm_msgr *to, unsigned slot)
{
	struct cm_fwd *f = c->fwd;
	struct cm_conn *p;
	struct fwd_in *bye;

	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return NULL;
		atomic_init(&f->refs, 1); /* c's */
		atomic_init(&f->up, c->state == C_OPEN);
		f->r = c->m->r;
		f->real = c;
		c->fwd = f;
	}
	if (f->px[slot])
		return f->px[slot];
	p = calloc(1, sizeof(*p));
	bye = calloc(1, sizeof(*bye));
	if (!p || !bye) {
		free(p);
		free(bye);
		return NULL;
	}
	p->m = to;
	p->refs = 1; /* the real session's link, until the proxy's CM_CONN_CLOSED */
	p->state = C_OPEN;
	p->proxy = true;
	p->fwd = f;
	p->lossless = c->lossless;
	p->addr = c->addr;
	p->addrlen = c->addrlen;
	snprintf(p->addr_str, sizeof(p->addr_str), "%s", c->addr_str);
	snprintf(p->peer, sizeof(p->peer), "%s", c->peer);
	TAILQ_INIT(&p->out_q);
	TAILQ_INIT(&p->unacked);
	fwd_hold(f); /* p's */
	bye->slot = slot;
	bye->ev = CM_CONN_CLOSED;
	bye->rc = -CM_ECLOSED;
	bye->bye = true;
	f->px[slot] = p;
	f->px_r[slot] = to->r;
	f->px_gen[slot] = c->auth_gen + 1; /* (its first message brings the auth) */
	f->px_bye[slot] = bye;
	return p;
}

int
cm_conn_forward(struct cm_conn *c, struct cm_msgr *to, unsigned slot, struct cm_msg *m)
{
	struct fwd_in *in;
	struct cm_fwd *f;

	if (slot >= CM_FWD_SLOTS || c->proxy || !to || c->state == C_CLOSED) {
		cm_msg_destroy(m);
		return -EINVAL;
	}
	if (!proxy_get(c, to, slot) || !(in = calloc(1, sizeof(*in)))) {
		cm_msg_destroy(m);
		return -ENOMEM;
	}
	f = c->fwd;
	if (f->px_gen[slot] != c->auth_gen) {
		in->auth = auth_dup(&c->auth);
		if (!in->auth) {
			free(in);
			cm_msg_destroy(m);
			return -ENOMEM;
		}
		f->px_gen[slot] = c->auth_gen;
	}
	in->slot = slot;
	in->m = m;
	c->m->st.forwarded++;
	in_post(f, in);
	return 0;
}

void
cm__fwd_event(struct cm_conn *c, enum cm_conn_event ev, int rc)
{
	struct cm_fwd *f = c->fwd;

	atomic_store_explicit(&f->up, c->state == C_OPEN, memory_order_relaxed);
	if (ev != CM_CONN_RESET)
		return; /* (CLOSED and FAILED come by cm__fwd_detach; UP and DOWN: `up`) */
	for (unsigned k = 0; k < CM_FWD_SLOTS; k++) {
		struct fwd_in *in;

		if (!f->px[k])
			continue;
		in = calloc(1, sizeof(*in));
		if (!in) {
			CM_LOG_RL(CM_LOG_WARN,
				  "peer=%s: a reset not told to a proxy: out of memory", c->peer);
			continue;
		}
		in->slot = k;
		in->ev = ev;
		in->rc = rc;
		in_post(f, in);
	}
}

void
cm__fwd_detach(struct cm_conn *c)
{
	struct cm_fwd *f = c->fwd;

	c->fwd = NULL;
	f->real = NULL;
	atomic_store_explicit(&f->up, false, memory_order_relaxed);
	for (unsigned k = 0; k < CM_FWD_SLOTS; k++)
		if (f->px[k])
			in_post(f, f->px_bye[k]);
	fwd_put(f); /* c's */
}
