/* SPDX-License-Identifier: Apache-2.0 */
#include "testlib.h"

#include <sys/stat.h>

enum cm_reactor_backend
cm_test_backend(void)
{
	enum cm_reactor_backend b = CM_REACTOR_AUTO;
	const char *e = getenv("CAIRN_REACTOR");

	if (e && cm_reactor_backend_parse(e, &b))
		b = CM_REACTOR_AUTO;
	return b;
}

struct cm_reactor *
cm_test_reactor(void)
{
	struct cm_reactor_opts o;
	struct cm_reactor *r = NULL;
	int rc;

	cm_reactor_opts_init(&o, sizeof(o));
	o.backend = cm_test_backend();
	o.name = "test";
	rc = cm_reactor_create(&o, &r);
	ck_assert_int_eq(rc, 0);
	return r;
}

struct cm_reactor *
cm_test_child_reactor(void)
{
	struct cm_reactor_opts o;
	struct cm_reactor *r = NULL;

	cm_reactor_opts_init(&o, sizeof(o));
	o.backend = cm_test_backend();
	o.name = "test";
	if (cm_reactor_create(&o, &r))
		_exit(6);
	return r;
}

bool
cm_test_run_until(struct cm_reactor *r, const volatile bool *flag, int timeout_ms)
{
	uint64_t end = cm_now_ms() + (uint64_t)timeout_ms;

	while (!*flag) {
		uint64_t now = cm_now_ms();

		if (now >= end)
			return false;
		cm_reactor_run_once(r, (int)CM_MIN(end - now, (uint64_t)50));
	}
	return true;
}

bool
cm_test_run_until_fn(struct cm_reactor *r, bool (*cond)(void *), void *arg, int timeout_ms)
{
	uint64_t end = cm_now_ms() + (uint64_t)timeout_ms;

	while (!cond(arg)) {
		uint64_t now = cm_now_ms();

		if (now >= end)
			return false;
		cm_reactor_run_once(r, (int)CM_MIN(end - now, (uint64_t)50));
	}
	return true;
}

/* Skips are counted in a file the forked tests inherit (by name, in the environment). */
#define SKIP_ENV "CM_TEST_SKIP_FILE"

void
cm_test_skip(const char *why)
{
	const char *path = getenv(SKIP_ENV);
	FILE *f = path ? fopen(path, "a") : NULL;

	fprintf(stderr, "SKIPPED: %s\n", why);
	if (f) {
		fprintf(f, "%s\n", why);
		fclose(f);
	}
}

int
cm_test_main(Suite *s)
{
	SRunner *sr = srunner_create(s);
	char path[64];
	struct stat st;
	int failed, fd;

	snprintf(path, sizeof(path), "/tmp/cm-test-skips-XXXXXX");
	fd = mkstemp(path);
	if (fd >= 0) {
		close(fd);
		setenv(SKIP_ENV, path, 1);
	}
	/* Fork mode (a crash fails one test), unless CK_FORK=no asks otherwise (gdb). */
	if (!getenv("CK_FORK"))
		srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (fd >= 0) {
		bool skipped = stat(path, &st) == 0 && st.st_size > 0;

		unlink(path);
		if (!failed && skipped) {
			fprintf(stderr, "some tests could not run here: SKIPPED\n");
			return CM_TEST_SKIPPED;
		}
	}
	return failed ? 1 : 0;
}

uint64_t
cm_test_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

void
cm_test_fill(void *buf, size_t len, uint64_t seed)
{
	uint8_t *p = buf;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v = cm_test_mix(seed + i);

		memcpy(p + i, &v, 8);
	}
	if (i < len) {
		uint64_t v = cm_test_mix(seed + i);

		memcpy(p + i, &v, len - i);
	}
}

long
cm_test_check(const void *buf, size_t len, uint64_t seed)
{
	const uint8_t *p = buf;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v = cm_test_mix(seed + i);

		if (memcmp(p + i, &v, 8))
			return (long)i;
	}
	if (i < len) {
		uint64_t v = cm_test_mix(seed + i);

		if (memcmp(p + i, &v, len - i))
			return (long)i;
	}
	return -1;
}

long
cm_test_first_diff(const void *a, const void *b, size_t len)
{
	static const uint8_t zero[4096];
	const uint8_t *p = a, *q = b;

	for (size_t at = 0; at < len;) {
		size_t n = len - at < sizeof(zero) ? len - at : sizeof(zero);
		const uint8_t *r = q ? q + at : zero;

		if (memcmp(p + at, r, n)) {
			for (size_t i = 0; i < n; i++)
				if (p[at + i] != r[i])
					return (long)(at + i);
		}
		at += n;
	}
	return -1;
}

int
cm_test_loop_attach(const char *file, char *dev, size_t devlen)
{
	char cmd[512];

	for (int dio = 1; dio >= 0; dio--) {
		FILE *p;
		bool ok;

		snprintf(cmd, sizeof(cmd), "losetup %s -f --show '%s' 2>/dev/null",
			 dio ? "--direct-io=on" : "", file);
		p = popen(cmd, "r");
		if (!p)
			break;
		ok = fgets(dev, (int)devlen, p) != NULL;
		if (pclose(p) == 0 && ok && strncmp(dev, "/dev/loop", 9) == 0) {
			dev[strcspn(dev, "\n")] = 0;
			return 0;
		}
	}
	dev[0] = 0;
	fprintf(stderr, "no loop device for %s (%s)\n", file,
		geteuid() ? "not root" : "losetup failed");
	return -1;
}

int
cm_test_loop_resize(const char *dev)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "losetup -c '%s'", dev);
	return system(cmd) == 0 ? 0 : -1;
}

void
cm_test_loop_detach(const char *dev)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "losetup -d '%s'", dev);
	if (dev[0] && system(cmd) != 0)
		fprintf(stderr, "losetup -d %s failed\n", dev);
}
