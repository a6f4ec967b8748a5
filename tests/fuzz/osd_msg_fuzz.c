/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an OSD reads from the wire: clients' compound ops and its peers'
 * replication, peering and recovery messages and listings, decoded and checked as the
 * handlers do before using them (osd/daemon/msgcheck.c). The first byte
 * picks the message, the second (ops, replication) is the size of the data
 * segment that came with it in KiB. Ops and listings also go through the
 * seed peek that picks their PG shard (osd_peek_seed), which must read
 * the seed protobuf-c reads from every message protobuf-c accepts.
 */
#include "osd/osd.h"

#include <stdint.h>
#include <stdlib.h>

/* protobuf-c took the message with this seed: the peek must agree. */
static void
peek_agrees(const uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t s = ~seed;

	if (osd_peek_seed(p, n, &s) != 0 || s != seed)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t dlen;

	if (size < 2)
		return 0;
	dlen = (size_t)data[1] * 1024;
	switch (data[0] % 9) {
	case 0: {
		Cairn__Osd__OsdOp *q = cairn__osd__osd_op__unpack(NULL, size - 2, data + 2);

		if (q) {
			peek_agrees(data + 2, size - 2, q->seed);
			(void)osd_check_op(q, dlen);
			cairn__osd__osd_op__free_unpacked(q, NULL);
		}
		break;
	}
	case 1: {
		Cairn__Osd__Push *p = cairn__osd__push__unpack(NULL, size - 2, data + 2);

		if (p) {
			(void)osd_check_push(p);
			cairn__osd__push__free_unpacked(p, NULL);
		}
		break;
	}
	case 2: {
		Cairn__Osd__RepOp *ro = cairn__osd__rep_op__unpack(NULL, size - 2, data + 2);

		if (ro) {
			(void)osd_check_repop(ro, dlen);
			cairn__osd__rep_op__free_unpacked(ro, NULL);
		}
		break;
	}
	case 3: {
		Cairn__Osd__PgNotify *n = cairn__osd__pg_notify__unpack(NULL, size - 2, data + 2);

		if (n) {
			(void)osd_check_notify(n);
			cairn__osd__pg_notify__free_unpacked(n, NULL);
		}
		break;
	}
	case 4: {
		Cairn__Osd__RecoverReq *q =
			cairn__osd__recover_req__unpack(NULL, size - 2, data + 2);

		if (q) {
			(void)osd_check_recover(q);
			cairn__osd__recover_req__free_unpacked(q, NULL);
		}
		break;
	}
	case 5: {
		Cairn__Osd__EcRead *q = cairn__osd__ec_read__unpack(NULL, size - 2, data + 2);

		if (q) {
			(void)osd_check_ec_read(q);
			cairn__osd__ec_read__free_unpacked(q, NULL);
		}
		break;
	}
	case 6: {
		Cairn__Osd__EcReadReply *r =
			cairn__osd__ec_read_reply__unpack(NULL, size - 2, data + 2);

		if (r) {
			(void)osd_check_ec_read_reply(r);
			cairn__osd__ec_read_reply__free_unpacked(r, NULL);
		}
		break;
	}
	case 8: {
		Cairn__Osd__PgList *l = cairn__osd__pg_list__unpack(NULL, size - 2, data + 2);

		if (l) {
			peek_agrees(data + 2, size - 2, l->seed);
			(void)osd_check_list(l);
			cairn__osd__pg_list__free_unpacked(l, NULL);
		}
		break;
	}
	default: {
		Cairn__Osd__PgAck *a = cairn__osd__pg_ack__unpack(NULL, size - 2, data + 2);

		if (a) {
			(void)osd_check_ack(a);
			cairn__osd__pg_ack__free_unpacked(a, NULL);
		}
		break;
	}
	}
	return 0;
}
