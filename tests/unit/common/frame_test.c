/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/crc32c.h"
#include "cm/err.h"
#include "cm/frame.h"
#include "testlib.h"

#include <openssl/evp.h>

static const struct cm_frame_limits g_lim = { 1 << 20, 32 << 20 };

/* Build one wire frame with a patterned payload. */
static size_t
build(uint8_t *out, uint16_t type, uint64_t seq, uint32_t flen, uint32_t dlen)
{
	struct cm_frame_hdr h = { .version = CM_FRAME_VERSION,
				  .type = type,
				  .seq = seq,
				  .tid = seq * 3,
				  .front_len = flen,
				  .data_len = dlen };

	cm_test_fill(out + CM_FRAME_PREAMBLE_LEN, flen + dlen, seq);
	h.payload_crc = cm_crc32c(0, out + CM_FRAME_PREAMBLE_LEN, flen + dlen);
	cm_frame_hdr_encode(&h, out);
	return CM_FRAME_PREAMBLE_LEN + flen + dlen;
}

START_TEST(test_hdr_roundtrip_and_rejects)
{
	uint8_t b[CM_FRAME_PREAMBLE_LEN + 16];
	struct cm_frame_hdr h;
	struct cm_frame_limits small = { 8, 8 };

	build(b, 300, 7, 4, 12);
	ck_assert_int_eq(cm_frame_hdr_decode(b, &g_lim, &h), 0);
	ck_assert_uint_eq(h.type, 300);
	ck_assert_uint_eq(h.seq, 7);
	ck_assert_uint_eq(h.tid, 21);
	ck_assert_uint_eq(h.front_len, 4);
	ck_assert_uint_eq(h.data_len, 12);
	ck_assert_int_eq(cm_frame_hdr_decode(b, &small, &h), -EMSGSIZE);
	b[9] ^= 1; /* any preamble bit flip is caught by its crc */
	ck_assert_int_eq(cm_frame_hdr_decode(b, &g_lim, &h), -EBADMSG);
	b[9] ^= 1;
	b[0] = 'X';
	ck_assert_int_eq(cm_frame_hdr_decode(b, &g_lim, &h), -EBADMSG);
	build(b, 300, 7, 4, 12);
	b[4] = 2; /* a future frame version, with a valid crc */
	cm_put_le32(b + 44, cm_crc32c(0, b, 44));
	ck_assert_int_eq(cm_frame_hdr_decode(b, &g_lim, &h), -EPROTO);
}

END_TEST

struct sink {
	int n;
	uint64_t seqs[16];
	bool bad;
	size_t blocks; /* 4 KiB block crcs seen */
};

static int
sink_cb(void *arg, struct cm_frame *f)
{
	struct sink *s = arg;
	struct cm_buf *flat;

	s->seqs[s->n++] = f->hdr.seq;
	/* Block crcs, when the buffer has them, are those of its 4 KiB blocks. */
	if (f->data.n == 1 && f->data.sg[0].buf->bcrc) {
		const struct cm_buf *b = f->data.sg[0].buf;

		s->blocks += b->bcrc_n;
		if (b->bcrc_off != f->data.sg[0].off || b->bcrc_n != f->data.len / 4096)
			s->bad = true;
		for (size_t i = 0; i < b->bcrc_n; i++)
			if (b->bcrc[i] != cm_crc32c(0, b->data + b->bcrc_off + i * 4096, 4096))
				s->bad = true;
	}
	/* The data's own crc comes with it (a forwarder does not compute it again). */
	if (f->data.len && (!f->data.has_crc || f->data.crc != cm_sgl_crc32c(&f->data, 0)))
		s->bad = true;
	/* A large payload's data segment lands on a page (the store writes it as it is). */
	if (f->front.len + f->data.len > 65536 && f->data.len && f->data.n == 1 &&
	    (uintptr_t)(f->data.sg[0].buf->data + f->data.sg[0].off) % 4096 != 0)
		s->bad = true;
	ck_assert_int_eq(cm_sgl_flatten(&f->front, &flat), 0);
	if (cm_test_check(flat->data, flat->len, f->hdr.seq) != -1)
		s->bad = true;
	cm_buf_put(flat);
	ck_assert_int_eq(cm_sgl_flatten(&f->data, &flat), 0);
	/* data follows the front in the pattern */
	{
		uint8_t *all = malloc(f->front.len + f->data.len + 1);

		cm_sgl_copy_out(&f->front, 0, all, f->front.len);
		memcpy(all + f->front.len, flat->data, flat->len);
		if (cm_test_check(all, f->front.len + f->data.len, f->hdr.seq) != -1)
			s->bad = true;
		free(all);
	}
	cm_buf_put(flat);
	return 0;
}

/* Feed `len` bytes to rx in chunks of the given sizes (cycled). */
static int
feed(struct cm_frame_rx *rx, const uint8_t *p, size_t len, const size_t *chunks, int nchunks,
     struct sink *s)
{
	size_t off = 0;
	int i = 0, rc;

	while (off < len) {
		void *dst;
		size_t room, take;

		ck_assert_int_eq(cm_frame_rx_prepare(rx, &dst, &room), 0);
		take = CM_MIN(CM_MIN(room, len - off), chunks[i++ % nchunks]);
		memcpy(dst, p + off, take);
		off += take;
		rc = cm_frame_rx_advance(rx, take, sink_cb, s);
		if (rc)
			return rc;
	}
	return 0;
}

START_TEST(test_rx_stream_chunked)
{
	static const uint32_t sizes[][2] = { { 0, 0 },      { 5, 0 },       { 0, 100 },
					     { 10, 70000 }, { 3, 1 << 20 }, { 100, 5 },
					     { 0, 4000000 } };
	size_t total = 0, cap = 0;
	uint8_t *wire;
	const size_t chunks_a[] = { 1, 7, 48, 1000, 65536, 3 };
	const size_t chunks_b[] = { 1 << 22 };

	for (size_t i = 0; i < CM_ARRAY_SIZE(sizes); i++)
		cap += CM_FRAME_PREAMBLE_LEN + sizes[i][0] + sizes[i][1];
	wire = malloc(cap);
	for (size_t i = 0; i < CM_ARRAY_SIZE(sizes); i++)
		total += build(wire + total, 256, i + 1, sizes[i][0], sizes[i][1]);
	for (int pass = 0; pass < 2; pass++) {
		struct cm_frame_rx rx;
		struct sink s = { 0 };

		cm_frame_rx_init(&rx, 8192, &g_lim);
		ck_assert_int_eq(
			feed(&rx, wire, total, pass ? chunks_b : chunks_a, pass ? 1 : 6, &s), 0);
		ck_assert_int_eq(s.n, (int)CM_ARRAY_SIZE(sizes));
		ck_assert(!s.bad);
		ck_assert_uint_ge(s.blocks, (70000 + (1 << 20) + 4000000) / 4096);
		for (int i = 0; i < s.n; i++)
			ck_assert_uint_eq(s.seqs[i], (uint64_t)i + 1);
		cm_frame_rx_fini(&rx);
	}
	free(wire);
}

END_TEST

START_TEST(test_rx_corrupt_payload_and_oversize)
{
	uint8_t wire[2 * CM_FRAME_PREAMBLE_LEN + 200];
	size_t n = build(wire, 256, 1, 10, 90);
	const size_t ch[] = { 17 };
	struct cm_frame_rx rx;
	struct sink s = { 0 };
	struct cm_frame_limits tiny = { 16, 16 };

	wire[CM_FRAME_PREAMBLE_LEN + 50] ^= 0x40;
	cm_frame_rx_init(&rx, 4096, &g_lim);
	ck_assert_int_eq(feed(&rx, wire, n, ch, 1, &s), -CM_ECRC);
	ck_assert_int_eq(s.n, 0); /* never delivered */
	cm_frame_rx_fini(&rx);

	n = build(wire, 256, 1, 10, 90);
	cm_frame_rx_init(&rx, 4096, &tiny);
	ck_assert_int_eq(feed(&rx, wire, n, ch, 1, &s), -EMSGSIZE);
	cm_frame_rx_fini(&rx);

	memset(wire, 0xAB, sizeof(wire));
	cm_frame_rx_init(&rx, 4096, &g_lim);
	ck_assert_int_eq(feed(&rx, wire, sizeof(wire), ch, 1, &s), -EBADMSG);
	cm_frame_rx_fini(&rx);
}

END_TEST

/*
 * One tagged frame (as the messenger sends after the handshake) at out:
 * preamble, payload, tag from m (its next frame number). \return its length.
 */
static size_t
build_mac(uint8_t *out, struct cm_frame_mac *m, uint64_t seq, uint32_t flen, uint32_t dlen)
{
	struct cm_frame_hdr h = { .version = CM_FRAME_VERSION,
				  .flags = CM_FRAME_F_MAC,
				  .type = 256,
				  .seq = seq,
				  .tid = seq * 3,
				  .front_len = flen,
				  .data_len = dlen };
	struct cm_buf *b;
	struct cm_sgl front, data;

	cm_test_fill(out + CM_FRAME_PREAMBLE_LEN, flen + dlen, seq);
	h.payload_crc = cm_crc32c(0, out + CM_FRAME_PREAMBLE_LEN, flen + dlen);
	cm_frame_hdr_encode(&h, out);
	ck_assert_int_eq(cm_buf_alloc(flen + dlen + 1, &b), 0);
	memcpy(b->data, out + CM_FRAME_PREAMBLE_LEN, flen + dlen);
	cm_sgl_init(&front);
	cm_sgl_init(&data);
	ck_assert_int_eq(cm_sgl_append(&front, b, 0, flen), 0);
	/* The data in pieces of odd sizes, each in a buffer of its own (so they
	 * stay separate segments): the MAC must carry partial blocks across. */
	for (uint32_t off = 0, i = 0; off < dlen; i++) {
		static const uint32_t piece[] = { 1, 15, 33, 4097, 64, 100000 };
		uint32_t len = CM_MIN(piece[i % CM_ARRAY_SIZE(piece)], dlen - off);
		struct cm_buf *pb;

		ck_assert_int_eq(cm_buf_alloc(len, &pb), 0);
		memcpy(pb->data, b->data + flen + off, len);
		ck_assert_int_eq(cm_sgl_append(&data, pb, 0, len), 0);
		cm_buf_put(pb);
		off += len;
	}
	ck_assert_int_eq(
		cm_frame_mac_sign(m, out, &front, &data, out + CM_FRAME_PREAMBLE_LEN + flen + dlen),
		0);
	cm_sgl_fini(&front);
	cm_sgl_fini(&data);
	cm_buf_put(b);
	return CM_FRAME_PREAMBLE_LEN + flen + dlen + CM_FRAME_MAC_LEN;
}

/* A receiver expecting tags from the sender keyed with key. */
/* The MAC of test_rx_mac's run: ChaCha20-Poly1305 (protocol 2), then GMAC (3). */
static bool g_gmac;

static void
rx_mac(struct cm_frame_rx *rx, const uint8_t *key)
{
	struct cm_frame_mac *m;

	cm_frame_rx_init(rx, 8192, &g_lim);
	ck_assert_int_eq(cm_frame_mac_create(key, g_gmac, &m), 0);
	cm_frame_rx_set_mac(rx, m);
}

/*
 * Frame MACs (both kinds): tagged frames of every size arrive whole in any chunking; a
 * changed byte anywhere, a frame replayed, dropped or sent with another
 * session's key, and an untagged frame are all refused, before delivery.
 */
START_TEST(test_rx_mac)
{
	static const uint32_t sizes[][2] = { { 0, 0 }, { 5, 100 }, { 10, 70000 }, { 3, 1 << 20 } };
	static uint8_t key[CM_FRAME_MAC_KEY_LEN] = "0123456789abcdef0123456789abcde";
	static uint8_t other[CM_FRAME_MAC_KEY_LEN] = "0123456789abcdef0123456789abcdX";
	const size_t chunks[] = { 1, 7, 48, 1000, 65536, 3 }, one[] = { 1 << 22 };
	struct cm_frame_mac *tx;
	struct cm_frame_rx rx;
	struct sink s = { 0 };
	size_t total = 0, cap = 0, off[8], len[8];
	uint8_t *wire;

	g_gmac = _i == 1;
	for (size_t i = 0; i < CM_ARRAY_SIZE(sizes); i++)
		cap += CM_FRAME_PREAMBLE_LEN + sizes[i][0] + sizes[i][1] + CM_FRAME_MAC_LEN;
	wire = malloc(cap);
	ck_assert_int_eq(cm_frame_mac_create(key, g_gmac, &tx), 0);
	for (size_t i = 0; i < CM_ARRAY_SIZE(sizes); i++) {
		off[i] = total;
		len[i] = build_mac(wire + total, tx, i + 1, sizes[i][0], sizes[i][1]);
		total += len[i];
	}
	cm_frame_mac_destroy(tx);
	for (int pass = 0; pass < 2; pass++) {
		memset(&s, 0, sizeof(s));
		rx_mac(&rx, key);
		ck_assert_int_eq(feed(&rx, wire, total, pass ? one : chunks, pass ? 1 : 6, &s), 0);
		ck_assert_int_eq(s.n, (int)CM_ARRAY_SIZE(sizes));
		ck_assert(!s.bad);
		cm_frame_rx_fini(&rx);
	}
	/* A flipped bit in the payload or in the tag of the large frame fails
	 * the MAC (checked before the crc, which an attacker can fix up). */
	for (int where = 0; where < 2; where++) {
		size_t at = off[3] + (where ? len[3] - 3 : CM_FRAME_PREAMBLE_LEN + 4000);

		wire[at] ^= 0x10;
		memset(&s, 0, sizeof(s));
		rx_mac(&rx, key);
		ck_assert_int_eq(feed(&rx, wire, total, chunks, 6, &s), -CM_EMAC);
		ck_assert_int_eq(s.n, 3); /* the frames before it only */
		cm_frame_rx_fini(&rx);
		wire[at] ^= 0x10;
	}
	/* Replayed (frame 2 twice), dropped (frame 2 missing), another key. */
	{
		uint8_t *w2 = malloc(total + len[1]);
		size_t n = 0;

		memcpy(w2, wire, off[2]);
		n = off[2];
		memcpy(w2 + n, wire + off[1], len[1]);
		n += len[1];
		memset(&s, 0, sizeof(s));
		rx_mac(&rx, key);
		ck_assert_int_eq(feed(&rx, w2, n, chunks, 6, &s), -CM_EMAC);
		ck_assert_int_eq(s.n, 2);
		cm_frame_rx_fini(&rx);
		memcpy(w2, wire, off[1]);
		memcpy(w2 + off[1], wire + off[2], total - off[2]);
		memset(&s, 0, sizeof(s));
		rx_mac(&rx, key);
		ck_assert_int_eq(feed(&rx, w2, off[1] + total - off[2], chunks, 6, &s), -CM_EMAC);
		ck_assert_int_eq(s.n, 1);
		cm_frame_rx_fini(&rx);
		free(w2);
	}
	memset(&s, 0, sizeof(s));
	rx_mac(&rx, other);
	ck_assert_int_eq(feed(&rx, wire, total, chunks, 6, &s), -CM_EMAC);
	ck_assert_int_eq(s.n, 0);
	cm_frame_rx_fini(&rx);
	/* Untagged where tags are due; tagged where none were agreed. */
	memset(&s, 0, sizeof(s));
	rx_mac(&rx, key);
	total = build(wire, 256, 1, 10, 90);
	ck_assert_int_eq(feed(&rx, wire, total, chunks, 6, &s), -CM_EMAC);
	cm_frame_rx_fini(&rx);
	ck_assert_int_eq(cm_frame_mac_create(key, g_gmac, &tx), 0);
	total = build_mac(wire, tx, 1, 10, 90);
	cm_frame_mac_destroy(tx);
	cm_frame_rx_init(&rx, 8192, &g_lim);
	ck_assert_int_eq(feed(&rx, wire, total, chunks, 6, &s), -EPROTO);
	ck_assert_int_eq(s.n, 0);
	cm_frame_rx_fini(&rx);
	free(wire);
}

END_TEST

/*
 * The wire tag, computed apart with the EVP AEAD (what protocol 3 was first
 * built on): frame number n as the nonce, preamble and payload as associated
 * data, no plaintext.
 */
static void
aead_tag(const uint8_t *key, bool gmac, uint64_t n, const uint8_t *frame, size_t len,
	 uint8_t tag[CM_FRAME_MAC_LEN])
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	uint8_t nonce[12] = { 0 }, none[16];
	int outl;

	cm_put_le64(nonce + 4, n);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(EVP_EncryptInit_ex(c, gmac ? EVP_aes_256_gcm() : EVP_chacha20_poly1305(),
					    NULL, key, nonce),
			 1);
	ck_assert_int_eq(EVP_EncryptUpdate(c, NULL, &outl, frame, (int)len), 1);
	ck_assert_int_eq(EVP_EncryptFinal_ex(c, none, &outl), 1);
	ck_assert_int_eq(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, CM_FRAME_MAC_LEN, tag), 1);
	EVP_CIPHER_CTX_free(c);
}

/* Both MACs give the AEAD's tag for every payload size and frame number. */
START_TEST(test_mac_matches_aead)
{
	static const uint8_t key[CM_FRAME_MAC_KEY_LEN] = "0123456789abcdef0123456789abcde";
	static const uint32_t sizes[][2] = { { 0, 0 },     { 1, 0 },      { 0, 15 },
					     { 16, 0 },    { 17, 4096 },  { 100, 4095 },
					     { 3, 70001 }, { 0, 1 << 20 } };
	size_t cap = CM_FRAME_PREAMBLE_LEN + (1u << 20) + 100 + CM_FRAME_MAC_LEN;
	uint8_t *wire = malloc(cap), want[CM_FRAME_MAC_LEN];
	struct cm_frame_mac *m;

	ck_assert_ptr_nonnull(wire);
	for (int gmac = 0; gmac < 2; gmac++) {
		ck_assert_int_eq(cm_frame_mac_create(key, gmac, &m), 0);
		for (uint64_t n = 0; n < 3 * CM_ARRAY_SIZE(sizes); n++) {
			const uint32_t *sz = sizes[n % CM_ARRAY_SIZE(sizes)];
			size_t len = build_mac(wire, m, n + 1, sz[0], sz[1]) - CM_FRAME_MAC_LEN;

			aead_tag(key, gmac, n, wire, len, want);
			ck_assert_mem_eq(wire + len, want, CM_FRAME_MAC_LEN);
		}
		cm_frame_mac_destroy(m);
	}
	free(wire);
}

END_TEST

int
main(void)
{
	Suite *s = suite_create("frame");
	TCase *tc = tcase_create("frame");

	tcase_add_test(tc, test_hdr_roundtrip_and_rejects);
	tcase_add_test(tc, test_rx_stream_chunked);
	tcase_add_test(tc, test_rx_corrupt_payload_and_oversize);
	tcase_add_loop_test(tc, test_rx_mac, 0, 2); /* Poly1305, GMAC */
	tcase_add_test(tc, test_mac_matches_aead);
	suite_add_tcase(s, tc);
	return cm_test_main(s);
}
