/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The wire frame shared by every Cairn link:
 *
 *   preamble (48 bytes, little-endian)
 *     0 magic u32 "CRN1"   4 version u8   5 flags u8   6 type u16
 *     8 tid u64           16 seq u64     24 ack u64
 *    32 front_len u32     36 data_len u32
 *    40 payload_crc u32 (crc32c of front then data; of the front only
 *                        when flags has CM_FRAME_F_NO_DATA_CRC)
 *    44 preamble_crc u32 (crc32c of bytes 0..43)
 *   front (front_len bytes, a protobuf-c message)
 *   data  (data_len bytes, raw, passed by reference)
 *
 * The preamble carries its own crc so lengths are trusted (and checked
 * against limits) before anything is allocated for the payload.
 *
 * cm_frame_rx is the resumable stream decoder: the caller asks where the next
 * bytes should land (prepare), reads into that space, and reports how many
 * arrived (advance); complete frames come out through a callback with their
 * front and data as slices of refcounted buffers (no copy for small frames
 * beyond the one recv; large payloads are received straight into their own
 * buffer).
 *
 * Threading: a cm_frame_rx belongs to one thread.
 */
#ifndef CM_FRAME_H
#define CM_FRAME_H

#include "cm/buf.h"

#define CM_FRAME_MAGIC        0x314e5243u /* "CRN1" */
#define CM_FRAME_VERSION      1
#define CM_FRAME_PREAMBLE_LEN 48

/* flags */
#define CM_FRAME_F_NO_DATA_CRC 0x01 /* payload_crc covers the front only */
#define CM_FRAME_F_MAC         0x02 /* a CM_FRAME_MAC_LEN tag follows the data */

/*
 * Frame MACs (messenger protocol 2 and 3, plain TCP; TLS has its own):
 * after the handshake every frame carries a tag over its preamble, front
 * and data (an AEAD with the frame as associated data, nothing encrypted),
 * keyed per session and direction, with the frame's number in that
 * direction as the nonce. A changed byte, a frame from another session, a
 * replayed, dropped or reordered frame all fail the tag. Protocol 2 uses
 * ChaCha20-Poly1305 (Poly1305 tags), protocol 3 AES-256-GCM (GMAC tags):
 * per frame GCM costs one AES block for the nonce where ChaCha20-Poly1305
 * derives a new Poly1305 key (about 0.3 against 1.3 us of fixed cost
 * here), and GHASH runs on the CPU's carry-less multiply.
 */
#define CM_FRAME_MAC_LEN     16
#define CM_FRAME_MAC_KEY_LEN 32

struct cm_frame_mac;

/* gmac: AES-256-GCM tags (protocol 3), else ChaCha20-Poly1305. \return 0, -ENOMEM. */
int cm_frame_mac_create(const uint8_t key[CM_FRAME_MAC_KEY_LEN], bool gmac,
			struct cm_frame_mac **mp);
void cm_frame_mac_destroy(struct cm_frame_mac *m);

/* The tag of the next frame in m's direction. \return 0, -EIO (OpenSSL failed). */
int cm_frame_mac_sign(struct cm_frame_mac *m, const uint8_t pre[CM_FRAME_PREAMBLE_LEN],
		      const struct cm_sgl *front, const struct cm_sgl *data,
		      uint8_t tag[CM_FRAME_MAC_LEN]);

struct cm_frame_hdr {
	uint8_t version;
	uint8_t flags;
	uint16_t type;
	uint64_t tid;
	uint64_t seq;
	uint64_t ack;
	uint32_t front_len;
	uint32_t data_len;
	uint32_t payload_crc;
};

struct cm_frame_limits {
	uint32_t max_front;
	uint32_t max_data;
};

/* Encode h into out, computing the preamble crc. */
void cm_frame_hdr_encode(const struct cm_frame_hdr *h, uint8_t out[CM_FRAME_PREAMBLE_LEN]);

/*
 * Decode and validate a preamble.
 * \return 0; -EBADMSG (bad magic or preamble crc); -EPROTO (unknown frame
 * version); -EMSGSIZE (front or data over the limits).
 */
int cm_frame_hdr_decode(const uint8_t in[CM_FRAME_PREAMBLE_LEN], const struct cm_frame_limits *lim,
			struct cm_frame_hdr *h);

struct cm_frame {
	struct cm_frame_hdr hdr;
	struct cm_sgl front;
	struct cm_sgl data;
};

/*
 * Called once per complete, crc-checked frame. The callback may move f->front
 * and f->data away (cm_sgl_move); whatever is left is released after it
 * returns. A negative return stops decoding and is returned by advance.
 */
typedef int (*cm_frame_rx_cb)(void *arg, struct cm_frame *f);

struct cm_frame_rx {
	struct cm_frame_limits lim;
	size_t rbuf_size;
	struct cm_buf *rbuf; /* rolling receive buffer */
	size_t rpos, rend;   /* parsed up to rpos, filled up to rend */
	struct cm_buf *pbuf; /* dedicated buffer for one large payload */
	size_t ppad;         /* where the front starts in it: the data segment lands page aligned */
	size_t pfill;
	/* running crcs of what arrived in pbuf, front and data apart, computed
	 * while the bytes are hot */
	uint32_t pcrc_front, pcrc;
	uint32_t blk_crc; /* the data's current 4 KiB block (pbuf->bcrc gets each whole one) */
	bool have_hdr;
	struct cm_frame_hdr hdr;
	struct cm_frame_mac *mac; /* set: every frame must carry a good tag */
};

/* \return 0. rbuf_size is the rolling buffer's size (>= 4096). */
int cm_frame_rx_init(struct cm_frame_rx *rx, size_t rbuf_size, const struct cm_frame_limits *lim);
void cm_frame_rx_fini(struct cm_frame_rx *rx);

/*
 * From the next frame on, every frame must carry a tag m verifies
 * (CM_FRAME_F_MAC); rx owns m. A frame without one, or with a wrong one, is
 * -CM_EMAC from advance.
 */
void cm_frame_rx_set_mac(struct cm_frame_rx *rx, struct cm_frame_mac *m);

/* Forget any partial frame (after a reconnect). */
void cm_frame_rx_reset(struct cm_frame_rx *rx);

/* Where the next bytes should land. \return 0, -ENOMEM. */
int cm_frame_rx_prepare(struct cm_frame_rx *rx, void **p, size_t *len);

/*
 * n bytes landed where prepare said. Decodes every complete frame.
 * \return 0; -EBADMSG, -EPROTO, -EMSGSIZE (preamble); -CM_ECRC (payload crc);
 * -CM_EMAC (missing or wrong MAC); -ENOMEM; or the callback's negative return. After an error the
 * stream is unusable: reset the connection.
 */
int cm_frame_rx_advance(struct cm_frame_rx *rx, size_t n, cm_frame_rx_cb cb, void *arg);

#endif
