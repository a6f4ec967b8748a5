/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store under faults: a flipped byte on the device (-EIO, fsck --deep
 * names it), mounts it must refuse, a full metadata filesystem, a device
 * whose writes fail, and a raw block device (a loop device). Part of
 * store_test (store_test.h).
 */
#include "store_test.h"

START_TEST(test_checksum_catches_corruption)
{
	static uint8_t a[65536];
	struct os_fsck_report rep;
	struct cm_buf *b;
	uint8_t byte;
	int fd;
	uint64_t victim = 0;

	mkcoll();
	cm_test_fill(a, sizeof(a), 9);
	write_obj("good", 0, a, sizeof(a));
	write_obj("bad", 0, a, sizeof(a));
	os_umount(g_s);
	g_s = NULL;
	/* Find a block of "bad" on the device by its content and flip a byte in it. */
	fd = open(g_dev, O_RDWR);
	ck_assert_int_ge(fd, 0);
	{
		uint8_t blk[4096];
		int hits = 0;

		for (uint64_t off = 4096; pread(fd, blk, 4096, (off_t)off) == 4096; off += 4096) {
			if (memcmp(blk, a + 8192, 4096) == 0 && ++hits == 2) {
				victim = off; /* the second copy: "bad" was written second */
				break;
			}
		}
	}
	ck_assert_uint_ne(victim, 0);
	ck_assert_int_eq(pread(fd, &byte, 1, (off_t)victim + 100), 1);
	byte ^= 0x5a;
	ck_assert_int_eq(pwrite(fd, &byte, 1, (off_t)victim + 100), 1);
	close(fd);
	mount_store();
	ck_assert_int_eq(rd("bad", 0, sizeof(a), &b), -EIO);
	ck_assert_int_eq(rd("bad", 8192 + 100, 1, &b), -EIO);
	ck_assert_int_eq(rd("bad", 0, 8192, &b), 0); /* the blocks before are fine */
	cm_buf_put(b);
	check_obj("good", a, sizeof(a));
	ck_assert_int_eq(os_fsck(g_s, false, &rep), 0);
	ck_assert_uint_eq(rep.errors, 0);
	ck_assert_int_eq(os_fsck(g_s, true, &rep), 0);
	ck_assert_uint_eq(rep.csum_errors, 1);
	ck_assert_msg(strstr(rep.first_error, "c/bad") && strstr(rep.first_error, "offset 8192"),
		      "%s", rep.first_error);
	{
		struct os_usage u;

		os_get_usage(g_s, &u);
		ck_assert_uint_ge(u.csum_errors, 2);
	}
	/* Rewriting the object heals it. */
	write_obj("bad", 0, a, sizeof(a));
	check_obj("bad", a, sizeof(a));
}

END_TEST

START_TEST(test_mount_refusals)
{
	struct os_opts o;
	struct os_store *s2;
	char other[128];
	int fd;

	os_umount(g_s);
	g_s = NULL;
	opts(&o);
	/* Not a store. */
	snprintf(other, sizeof(other), "%s/empty", g_dir);
	fd = open(other, O_RDWR | O_CREAT, 0600);
	ck_assert_int_eq(posix_fallocate(fd, 0, 1 << 20), 0);
	close(fd);
	o.path = other;
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EINVAL);
	/* Another cluster's or another OSD's store. */
	o.path = g_dev;
	o.fsid = "another-fsid";
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EINVAL);
	o.fsid = "test-fsid";
	o.osd_id = 4;
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EINVAL);
	o.osd_id = 3;
	o.path = other;
	/* Metadata of another store. */
	ck_assert_int_eq(os_mkfs(&o), 0);
	o.path = g_dev;
	{
		char db[160];

		snprintf(db, sizeof(db), "%s.db", other);
		o.db_path = db;
		ck_assert_int_eq(os_mount(g_r, &o, &s2), -EINVAL);
	}
	mount_store();
}

END_TEST

/*
 * On a raw block device (a loop device over a file): its size comes from
 * the device, not a file's length; its metadata needs a place given; made,
 * written (copy-on-write and deferred), remounted, refused once the device
 * is smaller than its label says, mounted again once it is not, fsck --deep
 * clean.
 */
START_TEST(test_block_device)
{
	static uint8_t model[1 << 20], data[70000];
	char file[128], cmd[256];
	struct os_opts o;
	struct os_store *s2;
	struct os_usage u;
	uint64_t seed = 7;
	int fd;

	cm_log_set_level(CM_LOG_ERR);
	snprintf(g_dir, sizeof(g_dir), "/tmp/cairn-store-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g_dir));
	snprintf(file, sizeof(file), "%s/file", g_dir);
	fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(posix_fallocate(fd, 0, 128 << 20), 0);
	close(fd);
	if (cm_test_loop_attach(file, g_dev, sizeof(g_dev))) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
		ck_assert_int_eq(system(cmd), 0);
		cm_test_skip("store_test: no loop device (not root?): the block device test");
		return;
	}
	/* Without a place for its metadata ("<device>.db" would be in /dev): refused. */
	opts(&o);
	ck_assert_int_eq(os_mkfs(&o), -EINVAL);
	snprintf(g_db, sizeof(g_db), "%s/db", g_dir);
	opts(&o);
	ck_assert_int_eq(os_mkfs(&o), 0);
	ck_assert_int_eq(os_mkfs(&o), -EEXIST);
	g_r = cm_test_reactor();
	mount_store();
	os_get_usage(g_s, &u);
	ck_assert_uint_le(u.total_bytes, 128 << 20);
	ck_assert_uint_gt(u.total_bytes, 100 << 20);
	ck_assert_uint_gt(u.journal_size, 0);
	mkcoll();
	cm_test_fill(model, sizeof(model), 1);
	write_obj("obj", 0, model, sizeof(model));
	for (int i = 0; i < 40; i++) {
		uint64_t off, len;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		len = i % 4 == 0 ? sizeof(data) : 1 + (seed >> 40) % 9000;
		off = (seed >> 20) % (sizeof(model) - len);
		cm_test_fill(data, len, seed);
		write_obj("obj", off, data, len);
		memcpy(model + off, data, len);
	}
	check_obj("obj", model, sizeof(model));
	os_get_usage(g_s, &u);
	ck_assert_uint_gt(u.deferred_writes, 10);
	os_umount(g_s);
	g_s = NULL;
	/* Smaller than the label says: refused. */
	ck_assert_int_eq(truncate(file, 120 << 20), 0);
	ck_assert_int_eq(cm_test_loop_resize(g_dev), 0);
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EINVAL);
	ck_assert_int_eq(truncate(file, 128 << 20), 0);
	ck_assert_int_eq(cm_test_loop_resize(g_dev), 0);
	o.db_path = NULL;
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EINVAL);
	mount_store();
	check_obj("obj", model, sizeof(model));
	fsck_clean(true);
	os_umount(g_s);
	g_s = NULL;
	cm_reactor_destroy(g_r);
	cm_test_loop_detach(g_dev);
	g_db[0] = 0;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
	ck_assert_int_eq(system(cmd), 0);
}

END_TEST

/*
 * The metadata's filesystem fills up (the DB on a 6 MiB tmpfs; root only):
 * transactions fail with an error — none waits for ever — and after the
 * filesystem has room again every acknowledged one is there.
 */
START_TEST(test_db_filesystem_full)
{
	static uint8_t val[16 << 10];
	char fs[128], db[160], cmd[400];
	struct os_opts o;
	int acked = 0, rc = 0;

	os_umount(g_s);
	g_s = NULL;
	snprintf(fs, sizeof(fs), "%s/dbfs", g_dir);
	ck_assert_int_eq(mkdir(fs, 0700), 0);
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o size=6M tmpfs %s 2>/dev/null", fs);
	if (system(cmd) != 0) {
		cm_test_skip("store_test: no tmpfs mount (not root?): the full DB test");
		return;
	}
	snprintf(db, sizeof(db), "%s/db", fs);
	unmake_store();
	opts(&o);
	o.db_path = db;
	ck_assert_int_eq(os_mkfs(&o), 0);
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
	mkcoll();
	/* 16 KiB omap values, one per transaction: 40 MiB would not fit in 6. */
	for (int i = 0; i < 2560 && !rc; i++) {
		struct os_txn *t = txn();
		char k[16];

		snprintf(k, sizeof(k), "k%05d", i);
		cm_test_fill(val, sizeof(val), (uint64_t)i);
		ck_assert_int_eq(os_txn_omap_set(t, "c", "o", k, strlen(k), val, sizeof(val)), 0);
		rc = apply(t); /* fails the test if it never completes */
		if (!rc)
			acked++;
	}
	ck_assert_msg(rc != 0, "2560 transactions of 16 KiB fit a 6 MiB filesystem?");
	ck_assert_int_eq(rc, -EIO);
	ck_assert_int_gt(acked, 0);
	{
		/*
		 * The last acknowledged value, before the remount: it, or -EIO if
		 * its round never reached the memtable — never a missing key.
		 */
		char k[16];
		struct os_kv key, out;
		int r;

		snprintf(k, sizeof(k), "k%05d", acked - 1);
		key = (struct os_kv){ .key = (uint8_t *)k, .klen = strlen(k) };
		r = os_omap_get(g_s, "c", "o", &key, 1, &out);
		ck_assert_msg(r == -EIO || (r == 0 && out.val != NULL),
			      "acknowledged key %s: %d, %s", k, r, r ? "" : "missing");
		if (r == 0) {
			cm_test_fill(val, sizeof(val), (uint64_t)(acked - 1));
			ck_assert(out.vlen == sizeof(val) &&
				  memcmp(out.val, val, sizeof(val)) == 0);
			free(out.key);
			free(out.val);
		}
	}
	os_umount(g_s);
	g_s = NULL;
	/* Room again: every acknowledged transaction is there. */
	snprintf(cmd, sizeof(cmd), "mount -o remount,size=256M %s", fs);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
	for (int i = 0; i < acked; i++) {
		char k[16];
		struct os_kv key, out;

		snprintf(k, sizeof(k), "k%05d", i);
		key = (struct os_kv){ .key = (uint8_t *)k, .klen = strlen(k) };
		ck_assert_int_eq(os_omap_get(g_s, "c", "o", &key, 1, &out), 0);
		ck_assert_msg(out.val != NULL, "acknowledged key %s is missing", k);
		cm_test_fill(val, sizeof(val), (uint64_t)i);
		ck_assert(out.vlen == sizeof(val) && memcmp(out.val, val, sizeof(val)) == 0);
		free(out.key);
		free(out.val);
	}
	fprintf(stderr,
		"store_test: %d transactions acknowledged before the DB filesystem filled\n",
		acked);
	fsck_clean(true);
	os_umount(g_s);
	g_s = NULL;
	snprintf(cmd, sizeof(cmd), "umount %s", fs);
	ck_assert_int_eq(system(cmd), 0);
}

END_TEST

/*
 * A device write that fails (the device's file on a tmpfs that fills up:
 * ENOSPC from the file system under it, as a dying disk gives EIO) fails
 * its transaction and every one queued after it — they were prepared on
 * top of its onodes — with -EIO, and the store refuses further ones; every
 * transaction acknowledged before is whole after a remount.
 */
START_TEST(test_device_write_fails)
{
	enum { NT = 24 };

	static uint8_t data[NT][1 << 20];
	struct done d[NT] = { { 0 } };
	char fs[128], dev[160], db[160], cmd[400];
	struct os_opts o;
	struct os_txn *t;
	int fd, first_fail = -1, acked = 0;

	os_umount(g_s);
	g_s = NULL;
	snprintf(fs, sizeof(fs), "%s/devfs", g_dir);
	ck_assert_int_eq(mkdir(fs, 0700), 0);
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o size=16M tmpfs %s 2>/dev/null", fs);
	if (system(cmd) != 0) {
		cm_test_skip(
			"store_test: no tmpfs mount (not root?): the failed device write test");
		return;
	}
	/* A 256 MiB device with room for its label, 4 MiB journal and ~11 MiB of data. */
	snprintf(dev, sizeof(dev), "%s/block", fs);
	snprintf(db, sizeof(db), "%s/devdb", g_dir);
	fd = open(dev, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 256 << 20), 0);
	close(fd);
	opts(&o);
	o.path = dev;
	o.db_path = db;
	o.no_direct = true; /* tmpfs */
	ck_assert_int_eq(os_mkfs(&o), 0);
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
	mkcoll();
	/* Four one at a time (they fit), then the rest queued at once: several
	 * in flight when the first write fails. */
	for (int i = 0; i < NT; i++) {
		char oid[16];

		snprintf(oid, sizeof(oid), "o%d", i);
		cm_test_fill(data[i], sizeof(data[i]), (uint64_t)i + 100);
		t = txn();
		ck_assert_int_eq(os_txn_write(t, "c", oid, 0, data[i], sizeof(data[i])), 0);
		os_queue(g_s, t, commit_cb, &d[i]);
		if (i < 4)
			ck_assert(cm_test_run_until(g_r, &d[i].done, 30000));
	}
	for (int i = 0; i < NT; i++) {
		ck_assert(cm_test_run_until(g_r, &d[i].done, 30000));
		if (d[i].rc && first_fail < 0)
			first_fail = i;
		if (first_fail >= 0)
			ck_assert_msg(d[i].rc == -EIO, "transaction %d after a failed one: %d", i,
				      d[i].rc);
		else
			acked++;
	}
	ck_assert_msg(first_fail >= 4, "24 MiB of writes on 11 MiB of room: first failure %d",
		      first_fail);
	/* Refused from now on, even without data. */
	t = txn();
	ck_assert_int_eq(os_txn_setattr(t, "c", "o0", "a", "b", 1), 0);
	ck_assert_int_eq(apply(t), -EIO);
	os_umount(g_s);
	g_s = NULL;
	/* Room again: every acknowledged write is whole. */
	snprintf(cmd, sizeof(cmd), "mount -o remount,size=512M %s", fs);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
	for (int i = 0; i < acked; i++) {
		char oid[16];

		snprintf(oid, sizeof(oid), "o%d", i);
		check_obj(oid, data[i], sizeof(data[i]));
	}
	fprintf(stderr, "store_test: %d of %d writes acknowledged before the device failed\n",
		acked, NT);
	fsck_clean(true);
	os_umount(g_s);
	g_s = NULL;
	snprintf(cmd, sizeof(cmd), "umount %s", fs);
	ck_assert_int_eq(system(cmd), 0);
}

END_TEST

void
store_fault_tests(TCase *tc, TCase *bdev)
{
	tcase_add_test(tc, test_checksum_catches_corruption);
	tcase_add_test(tc, test_mount_refusals);
	tcase_add_test(tc, test_db_filesystem_full);
	tcase_add_test(tc, test_device_write_fails);
	tcase_add_test(bdev, test_block_device);
}
