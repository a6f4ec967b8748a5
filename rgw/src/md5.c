/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MD5 (RFC 1321), one stream per lane (rgw/md5.h, docs/design/rgw.md §9.4).
 *
 * DESIGN: a flush turns every waiting stream into a job (its state, its
 * whole blocks); the bytes short of a block are kept in the stream's part[]
 * (copied, so the caller's buffer is free after the flush). Jobs run on 16
 * lanes: each pass runs as many blocks as the shortest live lane has left,
 * then lanes that finished take the next jobs; a lane without a job reads a
 * zero block and its result is thrown away. The 16 lanes' blocks are
 * transposed in registers into 16 vectors, one per message word (element
 * l holds lane l's word); the 64 steps then run as in RFC 1321, each on all
 * lanes, with AVX-512's ternary logic for F, G, H and I and its rotate.
 */
#include "rgw/md5.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define MD5_X16 1
#endif

static const uint32_t K[64] = {
	0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613,
	0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193,
	0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d,
	0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
	0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122,
	0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
	0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244,
	0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
	0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
	0xeb86d391,
};

/* ---- the portable kernel: one block of one stream ---- */

#define F(b, c, d) (((b) & (c)) | (~(b) & (d)))
#define G(b, c, d) (((b) & (d)) | ((c) & ~(d)))
#define H(b, c, d) ((b) ^ (c) ^ (d))
#define I(b, c, d) ((c) ^ ((b) | ~(d)))
#define ROTL(x, s) (((x) << (s)) | ((x) >> (32 - (s))))

#define STEP(fn, a, b, c, d, w, k, s)           \
	do {                                    \
		(a) += fn(b, c, d) + (w) + (k); \
		(a) = ROTL(a, s) + (b);         \
	} while (0)

static inline uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void
md5_block(uint32_t h[4], const uint8_t *p)
{
	uint32_t w[16], a = h[0], b = h[1], c = h[2], d = h[3];

	for (unsigned i = 0; i < 16; i++)
		w[i] = le32(p + 4 * i);
	for (unsigned i = 0; i < 16; i += 4) {
		STEP(F, a, b, c, d, w[i], K[i], 7);
		STEP(F, d, a, b, c, w[i + 1], K[i + 1], 12);
		STEP(F, c, d, a, b, w[i + 2], K[i + 2], 17);
		STEP(F, b, c, d, a, w[i + 3], K[i + 3], 22);
	}
	for (unsigned i = 16; i < 32; i += 4) {
		STEP(G, a, b, c, d, w[(5 * i + 1) & 15], K[i], 5);
		STEP(G, d, a, b, c, w[(5 * i + 6) & 15], K[i + 1], 9);
		STEP(G, c, d, a, b, w[(5 * i + 11) & 15], K[i + 2], 14);
		STEP(G, b, c, d, a, w[(5 * i + 16) & 15], K[i + 3], 20);
	}
	for (unsigned i = 32; i < 48; i += 4) {
		STEP(H, a, b, c, d, w[(3 * i + 5) & 15], K[i], 4);
		STEP(H, d, a, b, c, w[(3 * i + 8) & 15], K[i + 1], 11);
		STEP(H, c, d, a, b, w[(3 * i + 11) & 15], K[i + 2], 16);
		STEP(H, b, c, d, a, w[(3 * i + 14) & 15], K[i + 3], 23);
	}
	for (unsigned i = 48; i < 64; i += 4) {
		STEP(I, a, b, c, d, w[(7 * i) & 15], K[i], 6);
		STEP(I, d, a, b, c, w[(7 * i + 7) & 15], K[i + 1], 10);
		STEP(I, c, d, a, b, w[(7 * i + 14) & 15], K[i + 2], 15);
		STEP(I, b, c, d, a, w[(7 * i + 21) & 15], K[i + 3], 21);
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
}

/* ---- the 16-lane kernel ---- */

struct job {
	uint32_t *h;
	const uint8_t *p;
	size_t nb; /* blocks */
};

#define LANES 16

#ifdef MD5_X16
/* ternary-logic tables (a ? b : c forms, over the arguments b, c, d) */
#define TF 0xca /* b ? c : d */
#define TG 0xe4 /* d ? b : c */
#define TH 0x96 /* b ^ c ^ d */
#define TI 0x39 /* c ^ (b | ~d) */

#define VSTEP(t, a, b, c, d, w, k, s)                                                            \
	do {                                                                                     \
		(a) = _mm512_add_epi32((a), _mm512_add_epi32((w), _mm512_set1_epi32((int)(k)))); \
		(a) = _mm512_add_epi32((a), _mm512_ternarylogic_epi32((b), (c), (d), (t)));      \
		(a) = _mm512_add_epi32(_mm512_rol_epi32((a), (s)), (b));                         \
	} while (0)

#define VROUND(t, i, g0, g1, g2, g3, s0, s1, s2, s3)         \
	do {                                                 \
		VSTEP(t, a, b, c, d, w[g0], K[i], s0);       \
		VSTEP(t, d, a, b, c, w[g1], K[(i) + 1], s1); \
		VSTEP(t, c, d, a, b, w[g2], K[(i) + 2], s2); \
		VSTEP(t, b, c, d, a, w[g3], K[(i) + 3], s3); \
	} while (0)

/*
 * The 16 message words of one block per lane, word j of lane l in w[j]'s
 * element l: a 16 x 16 transpose of the lanes' blocks, in four stages of
 * shuffles (32-bit, 64-bit, then 128-bit lanes twice).
 */
__attribute__((target("avx512f"))) static inline void
load_words(__m512i w[16], const uint8_t *const p[LANES], unsigned live)
{
	__m512i r[16], t[16];

	for (unsigned l = 0; l < LANES; l++)
		r[l] = live & (1u << l) ? _mm512_loadu_si512(p[l]) : _mm512_setzero_si512();
	/* t[2i], t[2i+1]: rows 2i, 2i+1 interleaved by dwords (within each 128-bit lane) */
	for (unsigned i = 0; i < 8; i++) {
		t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
	}
	/* r[4i+k]: in 128-bit lane q, words 4q+k of rows 4i..4i+3 */
	for (unsigned i = 0; i < 4; i++) {
		r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
		r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
		r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
		r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
	}
	/* for each k: a 4 x 4 transpose of 128-bit lanes over r[k], r[4+k], r[8+k], r[12+k] */
	for (unsigned k = 0; k < 4; k++) {
		__m512i v0 = _mm512_shuffle_i32x4(r[k], r[4 + k], 0x44);
		__m512i v1 = _mm512_shuffle_i32x4(r[k], r[4 + k], 0xee);
		__m512i v2 = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0x44);
		__m512i v3 = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0xee);

		w[k] = _mm512_shuffle_i32x4(v0, v2, 0x88);
		w[4 + k] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
		w[8 + k] = _mm512_shuffle_i32x4(v1, v3, 0x88);
		w[12 + k] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
	}
}

/*
 * nb blocks on every lane whose bit is set in live; st[r][l] is word r of
 * lane l's state; p[l] moves on by nb blocks for live lanes.
 */
__attribute__((target("avx512f"))) static void
md5_x16(uint32_t st[4][LANES], const uint8_t *p[LANES], unsigned live, size_t nb)
{
	__m512i a0 = _mm512_load_si512(st[0]), b0 = _mm512_load_si512(st[1]);
	__m512i c0 = _mm512_load_si512(st[2]), d0 = _mm512_load_si512(st[3]);

	for (size_t n = 0; n < nb; n++) {
		__m512i w[16], a = a0, b = b0, c = c0, d = d0;

		load_words(w, p, live);
		for (unsigned l = 0; l < LANES; l++)
			if (live & (1u << l))
				p[l] += 64;
		VROUND(TF, 0, 0, 1, 2, 3, 7, 12, 17, 22);
		VROUND(TF, 4, 4, 5, 6, 7, 7, 12, 17, 22);
		VROUND(TF, 8, 8, 9, 10, 11, 7, 12, 17, 22);
		VROUND(TF, 12, 12, 13, 14, 15, 7, 12, 17, 22);
		VROUND(TG, 16, 1, 6, 11, 0, 5, 9, 14, 20);
		VROUND(TG, 20, 5, 10, 15, 4, 5, 9, 14, 20);
		VROUND(TG, 24, 9, 14, 3, 8, 5, 9, 14, 20);
		VROUND(TG, 28, 13, 2, 7, 12, 5, 9, 14, 20);
		VROUND(TH, 32, 5, 8, 11, 14, 4, 11, 16, 23);
		VROUND(TH, 36, 1, 4, 7, 10, 4, 11, 16, 23);
		VROUND(TH, 40, 13, 0, 3, 6, 4, 11, 16, 23);
		VROUND(TH, 44, 9, 12, 15, 2, 4, 11, 16, 23);
		VROUND(TI, 48, 0, 7, 14, 5, 6, 10, 15, 21);
		VROUND(TI, 52, 12, 3, 10, 1, 6, 10, 15, 21);
		VROUND(TI, 56, 8, 15, 6, 13, 6, 10, 15, 21);
		VROUND(TI, 60, 4, 11, 2, 9, 6, 10, 15, 21);
		a0 = _mm512_add_epi32(a0, a);
		b0 = _mm512_add_epi32(b0, b);
		c0 = _mm512_add_epi32(c0, c);
		d0 = _mm512_add_epi32(d0, d);
	}
	_mm512_store_si512(st[0], a0);
	_mm512_store_si512(st[1], b0);
	_mm512_store_si512(st[2], c0);
	_mm512_store_si512(st[3], d0);
}
#endif

static int lanes = -1; /* 16 or 1; -1: not decided yet */

unsigned
rgw_md5_lanes(void)
{
	if (lanes < 0) {
		lanes = 1;
#ifdef MD5_X16
		if (__builtin_cpu_supports("avx512f"))
			lanes = LANES;
#endif
	}
	return (unsigned)lanes;
}

void
rgw_md5_portable(bool on)
{
	lanes = -1;
	if (on)
		lanes = 1;
}

static void
run_jobs(struct job *jobs, size_t nj)
{
	if (rgw_md5_lanes() == 1) {
		for (size_t i = 0; i < nj; i++)
			for (size_t n = 0; n < jobs[i].nb; n++)
				md5_block(jobs[i].h, jobs[i].p + 64 * n);
		return;
	}
#ifdef MD5_X16
	_Alignas(64) uint32_t st[4][LANES];
	const uint8_t *p[LANES] = { 0 };
	struct job *on[LANES] = { 0 };
	size_t left[LANES] = { 0 }, next = 0;

	for (;;) {
		unsigned live = 0;
		size_t k = SIZE_MAX;

		for (unsigned l = 0; l < LANES; l++) {
			while (!on[l] && next < nj) {
				struct job *j = &jobs[next++];

				if (!j->nb)
					continue;
				on[l] = j;
				left[l] = j->nb;
				p[l] = j->p;
				for (unsigned r = 0; r < 4; r++)
					st[r][l] = j->h[r];
			}
			if (on[l]) {
				live |= 1u << l;
				if (left[l] < k)
					k = left[l];
			}
		}
		if (!live)
			return;
		if (!(live & (live - 1)) && next == nj) {
			/* one stream left: the portable kernel runs one lane faster */
			unsigned l = (unsigned)__builtin_ctz(live);

			for (unsigned r = 0; r < 4; r++)
				on[l]->h[r] = st[r][l];
			for (size_t n = 0; n < left[l]; n++)
				md5_block(on[l]->h, p[l] + 64 * n);
			return;
		}
		md5_x16(st, p, live, k);
		for (unsigned l = 0; l < LANES; l++) {
			if (!on[l])
				continue;
			left[l] -= k;
			if (!left[l]) {
				for (unsigned r = 0; r < 4; r++)
					on[l]->h[r] = st[r][l];
				on[l] = NULL;
			}
		}
	}
#endif
}

/* ---- streams ---- */

void
rgw_md5_init(struct rgw_md5 *m)
{
	memset(m, 0, sizeof(*m));
	m->h[0] = 0x67452301;
	m->h[1] = 0xefcdab89;
	m->h[2] = 0x98badcfe;
	m->h[3] = 0x10325476;
}

/* Take n bytes at p into m: fill part[] first; \return the job for the whole blocks after it. */
static struct job
absorb(struct rgw_md5 *m, const uint8_t *p, size_t n)
{
	size_t have = (size_t)(m->len & 63);
	struct job j = { m->h, NULL, 0 };

	m->len += n;
	if (have) {
		size_t k = 64 - have < n ? 64 - have : n;

		memcpy(m->part + have, p, k);
		p += k;
		n -= k;
		if (have + k < 64)
			return j;
		md5_block(m->h, m->part);
	}
	j.p = p;
	j.nb = n / 64;
	if (n % 64)
		memcpy(m->part, p + 64 * j.nb, n % 64);
	return j;
}

static void
unlink_from(struct rgw_md5 *m)
{
	struct rgw_md5 **pp = &m->b->head;

	while (*pp && *pp != m)
		pp = &(*pp)->next;
	if (*pp)
		*pp = m->next;
	m->b = NULL;
	m->next = NULL;
	m->pend = NULL;
	m->pend_len = 0;
}

void
rgw_md5_flush(struct rgw_md5_batch *b)
{
	struct job jobs[64];
	size_t nj = 0;

	b->flushes++;
	while (b->head) {
		struct rgw_md5 *m = b->head;

		b->head = m->next;
		b->streams++;
		jobs[nj++] = absorb(m, m->pend, m->pend_len);
		m->b = NULL;
		m->next = NULL;
		m->pend = NULL;
		m->pend_len = 0;
		if (nj == sizeof(jobs) / sizeof(jobs[0])) {
			run_jobs(jobs, nj);
			nj = 0;
		}
	}
	run_jobs(jobs, nj);
}

void
rgw_md5_update(struct rgw_md5 *m, const void *p, size_t n)
{
	struct job j;

	if (m->b)
		rgw_md5_flush(m->b);
	if (!n)
		return;
	j = absorb(m, p, n);
	for (size_t i = 0; i < j.nb; i++)
		md5_block(m->h, j.p + 64 * i);
}

void
rgw_md5_defer(struct rgw_md5 *m, struct rgw_md5_batch *b, const void *p, size_t n)
{
	if (!n)
		return;
	if (m->b && (m->b != b || m->pend + m->pend_len != (const uint8_t *)p))
		rgw_md5_flush(m->b);
	if (!m->b) {
		m->b = b;
		m->pend = p;
		m->pend_len = 0;
		m->next = b->head;
		b->head = m;
	}
	m->pend_len += n;
	if (m->pend_len >= RGW_MD5_DEFER_MAX)
		rgw_md5_flush(b);
}

void
rgw_md5_final(struct rgw_md5 *m, uint8_t out[16])
{
	uint8_t pad[72] = { 0x80 };
	uint64_t bits;
	size_t have, n;

	if (m->b)
		rgw_md5_flush(m->b);
	bits = m->len * 8;
	have = (size_t)(m->len & 63);
	n = (have < 56 ? 56 : 120) - have;
	for (unsigned i = 0; i < 8; i++)
		pad[n + i] = (uint8_t)(bits >> (8 * i));
	rgw_md5_update(m, pad, n + 8);
	for (unsigned i = 0; i < 4; i++)
		for (unsigned k = 0; k < 4; k++)
			out[4 * i + k] = (uint8_t)(m->h[i] >> (8 * k));
}

void
rgw_md5_drop(struct rgw_md5 *m)
{
	if (m->b)
		unlink_from(m);
}
