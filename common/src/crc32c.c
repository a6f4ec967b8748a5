/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/crc32c.h"

#include <isa-l/crc.h>

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
