/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the store test's files share (store_test.c: helpers, every op;
 * store_journal_test.c: the journal and sharded extent maps;
 * store_fault_test.c: corruption, refused mounts, a full or failing
 * device, a raw block device): one store per test on a preallocated file,
 * mounted on the test's reactor.
 */
#ifndef STORE_TEST_H
#define STORE_TEST_H

#include "os/alloc.h"
#include "os/store.h"
#include "cm/crc32c.h"
#include "cm/log.h"
#include "testlib.h"

#include <fcntl.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>

extern char g_dir[64], g_dev[96];
extern char g_db[128];
extern struct cm_reactor *g_r;
extern struct os_store *g_s;

struct done {
	bool done;
	int rc;
	struct cm_buf *buf;
};

void make_dev(uint64_t size);
void opts(struct os_opts *o);
void mount_store(void);
void setup_size(uint64_t size);
void setup(void);
/* fsck g_s, which must find nothing wrong; \return its report. */
struct os_fsck_report fsck_clean(bool deep);
void teardown(void);
void commit_cb(void *arg, int rc);
int apply(struct os_txn *t);
void read_cb(void *arg, int rc, struct cm_buf *b);
int rd(const char *oid, uint64_t off, uint64_t len, struct cm_buf **out);
struct os_txn *txn(void);
void mkcoll(void);
void write_obj(const char *oid, uint64_t off, const void *data, size_t len);
void check_obj(const char *oid, const uint8_t *model, uint64_t size);
/* Put (val) or delete (!val) one key in the unmounted store's RocksDB. */
void db_poke(const char *key, size_t klen, const char *val, size_t vlen);

/* The other files' tests, added to the store suite's TCases. */
void store_journal_tests(TCase *tc);
void store_clone_tests(TCase *tc, TCase *unit);
void store_fault_tests(TCase *tc, TCase *bdev);
/* Unmount the store and remove its files (a test that made its own). */
void unmake_store(void);
/* A child process of the journal crash test (JN_CHILD set). */
void jn_child_main(uint32_t first, uint32_t last, bool big, int mk);

#endif
