/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcairn: the service map (docs/design/services.md). Registrations are
 * monitor commands (`service beacon|rm|ls`); the monitors keep each under an
 * etcd lease. A thread of the cluster handle, started with the first
 * registration, renews them every ttl / 3 (a renewal that fails is tried
 * again after a second) until they are unregistered or the handle shuts
 * down.
 */
#include "client_int.h"
#include "cm/stdinc.h"

#include <jansson.h>

#define SVC_CALL_MAX_MS 10000u /* one renewal's limit */
#define SVC_RM_MAX_MS   5000u  /* a removal's (the lease ends it anyway) */

struct svc {
	TAILQ_ENTRY(svc) link;
	bool busy; /* (mu) its renewal is in flight: unregister waits */
	char *type, *name, *addr, *meta;
	unsigned ttl_s;
	uint64_t due_ms;
};

static void
svc_free(struct svc *s)
{
	if (!s)
		return;
	free(s->type);
	free(s->name);
	free(s->addr);
	free(s->meta);
	free(s);
}

/* Under ss->mu: (type, name) off the list, once no renewal of it is in flight. */
static void
svc_drop(struct cairn__svcs *ss, const char *type, const char *name)
{
	struct svc *x;

again:
	TAILQ_FOREACH(x, &ss->head, link)
		if (!strcmp(x->type, type) && !strcmp(x->name, name)) {
			if (x->busy) {
				pthread_cond_wait(&ss->cv, &ss->mu);
				goto again;
			}
			TAILQ_REMOVE(&ss->head, x, link);
			svc_free(x);
			return;
		}
}

static int
beacon(cairn_cluster_t *cl, const char *type, const char *name, const char *addr, const char *meta,
       unsigned ttl_s)
{
	char ttl[16], *out = NULL, *err = NULL;
	const char *argv[8] = { "service", "beacon", type, name, cairn_client_name(cl),
				addr,      ttl,      meta };
	int rc;

	snprintf(ttl, sizeof(ttl), "%u", ttl_s);
	/* (within the TTL, at most 10 s: a later renewal is of no use, and shutdown waits for it)
	 */
	rc = cairn__mon_command_within(cl, argv, meta && meta[0] ? 8 : 7, false, &out, &err,
				       CM_MIN(ttl_s * 1000u, SVC_CALL_MAX_MS));
	free(out);
	free(err);
	return rc;
}

static void *
svc_thread(void *arg)
{
	cairn_cluster_t *cl = arg;
	struct cairn__svcs *ss = cairn__cl_svcs(cl);

	pthread_mutex_lock(&ss->mu);
	while (!ss->stop) {
		uint64_t now = cm_now_ms(), next = now + 1000;
		struct svc *s;
		struct timespec ts;

		TAILQ_FOREACH(s, &ss->head, link)
			if (s->due_ms <= now)
				break;
		if (s) {
			/* Unlocked while it runs: busy keeps s (unregister waits for it). */
			int rc;

			s->busy = true;
			pthread_mutex_unlock(&ss->mu);
			rc = beacon(cl, s->type, s->name, s->addr, s->meta, s->ttl_s);
			pthread_mutex_lock(&ss->mu);
			s->busy = false;
			s->due_ms = cm_now_ms() + (rc ? 1000 : s->ttl_s * 1000u / 3);
			pthread_cond_broadcast(&ss->cv);
			continue;
		}
		TAILQ_FOREACH(s, &ss->head, link)
			next = CM_MIN(next, s->due_ms);
		now = cm_now_ms();
		if (next <= now)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &ts); /* (the condition's clock: cairn__svc_init) */
		ts.tv_sec += (time_t)((next - now) / 1000);
		ts.tv_nsec += (long)((next - now) % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&ss->cv, &ss->mu, &ts);
	}
	pthread_mutex_unlock(&ss->mu);
	return NULL;
}

void
cairn__svc_init(struct cairn__svcs *ss)
{
	pthread_condattr_t ca;

	memset(ss, 0, sizeof(*ss));
	pthread_mutex_init(&ss->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* (a wall-clock jump stalls nothing) */
	pthread_cond_init(&ss->cv, &ca);
	pthread_condattr_destroy(&ca);
	TAILQ_INIT(&ss->head);
}

void
cairn__svc_stop(struct cairn__svcs *ss)
{
	struct svc *s;

	pthread_mutex_lock(&ss->mu);
	ss->stop = true;
	pthread_cond_broadcast(&ss->cv);
	pthread_mutex_unlock(&ss->mu);
	if (ss->started)
		pthread_join(ss->th, NULL);
	ss->started = false;
	while ((s = TAILQ_FIRST(&ss->head))) {
		TAILQ_REMOVE(&ss->head, s, link);
		svc_free(s);
	}
	pthread_mutex_destroy(&ss->mu);
	pthread_cond_destroy(&ss->cv);
}

int
cairn_service_register(cairn_cluster_t *cl, const char *type, const char *name, const char *addr,
		       const char *meta, unsigned ttl_s)
{
	struct cairn__svcs *ss = cairn__cl_svcs(cl);
	struct svc *s;
	int rc;

	if (!type || !name || !addr || ttl_s < 2 || ttl_s > 3600)
		return -EINVAL;
	if (!meta)
		meta = "";
	rc = beacon(cl, type, name, addr, meta, ttl_s);
	if (rc)
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->type = strdup(type)) || !(s->name = strdup(name)) ||
	    !(s->addr = strdup(addr)) || !(s->meta = strdup(meta))) {
		svc_free(s);
		return -ENOMEM;
	}
	s->ttl_s = ttl_s;
	s->due_ms = cm_now_ms() + ttl_s * 1000u / 3;
	pthread_mutex_lock(&ss->mu);
	svc_drop(ss, type, name);
	TAILQ_INSERT_TAIL(&ss->head, s, link);
	if (!ss->started && !ss->stop) {
		rc = pthread_create(&ss->th, NULL, svc_thread, cl);
		ss->started = rc == 0;
		rc = -rc;
	}
	pthread_cond_broadcast(&ss->cv);
	pthread_mutex_unlock(&ss->mu);
	return rc;
}

int
cairn_service_unregister(cairn_cluster_t *cl, const char *type, const char *name)
{
	struct cairn__svcs *ss = cairn__cl_svcs(cl);
	const char *argv[5] = { "service", "rm", type, name, cairn_client_name(cl) };
	char *out = NULL, *err = NULL;
	int rc;

	if (!type || !name)
		return -EINVAL;
	pthread_mutex_lock(&ss->mu);
	svc_drop(ss, type, name); /* (after a renewal in flight: the removal comes last) */
	pthread_mutex_unlock(&ss->mu);
	rc = cairn__mon_command_within(cl, argv, 5, false, &out, &err, SVC_RM_MAX_MS);
	free(out);
	free(err);
	return rc;
}

void
cairn_services_free(struct cairn_service *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].type);
		free(v[i].name);
		free(v[i].addr);
		free(v[i].meta);
		free(v[i].instance);
	}
	free(v);
}

static char *
jdup(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return strdup(s ? s : "");
}

int
cairn_service_list(cairn_cluster_t *cl, const char *type, struct cairn_service **v, size_t *n)
{
	const char *argv[3] = { "service", "ls", type };
	char *out = NULL, *err = NULL;
	json_t *root, *a;
	json_error_t je;
	struct cairn_service *r;
	size_t k = 0, cnt;
	int rc;

	*v = NULL;
	*n = 0;
	rc = cairn_mon_command(cl, argv, type ? 3 : 2, true, &out, &err);
	free(err);
	if (rc) {
		free(out);
		return rc;
	}
	root = json_loads(out, 0, &je);
	free(out);
	a = json_object_get(root, "services");
	if (!json_is_array(a)) {
		json_decref(root);
		return -EBADMSG;
	}
	cnt = json_array_size(a);
	r = calloc(cnt + 1, sizeof(*r));
	for (; r && k < cnt; k++) {
		json_t *e = json_array_get(a, k);
		json_int_t ttl = json_integer_value(json_object_get(e, "ttl"));

		r[k].type = jdup(e, "type");
		r[k].name = jdup(e, "name");
		r[k].addr = jdup(e, "addr");
		r[k].meta = jdup(e, "meta");
		r[k].instance = jdup(e, "instance");
		r[k].ttl_s = ttl > 0 && ttl <= 3600 ? (unsigned)ttl : 0;
		if (!r[k].type || !r[k].name || !r[k].addr || !r[k].meta || !r[k].instance) {
			k++;
			break;
		}
	}
	json_decref(root);
	if (!r || k < cnt || (cnt && !r[cnt - 1].instance)) {
		cairn_services_free(r, k);
		return -ENOMEM;
	}
	*v = r;
	*n = cnt;
	return 0;
}

int
cairn_mds_beacon(cairn_cluster_t *cl, const char *fs, const char *name, const char *addr,
		 unsigned ttl_s, int *rank, uint64_t *epoch)
{
	char ttl[16], *out = NULL, *err = NULL;
	const char *argv[7] = { "mds", "beacon", fs, name, cairn_client_name(cl), addr, ttl };
	long long r = -1;
	unsigned long long e = 0, fe = 0;
	int rc;

	*rank = -1;
	if (!fs || !name || !addr || ttl_s < 2 || ttl_s > 3600)
		return -EINVAL;
	snprintf(ttl, sizeof(ttl), "%u", ttl_s);
	rc = cairn__mon_command_within(cl, argv, 7, false, &out, &err,
				       CM_MIN(ttl_s * 1000u, SVC_CALL_MAX_MS));
	/* "rank R epoch E fence_epoch F" */
	if (!rc && (sscanf(out, "rank %lld epoch %llu fence_epoch %llu", &r, &e, &fe) != 3 ||
		    r < -1 || r > 64))
		rc = -EBADMSG;
	free(out);
	free(err);
	if (rc)
		return rc;
	/* Our rank was taken from a holder the mons fenced: write only with that map. */
	if (r >= 0 && fe)
		cairn_set_epoch_barrier(cl, fe);
	*rank = (int)r;
	if (epoch)
		*epoch = e;
	return 0;
}
