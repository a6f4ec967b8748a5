/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checks of OSD messages from the wire before they are used (clients' ops,
 * replication and recovery messages from peers). Pure functions: the
 * libFuzzer target tests/fuzz/osd_msg_fuzz.c drives them.
 */
#ifndef OSD_MSGCHECK_H
#define OSD_MSGCHECK_H

#include "osd/proto.h"

#include <stddef.h>

#define OSD_MAX_LOG_MSG   1000000 /* log entries in one notify / PG_LOG */
#define OSD_MAX_PAST      64      /* past intervals in one notify */
#define OSD_MAX_PAST_OSDS 16      /* OSDs of one (OSD_MAX_ACTING) */

/* A client's compound op with data_len bytes of data. \return 0 or -errno. */
int osd_check_op(const Cairn__Osd__OsdOp *q, size_t data_len);
/* A recovery push. \return 0 or -EINVAL. */
int osd_check_push(const Cairn__Osd__Push *p);
/* A replication op with data_len bytes of data. \return 0 or -EINVAL. */
int osd_check_repop(const Cairn__Osd__RepOp *ro, size_t data_len);
/* A notify or PG_LOG. \return 0 or -EINVAL. */
int osd_check_log_entry(const Cairn__Osd__LogEntry *le);
int osd_check_notify(const Cairn__Osd__PgNotify *n);
/* A recovery request. \return 0 or -EINVAL. */
int osd_check_recover(const Cairn__Osd__RecoverReq *q);
/* A recovery or log ack. \return 0 or -EINVAL. */
int osd_check_ack(const Cairn__Osd__PgAck *a);
/* A shard read of an EC object. \return 0 or -EINVAL. */
int osd_check_ec_read(const Cairn__Osd__EcRead *q);
/* A shard's answer to it. \return 0 or -EINVAL. */
int osd_check_ec_read_reply(const Cairn__Osd__EcReadReply *r);

#endif
