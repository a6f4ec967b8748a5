/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/metrics.h"

#include <pthread.h>

enum metric_kind { MK_COUNTER, MK_GAUGE, MK_HIST, MK_GAUGE_FN };

/* Upper bounds in nanoseconds, matching the "le" labels below. */
static const uint64_t g_bounds_ns[CM_HIST_BUCKETS] = {
	10000,     25000,      50000,      100000,     250000,      500000,    1000000,
	2500000,   5000000,    10000000,   25000000,   50000000,    100000000, 250000000,
	500000000, 1000000000, 2500000000, 5000000000, 10000000000,
};
static const char *const g_bounds_le[CM_HIST_BUCKETS] = {
	"1e-05",  "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001",
	"0.0025", "0.005",   "0.01",  "0.025",  "0.05",    "0.1",    "0.25",
	"0.5",    "1",       "2.5",   "5",      "10",
};

struct metric {
	enum metric_kind kind;
	char *name;
	char *labels;
	char *help;

	union {
		struct cm_counter c;
		struct cm_gauge g;
		struct cm_histogram h;

		struct {
			cm_gauge_fn fn;
			void *arg;
			bool own; /* arg is freed with the registry */
		} f;
	} u;
	struct metric *next;
};

struct cm_metrics {
	pthread_mutex_t lock;
	struct metric *head, *tail;
};

int
cm_metrics_create(struct cm_metrics **mp)
{
	struct cm_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	*mp = m;
	return 0;
}

void
cm_metrics_destroy(struct cm_metrics *m)
{
	struct metric *x, *n;

	if (!m)
		return;
	for (x = m->head; x; x = n) {
		n = x->next;
		if (x->kind == MK_GAUGE_FN && x->u.f.own)
			free(x->u.f.arg);
		free(x->name);
		free(x->labels);
		free(x->help);
		free(x);
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static bool
valid_name(const char *s)
{
	if (!s || !*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++) {
		char ch = *s;

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == ':'))
			return false;
	}
	return true;
}

static struct metric *
reg(struct cm_metrics *m, enum metric_kind kind, const char *name, const char *labels,
    const char *help)
{
	struct metric *x;

	if (!valid_name(name))
		return NULL;
	labels = labels ? labels : "";
	pthread_mutex_lock(&m->lock);
	for (x = m->head; x; x = x->next) {
		if (x->kind == kind && strcmp(x->name, name) == 0 && strcmp(x->labels, labels) == 0)
			goto out;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		goto out;
	x->kind = kind;
	x->name = strdup(name);
	x->labels = strdup(labels);
	x->help = strdup(help ? help : "");
	if (!x->name || !x->labels || !x->help) {
		free(x->name);
		free(x->labels);
		free(x->help);
		free(x);
		x = NULL;
		goto out;
	}
	if (m->tail)
		m->tail->next = x;
	else
		m->head = x;
	m->tail = x;
out:
	pthread_mutex_unlock(&m->lock);
	return x;
}

struct cm_counter *
cm_metrics_counter(struct cm_metrics *m, const char *name, const char *labels, const char *help)
{
	struct metric *x = reg(m, MK_COUNTER, name, labels, help);

	return x ? &x->u.c : NULL;
}

struct cm_gauge *
cm_metrics_gauge(struct cm_metrics *m, const char *name, const char *labels, const char *help)
{
	struct metric *x = reg(m, MK_GAUGE, name, labels, help);

	return x ? &x->u.g : NULL;
}

struct cm_histogram *
cm_metrics_histogram(struct cm_metrics *m, const char *name, const char *labels, const char *help)
{
	struct metric *x = reg(m, MK_HIST, name, labels, help);

	return x ? &x->u.h : NULL;
}

static int
gauge_fn(struct cm_metrics *m, const char *name, const char *labels, const char *help,
	 cm_gauge_fn fn, void *arg, bool own)
{
	struct metric *x;

	if (!valid_name(name))
		return -EINVAL;
	x = reg(m, MK_GAUGE_FN, name, labels, help);
	if (!x)
		return -ENOMEM;
	x->u.f.fn = fn;
	x->u.f.arg = arg;
	x->u.f.own = own;
	return 0;
}

int
cm_metrics_gauge_fn(struct cm_metrics *m, const char *name, const char *labels, const char *help,
		    cm_gauge_fn fn, void *arg)
{
	return gauge_fn(m, name, labels, help, fn, arg, false);
}

int
cm_metrics_gauge_fn_owned(struct cm_metrics *m, const char *name, const char *labels,
			  const char *help, cm_gauge_fn fn, void *arg)
{
	return gauge_fn(m, name, labels, help, fn, arg, true);
}

void
cm_histogram_observe_ns(struct cm_histogram *h, uint64_t ns)
{
	unsigned i = 0;

	while (i < CM_HIST_BUCKETS && ns > g_bounds_ns[i])
		i++;
	atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

uint64_t
cm_histogram_quantile_ns(const struct cm_histogram *h, double q)
{
	uint64_t total = 0, want, seen = 0;
	uint64_t counts[CM_HIST_BUCKETS + 1];

	for (unsigned i = 0; i <= CM_HIST_BUCKETS; i++) {
		counts[i] = atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
		total += counts[i];
	}
	if (!total)
		return 0;
	want = (uint64_t)(q * (double)total + 0.5);
	if (want == 0)
		want = 1;
	for (unsigned i = 0; i <= CM_HIST_BUCKETS; i++) {
		uint64_t lo = i ? g_bounds_ns[i - 1] : 0;
		uint64_t hi = i < CM_HIST_BUCKETS ? g_bounds_ns[i] : g_bounds_ns[i - 1] * 2;

		if (seen + counts[i] >= want) {
			/* Linear within the bucket. */
			double f = (double)(want - seen) / (double)counts[i];

			return lo + (uint64_t)((double)(hi - lo) * f);
		}
		seen += counts[i];
	}
	return g_bounds_ns[CM_HIST_BUCKETS - 1];
}

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap * 2 + (size_t)n;
		char *np = realloc(b->p, cap);

		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
}

static void
render_header(struct sbuf *b, const struct metric *x, const struct metric *prev, const char *type)
{
	/* One HELP/TYPE per name, even with several label sets. */
	if (prev && strcmp(prev->name, x->name) == 0)
		return;
	sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", x->name, x->help, x->name, type);
}

int
cm_metrics_render(struct cm_metrics *m, char **out, size_t *len)
{
	struct sbuf b = { .cap = 4096 };
	const struct metric *prev = NULL;

	b.p = malloc(b.cap);
	if (!b.p)
		return -ENOMEM;
	b.p[0] = '\0';
	pthread_mutex_lock(&m->lock);
	for (const struct metric *x = m->head; x; prev = x, x = x->next) {
		const char *l = x->labels;
		bool hl = l[0] != '\0';

		switch (x->kind) {
		case MK_COUNTER:
			render_header(&b, x, prev, "counter");
			sb_printf(&b, "%s%s%s%s %" PRIu64 "\n", x->name, hl ? "{" : "", l,
				  hl ? "}" : "", atomic_load(&x->u.c.v));
			break;
		case MK_GAUGE:
			render_header(&b, x, prev, "gauge");
			sb_printf(&b, "%s%s%s%s %" PRId64 "\n", x->name, hl ? "{" : "", l,
				  hl ? "}" : "", atomic_load(&x->u.g.v));
			break;
		case MK_GAUGE_FN:
			render_header(&b, x, prev, "gauge");
			sb_printf(&b, "%s%s%s%s %.17g\n", x->name, hl ? "{" : "", l, hl ? "}" : "",
				  x->u.f.fn(x->u.f.arg));
			break;
		case MK_HIST: {
			uint64_t cum = 0;

			render_header(&b, x, prev, "histogram");
			for (unsigned i = 0; i <= CM_HIST_BUCKETS; i++) {
				cum += atomic_load(&x->u.h.bucket[i]);
				sb_printf(&b, "%s_bucket{%s%sle=\"%s\"} %" PRIu64 "\n", x->name, l,
					  hl ? "," : "",
					  i < CM_HIST_BUCKETS ? g_bounds_le[i] : "+Inf", cum);
			}
			sb_printf(&b, "%s_sum%s%s%s %.9f\n", x->name, hl ? "{" : "", l,
				  hl ? "}" : "", (double)atomic_load(&x->u.h.sum_ns) / 1e9);
			sb_printf(&b, "%s_count%s%s%s %" PRIu64 "\n", x->name, hl ? "{" : "", l,
				  hl ? "}" : "", atomic_load(&x->u.h.count));
			break;
		}
		}
	}
	pthread_mutex_unlock(&m->lock);
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}
