/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's journal (docs/design/store.md "Journal"): a ring of records on
 * the device itself, one per commit round, holding the round's RocksDB
 * batches and a manifest of the copy-on-write blocks its transactions wrote
 * (with their crc32c). The record is written beside that data, and only once
 * the device writes of the deferred records it retires are durable (a
 * device with a volatile cache may keep a later write and lose an earlier
 * one); mount checks the last record's data against its manifest. The round
 * is durable once its record is written and the device fsynced (one fsync
 * for the data and the record), and RocksDB then takes the batches
 * without its own WAL. Up to OS_JNL_DEPTH records are in flight at once.
 * A flush of RocksDB's memtables makes everything before it durable in its
 * tables; then the superblock moves the trim point past it and those
 * records' room is reused. Mount replays the
 * records after the trim point: applying batches again in their order is
 * harmless (they are blind puts and deletes), so the trim point may lag.
 */
#include "store_internal.h"

#include "cm/crc32c.h"
#include "cm/log.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

CM_LOG_SUBSYS(store);

/*
 * Records are written beside their copy-on-write data, and mount checks the
 * data of the last record only (os_jnl_mount): with more records in flight
 * an acknowledged record's blocks could be freed and rewritten by a later
 * one while the ones between are lost. A deeper pipeline needs the data
 * written and flushed before the record again.
 */
_Static_assert(OS_JNL_DEPTH == 1, "the journal's data check assumes one record in flight");

#define JSB_MAGIC  "CAIRNJSB"
#define JREC_MAGIC 0x314e524aU /* "JRN1" */
#define JREC_HDR   64

/* Superblock: magic, gen, trim offset, next sequence, nonce; crc32c at 4092. */
struct jsb {
	uint64_t gen, tail, seq;
};

static uint32_t
nonce_of(const char *uuid)
{
	return cm_crc32c(0x4a524e4cU, uuid, strlen(uuid));
}

static void
sb_encode(uint8_t *b, uint32_t B, uint32_t nonce, const struct jsb *sb)
{
	memset(b, 0, B);
	memcpy(b, JSB_MAGIC, 8);
	cm_put_le64(b + 8, sb->gen);
	cm_put_le64(b + 16, sb->tail);
	cm_put_le64(b + 24, sb->seq);
	cm_put_le32(b + 32, nonce);
	cm_put_le32(b + 4092, cm_crc32c(0, b, 4092));
}

static bool
sb_decode(const uint8_t *b, uint32_t nonce, struct jsb *sb)
{
	if (memcmp(b, JSB_MAGIC, 8) != 0 || cm_get_le32(b + 4092) != cm_crc32c(0, b, 4092) ||
	    cm_get_le32(b + 32) != nonce)
		return false;
	sb->gen = cm_get_le64(b + 8);
	sb->tail = cm_get_le64(b + 16);
	sb->seq = cm_get_le64(b + 24);
	return true;
}

static int
pwrite_all(int fd, const void *b, size_t n, off_t off)
{
	ssize_t w = pwrite(fd, b, n, off);

	return w == (ssize_t)n ? 0 : w < 0 ? -errno : -EIO;
}

int
os_jnl_format(int fd, uint32_t B, uint64_t jstart, uint64_t jblocks, const char *uuid)
{
	uint8_t *b = aligned_alloc(4096, CM_MAX((size_t)B, (size_t)1 << 20));
	struct jsb sb = { .gen = 1, .tail = 0, .seq = 1 };
	struct stat st;
	int rc;

	if (!b)
		return -ENOMEM;
	/*
	 * On a file, write the record area once: blocks a file system has never
	 * written (posix_fallocate's) cost it a metadata change — committed
	 * through its own journal at every flush — the first time each is
	 * written, which is what the journal is there to avoid.
	 */
	memset(b, 0, CM_MAX((size_t)B, (size_t)1 << 20));
	rc = fstat(fd, &st) ? -errno : 0;
	for (uint64_t off = (jstart + 2) * B, end = (jstart + jblocks) * B;
	     !rc && S_ISREG(st.st_mode) && off < end; off += 1 << 20)
		rc = pwrite_all(fd, b, (size_t)CM_MIN(end - off, (uint64_t)1 << 20), (off_t)off);
	/* Generation g lives in copy g & 1: the first update (2) goes to copy 0. */
	if (!rc)
		rc = pwrite_all(fd, b, B, (off_t)(jstart * B));
	sb_encode(b, B, nonce_of(uuid), &sb);
	if (!rc)
		rc = pwrite_all(fd, b, B, (off_t)((jstart + 1) * B));
	free(b);
	if (!rc && fdatasync(fd))
		rc = -errno;
	return rc;
}

static uint64_t
area_off(const struct os_store *s)
{
	return (s->jstart + 2) * s->B;
}

static size_t
rec_len(const struct os_store *s, size_t plen)
{
	return (JREC_HDR + plen + s->B - 1) / s->B * s->B;
}

/* ---------- mount: replay ---------- */

enum { JR_OK, JR_NONE, JR_BAD };

/*
 * The record at pos if it is the one with sequence seq: JR_OK (*bufp holds it,
 * *lenp its length), JR_NONE (no such header there), JR_BAD (its header, but
 * its bytes do not check: a torn or damaged record; *lenp the length its
 * header claims).
 */
static int
rec_read(struct os_store *s, uint64_t pos, uint64_t seq, uint8_t **bufp, size_t *lenp)
{
	uint8_t *b, *nb;
	uint32_t plen;
	size_t len;

	*bufp = NULL;
	if (pos + s->B > s->jarea)
		return JR_NONE;
	b = aligned_alloc(4096, s->B);
	if (!b)
		return -ENOMEM;
	if (pread(s->fd, b, s->B, (off_t)(area_off(s) + pos)) != (ssize_t)s->B ||
	    cm_get_le32(b) != JREC_MAGIC || cm_get_le32(b + 4) != s->jnonce ||
	    cm_get_le64(b + 8) != seq) {
		free(b);
		return JR_NONE;
	}
	plen = cm_get_le32(b + 16);
	len = rec_len(s, plen);
	*lenp = len;
	if (pos + len > s->jarea) {
		free(b);
		return JR_BAD;
	}
	if (len > s->B) {
		nb = aligned_alloc(4096, len);
		if (!nb) {
			free(b);
			return -ENOMEM;
		}
		memcpy(nb, b, s->B);
		free(b);
		b = nb;
		if (pread(s->fd, b + s->B, len - s->B, (off_t)(area_off(s) + pos + s->B)) !=
		    (ssize_t)(len - s->B)) {
			free(b);
			return JR_BAD;
		}
	}
	if (os_jnl_record_parse(b, len, s->jnonce, seq, true, NULL, NULL, NULL)) {
		free(b);
		return JR_BAD;
	}
	*bufp = b;
	*lenp = len;
	return JR_OK;
}

/* The record with sequence seq at pos, or (wrapped) at the area's start. */
static int
rec_find(struct os_store *s, uint64_t *pos, uint64_t seq, uint8_t **bufp, size_t *lenp)
{
	int r = rec_read(s, *pos, seq, bufp, lenp);

	if (r == JR_NONE && *pos != 0) {
		r = rec_read(s, 0, seq, bufp, lenp);
		if (r != JR_NONE)
			*pos = 0;
	}
	return r;
}

int
os_jnl_record_parse(const uint8_t *b, size_t len, uint32_t nonce, uint64_t seq, bool check_crc,
		    int (*cb)(void *arg, const uint8_t *batch, size_t blen),
		    int (*mcb)(void *arg, uint64_t pblock, uint32_t n, const uint8_t *crcs),
		    void *arg)
{
	static const uint8_t zero[4];
	const uint8_t *p, *end, *mend;
	uint32_t plen, nb, mlen;

	if (len < JREC_HDR || cm_get_le32(b) != JREC_MAGIC || cm_get_le32(b + 4) != nonce ||
	    cm_get_le64(b + 8) != seq)
		return -EBADMSG;
	plen = cm_get_le32(b + 16);
	nb = cm_get_le32(b + 20);
	if (plen > len - JREC_HDR)
		return -EBADMSG;
	if (check_crc) {
		/* As written: the crc field counted as zero. */
		uint32_t crc = cm_crc32c(0, b, 24);

		crc = cm_crc32c(crc, zero, 4);
		crc = cm_crc32c(crc, b + 28, JREC_HDR - 28 + (size_t)plen);
		if (crc != cm_get_le32(b + 24))
			return -EBADMSG;
	}
	mlen = cm_get_le32(b + 28);
	if (mlen > plen)
		return -EUCLEAN;
	p = b + JREC_HDR;
	mend = p + plen;
	end = mend - mlen; /* the batches, then the manifest */
	for (uint32_t i = 0; i < nb; i++) {
		uint32_t l;
		int rc;

		if (end - p < 4)
			return -EUCLEAN;
		l = cm_get_le32(p);
		/* A RocksDB batch has at least its 12-byte header (sequence, count). */
		if (l < 12 || l > (size_t)(end - p) - 4)
			return -EUCLEAN;
		if (cb && (rc = cb(arg, p + 4, l)))
			return rc;
		p += 4 + l;
	}
	if (p != end)
		return -EUCLEAN;
	/* The manifest: (pblock le64, n le32, n crc32c le32) per run of blocks. */
	while (p < mend) {
		uint64_t pb;
		uint32_t n;
		int rc;

		if (mend - p < 12)
			return -EUCLEAN;
		pb = cm_get_le64(p);
		n = cm_get_le32(p + 8);
		if (n == 0 || n > (size_t)(mend - p - 12) / 4 || pb + n < pb)
			return -EUCLEAN;
		if (mcb && (rc = mcb(arg, pb, n, p + 12)))
			return rc;
		p += 12 + (size_t)n * 4;
	}
	return 0;
}

static int
apply_batch(void *arg, const uint8_t *batch, size_t blen)
{
	struct os_store *s = arg;
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create_from((const char *)batch, blen);
	char *err = NULL;

	rocksdb_write(s->db, s->wo_nowal, wb, &err);
	rocksdb_writebatch_destroy(wb);
	if (err) {
		CM_ERR("journal replay: rocksdb write: %s", err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}

static int
rec_apply(struct os_store *s, const uint8_t *b, size_t len)
{
	return os_jnl_record_parse(b, len, s->jnonce, cm_get_le64(b + 8), false, apply_batch, NULL,
				   s);
}

/* Reading a record's manifest back: the device, a bounce buffer, the verdict. */
struct mcheck {
	struct os_store *s;
	uint8_t *buf; /* MCHECK_BLOCKS blocks */
	uint64_t bad; /* first block whose content does not match, or UINT64_MAX */
};

#define MCHECK_BLOCKS 256

static int
check_run(void *arg, uint64_t pblock, uint32_t n, const uint8_t *crcs)
{
	struct mcheck *m = arg;
	struct os_store *s = m->s;

	if (pblock < s->data_start || pblock + n > s->nblocks) {
		CM_ERR("%s: journal record names blocks [%" PRIu64 ", +%" PRIu32
		       ") outside the data area",
		       s->path, pblock, n);
		return -EUCLEAN;
	}
	for (uint32_t done = 0; done < n;) {
		uint32_t k = CM_MIN(n - done, (uint32_t)MCHECK_BLOCKS);
		size_t bytes = (size_t)k * s->B;

		if (pread(s->fd, m->buf, bytes, (off_t)((pblock + done) * s->B)) != (ssize_t)bytes)
			return -EIO;
		for (uint32_t i = 0; i < k; i++)
			if (cm_crc32c(0, m->buf + (size_t)i * s->B, s->B) !=
			    cm_get_le32(crcs + 4 * (size_t)(done + i))) {
				m->bad = pblock + done + i;
				return 1;
			}
		done += k;
	}
	return 0;
}

/*
 * Whether the copy-on-write data the record's transactions wrote is on the
 * device: 0 yes, 1 no (a block named in its manifest holds other bytes),
 * or an error. Only the last record replayed needs this (see os_jnl_mount).
 */
static int
rec_data_check(struct os_store *s, const uint8_t *b, size_t len, uint64_t *bad)
{
	struct mcheck m = { .s = s,
			    .buf = aligned_alloc(4096, (size_t)MCHECK_BLOCKS * s->B),
			    .bad = UINT64_MAX };
	int rc;

	if (!m.buf)
		return -ENOMEM;
	rc = os_jnl_record_parse(b, len, s->jnonce, cm_get_le64(b + 8), false, NULL, check_run, &m);
	free(m.buf);
	*bad = m.bad;
	return rc;
}

static int
kv_flush(struct os_store *s)
{
	rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
	char *err = NULL;

	rocksdb_flushoptions_set_wait(fo, 1);
	rocksdb_flush(s->db, fo, &err);
	rocksdb_flushoptions_destroy(fo);
	if (err) {
		CM_ERR("rocksdb flush: %s", err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}

/* Blocking: write the next superblock (trim at the head) and make it durable. */
static int
sb_write_sync(struct os_store *s)
{
	struct jsb sb = { .gen = ++s->jsb_gen, .tail = s->jhead, .seq = s->jseq };
	int rc;

	sb_encode(s->jsb_buf, s->B, s->jnonce, &sb);
	rc = pwrite_all(s->fd, s->jsb_buf, s->B, (off_t)((s->jstart + (sb.gen & 1)) * s->B));
	if (!rc && fdatasync(s->fd))
		rc = -errno;
	if (!rc)
		s->jtrimmed = s->jcum;
	return rc;
}

static void seal_fire(struct cm_timer *tm);

int
os_jnl_mount(struct os_store *s)
{
	struct jsb sb[2], *cur = NULL;
	uint64_t pos, seq, n = 0, bytes = 0, lastpos = 0;
	uint8_t *last = NULL; /* the newest good record, not yet applied */
	size_t lastlen = 0;
	int rc = 0;

	s->jarea = (s->jblocks - 2) * s->B;
	s->jnonce = nonce_of(s->uuid);
	cm_timer_init(&s->jseal_timer, seal_fire, s);
	s->jsb_buf = aligned_alloc(4096, s->B);
	s->wo_nowal = rocksdb_writeoptions_create();
	if (!s->jsb_buf || !s->wo_nowal)
		return -ENOMEM;
	rocksdb_writeoptions_disable_WAL(s->wo_nowal, 1);
	for (int i = 0; i < 2; i++) {
		if (pread(s->fd, s->jsb_buf, s->B, (off_t)((s->jstart + i) * s->B)) !=
		    (ssize_t)s->B)
			return -EIO;
		if (sb_decode(s->jsb_buf, s->jnonce, &sb[i]) && (!cur || sb[i].gen > cur->gen))
			cur = &sb[i];
	}
	if (!cur || cur->tail > s->jarea || cur->tail % s->B) {
		CM_ERR("%s: the journal's superblocks are unreadable", s->path);
		return -EUCLEAN;
	}
	s->jsb_gen = cur->gen;
	pos = cur->tail;
	seq = cur->seq;
	for (;;) {
		uint8_t *b;
		size_t len;
		int r = rec_find(s, &pos, seq, &b, &len);

		if (r < 0) {
			free(last);
			return r;
		}
		if (r == JR_BAD) {
			/*
			 * A torn record is normal after a crash, and so are up to
			 * OS_JNL_DEPTH - 1 records after it (written while its fsync
			 * was in flight; none acknowledged, as rounds are acknowledged
			 * in order). A good record OS_JNL_DEPTH after it is not: that
			 * one was written after this one was durable, so this one is
			 * damaged and acknowledged rounds would be skipped.
			 */
			uint64_t next = pos;
			size_t l = len;

			for (uint64_t k = 1; k <= OS_JNL_DEPTH; k++) {
				uint8_t *b2;
				int r2;

				next += l;
				if (next > s->jarea)
					break;
				r2 = rec_find(s, &next, seq + k, &b2, &l);
				free(b2);
				if (r2 < 0 || r2 == JR_NONE)
					break;
				if (r2 == JR_OK && k == OS_JNL_DEPTH) {
					CM_ERR("%s: journal record %" PRIu64 " at offset %" PRIu64
					       " is damaged and later records follow it",
					       s->path, seq, pos);
					free(last);
					return -EUCLEAN;
				}
			}
			break;
		}
		if (r == JR_NONE)
			break;
		/* The one before is not the last: apply it (only the last is checked). */
		rc = last ? rec_apply(s, last, lastlen) : 0;
		free(last);
		if (rc) {
			free(b);
			return rc;
		}
		n += last != NULL;
		bytes += last ? lastlen : 0;
		last = b;
		lastlen = len;
		lastpos = pos;
		pos += len;
		seq++;
	}
	if (last) {
		/*
		 * A record is written beside its transactions' copy-on-write data,
		 * not after it: one device fsync makes both durable. A crash before
		 * that fsync completed may leave the record on the device and
		 * some of the data not (a device may persist a later write and
		 * lose an earlier one). Such a record can only be the last one:
		 * the next is written only once this one's fsync is done. Its
		 * manifest names each block its transactions wrote (and the round
		 * still references, so no later write can have changed it) with
		 * its crc32c; a block that does not match means the round was
		 * never acknowledged, and it is dropped whole, as a torn record is.
		 */
		uint64_t bad;

		rc = rec_data_check(s, last, lastlen, &bad);
		if (rc == 0)
			rc = rec_apply(s, last, lastlen);
		if (rc == 1) {
			CM_WARN("%s: journal record %" PRIu64 " not replayed: block %" PRIu64
				" of its data did not reach the device before the crash (it "
				"was never acknowledged)",
				s->path, seq - 1, bad);
			pos = lastpos;
			seq--;
			rc = 0;
		} else if (!rc) {
			n++;
			bytes += lastlen;
		}
		free(last);
		if (rc)
			return rc;
	}
	/*
	 * Records after the last one replayed may be on the device — written
	 * while an earlier one's fsync was in flight — and one of them could
	 * sit exactly where a new record ends: new records skip their
	 * sequence numbers, so no replay can take them up later.
	 */
	s->jhead = pos;
	s->jseq = seq + OS_JNL_DEPTH;
	s->jcum = s->jtrimmed = 0;
	if (n) {
		CM_NOTICE("%s: replayed %" PRIu64 " journal records (%" PRIu64 " bytes)", s->path,
			  n, bytes);
		rc = kv_flush(s);
	}
	if (!rc)
		rc = sb_write_sync(s);
	return rc;
}

int
os_jnl_checkpoint(struct os_store *s)
{
	int rc;

	if (!s->jblocks || !s->jsb_buf)
		return 0;
	/*
	 * A round missed the memtable (its insert failed after it was called
	 * back): the journal holds the only copy of it and of every round
	 * after it, and the next mount replays them. Trim nothing.
	 */
	if (__atomic_load_n(&s->kv_broken, __ATOMIC_ACQUIRE))
		return -EIO;
	rc = kv_flush(s);
	if (!rc)
		rc = sb_write_sync(s);
	return rc;
}

/* ---------- running ---------- */

size_t
os_jnl_txn_bytes(const struct os_txn *t)
{
	size_t sz = 0;

	if (t->rc || !t->wb)
		return 0;
	rocksdb_writebatch_data(t->wb, &sz);
	/* Its manifest runs at most: every block a run of its own (12 + 4 bytes). */
	for (size_t i = 0; i < t->nwrites; i++)
		sz += 16 * t->writes[i].n;
	return 4 + sz;
}

static int
ext_cmp(const void *a, const void *b)
{
	const struct os_extent *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Blocks the round frees or overwrites in place: *exp, sorted, merged; *np extents. */
static int
round_excluded(const struct os_round *rd, struct os_extent **exp, size_t *np)
{
	struct os_extent *ex;
	size_t n = 0, k = 0;

	for (size_t i = 0; i < rd->n; i++) {
		const struct os_txn *t = rd->txns[i];

		if (t->rc)
			continue;
		n += t->nfrees;
		for (size_t j = 0; j < t->ndfrs; j++)
			n += t->dfrs[j]->n;
	}
	*exp = NULL;
	*np = 0;
	if (n == 0)
		return 0;
	ex = malloc(sizeof(*ex) * n);
	if (!ex)
		return -ENOMEM;
	for (size_t i = 0; i < rd->n; i++) {
		const struct os_txn *t = rd->txns[i];

		if (t->rc)
			continue;
		for (size_t j = 0; j < t->nfrees; j++)
			ex[k++] = t->frees[j];
		for (size_t j = 0; j < t->ndfrs; j++)
			for (size_t b = 0; b < t->dfrs[j]->n; b++)
				ex[k++] = (struct os_extent){ .start = t->dfrs[j]->pblocks[b],
							      .len = 1 };
	}
	qsort(ex, n, sizeof(*ex), ext_cmp);
	k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k && ex[i].start <= ex[k - 1].start + ex[k - 1].len) {
			uint64_t end =
				CM_MAX(ex[k - 1].start + ex[k - 1].len, ex[i].start + ex[i].len);

			ex[k - 1].len = end - ex[k - 1].start;
		} else {
			ex[k++] = ex[i];
		}
	}
	*exp = ex;
	*np = k;
	return 0;
}

/* Whether block b is in the sorted, disjoint extents ex[0, n). */
static bool
excluded(const struct os_extent *ex, size_t n, uint64_t b)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ex[mid].start + ex[mid].len <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ex[lo].start <= b;
}

/*
 * The round's manifest into p (NULL: only count): a run (pblock, n, crcs)
 * for each stretch of copy-on-write blocks its transactions wrote that the
 * round neither frees nor overwrites in place (a deferred write) — those
 * are what the round leaves referenced, and no later write can change them
 * before a later record is durable. \return its length in bytes.
 */
static size_t
manifest_put(const struct os_round *rd, const struct os_extent *ex, size_t nex, uint8_t *p)
{
	size_t len = 0;

	for (size_t i = 0; i < rd->n; i++) {
		const struct os_txn *t = rd->txns[i];

		if (t->rc)
			continue;
		for (size_t j = 0; j < t->nwrites; j++) {
			const struct os_dwrite *w = &t->writes[j];

			for (uint64_t b = 0; b < w->n;) {
				uint64_t e;

				if (nex && excluded(ex, nex, w->pblock + b)) {
					b++;
					continue;
				}
				for (e = b + 1;
				     e < w->n && !(nex && excluded(ex, nex, w->pblock + e)); e++)
					;
				if (p) {
					cm_put_le64(p + len, w->pblock + b);
					cm_put_le32(p + len + 8, (uint32_t)(e - b));
					for (uint64_t k = b; k < e; k++)
						cm_put_le32(p + len + 12 + 4 * (k - b), w->csum[k]);
				}
				len += 12 + 4 * (e - b);
				b = e;
			}
		}
	}
	return len;
}

size_t
os_jnl_round_max(const struct os_store *s)
{
	return s->jarea / 4 - JREC_HDR;
}

int
os_jnl_place(struct os_store *s, struct os_round *rd)
{
	size_t plen = 0, len, sz, nb = 0, mlen, nex = 0;
	uint64_t pos = s->jhead, waste = 0;
	struct os_extent *ex;
	uint8_t *b, *p;
	uint32_t crc;

	if (round_excluded(rd, &ex, &nex))
		return -ENOMEM;
	if (rd->retire && rocksdb_writebatch_count(rd->retire)) {
		rocksdb_writebatch_data(rd->retire, &sz);
		plen += 4 + sz;
	}
	for (size_t i = 0; i < rd->n; i++) {
		if (rd->txns[i]->rc || !rd->txns[i]->wb)
			continue;
		rocksdb_writebatch_data(rd->txns[i]->wb, &sz);
		plen += 4 + sz;
	}
	mlen = manifest_put(rd, ex, nex, NULL);
	plen += mlen;
	len = rec_len(s, plen);
	if (pos + len > s->jarea) {
		waste = s->jarea - pos;
		pos = 0;
	}
	if (s->jcum - s->jtrimmed + waste + len > s->jarea) {
		free(ex);
		s->c_jwaits++;
		s->jwaiting = true;
		os_jnl_maybe_flush(s);
		return -EAGAIN;
	}
	b = aligned_alloc(4096, len);
	if (!b) {
		free(ex);
		return -ENOMEM;
	}
	p = b + JREC_HDR;
	if (rd->retire && rocksdb_writebatch_count(rd->retire)) {
		const char *d = rocksdb_writebatch_data(rd->retire, &sz);

		cm_put_le32(p, (uint32_t)sz);
		memcpy(p + 4, d, sz);
		p += 4 + sz;
		nb++;
	}
	for (size_t i = 0; i < rd->n; i++) {
		struct os_txn *t = rd->txns[i];
		const char *d;

		if (t->rc || !t->wb)
			continue;
		d = rocksdb_writebatch_data(t->wb, &sz);
		cm_put_le32(p, (uint32_t)sz);
		memcpy(p + 4, d, sz);
		p += 4 + sz;
		nb++;
	}
	p += manifest_put(rd, ex, nex, p);
	free(ex);
	memset(b, 0, JREC_HDR);
	memset(p, 0, len - JREC_HDR - plen);
	cm_put_le32(b, JREC_MAGIC);
	cm_put_le32(b + 4, s->jnonce);
	cm_put_le64(b + 8, s->jseq);
	cm_put_le32(b + 16, (uint32_t)plen);
	cm_put_le32(b + 20, (uint32_t)nb);
	cm_put_le32(b + 28, (uint32_t)mlen);
	crc = cm_crc32c(0, b, JREC_HDR + plen);
	cm_put_le32(b + 24, crc);
	/* A record with a manifest is sealed by a later one (an empty one if idle). */
	s->jlast_data = mlen > 0;
	s->jseal = false;
	if (mlen && !cm_timer_armed(&s->jseal_timer))
		cm_timer_arm(s->r, &s->jseal_timer, OS_JNL_SEAL_MS);
	rd->jbuf = b;
	rd->jiov = (struct iovec){ .iov_base = b, .iov_len = len };
	rd->jseq = s->jseq++;
	s->jhead = pos + len;
	s->jcum += waste + len;
	rd->jend = s->jhead;
	rd->jcum = s->jcum;
	rd->jpos = pos;
	s->c_jbytes += len;
	return 0;
}

static void
jwrite_done(struct cm_io *io, int res)
{
	struct os_round *rd = io->arg;
	struct os_store *s = rd->s;

	if (!s->dsync)
		s->jwriting--;
	if (res != (int)rd->jiov.iov_len) {
		CM_ERR("journal write of %zu bytes failed: %s", rd->jiov.iov_len,
		       res < 0 ? strerror(-res) : "short write");
		rd->fsync_io.cb(&rd->fsync_io, res < 0 ? res : -EIO);
		return;
	}
	if (s->dsync) {
		rd->fsync_io.cb(&rd->fsync_io, 0); /* the write was the flush */
		return;
	}
	s->c_fsyncs++;
	rd->fsync_no = ++s->fsync_issued;
	if (cm_io_fsync(s->r, &rd->fsync_io, s->fd))
		rd->fsync_io.cb(&rd->fsync_io, -EIO);
}

void
os_jnl_write(struct os_store *s, struct os_round *rd, void (*done)(struct cm_io *, int))
{
	uint64_t pos = rd->jpos;
	const struct os_dfr *d;

	/*
	 * The device writes of the deferred records it retires may not be
	 * only in the device's volatile cache (a device may keep a later write
	 * and lose an earlier one). Its transactions' copy-on-write data is
	 * written (not yet durable): the record's fsync covers both, and mount
	 * checks the data of the last record against its manifest.
	 */
	for (size_t i = 0; i < rd->n; i++)
		assert(rd->txns[i]->rc || rd->txns[i]->writes_left == 0);
	TAILQ_FOREACH(d, &rd->retiring, link)
		assert(d->need_fsync <= s->fsync_done);
	rd->fsync_io.cb = done;
	rd->fsync_io.arg = rd;
	rd->jio.cb = jwrite_done;
	rd->jio.arg = rd;
	rd->t_fsync = cm_now_ns();
	if (s->dsync) {
		/*
		 * Durable when it completes: on this device RWF_DSYNC is the write
		 * and then a device cache flush, inside the kernel — one trip
		 * through the loop instead of two (os_store.dsync). The flush
		 * follows the write, so it covers every write completed before the
		 * record was submitted (the round's data, applied deferred writes):
		 * numbered now, as an fsync issued now would be.
		 */
		s->c_jdsync++;
		rd->fsync_no = ++s->fsync_issued;
		if (cm_io_writev_dsync(s->r, &rd->jio, s->fd, &rd->jiov, 1,
				       (off_t)(area_off(s) + pos)))
			jwrite_done(&rd->jio, -EIO);
		return;
	}
	s->jwriting++;
	if (cm_io_writev(s->r, &rd->jio, s->fd, &rd->jiov, 1, (off_t)(area_off(s) + pos)))
		jwrite_done(&rd->jio, -EIO);
}

/*
 * The newest record has a manifest: mount would check its data against it
 * after a crash, and a block the media corrupted since (not one that was
 * never written) would drop that acknowledged round with it. A later record
 * ends that: when the store has been idle OS_JNL_SEAL_MS since, an empty
 * one (a round of nothing) is written and flushed, so the window is that
 * long after the last write, not until the next write.
 */
static void
seal_fire(struct cm_timer *tm)
{
	struct os_store *s = tm->arg;

	if (!s->jlast_data || s->failed)
		return;
	if (s->nrounds || !TAILQ_EMPTY(&s->q)) {
		cm_timer_arm(s->r, &s->jseal_timer, OS_JNL_SEAL_MS); /* records follow anyway */
		return;
	}
	s->jseal = true;
	s->c_jseals++;
	os_kick_commit(s);
}

void
os_jnl_applied(struct os_store *s, struct os_round *rd)
{
	s->japplied = (struct os_jmark){ .seq = rd->jseq, .end = rd->jend, .cum = rd->jcum };
	os_jnl_maybe_flush(s);
}

/*
 * The journal cannot be trimmed (a RocksDB flush failed — its filesystem is
 * full, say — or the superblock cannot be written): the store refuses
 * further transactions, as after a failed KV commit, and rounds waiting for
 * room fail now instead of waiting for ever. What was acknowledged stays in
 * the journal; a mount after the cause is fixed replays it.
 */
static void
jnl_failed(struct os_store *s, const char *what, const char *why)
{
	CM_ERR("%s: journal: %s failed (%s); refusing further transactions", s->path, what, why);
	s->failed = true;
	os_kick_commit(s);
}

static void
sb_fsync_done(struct cm_io *io, int res)
{
	struct os_store *s = io->arg;

	if (res < 0) {
		jnl_failed(s, "superblock fsync", strerror(-res));
	} else {
		s->jtrimmed = s->jnote.cum;
		s->c_jflushes++;
	}
	s->jflushing = false;
	s->jwaiting = false;
	os_kick_commit(s);
	os_jnl_maybe_flush(s);
}

static void
sb_write_done(struct cm_io *io, int res)
{
	struct os_store *s = io->arg;

	if (res != (int)s->B) {
		s->jflushing = false;
		jnl_failed(s, "superblock write", res < 0 ? strerror(-res) : "short write");
		return;
	}
	s->jsb_io.cb = sb_fsync_done;
	if (cm_io_fsync(s->r, &s->jsb_io, s->fd))
		sb_fsync_done(&s->jsb_io, -EIO);
}

static void
flush_fn(void *arg)
{
	struct os_store *s = arg;

	s->jflush_rc = kv_flush(s);
}

static void
flush_done(void *arg)
{
	struct os_store *s = arg;
	struct jsb sb;

	if (s->jflush_rc) {
		s->jflushing = false;
		jnl_failed(s, "RocksDB flush", "see the error above");
		return;
	}
	/* Everything up to jnote is in RocksDB's tables: move the trim point past it. */
	sb = (struct jsb){ .gen = ++s->jsb_gen, .tail = s->jnote.end, .seq = s->jnote.seq + 1 };
	sb_encode(s->jsb_buf, s->B, s->jnonce, &sb);
	s->jsb_iov = (struct iovec){ .iov_base = s->jsb_buf, .iov_len = s->B };
	s->jsb_io.cb = sb_write_done;
	s->jsb_io.arg = s;
	if (cm_io_writev(s->r, &s->jsb_io, s->fd, &s->jsb_iov, 1,
			 (off_t)((s->jstart + (sb.gen & 1)) * s->B)))
		sb_write_done(&s->jsb_io, -EIO);
}

/* Flush and trim once half the record area is in use (or a round found no room). */
void
os_jnl_maybe_flush(struct os_store *s)
{
	struct os_round *first = TAILQ_FIRST(&s->rounds);

	/* A too-big transaction in flight is alone and checkpoints itself. */
	if (!s->jblocks || s->jflushing || (first && first->big) || s->japplied.cum <= s->jtrimmed)
		return;
	if ((s->jcum - s->jtrimmed) * 2 < s->jarea && !s->jwaiting)
		return;
	s->jflushing = true;
	s->jnote = s->japplied;
	s->jflush_work = (struct cm_work){ .fn = flush_fn, .done = flush_done, .arg = s };
	if (cm_worker_submit(s->flusher, s->r, &s->jflush_work))
		s->jflushing = false;
}
