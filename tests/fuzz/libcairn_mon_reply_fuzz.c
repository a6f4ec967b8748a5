/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What libcairn reads from the monitors for its admin calls
 * (libclient/src/client.c: cairn_df, cairn_health, cairn_mon_command): the
 * leader's reply, decoded into what the caller gets.
 *
 * Input: byte 0 picks the reply (DF, HEALTH, COMMAND), the rest is its
 * front (protobuf).
 */
#include "../../libclient/src/client_int.h"
#include "mon/proto.h"
#include "cm/log.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	static const uint16_t types[] = { MON_MSG_DF_REPLY, MON_MSG_HEALTH_REPLY,
					  MON_MSG_COMMAND_REPLY };
	struct cm_msg *m;
	struct cm_buf *b;

	if (size < 1 || cm_msg_create(types[data[0] % 3], 1, &m))
		return 0;
	if (size > 1) {
		if (cm_buf_alloc(size - 1, &b)) {
			cm_msg_destroy(m);
			return 0;
		}
		memcpy(b->data, data + 1, size - 1);
		if (cm_sgl_append(&m->front, b, 0, size - 1)) {
			cm_buf_put(b);
			cm_msg_destroy(m);
			return 0;
		}
		cm_buf_put(b);
	}
	(void)cairn__mon_reply_decode(m);
	return 0;
}
