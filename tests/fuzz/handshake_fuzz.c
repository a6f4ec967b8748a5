/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handshake state machine, both roles, fed a sequence of arbitrary frames:
 * [role byte] then repeated [type u8][len u8][len bytes of front].
 */
#include "cm/msgr_hs.h"

static int
session(void *arg, struct cm_hs *hs, uint64_t *in_seq, bool *reset)
{
	(void)arg;
	(void)hs;
	*in_seq = 5;
	*reset = false;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t key[] = "fuzz-cluster-key";
	struct cm_hs hs;
	struct cm_hs_out out;
	size_t off = 1;

	if (size < 1)
		return 0;
	cm_hs_init(&hs, (data[0] & 1) ? CM_HS_SERVER : CM_HS_CLIENT, key, sizeof(key), "osd.0");
	hs.session_fn = session;
	if (hs.role == CM_HS_CLIENT) {
		if (cm_hs_start(&hs, &out))
			return 0;
		cm_buf_put(out.front);
	}
	while (off + 2 <= size) {
		uint16_t type = data[off];
		size_t len = data[off + 1];
		int rc;

		off += 2;
		if (len > size - off)
			len = size - off;
		rc = cm_hs_input(&hs, type, data + off, len, &out);
		cm_buf_put(out.front);
		off += len;
		if (rc != 0)
			break;
	}
	return 0;
}
