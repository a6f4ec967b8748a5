/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an OSD's store reads back from its device at mount: a journal record
 * (os/src/journal.c, os_jnl_record_parse). The first byte picks whether the
 * crc is checked (a device block that is not a record, or a damaged one)
 * or not (so the fuzzer reaches the framing of the batches and the data
 * manifest inside); the
 * record's own nonce and sequence are taken as the expected ones.
 */
#include "../../os/src/store_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
touch(void *arg, const uint8_t *batch, size_t blen)
{
	size_t *sum = arg;

	/* Read every byte the parser hands out: ASan names any overrun. */
	for (size_t i = 0; i < blen; i++)
		*sum += batch[i];
	return 0;
}

static int
touch_run(void *arg, uint64_t pblock, uint32_t n, const uint8_t *crcs)
{
	size_t *sum = arg;

	*sum += pblock;
	for (size_t i = 0; i < (size_t)n * 4; i++)
		*sum += crcs[i];
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t nonce = 0;
	uint64_t seq = 0;
	size_t sum = 0;
	uint8_t *b;

	if (size < 1)
		return 0;
	/* A copy of exactly the record's bytes, so reads past them are caught. */
	b = malloc(size - 1 ? size - 1 : 1);
	if (!b)
		return 0;
	memcpy(b, data + 1, size - 1);
	if (size - 1 >= 16) {
		memcpy(&nonce, b + 4, 4);
		memcpy(&seq, b + 8, 8);
	}
	(void)os_jnl_record_parse(b, size - 1, nonce, seq, data[0] & 1, touch, touch_run, &sum);
	free(b);
	__asm__ volatile("" : : "r"(sum)); /* the reads above are not optimised away */
	return 0;
}
