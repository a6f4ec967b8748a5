/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an OSD's store reads first at mount: the label in block 0 of its
 * device (os/src/store.c), decoded and checked against the device's size
 * and the daemon's fsid and id as os_mount does; a label it accepts sizes
 * the block allocator, as os_mount does next.
 *
 * Input: byte 0: bit 0 set the label's crc (so the fuzzer reaches the
 * fields behind it), bits 1-2 the fsid the daemon expects (none, "", the
 * label's, another), bit 3 whether it expects osd.0; bytes 1-4 the
 * device's size in 512-byte sectors (le32); then the label block (zero
 * padded to 4096 bytes).
 */
#include "../../os/src/store_internal.h"
#include "os/alloc.h"
#include "cm/crc32c.h"
#include "cm/log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A bitmap allocator for more blocks than this costs the fuzzer more than it shows. */
#define ALLOC_MAX_BLOCKS (1u << 20)

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	cm_log_set_file("/dev/null");
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct os_opts o;
	uint64_t dev, nblocks = 0, start = 0;
	char fsid[65];
	uint8_t *b;

	if (size < 5)
		return 0;
	/* Exactly one block, as pread fills it. */
	b = malloc(4096);
	if (!b)
		return 0;
	memset(b, 0, 4096);
	memcpy(b, data + 5, size - 5 < 4096 ? size - 5 : 4096);
	if (data[0] & 1) {
		uint32_t crc = cm_crc32c(0, b, 4092);

		for (int i = 0; i < 4; i++)
			b[4092 + i] = (uint8_t)(crc >> (8 * i));
	}
	os_opts_init(&o, sizeof(o));
	o.path = "fuzz";
	memcpy(fsid, b + 72, 64);
	fsid[64] = 0;
	switch (data[0] >> 1 & 3) {
	case 0:
		o.fsid = NULL;
		break;
	case 1:
		o.fsid = "";
		break;
	case 2:
		o.fsid = fsid;
		break;
	default:
		o.fsid = "another-cluster";
		break;
	}
	o.osd_id = data[0] & 8 ? 0 : -1;
	dev = ((uint64_t)data[1] | (uint64_t)data[2] << 8 | (uint64_t)data[3] << 16 |
	       (uint64_t)data[4] << 24) *
	      512;
	if (os__label_check(b, &o, dev, &nblocks, &start) == 0) {
		struct os_alloc *a;

		/* Data never goes to the label's block or the journal's. */
		if (start < 1 || (start > 1 && start >= nblocks))
			abort();
		if (nblocks <= ALLOC_MAX_BLOCKS && os_alloc_create(nblocks, start, &a) == 0)
			os_alloc_destroy(a);
	}
	free(b);
	return 0;
}
