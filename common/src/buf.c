/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/buf.h"
#include "cm/crc32c.h"
#include "cm/tlcache.h"

#include <pthread.h>

#define CM_BUF_F_INLINE 1u /* data lives in the same allocation as the header */
#define CM_BUF_F_SMALL  2u /* a block of SMALL_BUF bytes from the small cache */
#define CM_BUF_F_HDR    4u /* a header from the header cache (cm_buf_wrap) */

/*
 * Small buffers (a message's front: an op is ~100 bytes packed) and the
 * headers of wrapped ones (a write's payload, a pooled region) come from
 * per-thread caches (cm/tlcache.h): one of each per op was the library's
 * last malloc per 4 KiB read or write.
 */
#define SMALL_BUF 512u

static void
block_free(void *p)
{
	free(p);
}

static struct cm_tlc_kind g_small = CM_TLC_KIND(1024, 1024, block_free);
static struct cm_tlc_kind g_hdr = CM_TLC_KIND(1024, 1024, block_free);
static __thread struct cm_tlc t_small = { .kind = &g_small };
static __thread struct cm_tlc t_hdr = { .kind = &g_hdr };

/*
 * Large buffers (payloads of 4 MiB writes and reads) come from a cache of
 * page-aligned regions in power-of-two classes instead of malloc: freshly
 * mapped memory costs a page fault and a zeroed page per 4 KiB on first
 * touch, which was a sixth of the CPU of a 4 MiB write workload. The cache
 * keeps at most POOL_MAX bytes of free regions per process.
 */
#define POOL_MIN_SHIFT 18 /* 256 KiB */
#define POOL_MAX_SHIFT 26 /* 64 MiB */
#define POOL_MAX       (128u << 20)
/*
 * Four classes per doubling (1.25, 1.5, 1.75 and 2 times the power below):
 * a 4 MiB data segment received with its page of front takes a 5 MiB
 * region, not an 8 MiB one, so the cache holds more of them.
 */
#define POOL_STEPS   4
#define POOL_CLASSES ((POOL_MAX_SHIFT - POOL_MIN_SHIFT) * POOL_STEPS + 1)

struct pool_region {
	struct pool_region *next;
};

static struct {
	pthread_mutex_t mu;
	struct pool_region *free[POOL_CLASSES];
	size_t bytes;
} g_pool = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Bytes of a region of class c. */
static size_t
pool_size(int c)
{
	int shift = POOL_MIN_SHIFT + (c + POOL_STEPS - 1) / POOL_STEPS - 1;
	int step = (c + POOL_STEPS - 1) % POOL_STEPS + 1;

	if (c == 0)
		return (size_t)1 << POOL_MIN_SHIFT;
	return ((size_t)1 << shift) + (size_t)step * (((size_t)1 << shift) / POOL_STEPS);
}

/* The smallest class holding len bytes, or -1 when len is not pooled. */
static int
pool_class(size_t len)
{
	if (len < ((size_t)1 << POOL_MIN_SHIFT) / 2 || len > ((size_t)1 << POOL_MAX_SHIFT))
		return -1;
	for (int c = 0; c < POOL_CLASSES; c++)
		if (pool_size(c) >= len)
			return c;
	return -1;
}

static void *
pool_get(int c)
{
	struct pool_region *r;
	void *p = NULL;

	pthread_mutex_lock(&g_pool.mu);
	r = g_pool.free[c];
	if (r) {
		g_pool.free[c] = r->next;
		g_pool.bytes -= pool_size(c);
	}
	pthread_mutex_unlock(&g_pool.mu);
	if (r)
		return r;
	if (posix_memalign(&p, 4096, pool_size(c)))
		return NULL;
	return p;
}

static void
pool_put(void *arg, void *data)
{
	int c = (int)(intptr_t)arg;
	struct pool_region *r = data;
	bool keep;

	pthread_mutex_lock(&g_pool.mu);
	keep = g_pool.bytes + pool_size(c) <= POOL_MAX;
	if (keep) {
		r->next = g_pool.free[c];
		g_pool.free[c] = r;
		g_pool.bytes += pool_size(c);
	}
	pthread_mutex_unlock(&g_pool.mu);
	if (!keep)
		free(data);
}

/* A pooled buffer of len bytes (page aligned), or -ENOENT when len is not pooled. */
static int
pool_alloc(size_t len, struct cm_buf **bp)
{
	int c = pool_class(len), rc;
	void *data;

	if (c < 0)
		return -ENOENT;
	data = pool_get(c);
	if (!data)
		return -ENOMEM;
	rc = cm_buf_wrap(data, len, pool_put, (void *)(intptr_t)c, bp);
	if (rc)
		pool_put((void *)(intptr_t)c, data);
	return rc;
}

int
cm_buf_alloc(size_t len, struct cm_buf **bp)
{
	struct cm_buf *b;
	int rc = pool_alloc(len, bp);

	if (rc != -ENOENT)
		return rc;
	if (len > SIZE_MAX - sizeof(*b))
		return -ENOMEM;
	if (len <= SMALL_BUF) {
		b = cm_tlc_get(&t_small);
		if (!b)
			b = malloc(sizeof(*b) + SMALL_BUF);
	} else {
		b = malloc(sizeof(*b) + len);
	}
	if (!b)
		return -ENOMEM;
	atomic_init(&b->refs, 1);
	b->flags = CM_BUF_F_INLINE | (len <= SMALL_BUF ? CM_BUF_F_SMALL : 0);
	b->len = len;
	b->data = (uint8_t *)(b + 1);
	b->free_cb = NULL;
	b->free_arg = NULL;
	b->bcrc = NULL;
	b->bcrc_off = b->bcrc_n = 0;
	*bp = b;
	return 0;
}

static void
buf_free_aligned(void *arg, void *data)
{
	(void)arg;
	free(data);
}

int
cm_buf_alloc_aligned(size_t len, size_t align, struct cm_buf **bp)
{
	void *data;
	int rc;

	if (align < sizeof(void *) || (align & (align - 1)))
		return -EINVAL;
	if (align <= 4096 && (rc = pool_alloc(len, bp)) != -ENOENT)
		return rc;
	if (posix_memalign(&data, align, len ? len : align))
		return -ENOMEM;
	rc = cm_buf_wrap(data, len, buf_free_aligned, NULL, bp);
	if (rc)
		free(data);
	return rc;
}

int
cm_buf_wrap(void *data, size_t len, cm_buf_free_cb free_cb, void *arg, struct cm_buf **bp)
{
	struct cm_buf *b = cm_tlc_get(&t_hdr);

	if (!b && !(b = malloc(sizeof(*b))))
		return -ENOMEM;
	atomic_init(&b->refs, 1);
	b->flags = CM_BUF_F_HDR;
	b->len = len;
	b->data = data;
	b->free_cb = free_cb;
	b->free_arg = arg;
	b->bcrc = NULL;
	b->bcrc_off = b->bcrc_n = 0;
	*bp = b;
	return 0;
}

struct cm_buf *
cm_buf_get(struct cm_buf *b)
{
	atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
	return b;
}

void
cm_buf_put(struct cm_buf *b)
{
	if (!b)
		return;
	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (!(b->flags & CM_BUF_F_INLINE) && b->free_cb)
		b->free_cb(b->free_arg, b->data);
	free(b->bcrc);
	if (b->flags & CM_BUF_F_SMALL)
		cm_tlc_put(&t_small, b);
	else if (b->flags & CM_BUF_F_HDR)
		cm_tlc_put(&t_hdr, b);
	else
		free(b);
}

void
cm_sgl_init(struct cm_sgl *s)
{
	s->sg = s->inline_sg;
	s->n = 0;
	s->cap = CM_SGL_INLINE;
	s->len = 0;
	s->crc = 0;
	s->has_crc = false;
}

void
cm_sgl_fini(struct cm_sgl *s)
{
	for (unsigned i = 0; i < s->n; i++)
		cm_buf_put(s->sg[i].buf);
	if (s->sg != s->inline_sg)
		free(s->sg);
	cm_sgl_init(s);
}

static int
sgl_reserve(struct cm_sgl *s, unsigned want)
{
	struct cm_sg *n;
	unsigned cap;

	if (want <= s->cap)
		return 0;
	cap = s->cap * 2;
	while (cap < want)
		cap *= 2;
	if (s->sg == s->inline_sg) {
		n = malloc(sizeof(*n) * cap);
		if (!n)
			return -ENOMEM;
		memcpy(n, s->inline_sg, sizeof(*n) * s->n);
	} else {
		n = realloc(s->sg, sizeof(*n) * cap);
		if (!n)
			return -ENOMEM;
	}
	s->sg = n;
	s->cap = cap;
	return 0;
}

int
cm_sgl_append(struct cm_sgl *s, struct cm_buf *buf, size_t off, size_t len)
{
	struct cm_sg *last;
	int rc;

	if (off > buf->len || len > buf->len - off)
		return -EINVAL;
	if (len == 0)
		return 0;
	s->has_crc = false;
	/* Merge with the previous slice when contiguous in the same buffer. */
	if (s->n > 0) {
		last = &s->sg[s->n - 1];
		if (last->buf == buf && last->off + last->len == off) {
			last->len += len;
			s->len += len;
			return 0;
		}
	}
	rc = sgl_reserve(s, s->n + 1);
	if (rc)
		return rc;
	s->sg[s->n].buf = cm_buf_get(buf);
	s->sg[s->n].off = off;
	s->sg[s->n].len = len;
	s->n++;
	s->len += len;
	return 0;
}

int
cm_sgl_append_sgl(struct cm_sgl *s, const struct cm_sgl *src)
{
	bool keep = s->n == 0 && src->has_crc;

	for (unsigned i = 0; i < src->n; i++) {
		int rc = cm_sgl_append(s, src->sg[i].buf, src->sg[i].off, src->sg[i].len);

		if (rc)
			return rc;
	}
	if (keep) {
		s->crc = src->crc;
		s->has_crc = true;
	}
	return 0;
}

int
cm_sgl_move(struct cm_sgl *dst, struct cm_sgl *src)
{
	int rc;

	if (dst->n == 0 && src->sg != src->inline_sg) {
		/* Steal the heap array. */
		if (dst->sg != dst->inline_sg)
			free(dst->sg);
		*dst = *src;
		cm_sgl_init(src);
		return 0;
	}
	rc = sgl_reserve(dst, dst->n + src->n);
	if (rc)
		return rc;
	dst->has_crc = dst->n == 0 && src->has_crc;
	dst->crc = src->crc;
	memcpy(&dst->sg[dst->n], src->sg, sizeof(*src->sg) * src->n);
	dst->n += src->n;
	dst->len += src->len;
	if (src->sg != src->inline_sg)
		free(src->sg);
	cm_sgl_init(src);
	return 0;
}

int
cm_sgl_copy_out(const struct cm_sgl *s, size_t off, void *dst, size_t len)
{
	uint8_t *d = dst;

	if (off > s->len || len > s->len - off)
		return -ERANGE;
	for (unsigned i = 0; i < s->n && len > 0; i++) {
		const struct cm_sg *g = &s->sg[i];
		size_t take;

		if (off >= g->len) {
			off -= g->len;
			continue;
		}
		take = CM_MIN(g->len - off, len);
		memcpy(d, g->buf->data + g->off + off, take);
		d += take;
		len -= take;
		off = 0;
	}
	return 0;
}

int
cm_sgl_to_iov(const struct cm_sgl *s, size_t off, struct iovec *iov, int max)
{
	int n = 0;

	for (unsigned i = 0; i < s->n && n < max; i++) {
		const struct cm_sg *g = &s->sg[i];

		if (off >= g->len) {
			off -= g->len;
			continue;
		}
		iov[n].iov_base = g->buf->data + g->off + off;
		iov[n].iov_len = g->len - off;
		n++;
		off = 0;
	}
	return n;
}

uint32_t
cm_sgl_crc32c(const struct cm_sgl *s, uint32_t crc)
{
	for (unsigned i = 0; i < s->n; i++)
		crc = cm_crc32c(crc, s->sg[i].buf->data + s->sg[i].off, s->sg[i].len);
	return crc;
}

uint32_t
cm_sgl_crc(struct cm_sgl *s)
{
	if (!s->has_crc) {
		s->crc = cm_sgl_crc32c(s, 0);
		s->has_crc = true;
	}
	return s->crc;
}

int
cm_sgl_flatten(const struct cm_sgl *s, struct cm_buf **bp)
{
	int rc = cm_buf_alloc(s->len, bp);

	if (rc)
		return rc;
	return cm_sgl_copy_out(s, 0, (*bp)->data, s->len);
}
