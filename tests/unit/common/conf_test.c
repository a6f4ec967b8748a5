/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/conf.h"
#include "cm/err.h"
#include "testlib.h"

struct cfg {
	bool debug;
	int64_t level;
	uint64_t threads;
	uint64_t cache;
	uint64_t grace_ms;
	char *addr;
	char *key;
};

static int
no_spaces(const struct cm_opt *o, const char *v, char *err, size_t len)
{
	(void)o;
	if (strchr(v, ' ')) {
		snprintf(err, len, "must not contain spaces");
		return -EINVAL;
	}
	return 0;
}

static const struct cm_opt g_table[] = {
	CM_OPT("debug", CM_OPT_BOOL, "false", 0, 0, 0, struct cfg, debug, "verbose"),
	CM_OPT("level", CM_OPT_INT, "-1", -5, 5, 0, struct cfg, level, "a level"),
	CM_OPT("threads", CM_OPT_UINT, "2", 1, 64, 0, struct cfg, threads, "threads"),
	CM_OPT("cache_size", CM_OPT_SIZE, "64M", 0, 0, 0, struct cfg, cache, "cache"),
	CM_OPT("osd_grace", CM_OPT_DURATION, "20s", 1000, 3600000, 0, struct cfg, grace_ms,
	       "grace"),
	{ .name = "listen_addr",
	  .type = CM_OPT_STR,
	  .def = "127.0.0.1:6800",
	  .offset = offsetof(struct cfg, addr),
	  .help = "where",
	  .validate = no_spaces },
	CM_OPT("cluster_key", CM_OPT_STR, "", 0, 0, CM_OPT_F_SECRET, struct cfg, key, "key"),
	{ 0 },
};

static void
mk(struct cm_conf *c, struct cfg *v)
{
	memset(v, 0, sizeof(*v));
	memset(c, 0, sizeof(*c));
	c->table = g_table;
	c->base = v;
	c->section = "osd";
	c->id = "3";
	c->env_prefix = "CAIRN_";
	ck_assert_int_eq(cm_conf_defaults(c), 0);
}

START_TEST(test_parse_values)
{
	uint64_t v;
	bool b;

	ck_assert_int_eq(cm_parse_size("4096", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(cm_parse_size("64K", &v), 0);
	ck_assert_uint_eq(v, 65536);
	ck_assert_int_eq(cm_parse_size("4MiB", &v), 0);
	ck_assert_uint_eq(v, 4u << 20);
	ck_assert_int_eq(cm_parse_size("2 G", &v), 0);
	ck_assert_uint_eq(v, 2ull << 30);
	ck_assert_int_eq(cm_parse_size("-1", &v), -EINVAL);
	ck_assert_int_eq(cm_parse_size("12Q", &v), -EINVAL);
	ck_assert_int_eq(cm_parse_size("99999999999999999999", &v), -EINVAL);
	ck_assert_int_eq(cm_parse_size("20000000T", &v), -EINVAL); /* overflows */
	ck_assert_int_eq(cm_parse_duration_ms("20s", &v), 0);
	ck_assert_uint_eq(v, 20000);
	ck_assert_int_eq(cm_parse_duration_ms("500ms", &v), 0);
	ck_assert_uint_eq(v, 500);
	ck_assert_int_eq(cm_parse_duration_ms("10m", &v), 0);
	ck_assert_uint_eq(v, 600000);
	ck_assert_int_eq(cm_parse_duration_ms("250", &v), 0);
	ck_assert_uint_eq(v, 250);
	ck_assert_int_eq(cm_parse_duration_ms("soon", &v), -EINVAL);
	ck_assert_int_eq(cm_parse_bool("Yes", &b), 0);
	ck_assert(b);
	ck_assert_int_eq(cm_parse_bool("off", &b), 0);
	ck_assert(!b);
	ck_assert_int_eq(cm_parse_bool("maybe", &b), -EINVAL);
}

END_TEST

START_TEST(test_defaults)
{
	struct cm_conf c;
	struct cfg v;

	mk(&c, &v);
	ck_assert(!v.debug);
	ck_assert_int_eq(v.level, -1);
	ck_assert_uint_eq(v.threads, 2);
	ck_assert_uint_eq(v.cache, 64u << 20);
	ck_assert_uint_eq(v.grace_ms, 20000);
	ck_assert_str_eq(v.addr, "127.0.0.1:6800");
	cm_conf_free(&c);
	ck_assert_ptr_null(v.addr);
}

END_TEST

START_TEST(test_file_sections_and_precedence)
{
	struct cm_conf c;
	struct cfg v;
	/* [osd.3] beats [osd] beats [global], wherever they are in the file. */
	const char *text = "[osd.3]\n"
			   "threads = 7\n"
			   "[osd]\n"
			   "threads = 5\n"
			   "osd grace = 30s\n"
			   "[mon]\n"
			   "whatever = 1\n"
			   "[global]\n"
			   "threads = 3\n"
			   "cache-size = 1G\n"
			   "mon_only_thing = x\n";

	mk(&c, &v);
	ck_assert_int_eq(cm_conf_load_string(&c, text, "cairn.conf"), 0);
	ck_assert_uint_eq(v.threads, 7);
	ck_assert_uint_eq(v.grace_ms, 30000);
	ck_assert_uint_eq(v.cache, 1ull << 30);
	ck_assert_uint_eq(c.unknown_global, 1);
	ck_assert_ptr_nonnull(strstr(c.warning, "'mon_only_thing'"));
	cm_conf_free(&c);
}

END_TEST

START_TEST(test_file_errors_name_line_and_option)
{
	struct cm_conf c;
	struct cfg v;

	mk(&c, &v);
	ck_assert_int_eq(cm_conf_load_string(&c, "[osd]\n\nthreads = 100\n", "a.conf"), -CM_ECONF);
	ck_assert_str_eq(c.err, "a.conf:3: option 'threads': value 100 is outside [1, 64]");
	ck_assert_int_eq(cm_conf_load_string(&c, "[global]\ndebug = perhaps\n", "b.conf"),
			 -CM_ECONF);
	ck_assert_str_eq(c.err, "b.conf:2: option 'debug': 'perhaps' is not a boolean "
				"(true/false/yes/no/on/off)");
	ck_assert_int_eq(cm_conf_load_string(&c, "[osd]\nthreds = 4\n", "c.conf"), -CM_ECONF);
	ck_assert_str_eq(c.err, "c.conf:2: unknown option 'threds' in [osd]");
	ck_assert_int_eq(cm_conf_load_string(&c, "[osd]\nthis line has no equals\n", "d.conf"),
			 -CM_ECONF);
	ck_assert_ptr_nonnull(strstr(c.err, "d.conf:2: syntax error"));
	ck_assert_int_eq(cm_conf_load_string(&c, "[osd]\nlisten_addr = a b\n", "e.conf"),
			 -CM_ECONF);
	ck_assert_str_eq(c.err, "e.conf:2: option 'listen_addr': value 'a b' refused: must not "
				"contain spaces");
	ck_assert_int_eq(cm_conf_load_string(&c, "[osd]\ncluster_key = \nlevel = x\n", "f.conf"),
			 -CM_ECONF);
	ck_assert_int_eq(cm_conf_load_file(&c, "/nonexistent/cairn.conf"), -ENOENT);
	ck_assert_ptr_nonnull(strstr(c.err, "/nonexistent/cairn.conf: cannot open"));
	cm_conf_free(&c);
}

END_TEST

START_TEST(test_init_env_and_command_line)
{
	struct cm_conf c;
	struct cfg v;
	char path[] = "/tmp/cairn-conf-XXXXXX";
	int fd = mkstemp(path), first = -1;
	const char *text = "[osd]\nthreads = 5\nlevel = 2\ncluster_key = sekrit\n";
	char *envp[] = { "CAIRN_THREADS=9", "CAIRN_LEVEL=3", "OTHER=1", NULL };
	char *argv[] = { "cairn-osd",       "-c",         path, "--level", "4", "--debug",
			 "--cache-size=8M", "positional", NULL };
	FILE *out = tmpfile();
	char buf[4096] = { 0 };

	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	mk(&c, &v);
	ck_assert_int_eq(cm_conf_init(&c, 8, argv, envp, NULL, out, &first), 0);
	ck_assert_uint_eq(v.threads, 9); /* env beats file */
	ck_assert_int_eq(v.level, 4);    /* command line beats env */
	ck_assert(v.debug);
	ck_assert_uint_eq(v.cache, 8u << 20);
	ck_assert_str_eq(v.key, "sekrit");
	ck_assert_int_eq(first, 7);
	ck_assert_str_eq(c.conf_path, path);
	/* Secrets never printed. */
	cm_conf_dump(&c, out);
	rewind(out);
	ck_assert_int_gt(fread(buf, 1, sizeof(buf) - 1, out), 0);
	ck_assert_ptr_nonnull(strstr(buf, "cluster_key = (secret)"));
	ck_assert_ptr_null(strstr(buf, "sekrit"));
	cm_conf_free(&c);

	char *bad_env[] = { "CAIRN_THREADS=zero", NULL };

	mk(&c, &v);
	ck_assert_int_eq(cm_conf_init(&c, 1, argv, bad_env, NULL, out, NULL), -CM_ECONF);
	ck_assert_str_eq(c.err, "environment CAIRN_THREADS: option 'threads': 'zero' is not a "
				"valid uint");
	cm_conf_free(&c);

	char *bad_arg[] = { "cairn-osd", "--nope", "1", NULL };

	mk(&c, &v);
	ck_assert_int_eq(cm_conf_init(&c, 3, bad_arg, NULL, NULL, out, NULL), -CM_ECONF);
	ck_assert_str_eq(c.err, "command line: unknown option --nope (see --help)");
	cm_conf_free(&c);
	fclose(out);
	unlink(path);
}

END_TEST

START_TEST(test_help_generated)
{
	struct cm_conf c;
	struct cfg v;
	char *argv[] = { "cairn-osd", "--help", NULL };
	FILE *out = tmpfile();
	char buf[8192] = { 0 };

	mk(&c, &v);
	ck_assert_int_eq(cm_conf_init(&c, 2, argv, NULL, NULL, out, NULL), 1);
	rewind(out);
	ck_assert_int_gt(fread(buf, 1, sizeof(buf) - 1, out), 0);
	ck_assert_ptr_nonnull(strstr(buf, "usage: cairn-osd"));
	ck_assert_ptr_nonnull(
		strstr(buf, "--osd-grace <duration>  (default 20s)  [1000..3600000]"));
	ck_assert_ptr_nonnull(strstr(buf, "--cache-size <size>  (default 64M)"));
	fclose(out);
	cm_conf_free(&c);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("conf");
	TCase *tc = tcase_create("conf");

	tcase_add_test(tc, test_parse_values);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_file_sections_and_precedence);
	tcase_add_test(tc, test_file_errors_name_line_and_option);
	tcase_add_test(tc, test_init_env_and_command_line);
	tcase_add_test(tc, test_help_generated);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
