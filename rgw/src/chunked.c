/* SPDX-License-Identifier: Apache-2.0 */
/* aws-chunked decoding and S3's checksums (rgw/chunked.h). */
#include "rgw/chunked.h"
#include "cm/crc32c.h"

#include <isa-l/crc.h>
#include <pthread.h>
#include <openssl/crypto.h>

enum { ST_SIZE, ST_DATA, ST_CRLF, ST_TRAILER, ST_DONE };

#define SIG_EXT "chunk-signature="

int
rgw_awschunk_init(struct rgw_awschunk *d, unsigned flags, const uint8_t key[32],
		  const struct rgw_sigv4 *a, const char *seed_hex)
{
	memset(d, 0, sizeof(*d));
	d->flags = flags;
	if (flags & RGW_AWSCHUNK_SIGNED) {
		memcpy(d->key, key, 32);
		d->a = a;
		snprintf(d->prev, sizeof(d->prev), "%s", seed_hex);
		if (!(d->sha = EVP_MD_CTX_new()) ||
		    !EVP_DigestInit_ex(d->sha, EVP_sha256(), NULL)) {
			EVP_MD_CTX_free(d->sha);
			d->sha = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

void
rgw_awschunk_fini(struct rgw_awschunk *d)
{
	EVP_MD_CTX_free(d->sha);
	OPENSSL_cleanse(d->key, sizeof(d->key));
	d->sha = NULL;
}

static int
bad(struct rgw_awschunk *d, const char *why)
{
	d->err = why;
	return -EBADMSG;
}

/* The signature of the chunk that just ended (its bytes hashed in d->sha). */
static int
check_chunk(struct rgw_awschunk *d)
{
	uint8_t h[32];
	unsigned l = 32;
	char sig[65];

	if (!(d->flags & RGW_AWSCHUNK_SIGNED))
		return 0;
	EVP_DigestFinal_ex(d->sha, h, &l);
	EVP_DigestInit_ex(d->sha, EVP_sha256(), NULL);
	rgw_sigv4_chunk_sig(d->key, d->a, "AWS4-HMAC-SHA256-PAYLOAD", d->prev, h, sig);
	if (!rgw_sigv4_equal(sig, d->want_sig)) {
		d->err = "a chunk's signature does not match";
		return -EPERM;
	}
	memcpy(d->prev, sig, sizeof(sig));
	return 0;
}

/* "<hex>[;chunk-signature=<64 hex>]" (the line without its CRLF). */
static int
size_line(struct rgw_awschunk *d)
{
	const char *s = d->line, *semi;
	uint64_t v = 0;
	size_t i;
	int rc;

	d->line[d->ll] = '\0';
	semi = strchr(s, ';');
	for (i = 0; s + i != semi && s[i]; i++) {
		int x = rgw_hexval(s[i]);

		if (x < 0 || i >= 16)
			return bad(d, "a chunk size is not hexadecimal");
		v = v << 4 | (uint64_t)x;
	}
	if (i == 0)
		return bad(d, "a chunk has no size");
	if (v > RGW_AWSCHUNK_MAX_SIZE)
		return bad(d, "a chunk is larger than 64 MiB");
	if (d->flags & RGW_AWSCHUNK_SIGNED) {
		if (!semi || strncmp(semi + 1, SIG_EXT, strlen(SIG_EXT)) ||
		    strlen(semi + 1 + strlen(SIG_EXT)) != 64)
			return bad(d, "a chunk has no chunk-signature");
		memcpy(d->want_sig, semi + 1 + strlen(SIG_EXT), 65);
	}
	d->left = v;
	if (v == 0) {
		/* the last chunk: its signature covers no bytes */
		if ((rc = check_chunk(d)))
			return rc;
		d->st = ST_TRAILER;
	} else {
		d->st = ST_DATA;
	}
	d->ll = 0;
	return 0;
}

/* The trailer section ended: check its signature (signed trailers). */
static int
trailers_end(struct rgw_awschunk *d)
{
	char want[65] = "", canon[RGW_TRAILERS_MAX], sig[65];
	size_t cl = 0;
	uint8_t h[32];
	const char *p = d->trailers, *end = d->trailers + d->tl;

	if (!(d->flags & RGW_AWSCHUNK_SIGNED) || !(d->flags & RGW_AWSCHUNK_TRAILER))
		return 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)(nl - p);

		if (n > 24 && !strncasecmp(p, "x-amz-trailer-signature:", 24)) {
			if (n - 24 != 64)
				return bad(d, "a malformed trailer signature");
			memcpy(want, p + 24, 64);
			want[64] = '\0';
		} else {
			memcpy(canon + cl, p, n + 1);
			cl += n + 1;
		}
		p = nl + 1;
	}
	if (!want[0]) {
		d->err = "the trailer is not signed";
		return -EPERM;
	}
	rgw_sha256(canon, cl, h);
	rgw_sigv4_chunk_sig(d->key, d->a, "AWS4-HMAC-SHA256-TRAILER", d->prev, h, sig);
	if (!rgw_sigv4_equal(sig, want)) {
		d->err = "the trailer's signature does not match";
		return -EPERM;
	}
	return 0;
}

int
rgw_awschunk_feed(struct rgw_awschunk *d, const char *b, size_t n, rgw_awschunk_data data,
		  void *arg)
{
	int rc;

	while (n) {
		switch (d->st) {
		case ST_SIZE:
		case ST_TRAILER: {
			char c = *b++;

			n--;
			if (c == '\r')
				continue; /* (checked: a line ends in CRLF) */
			if (c != '\n') {
				if (d->ll + 1 >= sizeof(d->line))
					return bad(d, "a chunk line is too long");
				d->line[d->ll++] = c;
				continue;
			}
			if (d->st == ST_SIZE) {
				if ((rc = size_line(d)))
					return rc;
				continue;
			}
			if (d->ll == 0) {
				if ((rc = trailers_end(d)))
					return rc;
				d->st = ST_DONE;
				continue;
			}
			if (!(d->flags & RGW_AWSCHUNK_TRAILER))
				return bad(d, "a trailer where none was announced");
			if (!memchr(d->line, ':', d->ll))
				return bad(d, "a trailer line has no colon");
			if (d->tl + d->ll + 1 > sizeof(d->trailers))
				return bad(d, "the trailers are larger than 4 KiB");
			memcpy(d->trailers + d->tl, d->line, d->ll);
			d->tl += d->ll;
			d->trailers[d->tl++] = '\n';
			d->ll = 0;
			continue;
		}
		case ST_DATA: {
			size_t k = (size_t)CM_MIN((uint64_t)n, d->left);

			if (d->sha)
				EVP_DigestUpdate(d->sha, b, k);
			d->decoded += k;
			if (data(arg, b, k))
				return -ECANCELED; /* (d may be gone: touch nothing) */
			b += k;
			n -= k;
			if (!(d->left -= k)) {
				d->st = ST_CRLF;
				d->ll = 0;
			}
			continue;
		}
		case ST_CRLF:
			if (*b != (d->ll ? '\n' : '\r'))
				return bad(d, "a chunk's data does not end in CRLF");
			b++;
			n--;
			if (d->ll++) {
				if ((rc = check_chunk(d)))
					return rc;
				d->st = ST_SIZE;
				d->ll = 0;
			}
			continue;
		default:
			return bad(d, "bytes after the end of the aws-chunked body");
		}
	}
	return 0;
}

bool
rgw_awschunk_done(const struct rgw_awschunk *d)
{
	return d->st == ST_DONE;
}

int
rgw_awschunk_trailer(const struct rgw_awschunk *d, const char *name, char *out, size_t len)
{
	size_t nl = strlen(name);
	const char *p = d->trailers, *end = d->trailers + d->tl;

	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));

		if ((size_t)(e - p) > nl && p[nl] == ':' && !strncasecmp(p, name, nl)) {
			const char *v = p + nl + 1;
			size_t vl;

			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			vl = (size_t)(e - v);
			while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (vl >= len)
				return -E2BIG;
			memcpy(out, v, vl);
			out[vl] = '\0';
			return 0;
		}
		p = e + 1;
	}
	return -ENOENT;
}

/* ---- checksums ---- */

static const char *const ck_names[] = { "", "crc32", "crc32c", "crc64nvme", "sha1", "sha256" };

enum rgw_cksum_alg
rgw_cksum_alg_of(const char *name)
{
	for (size_t i = 1; i < CM_ARRAY_SIZE(ck_names); i++)
		if (!strcasecmp(name, ck_names[i]))
			return (enum rgw_cksum_alg)i;
	return RGW_CK_NONE;
}

const char *
rgw_cksum_header(enum rgw_cksum_alg alg)
{
	static const char *const h[] = { "",
					 "x-amz-checksum-crc32",
					 "x-amz-checksum-crc32c",
					 "x-amz-checksum-crc64nvme",
					 "x-amz-checksum-sha1",
					 "x-amz-checksum-sha256" };

	return (unsigned)alg < CM_ARRAY_SIZE(h) ? h[alg] : "";
}

int
rgw_cksum_init(struct rgw_cksum *c, enum rgw_cksum_alg alg)
{
	memset(c, 0, sizeof(*c));
	c->alg = alg;
	if (alg == RGW_CK_SHA1 || alg == RGW_CK_SHA256) {
		if (!(c->md = EVP_MD_CTX_new()) ||
		    !EVP_DigestInit_ex(c->md, alg == RGW_CK_SHA1 ? EVP_sha1() : EVP_sha256(),
				       NULL)) {
			EVP_MD_CTX_free(c->md);
			c->md = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

static uint64_t crc64_table[256];
static pthread_once_t crc64_once = PTHREAD_ONCE_INIT;

static void
crc64_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint64_t v = i;

		for (int k = 0; k < 8; k++)
			v = (v & 1) ? (v >> 1) ^ 0x9a6c9329ac4bc9b5ull : v >> 1;
		crc64_table[i] = v;
	}
}

uint64_t
rgw_crc64nvme(uint64_t crc, const void *buf, size_t n)
{
	const uint8_t *b = buf;

	pthread_once(&crc64_once, crc64_init);
	crc = ~crc;
	while (n--)
		crc = crc64_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

void
rgw_cksum_update(struct rgw_cksum *c, const void *b, size_t n)
{
	switch (c->alg) {
	case RGW_CK_CRC32:
		c->crc32 = crc32_gzip_refl(c->crc32, b, n);
		break;
	case RGW_CK_CRC32C:
		c->crc32 = cm_crc32c(c->crc32, b, n);
		break;
	case RGW_CK_CRC64NVME:
		c->crc64 = rgw_crc64nvme(c->crc64, b, n);
		break;
	case RGW_CK_SHA1:
	case RGW_CK_SHA256:
		EVP_DigestUpdate(c->md, b, n);
		break;
	default:
		break;
	}
}

void
rgw_cksum_final(struct rgw_cksum *c, char *out, size_t len)
{
	uint8_t raw[32];
	unsigned l = 0;
	char b64[48];

	switch (c->alg) {
	case RGW_CK_CRC32:
	case RGW_CK_CRC32C:
		for (int i = 0; i < 4; i++)
			raw[i] = (uint8_t)(c->crc32 >> (24 - 8 * i));
		l = 4;
		break;
	case RGW_CK_CRC64NVME:
		for (int i = 0; i < 8; i++)
			raw[i] = (uint8_t)(c->crc64 >> (56 - 8 * i));
		l = 8;
		break;
	case RGW_CK_SHA1:
	case RGW_CK_SHA256:
		l = sizeof(raw);
		EVP_DigestFinal_ex(c->md, raw, &l);
		break;
	default:
		break;
	}
	EVP_EncodeBlock((unsigned char *)b64, raw, (int)l);
	snprintf(out, len, "%s", l ? b64 : "");
}

void
rgw_cksum_fini(struct rgw_cksum *c)
{
	EVP_MD_CTX_free(c->md);
	c->md = NULL;
}
