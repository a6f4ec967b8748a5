/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Metrics: counters, gauges and latency histograms in a registry, rendered in
 * the Prometheus text format (version 0.0.4) and served at /metrics by every
 * daemon (cm_http_metrics).
 *
 * Updates are lock-free (relaxed atomics) and safe from any thread; a metric
 * lives as long as its registry. Registration takes a lock and allocates: do
 * it at start-up, not per I/O.
 *
 * Names follow Prometheus rules ([a-zA-Z_:][a-zA-Z0-9_:]*); an optional fixed
 * label set is given as text, e.g. "backend=\"io_uring\"".
 */
#ifndef CM_METRICS_H
#define CM_METRICS_H

#include "cm/stdinc.h"

struct cm_metrics;

struct cm_counter {
	_Atomic uint64_t v;
};

struct cm_gauge {
	_Atomic int64_t v;
};

/* Buckets (upper bounds, seconds): 10us .. 10s, then +Inf. */
#define CM_HIST_BUCKETS 19

struct cm_histogram {
	_Atomic uint64_t bucket[CM_HIST_BUCKETS + 1]; /* last = +Inf */
	_Atomic uint64_t sum_ns;
	_Atomic uint64_t count;
};

/* A gauge read at render time. */
typedef double (*cm_gauge_fn)(void *arg);

/* \return 0, -ENOMEM. */
int cm_metrics_create(struct cm_metrics **mp);
void cm_metrics_destroy(struct cm_metrics *m);

/*
 * Register and return a metric (NULL on -ENOMEM or an invalid name). The same
 * name + labels twice returns the same metric.
 */
struct cm_counter *cm_metrics_counter(struct cm_metrics *m, const char *name, const char *labels,
				      const char *help);
struct cm_gauge *cm_metrics_gauge(struct cm_metrics *m, const char *name, const char *labels,
				  const char *help);
struct cm_histogram *cm_metrics_histogram(struct cm_metrics *m, const char *name,
					  const char *labels, const char *help);
/* \return 0, -EINVAL (bad name), -ENOMEM. */
int cm_metrics_gauge_fn(struct cm_metrics *m, const char *name, const char *labels,
			const char *help, cm_gauge_fn fn, void *arg);
/* The same; arg (malloc'd) is freed by cm_metrics_destroy. */
int cm_metrics_gauge_fn_owned(struct cm_metrics *m, const char *name, const char *labels,
			      const char *help, cm_gauge_fn fn, void *arg);

static inline void
cm_counter_add(struct cm_counter *c, uint64_t n)
{
	atomic_fetch_add_explicit(&c->v, n, memory_order_relaxed);
}

static inline void
cm_gauge_set(struct cm_gauge *g, int64_t v)
{
	atomic_store_explicit(&g->v, v, memory_order_relaxed);
}

static inline void
cm_gauge_add(struct cm_gauge *g, int64_t d)
{
	atomic_fetch_add_explicit(&g->v, d, memory_order_relaxed);
}

/* Record one latency. */
void cm_histogram_observe_ns(struct cm_histogram *h, uint64_t ns);

/* Quantile estimate (0..1) from the buckets, in nanoseconds; 0 if empty. */
uint64_t cm_histogram_quantile_ns(const struct cm_histogram *h, double q);

/*
 * Render every metric. *out is malloc'd (caller frees), *len its length.
 * \return 0, -ENOMEM.
 */
int cm_metrics_render(struct cm_metrics *m, char **out, size_t *len);

#endif
