/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/random.h"

#include <openssl/rand.h>

int
cm_random_bytes(void *buf, size_t n)
{
	return n > INT_MAX || RAND_bytes(buf, (int)n) != 1 ? -EIO : 0;
}

int
cm_uuid_generate(char out[37])
{
	uint8_t b[16];

	if (cm_random_bytes(b, sizeof(b)))
		return -EIO;
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
	return 0;
}
