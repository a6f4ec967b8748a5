/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The messenger's frame decoder fed arbitrary bytes in arbitrary chunk sizes
 * (the first byte of the input chooses the chunking, and with its top bit
 * the receiver expects frame MACs), as a socket would.
 */
#include "cm/frame.h"

static int
on_frame(void *arg, struct cm_frame *f)
{
	size_t *n = arg;

	/* Touch everything delivered so ASan sees any bad slice. */
	volatile uint8_t x = 0;

	for (unsigned i = 0; i < f->front.n; i++)
		for (size_t j = 0; j < f->front.sg[i].len; j++)
			x ^= f->front.sg[i].buf->data[f->front.sg[i].off + j];
	for (unsigned i = 0; i < f->data.n; i++)
		if (f->data.sg[i].len)
			x ^= f->data.sg[i].buf->data[f->data.sg[i].off + f->data.sg[i].len - 1];
	(void)x;
	(*n)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cm_frame_limits lim = { 1 << 16, 1 << 20 };
	struct cm_frame_rx rx;
	uint8_t chunk = 1;
	size_t off = 0, frames = 0;

	bool mac = false, gmac = false;

	if (size > 0) {
		chunk = data[0] & 0x7f ? data[0] & 0x7f : 1;
		mac = data[0] & 0x80;
		gmac = data[0] & 0x40; /* (protocol 3's MAC; also a chunk size bit) */
		data++;
		size--;
	}
	cm_frame_rx_init(&rx, 4096, &lim);
	if (mac) {
		static const uint8_t key[CM_FRAME_MAC_KEY_LEN] = "frame fuzz key, 32 bytes long..";
		struct cm_frame_mac *m;

		if (cm_frame_mac_create(key, gmac, &m) == 0)
			cm_frame_rx_set_mac(&rx, m);
	}
	while (off < size) {
		void *dst;
		size_t room, take;

		if (cm_frame_rx_prepare(&rx, &dst, &room))
			break;
		take = size - off < room ? size - off : room;
		if (take > chunk)
			take = chunk;
		memcpy(dst, data + off, take);
		off += take;
		if (cm_frame_rx_advance(&rx, take, on_frame, &frames))
			break;
	}
	cm_frame_rx_fini(&rx);
	return 0;
}
