/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For rgw_test.sh: what many index shard merges leave behind, made directly.
 *
 *   rgw_retired_fill -c CONF POOL BUCKET BUCKET_ID N
 *
 * Creates N index shard objects of the bucket outside its map (numbers from
 * 0x70000000 up) in POOL, each noted retired on the bucket's object with the
 * time now, as a merge notes the shard it empties (RGW_RETIRED_PREFIX). The
 * gateway's sweep removes such shards after the grace; DeleteBucket removes
 * them at once, however many there are. Prints "filled N". Exit 0; 1 when an
 * op fails (the error on stderr); 2 for bad usage or no connection.
 */
#include "cairn/cairn.h"
#include "rgw/shardmap.h"

#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FIRST_NUM    0x70000000u
#define NOTES_PER_OP 256

int
main(int argc, char **argv)
{
	cairn_cluster_t *cl = NULL;
	cairn_ioctx_t *io = NULL;
	struct cairn_opts o;
	struct timespec ts;
	char err[256], boid[300];
	unsigned long n;
	uint64_t now;
	int rc = 0;

	if (argc != 7 || strcmp(argv[1], "-c") || !(n = strtoul(argv[6], NULL, 10)) || n > 100000) {
		fprintf(stderr,
			"usage: rgw_retired_fill -c CONF POOL BUCKET BUCKET_ID N (1..100000)\n");
		return 2;
	}
	cairn_opts_init(&o, sizeof(o));
	o.conf_file = argv[2];
	if ((rc = cairn_connect(&o, &cl, err, sizeof(err)))) {
		fprintf(stderr, "rgw_retired_fill: connect: %s\n", err);
		return 2;
	}
	if ((rc = cairn_ioctx_create(cl, argv[3], &io))) {
		fprintf(stderr, "rgw_retired_fill: pool %s: %s\n", argv[3], strerror(-rc));
		cairn_shutdown(cl);
		return 2;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	now = htole64((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
	snprintf(boid, sizeof(boid), "bucket.%s", argv[4]);
	for (unsigned long i = 0; i < n && !rc; i++) {
		cairn_op_t *op = cairn_op_create();
		char oid[96];

		if (!op) {
			rc = -ENOMEM;
			break;
		}
		rgw_shard_oid(argv[5], FIRST_NUM + (uint32_t)i, oid, sizeof(oid));
		cairn_op_create_object(op, false);
		if ((rc = cairn_operate(io, oid, op, NULL)))
			fprintf(stderr, "rgw_retired_fill: creating %s: %s\n", oid, strerror(-rc));
		cairn_op_release(op);
	}
	for (unsigned long i = 0; i < n && !rc; i += NOTES_PER_OP) {
		cairn_op_t *op = cairn_op_create();

		if (!op) {
			rc = -ENOMEM;
			break;
		}
		cairn_op_cmpxattr(op, "rgw.id", CAIRN_CMP_EQ, argv[5], strlen(argv[5]));
		for (unsigned long j = i; j < n && j < i + NOTES_PER_OP; j++) {
			char key[RGW_RETIRED_KEY_LEN + 1];

			rgw_retired_key(FIRST_NUM + (uint32_t)j, key);
			cairn_op_omap_set(op, key, strlen(key), &now, sizeof(now));
		}
		if ((rc = cairn_operate(io, boid, op, NULL)))
			fprintf(stderr, "rgw_retired_fill: noting on %s: %s\n", boid,
				strerror(-rc));
		cairn_op_release(op);
	}
	if (!rc)
		printf("filled %lu\n", n);
	cairn_ioctx_destroy(io);
	cairn_shutdown(cl);
	return rc ? 1 : 0;
}
