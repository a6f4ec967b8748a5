/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The object store: label, mkfs, mount (allocator rebuild, deferred
 * replay), the transaction pipeline on the reactor (prepare on the kv
 * thread -> device writes -> fsync -> group commit on the kv thread ->
 * callbacks, deferred applies, block releases), umount. See
 * docs/design/store.md.
 */
#include "store_internal.h"
#include "cm/crc32c.h"
#include "cm/log.h"
#include "cm/random.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

CM_LOG_SUBSYS(store);

#define LABEL_MAGIC "CAIRNOSD"
/* 1: metadata durable through RocksDB's WAL; 2: the store's own journal on the device */
#define LABEL_VERSION 2

void
os_opts_init(struct os_opts *o, size_t size)
{
	memset(o, 0, size);
	o->opts_size = size;
	o->block_size = 4096;
	o->deferred_max = 64 << 10;
	o->cache_onodes = 65536;
	o->cache_data = 64ull << 20;
	o->osd_id = -1;
}

uint64_t
os_hash(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* ---------- onode caches ---------- */

int
os_ocache_init(struct os_ocache *c, size_t max)
{
	memset(c, 0, sizeof(*c));
	c->nb = 1024;
	while (c->nb < max)
		c->nb *= 2;
	c->b = calloc(c->nb, sizeof(*c->b));
	c->max = max;
	TAILQ_INIT(&c->lru);
	return c->b ? 0 : -ENOMEM;
}

static void
oent_free(struct os_oent *e)
{
	os_onode_free(e->on);
	free(e->key);
	free(e);
}

static void
oent_unlink(struct os_ocache *c, struct os_oent *e)
{
	struct os_oent **pp = &c->b[e->h & (c->nb - 1)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	TAILQ_REMOVE(&c->lru, e, lru);
	c->n--;
}

void
os_ocache_fini(struct os_ocache *c)
{
	struct os_oent *e;

	while ((e = TAILQ_FIRST(&c->lru))) {
		oent_unlink(c, e);
		oent_free(e);
	}
	free(c->b);
	c->b = NULL;
}

struct os_oent *
os_ocache_get(struct os_ocache *c, const char *key, size_t klen)
{
	uint64_t h = os_hash(key, klen);

	for (struct os_oent *e = c->b[h & (c->nb - 1)]; e; e = e->hnext) {
		if (e->h == h && e->klen == klen && memcmp(e->key, key, klen) == 0) {
			TAILQ_REMOVE(&c->lru, e, lru);
			TAILQ_INSERT_TAIL(&c->lru, e, lru);
			return e;
		}
	}
	return NULL;
}

struct os_oent *
os_ocache_put(struct os_ocache *c, const char *key, size_t klen, struct os_onode *on)
{
	struct os_oent *e = os_ocache_get(c, key, klen);

	if (e) {
		os_onode_free(e->on);
		e->on = on;
		return e;
	}
	e = calloc(1, sizeof(*e));
	if (!e || !(e->key = malloc(klen ? klen : 1))) {
		free(e);
		os_onode_free(on);
		return NULL;
	}
	memcpy(e->key, key, klen);
	e->klen = klen;
	e->h = os_hash(key, klen);
	e->on = on;
	e->hnext = c->b[e->h & (c->nb - 1)];
	c->b[e->h & (c->nb - 1)] = e;
	TAILQ_INSERT_TAIL(&c->lru, e, lru);
	c->n++;
	return e;
}

void
os_ocache_trim(struct os_ocache *c)
{
	struct os_oent *e, *tmp;

	TAILQ_FOREACH_SAFE(e, &c->lru, lru, tmp) {
		if (c->n <= c->max)
			break;
		if (e->pending)
			continue;
		oent_unlink(c, e);
		oent_free(e);
	}
}

/* ---------- pending map ---------- */

/*
 * Entries cover runs of blocks, cut at PEND_SPAN boundaries so each piece
 * sits in the one bucket of its span: a 4 MiB copy-on-write write costs a
 * handful of entries, not one per block (the per-block map and its mallocs
 * were a tenth of an OSD's CPU under 4 MiB writes). Pieces of one add share
 * its tag.
 */
#define PEND_SHIFT 8 /* 256 blocks per span */
#define PEND_SPAN  ((uint64_t)1 << PEND_SHIFT)

static struct os_pend **
pend_bucket(struct os_store *s, uint64_t pblock)
{
	return &s->pend[(pblock >> PEND_SHIFT) & (s->npend_b - 1)];
}

uint64_t
os_pend_add(struct os_store *s, uint64_t pblock, uint64_t n, struct cm_buf *buf, size_t off)
{
	struct os_pend *list = NULL, *p;
	uint64_t tag, b = pblock, end = pblock + n;

	/* A write to these blocks is coming: the data cache must not serve them
	 * (reads find them here until they are on the device). */
	os_dcache_inval(&s->dcache, pblock, n);
	/* Allocate every piece first: the add happens whole or not at all. */
	while (b < end) {
		uint64_t e = CM_MIN(end, (b | (PEND_SPAN - 1)) + 1);

		p = malloc(sizeof(*p));
		if (!p) {
			while ((p = list)) {
				list = p->next;
				free(p);
			}
			return 0;
		}
		*p = (struct os_pend){
			.next = list, .pblock = b, .n = e - b, .off = off + (b - pblock) * s->B
		};
		list = p;
		b = e;
	}
	pthread_mutex_lock(&s->pend_mu);
	tag = ++s->pend_tag;
	while ((p = list)) {
		struct os_pend **pp = pend_bucket(s, p->pblock);

		list = p->next;
		/* Newest first: a lookup finds the latest content. */
		p->tag = tag;
		p->buf = cm_buf_get(buf);
		p->next = *pp;
		*pp = p;
		__atomic_add_fetch(&s->npend, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->pend_mu);
	return tag;
}

void
os_pend_del(struct os_store *s, uint64_t pblock, uint64_t n, uint64_t tag)
{
	struct os_pend *gone = NULL, *p;

	if (!tag || !n)
		return;
	pthread_mutex_lock(&s->pend_mu);
	for (uint64_t span = pblock >> PEND_SHIFT; span <= (pblock + n - 1) >> PEND_SHIFT; span++) {
		for (struct os_pend **pp = pend_bucket(s, span << PEND_SHIFT); (p = *pp);) {
			if (p->tag == tag) {
				*pp = p->next;
				p->next = gone;
				gone = p;
				__atomic_sub_fetch(&s->npend, 1, __ATOMIC_RELEASE);
			} else {
				pp = &p->next;
			}
		}
	}
	pthread_mutex_unlock(&s->pend_mu);
	while ((p = gone)) {
		gone = p->next;
		cm_buf_put(p->buf);
		free(p);
	}
}

bool
os_pend_copy(struct os_store *s, uint64_t pblock, void *dst)
{
	bool found = false;

	if (__atomic_load_n(&s->npend, __ATOMIC_ACQUIRE) == 0)
		return false;
	pthread_mutex_lock(&s->pend_mu);
	for (struct os_pend *p = *pend_bucket(s, pblock); p; p = p->next) {
		if (pblock >= p->pblock && pblock < p->pblock + p->n) {
			memcpy(dst, p->buf->data + p->off + (pblock - p->pblock) * s->B, s->B);
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&s->pend_mu);
	return found;
}

/* ---------- label ---------- */

struct label {
	char uuid[40], fsid[64];
	uint64_t dev_size;
	uint32_t block_size;
	int32_t osd_id;
	uint64_t jstart, jblocks; /* the journal's blocks (version 2; 0: none) */
};

static void
put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static int
label_write(int fd, const struct label *l)
{
	uint8_t *b = aligned_alloc(4096, 4096);
	ssize_t n;

	if (!b)
		return -ENOMEM;
	memset(b, 0, 4096);
	memcpy(b, LABEL_MAGIC, 8);
	put_le(b + 8, LABEL_VERSION, 4);
	put_le(b + 12, l->block_size, 4);
	put_le(b + 16, l->dev_size, 8);
	put_le(b + 24, (uint32_t)l->osd_id, 4);
	memcpy(b + 32, l->uuid, sizeof(l->uuid));
	memcpy(b + 72, l->fsid, sizeof(l->fsid));
	put_le(b + 136, l->jstart, 8);
	put_le(b + 144, l->jblocks, 8);
	put_le(b + 4092, cm_crc32c(0, b, 4092), 4);
	n = pwrite(fd, b, 4096, 0);
	free(b);
	if (n != 4096)
		return n < 0 ? -errno : -EIO;
	return fdatasync(fd) ? -errno : 0;
}

/* The label in block b (4096 bytes). \return 0, -ENODATA (not a store), -EINVAL. */
static int
label_decode(const uint8_t *b, struct label *l)
{
	if (memcmp(b, LABEL_MAGIC, 8) != 0)
		return -ENODATA; /* not a store */
	if (get_le(b + 4092, 4) != cm_crc32c(0, b, 4092) || get_le(b + 8, 4) < 1 ||
	    get_le(b + 8, 4) > LABEL_VERSION)
		return -EINVAL;
	l->block_size = (uint32_t)get_le(b + 12, 4);
	l->dev_size = get_le(b + 16, 8);
	l->osd_id = (int32_t)get_le(b + 24, 4);
	memcpy(l->uuid, b + 32, sizeof(l->uuid));
	memcpy(l->fsid, b + 72, sizeof(l->fsid));
	l->uuid[sizeof(l->uuid) - 1] = l->fsid[sizeof(l->fsid) - 1] = 0;
	l->jstart = l->jblocks = 0;
	if (get_le(b + 8, 4) >= 2) {
		l->jstart = get_le(b + 136, 8);
		l->jblocks = get_le(b + 144, 8);
	}
	return 0;
}

static int
label_read(int fd, struct label *l)
{
	uint8_t *b = aligned_alloc(4096, 4096);
	ssize_t n;
	int rc;

	if (!b)
		return -ENOMEM;
	n = pread(fd, b, 4096, 0);
	if (n != 4096)
		rc = n < 0 ? -errno : -EINVAL;
	else
		rc = label_decode(b, l);
	free(b);
	return rc;
}

/*
 * Mount's checks of label l against the opts and the device's size (bytes):
 * \return 0 or -EINVAL (logged); *nblocks, *data_start: the geometry it gives.
 */
static int
label_check(const struct label *l, const struct os_opts *o, uint64_t size, uint64_t *nblocks,
	    uint64_t *data_start)
{
	if (o->fsid && o->fsid[0] && l->fsid[0] && strcmp(o->fsid, l->fsid) != 0) {
		CM_ERR("%s: belongs to cluster %s, not %s", o->path, l->fsid, o->fsid);
		return -EINVAL;
	}
	if (o->osd_id >= 0 && l->osd_id >= 0 && o->osd_id != l->osd_id) {
		CM_ERR("%s: is osd.%d's store, not osd.%d's", o->path, l->osd_id, o->osd_id);
		return -EINVAL;
	}
	if (size < l->dev_size) {
		CM_ERR("%s: device is %" PRIu64 " bytes, the label says %" PRIu64, o->path, size,
		       l->dev_size);
		return -EINVAL;
	}
	/* As os_mkfs allows: the geometry, the journal's blocks and O_DIRECT rely on it. */
	if (l->block_size < 4096 || l->block_size > (1 << 20) ||
	    (l->block_size & (l->block_size - 1))) {
		CM_ERR("%s: the label's block size %" PRIu32 " is not one mkfs makes", o->path,
		       l->block_size);
		return -EINVAL;
	}
	*nblocks = l->dev_size / l->block_size;
	*data_start = 1 + l->jblocks;
	if (l->jblocks && (l->jstart != 1 || l->jblocks < 16 || l->jblocks >= *nblocks ||
			   *data_start >= *nblocks)) {
		CM_ERR("%s: the label's journal (%" PRIu64 "+%" PRIu64 ") is not on the device",
		       o->path, l->jstart, l->jblocks);
		return -EINVAL;
	}
	return 0;
}

int
os__label_check(const uint8_t *block, const struct os_opts *o, uint64_t size, uint64_t *nblocks,
		uint64_t *data_start)
{
	struct label l;
	int rc = label_decode(block, &l);

	return rc ? rc : label_check(&l, o, size, nblocks, data_start);
}

/* The first line of /sys/dev/block/<maj>:<min>/<rel>, or "" if there is none. */
static void
sys_block_attr(dev_t dev, const char *rel, char *out, size_t len)
{
	char p[128];
	FILE *f;

	out[0] = '\0';
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/%s", major(dev), minor(dev), rel);
	f = fopen(p, "re");
	if (!f)
		return;
	if (!fgets(out, (int)len, f))
		out[0] = '\0';
	fclose(f);
	out[strcspn(out, "\n")] = '\0';
}

/*
 * Whether an O_DIRECT write with RWF_DSYNC to fd is followed by a flush of
 * the device's whole volatile cache, so that it makes every write that
 * completed before it durable, as write + fdatasync does: true when the
 * device has no volatile cache ("write through": nothing to flush) or no
 * FUA (the block layer, and ext4 or XFS through generic_write_sync, then
 * send a cache flush after the write). With FUA the write alone goes to
 * media and earlier writes may stay in the cache: false. Also false when
 * the device cannot be told (no sysfs entry: a filesystem on several
 * devices, say), for buffered I/O (a DSYNC write syncs its own range
 * only), and when opts say so.
 */
static bool
dsync_flushes_all(int fd, bool buffered)
{
	char wc[32], fua[8];
	struct stat st;
	dev_t dev;

	if (buffered || fstat(fd, &st))
		return false;
	dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
	sys_block_attr(dev, "queue/write_cache", wc, sizeof(wc));
	sys_block_attr(dev, "queue/fua", fua, sizeof(fua));
	if (!wc[0]) { /* a partition: its disk's queue */
		sys_block_attr(dev, "../queue/write_cache", wc, sizeof(wc));
		sys_block_attr(dev, "../queue/fua", fua, sizeof(fua));
	}
	return !strcmp(wc, "write through") || (!strcmp(wc, "write back") && !strcmp(fua, "0"));
}

static int
dev_size(int fd, uint64_t *size)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode))
		return ioctl(fd, BLKGETSIZE64, size) ? -errno : 0;
	*size = (uint64_t)st.st_size;
	return 0;
}

/*
 * Where the metadata lives: o->db_path, else "<path>.db" next to a file. A
 * block device needs one given — its default would sit in /dev, a tmpfs
 * that a reboot empties. \return 0, -EINVAL (said why), -ENOMEM.
 */
static int
db_path_of(const struct os_opts *o, int fd, char **out)
{
	struct stat st;
	size_t n = strlen(o->path) + 4;

	*out = NULL;
	if (o->db_path && o->db_path[0]) {
		*out = strdup(o->db_path);
		return *out ? 0 : -ENOMEM;
	}
	if (fstat(fd, &st))
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		CM_ERR("%s is a block device: give its metadata a place of its own (osd_db)",
		       o->path);
		return -EINVAL;
	}
	*out = malloc(n);
	if (!*out)
		return -ENOMEM;
	snprintf(*out, n, "%s.db", o->path);
	return 0;
}

static rocksdb_t *
db_open(const char *path, bool create, rocksdb_options_t **optp, int *rc)
{
	rocksdb_options_t *opt = rocksdb_options_create();
	char *err = NULL;
	rocksdb_t *db;

	rocksdb_block_based_table_options_t *tbo = rocksdb_block_based_options_create();
	rocksdb_cache_t *cache = rocksdb_cache_create_lru(64 << 20);
	rocksdb_options_t *tuned = rocksdb_options_create();

	rocksdb_options_set_create_if_missing(opt, create);
	rocksdb_options_set_error_if_exists(opt, create);
	rocksdb_options_increase_parallelism(opt, 2);
	rocksdb_options_set_max_background_jobs(opt, 2);
	rocksdb_options_set_write_buffer_size(opt, 32 << 20);
	/*
	 * Most gets are for onodes of objects a write creates, which do not
	 * exist yet: bloom filters answer those without searching the memtable
	 * or reading SST index blocks (bench/cluster 4 KiB writes: the gets were
	 * the largest single cost on the prepare thread).
	 */
	rocksdb_block_based_options_set_filter_policy(tbo,
						      rocksdb_filterpolicy_create_bloom_full(10));
	rocksdb_block_based_options_set_block_cache(tbo, cache);
	rocksdb_block_based_options_set_cache_index_and_filter_blocks(tbo, 1);
	rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(tbo, 1);
	rocksdb_options_set_block_based_table_factory(opt, tbo);
	rocksdb_block_based_options_destroy(tbo);
	rocksdb_cache_destroy(cache); /* the table factory keeps its own reference */
	rocksdb_get_options_from_string(
		opt, "memtable_prefix_bloom_size_ratio=0.05;memtable_whole_key_filtering=true",
		tuned, &err);
	if (err) {
		CM_WARN("rocksdb: memtable bloom filter not set: %s", err);
		rocksdb_free(err);
		err = NULL;
		rocksdb_options_destroy(tuned);
	} else {
		rocksdb_options_destroy(opt);
		opt = tuned;
	}
	/*
	 * No WAL recycling (recycle_log_file_num): with it, recovery after a
	 * crash can leave a hole in the replayed writes (RocksDB #6351,
	 * #12918); the crash test caught one here (a state that no prefix of
	 * the transactions explains).
	 */
	db = rocksdb_open(opt, path, &err);
	if (!db) {
		CM_ERR("rocksdb open %s: %s", path, err ? err : "?");
		*rc = err && strstr(err, "exists") ? -EEXIST : -EIO;
		rocksdb_free(err);
		rocksdb_options_destroy(opt);
		return NULL;
	}
	*optp = opt;
	*rc = 0;
	return db;
}

static int
put_super(rocksdb_t *db, const struct label *l, uint64_t next_nid)
{
	Cairn__Store__Super sp = CAIRN__STORE__SUPER__INIT;
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	char *err = NULL;
	uint8_t *buf;
	size_t len;

	sp.uuid = (char *)l->uuid;
	sp.fsid = (char *)l->fsid;
	sp.osd_id = l->osd_id;
	sp.dev_size = l->dev_size;
	sp.block_size = l->block_size;
	sp.next_nid = next_nid;
	len = cairn__store__super__get_packed_size(&sp);
	buf = malloc(len + 1);
	if (!buf) {
		rocksdb_writeoptions_destroy(wo);
		return -ENOMEM;
	}
	cairn__store__super__pack(&sp, buf);
	rocksdb_writeoptions_set_sync(wo, 1);
	rocksdb_put(db, wo, "S", 1, (char *)buf, len, &err);
	free(buf);
	rocksdb_writeoptions_destroy(wo);
	if (err) {
		CM_ERR("rocksdb put: %s", err);
		rocksdb_free(err);
		return -EIO;
	}
	return 0;
}

int
os_mkfs(const struct os_opts *o)
{
	struct label l = { 0 }, old;
	rocksdb_options_t *dbo = NULL;
	rocksdb_t *db;
	char *dbp;
	int fd, rc;

	if (!o->path || (o->block_size & (o->block_size - 1)) || o->block_size < 4096 ||
	    o->block_size > (1 << 20))
		return -EINVAL;
	fd = open(o->path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	rc = dev_size(fd, &l.dev_size);
	if (!rc && l.dev_size < 64ull * o->block_size)
		rc = -EINVAL;
	if (!rc && label_read(fd, &old) == 0)
		rc = -EEXIST;
	if (rc) {
		close(fd);
		return rc;
	}
	l.block_size = o->block_size;
	l.osd_id = o->osd_id;
	if (!o->no_journal) {
		/* Default: 1/64 of the device, 4..128 MiB; none under 64 MiB. At least 1 MiB. */
		uint64_t want = o->journal_size;

		if (!want && l.dev_size >= (64ull << 20))
			want = CM_MIN(CM_MAX(l.dev_size / 64, 4ull << 20), 128ull << 20);
		l.jblocks = want / o->block_size;
		l.jstart = l.jblocks ? 1 : 0;
		if (want &&
		    (want < (1ull << 20) || 1 + l.jblocks + 64 > l.dev_size / o->block_size)) {
			CM_ERR("mkfs %s: a journal of %" PRIu64 " bytes does not fit", o->path,
			       want);
			close(fd);
			return -EINVAL;
		}
	}
	if (cm_uuid_generate(l.uuid)) {
		close(fd);
		return -EIO;
	}
	snprintf(l.fsid, sizeof(l.fsid), "%s", o->fsid ? o->fsid : "");
	rc = db_path_of(o, fd, &dbp);
	if (rc) {
		close(fd);
		return rc;
	}
	db = db_open(dbp, true, &dbo, &rc);
	free(dbp);
	if (!db) {
		close(fd);
		return rc;
	}
	rc = put_super(db, &l, 1);
	rocksdb_close(db);
	rocksdb_options_destroy(dbo);
	if (!rc && l.jblocks)
		rc = os_jnl_format(fd, l.block_size, l.jstart, l.jblocks, l.uuid);
	/* The label last: a half-made store is not taken for a store. */
	if (!rc)
		rc = label_write(fd, &l);
	close(fd);
	if (!rc)
		CM_NOTICE("mkfs %s: uuid=%s size=%" PRIu64 " block=%u journal=%" PRIu64, o->path,
			  l.uuid, l.dev_size, l.block_size, l.jblocks * l.block_size);
	return rc;
}

/* Mount's walk: load collections and the next nid, rebuild the allocator. */
struct scan {
	struct os_store *s;
	size_t ci;
	struct os_refs cnt; /* blocks mapped by more than one extent, and by how many */
};

static int
scan_coll(void *arg, const char *name, size_t len)
{
	struct os_store *s = ((struct scan *)arg)->s;
	char **nc = realloc(s->colls, sizeof(*nc) * (s->ncolls + 1));

	if (!nc)
		return -ENOMEM;
	s->colls = nc;
	if (!(nc[s->ncolls] = strndup(name, len)))
		return -ENOMEM;
	s->ncolls++;
	return 0;
}

static int
scan_colls_done(void *arg)
{
	struct os_store *s = ((struct scan *)arg)->s;

	s->cstat = calloc(s->ncolls + 1, sizeof(*s->cstat));
	return s->cstat ? 0 : -ENOMEM;
}

static int
scan_onode(void *arg, const char *k, size_t kl, const char *oid, struct os_onode *on, int drc,
	   int src)
{
	struct scan *sc = arg;
	struct os_store *s = sc->s;
	int rc = 0;

	if (drc || src) {
		CM_ERR("undecodable onode %.*s", (int)CM_MIN(kl, (size_t)200), k + 1);
		return drc ? drc : src;
	}
	if (!oid) {
		CM_ERR("malformed onode key %.*s", (int)CM_MIN(kl, (size_t)200), k + 1);
		return -EUCLEAN;
	}
	/* Onodes are sorted by collection: the last one found is usually it. */
	if (sc->ci >= s->ncolls || strcmp(s->colls[sc->ci], k + 1) != 0)
		for (sc->ci = 0; sc->ci < s->ncolls && strcmp(s->colls[sc->ci], k + 1) != 0;
		     sc->ci++)
			;
	if (sc->ci < s->ncolls) {
		s->cstat[sc->ci].objects++;
		s->cstat[sc->ci].bytes += on->size;
	}
	if (on->nid >= s->next_nid)
		s->next_nid = on->nid + 1;
	for (size_t i = 0; i < on->next && !rc; i++) {
		if (on->ext[i].pblock < s->data_start) {
			rc = -ERANGE; /* the label's or the journal's blocks */
			CM_ERR("onode %.*s: blocks %" PRIu64 "+%u inside the label or journal",
			       (int)CM_MIN(kl, (size_t)200), k + 1, on->ext[i].pblock,
			       on->ext[i].n);
			break;
		}
		rc = os_refs_mark(s->alloc, &sc->cnt, on->ext[i].pblock, on->ext[i].n);
		if (rc == -ENOMEM)
			return rc;
		if (rc)
			CM_ERR("onode %.*s: blocks %" PRIu64 "+%u outside the device",
			       (int)CM_MIN(kl, (size_t)200), k + 1, on->ext[i].pblock,
			       on->ext[i].n);
	}
	return rc ? -EUCLEAN : 0;
}

/* Mount's checks of the "R" records against the references the onodes hold. */
struct refs_fix {
	struct os_store *s;
	rocksdb_writebatch_t *wb;
	uint64_t under, fixed; /* counts too low refused; records rewritten or deleted */
};

static void
refs_bad(void *arg, const char *k, size_t kl, const char *why)
{
	struct refs_fix *f = arg;

	CM_ERR("refcount record %s (key of %zu bytes, block %" PRIu64 ")%s", why, kl,
	       kl == 9 ? os_get_be64(k + 1) : 0, f->s->repair ? ": deleted (repair)" : "");
	if (f->s->repair) {
		rocksdb_writebatch_delete(f->wb, k, kl);
		f->fixed++;
	}
}

static void
refs_mismatch(void *arg, uint64_t pb, uint32_t counted, uint32_t recorded)
{
	struct refs_fix *f = arg;

	if (counted > recorded && !f->s->repair) {
		/* A count too low would free a block another extent still maps. */
		CM_ERR("block %" PRIu64 ": %u extents map it, its refcount record says %u", pb,
		       counted, recorded);
		f->under++;
		return;
	}
	if (f->s->fsck_mount && !f->s->repair)
		return; /* os_fsck reports it */
	CM_WARN("block %" PRIu64 ": %u extents map it, its refcount record says %u (%s; corrected)",
		pb, counted, recorded, counted > recorded ? "repair" : "leak");
	os_refs_put_kv(f->wb, pb, counted);
	f->fixed++;
}

/* After the onode walk: check the records, keep the counts (the onodes are the truth). */
static int
load_refs(struct os_store *s, struct scan *sc)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	struct refs_fix f = { .s = s, .wb = rocksdb_writebatch_create() };
	struct os_refs rec = { 0 };
	char *err = NULL;
	int rc = os_refs_load(it, s->nblocks, s->data_start, &rec, refs_bad, &f);

	rocksdb_iter_destroy(it);
	if (rc == -EUCLEAN && s->fsck_mount)
		rc = 0; /* bad records: os_fsck reports them (or repair deleted them) */
	if (!rc) {
		os_refs_compare(&sc->cnt, &rec, s->alloc, refs_mismatch, &f);
		if (f.under && !s->fsck_mount)
			rc = -EUCLEAN;
	}
	if (!rc && f.fixed) {
		rocksdb_write(s->db, s->wo_sync, f.wb, &err);
		if (err) {
			CM_ERR("rocksdb write: %s", err);
			rocksdb_free(err);
			rc = -EIO;
		}
	}
	if (!rc) {
		s->refs = sc->cnt;
		memset(&sc->cnt, 0, sizeof(sc->cnt));
		if (s->refs.n)
			CM_INFO("%zu blocks shared by clones", s->refs.n);
	}
	rocksdb_writebatch_destroy(f.wb);
	os_refs_fini(&rec);
	return rc;
}

static int
scan_onodes(struct os_store *s)
{
	static const struct os_walk_ops ops = { .coll = scan_coll,
						.colls_done = scan_colls_done,
						.onode = scan_onode };
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	rocksdb_iterator_t *xit = rocksdb_create_iterator(s->db, s->ro); /* shards */
	struct scan sc = { .s = s };
	int rc = os_walk_onodes(it, xit, &ops, &sc);

	rocksdb_iter_destroy(it);
	rocksdb_iter_destroy(xit);
	if (!rc)
		rc = load_refs(s, &sc);
	os_refs_fini(&sc.cnt);
	return rc;
}

/* Apply deferred writes a crash left in the KV, then retire them. */
static int
replay_deferred(struct os_store *s)
{
	rocksdb_iterator_t *it = rocksdb_create_iterator(s->db, s->ro);
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	uint8_t *blk = aligned_alloc(4096, s->B);
	unsigned n = 0;
	char *err = NULL;
	int rc = 0;

	for (rocksdb_iter_seek(it, "D", 1); blk && rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);
		Cairn__Store__Deferred *d;

		if (kl < 1 || k[0] != 'D')
			break;
		d = cairn__store__deferred__unpack(NULL, vl, (const uint8_t *)v);
		if (!d || d->data.len != d->n_pblock * s->B) {
			if (d)
				cairn__store__deferred__free_unpacked(d, NULL);
			rc = -EUCLEAN;
			break;
		}
		if (d->data.len && d->data.data) {
			for (size_t i = 0; i < d->n_pblock && !rc; i++) {
				memcpy(blk, d->data.data + i * s->B, s->B);
				if (d->pblock[i] >= s->nblocks ||
				    pwrite(s->fd, blk, s->B, (off_t)(d->pblock[i] * s->B)) !=
					    (ssize_t)s->B)
					rc = -EIO;
			}
		}
		cairn__store__deferred__free_unpacked(d, NULL);
		rocksdb_writebatch_delete(wb, k, kl);
		n++;
	}
	if (!blk)
		rc = -ENOMEM;
	if (!rc && n) {
		if (fdatasync(s->fd))
			rc = -errno;
		if (!rc) {
			rocksdb_write(s->db, s->wo_sync, wb, &err);
			if (err) {
				CM_ERR("rocksdb write: %s", err);
				rocksdb_free(err);
				rc = -EIO;
			}
		}
		CM_NOTICE("replayed %u deferred writes", n);
	}
	free(blk);
	rocksdb_writebatch_destroy(wb);
	rocksdb_iter_destroy(it);
	return rc;
}

int
os_mount(struct cm_reactor *r, const struct os_opts *o, struct os_store **sp)
{
	struct os_store *s = calloc(1, sizeof(*s));
	struct label l;
	Cairn__Store__Super *sup = NULL;
	uint64_t size;
	char *val, *err = NULL;
	size_t vl;
	int rc;

	if (!s)
		return -ENOMEM;
	s->fd = -1;
	s->r = r;
	TAILQ_INIT(&s->q);
	TAILQ_INIT(&s->dfr_waiting);
	TAILQ_INIT(&s->dfr_applying);
	TAILQ_INIT(&s->dfr_applied);
	TAILQ_INIT(&s->rounds);
	TAILQ_INIT(&s->held);
	TAILQ_INIT(&s->reads);
	pthread_mutex_init(&s->alloc_mu, NULL);
	pthread_mutex_init(&s->wb_mu, NULL);
	pthread_mutex_init(&s->pend_mu, NULL);
	pthread_mutex_init(&s->pcache_mu, NULL);
	pthread_mutex_init(&s->stat_mu, NULL);
	pthread_mutex_init(&s->kv_mu, NULL);
	pthread_cond_init(&s->kv_cv, NULL);
	TAILQ_INIT(&s->fetch_wait);
	s->path = strdup(o->path);
	s->fd = open(o->path, O_RDWR | O_CLOEXEC | (o->no_direct ? 0 : O_DIRECT));
	if (!s->path) {
		rc = -ENOMEM;
		goto fail;
	}
	if (s->fd < 0) {
		rc = -errno;
		CM_ERR("open %s: %s", o->path, strerror(-rc));
		goto fail;
	}
	rc = db_path_of(o, s->fd, &s->db_path);
	if (rc)
		goto fail;
	rc = label_read(s->fd, &l);
	if (!rc)
		rc = dev_size(s->fd, &size);
	if (rc) {
		CM_ERR("%s: %s", o->path,
		       rc == -ENODATA ? "no store label (run mkfs)" : "unreadable label");
		rc = -EINVAL;
		goto fail;
	}
	rc = label_check(&l, o, size, &s->nblocks, &s->data_start);
	if (rc)
		goto fail;
	s->B = l.block_size;
	memcpy(s->uuid, l.uuid, sizeof(s->uuid));
	s->jstart = l.jstart;
	s->jblocks = l.jblocks;
	s->deferred_max = o->deferred_max;
	s->fsck_mount = o->fsck_mount || o->repair;
	s->repair = o->repair;
	s->inline_prepare = !o->no_inline_prepare;
	s->test_kv_delay_us = o->test_kv_delay_us;
	s->test_kv_fail_txn = o->test_kv_fail_txn;
	s->dsync = !o->no_dsync && dsync_flushes_all(s->fd, o->no_direct);
	if (s->jblocks)
		CM_INFO("%s: journal records %s", o->path,
			s->dsync ? "written with RWF_DSYNC (the device flushes its cache after it)"
				 : "written, then the device fsynced");
	s->reserve_blocks = o->reserve
				    ? o->reserve / s->B
				    : CM_MIN(CM_MAX(s->nblocks / 100, (uint64_t)(1 << 20) / s->B),
					     (uint64_t)(1 << 30) / s->B);
	s->db = db_open(s->db_path, false, &s->dbo, &rc);
	if (!s->db)
		goto fail;
	s->wo_sync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(s->wo_sync, 1);
	s->wo_async = rocksdb_writeoptions_create();
	s->ro = rocksdb_readoptions_create();
	s->ro_nb = rocksdb_readoptions_create();
	rocksdb_readoptions_set_read_tier(s->ro_nb, 1); /* kBlockCacheTier */
	val = rocksdb_get(s->db, s->ro, "S", 1, &vl, &err);
	if (err || !val) {
		CM_ERR("%s: no superblock in %s", o->path, s->db_path);
		rocksdb_free(err);
		rc = -EINVAL;
		goto fail;
	}
	sup = cairn__store__super__unpack(NULL, vl, (uint8_t *)val);
	rocksdb_free(val);
	if (!sup || strcmp(sup->uuid, l.uuid) != 0 || sup->block_size != l.block_size) {
		CM_ERR("%s: the metadata in %s belongs to another store (uuid %s, label %s)",
		       o->path, s->db_path, sup ? sup->uuid : "?", l.uuid);
		rc = -EINVAL;
		goto fail;
	}
	s->next_nid = sup->next_nid;
	cairn__store__super__free_unpacked(sup, NULL);
	sup = NULL;
	s->npend_b = 4096;
	s->pend = calloc(s->npend_b, sizeof(*s->pend));
	if (!s->pend || os_alloc_create(s->nblocks, s->data_start, &s->alloc) ||
	    os_ocache_init(&s->pcache, 4096) || os_ocache_init(&s->rcache, o->cache_onodes) ||
	    os_dcache_init(&s->dcache, o->cache_data, s->B)) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = s->jblocks ? os_jnl_mount(s) : 0;
	if (!rc)
		rc = replay_deferred(s);
	if (!rc)
		rc = scan_onodes(s);
	if (rc) {
		CM_ERR("%s: mount: %s", o->path, cm_strerror(rc));
		goto fail;
	}
	s->next_dseq = 1;
	rc = cm_worker_pool_create(1, "store-kv", &s->kv);
	if (!rc)
		rc = cm_worker_pool_create(1, "store-commit", &s->commit);
	if (!rc)
		rc = cm_worker_pool_create(2, "store-rd", &s->rd);
	if (!rc && s->jblocks)
		rc = cm_worker_pool_create(1, "store-flush", &s->flusher);
	if (rc)
		goto fail;
	CM_NOTICE("mounted %s uuid=%s blocks=%" PRIu64 " free=%" PRIu64 " collections=%zu", o->path,
		  l.uuid, s->nblocks, os_alloc_free_blocks(s->alloc), s->ncolls);
	*sp = s;
	return 0;
fail:
	if (sup)
		cairn__store__super__free_unpacked(sup, NULL);
	os_store_free(s);
	return rc;
}

void
os_store_free(struct os_store *s)
{
	cm_worker_pool_destroy(s->kv);
	cm_worker_pool_destroy(s->commit);
	cm_worker_pool_destroy(s->rd);
	cm_worker_pool_destroy(s->flusher);
	os_refs_fini(&s->refs);
	if (s->db)
		rocksdb_close(s->db);
	if (s->dbo)
		rocksdb_options_destroy(s->dbo);
	if (s->wo_sync)
		rocksdb_writeoptions_destroy(s->wo_sync);
	if (s->wo_async)
		rocksdb_writeoptions_destroy(s->wo_async);
	if (s->wo_nowal)
		rocksdb_writeoptions_destroy(s->wo_nowal);
	free(s->jsb_buf);
	if (s->ro)
		rocksdb_readoptions_destroy(s->ro);
	if (s->ro_nb)
		rocksdb_readoptions_destroy(s->ro_nb);
	if (s->fd >= 0) {
		if (s->r)
			cm_reactor_close(s->r, s->fd);
		else
			close(s->fd);
	}
	for (size_t i = 0; s->pend && i < s->npend_b; i++) {
		while (s->pend[i]) {
			struct os_pend *p = s->pend[i];

			s->pend[i] = p->next;
			cm_buf_put(p->buf);
			free(p);
		}
	}
	free(s->pend);
	for (size_t i = 0; i < s->ncolls; i++)
		free(s->colls[i]);
	free(s->colls);
	free(s->cstat);
	if (s->pcache.b)
		os_ocache_fini(&s->pcache);
	if (s->rcache.b)
		os_ocache_fini(&s->rcache);
	os_dcache_fini(&s->dcache);
	os_alloc_destroy(s->alloc);
	pthread_mutex_destroy(&s->alloc_mu);
	while (s->nwb_pool)
		rocksdb_writebatch_destroy(s->wb_pool[--s->nwb_pool]);
	pthread_mutex_destroy(&s->wb_mu);
	pthread_mutex_destroy(&s->pend_mu);
	pthread_mutex_destroy(&s->pcache_mu);
	pthread_mutex_destroy(&s->stat_mu);
	pthread_mutex_destroy(&s->kv_mu);
	pthread_cond_destroy(&s->kv_cv);
	free(s->path);
	free(s->db_path);
	free(s);
}

void
os_get_usage(struct os_store *s, struct os_usage *u)
{
	pthread_mutex_lock(&s->alloc_mu);
	u->total_bytes = (s->nblocks - s->data_start) * s->B; /* blocks data can use */
	u->free_bytes = os_alloc_free_blocks(s->alloc) * s->B;
	pthread_mutex_unlock(&s->alloc_mu);
	u->reserved_bytes = s->reserve_blocks * s->B;
	u->csum_errors = s->c_csum_errors;
	pthread_mutex_lock(&s->dcache.mu);
	u->cache_hits = s->dcache.hits;
	u->cache_misses = s->dcache.misses;
	u->cache_bytes = (uint64_t)s->dcache.n * s->B;
	pthread_mutex_unlock(&s->dcache.mu);
	u->deferred_writes = s->c_deferred;
	u->cow_writes = s->c_cow;
	u->commits = s->c_commits;
	u->commit_groups = s->c_groups;
	u->fsyncs = s->c_fsyncs;
	u->journal_dsync = s->c_jdsync;
	u->fsync_ns = s->c_fsync_ns;
	u->kv_commit_ns = s->c_kv_ns;
	u->kv_sync_ns = s->c_kv_sync_ns;
	u->kv_fn_ns = s->c_kv_fn_ns;
	u->prepare_ns = s->c_prep_ns;
	u->prepared_inline = s->c_prep_inline;
	u->prepare_retries = s->c_prep_retry;
	u->journal_size = s->jblocks * s->B;
	u->journal_bytes = s->c_jbytes;
	u->journal_flushes = s->c_jflushes;
	u->journal_waits = s->c_jwaits;
	u->journal_seals = s->c_jseals;
	u->kv_gate_waits = __atomic_load_n(&s->c_gate_waits, __ATOMIC_RELAXED);
}

const char *
os_uuid(const struct os_store *s)
{
	return s->uuid;
}
