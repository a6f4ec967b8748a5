/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rjenkins1: Robert Jenkins' 96-bit mix applied to 2 or 3 32-bit words with
 * the fixed seed and padding words Ceph uses, so hashes (and with them every
 * placement) agree with Ceph's.
 */
#include "crush_internal.h"

#define CRUSH_HASH_SEED 1315423911u

/* One round of Jenkins' mix over (a, b, c). */
static inline void
mix(uint32_t *a, uint32_t *b, uint32_t *c)
{
	*a -= *b;
	*a -= *c;
	*a ^= *c >> 13;
	*b -= *c;
	*b -= *a;
	*b ^= *a << 8;
	*c -= *a;
	*c -= *b;
	*c ^= *b >> 13;
	*a -= *b;
	*a -= *c;
	*a ^= *c >> 12;
	*b -= *c;
	*b -= *a;
	*b ^= *a << 16;
	*c -= *a;
	*c -= *b;
	*c ^= *b >> 5;
	*a -= *b;
	*a -= *c;
	*a ^= *c >> 3;
	*b -= *c;
	*b -= *a;
	*b ^= *a << 10;
	*c -= *a;
	*c -= *b;
	*c ^= *b >> 15;
}

uint32_t
crush_hash32_2(uint32_t a, uint32_t b)
{
	uint32_t h = CRUSH_HASH_SEED ^ a ^ b, x = 231232, y = 1232;

	mix(&a, &b, &h);
	mix(&x, &a, &h);
	mix(&b, &y, &h);
	return h;
}

uint32_t
crush_hash32_3(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t h = CRUSH_HASH_SEED ^ a ^ b ^ c, x = 231232, y = 1232;

	mix(&a, &b, &h);
	mix(&c, &x, &h);
	mix(&y, &a, &h);
	mix(&b, &x, &h);
	mix(&y, &c, &h);
	return h;
}

/*
 * 2^44 * log2(x + 1): normalise x + 1 to [2^15, 2^16) (the shift is the
 * integer part), then add the logs of its coarse part (top 7 bits after the
 * leading one: RH/LH table) and of the fine remainder (LL table).
 */
uint64_t
crush_ln(unsigned xin)
{
	unsigned x = xin + 1;
	int iexpon = 15, index1, index2;
	uint64_t rh, lh, ll, xl64, result;

	if (!(x & 0x18000)) {
		int bits = __builtin_clz(x & 0x1ffff) - 16;

		x <<= bits;
		iexpon = 15 - bits;
	}
	index1 = (int)((x >> 8) << 1);
	rh = (uint64_t)crush__rh_lh_tbl[index1 - 256];
	lh = (uint64_t)crush__rh_lh_tbl[index1 + 1 - 256];
	xl64 = ((uint64_t)x * rh) >> 48;
	result = (uint64_t)iexpon << 44;
	index2 = (int)(xl64 & 0xff);
	ll = (uint64_t)crush__ll_tbl[index2];
	lh = (lh + ll) >> (48 - 12 - 32);
	return result + lh;
}
