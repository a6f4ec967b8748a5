/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an OSD's store reads back from its RocksDB for an object: an onode
 * record and, for a large object, its extent map shards (os/src/onode.c).
 * Input: le16 length + the onode record, then shards as (u8 index, le16
 * length, bytes) until the input ends. Whatever decodes is then put back
 * as shards (os_onode_put_shards, against nothing and against a copy of
 * itself) and encoded, so the walk over shards and pieces sees any map a
 * record can describe. The whole input is also read as the value of a
 * refcount record ("R", shared blocks).
 */
#include "../../os/src/store_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t
le16(const uint8_t *p)
{
	return (size_t)p[0] | (size_t)p[1] << 8;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct os_onode *on = NULL, *copy;
	rocksdb_writebatch_t *wb;
	size_t hl, pos;
	uint8_t *buf;
	size_t len;

	{
		char k[9];
		uint64_t pb;
		uint32_t r;

		os_key_refs(k, 4096);
		if (!os_refs_decode(k, sizeof(k), data, size, &pb, &r) && (pb != 4096 || r < 2))
			abort();
	}
	if (size < 2)
		return 0;
	hl = le16(data);
	if (hl > size - 2 || os_onode_decode(data + 2, hl, &on))
		return 0;
	for (pos = 2 + hl; on->shard_blocks && pos + 3 <= size;) {
		uint64_t idx = data[pos];
		size_t sl = le16(data + pos + 1);

		pos += 3;
		if (sl > size - pos || os_onode_add_shard(on, idx, data + pos, sl))
			break;
		pos += sl;
	}
	wb = rocksdb_writebatch_create();
	copy = os_onode_dup(on);
	if (copy) {
		if (!os_onode_put_shards(wb, NULL, copy)) {
			/* copy now says how it would be stored; the same again puts nothing. */
			struct os_onode *again = os_onode_dup(copy);
			int before = rocksdb_writebatch_count(wb);

			if (again && copy->shard_blocks && !os_onode_put_shards(wb, copy, again) &&
			    rocksdb_writebatch_count(wb) != before)
				abort();
			os_onode_free(again);
		}
		if (!os_onode_encode(copy, &buf, &len))
			free(buf);
		os_onode_free(copy);
	}
	if (!os_onode_encode(on, &buf, &len))
		free(buf);
	rocksdb_writebatch_destroy(wb);
	os_onode_free(on);
	return 0;
}
