/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/err.h"
#include "cm/log.h"
#include "testlib.h"

CM_LOG_SUBSYS(test);

START_TEST(test_strerror_errno)
{
	ck_assert_str_eq(cm_strerror(-EIO), "Input/output error");
	ck_assert_str_eq(cm_errname(-EIO), "EIO");
	ck_assert_str_eq(cm_strerror(0), "success");
}

END_TEST

START_TEST(test_strerror_cairn)
{
	ck_assert_str_eq(cm_strerror(-CM_EAUTH), "authentication failed");
	ck_assert_str_eq(cm_errname(-CM_EAUTH), "CM_EAUTH");
	ck_assert_str_eq(cm_errname(CM_ECRC), "CM_ECRC");
	for (int c = CM_ERR_BASE; c < CM_ERR_LAST; c++) {
		ck_assert_ptr_nonnull(cm_strerror(-c));
		ck_assert_int_ne(strncmp(cm_errname(-c), "CM_", 3), 1);
	}
	ck_assert_str_eq(cm_strerror(-999999), "unknown error");
}

END_TEST

START_TEST(test_log_levels_and_file)
{
	char path[] = "/tmp/cairn-log-XXXXXX";
	int fd = mkstemp(path);
	char buf[4096] = { 0 };
	enum cm_log_level l;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(cm_log_set_file(path), 0);
	cm_log_set_level(CM_LOG_INFO);
	CM_INFO("hello key=%d", 7);
	CM_DEBUG("invisible");
	ck_assert_int_eq(cm_log_set_debug("test", true), 0);
	CM_DEBUG("visible-debug");
	ck_assert_int_eq(cm_log_set_debug("nosuchsubsys", true), -ENOENT);
	CM_ERR_RC(-EIO, "failed obj=%s", "x");
	for (int i = 0; i < 100; i++)
		CM_LOG_RL(CM_LOG_WARN, "hot path i=%d", i);
	cm_log_set_file(NULL);
	ck_assert_int_gt(read(fd, buf, sizeof(buf) - 1), 0);
	ck_assert_ptr_nonnull(strstr(buf, "INFO test: hello key=7"));
	ck_assert_ptr_null(strstr(buf, "invisible"));
	ck_assert_ptr_nonnull(strstr(buf, "visible-debug"));
	ck_assert_ptr_nonnull(strstr(buf, "failed obj=x rc=-5 (EIO: Input/output error)"));
	/* The rate limit lets 10 through in one second. */
	ck_assert_ptr_nonnull(strstr(buf, "hot path i=9"));
	ck_assert_ptr_null(strstr(buf, "hot path i=10"));
	ck_assert_int_eq(cm_log_level_parse("debug", &l), 0);
	ck_assert_int_eq(l, CM_LOG_DEBUG);
	ck_assert_int_eq(cm_log_level_parse("loud", &l), -EINVAL);
	close(fd);
	unlink(path);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("err");
	TCase *tc = tcase_create("err");

	tcase_add_test(tc, test_strerror_errno);
	tcase_add_test(tc, test_strerror_cairn);
	tcase_add_test(tc, test_log_levels_and_file);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
