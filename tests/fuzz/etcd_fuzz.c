/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the monitors read from etcd (common/src/etcd.c): the JSON answers of
 * its v3 gateway to kv/range, kv/put, kv/deleterange, kv/txn, lease/grant
 * and lease/keepalive (status and body, as cm_etcd_get & co. parse them),
 * and the body of a watch stream (JSON objects one after another, cut into
 * the pieces libcurl hands over). No connection is made.
 *
 * Input: byte 0 picks the reply kind (0-5) or the watch stream (6, 7);
 * byte 1 the HTTP status (replies) or the piece size (watch); the rest is
 * the body.
 */
#include "../../common/src/etcd_int.h"
#include "cm/log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A watch body is re-parsed from its start each time a piece arrives: bound it. */
#define WATCH_MAX (16u << 10)

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	cm_log_set_file("/dev/null");
	return 0;
}

static size_t
touch(const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t sum = 0;

	/* Read every byte the parser hands out: ASan names any overrun. */
	for (size_t i = 0; i < n; i++)
		sum += b[i];
	return sum;
}

static void
on_event(void *arg, const struct cm_etcd_event *ev, int rc)
{
	size_t *sum = arg;

	if (!ev) {
		*sum += (size_t)-rc;
		return;
	}
	*sum += ev->type + touch(ev->kv.key, ev->kv.key_len) +
		touch(ev->kv.value, ev->kv.value_len);
	/* Decoded keys and values are NUL-terminated for their users. */
	*sum += (uint8_t)ev->kv.key[ev->kv.key_len] + ev->kv.value[ev->kv.value_len];
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long statuses[] = { 200, 200, 200, 200, 400, 404, 500, 503 };
	struct cm_etcd__reply r;
	size_t sum = 0, n;
	int64_t next_rev;
	char *body;

	if (size < 2 || size > 65536)
		return 0;
	n = size - 2;
	if (data[0] % 8 >= 6) {
		/* A copy of exactly the stream's bytes, so reads past them are caught. */
		n = n < WATCH_MAX ? n : WATCH_MAX;
		body = malloc(n ? n : 1);
		if (!body)
			return 0;
		memcpy(body, data + 2, n);
		(void)cm_etcd__watch_feed(body, n,
					  data[1] % 8 == 7 ? 0 : (size_t)64 << (data[1] % 8),
					  on_event, &sum, &next_rev);
		free(body);
		__asm__ volatile("" : : "r"(sum));
		return 0;
	}
	/* libcurl's bytes end with a NUL the parser relies on. */
	body = malloc(n + 1);
	if (!body)
		return 0;
	memcpy(body, data + 2, n);
	body[n] = 0;
	if (cm_etcd__parse_reply((enum cm_etcd__reply_kind)(data[0] % 8), statuses[data[1] % 8],
				 body, &r) == 0) {
		for (size_t i = 0; i < r.range.count; i++) {
			const struct cm_etcd_kv *kv = &r.range.kvs[i];

			sum += touch(kv->key, kv->key_len + 1) +
			       touch(kv->value, kv->value_len + 1);
		}
		sum += (size_t)r.revision + (size_t)r.deleted + (size_t)r.id + (size_t)r.ttl +
		       r.succeeded;
	}
	cm_etcd_range_free(&r.range);
	free(body);
	__asm__ volatile("" : : "r"(sum));
	return 0;
}
