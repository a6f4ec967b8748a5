/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CRC-32C (Castagnoli), hardware accelerated through ISA-L (SSE4.2 / PCLMUL,
 * AVX-512 where present; ISA-L picks at run time).
 *
 * Chaining: cm_crc32c(cm_crc32c(0, a, la), b, lb) == cm_crc32c(0, a||b, la+lb),
 * and cm_crc32c(0, "123456789", 9) == 0xE3069283 (the standard check value).
 * Thread-safe, no allocation.
 */
#ifndef CM_CRC32C_H
#define CM_CRC32C_H

#include "cm/stdinc.h"

uint32_t cm_crc32c(uint32_t crc, const void *buf, size_t len);

/*
 * The crc of a||b from crc_a = cm_crc32c(0, a, ...), crc_b = cm_crc32c(0, b,
 * len_b) and len_b alone (a few hundred operations, no data touched): a
 * crc computed once for a payload serves every message that carries it.
 */
uint32_t cm_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);
/* The bitwise reference implementation, for tests and for checking the fast one. */
uint32_t cm_crc32c_sw(uint32_t crc, const void *buf, size_t len);

#endif
