/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/frame.h"
#include "cm/crc32c.h"
#include "cm/err.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <intel-ipsec-mb.h>
#include <pthread.h>

/* Payloads above this get a buffer of their own instead of the rolling one. */
#define FRAME_LARGE_PAYLOAD (64u * 1024)

/* ---------------- frame MACs ---------------- */

/*
 * A frame's tag is the AES-256-GCM tag of an empty message whose associated
 * data is the preamble and the payload (GMAC), with the frame's number as the
 * nonce; protocol 2 used ChaCha20-Poly1305 the same way (through OpenSSL's
 * EVP AEAD).
 *
 * GMAC goes through Intel's multi-buffer crypto library (intel-ipsec-mb, its
 * direct GMAC calls): its GHASH uses VPCLMULQDQ where the CPU has it and runs
 * at ~21 GB/s per core here, against ~9 GB/s for OpenSSL 3.0's, and a frame
 * costs ~50 ns besides (the EVP AEAD cost ~300 ns per frame in parameter
 * lookups). The tag bytes are the standard GMAC's: frame_test checks them
 * against OpenSSL's EVP AEAD.
 */
struct cm_frame_mac {
	_Alignas(64) struct gcm_key_data kd; /* GMAC: expanded AES key and GHASH key powers */
	struct gcm_context_data cx;          /* GMAC: the frame being tagged */
	EVP_CIPHER_CTX *ctx;                 /* ChaCha20-Poly1305 only */
	uint8_t key[CM_FRAME_MAC_KEY_LEN];
	uint64_t n; /* the next frame's number */
	bool gmac;  /* AES-256 GMAC (protocol 3), else ChaCha20-Poly1305 */
	bool keyed; /* ChaCha20-Poly1305: ctx holds the key, later frames set only their nonce */
};

/* The library's function table, chosen once for this CPU (read-only after;
 * the direct GMAC calls keep their state in the caller's context). */
static IMB_MGR *g_imb;
static pthread_once_t g_imb_once = PTHREAD_ONCE_INIT;

static void
imb_init(void)
{
	IMB_MGR *mgr = alloc_mb_mgr(0);
	IMB_ARCH arch;

	if (!mgr)
		return;
	init_mb_mgr_auto(mgr, &arch);
	if (imb_get_errno(mgr) != 0) {
		free_mb_mgr(mgr);
		return;
	}
	g_imb = mgr;
}

int
cm_frame_mac_create(const uint8_t key[CM_FRAME_MAC_KEY_LEN], bool gmac, struct cm_frame_mac **mp)
{
	size_t sz = (sizeof(struct cm_frame_mac) + 63) & ~(size_t)63;
	struct cm_frame_mac *m = aligned_alloc(64, sz);

	if (!m)
		return -ENOMEM;
	memset(m, 0, sz);
	memcpy(m->key, key, sizeof(m->key));
	m->gmac = gmac;
	if (gmac) {
		pthread_once(&g_imb_once, imb_init);
		if (!g_imb) {
			cm_frame_mac_destroy(m);
			return -ENOTSUP;
		}
		IMB_AES256_GCM_PRE(g_imb, m->key, &m->kd);
	} else if (!(m->ctx = EVP_CIPHER_CTX_new())) {
		cm_frame_mac_destroy(m);
		return -ENOMEM;
	}
	*mp = m;
	return 0;
}

void
cm_frame_mac_destroy(struct cm_frame_mac *m)
{
	if (!m)
		return;
	EVP_CIPHER_CTX_free(m->ctx);
	OPENSSL_cleanse(m, sizeof(*m));
	free(m);
}

/* Start the next frame's tag: the nonce is its number (then counted). */
static int
mac_begin(struct cm_frame_mac *m, const uint8_t *pre)
{
	uint8_t nonce[12] = { 0 };
	int outl;

	cm_put_le64(nonce + 4, m->n++);
	if (m->gmac) {
		IMB_AES256_GMAC_INIT(g_imb, &m->kd, &m->cx, nonce, sizeof(nonce));
		IMB_AES256_GMAC_UPDATE(g_imb, &m->kd, &m->cx, pre, CM_FRAME_PREAMBLE_LEN);
		return 0;
	}
	/* The cipher and key once; per frame only the nonce (a full init per
	 * frame cost a third of the small-message rate). */
	if (!m->keyed) {
		/* (It takes a 12-byte nonce by default.) */
		if (EVP_EncryptInit_ex(m->ctx, EVP_chacha20_poly1305(), NULL, m->key, nonce) != 1)
			return -EIO;
		m->keyed = true;
	} else if (EVP_EncryptInit_ex(m->ctx, NULL, NULL, NULL, nonce) != 1) {
		return -EIO;
	}
	if (EVP_EncryptUpdate(m->ctx, NULL, &outl, pre, CM_FRAME_PREAMBLE_LEN) != 1)
		return -EIO;
	return 0;
}

static int
mac_add(struct cm_frame_mac *m, const uint8_t *p, size_t n)
{
	int outl;

	if (m->gmac) {
		if (n)
			IMB_AES256_GMAC_UPDATE(g_imb, &m->kd, &m->cx, p, n);
		return 0;
	}
	while (n) {
		int k = (int)CM_MIN(n, (size_t)1 << 30);

		if (EVP_EncryptUpdate(m->ctx, NULL, &outl, p, k) != 1)
			return -EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int
mac_add_sgl(struct cm_frame_mac *m, const struct cm_sgl *l)
{
	int rc = 0;

	for (size_t i = 0; i < l->n && !rc; i++)
		rc = mac_add(m, l->sg[i].buf->data + l->sg[i].off, l->sg[i].len);
	return rc;
}

static int
mac_end(struct cm_frame_mac *m, uint8_t tag[CM_FRAME_MAC_LEN])
{
	uint8_t none[16];
	int outl;

	if (m->gmac) {
		IMB_AES256_GMAC_FINALIZE(g_imb, &m->kd, &m->cx, tag, CM_FRAME_MAC_LEN);
		return 0;
	}
	if (EVP_EncryptFinal_ex(m->ctx, none, &outl) != 1 ||
	    EVP_CIPHER_CTX_ctrl(m->ctx, EVP_CTRL_AEAD_GET_TAG, CM_FRAME_MAC_LEN, tag) != 1)
		return -EIO;
	return 0;
}

int
cm_frame_mac_sign(struct cm_frame_mac *m, const uint8_t pre[CM_FRAME_PREAMBLE_LEN],
		  const struct cm_sgl *front, const struct cm_sgl *data,
		  uint8_t tag[CM_FRAME_MAC_LEN])
{
	int rc = mac_begin(m, pre);

	if (!rc)
		rc = mac_add_sgl(m, front);
	if (!rc)
		rc = mac_add_sgl(m, data);
	return rc ? rc : mac_end(m, tag);
}

/* ---------------- preamble ---------------- */

void
cm_frame_hdr_encode(const struct cm_frame_hdr *h, uint8_t out[CM_FRAME_PREAMBLE_LEN])
{
	cm_put_le32(out, CM_FRAME_MAGIC);
	out[4] = h->version;
	out[5] = h->flags;
	cm_put_le16(out + 6, h->type);
	cm_put_le64(out + 8, h->tid);
	cm_put_le64(out + 16, h->seq);
	cm_put_le64(out + 24, h->ack);
	cm_put_le32(out + 32, h->front_len);
	cm_put_le32(out + 36, h->data_len);
	cm_put_le32(out + 40, h->payload_crc);
	cm_put_le32(out + 44, cm_crc32c(0, out, 44));
}

int
cm_frame_hdr_decode(const uint8_t in[CM_FRAME_PREAMBLE_LEN], const struct cm_frame_limits *lim,
		    struct cm_frame_hdr *h)
{
	if (cm_get_le32(in) != CM_FRAME_MAGIC)
		return -EBADMSG;
	if (cm_get_le32(in + 44) != cm_crc32c(0, in, 44))
		return -EBADMSG;
	h->version = in[4];
	if (h->version != CM_FRAME_VERSION)
		return -EPROTO;
	h->flags = in[5];
	h->type = cm_get_le16(in + 6);
	h->tid = cm_get_le64(in + 8);
	h->seq = cm_get_le64(in + 16);
	h->ack = cm_get_le64(in + 24);
	h->front_len = cm_get_le32(in + 32);
	h->data_len = cm_get_le32(in + 36);
	h->payload_crc = cm_get_le32(in + 40);
	if (h->front_len > lim->max_front || h->data_len > lim->max_data)
		return -EMSGSIZE;
	return 0;
}

int
cm_frame_rx_init(struct cm_frame_rx *rx, size_t rbuf_size, const struct cm_frame_limits *lim)
{
	memset(rx, 0, sizeof(*rx));
	rx->lim = *lim;
	rx->rbuf_size = CM_MAX(rbuf_size, (size_t)4096);
	return 0;
}

void
cm_frame_rx_reset(struct cm_frame_rx *rx)
{
	cm_buf_put(rx->pbuf);
	rx->pbuf = NULL;
	rx->pfill = 0;
	rx->ppad = 0;
	rx->have_hdr = false;
	rx->rpos = rx->rend = 0;
	cm_buf_put(rx->rbuf);
	rx->rbuf = NULL;
}

void
cm_frame_rx_fini(struct cm_frame_rx *rx)
{
	cm_frame_rx_reset(rx);
	cm_frame_mac_destroy(rx->mac);
	rx->mac = NULL;
}

void
cm_frame_rx_set_mac(struct cm_frame_rx *rx, struct cm_frame_mac *m)
{
	cm_frame_mac_destroy(rx->mac);
	rx->mac = m;
}

/* The frame's payload (front and data), without its tag. */
static size_t
frame_payload(const struct cm_frame_rx *rx)
{
	return (size_t)rx->hdr.front_len + rx->hdr.data_len;
}

/* Its bytes after the preamble: payload, then the tag. */
static size_t
frame_need(const struct cm_frame_rx *rx)
{
	return frame_payload(rx) + (rx->hdr.flags & CM_FRAME_F_MAC ? CM_FRAME_MAC_LEN : 0);
}

/* Is the tag at `tag` the one of the frame whose MAC has seen its payload? */
static int
mac_check(struct cm_frame_rx *rx, const uint8_t *tag)
{
	uint8_t want[CM_FRAME_MAC_LEN];

	if (mac_end(rx->mac, want))
		return -EIO;
	return CRYPTO_memcmp(want, tag, CM_FRAME_MAC_LEN) ? -CM_EMAC : 0;
}

int
cm_frame_rx_prepare(struct cm_frame_rx *rx, void **p, size_t *len)
{
	struct cm_buf *nb;
	size_t keep;
	int rc;

	if (rx->pbuf) {
		*p = rx->pbuf->data + rx->ppad + rx->pfill;
		*len = frame_need(rx) - rx->pfill;
		return 0;
	}
	if (rx->rbuf && rx->rpos == rx->rend && atomic_load(&rx->rbuf->refs) == 1) {
		/* Nobody holds slices of it: start over at the beginning. */
		rx->rpos = rx->rend = 0;
	}
	if (!rx->rbuf || rx->rend == rx->rbuf->len) {
		keep = rx->rbuf ? rx->rend - rx->rpos : 0;
		rc = cm_buf_alloc(rx->rbuf_size, &nb);
		if (rc)
			return rc;
		if (keep)
			memcpy(nb->data, rx->rbuf->data + rx->rpos, keep);
		cm_buf_put(rx->rbuf);
		rx->rbuf = nb;
		rx->rpos = 0;
		rx->rend = keep;
	}
	*p = rx->rbuf->data + rx->rend;
	*len = rx->rbuf->len - rx->rend;
	return 0;
}

/*
 * crc_known: the crcs of the front and of the data were computed on arrival
 * (pbuf). The data's crc stays with the frame's data (cm_sgl_crc): whoever
 * forwards the data does not compute it again.
 */
static int
deliver(struct cm_frame_rx *rx, struct cm_buf *b, size_t off, bool crc_known, uint32_t crc_front,
	uint32_t crc_data, cm_frame_rx_cb cb, void *arg)
{
	struct cm_frame f;
	uint32_t crc = 0;
	int rc = 0;

	f.hdr = rx->hdr;
	rx->have_hdr = false;
	cm_sgl_init(&f.front);
	cm_sgl_init(&f.data);
	if (rx->mac) {
		/* The whole frame is here: its payload, then its tag. (A large
		 * one's payload was fed to the MAC as it arrived.) */
		if (!crc_known)
			rc = mac_add(rx->mac, b->data + off, frame_payload(rx));
		if (!rc)
			rc = mac_check(rx, b->data + off + frame_payload(rx));
		if (rc)
			return rc;
	}
	rc = cm_sgl_append(&f.front, b, off, rx->hdr.front_len);
	if (!rc)
		rc = cm_sgl_append(&f.data, b, off + rx->hdr.front_len, rx->hdr.data_len);
	if (!rc && (f.hdr.flags & CM_FRAME_F_NO_DATA_CRC)) {
		crc = cm_sgl_crc32c(&f.front, 0);
	} else if (!rc) {
		if (!crc_known) {
			crc_front = cm_sgl_crc32c(&f.front, 0);
			crc_data = cm_sgl_crc32c(&f.data, 0);
		}
		crc = cm_crc32c_combine(crc_front, crc_data, f.data.len);
		f.data.crc = crc_data;
		f.data.has_crc = f.data.len > 0;
	}
	if (!rc && crc != f.hdr.payload_crc)
		rc = -CM_ECRC;
	if (!rc)
		rc = cb(arg, &f);
	cm_sgl_fini(&f.front);
	cm_sgl_fini(&f.data);
	return rc;
}

/*
 * Fold pbuf's payload bytes [from, from + n) into the front's crc, or into
 * the data's, 4 KiB block by block: each whole block's crc is kept with the
 * buffer (the store's block checksums) and folded into the data's crc.
 */
static void
rx_crc(struct cm_frame_rx *rx, size_t from, size_t n)
{
	struct cm_buf *pb = rx->pbuf;
	const uint8_t *p = pb->data + rx->ppad + from;
	size_t flen = rx->hdr.front_len, nf = from < flen ? CM_MIN(n, flen - from) : 0;
	size_t d = from + nf - flen; /* offset in the data */

	if (nf)
		rx->pcrc_front = cm_crc32c(rx->pcrc_front, p, nf);
	p += nf;
	n -= nf;
	while (n) {
		size_t k = CM_MIN(n, 4096 - d % 4096);

		rx->blk_crc = cm_crc32c(rx->blk_crc, p, k);
		p += k;
		n -= k;
		d += k;
		if (d % 4096 == 0) {
			if (pb->bcrc && d / 4096 <= pb->bcrc_n)
				pb->bcrc[d / 4096 - 1] = rx->blk_crc;
			rx->pcrc = cm_crc32c_combine(rx->pcrc, rx->blk_crc, 4096);
			rx->blk_crc = 0;
		}
	}
}

int
cm_frame_rx_advance(struct cm_frame_rx *rx, size_t n, cm_frame_rx_cb cb, void *arg)
{
	int rc;

	if (rx->pbuf) {
		struct cm_buf *pb = rx->pbuf;
		size_t pay = frame_payload(rx);

		if (rx->pfill < pay) {
			size_t k = CM_MIN(n, pay - rx->pfill);

			if (!(rx->hdr.flags & CM_FRAME_F_NO_DATA_CRC))
				rx_crc(rx, rx->pfill, k);
			if (rx->mac && mac_add(rx->mac, pb->data + rx->ppad + rx->pfill, k))
				return -EIO;
		}
		rx->pfill += n;
		if (rx->pfill < frame_need(rx))
			return 0;
		rx->pbuf = NULL;
		if (rx->hdr.data_len % 4096) /* the last, partial block */
			rx->pcrc =
				cm_crc32c_combine(rx->pcrc, rx->blk_crc, rx->hdr.data_len % 4096);
		rc = deliver(rx, pb, rx->ppad, true, rx->pcrc_front, rx->pcrc, cb, arg);
		cm_buf_put(pb);
		return rc;
	}
	rx->rend += n;
	for (;;) {
		size_t avail = rx->rend - rx->rpos, need;

		if (!rx->have_hdr) {
			if (avail < CM_FRAME_PREAMBLE_LEN)
				return 0;
			rc = cm_frame_hdr_decode(rx->rbuf->data + rx->rpos, &rx->lim, &rx->hdr);
			if (rc)
				return rc;
			if (!!rx->mac != !!(rx->hdr.flags & CM_FRAME_F_MAC))
				return rx->mac ? -CM_EMAC : -EPROTO; /* untagged, or unasked for */
			if (rx->mac && mac_begin(rx->mac, rx->rbuf->data + rx->rpos))
				return -EIO;
			rx->have_hdr = true;
			rx->rpos += CM_FRAME_PREAMBLE_LEN;
			avail -= CM_FRAME_PREAMBLE_LEN;
		}
		need = frame_need(rx);
		if (avail >= need) {
			size_t off = rx->rpos;

			rx->rpos += need;
			rc = deliver(rx, rx->rbuf, off, false, 0, 0, cb, arg);
			if (rc)
				return rc;
			continue;
		}
		if (need > FRAME_LARGE_PAYLOAD || need > rx->rbuf->len - rx->rpos) {
			/* Receive the rest straight into a buffer of its own. */
			/* Page aligned, with the front placed so that the data segment
			 * starts on a page: the store writes it with O_DIRECT as it is. */
			rx->ppad = (4096 - rx->hdr.front_len % 4096) % 4096;
			rc = cm_buf_alloc_aligned(rx->ppad + need, 4096, &rx->pbuf);
			if (rc)
				return rc;
			memcpy(rx->pbuf->data + rx->ppad, rx->rbuf->data + rx->rpos, avail);
			rx->pfill = 0;
			rx->pcrc_front = rx->pcrc = rx->blk_crc = 0;
			if (rx->hdr.data_len >= 4096 && !(rx->hdr.flags & CM_FRAME_F_NO_DATA_CRC)) {
				/* Optional: without them the store computes its own. */
				rx->pbuf->bcrc =
					malloc(rx->hdr.data_len / 4096 * sizeof(*rx->pbuf->bcrc));
				rx->pbuf->bcrc_off = rx->ppad + rx->hdr.front_len;
				rx->pbuf->bcrc_n = rx->pbuf->bcrc ? rx->hdr.data_len / 4096 : 0;
			}
			if (!(rx->hdr.flags & CM_FRAME_F_NO_DATA_CRC))
				rx_crc(rx, 0, CM_MIN(avail, frame_payload(rx)));
			if (rx->mac && mac_add(rx->mac, rx->pbuf->data + rx->ppad,
					       CM_MIN(avail, frame_payload(rx))))
				return -EIO;
			rx->pfill = avail;
			rx->rpos = rx->rend;
		}
		return 0;
	}
}
