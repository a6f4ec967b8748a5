/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/buf.h"
#include "cm/crc32c.h"
#include "cm/tlcache.h"
#include "testlib.h"

#include <pthread.h>

static int g_freed;

static void
count_free(void *arg, void *data)
{
	(void)data;
	g_freed += (int)(intptr_t)arg;
}

START_TEST(test_buf_refcount)
{
	struct cm_buf *b;
	static char mem[16];

	ck_assert_int_eq(cm_buf_wrap(mem, sizeof(mem), count_free, (void *)1, &b), 0);
	cm_buf_get(b);
	cm_buf_put(b);
	ck_assert_int_eq(g_freed, 0);
	cm_buf_put(b);
	ck_assert_int_eq(g_freed, 1);
	cm_buf_put(NULL);
	ck_assert_int_eq(cm_buf_alloc_aligned(8192, 4096, &b), 0);
	ck_assert_uint_eq((uintptr_t)b->data % 4096, 0);
	cm_buf_put(b);
	ck_assert_int_eq(cm_buf_alloc_aligned(10, 3, &b), -EINVAL);
}

END_TEST

/* Large buffers come back from the pool: same region for sizes of one class, aligned. */
START_TEST(test_large_pool_reuse)
{
	struct cm_buf *a, *b, *c;
	uint8_t *pa;

	ck_assert_int_eq(cm_buf_alloc_aligned((4u << 20) + 4096, 4096, &a), 0);
	pa = a->data;
	ck_assert_uint_eq((uintptr_t)pa % 4096, 0);
	memset(a->data, 1, a->len);
	cm_buf_put(a);
	/* 4 MiB + 8 KiB is in the same (5 MiB) class: the same region. */
	ck_assert_int_eq(cm_buf_alloc((4u << 20) + 8192, &b), 0);
	ck_assert_ptr_eq(b->data, pa);
	ck_assert_uint_eq(b->len, (4u << 20) + 8192);
	/* While it is taken, another buffer of the class is another region. */
	ck_assert_int_eq(cm_buf_alloc_aligned(5u << 20, 4096, &c), 0);
	ck_assert_ptr_ne(c->data, pa);
	memset(c->data, 2, c->len);
	cm_buf_put(b);
	cm_buf_put(c);
}

END_TEST

START_TEST(test_sgl_append_copy_iov)
{
	struct cm_buf *a, *b;
	struct cm_sgl s, t;
	struct iovec iov[16];
	char out[64];

	ck_assert_int_eq(cm_buf_alloc(10, &a), 0);
	ck_assert_int_eq(cm_buf_alloc(10, &b), 0);
	memcpy(a->data, "0123456789", 10);
	memcpy(b->data, "abcdefghij", 10);
	cm_sgl_init(&s);
	ck_assert_int_eq(cm_sgl_append(&s, a, 0, 4), 0);
	ck_assert_int_eq(cm_sgl_append(&s, a, 4, 6), 0); /* merges */
	ck_assert_uint_eq(s.n, 1);
	ck_assert_int_eq(cm_sgl_append(&s, b, 2, 5), 0);
	ck_assert_int_eq(cm_sgl_append(&s, b, 8, 5), -EINVAL);
	ck_assert_uint_eq(s.len, 15);
	ck_assert_int_eq(cm_sgl_copy_out(&s, 8, out, 5), 0);
	ck_assert_int_eq(memcmp(out, "89cde", 5), 0);
	ck_assert_int_eq(cm_sgl_copy_out(&s, 8, out, 8), -ERANGE);
	ck_assert_int_eq(cm_sgl_to_iov(&s, 12, iov, 16), 1);
	ck_assert_uint_eq(iov[0].iov_len, 3);
	ck_assert_uint_eq(cm_sgl_crc32c(&s, 0), cm_crc32c(0, "0123456789cdefg", 15));
	/* Many slices spill to the heap; references are kept until fini. */
	cm_sgl_init(&t);
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(cm_sgl_append(&t, (i & 1) ? a : b, (size_t)i % 10, 1), 0);
	ck_assert_uint_eq(t.n, 20);
	ck_assert_int_eq(cm_sgl_move(&s, &t), 0);
	ck_assert_uint_eq(s.len, 35);
	ck_assert_uint_eq(t.len, 0);
	cm_buf_put(a);
	cm_buf_put(b);
	ck_assert_int_eq(cm_sgl_copy_out(&s, 0, out, 10), 0); /* still alive */
	ck_assert_int_eq(memcmp(out, "0123456789", 10), 0);
	struct cm_buf *flat;

	ck_assert_int_eq(cm_sgl_flatten(&s, &flat), 0);
	ck_assert_uint_eq(flat->len, 35);
	cm_buf_put(flat);
	cm_sgl_fini(&s);
	cm_sgl_fini(&t);
}

END_TEST

/* ---------- cm/tlcache.h ---------- */

static atomic_int g_destroyed;

static void
obj_destroy(void *p)
{
	atomic_fetch_add(&g_destroyed, 1);
	free(p);
}

/* 2 per thread, 2 shared. */
static struct cm_tlc_kind g_tk = CM_TLC_KIND(2, 2, obj_destroy);
static __thread struct cm_tlc t_tc = { .kind = &g_tk };

#ifndef CAIRN_ASAN
static void *
put_three_and_exit(void *arg)
{
	void **objs = arg;

	for (int i = 0; i < 3; i++)
		cm_tlc_put(&t_tc, objs[i]);
	return NULL; /* (what this thread kept is destroyed at its exit) */
}
#endif

/*
 * Freed objects come back to the thread that frees them (latest first);
 * past its 2, 2 more wait in the shared list for any thread; past that they
 * are destroyed; a thread's own list is destroyed when it exits. Under
 * AddressSanitizer nothing is kept.
 */
START_TEST(test_tlcache)
{
	void *a = malloc(64), *b = malloc(64), *objs[3] = { malloc(64), malloc(64), malloc(64) };

	atomic_store(&g_destroyed, 0);
	ck_assert_ptr_null(cm_tlc_get(&t_tc));
	cm_tlc_put(&t_tc, a);
	cm_tlc_put(&t_tc, b);
#ifdef CAIRN_ASAN
	ck_assert_int_eq(atomic_load(&g_destroyed), 2);
	ck_assert_ptr_null(cm_tlc_get(&t_tc));
	for (int i = 0; i < 3; i++)
		free(objs[i]);
#else
	ck_assert_ptr_eq(cm_tlc_get(&t_tc), b);
	ck_assert_ptr_eq(cm_tlc_get(&t_tc), a);
	ck_assert_ptr_null(cm_tlc_get(&t_tc));
	/* Another thread frees three: it keeps two (destroyed when it exits), one goes shared. */
	pthread_t th;

	ck_assert_int_eq(pthread_create(&th, NULL, put_three_and_exit, objs), 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(atomic_load(&g_destroyed), 2);
	ck_assert_ptr_eq(cm_tlc_get(&t_tc), objs[2]); /* (from the shared list) */
	ck_assert_ptr_null(cm_tlc_get(&t_tc));
	/* Full everywhere: destroyed at once. */
	cm_tlc_put(&t_tc, a);
	cm_tlc_put(&t_tc, b);
	cm_tlc_put(&t_tc, objs[2]);
	ck_assert_int_eq(atomic_load(&g_destroyed), 2);
	{
		void *c = malloc(64), *d = malloc(64);

		cm_tlc_put(&t_tc, c);
		ck_assert_int_eq(atomic_load(&g_destroyed), 2);
		cm_tlc_put(&t_tc, d); /* (mine: 2, shared: 2) */
		ck_assert_int_eq(atomic_load(&g_destroyed), 3);
	}
	for (void *p; (p = cm_tlc_get(&t_tc));)
		free(p);
#endif
}

END_TEST

/* Small buffers and wrapped headers come back from the caches, contents fresh. */
START_TEST(test_small_buf_reuse)
{
	struct cm_buf *a, *b;
	static char mem[8];

	ck_assert_int_eq(cm_buf_alloc(100, &a), 0);
	ck_assert_uint_eq(a->len, 100);
	memset(a->data, 0xab, 100);
	cm_buf_put(a);
	ck_assert_int_eq(cm_buf_alloc(512, &b), 0);
	ck_assert_uint_eq(b->len, 512);
	ck_assert_uint_eq(atomic_load(&b->refs), 1);
	ck_assert_ptr_null(b->bcrc);
#ifndef CAIRN_ASAN
	ck_assert_ptr_eq(b, a); /* (the same block) */
#endif
	memset(b->data, 0, 512); /* (all 512 bytes are its) */
	cm_buf_put(b);
	g_freed = 0;
	ck_assert_int_eq(cm_buf_wrap(mem, sizeof(mem), count_free, (void *)1, &a), 0);
	cm_buf_put(a);
	ck_assert_int_eq(g_freed, 1);
	ck_assert_int_eq(cm_buf_wrap(mem, 4, NULL, NULL, &b), 0);
	ck_assert_uint_eq(b->len, 4);
	ck_assert_ptr_eq(b->data, (uint8_t *)mem);
	cm_buf_put(b);
	ck_assert_int_eq(g_freed, 1); /* (no callback: none ran) */
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("buf");

	tcase_add_test(tc, test_buf_refcount);
	tcase_add_test(tc, test_sgl_append_copy_iov);
	tcase_add_test(tc, test_large_pool_reuse);
	tcase_add_test(tc, test_tlcache);
	tcase_add_test(tc, test_small_buf_reuse);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
