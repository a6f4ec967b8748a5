/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clusterctl s3: the S3 gateway's users and keys, kept in the cluster's
 * metadata pool (rgw/rgw.h admin calls): no gateway needs to run.
 *   s3 user create UID [--display-name NAME]   (prints the first key pair)
 *   s3 user ls | info UID | rm UID
 *   s3 user quota UID [--max-bytes SIZE] [--max-objects N] | stats UID [--sync]
 *   s3 bucket quota NAME [--max-bytes SIZE] [--max-objects N] | stats NAME
 *   s3 key add UID | rm ACCESS_KEY
 *   s3 lc run [BUCKET] [--day DURATION]
 * --meta-pool POOL (default rgw.meta) on any of them.
 */
#include "ctl.h"
#include "rgw/rgw.h"
#include "cm/conf.h"
#include "cm/err.h"

#include <jansson.h>

static int
s3_usage(void)
{
	fprintf(stderr,
		"usage: clusterctl s3 user create UID [--display-name NAME]\n"
		"       clusterctl s3 user ls | info UID | rm UID\n"
		"       clusterctl s3 user quota UID [--max-bytes SIZE] [--max-objects N]\n"
		"       clusterctl s3 user stats UID [--sync]\n"
		"       clusterctl s3 bucket quota NAME [--max-bytes SIZE] [--max-objects N]\n"
		"       clusterctl s3 lc run [BUCKET] [--day DURATION]   (apply lifecycle rules now)\n"
		"       clusterctl s3 bucket stats NAME\n"
		"       clusterctl s3 key add UID | key rm ACCESS_KEY\n"
		"OPTIONS: --meta-pool POOL (default " RGW_DEFAULT_META_POOL ")\n");
	return 2;
}

static void
print_keys(bool json, const char *uid, const char *access, const char *secret)
{
	if (json) {
		json_t *j = json_pack("{s:s, s:s, s:s}", "uid", uid, "access_key", access,
				      "secret_key", secret);
		char *t = j ? json_dumps(j, 0) : NULL;

		if (t)
			printf("%s\n", t);
		free(t);
		json_decref(j);
		return;
	}
	printf("user:       %s\naccess key: %s\nsecret key: %s\n", uid, access, secret);
}

static int
fail(const char *what, int rc)
{
	const char *why = rc == -EEXIST   ? "it exists already"
			  : rc == -ENOENT ? "no such user or key (or the metadata pool is missing)"
			  : rc == -ENOTEMPTY ? "the user still owns buckets: remove them first"
			  : rc == -EINVAL    ? "a user id is 1-64 of [A-Za-z0-9._-]"
					     : cm_strerror(rc);

	fprintf(stderr, "clusterctl: s3 %s: %s\n", what, why);
	return 1;
}

int
ctl_s3(const struct ctl_conf *c, int argc, char **argv, bool json)
{
	const char *pos[4] = { NULL }, *pool = RGW_DEFAULT_META_POOL, *display = NULL;
	const char *maxb = NULL, *maxo = NULL, *day = NULL;
	bool sync = false;
	cairn_cluster_t *cl;
	char err[256], access[21], secret[41];
	int npos = 0, rc, status = 0;

	for (int i = 1; i < argc; i++) {
		bool takes = !strcmp(argv[i], "--meta-pool") ||
			     !strcmp(argv[i], "--display-name") ||
			     !strcmp(argv[i], "--max-bytes") || !strcmp(argv[i], "--max-objects") ||
			     !strcmp(argv[i], "--day");

		if (takes && i + 1 >= argc)
			return s3_usage();
		if (!strcmp(argv[i], "--meta-pool"))
			pool = argv[++i];
		else if (!strcmp(argv[i], "--display-name"))
			display = argv[++i];
		else if (!strcmp(argv[i], "--max-bytes"))
			maxb = argv[++i];
		else if (!strcmp(argv[i], "--max-objects"))
			maxo = argv[++i];
		else if (!strcmp(argv[i], "--day"))
			day = argv[++i];
		else if (!strcmp(argv[i], "--sync"))
			sync = true;
		else if (argv[i][0] == '-' && argv[i][1] == '-')
			return s3_usage();
		else if (npos < 4)
			pos[npos++] = argv[i];
		else
			return s3_usage();
	}
	if (npos < 2)
		return s3_usage();
	if ((rc = ctl_connect(c, (unsigned)c->command_timeout_ms, (unsigned)c->command_timeout_ms,
			      &cl, err, sizeof(err)))) {
		fprintf(stderr, "clusterctl: %s\n", err);
		return 1;
	}
	if (!strcmp(pos[0], "user") && !strcmp(pos[1], "create") && npos == 3) {
		if ((rc = rgw_admin_user_create(cl, pool, pos[2], display, access, secret)))
			status = fail("user create", rc);
		else
			print_keys(json, pos[2], access, secret);
	} else if (!strcmp(pos[0], "user") && !strcmp(pos[1], "ls") && npos == 2) {
		char **uids = NULL;
		size_t n = 0;

		if ((rc = rgw_admin_user_list(cl, pool, &uids, &n))) {
			status = fail("user ls", rc);
		} else {
			json_t *a = json ? json_array() : NULL;

			for (size_t i = 0; i < n; i++) {
				if (a)
					json_array_append_new(a, json_string(uids[i]));
				else
					printf("%s\n", uids[i]);
				free(uids[i]);
			}
			free(uids);
			if (a) {
				char *t = json_dumps(a, 0);

				printf("%s\n", t ? t : "[]");
				free(t);
				json_decref(a);
			}
		}
	} else if (!strcmp(pos[0], "user") && !strcmp(pos[1], "info") && npos == 3) {
		struct rgw_user_info ui;

		if ((rc = rgw_admin_user_info(cl, pool, pos[2], &ui))) {
			status = fail("user info", rc);
		} else {
			json_t *k = json_array();
			json_t *j;
			char *t;

			for (size_t i = 0; i < ui.nkeys; i++)
				json_array_append_new(k, json_string(ui.keys[i]));
			j = json_pack("{s:s, s:s, s:b, s:I, s:I, s:I, s:o}", "uid", ui.uid,
				      "display_name", ui.display_name, "suspended", ui.suspended,
				      "created", (json_int_t)ui.created, "quota_bytes",
				      (json_int_t)ui.quota_bytes, "quota_objects",
				      (json_int_t)ui.quota_objects, "keys", k);
			if (json) {
				t = j ? json_dumps(j, 0) : NULL;
				printf("%s\n", t ? t : "{}");
				free(t);
			} else {
				printf("user:         %s\ndisplay name: %s\nsuspended:    %s\n"
				       "quota:        %" PRIu64 " bytes, %" PRIu64
				       " objects (0: none)\n",
				       ui.uid, ui.display_name, ui.suspended ? "yes" : "no",
				       ui.quota_bytes, ui.quota_objects);
				for (size_t i = 0; i < ui.nkeys; i++)
					printf("access key:   %s\n", ui.keys[i]);
			}
			json_decref(j);
			rgw_user_info_fini(&ui);
		}
	} else if (!strcmp(pos[0], "user") && !strcmp(pos[1], "rm") && npos == 3) {
		if ((rc = rgw_admin_user_rm(cl, pool, pos[2])))
			status = fail("user rm", rc);
	} else if (!strcmp(pos[0], "user") && !strcmp(pos[1], "quota") && npos == 3) {
		uint64_t b = 0, o = 0;

		if ((maxb && cm_parse_size(maxb, &b)) || (maxo && cm_parse_size(maxo, &o))) {
			fprintf(stderr,
				"clusterctl: s3 user quota: bad --max-bytes or --max-objects\n");
			status = 2;
		} else if ((rc = rgw_admin_user_quota(cl, pool, pos[2], b, o))) {
			status = fail("user quota", rc);
		}
	} else if (!strcmp(pos[0], "bucket") && !strcmp(pos[1], "quota") && npos == 3) {
		uint64_t b = 0, o = 0;

		if ((maxb && cm_parse_size(maxb, &b)) || (maxo && cm_parse_size(maxo, &o))) {
			fprintf(stderr,
				"clusterctl: s3 bucket quota: bad --max-bytes or --max-objects\n");
			status = 2;
		} else if ((rc = rgw_admin_bucket_quota(cl, pool, pos[2], b, o))) {
			status = fail("bucket quota", rc);
		}
	} else if (!strcmp(pos[0], "bucket") && !strcmp(pos[1], "stats") && npos == 3) {
		struct rgw_bucket_stats st;

		if ((rc = rgw_admin_bucket_stats(cl, pool, pos[2], &st)))
			status = fail("bucket stats", rc);
		else if (json)
			printf("{\"bucket\": \"%s\", \"id\": \"%s\", \"owner\": \"%s\", "
			       "\"bytes\": %" PRId64 ", \"objects\": %" PRId64
			       ", \"quota_bytes\": %" PRId64 ", \"quota_objects\": %" PRId64
			       ", \"shards\": %" PRIu32 "}\n",
			       pos[2], st.id, st.owner, st.bytes, st.objects, st.quota_bytes,
			       st.quota_objects, st.shards);
		else
			printf("bucket:  %s (id %s, owner %s)\nholds:   %" PRId64 " bytes, %" PRId64
			       " objects in %" PRIu32 " index shard(s)\nquota:   %" PRId64
			       " bytes, %" PRId64 " objects (0: none)\n",
			       pos[2], st.id, st.owner, st.bytes, st.objects, st.shards,
			       st.quota_bytes, st.quota_objects);
	} else if (!strcmp(pos[0], "user") && !strcmp(pos[1], "stats") && npos == 3) {
		int64_t b = 0, o = 0;

		if ((rc = rgw_admin_user_usage(cl, pool, pos[2], sync, &b, &o)))
			status = fail("user stats", rc);
		else if (json)
			printf("{\"uid\": \"%s\", \"bytes\": %" PRId64 ", \"objects\": %" PRId64
			       ", \"synced\": %s}\n",
			       pos[2], b, o, sync ? "true" : "false");
		else
			printf("%s holds %" PRId64 " bytes in %" PRId64 " objects%s\n", pos[2], b,
			       o, sync ? " (usage counter set)" : "");
	} else if (!strcmp(pos[0], "lc") && !strcmp(pos[1], "run") && npos <= 3) {
		struct rgw_lc_counts lc;
		uint64_t ms = 0;

		if (day && (cm_parse_duration_ms(day, &ms) || ms < 1000 || ms > 86400000)) {
			fprintf(stderr, "clusterctl: s3 lc run: --day takes 1s to 24h\n");
			status = 2;
		} else if ((rc = rgw_admin_lc_run(cl, pool, npos == 3 ? pos[2] : NULL,
						  (unsigned)(ms / 1000), &lc))) {
			status = fail("lc run", rc);
		} else if (json) {
			printf("{\"buckets\": %u, \"expired\": %u, \"noncurrent\": %u, "
			       "\"delete_markers\": %u, \"uploads_aborted\": %u}\n",
			       lc.buckets, lc.expired, lc.noncurrent, lc.markers, lc.aborted);
		} else {
			printf("lifecycle: %u buckets: %u objects expired, %u older versions and %u "
			       "delete markers removed, %u incomplete uploads aborted\n",
			       lc.buckets, lc.expired, lc.noncurrent, lc.markers, lc.aborted);
		}
	} else if (!strcmp(pos[0], "key") && !strcmp(pos[1], "add") && npos == 3) {
		if ((rc = rgw_admin_key_add(cl, pool, pos[2], access, secret)))
			status = fail("key add", rc);
		else
			print_keys(json, pos[2], access, secret);
	} else if (!strcmp(pos[0], "key") && !strcmp(pos[1], "rm") && npos == 3) {
		if ((rc = rgw_admin_key_rm(cl, pool, pos[2])))
			status = fail("key rm", rc);
	} else {
		status = s3_usage();
	}
	cairn_shutdown(cl);
	return status;
}
