/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A binary min-heap of events ordered by (time, sequence number): the
 * sequence number makes events due at the same time run in the order they
 * were scheduled.
 */
#include "fake_reactor.h"

struct event {
	uint64_t at_ms;
	uint64_t seq;
	cm_test_fake_fn fn;
	void *arg;
};

struct cm_test_fake {
	uint64_t now_ms;
	uint64_t next_seq;
	struct event *heap;
	size_t n, cap;
};

int
cm_test_fake_create(uint64_t start_ms, struct cm_test_fake **fp)
{
	struct cm_test_fake *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->now_ms = start_ms;
	*fp = f;
	return 0;
}

void
cm_test_fake_destroy(struct cm_test_fake *f)
{
	if (!f)
		return;
	free(f->heap);
	free(f);
}

uint64_t
cm_test_fake_now_ms(const struct cm_test_fake *f)
{
	return f->now_ms;
}

uint64_t
cm_test_fake_now_ns(const struct cm_test_fake *f)
{
	return f->now_ms * 1000000ull;
}

static bool
before(const struct event *a, const struct event *b)
{
	return a->at_ms < b->at_ms || (a->at_ms == b->at_ms && a->seq < b->seq);
}

static void
swap(struct event *a, struct event *b)
{
	struct event t = *a;

	*a = *b;
	*b = t;
}

int
cm_test_fake_at(struct cm_test_fake *f, uint64_t at_ms, cm_test_fake_fn fn, void *arg)
{
	size_t i;

	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		struct event *h = realloc(f->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		f->heap = h;
		f->cap = cap;
	}
	i = f->n++;
	f->heap[i] = (struct event){
		.at_ms = CM_MAX(at_ms, f->now_ms), .seq = f->next_seq++, .fn = fn, .arg = arg
	};
	while (i && before(&f->heap[i], &f->heap[(i - 1) / 2])) {
		swap(&f->heap[i], &f->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	return 0;
}

int
cm_test_fake_after(struct cm_test_fake *f, uint64_t delay_ms, cm_test_fake_fn fn, void *arg)
{
	return cm_test_fake_at(f, f->now_ms + delay_ms, fn, arg);
}

static struct event
pop(struct cm_test_fake *f)
{
	struct event top = f->heap[0];
	size_t i = 0;

	f->heap[0] = f->heap[--f->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < f->n && before(&f->heap[l], &f->heap[m]))
			m = l;
		if (r < f->n && before(&f->heap[r], &f->heap[m]))
			m = r;
		if (m == i)
			break;
		swap(&f->heap[i], &f->heap[m]);
		i = m;
	}
	return top;
}

unsigned
cm_test_fake_run_until(struct cm_test_fake *f, uint64_t until_ms)
{
	unsigned ran = 0;

	if (until_ms < f->now_ms)
		until_ms = f->now_ms;
	while (f->n && f->heap[0].at_ms <= until_ms) {
		struct event ev = pop(f);

		f->now_ms = ev.at_ms;
		ev.fn(f, ev.arg);
		ran++;
	}
	if (until_ms > f->now_ms)
		f->now_ms = until_ms;
	return ran;
}

size_t
cm_test_fake_pending(const struct cm_test_fake *f)
{
	return f->n;
}
