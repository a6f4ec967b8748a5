/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Erasure coding of objects (ISA-L Reed-Solomon, Cauchy matrix).
 * docs/design/ec.md.
 *
 * An object of an EC k+m pool is cut into stripes of k * su bytes; stripe s
 * puts its bytes [i*su, (i+1)*su) at offset s*su of data shard i (0 <= i < k)
 * and the m parity chunks of the stripe at offset s*su of shards k..k+m-1.
 * Every shard of an object has the same size: ceil(size / (k*su)) * su.
 *
 * A struct osd_ec is immutable after osd_ec_init: share it between threads.
 */
#ifndef OSD_EC_H
#define OSD_EC_H

#include <stddef.h>
#include <stdint.h>

#define OSD_EC_MAX_SHARDS 32
#define OSD_EC_SU_MIN     4096u
#define OSD_EC_SU_MAX     (1u << 20)

struct osd_ec {
	unsigned k, m, su;
	uint8_t *matrix; /* (k+m) x k encode matrix, identity on top */
	uint8_t *tables; /* ISA-L tables of the m parity rows */
};

/* \return 0, -EINVAL (k, m, su out of range: 2..32, 1..16, k+m <= 32, su a
 * multiple of 4096 up to 1 MiB), -ENOMEM. */
int osd_ec_init(struct osd_ec *ec, unsigned k, unsigned m, unsigned su);
void osd_ec_fini(struct osd_ec *ec);

static inline uint64_t
osd_ec_stripe_width(const struct osd_ec *ec)
{
	return (uint64_t)ec->k * ec->su;
}

/* Bytes each shard holds for an object of this size. */
static inline uint64_t
osd_ec_shard_size(const struct osd_ec *ec, uint64_t size)
{
	uint64_t w = osd_ec_stripe_width(ec);

	return (size + w - 1) / w * ec->su;
}

/* data[0..k-1] (len bytes each) -> parity[0..m-1] (len bytes each). */
void osd_ec_encode(const struct osd_ec *ec, size_t len, uint8_t *const *data, uint8_t **parity);

/*
 * Rebuild shards from others. shards[0..k+m-1] point at len-byte buffers
 * (NULL allowed for shards neither present nor wanted); have: the shards
 * whose buffers hold data (bit i = shard i); want: those to compute (their
 * buffers are overwritten). \return 0, -EIO (fewer than k shards in have),
 * -EINVAL, -ENOMEM.
 */
int osd_ec_decode(const struct osd_ec *ec, size_t len, uint8_t **shards, uint32_t have,
		  uint32_t want);

/*
 * Logical stripes <-> data shards. buf holds n whole stripes (n * k * su
 * bytes); data[i] holds n * su bytes of shard i.
 */
void osd_ec_split(const struct osd_ec *ec, const uint8_t *buf, uint64_t n, uint8_t **data);

/*
 * The m parity shards of n whole stripes straight from their logical bytes
 * (no copy of the data shards: a sender can gather those from buf):
 * parity[j] gets n * su bytes.
 */
void osd_ec_encode_stripes(const struct osd_ec *ec, const uint8_t *buf, uint64_t n,
			   uint8_t **parity);
void osd_ec_join(const struct osd_ec *ec, uint8_t *const *data, uint64_t n, uint8_t *buf);

#endif
