/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reference-counted buffers and scatter-gather lists, so payloads move from
 * socket to store (and back) without copies.
 *
 * A cm_buf is a refcounted span of bytes: either allocated with its header in
 * one block (cm_buf_alloc / cm_buf_alloc_aligned) or wrapping memory owned
 * elsewhere (cm_buf_wrap, released through a callback when the last reference
 * goes). cm_buf_get/put are atomic, so a buffer may be shared across threads.
 *
 * A cm_sgl is an ordered list of (buf, offset, length) slices; each slice holds
 * a reference. It is owned by one thread at a time. Up to CM_SGL_INLINE slices
 * live inside the struct, so small messages allocate nothing extra.
 */
#ifndef CM_BUF_H
#define CM_BUF_H

#include "cm/stdinc.h"

struct cm_buf;
typedef void (*cm_buf_free_cb)(void *arg, void *data);

struct cm_buf {
	atomic_uint refs;
	uint32_t flags;
	size_t len;    /* bytes of data */
	uint8_t *data; /* start of data */
	cm_buf_free_cb free_cb;
	void *free_arg;
	/* Optional: cm_crc32c of each whole 4 KiB block of data[bcrc_off...]
	 * (bcrc_n blocks), set by whoever filled the buffer (the messenger, for
	 * a large message's data segment) and freed with the buffer. The store
	 * uses them instead of computing its block checksums again. */
	uint32_t *bcrc;
	size_t bcrc_off, bcrc_n;
};

/*
 * Allocate a buffer of len bytes, one reference. Contents are uninitialised.
 * \return 0, -ENOMEM.
 */
int cm_buf_alloc(size_t len, struct cm_buf **bp);

/* As cm_buf_alloc, with data aligned to `align` (a power of two, e.g. 4096 for O_DIRECT). */
int cm_buf_alloc_aligned(size_t len, size_t align, struct cm_buf **bp);

/*
 * Wrap memory owned elsewhere; free_cb(arg, data) runs when the last reference
 * is put (free_cb may be NULL for static memory). \return 0, -ENOMEM.
 */
int cm_buf_wrap(void *data, size_t len, cm_buf_free_cb free_cb, void *arg, struct cm_buf **bp);

/* Take a reference. \return b. */
struct cm_buf *cm_buf_get(struct cm_buf *b);

/* Drop a reference; the last frees. NULL is a no-op. */
void cm_buf_put(struct cm_buf *b);

struct cm_sg {
	struct cm_buf *buf;
	size_t off;
	size_t len;
};

#define CM_SGL_INLINE 4

struct cm_sgl {
	struct cm_sg *sg; /* points at inline_sg or a heap array */
	unsigned n;
	unsigned cap;
	size_t len;   /* total bytes */
	uint32_t crc; /* cm_crc32c of all its bytes, when has_crc (any change clears it) */
	bool has_crc;
	struct cm_sg inline_sg[CM_SGL_INLINE];
};

void cm_sgl_init(struct cm_sgl *s);

/* Drop every slice's reference and any heap array; leaves s empty and reusable. */
void cm_sgl_fini(struct cm_sgl *s);

/*
 * Append buf[off, off+len), taking a new reference on buf.
 * \return 0, -EINVAL (range outside buf), -ENOMEM.
 */
int cm_sgl_append(struct cm_sgl *s, struct cm_buf *buf, size_t off, size_t len);

/* Append every slice of src (new references). \return 0, -ENOMEM. */
int cm_sgl_append_sgl(struct cm_sgl *s, const struct cm_sgl *src);

/* Move src's slices to the end of dst; src is left empty. \return 0, -ENOMEM. */
int cm_sgl_move(struct cm_sgl *dst, struct cm_sgl *src);

/*
 * Copy len bytes starting at off into dst. \return 0, -ERANGE if the range
 * exceeds the list.
 */
int cm_sgl_copy_out(const struct cm_sgl *s, size_t off, void *dst, size_t len);

/*
 * Fill at most max iovecs describing bytes [off, end) of the list.
 * \return the number of iovecs filled.
 */
int cm_sgl_to_iov(const struct cm_sgl *s, size_t off, struct iovec *iov, int max);

/* crc32c of the whole list, chained onto crc. */
uint32_t cm_sgl_crc32c(const struct cm_sgl *s, uint32_t crc);

/*
 * cm_crc32c of all of s's bytes: the one known (the messenger records it for
 * the data of a message it received; cm_sgl_append_sgl and cm_sgl_move into
 * an empty list keep it), else computed and remembered.
 */
uint32_t cm_sgl_crc(struct cm_sgl *s);

/* Allocate one buffer holding a copy of the whole list (for callers that need flat bytes). */
int cm_sgl_flatten(const struct cm_sgl *s, struct cm_buf **bp);

#endif
