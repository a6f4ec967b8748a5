/* SPDX-License-Identifier: Apache-2.0 */
/* Entity keys (common/src/auth.c) and caps (common/src/caps.c). */
#include "cm/auth.h"
#include "cm/caps.h"
#include "testlib.h"

#include <sys/stat.h>

START_TEST(test_names)
{
	ck_assert(cm_auth_valid_name("client.admin"));
	ck_assert(cm_auth_valid_name("osd.7f1c2d3e-aaaa-bbbb-cccc-0123456789ab"));
	ck_assert(cm_auth_valid_name("client.rgw.gw-1_a"));
	ck_assert(cm_auth_valid_name("mds.a"));
	ck_assert(!cm_auth_valid_name("client."));
	ck_assert(!cm_auth_valid_name("client"));
	ck_assert(!cm_auth_valid_name("admin"));
	ck_assert(!cm_auth_valid_name("rgw.a"));
	ck_assert(!cm_auth_valid_name("client.a b"));
	ck_assert(!cm_auth_valid_name("client.a;b"));
	ck_assert(!cm_auth_valid_name(""));
	ck_assert(!cm_auth_valid_name(NULL));
	{
		char n[80];

		memset(n, 'x', sizeof(n));
		memcpy(n, "client.", 7);
		n[CM_AUTH_NAME_MAX] = 0;
		ck_assert(cm_auth_valid_name(n));
		n[CM_AUTH_NAME_MAX] = 'x';
		n[CM_AUTH_NAME_MAX + 1] = 0;
		ck_assert(!cm_auth_valid_name(n));
	}
}

END_TEST

START_TEST(test_key_base64)
{
	uint8_t k[CM_AUTH_KEY_LEN], k2[CM_AUTH_KEY_LEN];
	char b[CM_AUTH_KEY_B64 + 1], bad[CM_AUTH_KEY_B64 + 8];

	for (int round = 0; round < 100; round++) {
		ck_assert_int_eq(cm_auth_key_random(k), 0);
		cm_auth_key_encode(k, b);
		ck_assert_uint_eq(strlen(b), CM_AUTH_KEY_B64);
		ck_assert_int_eq(cm_auth_key_decode(b, k2), 0);
		ck_assert_mem_eq(k, k2, sizeof(k));
	}
	snprintf(bad, sizeof(bad), "  %s\n", b);
	ck_assert_int_eq(cm_auth_key_decode(bad, k2), 0);
	ck_assert_mem_eq(k, k2, sizeof(k));
	/* Short, long, a bad character, no padding. */
	ck_assert_int_eq(cm_auth_key_decode(b + 1, k2), -EINVAL);
	snprintf(bad, sizeof(bad), "%sA", b);
	ck_assert_int_eq(cm_auth_key_decode(bad, k2), -EINVAL);
	snprintf(bad, sizeof(bad), "%s", b);
	bad[5] = '!';
	ck_assert_int_eq(cm_auth_key_decode(bad, k2), -EINVAL);
	snprintf(bad, sizeof(bad), "%s", b);
	bad[CM_AUTH_KEY_B64 - 1] = 'A';
	ck_assert_int_eq(cm_auth_key_decode(bad, k2), -EINVAL);
	ck_assert_int_eq(cm_auth_key_decode("", k2), -EINVAL);
}

END_TEST

START_TEST(test_derive)
{
	uint8_t a[CM_AUTH_KEY_LEN], b[CM_AUTH_KEY_LEN], c[CM_AUTH_KEY_LEN];
	/* RFC 5869 test case 3 (no salt, no info): the first 32 bytes of its OKM. */
	static const uint8_t ikm[22] = { 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b,
					 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b,
					 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b };
	static const uint8_t okm[32] = { 0x8d, 0xa4, 0xe7, 0x75, 0xa5, 0x63, 0xc1, 0x8f,
					 0x71, 0x5f, 0x80, 0x2a, 0x06, 0x3c, 0x5a, 0x31,
					 0xb8, 0xa1, 0x1f, 0x5c, 0x5e, 0xe1, 0x87, 0x9e,
					 0xc3, 0x45, 0x4e, 0x5f, 0x3c, 0x73, 0x8d, 0x2d };

	ck_assert_int_eq(cm_auth_derive(ikm, sizeof(ikm), "", a), 0);
	ck_assert_mem_eq(a, okm, sizeof(okm));
	ck_assert_int_eq(cm_auth_kek("0123456789abcdef0123", a), 0);
	ck_assert_int_eq(cm_auth_entity_key("0123456789abcdef0123", CM_AUTH_ADMIN, b), 0);
	ck_assert_int_eq(cm_auth_entity_key("0123456789abcdef0123", CM_AUTH_BOOTSTRAP_OSD, c), 0);
	ck_assert_mem_ne(a, b, sizeof(a));
	ck_assert_mem_ne(b, c, sizeof(b));
	ck_assert_int_eq(cm_auth_entity_key("0123456789abcdef0124", CM_AUTH_ADMIN, c), 0);
	ck_assert_mem_ne(b, c, sizeof(b));
	ck_assert_int_eq(cm_auth_entity_key("0123456789abcdef0123", CM_AUTH_ADMIN, c), 0);
	ck_assert_mem_eq(b, c, sizeof(b));
}

END_TEST

START_TEST(test_seal)
{
	uint8_t k[CM_AUTH_KEY_LEN], k2[CM_AUTH_KEY_LEN], *s, *o;
	size_t sl, ol;
	const char *msg = "the session key and caps";

	cm_auth_key_random(k);
	cm_auth_key_random(k2);
	ck_assert_int_eq(cm_auth_seal(k, "osd.1", 5, msg, strlen(msg), &s, &sl), 0);
	ck_assert_uint_eq(sl, strlen(msg) + CM_AUTH_SEAL_OVERHEAD);
	ck_assert_int_eq(cm_auth_open(k, "osd.1", 5, s, sl, &o, &ol), 0);
	ck_assert_uint_eq(ol, strlen(msg));
	ck_assert_str_eq((char *)o, msg);
	free(o);
	/* Another key, another aad, any changed byte, too short: refused. */
	ck_assert_int_eq(cm_auth_open(k2, "osd.1", 5, s, sl, &o, &ol), -EBADMSG);
	ck_assert_int_eq(cm_auth_open(k, "osd.2", 5, s, sl, &o, &ol), -EBADMSG);
	ck_assert_int_eq(cm_auth_open(k, NULL, 0, s, sl, &o, &ol), -EBADMSG);
	for (size_t i = 0; i < sl; i++) {
		s[i] ^= 0x40;
		ck_assert_int_eq(cm_auth_open(k, "osd.1", 5, s, sl, &o, &ol), -EBADMSG);
		s[i] ^= 0x40;
	}
	ck_assert_int_eq(cm_auth_open(k, "osd.1", 5, s, CM_AUTH_SEAL_OVERHEAD - 1, &o, &ol),
			 -EBADMSG);
	free(s);
	/* Empty plaintext. */
	ck_assert_int_eq(cm_auth_seal(k, NULL, 0, "", 0, &s, &sl), 0);
	ck_assert_int_eq(cm_auth_open(k, NULL, 0, s, sl, &o, &ol), 0);
	ck_assert_uint_eq(ol, 0);
	free(o);
	free(s);
}

END_TEST

START_TEST(test_keyring)
{
	char dir[] = "/tmp/cairn-keyring-XXXXXX", path[128], err[256], text[256];
	uint8_t k[CM_AUTH_KEY_LEN], k2[CM_AUTH_KEY_LEN];
	struct stat st;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/client.a.keyring", dir);
	cm_auth_key_random(k);
	ck_assert_int_eq(cm_keyring_write(path, "client.a", k), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(cm_keyring_read(path, "client.a", k2, err, sizeof(err)), 0);
	ck_assert_mem_eq(k, k2, sizeof(k));
	ck_assert_int_eq(cm_keyring_read(path, "client.b", k2, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "no key for client.b"));
	/* Readable by the group: refused, and the message says how to fix it. */
	chmod(path, 0640);
	ck_assert_int_eq(cm_keyring_read(path, "client.a", k2, err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "chmod 600"));
	chmod(path, 0600);
	snprintf(path, sizeof(path), "%s/none", dir);
	ck_assert_int_eq(cm_keyring_read(path, "client.a", k2, err, sizeof(err)), -ENOENT);
	/* Several sections, comments, blanks. */
	ck_assert_int_gt(cm_keyring_format("client.b", k, text, sizeof(text)), 0);
	{
		char all[1024];
		uint8_t kb[CM_AUTH_KEY_LEN];

		cm_auth_key_random(kb);
		snprintf(all, sizeof(all),
			 "# a comment\n\n[client.a]\n\tcaps = mon r\n\tkey = %s\n; another\n%s",
			 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", text);
		ck_assert_int_eq(cm_keyring_parse(all, strlen(all), "client.b", k2), 0);
		ck_assert_mem_eq(k, k2, sizeof(k));
		ck_assert_int_eq(cm_keyring_parse(all, strlen(all), "client.a", k2), 0);
		ck_assert_uint_eq(k2[0], 0);
		ck_assert_int_eq(cm_keyring_parse(all, strlen(all), "client.c", k2), -ENOENT);
		ck_assert_int_eq(cm_keyring_parse("[client.a]\nkey = nope\n", 21, "client.a", k2),
				 -EBADMSG);
		ck_assert_int_eq(cm_keyring_parse("[client.a\n", 10, "client.a", k2), -EBADMSG);
		ck_assert_int_eq(cm_keyring_parse("[client.a]\njunk\n", 16, "client.a", k2),
				 -EBADMSG);
	}
	snprintf(path, sizeof(path), "%s/client.a.keyring", dir);
	f = fopen(path, "a");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	unlink(path);
	rmdir(dir);
}

END_TEST

START_TEST(test_caps_parse)
{
	struct cm_caps c;
	char err[256], out[CM_CAPS_MAX + 64];

	ck_assert_int_eq(cm_caps_parse("mon r; osd rw pool=a; osd r pool=b namespace=t-*", &c, err,
				       sizeof(err)),
			 0);
	ck_assert_uint_eq(c.mon, CM_CAP_R);
	ck_assert_uint_eq(c.nosd, 2);
	ck_assert_int_gt(cm_caps_format(&c, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "mon r; osd rw pool=a; osd r pool=b namespace=t-*");
	/* The pool and namespace rules. */
	ck_assert(cm_caps_osd(&c, "a", "", CM_CAP_RW, false));
	ck_assert(cm_caps_osd(&c, "a", "x", CM_CAP_W, true));
	ck_assert(!cm_caps_osd(&c, "c", "", CM_CAP_R, false));
	ck_assert(cm_caps_osd(&c, "b", "t-1", CM_CAP_R, false));
	ck_assert(cm_caps_osd(&c, "b", "t-", CM_CAP_R, false));
	ck_assert(!cm_caps_osd(&c, "b", "t-1", CM_CAP_W, false));
	ck_assert(!cm_caps_osd(&c, "b", "u", CM_CAP_R, false));
	ck_assert(!cm_caps_osd(&c, "b", "", CM_CAP_R, false));
	ck_assert(!cm_caps_osd(&c, "b", "t-1", CM_CAP_R, true)); /* all namespaces: not covered */
	ck_assert(cm_caps_mon(&c, CM_CAP_R));
	ck_assert(!cm_caps_mon(&c, CM_CAP_W));
	ck_assert(!cm_caps_is_osd(&c));
	cm_caps_fini(&c);

	ck_assert_int_eq(cm_caps_parse("osd r pool=p namespace=exact", &c, err, sizeof(err)), 0);
	ck_assert(cm_caps_osd(&c, "p", "exact", CM_CAP_R, false));
	ck_assert(!cm_caps_osd(&c, "p", "exactly", CM_CAP_R, false));
	ck_assert(!cm_caps_mon(&c, CM_CAP_R));
	cm_caps_fini(&c);

	ck_assert_int_eq(cm_caps_parse("admin", &c, err, sizeof(err)), 0);
	ck_assert(cm_caps_mon(&c, CM_CAP_RW));
	ck_assert(cm_caps_osd(&c, "any", "ns", CM_CAP_RW, true));
	cm_caps_fini(&c);

	ck_assert_int_eq(cm_caps_parse("profile osd", &c, err, sizeof(err)), 0);
	ck_assert(cm_caps_is_osd(&c));
	ck_assert(cm_caps_mon(&c, CM_CAP_R));
	ck_assert(!cm_caps_mon(&c, CM_CAP_W));
	ck_assert(cm_caps_osd(&c, "any", "", CM_CAP_RW, true));
	cm_caps_fini(&c);

	ck_assert_int_eq(cm_caps_parse("", &c, err, sizeof(err)), 0);
	ck_assert(!cm_caps_mon(&c, CM_CAP_R));
	ck_assert(!cm_caps_osd(&c, "a", "", CM_CAP_R, false));
	ck_assert_int_eq(cm_caps_format(&c, out, sizeof(out)), 0);
	cm_caps_fini(&c);
	ck_assert_int_eq(cm_caps_parse(" mon   rw ;; osd * ;", &c, err, sizeof(err)), 0);
	ck_assert_int_gt(cm_caps_format(&c, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "mon rw; osd rw");
	cm_caps_fini(&c);

	/* 1,024 bytes of grants whose canonical "; " spacing would not fit again. */
	{
		char longc[CM_CAPS_MAX + 1];
		size_t off = 0;

		while (off + 6 <= CM_CAPS_MAX) {
			memcpy(longc + off, "mon r;", 6);
			off += 6;
		}
		longc[off] = 0;
		ck_assert_int_eq(cm_caps_parse(longc, &c, err, sizeof(err)), 0);
		ck_assert_int_eq(cm_caps_format(&c, out, sizeof(out)), (int)strlen("mon r"));
		cm_caps_fini(&c);
		/* 74 grants: 962 bytes in, 1,034 canonical (fits out, not a caps string). */
		off = 0;
		for (int k = 0; k < 74; k++, off += 13)
			memcpy(longc + off, "osd r pool=a;", 13);
		longc[off] = 0;
		ck_assert_int_eq(cm_caps_parse(longc, &c, err, sizeof(err)), 0);
		ck_assert_int_eq(cm_caps_format(&c, out, sizeof(out)), -ENOSPC);
		cm_caps_fini(&c);
	}

	/* Refused, with a reason. */
	static const char *const bad[] = {
		"mon x",
		"mon",
		"osd",
		"osd r pool",
		"osd r pool=",
		"osd r x=y",
		"osd r pool=a pool=b",
		"profile",
		"profile mds",
		"admin now",
		"rgw r",
		"osd r namespace=a*b",
		"osd r pool=a*",
		"osd r pool=a namespace=b junk=c",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(cm_caps_parse(bad[i], &c, err, sizeof(err)) == -EINVAL, "%s", bad[i]);
		ck_assert_msg(strstr(err, "caps:") != NULL, "%s: %s", bad[i], err);
	}
	{
		char big[CM_CAPS_MAX + 2];

		memset(big, ' ', sizeof(big));
		big[sizeof(big) - 1] = 0;
		ck_assert_int_eq(cm_caps_parse(big, &c, err, sizeof(err)), -EINVAL);
	}
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("auth");

	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_key_base64);
	tcase_add_test(tc, test_derive);
	tcase_add_test(tc, test_seal);
	tcase_add_test(tc, test_keyring);
	tcase_add_test(tc, test_caps_parse);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
