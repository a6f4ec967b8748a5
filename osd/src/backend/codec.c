/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DESIGN: Reed-Solomon over GF(2^8) by ISA-L with a Cauchy encode matrix
 * (any k of its rows are invertible, so every k shards rebuild the rest).
 * Decode inverts the k x k matrix of the first k shards at hand and
 * multiplies the rows wanted (data rows straight from the inverse, parity
 * rows as matrix row x inverse); the tables are built per call, which is
 * cheap next to the data when calls cover many stripes at once.
 */
#include "osd/osd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>

int
osd_ec_init(struct osd_ec *ec, unsigned k, unsigned m, unsigned su)
{
	memset(ec, 0, sizeof(*ec));
	if (k < 2 || k > 32 || m < 1 || m > 16 || k + m > OSD_EC_MAX_SHARDS || su < OSD_EC_SU_MIN ||
	    su > OSD_EC_SU_MAX || su % OSD_EC_SU_MIN)
		return -EINVAL;
	ec->matrix = malloc((size_t)(k + m) * k);
	ec->tables = malloc((size_t)32 * k * m);
	if (!ec->matrix || !ec->tables) {
		osd_ec_fini(ec);
		return -ENOMEM;
	}
	ec->k = k;
	ec->m = m;
	ec->su = su;
	gf_gen_cauchy1_matrix(ec->matrix, (int)(k + m), (int)k);
	ec_init_tables((int)k, (int)m, ec->matrix + (size_t)k * k, ec->tables);
	return 0;
}

void
osd_ec_fini(struct osd_ec *ec)
{
	free(ec->matrix);
	free(ec->tables);
	memset(ec, 0, sizeof(*ec));
}

void
osd_ec_encode(const struct osd_ec *ec, size_t len, uint8_t *const *data, uint8_t **parity)
{
	if (len)
		ec_encode_data((int)len, (int)ec->k, (int)ec->m, ec->tables, (uint8_t **)data,
			       parity);
}

int
osd_ec_decode(const struct osd_ec *ec, size_t len, uint8_t **shards, uint32_t have, uint32_t want)
{
	unsigned k = ec->k, n = ec->k + ec->m, nsrc = 0, nout = 0;
	uint8_t *src[OSD_EC_MAX_SHARDS], *out[OSD_EC_MAX_SHARDS];
	unsigned rows[OSD_EC_MAX_SHARDS];
	uint8_t *b, *inv, *coef, *tables;
	int rc = 0;

	if (n < 32 && ((have | want) >> n))
		return -EINVAL;
	want &= ~have;
	if (!want)
		return 0;
	for (unsigned i = 0; i < n && nsrc < k; i++)
		if (have & 1u << i) {
			if (!shards[i])
				return -EINVAL;
			rows[nsrc] = i;
			src[nsrc++] = shards[i];
		}
	if (nsrc < k)
		return -EIO;
	b = malloc((size_t)k * k);
	inv = malloc((size_t)k * k);
	coef = malloc((size_t)n * k);
	tables = malloc((size_t)32 * k * n);
	if (!b || !inv || !coef || !tables) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned r = 0; r < k; r++)
		memcpy(b + (size_t)r * k, ec->matrix + (size_t)rows[r] * k, k);
	if (gf_invert_matrix(b, inv, (int)k) != 0) { /* cannot happen with a Cauchy matrix */
		rc = -EIO;
		goto out;
	}
	for (unsigned w = 0; w < n; w++) {
		uint8_t *c;

		if (!(want & 1u << w))
			continue;
		if (!shards[w]) {
			rc = -EINVAL;
			goto out;
		}
		c = coef + (size_t)nout * k;
		if (w < k) {
			memcpy(c, inv + (size_t)w * k, k);
		} else {
			const uint8_t *row = ec->matrix + (size_t)w * k;

			for (unsigned j = 0; j < k; j++) {
				uint8_t s = 0;

				for (unsigned x = 0; x < k; x++)
					s ^= gf_mul(row[x], inv[(size_t)x * k + j]);
				c[j] = s;
			}
		}
		out[nout++] = shards[w];
	}
	if (len) {
		ec_init_tables((int)k, (int)nout, coef, tables);
		ec_encode_data((int)len, (int)k, (int)nout, tables, src, out);
	}
out:
	free(b);
	free(inv);
	free(coef);
	free(tables);
	return rc;
}

void
osd_ec_split(const struct osd_ec *ec, const uint8_t *buf, uint64_t n, uint8_t **data)
{
	for (uint64_t s = 0; s < n; s++)
		for (unsigned i = 0; i < ec->k; i++)
			memcpy(data[i] + s * ec->su, buf + (s * ec->k + i) * ec->su, ec->su);
}

void
osd_ec_encode_stripes(const struct osd_ec *ec, const uint8_t *buf, uint64_t n, uint8_t **parity)
{
	uint8_t *d[OSD_EC_MAX_SHARDS];

	for (uint64_t s = 0; s < n; s++) {
		for (unsigned i = 0; i < ec->k; i++)
			d[i] = (uint8_t *)buf + (s * ec->k + i) * ec->su;
		for (unsigned i = 0; i < ec->m; i++)
			d[ec->k + i] = parity[i] + s * ec->su;
		ec_encode_data((int)ec->su, (int)ec->k, (int)ec->m, ec->tables, d, d + ec->k);
	}
}

void
osd_ec_join(const struct osd_ec *ec, uint8_t *const *data, uint64_t n, uint8_t *buf)
{
	for (uint64_t s = 0; s < n; s++)
		for (unsigned i = 0; i < ec->k; i++)
			memcpy(buf + (s * ec->k + i) * ec->su, data[i] + s * ec->su, ec->su);
}
