/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Clones by reference (docs/design/store-clone.md): the shared blocks'
 * reference counts against a model, clones and stashes that take no data
 * blocks, copy-on-write of shared blocks, counts across a remount, and
 * mount's checks of damaged refcount records.
 */
#include "store_test.h"
#include "store_internal.h" /* the refcount map (os_refs) */

/* The refcount map against a per-block array: random sets, removals, iteration. */
START_TEST(test_refs_map)
{
	enum { N = 5000 };

	static uint32_t model[N];
	struct os_refs r = { 0 };
	uint64_t seed = 88172645463325252ull, pb;
	uint32_t v;
	size_t n = 0, seen;

	memset(model, 0, sizeof(model));
	for (int step = 0; step < 200000; step++) {
		uint64_t b;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		b = 1 + seed % (N - 1);
		/* Mostly small counts, often 0 (removed), so deletions shift runs. */
		v = (uint32_t)((seed >> 32) % 5);
		ck_assert_int_eq(os_refs_set(&r, b, v), 0);
		n += (v != 0) - (model[b] != 0);
		model[b] = v;
		if (step % 997 == 0) {
			for (uint64_t k = 1; k < N; k++)
				ck_assert_uint_eq(os_refs_get(&r, k), model[k]);
			ck_assert_uint_eq(r.n, n);
		}
	}
	seen = 0;
	for (size_t i = os_refs_next(&r, 0, &pb, &v); i; i = os_refs_next(&r, i, &pb, &v)) {
		ck_assert_uint_eq(model[pb], v);
		seen++;
	}
	ck_assert_uint_eq(seen, n);
	ck_assert_int_eq(os_refs_set(&r, 0, 2), -EINVAL);
	os_refs_fini(&r);
}

END_TEST

/* Blocks mapped by more than one extent, from a deep fsck that must find nothing wrong
 * (it checks the refcount records and the store's counts against the onodes). */
static uint64_t
shared_blocks(void)
{
	return fsck_clean(true).shared_blocks;
}

static uint64_t
free_bytes(void)
{
	struct os_usage u;

	/* Frees wait for the commit and older reads: let the reactor release them. */
	for (int k = 0; k < 10; k++)
		cm_reactor_run_once(g_r, 10);
	os_get_usage(g_s, &u);
	return u.free_bytes;
}

START_TEST(test_clone_shares_blocks)
{
	enum { SZ = 1 << 20 };

	static uint8_t a[SZ], b[SZ], blk[4096];
	uint64_t free0, free1;
	struct os_usage u0, u1;
	struct os_txn *t;

	mkcoll();
	free0 = free_bytes();
	cm_test_fill(a, sizeof(a), 21);
	write_obj("a", 0, a, sizeof(a));
	free1 = free_bytes();
	ck_assert_uint_eq(free0 - free1, SZ);
	/* The clone takes no data blocks. */
	t = txn();
	ck_assert_int_eq(os_txn_clone(t, "c", "a", "b"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(free_bytes(), free1);
	ck_assert_uint_eq(shared_blocks(), SZ / 4096);
	memcpy(b, a, sizeof(b));
	check_obj("b", b, SZ);
	/* A 4 KiB overwrite of a shared block is copy-on-write, never deferred in place. */
	os_get_usage(g_s, &u0);
	cm_test_fill(blk, sizeof(blk), 22);
	write_obj("a", 8192, blk, sizeof(blk));
	memcpy(a + 8192, blk, sizeof(blk));
	os_get_usage(g_s, &u1);
	ck_assert_uint_eq(u1.deferred_writes, u0.deferred_writes);
	ck_assert_uint_eq(u1.cow_writes, u0.cow_writes + 1);
	check_obj("a", a, SZ);
	check_obj("b", b, SZ);
	ck_assert_uint_eq(shared_blocks(), SZ / 4096 - 1);
	/* The clone's own changes: overwrite mid-extent, zero, truncate. */
	cm_test_fill(blk, sizeof(blk), 23);
	write_obj("b", 100000, blk, 3000);
	memcpy(b + 100000, blk, 3000);
	t = txn();
	ck_assert_int_eq(os_txn_zero(t, "c", "b", 200000, 50000), 0);
	ck_assert_int_eq(apply(t), 0);
	memset(b + 200000, 0, 50000);
	t = txn();
	ck_assert_int_eq(os_txn_truncate(t, "c", "b", 700001), 0);
	ck_assert_int_eq(apply(t), 0);
	memset(b + 700001, 0, SZ - 700001);
	check_obj("a", a, SZ);
	check_obj("b", b, 700001);
	/* A clone and a change of its source in one transaction, then a remount:
	 * the counts come back from the records. */
	t = txn();
	ck_assert_int_eq(os_txn_clone(t, "c", "a", "a2"), 0);
	ck_assert_int_eq(os_txn_write(t, "c", "a", 0, "changed", 7), 0);
	ck_assert_int_eq(apply(t), 0);
	os_umount(g_s);
	mount_store();
	check_obj("a2", a, SZ);
	check_obj("b", b, 700001);
	ck_assert_uint_gt(shared_blocks(), 0);
	memcpy(a, "changed", 7);
	check_obj("a", a, SZ);
	/* Every owner gone, in either order: every block back. */
	t = txn();
	ck_assert_int_eq(os_txn_remove(t, "c", "a"), 0);
	ck_assert_int_eq(apply(t), 0);
	check_obj("b", b, 700001);
	t = txn();
	ck_assert_int_eq(os_txn_remove(t, "c", "b"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shared_blocks(), 0); /* a2 alone owns what it maps */
	t = txn();
	ck_assert_int_eq(os_txn_remove(t, "c", "a2"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shared_blocks(), 0);
	ck_assert_uint_eq(free_bytes(), free0);
}

END_TEST

/* How many "R" records the unmounted store's KV holds. */
static unsigned
r_records(void)
{
	char path[256], *err = NULL;
	rocksdb_options_t *o = rocksdb_options_create();
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_t *db;
	rocksdb_iterator_t *it;
	unsigned n = 0;

	snprintf(path, sizeof(path), "%s.db", g_dev);
	db = rocksdb_open_for_read_only(o, path, 0, &err);
	ck_assert_msg(db && !err, "open %s: %s", path, err ? err : "");
	it = rocksdb_create_iterator(db, ro);
	for (rocksdb_iter_seek(it, "R", 1); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl;
		const char *k = rocksdb_iter_key(it, &kl);

		if (k[0] != 'R')
			break;
		n++;
	}
	rocksdb_iter_destroy(it);
	rocksdb_close(db);
	rocksdb_readoptions_destroy(ro);
	rocksdb_options_destroy(o);
	return n;
}

/*
 * The EC write's shape: stash the old data, truncate, write new, in one
 * transaction. The stash takes no blocks and no record is written (each
 * old block goes 1 -> 2 -> 1); rollback (unstash) and trim (remove) by
 * reference too.
 */
START_TEST(test_stash_by_reference)
{
	enum { SZ = 256 << 10 };

	static uint8_t a[SZ], b[4096];
	uint64_t free0, free1;
	struct os_usage u0, u1;
	struct os_txn *t;

	mkcoll();
	cm_test_fill(a, sizeof(a), 31);
	cm_test_fill(b, sizeof(b), 32);
	write_obj("o", 0, a, sizeof(a));
	free0 = free_bytes();
	os_get_usage(g_s, &u0);
	t = txn();
	ck_assert_int_eq(os_txn_stash(t, "c", "o", "\x01r1", 0, SZ), 0);
	ck_assert_int_eq(os_txn_truncate(t, "c", "o", 0), 0);
	ck_assert_int_eq(os_txn_write(t, "c", "o", 0, b, sizeof(b)), 0);
	ck_assert_int_eq(os_txn_truncate(t, "c", "o", sizeof(b)), 0);
	ck_assert_int_eq(apply(t), 0);
	os_get_usage(g_s, &u1);
	free1 = free_bytes();
	ck_assert_uint_eq(free0 - free1, sizeof(b));               /* only the new block */
	ck_assert_uint_eq(u1.prepare_retries, u0.prepare_retries); /* no data read on the side */
	ck_assert_uint_eq(shared_blocks(), 0);
	check_obj("o", b, sizeof(b));
	/* A partial overwrite: the stash shares the range, the write goes copy-on-write. */
	t = txn();
	ck_assert_int_eq(os_txn_stash(t, "c", "o", "\x01r2", 0, 4096), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shared_blocks(), 1);
	/* Rollback of the first: the old data comes back by reference, the stash goes. */
	t = txn();
	ck_assert_int_eq(os_txn_unstash(t, "c", "\x01r1", "o", 0, SZ), 0);
	ck_assert_int_eq(apply(t), 0);
	check_obj("o", a, sizeof(a));
	ck_assert_uint_eq(shared_blocks(), 0); /* r2's block: o no longer maps it */
	/* Trim: removing the stash frees what only it held. */
	t = txn();
	ck_assert_int_eq(os_txn_remove_any(t, "c", "\x01r2"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(free_bytes(), free0);
	ck_assert_uint_eq(shared_blocks(), 0);
	os_umount(g_s);
	ck_assert_uint_eq(r_records(), 0);
	mount_store();
	check_obj("o", a, sizeof(a));
}

END_TEST

static void
poke_refs(uint64_t pb, int refs)
{
	char key[9];
	uint8_t val[8];
	size_t vl = 0;

	key[0] = 'R';
	for (int i = 0; i < 8; i++)
		key[1 + i] = (char)(pb >> (56 - 8 * i));
	if (refs >= 0) {
		/* Refs{refs}: field 1, varint; or junk for refs 1000. */
		if (refs == 1000) {
			memcpy(val, "\xff\xff\xff", 3);
			vl = 3;
		} else {
			val[0] = 0x08;
			val[1] = (uint8_t)refs;
			vl = 2;
		}
	}
	db_poke(key, sizeof(key), refs >= 0 ? (const char *)val : NULL, vl);
}

/* Damaged "R" records: what mount corrects and what it refuses. */
START_TEST(test_refcount_damage)
{
	static uint8_t a[64 << 10];
	struct os_opts o;
	struct os_store *s2 = NULL;
	struct os_fsck_report rep;
	struct os_txn *t;
	uint64_t pb = 0;

	mkcoll();
	cm_test_fill(a, sizeof(a), 41);
	write_obj("a", 0, a, sizeof(a));
	t = txn();
	ck_assert_int_eq(os_txn_clone(t, "c", "a", "b"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shared_blocks(), 16);
	{
		uint32_t r;

		ck_assert_uint_ne(os_refs_next(&g_s->refs, 0, &pb, &r), 0);
		ck_assert_uint_eq(r, 2);
	}
	os_umount(g_s);
	g_s = NULL;
	opts(&o);
	/* A count too high: a leak, corrected at mount. */
	poke_refs(pb, 3);
	mount_store();
	ck_assert_uint_eq(shared_blocks(), 16);
	os_umount(g_s);
	g_s = NULL;
	/* A record over a block nobody maps twice: corrected (deleted). */
	poke_refs(60000, 2);
	mount_store();
	ck_assert_uint_eq(shared_blocks(), 16);
	os_umount(g_s);
	g_s = NULL;
	ck_assert_uint_eq(r_records(), 16);
	/* A count too low (the record lost): refused, it would free a live block.
	 * A mount for fsck reports it and changes nothing; repair rewrites it. */
	poke_refs(pb, -1);
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EUCLEAN);
	o.fsck_mount = true;
	ck_assert_int_eq(os_mount(g_r, &o, &s2), 0);
	ck_assert_int_eq(os_fsck(s2, false, &rep), 0);
	ck_assert_uint_eq(rep.errors, 1);
	ck_assert_msg(strstr(rep.first_error, "2 extents map it, its refcount record says 1"), "%s",
		      rep.first_error);
	os_umount(s2);
	ck_assert_uint_eq(r_records(), 15);
	o.repair = true;
	ck_assert_int_eq(os_mount(g_r, &o, &s2), 0);
	ck_assert_int_eq(os_fsck(s2, false, &rep), 0);
	ck_assert_uint_eq(rep.errors, 0);
	os_umount(s2);
	ck_assert_uint_eq(r_records(), 16);
	o.fsck_mount = o.repair = false;
	/* Undecodable: refused; fsck reports it; repair drops it. */
	poke_refs(pb + 1, 1000);
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EUCLEAN);
	o.fsck_mount = true;
	ck_assert_int_eq(os_mount(g_r, &o, &s2), 0);
	ck_assert_int_eq(os_fsck(s2, false, &rep), 0);
	ck_assert_uint_ge(rep.errors, 1);
	ck_assert_msg(strstr(rep.first_error, "undecodable"), "%s", rep.first_error);
	os_umount(s2);
	o.repair = true;
	ck_assert_int_eq(os_mount(g_r, &o, &s2), 0);
	os_umount(s2);
	ck_assert_uint_eq(r_records(), 16);
	mount_store();
	check_obj("a", a, sizeof(a));
	check_obj("b", a, sizeof(a));
}

END_TEST

/*
 * The window of an unshare: a clone's removal (the block's count 2 -> 1)
 * queued but not committed, then a 4 KiB overwrite by the last owner. A
 * read of the clone (still there in the committed state) must see its old
 * bytes: the overwrite goes copy-on-write, not in place into the pending
 * map that reads consult first.
 */
START_TEST(test_unshare_window)
{
	static uint8_t a[16384], blk[4096];
	bool window = false;
	struct os_opts o;
	struct os_usage u0, u1;
	struct os_txn *t, *t1, *t2;
	struct cm_buf *b;

	/* A store without a journal, whose commits (RocksDB's synced WAL write)
	 * take 200 ms: a transaction is neither acknowledged nor visible to
	 * reads before. (With a journal it is acknowledged when its record is
	 * durable, and reads wait for the memtable instead.) */
	os_umount(g_s);
	unmake_store();
	opts(&o);
	o.no_journal = true;
	ck_assert_int_eq(os_mkfs(&o), 0);
	o.test_kv_delay_us = 200000;
	ck_assert_int_eq(os_mount(g_r, &o, &g_s), 0);
	mkcoll();
	cm_test_fill(a, sizeof(a), 51);
	write_obj("o", 0, a, sizeof(a));
	/* (The read must finish before the removal commits; if the machine
	 * stalls so long that it does not, try again.) */
	for (int attempt = 0; attempt < 5 && !window; attempt++) {
		struct done d1 = { 0 }, d2 = { 0 };

		t = txn();
		ck_assert_int_eq(os_txn_clone(t, "c", "o", "cl"), 0);
		ck_assert_int_eq(apply(t), 0);
		os_get_usage(g_s, &u0);
		cm_test_fill(blk, sizeof(blk), 52 + attempt);
		t1 = txn();
		ck_assert_int_eq(os_txn_remove(t1, "c", "cl"), 0);
		t2 = txn();
		ck_assert_int_eq(os_txn_write(t2, "c", "o", 0, blk, sizeof(blk)), 0);
		os_queue(g_s, t1, commit_cb, &d1);
		os_queue(g_s, t2, commit_cb, &d2);
		ck_assert_int_eq(rd("cl", 0, sizeof(blk), &b), 0);
		window = !d1.done;
		ck_assert_msg(!window || memcmp(b->data, a, sizeof(blk)) == 0,
			      "the clone read its sibling's new bytes");
		cm_buf_put(b);
		ck_assert(cm_test_run_until(g_r, &d1.done, 30000));
		ck_assert(cm_test_run_until(g_r, &d2.done, 30000));
		ck_assert_int_eq(d1.rc, 0);
		ck_assert_int_eq(d2.rc, 0);
		os_get_usage(g_s, &u1);
		ck_assert_uint_eq(u1.deferred_writes, u0.deferred_writes); /* copy-on-write */
		memcpy(a, blk, sizeof(blk));
		check_obj("o", a, sizeof(a));
	}
	ck_assert_msg(window, "every read came after the removal's commit: no window tested");
}

END_TEST

void
store_clone_tests(TCase *tc, TCase *unit)
{
	tcase_add_test(unit, test_refs_map);
	tcase_add_test(tc, test_clone_shares_blocks);
	tcase_add_test(tc, test_stash_by_reference);
	tcase_add_test(tc, test_refcount_damage);
	tcase_add_test(tc, test_unshare_window);
}
