/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's journal: replay after crashes of a child process at every
 * point (the records, their checks, the superblock), records whose data
 * checks fail, a store without a journal, and large objects' extent maps
 * kept in shard records. Part of store_test (store_test.h).
 */
#include "store_test.h"

/* ---- the journal ---- */

#define JN_OBJ   (1u << 20)
#define JN_BIGV  (2u << 20)
#define JN_OVERW 3000

/* Overwrite k of the journal workload: 4 KiB at a block of "big" (deferred). */
static uint64_t
jn_off(uint32_t k)
{
	return ((k * 2654435761u) % (JN_OBJ / 4096)) * 4096;
}

struct jn_child {
	unsigned inflight, done, errors;
};

static void
jn_cb(void *arg, int rc)
{
	struct jn_child *c = arg;

	c->inflight--;
	c->done++;
	c->errors += rc != 0;
}

/*
 * In a child: mount, run the workload with 16 in flight (first..last
 * overwrites; with big, a 2 MiB omap value half-way: too big for a record of
 * the 4 MiB journal), wait for every acknowledgement, and exit without
 * unmounting — RocksDB's memtable is lost, as in a crash.
 */
/* Contents of test_journal_data_check's objects: 16 blocks each. */
#define JD_D   21 /* "d": new, block 1 rewritten in the same transaction */
#define JD_D1  22
#define JD_TMP 23 /* "tmp": written and removed in the same transaction */
#define JD_N   24 /* "n": new, alone in the last record */

/* One transaction (mk 3: "d" and "tmp"; mk 4: "n"), acknowledged, then exit. */
static void
jn_child_cow(struct cm_reactor *r, struct os_store *s, int mk)
{
	static uint8_t a[64 << 10], b1[4096];
	struct jn_child c = { 0 };
	struct os_txn *t;

	os_txn_create(&t);
	if (mk == 3) {
		cm_test_fill(a, sizeof(a), JD_D);
		os_txn_write(t, "c", "d", 0, a, sizeof(a));
		cm_test_fill(b1, sizeof(b1), JD_D1);
		os_txn_write(t, "c", "d", 4096, b1, sizeof(b1)); /* deferred: d's blocks exist */
		cm_test_fill(a, sizeof(a), JD_TMP);
		os_txn_write(t, "c", "tmp", 0, a, sizeof(a));
		os_txn_remove(t, "c", "tmp");
	} else {
		cm_test_fill(a, sizeof(a), JD_N);
		os_txn_write(t, "c", "n", 0, a, sizeof(a));
	}
	c.inflight = 1;
	os_queue(s, t, jn_cb, &c);
	while (c.inflight)
		cm_reactor_run_once(r, 10);
	if (c.errors)
		_exit(3);
}

/* The child's part (a fresh process image: see jn_run_child). */
void
jn_child_main(uint32_t first, uint32_t last, bool big, int mk)
{
	struct cm_reactor *r = cm_test_child_reactor();
	static uint8_t blk[4096], val[JN_BIGV];
	struct jn_child c = { 0 };
	struct os_store *s;
	struct os_opts o;

	cm_log_set_level(CM_LOG_ERR);
	cm_reactor_run_once(r, 0); /* the thread's current reactor */
	opts(&o);
	if (os_mount(r, &o, &s))
		_exit(2);
	if (mk >= 3) {
		jn_child_cow(r, s, mk);
		_exit(0);
	}
	if (mk == 1) {
		static uint8_t obj[JN_OBJ];
		struct os_txn *t;

		cm_test_fill(obj, sizeof(obj), 7);
		os_txn_create(&t);
		os_txn_mkcoll(t, "c");
		os_txn_write(t, "c", "big", 0, obj, sizeof(obj));
		c.inflight++;
		os_queue(s, t, jn_cb, &c);
	}
	for (uint32_t k = first; k <= last; k++) {
		struct os_txn *t;

		while (c.inflight >= 16)
			cm_reactor_run_once(r, 10);
		os_txn_create(&t);
		cm_test_fill(blk, sizeof(blk), 1000 + k);
		if (mk == 2) { /* metadata only: key k<k> */
			char key[16];

			snprintf(key, sizeof(key), "k%u", k);
			os_txn_omap_set(t, "c", "big", key, strlen(key), blk, 64);
		} else {
			os_txn_write(t, "c", "big", jn_off(k), blk, sizeof(blk));
		}
		if (big && k == (first + last) / 2) {
			cm_test_fill(val, sizeof(val), 99);
			os_txn_omap_set(t, "c", "big", "v", 1, val, sizeof(val));
		}
		c.inflight++;
		os_queue(s, t, jn_cb, &c);
	}
	while (c.inflight)
		cm_reactor_run_once(r, 10);
	_exit(c.errors ? 3 : 0);
}

/*
 * In a child: mount, run the workload with 16 in flight (first..last
 * overwrites; with big, a 2 MiB omap value half-way: too big for a record of
 * the 4 MiB journal), wait for every acknowledgement, and exit without
 * unmounting — RocksDB's memtable is lost, as in a crash. The child execs
 * this binary afresh: RocksDB's background threads (its flushes) do not
 * survive a fork of a process that has used RocksDB.
 */
static void
jn_run_child(uint32_t first, uint32_t last, bool big, int mk)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char arg[64];

		snprintf(arg, sizeof(arg), "%u %u %d %d", first, last, big, mk);
		setenv("JN_CHILD", arg, 1);
		setenv("JN_CHILD_DEV", g_dev, 1);
		execl("/proc/self/exe", "store_test", (char *)NULL);
		_exit(5);
	}
	waitpid(pid, &status, 0);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %d", status);
}

static void
jn_model(uint8_t *m, uint32_t last)
{
	static uint8_t blk[4096];

	cm_test_fill(m, JN_OBJ, 7);
	for (uint32_t k = 1; k <= last; k++) {
		cm_test_fill(blk, sizeof(blk), 1000 + k);
		memcpy(m + jn_off(k), blk, sizeof(blk));
	}
}

/* A field (le64 at byte off) of the newest journal superblock (layout: docs/design/store.md
 * "Journal"). */
static uint64_t
jn_sb_field(size_t off)
{
	uint8_t b[2][4096];
	int fd = open(g_dev, O_RDONLY);
	uint64_t gen[2], v[2];

	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pread(fd, b[i], 4096, (off_t)(1 + i) * 4096), 4096);
		memcpy(&gen[i], b[i] + 8, 8);
		memcpy(&v[i], b[i] + off, 8);
		if (memcmp(b[i], "CAIRNJSB", 8) != 0)
			gen[i] = 0;
	}
	close(fd);
	return gen[0] > gen[1] ? v[0] : v[1];
}

/* Its trim offset and its next sequence. */
static uint64_t
jn_tail(void)
{
	return jn_sb_field(16);
}

static uint64_t
jn_sbseq(void)
{
	return jn_sb_field(24);
}

/*
 * The journal record with sequence seq at area offset *pos, or at 0 after a
 * wrap (*pos moved there): true and its length, from its header.
 */
static bool
jn_rec(uint64_t *pos, uint64_t seq, uint64_t *len)
{
	int fd = open(g_dev, O_RDONLY);
	uint64_t at[2] = { *pos, 0 };
	bool found = false;

	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 2 && !found; i++) {
		uint8_t h[64];
		uint64_t sq;
		uint32_t magic, plen;

		ck_assert_int_eq(pread(fd, h, sizeof(h), (off_t)(3 * 4096 + at[i])), 64);
		memcpy(&magic, h, 4);
		memcpy(&sq, h + 8, 8);
		memcpy(&plen, h + 16, 4);
		if (magic == 0x314e524aU && sq == seq) {
			*pos = at[i];
			*len = (64 + plen + 4095) / 4096 * 4096;
			found = true;
		}
	}
	close(fd);
	return found;
}

static void
jn_flip(uint64_t area_off)
{
	int fd = open(g_dev, O_RDWR);
	uint8_t c;
	off_t at = (off_t)(3 * 4096 + area_off + 100); /* in the first batch's bytes */

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &c, 1, at), 1);
	c ^= 0x5a;
	ck_assert_int_eq(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

/* Keep a copy of the device file beside it (keep), or put that copy back. */
static void
dev_keep(bool keep)
{
	char cmd[512];

	if (keep)
		snprintf(cmd, sizeof(cmd), "cp --sparse=always %s %s.keep", g_dev, g_dev);
	else
		snprintf(cmd, sizeof(cmd), "mv %s.keep %s", g_dev, g_dev);
	ck_assert_int_eq(system(cmd), 0);
}

/* fsck's count of extent map shard records (and no errors). */
static uint64_t
shard_records(void)
{
	return fsck_clean(false).shards;
}

/* Write blk at off of oid and model. */
static void
overwrite_block(const char *oid, uint8_t *model, uint64_t off, const uint8_t *blk)
{
	write_obj(oid, off, blk, 4096);
	memcpy(model + off, blk, 4096);
}

/*
 * Extent maps of objects past one shard (64 blocks) live in shard records
 * once such an object changes after it was written whole: an overwrite
 * journals the head and the one shard it changed, not the whole map; a map
 * that shrinks to one shard goes back into the onode; rename keeps the
 * shards (same object id), remove deletes them; and fsck names a shard
 * record no object owns.
 */
START_TEST(test_sharded_extent_maps)
{
	static uint8_t model[4 << 20], small[200 << 10], blk[4096];
	uint64_t before, seals, bytes;
	struct os_usage u;
	struct os_fsck_report rep;
	struct os_txn *t;

	mkcoll();
	cm_test_fill(model, sizeof(model), 11);
	memcpy(small, model, sizeof(small));
	write_obj("small", 0, small, sizeof(small));
	ck_assert_uint_eq(shard_records(), 0); /* 50 blocks: in its onode */
	write_obj("big", 0, model, sizeof(model));
	ck_assert_uint_eq(shard_records(), 0); /* written whole at once: one record */
	check_obj("big", model, sizeof(model));
	cm_test_fill(blk, sizeof(blk), 12);
	overwrite_block("big", model, 5 << 20 >> 2, blk); /* its first change: sharded */
	ck_assert_uint_eq(shard_records(), 16);           /* 1024 blocks, 64 a shard */

	/* A 4 KiB overwrite: one block, the head and one shard (was: the
	 * object's 4 KiB of checksums as well) — one 8 KiB record. */
	os_get_usage(g_s, &u);
	before = u.journal_bytes;
	seals = u.journal_seals;
	cm_test_fill(blk, sizeof(blk), 13);
	overwrite_block("big", model, (1 << 20) + 8192, blk);
	os_get_usage(g_s, &u);
	ck_assert_uint_eq(u.deferred_writes > 0, 1);
	bytes = u.journal_bytes - before - (u.journal_seals - seals) * 4096;
	ck_assert_msg(bytes <= 8192, "a 4 KiB overwrite journaled %" PRIu64 " bytes", bytes);
	ck_assert_uint_eq(shard_records(), 16);
	check_obj("big", model, sizeof(model));

	/* Down to one shard: back into the onode; past it again: shards once
	 * it changes again. */
	t = txn();
	ck_assert_int_eq(os_txn_truncate(t, "c", "big", 100000), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shard_records(), 0);
	check_obj("big", model, 100000);
	memset(model + 100000, 0, sizeof(model) - 100000);
	cm_test_fill(model + (3 << 20), 50000, 14);
	write_obj("big", 3 << 20, model + (3 << 20), 50000);
	ck_assert_uint_eq(shard_records(), 0);
	overwrite_block("big", model, 0, blk);
	ck_assert_uint_eq(shard_records(), 2); /* shard 0 and shard 12 */
	check_obj("big", model, (3 << 20) + 50000);

	/* Rename keeps them, clone copies, remove drops; all after a remount. */
	t = txn();
	ck_assert_int_eq(os_txn_rename(t, "c", "big", "big2"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shard_records(), 2);
	t = txn();
	ck_assert_int_eq(os_txn_clone(t, "c", "big2", "big3"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shard_records(), 2); /* the clone is written whole at once */
	/* (clone shares the blocks and keeps the holes: shards 0 and 12 again) */
	overwrite_block("big3", model, 4096, blk);
	ck_assert_uint_eq(shard_records(), 2 + 2);
	/* Written over a sharded object by rename: the old one's shards go. */
	t = txn();
	ck_assert_int_eq(os_txn_rename(t, "c", "big3", "big2"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shard_records(), 2);
	os_umount(g_s);
	mount_store();
	check_obj("big2", model, (3 << 20) + 50000);
	t = txn();
	ck_assert_int_eq(os_txn_remove(t, "c", "big2"), 0);
	ck_assert_int_eq(apply(t), 0);
	ck_assert_uint_eq(shard_records(), 0);

	/* A shard record no object owns is an fsck error. */
	os_umount(g_s);
	db_poke("X\0\0\0\0\0\0\x30\x39\0\0\0\0\0\0\0\0", 17, "junk", 4);
	mount_store();
	ck_assert_int_eq(os_fsck(g_s, false, &rep), 0);
	ck_assert_uint_eq(rep.errors, 1);
	ck_assert_msg(strstr(rep.first_error, "extent map shard of object id 12345"), "%s",
		      rep.first_error);
	os_umount(g_s);
	db_poke("X\0\0\0\0\0\0\x30\x39\0\0\0\0\0\0\0\0", 17, NULL, 0);
	mount_store();
	check_obj("small", small, sizeof(small));
}

END_TEST

START_TEST(test_journal_replay)
{
	static uint8_t model[JN_OBJ];
	struct os_usage u;
	struct os_opts o;
	struct os_store *s2;
	uint64_t tail;

	os_get_usage(g_s, &u);
	ck_assert_uint_eq(u.journal_size, 4u << 20); /* 1/64 of 256 MiB is under the 4 MiB floor */
	os_umount(g_s);
	g_s = NULL;
	/* ~13 MiB of records through a 4 MiB journal, a too-big transaction in the middle. */
	jn_run_child(1, JN_OVERW, true, true);
	mount_store();
	jn_model(model, JN_OVERW);
	check_obj("big", model, JN_OBJ);
	{
		struct os_kv key = { .key = (uint8_t *)"v", .klen = 1 }, out;
		static uint8_t val[JN_BIGV];

		ck_assert_int_eq(os_omap_get(g_s, "c", "big", &key, 1, &out), 0);
		ck_assert_uint_eq(out.vlen, JN_BIGV);
		cm_test_fill(val, sizeof(val), 99);
		ck_assert(memcmp(out.val, val, JN_BIGV) == 0);
		free(out.key);
		free(out.val);
	}
	fsck_clean(true);
	os_umount(g_s);
	g_s = NULL;
	/* A damaged record with good ones after it: mount refuses (acknowledged rounds would be
	 * lost). */
	tail = jn_tail();
	jn_run_child(JN_OVERW + 1, JN_OVERW + 40, false, false);
	dev_keep(true); /* a copy of the device to come back to */
	jn_flip(tail);
	opts(&o);
	ck_assert_int_eq(os_mount(g_r, &o, &s2), -EUCLEAN);
	/* The same bytes undamaged replay whole. */
	dev_keep(false);
	mount_store();
	jn_model(model, JN_OVERW + 40);
	check_obj("big", model, JN_OBJ);
	/*
	 * A damaged record followed by up to OS_JOURNAL_DEPTH - 1 good ones (and
	 * nothing after them) is a crash's tail: none was acknowledged. Mount
	 * replays up to the damaged one, and its superblock moves the sequence
	 * past them, so a later replay cannot take a good one up again.
	 */
	os_umount(g_s);
	g_s = NULL;
	jn_run_child(JN_OVERW + 41, JN_OVERW + 80, false, 2);
	{
		uint64_t seq = jn_sbseq(), pa = jn_tail(), pos, len;
		static const uint8_t zero[4096];
		int fd;

		pos = pa;
		ck_assert(jn_rec(&pos, seq, &len));
		for (uint64_t k = 1; k <= OS_JOURNAL_DEPTH; k++) {
			pos += len;
			ck_assert_msg(jn_rec(&pos, seq + k, &len),
				      "the child wrote too few records");
		}
		/* The first record damaged, the one OS_JOURNAL_DEPTH after it never written. */
		jn_flip(pa);
		fd = open(g_dev, O_RDWR);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pwrite(fd, zero, sizeof(zero), (off_t)(3 * 4096 + pos)), 4096);
		close(fd);
		mount_store();
		for (uint32_t k = JN_OVERW + 41; k <= JN_OVERW + 80; k++) {
			char name[16];
			struct os_kv key = { .key = (uint8_t *)name }, out;

			/* Nothing of the child's: its first record is bad. */
			key.klen = (size_t)snprintf(name, sizeof(name), "k%u", k);
			ck_assert_int_eq(os_omap_get(g_s, "c", "big", &key, 1, &out), 0);
			ck_assert_msg(out.val == NULL, "key %s replayed", name);
			free(out.key);
		}
		check_obj("big", model, JN_OBJ);
		ck_assert_uint_eq(jn_tail(), pa);
		ck_assert_uint_eq(jn_sbseq(), seq + OS_JOURNAL_DEPTH);
		fsck_clean(true);
	}
}

END_TEST

/* The device is no store any more (label and metadata gone), for a new mkfs. */
void
unmake_store(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "rm -rf %s.db && dd if=/dev/zero of=%s bs=4096 count=1 conv=notrunc status=none",
		 g_dev, g_dev);
	ck_assert_int_eq(system(cmd), 0);
}

/* A manifest run of a journal record: n blocks from pblock, their crc32c. */
struct jd_run {
	uint64_t pblock;
	uint32_t n;
	uint32_t crc[16];
};

/*
 * The manifest of the record with sequence seq (at area offset *pos or 0),
 * up to max runs into runs: the number of runs, or -1 if there is no such
 * record.
 */
static int
jd_manifest(uint64_t *pos, uint64_t seq, uint64_t *len, struct jd_run *runs, int max)
{
	uint8_t *b;
	uint32_t plen, mlen;
	size_t p, end;
	int fd, n = 0;

	if (!jn_rec(pos, seq, len))
		return -1;
	b = malloc(*len);
	ck_assert_ptr_nonnull(b);
	fd = open(g_dev, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, b, *len, (off_t)(3 * 4096 + *pos)), (ssize_t)*len);
	close(fd);
	memcpy(&plen, b + 16, 4);
	memcpy(&mlen, b + 28, 4);
	ck_assert_uint_le(mlen, plen);
	for (p = 64 + plen - mlen, end = 64 + plen; p < end; n++) {
		struct jd_run *ru = &runs[n];

		ck_assert_int_lt(n, max);
		memcpy(&ru->pblock, b + p, 8);
		memcpy(&ru->n, b + p + 8, 4);
		ck_assert_uint_le(ru->n, 16);
		memcpy(ru->crc, b + p + 12, 4 * ru->n);
		p += 12 + 4 * (size_t)ru->n;
	}
	free(b);
	return n;
}

/* Whether crc is the crc32c of one of the 16 blocks of cm_test_fill(pattern). */
static bool
jd_crc_of(uint32_t crc, uint32_t pattern, uint32_t skip_block)
{
	static uint8_t a[64 << 10];

	cm_test_fill(a, sizeof(a), pattern);
	for (uint32_t i = 0; i < 16; i++)
		if (i != skip_block && cm_crc32c(0, a + i * 4096, 4096) == crc)
			return true;
	return false;
}

/* "d" as jn_child_cow wrote it (a: 64 KiB to build it in). */
static void
jd_check_d(uint8_t *a)
{
	cm_test_fill(a, 64 << 10, JD_D);
	cm_test_fill(a + 4096, 4096, JD_D1);
	check_obj("d", a, 64 << 10);
}

/* A record's write + fsync, or its RWF_DSYNC write (where that flushes the device). */
static uint64_t
syncs(const struct os_usage *u)
{
	return u->fsyncs + u->journal_dsync;
}

/* Unmount, run child mode mk, and the journal's first record as its mount left it. */
static void
jd_run_child(int mk, uint64_t *pos, uint64_t *seq)
{
	os_umount(g_s);
	g_s = NULL;
	jn_run_child(0, 0, false, mk);
	*pos = jn_tail();
	*seq = jn_sbseq();
}

/*
 * With the journal a round's record is written beside its copy-on-write
 * data, not after it: one device fsync covers both (on an idle store a write
 * of new data costs one fsync, as does an overwrite riding in the record).
 * The record's manifest names the blocks written with their crc32c — not
 * blocks the round frees again or overwrites in place (a deferred write),
 * which may hold other bytes at a crash — and mount drops a last record
 * whose data is not all on the device (it was never acknowledged).
 */
START_TEST(test_journal_data_check)
{
	static uint8_t a[64 << 10], keep[4096];
	struct jd_run runs[8];
	struct os_usage u0, u1, u2;
	struct os_stat st;
	uint64_t seq, pos, len;
	int nr, fd, blocks = 0;

	mkcoll();
	cm_test_fill(a, sizeof(a), 11);
	os_get_usage(g_s, &u0);
	write_obj("o", 0, a, sizeof(a)); /* new blocks: copy-on-write */
	os_get_usage(g_s, &u1);
	/* (An idle store's seal, below, is one more.) */
	ck_assert_uint_eq((syncs(&u1) - u1.journal_seals) - (syncs(&u0) - u0.journal_seals), 1);
	/*
	 * Idle after a record with a manifest: an empty record follows it
	 * (OS_JNL_SEAL_MS), so no crash later has mount check that data.
	 */
	for (uint64_t t0 = cm_now_ns(); cm_now_ns() - t0 < 5000000000ull;) {
		cm_reactor_run_once(g_r, 10);
		os_get_usage(g_s, &u2);
		/* Counted when it is placed; its fsync once its record is written. */
		if (u2.journal_seals > u0.journal_seals && syncs(&u2) > syncs(&u1))
			break;
	}
	ck_assert_uint_eq(u2.journal_seals, u0.journal_seals + 1);
	ck_assert_uint_eq(syncs(&u2), syncs(&u1) + 1);
	{
		int last = -1, data = 0;

		pos = jn_tail();
		for (uint64_t sq = jn_sbseq(); (nr = jd_manifest(&pos, sq, &len, runs, 8)) >= 0;
		     sq++) {
			data += nr > 0;
			last = nr;
			pos += len;
		}
		ck_assert_int_eq(data, 1); /* o's */
		ck_assert_int_eq(last, 0); /* the seal */
	}
	os_get_usage(g_s, &u1);
	write_obj("o", 4096, a, 4096); /* an overwrite: deferred, its data in the record */
	os_get_usage(g_s, &u2);
	/* its record; maybe a retire's */
	ck_assert_uint_le((syncs(&u2) - u2.journal_seals) - (syncs(&u1) - u1.journal_seals), 2);
	memcpy(a + 4096, a, 4096);
	check_obj("o", a, sizeof(a));
	/* "d" (block 1 rewritten in the same transaction) and "tmp" (removed again). */
	jd_run_child(3, &pos, &seq);
	for (uint64_t sq = seq; (nr = jd_manifest(&pos, sq, &len, runs, 8)) >= 0; sq++) {
		for (int i = 0; i < nr; i++)
			for (uint32_t k = 0; k < runs[i].n; k++) {
				ck_assert_msg(jd_crc_of(runs[i].crc[k], JD_D, 1),
					      "the manifest names a block not of d's first write");
				blocks++;
			}
		pos += len;
	}
	ck_assert_int_eq(blocks, 15); /* d's 16 but the one the deferred write rewrote */
	mount_store();
	jd_check_d(a);
	ck_assert_int_eq(os_stat(g_s, "c", "tmp", &st), -ENOENT);
	fsck_clean(true);

	/* "n" alone in the last record: its data lost from the device → the record dropped. */
	jd_run_child(4, &pos, &seq);
	ck_assert_int_eq(nr = jd_manifest(&pos, seq, &len, runs, 8), 1);
	ck_assert_uint_eq(runs[0].n, 16);
	pos += len;
	ck_assert_int_eq(jd_manifest(&pos, seq + 1, &len, runs + 1, 7), -1); /* the last */
	fd = open(g_dev, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, keep, sizeof(keep), (off_t)((runs[0].pblock + 9) * 4096)), 4096);
	memset(a, 0, 4096); /* as if the write of this block never reached the media */
	ck_assert_int_eq(pwrite(fd, a, 4096, (off_t)((runs[0].pblock + 9) * 4096)), 4096);
	close(fd);
	dev_keep(true); /* a copy of the device to come back to */
	mount_store();
	ck_assert_int_eq(os_stat(g_s, "c", "n", &st), -ENOENT);
	jd_check_d(a); /* the records before it replayed */
	fsck_clean(true);
	os_umount(g_s);
	g_s = NULL;
	/* The same device with the block as written: the record replays. */
	dev_keep(false);
	fd = open(g_dev, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, keep, 4096, (off_t)((runs[0].pblock + 9) * 4096)), 4096);
	close(fd);
	mount_store();
	cm_test_fill(a, sizeof(a), JD_N);
	check_obj("n", a, sizeof(a));
	fsck_clean(true);
}

END_TEST

/* A store made without the journal (the version-1 layout) still works and persists. */
START_TEST(test_no_journal_store)
{
	static uint8_t a[64 << 10];
	struct os_opts o;
	struct os_usage u;

	os_umount(g_s);
	g_s = NULL;
	unmake_store();
	opts(&o);
	o.no_journal = true;
	ck_assert_int_eq(os_mkfs(&o), 0);
	mount_store();
	os_get_usage(g_s, &u);
	ck_assert_uint_eq(u.journal_size, 0);
	mkcoll();
	cm_test_fill(a, sizeof(a), 5);
	write_obj("o", 0, a, sizeof(a));
	write_obj("o", 8192, a, 4096); /* deferred */
	memcpy(a + 8192, a, 4096);
	os_umount(g_s);
	mount_store();
	check_obj("o", a, sizeof(a));
}

END_TEST

void
store_journal_tests(TCase *tc)
{
	tcase_add_test(tc, test_sharded_extent_maps);
	tcase_add_test(tc, test_journal_replay);
	tcase_add_test(tc, test_journal_data_check);
	tcase_add_test(tc, test_no_journal_store);
}
