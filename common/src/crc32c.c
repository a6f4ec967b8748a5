/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/crc32c.h"

#include <isa-l/crc.h>
#include <pthread.h>

/*
 * ISA-L's crc32_iscsi() takes and returns the raw (un-inverted) register, so
 * the standard pre/post inversion is applied here; that makes the chaining rule
 * in the header hold.
 */
uint32_t
cm_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t reg = ~crc;

	while (len > 0) {
		int chunk = len > (1u << 30) ? (1 << 30) : (int)len;

		reg = crc32_iscsi((unsigned char *)p, chunk, reg);
		p += chunk;
		len -= (size_t)chunk;
	}
	return ~reg;
}

/*
 * Combining. A crc is linear over GF(2): the crc of a||b is the crc of a
 * followed by len_b zero bytes, xor the crc of b (the pre- and post-
 * inversions cancel in the xor). Appending n zero bytes multiplies the
 * register by x^(8n) modulo the polynomial, computed from the powers
 * x^(2^k). Bit order is reflected: bit 31 is the coefficient of x^0.
 */
#define POLY 0x82F63B78u

/* a * b mod P. */
static uint32_t
mulmod(uint32_t a, uint32_t b)
{
	uint32_t prod = 0;

	for (uint32_t m = 1u << 31; m; m >>= 1) {
		if (a & m)
			prod ^= b;
		b = (b & 1) ? (b >> 1) ^ POLY : b >> 1;
	}
	return prod;
}

/* x^(8 * 2^k) mod P for k = 0..63, built once: x8n costs one product per set bit of n. */
static uint32_t g_x8pow[64];
static pthread_once_t g_x8pow_once = PTHREAD_ONCE_INIT;

static void
x8pow_init(void)
{
	g_x8pow[0] = 1u << 23; /* x^8 */
	for (int k = 1; k < 64; k++)
		g_x8pow[k] = mulmod(g_x8pow[k - 1], g_x8pow[k - 1]);
}

/* x^(8 n) mod P. */
static uint32_t
x8n(uint64_t n)
{
	uint32_t p = 1u << 31; /* x^0 */

	pthread_once(&g_x8pow_once, x8pow_init);
	for (int k = 0; n; n >>= 1, k++)
		if (n & 1)
			p = mulmod(p, g_x8pow[k]);
	return p;
}

/* Shifting by 4 KiB (a block), by table: the product with a constant is
 * linear, so it is the xor of the products of each byte of the register. */
static uint32_t g_shift4k[4][256];
static pthread_once_t g_shift4k_once = PTHREAD_ONCE_INIT;

static void
shift4k_init(void)
{
	uint32_t c = x8n(4096);

	for (int k = 0; k < 4; k++)
		for (uint32_t v = 0; v < 256; v++)
			g_shift4k[k][v] = mulmod(c, v << (8 * k));
}

uint32_t
cm_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
	/* Nothing appended (a frame without data), or nothing to shift (a
	 * frame without front): most frames are one or the other. */
	if (len_b == 0)
		return crc_a;
	if (crc_a == 0)
		return crc_b;
	if (len_b == 4096) {
		pthread_once(&g_shift4k_once, shift4k_init);
		return g_shift4k[0][crc_a & 255] ^ g_shift4k[1][(crc_a >> 8) & 255] ^
		       g_shift4k[2][(crc_a >> 16) & 255] ^ g_shift4k[3][crc_a >> 24] ^ crc_b;
	}
	return mulmod(x8n(len_b), crc_a) ^ crc_b;
}

uint32_t
cm_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t reg = ~crc;

	for (size_t i = 0; i < len; i++) {
		reg ^= p[i];
		for (int b = 0; b < 8; b++)
			reg = (reg >> 1) ^ (0x82F63B78u & (0u - (reg & 1u)));
	}
	return ~reg;
}
